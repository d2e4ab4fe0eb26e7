"""Per-operand placement at launch: an operand that every program reads through gets the layout that
serves them all, when the cost model says the move pays.

Blocked placement (the default for large tensors) is local to programs that PARTITION a tensor: each
reads its own slice, the launch runs it in the domain of that slice. An operand whose programs'
ranges each span more than one domain's share of it, or that the kernel gathers from, is SHARED: a
GEMM's B, every program reading all of K one slab at a time and in step, so blocked by rows each
slab lives in one domain and the whole chip reads one domain's HBM at a time. At such a launch the
cost model (sim/estimate.py: the launch's own affinity mapping under the placement asked about)
prices the kernel with each shared operand as it is, interleaved and replicated, each plus the
migration to it (cost.migration_cycles); the cheapest within this one launch wins. A replica that
pays only over several launches is made once the launches that read the operand have lost its price
(``OperandPlanner``: rent or buy). An operand the kernel writes is never replicated (its estimate
writes every copy), and one the user or the compiler placed (``Allocation.pinned``:
torch.plate.placement, torch.plate.migrate) is never moved.

A replica made here is a cache: it stays while launches only read it. A launch that writes
replicated memory through one of its arguments returns that argument's launch-made replica to its
placement before (``drop_written_replicas``; free: every domain holds a copy). Decisions are kept
per kernel, grid, integer arguments and operand layout, not addresses, so a graph that allocates
fresh buffers per call pays the estimates once; and a launch at other offsets of the same operands
(a loop over a tensor's columns, heads or layers) gets a decision priced at another offset, from its
third launch on, where its estimates are provably the same (``_Shifted``: every byte keeps its home under each placement
priced, and the mapping under each is the same).
"""

from __future__ import annotations

import math
import threading
import weakref
from dataclasses import dataclass

import numpy as np

from .. import cost
from ..errors import DeviceOutOfMemory, PlateError
from ..isa.footprint import FootprintError, parse_footprints
from .estimate import (
    accessed_elements,
    estimate_launch,
    launch_mapping,
    placed_allocation,
    replica_writes,
    shared_estimates,
    writes_within,
)
from .footprints import launch_footprints
from .memory import Allocation, DeviceMemory, held_by_argument
from .replay import static_facts
from .timing import map_programs
from .trace import Trace

CANDIDATES = ("interleaved", "replicated")
MAX_DECISIONS = 4096  # remembered launch layouts
SHIFTS_KEPT = 4  # decisions kept per launch layout at other offsets (_Shifted)
SHIFTED_PROGRAMS = 1 << 12  # larger grids keep no _Shifted (its mappings hold a core per program)


@dataclass(frozen=True)
class Move:
    """One operand's placement change, decided for a launch."""

    kernel: str
    arg: str
    before: str
    after: str
    migration_ns: float
    saved_ns: float  # the launch's estimated time before minus after, the migration not counted


def shared_operands(program, grid, args, memory: DeviceMemory) -> list[tuple[int, Allocation]]:
    """(argument index, allocation) of each operand whose programs' ranges span, on average, more than
    one domain's share of its allocation, or that the kernel gathers from (its addresses are data: any
    program may read any of it); none when the kernel's footprint cannot tell."""
    launch = launch_footprints(program, grid, args)
    if launch is None:
        return []
    found: dict[int, Allocation] = {}
    for fp in launch.footprints:
        if fp.arg < 0 or fp.arg in found or program.args[fp.arg].type != "ptr":
            continue
        base = int(args[fp.arg])
        rec = memory.holding(base)
        if rec is None:
            continue
        if fp.lo is None:  # gathered: any program may read any of it
            found[fp.arg] = rec
            continue
        try:
            span = np.mean(launch.value(fp.hi) - launch.value(fp.lo))
        except FootprintError:
            return []
        if rec.nbytes and span > rec.nbytes / memory.machine.domains:
            found[fp.arg] = rec
    return sorted(found.items())


