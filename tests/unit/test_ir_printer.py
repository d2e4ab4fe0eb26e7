"""Printer and verifier of plate IR: parse -> print -> parse is the identity on ops, types,
attributes and locations; attribute spellings read back exactly; the verifier catches broken IR."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ttir_fixtures import FILES, fixture_text
from ttir_oracle import plate_walk

from triton_plate_backend.ir.core import (
    ArrayAttr,
    Block,
    BoolAttr,
    DenseAttr,
    EnumAttr,
    FloatAttr,
    FunctionType,
    IntAttr,
    Module,
    Region,
    ScalarType,
    StrAttr,
    SymbolRefAttr,
    TensorType,
    TypeAttr,
    UnitAttr,
    Value,
    new_op,
)
from triton_plate_backend.ir.printer import (
    IrPrintError,
    format_attr,
    format_loc,
    format_string,
    print_module,
    print_op,
)
from triton_plate_backend.ir.verify import IrVerifyError, verify
from triton_plate_backend.srcloc import Loc
from triton_plate_backend.ttir.parser import parse

F32, F16, I32, I1 = ScalarType("f32"), ScalarType("f16"), ScalarType("i32"), ScalarType("i1")


def _signature(module):
    return [(op.name, op.attrs, op.loc, [v.name for v in op.results]) for op in module.walk()]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_parse_print_parse_is_identity(path):
    first = parse(path.read_text())
    text = print_module(first)
    second = parse(text, "printed.pir")
    verify(second)
    assert plate_walk(second) == plate_walk(first)
    a, b = _signature(first), _signature(second)
    assert [x[:3] for x in a] == [x[:3] for x in b]  # names may differ where scopes collide
    assert print_module(second) == text  # printing is a fixed point


@given(
    st.text(st.characters(max_codepoint=0x3000), max_size=12) | st.text(st.sampled_from(' "\\~a\x7f\x1f'), max_size=6)
)
def test_a_string_prints_bare_exactly_when_it_is_printable_ascii_without_quote_or_backslash(s):
    bare = all(0x20 <= ord(c) < 0x7F and c not in '"\\' for c in s)
    assert (format_string(s) == f'"{s}"') == bare


def test_locations_can_be_left_out():
    m = parse(fixture_text("vec_add"))
    assert "loc(" in print_module(m) and "loc(" not in print_module(m, locs=False)
    assert all(op.loc is None for op in parse(print_module(m, locs=False)).walk())


# ---- building IR by hand --------------------------------------------------------------------------


def _func(name: str, arg_types, result_types=()) -> tuple:
    block = Block()
    ftype = FunctionType(tuple(arg_types), tuple(result_types))
    func = new_op(
        "tt.func",
        attrs={"sym_name": StrAttr(name), "function_type": TypeAttr(ftype), "sym_visibility": StrAttr("public")},
        regions=[Region([block])],
    )
    block.parent = func.regions[0]
    block.args = [Value(t, owner=block, index=k) for k, t in enumerate(arg_types)]
    return func, block


def _built_module():
    func, block = _func("k", [F32, F32])
    a, b = block.args
    a.name = b.name = "x"  # clashing names must be renamed, not merged
    add = block.append(new_op("arith.addf", [a, b], [F32], loc=Loc("k.py", 3, 9, "s")))
    add.result.name = "s"
    mul = block.append(new_op("arith.mulf", [add.result, add.result], [F32]))  # unnamed
    split = block.append(new_op("test.pair", [mul.result], [F32, F32], attrs={"tag": EnumAttr("tf32")}))
    split.results[0].name, split.results[1].name = "p#0", "p#1"
    block.append(new_op("tt.return", []))
    return Module([func]), split


def test_hand_built_ir_prints_and_reads_back():
    module, split = _built_module()
    verify(module)
    text = print_module(module)
    assert "%p:2 = " in text and '"test.pair"' in text and "%x_0" in text
    again = parse(text)
    verify(again)
    assert plate_walk(again) == plate_walk(module)
    pair = [op for op in again.walk() if op.name == "test.pair"][0]
    assert pair.attrs["tag"] == EnumAttr("tf32")  # a keyword that is also a type name survives
    assert [op.loc for op in again.walk()][1] == Loc("k.py", 3, 9, "s")


def test_print_op_alone():
    module, split = _built_module()
    assert print_op(split).startswith('%p:2 = "test.pair"(%0) {tag = #plate.enum<"tf32">}')


# ---- attribute spellings -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "attr,text",
    [
        (FloatAttr(-math.inf, F32), "0xFF800000 : f32"),
        (FloatAttr(math.inf, F16), "0x7C00 : f16"),
        (FloatAttr(-math.inf, ScalarType("bf16")), "0xFF80 : bf16"),
        (FloatAttr(1.5, F32), "1.5 : f32"),
        (FloatAttr(1e-20, F32), "1.0e-20 : f32"),
        (IntAttr(-5, I32), "-5 : i32"),
        (StrAttr('a"b\\c\n'), '"a\\"b\\\\c\\0A"'),
        (ArrayAttr((0, 1), "i32"), "array<i32: 0, 1>"),
        (DenseAttr((1, 2, 3, 4), TensorType((2, 2), I32), splat=False), "dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>"),
        (DenseAttr((-math.inf,), TensorType((64,), F32)), "dense<0xFF800000> : tensor<64xf32>"),
        (EnumAttr("slt"), "slt"),
        (SymbolRefAttr("kernels.f"), "@kernels.f"),
        ({"tt.divisibility": IntAttr(16, I32), "flag": UnitAttr()}, "{tt.divisibility = 16 : i32, flag}"),
    ],
)
def test_attribute_spelling(attr, text):
    assert format_attr(attr) == text
    assert _same(_read_back(attr), attr)


def _same(a, b) -> bool:
    """Equal attributes; a FloatAttr read from hex keeps that spelling in `text`, so compare values."""
    if isinstance(a, FloatAttr) and isinstance(b, FloatAttr):
        return a.type == b.type and (a.value == b.value or (math.isnan(a.value) and math.isnan(b.value)))
    if isinstance(a, ArrayAttr) and isinstance(b, ArrayAttr):
        return a.element == b.element and len(a.values) == len(b.values) and all(map(_same, a.values, b.values))
    return a == b


def test_nan_and_unknown_values():
    assert format_attr(FloatAttr(math.nan, F32)) == "0x7FC00000 : f32"
    assert math.isnan(_read_back(FloatAttr(math.nan, F32)).value)
    with pytest.raises(IrPrintError, match="cannot print"):
        format_attr(object())


def test_location_spelling():
    assert format_loc(Loc("k.py", 3, 4, "x")) == 'loc("x"("k.py":3:4))'
    assert format_loc(Loc()) == "loc(unknown)"


def _read_back(attr):
    text = f'module {{\n  "test.op"() {{a = {format_attr(attr)}}} : () -> ()\n}}\n'
    return parse(text).ops[0].attrs["a"]


_ident = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
_attrs = st.one_of(
    st.integers(-(2**31), 2**31 - 1).map(lambda v: IntAttr(v, I32)),
    st.integers(-(2**70), 2**70).map(lambda v: IntAttr(v)),
    st.floats(width=32, allow_nan=False).map(lambda v: FloatAttr(v, F32)),
    st.floats(width=16, allow_nan=False).map(lambda v: FloatAttr(v, F16)),
    st.floats(allow_nan=False).map(lambda v: FloatAttr(v, ScalarType("f64"))),
    st.booleans().map(BoolAttr),
    st.text(max_size=12).map(StrAttr),
    _ident.map(EnumAttr),
    st.text(min_size=1, max_size=8).map(EnumAttr),
    st.text(min_size=1, max_size=8).map(SymbolRefAttr),
    st.lists(st.integers(-100, 100), max_size=4).map(lambda v: ArrayAttr(tuple(v), "i32")),
    st.lists(st.floats(width=32, allow_nan=False), min_size=4, max_size=4).map(
        lambda v: DenseAttr(tuple(v), TensorType((2, 2), F32), splat=False)
    ),
    st.floats(width=32, allow_nan=False).map(lambda v: DenseAttr((v,), TensorType((8,), F32))),
    st.sampled_from([UnitAttr(), TypeAttr(TensorType((4,), F32)), TypeAttr(I1)]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_attrs, min_size=1, max_size=3).map(lambda xs: ArrayAttr(tuple(xs))) | _attrs)
def test_every_attribute_reads_back_equal(attr):
    back = _read_back(attr)
    assert _same(back, attr)
    assert format_attr(back) == format_attr(attr)


# ---- verifier ----------------------------------------------------------------------------------

GOOD = """module {
  tt.func public @k(%a: i32, %p: !tt.ptr<i32>) {
    %c = arith.constant 1 : i32
    %r = scf.for %i = %c to %a step %c iter_args(%x = %c) -> (i32) : i32 {
      %y = arith.addi %x, %i : i32
      scf.yield %y : i32
    }
    tt.store %p, %r : !tt.ptr<i32>
    tt.return
  }
}
"""


def _good():
    m = parse(GOOD)
    verify(m)
    f = m.functions()[0]
    return m, f, f.regions[0].blocks[0]


def test_verifier_catches_use_before_definition():
    m, f, body = _good()
    body.ops[0], body.ops[1] = body.ops[1], body.ops[0]
    with pytest.raises(IrVerifyError, match="scf.for.*not defined before this use"):
        verify(m)


def test_verifier_catches_misplaced_and_missing_terminators():
    m, f, body = _good()
    body.ops.insert(0, body.ops.pop())
    with pytest.raises(IrVerifyError, match="terminator must be the last op"):
        verify(m)
    m, f, body = _good()
    loop_body = body.ops[1].regions[0].blocks[0]
    loop_body.ops.pop()
    with pytest.raises(IrVerifyError, match="must end with scf.yield"):
        verify(m)


def test_verifier_checks_region_contracts():
    m, f, body = _good()
    loop = body.ops[1]
    loop.regions[0].blocks[0].ops[-1].operands = [loop.operands[0].owner.results[0], loop.operands[0]]
    with pytest.raises(IrVerifyError, match="scf.yield operands vs results"):
        verify(m)
    m, f, body = _good()
    body.ops[1].results.append(Value(I32, "extra", body.ops[1], 1))
    with pytest.raises(IrVerifyError, match="iter_args vs results"):
        verify(m)


def test_verifier_respects_isolation_and_arity():
    m, f, body = _good()
    other, block = _func("g", [])
    block.append(new_op("arith.addi", [body.ops[0].result, body.ops[0].result], [I32]))
    block.append(new_op("tt.return"))
    m.ops.append(other)
    with pytest.raises(IrVerifyError, match="arith.addi.*not defined"):
        verify(m)
    bad = parse(
        "module {\n  tt.func @k(%p: !tt.ptr<i32>, %v: i32) {\n"
        '    %x = "tt.store"(%p, %v) : (!tt.ptr<i32>, i32) -> i32\n    tt.return\n  }\n}\n'
    )
    with pytest.raises(IrVerifyError, match="tt.store.*1 result"):
        verify(bad)


def test_verifier_checks_branch_arguments():
    text = """module {
  tt.func @f(%a: i32, %c: i1) {
    cf.cond_br %c, ^bb1(%a : i32), ^bb2
  ^bb1(%x: i32):
    tt.return
  ^bb2:
    tt.return
  }
}"""
    m = parse(text)
    verify(m)
    m.functions()[0].regions[0].blocks[1].args[0].type = F32
    with pytest.raises(IrVerifyError, match="successor arguments"):
        verify(m)


def test_verifier_takes_combine_regions_that_branch():
    """An inlined combine_fn with an early return: a multi-block tt.reduce region, each path returns."""
    text = """module {
  tt.func @f(%t: tensor<4xf32>) -> f32 {
    %r = "tt.reduce"(%t) ({
    ^bb0(%a: f32, %b: f32):
      %c = arith.cmpf ogt, %a, %b : f32
      cf.cond_br %c, ^bb1, ^bb2
    ^bb1:
      "tt.reduce.return"(%a) : (f32) -> ()
    ^bb2:
      "tt.reduce.return"(%b) : (f32) -> ()
    }) {axis = 0 : i32} : (tensor<4xf32>) -> f32
    tt.return %r : f32
  }
}"""
    m = parse(text)
    verify(m)
    reduce = m.functions()[0].regions[0].blocks[0].ops[0]
    reduce.regions[0].blocks[2].ops[-1].operands = [reduce.regions[0].blocks[0].ops[0].result]  # an i1
    with pytest.raises(IrVerifyError, match="tt.reduce.return operands"):
        verify(m)
