"""Bessel functions of libdevice (j0, j1, y0, y1, jn, yn, cyl_bessel_i0, cyl_bessel_i1) in float64,
numpy and the standard library only (sim/libm.py's LIBM table holds them):

- J0, J1, Y0, Y1 for |x| <= 25: their power series summed in double-double arithmetic, so that
  the series' cancellation costs nothing, and in decimal arithmetic next to a zero of the function;
  beyond, Hankel's asymptotic expansion (numpy's sin and cos reduce huge arguments exactly);
- Jn: Miller's backward recurrence where n > |x|, the forward recurrence from J0, J1 elsewhere
  (stable there); Yn: the forward recurrence from Y0, Y1 (always stable); n < 0 gives NaN (CUDA);
- I0, I1: their positive power series for |x| <= 30, the asymptotic expansion beyond.
"""

from __future__ import annotations

import decimal
import math

import numpy as np

from .numerics import two_product, two_sum

F64 = np.float64
_D_PI = decimal.Decimal("3.14159265358979323846264338327950288419716939937510582097494")
_D_GAMMA = decimal.Decimal("0.57721566490153286060651209008240243104215933593992359880577")


def _errstate(fn):
    """``fn`` with numpy's floating-point warnings off: special functions meet inf and NaN by design."""

    def wrapped(*args):
        with np.errstate(all="ignore"):
            return fn(*args)

    wrapped.__name__ = fn.__name__
    return wrapped


_EULER = 0.5772156649015329


# ---- double-double arithmetic (value = hi + lo, ~106 bits), vectorized -----------------------------
def _fast_two_sum(a, b):  # |a| >= |b|
    s = a + b
    return s, b - (s - a)


def _dd_add(a, b):
    s, e = two_sum(a[0], b[0])
    return _fast_two_sum(s, e + a[1] + b[1])


def _dd_mul(a, b):
    p, e = two_product(a[0], b[0])
    return _fast_two_sum(p, e + a[0] * b[1] + a[1] * b[0])


def _dd_div_int(a, k: int):
    q = a[0] / k
    p, e = two_product(q, np.full_like(q, float(k)))
    return _fast_two_sum(q, ((a[0] - p) - e + a[1]) / k)


def _dd_recip_int(k: int):
    q = 1.0 / k
    p, e = two_product(np.float64(q), np.float64(k))
    return q, float((1.0 - p - e) / k)


def _series(x, order: int):
    """(J_order(x), S) for order 0, 1 and 0 < x <= 25 by the power series, summed in double-double
    so that its cancellation (terms up to ~5e8 for a result ~0.1) costs nothing; S is the series
    part of Y_order: sum (-1)^k t_k H_k for order 0, sum (-1)^k t_k (H_k + H_{k+1}) for order 1,
    t_k = (x/2)^(2k + order) / (k! (k + order)!)."""
    h = x / 2
    q = two_product(h, -h)  # -(x/2)^2, exact
    zero = np.zeros_like(x)
    term = (np.ones_like(x), zero) if order == 0 else (h, zero)
    j = term
    harm = (0.0, 0.0) if order == 0 else (1.0, 0.0)  # H_0 (+ H_1)
    ysum = (zero, zero) if order == 0 else term
    for k in range(1, 64):  # (x/2)^(2k) / (k!)^2 < 1e-19 from k = 50 at x = 25
        term = _dd_div_int(_dd_mul(term, q), k * (k + order))
        step = _dd_recip_int(k)
        if order == 1:
            step = _dd_add(step, _dd_recip_int(k + 1))
        harm = _dd_add(harm, step)
        j = _dd_add(j, term)
        ysum = _dd_add(ysum, _dd_mul(term, (np.full_like(x, harm[0]), np.full_like(x, harm[1]))))
    return j, ysum


def _dd_div(a, b):
    q1 = a[0] / b[0]
    p = _dd_mul((q1, np.zeros_like(q1)), b)
    r = _dd_add(a, (-p[0], -p[1]))
    return _fast_two_sum(q1, r[0] / b[0])


