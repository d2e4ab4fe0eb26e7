"""Conversions to and from Triton's ``tl.float8e4b15``, built from integer TTIR ops.

fp8e4b15 has no MLIR type: Triton types its tensors ``i8`` in TTIR and asks the backend for the
conversions (``codegen_fns["convert_custom_types"]``, called by ``semantic.cast``). Every other
op on the type is plain i8 (loads, stores, ``tl.abs`` as ``& 0x7f``), so plate needs no ISA type
for it: these functions emit the bit manipulation, which the existing lowering runs bit-exactly.

The format: sign, 4 exponent bits with bias 15, 3 mantissa bits, subnormals at exponent 0; no inf
or NaN. Its exponent field is fp16's with the top bit clear, so every code is exact in fp16.

- decode (to any type): ``sign << 15 | (code & 0x7f) << 7`` is the fp16 value, exact as on CUDA
  (0x7f / 0xff decode to +-1.875); then a plain cast to the requested type.
- encode (from any type): one rounding, to nearest even (``rtne``, the default) or toward zero
  (``rtz``), saturating to +-1.75 (0x7e / 0xfe) as CUDA does; inf and NaN become +-1.75 with
  their sign, as CUDA's ``min.f16x2`` clamp makes them. CUDA rounds ties away from zero; plate
  keeps round-to-nearest-even for every narrowing conversion (docs/differences.md).
"""

from __future__ import annotations

from triton._C.libtriton import ir
from triton.language import core as tl

F32_EXP_MIN_NORMAL = 113  # biased fp32 exponent of 2**-14, fp8e4b15's smallest normal
MANTISSA_SHIFT = 20  # fp32 significand (24 bits) -> fp8e4b15 significand (4 bits)
MAX_CODE_F32 = 0x3FE00000  # fp32 bits of 1.75, the largest value an encode produces


def _retype(x, scalar_ty, sem):
    """The same i8 value seen as another 8-bit Triton type (fp8e4b15 <-> uint8): no op needed."""
    ty = x.type.with_element_ty(scalar_ty) if x.type.is_block() else scalar_ty
    return sem.tensor(x.handle, ty)


def _const(value, dtype, sem):
    return sem.scalar_constant(value, dtype)


def decode(x, dst_ty, sem):
    """fp8e4b15 tensor -> ``dst_ty`` (exact up to fp16/fp32; other types round from the exact fp16)."""
    c = sem.cast(_retype(x, tl.uint8, sem), tl.uint16)  # zero-extended code
    u16 = tl.uint16
    magnitude = sem.shl(sem.and_(c, _const(0x7F, u16, sem)), _const(7, u16, sem))
    sign = sem.shl(sem.and_(c, _const(0x80, u16, sem)), _const(8, u16, sem))
    half = sem.bitcast(sem.or_(sign, magnitude), tl.float16)
    return sem.cast(half, dst_ty.scalar)


def _fp32_bits_round_to_odd(x, sem):
    """fp64 -> fp32 bits truncated, lowest bit set when inexact: a later single rounding to fewer
    than 23 bits is then correct (round to odd keeps the sticky information)."""
    t = sem.cast(x, tl.float32, fp_downcast_rounding="rtz")
    inexact = sem.cast(sem.not_equal(sem.cast(t, tl.float64), x), tl.int32)
    return sem.or_(sem.bitcast(t, tl.int32), inexact)


def _fp32_bits(x, sem):
    """fp32 bits holding ``x`` exactly, or close enough that rounding them to fp8e4b15 is exact."""
    src = x.type.scalar
    if src.is_fp64():
        return _fp32_bits_round_to_odd(x, sem)
    # fp16/bf16/fp8 widen exactly; an integer of magnitude >= 2 saturates whatever its fp32 rounding
    return sem.bitcast(sem.cast(x, tl.float32), tl.int32)


def encode(x, dst_ty, rounding, sem):
    """Any tensor -> fp8e4b15 codes, rounded once (``rounding``: ir.ROUNDING_MODE, None = rtne)."""
    i32 = tl.int32

    def c(v):
        return _const(v, i32, sem)

    def add(a, b):
        return sem.add(a, b, sanitize_overflow=False)

    u = _fp32_bits(x, sem)
    sign = sem.and_(sem.lshr(u, c(24)), c(0x80))
    a = sem.minimum(sem.and_(u, c(0x7FFFFFFF)), c(MAX_CODE_F32), tl.PropagateNan.NONE)  # inf, NaN too
    exp = sem.lshr(a, c(23))
    significand = sem.or_(sem.and_(a, c(0x7FFFFF)), c(0x800000))
    # below 2**-14 the grid stays 2**-17 (subnormals): shift further; 25 leaves < 1/2, i.e. zero
    below = sem.maximum(sem.sub(c(F32_EXP_MIN_NORMAL), exp, False), c(0), tl.PropagateNan.NONE)
    shift = sem.minimum(add(c(MANTISSA_SHIFT), below), c(25), tl.PropagateNan.NONE)
    if rounding is None or rounding == ir.ROUNDING_MODE.RTNE:
        odd = sem.and_(sem.lshr(significand, shift), c(1))
        half_minus_one = sem.sub(sem.shl(c(1), sem.sub(shift, c(1), False)), c(1), False)
        significand = add(add(significand, half_minus_one), odd)
    units = sem.lshr(significand, shift)  # ulps of the value's fp8e4b15 binade; a carry moves up one
    binade = sem.maximum(exp, c(F32_EXP_MIN_NORMAL), tl.PropagateNan.NONE)
    code = add(sem.shl(sem.sub(binade, c(F32_EXP_MIN_NORMAL), False), c(3)), units)
    code8 = sem.cast(sem.or_(code, sign), tl.int8)
    return _retype(code8, tl.float8e4b15, sem)


def convert_custom_types(input, dst_ty, fp_downcast_rounding=None, _semantic=None):
    """Triton's hook for casts to or from fp8e4b15 (semantic.cast calls it for both directions)."""
    if input.type.scalar.is_fp8e4b15():
        return decode(input, dst_ty, _semantic)
    return encode(input, dst_ty, fp_downcast_rounding, _semantic)
