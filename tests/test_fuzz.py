"""`plate fuzz`: the generator is deterministic and covers the feature list, the comparison rules
judge hand-made outputs as documented, a quick slice of random kernels agrees with Triton's
interpreter, and a planted wrong semantics is caught with a reproducer that shows it."""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from triton_plate_backend.fuzz import compare
from triton_plate_backend.fuzz.generator import Buffer, Case, generate
from triton_plate_backend.fuzz.report import case_from_json, case_to_json, write_reproducer
from triton_plate_backend.fuzz.reproduce import reproduce
from triton_plate_backend.fuzz.runner import run_case
from triton_plate_backend.fuzz.session import fuzz, select_device
from triton_plate_backend.fuzz.values import DTYPES

REPO = Path(__file__).resolve().parent.parent
QUICK_SEED, QUICK_CASES = 20261201, 30


# ---- the generator ------------------------------------------------------------------------------
def test_the_same_seed_gives_the_same_kernels_and_inputs():
    for index in range(20):
        a, b = generate(5, index), generate(5, index)
        assert a.source == b.source and a.features == b.features and a.grid == b.grid
        for x, y in zip(a.buffers, b.buffers):
            assert (x.values is None) == (y.values is None)
            assert x.values is None or x.values.tobytes() == y.values.tobytes()
    assert len({generate(5, i).source for i in range(20)}) == 20
    assert generate(5, 3).source != generate(6, 3).source


def test_the_generator_covers_the_feature_list():
    features, dtypes = set(), set()
    for index in range(300):
        case = generate(1, index)
        compile(case.source, case.name, "exec")  # valid Python at least; the slice below runs a part of them
        features |= {f.split(":")[0] for f in case.features}
        features |= {":".join(f.split(":")[:2]) for f in case.features if f.startswith(("dot:", "fp8:"))}
        dtypes |= {b.dtype for b in case.buffers}
    assert set(DTYPES) <= dtypes
    wanted = {"mask", "broadcast", "cast", "where", "minmax", "shift", "idiv", "loop", "branch", "trans", "reshape"}
    wanted |= {"reduce", "scan", "atomic", "fp8:e5", "fp8:e4nv", "dot:fp32", "dot:fp16", "dot:bf16", "dot:i8"}
    wanted |= {"dot:fp8e5", "math", "rn"}
    assert wanted <= features, sorted(wanted - features)


def test_a_case_survives_its_json():
    case = generate(2, 4)
    back = case_from_json(case_to_json(case), case.source)
    assert [(b.name, b.dtype, b.count, b.check) for b in back.buffers] == [
        (b.name, b.dtype, b.count, b.check) for b in case.buffers
    ]
    assert all(x.values is None or x.values.tobytes() == y.values.tobytes() for x, y in zip(case.buffers, back.buffers))


# ---- the comparison rules -----------------------------------------------------------------------
def _case(*outputs: Buffer, features=()) -> Case:
    return Case(0, 0, "", list(outputs), {}, {}, 1, list(features))


def _judge(buf: Buffer, got, want, aux=None):
    case = _case(buf, *([aux[0]] if aux else []))
    gots = {buf.name: np.asarray(got, DTYPES[buf.dtype].np)} | ({aux[0].name: aux[1]} if aux else {})
    wants = {buf.name: np.asarray(want, DTYPES[buf.dtype].np)} | ({aux[0].name: aux[1]} if aux else {})
    return compare.judge(case, gots, wants)[buf.name][0]


def test_exact_outputs_compare_bits_and_any_nan_equals_any_nan():
    out = Buffer("o", "fp32", 3, check={"kind": "exact"})
    quiet, payload = np.float32(np.nan), np.array([0x7FC00123], np.uint32).view(np.float32)[0]
    assert _judge(out, [1.0, quiet, -quiet], [1.0, payload, quiet])
    assert not _judge(out, [0.0, 1.0, 2.0], [-0.0, 1.0, 2.0])  # -0.0 is not 0.0
    assert not _judge(out, [1.0, 2.0, 3.0], [1.0, 2.0, np.nextafter(np.float32(3), np.float32(4))])
    ints = Buffer("o", "i32", 2, check={"kind": "exact"})
    assert _judge(ints, [-1, 5], [-1, 5]) and not _judge(ints, [-1, 5], [-1, 6])


def test_a_transcendental_is_held_to_its_ulp_bound():
    out = Buffer("o", "fp32", 1, check={"kind": "ulp", "ulp": 4})
    x = np.float32(1.5)
    assert _judge(out, [np.nextafter(x, np.float32(2))], [x])
    far = x
    for _ in range(5):
        far = np.nextafter(far, np.float32(2))
    assert not _judge(out, [far], [x])
    assert not _judge(out, [np.inf], [x])


def test_a_float_sum_is_held_to_its_forward_error_bound():
    aux = Buffer("a", "fp32", 4, check={"kind": "exact"})
    x = np.array([1e8, 1.0, -1e8, 1.0], np.float32)
    out = Buffer("o", "fp32", 1, check={"kind": "reduce", "op": "sum", "axis": 0, "aux": "a", "shape": [1, 4]})
    # order changes the result by far more than an ulp of it, but within n * eps * sum|x|
    assert _judge(out, [2.0], [0.0], aux=(aux, x))
    assert not _judge(out, [1e3], [0.0], aux=(aux, x))
    maxes = Buffer("o", "fp32", 1, check={"kind": "reduce", "op": "max", "axis": 0, "aux": "a", "shape": [1, 4]})
    assert not _judge(maxes, [1.0], [1e8], aux=(aux, x))  # max is order-independent: exact


