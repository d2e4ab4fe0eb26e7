"""One program's strided DMA (dma.load / dma.store of a context with P == 1) in Python integers.

The batched code in sim/dma.py spends a small access on a hundred numpy calls over [1, rank]
arrays. Here the box (clipped bounds, counts, spans, runs) is Python integers, while the data
moves through the same strided views and the bytes are counted by the same ``_range_bytes``: the
values, the memory and the Traffic are exactly those of ``load_strided`` / ``store_strided``.
Anything off the common path (a span outside one allocation or touching a fault, a misaligned
base, stores that may overlap, a rank-0 tile, numbers that could wrap in int64) returns None:
the caller then runs the batched code, which handles and reports it.
"""

from __future__ import annotations

import numpy as np

from ..dtypes import NUMPY
from ..isa.program import contiguous_strides
from .dma import Traffic, _from_storage, _range_bytes, _storage, _to_storage, fill_value
from .memory import DeviceMemory

_SAFE = 1 << 62  # addresses and offsets stay below this: int64 arithmetic in dma.py cannot wrap


class _Box1:
    """dma._Box for one program, in Python integers (same clipping, spans and runs)."""

    # one loop per method, no generator or comprehension frames: every strided access of a one-program launch
    # makes a box and asks for its span (a fresh small kernel's first launch: three of its ~20 steps)
    def __init__(self, base: int, storage: np.dtype, shape: tuple, strides: list, lo: list, hi: list):
        self.base, self.storage, self.isz, self.shape, self.s = base, storage, storage.itemsize, shape, strides
        self.a, self.b, self.n = a, b, n = [], [], []
        count, full = 1, True
        for v, w, m in zip(lo, hi, shape):  # each bound clipped to [0, m] (m >= 0): min(max(v, 0), m)
            x = 0 if v < 0 else (m if v > m else v)
            y = 0 if w < 0 else (m if w > m else w)
            k = y - x if y > x else 0
            a.append(x)
            b.append(y)
            n.append(k)
            count *= k
            if x != 0 or y != m:
                full = False
        self.count, self.full = count, full

    def safe(self) -> bool:
        reach = 0
        for s, m in zip(self.s, self.shape):
            reach += abs(s) * m
        return abs(self.base) + reach * self.isz < _SAFE

    def span(self, whole: bool = False) -> tuple[int, int]:
        """Byte range [lo, hi) of the valid elements (whole=True: of all elements)."""
        lo, hi = 0, 1
        for x, y, s in zip([0] * len(self.shape) if whole else self.a, self.shape if whole else self.b, self.s):
            f, g = x * s, (y - 1) * s
            if f < g:
                lo, hi = lo + f, hi + g
            else:
                lo, hi = lo + g, hi + f
        return self.base + lo * self.isz, self.base + hi * self.isz

    def runs(self) -> int:
        """dma._Box.runs: elements minus the row-major steps that move one element."""
        n, s, r = self.n, self.s, len(self.shape)
        cont, outer = 0, 1
        for k in range(r):
            inner = 0
            for j in range(k + 1, r):
                inner += (n[j] - 1) * s[j]
            if n[k] > 1 and abs(s[k] - inner) == 1:
                cont += (n[k] - 1) * outer
            outer *= n[k]
        return self.count - cont if self.count > 0 else 0

    def injective(self) -> bool:
        """No two valid elements share an address (dma._Box.injective)."""
        ext = [abs(s) if n > 1 else 0 for s, n in zip(self.s, self.n)]
        reach = 0
        for k in sorted(range(len(ext)), key=ext.__getitem__):
            if self.n[k] > 1 and ext[k] <= reach:
                return False
            reach += (self.n[k] - 1) * ext[k]
        return True

    def valid(self) -> np.ndarray:
        m = np.zeros(self.shape, bool)
        m[tuple(slice(x, y) for x, y in zip(self.a, self.b))] = True
        return m[None]

    def offsets(self, dims: int) -> np.ndarray:
        """Element offsets of the valid elements of the first ``dims`` axes, in C order (flat)."""
        rel = np.zeros((), np.int64)
        for k in range(dims):
            rel = np.add.outer(rel, np.arange(self.a[k], self.b[k], dtype=np.int64) * self.s[k])
        return rel.reshape(-1)


