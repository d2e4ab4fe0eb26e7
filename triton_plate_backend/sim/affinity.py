"""Grid -> core mapping from the compiled kernel's footprint and the home domains of its arguments.

At launch the footprint (isa/footprint.py, written by the compiler's affinity pass) is evaluated
for every program of the grid at once (numpy over the programs) with the actual argument values:
each pointer argument's byte range per program, clipped to the allocation the argument points
into, split over that allocation's home domains (``Allocation.split``) and scaled to the bytes the
program moves through it. That gives ``bytes[program, home domain]``.

Assignment (``assign``):
1. each program goes to the domain that homes most of its located bytes (the bytes of gathers and
   atomics, ``argK[:]`` / ``any[:]``, count as work spread over their memory's domains);
2. while the most loaded domain is above the mean, programs move to the least loaded one if the
   cost model's level-0 bound of the launch (cost.level0_bound: per-core DMA time, HBM, die links)
   says the move pays, or costs nothing and loses no local byte (a program homed evenly in two
   domains); moves go in batches, so a launch of millions of programs takes few rounds;
3. inside a domain, programs are dealt round robin over its cores in program id order.

A program that moves no bytes stays where the default mapping puts it relative to its domain
(its domain is chosen like ``domain_aligned``). When the kernel has no footprint, or the grid
touches no memory the device knows, or its located bytes are under LOCATED_MIN_SHARE of the bytes
it moves, ``core_mapping`` returns None and the launch keeps the default policy.
"""

from __future__ import annotations

import numpy as np

from .. import cost
from ..isa.footprint import FootprintError
from ..machine import Machine
from .footprints import launch_footprints
from .memory import DeviceMemory, argument_types, held_by_argument, pointer_positions
from .timing import CoreMapping

MAX_ROUNDS = 64  # balancing rounds; each moves a batch of programs
# Steer only when the located bytes are at least this share of all the launch moves: a kernel whose
# bytes are mostly gathered (the tutorial matmul's %-wrapped A and B tiles) keeps the default mapping,
# since where most of its bytes live is data (measured: 1024^3 bf16 matmul, blocked operands, 1018 us
# steered by C's tile against 871 us round robin).
LOCATED_MIN_SHARE = 0.5


def program_bytes(program, grid, args, memory: DeviceMemory) -> tuple[np.ndarray, np.ndarray] | None:
    """(located, spread): float64 [programs, domains], the bytes each program moves per home domain
    through located ranges, and through gathers and atomics (spread over their memory's domains);
    None if the kernel's footprint cannot tell."""
    launch = launch_footprints(program, grid, args)
    if launch is None:
        return None
    if launch.programs == 1:
        return _one_program_bytes(program, args, memory, launch)
    return _program_bytes(program, args, memory, launch)


def _program_bytes(program, args, memory: DeviceMemory, launch) -> tuple[np.ndarray, np.ndarray] | None:
    """``program_bytes`` over the launch's programs at once (numpy over the programs)."""
    params = program.args
    P = launch.programs
    located = np.zeros((P, memory.machine.total_domains))
    spread = np.zeros_like(located)
    if P == 0:
        return None
    chip0 = memory.machine.domains
    for fp in launch.footprints:
        try:
            nbytes = launch.value(fp.nbytes).astype(np.float64)
        except FootprintError:
            return None
        if fp.arg < 0:  # somewhere in device memory: spread over the chip's domains
            spread[:, :chip0] += nbytes[:, None] / chip0
            continue
        if fp.arg >= len(params) or params[fp.arg].type != "ptr":
            return None
        base = int(args[fp.arg])
        rec = memory.holding(base)
        if rec is None:
            continue  # not device memory the allocation table knows (a null or freed pointer): no pull
        if rec.replicas:  # a copy in every domain: local wherever the program runs, so it steers nothing
            continue
        if fp.lo is None:  # somewhere in this allocation: its bytes in proportion to the homes' shares
            lo, hi = np.zeros(P, np.int64), np.full(P, rec.nbytes, np.int64)
        else:
            try:
                lo = launch.value(fp.lo) + (base - rec.base)
                hi = launch.value(fp.hi) + (base - rec.base)
            except FootprintError:
                return None
            lo, hi = np.clip(lo, 0, rec.nbytes), np.clip(hi, 0, rec.nbytes)
        split = rec.split(lo, np.maximum(hi, lo))  # [P, owners]
        span = split.sum(axis=1)
        scale = np.divide(nbytes, span, out=np.zeros(P), where=span > 0)
        out = spread if fp.lo is None else located
        for j, d in enumerate(rec.owners):  # an owner may repeat (explicit domain lists)
            out[:, d] += split[:, j] * scale
    return located, spread


_EXACT = 1 << 62  # offsets within this bound: the int64 arithmetic of _program_bytes cannot wrap


