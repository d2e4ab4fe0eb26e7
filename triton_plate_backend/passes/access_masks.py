"""Mask rules of the structured access analysis: i1 tensors as boxes (per-dim lo <= i < hi).

Conjunctions (arith.andi) of comparisons (arith.cmpi) between an offset that varies along one dim with a
constant coefficient and a uniform bound become bounds on that dim (a positive coefficient a turns
`c + a*i < b` into i < cdiv(b - c, a)); uniform predicates (splat of an i1 scalar, comparisons of
splats, bounds on a size-1 dim that tt.broadcast widens) become all-or-nothing bounds on dim 0.
"""

from __future__ import annotations

from ..ir.core import Op, shape_of
from .access_forms import (
    MASK_RULES,
    SHAPE_OPS,
    Affine,
    Box,
    Forms,
    NotStructured,
    constant,
    defining_op,
    dim_map,
    predicate,
    where,
)
from .affine import ONE, ZERO, Const, Expr, add, ceil_div, floor_div, indicator, mul, neg, select, sub


def predicate_box(shape: tuple[int, ...], ind: Expr, op: Op) -> Box:
    """A uniform predicate (ind is 1 or 0) as a bound on dim 0."""
    box = Box.full(len(shape))
    if ind == ONE:
        return box
    if not shape:
        raise NotStructured(f"a scalar access with a non-constant mask: {where(op)}")
    return Box(box.lo, (mul(shape[0], ind),) + box.hi[1:])


def _mask_constant(a: Forms, op: Op) -> Box:
    v = constant(op)
    if isinstance(v, tuple):
        raise NotStructured(f"mask is a non-splat constant: {where(op)}")
    return predicate_box(shape_of(op.results[0].type), ONE if v else ZERO, op)


def _mask_splat(a: Forms, op: Op) -> Box:
    src, shape = op.operands[0], shape_of(op.results[0].type)
    sop = defining_op(src)
    if sop is not None and sop.name == "arith.constant":
        return predicate_box(shape, ONE if constant(sop) else ZERO, op)
    return Box((None,) * len(shape), (select(src, shape[0], 0),) + (None,) * (len(shape) - 1))


_FLIP = {"slt": "sgt", "sle": "sge", "sgt": "slt", "sge": "sle", "eq": "eq", "ne": "ne"}

_UNIFORM = {  # `c pred 0` as 1 or 0, for an integer c
    "slt": lambda c: indicator(neg(c)),
    "sle": lambda c: indicator(sub(1, c)),
    "sgt": indicator,
    "sge": lambda c: indicator(add(c, 1)),
    "eq": lambda c: mul(indicator(add(c, 1)), indicator(sub(1, c))),
    "ne": lambda c: sub(1, mul(indicator(add(c, 1)), indicator(sub(1, c)))),
}

_BOUNDS = {  # `a*i pred r` with a > 0, as (lo, hi) on i
    "slt": lambda r, a: (None, ceil_div(r, a)),
    "sle": lambda r, a: (None, add(floor_div(r, a), 1)),
    "sgt": lambda r, a: (add(floor_div(r, a), 1), None),
    "sge": lambda r, a: (ceil_div(r, a), None),
    "eq": lambda r, a: (ceil_div(r, a), add(floor_div(r, a), 1)),
}


def solve(d: Affine, pred: str, shape: tuple[int, ...], op: Op) -> Box:
    """The box where `d pred 0` (signed) holds."""
    varying = [k for k, c in enumerate(d.coeffs) if c != ZERO and shape[k] != 1]
    if not varying:  # uniform (on size-1 dims i_k is 0)
        return predicate_box(shape, _UNIFORM[pred](d.const), op)
    if len(varying) > 1:
        raise NotStructured(f"mask is not a box (compares across dims {varying}): {where(op)}")
    k = varying[0]
    coef = d.coeffs[k]
    if not isinstance(coef, Const):
        raise NotStructured(f"mask coefficient {coef} is not a constant: {where(op)}")
    a, r = coef.value, neg(d.const)  # c + a*i pred 0  <=>  a*i pred -c
    if a < 0:
        a, r, pred = -a, neg(r), _FLIP[pred]
    if pred not in _BOUNDS:
        raise NotStructured(f"mask is not a box ({pred} comparison): {where(op)}")
    lo, hi = _BOUNDS[pred](r, a)
    box = Box.full(len(shape))
    return Box(box.lo[:k] + (lo,) + box.lo[k + 1 :], box.hi[:k] + (hi,) + box.hi[k + 1 :])


def _mask_cmpi(a: Forms, op: Op) -> Box:
    pred, shape = predicate(op), shape_of(op.results[0].type)
    try:
        lhs, rhs = a.offset(op.operands[0]), a.offset(op.operands[1])
    except NotStructured as e:
        raise NotStructured(f"mask compares a non-affine value ({e.reason})") from None
    if pred in ("ugt", "uge"):
        lhs, rhs, pred = rhs, lhs, {"ugt": "ult", "uge": "ule"}[pred]
    if pred in ("ult", "ule"):  # x <u b with 0 <= b: 0 <= x and x <s b
        b = rhs.const if rhs.uniform else None
        if not isinstance(b, Const) or b.value < 0:
            raise NotStructured(f"mask: unsigned comparison needs a non-negative constant bound: {where(op)}")
        lower = solve(lhs, "sge", shape, op)
        return lower & solve(lhs.combine(rhs, sub), "s" + pred[1:], shape, op)
    return solve(lhs.combine(rhs, sub), pred, shape, op)


def _mask_shape(a: Forms, op: Op) -> Box:
    x = a.mask(op.operands[0])
    m, bcast, dropped = dim_map(op)
    dst = shape_of(op.results[0].type)
    lo = [None if s is None else x.lo[s] for s in m]
    hi = [None if s is None else x.hi[s] for s in m]
    inds = []  # bounds on size-1 dims that become all-or-nothing predicates
    for k in bcast:
        inds.append((lo[k], hi[k]))
        lo[k] = hi[k] = None
    inds += [(x.lo[s], x.hi[s]) for s in dropped]
    box = Box(tuple(lo), tuple(hi))
    for l_, h_ in inds:  # index 0 valid  <=>  l <= 0 < h
        if l_ is None and h_ is None:  # unbounded: the indicators are 1 (what they fold to, without folding them)
            box = box & Box.full(len(dst))
            continue
        ind = mul(indicator(ONE if l_ is None else sub(1, l_)), indicator(ONE if h_ is None else h_))
        box = box & predicate_box(dst, ind, op)
    return box


MASK_RULES.update(
    {
        "arith.constant": _mask_constant,
        "tt.splat": _mask_splat,
        "arith.andi": lambda a, op: a.mask(op.operands[0]) & a.mask(op.operands[1]),
        "arith.cmpi": _mask_cmpi,
        **{name: _mask_shape for name in SHAPE_OPS},
    }
)
