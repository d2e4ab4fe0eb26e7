"""Indexing and selection forms over plate kernels (each step a plate op: cumsum, nonzero, index, index_put_, where):

- ``masked_scatter``: masked_scatter_(self, mask, source): the k-th true element of mask (self's shape, row-major)
  takes source's k-th element (flattened), as the CPU's and CUDA's kernels: each position's running count of
  trues (cumsum) picks its source element, and a where() keeps self elsewhere. Fewer source elements than trues
  go to the host, which raises torch's error.
- ``put``: put_(self, index, source, accumulate): self viewed as 1-D (row-major), index_put_ at index (negative
  indices from the end); accumulate adds (atomically: duplicates add up). An index or source overlapping self
  raises the CPU's error (at::assert_no_overlap's test: their bytes intersect). An index out of range, an index of
  another type than int64 or a source of another size or dtype go to the host (torch's error).
- ``unique_consecutive``: each run of equal consecutive elements (dim None) or slices along dim (equal in every
  element) once, with the run each element is in (the running count of run starts) and each run's length
  (the differences of the starts); NaN equals nothing, as the CPU's `!=`.
- ``unique_dim``: unique(dim=) as the CPU's: the slices along dim sorted lexicographically (a stable sort of each
  element column, the last first), the first of each run of equal ones, each slice's run (scattered back to its
  place) and the runs' lengths.
- ``pdist``: _pdist_forward(self, p): the p-norm of x[i] - x[j] for every pair i < j of rows (triu_indices), in
  the order torch lists them, by plate's vector norm (CUDA's formulas per p: 0 counts nonzeros, inf the largest
  magnitude). float32 and float64 (the CPU kernel's types; others go to the host, its error).
- ``pdist_backward``: _pdist_backward(grad, self, p, pdist): each pair's gradient by ATen's CPU formulas per p (0:
  none; 1: sign(diff); 2: diff / dist; inf: sign(diff) where |diff| is the distance; below 2: sign(diff) |diff|^(p-1)
  / dist^(p-1), 0 where diff is 0 and p < 1; above: diff |diff|^(p-2) / dist^(p-1); 0 at a zero distance), times
  grad, added onto row i and subtracted from row j (index_add: the adds' order is the atomics', not the CPU loop's)."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from .launch import REAL_DTYPES
from .ops import Call, checked
from .table import Row


def masked_scatter(op: torch._ops.OpOverload, row: Row) -> Callable:
    @checked(op)
    def kernel(call: Call, expected):
        x, mask, source = call["self"], call["mask"], call["source"]
        if x.dtype not in REAL_DTYPES or mask.dtype != torch.bool or source.dtype != x.dtype:
            return call.on_host()  # a byte mask (deprecated), another source dtype: torch's errors
        if mask.device != x.device or source.device != x.device:
            return call.on_host()
        flat = mask.expand(x.shape).reshape(-1)
        if flat.numel() == 0:
            return x
        picks = flat.cumsum(0)  # 1 + the index in source of each true element
        if int(picks[-1].item()) > source.numel():
            return call.on_host()  # the CPU raises: fewer source elements than trues
        taken = source.reshape(-1)[(picks - 1).clamp_(min=0)] if source.numel() else x.reshape(-1)
        return x.copy_(torch.where(flat, taken, x.reshape(-1)).view(x.shape))

    return kernel


# at::assert_no_overlap's message (the host fallback copies each tensor apart, so it cannot see the overlap)
OVERLAP = (
    "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory "
    "location. Please clone() the tensor before performing the operation."
)


def _overlap(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether a's and b's bytes intersect in one storage (at::get_overlap_status: partial or full)."""
    if a.numel() == 0 or b.numel() == 0 or a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr():
        return False

    def extent(t):
        start = t.storage_offset() * t.element_size()
        last = sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))
        return start, start + (last + 1) * t.element_size()

    (a0, a1), (b0, b1) = extent(a), extent(b)
    return a0 < b1 and b0 < a1


def put(op: torch._ops.OpOverload, row: Row) -> Callable:
    @checked(op)
    def kernel(call: Call, expected):
        x, index, source = call["self"], call["index"], call["source"]
        if x.dtype not in REAL_DTYPES or index.dtype != torch.int64 or source.dtype != x.dtype:
            return call.on_host()
        if index.device != x.device or source.device != x.device or index.numel() != source.numel():
            return call.on_host()
        if any(_overlap(x, t) for t in (index, source)):
            raise RuntimeError(OVERLAP)
        if index.numel() == 0:
            return x
        n = x.numel()
        flat = index.reshape(-1)
        if bool(((flat < -n) | (flat >= n)).any()):
            return call.on_host()  # the CPU's IndexError
        flat = torch.where(flat < 0, flat + n, flat)
        target = x if x.is_contiguous() else x.contiguous()
        target.view(-1).index_put_((flat,), source.reshape(-1), call["accumulate"])
        return x if target is x else x.copy_(target)

    return kernel


