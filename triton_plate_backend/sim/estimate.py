"""The cost model as a query: how long a launch takes, what binds it and which bytes cross which
domains, WITHOUT running the kernel. What the compiler asks (grid -> core affinity, autotuning,
Inductor's template choice) before it commits to a launch.

Two steps, both cheaper than a level-1 simulation:

1. An ADDRESS-ONLY run (``address_trace``): the program's scalar code runs exactly (program ids,
   loop counters, DMA descriptors are scalar registers), every memory access is checked and
   counted by home domain but moves no byte, and of the vector and matrix code only the slice
   that feeds an address, a mask or a scalar runs (``address_slice``: what a gather's addresses or
   an extracted loop bound depend on; loads into that slice read memory for real). The result is
   the Trace the functional executor would record (same entries, bytes, runs and elements; a
   test checks it) except where control flow depends on an atomic's result, which reads as 0
   (an uncontended lock). Device memory is only read, never written. A placement changes only the
   home domain of each byte, so inside ``shared_estimates`` one run of a launch prices every
   placement asked about it (``_repriced``).
2. An AGGREGATED timing model over that trace (``model``): each program's three engines
   (DMA-in, compute, DMA-out) replayed with level 1's rules (in-order engines, tile
   dependencies, DMA queue depth, flight latency), vectorised over the programs, without level
   1's calendar: the programs of one wave (one per core) run each DMA in LOCKSTEP, so a flow
   takes as long as the most loaded resource on its route needs for that DMA's bytes of the whole
   wave (``_StepRates``; each wave its own bytes: waves may read different domains). A core's
   time is the sum of its programs' occupancy plus the last one's drain; the launch's time is the
   slowest core's, never below the level-0 bound. Where cores drift out of lockstep (a loop whose
   DMAs all hit one domain at a time, over many waves) it overestimates contention.

``estimate_launch(program, grid, args, memory, ...) -> Estimate``. Placement is the arguments'
own (their allocations) unless ``placement`` names another for some pointer arguments; the grid
-> core mapping is a policy name, a callable or an explicit core per program (default: the
``PLATE_POLICY`` knob, what a launch uses).
"""

from __future__ import annotations

import collections
import dataclasses
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from .. import cost, knobs
from ..errors import PlateError
from ..isa.program import Program
from ..machine import Machine, get_machine
from .affinity import MAPPINGS
from .data_flow import _tiles
from .dma import Traffic, _storage
from .executor import DEFAULT_MAX_STEPS, execute
from .memory import DeviceMemory, Placement
from .replay import _routes, static_facts
from .sem_memory import TRAFFIC_ONLY, kept_access
from .semantics import SEMANTICS
from .sram_reach import reaching_writes
from .timing import fold_replicas, map_programs, mapped, program_waves
from .trace import Trace, TraceEntry, content

try:  # the cost model's walk compiled (sim/csrc/walk.cpp, built by setup.py); without it, the numpy walk
    from . import _walk
except ImportError:
    _walk = None

COMPILED_WALK = True  # the compiled walk when it is built; False: the numpy walk (its reference), for comparison


class EstimateError(PlateError):
    """A launch the cost model cannot estimate without running it (control flow on loaded data)."""


# level-0 term -> the bound an Estimate reports
BOUND_NAMES = {
    "compute": "compute",
    "flops": "compute",
    "dma_engine": "dma-engine",
    "hbm": "hbm",
    "die_link": "die-link",
    "chip_link": "chip-link",
}
LATENCY_MARGIN = 1.10  # above this multiple of its level-0 bound a launch is called latency-bound


@dataclass(frozen=True)
class Estimate:
    """What the cost model predicts for one launch (times in ns at the machine's clock)."""

    time_ns: float
    bound: str  # "hbm", "compute", "die-link", "chip-link", "dma-engine" or "latency"
    level0_ns: float
    read_bytes: np.ndarray  # [core domain, home domain]
    write_bytes: np.ndarray  # [core domain, home domain]
    flops: float
    num_programs: int
    policy: str
    wall_s: float
    level0_terms: dict = field(default_factory=dict)  # ns per level-0 term
    kernel: str = ""
    launch_key: tuple = ()  # kernel name and pointer arguments: what configs of one autotuning share

    @property
    def bytes(self) -> np.ndarray:
        """Bytes moved per (core domain, home domain), reads and writes."""
        return self.read_bytes + self.write_bytes

    @property
    def remote_share(self) -> float:
        total = float(self.bytes.sum())
        return 0.0 if total == 0 else 1.0 - float(np.trace(self.bytes)) / total

    def __str__(self) -> str:
        return (
            f"{self.time_ns / 1000:.2f} us ({self.bound}-bound; level 0 {self.level0_ns / 1000:.2f} us), "
            f"{self.bytes.sum() / 2**20:.1f} MiB, {100 * self.remote_share:.0f}% remote, {self.flops / 1e9:.2f} GFLOP"
        )


# ---- step 1: the address-only run ----------------------------------------------------------------------


def _no_data(st, ins):
    return None


def address_slice(program: Program) -> set[int]:
    """The pcs of vector, matrix and load instructions whose results an address, a mask or a
    scalar register depends on (the backward slice from those uses, through the tile writes each
    read can observe: sram_reach.py), and the instructions that read a tile into a scalar register
    (v.extract: a loop bound or a branch condition loaded from memory)."""
    seeds = []  # (pc, tile) reads an address, a mask or a scalar register takes
    run: set[int] = set()
    for pc, inst in enumerate(program.instrs):
        ops = {od.name: (od, v) for od, v in zip(inst.row.operands, inst.operands)}
        scalar_def = any(od.kind == "r" and od.role == "def" for od, _ in ops.values())
        if inst.row.unit in ("dma_in", "dma_out"):
            seeds += [(pc, ops[name][1]) for name in ("addr", "m") if name in ops]
        elif scalar_def and inst.row.unit != "scalar":  # a tile read into a scalar register (v.extract)
            seeds += [(pc, t) for t in _tiles(inst, ("use", "inout"))]
            run.add(pc)
    reads = reaching_writes(program)
    if reads is None:
        return _overlap_slice(program, [t for _, t in seeds], run)
    seen = set(seeds)
    while seeds:
        writes = reads.get(seeds.pop(), 0)
        while writes:
            low = writes & -writes
            writes ^= low
            pc = low.bit_length() - 1
            if pc in run:
                continue
            run.add(pc)
            inst = program.instrs[pc]
            if inst.row.unit == "vector" or inst.row.unit == "matrix":
                for t in _tiles(inst, ("use", "inout")):
                    if (pc, t) not in seen:
                        seen.add((pc, t))
                        seeds.append((pc, t))
    return run


