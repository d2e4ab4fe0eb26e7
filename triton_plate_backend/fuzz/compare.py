"""How a plate output is judged against the interpreter's: the comparison rules.

`CHECKS` maps an output's check kind to its comparison: bit-exact (any NaN equals any NaN) where
Triton defines the result, an ulp bound for transcendentals, a forward-error bound for float
reductions, scans, dots and float atomic adds (their order differs by design). An output that
fails its check may still be explained by a row of `RULES`: a documented difference (a row of
docs/differences.md) or a known Triton-interpreter deviation from Triton's compiled semantics.
A rule either accepts the differing lanes as they are (`lanes`) or names a patch of the
interpreter (`patch`, in interpreter_patches.py) under which the interpreter must then agree."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .values import DTYPES, UINT_OF_BITS


@dataclass(frozen=True)
class Verdict:
    status: str  # "exact", "bounded", "explained", "mismatch"
    detail: str = ""
    rule: str = ""


def _bits(x: np.ndarray) -> np.ndarray:
    return x.view(UINT_OF_BITS[x.dtype.itemsize * 8])


def _f64(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float64)


def _is_float(dtype: str) -> bool:
    return DTYPES[dtype].kind == "f"


def differing(dtype: str, got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Lanes whose bits differ, NaN == NaN whatever its payload or sign."""
    diff = _bits(got) != _bits(want)
    if _is_float(dtype):
        diff &= ~(np.isnan(_f64(got)) & np.isnan(_f64(want)))
    return diff


def _eps(dtype: str) -> float:
    return {"fp64": 2.0**-52, "fp32": 2.0**-23, "fp16": 2.0**-10, "bf16": 2.0**-7}[dtype]


def _tiny(dtype: str) -> float:
    return {"fp64": 5e-324, "fp32": 2.0**-149, "fp16": 2.0**-24, "bf16": 2.0**-133}[dtype]


def _max(dtype: str) -> float:
    return {"fp64": 1.7976931348623157e308, "fp32": 3.4028234663852886e38, "fp16": 65504.0, "bf16": 3.3895e38}[dtype]


def within(dtype: str, got: np.ndarray, want: np.ndarray, bound: np.ndarray) -> tuple[bool, str]:
    """|got - want| <= bound lane by lane; NaN == NaN, an infinity must match exactly, and a lane whose
    bound reaches the dtype's overflow threshold (the order decides whether it overflows) passes."""
    g, w = _f64(got), _f64(want)
    both_nan = np.isnan(g) & np.isnan(w)
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.abs(g - w) <= bound
        overflow_possible = ~np.isfinite(bound) | (bound >= _max(dtype) * _eps(dtype))
    ok = both_nan | (g == w) | close | overflow_possible
    if ok.all():
        return True, ""
    i = int(np.flatnonzero(~ok)[0])
    return False, f"lane {i}: plate {g.flat[i]!r} vs interpreter {w.flat[i]!r} (bound {float(bound.flat[i]):.3g})"


def _ulp_check(b, got, want, outs) -> tuple[bool, str]:
    w = _f64(want)
    with np.errstate(invalid="ignore", over="ignore"):
        spacing = np.abs(np.spacing(w.astype(DTYPES[b.dtype].np))).astype(np.float64)
    bound = b.check["ulp"] * np.where(np.isfinite(spacing), spacing, np.inf) + 2.0**-24 * (np.abs(w) < 1)
    return within(b.dtype, got, want, bound)


def _reduce_check(b, got, want, outs) -> tuple[bool, str]:
    """Forward error of a sum in any order: (n + 1) * eps * sum|x| (+ the result's rounding)."""
    if not _is_float(b.dtype) or b.check["op"] in ("max", "min"):
        return _exact(b, got, want, outs)
    grid, *dims = b.check["shape"]
    x = np.abs(_f64(outs[b.check["aux"]])).reshape(grid, *dims)
    axis = 1 + b.check["axis"]
    n = x.shape[axis]
    if b.check["op"] == "sum":
        s = x.sum(axis=axis)
    elif b.check["op"] == "cumsum":
        s = np.cumsum(x, axis=axis)
    else:  # cumprod: relative error, plus what subnormal products lose, unless some grouping overflows
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            s = np.cumprod(x, axis=axis)
            # a product rounded in the subnormal range (or to zero) errs by up to tiny / 2 absolutely, and
            # the factors after it magnify that by at most the product of max(|x|, 1)
            big = np.cumprod(np.maximum(x, 1.0), axis=axis)
            s = np.where(big > _max(b.dtype), np.inf, s)
    with np.errstate(over="ignore", invalid="ignore"):
        bound = (n + 2) * _eps(b.dtype) * s + _tiny(b.dtype) * n * (big if b.check["op"] == "cumprod" else 1.0)
    return within(b.dtype, got, want, bound.reshape(-1))


def _dot_check(b, got, want, outs) -> tuple[bool, str]:
    if not _is_float(b.dtype):
        return _exact(b, got, want, outs)
    grid, m, n, k = b.check["shape"]
    a = np.abs(_f64(outs[b.check["aux"][0]])).reshape(grid, m, k)
    w = np.abs(_f64(outs[b.check["aux"][1]])).reshape(grid, k, n)
    with np.errstate(over="ignore", invalid="ignore"):
        s = np.nan_to_num(a, nan=np.inf) @ np.nan_to_num(w, nan=np.inf)
        rel = (k + 2) * _eps("fp32")
        if b.check["precision"] == "tf32":  # each input rounded to 10 mantissa bits (ties differ: a RULES row)
            rel += 2 * 2.0**-11
        if b.check["precision"] == "tf32x3":  # three tf32 products: the small * small term is dropped
            rel += 2.0**-20
        if b.check["acc"]:
            s = s + np.abs(_f64(outs[b.check["acc"]])).reshape(grid, m, n)
        bound = rel * s + _tiny("fp32") * k
    return within(b.dtype, got, want, bound.reshape(-1))


