"""histc of an integer tensor on the device, as CUDA's kernel computes it (the CPU kernel refuses integer tensors:
`"histogram_cpu" not implemented for 'Int'`; CUDA, which plate stands in for, takes every integer type but bool).

CUDA's histc for an integer ``input_t`` works in ``acc_type<input_t>`` (int64): min and max are the Scalars
truncated to int64 (min == max with elements: the data's min and max; still equal: widened by 1 each way); an
element x in [min, max] counts in bin ``(x - min) * bins / (max - min)`` (integer division; the last bin holds max);
the counts are of self's dtype (composite.histc takes floating tensors; it calls ``histc`` here for the others)."""

from __future__ import annotations

import torch


def histc(call, x: torch.Tensor, bins: int):
    """The counts of integer tensor ``x`` (a Call of histc.default: min and max from it); None where the host
    answers (bool, which CUDA refuses too, or min >= max: torch's error)."""
    if x.dtype == torch.bool:
        return None
    low, high = int(call["min"]), int(call["max"])  # Scalar.to<int64_t>: truncation
    if low == high and x.numel():
        low, high = int(x.min()), int(x.max())
    if low == high:
        low, high = low - 1, high + 1
    if low >= high:
        return None
    flat = x.reshape(-1).to(torch.int64)
    inside = (flat >= low) & (flat <= high)
    place = ((torch.where(inside, flat, low) - low) * bins).div_(high - low, rounding_mode="floor").clamp_(max=bins - 1)
    counts = torch.zeros(bins, dtype=x.dtype, device=x.device)
    return counts.scatter_add_(0, place, inside.to(x.dtype))