def _overlap_slice(program: Program, tiles: list[int], run: set[int]) -> set[int]:
    """``address_slice`` where the control flow cannot be read: every write to SRAM bytes a needed
    tile shares counts, whenever it runs."""
    spans = np.array([t.span() for t in program.tiles], dtype=np.int64).reshape(-1, 2)
    overlap = (spans[:, None, 0] < spans[None, :, 1]) & (spans[None, :, 0] < spans[:, None, 1])
    np.fill_diagonal(overlap, True)
    needed = np.zeros(len(program.tiles), bool)
    needed[tiles] = True
    changed = True
    while changed:
        changed = False
        for pc, inst in enumerate(program.instrs):
            if pc in run or inst.row.unit in ("scalar", "sync"):
                continue
            written = _tiles(inst, ("def", "inout"))
            if written and (overlap[written][:, needed]).any():
                run.add(pc)
                if inst.row.unit == "vector" or inst.row.unit == "matrix":
                    needed[_tiles(inst, ("use", "inout"))] = True
                    needed |= overlap[needed].any(axis=0)
                changed = True
    return run


def address_rules(program: Program) -> list:
    """One rule per pc for the address-only run (module docstring)."""
    run = address_slice(program)
    rules = []
    for pc, inst in enumerate(program.instrs):
        m, unit = inst.mnemonic, inst.row.unit
        if m.startswith("dbg."):
            rules.append(_no_data)
        elif pc in run and not m.startswith(("atom.", "dma.store", "dma.scatter")):
            rules.append(SEMANTICS[m])  # vector/matrix slice, loads feeding it: read only
        elif m in TRAFFIC_ONLY:
            rules.append(TRAFFIC_ONLY[m])
        elif unit in ("vector", "matrix"):
            rules.append(_no_data)
        else:
            rules.append(SEMANTICS[m])
    return rules


def _placed(memory: DeviceMemory, program: Program, args, placement) -> dict[int, tuple]:
    """id() of each allocation ``placement`` names (argument name or index -> placement spec) ->
    (the allocation, the placement asked for it)."""
    names = {a.name: i for i, a in enumerate(program.args)}
    where = {}
    for key, spec in (placement or {}).items():
        i = names.get(key, key)
        if not isinstance(i, int) or not 0 <= i < len(args) or program.args[i].type != "ptr":
            raise EstimateError(
                f"placement names {key!r}: not a pointer argument of {program.name} "
                f"({', '.join(a.name for a in program.args if a.type == 'ptr')})"
            )
        where[int(args[i])] = spec
    moved = {}
    for rec in memory.allocations:
        spec = next((s for a, s in where.items() if rec.base <= a < rec.end), None)
        if spec is not None:
            moved[id(rec)] = rec, spec
    return moved


def _shadow(memory: DeviceMemory, program: Program, args, placement) -> DeviceMemory:
    """A memory over the same bytes where the allocations of the named pointer arguments have
    another placement (``placement``: argument name or index -> placement spec)."""
    if not placement:
        return memory
    moved = _placed(memory, program, args, placement)
    shadow = DeviceMemory(memory.machine)
    for rec in memory.allocations:
        if id(rec) in moved:
            shadow.register(rec.base, rec.nbytes, moved[id(rec)][1], owner=rec, label=rec.label)
        else:
            shadow.register_alike(rec)
    return shadow


def _kept_shadow(memory: DeviceMemory, program: Program, args, placement) -> DeviceMemory:
    """``_shadow``; inside ``shared_estimates`` one per memory layout, program, arguments and placement (the
    operand planner asks a placement's replica writes and then its estimate: one shadow for both; nothing
    writes memory in the block, and the address-only run and the mapping only read it)."""
    memo = getattr(_shared, "memo", None)
    if memo is None or not placement:
        return _shadow(memory, program, args, placement)
    try:
        key = (
            "shadow",
            id(memory),
            _layout(memory),
            id(program),
            tuple(args),
            tuple(sorted(placement.items(), key=repr)),
        )
        hash(key)
    except TypeError:  # an argument without a value to compare
        return _shadow(memory, program, args, placement)
    hit = memo.get(key)
    if hit is None or hit[0] is not program or hit[1] is not memory:
        hit = memo[key] = (program, memory, _shadow(memory, program, args, placement))
    return hit[2]


def address_trace(
    program: Program, grid, args, memory: DeviceMemory, machine=None, *, placement=None, max_steps=None
) -> Trace:
    """The trace of a launch from the address-only run (module docstring, step 1)."""
    machine = get_machine(machine if machine is not None else memory.machine)
    mem = _shadow(memory, program, list(args), placement)
    return _address_run(program, grid, args, mem, machine, max_steps=max_steps)


def _address_run(program, grid, args, memory, machine, *, max_steps=None, accesses=None) -> Trace:
    """``address_trace`` over ``memory`` as it is; ``accesses``: a list that gets each memory access the
    run makes, in the order it ran (``_logging``: what ``_repriced`` counts again). ``max_steps``: the
    launch's own budget (PLATE_MAX_STEPS) unless given, so a runaway kernel stops here as soon as
    its launch would, not after the default budget."""
    max_steps = max_steps or knobs.max_steps() or DEFAULT_MAX_STEPS
    rules = address_rules(program)
    if accesses is not None:
        budget = [KEPT_ADDRESS_BYTES]
        rules = [
            _logging(r, accesses, r is not TRAFFIC_ONLY.get(i.mnemonic, r), budget)
            if i.mnemonic.startswith(("dma.", "atom."))
            else r
            for r, i in zip(rules, program.instrs)
        ]
    try:
        return execute(program, grid, list(args), memory, machine, max_steps=max_steps, rules=rules)
    except PlateError as e:
        if "did not finish" in str(e):
            raise EstimateError(
                f"{program.name}: its control flow depends on data the address-only run does not compute "
                f"(a spin lock, a loop over loaded values); simulate it instead ({e})"
            ) from e
        raise


KEPT_ADDRESS_BYTES = 1 << 28  # element addresses one logged address-only run keeps for re-pricing


