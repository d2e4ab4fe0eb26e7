"""Level-1 timing (PLATE.md "Cost model levels"): replay a Trace on the machine's engines and links.

The exact rules and approximations:

- Grid -> cores: ``POLICIES[name](num_programs, machine) -> core per program`` (``round_robin``
  default, ``blocked``, ``domain_aligned``), or an explicit mapping array, or a callable. Programs
  on one core run one after another in increasing program id; a core's domain is
  ``machine.core_domain(core)``.
- Per core three in-order engines: DMA-in, compute (scalar, vector, matrix and sync rows) and
  DMA-out (``dma.store``, ``dma.scatter``, ``atom.*``). An instruction starts at max(its engine's
  free time, the ready time of its inputs). Tiles are SRAM ranges: writing tile t waits for the
  last read (WAR) and the last write (WAW) of every tile overlapping t (from ``Tile.span()``);
  reading t waits for its last write (RAW). Compute instructions take their cost rule's cycles.
- Scalar registers are ready at the compute engine's time: a DMA issues no earlier than the
  compute engine has reached it in program order. The DMA queue holds ``queue_depth`` DMAs per
  engine: the instruction stream (compute engine) stalls until the DMA ``queue_depth`` back on the
  same engine completes. ``dma.wait q`` waits for the DMA that defined q; ``fence``/``barrier``
  wait for every DMA the core issued so far. Sync rows cost 1 cycle on the compute engine.
- A DMA holds its engine for issue + transfer; it completes at transfer end + flight latency
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
  entry by trace entry, vectorised across cores with numpy. Runs of scalar-only entries executed
  by the same programs are merged (unless events are collected).
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
from .bandwidth import Calendar
from .profile import Profile
from .trace import Trace

ENGINE_OF_UNIT = {"dma_in": 0, "scalar": 1, "vector": 1, "matrix": 1, "sync": 1, "dma_out": 2}

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


POLICIES: dict[str, Callable[[int, Machine], np.ndarray]] = {
    "round_robin": _round_robin,
    "blocked": _blocked,
    "domain_aligned": _domain_aligned,
}


def map_programs(policy, num_programs: int, machine: Machine) -> np.ndarray:
    """Core index per program: a POLICIES name, a callable(num_programs, machine) or an explicit array."""
    if isinstance(policy, str):
        if policy not in POLICIES:
            raise SimulatorError(
                f"unknown grid->core policy {policy!r}; known: {', '.join(POLICIES)} "
                "or pass an explicit core-per-program array"
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


# ---- static facts per pc ---------------------------------------------------------------------------------


@dataclass
class _Pc:
    kind: str  # "scalar", "compute", "wait", "wait_all", "dma"
    engine: int
    cost: float  # compute/sync cycles; DMA rows compute issue cycles per entry
    ins: tuple  # tiles read (use, inout)
    outs: tuple  # tiles written (def, inout)
    token: int | None
    flops: int
    outbound: bool  # DMA towards memory (dma_out engine)
    extra_latency: float
    count: int = 1  # instructions merged into this step


def _static(trace: Trace, machine: Machine) -> list[_Pc]:
    prog = trace.program
    out = []
    for inst in prog.instrs:
        row = inst.row
        tiles = [(od.role, v) for od, v in zip(row.operands, inst.operands) if od.kind == "t"]
        toks = [(od.role, v) for od, v in zip(row.operands, inst.operands) if od.kind == "q"]
        engine = ENGINE_OF_UNIT[row.unit]
        if engine != 1:
            kind = "dma"
        elif row.unit == "sync":
            kind = "wait" if toks else "wait_all"
        else:
            kind = "compute" if tiles else "scalar"
        c = 0.0 if kind == "dma" else float(cost.inst_cost(machine, inst, prog))
        out.append(
            _Pc(
                kind,
                engine,
                c,
                tuple(v for r, v in tiles if r != "def"),
                tuple(v for r, v in tiles if r != "use"),
                toks[0][1] if toks else None,
                cost.flops(inst, prog),
                engine == 2,
                float(machine.domain.hbm_latency) if row.cost == "atomic" else 0.0,
            )
        )
    return out


def _overlaps(trace: Trace) -> list:
    """Per tile: its index (int) if it overlaps no other tile, else the array of overlapping tiles."""
    spans = np.array([t.span() for t in trace.program.tiles], dtype=np.int64).reshape(-1, 2)
    lo, hi = spans[:, 0], spans[:, 1]
    out = []
    for i in range(len(lo)):
        ov = np.nonzero((lo < hi[i]) & (lo[i] < hi))[0]
        ov = np.union1d(ov, [i])
        out.append(i if len(ov) == 1 else ov)
    return out


# ---- the replay -------------------------------------------------------------------------------------------


class _State:
    def __init__(self, machine: Machine, trace: Trace, bucket: float, max_events: int | None):
        C, D = machine.total_cores, machine.total_domains
        T = max(len(trace.program.tiles), 1)
        toks = [v for ins in trace.program.instrs for od, v in zip(ins.row.operands, ins.operands) if od.kind == "q"]
        Q = max([machine.core.dma_tokens] + [v + 1 for v in toks])
        self.machine, self.topo = machine, cost.topology(machine)
        self.eng, self.busy = np.zeros((3, C)), np.zeros((3, C))
        self.ready, self.read = np.zeros((C, T)), np.zeros((C, T))
        self.tok, self.done = np.zeros((C, Q)), np.zeros(C)
        self.depth = machine.core.dma.queue_depth
        self.ring, self.nq = np.zeros((2, C, self.depth)), np.zeros((2, C), dtype=np.int64)
        self.read_bytes, self.write_bytes = np.zeros((D, D)), np.zeros((D, D))
        self.core_domain = np.arange(C) // machine.domain.cores
        self.calendar = Calendar(self.topo.capacity, bucket)
        self.ov = _overlaps(trace)
        self.program = trace.program
        self.live_cores = np.arange(C)  # cores with programs in the current wave or later
        self.flops = self.instrs = self.dmas = 0
        self.events = [] if max_events is not None else None
        self.max_events, self.n_events, self.dropped = max_events or 0, 0, 0

    def after_tiles(self, p: _Pc, cs, t):
        for ti in p.ins:
            t = np.maximum(t, self.ready[cs, ti])
        for ti in p.outs:
            ov = self.ov[ti]
            if isinstance(ov, int):
                t = np.maximum(t, np.maximum(self.ready[cs, ov], self.read[cs, ov]))
            else:
                sub = (cs[:, None], ov[None, :])
                t = np.maximum(t, np.maximum(self.ready[sub].max(axis=1), self.read[sub].max(axis=1)))
        return t

    def wrote(self, p: _Pc, cs, t):
        for ti in p.outs:
            ov = self.ov[ti]
            if isinstance(ov, int):
                self.ready[cs, ov] = np.maximum(self.ready[cs, ov], t)
            else:
                sub = (cs[:, None], ov[None, :])
                self.ready[sub] = np.maximum(self.ready[sub], t[:, None])

    def record(self, pc, engine, cs, start, end, progs):
        if self.events is None:
            return
        n = len(cs)
        if self.n_events + n > self.max_events:
            self.dropped += n
            return
        self.n_events += n
        self.events.append((pc, engine, cs.copy(), np.array(start, dtype=np.float64), end.copy(), progs.copy()))


def _step_scalar(st: _State, p: _Pc, pc, entry, rows, cs, progs):
    start = st.eng[1, cs]
    end = start + p.cost
    st.eng[1, cs] = end
    st.busy[1, cs] += p.cost
    st.record(pc, 1, cs, start, end, progs)


def _step_compute(st: _State, p: _Pc, pc, entry, rows, cs, progs):
    start = st.after_tiles(p, cs, st.eng[1, cs])
    end = start + p.cost
    st.eng[1, cs] = end
    st.busy[1, cs] += p.cost
    for ti in p.ins:
        st.read[cs, ti] = np.maximum(st.read[cs, ti], end)
    st.wrote(p, cs, end)
    st.flops += p.flops * len(cs)
    st.record(pc, 1, cs, start, end, progs)


def _step_wait(st: _State, p: _Pc, pc, entry, rows, cs, progs):
    start = np.maximum(st.eng[1, cs], st.tok[cs, p.token])
    st.eng[1, cs] = start + p.cost
    st.busy[1, cs] += p.cost
    st.record(pc, 1, cs, start, start + p.cost, progs)


def _step_wait_all(st: _State, p: _Pc, pc, entry, rows, cs, progs):
    start = np.maximum(st.eng[1, cs], st.done[cs])
    st.eng[1, cs] = start + p.cost
    st.busy[1, cs] += p.cost
    st.record(pc, 1, cs, start, start + p.cost, progs)


def _step_dma(st: _State, p: _Pc, pc, entry, rows, cs, progs):
    m, e = st.machine, p.engine
    qi = e // 2
    slot_i = st.nq[qi, cs] % st.depth
    slot = st.ring[qi, cs, slot_i]
    st.eng[1, cs] = np.maximum(st.eng[1, cs], slot)  # a full DMA queue stalls the instruction stream
    s = st.after_tiles(p, cs, np.maximum(st.eng[e, cs], st.eng[1, cs]))
    dyn = {
        "runs": None if entry.runs is None else entry.runs[rows],
        "elements": None if entry.elements is None else entry.elements[rows],
    }
    issue = cost.inst_cost(m, st.program.instrs[pc], st.program, **dyn)
    issue = np.broadcast_to(np.asarray(issue, dtype=np.float64), s.shape)
    a = s + issue
    xe, comp = a.copy(), a.copy()
    if entry.bytes_by_domain is not None:
        bbd = entry.bytes_by_domain[rows]
        i, h = np.nonzero(bbd > 0)
        if i.size:
            b = bbd[i, h]
            cd = st.core_domain[cs[i]]
            src, dst = (cd, h) if p.outbound else (h, cd)
            res = np.concatenate([h[:, None], st.topo.links[src, dst]], axis=1)
            # a DMA starts no earlier than its core's compute engine: older buckets are history
            st.calendar.forget_before(float(st.eng[1, st.live_cores].min()))
            ends = st.calendar.transfer(a[i], b, res, i, float(m.core.dma.bytes_per_cycle))
            np.maximum.at(xe, i, ends)
            np.maximum.at(comp, i, ends + st.topo.latency[src, dst] + p.extra_latency)
            np.add.at(st.write_bytes if p.outbound else st.read_bytes, (cd, h), b)
    st.eng[e, cs] = xe
    st.busy[e, cs] += xe - s
    if p.token is not None:
        st.tok[cs, p.token] = comp
    st.done[cs] = np.maximum(st.done[cs], comp)
    st.ring[qi, cs, slot_i] = comp
    st.nq[qi, cs] += 1
    for ti in p.ins:
        st.read[cs, ti] = np.maximum(st.read[cs, ti], xe)
    st.wrote(p, cs, comp)
    st.dmas += len(cs)
    st.record(pc, e, cs, s, xe, progs)


STEPS = {
    "scalar": _step_scalar,
    "compute": _step_compute,
    "wait": _step_wait,
    "wait_all": _step_wait_all,
    "dma": _step_dma,
}


def _ops(trace: Trace, pcs: list[_Pc], merge: bool) -> list:
    """(pc info, pc, entry) per step; consecutive scalar entries of the same programs merge."""
    ops = []
    for entry in trace.entries:
        p = pcs[entry.pc]
        if merge and p.kind == "scalar" and ops and ops[-1][0].kind == "scalar":
            q, _, prev = ops[-1]
            if prev.programs is entry.programs or np.array_equal(prev.programs, entry.programs):
                ops[-1] = (_Pc("scalar", 1, q.cost + p.cost, (), (), None, 0, False, 0.0, q.count + 1), -1, prev)
                continue
        ops.append((p, entry.pc, entry))
    return ops


def _aggregate(trace: Trace, machine: Machine, core_of: np.ndarray, pcs: list[_Pc]):
    """Per-core compute and DMA-engine cycles and the byte matrices: the level-0 inputs."""
    C, D = machine.total_cores, machine.total_domains
    comp, eng = np.zeros(C), np.zeros((2, C))
    read, write = np.zeros((D, D)), np.zeros((D, D))
    rate = machine.core.dma.bytes_per_cycle
    for entry in trace.entries:
        p, progs = pcs[entry.pc], np.asarray(entry.programs, dtype=np.int64)
        cs = core_of[progs]
        if p.kind != "dma":
            comp += np.bincount(cs, minlength=C) * p.cost
            continue
        dyn = {"runs": entry.runs, "elements": entry.elements}
        issue = np.broadcast_to(cost.inst_cost(machine, trace.program.instrs[entry.pc], trace.program, **dyn), cs.shape)
        bbd = entry.bytes_by_domain if entry.bytes_by_domain is not None else np.zeros((len(cs), D))
        eng[p.engine // 2] += np.bincount(cs, weights=issue + bbd.sum(axis=1) / rate, minlength=C)
        onehot = np.zeros((D, len(cs)))
        onehot[cs // machine.domain.cores, np.arange(len(cs))] = 1.0
        mat = write if p.outbound else read
        mat += onehot @ bbd
    return comp, eng, read, write


def level0_bound(trace: Trace, machine=None, *, policy="round_robin") -> cost.Bound:
    """PLATE.md level 0 for a trace under a grid -> core policy (see cost.level0_bound)."""
    machine = get_machine(machine)
    core_of = map_programs(policy, trace.num_programs, machine)
    comp, eng, read, write = _aggregate(trace, machine, core_of, _static(trace, machine))
    return cost.level0_bound(
        machine, compute_cycles=comp, dma_engine_cycles=eng.ravel(), read_bytes=read, write_bytes=write
    )


def _auto_bucket(trace: Trace, pcs: list[_Pc], waves: int, bound_cycles: float) -> float:
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
    core_of = map_programs(policy, n, machine)
    pcs = _static(trace, machine)
    comp, eng, read, write = _aggregate(trace, machine, core_of, pcs)
    used = np.unique(core_of)
    bound = cost.level0_bound(
        machine, compute_cycles=comp, dma_engine_cycles=eng.ravel(), read_bytes=read, write_bytes=write
    )
    # wave of each program: its rank among the programs of its core, in program id order
    order = np.argsort(core_of, kind="stable")
    first = np.searchsorted(core_of[order], core_of[order])
    wave = np.empty(n, dtype=np.int64)
    wave[order] = np.arange(n) - first
    W = int(wave.max(initial=-1)) + 1
    # an explicit bucket is kept unless the calendar would pass 64k buckets of the level-0 time
    bucket = max(bucket_cycles, bound.cycles / 65536) if bucket_cycles else _auto_bucket(trace, pcs, W, bound.cycles)
    st = _State(machine, trace, bucket, max_events if collect_events else None)
    plan = []
    for p, pc, entry in _ops(trace, pcs, merge=not collect_events):
        progs = np.asarray(entry.programs, dtype=np.int64)
        w = wave[progs]
        o = np.argsort(w, kind="stable")
        plan.append((STEPS[p.kind], p, pc, entry, progs, o, np.searchsorted(w[o], np.arange(W + 1)).tolist()))
    per_core = np.bincount(core_of, minlength=machine.total_cores)
    for w in range(W):
        st.live_cores = np.flatnonzero(per_core > w)
        for step, p, pc, entry, progs, o, bounds in plan:
            lo, hi = bounds[w], bounds[w + 1]
            if lo == hi:
                continue
            rows = o[lo:hi]
            pr = progs[rows]
            step(st, p, pc, entry, rows, core_of[pr], pr)
            st.instrs += p.count * (hi - lo)
    cycles = float(max(st.eng.max(initial=0.0), st.done.max(initial=0.0)))
    prog = trace.program
    names = [f"{ins.mnemonic} @ {prog.loc_of(i)}" for i, ins in enumerate(prog.instrs)] if collect_events else []
    return Profile(
        machine=machine.name,
        clock_ghz=machine.clock_ghz,
        policy=policy if isinstance(policy, str) else "explicit",
        num_programs=n,
        cores_used=len(used),
        cycles=cycles,
        bound=bound,
        busy_by_core=st.busy,
        read_bytes=st.read_bytes,
        write_bytes=st.write_bytes,
        dma_count=st.dmas,
        instr_count=st.instrs,
        flops=float(st.flops),
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