def _one_home(program, grid, args, memory: DeviceMemory, shared) -> bool:
    """Whether a launch's placement choices are known without pricing them: one program, every pointer
    argument's allocation homed whole in domain 0 (an interleaved one within its first stripe: every
    small tensor), no footprint outside its arguments, and every shared operand interleaved, so that the
    replica is the one candidate. The affinity mapping runs the program in domain 0 (its located bytes
    are all there; with the replicated operand steering nothing, the rest are, or none are and the
    default mapping deals program 0 to core 0, domain 0's first), where a replica's copy is read exactly
    as its home's bytes were: the same trace, the same bytes per domain, the same modeled time. So no
    move pays and a replica gains nothing (``_Choice(i, None, 0, 0, 0)``, what the pricing returns;
    tests/test_operand_placement.py prices launches at and just past these bounds)."""
    if math.prod(grid) != 1 or any(rec.placement.mode != "interleaved" for _, rec in shared):
        return False
    for a, v in zip(program.args, args):
        if a.type != "ptr":
            continue
        rec = memory.holding(int(v))
        if rec is None or rec.owners[0] != 0 or (len(rec.owners) > 1 and rec.nbytes > rec.granule):
            return False  # not device memory, replicated (its one owner is past the domains), or beyond domain 0
    launch = launch_footprints(program, grid, args)
    return launch is not None and all(fp.arg >= 0 for fp in launch.footprints)


def _replicas_change_nothing(program, grid, args, memory: DeviceMemory, shared) -> bool:
    """Whether a launch's placement choices are known without pricing them, for any grid: every shared
    operand interleaved and homed whole in one domain (within its first stripe: a small tensor), so that
    the replica is its one candidate, and the affinity mapping the same with none replicated and with each
    replicated alone, every program on a core of each one's home domain. Then a replica's estimate is the
    launch's own: a placement changes only the home of each byte of what it moves (no address, element or
    run: sim/estimate.py ``_repriced``), a replica's bytes read go to the reading core's domain
    (sim/timing.py ``fold_replicas``), here the domain that homed them, and the model reads nothing else
    but the mapping. Its time is the launch's and no migration pays (``_Choice(i, None, 0, 0, 0)``, what
    the pricing returns); a replica written is dismissed with the same choice. One at a time: no operand
    moves, so each is priced with the others as they are. (Where the pricing would fail, it returns no
    choice: no move either.)"""
    homes = []
    for _, rec in shared:
        if rec.placement.mode != "interleaved" or (len(rec.owners) > 1 and rec.nbytes > rec.granule):
            return False
        homes.append(rec.owners[0])
    if any(h >= memory.machine.domains for h in homes):  # a replica's copies are chip 0's
        return False
    n = math.prod(grid)
    cores = map_programs(launch_mapping(program, grid, args, memory), n, memory.machine)
    domains = cores // memory.machine.domain.cores
    for (i, _), home in zip(shared, homes):
        if (domains != home).any():
            return False
        placed = map_programs(launch_mapping(program, grid, args, memory, {i: "replicated"}), n, memory.machine)
        if not np.array_equal(placed, cores):
            return False
    return True


def _one_home_every_pointer(program, grid, args, recs) -> bool:
    """``_one_home`` known before ``shared_operands`` is: one program, every pointer argument's allocation
    (``recs``) interleaved and homed whole in domain 0, no footprint outside its arguments. Whichever of
    those operands are shared, each is interleaved, so ``_one_home`` holds and the pricing would move none;
    a kernel without a footprint shares none. Either way the launch makes no move, so ``plan`` answers
    without evaluating the footprint's ranges (most of a test suite's launches: one program over small
    tensors, each a fresh kernel; tests/test_operand_placement.py)."""
    if math.prod(grid) != 1:
        return False
    for a, rec in zip(program.args, recs):
        if a.type != "ptr":
            continue
        if rec is None or rec.placement.mode != "interleaved" or rec.owners[0] != 0:
            return False
        if len(rec.owners) > 1 and rec.nbytes > rec.granule:
            return False
    # what the footprint text says, not its values at this launch (launch_footprints': the same entries)
    footprints = parse_footprints(getattr(program, "affinity", ""))
    return not footprints or all(fp.arg >= 0 for fp in footprints)


