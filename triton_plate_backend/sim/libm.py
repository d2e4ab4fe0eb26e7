"""Special functions of libdevice that numpy lacks, in float64 with numpy and the standard library
only (the simulator's runtime has no scipy): the semantics of v.libm1 .. v.libm4.

Each function takes float64 arrays (integer operands as int64) and returns float64 (ilogb: int64)
that the instruction rounds once to its tile type. Accuracy (tests measure it against mpmath):
within CUDA libdevice's documented error bounds; f32 results are almost always correctly rounded.

- erfinv / erfcinv / normcdfinv: Newton's method on erf, or on log(erfc) in the tails, from
  Giles' single-precision approximation;
- erfcx: erfc(x) exp(x*x) with x*x split exactly, the asymptotic series beyond x = 12;
- Bessel functions: sim/bessel.py;
- lgamma: Taylor series in zeta values around 1 and 2 (no cancellation near its zeros);
- sinpi / cospi: exact reduction modulo 2; remainder: exact from fmod.
"""

from __future__ import annotations

import math

import numpy as np

from .bessel import _errstate, i0, i1, j0, j1, jn, y0, y1, yn
from .numerics import fma64, two_product, two_sum

F64 = np.float64
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
_SQRT_PI = math.sqrt(math.pi)
_INV_SQRT2 = 0.7071067811865476
_INV_SQRT2_LO = -4.833646656726457e-17  # 1/sqrt(2) - _INV_SQRT2


def _vectorize(fn):
    u = np.frompyfunc(fn, 1, 1)
    return lambda x: np.asarray(u(np.asarray(x, F64)), F64)


_ERF, _ERFC = _vectorize(math.erf), _vectorize(math.erfc)


# ---- error function family -----------------------------------------------------------------------
def _square(x):
    """x*x as hi + lo exactly (Dekker)."""
    hi = x * x
    c = x * 134217729.0
    xh = c - (c - x)
    xl = x - xh
    return hi, ((xh * xh - hi) + 2 * xh * xl) + xl * xl


@_errstate
def erfcx(x):
    x = np.asarray(x, F64)
    ax = np.abs(x)
    hi, lo = _square(ax)
    near = _ERFC(np.minimum(ax, 12.0)) * np.exp(hi) * (1 + lo)
    # asymptotic: 1/(x sqrt(pi)) * sum (-1)^k (2k-1)!! / (2x^2)^k (terms < 1e-24 at k = 40, x >= 12)
    big = np.maximum(ax, 12.0)
    t = 1.0 / (2 * big * big)
    s, term = np.ones_like(x), np.ones_like(x)
    for k in range(1, 40):
        term = -term * (2 * k - 1) * t
        s = s + term
    far = (1.0 / _SQRT_PI) / big * s
    pos = np.where(ax < 12.0, near, far)
    neg = np.where(ax < 26.7, 2 * np.exp(hi) * (1 + lo) - pos, np.inf)  # 2 exp(x*x) overflows beyond
    out = np.where(x >= 0, pos, neg)
    return np.where(np.isnan(x), x, out)


def _giles(w, y):
    """Giles' single-precision erfinv approximation from w = -log((1-y)(1+y))."""
    a = w - 2.5
    p = 2.81022636e-08
    for c in (
        3.43273939e-07,
        -3.5233877e-06,
        -4.39150654e-06,
        0.00021858087,
        -0.00125372503,
        -0.00417768164,
        0.246640727,
        1.50140941,
    ):
        p = c + p * a
    b = np.sqrt(w) - 3.0
    q = -0.000200214257
    for c in (
        0.000100950558,
        0.00134934322,
        -0.00367342844,
        0.00573950773,
        -0.0076224613,
        0.00943887047,
        1.00167406,
        2.83297682,
    ):
        q = c + q * b
    return np.where(w < 5.0, p, q) * y


