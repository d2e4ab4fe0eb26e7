"""Functional semantics of the atomics (atom.rmw, atom.cas), batched over program instances.

Elements apply one at a time in (program, row-major element) order, each seeing the ones before
it, with exact old values: vectorised when addresses do not repeat, by address groups (scan,
ufunc.accumulate or rank rounds) when they do, and a plain loop for hot CAS addresses. Addresses
are checked before anything is touched, as for every access in sim/dma.py."""

from __future__ import annotations

import math

import numpy as np

from ..dtypes import BITS, NUMPY, UNSIGNED
from ..errors import SimulatorError
from ..isa.table import ENUMS, INT_DTYPES, ITEMSIZE, is_float
from .dma import (
    _address_order,
    _element_traffic,
    _elements_of,
    _flat,
    _from_storage,
    _one_address_traffic,
    _read,
    _storage,
    _to_storage,
    _write,
)
from .memory import DeviceMemory

# groups of one address with more elements than this apply by ufunc.accumulate, not rank rounds
_BIG_GROUP = 64
_CAS_JUMPS = 16  # successful swaps found by search in a hot CAS run before a plain loop takes over


# ---- atomics ---------------------------------------------------------------------------------------
def _integer(dtype: str) -> bool:
    return dtype in INT_DTYPES and dtype != "i1"


def _bitwise(dtype: str) -> bool:
    return dtype in INT_DTYPES


def _arith_float(dtype: str) -> bool:
    return dtype in ("f16", "bf16", "f32", "f64")


# op -> (numpy combine (None: chosen by dtype), dtypes it is defined on, memory view it works in)
ATOMIC_OPS = {
    "add": (np.add, _integer, "signed"),  # wraps around
    "fadd": (np.add, _arith_float, "float"),
    # float max/min are IEEE maxNum/minNum (a NaN operand loses to a number), like CUDA fmaxf/fminf
    "max": (None, lambda d: _integer(d) or _arith_float(d), "signed"),
    "min": (None, lambda d: _integer(d) or _arith_float(d), "signed"),
    "umax": (np.maximum, _integer, "unsigned"),
    "umin": (np.minimum, _integer, "unsigned"),
    "and": (np.bitwise_and, _bitwise, "signed"),
    "or": (np.bitwise_or, _bitwise, "signed"),
    "xor": (np.bitwise_xor, _bitwise, "signed"),
    "xchg": (None, lambda d: d in NUMPY, "bits"),
}
assert set(ATOMIC_OPS) == set(ENUMS["atom"]), "ATOMIC_OPS must cover the ISA's atom enum"


def _combine_of(op: str, dtype: str):
    ufunc = ATOMIC_OPS[op][0]
    if op in ("max", "min"):
        if is_float(dtype):
            return np.fmax if op == "max" else np.fmin
        return np.maximum if op == "max" else np.minimum
    return ufunc


def _work_dtype(view: str, dtype: str) -> np.dtype:
    if view == "bits" or (dtype == "i1"):
        return BITS[dtype]
    return UNSIGNED[dtype] if view == "unsigned" else NUMPY[dtype]


def _atomic_operands(mem, addrs, mask, dtype, what):
    """(shape, flat, m, pos, av, counts, one): ``one`` when every element has the same address (a lock's,
    a counter's, a single element's): they then apply in program order, the address order."""
    storage = _storage(dtype)
    shape, flat, m = _flat(addrs, mask)
    av, counts = _elements_of(flat, m)
    n = av.size
    isz = storage.itemsize
    one = n == 1 or (n > 1 and av[0] == av[-1] and int(av.min()) == int(av.max()))
    if one and not int(av[0]) & (isz - 1):
        # one aligned address inside a live allocation (a lock, a counter): its position by one bisection, what
        # locate finds for it; anything else (several addresses, a fault to report) is located below
        lo = int(av[0])
        pos = mem.span_position(lo, lo + isz)
        if pos >= 0:
            return shape, flat, m, pos, av, counts, True
    pos = mem.locate(flat, isz, m, f"atomic {what} of {dtype}", av)
    return shape, flat, m, pos, av, counts, one


