"""The TTIR op vocabulary (ir/vocabulary.py): it covers the TTIR surface, its rows are coherent,
and the verifier enforces what it declares (operand/result counts, terminators, parent ops)."""

from __future__ import annotations

import dataclasses

import pytest
from ttir_surface import SOURCE_ONLY_OPS, TTIR_OPS

from triton_plate_backend.errors import PlateError
from triton_plate_backend.ir.core import ScalarType, Value
from triton_plate_backend.ir.verify import IrVerifyError, verify
from triton_plate_backend.ir.vocabulary import (
    ISOLATED,
    OPS,
    REGION_KINDS,
    TERMINATORS,
    OpDef,
    VocabularyError,
    region_terminators,
)
from triton_plate_backend.ttir.ops import CUSTOM_FORMATS
from triton_plate_backend.ttir.parser import parse

I32 = ScalarType("i32")


def test_the_vocabulary_covers_the_ttir_surface():
    assert len(TTIR_OPS) > 100 and len(set(TTIR_OPS)) == len(TTIR_OPS)
    missing = sorted(set(TTIR_OPS + SOURCE_ONLY_OPS) - set(OPS))
    assert not missing, f"TTIR ops with no row in ir/vocabulary.py: {missing}"


def test_every_op_the_parser_has_a_form_for_is_in_the_vocabulary():
    # `module` is how builtin.module prints; its format renames the op
    unknown = sorted(set(CUSTOM_FORMATS) - set(OPS) - {"module"})
    assert not unknown, f"custom forms of ops with no row in ir/vocabulary.py: {unknown}"


def test_every_non_rule_op_says_why():
    for name, op in OPS.items():
        if op.lowering != "rule":
            assert len(op.why) > 20, f"{name}: {op.lowering} needs a reason a reader can act on"


def test_parents_and_terminators_fit_together():
    for name, op in OPS.items():
        for parent in op.parents:
            assert parent in OPS and OPS[parent].region != "none", f"{name}: parent {parent} has no regions"
        for k in op.reads + op.writes:
            assert k < op.operands[0], f"{name}: memory operand {k} is not always present"
    with_regions = [n for n, op in OPS.items() if op.region not in ("none", "module")]
    for name in with_regions:
        assert region_terminators(name), f"{name}: no terminator names it as its parent"
    for name in (n for n, op in OPS.items() if op.region == "combine"):
        assert len(region_terminators(name)) == 1, name
    assert TERMINATORS == {n for n, op in OPS.items() if op.terminator}
    assert {"scf.yield", "tt.return", "cf.br", "tt.reduce.return", "tt.map_elementwise.return"} <= TERMINATORS
    assert ISOLATED == {"builtin.module", "tt.func"}
    assert {op.region for op in OPS.values()} <= set(REGION_KINDS)


def test_effects_columns():
    assert OPS["tt.load"].reads == (0,) and not OPS["tt.load"].writes and not OPS["tt.load"].pure
    assert OPS["tt.atomic_cas"].reads == OPS["tt.atomic_cas"].writes == (0,)
    assert OPS["tt.print"].effect == "print" and OPS["ttg.barrier"].effect == "barrier"
    assert OPS["arith.addf"].pure and OPS["scf.yield"].pure
    # an assumption is a hint: unused, it is dead code (demand must not compute its condition)
    assert OPS["llvm.intr.assume"].pure


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(region="tree"), "region 'tree'"),
        (dict(effect="teleport"), "effect 'teleport'"),
        (dict(lowering="maybe", why="because it is late"), "lowering 'maybe'"),
        (dict(lowering="rejected"), "`why` is required"),
        (dict(why="a rule exists, so no reason"), "`why` is required"),
        (dict(operands=(2, 1)), "bad count range"),
    ],
)
def test_a_malformed_row_is_refused(change, message):
    with pytest.raises(VocabularyError, match=message) as e:
        dataclasses.replace(OpDef((1, 1), (1, 1)), **change)
    assert isinstance(e.value, PlateError)


# ---- the verifier enforces the vocabulary ----------------------------------------------------------

KERNEL = """module {
  tt.func public @k(%p: !tt.ptr<i32>, %n: i32) {
    %c = arith.constant 1 : i32
    %s = arith.addi %n, %c : i32
    %x = tt.load %p : !tt.ptr<i32> loc("k.py":4:9)
    tt.store %p, %s : !tt.ptr<i32>
    tt.return
  }
}
"""


