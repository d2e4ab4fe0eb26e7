"""any/all and repeat_interleave on plate (triton_plate_backend/eager_ops/scans.py) against the CPU, with the
host-op counter at zero."""

from __future__ import annotations

import pytest
import torch

from triton_plate_backend import eager_ops

eager_ops.register()


def same(got, expected):
    assert got.device.type == "plate" and (got.shape, got.dtype) == (expected.shape, expected.dtype)
    assert torch.equal(got.cpu(), expected)


X = torch.randn(2, 1024)
X[1, 700] = float("nan")


@pytest.mark.parametrize(
    "tensor",
    [X, X.isnan(), X.isinf(), torch.zeros(3), torch.empty(0), torch.tensor([0, 0, 5]), torch.ones(3, dtype=torch.bool)],
)
def test_any_and_all(tensor, no_host_ops):
    same(tensor.to("plate").any(), tensor.any())
    same(tensor.to("plate").all(), tensor.all())
    same(tensor.t().to("plate").any() if tensor.dim() == 2 else tensor.to("plate").any(), tensor.any())


@pytest.mark.parametrize("n", [1, 3, 4096, 4097, 9000])
@pytest.mark.parametrize("dtype", [torch.float32, torch.uint8, torch.bool])
def test_any_and_all_of_one_block_are_one_launch(n, dtype, monkeypatch, no_host_ops):
    # up to prefix_kernels.ANY_BLOCK elements: any_all_block stores the answer itself (before: a zeroed flag, the
    # block's atomic max, a compare); more: any_nonzero's programs into the flag; the CPU's answers (uint8 for uint8)
    from triton_plate_backend import launcher

    names = []
    call = launcher.PlateLauncher.__call__
    counted = lambda self, *r, **k: names.append(self.name) or call(self, *r, **k)  # noqa: E731
    monkeypatch.setattr(launcher.PlateLauncher, "__call__", counted)
    ones = torch.ones(n, dtype=dtype)
    for x in (ones, torch.cat([ones[:-1], torch.zeros(1, dtype=dtype)]), torch.zeros(n, dtype=dtype)):
        for op in ("any", "all"):
            names.clear()
            same(getattr(x.to("plate"), op)(), getattr(x, op)())
            assert names == ["any_all_block"] if n <= 4096 else ("any_nonzero" in names), (op, names)


@pytest.mark.parametrize(
    "repeats", [[5, 10, 15], [2, 0, 3], [0, 0, 1, 0], [1], [], torch.randint(0, 4, (700,)).tolist()]
)
def test_repeat_interleave(repeats, no_host_ops):
    r = torch.tensor(repeats, dtype=torch.int64)
    same(torch.repeat_interleave(r.to("plate")), torch.repeat_interleave(r))
    rank = torch.arange(len(repeats))
    same(rank.to("plate").repeat_interleave(r.to("plate"), dim=0), rank.repeat_interleave(r, dim=0))


def test_repeat_interleave_with_an_output_size(no_host_ops):
    r = torch.tensor([3, 1, 2], dtype=torch.int32)
    same(torch.repeat_interleave(r.to("plate"), output_size=6), torch.repeat_interleave(r, output_size=6))


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32, torch.bool, torch.uint8]
)
@pytest.mark.parametrize("kw", [{"dim": 1}, {"dim": 0}, {"dim": -1}, {"dim": 1, "dtype": torch.float64}])
def test_cumsum_along_a_dim(dtype, kw, no_host_ops):
    # rows longer than one block (1300 > prefix_kernels.BLOCK); integers exact (int64 unless asked), floats
    # no farther from the float64 scan than the CPU's own scan, give or take a few float32 steps
    x = (torch.randn(5, 1300, 3, generator=torch.Generator().manual_seed(8)) * 3).to(dtype)
    got, cpu = torch.cumsum(x.to("plate"), **kw), torch.cumsum(x, **kw)
    assert (got.shape, got.stride(), got.dtype) == (cpu.shape, cpu.stride(), cpu.dtype)
    if not cpu.dtype.is_floating_point:
        same(got, cpu)
        return
    exact = torch.cumsum(x.double(), **kw)
    bound = (cpu.double() - exact).abs().max() + 1e-4 * exact.abs().clamp_min(1)
    assert bool(((got.cpu().double() - exact).abs() <= bound).all())


def test_cumsum_of_a_transposed_a_0d_and_an_empty_tensor(no_host_ops):
    x = torch.randn(4, 6).t()
    got = torch.cumsum(x.to("plate"), 0)
    assert got.stride() == torch.cumsum(x, 0).stride()
    torch.testing.assert_close(got.cpu(), torch.cumsum(x, 0))
    same(torch.cumsum(torch.tensor(3.0).to("plate"), 0), torch.tensor(3.0))
    same(torch.cumsum(torch.empty(0, 3).to("plate"), 0), torch.empty(0, 3))
    same(torch.ones(8192, dtype=torch.float16).to("plate").cumsum(0)[-1], torch.tensor(8192.0, dtype=torch.float16))


