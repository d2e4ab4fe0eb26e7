"""The remainder rule of the structured access analysis: `x % M` (arith.remsi) of an affine offset x
as an affine offset, when the analysis proves that no tile wraps.

Templates clamp their row and column indices with `rm % M` (Inductor's mm template, the tutorial
matmul). For x = c + sum_k a_k * i_k with constant a_k >= 0 and a constant M > 0, the tile's values
lie in [c, c + span], span = sum_k a_k * (n_k - 1). When c >= 0, c is a multiple of d and d divides
M (d = gcd(M, the gcd of c's coefficients, constant included), so r = c mod M is a multiple of d and
at most M - d), and span < d, then r + span < M: x % M is r + sum_k a_k * i_k for every program.
This is a proof from the index arithmetic itself (pid_m * BLOCK_M with BLOCK_M dividing M); the
`tt.divisibility` / `tt.contiguity` hints of `tl.multiple_of` / `tl.max_contiguous` are not needed and
not trusted. Otherwise (M not a constant, M not a multiple of the block, M smaller than the block so
the tile wraps, a negative coefficient) the offset stays a gather.

c >= 0 is proved over the scalar arithmetic (program ids, non-negative constants, sums, products,
quotients and remainders of non-negative values). When it cannot be (Inductor's pid_n divides by a
group size the analysis cannot bound), a program whose c is negative would get a truncated, not a
floored, remainder: its offset then carries POISON, an element offset past every allocation, so the
DMA faults with the instruction and source line, as the gather of those negative offsets would have
at the start of a buffer, instead of reading the wrong elements.
"""

from __future__ import annotations

import math

from ..ir.core import Op, Value, shape_of
from .access_forms import OFFSET_RULES, Affine, Forms, NotStructured, constant, defining_op, where
from .affine import (
    Carried,
    CeilDiv,
    Expr,
    FloorDiv,
    Max,
    Min,
    Select,
    Val,
    add,
    const_value,
    floor_div,
    indicator,
    mul,
    neg,
    poly,
    sub,
)

POISON = 1 << 40  # elements: added to the offset of a program whose remainder would be negative

# scalar ops whose result is >= 0 when the listed operands (by index) are; arith.maxsi needs only one (_nonneg_op)
_NONNEG_ALL = {
    "arith.addi": (0, 1),
    "arith.muli": (0, 1),
    "arith.remsi": (0,),  # the remainder has the dividend's sign
    "arith.divui": (0, 1),
    "arith.remui": (0, 1),
    "arith.minsi": (0, 1),
    "arith.extsi": (0,),
    "arith.extui": (0,),
    "arith.trunci": (0,),
    "arith.index_cast": (0,),
    "arith.select": (1, 2),
}


def nonneg_value(a: Forms, v: Value) -> bool:
    """Whether the scalar v is >= 0 in every program, from how it is computed."""
    key = ("nonneg", v)
    if key not in a.memo:
        a.memo[key] = False  # cycles through block arguments prove nothing
        a.memo[key] = _nonneg_op(a, v)
    return a.memo[key]


def _yielded(op: Op, v: Value) -> list[Value]:
    """The values the branches of an scf.if yield as its result v (none when a branch is empty)."""
    i = next(i for i, r in enumerate(op.results) if r is v)
    ends = [r.blocks[0].ops[-1] for r in op.regions if r.blocks and r.blocks[0].ops]
    ok = len(ends) == 2 and all(e.name == "scf.yield" for e in ends)
    return [e.operands[i] for e in ends] if ok else []


def _nonneg_op(a: Forms, v: Value) -> bool:
    op = defining_op(v)
    if op is None:
        return False
    if op.name in ("tt.get_program_id", "tt.get_num_programs"):
        return True
    if op.name == "arith.constant":
        c = constant(op)
        return isinstance(c, int | float) and c >= 0
    if op.name == "arith.divsi":  # a non-negative dividend over a positive divisor
        d = defining_op(op.operands[1])
        c = constant(d) if d is not None and d.name == "arith.constant" else None
        return isinstance(c, int) and c > 0 and nonneg_value(a, op.operands[0])
    if op.name == "arith.maxsi":
        return any(nonneg_value(a, x) for x in op.operands)
    if op.name == "scf.if":
        ys = _yielded(op, v)
        return bool(ys) and all(nonneg_value(a, y) for y in ys)
    idx = _NONNEG_ALL.get(op.name)
    return idx is not None and all(nonneg_value(a, op.operands[i]) for i in idx)


