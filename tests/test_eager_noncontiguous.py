"""Inputs PyTorch's test_noncontiguous_samples gives every device (test_ops.py, run on plate by
``python -m upstream.runner ops``): an op's sample inputs made non-contiguous (strided views) must give the
contiguous inputs' values and gradients. Here: cdist's gradient for an x2 broadcast over x1's batch, an empty one
included (composite.py's _cdist_backward reshaped the per-batch gradient to x2's shape: an empty batch
raised), and gather's backward of an empty index (a scatter_add_, ran on the host for a uint8 index). Against the
CPU, with the host-op counter at zero."""

from __future__ import annotations

import pytest
import torch

from triton_plate_backend import eager_ops

eager_ops.register()


@pytest.mark.parametrize("batch", [0, 1, 2])
def test_cdist_gradient_of_a_broadcast_strided_x2_matches_the_cpu(batch, no_host_ops):
    x1 = torch.randn(batch, 4, 5)
    x2 = torch.randn(3, 10)
    grads = []
    for device in ("cpu", "plate"):
        a = x1.to(device).requires_grad_()
        b = x2.to(device)[:, ::2].requires_grad_()  # strided: every other column
        out = torch.cdist(a, b, 1.0)
        grads.append([g.cpu() for g in torch.autograd.grad(out, (a, b), torch.ones_like(out))])
    for cpu, plate in zip(*grads):
        torch.testing.assert_close(plate, cpu)


@pytest.mark.parametrize("index_shape", [(0,), (2, 0)])
@pytest.mark.parametrize("index_dtype", [torch.uint8, torch.int64])
def test_gather_backward_of_an_empty_index_stays_on_plate(index_shape, index_dtype, no_host_ops):
    """gather's backward is a scatter_add_ into zeros: of an empty index (which the CPU takes of any integer type)
    it scatters nothing, on plate (it ran on the host for a uint8 index)."""
    x = torch.randn(5)
    grads = []
    for device in ("cpu", "plate"):
        a = x.to(device).requires_grad_()
        out = torch.gather(a, 0, torch.zeros(index_shape, dtype=index_dtype, device=device))
        grads.append(torch.autograd.grad(out, a, torch.ones_like(out))[0].cpu())
        target = torch.ones(3, 5, device=device)
        index = torch.zeros(index_shape if len(index_shape) == 2 else (0, 1), dtype=index_dtype, device=device)
        grads.append(target.scatter_add_(0, index, torch.ones(2, 2, device=device)).cpu())
    torch.testing.assert_close(grads[2], grads[0])
    torch.testing.assert_close(grads[3], grads[1])
