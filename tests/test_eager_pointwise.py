"""plate's eager kernels for the binary math and bit ops of kernels.py (atan2, hypot, logaddexp/logaddexp2,
copysign, fmax/fmin, heaviside, frac, signbit, round, the shifts) and the ``parametric`` family (activations and
their gradients, nan_to_num, logit, addcmul/addcdiv): each against the CPU's result on edge values (NaN, +-inf,
+-0, the activations' break points), with no host op; a dtype the CPU kernel refuses raises its error from the
host, counted.

Tolerances: fp32/fp64 within a few ulp (the transcendental functions are plate's libdevice, not the host's libm),
fp16/bf16 within one rounding of the type (computed in fp32, rounded once, as ATen's op math)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from eager_cases import case_params, plate_and_cpu

from triton_plate_backend import eager_ops
from triton_plate_backend.eager_ops import parametric_kernels, table

eager_ops.register()

NAN, INF = float("nan"), float("inf")
TOL = {
    torch.float32: {"rtol": 4e-6, "atol": 1e-6},
    torch.float64: {"rtol": 1e-13, "atol": 1e-14},
    torch.float16: {"rtol": 1e-3, "atol": 1e-3},
    torch.bfloat16: {"rtol": 8e-3, "atol": 8e-3},
}


def values(dtype: torch.dtype, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(4, 8, generator=g) > 0.5
    if dtype.is_floating_point:
        x = torch.randn(4, 8, generator=g, dtype=torch.float64) * 3
        x.view(-1)[:12] = torch.tensor([NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 3.0, -3.0, 0.5, 20.0, -0.7])
        return x.to(dtype)
    return torch.randint(-9, 10, (4, 8), generator=g).to(dtype)


def same(plate_result: torch.Tensor, cpu_result: torch.Tensor, signed_zeros: bool = True):
    assert plate_result.device.type == "plate"
    result = plate_result.cpu()
    assert (result.dtype, result.shape, result.stride()) == (cpu_result.dtype, cpu_result.shape, cpu_result.stride())
    if not result.dtype.is_floating_point:
        assert torch.equal(result, cpu_result)
        return
    assert torch.equal(result.isnan(), cpu_result.isnan())
    torch.testing.assert_close(result, cpu_result, equal_nan=True, **TOL[result.dtype])
    if signed_zeros:
        zeros = cpu_result == 0
        assert torch.equal(result[zeros].signbit(), cpu_result[zeros].signbit())


def other(x: torch.Tensor) -> torch.Tensor:
    return values(x.dtype, 1).to(x.device)


FLOATS = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
ALL = (*FLOATS, torch.int64, torch.int32, torch.uint8, torch.bool)
CASES = {
    "atan2": (lambda x: torch.atan2(x, other(x)), ALL),
    "atan2 in place": (lambda x: x.clone().atan2_(other(x)), (torch.float32,)),
    "hypot": (lambda x: torch.hypot(x, other(x)), ALL),
    "logaddexp": (lambda x: torch.logaddexp(x, other(x)), ALL),
    "logaddexp2": (lambda x: torch.logaddexp2(x, other(x)), ALL),
    "copysign": (lambda x: torch.copysign(x, other(x)), ALL),
    "copysign scalar": (lambda x: torch.copysign(x, -0.0), ALL),
    "fmax": (lambda x: torch.fmax(x, other(x)), ALL),
    "fmin": (lambda x: torch.fmin(x, other(x)[:1]), ALL),
    "heaviside": (lambda x: torch.heaviside(x, other(x)), ALL),
    "frac": (torch.frac, ALL),
    "signbit": (torch.signbit, ALL),
    "round": (torch.round, ALL),
    "left shift": (lambda x: x << (other(x) % 70), ALL[:-1]),  # a bool tensor's `<<`: on the host, counted
    "right shift": (lambda x: torch.bitwise_right_shift(x, other(x) % 70), ALL),
    "right shift scalar": (lambda x: x >> -1, ALL[:-1]),
    # a number's self (Scalar_Tensor): the bit masks of 1 << t; `~` and `|` of a number and a tensor
    "left shift of a number": (lambda x: 1 << (other(x) % 70).to(x.dtype), ALL[:-1]),
    "right shift of a number": (lambda x: torch.bitwise_right_shift(-1000, x), ALL),
    "and, or, xor of a number": (lambda x: torch.bitwise_and(6, x) + torch.bitwise_or(5, x) - (9 ^ x), ALL[4:]),
    "angle": (torch.angle, ALL),
    "gcd": (lambda x: torch.gcd(x, other(x)), ALL),
    "lcm": (lambda x: torch.lcm(x, other(x) * 7), ALL),
    "lcm wide": (lambda x: torch.lcm(x * 1000003, other(x) * 999983), (torch.int64, torch.int32)),
    "elu": (F.elu, ALL),
    "selu": (F.selu, (torch.float32, torch.float16)),
    "celu": (lambda x: F.celu(x, 1.3), (torch.float32,)),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), ALL),
    "hardtanh": (F.hardtanh, ALL),
    "relu6": (F.relu6, (torch.float32, torch.int64)),
    "softplus": (lambda x: F.softplus(x, 2, 5), ALL),
    "hardsigmoid": (F.hardsigmoid, ALL),
    "hardswish": (F.hardswish, ALL),
    "mish": (F.mish, ALL),
    "hardshrink": (F.hardshrink, ALL),
    "softshrink": (lambda x: F.softshrink(x, 0.7), ALL),
    "threshold": (lambda x: F.threshold(x, 1, -2), ALL),
    "nan_to_num": (torch.nan_to_num, ALL),
    "nan_to_num values": (lambda x: torch.nan_to_num(x, 1.5, 100, -100), FLOATS),
    "nan_to_num in place": (lambda x: x.clone().nan_to_num_(posinf=7.0), (torch.float32,)),
    "logit": (torch.logit, ALL),
    "logit eps": (lambda x: torch.logit(x, 0.1), (torch.float32, torch.bfloat16)),
    "addcmul": (lambda x: torch.addcmul(x, other(x), x.flip(1), value=2), ALL),
    "addcdiv": (lambda x: torch.addcdiv(x, other(x), x.flip(1), value=0.5), ALL),
    "addcmul out": (lambda x: torch.addcmul(x, x, x, value=0.5, out=torch.empty_like(x)), (torch.float32,)),
}
# results that are a rounding of an exact 0: the sign of that zero is libdevice's rounding, not a semantic
UNSIGNED_ZEROS = {"logaddexp2"}


@pytest.mark.parametrize("name, dtype", case_params(CASES), ids=str)
def test_pointwise_op_matches_the_cpu(name, dtype):
    fn, _ = CASES[name]
    results = plate_and_cpu(fn, values(dtype))  # None: the CPU refuses the dtype, so does plate (on the host)
    if results is not None:
        result, expected = results
        same(result, expected, signed_zeros=name not in UNSIGNED_ZEROS)


def test_a_fractional_bound_of_an_integer_tensor_truncates_on_plate():
    """ATen converts the bound to the tensor's type toward zero (0.5 is 0): a plate kernel, not the host."""
    x = values(torch.int64)
    torch.plate.reset_host_ops()
    same(F.threshold(x.to("plate"), 0.5, -2), F.threshold(x, 0.5, -2))
    assert torch.plate.host_ops() == {}


