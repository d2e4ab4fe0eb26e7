"""The address-only run's slice (sim/estimate.py ``address_slice``) follows tile lifetimes: a write
reaches a read only along the control flow and only where no whole write of the same SRAM bytes
came in between (sim/sram_reach.py), so an accumulator whose SRAM a later address tile reuses is
not multiplied in an address-only run, and the run still records the functional trace."""

from __future__ import annotations

import numpy as np

from triton_plate_backend.isa.asm import assemble
from triton_plate_backend.sim.estimate import _overlap_slice, address_slice, address_trace
from triton_plate_backend.sim.executor import execute
from triton_plate_backend.sim.memory import DeviceMemory
from triton_plate_backend.sim.sram_reach import reaching_writes

HEAD = """
.kernel reuse
.arg a ptr
.arg b ptr
.arg c ptr
.arg o ptr
.arg trips i32
.tile A f32[32,32] @0x0
.tile B f32[32,32] @0x1000
.tile C f32[32,32] @0x2000
.tile ADDR i64[32] @0x2000
.tile STEP i64[32] @0x2100
.tile M i1[32] @0x2200
.tile V f32[32] @0x3000
    s.pid.x r0
    s.li r10, 32
    s.li r11, 1
    s.li r12, 0
    s.arg r1, 0
    s.arg r2, 1
    s.arg r3, 2
    s.arg r4, 4
    s.li r5, 128
    s.mul.i64 r6, r0, r5
    s.arg r7, 3
    s.add.i64 r7, r7, r6          ; &o[32 * pid]
    s.li r8, 4
"""

ADDRESSES = """
    v.iota ADDR, 0
    v.splat STEP, r8
    v.mul ADDR, ADDR, STEP
    v.splat STEP, r7
    v.add ADDR, ADDR, STEP        ; byte addresses of o[32 * pid + i]
    v.fill M, 1
    v.fill V, 1.0
"""

SCATTER = """
    dma.scatter q3, V, ADDR, M
    dma.wait q3
"""

MMA = """
    dma.load q0, A, r1, [r10, r11], [r12, r12], [r10, r10], 0.0
    dma.load q1, B, r2, [r10, r11], [r12, r12], [r10, r10], 0.0
    dma.wait q0
    dma.wait q1
    m.mma.ieee C, A, B
"""

# the accumulator dies with its store; the scatter's addresses and mask are then written over its bytes
STORE = """
    loop r4, kloop
    dma.store q2, C, r3, [r10, r11], [r12, r12], [r10, r10]
    dma.wait q2
"""
AFTER = HEAD + "    v.fill C, 0.0\nkloop:" + MMA + STORE + ADDRESSES + SCATTER + "    halt\n"

# the addresses are written before the loop and read in it after the accumulator's writes of the trip
# before: the back edge brings the m.mma to the scatter's read
BACK_EDGE = HEAD + ADDRESSES + "kloop:" + SCATTER + MMA + "    loop r4, kloop\n    halt\n"


def _mma_pcs(program) -> set[int]:
    return {pc for pc, i in enumerate(program.instrs) if i.mnemonic == "m.mma"}


def _seeds(program) -> list[int]:
    return [program.tiles.index(t) for t in program.tiles if t.dtype in ("i64", "i1")]


def test_an_accumulator_dead_before_its_bytes_hold_addresses_is_left_out():
    program = assemble(AFTER)
    mma = _mma_pcs(program)
    before = _overlap_slice(program, _seeds(program), set())  # the flow-insensitive slice
    assert mma <= before
    run = address_slice(program)
    assert not mma & run
    names = {program.instrs[pc].mnemonic for pc in run}
    assert {"v.iota", "v.splat", "v.mul", "v.add", "v.fill"} <= names


def test_an_address_read_the_back_edge_reaches_keeps_the_accumulator():
    program = assemble(BACK_EDGE)
    assert _mma_pcs(program) <= address_slice(program)


def test_a_strided_write_kills_nothing_and_a_bad_branch_target_falls_back():
    program = assemble(AFTER)
    reads = reaching_writes(program)
    scatter = next(pc for pc, i in enumerate(program.instrs) if i.mnemonic == "dma.scatter")
    addr = program.tiles.index(next(t for t in program.tiles if t.dtype == "i64" and t.shape == (32,)))
    seen = reads[(scatter, addr)]
    assert {pc for pc in range(len(program.instrs)) if seen >> pc & 1} == {
        pc for pc, i in enumerate(program.instrs) if i.mnemonic == "v.add"
    }
    from triton_plate_backend.isa.program import Inst, Program, Tile

    gap = Program(
        "gap",
        [Inst("v.fill", (), (0, 0)), Inst("v.fill", (), (1, 0)), Inst("v.copy", (), (2, 0))],
        [Tile(0, "f32", (4,)), Tile(0, "f32", (2,), (2,)), Tile(64, "f32", (4,))],
        consts=[0.0],
    )
    assert reaching_writes(gap)[(2, 0)] == 0b11  # the strided fill leaves the first fill's bytes between its own
    bad = Program("bad", [Inst("jmp", (), (7,))], [])
    assert reaching_writes(bad) is None


def test_the_address_only_run_of_the_reused_accumulator_records_the_functional_trace():
    program = assemble(AFTER)
    mem = DeviceMemory("plate-mini")
    rng = np.random.default_rng(0)
    a, b, c, o = (mem.alloc(4 * 1024, label=n) for n in "abco")
    mem.write_bytes(a.base, rng.standard_normal(1024).astype(np.float32).tobytes())
    mem.write_bytes(b.base, rng.standard_normal(1024).astype(np.float32).tobytes())
    args = [a.base, b.base, c.base, o.base, 3]
    trace = address_trace(program, (2,), args, mem)
    assert not o.view.any()  # the address-only run writes no memory
    functional = execute(program, (2,), args, mem)
    assert trace.digest() == functional.digest()
    assert (o.view.view(np.float32)[:64] == 1.0).all()  # the scatter's addresses, as the run computed them
