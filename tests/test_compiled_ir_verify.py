"""The IR verifier's common case compiled in ir/_irwalk (`sound`, ir/csrc/irwalk.cpp, built by setup.py) against
the Python walk (`_Verifier`): on every corpus kernel it finds the IR sound where the Python walk does; on IR broken
in each way the Python walk names (and on IR it leaves to the Python walk: several blocks, branches, operands that
are not Values or equal to one), it answers False, and `verify` raises the Python walk's error, the same with and
without the module."""

from __future__ import annotations

import pytest
import ttir_fixtures

from triton_plate_backend.ir import verify as V
from triton_plate_backend.ir.core import ScalarType, Value, new_op
from triton_plate_backend.ir.verify import IrVerifyError
from triton_plate_backend.ir.vocabulary import ISOLATED, TERMINATORS
from triton_plate_backend.ttir.parser import parse

pytestmark = pytest.mark.skipif(V._sound is None, reason="ir._irwalk is not built (setup.py build_ext)")

I32 = ScalarType("i32")

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


def sound(m) -> bool:
    return V._sound(m.ops, V._FACTS, ISOLATED, TERMINATORS)


def python_verdict(m) -> str:
    """What the Python walk alone says: "" or its error."""
    try:
        v = V._Verifier()
        for op in m.ops:
            v.op(op, set())
    except IrVerifyError as e:
        return str(e)
    return ""


def verdict(m, monkeypatch, compiled: bool) -> str:
    with monkeypatch.context() as mp:
        if not compiled:
            mp.setattr(V, "_sound", None)
        try:
            V.verify(m)
        except IrVerifyError as e:
            return str(e)
    return ""


@pytest.mark.parametrize("kernel", ttir_fixtures.KERNELS)
def test_the_corpus_is_sound_where_the_python_walk_finds_it_sound(kernel):
    m = parse(ttir_fixtures.fixture_text(kernel), kernel)
    assert python_verdict(m) == ""
    several_blocks = any(len(r.blocks) > 1 for op in m.walk() for r in op.regions)
    assert sound(m) == (not several_blocks)


def _body(m):
    return m.functions()[0].regions[0].blocks[0]


def _swap(m):
    b = _body(m)
    b.ops[0], b.ops[1] = b.ops[1], b.ops[0]


def _terminator_first(m):
    b = _body(m)
    b.ops.insert(0, b.ops.pop())


def _no_yield(m):
    _body(m).ops[1].regions[0].blocks[0].ops.pop()


def _owner(m):
    _body(m).ops[0].results[0].owner = _body(m).ops[1]


def _index(m):
    _body(m).ops[0].results[0].index = 1


def _bool_index(m):  # index False == 0: the Python walk takes it, the compiled one leaves it
    _body(m).ops[0].results[0].index = False


def _arity(m):
    add = _body(m).ops[1].regions[0].blocks[0].ops[0]
    add.operands.append(add.operands[0])


def _used_after_its_block(m):
    loop = _body(m).ops[1]
    _body(m).ops[2].operands[1] = loop.regions[0].blocks[0].ops[0].result


def _across_isolation(m):
    outer = _body(m).ops[0].result
    inner = parse(GOOD).functions()[0]
    inner_body = inner.regions[0].blocks[0]
    add = new_op("arith.addi", [outer, outer], [I32])
    add.parent = inner_body
    inner_body.ops.insert(0, add)
    m.ops.append(inner)


def _region_parent(m):
    _body(m).ops[1].regions[0].parent = None


def _block_parent(m):
    _body(m).ops[1].regions[0].blocks[0].parent = None


def _op_parent(m):
    _body(m).ops[0].parent = None


def _misplaced_yield(m):
    loop_body = _body(m).ops[1].regions[0].blocks[0]
    y = loop_body.ops[-1]
    b = _body(m)
    y.parent = b
    b.ops.insert(len(b.ops) - 1, y)


def _an_equal_operand(m):  # found in the visible set by its hash and ==: the Python walk takes it
    class Alias:
        def __init__(self, v):
            self.v = v

        def __hash__(self):
            return hash(self.v)

        def __eq__(self, other):
            return other is self.v

    op = _body(m).ops[2]
    op.operands[1] = Alias(op.operands[1])


def _operands_a_tuple(m):  # the Python walk takes it: sound IR either way
    op = _body(m).ops[2]
    op.operands = tuple(op.operands)


def _region_rule(m):
    _body(m).ops[1].results.append(Value(I32, "extra", _body(m).ops[1], 1))


BROKEN = [
    _swap,
    _terminator_first,
    _no_yield,
    _owner,
    _index,
    _bool_index,
    _arity,
    _used_after_its_block,
    _across_isolation,
    _region_parent,
    _block_parent,
    _op_parent,
    _misplaced_yield,
    _an_equal_operand,
    _operands_a_tuple,
    _region_rule,
]


@pytest.mark.parametrize("breaks", BROKEN, ids=[f.__name__ for f in BROKEN])
def test_broken_ir_goes_to_the_python_walk_and_its_error(breaks, monkeypatch):
    m = parse(GOOD)
    assert sound(m)
    breaks(m)
    want = python_verdict(m)
    assert not sound(m)
    assert verdict(m, monkeypatch, True) == verdict(m, monkeypatch, False) == want
    assert (want == "") == (breaks in (_bool_index, _operands_a_tuple, _an_equal_operand))


def test_several_blocks_and_branches_go_to_the_python_walk(monkeypatch):
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
    assert not sound(m) and verdict(m, monkeypatch, True) == ""
    m.functions()[0].regions[0].blocks[1].args[0].type = ScalarType("f32")
    got = verdict(m, monkeypatch, True)
    assert "successor arguments" in got and got == verdict(m, monkeypatch, False)