GRADIENTS = {
    "elu": F.elu,
    "elu in place": lambda x: F.elu(x * 1, 0.8, inplace=True),  # elu_backward from the result
    "selu": F.selu,
    "leaky_relu": lambda x: F.leaky_relu(x, 0.1),
    "hardtanh": lambda x: F.hardtanh(x, -2.0, 2.5),
    "softplus": lambda x: F.softplus(x, 1.5, 4),
    "hardsigmoid": F.hardsigmoid,
    "hardswish": F.hardswish,
    "mish": F.mish,
    "hardshrink": F.hardshrink,
    "softshrink": F.softshrink,
    "logit": lambda x: torch.logit(torch.sigmoid(x), 0.2),
    "atan2": lambda x: torch.atan2(x, x.detach().flip(0)),
    "hypot": lambda x: torch.hypot(x, x.detach().flip(0)),
    "logaddexp": lambda x: torch.logaddexp(x, x.detach().flip(0)),
    "addcdiv": lambda x: torch.addcdiv(x, x, x.detach().flip(0).abs() + 1, value=0.3),
}


@pytest.mark.parametrize("name", GRADIENTS)
def test_gradients_match_the_cpu(name, no_host_ops):
    x = torch.tensor([[-4.0, -3.0, -2.5, -1.0, -0.5, -0.2, 0.0, 0.3], [0.5, 1.0, 2.0, 2.5, 3.0, 3.5, 5.0, -0.0]])
    grads = []
    for device in ("cpu", "plate"):
        leaf = x.clone().to(device).requires_grad_()
        (GRADIENTS[name](leaf) * torch.arange(16.0, device=device).view(2, 8)).sum().backward()
        grads.append(leaf.grad)
    same(grads[1], grads[0], signed_zeros=False)


def test_every_parametric_row_names_a_function_of_the_kernel():
    rows = {name: row for name, row in table.overloads().items() if row.family == "parametric"}
    assert len(rows) >= 40
    for name, row in rows.items():
        assert row.fn in parametric_kernels.FUNCTIONS, name
        packet, _, overload = name.partition(".")
        schema = getattr(getattr(torch.ops.aten, packet), overload)._schema
        arguments = {a.name for a in schema.arguments}
        assert set(row.operands) | set(row.params) <= arguments, name