def _box(base, dtype: str, shape, strides, lo, hi) -> _Box1 | None:
    """The box when the arguments are one program's ([1] base, [1, rank] bounds), else None."""
    shape = tuple(int(v) for v in shape)
    r = len(shape)
    if r == 0 or any(not isinstance(x, np.ndarray) or x.shape != (1, r) for x in (strides, lo, hi)):
        return None
    if not isinstance(base, np.ndarray) or base.shape != (1,):
        return None
    box = _Box1(int(base[0]), _storage(dtype), shape, strides[0].tolist(), lo[0].tolist(), hi[0].tolist())
    return box if box.safe() else None


def box_of(regs: np.ndarray, base: int, strides, lo, hi, dtype: str, shape) -> _Box1 | None:
    """``_box`` of a one-program context's registers (``regs`` [NREG, 1]; ``base`` a register, ``strides``, ``lo``,
    ``hi`` register lists): the same box from the words as Python integers, without the [1, rank] register
    views sem_memory's ``_bounds`` makes. None where ``_box`` gives None or the lists do not match the rank
    (the caller's batched path reports it)."""
    shape = tuple(shape)
    r = len(shape)
    if r == 0 or not len(strides) == len(lo) == len(hi) == r:
        return None
    item = regs.item
    box = _Box1(
        item(base, 0),
        _storage(dtype),
        shape,
        [item(k, 0) for k in strides],
        [item(k, 0) for k in lo],
        [item(k, 0) for k in hi],
    )
    return box if box.safe() else None


def _locate(mem: DeviceMemory, box: _Box1) -> int | None:
    """dma._box_locate: the live position holding the valid span, aligned; None otherwise."""
    if box.base % box.isz:
        return None
    lo, hi = box.span()
    pos = mem.span_position(lo, hi)  # span_positions of the one range, without numpy's per-call cost
    return pos if pos >= 0 else None


def _traffic(mem: DeviceMemory, box: _Box1, pos: int) -> Traffic:
    """dma._box_traffic for one program."""
    out = np.zeros((1, mem.traffic_columns))
    rec = mem.live(pos)
    if len(rec.owners) == 1:
        out[0, rec.owners[0]] += box.count * float(box.isz)
    elif box.count == 1:  # one element (an eager 0-dim view: stride 0 over the block): one range, no numpy arrays
        at = sum(x * t for x, t in zip(box.a, box.s))
        _one_range(rec, box.base + at * box.isz - rec.base, box.isz, out[0])
    elif abs(box.s[-1]) == 1:  # one contiguous byte range per row
        a, b, s = box.a[-1], box.b[-1], box.s[-1]
        first = box.base + min(a * s, (b - 1) * s) * box.isz
        if box.count == box.n[-1]:  # one row (box.offsets' one offset): one range, in Python integers
            row = 0
            for x, t in zip(box.a[:-1], box.s[:-1]):
                row += x * t
            _one_range(rec, first + row * box.isz - rec.base, box.count * box.isz, out[0])
            return Traffic(out, np.array([box.count], np.int64), np.array([box.runs()], np.int64))
        starts = first + box.offsets(len(box.shape) - 1) * box.isz - rec.base
        lens = np.full(starts.size, box.n[-1] * box.isz, np.int64)
        _range_bytes(rec, starts, lens, np.zeros(starts.size, np.int64), out)
    else:
        starts = box.base - rec.base + box.offsets(len(box.shape)) * box.isz
        lens = np.full(starts.size, box.isz, np.int64)
        _range_bytes(rec, starts, lens, np.zeros(starts.size, np.int64), out)
    return Traffic(out, np.array([box.count], np.int64), np.array([box.runs()], np.int64))


def _one_range(rec, start: int, length: int, row: np.ndarray) -> None:
    """dma._range_bytes of one range [start, start + length) (offsets in ``rec``, length > 0) into ``row``
    (the one program's): the same byte counts, integers exact in float64, added to the same columns."""
    g = rec.granule
    if start // g == (start + length - 1) // g:  # inside one stripe / chunk: its home domain's
        k, piece = len(rec.owners), start // g
        row[rec.owners[piece % k if rec.striped else min(piece, k - 1)]] += length
        return
    for d, part in zip(rec.owners, rec.split_one(start, start + length)):  # an owner may repeat
        row[d] += part


