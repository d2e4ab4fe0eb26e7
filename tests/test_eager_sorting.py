"""plate's sort and topk (triton_plate_backend/eager_ops/sorting.py) against the CPU: values and indices
exactly (a stable sort: equal elements in their order; NaN last, first when descending), the CPU's
layouts, with the host-op counter at zero."""

from __future__ import annotations

import pytest
import torch

from triton_plate_backend import eager_ops

eager_ops.register()


def check(fn, x):
    expected, got = fn(x), fn(x.to("plate"))
    for g, e in zip(got, expected, strict=True):
        assert g.device.type == "plate" and (g.shape, g.stride(), g.dtype) == (e.shape, e.stride(), e.dtype)
        torch.testing.assert_close(g.cpu(), e, rtol=0, atol=0, equal_nan=True)


TIES = torch.randint(0, 5, (6, 37)).float()
TIES[1, 3] = TIES[1, 9] = TIES[4, 0] = float("nan")
TIES[2, 0], TIES[2, 5] = float("-inf"), float("inf")


@pytest.mark.parametrize("descending", [False, True])
def test_stable_sort_with_ties_and_nan(descending, no_host_ops):
    check(lambda x: torch.sort(x, stable=True, descending=descending), TIES)
    check(lambda x: torch.sort(x, dim=0, stable=True, descending=descending), TIES)
    check(lambda x: torch.sort(x, descending=descending), TIES.t())  # transposed: the CPU's strides


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.bfloat16, torch.bool, torch.float64])
def test_sort_dtypes(dtype, no_host_ops):
    check(lambda x: torch.sort(x, stable=True), TIES.nan_to_num(7).clamp(-9, 9).to(dtype))


def test_topk(no_host_ops):
    x = torch.randperm(64).float().reshape(1, 1, 8, 8)  # distinct: ties may pick other indices (unspecified)
    check(lambda x: torch.topk(x, 2, -1), x)
    check(lambda x: torch.topk(x, 3, 2, largest=False), x)
    distinct = torch.randperm(1000).float()
    check(lambda x: torch.topk(x, 500), distinct)  # distinct values: the same indices whatever the algorithm


def test_edge_shapes(no_host_ops):
    check(lambda x: torch.sort(x), torch.tensor(3.0))
    check(lambda x: torch.sort(x, dim=1), torch.randn(4, 1))
    check(lambda x: torch.sort(x), torch.empty(3, 0))
    check(lambda x: torch.argsort(x, stable=True).unsqueeze(0), TIES)


NAN = float("nan")
ORDER_STATISTICS = {
    "median": lambda t: t.median(),
    "nanmedian": lambda t: t.nanmedian(),
    "median_dim": lambda t: t.median(-1),
    "nanmedian_dim_keepdim": lambda t: t.nanmedian(0, keepdim=True),
    "kthvalue": lambda t: t.kthvalue(min(2, t.shape[-1]) if t.dim() else 1, -1),
    "kthvalue_keepdim": lambda t: t.kthvalue(1, 0, keepdim=True),
    "mode": lambda t: t.mode(-1),
    "mode_keepdim": lambda t: t.mode(0, keepdim=True),
}


