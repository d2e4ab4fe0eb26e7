"""linspace and logspace on plate: ``linspace.out`` and ``logspace.out``, which every overload of the two reaches
(their composites call them), as CUDA's kernels compute them, over plate kernels.

- ``linspace``: step = (end - start) / (steps - 1) and each value start + step * i for i < steps // 2, else
  end - step * (steps - 1 - i) (the two halves meet exactly at both ends), in the type CUDA's kernel computes
  in: float64 for float64 results, else float32 (integer results too), rounded once to the result's type
  (integers truncated), the multiply and the add fused into one rounding as nvcc (and gcc, in the CPU's scalar
  loop) contracts them; float64 results round the two. The CPU's kernel computes in the result's own type (fp16
  steps rounded to fp16, integers in float64) and, from 8 or 16 elements, in vector blocks whose lanes follow the
  block's first index: its last bits can differ.
- ``logspace``: base ** (that value), the power in float64, rounded once to the result's type.

``steps`` 0 gives an empty result, 1 gives ``start``; out is resized to (steps,) as ATen's kernels resize it.
Negative steps, complex and bool results, bounds an integer result cannot hold, and tensors of another device run
on the host, counted (the host raises torch's error)."""

from __future__ import annotations

import importlib
from collections.abc import Callable

import torch

from . import launch
from .ops import Call, _overflows
from .table import Row


def _compute_type(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32  # CUDA's: float32 for integers too


def _number(value) -> float | int:
    return value.item() if isinstance(value, torch.Tensor) else value


def spaced(op: torch._ops.OpOverload, row: Row) -> Callable:
    """row.fn: "linspace" or "logspace"."""

    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        out, steps = call["out"], call["steps"]
        if out.device.type != "plate" or steps < 0 or out.dtype.is_complex or out.dtype == torch.bool:
            return call.on_host()
        if out.numel() != steps:
            out.resize_(steps)
        if steps == 0:
            return out
        compute = _compute_type(out.dtype)
        start, end = (_number(call[n]) for n in ("start", "end"))
        if not out.dtype.is_floating_point:  # CUDA's kernel converts the bounds to the result's type first
            if any(_overflows(v, out.dtype) for v in (start, end)):
                return call.on_host()  # c10's checked conversion: torch's error
            start, end = (torch.tensor(v).to(out.dtype).item() for v in (start, end))
        start, end = float(start), float(end)
        ends = torch.tensor([start, end], dtype=compute)  # the bounds rounded to the accumulator type, on the host
        start_c, end_c = ends.tolist()
        step = ((ends[1] - ends[0]) / max(steps - 1, 1)).item()  # in the accumulator type, as CUDA's kernel
        # one fused multiply-add per value (nvcc's and gcc's contraction of start + step * i): for a float32
        # accumulator the product of a float32 step and an index below 2^29 is exact in float64, so the float64
        # sum rounded to float32 is the fma (but for a float64 sum that lands on a float32 midpoint); float64
        # results round the product and the sum each. One launch (spaced_range_kernels.py) for the whole range.
        base = float(call["base"]) if row.fn == "logspace" else 1.0
        bounds = torch.tensor([start_c, end_c, step, base], dtype=torch.float64).to(out.device)
        # an integer result: the values in floating point, then plate's copy_ (its conversion of an out-of-range value)
        values = out if out.dtype.is_floating_point else torch.empty(steps, dtype=torch.float64, device=out.device)
        kernels = importlib.import_module(f"{__package__}.spaced_range_kernels")
        kernels.spaced_values[(launch.triton_cdiv(steps, launch.BLOCK),)](
            values, bounds, steps, values.stride(0), CT=launch.triton_dtype(compute), LOG=row.fn == "logspace",
            BLOCK=launch.BLOCK, machine=launch.kernels().machine_of(out),
        )  # fmt: skip
        return out if values is out else out.copy_(values)

    return kernel


FAMILIES = {"spaced": spaced}
