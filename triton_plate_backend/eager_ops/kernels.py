"""The Triton kernels of plate's eager ops (compiled by plate's backend on first use, cached as Triton
caches every kernel, and run on the simulator like any launch).

Two families, both over up to RANK strided dimensions (the launcher coalesces a tensor's dims to these):

- ``elementwise``: out[i] = FN(a[i], b[i], c[i]) for up to three broadcast operands, computed in the
  type CT (torch's promoted type, half types widened to float32 as CUDA's opmath does) and stored in
  the output's type; ``complex_binary`` does the same over complex operands as (real, imag) pairs.
- ``random_fill``/``bernoulli_tensor``/``dropout``: Philox numbers of counter ``offset + i`` under
  ``seed`` (the generator's state, rng.py), as CUDA's kernels draw them.
"""

from __future__ import annotations

import triton
import triton.language as tl
from triton.language.extra import libdevice

from ..sim.device import get_device

RANK = 4  # strided dims a kernel takes after coalescing
BLOCK = 512
STRIDES = [f"{name}{d}" for name in "oabc" for d in range(RANK)]
_NO_SPECIALIZE = ["n", "s1", "s2", "s3", *STRIDES]


def machine_of(tensor) -> str:
    """The machine preset of the device holding `tensor`: a launch option, so that a kernel compiled for
    one preset is never launched on a device reset to another (PLATE_MACHINE changed in between)."""
    return get_device(tensor.device.index).machine.name


# ---- the element functions (the table's `fn` names them) -----------------------------------------
@triton.jit
def copy(x, y, z):
    return x


@triton.jit
def add(x, y, z):
    return x + y * z  # z: alpha


@triton.jit
def sub(x, y, z):
    return x - y * z


@triton.jit
def plus(x, y, z):
    return x + y  # add with alpha 1 (ops.UNIT_ALPHA)


@triton.jit
def minus(x, y, z):
    return x - y  # sub with alpha 1


@triton.jit
def mul(x, y, z):
    return x * y


@triton.jit
def bitwise_and(x, y, z):
    return x & y


@triton.jit
def bitwise_or(x, y, z):
    return x | y


@triton.jit
def bitwise_xor(x, y, z):
    return x ^ y


@triton.jit
def neg(x, y, z):
    return -x


@triton.jit
def where(x, y, z):
    return tl.where(x != 0, y, z)


@triton.jit
def isnan(x, y, z):
    return x != x


@triton.jit
def isposinf(x, y, z):
    return x == float("inf")  # an integer input is never infinite


@triton.jit
def isneginf(x, y, z):
    return x == float("-inf")


@triton.jit
def logical_and(x, y, z):
    return (x != 0) & (y != 0)


@triton.jit
def logical_or(x, y, z):
    return (x != 0) | (y != 0)


@triton.jit
def logical_xor(x, y, z):
    return (x != 0) ^ (y != 0)


@triton.jit
def bitwise_not(x, y, z):
    return ~x


@triton.jit
def logical_not(x, y, z):
    return x == 0


@triton.jit
def exp(x, y, z):
    return tl.exp(x)


@triton.jit
def exp2(x, y, z):
    return tl.exp2(x)


@triton.jit
def log(x, y, z):
    return tl.log(x)


@triton.jit
def log1p(x, y, z):
    return libdevice.log1p(x)


@triton.jit
def sin(x, y, z):
    return tl.sin(x)


@triton.jit
def cos(x, y, z):
    return tl.cos(x)


@triton.jit
def tanh(x, y, z):
    return libdevice.tanh(x)


@triton.jit
def sigmoid(x, y, z):
    return 1.0 / (1.0 + tl.exp(-x))


@triton.jit
def abs(x, y, z):
    return tl.abs(x)


@triton.jit
def _sqrt_rn(x):
    """The correctly rounded square root: tl.sqrt_rn takes fp32 only; fp64's tl.sqrt is IEEE's (sqrt.rn.f64)."""
    if x.dtype == tl.float64:
        return tl.sqrt(x)
    else:
        return tl.sqrt_rn(x)


@triton.jit
def sqrt(x, y, z):
    return _sqrt_rn(x)


@triton.jit
def rsqrt(x, y, z):
    return 1.0 / _sqrt_rn(x)


@triton.jit
def reciprocal(x, y, z):
    return 1.0 / x


@triton.jit
def relu(x, y, z):
    return tl.maximum(x, 0)


@triton.jit
def expm1(x, y, z):
    return libdevice.expm1(x)


@triton.jit
def erf(x, y, z):
    return libdevice.erf(x)


@triton.jit
def log2(x, y, z):
    return libdevice.log2(x)


@triton.jit
def log10(x, y, z):
    return libdevice.log10(x)


@triton.jit
def erfc(x, y, z):
    return libdevice.erfc(x)


@triton.jit
def tan(x, y, z):
    return libdevice.tan(x)


@triton.jit
def asin(x, y, z):
    return libdevice.asin(x)


@triton.jit
def acos(x, y, z):
    return libdevice.acos(x)


@triton.jit
def atan(x, y, z):
    return libdevice.atan(x)


@triton.jit
def sinh(x, y, z):
    return libdevice.sinh(x)


@triton.jit
def cosh(x, y, z):
    return libdevice.cosh(x)


