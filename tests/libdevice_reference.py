"""References for tests/test_libdevice.py, by Triton libdevice function name:
``REFERENCE[name](args, result dtype name) -> (want, tolerance)``, where tolerance 0 is bit-exact,
an int k is within k ulps (NaN where NaN, inf where inf, zeros' signs equal), ("abs", k, atol) is
within k ulps or atol (Bessel functions near their zeros) and ("rel", r, atol) within a relative r.

Exact results come from rationals and integers (unit/exact_rounding.py), correctly rounded and
special functions from mpmath (scipy's float64 special functions miss by several ulps), the rest
from numpy in float64, rounded once."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import scipy.special as sp
from unit.exact_rounding import MODE, ieee_reference, round_fraction

NP = {"fp32": np.float32, "fp64": np.float64, "int32": np.int32, "uint32": np.uint32, "int64": np.int64}
NP["uint64"] = np.uint64


def _to_int(x: float, mode: str, bits: int, signed: bool) -> int:
    """cvt.<mode>i.sat: NaN -> 0, saturating."""
    lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    if math.isnan(x):
        return 0
    if math.isinf(x):
        return hi if x > 0 else lo
    q = Fraction(x)
    n = {"rn": round(q), "rz": math.trunc(q), "ru": math.ceil(q), "rd": math.floor(q)}[mode]
    return min(max(n, lo), hi)


def _wrap(values, dtype):
    bits = np.dtype(dtype).itemsize * 8
    return np.array([v % 2**bits for v in values], np.uint64 if bits == 64 else np.uint32).view(dtype)


# ---- references by Triton function name -> fn(args, result dtype) -> (want, tolerance) ------------
# tolerance: 0 = bit-exact; k = within k ulps (NaN where NaN, inf where inf, zeros' signs equal);
# ("abs", k, atol) = within k ulps or atol (Bessel functions, near their zeros)
def _ieee(op, mode):
    return lambda xs, ret: (ieee_reference(op, xs, NP[ret], MODE[mode]), 0)


def _f64(fn, tol=1):
    """A function computed in float64 by numpy/scipy, rounded once to the result type."""

    def ref(xs, ret):
        with np.errstate(all="ignore"):
            want = np.asarray(fn(*(x.astype(np.float64) if x.dtype.kind == "f" else x for x in xs)))
        return want.astype(NP[ret]), tol

    return ref


def _bits(fn):
    return lambda xs, ret: (np.asarray(fn(*xs)).astype(NP[ret]), 0)


def _to_int_ref(mode, bits, signed):
    return lambda xs, ret: (_wrap([_to_int(float(v), mode, bits, signed) for v in xs[0]], NP[ret]), 0)


def _from_int_ref(mode):
    return lambda xs, ret: (
        np.array([round_fraction(Fraction(int(v)), NP[ret], MODE[mode]) if v else 0.0 for v in xs[0]], NP[ret]),
        0,
    )


def _per_element(fn):
    def ref(xs, ret):
        vals = [fn(*(x[i].item() for x in xs)) for i in range(len(xs[0]))]
        return (np.array(vals, NP[ret]) if ret.startswith("fp") else _wrap(vals, NP[ret])), 0

    return ref


def _remainder(x, y):
    if math.isnan(x) or math.isnan(y) or math.isinf(x) or y == 0:
        return math.nan
    return math.remainder(x, y)


def _logb(x):
    if math.isnan(x):
        return x
    if math.isinf(x):
        return math.inf
    return -math.inf if x == 0 else float(math.frexp(x)[1] - 1)


def _ilogb(x):
    if math.isnan(x) or x == 0:
        return -(2**31)
    return 2**31 - 1 if math.isinf(x) else math.frexp(x)[1] - 1


def _bessel(scipy_fn, mp_fn):
    """scipy for moderate arguments, mpmath where scipy's large-argument formulas lose digits;
    J/Y of order n < 0 are NaN (CUDA's jnf/ynf), of +-inf 0."""

    def ref(*a):
        *n, x = a
        n = n[0] if n else np.zeros(len(x), int)
        out = np.where(n < 0, np.nan, scipy_fn(n, x))
        for i in np.nonzero((np.abs(x) > 1000) & np.isfinite(x) & (n >= 0))[0]:
            v = mp_fn(int(n[i]), mpmath.mpf(float(x[i])))
            out[i] = float(v) if isinstance(v, mpmath.mpf) else math.nan  # Y of x < 0: complex
        out = np.where(x == np.inf, 0.0, out)
        out = np.where(x == -np.inf, 0.0 if scipy_fn is sp.jv else np.nan, out)  # Y of x < 0 is NaN
        return np.where(n < 0, np.nan, out)

    return ref


def _mp(fn, tol, dps=40):
    """mpmath at ``dps`` digits (scipy's special functions miss by several ulps in float64),
    rounded once to the result type (f32 results: within 1 ulp). ``fn(v)`` gets the float."""

    def ref(xs, ret):
        x = xs[0].astype(np.float64)
        want = np.empty(len(x))
        for i, v in enumerate(x.tolist()):
            with mpmath.workdps(dps):
                r = fn(v)
            want[i] = float(r) if isinstance(r, (mpmath.mpf, float, int)) else math.nan
        return want.astype(NP[ret]), tol if ret == "fp64" else 1

    return ref


def _or(special, fn):
    """special(v) (a float, or None to go on) before fn(mpf(v)) (v itself: an exact float64)."""

    def f(v):
        r = special(v)
        return r if r is not None else fn(mpmath.mpf(v))

    return f


def _erfcinv(y):
    """x with erfc(x) = y for 0 < y < 2: erfinv(1 - y) in the middle (1 - y exact), a root of erfc
    in the tails (no 1 - y there to lose the digits of a tiny y)."""
    y = mpmath.mpf(y)
    if 0.5 <= y <= 1.5:
        return mpmath.erfinv(1 - y)
    c = y if y < 1 else 2 - y
    x = mpmath.findroot(lambda t: mpmath.log(mpmath.erfc(t)) - mpmath.log(c), mpmath.sqrt(-mpmath.log(c)))
    return x if y < 1 else -x


def _normcdfinv(p):
    if math.isnan(p) or p < 0 or p > 1:
        return math.nan
    if p in (0, 1):
        return -math.inf if p == 0 else math.inf
    return -mpmath.sqrt(2) * _erfcinv(2 * p)


def _nan_outside(lo, hi, at_lo, at_hi):
    def special(v):
        if math.isnan(v) or v < lo or v > hi:
            return math.nan
        return at_lo if v == lo else at_hi if v == hi else None

    return special


def _gamma_special(v):
    if math.isnan(v) or v == -math.inf or (v < 0 and v == math.floor(v)):
        return math.nan
    if v == 0:
        return math.copysign(math.inf, v)
    return math.inf if v == math.inf or v > 172 else None


def _lgamma_special(v):
    if math.isnan(v):
        return v
    if math.isinf(v) or (v <= 0 and v == math.floor(v)):
        return math.inf
    return None


def _erfcx_special(v):
    if math.isnan(v):
        return v
    return math.inf if v < -27 else 0.0 if v == math.inf else None


def _erfcx(x):
    if x > 1e6:  # mpmath's erfc gives up there: the asymptotic series, exact to far beyond float64
        return (1 - 1 / (2 * x * x) + 3 / (4 * x**4)) / (x * mpmath.sqrt(mpmath.pi))
    return mpmath.exp(x * x) * mpmath.erfc(x)


def _rsqrt_rn(x):
    """1/sqrt(x) correctly rounded to f32: 60 digits leave no doubt (the exact value is irrational,
    and no closer than ~2**-74 relative to a midpoint)."""
    if math.isnan(x) or x < 0:
        return math.nan
    if x == 0 or math.isinf(x):
        return math.copysign(math.inf, x) if x == 0 else 0.0
    with mpmath.workdps(60):
        r = 1 / mpmath.sqrt(mpmath.mpf(x))
        man, exp = r.man_exp
    return round_fraction(Fraction(int(man)) * Fraction(2) ** int(exp), np.float32, "rtne")


def _sinpi_special(v):
    if not math.isfinite(v):
        return math.nan
    return math.copysign(0.0, v) if v == math.floor(v) else None  # sinpi(+-n) = +-0


def _cospi_special(v):
    if not math.isfinite(v):
        return math.nan
    return 0.0 if v % 1 == 0.5 else None  # cospi(n + 1/2) = +0


def _odd_zero(special):
    """f(+-0) = +-0 before special."""
    return lambda v: v if v == 0 else special(v)


def _hi_lo(hi, lo):
    return ((hi.astype(np.int64) << 32) | (lo.astype(np.int64) & 0xFFFFFFFF)).view(np.float64)


def _norm(*xs):
    a = np.stack([np.abs(x) for x in xs])
    m = a.max(0)
    with np.errstate(all="ignore"):
        out = m * np.sqrt(((a / np.where(m == 0, 1, m)) ** 2).sum(0))
    out = np.where(m == 0, 0.0, out)
    return np.where(np.isinf(a).any(0), np.inf, np.where(np.isnan(a).any(0), np.nan, out))


def _rnorm(*xs):
    """1 / sqrt(sum of squares) in mpmath for finite operands (1 / _norm overflows to 0 at the largest
    floats, where the exact result is a subnormal), 1 / _norm otherwise."""
    out = 1 / _norm(*xs)
    for i in np.nonzero(np.isfinite(np.stack(xs)).all(0) & (out != np.inf))[0]:
        with mpmath.workdps(40):
            out[i] = float(1 / mpmath.sqrt(sum(mpmath.mpf(float(x[i])) ** 2 for x in xs)))
    return out


def _fdim(x, y):
    return np.where(np.isnan(x) | np.isnan(y), np.nan, np.where(x > y, x - y, 0.0))


def _brev(bits):
    return lambda v: int(f"{v % 2**bits:0{bits}b}"[::-1], 2)


def _byte_perm(x, y, s):
    both = (x % 2**32) | ((y % 2**32) << 32)
    return sum(((both >> (8 * ((s >> (4 * n)) & 7))) & 0xFF) << (8 * n) for n in range(4))


def _ffs(bits):
    return lambda v: 0 if v % 2**bits == 0 else ((v % 2**bits) & -(v % 2**bits)).bit_length()


def _mul24(signed):
    def f(a, b):
        a, b = a & 0xFFFFFF, b & 0xFFFFFF
        if signed:
            a, b = a - (a >> 23) * 2**24, b - (b >> 23) * 2**24
        return a * b

    return f


def _mulhi(bits):
    return lambda a, b: (a * b) >> bits


def _round_half_away(x):
    if not math.isfinite(x):
        return x
    return math.copysign(float(math.floor(Fraction(abs(x)) + Fraction(1, 2))), x)


def _width(fn):
    """An integer function of the operands' bit width."""
    return lambda xs, ret: _per_element(fn(8 * xs[0].itemsize))(xs, ret)


REFERENCE = {
    "abs": _per_element(abs),
    "fabs": _f64(np.abs, 0),
    "floor": _f64(np.floor, 0),
    "ceil": _f64(np.ceil, 0),
    "trunc": _f64(np.trunc, 0),
    "rint": _f64(np.rint, 0),
    "nearbyint": _f64(np.rint, 0),
    "round": _per_element(_round_half_away),
    "copysign": _f64(np.copysign, 0),
    "fmod": _f64(np.fmod, 0),
    "remainder": _per_element(_remainder),
    "logb": _per_element(_logb),
    "ilogb": _per_element(_ilogb),
    "ldexp": lambda xs, ret: (np.ldexp(xs[0], xs[1]), 0),
    "scalbn": lambda xs, ret: (np.ldexp(xs[0], xs[1]), 0),
    "nextafter": lambda xs, ret: (np.nextafter(xs[0], xs[1]), 0),
    "fdim": _f64(_fdim, 0),
    "saturatef": _f64(lambda x: np.where(np.isnan(x), 0.0, np.clip(x, 0.0, 1.0)) + 0.0, 0),  # -0 -> +0
    "isnan": _bits(np.isnan),
    "isinf": _bits(np.isinf),
    "signbit": _bits(np.signbit),
    "finitef": _bits(np.isfinite),
    "isfinited": _bits(np.isfinite),
    "fma": _ieee("fma", "rn"),
    "fast_dividef": _ieee("div", "rn"),
    "sqrt": _ieee("sqrt", "rn"),
    "rsqrt": _f64(lambda x: 1 / np.sqrt(x)),
    "rsqrt_rn": _per_element(_rsqrt_rn),
    "llrint": _per_element(lambda x: _to_int(x, "rn", 64, True)),  # saturating, NaN -> 0, like cvt.sat
    "llround": _per_element(lambda x: _to_int(_round_half_away(x), "rz", 64, True)),
    "float_as_int": _bits(lambda x: x.view(np.int32)),
    "float_as_uint": _bits(lambda x: x.view(np.int32)),
    "int_as_float": _bits(lambda x: x.view(np.float32)),
    "uint_as_float": _bits(lambda x: x.view(np.float32)),
    "double_as_longlong": _bits(lambda x: x.view(np.int64)),
    "longlong_as_double": _bits(lambda x: x.view(np.float64)),
    "hiloint2double": _bits(_hi_lo),
    "double2loint": _bits(lambda x: x.view(np.int64).astype(np.int32)),
    "double2hiint": _bits(lambda x: (x.view(np.int64) >> 32).astype(np.int32)),
    "int2double_rn": _bits(lambda x: x.astype(np.float64)),
    "uint2double_rn": _bits(lambda x: x.astype(np.float64)),
    "clz": _width(lambda bits: lambda v: bits - (v % 2**bits).bit_length()),
    "popc": _width(lambda bits: lambda v: bin(v % 2**bits).count("1")),
    "brev": _width(_brev),
    "byte_perm": _per_element(_byte_perm),
    "ffs": _width(_ffs),
    "mulhi": _width(_mulhi),
    "mul24": lambda xs, ret: _per_element(_mul24(xs[0].dtype.kind == "i"))(xs, ret),
    "hadd": _per_element(lambda a, b: (a + b) >> 1),
    "rhadd": _per_element(lambda a, b: (a + b + 1) >> 1),
    "sad": _per_element(lambda a, b, c: abs(a - b) + c),
    # transcendental and special functions: float64 numpy/scipy, rounded once
    "exp": _f64(np.exp),
    "exp2": _f64(np.exp2),
    "exp10": _f64(lambda x: 10.0**x),
    "expm1": _f64(np.expm1),
    "log": _f64(np.log),
    "log2": _f64(np.log2),
    "log10": _f64(np.log10),
    "log1p": _f64(np.log1p),
    "sin": _f64(np.sin),
    "cos": _f64(np.cos),
    "tan": _f64(np.tan),
    "asin": _f64(np.arcsin),
    "acos": _f64(np.arccos),
    "atan": _f64(np.arctan),
    "sinh": _f64(np.sinh),
    "cosh": _f64(np.cosh),
    "tanh": _f64(np.tanh),
    "asinh": _f64(np.arcsinh),
    "acosh": _f64(np.arccosh),
    "atanh": _f64(np.arctanh),
    "cbrt": _f64(np.cbrt),
    "rcbrt": _f64(lambda x: 1 / np.cbrt(x)),
    "pow": lambda xs, ret: _f64(np.power, 1)([xs[0], xs[1].astype(np.float64)], ret),
    "atan2": _f64(np.arctan2),
    "hypot": _f64(np.hypot),
    "rhypot": _f64(lambda x, y: _rnorm(x, y), 1),
    "norm3d": _f64(_norm, 2),
    "rnorm3d": _f64(lambda *a: _rnorm(*a), 2),
    "norm4d": _f64(_norm, 2),
    "rnorm4d": _f64(lambda *a: _rnorm(*a), 2),
    "erf": _mp(_or(_odd_zero(lambda v: math.erf(v) if not math.isfinite(v) else None), mpmath.erf), 2),
    "erfc": _mp(_or(lambda v: math.erfc(v) if not -10 < v < 30 else None, mpmath.erfc), 4),  # 2 or 0 beyond
    "erfinv": _mp(_or(_odd_zero(_nan_outside(-1, 1, -math.inf, math.inf)), mpmath.erfinv), 2),
    "erfcinv": _mp(_or(_nan_outside(0, 2, math.inf, -math.inf), _erfcinv), 2),
    "erfcx": _mp(_or(_erfcx_special, _erfcx), 4),
    "normcdf": _mp(_or(lambda v: v if math.isnan(v) else 0.0 if v < -40 else 1.0 if v > 40 else None, mpmath.ncdf), 5),
    "normcdfinv": _mp(_normcdfinv, 5),
    # CUDA: 4 ulp outside [-11.0001, -2.2637], an absolute bound inside (near the zeros of lgamma)
    "lgamma": _mp(_or(_lgamma_special, lambda x: mpmath.re(mpmath.loggamma(x))), ("abs", 4, 1e-15)),
    "tgamma": _mp(_or(_gamma_special, mpmath.gamma), 8),
    "sinpi": _mp(_or(_sinpi_special, mpmath.sinpi), 2),
    "cospi": _mp(_or(_cospi_special, mpmath.cospi), 2),
    "j0": _f64(lambda x: _bessel(sp.jv, mpmath.besselj)(np.zeros(len(x), int), x), ("abs", 2, 1e-14)),
    "j1": _f64(lambda x: _bessel(sp.jv, mpmath.besselj)(np.ones(len(x), int), x), ("abs", 2, 1e-14)),
    "y0": _f64(lambda x: _bessel(sp.yn, mpmath.bessely)(np.zeros(len(x), int), x), ("abs", 2, 1e-14)),
    "y1": _f64(lambda x: _bessel(sp.yn, mpmath.bessely)(np.ones(len(x), int), x), ("abs", 2, 1e-14)),
    # the recurrences' error grows with the order n (<= 30 here)
    "jn": _f64(_bessel(sp.jv, mpmath.besselj), ("abs", 16, 1e-14)),
    "yn": _f64(_bessel(sp.yn, mpmath.bessely), ("abs", 16, 1e-14)),
    "cyl_bessel_i0": _mp(_or(lambda v: abs(v) if not math.isfinite(v) else None, lambda x: mpmath.besseli(0, x)), 6),
    "cyl_bessel_i1": _mp(
        _or(_odd_zero(lambda v: v if not math.isfinite(v) else None), lambda x: mpmath.besseli(1, x)), 6
    ),
    # a gross approximation (PTX rcp.approx.ftz.f64): 20 good bits, subnormals flushed
    "rcp64h": _f64(
        lambda x: np.where(np.abs(x) < 2.0**-1022, np.copysign(np.inf, x), 1 / x), ("rel", 2.0**-19, 2.0**-1022)
    ),
}
for _f in ("exp", "log", "log2", "log10", "sin", "cos", "tan", "pow", "exp10"):
    REFERENCE[f"fast_{_f}f"] = REFERENCE[_f]
REFERENCE["fast_tanhf"] = REFERENCE["tanh"]
for _m in MODE:
    REFERENCE[f"add_{_m}"], REFERENCE[f"sub_{_m}"], REFERENCE[f"mul_{_m}"] = (
        _ieee(o, _m) for o in ("add", "sub", "mul")
    )
    REFERENCE[f"div_{_m}"], REFERENCE[f"rcp_{_m}"] = _ieee("div", _m), _ieee("rcp", _m)
    REFERENCE[f"sqrt_{_m}"], REFERENCE[f"fma_{_m}"] = _ieee("sqrt", _m), _ieee("fma", _m)
    REFERENCE[f"double2float_{_m}"] = lambda xs, ret, m=_m: (
        np.array(
            [round_fraction(Fraction(v), np.float32, MODE[m]) if math.isfinite(v) and v else v for v in xs[0].tolist()],
            np.float32,
        ),
        0,
    )
    for _src in ("float", "double"):
        for _dst, _bits_, _signed in (("int", 32, True), ("uint", 32, False), ("ll", 64, True), ("ull", 64, False)):
            REFERENCE[f"{_src}2{_dst}_{_m}"] = _to_int_ref(_m, _bits_, _signed)
    for _src in ("int", "uint", "ll", "ull"):
        REFERENCE[f"{_src}2float_{_m}"] = _from_int_ref(_m)
        REFERENCE[f"{_src}2double_{_m}"] = _from_int_ref(_m)
