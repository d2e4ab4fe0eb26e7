"""Level-1 timing over synthetic traces: exact single-DMA timelines, sharing, dependencies,
policies, the max-min allocator, the profile and its Chrome trace."""

import json
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from triton_plate_backend import cost
from triton_plate_backend.errors import SimulatorError
from triton_plate_backend.isa.program import Inst, Program, Tile
from triton_plate_backend.machine import get_machine
from triton_plate_backend.sim.bandwidth import max_min_fair
from triton_plate_backend.sim.timing import POLICIES, level0_bound, map_programs, simulate_timing
from triton_plate_backend.sim.trace import Trace, TraceEntry

MINI = get_machine("plate-mini")
P1 = get_machine("plate1")
HBM = 64 * 0.9  # sustained B/cycle per domain


# ---- builders (also used by test_published_effects) ------------------------------------------------


def load(q, t):
    return Inst("dma.load", (), (q, t, 0, (1,), (2,), (1,), 0))


def store(q, t):
    return Inst("dma.store", (), (q, t, 0, (1,), (2,), (1,)))


def straight_trace(prog: Program, nprog: int, dma_bytes, runs=1) -> Trace:
    """Every program runs every instruction once. dma_bytes: [nprog, D] array for every DMA, or
    callable(pc) -> such an array."""
    progs = np.arange(nprog)
    entries = []
    for pc, ins in enumerate(prog.instrs):
        if ins.row.unit in ("dma_in", "dma_out"):
            b = np.asarray(dma_bytes(pc) if callable(dma_bytes) else dma_bytes, dtype=np.float64)
            entries.append(TraceEntry(pc, progs, b.copy(), np.full(nprog, 1024), np.full(nprog, runs)))
        else:
            entries.append(TraceEntry(pc, progs))
    return Trace(prog, (nprog, 1, 1), entries)


def stream_program(chunks=2, elems=4096) -> Program:
    """Software-pipelined copy: load every chunk, then wait+store each; stores drain after halt."""
    tiles = [Tile(i * elems * 4, "f32", (elems,)) for i in range(chunks)]
    ins = [Inst("s.pid", ("x",), (0,)), Inst("s.li", (), (1, 0)), Inst("s.mul", ("i64",), (2, 0, 1))]
    ins += [load(k, k) for k in range(chunks)]
    for k in range(chunks):
        ins += [Inst("dma.wait", (), (k,)), store(chunks + k, k)]
    ins.append(Inst("halt"))
    return Program("stream", ins, tiles, consts=[0])


def one_hot_bytes(machine, home, nbytes):
    home = np.asarray(home)
    b = np.zeros((len(home), machine.total_domains))
    b[np.arange(len(home)), home] = nbytes
    return b


def stream_trace(machine, nprog, home, chunks=2, elems=4096, interleaved=False):
    """A streaming copy where program i's data lives in domain home[i] (or in 4 KiB stripes)."""
    nbytes = elems * 4
    if interleaved:
        b = np.full((nprog, machine.total_domains), nbytes / machine.total_domains)
    else:
        b = one_hot_bytes(machine, home, nbytes)
    return straight_trace(stream_program(chunks, elems), nprog, b)


def own_domains(machine, nprog):
    """Home domain = the domain of the core round_robin runs the program on."""
    return (np.arange(nprog) % machine.total_cores) // machine.domain.cores


# ---- exact timelines ---------------------------------------------------------------------------------


def copy_program():
    t = [Tile(0, "f32", (16384,))]  # 64 KiB
    ins = [
        Inst("s.li", (), (0, 0)),
        load(0, 0),
        Inst("dma.wait", (), (0,)),
        store(1, 0),
        Inst("dma.wait", (), (1,)),
        Inst("halt"),
    ]
    return Program("copy", ins, t, consts=[0])


