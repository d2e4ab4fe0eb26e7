"""nextafter on plate (eager_ops/composite.py's ``nextafter``): each float type stepped bit for bit as the CPU
kernel steps it (zeros of both signs, subnormals, the largest finite, infinities, NaN), with broadcasting, dtype
promotion, in place and out=, and integer tensors refused on the host (the CPU's error)."""

from __future__ import annotations

import pytest
import torch

from triton_plate_backend import eager_ops

eager_ops.register()

INF, NAN = float("inf"), float("nan")
BITS = {2: torch.int16, 4: torch.int32, 8: torch.int64}


def _edges(dtype):
    info = torch.finfo(dtype)
    return torch.tensor(
        [0.0, -0.0, 1.0, -1.0, INF, -INF, NAN, 3.5, -2.25, info.tiny, -info.smallest_normal / 4, info.max, -info.max]
    ).to(dtype)


def _bits(t):
    return t.view(BITS[t.element_size()])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16], ids=str)
def test_nextafter_steps_each_float_type_as_the_cpu(dtype, no_host_ops):
    e = _edges(dtype)
    a, b = e.repeat_interleave(len(e)), e.repeat(len(e))  # every pair
    want, got = torch.nextafter(a, b), torch.nextafter(a.plate(), b.plate())
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    got = got.cpu()
    same = (_bits(got) == _bits(want)) | (got.isnan() & want.isnan())
    assert bool(same.all()), (a[~same], b[~same], got[~same], want[~same])


def test_nextafter_broadcasts_promotes_and_writes_in_place_and_out(no_host_ops):
    a = torch.randn(3, 1, generator=torch.Generator().manual_seed(30))
    b = torch.randn(4, generator=torch.Generator().manual_seed(31)).double()
    want = torch.nextafter(a, b)
    got = torch.nextafter(a.plate(), b.plate())
    assert got.dtype == torch.float64 and torch.equal(got.cpu(), want)
    x = a.expand(3, 4).clone()
    p = x.plate()
    p.nextafter_(b.float().plate())
    assert torch.equal(p.cpu(), x.nextafter_(b.float()))
    out = torch.empty(0, dtype=torch.float64).plate()
    torch.nextafter(a.plate(), b.plate(), out=out)
    assert torch.equal(out.cpu(), want)


def test_nextafter_of_integers_raises_the_cpu_error():
    with pytest.raises(RuntimeError) as cpu:
        torch.nextafter(torch.arange(3), torch.arange(3))
    torch.plate.reset_host_ops()
    with pytest.raises(type(cpu.value)):
        torch.nextafter(torch.arange(3).plate(), torch.arange(3).plate())
    assert torch.plate.host_ops() == {"aten.nextafter": 1}
