"""The level-1 replay behind ``sim.timing.simulate_timing`` (its docstring states the rules):
per-core engine state, one step rule per kind of instruction, and the plan that runs a trace
wave by wave, entry by entry, vectorised across the cores of a wave.

Arranged for speed, computing what a plain replay of the rules computes, bit for bit: the static
facts of a program's pcs are cached per program; each entry's programs are sorted by wave once
(entries of one context share them); the flows of a DMA entry (resources, engine share, flight
latency) are found once for all its waves; per-core state lives in rows indexed by core (1-D
fancy indexing, the cheap kind); the bytes moved are added up at the end, in processing order; a run
of compute-engine steps of the same programs is one step (``_runs``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import cost
from ..isa.table import ISA
from ..machine import Machine
from .bandwidth import Calendar
from .trace import Trace, content

MERGE_RUNS = True  # merge runs of compute-engine steps (_runs); False: step by step, for comparison
ENGINE_OF_UNIT = {"dma_in": 0, "scalar": 1, "vector": 1, "matrix": 1, "sync": 1, "dma_out": 2}

# ---- static facts per pc ---------------------------------------------------------------------------------


@dataclass
class Pc:
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
    # the tiles (indices) the tile rules touch:
    after_write: tuple = ()  # its start waits for their last write: tiles overlapping one read (RAW)
    #                          or one written (WAW)
    after_read: tuple = ()  # its start waits for their last read: tiles overlapping one written (WAR)
    reads: tuple = ()  # their last read moves to its end: the tiles read
    writes: tuple = ()  # their last write moves to its end: the tiles written


def _columns(tiles) -> tuple:
    if len(tiles) < 2:  # most instructions name one tile or none
        return tuple(int(t) for t in tiles)
    return tuple(sorted(set(int(t) for t in tiles)))


_ROWS: dict = {}  # mnemonic -> _row_facts


def _row_facts(mnemonic: str) -> tuple:
    """What ``static_facts`` reads of an instruction's ISA row: (row, (operand position, role) of each tile
    operand, positions of its token operands, engine, kind: "dma", "compute" (or "scalar" without tiles)
    or None for the sync unit)."""
    hit = _ROWS.get(mnemonic)
    if hit is None:
        row = ISA[mnemonic]
        tpos = tuple((k, od.role) for k, od in enumerate(row.operands) if od.kind == "t")
        qpos = tuple(k for k, od in enumerate(row.operands) if od.kind == "q")
        engine = ENGINE_OF_UNIT[row.unit]
        kind = "dma" if engine != 1 else None if row.unit == "sync" else "compute"
        hit = _ROWS[mnemonic] = (row, tpos, qpos, engine, kind)
    return hit


_STATIC: dict = {}  # id(program) -> (program, what it was computed from, (pcs, slots))
_STATIC_KEPT = 64  # a kernel's program is launched many times: keep the facts of the last few


def static_facts(prog, machine: Machine) -> tuple[list[Pc], int]:
    """(static facts per pc, DMA token slots) of a program (cached per program, machine,
    instructions and tiles)."""
    seen = (machine.cache_key(), tuple(prog.instrs), tuple(prog.tiles))
    hit = _STATIC.get(id(prog))
    if hit is not None and hit[0] is prog and hit[1] == seen:
        return hit[2]
    near = [(t,) if isinstance(t, int) else tuple(t.tolist()) for t in _overlaps(prog)]  # per tile: overlapping
    hbm_latency = float(machine.domain.hbm_latency)
    out = []
    for inst in prog.instrs:
        row, tpos, qpos, engine, kind = _row_facts(inst.mnemonic)
        ops = inst.operands
        tiles = [(r, ops[k]) for k, r in tpos]
        token = ops[qpos[0]] if qpos else None
        if kind is None:  # the sync unit: a wait names its tokens
            kind = "wait" if qpos else "wait_all"
        elif kind == "compute" and not tiles:
            kind = "scalar"
        c = 0.0 if kind == "dma" else float(cost.inst_cost(machine, inst, prog))
        ins = tuple(v for r, v in tiles if r != "def")
        outs = tuple(v for r, v in tiles if r != "use")
        # a tile's last read and write are recorded on the tiles the instruction names; the rules look
        # at every tile overlapping those (two loads into disjoint tiles that a larger tile overlaps
        # do not wait for each other)
        near_out = [t for o in outs for t in near[o]]
        near_in = [t for i in ins for t in near[i]]
        out.append(
            Pc(
                kind,
                engine,
                c,
                ins,
                outs,
                token,
                cost.flops(inst, prog) if row.cost == "mma" else 0,
                engine == 2,
                hbm_latency if row.cost == "atomic" else 0.0,
                after_write=_columns(near_in + near_out),
                after_read=_columns(near_out),
                reads=_columns(ins),
                writes=_columns(outs),
            )
        )
    toks = [v for ins in prog.instrs for od, v in zip(ins.row.operands, ins.operands) if od.kind == "q"]
    facts = (out, max([machine.core.dma_tokens] + [v + 1 for v in toks]))
    if len(_STATIC) >= _STATIC_KEPT:  # (clear: no iteration another thread could disturb)
        _STATIC.clear()
    _STATIC[id(prog)] = (prog, seen, facts)
    return facts


_ROUTES: dict = {}  # machine key -> (resources, capacity, latency) per (outbound, core domain, home domain)


def _routes(machine: Machine, topo: cost.Topology):
    """Per direction (0: reads home -> core, 1: writes core -> home) and (core domain, home domain):
    the flow's resources (home HBM, then the links of the route, padded with R), its slowest
    resource's capacity, the number of its resources and the flight latency."""
    key = machine.cache_key()
    hit = _ROUTES.get(key)
    if hit is None:
        D, R = machine.total_domains, len(topo.capacity)
        cd, home = np.divmod(np.arange(D * D), D)
        capf = np.append(topo.capacity, np.inf)
        hit = []
        for outbound in (False, True):
            src, dst = (cd, home) if outbound else (home, cd)
            res = np.concatenate([home[:, None], topo.links[src, dst]], axis=1)
            res = np.where(res >= 0, res, R)
            hit.append((res, capf[res].min(axis=1), (res < R).sum(axis=1), topo.latency[src, dst]))
        hit = _ROUTES[key] = tuple(hit)
    return hit


