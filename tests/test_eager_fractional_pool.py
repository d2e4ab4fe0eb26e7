"""fractional_max_pool2d and its backward on plate (eager_ops/fractional_pool.py) against the CPU for the same random
samples: the same values and indices (ties: the first largest; a NaN: the window's last NaN), overlapping and
single windows, 3-D and 4-D inputs, the gradient exact (each input element gets the sum of its outputs' gradients);
F.fractional_max_pool2d end to end without a host op."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from triton_plate_backend import eager_ops

eager_ops.register()
aten = torch.ops.aten
CASES = [((2, 3, 9, 11), (2, 3), (4, 5)), ((3, 8, 8), (2, 2), (4, 4)), ((1, 2, 10, 10), (3, 3), (7, 5))]
CASES += [((1, 1, 6, 6), (2, 2), (1, 1))]


@pytest.mark.parametrize("shape, kernel, out", CASES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_values_indices_and_gradient_match_the_cpu(shape, kernel, out, dtype, no_host_ops):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(shape, generator=g, dtype=dtype)
    x.view(-1)[5] = float("nan")
    x.view(-1)[7] = x.view(-1)[8]  # a tie
    planes = (shape[0] if len(shape) == 4 else 1, shape[-3])
    samples = torch.rand(*planes, 2, generator=g, dtype=dtype)
    value, index = aten.fractional_max_pool2d(x.to("plate"), list(kernel), list(out), samples.to("plate"))
    value_cpu, index_cpu = aten.fractional_max_pool2d(x, list(kernel), list(out), samples)
    assert torch.equal(value.cpu().nan_to_num(99), value_cpu.nan_to_num(99)) and torch.equal(index.cpu(), index_cpu)
    assert value.stride() == value_cpu.stride()
    grad = torch.randn(value_cpu.shape, generator=g, dtype=dtype)
    got = aten.fractional_max_pool2d_backward(grad.to("plate"), x.to("plate"), list(kernel), list(out), index)
    expected = aten.fractional_max_pool2d_backward(grad, x, list(kernel), list(out), index_cpu)
    torch.testing.assert_close(got.cpu(), expected, rtol=0, atol=1e-6 if dtype == torch.float32 else 1e-14)


def test_the_functional_form_runs_on_plate(no_host_ops):
    x = torch.randn(2, 3, 12, 12, device="plate").requires_grad_()
    y = F.fractional_max_pool2d(x, 3, output_ratio=(0.5, 0.5))
    y.sum().backward()
    assert y.shape == (2, 3, 6, 6) and x.grad.sum().item() == pytest.approx(2 * 3 * 36)
