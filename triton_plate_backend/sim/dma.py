"""Functional semantics of every device-memory access (dma.* and atom.*), batched over program
instances: axis 0 of every array is the program instance (P of them), the rest is the tile.

Nothing here touches host memory before every element that will be touched has been checked
against the live allocations (DeviceMemory.locate / span_positions); masked-off elements are
neither checked nor touched. Misaligned elements fault as on a GPU.

Each access also returns its Traffic (sim/trace.py TraceEntry fields): bytes per HOME domain per
program, elements moved, and contiguous runs (a run continues while the next element in row-major
order is at the adjacent address, ascending or descending; gathers and atomics count one run per
element). Atomics count each element's item size once, like a load.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..dtypes import BITS, NUMPY, UNSIGNED, is_float
from ..errors import SimulatorError
from ..isa.table import ENUMS, ITEMSIZE
from .memory import DeviceMemory

# groups of one address with more elements than this apply by ufunc.accumulate, not rank rounds
_BIG_GROUP = 64


@dataclass
class Traffic:
    bytes_by_domain: np.ndarray  # float64 [P, total_domains], by home domain
    elements: np.ndarray  # int64 [P], valid elements moved
    runs: np.ndarray  # int64 [P], contiguous runs (elements for gather/scatter/atomics)

    @classmethod
    def zeros(cls, programs: int, domains: int) -> Traffic:
        return cls(np.zeros((programs, domains)), np.zeros(programs, np.int64), np.zeros(programs, np.int64))


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
    if isinstance(pos, (int, np.integer)):
        yield int(pos), slice(None)
        return
    for p in np.unique(pos):
        yield int(p), pos == p


def _read(mem: DeviceMemory, pos, addrs: np.ndarray, storage: np.dtype) -> np.ndarray:
    """Elements at checked byte addresses (1-D)."""
    out = np.empty(addrs.shape, storage)
    for p, sel in _groups(pos, addrs.size):
        rec = mem.live(p)
        typed, start = rec.typed(storage)
        out[sel] = typed[(addrs[sel] - (rec.base + start)) // storage.itemsize]
    return out


def _last_writes(addrs: np.ndarray, values: np.ndarray, pos):
    """Keep only the last write to each address (row-major program, element order wins)."""
    rev = addrs[::-1]
    uniq, first = np.unique(rev, return_index=True)
    if uniq.size == addrs.size:
        return addrs, values, pos
    keep = addrs.size - 1 - first
    return uniq, values[keep], pos if isinstance(pos, (int, np.integer)) else pos[keep]


def _write(mem: DeviceMemory, pos, addrs: np.ndarray, values: np.ndarray, unique: bool = False) -> None:
    """Write elements to checked byte addresses; later duplicates win unless ``unique``."""
    if not unique:
        addrs, values, pos = _last_writes(addrs, values, pos)
    for p, sel in _groups(pos, addrs.size):
        rec = mem.live(p)
        typed, start = rec.typed(values.dtype)
        typed[(addrs[sel] - (rec.base + start)) // values.dtype.itemsize] = values[sel]


def _element_bytes(mem: DeviceMemory, pos, addrs: np.ndarray, progs: np.ndarray, nprog: int, isz: int):
    """float64 [P, D]: isz bytes per element to the home domain of its address."""
    nd = mem.machine.total_domains
    out = np.zeros(nprog * nd)
    for p, sel in _groups(pos, addrs.size):
        rec = mem.live(p)
        pr = progs[sel]
        if len(rec.owners) == 1:
            out[rec.owners[0]::nd] += np.bincount(pr, minlength=nprog) * float(isz)
        else:
            dom = rec.home_domain(addrs[sel] - rec.base)
            out += np.bincount(pr * nd + dom, minlength=nprog * nd) * float(isz)
    return out.reshape(nprog, nd)


def _flat(addrs, mask):
    addrs = np.asarray(addrs, np.int64)
    nprog = addrs.shape[0]
    flat = addrs.reshape(nprog, -1)
    if mask is None:
        return addrs.shape, flat, None
    m = np.broadcast_to(np.asarray(mask, bool), addrs.shape).reshape(nprog, -1)
    return addrs.shape, flat, (None if m.all() else m)


def _elements_of(flat, m):
    """Masked element addresses in C order, and the program of each."""
    nprog, n = flat.shape
    if m is None:
        return flat.reshape(-1), np.repeat(np.arange(nprog), n)
    return flat[m], np.nonzero(m)[0]


def _element_traffic(mem, pos, av, progs, nprog, isz) -> Traffic:
    elems = np.bincount(progs, minlength=nprog).astype(np.int64)
    return Traffic(_element_bytes(mem, pos, av, progs, nprog, isz), elems, elems.copy())


# ---- gather / scatter ------------------------------------------------------------------------------
def gather(mem: DeviceMemory, addrs, mask, dtype: str, fill, access: str = "gather"):
    """values[P, *shape] = mem[addrs] where mask, else fill; addrs are byte addresses."""
    storage = _storage(dtype)
    shape, flat, m = _flat(addrs, mask)
    nprog = shape[0]
    pos = mem.locate(flat, storage.itemsize, m, f"{access} of {dtype}")
    av, progs = _elements_of(flat, m)
    if m is None:
        out = _read(mem, pos, av, storage)
    else:
        out = np.full(flat.shape, fill_value(fill, dtype), storage)
        out[m] = _read(mem, pos, av, storage)
    traffic = _element_traffic(mem, pos, av, progs, nprog, storage.itemsize)
    return _from_storage(out.reshape(shape), dtype), traffic


def scatter(mem: DeviceMemory, addrs, mask, values, dtype: str | None = None, access: str = "scatter") -> Traffic:
    """mem[addrs] = values where mask; duplicates: the last in (program, row-major) order wins."""
    dtype = dtype or _dtype_name(values)
    storage = _storage(dtype)
    shape, flat, m = _flat(addrs, mask)
    nprog = shape[0]
    pos = mem.locate(flat, storage.itemsize, m, f"{access} of {dtype}")
    av, progs = _elements_of(flat, m)
    vals = _to_storage(np.broadcast_to(values, shape), dtype).reshape(nprog, -1)
    _write(mem, pos, av, vals.reshape(-1) if m is None else vals[m])
    return _element_traffic(mem, pos, av, progs, nprog, storage.itemsize)


def _dtype_name(values) -> str:
    dt = np.asarray(values).dtype
    for name, npdt in NUMPY.items():
        if npdt == dt:
            return name
    raise SimulatorError(f"values of numpy dtype {dt} have no ISA dtype; pass dtype=")


# ---- strided (box-masked) DMA ------------------------------------------------------------------------
class _Box:
    """A strided descriptor for P programs: element i valid iff lo <= i < hi on every axis."""

    def __init__(self, base, dtype, shape, strides, lo, hi):
        self.dtype, self.storage = dtype, _storage(dtype)
        self.isz = self.storage.itemsize
        self.shape = tuple(int(s) for s in shape)
        r = len(self.shape)
        self.base = np.asarray(base, np.int64).reshape(-1)
        nprog = self.nprog = self.base.size
        self.strides = np.broadcast_to(np.asarray(strides, np.int64).reshape(-1, r), (nprog, r))
        shp = np.asarray(self.shape, np.int64)
        self.a = np.clip(np.broadcast_to(np.asarray(lo, np.int64).reshape(-1, r), (nprog, r)), 0, shp)
        self.b = np.clip(np.broadcast_to(np.asarray(hi, np.int64).reshape(-1, r), (nprog, r)), 0, shp)
        self.n = np.maximum(self.b - self.a, 0)
        self.count = np.prod(self.n, axis=1, dtype=np.int64)
        self.full = np.all((self.a == 0) & (self.b == shp), axis=1)
        first, last = self.a * self.strides, (self.b - 1) * self.strides
        self.span_lo = self.base + np.minimum(first, last).sum(axis=1) * self.isz
        self.span_hi = self.base + (np.maximum(first, last).sum(axis=1) + 1) * self.isz
        self.uniform = nprog <= 1 or bool((self.strides == self.strides[:1]).all())
        self.unit_inner = r > 0 and bool((np.abs(self.strides[:, -1]) == 1).all())

    def offsets(self, sel=slice(None), dims=None) -> np.ndarray:
        """Element offsets from base, [p, *shape[:dims]] for the selected programs."""
        shape = self.shape[:dims]
        s = self.strides[sel][:, :len(shape)]
        if self.uniform:
            rel = np.zeros((), np.int64)
            for k, nk in enumerate(shape):
                rel = np.add.outer(rel, np.arange(nk, dtype=np.int64) * s[0, k]) if k else np.arange(nk) * s[0, k]
            return np.broadcast_to(rel, (s.shape[0], *shape))
        out = np.zeros((s.shape[0],) + (1,) * len(shape), np.int64)
        for k, nk in enumerate(shape):
            ax = [1] * len(shape)
            ax[k] = nk
            out = out + np.arange(nk, dtype=np.int64).reshape(1, *ax) * s[:, k].reshape(-1, *([1] * len(shape)))
        return out

    def valid(self, dims=None) -> np.ndarray:
        """bool [P, *shape[:dims]]: element inside every program's box (on those dims)."""
        shape = self.shape[:dims]
        m = np.ones((self.nprog,) + (1,) * len(shape), bool)
        for k, nk in enumerate(shape):
            ar = np.arange(nk).reshape([1] + [nk if j == k else 1 for j in range(len(shape))])
            lo = self.a[:, k].reshape(-1, *([1] * len(shape)))
            hi = self.b[:, k].reshape(-1, *([1] * len(shape)))
            m = m & (ar >= lo) & (ar < hi)
        return np.broadcast_to(m, (self.nprog, *shape))

    def runs(self) -> np.ndarray:
        """Contiguous runs per program: elements minus row-major steps that move one element."""
        n, s = self.n, self.strides
        wrap = (n - 1) * s  # offset change of an axis going from its last to its first valid index
        inner = np.cumsum(wrap[:, ::-1], axis=1)[:, ::-1] - wrap  # sum over axes after k
        step = s - inner
        outer = np.cumprod(np.concatenate([np.ones((self.nprog, 1), np.int64), n[:, :-1]], axis=1), axis=1)
        cont = np.where((n > 1) & (np.abs(step) == 1), (n - 1) * outer, 0).sum(axis=1)
        return np.where(self.count > 0, self.count - cont, 0)

    def injective(self) -> np.ndarray:
        """bool [P]: no two valid elements of a program share an address."""
        ext = np.where(self.n > 1, np.abs(self.strides), 0)
        order = np.argsort(ext, axis=1, kind="stable")
        es = np.take_along_axis(ext, order, axis=1)
        ns = np.take_along_axis(self.n, order, axis=1)
        reach = np.cumsum((ns - 1) * es, axis=1) - (ns - 1) * es  # extent of the finer axes
        return np.all((ns <= 1) | (es > reach), axis=1)

    def element_addrs(self) -> np.ndarray:
        return self.base.reshape(-1, *([1] * len(self.shape))) + self.offsets() * self.isz


