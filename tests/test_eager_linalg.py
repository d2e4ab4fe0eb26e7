"""torch.linalg on plate (triton_plate_backend/eager_ops/linalg.py) against the CPU's LAPACK results, with the
host-op counter at zero: lu_factor (the same pivots), lu_solve, solve, inv, det, slogdet, cholesky, solve_triangular,
batched and broadcast, left and right, non-contiguous inputs, autograd through them, and torch's errors.

Tolerances: plate factors column by column where LAPACK blocks, so values agree to rounding: well-conditioned
matrices (random Gaussian plus a multiple of the identity, or unit-lower times upper with a dominant diagonal)
within rtol 1e-4 / atol 1e-5 in float32 and 1e-10 in float64; an ill-conditioned one (Hilbert, cond ~ 1e10 in
float64) by its relative error against the exact answer, which must be as small as the CPU's times 100 and below
cond * eps."""

from __future__ import annotations

import warnings

import pytest
import torch

from triton_plate_backend import eager_ops
from triton_plate_backend.eager_ops import linalg

eager_ops.register()
DTYPES = [torch.float32, torch.float64]


def tolerance(dtype):
    return {"rtol": 1e-4, "atol": 1e-5} if dtype == torch.float32 else {"rtol": 1e-10, "atol": 1e-10}


def well_conditioned(*shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    n = shape[-1]
    return (torch.randn(shape, generator=g, dtype=torch.float64) + 2 * n**0.5 * torch.eye(n, dtype=torch.float64)).to(
        dtype
    )


def random(*shape, dtype, seed=1):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64).to(dtype)


def close(got, expected, dtype=None):
    assert got.device.type == "plate"
    assert (got.shape, got.dtype) == (expected.shape, expected.dtype)
    torch.testing.assert_close(got.cpu(), expected, **tolerance(dtype or expected.dtype))


