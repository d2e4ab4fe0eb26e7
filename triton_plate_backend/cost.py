"""The PLATE cost model: PLATE.md's formulas over a Machine, queryable without running a kernel.

Sits below both the simulator and the compiler, but today only the simulator asks it: the timing
model (``sim/timing.py``: issue cycles, the level-0 bound), its replay (``sim/replay.py``) and the
profile (``sim/profile.py``). The compiler's scheduling and tiling and Inductor's placement do not
consult it yet; when they do, a choice the compiler makes will be the one the simulator rewards.

- ``COST_RULES[row.cost](machine, inst, program, *, runs=None, elements=None)``: for compute and
  sync rows the engine-busy cycles of one instruction; for DMA rows (``dma``, ``dma_gather``,
  ``atomic``) the issue cycles of the DMA engine (the transfer itself is the timing model's flow
  business). ``runs``/``elements`` are the dynamic counts the executor records (scalars or
  arrays, one per program); without them a static estimate from the tile is used (a 2-D tile
  moves one contiguous run per row; gather/scatter/atomics move every element).
- Formula helpers: ``vector_cycles``, ``mma_cycles``, ``dma_issue_cycles``, ``dma_stages`` (the
  engine's issue and transfer stages: the one rule level 1 and the estimate replay),
  ``dma_engine_bound``, ``flight_latency``, ``dma_latency``, ``dma_cycles``; ``flops`` of an
  instruction (matrix only: 2*M*N*K).
- ``topology(machine)``: the shared bandwidth resources (HBM per domain, directed die links,
  directed chip links), the route between two domains, hops and flight latency.
- ``level0_bound(machine, ...)``: PLATE.md level 0, T >= max(compute, DMA engine, HBM, die link,
  chip link terms); every term is a true lower bound, so no level-1 report may beat it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .errors import IsaError
from .isa.program import Inst, Program, Tile
from .isa.table import ITEMSIZE
from .machine import Machine

# ---- formulas -----------------------------------------------------------------------------------

# passes of the matrix unit per tl.dot input precision (fp32 inputs; one row per isa.table
# ENUMS["prec"], tests/test_isa_table.py); bf16xN run on the bf16 path
PREC_PASSES = {"ieee": 1, "tf32": 1, "tf32x3": 3, "bf16x3": 3, "bf16x6": 6}


def vector_cycles(machine: Machine, n_elements: int, itemsize: int, transcendental: bool = False) -> int:
    """ceil(n / lanes) * cycles-per-vector + overhead; narrow types pack into the 32-bit lanes."""
    v = machine.core.vector
    cpo = v.transcendental_cpo if transcendental else 1
    return math.ceil(n_elements / v.lanes(itemsize)) * cpo + v.overhead_cycles


def mma_k_rate(machine: Machine, dtype: str) -> float:
    """r of PLATE.md for an input dtype; dtypes without a table entry use the rate of their width."""
    m = machine.core.matrix
    if dtype in m.macs_per_cycle:
        return m.k_rate(dtype)
    size = ITEMSIZE.get(dtype, 4)
    proxy = {1: "i8", 2: "bf16"}.get(size, "f32")
    return m.k_rate(proxy) * max(1, size // 4)  # f64/i64: twice the fp32 path


def mma_cycles(machine: Machine, M: int, N: int, K: int, dtype: str = "bf16", passes: int = 1) -> int:
    """ceil(M/32) * ceil(N/32) * ceil(K * r * passes) + fill."""
    m = machine.core.matrix
    tiles = math.ceil(M / m.dim) * math.ceil(N / m.dim)
    return tiles * math.ceil(K * mma_k_rate(machine, dtype) * passes) + m.fill_cycles


def dma_issue_cycles(machine: Machine, runs=1, elements=0):
    """Engine cycles to issue one DMA: fixed issue + per contiguous run + per gathered element.

    ``runs``/``elements`` may be numpy arrays (one value per program)."""
    d = machine.core.dma
    return (
        d.issue_cycles
        + d.strided_cycles_per_run * np.asarray(runs)
        + d.gather_cycles_per_element * np.asarray(elements)
    )


def dma_stages(issued_until, moving_until, ready, issue):
    """When a DMA issues and when it starts moving bytes on its engine: (issue start, issue end,
    transfer start). Arrays of one value per core (or program) are fine.

    A DMA engine with a descriptor queue (PLATE.md: 8 deep) is two stages in program order: the
    issue stage spends ``dma_issue_cycles`` on a descriptor (its fixed issue, then an address per
    contiguous run or gathered element) as soon as it has issued the previous one and the DMA's
    inputs are ready (``ready``); the transfer stage moves a DMA's bytes once its issue is done and
    the previous transfer has left the engine. So a queued descriptor issues while the one before
    it moves its bytes, as a real engine's descriptor front end runs ahead of its data mover; one
    DMA alone still pays issue + transfer. ``issued_until``/``moving_until``: when each stage is
    free (the engine's last issue end and last transfer end)."""
    start = np.maximum(issued_until, ready)
    issued = start + issue
    return start, issued, np.maximum(issued, moving_until)


def dma_engine_bound(issue_cycles, transfer_cycles):
    """Level 0's DMA-engine term for one engine: its issue and transfer stages overlap across DMAs
    (``dma_stages``), so each stage's total alone is a lower bound, not their sum."""
    return np.maximum(issue_cycles, transfer_cycles)


def flight_latency(machine: Machine, hops: int = 0, chip_hops: int = 0) -> int:
    """Cycles from the end of a transfer on the engine to its completion: HBM + die + chip crossings."""
    lat = machine.domain.hbm_latency + machine.domain.die_crossing_cycles * hops
    if chip_hops:
        lat += machine.links.hop_cycles * chip_hops + machine.links.issue_cycles
    return lat


def dma_latency(machine: Machine, hops: int = 0, chip_hops: int = 0) -> int:
    """issue + hbm_latency + die_crossing * hops (+ chip hops): the latency of an empty DMA."""
    return machine.core.dma.issue_cycles + flight_latency(machine, hops, chip_hops)


def dma_cycles(machine: Machine, nbytes: float, hops: int = 0, runs: int = 1, chip_hops: int = 0) -> float:
    """Uncontended issue-to-completion estimate of one DMA: issue + runs + bytes at engine speed + latency."""
    transfer = nbytes / machine.core.dma.bytes_per_cycle
    return float(dma_issue_cycles(machine, runs)) + transfer + flight_latency(machine, hops, chip_hops)


# ---- rules over instructions ------------------------------------------------------------------------


def inst_tiles(inst: Inst, program: Program) -> dict[str, Tile]:
    """Operand name -> Tile for the tile operands of an instruction."""
    return {od.name: program.tiles[v] for od, v in zip(inst.row.operands, inst.operands) if od.kind == "t"}


def _widest(inst: Inst, program: Program) -> tuple[int, int]:
    """(max element count, max item size) over the tile operands: the wider type sets the lanes."""
    tiles = inst_tiles(inst, program).values()
    return max((t.numel for t in tiles), default=1), max((t.itemsize for t in tiles), default=4)


def _rule_scalar(machine, inst, program, *, runs=None, elements=None):
    return math.ceil(1 / machine.core.scalar_ops_per_cycle)


def _rule_branch(machine, inst, program, *, runs=None, elements=None):
    return 1  # resolved in the scalar unit; no misprediction penalty is modelled


def _rule_vector(machine, inst, program, *, runs=None, elements=None):
    n, size = _widest(inst, program)
    return vector_cycles(machine, n, size)


def _rule_vector_tx(machine, inst, program, *, runs=None, elements=None):
    n, size = _widest(inst, program)
    return vector_cycles(machine, n, size, transcendental=True)


def _rule_vector_one(machine, inst, program, *, runs=None, elements=None):
    return vector_cycles(machine, 1, _widest(inst, program)[1])


def _rule_reduce(machine, inst, program, *, runs=None, elements=None):
    # one pass over the input, then a log2(lanes) tree across the lanes
    n, size = _widest(inst, program)
    return vector_cycles(machine, n, size) + math.ceil(math.log2(machine.core.vector.lanes(size)))


def _mma_shape(inst: Inst, program: Program) -> tuple[int, int, int, str]:
    t = inst_tiles(inst, program)
    acc, a = t["acc"], t["a"]
    if len(acc.shape) != 2 or len(a.shape) != 2:
        raise IsaError(f"{inst.mnemonic}: matrix operands must be 2-D, got acc{acc.shape} a{a.shape}")
    return acc.shape[0], acc.shape[1], a.shape[1], a.dtype


def _rule_mma(machine, inst, program, *, runs=None, elements=None):
    M, N, K, dtype = _mma_shape(inst, program)
    prec = inst.suffixes[0] if inst.suffixes else "ieee"
    if prec.startswith("bf16") and ITEMSIZE[dtype] == 4:
        dtype = "bf16"  # bf16x3/x6 split fp32 into bf16 parts on the bf16 path
    return mma_cycles(machine, M, N, K, dtype, PREC_PASSES[prec])


def _rule_dma(machine, inst, program, *, runs=None, elements=None):
    if runs is None:
        t = next(iter(inst_tiles(inst, program).values()))
        runs = max(1, t.numel // max(1, t.shape[-1])) if t.shape else 1
    return dma_issue_cycles(machine, runs)


def _rule_dma_gather(machine, inst, program, *, runs=None, elements=None):
    if elements is None:
        elements = _widest(inst, program)[0]
    return dma_issue_cycles(machine, 0, elements)


def _rule_sync(machine, inst, program, *, runs=None, elements=None):
    return 1  # the wait itself is dynamic: the timing model adds it


CostRule = Callable[..., "int | np.ndarray"]

COST_RULES: dict[str, CostRule] = {
    "scalar": _rule_scalar,
    "branch": _rule_branch,
    "vector": _rule_vector,
    "vector_tx": _rule_vector_tx,
    "vector_one": _rule_vector_one,
    "reduce": _rule_reduce,
    "mma": _rule_mma,
    "dma": _rule_dma,
    "dma_gather": _rule_dma_gather,
    "atomic": _rule_dma_gather,  # issue + per element, like gather; the round trip is in the latency
    "sync": _rule_sync,
}


def inst_cost(machine: Machine, inst: Inst, program: Program, **dynamic):
    """Cycles of one instruction by its ISA row's cost rule (see the module docstring)."""
    rule = COST_RULES.get(inst.row.cost)
    if rule is None:
        raise IsaError(f"{inst.mnemonic}: cost rule {inst.row.cost!r} missing from cost.COST_RULES; add it there")
    return rule(machine, inst, program, **dynamic)


def flops(inst: Inst, program: Program) -> int:
    """FLOPs of one instruction when known: 2*M*N*K for the matrix unit, else 0."""
    if inst.row.cost != "mma":
        return 0
    M, N, K, _ = _mma_shape(inst, program)
    return 2 * M * N * K


# ---- topology: shared bandwidth resources and routes ------------------------------------------------


@dataclass(frozen=True)
class Topology:
    """Shared resources (index r): HBM of each domain (r = domain), directed die links, directed
    chip links; ``links[src, dst]`` the link resources a transfer from domain src to dst crosses
    (padded with -1), with its die hops, chip hops and flight latency."""

    names: tuple[str, ...]
    kinds: tuple[str, ...]  # "hbm", "die_link", "chip_link"
    capacity: np.ndarray  # float64 [R], bytes per cycle (HBM at its achievable share)
    links: np.ndarray  # int64 [D, D, L]
    die_hops: np.ndarray  # int64 [D, D]
    chip_hops: np.ndarray  # int64 [D, D]
    latency: np.ndarray  # float64 [D, D], flight_latency of the route


_TOPOLOGIES: dict[str, Topology] = {}


def _ring_path(a: int, b: int, n: int) -> list[tuple[int, int]]:
    d = (b - a) % n
    step = 1 if d <= n - d else -1
    path, k = [], a
    while k != b:
        path.append((k, (k + step) % n))
        k = (k + step) % n
    return path


def topology(machine: Machine) -> Topology:
    key = machine.cache_key()
    if key in _TOPOLOGIES:
        return _TOPOLOGIES[key]
    nd, chips, D = machine.domains, machine.chips, machine.total_domains
    names, kinds, cap = [], [], []

    def add(name, kind, c):
        names.append(name), kinds.append(kind), cap.append(c)
        return len(names) - 1

    dom = machine.domain
    for g in range(D):
        add(f"hbm[d{g}]", "hbm", dom.hbm_bytes_per_cycle * dom.hbm_efficiency)
    die = {}
    for c in range(chips):
        for a in range(nd):
            for b in range(nd):
                if a != b and machine.domain_hops(a, b) == 1:
                    pre = f"c{c}:" if chips > 1 else ""
                    die[c, a, b] = add(f"die[{pre}d{a}->d{b}]", "die_link", dom.die_link_bytes_per_cycle)
    chip = {}
    lk = machine.links
    for a in range(chips):
        for b in sorted({(a + 1) % chips, (a - 1) % chips} - {a}):
            chip[a, b] = add(f"chip[c{a}->c{b}]", "chip_link", lk.links_per_neighbour * lk.bytes_per_cycle)
    engines = [e for e in lk.engine_domains if e < nd] or [0]

    def die_path(c, a, b):
        return [die[c, x, y] for x, y in machine.domain_path(a, b)]

    def route(s, t):
        (cs, ds), (ct, dt) = divmod(s, nd), divmod(t, nd)
        if cs == ct:
            return die_path(cs, ds, dt), []
        es = min(engines, key=lambda e: machine.domain_hops(ds, e))
        et = min(engines, key=lambda e: machine.domain_hops(dt, e))
        return die_path(cs, ds, es) + die_path(ct, et, dt), [chip[p] for p in _ring_path(cs, ct, chips)]

    routes = {(s, t): route(s, t) for s in range(D) for t in range(D)}
    L = max((len(d) + len(c) for d, c in routes.values()), default=0)
    links = np.full((D, D, max(L, 1)), -1, dtype=np.int64)
    die_hops = np.zeros((D, D), dtype=np.int64)
    chip_hops = np.zeros((D, D), dtype=np.int64)
    latency = np.zeros((D, D))
    for (s, t), (dl, cl) in routes.items():
        links[s, t, : len(dl) + len(cl)] = dl + cl
        die_hops[s, t], chip_hops[s, t] = len(dl), len(cl)
        latency[s, t] = flight_latency(machine, len(dl), len(cl))
    topo = Topology(tuple(names), tuple(kinds), np.array(cap, dtype=np.float64), links, die_hops, chip_hops, latency)
    _TOPOLOGIES[key] = topo
    return topo


_INCIDENCE: dict = {}  # machine key -> route_incidence


def route_incidence(machine: Machine) -> tuple[np.ndarray, np.ndarray]:
    """Per direction (0: reads, home -> core; 1: writes, core -> home): float64 [D * D, R], row
    core domain * D + home, 1 at every resource the flow crosses (the home domain's HBM, then the
    links of its route). Bytes of a [core domain, home] matrix times it: bytes per resource, the
    one mapping of flows to resources `resource_bytes` and the estimate's step rates share."""
    key = machine.cache_key()
    if key not in _INCIDENCE:
        topo = topology(machine)
        D, R = machine.total_domains, len(topo.names)
        out = []
        for outbound in (False, True):
            inc = np.zeros((D * D, R))
            for c in range(D):
                for h in range(D):
                    path = topo.links[c, h] if outbound else topo.links[h, c]
                    inc[c * D + h, h] = 1.0
                    inc[c * D + h, path[path >= 0]] = 1.0
            out.append(inc)
        _INCIDENCE[key] = tuple(out)
    return _INCIDENCE[key]


def resource_bytes(machine: Machine, read_bytes=None, write_bytes=None) -> np.ndarray:
    """Bytes each shared resource carries, from [core domain, home domain] read/write matrices.

    Reads travel home -> core, writes core -> home; both spend the home domain's HBM."""
    D = machine.total_domains
    incidence = route_incidence(machine)
    out = np.zeros(incidence[0].shape[1])
    for mat, inc in zip((read_bytes, write_bytes), incidence):
        if mat is not None:
            out += np.asarray(mat, dtype=np.float64).reshape(D * D) @ inc
    return out


# ---- level 0 ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bound:
    """A level-0 lower bound: the largest term binds. ``where`` names the core or resource of each term."""

    cycles: float
    terms: dict[str, float]
    binding: str
    where: dict[str, str]

    def __str__(self) -> str:
        return f"{self.cycles:.0f} cycles ({self.binding}: {self.where.get(self.binding, '')})"


def level0_bound(
    machine: Machine,
    *,
    compute_cycles=0.0,
    dma_engine_cycles=0.0,
    read_bytes=None,
    write_bytes=None,
    flops: float = 0.0,
    flops_dtype: str = "bf16",
    cores: int | None = None,
) -> Bound:
    """T >= max(compute, FLOPs/peak, DMA engine, HBM, die link, chip link) in cycles.

    compute_cycles / dma_engine_cycles: per core (or per core engine) busy cycles, the max binds;
    read_bytes / write_bytes: [core domain, home domain] byte matrices (total_domains square);
    flops over ``cores`` cores (default all) at the matrix peak of ``flops_dtype``."""
    terms, where = {}, {}
    cc = np.atleast_1d(np.asarray(compute_cycles, dtype=np.float64))
    terms["compute"], where["compute"] = float(cc.max(initial=0.0)), f"core {int(cc.argmax())}" if cc.size else ""
    ncores = cores or machine.total_cores
    terms["flops"] = flops / (2.0 * machine.core.matrix.macs_per_cycle.get(flops_dtype, 1024) * ncores)
    where["flops"] = f"{ncores} cores"
    de = np.atleast_1d(np.asarray(dma_engine_cycles, dtype=np.float64))
    terms["dma_engine"], where["dma_engine"] = float(de.max(initial=0.0)), f"engine {int(de.argmax())}"
    if read_bytes is not None or write_bytes is not None:
        topo = topology(machine)
        t = resource_bytes(machine, read_bytes, write_bytes) / topo.capacity
        for kind in ("hbm", "die_link", "chip_link"):
            idx = [i for i, k in enumerate(topo.kinds) if k == kind]
            if idx:
                best = max(idx, key=lambda i: t[i])
                terms[kind], where[kind] = float(t[best]), topo.names[best]
    binding = max(terms, key=lambda k: terms[k])
    return Bound(terms[binding], terms, binding, where)


# ---- migration ----------------------------------------------------------------------------------------


def migration_cycles(machine: Machine, moved) -> float:
    """Cycles to move bytes between home domains: ``moved`` [old home, new home] (the diagonal stays put).

    The cores of each new home domain pull its bytes with their DMA engines (a remote read from the
    old home, a local write), every core of the domain sharing them: the level-0 bound of those
    transfers (engines, both HBMs, die and chip links) plus the flight latency of the longest route.
    Kept per machine and bytes (``_MIGRATIONS``): the operand planner prices the same moves of same-sized
    operands launch after launch."""
    moved = np.array(moved, dtype=np.float64).reshape(machine.total_domains, machine.total_domains)
    np.fill_diagonal(moved, 0.0)
    if not moved.any():
        return 0.0
    key = (machine.cache_key(), moved.tobytes())
    cycles = _MIGRATIONS.get(key)
    if cycles is None:
        if len(_MIGRATIONS) >= _MIGRATIONS_KEPT:
            _MIGRATIONS.clear()
        cycles = _MIGRATIONS[key] = _migration_cycles(machine, moved)
    return cycles


_MIGRATIONS: dict = {}  # (machine key, bytes [old home, new home] off the diagonal) -> migration_cycles
_MIGRATIONS_KEPT = 1024


def _migration_cycles(machine: Machine, moved: np.ndarray) -> float:
    """``migration_cycles`` of float64 ``moved`` [old home, new home] with a zero diagonal, not all zero."""
    incoming = moved.sum(axis=0)  # per new home domain
    read = moved.T  # [core domain = new home, home = old home]
    write = np.diag(incoming)
    engine = np.repeat(incoming / machine.domain.cores / machine.core.dma.bytes_per_cycle, machine.domain.cores)
    bound = level0_bound(machine, dma_engine_cycles=engine, read_bytes=read, write_bytes=write)
    src, dst = np.nonzero(moved)
    latency = max(float(topology(machine).latency[s, d]) for s, d in zip(src, dst))
    return bound.cycles + machine.core.dma.issue_cycles + latency