def _kernel():
    m = parse(KERNEL)
    verify(m)
    return m, m.functions()[0].regions[0].blocks[0]


def test_too_many_operands_names_the_op_and_the_expected_count():
    m, body = _kernel()
    load = body.ops[2]
    load.operands = load.operands + [body.args[0]] * 3
    with pytest.raises(IrVerifyError, match=r"^tt\.load at k\.py:4.*: has 4 operand\(s\), expected 1\.\.3$"):
        verify(m)


def test_too_few_operands_of_an_exact_arity_op():
    m, body = _kernel()
    body.ops[1].operands = body.ops[1].operands[:1]
    with pytest.raises(IrVerifyError, match=r"arith\.addi.*has 1 operand\(s\), expected 2$"):
        verify(m)


def test_a_wrong_result_count_is_caught():
    m, body = _kernel()
    add = body.ops[1]
    add.results.append(Value(I32, "extra", add, 1))
    with pytest.raises(IrVerifyError, match=r"arith\.addi.*has 2 result\(s\), expected 1$"):
        verify(m)
    m, body = _kernel()
    store = body.ops[3]
    store.results.append(Value(I32, "r", store, 0))
    with pytest.raises(IrVerifyError, match=r"tt\.store.*has 1 result\(s\), expected 0$"):
        verify(m)


def test_ops_outside_the_vocabulary_are_left_to_codegen():
    m, body = _kernel()
    body.ops[1].name = "arith.mystery"
    body.ops[1].operands = []
    verify(m)  # codegen names the op and its types (test_codegen_pipeline)


def test_a_terminator_stands_only_in_its_parent_op():
    text = """module {
  tt.func public @k(%n: i32) {
    "tt.reduce.return"(%n) : (i32) -> ()
  }
}
"""
    m = parse(text)
    with pytest.raises(IrVerifyError, match=r"tt\.reduce\.return.*region of tt\.func; it belongs in tt\.reduce"):
        verify(m)


MULTI_BLOCK_REDUCE = """module {
  tt.func public @k(%x: tensor<64xi32>) {
    %m = "tt.reduce"(%x) <{axis = 0 : i32}> ({
    ^bb0(%a: i32, %b: i32):
      %c = arith.cmpi sgt, %a, %b : i32
      cf.cond_br %c, ^bb1, ^bb2
    ^bb1:
      tt.reduce.return %a : i32
    ^bb2:
      tt.reduce.return %b : i32
    }) : (tensor<64xi32>) -> i32
    tt.return
  }
}
"""


def test_a_combine_region_may_branch_and_return_from_several_blocks():
    m = parse(MULTI_BLOCK_REDUCE)
    verify(m)
    reduce = m.functions()[0].regions[0].blocks[0].ops[0]
    early = reduce.regions[0].blocks[1].ops[-1]
    early.operands = [reduce.regions[0].blocks[0].ops[0].result]  # an i1 where the combine returns i32
    with pytest.raises(IrVerifyError, match=r"tt\.reduce.*tt\.reduce\.return operands"):
        verify(m)


def test_every_block_of_a_map_function_ends_with_a_terminator():
    text = """module {
  tt.func public @k(%x: tensor<64xi32>) {
    %m = "tt.map_elementwise"(%x) <{pack = 1 : i32}> ({
    ^bb0(%a: i32):
      %c = arith.constant 0 : i32
      %p = arith.cmpi sgt, %a, %c : i32
      cf.cond_br %p, ^bb1, ^bb2
    ^bb1:
      "tt.map_elementwise.return"(%a) : (i32) -> ()
    ^bb2:
      "tt.map_elementwise.return"(%c) : (i32) -> ()
    }) : (tensor<64xi32>) -> tensor<64xi32>
    tt.return
  }
}
"""
    m = parse(text)
    verify(m)
    early = m.functions()[0].regions[0].blocks[0].ops[0].regions[0].blocks[1]
    early.ops.append(early.ops[0])  # a second return after the first: not last any more
    with pytest.raises(IrVerifyError, match=r"tt\.map_elementwise\.return.*terminator must be the last op"):
        verify(m)
