"""IEEE add, sub, mul, div, sqrt, recip, fma and int -> float conversion in a chosen rounding mode
(ISA enum ``round``: rtne, rtz, rtp, rtn), each rounded ONCE from the exact result.

- f32 and narrower: the exact result rounded to odd at float64's 53 bits (>= p + 2 bits), then
  rounded to the type in the mode (``numerics.round_float``); rounding to odd first never
  changes the final result (Boldo & Melquiond).
- f64: the round-to-nearest result r, then the sign of the error (exact - r) from an error-free
  transform (TwoSum; an fma residual for mul, div, sqrt), and one step toward the mode's side
  when the error points there. Elements where those transforms lose bits (results or residuals
  near underflow, overflow) and fma decide the sign with exact rationals instead.

An exact zero sum (x + -x, or a*b + c) is -0 under rtn and +0 otherwise, as IEEE 754 says.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from . import numerics as nx
from .numerics import F64, round_float


def _two_sum_error(a, b):
    return nx.two_sum(a, b)[1]


def _odd_fix(q, err_sign):
    """q rounded to odd given the sign of (exact - q): inexact even q steps toward the exact value."""
    fix = np.isfinite(q) & ((err_sign > 0) | (err_sign < 0)) & ((q.view(np.int64) & 1) == 0)
    if fix.any():
        q = np.where(fix, np.nextafter(q, np.where(err_sign > 0, np.inf, -np.inf)), q)
    return q


def _odd64(op: str, xs):
    """float64 holding the exact result of op on (<= 24-bit) inputs, rounded to odd."""
    if op == "add":
        return nx.add_round_to_odd(xs[0], xs[1])
    if op == "sub":
        return nx.add_round_to_odd(xs[0], -xs[1])
    if op == "mul":
        return xs[0] * xs[1]  # 48-bit product: exact
    if op == "fma":
        return nx.add_round_to_odd(xs[0] * xs[1], xs[2])
    if op in ("div", "recip"):
        a, b = (np.ones_like(xs[0]), xs[0]) if op == "recip" else xs
        with np.errstate(all="ignore"):
            q = a / b
            rem = nx.fma64(-q, b, a)  # exact: the remainder of a nearest quotient is representable
        return _odd_fix(q, np.sign(rem) * np.sign(b))
    if op == "sqrt":
        with np.errstate(all="ignore"):
            q = np.sqrt(xs[0])
            rem = nx.fma64(-q, q, xs[0])
        return _odd_fix(q, np.sign(rem))
    raise KeyError(op)


# ---- f64: nearest, then the error's sign -----------------------------------------------------------
_TINY, _HUGE = 2.0**-900, 2.0**960


def _exact_error_sign(op: str, r: float, xs) -> int:
    """sign(exact - r) with rationals; r is finite or +-inf, the operands finite."""
    if math.isinf(r):
        return -1 if r > 0 else 1
    a = [Fraction(x) for x in xs]
    fr = Fraction(r)
    if op == "sqrt":  # exact = sqrt(a): compare squares (r >= 0)
        d = a[0] - fr * fr
    else:
        exact = {
            "add": lambda: a[0] + a[1],
            "sub": lambda: a[0] - a[1],
            "mul": lambda: a[0] * a[1],
            "div": lambda: a[0] / a[1],
            "recip": lambda: 1 / a[0],
            "fma": lambda: a[0] * a[1] + a[2],
        }[op]()
        d = exact - fr
    return (d > 0) - (d < 0)


def _error_sign64(op: str, r, xs):
    """sign(exact - r) for float64 operands xs and the nearest result r."""
    with np.errstate(all="ignore"):
        if op in ("add", "sub"):
            b = xs[1] if op == "add" else -xs[1]
            e = np.sign(_two_sum_error(xs[0], b))
            safe = np.isfinite(r)
        elif op == "mul":
            e = np.sign(nx.fma64(xs[0], xs[1], -r))
            safe = np.isfinite(r) & ((np.abs(r) > _TINY) | (xs[0] == 0) | (xs[1] == 0))
        elif op in ("div", "recip"):
            a, b = (np.ones_like(xs[0]), xs[0]) if op == "recip" else xs
            e = np.sign(nx.fma64(-r, b, a)) * np.sign(b)
            safe = np.isfinite(r) & (np.abs(r) > _TINY) & (np.abs(a) > _TINY) & (np.abs(b) < _HUGE)
            safe |= (a == 0) | np.isinf(a) | np.isinf(b) | (b == 0)  # exact zero/inf/nan results
        elif op == "sqrt":
            e = np.sign(nx.fma64(-r, r, xs[0]))
            safe = (xs[0] > _TINY) | ~np.isfinite(xs[0]) | (xs[0] <= 0)
        else:  # fma: always exactly
            e = np.zeros_like(r)
            safe = np.zeros(r.shape, bool)
    e = np.where(np.isnan(e), 0.0, e)
    finite = np.ones(r.shape, bool)
    for x in xs:
        finite &= np.isfinite(x)
    edge = ~safe & finite & ~np.isnan(r)
    for i in zip(*np.nonzero(edge)):
        e[i] = _exact_error_sign(op, float(r[i]), [float(x[i]) for x in xs])
    return e


def _step(r, err, mode: str):
    """r moved one ulp toward the mode's side when the exact value lies there."""
    if mode == "rtne":
        return r
    if mode == "rtp":
        up, down = err > 0, np.zeros(r.shape, bool)
    elif mode == "rtn":
        up, down = np.zeros(r.shape, bool), err < 0
    else:  # rtz: toward zero
        up, down = (err > 0) & (r < 0), (err < 0) & (r > 0)
    with np.errstate(all="ignore"):  # stepping off max finite overflows to inf, as wanted
        r = np.where(up, np.nextafter(r, np.inf), r)
        return np.where(down, np.nextafter(r, -np.inf), r)