def _erfc_tail_inverse(c):
    """x > 0 with erfc(x) = c, for 0 < c <= 0.5: Newton on log(erfc)."""
    w = -np.log(c * (2 - c))
    x0 = np.sqrt(-np.log(c))
    x_far = np.sqrt(np.maximum(-np.log(c) - np.log(x0 * _SQRT_PI), 0.0))
    x = np.where(w < 5.0, _giles(w, np.ones_like(c)), np.maximum(x_far, 0.5))
    logc = np.log(c)
    for _ in range(6):
        ex = erfcx(x)
        log_erfc = np.where(x < 25.0, np.log(_ERFC(x)), np.log(ex) - x * x)
        x = x + (log_erfc - logc) * _SQRT_PI / 2 * ex
    return x


@_errstate
def erfinv(y):
    y = np.asarray(y, F64)
    a = np.abs(y)
    x = _giles(-np.log((1 - a) * (1 + a)), y)
    for _ in range(3):  # Newton on erf where |y| <= 0.5
        x = x - (_ERF(x) - y) * _SQRT_PI / 2 * np.exp(x * x)
    tail = np.copysign(_erfc_tail_inverse(np.clip(1 - a, 2.0**-1074, 0.5)), y)
    out = np.where(a <= 0.5, x, tail)
    out = np.where(a == 1, np.copysign(np.inf, y), out)
    return np.where((a > 1) | np.isnan(y), np.nan, out)


@_errstate
def erfcinv(y):
    y = np.asarray(y, F64)
    mid = erfinv(np.where((y >= 0.5) & (y <= 1.5), 1 - y, 0.0))  # 1 - y exact there
    lo = _erfc_tail_inverse(np.clip(y, 2.0**-1074, 0.5))
    hi = -_erfc_tail_inverse(np.clip(2 - y, 2.0**-1074, 0.5))
    out = np.where(y < 0.5, lo, np.where(y > 1.5, hi, mid))
    out = np.where(y == 0, np.inf, np.where(y == 2, -np.inf, out))
    return np.where((y < 0) | (y > 2) | np.isnan(y), np.nan, out)


@_errstate
def normcdf(x):
    """0.5 erfc(-x/sqrt(2)), with the rounding error of -x/sqrt(2) corrected to first order."""
    x = np.asarray(x, F64)
    t = -x * _INV_SQRT2
    e = np.where(np.isfinite(x), fma64(-x, _INV_SQRT2, -t) - x * _INV_SQRT2_LO, 0.0)
    ex = erfcx(t)
    corr = np.where(np.abs(t) < 30, 1 - e * 2 / (_SQRT_PI * ex), 1.0)  # erfc(t + e) / erfc(t); 0 beyond
    out = 0.5 * _ERFC(t) * np.where(np.isfinite(corr), corr, 1.0)
    return np.where(np.isnan(x), x, out)


@_errstate
def normcdfinv(p):
    return -math.sqrt(2) * erfcinv(2 * np.asarray(p, F64)) + 0.0  # + 0.0: normcdfinv(0.5) = +0


# ---- gamma -----------------------------------------------------------------------------------------
def _tgamma(x: float) -> float:
    if math.isnan(x) or x == -math.inf:
        return math.nan
    if x == 0:
        return math.copysign(math.inf, x)
    try:
        return math.gamma(x)
    except ValueError:  # negative integers
        return math.nan
    except OverflowError:
        return math.inf if x > 0 or math.floor(x) % 2 == 0 else -math.inf


tgamma = _vectorize(_tgamma)


def _zeta_minus_one(k: int) -> float:
    """zeta(k) - 1 for k >= 2: the sum to 999 and Euler-Maclaurin's tail (error < 1e-25)."""
    n = 1000
    head = math.fsum(m**-k for m in range(2, n))
    tail = n ** (1 - k) / (k - 1) + n**-k / 2 + k * n ** (-k - 1) / 12 - k * (k + 1) * (k + 2) * n ** (-k - 3) / 720
    return head + tail


_ZM1 = [0.0, 0.0] + [_zeta_minus_one(k) for k in range(2, 64)]
_EULER = 0.5772156649015329


# the series' first two coefficients as hi + lo: -gamma (at 1) or 1 - gamma (at 2), and zeta(2)/2 or (zeta(2) - 1)/2
_LGAMMA_C1 = {False: (-0.5772156649015329, 4.942915152430645e-18), True: (0.42278433509846713, 4.942915152430645e-18)}
_LGAMMA_C2 = {False: (0.8224670334241132, 1.520336175199238e-17), True: (0.3224670334241132, 1.520336175199238e-17)}


