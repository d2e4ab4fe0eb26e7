"""segment_reduce on plate: each segment of ``data`` along ``axis`` (by ``lengths`` or ``offsets``, per position of the
dims before ``axis``) reduced as the CPU kernel reduces it, by a scatter_reduce of the data into its segments.

The CPU starts each segment from ``initial`` (without one: 0 for sum and mean, 1 for prod, -inf / +inf for max / min)
and reduces every element into it, NaN propagating through max and min; mean divides that sum by the segment's length,
and an empty segment's mean is ``initial`` (NaN without one: 0 / 0). Here: a tensor of the starting values, the data
scatter-reduced into it (include_self; a float sum's order of additions may differ, within an ulp or two), mean's
division after; elements outside every segment (``unsafe`` calls') go to one more segment, dropped. Segments out of
order or outside the axis, ones that do not cover it exactly without ``unsafe`` (the CPU's errors), ``indices`` (the
CPU refuses it) and non-floating data go to the host."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from .ops import Call, checked
from .table import Row

# reduce -> (scatter_reduce's reduction, the value a segment starts from without `initial`)
REDUCTIONS = {"sum": ("sum", 0.0), "mean": ("sum", 0.0), "prod": ("prod", 1.0), "max": ("amax", -math.inf)}
REDUCTIONS["min"] = ("amin", math.inf)


def _segments(call: Call, size: int) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(first, ends): where the first segment starts (lead dims) and where each ends (lead dims + (segments,)); None
    when they are not ordered within the axis's `size`, or do not cover it exactly and the call is not ``unsafe``
    (the CPU's errors)."""
    lengths, offsets = call["lengths"], call["offsets"]
    if (lengths is None) == (offsets is None) or (offsets is not None and offsets.shape[-1] == 0):
        return None
    if offsets is not None:
        first, lengths = offsets[..., 0], offsets.diff(dim=-1)
    else:
        first = torch.zeros(lengths.shape[:-1], dtype=lengths.dtype, device=lengths.device)
    ends = first.unsqueeze(-1) + lengths.cumsum(-1)
    last = ends[..., -1] if ends.shape[-1] else first
    if bool((lengths < 0).any()) or bool(((first < 0) | (last > size)).any()):
        return None
    if not call["unsafe"] and bool(((first != 0) | (last != size)).any()):
        return None
    return first, ends


def segment_reduce(op: torch._ops.OpOverload, row: Row) -> Callable:
    @checked(op)
    def kernel(call: Call, expected):
        data, reduce, axis = call["data"], call["reduce"], call["axis"]
        if call["indices"] is not None or reduce not in REDUCTIONS or not data.dtype.is_floating_point:
            return call.on_host()
        axis = axis % max(data.dim(), 1)
        found = _segments(call, data.shape[axis]) if data.dim() else None
        if found is None or found[1].dim() != axis + 1 or found[1].shape[:axis] != data.shape[:axis]:
            return call.on_host()
        first, ends = found
        count = ends.shape[-1]
        how, identity = REDUCTIONS[reduce]
        initial = call["initial"]
        start = identity if initial is None else initial
        shape = list(expected.shape)
        shape[axis] = count + 1  # one more segment: the elements outside every segment (unsafe's), dropped after
        result = torch.full(shape, start, dtype=data.dtype, device=data.device)
        # each element's segment: how many segment ends lie at or before its position along the axis
        positions = torch.arange(data.shape[axis], device=data.device).expand(*data.shape[: axis + 1]).contiguous()
        segment = torch.searchsorted(ends.contiguous(), positions, right=True)
        segment = torch.where(positions < first.unsqueeze(-1), count, segment)
        trailing = [1] * (data.dim() - axis - 1)
        index = segment.reshape(*segment.shape, *trailing).expand(data.shape)
        result = result.scatter_reduce_(axis, index, data, how, include_self=True).narrow(axis, 0, count)
        if reduce == "mean":
            lengths = ends.diff(dim=-1, prepend=first.unsqueeze(-1))
            counts = lengths.reshape(*lengths.shape, *trailing).to(data.dtype)
            mean = result / counts
            result = mean if initial is None else torch.where(counts == 0, result, mean)
        out = torch.empty_strided(expected.shape, expected.stride(), dtype=expected.dtype, device=data.device)
        return out.copy_(result)

    return kernel


FAMILIES = {"segment_reduce": segment_reduce}
