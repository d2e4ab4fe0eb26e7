"""multilabel_margin_loss on plate (eager_ops/multilabel_margin.py): loss and gradient against the CPU kernel, whose
targets end at a sample's first -1 (torch's decomposition also counts those after it), with no host op."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from triton_plate_backend import eager_ops

eager_ops.register()

TARGETS = torch.tensor([[3, 0, -1, 1, 2], [1, 2, 3, 4, 0], [-1, 1, 2, 3, 4], [4, 4, -1, 0, 0]])  # a repeat counts twice


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("batched", [True, False], ids=["2-d", "1-d"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_multilabel_margin_loss_and_gradient_match_the_cpu(reduction, batched, dtype, no_host_ops):
    x = torch.randn(4, 5, generator=torch.Generator().manual_seed(10), dtype=dtype)
    x, target = (x, TARGETS) if batched else (x[0], TARGETS[0])
    results = []
    for device in ("cpu", "plate"):
        xs = x.to(device, copy=True).requires_grad_()
        loss = F.multilabel_margin_loss(xs, target.to(device), reduction=reduction)
        weights = torch.arange(1.0, loss.numel() + 1, dtype=dtype, device=device).reshape(loss.shape)
        (loss * weights).sum().backward()
        results.append((loss.detach().cpu(), xs.grad.cpu()))
    for got, expected in zip(results[1], results[0], strict=True):
        assert got.shape == expected.shape
        torch.testing.assert_close(got, expected)


def test_a_target_out_of_range_raises_the_cpus_error_from_the_host():
    torch.plate.reset_host_ops()
    target = torch.tensor([[7, 0, -1, 1, 2]] * 2, device="plate")
    with pytest.raises(RuntimeError, match="out of range"):
        F.multilabel_margin_loss(torch.randn(2, 5, device="plate"), target)
    assert torch.plate.host_ops() == {"aten.multilabel_margin_loss_forward": 1}
    torch.plate.reset_host_ops()


@pytest.mark.parametrize("target", [0, -1])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_a_0_dim_input_is_one_sample_of_one_class_as_on_the_cpu(target, reduction, no_host_ops):
    results = []
    for device in ("cpu", "plate"):
        x = torch.tensor(0.3, device=device, requires_grad=True)
        loss = F.multilabel_margin_loss(x, torch.tensor(target, device=device), reduction=reduction)
        loss.backward()
        results.append((loss.detach().cpu(), x.grad.cpu()))
    for got, expected in zip(results[1], results[0], strict=True):
        assert got.shape == expected.shape == ()
        torch.testing.assert_close(got, expected, rtol=0, atol=0)
