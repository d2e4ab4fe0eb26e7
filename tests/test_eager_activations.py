"""Activations with scalar parameters on plate (eager_ops/activations.py): elu, hardtanh, hardsigmoid, hardshrink,
softshrink, hardswish, leaky_relu, softplus, mish and their gradients, and count_nonzero, run as plate kernels (no
host op). Inputs include each function's break points, where the gradient's side is ATen's, and NaN/inf. Checked
against float64 on the host: fp32 within a few ulp, fp16 within one rounding of it."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

FUNCTIONS = {
    "elu": lambda x: F.elu(x, alpha=0.7),
    "celu": lambda x: F.celu(x, alpha=1.3),
    "selu": F.selu,
    "hardtanh": lambda x: F.hardtanh(x, -1.0, 2.0),
    "relu6": F.relu6,
    "hardsigmoid": F.hardsigmoid,
    "hardshrink": lambda x: F.hardshrink(x, 0.5),
    "softshrink": lambda x: F.softshrink(x, 0.5),
    "hardswish": F.hardswish,
    "leaky_relu": lambda x: F.leaky_relu(x, 0.03),
    "softplus": lambda x: F.softplus(x, beta=2.0, threshold=5.0),
    "mish": F.mish,
}
BREAKS = [-3.0, -2.5, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 2.5, 3.0, 6.0, 20.0, -20.0]


def values(dtype):
    gen = torch.Generator().manual_seed(0)
    x = torch.cat([torch.randn(200, generator=gen) * 4, torch.tensor(BREAKS)])
    return x.to(dtype)


def forward_and_grad(name, x, grad, device, dtype):
    a = x.to(device, dtype).requires_grad_()
    y = FUNCTIONS[name](a)
    y.backward(grad.to(device, dtype))
    return y.detach().cpu().double(), a.grad.cpu().double()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_activation_and_gradient_run_on_plate(name, dtype, no_host_ops):
    x = values(dtype)
    grad = values(dtype).flip(0)
    got = forward_and_grad(name, x, grad, "plate", dtype)
    want = forward_and_grad(name, x, grad, "cpu", torch.float64)
    torch.plate.reset_host_ops()  # the host reference is not the test's subject
    tol = dict(rtol=4e-6, atol=1e-6) if dtype == torch.float32 else dict(rtol=2**-10, atol=1e-4)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, **tol)


@pytest.mark.parametrize("name", ["elu", "hardtanh", "hardshrink", "softplus", "mish", "leaky_relu"])
def test_activation_of_nan_and_inf(name, no_host_ops):
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), 1.0])
    got = FUNCTIONS[name](x.to("plate")).cpu()
    torch.testing.assert_close(got, FUNCTIONS[name](x), equal_nan=True)


def test_count_nonzero(no_host_ops):
    x = torch.tensor([[0.0, 1.0, -0.0, float("nan")], [2.0, 0.0, 0.0, 3.0]])
    assert torch.count_nonzero(x.to("plate")).item() == 4
    assert torch.count_nonzero(x.to("plate"), dim=1).cpu().tolist() == [2, 2]
    assert torch.count_nonzero(x.to("plate"), dim=(0, 1)).item() == 4


@pytest.mark.parametrize("fn", [F.silu, lambda x: torch.ops.aten.silu_backward(x, x)], ids=["silu", "silu_backward"])
def test_silu_of_an_integer_tensor_raises_the_cpu_error(fn):
    """The CPU kernel refuses integer tensors; plate's row sends them to the host (it compiled an integer sigmoid)."""
    x = torch.arange(3)
    with pytest.raises(NotImplementedError) as on_cpu:
        fn(x)
    with pytest.raises(NotImplementedError) as on_plate:
        fn(x.to("plate"))
    assert str(on_plate.value) == str(on_cpu.value)


INTEGER_NUMBERS = {
    "addcmul(value=0.5)": lambda t: torch.addcmul(t, t, t, value=0.5),
    "addcmul(value=-1.7)": lambda t: torch.addcmul(t, t.flip(0), t, value=-1.7),
    "addcmul_(value=2.9)": lambda t: t.clone().addcmul_(t, t, value=2.9),
    "threshold(0.1, 2.0)": lambda t: F.threshold(t, 0.1, 2.0),
    "threshold(-2.5, -7.9)": lambda t: F.threshold(t, -2.5, -7.9),
    "hardtanh(-2.5, 3.5)": lambda t: F.hardtanh(t, -2.5, 3.5),
}


@pytest.mark.parametrize("dtype", ["int64", "int32", "int8"])
@pytest.mark.parametrize("name", sorted(INTEGER_NUMBERS))
def test_fractional_numbers_of_an_integer_tensor_truncate_as_aten(name, dtype, no_host_ops):
    """ATen converts a Scalar to an integer tensor's type truncating toward zero (0.5 is 0, -1.7 is -1)."""
    x = torch.tensor([-7, -3, -2, -1, 0, 1, 2, 3, 5, 11], dtype=getattr(torch, dtype))
    fn = INTEGER_NUMBERS[name]
    got, want = fn(x.to("plate")).cpu(), fn(x)
    assert got.dtype == want.dtype and torch.equal(got, want)


def test_a_number_an_integer_type_cannot_hold_raises_atens_error():
    x = torch.tensor([1, 2, 3], dtype=torch.int8)
    with pytest.raises(RuntimeError) as on_cpu:
        F.threshold(x, 2.9, 300.7)
    with pytest.raises(RuntimeError) as on_plate:
        F.threshold(x.to("plate"), 2.9, 300.7)
    assert str(on_plate.value) == str(on_cpu.value)
