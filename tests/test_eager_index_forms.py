"""Indexing and selection forms on plate (eager_ops/index_forms.py and the decomposed rows of index_copy, index_fill
and take): masked_scatter_, put_, unique_consecutive, pdist, index_copy, index_fill, take against CPU torch, with
no host op; the CPU's errors where it refuses the call."""

from __future__ import annotations

import pytest
import torch

import triton_plate_backend.torch_device  # noqa: F401 - registers the plate device
from triton_plate_backend.torch_device.host_op_counter import host_op_scope

F = torch.nn.functional
NAN = float("nan")
DTYPES = (torch.float32, torch.float16, torch.int64, torch.bool)


def plate(value):
    return value.to("plate") if isinstance(value, torch.Tensor) else value


def same(got, want):
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.device.type == "plate" and g.dtype == w.dtype and g.shape == w.shape, (g, w)
        torch.testing.assert_close(g.cpu(), w, rtol=1e-5, atol=1e-6, equal_nan=True)


def on_plate(fn, *inputs):
    with host_op_scope() as ops:
        result = fn(*[plate(x) for x in inputs])
    assert not ops, ops
    return result


def data(dtype, shape=(4, 5), seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    return torch.randint(-3, 4, shape, generator=g).to(dtype)


def index(*values):
    return torch.tensor(values, dtype=torch.int64)


CASES = {
    "masked_scatter": lambda x: x.masked_scatter(x > 0, x.flip(0)),
    "masked_scatter(broadcast mask)": lambda x: x.masked_scatter(x[0] > 0, torch.cat([x, x]).flip(1)),
    "masked_scatter_(strided self)": lambda x: x.t().clone().t().masked_scatter_(x < 1, x.flip(1)),
    "put_": lambda x: x.clone().put_(index(0, -1, 7).to(x.device), x[1, :3].clone()),
    "put_(accumulate)": lambda x: x.clone().put_(index(2, 2, 2, 9).to(x.device), x[0, :4].clone(), accumulate=True),
    "put_(source a view of self)": lambda x: (lambda y: y.put_(index(7, 3).to(y.device), y[0, :2]))(x.clone()),
    "put_(strided self)": lambda x: x.t().clone().t().put_(index(1, 13).to(x.device), x[2, :2].clone()),
    "index_copy": lambda x: x.index_copy(1, index(4, 0).to(x.device), x[:, 1:3].clone()),
    "index_copy_": lambda x: x.clone().index_copy_(0, index(3, 1).to(x.device), x[:2].clone()),
    "index_fill": lambda x: x.index_fill(1, index(0, 2, -1).to(x.device), 1),
    "index_fill_(tensor value)": lambda x: x.clone().index_fill_(0, index(2).to(x.device), x[0, 0].clone()),
    "take": lambda x: torch.take(x, index(0, 5, -1, 19).view(2, 2).to(x.device)),
    "take(strided)": lambda x: torch.take(x.t(), index(1, 2, 3).to(x.device)),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_index_forms_against_the_cpu(name, dtype):
    x = data(dtype)
    fn = CASES[name]
    try:
        want = fn(x)
    except RuntimeError as refused:  # the CPU refuses the dtype (a bool put_ with accumulate): plate too
        with pytest.raises(RuntimeError) as on_device:
            fn(plate(x))
        assert str(on_device.value) == str(refused)
        return
    same(on_plate(fn, x), want)


def test_masked_scatter_errors_and_empty():
    x = data(torch.float32)
    with pytest.raises(RuntimeError) as on_cpu:
        x.clone().masked_scatter_(x > -10, x[0])  # fewer source elements than trues
    with pytest.raises(RuntimeError) as on_device:
        plate(x).masked_scatter_(plate(x) > -10, plate(x[0]))
    assert str(on_device.value) == str(on_cpu.value)
    empty = torch.empty(0, 3)
    same(on_plate(lambda t: t.masked_scatter(t > 0, t), empty), empty)
    same(on_plate(lambda t: t.masked_scatter(t > 10, torch.empty(0, device="plate")), x), x)


def test_put_index_out_of_range_raises_the_cpu_error():
    x = data(torch.float32)
    with pytest.raises(IndexError) as on_cpu:
        x.clone().put_(index(20), x[0, :1])
    with pytest.raises(IndexError) as on_device:
        plate(x).put_(plate(index(20)), plate(x[0, :1]))
    assert str(on_device.value) == str(on_cpu.value)


UNIQUE = {
    "flat": lambda x: torch.unique_consecutive(x),
    "flat, inverse and counts": lambda x: torch.unique_consecutive(x, return_inverse=True, return_counts=True),
    "dim 0": lambda x: torch.unique_consecutive(x, return_inverse=True, return_counts=True, dim=0),
    "dim 1": lambda x: torch.unique_consecutive(x, return_counts=True, dim=1),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(UNIQUE))
def test_unique_consecutive(name, dtype):
    g = torch.Generator().manual_seed(1)
    x = (torch.randint(0, 2, (6, 3), generator=g) * torch.randint(0, 2, (6, 1), generator=g)).to(dtype)
    x = torch.cat([x, x[-1:], x[:, :1].repeat(1, 3)], 0)  # equal neighbours along dim 0 and along the flat order
    fn = UNIQUE[name]
    same(on_plate(fn, x), fn(x))


def test_unique_consecutive_nan_zero_dim_and_empty():
    nans = torch.tensor([NAN, NAN, 1.0, 1.0, NAN])  # NaN equals nothing: each its own run
    fn = UNIQUE["flat, inverse and counts"]
    same(on_plate(fn, nans), fn(nans))
    same(on_plate(fn, torch.tensor(2.5)), fn(torch.tensor(2.5)))
    same(on_plate(fn, torch.empty(0)), fn(torch.empty(0)))
    same(on_plate(UNIQUE["dim 0"], torch.empty(0, 3)), UNIQUE["dim 0"](torch.empty(0, 3)))


@pytest.mark.parametrize("p", [2.0, 1.0, 0.0, 3.0, float("inf")])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_pdist(p, dtype):
    x = data(torch.float32, (6, 3), seed=2).to(dtype)
    x[1] = x[4]  # a zero distance
    x = x.round(decimals=1) if p == 0 else x
    same(on_plate(lambda t: F.pdist(t, p), x), F.pdist(x, p))
    assert on_plate(lambda t: F.pdist(t), x[:1]).shape == (0,)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_unique_along_a_dim_sorts_the_slices(dim, dtype):
    """torch.unique(dim=): the slices sorted lexicographically, each once, with inverse and counts, as the CPU."""
    g = torch.Generator().manual_seed(3)
    x = torch.randint(0, 3, (9, 3, 2), generator=g).to(dtype)
    for fn in (
        lambda t: torch.unique(t, dim=dim),
        lambda t: torch.unique(t, dim=dim, return_inverse=True, return_counts=True),
    ):
        same(on_plate(fn, x), fn(x))
    empty = torch.empty(0, 3, dtype=dtype)
    same(
        on_plate(lambda t: torch.unique(t, dim=0, return_counts=True), empty),
        torch.unique(empty, dim=0, return_counts=True),
    )


@pytest.mark.parametrize("p", [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, float("inf")])
def test_pdist_gradient(p):
    """_pdist_backward by ATen's formulas per p: a zero distance (rows 0 and 1) and zero differences give 0."""
    x = torch.tensor([[0.0, 1, 2], [0, 1, 2], [1, -1, 0.5], [2, 2, 2], [1, 1, 2]])
    cpu = x.clone().requires_grad_()
    distances = F.pdist(cpu, p)
    weights = torch.arange(1.0, distances.numel() + 1)
    (want,) = torch.autograd.grad(distances, cpu, weights)
    leaf = x.to("plate").requires_grad_()
    with host_op_scope() as ops:
        (got,) = torch.autograd.grad(F.pdist(leaf, p), leaf, weights.to("plate"))
    assert not ops, ops
    torch.testing.assert_close(got.cpu(), want, rtol=1e-5, atol=1e-5)
