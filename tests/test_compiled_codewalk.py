"""The walks over the emitted code compiled in passes/_codewalk (passes/csrc/codewalk.cpp, built by setup.py)
against their Python references: licm (`licm.run_py`), scalar_cse (`scalar_cse.run_py`), regalloc's liveness
and linear scan (`regalloc.live_intervals_py`, `allocate_py`), finalize's operand mapping (`finalize._map_code`).
On every code list the TTIR corpus' kernels finalize, on two machines: the same code out of licm and scalar_cse
(the same instruction objects where they keep one), the same intervals in the same dict order, the same
registers and tokens in the same order (or an overflow where the Python scan raises one); the same Program with
all of them on and off; and on hand-made code the corpus does not make (a label block falling into a label, a
branch to a label that is not there, no code, nested and entered loops)."""

from __future__ import annotations

import pytest
import ttir_fixtures

from triton_plate_backend.errors import CompileError, RegisterOverflow
from triton_plate_backend.isa.encoding import float_bits
from triton_plate_backend.machine import get_machine
from triton_plate_backend.passes import finalize, licm, regalloc, scalar_cse, scalar_flow
from triton_plate_backend.passes.emitter import Buffer, Emitter, Imm, Label, PInst, Str, Token, View, VReg
from triton_plate_backend.passes.pipeline import run_pipeline
from triton_plate_backend.ttir.parser import parse

pytestmark = pytest.mark.skipif(regalloc._codewalk is None, reason="passes._codewalk is not built (setup.py build_ext)")

KERNELS = ttir_fixtures.KERNELS


def set_fields(obj) -> dict:
    """An object's attributes that are set (its slots' and its __dict__'s), in their order: its vars()."""
    slots = [n for c in type(obj).__mro__ for n in getattr(c, "__slots__", ()) if hasattr(obj, n)]
    return {**{n: getattr(obj, n) for n in slots}, **getattr(obj, "__dict__", {})}


def compiled_intervals(code):
    return regalloc._codewalk.live_intervals(code, regalloc._DEFS, regalloc._defs, VReg, Token, View, Buffer, Label)


def python_allocation(intervals, kind, count):
    try:
        return regalloc.allocate_py(intervals, kind, count, "registers", "k")
    except RegisterOverflow:
        return None


def check_code(code) -> dict:
    assert list(scalar_flow.writes(code).items()) == list(scalar_flow.writes_py(code).items())
    want = regalloc.live_intervals_py(code)
    got = compiled_intervals(code)
    assert list(got.items()) == list(want.items())
    for kind in (VReg, Token):
        for count in (2, 4, 8, 64):
            mine, ref = regalloc._codewalk.allocate(want, kind, count), python_allocation(want, kind, count)
            assert (mine is None) == (ref is None)
            if ref is not None:
                assert list(mine.items()) == list(ref.items())
    return want


def check_cse(code, count=None, compiled=None):
    want = scalar_cse.run_py(code, count)
    got = (compiled or scalar_cse.run)(code, count)
    assert got == want
    kept = {id(inst) for inst in code}  # an instruction kept as it was is the same object, one renamed a new one
    assert [id(a) in kept for a in got] == [id(b) in kept for b in want]
    assert [a is b for a, b in zip(got, want) if id(b) in kept] == [True] * sum(id(b) in kept for b in want)
    return got


def check_licm(code, count=None, compiled=None):
    want = licm.run_py(code, count)
    got = (compiled or licm.run)(code, count)
    assert (got is code) == (want is code)  # the list given back when nothing moves
    assert [id(a) for a in got] == [id(b) for b in want]
    return got


@pytest.mark.parametrize("machine", ["plate-mini", "plate1"])
@pytest.mark.parametrize("kernel", KERNELS)
def test_the_compiled_walks_give_the_python_walks_dicts_on_the_corpus(kernel, machine, monkeypatch):
    seen = []

    def both(code):
        seen.append(len(code))
        return check_code(code)

    def cse_both(code, count=None):
        return check_cse(code, count, compiled_cse)

    def licm_both(code, count=None):
        return check_licm(code, count, compiled_licm)

    compiled_cse, compiled_licm = scalar_cse.run, licm.run
    monkeypatch.setattr(regalloc, "live_intervals", both)
    monkeypatch.setattr(scalar_cse, "run", cse_both)
    monkeypatch.setattr(licm, "run", licm_both)
    try:
        run_pipeline(parse(ttir_fixtures.fixture_text(kernel), kernel), None, get_machine(machine))
    except CompileError:
        return  # rejected (math_fns' inline asm): what code reached finalize was checked
    assert seen and max(seen) > 10