def _dd_const(d: decimal.Decimal):
    """A decimal constant as (hi, lo) floats."""
    hi = float(d)
    return hi, float(d - decimal.Decimal(hi))


with decimal.localcontext(decimal.Context(prec=60)):
    _DD_LN2 = _dd_const(decimal.Decimal(2).ln())
    _DD_GAMMA = _dd_const(_D_GAMMA)
    _DD_2_OVER_PI = _dd_const(2 / _D_PI)


def _dd_log(h):
    """ln(h) as double-double for finite h > 0: h = m 2**e, ln m = 2 atanh((m - 1) / (m + 1))."""
    m, e = np.frexp(h)
    low = m < math.sqrt(0.5)
    m, e = np.where(low, 2 * m, m), np.where(low, e - 1, e).astype(np.float64)
    zero = np.zeros_like(m)
    s = _dd_div((m - 1, zero), two_sum(m, np.ones_like(m)))  # m - 1 is exact
    s2, p, total = _dd_mul(s, s), s, s
    for k in range(1, 24):  # |s| <= 0.172: s**(2k) < 1e-33 by k = 24
        p = _dd_mul(p, s2)
        total = _dd_add(total, _dd_div_int(p, 2 * k + 1))
    return _dd_add(
        _dd_mul((e, zero), (np.full_like(m, _DD_LN2[0]), np.full_like(m, _DD_LN2[1]))), (2 * total[0], 2 * total[1])
    )


def _small(x, order: int, kind: str):
    """J or Y of order 0, 1 for 0 < x <= 25, all in double-double (exact to ~1e-23 absolute), and
    whether to redo it in decimal (a result within 1e-6 of a zero)."""
    j, ysum = _series(x, order)
    if kind == "j":
        out = j
    else:
        zero = np.zeros_like(x)
        c = _dd_add(
            _dd_log(x), (np.full_like(x, _DD_GAMMA[0] - _DD_LN2[0]), np.full_like(x, _DD_GAMMA[1] - _DD_LN2[1]))
        )
        if order == 0:  # Y0 = 2/pi ((ln(x/2) + gamma) J0 - S)
            inner = _dd_add(_dd_mul(c, j), (-ysum[0], -ysum[1]))
        else:  # Y1 = 2/pi ((ln(x/2) + gamma) J1 - S/2 - 1/x)
            inner = _dd_add(_dd_mul(c, j), (-ysum[0] / 2, -ysum[1] / 2))
            recip = _dd_div((np.ones_like(x), zero), (x, zero))
            inner = _dd_add(inner, (-recip[0], -recip[1]))
        out = _dd_mul((np.full_like(x, _DD_2_OVER_PI[0]), np.full_like(x, _DD_2_OVER_PI[1])), inner)
    value = out[0] + out[1]
    return value, (np.abs(value) < 1e-6) & (x > 0.5)


def _series_decimal(x: float, order: int, kind: str) -> float:
    """J_order(x) or Y_order(x) (order 0, 1), 0 < x <= 25, by the power series in decimal arithmetic:
    slow, exact to the last bit, for the results next to a zero."""
    ctx = decimal.Context(prec=40 + int(abs(x) * 0.45))
    with decimal.localcontext(ctx):
        d = decimal.Decimal(x)
        h = d / 2
        q = -h * h
        term = decimal.Decimal(1) if order == 0 else h
        j, k, harm = term, 0, decimal.Decimal(0)  # harm: H_k (order 0), H_k + H_{k+1} (order 1)
        ysum = decimal.Decimal(0) if order == 0 else term  # sum of terms * harm
        if order == 1:
            harm = decimal.Decimal(1)  # H_0 + H_1
        eps = decimal.Decimal(10) ** -(ctx.prec - 2)
        while True:
            k += 1
            term = term * q / (k * (k + order))
            harm += decimal.Decimal(1) / k + (decimal.Decimal(1) / (k + 1) if order == 1 else 0)
            j += term
            ysum += term * harm
            if abs(term) < eps and k > 2:
                break
        if kind == "j":
            return float(j)
        log_term = (h.ln() + _D_GAMMA) * 2 / _D_PI * j
        if order == 0:
            return float(log_term - 2 / _D_PI * ysum)
        # Y1 = 2/pi (ln(x/2) + gamma) J1 - 2/(pi x) - 1/pi sum (-1)^k (H_k + H_{k+1}) (x/2)^(2k+1)/(k!(k+1)!)
        return float(log_term - 2 / (_D_PI * d) - ysum / _D_PI)


