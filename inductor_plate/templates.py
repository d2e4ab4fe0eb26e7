"""Triton GEMM template configurations for plate (what max-autotune tries for mm/bmm/addmm/baddbmm).

Inductor asks a per-device registry (torch._inductor.template_heuristics) for the block sizes of its
GEMM templates; without an entry for "plate" it offers none. The configurations here follow the
PLATE core: BLOCK_M and BLOCK_N are multiples of the matrix unit's tile (32x32), and every
configuration's operand tiles, pipelined ``num_stages`` deep, plus the fp32 accumulator fit the SRAM
(policy.fusion_sram_bytes()). ``register()`` runs once, from inductor_plate.register().
"""

from __future__ import annotations

import functools

# (BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps): small first (the test sizes), then the
# shapes that keep the matrix unit busy on large products.
GEMM_BLOCKS: tuple[tuple[int, int, int, int, int], ...] = (
    (32, 32, 32, 2, 4),
    (64, 64, 32, 2, 4),
    (64, 64, 64, 2, 4),
    (128, 128, 32, 2, 4),
    (128, 128, 64, 2, 8),
    (256, 128, 64, 2, 8),
)
OPERAND_ITEMSIZE = 4  # budget the SRAM for fp32 operands, the widest the templates take


def sram_needed(block_m: int, block_n: int, block_k: int, num_stages: int, itemsize: int = OPERAND_ITEMSIZE) -> int:
    """Bytes of SRAM one program of the template stages: pipelined A and B tiles + fp32 accumulator."""
    return max(num_stages, 1) * (block_m * block_k + block_k * block_n) * itemsize + block_m * block_n * 4


def plate_gemm_configs(budget: int, matrix_dim: int) -> list:
    from torch._inductor.template_heuristics.triton import GemmConfig

    return [
        GemmConfig(m, n, k, stages, warps)
        for m, n, k, stages, warps in GEMM_BLOCKS
        if m % matrix_dim == 0 and n % matrix_dim == 0 and sram_needed(m, n, k, stages) <= budget
    ]


@functools.cache
def register() -> None:
    from torch._inductor.kernel.bmm import bmm_template
    from torch._inductor.kernel.mm import mm_template
    from torch._inductor.template_heuristics.registry import register_template_heuristic
    from torch._inductor.template_heuristics.triton import (
        AddMMConfigMixin,
        BaseConfigHeuristic,
        MMTemplateConfigMixin,
    )

    from . import policy

    class PlateConfigHeuristic(BaseConfigHeuristic):
        """GEMM blocks for the PLATE matrix unit, sized to the core's SRAM."""

        def __init__(self) -> None:
            super().__init__()
            m = policy.machine()
            self.mm_configs = plate_gemm_configs(policy.fusion_sram_bytes(), m.core.matrix.dim)
            self.exhaustive_configs = self.mm_configs

    @register_template_heuristic(mm_template.uid, "plate")
    @register_template_heuristic(bmm_template.uid, "plate")
    class PlateMMTemplateConfigHeuristic(MMTemplateConfigMixin, PlateConfigHeuristic):
        """mm and bmm templates on plate."""

    @register_template_heuristic(mm_template.uid, "plate", op_name="addmm")
    @register_template_heuristic(bmm_template.uid, "plate", op_name="baddbmm")
    class PlateAddMMTemplateConfigHeuristic(AddMMConfigMixin, PlateMMTemplateConfigHeuristic):
        """addmm and baddbmm templates on plate (bias epilogue)."""