@pytest.mark.parametrize("shape", [(1, 1), (5, 5), (3, 2, 6, 6), (40, 40)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_lu_factor_matches_lapack(shape, dtype, no_host_ops):
    a = random(*shape, dtype=dtype)  # Gaussian: the pivots are the largest of their columns, well apart
    lu, pivots, info = torch.linalg.lu_factor_ex(a.to("plate"))
    lu_cpu, pivots_cpu, info_cpu = torch.linalg.lu_factor_ex(a)
    assert torch.equal(pivots.cpu(), pivots_cpu) and torch.equal(info.cpu(), info_cpu)
    assert lu.stride() == lu_cpu.stride()
    close(lu, lu_cpu)


@pytest.mark.parametrize("dtype", DTYPES)
def test_blocked_lu_and_cholesky_match_lapack(dtype, no_host_ops):
    n = linalg.BLOCKED_FROM + 7  # two panels, the second narrower
    a = random(n, n, dtype=dtype)
    lu, pivots, info = torch.linalg.lu_factor_ex(a.to("plate"))
    lu_cpu, pivots_cpu, _ = torch.linalg.lu_factor_ex(a)
    assert torch.equal(pivots.cpu(), pivots_cpu) and info.item() == 0
    scale = lu_cpu.abs().max()  # LU's entries grow with n: compare them at the largest one's scale
    torch.testing.assert_close(lu.cpu() / scale, lu_cpu / scale, **tolerance(dtype))
    spd = a @ a.mT + n * torch.eye(n, dtype=dtype)
    close(torch.linalg.cholesky(spd.to("plate")), torch.linalg.cholesky(spd))
    singular = a.clone()
    singular[:, n - 3] = 0  # a zero pivot in the second panel: info counts from the matrix's first row
    info = torch.linalg.lu_factor_ex(singular.to("plate")).info
    assert info.item() == torch.linalg.lu_factor_ex(singular).info.item() == n - 2


def test_lu_factor_of_a_transposed_view_and_a_zero_column(no_host_ops):
    a = random(6, 6, dtype=torch.float32)
    close(torch.linalg.lu_factor(a.mT.to("plate"))[0], torch.linalg.lu_factor(a.mT)[0])
    singular = a.clone()
    singular[:, 2] = 0  # U[3, 3] is exactly zero: info 3, the factorization goes on past it as LAPACK's
    lu, pivots, info = torch.linalg.lu_factor_ex(singular.to("plate"))
    lu_cpu, pivots_cpu, info_cpu = torch.linalg.lu_factor_ex(singular)
    assert info.item() == info_cpu.item() == 3 and torch.equal(pivots.cpu(), pivots_cpu)
    close(lu, lu_cpu)


@pytest.mark.parametrize("dtype", DTYPES)
def test_solve_batches_broadcast_vectors_and_the_right_side(dtype, no_host_ops):
    a = well_conditioned(2, 1, 5, 5, dtype=dtype)
    b = random(3, 5, 2, dtype=dtype)
    close(torch.linalg.solve(a.to("plate"), b.to("plate")), torch.linalg.solve(a, b))
    vector = random(5, dtype=dtype)
    close(torch.linalg.solve(a[0, 0].to("plate"), vector.to("plate")), torch.linalg.solve(a[0, 0], vector))
    batched_vector = random(2, 1, 5, dtype=dtype)  # A.shape[:-1]: numpy's vector case
    close(torch.linalg.solve(a.to("plate"), batched_vector.to("plate")), torch.linalg.solve(a, batched_vector))
    right = random(4, 5, dtype=dtype)
    close(
        torch.linalg.solve(a[1, 0].to("plate"), right.to("plate"), left=False),
        torch.linalg.solve(a[1, 0], right, left=False),
    )
    noncontiguous = a[0, 0].mT
    plate = noncontiguous.to("plate")
    assert not plate.is_contiguous()
    result, info = torch.linalg.solve_ex(plate, right.mT.to("plate"))
    close(result, torch.linalg.solve(noncontiguous, right.mT))
    assert info.item() == 0


def test_solve_of_an_ill_conditioned_matrix_is_as_accurate_as_the_cpus(no_host_ops):
    n = 8
    i = torch.arange(n, dtype=torch.float64)
    hilbert = 1 / (i[:, None] + i[None, :] + 1)  # cond 1.5e10
    exact = torch.ones(n, 1, dtype=torch.float64)
    b = hilbert @ exact
    got = torch.linalg.solve(hilbert.to("plate"), b.to("plate")).cpu()
    cpu = torch.linalg.solve(hilbert, b)
    error, cpu_error = ((got - exact).norm() / exact.norm()).item(), ((cpu - exact).norm() / exact.norm()).item()
    assert error < 100 * max(cpu_error, 1e-16) and error < 1.5e10 * 2.2e-16
    residual = (hilbert @ got - b).norm() / b.norm()
    assert residual < 1e-14


@pytest.mark.parametrize("dtype", DTYPES)
def test_lu_solve_left_right_adjoint(dtype, no_host_ops):
    a = well_conditioned(2, 4, 4, dtype=dtype)
    lu, pivots = torch.linalg.lu_factor(a.to("plate"))
    lu_cpu, pivots_cpu = torch.linalg.lu_factor(a)
    for left in (True, False):
        for adjoint in (True, False):
            b = random(2, 4, 3, dtype=dtype) if left else random(2, 3, 4, dtype=dtype)
            got = torch.linalg.lu_solve(lu, pivots, b.to("plate"), left=left, adjoint=adjoint)
            close(got, torch.linalg.lu_solve(lu_cpu, pivots_cpu, b, left=left, adjoint=adjoint))


@pytest.mark.parametrize("dtype", DTYPES)
def test_inv_det_slogdet(dtype, no_host_ops):
    a = random(3, 5, 5, dtype=dtype) + 3 * torch.eye(5, dtype=dtype)
    close(torch.linalg.inv(a.to("plate")), torch.linalg.inv(a))
    close(torch.linalg.det(a.to("plate")), torch.linalg.det(a))
    sign, logabsdet = torch.linalg.slogdet(a.to("plate"))
    sign_cpu, logabsdet_cpu = torch.linalg.slogdet(a)
    assert torch.equal(sign.cpu(), sign_cpu)
    close(logabsdet, logabsdet_cpu)
    swapped = torch.eye(3, dtype=dtype)[[1, 0, 2]]  # one swap: det -1
    assert torch.linalg.det(swapped.to("plate")).item() == -1
    singular = torch.ones(3, 3, dtype=dtype)
    assert torch.linalg.det(singular.to("plate")).item() == 0
    sign, logabsdet = torch.linalg.slogdet(singular.to("plate"))
    assert sign.item() == 0 and logabsdet.item() == float("-inf")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 6, 37])