def _writes_replica(program, grid, args, memory: DeviceMemory, chosen: dict, i: int, before: list) -> bool:
    """Whether the launch writes operand ``i``, replicated on top of the ``chosen`` placements (``before``:
    [their replica writes], filled at the first ask): then its estimate writes more bytes in all than the
    estimate under ``chosen`` (each byte written to a replica is written to every domain of chip 0:
    ``estimate.replica_writes``), the test ``_price`` applies after the model, asked here of the two traces
    alone. A one-domain chip writes one copy: no difference."""
    if memory.machine.domains < 2:
        return False
    rec = memory.holding(int(args[i]))
    if not any(memory.holding(int(args[j])) is rec for j in chosen) and writes_within(
        program, grid, args, memory, rec.base, rec.end
    ):
        return True  # it writes an element of the operand, placed by ``chosen`` as it is (so not replicated)
    if not before:
        before.append(replica_writes(program, grid, list(args), memory, placement=chosen or None))
    return replica_writes(program, grid, list(args), memory, placement={**chosen, i: "replicated"}) > before[0]


def _never_cheaper(spec: str, move_ns: float, base_ns: float) -> bool:
    """Whether a move is priced out before its estimate: its migration alone takes the launch's time (an
    estimate is never negative, so estimate + migration >= the launch's time, which ``_price`` never
    chooses). A replica's estimate also feeds the rent rule (its gain), so it is always asked."""
    return spec != "replicated" and move_ns >= base_ns


def _migration_ns(memory: DeviceMemory, rec: Allocation, spec: str) -> float:
    moved = memory.moved_by(rec.base, spec)
    return cost.migration_cycles(memory.machine, moved) / memory.machine.clock_ghz


def _sizes_key(program, grid, args, recs, memory: DeviceMemory) -> tuple:
    """What ``shared_operands`` of a launch depends on: the footprint's values (the program, grid and
    integer arguments: sim/footprints.py) and, per pointer argument, whether it points into an allocation
    and that allocation's size (a range's span is a difference of offsets; the share it is compared with
    is the size over the domains). Not the offset nor the placement: the same operands of another
    launch over other tensors of these sizes are shared or not alike. Of the program, what
    ``shared_operands`` reads of it: its footprint text and its arguments' types (a fresh kernel compiled
    to the same footprint finds the answer)."""
    layout = tuple(
        v if a.type != "ptr" else None if r is None else ("ptr", r.nbytes) for a, v, r in zip(program.args, args, recs)
    )
    types = tuple(a.type for a in program.args)
    return (program.affinity, types, tuple(int(g) for g in grid), layout, id(memory.machine))


def _pieces(rec: Allocation) -> tuple[int, int, bool]:
    """How an allocation's home follows a byte's offset (``Allocation.owner_index``): (granule, owners,
    striped). Its home is constant on each granule; striped, it repeats every ``owners`` granules."""
    return rec.granule, len(rec.owners), rec.striped


@dataclass(frozen=True)
class _Phases:
    """Where in its granule each byte a launch moved of one allocation lies, under one placement of it:
    what decides whether those bytes keep their homes when the launch moves them all by an offset."""

    pieces: tuple[int, int, bool]  # _pieces of the allocation under the placement
    first: int  # the lowest offset within a granule of a byte moved (granule-relative)
    last: int  # the highest
    crosses: bool  # an element spans two granules

    @classmethod
    def of(cls, pieces, rel_first: np.ndarray, itemsize: np.ndarray) -> _Phases:
        g = pieces[0]
        if rel_first.size == 0:  # no byte moved: every offset keeps them all (as with one owner)
            return cls((g, 1, False), 0, 0, False)
        phase = rel_first % g
        end = phase + itemsize - 1
        return cls(pieces, int(phase.min()), int(end.max()), bool((end >= g).any()))

    def keeps_homes(self, delta: int) -> bool:
        """Whether every byte moved keeps its home domain when it is ``delta`` bytes further: each
        moves by the same number of granules (none crosses a granule boundary the others do not), and
        that number keeps the home (a multiple of the owners striped, none in chunks, anything with one
        owner)."""
        g, k, striped = self.pieces
        if k == 1 or delta == 0:
            return True
        q, r = divmod(delta, g)
        if self.crosses and r:
            return False
        if self.last + r < g:
            shift = q
        elif self.first + r >= g:
            shift = q + 1
        else:
            return False
        return shift % k == 0 if striped else shift == 0


