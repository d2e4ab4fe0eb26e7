"""Lowering rules for tt.dot and tt.dot_scaled: the matrix unit.

The accumulator is the C operand's tile when C dies at the dot and owns it (in place: a loop's
`acc = tl.dot(a, b, acc)` never copies), else a fresh tile C is copied into. f16/bf16 results
accumulate in an f32 tile and convert at the end. The product is one m.mma over the whole output
tile per max_k of K (a fill per instruction, so as few as possible); a 3-D (batched) dot loops
over the batch.
inputPrecision (tf32, tf32x3, ieee, bf16x3, bf16x6) becomes the m.mma suffix for f32 inputs;
other input types are exact in every mode. tt.dot_scaled unpacks e2m1 (two codes per byte along
K, or along M/N when not k_pack), scales its mx operands by their e8m0 exponents (one per 32 K
elements) or nvfp4 ones by their e4m3 scales (one per 16) in f32 and multiplies at ieee precision."""

from __future__ import annotations

from ..ir.core import Block, EnumAttr, IntAttr
from ..machine import MatrixUnit
from .context import dtype_of
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


def mma(ctx, acc: View, a: View, b: View, prec: str, blocks: bool = False) -> None:
    """acc[M,N] += a[M,K] @ b[K,N]: one m.mma over the whole output tile per chunk of K <= max_k.

    Each instruction pays the matrix unit's fill once whatever its M x N (the 32x32 array makes
    the passes), so the fewest instructions are the fastest; every output element still sums
    the same K chunks in the same order, so results do not depend on the cut."""
    if acc.rank == 3:
        for i in range(acc.shape[0]):
            mma(ctx, acc.index(0, i), a.index(0, i), b.index(0, i), prec, blocks)
        return
    max_k = ctx.machine.core.matrix.max_k
    k, m = a.shape[1], acc.shape[0]
    # a peeled last trip (rules_scf): row blocks the epilogue follows one by one. They give the whole
    # instruction's bits for every type: integer products sum exactly, and the simulator sums
    # floating-point ones in fixed blocks of MatrixUnit.dim rows (sim/sem_matrix.py), whatever M is
    rows = ctx.mma_rows if blocks and ctx.mma_rows and ctx.mma_rows % MatrixUnit.dim == 0 else m
    for r in range(0, m, rows):
        n = min(rows, m - r)
        block, a_rows = (acc, a) if n == m else (acc.sub(0, r, n), a.sub(0, r, n))
        for kk in range(0, k, max_k):
            kn = min(max_k, k - kk)
            ctx.emit("m.mma", block, a_rows.sub(1, kk, kn), b.sub(0, kk, kn), suffixes=(prec,))


def accumulate(ctx, op, c, a: View, b: View, prec: str) -> None:
    res = op.result
    dtype, shape = dtype_of(res.type), tuple(res.type.shape)
    # row blocks only for the loop's own accumulator (C the carried value: a GEMM's acc), which the
    # epilogue follows; another dot of the trip (attention's q @ k^T, or p @ v into the rescaled acc)
    # feeds whole-tile work, and each block pays a fill (the corpus attention: 7,895 -> 8,164 cycles)
    blocks = isinstance(getattr(c, "owner", None), Block)
    if dtype in ("f32", "i32", "f64"):  # the matrix unit's own accumulator types
        acc = ctx.dying_buffer(c)
        if acc is not None and acc.dtype == dtype:
            acc.buffer.owner = res
            acc.buffer.aliases.clear()
        else:
            acc = ctx.new(dtype, shape, owner=res)
            ctx.copy(acc, ctx.view(c))
        mma(ctx, acc, a, b, prec, blocks)
        ctx.bind(res, acc)
        return
    acc = ctx.new("f32", shape, what=f"f32 accumulator of a {dtype} dot")
    ctx.vec("v.fcvt", acc, ctx.view(c), suffixes=("rtne",))
    mma(ctx, acc, a, b, prec, blocks)
    out = ctx.new(dtype, shape, owner=res)
    ctx.vec("v.fcvt", out, acc, suffixes=("rtne",))
    ctx.bind(res, out)


def _lower_tt_dot(ctx, op):
    a, b, c = op.operands[:3]
    A, B = ctx.view(a), ctx.view(b)
    accumulate(ctx, op, c, A, B, precision(op, A.dtype))


FP4_HALF_BITS = 0x3F000000  # 0.5f: e2m1's one subnormal magnitude


def decode_e2m1(ctx, nib: View, dst: View) -> None:
    """dst (f32) = the e2m1 value of each 4-bit code in nib (i32, 0..15): sign bit 3, exponent
    bits 2:1 (bias 1), mantissa bit 0; codes +-1 are the subnormal +-0.5. Built as f32 bits:
    magnitude m >= 2 is (m << 22) + (126 << 23)."""
    shape = nib.shape
    bits = dst.retype("i32")
    mag = ctx.new("i32", shape, what="e2m1 magnitudes")
    ctx.vec("v.and", mag, nib, ctx.fill(7, "i32", shape))
    ctx.vec("v.shl", bits, mag, ctx.fill(22, "i32", shape))
    ctx.vec("v.add", bits, bits, ctx.fill(126 << 23, "i32", shape))
    for code, value in ((1, FP4_HALF_BITS), (0, 0)):
        hit = ctx.new("i1", shape, what="e2m1 code test")
        ctx.vec("v.cmpi", hit, mag, ctx.fill(code, "i32", shape), suffixes=("eq",))
        ctx.vec("v.select", bits, hit, ctx.fill(value, "i32", shape), bits)
    sign = ctx.new("i32", shape, what="e2m1 signs")
    ctx.vec("v.and", sign, nib, ctx.fill(8, "i32", shape))
    ctx.vec("v.shl", sign, sign, ctx.fill(28, "i32", shape))
    ctx.vec("v.or", bits, bits, sign)