def _one_program_bytes(program, args, memory: DeviceMemory, launch) -> tuple[np.ndarray, np.ndarray] | None:
    """``_program_bytes`` of a one-program launch (most of a test suite's), in Python numbers: the same
    operations in the same order on the same values (byte counts are integers, exact in float64, so a
    range's bytes sum to the same span in any order), without a dozen numpy calls per footprint on
    1-element arrays. Offsets past ``_EXACT`` take the numpy path (its int64 arithmetic is what counts)."""
    params = program.args
    D = memory.machine.total_domains
    located, spread = [0.0] * D, [0.0] * D
    chip0 = memory.machine.domains
    for fp in launch.footprints:
        try:
            nbytes = float(launch.one(fp.nbytes))
        except FootprintError:
            return None
        if fp.arg < 0:  # somewhere in device memory: spread over the chip's domains
            share = nbytes / chip0
            for d in range(chip0):
                spread[d] += share
            continue
        if fp.arg >= len(params) or params[fp.arg].type != "ptr":
            return None
        base = int(args[fp.arg])
        rec = memory.holding(base)
        if rec is None or rec.replicas:  # unknown memory, or a copy in every domain: no pull
            continue
        if fp.lo is None:  # somewhere in this allocation: its bytes in proportion to the homes' shares
            lo, hi = 0, rec.nbytes
        else:
            try:
                lo = launch.one(fp.lo) + (base - rec.base)
                hi = launch.one(fp.hi) + (base - rec.base)
            except FootprintError:
                return None
            if not (-_EXACT < lo < _EXACT and -_EXACT < hi < _EXACT):
                return _program_bytes(program, args, memory, launch)
            lo, hi = min(max(lo, 0), rec.nbytes), min(max(hi, 0), rec.nbytes)
        split = rec.split_one(lo, max(hi, lo))
        span = sum(split)
        scale = nbytes / span if span > 0 else 0.0
        out = spread if fp.lo is None else located
        for j, d in enumerate(rec.owners):  # an owner may repeat (explicit domain lists)
            out[d] += split[j] * scale
    return np.array([located]), np.array([spread])


def _launch_bound(machine: Machine, by_domain: np.ndarray, dom: np.ndarray) -> float:
    """Level-0 cycles of the programs placed on domains ``dom`` (cores of a domain share its programs evenly)."""
    D = machine.total_domains
    read = np.zeros((D, D))
    np.add.at(read, dom, by_domain)
    per_core = read.sum(axis=1) / machine.domain.cores / machine.core.dma.bytes_per_cycle
    return cost.level0_bound(machine, dma_engine_cycles=per_core, read_bytes=read).cycles


def assign(machine: Machine, by_domain: np.ndarray, spread: np.ndarray | None = None) -> np.ndarray:
    """Core per program from located bytes[program, home domain] and the ``spread`` bytes of its
    gathers and atomics (module docstring).

    One program with located bytes, all of whose bytes are homed in domain 0 (a test's small launch
    over small tensors), runs on core 0 without balancing: it starts in domain 0 (all its located bytes
    are there), and the one move balancing would try, to another domain, reads the same bytes through
    the same HBM plus links (every level-0 term the same or larger) and loses local bytes, so it is
    never taken (``_assign``, the full computation, gives the same; tests/test_affinity.py)."""
    total = by_domain if spread is None else by_domain + spread
    if by_domain.shape[0] == 1 and by_domain[0, 0] > 0 and not total[0, 1:].any():
        return np.zeros(1, dtype=np.int64)
    return _assign(machine, by_domain, total)


def _assign(machine: Machine, by_domain: np.ndarray, total: np.ndarray) -> np.ndarray:
    """``assign`` over every program, ``total`` = located + spread bytes."""
    P, D = by_domain.shape
    located = by_domain.sum(axis=1)
    default_dom = np.arange(P, dtype=np.int64) * machine.domains // max(P, 1)
    # ties (a program homed evenly in several domains) go to the program-id order's domain among them
    nudge = np.zeros_like(by_domain)
    nudge[np.arange(P), default_dom] = 1e-9 * located
    dom = np.where(located > 0, (by_domain + nudge).argmax(axis=1), default_dom)
    # balance: move programs from the busiest domain to the idlest while the level-0 bound drops
    moved = total.sum(axis=1)
    work = np.where(moved > 0, moved, 1.0)
    best = _launch_bound(machine, total, dom)
    # each round's move is a function of the mapping alone (best is its bound): a mapping seen before
    # repeats the rounds after it, up to MAX_ROUNDS (a program homed evenly across domains moves back and
    # forth at an unchanged bound), so the mapping the last round leaves is found without running them
    states, seen = [dom], {dom.tobytes(): 0}
    for i in range(MAX_ROUNDS):
        load = np.bincount(dom, weights=work, minlength=D)
        hi, lo = int(load.argmax()), int(load.argmin())
        excess = (load[hi] - load.mean()) / 2
        if hi == lo or excess <= 0:
            break
        cand = np.nonzero(dom == hi)[0]
        # the programs that lose least by moving: most bytes homed in the target domain, then the last ids
        order = np.lexsort((-cand, -(by_domain[cand, lo] - by_domain[cand, hi])))
        take = cand[order[: max(1, int(np.searchsorted(np.cumsum(work[cand[order]]), excess)))]]
        trial = dom.copy()
        trial[take] = lo
        bound = _launch_bound(machine, total, trial)
        free = bool(np.all(by_domain[take, lo] >= by_domain[take, hi]))  # no local byte lost: a tie broken
        if bound > best or (bound == best and not free):
            break
        dom, best = trial, bound
        j = seen.get(dom.tobytes())
        if j is not None:  # the mapping after round i is the one after round j - 1: a cycle of i + 1 - j rounds
            dom = states[j + (MAX_ROUNDS - j) % (i + 1 - j)]
            break
        seen[dom.tobytes()] = i + 1
        states.append(dom)
    # round robin over each domain's cores, in program id order
    order = np.argsort(dom, kind="stable")
    first = np.searchsorted(dom[order], dom[order])
    rank = np.empty(P, dtype=np.int64)
    rank[order] = np.arange(P) - first
    return dom * machine.domain.cores + rank % machine.domain.cores


