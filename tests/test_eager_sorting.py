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


def test_unique_without_inverse_or_counts_launches_no_group_numbers(monkeypatch, no_host_ops):
    """torch.unique(x) (no inverse, no counts): the sort, the new-value flags (a fill and a compare) and the
    select of the values (nonzero's one launch for a flag tensor of one block, and the gather); the group
    numbers (cumsum, minus one) only for the inverse or the counts."""
    x = torch.randint(-20, 20, (256,), dtype=torch.int16, generator=torch.Generator().manual_seed(5))
    px = x.to("plate")
    seen = _launches(monkeypatch)
    got = px.unique()
    assert len(seen) == 5
    assert torch.equal(got.cpu(), x.unique())
    seen.clear()
    got, counts = px.unique(return_counts=True)
    assert len(seen) > 5
    want, want_counts = x.unique(return_counts=True)
    assert torch.equal(got.cpu(), want) and torch.equal(counts.cpu(), want_counts)


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


# ---- rows up to sorting_kernels.MAX_LOG_WIDTH's width: one launch per call (sorting_kernels.sort_rows) ----------
def _bits(t: torch.Tensor) -> torch.Tensor:
    """t's elements as their bits (-0.0 apart from 0.0, each NaN's payload), comparable with torch.equal."""
    return t.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]) if t.is_floating_point() else t


def _rows(dtype: torch.dtype, rows: int, width: int, seed: int) -> torch.Tensor:
    """Rows with ties, and for floats NaN, +-inf, 0.0 and -0.0 among them; the extremes of integer types."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, (rows, width), generator=g).bool()
    if not dtype.is_floating_point:
        info = torch.iinfo(dtype)
        x = torch.randint(-3, 4, (rows, width), generator=g).clamp(min(info.min, 0)).to(dtype)
        x.view(-1)[:: max(width // 3, 1)] = info.max
        x.view(-1)[1 :: max(width // 2, 1)] = info.min
        return x
    x = torch.randint(-3, 4, (rows, width), generator=g).to(dtype) / 2
    special = torch.tensor([NAN, float("inf"), -float("inf"), 0.0, -0.0, NAN], dtype=dtype)
    where = torch.randint(0, rows * width, (min(rows * width, 12),), generator=g)
    x.view(-1)[where] = special.repeat(2)[: len(where)]
    return x


def _as_stable_sort(x: torch.Tensor, k: int, descending: bool, topk: bool):
    """plate's sort (or topk: the k first of the stable sort) against the CPU's stable sort: values bit for bit and
    indices."""
    want = torch.sort(x, dim=-1, descending=descending, stable=True)
    want = (want.values[..., :k], want.indices[..., :k])
    on_plate = x.to("plate")
    if topk:
        got = torch.topk(on_plate, k, largest=descending)
    else:
        got = torch.sort(on_plate, descending=descending, stable=True)
    assert torch.equal(_bits(got[0].cpu()), _bits(want[0])), (x, got[0].cpu(), want[0])
    assert torch.equal(got[1].cpu(), want[1])


@pytest.mark.parametrize(
    "dtype",
    [torch.bool, torch.uint8, torch.int8, torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32],
)
@pytest.mark.parametrize("descending", [False, True])
def test_one_launch_sort_and_topk_of_every_dtype_as_the_stable_cpu_sort(dtype, descending, no_host_ops):
    x = _rows(dtype, 3, 257, seed=1)
    _as_stable_sort(x, 257, descending, topk=False)
    _as_stable_sort(x, 1, descending, topk=True)
    _as_stable_sort(x, 5, descending, topk=True)


@pytest.mark.parametrize("width", [1, 2, 3, 255, 256, 257, 4096])
def test_one_launch_sort_and_topk_of_every_width(width, no_host_ops):
    from triton_plate_backend.eager_ops import sorting_kernels

    assert 4096 == 1 << sorting_kernels.MAX_LOG_WIDTH  # the limit: the widest rows of one launch
    descending = width % 2 == 1
    x = _rows(torch.float32, 2 if width < 4096 else 1, width, seed=width)
    _as_stable_sort(x, width, descending, topk=True)
    _as_stable_sort(x, 1, not descending, topk=True)
    _as_stable_sort(x.double(), width, descending, topk=False)  # 64-bit keys: (key, position) pairs


def _launches(monkeypatch) -> list:
    from triton_plate_backend.sim.device import Device

    seen = []
    real = Device.launch
    monkeypatch.setattr(Device, "launch", lambda self, *a, **k: seen.append(1) or real(self, *a, **k))
    return seen


def _stable_topk(x: torch.Tensor, k: int, dim: int = -1, largest: bool = True):
    """topk as plate runs it: the k first of the stable sort (the CPU's topk orders ties its own way)."""
    values, indices = torch.sort(x, dim=dim, descending=largest, stable=True)
    return values.narrow(dim, 0, k), indices.narrow(dim, 0, k)


@pytest.mark.parametrize(
    "call, stable",
    [
        (lambda x: torch.topk(x, 8), lambda x: _stable_topk(x, 8)),
        # rows across the layout: strided loads and stores
        (lambda x: torch.topk(x, 3, dim=0, largest=False), lambda x: _stable_topk(x, 3, 0, False)),
        (lambda x: torch.sort(x, descending=True, stable=True), None),
        (lambda x: (torch.argsort(x, dim=0, stable=True),), None),
        (lambda x: torch.sort(x.long()[:, ::2], stable=True), None),  # (key, position) pairs, of a strided view
    ],
    ids=["topk", "topk_dim0", "sort", "argsort_dim0", "sort_int64_strided"],
)
def test_rows_within_the_limit_sort_in_one_launch(call, stable, monkeypatch, no_host_ops):
    x = _rows(torch.float32, 24, 256, seed=3)
    on_plate = x.to("plate")
    seen = _launches(monkeypatch)
    got = call(on_plate)
    assert len(seen) == 1
    for g, w, s in zip(got, call(x), (stable or call)(x), strict=True):
        assert (g.shape, g.stride()) == (w.shape, w.stride())  # the CPU's layout
        assert torch.equal(_bits(g.cpu()), _bits(s))


@pytest.mark.parametrize(
    "width, dtype, launches",
    [
        (4097, torch.float32, 3),  # 8192 wide: the blocks of 4096 sorted, the stage (8192, 4096), the stages within
        (9000, torch.float16, 6),  # 16384 wide: then (16384, 8192), (16384, 4096) and the stages within blocks
        (9000, torch.int64, 6),
    ],
)
def test_wider_rows_sort_by_blocks_and_stages(width, dtype, launches, monkeypatch, no_host_ops):
    x = _rows(dtype, 2, width, seed=width)
    seen = _launches(monkeypatch)
    _as_stable_sort(x, width, True, topk=False)
    assert len(seen) == launches
    seen.clear()
    _as_stable_sort(x, 3, False, topk=True)
