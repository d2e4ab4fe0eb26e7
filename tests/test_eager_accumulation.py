"""Eager fp16/bf16 numerics like CUDA's (torch_device/accumulation.py): reductions, norms, softmax and
matmuls of half-precision plate tensors accumulate wide and round once, the same way on every host.

The reference of each check is the op computed in float64 on the host and rounded once to the result
dtype; the shapes are long enough that accumulating in the half type would visibly miss it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import triton_plate_backend.torch_device  # noqa: F401 - registers the plate device
from triton_plate_backend.torch_device import accumulation
from triton_plate_backend.torch_device.host_op_counter import host_op_scope

F = torch.nn.functional
HALF = [torch.float16, torch.bfloat16]


def wide(x):
    return x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x


def rounded_once(result, like):
    """A float64 result rounded once to `like`'s dtype (through float32: the same for fp16/bf16)."""
    return result.float().to(like.dtype) if like.dtype in HALF else result.to(like.dtype)


def check_rounded_once(fn, *inputs, on_device: bool = False):
    """fn on plate tensors == fn in float64 on the host, rounded once; and within one half ulp of fn in
    float32 (what CUDA's fp32 accumulation gives, up to its own rounding).

    on_device: the op is a plate kernel (eager_ops: sum, softmax, layer norm) accumulating in float32 as
    CUDA's kernels do, not in float64: a half result is then the float64 one rounded once or its
    neighbour (within one ulp of it), a float32 one (layer norm's statistics) within 2**-20 of it."""
    with host_op_scope() as ops:
        got = fn(*[x.to("plate") if isinstance(x, torch.Tensor) else x for x in inputs])
    if on_device:
        assert not ops, ops
    want = fn(*[wide(x) for x in inputs])
    fp32 = fn(*[x.float() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs])
    got, want, fp32 = (r if isinstance(r, tuple) else (r,) for r in (got, want, fp32))
    assert len(got) == len(want)
    for g, w, f in zip(got, want, fp32, strict=True):
        assert g.device.type == "plate"
        expected = rounded_once(w, g)
        if not on_device:
            torch.testing.assert_close(g.cpu(), expected, rtol=0, atol=0, equal_nan=True)
        elif g.dtype in HALF:
            assert within_one_ulp(g.cpu(), w)
        else:
            torch.testing.assert_close(g.cpu(), expected, rtol=2**-20, atol=2**-20, equal_nan=True)
        if g.dtype in HALF:  # within one ulp of the fp32 result, give or take the fp32 result's own error
            near, fr = g.cpu().double(), f.double()
            info = torch.finfo(g.dtype)
            ulp = (info.eps * torch.maximum(near.abs(), fr.abs())).clamp_min(info.eps * info.smallest_normal)
            own_error = (fr - w.double()).abs()
            assert bool(((near == fr) | ((near - fr).abs() <= ulp + own_error)).all())


def within_one_ulp(got: torch.Tensor, exact: torch.Tensor) -> bool:
    """Each element of a half result is the float64 `exact` rounded to the half type or a neighbour."""
    info = torch.finfo(got.dtype)
    e = exact.double()
    ulp = (info.eps * e.abs()).clamp_min(info.eps * info.smallest_normal)
    same = got.double() == rounded_once(e, got).double()  # an overflow to inf included
    return bool((((got.double() - e).abs() <= ulp) | same | (got.isnan() & e.isnan())).all())


def data(shape, dtype, seed=0, offset=0.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g) + offset).to(dtype)


# ---- the accumulation itself: a half accumulator would be far off --------------------------------------
@pytest.mark.parametrize("dtype", HALF)
def test_long_sum_accumulates_wide(dtype):
    ones = torch.ones(8192, dtype=dtype, device="plate")
    assert ones.sum().item() == 8192  # an fp16 accumulator stops at 2048, a bf16 one at 256
    assert ones.mean().item() == 1.0
    assert ones.cumsum(0)[-1].item() == 8192
    assert torch.linalg.vector_norm(ones).item() == pytest.approx(8192**0.5, rel=2**-8)
    assert (ones[:4096].reshape(1, -1) @ ones[:4096].reshape(-1, 1)).item() == 4096