@triton.jit
def asinh(x, y, z):
    return libdevice.asinh(x)


@triton.jit
def acosh(x, y, z):
    return libdevice.acosh(x)


@triton.jit
def atanh(x, y, z):
    return libdevice.atanh(x)


# gelu and its gradient as ATen's kernels compute them (approximate="none": erf; "tanh": the tanh form)
SQRT1_2 = tl.constexpr(0.7071067811865476)
GELU_PDF = tl.constexpr(0.3989422804014327)  # M_2_SQRTPI * M_SQRT1_2 * 0.5: 1 / sqrt(2 pi)
GELU_BETA = tl.constexpr(0.7978845608028654)  # M_SQRT2 * M_2_SQRTPI * 0.5: sqrt(2 / pi)
GELU_KAPPA = tl.constexpr(0.044715)


@triton.jit
def gelu(x, y, z):
    return x * 0.5 * (1.0 + libdevice.erf(x * SQRT1_2))


@triton.jit
def gelu_tanh(x, y, z):
    inner = GELU_BETA * (x + GELU_KAPPA * (x * x * x))
    return 0.5 * x * (1.0 + libdevice.tanh(inner))


@triton.jit
def gelu_backward(x, y, z):
    """x: the gradient, y: gelu's input."""
    cdf = 0.5 * (1.0 + libdevice.erf(y * SQRT1_2))
    pdf = tl.exp(-0.5 * y * y) * GELU_PDF
    return x * (cdf + y * pdf)


@triton.jit
def gelu_tanh_backward(x, y, z):
    inner = GELU_BETA * (y + GELU_KAPPA * (y * y * y))
    t = libdevice.tanh(inner)
    left_derivative = 0.5 * (1.0 + t)
    right_derivative = 0.5 * y * (1.0 - t * t) * GELU_BETA * (1.0 + 3.0 * GELU_KAPPA * y * y)
    return x * (left_derivative + right_derivative)


# ceil / floor / trunc: exact in the tensor's own type; integers are their own result
@triton.jit
def ceil(x, y, z):
    if x.dtype.is_floating():
        return libdevice.ceil(x)
    return x


@triton.jit
def floor(x, y, z):
    if x.dtype.is_floating():
        return libdevice.floor(x)
    return x


@triton.jit
def trunc(x, y, z):
    if x.dtype.is_floating():
        return libdevice.trunc(x)
    return x


@triton.jit
def tanh_backward(x, y, z):
    """x: the gradient, y: tanh's output."""
    return x * (1.0 - y * y)


@triton.jit
def lerp(x, y, z):
    """x + z * (y - x) as ATen's lerp: from the far end where |weight| >= 0.5 (exact at weight 1)."""
    return tl.where(tl.abs(z) < 0.5, x + z * (y - x), y - (y - x) * (1.0 - z))


# silu and its gradient as ATen's kernels compute them (in the op math type: float32 for fp16/bf16)
@triton.jit
def silu(x, y, z):
    return x / (1.0 + tl.exp(-x))


@triton.jit
def silu_backward(x, y, z):
    """x: the gradient, y: silu's input."""
    sigmoid = 1.0 / (1.0 + tl.exp(-y))
    return x * sigmoid * (1.0 + y * (1.0 - sigmoid))


@triton.jit
def power(x, y, z):
    if x.dtype.is_floating():
        result = libdevice.pow(x, y)
    else:  # exact, wrapping in the type as the CPU's: square-and-multiply over the exponent's bits
        result = x * 0 + 1
        base = x
        e = y
        for _ in range(64):
            result = tl.where((e & 1) != 0, result * base, result)
            base = base * base
            e = e >> 1
        # a negative exponent: 1 / x rounds to 0 except for x = 1 and x = -1
        odd = (y & 1) != 0
        inverse = tl.where(x == 1, 1, tl.where(x == -1, tl.where(odd, -1, 1), 0)).to(result.dtype)
        result = tl.where(y < 0, inverse, result)
    return result


@triton.jit
def sigmoid_backward(x, y, z):
    """x: the gradient, y: sigmoid's output (ATen's a * (1 - b) * b)."""
    return x * (1.0 - y) * y


@triton.jit
def threshold_backward(x, y, z):
    """x: the gradient, y: the op's input, z: the threshold (relu's 0): no gradient where y <= z."""
    return tl.where(y <= z, 0, x)


@triton.jit
def log_sigmoid(x, y, z):
    """CUDA's log_sigmoid_forward: min(x, 0) - log1p(exp(-|x|))."""
    return tl.minimum(x, 0.0) - libdevice.log1p(tl.exp(-tl.abs(x)))


@triton.jit
def log_sigmoid_backward(x, y, z):
    """x: the gradient, y: log_sigmoid's input (CUDA's kernel, which needs no buffer)."""
    negative = y < 0
    e = tl.exp(-tl.abs(y))
    return x * (tl.where(negative, 1.0, 0.0) - tl.where(negative, 1.0, -1.0) * (e / (1.0 + e)))


@triton.jit
def sign(x, y, z):
    """ATen's (0 < x) - (x < 0): 0 for a zero and for NaN."""
    return tl.where(x > 0, 1, 0).to(x.dtype) - tl.where(x < 0, 1, 0).to(x.dtype)


