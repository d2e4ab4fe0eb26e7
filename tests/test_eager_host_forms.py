"""Forms of common ops that used to run on the host for plate tensors (PyTorch's OpInfo test_compare_cpu listed them
as passed with host fallbacks): rsub (Tensor and Scalar, alpha), remainder of a number by a tensor (__rmod__),
addcmul/addcdiv with a complex result, gather/index_select/scatter/scatter_reduce/index_reduce of a 0-dim tensor and
gather by an empty index, nll_loss2d (cross entropy over a segmentation map), native_dropout_backward, pools of an empty
batch, nonzero_static, segment_reduce, each against the CPU's result with no host op."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from triton_plate_backend import eager_ops

eager_ops.register()


def _values(*shape, dtype=torch.float32, seed=0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if dtype.is_complex:
        return torch.randn(*shape, generator=g, dtype=dtype)
    if dtype.is_floating_point:
        return (torch.randn(*shape, generator=g, dtype=torch.float64) * 4).to(dtype)
    return torch.randint(-9, 10, shape, generator=g).to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.complex64], ids=str)
def test_rsub_of_tensors_and_a_number_is_the_cpus(dtype, no_host_ops):
    a, b = _values(3, 1, 4, dtype=dtype), _values(5, 4, dtype=dtype, seed=1)
    pa, pb = a.to("plate"), b.to("plate")
    cases = [
        (torch.rsub(pa, pb), torch.rsub(a, b)),  # b - a, broadcast
        (torch.rsub(pa, 3), torch.rsub(a, 3)),  # rsub.Scalar: 3 - a
        (3 - pa[:, :, ::2], 3 - a[:, :, ::2]),  # __rsub__ of a strided view
        (torch.rsub(pa, pb, alpha=2), torch.rsub(a, b, alpha=2)),
    ]
    for got, expected in cases:
        assert got.device.type == "plate" and got.dtype == expected.dtype
        torch.testing.assert_close(got.cpu(), expected, rtol=0, atol=0)  # exact: one rounding, as the CPU's
    out = torch.empty(3, 5, 4, dtype=dtype, device="plate")
    torch.ops.aten.rsub.Tensor_out(pa, pb, out=out)  # no Python binding takes out=
    torch.testing.assert_close(out.cpu(), torch.rsub(a, b), rtol=0, atol=0)


def test_rsub_with_a_float_alpha_is_the_cpus_within_an_ulp(no_host_ops):
    # the CPU fuses other + (-alpha) * self into one fma where it vectorizes (as add and sub with alpha: within an ulp)
    a, b = _values(7, 9), _values(7, 9, seed=1)
    got = torch.rsub(a.to("plate"), b.to("plate"), alpha=-3.125)
    torch.testing.assert_close(got.cpu(), torch.rsub(a, b, alpha=-3.125))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32], ids=str)
def test_a_numbers_remainder_by_a_tensor_is_the_cpus(dtype, no_host_ops):
    divisor = _values(4, 6, dtype=dtype, seed=2)
    divisor[divisor == 0] = 3
    number = -5.07 if dtype.is_floating_point else -7
    got = number % divisor.to("plate")  # __rmod__: remainder.Scalar_Tensor
    expected = number % divisor
    assert got.dtype == expected.dtype
    torch.testing.assert_close(got.cpu(), expected, rtol=0, atol=0)
    out = torch.empty_like(divisor, device="plate")
    torch.ops.aten.remainder.Scalar_Tensor_out(number, divisor.to("plate"), out=out)
    torch.testing.assert_close(out.cpu(), expected, rtol=0, atol=0)


def test_an_integer_numbers_remainder_by_zero_raises_the_cpus_error_from_the_host():
    torch.plate.reset_host_ops()
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        torch.remainder(5, torch.tensor([1, 0], device="plate"))
    assert torch.plate.host_ops() == {"aten.remainder": 1}
    torch.plate.reset_host_ops()


@pytest.mark.parametrize("fn", [torch.addcmul, torch.addcdiv], ids=lambda f: f.__name__)
@pytest.mark.parametrize("value", [1, -3.14, True, 0.5 - 2j])
def test_addcmul_addcdiv_with_a_complex_result_are_the_cpus(fn, value, no_host_ops):
    # OpInfo's promotion sample: float32 self, float64 tensor1, complex128 tensor2 (broadcast)
    x, y, z = _values(5, 5), _values(5, 5, dtype=torch.float64, seed=1), _values(1, 5, dtype=torch.complex128, seed=2)
    if isinstance(value, complex):
        x = x.to(torch.complex64)
    got = fn(x.to("plate"), y.to("plate"), z.to("plate"), value=value)
    expected = fn(x, y, z, value=value)
    assert got.dtype == expected.dtype == torch.complex128
    # exact where the CPU's vector code computes as its scalar code: not a complex division (scaled) nor a product
    # of two complex values (fused)
    exact = fn is torch.addcmul and not isinstance(value, complex)
    tol = {"rtol": 0, "atol": 0} if exact else {}
    torch.testing.assert_close(got.cpu(), expected, **tol)


def test_addcmul_in_place_on_a_complex_tensor_is_the_cpus(no_host_ops):
    x, y, z = (_values(4, 3, dtype=torch.complex64, seed=seed) for seed in range(3))
    got = x.to("plate")
    got.addcmul_(y.to("plate"), z.to("plate")[:1], value=2j)  # as Adam-like optimizers on complex parameters
    got.addcdiv_(y.to("plate"), z.to("plate"), value=0.5)
    expected = x.clone().addcmul_(y, z[:1], value=2j).addcdiv_(y, z, value=0.5)
    torch.testing.assert_close(got.cpu(), expected)


def _scalar_forms(x):
    """The 0-dim forms of the index ops (OpInfo's samples): index 0-dim or of one element, a 0-dim or number source."""
    i0, i1 = torch.tensor(0, device=x.device), torch.tensor([0], device=x.device)
    src = torch.tensor(-2.5, device=x.device)
    forms = {
        "gather": torch.gather(x, 0, i0),
        "gather by one": torch.gather(x, 0, i1),
        "index_select": torch.index_select(x, 0, i1),
        "scatter": torch.scatter(x, 0, i0, src),
        "scatter value": torch.scatter(x, -1, i0, 2.5),
        "scatter multiply": torch.scatter(x, 0, i0, src, reduce="multiply"),
        "scatter_add": torch.scatter_add(x, 0, i0, src),
        "scatter_ in place": x.clone().scatter_(0, i0, src, reduce="add"),
    }
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            forms[f"scatter_reduce {reduce} {include_self}"] = torch.scatter_reduce(
                x, 0, i0, src, reduce, include_self=include_self
            )
    for reduce in ("prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            forms[f"index_reduce {reduce} {include_self}"] = torch.index_reduce(
                x, 0, i1, src, reduce, include_self=include_self
            )
    forms["index_reduce_ in place"] = x.clone().index_reduce_(0, i1, src, "amax")
    return forms


def test_index_ops_of_a_0_dim_tensor_are_the_cpus(no_host_ops):
    x = torch.tensor(1.75)
    expected = _scalar_forms(x)
    got = _scalar_forms(x.to("plate"))
    for name, result in got.items():
        assert result.device.type == "plate", name
        torch.testing.assert_close(result.cpu(), expected[name], rtol=0, atol=0, msg=name)


def test_gather_out_of_a_0_dim_tensor_writes_out(no_host_ops):
    out = torch.empty(0, device="plate")
    torch.gather(torch.tensor(4.0, device="plate"), 0, torch.tensor(0, device="plate"), out=out)
    assert out.shape == () and out.item() == 4.0


@pytest.mark.parametrize("index_shape", [(0,), (2, 0)])
def test_gather_by_an_empty_index_of_any_integer_type_is_empty(index_shape, no_host_ops):
    x = torch.randn(5, device="plate")
    index = torch.empty(index_shape, dtype=torch.uint8)
    got = torch.gather(x, 0, index.to("plate"))
    expected = torch.gather(x.cpu(), 0, index)
    assert got.shape == expected.shape and got.dtype == expected.dtype


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_cross_entropy_over_a_map_and_its_gradient_are_the_cpus(reduction, weighted, no_host_ops):
    # (N, C, H, W) scores and (N, H, W) targets: nll_loss2d_forward / nll_loss2d_backward, an ignored class
    g = torch.Generator().manual_seed(3)
    x, target = torch.randn(2, 3, 2, 4, generator=g), torch.randint(0, 3, (2, 2, 4), generator=g)
    weight = torch.rand(3, generator=g) + 0.5 if weighted else None
    results = []
    for device in ("cpu", "plate"):
        xs = x.to(device, copy=True).requires_grad_()
        w = None if weight is None else weight.to(device)
        loss = F.cross_entropy(xs, target.to(device), weight=w, reduction=reduction, ignore_index=1)
        loss.backward(torch.linspace(0.5, 2.0, loss.numel(), device=device).reshape(loss.shape))
        results.append((loss.detach().cpu(), xs.grad.cpu()))
    for got, expected in zip(results[1], results[0], strict=True):
        assert got.shape == expected.shape
        torch.testing.assert_close(got, expected)  # the CPU sums a map's losses in a cascade: within an ulp or two


@pytest.mark.parametrize("shape", [(), (5,), (3, 4, 5)])
def test_native_dropout_backward_is_the_cpus(shape, no_host_ops):
    g = torch.Generator().manual_seed(4)
    grad, mask = torch.randn(shape, generator=g), torch.rand(shape, generator=g) > 0.4
    for scale in (0.0, 1.0, 1 / 0.6):
        got = torch.ops.aten.native_dropout_backward(grad.to("plate"), mask.to("plate"), scale)
        torch.testing.assert_close(got.cpu(), torch.ops.aten.native_dropout_backward(grad, mask, scale), rtol=0, atol=0)


EMPTY_BATCH_POOLS = {
    "avg_pool1d": (lambda x: F.avg_pool1d(x, 6, stride=3, padding=2), (0, 3, 9)),
    "adaptive_avg_pool1d": (lambda x: F.adaptive_avg_pool1d(x, 5), (0, 8, 8)),
    "adaptive_avg_pool3d": (lambda x: F.adaptive_avg_pool3d(x, (5, 7, 4)), (0, 8, 8, 8, 8)),
    "avg_pool3d": (lambda x: F.avg_pool3d(x, (2, 3, 1), stride=(2, 1, 2)), (0, 1, 4, 5, 4)),
    "max_pool2d with indices": (lambda x: F.max_pool2d(x, 2, return_indices=True)[1], (0, 3, 4, 4)),
}


@pytest.mark.parametrize("name", sorted(EMPTY_BATCH_POOLS))
def test_a_pool_of_an_empty_batch_is_empty_on_plate(name, no_host_ops):
    fn, shape = EMPTY_BATCH_POOLS[name]
    got, expected = fn(torch.empty(shape, device="plate")), fn(torch.empty(shape))
    assert got.device.type == "plate" and got.shape == expected.shape and got.dtype == expected.dtype


def test_a_pool_of_no_channels_raises_the_cpus_error_from_the_host():
    torch.plate.reset_host_ops()
    with pytest.raises(RuntimeError, match="Expected 3D or 4D"):
        F.avg_pool2d(torch.empty(2, 0, 4, 4, device="plate"), 2)
    assert torch.plate.host_ops() == {"aten.avg_pool2d": 1}
    torch.plate.reset_host_ops()


@pytest.mark.parametrize("shape", [(3, 4), (5, 0, 5), ()], ids=str)
@pytest.mark.parametrize("size", [0, 2, 9])
def test_nonzero_static_is_the_cpus(shape, size, no_host_ops):
    x = torch.randint(0, 2, shape, generator=torch.Generator().manual_seed(5)).float()
    got = torch.nonzero_static(x.to("plate"), size=size, fill_value=-7)
    torch.testing.assert_close(got.cpu(), torch.nonzero_static(x, size=size, fill_value=-7), rtol=0, atol=0)


SEGMENT_DATA = torch.randn(9, 3, generator=torch.Generator().manual_seed(6))
SEGMENT_DATA[4, 1] = float("nan")  # max and min propagate it, as the CPU's loop


@pytest.mark.parametrize("reduce", ["sum", "mean", "prod", "max", "min"])
@pytest.mark.parametrize("initial", [None, 2.0], ids=["no initial", "initial"])
def test_segment_reduce_is_the_cpus(reduce, initial, no_host_ops):
    data, lengths = SEGMENT_DATA, torch.tensor([1, 2, 0, 6])
    forms = {  # name -> keyword arguments on the CPU (the plate call takes them on plate)
        "lengths": {"lengths": lengths},
        "offsets": {"offsets": torch.tensor([0, 1, 3, 3, 9])},
        "unsafe lengths": {"lengths": torch.tensor([1, 2, 0, 4]), "unsafe": True},  # the last 2 rows in no segment
        "unsafe offsets": {"offsets": torch.tensor([2, 3, 5, 5, 8]), "unsafe": True},
        "2-d lengths, axis 1": {"lengths": torch.tensor([[2, 1], [0, 3]] * 4 + [[3, 0]]), "axis": 1},
    }
    for name, kwargs in forms.items():
        expected = torch.segment_reduce(data, reduce, initial=initial, **kwargs)
        on_plate = {k: v.to("plate") if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
        got = torch.segment_reduce(data.to("plate"), reduce, initial=initial, **on_plate)
        # a segment's sum in another order of additions: within an ulp or two
        torch.testing.assert_close(got.cpu(), expected, equal_nan=True, msg=name)


def test_segments_that_do_not_cover_the_data_raise_the_cpus_error_from_the_host():
    torch.plate.reset_host_ops()
    with pytest.raises(RuntimeError, match="sum to"):
        torch.segment_reduce(torch.randn(5, device="plate"), "sum", lengths=torch.tensor([1, 2], device="plate"))
    assert torch.plate.host_ops() == {"aten.segment_reduce": 1}
    torch.plate.reset_host_ops()