REDUCTIONS = {
    "sum": lambda x: x.sum(),
    "sum_dim0": lambda x: x.sum(0),
    "sum_dim1_keepdim": lambda x: x.sum(1, keepdim=True),
    "sum_to_float32": lambda x: x.sum(1, dtype=torch.float32) if x.dtype != torch.float32 else x.sum(1),
    "mean": lambda x: x.mean(1),
    "nansum": lambda x: x.nansum(0),
    "var": lambda x: x.var(1),
    "std_unbiased0": lambda x: x.std(0, correction=0),
    "var_mean": lambda x: torch.var_mean(x, 1),
    "std_mean": lambda x: torch.std_mean(x, (0, 1)),
    "vector_norm": lambda x: torch.linalg.vector_norm(x, dim=1),
    "vector_norm_1": lambda x: torch.linalg.vector_norm(x, 1, dim=0),
    "vector_norm_3": lambda x: torch.linalg.vector_norm(x, 3.0, dim=1),
    "vector_norm_inf": lambda x: torch.linalg.vector_norm(x, float("inf"), dim=1),
    "norm": lambda x: x.norm(),
    "norm_dim_p3": lambda x: torch.ops.aten.norm.ScalarOpt_dim(x, 3, [1]),
    "cumsum": lambda x: x.cumsum(1),
    "prod": lambda x: x[:, :6].prod(1),
    "cumprod": lambda x: x[:, :6].cumprod(1),
    "softmax": lambda x: x.softmax(1),
    "log_softmax": lambda x: x.log_softmax(0),
    "softmax_to_float32": lambda x: F.softmax(x, 1, dtype=torch.float32),
}
# plate kernels (eager_ops/reductions.py, composite.vector_norm and variance, scans.cumsum and cumprod): float32
# accumulation, as CUDA's
ON_DEVICE = {
    "sum", "sum_dim0", "sum_dim1_keepdim", "sum_to_float32", "mean", "softmax", "log_softmax", "softmax_to_float32",
    "vector_norm", "vector_norm_1", "vector_norm_3", "vector_norm_inf", "norm", "norm_dim_p3", "cumsum", "var",
    "std_unbiased0", "var_mean", "std_mean", "nansum", "prod", "cumprod",
}  # fmt: skip


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions_round_once(name, dtype):
    if name == "sum_to_float32":  # fp32 is the result dtype: compare with float64 rounded to it
        x = data((48, 4096), dtype, offset=0.5)
        got = REDUCTIONS[name](x.to("plate")).cpu()
        assert got.dtype == torch.float32
        torch.testing.assert_close(got, x.double().sum(1).float(), rtol=2**-20, atol=0)
        return
    check_rounded_once(REDUCTIONS[name], data((48, 4096), dtype, offset=0.5), on_device=name in ON_DEVICE)


def test_half_sum_is_within_one_ulp_and_the_same_for_any_layout():
    """fp16 values are multiples of 2**-24 below 2**16: their float64 sum is exact; plate's float32
    accumulation (CUDA's) gives it rounded once or a neighbour, and the same bits whatever the input's
    layout (the kernel adds the elements of a row in a fixed order)."""
    x = data((64, 2048), torch.float16, seed=3) * 300
    exact = torch.tensor(x.numpy().astype(np.float64).sum(dtype=np.float64))  # exact: partial sums < 2**29
    got = x.to("plate").sum()
    assert within_one_ulp(got.cpu(), exact)
    assert got.item() == x.t().contiguous().to("plate").t().sum().item()
    assert got.item() == x.to("plate").sum().item()


