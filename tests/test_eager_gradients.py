"""plate's ``vjp`` eager rows (eager_ops/gradients.py): a backward op as the vector-Jacobian product of its forward's
decomposition over plate kernels, against the CPU's backward kernel (values, dtype, layout), with no host op."""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F

from triton_plate_backend import eager_ops

eager_ops.register()
aten = torch.ops.aten

GRID_OPTIONS = list(itertools.product(("bilinear", "nearest", "bicubic"), ("zeros", "border", "reflection"), (0, 1)))


@pytest.mark.parametrize("mode, padding, align_corners", GRID_OPTIONS, ids=str)
def test_grid_sample_gradients_match_the_cpu(mode, padding, align_corners, no_host_ops):
    g = torch.Generator().manual_seed(2)
    x, grid = torch.randn(2, 3, 5, 6, generator=g), torch.rand(2, 4, 3, 2, generator=g) * 2.4 - 1.2  # some outside
    grad = torch.randn(2, 3, 4, 3, generator=g)
    results = []
    for device in ("cpu", "plate"):
        xs, grids = x.to(device, copy=True).requires_grad_(), grid.to(device, copy=True).requires_grad_()
        F.grid_sample(xs, grids, mode=mode, padding_mode=padding, align_corners=bool(align_corners)).backward(
            grad.to(device)
        )
        assert (xs.grad.stride(), grids.grad.stride()) == (xs.stride(), grids.stride())
        results.append((xs.grad.cpu(), grids.grad.cpu()))
    for a, b in zip(*results, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mask", [(False, True), (True, False)], ids=str)
def test_grid_sampler_backward_leaves_the_masked_gradient_undefined(mask, no_host_ops):
    x, grid = torch.randn(1, 2, 4, 5), torch.rand(1, 3, 3, 2) * 2 - 1
    grad = torch.randn(1, 2, 3, 3)
    expected = aten.grid_sampler_2d_backward(grad, x, grid, 0, 0, False, list(mask))
    got = aten.grid_sampler_2d_backward(grad.to("plate"), x.to("plate"), grid.to("plate"), 0, 0, False, list(mask))
    for a, b in zip(got, expected, strict=True):
        assert (a is None) == (b is None)
        if b is not None:
            torch.testing.assert_close(a.cpu(), b)


def test_grid_sampler_backward_of_half_tensors_rounds_once(no_host_ops):
    x, grid = torch.randn(1, 2, 4, 5), torch.rand(1, 3, 3, 2) * 2 - 1
    grad = torch.randn(1, 2, 3, 3)
    expected = aten.grid_sampler_2d_backward(grad, x, grid, 0, 1, True, [True, True])
    half = [t.to(torch.bfloat16).to("plate") for t in (grad, x, grid)]
    got = aten.grid_sampler_2d_backward(*half, 0, 1, True, [True, True])
    for a, b in zip(got, expected, strict=True):
        assert a.dtype == torch.bfloat16
        torch.testing.assert_close(a.cpu().float(), b, rtol=0.05, atol=0.1)


UPSAMPLES = {
    "nearest 1d": ((2, 3, 5), dict(scale_factor=2, mode="nearest")),
    "nearest-exact 1d": ((2, 3, 5), dict(size=7, mode="nearest-exact")),
    "linear 1d": ((2, 3, 5), dict(size=8, mode="linear", align_corners=False)),
    "linear 1d, corners, a scale": ((2, 3, 5), dict(scale_factor=1.7, mode="linear", align_corners=True)),
    "nearest-exact 2d": ((1, 2, 3, 4), dict(size=(5, 3), mode="nearest-exact")),
    "nearest 3d": ((1, 2, 3, 3, 2), dict(scale_factor=2, mode="nearest")),
    "nearest-exact 3d": ((1, 2, 3, 3, 3), dict(scale_factor=1.5, mode="nearest-exact")),
    "trilinear": ((1, 2, 3, 3, 3), dict(size=(4, 5, 2), mode="trilinear")),
    "trilinear, corners": ((1, 2, 3, 4, 3), dict(scale_factor=(1.5, 2, 0.7), mode="trilinear", align_corners=True)),
}


@pytest.mark.parametrize("name", UPSAMPLES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_upsampling_and_its_gradient_match_the_cpu(name, dtype, no_host_ops):
    """The forwards torch decomposes (decomposed rows) and their backwards (vjp rows at zeros of input_size)."""
    shape, options = UPSAMPLES[name]
    x = torch.randn(shape, generator=torch.Generator().manual_seed(4)).to(dtype)
    results = []
    for device in ("cpu", "plate"):
        xs = x.to(device, copy=True).requires_grad_()
        y = F.interpolate(xs, **options)
        y.float().square().sum().backward()
        assert (y.dtype, y.stride(), xs.grad.dtype, xs.grad.stride()) == (
            dtype,
            y.contiguous().stride(),
            dtype,
            xs.stride(),
        )
        results.append((y.detach().cpu(), xs.grad.cpu()))
    tol = {"rtol": 2e-2, "atol": 2e-2} if dtype == torch.bfloat16 else {"rtol": 1e-5, "atol": 1e-5}
    for a, b in zip(*results, strict=True):
        torch.testing.assert_close(a, b, **tol)