@pytest.mark.parametrize("kernel", KERNELS)
def test_the_finalized_program_is_the_same_with_and_without_the_extension(kernel, monkeypatch):
    """Every walk at once, operand mapping (`finalize._map_code`) included: the same Program, Inst by Inst."""
    text = ttir_fixtures.fixture_text(kernel)

    def lowered():
        try:
            return run_pipeline(parse(text, kernel), None, get_machine("plate1"))[1]
        except CompileError as e:
            return str(e)

    with_c = lowered()
    for module in (regalloc, scalar_cse, licm, finalize, scalar_flow):
        monkeypatch.setattr(module, "_codewalk", None)
    without = lowered()
    if isinstance(without, str):
        assert with_c == without
        return
    assert [set_fields(i) for i in with_c.instrs] == [set_fields(i) for i in without.instrs]
    assert [list(set_fields(i)) for i in with_c.instrs] == [list(set_fields(i)) for i in without.instrs]
    assert all(type(i) is type(j) for i, j in zip(with_c.instrs, without.instrs))
    for field in ("tiles", "locs", "labels", "sram_bytes", "args"):
        assert getattr(with_c, field) == getattr(without, field), field
    assert [bits(c) for c in with_c.consts] == [bits(c) for c in without.consts]  # (a NaN is not == itself)


def bits(c):
    return (type(c), float_bits(c) if isinstance(c, float) else c)


def test_hand_made_code_the_corpus_does_not_make():
    a, b, c = VReg("a"), VReg("b"), VReg("c")
    t = Token()
    buf = Buffer(256)
    top, end = Label("top"), Label("end")
    code = [
        PInst("s.li", (), (a, Imm(0))),
        PInst(".label", (), (top,)),
        PInst(".label", (), (Label("again"),)),  # a block of one label falls into the next
        PInst(".def", (), (buf,)),
        PInst("s.add", ("i32",), (b, a, a)),
        PInst("loop", (), (a, top)),
        PInst(".use", (), (buf, b)),
        PInst("bnz", (), (b, end)),
        PInst("s.mov", (), (c, b)),
        PInst("jmp", (), (top,)),
        PInst(".label", (), (end,)),
        PInst("dma.wait", (), (t,), extra_uses=(buf,)),
        PInst("halt"),
    ]
    got = check_code(code)
    assert got[buf] == (6, 22)  # the .def kills at 2*pc (3), the wait (11) reads it
    check_code([PInst("s.li", (), (a, Imm(0))), PInst("jmp", (), (top,)), PInst(".label", (), (top,))])
    assert compiled_intervals([]) == regalloc.live_intervals_py([]) == {}
    assert scalar_cse.run([]) == scalar_cse.run_py([]) == []


def test_hand_made_code_for_scalar_cse():
    a, b, c, d, e, f, g, h, k = (VReg(x) for x in "abcdefghk")
    x = [VReg(f"x{i}") for i in range(6)]
    code = [
        PInst("s.li", (), (a, Imm(3))),
        PInst("s.li", (), (b, Imm(3))),  # a's value again: dropped, readers of b read a
        PInst("s.li", (), (x[0], Imm(0.0))),
        PInst("s.li", (), (x[1], Imm(-0.0))),  # not 0.0's bits: kept
        PInst("s.li", (), (x[2], Imm(True))),  # int(True) == 1 == Imm(1)
        PInst("s.li", (), (x[3], Imm(1))),  # dropped too: b, x3, d, g and k go
        PInst("s.add", ("i32",), (c, a, x[3])),
        PInst("s.add", ("i32",), (d, x[2], b)),  # commutative: the same value as c
        PInst("s.add", ("f32",), (e, x[0], x[1])),
        PInst("s.add", ("f32",), (f, x[1], x[0])),  # a float sum is not commuted
        PInst("s.mov", (), (g, d)),  # a copy of a once-written register: renamed
        PInst("bnz", (), (g, Label("out"))),  # the numbering runs on across a conditional branch
        PInst("s.add", ("i32",), (h, c, c)),
        PInst("s.add", ("i32",), (k, g, g)),  # h's value
        PInst("s.mov", (), (x[4], a)),
        PInst("s.mov", (), (x[4], b)),  # x4 is written twice: neither is dropped, b read as a
        PInst("jmp", (), (Label("out"),)),
        PInst("s.add", ("i32",), (x[5], a, a)),  # after jmp: a new block
        PInst(".label", (), (Label("out"),)),
        PInst(".use", (), ((k, x[4], x[5]),)),
        PInst("halt"),
    ]
    got = check_cse(code)
    assert len(code) - len(got) == 5 and [i.operands for i in got if i.mnemonic == ".use"] == [((h, x[4], x[5]),)]
    lost = [PInst("s.li", (), (a, Imm(0))), PInst("jmp", (), (Label("nowhere"),))]
    with pytest.raises(KeyError):
        regalloc.live_intervals_py(lost)
    with pytest.raises(KeyError):
        compiled_intervals(lost)


