"""linspace and logspace on plate (triton_plate_backend/eager_ops/spaced_ranges.py): bit for bit the formula of
CUDA's kernels modelled in numpy (start + step * i for the first half, end - step * (steps - 1 - i) for the
second, one fused multiply-add in float32, float64 for float64 results), within an ulp of the exact values and
equal to the CPU's scalar loop on short ranges, through every overload and out=, with the host-op counter at
zero."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from triton_plate_backend import eager_ops

eager_ops.register()

CASES = [(-1, 2, 7), (0, 1, 1), (0, 1, 0), (3, -5, 11), (0.1, 0.9, 100), (-3, 3, 2), (0, 1000, 33), (5, 5, 4)]
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.uint8]


def cuda_linspace(start, end, steps, dtype):
    """CUDA's kernel in numpy: the multiply-add fused (one rounding: exact in float64, then to float32) in its
    float32 accumulator; float64 results round the product and the sum each."""
    if dtype == torch.float64:
        step = (end - start) / max(steps - 1, 1)
        values = [
            start + step * i if i < steps // 2 or steps == 1 else end - step * (steps - 1 - i) for i in range(steps)
        ]
        return torch.tensor(values, dtype=torch.float64)
    start, end = float(np.float32(start)), float(np.float32(end))
    step = float(np.float32(np.float32(end) - np.float32(start)) / np.float32(max(steps - 1, 1)))
    values = [start + step * i if i < steps // 2 or steps == 1 else end - step * (steps - 1 - i) for i in range(steps)]
    return torch.from_numpy(np.array(values, dtype=np.float64).astype(np.float32)).to(dtype)


def _holds(dtype, *bounds):
    info = torch.iinfo(dtype)
    return all(info.min <= b <= info.max for b in bounds)


@pytest.mark.parametrize(
    "start, end, steps, dtype",
    [(*case, dtype) for case in CASES for dtype in DTYPES if dtype.is_floating_point or _holds(dtype, *case[:2])],
)
def test_linspace_is_cudas_formula(start, end, steps, dtype, no_host_ops):
    got = torch.linspace(start, end, steps, dtype=dtype, device="plate")
    assert got.device.type == "plate" and got.dtype == dtype and got.shape == (steps,)
    assert torch.equal(got.cpu(), cuda_linspace(start, end, steps, dtype))
    if dtype.is_floating_point and steps:
        exact = torch.linspace(start, end, steps, dtype=torch.float64)
        ulp = torch.finfo(dtype).eps * exact.abs().clamp(min=1)
        assert ((got.cpu().double() - exact).abs() <= ulp).all()
        assert got[0].item() == torch.tensor(start, dtype=dtype).item()
        assert got[-1].item() == torch.tensor(end if steps > 1 else start, dtype=dtype).item()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_logspace_is_the_power_of_linspace(dtype, no_host_ops):
    got = torch.logspace(-2, 3, 11, base=2.0, dtype=dtype, device="plate")
    exponents = cuda_linspace(-2, 3, 11, torch.float64 if dtype == torch.float64 else torch.float32)
    assert torch.equal(got.cpu(), torch.pow(2.0, exponents.double()).to(dtype))
    assert torch.equal(torch.logspace(0, 3, 4, device="plate").cpu(), torch.tensor([1.0, 10, 100, 1000]))


@pytest.mark.parametrize("start, end, steps", [(-1, 1, 7), (0, 1, 5), (3, -5, 7), (-2, 2, 6)])
def test_short_ranges_equal_the_cpus_scalar_loop(start, end, steps, no_host_ops):
    # below one vector of elements the CPU's kernel runs its scalar loop, whose multiply-add gcc fuses as well
    assert torch.equal(torch.linspace(start, end, steps, device="plate").cpu(), torch.linspace(start, end, steps))


def test_every_overload_and_out(no_host_ops):
    start, end = torch.tensor(-2.0, device="plate"), torch.tensor(2.0, device="plate")
    expected = cuda_linspace(-2, 2, 9, torch.float32)
    for got in (
        torch.linspace(start, end, 9),
        torch.linspace(start, 2.0, 9),
        torch.linspace(-2.0, end, 9),
        torch.linspace(start, end, 9, device="plate"),
    ):
        assert torch.equal(got.cpu(), expected)
    out = torch.empty(3, device="plate")
    torch.linspace(-2, 2, 9, out=out)  # resized, as ATen's kernel resizes it
    assert torch.equal(out.cpu(), expected)
    logs = torch.empty(9, device="plate", dtype=torch.float64)
    torch.logspace(start, end, 9, out=logs)
    assert torch.equal(logs.cpu(), torch.pow(10.0, expected.double()))


def test_negative_steps_go_to_the_host_which_raises_torchs_error():
    with pytest.raises(RuntimeError, match="non-negative"):
        torch.linspace(0, 1, -1, device="plate")


def test_bounds_an_integer_result_cannot_hold_raise_torchs_error():
    # CUDA's kernel converts the bounds to the result's type first (c10's checks): the host raises that error
    with pytest.raises(RuntimeError, match="overflow"):
        torch.linspace(0, 1000, 5, dtype=torch.uint8, device="plate")