def _select(values, shape, m, dtype, work):
    if not (type(values) is np.ndarray and values.shape == shape):  # a tile's values have the shape already
        values = np.broadcast_to(values, shape)
    v = _to_storage(values, dtype).reshape(shape[0], math.prod(shape[1:]))
    v = v.reshape(-1) if m is None else v[m]
    return v.view(work)


def _finish(mem, shape, m, pos, av, counts, one, old, dtype):
    nprog = shape[0]
    old = old.view(_storage(dtype))
    if m is None:
        out = old.reshape(shape)
    else:
        out = np.zeros((nprog, m.shape[1]), old.dtype)
        out[m] = old
    traffic = (_one_address_traffic if one else _element_traffic)(mem, pos, av, counts, ITEMSIZE[dtype])
    return _from_storage(out.reshape(shape), dtype), traffic


def atomic_rmw(mem: DeviceMemory, op: str, addrs, values, mask, dtype: str):
    """old = mem[a]; mem[a] = op(old, v), element by element in (program, row-major) order, each
    seeing the ones before it. Returns (old values [P, *shape] (0 where masked off), Traffic)."""
    if op not in ATOMIC_OPS:
        raise SimulatorError(f"atom.rmw: unknown op {op!r}; expected one of {', '.join(ATOMIC_OPS)}")
    _, ok, view = ATOMIC_OPS[op]
    if not ok(dtype):
        raise SimulatorError(
            f"atom.rmw.{op} is not defined on {dtype}; use "
            + ("fadd for floats, add for integers" if op in ("add", "fadd") else "another dtype")
        )
    work = _work_dtype(view, dtype)
    shape, flat, m, pos, av, counts, one = _atomic_operands(mem, addrs, mask, dtype, op)
    v = _select(values, shape, m, dtype, work)
    if op == "xchg":
        old = _sequential(mem, pos, av, work, v, lambda cur, k: v[k], "xchg", one=one)
    else:
        fn = _combine_of(op, dtype)
        old = _sequential(mem, pos, av, work, v, lambda cur, k: fn(cur, v[k]), op, fn, one=one)
    return _finish(mem, shape, m, pos, av, counts, one, old, dtype)


def atomic_cas(mem: DeviceMemory, addrs, cmp, values, mask, dtype: str):
    """old = mem[a]; if old == cmp (bit patterns, as CUDA atomicCAS): mem[a] = v; element by
    element in (program, row-major) order. Returns (old values, Traffic)."""
    work = BITS[dtype]
    shape, flat, m, pos, av, counts, one = _atomic_operands(mem, addrs, mask, dtype, "cas")
    c = _select(cmp, shape, m, dtype, work)
    v = _select(values, shape, m, dtype, work)
    old = _sequential(mem, pos, av, work, v, lambda cur, k: np.where(cur == c[k], v[k], cur), "cas", cmp=c, one=one)
    return _finish(mem, shape, m, pos, av, counts, one, old, dtype)


def _sequential(mem, pos, av, work, v, step, kind, ufunc=None, cmp=None, one=False):
    """Apply ``step(cur, k)`` for elements k in order, grouping equal addresses; return old values.
    ``one``: every element at one address (``_atomic_operands``)."""
    n = av.size
    if n == 0:
        return np.zeros(0, work)
    if one:
        return _one_address(mem, pos, av, work, v, step, kind, ufunc, cmp)
    order = _address_order(av)  # stable: each address keeps program order
    sa = av[order]
    new = np.empty(n, bool)
    new[0] = True
    np.not_equal(sa[1:], sa[:-1], out=new[1:])
    gstart = np.nonzero(new)[0]
    gpos = pos if isinstance(pos, (int, np.integer)) else pos[order][gstart]
    cur0 = _read(mem, gpos, sa[gstart], work)
    if gstart.size == n:  # no address repeats: one vectorized step
        old_sorted = cur0
        final = step(cur0, order)
    else:
        old_sorted, final = _segmented(kind, ufunc, cur0, order, v, cmp, gstart, n, step)
    _write(mem, gpos, sa[gstart], np.asarray(final, work), unique=True)
    old = np.empty(n, work)
    old[order] = old_sorted
    return old