def test_cholesky_lower_and_upper(dtype, n, no_host_ops):
    a = random(2, n, n, dtype=dtype)
    spd = a @ a.mT + n * torch.eye(n, dtype=dtype)
    close(torch.linalg.cholesky(spd.to("plate")), torch.linalg.cholesky(spd))
    close(torch.linalg.cholesky(spd.to("plate"), upper=True), torch.linalg.cholesky(spd, upper=True))


def test_cholesky_reads_one_triangle(no_host_ops):
    a = random(4, 4, dtype=torch.float64)
    spd = a @ a.mT + 4 * torch.eye(4, dtype=torch.float64)
    lower_only = spd.tril() + 100 * torch.ones(4, 4, dtype=torch.float64).triu(1)  # garbage above
    close(torch.linalg.cholesky(lower_only.to("plate")), torch.linalg.cholesky(lower_only))
    upper_only = spd.triu() - 100 * torch.ones(4, 4, dtype=torch.float64).tril(-1)
    close(torch.linalg.cholesky(upper_only.to("plate"), upper=True), torch.linalg.cholesky(upper_only, upper=True))


@pytest.mark.parametrize("dtype", DTYPES)
def test_solve_triangular_every_form(dtype, no_host_ops):
    a = random(2, 1, 5, 5, dtype=dtype) + 4 * torch.eye(5, dtype=dtype)
    for upper in (True, False):
        t = a.triu() if upper else a.tril()
        for left in (True, False):
            b = random(3, 5, 2, dtype=dtype) if left else random(3, 2, 5, dtype=dtype)
            for unit in (True, False):
                kwargs = {"upper": upper, "left": left, "unitriangular": unit}
                close(
                    torch.linalg.solve_triangular(t.to("plate"), b.to("plate"), **kwargs),
                    torch.linalg.solve_triangular(t, b, **kwargs),
                )


def test_gradients_through_solve_inv_det_cholesky(no_host_ops):
    a = well_conditioned(4, 4, dtype=torch.float64)
    b = random(4, 2, dtype=torch.float64)
    spd = a @ a.mT

    def grads(device):
        leaves = [t.to(device, copy=True).requires_grad_() for t in (a, b, spd)]
        x, y, s = leaves
        loss = torch.linalg.solve(x, y).sum() + torch.linalg.inv(x).pow(2).sum() + torch.linalg.det(x)
        loss = loss + torch.linalg.cholesky(s).sum() + torch.linalg.slogdet(x)[1]
        loss.backward()
        return [t.grad for t in leaves]

    for got, expected in zip(grads("plate"), grads("cpu"), strict=True):
        close(got, expected)


