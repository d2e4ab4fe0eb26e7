"""The affine nodes' kept hash in C (`passes._affine.kept_hash`, passes/csrc/affine.cpp) against the Python method
of `affine._keep_hash`: the same value on every node kind and on nested trees, kept in the node's dict as "_hash"
(and read back from there), the same error for an unhashable field, and a copy that hashes again."""

from __future__ import annotations

import copy
import pickle
from dataclasses import dataclass

import pytest

from triton_plate_backend.ir.core import Value
from triton_plate_backend.passes import affine
from triton_plate_backend.passes.affine import (
    Add,
    Carried,
    CeilDiv,
    Const,
    FloorDiv,
    Max,
    Min,
    Mul,
    Select,
    Sub,
    Val,
)

pytestmark = pytest.mark.skipif(affine._affine is None, reason="passes._affine is not built")

X, Y, C = Value(None, "x"), Value(None, "y"), Value(None, "c")


def nodes():
    a, b = Val(X), Mul(Val(Y), Const(-4))
    return [
        Const(7),
        Const(-1),
        a,
        Carried(X, 2),
        Add(a, b),
        Sub(b, a),
        b,
        CeilDiv(Add(a, Const(3)), 4),
        FloorDiv(b, 8),
        Min(a, Max(b, Const(0))),
        Max(Const(1), a),
        Select(C, a, Sub(Const(0), b)),
    ]


def dataclass_hash(e) -> int:
    """What the frozen dataclass' generated __hash__ returns: the hash of the tuple of its fields."""
    return hash(tuple(getattr(e, name) for name in type(e)._hash_fields))


@pytest.mark.parametrize("i", range(len(nodes())), ids=[type(e).__name__ for e in nodes()])
def test_every_node_kind_hashes_as_the_dataclass_and_keeps_it(i):
    e = nodes()[i]  # fresh: no subtree hashed yet
    assert isinstance(type(e).__dict__["__hash__"], type(Add.__hash__))  # the C method, not a Python function
    assert "_hash" not in e.__dict__
    h = hash(e)
    assert h == dataclass_hash(e)
    assert e.__dict__["_hash"] == h
    assert hash(e) == h


def test_equal_trees_built_apart_hash_equal_and_find_each_other():
    memo = {e: i for i, e in enumerate(nodes())}
    again = nodes()
    assert [hash(e) for e in again] == [hash(e) for e in memo]
    assert [memo[e] for e in again] == list(range(len(again)))


def test_a_kept_hash_is_read_back():
    e = Add(Val(X), Const(1))
    e.__dict__["_hash"] = 12345  # what the node keeps is what it answers (no recomputing)
    assert hash(e) == 12345


def test_an_unhashable_field_raises_the_tuples_error_and_keeps_nothing():
    e = Const([1, 2])
    with pytest.raises(TypeError, match="unhashable type: 'list'"):
        hash(e)
    assert "_hash" not in e.__dict__


def test_a_copy_hashes_again():
    e = Min(Val(X), Add(Val(Y), Const(2)))
    hash(e)
    for other in (copy.copy(e), copy.deepcopy(e), pickle.loads(pickle.dumps(Min(Const(1), Const(2))))):
        assert "_hash" not in other.__dict__  # not copied: a deep copy's Values are new objects, its hash its own
        assert hash(other) == dataclass_hash(other) == other.__dict__["_hash"]


def make_class():
    @dataclass(frozen=True)
    class Pair(affine.Expr):
        a: object
        b: object

    return Pair


@pytest.mark.parametrize("built", [True, False], ids=["C", "python"])
def test_the_python_method_and_the_c_one_agree(built, monkeypatch):
    if not built:
        monkeypatch.setattr(affine, "_affine", None)
    Pair = make_class()
    affine._keep_hash(Pair)
    assert isinstance(Pair.__dict__["__hash__"], type(Add.__hash__)) is built
    for a, b in [(1, 2), (X, "s"), (Const(3), Add(Val(X), Const(1))), ((), (1, (2, 3)))]:
        p = Pair(a, b)
        assert hash(p) == hash((a, b)) == p.__dict__["_hash"]


