"""The dtypes the fuzzer uses and the random input values it feeds them: ordinary numbers mixed
with the values kernels get wrong (NaN, +-inf, -0.0, subnormals, the largest finite values,
integer extremes, -1, 0, 1)."""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np


@dataclass(frozen=True)
class DType:
    tl: str  # the Triton spelling in kernel source
    np: type  # numpy storage (ml_dtypes for bf16)
    torch: str  # torch dtype attribute name
    kind: str  # "f" float, "i" signed, "u" unsigned
    bits: int


DTYPES = {
    "fp64": DType("tl.float64", np.float64, "float64", "f", 64),
    "fp32": DType("tl.float32", np.float32, "float32", "f", 32),
    "fp16": DType("tl.float16", np.float16, "float16", "f", 16),
    "bf16": DType("tl.bfloat16", ml_dtypes.bfloat16, "bfloat16", "f", 16),
    "i64": DType("tl.int64", np.int64, "int64", "i", 64),
    "i32": DType("tl.int32", np.int32, "int32", "i", 32),
    "i16": DType("tl.int16", np.int16, "int16", "i", 16),
    "i8": DType("tl.int8", np.int8, "int8", "i", 8),
    "u32": DType("tl.uint32", np.uint32, "uint32", "u", 32),
    "u8": DType("tl.uint8", np.uint8, "uint8", "u", 8),
}
FLOAT8 = {"e5": "tl.float8e5", "e4nv": "tl.float8e4nv"}  # used as cast round trips inside kernels
UINT_OF_BITS = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def float_specials(dtype: str) -> np.ndarray:
    t = DTYPES[dtype].np
    fi = ml_dtypes.finfo(t) if dtype == "bf16" else np.finfo(t)
    tiny_sub = float(fi.smallest_subnormal)
    vals = [np.nan, np.inf, -np.inf, -0.0, 0.0, tiny_sub, -tiny_sub, 3 * tiny_sub, float(fi.tiny), float(fi.max)]
    vals += [-float(fi.max), float(fi.tiny) / 2, 1.0, -1.0, 0.5, 65504.0, 448.0, 57344.0]
    with np.errstate(over="ignore"):
        return np.array(vals, np.float64).astype(t)


def int_specials(dtype: str) -> np.ndarray:
    t = DTYPES[dtype].np
    ii = np.iinfo(t)
    return np.array([ii.min, ii.max, ii.min + 1, ii.max - 1, 0, 1, -1 if ii.min < 0 else 2, 2 ** (ii.bits - 2)]).astype(
        t
    )


def random_values(rng: np.random.Generator, dtype: str, count: int, special: float = 0.2) -> np.ndarray:
    """`count` values of `dtype`: ordinary ones, with a share `special` of edge values."""
    d = DTYPES[dtype]
    if d.kind == "f":
        scale = rng.choice([1.0, 1e-3, 1e3, 1e-30 if d.bits >= 32 else 1e-5])
        vals = (rng.standard_normal(count) * scale).astype(d.np)
        specials = float_specials(dtype)
    else:
        ii = np.iinfo(d.np)
        lo, hi = (ii.min, ii.max) if rng.random() < 0.5 else (max(ii.min, -100), min(ii.max, 100))
        vals = rng.integers(lo, hi, count, dtype=d.np, endpoint=True)
        specials = int_specials(dtype)
    pick = rng.random(count) < special
    vals[pick] = rng.choice(specials, int(pick.sum()))
    return vals