def test_scalar_cse_keys_that_do_not_encode_as_bytes_take_the_tuple_keys():
    """The C walk keys values by bytes (tag and 8 bytes a source, the suffixes by length and text); an Imm beyond
    64 bits, of a float or int subclass, an operand that is not an Imm or a register, or a suffix that is not a
    str sends the walk back to the tuple keys: the same code as the Python walk every time, and keys that look
    alike as bytes kept apart (-1 and 2**64 - 1, suffixes ("i3", "2") and ("i32",), one mnemonic text in two
    objects)."""

    class Flo(float):
        pass

    class Val:  # imm_key reads .value of any operand
        def __init__(self, value):
            self.value = value

    add = "".join(["s.", "add"])  # "s.add", another object
    for odd in (Imm(1 << 70), Imm(Flo(2.5)), Imm(-(1 << 63) - 1), Val(7), None):
        a, b, c, d, e, f, g = (VReg(x) for x in "abcdefg")
        code = [
            PInst("s.li", (), (a, Imm(-1))),
            PInst("s.li", (), (b, Imm((1 << 64) - 1))),  # not -1's
            PInst("s.li", (), (c, Imm(-1))),  # a's value: dropped
            PInst("s.add", ("i3", "2"), (d, a, b)),
            PInst("s.add", ("i32",), (e, a, b)),  # other suffixes: kept
            PInst(add, ("i32",), (f, b, c)),  # e's value (commuted, the mnemonic made apart): dropped
            PInst(".use", (), ((d, e, f),)),
        ]
        if odd is not None:
            code += [PInst("s.li", (), (g, odd)), PInst("s.li", (), (VReg("h"), odd)), PInst(".use", (), (g,))]
        got = check_cse(code)
        assert [i.operands[0] for i in got[:4]] == [a, b, d, e]
        assert got[4].operands == ((d, e, e),)
    x, y, z = VReg("x"), VReg("y"), VReg("z")
    sub = [PInst("s.sub", (Str("i32"),), (r, x, x)) for r in (y, z)]  # suffixes that are not a str: equal ones
    got = check_cse([PInst("s.li", (), (x, Imm(1))), *sub, PInst(".use", (), ((y, z),))])
    assert len(got) == 3 and got[-1].operands == ((y, y),)


def test_hand_made_loops_for_licm():
    n, i, j, a, b, c, d, e, f = (VReg(x) for x in "nijabcdef")
    outer, inner, side, out = Label("outer"), Label("inner"), Label("side"), Label("out")
    code = [
        PInst("s.arg", (), (n, Imm(0))),
        PInst("s.li", (), (i, Imm(0))),
        PInst(".label", (), (outer,)),
        PInst("s.li", (), (j, Imm(0))),
        PInst("s.li", (), (a, Imm(4))),  # invariant in both loops: leaves both
        PInst(".label", (), (inner,)),
        PInst("s.add", ("i32",), (b, a, n)),  # reads a (moved first) and n (never written in the loops)
        PInst("s.add", ("i32",), (c, b, j)),  # reads j, written in the inner loop: stays
        PInst("s.add", ("i32",), (d, b, i)),  # reads i: leaves the inner loop, not the outer one
        PInst("s.li", (), (j, Imm(1))),
        PInst("loop", (), (j, inner)),
        PInst("s.li", (), (i, Imm(2))),
        PInst("loop", (), (i, outer)),
        PInst("jmp", (), (out,)),
        PInst(".label", (), (side,)),  # a loop entered from outside (the bz below): nothing moves out of it
        PInst("s.li", (), (e, Imm(5))),
        PInst("bnz", (), (e, side)),
        PInst(".label", (), (out,)),
        PInst("bz", (), (n, side)),
        PInst("s.li", (), (f, Imm(6))),
        PInst("halt"),
    ]
    got = check_licm(code)
    assert [x.operands[0] for x in got[:6]] == [n, i, a, b, outer, j]
    straight = code[:3] + [PInst("halt")]
    assert check_licm(straight) is straight  # no loop: the list given


