"""grid_sampler_3d (F.grid_sample of a 5-D input) and its backward on plate (eager_ops/grid_sampler_3d.py) against the
CPU: every mode, padding and align_corners, the grid reaching outside [-1, 1]. Both are ATen's CPU kernels' steps in
one launch: float32 and float64 values and gradients bit for bit the CPU's; float16 within 1e-2 of values (2e-1 of
the grid's gradient, which sums many rounded terms on the CPU, where plate computes in float32 and rounds once)."""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F

from triton_plate_backend import eager_ops

eager_ops.register()
TOLERANCE = {
    torch.float32: ({"rtol": 0, "atol": 0},) * 2,
    torch.float64: ({"rtol": 0, "atol": 0},) * 2,
    torch.float16: ({"rtol": 1e-2, "atol": 1e-2}, {"rtol": 2e-1, "atol": 2e-1}),
}
PADDINGS = ("zeros", "border", "reflection")
FORWARDS = [(torch.float32, "bilinear", *case) for case in itertools.product(PADDINGS, (False, True))]
FORWARDS += [(torch.float32, "nearest", "zeros", False), (torch.float32, "nearest", "reflection", True)]
FORWARDS += [(torch.float64, "bilinear", "reflection", False), (torch.float16, "bilinear", "zeros", True)]
BACKWARDS = [(torch.float32, "bilinear", "reflection", False), (torch.float64, "bilinear", "zeros", True)]
BACKWARDS += [(torch.float32, "nearest", "border", True), (torch.float16, "bilinear", "border", False)]


def inputs(dtype):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 3, 4, 5, generator=g).to(dtype)
    grid = (torch.rand(2, 2, 3, 2, 3, generator=g) * 2.4 - 1.2).to(dtype)  # reaching outside [-1, 1]
    weight = torch.randn(2, 3, 2, 3, 2, generator=g).to(dtype)
    return x, grid, weight


def sample(device, x, grid, weight, backward, **kwargs):
    x, grid = x.to(device, copy=True).requires_grad_(backward), grid.to(device, copy=True).requires_grad_(backward)
    out = F.grid_sample(x, grid, **kwargs)
    if not backward:
        return (out.cpu(),)
    (out * weight.to(device)).sum().backward()
    return out.detach().cpu(), x.grad.cpu(), grid.grad.cpu()


def check(dtype, mode, padding_mode, align_corners, backward):
    kwargs = {"mode": mode, "padding_mode": padding_mode, "align_corners": align_corners}
    got = sample("plate", *inputs(dtype), backward, **kwargs)
    expected = sample("cpu", *inputs(dtype), backward, **kwargs)
    values, grid_gradient = TOLERANCE[dtype]
    for a, b, tolerance in zip(got, expected, (values, values, grid_gradient)):
        assert a.dtype == b.dtype and a.shape == b.shape
        if mode == "nearest":
            assert torch.equal(a, b)
        else:
            torch.testing.assert_close(a, b, **tolerance)


@pytest.mark.parametrize("dtype, mode, padding_mode, align_corners", FORWARDS)
def test_grid_sample_3d_matches_the_cpu(dtype, mode, padding_mode, align_corners, no_host_ops):
    check(dtype, mode, padding_mode, align_corners, backward=False)


@pytest.mark.parametrize("dtype, mode, padding_mode, align_corners", BACKWARDS)
def test_grid_sample_3d_gradients_match_the_cpu(dtype, mode, padding_mode, align_corners, no_host_ops):
    check(dtype, mode, padding_mode, align_corners, backward=True)


def test_bicubic_3d_raises_torchs_error():
    x, grid = torch.zeros(1, 1, 2, 2, 2, device="plate"), torch.zeros(1, 1, 1, 1, 3, device="plate")
    with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D input"):
        F.grid_sample(x, grid, mode="bicubic", align_corners=False)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_backward_is_the_cpus_bit_for_bit(dtype, no_host_ops):
    """aten.grid_sampler_3d_backward, every mode x padding x align_corners, output_mask with and without the input's
    gradient, a transposed grad_output, grid points on the borders and corners (where clipping's gradient is 0)."""
    x, grid, _ = inputs(dtype)
    grid[0, 0, 0, 0], grid[1, 1, 2, 1] = torch.tensor([0.0, 1.0, -1.0]), torch.tensor([-1.0, 1.0, 1.0])
    go = torch.randn(2, 3, 2, 2, 3, generator=torch.Generator().manual_seed(1), dtype=dtype).transpose(3, 4)
    on_plate = [t.to("plate") for t in (go, x, grid)]
    combinations = list(itertools.product((0, 1), (0, 1, 2), (False, True)))
    if dtype == torch.float64:  # each combination compiles a kernel: float32 (OpInfo's dtype) takes every one
        combinations = [(0, 2, True), (0, 1, False), (1, 2, False)]
    for mode, padding, align_corners in combinations:
        mask = [mode == 0 or padding == 0, True]
        args = (mode, padding, align_corners, mask)
        expected = torch.ops.aten.grid_sampler_3d_backward(go, x, grid, *args)
        got = torch.ops.aten.grid_sampler_3d_backward(*on_plate, *args)
        for a, b in zip(got, expected, strict=True):
            assert (a is None) == (b is None)
            if b is not None:
                assert a.stride() == b.stride() and torch.equal(a.cpu(), b), (args, (a.cpu() - b).abs().max())
    # more grid points than a program takes (grid_sampler_3d.BACKWARD_BLOCK) onto a small input: programs' atomic
    # adds onto the same voxels, in the CPU loop's order
    g = torch.Generator().manual_seed(2)
    x, grid = torch.randn(1, 2, 2, 3, 2, generator=g, dtype=dtype), torch.rand(1, 9, 9, 9, 3, generator=g, dtype=dtype)
    go = torch.randn(1, 2, 9, 9, 9, generator=g, dtype=dtype)
    expected = torch.ops.aten.grid_sampler_3d_backward(go, x, grid * 2.2 - 1.1, 0, 0, False, [True, True])
    got = torch.ops.aten.grid_sampler_3d_backward(
        *(t.to("plate") for t in (go, x, grid * 2.2 - 1.1)), 0, 0, False, [True, True]
    )
    assert all(torch.equal(a.cpu(), b) for a, b in zip(got, expected))