def _logging(rule, accesses: list, for_real: bool, budget: list):
    """``rule`` logging each access it makes: (pc, the context's first program, its programs, the access
    kept for re-pricing or None). ``for_real``: a load of the address slice, whose Traffic keeps nothing:
    its access is kept from the registers before it runs (``sem_memory.kept_access``). ``budget``: [bytes]
    of element addresses the run may still keep (``KEPT_ADDRESS_BYTES``; past it an access keeps its span)."""

    def logged(st, ins):
        kept = kept_access(st, ins) if for_real else None
        out = rule(st, ins)
        if isinstance(out, Traffic):  # the executor records it as one entry with bytes by domain
            if not for_real:
                kept = out.keep() if out.keep is not None else None
            if kept is not None and kept.args is not None:  # addresses copied: within the run's budget
                budget[0] -= kept.args[0].nbytes
                if budget[0] < 0:
                    kept = dataclasses.replace(kept, args=None)  # its span alone
            accesses.append((st.pc, int(st.pids[0]), st.pids.size, kept))
        return out

    return logged


REPRICED_BYTES = 1 << 26  # Traffic of accesses counted over a placement, kept per logged run for the next ones


@dataclass
class _Log:
    """A logged address-only run's accesses (``_logging``: pc, the context's first program, its programs,
    the access kept or None, in the order they ran) and what ``_repriced`` counted of them so far: per
    access and the placements of the moved allocations it may touch, its Traffic, within ``room`` bytes."""

    accesses: list
    counted: dict = field(default_factory=dict)
    room: int = REPRICED_BYTES


def _repriced(trace: Trace, log: _Log, moved: dict, shadow: DeviceMemory) -> Trace | None:
    """``trace`` (an address-only run) as the same run over ``shadow`` records it, where ``shadow`` is the
    run's memory with the allocations in ``moved`` placed otherwise: a placement changes no address,
    control flow, element or run, only the home domain of each byte, so each access that touches a
    moved allocation is counted again over ``shadow`` (the same call on the same inputs) and every other
    row is the run's own. An entry's rows are the accesses of the contexts that ran it, in program order
    (one, or a batch's cache-sized sub-batches merged: sim/executor.py ``_run_cut``): each is found by its
    pc and first program, in the order they ran. None when an access that may touch a moved allocation
    cannot be counted again (an element access past ``dma.ACCESS_BYTES`` keeps its span alone) or the log
    does not cover the trace.

    A home domain follows only its allocation's address, size and placement (sim/memory.py), and an
    allocation ``moved`` leaves alone is placed as in the run; so an access's count over ``shadow`` is the
    same over every placement that places the moved allocations its span overlaps alike: counted once
    per those placements (``log.counted``: the operand planner's placements each add one operand's
    candidate to the choices before it, so most of an access's counts are asked again)."""
    spans = [(rec.base, rec.end, Placement.parse(spec)) for rec, spec in moved.values()]
    ran: dict[tuple, collections.deque] = {}
    for at, (pc, first, n, access) in enumerate(log.accesses):
        ran.setdefault((pc, first), collections.deque()).append((n, access, at))
    entries = list(trace.entries)  # the run's own entries, but those of the accesses counted again below
    for i, e in enumerate(entries):
        if e.bytes_by_domain is None:
            continue
        programs, row, hits = e.programs, 0, []
        while row < len(programs):
            queue = ran.get((e.pc, int(programs[row])))
            if not queue:
                return None
            n, access, at = queue.popleft()
            over = () if access is None else tuple(s for s in spans if access.lo < s[1] and s[0] < access.hi)
            if access is None or over:
                hits.append((row, n, access, (at, over)))
            row += n
        if row != len(programs):
            return None
        if not hits:
            continue
        bbd, elements, runs = e.bytes_by_domain.copy(), e.elements.copy(), e.runs.copy()
        for row, n, access, key in hits:
            if access is None or not access.countable:
                return None
            t = log.counted.get(key)
            if t is None:
                t = access.traffic(shadow)
                size = t.bytes_by_domain.nbytes + t.elements.nbytes + t.runs.nbytes
                if size <= log.room:
                    log.counted[key], log.room = t, log.room - size
            bbd[row : row + n], elements[row : row + n], runs[row : row + n] = t.bytes_by_domain, t.elements, t.runs
        entries[i] = TraceEntry(e.pc, programs, bbd, elements, runs)
    if any(ran.values()):
        return None
    return Trace(trace.program, trace.grid, entries)


def _layout(memory: DeviceMemory) -> tuple:
    """What the home domain of every byte follows: each allocation's address, size and placement."""
    return tuple((r.base, r.nbytes, str(r.placement)) for r in memory.allocations)


def _run_key(program, grid, args, memory: DeviceMemory, machine, max_steps=None) -> tuple | None:
    """What an address-only run of a launch over ``memory`` depends on, but where its allocations live:
    the program, grid, arguments, memory, machine and step budget; None when an argument has no value
    to compare (a tensor)."""
    key = _memo_key(program, grid, args, memory, machine, "", None, layout=False)
    return None if key is None else ("address run", *key, max_steps or knobs.max_steps() or DEFAULT_MAX_STEPS)


def _keep(memo: dict, key: tuple, layout: tuple, program, trace: Trace, accesses) -> None:
    memo[(*key, layout)] = (program, trace, accesses)
    memo.setdefault(key, (program, trace, None))  # any layout's: the same control flow, elements and runs


def _kept(memo: dict, key: tuple, program):
    hit = memo.get(key)
    return hit if hit is not None and hit[0] is program else None


def _launch_trace(program, grid, args, memory: DeviceMemory, shadow: DeviceMemory, machine, placement) -> Trace:
    """The address-only run's trace over ``shadow`` (``memory`` with ``placement``). Inside
    ``shared_estimates`` the run over ``memory`` itself is kept with its accesses, and a placement's
    trace is that run's, re-priced (``_repriced``): the operand planner prices up to five placements
    of one launch with one run. Every trace is kept by the layout it was priced over, so the launch
    that follows (``kept_address_trace``) finds it, after its operands moved to that layout."""
    memo = getattr(_shared, "memo", None)
    key = None if memo is None else _run_key(program, grid, args, memory, machine)
    if key is None:
        return _address_run(program, grid, args, shadow, machine)
    hit = _kept(memo, (*key, _layout(shadow)), program)
    if hit is not None:
        return hit[1]
    if placement:
        base = _kept(memo, (*key, _layout(memory)), program)
        trace = None
        if base is not None and base[2] is not None:
            trace = _repriced(base[1], base[2], _placed(memory, program, list(args), placement), shadow)
        if trace is None:
            trace = _address_run(program, grid, args, shadow, machine)
        _keep(memo, key, _layout(shadow), program, trace, None)
        return trace
    accesses = []
    trace = _address_run(program, grid, args, memory, machine, accesses=accesses)
    _keep(memo, key, _layout(memory), program, trace, _Log(accesses))
    return trace


