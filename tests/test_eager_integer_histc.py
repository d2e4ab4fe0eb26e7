"""histc of integer tensors on plate (eager_ops/integer_histc.py): CUDA's counts (the CPU refuses integer
tensors), against CUDA's getBin written out in Python, with no host op; bool and an inverted range go to the host
(torch's errors)."""

from __future__ import annotations

import pytest
import torch

from triton_plate_backend import eager_ops

eager_ops.register()


def cuda_histc(values: list[int], bins: int, low: float, high: float) -> list[int]:
    """CUDA's histc of an integer tensor: min/max truncated to int64, the data's range when equal (then widened),
    bin (x - min) * bins // (max - min) of each x in [min, max], the last bin holding max."""
    lo, hi = int(low), int(high)
    if lo == hi and values:
        lo, hi = min(values), max(values)
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    counts = [0] * bins
    for x in values:
        if lo <= x <= hi:
            counts[min((x - lo) * bins // (hi - lo), bins - 1)] += 1
    return counts


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.int16, torch.int8, torch.uint8])
@pytest.mark.parametrize("bins, low, high", [(10, 0, 9), (7, -3, 11), (4, 0, 0), (5, 2.9, 7.6), (3, 100, 120)], ids=str)
def test_integer_histc_counts_as_cuda(dtype, bins, low, high):
    g = torch.Generator().manual_seed(3)
    lowest = 0 if dtype == torch.uint8 else -5
    x = torch.randint(lowest, 13, (6, 41), generator=g, dtype=torch.int64).to(dtype)
    torch.plate.reset_host_ops()
    result = torch.histc(x.to("plate"), bins=bins, min=low, max=high)
    assert torch.plate.host_ops() == {}
    assert result.dtype == dtype and result.shape == (bins,)
    assert result.cpu().tolist() == cuda_histc(x.flatten().tolist(), bins, low, high)


def test_integer_histc_of_one_value_and_of_nothing():
    one = torch.full((5,), 4, dtype=torch.int32, device="plate")  # min == max == data's: widened to [3, 5]
    assert torch.histc(one, bins=4).cpu().tolist() == cuda_histc([4] * 5, 4, 0, 0) == [0, 0, 5, 0]
    assert torch.histc(one[:0], bins=3, min=0, max=0).cpu().tolist() == [0, 0, 0]


def test_bool_histc_and_an_inverted_range_go_to_the_host():
    with pytest.raises((RuntimeError, NotImplementedError)):
        torch.histc(torch.ones(3, dtype=torch.bool, device="plate"), bins=2)
    torch.plate.reset_host_ops()
    with pytest.raises(RuntimeError):
        torch.histc(torch.arange(4, device="plate"), bins=3, min=2, max=1)
    assert torch.plate.host_ops() == {"aten.histc": 1}