# ---- norms, forward and backward -----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", HALF)
def test_layer_norm_forward_and_backward(dtype):
    x, w, b = data((64, 2048), dtype), data((2048,), dtype, 1), data((2048,), dtype, 2)
    check_rounded_once(lambda x, w, b: torch.ops.aten.native_layer_norm(x, [2048], w, b, 1e-5), x, w, b, on_device=True)
    out, mean, rstd = torch.ops.aten.native_layer_norm(wide(x), [2048], wide(w), wide(b), 1e-5)
    assert torch.ops.aten.native_layer_norm(x.plate(), [2048], w.plate(), b.plate(), 1e-5)[1].dtype == torch.float32
    dy = data((64, 2048), dtype, 4)
    check_rounded_once(
        lambda dy, x, m, r, w, b: torch.ops.aten.native_layer_norm_backward(
            dy, x, [2048], m, r, w, b, [True, True, True]
        ),
        dy,
        x,
        mean.float(),
        rstd.float(),
        w,
        b,
        on_device=True,
    )


def test_layer_norm_backward_weight_grad_like_tutorial_05():
    """Tutorial 05's check: dW and db of fp16 layer norm at 1151x8192 against an fp32 reference, 1e-2."""
    m, n = 1151, 8192
    x, w, b = data((m, n), torch.float16, 5), data((n,), torch.float16, 6), data((n,), torch.float16, 7)
    dy = 0.1 * data((m, n), torch.float16, 8)
    grads = []
    for device, dtype in (("plate", torch.float16), ("cpu", torch.float32)):
        params = [t.to(device, dtype).requires_grad_() for t in (w, b)]
        F.layer_norm(x.to(device, dtype), (n,), *params, 1e-5).backward(dy.to(device, dtype))
        grads.append([p.grad.cpu().float() for p in params])
    for got, want in zip(*grads, strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=1e-2)


@pytest.mark.parametrize("dtype", HALF)
def test_group_and_batch_norm_forward_and_backward(dtype):
    x, w, b = data((8, 32, 512), dtype), data((32,), dtype, 1), data((32,), dtype, 2)
    # group norm is a plate row (torch's decompositions over plate kernels, in float32 as CUDA's)
    check_rounded_once(
        lambda x, w, b: torch.ops.aten.native_group_norm(x, w, b, 8, 32, 512, 4, 1e-5), x, w, b, on_device=True
    )
    _, mean, rstd = torch.ops.aten.native_group_norm(wide(x), wide(w), wide(b), 8, 32, 512, 4, 1e-5)
    dy = data((8, 32, 512), dtype, 3)
    check_rounded_once(
        lambda dy, x, m, r, w: torch.ops.aten.native_group_norm_backward(
            dy, x, m, r, w, 8, 32, 512, 4, [True, True, True]
        ),
        dy,
        x,
        mean.to(dtype),
        rstd.to(dtype),
        w,
        on_device=True,
    )
    # batch norm is a plate kernel (eager_ops composite: torch's decomposition, float32 statistics as CUDA's)
    check_rounded_once(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), x, w, b, on_device=True)


