"""grid_sampler_3d (F.grid_sample of a 5-D input) on plate tensors: torch's grid_sampler_2d decomposition
(torch._decomp) carried to three dims, over plate kernels: the grid's (x, y, z) unnormalized to source
coordinates (align_corners), padded (zeros, border, reflection), then trilinear (the 8 corners' weights) or
nearest (round half to even, as the CPU's nearbyint) gathers of the input. fp16/bf16 compute in float32 and round
once. Its backward (grid_sampler_3d_backward) is gradients.py's vjp of this function. Bicubic (mode 2) and a call
the CPU refuses go to the host, which raises torch's error."""

from __future__ import annotations

import importlib

import torch

from . import launch
from .ops import HALF, Call, as_expected, checked
from .table import Row


def _unnormalize(coords: torch.Tensor, size: int, align_corners: bool) -> torch.Tensor:
    mul = (size * 0.5 - 0.5) if align_corners else (size * 0.5)
    return coords * mul + (size * 0.5 - 0.5)


def _reflect(coords: torch.Tensor, twice_low: int, twice_high: int) -> torch.Tensor:
    if twice_low == twice_high:
        return torch.zeros_like(coords)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    distance = (coords - low).abs()
    extra = torch.fmod(distance, span)
    flips = (distance / span).floor().to(torch.int8)
    return torch.where(flips & 1 == 0, extra + low, span + low - extra)


def _source(coords: torch.Tensor, size: int, padding_mode: int, align_corners: bool) -> torch.Tensor:
    coords = _unnormalize(coords, size, align_corners)
    if padding_mode == 1:  # border
        return coords.clamp(0, size - 1)
    if padding_mode == 2:  # reflection
        bounds = (0, 2 * (size - 1)) if align_corners else (-1, 2 * size - 1)
        return _reflect(coords, *bounds).clamp(0, size - 1)
    return coords


def grid_sampler_3d(
    a: torch.Tensor, grid: torch.Tensor, interpolation_mode: int, padding_mode: int, align_corners: bool
) -> torch.Tensor:
    n, c, depth, height, width = a.shape
    _, od, oh, ow, _ = grid.shape
    grid = grid.view(n, 1, od, oh, ow, 3).expand(n, c, od, oh, ow, 3)
    batch = torch.arange(n, device=a.device).view(n, 1, 1, 1, 1)
    channel = torch.arange(c, device=a.device).view(1, c, 1, 1, 1)
    sizes = (width, height, depth)
    ix, iy, iz = (_source(grid[..., k], size, padding_mode, align_corners) for k, size in enumerate(sizes))

    def tap(x: torch.Tensor, y: torch.Tensor, z: torch.Tensor, weight) -> torch.Tensor:
        inside = (x >= 0) & (x < width) & (y >= 0) & (y < height) & (z >= 0) & (z < depth)
        xi, yi, zi = (torch.where(inside, t, 0).to(torch.int64) for t in (x, y, z))
        value = a[batch, channel, zi, yi, xi]
        return torch.where(inside, value * weight, 0) if weight is not None else torch.where(inside, value, 0)

    if interpolation_mode == 1:  # nearest
        return tap(ix.round(), iy.round(), iz.round(), None)
    x0, y0, z0 = ix.floor(), iy.floor(), iz.floor()
    total = None
    for dz in (0, 1):
        for dy in (0, 1):
            for dx in (0, 1):
                x, y, z = x0 + dx, y0 + dy, z0 + dz
                # ATen's weights: the opposite corner's distances (tnw = (x1 - ix)(y1 - iy)(z1 - iz), ...)
                wx = (ix - x0) if dx else (x0 + 1 - ix)
                wy = (iy - y0) if dy else (y0 + 1 - iy)
                wz = (iz - z0) if dz else (z0 + 1 - iz)
                term = tap(x, y, z, wx * wy * wz)
                total = term if total is None else total + term
    return total


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


FAMILIES = {"grid_sampler_3d": grid_sampler_3d_op}
