"""The cost model against PLATE.md's numbers, queried without running a kernel."""

import numpy as np
import pytest

from triton_plate_backend import cost
from triton_plate_backend.isa.program import Inst, Program, Tile
from triton_plate_backend.isa.table import ISA
from triton_plate_backend.machine import get_machine

M1 = get_machine("plate1")


def one(mnemonic, tiles, operands, suffixes=()):
    prog = Program("p", [Inst(mnemonic, suffixes, operands)], tiles, consts=[0])
    return cost.inst_cost(M1, prog.instrs[0], prog)


def test_every_cost_name_in_the_isa_table_has_a_rule():
    missing = sorted({row.cost for row in ISA.values()} - set(cost.COST_RULES))
    assert not missing, f"cost rules missing for {missing}"


@pytest.mark.parametrize(
    "shape,dtype,expected",
    [
        ((32, 32, 32), "bf16", 32 + 94),  # PLATE.md: 1024 MAC/cycle, 94 fill
        ((32, 32, 1024), "bf16", 1024 + 94),
        ((32, 32, 64), "i8", 32 + 94),  # r = 1/2
        ((32, 32, 32), "f32", 256 + 94),  # r = 8
        ((64, 64, 32), "bf16", 4 * 32 + 94),  # tiles of the 32x32 unit
        ((16, 8, 32), "f16", 32 + 94),  # a partial tile costs a whole one
        ((32, 32, 3), "i8", 2 + 94),  # ceil(K * r)
    ],
)
def test_mma_cycles(shape, dtype, expected):
    assert cost.mma_cycles(M1, *shape, dtype) == expected


def test_mma_rule_reads_the_tiles_and_the_precision():
    bf = [Tile(0, "f32", (32, 32)), Tile(4096, "bf16", (32, 32)), Tile(8192, "bf16", (32, 32))]
    assert one("m.mma", bf, (0, 1, 2), ("ieee",)) == 126
    f32 = [Tile(0, "f32", (32, 32)), Tile(4096, "f32", (32, 32)), Tile(8192, "f32", (32, 32))]
    assert one("m.mma", f32, (0, 1, 2), ("ieee",)) == 256 + 94
    assert one("m.mma", f32, (0, 1, 2), ("bf16x3",)) == 3 * 32 + 94  # three passes on the bf16 path
    assert one("m.mma", f32, (0, 1, 2), ("tf32x3",)) == 3 * 256 + 94
    prog = Program("p", [Inst("m.mma", ("ieee",), (0, 1, 2))], bf)
    assert cost.flops(prog.instrs[0], prog) == 2 * 32 * 32 * 32


def test_one_whole_tile_m_mma_verifies_and_pays_one_fill():
    """m.mma takes any M x N (the 32x32 array makes ceil(M/32)*ceil(N/32) passes behind one fill):
    a 512x256x64 bf16 instruction verifies and runs at 8192 / (8192 + 94) of the unit's peak."""
    from triton_plate_backend.isa.program import verify

    tiles = [Tile(0, "f32", (512, 256)), Tile(512 * 1024, "bf16", (512, 64)), Tile(576 * 1024, "bf16", (64, 256))]
    prog = Program("p", [Inst("m.mma", ("ieee",), (0, 1, 2)), Inst("halt")], tiles, consts=[0])
    verify(prog, M1)
    assert one("m.mma", tiles, (0, 1, 2), ("ieee",)) == 16 * 8 * 64 + 94
    assert cost.flops(prog.instrs[0], prog) == 2 * 512 * 256 * 64


def test_vector_cycles():
    assert cost.vector_cycles(M1, 1024, 4) == 32 + 5  # 32 fp32 lanes, +5 per instruction
    assert cost.vector_cycles(M1, 1024, 2) == 16 + 5  # bf16 packs two per lane
    assert cost.vector_cycles(M1, 1024, 1) == 8 + 5  # int8 four per lane
    assert cost.vector_cycles(M1, 1024, 4, transcendental=True) == 4 * 32 + 5
    assert cost.vector_cycles(M1, 0, 4) == 5
    assert cost.vector_cycles(M1, 33, 4) == 2 + 5


def test_vector_rules():
    f = [Tile(0, "f32", (1024,)), Tile(4096, "f32", (1024,)), Tile(8192, "f32", (1024,))]
    assert one("v.add", f, (0, 1, 2)) == 37
    assert one("v.exp", f, (0, 1)) == 133
    assert one("v.div", f, (0, 1, 2)) == 133  # IEEE division is on the transcendental path
    mixed = [Tile(0, "bf16", (1024,)), Tile(4096, "f32", (1024,))]
    assert one("v.fcvt", mixed, (0, 1), ("rtne",)) == 37  # the wider type sets the lanes
    red = [Tile(0, "f32", (1,)), Tile(64, "f32", (1024,))]
    assert one("v.reduce", red, (0, 1, 0), ("add",)) == 37 + 5  # + log2(32) lane tree
    assert one("v.extract", red, (0, 1, 0)) == 1 + 5


