"""grid_sampler_3d (F.grid_sample of a 5-D input) and its backward on plate tensors, one launch each
(grid_sampler_3d_kernels).

- ``grid_sampler_3d``: ATen's CPU kernel (grid_sampler_3d_cpu_impl): the grid's (x, y, z) unnormalized to source
  coordinates (align_corners) in the CPU's steps, padded (zeros, border, reflection), then trilinear (the 8 corners'
  weights, added in the CPU's order) or nearest (round half to even, as the CPU's nearbyint) gathers of the input;
  float32 / float64 bit for bit the CPU's.
- ``grid_sampler_3d_backward``: ATen's CPU kernel (grid_sampler_3d_backward_cpu_impl): the CPU's source
  coordinates and their derivative, grad_input by atomic adds in the CPU loop's order per element (None where
  output_mask[0] is False, as the CPU), grad_grid summed over channels and corners in the CPU's order (0 for
  nearest); both contiguous, as the CPU lays them out.

fp16/bf16 compute in float32 and round once. Bicubic (mode 2) and a call the CPU refuses go to the host, which
raises torch's error."""

from __future__ import annotations

import importlib

import torch

from . import launch
from .ops import HALF, Call, as_expected, checked
from .table import Row

BACKWARD_BLOCK = 512  # grid points a program of the backward takes (128: 2x the CPU time of the grid gradient)


def _launch(a: torch.Tensor, grid: torch.Tensor, mode: int, padding_mode: int, align_corners: bool) -> torch.Tensor:
    """grid_sampler_3d's values in one launch (grid_sampler_3d_kernels.grid_sample_3d)."""
    n, c, depth, height, width = a.shape
    _, od, oh, ow, _ = grid.shape
    out = torch.empty(n, c, od, oh, ow, dtype=a.dtype, device=a.device)
    total = out.numel()
    if total == 0:
        return out
    kernels = importlib.import_module(f"{__package__}.grid_sampler_3d_kernels")
    kernels.grid_sample_3d[(launch.triton_cdiv(total, launch.BLOCK),)](
        out, a, grid, total, c, od, oh, ow, depth, height, width, *a.stride(), *grid.stride(),
        NEAREST=mode == 1, PADDING=padding_mode, ALIGN=bool(align_corners), BLOCK=launch.BLOCK,
        machine=launch.kernels().machine_of(out),
    )  # fmt: skip
    return out


def grid_sampler_3d_op(op: torch._ops.OpOverload, row: Row):
    @checked(op)
    def kernel(call: Call, expected):
        a, grid, mode = call["input"], call["grid"], call["interpolation_mode"]
        if mode not in (0, 1) or call["padding_mode"] not in (0, 1, 2) or a.dim() != 5 or grid.dim() != 5:
            return call.on_host()
        if not (a.dtype.is_floating_point and grid.dtype == a.dtype) or grid.device != a.device:
            return call.on_host()
        ct = torch.float32 if a.dtype in HALF else a.dtype
        result = _launch(a.to(ct), grid.to(ct), mode, call["padding_mode"], call["align_corners"])
        return as_expected(result, expected)

    return kernel


def _backward(grad, a, grid, mode: int, padding_mode: int, align_corners: bool, input_gradient: bool):
    """(grad_input (zeros where not input_gradient), grad_grid), contiguous, in one launch."""
    n, c = a.shape[:2]
    points = grid.shape[1] * grid.shape[2] * grid.shape[3]
    grad_input = torch.zeros(a.shape if input_gradient else (0,), dtype=a.dtype, device=a.device)
    grad_grid = torch.empty(grid.shape, dtype=a.dtype, device=a.device)
    if a.numel() == 0 or grid.numel() == 0:
        return grad_input, grad_grid.zero_()
    blocks = launch.triton_cdiv(points, BACKWARD_BLOCK)
    kernels = importlib.import_module(f"{__package__}.grid_sampler_3d_kernels")
    kernels.grid_sample_3d_backward[(n * blocks,)](
        grad_input, grad_grid, grad, a, grid, blocks, c, *grid.shape[1:4], *a.shape[2:], *a.stride(), *grid.stride(),
        *grad.stride(), *(grad_input.stride() if input_gradient else (0,) * 5), NEAREST=mode == 1,
        PADDING=padding_mode, ALIGN=bool(align_corners), INPUT=input_gradient, BLOCK=BACKWARD_BLOCK,
        machine=launch.kernels().machine_of(grad_grid),
    )  # fmt: skip
    return grad_input, grad_grid


def grid_sampler_3d_backward(op: torch._ops.OpOverload, row: Row):
    @checked(op)
    def kernel(call: Call, expected):
        grad, a, grid, mode = call["grad_output"], call["input"], call["grid"], call["interpolation_mode"]
        if mode not in (0, 1) or call["padding_mode"] not in (0, 1, 2) or a.dim() != 5 or grid.dim() != 5:
            return call.on_host()
        if not (a.dtype.is_floating_point and grid.dtype == a.dtype == grad.dtype) or grad.shape[2:] != grid.shape[1:4]:
            return call.on_host()
        ct = torch.float32 if a.dtype in HALF else a.dtype
        wanted = bool(call["output_mask"][0])
        grads = _backward(grad.to(ct), a.to(ct), grid.to(ct), mode, call["padding_mode"], call["align_corners"], wanted)
        return tuple(
            None if e is None else g if g.dtype == e.dtype and g.stride() == e.stride() else as_expected(g, e)
            for g, e in zip(grads, expected)
        )

    return kernel


FAMILIES = {"grid_sampler_3d": grid_sampler_3d_op, "grid_sampler_3d_backward": grid_sampler_3d_backward}
