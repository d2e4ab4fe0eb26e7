"""What the functional executor records for the timing model: which program instances ran
which instruction, and for memory instructions how many bytes each moved to/from which home
domain. The executor never computes time; the timing model never touches data.

A trace waiting to be timed (``sim.clock``) can be PACKED: its entries become one compressed table and
its arrays compact forms (a sorted id list as a bitmap, runs of equal rows as one row each) that
unpack to the same values, types, shapes and sharing. A spin loop's trace packs ~40x smaller."""

from __future__ import annotations

import hashlib
import weakref
import zlib
from dataclasses import dataclass, field

import numpy as np

from ..isa.program import Program


class TraceEntry:
    """One step of one context. A plain class with slots, not a dataclass: a launch makes one per instruction
    it runs and a waiting trace keeps them (sim/clock.py), so each is made faster and walked faster by the
    cycle collector (no per-instance dict). Equality and repr are the dataclass's: the fields in order."""

    __slots__ = ("pc", "programs", "bytes_by_domain", "elements", "runs")

    # pc: the instruction's index
    # programs: linear program ids (x fastest: pid = x + gx * (y + gy * z)) that executed this instruction,
    # in increasing order
    # bytes_by_domain: memory instructions only (dma.*, atom.*): float64 [len(programs), total_domains + 1],
    # bytes moved per HOME domain of the device memory touched, the last column for replicated memory
    # (the core's domain is the timing model's business: it depends on the grid -> core policy)
    # elements, runs: memory instructions only: int64 [len(programs)], elements moved (gather/scatter/atomic
    # cost is per element) and contiguous runs (strided DMA cost is per run)
    def __init__(
        self,
        pc: int,
        programs: np.ndarray,
        bytes_by_domain: np.ndarray | None = None,
        elements: np.ndarray | None = None,
        runs: np.ndarray | None = None,
    ):
        self.pc, self.programs, self.bytes_by_domain, self.elements, self.runs = (
            pc,
            programs,
            bytes_by_domain,
            elements,
            runs,
        )

    def _fields(self) -> tuple:
        return (self.pc, self.programs, self.bytes_by_domain, self.elements, self.runs)

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # as a dataclass with eq and without frozen

    def __repr__(self) -> str:
        names = ("pc", "programs", "bytes_by_domain", "elements", "runs")
        return f"TraceEntry({', '.join(f'{n}={v!r}' for n, v in zip(names, self._fields()))})"


