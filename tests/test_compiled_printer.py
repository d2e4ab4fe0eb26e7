"""The printer's walk compiled in ir/_irprint (ir/csrc/irprint.cpp, built by setup.py) against its Python reference
(`_Printer.op_py`, `region_py`): the same text, with and without locations, for every TTIR fixture (with and without
locations in the file) as parsed and after the IR passes (persistent or not, so with `plate.program_range` and the
access and affinity annotations), and for hand-made IR the corpus does not hold: names that need fresh numbers or
a suffix, result groups, block arguments and successors, a block that is not in the printed region, a use of a value
never defined, a non-ASCII name, an op with no results and one with a function-typed result, every kind of
attribute value and location the compiled walk spells itself and some it leaves to Python; and the same error
for an attribute the printer cannot spell."""

from __future__ import annotations

import pytest
import ttir_fixtures

from triton_plate_backend.ir import printer
from triton_plate_backend.ir.core import (
    ArrayAttr,
    Block,
    EnumAttr,
    FunctionType,
    IntAttr,
    Module,
    Op,
    Region,
    ScalarType,
    StrAttr,
    TypeAttr,
    UnitAttr,
    Value,
)
from triton_plate_backend.machine import get_machine
from triton_plate_backend.passes import access
from triton_plate_backend.passes.pipeline import run_passes
from triton_plate_backend.srcloc import Loc
from triton_plate_backend.ttir.parser import parse

pytestmark = pytest.mark.skipif(printer._irprint is None, reason="ir._irprint is not built (setup.py build_ext)")

COMPILED = printer._irprint


def both(print_fn, *args, **kwargs) -> tuple[str, str]:
    """(compiled, Python) text of print_fn(*args)."""
    fast = print_fn(*args, **kwargs)
    printer._irprint = None
    try:
        slow = print_fn(*args, **kwargs)
    finally:
        printer._irprint = COMPILED
    return fast, slow


@pytest.mark.parametrize("name", [p.name for p in ttir_fixtures.FILES])
def test_parsed_fixture(name):
    module = parse(ttir_fixtures.fixture_text(name), name)
    for locs in (True, False):
        fast, slow = both(printer.print_module, module, locs=locs)
        assert fast == slow
    fast, slow = both(printer.print_op, module.ops[0])
    assert fast == slow


@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("kernel", ttir_fixtures.LOWERABLE)
def test_after_passes(kernel, persistent):
    machine = get_machine("plate1")
    sram = machine.core.sram_bytes if persistent else None
    module = run_passes(
        parse(ttir_fixtures.fixture_text(kernel), kernel),
        access.AccessAnalysis(),
        persistent_sram=sram,
        persistent_groups=machine.total_domains,
    )
    fast, slow = both(printer.print_module, module)
    assert fast == slow
    assert parse(fast, kernel) is not None  # what the pasm stage reads back


def i32():
    return ScalarType("i32")


def hand_made() -> Module:
    t = i32()
    loc = Loc("k.py", 3, 4)
    a, b = Value(t, "0"), Value(t, "x")
    c0 = Op("arith.constant", results=[a], attrs={"value": IntAttr(1, t)}, loc=loc)
    c1 = Op("arith.constant", results=[b], attrs={"value": IntAttr(2, t)}, loc=loc)
    dup = Value(t, "x")  # the name is taken: x_0
    add = Op("arith.addi", operands=[a, b], results=[dup], loc=Loc("", 0, 0, "named"))
    group = [Value(t, f"g#{k}") for k in range(3)]  # %g:3
    multi = Op("test.multi", operands=[dup], results=group)
    broken = [Value(t, "h#0"), Value(t, "other")]  # not a group: each bound
    multi2 = Op("test.multi", operands=[group[2]], results=broken)
    ghost = Value(t, "ghost")  # used, never defined
    odd = [Value(t, ""), Value(t, "9"), Value(t, "bad name"), Value(t, "é1"), Value(t, "xé"), Value(t, "1")]
    fresh = Op("test.fresh", operands=[ghost], results=odd)
    fn_type = FunctionType((t,), (t,))
    fres = Op("test.fnres", results=[Value(fn_type, "f")])
    none = Op("test.none", operands=[a], attrs={"flag": StrAttr('é"x')}, loc=Loc("k.py", 5, 6, "v"))
    attrs = {
        "bare": IntAttr(3),
        "unit": UnitAttr(),
        "kept": EnumAttr("ca", "#tt<cache ca>"),
        "plain": EnumAttr("slt"),
        "s": StrAttr("plain"),
        "arr": ArrayAttr((IntAttr(1), StrAttr("x"))),
    }
    many = Op("test.attrs", operands=[a], attrs=attrs, loc=Loc())
    quoted = Op("test.quoted", attrs={"needs quote": UnitAttr(), "x": IntAttr(-1, t)}, loc=Loc("", 0, 0, ""))
    # a region with two blocks, block arguments and successors (one to a block outside it)
    outside = Block()
    arg = Value(t, "x")
    b1 = Block(args=[arg])
    b0 = Block()
    b0.ops.append(Op("cf.br", operands=[a], successors=[b1, outside]))
    b1.ops.append(Op("test.use", operands=[arg, b]))
    b2 = Block()
    b2.ops.append(Op("test.end"))
    inner = Op("test.region", operands=[b], results=[Value(t, "r")], regions=[Region([b0, b1, b2]), Region([Block()])])
    body = Block(args=[Value(t, "arg")])
    body.ops += [c0, c1, add, multi, multi2, fresh, fres, none, many, quoted, inner, Op("tt.return")]
    func = Op(
        "tt.func",
        attrs={"sym_name": StrAttr("k"), "function_type": TypeAttr(FunctionType((t,), ()))},
        regions=[Region([body])],
        loc=loc,
    )
    untyped = Op("tt.func", attrs={"sym_name": StrAttr("u")}, results=[Value(t, "")])  # generic: no function type
    nested = Op("builtin.module", regions=[Region([Block(ops=[Op("test.leaf")])])])
    return Module(ops=[func, untyped, nested], attrs={"sym_name": StrAttr("m")})


def test_hand_made():
    module = hand_made()
    for locs in (False, True):
        fast, slow = both(printer.print_module, module, locs=locs)
        assert fast == slow
    assert "%g:3 = " in fast and "%x_0 = " in fast and "^bb_unknown" in fast and "%xé" in fast and "%ghost" in fast
    assert '{"needs quote", x = -1 : i32}' in fast and "kept = #tt<cache ca>" in fast and "loc(unknown)" in fast


def test_same_error():
    t = i32()
    op = Op("test.bad", results=[Value(t, "a")], attrs={"bad": object()})
    module = Module(ops=[op])
    errors = []
    for on in (True, False):
        printer._irprint = COMPILED if on else None
        try:
            with pytest.raises(printer.IrPrintError) as e:
                printer.print_module(module)
            errors.append(str(e.value))
        finally:
            printer._irprint = COMPILED
    assert errors[0] == errors[1]
