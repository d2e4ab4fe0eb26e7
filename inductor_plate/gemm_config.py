"""The one GEMM template configuration of the default mode, chosen by the cost model without benchmarking.

In the default mode (no max-autotune) a matrix product on plate compiles Inductor's Triton GEMM template
with ONE configuration, this module's ``choose``: of the block shapes of templates.GEMM_BLOCKS that fit
the SRAM budget, the one with the least modeled time, from the cost model's formulas (cost.py):

- compute of one program per K step: ``mma_cycles(BLOCK_M, BLOCK_N, BLOCK_K)`` (32x32 matrix-unit
  tiles, the dtype's rate, the fill);
- DMA of one program per K step: the A and B tiles through the core's DMA engine
  (``dma_cycles`` less the flight latency, which pipelining hides when ``num_stages >= 2``);
- a program: K steps of max(compute, DMA) (the pipeline overlaps them), one DMA latency to fill it,
  and the store of its fp32 accumulator tile; both cross a die when the tile's rows span more than
  one domain's share of A's and C's rows (``spans_domains``: the default placement gives each domain
  a contiguous share of a tensor's rows, and the launch runs a program where most of its bytes are);
- the grid: programs in waves over all cores; no faster than the chip's HBM moving every tile.

``estimate`` is the whole model; a later change can point it at the cost model's own query.
Under max-autotune every fitting configuration is tried and ranked by modeled time (templates.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from triton_plate_backend import cost
from triton_plate_backend.errors import PlateError
from triton_plate_backend.machine import Machine

from .templates import GEMM_BLOCKS, sram_needed, suits_matrix_unit

# torch dtype name -> (cost-model dtype of the matrix unit, bytes per element)
DTYPES: dict[str, tuple[str, int]] = {
    "float32": ("f32", 4),
    "bfloat16": ("bf16", 2),
    "float16": ("f16", 2),
    "int8": ("i8", 1),
    "float8_e4m3fn": ("f8e4m3fn", 1),
    "float8_e5m2": ("f8e5m2", 1),
}


@dataclass(frozen=True)
class GemmProblem:
    """C[batch, m, n] = A[batch, m, k] @ B[batch, k, n] with operands of ``dtype`` (a torch dtype name)."""

    m: int
    n: int
    k: int
    batch: int = 1
    dtype: str = "float32"


@dataclass(frozen=True)
class GemmConfig:
    block_m: int
    block_n: int
    block_k: int
    num_stages: int
    num_warps: int


def candidates(machine: Machine, sram_budget: int) -> list[GemmConfig]:
    """The template configurations whose tiles suit the matrix unit and fit ``sram_budget`` bytes."""
    dim = machine.core.matrix.dim
    return [
        GemmConfig(m, n, k, stages, warps)
        for m, n, k, stages, warps in GEMM_BLOCKS
        if suits_matrix_unit(m, n, dim) and sram_needed(m, n, k, stages) <= sram_budget
    ]


def _pow2_at_least(value: int, floor: int) -> int:
    return max(1 << max(value - 1, 0).bit_length(), floor)


def effective_blocks(problem: GemmProblem, config: GemmConfig) -> tuple[int, int, int]:
    """The tile the template really runs: Inductor shrinks every block to the problem's dimension rounded up to a
    power of two, at least 16 (32 for K of int8) (template_heuristics' _scale_mm_configs), in both modes."""
    k_floor = 32 if problem.dtype == "int8" else 16
    return (
        min(config.block_m, _pow2_at_least(problem.m, 16)),
        min(config.block_n, _pow2_at_least(problem.n, 16)),
        min(config.block_k, _pow2_at_least(problem.k, k_floor)),
    )


def spans_domains(machine: Machine, problem: GemmProblem, block_m: int) -> bool:
    """Whether a tile of ``block_m`` rows reaches past one domain's share of the rows of A and C."""
    return block_m > math.ceil(problem.batch * problem.m / machine.domains)


def estimate(machine: Machine, problem: GemmProblem, config: GemmConfig) -> float:
    """Modeled cycles of the GEMM template with ``config`` on ``machine`` (see the module docstring)."""
    dtype, itemsize = DTYPES.get(problem.dtype, ("f32", 4))
    bm, bn, bk = effective_blocks(problem, config)
    k_steps = max(1, math.ceil(problem.k / bk))
    compute = cost.mma_cycles(machine, bm, bn, bk, dtype)
    latency = cost.flight_latency(machine)
    hops = 1 if spans_domains(machine, problem, bm) else 0
    operand_bytes = (bm * bk + bk * bn) * itemsize
    dma = cost.dma_cycles(machine, bm * bk * itemsize) + cost.dma_cycles(machine, bk * bn * itemsize) - 2 * latency
    step = max(compute, dma) if config.num_stages >= 2 else compute + dma + latency
    program = k_steps * step + cost.flight_latency(machine, hops) + cost.dma_cycles(machine, bm * bn * 4, hops=hops)
    programs = problem.batch * math.ceil(problem.m / bm) * math.ceil(problem.n / bn)
    waves = math.ceil(programs / machine.total_cores)
    hbm = programs * (k_steps * operand_bytes + bm * bn * 4) / machine.hbm_bytes_per_cycle_chip()
    return max(waves * program, hbm)


def choose(machine: Machine, problem: GemmProblem, sram_budget: int) -> GemmConfig:
    """The configuration of least modeled time (ties: the smaller tiles, which waste less padding)."""
    fitting = candidates(machine, sram_budget)
    if not fitting:
        raise PlateError(
            f"no GEMM template configuration fits {sram_budget} B of SRAM on {machine.name}: "
            "raise inductor_plate.config.max_fusion_sram_bytes"
        )
    return min(fitting, key=lambda c: (estimate(machine, problem, c), c.block_m * c.block_n, c.block_k))
