"""The plate policy: what Inductor fuses, specializes and hands to extern kernels for PLATE.

Every rule lives here, reads the machine description (triton_plate_backend.machine) and the knobs
of inductor_plate.config (which are in the FX-graph cache key), and is applied by the scheduling
(scheduling.py), the fallback pass (fallback.py) or the template registry (templates.py).

The rules, and why:

Fusion (``fusion_fits``). A PLATE core stages every tile of a kernel in its SRAM scratchpad
(``core.sram_bytes``, 1 MiB on plate1); there is no cache to spill to. A fused kernel holds one
tile of each distinct buffer it reads or writes per program, a tile being at most one vector
instruction's worth of elements (``core.vector.max_elements``). The scheduler refuses a fusion whose
tiles would exceed ``config.max_fusion_sram_bytes`` (default: half the SRAM, the other half
double-buffers the DMA), or that would join more than ``config.max_fusion_nodes`` nodes.

Reductions (``persistent_reduction_fits``). A persistent reduction keeps the whole reduced row in
SRAM: allowed only when the rows of all its inputs fit ``config.persistent_reduction_sram_bytes``
(default: a quarter of the SRAM); otherwise Inductor emits a looped reduction (RBLOCK tiles).

Specialization. Sizes are specialized as Inductor does for GPUs (plate is in GPU_TYPES, so pointer
arguments get divisibility-by-16 hints and sizes of 1 become constants); nothing else is added.

Matrix products (``gemm_mode``, ``use_gemm_templates``). mm, bmm, addmm, baddbmm and _int_mm run as
Inductor's Triton GEMM templates (tl.dot on the matrix unit, block sizes multiples of its 32x32 tile,
sized to fit SRAM: templates.py) in every mode when ``config.gemm_templates == "always"`` (the default):
in the default mode with the one configuration the cost model picks (gemm_config.py, no benchmarking),
under max-autotune ranked by modeled time (gemm_lowering.py). Convolutions on plate become im2col
gathers and these products (conv_gemm.py). A host kernel (the extern aten kernel, run through the plate
device's CPU fallback, outside the modeled clock) is used only when the user opts in:
``"max-autotune"`` (host in the default mode) or ``"never"`` (host always); every host op is counted
(fallback_counter.py).

Eager ops (``eager_ops``). aten ops in ``EAGER_OPS`` (known gaps of the lowering), in
``config.eager_ops``, or learned at run time from a kernel that failed to compile (fallback.py) are
marked for Inductor's per-node fallback: they run eagerly, through the CPU fallback.
"""

from __future__ import annotations

from triton_plate_backend.errors import PlateError
from triton_plate_backend.machine import Machine, get_machine

from . import config

# aten ops the lowering cannot compile yet (OpOverload names, as str(op) prints them), and why. A row
# costs a host round trip per call: remove it when the lowering grows (tests/test_inductor.py has a
# strict xfail per row that starts passing then, and checks that a listed op really runs eagerly).
EAGER_OPS_WHY: dict[str, str] = {}
EAGER_OPS: frozenset[str] = frozenset(EAGER_OPS_WHY)
_learned: set[str] = set()  # aten ops of kernels that failed to compile in this process

# Inductor BackendFeatures plate claims. SORT and SCAN are Triton kernels like any other on plate.
BACKEND_FEATURE_NAMES: tuple[str, ...] = (
    "FOREACH",
    "BUCKETIZE",
    "INPLACE_BUFFERS",
    "MASKED_SCATTER_WITH_INDEX",
    "SCAN",
    "SORT",
    "TRITON_TEMPLATES",
    "TUPLE_REDUCTION",
)

# A ranked choice benchmarks no faster than this (ms): guards against a 0-cycle modeled launch.
MIN_MODELED_MS = 1e-6


def machine() -> Machine:
    """The machine decisions are made for: config.machine, else the current plate device's."""
    if config.machine is not None:
        return get_machine(config.machine)
    from triton_plate_backend.sim.device import get_device

    return get_device().machine


def fusion_sram_bytes() -> int:
    """SRAM a fused kernel's tiles may take per program."""
    if config.max_fusion_sram_bytes is not None:
        return int(config.max_fusion_sram_bytes)
    return machine().core.sram_bytes // 2