def nonneg(a: Forms, e: Expr) -> bool:
    """Whether the expression is >= 0 in every program: non-negative coefficients over atoms that are."""
    for mono, coef in poly(e).items():
        if coef < 0 or not all(_nonneg_atom(a, x) for x in mono):
            return False
    return True


def _nonneg_atom(a: Forms, x: Expr) -> bool:
    match x:
        case Val(v):
            return nonneg_value(a, v)
        case FloorDiv(e, _) | CeilDiv(e, _):
            return nonneg(a, e)
        case Min(p, q) | Select(_, p, q):
            return nonneg(a, p) and nonneg(a, q)
        case Max(p, q):
            return nonneg(a, p) or nonneg(a, q)
        case Carried():
            return False
    return False


def divisor(a: Forms, e: Expr) -> int:
    """A non-negative integer that divides e in every program (0 when e is 0: every integer does)."""
    return math.gcd(*(c * math.prod(_atom_divisor(a, x) for x in mono) for mono, c in poly(e).items()))


def _atom_divisor(a: Forms, x: Expr) -> int:
    return divisor_value(a, x.value) if isinstance(x, Val) else 1


def divisor_value(a: Forms, v: Value) -> int:
    """A divisor of the scalar v from how it is computed; a kernel argument's is Triton's launch-time
    specialisation (`tt.divisibility`, part of the kernel's cache key, so a launch whose value breaks it
    compiles another kernel)."""
    key = ("divisor", v)
    if key not in a.memo:
        a.memo[key] = 1
        a.memo[key] = _divisor_op(a, v)
    return a.memo[key]


def _divisor_op(a: Forms, v: Value) -> int:
    op = defining_op(v)
    if op is None:
        return _argument_divisor(v)
    if op.name == "arith.constant":
        c = constant(op)
        return abs(c) if isinstance(c, int) and not isinstance(c, bool) else 1
    x = [divisor_value(a, u) for u in op.operands] if op.name != "scf.if" else []
    if op.name == "arith.muli":
        return x[0] * x[1]
    if op.name in ("arith.addi", "arith.subi"):
        return math.gcd(x[0], x[1])
    if op.name == "arith.select":
        return math.gcd(x[1], x[2])
    if op.name == "scf.if":
        ys = _yielded(op, v)
        return math.gcd(*(divisor_value(a, y) for y in ys)) if ys else 1
    if op.name in ("arith.extsi", "arith.index_cast"):
        return x[0]
    return 1


def _argument_divisor(v: Value) -> int:
    block = v.owner
    func = getattr(getattr(block, "parent", None), "parent", None)
    if func is None or func.name != "tt.func" or block is not func.regions[0].blocks[0]:
        return 1
    attrs = func.attrs.get("arg_attrs")
    pos = next(i for i, x in enumerate(block.args) if x is v)
    entry = attrs.values[pos] if attrs is not None and pos < len(attrs.values) else {}
    d = entry.get("tt.divisibility") if isinstance(entry, dict) else None
    return int(getattr(d, "value", d)) if d is not None else 1


def _off_remsi(a: Forms, op: Op) -> Affine:
    x, m = a.offset(op.operands[0]), a.offset(op.operands[1])
    M = const_value(m.const) if m.uniform else None
    if M is None or M <= 0:
        raise NotStructured(f"offset is not affine (a remainder by a non-constant or non-positive): {where(op)}")
    coeffs = [const_value(c) for c in x.coeffs]
    if any(c is None or c < 0 for c in coeffs):
        raise NotStructured(f"offset is not affine (a remainder of a non-constant or decreasing index): {where(op)}")
    shape = shape_of(op.results[0].type)
    span = sum(c * (n - 1) for c, n in zip(coeffs, shape))
    d = math.gcd(divisor(a, x.const), M)
    if span >= d:
        raise NotStructured(
            f"offset is not affine (the remainder by {M} may wrap inside the tile: its start is a multiple of "
            f"{d} only, it spans {span + 1}): {where(op)}"
        )
    r = sub(x.const, mul(floor_div(x.const, M), M))
    if not nonneg(a, x.const):
        r = add(r, mul(indicator(neg(x.const)), POISON))
    return Affine(r, x.coeffs)


OFFSET_RULES["arith.remsi"] = _off_remsi