@triton.jit
def maximum(x, y, z):
    """ATen's maximum / clamp_min: a NaN of either operand is the result (integers have none)."""
    return tl.where(x != x, x, tl.where(y != y, y, tl.where(x < y, y, x)))


@triton.jit
def minimum(x, y, z):
    """ATen's minimum / clamp_max: a NaN of either operand is the result."""
    return tl.where(x != x, x, tl.where(y != y, y, tl.where(y < x, y, x)))


@triton.jit
def clamp(x, y, z):
    """ATen's clamp: min(max(x, lo), hi) (hi where lo > hi), a NaN of any operand the result."""
    return minimum(maximum(x, y, z), z, z)


@triton.jit
def div(x, y, z):
    return x / y  # true division: the table computes it in the result's (floating) type


@triton.jit
def _in(value, T: tl.constexpr):
    """`value` rounded to T and back: ATen's arithmetic on Half/BFloat16 values rounds every step."""
    return value.to(T).to(value.dtype)


@triton.jit
def _floor_quotient(x, y, T: tl.constexpr):
    """ATen's div_floor_floating (c10/util/generic_math.h) step for step, each step in T (CPU and CUDA run it on
    the scalar type: Half and BFloat16 arithmetic round every operation)."""
    mod = libdevice.fmod(x, y)  # exact
    quotient = _in(_in(x - mod, T) / y, T)
    quotient = tl.where((mod != 0) & ((y < 0) != (mod < 0)), _in(quotient - 1.0, T), quotient)
    floored = libdevice.floor(quotient)
    floored = tl.where(quotient - floored > 0.5, _in(floored + 1.0, T), floored)
    result = tl.where(quotient != 0, floored, libdevice.copysign(x * 0.0, x / y))
    return tl.where(y == 0, x / y, result)


@triton.jit
def div_trunc(x, y, z):
    if x.dtype.is_floating():
        result = libdevice.trunc(x / y)
    else:  # C's integer division truncates (a zero divisor never gets here: the host raises for it)
        result = x // y
    return result


@triton.jit
def div_floor(x, y, z):
    if x.dtype.is_floating():
        result = _floor_quotient(x, y, x.dtype)
    else:  # ATen's div_floor_integer: truncation, one less when the signs differ and the division is inexact
        quotient = x // y
        remainder = x % y
        result = tl.where(((x < 0) != (y < 0)) & (remainder != 0), quotient - 1, quotient)
    return result


@triton.jit
def fmod(x, y, z):
    if x.dtype.is_floating():
        result = libdevice.fmod(x, y)
    else:  # C's %: the remainder of the truncated quotient
        result = x % y
    return result


@triton.jit
def remainder(x, y, z):
    # ATen's remainder: fmod's result moved onto the divisor's side (Python's %), floats and integers alike
    mod = fmod(x, y, z)
    return tl.where((mod != 0) & ((y < 0) != (mod < 0)), mod + y, mod)


# fp16/bf16 results: the kernels compute in float32 (opmath); ATen computes these two on the half type itself
@triton.jit
def div_trunc_fp16(x, y, z):
    return libdevice.trunc(_in(x / y, tl.float16))


@triton.jit
def div_trunc_bf16(x, y, z):
    return libdevice.trunc(_in(x / y, tl.bfloat16))


@triton.jit
def div_floor_fp16(x, y, z):
    return _floor_quotient(x, y, tl.float16)


@triton.jit
def div_floor_bf16(x, y, z):
    return _floor_quotient(x, y, tl.bfloat16)


@triton.jit
def eq(x, y, z):
    return x == y


@triton.jit
def ne(x, y, z):
    return x != y


@triton.jit
def lt(x, y, z):
    return x < y


@triton.jit
def le(x, y, z):
    return x <= y


@triton.jit
def gt(x, y, z):
    return x > y


@triton.jit
def ge(x, y, z):
    return x >= y


@triton.jit
def complex_add(ar, ai, br, bi, alpha):
    return ar + br * alpha, ai + bi * alpha


@triton.jit
def complex_sub(ar, ai, br, bi, alpha):
    return ar - br * alpha, ai - bi * alpha


@triton.jit
def complex_mul(ar, ai, br, bi, alpha):
    return ar * br - ai * bi, ar * bi + ai * br


@triton.jit
def complex_div(ar, ai, br, bi, alpha):
    # c10::complex's operator/ (numpy's): (a + bi) / (c + di) through the ratio of the smaller divisor part to the
    # larger; a zero divisor gives a / |c|, b / |d| (inf or NaN parts)
    larger_real = tl.abs(br) >= tl.abs(bi)
    zero = (br == 0) & (bi == 0)
    rat1 = bi / br
    scl1 = 1.0 / (br + bi * rat1)
    rat2 = br / bi
    scl2 = 1.0 / (bi + br * rat2)
    real = tl.where(larger_real, (ar + ai * rat1) * scl1, (ar * rat2 + ai) * scl2)
    imag = tl.where(larger_real, (ai - ar * rat1) * scl1, (ai * rat2 - ar) * scl2)
    return tl.where(zero, ar / tl.abs(br), real), tl.where(zero, ai / tl.abs(bi), imag)


