"""The Triton kernel of the ``parametric`` eager ops (parametric.py): kernels.elementwise with up to three
numbers of the call (an activation's slope, a loss's beta, nan_to_num's replacements) read from a small tensor
``p`` in the compute type CT, as ATen converts its Scalar arguments to the op math type. The element functions
take (x, y, z, p0, p1, p2, p3) and follow ATen's CPU kernels (aten/src/ATen/native/cpu/Activation.cpp,
UnaryOpsKernel.cpp, PointwiseOpsKernel.cpp) step for step."""

from __future__ import annotations

import triton
import triton.language as tl
from triton.language.extra import libdevice

from .kernels import _NO_SPECIALIZE, _at, _indices, load_operands

PARAMS = 4  # the length of p


@triton.jit
def _max0(v):
    return tl.where(v < 0.0, 0.0, v)  # std::max(v, 0): NaN stays


@triton.jit
def _min6(v):
    return tl.where(6.0 < v, 6.0, v)  # std::min(v, 6): NaN stays


@triton.jit
def elu(x, y, z, alpha, scale, input_scale, p3):
    return tl.where(x < 0, libdevice.expm1(x * input_scale) * (alpha * scale), x * scale)


@triton.jit
def elu_backward(x, y, z, alpha, scale, input_scale, is_result):
    """x: the gradient, y: elu's input, or its output where is_result."""
    negcoef = alpha * scale
    from_result = x * input_scale * (y + negcoef)
    from_input = x * input_scale * negcoef * tl.exp(y * input_scale)
    return tl.where(y <= 0, tl.where(is_result != 0, from_result, from_input), x * scale)


@triton.jit
def leaky_relu(x, y, z, slope, p1, p2, p3):
    return tl.where(x > 0, x, x * slope)


@triton.jit
def leaky_relu_backward(x, y, z, slope, p1, p2, p3):
    return tl.where(y > 0, x, x * slope)


@triton.jit
def hardtanh(x, y, z, low, high, p2, p3):
    """clamp(x, low, high), as ATen's hardtanh is: a NaN stays."""
    clamped = tl.where(x < low, low, x)
    return tl.where(clamped > high, high, clamped)


@triton.jit
def hardtanh_backward(x, y, z, low, high, p2, p3):
    return tl.where((y <= low) | (y >= high), 0.0, x)


@triton.jit
def softplus(x, y, z, beta, threshold, p2, p3):
    return tl.where(x * beta > threshold, x, libdevice.log1p(tl.exp(x * beta)) / beta)


@triton.jit
def softplus_backward(x, y, z, beta, threshold, p2, p3):
    e = tl.exp(y * beta)
    return tl.where(y * beta > threshold, x, x * e / (e + 1.0))


@triton.jit
def hardsigmoid(x, y, z, p0, p1, p2, p3):
    return _min6(_max0(x + 3.0)) / 6.0


@triton.jit
def hardsigmoid_backward(x, y, z, one_sixth, p1, p2, p3):
    return tl.where((y > -3.0) & (y < 3.0), x * one_sixth, 0.0)


@triton.jit
def hardswish(x, y, z, p0, p1, p2, p3):
    return x * _min6(_max0(x + 3.0)) / 6.0


@triton.jit
def hardswish_backward(x, y, z, p0, p1, p2, p3):
    return tl.where(y <= -3.0, 0.0, tl.where(y < 3.0, x * ((y / 3.0) + 0.5), x))


@triton.jit
def mish(x, y, z, p0, p1, p2, p3):
    return x * libdevice.tanh(libdevice.log1p(tl.exp(x)))


@triton.jit
def mish_backward(x, y, z, p0, p1, p2, p3):
    sigmoid = 1.0 / (1.0 + tl.exp(-y))
    t = libdevice.tanh(libdevice.log1p(tl.exp(y)))
    return x * (t + y * sigmoid * (1.0 - t * t))