def test_scalar_branch_sync_rules():
    assert one("s.li", [], (0, 0)) == 1
    assert one("jmp", [], (0,)) == 1
    assert one("dma.wait", [], (0,)) == 1
    assert one("barrier", [], ()) == 1


def test_dma_issue_rules():
    t = [Tile(0, "f32", (64, 128))]
    ops = (0, 0, 0, (1, 2), (3, 4), (5, 6), 0)
    assert one("dma.load", t, ops) == 50 + 2 * 64  # static estimate: one run per row
    prog = Program("p", [Inst("dma.load", (), ops)], t, consts=[0])
    runs = np.array([1, 4])
    got = cost.inst_cost(M1, prog.instrs[0], prog, runs=runs)
    assert list(got) == [52, 58]
    g = [Tile(0, "f32", (100,)), Tile(512, "i64", (100,)), Tile(2048, "i1", (100,))]
    assert one("dma.gather", g, (0, 0, 1, 2, 0)) == 50 + 100
    prog = Program("p", [Inst("dma.gather", (), (0, 0, 1, 2, 0))], g, consts=[0])
    assert cost.inst_cost(M1, prog.instrs[0], prog, elements=7) == 57
    assert one("atom.rmw", g + [Tile(4096, "f32", (100,))], (0, 1, 3, 2), ("add", "relaxed")) == 150


def test_dma_stages_issue_the_next_descriptor_while_the_previous_one_moves():
    # per core: the issue stage free at 100 / 100, the transfer stage busy until 1000 / 120, inputs ready at 0 / 300
    start, issued, moving = cost.dma_stages(np.array([100.0, 100.0]), np.array([1000.0, 120.0]), np.array([0, 300]), 52)
    assert list(start) == [100, 300] and list(issued) == [152, 352]
    assert list(moving) == [1000, 352]  # core 0: its issue hid under the transfer before it
    assert cost.dma_engine_bound(np.array([10.0, 500.0]), np.array([400.0, 20.0])).tolist() == [400, 500]


def test_latencies():
    assert cost.dma_latency(M1, 0) == 50 + 400
    assert cost.dma_latency(M1, 1) == 50 + 400 + 200
    assert cost.dma_latency(M1, 2) == 50 + 400 + 400
    assert cost.flight_latency(M1, 0, chip_hops=1) == 400 + 700 + 100
    assert cost.dma_cycles(M1, 64 * 1000, hops=0) == pytest.approx(52 + 1000 + 400)


def test_topology_plate1():
    topo = cost.topology(M1)
    assert topo.kinds.count("hbm") == 4 and topo.kinds.count("die_link") == 8
    assert topo.capacity[0] == pytest.approx(64 * 0.9)
    assert topo.die_hops[0, 3] == 2 and topo.die_hops[0, 1] == 1 and topo.die_hops[2, 2] == 0
    assert topo.latency[0, 3] == cost.flight_latency(M1, 2)
    path = [topo.names[r] for r in topo.links[0, 1] if r >= 0]
    assert path == ["die[d0->d1]"]


def test_topology_multichip():
    m = get_machine("plate4")
    topo = cost.topology(m)
    assert topo.kinds.count("hbm") == 16 and topo.kinds.count("chip_link") == 8
    # domain 0 of chip 0 to domain 0 of chip 2: two chip hops on the ring
    assert topo.chip_hops[0, 8] == 2 and topo.die_hops[0, 8] == 0
    # domain 3 of chip 0 -> domain 3 of chip 1: via the link engine in domain 2 on both ends
    assert topo.chip_hops[3, 7] == 1 and topo.die_hops[3, 7] == 2
    assert topo.latency[3, 7] == cost.flight_latency(m, 2, 1)


def test_level0_bound_terms():
    D = M1.total_domains
    read = np.zeros((D, D))
    read[0, 0] = 57.6 * 1000  # local: 1000 cycles of one domain's HBM
    b = cost.level0_bound(M1, read_bytes=read)
    assert b.binding == "hbm" and b.cycles == pytest.approx(1000)
    read[0, 3] = 32 * 3000  # remote, two hops: each link carries it
    b = cost.level0_bound(M1, read_bytes=read, compute_cycles=[10, 2500])
    assert b.binding == "die_link" and b.cycles == pytest.approx(3000)
    assert b.terms["compute"] == 2500 and b.where["compute"] == "core 1"
    write = np.zeros((D, D))
    write[1, 0] = 32 * 5000  # writes go core -> home: the link d1->d0
    b = cost.level0_bound(M1, write_bytes=write)
    assert b.where["die_link"] == "die[d1->d0]" and b.cycles == pytest.approx(5000)
    b = cost.level0_bound(M1, flops=2 * 1024 * 32 * 1e6)
    assert b.binding == "flops" and b.cycles == pytest.approx(1e6)