def load(mem: DeviceMemory, base, dtype: str, shape, strides, lo, hi, fill, into: np.ndarray | None = None):
    """dma.load_strided for one program, or None (the caller runs load_strided). ``into``: an array of the
    values' shape and storage type (the destination tile's SRAM view) to load into, handed back as the values;
    once the access is known to be taken here, nothing else is written to it."""
    box = _box(base, dtype, shape, strides, lo, hi)
    return None if box is None else load_box(mem, box, dtype, fill, into)


def load_box(mem: DeviceMemory, box: _Box1, dtype: str, fill, into: np.ndarray | None = None):
    """``load`` of the program's box (``_box``, ``box_of``)."""
    if box.count == 0:  # every element masked off (a pipelined loop's prefetch past its last trip): the fill value
        value = fill_value(fill, dtype)
        if into is not None and into.shape == (1, *box.shape) and into.dtype == NUMPY[dtype]:
            into[...] = value  # the scalar's bits in every element, as np.full's array copied in
            return into, Traffic.zeros(1, mem.traffic_columns)
        return np.full((1, *box.shape), value, NUMPY[dtype]), Traffic.zeros(1, mem.traffic_columns)
    pos = _locate(mem, box)
    if pos is None:
        return None
    rec = mem.live(pos)
    typed, start = rec.typed(box.storage)
    e0 = (box.base - (rec.base + start)) // box.isz
    mine = into is not None and into.shape == (1, *box.shape) and into.dtype == typed.dtype
    if box.full:
        tile = _tile(typed, e0, box.shape, box.s)
        if mine:
            out = into  # the tile's bytes straight into it (a copy of the same dtype: the same bits)
            np.copyto(out, tile)
        else:
            out = tile.copy()
    else:  # a masked tail: the fill everywhere, then the valid sub-box read over it (masked-off lanes read nothing,
        # so a tile running past its allocation's end stays here); the same values as load_strided's
        out = into if mine else np.empty((1, *box.shape), typed.dtype)
        np.copyto(out, _to_storage(fill_value(fill, dtype), dtype))
        first = sum(x * s for x, s in zip(box.a, box.s))
        part = (0, *(slice(x, y) for x, y in zip(box.a, box.b)))
        out[part] = _tile(typed, e0 + first, tuple(box.n), box.s)[0]
    return _from_storage(out, dtype), _traffic(mem, box, pos)


def store(mem: DeviceMemory, base, values, strides, lo, hi, dtype: str) -> Traffic | None:
    """dma.store_strided for one program, or None (the caller runs store_strided)."""
    values = np.asarray(values)
    box = _box(base, dtype, values.shape[1:], strides, lo, hi)
    return None if box is None else store_box(mem, box, values, dtype)


def store_box(mem: DeviceMemory, box: _Box1, values: np.ndarray, dtype: str) -> Traffic | None:
    """``store`` of the program's box (``_box``, ``box_of`` over the values' tile shape)."""
    if box.count == 0:
        return Traffic.zeros(1, mem.traffic_columns)
    pos = _locate(mem, box)
    if pos is None or not box.injective():
        return None
    flat_vals = np.ascontiguousarray(_to_storage(values, dtype)).reshape(-1)
    rec = mem.live(pos)
    typed, start = rec.typed(box.storage)
    e0 = (box.base - (rec.base + start)) // box.isz
    first = sum(x * s for x, s in zip(box.a, box.s))
    tile = sum(x * t for x, t in zip(box.a, contiguous_strides(box.shape)))
    extent = tuple(box.n)
    _tile(typed, e0 + first, extent, box.s)[...] = _tile(flat_vals, tile, extent, contiguous_strides(box.shape))
    return _traffic(mem, box, pos)


def _tile(flat: np.ndarray, e0: int, extent, strides) -> np.ndarray:
    """[1, *extent] view of ``flat`` (1-D, contiguous) from element ``e0`` with element ``strides``:
    ``dma._view(flat, extent, strides)[[e0]]``'s elements, made over the buffer directly (np.ndarray: ~1 us,
    where as_strided costs ~8). Every element is inside ``flat``: the caller has checked the span."""
    isz = flat.itemsize
    bits = flat.view(_BITS[isz])  # as dma._view: the raw bits (ml_dtypes' float8 types), viewed back at the end
    view = np.ndarray((1, *extent), bits.dtype, bits, e0 * isz, (isz, *(s * isz for s in strides)))
    return view.view(flat.dtype)


_BITS = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.uint32), 8: np.dtype(np.uint64)}
