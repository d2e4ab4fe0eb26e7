"""Device memory of the simulator: NUMA arenas of host memory, bounds-checked.

Device addresses ARE host addresses. Each allocation is either a numpy buffer owned here
(``alloc``) or host memory owned by someone else and registered by address and size
(``register``: torch storages from the C++ allocator, CPU tensors in host-memory mode). Every
access goes through a numpy view of exactly the allocation's bytes, and ``locate`` checks each
element address against the live allocations before anything is read or written, so a wrong
kernel raises ``MemoryFault`` instead of corrupting the host process.

Each allocation has a placement (PLATE.md "Memory placement modes") that gives every byte a home
domain; capacity is accounted per domain.

An owned buffer allocated with ``poison=True`` (the sanitizer's init mode) starts as POISON bytes
instead of zeros and keeps a ``written`` map: one byte per byte, 1 once a kernel store, a host copy
or ``mark_written`` has written it (sim/sanitizer.py reads it).
"""

from __future__ import annotations

import bisect
import contextlib
import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from ..errors import DeviceOutOfMemory, MemoryFault, PlateError
from ..machine import Machine, get_machine
from .host import unshared

ALIGN = 256  # base alignment of owned buffers; also the granule of blocked chunks
# The default placement of tensors (docs/placement.md has the measurements): an allocation of at least
# BLOCKED_MIN_BYTES is blocked over chip 0's domains, so a kernel streaming it with programs in
# program-id order finds each program's bytes in one domain (the launch's affinity mapping runs it
# there); a smaller one is interleaved, so its few programs still spread over every domain.
BLOCKED_MIN_BYTES = 64 << 10
MODES = ("interleaved", "local", "blocked", "explicit", "replicated")
FREED_KEPT = 4096  # freed allocations remembered for fault messages
HELD_KEPT = 4096  # ``holding`` answers kept, then forgotten all at once
# Freed owned buffers of at least SPARE_MIN_BYTES, up to SPARE_BYTES in all, are kept for the next
# allocation of their size, which zeroes one instead of taking fresh pages from the OS: a fresh page's
# first write costs a page fault (on this project's VMs ~100 ms per 64 MiB, against 2 ms to zero it
# again), and a loop of launches over large tensors (test_conversions: 2**24 elements, ~300 MB of new
# tensors per step) frees and allocates the same sizes over and over.
SPARE_MIN_BYTES = 1 << 20
SPARE_BYTES = 512 << 20
POISON = 0xFF  # init mode's fill byte: NaN in every float type, all ones (-1) in every integer type


class AllocationError(PlateError):
    """A bad alloc/register/free request (bad placement, overlap, double free, unknown address)."""


@dataclass(frozen=True)
class Placement:
    """Where an allocation's bytes live.

    interleaved: ``stripe_bytes`` stripes round robin over ``domains`` (default: all of chip 0's);
    local: all in ``domain`` (default 0); blocked: split into ``len(domains)`` equal contiguous
    chunks (default all of chip 0's), chunk i in domains[i]; explicit: ``domain`` or ``domains``
    named by the compiler or the user (a list is laid out like blocked); replicated: one copy in each
    of chip 0's domains (reads hit the reader's own domain's copy, a write updates every copy)."""

    mode: str = "interleaved"
    domain: int | None = None
    domains: tuple[int, ...] | None = None

    def __post_init__(self):
        if self.mode not in MODES:
            raise AllocationError(f"placement mode {self.mode!r} is not one of {', '.join(MODES)}")
        if self.domains is not None:
            object.__setattr__(self, "domains", tuple(int(d) for d in self.domains))
            if not self.domains:
                raise AllocationError(f"placement {self.mode}: an empty domain list; name at least one domain")
        if self.mode == "explicit" and self.domain is None and self.domains is None:
            raise AllocationError("explicit placement needs domain= or domains=")
        if self.mode == "replicated" and (self.domain is not None or self.domains is not None):
            raise AllocationError("replicated placement keeps one copy in every domain of chip 0; name no domains")

    @classmethod
    def parse(cls, spec) -> Placement:
        """None -> interleaved; 'local', 'local:2', 'blocked', 'blocked:0,1', 'explicit:3',
        'interleaved:0,2'; an int -> explicit domain; a list of ints -> explicit domains."""
        if spec is None:
            return cls()
        if isinstance(spec, Placement):
            return spec
        if isinstance(spec, (int, np.integer)):
            return cls("explicit", domain=int(spec))
        if isinstance(spec, (list, tuple)):
            return cls("explicit", domains=tuple(spec))
        if isinstance(spec, str):
            mode, _, rest = spec.partition(":")
            mode = mode.strip()
            if not rest:
                return cls(mode)
            try:
                doms = tuple(int(x) for x in rest.split(","))
            except ValueError:
                raise AllocationError(
                    f"placement {spec!r}: expected MODE or MODE:d0,d1,... with integer domains"
                ) from None
            if mode in ("local", "explicit") and len(doms) == 1:
                return cls(mode, domain=doms[0])
            return cls(mode, domains=doms)
        raise AllocationError(f"placement {spec!r}: expected a Placement, a mode string, an int or a list of ints")

    def owners(self, machine: Machine) -> tuple[int, ...]:
        """Home domains in stripe/chunk order, checked against the machine."""
        chip0 = tuple(range(machine.domains))
        if self.mode == "local":
            owners = (self.domain if self.domain is not None else (self.domains or (0,))[0],)
        elif self.mode == "explicit":
            owners = self.domains if self.domains is not None else (self.domain,)
        elif self.mode == "replicated":  # one home: the traffic column of "the reader's own domain"
            return (machine.total_domains,)
        else:
            owners = self.domains if self.domains is not None else chip0
        for d in owners:
            if not 0 <= d < machine.total_domains:
                raise AllocationError(
                    f"placement {self}: domain {d} does not exist; machine {machine.name} has domains "
                    f"0..{machine.total_domains - 1}"
                )
        return tuple(int(d) for d in owners)

    def __str__(self) -> str:
        if self.domains is not None:
            return f"{self.mode}({','.join(map(str, self.domains))})"
        return f"{self.mode}({self.domain})" if self.domain is not None else self.mode


