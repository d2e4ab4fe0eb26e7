"""Antialiased resizing on plate (eager_ops/antialias.py: Pillow's taps as weight matrices, two plate matmuls)
against the CPU's kernel: bilinear and bicubic, down and up, a scale factor, align_corners, the identity size, a
channels-last input, the gradient; float32 within 2e-6, float64 within 1e-14; a float16 input raises the CPU's
error."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from triton_plate_backend import eager_ops

eager_ops.register()
TOLERANCE = {torch.float32: 2e-6, torch.float64: 1e-14}
SIZES = [{"size": (5, 4)}, {"size": (30, 20)}, {"scale_factor": 0.3}, {"size": (7, 9), "align_corners": True}]


def resize(device, x, weight, **kwargs):
    x = x.to(device, copy=True).requires_grad_()
    out = F.interpolate(x, antialias=True, **kwargs)
    (out * weight.to(device)).sum().backward()
    return out.detach().cpu(), x.grad.cpu(), out.stride()


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_antialiased_resize_and_its_gradient_match_the_cpu(mode, dtype, no_host_ops):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 17, 13, generator=g, dtype=dtype)
    for kwargs in SIZES + [{"size": (17, 13)}]:
        expected = F.interpolate(x, mode=mode, antialias=True, **kwargs)
        weight = torch.randn(expected.shape, generator=g, dtype=dtype)
        got = resize("plate", x, weight, mode=mode, **kwargs)
        reference = resize("cpu", x, weight, mode=mode, **kwargs)
        for a, b in zip(got[:2], reference[:2]):
            assert a.shape == b.shape and (a - b).abs().max() <= TOLERANCE[dtype], kwargs
    channels_last = x.to(memory_format=torch.channels_last)
    got = resize("plate", channels_last, weight, mode=mode, size=(17, 13))
    assert got[2] == F.interpolate(channels_last, mode=mode, antialias=True, size=(17, 13)).stride()


def test_a_half_input_raises_the_cpus_error():
    x = torch.randn(1, 1, 8, 8, dtype=torch.float16, device="plate")
    with pytest.raises(RuntimeError, match="not implemented for 'Half'"):
        F.interpolate(x, size=(3, 3), mode="bilinear", antialias=True)