@triton.jit
def complex_sgn(ar, ai, br, bi, alpha):
    # z / |z| (|z| as std::abs: the hypot of the parts), 0 for z == 0
    magnitude = libdevice.hypot(ar, ai)
    zero = (ar == 0) & (ai == 0)
    return tl.where(zero, 0.0, ar / magnitude), tl.where(zero, 0.0, ai / magnitude)


@triton.jit
def complex_exp(ar, ai, br, bi, alpha):
    e = tl.exp(ar)
    return e * tl.cos(ai), e * tl.sin(ai)


@triton.jit
def complex_log(ar, ai, br, bi, alpha):
    return 0.5 * tl.log(ar * ar + ai * ai), libdevice.atan2(ai, ar)


@triton.jit
def complex_log1p(ar, ai, br, bi, alpha):
    # near z = 0: |1 + z|^2 - 1 = 2 re + re^2 + im^2 through log1p; elsewhere (z near -1 above all) |1 + z|^2
    one = 1.0 + ar
    near = libdevice.log1p(ar * (2.0 + ar) + ai * ai)
    far = tl.log(one * one + ai * ai)
    return 0.5 * tl.where(ar * ar + ai * ai < 0.25, near, far), libdevice.atan2(ai, one)


@triton.jit
def complex_sqrt(ar, ai, br, bi, alpha):
    # std::sqrt (C's csqrt): t = sqrt((|re| + |z|) / 2); re >= 0: (t, im / 2t), else (|im| / 2t, t with im's sign);
    # 0: (0, im); an infinite imaginary part: (inf, im); re = 0: both sqrt(|im| / 2), as glibc's csqrt
    t = tl.sqrt((tl.abs(ar) + libdevice.hypot(ar, ai)) * 0.5)
    other = 0.5 * (ai / t)
    re = tl.where(ar >= 0, t, tl.abs(other))
    im = tl.where(ar >= 0, other, libdevice.copysign(t, ai))
    axis = tl.sqrt(0.5 * tl.abs(ai))
    re = tl.where(ar == 0, axis, re)
    im = tl.where(ar == 0, libdevice.copysign(axis, ai), im)
    zero = (ar == 0) & (ai == 0)
    infinite = tl.abs(ai) == float("inf")
    re = tl.where(zero, 0.0, tl.where(infinite, float("inf"), re))
    return re, tl.where(zero | infinite, ai, im)


@triton.jit
def complex_reciprocal(ar, ai, br, bi, alpha):
    # 1 / z as CUDA's (c10::complex's division, complex_div above, of 1 + 0i)
    zero = tl.zeros_like(ar)
    return complex_div(zero + 1.0, zero, ar, ai, alpha)


@triton.jit
def complex_pow(ar, ai, br, bi, alpha):
    # std::pow of complex<T> (glibc's cpow): exp(w log z), the product with IEEE's infinities and NaNs (0 ** 2.5:
    # exp(-inf + NaN i), which C's cexp makes 0; 0 ** 0 and 0 ** 1j stay NaN, as on the CPU)
    lr = 0.5 * tl.log(ar * ar + ai * ai)
    li = libdevice.atan2(ai, ar)
    pr = br * lr - bi * li
    pi = br * li + bi * lr
    magnitude = tl.exp(pr)
    vanishing = pr == -float("inf")
    return tl.where(vanishing, 0.0, magnitude * tl.cos(pi)), tl.where(vanishing, 0.0, magnitude * tl.sin(pi))


# ---- binary math and bits (ATen's CPU kernels' formulas) ----------------------------------------------------
@triton.jit
def atan2(x, y, z):
    return libdevice.atan2(x, y)


@triton.jit
def hypot(x, y, z):
    return libdevice.hypot(x, y)


@triton.jit
def logaddexp(x, y, z):
    """ATen's: a where a and b are the same infinity, else max(a, b) + log1p(exp(-|a - b|)) (NaN: NaN)."""
    m = tl.where(x < y, y, x)
    return tl.where((x == y) & (tl.abs(x) == float("inf")), x, m + libdevice.log1p(tl.exp(-tl.abs(x - y))))


@triton.jit
def logaddexp2(x, y, z):
    m = tl.where(x < y, y, x)
    inv_ln2 = tl.full(x.shape, 1.4426950408889634, x.dtype)  # 1 / ln 2 rounded to x's type, as ATen's constant
    spread = libdevice.log1p(libdevice.exp2(-tl.abs(x - y))) * inv_ln2
    return tl.where((x == y) & (tl.abs(x) == float("inf")), x, m + spread)


@triton.jit
def copysign(x, y, z):
    return libdevice.copysign(x, y)


@triton.jit
def fmax(x, y, z):
    """C's fmax: a NaN operand is ignored (NaN only when both are)."""
    return tl.where(x != x, y, tl.where(y != y, x, tl.where(x < y, y, x)))


@triton.jit
def fmin(x, y, z):
    return tl.where(x != x, y, tl.where(y != y, x, tl.where(y < x, y, x)))


@triton.jit
def heaviside(x, y, z):
    """ATen's: `values` where x == 0, else x > 0 (NaN: 0)."""
    return tl.where(x == 0, y, tl.where(x > 0, 1, 0).to(x.dtype))


@triton.jit
def frac(x, y, z):
    return x - libdevice.trunc(x)


