"""The index family: gather, index_select, scatter (value, src, add, amax/amin/sum reductions) and
index/index_put with one index tensor on the first dim, as launches of kernels.indexed over the
index's iteration space; scatter's prod and mean and the types atomics lack in index order
(scatter_reduce.py); several index tensors and boolean masks through element offsets
(advanced_index.py). An index out of range is not used, and raises torch's error after the launch
(IndexOutOfBounds), where CUDA's device-side assert stops the kernel: one in the next row of a larger tensor
would not fault in the simulator."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import torch

from . import launch
from .advanced_index import index_or_put
from .launch import REAL_DTYPES, broadcast_strides
from .ops import Call, IndexOutOfBounds, _overlaps, check_index_bounds, checked, on_one_dim_views
from .scatter_reduce import scatter_in_order
from .table import Row

INDEX_DTYPES = (torch.int64, torch.int32)
# index_put_'s accumulate of a type atomics lack: the type it accumulates in
WIDER = {
    torch.float16: torch.float32,
    torch.bfloat16: torch.float32,
    torch.bool: torch.int64,
    torch.uint8: torch.int64,
    torch.int8: torch.int64,
    torch.int16: torch.int64,
}
# scatter_reduce's reductions with an atomic: the kernel mode and the identity include_self=False starts from
REDUCTIONS = {"sum": ("SCATTER_ADD", 0), "amax": ("SCATTER_MAX", "min"), "amin": ("SCATTER_MIN", "max")}
# the element types Triton's atomics take, by kernel mode (others, bool and the half types, go to the host)
ATOMIC_DTYPES = {
    "SCATTER_ADD": (torch.float32, torch.float64, torch.int32, torch.int64),
    "SCATTER_MAX": (torch.float32, torch.int32, torch.int64),
    "SCATTER_MIN": (torch.float32, torch.int32, torch.int64),
}


def _strides_without(t: torch.Tensor, dim: int) -> list[int]:
    return [0 if d == dim else t.stride(d) for d in range(t.dim())]


# launches one indexed op may take when its layout needs more than launch.RANK dims: its outermost dims looped
# over on the host, one launch per position (a fold's 6-dim scatter: 4 launches)
MAX_LAUNCHES = 256


def _peeled(shape, strides) -> int | None:
    """How many outermost dims to loop over so that the rest coalesces into launch.RANK dims (0: none); None
    when that takes more than MAX_LAUNCHES launches."""
    for k in range(len(shape) + 1):
        if launch.fits(shape[k:], [s[k:] for s in strides]):
            return k if math.prod(shape[:k]) <= MAX_LAUNCHES else None
    return None


def _shifted(t: torch.Tensor, elements: int) -> torch.Tensor:
    """A view of t's storage starting `elements` further on: the kernel addresses from its first element."""
    return t.as_strided((1,), (1,), t.storage_offset() + elements)


def _run(
    mode: str, shape, out, source, index, strides, size: int | None, step: int, dim: int = 0, wraps: bool = True
) -> bool:
    """kernels.indexed over `shape`; each element is its own (gather, store or atomic), so a layout of more dims
    than a launch takes runs as one launch per position of its outermost dims (False: more than MAX_LAUNCHES,
    nothing launched). With a `size` (the indexed dim's, `dim`), an index outside [-size, size) ([0, size) when
    not `wraps`: gather, scatter and index_select take no negative index) raises
    IndexOutOfBounds after the launches, which leave the places of such indices as they were (a dim of size 0
    refuses every index; size None: `index` holds element offsets, which advanced_index checked)."""
    shape = list(shape)
    peel = _peeled(shape, strides)
    if peel is None:
        return False
    k = launch.kernels()
    if mode in ("GATHER", "SCATTER") and out.dtype == source.dtype and out.dtype in launch.BIT_TYPES:
        bits = launch.BIT_TYPES[out.dtype]  # elements moved as they are: one kernel for every type of a width
        out, source = out.view(bits), source.view(bits)
    tensors = (out, source, index)
    flag = torch.zeros(2, dtype=torch.int64, device=out.device) if size is not None else None
    for position in itertools.product(*(range(n) for n in shape[:peel])):
        views = [
            _shifted(t, sum(i * s for i, s in zip(position, st[:peel]))) if peel else t
            for t, st in zip(tensors, strides)
        ]
        rest = [st[peel:] for st in strides]
        if flag is not None:
            views.append(flag)
            rest.append([0] * len(rest[0]))
        checked = {"CHECKED": True, "WRAPS": wraps} if flag is not None else {}
        launch.launch("indexed", shape[peel:], views, rest, size or 0, step, MODE=getattr(k, mode).value, **checked)
    if flag is not None:
        found, value = flag.tolist()
        if found:
            raise IndexOutOfBounds(f"index {value} is out of bounds for dimension {dim} with size {size}")
    return True