def _lgamma_near(e, at_two):
    """lgamma(1 + e) or lgamma(2 + e), |e| <= 1/2: the Taylor series in zeta values (no
    cancellation near the zeros at 1 and 2). zeta(k) = 1 + _ZM1[k]. The terms of e^3 and up by
    Horner's rule; the first two, which nearly cancel around the minimum at 1.4616, in double-double
    (summed in double they were 10 ulp off there)."""
    t = np.zeros_like(e)
    for k in range(63, 2, -1):
        c = _ZM1[k] if at_two else 1 + _ZM1[k]
        t = t * e + (c / k if k % 2 == 0 else -c / k)
    c1, c1_lo = _LGAMMA_C1[at_two]
    c2, c2_lo = _LGAMMA_C2[at_two]
    q, q_lo = two_product(e, e)
    p1, p1_lo = two_product(c1, e)
    p2, p2_lo = two_product(c2, q)
    hi, hi_lo = two_sum(p1, p2)
    lo = hi_lo + p1_lo + p2_lo + c2 * q_lo + c1_lo * e + c2_lo * q + t * q * e
    return hi + lo


def _lgamma1(x: float) -> float:
    try:
        return math.lgamma(x)
    except (ValueError, OverflowError):  # poles (0, negative integers), huge |x|
        return math.inf


_LGAMMA = _vectorize(_lgamma1)


@_errstate
def lgamma(x):
    """log|gamma(x)|: series around 1 and 2 on [0.5, 3.5), and on (-0.5, 0.5) through
    lgamma(x + 1) - log|x|; the reflection formula (with sinpi) below -0.5; the standard
    library's beyond."""
    x = np.asarray(x, F64)
    up = (np.abs(x) < 0.5) & (x != 0)  # lgamma(x) = lgamma(x + 1) - log|x|: the log term dominates
    # (-2.5, -0.5]: lgamma(x + 3) - log|x (x + 1) (x + 2)| (the reflection loses 8 ulp there), the sums exact
    up3 = (x > -2.5) & (x <= -0.5) & (x != np.floor(x))
    # [3.5, 20): lgamma(y) + log(y (y + 1) ... (x - 1)), y = x - n in [2.5, 3.5) exact, the product in
    # double-double (the standard library's lgamma is 6 ulp off there)
    down = (x >= 3.5) & (x < 20)
    n = np.where(down, np.floor(x - 2.5), 0.0)
    y = np.where(up, x + 1, np.where(up3, x + 3, x - n))
    ph, pl = np.ones_like(x), np.zeros_like(x)
    for i in range(17):
        f = np.where(i < n, y + i, 1.0)
        ph, err = two_product(ph, f)
        pl = pl * f + err
    near = np.where(
        y < 1.5,
        _lgamma_near(y - 1, False),
        np.where(y < 2.5, _lgamma_near(y - 2, True), np.log(y - 1) + _lgamma_near(y - 3, True)),
    )
    near = np.where(up, near - np.log(np.abs(x)), near)
    p, p_lo = two_product(x, x + 1)
    p3, p3_lo = two_product(p, x + 2)
    p3_lo = p3_lo + p_lo * (x + 2)
    near = np.where(up3, near - (np.log(np.abs(p3)) + p3_lo / p3), near)
    near = np.where(down, near + (np.log(ph) + pl / ph), near)
    out = np.where(((x > -0.5) & (x < 3.5) & (x != 0)) | up3 | down, near, _LGAMMA(x))
    neg = (x <= -2.5) & np.isfinite(x) & (x != np.floor(x))
    if neg.any():
        reflected = math.log(math.pi) - np.log(np.abs(sinpi(x))) - _LGAMMA(1 - x)
        out = np.where(neg & (x > -1e300), reflected, out)
    return np.where(np.isnan(x), x, np.where(np.isinf(x), np.inf, out))


# ---- trigonometric in units of pi -----------------------------------------------------------------
_PI_HI, _PI_LO = math.pi, 1.2246467991473532e-16  # pi = _PI_HI + _PI_LO to ~107 bits


def _pi_times(t):
    return t * _PI_HI + t * _PI_LO


