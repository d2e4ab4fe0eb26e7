"""Advanced indexing beyond the index family's one index on the first dim (indexing.py): several index
tensors, on any dims, boolean masks, and nonzero.

A mask becomes its nonzero elements' coordinates (prefix_kernels: each block's count, their exclusive
sum, then each block's coordinates; a mask of one block in one launch; one index tensor per dim it
covers). The index tensors, broadcast together, give each element of the indexed shape one element offset
into self (sum of index * stride, negatives counted from the dim's size, computed by plate's elementwise
kernels: none for a mask's coordinates, which are never negative, nor a multiply by a stride of 1: `x[mask]`
on a contiguous 1-dim x takes the coordinates as its offsets, with no elementwise launch); kernels.indexed then
gathers (index) or scatters (index_put_, atomically adding with accumulate=True) through that offset,
over the result's dims laid out as torch lays them out: the broadcast index dims in place of adjacent
indexed dims, else first."""

from __future__ import annotations

import importlib

import torch

from .launch import REAL_DTYPES, broadcast_strides, triton_cdiv
from .ops import Call, _overlaps, check_index_bounds

INDEX_DTYPES = (torch.int64, torch.int32)
MASK_DTYPES = (torch.bool, torch.uint8)


def kernels():
    return importlib.import_module(f"{__package__}.prefix_kernels")


def nonzero_of(x: torch.Tensor) -> torch.Tensor | None:
    """torch.nonzero(x) on x's device: (count, x.dim()) int64. None where the kernel does not cover x."""
    k = kernels()
    if x.dim() == 0 or x.dim() > k.RANK or x.dtype not in REAL_DTYPES or x.device.type != "plate":
        return None
    flat = x.contiguous()
    coordinates = torch.empty((x.numel(), x.dim()), dtype=torch.int64, device=x.device)
    if x.numel() == 0:
        return coordinates
    n, machine = x.numel(), k.machine_of(x)
    blocks = triton_cdiv(n, k.NONZERO_BLOCK)
    count = torch.empty(1, dtype=torch.int64, device=x.device)
    sizes = [1] * (k.RANK - x.dim()) + list(x.shape)
    if blocks == 1:  # one launch: the block's places from 0, its count into `count`
        k.nonzero_place[(1,)](
            flat, count, coordinates, n, *sizes[1:], NDIM=x.dim(), BLOCK=k.NONZERO_BLOCK, ONE_BLOCK=True,
            machine=machine,
        )  # fmt: skip
        return coordinates[: int(count.item())]
    counts = torch.empty(blocks, dtype=torch.int64, device=x.device)
    starts = torch.empty(blocks, dtype=torch.int64, device=x.device)
    k.nonzero_counts[(blocks,)](flat, counts, n, BLOCK=k.NONZERO_BLOCK, machine=machine)
    k.exclusive_sum[(1,)](counts, starts, count, blocks, BLOCK=k.BLOCK, machine=machine)
    k.nonzero_place[(blocks,)](
        flat, starts, coordinates, n, *sizes[1:], NDIM=x.dim(), BLOCK=k.NONZERO_BLOCK, machine=machine
    )
    return coordinates[: int(count.item())]


def nonzero(op: torch._ops.OpOverload, row):
    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        x = call["self"]
        if call.target_name is not None:
            return call.on_host()
        if isinstance(x, torch.Tensor) and x.dim() == 0:  # (count, 0): a 0-d tensor has no coordinates
            result = nonzero_of(x.reshape(1))
            return call.on_host() if result is None else result[:, :0].clone()
        result = nonzero_of(x)
        return call.on_host() if result is None else result.clone()

    return kernel


