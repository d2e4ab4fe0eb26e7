"""torch.linalg.svd on plate (triton_plate_backend/eager_ops/linalg_svd.py) against the CPU's LAPACK results, with
the host-op counter at zero: tall, wide, square, batched, full_matrices or not, svdvals (compute_uv=False), rank
deficient, empty and 1 x 1, the layouts the CPU returns, a sign-free gradient, and the named host fallback.

Singular vectors are unique up to their signs only (LAPACK's are its algorithm's): U and Vh are compared by their
absolute values where the singular values are apart, and by U S Vh = A and orthonormality everywhere. Tolerances
relative to the largest singular value: 1e-5 in float32, 1e-12 in float64."""

from __future__ import annotations

import pytest
import torch

from triton_plate_backend import eager_ops
from triton_plate_backend.eager_ops import linalg_svd

eager_ops.register()
DTYPES = [torch.float32, torch.float64]


def tolerance(dtype):
    return 1e-5 if dtype == torch.float32 else 1e-12


def random(*shape, dtype, seed=3):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64).to(dtype)


def check_svd(a, full_matrices, u, s, vh):
    """(u, s, vh) from plate is an SVD of a: the CPU's layout, its singular values, orthonormal factors, U S Vh = A
    and the CPU's vectors up to sign."""
    u_cpu, s_cpu, vh_cpu = torch.linalg.svd(a, full_matrices=full_matrices)
    assert u.device.type == s.device.type == vh.device.type == "plate"
    u, s, vh = u.cpu(), s.cpu(), vh.cpu()
    for got, expected in ((u, u_cpu), (s, s_cpu), (vh, vh_cpu)):
        assert (got.shape, got.stride(), got.dtype) == (expected.shape, expected.stride(), expected.dtype)
    if not s.numel():
        torch.testing.assert_close(u, u_cpu, rtol=0, atol=0)  # the identity (full) or nothing
        torch.testing.assert_close(vh, vh_cpu, rtol=0, atol=0)
        return
    eps = tolerance(a.dtype)
    scale = s_cpu.max()
    k = s.shape[-1]
    assert (s - s_cpu).abs().max() <= eps * scale
    assert torch.all(s[..., :-1] >= s[..., 1:])  # descending
    for factor in (u, vh.mT):
        eye = torch.eye(factor.shape[-1], dtype=a.dtype)
        assert (factor.mT @ factor - eye).abs().max() <= eps * 10
    assert ((u[..., :k] * s[..., None, :]) @ vh[..., :k, :] - a).abs().max() <= eps * scale * 10
    assert (u[..., :k].abs() - u_cpu[..., :k].abs()).abs().max() <= eps * 100  # distinct singular values
    assert (vh[..., :k, :].abs() - vh_cpu[..., :k, :].abs()).abs().max() <= eps * 100


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (2, 5, 5), (1, 1)])
def test_svd_matches_lapack(shape, dtype, no_host_ops):
    a = random(*shape, dtype=dtype)
    for full_matrices in (True, False):
        check_svd(a, full_matrices, *torch.linalg.svd(a.to("plate"), full_matrices=full_matrices))


@pytest.mark.parametrize("dtype", DTYPES)
def test_svdvals_and_empty_matrices(dtype, no_host_ops):
    a = random(3, 7, 3, dtype=dtype)
    s = torch.linalg.svdvals(a.to("plate"))
    s_cpu = torch.linalg.svdvals(a)
    assert s.device.type == "plate" and s.shape == s_cpu.shape
    assert (s.cpu() - s_cpu).abs().max() <= tolerance(dtype) * s_cpu.max()
    for shape in ((3, 0), (0, 3), (0, 4, 2)):
        empty = torch.empty(shape, dtype=dtype)
        for full_matrices in (True, False):
            check_svd(empty, full_matrices, *torch.linalg.svd(empty.to("plate"), full_matrices=full_matrices))


@pytest.mark.parametrize("dtype", DTYPES)
def test_rank_deficient_matrix_has_an_orthonormal_u(dtype, no_host_ops):
    """Two zero singular values: U's columns for them (and full_matrices' completion) still orthonormal, U S Vh = A."""
    b = random(6, 2, dtype=dtype, seed=4)
    a = b @ random(2, 4, dtype=dtype, seed=5)  # rank 2
    eps = tolerance(dtype)
    for full_matrices in (True, False):
        u, s, vh = (t.cpu() for t in torch.linalg.svd(a.to("plate"), full_matrices=full_matrices))
        s_cpu = torch.linalg.svdvals(a)
        assert (s - s_cpu).abs().max() <= eps * s_cpu.max()
        assert (u.mT @ u - torch.eye(u.shape[-1], dtype=dtype)).abs().max() <= eps * 10
        assert (vh @ vh.mT - torch.eye(4, dtype=dtype)).abs().max() <= eps * 10
        assert ((u[:, :4] * s) @ vh - a).abs().max() <= eps * s_cpu.max() * 10


