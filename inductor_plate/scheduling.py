"""PlateScheduling: Inductor's Triton scheduling with the plate policy (policy.py) applied.

Inductor builds one scheduling object per device per graph; this one decides fusions against the
core's SRAM, keeps persistent reductions within it, claims the Backend features plate supports, and
tells the wrapper code which aten ops each kernel computes (for the fallback warning, fallback.py).
"""

from __future__ import annotations

from functools import lru_cache

from torch._inductor.codegen.common import BackendFeature
from torch._inductor.codegen.triton import TritonKernel, TritonScheduling
from torch._inductor.scheduler import WhyNoFuse
from torch.utils._ordered_set import OrderedSet

from . import compile_workers, config, policy

HEURISTICS_IMPORT = "from inductor_plate import heuristics as triton_heuristics"


class PlateTritonKernel(TritonKernel):
    @classmethod
    @lru_cache(None)
    def gen_common_triton_imports(cls) -> str:
        """Inductor's imports, then plate's heuristics (heuristics.py) in place of ``triton_heuristics``."""
        return f"{super().gen_common_triton_imports().rstrip()}\n{HEURISTICS_IMPORT}\n"

    @classmethod
    def inductor_meta_common(cls) -> dict:
        """Inductor's, and ``config.cost_model_configs``: heuristics.py reads it where the kernel loads, a compile
        worker too (a worker has the knob's default, not the value patched in the process that compiles)."""
        return {**super().inductor_meta_common(), "plate_cost_model_configs": config.cost_model_configs}

    def should_use_persistent_reduction(self) -> bool:
        return super().should_use_persistent_reduction() and policy.persistent_reduction_fits(self.features)


def kernel_aten_ops(node_schedule) -> tuple[str, ...]:
    """The aten ops (FX origins) a kernel computes, sorted: what a fallback warning names."""
    ops = set()
    for node in node_schedule:
        for inner in getattr(node, "get_nodes", lambda: ())():
            for origin in getattr(getattr(inner, "node", None), "origins", ()) or ():
                if origin.op == "call_function":
                    ops.add(str(origin.target))
    return tuple(sorted(ops))


class PlateScheduling(TritonScheduling):
    kernel_type = PlateTritonKernel
    backend_features = OrderedSet(BackendFeature[name] for name in policy.BACKEND_FEATURE_NAMES)

    def __init__(self, scheduler) -> None:
        compile_workers.follow_machine()  # before this graph's kernels go to the compile workers
        super().__init__(scheduler)

    def can_fuse_vertical(self, node1, node2) -> bool:
        if node2.is_template() and not node1.is_template() and not node1.read_writes.reads:
            # A prologue that reads nothing (a constant operand: zeros_like, full) is generated as a rank-1
            # ``tl.full([1], ...)`` broadcast to the template's 2-dim tile, which Triton refuses ("Cannot
            # broadcast, rank mismatch"): the kernel failed to compile and its frame ran on the host (DETR's
            # decoder, whose first queries are zeros_like). Inductor meets it only under max-autotune elsewhere.
            WhyNoFuse(node1, node2)("plate: a prologue that reads no buffer stays its own kernel")
            return False
        return super().can_fuse_vertical(node1, node2) and self._fits(node1, node2)

    def can_fuse_horizontal(self, node1, node2) -> bool:
        if node1.is_template() or node2.is_template():
            # A template's kernel takes its prologues and epilogues only: an independent node fused after it is
            # generated as an epilogue, in the template's ranges (CantSplit when its own differ: a complex
            # convolution's two GEMMs and their operands). Inductor meets this only under max-autotune elsewhere;
            # plate's templates run in every mode.
            WhyNoFuse(node1, node2)("plate: a template fuses only its prologues and epilogues")
            return False
        return super().can_fuse_horizontal(node1, node2) and self._fits(node1, node2)

    @staticmethod
    def _fits(node1, node2) -> bool:
        fits, reason = policy.fusion_fits(node1, node2)
        if not fits:
            WhyNoFuse(node1, node2)("plate: %s", reason)
        return fits

    def _emit_kernel_to_wrapper(self, wrapper, kernel, src_code, kernel_name, *args, **kwargs):
        ops = getattr(wrapper, "plate_kernel_ops", None)
        if ops is not None:
            node_schedule = args[1] if len(args) > 1 else kwargs.get("node_schedule", ())
            ops[kernel_name] = kernel_aten_ops(node_schedule)
        return super()._emit_kernel_to_wrapper(wrapper, kernel, src_code, kernel_name, *args, **kwargs)