@pytest.mark.parametrize("name", ORDER_STATISTICS)
@pytest.mark.parametrize(
    "x",
    [
        torch.randn(4, 9, generator=torch.Generator().manual_seed(5)),
        torch.randint(-3, 3, (5, 6), generator=torch.Generator().manual_seed(6)),  # ties
        torch.tensor([[1.0, NAN, 2.0, 0.5], [NAN, NAN, NAN, NAN], [3.0, 1.0, 2.0, 2.0]]),  # NaN rows
        torch.randn(3, 4, 5, generator=torch.Generator().manual_seed(7)).half(),
        torch.tensor(2.5),
    ],
    ids=["fp32", "int64_ties", "nan_rows", "fp16_3d", "0d"],
)
def test_median_nanmedian_kthvalue_as_the_cpus(name, x, request):
    nan_mode = name.startswith("mode") and x.is_floating_point() and bool(x.isnan().any())
    host_before = torch.plate.host_ops().get("aten.mode", 0)
    if not nan_mode:
        request.getfixturevalue("no_host_ops")
    fn = ORDER_STATISTICS[name]
    want, got = fn(x), fn(x.plate())
    if isinstance(want, torch.Tensor):  # of the whole tensor: the value alone
        torch.testing.assert_close(got.cpu(), want, equal_nan=True, rtol=0, atol=0)
        return
    torch.testing.assert_close(got.values.cpu(), want.values, equal_nan=True, rtol=0, atol=0)
    assert got.indices.shape == want.indices.shape and got.indices.dtype == want.indices.dtype
    # which of equal elements is implementation-defined (the CPU's quickselect): the index holds the value
    dim = -1 if name in ("median_dim", "kthvalue", "mode") else 0
    picked = (
        x.reshape(1)
        if not x.dim()
        else x.gather(dim, got.indices.cpu() if "keepdim" in name else got.indices.cpu().unsqueeze(dim))
    )
    torch.testing.assert_close(picked.reshape(want.values.shape), want.values, equal_nan=True, rtol=0, atol=0)
    if nan_mode:  # a row with NaN: the host's mode (the CPU's NaN grouping), counted as a host op
        assert torch.plate.host_ops().get("aten.mode", 0) == host_before + 1


def test_kthvalue_out_of_range_raises_torchs_error():
    with pytest.raises(RuntimeError, match="out of range|selected number k"):
        torch.tensor([1.0, 2.0]).plate().kthvalue(3)


@pytest.mark.parametrize(
    "x",
    [
        torch.randint(-4, 5, (6, 7), generator=torch.Generator().manual_seed(12)),
        torch.tensor([2.0, NAN, 1.0, 2.0, NAN, -0.5]),  # each NaN its own value, after the numbers
        torch.tensor([True, False, True, True]),
        torch.randint(0, 3, (20,), generator=torch.Generator().manual_seed(13)).half(),
        torch.tensor(7),
        torch.empty(0, 3),
    ],
    ids=["int64_2d", "nan", "bool", "fp16", "0d", "empty"],
)
@pytest.mark.parametrize("return_inverse", [False, True])
@pytest.mark.parametrize("return_counts", [False, True])
def test_unique_on_plate_as_the_cpus(x, return_inverse, return_counts, no_host_ops):
    want = torch.unique(x, sorted=True, return_inverse=return_inverse, return_counts=return_counts)
    got = torch.unique(x.plate(), sorted=True, return_inverse=return_inverse, return_counts=return_counts)
    for w, g in zip(want if isinstance(want, tuple) else (want,), got if isinstance(got, tuple) else (got,)):
        assert g.device.type == "plate" and g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g.cpu(), w, equal_nan=True, rtol=0, atol=0)


@pytest.mark.parametrize("return_inverse", [False, True])
def test_the_older_unique_overload_on_plate_as_the_cpus(return_inverse, no_host_ops):
    """aten._unique (no counts), which graph breaks and scripted code still call, runs plate's unique too."""
    x = torch.tensor([[3.0, NAN, 1.0], [3.0, -2.0, 1.0]])
    want = torch._unique(x, sorted=True, return_inverse=return_inverse)
    got = torch._unique(x.plate(), sorted=True, return_inverse=return_inverse)
    assert len(got) == len(want) == 2
    for w, g in zip(want, got):
        assert g.device.type == "plate" and g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g.cpu(), w, equal_nan=True, rtol=0, atol=0)
    compiled = torch.compile(lambda t: torch._unique(t * 2, return_inverse=return_inverse))(x.plate())
    for w, g in zip(torch._unique(x * 2, return_inverse=return_inverse), compiled):
        torch.testing.assert_close(g.cpu(), w, equal_nan=True, rtol=0, atol=0)
