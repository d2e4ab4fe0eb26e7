"""scatter's reductions in index order (triton_plate_backend/eager_ops/scatter_reduce.py): prod, mean and
the types Triton's atomics lack, equal to the CPU's results, with the host-op counter at zero."""

from __future__ import annotations

import pytest
import torch

from triton_plate_backend import eager_ops

eager_ops.register()

X = torch.randn(5, 7) * 4
INDEX = torch.tensor([[0, 1, 2, 0, 4, 4, 1], [2, 2, 0, 1, 3, 3, 3], [4, 0, 0, 0, 1, 2, 3]])
SOURCE = torch.randn(3, 7) * 4


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce_equals_the_cpu(reduce, include_self, dtype, no_host_ops):
    x, source = X.to(dtype), SOURCE.to(dtype)
    expected = x.scatter_reduce(0, INDEX, source, reduce, include_self=include_self)
    got = x.to("plate").scatter_reduce(0, INDEX.to("plate"), source.to("plate"), reduce, include_self=include_self)
    assert got.device.type == "plate"
    assert torch.equal(got.cpu(), expected)  # the same order of operations: the same roundings


def test_in_place_along_an_inner_dim_with_a_smaller_index(no_host_ops):
    x = torch.ones(4, 5, 6)
    index = torch.tensor([[[3, 5, 0, 5]]])
    source = torch.randn(2, 3, 10)
    px = x.to("plate")
    px.scatter_reduce_(2, index.to("plate"), source.to("plate"), "prod")
    x.scatter_reduce_(2, index, source, "prod")
    assert torch.equal(px.cpu(), x)


def test_nan_wins_amax_and_integer_mean_floors(no_host_ops):
    x = torch.zeros(3)
    source = torch.tensor([1.0, float("nan"), 2.0])
    index = torch.tensor([0, 0, 1])
    got = x.to("plate").scatter_reduce(0, index.to("plate"), source.to("plate"), "amax")
    torch.testing.assert_close(got.cpu(), x.scatter_reduce(0, index, source, "amax"), equal_nan=True)
    ints, values = torch.tensor([0, 0, 0]), torch.tensor([-3, -4, 5])
    got = ints.to("plate").scatter_reduce(0, index.to("plate"), values.to("plate"), "mean")
    assert torch.equal(got.cpu(), ints.scatter_reduce(0, index, values, "mean"))


def test_bool_and_bf16_scatter_add(no_host_ops):
    for dtype in (torch.bool, torch.bfloat16, torch.int64):
        x, ones = torch.zeros(3, 5, dtype=dtype), torch.ones(2, 5, dtype=dtype)
        index = torch.tensor([[0, 1, 2, 0, 0]])
        got = x.to("plate").scatter_add(0, index.to("plate"), ones.to("plate"))
        assert torch.equal(got.cpu(), x.scatter_add(0, index, ones))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["amax", "amin"])
def test_nan_wins_amax_and_amin_of_every_float_type(reduce, include_self, dtype, no_host_ops):
    """A NaN of the source (of either sign: inf - inf is a negative NaN on x86) or of self wins both, as
    in the CPU's loop and CUDA's safe_max/safe_min atomics (Triton's float atomics compare the bits as
    integers and drop one sign's NaN)."""
    nan = float("nan")
    x = torch.tensor([1.0, 2.0, nan, 4.0, 5.0], dtype=dtype)
    source = torch.tensor([nan, 5.0, -1.0, -nan, 7.0, -7.0, 0.5, 3.0], dtype=dtype)
    index = torch.tensor([0, 0, 1, 1, 2, 3, 4, 4])
    expected = x.scatter_reduce(0, index, source, reduce, include_self=include_self)
    got = x.to("plate").scatter_reduce(0, index.to("plate"), source.to("plate"), reduce, include_self=include_self)
    torch.testing.assert_close(got.cpu(), expected, equal_nan=True, rtol=0, atol=0)
