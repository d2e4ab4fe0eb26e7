"""Triton GEMM template configurations for plate (what the templates of mm/bmm/addmm/baddbmm try).

Under max-autotune every configuration below that fits is tried, ranked by modeled time, and offered in the order
of the cost model's estimate for the product (``offered_best_first``, set by gemm_lowering). In the
default mode the lowering (gemm_lowering.py) names the one configuration the cost model chose
(gemm_config.py) with ``offer_only``, and the heuristic offers just that one: nothing is benchmarked.

Inductor asks a per-device registry (torch._inductor.template_heuristics) for the block sizes of its
GEMM templates; without an entry for "plate" it offers none. The configurations here follow the
PLATE core: BLOCK_N is a multiple of the matrix unit's tile (32x32), BLOCK_M a multiple or a divisor
of it (a 16-row tile costs the matrix unit a whole 32-row pass, but on a product of few rows it is
what keeps a program's rows of A and C in one domain: the default placement gives each domain a
contiguous quarter of a tensor's rows, 16 of a 64-token batch), and every
configuration's operand tiles, pipelined ``num_stages`` deep, plus the fp32 accumulator fit the SRAM
(policy.fusion_sram_bytes()). ``register()`` runs once, from inductor_plate.register().
"""

from __future__ import annotations

import contextlib
import contextvars
import functools

# (BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps): small first (the test sizes), then the
# shapes that keep the matrix unit busy on large products.
GEMM_BLOCKS: tuple[tuple[int, int, int, int, int], ...] = (
    (16, 32, 32, 2, 4),
    (16, 64, 32, 2, 4),
    (32, 32, 32, 2, 4),
    (64, 64, 32, 2, 4),
    (64, 64, 64, 2, 4),
    (128, 128, 32, 2, 4),
    (128, 128, 64, 2, 8),
    (256, 128, 64, 2, 8),
)
OPERAND_ITEMSIZE = 4  # budget the SRAM for fp32 operands, the widest the templates take
# mm_plus_mm (a @ b + c @ d, max-autotune's pattern): Inductor keeps a configuration only if BLOCK_K < K, so the
# K=16 blocks serve products with K of 32; its template stages two pairs of tiles (half the budget each).
MM_PLUS_MM_EXTRA_BLOCKS: tuple[tuple[int, int, int, int, int], ...] = ((32, 32, 16, 1, 2), (64, 64, 16, 2, 4))


# The one configuration to offer while a default-mode GEMM is lowered (gemm_config.GemmConfig), else None.
_only: contextvars.ContextVar = contextvars.ContextVar("plate_gemm_config", default=None)


# While a max-autotune GEMM is lowered: a function of (BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps) giving the
# cost model's estimate of that configuration for the product, the order the heuristic offers them in, else None.
_rank: contextvars.ContextVar = contextvars.ContextVar("plate_gemm_rank", default=None)


@contextlib.contextmanager
def offered_best_first(estimate):
    """While lowering one max-autotune product: offer the configurations in increasing ``estimate`` (stable), the same
    set as without it. Inductor benchmarks its choices in the order offered, and the driver simulates a choice only
    while its estimate is within PLATE_AUTOTUNE_MARGIN of the best estimate of the selection so far; small tiles first
    (GEMM_BLOCKS' order) simulated every configuration that improved on the last, best first skips the rest."""
    token = _rank.set(estimate)
    try:
        yield
    finally:
        _rank.reset(token)