def test_cumsum_in_place_and_into_an_out_tensor(no_host_ops):
    x = torch.arange(12, dtype=torch.int32).reshape(3, 4)
    p = x.to("plate")
    p.cumsum_(1)
    same(p, x.clone().cumsum_(1))
    t = x.to("plate").t()
    t.cumsum_(0)  # a transposed view, in place
    same(t, x.t().clone().cumsum_(0))
    out = torch.empty(0, dtype=torch.int64).to("plate")  # resized, as torch's out=
    torch.cumsum(x.to("plate"), 0, out=out)
    same(out, torch.cumsum(x, 0))


NAN = float("nan")


@pytest.mark.parametrize(
    "x",
    [
        torch.randn(5, 7, generator=torch.Generator().manual_seed(18)),
        torch.randint(-3, 3, (4, 9), generator=torch.Generator().manual_seed(19)),  # ties: the later index
        torch.tensor([[1.0, NAN, 3.0, NAN, 0.5], [2.0, 2.0, 1.0, 2.0, 5.0]]),  # NaN stays, at the last NaN
        torch.randint(-3, 3, (2, 1100), generator=torch.Generator().manual_seed(20)).half(),  # rows of 3 blocks
        torch.tensor([True, False, True]),
        torch.tensor(4.0),
        torch.randn(4, 3, 6, generator=torch.Generator().manual_seed(21)),
    ],
    ids=["fp32", "int64_ties", "nan", "fp16_long_rows", "bool", "0d", "3d"],
)
@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cummax_cummin_on_plate_as_the_cpus(x, name, no_host_ops):
    for dim in range(max(x.dim(), 1)):
        want, got = getattr(x, name)(dim), getattr(x.plate(), name)(dim)
        torch.testing.assert_close(got.values.cpu(), want.values, equal_nan=True, rtol=0, atol=0)
        assert torch.equal(got.indices.cpu(), want.indices)


def test_cummax_gradient_on_plate(no_host_ops):
    x = torch.randn(3, 8, generator=torch.Generator().manual_seed(22))
    grad = torch.randn(3, 8, generator=torch.Generator().manual_seed(23))
    got = x.plate().requires_grad_(True)
    got.cummax(1).values.backward(grad.plate())
    want = x.clone().requires_grad_(True)
    want.cummax(1).values.backward(grad)
    torch.testing.assert_close(got.grad.cpu(), want.grad)


INF = float("inf")
SPECIAL = torch.tensor([-INF, -INF, 0.0, INF, 1.0, INF, NAN, 2.0])  # -inf with -inf stays -inf; NaN stays


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize(
    "x",
    [
        SPECIAL,
        torch.tensor([-INF, -INF, -INF]),
        torch.tensor([INF, -INF, 3.0, INF]),
        torch.randn(3, 1100, generator=torch.Generator().manual_seed(22)) * 20,  # rows of 3 blocks
        torch.randn(2, 3, 5, generator=torch.Generator().manual_seed(23)).transpose(0, 2),
        torch.tensor(1.5),
        torch.empty(0, 3),
    ],
    ids=["special", "all_neg_inf", "infinities", "long_rows", "transposed_3d", "0d", "empty"],
)
def test_logcumsumexp_on_plate_as_the_cpus(x, dtype, no_host_ops):
    x = x.to(dtype)
    tol = {"rtol": 1e-2, "atol": 1e-2} if dtype in (torch.float16, torch.bfloat16) else {"rtol": 1e-5, "atol": 1e-5}
    for dim in range(-max(x.dim(), 1), max(x.dim(), 1)):
        want, got = torch.logcumsumexp(x, dim), torch.logcumsumexp(x.plate(), dim)
        assert (got.device.type, got.shape, got.stride(), got.dtype) == ("plate", want.shape, want.stride(), want.dtype)
        torch.testing.assert_close(got.cpu(), want, equal_nan=True, **tol)


def test_logcumsumexp_into_an_out_tensor_and_refusals():
    x = torch.randn(4, 5, generator=torch.Generator().manual_seed(24))
    out = torch.empty(0).plate()  # resized, as torch's out=
    torch.plate.reset_host_ops()
    torch.logcumsumexp(x.plate(), 1, out=out)
    assert torch.plate.host_ops() == {}
    torch.testing.assert_close(out.cpu(), torch.logcumsumexp(x, 1))
    for bad, dim in ((torch.arange(4), 0), (x, 2)):  # the CPU refuses integers, a dim out of range
        with pytest.raises((RuntimeError, IndexError, NotImplementedError)) as cpu:
            torch.logcumsumexp(bad, dim)
        with pytest.raises(type(cpu.value)):
            torch.logcumsumexp(bad.plate(), dim)