def _atomic_check(b, got, want, outs) -> tuple[bool, str]:
    if not _is_float(b.dtype) or b.check["op"] != "add":
        return _exact(b, got, want, outs)
    vals = np.abs(_f64(outs[b.check["aux"]]))
    with np.errstate(over="ignore", invalid="ignore"):
        bound = np.full(got.shape, (vals.size + 2) * _eps(b.dtype) * np.nan_to_num(vals, nan=0).sum())
    return within(b.dtype, got, want, bound)


def _exact(b, got, want, outs) -> tuple[bool, str]:
    diff = differing(b.dtype, got, want)
    if not diff.any():
        return True, ""
    i = int(np.flatnonzero(diff)[0])
    return (
        False,
        f"{int(diff.sum())} of {diff.size} lanes differ; lane {i}: plate {got[i]!r} vs interpreter {want[i]!r}",
    )


CHECKS: dict[str, Callable] = {
    "exact": _exact,
    "ulp": _ulp_check,
    "reduce": _reduce_check,
    "scan": _reduce_check,
    "dot": _dot_check,
    "atomic": _atomic_check,
}


@dataclass(frozen=True)
class Rule:
    name: str
    why: str
    applies: Callable[[list[str]], bool]  # on the case's features
    lanes: Callable | None = None  # (dtype, got, want) -> is every differing lane accepted
    patch: str | None = None  # a name in interpreter_patches.PATCHES: rerun the interpreter under it


def _any(*prefixes: str) -> Callable[[list[str]], bool]:
    return lambda features: any(f.startswith(p) for f in features for p in prefixes)


def _signed_zero_lanes(dtype, got, want) -> bool:
    diff = differing(dtype, got, want)
    return bool(_is_float(dtype) and (_f64(got)[diff] == 0).all() and (_f64(want)[diff] == 0).all())


def _nan_lanes(dtype, got, want) -> bool:
    diff = differing(dtype, got, want)
    return bool((np.isnan(_f64(got)[diff]) | np.isnan(_f64(want)[diff])).all())


RULES = (
    Rule(
        "interpreter-maxnum-propagates-nan",
        "Triton's interpreter runs tl.maximum/tl.minimum (arith.maxnumf/minnumf) as np.maximum/np.minimum, "
        "which return NaN; compiled Triton (and plate) return the other operand",
        _any("minmax-float"),
        patch="maxnum",
    ),
    Rule(
        "interpreter-fp8-downcast",
        "Triton's interpreter converts to fp8 by bit manipulation (half-up on one bit, exponent clamped, no "
        "inf/NaN, subnormals truncated); compiled Triton and plate use cvt.rn.satfinite (ties to even, saturate)",
        _any("fp8:", "dot:fp8"),
        patch="fp8-satfinite",
    ),
    Rule(
        "tf32-input-rounding",
        "docs/differences.md 'TF32 rounding of tl.dot inputs': plate rounds fp32 dot inputs to tf32 (ties to "
        "even; FLT_MAX rounds to inf) and tf32x3 splits each into big + small tf32 parts (an input that rounds "
        "to inf gives inf - inf = NaN); Triton's interpreter ignores input_precision and multiplies in fp32",
        lambda features: "dot:fp32:tf32" in features or "dot:fp32:tf32x3" in features,
        patch="tf32",
    ),
    Rule(
        "interpreter-fma-double-rounding",
        "Triton's interpreter computes tl.fma as x * y + z in the operands' type (two roundings); compiled "
        "Triton and plate round once (fma.rn)",
        _any("rn"),
        patch="fma",
    ),
    Rule(
        "signed-zero-min-max",
        "max/min of +0.0 and -0.0 may return either zero (IEEE maxNum/minNum, PTX max/min.f32)",
        _any("minmax-float", "minmax-nan-all", "reduce:max", "reduce:min", "atomic:max:fp", "atomic:min:fp"),
        lanes=_signed_zero_lanes,
    ),
    Rule(
        "float-atomic-max-min-maxnum",
        "docs/differences.md 'float atomic max / min': plate applies IEEE maxNum/minNum (a NaN operand loses)",
        _any("atomic:max:fp32", "atomic:min:fp32"),
        lanes=_nan_lanes,
    ),
)


def judge(case, got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> dict[str, tuple[bool, str]]:
    """Each output buffer's check: {name: (passed, detail)}. A bound reads plate's auxiliary outputs (the
    operands of the reduction, dot or atomic, themselves checked bit-exactly) and the inputs."""
    arrays = {b.name: b.values for b in case.inputs()} | got
    return {b.name: CHECKS[b.check["kind"]](b, got[b.name], want[b.name], arrays) for b in case.outputs()}


def explained_by_lanes(case, got, want, failed: list[str]) -> str:
    """The first lane rule that accepts every failed output as it stands, or ''."""
    outs = {b.name: b for b in case.outputs()}
    for rule in RULES:
        if rule.lanes and rule.applies(case.features):
            if all(rule.lanes(outs[n].dtype, got[n], want[n]) for n in failed):
                return rule.name
    return ""