def _quadrant(x):
    r = np.where(np.isfinite(x), np.fmod(x, 2.0), 0.0)  # exact
    n = np.rint(2 * r)  # -4 .. 4
    t = r - n / 2  # exact, |t| <= 1/4
    return _pi_times(t), np.mod(n, 4).astype(np.int64)


@_errstate
def sinpi(x):
    x = np.asarray(x, F64)
    a, q = _quadrant(x)
    s, c = np.sin(a), np.cos(a)
    out = np.choose(q, [s, c, -s, -c])
    out = np.where(out == 0, np.copysign(0.0, x), out)  # sinpi(+-n) = +-0
    return np.where(np.isfinite(x), out, np.nan)


@_errstate
def cospi(x):
    x = np.asarray(x, F64)
    a, q = _quadrant(x)
    s, c = np.sin(a), np.cos(a)
    out = np.choose(q, [c, -s, -c, s])
    out = np.where(out == 0, 0.0, out)  # cospi(n + 1/2) = +0
    return np.where(np.isfinite(x), out, np.nan)


# ---- exponents, roots, norms -----------------------------------------------------------------------
@_errstate
def logb(x):
    x = np.asarray(x, F64)
    _, e = np.frexp(x)
    out = (e - 1).astype(F64)
    out = np.where(x == 0, -np.inf, np.where(np.isinf(x), np.inf, out))
    return np.where(np.isnan(x), np.nan, out)


@_errstate
def ilogb(x):
    x = np.asarray(x, F64)
    _, e = np.frexp(x)
    out = (e - 1).astype(np.int64)
    out = np.where((x == 0) | np.isnan(x), INT32_MIN, np.where(np.isinf(x), INT32_MAX, out))
    return out.astype(np.int64)


@_errstate
def rcp64h(x):
    """1/x on the high 32 bits of x, result cut to its high 32 bits (PTX rcp.approx.ftz.f64)."""
    x = np.asarray(x, F64)
    mask = np.uint64(0xFFFFFFFF00000000)
    hi = (x.view(np.uint64) & mask).view(F64)
    hi = np.where(np.abs(hi) < 2.0**-1022, np.copysign(0.0, x), hi)  # flush subnormals
    r = ((1.0 / hi).view(np.uint64) & mask).view(F64)
    r = np.where(np.abs(r) < 2.0**-1022, np.copysign(0.0, r), r)
    return np.where(np.isnan(x), np.nan, r)