@dataclass
class Trace:
    program: Program
    grid: tuple[int, int, int]
    entries: list[TraceEntry] = field(default_factory=list)

    @property
    def num_programs(self) -> int:
        gx, gy, gz = self.grid
        return gx * gy * gz

    def nbytes(self) -> int:
        """Bytes the entries hold: their arrays, each shared one once (the entries of one context
        share their programs array), and a rough overhead per entry. Kept for the entries as they are
        (a launch's trace is asked twice: sim/persistent_runs.py and the clock): counted again when the
        list, its length or its last entry changed (the executor appends; no one replaces an entry of a
        trace once made: PackedTrace.trace)."""
        kept = self._kept("_nbytes")
        if kept is not None:
            return kept
        total = self._nbytes_now()
        self._keep("_nbytes", total)
        return total

    def _kept(self, name: str):
        """What ``_keep`` kept under ``name`` for the entries as they are now, else None."""
        entries, kept = self.entries, self.__dict__.get(name)
        if kept is not None and kept[0] is entries and kept[1] == len(entries) and kept[2] is entries[-1]:
            return kept[3]
        return None

    def _keep(self, name: str, value) -> None:
        """Keep ``value`` for the entries as they are (the list, its length and its last entry: the executor only
        appends, and no one replaces an entry of a trace once made)."""
        entries = self.entries
        if entries:
            self.__dict__[name] = (entries, len(entries), entries[-1], value)

    def _nbytes_now(self) -> int:
        seen: set[int] = set()
        total, last = 0, None
        for e in self.entries:
            p = e.programs
            if p is not last:  # consecutive entries of one context share it: one test instead of four
                last = p
                if id(p) not in seen:
                    seen.add(id(p))
                    total += getattr(p, "nbytes", 0)
            if e.bytes_by_domain is None and e.elements is None and e.runs is None:
                continue
            for a in (e.bytes_by_domain, e.elements, e.runs):
                if a is not None and id(a) not in seen:
                    seen.add(id(a))
                    total += getattr(a, "nbytes", 0)
        return total + _ENTRY_BYTES * len(self.entries)

    def digest(self) -> bytes:
        """A fingerprint of all the timing model reads from a trace but its program (PackedTrace.digest)."""
        return self.pack().digest()

    def packs_like(self, other: Trace) -> bool:
        """True only when ``other`` packs to what this packs to (the same table and arrays: the same digest),
        found without packing either: the same pcs, arrays shared in the same pattern, each array of the same
        type, dtype, shape and bytes (grid and program are the caller's). False also where unsure (an entry's
        field not a plain array): the caller packs and compares digests then."""
        a, b = self.entries, other.entries
        if len(a) != len(b):
            return False
        slots_a: dict[int, int] = {}  # id -> order of first appearance, as PackedTrace's slots
        slots_b: dict[int, int] = {}

        def same(u, v) -> bool:
            if u is None or v is None:
                return u is v
            i, j = slots_a.get(id(u)), slots_b.get(id(v))
            if i is not None or j is not None:
                return i == j
            if type(u) is not np.ndarray or type(v) is not np.ndarray:
                return False
            if u.dtype != v.dtype or u.shape != v.shape or u.tobytes() != v.tobytes():
                return False
            slots_a[id(u)] = slots_b[id(v)] = len(slots_a)
            return True

        last_a = last_b = None  # consecutive entries of one context share their programs array
        for x, y in zip(a, b):
            if x.pc != y.pc:
                return False
            p, q = x.programs, y.programs
            if (p is not last_a or q is not last_b) and not same(p, q):
                return False
            last_a, last_b = p, q
            if x.bytes_by_domain is None and x.elements is None and x.runs is None:
                if y.bytes_by_domain is None and y.elements is None and y.runs is None:
                    continue
                return False
            if not (same(x.bytes_by_domain, y.bytes_by_domain) and same(x.elements, y.elements)):
                return False
            if not same(x.runs, y.runs):
                return False
        return True

    def pack(self) -> PackedTrace:
        """The trace packed, kept for the entries as they are: a kept trace's repeat asks it twice (its kept
        packed form, sim/persistent_runs.py, and the clock's packing of the waiting first launch that holds
        the same trace to compare them, sim/clock.py), and a PackedTrace never changes."""
        kept = self._kept("_packed")
        if kept is None or kept.program is not self.program or kept.grid != self.grid:
            kept = PackedTrace(self)
            self._keep("_packed", kept)
        return kept


_ENTRY_BYTES = 200
_FIELDS = ("programs", "bytes_by_domain", "elements", "runs")