@triton.jit
def signbit(x, y, z):
    """The sign bit (-0.0 and -NaN set) of a float; x < 0 of an integer."""
    if x.dtype == tl.float64:
        result = x.to(tl.int64, bitcast=True) < 0
    elif x.dtype.is_floating():
        result = x.to(tl.float32).to(tl.int32, bitcast=True) < 0
    else:
        result = x < 0
    return result


@triton.jit
def round_even(x, y, z):
    """torch.round: to nearest, ties to even (nearbyint); integers are themselves."""
    if x.dtype.is_floating():
        result = libdevice.nearbyint(x)
    else:
        result = x
    return result


@triton.jit
def left_shift(x, y, z):
    """ATen's lshift: 0 for a shift past the width or negative."""
    bits: tl.constexpr = x.dtype.primitive_bitwidth
    outside = (y < 0) | (y >= bits)
    return tl.where(outside, 0, x << tl.where(outside, 0, y)).to(x.dtype)


@triton.jit
def right_shift(x, y, z):
    """ATen's rshift: a shift past the width or negative shifts a signed integer by width - 1 (its sign fills the
    result) and gives 0 of an unsigned one."""
    bits: tl.constexpr = x.dtype.primitive_bitwidth
    outside = (y < 0) | (y >= bits)
    shifted = x >> tl.where(outside, bits - 1, y).to(x.dtype)
    if x.dtype.is_int_unsigned():
        shifted = tl.where(outside, 0, shifted).to(x.dtype)
    return shifted


@triton.jit
def angle(x, y, z):
    """The angle of a real number: pi for a negative one, 0 otherwise (-0.0 too), NaN stays (ATen's)."""
    pi = tl.full(x.shape, 3.141592653589793, x.dtype)  # rounded to x's type, as ATen's c10::pi<T>
    return tl.where(x != x, x, tl.where(x < 0, pi, 0.0))