@pytest.mark.parametrize("dtype", DTYPES)
def test_singular_and_not_positive_definite_raise_torchs_errors(dtype):
    singular = torch.ones(2, 3, 3, dtype=dtype)
    singular[0] = torch.eye(3, dtype=dtype)
    for fn in (torch.linalg.inv, lambda m: torch.linalg.solve(m, m), torch.linalg.lu_factor):
        with pytest.raises(RuntimeError) as cpu:  # LinAlgError, but lu_factor's
            fn(singular)
        with pytest.raises(RuntimeError) as plate:
            fn(singular.to("plate"))
        assert type(plate.value) is type(cpu.value) and str(plate.value) == str(cpu.value)
    _, info = torch.linalg.inv_ex(singular.to("plate"))
    assert torch.equal(info.cpu(), torch.linalg.inv_ex(singular)[1])
    indefinite = torch.diag(torch.tensor([1.0, -1.0, 1.0], dtype=dtype))
    with pytest.raises(torch.linalg.LinAlgError, match="leading minor of order 2"):
        torch.linalg.cholesky(indefinite.to("plate"))
    _, info = torch.linalg.cholesky_ex(torch.stack([torch.eye(3, dtype=dtype), indefinite]).to("plate"))
    assert info.tolist() == [0, 2]


def test_bad_shapes_and_dtypes_raise_the_cpus_errors():
    cases = [
        lambda d: torch.linalg.inv(torch.ones(2, 3, device=d)),
        lambda d: torch.linalg.solve(torch.eye(3, device=d), torch.ones(4, 1, device=d)),
        lambda d: torch.linalg.cholesky(torch.eye(3, device=d, dtype=torch.float16)),
        lambda d: torch.linalg.det(torch.eye(3, device=d, dtype=torch.int64)),
        lambda d: torch.linalg.solve_triangular(torch.eye(3, device=d), torch.ones(2, 1, device=d), upper=True),
    ]
    for case in cases:
        with pytest.raises(RuntimeError) as cpu:
            case("cpu")
        with pytest.raises(RuntimeError) as plate:
            case("plate")
        assert type(plate.value) is type(cpu.value) and str(plate.value) == str(cpu.value)


def test_complex_matrices_run_on_the_host_counted():
    a = torch.randn(3, 3, dtype=torch.complex64) + 3 * torch.eye(3)
    torch.plate.reset_host_ops()
    close(torch.linalg.inv(a.to("plate")), torch.linalg.inv(a))
    assert torch.plate.host_ops()["aten.linalg_inv_ex"] == 1


@pytest.mark.parametrize("dtype", DTYPES)
def test_lu_unpack_linalg_lu_and_the_older_forms(dtype, no_host_ops):
    a = well_conditioned(2, 4, 4, dtype=dtype)
    for got, expected in zip(torch.linalg.lu(a.to("plate")), torch.linalg.lu(a), strict=True):
        close(got, expected)
    wide = torch.linalg.lu_factor(random(4, 6, dtype=dtype))  # rectangular factors (the CPU's), unpacked on plate
    for got, expected in zip(torch.lu_unpack(*(t.to("plate") for t in wide)), torch.lu_unpack(*wide), strict=True):
        close(got, expected)
    p, lower, upper = torch.lu_unpack(*(t.to("plate") for t in wide), unpack_data=False)
    assert lower.numel() == upper.numel() == 0
    close(p, torch.lu_unpack(*wide)[0])
    b = random(2, 4, 3, dtype=dtype)
    spd = a @ a.mT
    factor = torch.linalg.cholesky(spd)
    linalg._warned.clear()
    with pytest.warns(UserWarning, match="torch.cholesky is deprecated"):  # torch's note, once a process
        close(torch.cholesky(spd.to("plate"), upper=True), torch.linalg.cholesky(spd, upper=True))
    for upper in (False, True):
        f = factor.mT if upper else factor
        close(torch.cholesky_solve(b.to("plate"), f.to("plate"), upper=upper), torch.cholesky_solve(b, f, upper=upper))
        close(torch.cholesky_inverse(f[0].to("plate"), upper=upper), torch.cholesky_inverse(f[0], upper=upper))
    for transpose in (False, True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the note, once a process
            got = torch.triangular_solve(b.to("plate"), a.tril().to("plate"), upper=False, transpose=transpose)
        for g, e in zip(got, torch.triangular_solve(b, a.tril(), upper=False, transpose=transpose), strict=True):
            close(g, e)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 6, 6), (40, 36)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_qr_geqrf_householder_product(shape, dtype, no_host_ops):
    a = random(*shape, dtype=dtype)
    for got, expected in zip(torch.geqrf(a.to("plate")), torch.geqrf(a), strict=True):  # dlarfg's signs
        assert got.stride() == expected.stride()
        close(got, expected)
    for mode in ("reduced", "complete", "r"):
        for got, expected in zip(torch.linalg.qr(a.to("plate"), mode=mode), torch.linalg.qr(a, mode=mode), strict=True):
            assert got.stride() == expected.stride()
            close(got, expected)
    if shape[-2] >= shape[-1]:
        reflectors = torch.geqrf(a)
        got = torch.linalg.householder_product(*(t.to("plate") for t in reflectors))
        close(got, torch.linalg.householder_product(*reflectors))