def kept_address_trace(
    program: Program, grid, args, memory: DeviceMemory, machine, *, max_steps=None, placed: bool = True, run=True
) -> Trace | None:
    """``address_trace`` of a launch over ``memory`` as it is. Inside ``shared_estimates`` a trace the
    block already has is the answer: one an estimate priced over the layout memory has now (the launch
    after its operands moved to the layout the planner chose), or with ``placed=False`` (what is asked
    of the trace does not depend on where bytes live: control flow, elements, runs) over any layout.
    ``run=False``: None where the block has none (no run made)."""
    memo = getattr(_shared, "memo", None)
    key = None if memo is None else _run_key(program, grid, args, memory, machine, max_steps)
    if key is None:
        return address_trace(program, grid, args, memory, machine, max_steps=max_steps) if run else None
    hit = _kept(memo, (*key, _layout(memory)), program) or (None if placed else _kept(memo, key, program))
    if hit is not None:
        return hit[1]
    if not run:
        return None
    machine = get_machine(machine if machine is not None else memory.machine)
    trace = _address_run(program, grid, args, memory, machine, max_steps=max_steps)
    _keep(memo, key, _layout(memory), program, trace, None)
    return trace


ACCESSED_ELEMENTS = 1 << 18  # elements ``accessed_elements`` lists at most (more: None)


def accessed_elements(program: Program, grid, args, memory: DeviceMemory, lo: int, hi: int):
    """The elements of bytes [lo, hi) the launch's address-only run over ``memory`` moved, as
    [(first-byte addresses int64, item size)], one per access that touched them: from the run
    ``shared_estimates`` logged for an estimate of the launch over ``memory`` as it is. Which elements
    a launch moves follows its addresses alone, never where bytes live. None when the block holds no
    logged run of the launch, an access that may touch [lo, hi) kept its span alone, or they number
    more than ``ACCESSED_ELEMENTS``."""
    memo = getattr(_shared, "memo", None)
    key = None if memo is None else _run_key(program, grid, args, memory, None)
    hit = None if key is None else _kept(memo, (*key, _layout(memory)), program)
    if hit is None or hit[2] is None:
        return None
    touching, total = [], 0  # first the count, so that a large launch materializes no address
    for _, _, _, access in hit[2].accesses:
        if access is None:
            return None
        if access.lo == access.hi or access.hi <= lo or hi <= access.lo:
            continue
        if access.tiles is not None or access.box is not None:
            box = access.tiles.box() if access.tiles is not None else access.box
            total += int(box.count.sum())
            touching.append((box, None))
        elif access.args is not None:
            total += access.args[0].size
            touching.append((None, access.args))
        else:
            return None
        if total > ACCESSED_ELEMENTS:
            return None
    found = []
    for box, elements in touching:
        if box is not None:
            addrs, isz = box.element_addrs()[box.valid()], box.isz
        else:
            flat, mask, dtype, _ = elements
            addrs, isz = (flat if mask is None else flat[mask]).astype(np.int64), _storage(dtype).itemsize
        addrs = addrs[(addrs >= lo) & (addrs < hi)]
        if addrs.size:
            found.append((addrs, int(isz)))
    return found


def writes_within(program: Program, grid, args, memory: DeviceMemory, lo: int, hi: int) -> bool:
    """Whether the launch's address-only run over ``memory`` (the run ``shared_estimates`` logged for an
    estimate of the launch over ``memory`` as it is) made an outbound access (a store, a scatter: what
    ``replica_writes`` counts) whose span lies in bytes [lo, hi): it writes an element there, since an access's
    span runs from the first byte of an element it moves to the last byte of another (sim/dma.py ``Access``).
    False where the block holds no logged run of the launch or no such access is found: it may still write."""
    memo = getattr(_shared, "memo", None)
    key = None if memo is None else _run_key(program, grid, args, memory, None)
    hit = None if key is None else _kept(memo, (*key, _layout(memory)), program)
    if hit is None or hit[2] is None:
        return False
    pcs = static_facts(program, get_machine(memory.machine))[0]
    return any(
        access is not None and lo <= access.lo < access.hi <= hi and pcs[pc].outbound
        for pc, _, _, access in hit[2].accesses
    )


def launch_mapping(program: Program, grid, args, memory: DeviceMemory, placement=None):
    """The grid -> core mapping an estimate of the launch with ``placement`` uses (the policy knob's,
    resolved over the placement asked about: ``_shadow``'s memory). The mapping reads of memory only the
    machine and the allocations the pointer arguments point into (sim/affinity.py ``launch_layout``,
    ``program_bytes``), so it is resolved over those alone (``_Placed``), each named one as ``_shadow``
    places it."""
    if not placement:
        return MAPPINGS.resolve(knobs.policy(), program, grid, args, memory)
    return MAPPINGS.resolve(knobs.policy(), program, grid, args, _Placed(memory, program, list(args), placement))


_PLACED: dict = {}  # (base, size, spec, id(machine)) -> (machine, the allocation so placed); a few kept


def placed_allocation(machine: Machine, rec, spec):
    """``rec`` with placement ``spec``, as ``_shadow`` places it (the same ``register``; kept for a few)."""
    key = (rec.base, rec.nbytes, str(spec), id(machine))
    made = _PLACED.get(key)
    if made is None or made[0] is not machine:
        if len(_PLACED) >= 64:
            _PLACED.clear()
        made = _PLACED[key] = (machine, DeviceMemory(machine).register(rec.base, rec.nbytes, spec))
    return made[1]


class _Placed:
    """The allocations a launch's pointer arguments point into, those ``placement`` names (argument name or
    index -> spec) placed as ``_shadow`` places them (the same ``register``): what ``launch_mapping``
    resolves the mapping over."""

    def __init__(self, memory: DeviceMemory, program: Program, args, placement):
        self.machine, self._memory = memory.machine, memory
        names = {a.name: i for i, a in enumerate(program.args)}
        self._moved = {}
        for key, spec in placement.items():
            rec = memory.holding(int(args[names.get(key, key)]))
            if rec is not None:
                self._moved[id(rec)] = self._moved_to(rec, spec)

    def _moved_to(self, rec, spec):
        return placed_allocation(self.machine, rec, spec)

    def holding(self, addr: int):
        rec = self._memory.holding(addr)
        return self._moved.get(id(rec), rec) if rec is not None else None