@pytest.mark.parametrize("home,rate,hops", [(0, HBM, 0), (1, 32.0, 1), (3, 32.0, 2)])
def test_single_copy_exact_timeline(home, rate, hops):
    tr = straight_trace(copy_program(), 1, one_hot_bytes(P1, [home], 65536))
    p = simulate_timing(tr, P1)
    xfer = 65536 / rate
    lat = 400 + 200 * hops
    load_done = 1 + 52 + xfer + lat
    store_done = load_done + 1 + 52 + xfer + lat
    assert p.cycles == pytest.approx(store_done + 2, rel=1e-9)  # wait + halt after the store completes
    assert p.busy["dma_in"] == pytest.approx(52 + xfer)
    assert p.remote_bytes == (0 if home == 0 else 2 * 65536)
    assert p.dma_count == 2 and p.instr_count == 6


def test_chip_crossing_load():
    m = get_machine("plate4")  # domain 4 = chip 1, domain 0: one chip hop over 2 links x 16 B/cycle
    prog = Program("ld", [load(0, 0), Inst("dma.wait", (), (0,))], [Tile(0, "f32", (16384,))], consts=[0])
    p = simulate_timing(straight_trace(prog, 1, one_hot_bytes(m, [4], 65536)), m)
    assert p.cycles == pytest.approx(52 + 65536 / 32 + 400 + 700 + 100 + 1)
    assert p.bound.binding == "chip_link" and p.bound.where["chip_link"] == "chip[c1->c0]"


def test_two_cores_share_one_hbm_fairly():
    prog = Program("ld", [load(0, 0), Inst("dma.wait", (), (0,))], [Tile(0, "f32", (16384,))], consts=[0])
    b = one_hot_bytes(MINI, [0, 0], 65536)  # both programs on domain 0's two cores
    p = simulate_timing(straight_trace(prog, 2, b), MINI)
    assert p.cycles == pytest.approx(52 + 2 * 65536 / HBM + 400 + 1, rel=1e-6)
    assert p.busy_by_core[0, 0] == pytest.approx(p.busy_by_core[0, 1])


def test_dma_and_compute_overlap():
    tiles = [Tile(0, "f32", (4096,)), Tile(16384, "f32", (4096,))]
    ins = [load(0, 0), Inst("dma.wait", (), (0,)), load(1, 1)] + [Inst("v.exp", (), (0, 0))] * 8
    ins += [Inst("dma.wait", (), (1,)), Inst("halt")]
    prog = Program("ovl", ins, tiles, consts=[0])
    p = simulate_timing(straight_trace(prog, 1, one_hot_bytes(P1, [0], 16384)), P1)
    xfer = 52 + 16384 / HBM + 400
    compute = 8 * cost.vector_cycles(P1, 4096, 4, True)
    assert p.cycles == pytest.approx(xfer + 1 + max(xfer, compute) + 2)  # the second load hides under v.exp


def test_war_store_then_reload_waits_for_the_transfer_not_the_completion():
    t = [Tile(0, "f32", (16384,))]
    ins = [store(0, 0), load(1, 0), Inst("dma.wait", (), (1,))]
    p = simulate_timing(straight_trace(Program("w", ins, t, consts=[0]), 1, one_hot_bytes(P1, [0], 65536)), P1)
    x = 65536 / HBM
    assert p.cycles == pytest.approx((52 + x) + (52 + x) + 400 + 1)


def _aliased_loads(reader):
    """Two 64 KiB loads into disjoint tiles 0 and 1 that tile 2 (an epilogue tile sharing their SRAM)
    covers, then ``reader`` (instructions) after both waits."""
    t = [Tile(0, "f32", (16384,)), Tile(65536, "f32", (16384,)), Tile(0, "f32", (32768,))]
    ins = [load(0, 0), load(1, 1), Inst("dma.wait", (), (0,)), Inst("dma.wait", (), (1,))] + reader
    return simulate_timing(straight_trace(Program("alias", ins, t, consts=[0]), 1, one_hot_bytes(P1, [0], 65536)), P1)


