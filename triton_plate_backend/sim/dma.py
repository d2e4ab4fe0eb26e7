"""Functional semantics of the DMA accesses (dma.*; the atomics are in sim/atomics.py), batched over program
instances: axis 0 of every array is the program instance (P of them), the rest is the tile.

Nothing here touches host memory before every element that will be touched has been checked
against the live allocations (DeviceMemory.locate / span_positions); masked-off elements are
neither checked nor touched. Misaligned elements fault as on a GPU.

Each access also returns its Traffic (sim/trace.py TraceEntry fields): bytes per HOME domain per
program, elements moved, and contiguous runs (a run continues while the next element in row-major
order is at the adjacent address, ascending or descending; gathers and atomics count one run per
element).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..dtypes import NUMPY
from ..errors import SimulatorError
from ..isa.program import contiguous_strides
from ..isa.table import is_float
from .memory import DeviceMemory

try:  # a whole-tile DMA's checks and count by home in C (sim/csrc/tiles.cpp, built by setup.py); without
    from . import _tiles  # it, _Tiles' numpy code
except ImportError:  # pragma: no cover - an unbuilt checkout
    _tiles = None
COMPILED_TILES = True  # tests turn it off to run the numpy code
_element_homes = getattr(_tiles, "element_homes", None)  # None: a build before it (the numpy code runs)


@dataclass
class Traffic:
    bytes_by_domain: np.ndarray  # float64 [P, total_domains + 1], by home domain (last: replicas, memory.py)
    elements: np.ndarray  # int64 [P], valid elements moved
    runs: np.ndarray  # int64 [P], contiguous runs (elements for gather/scatter/atomics)
    # a traffic-only access (``strided_traffic``, ``element_traffic``): called at once, before the
    # register file changes, it keeps the access as it can be counted again over another placement of
    # the same allocations (sim/estimate.py; None: not kept); only a run that re-prices calls it
    keep: Callable[[], Access | None] | None = None

    @classmethod
    def zeros(cls, programs: int, domains: int) -> Traffic:
        return cls(np.zeros((programs, domains)), np.zeros(programs, np.int64), np.zeros(programs, np.int64))


# What a load or store of a launch that records no trace returns in place of its Traffic (the executor
# reads a rule's Traffic only to record it): its common paths then count no bytes by home domain.
NOT_COUNTED = Traffic(np.zeros((0, 0)), np.zeros(0, np.int64), np.zeros(0, np.int64))


# ---- dtype plumbing ------------------------------------------------------------------------------
def _storage(dtype: str) -> np.dtype:
    """How elements sit in memory: i1 as a 0/1 byte, everything else as its numpy type."""
    if dtype not in NUMPY:
        raise SimulatorError(f"memory access of unknown dtype {dtype!r}; expected one of {', '.join(NUMPY)}")
    return np.dtype(np.uint8) if dtype == "i1" else NUMPY[dtype]


def _to_storage(values, dtype: str) -> np.ndarray:
    values = np.asarray(values)
    if dtype == "i1":
        return (values != 0).astype(np.uint8)
    return values.astype(NUMPY[dtype], copy=False)


def _from_storage(raw: np.ndarray, dtype: str) -> np.ndarray:
    return raw != 0 if dtype == "i1" else raw


def fill_value(fill, dtype: str):
    """``fill`` as a numpy scalar of ``dtype``: floats round to nearest (inf/nan kept); a float into
    an integer type truncates toward zero and saturates (nan -> 0), like CUDA's cvt.rzi.sat; an
    integer into a narrower integer wraps like a C cast."""
    npdt = NUMPY[dtype]
    if is_float(dtype):
        return np.array(float(fill), np.float64).astype(npdt)[()]
    if dtype == "i1":
        return np.bool_(fill != 0)
    if isinstance(fill, (float, np.floating)):
        if math.isnan(fill):
            return npdt.type(0)
        info = np.iinfo(npdt)
        return npdt.type(min(max(math.trunc(fill) if math.isfinite(fill) else fill, info.min), info.max))
    bits = 8 * npdt.itemsize
    v = int(fill) & ((1 << bits) - 1)
    return npdt.type(v - (1 << bits) if v >= 1 << (bits - 1) else v)


# ---- reading and writing checked addresses ----------------------------------------------------------
def _groups(pos, n: int):
    """(live position, selector) per allocation touched; selector is slice(None) for all."""
    if n == 0:
        return
    if isinstance(pos, (int, np.integer)):
        yield int(pos), slice(None)
        return
    for p in np.unique(pos):
        yield int(p), pos == p


def _index(addrs: np.ndarray, first: int, itemsize: int) -> np.ndarray:
    """Element indices of checked byte addresses from the element at address ``first``: (addrs - first) //
    itemsize, by a shift for a power-of-two size (the same integers; ~3x faster than numpy's division)."""
    rel = addrs - first
    if itemsize & (itemsize - 1) == 0:
        rel >>= itemsize.bit_length() - 1
        return rel
    return rel // itemsize


def _read(mem: DeviceMemory, pos, addrs: np.ndarray, storage: np.dtype) -> np.ndarray:
    """Elements at checked byte addresses (1-D)."""
    out = np.empty(addrs.shape, storage)
    for p, sel in _groups(pos, addrs.size):
        rec = mem.live(p)
        typed, start = rec.typed(storage)
        out[sel] = typed[_index(addrs[sel], rec.base + start, storage.itemsize)]
    return out


def _address_order(addrs: np.ndarray) -> np.ndarray:
    """A stable argsort of addresses: equal addresses keep their (program, element) order. Sorts
    (address, position) packed in one int64 when it fits: several times faster than a stable argsort."""
    n = addrs.size
    if n == 0:
        return np.zeros(0, np.int64)
    lo = int(addrs.min())
    bits = max((n - 1).bit_length(), 1)
    if int(addrs.max()) - lo < 1 << (62 - bits):
        key = ((addrs - lo) << bits) | np.arange(n, dtype=np.int64)
        key.sort()
        return key & ((1 << bits) - 1)
    return np.argsort(addrs, kind="stable")


DISTINCT_SLOTS = 16  # ``_distinct``'s table: at most this many slots per address (a sort costs ~50 per address)
DISTINCT_TABLE = 1 << 26  # ... and at most this many in all (bytes)


def _distinct(addrs: np.ndarray, step: int) -> bool:
    """Whether no two addresses are equal, told without sorting them where that is cheap: they increase,
    or each marks its slot ((address - lowest) // ``step``) in a table over their range (at most
    ``DISTINCT_SLOTS`` slots per address and ``DISTINCT_TABLE`` in all), and as many slots are marked as
    there are addresses (distinct slots: distinct addresses). False where it cannot tell (a duplicate, or
    too wide a range)."""
    n = addrs.size
    if n < 2 or bool((addrs[1:] > addrs[:-1]).all()):
        return True
    lo = int(addrs.min())
    slots = (int(addrs.max()) - lo) // step + 1
    if slots > DISTINCT_SLOTS * n or slots > DISTINCT_TABLE:
        return False
    table = np.zeros(slots, bool)
    rel = addrs - lo
    table[rel >> (step.bit_length() - 1) if step & (step - 1) == 0 else rel // step] = True
    return int(np.count_nonzero(table)) == n


def _last_writes(addrs: np.ndarray, values: np.ndarray, pos, step: int = 1):
    """Keep only the last write to each address (row-major program, element order wins). ``step``: what
    distinct addresses differ by at least, where the caller knows it (aligned elements: their size)."""
    if _distinct(addrs, step):  # every write its own address: all kept, in order, as the sort below keeps them
        return addrs, values, pos
    order = _address_order(addrs)
    sa = addrs[order]
    last = np.ones(sa.size, bool)
    np.not_equal(sa[1:], sa[:-1], out=last[:-1])
    if last.all():
        return addrs, values, pos
    keep = order[last]
    return sa[last], values[keep], pos if isinstance(pos, (int, np.integer)) else pos[keep]


def _write(mem: DeviceMemory, pos, addrs: np.ndarray, values: np.ndarray, unique: bool = False) -> None:
    """Write elements to checked byte addresses; later duplicates win unless ``unique``."""
    if not unique:
        addrs, values, pos = _last_writes(addrs, values, pos, values.dtype.itemsize)
    for p, sel in _groups(pos, addrs.size):
        rec = mem.live(p)
        typed, start = rec.typed(values.dtype)
        typed[_index(addrs[sel], rec.base + start, values.dtype.itemsize)] = values[sel]


def _element_bytes(mem: DeviceMemory, pos, addrs: np.ndarray, counts: np.ndarray, isz: int):
    """float64 [P, D]: isz bytes per element to the home domain of its address (``addrs``: C order, program
    p's ``counts[p]`` elements after program p - 1's; ``_elements_of``). One allocation holding every
    element counts by the programs' counts (one home, or a blocked allocation's rows); each element's
    program is made only for the other cases."""
    nd, nprog = mem.traffic_columns, counts.size
    out = np.zeros(nprog * nd)
    progs = None
    for p, sel in _groups(pos, addrs.size):
        rec = mem.live(p)
        whole = isinstance(sel, slice)  # every element, in one allocation
        if whole and len(rec.owners) == 1:
            out[rec.owners[0] :: nd] += counts * float(isz)
            continue
        compiled = _element_homes is not None and COMPILED_TILES and addrs.dtype == np.int64
        if whole and compiled and addrs.flags.c_contiguous:
            # several owners: each element's home in one pass in C, added by program (the same whole counts)
            _element_homes(out.reshape(nprog, nd), addrs, counts, rec.base, rec.granule, rec.owners, rec.striped, isz)
            continue
        if whole and not rec.striped:
            _blocked_bytes(out, rec, addrs, None, nprog, nd, isz, counts)
            continue
        if progs is None:
            progs = np.repeat(np.arange(nprog), counts)
        pr = progs[sel]
        if len(rec.owners) == 1:
            out[rec.owners[0] :: nd] += np.bincount(pr, minlength=nprog) * float(isz)
        elif not rec.striped:
            _blocked_bytes(out, rec, addrs[sel], pr, nprog, nd, isz)
        else:
            dom = rec.home_domain(addrs[sel] - rec.base)
            out += np.bincount(pr * nd + dom, minlength=nprog * nd) * float(isz)
    return out.reshape(nprog, nd)


def _blocked_bytes(
    out: np.ndarray, rec, addrs: np.ndarray, progs: np.ndarray, nprog: int, nd: int, isz: int, counts=None
) -> None:
    """``_element_bytes`` of one blocked allocation (its home domain rises with the address, one chunk per
    owner), row by row: each run of one program's elements (C order: one per program) whose lowest and
    highest addresses share a chunk is counted whole in that chunk's domain, the elements of the other
    runs one by one. The same whole counts as element by element, so the same float sums. ``counts``:
    each program's elements when ``addrs`` are all of them (the runs without comparing programs)."""
    n = addrs.size
    if n == 0:
        return
    if counts is not None:
        rows = np.flatnonzero(counts)  # the program of each run
        lens = counts[rows]
        starts = np.zeros(lens.size, np.int64)
        np.cumsum(lens[:-1], out=starts[1:])
    else:
        new = np.empty(n, bool)
        new[0] = True
        np.not_equal(progs[1:], progs[:-1], out=new[1:])
        starts = np.flatnonzero(new)
        lens = np.diff(starts, append=n)
        rows = progs[starts]
    first = rec.owner_index(np.minimum.reduceat(addrs, starts) - rec.base)
    last = rec.owner_index(np.maximum.reduceat(addrs, starts) - rec.base)
    one = first == last
    owners = np.asarray(rec.owners, np.int64)
    if one.all():
        out += np.bincount(rows * nd + owners[first], weights=lens, minlength=nprog * nd) * float(isz)
        return
    whole = np.bincount(rows[one] * nd + owners[first[one]], weights=lens[one], minlength=nprog * nd)
    # the rows crossing chunks: per row, its elements at or above each chunk start the rows cross (one
    # comparison pass per chunk start, no element's chunk computed), their differences its count per chunk
    cross = ~one
    sub = addrs[np.repeat(cross, lens)]
    sub_lens = lens[cross]
    sub_starts = np.zeros(sub_lens.size, np.int64)
    np.cumsum(sub_lens[:-1], out=sub_starts[1:])
    lo, hi = int(first[cross].min()), int(last[cross].max())
    above = np.zeros((hi - lo + 2, sub_lens.size), np.int64)  # row j - lo: elements in chunk j or after
    above[0] = sub_lens
    for j in range(lo + 1, hi + 1):
        np.add.reduceat(sub >= rec.base + j * rec.granule, sub_starts, dtype=np.int64, out=above[j - lo])
    key = rows[cross][None, :] * nd + owners[lo : hi + 1, None]
    split = np.bincount(key.ravel(), weights=(above[:-1] - above[1:]).ravel(), minlength=nprog * nd)
    out += (whole + split) * float(isz)


def _flat(addrs, mask):
    addrs = np.asarray(addrs, np.int64)
    nprog = addrs.shape[0]
    flat = addrs.reshape(nprog, math.prod(addrs.shape[1:]))
    if mask is None:
        return addrs.shape, flat, None
    if type(mask) is np.ndarray and mask.dtype == np.bool_ and mask.shape == addrs.shape:
        m = mask.reshape(nprog, flat.shape[1])  # already the addresses' shape (a mask tile): no broadcast view
    else:
        m = np.broadcast_to(np.asarray(mask, bool), addrs.shape).reshape(nprog, math.prod(addrs.shape[1:]))
    return addrs.shape, flat, (None if m.all() else m)


def _elements_of(flat, m):
    """Masked element addresses in C order and each program's count of them (its run of them: not
    ``np.nonzero(m)``'s program of each element, ~10x slower to make, made where needed: ``_element_bytes``)."""
    nprog, n = flat.shape
    if m is None:
        return flat.reshape(-1), np.full(nprog, n, np.int64)
    return flat[m], np.count_nonzero(m, axis=1).astype(np.int64, copy=False)


def _element_traffic(mem, pos, av, counts, isz) -> Traffic:
    elems = counts.astype(np.int64)  # a copy: the caller's counts stay its own
    return Traffic(_element_bytes(mem, pos, av, counts, isz), elems, elems.copy())


def _one_address_traffic(mem, pos, av, counts, isz) -> Traffic:
    """``_element_traffic`` of elements that all have one address (a lock's spinners, one element): each
    program's count times the element's bytes in the home domain of that address (whole numbers in float64:
    the same values, column and zeros as counting each element; the home in Python integers, as
    ``Allocation.home_domain``)."""
    rec = mem.live(int(pos) if isinstance(pos, (int, np.integer)) else int(pos[0]))
    owners = rec.owners
    k = len(owners)
    if k == 1:
        home = owners[0]
    else:
        piece = (int(av[0]) - rec.base) // rec.granule
        home = owners[piece % k if rec.striped else min(piece, k - 1)]
    elems = counts.astype(np.int64)
    out = np.zeros((elems.size, mem.traffic_columns))
    out[:, home] = elems * float(isz)
    return Traffic(out, elems, elems.copy())


# ---- gather / scatter ------------------------------------------------------------------------------
def gather(mem: DeviceMemory, addrs, mask, dtype: str, fill, access: str = "gather", counted: bool = True):
    """values[P, *shape] = mem[addrs] where mask, else fill; addrs are byte addresses. ``counted``: False in
    a launch that records no trace (its Traffic is ``NOT_COUNTED``: no bytes by home counted)."""
    storage = _storage(dtype)
    shape, flat, m = _flat(addrs, mask)
    av, counts = _elements_of(flat, m)
    pos = mem.locate(flat, storage.itemsize, m, f"{access} of {dtype}", av)
    if m is None:
        out = _read(mem, pos, av, storage)
    else:
        out = np.full(flat.shape, fill_value(fill, dtype), storage)
        out[m] = _read(mem, pos, av, storage)
    traffic = _element_traffic(mem, pos, av, counts, storage.itemsize) if counted else NOT_COUNTED
    return _from_storage(out.reshape(shape), dtype), traffic


def scatter(
    mem: DeviceMemory, addrs, mask, values, dtype: str | None = None, access: str = "scatter", counted: bool = True
) -> Traffic:
    """mem[addrs] = values where mask; duplicates: the last in (program, row-major) order wins. ``counted``:
    as ``gather``'s."""
    dtype = dtype or _dtype_name(values)
    storage = _storage(dtype)
    shape, flat, m = _flat(addrs, mask)
    nprog = shape[0]
    av, counts = _elements_of(flat, m)
    pos = mem.locate(flat, storage.itemsize, m, f"{access} of {dtype}", av)
    vals = _to_storage(np.broadcast_to(values, shape), dtype).reshape(nprog, math.prod(shape[1:]))
    _write(mem, pos, av, vals.reshape(-1) if m is None else vals[m])
    return _element_traffic(mem, pos, av, counts, storage.itemsize) if counted else NOT_COUNTED


def _dtype_name(values) -> str:
    dt = np.asarray(values).dtype
    for name, npdt in NUMPY.items():
        if npdt == dt:
            return name
    raise SimulatorError(f"values of numpy dtype {dt} have no ISA dtype; pass dtype=")


# ---- strided (box-masked) DMA ------------------------------------------------------------------------
def _per_program(x, nprog: int, rank: int) -> np.ndarray:
    """[P, rank] int64 from [P, rank], [P * rank] or one [rank] row shared by all programs."""
    if rank == 0:
        return np.zeros((nprog, 0), np.int64)
    arr = np.asarray(x, np.int64)
    if arr.shape == (nprog, rank):  # the registers' rows already: no broadcast
        return arr
    return np.broadcast_to(arr if arr.ndim == 2 else arr.reshape(-1, rank), (nprog, rank))


_SHAPES: dict = {}


def _tile_operands(base, dtype: str, shape, strides, lo, hi):
    """(bases, programs, strides, lo, hi) as int64 arrays, one row per program, for the matrix-tile paths
    (_Tiles, _MaskedTiles): rank 2 or more, a numeric dtype, at least two programs; None otherwise."""
    r = len(shape)
    if r < 2 or dtype == "i1" or dtype not in NUMPY:
        return None
    base = np.asarray(base, np.int64).reshape(-1)
    nprog = base.size
    st, lo, hi = (np.asarray(x, np.int64) for x in (strides, lo, hi))
    if nprog < 2 or st.shape != (nprog, r) or lo.shape != (nprog, r) or hi.shape != (nprog, r):
        return None
    return base, nprog, st, lo, hi


def _shape_row(shape: tuple) -> np.ndarray:
    """A tile shape as an int64 row (kept per shape: the same few shapes come back every instruction)."""
    row = _SHAPES.get(shape)
    if row is None:
        if len(_SHAPES) > 256:
            _SHAPES.clear()
        row = _SHAPES[shape] = np.asarray(shape, np.int64)
        row.flags.writeable = False
    return row


class _Box:
    """A strided descriptor for P programs: element i valid iff lo <= i < hi on every axis.

    Built once per DMA instruction, for a few dozen programs in a persistent loop's trip: rank 1
    (the streaming kernels' rows) takes shortcuts computing the same values with fewer numpy calls."""

    def __init__(self, base, dtype, shape, strides, lo, hi):
        self.dtype, self.storage = dtype, _storage(dtype)
        self.isz = self.storage.itemsize
        self.shape = tuple(int(s) for s in shape)
        r = len(self.shape)
        self.base = np.asarray(base, np.int64).reshape(-1)
        nprog = self.nprog = self.base.size
        self.strides = _per_program(strides, nprog, r)
        shp = _shape_row(self.shape)
        self.a = np.minimum(np.maximum(_per_program(lo, nprog, r), 0), shp)  # np.clip(., 0, shp), faster
        self.b = np.minimum(np.maximum(_per_program(hi, nprog, r), 0), shp)
        self.n = np.maximum(self.b - self.a, 0)
        if r == 1:
            self.count = self.n[:, 0].copy()
            self.full = (self.a[:, 0] == 0) & (self.b[:, 0] == self.shape[0])
        else:
            self.count = np.prod(self.n, axis=1, dtype=np.int64)
            self.full = ((self.a == 0) & (self.b == shp)).all(axis=1)
        self.span_lo, self.span_hi = self.span()
        st = self.strides
        self.uniform = nprog <= 1 or bool((st == st[:1]).all())
        self.unit_inner = r > 0 and bool((np.abs(st[:, -1]) == 1).all())

    def span(self, sel=slice(None), whole: bool = False):
        """Byte range [lo, hi) of each program's valid elements (whole=True: of all its elements)."""
        s = self.strides[sel]
        base = self.base[sel]
        if len(self.shape) == 1:
            s = s[:, 0]
            a = 0 if whole else self.a[sel, 0]
            b = self.shape[0] if whole else self.b[sel, 0]
            first, last = a * s, (b - 1) * s
            return base + np.minimum(first, last) * self.isz, base + (np.maximum(first, last) + 1) * self.isz
        a = np.zeros_like(s) if whole else self.a[sel]
        b = np.broadcast_to(np.asarray(self.shape, np.int64), s.shape) if whole else self.b[sel]
        first, last = a * s, (b - 1) * s
        return (
            base + np.minimum(first, last).sum(axis=1) * self.isz,
            base + (np.maximum(first, last).sum(axis=1) + 1) * self.isz,
        )

    def offsets(self, sel=slice(None), dims=None) -> np.ndarray:
        """Element offsets from base, [p, *shape[:dims]] for the selected programs."""
        shape = self.shape[:dims]
        s = self.strides[sel][:, : len(shape)]
        if self.uniform:
            rel = np.zeros((), np.int64)
            for k, nk in enumerate(shape):
                rel = np.add.outer(rel, np.arange(nk, dtype=np.int64) * s[0, k])
            return np.broadcast_to(rel, (s.shape[0], *shape))
        out = np.zeros((s.shape[0],) + (1,) * len(shape), np.int64)
        for k, nk in enumerate(shape):
            ax = [1] * len(shape)
            ax[k] = nk
            out = out + np.arange(nk, dtype=np.int64).reshape(1, *ax) * s[:, k].reshape(-1, *([1] * len(shape)))
        return out

    def valid(self, sel=slice(None), dims=None) -> np.ndarray:
        """bool [p, *shape[:dims]]: element inside its program's box (on those dims)."""
        shape = self.shape[:dims]
        a, b = self.a[sel], self.b[sel]
        m = np.ones((a.shape[0],) + (1,) * len(shape), bool)
        for k, nk in enumerate(shape):
            ar = np.arange(nk).reshape([1] + [nk if j == k else 1 for j in range(len(shape))])
            lo = a[:, k].reshape(-1, *([1] * len(shape)))
            hi = b[:, k].reshape(-1, *([1] * len(shape)))
            m = m & (ar >= lo) & (ar < hi)
        return np.broadcast_to(m, (a.shape[0], *shape))

    def rows(self, sel=slice(None)):
        """Valid innermost rows of the selected programs as byte ranges (needs |inner stride| == 1):
        (absolute start [n], length [n], program [n])."""
        r = len(self.shape)
        progs = np.arange(self.nprog)[sel]
        s, a, b = self.strides[sel, -1], self.a[sel, -1], self.b[sel, -1]
        first = self.base[sel] + np.minimum(a * s, (b - 1) * s) * self.isz
        if r == 2 and self.uniform:  # a matrix tile: row j of every program at first + j * row stride
            j = np.arange(self.shape[0], dtype=np.int64)
            starts = first[:, None] + j * (int(self.strides[0, 0]) * self.isz)
            a0, b0, n = self.a[sel, :1], self.b[sel, :1], self.n[sel, 1]
            m = (j >= a0) & (j < b0) & (n > 0)[:, None]
            nrow = np.count_nonzero(m, axis=1)
            return starts[m], np.repeat(n * self.isz, nrow), np.repeat(progs, nrow)
        starts = first.reshape(-1, *([1] * (r - 1))) + self.offsets(sel, r - 1) * self.isz
        m = self.valid(sel, r - 1) & (self.n[sel, -1] > 0).reshape(-1, *([1] * (r - 1)))
        nrow = m.reshape(progs.size, -1).sum(axis=1)
        lens = np.repeat(self.n[sel, -1] * self.isz, nrow)
        return starts[m], lens, np.repeat(progs, nrow)

    def runs(self) -> np.ndarray:
        """Contiguous runs per program: elements minus row-major steps that move one element."""
        n, s = self.n, self.strides
        if not self.shape:
            return self.count.copy()
        if len(self.shape) == 1:  # the general formula with one axis: a unit stride makes one run
            if self.unit_inner:
                return np.minimum(self.count, 1)
            return np.where(np.abs(s[:, 0]) == 1, np.minimum(self.count, 1), self.count)
        wrap = (n - 1) * s  # offset change of an axis going from its last to its first valid index
        inner = np.cumsum(wrap[:, ::-1], axis=1)[:, ::-1] - wrap  # sum over axes after k
        step = s - inner
        outer = np.cumprod(np.concatenate([np.ones((self.nprog, 1), np.int64), n[:, :-1]], axis=1), axis=1)
        cont = np.where((n > 1) & (np.abs(step) == 1), (n - 1) * outer, 0).sum(axis=1)
        return np.where(self.count > 0, self.count - cont, 0)

    def injective(self) -> np.ndarray:
        """bool [P]: no two valid elements of a program share an address."""
        if len(self.shape) == 1:  # one axis: distinct unless it repeats one address
            return (self.n[:, 0] <= 1) | (self.strides[:, 0] != 0)
        ext = np.where(self.n > 1, np.abs(self.strides), 0)
        order = np.argsort(ext, axis=1, kind="stable")
        es = np.take_along_axis(ext, order, axis=1)
        ns = np.take_along_axis(self.n, order, axis=1)
        reach = np.cumsum((ns - 1) * es, axis=1) - (ns - 1) * es  # extent of the finer axes
        return np.all((ns <= 1) | (es > reach), axis=1)

    def element_addrs(self, sel=slice(None)) -> np.ndarray:
        return self.base[sel].reshape(-1, *([1] * len(self.shape))) + self.offsets(sel) * self.isz


def _box_locate(mem: DeviceMemory, box: _Box):
    """Live position per active program when each active program's whole span sits in one
    allocation and is aligned; None otherwise (the caller checks element by element)."""
    active = box.count > 0
    if active.all():  # the common case: every program moves something
        if (box.base % box.isz).any():
            return None
        pos = mem.span_positions(box.span_lo, box.span_hi)
        return None if (pos < 0).any() else pos
    if np.any(box.base[active] % box.isz):
        return None
    pos = np.full(box.nprog, -1, np.int64)
    pos[active] = mem.span_positions(box.span_lo[active], box.span_hi[active])
    if np.any(pos[active] < 0):
        return None
    return pos


def _live(pos: np.ndarray):
    """The live positions the active programs (pos >= 0) touch, in increasing order."""
    lo, hi = int(pos.min()), int(pos.max())
    if lo >= 0 and lo == hi:  # one allocation for all (the common case)
        return [lo]
    act = pos[pos >= 0]
    return [int(act[0])] if act.size and act.min() == act.max() else np.unique(act)


def _whole_inside(box: _Box, rec) -> bool:
    """Every program's whole tile (masked-off elements too) inside allocation ``rec``, for a uniform
    box: its programs' tiles differ by their bases only."""
    lo = hi = 0
    for n, st in zip(box.shape, box.strides[0].tolist()):
        lo, hi = lo + min(0, (n - 1) * st), hi + max(0, (n - 1) * st)
    return int(box.base.min()) + lo * box.isz >= rec.base and int(box.base.max()) + (hi + 1) * box.isz <= rec.end


def _box_traffic(mem: DeviceMemory, box: _Box, pos: np.ndarray) -> Traffic:
    nd = mem.traffic_columns
    out = np.zeros((box.nprog, nd))
    for p in _live(pos):
        rec = mem.live(int(p))
        sel = np.nonzero(pos == p)[0]
        lo = box.span_lo[sel] - rec.base
        inside = len(rec.owners) == 1 or lo // rec.granule == (box.span_hi[sel] - 1 - rec.base) // rec.granule
        if inside is True or inside.all():
            # each program's bytes in one stripe or chunk: its whole count to that home (the sum of its rows)
            out[sel, rec.home_domain(lo)] += box.count[sel] * float(box.isz)
            continue
        if inside.any():  # the same, and the programs crossing pieces row by row (sums of whole bytes: exact)
            out[sel[inside], rec.home_domain(lo[inside])] += box.count[sel[inside]] * float(box.isz)
            sel = sel[~inside]
        if box.unit_inner:  # one contiguous byte range per row
            starts, lens, progs = box.rows(sel)
            starts -= rec.base
        else:
            m = box.valid(sel)
            starts = (box.element_addrs(sel) - rec.base)[m]
            lens, progs = np.full(starts.shape, box.isz), sel[np.nonzero(m.reshape(sel.size, -1))[0]]
        _range_bytes(rec, starts, lens, progs, out)
    return Traffic(out, box.count.copy(), box.runs())


def _range_bytes(rec, starts, lens, progs, out) -> None:
    """Add the bytes of ranges [start, start + len) (offsets in ``rec``) to out[prog, home domain]."""
    nd = out.shape[1]
    last = starts + lens - 1
    one = (starts // rec.granule) == (last // rec.granule)  # the common case: inside one stripe/chunk
    dom = rec.home_domain(starts[one])
    out.reshape(-1)[:] += np.bincount(progs[one] * nd + dom, weights=lens[one], minlength=out.size)
    if not one.all():
        part = rec.split(starts[~one], starts[~one] + lens[~one])
        for j, d in enumerate(rec.owners):
            np.add.at(out[:, d], progs[~one], part[:, j])


_MAX_TILE_GROUPS = 16  # more distinct (extent, strides) groups than this: index arrays instead


def _view(flat: np.ndarray, extent, strides) -> np.ndarray:
    """``flat`` (1-D) seen as [len, *extent] with element ``strides``: view[e] is the tile at e.
    Callers index it only at offsets whose every element they have checked."""
    isz = flat.itemsize
    bits = flat.view(f"u{isz}")  # as_strided rejects some ml_dtypes (float8_e5m2): stride the raw bits
    view = np.lib.stride_tricks.as_strided(
        bits, shape=(bits.size, *extent), strides=(isz, *(np.asarray(strides, np.int64) * isz)), writeable=True
    )
    return view.view(flat.dtype)


def _programs_view(flat: np.ndarray, e0: np.ndarray, extent, strides, writeable: bool = True):
    """``flat`` (1-D) seen as [P, *extent] with program p's tile at element e0[p], when e0 steps
    evenly (programs reading consecutive blocks, rows, tiles of a matrix); else None. A strided
    view instead of ``_view(...)[e0]``: the same elements, no copy. Callers have checked them all."""
    if e0.size > 1:
        step = int(e0[1] - e0[0])
        if not (e0[1:] - e0[:-1] == step).all():  # np.diff without its Python overhead
            return None
    else:
        step = 0
    isz = flat.itemsize
    bits = flat.view(f"u{isz}")[int(e0[0]) :] if e0.size else flat.view(f"u{isz}")
    view = np.lib.stride_tricks.as_strided(
        bits,
        shape=(e0.size, *extent),
        strides=(step * isz, *(np.asarray(strides, np.int64) * isz)),
        writeable=writeable,
    )
    return view.view(flat.dtype)


def _even_runs(e0: list[int]) -> list[tuple[int, int]]:
    """[i, j) ranges covering ``e0`` in order, each evenly spaced (a grouped program order's runs)."""
    runs, i, n = [], 0, len(e0)
    while i < n:
        j = i + 1  # the run's end
        if j < n:
            step = e0[j] - e0[i]
            j += 1
            while j < n and e0[j] - e0[j - 1] == step:
                j += 1
        runs.append((i, j))
        i = j
    return runs


def _tile_groups(box: _Box, sel: np.ndarray):
    """Programs ``sel`` grouped by valid-box extent and strides, each group one strided view:
    [(programs, element offset of the first valid element from base, extent, strides, offset of
    that element in the [P, *shape] tile array)], or None when there are too many groups."""
    r = len(box.shape)
    key = np.concatenate([box.n[sel], box.strides[sel]], axis=1)
    if (key == key[:1]).all():
        groups = [(sel, key[0])]
    else:
        uniq, inv = np.unique(key, axis=0, return_inverse=True)
        if len(uniq) > _MAX_TILE_GROUPS:
            return None
        groups = [(sel[inv.reshape(-1) == g], uniq[g]) for g in range(len(uniq))]
    tile_strides = np.asarray(contiguous_strides(box.shape), np.int64)
    numel = math.prod(box.shape)
    return [
        (q, (box.a[q] * k[r:]).sum(axis=1), tuple(k[:r]), k[r:], q * numel + (box.a[q] * tile_strides).sum(axis=1))
        for q, k in groups
    ]


_COPY_PER_PROGRAM = 2048  # elements per program from which a gather copies program by program


# Up to this many programs, _Row.make checks their registers as Python lists (fewer calls than numpy's
# reductions); above it, with numpy (a Python list of 4096 programs' bases cost 2 ms per DMA).
FEW_PROGRAMS = 64


class _Row:
    """The common case of a strided DMA, taken without building a _Box: one axis, at least two
    programs, one stride shared by all, every program moving something from an aligned base, all
    of their whole rows inside one allocation, the bases evenly spaced (a persistent loop's trip
    over consecutive rows or blocks). ``make`` returns None for anything else; the general path then
    runs. Computes the same values as the general path, in fewer numpy calls; when every program
    moves its whole row (the usual case), in Python integers where the general path needs arrays:
    the spans are then ``lo0 + i * step + [0, length)``."""

    __slots__ = ("base", "dtype", "storage", "isz", "size", "stride", "a", "b", "count", "nprog")
    __slots__ += ("rec", "pos", "whole", "offset", "step", "lo0", "length", "_span", "clipped")

    @classmethod
    def make(cls, mem: DeviceMemory, base, dtype: str, shape, strides, lo, hi) -> _Row | None:
        if len(shape) != 1 or dtype == "i1" or dtype not in NUMPY:
            return None
        base = np.asarray(base, np.int64).reshape(-1)
        nprog, size = base.size, int(shape[0])
        st, lo, hi = (np.asarray(x, np.int64) for x in (strides, lo, hi))
        if nprog < 2 or size == 0 or st.shape != (nprog, 1) or lo.shape != (nprog, 1) or hi.shape != (nprog, 1):
            return None
        storage = NUMPY[dtype]
        isz = storage.itemsize
        few = nprog <= FEW_PROGRAMS
        s = int(st[0, 0])
        if not (st.reshape(-1).tolist().count(s) == nprog if few else (st == s).all()):
            return None
        first_base = int(base[0])
        step = int(base[1]) - first_base
        # evenly spaced aligned bases (the general path's test on the element offsets, the same for aligned bases)
        if first_base % isz or step % isz:
            return None
        if few:
            bl = base.tolist()
            if bl != (list(range(first_base, first_base + step * nprog, step)) if step else [first_base] * nprog):
                return None
            whole = max(lo.reshape(-1).tolist()) <= 0 and min(hi.reshape(-1).tolist()) >= size  # whole rows, all
        else:
            if not (np.diff(base) == step).all():
                return None
            whole = int(lo.max()) <= 0 and int(hi.min()) >= size
        span = None
        if whole:
            a = b = count = None  # count: size for every program
            first, last = 0, (size - 1) * s
        else:
            a = np.minimum(np.maximum(lo[:, 0], 0), size)
            b = np.minimum(np.maximum(hi[:, 0], 0), size)
            count = np.maximum(b - a, 0)
            if not count.all():
                return None
            first, last = a * s, (b - 1) * s
            span = (base + np.minimum(first, last) * isz, base + (np.maximum(first, last) + 1) * isz)
        last_base = first_base + step * (nprog - 1)
        whole_lo = min(first_base, last_base) + min(0, (size - 1) * s) * isz
        whole_hi = max(first_base, last_base) + (max(0, (size - 1) * s) + 1) * isz
        p = mem.span_position(whole_lo, whole_hi)
        clipped = p < 0 and span is not None
        if clipped:  # a masked tail past the allocation's end (or before its start): its valid elements inside
            p = mem.span_position(int(span[0].min()), int(span[1].max()))
        if p < 0:
            return None
        rec = mem.live(p)
        row = cls()
        row.base, row.dtype, row.storage, row.isz, row.size, row.stride = base, dtype, storage, isz, size, s
        row.a, row.b, row.count, row.rec, row.pos, row.whole, row.nprog = a, b, count, rec, p, whole, nprog
        row.offset, row.step, row.clipped = first_base - rec.base, step, clipped  # offset: program 0's row's, in bytes
        if whole:  # program i's span: [lo0 + i * step, lo0 + i * step + length)
            row.lo0 = first_base + min(first, last) * isz
            row.length = (max(first, last) + 1 - min(first, last)) * isz
        row._span = span
        return row

    @property
    def span_lo(self) -> np.ndarray:
        return self.spans()[0]

    @property
    def span_hi(self) -> np.ndarray:
        return self.spans()[1]

    def spans(self) -> tuple[np.ndarray, np.ndarray]:
        """Byte range [lo, hi) of each program's valid elements, as arrays."""
        if self._span is None:
            lo = self.lo0 + np.arange(self.nprog, dtype=np.int64) * self.step
            self._span = (lo, lo + self.length)
        return self._span

    def disjoint_increasing(self) -> bool:
        """Spans at increasing addresses, none overlapping the next (``span_hi[:-1] <= span_lo[1:]``)."""
        if self.whole:  # span_hi[i] = span_lo[i] + length, span_lo[i + 1] = span_lo[i] + step
            return self.length <= self.step
        lo, hi = self.spans()
        return bool((hi[:-1] <= lo[1:]).all())

    def view(self, writeable: bool, nprog: int | None = None) -> np.ndarray:
        """[P, size] strided view of the programs' rows in memory (_programs_view's, built directly
        on the allocation's bytes; ``nprog``: of the first ``nprog`` programs'). Not of a clipped row."""
        out = np.ndarray(
            (self.nprog if nprog is None else nprog, self.size),
            self.storage,
            buffer=self.rec.view,
            offset=self.offset,
            strides=(self.step, self.stride * self.isz),
        )
        if not writeable:
            out.flags.writeable = False
        return out

    def full(self) -> bool:
        return self.whole or bool((self.count == self.size).all())

    def _part(self, i: int, x: int, y: int) -> np.ndarray:
        """View of program i's elements x..y-1 (valid ones: inside the allocation) in memory."""
        step = self.stride * self.isz
        offset = self.offset + i * self.step + x * step
        return np.ndarray((y - x,), self.storage, buffer=self.rec.view, offset=offset, strides=(step,))

    def _full_lead(self) -> int:
        """k: programs 0..k-1 move their whole rows, all inside the allocation (one view holds them)."""
        full = (self.a == 0) & (self.b == self.size)
        k = int(full.argmin()) if not full.all() else self.nprog
        if k:
            ends = (self.offset, self.offset + self.step * (k - 1))
            reach = (self.size - 1) * self.stride * self.isz
            if min(ends) + min(0, reach) < 0 or max(ends) + max(0, reach) + self.isz > self.rec.nbytes:
                return 0
        return k

    def masked_values(self, fill, into=None) -> np.ndarray:
        """[P, size] of a row with masked-off elements (clipped or not): ``fill`` (of the storage type) where
        masked off, the valid elements read program by program after the leading whole rows (masked-off lanes
        read nothing). Into ``into`` when it is such an array."""
        n = self.nprog
        ok = into is not None and into.shape == (n, self.size) and into.dtype == self.storage
        out = into if ok else np.empty((n, self.size), self.storage)
        k = self._full_lead()
        if k:
            np.copyto(out[:k], self.view(False, k))
        if k < n:
            np.copyto(out[k:], fill)
            for i, x, y in zip(range(k, n), self.a[k:].tolist(), self.b[k:].tolist()):
                out[i, x:y] = self._part(i, x, y)
        return out

    def store_masked(self, values: np.ndarray) -> None:
        """Write the valid elements of [P, size] ``values`` (the storage type), the leading whole rows through
        one view, the rest program by program. Only for rows whose valid elements are distinct addresses."""
        n, k = self.nprog, self._full_lead()
        if k:
            np.copyto(self.view(True, k), values[:k])
        for i, x, y in zip(range(k, n), self.a[k:].tolist(), self.b[k:].tolist()):
            self._part(i, x, y)[...] = values[i, x:y]

    def valid(self) -> np.ndarray:
        ar = np.arange(self.size)
        if self.whole:
            return np.ones((self.nprog, self.size), bool)
        return (ar >= self.a[:, None]) & (ar < self.b[:, None])

    def _whole_homes(self, rec) -> list[tuple[int, int, int]] | None:
        """Whole rows at increasing bases: [(first program, end, home domain)] covering the programs in
        order when every span sits in one stripe or chunk, else None (``lo // g == (hi - 1) // g`` and
        Allocation.owner_index, in Python integers, one step per stripe or chunk the spans start in)."""
        k, g, owners = len(rec.owners), rec.granule, rec.owners
        n, step, length = self.nprog, self.step, self.length
        lo0 = self.lo0 - rec.base
        out, i = [], 0
        while i < n:
            piece = (lo0 + i * step) // g
            nxt = (piece + 1) * g
            j = min(n, -((lo0 - nxt) // step))  # the first program whose span starts at nxt or above
            if lo0 + (j - 1) * step + length > nxt:  # the last one starting in this piece crosses into the next
                return None
            out.append((i, j, owners[piece % k if rec.striped else min(piece, k - 1)]))
            i = j
        return out

    def traffic(self, mem: DeviceMemory) -> Traffic:
        """_box_traffic of the same box: bytes to the home of each program's span when it sits in
        one stripe or chunk, else the general computation."""
        rec, nprog = self.rec, self.nprog
        if self.whole and (len(rec.owners) == 1 or self.step > 0):  # count * float(isz) with every count == size
            homes = [(0, nprog, rec.owners[0])] if len(rec.owners) == 1 else self._whole_homes(rec)
            if homes is not None:
                out = np.zeros((nprog, mem.traffic_columns))
                nbytes = float(self.size) * float(self.isz)
                for i, j, d in homes:
                    out[i:j, d] = nbytes
                count = np.full(nprog, self.size, np.int64)
                runs = np.ones(nprog, np.int64) if abs(self.stride) == 1 else count.copy()
                return Traffic(out, count, runs)
        elif not self.whole:
            span_lo, span_hi = self.spans()
            lo = span_lo - rec.base
            if len(rec.owners) == 1 or (lo // rec.granule == (span_hi - 1 - rec.base) // rec.granule).all():
                out = np.zeros((nprog, mem.traffic_columns))
                out[np.arange(nprog), rec.home_domain(lo)] = self.count * float(self.isz)  # 0.0 + x: x
                runs = np.minimum(self.count, 1) if abs(self.stride) == 1 else self.count.copy()
                return Traffic(out, self.count.copy(), runs)
        a = np.zeros((nprog, 1), np.int64) if self.whole else self.a[:, None]
        b = np.full((nprog, 1), self.size, np.int64) if self.whole else self.b[:, None]
        box = _Box(self.base, self.dtype, (self.size,), [self.stride], a, b)
        return _box_traffic(mem, box, np.full(nprog, self.pos, np.int64))


class _Tiles:
    """The common case of a matrix tile's strided DMA, taken without building a _Box: rank 2 or more,
    at least two programs, one set of strides shared by all, every program moving its whole tile
    (no element masked off) from an aligned base, all of the tiles inside one allocation (a
    persistent loop's trip over the tiles of a matrix; the bases need not be evenly spaced). ``make``
    returns None for anything else; the general path then runs. The same values as the general path
    (what _Box, _box_locate and _box_traffic compute for such a box), in Python integers where the
    general path needs arrays: every program moves ``numel`` elements in ``runs`` runs, its span is
    ``base + [lo_off, hi_off) * isz``."""

    __slots__ = ("base", "dtype", "storage", "isz", "shape", "strides", "nprog", "rec", "pos")
    __slots__ += ("numel", "runs", "lo_off", "hi_off")

    @classmethod
    def make(cls, mem: DeviceMemory, base, dtype: str, shape, strides, lo, hi) -> _Tiles | None:
        found = _tile_operands(base, dtype, shape, strides, lo, hi)
        if found is None:
            return None
        base, nprog, st, lo, hi = found
        shape = tuple(int(n) for n in shape)
        numel = math.prod(shape)
        if numel == 0 or int(lo.max()) > 0 or (hi < _shape_row(shape)).any() or not (st == st[:1]).all():
            return None  # masked elements, or strides that differ between programs: the general path
        s = st[0].tolist()
        storage = NUMPY[dtype]
        isz = storage.itemsize
        if isz > 1 and (base % isz).any():
            return None  # misaligned: the general path faults or checks element by element
        lo_off = sum(min(0, (n - 1) * k) for n, k in zip(shape, s))  # _Box.span(whole=True), in elements
        hi_off = sum(max(0, (n - 1) * k) for n, k in zip(shape, s)) + 1
        p = mem.span_position(int(base.min()) + lo_off * isz, int(base.max()) + hi_off * isz)
        if p < 0:
            return None
        # _Box.runs with n == shape for every program: elements less the row-major steps that move one element
        inner, outer, cont = 0, numel, 0
        for n, k in zip(reversed(shape), reversed(s)):
            outer //= n  # the product of the sizes of the axes before this one
            if n > 1 and abs(k - inner) == 1:
                cont += (n - 1) * outer
            inner += (n - 1) * k  # for the next (outer) axis: the sum of (n - 1) * stride over the axes after it
        t = cls()
        t.base, t.dtype, t.storage, t.isz, t.shape, t.strides, t.nprog = base, dtype, storage, isz, shape, s, nprog
        t.rec, t.pos, t.numel, t.runs, t.lo_off, t.hi_off = mem.live(p), p, numel, numel - cont, lo_off, hi_off
        return t

    @classmethod
    def from_registers(cls, mem: DeviceMemory, regs: np.ndarray, base: int, strides, lo, hi, dtype: str, shape):
        """``make`` of the descriptor in registers (``regs``: the register file [registers, P]; ``base`` a
        register, ``strides``/``lo``/``hi`` one register per axis of ``shape``), its test and values computed
        in C (``_tiles.whole_tiles``) from the registers as they are: the same descriptor, or None where
        ``make`` returns None (or the C code leaves the case to it: then call ``make``)."""
        if _tiles is None or len(shape) < 2 or dtype == "i1" or dtype not in NUMPY:
            return None
        storage = NUMPY[dtype]
        isz = storage.itemsize
        found = _tiles.whole_tiles(regs, base, strides, lo, hi, shape, isz)
        if found is None:
            return None
        span_lo, span_hi, lo_off, hi_off, numel, runs, s = found
        p = mem.span_position(span_lo, span_hi)
        if p < 0:
            return None
        t = cls()
        t.base, t.dtype, t.storage, t.isz, t.shape, t.strides = regs[base], dtype, storage, isz, shape, list(s)
        t.nprog, t.rec, t.pos, t.numel, t.runs = len(t.base), mem.live(p), p, numel, runs
        t.lo_off, t.hi_off = lo_off, hi_off
        return t

    def _copy(self) -> _Tiles:
        t = _Tiles.__new__(_Tiles)
        for k in _Tiles.__slots__:
            setattr(t, k, getattr(self, k))
        return t

    def _span(self) -> tuple[int, int]:
        """The bytes the access touches, [lo, hi), in Python integers (what ``_kept_box`` finds for whole tiles)."""
        isz = self.isz
        return int(self.base.min()) + self.lo_off * isz, int(self.base.max()) + self.hi_off * isz

    def kept(self) -> Access:
        """This access kept for re-pricing (``Access``): the descriptor with its bases copied (they are a
        view of the register file) and its span."""
        t = self._copy()
        t.base = self.base.copy()
        return Access(None, None, *t._span(), t)

    def over(self, mem: DeviceMemory) -> _Tiles | None:
        """The same descriptor over ``mem``, memory with the same allocations placed otherwise (what ``make``
        returns there: only the allocation it finds depends on the memory); None when ``mem`` has no
        allocation holding every tile."""
        p = mem.span_position(*self._span())
        if p < 0:
            return None
        t = self._copy()
        t.rec, t.pos = mem.live(p), p
        return t

    def box(self) -> _Box:
        """The general path's descriptor of the same access: what _Box() computes from its registers, each
        attribute filled from what is known of whole tiles (a kept access, a tile crossing stripes)."""
        box = _Box.__new__(_Box)
        p, r, isz = self.nprog, len(self.shape), self.isz
        box.dtype, box.storage, box.isz, box.shape, box.base, box.nprog = (
            self.dtype,
            self.storage,
            isz,
            self.shape,
            self.base,
            p,
        )
        box.strides = np.broadcast_to(np.asarray([self.strides], np.int64), (p, r))
        box.a, box.b = np.zeros((p, r), np.int64), np.tile(_shape_row(self.shape), (p, 1))
        box.n = box.b.copy()
        box.count, box.full = np.full(p, self.numel, np.int64), np.ones(p, bool)
        box.span_lo, box.span_hi = self.base + self.lo_off * isz, self.base + self.hi_off * isz
        box.uniform, box.unit_inner = True, abs(self.strides[-1]) == 1
        return box

    def values(self, into=None) -> np.ndarray:
        """[P, *shape] of the tiles' elements (load_strided's, for one allocation holding every tile whole)."""
        typed, start = self.rec.typed(self.storage)
        return _tile_values(typed, (self.base - (self.rec.base + start)) // self.isz, self.shape, self.strides, into)

    def traffic(self, mem: DeviceMemory) -> Traffic:
        """_box_traffic of the same box: each program's bytes to the home of its span when it sits in one
        stripe or chunk, else the general computation."""
        rec, nprog = self.rec, self.nprog
        out = np.zeros((nprog, mem.traffic_columns))
        nbytes = self.numel * float(self.isz)
        if len(rec.owners) == 1:
            out[:, rec.owners[0]] = nbytes
        else:
            if COMPILED_TILES and _tiles is not None and self.base.dtype == np.int64 and self.base.flags.c_contiguous:
                offset, span = self.lo_off * self.isz - rec.base, (self.hi_off - self.lo_off) * self.isz
                if _tiles.tile_homes(out, self.base, offset, span, rec.granule, rec.owners, rec.striped, nbytes):
                    return Traffic(out, np.full(nprog, self.numel, np.int64), np.full(nprog, self.runs, np.int64))
            lo = self.base + (self.lo_off * self.isz - rec.base)
            if not (lo // rec.granule == (lo + ((self.hi_off - self.lo_off) * self.isz - 1)) // rec.granule).all():
                if not self._rows_by_home(rec, out):
                    return _box_traffic(mem, self.box(), np.full(nprog, self.pos, np.int64))
                return Traffic(out, np.full(nprog, self.numel, np.int64), np.full(nprog, self.runs, np.int64))
            out[np.arange(nprog), rec.home_domain(lo)] = nbytes
        return Traffic(out, np.full(nprog, self.numel, np.int64), np.full(nprog, self.runs, np.int64))

    def _rows_by_home(self, rec, out) -> bool:
        """Tiles crossing stripes or chunks, row by row: each contiguous innermost row's bytes to its
        home, added into ``out`` (what _box_traffic's rows and _range_bytes add: sums of whole bytes,
        exact in any order); False (``out`` untouched) when the inner stride is not 1 or a row itself
        crosses a stripe or chunk (the general path then runs)."""
        shape, s, isz = self.shape, self.strides, self.isz
        if abs(s[-1]) != 1:
            return False
        first = min(0, (shape[-1] - 1) * s[-1])  # the row's lowest element, from its start index
        rows = np.full(1, first, np.int64)
        for n, k in zip(shape[:-1], s[:-1]):  # row offsets (elements) over the outer axes, row-major
            rows = (rows[:, None] + np.arange(n, dtype=np.int64) * k).reshape(-1)
        starts = (self.base - rec.base)[:, None] + rows * isz  # [P, rows] byte offsets in rec
        length = shape[-1] * isz
        if not (starts // rec.granule == (starts + (length - 1)) // rec.granule).all():
            return False
        nd = out.shape[1]
        cells = np.arange(self.nprog, dtype=np.int64)[:, None] * nd + rec.home_domain(starts)
        out.reshape(-1)[:] += np.bincount(cells.reshape(-1), minlength=out.size) * float(length)
        return True


_MAX_MASKED_GROUPS = 8  # more distinct valid sub-boxes than this: the general path


class _MaskedTiles:
    """Matrix tiles with masked-off elements (a GEMM's edge blocks, a 2-D softmax's column mask), taken
    without the general path's mask: rank 2 or more, one set of strides shared by all programs, aligned
    bases, every program's valid elements (its sub-box a <= i < b) inside one allocation. The programs
    are grouped by sub-box (a few: interior, right edge, bottom edge, corner); each group's sub-boxes are
    read through one strided view and the rest of the tile is the fill, so masked-off lanes read nothing.
    ``make`` returns None for anything else (a fault among them): the general path then runs. Traffic:
    the general path's, from its _Box (traced runs only)."""

    __slots__ = ("args", "storage", "isz", "shape", "strides", "nprog", "rec", "pos", "groups", "active")

    @classmethod
    def make(cls, mem: DeviceMemory, base, dtype: str, shape, strides, lo, hi) -> _MaskedTiles | None:
        found = _tile_operands(base, dtype, shape, strides, lo, hi)
        if found is None:
            return None
        base, nprog, st, lo_, hi_ = found
        r = len(shape)
        if not (st == st[:1]).all():
            return None
        shp = _shape_row(tuple(int(n) for n in shape))
        if int(shp.prod()) == 0:
            return None
        storage = NUMPY[dtype]
        isz = storage.itemsize
        if isz > 1 and (base % isz).any():
            return None  # misaligned: the general path faults or checks element by element
        a = np.minimum(np.maximum(lo_, 0), shp)  # _Box's a, b
        b = np.minimum(np.maximum(hi_, 0), shp)
        active = (b > a).all(axis=1)
        if not active.any():
            return None
        progs = np.nonzero(active)[0]
        key = np.concatenate([a, b], axis=1)[progs]
        if (key == key[:1]).all():
            found = {tuple(key[0].tolist()): progs}
        elif progs.size > FEW_PROGRAMS:
            uniq, inv = np.unique(key, axis=0, return_inverse=True)
            if len(uniq) > _MAX_MASKED_GROUPS:
                return None
            inv = inv.reshape(-1)
            found = {tuple(k): progs[inv == g] for g, k in enumerate(uniq.tolist())}
        else:  # group by sub-box in Python: np.unique(axis=0) costs more for a few dozen programs
            found = {}
            for i, k in zip(progs.tolist(), map(tuple, key.tolist())):
                found.setdefault(k, []).append(i)
                if len(found) > _MAX_MASKED_GROUPS:
                    return None
        s = st[0]
        lo_off = np.minimum(a * s, (b - 1) * s).sum(axis=1)  # _Box.span of the valid elements, in elements
        hi_off = np.maximum(a * s, (b - 1) * s).sum(axis=1) + 1
        span_lo, span_hi = (base + lo_off * isz)[active], (base + hi_off * isz)[active]
        p = mem.span_position(int(span_lo.min()), int(span_hi.max()))
        if p < 0:
            return None  # valid elements in several allocations, or a fault: the general path
        t = cls()
        t.args = (base, dtype, tuple(int(n) for n in shape), strides, lo, hi)
        t.storage, t.isz, t.shape, t.strides, t.nprog = storage, isz, t.args[2], s.tolist(), nprog
        t.rec, t.pos, t.active = mem.live(p), p, active
        t.groups = [(np.asarray(q, np.int64), k[:r], k[r:]) for k, q in found.items()]
        return t

    def values(self, fill, into=None) -> np.ndarray:
        """[P, *shape] of the storage type: each program's valid sub-box read from memory, ``fill`` elsewhere
        (into ``into`` when it is such an array)."""
        shape = (self.nprog, *self.shape)
        ok = into is not None and into.shape == shape and into.dtype == self.storage
        out = into if ok else np.empty(shape, self.storage)
        np.copyto(out, fill)
        typed = self.rec.typed(self.storage)[0]
        for q, a, b in self.groups:
            ext = tuple(j - i for i, j in zip(a, b))
            part = _tile_values(typed, self._corners(q, a), ext, self.strides, None)
            sl = tuple(slice(i, j) for i, j in zip(a, b))
            if q.size == self.nprog:
                out[(slice(None), *sl)] = part
            else:
                out[(q, *sl)] = part
        return out

    def _corners(self, q: np.ndarray, a: list[int]) -> np.ndarray:
        """Element index in the allocation's typed view of programs ``q``'s sub-box corner (element ``a``)."""
        corner = self.args[0][q] + sum(i * k for i, k in zip(a, self.strides)) * self.isz
        typed_first = self.rec.base + self.rec.typed(self.storage)[1]
        return (corner - typed_first) // self.isz

    def distinct(self) -> bool:
        """No two valid elements of the access share an address (cheap proofs, else False): every tile's
        elements distinct whatever its sub-box, and the programs' valid spans, or else (a matrix's tiles
        side by side, rank 2 with a unit inner stride) their valid rows, disjoint."""
        shape, s = self.shape, self.strides
        ext = sorted((abs(k), n) for n, k in zip(shape, s) if n > 1)
        reach = 0
        for k, n in ext:  # _Box.injective of the whole tile: each axis's step past the finer axes' extent
            if k <= reach:
                return False
            reach += (n - 1) * k
        spans = []
        for q, a, b in self.groups:
            lo = sum(min(i * k, (j - 1) * k) for i, j, k in zip(a, b, s))
            hi = sum(max(i * k, (j - 1) * k) for i, j, k in zip(a, b, s)) + 1
            first = self._corners(q, [0] * len(a))
            spans.append((first + lo, first + hi))
        lo, hi = (np.concatenate(x) for x in zip(*spans))
        order = np.argsort(lo, kind="stable")
        if (hi[order][:-1] <= lo[order][1:]).all():
            return True
        if len(shape) != 2 or abs(s[1]) != 1:
            return False
        starts, ends = [], []
        for q, a, b in self.groups:  # row j of a program: its columns a[1]..b[1]-1, at corner + (j - a[0]) * s[0]
            row0 = self._corners(q, a) + min(0, (b[1] - a[1] - 1) * s[1])
            rows = (row0[:, None] + np.arange(b[0] - a[0], dtype=np.int64) * s[0]).reshape(-1)
            starts.append(rows)
            ends.append(rows + (b[1] - a[1]))
        starts, ends = np.concatenate(starts), np.concatenate(ends)
        order = np.argsort(starts, kind="stable")
        return bool((ends[order][:-1] <= starts[order][1:]).all())

    def store(self, values: np.ndarray) -> None:
        """Write each program's valid sub-box of [P, *shape] ``values`` (the storage type); only for an
        access whose valid elements are distinct addresses (``distinct``)."""
        typed = self.rec.typed(self.storage)[0]
        for q, a, b in self.groups:
            ext = tuple(j - i for i, j in zip(a, b))
            sl = tuple(slice(i, j) for i, j in zip(a, b))
            part = values[(slice(None), *sl)] if q.size == self.nprog else values[(q, *sl)]
            e0 = self._corners(q, a)
            dst = _programs_view(typed, e0, ext, self.strides, writeable=True)
            if dst is not None:
                np.copyto(dst, part)
            else:
                _view(typed, ext, self.strides)[e0] = part

    def traffic(self, mem: DeviceMemory) -> Traffic:
        """_box_traffic of the general path's box, located where ``make`` found every valid element."""
        box = _Box(*self.args)
        return _box_traffic(mem, box, np.where(self.active, self.pos, -1))


def _tile_values(typed: np.ndarray, e0: np.ndarray, shape, strides, into) -> np.ndarray:
    """[P, *shape] of the tiles at elements e0 of ``typed`` (each checked whole inside it): a strided
    view of memory when e0 steps evenly, else copies (straight into ``into``, the destination tile's
    SRAM view, for large tiles)."""
    out = _programs_view(typed, e0, shape, strides, writeable=False)
    if out is not None:
        return out
    view = _view(typed, shape, strides)
    if into is None or math.prod(shape) < _COPY_PER_PROGRAM:
        return view[e0]
    el = e0.tolist()  # large tiles: no gather copy
    runs = _even_runs(el)
    if len(runs) * 4 <= len(el):  # grouped orders: runs of evenly spaced programs, a slice each
        for i, j in runs:
            e, step = el[i], (el[i + 1] - el[i] if j - i > 1 else 1)
            stop = e + step * (j - i)
            np.copyto(into[i:j], view[e] if step == 0 else view[e : stop if stop >= 0 else None : step])
    else:
        for i, e in enumerate(el):
            np.copyto(into[i], view[e])
    return into


def load_strided(mem: DeviceMemory, base, dtype: str, shape, strides, lo, hi, fill, into=None, counted=True):
    """values[P, *shape]: element i of program p = mem[base[p] + sum_k i_k*strides[p,k]*itemsize] if
    lo[p] <= i < hi[p] on every axis, else ``fill``. Returns (values, Traffic). ``into``: a
    [P, *shape] array of the storage type (the destination tile's SRAM view) the common case
    copies the values straight into; the values returned are then ``into`` itself, or else an
    array the caller copies (possibly a read-only view of memory). ``counted=False``: the Traffic
    is ``NOT_COUNTED``."""
    row = _Row.make(mem, base, dtype, shape, strides, lo, hi)
    if row is not None and row.clipped:  # a masked tail past the allocation: no view of the whole rows
        return row.masked_values(_to_storage(fill_value(fill, dtype), dtype), into), (
            row.traffic(mem) if counted else NOT_COUNTED
        )
    if row is not None:
        fillv = fill_value(fill, dtype)
        out = row.view(writeable=False)
        if not row.full():
            out = out.copy()
            np.copyto(out, _to_storage(fillv, dtype), where=~row.valid())
        return out, row.traffic(mem) if counted else NOT_COUNTED
    tiles = _Tiles.make(mem, base, dtype, shape, strides, lo, hi)
    if tiles is not None:
        return tiles.values(into), tiles.traffic(mem) if counted else NOT_COUNTED
    nothing = _moves_nothing(base, dtype, shape, lo, hi)
    if nothing is not None:  # told from the bounds, without the box: the same fill
        return _filled(mem, nothing, dtype, shape, fill_value(fill, dtype), into)
    masked = _MaskedTiles.make(mem, base, dtype, shape, strides, lo, hi)
    if masked is not None:  # matrix tiles with masked edges, their valid parts in one allocation
        return masked.values(_to_storage(fill_value(fill, dtype), dtype), into), (
            masked.traffic(mem) if counted else NOT_COUNTED
        )
    box = _Box(base, dtype, shape, strides, lo, hi)
    fillv = fill_value(fill, dtype)
    if box.nprog == 0 or math.prod(box.shape) == 0 or not box.count.any():
        return _filled(mem, box.nprog, dtype, box.shape, fillv, into)
    pos = _box_locate(mem, box)
    if pos is None:  # spans several allocations, or a fault: check each element
        values, traffic = gather(mem, box.element_addrs(), box.valid(), dtype, fill, access="load", counted=counted)
        if counted:
            traffic.runs = box.runs()
        return values, traffic
    sub = _sub_box(box)
    if sub is not None:  # the same part of every program's tile valid: load that part, fill the rest
        sub_base, sub_shape, index = sub
        values, _ = load_strided(
            mem, sub_base, dtype, sub_shape, box.strides, [0] * len(sub_shape), sub_shape, fill, counted=False
        )
        out = into if into is not None else np.empty((box.nprog, *box.shape), box.storage)
        np.copyto(out, _to_storage(fillv, dtype))
        out[index] = _to_storage(values, dtype)
        return _from_storage(out, dtype), _box_traffic(mem, box, pos) if counted else NOT_COUNTED
    out = None
    for p in _live(pos):
        rec = mem.live(int(p))
        typed, start = rec.typed(box.storage)
        sel = np.nonzero(pos == p)[0]
        e0 = (box.base[sel] - (rec.base + start)) // box.isz
        # programs whose whole tile (masked-off elements too) is inside the allocation read it
        # through one strided view; the others index element by element, clipped to the allocation
        if sel.size == box.nprog and box.uniform and _whole_inside(box, rec):
            view_ok = None  # all of them (what the test below finds, in a few Python integers)
        else:
            lo, hi = box.span(sel, whole=True)
            view_ok = (mem.span_positions(lo, hi) == p) if box.uniform else np.zeros(sel.size, bool)
        if view_ok is None or (view_ok.all() and sel.size == box.nprog):
            out = _tile_values(typed, e0, box.shape, box.strides[0], into)
            continue
        if out is None:
            out = np.empty((box.nprog, *box.shape), box.storage)
        if view_ok.any():
            out[sel[view_ok]] = _view(typed, box.shape, box.strides[0])[e0[view_ok]]
        rest = sel[~view_ok]
        if rest.size:
            idx = e0[~view_ok].reshape(-1, *([1] * len(box.shape))) + box.offsets(rest)
            out[rest] = typed.take(idx, mode="clip")
    if out is None:
        out = np.empty((box.nprog, *box.shape), box.storage)
    if not box.full.all():
        if not out.flags.writeable:  # a view of memory: fill a copy
            out = out.copy()
        np.copyto(out, _to_storage(fillv, dtype), where=~box.valid())
    return _from_storage(out, dtype), _box_traffic(mem, box, pos) if counted else NOT_COUNTED


def _filled(mem: DeviceMemory, nprog: int, dtype: str, shape, fillv, into):
    """load_strided of P programs that move no element (a prefetch past a loop's last trip): the fill."""
    if into is not None:
        np.copyto(into, fillv, casting="unsafe")  # what np.full does
        return into, Traffic.zeros(nprog, mem.traffic_columns)
    return np.full((nprog, *shape), fillv, NUMPY[dtype]), Traffic.zeros(nprog, mem.traffic_columns)


def _moves_nothing(base, dtype: str, shape, lo, hi) -> int | None:
    """The program count when no program moves an element (each has an axis with min(hi, n) <= max(lo, 0):
    _Box's count 0), for per-program [P, rank] bounds; None otherwise or when it cannot tell cheaply."""
    r = len(shape)
    if type(lo) is not np.ndarray or type(hi) is not np.ndarray or not r or dtype not in NUMPY:
        return None
    nprog = lo.shape[0]
    if lo.shape != (nprog, r) or hi.shape != (nprog, r) or np.size(base) != nprog:
        return None
    size = _shape_row(tuple(int(n) for n in shape))
    return nprog if bool((np.minimum(hi, size) <= np.maximum(lo, 0)).any(axis=1).all()) else None


def store_strided(mem: DeviceMemory, base, values, strides, lo, hi, dtype: str | None = None, counted=True) -> Traffic:
    """mem[base[p] + sum_k i_k*strides[p,k]*itemsize] = values[p, i] where lo[p] <= i < hi[p];
    overlapping writes: the last in (program, row-major element) order wins. ``counted=False``: the
    Traffic is ``NOT_COUNTED``."""
    dtype = dtype or _dtype_name(values)
    values = np.asarray(values)
    row = _Row.make(mem, base, dtype, values.shape[1:], strides, lo, hi)
    if row is not None and (row.stride != 0 or row.size == 1) and row.full() and row.disjoint_increasing():
        # full rows (of distinct addresses) at increasing, disjoint spans: no address written twice, one strided copy
        dst = row.view(writeable=True)
        np.copyto(dst, _to_storage(values, dtype).view(dst.dtype))
        return row.traffic(mem) if counted else NOT_COUNTED
    if row is not None and row.stride != 0 and not row.full() and row.disjoint_increasing():
        # masked rows (a ragged last block), each valid element a distinct address: written program by program
        row.store_masked(_to_storage(values, dtype).view(row.storage))
        return row.traffic(mem) if counted else NOT_COUNTED
    masked = _MaskedTiles.make(mem, base, dtype, values.shape[1:], strides, lo, hi)
    if masked is not None and masked.distinct():  # matrix tiles with masked edges: each valid sub-box written
        masked.store(_to_storage(values, dtype))
        return masked.traffic(mem) if counted else NOT_COUNTED
    box = _Box(base, dtype, values.shape[1:], strides, lo, hi)
    if box.nprog == 0 or not box.count.any():
        return Traffic.zeros(box.nprog, mem.traffic_columns)
    pos = _box_locate(mem, box)
    if pos is None:
        traffic = scatter(mem, box.element_addrs(), box.valid(), values, dtype, access="store", counted=counted)
        if counted:
            traffic.runs = box.runs()
        return traffic
    sub = _sub_box(box)
    if sub is not None:  # the same part of every program's tile valid: store that part (same order)
        sub_base, sub_shape, index = sub
        store_strided(
            mem, sub_base, values[index], box.strides, [0] * len(sub_shape), sub_shape, dtype=dtype, counted=False
        )
        return _box_traffic(mem, box, pos) if counted else NOT_COUNTED
    unique = _box_unique(box, pos)
    if unique and dtype != "i1" and box.uniform and box.full.all() and (pos == pos[0]).all():
        # every program's whole tile in one allocation, programs evenly spaced: one strided copy
        rec = mem.live(int(pos[0]))
        typed, start = rec.typed(box.storage)
        dst = _programs_view(typed, (box.base - (rec.base + start)) // box.isz, box.shape, box.strides[0])
        if dst is not None:
            np.copyto(dst, _to_storage(values, dtype).view(dst.dtype))
            return _box_traffic(mem, box, pos) if counted else NOT_COUNTED
    vals = np.ascontiguousarray(_to_storage(values, dtype))
    flat_vals = vals.reshape(-1)
    for p in _live(pos):
        rec = mem.live(int(p))
        typed, start = rec.typed(box.storage)
        sel = np.nonzero(pos == p)[0]
        e0 = (box.base - (rec.base + start)) // box.isz
        groups = _tile_groups(box, sel) if unique else None
        if groups is None:  # element by element; the last write to an address wins
            idx = e0[sel].reshape(-1, *([1] * len(box.shape))) + box.offsets(sel)
            m = box.valid(sel)
            idx, v = idx[m], vals[sel][m]
            if not unique:
                idx, v, _ = _last_writes(idx, v, 0)
            typed[idx] = v
            continue
        for q, first, extent, st, tile in groups:
            _view(typed, extent, st)[e0[q] + first] = _view(flat_vals, extent, contiguous_strides(box.shape))[tile]
    return _box_traffic(mem, box, pos) if counted else NOT_COUNTED


def _sub_box(box: _Box):
    """(bases [P], shape, index of the part in a [P, *shape] tile) when every program's valid elements are
    one same proper, nonempty sub-box of its tile (the same lo and hi on every axis: a masked loop's last
    trip, a tile past a tensor's end), else None. Its elements are the box's valid ones, in the same
    row-major order, so the box's load or store runs on it as a full box (the masked-off elements of the
    [P, *shape] tile are left out without building the mask or their addresses)."""
    if box.nprog == 0 or not box.shape or box.full.all():
        return None
    a, b = box.a, box.b
    if not ((a == a[:1]).all() and (b == b[:1]).all() and (b[0] > a[0]).all()):
        return None
    lo, hi = a[0].tolist(), b[0].tolist()
    bases = box.base + (box.strides * a[:1]).sum(axis=1) * box.isz
    return bases, tuple(h - l for l, h in zip(lo, hi)), (slice(None), *(slice(l, h) for l, h in zip(lo, hi)))


def _box_unique(box: _Box, pos: np.ndarray) -> bool:
    """True when no two valid elements of the whole instruction share an address (cheap proofs)."""
    if not box.injective()[box.count > 0].all():
        return False
    act = np.nonzero(box.count > 0)[0]
    order = np.argsort(box.span_lo[act], kind="stable")
    lo, hi = box.span_lo[act][order], box.span_hi[act][order]
    if np.all(hi[:-1] <= lo[1:]):
        return True
    if not box.unit_inner:
        return False
    # rows are disjoint intervals: program spans interleave (tiles of one matrix) but rows do not
    starts, lens, _ = box.rows()
    order = np.argsort(starts)
    starts, ends = starts[order], starts[order] + lens[order]
    return bool(np.all(ends[:-1] <= starts[1:]))


# ---- traffic only (the cost model's estimate: addresses checked, no byte read or written) ---------------
@dataclass(frozen=True)
class Access:
    """A traffic-only access's own inputs, kept to count its bytes by home domain again over another
    placement of the same allocations (the cost model prices placements without running the launch
    again: sim/estimate.py): a strided access's descriptor (``box``) or an element access's addresses
    (``args``). ``lo``/``hi``: the byte range holding every element it moves (lo == hi: none), so an
    access outside every moved allocation keeps its count."""

    box: _Box | None
    args: tuple | None
    lo: int
    hi: int
    tiles: _Tiles | None = None  # whole matrix tiles: the descriptor itself (its bases kept as read)

    @property
    def countable(self) -> bool:
        """Whether ``traffic`` can count it again (else only its span was kept)."""
        return self.box is not None or self.args is not None or self.tiles is not None

    def traffic(self, mem: DeviceMemory) -> Traffic:
        """The Traffic this access has over ``mem``: what the same call on the same inputs returns (a
        strided access: ``strided_traffic``'s paths, whole matrix tiles without the general box)."""
        if self.tiles is not None:
            tiles = self.tiles.over(mem)
            return tiles.traffic(mem) if tiles is not None else _strided_traffic(mem, self.tiles.box())
        if self.box is None:
            return _element_traffic_of(mem, *self.args)
        box = self.box  # box.a / box.b: lo / hi clipped to the shape, the same whole-tile test as theirs
        tiles = _Tiles.make(mem, box.base, box.dtype, box.shape, box.strides, box.a, box.b)
        return tiles.traffic(mem) if tiles is not None else _strided_traffic(mem, box)


def strided_traffic(mem: DeviceMemory, base, dtype: str, shape, strides, lo, hi) -> Traffic:
    """The Traffic of a strided dma.load/dma.store with this descriptor, moving no data."""
    tiles = _Tiles.make(mem, base, dtype, shape, strides, lo, hi)
    if tiles is not None:
        traffic = tiles.traffic(mem)
        traffic.keep = tiles.kept
        return traffic
    box = _Box(base, dtype, shape, strides, lo, hi)
    traffic = _strided_traffic(mem, box)
    traffic.keep = functools.partial(_kept_box, box)
    return traffic


def strided_traffic_of_registers(mem: DeviceMemory, regs: np.ndarray, base: int, strides, lo, hi, dtype, shape):
    """``strided_traffic`` of whole matrix tiles with the descriptor in registers (``_Tiles.from_registers``),
    without reading the registers into arrays; None for any other access (then call ``strided_traffic``)."""
    tiles = _Tiles.from_registers(mem, regs, base, strides, lo, hi, dtype, shape) if COMPILED_TILES else None
    if tiles is None:
        return None
    traffic = tiles.traffic(mem)
    traffic.keep = tiles.kept
    return traffic


def strided_access(mem: DeviceMemory, base, dtype: str, shape, strides, lo, hi) -> Access:
    """What ``strided_traffic(...).keep()`` returns for this descriptor, without counting its bytes: the
    access of a load the address-only run makes for real (sim/estimate.py), kept before it runs."""
    tiles = _Tiles.make(mem, base, dtype, shape, strides, lo, hi)
    return tiles.kept() if tiles is not None else _kept_box(_Box(base, dtype, shape, strides, lo, hi))


def _kept_box(box: _Box) -> Access:
    box.base, box.strides = box.base.copy(), np.array(box.strides)  # views of the register file: kept as read
    moving = box.count > 0
    span = (int(box.span_lo[moving].min()), int(box.span_hi[moving].max())) if moving.any() else (0, 0)
    return Access(box, None, *span)


def _strided_traffic(mem: DeviceMemory, box: _Box) -> Traffic:
    if box.nprog == 0 or math.prod(box.shape) == 0 or not box.count.any():
        return Traffic.zeros(box.nprog, mem.traffic_columns)
    pos = _box_locate(mem, box)
    if pos is None:  # spans several allocations: element by element, as the load/store would
        traffic = _element_traffic_of(mem, box.element_addrs(), box.valid(), box.dtype)
        traffic.runs = box.runs()
        return traffic
    return _box_traffic(mem, box, pos)


ACCESS_BYTES = 1 << 26  # element accesses with more address bytes than this are not kept for re-pricing


def element_traffic(mem: DeviceMemory, addrs, mask, dtype: str, access: str = "access") -> Traffic:
    """The Traffic of a gather/scatter/atomic over these byte addresses, moving no data."""
    traffic = _element_traffic_of(mem, addrs, mask, dtype, access)
    traffic.keep = functools.partial(_kept_elements, addrs, mask, dtype, access)
    return traffic


def element_access(addrs, mask, dtype: str, access: str = "access") -> Access:
    """What ``element_traffic(...).keep()`` returns for these addresses, without counting their bytes."""
    return _kept_elements(addrs, mask, dtype, access)


def _kept_elements(addrs, mask, dtype: str, access: str) -> Access:
    """The access kept: its addresses copied, or past ``ACCESS_BYTES`` its span alone (not ``countable``:
    a placement that moves none of it keeps its count, any other is priced by a run of its own)."""
    shape, flat, m = _flat(addrs, mask)
    av = flat[m] if m is not None else flat
    span = (int(av.min()), int(av.max()) + _storage(dtype).itemsize) if av.size else (0, 0)
    if flat.nbytes > ACCESS_BYTES:
        return Access(None, None, *span)
    return Access(None, (flat.copy(), None if m is None else m.copy(), dtype, access), *span)


def _element_traffic_of(mem: DeviceMemory, addrs, mask, dtype: str, access: str = "access") -> Traffic:
    storage = _storage(dtype)
    shape, flat, m = _flat(addrs, mask)
    av, counts = _elements_of(flat, m)
    pos = mem.locate(flat, storage.itemsize, m, f"{access} of {dtype}", av)
    return _element_traffic(mem, pos, av, counts, storage.itemsize)