# ---- step 2: the aggregated model ----------------------------------------------------------------------


class _StepRates:
    """Transfer time of each flow of a DMA entry when the programs of one wave run it in LOCKSTEP
    (what level 1 sees when every core runs the same code): every resource on a flow's route
    carries the entry's bytes of THAT wave at its capacity, so a flow takes the longest of those
    phases on its route, and at least its bytes at its share of the engine. Waves are kept apart:
    the programs of one wave may all read the same domains (a GEMM's B interleaved with rows of two
    stripes: the first waves' column blocks live in domains 0 and 2, the later ones' in 1 and 3),
    and an average over the waves would spread their bytes over every domain."""

    def __init__(self, machine: Machine):
        self.machine, self.topo = machine, cost.topology(machine)
        self.routes = _routes(machine, self.topo)  # per direction: resources per (core domain, home)
        self.D, self.R = machine.total_domains, len(self.topo.capacity)
        self.cores_per_domain, self.engine = machine.domain.cores, float(machine.core.dma.bytes_per_cycle)
        self.inverse_capacity = np.append(1.0 / self.topo.capacity, 0.0)  # padding index R: no resource
        self.crosses = cost.route_incidence(machine)  # per direction: [route, resource], as resource_bytes

    def group(self, cores: np.ndarray, waves: np.ndarray) -> tuple:
        """What ``transfer`` needs of the programs of an entry (their cores and waves), computed once for
        every entry of the same programs."""
        D = self.D
        cd = cores // self.cores_per_domain
        wave_ids, w = np.unique(waves, return_inverse=True)
        at = (np.repeat(w, D), (cd[:, None] * D + np.arange(D)[None, :]).ravel())
        mine = (w[:, None], cd[:, None] * D + np.arange(D)[None, :])
        return cd, len(wave_ids), at, mine

    def transfer(self, bbd: np.ndarray, group: tuple, outbound: bool):
        """(transfer cycles, flight latency) per program of the entry (bbd [k, D] bytes by home;
        ``group``: ``self.group`` of the entry's programs' cores and waves, each program's wave its rank
        among the programs of its core)."""
        D = self.D
        cd, waves, at, mine_at = group
        pair = np.zeros((waves, D * D))
        np.add.at(pair, at, bbd.ravel())
        carried = pair @ self.crosses[int(outbound)]  # [wave, resource] bytes
        phase = np.zeros((waves, self.R + 1))
        phase[:, : self.R] = carried * self.inverse_capacity[: self.R]
        res, _, _, lat = self.routes[int(outbound)]
        route_time = phase[:, res].max(axis=2)  # [wave, core domain * D + home]
        has = bbd > 0
        flows = np.maximum(has.sum(axis=1), 1)[:, None]
        mine = route_time[mine_at]  # [k, home]
        t = np.where(has, np.maximum(mine, bbd * flows / self.engine), 0.0).max(axis=1)
        flight = np.where(has, lat.reshape(D, D)[cd], 0.0).max(axis=1)
        return t, flight, has.any(axis=1)


TRANSFER_KEY_BYTES = 16 << 10  # a DMA entry's bytes by home up to this size are a key of its transfer times


def _program_times(trace: Trace, machine: Machine, pcs, core_of, issues):
    """Each program alone from time 0 under level 1's engine rules, its transfers timed by
    ``_StepRates``: (occupancy of its DMA-in and compute engines, its end with every DMA complete,
    DMA-out busy). The walk is compiled (``_walk``) when built and ``COMPILED_WALK``, else numpy's."""
    n, prog = trace.num_programs, trace.program
    T, Q = max(len(prog.tiles), 1), static_facts(prog, machine)[1]
    depth = machine.core.dma.queue_depth
    state = _WalkState(
        eng=np.zeros((3, n)),
        ready=np.zeros((T, n)),  # per tile: its last write
        read=np.zeros((T, n)),  # its last read
        issued=np.zeros((3, n)),  # per DMA engine: its issue stage free at (cost.dma_stages)
        tok=np.zeros((Q, n)),
        done=np.zeros(n),
        out_busy=np.zeros(n),
        ring=np.zeros((2, depth, n)),  # per DMA queue: completion of its last ``depth`` DMAs
        nq=np.zeros((2, n), dtype=np.int64),  # DMAs issued
    )
    rates = _StepRates(machine)
    wave = program_waves(core_of)
    # id(entry.programs) -> (programs, ps, ix, rows, transfer group or None, transfer times by bytes)
    groups: dict[int, list] = {}

    def group_of(programs) -> list:
        g = groups.get(id(programs))
        if g is None or g[0] is not programs:
            ps = np.asarray(programs, dtype=np.int64)
            ix = slice(None) if len(ps) == n else ps
            g = groups[id(programs)] = [programs, ps, ix, np.arange(n)[ix], None, {}]
        return g

    def transfer_times(g: list, p, entry):
        """(transfer cycles, flight latency, moved) per program of a DMA entry; None if it moves no bytes."""
        bbd = entry.bytes_by_domain
        if bbd is None or not bbd.any():
            return None
        # the same programs moving the same bytes by home (a loop's trips): the same times, computed once
        key = (p.outbound, content(bbd)) if bbd.nbytes <= TRANSFER_KEY_BYTES else None
        times = None if key is None else g[5].get(key)
        if times is None:
            if g[4] is None:
                g[4] = rates.group(core_of[g[1]], wave[g[1]])
            times = rates.transfer(bbd, g[4], p.outbound)
            if key is not None:
                g[5][key] = times
        return times

    # a run of scalar entries of the same programs (ended by any other entry or another programs array):
    # their costs added in order (one add after another, as entry by entry). The runs are found over the
    # whole trace at once; the walk visits each run's first entry and every other entry.
    entries = trace.entries
    E = len(entries)
    pc_of = np.fromiter((e.pc for e in entries), np.int64, E)
    scalar = np.array([p.kind == "scalar" for p in pcs], bool)[pc_of]
    cost_of = np.array([p.cost if p.kind == "scalar" else 0.0 for p in pcs], np.float64)[pc_of]
    other = np.ones(E, bool)  # an entry that does not continue the scalar run before it
    if E > 1:
        other[1:] = ~scalar[:-1]
        other[1:] |= np.fromiter((a.programs is not b.programs for a, b in zip(entries[1:], entries)), bool, E - 1)
        other |= ~scalar
    firsts = np.flatnonzero(other)
    walk = _walk_compiled if COMPILED_WALK and _walk is not None and E else _walk_numpy
    walk(state, entries, pcs, pc_of, cost_of, firsts, issues, group_of, transfer_times)
    eng, done = state.eng, state.done
    occupancy = np.maximum(eng[0], eng[1])
    return occupancy, np.maximum(done, eng.max(axis=0)), state.out_busy


