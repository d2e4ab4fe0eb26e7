"""licm and scalar_cse on small virtual code: what leaves a loop (pure scalar instructions whose
operands do not change in it), what stays (memory, loop-dependent values, registers written twice,
loops entered from the side), nested loops and ifs inside loops; and which recomputed values
scalar_cse drops. The programs are also run on the simulator before and after: same results."""

from __future__ import annotations

import pytest

from triton_plate_backend.errors import RegisterOverflow
from triton_plate_backend.isa.program import Arg
from triton_plate_backend.machine import get_machine
from triton_plate_backend.passes import codegen, licm, scalar_cse
from triton_plate_backend.passes.emitter import Buffer, Emitter, Imm, Label, PInst, Str, Token, VReg, whole
from triton_plate_backend.passes.finalize import finalize
from triton_plate_backend.sim.executor import execute
from triton_plate_backend.sim.memory import DeviceMemory


def li(d, v):
    return PInst("s.li", operands=(d, Imm(v)))


def arg(d, i):
    return PInst("s.arg", operands=(d, Imm(i)))


def op(name, d, a, b, t="i64"):
    return PInst(f"s.{name}", (t,), (d, a, b))


def label(lab):
    return PInst(".label", operands=(lab,))


def counted_loop(body, n_reg, iv, top, end):
    """iv = 0; if iv < n: do { body; iv += 1 } while iv < n"""
    one, c, c2 = VReg("one"), VReg("c"), VReg("c2")
    return [
        li(iv, 0),
        PInst("s.cmpi", ("slt", "i64"), (c, iv, n_reg)),
        PInst("bz", (), (c, end)),
        label(top),
        *body,
        li(one, 1),
        op("add", iv, iv, one),
        PInst("s.cmpi", ("slt", "i64"), (c2, iv, n_reg)),
        PInst("bnz", (), (c2, top)),
        label(end),
    ]


def where(code, inst):
    return next(i for i, x in enumerate(code) if x is inst)


def test_an_invariant_computation_leaves_the_loop_before_its_label():
    n, iv, k, t, u, acc = VReg("n"), VReg("iv"), VReg("k"), VReg("t"), VReg("u"), VReg("acc")
    top, end = Label("top"), Label("end")
    mul_k = op("mul", t, n, k)
    add_iv = op("add", u, t, iv)  # reads the counter: stays
    code = [arg(n, 0), li(acc, 0)] + counted_loop([li(k, 4), mul_k, add_iv, op("add", acc, acc, u)], n, iv, top, end)
    code.append(PInst("halt"))
    out = licm.run(code)
    head = where(out, next(x for x in out if x.mnemonic == ".label" and x.operands[0] == top))
    assert where(out, mul_k) < head and where(out, out[head - 2]) < head  # s.li k and the multiply
    assert [x.mnemonic for x in out[head - 3 : head]] == ["s.li", "s.mul", "s.li"]  # k, t, the step's 1
    assert where(out, add_iv) > head
    assert sorted(map(id, out)) == sorted(map(id, code))  # moved, nothing added or lost


def test_memory_and_loop_dependent_and_twice_written_stay():
    n, iv, base, a, b, twice = VReg("n"), VReg("iv"), VReg("base"), VReg("a"), VReg("b"), VReg("twice")
    top, end = Label("top"), Label("end")
    buf = Buffer(64)
    tile = whole(buf, "i64", (1,))
    extract = PInst("v.extract", (), (a, tile, Imm(0)))  # reads SRAM: not a pure scalar instruction
    on_a = op("add", b, a, base)  # reads what the extract wrote inside the loop
    twice_1, twice_2 = li(twice, 1), li(twice, 2)  # one register written twice: neither moves
    store = PInst("dma.store", (), (Token(), tile, base, (VReg(),), (VReg(),), (VReg(),)))
    body = [extract, on_a, twice_1, twice_2, store]
    code = [arg(n, 0), arg(base, 1)] + counted_loop(body, n, iv, top, end) + [PInst("halt")]
    out = licm.run(code)
    head = next(i for i, x in enumerate(out) if x.mnemonic == ".label" and x.operands[0] == top)
    for inst in body:
        assert where(out, inst) > head, inst


