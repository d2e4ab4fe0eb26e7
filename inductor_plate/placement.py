"""Graph-level placement: a layout for every buffer of a compiled plate graph, and why.

The pass runs when the wrapper code of a graph is generated (wrapper.py), over the lowered graph:
which buffers are graph inputs, which the graph writes, which kernels read each. Its choices:

- a graph input the graph never writes (a parameter, a buffer of the module, a constant) is
  REPLICATED: every kernel that reads it through, from any domain, finds a local copy. The copy is a
  migration, made by the compiled code at the top of a call (``place_inputs``), once: a replicated
  tensor stays replicated. It is made when the cost model says it paid: each call adds the time the
  replica would have saved its readers (``replica_saving_ns``) to the input's RENT, and the copy is
  made once the rent reaches its price (``torch.plate.migration_cost_ns``), the rent-or-buy rule (at
  most twice the best cost in hindsight). A weight read by a few kernels pays at the first call;
  an input that is a fresh tensor at every call (token ids) never does. A module's parameter is
  bought at its first call when its copy pays within PARAMETER_HORIZON calls: it is the module's
  state, read again at every call of the compiled forward, so waiting for the rent only runs the
  first calls remote (a 64-token GPT's projection weights took 5 calls to pay, measured; since diagonal
  die routes go along x then y, remote reads cost less and a copy takes longer to pay: 16 calls keeps
  compile_gpt's weights local from the first call, where 8 left 20.8% of its bytes remote).
- a graph input the graph writes keeps the placement it has (every copy of a replica would be written);
- a buffer the graph makes keeps the default placement (sim/memory.py default_placement): blocked
  along its first axis when it has 64 KiB or more (each domain homes a contiguous quarter of its
  rows, and the launch runs the programs that write or read them there), interleaved in 4 KiB stripes
  when smaller. At each launch, an operand every program of a kernel reads through (a GEMM's B) is
  priced again (triton_plate_backend/sim/operands.py) and moved only when that pays.

Each kernel's grid -> domain mapping is the launch's affinity mapping over these placements.
``placement_summary()`` lists every buffer of the graphs compiled so far, its layout and the reason;
the same lines are a comment in the graph's generated code.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from dataclasses import dataclass, field

import numpy as np

from triton_plate_backend import cost
from triton_plate_backend.errors import DeviceOutOfMemory
from triton_plate_backend.sim.memory import BLOCKED_MIN_BYTES

REPLICATE = "replicated"
PARAMETER_HORIZON = 16  # calls within which a parameter's replica must pay to be bought at the first call


@dataclass
class BufferPlan:
    name: str
    nbytes: int
    kind: str  # "input", "written input", "buffer"
    layout: str
    reason: str
    readers: int
    position: int = -1  # a graph input's position in the compiled call's arguments


@dataclass
class GraphPlan:
    key: str
    buffers: list[BufferPlan] = field(default_factory=list)
    replicated: dict[str, list] = field(default_factory=dict)  # input -> [copies made, copy ns, saving ns per call]

    def replicas(self) -> tuple[tuple[int, str, int], ...]:
        """(input position, name, readers) of the inputs to replicate."""
        return tuple(
            (b.position, b.name, b.readers) for b in self.buffers if b.kind == "input" and b.layout == REPLICATE
        )

    def rows(self) -> tuple[tuple, ...]:
        """The buffers as literals (the generated code passes them to ``place_inputs``)."""
        return tuple((b.name, b.nbytes, b.kind, b.layout, b.reason, b.readers, b.position) for b in self.buffers)

    def lines(self) -> list[str]:
        width = max((len(b.name) for b in self.buffers), default=4)
        out = [f"plate placement of graph {self.key}:"]
        for b in self.buffers:
            out.append(f"  {b.name:<{width}}  {b.nbytes:>10,} B  {b.layout:<24} {b.reason}")
        for name, (times, price, saving) in self.replicated.items():
            when = "once" if times == 1 else f"{times} times (a new tensor at each call)"
            out.append(
                f"  * {name} replicated {when}: copy {price / 1e3:.2f} us, saves ~{saving / 1e3:.2f} us per call"
            )
        return out


_lock = threading.Lock()
_plans: dict[str, GraphPlan] = {}
_rent: dict[int, float] = {}  # id of a live input tensor -> ns a replica would have saved it so far
MAX_KEPT = 4096


def _written(graph) -> set[str]:
    """Names of the graph inputs the graph writes (mutations, in-place copies back into an input)."""
    names = set(graph.mutated_inputs)
    for op in graph.operations:
        try:
            names.update(op.get_mutation_names())
            names.update(dep.name for dep in op.get_read_writes().writes)
        except (AttributeError, NotImplementedError):
            continue
    return names


def _readers(operations) -> dict[str, int]:
    """Buffer name -> how many kernels (operations) read it."""
    count: dict[str, int] = {}
    for op in operations:
        try:  # the dependencies, not get_read_names(): a template's reads are its inputs' buffers
            names = {dep.name for dep in op.get_read_writes().reads}
        except (AttributeError, NotImplementedError):
            continue
        for name in names:
            count[name] = count.get(name, 0) + 1
    return count


def _nbytes(node) -> int:
    try:
        layout = node.get_layout()
        numel = 1
        for s in layout.size:
            numel *= int(s)
        return numel * layout.dtype.itemsize
    except (AttributeError, TypeError, NotImplementedError):
        return 0


def plan_graph(graph, name: str = "call") -> GraphPlan:
    """The placement of every buffer of a lowered graph (module docstring). Its key is ``name`` and a hash
    of the plan: a graph loaded from Inductor's cache in another process finds its plan under the same key."""
    readers = _readers(graph.operations)
    written = _written(graph)
    plan = GraphPlan(name)
    for position, name in enumerate(graph.graph_input_names):
        node = graph.graph_inputs.get(name)
        device = getattr(node, "get_device", lambda: None)() if node is not None else None
        if node is None or device is None or device.type != "plate":
            continue
        n, k = _nbytes(node), readers.get(name, 0)
        if name in written:
            plan.buffers.append(
                BufferPlan(name, n, "written input", "as given", "written by the graph: kept", k, position)
            )
        elif k == 0:
            plan.buffers.append(BufferPlan(name, n, "input", "as given", "read by no kernel", k, position))
        else:
            reason = f"read by {k} kernel(s), never written: a copy per domain once paid"
            plan.buffers.append(BufferPlan(name, n, "input", REPLICATE, reason, k, position))
    for op in graph.operations:
        name = getattr(op, "name", None)  # the buffer it makes (get_name() asserts when there is none)
        if name is None or name in graph.graph_input_names:  # a user's Triton kernel makes no buffer
            continue
        n = _nbytes(op)
        if n <= 0:
            continue
        if n >= BLOCKED_MIN_BYTES:
            layout, reason = "blocked (axis 0)", "made here, >= 64 KiB: a quarter of its rows per domain"
        else:
            layout, reason = "interleaved", "made here, < 64 KiB: 4 KiB stripes"
        plan.buffers.append(BufferPlan(name, n, "buffer", layout, reason, readers.get(name, 0)))
    plan.key = f"{plan.key}#{hashlib.sha1(repr(plan.rows()).encode()).hexdigest()[:10]}"
    _register(plan)
    return plan


