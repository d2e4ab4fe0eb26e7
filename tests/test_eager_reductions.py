"""Eager sum, softmax, log_softmax (forward and backward), layer norm (forward and backward), isposinf,
isneginf and the logical ops as plate kernels (eager_ops/reductions.py, layer_norm.py, kernels.py): the
CPU's results (float32 within float32 rounding, fp16/bf16 within one ulp of the float64 result: float32
accumulation as CUDA's, rounded once), edge values, empty and non-contiguous inputs, and no host op."""

from __future__ import annotations

import pytest
import torch

import triton_plate_backend.torch_device  # noqa: F401 - registers the plate device
from triton_plate_backend.torch_device.host_op_counter import host_op_scope

F = torch.nn.functional
HALF = (torch.float16, torch.bfloat16)


def on_plate(fn, *inputs):
    """fn over plate copies of the inputs, its results back on the host; asserts that nothing ran there."""
    with host_op_scope() as ops:
        result = fn(*[x.to("plate") if isinstance(x, torch.Tensor) else x for x in inputs])
        result = (
            tuple(r.cpu() if r is not None else None for r in result) if isinstance(result, tuple) else result.cpu()
        )
    assert not ops, ops
    return result


def within_one_ulp(got: torch.Tensor, exact: torch.Tensor) -> bool:
    """Each element of a half result is the float64 `exact` rounded to the half type or a neighbour."""
    info = torch.finfo(got.dtype)
    e = exact.double()
    ulp = (info.eps * e.abs()).clamp_min(info.eps * info.smallest_normal)
    same = got.double() == e.float().to(got.dtype).double()
    return bool((((got.double() - e).abs() <= ulp) | same | (got.isnan() & e.isnan())).all())


def check(got: torch.Tensor, want64: torch.Tensor, dtype: torch.dtype):
    """got (of `dtype`) against the float64 result: within one ulp for half types, else CPU-close."""
    assert got.dtype == dtype
    if dtype in HALF:
        assert within_one_ulp(got, want64)
    else:
        torch.testing.assert_close(got, want64.to(dtype), equal_nan=True)


def data(shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g).to(dtype)


# ---- sum -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, *HALF])
@pytest.mark.parametrize(
    "dim, keepdim", [(None, False), (0, False), (1, True), ((0, 2), False), (-1, False), ((), True)]
)
def test_sum_floats(dtype, dim, keepdim):
    x = data((5, 7, 33), dtype)
    fn = (lambda t: t.sum()) if dim is None else (lambda t: t.sum(dim, keepdim=keepdim))
    got = on_plate(fn, x)
    want = fn(x.double())
    assert got.shape == want.shape
    check(got, want, dtype)


@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int8, torch.int32, torch.int64])
def test_sum_integers_exact(dtype):
    x = torch.randint(0, 2 if dtype == torch.bool else 100, (4, 9, 130)).to(dtype)
    for fn in (lambda t: t.sum(), lambda t: t.sum(1), lambda t: t.sum((0, 2), keepdim=True)):
        got, want = on_plate(fn, x), fn(x)
        assert got.dtype == want.dtype == torch.int64
        assert torch.equal(got, want)


def test_sum_integer_wraps_as_int64():
    x = torch.full((3,), 2**62, dtype=torch.int64)
    assert torch.equal(on_plate(lambda t: t.sum(), x), x.sum())


def test_sum_dtype_argument_casts_the_input_first_and_out():
    x = data((6, 300)) * 1000
    got = on_plate(lambda t: t.sum(1, dtype=torch.float16), x)
    check(got, x.half().double().sum(1), torch.float16)
    got = on_plate(lambda t: t.sum(1, dtype=torch.float64), x.half())
    torch.testing.assert_close(got, x.half().double().sum(1))
    out = torch.empty(0, device="plate")
    res = torch.sum(data((4, 5)).plate(), 0, out=out)
    assert res is out and out.shape == (5,)
    torch.testing.assert_close(out.cpu(), data((4, 5)).sum(0))


