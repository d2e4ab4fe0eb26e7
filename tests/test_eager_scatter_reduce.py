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


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
def test_index_reduce_equals_the_cpu(reduce, include_self, dtype, no_host_ops):
    """index_reduce as scatter_reduce with the index broadcast (functional, in place and out=, along an inner
    dim too); NaN of either sign wins amax/amin."""
    g = torch.Generator().manual_seed(4)
    x, source = (torch.randn(5, 3, generator=g) * 3).to(dtype), (torch.randn(4, 3, generator=g) * 3).to(dtype)
    if dtype.is_floating_point:
        source[0, 0], source[1, 1] = float("nan"), -float("nan")
    rows = torch.tensor([3, 0, 3, 1])
    expected = x.index_reduce(0, rows, source, reduce, include_self=include_self)
    px, prows, psource = x.to("plate"), rows.to("plate"), source.to("plate")
    out = torch.empty(0, dtype=dtype, device="plate")
    in_place = px.clone()
    in_place.index_reduce_(0, prows, psource, reduce, include_self=include_self)
    torch.index_reduce(px, 0, prows, psource, reduce, include_self=include_self, out=out)
    for got in (px.index_reduce(0, prows, psource, reduce, include_self=include_self), in_place, out):
        torch.testing.assert_close(got.cpu(), expected, equal_nan=True, rtol=0, atol=0)
    inner = x.t().contiguous()
    expected = inner.index_reduce(1, rows, source.t(), reduce, include_self=include_self)
    got = inner.to("plate").index_reduce(1, prows, psource.t(), reduce, include_self=include_self)
    torch.testing.assert_close(got.cpu(), expected, equal_nan=True, rtol=0, atol=0)


def test_index_reduce_shape_errors_are_the_cpus():
    x, source, rows = torch.zeros(3, 2), torch.ones(2, 3), torch.tensor([0, 1])
    with pytest.raises(RuntimeError) as on_cpu:
        x.index_reduce(0, rows, source, "amax")
    with pytest.raises(RuntimeError) as on_plate:
        x.to("plate").index_reduce(0, rows.to("plate"), source.to("plate"), "amax")
    assert str(on_plate.value) == str(on_cpu.value)


LEGACY = {
    "add": lambda x, i, s: x.scatter(1, i, s, reduce="add"),
    "multiply": lambda x, i, s: x.scatter(1, i, s, reduce="multiply"),
    "add in place": lambda x, i, s: x.clone().scatter_(1, i, s, reduce="add"),
    "multiply a value in place": lambda x, i, s: x.clone().scatter_(1, i, 3, reduce="multiply"),
    "add a value": lambda x, i, s: x.scatter(0, i[:2], 2, reduce="add"),
    "out=": lambda x, i, s: torch.scatter(
        x, 1, i, s, reduce="multiply", out=torch.empty(0, dtype=x.dtype, device=x.device)
    ),
}


@pytest.mark.parametrize("name", LEGACY)
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64], ids=str)
def test_scatter_with_a_legacy_reduce_matches_the_cpu(name, dtype, no_host_ops):
    g = torch.Generator().manual_seed(7)
    x = torch.randint(-4, 5, (4, 6), generator=g).to(dtype)
    index = torch.tensor([[0, 1], [2, 2], [3, 4], [5, 5]])  # repeated targets combine
    src = torch.randint(-3, 4, (4, 2), generator=g).to(dtype)
    expected = LEGACY[name](x, index, src)
    got = LEGACY[name](x.to("plate"), index.to("plate"), src.to("plate"))
    assert got.dtype == expected.dtype
    torch.testing.assert_close(got.cpu(), expected)
