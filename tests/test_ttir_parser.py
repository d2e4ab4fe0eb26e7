"""The TTIR parser against Triton's own parser (the oracle), the corpus' source lines, hand-written
forms the corpus lacks, malformed input (errors with line, column and caret) and fuzzed input."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ttir_fixtures import FILES, fixture_text, kernels_py_line, make_fixtures
from ttir_oracle import compare, plate_walk

from triton_plate_backend.ir.core import (
    ArrayAttr,
    BoolAttr,
    DenseAttr,
    EnumAttr,
    FloatAttr,
    IntAttr,
    PtrType,
    ScalarType,
    StrAttr,
    SymbolRefAttr,
    TensorDescType,
    TensorType,
    TypeAttr,
    UnitAttr,
)
from triton_plate_backend.ir.verify import verify
from triton_plate_backend.srcloc import Loc
from triton_plate_backend.ttir.errors import TtirParseError
from triton_plate_backend.ttir.parser import parse

F32, I32, I1 = ScalarType("f32"), ScalarType("i32"), ScalarType("i1")


def _read(name: str) -> str:
    return fixture_text(name)


def _ops(module, name):
    return [op for op in module.walk() if op.name == name]


def _wrap(body: str, args: str = "%a: i32, %b: f32, %p: !tt.ptr<f32>", more: str = "") -> str:
    return f"module {{\n  tt.func public @k({args}) {{\n{body}\n    tt.return\n  }}\n{more}}}\n"


# ---- the oracle: Triton's parser sees the same ops and types ------------------------------------


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_matches_triton_parser(path):
    pytest.importorskip("triton._C.libtriton")
    text = path.read_text()
    assert compare(text) == []


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_corpus_parses_and_verifies(path):
    module = parse(path.read_text(), path.name)
    verify(module)
    assert module.kernel().attrs["sym_visibility"] == StrAttr("public")
    has_locs = ".noloc." not in path.name
    locs = [op.loc for op in module.walk()]
    assert all(loc is None for loc in locs) != has_locs


@pytest.fixture(scope="module")
def source_stage_ttir():
    """Fresh TTIR straight from Triton's frontend (before its TTIR passes: ub.poison, cf.br,
    arith.bitcast, explicit `else {}`, unreachable blocks), made without a GPU."""
    pytest.importorskip("triton._C.libtriton")
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend

    gen = make_fixtures()
    target = GPUTarget("cuda", 90, 32)
    backend = make_backend(target)
    out = {}
    for name, fn, sig, const, attrs, opts in gen.load_kernels().KERNELS:
        if name in ("atomics", "while_if", "extra_ops", "reduce_misc"):
            out[name] = gen.source_ttir(target, backend, fn, sig, const, attrs, opts).str()
    return out


@pytest.mark.parametrize("name", ["atomics", "while_if", "extra_ops", "reduce_misc"])
def test_source_stage_ttir_matches_triton(source_stage_ttir, name):
    text = source_stage_ttir[name]
    module = parse(text, f"{name}.source.mlir")
    verify(module)
    assert compare(text, module) == []


def test_oracle_notices_a_difference():
    pytest.importorskip("triton._C.libtriton")
    text = _read("vec_add.ttir.noloc.mlir")
    module = parse(text)
    body = module.kernel().regions[0].blocks[0].ops
    del body[1]  # drop tt.get_program_id
    assert compare(text, module)


# ---- op forms -----------------------------------------------------------------------------------


def test_vec_add_structure_names_and_types():
    m = parse(_read("vec_add.ttir.mlir"))
    f = m.kernel()
    assert f.attrs["sym_name"] == StrAttr("vec_add")
    assert [a.name for a in f.regions[0].blocks[0].args] == ["x", "y", "o", "n"]
    assert f.attrs["arg_attrs"].values[0] == {"tt.divisibility": IntAttr(16, I32)}
    assert f.attrs["arg_attrs"].values[3] == {}
    assert f.attrs["noinline"] == BoolAttr(False)
    adds = _ops(m, "arith.addi")
    assert adds[0].result.name == "offs_2" and adds[0].result.type == TensorType((1024,), I32)
    load = _ops(m, "tt.load")[0]
    assert load.result.type == TensorType((1024,), F32) and len(load.operands) == 2
    assert _ops(m, "arith.cmpi")[0].attrs["predicate"] == EnumAttr("slt")
    assert _ops(m, "tt.get_program_id")[0].attrs["axis"] == EnumAttr("x")
    noloc = parse(_read("vec_add.ttir.noloc.mlir"))
    assert [a.name for a in noloc.kernel().regions[0].blocks[0].args] == ["arg0", "arg1", "arg2", "arg3"]


def test_load_store_flags_and_attrs():
    m = parse(_read("load_store_flags.ttir.noloc.mlir"))
    l0, l1 = _ops(m, "tt.load")[:2]
    assert l0.attrs == {"cacheModifier": EnumAttr("cg"), "evictionPolicy": EnumAttr("evict_last")}
    assert l1.attrs == {"cacheModifier": EnumAttr("ca"), "isVolatile": BoolAttr(True)}
    s0 = _ops(m, "tt.store")[0]
    assert s0.attrs == {"cacheModifier": EnumAttr("cs"), "evictionPolicy": EnumAttr("evict_first")}
    add = [op for op in _ops(m, "arith.addi") if op.attrs][0]
    assert add.attrs["tt.contiguity"] == DenseAttr((128,), TensorType((1,), I32), True)


def test_hex_float_is_exact_negative_infinity():
    m = parse(_read("attn_fwd.ttir.noloc.mlir"))
    dense = [op.attrs["value"] for op in _ops(m, "arith.constant") if isinstance(op.attrs["value"], DenseAttr)]
    ninf = [d for d in dense if d.values[0] == -math.inf]
    assert ninf and ninf[0].type == TensorType((64,), F32)
    scalar = parse(_wrap("    %c = arith.constant 0xFF800000 : f32\n    %h = arith.constant 0x7C00 : f16"))
    c, h = (op.attrs["value"] for op in _ops(scalar, "arith.constant"))
    assert c == FloatAttr(-math.inf, F32, "0xFF800000")
    assert h.value == math.inf and h.type == ScalarType("f16")


def test_control_flow_forms():
    m = parse(_read("while_if.ttir.noloc.mlir"))
    w = _ops(m, "scf.while")[0]
    assert len(w.results) == 2 and [len(r.blocks[0].args) for r in w.regions] == [2, 2]
    ifs = _ops(m, "scf.if")
    assert [len(op.results) for op in ifs] == [1, 1, 0]
    assert ifs[-1].regions[0].blocks[0].ops[-1].name == "scf.yield"  # implicit terminator restored
    assert ifs[-1].regions[1].blocks == []
    e = parse(_read("extra_ops.ttir.noloc.mlir"))
    br = _ops(e, "cf.cond_br")[0]
    body = e.kernel().regions[0]
    assert br.successors == body.blocks[1:3] and br.attrs["operandSegmentSizes"] == ArrayAttr((1, 0, 0), "i32")
    loops = _ops(parse(_read("rand_loops.ttir.noloc.mlir")), "scf.for")
    assert loops[0].attrs == {"tt.num_stages": IntAttr(3, I32)}
    assert loops[-1].attrs == {"tt.disallow_acc_multi_buffer": UnitAttr()}
    assert [len(op.results) for op in loops] == [1] * len(loops)


def test_reduce_multi_result_group_and_call():
    m = parse(_read("reduce_misc.ttir.noloc.mlir"))
    red = _ops(m, "tt.reduce")[0]
    assert [r.name for r in red.results] == ["11#0", "11#1"] and red.attrs["axis"] == IntAttr(1, I32)
    assert len(red.regions[0].blocks[0].args) == 4
    store = _ops(m, "tt.store")[0]
    assert store.operands[1] is red.results[0]  # %11#0
    call = _ops(m, "tt.call")[0]
    assert call.attrs["callee"] == SymbolRefAttr("kernels._helper__fp32_fp32")
    helper = [f for f in m.functions() if f.attrs.get("sym_visibility") == StrAttr("private")][0]
    assert helper.attrs["function_type"].type.results == (F32,)


def test_pointer_and_descriptor_types():
    m = parse(_read("block_ptr_keepbp.ttir.noloc.mlir"))
    mtp = _ops(m, "tt.make_tensor_ptr")[0]
    assert mtp.result.type == PtrType(TensorType((32, 64), ScalarType("f16")))
    assert mtp.attrs["order"] == ArrayAttr((1, 0), "i32")
    assert _ops(m, "tt.load")[0].attrs["boundaryCheck"] == ArrayAttr((0, 1), "i32")
    d = parse(_read("tensor_desc.ttir.noloc.mlir"))
    desc = _ops(d, "tt.make_tensor_descriptor")[0]
    assert desc.result.type == TensorDescType(TensorType((64, 64), ScalarType("f16")))


FORMS = """
    %c1 = arith.constant 1 : i32
    %t = arith.constant true
    %d = arith.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>
    %bits = arith.constant dense<[true, false]> : tensor<2xi1>
    %hexes = arith.constant dense<[0xFF800000, 1.5]> : tensor<2xf32>
    %raw = arith.constant dense<"0x0000803F0000C0BF"> : tensor<2xf32>
    %cnd = arith.cmpi eq, %a, %c1 : i32
    scf.if %cnd {
    } else {
    }
    %f = arith.addf %b, %b fastmath<fast> : f32
    %g = arith.bitcast %f : f32 to i32
    %u = ub.poison : f32
    %s:2 = scf.for unsigned %i = %c1 to %a step %c1 iter_args(%x = %a, %y = %b) -> (i32, f32) : i32 {
      %z = arith.addi %x, %i : i32
      scf.yield %z, %y : i32, f32
    }
    scf.for %j = %c1 to %a step %c1 : i32 {
    } {tt.loop_unroll_factor = 2 : i32}
    %r = tt.call @helper(%s#0) : (i32) -> i32
    "test.anything"(%r) {str = "q\\"uote\\\\ \\0A", arr = [1, "two", @sym], ty = tensor<4xf32>,
                         e = #tt<cache ca>, flag} : (i32) -> ()
    %m = tt.splat %p : !tt.ptr<f32> -> tensor<4x!tt.ptr<f32>>
    %n = tt.load %m cacheModifier = ca : tensor<4x!tt.ptr<f32>>
    tt.print "v: " {hex = false, isSigned = array<i32: 0>} : %n : tensor<4xf32>"""


def test_forms_the_corpus_lacks():
    helper = "  tt.func private @helper(%v: i32) -> i32 {\n    tt.return %v : i32\n  }\n"
    m = parse(_wrap(FORMS, more=helper))
    verify(m)
    by = {op.results[0].name: op for op in m.walk() if op.results}
    assert by["t"].attrs["value"] == BoolAttr(True) and by["t"].result.type == I1
    assert by["d"].attrs["value"] == DenseAttr((1, 2, 3, 4), TensorType((2, 2), I32), splat=False)
    assert by["bits"].attrs["value"].values == (True, False)
    assert by["hexes"].attrs["value"].values == (-math.inf, 1.5)
    assert by["raw"].attrs["value"] == DenseAttr((1.0, -1.5), TensorType((2,), F32), splat=False)
    if_op = _ops(m, "scf.if")[0]  # an explicit `else {}` gets a block and its yield; no else: no block
    assert [[o.name for o in r.blocks[0].ops] for r in if_op.regions] == [["scf.yield"], ["scf.yield"]]
    assert by["f"].attrs["fastmath"] == EnumAttr("fast", "#arith.fastmath<fast>")
    assert by["g"].result.type == I32 and by["u"].result.type == F32
    loop = by["s#0"]
    assert loop.attrs["unsignedCmp"] == UnitAttr() and [r.name for r in loop.results] == ["s#0", "s#1"]
    empty = _ops(m, "scf.for")[1]
    assert empty.regions[0].blocks[0].ops[-1].name == "scf.yield"
    assert empty.attrs["tt.loop_unroll_factor"] == IntAttr(2, I32)
    anything = _ops(m, "test.anything")[0].attrs
    assert anything["str"] == StrAttr('q"uote\\ \n')
    assert anything["arr"] == ArrayAttr((IntAttr(1), StrAttr("two"), SymbolRefAttr("sym")))
    assert anything["ty"] == TypeAttr(TensorType((4,), F32))
    assert anything["e"] == EnumAttr("ca", "#tt<cache ca>") and anything["flag"] == UnitAttr()
    assert _ops(m, "tt.print")[0].attrs["prefix"] == StrAttr("v: ")


ORACLE_SNIPPETS = {
    "histogram_mask": "    %h = tt.histogram %v, %m : tensor<8xi32> -> tensor<4xi32>",
    "inline_asm_pair": '    %r:2 = tt.elementwise_inline_asm "asm" {constraints = "=r,=r,r", packed_element = 1 : i32, '
    "pure = true} %v : tensor<8xi32> -> tensor<8xi32>, tensor<8xf32>",
    "reshape_flags": "    %r = tt.reshape %v allow_reorder efficient_layout : tensor<8xi32> -> tensor<2x4xi32>",
    "arith_misc": "    %c = arith.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 0xFF800000]> : tensor<8xf32>\n"
    "    %d = arith.addf %x, %c fastmath<fast> : tensor<8xf32>\n    %u = ub.poison : f32\n"
    "    %e = arith.addi %i, %i overflow<nsw> : i32\n    %f = arith.bitcast %i : i32 to f32\n"
    "    %g = math.fma %x, %x, %x : tensor<8xf32>",
    "unsplat_and_scalar_select": "    %one = arith.constant dense<true> : tensor<1xi1>\n"
    "    %c = tt.unsplat %one : tensor<1xi1>\n    %s = arith.select %c, %x, %x : tensor<8xf32>",
    "loop_and_branch": "    %s = scf.for %k = %i to %i step %i iter_args(%acc = %x) -> (tensor<8xf32>) : i32 {\n"
    "      scf.yield %acc : tensor<8xf32>\n    }\n    cf.br ^bb1(%i : i32)\n  ^bb1(%z: i32):",
}


@pytest.mark.parametrize("name", sorted(ORACLE_SNIPPETS))
def test_hand_written_forms_match_triton(name):
    pytest.importorskip("triton._C.libtriton")
    text = _wrap(ORACLE_SNIPPETS[name], args="%v: tensor<8xi32>, %m: tensor<8xi1>, %x: tensor<8xf32>, %i: i32")
    verify(parse(text))
    assert compare(text) == []


def test_branches_with_arguments_and_forward_reference():
    text = """module {
  tt.func @f(%a: i32) -> i32 {
    cf.br ^bb2(%a : i32)
  ^bb1:
    tt.return %x : i32
  ^bb2(%v: i32):
    %x = arith.addi %v, %v : i32
    %c = arith.cmpi eq, %x, %v : i32
    cf.cond_br %c, ^bb1, ^bb2(%x : i32)
  }
}"""
    m = parse(text)
    verify(m)
    f = m.functions()[0]
    ret = f.regions[0].blocks[1].ops[0]
    add = f.regions[0].blocks[2].ops[0]
    assert ret.operands[0] is add.result  # the forward use resolved to the definition
    cbr = f.regions[0].blocks[2].ops[-1]
    assert cbr.attrs["operandSegmentSizes"] == ArrayAttr((1, 0, 1), "i32")


def test_generic_and_custom_forms_agree():
    custom = _wrap("    %x = arith.addi %a, %a : i32\n    %y = tt.splat %x : i32 -> tensor<8xi32>")
    generic = _wrap(
        '    %x = "arith.addi"(%a, %a) : (i32, i32) -> i32\n    %y = "tt.splat"(%x) : (i32) -> tensor<8xi32>'
    )
    assert plate_walk(parse(custom)) == plate_walk(parse(generic))


# ---- locations --------------------------------------------------------------------------------


def _line(loc: Loc) -> str:
    return kernels_py_line(loc.line)


def test_locations_point_at_kernels_py():
    m = parse(_read("vec_add.ttir.mlir"))
    assert m.kernel().loc == Loc("kernels.py", 19, 0)
    assert "def vec_add" in _line(m.kernel().loc)
    pid = _ops(m, "tt.get_program_id")[0]
    assert pid.loc == Loc("kernels.py", 20, 24, "pid") and "tl.program_id(0)" in _line(pid.loc)
    assert _ops(m, "arith.constant")[0].loc == Loc()  # loc(unknown)
    assert "tl.store" in _line(_ops(m, "tt.store")[0].loc)


def test_callsite_locations_resolve_to_the_kernel_line():
    m = parse(_read("softmax.ttir.mlir"))
    red = _ops(m, "tt.reduce")  # tl.max / tl.sum inlined from triton/language/standard.py
    assert [(r.loc.line, r.loc.name) for r in red] == [(34, "x"), (36, "den")]
    assert "tl.max" in _line(red[0].loc) and "tl.sum" in _line(red[1].loc)
    r = parse(_read("reduce_misc.ttir.mlir"))
    combine = _ops(r, "tt.reduce")[1]  # tl.reduce(..., _combine): the user's combine fn stays visible
    cmp = combine.regions[0].blocks[0].ops[0]
    assert cmp.loc.file == "kernels.py" and "a > b" in _line(cmp.loc)


def test_forward_location_aliases_resolve():
    body = "    %x = arith.addi %a, %a : i32 loc(#loc2)\n    %y = arith.addi %x, %x : i32 loc(#loc3)"
    aliases = '#loc1 = loc("k.py":3:4)\n#loc2 = loc("x"(#loc1))\n#loc3 = loc(fused[#loc4, "y"("k.py":5:6)])\n'
    m = parse(_wrap(body) + aliases + "#loc4 = loc(unknown)\n")
    assert [op.loc for op in _ops(m, "arith.addi")] == [Loc("k.py", 3, 4, "x"), Loc("k.py", 5, 6, "y")]


# ---- errors -----------------------------------------------------------------------------------

BAD = [
    ("    %x = tt.bogus %a : i32", "unknown op 'tt.bogus'", (3, 10)),
    ("    %x = arith.addi %a, %nope : i32", "undefined SSA value '%nope'", (3, 25)),
    ("    %x = arith.addi %a, %a i32", "expected ':'", (3, 28)),
    ("    %x = tt.splat %a : i32 -> tensor<4xq32>", "expected a type", (3, 31)),
    ('    tt.print "oops : %a : i32', "expected a string", (3, 14)),
    ("    %x = arith.addi %a, %b : i32", "operand %b has type f32", (3, 28)),
    ("    %x = arith.addi %a, %a : i32\n    %x = arith.addi %a, %a : i32", "redefinition", (4, 5)),
    ("    %x = arith.addi %a, %a : i32 loc(#nowhere)", "#nowhere", (3, 34)),
]


@pytest.mark.parametrize("body,message,where", BAD, ids=[b[1] for b in BAD])
def test_errors_name_line_column_and_caret(body, message, where):
    with pytest.raises(TtirParseError) as info:
        parse(_wrap(body), "bad.ttir")
    e = info.value
    assert message in str(e) and "bad.ttir" in str(e)
    if where is not None:
        assert (e.line, e.col) == where
        src, caret = str(e).splitlines()[-2:]
        assert src.strip() == e.text.strip() and caret.index("^") - 4 == e.col - 1


def test_truncated_input_is_a_parse_error():
    text = _read("vec_add.ttir.noloc.mlir")
    with pytest.raises(TtirParseError, match="end of input|expected"):
        parse(text[: len(text) // 2])


_SMALL = [p.read_text() for p in FILES if p.stat().st_size < 8000]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzzed_input_raises_only_parse_errors(data):
    text = data.draw(st.sampled_from(_SMALL))
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(text)))
        if data.draw(st.booleans()):
            text = text[:i] + text[i + data.draw(st.integers(1, 12)) :]
        else:
            piece = data.draw(st.sampled_from(list('%^@#!"(){}[]<>,:=x0-.\\ \n') + ["loc(", "tensor<", "^bb1"]))
            text = text[:i] + piece + text[i:]
    try:
        parse(text)
    except TtirParseError as e:
        assert "internal parser error" not in str(e), str(e)


def test_a_released_module_is_freed_without_the_cycle_collector():
    """ir.core.release (the pasm stage's, once code generation has read the module): parent and owner links
    dropped, reference counting alone frees the module's ops, blocks and values; unreleased, the same
    module is one reference cycle that only the cycle collector frees."""
    import gc
    import weakref

    from triton_plate_backend.ir.core import release
    from triton_plate_backend.passes.pipeline import run_passes

    def kept_after_del(released: bool) -> bool:
        module = run_passes(parse(_read("softmax.ttir.mlir"), "softmax.ttir"))
        ops = list(module.walk())
        assert any(op.regions for op in ops) and any(op.results for op in ops)
        refs = [weakref.ref(op) for op in ops]
        if released:
            release(module)
            assert all(op.parent is None and all(v.owner is None for v in op.results) for op in ops)
        del module, ops
        return any(r() is not None for r in refs)

    was_on = gc.isenabled()
    gc.disable()
    try:
        assert kept_after_del(released=False)
        gc.collect()
        assert not kept_after_del(released=True)
    finally:
        gc.collect()
        if was_on:
            gc.enable()