def _overlaps(prog) -> list:
    """Per tile: its index (int) if it overlaps no other tile, else the array of overlapping tiles."""
    spans = np.array([t.span() for t in prog.tiles], dtype=np.int64).reshape(-1, 2)
    lo, hi = spans[:, 0], spans[:, 1]
    out = []
    for i in range(len(lo)):
        ov = np.nonzero((lo < hi[i]) & (lo[i] < hi))[0]
        ov = np.union1d(ov, [i])
        out.append(i if len(ov) == 1 else ov)
    return out


# ---- the replay -------------------------------------------------------------------------------------------


class State:
    def __init__(self, machine: Machine, trace: Trace, bucket: float, max_events: int | None):
        C, D = machine.total_cores, machine.total_domains
        T = max(len(trace.program.tiles), 1)
        Q = static_facts(trace.program, machine)[1]  # DMA token slots
        self.machine, self.topo = machine, cost.topology(machine)
        self.routes = _routes(machine, self.topo)
        # per-core state as rows indexed by core: 1-D fancy indexing is the cheap kind
        self.eng, self.busy = np.zeros((3, C)), np.zeros((3, C))  # per engine: free at / busy for
        self.issued = np.zeros((3, C))  # per DMA engine: its issue stage free at (cost.dma_stages)
        self.ready, self.read = list(np.zeros((T, C))), list(np.zeros((T, C)))  # per tile: last write / read
        self.tok, self.done = list(np.zeros((Q, C))), np.zeros(C)  # per token: completion; every DMA's
        self.depth = machine.core.dma.queue_depth
        # per DMA engine: completion of its last ``depth`` DMAs (slot * C + core), DMAs issued per core
        self.ring, self.nq = np.zeros((2, self.depth * C)), np.zeros((2, C), dtype=np.int64)
        self.C = C
        self.read_bytes, self.write_bytes = np.zeros((D, D)), np.zeros((D, D))
        self.traffic = []  # (plan item, first flow, end flow) per DMA step, in processing order
        self.core_domain = np.arange(C) // machine.domain.cores
        self.calendar = Calendar(self.topo.capacity, bucket)
        self.events = [] if max_events is not None else None
        self.max_events, self.n_events, self.dropped = max_events or 0, 0, 0

    def after_tiles(self, p: Pc, cs, t):
        """t (a fresh array: raised in place) raised to the tile dependencies of p (module docstring)."""
        for ti in p.after_write:
            np.maximum(t, self.ready[ti][cs], out=t)
        for ti in p.after_read:
            np.maximum(t, self.read[ti][cs], out=t)
        return t

    def finished(self, p: Pc, cs, read_end, write_end):
        """The tiles p read are read until read_end; those it wrote are written at write_end."""
        for ti in p.reads:
            row = self.read[ti]
            row[cs] = np.maximum(row[cs], read_end)
        for ti in p.writes:
            row = self.ready[ti]
            row[cs] = np.maximum(row[cs], write_end)

    def record(self, pc, engine, cs, start, end, progs):
        n = len(cs)
        if self.n_events + n > self.max_events:
            self.dropped += n
            return
        self.n_events += n
        self.events.append((pc, engine, cs.copy(), np.array(start, dtype=np.float64), end.copy(), progs.copy()))