def _shift_key(program, grid, args, recs, shared, memory: DeviceMemory) -> tuple:
    """``OperandPlanner._key`` without the offsets: per shared operand its allocation's size, placement and
    pieces and which pointer arguments point into it. The launches of a loop over slices of a tensor."""
    ints = tuple(int(v) for a, v in zip(program.args, args) if a.type != "ptr" and not isinstance(v, float))
    layout = tuple(
        (i, rec.nbytes, str(rec.placement), _pieces(rec), tuple(j for j, r in enumerate(recs) if r is rec))
        for i, rec in shared
    )
    return (id(program), program.name, tuple(grid), ints, layout, id(memory.machine))


@dataclass(frozen=True)
class _Shifted:
    """A launch's priced choices and what they follow of its shared operands' offsets, so that a launch of
    the same ``_shift_key`` at other offsets gets them unpriced exactly when its estimates are the same.

    A placement changes only the home domain of each byte (sim/estimate.py): an address-only run at
    other offsets moves the same elements in the same runs, each by the offset's change, and the timing
    model sees only their bytes per home and the grid -> core mapping. So the estimates under every
    placement priced are the same when (1) every byte the launch moved of each shared allocation keeps
    its home under each placement priced for it (``_Phases``, from the elements the logged run moved)
    and (2) the mapping under each placement priced is the same (computed again: it follows the
    footprint's byte ranges, which a shift splits otherwise). Then the migrations (the same sizes and
    placements) and the replica-write tests (the same traces) are too, and the choices follow."""

    program: object
    choices: tuple
    args: tuple[tuple[int, ...], ...]  # per shared operand: the pointer arguments into its allocation
    offsets: tuple[tuple[int, ...], ...]  # their offsets in it
    phases: tuple[tuple[_Phases, ...], ...]  # per shared operand: under its placement and each candidate
    mappings: tuple  # (placement asked, its mapping)
    layouts: tuple  # per argument: _mapped_layout

    @classmethod
    def of(cls, program, grid, args, recs, shared, memory: DeviceMemory, choices, asked) -> _Shifted | None:
        """Inside the ``shared_estimates`` block that priced ``choices``; None when the block cannot tell
        which elements the launch moved (``estimate.accessed_elements``)."""
        into, offsets, phases = [], [], []
        for _, rec in shared:
            found = accessed_elements(program, grid, args, memory, rec.base, rec.end)
            if found is None:
                return None
            rel = np.concatenate([a for a, _ in found] or [np.zeros(0, np.int64)]) - rec.base
            size = np.concatenate([np.full(a.size, w, np.int64) for a, w in found] or [np.zeros(0, np.int64)])
            pieces = [_pieces(rec)]
            for spec in CANDIDATES:
                if spec != rec.placement.mode:
                    pieces.append(_pieces(placed_allocation(memory.machine, rec, spec)))
            js = tuple(j for j, r in enumerate(recs) if r is rec)
            into.append(js)
            offsets.append(tuple(int(args[j]) - rec.base for j in js))
            phases.append(tuple(_Phases.of(p, rel, size) for p in pieces))
        mappings = tuple((p, launch_mapping(program, grid, args, memory, p)) for p in asked)
        layouts = _mapped_layout(args, recs)
        return cls(program, choices, tuple(into), tuple(offsets), tuple(phases), mappings, layouts)

    def answers(self, program, grid, args, recs, memory: DeviceMemory) -> bool:
        """Whether a launch of the same ``_shift_key`` has these choices (the class docstring)."""
        if program is not self.program:
            return False
        for js, ref, phases in zip(self.args, self.offsets, self.phases):
            base = recs[js[0]].base
            deltas = {int(args[j]) - base - o for j, o in zip(js, ref)}
            if len(deltas) != 1:
                return False
            delta = deltas.pop()
            if not all(p.keeps_homes(delta) for p in phases):
                return False
        layouts = _mapped_layout(args, recs)
        moved = [j for j, (a, b) in enumerate(zip(layouts, self.layouts)) if a != b]
        return all(
            launch_mapping(program, grid, args, memory, p) == m
            for p, m in self.mappings
            if not all(_replicated(p, j, recs, (layouts[j], self.layouts[j])) for j in moved)
        )