def _one_address(mem, pos, av, work, v, step, kind, ufunc, cmp):
    """``_sequential`` where every element has one address: the address order is program order (what the
    stable sort gives), one group from element 0, without sorting or grouping; a hot CAS (a lock's spinners)
    is ``_segmented``'s one pass along the address."""
    n = av.size
    # the element read and written in place: _read's and _write's one element at the one position
    rec = mem.live(int(pos) if isinstance(pos, (int, np.integer)) else int(pos[0]))
    typed, start = rec.typed(work)
    at = (int(av[0]) - rec.base - start) // typed.itemsize
    cur0 = typed[at : at + 1].copy()
    if n == 1:
        old, final = cur0, step(cur0, _FIRST)
    elif kind == "cas":  # one pass along the address, whatever the count (the rank rounds took one round each)
        final = cur0.copy()
        old, final[0] = _cas_run(cur0[0], cmp, v)
    else:
        old, final = _segmented(kind, ufunc, cur0, np.arange(n), v, cmp, _FIRST, n, step)
    typed[at : at + 1] = np.asarray(final, work)
    return old


_FIRST = np.zeros(1, np.int64)  # element 0 (read only: an index)
_FIRST.flags.writeable = False


def _cas_run(cur, cs: np.ndarray, vs: np.ndarray):
    """(old values, final value) of CASes (cs[k], vs[k]) applied in order to one address holding
    ``cur``: each one's old value is the current one, which becomes vs[k] where it equals cs[k].
    Jumps from one successful swap to the next (a lock sees one per round), then finishes in a
    Python loop if swaps keep coming."""
    olds = np.empty(cs.size, cs.dtype)
    i = 0
    for _ in range(_CAS_JUMPS):
        hit = np.flatnonzero(cs[i:] == cur)
        if hit.size == 0:
            olds[i:] = cur
            return olds, cur
        j = i + int(hit[0])
        olds[i : j + 1] = cur
        cur, i = vs[j], j + 1
    cur, rest = cur.item(), []
    for c, x in zip(cs[i:].tolist(), vs[i:].tolist()):
        rest.append(cur)
        if cur == c:
            cur = x
    olds[i:] = rest
    return olds, cur


def _segmented(kind, ufunc, cur0, order, v, cmp, gstart, n, step):
    """Exclusive scan of the step within each run of equal addresses (sorted order)."""
    sv = v[order]
    ngroups = gstart.size
    sizes = np.diff(np.append(gstart, n))
    gid = np.repeat(np.arange(ngroups), sizes)
    gend = gstart + sizes - 1
    old = np.empty(n, sv.dtype)
    if kind == "xchg":
        old[1:] = sv[:-1]
        old[gstart] = cur0
        return old, sv[gend]
    if kind in ("add", "xor"):  # integer and invertible: global scan, then rebase
        incl = ufunc.accumulate(sv, dtype=sv.dtype)
        excl = incl - sv if kind == "add" else incl ^ sv
        off = excl[gstart]
        if kind == "add":
            return cur0[gid] + (excl - off[gid]), cur0 + (incl[gend] - off)
        return cur0[gid] ^ excl ^ off[gid], cur0 ^ incl[gend] ^ off
    final = cur0.copy()
    rank = np.arange(n) - gstart[gid]
    big = np.nonzero(sizes > _BIG_GROUP)[0]
    for g in big:  # a hot address (a lock, a global counter): one pass along it
        s, e = gstart[g], gend[g] + 1
        if ufunc is not None:
            acc = ufunc.accumulate(np.concatenate([cur0[g : g + 1], sv[s:e]]), dtype=sv.dtype)
            old[s:e], final[g] = acc[:-1], acc[-1]
        else:
            old[s:e], final[g] = _cas_run(cur0[g], cmp[order[s:e]], sv[s:e])
    small = np.nonzero(sizes[gid] <= _BIG_GROUP)[0]
    if small.size:  # rank rounds: all groups' r-th elements at once
        by_rank = small[np.argsort(rank[small], kind="stable")]
        bounds = np.concatenate([[0], np.cumsum(np.bincount(rank[small]))])
        for r in range(bounds.size - 1):
            k = by_rank[bounds[r] : bounds[r + 1]]
            g = gid[k]
            old[k] = final[g]
            final[g] = step(final[g], order[k])
    return old, final
