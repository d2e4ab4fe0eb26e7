"""inductor_plate: PyTorch Inductor for the plate device (torch.compile runs models on the simulator).

Importing this package registers everything with Dynamo and Inductor, once (``register()`` is
idempotent):

- the DeviceInterface (device_interface.PlateInterface),
- the backend: PlateScheduling (Triton kernels with the plate policy), PlateWrapperCodegen, the
  per-op fallback pass and the knobs of inductor_plate.config (the FX-graph cache key sees them),
- the DeviceOpOverrides (op_overrides), the modeled-time benchmarker (benchmarker),
- the GEMM template configurations (templates), the plate lowerings of matrix products
  (gemm_lowering), the convolution decompositions (conv_gemm) and those of ops Inductor would call on
  the host (extern_decomps) or as eager plate ops (the fused RNN cells: rnn_cells;
  nn.TransformerEncoderLayer's fast path: encoder_layer), and the shims for what
  PyTorch hard-codes (triton_plate_backend.shims, THE module of runtime patches, given this package's
  answers: its DeviceInterface and policies).

``placement_summary()`` lists every buffer of the compiled graphs with its layout across the NUMA
domains and the reason (placement.py, the graph-level placement pass).

``host_fallbacks()`` names and counts what ran on the host inside compiled functions
(fallback_counter.py); ``reset_host_fallbacks()`` clears the count.

No call is needed for ``torch.compile`` on plate tensors: Inductor's own PrivateUse1 discovery
(``init_backend_registration``) asks ``torch.plate`` for ``Scheduling``, ``PythonWrapperCodegen``,
``CppWrapperCodegen`` and ``WrapperFxCodegen`` on the first compile, and Dynamo's
``get_interface_for_device("plate")`` asks it for ``DeviceInterface`` (Inductor's autotuning
subprocess asks that first). ``register()`` gives the torch device those five answers (the
attributes of the same names below) through its registration hook,
``triton_plate_backend.torch_device.compiler_hooks``; when this package is not imported yet, the
hook imports it through the entry point this package declares (group
``triton_plate_backend.inductor``). ``CppWrapperCodegen`` is None (plate has no C++ wrapper), which
makes that discovery stop after this package registered the backend itself, with its custom pass
and config.
"""

from __future__ import annotations

import threading

import triton_plate_backend.torch_device  # noqa: F401  (registers torch.plate; import it first)
from triton_plate_backend import shims
from triton_plate_backend.torch_device import host_op_counter
from triton_plate_backend.torch_device.compiler_hooks import register_inductor_backend

from .fallback_counter import host_fallbacks, reset_host_fallbacks
from .placement import placement_summary, reset_placement_summary
from .profiling import ProfileRun, collect_profiles

__all__ = [
    "CppWrapperCodegen",
    "DeviceInterface",
    "ProfileRun",
    "PythonWrapperCodegen",
    "Scheduling",
    "WrapperFxCodegen",
    "collect_profiles",
    "host_fallbacks",
    "placement_summary",
    "register",
    "registered",
    "reset_host_fallbacks",
    "reset_placement_summary",
]

BACKEND = "plate"
_lock = threading.Lock()
_registered = False


def registered() -> bool:
    return _registered


def register() -> None:
    """Register plate with Dynamo and Inductor (idempotent, thread-safe)."""
    global _registered
    if _registered:
        return
    with _lock:
        if _registered:
            return
        from torch._dynamo import trace_rules
        from torch._dynamo.device_interface import register_interface_for_device
        from torch._inductor.codegen.common import register_backend_for_device, register_device_op_overrides

        from . import (
            benchmarker,
            compile_workers,
            config,
            conv_gemm,
            encoder_layer,
            extern_decomps,
            fallback,
            gemm_lowering,
            policy,
            rnn_cells,
            templates,
        )
        from .device_interface import PlateInterface
        from .op_overrides import PlateDeviceOpOverrides
        from .scheduling import PlateScheduling
        from .wrapper import NoCppWrapper, PlateWrapperCodegen

        register_interface_for_device(BACKEND, PlateInterface)
        for index in range(PlateInterface.device_count()):
            register_interface_for_device(f"{BACKEND}:{index}", PlateInterface)
        register_backend_for_device(
            BACKEND,
            PlateScheduling,
            PlateWrapperCodegen,
            device_cpp_wrapper_codegen=NoCppWrapper,
            device_custom_pass=fallback.EagerOpsPass(),
            device_custom_config=config,
        )
        register_device_op_overrides(BACKEND, PlateDeviceOpOverrides())
        # Dynamo never traces into a Triton backend (trace_rules skips triton/backends), but plate's lives
        # in its own package: without this, a kernel launched from a frame Dynamo resumes after a graph break
        # has the launcher and the simulator traced as user code (slow, and a fake tensor meets np.copyto).
        trace_rules.add("triton_plate_backend")
        host_op_counter.watch_compiled_frames(True)  # host ops at graph breaks count too (fallback_counter.py)
        benchmarker.register()
        shims.apply(
            shims.Integration(
                device_interface=PlateInterface,
                use_gemm_templates=policy.use_gemm_templates,
                use_layout_optimization=policy.use_conv_layout_optimization,
            )
        )
        templates.register()
        gemm_lowering.register()
        conv_gemm.register()
        extern_decomps.register()
        rnn_cells.register()
        encoder_layer.register()
        compile_workers.watch()  # a switch of machine preset drops its kernels and compile workers
        register_inductor_backend(  # what torch.plate answers to Inductor's PrivateUse1 discovery
            Scheduling=PlateScheduling,
            PythonWrapperCodegen=PlateWrapperCodegen,
            CppWrapperCodegen=None,
            WrapperFxCodegen=None,
            DeviceInterface=PlateInterface,
        )
        _registered = True


register()

# Inductor's PrivateUse1 discovery reads four of these names from torch.plate, Dynamo's device registry the
# fifth (see the docstring).
from .device_interface import PlateInterface as DeviceInterface  # noqa: E402
from .scheduling import PlateScheduling as Scheduling  # noqa: E402
from .wrapper import PlateWrapperCodegen as PythonWrapperCodegen  # noqa: E402

CppWrapperCodegen = None  # plate has no C++ wrapper (AOTInductor / cpp_wrapper)
WrapperFxCodegen = None