def _covered(*tensors) -> bool:
    return all(t.dtype in REAL_DTYPES and t.device.type == "plate" for t in tensors)


def gather(op: torch._ops.OpOverload, row: Row) -> Callable:
    @checked(op)
    def kernel(call: Call, expected):
        self, index = call["self"], call["index"]
        dim = call["dim"] % max(self.dim(), 1)
        if self.dim() == 0 and index.dim() <= 1 and _covered(self, index):
            return on_one_dim_views(call, expected, ("self", "index"))
        out = call[call.target_name] if call.target_name else None
        if out is None:
            out = torch.empty_strided(expected.shape, expected.stride(), dtype=expected.dtype, device=self.device)
        elif out.shape != expected.shape:
            out.resize_(expected.shape)
        if expected.numel() == 0 and self.device.type == "plate":
            return out  # an empty index (of any integer type the CPU takes then): nothing gathered
        if self.dim() == 0 or index.dtype not in INDEX_DTYPES or not _covered(self, index):
            return call.on_host()
        if _overlaps(out, [self, index]):
            return call.on_host()
        shape = out.shape
        if row.fn == "index_select":  # a 1-D (or 0-dim) index along dim
            index_strides = [index.stride(0) if d == dim and index.dim() else 0 for d in range(len(shape))]
        else:
            index_strides = broadcast_strides(index, shape)
        strides = [list(out.stride()), _strides_without(self, dim), index_strides]
        if not _run("GATHER", shape, out, self, index, strides, self.shape[dim], self.stride(dim), dim, wraps=False):
            return call.on_host()
        return out

    return kernel


def scatter(op: torch._ops.OpOverload, row: Row) -> Callable:
    @checked(op)
    def kernel(call: Call, expected):
        self, index = call["self"], call["index"]
        reduce = call.bound.get("reduce")
        if row.fn == "scatter_add":
            reduce = "sum"
        mode = "SCATTER" if reduce is None else REDUCTIONS.get(reduce, (None,))[0]
        source = call.bound.get("src")
        if source is None:
            source = torch.tensor(call["value"], dtype=self.dtype).to(self.device)
        if self.dim() == 0 and index.dim() <= 1 and source.dim() <= 1 and _covered(self, index, source):
            return on_one_dim_views(call, expected, ("self", "index", "src"))
        inplace = call.target_name == "self"
        if index.numel() == 0 and _covered(self, index, source):  # of any integer type the CPU takes then
            return self if inplace else self.clone(memory_format=torch.preserve_format)  # nothing scattered
        if self.dim() == 0 or index.dtype not in INDEX_DTYPES or not _covered(self, index, source):
            return call.on_host()
        if _overlaps(self, [index, source]) and inplace:
            return call.on_host()
        out = self if inplace else self.clone(memory_format=torch.preserve_format)
        dim = call["dim"] % self.dim()
        if reduce is not None and (mode is None or self.dtype not in ATOMIC_DTYPES[mode]):
            # prod, mean and the types atomics lack: in index order, without atomics
            include_self = call.bound.get("include_self", True) is not False
            check_index_bounds(index, out.shape[dim], dim, wraps=False)
            if not scatter_in_order(out, index, source, dim, reduce, include_self):
                return call.on_host()
            return out
        shape = index.shape
        if index.numel() == 0:
            return out
        strides = [_strides_without(out, dim), broadcast_strides(source, shape), list(index.stride())]
        if source.dim() and source.dim() != index.dim():
            return call.on_host()
        if source.dim():
            strides[1] = [source.stride(d) for d in range(source.dim())]
        if call.bound.get("include_self", True) is False:  # start the scattered places from the identity
            identity = REDUCTIONS[reduce][1]
            if isinstance(identity, str):
                info = torch.finfo(out.dtype) if out.dtype.is_floating_point else torch.iinfo(out.dtype)
                identity = getattr(info, identity)
                if out.dtype.is_floating_point:
                    identity = -float("inf") if reduce == "amax" else float("inf")
            start = torch.tensor(identity, dtype=out.dtype).to(out.device)
            fill = [strides[0], [0] * len(shape), strides[2]]
            if not _run("SCATTER", shape, out, start, index, fill, out.shape[dim], out.stride(dim), dim, wraps=False):
                return call.on_host()
        # a float max/min keeps NaN as ATen's (CPU loop and CUDA's safe_max/safe_min atomics): the atomics skip the
        # source's NaNs, a second launch writes them, and self's NaNs (include_self) are put back from a copy
        saved = out.clone() if mode in ("SCATTER_MAX", "SCATTER_MIN") and out.dtype.is_floating_point else None
        if not _run(mode, shape, out, source, index, strides, out.shape[dim], out.stride(dim), dim, wraps=False):
            return call.on_host()
        if saved is not None:
            _run("SCATTER_NAN", shape, out, source, index, strides, out.shape[dim], out.stride(dim), dim, wraps=False)
            out.copy_(torch.where(torch.isnan(saved), saved, out))
        return out

    return kernel


