"""spill: when more scalars are live than the core has registers, some live in 8-byte SRAM slots,
stored after each write and loaded before each read; the program computes the same values, a
hardware loop's counter stays in a register, and a single instruction that needs more registers
than the core has is still a clear error."""

from __future__ import annotations

import pytest

from triton_plate_backend.errors import RegisterOverflow
from triton_plate_backend.isa.program import Arg
from triton_plate_backend.machine import get_machine
from triton_plate_backend.passes import regalloc, spill
from triton_plate_backend.passes.emitter import Emitter, Imm, Label, PInst, Str, Token, VReg
from triton_plate_backend.passes.finalize import finalize
from triton_plate_backend.sim.executor import execute
from triton_plate_backend.sim.memory import DeviceMemory

MACHINE = get_machine("plate-mini")


def li(d, v):
    return PInst("s.li", operands=(d, Imm(v)))


def add(d, a, b):
    return PInst("s.add", ("i64",), (d, a, b))


def hundred_live_values(trips_arg=0):
    """100 values made before a hardware loop and all read on every trip: 100 live at once."""
    n, acc, top = VReg("n"), VReg("acc"), Label("top")
    values = [VReg(f"k{v}") for v in range(100)]
    code = [PInst("s.arg", operands=(n, Imm(trips_arg))), li(acc, 0)]
    code += [li(k, 1000 + v) for v, k in enumerate(values)]
    code.append(PInst(".label", operands=(top,)))
    code += [add(acc, acc, k) for k in values]
    code += [PInst("loop", operands=(n, top)), PInst("dbg.printr", (), (Str("acc"), acc)), PInst("halt")]
    return code, n


def test_a_hundred_live_scalars_compile_and_compute_the_same_sum():
    code, n = hundred_live_values()
    with pytest.raises(RegisterOverflow):
        regalloc.allocate(regalloc.live_intervals(code), VReg, 64, "scalar registers", "k")
    em = Emitter(MACHINE)
    em.code = list(code)
    program, buffers = finalize(em, "k", [Arg("n", "i64")], MACHINE, spill_scalars=True)
    stores = [i for i in program.instrs if i.mnemonic == "v.splat"]
    loads = [i for i in program.instrs if i.mnemonic == "v.extract"]
    assert 36 <= len(stores) <= 100 and len(loads) == len(stores)  # at least the 36 over 64; each read once a trip
    assert buffers == len(stores) and program.sram_bytes >= 8 * len(stores)
    assert all(program.tiles[i.operands[0]].dtype == "i64" for i in stores)
    lines = []
    execute(program, 1, [3], DeviceMemory(MACHINE), MACHINE, printer=lines.append)
    assert lines and str(3 * sum(1000 + v for v in range(100))) in lines[0]


def test_the_loop_counter_stays_in_a_register():
    code, n = hundred_live_values()
    out, _, regs = spill.allocate(list(code), 64, "k", [])
    loop = next(i for i in out if i.mnemonic == "loop")
    assert loop.operands[0] is n and n in regs
    assert max(regs.values()) < 64


def test_one_instruction_reading_more_registers_than_the_core_has_is_a_clear_error():
    em = Emitter(MACHINE)
    tile = em.buffer("f32", (4, 4, 4), "t")
    regs = [VReg(f"s{i}") for i in range(7)]
    code = [li(r, 1) for r in regs]
    code.append(
        PInst("dma.load", (), (Token(), tile, regs[0], tuple(regs[1:4]), tuple(regs[4:7]), tuple(regs[4:7]), Imm(0)))
    )
    code.append(PInst("halt"))
    with pytest.raises(RegisterOverflow) as e:
        spill.allocate(code, 4, "my_kernel", [])
    msg = str(e.value)
    assert "kernel my_kernel" in msg and "more than 4 scalar registers" in msg and "at dma.load" in msg
    assert "even with every other scalar kept in SRAM" in msg
