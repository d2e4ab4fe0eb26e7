"""Eager prod, nansum and cumprod as plate kernels (eager_ops/reductions.py sum_, scans.py cumsum): a product
reduction (tl.reduce of a multiply) and a product scan (tl.cumprod), fp16/bf16 combined in float32 and integers in
int64 as CUDA's kernels, against CPU torch (float64 for the floating types), with no host op."""

from __future__ import annotations

import pytest
import torch

import triton_plate_backend.torch_device  # noqa: F401 - registers the plate device
from triton_plate_backend.torch_device.host_op_counter import host_op_scope

HALF = (torch.float16, torch.bfloat16)
FLOATS = (torch.float32, torch.float64, *HALF)
INTS = (torch.bool, torch.uint8, torch.int8, torch.int32, torch.int64)
INF, NAN = float("inf"), float("nan")


def on_plate(fn, *inputs):
    """fn over plate copies of the inputs, its result back on the host; asserts that nothing ran there."""
    with host_op_scope() as ops:
        result = fn(*[x.to("plate") if isinstance(x, torch.Tensor) else x for x in inputs]).cpu()
    assert not ops, ops
    return result


def near_factors(shape, seed=0):
    """Factors around 1 (0.5 to 1.5, signs mixed): products of a few dozen stay far from overflow."""
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(shape, generator=g) + 0.5
    return torch.where(torch.rand(shape, generator=g) < 0.3, -x, x)


def check(got: torch.Tensor, want64: torch.Tensor, dtype: torch.dtype):
    """A floating result against the float64 one: a half result within one ulp of it (float32 accumulation,
    rounded once), float32 within float32's accumulated rounding, float64 within float64's."""
    assert got.dtype == dtype and got.shape == want64.shape
    if dtype in HALF:
        info = torch.finfo(dtype)
        e = want64.double()
        ulp = (info.eps * e.abs()).clamp_min(info.eps * info.smallest_normal)
        same = got.double() == e.float().to(dtype).double()
        assert bool((((got.double() - e).abs() <= ulp) | same | (got.isnan() & e.isnan())).all())
    else:
        rtol = 1e-5 if dtype == torch.float32 else 1e-12
        torch.testing.assert_close(got, want64.to(dtype), rtol=rtol, atol=0, equal_nan=True)


