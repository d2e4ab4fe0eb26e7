"""The emitter's `emit`, `rematerialised` and `li` and `dma_operands.materialize` compiled in passes/_emit
(passes/csrc/emit.cpp, built by setup.py) against their Python reference (the `Emitter` methods, which run with
``Emitter.compiled = False``, and `dma_operands.materialize_py`). On every
corpus kernel, on two machines: the same emitted code (every lowering attempt codegen makes, before licm: the
same instructions with the same fields in the same order, registers, tokens and buffers numbered by first use),
the same shared registers, the same finished Program; the compiled methods are the ones that ran. By hand: the
same errors (an unknown mnemonic, a wrong operand count, an unexpected keyword), suffixes given as a list,
immediates of every kind in the block memo, a memo that is not a dict, and a core whose emitter is gone.
tests/unit/test_pass_emitter.py runs its tests both ways too."""

from __future__ import annotations

import gc

import pytest
import ttir_fixtures

from triton_plate_backend.errors import CompileError
from triton_plate_backend.isa.program import Program
from triton_plate_backend.machine import get_machine
from triton_plate_backend.passes import codegen, dma_operands, emitter, prefetch, rules_access
from triton_plate_backend.passes.emitter import Buffer, Emitter, Imm, Label, Token, View, VReg, whole
from triton_plate_backend.passes.pipeline import run_pipeline
from triton_plate_backend.ttir.parser import parse

pytestmark = pytest.mark.skipif(emitter._emit is None, reason="passes._emit is not built (setup.py build_ext)")


def set_fields(obj) -> list[str]:
    """The names of an object's attributes that are set (its slots' and its __dict__'s), in their order."""
    slots = [n for c in type(obj).__mro__ for n in getattr(c, "__slots__", ()) if hasattr(obj, n)]
    return slots + list(getattr(obj, "__dict__", {}))


def field_values(obj) -> list[tuple]:
    """(name, value) of each attribute that is set, in set_fields' order: its vars() as a list."""
    return [(n, getattr(obj, n)) for n in set_fields(obj)]


class Canon:
    """Registers, tokens and buffers by first use (their ids are global counters), the rest by value."""

    def __init__(self):
        self.seen: dict = {}

    def number(self, x) -> int:
        return self.seen.setdefault(id(x), len(self.seen))

    def __call__(self, x):
        if isinstance(x, VReg):
            return ("v", self.number(x), x.hint)
        if isinstance(x, Token):
            return ("t", self.number(x))
        if isinstance(x, Buffer):
            return ("b", self.number(x), x.nbytes, x.what, repr(x.loc))
        if isinstance(x, View):
            return ("view", self(x.buffer), x.offset, x.dtype, x.shape, x.strides)
        if isinstance(x, Imm):
            return ("imm", type(x.value).__name__, repr(x.value))
        if isinstance(x, (tuple, list)):
            return tuple(self(y) for y in x)
        return (type(x).__name__, repr(x))

    def inst(self, i) -> tuple:
        # extra_uses: a set's order (of buffers hashed by address), so as a set
        uses = sorted(map(self, i.extra_uses))
        return (type(i).__name__, set_fields(i), i.mnemonic, i.suffixes, self(i.operands), repr(i.loc), uses)