def _box_locate(mem: DeviceMemory, box: _Box):
    """Live position per active program when each active program's whole span sits in one
    allocation and is aligned; None otherwise (the caller checks element by element)."""
    active = box.count > 0
    if np.any(box.base[active] % box.isz):
        return None
    pos = np.full(box.nprog, -1, np.int64)
    pos[active] = mem.span_positions(box.span_lo[active], box.span_hi[active])
    if np.any(pos[active] < 0):
        return None
    return pos


def _box_traffic(mem: DeviceMemory, box: _Box, pos: np.ndarray) -> Traffic:
    nd = mem.machine.total_domains
    out = np.zeros((box.nprog, nd))
    for p in np.unique(pos[pos >= 0]):
        rec = mem.live(int(p))
        sel = np.nonzero(pos == p)[0]
        nbytes = box.count[sel] * float(box.isz)
        if len(rec.owners) == 1:
            out[sel, rec.owners[0]] += nbytes
            continue
        lo, hi = box.span_lo[sel] - rec.base, box.span_hi[sel] - rec.base - 1
        one = (lo // rec.granule) == (hi // rec.granule)
        out[sel[one], np.asarray(rec.owners)[rec.owner_index(lo[one])]] += nbytes[one]
        multi = sel[~one]
        if multi.size == 0:
            continue
        if box.unit_inner:  # one byte range per row
            r = len(box.shape)
            rows = (box.base[multi] - rec.base).reshape(-1, *([1] * (r - 1))) + box.offsets(multi, r - 1) * box.isz
            s, a, b = box.strides[multi, -1], box.a[multi, -1], box.b[multi, -1]
            start = np.minimum(a * s, (b - 1) * s) * box.isz
            rows = rows.reshape(multi.size, -1) + start[:, None]
            length = (box.n[multi, -1] * box.isz)[:, None]
            part = rec.split(rows.reshape(-1), (rows + length).reshape(-1)).reshape(multi.size, rows.shape[1], -1)
            part *= box.valid(r - 1)[multi].reshape(multi.size, -1, 1)
            part = part.sum(axis=1)
            for j, d in enumerate(rec.owners):
                out[multi, d] += part[:, j]
        else:
            rel = (box.base[multi] - rec.base).reshape(-1, *([1] * len(box.shape))) + box.offsets(multi) * box.isz
            m = box.valid()[multi]
            dom = rec.home_domain(rel[m])
            progs = np.nonzero(m.reshape(multi.size, -1))[0]
            out[multi] += np.bincount(progs * nd + dom, minlength=multi.size * nd).reshape(-1, nd) * float(box.isz)
    return Traffic(out, box.count.copy(), box.runs())


def _typed_index(mem, box: _Box, p: int, sel):
    rec = mem.live(p)
    typed, start = rec.typed(box.storage)
    e0 = (box.base[sel] - (rec.base + start)) // box.isz
    return typed, e0.reshape(-1, *([1] * len(box.shape))) + box.offsets(sel)


def load_strided(mem: DeviceMemory, base, dtype: str, shape, strides, lo, hi, fill):
    """values[P, *shape]: element i of program p = mem[base[p] + sum_k i_k*strides[p,k]*itemsize] if
    lo[p] <= i < hi[p] on every axis, else ``fill``. Returns (values, Traffic)."""
    box = _Box(base, dtype, shape, strides, lo, hi)
    fillv = fill_value(fill, dtype)
    if box.nprog == 0 or math.prod(box.shape) == 0 or not box.count.any():
        out = np.full((box.nprog, *box.shape), fillv, NUMPY[dtype])
        return out, Traffic.zeros(box.nprog, mem.machine.total_domains)
    pos = _box_locate(mem, box)
    if pos is None:  # spans several allocations, or a fault: check each element
        values, traffic = gather(mem, box.element_addrs(), box.valid(), dtype, fill, access="load")
        traffic.runs = box.runs()
        return values, traffic
    used = np.unique(pos)
    if used.size == 1 and used[0] >= 0:
        typed, idx = _typed_index(mem, box, int(used[0]), slice(None))
        out = typed.take(idx, mode="clip")  # clip: masked-off elements never leave the allocation
    else:
        out = np.empty((box.nprog, *box.shape), box.storage)
        for p in used:
            sel = np.nonzero(pos == p)[0]
            if p < 0:
                out[sel] = 0
                continue
            typed, idx = _typed_index(mem, box, int(p), sel)
            out[sel] = typed.take(idx, mode="clip")
    if not box.full.all():
        np.copyto(out, _to_storage(fillv, dtype), where=~box.valid())
    return _from_storage(out, dtype), _box_traffic(mem, box, pos)


def store_strided(mem: DeviceMemory, base, values, strides, lo, hi, dtype: str | None = None) -> Traffic:
    """mem[base[p] + sum_k i_k*strides[p,k]*itemsize] = values[p, i] where lo[p] <= i < hi[p];
    overlapping writes: the last in (program, row-major element) order wins."""
    dtype = dtype or _dtype_name(values)
    values = np.asarray(values)
    box = _Box(base, dtype, values.shape[1:], strides, lo, hi)
    if box.nprog == 0 or not box.count.any():
        return Traffic.zeros(box.nprog, mem.machine.total_domains)
    vals = _to_storage(values, dtype)
    pos = _box_locate(mem, box)
    if pos is None:
        traffic = scatter(mem, box.element_addrs(), box.valid(), vals, "i8" if dtype == "i1" else dtype,
                          access="store")
        traffic.runs = box.runs()
        return traffic
    unique = _box_unique(box, pos)
    full = box.full.all()
    valid = None if full else box.valid()
    for p in np.unique(pos[pos >= 0]):
        sel = np.nonzero(pos == p)[0]
        typed, idx = _typed_index(mem, box, int(p), sel)
        v = vals[sel]
        if valid is not None:
            m = valid[sel]
            idx, v = idx[m], v[m]
        idx, v = idx.reshape(-1), v.reshape(-1)
        if not unique:
            idx, v, _ = _last_writes(idx, v, 0)
        typed[idx] = v
    return _box_traffic(mem, box, pos)


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
    r = len(box.shape)
    rows = box.base.reshape(-1, *([1] * (r - 1))) + box.offsets(slice(None), r - 1) * box.isz
    start = np.minimum(box.a[:, -1] * box.strides[:, -1], (box.b[:, -1] - 1) * box.strides[:, -1]) * box.isz
    rows = (rows.reshape(box.nprog, -1) + start[:, None])
    length = np.broadcast_to((box.n[:, -1] * box.isz)[:, None], rows.shape)
    m = box.valid(r - 1).reshape(box.nprog, -1) & (length > 0)
    starts, lens = rows[m], length[m]
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], starts[order] + lens[order]
    return bool(np.all(ends[:-1] <= starts[1:]))