@dataclass
class _WalkState:
    """``_program_times``' state, per program (the last axis): engines free at (DMA-in, compute, DMA-out),
    tiles' last write and read, DMA tokens' completion, every DMA's completion, DMA-out busy cycles, the
    DMA queues' ring of completions and DMAs issued."""

    eng: np.ndarray
    ready: np.ndarray
    read: np.ndarray
    issued: np.ndarray
    tok: np.ndarray
    done: np.ndarray
    out_busy: np.ndarray
    ring: np.ndarray
    nq: np.ndarray


def _walk_numpy(st: _WalkState, entries, pcs, pc_of, cost_of, firsts, issues, group_of, transfer_times) -> None:
    """The walk in numpy, all programs of an entry at once: the reference of the compiled walk."""
    eng, ready, read, issued, tok, done = st.eng, st.ready, st.read, st.issued, st.tok, st.done
    out_busy, ring, nq, depth = st.out_busy, st.ring, st.nq, st.ring.shape[1]
    firsts = [*firsts.tolist(), len(entries)]

    def add_run(programs, i: int, j: int) -> None:
        ix = group_of(programs)[2]
        e1 = eng[1, ix]  # a view for all programs, else a copy written back
        if j - i == 1:
            e1 += cost_of[i]
        else:  # np.add.accumulate: one add after another, with one gather and scatter
            acc = np.empty((j - i + 1, e1.size))
            acc[0], acc[1:] = e1, cost_of[i:j, None]
            np.add.accumulate(acc, axis=0, out=acc)
            e1[...] = acc[-1]
        if not isinstance(ix, slice):
            eng[1, ix] = e1

    for f in range(len(firsts) - 1):
        i = firsts[f]
        entry = entries[i]
        p = pcs[entry.pc]
        if p.kind == "scalar":
            add_run(entry.programs, i, firsts[f + 1])
            continue
        g = group_of(entry.programs)
        ix = g[2]
        if p.kind == "wait":
            eng[1, ix] = np.maximum(eng[1, ix], tok[p.token, ix]) + p.cost
            continue
        if p.kind == "wait_all":
            eng[1, ix] = np.maximum(eng[1, ix], done[ix]) + p.cost
            continue
        if p.kind == "compute":
            start = eng[1, ix].copy()
            for t in p.after_write:
                np.maximum(start, ready[t, ix], out=start)
            for t in p.after_read:
                np.maximum(start, read[t, ix], out=start)
            end = start + p.cost
            eng[1, ix] = end
            for t in p.reads:
                read[t, ix] = np.maximum(read[t, ix], end)
            for t in p.writes:
                ready[t, ix] = np.maximum(ready[t, ix], end)
            continue
        k = p.engine // 2
        slot = nq[k, ix] % depth
        rows = g[3]
        start1 = np.maximum(eng[1, ix], ring[k, slot, rows])  # a full DMA queue stalls the stream
        eng[1, ix] = start1
        for t in p.after_write:
            np.maximum(start1, ready[t, ix], out=start1)
        for t in p.after_read:
            np.maximum(start1, read[t, ix], out=start1)
        moving = eng[p.engine, ix].copy()  # the previous transfer on this engine ends
        s, issued[p.engine, ix], a = cost.dma_stages(issued[p.engine, ix], moving, start1, issues[id(entry)])
        xe, comp = a, a
        times = transfer_times(g, p, entry)
        if times is not None:
            xfer, flight, moved = times
            xe = a + xfer
            comp = np.where(moved, xe + flight + p.extra_latency, a)
        eng[p.engine, ix] = xe
        if p.outbound:
            out_busy[ix] += xe - np.maximum(s, moving)  # busy while either stage is
        if p.token is not None:
            tok[p.token, ix] = comp
        done[ix] = np.maximum(done[ix], comp)
        ring[k, slot, rows] = comp
        nq[k, ix] += 1
        for t in p.reads:
            read[t, ix] = np.maximum(read[t, ix], xe)
        for t in p.writes:
            ready[t, ix] = np.maximum(ready[t, ix], comp)


_KIND_CODE = {"scalar": 0, "wait": 1, "wait_all": 2, "compute": 3, "dma": 4}  # sim/csrc/walk.cpp's Kind
_PC_TABLES: dict = {}  # id(pcs) -> (pcs, its tables): a program's static facts are one list while kept (replay.py)
_PC_TABLES_KEPT = 64


def _pc_tables(pcs) -> tuple:
    """The compiled walk's per-pc tables of ``pcs`` (int64 [kind, engine, token, outbound, 5 offsets into the
    tile dependencies], float64 [cost, extra latency], the dependencies, which pcs are DMAs), made once per
    ``pcs`` list: the planner's estimates of one launch (and the launches after it) walk the same facts."""
    hit = _PC_TABLES.get(id(pcs))
    if hit is not None and hit[0] is pcs and hit[1] == len(pcs):
        return hit[2]
    P = len(pcs)
    lists = [tiles for p in pcs for tiles in (p.after_write, p.after_read, p.reads, p.writes)]
    pc_int = np.empty((P, 9), np.int64)
    pc_int[:, 0] = [_KIND_CODE[p.kind] for p in pcs]
    pc_int[:, 1] = [p.engine for p in pcs]
    pc_int[:, 2] = [-1 if p.token is None else p.token for p in pcs]
    pc_int[:, 3] = [p.outbound for p in pcs]
    # per pc five offsets into deps: where its after_write, after_read, reads and writes start, and its end
    ends = np.zeros(4 * P + 1, np.int64)
    np.cumsum([len(tiles) for tiles in lists], out=ends[1:])
    pc_int[:, 4:8] = ends[:-1].reshape(P, 4)
    pc_int[:, 8] = ends[4::4]
    tables = (
        pc_int,
        np.array([(p.cost, p.extra_latency) for p in pcs], np.float64).reshape(P, 2),
        np.array([t for tiles in lists for t in tiles], np.int64),
        np.array([p.kind == "dma" for p in pcs], bool),
    )
    for t in tables:
        t.setflags(write=False)  # shared by every walk of these facts
    if len(_PC_TABLES) >= _PC_TABLES_KEPT:
        _PC_TABLES.clear()
    _PC_TABLES[id(pcs)] = (pcs, len(pcs), tables)
    return tables