def test_write_counts_by_hand_and_where_the_c_walk_declines():
    """scalar_flow.writes: the compiled walk's counts (first-write order) or, for what it leaves to Python, the
    Python walk's result or error."""
    a, b = VReg(), VReg()
    code = [
        PInst(".label", (), (Label("L0"),)),
        PInst("s.li", (), (a, Imm(1))),
        PInst("s.add", (), (b, a, a)),
        PInst("s.li", (), (a, Imm(2))),
        PInst(".use", (), (b,)),
    ]
    assert list(regalloc._codewalk.writes(code, scalar_flow.WRITTEN_AT, VReg).items()) == [(a, 2), (b, 1)]
    assert scalar_flow.writes([]) == {} and scalar_flow.writes_py([]) == {}
    odd = [
        code + [PInst("", (), ())],  # an empty mnemonic: IndexError
        code + [PInst("no.such", (), (a,))],  # not in WRITTEN_AT: KeyError
        code + [PInst("s.li", (), [b, Imm(3)])],  # operands a list: counted in Python
        code + [PInst("s.add", (), ())],  # no operand where it writes one: IndexError
    ]
    for c in odd:
        assert regalloc._codewalk.writes(c, scalar_flow.WRITTEN_AT, VReg) is NotImplemented
        try:
            want = list(scalar_flow.writes_py(c).items())
        except Exception as e:  # noqa: BLE001
            want = type(e)
        try:
            got = list(scalar_flow.writes(c).items())
        except Exception as e:  # noqa: BLE001
            got = type(e)
        assert got == want
    assert list(scalar_flow.writes(odd[2]).items()) == [(a, 2), (b, 2)]


def test_keys_that_are_not_their_identity_are_found_by_equality_as_in_the_python_walks():
    """The C walks keep registers, tokens and buffers (hashed by identity) in tables of pointers, anything else as a
    dict does: two equal names made apart are one key (liveness, licm's and scalar_cse's numbering and renaming)."""
    a, b = VReg("a"), VReg("b")
    name = "".join(["r", "1"])  # equal to "r1", another object
    assert name is not "r1"[:]  # noqa: F632  (made apart)
    top = Label("top")
    code = [
        PInst("s.li", (), (a, Imm(2))),
        PInst(".label", (), (top,)),
        PInst("s.li", (), ("r1", Imm(3))),  # a destination that is not a VReg: by equality
        PInst("s.li", (), (name, Imm(3))),
        PInst("s.li", (), (b, Imm(3))),
        PInst("s.add", ("i32",), ("r2", a, b)),
        PInst(".use", (), ("r1", name, b, "r2")),
        PInst("loop", (), (a, top)),
        PInst("halt"),
    ]
    check_code(code)
    count = {"r1": 1, "r2": 1, b: 1, a: 1}
    check_cse(code, count)
    check_licm(code, count)
    got = compiled_intervals(code)
    assert got["r1"] == regalloc.live_intervals_py(code)[name]


def test_immediates_of_every_kind_get_the_same_constant_pool_with_and_without_the_extension(monkeypatch):
    """map_code makes an exact int immediate's pool entry itself (finalize's `const`): ints, bools, floats, strings
    and an int subclass in one code list give the same instructions and pool either way (1 and True are one entry,
    1.0 another)."""
    import enum

    class Small(enum.IntEnum):
        TWO = 2

    a, b = VReg("a"), VReg("b")
    values = [1, True, 1.0, -0.0, 0.0, 2, Small.TWO, 2**40, -(2**63), 1, 2**40]
    code = [PInst("s.li", (), (a if k % 2 else b, Imm(v))) for k, v in enumerate(values)]
    code += [PInst(".use", (), (a, b)), PInst("halt")]

    def program():
        em = Emitter(get_machine("plate1"))
        em.code = list(code)
        return finalize.finalize(em, "k", [], get_machine("plate1"))[0]

    with_c = program()
    monkeypatch.setattr(finalize, "_codewalk", None)
    without = program()
    assert [set_fields(i) for i in with_c.instrs] == [set_fields(i) for i in without.instrs]
    assert [bits(c) for c in with_c.consts] == [bits(c) for c in without.consts]
    assert len(with_c.consts) == 7


def test_a_register_list_is_mapped_as_operand_maps_it():
    """map_code maps a register list (an exact tuple) itself: each register's number, or the subscript's KeyError."""
    from triton_plate_backend.isa.program import Inst, Program
    from triton_plate_backend.srcloc import UNKNOWN_LOC

    a, b = VReg("a"), VReg("b")
    code = [PInst("s.mov", (), (a, (a, b, a)))]

    def operand(v):
        if type(v) is tuple:
            return tuple([regs[r] for r in v])
        raise AssertionError(v)

    def walk(compiled):
        program = Program(name="k")
        locs = {UNKNOWN_LOC: 0}
        if not compiled:
            finalize._map_code(code, regs, {}, {}, None, operand, locs, program)
            return program.instrs
        kinds = (VReg, Token, View, Label, Inst)
        walked = (code, regs, {}, {}, None, operand, locs, program.locs, UNKNOWN_LOC, *kinds, program.instrs)
        regalloc._codewalk.map_code(*walked, Imm, {}, program.consts)
        return program.instrs

    regs = {a: 3, b: 5}
    assert walk(True) == walk(False) == [Inst("s.mov", (), (3, (3, 5, 3)), 0)]
    regs = {a: 3}
    errors = []
    for compiled in (True, False):
        with pytest.raises(KeyError) as e:
            walk(compiled)
        errors.append(e.value.args)
    assert errors[0] == errors[1] == (b,)
