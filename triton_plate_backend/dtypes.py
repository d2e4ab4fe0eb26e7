"""ISA element types as numpy dtypes (ml_dtypes supplies bfloat16 and the fp8 formats).

ml_dtypes is imported here and only here, on the first use of a bf16 / fp8 entry: a launch of fp32 / integer
kernels never needs it (0.7.0's C extension takes ~0.65 s CPU to load, which is why pyproject.toml asks for <0.7;
0.6.0's takes ~4 ms)."""

from __future__ import annotations

import sys

import numpy as np

from .isa.table import ITEMSIZE

# ISA type -> its ml_dtypes type's attribute name, in NUMPY's order after the numpy types
_ML_DTYPES = {
    "bf16": "bfloat16",
    "f8e4m3fn": "float8_e4m3fn",
    "f8e5m2": "float8_e5m2",
    "f8e4m3fnuz": "float8_e4m3fnuz",
    "f8e5m2fnuz": "float8_e5m2fnuz",
}
_ORDER = ("i1", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64", *list(_ML_DTYPES)[1:])


class _DtypeTable(dict):
    """NUMPY: a dict of every ISA type whose ml_dtypes entries are filled in (all at once, ml_dtypes
    imported) on their first lookup. Membership, len and iteration see every type from the start;
    iterating the values or items loads them."""

    def __missing__(self, key):
        if key not in _ML_DTYPES:
            raise KeyError(key)
        _load()
        return dict.__getitem__(self, key)

    def __contains__(self, key) -> bool:
        return dict.__contains__(self, key) or key in _ML_DTYPES

    def get(self, key, default=None):
        return self[key] if key in self else default

    def __len__(self) -> int:
        return len(_ORDER)

    def __iter__(self):
        return iter(_ORDER)

    def keys(self):
        return list(_ORDER)

    def values(self):
        return [self[k] for k in _ORDER]

    def items(self):
        return [(k, self[k]) for k in _ORDER]


NUMPY: dict[str, np.dtype] = _DtypeTable(
    {
        "i1": np.dtype(np.bool_),
        "i8": np.dtype(np.int8),
        "i16": np.dtype(np.int16),
        "i32": np.dtype(np.int32),
        "i64": np.dtype(np.int64),
        "f16": np.dtype(np.float16),
        "f32": np.dtype(np.float32),
        "f64": np.dtype(np.float64),
    }
)
_ISA_NAME: dict[np.dtype, str] = {v: k for k, v in dict.items(NUMPY)}


def ml_dtypes():
    """The ml_dtypes module (imported on the first call): the one import of it in the package."""
    import ml_dtypes as module

    return module


def _loaded() -> bool:
    return dict.__contains__(NUMPY, "bf16")


def _load() -> None:
    if not _loaded():
        module = ml_dtypes()
        loaded = {k: np.dtype(getattr(module, attr)) for k, attr in _ML_DTYPES.items()}
        assert all(dt.itemsize == ITEMSIZE[k] for k, dt in loaded.items()), "dtype table disagrees with ISA ITEMSIZE"
        dict.update(NUMPY, loaded)
        _ISA_NAME.update({v: k for k, v in loaded.items()})


def isa_name(dtype: np.dtype) -> str | None:
    """The ISA type stored as numpy ``dtype``, or None. An ml_dtypes type can only exist once ml_dtypes is
    imported (by anyone): its entries are then loaded before the lookup gives up."""
    name = _ISA_NAME.get(dtype)
    if name is None and "ml_dtypes" in sys.modules and not _loaded():
        _load()
        name = _ISA_NAME.get(dtype)
    return name


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

assert all(dict.__getitem__(NUMPY, k).itemsize == ITEMSIZE[k] for k in dict.keys(NUMPY)), (
    "dtype table disagrees with ISA ITEMSIZE"
)


def to_numpy(dtype: str) -> np.dtype:
    return NUMPY[dtype]