def domain_runs(cores: np.ndarray, machine: Machine) -> list[int] | None:
    """The first program of each run of consecutive programs that a mapping (core per program) puts in
    one domain, in program order; None when a domain's programs are not one run or the runs outnumber
    the domains (a persistent kernel's launched programs each run one run's share: launcher.py)."""
    dom = np.asarray(cores, dtype=np.int64) // machine.domain.cores
    starts = np.flatnonzero(np.diff(dom, prepend=-1))
    if len(starts) > machine.total_domains or len(set(dom[starts].tolist())) < len(starts):
        return None
    return starts.tolist()


AFFINITY = "affinity"  # the policy that maps programs by the compiled kernel's footprint
FALLBACK_POLICY = "round_robin"  # where the footprint cannot tell


def resolve_policy(policy, program, grid, args, memory: DeviceMemory):
    """``policy`` as the timing model takes it: ``affinity`` becomes this launch's CoreMapping (or the
    fallback policy); any other policy is returned as it is."""
    if isinstance(policy, str) and policy == AFFINITY:
        return core_mapping(program, grid, args, memory) or FALLBACK_POLICY
    return policy


def launch_layout(program, grid, args, memory: DeviceMemory) -> tuple[tuple, list]:
    """(key, allocations): what a launch's footprint-derived answers (its affinity mapping, the operand
    planner's shared operands) depend on besides the footprint, and the allocation each pointer argument
    points into (None for other arguments). The footprint's values depend on the program, the grid and
    the integer arguments (sim/footprints.py); each pointer's bytes are read relative to its allocation
    (an offset in it, clipped to its size, split over its homes: ``Allocation.split``), so the key holds
    each pointer's offset and its allocation's size, placement, homes, stripes and replicas, not its
    address: a launch repeated over fresh allocations of the same layout (a test's eager ops on new
    tensors) finds the answer of the first. Of the program it holds what those answers read of it, its
    footprint text and its arguments' types, not the program itself: a fresh kernel compiled to the same
    footprint (a test's next parameters: another dtype, constant or operator) finds them too."""
    recs = held_by_argument(program, args, memory)
    layout = list(args[: len(recs)])  # the other arguments as they are
    for i in pointer_positions(program):
        if i < len(recs):
            v, r = args[i], recs[i]
            if r is None:
                layout[i] = ("-", v)
            else:
                layout[i] = (int(v) - r.base, r.nbytes, str(r.placement), r.owners, r.striped, r.granule, r.replicas)
    key = (program.affinity, argument_types(program), tuple(map(int, grid)), tuple(layout), id(memory.machine))
    return key, recs


class KeptMappings:
    """``resolve_policy`` answers, kept for repeated launches: per footprint, grid, arguments and the layout of
    the allocations its pointer arguments point into (``launch_layout``), so a launch repeated over the
    same layout evaluates no footprint. One is shared by the devices and the cost model's estimates
    (``MAPPINGS``: the operand planner prices a launch with its mapping, then the launch runs with the same
    one); up to MAX_KEPT, then forgotten all at once, and at every ``reset_device``."""

    MAX_KEPT = 1024

    def __init__(self):
        self._kept: dict[tuple, tuple] = {}

    def clear(self) -> None:
        self._kept.clear()

    def resolve(self, policy, program, grid, args, memory: DeviceMemory):
        if not (isinstance(policy, str) and policy == AFFINITY):
            return policy
        key, _ = launch_layout(program, grid, args, memory)
        hit = self._kept.get(key)
        # the key holds id(machine): an id is reused once its object is freed
        if hit is None or hit[0] is not memory.machine:
            if len(self._kept) >= self.MAX_KEPT:
                self._kept.clear()
            hit = self._kept[key] = (memory.machine, resolve_policy(policy, program, grid, args, memory))
        return hit[1]


MAPPINGS = KeptMappings()


def core_mapping(program, grid, args, memory: DeviceMemory) -> CoreMapping | None:
    """The affinity mapping of one launch, or None when the kernel's footprint cannot tell."""
    machine = memory.machine
    found = program_bytes(program, grid, args, memory)
    if found is None or found[0].sum() <= 0 or found[0].sum() < LOCATED_MIN_SHARE * (found[0].sum() + found[1].sum()):
        return None
    return CoreMapping.of("affinity", assign(machine, *found))