def _nearest64(op: str, xs):
    with np.errstate(all="ignore"):
        return {
            "add": lambda: xs[0] + xs[1],
            "sub": lambda: xs[0] - xs[1],
            "mul": lambda: xs[0] * xs[1],
            "div": lambda: xs[0] / xs[1],
            "recip": lambda: 1.0 / xs[0],
            "sqrt": lambda: np.sqrt(xs[0]),
            "fma": lambda: nx.fma64(*xs),
        }[op]()


def _zero_sign(op: str, out, xs, mode: str):
    """IEEE: an exact zero sum of addends that are not both +0 (or both -0) is -0 under rtn, +0
    else. A zero that is a rounded tiny result keeps the sign it has."""
    if op not in ("add", "sub", "fma"):
        return out
    with np.errstate(all="ignore"):
        a, b = (xs[0] * xs[1], xs[2]) if op == "fma" else (xs[0], xs[1] if op == "add" else -xs[1])
        exact_zero = (out == 0) & (a + b == 0)  # a sum of two float64s is 0 only when exactly 0
    if op == "fma":  # a float64 product may have underflowed: check those exactly
        for i in zip(*np.nonzero(exact_zero & (a == 0) & (xs[0] != 0) & (xs[1] != 0))):
            exact_zero[i] = Fraction(float(xs[0][i])) * Fraction(float(xs[1][i])) + Fraction(float(xs[2][i])) == 0
    both_neg = np.signbit(a) & np.signbit(b) & (a == 0) & (b == 0)
    both_pos = ~np.signbit(a) & ~np.signbit(b) & (a == 0) & (b == 0)
    sign = np.where(both_neg, -1.0, np.where(both_pos, 1.0, -1.0 if mode == "rtn" else 1.0))
    return np.where(exact_zero, np.copysign(np.zeros_like(out), sign).astype(out.dtype), out)


def ieee_op(op: str, xs, dtype: str, mode: str) -> np.ndarray:
    """op (add, sub, mul, div, recip, sqrt, fma) on storage arrays ``xs`` of float ``dtype``,
    rounded once in ``mode``."""
    xs = [np.asarray(x).astype(F64) for x in xs]
    if dtype == "f64":
        r = _nearest64(op, xs)
        out = _step(r, _error_sign64(op, r, xs), mode)
    else:
        with np.errstate(all="ignore"):
            out = round_float(_odd64(op, xs), dtype, mode)
    return _zero_sign(op, out, xs, mode)


# ---- int -> float --------------------------------------------------------------------------------
def int_to_float(x: np.ndarray, signed: bool, dtype: str, mode: str) -> np.ndarray:
    """Integer array (read signed or unsigned) -> float ``dtype`` rounded once in ``mode``."""
    if dtype != "f64":
        return round_float(nx.int_to_f64_odd(x, signed), dtype, mode)
    x = x.astype(np.int64) if signed else x.astype(np.uint64)
    r = x.astype(F64)  # numpy's conversion rounds to nearest
    big = np.abs(r) >= 2.0**53
    err = np.zeros(r.shape)
    for i in zip(*np.nonzero(big)):
        d = int(x[i]) - int(r[i])
        err[i] = (d > 0) - (d < 0)
    return _step(r, err, mode)