class _Item:
    """One step of the plan (a trace entry, or a run of merged scalar entries) with its programs
    sorted by wave: wave w runs programs progs[bounds[w]:bounds[w + 1]] on cores[...]."""

    __slots__ = ("step", "p", "pc", "bounds", "cores", "progs", "issue", "flows", "chain", "finals")

    def __init__(self, step, p, pc, bounds, cores, progs):
        self.step, self.p, self.pc, self.bounds, self.cores, self.progs = step, p, pc, bounds, cores, progs
        self.issue = self.flows = self.chain = self.finals = None


class _Flows:
    """The flows of a DMA entry (one per (program, home domain) with bytes), programs sorted by
    wave, with what does not depend on the replay: resources, engine share, flight latency."""

    __slots__ = ("row", "cd", "home", "nbytes", "rate", "lat", "res", "fbounds", "width", "one_per_row", "first")

    def __init__(self, bbd, cores, bounds, outbound: bool, st: State):
        row, home = np.nonzero(bbd > 0)
        self.row, self.home, self.nbytes = row, home, bbd[row, home]
        self.cd = st.core_domain[cores[row]]
        route = self.cd * st.machine.total_domains + home
        res, slowest, nres, lat = st.routes[outbound]
        self.res, self.lat = res[route], lat[route]  # resources: the home HBM, the links, padding
        per_row = np.bincount(row)
        # the engine split evenly over the flows of one DMA; no flow outruns its slowest resource
        self.rate = np.minimum(float(st.machine.core.dma.bytes_per_cycle) / per_row[row], slowest[route])
        self.one_per_row = per_row.max(initial=0) <= 1
        self.first = None if self.one_per_row else np.diff(row, prepend=-1) != 0
        fb = np.searchsorted(row, bounds)
        self.fbounds = fb.tolist()
        width = np.ones(len(bounds) - 1, dtype=np.int64)  # per wave: resources per flow, at most
        has = np.flatnonzero(np.diff(fb))
        width[has] = np.maximum.reduceat(nres[route], fb[has])
        self.width = width.tolist()