def _walk_compiled(st: _WalkState, entries, pcs, pc_of, cost_of, firsts, issues, group_of, transfer_times) -> None:
    """The walk in C (sim/csrc/walk.cpp): the numpy walk's float operations, program by program in the
    same order, so the same bits. Here: its tables (per pc, per step, per programs array, per DMA step)."""
    pc_int, pc_f64, deps, is_dma = _pc_tables(pcs)
    S = len(firsts)
    steps = np.empty((S, 5), np.int64)
    steps[:, 0] = pc_of[firsts]
    steps[:, 1] = firsts
    steps[:-1, 2], steps[-1, 2] = firsts[1:], len(entries)
    # entries of one context share their programs array: one group each
    ids = np.fromiter((id(entries[i].programs) for i in firsts.tolist()), np.int64, S)
    _, first_of, steps[:, 3] = np.unique(ids, return_index=True, return_inverse=True)
    gs = [group_of(entries[i].programs) for i in firsts[first_of].tolist()]
    g_off = np.zeros(len(gs) + 1, np.int64)
    np.cumsum([len(g[1]) for g in gs], out=g_off[1:])
    g_ps = np.concatenate([g[1] for g in gs]).astype(np.int64, copy=False)
    steps[:, 4] = -1
    dma_steps = np.flatnonzero(is_dma[steps[:, 0]])
    steps[dma_steps, 4] = np.arange(len(dma_steps))
    dma_rows: list = []  # per DMA step: (its first issue, its first transfer time or -1)
    issue, xfer, flight, moved = [], [], [], []
    at_issue = at_times = 0
    first_entry, group = firsts.tolist(), steps[:, 3].tolist()  # Python ints: no numpy scalar per step
    for s in dma_steps.tolist():
        entry = entries[first_entry[s]]
        g = gs[group[s]]
        issue.append(issues[id(entry)])
        times = transfer_times(g, pcs[entry.pc], entry)
        dma_rows.append((at_issue, -1 if times is None else at_times))
        at_issue += len(g[1])
        if times is not None:
            xfer.append(times[0])
            flight.append(times[1])
            moved.append(times[2])
            at_times += len(g[1])
    dma = np.array(dma_rows, np.int64).reshape(len(dma_rows), 2)

    def flat(parts, dtype):
        return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)

    _walk.program_times(
        st.eng.shape[1],
        st.ring.shape[1],
        st.eng,
        st.ready,
        st.read,
        st.issued,
        st.tok,
        st.done,
        st.out_busy,
        st.ring,
        st.nq,
        pc_int,
        pc_f64,
        deps,
        steps,
        cost_of,
        g_off,
        g_ps,
        dma,
        flat(issue, np.float64),
        flat(xfer, np.float64),
        flat(flight, np.float64),
        flat(moved, np.uint8),
    )


def _core_times(trace: Trace, machine: Machine, pcs, core_of, issues) -> np.ndarray:
    """Per core: its programs one after another (their occupancy), then the last one's drain."""
    C, n = machine.total_cores, trace.num_programs
    occupancy, end, out_busy = _program_times(trace, machine, pcs, core_of, issues)
    per_core = np.bincount(core_of, weights=occupancy, minlength=C)
    last = np.full(C, -1, dtype=np.int64)
    np.maximum.at(last, core_of, np.arange(n))
    used = last >= 0
    per_core[used] += (end - occupancy)[last[used]]
    return np.maximum(per_core, np.bincount(core_of, weights=out_busy, minlength=C))


def model(trace: Trace, machine=None, *, policy=None, wall_s: float = 0.0) -> Estimate:
    """The aggregated timing model over a trace (module docstring, step 2)."""
    t0 = time.perf_counter()
    machine = get_machine(machine)
    policy = policy if policy is not None else knobs.policy()
    n = trace.num_programs
    m = mapped(trace, machine, policy)
    trace, core_of, pcs, issues, read, write, bound = m.trace, m.core_of, m.pcs, m.issues, m.read, m.write, m.bound
    per_pc = [p.flops for p in pcs]  # whole numbers: the sum of the nonzero terms is the same
    flops = float(sum(per_pc[e.pc] * len(e.programs) for e in trace.entries if per_pc[e.pc]))
    per_core = _core_times(trace, machine, pcs, core_of, issues)
    cycles = max(float(per_core.max(initial=0.0)), bound.cycles)
    kind = BOUND_NAMES.get(bound.binding, bound.binding) if cycles <= LATENCY_MARGIN * bound.cycles else "latency"
    ns = 1.0 / machine.clock_ghz
    return Estimate(
        time_ns=cycles * ns,
        bound=kind,
        level0_ns=bound.cycles * ns,
        read_bytes=read,
        write_bytes=write,
        flops=flops,
        num_programs=n,
        policy=policy if isinstance(policy, str) else "explicit",
        wall_s=wall_s + time.perf_counter() - t0,
        level0_terms={k: v * ns for k, v in bound.terms.items()},
    )


_shared = threading.local()  # .memo: the queries answered inside ``shared_estimates``, else absent


def shared_estimates() -> _SharedEstimates:
    """Inside the block, an estimate asked again with the same program, grid, arguments, policy and
    placement, over the same allocations and placements, is the first answer: a launch's preparation
    (the persistent gate, then the operand planner) asks for the same launch twice, and nothing
    writes device memory before it runs. No estimate may be asked in the block after memory was written
    (the launcher's block ends with the launch's run). A small launch's placement whose model input is
    one already modeled in the block gets that estimate without the model (``_modeled_alike``)."""
    return _SharedEstimates()


class _SharedEstimates:
    """``shared_estimates``' block (a class, not a generator's context manager: every launch enters one)."""

    __slots__ = ("outer",)

    def __enter__(self) -> None:
        self.outer = outer = getattr(_shared, "memo", None)
        _shared.memo = {} if outer is None else outer

    def __exit__(self, *exc) -> None:
        _shared.memo = self.outer


