"""Exact references for IEEE rounding: a rational rounded once to f32/f64 in any rounding mode,
square roots through integer square roots, and the IEEE ops (add, sub, mul, div, rcp, sqrt, fma)
on float arrays with numpy's special values. Pure Python: shared by the simulator tests and the
libdevice kernel tests."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

F32_MAX, F64_MAX = float(np.finfo(np.float32).max), float(np.finfo(np.float64).max)
FORMAT = {np.float32: (24, -126, F32_MAX), np.float64: (53, -1022, F64_MAX)}
MODE = {"rn": "rtne", "rz": "rtz", "ru": "rtp", "rd": "rtn"}


def _finish(n: int, qexp: int, sign: int, inexact_above_half, inexact: bool, dtype, mode: str) -> float:
    """sign * n * 2**qexp rounded up or not by the mode (n: the truncated magnitude), overflow by mode."""
    p, emin, fmax = FORMAT[dtype]
    if inexact:
        if mode == "rtne":
            n += inexact_above_half()
        elif (mode == "rtp" and sign > 0) or (mode == "rtn" and sign < 0):
            n += 1
    v = Fraction(n) * Fraction(2) ** qexp
    if v > fmax:
        to_inf = mode == "rtne" or (mode == "rtp" and sign > 0) or (mode == "rtn" and sign < 0)
        return sign * (math.inf if to_inf else fmax)
    return math.copysign(float(v), sign)


def _exponent(a: Fraction) -> int:
    """floor(log2(a)) for a > 0."""
    e = a.numerator.bit_length() - a.denominator.bit_length()
    return e - 1 if Fraction(2) ** e > a else e


def round_fraction(q: Fraction, dtype, mode: str) -> float:
    p, emin, _ = FORMAT[dtype]
    sign, a = (-1 if q < 0 else 1), abs(q)
    qexp = max(_exponent(a), emin) - (p - 1)
    scaled = a / Fraction(2) ** qexp
    n = scaled.numerator // scaled.denominator
    rem = scaled - n
    return _finish(
        n,
        qexp,
        sign,
        lambda: int(rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2 == 1)),
        rem != 0,
        dtype,
        mode,
    )


def round_sqrt(a: Fraction, dtype, mode: str) -> float:
    """sqrt(a) rounded in the mode, a > 0 finite: integer square roots (no ties exist)."""
    p, emin, _ = FORMAT[dtype]
    qexp = max(_exponent(a) // 2, emin) - (p - 1)
    big = a / Fraction(4) ** qexp
    n = math.isqrt(big.numerator // big.denominator)
    inexact = Fraction(n * n) != big
    return _finish(n, qexp, 1, lambda: int((2 * n + 1) ** 2 < 4 * big), inexact, dtype, mode)


def _exact_zero_sign(op, xs, mode):
    a, b = (xs[0] * xs[1], xs[2]) if op == "fma" else (xs[0], xs[1] if op == "add" else -xs[1])
    if a == 0 and b == 0 and math.copysign(1, a) == math.copysign(1, b):
        return math.copysign(0.0, a)
    return -0.0 if mode == "rtn" else 0.0


ARITH = {  # on floats (IEEE special values) and on Fractions (exact)
    "add": lambda a: a[0] + a[1],
    "sub": lambda a: a[0] - a[1],
    "mul": lambda a: a[0] * a[1],
    "div": lambda a: a[0] / a[1],
    "rcp": lambda a: 1 / a[0],
    "fma": lambda a: a[0] * a[1] + a[2],
}


def ieee_reference(op: str, xs, dtype, mode: str):
    """op on float arrays xs, exactly, rounded once in the mode (IEEE special values from numpy)."""
    out = np.empty(len(xs[0]), dtype)
    for i in range(len(out)):
        v = [float(x[i]) for x in xs]
        f = [np.float64(u) for u in v]
        with np.errstate(all="ignore"):
            special = np.sqrt(f[0]) if op == "sqrt" else ARITH[op](f)
        if not all(map(math.isfinite, v)) or (op in ("div", "rcp") and v[-1] == 0) or (op == "sqrt" and v[0] <= 0):
            out[i] = special
            continue
        q = [Fraction(u) for u in v]
        if op == "sqrt":
            out[i] = round_sqrt(q[0], dtype, mode)
            continue
        exact = ARITH[op](q)
        if exact == 0:
            out[i] = _exact_zero_sign(op, v, mode) if op in ("add", "sub", "fma") else special
        else:
            out[i] = round_fraction(exact, dtype, mode)
    return out