def test_svd_gradient_of_a_sign_free_loss(no_host_ops):
    a = random(5, 3, dtype=torch.float64)

    def grad(device):
        x = a.to(device, copy=True).requires_grad_()
        u, s, vh = torch.linalg.svd(x, full_matrices=False)
        (s.pow(3).sum() + ((u * s) @ vh).square().sum()).backward()
        return x.grad.cpu()

    torch.testing.assert_close(grad("plate"), grad("cpu"), rtol=1e-10, atol=1e-10)


def test_beyond_the_limit_runs_on_the_host_counted(monkeypatch):
    """HOST_REASON: a matrix wider than SVD_MAX_COLUMNS both ways goes to the host's LAPACK, a counted host op."""
    monkeypatch.setattr(linalg_svd, "SVD_MAX_COLUMNS", 2)
    a = random(4, 3, dtype=torch.float64)
    torch.plate.reset_host_ops()
    s = torch.linalg.svdvals(a.to("plate"))
    assert sum(torch.plate.host_ops().values()) >= 1
    torch.testing.assert_close(s.cpu(), torch.linalg.svdvals(a))
    monkeypatch.setattr(linalg_svd, "SVD_MAX_COLUMNS", 64)
    monkeypatch.setattr(linalg_svd, "SVD_MAX_FULL", 3)  # a 4 x 4 U asked for: the host; the thin one: plate
    torch.plate.reset_host_ops()
    torch.linalg.svd(a.to("plate"), full_matrices=False)
    assert torch.plate.host_ops() == {}
    torch.linalg.svd(a.to("plate"), full_matrices=True)
    assert sum(torch.plate.host_ops().values()) == 1


@pytest.mark.parametrize("dtype", DTYPES)
def test_lstsq_matches_lapack_for_each_driver(dtype, no_host_ops):
    """Tall (residuals), wide (the minimum-norm solution), a vector right-hand side and broadcast batches: the CPU's
    layouts and ranks, values within rtol / atol 1e-4 (float32) or 1e-10 (float64)."""
    cases = [((2, 6, 3), (2, 6, 2)), ((3, 5), (3, 2)), ((6, 3), (6,)), ((1, 6, 3), (2, 6, 1))]
    close = {"rtol": 1e-4, "atol": 1e-4} if dtype == torch.float32 else {"rtol": 1e-10, "atol": 1e-10}
    for seed, (shape_a, shape_b) in enumerate(cases):
        a, b = random(*shape_a, dtype=dtype, seed=seed), random(*shape_b, dtype=dtype, seed=seed + 10)
        for driver in ("gels", "gelsy", "gelsd", "gelss") if seed == 0 else ("gelsd",):
            got = torch.linalg.lstsq(a.to("plate"), b.to("plate"), driver=driver)
            expected = torch.linalg.lstsq(a, b, driver=driver)
            for x, y in zip(got, expected):
                assert x.device.type == "plate"
                assert (x.shape, x.stride(), x.dtype) == (y.shape, y.stride(), y.dtype)
                torch.testing.assert_close(x.cpu(), y, **close)


def test_lstsq_of_a_rank_deficient_matrix(no_host_ops):
    """Rank 2 of 3 columns: gelsd's rank, singular values and minimum-norm solution; no residuals (not full rank)."""
    a = random(6, 3, dtype=torch.float64, seed=7)
    a[:, 2] = a[:, 0] + a[:, 1]
    b = random(6, 2, dtype=torch.float64, seed=8)
    got = torch.linalg.lstsq(a.to("plate"), b.to("plate"), driver="gelsd")
    expected = torch.linalg.lstsq(a, b, driver="gelsd")
    assert got.rank.item() == expected.rank.item() == 2 and got.residuals.numel() == expected.residuals.numel() == 0
    torch.testing.assert_close(got.solution.cpu(), expected.solution, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(got.singular_values.cpu(), expected.singular_values, rtol=1e-10, atol=1e-12)


def test_non_finite_matrices_raise_the_cpus_error():
    """Jacobi would return NaN: an inf / NaN matrix goes to the host, whose LAPACK raises torch's LinAlgError."""
    a = torch.full((3, 3), float("nan"))
    with pytest.raises(torch.linalg.LinAlgError, match="non-finite"):
        torch.linalg.svdvals(a.to("plate"))
