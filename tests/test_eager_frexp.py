"""frexp on plate (triton_plate_backend/eager_ops/float_parts.py) against the CPU's std::frexp: the same mantissa bits
and exponents for normal, subnormal, zero, infinite and NaN inputs of every float type (a NaN mantissa as NaN: the
CPU's bfloat16 conversion makes its NaN canonical), the out= form, and torch's error for an integer tensor."""

from __future__ import annotations

import pytest
import torch

from triton_plate_backend import eager_ops

eager_ops.register()
BITS = {torch.float16: torch.int16, torch.bfloat16: torch.int16, torch.float32: torch.int32, torch.float64: torch.int64}


def inputs(dtype):
    g = torch.Generator().manual_seed(0)
    special = [0.0, -0.0, 1.0, -3.0, 0.75, float("inf"), -float("inf"), float("nan"), 1e-40, -1e-45, 3.4e38, 6e-8]
    wide = torch.randn(300, generator=g, dtype=torch.float64) * torch.exp(torch.randn(300, generator=g) * 30)
    x = torch.cat([torch.tensor(special, dtype=torch.float64), wide])
    if dtype == torch.float64:
        x = torch.cat([x, torch.tensor([5e-324, -2.2e-308, 1e308], dtype=torch.float64)])
    return x.to(dtype)


@pytest.mark.parametrize("dtype", list(BITS))
def test_frexp_matches_the_cpu_bit_for_bit(dtype, no_host_ops):
    x = inputs(dtype)
    mantissa, exponent = torch.frexp(x.to("plate"))
    mantissa_cpu, exponent_cpu = torch.frexp(x)
    assert mantissa.dtype == dtype and exponent.dtype == torch.int32
    assert torch.equal(exponent.cpu(), exponent_cpu)
    nan = mantissa_cpu.isnan()
    assert torch.equal(mantissa.cpu().isnan(), nan)
    assert torch.equal(mantissa.cpu()[~nan].view(BITS[dtype]), mantissa_cpu[~nan].view(BITS[dtype]))


def test_frexp_out_and_an_integer_tensor():
    x = inputs(torch.float32).reshape(-1, 3)[:, 1]  # a strided input
    mantissa = torch.empty(0, device="plate")
    exponent = torch.empty(0, dtype=torch.int32, device="plate")
    torch.plate.reset_host_ops()
    torch.frexp(x.to("plate"), out=(mantissa, exponent))
    assert torch.plate.host_ops() == {}
    assert torch.equal(exponent.cpu(), torch.frexp(x).exponent)
    with pytest.raises(RuntimeError, match="only supports floating-point dtypes"):
        torch.frexp(torch.ones(3, dtype=torch.int64, device="plate"))
