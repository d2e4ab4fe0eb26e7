"""Host fallbacks, counted and named: what ran on the host instead of the simulator inside a compiled function.

Three kinds, one counter:

- an op: an aten op that ran on the host through the device's boxed CPU fallback while a compiled plate
  graph ran (an extern kernel such as ``extern_kernels.mm``, a fallback such as ``aten.linalg_ldl_factor_ex``, a
  ``zero_`` of the wrapper code), outside the modeled clock. The wrapper code (wrapper.py) runs ``call`` in a host-op
  scope of the device (torch_device/host_op_counter.py, ``counted_graph``) and counts what ran in it when it
  returns or raises, so each run counts each op as often as it ran. Ops the plate device serves itself
  (``HOST_FREE_OPS``: allocation, views, copies) never reach the fallback.
- an eager op: an aten op that ran on the host while a compiled function ran, outside its graphs: its own
  eager code (the code Dynamo left in Python at a graph break), the frames Dynamo resumes and what they call,
  a plate eager kernel's own host case (``Call.on_host``: an unsigned dtype, say) included (torch_device's
  ``compiled_frame_host_ops``, watched from ``inductor_plate.register``; "while a compiled function ran" is
  the wrapper torch.compile returns being on the thread's stack, not what a compile runs). Eager code before
  or after a compiled function, a compiled function run under the ``force_eager`` stance, and the autograd
  engine's backward of the eager ops at its graph breaks (run after it returned) do not count; its compiled
  backward's graphs do (``op``).
- a frame: a frame that ran eagerly because a plate kernel failed to compile (fallback.py raises
  Dynamo's SkipFrame), counted once per compile that fell back.

``host_fallbacks()`` returns the counts; ``reset_host_fallbacks()`` clears them; at exit, a process in
which any happened prints one line to stderr (``summary()``).
"""

from __future__ import annotations

import atexit
import functools
import sys
import threading
from collections import Counter

from triton_plate_backend.eager_ops.table import overloads
from triton_plate_backend.torch_device import host_op_counter

# aten ops the plate device runs with kernels of its own (torch_device/csrc/kernels.cpp): allocation,
# views and copies. Beside these, the ops of the eager table (eager_ops/table.py) are plate kernels; every
# other op runs its CPU kernel on the host.
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
EAGER_OP_PREFIX = "eager op "
FRAME_PREFIX = "frame "

_counts: Counter[str] = Counter()
_lock = threading.Lock()


def host_fallbacks() -> Counter[str]:
    """What ran on the host inside compiled functions since the last reset: ``{"op aten.mm": 3,
    "eager op aten.sin": 1, "frame 0/0 (aten.atan2.default)": 1}``."""
    with _lock:
        counts = Counter(_counts)
    counts.update({EAGER_OP_PREFIX + op: n for op, n in host_op_counter.compiled_frame_host_ops().items()})
    return counts


def reset_host_fallbacks() -> None:
    with _lock:
        _counts.clear()
    host_op_counter.reset_compiled_frame_host_ops()


def enter_graph() -> int:
    """A compiled graph starts running on this thread (its wrapper code's first line): opens a host-op scope."""
    return host_op_counter.enter_scope()


def exit_graph(token: int) -> None:
    """The graph ``token`` started returns: every op the device's CPU fallback ran for it counts."""
    ops = host_op_counter.exit_scope(token)
    if ops:
        with _lock:
            _counts.update({OP_PREFIX + op: n for op, n in ops.items()})


def counted_graph(call):
    """A compiled graph's ``call`` (its wrapper code wraps it): every op the device's CPU fallback runs while it
    runs counts, also when it raises."""

    @functools.wraps(call)
    def run(*args, **kwargs):
        token = enter_graph()
        try:
            return call(*args, **kwargs)
        finally:
            exit_graph(token)

    return run


def count_host_frame(frame: str) -> None:
    """A frame that runs eagerly instead of compiled (fallback.check_kernels)."""
    with _lock:
        _counts[FRAME_PREFIX + frame] += 1


def is_host_op(name: str) -> bool:
    """Does the aten op ``name`` (aten.mm, aten.mm.out, torch.ops.aten.copy_.default, extern_kernels.mm) run on
    the host when given plate tensors? (An op of the eager table may still run a case its kernel does not
    cover on the host, counted when it does.)"""
    parts = name.split(".")
    base = parts[parts.index("aten") + 1] if "aten" in parts[:-1] else parts[-1]
    return base not in HOST_FREE_OPS and base not in _eager_kernel_ops()


@functools.cache
def _eager_kernel_ops() -> frozenset[str]:
    """The aten ops (overload packets) with a plate kernel in the eager table."""
    return frozenset(name.partition(".")[0] for name in overloads())


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