@pytest.mark.parametrize("affine", [True, False])
def test_group_norm_module_and_autograd_run_no_host_op(affine):
    """nn.GroupNorm forward and backward on plate (float32: within float32 rounding of float64); an integer input
    raises the CPU kernel's error."""
    x = data((2, 6, 5, 3), torch.float32)
    norm = torch.nn.GroupNorm(3, 6, affine=affine)
    if affine:
        torch.nn.init.normal_(norm.weight, generator=torch.Generator().manual_seed(1))
    wide_norm = torch.nn.GroupNorm(3, 6, affine=affine).double()
    wide_norm.load_state_dict(norm.state_dict())
    norm = norm.plate()
    leaf = x.plate().requires_grad_()
    with host_op_scope() as ops:
        norm(leaf).pow(2).sum().backward()
    assert not ops, ops
    ref = x.double().requires_grad_()
    wide_norm(ref).pow(2).sum().backward()
    torch.testing.assert_close(norm(leaf).detach().cpu(), wide_norm(ref).detach().float(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(leaf.grad.cpu(), ref.grad.float(), rtol=1e-4, atol=1e-4)
    if affine:
        torch.testing.assert_close(norm.weight.grad.cpu(), wide_norm.weight.grad.float(), rtol=1e-4, atol=1e-4)
    with pytest.raises(NotImplementedError) as on_cpu:
        F.group_norm(torch.arange(12).view(2, 6), 3)
    with pytest.raises(NotImplementedError) as on_plate:
        F.group_norm(torch.arange(12).view(2, 6).plate(), 3)
    assert str(on_plate.value) == str(on_cpu.value)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_addbmm_forms_run_no_host_op(dtype):
    """addbmm, addbmm_ and addbmm.out with beta and alpha: float32 within float32 rounding of float64, int64 exact
    (the CPU's kernel; CUDA refuses integer matmuls); beta = 0 ignores self's NaNs as cuBLAS does."""
    c, b1, b2 = data((3, 4), torch.float32), data((5, 3, 6), torch.float32, 1), data((5, 6, 4), torch.float32, 2)
    if dtype == torch.int64:
        c, b1, b2 = ((t * 3).long() for t in (c, b1, b2))
    scale = {"beta": 2, "alpha": 3}
    with host_op_scope() as ops:
        got = torch.addbmm(c.plate(), b1.plate(), b2.plate(), **scale).cpu()
        in_place = c.plate().addbmm_(b1.plate(), b2.plate(), **scale).cpu()
        out = torch.empty(0, dtype=dtype, device="plate")
        torch.addbmm(c.plate(), b1.plate(), b2.plate(), out=out, **scale)
    assert not ops, ops
    want = torch.addbmm(*(wide(t) for t in (c, b1, b2)), **scale)
    if dtype == torch.int64:
        assert torch.equal(got, want)
    else:
        torch.testing.assert_close(got, want.float(), rtol=1e-5, atol=1e-5)
    assert torch.equal(in_place, got) and torch.equal(out.cpu(), got)
    if dtype == torch.float32:
        nan = torch.full((3, 4), float("nan"))
        assert not torch.addbmm(nan.plate(), b1.plate(), b2.plate(), beta=0).cpu().isnan().any()


BATCH_NORMS = {
    "_native_batch_norm_legit": lambda x, w, b, m, v: torch.ops.aten._native_batch_norm_legit(
        x, w, b, m, v, True, 0.1, 1e-5
    ),
    "_native_batch_norm_legit.no_stats": lambda x, w, b, m, v: torch.ops.aten._native_batch_norm_legit.no_stats(
        x, w, b, True, 0.1, 1e-5
    ),
    "_batch_norm_with_update": lambda x, w, b, m, v: torch.ops.aten._batch_norm_with_update(x, w, b, m, v, 0.1, 1e-5),
}


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("name", sorted(BATCH_NORMS))
def test_batch_norm_overloads_are_plate_rows(name, dtype):
    """The batch norm overloads torch.compile and export call (torch's decompositions over plate kernels): the
    result within one ulp of float64's, the statistics float32's; batch_norm_backward likewise."""
    x, w, b = data((4, 8, 64), dtype, offset=1.0), data((8,), dtype, 1), data((8,), dtype, 2)
    mean, var = data((8,), torch.float32, 3), data((8,), torch.float32, 4).abs() + 0.5
    check_rounded_once(BATCH_NORMS[name], x, w, b, mean, var, on_device=True)
    _, save_mean, save_invstd, _ = torch.ops.aten._batch_norm_with_update(
        wide(x), wide(w), wide(b), wide(mean), wide(var), 0.1, 1e-5
    )
    check_rounded_once(
        lambda dy, x, w, m, v, sm, si: torch.ops.aten.batch_norm_backward(
            dy, x, w, m, v, sm, si, True, 1e-5, [True, True, True], torch.empty(0, dtype=torch.uint8, device=x.device)
        ),
        data((4, 8, 64), dtype, 5), x, w, mean, var, save_mean.float(), save_invstd.float(),
        on_device=True,
    )  # fmt: skip


def test_batch_norm_updates_running_statistics_in_place():
    x = data((8, 32, 512), torch.float16, offset=2.0)
    mean, var = torch.zeros(32, device="plate"), torch.ones(32, device="plate")
    F.batch_norm(x.plate(), mean, var, training=True, momentum=0.5)
    # float32 statistics on the device (eager_ops composite), as CUDA's: within float32 rounding of the exact ones
    want = 0.5 * x.double().mean((0, 2))
    torch.testing.assert_close(mean.cpu(), want.float(), rtol=2**-20, atol=0)
    want_var = 0.5 + 0.5 * x.double().var((0, 2), correction=1)
    assert var.device.type == "plate" and bool((var.cpu() != 1).all())
    torch.testing.assert_close(var.cpu(), want_var.float(), rtol=2**-20, atol=0)


def test_softmax_backward_rounds_once():
    y, dy = data((32, 4096), torch.float16).softmax(1), data((32, 4096), torch.float16, 1)
    check_rounded_once(lambda g, y: torch.ops.aten._softmax_backward_data(g, y, 1, g.dtype), dy, y, on_device=True)
    check_rounded_once(
        lambda g, y: torch.ops.aten._log_softmax_backward_data(g, y, 0, g.dtype), dy, y.log(), on_device=True
    )


# ---- matmul family and its gradients ------------------------------------------------------------------
MATMULS = {
    "mm": (lambda a, b: a @ b, ((64, 4096), (4096, 48))),
    "mm_transposed": (lambda a, b: a @ b.t(), ((64, 4096), (48, 4096))),
    "bmm": (lambda a, b: a @ b, ((3, 16, 2048), (3, 2048, 8))),
    "linear": (lambda a, w, bias: F.linear(a, w, bias), ((32, 2048), (24, 2048), (24,))),
    "addmm": (lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=2.0), ((16, 8), (16, 2048), (2048, 8))),
    "baddbmm": (lambda c, a, b: torch.baddbmm(c, a, b), ((2, 4, 8), (2, 4, 2048), (2, 2048, 8))),
    "addbmm": (lambda c, a, b: torch.addbmm(c, a, b), ((4, 8), (3, 4, 1024), (3, 1024, 8))),
    "mv": (lambda a, v: a @ v, ((16, 4096), (4096,))),
    "dot": (lambda a, b: a.dot(b), ((8192,), (8192,))),
}


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("name", sorted(MATMULS))
def test_matmuls_round_once(name, dtype):
    """Plate kernels (eager_ops/matmul.py, exact definition in tests/test_eager_matmul.py; addbmm one addmm over the
    batch and K together, eager_ops/rewritten.py) accumulating in float32 as CUDA's."""
    fn, shapes = MATMULS[name]
    inputs = [data(s, dtype, seed=i, offset=0.25) for i, s in enumerate(shapes)]
    check_rounded_once(fn, *inputs, on_device=True)


@pytest.mark.parametrize("dtype", HALF)
def test_matmul_gradients_round_once(dtype):
    a, b, g = data((32, 2048), dtype), data((2048, 16), dtype, 1), data((32, 16), dtype, 2)
    pa, pb = a.plate().requires_grad_(), b.plate().requires_grad_()
    (pa @ pb).backward(g.plate())
    assert pa.grad.dtype == dtype
    assert within_one_ulp(pa.grad.cpu(), wide(g) @ wide(b).t())
    assert within_one_ulp(pb.grad.cpu(), wide(a).t() @ wide(g))


@pytest.mark.parametrize("dtype", [*HALF, torch.float32])
def test_matmul_bits_do_not_depend_on_layout_shape_or_threads(dtype):
    """What varies between hosts is how a BLAS blocks a matmul (ISA, sizes, layout, threads): plate's
    result (a plate kernel's fixed K steps, whatever its tile) is the same whatever the layout and rows."""
    a, b = data((96, 3000), dtype, 1), data((3000, 40), dtype, 2)
    full = (a.plate() @ b.plate()).cpu()
    assert torch.equal((a.plate() @ b.t().contiguous().plate().t()).cpu(), full)
    assert torch.equal((a[5:6].plate() @ b.plate()).cpu(), full[5:6])
    assert torch.equal((a[:, None].plate() @ b.plate()).cpu()[:, 0], full)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        assert torch.equal((a.plate() @ b.plate()).cpu(), full)
    finally:
        torch.set_num_threads(threads)


def test_matmul_infinities_and_nans_as_ieee_says():
    a = torch.ones(2, 4, dtype=torch.float16)
    a[0, 1] = float("inf")
    b = torch.ones(4, 3, dtype=torch.float16)
    b[1, 2] = 0.0
    got = (a.plate() @ b.plate()).cpu()
    assert torch.isinf(got[0, :2]).all() and torch.isnan(got[0, 2])
    assert torch.equal(got[1], torch.tensor([4.0, 4.0, 3.0]).half())


def test_softmax_backward_refuses_a_half_grad_of_a_float32_input_as_cuda_does():
    """Only the half-to-float backward (float32 grad, float16 input) mixes dtypes on CUDA; a float16 grad with
    input_dtype float32 is refused there. plate returned float32 (the meta kernel's dtype), Inductor float16."""
    y, dy = data((4, 64), torch.float16).softmax(1), data((4, 64), torch.float16, 1)
    for op in (torch.ops.aten._softmax_backward_data, torch.ops.aten._log_softmax_backward_data):
        with pytest.raises(RuntimeError, match="expected input and grad types to match"):
            op(dy.plate(), y.plate(), 1, torch.float32)
        assert op(dy.plate(), y.plate(), 1, torch.float16).dtype == torch.float16


@pytest.mark.parametrize("dtype", [*HALF, torch.float32, torch.float64])
def test_mean_is_a_plate_kernel_with_cudas_factor(dtype):
    """mean sums in the accumulator type and multiplies by outputs / inputs (CUDA's MeanOps): an empty
    reduction is NaN, a half input may ask for a float32 result, an integer input raises torch's error."""
    x = data((8, 3000), dtype, seed=5, offset=0.25)
    with host_op_scope() as ops:
        got = x.plate().mean(1)
        whole = x.plate().mean()
        empty = torch.empty(0, 7, dtype=dtype, device="plate").mean(0)
        keep = x.plate().mean((0, 1), keepdim=True)
        wider = x.plate().mean(1, dtype=torch.float32) if dtype in HALF else None
    assert not ops, ops
    exact = x.double().mean(1)
    if dtype in HALF:
        assert within_one_ulp(got.cpu(), exact) and within_one_ulp(whole.cpu(), x.double().mean())
        torch.testing.assert_close(wider.cpu(), exact.float(), rtol=2**-20, atol=2**-22)
    else:
        torch.testing.assert_close(got.cpu(), exact.to(dtype))
    assert keep.shape == (1, 1) and keep.item() == whole.item()
    assert empty.shape == (7,) and bool(empty.cpu().isnan().all())
    with pytest.raises(RuntimeError) as on_cpu:
        torch.arange(5).mean()
    with pytest.raises(RuntimeError) as on_plate:
        torch.arange(5, device="plate").mean()
    assert str(on_plate.value) == str(on_cpu.value)


# ---- what stays as it was ---------------------------------------------------------------------------------
def test_other_dtypes_keep_the_host_kernels():
    """float32 and float64 sums and softmax are plate kernels computing in their own type (reductions.py);
    an integer matmul wraps as the host's kernel does (eager_ops/matmul.py)."""
    x = data((16, 1000), torch.float32)
    torch.testing.assert_close(x.plate().sum(1).cpu(), x.sum(1))
    torch.testing.assert_close(x.double().plate().softmax(1).cpu(), x.double().softmax(1), rtol=1e-13, atol=1e-15)
    i = torch.arange(12).reshape(3, 4)
    assert torch.equal((i.plate() @ i.t().plate()).cpu(), i @ i.t())


def test_matmuls_of_a_float_and_an_integer_operand_raise_the_dtype_error():
    """As on CPU and CUDA (the wide matmul took the int64 operand for a float one and raised from frexp)."""
    a, i = torch.arange(6.0).view(2, 3), torch.arange(9).view(3, 3)
    for fn in (torch.mm, lambda x, y: torch.addmm(x[:, :1], x, y), lambda x, y: torch.nn.functional.linear(y, x)):
        with pytest.raises(RuntimeError, match="same dtype") as on_cpu:
            fn(a, i)
        with pytest.raises(RuntimeError) as on_plate:
            fn(a.plate(), i.plate())
        assert str(on_plate.value) == str(on_cpu.value)


def test_out_arguments_and_mixed_devices():
    a, b = data((4, 512), torch.float16), data((512, 3), torch.float16, 1)
    out = torch.empty(0, dtype=torch.float16, device="plate")
    assert torch.mm(a.plate(), b.plate(), out=out) is out
    assert within_one_ulp(out.cpu(), wide(a) @ wide(b))
    with pytest.raises(RuntimeError, match="same device"):
        torch.mm(a.plate(), b)


def test_one_table_of_ops():
    for name, rule in accumulation.ACCUMULATING.items():
        packet, _, overload = name.partition(".")
        op = getattr(getattr(torch.ops.aten, packet), overload or "default")
        assert torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "PrivateUse1"), name
        assert rule.kind in ("host", "fft")