def test_loads_into_disjoint_tiles_that_a_larger_tile_covers_do_not_wait_for_each_other():
    p = _aliased_loads([])
    x = 65536 / HBM
    # the second load moves its bytes when the first leaves the engine, not when it completes (+400);
    # it issued (52 cycles) while the first moved its bytes (the engine's two stages, cost.dma_stages)
    assert p.cycles == pytest.approx(52 + 2 * x + 400 + 1, rel=1e-9)


def test_a_read_of_the_covering_tile_waits_for_every_write_under_it():
    x = 65536 / HBM
    p = _aliased_loads([Inst("v.exp", (), (2, 2))])
    cyc = cost.vector_cycles(P1, 32768, 4, True)
    assert p.cycles == pytest.approx(52 + 2 * x + 400 + 1 + cyc, rel=1e-9)
    # a store of tile 2 waits for the vector op that wrote tile 0 under it (RAW through the overlap;
    # the trace moves 64 KiB per DMA)
    q = _aliased_loads([Inst("v.exp", (), (0, 0)), store(2, 2), Inst("dma.wait", (), (2,))])
    half = cost.vector_cycles(P1, 16384, 4, True)
    assert q.cycles == pytest.approx(52 + 2 * x + 400 + 1 + half + 52 + 65536 / HBM + 400 + 1, rel=1e-9)


def test_a_queued_dma_issues_while_the_one_before_it_moves_bytes():
    """The DMA engine's issue stage runs ahead of its transfer stage (cost.dma_stages): with 200 runs
    per DMA (50 + 2 * 200 = 450 issue cycles) two back-to-back loads cost one issue, not two, and
    the engine is busy from the first issue to the last transfer; a DMA alone still pays issue + transfer."""
    t = [Tile(0, "f32", (16384,)), Tile(65536, "f32", (16384,))]
    ins = [load(0, 0), load(1, 1), Inst("dma.wait", (), (0,)), Inst("dma.wait", (), (1,))]
    tr = straight_trace(Program("two", ins, t, consts=[0]), 1, one_hot_bytes(P1, [0], 65536), runs=200)
    p = simulate_timing(tr, P1)
    issue, x = 50 + 2 * 200, 65536 / HBM
    assert p.cycles == pytest.approx(issue + 2 * x + 400 + 1, rel=1e-9)  # the second issue is hidden
    assert p.busy["dma_in"] == pytest.approx(issue + 2 * x, rel=1e-9)
    assert p.bound.terms["dma_engine"] == pytest.approx(2 * 65536 / 64)  # max(2 issues, 2 transfers)
    alone = Program("one", ins[:1] + ins[2:3], t, consts=[0])
    one = simulate_timing(straight_trace(alone, 1, one_hot_bytes(P1, [0], 65536), runs=200), P1)
    assert one.cycles == pytest.approx(issue + x + 400 + 1, rel=1e-9)


def test_queue_depth_stalls_the_instruction_stream():
    t = [Tile(i * 256, "f32", (64,)) for i in range(10)]
    ins = [load(i, i) for i in range(10)] + [Inst("s.li", (), (0, 0))]
    prog = Program("q", ins, t, consts=[0])
    p = simulate_timing(straight_trace(prog, 1, one_hot_bytes(P1, [0], 256)), P1, collect_events=True)
    ev = [e for e in p.events if e[0] == 10][0]  # the s.li after ten loads
    first_done = 52 + 256 / HBM + 400
    assert ev[3][0] >= first_done  # the 9th load had to wait for a free queue slot


def test_fence_waits_for_every_outstanding_dma():
    t = [Tile(0, "f32", (1024,)), Tile(4096, "f32", (1024,))]
    ins = [load(0, 0), store(1, 1), Inst("fence", ("acq_rel",), ()), Inst("halt")]
    homes = {0: 2, 1: 1}  # load from domain 2, store to domain 1: one die hop each, no shared resource
    tr = straight_trace(Program("f", ins, t, consts=[0]), 1, lambda pc: one_hot_bytes(P1, [homes[pc]], 4096))
    p = simulate_timing(tr, P1)
    assert p.cycles == pytest.approx(52 + 4096 / 32 + 400 + 200 + 2)  # 32 B/cycle die links