def persistent_reduction_sram_bytes() -> int:
    """SRAM the reduced rows of a persistent reduction may take per program."""
    if config.persistent_reduction_sram_bytes is not None:
        return int(config.persistent_reduction_sram_bytes)
    return machine().core.sram_bytes // 4


def tile_elements() -> int:
    """Most elements of one buffer a program stages at once: one vector instruction's worth."""
    return machine().core.vector.max_elements


# ---- fusion ------------------------------------------------------------------------------------
def tile_bytes(deps, tile: int) -> int:
    """SRAM for one tile of each distinct buffer among ``deps`` (Inductor Dep objects)."""
    from torch._inductor.dependencies import MemoryDep
    from torch._inductor.virtualized import V

    seen: dict[str, int] = {}
    for dep in deps:
        if not isinstance(dep, MemoryDep) or dep.name in seen:
            continue
        try:
            itemsize = V.graph.get_dtype(dep.name).itemsize
            numel = V.graph.sizevars.optimization_hint(dep.get_numel(), fallback=tile)
        except Exception:  # a buffer the graph cannot size (a mutation alias...): count a full tile
            itemsize, numel = 4, tile
        seen[dep.name] = itemsize * min(int(numel), tile)
    return sum(seen.values())


def fusion_fits(node1, node2) -> tuple[bool, str]:
    """May the scheduler fuse ``node1`` and ``node2`` on plate? (answer, reason when not)."""
    nodes = len(node1.get_nodes()) + len(node2.get_nodes())
    if nodes > config.max_fusion_nodes:
        return False, f"{nodes} nodes > max_fusion_nodes {config.max_fusion_nodes}"
    deps = [*node1.read_writes.reads, *node1.read_writes.writes, *node2.read_writes.reads, *node2.read_writes.writes]
    need, budget = tile_bytes(deps, tile_elements()), fusion_sram_bytes()
    if need > budget:
        return False, f"tiles need {need} B of SRAM > {budget} B (max_fusion_sram_bytes)"
    return True, ""


def persistent_reduction_fits(features) -> bool:
    """Do the reduced rows of every input of a persistent reduction fit the SRAM budget?"""
    from torch._inductor.virtualized import V

    rnumel = V.graph.sizevars.optimization_hint(features.reduction_numel, fallback=1 << 30)
    row_bytes = 0
    for name in features.buf_accesses():
        try:
            row_bytes += V.graph.get_dtype(name).itemsize
        except Exception:
            row_bytes += 4
    return int(rnumel) * max(row_bytes, 1) <= persistent_reduction_sram_bytes()


# ---- matrix products and eager ops ---------------------------------------------------------------
GEMM_MODES: tuple[str, ...] = ("always", "max-autotune", "never")


def gemm_mode() -> str:
    """config.gemm_templates, checked: "always", "max-autotune" or "never"."""
    mode = config.gemm_templates
    if mode not in GEMM_MODES:
        raise PlateError(
            f"inductor_plate.config.gemm_templates={mode!r}: expected one of {', '.join(map(repr, GEMM_MODES))}"
        )
    return mode


def use_gemm_templates() -> bool:
    """May matrix products use Triton templates at all (Inductor's is_big_gpu question)?"""
    return gemm_mode() != "never"


def use_conv_layout_optimization() -> bool:
    """May a graph with a convolution on plate turn channels-last (Inductor's layout optimization)?"""
    return bool(config.conv_layout_optimization)


def learned_eager_ops() -> frozenset[str]:
    """aten ops learned from kernels that failed to compile in this process (fallback.py learns them)."""
    return frozenset(_learned)


def learn_eager_ops(ops) -> None:
    _learned.update(ops)


def forget_learned_eager_ops() -> None:
    _learned.clear()


def eager_reason(op: str) -> str:
    """Why ``op`` runs eagerly on plate, in a few words (what the fallback warning says)."""
    if op in EAGER_OPS_WHY:
        return EAGER_OPS_WHY[op]
    if op in config.eager_ops:
        return "listed in inductor_plate.config.eager_ops"
    if op in learned_eager_ops():
        return "a kernel computing it failed to compile in this process"
    return "not an eager op"


def eager_ops() -> frozenset[str]:
    """aten ops that run eagerly on plate: the built-in table, the config's and the learned ones."""
    return EAGER_OPS | frozenset(config.eager_ops) | learned_eager_ops()