REDUCTIONS = {
    "prod": lambda t: t.prod(),
    "prod(1)": lambda t: t.prod(1),
    "prod(-1, keepdim)": lambda t: t.prod(-1, keepdim=True),
    "nansum": lambda t: t.nansum(),
    "nansum((0, 2))": lambda t: t.nansum((0, 2)),
    "nansum(1, keepdim)": lambda t: t.nansum(1, keepdim=True),
    "cumprod(2)": lambda t: t.cumprod(2),
    "cumprod(0)": lambda t: t.cumprod(0),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_floats_against_float64(name, dtype):
    x = near_factors((3, 5, 9))
    if name.startswith("nansum"):
        x[0, 1, 2] = x[2, 4, 8] = NAN
    x = x.to(dtype)
    fn = REDUCTIONS[name]
    check(on_plate(fn, x), fn(x.double()), dtype)


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_integers_exact_and_int64(name, dtype):
    g = torch.Generator().manual_seed(1)
    low = 0 if dtype in (torch.bool, torch.uint8) else -3
    x = torch.randint(low, 2 if dtype == torch.bool else 4, (3, 5, 9), generator=g).to(dtype)
    fn = REDUCTIONS[name]
    got, want = on_plate(fn, x), fn(x)
    assert got.dtype == want.dtype == torch.int64
    assert torch.equal(got, want)


def test_integer_products_wrap_as_int64():
    x = torch.tensor([3**20, 3**20, 7, -5], dtype=torch.int64)
    assert torch.equal(on_plate(lambda t: t.prod(), x), x.prod())
    assert torch.equal(on_plate(lambda t: t.cumprod(0), x), x.cumprod(0))
    small = torch.full((40,), 3, dtype=torch.int32)
    assert torch.equal(on_plate(lambda t: t.prod(dtype=torch.int32), small), small.prod(dtype=torch.int32))


def test_nan_infinity_and_zero_as_the_cpu():
    x = torch.tensor(
        [
            [0.0, INF, 2.0, 1.0],  # 0 * inf: NaN
            [INF, -2.0, 3.0, 1.0],  # -inf
            [NAN, 1.0, 0.0, 2.0],  # NaN stays
            [-0.0, 2.0, 3.0, 1.0],  # -0
        ]
    )
    for fn in (lambda t: t.prod(1), lambda t: t.cumprod(1)):
        got, want = on_plate(fn, x), fn(x)
        assert torch.equal(got.isnan(), want.isnan())
        assert torch.equal(got.nan_to_num(), want.nan_to_num())
        assert torch.equal(got.signbit(), want.signbit())
    # where an intermediate product overflows depends on the order (docs/differences.md): the CPU's float32 loop
    # overflows at x0 * x1, plate's tree pairs x0 with x2 first
    overflow = torch.tensor([1e30, 1e30, 1e-30, 1e-30])
    assert overflow.prod().item() == INF and on_plate(lambda t: t.prod(), overflow).item() == 1.0
    sums = torch.tensor([[NAN, NAN], [INF, NAN], [INF, -INF], [1.0, NAN]])
    got, want = on_plate(lambda t: t.nansum(1), sums), sums.nansum(1)
    assert torch.equal(got.isnan(), want.isnan()) and torch.equal(got.nan_to_num(), want.nan_to_num())
    assert got[0].item() == 0.0 and got[1].item() == INF and got[3].item() == 1.0


def test_half_products_accumulate_in_float32():
    """(1 + 2**-10)**64: an fp16 accumulator adds one ulp a step (1.0625); float32's, rounded once, 1.064453125."""
    x = torch.full((64,), 1 + 2**-10, dtype=torch.float16)
    assert on_plate(lambda t: t.prod(), x).item() == 1.064453125
    assert on_plate(lambda t: t.cumprod(0), x)[-1].item() == 1.064453125


def test_dtype_argument_casts_first_and_bool_results():
    x = near_factors((4, 6)) * 3
    check(on_plate(lambda t: t.prod(1, dtype=torch.float64), x.half()), x.half().double().prod(1), torch.float64)
    check(on_plate(lambda t: t.cumprod(1, dtype=torch.float16), x), x.half().double().cumprod(1), torch.float16)
    check(on_plate(lambda t: t.nansum(0, dtype=torch.float16), x), x.half().double().sum(0), torch.float16)
    i = torch.tensor([[1, 2, 0], [3, 1, 5]])
    for fn in (lambda t: t.prod(dtype=torch.bool), lambda t: t.prod(1, dtype=torch.bool)):
        got, want = on_plate(fn, i), fn(i)
        assert got.dtype == torch.bool and torch.equal(got, want)


def test_out_in_place_empty_and_zero_dim():
    x = near_factors((4, 5))
    out = torch.empty(0, device="plate")
    with host_op_scope() as ops:
        assert torch.prod(x.plate(), 1, out=out) is out
        total = torch.empty(0, device="plate")
        torch.ops.aten.prod.out(x.plate(), out=total)  # torch.prod has no out= without a dim
        nan_out = torch.empty(0, device="plate")
        torch.nansum(x.plate(), 0, out=nan_out)
        y = x.plate()
        y.cumprod_(0)
        scan_out = torch.empty(0, device="plate")
        torch.cumprod(x.plate(), 1, out=scan_out)
    assert not ops, ops
    check(out.cpu(), x.double().prod(1), torch.float32)
    check(total.cpu(), x.double().prod(), torch.float32)
    check(nan_out.cpu(), x.double().sum(0), torch.float32)
    check(y.cpu(), x.double().cumprod(0), torch.float32)
    check(scan_out.cpu(), x.double().cumprod(1), torch.float32)
    empty = torch.empty(0, 3)
    for fn in (lambda t: t.prod(0), lambda t: t.prod(), lambda t: t.nansum(0), lambda t: t.cumprod(0), torch.prod):
        got, want = on_plate(fn, empty), fn(empty)
        assert got.shape == want.shape and torch.equal(got, want)
    scalar = torch.tensor(NAN)
    for fn in (lambda t: t.prod(), lambda t: t.nansum(), lambda t: t.cumprod(0), lambda t: t.prod(0, keepdim=True)):
        got, want = on_plate(fn, scalar), fn(scalar)
        assert got.shape == want.shape and torch.equal(got.nan_to_num(7.0), want.nan_to_num(7.0))


def test_long_rows_and_non_contiguous_inputs():
    """Rows of at least reduction_kernels.SPLIT_FROM elements combine chunks' partial products (nansums) in
    float32, then those; a strided view reads its elements where they are."""
    g = torch.Generator().manual_seed(4)
    h = (1 + (torch.rand(2, 20001, generator=g) - 0.5) * 2**-6).to(torch.float16)
    check(on_plate(lambda t: t.prod(1), h), h.double().prod(1), torch.float16)
    n = torch.randn(2, 20001, generator=g)
    n[:, ::7] = NAN
    check(on_plate(lambda t: t.nansum(1), n), n.double().nansum(1), torch.float32)
    x = near_factors((6, 40), 2)
    check(on_plate(lambda t: t.t().prod(1), x), x.double().t().prod(1), torch.float32)
    check(on_plate(lambda t: t[:, ::3].cumprod(1), x), x.double()[:, ::3].cumprod(1), torch.float32)
    long = near_factors((1, 1500), 3).to(torch.float64)  # cumprod over blocks: the carry between them
    check(on_plate(lambda t: t.cumprod(1), long), long.cumprod(1), torch.float64)


@pytest.mark.parametrize(
    "fn",
    [lambda t: t.prod(), lambda t: t.prod(1).sum(), lambda t: t.cumprod(1).sum(), lambda t: t.nansum(0).pow(2).sum()],
    ids=["prod", "prod(1)", "cumprod", "nansum"],
)
def test_gradients_without_host_ops(fn):
    x = near_factors((3, 4))
    x[1, 2] = 0.0  # prod's backward treats a zero factor apart
    leaf = x.plate().requires_grad_()
    with host_op_scope() as ops:
        fn(leaf).backward()
        grad = leaf.grad.cpu()
    assert not ops, ops
    ref = x.clone().requires_grad_()
    fn(ref).backward()
    torch.testing.assert_close(grad, ref.grad, rtol=1e-5, atol=1e-6)
