"""Level-1 timing (PLATE.md "Cost model levels"): replay a Trace on the machine's engines and links.

The exact rules and approximations:

- Grid -> cores: ``POLICIES[name](num_programs, machine) -> core per program`` (``round_robin``
  default, ``blocked``, ``domain_aligned``), or an explicit mapping array, a named ``CoreMapping``
  (the launch's ``affinity``, sim/affinity.py), or a callable. Programs
  on one core run one after another in increasing program id; a core's domain is
  ``machine.core_domain(core)``.
- Per core three in-order engines: DMA-in, compute (scalar, vector, matrix and sync rows) and
  DMA-out (``dma.store``, ``dma.scatter``, ``atom.*``). An instruction starts at max(its engine's
  free time, the ready time of its inputs). Tiles are SRAM ranges: writing tile t waits for the
  last read (WAR) and the last write (WAW) of every tile overlapping t (from ``Tile.span()``);
  reading t waits for the last write of every tile overlapping t (RAW). Reads and writes are
  recorded on the tiles an instruction names, so two DMAs into disjoint tiles that one larger
  tile overlaps (an epilogue tile sharing SRAM with the K loop's staging tiles) do not wait for
  each other. Compute instructions take their cost rule's cycles.
- Scalar registers are ready at the compute engine's time: a DMA issues no earlier than the
  compute engine has reached it in program order. The DMA queue holds ``queue_depth`` DMAs per
  engine: the instruction stream (compute engine) stalls until the DMA ``queue_depth`` back on the
  same engine completes. ``dma.wait q`` waits for the DMA that defined q; ``fence``/``barrier``
  wait for every DMA the core issued so far. Sync rows cost 1 cycle on the compute engine.
- Replicated memory (sim/memory.py): the executor counts its bytes in a last column of each
  entry's bytes by home domain; ``fold_replicas`` homes them once programs have cores: a read in
  the reader's own domain (its copy), a write in every domain of chip 0 (each copy is updated).
- A DMA engine is two stages in program order (``cost.dma_stages``): a DMA issues (its cost rule's
  cycles) once the engine has issued the previous DMA and its inputs are ready, and moves its bytes
  once issued and the previous transfer has left the engine, so a queued DMA issues while the one
  before it transfers. A DMA completes at its transfer end + flight latency
  (``cost.flight_latency``: HBM latency + die crossings (+ chip hops), the max over the home
  domains it touches; atomics pay the HBM latency twice, a read-modify-write round trip). A
  load's tile is ready at completion; a store's tile is free again (WAR) when its transfer ends.
- Bandwidth (``sim/bandwidth.py``): each (DMA, home domain) pair is a flow over shared resources
  (the home HBM at ``hbm_bytes_per_cycle * hbm_efficiency``, the directed die/chip links home ->
  core for reads and core -> home for writes); the flows of one DMA split its engine's
  ``dma.bytes_per_cycle`` evenly, and no flow runs faster than its slowest resource. Shared
  resources keep a CALENDAR of bytes per time bucket (``bucket_cycles``, automatic: about an eighth
  of a DMA's share of the level-0 time): a resource never carries more than capacity * bucket in
  a bucket, nor more than capacity * the active part of a bucket a step's flows start in.
- Within one step (one instruction across the cores of one wave, see below) the flows are
  allocated together: in every bucket they share the calendar's residual capacity max-min fairly
  (progressive filling, vectorised over buckets), recomputed once without the flows that finish
  early. Flows of steps processed earlier keep their bytes (FIFO between steps, fair within a
  step); a later flow still fills any gap an earlier one left. Inside its last bucket a flow
  finishes at its fair rate, but never before that bucket's committed bytes on its resources
  could have drained; with the capacity rule this keeps level 1 >= level 0 exactly.
- Approximations: bucket granularity (sharing is per bucket, not per cycle); FIFO priority
  between steps (a later-processed flow may wait behind one that physically started after it);
  an even engine split among the flows of one DMA; no SRAM bank conflicts, NoC hops inside a
  domain, HBM page effects or link-engine collectives (chip links are plain shared resources).
- Processing order: in WAVES (wave w = the w-th program of every core), and inside a wave trace
  entry by trace entry, vectorised across cores with numpy (``sim/replay.py``). Runs of
  scalar-only entries executed by the same programs are merged (unless events are collected).
- Total cycles = the last engine end or DMA completion over all cores.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .. import cost
from ..errors import SimulatorError
from ..machine import Machine, get_machine
from .profile import Profile
from .replay import Pc, merged_steps, replay, static_facts
from .trace import Trace, TraceEntry, content

# ---- grid -> core policies -----------------------------------------------------------------------


def _round_robin(n: int, machine: Machine) -> np.ndarray:
    return np.arange(n, dtype=np.int64) % machine.total_cores


def _blocked(n: int, machine: Machine) -> np.ndarray:
    return np.arange(n, dtype=np.int64) * machine.total_cores // max(n, 1)


def _domain_aligned(n: int, machine: Machine) -> np.ndarray:
    """Contiguous program ranges per domain (matching ``blocked`` placement), round-robin inside it."""
    pid = np.arange(n, dtype=np.int64)
    dom = pid * machine.total_domains // max(n, 1)
    first = np.searchsorted(dom, dom)  # first program of each program's domain block
    return dom * machine.domain.cores + (pid - first) % machine.domain.cores


@dataclass(frozen=True)
class CoreMapping:
    """An explicit core per program with the name the profile reports (``affinity``: sim/affinity.py).
    Hashable, so the clock can key repeated launches by it."""

    name: str
    cores: bytes  # int64 core per program

    @classmethod
    def of(cls, name: str, cores) -> CoreMapping:
        return cls(name, np.ascontiguousarray(cores, dtype=np.int64).tobytes())

    def array(self) -> np.ndarray:
        return np.frombuffer(self.cores, dtype=np.int64)


def policy_name(policy) -> str:
    """What a profile calls a grid -> core policy."""
    if isinstance(policy, str):
        return policy
    return policy.name if isinstance(policy, CoreMapping) else "explicit"


POLICIES: dict[str, Callable[[int, Machine], np.ndarray]] = {
    "round_robin": _round_robin,
    "blocked": _blocked,
    "domain_aligned": _domain_aligned,
}


def map_programs(policy, num_programs: int, machine: Machine) -> np.ndarray:
    """Core index per program: a POLICIES name, a callable(num_programs, machine), a CoreMapping or an
    explicit array."""
    if isinstance(policy, CoreMapping):
        cores = policy.array()
    elif isinstance(policy, str):
        if policy not in POLICIES:
            raise SimulatorError(
                f"unknown grid->core policy {policy!r}; known: {', '.join(POLICIES)} "
                "or pass an explicit core-per-program array (PLATE_POLICY=affinity is resolved by the launch, "
                "sim.device.Device.launch, from the kernel's footprint)"
            )
        cores = POLICIES[policy](num_programs, machine)
    elif callable(policy):
        cores = policy(num_programs, machine)
    else:
        cores = policy
    cores = np.asarray(cores, dtype=np.int64).reshape(-1)
    if cores.size != num_programs or (cores.size and (cores.min() < 0 or cores.max() >= machine.total_cores)):
        raise SimulatorError(
            f"grid->core mapping must give one core in [0, {machine.total_cores}) per program "
            f"({num_programs} programs); got {cores.size} values in "
            f"[{cores.min(initial=0)}, {cores.max(initial=0)}]"
        )
    return cores


# ---- level 0 and the entry point ----------------------------------------------------------------------


def fold_replicas(trace: Trace, machine: Machine, core_of: np.ndarray, pcs: list[Pc]) -> Trace:
    """``trace`` with each entry's bytes by home domain cut to the machine's domains: the replica column
    (memory.DeviceMemory.traffic_columns) goes to the program's core domain for a read and to every
    domain of chip 0 for a write or an atomic (a write updates every copy)."""
    D = machine.total_domains
    entries, done = [], {}
    keep = entries.append
    for e in trace.entries:
        bbd = e.bytes_by_domain
        if bbd is None or bbd.shape[1] == D:  # most entries (every scalar one): one test, one append
            keep(e)
            continue
        key = (id(bbd), id(e.programs), pcs[e.pc].outbound)
        new = done.get(key)
        if new is None:
            rep, new = bbd[:, D], bbd[:, :D]
            if rep.any():
                new = new.copy()
                if pcs[e.pc].outbound:
                    new[:, : machine.domains] += rep[:, None]
                else:
                    progs = np.asarray(e.programs, dtype=np.int64)
                    np.add.at(new, (np.arange(len(progs)), core_of[progs] // machine.domain.cores), rep)
            done[key] = new
        entries.append(TraceEntry(e.pc, e.programs, new, e.elements, e.runs))
    return Trace(trace.program, trace.grid, entries)


def _issues(machine: Machine, trace: Trace, pcs: list[Pc]) -> dict:
    """Issue cycles per DMA entry (by id), one per program. A loop's trips issue the same DMA over the same
    runs and elements: computed once per (pc, programs, runs, elements), the array shared (read-only)."""
    out, kept = {}, {}
    for e in trace.entries:
        if pcs[e.pc].kind != "dma":
            continue
        n, runs, elements = len(e.programs), e.runs, e.elements
        key = None
        if (0 if runs is None else runs.nbytes) + (0 if elements is None else elements.nbytes) <= KEY_BYTES:
            key = (e.pc, n, content(runs), content(elements))
        issue = None if key is None else kept.get(key)
        if issue is None:
            issue = _issue(machine, trace, e, n)
            if key is not None:
                issue.setflags(write=False)  # shared by the entries of the key: nothing may write it
                kept[key] = issue
        out[id(e)] = issue
    return out


def _issue(machine: Machine, trace: Trace, entry, n: int) -> np.ndarray:
    """Issue cycles of a DMA entry, one per program."""
    dyn = {"runs": entry.runs, "elements": entry.elements}
    issue = np.asarray(cost.inst_cost(machine, trace.program.instrs[entry.pc], trace.program, **dyn), dtype=np.float64)
    return issue if issue.shape == (n,) else np.broadcast_to(issue, (n,))  # already one per program: as it is


def _add_cost(compute: dict, programs, total: float) -> None:
    acc = compute.get(id(programs))
    if acc is None:
        compute[id(programs)] = [programs, total]
    else:
        acc[1] += total


KEY_BYTES = 16 << 10  # a DMA entry's arrays up to this size are a key of what is computed from them


def _aggregate(trace: Trace, machine: Machine, core_of: np.ndarray, pcs: list[Pc], issues: dict):
    """Per-core compute and DMA-engine cycles and the byte matrices: the level-0 inputs."""
    C, D = machine.total_cores, machine.total_domains
    comp, issued, moved = np.zeros(C), np.zeros((2, C)), np.zeros((2, C))  # per DMA engine: stage cycles
    read, write = np.zeros((D, D)), np.zeros((D, D))
    rate = machine.core.dma.bytes_per_cycle
    compute = {}  # id(programs) -> [programs, summed cost]: entries of one context share the array
    # (programs array, issue cycles, bytes by home) -> a DMA entry's terms: a loop's trips repeat them.
    # Each entry's terms are still added to the totals one entry after another (the same float adds)
    terms_of = {}
    dma = [p.kind == "dma" for p in pcs]
    costs = [p.cost for p in pcs]
    # consecutive non-DMA entries of one programs array (a basic block's scalar and compute rows) are
    # summed in a local before they meet the table: costs are whole cycles, exact in any grouping
    run_of, run = None, 0.0
    for entry in trace.entries:
        pc = entry.pc
        if not dma[pc]:
            if entry.programs is run_of:
                run += costs[pc]
                continue
            if run_of is not None:
                _add_cost(compute, run_of, run)
            run_of, run = entry.programs, costs[pc]
            continue
        p = pcs[pc]
        issue, raw = issues[id(entry)], entry.bytes_by_domain
        key = None
        if issue.nbytes + (0 if raw is None else raw.nbytes) <= KEY_BYTES:
            key = (id(entry.programs), id(issue), content(raw))  # (the issues dict holds every issue array)
        terms = None if key is None else terms_of.get(key)
        if terms is None:
            cs = core_of[np.asarray(entry.programs, dtype=np.int64)]
            bbd = raw if raw is not None else np.zeros((len(cs), D))
            onehot = np.zeros((D, len(cs)))
            onehot[cs // machine.domain.cores, np.arange(len(cs))] = 1.0
            terms = (
                np.bincount(cs, weights=issue, minlength=C),
                np.bincount(cs, weights=bbd.sum(axis=1) / rate, minlength=C),
                onehot @ bbd,
            )
            if key is not None:
                terms_of[key] = terms
        issued[p.engine // 2] += terms[0]
        moved[p.engine // 2] += terms[1]
        mat = write if p.outbound else read
        mat += terms[2]
    if run_of is not None:
        _add_cost(compute, run_of, run)
    for progs, total in compute.values():  # costs are whole cycles: the sums are exact in any order
        comp += np.bincount(core_of[np.asarray(progs, dtype=np.int64)], minlength=C) * total
    return comp, cost.dma_engine_bound(issued, moved), read, write


@dataclass(frozen=True)
class Mapped:
    """A trace mapped to cores and its level-0 inputs: where the level-1 timing and the cost model's
    estimate (sim/estimate.py) both start, so the two share one mapping, one replica rule and one bound."""

    trace: Trace  # replicated bytes homed by the mapping (fold_replicas)
    core_of: np.ndarray
    pcs: list[Pc]
    issues: dict  # id(DMA entry) -> issue cycles per program
    compute: np.ndarray  # per core
    engines: np.ndarray  # (2, cores): DMA-in, DMA-out
    read: np.ndarray  # (core domain, home domain) bytes
    write: np.ndarray
    bound: cost.Bound


def mapped(trace: Trace, machine: Machine, policy) -> Mapped:
    core_of = map_programs(policy, trace.num_programs, machine)
    pcs = static_facts(trace.program, machine)[0]
    trace = fold_replicas(trace, machine, core_of, pcs)
    issues = _issues(machine, trace, pcs)
    comp, eng, read, write = _aggregate(trace, machine, core_of, pcs, issues)
    bound = cost.level0_bound(
        machine, compute_cycles=comp, dma_engine_cycles=eng.ravel(), read_bytes=read, write_bytes=write
    )
    return Mapped(trace, core_of, pcs, issues, comp, eng, read, write, bound)


def level0_bound(trace: Trace, machine=None, *, policy="round_robin") -> cost.Bound:
    """PLATE.md level 0 for a trace under a grid -> core policy (see cost.level0_bound)."""
    return mapped(trace, get_machine(machine), policy).bound


def program_waves(core_of: np.ndarray) -> np.ndarray:
    """Each program's wave: its rank among the programs of its core, in program id order."""
    order = np.argsort(core_of, kind="stable")
    first = np.searchsorted(core_of[order], core_of[order])
    wave = np.empty(len(core_of), dtype=np.int64)
    wave[order] = np.arange(len(core_of)) - first
    return wave