def test_compute_chain_and_flops():
    t = [Tile(0, "f32", (32, 32)), Tile(4096, "bf16", (32, 1024)), Tile(69632, "bf16", (1024, 32))]
    prog = Program("mm", [Inst("m.mma", ("ieee",), (0, 1, 2))] * 4, t)
    p = simulate_timing(straight_trace(prog, 3, None), MINI)
    assert p.cycles == 4 * 1118
    assert p.flops == 3 * 4 * 2 * 32 * 32 * 1024
    assert p.busy["compute"] == 3 * 4 * 1118


# ---- policies ------------------------------------------------------------------------------------


def test_policies():
    n, m = 20, MINI  # 8 cores, 2 per domain
    assert list(POLICIES["round_robin"](n, m)[:9]) == [0, 1, 2, 3, 4, 5, 6, 7, 0]
    blocked = POLICIES["blocked"](n, m)
    assert (np.diff(blocked) >= 0).all() and sorted(set(blocked)) == list(range(8))
    dom = POLICIES["domain_aligned"](n, m) // m.domain.cores
    assert list(dom) == sorted(dom) and list(np.bincount(dom)) == [5, 5, 5, 5]
    assert list(map_programs([7] * 3, 3, m)) == [7, 7, 7]
    with pytest.raises(SimulatorError, match="one core in"):
        map_programs([9, 0], 2, m)
    with pytest.raises(SimulatorError, match="unknown grid->core policy"):
        map_programs("zigzag", 2, m)


def test_programs_on_one_core_run_in_order():
    tr = straight_trace(copy_program(), 3, one_hot_bytes(P1, [0, 0, 0], 65536))
    one_core = simulate_timing(tr, P1, policy=[0, 0, 0])
    spread = simulate_timing(tr, P1, policy="round_robin")
    assert one_core.cores_used == 1 and spread.cores_used == 3
    assert (
        one_core.cycles
        > 2.5 * simulate_timing(straight_trace(copy_program(), 1, one_hot_bytes(P1, [0], 65536)), P1).cycles
    )
    assert spread.cycles < one_core.cycles


def test_policy_changes_remote_bytes():
    n = 16
    home = np.arange(n) * MINI.total_domains // n  # blocked placement: contiguous chunks per domain
    tr = stream_trace(MINI, n, home)
    aligned = simulate_timing(tr, MINI, policy="domain_aligned")
    rr = simulate_timing(tr, MINI, policy="round_robin")
    assert aligned.remote_bytes == 0 and rr.remote_bytes > 0
    assert aligned.cycles < rr.cycles


# ---- max-min allocator ------------------------------------------------------------------------


def test_two_flows_on_one_link_get_half_each():
    assert list(max_min_fair([32.0], [[0], [0]])) == pytest.approx([16, 16])


def test_max_min_textbook_case():
    # r0 (cap 10): A, B; r1 (cap 3): A, C, D -> A = C = D = 1, B = 9
    rates = max_min_fair([10.0, 3.0], [[0, 1], [0], [1], [1]])
    assert rates == pytest.approx([1, 9, 1, 1])
    assert max_min_fair([10.0], [[0], [0]], demand=[2.0, 100.0]) == pytest.approx([2, 8])


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_max_min_property(data):
    R = data.draw(st.integers(1, 5))
    caps = data.draw(st.lists(st.floats(1, 100), min_size=R, max_size=R))
    flows = data.draw(
        st.lists(st.lists(st.integers(0, R - 1), min_size=1, max_size=3, unique=True), min_size=1, max_size=8)
    )
    x = max_min_fair(caps, flows)
    load = np.zeros(R)
    for f, rate in zip(flows, x):
        load[f] += rate
    assert (load <= np.array(caps) * (1 + 1e-9)).all(), "infeasible"
    sat = load >= np.array(caps) * (1 - 1e-7)
    for i, f in enumerate(flows):  # every flow has a saturated resource where nobody gets more
        assert any(sat[r] and all(x[i] >= x[j] - 1e-7 for j, g in enumerate(flows) if r in g) for r in f), (
            f"flow {i} has no bottleneck"
        )


