"""Activation functions and their gradients on plate (family ``activation``), as on CUDA where each is a fused kernel.

The op's decomposition over plate tensors (each op of it a plate kernel): torch's own (torch._decomp; those of
pointwise functions compute fp16/bf16 in float32 and round once, pw_cast_for_opmath, as CUDA's kernels), or, where
torch has none, ``DECOMPOSITIONS``: hardshrink's and softshrink's gradient, grad where |x| > lambd and 0 in
[-lambd, lambd], as ATen's kernels (``self >= -lambd && self <= lambd ? 0 : grad``)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch._decomp import decomposition_table

from .table import Row

aten = torch.ops.aten


def _shrink_backward(grad_out: torch.Tensor, self: torch.Tensor, lambd=0.5) -> torch.Tensor:
    return torch.where((self >= -lambd) & (self <= lambd), torch.zeros_like(grad_out), grad_out)


DECOMPOSITIONS = {
    aten.hardshrink_backward.default: _shrink_backward,
    aten.softshrink_backward.default: _shrink_backward,
}


def activation(op: torch._ops.OpOverload, row: Row) -> Callable:
    decomposition = DECOMPOSITIONS.get(op) or decomposition_table[op]

    def kernel(*args, **kwargs):
        return decomposition(*args, **kwargs)

    return kernel


FAMILIES = {"activation": activation}