def _step_scalar(st: State, it: _Item, w, lo, hi):
    cs, e1 = it.cores[lo:hi], st.eng[1]
    start = e1[cs]
    end = start + it.p.cost
    e1[cs] = end
    if st.events is not None:
        st.record(it.pc, 1, cs, start, end, it.progs[lo:hi])


def _step_compute(st: State, it: _Item, w, lo, hi):
    p, cs, e1 = it.p, it.cores[lo:hi], st.eng[1]
    start = st.after_tiles(p, cs, e1[cs])
    end = start + p.cost
    e1[cs] = end
    st.finished(p, cs, end, end)
    if st.events is not None:
        st.record(it.pc, 1, cs, start, end, it.progs[lo:hi])


def _step_wait(st: State, it: _Item, w, lo, hi):
    p, cs, e1 = it.p, it.cores[lo:hi], st.eng[1]
    start = np.maximum(e1[cs], st.tok[p.token][cs])
    e1[cs] = start + p.cost
    if st.events is not None:
        st.record(it.pc, 1, cs, start, start + p.cost, it.progs[lo:hi])


def _step_wait_all(st: State, it: _Item, w, lo, hi):
    p, cs, e1 = it.p, it.cores[lo:hi], st.eng[1]
    start = np.maximum(e1[cs], st.done[cs])
    e1[cs] = start + p.cost
    if st.events is not None:
        st.record(it.pc, 1, cs, start, start + p.cost, it.progs[lo:hi])