def _mapped_layout(args, recs) -> tuple:
    """Per argument what the affinity mapping reads of it (sim/affinity.py ``launch_layout``): a pointer's
    offset in its allocation and the allocation's size, placement and pieces."""
    return tuple(
        None if r is None else (int(v) - r.base, r.nbytes, str(r.placement), r.owners, r.granule, r.striped)
        for v, r in zip(args, recs)
    )


def _replicated(placement, j: int, recs, layouts) -> bool:
    """Whether argument ``j`` points into an allocation that ``placement`` replicates (or that stays
    replicated at both launches, ``layouts``): a replica steers no program (sim/affinity.py
    ``program_bytes``), so its offset and layout change no mapping."""
    rec = recs[j]
    if rec is None:
        return False
    spec = next((s for k, s in (placement or {}).items() if recs[k] is rec), None)
    if spec is not None:
        return spec == "replicated"
    return all(lay is not None and lay[2] == "replicated" for lay in layouts)


@dataclass(frozen=True)
class _Choice:
    """The cost model's answer for one shared operand of a launch layout."""

    arg: int
    spec: str | None  # the placement that pays within this launch (None: keep)
    saved_ns: float  # the launch's time saved by ``spec``
    replica_gain_ns: float  # the launch's time saved by a replica over ``spec`` (or what it keeps); 0 when none
    replica_ns: float  # the replica's migration time; 0 when it gains nothing (``apply`` reads it only then)


