"""Inductor's benchmarker for plate: every autotuning decision compares MODELED time.

Inductor benchmarks through a per-device registry (torch._inductor.runtime.benchmarking); a device
without an entry falls into the CUDA path. The plate entry runs the callable through the Triton
driver's ``do_bench_modeled`` (one untimed run, then PLATE_BENCH_REPS runs timed on the simulated
device's clock), the same measure ``@triton.autotune`` and ``triton.testing.do_bench`` use.

A callable that launches no plate kernel (an extern aten kernel: it runs on the host through the
CPU fallback) has no modeled time; it is ranked at ``config.extern_choice_ms``, after every plate
kernel (policy.py, "Matrix products"), as a ``HostTime``: a float that Inductor's autotune log prints
as "host, not modeled" instead of a number. A callable that launches no plate kernel and runs no op on
the host either (Inductor's ``clone_args`` of a kernel's in-place arguments: allocations and copies,
which the model does not charge) costs its modeled time, zero: Inductor subtracts that measure from a
mutating kernel's when it weighs a fusion (TritonScheduling.benchmark_codegened_module), and the rank
of a host kernel there made the kernel's time negative (-999.998 ms for a relu) and every fusion with it
look slower.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import config, policy


class HostTime(float):
    """The rank of a choice that ran on the host: compares as a number, prints as what it is."""

    def __format__(self, spec: str) -> str:
        return "host, not modeled"

    def __repr__(self) -> str:
        return f"HostTime({float(self)!r})"


def benchmark_modeled(benchmarker: Any, fn: Callable[[], Any], *, warmup: int = 0, rep: int = 0, **kwargs) -> float:
    """Modeled milliseconds of ``fn()``: Inductor's benchmarker signature (self, fn, *, warmup, rep, ...)."""
    from triton_plate_backend.driver import do_bench_modeled
    from triton_plate_backend.sim.device import get_device
    from triton_plate_backend.torch_device.host_op_counter import host_op_scope

    device = get_device()
    launches = device.launches
    quantiles = kwargs.get("quantiles")
    with host_op_scope() as host_ops:
        ms = do_bench_modeled(fn, quantiles=quantiles, return_mode=kwargs.get("return_mode", "median"))
    if quantiles is not None:
        ms = ms[0]
    if device.launches == launches:
        return HostTime(config.extern_choice_ms) if host_ops else float(ms)
    return max(float(ms), policy.MIN_MODELED_MS)


def register() -> None:
    from torch._inductor.runtime.benchmarking import register_benchmarker

    register_benchmarker("plate", benchmark_modeled, override=True)
