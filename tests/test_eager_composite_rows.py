"""Ops plate runs as torch's decompositions over plate kernels (the ``composite`` family, composite.py):
tril_indices / triu_indices and multi_margin_loss's forward, against the CPU, with the host-op counter at zero.
multilabel_margin_loss is not torch's decomposition, which disagrees with the CPU kernel (and with the loss's
definition) once a target row holds -1: plate's own formula (multilabel_margin.py, test_eager_multilabel_margin)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from triton_plate_backend import eager_ops

eager_ops.register()


@pytest.mark.parametrize("rows, cols, offset", [(3, 3, 0), (4, 6, 1), (5, 3, -2), (0, 3, 0), (3, 4, 10), (3, 4, -10)])
@pytest.mark.parametrize("fn", [torch.tril_indices, torch.triu_indices])
def test_triangle_indices_match_the_cpu(fn, rows, cols, offset, no_host_ops):
    got, want = fn(rows, cols, offset, device="plate"), fn(rows, cols, offset)
    assert got.device.type == "plate" and got.dtype == want.dtype
    assert torch.equal(got.cpu(), want)
    assert torch.equal(fn(rows, cols, offset, dtype=torch.int32, device="plate").cpu(), want.int())


@pytest.mark.parametrize(
    "options", [{}, {"p": 2, "margin": 0.5}, {"weight": torch.rand(4, dtype=torch.float64)}, {"reduction": "none"}]
)
def test_multi_margin_loss_matches_float64(options, no_host_ops):
    x, y = torch.randn(5, 4, dtype=torch.float64), torch.tensor([0, 3, 1, 1, 2])
    on_plate = {k: v.float().to("plate") if isinstance(v, torch.Tensor) else v for k, v in options.items()}
    got = F.multi_margin_loss(x.float().to("plate"), y.to("plate"), **on_plate)
    torch.testing.assert_close(got.cpu().double(), F.multi_margin_loss(x, y, **options), atol=1e-6, rtol=1e-5)


def test_multilabel_margin_loss_runs_on_plate_with_the_cpus_result(no_host_ops):
    x = torch.randn(3, 4)
    targets = torch.tensor([[3, 0, -1, 1], [-1, 1, 2, 3], [2, 3, -1, 0]])
    got = F.multilabel_margin_loss(x.to("plate"), targets.to("plate"), reduction="none")
    torch.testing.assert_close(got.cpu(), F.multilabel_margin_loss(x, targets, reduction="none"))