@triton.jit
def _gcd(x, y):
    """ATen's calc_gcd: Euclid's algorithm on |x|, |y|, as many steps as the type's worst case (Fibonacci pairs:
    fewer than 1.5 steps per bit)."""
    a = tl.abs(x)
    b = tl.abs(y)
    for _ in tl.static_range(x.dtype.primitive_bitwidth * 3 // 2 + 2):
        live = a != 0
        c = a
        a = tl.where(live, b % tl.where(live, a, 1), 0).to(x.dtype)
        b = tl.where(live, c, b)
    return b


@triton.jit
def gcd(x, y, z):
    return _gcd(x, y)


@triton.jit
def lcm(x, y, z):
    """ATen's: 0 where gcd is 0, else |x / gcd * y|, narrower types than int computed in int32 (C's promotion)."""
    g = _gcd(x, y)
    q = x // tl.where(g == 0, 1, g)
    if x.dtype.primitive_bitwidth < 32:
        product = q.to(tl.int32) * y.to(tl.int32)
    else:
        product = q * y
    return tl.where(g == 0, 0, tl.abs(product)).to(x.dtype)


FUNCTIONS = {
    f.__name__: f
    for f in (
        copy,
        add,
        sub,
        plus,
        minus,
        mul,
        div,
        div_trunc,
        div_trunc_fp16,
        div_trunc_bf16,
        div_floor,
        div_floor_fp16,
        div_floor_bf16,
        fmod,
        remainder,
        bitwise_and,
        bitwise_or,
        bitwise_xor,
        neg,
        where,
        isnan,
        isposinf,
        isneginf,
        logical_and,
        logical_or,
        logical_xor,
        logical_not,
        bitwise_not,
        eq,
        ne,
        lt,
        le,
        gt,
        ge,
        exp,
        exp2,
        log,
        log1p,
        sin,
        cos,
        tanh,
        sigmoid,
        abs,
        sqrt,
        rsqrt,
        reciprocal,
        relu,
        power,
        sign,
        sigmoid_backward,
        threshold_backward,
        log_sigmoid,
        log_sigmoid_backward,
        maximum,
        minimum,
        clamp,
        gelu,
        gelu_tanh,
        gelu_backward,
        gelu_tanh_backward,
        silu,
        silu_backward,
        tanh_backward,
        lerp,
        ceil,
        floor,
        trunc,
        expm1,
        erf,
        log2,
        log10,
        erfc,
        tan,
        asin,
        acos,
        atan,
        sinh,
        cosh,
        asinh,
        acosh,
        atanh,
        complex_add,
        complex_sub,
        complex_mul,
        complex_div,
        complex_sgn,
        complex_exp,
        complex_log,
        complex_log1p,
        complex_sqrt,
        complex_reciprocal,
        complex_pow,
        atan2,
        hypot,
        logaddexp,
        logaddexp2,
        copysign,
        fmax,
        fmin,
        heaviside,
        frac,
        signbit,
        round_even,
        left_shift,
        right_shift,
        angle,
        gcd,
        lcm,
    )
}


# ---- indexing ----------------------------------------------------------------------------------------
@triton.jit
def _indices(n, s1, s2, s3, BLOCK: tl.constexpr, DIMS: tl.constexpr = 4, ONE_PROGRAM: tl.constexpr = False):
    """Element i's index (i0, i1, i2, i3) over sizes (., s1, s2, s3). DIMS: how many of them are not
    padding (launch._layout); the padded ones are 0, which folds the address terms and the divisions away
    (a contiguous operand becomes a strided load instead of a gather of computed offsets). ONE_PROGRAM: a
    launch of one program, which reads no program_id, so plate's persistent pass leaves the kernel as written
    (no loop over programs, no loads fetched ahead for a next one): the same elements."""
    if ONE_PROGRAM:
        i = tl.arange(0, BLOCK).to(tl.int64)
    else:
        i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    i0, i1, i2, i3 = _split(i, s1, s2, s3, DIMS)
    return i, i < n, i0, i1, i2, i3


@triton.jit
def _split(i, s1, s2, s3, DIMS: tl.constexpr):
    """(i0, i1, i2, i3): element i's index over sizes (., s1, s2, s3), the leading 4 - DIMS of them padding (0)."""
    i0 = 0
    i1 = 0
    i2 = 0
    i3 = i
    if DIMS >= 2:
        i3 = i % s3
        i2 = i // s3
    if DIMS >= 3:
        i1 = i2 // s2
        i2 = i2 % s2
    if DIMS >= 4:
        i0 = i1 // s1
        i1 = i1 % s1
    return i0, i1, i2, i3


@triton.jit
def _at(i0, i1, i2, i3, t0, t1, t2, t3):
    return i0 * t0 + i1 * t1 + i2 * t2 + i3 * t3


# ---- elementwise ---------------------------------------------------------------------------------------
@triton.jit
def load_operands(
    a, b, c, i0, i1, i2, i3, mask, a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3,
    ARITY: tl.constexpr, CT: tl.constexpr,
):  # fmt: skip
    """The operands x, y, z of an elementwise kernel (elementwise, parametric_kernels.parametric) at element
    (i0, i1, i2, i3): a's, and b's and c's where ARITY has them (else x again), each through its strides, in CT."""
    x = tl.load(a + _at(i0, i1, i2, i3, a0, a1, a2, a3), mask=mask).to(CT)
    y = x
    z = x
    if ARITY >= 2:
        y = tl.load(b + _at(i0, i1, i2, i3, b0, b1, b2, b3), mask=mask).to(CT)
    if ARITY >= 3:
        z = tl.load(c + _at(i0, i1, i2, i3, c0, c1, c2, c3), mask=mask).to(CT)
    return x, y, z


@triton.jit(do_not_specialize=_NO_SPECIALIZE)
def elementwise(
    out, a, b, c, n, s1, s2, s3,
    o0, o1, o2, o3, a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3,
    FN: tl.constexpr, ARITY: tl.constexpr, CT: tl.constexpr, BLOCK: tl.constexpr, DIMS: tl.constexpr = 4,
    ONE_PROGRAM: tl.constexpr = False,
):  # fmt: skip
    i, mask, i0, i1, i2, i3 = _indices(n, s1, s2, s3, BLOCK, DIMS, ONE_PROGRAM)
    x, y, z = load_operands(a, b, c, i0, i1, i2, i3, mask, a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3, ARITY, CT)
    result = FN(x, y, z)
    tl.store(out + _at(i0, i1, i2, i3, o0, o1, o2, o3), result.to(out.dtype.element_ty), mask=mask)


@triton.jit(do_not_specialize=_NO_SPECIALIZE)
def arange_fill(
    out, a, b, c, n, s1, s2, s3,
    o0, o1, o2, o3, a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3,
    CT: tl.constexpr, BLOCK: tl.constexpr, DIMS: tl.constexpr = 4,
    ONE_PROGRAM: tl.constexpr = False,
):  # fmt: skip
    """out[i] = start + i * step, computed in CT and rounded once: a holds (start, step) in CT."""
    i, mask, i0, i1, i2, i3 = _indices(n, s1, s2, s3, BLOCK, DIMS, ONE_PROGRAM)
    start = tl.load(a)
    step = tl.load(a + 1)
    value = start + i.to(CT) * step
    tl.store(out + _at(i0, i1, i2, i3, o0, o1, o2, o3), value.to(out.dtype.element_ty), mask=mask)


@triton.jit(do_not_specialize=_NO_SPECIALIZE)
def isclose(
    out, a, b, c, n, s1, s2, s3,
    o0, o1, o2, o3, a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3,
    TOL: tl.constexpr, EQUAL_NAN: tl.constexpr, CT: tl.constexpr, ST: tl.constexpr,
    BLOCK: tl.constexpr, DIMS: tl.constexpr = 4,
    ONE_PROGRAM: tl.constexpr = False,
):  # fmt: skip
    """aten's isclose (TensorCompare.cpp) in one pass: a == b, or both NaN (EQUAL_NAN), or (TOL) a finite
    |a - b| <= atol + |rtol * b|. Each step rounds to the type torch's op returns (ST: the tensors' type; integer
    and bool tensors are cast to the default float type first), computing in CT (float32 for the half types, as
    opmath). c: [rtol, atol]."""
    i, mask, i0, i1, i2, i3 = _indices(n, s1, s2, s3, BLOCK, DIMS, ONE_PROGRAM)
    x = tl.load(a + _at(i0, i1, i2, i3, a0, a1, a2, a3), mask=mask)
    y = tl.load(b + _at(i0, i1, i2, i3, b0, b1, b2, b3), mask=mask)
    close = x == y
    if EQUAL_NAN:
        close = close | ((x != x) & (y != y))
    if TOL:
        rtol = tl.load(c)
        atol = tl.load(c + 1)
        allowed = (tl.abs((rtol * y.to(ST).to(CT)).to(ST)).to(CT) + atol).to(ST).to(CT)
        actual = tl.abs((x.to(ST).to(CT) - y.to(ST).to(CT)).to(ST)).to(CT)
        close = close | ((actual <= allowed) & (actual < float("inf")))
    tl.store(out + _at(i0, i1, i2, i3, o0, o1, o2, o3), close.to(out.dtype.element_ty), mask=mask)


@triton.jit(do_not_specialize=_NO_SPECIALIZE)
def complex_binary(
    out, a, b, c, n, s1, s2, s3,
    o0, o1, o2, o3, a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3,
    FN: tl.constexpr, CT: tl.constexpr, BLOCK: tl.constexpr, DIMS: tl.constexpr = 4,
    ONE_PROGRAM: tl.constexpr = False,
):  # fmt: skip
    """Over real views: each operand's (real, imag) pair lies at offsets (k, k + 1); c is a real alpha."""
    i, mask, i0, i1, i2, i3 = _indices(n, s1, s2, s3, BLOCK, DIMS, ONE_PROGRAM)
    pa = a + _at(i0, i1, i2, i3, a0, a1, a2, a3)
    pb = b + _at(i0, i1, i2, i3, b0, b1, b2, b3)
    alpha = tl.load(c + _at(i0, i1, i2, i3, c0, c1, c2, c3), mask=mask).to(CT)
    ar = tl.load(pa, mask=mask).to(CT)
    ai = tl.load(pa + 1, mask=mask).to(CT)
    br = tl.load(pb, mask=mask).to(CT)
    bi = tl.load(pb + 1, mask=mask).to(CT)
    re, im = FN(ar, ai, br, bi, alpha)
    po = out + _at(i0, i1, i2, i3, o0, o1, o2, o3)
    tl.store(po, re.to(out.dtype.element_ty), mask=mask)
    tl.store(po + 1, im.to(out.dtype.element_ty), mask=mask)


# ---- random numbers (Philox, counter offset + i) -----------------------------------------------------------
UNIFORM, NORMAL, BERNOULLI, INTEGERS, EXPONENTIAL = (tl.constexpr(k) for k in range(5))
# INTEGERS' widths: 32 random bits mod range; 64 bits (63 kept) mod range; 63 bits as they are (range 2**63);
# 64 bits as they are (the whole int64 range: `to` itself comes out with probability 2**-64)
NARROW, WIDE, FULL63, FULL64 = (tl.constexpr(k) for k in range(4))


@triton.jit
def _bits64(seed, counter):
    r0, r1, _, _ = tl.randint4x(seed, counter)
    return ((r0.to(tl.uint64) << 32) | r1.to(tl.uint64)).to(tl.int64)


@triton.jit
def _bits63(seed, counter):
    return _bits64(seed, counter) & 0x7FFFFFFFFFFFFFFF


@triton.jit(do_not_specialize=["n", "s1", "s2", "s3", "o0", "o1", "o2", "o3", "seed", "offset", "p0", "p1"])
def random_fill(
    out, n, s1, s2, s3, o0, o1, o2, o3, seed, offset, p0, p1,
    KIND: tl.constexpr, WIDTH: tl.constexpr, BLOCK: tl.constexpr, DIMS: tl.constexpr = 4,
    ONE_PROGRAM: tl.constexpr = False,
):  # fmt: skip
    """UNIFORM [p0, p1); NORMAL mean p0, std p1; BERNOULLI p0; INTEGERS p0 + [0, p1); EXPONENTIAL rate p0."""
    i, mask, i0, i1, i2, i3 = _indices(n, s1, s2, s3, BLOCK, DIMS, ONE_PROGRAM)
    counter = offset + i
    if KIND == UNIFORM:
        u = tl.rand(seed, counter)
        value = p0 + u * (p1 - p0)
        value = tl.where(value < p1, value, p0)  # rounding may reach `to`: keep the interval half-open
    elif KIND == NORMAL:
        value = p0 + tl.randn(seed, counter) * p1
    elif KIND == BERNOULLI:
        value = (tl.rand(seed, counter) < p0).to(tl.float32)
    elif KIND == EXPONENTIAL:
        u = tl.rand(seed, counter)
        value = -tl.log(1.0 - u) / p0
    else:
        if WIDTH == NARROW:
            bits = tl.randint(seed, counter).to(tl.uint32).to(tl.int64)
            value = p0.to(tl.int64) + bits % p1.to(tl.int64)
        elif WIDTH == WIDE:
            value = p0.to(tl.int64) + _bits63(seed, counter) % p1.to(tl.int64)
        elif WIDTH == FULL63:
            value = p0.to(tl.int64) + _bits63(seed, counter)
        else:
            value = p0.to(tl.int64) + _bits64(seed, counter)
    tl.store(out + _at(i0, i1, i2, i3, o0, o1, o2, o3), value.to(out.dtype.element_ty), mask=mask)


@triton.jit(do_not_specialize=_NO_SPECIALIZE + ["seed", "offset"])
def bernoulli_tensor(
    out, a, b, c, n, s1, s2, s3,
    o0, o1, o2, o3, a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3,
    seed, offset, BLOCK: tl.constexpr, DIMS: tl.constexpr = 4,
    ONE_PROGRAM: tl.constexpr = False,
):  # fmt: skip
    """out[i] = 1 with probability a[i] (an element of the probabilities tensor), else 0."""
    i, mask, i0, i1, i2, i3 = _indices(n, s1, s2, s3, BLOCK, DIMS, ONE_PROGRAM)
    p = tl.load(a + _at(i0, i1, i2, i3, a0, a1, a2, a3), mask=mask).to(tl.float32)
    value = tl.rand(seed, offset + i) < p
    tl.store(out + _at(i0, i1, i2, i3, o0, o1, o2, o3), value.to(out.dtype.element_ty), mask=mask)


@triton.jit(do_not_specialize=_NO_SPECIALIZE + ["seed", "offset", "p", "scale"])
def dropout(
    out, a, b, c, n, s1, s2, s3,
    o0, o1, o2, o3, a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3,
    seed, offset, p, scale, CT: tl.constexpr, BLOCK: tl.constexpr, DIMS: tl.constexpr = 4,
    ONE_PROGRAM: tl.constexpr = False,
):  # fmt: skip
    """out = a * keep * scale and the mask b = keep, keep with probability 1 - p."""
    i, mask, i0, i1, i2, i3 = _indices(n, s1, s2, s3, BLOCK, DIMS, ONE_PROGRAM)
    x = tl.load(a + _at(i0, i1, i2, i3, a0, a1, a2, a3), mask=mask).to(CT)
    keep = tl.rand(seed, offset + i) >= p
    value = tl.where(keep, x * scale, 0.0)
    tl.store(out + _at(i0, i1, i2, i3, o0, o1, o2, o3), value.to(out.dtype.element_ty), mask=mask)
    tl.store(b + _at(i0, i1, i2, i3, b0, b1, b2, b3), keep.to(b.dtype.element_ty), mask=mask)


# ---- gather / scatter along one dim (index ops) ------------------------------------------------------------
GATHER, SCATTER, SCATTER_ADD, SCATTER_MAX, SCATTER_MIN, SCATTER_NAN = (tl.constexpr(k) for k in range(6))


@triton.jit(do_not_specialize=_NO_SPECIALIZE + ["size", "step"])
def indexed(
    out, a, b, c, n, s1, s2, s3,
    o0, o1, o2, o3, a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3,
    size, step, MODE: tl.constexpr, BLOCK: tl.constexpr, DIMS: tl.constexpr = 4, CHECKED: tl.constexpr = False,
    ONE_PROGRAM: tl.constexpr = False,
    WRAPS: tl.constexpr = True,
):  # fmt: skip
    """Over the index's iteration space, b the index (negative counts from `size`), `step` the indexed
    tensor's stride along the indexed dim (its own strides are 0 there): GATHER reads a at the index into
    out; the SCATTERs write (or atomically combine) a into out at the index. SCATTER_MAX and SCATTER_MIN
    leave a NaN of a out (Triton's float atomic max/min compare the bits as integers, which keeps a NaN of
    one sign and drops the other): SCATTER_NAN, launched after them, writes a's NaNs only.
    WRAPS: a negative index counts from `size` (index, index_put_; gather, scatter and index_select refuse it).
    CHECKED: an index outside [-size, size) ([0, size) without WRAPS) is not used; c (two int64, zero
    strides) gets 1 and that index, for the host to raise torch's error (CUDA's kernels assert; an index
    into the next row of a larger tensor would not fault)."""
    i, mask, i0, i1, i2, i3 = _indices(n, s1, s2, s3, BLOCK, DIMS, ONE_PROGRAM)
    raw = tl.load(b + _at(i0, i1, i2, i3, b0, b1, b2, b3), mask=mask).to(tl.int64)
    idx = tl.where(raw < 0, raw + size, raw) if WRAPS else raw
    if CHECKED:
        bad = mask & ((idx < 0) | (idx >= size))
        flag = c + _at(i0, i1, i2, i3, c0, c1, c2, c3)
        tl.store(flag, tl.full([BLOCK], 1, tl.int64), mask=bad)
        tl.store(flag + 1, raw, mask=bad)
        mask = mask & ~bad
    if MODE == GATHER:
        x = tl.load(a + _at(i0, i1, i2, i3, a0, a1, a2, a3) + idx * step, mask=mask)
        tl.store(out + _at(i0, i1, i2, i3, o0, o1, o2, o3), x.to(out.dtype.element_ty), mask=mask)
    else:
        x = tl.load(a + _at(i0, i1, i2, i3, a0, a1, a2, a3), mask=mask).to(out.dtype.element_ty)
        where = out + _at(i0, i1, i2, i3, o0, o1, o2, o3) + idx * step
        if MODE == SCATTER:
            tl.store(where, x, mask=mask)
        elif MODE == SCATTER_ADD:
            tl.atomic_add(where, x, mask=mask)
        elif MODE == SCATTER_MAX:
            tl.atomic_max(where, x, mask=mask & (x == x))
        elif MODE == SCATTER_MIN:
            tl.atomic_min(where, x, mask=mask & (x == x))
        else:  # SCATTER_NAN: every write to a place is a NaN, whichever lands last
            tl.store(where, x, mask=mask & (x != x))