def lowerings(kernel: str, machine: str, compiled: bool, monkeypatch) -> list:
    """Each lowering attempt's emitted code and shared registers (canonical), then the Program or the error."""
    seen = []
    finalize = codegen._finalize

    def spy(em, *args, **kwargs):
        canon = Canon()
        assert all((name in vars(em)) == compiled for name in ("emit", "rematerialised", "li"))
        code = [canon.inst(i) for i in em.code]
        seen.append((code, sorted(canon(r) for r in em.shared)))
        return finalize(em, *args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(Emitter, "compiled", compiled)
        if not compiled:
            for module in (dma_operands, prefetch, rules_access):
                m.setattr(module, "materialize", dma_operands.materialize_py)
        m.setattr(codegen, "_finalize", spy)
        try:
            program = run_pipeline(parse(ttir_fixtures.fixture_text(kernel), kernel), None, get_machine(machine))[1]
        except CompileError as e:
            return [*seen, str(e)]
    return [*seen, program]


def same_program(a: Program, b: Program) -> None:
    assert [field_values(i) for i in a.instrs] == [field_values(i) for i in b.instrs]
    for field in ("tiles", "locs", "labels", "sram_bytes", "args"):
        assert getattr(a, field) == getattr(b, field), field
    assert [(type(c), repr(c)) for c in a.consts] == [(type(c), repr(c)) for c in b.consts]


@pytest.mark.parametrize("machine", ["plate-mini", "plate1"])
@pytest.mark.parametrize("kernel", ttir_fixtures.KERNELS)
def test_the_compiled_methods_emit_the_python_methods_code_on_the_corpus(kernel, machine, monkeypatch):
    with_c = lowerings(kernel, machine, True, monkeypatch)
    without = lowerings(kernel, machine, False, monkeypatch)
    assert len(with_c) == len(without)
    for got, want in zip(with_c[:-1], without[:-1]):
        assert got == want
    if isinstance(without[-1], str):
        assert with_c[-1] == without[-1]
        return
    assert len(with_c) > 1 and max(len(code) for code, _ in with_c[:-1]) > 10
    same_program(with_c[-1], without[-1])


def both(fn):
    """fn(emitter) with the compiled methods and with the Python ones: the results, or the errors as text."""
    out = []
    for compiled in (True, False):
        Emitter.compiled = compiled
        try:
            em = Emitter(get_machine("plate-mini"))
        finally:
            Emitter.compiled = True
        assert ("emit" in vars(em)) == compiled
        try:
            got = fn(em)
        except Exception as e:  # the same error both ways is the point
            got = f"{type(e).__name__}: {e}"
        canon = Canon()
        out.append((got if isinstance(got, str) else canon(got), [canon.inst(i) for i in em.code]))
    return out


@pytest.mark.parametrize(
    "call",
    [
        lambda em: em.emit("s.nope", VReg()),
        lambda em: em.emit("s.add", VReg(), VReg()),
        lambda em: em.emit("s.li", VReg(), Imm(1), suffixes=("i64",), extra=1),
        lambda em: em.emit(),
        lambda em: em.emit(7, VReg()),
        lambda em: em.rematerialised("s.nope", Imm(1)),
        lambda em: em.rematerialised("s.add", VReg()),
        lambda em: em.rematerialised("s.li", Imm(1), hint="k", other=2),
        lambda em: em.rematerialised(),
        lambda em: em.rematerialised("s.li", Imm("x")),
        lambda em: em.rematerialised("s.add", VReg(), Imm(1), suffixes=["i64"]),  # an unhashable key
        lambda em: em.li("x"),
        lambda em: em.li(),
        lambda em: em.li(1, "h", 3),
        lambda em: em.li(1, other=2),
        lambda em: em.li(1, "h", hint="k"),
    ],
)
def test_the_same_errors(call):
    got, want = both(call)
    assert got == want
    assert isinstance(got[0], str)


def _memo_kinds(em):
    k = [em.rematerialised("s.li", Imm(v), hint="h") for v in (1, True, 1.0, -0.0, 0.0, 2**70, float("nan"))]
    k += [em.rematerialised("s.li", Imm(v)) for v in (1, True, 1.0, -0.0, 0.0, 2**70)]
    k += [em.li(v) for v in (1, True, 1.0, -0.0, 0.0, 2**70, 3.5)] + [
        em.li(4, "h"),
        em.li(4, hint="g"),
        em.li(5.0, "f"),
        em.li(value=6),
    ]
    a = em.rematerialised("s.arg", Imm(0), hint="arg")
    s = em.rematerialised("s.add", a, k[0], suffixes=("i64",))
    em.emit("s.add", a, a, k[0], suffixes=["i64"])  # suffixes as a list: a tuple in the instruction
    s2 = em.rematerialised("s.add", a, k[0], suffixes=("i64",))  # a written again: another value
    label = em.label()
    em.emit("bz", s2, label)
    s3 = em.rematerialised("s.add", a, k[0], suffixes=("i64",))  # a forward branch keeps the block
    em.place(label)
    em.emit("bnz", s3, label)  # a back edge ends it
    s4 = em.rematerialised("s.add", a, k[0], suffixes=("i64",))
    buf = em.buffer("f32", (4,))
    tok = Token()
    em.emit("dma.load", tok, buf, s4, (k[0],), (k[0],), (k[0],), Imm(0.0))
    em.emit("v.fill", buf, Imm(1.0))  # waits for the load first (Python's `_hazards`)
    em.emit("halt")
    return [k, a, s, s2, s3, s4, sorted(em.shared, key=lambda r: r.id), list(em._version.items())]


def test_immediates_blocks_and_hazards_are_the_python_methods():
    got, want = both(_memo_kinds)
    assert got == want
    assert [i[2] for i in got[1]].count("dma.wait") == 1


def test_a_memo_that_is_not_a_dict_and_a_memo_switched_off():
    class Memo(dict):
        pass

    def run(em):
        em.remat = Memo()
        a = [em.rematerialised("s.li", Imm(3)) for _ in range(2)] + [em.li(3), em.li(4, "y")]
        em.remat = None
        b = [em.rematerialised("s.li", Imm(3), hint="x") for _ in range(2)] + [em.li(3), em.li(3, "z")]
        return [a[0] is a[1] is a[2], b[0] is b[1] or b[2] is b[3], a, b, len(em.shared)]

    got, want = both(run)
    assert got == want
    assert got[0][0] == ("bool", "True") and got[0][1] == ("bool", "False")


def test_a_subclass_that_overrides_a_method_keeps_its_own():
    class Mine(Emitter):
        def emit(self, mnemonic, *operands, suffixes=()):
            return super().emit(mnemonic, *operands, suffixes=suffixes)

    em = Mine(get_machine("plate-mini"))
    assert "emit" not in vars(em) and "rematerialised" not in vars(em)
    em.rematerialised("s.li", Imm(1))
    assert [i.mnemonic for i in em.code] == ["s.li"]


def test_a_core_whose_emitter_is_gone_says_so():
    em = Emitter(get_machine("plate-mini"))
    emit = em.emit
    del em
    gc.collect()
    with pytest.raises(ReferenceError):
        emit("s.li", VReg(), Imm(1))


def test_a_tile_operand_of_a_vector_instruction_goes_through_the_hazards():
    def run(em):
        a = em.buffer("f32", (8,))
        b = whole(Buffer(32), "f32", (8,))
        tok = Token()
        base = em.rematerialised("s.li", Imm(0))
        em.emit("dma.store", tok, a, base, (base,), (base,), (base,))
        em.emit("v.fill", b, Imm(2.0))  # another tile: the store stays in flight
        em.emit("v.fill", a, Imm(1.0))  # its tile: waited for first
        em.emit("jmp", Label("out"))
        return [len(em.pending)]

    got, want = both(run)
    assert got == want
    assert [i[2] for i in got[1]].count("dma.wait") == 1


def python_frames(fn, names=("_hazards", "_track", "wait", "wait_all")) -> dict:
    """fn() and how many frames of the emitter's Python methods `names` it ran (sys.setprofile)."""
    import sys

    seen = dict.fromkeys(names, 0)

    def prof(frame, event, arg):
        if event == "call" and frame.f_code.co_name in seen and frame.f_code.co_filename == emitter.__file__:
            seen[frame.f_code.co_name] += 1

    sys.setprofile(prof)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return seen


def _dmas(em):
    """More loads than the queue holds, a load after a store and a store after loads, a gather, an atomic, a
    fence, another program's prefetch, a carried DMA kept over a branch and waited for at halt."""
    base = em.rematerialised("s.li", Imm(0))
    bufs = [em.buffer("f32", (8,)) for _ in range(12)]
    regs = ((base,), (base,), (base,))
    for b in bufs[: em.queue_depth + 2]:  # a full queue drains from its oldest
        em.emit("dma.load", Token(), b, base, *regs, Imm(0.0))
    em.emit("dma.store", Token(), bufs[0], base, *regs)  # its tile in flight: waited for; a store after loads
    em.emit("dma.load", Token(), bufs[1], base, *regs, Imm(0.0))  # a load after a store
    em.emit("v.add", bufs[2], bufs[3], bufs[4])
    em.emit("dma.gather", Token(), bufs[6], bufs[7], bufs[8], Imm(0.0))
    em.emit("atom.rmw", bufs[9], bufs[10], bufs[11], bufs[2])
    em.emit("fence")
    em.other_program = True
    carried = Token()
    em.emit("dma.load", carried, bufs[5], base, *regs, Imm(0.0))  # another program's: no memory order
    em.carry(carried)
    em.other_program = False
    em.emit("dma.store", Token(), bufs[9], base, *regs)
    em.emit("jmp", Label("out"))  # every DMA but the carried one waited for
    kept = [p.token is carried for p in em.pending]
    em.emit("halt")  # the carried one too
    return [kept, len(em.pending)]


def test_the_dma_bookkeeping_in_c_is_the_python_methods():
    """Queue drains, memory order between loads and stores (not across programs), tiles in flight, fences,
    atomics, carried DMAs: the same code and the same pending list, and the compiled emitter ran none of the
    Python methods."""
    got, want = both(_dmas)
    assert got == want
    assert got[0] == ((("bool", "True"),), ("int", "0")) and [i[2] for i in got[1]].count("dma.wait") == 15
    for compiled, frames in ((True, 0), (False, 1)):
        Emitter.compiled = compiled
        try:
            em = Emitter(get_machine("plate-mini"))
        finally:
            Emitter.compiled = True
        seen = python_frames(lambda em=em: _dmas(em))
        assert all((n > 0) == bool(frames) for n in seen.values()), seen


def test_an_emitter_with_its_own_dma_methods_runs_them():
    """A subclass's `_hazards` or `_track`, or a `wait` set on the instance: the compiled emit calls them."""
    calls = []

    class Mine(Emitter):
        def _hazards(self, *args):
            calls.append("_hazards")
            return super()._hazards(*args)

        def _track(self, *args):
            calls.append("_track")
            return super()._track(*args)

    em = Mine(get_machine("plate-mini"))
    assert "emit" in vars(em)
    _dmas(em)
    assert calls.count("_track") == 15 and calls.count("_hazards") > 10
    em = Emitter(get_machine("plate-mini"))
    em.wait = lambda p, wait=em.wait: calls.append("wait") or wait(p)
    calls.clear()
    _dmas(em)
    assert calls.count("wait") == [i.mnemonic for i in em.code].count("dma.wait") == 15


def _expressions():
    from triton_plate_backend.ir.core import ScalarType, Value
    from triton_plate_backend.passes import affine as A
    from triton_plate_backend.passes.context import ArgRef
    from triton_plate_backend.passes.context import Const as BoundConst

    x, y, c = Value(ScalarType("i64"), "x"), Value(ScalarType("i32"), "y"), Value(ScalarType("i1"), "c")
    z = Value(ScalarType("i64"), "z")

    class MyAdd(A.Add):  # a subclass: the Python function's match
        pass

    def exprs(ctx):
        ctx.bind(x, VReg("x"))
        ctx.bind(y, BoundConst(7))  # a constant binding: ctx.li
        ctx.bind(c, VReg("c"))
        ctx.bind(z, ArgRef(2))  # a kernel argument: ctx.em.rematerialised("s.arg", ...)
        ctx.companions[x] = [VReg("cp0"), VReg("cp1")]
        s = A.Add(A.Mul(A.Val(x), A.Const(4)), A.Val(y))
        return [
            A.Const(3),
            A.Const(True),
            A.Val(x),
            s,
            A.Sub(s, A.Carried(x, 1)),
            A.Min(A.Max(s, A.Const(0)), A.Const(2**40)),
            A.FloorDiv(s, 3),
            A.CeilDiv(A.Add(s, A.Carried(x)), 5),
            A.Select(c, s, A.Const(-1)),
            MyAdd(A.Val(x), A.Const(1)),
            A.Mul(A.Val(x), A.Val(x)),
            A.Add(A.Val(z), A.Val(y)),
            A.Sub(A.Val(z), A.Val(z)),
        ]

    return exprs


@pytest.mark.parametrize("preset", [False, True])
def test_materialize_walks_every_node_as_the_python_function_does(preset):
    from triton_plate_backend.passes import affine as A
    from triton_plate_backend.passes.context import Ctx

    make = _expressions()
    out = []
    for fn in (dma_operands.materialize, dma_operands.materialize_py):
        Emitter.compiled = fn is dma_operands.materialize
        try:
            ctx = Ctx(get_machine("plate-mini"), "k", {}, {})
        finally:
            Emitter.compiled = True
        exprs = make(ctx)
        memo = {}
        if preset:  # a prefetch's memo: the counter bound to a register, an entry that is None
            memo[exprs[2]] = VReg("next")
            memo[A.Const(3)] = None
        regs = [fn(ctx, e, memo) for e in exprs]
        regs += [fn(ctx, e, {}) for e in exprs]  # each descriptor its own memo; the block shares the registers
        canon = Canon()
        out.append((canon(regs), [canon.inst(i) for i in ctx.em.code], sorted(map(canon, memo.values()))))
    assert out[0] == out[1]
    assert len(out[0][1]) > 12


def test_materialize_errors_are_the_python_functions():
    from triton_plate_backend.ir.core import ScalarType, Value
    from triton_plate_backend.passes import affine as A
    from triton_plate_backend.passes.context import Ctx

    ctx = Ctx(get_machine("plate-mini"), "k", {}, {})
    unbound = Value(ScalarType("i64"), "u")
    got = []
    for fn in (dma_operands.materialize, dma_operands.materialize_py):
        for args in (
            (ctx, "not an expression", {}),
            (ctx, A.Add(A.Const(1), "nope"), {}),
            (ctx, A.Const(1)),
            (ctx, A.Add(A.Const(1), A.Val(unbound)), {}),  # Ctx.reg's error: used before it is defined
        ):
            try:
                fn(*args)
            except Exception as e:
                got.append(f"{type(e).__name__}: {e}")
    assert got[:4] == got[4:] and len(got) == 8
    assert "used before it is defined" in got[3]


def test_registers_made_in_c_are_vreg_init_s():
    """The compiled methods make a fresh register without VReg.__init__'s frame: the same class, the next id of the
    one counter, the hint; a VReg whose __init__ is another is called as a class (its __init__ runs)."""
    from triton_plate_backend.passes.context import Ctx

    ctx = Ctx(get_machine("plate-mini"), "k", {}, {})
    before = VReg()
    made = ctx.em.rematerialised("s.arg", Imm(0), hint="arg")
    fresh = ctx.em.li(5)
    after = VReg("py")
    assert [type(r) for r in (made, fresh)] == [VReg, VReg]
    assert [before.id + 1, before.id + 2, before.id + 3] == [made.id, fresh.id, after.id]
    assert (made.hint, fresh.hint, repr(made)) == ("arg", "", f"v{made.id}(arg)")
    ran = []
    original = VReg.__init__

    def init(self, hint=""):
        ran.append(hint)
        original(self, hint)

    VReg.__init__ = init
    try:
        other = ctx.em.li(6, "six")
    finally:
        VReg.__init__ = original
    assert ran == ["six"] and other.hint == "six" and other.id == after.id + 1
    again = ctx.em.li(7)  # __init__ back: made in C again
    assert again.id == other.id + 1 and ran == ["six"]
    # the rules' `new_vreg`: the same, called from Python
    made = [emitter.new_vreg(), emitter.new_vreg("iv.next"), VReg()]
    assert [type(r) for r in made] == [VReg] * 3 and [r.hint for r in made] == ["", "iv.next", ""]
    assert [r.id for r in made] == [again.id + 1, again.id + 2, again.id + 3]
    with pytest.raises(TypeError) as got:
        emitter.new_vreg("a", "b")
    with pytest.raises(TypeError) as want:
        VReg("a", "b")
    assert str(got.value) == str(want.value)


def test_materialize_goes_as_deep_as_the_python_function():
    from triton_plate_backend.passes import affine as A
    from triton_plate_backend.passes.context import Ctx

    def chain(n):
        e = A.Const(1)
        for k in range(n):
            e = A.Add(e, A.Const(k + 2))
        return e

    got = []
    for fn in (dma_operands.materialize, dma_operands.materialize_py):
        ctx = Ctx(get_machine("plate-mini"), "k", {}, {})
        got.append(len({id(fn(ctx, chain(150), {}))}) + len(ctx.em.code))  # deep enough to show a walk, it fits
        with pytest.raises(RecursionError):
            fn(ctx, chain(5000), {})
    assert got[0] == got[1] == 1 + 151 + 150


def test_an_attribute_a_subclass_makes_a_property_is_read_through_it():
    """The compiled methods read the emitter's plain attributes from its dict; one the class makes a data descriptor
    (a property) is read through it, as the attribute lookup does."""

    class Logged(Emitter):
        reads = 0

        @property
        def loc(self):
            type(self).reads += 1
            return self._where

        @loc.setter
        def loc(self, value):
            self._where = value

    em = Logged(get_machine("plate-mini"))
    assert "emit" in vars(em)  # the compiled methods
    em.loc = "here"
    before = Logged.reads
    em.emit("s.li", VReg(), Imm(1))
    assert Logged.reads > before and em.code[-1].loc == "here"
    em.__dict__["loc"] = "shadowed"  # (the property wins over the dict, as in Python)
    em.emit("s.li", VReg(), Imm(2))
    assert em.code[-1].loc == "here"