def _hankel(x, nu):
    """(P, Q) of Hankel's asymptotic expansion for order nu, x large."""
    mu = 4.0 * nu * nu
    p, q = np.ones_like(x), np.zeros_like(x)
    a = np.ones_like(x)
    for k in range(1, 60):
        a = a * (mu - (2 * k - 1) ** 2) / (k * 8.0 * x)
        if k % 2:
            q = q + (a if k % 4 == 1 else -a)
        else:
            p = p + (a if k % 4 == 0 else -a)
    return p, q


def _asymptotic(x, nu, kind):
    """J_nu or Y_nu for x >= 25 (x > 0): sqrt(2/(pi x)) (P cos chi - Q sin chi), chi = x - (nu/2 + 1/4) pi."""
    p, q = _hankel(x, nu)
    c, s = np.cos(x), np.sin(x)
    phase = (nu / 2 + 0.25) * math.pi
    cp, sp = math.cos(phase), math.sin(phase)
    cos_chi, sin_chi = c * cp + s * sp, s * cp - c * sp
    amp = np.sqrt(2 / math.pi) / np.sqrt(x)
    return amp * (p * cos_chi - q * sin_chi) if kind == "j" else amp * (p * sin_chi + q * cos_chi)


def _bessel01(x, order, kind):
    x = np.asarray(x, F64)
    ax = np.abs(x)
    tiny = (ax < 2.0**-60) & (ax > 0)  # leading terms: J0 = 1, J1 = x/2, Y0 = 2/pi (ln(x/2) + gamma), Y1 = -2/(pi x)
    small = (ax <= 25.0) & (ax >= 2.0**-60)
    out = _asymptotic(np.where(small | (ax < 2.0**-60) | ~np.isfinite(ax), 30.0, ax), order, kind)
    near, redo = _small(np.where(small, ax, 1.0), order, kind)
    out = np.where(small, near, out)
    for i in zip(*np.nonzero(small & redo)):
        out[i] = _series_decimal(float(ax[i]), order, kind)
    if kind == "j":
        lead = np.ones_like(ax) if order == 0 else ax / 2
    else:
        lead = (np.log(ax) - _DD_LN2[0] + _DD_GAMMA[0]) * (2 / math.pi) if order == 0 else -(2 / math.pi) / ax
    out = np.where(tiny, lead, out)
    out = np.where(np.isinf(ax), 0.0, out)
    if kind == "j":
        out = np.where(ax == 0, 1.0 if order == 0 else 0.0, out)
        if order == 1:
            out = np.where(np.signbit(x), -out, out)  # odd
    else:
        out = np.where(ax == 0, -np.inf, np.where(x < 0, np.nan, out))
    return np.where(np.isnan(x), np.nan, out)


j0 = _errstate(lambda x: _bessel01(x, 0, "j"))
j1 = _errstate(lambda x: _bessel01(x, 1, "j"))
y0 = _errstate(lambda x: _bessel01(x, 0, "y"))
y1 = _errstate(lambda x: _bessel01(x, 1, "y"))