def unpack_e2m1(ctx, x: View, k_axis: int) -> View:
    """x (i8, two e2m1 codes per byte along k_axis, element 2i in the low nibble) as f32 with
    k_axis twice as long: [M, K/2] -> [M, K] for the lhs, [K/2, N] -> [K, N] for the rhs (packed
    along M or N instead: k_axis is that axis)."""
    xi = ctx.new("i32", x.shape, what="packed e2m1 bytes")
    ctx.vec("v.zext", xi, x.retype("i8") if x.dtype != "i8" else x)
    halves = x.shape[: k_axis + 1] + (2,) + x.shape[k_axis + 1 :]  # [M, K/2, 2] or [K/2, 2, N]
    out = ctx.new("f32", halves, what="unpacked e2m1 operand")
    for half, shift in ((0, 0), (1, 4)):
        nib = ctx.new("i32", x.shape, what="e2m1 codes")
        ctx.vec("v.shru", nib, xi, ctx.fill(shift, "i32", x.shape))
        ctx.vec("v.and", nib, nib, ctx.fill(15, "i32", x.shape))
        decode_e2m1(ctx, nib, out.index(k_axis + 1, half))
    unpacked = list(x.shape)
    unpacked[k_axis] *= 2
    return out.reshape(tuple(unpacked))


def scaled(ctx, x: View, kind: str, scale: View | None, k_axis: int, k_packed: bool = True) -> View:
    """x (e2m1 packed in i8, fp8, bf16 or fp16) as f32 times its group's scale (no scale: x as f32).
    An e8m0 scale (mx, one per 32 elements along k_axis) is 2**(scale - 127), 0xFF (NaN) making the
    group NaN; an e4m3 scale (nvfp4, one per 16) is its value. scale is [rows, K/group] for the lhs
    (k_axis 1) and [cols, K/group] for the rhs (k_axis 0). e2m1 not k_packed: its two codes per
    byte are along the other axis (M for the lhs, N for the rhs)."""
    if kind == "e2m1":
        xf = unpack_e2m1(ctx, x, k_axis if k_packed else 1 - k_axis)
    else:
        xf = ctx.new("f32", x.shape, what="scaled dot operand")
        ctx.vec("v.fcvt", xf, x, suffixes=("rtne",))
    if scale is None:
        return xf
    shape = xf.shape
    groups = scale.shape[1]
    sf = ctx.new("f32", scale.shape, what="dot scales")
    if scale.dtype == "f8e4m3fn":  # nvfp4: the scale is an e4m3 value (its NaN code gives NaN)
        ctx.vec("v.fcvt", sf, scale, suffixes=("rtne",))
    else:  # mx: an e8m0 exponent in a byte
        si = ctx.new("i32", scale.shape, what="dot scale exponents")
        ctx.vec("v.zext", si, scale.retype("i8") if scale.dtype != "i8" else scale)
        ctx.vec("v.sub", si, si, ctx.fill(127, "i32", scale.shape))
        ctx.vec("v.sitofp", sf, si)
        ctx.vec("v.exp2", sf, sf)
        nan = ctx.new("i1", scale.shape, what="e8m0 NaN scales")
        ctx.vec("v.cmpi", nan, si, ctx.fill(255 - 127, "i32", scale.shape), suffixes=("eq",))
        ctx.vec("v.select", sf, nan, ctx.fill(float("nan"), "f32", scale.shape), sf)
    if k_axis == 1:  # [M, K] as [M, G, 32]; scale [M, G] -> [M, G, 1]
        x3 = xf.reshape((shape[0], groups, shape[1] // groups))
        s3 = sf.expand(2).broadcast(x3.shape)
    else:  # [K, N] as [G, 32, N]; scale [N, G] -> [G, 1, N]
        x3 = xf.reshape((groups, shape[0] // groups, shape[1]))
        s3 = sf.permute((1, 0)).expand(1).broadcast(x3.shape)
    ctx.vec("v.mul", x3, x3, s3)
    return xf


SCALED_KINDS = ("e2m1", "e4m3", "e5m2", "bf16", "fp16")


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
    kinds, k_packed = {}, {}
    for side in ("lhs", "rhs"):
        kinds[side] = getattr(op.attrs.get(side), "value", "e4m3")
        if kinds[side] not in SCALED_KINDS:
            raise ctx.error(f"tt.dot_scaled with {side} = {kinds[side]} is not supported ({', '.join(SCALED_KINDS)})")
        k_packed[side] = getattr(op.attrs.get(f"{side}_k_pack"), "value", True) is not False
    A = scaled(ctx, ctx.view(a), kinds["lhs"], None if sa is None else ctx.view(sa), 1, k_packed["lhs"])
    B = scaled(ctx, ctx.view(b), kinds["rhs"], None if sb is None else ctx.view(sb), 0, k_packed["rhs"])
    accumulate(ctx, op, c, A, B, "ieee")


RULES = {"tt.dot": _lower_tt_dot, "tt.dot_scaled": _lower_tt_dot_scaled}