def _memo_key(program, grid, args, memory, machine, policy, placement, *, layout: bool = True):
    if not (policy is None or isinstance(policy, str)):
        return None
    g = (grid,) if isinstance(grid, (int, np.integer)) else tuple(grid)
    try:
        key = (
            id(program),
            tuple(int(v) for v in g),
            tuple(args),
            id(memory),
            id(get_machine(machine if machine is not None else memory.machine)),
            policy if policy is not None else knobs.policy(),
            None if not placement else tuple(sorted(placement.items(), key=repr)),
            _layout(memory) if layout else (),
        )
        hash(key)
    except TypeError:  # an argument without a value to compare (a tensor): asked afresh
        return None
    return key


def estimate_launch(
    program: Program, grid, args, memory: DeviceMemory, machine=None, *, policy=None, placement=None
) -> Estimate:
    """Estimate one launch of ``program`` over ``grid`` with runtime ``args`` (Program.args order,
    pointers as device addresses) on ``memory``, without running it (module docstring)."""
    memo = getattr(_shared, "memo", None)
    key = None if memo is None else _memo_key(program, grid, args, memory, machine, policy, placement)
    if key is None:
        return _estimate_launch(program, grid, args, memory, machine, policy=policy, placement=placement)
    hit = memo.get(key)
    if hit is None or hit[0] is not program:
        hit = memo[key] = (
            program,
            _estimate_launch(program, grid, args, memory, machine, policy=policy, placement=placement),
        )
    return hit[1]


def replica_writes(program: Program, grid, args, memory: DeviceMemory, *, placement=None) -> float:
    """Bytes the launch writes (stores and atomics) into replicated memory over ``memory`` with
    ``placement``: its address-only trace's replica column (memory.DeviceMemory.traffic_columns) on
    outbound entries, from the trace ``estimate_launch`` of the same query models (inside
    ``shared_estimates``, the block's one run re-priced), without the model. ``fold_replicas`` writes
    each of those bytes to every domain of chip 0 and moves nothing else, so between two placements
    that differ in one operand replicated or not, the estimates' total written bytes differ by
    (domains - 1) times the difference of this count: the operand planner tells a written operand's
    replica from it before pricing one (sim/operands.py)."""
    machine = get_machine(memory.machine)
    shadow = _kept_shadow(memory, program, list(args), placement)
    trace = _launch_trace(program, grid, args, memory, shadow, machine, placement)
    D = machine.total_domains
    rows = [e for e in trace.entries if e.bytes_by_domain is not None and e.bytes_by_domain.shape[1] > D]
    if not rows:  # no replica column: the memory holds no replicated allocation
        return 0.0
    pcs = static_facts(trace.program, machine)[0]
    return float(sum(e.bytes_by_domain[:, D].sum() for e in rows if pcs[e.pc].outbound))


def _estimate_launch(
    program: Program, grid, args, memory: DeviceMemory, machine=None, *, policy=None, placement=None
) -> Estimate:
    t0 = time.perf_counter()
    machine = get_machine(machine if machine is not None else memory.machine)
    shadow = _kept_shadow(memory, program, list(args), placement)  # the mapping follows the placement asked about
    trace = _launch_trace(program, grid, args, memory, shadow, machine, placement)
    resolved = MAPPINGS.resolve(policy if policy is not None else knobs.policy(), program, grid, args, shadow)
    alike, keep, mine = None, None, None
    if policy is None or isinstance(policy, str):  # a callable or explicit one: asked afresh, as the memo does
        alike, keep, mine = _modeled_alike(program, grid, args, memory, machine, trace, resolved)
    if alike is not None:
        est = dataclasses.replace(alike, wall_s=time.perf_counter() - t0)
    else:
        est = model(trace, machine, policy=resolved, wall_s=time.perf_counter() - t0)
        if keep is not None:
            keep.append((mine if mine is not None else _model_input(trace, machine, resolved), est))
    pointers = tuple(int(v) for a, v in zip(program.args, args) if a.type == "ptr")
    return dataclasses.replace(est, kernel=program.name, launch_key=(program.name, pointers))


MODEL_INPUT_ENTRIES = 4096  # traces of at most this many entries are compared (a small launch's)


def _model_input(trace: Trace, machine: Machine, policy) -> tuple:
    """What ``model`` reads of a launch (``timing.mapped``): the core of each program, and the trace with
    its replica column folded by them; with the machine and the policy's kind, its answer follows."""
    core_of = map_programs(policy, trace.num_programs, machine)
    return core_of, fold_replicas(trace, machine, core_of, static_facts(trace.program, machine)[0])


def _same_array(a, b) -> bool:
    if a is b:
        return True
    if a is None or b is None:
        return False
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


def _same_input(x: tuple, y: tuple) -> bool:
    """Whether two ``_model_input`` are equal, entry by entry and bit for bit (arrays the same object
    where a re-priced trace kept the run's own rows)."""
    if not _same_array(x[0], y[0]):
        return False
    a, b = x[1].entries, y[1].entries
    if x[1].program is not y[1].program or x[1].grid != y[1].grid or len(a) != len(b):
        return False
    for e, f in zip(a, b):
        if e is f:
            continue
        if e.pc != f.pc or not _same_array(e.programs, f.programs):
            return False
        if not (
            _same_array(e.bytes_by_domain, f.bytes_by_domain)
            and _same_array(e.elements, f.elements)
            and _same_array(e.runs, f.runs)
        ):
            return False
    return True


def _modeled_alike(program, grid, args, memory, machine, trace, policy) -> tuple:
    """Inside ``shared_estimates`` (else Nones): (the estimate of a placement of this launch already modeled
    whose model input is this one's (``_model_input``), or None; the list to keep this one's in, or None;
    this one's model input, where computed). A placement that moves only bytes every program reading them
    reads in its own domain anyway (a replica of an operand homed whole in the domain the launch runs it
    in) changes nothing ``model`` reads: its answer is the other's, bit for bit."""
    memo = getattr(_shared, "memo", None)
    if memo is None or len(trace.entries) > MODEL_INPUT_ENTRIES:
        return None, None, None
    key = _memo_key(program, grid, args, memory, machine, "", None, layout=False)
    if key is None:
        return None, None, None
    key = ("modeled", *key, policy if isinstance(policy, str) else "explicit")
    kept = memo.get(key)
    if kept is None or kept[0] is not program:
        kept = memo[key] = (program, [])
        return None, kept[1], None
    mine = _model_input(trace, machine, policy)
    return next((est for inp, est in kept[1] if _same_input(mine, inp)), None), kept[1], mine