# ---- profile ------------------------------------------------------------------------------------


def test_profile_accounting_and_summary():
    n = 16
    tr = stream_trace(MINI, n, own_domains(MINI, n))
    p = simulate_timing(tr, MINI)
    assert p.total_bytes == pytest.approx(n * 2 * 2 * 4096 * 4)  # 2 chunks in, 2 out
    assert p.local_bytes == p.total_bytes and p.remote_bytes == 0
    assert p.cycles >= p.bound.cycles and p.bound.binding == "hbm"
    assert 0 < p.utilisation["dma_in"] <= 1 and p.time_ns == p.cycles
    assert p.dma_count == n * 4 and p.instr_count == n * len(tr.program.instrs)
    text = p.summary()
    for word in ("cycles", "level-0 bound", "hbm", "utilisation", "home d3", "B/cycle"):
        assert word in text


def test_chrome_trace(tmp_path):
    tr = stream_trace(MINI, 8, own_domains(MINI, 8))
    p = simulate_timing(tr, MINI, collect_events=True)
    path = tmp_path / "t.json"
    p.write_trace(path)
    doc = json.loads(path.read_text())
    xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert len(xs) == 8 * len(tr.program.instrs)
    assert {e["pid"] for e in xs} == {0, 1, 2, 3}
    loads = [e for e in xs if e["name"].startswith("dma.load")]
    assert loads and all(e["cat"] == "dma_in" and e["tid"] % 3 == 0 for e in loads)
    assert max(e["ts"] + e["dur"] for e in xs) <= p.cycles / 1e3 + 1e-9
    capped = simulate_timing(tr, MINI, collect_events=True, max_events=20)
    assert capped.events_dropped > 0 and sum(len(e[2]) for e in capped.events) <= 20
    assert "dropped" in capped.summary()
    with pytest.raises(ValueError, match="collect_events"):
        simulate_timing(tr, MINI).write_trace(path)


def test_branchy_trace_with_subsets_of_programs():
    # programs 0 and 2 skip the compute (a branch); the others run it twice (a loop)
    t = [Tile(0, "f32", (1024,))]
    prog = Program(
        "b", [load(0, 0), Inst("dma.wait", (), (0,)), Inst("v.exp", (), (0, 0)), Inst("halt")], t, consts=[0]
    )
    allp, some = np.arange(4), np.array([1, 3])
    b = one_hot_bytes(MINI, [0] * 4, 4096)
    entries = [
        TraceEntry(0, allp, b, np.full(4, 1024), np.ones(4)),
        TraceEntry(1, allp),
        TraceEntry(2, some),
        TraceEntry(2, some),
        TraceEntry(3, allp),
    ]
    p = simulate_timing(Trace(prog, (4, 1, 1), entries), MINI, collect_events=True)
    assert p.instr_count == 4 * 3 + 2 * 2
    assert p.cycles >= level0_bound(Trace(prog, (4, 1, 1), entries), MINI).cycles


def test_timing_1024_programs():
    tr = stream_trace(P1, 1024, own_domains(P1, 1024), chunks=1, elems=8192)  # 8 instructions per program
    simulate_timing(tr, P1)
    t0 = time.perf_counter()
    p = simulate_timing(tr, P1)
    wall = time.perf_counter() - t0
    print(f"1024 programs x {len(tr.program.instrs)} instructions: {wall * 1e3:.1f} ms")
    assert p.cycles >= p.bound.cycles