def test_lane_rules_name_the_difference_they_accept():
    case = _case(Buffer("o", "fp32", 2, check={"kind": "exact"}), features=["minmax-float"])
    got, want = {"o": np.array([0.0, 1.0], np.float32)}, {"o": np.array([-0.0, 1.0], np.float32)}
    assert compare.explained_by_lanes(case, got, want, ["o"]) == "signed-zero-min-max"
    want = {"o": np.array([-0.0, 2.0], np.float32)}
    assert compare.explained_by_lanes(case, got, want, ["o"]) == ""  # a lane that is not a zero stays unexplained
    plain = _case(Buffer("o", "fp32", 2, check={"kind": "exact"}), features=["where"])
    assert compare.explained_by_lanes(plain, got, {"o": np.array([-0.0, 1.0], np.float32)}, ["o"]) == ""


def test_every_rule_says_why_and_patch_rules_name_a_patch():
    from triton_plate_backend.fuzz.interpreter_patches import PATCHES, REFERENCE

    assert all(r.why and (r.lanes or r.patch in PATCHES) for r in compare.RULES)
    assert set(REFERENCE) <= set(PATCHES)


# ---- running ------------------------------------------------------------------------------------
def test_a_quick_slice_agrees_with_the_interpreter(tmp_path):
    summary = fuzz(QUICK_CASES, QUICK_SEED, tmp_path, stream=open(os.devnull, "w"))
    assert summary["cases"] == QUICK_CASES and summary["invalid"] == 0, summary
    assert summary["mismatches"] == 0, (summary["mismatches_by_category"], list((tmp_path / "reproducers").glob("*")))
    saved = json.loads((tmp_path / "fuzz-summary.json").read_text())
    assert saved["cases"] == QUICK_CASES and "unexplained mismatches" in (tmp_path / "fuzz-summary.md").read_text()
    again = fuzz(QUICK_CASES, QUICK_SEED, tmp_path, stream=open(os.devnull, "w"))  # resumed: nothing left to run
    assert again["cases"] == QUICK_CASES and again["kernel_seconds"] == summary["kernel_seconds"]


XOR_KERNEL = """import triton
import triton.language as tl


def kernel(in0, in1, out0, n_valid, n_iter, BM: tl.constexpr):
    offs = tl.program_id(0) * BM + tl.arange(0, BM)
    mask = offs < n_valid
    tl.store(out0 + offs, tl.load(in0 + offs, mask=mask) ^ tl.load(in1 + offs, mask=mask), mask=mask)
"""


def _an_xor_kernel() -> Case:
    rng = np.random.default_rng(0)
    a, b = (rng.integers(-(2**31), 2**31, 30, dtype=np.int32) for _ in range(2))
    buffers = [
        Buffer("in0", "i32", 30, a),
        Buffer("in1", "i32", 30, b),
        Buffer("out0", "i32", 32, check={"kind": "exact"}),
    ]
    return Case(0, 0, XOR_KERNEL, buffers, {"n_valid": 30, "n_iter": 0}, {"BM": 32}, 1, ["mask"])


def test_a_planted_bug_is_caught_and_its_reproducer_shows_it(tmp_path, monkeypatch, capsys):
    from triton_plate_backend.sim import semantics

    device = select_device()
    case = _an_xor_kernel()
    # planted before the kernel's first launch: an executor keeps the rules it was made with
    monkeypatch.setitem(semantics.SEMANTICS, "v.xor", semantics.SEMANTICS["v.or"])  # xor computes or
    bad, _, _ = run_case(case, tmp_path / "k", device)
    assert bad.status == "mismatch" and "lanes differ" in bad.detail, bad
    path = write_reproducer(case, bad, tmp_path / "reproducers")
    namespace = runpy.run_path(str(path))
    capsys.readouterr()
    assert reproduce(namespace["kernel"], namespace["CASE"], str(path)) == 1
    assert "lanes differ" in capsys.readouterr().out
    monkeypatch.undo()  # without the bug, in a fresh process, the reproducer finds plate and Triton agree
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    fixed = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=300)
    assert fixed.returncode == 0 and "agree" in fixed.stdout, fixed.stdout + fixed.stderr


@pytest.mark.parametrize("seed", [0])
def test_the_cli_runs_a_slice_and_writes_the_summary(tmp_path, capsys, seed):
    from triton_plate_backend.cli import main

    assert main(["fuzz", "--cases", "3", "--seed", str(seed), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "plate fuzz: seed 0, 3 kernels" in out and (tmp_path / "fuzz-summary.json").is_file()


def test_a_product_through_the_subnormal_range_is_held_to_an_absolute_bound():
    """Case 8475 of seed 1: a float64 cumprod whose prefixes go subnormal loses relative precision,
    by how much depends on the order; the check allows what subnormal rounding loses (tiny per step,
    magnified by the later factors), and no more."""
    aux = Buffer("a", "fp64", 4, check={"kind": "exact"})
    x = np.array([1e-300, 1e-20, 1e10, 1e10], np.float64)
    out = Buffer("o", "fp64", 4, check={"kind": "scan", "op": "cumprod", "axis": 0, "aux": "a", "shape": [1, 4]})
    want = np.cumprod(x)  # in order: x0 * x1 rounds in the subnormal range
    assert 0 < want[1] < np.finfo(np.float64).tiny
    got = want.copy()
    got[3] = x[0] * ((x[1] * x[2]) * x[3])  # another grouping: no subnormal step
    assert got[3] != want[3] and abs(got[3] - want[3]) > 1e6 * np.spacing(want[3])
    assert _judge(out, got, want, aux=(aux, x))
    assert not _judge(out, want * np.array([1, 1, 1, 1.01]), want, aux=(aux, x))