@triton.jit
def hardshrink(x, y, z, lambd, p1, p2, p3):
    return tl.where((x >= -lambd) & (x <= lambd), 0.0, x)


@triton.jit
def shrink_backward(x, y, z, lambd, p1, p2, p3):
    """hardshrink's and softshrink's gradient: none inside [-lambd, lambd]."""
    return tl.where((y >= -lambd) & (y <= lambd), 0.0, x)


@triton.jit
def softshrink(x, y, z, lambd, p1, p2, p3):
    """0 inside [-lambd, lambd] (+0, as ATen's vectorized CPU path; its scalar tail gives x * 0), NaN stays."""
    return tl.where(x > lambd, x - lambd, tl.where(x < -lambd, x + lambd, tl.where(x != x, x, 0.0)))


@triton.jit
def threshold(x, y, z, limit, value, p2, p3):
    return tl.where(x <= limit, value, x)


@triton.jit
def nan_to_num(x, y, z, nan, posinf, neginf, p3):
    if x.dtype.is_floating():
        result = tl.where(x != x, nan, tl.where(x == float("inf"), posinf, tl.where(x == float("-inf"), neginf, x)))
    else:
        result = x
    return result


@triton.jit
def logit(x, y, z, eps, p1, p2, p3):
    """log(x / (1 - x)), x first clamped to [eps, 1 - eps] unless eps < 0 (None)."""
    clamped = tl.where(x < eps, eps, tl.where(x > 1.0 - eps, 1.0 - eps, x))
    v = tl.where(eps < 0, x, clamped)
    return tl.log(v / (1.0 - v))


@triton.jit
def logit_backward(x, y, z, eps, p1, p2, p3):
    derivative = x / (y * (1.0 - y))
    unclamped = tl.where((y < 0) | (y > 1), float("nan"), derivative)
    clamped = tl.where((y < eps) | (y > 1.0 - eps), 0.0, derivative)
    return tl.where(eps < 0, unclamped, clamped)


@triton.jit
def addcmul(x, y, z, value, p1, p2, p3):
    return x + value * y * z


@triton.jit
def addcdiv(x, y, z, value, p1, p2, p3):
    return x + value * y / z


FUNCTIONS = {
    f.__name__: f
    for f in (
        elu,
        elu_backward,
        leaky_relu,
        leaky_relu_backward,
        hardtanh,
        hardtanh_backward,
        softplus,
        softplus_backward,
        hardsigmoid,
        hardsigmoid_backward,
        hardswish,
        hardswish_backward,
        mish,
        mish_backward,
        hardshrink,
        shrink_backward,
        softshrink,
        threshold,
        nan_to_num,
        logit,
        logit_backward,
        addcmul,
        addcdiv,
    )
}


@triton.jit(do_not_specialize=_NO_SPECIALIZE)
def parametric(
    out, a, b, c, n, s1, s2, s3,
    o0, o1, o2, o3, a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3,
    p, FN: tl.constexpr, ARITY: tl.constexpr, CT: tl.constexpr, BLOCK: tl.constexpr, DIMS: tl.constexpr = 4,
    ONE_PROGRAM: tl.constexpr = False,
):  # fmt: skip
    """out[i] = FN(a[i], b[i], c[i], p[0], p[1], p[2], p[3]) in CT, stored in the output's type."""
    i, mask, i0, i1, i2, i3 = _indices(n, s1, s2, s3, BLOCK, DIMS, ONE_PROGRAM)
    x, y, z = load_operands(a, b, c, i0, i1, i2, i3, mask, a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3, ARITY, CT)
    result = FN(x, y, z, tl.load(p).to(CT), tl.load(p + 1).to(CT), tl.load(p + 2).to(CT), tl.load(p + 3).to(CT))
    tl.store(out + _at(i0, i1, i2, i3, o0, o1, o2, o3), result.to(out.dtype.element_ty), mask=mask)
