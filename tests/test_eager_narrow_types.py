"""Stand-in types (eager_ops/narrow_types.py): eq/ne and cat of float8 and uint16/32/64 tensors run on the device
(as float16 or the signed integer of the width, exactly) and match the CPU's results, with no host op; a mix of
types still goes to the host (torch's error or result)."""

from __future__ import annotations

import pytest
import torch

from triton_plate_backend import eager_ops

eager_ops.register()

NAN = float("nan")
FLOAT8 = (torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fnuz, torch.float8_e5m2fnuz)
UNSIGNED = (torch.uint16, torch.uint32, torch.uint64)


def pair(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """Two CPU tensors of ``dtype`` that agree in some places: equal values, NaNs, -0 against +0, the top bit."""
    if dtype.is_floating_point:
        a = torch.tensor([0.0, -0.0, NAN, 1.5, 240.0, -3.0, 0.3, 2.0, -0.0])
        b = torch.tensor([-0.0, 0.0, NAN, 1.5, 240.0, 3.0, 0.3, 2.5, 0.0])
        return a.to(dtype), b.to(dtype)
    signed = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64}[dtype]
    low = torch.iinfo(signed).min
    a = torch.tensor([0, 1, -1, low, 5, 7, 12, -2], dtype=signed)
    b = torch.tensor([0, 2, -1, low, 5, 8, 12, 2], dtype=signed)
    return a.view(dtype), b.view(dtype)


def on_plate(fn, *tensors):
    torch.plate.reset_host_ops()
    result = fn(*(t.to("plate") for t in tensors))
    assert torch.plate.host_ops() == {}
    assert result.device.type == "plate"
    return result.cpu()


def bits(t: torch.Tensor) -> torch.Tensor:
    return t.view({1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.dtype.itemsize])


@pytest.mark.parametrize("dtype", FLOAT8 + UNSIGNED, ids=str)
def test_eq_and_ne_of_two_tensors_match_the_cpu(dtype):
    a, b = pair(dtype)
    for fn in (torch.eq, torch.ne):
        expected = fn(a, b)
        assert expected.any() and not expected.all()  # the case tells equal from unequal
        assert torch.equal(on_plate(fn, a, b), expected)
        assert torch.equal(on_plate(fn, a, b[:1]), fn(a, b[:1]))  # broadcast


@pytest.mark.parametrize("dtype", FLOAT8 + UNSIGNED, ids=str)
def test_eq_and_ne_with_a_number_round_or_wrap_it_to_the_type_first(dtype):
    a, _ = pair(dtype)
    numbers = (0.3, -0.0, 240.0, 1.5) if dtype.is_floating_point else (5, -1, 2**15, 2**31, 2**63 - 1)
    if dtype in (torch.uint16, torch.uint32):
        numbers += (2 ** (dtype.itemsize * 8) + 5,)  # past the width: wraps (a uint64's raises in torch's parser)
    for number in numbers:
        for fn in (torch.eq, torch.ne):
            expected = fn(a, number)
            assert torch.equal(on_plate(lambda x, n=number, f=fn: f(x, n), a), expected)
    if dtype.is_floating_point:  # 0.3 is no float8 value: it matches its rounding, as on the CPU
        assert (a == 0.3).any()


@pytest.mark.parametrize("dtype", FLOAT8 + UNSIGNED, ids=str)
def test_cat_of_one_type_moves_the_bits(dtype):
    a, b = pair(dtype)
    for dim, tensors in ((0, (a, b[:3], a[:0])), (1, (a.view(1, -1), b.view(1, -1)))):
        result = on_plate(lambda *ts, d=dim: torch.cat(ts, d), *tensors)
        expected = torch.cat(tensors, dim)
        assert result.dtype == dtype
        assert torch.equal(bits(result), bits(expected))


def test_a_mix_of_float8_and_another_type_raises_the_cpus_error():
    """The CPU refuses to promote float8 with another type; plate raises the same error from the operands' types
    (complex_views' cat, chained after this module's, promotes them first), before any kernel or host op."""
    a = torch.tensor([1.0, 2.0]).to(torch.float8_e4m3fn)
    with pytest.raises(RuntimeError, match="Promotion for Float8"):
        torch.cat([a, torch.ones(2)])
    torch.plate.reset_host_ops()
    with pytest.raises(RuntimeError, match="Promotion for Float8"):
        torch.cat([a.to("plate"), torch.ones(2, device="plate")])
    assert torch.plate.host_ops() == {}