class PackedTrace:
    """A Trace in compact form, for keeping: ``unpack()`` gives back an equal Trace."""

    def __init__(self, trace: Trace):
        self.program, self.grid = trace.program, trace.grid
        first: list = []  # the arrays, in order of first appearance (fields in _FIELDS order)
        slot: dict[int, int] = {}  # id -> index in first
        rows = []  # per entry: pc, then the index in first of each field's array (-1: None)
        last, at = None, -1  # consecutive entries of one context share their programs array
        for e in trace.entries:
            p = e.programs
            if p is not last:
                last, at = p, slot.get(id(p), -1)
                if at < 0 and p is not None:
                    at = slot[id(p)] = len(first)
                    first.append(p)
            if e.bytes_by_domain is None and e.elements is None and e.runs is None:
                rows.append((e.pc, at, -1, -1, -1))
                continue
            row = [e.pc, at]
            for a in (e.bytes_by_domain, e.elements, e.runs):
                i = -1 if a is None else slot.get(id(a), -1)
                if i < 0 and a is not None:
                    i = slot[id(a)] = len(first)
                    first.append(a)
                row.append(i)
            rows.append(row)
        # a launch's traffic arrays repeat (each trip of a loop moves the same bytes): equal arrays
        # pack to one shared compact form, computed once
        self.arrays = _pack_arrays(first)
        table = np.array(rows, np.int64).reshape(len(rows), 1 + len(_FIELDS))
        # a loop's entries repeat: the table compresses well (zlib's fastest level, ~20x on a spin loop)
        self.rows, self.table = len(table), zlib.compress(table.tobytes(), 1)
        self._nbytes = self._digest = None  # computed once: a packed trace never changes (a kept one is
        # handed to the clock at every repeat of its launch, sim/persistent_runs.py)
        self._source = weakref.ref(trace)  # no trace changes once made: while it lives, it is the unpacked one

    def nbytes(self) -> int:
        if self._nbytes is None:
            self._nbytes = len(self.table) + sum(_packed_bytes(a) for a in self.arrays)
        return self._nbytes

    def digest(self) -> bytes:
        """A fingerprint of all the timing model reads from the trace but its program: the grid,
        each entry's pc and arrays, and which entries share an array. Packing is a function of
        the trace, so equal digests (same program, machine and policy) time the same."""
        if self._digest is None:
            self._digest = self._compute_digest()
        return self._digest

    def _compute_digest(self) -> bytes:
        h = hashlib.blake2b(repr(self.grid).encode(), digest_size=20)
        h.update(b"%d|" % self.rows)
        h.update(self.table)  # zlib output is a function of its input
        pieces: dict[int, bytes] = {}  # id of a compact form -> its bytes (equal arrays share one)
        parts = []  # hashed as one string: the same digest as one update per part
        for a in self.arrays:
            kind = type(a)
            if kind is _Bitmap or kind is _Runs:
                piece = pieces.get(id(a))
                if piece is None:
                    piece = pieces[id(a)] = _compact_bytes(a)
                parts.append(piece)
            elif isinstance(a, np.ndarray):
                parts.append(f"|A{a.dtype.str}{a.shape}|".encode())
                parts.append(np.ascontiguousarray(a).tobytes())
            else:
                parts.append(f"|O{a!r}|".encode())
        h.update(b"".join(parts))
        return h.digest()

    def _table(self) -> np.ndarray:
        return np.frombuffer(zlib.decompress(self.table), np.int64).reshape(self.rows, 1 + len(_FIELDS))

    def trace(self) -> Trace:
        """The Trace this was packed from while something else still holds it (a kept trace, held by
        sim/persistent_runs.py until evicted), else ``unpack()``: an equal Trace either way, the first
        without unpacking 100k+ entries (a persistent launch's). A trace is not changed once made (the
        executor builds it; the timing model and the estimates make new ones)."""
        source = self._source()
        return source if source is not None else self.unpack()

    def unpack(self) -> Trace:
        arrays = [_unpack_array(a) for a in self.arrays]
        pick = [None, *arrays]  # index -1 + 1 -> None
        rows = self._table().tolist()
        entries = [TraceEntry(pc, pick[p + 1], pick[b + 1], pick[e + 1], pick[r + 1]) for pc, p, b, e, r in rows]
        return Trace(self.program, self.grid, entries)


class _Bitmap:
    """Strictly increasing integers: which of lo, lo + 1, ... are present."""

    __slots__ = ("dtype", "lo", "n", "bits")

    def __init__(self, a: np.ndarray):
        self.dtype, self.lo = a.dtype, int(a[0])
        present = np.zeros(int(a[-1]) - self.lo + 1, bool)
        present[a - self.lo] = True
        self.n, self.bits = present.size, np.packbits(present)

    def unpack(self) -> np.ndarray:
        present = np.unpackbits(self.bits, count=self.n).view(bool)
        return (np.flatnonzero(present) + self.lo).astype(self.dtype)


class _Runs:
    """An array as runs of equal rows (elements, for 1-D), bit for bit: the first row of each run
    and the index it starts at (a trace's bytes per domain change where a stripe does)."""

    __slots__ = ("shape", "starts", "rows")

    def __init__(self, a: np.ndarray, starts: np.ndarray):
        self.shape, self.starts, self.rows = a.shape, starts, a[starts]

    def unpack(self) -> np.ndarray:
        return np.repeat(self.rows, np.diff(np.append(self.starts, self.shape[0])), axis=0)


def _compact_bytes(a) -> bytes:
    """What the digest hashes of a compact form."""
    if isinstance(a, _Bitmap):
        return f"|B{a.dtype.str} {a.lo} {a.n}|".encode() + a.bits.tobytes()
    head = f"|R{a.rows.dtype.str}{a.shape}{a.starts.size}|".encode()
    return head + a.starts.tobytes() + np.ascontiguousarray(a.rows).tobytes()


_MEMO_BYTES = 1 << 16  # arrays up to this size are looked up by content before packing


