"""linalg.matrix_exp on plate (eager_ops/matrix_exp.py, ATen's Taylor approximants over plate matmuls) against the
CPU: a matrix in each degree's norm interval, scaled and squared ones, a batch mixing them, 1 x 1 and 0 x 0
matrices, its gradient, and torch's errors. Relative to the result's largest entry: float32 within 2e-6 (2e-5 for a
matrix squared 3 times and more: each squaring doubles the error), float64 within 1e-14."""

from __future__ import annotations

import pytest
import torch

from triton_plate_backend import eager_ops
from triton_plate_backend.eager_ops import matrix_exp

eager_ops.register()
TOLERANCE = {torch.float32: 2e-6, torch.float64: 1e-14}


def relative_error(got, expected):
    return ((got.cpu() - expected).abs().amax((-2, -1)) / expected.abs().amax((-2, -1))).max().item()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_every_degree_matches_the_cpu(dtype, no_host_ops):
    g = torch.Generator().manual_seed(0)
    base = torch.randn(5, 5, generator=g, dtype=torch.float64)
    base = base / base.abs().sum(-2).amax()  # 1-norm 1
    thetas = matrix_exp.THETAS[dtype]
    for norm in (thetas[0] / 2, *(thetas[k] * 0.9 for k in range(1, 6)), thetas[5] * 3):  # degrees 1 .. 18, squared
        a = (base * norm).to(dtype)
        got, expected = torch.linalg.matrix_exp(a.to("plate")), torch.linalg.matrix_exp(a)
        assert got.dtype == dtype and got.stride() == expected.stride()
        assert relative_error(got, expected) <= TOLERANCE[dtype], norm


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_batch_mixing_degrees_and_squarings(dtype, no_host_ops):
    g = torch.Generator().manual_seed(1)
    scales = torch.tensor([0.001, 0.1, 1.0, 5.0, 20.0, 0.3], dtype=torch.float64).view(3, 2, 1, 1)
    a = (torch.randn(3, 2, 4, 4, generator=g, dtype=torch.float64) * scales).to(dtype)
    error = relative_error(torch.linalg.matrix_exp(a.to("plate")), torch.linalg.matrix_exp(a))
    assert error <= TOLERANCE[dtype] * (10 if dtype == torch.float32 else 1)
    for n in (0, 1):
        small = torch.randn(2, n, n, generator=g).to(dtype)
        assert torch.equal(torch.linalg.matrix_exp(small.to("plate")).cpu(), torch.linalg.matrix_exp(small))


def test_the_gradient(no_host_ops):
    g = torch.Generator().manual_seed(2)
    a = torch.randn(4, 4, generator=g, dtype=torch.float64)

    def grad(device):
        x = a.to(device, copy=True).requires_grad_()
        torch.linalg.matrix_exp(x).pow(2).sum().backward()
        return x.grad.cpu()

    torch.testing.assert_close(grad("plate"), grad("cpu"), rtol=1e-12, atol=1e-12)


def test_torchs_errors():  # the meta kernel refuses these: the host raises the CPU's error
    for bad in (torch.ones(2, 3), torch.ones(3, 3, dtype=torch.int64)):
        with pytest.raises(RuntimeError) as cpu:
            torch.linalg.matrix_exp(bad)
        with pytest.raises(RuntimeError) as plate:
            torch.linalg.matrix_exp(bad.to("plate"))
        assert str(plate.value) == str(cpu.value)