def _jn_miller(n: int, x: float) -> float:
    """J_n(x) for 0 < x < n by Miller's backward recurrence, normalized by J0 + 2 sum J_2k = 1."""
    ratio = math.e * x / (2 * n)
    if ratio == 0 or n * math.log(ratio) < -760:  # J_n(x) < (e x / 2n)^n underflows
        return 0.0
    m = 2 * ((n + int(math.sqrt(160 * n))) // 2)
    tox = 2.0 / x
    bjp, bj, ans, total, even = 0.0, 1.0, 0.0, 0.0, False
    for k in range(m, 0, -1):
        bjm = k * tox * bj - bjp
        bjp, bj = bj, bjm
        if abs(bj) > 1e250:
            bj, bjp, ans, total = bj * 1e-250, bjp * 1e-250, ans * 1e-250, total * 1e-250
        if even:
            total += bj
        even = not even
        if k == n:
            ans = bjp
    return ans / (2.0 * total - bj)


@_errstate
def jn(n, x):
    n, x = np.broadcast_arrays(np.asarray(n, np.int64), np.asarray(x, F64))
    ax = np.abs(x)
    out = np.empty(x.shape)
    j_prev, j_cur = j0(ax), j1(ax)
    top = int(np.max(np.where((n <= ax) & (n >= 2) & np.isfinite(ax), n, 0), initial=0))
    fwd = np.where(n == 0, j_prev, j_cur)
    for k in range(1, top):  # forward recurrence where n <= |x| (stable there)
        j_prev, j_cur = j_cur, (2 * k / ax) * j_cur - j_prev
        fwd = np.where(n == k + 1, j_cur, fwd)
    out[...] = fwd
    for i in zip(*np.nonzero((n > ax) & (n >= 2) & (ax > 0) & np.isfinite(ax))):
        out[i] = _jn_miller(int(n[i]), float(ax[i]))
    out = np.where(ax == 0, np.where(n == 0, 1.0, 0.0), out)
    out = np.where(np.isinf(ax), 0.0, out)
    out = np.where((x < 0) & (n % 2 == 1), -out, out)
    return np.where((n < 0) | np.isnan(x), np.nan, out)


@_errstate
def yn(n, x):
    n, x = np.broadcast_arrays(np.asarray(n, np.int64), np.asarray(x, F64))
    xs = np.where(x > 0, x, 1.0)
    y_prev, y_cur = y0(xs), y1(xs)
    out = np.where(n == 0, y_prev, y_cur)
    top = int(np.max(np.where((x > 0) & np.isfinite(x), n, 0), initial=0))
    for k in range(1, top):
        y_prev, y_cur = y_cur, np.where(np.isinf(y_cur), y_cur, (2 * k / xs) * y_cur - y_prev)
        out = np.where(n == k + 1, y_cur, out)
        if np.all(np.isinf(y_cur) | (n <= k + 1)):
            out = np.where(n > k + 1, y_cur, out)
            break
    out = np.where(x == 0, -np.inf, np.where(np.isinf(x), 0.0, out))
    return np.where((n < 0) | (x < 0) | np.isnan(x), np.nan, out)


def _bessel_i(x, order):
    x = np.asarray(x, F64)
    ax = np.abs(x)
    # positive power series for |x| <= 30: sum (x^2/4)^k / (k! (k+order)!) * (x/2)^order, its terms and
    # sum in double-double (in double each term's rounding compounds: 7.6 ulp at x = 27.4; CUDA's bound is 6)
    xs = np.minimum(ax, 30.0)
    h = xs / 2
    q = two_product(h, h)  # (x/2)^2, exact
    zero = np.zeros_like(xs)
    term = (np.ones_like(xs), zero) if order == 0 else (h, zero)
    acc = term
    for k in range(1, 90):
        term = _dd_div_int(_dd_mul(term, q), k * (k + order))
        acc = _dd_add(acc, term)
    s = acc[0] + acc[1]
    # asymptotic: e^x / sqrt(2 pi x) * sum (-1)^k a_k(order) / x^k
    xb = np.maximum(ax, 30.0)
    mu = 4.0 * order * order
    a, t = np.ones_like(xb), np.ones_like(xb)
    for k in range(1, 30):
        a = -a * (mu - (2 * k - 1) ** 2) / (k * 8.0 * xb)
        t = t + a
    half = np.exp(np.minimum(xb, 1500.0) / 2)
    far = half * (half / np.sqrt(2 * math.pi * xb) * t)  # inf beyond |x| ~ 713
    out = np.where(ax <= 30.0, s, np.where(ax > 714.0, np.inf, far))
    if order == 1:
        out = np.where(np.signbit(x), -out, out)
    return np.where(np.isnan(x), np.nan, out)


i0 = _errstate(lambda x: _bessel_i(x, 0))
i1 = _errstate(lambda x: _bessel_i(x, 1))
