"""The operands of a strided DMA, shared by the rules that emit dma.load / dma.store (rules_access,
rules_memory) and the software pipeliner (prefetch): scalar registers materialised from access
analysis' affine expressions (`passes/affine.py` Exprs: Const, Val, Add/Sub/Mul, CeilDiv/FloorDiv,
Min/Max, Select, Carried), the fill immediate of a load, and binding a loaded tile to its result.

A bound that is None (no bound) becomes a register holding +-2**62, which no index reaches."""

from __future__ import annotations

import dataclasses

from ..ir.core import TensorType
from ..isa.table import ITEMSIZE
from .affine import Add, CeilDiv, Const, FloorDiv, Max, Min, Mul, Select, Sub, Val
from .affine import Carried as CarriedExpr
from .context import DTYPE, ArgRef, Ctx, is_float
from .context import Const as ConstBinding
from .emitter import Imm, View, VReg, _emit

HUGE = 1 << 62  # a bound no index reaches: "not checked"


def s_op(ctx, mnemonic, a, b, stype="i64") -> VReg:
    """One pure scalar instruction `mnemonic d, a, b` on 64-bit (or `stype`) registers; its result,
    which the caller must not write (an earlier one of the block's: `Emitter.rematerialised`)."""
    return ctx.em.rematerialised(mnemonic, a, b, suffixes=(stype,))


def _floor_div(ctx, a: VReg, c: int) -> VReg:
    """floor(a / c) for a constant c > 0: truncating division, minus one when the remainder is negative."""
    cr = ctx.li(c)
    q = s_op(ctx, "s.divs", a, cr)
    r = s_op(ctx, "s.rems", a, cr)
    negative = VReg()
    ctx.emit("s.cmpi", negative, r, ctx.li(0), suffixes=("slt", "i64"))
    return s_op(ctx, "s.sub", q, negative)


def materialize_py(ctx, e, memo: dict) -> VReg:
    """An affine Expr as a scalar register (64-bit arithmetic). `materialize` is this in C (`_emit.materialize`,
    passes/csrc/emit.cpp) where it is built: the same walk for constants, values, companions, sums, differences,
    products, minima and maxima, and this function for the other nodes; this is the reference."""
    r = memo.get(e)
    if r is not None:
        return r
    match e:
        case Const(v):
            r = ctx.li(int(v))
        case Val(v):
            r = ctx.reg(v)
        case CarriedExpr(arg, k):
            r = ctx.companions[arg][k]
        case Add(a, b):
            r = s_op(ctx, "s.add", materialize(ctx, a, memo), materialize(ctx, b, memo))
        case Sub(a, b):
            r = s_op(ctx, "s.sub", materialize(ctx, a, memo), materialize(ctx, b, memo))
        case Mul(a, b):
            r = s_op(ctx, "s.mul", materialize(ctx, a, memo), materialize(ctx, b, memo))
        case FloorDiv(a, c):
            r = _floor_div(ctx, materialize(ctx, a, memo), c)
        case CeilDiv(a, c):  # ceil(a / c) = -floor(-a / c)
            na = s_op(ctx, "s.sub", ctx.li(0), materialize(ctx, a, memo))
            r = s_op(ctx, "s.sub", ctx.li(0), _floor_div(ctx, na, c))
        case Min(a, b):
            r = s_op(ctx, "s.mins", materialize(ctx, a, memo), materialize(ctx, b, memo))
        case Max(a, b):
            r = s_op(ctx, "s.maxs", materialize(ctx, a, memo), materialize(ctx, b, memo))
        case Select(cond, a, b):
            r = VReg()
            c = memo[Val(cond)] if Val(cond) in memo else ctx.reg(cond)  # a prefetch's condition of a later trip
            ctx.emit("s.select", r, c, materialize(ctx, a, memo), materialize(ctx, b, memo))
        case _:
            raise ctx.error(f"internal: cannot materialise access expression {e!r}")
    memo[e] = r
    return r


if _emit is not None:
    _emit.init_materialize(
        Const, Val, CarriedExpr, (Add, Sub, Mul, Min, Max), materialize_py, (Ctx, ConstBinding, ArgRef)
    )
    materialize = _emit.materialize
else:  # not built (setup.py build_ext)
    materialize = materialize_py


def descriptor(ctx, acc, memo: dict | None = None):
    """(start byte address, strides, lo, hi) registers of a StructuredAccess; a 0-d access (scalar
    pointer) becomes a 1-element box. memo may pre-bind sub-expressions (a prefetch binds the loop
    counter and companions to their next-iteration values)."""
    memo = {} if memo is None else memo
    isz = ITEMSIZE[element_dtype(acc)]
    base = materialize(ctx, acc.base, memo)
    start = s_op(ctx, "s.add", base, s_op(ctx, "s.mul", materialize(ctx, acc.offset, memo), ctx.li(isz)))
    li = ctx.li  # (list displays, a missing bound its default: the same calls in the same order, without a frame each)
    strides = tuple([materialize(ctx, s, memo) for s in acc.strides]) or (li(0),)
    lo = tuple([li(-HUGE) if x is None else materialize(ctx, x, memo) for x in acc.lo]) or (li(-HUGE),)
    hi = tuple([li(HUGE) if x is None else materialize(ctx, x, memo) for x in acc.hi]) or (li(HUGE),)
    return start, strides, lo, hi


def memory_order(acc, shape) -> tuple[int, ...] | None:
    """The tile dims in the order memory has them when the last dim is not the contiguous one but
    another is (a transposed load, k[None, :] * D + d[:, None]): the DMA then moves rows of
    contiguous elements (one run each, not one per element) into a tile of that order, and the
    result is a permuted view of it (compute reads tiles through strides for free). None: keep."""
    strides = [s.value if isinstance(s, Const) else None for s in acc.strides]
    if len(shape) < 2 or len(strides) != len(shape) or strides[-1] == 1 or shape[-1] == 1:
        return None
    if not isinstance(acc.other, (int, float, type(None))):
        return None  # a tensor fill is selected in the result's own layout
    unit = [k for k, st in enumerate(strides) if st == 1 and shape[k] > 1]
    if len(unit) != 1:
        return None
    return tuple(k for k in range(len(shape)) if k != unit[0]) + (unit[0],)


def reorder(acc, order: tuple[int, ...]):
    """The StructuredAccess with its tile dims in `order` (strides and bounds follow their dims)."""
    return dataclasses.replace(
        acc,
        strides=tuple(acc.strides[k] for k in order),
        lo=tuple(acc.lo[k] for k in order),
        hi=tuple(acc.hi[k] for k in order),
    )


def inverse(order: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(sorted(range(len(order)), key=lambda k: order[k]))


def element_dtype(acc) -> str:
    """The ISA dtype of a StructuredAccess' elements (pointers to pointers: i64 addresses)."""
    return DTYPE.get(acc.element, "i64")


def fill_imm(dtype: str, value) -> Imm:
    if isinstance(value, bool):
        value = int(value)
    return Imm(float(value) if is_float(dtype) else int(value))


def shape_of_result(v):
    return tuple(v.type.shape) if isinstance(v.type, TensorType) else (1,)


def bind_loaded(ctx, result, tile: View) -> None:
    if isinstance(result.type, TensorType):
        ctx.bind(result, tile)
    else:
        r = VReg()
        ctx.emit("v.extract", r, tile, Imm(0))
        ctx.bind(result, r)