# ---- atomics ---------------------------------------------------------------------------------------
def _no_float(name):
    def check(dtype):
        return not is_float(dtype) and (dtype != "i1" or name in ("and", "or", "xor"))
    return check


# op -> (numpy combine, dtype check, memory view: "signed" / "unsigned" / "bits" / "float")
ATOMIC_OPS = {
    "add": (np.add, _no_float("add"), "signed"),
    "fadd": (np.add, lambda d: d in ("f16", "bf16", "f32", "f64"), "float"),
    # float max/min are IEEE maxNum/minNum (NaN loses to a number), like CUDA fmaxf/fminf
    "max": (None, lambda d: d != "i1" and not d.startswith("f8"), "signed"),
    "min": (None, lambda d: d != "i1" and not d.startswith("f8"), "signed"),
    "umax": (np.maximum, _no_float("umax"), "unsigned"),
    "umin": (np.minimum, _no_float("umin"), "unsigned"),
    "and": (np.bitwise_and, _no_float("and"), "signed"),
    "or": (np.bitwise_or, _no_float("or"), "signed"),
    "xor": (np.bitwise_xor, _no_float("xor"), "signed"),
    "xchg": (None, lambda d: True, "bits"),
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
    storage = _storage(dtype)
    shape, flat, m = _flat(addrs, mask)
    pos = mem.locate(flat, storage.itemsize, m, f"atomic {what} of {dtype}")
    av, progs = _elements_of(flat, m)
    return shape, flat, m, pos, av, progs


def _select(values, shape, m, dtype, work):
    v = _to_storage(np.broadcast_to(values, shape), dtype).reshape(shape[0], -1)
    v = v.reshape(-1) if m is None else v[m]
    return v.view(work)


def _finish(mem, shape, m, pos, av, progs, old, dtype):
    nprog = shape[0]
    old = old.view(_storage(dtype))
    if m is None:
        out = old.reshape(shape)
    else:
        out = np.zeros((nprog, m.shape[1]), old.dtype)
        out[m] = old
    traffic = _element_traffic(mem, pos, av, progs, nprog, ITEMSIZE[dtype])
    return _from_storage(out.reshape(shape), dtype), traffic


def atomic_rmw(mem: DeviceMemory, op: str, addrs, values, mask, dtype: str):
    """old = mem[a]; mem[a] = op(old, v), element by element in (program, row-major) order, each
    seeing the ones before it. Returns (old values [P, *shape] (0 where masked off), Traffic)."""
    if op not in ATOMIC_OPS:
        raise SimulatorError(f"atom.rmw: unknown op {op!r}; expected one of {', '.join(ATOMIC_OPS)}")
    _, ok, view = ATOMIC_OPS[op]
    if not ok(dtype):
        raise SimulatorError(f"atom.rmw.{op} is not defined on {dtype}; use "
                             + ("fadd for floats, add for integers" if op in ("add", "fadd") else "another dtype"))
    work = _work_dtype(view, dtype)
    shape, flat, m, pos, av, progs = _atomic_operands(mem, addrs, mask, dtype, op)
    v = _select(values, shape, m, dtype, work)
    if op == "xchg":
        old = _sequential(mem, pos, av, work, v, lambda cur, k: v[k], "xchg")
    else:
        fn = _combine_of(op, dtype)
        old = _sequential(mem, pos, av, work, v, lambda cur, k: fn(cur, v[k]), op, fn)
    return _finish(mem, shape, m, pos, av, progs, old, dtype)


def atomic_cas(mem: DeviceMemory, addrs, cmp, values, mask, dtype: str):
    """old = mem[a]; if old == cmp (bit patterns, as CUDA atomicCAS): mem[a] = v; element by
    element in (program, row-major) order. Returns (old values, Traffic)."""
    work = BITS[dtype]
    shape, flat, m, pos, av, progs = _atomic_operands(mem, addrs, mask, dtype, "cas")
    c = _select(cmp, shape, m, dtype, work)
    v = _select(values, shape, m, dtype, work)
    old = _sequential(mem, pos, av, work, v, lambda cur, k: np.where(cur == c[k], v[k], cur), "cas", cmp=c)
    return _finish(mem, shape, m, pos, av, progs, old, dtype)


def _sequential(mem, pos, av, work, v, step, kind, ufunc=None, cmp=None):
    """Apply ``step(cur, k)`` for elements k in order, grouping equal addresses; return old values."""
    n = av.size
    if n == 0:
        return np.zeros(0, work)
    order = np.argsort(av, kind="stable")  # stable: each address keeps program order
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
    if kind in ("add", "xor") and not is_float_dtype(sv.dtype):  # invertible: global scan, then rebase
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
            acc = ufunc.accumulate(np.concatenate([cur0[g:g + 1], sv[s:e]]), dtype=sv.dtype)
            old[s:e], final[g] = acc[:-1], acc[-1]
        else:  # cas: a Python loop over the group's elements
            cur, cs, vs, olds = cur0[g], cmp[order[s:e]].tolist(), sv[s:e].tolist(), []
            cur = cur.item()
            for c, x in zip(cs, vs):
                olds.append(cur)
                if cur == c:
                    cur = x
            old[s:e], final[g] = olds, cur
    small = np.nonzero(sizes[gid] <= _BIG_GROUP)[0]
    if small.size:  # rank rounds: all groups' r-th elements at once
        by_rank = small[np.argsort(rank[small], kind="stable")]
        bounds = np.concatenate([[0], np.cumsum(np.bincount(rank[small]))])
        for r in range(bounds.size - 1):
            k = by_rank[bounds[r]:bounds[r + 1]]
            g = gid[k]
            old[k] = final[g]
            final[g] = step(final[g], order[k])
    return old, final


def is_float_dtype(dt: np.dtype) -> bool:
    return dt.kind == "f" or dt.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2")