def _one_program_cumsum(x: torch.Tensor, acc: torch.dtype) -> torch.Tensor:
    """cumsum along the last dim of x (plate, contiguous) by prefix_kernels.cumsum_rows, one program a row."""
    from triton_plate_backend.eager_ops import launch
    from triton_plate_backend.eager_ops import prefix_kernels as k

    out = torch.empty_like(x)
    k.cumsum_rows[(x.numel() // x.shape[-1],)](
        x, out, x.shape[-1], ACC=launch.triton_dtype(acc), BLOCK=k.BLOCK, PRODUCT=False, machine=k.machine_of(x)
    )
    return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool])
@pytest.mark.parametrize("shape", [(512 * 70 + 9,), (2, 512 * 9 + 1)])
def test_cumsum_of_long_rows_in_three_launches(dtype, shape, monkeypatch, no_host_ops):
    # rows of at least prefix_kernels.LONG_ROW: block sums, their carries, the blocks' scans (scans.long_rows);
    # integers exact, floats bit for bit the one-program walk's (the carries added in the same order), with -0.0
    # blocks, an inf and a NaN
    from triton_plate_backend.eager_ops import scans

    x = torch.randn(shape, generator=torch.Generator().manual_seed(5)) * 3
    x[..., :1024] = -0.0
    x[..., -900] = float("inf")
    x[..., -700] = float("nan")
    x = x > 0 if dtype == torch.bool else x.to(dtype)
    taken, long_rows = [], scans.long_rows
    monkeypatch.setattr(scans, "long_rows", lambda *a: taken.append(a) or long_rows(*a))
    got = torch.cumsum(x.to("plate"), -1)
    assert taken, "the long-row path was not taken"
    if not dtype.is_floating_point:
        same(got, torch.cumsum(x, -1))
        return
    walked = _one_program_cumsum(x.to("plate"), torch.float32).cpu()
    bits = torch.int16 if dtype == torch.float16 else torch.int32
    assert torch.equal(got.cpu().view(bits), walked.view(bits))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool])
@pytest.mark.parametrize("shape", [(512 * 40 + 3,), (3, 512 * 9 + 511)])
@pytest.mark.parametrize("op", [torch.cummax, torch.cummin])
def test_cummax_cummin_of_long_rows_in_three_launches(op, dtype, shape, monkeypatch, no_host_ops):
    # rows of at least prefix_kernels.LONG_ROW (scans.long_extreme_rows): values bit for bit and indices the CPU's,
    # with runs of ties (the last one wins), -0.0 next to 0.0 and NaNs (the last NaN wins)
    from triton_plate_backend.eager_ops import scans

    g = torch.Generator().manual_seed(1)
    x = torch.randn(shape, generator=g) * 3
    x[..., 100:2000] = torch.randint(-2, 3, (1900,), generator=g).float()
    x[..., 511:513] = -0.0
    x[..., 1024] = -0.0
    if dtype.is_floating_point:
        x[..., 3000:3100:7] = float("nan")
    x = x > 0 if dtype == torch.bool else x.to(dtype)
    taken, long_rows = [], scans.long_extreme_rows
    monkeypatch.setattr(scans, "long_extreme_rows", lambda *a: taken.append(a) or long_rows(*a))
    values, indices = op(x.to("plate"), -1)
    assert taken, "the long-row path was not taken"
    expected_values, expected_indices = op(x, -1)
    bits = {torch.float32: torch.int32, torch.float16: torch.int16}.get(dtype, dtype)
    assert torch.equal(values.cpu().view(bits), expected_values.view(bits))
    same(indices, expected_indices)


@pytest.mark.parametrize(
    "kw", [{}, {"rtol": 0, "atol": 0}, {"equal_nan": True}, {"atol": 1e-3}, {"rtol": 1e-9, "atol": 1e-9}]
)
def test_allclose_is_the_fused_isclose_then_all(kw, monkeypatch, no_host_ops):
    # scans.allclose: ops.isclose's one kernel, then all (one launch of any_all_block), not isclose's
    # decomposition (13 launches); the CPU's answer
    from triton_plate_backend import launcher

    g = torch.Generator().manual_seed(0)
    a = torch.randn(3000, generator=g)
    a[17] = float("nan")
    a[40] = float("inf")
    names = []
    call = launcher.PlateLauncher.__call__
    counted = lambda self, *r, **k: names.append(self.name) or call(self, *r, **k)  # noqa: E731
    monkeypatch.setattr(launcher.PlateLauncher, "__call__", counted)
    for other in (a, a + 1e-6, a.roll(1), a[:1]):
        x, y = a.to("plate"), other.to("plate")
        names.clear()
        assert torch.allclose(x, y, **kw) == torch.allclose(a, other, **kw)
        assert names[0] == "isclose" and len(names) <= 4, names
    assert torch.allclose(a[:5].long().to("plate"), a[:5].long().to("plate")) is True
