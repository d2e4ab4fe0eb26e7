"""searchsorted on plate (eager_ops/composite.py's ``searchsorted``): N-D sorted sequences (one sorted row per
leading index), a sorter, both sides and out_int32, NaN and inf among values and boundaries, against the CPU kernel,
with no host op."""

from __future__ import annotations

import pytest
import torch

from triton_plate_backend import eager_ops

eager_ops.register()

NAN, INF = float("nan"), float("inf")


def _sequence(dtype, shape):
    g = torch.Generator().manual_seed(3)
    if dtype.is_floating_point:
        x = torch.randint(-4, 5, shape, generator=g).to(torch.float32)
        x.view(-1)[::7] = NAN
        x.view(-1)[1::9] = -INF
    else:
        x = torch.randint(-4, 5, shape, generator=g)
    return x.to(dtype).sort(-1).values


def _values(dtype, shape):
    g = torch.Generator().manual_seed(4)
    x = torch.randint(-6, 7, shape, generator=g).to(torch.float32) / 2
    if dtype.is_floating_point and x.numel() >= 3:
        x.view(-1)[:3] = torch.tensor([NAN, INF, -INF])
    return x.to(dtype)


CASES = {
    "1d": ((9,), (3, 5)),
    "2d": ((3, 9), (3, 5)),
    "3d": ((2, 3, 8), (2, 3, 4)),
    "one boundary": ((4, 1), (4, 3)),
    "empty sequence": ((2, 0), (2, 3)),
    "empty values": ((2, 5), (2, 0)),
}


@pytest.mark.parametrize("dtype", (torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32), ids=str)
@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("sorted_by", ("sorted", "sorter"))
@pytest.mark.parametrize("options", ({}, {"side": "right"}, {"right": True, "out_int32": True}), ids=str)
def test_searchsorted_matches_the_cpu(dtype, case, sorted_by, options, no_host_ops):
    seq_shape, values_shape = CASES[case]
    sequence, values = _sequence(dtype, seq_shape), _values(dtype, values_shape)
    kwargs = dict(options)
    if sorted_by == "sorter":  # the same rows shuffled, and the permutation that sorts them
        g = torch.Generator().manual_seed(5)
        perm = torch.argsort(torch.rand(seq_shape, generator=g), -1)
        sequence, kwargs["sorter"] = sequence.gather(-1, perm), perm.argsort(-1)
    expected = torch.searchsorted(sequence, values, **kwargs)
    plate_kwargs = {k: v.to("plate") if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
    result = torch.searchsorted(sequence.to("plate"), values.to("plate"), **plate_kwargs)
    assert result.device.type == "plate"
    assert (result.dtype, result.shape, result.stride()) == (expected.dtype, expected.shape, expected.stride())
    assert torch.equal(result.cpu(), expected)


def test_searchsorted_mixed_dtypes_and_a_scalar(no_host_ops):
    sequence = _sequence(torch.float32, (10,))
    values = torch.tensor([[-3, 0, 2], [4, 5, -5]])
    for args in ((sequence, values), (sequence.to(torch.int32), values.to(torch.float16)), (sequence, 1.5)):
        expected = torch.searchsorted(*args, side="right")
        plate_args = [a.to("plate") if isinstance(a, torch.Tensor) else a for a in args]
        result = torch.searchsorted(*plate_args, side="right")
        assert (result.dtype, result.shape) == (expected.dtype, expected.shape)
        assert torch.equal(result.cpu(), expected)


def test_searchsorted_refusals_raise_the_cpu_errors():
    sequence = torch.arange(6.0).reshape(2, 3)
    bad = (
        (sequence, torch.zeros(3, 2), {}),  # leading dims differ
        (sequence, torch.zeros(2, 2), {"sorter": torch.tensor([[0, 1, 3], [0, 1, 2]])}),  # sorter out of range
        (sequence, torch.zeros(2, 2), {"sorter": torch.tensor([[0, 1, 2], [0, 1, 2]], dtype=torch.int32)}),
        (sequence, torch.zeros(2, 2), {"sorter": torch.tensor([[0, 1], [0, 1]])}),  # not the sequence's shape
        (sequence, torch.zeros(2, 2), {"side": "left", "right": True}),
        (sequence.bool(), torch.zeros(2, 2).bool(), {}),
    )
    for seq, values, kwargs in bad:
        with pytest.raises(RuntimeError) as cpu:
            torch.searchsorted(seq, values, **kwargs)
        plate_kwargs = {k: v.to("plate") if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
        with pytest.raises(type(cpu.value)):
            torch.searchsorted(seq.to("plate"), values.to("plate"), **plate_kwargs)