def _auto_bucket(trace: Trace, pcs: list[Pc], waves: int, bound_cycles: float) -> float:
    """About an eighth of a DMA's share of the level-0 time (a power of two), and at most 64k buckets."""
    per_program = sum(len(e.programs) for e in trace.entries if pcs[e.pc].kind == "dma") / max(trace.num_programs, 1)
    typical = bound_cycles / max(waves * per_program, 1.0)
    bucket = 2.0 ** math.floor(math.log2(min(max(typical / 8, 1.0), 4096.0)))
    return max(bucket, 2.0 ** math.ceil(math.log2(max(bound_cycles / 65536, 1.0))))


def simulate_timing(
    trace: Trace,
    machine=None,
    *,
    policy="round_robin",
    collect_events: bool = False,
    max_events: int = 200_000,
    bucket_cycles: float | None = None,
) -> Profile:
    """Level-1 timing of a trace (rules in the module docstring) -> Profile (with its level-0 bound)."""
    t0 = time.perf_counter()
    machine = get_machine(machine)
    n = trace.num_programs
    m = mapped(trace, machine, policy)
    trace, core_of, pcs, issues, comp, bound = m.trace, m.core_of, m.pcs, m.issues, m.compute, m.bound
    used = np.unique(core_of)
    wave = program_waves(core_of)
    W = int(wave.max(initial=-1)) + 1
    # an explicit bucket is kept unless the calendar would pass 64k buckets of the level-0 time
    bucket = max(bucket_cycles, bound.cycles / 65536) if bucket_cycles else _auto_bucket(trace, pcs, W, bound.cycles)
    steps = merged_steps(trace, pcs, merge=not collect_events)
    st = replay(trace, machine, steps, core_of, wave, W, issues, bucket, max_events if collect_events else None)
    # the compute engine is busy for the cost of every compute and sync row (whole cycles: exact sums)
    st.busy[1] = comp
    cycles = float(max(st.eng.max(initial=0.0), st.done.max(initial=0.0)))
    prog = trace.program
    names = [f"{ins.mnemonic} @ {prog.loc_of(i)}" for i, ins in enumerate(prog.instrs)] if collect_events else []
    counts = [(p.count, p, len(e.programs)) for p, _, e in steps]
    return Profile(
        machine=machine.name,
        clock_ghz=machine.clock_ghz,
        policy=policy_name(policy),
        num_programs=n,
        cores_used=len(used),
        cycles=cycles,
        bound=bound,
        busy_by_core=st.busy,
        read_bytes=st.read_bytes,
        write_bytes=st.write_bytes,
        dma_count=sum(k for _, p, k in counts if p.kind == "dma"),
        instr_count=sum(c * k for c, _, k in counts),
        flops=float(sum(p.flops * k for _, p, k in counts)),
        peak_hbm_bytes_per_cycle=machine.domain.hbm_bytes_per_cycle * machine.total_domains,
        hbm_efficiency=machine.domain.hbm_efficiency,
        peak_flops_per_cycle_core=2.0 * machine.core.matrix.macs_per_cycle["bf16"],
        core_domain=st.core_domain,
        bucket_cycles=bucket,
        wall_s=time.perf_counter() - t0,
        events=st.events,
        event_names=names,
        events_dropped=st.dropped,
        max_events=max_events,
    )
