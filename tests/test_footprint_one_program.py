"""A one-program launch's footprint values in Python integers (isa/footprint.py ``evaluate_one``,
sim/footprints.py ``LaunchFootprints.one``) are numpy's int64 values (``evaluate``): equal wherever every
value on the way fits int64, and numpy's own (wrapped) value where one does not."""

from __future__ import annotations

import random

import numpy as np
import pytest

from triton_plate_backend.isa import footprint as F
from triton_plate_backend.sim.footprints import LaunchFootprints


def _expr(rng: random.Random, depth: int) -> str:
    if depth == 0 or rng.random() < 0.25:
        return rng.choice(["arg0", "arg1", "arg2", "pid_x", "nprog_x", "0", "1", "3", "4096", "9223372036854775807"])
    a, b = _expr(rng, depth - 1), _expr(rng, depth - 1)
    form = rng.choice(["{} + {}", "{} - {}", "{} * {}", "{} // {}", "{} % {}", "min({}, {})", "max({}, {})", "-{}"])
    return "(" + form.format(a, b) + ")"


def _numpy(expr: str, ints: dict) -> int:
    with np.errstate(over="ignore"):
        return int(np.asarray(F.evaluate(expr, F.program_names((1, 1, 1), ints))).reshape(-1)[0])


def test_python_integers_are_numpys_values_or_say_they_left_int64():
    rng = random.Random(0)
    left = 0
    for _ in range(3000):
        ints = {
            0: rng.choice([0, 5, -7, 1 << 31, -(1 << 40)]),
            1: rng.choice([0, 3, 1 << 33]),
            2: rng.randrange(-99, 99),
        }
        expr = _expr(rng, 4)
        got = F.evaluate_one(expr, F.one_program_names((1, 1, 1), ints), {})
        want = _numpy(expr, ints)
        if got is None:
            left += 1
            continue
        assert got == want, (expr, ints)
    assert 0 < left < 1500  # both kinds were asked


def test_a_value_past_int64_is_numpys_wrapped_one():
    ints = {0: 1 << 40, 1: 7}
    expr = "arg0 * arg0 // arg1 + 4"  # 2**80 wraps in int64
    assert F.evaluate_one(expr, F.one_program_names((1, 1, 1), ints), {}) is None
    launch = LaunchFootprints((), (1, 1, 1), ints)
    with np.errstate(over="ignore"):
        assert launch.one(expr) == _numpy(expr, ints) == int(launch.value(expr)[0])
    assert launch.one(expr) != (ints[0] * ints[0]) // 7 + 4


def test_a_divisor_of_zero_and_negative_operands():
    ints = {0: -7, 1: 0, 2: 3}
    names = F.one_program_names((1, 1, 1), ints)
    for expr in ("arg0 // arg1", "arg0 % arg1", "arg0 // arg2", "arg0 % arg2", "-arg0 % -arg2", "arg2 // arg0"):
        assert F.evaluate_one(expr, names, {}) == _numpy(expr, ints), expr


def test_an_unknown_name_raises_as_numpy_does():
    launch = LaunchFootprints((), (1, 1, 1), {0: 1})
    for ask in (launch.one, launch.value):
        with pytest.raises(F.FootprintError, match="arg5"):
            ask("arg5 + 1")