def unique_consecutive(op: torch._ops.OpOverload, row: Row) -> Callable:
    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        x, dim = call["self"], call["dim"]
        if call.mixed or x.dtype not in REAL_DTYPES or (dim is not None and not -x.dim() <= dim < max(x.dim(), 1)):
            return call.on_host()  # complex tensors, a dim out of range: the host (torch's error)
        if dim is not None and x.dim() == 0:
            return call.on_host()
        along = x.reshape(-1) if dim is None else x.movedim(dim, 0)
        n = along.shape[0]
        starts_flag = torch.ones(n, dtype=torch.bool, device=x.device)
        if n > 1:
            rows = along.reshape(n, -1)
            changed = rows[1:] != rows[:-1]
            starts_flag[1:] = changed.reshape(-1) if dim is None else changed.any(1)
        starts = starts_flag.nonzero().reshape(-1)
        values = along.index_select(0, starts) if n else along.clone()
        values = values if dim is None else values.movedim(0, dim).contiguous()
        empty = torch.empty(0, dtype=torch.int64, device=x.device)
        inverse = empty
        if call["return_inverse"]:
            runs = starts_flag.cumsum(0) - 1
            inverse = runs.view(x.shape) if dim is None else runs
        counts = empty
        if call["return_counts"]:
            ends = torch.cat([starts, torch.full((1,), n, dtype=torch.int64, device=x.device)])
            counts = ends[1:] - ends[:-1]
        return values, inverse, counts

    return kernel


def unique_dim(op: torch._ops.OpOverload, row: Row) -> Callable:
    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        x, dim = call["self"], call["dim"]
        if call.mixed or x.dtype not in REAL_DTYPES or x.dim() == 0 or not -x.dim() <= dim < x.dim():
            return call.on_host()  # complex tensors, a 0-d one, a dim out of range: the host (torch's error)
        along = x.movedim(dim, 0)
        n = along.shape[0]
        empty = torch.empty(0, dtype=torch.int64, device=x.device)
        if n == 0:
            return x.clone(), empty, empty
        rows = along.reshape(n, -1)
        if rows.shape[1] == 0:
            return call.on_host()  # the CPU's error: 0-sized dims not selected
        order = torch.arange(n, device=x.device)
        for column in reversed(range(rows.shape[1])):  # least significant column first: each sort stable
            keys = rows[:, column].index_select(0, order)
            order = order.index_select(0, torch.sort(keys, stable=True).indices)
        ordered = rows.index_select(0, order)
        starts_flag = torch.ones(n, dtype=torch.bool, device=x.device)
        if n > 1:
            starts_flag[1:] = (ordered[1:] != ordered[:-1]).any(1)
        starts = starts_flag.nonzero().reshape(-1)
        values = along.index_select(0, order.index_select(0, starts)).movedim(0, dim).contiguous()
        inverse = torch.empty_like(order).scatter_(0, order, starts_flag.cumsum(0) - 1)
        ends = torch.cat([starts, torch.full((1,), n, dtype=torch.int64, device=x.device)])
        return values, inverse, ends[1:] - ends[:-1]

    return kernel


def pdist(op: torch._ops.OpOverload, row: Row) -> Callable:
    @checked(op)
    def kernel(call: Call, expected):
        x, p = call["self"], call["p"]
        if x.dtype not in (torch.float32, torch.float64) or x.dim() != 2:
            return call.on_host()
        n = x.shape[0]
        if n < 2:
            return torch.empty(expected.shape, dtype=x.dtype, device=x.device)
        pairs = torch.triu_indices(n, n, 1, device=x.device)
        differences = x.index_select(0, pairs[0]) - x.index_select(0, pairs[1])
        return torch.linalg.vector_norm(differences, p, dim=1)

    return kernel


def pdist_backward(op: torch._ops.OpOverload, row: Row) -> Callable:
    @checked(op)
    def kernel(call: Call, expected):
        grad, x, p, dist = call["grad"], call["self"], call["p"], call["pdist"]
        if x.dtype not in (torch.float32, torch.float64) or x.dim() != 2 or grad.dtype != x.dtype:
            return call.on_host()
        n = x.shape[0]
        result = torch.zeros(expected.shape, dtype=x.dtype, device=x.device)
        if n < 2 or p == 0:
            return result
        pairs = torch.triu_indices(n, n, 1, device=x.device)
        diff = x.index_select(0, pairs[0]) - x.index_select(0, pairs[1])
        g, d = grad.reshape(-1, 1), dist.reshape(-1, 1)
        zero = torch.zeros((), dtype=x.dtype, device=x.device)
        if p == 1:
            per_pair = g * torch.sign(diff)
        elif p == math.inf:
            per_pair = g * torch.sign(diff) * (diff.abs() == d)
        elif p == 2:
            per_pair = torch.where(d == 0, zero, g * diff / d)
        elif p < 2:
            step = torch.sign(diff) * diff.abs().pow(p - 1) * g / d.pow(p - 1)
            per_pair = torch.where((d == 0) | ((diff == 0) & (p < 1)), zero, step)
        else:
            per_pair = torch.where(d == 0, zero, diff * diff.abs().pow(p - 2) * g / d.pow(p - 1))
        return result.index_add_(0, pairs[0], per_pair).index_add_(0, pairs[1], per_pair, alpha=-1)

    return kernel


FAMILIES = {
    "pdist_backward": pdist_backward,
    "unique_dim": unique_dim,
    "masked_scatter": masked_scatter,
    "put": put,
    "unique_consecutive": unique_consecutive,
    "pdist": pdist,
}