def _step_dma(st: State, it: _Item, w, lo, hi):
    p, cs = it.p, it.cores[lo:hi]
    e, e1, f = st.eng[p.engine], st.eng[1], st.issued[p.engine]
    ring, nq = st.ring[p.engine // 2], st.nq[p.engine // 2]
    issued = nq[cs]
    slot = issued % st.depth * st.C + cs
    start1 = np.maximum(e1[cs], ring[slot])  # a full DMA queue stalls the instruction stream
    e1[cs] = start1
    moving = e[cs]  # the previous transfer on this engine ends
    s, f[cs], a = cost.dma_stages(f[cs], moving, st.after_tiles(p, cs, start1), it.issue[lo:hi])
    xe = comp = a
    fl = it.flows
    if fl is not None and fl.fbounds[w] < fl.fbounds[w + 1]:
        f0, f1 = fl.fbounds[w], fl.fbounds[w + 1]
        whole = fl.one_per_row and f1 - f0 == hi - lo  # one flow per DMA of the wave
        rows = None if whole else fl.row[f0:f1] - lo
        res = fl.res[f0:f1, : fl.width[w]]
        ends = st.calendar.transfer(a if whole else a[rows], fl.nbytes[f0:f1], fl.rate[f0:f1], res)
        arrive = ends + fl.lat[f0:f1]
        if p.extra_latency:
            arrive += p.extra_latency
        if whole:
            xe, comp = np.maximum(a, ends), np.maximum(a, arrive)
        else:
            if not fl.one_per_row:  # the latest flow of each DMA
                seg = np.flatnonzero(fl.first[f0:f1])
                rows = rows[seg]
                ends, arrive = np.maximum.reduceat(ends, seg), np.maximum.reduceat(arrive, seg)
            xe, comp = a.copy(), a.copy()
            xe[rows] = np.maximum(a[rows], ends)
            comp[rows] = np.maximum(a[rows], arrive)
        st.traffic.append((it, f0, f1))
    e[cs] = xe
    busy = st.busy[p.engine]
    busy[cs] += xe - np.maximum(s, moving)  # the engine is busy while either stage is
    if p.token is not None:
        st.tok[p.token][cs] = comp
    st.done[cs] = np.maximum(st.done[cs], comp)
    ring[slot] = comp
    nq[cs] = issued + 1
    st.finished(p, cs, xe, comp)
    if st.events is not None:
        st.record(it.pc, p.engine, cs, s, xe, it.progs[lo:hi])


def _dep(st: State, key, cs):
    kind, i = key
    if kind == "ready":
        return st.ready[i][cs]
    if kind == "read":
        return st.read[i][cs]
    if kind == "tok":
        return st.tok[i][cs]
    return st.done[cs]


def _step_run(st: State, it: _Item, w, lo, hi):
    """A run of compute-engine steps (module docstring: the rules of each, applied in order)."""
    cs, e1 = it.cores[lo:hi], st.eng[1]
    e = e1[cs]
    ends = []
    for cost_, deps, keep in it.chain:
        for key in deps:
            np.maximum(e, _dep(st, key, cs), out=e)
        e = e + cost_
        if keep:
            ends.append(e)
    e1[cs] = e
    for (kind, t), k in it.finals:
        row = st.ready[t] if kind == "ready" else st.read[t]
        row[cs] = np.maximum(row[cs], ends[k])


STEPS = {
    "scalar": _step_scalar,
    "compute": _step_compute,
    "wait": _step_wait,
    "wait_all": _step_wait_all,
    "dma": _step_dma,
}


def merged_steps(trace: Trace, pcs: list[Pc], merge: bool) -> list:
    """(pc info, pc, entry) per step; consecutive scalar entries of the same programs merge."""
    ops = []
    run = None  # [cost, count] of the scalar run ops[-1] is, if any
    for entry in trace.entries:
        p = pcs[entry.pc]
        if merge and p.kind == "scalar" and ops and ops[-1][0].kind == "scalar":
            prev = ops[-1][2]
            if prev.programs is entry.programs or np.array_equal(prev.programs, entry.programs):
                if run is None:
                    run = [ops[-1][0].cost, ops[-1][0].count]
                run[0] += p.cost
                run[1] += 1
                continue
        if run is not None:
            ops[-1] = (Pc("scalar", 1, run[0], (), (), None, 0, False, 0.0, run[1]), -1, ops[-1][2])
            run = None
        ops.append((p, entry.pc, entry))
    if run is not None:
        ops[-1] = (Pc("scalar", 1, run[0], (), (), None, 0, False, 0.0, run[1]), -1, ops[-1][2])
    return ops


FLOWS_KEY_BYTES = 16 << 10  # a DMA entry's bytes by home up to this size are a key of its flows


def _plan(ops, st: State, machine, trace, core_of, wave, W, issues) -> list[_Item]:
    by_programs = {}  # entries of one context share its programs array: sort it by wave once
    # (programs array, direction, bytes by home) -> _Flows: a loop's trips move the same bytes by home (the
    # 4096^3 GEMM's 4,164 DMA entries: 7 keys); the flows depend on nothing else and are only read
    flows_of = {}
    plan = []
    for p, pc, entry in ops:
        key = id(entry.programs)
        sorted_ = by_programs.get(key)
        if sorted_ is None:
            progs = np.asarray(entry.programs, dtype=np.int64)
            w = wave[progs]
            o = None if (w[1:] >= w[:-1]).all() else np.argsort(w, kind="stable")
            ps = progs if o is None else progs[o]
            bounds = np.searchsorted(wave[ps], np.arange(W + 1))
            sorted_ = by_programs[key] = (o, ps, core_of[ps], bounds, bounds.tolist(), entry.programs)
        o, ps, cores, bounds, blist, _ = sorted_
        it = _Item(STEPS[p.kind], p, pc, blist, cores, ps)
        if p.kind == "dma":
            issue = issues[id(entry)]
            it.issue = issue if o is None else issue[o]
            raw = entry.bytes_by_domain
            if raw is not None:
                small = raw.nbytes <= FLOWS_KEY_BYTES
                fkey = (key, p.outbound, content(raw)) if small else None
                it.flows = None if fkey is None else flows_of.get(fkey)
                if it.flows is None:
                    bbd = raw if o is None else raw[o]
                    it.flows = _Flows(np.asarray(bbd, dtype=np.float64), cores, bounds, p.outbound, st)
                    if fkey is not None:
                        flows_of[fkey] = it.flows
        plan.append(it)
    return _runs(plan) if st.events is None and MERGE_RUNS else plan


_ON_COMPUTE_ENGINE = ("scalar", "compute", "wait", "wait_all")


def _runs(plan: list[_Item]) -> list[_Item]:
    """Consecutive steps of the compute engine (scalar, compute, dma.wait, fence) run by the same
    programs merged into one step that computes the same times with fewer array operations.

    Why it is exact: within the run no DMA changes a token, a tile's last write or read, or the
    DMA completions, and the compute engine's time only grows. So a dependency a step shares with
    an earlier step of the run is already met (a tile written or read earlier in the run was
    waited on there: the write waited for the tile's last write and read, the read for its last
    write), and the others are the values from before the run. The engine's time goes through the
    same float max and add per step as step by step; the tiles' last reads and writes are raised
    once at the end, to the end of the last step that read or wrote them (ends only grow)."""
    out, i = [], 0
    while i < len(plan):
        j = i
        while j < len(plan) and plan[j].p.kind in _ON_COMPUTE_ENGINE and plan[j].cores is plan[i].cores:
            j += 1
        if j - i < 2:
            out.append(plan[i])
            i += 1
            continue
        first = plan[i]
        run = _Item(_step_run, None, first.pc, first.bounds, first.cores, first.progs)
        chain, seen, last = [], set(), {}
        for k, it in enumerate(plan[i:j]):
            p = it.p
            if p.kind == "compute":
                deps = [("ready", t) for t in p.after_write] + [("read", t) for t in p.after_read]
                for t in p.reads:
                    last[("read", t)] = k
                for t in p.writes:
                    last[("ready", t)] = k
            elif p.kind == "wait":
                deps = [("tok", p.token)]
            elif p.kind == "wait_all":
                deps = [("done", 0)]
            else:
                deps = []
            fresh = tuple(d for d in deps if d not in seen)
            seen.update(fresh)
            chain.append([p.cost, fresh, False])
        keep = sorted(set(last.values()))
        for k in keep:
            chain[k][2] = True
        run.chain = [tuple(c) for c in chain]
        run.finals = [(key, keep.index(k)) for key, k in last.items()]
        out.append(run)
        i = j
    return out


def _traffic(st: State) -> None:
    """Bytes per (core domain, home domain), added in processing order."""
    parts = {False: [], True: []}
    for it, f0, f1 in st.traffic:
        parts[it.p.outbound].append((it.flows.cd[f0:f1], it.flows.home[f0:f1], it.flows.nbytes[f0:f1]))
    for outbound, mat in ((False, st.read_bytes), (True, st.write_bytes)):
        if parts[outbound]:
            cd, h, b = (np.concatenate(x) for x in zip(*parts[outbound]))
            np.add.at(mat, (cd, h), b)


def replay(trace: Trace, machine: Machine, steps, core_of, wave, W: int, issues, bucket: float, max_events):
    """Run the merged steps of ``trace`` wave by wave -> the final State (engines, busy cycles,
    bytes moved, events). ``issues``: issue cycles per DMA entry (by id), one per program."""
    st = State(machine, trace, bucket, max_events)
    plan = _plan(steps, st, machine, trace, core_of, wave, W, issues)
    per_core = np.bincount(core_of, minlength=machine.total_cores)
    e1 = st.eng[1]
    for w in range(W):
        # no DMA starts before the compute engine of a core with programs left reached it (its
        # program-order position): older buckets of the calendar are history
        st.calendar.forget_before(float(e1[per_core > w].min()))
        for it in plan:
            lo, hi = it.bounds[w], it.bounds[w + 1]
            if lo != hi:
                it.step(st, it, w, lo, hi)
    _traffic(st)
    return st