def _register(plan: GraphPlan) -> GraphPlan:
    with _lock:
        if plan.key not in _plans:
            if len(_plans) >= MAX_KEPT:
                _plans.pop(next(iter(_plans)))
            _plans[plan.key] = plan
        return _plans[plan.key]


def replica_saving_ns(machine, nbytes: int, readers: int, home_shares: dict[int, int]) -> float:
    """Modeled time a replica saves one call: each reader kernel reads the tensor whole from every
    domain of the chip (its programs spread over them); from its homes that is the level-0 time of those
    reads plus one die crossing on each reader's dependent chain, from local copies their local
    level-0 time (cost.level0_bound, cost.flight_latency)."""
    D = machine.domains
    total = float(sum(home_shares.values())) or 1.0
    share = np.zeros(machine.total_domains)
    for d, b in home_shares.items():
        share[d] = b / total
    spread = np.zeros((machine.total_domains,) * 2)
    spread[:D, :] = nbytes * share[None, :]
    local = np.zeros_like(spread)
    local[np.arange(D), np.arange(D)] = nbytes
    remote = float(spread[:D].sum() - np.trace(spread[:D, :D]))
    crossing = cost.flight_latency(machine, hops=1) - cost.flight_latency(machine) if remote > 0 else 0.0
    cycles = cost.level0_bound(machine, read_bytes=spread).cycles - cost.level0_bound(machine, read_bytes=local).cycles
    return max(readers * (cycles + crossing), 0.0) / machine.clock_ghz


def place_inputs(args, key: str, rows=()) -> None:
    """Called by a compiled graph at the top of each call: replicate the inputs its plan names once their
    rent is paid (module docstring). ``rows``: the plan (GraphPlan.rows), registered for
    ``placement_summary`` when this process did not compile the graph (Inductor's cache)."""
    import torch

    from triton_plate_backend.sim.device import get_device

    with _lock:
        plan = _plans.get(key)
    if plan is None:
        plan = _register(GraphPlan(key, [BufferPlan(*row) for row in rows]))
    replicas = plan.replicas()

    for pos, name, readers in replicas:
        t = args[pos] if pos < len(args) else None
        if not isinstance(t, torch.Tensor) or t.device.type != "plate" or t.numel() == 0:
            continue
        if torch.plate.placement_of(t) == REPLICATE:
            continue
        homes = torch.plate.home_domains(t)
        machine = get_device(t.device.index or 0).machine
        saving = replica_saving_ns(machine, t.untyped_storage().nbytes(), readers, homes)
        with _lock:  # keyed by the tensor: a parameter comes back at every call, a fresh input never does
            if id(t) not in _rent:
                weakref.finalize(t, _rent.pop, id(t), None)
            rent = _rent[id(t)] = _rent.get(id(t), 0.0) + saving
        try:
            price = torch.plate.migration_cost_ns(t, REPLICATE)
        except DeviceOutOfMemory:  # the copies do not fit: it stays as it is
            continue
        parameter = isinstance(t, torch.nn.Parameter) and PARAMETER_HORIZON * saving >= price
        if rent < price and not parameter:
            continue
        torch.plate.migrate(t, REPLICATE)
        with _lock:
            _rent[id(t)] = 0.0
            plan = _plans.get(key)
            if plan is not None:
                seen = plan.replicated.setdefault(name, [0, price, saving])
                seen[0] += 1


def placement_summary() -> str:
    """Every buffer of the plate graphs compiled or run in this process: its layout and the reason (module
    docstring), and the copies made."""
    with _lock:
        plans = list(_plans.values())
    return "\n".join(line for p in plans for line in p.lines())


def reset_placement_summary() -> None:
    with _lock:
        _plans.clear()
        _rent.clear()
