"""Vector-unit data movement, reductions and scans: v.splat, v.extract, v.iota, v.fill, v.copy,
v.gather, v.hist, v.reduce, v.scan.

Reduction order (fixed, so results are reproducible): a pairwise tree along the axis; at each
level element i combines with element i + n//2 (an odd last element is carried up). Scans are
Hillis-Steele: log2(n) steps, step s combines element i - s into element i. Every combine is the
vector unit's own binary op (sem_vector.BINARY), rounded to the tile type at each step, as the
hardware's combine tree would: f16 sums round to f16 at every add; integer adds wrap.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..errors import IsaError, SimulatorError
from ..isa.table import ENUMS
from . import numerics as nx
from .sem_memory import fill_value
from .sem_vector import BINARY, kind

# combine suffix -> (op on integers, op on floats); None: not defined on that kind
COMBINE = {
    "add": ("add", "add"),
    "mul": ("mul", "mul"),
    "max": ("maxs", "maximum"),
    "min": ("mins", "minimum"),
    "maxnum": (None, "maxnum"),
    "minnum": (None, "minnum"),
    "umax": ("maxu", None),
    "umin": ("minu", None),
    "and": ("and", None),
    "or": ("or", None),
    "xor": ("xor", None),
}
assert set(COMBINE) == set(ENUMS["combine"]), "COMBINE must cover the ISA's combine enum"


def combine_fn(name: str, dtype: str, what: str):
    op = COMBINE[name][0 if kind(dtype) == "int" else 1]
    if op is None:
        raise IsaError(f"{what}: combine {name} is not defined on {dtype}")
    direct = _DIRECT_COMBINE.get(op) if dtype in ("f32", "f64") else None
    if direct is not None:  # what BINARY's exact op computes on operands of the tile's own type
        return direct
    fn = BINARY[op][kind(dtype)]
    return lambda a, b: fn(a, b, dtype)


# float combines that f32/f64 compute in their own type, one ufunc (sem_vector._exact's shortcut)
_DIRECT_COMBINE = {"add": np.add, "mul": np.multiply}


def reduce_last(x: np.ndarray, fn) -> np.ndarray:
    """Pairwise-tree reduction of the last axis."""
    while x.shape[-1] > 1:
        n = x.shape[-1]
        h = n // 2
        y = fn(x[..., :h], x[..., h : 2 * h])
        x = np.concatenate([y, x[..., 2 * h :]], axis=-1) if n % 2 else y
    return x[..., 0]


# float combines that pick an extreme with -0.0 < +0.0 (and a NaN propagating, or ignored: the same
# without NaNs): the tree's result is then the row's extreme in that total order, whatever the order of
# the combines, and equal elements of that order have equal bits
_EXTREME = {"max": np.maximum, "maxnum": np.maximum, "min": np.minimum, "minnum": np.minimum}
_SIGNED_ZERO_PICK = {np.maximum: np.bitwise_and, np.minimum: np.bitwise_or}  # max: +0.0 unless all -0.0


def reduce_extreme(x: np.ndarray, combine: str, dtype: str) -> np.ndarray | None:
    """reduce_last's result for a float max/min (``_EXTREME``) as one numpy reduction, or None when
    the tree is needed (other types, NaNs: which NaN's bits survive depends on the order)."""
    ufunc = _EXTREME.get(combine)
    if ufunc is None or dtype not in ("f16", "f32", "f64") or np.isnan(x).any():
        return None
    r = ufunc.reduce(x, axis=-1)
    zero = r == 0
    if zero.any():  # numpy keeps either zero: take the signs' AND (max) or OR (min) over the row's zeros
        bits = x.view(f"u{x.itemsize}")
        pick = _SIGNED_ZERO_PICK[ufunc]
        neutral = np.array(0 if pick is np.bitwise_or else -1).astype(bits.dtype)
        signs = pick.reduce(np.where(x == 0, bits, neutral), axis=-1)
        r = np.where(zero, signs.view(x.dtype), r)
    return r


def scan_last(x: np.ndarray, fn) -> np.ndarray:
    """Inclusive Hillis-Steele scan of the last axis."""
    n, s = x.shape[-1], 1
    while s < n:
        x = np.concatenate([x[..., :s], fn(x[..., :-s], x[..., s:])], axis=-1)
        s *= 2
    return x


def _axis(st, ins, tile_index, imm_index):
    ax = st.consts[imm_index]
    rank = len(st.tiles[tile_index].shape)
    if not isinstance(ax, int) or not 0 <= ax < rank:
        raise IsaError(f"{ins.mnemonic}: axis {ax!r} outside a rank-{rank} tile")
    return ax


# ---- rules ---------------------------------------------------------------------------------------
def _splat(st, ins):
    d, r = ins.operands
    t = st.tiles[d]
    vals = nx.from_word(st.regs[r], t.dtype)
    st.write(d, vals.reshape((st.P,) + (1,) * len(t.shape)))


def _extract(st, ins):
    r, a, i = ins.operands
    t = st.tiles[a]
    k = st.consts[i]
    if not isinstance(k, int) or not 0 <= k < t.numel:
        raise IsaError(f"v.extract: element {k!r} outside t{a} of {t.numel} elements")
    st.regs[r] = nx.to_word(st.read(a)[_element_index(k, t.shape)], t.dtype)


@functools.lru_cache(maxsize=1024)
def _element_index(k: int, shape: tuple[int, ...]) -> tuple:
    """(every program, the row-major element k's index) in Python ints: np.unravel_index costs ~5 us a call and
    its numpy integers ~2 us more in the indexing (a spin loop extracts its CAS's old value every round)."""
    return (slice(None), *(int(i) for i in np.unravel_index(k, shape)))


def _iota(st, ins):
    d, start = ins.operands
    t = st.tiles[d]
    vals = np.arange(t.numel, dtype=np.int64) + np.int64(st.consts[start])
    vals = nx.int_to_float(vals, True, t.dtype) if kind(t.dtype) == "float" else nx.store_int(vals, t.dtype)
    st.write(d, vals.reshape(t.shape))


def _fill(st, ins):
    d, v = ins.operands
    st.write(d, fill_value(st, v, st.tiles[d].dtype))


def _copy(st, ins):
    d, a = ins.operands
    td, ta = st.tiles[d], st.tiles[a]
    if td.dtype != ta.dtype or td.numel != ta.numel:
        raise IsaError(
            f"v.copy: t{d} {td.dtype}{list(td.shape)} and t{a} {ta.dtype}{list(ta.shape)} must have "
            "the same dtype and element count (convert with v.fcvt/v.sext/... first)"
        )
    st.write(d, st.read(a).reshape((st.P,) + td.shape))


def _gather(st, ins):
    d, a, idx, axis = ins.operands
    ax = _axis(st, ins, a, axis)
    ta, ti, td = st.tiles[a], st.tiles[idx], st.tiles[d]
    nx.check_int(ti.dtype, "v.gather index")
    if td.dtype != ta.dtype or td.shape != ti.shape or len(ti.shape) != len(ta.shape):
        raise IsaError(f"v.gather: result t{d} must have a's dtype and idx's shape, same rank as a")
    ids = nx.signed(st.read(idx), ti.dtype).astype(np.int64)
    n = ta.shape[ax]
    bad = (ids < 0) | (ids >= n)
    if bad.any():
        rows = np.nonzero(bad.reshape(st.P, -1).any(axis=1))[0]
        raise SimulatorError(f"v.gather: index {int(ids[bad][0])} outside axis {ax} of length {n}", programs=rows)
    st.write(d, np.take_along_axis(st.read(a), ids, axis=ax + 1))


def _hist(st, ins):
    d, a, m = ins.operands
    td, ta, tm = st.tiles[d], st.tiles[a], st.tiles[m]
    nx.check_int(ta.dtype, "v.hist values")
    if len(td.shape) != 1 or td.dtype not in ("i32", "i64") or tm.dtype != "i1" or tm.shape != ta.shape:
        raise IsaError("v.hist: d must be a 1-D i32/i64 tile of bins and m an i1 tile shaped like a")
    n = td.shape[0]
    vals = nx.signed(st.read(a), ta.dtype).astype(np.int64).reshape(st.P, -1)
    ok = st.read(m).reshape(st.P, -1) & (vals >= 0) & (vals < n)
    flat = (np.arange(st.P, dtype=np.int64)[:, None] * n + vals)[ok]
    counts = np.bincount(flat, minlength=st.P * n).reshape(st.P, n)
    st.write(d, nx.store_int(counts, td.dtype))


def _reduce(st, ins):
    d, a, axis = ins.operands
    ax = _axis(st, ins, a, axis)
    ta, td = st.tiles[a], st.tiles[d]
    if ta.shape[ax] == 0:
        raise IsaError("v.reduce over an empty axis")
    out_shape = ta.shape[:ax] + ta.shape[ax + 1 :]
    if td.dtype != ta.dtype or td.numel != math.prod(out_shape):
        raise IsaError(f"v.reduce: result t{d} {td.dtype}{list(td.shape)} must be {ta.dtype}{list(out_shape)}")
    fn = combine_fn(ins.suffixes[0], ta.dtype, ins.mnemonic)
    x = np.moveaxis(st.read(a), ax + 1, -1)
    r = reduce_extreme(x, ins.suffixes[0], ta.dtype)
    if r is None:
        r = reduce_last(x, fn)
    st.write(d, r.reshape((st.P,) + td.shape))


def _scan(st, ins):
    d, a, axis, reverse = ins.operands
    ax = _axis(st, ins, a, axis)
    ta, td = st.tiles[a], st.tiles[d]
    if td.dtype != ta.dtype or td.shape != ta.shape:
        raise IsaError(f"v.scan: result t{d} must match t{a} {ta.dtype}{list(ta.shape)}")
    fn = combine_fn(ins.suffixes[0], ta.dtype, ins.mnemonic)
    x = np.moveaxis(st.read(a), ax + 1, -1)
    rev = bool(st.consts[reverse])
    if rev:
        x = x[..., ::-1]
    x = scan_last(x, fn)
    if rev:
        x = x[..., ::-1]
    st.write(d, np.moveaxis(x, -1, ax + 1))


SEMANTICS = {
    "v.splat": _splat,
    "v.extract": _extract,
    "v.iota": _iota,
    "v.fill": _fill,
    "v.copy": _copy,
    "v.gather": _gather,
    "v.hist": _hist,
    "v.reduce": _reduce,
    "v.scan": _scan,
}