def best_first(configs, estimate) -> list:
    """Inductor's TritonConfigs (``kwargs`` BLOCK_M/N/K, ``num_stages``, ``num_warps``) in increasing ``estimate``."""

    def key(conf) -> float:
        kw = conf.kwargs
        return estimate(kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"], conf.num_stages, conf.num_warps)

    return sorted(configs, key=key)


@contextlib.contextmanager
def offer_only(config):
    """While lowering one matrix product: the template heuristic offers only ``config``."""
    token = _only.set(config)
    try:
        yield
    finally:
        _only.reset(token)


def sram_needed(block_m: int, block_n: int, block_k: int, num_stages: int, itemsize: int = OPERAND_ITEMSIZE) -> int:
    """Bytes of SRAM one program of the template stages: pipelined A and B tiles + fp32 accumulator."""
    return max(num_stages, 1) * (block_m * block_k + block_k * block_n) * itemsize + block_m * block_n * 4


def plate_gemm_configs(budget: int, matrix_dim: int, blocks=GEMM_BLOCKS) -> list:
    from torch._inductor.template_heuristics.triton import GemmConfig

    return [
        GemmConfig(m, n, k, stages, warps)
        for m, n, k, stages, warps in blocks
        if suits_matrix_unit(m, n, matrix_dim) and sram_needed(m, n, k, stages) <= budget
    ]


def suits_matrix_unit(block_m: int, block_n: int, matrix_dim: int) -> bool:
    """BLOCK_N a multiple of the matrix unit's tile, BLOCK_M a multiple or a divisor of it (module docstring)."""
    return (block_m % matrix_dim == 0 or matrix_dim % block_m == 0) and block_n % matrix_dim == 0


@functools.cache
def register() -> None:
    from torch._inductor.kernel.bmm import bmm_template
    from torch._inductor.kernel.mm import decompose_k_subgraph_template, mm_template
    from torch._inductor.kernel.mm_plus_mm import mm_plus_mm_template
    from torch._inductor.template_heuristics.decompose_k import DecomposeKConfigHeuristics
    from torch._inductor.template_heuristics.registry import register_template_heuristic
    from torch._inductor.template_heuristics.triton import (
        AddMMConfigMixin,
        BaseConfigHeuristic,
        GemmConfig,
        MMPlusMMTemplateConfigMixin,
        MMTemplateConfigMixin,
        ScaledMMConfigMixin,
    )

    from . import policy

    class PlateConfigHeuristic(BaseConfigHeuristic):
        """GEMM blocks for the PLATE matrix unit, sized to the core's SRAM."""

        def __init__(self) -> None:
            super().__init__()
            m = policy.machine()
            self.mm_configs = plate_gemm_configs(policy.fusion_sram_bytes(), m.core.matrix.dim)
            self.exhaustive_configs = self.mm_configs

        def preprocess_mm_configs(self, m, n, k, configs, *args, **kwargs):
            only = _only.get()
            if only is None:
                offered = super().preprocess_mm_configs(m, n, k, configs, *args, **kwargs)
                estimate = _rank.get()
                return offered if estimate is None else iter(best_first(offered, estimate))
            block = GemmConfig(only.block_m, only.block_n, only.block_k, only.num_stages, only.num_warps)
            # shrunk to the problem like every max-autotune candidate (BLOCK_M 16 for an 8-row product), so the
            # two modes compare the same kernels
            scaled = list(super().preprocess_mm_configs(m, n, k, [block], *args, **kwargs))
            return scaled or self._finalize_mm_configs([block])

    @register_template_heuristic(mm_template.uid, "plate")
    @register_template_heuristic(bmm_template.uid, "plate")
    class PlateMMTemplateConfigHeuristic(MMTemplateConfigMixin, PlateConfigHeuristic):
        """mm and bmm templates on plate."""

    @register_template_heuristic(mm_template.uid, "plate", op_name="addmm")
    @register_template_heuristic(bmm_template.uid, "plate", op_name="baddbmm")
    class PlateAddMMTemplateConfigHeuristic(AddMMConfigMixin, PlateMMTemplateConfigHeuristic):
        """addmm and baddbmm templates on plate (bias epilogue)."""

    @register_template_heuristic(mm_template.uid, "plate", op_name="scaled_mm")
    class PlateScaledMMTemplateConfigHeuristic(ScaledMMConfigMixin, PlateConfigHeuristic):
        """_scaled_mm on plate: the mm template with the scales as suffix inputs and the scaling epilogue.
        Without it the mm heuristic would serve scaled_mm too and name two inputs of four (def_kernel asserts)."""

    # decompose-k (max-autotune's choice for a long K: a bmm over K splits, then a sum) on plate as on CUDA. Without
    # it a product with K >= 64 * max(M, N) had no choice at all (Inductor then drops the mm template), and the
    # splits spread a few-tile product's K over the cores.
    register_template_heuristic(decompose_k_subgraph_template.uid, "plate", op_name="mm")(DecomposeKConfigHeuristics)

    @register_template_heuristic(mm_plus_mm_template.uid, "plate")
    class PlateMMPlusMMTemplateConfigHeuristic(MMPlusMMTemplateConfigMixin, PlateConfigHeuristic):
        """a @ b + c @ d in one template (max-autotune's mm_plus_mm pattern). Without it Inductor's only choice on
        plate would be the aten kernel, on the host."""

        def __init__(self) -> None:
            super().__init__()
            m = policy.machine()
            blocks = MM_PLUS_MM_EXTRA_BLOCKS + GEMM_BLOCKS
            self.mm_configs = plate_gemm_configs(policy.fusion_sram_bytes() // 2, m.core.matrix.dim, blocks)
            self.exhaustive_configs = self.mm_configs
