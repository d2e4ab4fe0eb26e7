"""ISA element types as numpy dtypes (ml_dtypes supplies bfloat16 and the fp8 formats)."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from .isa.table import ITEMSIZE

NUMPY: dict[str, np.dtype] = {
    "i1": np.dtype(np.bool_),
    "i8": np.dtype(np.int8),
    "i16": np.dtype(np.int16),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    "f8e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn),
    "f8e5m2": np.dtype(ml_dtypes.float8_e5m2),
    "f8e4m3fnuz": np.dtype(ml_dtypes.float8_e4m3fnuz),
    "f8e5m2fnuz": np.dtype(ml_dtypes.float8_e5m2fnuz),
}
# same-width unsigned views, for unsigned integer semantics (divu, shru, uitofp, ...)
UNSIGNED: dict[str, np.dtype] = {
    "i1": np.dtype(np.uint8),
    "i8": np.dtype(np.uint8),
    "i16": np.dtype(np.uint16),
    "i32": np.dtype(np.uint32),
    "i64": np.dtype(np.uint64),
}
# raw bit patterns of each type, for bitcasts and memory images
BITS: dict[str, np.dtype] = {k: np.dtype(f"u{ITEMSIZE[k]}") for k in NUMPY}

assert all(NUMPY[k].itemsize == ITEMSIZE[k] for k in NUMPY), "dtype table disagrees with ISA ITEMSIZE"


def to_numpy(dtype: str) -> np.dtype:
    return NUMPY[dtype]