def _expanded(self: torch.Tensor, indices) -> tuple[list, set[int]] | None:
    """The indices with each mask replaced by its coordinates (one index per dim it covers), all on self's
    device, and the dims indexed by coordinates (never negative); None for a form the kernels do not take."""
    out = []
    coordinate_dims = set()
    for index in indices:
        if index is None:
            out.append(None)
        elif index.dtype in MASK_DTYPES:
            coordinates = nonzero_of(index.to(self.device))
            if coordinates is None:
                return None
            coordinate_dims.update(range(len(out), len(out) + index.dim()))
            out.extend(coordinates[:, d] for d in range(index.dim()))
        elif index.dtype in INDEX_DTYPES:
            if len(out) < self.dim():  # (more indices than dims: the host raises torch's error)
                check_index_bounds(index.to(self.device), self.shape[len(out)], len(out))
            out.append(index.to(self.device))
        else:
            return None
    while out and out[-1] is None:
        out.pop()
    return (out, coordinate_dims) if out and len(out) <= self.dim() else None


def _layout(self: torch.Tensor, indices: list, coordinate_dims: set[int]):
    """(result shape, self's strides over it (0 along the index dims), the offset tensor, its strides).
    coordinate_dims: the dims whose index is a mask's coordinates, in [0, size): taken as they are."""
    positions = [d for d, index in enumerate(indices) if index is not None]
    broadcast = list(torch.broadcast_shapes(*(indices[d].shape for d in positions)))
    offset = None
    for d in positions:
        index = indices[d]
        term = index if d in coordinate_dims else torch.where(index < 0, index + self.shape[d], index)
        if self.stride(d) != 1:
            term = term * self.stride(d)
        offset = term if offset is None else offset + term
    sliced = [d for d in range(self.dim()) if d not in positions]
    if positions == list(range(positions[0], positions[-1] + 1)):  # adjacent: the index dims in their place
        before = [d for d in sliced if d < positions[0]]
        after = [d for d in sliced if d > positions[-1]]
    else:  # apart: the index dims first
        before, after = [], sliced
    shape = [self.shape[d] for d in before] + broadcast + [self.shape[d] for d in after]
    self_strides = [self.stride(d) for d in before] + [0] * len(broadcast) + [self.stride(d) for d in after]
    offset_strides = [0] * len(before) + broadcast_strides(offset, broadcast) + [0] * len(after)
    return shape, self_strides, offset, offset_strides


def _index_layout(self: torch.Tensor, indices: list) -> torch.Tensor:
    """index's result on meta tensors, its masks replaced by their coordinates: the strides torch gives it
    (TensorIterator's, which keep self's memory format along the sliced dims)."""

    def meta(t):
        return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta")

    return torch.ops.aten.index.Tensor(meta(self), [None if i is None else meta(i) for i in indices])


def index_or_put(call: Call, row, run) -> torch.Tensor | None:
    """index.Tensor or index_put_/_index_put_impl_ through offsets (`run`: indexing._run); None where the
    kernels do not take the call (the caller runs it on the host)."""
    self = call["self"]
    if self.dim() == 0 or self.dtype not in REAL_DTYPES or self.device.type != "plate":
        return None
    expanded = _expanded(self, call["indices"])
    if expanded is None:
        return None
    indices, coordinate_dims = expanded
    try:
        shape, self_strides, offset, offset_strides = _layout(self, indices, coordinate_dims)
    except RuntimeError:
        return None  # indices that do not broadcast: the host raises torch's error
    if row.fn == "index":
        expected = _index_layout(self, indices)
        if list(expected.shape) != shape:
            return None
        out = torch.empty_strided(shape, expected.stride(), dtype=self.dtype, device=self.device)
        strides = [list(out.stride()), self_strides, offset_strides]
        return out if run("GATHER", shape, out, self, offset, strides, None, 1) else None
    values = call["values"]
    if values.device.type == "cpu" and values.dim() == 0:
        values = values.to(self.device)
    if values.device != self.device or values.dtype != self.dtype:
        return None
    try:
        torch.broadcast_shapes(values.shape, shape)
    except RuntimeError:
        return None
    mode = "SCATTER_ADD" if call["accumulate"] else "SCATTER"
    inplace = call.target_name == "self"
    if inplace and _overlaps(self, [values]):
        return None
    out = self if inplace else self.clone(memory_format=torch.preserve_format)
    strides = [self_strides, broadcast_strides(values, shape), offset_strides]
    return out if run(mode, shape, out, values, offset, strides, None, 1) else None


FAMILIES = {"nonzero": nonzero}