class OperandPlanner:
    """The per-operand decisions of one device (module docstring).

    A replica that does not pay within one launch is bought like skis (the rent-or-buy rule, at most
    twice the best cost in hindsight): each launch that reads the operand adds the time a replica
    would have saved it to the operand's RENT; once the rent reaches the replica's migration time,
    the replica is made."""

    def __init__(self):
        self._decided: dict[tuple, tuple] = {}  # key -> (program, its choices)
        # _sizes_key -> (machine, argument indices of shared_operands): what the footprint says of a launch's
        # operands, kept for its repeats (the same operands over fresh allocations, other offsets, other kernels
        # of the same footprint)
        self._shared: dict[tuple, tuple] = {}
        self._rent: dict[int, float] = {}  # allocation id -> ns a replica would have saved so far
        # _shift_key -> [_Shifted]: decisions priced at other offsets of the shared operands, kept for the
        # launches whose every byte keeps its home and whose mapping is the same (a loop over slices); an empty
        # list after the key's first pricing (``plan``)
        self._shifts: dict[tuple, list] = {}

    def _key(self, program, grid, args, shared) -> tuple:
        ints = tuple(int(v) for a, v in zip(program.args, args) if a.type != "ptr" and not isinstance(v, float))
        layout = tuple((i, rec.nbytes, int(args[i]) - rec.base, str(rec.placement)) for i, rec in shared)
        return (id(program), program.name, tuple(grid), ints, layout)

    def plan(
        self, program, grid, args, memory: DeviceMemory
    ) -> tuple[list[tuple[int, Allocation]], tuple[_Choice, ...]]:
        """The shared operands of this launch that launches may move, and the cost model's choice for each."""
        recs = held_by_argument(program, args, memory)
        if _one_home_every_pointer(program, grid, args, recs):
            return [], ()  # what the launch's shared operands would get: no move (_one_home), found unpriced
        layout = _sizes_key(program, grid, args, recs, memory)
        found = self._shared.get(layout)
        if found is None or found[0] is not memory.machine:  # the key holds id(machine)
            if len(self._shared) >= MAX_DECISIONS:
                self._shared.clear()
            found = (memory.machine, tuple(i for i, _ in shared_operands(program, grid, args, memory)))
            self._shared[layout] = found
        shared = [(i, recs[i]) for i in found[1] if not recs[i].pinned]
        if not shared:
            return shared, ()
        key = self._key(program, grid, args, shared)
        hit = self._decided.get(key)
        if hit is not None and hit[0] is program:  # id(program) in the key is reused once it is freed
            return shared, hit[1]
        if _one_home(program, grid, args, memory, shared):
            self._decided[key] = (program, tuple(_Choice(i, None, 0.0, 0.0, 0.0) for i, _ in shared))
            return shared, self._decided[key][1]
        if len(self._decided) >= MAX_DECISIONS:
            self._decided.clear()
        if _replicas_change_nothing(program, grid, args, memory, shared):
            self._decided[key] = (program, tuple(_Choice(i, None, 0.0, 0.0, 0.0) for i, _ in shared))
            return shared, self._decided[key][1]
        shift_key = _shift_key(program, grid, args, recs, shared, memory)
        for kept in self._shifts.get(shift_key, ()):
            if kept.answers(program, grid, args, recs, memory):
                self._decided[key] = (program, kept.choices)
                return shared, kept.choices
        asked: list = []
        # a _Shifted is made from the second pricing of a shift key on (the first launch at another offset): a
        # launch priced once (a test's fresh kernel, most of a test suite's) would never use it, and a loop over
        # slices pays one more pricing than with it made at the first
        again = self._shifts.get(shift_key)
        with shared_estimates():  # one address-only run of the launch prices every placement (sim/estimate.py)
            choices = tuple(self._price(program, grid, args, memory, shared, asked))
            kept = None
            if again is not None and asked and math.prod(grid) <= SHIFTED_PROGRAMS:
                kept = _Shifted.of(program, grid, args, recs, shared, memory, choices, asked)
        if again is None or kept is not None:
            if len(self._shifts) >= MAX_DECISIONS:
                self._shifts.clear()
            found = self._shifts.setdefault(shift_key, [])
            if kept is not None:
                found[:] = [*found[-(SHIFTS_KEPT - 1) :], kept]
        self._decided[key] = (program, choices)
        return shared, choices

    @staticmethod
    def _price(program, grid, args, memory: DeviceMemory, shared, asked: list | None = None) -> list[_Choice]:
        """The cost model's choice for each shared operand, in order, each priced with the choices before it.
        ``asked``: gets each placement estimated (None: the operands' own), unless the pricing failed."""
        chosen: dict[int, str] = {}
        choices = []
        before: list = []  # the replica writes under ``chosen`` (``_writes_replica``), once asked
        try:
            base = estimate_launch(program, grid, list(args), memory)
            placements: list = [None]
            for i, rec in shared:
                found = {}  # placement -> (estimate, migration ns)
                for spec in CANDIDATES:
                    if spec == rec.placement.mode:
                        continue
                    try:
                        move_ns = _migration_ns(memory, rec, spec)
                    except DeviceOutOfMemory:
                        continue
                    if _never_cheaper(spec, move_ns, base.time_ns):
                        continue
                    if spec == "replicated" and _writes_replica(program, grid, args, memory, chosen, i, before):
                        continue  # the kernel writes it: every copy would be written (known before the model)
                    placements.append({**chosen, i: spec})
                    est = estimate_launch(program, grid, list(args), memory, placement=placements[-1])
                    if spec == "replicated" and est.write_bytes.sum() > base.write_bytes.sum():
                        continue  # the kernel writes it: every copy would be written
                    found[spec] = (est, move_ns)
                best = min(found, key=lambda k: found[k][0].time_ns + found[k][1], default=None)
                if best is not None and found[best][0].time_ns + found[best][1] >= base.time_ns:
                    best = None
                after = found[best][0] if best is not None else base
                replica = found.get("replicated") if best != "replicated" else None
                gain = max(after.time_ns - replica[0].time_ns, 0.0) if replica else 0.0
                choices.append(_Choice(i, best, base.time_ns - after.time_ns, gain, replica[1] if gain > 0 else 0.0))
                if best is not None:
                    chosen[i], base = best, after
                    before.clear()
        except PlateError:  # control flow on loaded data, a fault: nothing priced or moved; the launch itself reports
            return []
        if asked is not None:
            asked.extend(placements)
        return choices

    def apply(self, program, grid, args, memory: DeviceMemory) -> list[Move]:
        """Make this launch's changes (``plan``, and replicas whose rent is paid) and return them; the
        caller advances the clock."""
        shared, choices = self.plan(program, grid, args, memory)
        recs = dict(shared)
        moves = []
        for c in choices:
            rec = recs[c.arg]
            spec, saved = c.spec, c.saved_ns
            if c.replica_gain_ns > 0:
                rent = self._rent[rec.id] = self._rent.get(rec.id, 0.0) + c.replica_gain_ns
                if rent >= c.replica_ns:
                    spec, saved = "replicated", c.saved_ns + c.replica_gain_ns
                    self._rent.pop(rec.id)
            if spec is None:
                continue
            before = rec.placement
            try:
                ns = _migration_ns(memory, rec, spec)
                memory.migrate(rec.base, spec)
            except DeviceOutOfMemory:
                continue
            if spec == "replicated":
                rec.replica_of = before
                with _MADE_LOCK:
                    _MADE.append(weakref.ref(rec))
            moves.append(Move(program.name, program.args[c.arg].name, str(before), spec, ns, saved))
        if len(self._rent) >= MAX_DECISIONS:
            self._rent.clear()
        return moves


