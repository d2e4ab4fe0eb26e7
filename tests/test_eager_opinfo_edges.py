"""Edge inputs PyTorch's OpInfo reference inputs give every device (test_ops.py's test_compare_cpu, run on plate by
``python -m upstream.runner ops``): empty batches of 0 x 0 matrices for the linalg kernels (linalg.py flattens batch
dims without ``reshape(-1, ...)``, which torch refuses for them), and the 2-norm of a 0-dim tensor over dim 0 (torch
wraps that dim), rsub.Tensor (``torch.rsub(x, y)``, was a host op), a negative ``divisor_override`` of avg_pool
(ATen divides by it; plate's kernels took a divisor <= 0 for none) and multi_margin_loss's unreduced loss of a 0-dim
or 1-D input (the CPU's shape is the target's, []). Against the CPU, with the host-op counter at zero."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from triton_plate_backend import eager_ops

eager_ops.register()


def _spd(a):
    return a @ a.mT + torch.eye(a.shape[-1], device=a.device)


def _well_conditioned(a):
    return a + 3 * torch.eye(a.shape[-1], device=a.device)


LINALG = {
    "inv": lambda a: torch.linalg.inv(_well_conditioned(a)),
    "det": torch.linalg.det,
    "cholesky": lambda a: torch.linalg.cholesky(_spd(a)),
    "solve": lambda a: torch.linalg.solve(_well_conditioned(a), a),
    "qr": lambda a: torch.linalg.qr(a).R,
    "eigvalsh": lambda a: torch.linalg.eigvalsh(a + a.mT),
    "solve_triangular": lambda a: torch.linalg.solve_triangular(_well_conditioned(a.triu()), a, upper=True),
    "lu_solve": lambda a: torch.linalg.lu_solve(*torch.linalg.lu_factor(_well_conditioned(a)), a),
}


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0), (0, 3, 3), (2, 3, 3)])
@pytest.mark.parametrize("name", sorted(LINALG))
def test_linalg_on_empty_batches_matches_the_cpu(name, shape, no_host_ops):
    a = torch.randn(shape)
    got, want = LINALG[name](a.to("plate")), LINALG[name](a)
    assert got.device.type == "plate" and got.shape == want.shape
    torch.testing.assert_close(got.cpu(), want, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("options", [{"dim": 0, "keepdim": True}, {"dim": -1}, {"dim": (0,)}, {}])
def test_vector_norm_of_a_0_dim_tensor_matches_the_cpu(options, no_host_ops):
    x = torch.tensor(-3.0)
    got, want = torch.linalg.vector_norm(x.to("plate"), **options), torch.linalg.vector_norm(x, **options)
    assert got.shape == want.shape
    torch.testing.assert_close(got.cpu(), want)


@pytest.mark.parametrize(
    "a, b, alpha",
    [
        (torch.randn(3, 3), torch.randn(3, 3), 2),
        (torch.randn(2, 3), torch.randn(3), 0.5),
        (torch.randint(0, 9, (4,)), torch.randint(0, 9, (4,)), 3),
        (torch.randn(3, dtype=torch.cfloat), torch.randn(3, dtype=torch.cfloat), 2),
    ],
)
def test_rsub_tensor_runs_on_plate_with_the_cpus_result(a, b, alpha, no_host_ops):
    got, want = torch.rsub(a.to("plate"), b.to("plate"), alpha=alpha), torch.rsub(a, b, alpha=alpha)
    assert got.dtype == want.dtype and torch.equal(got.cpu(), want)


@pytest.mark.parametrize("divisor", [-2, 3, None])
@pytest.mark.parametrize("pool, shape", [(F.avg_pool2d, (1, 2, 4, 4)), (F.avg_pool3d, (1, 1, 4, 4, 4))])
def test_avg_pool_divisor_override_matches_the_cpu(pool, shape, divisor, no_host_ops):
    x = torch.randn(shape)
    on_cpu, on_plate = x.clone().requires_grad_(), x.to("plate").requires_grad_()
    want, got = pool(on_cpu, 2, divisor_override=divisor), pool(on_plate, 2, divisor_override=divisor)
    assert torch.equal(got.detach().cpu(), want.detach())
    want.sum().backward()
    got.sum().backward()
    assert torch.equal(on_plate.grad.cpu(), on_cpu.grad)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize(
    "x, target",
    [
        (torch.tensor(0.7), torch.tensor(0)),
        (torch.randn(4), torch.tensor(2)),
        (torch.randn(3, 4), torch.tensor([0, 3, 1])),
    ],
)
def test_multi_margin_loss_has_the_cpus_shape(x, target, reduction, no_host_ops):
    got = F.multi_margin_loss(x.to("plate"), target.to("plate"), reduction=reduction)
    want = F.multi_margin_loss(x, target, reduction=reduction)
    assert got.shape == want.shape
    torch.testing.assert_close(got.cpu(), want)


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (2, 3, 5)])
def test_rectangular_lu_factor_gives_the_cpus_factors(shape):
    """plate's LU kernels take square matrices; a rectangular one (torch.lu of OpInfo's 3 x 5 input) is the CPU's
    (it failed with a size mismatch instead)."""
    a = torch.randn(shape)
    (lu, pivots), (want_lu, want_pivots) = torch.linalg.lu_factor(a.to("plate")), torch.linalg.lu_factor(a)
    assert lu.device.type == "plate" and torch.equal(pivots.cpu(), want_pivots)
    torch.testing.assert_close(lu.cpu(), want_lu)


@pytest.mark.parametrize(
    "pool, shape, options",
    [
        (F.avg_pool1d, (0, 3, 6), {"kernel_size": 2}),
        (F.avg_pool3d, (0, 1, 4, 4, 4), {"kernel_size": 2}),
        (F.max_pool2d, (0, 2, 4, 4), {"kernel_size": 2, "return_indices": True}),
        (F.adaptive_avg_pool2d, (0, 2, 4, 4), {"output_size": 2}),
    ],
)
def test_pooling_an_empty_batch_stays_on_plate(pool, shape, options, no_host_ops):
    """An empty output has nothing to write: the meta kernel's checks ran, the result is the empty tensor (it was
    a host op: OpInfo's avg_pool1d/avg_pool3d reference inputs have empty batches)."""
    got, want = pool(torch.randn(shape).to("plate"), **options), pool(torch.randn(shape), **options)
    for g, w in zip(got if options.get("return_indices") else [got], want if options.get("return_indices") else [want]):
        assert g.device.type == "plate" and g.shape == w.shape and g.stride() == w.stride() and g.dtype == w.dtype


@pytest.mark.parametrize(
    "options",
    [{"reduction": "none"}, {"reduction": "mean"}, {"weight": True, "reduction": "sum"}, {"ignore_index": 1}],
)
def test_nll_loss_of_a_4d_input_runs_on_plate_with_the_cpus_result(options, no_host_ops):
    """nll_loss2d_forward / nll_loss2d_backward (cross_entropy over an (N, C, H, W) map) were host ops."""
    x, target, weight = torch.randn(2, 3, 4, 5), torch.randint(0, 3, (2, 4, 5)), torch.rand(3)
    on_cpu = {k: weight if k == "weight" else v for k, v in options.items()}
    on_plate = {k: weight.to("plate") if k == "weight" else v for k, v in options.items()}
    xc, xp = x.clone().requires_grad_(), x.to("plate").requires_grad_()
    want, got = F.cross_entropy(xc, target, **on_cpu), F.cross_entropy(xp, target.to("plate"), **on_plate)
    want.sum().backward()
    got.sum().backward()
    assert got.shape == want.shape
    torch.testing.assert_close(got.detach().cpu(), want.detach())
    torch.testing.assert_close(xp.grad.cpu(), xc.grad)