def _single_index(call: Call):
    """The index tensor of index/index_put when it is one integer tensor on the first dim, else None."""
    indices = [i for i in call["indices"]]
    while indices and indices[-1] is None:
        indices.pop()
    if len(indices) != 1 or indices[0] is None or indices[0].dtype not in INDEX_DTYPES:
        return None
    return indices[0]


def index(op: torch._ops.OpOverload, row: Row) -> Callable:
    """index.Tensor (x[idx]) and index_put_/_index_put_impl_ (x[idx] = v, x[idx] += v) with one index on dim 0."""

    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        self = call["self"]
        if _atomic_refused(call, self) and self.device.type == "plate" and self.dtype in WIDER:
            return _accumulate_wider(call)
        idx = _single_index(call)
        if idx is None and self.dim() and _covered(self) and not _atomic_refused(call, self):
            result = index_or_put(call, row, _run)  # several indices, masks, other dims
            return call.on_host() if result is None else result
        if idx is None or self.dim() == 0 or not _covered(self):
            return call.on_host()
        idx = idx.to(self.device)  # a CPU index, as CUDA takes one
        rest = list(self.shape[1:])
        shape = [*idx.shape, *rest]
        k = idx.dim()
        index_strides = [*idx.stride(), *([0] * len(rest))]
        self_strides = [*([0] * k), *self.stride()[1:]]
        if row.fn == "index":
            out = torch.empty(shape, dtype=self.dtype, device=self.device)
            strides = [list(out.stride()), self_strides, index_strides]
            if not _run("GATHER", shape, out, self, idx, strides, self.shape[0], self.stride(0)):
                return call.on_host()
            return out
        values = call["values"]
        if values.device.type == "cpu" and values.dim() == 0:
            values = values.to(self.device)
        if values.device != self.device or values.dtype not in REAL_DTYPES or _overlaps(self, [values, idx]):
            return call.on_host()
        try:
            torch.broadcast_shapes(values.shape, shape)
        except RuntimeError:
            return call.on_host()
        inplace = call.target_name == "self"
        out = self if inplace else self.clone(memory_format=torch.preserve_format)
        mode = "SCATTER_ADD" if call["accumulate"] else "SCATTER"
        if mode in ATOMIC_DTYPES and self.dtype not in ATOMIC_DTYPES[mode]:
            return call.on_host()
        strides = [self_strides, broadcast_strides(values, shape), index_strides]
        if not _run(mode, shape, out, values, idx, strides, self.shape[0], self.stride(0)):
            return call.on_host()
        return out

    return kernel


def _accumulate_wider(call: Call) -> torch.Tensor:
    """index_put_ with accumulate=True of a type atomics lack, accumulated in a wider copy and copied back:
    the half types in float32 (rounding once, as CUDA's opmath), bool and the small integers in int64
    (which or and wrap alike)."""
    self, values = call["self"], call["values"]
    if values.dtype != self.dtype:
        return call.on_host()  # the host raises torch's error
    wide = WIDER[self.dtype]
    work = self.to(wide)
    torch.ops.aten.index_put_(work, call["indices"], values.to(wide), True)
    return self.copy_(work) if call.target_name == "self" else work.to(self.dtype)


def _atomic_refused(call: Call, self: torch.Tensor) -> bool:
    """index_put_ with accumulate=True of a type Triton's atomics lack."""
    accumulate = call.bound.get("accumulate", False)
    return bool(accumulate) and self.dtype not in ATOMIC_DTYPES["SCATTER_ADD"]


FAMILIES: dict[str, Callable[[torch._ops.OpOverload, Row], Callable]] = {
    "gather": gather,
    "scatter": scatter,
    "index": index,
}