# the allocations ``OperandPlanner.apply`` made replicas (set their ``replica_of``), while they may still be: the
# one place ``replica_of`` is set, so with none left no argument of a launch is such a replica (one list for every
# device: its lock keeps one device's pruning from losing another's append)
_MADE: list[weakref.ref] = []
_MADE_LOCK = threading.Lock()


def _replicas_made() -> bool:
    """Whether an allocation may hold a replica a launch made: one of ``_MADE`` alive with ``replica_of`` set
    (memory.migrate clears it). Those that no longer do are forgotten here."""
    if _MADE:
        with _MADE_LOCK:
            _MADE[:] = [r for r in _MADE if (rec := r()) is not None and rec.replica_of is not None]
    return bool(_MADE)


def drop_written_replicas(trace: Trace, program, args, memory: DeviceMemory) -> list[Allocation]:
    """After a launch: when it wrote replicated memory, its arguments' launch-made replicas go back to
    the placement they had (free). Returns the allocations returned. No launch-made replica left
    (``_replicas_made``: most launches), it looks up no argument."""
    if not _replicas_made():
        return []
    made = []
    for a, v in zip(program.args, args):
        if a.type != "ptr":
            continue
        rec = memory.holding(int(v))
        if rec is not None and rec.replica_of is not None and rec not in made:
            made.append(rec)
    if not made:
        return []
    D = memory.machine.total_domains
    pcs = static_facts(trace.program, memory.machine)[0]
    wrote = any(
        e.bytes_by_domain is not None
        and pcs[e.pc].outbound
        and e.bytes_by_domain.shape[1] > D
        and e.bytes_by_domain[:, D].any()
        for e in trace.entries
    )
    if not wrote:
        return []
    for rec in made:
        memory.migrate(rec.base, rec.replica_of)
    return made


__all__ = ["Move", "OperandPlanner", "drop_written_replicas", "shared_operands"]
