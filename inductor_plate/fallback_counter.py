"""Host fallbacks, counted and named: what ran on the host instead of the simulator inside a compiled function.

Two kinds, one counter:

- an op: an extern kernel of a compiled plate graph (``extern_kernels.mm``, ``torch.ops.aten.frexp``...)
  whose aten op has no plate kernel, so the device's boxed CPU fallback runs it on the host, outside the
  modeled clock. The wrapper code (wrapper.py) calls ``count_host_ops`` with the graph's host ops at the
  top of every call, so each run of the compiled function counts each of them once per launch site.
  Ops the plate device serves itself (``HOST_FREE_OPS``: allocation, views, copies) are not counted.
- a frame: a frame that ran eagerly because a plate kernel failed to compile (fallback.py raises
  Dynamo's SkipFrame), counted once per compile that fell back.

``host_fallbacks()`` returns the counts; ``reset_host_fallbacks()`` clears them; at exit, a process in
which any happened prints one line to stderr (``summary()``).
"""

from __future__ import annotations

import atexit
import sys
import threading
from collections import Counter

# aten ops the plate device runs with kernels of its own (torch_device/csrc/kernels.cpp): allocation,
# views and copies. Nothing else has a plate kernel: every other op runs its CPU kernel on the host.
HOST_FREE_OPS: frozenset[str] = frozenset(
    {
        "empty",
        "empty_strided",
        "as_strided",
        "view",
        "_reshape_alias",
        "resize_",
        "copy_",
        "_copy_from",
        "_copy_from_and_resize",
        "_local_scalar_dense",
        "set_",
    }
)
OP_PREFIX = "op "
FRAME_PREFIX = "frame "

_counts: Counter[str] = Counter()
_lock = threading.Lock()


def host_fallbacks() -> Counter[str]:
    """What ran on the host inside compiled functions since the last reset: ``{"op aten.mm": 3,
    "frame 0/0 (aten.atan2.default)": 1}``."""
    with _lock:
        return Counter(_counts)


def reset_host_fallbacks() -> None:
    with _lock:
        _counts.clear()


def count_host_ops(ops: tuple[str, ...]) -> None:
    """One run of a compiled graph whose extern kernels ``ops`` run on the host (called by its wrapper code)."""
    with _lock:
        _counts.update(OP_PREFIX + op for op in ops)


def count_host_frame(frame: str) -> None:
    """A frame that runs eagerly instead of compiled (fallback.check_kernels)."""
    with _lock:
        _counts[FRAME_PREFIX + frame] += 1


def is_host_op(name: str) -> bool:
    """Does the aten op ``name`` (aten.mm, aten.mm.out, torch.ops.aten.copy_.default, extern_kernels.mm) run on
    the host when given plate tensors?"""
    parts = name.split(".")
    base = parts[parts.index("aten") + 1] if "aten" in parts[:-1] else parts[-1]
    return base not in HOST_FREE_OPS


def _host_kernel_classes() -> tuple[type, ...]:
    """The Inductor IR nodes that call an aten op (an extern kernel or a fallback), as opposed to those that
    launch device code (user Triton kernels, subgraphs, control flow) or only read a scalar or assert."""
    from torch._inductor import ir

    return (
        ir.ExternKernelOut,
        ir.ExternKernelAlloc,
        ir.InplaceBernoulliFallback,
        ir.InplaceCopyFallback,
        ir.ScatterFallback,
        ir.IndexPutFallback,
        ir.MutatingFirstArgExternKernel,
    )


def host_ops_of_graph(operations) -> tuple[str, ...]:
    """The host ops among a lowered graph's operations (Inductor IR): aten calls on plate without a plate
    kernel, named by their aten op without the overload (or their kernel name when they have none)."""
    from torch._inductor import ir

    found = []
    for operation in operations:
        if not isinstance(operation, _host_kernel_classes()) or isinstance(operation, ir.DeviceCopy):
            continue
        device = operation.get_device()
        if device is None or device.type != "plate":
            continue
        overload = getattr(operation, "op_overload", None)
        packet = getattr(overload, "overloadpacket", None)  # aten.mm for extern_kernels.mm's aten.mm.out
        name = str(packet or overload or getattr(operation, "python_kernel_name", "") or "")
        if name and is_host_op(name):
            found.append(name)
    return tuple(found)


def summary() -> str:
    """One line: how many host fallbacks, and the most frequent names."""
    counts = host_fallbacks()
    if not counts:
        return ""
    named = ", ".join(f"{name} x{n}" for name, n in counts.most_common(6))
    more = f", and {len(counts) - 6} more" if len(counts) > 6 else ""
    return (
        f"plate: {sum(counts.values())} host fallbacks inside compiled functions ({named}{more}); "
        "inductor_plate.host_fallbacks() lists them"
    )


def _print_summary_at_exit() -> None:
    line = summary()
    if line:
        print(line, file=sys.stderr)


atexit.register(_print_summary_at_exit)