def test_nested_loops_move_each_value_as_far_out_as_it_can_go():
    n, i, j = VReg("n"), VReg("i"), VReg("j")
    outer_top, outer_end, inner_top, inner_end = Label("ot"), Label("oe"), Label("it"), Label("ie")
    k, both, per_i = VReg("k"), VReg("both"), VReg("per_i")
    fixed = op("mul", both, n, k)  # invariant in both loops
    outer_only = op("mul", per_i, i, k)  # changes with the outer counter only
    inner = counted_loop([li(k, 3), fixed, outer_only], n, j, inner_top, inner_end)
    code = [arg(n, 0)] + counted_loop(inner, n, i, outer_top, outer_end) + [PInst("halt")]
    out = licm.run(code)
    heads = {x.operands[0]: p for p, x in enumerate(out) if x.mnemonic == ".label"}
    assert where(out, fixed) < heads[outer_top]
    assert heads[outer_top] < where(out, outer_only) < heads[inner_top]


def test_a_pure_value_inside_an_if_leaves_the_loop_but_an_if_result_stays():
    n, iv, flag, k, t, res = VReg("n"), VReg("iv"), VReg("flag"), VReg("k"), VReg("t"), VReg("res")
    top, end, other, endif = Label("top"), Label("end"), Label("else"), Label("endif")
    in_then = op("mul", t, n, k)
    res_then, res_else = PInst("s.mov", (), (res, t)), PInst("s.mov", (), (res, n))  # the if's result home
    body = [
        op("and", flag, iv, iv),
        PInst("bz", (), (flag, other)),
        li(k, 7),
        in_then,
        res_then,
        PInst("jmp", (), (endif,)),
        label(other),
        res_else,
        label(endif),
    ]
    code = [arg(n, 0)] + counted_loop(body, n, iv, top, end) + [PInst("halt")]
    out = licm.run(code)
    head = next(p for p, x in enumerate(out) if x.mnemonic == ".label" and x.operands[0] == top)
    assert where(out, in_then) < head
    assert where(out, res_then) > head and where(out, res_else) > head


def test_a_loop_entered_from_the_side_is_left_alone():
    n, iv, k, t, c = VReg("n"), VReg("iv"), VReg("k"), VReg("t"), VReg("c")
    top, mid, end = Label("top"), Label("mid"), Label("end")
    code = [
        arg(n, 0),
        li(iv, 0),
        PInst("jmp", (), (mid,)),  # into the middle of the loop
        label(top),
        li(k, 5),
        op("mul", t, n, k),
        label(mid),
        op("add", iv, iv, n),
        PInst("s.cmpi", ("slt", "i64"), (c, iv, n)),
        PInst("bnz", (), (c, top)),
        label(end),
        PInst("halt"),
    ]
    assert licm.run(list(code)) == code


def test_cse_drops_a_recomputed_value_and_renames_its_readers():
    n, a, b, c, d, e = VReg("n"), VReg("a"), VReg("b"), VReg("c"), VReg("d"), VReg("e")
    k1, k2 = VReg("k1"), VReg("k2")
    code = [
        arg(n, 0),
        li(k1, 1024),
        op("mul", a, n, k1),
        li(k2, 1024),  # the same constant again
        op("mul", b, k2, n),  # the same product, operands swapped
        op("add", c, a, b),
        PInst("halt"),
    ]
    out = scalar_cse.run(code)
    assert [x.mnemonic for x in out] == ["s.arg", "s.li", "s.mul", "s.add", "halt"]
    assert out[3].operands == (c, a, a)
    del d, e


