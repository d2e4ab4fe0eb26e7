"""any/all and repeat_interleave on plate (triton_plate_backend/eager_ops/scans.py) against the CPU, with the
host-op counter at zero."""

from __future__ import annotations

import pytest
import torch

from triton_plate_backend import eager_ops

eager_ops.register()


def same(got, expected):
    assert got.device.type == "plate" and (got.shape, got.dtype) == (expected.shape, expected.dtype)
    assert torch.equal(got.cpu(), expected)


X = torch.randn(2, 1024)
X[1, 700] = float("nan")


@pytest.mark.parametrize(
    "tensor",
    [X, X.isnan(), X.isinf(), torch.zeros(3), torch.empty(0), torch.tensor([0, 0, 5]), torch.ones(3, dtype=torch.bool)],
)
def test_any_and_all(tensor, no_host_ops):
    same(tensor.to("plate").any(), tensor.any())
    same(tensor.to("plate").all(), tensor.all())
    same(tensor.t().to("plate").any() if tensor.dim() == 2 else tensor.to("plate").any(), tensor.any())


@pytest.mark.parametrize(
    "repeats", [[5, 10, 15], [2, 0, 3], [0, 0, 1, 0], [1], [], torch.randint(0, 4, (700,)).tolist()]
)
def test_repeat_interleave(repeats, no_host_ops):
    r = torch.tensor(repeats, dtype=torch.int64)
    same(torch.repeat_interleave(r.to("plate")), torch.repeat_interleave(r))
    rank = torch.arange(len(repeats))
    same(rank.to("plate").repeat_interleave(r.to("plate"), dim=0), rank.repeat_interleave(r, dim=0))


def test_repeat_interleave_with_an_output_size(no_host_ops):
    r = torch.tensor([3, 1, 2], dtype=torch.int32)
    same(torch.repeat_interleave(r.to("plate"), output_size=6), torch.repeat_interleave(r, output_size=6))
