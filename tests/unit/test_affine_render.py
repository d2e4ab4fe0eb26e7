"""An affine expression's text (`str(e)`, passes/affine.py `_render`) by its node's class is the text of the one
`match` over the node kinds (`_render_matched`): every kind, the parentheses of sums and differences under a
difference and a product, products by negative constants (-1 and others), and a subclass's node (the `match`)."""

from __future__ import annotations

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

X, Y, C = Value(None, "x"), Value(None), Value(None, "c")
x, y = Val(X), Val(Y)


@dataclass(frozen=True)
class Named(Const):  # a subclass: the class patterns match it, the table does not know it
    pass


TREES = [
    (Const(5), "5"),
    (Const(-3), "-3"),
    (x, "%x"),
    (y, f"%{Y.id}"),
    (Carried(X, 1), "carried(%x, 1)"),
    (Add(x, Const(2)), "%x + 2"),
    (Sub(x, Add(y, Const(1))), f"%x - (%{Y.id} + 1)"),
    (Sub(x, Sub(y, x)), f"%x - (%{Y.id} - %x)"),
    (Sub(x, Mul(y, Const(4))), f"%x - %{Y.id}*4"),
    (Mul(Add(x, y), Sub(y, Const(1))), f"(%x + %{Y.id})*(%{Y.id} - 1)"),
    (Mul(x, Const(-1)), "-%x"),
    (Mul(Add(x, y), Const(-4)), f"-(%x + %{Y.id})*4"),
    (Mul(x, Named(-2)), "-%x*2"),
    (CeilDiv(Add(x, Const(7)), 8), "cdiv(%x + 7, 8)"),
    (FloorDiv(x, 2), "fdiv(%x, 2)"),
    (Min(x, Max(y, Const(0))), f"min(%x, max(%{Y.id}, 0))"),
    (Select(C, x, Mul(y, Const(-1))), f"select(%c, %x, -%{Y.id})"),
    (Named(9), "9"),
    (Add(Named(1), Carried(Y, 0)), f"1 + carried(%{Y.id}, 0)"),
]


@pytest.mark.parametrize("e, text", TREES, ids=[t for _, t in TREES])
def test_the_text_by_class_is_the_matched_text(e, text):
    assert str(e) == affine._render(e) == affine._render_matched(e) == text


def test_every_node_class_has_its_entry():
    assert set(affine._RENDER) == set(affine._NODES)