@_errstate
def rcbrt(x):
    """1 / cbrt(x) and one Newton step whose residual 1 - x y^3 is summed from exact products: within CUDA's
    1 ulp in f64 (1 / cbrt rounded twice: 1.32 ulp at 3.61196e-05)."""
    x = np.asarray(x, F64)
    m, e = np.frexp(np.where(np.isfinite(x), x, 1.0))
    k = e - np.mod(e, 3)
    a = np.ldexp(m, e - k)  # x / 2^k, 2^k a cube: 0.5 <= |a| < 4
    y = 1.0 / np.cbrt(a)
    th, tl = two_product(y, y)
    ph, pl = two_product(a, y)
    r = fma64(-ph, th, np.ones_like(a)) - ph * tl - pl * th  # 1 - a * y^3
    out = np.ldexp(y + y * (r / 3.0), -k // 3)
    return np.where(np.isfinite(x) & (x != 0), out, 1.0 / np.cbrt(x))


@_errstate
def exp10(x):
    return np.power(10.0, np.asarray(x, F64))


def _scaled_squares(xs):
    """(a, e, s, s_lo): the |operands|, the exponent 2^e of the largest, and the sum of the squares of the
    operands scaled by 2^-e (exact) as the double-double s + s_lo (the tiny ones' squares fall far below the
    largest's ulp)."""
    a = np.broadcast_arrays(*(np.abs(np.asarray(x, F64)) for x in xs))
    m = np.maximum.reduce(a)
    _, e = np.frexp(np.where((m == 0) | ~np.isfinite(m), 1.0, m))
    hi, lo = np.zeros_like(m), np.zeros_like(m)
    for x in a:
        v = np.ldexp(x, -e)
        p, pe = two_product(v, v)
        hi, se = two_sum(hi, p)
        lo = lo + (pe + se)
    s = hi + lo
    return a, m, e, s, lo - (s - hi)


def _specials(a, m, out, at_zero, at_inf):
    any_inf = np.logical_or.reduce([np.isinf(v) for v in a])
    any_nan = np.logical_or.reduce([np.isnan(v) for v in a])
    out = np.where(m == 0, at_zero, out)
    return np.where(any_inf, at_inf, np.where(any_nan, np.nan, out))


@_errstate
def norm(*xs):
    """sqrt(sum of squares) within CUDA's 2 ulp (hypot, norm3d, norm4d): the double-double sum of scaled
    squares and one Newton correction of the square root (m sqrt(sum (x/m)^2) was 2.05 ulp on norm4d)."""
    a, m, e, s, s_lo = _scaled_squares(xs)
    y = np.sqrt(s)
    r = fma64(-y, y, s) + s_lo  # s + s_lo - y^2
    out = np.ldexp(y + r / (2 * y), e)
    return _specials(a, m, out, 0.0, np.inf)


@_errstate
def rnorm(*xs):
    """1 / sqrt(sum of squares) within CUDA's 1 ulp (rhypot) in f64: the double-double sum of scaled squares,
    one Newton step on the reciprocal square root whose residual comes from an exact fma (1 / norm rounded
    twice: 1.7 ulp at rhypot(2.5, 100))."""
    a, m, e, s, s_lo = _scaled_squares(xs)
    y = 1.0 / np.sqrt(s)
    q, qe = two_product(y, y)
    r = fma64(-s, q, np.ones_like(s)) - s * qe - s_lo * q  # 1 - (s + s_lo) * y * y
    out = np.ldexp(y + y * (0.5 * r), -e)
    return _specials(a, m, out, np.inf, 0.0)


@_errstate
def remainder(x, y):
    """IEEE remainder x - n y, n = x / y rounded half to even: exact (fmod is exact)."""
    x, y = np.asarray(x, F64), np.asarray(y, F64)
    r = np.fmod(x, y)
    ay, ar = np.abs(y), np.abs(r)
    odd = np.abs(np.fmod(x, 2 * ay)) >= ay  # trunc(x / y) is odd
    adjust = (2 * ar > ay) | ((2 * ar == ay) & odd)
    out = np.where(adjust, r - np.copysign(ay, r), r)
    return np.where(out == 0, np.copysign(0.0, x), out)


@_errstate
def ldexp(x, n):
    n = np.clip(np.asarray(n, np.int64), -(2**31), 2**31 - 1).astype(np.int32)
    return np.ldexp(np.asarray(x, F64), n)


# name -> (operand kinds "f" float / "i" int, result kind, fn); keys are the ISA enums libm1..libm4
LIBM: dict[str, tuple[str, str, object]] = {
    "erfinv": ("f", "f", erfinv),
    "erfcinv": ("f", "f", erfcinv),
    "erfcx": ("f", "f", erfcx),
    "normcdf": ("f", "f", normcdf),
    "normcdfinv": ("f", "f", normcdfinv),
    "tgamma": ("f", "f", tgamma),
    "j0": ("f", "f", j0),
    "j1": ("f", "f", j1),
    "y0": ("f", "f", y0),
    "y1": ("f", "f", y1),
    "i0": ("f", "f", i0),
    "i1": ("f", "f", i1),
    "sinpi": ("f", "f", sinpi),
    "cospi": ("f", "f", cospi),
    "rcbrt": ("f", "f", rcbrt),
    "exp10": ("f", "f", exp10),
    "logb": ("f", "f", logb),
    "ilogb": ("f", "i", ilogb),
    "rcp64h": ("f", "f", rcp64h),
    "rhypot": ("ff", "f", rnorm),
    "remainder": ("ff", "f", remainder),
    "ldexp": ("fi", "f", ldexp),
    "jn": ("if", "f", jn),
    "yn": ("if", "f", yn),
    "norm3d": ("fff", "f", norm),
    "rnorm3d": ("fff", "f", rnorm),
    "norm4d": ("ffff", "f", norm),
    "rnorm4d": ("ffff", "f", rnorm),
}
