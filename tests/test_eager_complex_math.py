"""Complex sqrt, reciprocal and addmv / mv on plate (eager_ops/kernels.py complex_sqrt / complex_reciprocal,
eager_ops/complex_views.py addmv) against the CPU: finite values within 4 ulp relative to |result| (sqrt: csqrt's
formula; reciprocal: c10::complex's division, as CUDA's), zeros, infinities and NaN parts as the CPU's, signed zeros
included; addmv within a few ulp of the parts' sums (the CPU's cgemv sums in another order)."""

from __future__ import annotations

import pytest
import torch

from triton_plate_backend import eager_ops

eager_ops.register()
INF = float("inf")
SPECIAL = [0, -0.0, 1j, -1j, -4, 4, complex(INF, 1), complex(-INF, 1), complex(1, INF), complex(1, -INF)]
SPECIAL += [complex(-2, -0.0), complex(-2, 0.0), complex(0, -0.0), 3 + 4j]
ULP = {torch.complex64: 2.0**-23, torch.complex128: 2.0**-52}


def inputs(dtype):
    g = torch.Generator().manual_seed(0)
    spread = torch.randn(400, generator=g, dtype=dtype) * torch.exp(torch.randn(400, generator=g) * 3)
    return torch.cat([spread, torch.tensor(SPECIAL, dtype=dtype)])


@pytest.mark.parametrize("fn", [torch.sqrt, torch.reciprocal])
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_sqrt_and_reciprocal_match_the_cpu(fn, dtype, no_host_ops):
    z = inputs(dtype)
    got, expected = fn(z.to("plate")).cpu(), fn(z)
    finite = torch.isfinite(expected)
    assert torch.equal(torch.isfinite(got), finite)
    error = (got - expected).abs()[finite] / expected.abs()[finite].clamp_min(torch.finfo(got.real.dtype).tiny)
    assert error.max() <= 4 * ULP[dtype]
    parts, parts_cpu = torch.view_as_real(got), torch.view_as_real(expected)
    assert torch.equal(parts.isnan(), parts_cpu.isnan())
    special = ~parts_cpu.isnan()
    special[: -len(SPECIAL)] = False  # the special values: every non-NaN part equal, its sign too
    assert torch.equal(parts[special], parts_cpu[special]) and torch.equal(
        parts[special].signbit(), parts_cpu[special].signbit()
    )


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_addmv_and_mv(dtype, no_host_ops):
    g = torch.Generator().manual_seed(1)
    m, v, x = (torch.randn(shape, generator=g, dtype=dtype) for shape in ((5, 4), (4,), (5,)))
    tolerance = {"rtol": 8 * ULP[dtype], "atol": 8 * ULP[dtype] * 4}
    for kwargs in ({}, {"beta": 0.5, "alpha": 2}, {"beta": 0}, {"beta": 1j, "alpha": 1 - 2j}):
        got = torch.addmv(x.to("plate"), m.to("plate"), v.to("plate"), **kwargs)
        torch.testing.assert_close(got.cpu(), torch.addmv(x, m, v, **kwargs), **tolerance)
    torch.testing.assert_close(torch.mv(m.to("plate"), v.to("plate")).cpu(), torch.mv(m, v), **tolerance)
    y = x.to("plate")
    y.addmv_(m.to("plate"), v.to("plate"), beta=2)
    torch.testing.assert_close(y.cpu(), x.clone().addmv_(m, v, beta=2), **tolerance)
    nan = x.clone()
    nan[0] = complex(float("nan"), 0)  # beta = 0 reads no self
    torch.testing.assert_close(
        torch.addmv(nan.to("plate"), m.to("plate"), v.to("plate"), beta=0).cpu(), torch.mv(m, v), **tolerance
    )


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_prod(dtype, no_host_ops):
    z = torch.randn(3, 7, 5, generator=torch.Generator().manual_seed(2), dtype=dtype)
    for args in ((), (1,), (-1, True), (0,)):  # a tree of products: within a few ulp times log2(n) of the CPU's
        got, expected = torch.prod(z.to("plate"), *args), torch.prod(z, *args)
        assert got.shape == expected.shape
        assert ((got.cpu() - expected).abs() / expected.abs()).max() <= 32 * ULP[dtype]
    assert torch.prod(torch.empty(0, dtype=dtype, device="plate")).item() == 1
    assert torch.prod(z[:, :0].to("plate"), 1).cpu().tolist() == [[1] * 5] * 3
