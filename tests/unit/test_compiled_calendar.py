"""The bandwidth calendar's pass compiled (sim/csrc/walk.cpp: Calendar._pass over one dense range of
buckets, or over the union of the flows' windows) against its numpy reference: the same end times and the
same bytes committed per resource and bucket, bit for bit, over sequences of transfers that oversubscribe
shared resources, name one to three resources per flow, finish in one pass or several, and start far apart
(the numpy pass's sparse windows)."""

import numpy as np
import pytest

from triton_plate_backend.sim import bandwidth
from triton_plate_backend.sim.bandwidth import Calendar

pytestmark = pytest.mark.skipif(
    getattr(bandwidth._walk, "calendar_pass_columns", None) is None,
    reason="sim._walk is not built, or built before calendar_pass_columns (setup.py build_ext)",
)


def _transfers(seed: int, R: int):
    rng = np.random.default_rng(seed)
    t = 0.0
    for _ in range(16):
        F = int(rng.integers(1, 40))
        J = int(rng.integers(1, 4))
        res = rng.integers(0, R, size=(F, J))
        res[:, 1:][rng.random((F, J - 1)) < 0.4] = R  # padding: fewer resources
        t += float(rng.exponential(30.0))
        spread = rng.choice([0.0, 5.0, 5e4])  # 5e4: cores far apart in time (sparse windows)
        start = t + rng.random(F) * spread
        nbytes = rng.choice([64.0, 4096.0, 65536.0, 2e5]) * rng.random(F) + 1.0
        rate = rng.choice([8.0, 64.0, 256.0]) / rng.integers(1, 4, size=F)
        yield t, start, nbytes, rate, res


def _run(seed: int, compiled: bool, monkeypatch) -> tuple:
    monkeypatch.setattr(bandwidth, "COMPILED_PASS", compiled)
    R = 5
    cal = Calendar(np.array([32.0, 32.0, 16.0, 64.0, 8.0]), 16.0)
    calls = []
    if compiled:  # each compiled pass: the dense range's, or any columns' (the sparse windows')
        for name in ("calendar_pass", "calendar_pass_columns"):
            pass_ = getattr(bandwidth._walk, name)
            monkeypatch.setattr(
                bandwidth._walk, name, lambda *a, name=name, pass_=pass_: calls.append(name) or pass_(*a)
            )
    ends = []
    for t, start, nbytes, rate, res in _transfers(seed, R):
        ends.append(cal.transfer(start, nbytes, rate, res).tobytes())
        cal.forget_before(t)  # the later transfers start after t
    monkeypatch.undo()
    return ends, cal.used.tobytes(), cal.base, set(calls)


@pytest.mark.parametrize("seed", range(4))
def test_the_compiled_pass_commits_the_numpy_pass_s_bits(seed, monkeypatch):
    ends, used, base, calls = _run(seed, True, monkeypatch)
    want_ends, want_used, want_base, _ = _run(seed, False, monkeypatch)
    assert calls == {"calendar_pass", "calendar_pass_columns"}  # dense ranges and sparse windows both compiled
    assert ends == want_ends
    assert (used, base) == (want_used, want_base)
