"""The walks compiled in sim/_walk (sim/csrc/walk.cpp, built by setup.py) against their numpy references,
on the traces real launches hand them: a persistent GEMM (split contexts, DMA rings, tokens), a softmax
and a vector add. The cost model's walk (estimate._walk_numpy) must give the same per-program results
and the level-1 timing with the calendar's compiled pass (bandwidth.Calendar._pass) the same Profile, bit
for bit; without the extension the numpy code models the same times."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from triton_plate_backend.bench.kernels import add_kernel, matmul_kernel, softmax_kernel
from triton_plate_backend.sim import bandwidth, clock, dma, estimate, operands
from triton_plate_backend.sim.persistent_runs import PersistentRuns
from triton_plate_backend.sim.timing import mapped

needs_walk = pytest.mark.skipif(estimate._walk is None, reason="sim._walk is not built (setup.py build_ext)")


@pytest.fixture(scope="module", autouse=True)
def mini(plate_mini_module):
    return plate_mini_module


def _launches(mini) -> None:
    """A persistent GEMM, a softmax and a vector add on plate-mini."""
    g = torch.Generator().manual_seed(0)
    m = n = k = 512
    a = torch.randn(m, k, generator=g).to(torch.bfloat16).to("plate")
    b = torch.randn(k, n, generator=g).to(torch.bfloat16).to("plate")
    c = torch.empty(m, n, dtype=torch.bfloat16, device="plate")
    grid = (triton.cdiv(m, 64) * triton.cdiv(n, 64),)
    matmul_kernel[grid](
        a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BM=64, BN=64, BK=32, GROUP_M=8,
    )  # fmt: skip
    x = torch.randn(256, 300, generator=g).to("plate")
    y = torch.empty_like(x)
    softmax_kernel[(256,)](y, x, x.stride(0), 300, BLOCK=512)
    u, v = torch.randn(100_000, generator=g).to("plate"), torch.randn(100_000, generator=g).to("plate")
    w = torch.empty_like(u)
    add_kernel[(triton.cdiv(100_000, 1024),)](u, v, w, 100_000, BLOCK=1024)
    assert mini.last_profile is not None  # the level-1 timing of the last launch (the others' at the clock's read)
    mini.now_ns()


@pytest.fixture(scope="module")
def modeled(mini) -> tuple[list, list]:
    """(trace, machine, policy, modeled ns) of every trace the launches' cost model ran over; (trace,
    machine, policy) of every trace the level-1 timing ran over."""
    seen = []
    model = estimate.model

    def recorded(trace, machine=None, *, policy=None, wall_s=0.0):
        est = model(trace, machine, policy=policy, wall_s=wall_s)
        seen.append((trace, machine, policy, est.time_ns))
        return est

    timed = []
    simulate_timing = clock.simulate_timing

    def timing_recorded(trace, machine=None, *, policy="round_robin"):
        timed.append((trace, machine, policy))
        return simulate_timing(trace, machine, policy=policy)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(estimate, "model", recorded)
        mp.setattr(clock, "simulate_timing", timing_recorded)
        _launches(mini)
    return seen, timed


@needs_walk
def test_the_compiled_walk_gives_the_numpy_walk_s_bits_on_real_traces(modeled, monkeypatch):
    modeled = modeled[0]
    assert len(modeled) >= 3
    # the GEMM ran persistent: a trace whose programs run different trip counts (split contexts)
    assert any(len({id(e.programs) for e in t.entries}) > 1 for t, *_ in modeled)
    kinds = set()
    for trace, machine, policy, _ in modeled:
        m = mapped(trace, machine, policy)
        kinds |= {m.pcs[e.pc].kind for e in m.trace.entries}
        out = {}
        for compiled in (False, True):
            monkeypatch.setattr(estimate, "COMPILED_WALK", compiled)
            out[compiled] = [x.tobytes() for x in estimate._program_times(m.trace, machine, m.pcs, m.core_of, m.issues)]
        assert out[True] == out[False], f"{trace.program.name}: the compiled walk differs from the numpy walk"
    assert {"scalar", "compute", "wait", "dma"} <= kinds


def test_without_the_extension_the_numpy_walk_models_the_same_times(modeled, monkeypatch):
    modeled = modeled[0]
    calls = {"numpy": 0, "compiled": 0}

    def counted(name, fn):
        def wrapper(*a):
            calls[name] += 1
            return fn(*a)

        return wrapper

    monkeypatch.setattr(estimate, "_walk_numpy", counted("numpy", estimate._walk_numpy))
    if estimate._walk is not None:
        monkeypatch.setattr(estimate, "_walk_compiled", counted("compiled", estimate._walk_compiled))
        for trace, machine, policy, ns in modeled:
            assert estimate.model(trace, machine, policy=policy).time_ns == ns
        assert calls == {"numpy": 0, "compiled": len(modeled)}
    monkeypatch.setattr(estimate, "_walk", None)
    calls.update(compiled=0)
    for trace, machine, policy, ns in modeled:
        assert estimate.model(trace, machine, policy=policy).time_ns == ns
    assert calls == {"numpy": len(modeled), "compiled": 0}


def _profile_bits(p) -> tuple:
    return (p.cycles, p.busy_by_core.tobytes(), p.read_bytes.tobytes(), p.write_bytes.tobytes(), p.bucket_cycles)


@needs_walk
def test_the_calendar_s_compiled_pass_gives_the_numpy_pass_s_profiles(modeled, monkeypatch):
    timed = modeled[1]
    assert len(timed) >= 3
    calls = []
    pass_ = bandwidth._walk.calendar_pass
    monkeypatch.setattr(bandwidth._walk, "calendar_pass", lambda *a: calls.append(1) or pass_(*a))
    for trace, machine, policy in timed:
        got = clock.simulate_timing(trace, machine, policy=policy)
        monkeypatch.setattr(bandwidth, "COMPILED_PASS", False)
        want = clock.simulate_timing(trace, machine, policy=policy)
        monkeypatch.setattr(bandwidth, "COMPILED_PASS", True)
        assert _profile_bits(got) == _profile_bits(want), f"{trace.program.name}: the compiled pass differs"
    assert calls


@triton.jit
def _masked_off_copy(x, y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y + offs, tl.load(x + offs, mask=offs < n), mask=offs < n)


@needs_walk
def test_a_dma_that_moves_no_bytes_in_several_programs_walks_as_in_numpy(mini, monkeypatch):
    # every element masked off (n = 0): the DMA entries of the 2 programs move no bytes and have no transfer
    # times; the compiled walk's table check took their "no times" mark for an index (upstream
    # test_block_pointer's test_block_copy with a lower or upper bound at n = 128 raised "out of range")
    seen = []
    model = estimate.model

    def recorded(trace, machine=None, *, policy=None, wall_s=0.0):
        seen.append((trace, machine, policy))
        return model(trace, machine, policy=policy, wall_s=wall_s)

    monkeypatch.setattr(estimate, "model", recorded)
    # the operand planner's pricing models the launch (its small operands would be decided unpriced otherwise)
    monkeypatch.setattr(operands, "_replicas_change_nothing", lambda *a: False)
    x, y = torch.ones(256, device="plate"), torch.zeros(256, device="plate")
    _masked_off_copy[(2,)](x, y, 0, BLOCK=128)
    mini.now_ns()
    assert torch.equal(y.cpu(), torch.zeros(256))
    empty_dma = 0
    for trace, machine, policy in seen:
        m = mapped(trace, machine, policy)
        empty_dma += sum(
            m.pcs[e.pc].kind == "dma"
            and len(np.asarray(e.programs)) > 1
            and (e.bytes_by_domain is None or not e.bytes_by_domain.any())
            for e in m.trace.entries
        )
        out = {}
        for compiled in (False, True):
            monkeypatch.setattr(estimate, "COMPILED_WALK", compiled)
            out[compiled] = [x.tobytes() for x in estimate._program_times(m.trace, machine, m.pcs, m.core_of, m.issues)]
        assert out[True] == out[False], f"{trace.program.name}: the compiled walk differs from the numpy walk"
    assert empty_dma >= 2  # the load and the store, each over both programs


@needs_walk
def test_a_bad_table_raises_and_writes_nothing():
    n = 4
    eng, ready, read, issued = np.zeros((3, n)), np.zeros((1, n)), np.zeros((1, n)), np.zeros((3, n))
    tok, done, busy, ring = np.zeros((1, n)), np.zeros(n), np.zeros(n), np.zeros((2, 2, n))
    nq = np.zeros((2, n), np.int64)
    pc_int = np.array([[3, 1, -1, 0, 0, 1, 1, 1, 2]], np.int64)  # compute: waits on tile 0, writes tile 0
    pc_f64 = np.array([[5.0, 0.0]])
    steps = np.array([[0, 0, 1, 0, -1]], np.int64)
    args = [eng, ready, read, issued, tok, done, busy, ring, nq, pc_int, pc_f64, np.array([0, 0], np.int64), steps]
    rest = [np.zeros(1), np.array([0, n], np.int64), np.arange(n, dtype=np.int64), np.zeros((0, 2), np.int64)]
    empty = [np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0, np.uint8)]
    estimate._walk.program_times(n, 2, *args, *rest, *empty)
    assert eng[1].tolist() == [5.0] * n and ready[0].tolist() == [5.0] * n
    bad = np.array([0, 0, n], np.int64)  # a group naming program n of n
    with pytest.raises(ValueError, match="out of range"):
        estimate._walk.program_times(n, 2, *args, rest[0], np.array([0, 3], np.int64), bad, rest[3], *empty)
    assert eng[1].tolist() == [5.0] * n


@pytest.mark.skipif(dma._tiles is None, reason="sim._tiles is not built (setup.py build_ext)")
def test_whole_tile_dmas_from_the_registers_give_the_numpy_path_s_results(mini, monkeypatch):
    """A persistent GEMM on plate-mini with the whole-tile DMAs tested and counted in C (dma.COMPILED_TILES,
    the functional loads and the address-only run's) and with the numpy path: the same output bytes, the
    same modeled time and the same Profile; the compiled test is taken by both rules (a test of the numpy
    path's equality on hypothesis' descriptors: tests/unit/test_sim_speed_paths.py)."""
    taken = {"tiles": 0, "traffic": 0}
    from_registers, of_registers = dma._Tiles.from_registers.__func__, dma.strided_traffic_of_registers

    def counted(name, fn):
        def wrapper(*a):
            out = fn(*a)
            taken[name] += out is not None
            return out

        return wrapper

    monkeypatch.setattr(dma._Tiles, "from_registers", classmethod(counted("tiles", from_registers)))
    monkeypatch.setattr(dma, "strided_traffic_of_registers", counted("traffic", of_registers))
    out = {}
    for compiled in (True, False):
        monkeypatch.setattr(dma, "COMPILED_TILES", compiled)
        monkeypatch.setattr(mini, "_persistent_runs", PersistentRuns())  # no trace kept from the other run
        g = torch.Generator().manual_seed(1)
        a = torch.randn(256, 256, generator=g).to(torch.bfloat16).to("plate")
        b = torch.randn(256, 256, generator=g).to(torch.bfloat16).to("plate")
        c = torch.empty(256, 256, dtype=torch.bfloat16, device="plate")
        matmul_kernel[(triton.cdiv(256, 32) * triton.cdiv(256, 32),)](
            a, b, c, 256, 256, 256, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
            BM=32, BN=32, BK=32, GROUP_M=4,
        )  # fmt: skip
        profile = mini.last_profile
        out[compiled] = (c.cpu().view(torch.int16).numpy().tobytes(), _profile_bits(profile), profile.time_ns)
        if compiled:  # tiles found by the functional loads and by the address-only run
            assert taken["tiles"] > taken["traffic"] > 0, taken
    assert out[True] == out[False]