def test_the_hash_slot_calls_the_kept_hash_and_gives_way_to_another_hash():
    """`hash_slot`: the node classes' hash slot is the kept hash itself (no method lookup and call per hash); a class
    whose __hash__ is something else keeps Python's slot, and a __hash__ set later is the one that answers."""
    classes = (Const, Val, Carried, Add, Sub, Mul, CeilDiv, FloorDiv, Min, Max, Select)
    assert all(affine._affine.hash_slot(c) is True for c in classes)

    class Other:
        def __hash__(self):
            return 5

    assert affine._affine.hash_slot(Other) is False and hash(Other()) == 5
    Pair = make_class()
    affine._keep_hash(Pair)
    p = Pair(1, Const(2))
    assert hash(p) == hash((1, Const(2))) == p.__dict__["_hash"]
    Pair.__hash__ = lambda self: 7
    assert hash(Pair(1, 2)) == 7

    class Sub2(Add):  # a subclass: the inherited method, through Python's slot
        pass

    s = Sub2(Val(X), Const(1))
    assert hash(s) == dataclass_hash(s) == s.__dict__["_hash"]
    with pytest.raises(TypeError):
        affine._affine.hash_slot(3)


def test_equality_is_the_dataclass_eq_in_c():
    """`eq_slot`: == of two nodes of one class compares their fields in C, as the dataclass' __eq__ (still the class'
    method) answers; != and other classes go through that method."""
    classes = (Const, Val, Carried, Add, Sub, Mul, CeilDiv, FloorDiv, Min, Max, Select)
    assert all(affine._affine.eq_slot(c) is True for c in classes)
    left, right = nodes(), nodes()  # equal trees built apart: == compares them field by field
    for a in left:
        generated = type(a).__dict__["__eq__"]
        for b in [*right, 7, None, X]:
            want = generated(a, b)
            assert (a == b) is (want is True if want is not NotImplemented else a is b)
            assert (a != b) is not (a == b)
    assert [a == b for a, b in zip(left, right)] == [True] * len(left)


def test_equality_in_c_runs_no_python_eq_and_keeps_identity_first():
    import sys

    a, b = Select(C, Val(X), Mul(Val(Y), Const(2))), Select(C, Val(X), Mul(Val(Y), Const(2)))
    seen = []
    sys.setprofile(lambda frame, event, arg: event == "call" and seen.append(frame.f_code.co_name))
    try:
        assert a == b and {a: 1}[b] == 1
    finally:
        sys.setprofile(None)
    assert "__eq__" not in seen
    Pair = make_class()
    affine._keep_hash(Pair)
    nan = float("nan")
    assert Pair(nan, 1) == Pair(nan, 1) and Pair(nan, 1) != Pair(float("nan"), 1)  # a tuple's ==: identity first

    class Boom:
        def __eq__(self, other):
            raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        Pair(Boom(), 1) == Pair(Boom(), 1)  # noqa: B015


def test_the_eq_slot_gives_way_to_another_eq_and_to_a_subclass():
    Pair = make_class()
    affine._keep_hash(Pair)
    assert affine._affine.eq_slot(Pair) is True and Pair(1, 2) == Pair(1, 2) and Pair(1, 2) != Pair(1, 3)

    class Sub2(Add):  # a subclass: the inherited method, through Python's slot
        pass

    assert Sub2(Val(X), Const(1)) == Sub2(Val(X), Const(1)) and Sub2(Val(X), Const(1)) != Add(Val(X), Const(1))
    Pair.__eq__ = lambda self, other: "set later"
    assert (Pair(1, 2) == Pair(3, 4)) == "set later"

    class Other:
        pass

    assert affine._affine.eq_slot(Other) is False and Other() != Other()
    with pytest.raises(TypeError):
        affine._affine.eq_slot(3)
