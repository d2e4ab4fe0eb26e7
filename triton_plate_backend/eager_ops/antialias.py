"""Antialiased bilinear / bicubic resizing (F.interpolate(..., antialias=True), torchvision's Resize) on plate
tensors: _upsample_bilinear2d_aa, _upsample_bicubic2d_aa and their backward.

ATen's CPU kernel (Pillow's algorithm) is separable: each output index i along a dim reads the inputs
[xmin, xmin + xsize) with weights filter((j - center + 0.5) * invscale), normalized to sum 1, where
scale = in / out (or (in - 1) / (out - 1) with align_corners, 1 / scale_factor where given), center = scale (i + 0.5),
support = 1 (bilinear) or 2 (bicubic) times max(scale, 1), invscale = 1 / max(scale, 1), the filter the triangle
(bilinear) or Keys' cubic with a = -0.5 (bicubic). Here the weights of each dim are a dense (out, in) matrix built
on the host in the tensor's type (a table of the sizes, like the CPU kernel's), and the resize is two plate
matmuls, out = W_h X W_w^T; the gradient is W_h^T G W_w. Values agree with the CPU's to rounding (its loops add
the taps in index order, plate's matmuls in K steps). float32 / float64; other dtypes go to the host, which
raises the CPU's error (or runs its uint8 kernel), counted."""

from __future__ import annotations

import math

import torch

from .ops import Call, as_expected, checked
from .table import Row

DTYPES = (torch.float32, torch.float64)


def _triangle(x: float) -> float:
    x = abs(x)
    return 1.0 - x if x < 1.0 else 0.0


def _cubic(x: float) -> float:
    a = -0.5
    x = abs(x)
    if x < 1.0:
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1
    if x < 2.0:
        return (((x - 5) * x + 8) * x - 4) * a
    return 0.0


FILTERS = {"bilinear": (_triangle, 2), "bicubic": (_cubic, 4)}


def _scale(size: int, out: int, align_corners: bool, factor) -> float:
    """ATen's area_pixel_compute_scale."""
    if align_corners:
        return (size - 1) / (out - 1) if out > 1 else 0.0
    return 1.0 / factor if factor is not None and factor > 0 else size / out


def weights(size: int, out: int, align_corners: bool, factor, kind: str, dtype: torch.dtype) -> torch.Tensor:
    """The (out, size) matrix of one dim's normalized taps, each computed in ``dtype`` (a CPU tensor)."""
    fn, interp = FILTERS[kind]
    as_type = (lambda v: float(torch.tensor(v, dtype=dtype))) if dtype == torch.float32 else float
    scale = as_type(_scale(size, out, align_corners, factor))
    support = as_type((interp * 0.5) * scale if scale >= 1.0 else interp * 0.5)
    invscale = as_type(1.0 / scale) if scale >= 1.0 else 1.0
    matrix = torch.zeros(out, size, dtype=dtype)
    for i in range(out):
        center = as_type(scale * (i + 0.5))
        low = max(math.trunc(as_type(center - support + 0.5)), 0)
        high = min(math.trunc(as_type(center + support + 0.5)), size)
        taps = [as_type(fn(as_type(as_type(j - center + 0.5) * invscale))) for j in range(low, high)]
        total = sum(taps)  # the CPU adds them in its type; the normalization divides by it
        total = as_type(total)
        if total != 0:
            taps = [as_type(w / total) for w in taps]
        matrix[i, low:high] = torch.tensor(taps, dtype=dtype)
    return matrix


def _matrices(in_hw, out_hw, align_corners, scales, kind, dtype, device):
    return [
        weights(size, out, align_corners, factor, kind, dtype).to(device)
        for size, out, factor in zip(in_hw, out_hw, scales)
    ]  # fmt: skip


def forward(kind: str):
    def build(op: torch._ops.OpOverload, row: Row):
        @checked(op)
        def kernel(call: Call, expected):
            x = call["self"]
            if x.dtype not in DTYPES or x.dim() != 4:
                return call.on_host()
            out_hw = list(expected.shape[-2:])
            scales = (call["scales_h"], call["scales_w"])
            w_h, w_w = _matrices(x.shape[-2:], out_hw, call["align_corners"], scales, kind, x.dtype, x.device)
            result = torch.matmul(w_h, torch.matmul(x, w_w.mT))
            return as_expected(result, expected)

        return kernel

    return build


def backward(kind: str):
    def build(op: torch._ops.OpOverload, row: Row):
        @checked(op)
        def kernel(call: Call, expected):
            grad = call["grad_output"]
            if grad.dtype not in DTYPES or grad.dim() != 4:
                return call.on_host()
            in_hw, out_hw = list(call["input_size"])[-2:], list(call["output_size"])
            scales = (call["scales_h"], call["scales_w"])
            w_h, w_w = _matrices(in_hw, out_hw, call["align_corners"], scales, kind, grad.dtype, grad.device)
            result = torch.matmul(w_h.mT, torch.matmul(grad, w_w))
            return as_expected(result, expected)

        return kernel

    return build


FAMILIES = {
    "upsample_aa": lambda op, row: forward(row.fn)(op, row),
    "upsample_aa_backward": lambda op, row: backward(row.fn)(op, row),
}
