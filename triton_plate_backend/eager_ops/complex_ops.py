"""Complex tensors built from real ones: complex(real, imag) and polar(abs, angle), as plate kernels
writing the result's real view: its real parts and imaginary parts are two strided views, each written
by the elementwise kernels (copy; abs * cos(angle), abs * sin(angle))."""

from __future__ import annotations

import torch

from . import launch
from .launch import COMPLEX_PARTS, broadcast_strides
from .ops import Call, _overlaps, checked
from .table import Row


def _write(part: torch.Tensor, fn: str, operands: list[torch.Tensor]) -> bool:
    shape = part.shape
    strides = [broadcast_strides(t, shape) for t in (part, *operands)]
    if not launch.fits(shape, strides):
        return False
    ct = torch.float32 if part.dtype == torch.float16 else part.dtype
    launch.launch(
        "elementwise", shape, [part, *operands], strides,
        FN=launch.kernels().FUNCTIONS[fn], ARITY=len(operands), CT=launch.triton_dtype(ct),
    )  # fmt: skip
    return True


def build(op: torch._ops.OpOverload, row: Row):
    @checked(op)
    def kernel(call: Call, expected):
        first, second = (call["real"], call["imag"]) if row.fn == "complex" else (call["abs"], call["angle"])
        if expected.dtype not in COMPLEX_PARTS or call.target_name is not None:
            return call.on_host()
        out = torch.empty_strided(expected.shape, expected.stride(), dtype=expected.dtype, device=first.device)
        if out.numel() == 0:
            return out
        if _overlaps(out, [first, second]):
            return call.on_host()
        parts = torch.view_as_real(out)
        real, imag = parts[..., 0], parts[..., 1]
        if row.fn == "complex":
            done = _write(real, "copy", [first]) and _write(imag, "copy", [second])
        else:  # polar: abs * cos(angle), abs * sin(angle), in the parts' type as the CPU computes them
            cos, sin = torch.cos(second), torch.sin(second)
            done = _write(real, "mul", [first, cos]) and _write(imag, "mul", [first, sin])
        return out if done else call.on_host()

    return kernel


FAMILIES = {"complex_build": build}