def content(a: np.ndarray | None) -> tuple | None:
    """A hashable key of an array's content (shape, dtype and bytes), None for None: what a memo of work
    done on a trace entry's small arrays (a loop's trips repeat them) looks its results up by."""
    return None if a is None else (a.shape, a.dtype.str, a.tobytes())


def _pack_arrays(arrays) -> list:
    """``_pack_array`` of each, equal small arrays (dtype, shape and bytes) packed once: the same
    compact form, or each its own array when it stays as it is.

    An array's whole content is made a key only once another array has the same shape, dtype, first
    and last row (``_sketch``): the first such array is keyed then, before the lookup, so the memo
    answers as if every array had been keyed. A launch whose arrays all differ in size (a spin lock's
    shrinking context: a CAS over n, n - 1, ... programs) copies none of them for a key."""
    memo: dict = {}  # content -> packed form
    first: dict = {}  # sketch -> (its first array, packed form), until a second array has the sketch
    out = []
    for a in arrays:
        if type(a) is np.ndarray and (a.ndim == 0 or a.shape[0] < 2):  # _pack_array keeps it as it is:
            out.append(a)  # no content key to make (a one-program launch's traffic rows, most of them)
            continue
        if isinstance(a, np.ndarray) and a.nbytes <= _MEMO_BYTES:
            sketch = _sketch(a)
            alone = first.get(sketch)
            if alone is None and sketch not in first:
                packed = _pack_array(a)
                first[sketch] = (a, packed)
            else:
                if alone is not None:  # the first array of this sketch enters the memo, as it would have
                    memo.setdefault(content(alone[0]), alone[1])
                    first[sketch] = None
                key = content(a)
                packed = memo.get(key)
                if packed is None:
                    packed = memo[key] = _pack_array(a)
            out.append(a if isinstance(packed, np.ndarray) else packed)
        else:
            out.append(_pack_array(a))
    return out


def _sketch(a: np.ndarray) -> tuple:
    """What equal arrays share, cheaply: shape, dtype, first and last row (``a`` has two rows or more)."""
    return a.shape, a.dtype.str, a[:1].tobytes(), a[-1:].tobytes()


def _pack_array(a):
    if not isinstance(a, np.ndarray) or a.ndim == 0 or a.shape[0] < 2 or a.size == 0:
        return a
    raw = np.ascontiguousarray(a).view(np.uint8).reshape(a.shape[0], -1)
    starts = np.flatnonzero(_rows_differ(raw)) + 1
    if 4 * (starts.size + 1) * (raw.shape[1] + 8) < a.nbytes:  # few runs: a quarter of the bytes or less
        return _Runs(a, np.concatenate([np.zeros(1, np.int64), starts]))
    if a.ndim == 1 and a.dtype.kind in "iu" and (a[1:] > a[:-1]).all() and (int(a[-1]) - int(a[0])) // 8 < a.nbytes:
        return _Bitmap(a)
    return a


def _rows_differ(raw: np.ndarray) -> np.ndarray:
    """Whether each row of ``raw`` (uint8 [n, row bytes]) differs from the one before, in any byte: compared
    in the widest words that tile a row (a row of one word: one comparison per row, no reduction over a
    short axis, which costs numpy ~30x more than the comparison for a program list or a traffic table)."""
    words = raw
    for unit in (np.uint64, np.uint32, np.uint16):
        if raw.shape[1] % unit().itemsize == 0:
            words = raw.view(unit)
            break
    if words.shape[1] == 1:
        return words[1:, 0] != words[:-1, 0]
    if words.shape[1] <= _OR_COLUMNS:  # a few words a row (a traffic table's domains): one pass per column
        out = words[1:, 0] != words[:-1, 0]
        for j in range(1, words.shape[1]):
            out |= words[1:, j] != words[:-1, j]
        return out
    return (words[1:] != words[:-1]).any(axis=1)


_OR_COLUMNS = 8  # rows of up to this many words are compared column by column, not by any() over a row


def _unpack_array(a):
    return a.unpack() if isinstance(a, (_Bitmap, _Runs)) else a


def _packed_bytes(a) -> int:
    if isinstance(a, _Bitmap):
        return a.bits.nbytes + 64
    if isinstance(a, _Runs):
        return a.starts.nbytes + a.rows.nbytes + 64
    return getattr(a, "nbytes", 0)
