"""The sanitizer at the simulator level (no torch, no Triton): execute(sanitize=...) on the
hand-written vector add of examples/asm/vec_add.pasm."""

from __future__ import annotations

import os

import numpy as np
import pytest

from triton_plate_backend.errors import SanitizerError
from triton_plate_backend.isa.asm import assemble
from triton_plate_backend.sim.executor import execute
from triton_plate_backend.sim.memory import DeviceMemory

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BLOCK = 1024  # the program's block


@pytest.fixture(scope="module")
def vec_add():
    with open(os.path.join(REPO, "examples", "asm", "vec_add.pasm")) as f:
        return assemble(f.read())


def _arrays(mem, n, poison=False):
    x, y, o = (mem.alloc(4 * n, poison=poison, label=name) for name in "xyo")
    return x, y, o


def test_shifted_output_races_with_the_next_programs_input(vec_add):
    mem = DeviceMemory("plate-mini")
    n = 4 * BLOCK
    x, y, _ = _arrays(mem, n + 1)
    # o = x + one element: program p writes x[p*BLOCK + 1 .. (p+1)*BLOCK], which program p+1 reads
    with pytest.raises(SanitizerError) as err:
        execute(vec_add, 4, [x.base, y.base, x.base + 4, n], mem, sanitize={"race"})
    found = err.value.findings
    assert {tuple(k for _, _, k in f.accesses) for f in found} == {("write", "read")}
    assert sorted(f.addr - x.base for f in found) == [4 * BLOCK]  # the first element of program 1's block
    assert found[0].count == 3  # programs 1, 2 and 3 each read one element program p-1 wrote
    assert "argument 'o' + 4092 bytes" in found[0].text and "argument 'x' + 4096 bytes" not in found[0].text
    assert "'x' [" in found[0].text  # the allocation


def test_disjoint_programs_and_no_sanitizer(vec_add):
    mem = DeviceMemory("plate-mini")
    n = 4 * BLOCK - 100
    x, y, o = _arrays(mem, n + 1)
    execute(vec_add, 4, [x.base, y.base, o.base, n], mem, sanitize={"race", "init"})
    execute(vec_add, 4, [x.base, y.base, x.base + 4, n], mem)  # racy, but nothing asked to check


def test_init_reports_never_written_inputs(vec_add):
    mem = DeviceMemory("plate-mini")
    n = 2 * BLOCK
    x, y, o = _arrays(mem, n, poison=True)
    mem.write_bytes(x.base, np.ones(n, np.float32).tobytes())
    mem.write_bytes(y.base, np.ones(n - 10, np.float32).tobytes())  # the last 10 elements never written
    with pytest.raises(SanitizerError) as err:
        execute(vec_add, 2, [x.base, y.base, o.base, n], mem, sanitize={"init"})
    (f,) = err.value.findings
    assert f.kind == "init" and f.count == 10 and f.addr == y.base + 4 * (n - 10)
    assert "argument 'y'" in f.text and "by program (1, 0, 0)" in f.text
    assert np.isnan(o.view.view(np.float32)[-10:]).all()  # poison + 1 stays NaN
    mem.write_bytes(y.base, np.ones(n, np.float32).tobytes())
    execute(vec_add, 2, [x.base, y.base, o.base, n], mem, sanitize={"init"})
    assert (o.view.view(np.float32) == 2).all()


def test_init_reports_an_element_with_some_bytes_never_written(vec_add):
    mem = DeviceMemory("plate-mini")
    n = BLOCK
    x, y, o = _arrays(mem, n, poison=True)
    mem.write_bytes(x.base, np.ones(n, np.float32).tobytes())
    mem.write_bytes(y.base + 4, np.ones(n - 1, np.float32).tobytes())
    mem.write_bytes(y.base, b"\x00\x00")  # half of element 0: its other two bytes still hold the poison
    with pytest.raises(SanitizerError) as err:
        execute(vec_add, 1, [x.base, y.base, o.base, n], mem, sanitize={"init"})
    (f,) = err.value.findings
    assert f.addr == y.base and f.count == 1


@pytest.mark.parametrize("compact_at", [1 << 22, 7])
@pytest.mark.parametrize("seed", range(6))
def test_racy_bytes_match_a_pairwise_reference(monkeypatch, seed, compact_at):
    """Random accesses (sizes 1 and 4, four programs, reads / writes / atomics, some under a lock)
    give exactly the racy bytes a comparison of every pair of accesses finds."""
    from triton_plate_backend.isa.program import Program
    from triton_plate_backend.sim import sanitizer
    from triton_plate_backend.sim.sanitizer import ATOMIC, READ, WRITE, Sanitizer

    monkeypatch.setattr(sanitizer, "COMPACT_AT", compact_at)
    rng = np.random.default_rng(seed)
    mem = DeviceMemory("plate-mini")
    buf = mem.alloc(32)
    san = Sanitizer({"race"}, mem, Program("k"), [], lambda pc: f"pc {pc}", lambda pid: (pid, 0, 0))
    accesses = []
    for pc in range(40):
        size = int(rng.choice([1, 4]))
        pid, kind, lock = int(rng.integers(4)), int(rng.choice([READ, WRITE, ATOMIC])), int(rng.choice([0, 0, 7]))
        addr = buf.base + size * int(rng.integers(32 // size))
        san._held = {pid: lock} if lock else {}
        san.access(pc, np.array([pid]), np.array([[addr]]), None, size, kind)
        accesses.append((addr, size, pid, kind, lock))
    racy = set()
    for i, (a1, s1, p1, k1, l1) in enumerate(accesses):
        for a2, s2, p2, k2, l2 in accesses[i + 1 :]:
            kinds = {k1, k2}
            conflict = WRITE in kinds or kinds == {ATOMIC, READ}
            if p1 != p2 and conflict and not (l1 == l2 != 0):
                racy |= set(range(max(a1, a2), min(a1 + s1, a2 + s2)))
    found = san.findings()
    unit = 1 if any(s == 1 for _, s, *_ in accesses) else 4
    assert sum(f.count for f in found) * unit == len(racy)
    assert all(f.addr in racy for f in found)