def test_qr_of_a_zero_column_and_its_gradient(no_host_ops):
    a = random(5, 3, dtype=torch.float64)
    a[:, 1] = 0  # tau 0 there, as dlarfg's
    for got, expected in zip(torch.geqrf(a.to("plate")), torch.geqrf(a), strict=True):
        close(got, expected)
    b = random(4, 4, dtype=torch.float64)

    def grad(device):
        x = b.to(device, copy=True).requires_grad_()
        q, r = torch.linalg.qr(x)
        (q.sum() + r.pow(2).sum()).backward()
        return x.grad

    close(grad("plate"), grad("cpu"))


@pytest.mark.parametrize("dtype", DTYPES)
def test_eigh_by_jacobi(dtype, no_host_ops):
    """Eigenvalues as the CPU's (fp32 within 1e-4 relative to the largest, fp64 within 1e-12); eigenvectors
    orthonormal and A V = V diag(w), each the CPU's up to its sign (LAPACK's signs are its algorithm's)."""
    g = torch.Generator().manual_seed(5)
    a = torch.randn(2, 7, 7, generator=g, dtype=dtype)
    a = a + a.mT
    clustered = torch.diag(torch.tensor([1.0, 1.0, 2.0, 1e-3, -5.0, 2.0, 3.0], dtype=dtype))
    q = torch.linalg.qr(torch.randn(7, 7, generator=g, dtype=dtype))[0]
    matrices = torch.cat([a, (q @ clustered @ q.mT)[None]])
    tolerance = 1e-4 if dtype == torch.float32 else 1e-12
    for upper in ("L", "U"):
        w, v = torch.linalg.eigh(matrices.to("plate"), UPLO=upper)
        w_cpu, v_cpu = torch.linalg.eigh(matrices, UPLO=upper)
        w, v = w.cpu(), v.cpu()
        scale = w_cpu.abs().max()
        assert v.stride() == v_cpu.stride()
        assert (w - w_cpu).abs().max() <= tolerance * scale
        assert (v.mT @ v - torch.eye(7, dtype=dtype)).abs().max() <= tolerance * 10
        assert (matrices @ v - v * w[..., None, :]).abs().max() <= tolerance * scale * 10
        distinct = [0, 1]  # the random matrices' eigenvalues are apart: the vectors are the CPU's up to sign
        alignment = (v.mT @ v_cpu).abs()[distinct]
        assert (alignment - torch.eye(7, dtype=dtype)).abs().max() <= tolerance * 100
    values = torch.linalg.eigvalsh(matrices.to("plate"))
    assert (values.cpu() - torch.linalg.eigvalsh(matrices)).abs().max() <= tolerance * scale


def test_eigh_gradient_of_a_sign_free_loss(no_host_ops):
    a = random(5, 5, dtype=torch.float64)

    def grad(device):
        x = a.to(device, copy=True).requires_grad_()
        w, v = torch.linalg.eigh(x + x.mT)
        (w.pow(2).sum() + (v * v).sum(0).dot(w)).backward()
        return x.grad.cpu()

    close(grad("plate").to("plate"), grad("cpu"))
