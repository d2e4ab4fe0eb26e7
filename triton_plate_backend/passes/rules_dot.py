"""Lowering rules for tt.dot and tt.dot_scaled: the matrix unit.

The accumulator is the C operand's tile when C dies at the dot and owns it (in place: a loop's
`acc = tl.dot(a, b, acc)` never copies), else a fresh tile C is copied into. f16/bf16 results
accumulate in an f32 tile and convert at the end. The product is tiled into m.mma instructions
on views of at most 32x32 outputs and max_k of K; a 3-D (batched) dot loops over the batch.
inputPrecision (tf32, tf32x3, ieee, bf16x3, bf16x6) becomes the m.mma suffix for f32 inputs;
other input types are exact in every mode. tt.dot_scaled scales its fp8 operands by their
e8m0 exponents (one per 32 K elements) in f32 and multiplies at ieee precision."""

from __future__ import annotations

from ..ir.core import EnumAttr, IntAttr
from .codegen import dtype_of
from .emitter import View

PRECISION_BY_INDEX = {0: "tf32", 1: "tf32x3", 2: "ieee", 3: "bf16x3", 4: "bf16x6"}


def precision(op, a_dtype: str) -> str:
    if a_dtype != "f32":
        return "ieee"
    a = op.attrs.get("inputPrecision")
    if isinstance(a, IntAttr):
        return PRECISION_BY_INDEX[a.value]
    if isinstance(a, EnumAttr):
        return a.value.lower()
    return "ieee"


def mma(ctx, acc: View, a: View, b: View, prec: str) -> None:
    """acc[M,N] += a[M,K] @ b[K,N] in pieces the matrix unit takes."""
    if acc.rank == 3:
        for i in range(acc.shape[0]):
            mma(ctx, acc.index(0, i), a.index(0, i), b.index(0, i), prec)
        return
    dim, max_k = ctx.machine.core.matrix.dim, ctx.machine.core.matrix.max_k
    (m, n), k = acc.shape, a.shape[1]
    for i in range(0, m, dim):
        mi = min(dim, m - i)
        for j in range(0, n, dim):
            nj = min(dim, n - j)
            for kk in range(0, k, max_k):
                kn = min(max_k, k - kk)
                ctx.emit(
                    "m.mma",
                    acc.sub(0, i, mi).sub(1, j, nj),
                    a.sub(0, i, mi).sub(1, kk, kn),
                    b.sub(0, kk, kn).sub(1, j, nj),
                    suffixes=(prec,),
                )


def accumulate(ctx, op, c, a: View, b: View, prec: str) -> None:
    res = op.result
    dtype, shape = dtype_of(res.type), tuple(res.type.shape)
    if dtype in ("f32", "i32", "f64"):  # the matrix unit's own accumulator types
        acc = ctx.dying_buffer(c)
        if acc is not None and acc.dtype == dtype:
            acc.buffer.owner = res
            acc.buffer.aliases.clear()
        else:
            acc = ctx.new(dtype, shape, owner=res)
            ctx.copy(acc, ctx.view(c))
        mma(ctx, acc, a, b, prec)
        ctx.bind(res, acc)
        return
    acc = ctx.new("f32", shape, what=f"f32 accumulator of a {dtype} dot")
    ctx.vec("v.fcvt", acc, ctx.view(c), suffixes=("rtne",))
    mma(ctx, acc, a, b, prec)
    out = ctx.new(dtype, shape, owner=res)
    ctx.vec("v.fcvt", out, acc, suffixes=("rtne",))
    ctx.bind(res, out)


def _lower_tt_dot(ctx, op):
    a, b, c = op.operands[:3]
    A, B = ctx.view(a), ctx.view(b)
    accumulate(ctx, op, c, A, B, precision(op, A.dtype))


def scaled(ctx, x: View, scale: View | None, k_axis: int) -> View:
    """x (fp8/bf16/fp16) as f32 times 2**(scale - 127), one scale per 32 elements along k_axis
    (no scale: x as f32). scale is [rows, K/32] for the lhs (k_axis 1) and [cols, K/32] for the
    rhs (k_axis 0)."""
    xf = ctx.new("f32", x.shape, what="scaled dot operand")
    ctx.vec("v.fcvt", xf, x, suffixes=("rtne",))
    if scale is None:
        return xf
    groups = scale.shape[1]
    si = ctx.new("i32", scale.shape, what="dot scale exponents")
    ctx.vec("v.zext", si, scale.retype("i8") if scale.dtype != "i8" else scale)
    ctx.vec("v.sub", si, si, ctx.fill(127, "i32", scale.shape))
    sf = ctx.new("f32", scale.shape, what="dot scales")
    ctx.vec("v.sitofp", sf, si)
    ctx.vec("v.exp2", sf, sf)
    if k_axis == 1:  # [M, K] as [M, G, 32]; scale [M, G] -> [M, G, 1]
        x3 = xf.reshape((x.shape[0], groups, x.shape[1] // groups))
        s3 = sf.expand(2).broadcast(x3.shape)
    else:  # [K, N] as [G, 32, N]; scale [N, G] -> [G, 1, N]
        x3 = xf.reshape((groups, x.shape[0] // groups, x.shape[1]))
        s3 = sf.permute((1, 0)).expand(1).broadcast(x3.shape)
    ctx.vec("v.mul", x3, x3, s3)
    return xf


def _lower_tt_dot_scaled(ctx, op):
    res = op.result
    ops = op.operands
    seg = getattr(op.attrs.get("operandSegmentSizes"), "values", ())
    if len(seg) == 5:  # ODS order: a, b, c, a_scale?, b_scale?
        a, b, c, *rest = ops
        sa = rest.pop(0) if seg[3] else None
        sb = rest.pop(0) if seg[4] else None
    elif len(ops) == 5 and ops[2].type == res.type:
        a, b, c, sa, sb = ops
    elif len(ops) == 5:  # text order: a scale sa, b scale sb, c
        a, sa, b, sb, c = ops
    else:
        raise ctx.error("tt.dot_scaled without operandSegmentSizes needs both scales")
    for side in ("lhs", "rhs"):
        kind = getattr(op.attrs.get(side), "value", "e4m3")
        if kind not in ("e4m3", "e5m2", "bf16", "fp16"):
            raise ctx.error(f"tt.dot_scaled with {side} = {kind} is not supported (e4m3, e5m2, bf16, fp16)")
    A = scaled(ctx, ctx.view(a), None if sa is None else ctx.view(sa), 1)
    B = scaled(ctx, ctx.view(b), None if sb is None else ctx.view(sb), 0)
    accumulate(ctx, op, c, A, B, "ieee")


RULES = {"tt.dot": _lower_tt_dot, "tt.dot_scaled": _lower_tt_dot_scaled}
