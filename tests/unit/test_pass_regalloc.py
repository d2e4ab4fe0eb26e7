"""regalloc: liveness over pseudo-instructions (half-steps: 2*pc reads, 2*pc+1 writes; loops keep
values live around the back edge) and linear-scan allocation, with a clear error when the
registers run out."""

from __future__ import annotations

import pytest

from triton_plate_backend.errors import CompileError
from triton_plate_backend.machine import get_machine
from triton_plate_backend.passes import emitter, regalloc
from triton_plate_backend.passes.emitter import Imm, Label, PInst, Token, VReg


def li(d, v=0):
    return PInst("s.li", operands=(d, Imm(v)))


def add(d, a, b):
    return PInst("s.add", ("i32",), (d, a, b))


def test_straight_line_intervals_in_half_steps():
    a, b, c, d = VReg("a"), VReg("b"), VReg("c"), VReg("d")
    code = [li(a), li(b), add(c, a, b), add(d, c, c), PInst("halt")]
    iv = regalloc.live_intervals(code)
    # written by pc at 2*pc+1, last read by pc at 2*pc; d is written and never read
    assert iv == {a: (1, 4), b: (3, 4), c: (5, 6), d: (7, 7)}


def test_a_result_may_take_the_register_its_instruction_last_reads():
    a, b, c, d = VReg("a"), VReg("b"), VReg("c"), VReg("d")
    code = [li(a), li(b), add(c, a, b), add(d, c, c), PInst("halt")]
    regs = regalloc.allocate(regalloc.live_intervals(code), VReg, 2, "scalar registers", "k")
    assert regs[a] != regs[b]
    assert regs[c] == regs[a] == 0 and regs[d] == 0  # a and b die where c is written; c where d is


def test_a_value_read_in_a_loop_stays_live_around_the_back_edge():
    n, k, acc, t, out = VReg("n"), VReg("k"), VReg("acc"), VReg("t"), VReg("out")
    top = Label("top")
    code = [
        li(n, 4),  # 0: trip count
        li(k, 3),  # 1: read only by the loop's first instruction
        li(acc),  # 2
        PInst(".label", operands=(top,)),  # 3
        add(t, acc, k),  # 4: k's last read in program order
        li(VReg("tmp"), 1),  # 5: defined after k's last read, inside the loop
        add(acc, t, t),  # 6
        PInst("loop", operands=(n, top)),  # 7
        add(out, acc, acc),  # 8
        PInst("halt"),  # 9
    ]
    iv = regalloc.live_intervals(code)
    assert iv[k] == (3, 16)  # through the loop instruction: the next trip reads it again
    assert iv[acc][1] >= 16 and iv[n][1] >= 14
    tmp = code[5].operands[0]
    regs = regalloc.allocate(iv, VReg, 8, "scalar registers", "k")
    assert regs[tmp] != regs[k]  # a straight-line hull would have let tmp take k's register
    live_together = [r for r in iv if r is not out]
    assert len({regs[r] for r in live_together}) == len(live_together)


def test_branch_targets_and_fallthrough_both_carry_liveness():
    c, x, y = VReg("c"), VReg("x"), VReg("y")
    skip = Label("skip")
    code = [
        li(c),  # 0
        li(x, 7),  # 1
        PInst("bz", operands=(c, skip)),  # 2
        li(y, 1),  # 3
        PInst(".label", operands=(skip,)),  # 4
        add(y, x, x),  # 5: x read after the join, whichever way the branch went
        PInst("halt"),  # 6
    ]
    iv = regalloc.live_intervals(code)
    assert iv[x] == (3, 10) and iv[c] == (1, 4)


def test_running_out_of_registers_is_a_clear_error():
    regs = [VReg(f"r{i}") for i in range(5)]
    code = [li(r) for r in regs] + [add(regs[0], regs[i], regs[i]) for i in range(1, 5)] + [PInst("halt")]
    iv = regalloc.live_intervals(code)
    assert len(regalloc.allocate(iv, VReg, 5, "scalar registers", "k")) == 5
    with pytest.raises(CompileError) as e:
        regalloc.allocate(iv, VReg, 4, "scalar registers", "my_kernel")
    msg = str(e.value)
    assert "kernel my_kernel" in msg and "more than 4 scalar registers live at once" in msg
    assert "reduce the number of live scalars" in msg


def test_tokens_and_buffers_get_intervals_too():
    m = emitter.Emitter(get_machine("plate-mini"))
    a = m.buffer("f32", (16,), "a")
    base = VReg("base")
    m.emit("s.li", base, Imm(0))
    tok = Token()
    m.emit("dma.load", tok, a, base, (), (), (), Imm(0))
    out = m.buffer("f32", (16,), "out")
    m.emit("v.add", out, a, a)  # waits for the load first
    m.emit("halt")
    iv = regalloc.live_intervals(m.code)
    pcs = {i.mnemonic: pc for pc, i in enumerate(m.code)}
    assert iv[tok] == (2 * pcs["dma.load"] + 1, 2 * pcs["dma.wait"])
    assert iv[a.buffer] == (0, 2 * pcs["v.add"])  # from its .def (buffers are killed at 2*pc)
    assert regalloc.allocate(iv, Token, 1, "DMA tokens", "k") == {tok: 0}
