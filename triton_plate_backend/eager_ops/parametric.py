"""The ``parametric`` family: an elementwise op of up to three tensors and up to four numbers of the call (an
activation's slope or bounds, nan_to_num's replacements, addcmul's value), one kernel (parametric_kernels.py).
The numbers are rounded to the op math type the kernel computes in (float32 for fp16/bf16), as ATen converts its
Scalar arguments (an integer tensor's truncated toward zero; one its type cannot hold goes to the host, which raises
ATen's error); a None takes the op's default (``DEFAULTS``); a bool is 0 or 1.

Types, layouts and the host's cases are the ``elementwise`` family's (ops.py): torch's promotion from the meta
kernel, Row.floating / Row.boolean for the types the CPU kernel refuses (on the host, its error), an output
overlapping an input or a layout past the kernels' dims on the host, counted."""

from __future__ import annotations

from collections.abc import Callable

import torch

from . import launch
from .ops import (
    Call,
    _operand,
    _overlaps_target,
    _plate_device,
    _result,
    checked,
    real_operands,
    result_and_strides,
    takes_dtypes,
)
from .table import Row


def _nan_to_num_defaults(dtype: torch.dtype) -> tuple:
    info = torch.finfo(dtype) if dtype.is_floating_point else None
    return (0.0, info.max if info else 0, info.min if info else 0)


# row.fn -> the numbers a None parameter stands for, given the result's dtype
DEFAULTS: dict[str, Callable[[torch.dtype], tuple]] = {
    "nan_to_num": _nan_to_num_defaults,
    "logit": lambda dtype: (-1.0,),  # no clamp
    "logit_backward": lambda dtype: (-1.0,),
}
# row.fn -> fixed numbers the element function reads (ATen's constants, rounded in the op math type)
CONSTANTS: dict[str, tuple] = {"hardsigmoid_backward": (1.0 / 6.0,)}


def parametric(op: torch._ops.OpOverload, row: Row) -> Callable:
    @checked(op)
    def kernel(call: Call, expected):
        device = _plate_device(call, row.operands)
        values = [call[name] for name in row.operands]
        if device is None or _overlaps_target(call, values):
            return call.on_host()
        if expected.dtype.is_complex and row.fn in COMPLEX_FORMS:
            return _complex_form(call, row, expected, device, values)
        if not takes_dtypes(row, expected):
            return call.on_host()
        if expected.dtype.is_complex or any(isinstance(v, torch.Tensor) and v.dtype.is_complex for v in values):
            return call.on_host()
        numbers = [call[name] for name in row.params]
        if any(v is None for v in numbers):
            defaults = DEFAULTS[row.fn](expected.dtype)
            numbers = [d if v is None else v for v, d in zip(numbers, defaults)]
        numbers = [*CONSTANTS.get(row.fn, ()), *numbers]
        if any(isinstance(v, complex) for v in numbers):
            return call.on_host()
        typed = real_operands(call, row, expected, values, device)
        if typed is None:
            return call.on_host()
        ct, operands = typed
        if not ct.is_floating_point and not all(_converts(v, ct) for v in numbers):
            return call.on_host()  # ATen's Scalar conversion raises: the host, its error text
        laid_out = result_and_strides(call, expected, device, operands)
        if laid_out is None:
            return call.on_host()
        out, strides = laid_out
        run(row.fn, out, operands, strides, numbers, ct)
        return out

    return kernel


# row.fn -> a complex call's decomposition into plate's complex ops, (self, tensor1, tensor2, value) in the result's
# type: ATen's complex kernels' order, self + value * tensor1 (*|/) tensor2 (complex products commute bit for bit)
COMPLEX_FORMS: dict[str, Callable] = {
    "addcmul": lambda x, y, z, value: x + (y * value) * z,
    "addcdiv": lambda x, y, z, value: x + (y * value) / z,
}


def _complex_form(call: Call, row: Row, expected: torch.Tensor, device, values) -> torch.Tensor:
    """A complex result (a complex operand, or real ones promoted with one: float32 self, float64 and complex128
    tensors) by COMPLEX_FORMS over the operands in the result's type."""
    ct = expected.dtype
    operands = [_operand(v, ct, device).to(ct) for v in values]
    value = call[row.params[0]]
    value = complex(value) if ct == torch.complex128 else torch.tensor(complex(value), dtype=ct).item()
    result = COMPLEX_FORMS[row.fn](*operands, value)
    if call.target_name is None and result.stride() == expected.stride():
        return result
    out = _result(call, expected, device)
    return out.copy_(result)


def _converts(number, dtype: torch.dtype) -> bool:
    """Whether ATen converts `number` to the integer `dtype` (c10's checked_convert, whose overflows() raises
    otherwise): a float within the type's range (truncated toward zero, as run() does: 0.5 is 0 for addcmul's value
    and threshold's bounds, as on the CPU), an int within it (an unsigned type also takes -max..-1, wrapping)."""
    if isinstance(number, bool):
        return True
    info = torch.iinfo(dtype)
    if isinstance(number, int):
        return number <= info.max and number >= (info.min if info.min < 0 else -info.max)
    return info.min <= number <= info.max  # NaN: False


def run(fn: str, out: torch.Tensor, operands: list[torch.Tensor], strides, numbers, ct: torch.dtype) -> None:
    """parametric_kernels.<fn> over out's shape (`strides`: out's and each operand's over it), in `ct`."""
    from . import parametric_kernels as k  # Triton on the first launch, not at registration

    params = torch.tensor([float(v) if ct.is_floating_point else int(v) for v in numbers] + [0] * 4, dtype=ct)
    shape, strides = launch.pointwise_order(list(out.shape), strides)
    launch.launch_kernel(
        k.parametric, shape, [out, *operands], strides, params[: k.PARAMS].to(out.device), wide=True,
        FN=k.FUNCTIONS[fn], ARITY=len(operands), CT=launch.triton_dtype(ct),
    )  # fmt: skip


FAMILIES: dict[str, Callable[[torch._ops.OpOverload, Row], Callable]] = {"parametric": parametric}
