"""Structured loads and stores: access analysis (passes/access.py) proved the pointer tensor is
base + affine offsets with a box mask, so the op becomes one strided dma.load / dma.store whose
base, strides and bounds are scalar registers materialised from the analysis' expressions
(`passes/affine.py` Exprs: Const, Val, Add/Sub/Mul, CeilDiv/FloorDiv, Min/Max, Select, Carried).

A bound that is None (no bound) becomes a register holding +-2**62, which no index reaches."""

from __future__ import annotations

from ..isa.table import ITEMSIZE
from .affine import Add, CeilDiv, Const, FloorDiv, Max, Min, Mul, Select, Sub, Val
from .affine import Carried as CarriedExpr
from .codegen import DTYPE
from .emitter import Imm, Token, VReg

HUGE = 1 << 62


def _s(ctx, mnemonic, a, b) -> VReg:
    d = VReg()
    ctx.emit(mnemonic, d, a, b, suffixes=("i64",))
    return d


def _floor_div(ctx, a: VReg, c: int) -> VReg:
    """floor(a / c) for a constant c > 0: truncating division, minus one when the remainder is negative."""
    cr = ctx.li(c)
    q = _s(ctx, "s.divs", a, cr)
    r = _s(ctx, "s.rems", a, cr)
    negative = VReg()
    ctx.emit("s.cmpi", negative, r, ctx.li(0), suffixes=("slt", "i64"))
    return _s(ctx, "s.sub", q, negative)


def materialize(ctx, e, memo: dict) -> VReg:
    """An affine Expr as a scalar register (64-bit arithmetic)."""
    if e in memo:
        return memo[e]
    match e:
        case Const(v):
            r = ctx.li(int(v))
        case Val(v):
            r = ctx.reg(v)
        case CarriedExpr(arg, k):
            r = ctx.companions[arg][k]
        case Add(a, b):
            r = _s(ctx, "s.add", materialize(ctx, a, memo), materialize(ctx, b, memo))
        case Sub(a, b):
            r = _s(ctx, "s.sub", materialize(ctx, a, memo), materialize(ctx, b, memo))
        case Mul(a, b):
            r = _s(ctx, "s.mul", materialize(ctx, a, memo), materialize(ctx, b, memo))
        case FloorDiv(a, c):
            r = _floor_div(ctx, materialize(ctx, a, memo), c)
        case CeilDiv(a, c):  # ceil(a / c) = -floor(-a / c)
            na = _s(ctx, "s.sub", ctx.li(0), materialize(ctx, a, memo))
            r = _s(ctx, "s.sub", ctx.li(0), _floor_div(ctx, na, c))
        case Min(a, b):
            r = _s(ctx, "s.mins", materialize(ctx, a, memo), materialize(ctx, b, memo))
        case Max(a, b):
            r = _s(ctx, "s.maxs", materialize(ctx, a, memo), materialize(ctx, b, memo))
        case Select(cond, a, b):
            r = VReg()
            ctx.emit("s.select", r, ctx.reg(cond), materialize(ctx, a, memo), materialize(ctx, b, memo))
        case _:
            raise ctx.error(f"internal: cannot materialise access expression {e!r}")
    memo[e] = r
    return r


def _bound(ctx, e, default, memo):
    return ctx.li(default) if e is None else materialize(ctx, e, memo)


def descriptor(ctx, acc, memo: dict | None = None):
    """(start byte address, strides, lo, hi) registers of a StructuredAccess; a 0-d access (scalar
    pointer) becomes a 1-element box. memo may pre-bind sub-expressions (a prefetch binds the loop
    counter and companions to their next-iteration values)."""
    memo = {} if memo is None else memo
    isz = ITEMSIZE[DTYPE[acc.element]] if acc.element in DTYPE else 8
    base = materialize(ctx, acc.base, memo)
    start = _s(ctx, "s.add", base, _s(ctx, "s.mul", materialize(ctx, acc.offset, memo), ctx.li(isz)))
    strides = tuple(materialize(ctx, s, memo) for s in acc.strides) or (ctx.li(0),)
    lo = tuple(_bound(ctx, x, -HUGE, memo) for x in acc.lo) or (ctx.li(-HUGE),)
    hi = tuple(_bound(ctx, x, HUGE, memo) for x in acc.hi) or (ctx.li(HUGE),)
    return start, strides, lo, hi


def lower_structured(ctx, op) -> bool:
    """Emit a strided DMA for op when codegen's demand analysis chose one; else False."""
    acc = ctx.demand.strided.get(op) if ctx.demand is not None else None
    if acc is None:
        return False
    if op in ctx.prefetches:  # software-pipelined: the DMA was issued an iteration ago
        from .prefetch import consume

        consume(ctx, ctx.prefetches[op])
        return True
    from .rules_memory import bind_loaded, fill_imm, shape_of_result

    start, strides, lo, hi = descriptor(ctx, acc)
    if op.name == "tt.load":
        res = op.result
        shape = shape_of_result(res)
        dst = ctx.new(DTYPE[acc.element] if acc.element in DTYPE else "i64", shape, owner=res)
        fill = 0 if acc.other is None else acc.other
        ctx.emit("dma.load", Token(), dst, start, strides, lo, hi, fill_imm(dst.dtype, fill))
        bind_loaded(ctx, res, dst)
    else:
        val = op.operands[1]
        ctx.emit("dma.store", Token(), ctx.view(val, shape_of_result(val)), start, strides, lo, hi)
    return True


def init_companions(ctx, loop) -> list:
    """Before an scf.for: companion registers of its carried pointers, set to their init values."""
    homes = []
    for arg, cp in ctx.demand.companions.get(loop, {}).items() if ctx.demand is not None else ():
        memo: dict = {}
        regs = [VReg("carried") for _ in cp.init]
        for r, e in zip(regs, cp.init):
            ctx.emit("s.mov", r, materialize(ctx, e, memo))
        ctx.companions[arg] = regs
        homes.append((regs, cp))
    return homes


def step_companions(ctx, homes) -> None:
    """At the scf.yield: advance every companion by its step."""
    for regs, cp in homes:
        memo: dict = {}
        steps = [materialize(ctx, e, memo) for e in cp.step]
        for r, s in zip(regs, steps):
            ctx.emit("s.add", r, r, s, suffixes=("i64",))


__all__ = ["lower_structured", "materialize", "init_companions", "step_companions", "Imm"]