def test_sum_edge_values_and_empty():
    x = torch.tensor([[1.0, float("inf"), 2.0], [float("nan"), 1.0, 0.0], [float("inf"), float("-inf"), 1.0]])
    assert torch.equal(on_plate(lambda t: t.sum(1), x).isnan(), torch.tensor([False, True, True]))
    assert on_plate(lambda t: t.sum(1), x)[0].item() == float("inf")
    empty = torch.empty(0, 4)
    assert torch.equal(on_plate(lambda t: t.sum(0), empty), torch.zeros(4))
    assert on_plate(lambda t: t.sum(1), empty).shape == (0,)
    assert on_plate(lambda t: t.sum(), torch.tensor(3.5)).item() == 3.5
    assert on_plate(lambda t: t.sum(), torch.ones(70000, dtype=torch.float16)).item() == float("inf")  # > 65504


def test_sum_non_contiguous_and_the_same_bits_for_any_layout():
    x = data((40, 3000), torch.float16, 1)
    col = on_plate(lambda t: t.t().sum(1), x)  # a transposed view: the rows are x's columns
    check(col, x.double().sum(0), torch.float16)
    strided = on_plate(lambda t: t[:, ::3].sum(1), x)
    check(strided, x[:, ::3].double().sum(1), torch.float16)
    assert torch.equal(on_plate(lambda t: t.sum(1), x), on_plate(lambda t: t.t().contiguous().t().sum(1), x))


def test_half_sum_accumulates_in_float32():
    ones = torch.ones(5000, dtype=torch.bfloat16)
    assert on_plate(lambda t: t.sum(), ones).item() == 4992  # 5000 rounded once to bf16 (a bf16 sum stops at 256)


def test_long_rows_sum_in_chunks():
    """Few rows of at least reduction_kernels.SPLIT_FROM elements: partial sums of chunks (in float32 for
    half types), then their sum rounded once: the same results within the tolerances above."""
    h = data((3, 20001), torch.float16, 4)
    check(on_plate(lambda t: t.sum(1), h), h.double().sum(1), torch.float16)
    check(on_plate(lambda t: t.sum(), h), h.double().sum(), torch.float16)
    flags = torch.rand(50000, generator=torch.Generator().manual_seed(5)) > 0.5
    assert on_plate(lambda t: t.sum(), flags).item() == flags.sum().item()
    ints = torch.arange(40000, dtype=torch.int32)
    assert on_plate(lambda t: t.sum(), ints).item() == ints.sum().item()
    ones = torch.ones(2, 70000, dtype=torch.bfloat16)
    assert torch.equal(on_plate(lambda t: t.sum(1), ones), ones.double().sum(1).to(torch.bfloat16))


# ---- softmax and log_softmax ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.float32, *HALF])
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_forward_and_backward(dtype, log, dim):
    x, g = data((6, 700), dtype, 2) * 3, data((6, 700), dtype, 3)
    forward = torch.ops.aten._log_softmax if log else torch.ops.aten._softmax
    backward = torch.ops.aten._log_softmax_backward_data if log else torch.ops.aten._softmax_backward_data
    y = on_plate(lambda t: forward(t, dim, False), x)
    check(y, forward(x.double(), dim, False), dtype)
    y64 = forward(x.double(), dim, False)
    got = on_plate(lambda a, b: backward(a, b, dim, dtype), g, y)
    check(got, backward(g.double(), y.double(), dim, torch.float64), dtype)
    assert y64.shape == got.shape


def test_softmax_half_to_float_and_its_backward():
    x, g = data((3, 100), torch.float16), data((3, 100), torch.float32, 1)
    y = on_plate(lambda t: torch.ops.aten._softmax(t, 1, True), x)
    assert y.dtype == torch.float32
    torch.testing.assert_close(y, x.double().softmax(1).float())
    got = on_plate(lambda a, b: torch.ops.aten._softmax_backward_data(a, b, 1, torch.float16), g, y)
    assert got.dtype == torch.float16
    want = torch.ops.aten._softmax_backward_data(g.double(), y.double(), 1, torch.float64)
    assert within_one_ulp(got, want)


