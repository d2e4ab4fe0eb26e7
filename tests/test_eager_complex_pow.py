"""Complex pow on plate (eager_ops/kernels.py complex_pow: std::pow's exp(w log z); complex_views.py SPECIAL_POWERS:
the exponents ATen's CPU kernel takes apart) against the CPU: finite results within 4e-6 relative to |result| for
complex64 (the error grows with |w log z|), 1e-13 for complex128; where the CPU's result is not finite, plate's is
not either (0 ** 0 and 0 ** 1j NaN, 0 ** -1 inf + NaN i), and 0 ** 2.5 is 0."""

from __future__ import annotations

import pytest
import torch

from triton_plate_backend import eager_ops

eager_ops.register()
TOLERANCE = {torch.complex64: 4e-6, torch.complex128: 1e-13}


def bases(dtype):
    g = torch.Generator().manual_seed(0)
    special = torch.tensor([0j, 1 + 1j, -2 + 0j, complex(0, -0.0), -1 - 1j], dtype=dtype)
    return torch.cat([special, torch.randn(200, generator=g, dtype=dtype) * 3])


def check(got, expected, dtype):
    got = got.cpu()
    finite = torch.isfinite(expected)
    assert got.dtype == expected.dtype and torch.equal(torch.isfinite(got), finite)
    error = (got - expected).abs()[finite] / expected.abs()[finite].clamp_min(torch.finfo(got.real.dtype).tiny)
    assert error.max() <= TOLERANCE[dtype]


@pytest.mark.parametrize("exponent", [2.5, 2, 3, 0.5, -1, -2, -0.5, 0, 1, 1j, -1.5 + 0.5j])
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_pow_of_a_number(exponent, dtype, no_host_ops):
    z = bases(dtype)
    check(torch.pow(z.to("plate"), exponent), torch.pow(z, exponent), dtype)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_pow_of_tensors_and_of_a_number_base(dtype, no_host_ops):
    z = bases(dtype)
    check(torch.pow(z.to("plate"), z.flip(0).to("plate")), torch.pow(z, z.flip(0)), dtype)
    check(torch.pow(z.to("plate"), z.to("plate")), torch.pow(z, z), dtype)  # 0 ** 0: NaN
    check(torch.pow(2, z.to("plate")), torch.pow(2, z), dtype)
    assert torch.pow(torch.zeros(1, dtype=dtype, device="plate"), 2.5).cpu().abs().item() == 0
