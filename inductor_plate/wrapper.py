"""The Python wrapper code Inductor generates for plate graphs: PythonWrapperCodegen, with every
Triton kernel defined through ``fallback.guard_kernel`` so a kernel plate cannot compile becomes an
eager fallback (fallback.py) instead of a crash, a ``call`` that counts the ops the device ran on the
host while it ran (fallback_counter.py: ``call`` in a host-op scope that closes however it ends), and the graph's
placement (placement.py) at the top of ``call``."""

from __future__ import annotations

import torch
from torch._inductor import config
from torch._inductor.codegen.wrapper import PythonWrapperCodegen, SubgraphPythonWrapperCodegen
from torch._inductor.exc import CppWrapperCodegenError
from torch._inductor.virtualized import V

from .placement import plan_graph

GUARD = "plate_guard_kernel"
CHECK = "plate_check_kernels"
TRITON_DEFINITION = "async_compile.triton("
COUNTED = "plate_counted_graph"
GUARD_IMPORT = f"from inductor_plate.fallback import check_kernels as {CHECK}, guard_kernel as {GUARD}"
COUNT_IMPORT = f"from inductor_plate.fallback_counter import counted_graph as {COUNTED}"
PLACE = "plate_place_inputs"
PLACE_IMPORT = f"from inductor_plate.placement import place_inputs as {PLACE}"
ALLOC = "empty_strided_plate"
ALLOC_IMPORT = f"from inductor_plate.wrapper import {ALLOC}"


def empty_strided_plate(size, stride, dtype):
    """The allocation a plate graph's code calls, named per device as Inductor names cpu/cuda/xpu's."""
    return torch.empty_strided(size, stride, device="plate", dtype=dtype)


class _GuardedKernels:
    """Wraps ``name = async_compile.triton(...)`` as ``name = plate_guard_kernel(name, ops, lambda: ...)``."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.plate_kernel_ops: dict[str, tuple[str, ...]] = {}  # kernel name -> its aten ops (scheduling.py)

    def _define_kernel_helper(self, kernel_name, kernel_body, metadata=None, gpu=True, cpp_definition=None):
        if gpu and kernel_body.lstrip().startswith(TRITON_DEFINITION):
            ops = self.plate_kernel_ops.get(kernel_name, ())
            kernel_body = f"{GUARD}({kernel_name!r}, {ops!r}, lambda: {kernel_body.strip()})"
        return super()._define_kernel_helper(
            kernel_name, kernel_body, metadata=metadata, gpu=gpu, cpp_definition=cpp_definition
        )


class PlateSubgraphWrapperCodegen(_GuardedKernels, SubgraphPythonWrapperCodegen):
    """Subgraphs (control flow) share the parent's header, which imports the guard."""


class PlateWrapperCodegen(_GuardedKernels, PythonWrapperCodegen):
    @staticmethod
    def create(is_subgraph, subgraph_name, parent_wrapper, partition_signatures=None):
        if is_subgraph:
            return PlateSubgraphWrapperCodegen(subgraph_name, parent_wrapper, partition_signatures)
        return PlateWrapperCodegen()

    def write_header(self) -> None:
        super().write_header()
        self.imports.writeline(GUARD_IMPORT)
        self.imports.writeline(COUNT_IMPORT)
        self.imports.writeline(PLACE_IMPORT)
        self.imports.writeline(ALLOC_IMPORT)

    def make_allocation(self, name, device, dtype, shape, stride, allocation_shape=None, is_pinned=False):
        """``empty_strided_plate(shape, stride, dtype)`` where Inductor would write the generic
        ``empty_strided(..., device='plate', ...)``: the same call, in the form Inductor gives its own devices."""
        if device.type != "plate" or config.test_configs.track_memory_lifecycle:
            return super().make_allocation(name, device, dtype, shape, stride, allocation_shape, is_pinned)
        allocation_shape = shape if allocation_shape is None else allocation_shape
        tuple_of = self.codegen_python_shape_tuple
        out = f"{name} = {ALLOC}({tuple_of(allocation_shape)}, {tuple_of(stride)}, {dtype})"
        if tuple_of(shape) != tuple_of(allocation_shape):
            out += f".as_strided({tuple_of(shape)}, {tuple_of(stride)})"
        return out

    def write_args(self, input_names: list[str]) -> None:
        """The graph-level placement (placement.py): its plan as a comment, the inputs to replicate placed
        while ``args`` still holds them, then Inductor's unpacking of ``args``."""
        plan = plan_graph(V.graph, self.launcher_fn_name or "call")
        for line in plan.lines():
            self.prefix.writeline(f"# {line}")
        self.prefix.writeline(f"{PLACE}(args, {plan.key!r}, {plan.rows()!r})")
        super().write_args(input_names)

    def generate_after_suffix(self, result) -> None:
        """After ``call`` is defined (``runner.call`` under graph partitions): ``call`` counted as a whole, so a
        graph that raises still closes its host-op scope (enter/exit lines inside it left it open)."""
        super().generate_after_suffix(result)
        result.writeline(f"call = {COUNTED}(call)")

    def write_kernel_autotune_defs_header(self) -> None:
        """triton.autotune_at_compile_time copies every kernel definition, guard included, into its own code."""
        super().write_kernel_autotune_defs_header()
        self.kernel_autotune_defs.writeline(GUARD_IMPORT)

    def write_async_compile_wait(self) -> None:
        """Inductor's wait for the kernels, then the fallback check (it raises SkipFrame on a failure)."""
        self.prefix.splice(
            f"""

            async_compile.wait(globals())
            {CHECK}(globals())
            del async_compile
            """
        )


class NoCppWrapper:
    """Plate's C++ wrapper: none. What Inductor finds when asked for one (``torch._inductor.config.cpp_wrapper``,
    AOTInductor's ``torch._inductor.aoti_compile_and_package``): it refuses with Inductor's own error for a C++
    wrapper it cannot generate, saying why, where no class at all fails an assertion ("Device plate not
    supported")."""

    supports_caching = False

    @staticmethod
    def create(*args, **kwargs):
        raise CppWrapperCodegenError(
            "plate has no C++ wrapper: cpp_wrapper and AOTInductor (aoti_compile_and_package) are not supported; "
            "torch.compile with the Python wrapper (the default) runs plate graphs, torch.export's programs included"
        )
