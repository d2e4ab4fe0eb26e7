"""Patches of Triton's interpreter where its numpy implementation misses Triton's semantics.

`bf16` and `contiguous-atomics` are always on (REFERENCE): the interpreter stores bfloat16 as uint16
and runs arithmetic, comparisons, reductions and dots on those integers (1.5 + 2.0 gives NaN), and
its atomics read a broadcast value's buffer as if it were dense. The patches compute bf16 in fp32
rounded to nearest even, as compiled Triton does, and hand the atomics dense copies. The others are named by a
RULES row of compare.py: a mismatch is explained by the row only if the interpreter, rerun under the
patch, then agrees with plate."""

from __future__ import annotations

import contextlib

import ml_dtypes
import numpy as np


def _f32(data: np.ndarray) -> np.ndarray:
    return (data.astype(np.uint32) << 16).view(np.float32)


def _round_bf16(x: np.ndarray) -> np.ndarray:
    """Any real array -> bf16 bits, one rounding to nearest even from float64 (overflow -> +-inf)."""
    x = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        q = np.maximum(np.frexp(x)[1] - 1, -126) - 7  # the exponent of bf16's last place at x
        y = np.where(np.isfinite(x) & (x != 0), np.ldexp(np.rint(np.ldexp(x, -q)), q), x)
        y = np.where(np.abs(y) > float(ml_dtypes.finfo(ml_dtypes.bfloat16).max), np.copysign(np.inf, y), y)
    return (y.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def _bf16(data: np.ndarray) -> np.ndarray:
    if data.dtype.kind == "f":
        return _round_bf16(data)
    return data.astype(np.uint16)  # a comparison's booleans, as the interpreter stores them for a bf16 operand


@contextlib.contextmanager
def bf16():
    """bfloat16 arithmetic, comparisons, reductions, scans and dots computed in fp32, rounded to bf16; casts
    to and from bf16 by value (the interpreter casts the uint16 storage, and truncates fp32 -> bf16)."""
    import triton.language as tl
    from triton.runtime import interpreter as interp

    builder, reduce_ops, handle = interp.InterpreterBuilder, interp.ReduceOps, interp.TensorHandle
    saved = builder.binary_op, builder.unary_op, builder.create_dot, reduce_ops.min_max, builder.cast_impl
    binary_op, unary_op, create_dot, min_max, cast_impl = saved

    def is_bf16(*hs) -> bool:
        return any(h.dtype.scalar == tl.bfloat16 for h in hs)

    def patched_binary(self, lhs, rhs, op):
        if not is_bf16(lhs, rhs):
            return binary_op(self, lhs, rhs, op)
        return handle(_bf16(op(_f32(lhs.data), _f32(rhs.data))), tl.bfloat16)

    def patched_unary(self, arg, op):
        if not is_bf16(arg):
            return unary_op(self, arg, op)
        return handle(_bf16(op(_f32(arg.data))), tl.bfloat16)

    def patched_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        if is_bf16(a, b):
            a, b = handle(_f32(a.data), tl.float32), handle(_f32(b.data), tl.float32)
        return create_dot(self, a, b, d, input_precision, max_num_imprecise_acc)

    def patched_min_max(self, input, val_reduce_op, idx_reduce_op=None):
        tensor = input[0] if isinstance(input, tuple) else input
        if val_reduce_op is not None and tensor.dtype == tl.bfloat16:
            op = val_reduce_op
            val_reduce_op = lambda data, **kw: _bf16(op(_f32(data), **kw).astype(np.float32))  # noqa: E731
        return min_max(self, input, val_reduce_op, idx_reduce_op)

    def patched_cast(self, src, dst_type):
        dst = dst_type.scalar
        if src.dtype.scalar != tl.bfloat16 and dst != tl.bfloat16:
            return cast_impl(self, src, dst_type)
        value = _f32(src.data) if src.dtype.scalar == tl.bfloat16 else src.data
        if dst == tl.bfloat16:
            return handle(_round_bf16(value), dst)
        return handle(value.astype(interp._get_np_dtype(dst_type)), dst)

    scan_ops = interp.ScanOps
    fast = reduce_ops.sum, scan_ops.cumsum, scan_ops.cumprod

    def on_values(method, np_op):  # the fast sum / cumsum / cumprod paths run numpy on the uint16 storage
        def patched(self, input):
            if input.dtype != tl.bfloat16:
                return method(self, input)
            kw = {"keepdims": self.keep_dims} if method is fast[0] else {}
            value = self.to_tensor(_round_bf16(np_op(_f32(input.handle.data), axis=self.axis, **kw)), input.dtype)
            return value if method is fast[0] else [value]

        return patched

    builder.binary_op, builder.unary_op, builder.create_dot = patched_binary, patched_unary, patched_dot
    reduce_ops.min_max, builder.cast_impl = patched_min_max, patched_cast
    reduce_ops.sum = on_values(fast[0], np.sum)
    scan_ops.cumsum, scan_ops.cumprod = on_values(fast[1], np.cumsum), on_values(fast[2], np.cumprod)
    try:
        yield
    finally:
        builder.binary_op, builder.unary_op, builder.create_dot, reduce_ops.min_max, builder.cast_impl = saved
        reduce_ops.sum, scan_ops.cumsum, scan_ops.cumprod = fast


@contextlib.contextmanager
def maxnum():
    """arith.maxnumf / minnumf (tl.maximum / tl.minimum) return the non-NaN operand, as the tl.max / tl.min
    reductions already do there (np.nanmax)."""
    from triton.runtime import interpreter as interp

    builder = interp.InterpreterBuilder
    saved = builder.create_maxnumf, builder.create_minnumf
    builder.create_maxnumf = lambda self, lhs, rhs: self.binary_op(lhs, rhs, np.fmax)
    builder.create_minnumf = lambda self, lhs, rhs: self.binary_op(lhs, rhs, np.fmin)
    try:
        yield
    finally:
        builder.create_maxnumf, builder.create_minnumf = saved


FLOAT8 = {"fp8e5": (ml_dtypes.float8_e5m2, 57344.0), "fp8e4nv": (ml_dtypes.float8_e4m3fn, 448.0)}
WIDER = {"fp32": np.float32, "fp16": np.float16, "fp64": np.float64}


@contextlib.contextmanager
def fp8_satfinite():
    """Downcasts to fp8e5 / fp8e4nv as PTX cvt.rn.satfinite: round to nearest even, overflow and +-inf to
    +-max finite, NaN stays NaN; upcasts from fp8 exact. The interpreter's bit-twiddling `_convert_float`
    rounds half up on one bit, clamps the exponent field (no inf, no NaN) and mishandles subnormals."""
    from triton.runtime import interpreter as interp

    saved = interp._convert_float

    def convert(input, input_dtype, output_dtype, rounding_mode):
        source, target = str(input_dtype), str(output_dtype)
        known = (*FLOAT8, *WIDER, "bf16")
        if source not in known or target not in known or (source not in FLOAT8 and target not in FLOAT8):
            return saved(input, input_dtype, output_dtype, rounding_mode)
        if source in FLOAT8:  # upcasts from fp8 are exact; the interpreter loses fp8 subnormals
            x = input.view(FLOAT8[source][0]).astype(np.float64)
        else:
            x = (_f32(input) if source == "bf16" else input.view(WIDER[source])).astype(np.float64)
        if target == "bf16":
            return _round_bf16(x)
        if target in WIDER:
            return x.astype(WIDER[target])
        fp8, largest = FLOAT8[target]
        with np.errstate(invalid="ignore"):
            x = np.where(np.abs(x) > largest, np.copysign(largest, x), x)
        return x.astype(fp8).view(np.uint8)

    interp._convert_float = convert
    try:
        yield
    finally:
        interp._convert_float = saved


def _round_tf32(x: np.ndarray) -> np.ndarray:
    """fp32 -> tf32 (10 stored mantissa bits) to nearest even, kept in fp32; FLT_MAX and its neighbours -> inf."""
    x = x.astype(np.float64)
    with np.errstate(all="ignore"):
        q = np.maximum(np.frexp(x)[1] - 1, -126) - 10
        y = np.where(np.isfinite(x) & (x != 0), np.ldexp(np.rint(np.ldexp(x, -q)), q), x)
        return y.astype(np.float32)


@contextlib.contextmanager
def tf32():
    """tl.dot with input_precision="tf32" rounds its fp32 inputs to tf32 (docs/differences.md: ties to even),
    "tf32x3" sums three tf32 products of the inputs split into big + small parts; the interpreter
    multiplies the full fp32 values for both."""
    from triton._C.libtriton import ir
    from triton.runtime import interpreter as interp

    builder, handle = interp.InterpreterBuilder, interp.TensorHandle
    saved = builder.create_dot

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        if a.data.dtype != np.float32 or input_precision not in (ir.INPUT_PRECISION.TF32, ir.INPUT_PRECISION.TF32x3):
            return saved(self, a, b, d, input_precision, max_num_imprecise_acc)
        big_a, big_b = _round_tf32(a.data), _round_tf32(b.data)
        if input_precision == ir.INPUT_PRECISION.TF32:
            return handle(np.matmul(big_a, big_b, dtype=np.float32) + d.data, d.dtype.scalar)
        with np.errstate(all="ignore"):  # 3xTF32: a_big*b_big + a_big*b_small + a_small*b_big
            small_a, small_b = _round_tf32(a.data - big_a), _round_tf32(b.data - big_b)
            out = np.matmul(big_a, small_b) + np.matmul(small_a, big_b) + np.matmul(big_a, big_b)
        return handle((out + d.data).astype(np.float32), d.dtype.scalar)

    builder.create_dot = create_dot
    try:
        yield
    finally:
        builder.create_dot = saved


def _fma64(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """x * y + z for fp32 (or narrower) operands with one rounding: the product is exact in float64, the sum
    is rounded to odd there (TwoSum's error decides the sticky bit), so the final cast rounds once."""
    p, z = x.astype(np.float64) * y.astype(np.float64), z.astype(np.float64)
    with np.errstate(all="ignore"):
        s = p + z
        bp = s - z
        err = (p - bp) + (z - (s - bp))
        bits = s.view(np.uint64)
        inexact = np.isfinite(s) & (err != 0) & ((bits & 1) == 0)
        toward = np.where((err > 0) == (s > 0), bits + 1, bits - 1).astype(np.uint64)
        s = np.where(inexact & (s != 0), toward.view(np.float64), s)
    return s


@contextlib.contextmanager
def fma():
    """tl.fma rounded once (the interpreter's x * y + z rounds the product, then the sum)."""
    from triton.runtime import interpreter as interp

    builder, handle = interp.InterpreterBuilder, interp.TensorHandle
    saved = builder.create_fma

    def create_fma(self, x, y, z):
        if z.data.dtype != np.float32:
            return saved(self, x, y, z)
        return handle(_fma64(x.data, y.data, z.data).astype(np.float32), z.dtype.scalar)

    builder.create_fma = create_fma
    try:
        yield
    finally:
        builder.create_fma = saved


@contextlib.contextmanager
def contiguous_atomics():
    """Atomics get contiguous operands: the interpreter's C++ atomic_rmw/cas read the raw buffer of a
    broadcast value (a numpy view with stride 0) past its end, i.e. garbage."""
    from triton.runtime import interpreter as interp

    builder, handle = interp.InterpreterBuilder, interp.TensorHandle
    saved = builder.create_atomic_rmw, builder.create_atomic_cas

    def dense(h):
        return handle(np.ascontiguousarray(h.data), h.dtype.scalar)

    builder.create_atomic_rmw = lambda self, op, ptr, val, mask, sem, scope: saved[0](
        self, op, dense(ptr), dense(val), dense(mask), sem, scope
    )
    builder.create_atomic_cas = lambda self, ptr, cmp, val, sem, scope: saved[1](
        self, dense(ptr), dense(cmp), dense(val), sem, scope
    )
    try:
        yield
    finally:
        builder.create_atomic_rmw, builder.create_atomic_cas = saved


PATCHES = {
    "contiguous-atomics": contiguous_atomics,
    "fma": fma,
    "tf32": tf32,
    "maxnum": maxnum,
    "bf16": bf16,
    "fp8-satfinite": fp8_satfinite,
}
REFERENCE = ("bf16", "contiguous-atomics")  # always on: the reference is the interpreter with these fixed