_POINTERS = "_plate_pointer_positions"  # on the program: (its Args, the pointers' positions, the Args' types)


def _argument_kinds(program) -> tuple:
    params = tuple(program.args)  # Args are frozen: equal Args, equal types
    kept = getattr(program, _POINTERS, None)
    if kept is None or kept[0] != params:
        kept = (params, tuple(i for i, a in enumerate(params) if a.type == "ptr"), tuple(a.type for a in params))
        setattr(program, _POINTERS, kept)
    return kept


def pointer_positions(program) -> tuple[int, ...]:
    """The positions of a Program's pointer arguments, kept on the program (each launch looks up the allocation
    behind each of them, several times: the other arguments are copied as they are)."""
    return _argument_kinds(program)[1]


def argument_types(program) -> tuple[str, ...]:
    """The types of a Program's arguments, kept on the program as ``pointer_positions``."""
    return _argument_kinds(program)[2]


def held_by_argument(program, args, memory) -> list:
    """The live allocation each pointer argument of a launch points into (None there when none does, and for
    every other argument)."""
    n = min(len(program.args), len(args))  # as zip(program.args, args) pairs them
    recs = [None] * n
    for i in pointer_positions(program):
        if i < n:
            recs[i] = memory.holding(args[i])
    return recs


@dataclass(eq=False)
class Allocation:
    """One device allocation: bytes [base, base + nbytes) and where they live."""

    id: int
    base: int
    nbytes: int
    placement: Placement
    label: str
    owners: tuple[int, ...]  # home domains, in stripe (interleaved) or chunk order
    striped: bool  # interleaved: stripes round robin; otherwise contiguous chunks
    granule: int  # stripe bytes (striped) or chunk bytes
    view: np.ndarray | None  # uint8 view of exactly [base, base + nbytes); None once freed
    external: bool = False
    owner: object = None  # keeps registered host memory alive
    live: bool = True
    shares: np.ndarray = field(default=None, repr=False)  # int64 bytes per global domain
    written: np.ndarray | None = field(default=None, repr=False)  # uint8 per byte, poisoned buffers only
    replica_of: Placement | None = None  # a replica the launch made (sim/operands.py): its placement before
    pinned: bool = False  # placed by the user or a compiler: launches never move it (sim/operands.py)
    _typed: dict = field(default_factory=dict, repr=False)

    @property
    def end(self) -> int:
        return self.base + self.nbytes

    def describe(self) -> str:
        state = "" if self.live else ", FREED"
        return (
            f"'{self.label}' [{self.base:#x}, {self.end:#x}) ({self.nbytes} bytes, "
            f"{self.placement}, alloc #{self.id}{state})"
        )

    def typed(self, dtype: np.dtype) -> tuple[np.ndarray, int]:
        """A 1-D view of the allocation as ``dtype`` elements starting at the first address that is
        a multiple of the item size, and that start's byte offset from ``base``."""
        dtype = np.dtype(dtype)
        hit = self._typed.get(dtype)
        if hit is None:
            isz = dtype.itemsize
            start = (-self.base) % isz
            n = max(self.nbytes - start, 0) // isz
            hit = (self.view[start : start + n * isz].view(dtype), start)
            self._typed[dtype] = hit
        return hit

    def owner_index(self, rel: np.ndarray) -> np.ndarray:
        """Position in ``owners`` of the home domain of byte offsets ``rel`` (from base)."""
        k, g = len(self.owners), self.granule
        if k == 1:
            return np.zeros(np.shape(rel), np.int64)
        piece = rel >> (g.bit_length() - 1) if g & (g - 1) == 0 else rel // g  # shifts: 1M elements in ~1 ms
        if self.striped:
            return piece & (k - 1) if k & (k - 1) == 0 else piece % k
        return np.minimum(piece, k - 1)

    def home_domain(self, rel: np.ndarray) -> np.ndarray:
        return np.asarray(self.owners, np.int64)[self.owner_index(rel)]

    @property
    def replicas(self) -> tuple[int, ...]:
        """Domains holding a copy of every byte: chip 0's for a replicated allocation, else none."""
        return tuple(int(d) for d in np.nonzero(self.shares)[0]) if self.placement.mode == "replicated" else ()

    def split(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Bytes of each range [lo, hi) (offsets from base) per owner position: float64 [n, len(owners)]."""
        lo = np.asarray(lo, np.int64)[:, None]
        hi = np.asarray(hi, np.int64)[:, None]
        k = len(self.owners)
        j = np.arange(k, dtype=np.int64)[None, :]
        g = self.granule
        if k == 1:
            return (hi - lo).astype(np.float64)
        if self.striped:
            cycle = g * k

            def below(x):  # bytes of owner j in [0, x)
                return (x // cycle) * g + np.clip(x % cycle - j * g, 0, g)

            return (below(hi) - below(lo)).astype(np.float64)
        c_lo = j * g
        c_hi = np.where(j == k - 1, np.iinfo(np.int64).max, (j + 1) * g)
        return np.clip(np.minimum(hi, c_hi) - np.maximum(lo, c_lo), 0, None).astype(np.float64)

    def split_one(self, lo: int, hi: int) -> list[float]:
        """``split`` of one range [lo, hi) (0 <= lo <= hi <= nbytes) in Python numbers: the same values
        (byte counts, exact in float64) without numpy's per-call cost on 1-element arrays."""
        k, g = len(self.owners), self.granule
        if k == 1:
            return [float(hi - lo)]
        if self.striped:
            cycle = g * k

            def below(x: int, j: int) -> int:  # bytes of owner j in [0, x)
                return (x // cycle) * g + min(max(x % cycle - j * g, 0), g)

            return [float(below(hi, j) - below(lo, j)) for j in range(k)]
        return [float(max(min(hi, (j + 1) * g if j < k - 1 else hi) - max(lo, j * g), 0)) for j in range(k)]


def default_placement(nbytes: int) -> Placement:
    """The placement of a tensor nobody placed: blocked when large, interleaved when small (BLOCKED_MIN_BYTES)."""
    return Placement("blocked" if nbytes >= BLOCKED_MIN_BYTES else "interleaved")


class _HostBytes:
    """Host bytes [addr, addr + nbytes) as numpy sees them, through the array interface. Not ctypes: a
    ctypes.cast result, and each new array type, is a reference cycle that only the cycle collector frees."""

    def __init__(self, addr: int, nbytes: int):
        self.__array_interface__ = {"version": 3, "shape": (nbytes,), "typestr": "|u1", "data": (addr, False)}


def _host_view(addr: int, nbytes: int) -> np.ndarray:
    if nbytes == 0:
        return np.zeros(0, np.uint8)
    return np.asarray(_HostBytes(addr, nbytes))


class DeviceMemory:
    """All device memory of one simulated device (or system): allocations, placement, accounting."""

    def __init__(self, machine: Machine | str | None = None):
        self.machine = get_machine(machine)
        nd = self.machine.total_domains
        self.capacity = np.full(nd, self.machine.domain.hbm_bytes, np.int64)
        self.used = np.zeros(nd, np.int64)
        self.peak = np.zeros(nd, np.int64)
        self.peak_total = 0
        self.copy_bytes = (
            0  # bytes of the second and later copies of replicated allocations (torch's counters miss them)
        )
        self.copy_peak = 0
        self.num_allocs = 0
        self.num_frees = 0
        self._next_id = 1
        self._by_id: dict[int, Allocation] = {}
        self._live_bases: list[int] = []  # sorted
        self._live: list[Allocation] = []  # same order
        self._freed: deque[Allocation] = deque(maxlen=FREED_KEPT)
        self._empty: dict[int, list[Allocation]] = {}  # zero-byte allocations: outside the lookup table
        self._tables = None  # (bases, ends) int64 arrays, rebuilt lazily
        # address -> ``holding``'s answer while the live table stands (a launch asks it of each pointer argument a
        # dozen times: planner, mapping, kept runs); forgotten with ``_tables`` at every insert and release
        self._held: dict[int, Allocation | None] = {}
        self._hold = 0  # > 0 inside frees_held(): free() queues the address in _held_frees
        self._held_frees: list[int] = []
        self._spare: deque[np.ndarray] = deque()  # freed owned buffers for reuse, oldest first
        self._spare_bytes = 0

    # ---- allocation ------------------------------------------------------------------------
    def alloc(self, nbytes: int, placement=None, label: str | None = None, *, poison: bool = False) -> Allocation:
        """A zero-filled owned buffer of ``nbytes`` bytes, based at a multiple of 256. ``poison``: filled
        with POISON bytes instead, and its bytes' writes tracked in ``written``."""
        nbytes = self._check_size(nbytes)
        place = Placement.parse(placement)
        record = self._record(0, nbytes, place, label)  # accounts capacity before the host allocates
        # +ALIGN: room to align, and a distinct base for 0 bytes
        backing = None if poison else self._take_spare(nbytes + ALIGN)
        if backing is None:
            backing = np.full(nbytes + ALIGN, POISON, np.uint8) if poison else np.zeros(nbytes + ALIGN, np.uint8)
        addr = backing.ctypes.data
        off = (-addr) % ALIGN
        record.base, record.view, record.owner = addr + off, backing[off : off + nbytes], backing
        if poison:
            record.written = np.zeros(nbytes, np.uint8)
        return self._insert(record)

    def register(self, host_addr: int, nbytes: int, placement=None, owner=None, label: str | None = None) -> Allocation:
        """Make externally owned host memory [host_addr, host_addr + nbytes) device memory.
        ``owner`` (a tensor, array, ...) is kept alive until ``free``."""
        nbytes = self._check_size(nbytes)
        host_addr = int(host_addr)
        if host_addr <= 0:
            raise AllocationError(f"register: host address {host_addr:#x} is not a valid pointer")
        other = self._overlapping(host_addr, nbytes)
        if other is not None:
            raise AllocationError(
                f"register: [{host_addr:#x}, {host_addr + nbytes:#x}) overlaps live allocation "
                f"{other.describe()}; free it first"
            )
        record = self._record(host_addr, nbytes, Placement.parse(placement), label)
        record.view, record.owner, record.external = _host_view(host_addr, nbytes), owner, True
        return self._insert(record)

    def register_alike(self, rec: Allocation) -> Allocation:
        """``register(rec.base, rec.nbytes, rec.placement, owner=rec, label=rec.label)`` for ``rec``, a live
        allocation of a memory of this machine: the same record, checks and accounting, its home domains and
        shares taken from ``rec`` (a function of its size, placement and machine, made by ``_record``) and its
        bytes viewed through ``rec.view``, not worked out again. A shadow memory (sim/estimate.py) registers every
        allocation a launch's estimate leaves where it is so (the operand planner's pricing: two a priced launch)."""
        view = rec.view
        if view is None or rec.shares is None or view.size != rec.nbytes or rec.base <= 0 or not rec.nbytes:
            return self.register(rec.base, rec.nbytes, rec.placement, owner=rec, label=rec.label)
        base, nbytes = rec.base, rec.nbytes
        if self._overlapping(base, nbytes) is not None or (self.used + rec.shares > self.capacity).any():
            return self.register(base, nbytes, rec.placement, owner=rec, label=rec.label)  # it raises
        label = rec.label or f"alloc{self._next_id}"
        record = Allocation(
            self._next_id, base, nbytes, rec.placement, label, rec.owners, rec.striped, rec.granule, None
        )
        record.shares = rec.shares.copy()
        record.view, record.owner, record.external = view, rec, True
        return self._insert(record)

    def _overlapping(self, base: int, nbytes: int) -> Allocation | None:
        """A live allocation sharing a byte with [base, base + nbytes) (registered ranges never overlap, so only
        the neighbours by base can), or None."""
        if not nbytes:
            return None
        i = bisect.bisect_right(self._live_bases, base)
        for other in self._live[max(i - 1, 0) : i + 1]:
            if other.nbytes and base < other.end and other.base < base + nbytes:
                return other
        return None

    def free(self, addr: int) -> None:
        """Release the allocation based at ``addr``; later accesses fault as 'freed allocation'.
        Inside ``frees_held()`` the release waits until the block ends."""
        addr = int(addr)
        if self._hold:
            self._held_frees.append(addr)
            return
        i = bisect.bisect_left(self._live_bases, addr)
        rec = None
        if i < len(self._live) and self._live_bases[i] == addr:
            rec = self._live.pop(i)
            self._live_bases.pop(i)
            self._tables = None
            self._held.clear()
        elif self._empty.get(addr):
            rec = self._empty[addr].pop()
            if not self._empty[addr]:
                del self._empty[addr]
        if rec is not None:
            del self._by_id[rec.id]
            box = [rec.owner] if not rec.external and rec.written is None else None
            rec.live, rec.view, rec.owner, rec._typed, rec.written = False, None, None, {}, None
            if box is not None:
                self._keep_spare(box)
            self.used -= rec.shares
            self.copy_bytes -= int(rec.shares.sum()) - rec.nbytes
            self.num_frees += 1
            self._freed.append(rec)
            return
        dead = [r for r in self._freed if r.base == addr]
        if dead:
            raise AllocationError(f"double free of {dead[-1].describe()}")
        near = self._nearest_text(addr)
        raise AllocationError(f"free({addr:#x}): not the base address of a live allocation{near}")

    def _keep_spare(self, box: list) -> None:
        """Keep a freed owned buffer, ``box``'s one item, for ``_take_spare`` when nothing else holds it
        (sim/host.py ``unshared``: no view of it outlived the allocation)."""
        backing = unshared(box)
        if not isinstance(backing, np.ndarray) or backing.nbytes < SPARE_MIN_BYTES:
            return
        self._spare.append(backing)
        self._spare_bytes += backing.nbytes
        while self._spare_bytes > SPARE_BYTES:
            self._spare_bytes -= self._spare.popleft().nbytes

    def _take_spare(self, nbytes: int) -> np.ndarray | None:
        """A kept freed buffer of exactly ``nbytes``, zeroed (the newest such), or None."""
        for i in range(len(self._spare) - 1, -1, -1):
            if self._spare[i].nbytes == nbytes:
                backing = self._spare[i]
                del self._spare[i]
                self._spare_bytes -= nbytes
                backing.fill(0)
                return backing
        return None

    def migrate(self, addr: int, placement) -> np.ndarray:
        """Give the live allocation based at ``addr`` a new placement, in place (its address and bytes
        stay; their home domains change). Returns the bytes that change home: float64 [D, D], row = old
        home domain, column = new one (the diagonal: bytes that stay). The caller prices the copy
        (cost.migration_cycles)."""
        old = self._based_at(addr, "migrate")
        new = self._record(old.base, old.nbytes, Placement.parse(placement), old.label, reuse=old)
        moved = self._moved(old, new)
        self.used -= old.shares
        self.used += new.shares
        self.copy_bytes += int(new.shares.sum()) - int(old.shares.sum())
        self.copy_peak = max(self.copy_peak, self.copy_bytes)
        self.peak = np.maximum(self.peak, self.used)
        self.peak_total = max(self.peak_total, int(self.used.sum()))
        old.replica_of = None
        old.placement, old.owners, old.striped, old.granule, old.shares = (
            new.placement,
            new.owners,
            new.striped,
            new.granule,
            new.shares,
        )
        return moved

    def moved_by(self, addr: int, placement) -> np.ndarray:
        """What ``migrate(addr, placement)`` would return, moving nothing (DeviceOutOfMemory if it does not fit)."""
        old = self._based_at(addr, "moved_by")
        return self._moved(old, self._record(old.base, old.nbytes, Placement.parse(placement), old.label, reuse=old))

    def _based_at(self, addr: int, what: str) -> Allocation:
        addr = int(addr)
        i = bisect.bisect_left(self._live_bases, addr)
        if not (i < len(self._live) and self._live_bases[i] == addr):
            near = self._nearest_text(addr)
            raise AllocationError(f"{what}({addr:#x}): not the base address of a live allocation{near}")
        return self._live[i]

    def _moved(self, old: Allocation, new: Allocation) -> np.ndarray:
        """Bytes per (old home, new home) of a placement change. A replicated target gets a copy of every
        byte in every domain (from the byte's old home); a replicated source already has a copy in each
        new home, so nothing moves (dropping the other copies is free)."""
        D = self.machine.total_domains
        moved = np.zeros((D, D))
        if old.placement.mode == "replicated":
            for d in np.nonzero(new.shares)[0]:  # each new home keeps its copy; off chip 0 one is pulled from domain 0
                moved[d if d in old.replicas else 0, d] = new.shares[d]
            return moved
        piece = math.gcd(old.granule, new.granule)
        starts = np.arange(0, old.nbytes, piece, dtype=np.int64)
        sizes = np.minimum(starts + piece, old.nbytes) - starts
        src = old.home_domain(starts)
        # sums of whole byte counts (exact in float64 in any order): bincount, not np.add.at piece by piece
        if new.placement.mode == "replicated":
            per_src = np.bincount(src, weights=sizes, minlength=D)
            for d in range(self.machine.domains):
                moved[:, d] += per_src
            return moved
        moved += np.bincount(src * D + new.home_domain(starts), weights=sizes, minlength=D * D).reshape(D, D)
        return moved

    @contextlib.contextmanager
    def frees_held(self):
        """Queue frees until the block ends. A launch keeps live-table positions across numpy calls;
        a garbage collection inside one can free a dead tensor (same thread, so the device lock
        does not stop it), which would shift the table under those positions."""
        self._hold += 1
        try:
            yield self
        finally:
            self._hold -= 1
            if not self._hold:
                held, self._held_frees = self._held_frees, []
                for addr in held:
                    self.free(addr)

    def allocation(self, alloc_id: int) -> Allocation:
        """The live allocation with this id."""
        try:
            return self._by_id[alloc_id]
        except KeyError:
            raise AllocationError(f"no live allocation #{alloc_id}") from None

    @property
    def allocations(self) -> list[Allocation]:
        """Live allocations, by base address."""
        return sorted([*self._live, *(r for rs in self._empty.values() for r in rs)], key=lambda r: r.base)

    # ---- accounting ------------------------------------------------------------------------
    @property
    def traffic_columns(self) -> int:
        """Width of a kernel's bytes-by-home-domain arrays: one column per domain, and a last one,
        REPLICA = total_domains, for bytes of replicated allocations: homed in the domain of the core
        that moves them, known once programs are mapped to cores (sim/timing.py fold_replicas)."""
        return self.machine.total_domains + 1

    def memory_allocated(self, domain: int | None = None) -> int:
        return int(self.used.sum() if domain is None else self.used[domain])

    def max_memory_allocated(self, domain: int | None = None) -> int:
        return int(self.peak_total if domain is None else self.peak[domain])

    def reset_peak(self) -> None:
        self.copy_peak = self.copy_bytes
        self.peak[:] = self.used
        self.peak_total = int(self.used.sum())

    def memory_stats(self) -> dict:
        return {
            "allocated_bytes": self.memory_allocated(),
            "peak_bytes": self.max_memory_allocated(),
            "allocated_bytes_by_domain": self.used.tolist(),
            "peak_bytes_by_domain": self.peak.tolist(),
            "capacity_bytes_by_domain": self.capacity.tolist(),
            "active_allocations": len(self._live),
            "num_allocs": self.num_allocs,
            "num_frees": self.num_frees,
        }

    # ---- lookup ------------------------------------------------------------------------------
    def find(self, addrs, itemsize: int = 1, mask=None, access: str = "access") -> np.ndarray:
        """Allocation id of each address (-1 where masked off). ``addrs`` is [P, ...] with axis 0 the
        program instance; raises MemoryFault if an element [a, a + itemsize) is not inside one live
        allocation."""
        addrs = np.asarray(addrs, np.int64)
        flat, sel, m = self._flatten(addrs, mask)
        pos = self.locate(flat, itemsize, m, access)
        ids = np.fromiter((r.id for r in self._live), np.int64, len(self._live))
        out = np.full(flat.shape, -1, np.int64)
        out[sel] = ids[pos]
        return out.reshape(addrs.shape)

    def home_domain(self, addrs) -> np.ndarray:
        """Home domain of each byte address (same shape); MemoryFault outside live allocations."""
        addrs = np.asarray(addrs, np.int64)
        flat = addrs.reshape(1, -1)
        pos = np.broadcast_to(self.locate(flat, 1, access="home_domain lookup"), (flat.size,))
        out = np.empty(flat.size, np.int64)
        av = flat.reshape(-1)
        for p in np.unique(pos):
            rec = self._live[p]
            sel = pos == p
            out[sel] = rec.home_domain(av[sel] - rec.base)
        return out.reshape(addrs.shape)

    def locate(
        self,
        addrs: np.ndarray,
        itemsize: int,
        mask: np.ndarray | None = None,
        access: str = "access",
        masked: np.ndarray | None = None,
    ) -> np.ndarray | int:
        """Check element addresses and return the live-table position of each.

        ``addrs`` int64 [P, N] (P program instances), ``mask`` bool [P, N] or None (all). Returns an
        int when every checked element is in the same allocation, else int64 [count] positions of
        the masked elements in C order. Raises MemoryFault (misaligned, or outside every live
        allocation) with ``programs`` = the offending program indices. ``masked``: the masked
        elements' addresses in C order, when the caller has them (``addrs[mask]``, not taken again)."""
        av = masked if masked is not None else addrs[mask] if mask is not None else addrs.reshape(-1)
        if av.size == 0:
            return 0
        if itemsize > 1 and int(np.bitwise_or.reduce(av)) & (itemsize - 1):  # one pass, no temporary
            self._fault(addrs, mask, (addrs & (itemsize - 1)) != 0, itemsize, access, misaligned=True)
        bases, ends = self._table()
        lo, hi = int(av.min()), int(av.max())
        p = int(np.searchsorted(bases, lo, "right")) - 1
        if p >= 0 and hi + itemsize <= ends[p]:
            return p
        pos = np.searchsorted(bases, av, "right") - 1
        ok = (pos >= 0) & (av + itemsize <= ends[np.maximum(pos, 0)]) if len(bases) else np.zeros(av.shape, bool)
        if not ok.all():
            bad = np.zeros(addrs.shape, bool)
            if mask is not None:
                bad[mask] = ~ok
            else:
                bad.reshape(-1)[:] = ~ok
            self._fault(addrs, mask, bad, itemsize, access)
        return pos

    def span_positions(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Live-table position of the allocation holding each byte range [lo, hi) whole, or -1."""
        bases, ends = self._table()
        if len(bases) == 0:
            return np.full(lo.shape, -1, np.int64)
        pos = np.searchsorted(bases, lo, "right") - 1
        ok = (pos >= 0) & (hi <= ends[np.maximum(pos, 0)])
        return np.where(ok, pos, -1)

    def span_position(self, lo: int, hi: int) -> int:
        """span_positions for one byte range, in Python integers."""
        pos = bisect.bisect_right(self._live_bases, lo) - 1
        return pos if pos >= 0 and hi <= self._live[pos].end else -1

    def live(self, position: int) -> Allocation:
        return self._live[position]

    def holding(self, addr: int) -> Allocation | None:
        """The live allocation that holds byte ``addr``, or None (``span_position``: a launch asks this
        of each pointer argument several times, and one address through numpy arrays cost ~10 us); kept in
        ``_held`` until the live table changes (an allocation's base and size never do)."""
        try:
            return self._held[addr]
        except (KeyError, TypeError):  # TypeError: an unhashable address (a numpy array of one)
            pass
        a = int(addr)
        pos = self.span_position(a, a + 1)
        rec = self._live[pos] if pos >= 0 else None
        if len(self._held) >= HELD_KEPT:
            self._held.clear()
        self._held[a] = rec
        return rec

    def positions(self, addrs: np.ndarray) -> np.ndarray:
        """Live-table position of the allocation holding each byte address, for addresses already
        checked (``locate``); the position below, or -1, for others."""
        bases, _ = self._table()
        return np.searchsorted(bases, addrs, "right") - 1

    # ---- host-side copies (the device's memcpy) -------------------------------------------------
    def view(self, addr: int, nbytes: int) -> np.ndarray:
        """uint8 view of device bytes [addr, addr + nbytes), which must lie in one live allocation."""
        addr, nbytes = int(addr), int(nbytes)
        if nbytes == 0:
            return np.zeros(0, np.uint8)
        p = self.locate(np.array([[addr]], np.int64), 1, access=f"{nbytes}-byte copy")
        rec = self._live[p]
        if addr + nbytes > rec.end:
            self._fault(
                np.array([[addr + nbytes - 1]], np.int64),
                None,
                np.ones((1, 1), bool),
                1,
                f"{nbytes}-byte copy from {addr:#x}",
            )
        return rec.view[addr - rec.base : addr - rec.base + nbytes]

    def read_bytes(self, addr: int, nbytes: int) -> bytes:
        return self.view(addr, nbytes).tobytes()

    def write_bytes(self, addr: int, data) -> None:
        src = np.frombuffer(memoryview(data).cast("B"), np.uint8)
        self.view(addr, src.size)[:] = src
        self.mark_written(addr, src.size)

    def mark_written(self, addr: int, nbytes: int) -> None:
        """Record a write from outside the simulator (a host copy, a torch op) to [addr, addr + nbytes):
        the parts inside poisoned allocations count as written. Other bytes are ignored."""
        addr, end = int(addr), int(addr) + int(nbytes)
        if end <= addr:
            return
        bases, ends = self._table()
        first = max(int(np.searchsorted(bases, addr, "right")) - 1, 0)
        for p in range(first, int(np.searchsorted(bases, end, "left"))):
            rec = self._live[p]
            lo, hi = max(addr, rec.base), min(end, rec.end)
            if rec.written is not None and lo < hi:
                rec.written[lo - rec.base : hi - rec.base] = 1

    # ---- internals ---------------------------------------------------------------------------
    @staticmethod
    def _check_size(nbytes) -> int:
        n = int(nbytes)
        if n < 0:
            raise AllocationError(f"allocation size {n} is negative")
        return n

    @staticmethod
    def _flatten(addrs, mask):
        p = addrs.shape[0] if addrs.ndim else 1
        flat = addrs.reshape(p, math.prod(addrs.shape[1:]))
        if mask is None:
            return flat, np.ones(flat.shape, bool), None
        m = np.broadcast_to(np.asarray(mask, bool), addrs.shape).reshape(p, math.prod(addrs.shape[1:]))
        return flat, m, m

    def _record(self, base, nbytes, place: Placement, label, reuse: Allocation | None = None) -> Allocation:
        """A new allocation record (capacity checked); ``reuse``: the record it replaces (its bytes are free)."""
        mach = self.machine
        owners = place.owners(mach)
        striped = place.mode == "interleaved" and len(owners) > 1
        if striped:
            granule = mach.domain.stripe_bytes
        else:
            granule = max(ALIGN, -(-math.ceil(nbytes / len(owners)) // ALIGN) * ALIGN)
        rec = Allocation(
            self._next_id, base, nbytes, place, label or f"alloc{self._next_id}", owners, striped, granule, None
        )
        shares = np.zeros(mach.total_domains, np.int64)
        if place.mode == "replicated":  # a full copy in each of chip 0's domains: memory_allocated counts them all
            shares[: mach.domains] = nbytes
        else:
            for d, b in zip(owners, rec.split_one(0, nbytes)):  # an owner may repeat (explicit domain lists)
                shares[d] += int(b)
        used = self.used - (reuse.shares if reuse is not None else 0)
        over = np.nonzero(used + shares > self.capacity)[0]
        if over.size:
            d = int(over[0])
            raise DeviceOutOfMemory(
                f"out of device memory: allocating {nbytes} bytes ({rec.label!r}, {place}) needs "
                f"{int(shares[d])} bytes in domain {d}, which has {int(used[d])} of "
                f"{int(self.capacity[d])} bytes in use; free tensors or place the allocation on other domains"
            )
        rec.shares = shares
        return rec

    def _insert(self, rec: Allocation) -> Allocation:
        self._next_id += 1
        self.num_allocs += 1
        self.used += rec.shares
        self.copy_bytes += int(rec.shares.sum()) - rec.nbytes
        self.copy_peak = max(self.copy_peak, self.copy_bytes)
        self.peak = np.maximum(self.peak, self.used)
        self.peak_total = max(self.peak_total, int(self.used.sum()))
        self._by_id[rec.id] = rec
        if rec.nbytes == 0:  # nothing to look up; kept apart so it never shadows a real allocation
            self._empty.setdefault(rec.base, []).append(rec)
            return rec
        i = bisect.bisect_right(self._live_bases, rec.base)
        self._live_bases.insert(i, rec.base)
        self._live.insert(i, rec)
        self._tables = None
        self._held.clear()
        return rec

    def _table(self):
        if self._tables is None:
            self._tables = (
                np.array(self._live_bases, np.int64).reshape(-1),
                np.array([r.end for r in self._live], np.int64).reshape(-1),
            )
        return self._tables

    def _nearest_text(self, addr: int, itemsize: int = 1) -> str:
        parts = []
        for rec in self._freed:
            if rec.base <= addr < max(rec.end, rec.base + 1):
                parts.append(f"it lies in freed allocation {rec.describe()}")
                break
        i = bisect.bisect_right(self._live_bases, addr)
        if i > 0:
            below = self._live[i - 1]
            off = addr - below.base
            if addr < below.end:
                parts.append(
                    f"the element at offset {off} of {below.describe()} runs "
                    f"{addr + itemsize - below.end} byte(s) past its end"
                )
            else:
                parts.append(f"offset {off} of {below.describe()}, {addr - below.end + itemsize} byte(s) out of bounds")
        if i < len(self._live):
            above = self._live[i]
            parts.append(f"{above.base - addr} byte(s) before the start of {above.describe()}")
        if not self._live:
            parts.append("there are no live allocations")
        return "; " + "; ".join(parts) if parts else ""

    def _fault(self, addrs, mask, bad, itemsize, access, misaligned=False):
        bad = bad if mask is None else bad & mask
        progs, elems = np.nonzero(bad.reshape(bad.shape[0], -1))
        flat = addrs.reshape(addrs.shape[0], -1)
        a = int(flat[progs[0], elems[0]])
        more = f" (and {len(progs) - 1} more bad element(s))" if len(progs) > 1 else ""
        if misaligned:
            msg = (
                f"misaligned {access}: address {a:#x} is not a multiple of the {itemsize}-byte element size "
                f"(program {progs[0]}, element {elems[0]}){more}"
            )
        else:
            near = self._nearest_text(a, itemsize)
            msg = (
                f"out-of-bounds {access}: {itemsize}-byte element at address {a:#x} is outside every live "
                f"allocation (program {progs[0]}, element {elems[0]}){more}{near}"
            )
        raise MemoryFault(msg, programs=sorted({int(p) for p in progs}))