def test_softmax_edge_values_empty_and_non_contiguous():
    inf, nan = float("inf"), float("nan")
    x = torch.tensor([[0.0, -inf, 1.0], [-inf, -inf, -inf], [inf, 0.0, 1.0], [nan, 0.0, 1.0], [1e30, 1e30, 0.0]])
    for fn in (lambda t: t.softmax(1), lambda t: t.log_softmax(1)):
        torch.testing.assert_close(on_plate(fn, x), fn(x), equal_nan=True)
    assert on_plate(lambda t: t.softmax(0), torch.empty(0, 3)).shape == (0, 3)
    assert on_plate(lambda t: t.softmax(1), torch.empty(2, 0)).shape == (2, 0)
    torch.testing.assert_close(on_plate(lambda t: t.softmax(0), torch.tensor(2.0)), torch.tensor(1.0))
    y = data((8, 50, 4))
    torch.testing.assert_close(on_plate(lambda t: t.transpose(0, 2).softmax(1), y), y.transpose(0, 2).softmax(1))


def test_softmax_through_autograd():
    x = data((4, 33), torch.bfloat16).requires_grad_()
    p = x.detach().plate().requires_grad_()
    with host_op_scope() as ops:
        F.softmax(p, -1).pow(2).sum().backward()
    assert set(ops) <= {"aten.pow"}, ops  # pow's backward: pow.Tensor_Scalar and mul are plate kernels
    F.softmax(x.double(), -1).pow(2).sum().backward()
    assert p.grad.dtype == torch.bfloat16


# ---- layer norm ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.float32, *HALF])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_forward_and_backward(dtype, affine):
    x, dy = data((3, 5, 300), dtype), data((3, 5, 300), dtype, 1)
    w, b = (data((300,), dtype, 2), data((300,), dtype, 3)) if affine else (None, None)
    out, mean, rstd = on_plate(lambda *t: torch.ops.aten.native_layer_norm(*t, 1e-5), x, [300], w, b)
    want = torch.ops.aten.native_layer_norm(
        x.double(), [300], None if w is None else w.double(), None if b is None else b.double(), 1e-5
    )
    check(out, want[0], dtype)
    stats = torch.float32 if dtype in HALF else dtype
    assert mean.shape == (3, 5, 1) and mean.dtype == rstd.dtype == stats
    torch.testing.assert_close(mean, want[1].to(stats))
    torch.testing.assert_close(rstd, want[2].to(stats))
    mask = [True, affine, affine]
    grads = on_plate(lambda *t: torch.ops.aten.native_layer_norm_backward(*t, mask), dy, x, [300], mean, rstd, w, b)
    wanted = torch.ops.aten.native_layer_norm_backward(
        dy.double(), x.double(), [300], mean.double(), rstd.double(),
        None if w is None else w.double(), None if b is None else b.double(), mask,
    )  # fmt: skip
    for got, exact in zip(grads, wanted, strict=True):
        if exact is None:
            assert got is None
        else:
            check(got, exact, dtype)


