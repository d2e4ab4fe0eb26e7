"""Scatter reductions in index order (scatter_kernels.scatter_ordered): the scatter family's (indexing.py)
reductions that atomics cannot do, prod and mean, and the element types Triton's atomics lack (bool and
the half types). One lane per place of the result walks the index along the scattered dim, so each place
combines its sources in the index's order, as the CPU's loop does (equal results in every type, sums of
bf16 included)."""

from __future__ import annotations

import importlib

import torch

from . import launch
from .launch import REAL_DTYPES

# scatter_reduce's reductions -> the kernel's modes (scatter_add is "sum")
MODES = {"sum": "SUM", "prod": "PROD", "mean": "MEAN", "amax": "AMAX", "amin": "AMIN"}


def kernels():
    return importlib.import_module(f"{__package__}.scatter_kernels")


def scatter_in_order(
    out: torch.Tensor, index: torch.Tensor, source: torch.Tensor, dim: int, reduce: str, include_self: bool
) -> bool:
    """out (self, or its copy) reduced with source at index along dim, in place. False when the kernel does
    not cover the call (the caller runs it on the host)."""
    if reduce not in MODES or out.dim() == 0 or out.dtype not in REAL_DTYPES or source.dtype not in REAL_DTYPES:
        return False
    if source.dim() != index.dim() and source.dim() != 0:
        return False
    if index.numel() == 0:
        return True
    shape = list(index.shape)
    shape[dim] = out.shape[dim]

    def along_others(t: torch.Tensor) -> list[int]:
        return [0 if d == dim or t.dim() == 0 else t.stride(d) for d in range(len(shape))]

    position = [1 if d == dim else 0 for d in range(len(shape))]
    strides = [list(out.stride()), along_others(source), along_others(index), position]
    if not launch.fits(shape, strides):
        return False
    ct = torch.float32 if out.dtype in (torch.float16, torch.bfloat16) else out.dtype
    ct = torch.int32 if ct == torch.bool else ct  # a count of hits: True however many
    floor = not (out.dtype.is_floating_point or out.dtype == torch.bool)
    k = kernels()
    launch.launch_kernel(
        k.scatter_ordered, shape, [out, source, index], strides,
        index.shape[dim], source.stride(dim) if source.dim() else 0, index.stride(dim),
        MODE=getattr(k, MODES[reduce]).value, INCLUDE_SELF=int(include_self), CT=launch.triton_dtype(ct), FLOOR=floor,
    )  # fmt: skip
    return True
