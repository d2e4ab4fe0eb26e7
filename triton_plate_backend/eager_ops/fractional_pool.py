"""fractional_max_pool2d and its backward on plate tensors (float32 / float64), ATen's CPU kernel over plate
kernels. Each plane's window starts along a dim are generate_intervals of its random sample u:
trunc((i + u) * alpha) - trunc(u * alpha), alpha = (input - pool) / (output - 1), the last input - pool, computed
in the tensor's type as the CPU computes them; the windows are gathered, and each output is the window's first
largest element in row-major order unless the window holds a NaN, then its last NaN (the CPU's
``val > max || isnan(val)``), with that element's index in the plane. The backward adds each output's gradient at
its index (scatter_add; the CPU adds in its loop's order). float16/bfloat16 (which the CPU computes in steps
rounded to the half type) and a call the CPU refuses go to the host, counted."""

from __future__ import annotations

import torch

from .ops import Call, as_expected, checked
from .table import Row

DTYPES = (torch.float32, torch.float64)


def _starts(samples: torch.Tensor, size: int, out: int, pool: int) -> torch.Tensor:
    """(planes, out) int64 window starts along one dim from the (planes,) samples."""
    starts = torch.full((samples.shape[0], out), size - pool, dtype=torch.int64, device=samples.device)
    if out > 1:
        alpha = float(torch.tensor(size - pool, dtype=samples.dtype) / torch.tensor(out - 1, dtype=samples.dtype))
        i = torch.arange(out - 1, device=samples.device).to(samples.dtype)
        first = ((i[None, :] + samples[:, None]) * alpha).to(torch.int64)
        starts[:, : out - 1] = first - (samples * alpha).to(torch.int64)[:, None]
    return starts


def fractional_max_pool2d(x: torch.Tensor, kernel, out_hw, samples: torch.Tensor):
    """(values, indices) of the (N, C, H, W) input x, samples (N, C, 2): [width's, height's]."""
    n, c, h, w = x.shape
    (ph, pw), (oh, ow) = kernel, out_hw
    planes = samples.reshape(n * c, 2).to(x.dtype)
    corner = _starts(planes[:, 1], h, oh, ph)[:, :, None] * w + _starts(planes[:, 0], w, ow, pw)[:, None, :]
    window = (torch.arange(ph, device=x.device)[:, None] * w + torch.arange(pw, device=x.device)).reshape(-1)
    index = (corner[..., None] + window).reshape(n * c, oh * ow, ph * pw)  # row-major within each window
    values = x.reshape(n * c, h * w).gather(1, index.reshape(n * c, -1)).reshape(index.shape)
    nan = values.isnan()
    order = torch.arange(1, ph * pw + 1, device=x.device)
    last_nan = (nan.to(torch.int64) * order).argmax(-1, keepdim=True)
    first_max = values.nan_to_num(nan=0.0).argmax(-1, keepdim=True)  # no NaN in its windows where it is used
    pick = torch.where(nan.any(-1, keepdim=True), last_nan, first_max)
    value = values.gather(-1, pick).reshape(n, c, oh, ow)
    return value, index.gather(-1, pick).reshape(n, c, oh, ow)


def forward(op: torch._ops.OpOverload, row: Row):
    @checked(op)
    def kernel(call: Call, expected):
        x, samples = call["self"], call["random_samples"]
        if x.dtype not in DTYPES or samples.dtype != x.dtype or x.numel() == 0:
            return call.on_host()
        batched = x.dim() == 4
        x4 = x if batched else x.unsqueeze(0)
        value, index = fractional_max_pool2d(x4, call["kernel_size"], call["output_size"], samples)
        return tuple(as_expected(result, e) for result, e in zip((value, index), expected))

    return kernel


def backward(op: torch._ops.OpOverload, row: Row):
    @checked(op)
    def kernel(call: Call, expected):
        grad, x, indices = call["grad_output"], call["self"], call["indices"]
        if grad.dtype not in DTYPES or x.numel() == 0:
            return call.on_host()
        planes = x.numel() // (x.shape[-1] * x.shape[-2])
        flat = torch.zeros(planes, x.shape[-2] * x.shape[-1], dtype=grad.dtype, device=grad.device)
        flat.scatter_add_(1, indices.reshape(planes, -1), grad.reshape(planes, -1))
        return as_expected(flat, expected)

    return kernel


FAMILIES = {"fractional_max_pool2d": forward, "fractional_max_pool2d_backward": backward}