def test_cse_keeps_values_apart_across_labels_writes_and_float_signs():
    n, x, y, z, w, f0, f1 = (VReg(h) for h in ("n", "x", "y", "z", "w", "f0", "f1"))
    lab = Label("join")
    code = [
        arg(n, 0),
        op("mul", x, n, n),
        label(lab),  # another path may arrive here: x is not known to hold n*n
        op("mul", y, n, n),
        li(n, 3),  # n written again (n is written twice: arg and li)
        op("mul", z, n, n),
        op("mul", w, n, n),  # same as z
        li(f0, 0.0),
        li(f1, -0.0),  # a different constant
        op("sub", VReg(), x, y),
        PInst("halt"),
    ]
    out = scalar_cse.run(code)
    kept = [x.operands[0] for x in out if x.mnemonic.startswith("s.")]
    assert x in kept and y in kept and z in kept and w not in kept
    assert f0 in kept and f1 in kept


MACHINE = get_machine("plate-mini")


def _run(code, args):
    """(printed lines, instructions executed) of the code run as one program with these i64 arguments."""
    em = Emitter(MACHINE)
    em.code = list(code)
    program, _ = finalize(em, "k", [Arg(f"a{i}", "i64") for i in range(len(args))], MACHINE)
    lines = []
    trace = execute(program, 1, list(args), DeviceMemory(MACHINE), MACHINE, printer=lines.append)
    return lines, sum(len(e.programs) for e in trace.entries)


def test_moved_and_merged_code_prints_the_same_values_with_fewer_instructions():
    n, m, i, j, k, k2, a, b, flag, acc = (VReg(h) for h in ("n", "m", "i", "j", "k", "k2", "a", "b", "f", "acc"))
    ot, oe, it, ie, other, endif = (Label(h) for h in ("ot", "oe", "it", "ie", "else", "endif"))
    three = VReg("three")
    inner = counted_loop(
        [
            li(k, 1024),
            op("mul", a, n, k),  # invariant in both loops
            li(k2, 1024),
            op("mul", b, k2, n),  # the same value again
            op("add", acc, acc, a),
            op("add", acc, acc, b),
            op("and", flag, j, j),
            PInst("bz", (), (flag, other)),
            li(three, 3),
            op("mul", VReg("dead"), i, three),
            op("add", acc, acc, i),  # reads the outer counter
            label(other),
            label(endif),
        ],
        m,
        j,
        it,
        ie,
    )
    code = [arg(n, 0), arg(m, 1), li(acc, 0)] + counted_loop(inner, n, i, ot, oe)
    code += [PInst("dbg.printr", (), (Str("acc"), acc)), PInst("halt")]
    before, steps_before = _run(code, [5, 7])
    after, steps_after = _run(scalar_cse.run(licm.run(list(code))), [5, 7])
    assert before == after and before
    assert steps_after < steps_before * 0.75


def test_code_that_runs_out_of_registers_once_moved_stays_as_emitted():
    """Seventy distinct constants, each read once per trip: as emitted each lives one instruction;
    moved in front of the loop all seventy live across it, more than the machine's 64 registers."""
    n, iv, acc = VReg("n"), VReg("iv"), VReg("acc")
    top, end = Label("top"), Label("end")
    body = []
    for v in range(70):
        k = VReg()
        body += [li(k, 1000 + v), op("add", acc, acc, k)]
    code = [arg(n, 0), li(acc, 0)] + counted_loop(body, n, iv, top, end)
    code += [PInst("dbg.printr", (), (Str("acc"), acc)), PInst("halt")]
    em = Emitter(MACHINE)
    em.code = scalar_cse.run(licm.run(list(code)))
    with pytest.raises(RegisterOverflow):
        finalize(em, "k", [Arg("a0", "i64")], MACHINE)
    em.code = list(code)
    program, _ = codegen._finalize(em, "k", [Arg("a0", "i64")], MACHINE)
    assert len(program.instrs) == len(code) - 2  # the two labels: every instruction as emitted
    lines = []
    execute(program, 1, [3], DeviceMemory(MACHINE), MACHINE, printer=lines.append)
    assert lines and str(3 * sum(1000 + v for v in range(70))) in lines[0]
