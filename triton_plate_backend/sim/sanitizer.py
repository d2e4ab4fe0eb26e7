"""The sanitizer of one launch (PLATE_SANITIZE): race and uninitialised-read checks on every memory access.

The executor hands every memory instruction's element accesses here (``access``): the byte address and
size of each element, the program that made it and the pc. Masked-off elements are not accesses.

race: two accesses of one launch CONFLICT when they touch a common byte, come from different programs,
and they are not both atomics while one of them writes: a plain write against anything, an atomic
against a plain read. The simulator runs programs in its own order,
not the hardware's, so the order of the two does not matter: without atomics nothing orders programs of
one launch (``tl.debug_barrier`` and fences order one program's accesses only). Not conflicts: a program
reading or rewriting its own bytes; atomics against atomics; plain reads against plain reads; accesses
of different launches (the kernel boundary orders them); two accesses made while holding the same
lock. A program holds the lock at address L from its scalar atom.cas on L (the spin of
``while tl.atomic_cas(lock, 0, 1) == 1``) until its next atomic on L (``tl.atomic_xchg(lock, 0)``):
the critical sections of one lock are ordered, whichever program enters first.

Every access is recorded (address, size, program, pc, kind, lock held), and so is the byte span of
each program's elements of each instruction. At the end of the launch, spans are clustered by
overlap: only the accesses in a cluster of two programs with a plain write (or an atomic and a plain
read) can conflict, and only those are sorted and compared (most kernels have none). When the record
grows past ``COMPACT_AT`` it is compacted to at most six representatives per address unit and lock
(the reads, the plain writes and the atomics of the lowest and the highest program), which decide the
conflicts exactly. An address unit is the smallest element size an allocation is accessed
with in the launch, so accesses of different sizes overlap correctly.

init: a kernel read (a load, gather or atomic) of an element of a poisoned allocation
(``DeviceMemory.alloc(poison=True)``) with a byte never written since allocation that still holds
the poison is a finding. Kernel stores and atomics mark their bytes written; so do host writes
that reach ``DeviceMemory.mark_written`` (torch copies and in-place ops through the torch device). A
write from anywhere else is seen when it changed the bytes (the check also requires them to still
hold the poison); one that wrote exactly the poison bytes reads back as never written.

Findings are collected for the whole launch; ``finish`` raises one SanitizerError listing the first
``SHOWN`` of them, each with the instruction, source line and program of both accesses (race) or of
the read (init), the address and the tensor (kernel argument and allocation).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import SanitizerError, SimulatorError
from .memory import POISON, DeviceMemory

MODES = ("race", "init")
SHOWN = 10  # findings listed in a SanitizerError
COMPACT_AT = 1 << 22  # recorded element accesses that trigger a compaction
READ, WRITE, ATOMIC = 0, 1, 2
_KIND_NAME = {READ: "read", WRITE: "write", ATOMIC: "atomic"}
# kinds that conflict between programs, the first one written by the report's first access
_CONFLICTING = ((WRITE, WRITE), (WRITE, READ), (WRITE, ATOMIC), (ATOMIC, READ))
_ONES = {n: np.frombuffer(bytes([1]) * n, f"u{n}")[0] for n in (1, 2, 4, 8)}  # a fully written element


@dataclass
class Finding:
    """One problem: ``kind`` 'race' or 'init'; ``accesses``: (pc, program id, access kind) of the
    access(es) involved (two for a race); ``addr``/``size``: the first byte unit; ``count``: how many
    address units share this (kind, pcs, allocation)."""

    kind: str
    accesses: list[tuple[int, int, str]]
    addr: int
    size: int
    alloc_id: int
    count: int
    text: str = ""


class Sanitizer:
    """Checks of one launch. ``where(pc)`` describes an instruction (pc, text, source line) and
    ``coords(pid)`` a program's grid coordinates; ``args`` are the launch's argument words."""

    def __init__(self, modes, memory: DeviceMemory, program, args, where, coords):
        unknown = set(modes) - set(MODES)
        if unknown:
            raise SimulatorError(f"sanitizer modes {sorted(unknown)}: expected some of {', '.join(MODES)}")
        self.race, self.init = "race" in modes, "init" in modes
        self.memory, self.program, self.where, self.coords = memory, program, where, coords
        self.pointers = [(a.name, int(w)) for a, w in zip(program.args, args) if a.type == "ptr"]
        self._chunks: list[tuple] = []  # accesses as recorded: (addr, programs, size, pc, kind, locks)
        self._kept = None  # accesses as arrays, one entry per element: (addr, size, pid, pc, kind, lock)
        self._held: dict[int, int] = {}  # program id -> address of the lock it holds
        self._spans: list[tuple] = []  # (lo, hi, pid, kind) of each program's elements of each access
        self._recorded = 0
        self._init: dict[tuple[int, int], list] = {}  # (pc, alloc id) -> [count, addr, size, pid]
        self._tracked = self.init and any(r.written is not None for r in memory.allocations)

    # ---- recording ---------------------------------------------------------------------------
    def access(self, pc: int, pids: np.ndarray, addrs, mask, itemsize: int, kind: int, owned: bool = False) -> None:
        """Element accesses of one instruction: ``addrs`` [P, ...] byte addresses of programs ``pids``
        [P], ``mask`` (broadcastable bool, or None) selects the elements accessed. ``owned``: ``addrs``
        is a fresh array the sanitizer may keep (otherwise it copies what it keeps)."""
        addrs = np.asarray(addrs, np.int64)
        nprog = addrs.shape[0]
        flat = addrs.reshape(nprog, -1)
        m = None if mask is None else np.broadcast_to(np.asarray(mask, bool), addrs.shape).reshape(nprog, -1)
        if m is None or m.all():
            av, rows = flat.reshape(-1), None  # element j belongs to program row j // columns
        else:
            av, rows = flat[m], np.nonzero(m)[0]
        if av.size == 0:
            return

        def pids_of(j):
            return pids[j // flat.shape[1]] if rows is None else pids[rows[j]]

        if self._tracked:
            if kind != WRITE:
                self._check_init(pc, av, pids_of, itemsize)
            if kind != READ:
                self._mark(av, itemsize)
        if self.race:
            self._record(pc, pids, flat, av, rows, itemsize, kind, owned)

    def _record(self, pc, pids, flat, av, rows, itemsize, kind, owned):
        """Keep the accesses (the program of each element stays implicit until the end) and each
        program's byte span."""
        pids = np.array(pids, np.int64)  # a copy: kept until the end of the launch
        if rows is None:  # every element: programs in rows of flat
            av = av if owned else av.copy()
            who = (pids, flat.shape[1])
            lo, hi, span_pids = flat.min(axis=1), flat.max(axis=1) + itemsize, pids
        else:  # elements come in program order
            first = np.flatnonzero(np.concatenate(([True], rows[1:] != rows[:-1])))
            who = pids[rows]
            lo, hi, span_pids = np.minimum.reduceat(av, first), np.maximum.reduceat(av, first) + itemsize, who[first]
        locks = None
        if self._held:
            held = np.array([self._held.get(p, 0) for p in pids.tolist()], np.int64)
            locks = held.repeat(flat.shape[1]) if rows is None else held[rows]
        self._chunks.append((av, who, itemsize, pc, kind, locks))
        self._spans.append((lo, hi, span_pids, np.full(lo.size, kind, np.int8)))
        self._recorded += av.size
        if self._recorded >= COMPACT_AT:
            self._compact()

    def atomic(self, pids: np.ndarray, addrs, mask, cas: bool) -> None:
        """Lock bookkeeping after an atomic (already reported by ``access``): a scalar CAS takes the lock
        at its address, the program's next atomic on that address releases it."""
        if not self.race:
            return
        addrs = np.asarray(addrs, np.int64)
        flat = addrs.reshape(addrs.shape[0], -1)
        if flat.shape[1] != 1:
            return
        m = np.ones(flat.shape[0], bool) if mask is None else np.broadcast_to(mask, addrs.shape).reshape(-1)
        for p, a in zip(pids[m].tolist(), flat[m, 0].tolist()):
            if cas:
                self._held[p] = a
            elif self._held.get(p) == a:
                del self._held[p]

    # ---- init --------------------------------------------------------------------------------
    def _by_allocation(self, av: np.ndarray):
        """(allocation, selector) for each poisoned allocation ``av`` touches."""
        lo, hi = self.memory.positions(np.array([av.min(), av.max()])).tolist()
        pos = None if lo == hi else self.memory.positions(av)
        for p in range(lo, hi + 1) if hi - lo < 8 else np.unique(pos).tolist():
            rec = self.memory.live(p)
            if rec.written is None:
                continue
            sel = slice(None) if lo == hi else pos == p
            yield rec, sel

    @staticmethod
    def _written_words(rec, itemsize: int) -> np.ndarray:
        """The allocation's written map as itemsize-byte words (_ONES: every byte written)."""
        return rec.written[: rec.nbytes // itemsize * itemsize].view(f"u{itemsize}")

    def _check_init(self, pc, av, pids_of, itemsize):
        for rec, sel in self._by_allocation(av):
            idx = (av[sel] - rec.base) // itemsize  # owned buffers are 256-aligned: elements are aligned
            unwritten = self._written_words(rec, itemsize)[idx] != _ONES[itemsize]
            if not unwritten.any():
                continue
            bad = np.flatnonzero(unwritten)
            byte = (idx[bad] * itemsize)[:, None] + np.arange(itemsize)  # a byte never written, still poison
            bad = bad[((rec.written[byte] == 0) & (rec.view[byte] == POISON)).any(axis=1)]
            if bad.size == 0:
                continue
            key = (pc, rec.id)
            hit = self._init.get(key)
            if hit is None:
                first = int(bad[0]) if isinstance(sel, slice) else int(np.flatnonzero(sel)[bad[0]])
                self._init[key] = [bad.size, int(av[first]), itemsize, int(pids_of(first))]
            else:
                hit[0] += bad.size

    def _mark(self, av, itemsize):
        for rec, sel in self._by_allocation(av):
            self._written_words(rec, itemsize)[(av[sel] - rec.base) // itemsize] = _ONES[itemsize]

    # ---- race --------------------------------------------------------------------------------
    def _records(self):
        """All recorded accesses as arrays (addr, size, pid, pc, kind, lock), one entry per element."""
        parts = [] if self._kept is None else [self._kept]
        for av, who, size, pc, kind, locks in self._chunks:
            n = av.size
            pid = np.repeat(*who) if isinstance(who, tuple) else who
            lock = np.zeros(n, np.int64) if locks is None else locks
            sizes, pcs, kinds = np.full(n, size, np.int8), np.full(n, pc, np.int32), np.full(n, kind, np.int8)
            parts.append((av, sizes, pid, pcs, kinds, lock))
        self._chunks = []
        if parts:
            self._kept = parts[0] if len(parts) == 1 else tuple(np.concatenate(c) for c in zip(*parts))
        return self._kept

    def _units(self, addr, size, pid, pc, kind, lock):
        """Records split into address units: the smallest element size per allocation."""
        pos = self.memory.positions(addr)
        unit = np.full(int(pos.max()) + 1, 8, np.int8)
        np.minimum.at(unit, pos, size)
        u = unit[pos]
        parts = (size // u).astype(np.int64)
        if (parts == 1).all():
            return addr, size, pid, pc, kind, lock
        rep = np.repeat(np.arange(addr.size), parts)
        step = np.arange(rep.size) - np.repeat(np.cumsum(parts) - parts, parts)
        return addr[rep] + step * u[rep], u[rep], pid[rep], pc[rep], kind[rep], lock[rep]

    def _summary(self, records):
        """The unit-split records, the (address unit, lock) groups they form (sorted), and ``reps``
        [groups, 3 kinds, 2]: the record index of the lowest and highest program of each kind (READ,
        WRITE, ATOMIC) in each group, -1 where the group has none of that kind."""
        addr, size, pid, pc, kind, lock = recs = self._units(*records)
        order = np.lexsort((pid, kind, lock, addr))
        a, lk, k = addr[order], lock[order], kind[order]
        same = (a[1:] == a[:-1]) & (lk[1:] == lk[:-1])
        run = np.flatnonzero(np.concatenate(([True], ~same | (k[1:] != k[:-1]))))  # (unit, lock, kind) runs
        last = np.append(run[1:], a.size) - 1
        group = np.cumsum(np.concatenate(([True], ~same)))[run] - 1
        reps = np.full((int(group[-1]) + 1, 3, 2), -1, np.int64)
        reps[group, k[run], 0] = order[run]
        reps[group, k[run], 1] = order[last]
        first = run[np.concatenate(([True], group[1:] != group[:-1]))]
        return recs, (a[first], lk[first]), reps

    def _compact(self):
        recs, _, reps = self._summary(self._records())
        keep = np.unique(reps[reps >= 0])
        self._kept = tuple(r[keep] for r in recs)
        self._recorded = keep.size

    @staticmethod
    def _conflicts(pid, glock, reps):
        """(first, second) record index pairs, one per racy address unit: a plain write (or an atomic)
        and a conflicting access of another program. Within a group only without a lock; across the
        groups of one unit (different locks, or a lock and none) always."""
        first, second = np.full(len(reps), -1, np.int64), np.full(len(reps), -1, np.int64)
        free = glock == 0
        for k1, k2 in _CONFLICTING:
            x, y = reps[:, k1], reps[:, k2]
            open_ = free & (first < 0) & (x[:, 0] >= 0) & (y[:, 0] >= 0)
            for i, j in ((0, 0), (0, 1), (1, 0)):
                hit = open_ & (pid[x[:, i]] != pid[y[:, j]])
                first[hit], second[hit] = x[hit, i], y[hit, j]
                open_ &= ~hit
        return first, second

    @staticmethod
    def _across(groups, pid, reps):
        """A conflicting pair of accesses from two different groups of one unit, or None."""
        for g in groups:
            for h in groups:
                if g == h:
                    continue
                for k1, k2 in _CONFLICTING:
                    for x in reps[g, k1]:
                        for y in reps[h, k2]:
                            if x >= 0 and y >= 0 and pid[x] != pid[y]:
                                return int(x), int(y)
        return None

    def _suspects(self):
        """The records in span clusters that hold a plain write and more than one program, or None."""
        if not self._spans:
            return None
        lo, hi, pid, kind = (np.concatenate(c) for c in zip(*self._spans))
        order = np.argsort(lo, kind="stable")
        lo, hi, pid, kind = lo[order], hi[order], pid[order], kind[order]
        reach = np.maximum.accumulate(hi)
        start = np.flatnonzero(np.concatenate(([True], lo[1:] >= reach[:-1])))
        two = np.minimum.reduceat(pid, start) != np.maximum.reduceat(pid, start)
        has = [np.maximum.reduceat((kind == k).astype(np.int8), start) > 0 for k in (READ, WRITE, ATOMIC)]
        hot = np.flatnonzero(two & (has[WRITE] | (has[ATOMIC] & has[READ])))
        if hot.size == 0:
            return None
        clo, chi = lo[start[hot]], np.maximum.reduceat(hi, start)[hot]
        records = self._records()
        addr = records[0]
        k = np.searchsorted(clo, addr, "right") - 1
        keep = (k >= 0) & (addr < chi[np.maximum(k, 0)])
        return tuple(r[keep] for r in records)

    def _races(self) -> list[Finding]:
        records = self._suspects()
        if records is None:
            return []
        (addr, size, pid, pc, kind, lock), (gaddr, glock), reps = self._summary(records)
        first, second = self._conflicts(pid, glock, reps)
        multi = np.flatnonzero(gaddr[1:] == gaddr[:-1])  # units with several lock groups
        if multi.size:
            units = np.unique(gaddr[multi])
            lo, hi = np.searchsorted(gaddr, units, "left"), np.searchsorted(gaddr, units, "right")
            for s, e in zip(lo.tolist(), hi.tolist()):
                if (first[s:e] >= 0).any():
                    continue
                hit = self._across(range(s, e), pid, reps)
                if hit is not None:
                    first[s], second[s] = hit
        racy = first >= 0
        first, second = first[racy], second[racy]
        groups: dict[tuple, Finding] = {}
        apos = self.memory.positions(addr[first])
        for a, b, p in zip(first.tolist(), second.tolist(), apos.tolist()):
            rec = self.memory.live(p)
            key = (int(pc[a]), int(pc[b]), int(kind[b]), rec.id)
            hit = groups.get(key)
            if hit is None:
                acc = [(int(pc[i]), int(pid[i]), _KIND_NAME[int(kind[i])]) for i in (a, b)]
                groups[key] = Finding("race", acc, int(addr[a]), int(size[a]), rec.id, 1)
            else:
                hit.count += 1
        return sorted(groups.values(), key=lambda f: f.addr)

    # ---- the report ----------------------------------------------------------------------------
    def tensor(self, addr: int, alloc_id: int) -> str:
        """The kernel argument and allocation holding ``addr``."""
        rec = self.memory.allocation(alloc_id)
        inside = [(base, name) for name, base in self.pointers if rec.base <= base < max(rec.end, rec.base + 1)]
        below = [(base, name) for base, name in inside if base <= addr]
        arg = ""
        if below:
            base, name = max(below)
            arg = f"argument '{name}' + {addr - base} bytes, "
        elif inside:
            arg = f"the allocation of argument '{min(inside)[1]}', "
        return f"{arg}allocation {rec.describe()} at offset {addr - rec.base}"

    def _line(self, pc: int, pid: int, kind: str) -> str:
        return f"{kind} by program {tuple(self.coords(pid))} (id {pid}): {self.where(pc)}"

    def _describe(self, f: Finding) -> str:
        more = f" ({f.count} address units like it)" if f.count > 1 else ""
        if f.kind == "race":
            (pa, ia, ka), (pb, ib, kb) = f.accesses
            head = (
                f"race: {ka}/{kb} conflict on {f.size} byte(s) at {f.addr:#x}, {self.tensor(f.addr, f.alloc_id)}{more}"
            )
            fix = "make the accesses atomic (tl.atomic_*) or give each program its own addresses"
            return "\n    ".join([head, self._line(pa, ia, ka), self._line(pb, ib, kb), f"fix: {fix}"])
        ((pc, pid, kind),) = f.accesses
        head = f"init: {kind} of {f.size} never-written byte(s) at {f.addr:#x}, {self.tensor(f.addr, f.alloc_id)}" + (
            f" ({f.count} elements from this instruction)" if f.count > 1 else ""
        )
        fix = "write the tensor before a kernel reads it (torch.zeros/fill_ instead of torch.empty), or mask the read"
        return "\n    ".join([head, self._line(pc, pid, kind), f"fix: {fix}"])

    def findings(self) -> list[Finding]:
        out = self._races() if self.race else []
        for (pc, alloc_id), (count, addr, size, pid) in self._init.items():
            kind = "atomic" if self.program.instrs[pc].mnemonic.startswith("atom.") else "read"
            out.append(Finding("init", [(pc, pid, kind)], addr, size, alloc_id, count))
        for f in out:
            f.text = self._describe(f)
        return out

    def finish(self, kernel: str, grid) -> None:
        """Raise SanitizerError listing the launch's findings, if any."""
        found = self.findings()
        self._chunks, self._kept, self._spans, self._init = [], None, [], {}
        if not found:
            return
        shown = "\n".join(f"  {i + 1}. {f.text}" for i, f in enumerate(found[:SHOWN]))
        rest = f"\n  ... and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
        raise SanitizerError(
            f"PLATE_SANITIZE: {len(found)} problem(s) in the launch of kernel '{kernel}' over grid {tuple(grid)}:\n"
            f"{shown}{rest}",
            findings=found,
        )
