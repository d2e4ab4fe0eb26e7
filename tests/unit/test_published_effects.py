"""PLATE.md's published effects as regression tests of the timing model (numbers printed with -s)."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_timing import MINI, load, own_domains, store, stream_trace

from triton_plate_backend.isa.program import Inst, Program, Tile
from triton_plate_backend.machine import get_machine
from triton_plate_backend.sim.timing import POLICIES, simulate_timing
from triton_plate_backend.sim.trace import Trace, TraceEntry

N = 64  # programs: 8 waves on plate-mini's 8 cores


def test_careful_pairing_reaches_hbm_bandwidth_random_pairing_does_not():
    careful = simulate_timing(stream_trace(MINI, N, own_domains(MINI, N)), MINI)
    rng = np.random.default_rng(7)
    random = simulate_timing(stream_trace(MINI, N, rng.integers(0, MINI.total_domains, N)), MINI)
    share_c, share_r = careful.hbm_share_of_sustained, random.hbm_share_of_sustained
    print(
        f"\ncareful pairing: {careful.hbm_bytes_per_cycle:.1f} B/cycle = {share_c:.1%} of sustained; "
        f"random: {random.hbm_bytes_per_cycle:.1f} B/cycle = {share_r:.1%}; random/careful {share_r / share_c:.2f}"
    )
    assert careful.remote_bytes == 0 and random.remote_bytes > 0
    assert share_c >= 0.90
    assert share_r < 0.75 * share_c


def test_local_beats_interleaved_on_streaming():
    local = simulate_timing(stream_trace(MINI, N, own_domains(MINI, N)), MINI)
    inter = simulate_timing(stream_trace(MINI, N, None, interleaved=True), MINI)
    ratio = local.hbm_bytes_per_cycle / inter.hbm_bytes_per_cycle
    print(
        f"\nlocal {local.hbm_bytes_per_cycle:.1f} B/cycle vs interleaved {inter.hbm_bytes_per_cycle:.1f} B/cycle: "
        f"local/interleaved = {ratio:.2f} (MI300X NPS4 vs NPS1: ~1.05); interleaved remote share "
        f"{inter.remote_bytes / inter.total_bytes:.0%}"
    )
    assert inter.remote_bytes / inter.total_bytes == 0.75
    assert ratio > 1.05


def test_mma_chain_approaches_matrix_peak():
    chain = 128
    t = [Tile(0, "f32", (32, 32)), Tile(4096, "bf16", (32, 1024)), Tile(69632, "bf16", (1024, 32))]
    ins = [
        load(0, 1),
        load(1, 2),
        Inst("dma.wait", (), (0,)),
        Inst("dma.wait", (), (1,)),
        Inst("m.mma", ("ieee",), (0, 1, 2)),
        store(2, 0),
        Inst("halt"),
    ]
    prog = Program("mm", ins, t, consts=[0])
    n = MINI.total_cores
    progs = np.arange(n)
    home = own_domains(MINI, n)

    def dma(pc, nbytes):
        b = np.zeros((n, MINI.total_domains))
        b[progs, home] = nbytes
        return TraceEntry(pc, progs, b, np.full(n, nbytes // 2), np.ones(n))

    entries = [dma(0, 65536), dma(1, 65536), TraceEntry(2, progs), TraceEntry(3, progs)]
    entries += [TraceEntry(4, progs) for _ in range(chain)] + [dma(5, 4096), TraceEntry(6, progs)]
    p = simulate_timing(Trace(prog, (n, 1, 1), entries), MINI)
    ceiling = 1024 / (1024 + 94)  # the fill of every instruction
    print(
        f"\nmma chain: {p.matrix_utilisation:.1%} of matrix peak (fill-limited ceiling {ceiling:.1%}), "
        f"bound by {p.bound.binding}"
    )
    assert p.bound.binding == "compute"
    assert 0.85 <= p.matrix_utilisation <= ceiling + 1e-9


# ---- level 1 is never faster than level 0 ------------------------------------------------------------

MACHINES = [get_machine("plate-mini"), get_machine("plate1"), get_machine("plate4")]

# kind -> (token q, tile t, first of the three matrix tiles m) -> instruction
RANDOM_INSTRS = {
    "load": lambda q, t, m: load(q, t),
    "store": lambda q, t, m: store(q, t),
    "gather": lambda q, t, m: Inst("dma.gather", (), (q, t, t, t, 0)),
    "atom": lambda q, t, m: Inst("atom.rmw", ("add", "relaxed"), (t, t, t, t)),
    "wait": lambda q, t, m: Inst("dma.wait", (), (q,)),
    "barrier": lambda q, t, m: Inst("barrier"),
    "s.li": lambda q, t, m: Inst("s.li", (), (0, 0)),
    "v.add": lambda q, t, m: Inst("v.add", (), (t, t, t)),
    "v.exp": lambda q, t, m: Inst("v.exp", (), (t, t)),
    "mma": lambda q, t, m: Inst("m.mma", ("ieee",), (m, m + 1, m + 2)),
}


@st.composite
def random_traces(draw):
    machine = draw(st.sampled_from(MACHINES))
    D = machine.total_domains
    ntiles = draw(st.integers(1, 4))
    tiles = []
    for _ in range(ntiles):
        elems = draw(st.sampled_from([16, 256, 1024, 4096]))
        addr = draw(st.integers(0, 8)) * 4096  # tiles may overlap
        tiles.append(Tile(addr, draw(st.sampled_from(["f32", "bf16"])), (elems,)))
    mma_tiles = len(tiles)
    tiles += [Tile(65536, "f32", (32, 32)), Tile(69632, "bf16", (32, 64)), Tile(73728, "bf16", (64, 32))]
    kinds = st.sampled_from(sorted(RANDOM_INSTRS))
    instrs = []
    for kind in draw(st.lists(kinds, min_size=1, max_size=10)):
        instrs.append(RANDOM_INSTRS[kind](draw(st.integers(0, 3)), draw(st.integers(0, ntiles - 1)), mma_tiles))
    prog = Program("rand", instrs, tiles, consts=[0])
    n = draw(st.integers(1, 48))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    entries = []
    for _ in range(draw(st.integers(1, 2))):  # the body once or twice, like a loop
        for pc, ins in enumerate(instrs):
            progs = np.arange(n) if rng.random() < 0.7 else np.flatnonzero(rng.random(n) < 0.5)
            if ins.row.unit in ("dma_in", "dma_out"):
                k = len(progs)
                b = rng.integers(0, 65536, (k, D)) * (rng.random((k, D)) < 0.4)
                entries.append(
                    TraceEntry(pc, progs, b.astype(np.float64), rng.integers(1, 512, k), rng.integers(1, 64, k))
                )
            else:
                entries.append(TraceEntry(pc, progs))
    policy = draw(st.sampled_from(sorted(POLICIES) + ["explicit"]))
    if policy == "explicit":
        policy = rng.integers(0, machine.total_cores, n)
    bucket = draw(st.sampled_from([None, None, 64.0, 512.0]))
    return Trace(prog, (n, 1, 1), entries), machine, policy, bucket


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_traces())
def test_level1_never_beats_level0(case):
    trace, machine, policy, bucket = case
    p = simulate_timing(trace, machine, policy=policy, bucket_cycles=bucket)
    assert p.cycles >= p.bound.cycles * (1 - 1e-9), f"level 1 {p.cycles} < level 0 {p.bound}"
    moved = sum(float(e.bytes_by_domain.sum()) for e in trace.entries if e.bytes_by_domain is not None)
    assert abs(p.total_bytes - moved) <= 1e-6 * max(moved, 1.0)
