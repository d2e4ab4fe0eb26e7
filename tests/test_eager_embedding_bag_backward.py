"""nn.EmbeddingBag's dense weight gradient on plate (triton_plate_backend/eager_ops/embedding_bag_backward.py)
against float64 CPU autograd for sum, mean and max bags, per_sample_weights, padding_idx, include_last_offset
and scale_grad_by_freq (there against the unscaled gradient over each index's count: the CPU kernel of torch 2.13
divides by the wrong count, pytorch#190063), with the host-op counter at zero."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from triton_plate_backend import eager_ops

eager_ops.register()

INDICES = torch.tensor([1, 2, 4, 5, 4, 3, 0, 0, 9])
OFFSETS = torch.tensor([0, 3, 3, 7])  # bag 1 is empty
CASES = {
    "sum": {"mode": "sum"},
    "mean": {"mode": "mean"},
    "max": {"mode": "max"},
    "per-sample weights": {"mode": "sum", "per_sample_weights": True},
    "mean with padding": {"mode": "mean", "padding_idx": 4},
    "max with padding": {"mode": "max", "padding_idx": 0},
    "include last offset": {"mode": "mean", "include_last_offset": True},
    "scaled by frequency": {"mode": "sum", "scale_grad_by_freq": True},
}


@pytest.mark.parametrize("case", list(CASES))
def test_embedding_bag_weight_gradient_matches_float64(case, no_host_ops):
    options = dict(CASES[case])
    weights = torch.rand(len(INDICES), dtype=torch.float64) if options.pop("per_sample_weights", False) else None
    scaled = options.pop("scale_grad_by_freq", False)
    table = torch.randn(10, 3, dtype=torch.float64)
    on_plate, exact = table.float().to("plate").requires_grad_(), table.clone().requires_grad_()
    out = F.embedding_bag(
        INDICES.to("plate"), on_plate, OFFSETS.to("plate"), scale_grad_by_freq=scaled,
        per_sample_weights=None if weights is None else weights.float().to("plate"), **options,
    )  # fmt: skip
    out_exact = F.embedding_bag(INDICES, exact, OFFSETS, per_sample_weights=weights, **options)
    torch.testing.assert_close(out.cpu().double(), out_exact, atol=1e-6, rtol=1e-5)
    grad = torch.randn(out_exact.shape, dtype=torch.float64)
    out.backward(grad.float().to("plate"))
    out_exact.backward(grad)
    expected = exact.grad
    if scaled:
        expected = expected / torch.bincount(INDICES, minlength=10).clamp(min=1).double().unsqueeze(1)
    torch.testing.assert_close(on_plate.grad.cpu().double(), expected, atol=1e-6, rtol=1e-5)


def test_half_weights_accumulate_in_float32(no_host_ops):
    table = torch.randn(10, 3, dtype=torch.float16)
    on_plate = table.to("plate").requires_grad_()
    out = F.embedding_bag(INDICES.to("plate"), on_plate, OFFSETS.to("plate"), mode="mean")
    out.backward(torch.ones_like(out))
    exact = table.double().requires_grad_()
    F.embedding_bag(INDICES, exact, OFFSETS, mode="mean").backward(torch.ones(4, 3, dtype=torch.float64))
    assert on_plate.grad.dtype == torch.float16
    torch.testing.assert_close(on_plate.grad.cpu().double(), exact.grad, atol=1e-3, rtol=1e-3)