def test_layer_norm_module_autograd_non_contiguous_and_empty():
    ln = torch.nn.LayerNorm((4, 16))
    x = data((16, 4, 3)).permute(2, 1, 0)  # (3, 4, 16), not contiguous
    p_ln = torch.nn.LayerNorm((4, 16)).plate()
    p_x = x.detach().plate().requires_grad_()
    xr = x.clone().requires_grad_()
    with host_op_scope() as ops:
        p_ln(p_x).sum().backward()
    ln(xr).sum().backward()
    assert not ops, ops
    torch.testing.assert_close(p_x.grad.cpu(), xr.grad, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(p_ln.weight.grad.cpu(), ln.weight.grad, atol=1e-5, rtol=1e-5)
    empty = on_plate(lambda t: F.layer_norm(t, (8,)), torch.empty(0, 8))
    assert empty.shape == (0, 8)
    inf = on_plate(lambda t: F.layer_norm(t, (3,)), torch.tensor([[1.0, float("inf"), 2.0], [1.0, 2.0, 3.0]]))
    assert inf[0].isnan().all() and not inf[1].isnan().any()


# ---- isposinf, isneginf, logical ops ------------------------------------------------------------------
def test_infinity_tests_and_logical_ops():
    x = torch.tensor([0.0, 1.0, float("inf"), float("-inf"), float("nan"), -0.0])
    y = torch.tensor([1.0, 0.0, 0.0, 2.0, 0.0, 0.0])
    i = torch.tensor([0, 3, -1, 0, 7, 0], dtype=torch.int32)
    cases = [
        (torch.isposinf, (x,)),
        (torch.isneginf, (x,)),
        (torch.isposinf, (i,)),
        (torch.logical_and, (x, y)),
        (torch.logical_or, (x, i)),
        (torch.logical_xor, (x, y)),
        (torch.logical_xor, (i > 0, x)),
        (torch.logical_not, (x,)),
        (torch.logical_or, (x.half()[::2], y.bfloat16()[1::2])),
    ]
    for fn, args in cases:
        assert torch.equal(on_plate(fn, *args), fn(*args)), fn
    out = torch.empty(6, device="plate")
    torch.logical_or(x.plate(), y.plate(), out=out)
    assert torch.equal(out.cpu(), torch.logical_or(x, y).float())
    b = (x > 0).plate()
    b.logical_xor_((y > 0).plate())
    assert torch.equal(b.cpu(), torch.logical_xor(x > 0, y > 0))


def test_bool_extremes_run_over_the_bytes():
    x = torch.rand(3, 4, generator=torch.Generator().manual_seed(0)) > 0.5
    x[0], x[1] = False, True
    for fn in (
        lambda t: t.amax(1),
        lambda t: t.amin((0, 1)),
        lambda t: t.amax(0, keepdim=True),
        torch.max,
        torch.min,
        lambda t: t[0, 0].max(),
        lambda t: tuple(torch.max(t, 1)),
        lambda t: tuple(torch.min(t, 0, keepdim=True)),
    ):
        got, want = on_plate(fn, x), fn(x)
        for g, w in zip(got if isinstance(want, tuple) else [got], want if isinstance(want, tuple) else [want]):
            assert g.dtype == w.dtype and torch.equal(g, w)
    torch.plate.reset_host_ops()
    with pytest.raises(RuntimeError, match="does not support bool"):  # argmax refuses bool: the host's error
        torch.argmax(x.to("plate"))
    assert torch.plate.host_ops() == {"aten.argmax": 1}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool])
@pytest.mark.parametrize("case", ["random", "signed zeros", "a nan"])
@pytest.mark.parametrize("shape", [(512 * 16 * 20 + 3,), (3, 512 * 16 * 3 + 77)])
def test_max_and_amin_of_few_long_rows_by_lanes(shape, case, dtype, monkeypatch, no_host_ops):
    # rows of at least reduction_kernels.SPLIT_FROM (reductions.long_row_extremes: chunks' lanes in parallel, then
    # the lanes' chunks): the bits of the one-program row_extreme, zeros' signs included, and the CPU's values
    from triton_plate_backend.eager_ops import reduction_kernels as k
    from triton_plate_backend.eager_ops import reductions

    x = torch.randn(shape, generator=torch.Generator().manual_seed(4)) * 3
    if case == "signed zeros":
        x = -x.abs()
        x[..., ::97] = -0.0
        x[..., 5::1003] = 0.0
    if case == "a nan":
        x[..., 7777] = float("nan")
    x = x > 0 if dtype == torch.bool else x.to(dtype)
    taken, long_rows = [], reductions.long_row_extremes
    monkeypatch.setattr(reductions, "long_row_extremes", lambda *a: taken.append(a) or long_rows(*a))
    for maximum, got in ((True, x.to("plate").amax(-1)), (False, x.to("plate").amin(-1))):
        rows = (x.view(torch.uint8) if dtype == torch.bool else x).reshape(-1, shape[-1]).to("plate")
        walked = torch.empty(rows.shape[0], dtype=rows.dtype, device="plate")
        k.row_extreme[(rows.shape[0],)](
            walked, rows, rows.shape[0], shape[-1], MAX=maximum, IS_FLOAT=dtype.is_floating_point,
            COLUMNS=k.BLOCK, machine=k.machine_of(rows),
        )  # fmt: skip
        bits = got.cpu().reshape(-1).view(torch.uint8)
        assert torch.equal(bits, walked.cpu().view(torch.uint8))
        expected = x.amax(-1) if maximum else x.amin(-1)
        assert torch.equal(got.cpu(), expected) or (dtype.is_floating_point and bool(expected.isnan().all()))
    assert len(taken) == 2