def rounding_bound(exact: np.ndarray) -> np.ndarray:
    """What rounding a float64 value once to float32 may move it, per component (half an ulp, 2**-24
    relative), plus float64's own FFT error (a few ulps of float64 of the largest output)."""
    return 2.0**-24 * np.abs(exact) + 1e-12 * np.abs(exact).max()


FFTS = [
    ("fftn 16^3 of a real input", lambda x: torch.fft.fftn(x), (16, 16, 16), torch.float32),
    ("fft of complex rows", lambda x: torch.fft.fft(x), (8, 256), torch.complex64),
    ("ifft2 ortho", lambda x: torch.fft.ifft2(x, norm="ortho"), (3, 60, 24), torch.complex64),
    ("rfft", lambda x: torch.fft.rfft(x), (4, 1000), torch.float32),
    ("irfft", lambda x: torch.fft.irfft(x, n=512), (4, 257), torch.complex64),
]


@pytest.mark.parametrize("fn, shape, dtype", [f[1:] for f in FFTS], ids=[f[0] for f in FFTS])
def test_fp32_ffts_are_the_float64_fft_rounded_once(fn, shape, dtype):
    """Eager FFTs of float32/complex64 plate tensors: numpy's float64 FFT rounded once (per component within
    half an ulp of it). The host's fp32 FFT misses that by O(log n) ulps of the largest output; the compiled
    _fft_c2c is float64 DFT products rounded once (inductor_plate/extern_decomps.py), so the two agree."""
    torch.manual_seed(0)
    x = torch.randn(shape, dtype=dtype)
    with host_op_scope() as ops:
        got = fn(x.to("plate")).cpu()
    assert ops  # computed on the host, as before: only the precision changed
    want = fn(x.to(torch.complex128 if dtype.is_complex else torch.float64))
    assert got.dtype == fn(x).dtype and got.shape == want.shape
    g, w = got.numpy(), want.numpy()
    for part in (np.real, np.imag) if got.is_complex() else (np.asarray,):
        assert np.all(np.abs(part(g) - part(w)) <= rounding_bound(part(w)))
    if shape == (16, 16, 16):  # the bound can fail: the host's fp32 FFT misses it
        host = fn(x).numpy()
        assert not np.all(np.abs(host.real - w.real) <= rounding_bound(w.real))
