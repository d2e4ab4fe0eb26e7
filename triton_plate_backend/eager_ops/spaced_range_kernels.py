"""The one kernel of plate's linspace and logspace (spaced_ranges.py): every value of the range in one launch.

Value i is start + step * i for i < steps // 2, else end - step * (steps - 1 - i), each product and sum rounded
in float64 (the bounds and the step already rounded to the compute type, so for a float32 one the float64 sum
rounded once to float32 is the fused multiply-add of CUDA's kernel), then rounded to the compute type CT; logspace
takes base ** value in float64; the store rounds to the result's type."""

from __future__ import annotations

import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit(do_not_specialize=["steps", "stride"])
def spaced_values(
    out, bounds, steps, stride, CT: tl.constexpr, LOG: tl.constexpr, BLOCK: tl.constexpr
):  # fmt: skip
    """out[i * stride] for i < steps; bounds: float64 (start, end, step, base)."""
    k = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = k < steps
    start = tl.load(bounds)
    end = tl.load(bounds + 1)
    step = tl.load(bounds + 2)
    i = k.to(tl.float64)
    low = i * step + start
    high = ((steps - 1).to(tl.float64) - i) * -step + end
    value = tl.where((k < steps // 2) | (steps == 1), low, high).to(CT)
    if LOG:
        base = tl.load(bounds + 3)
        value = libdevice.pow(tl.zeros_like(i) + base, value.to(tl.float64))
    tl.store(out + k.to(tl.int64) * stride, value.to(out.dtype.element_ty), mask=mask)
