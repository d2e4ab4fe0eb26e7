"""frexp on plate tensors: x = mantissa * 2 ** exponent, mantissa in [0.5, 1) (its sign x's), exponent int32, as
std::frexp (the CPU kernel): 0, inf and NaN are their own mantissa with exponent 0. Read off the float's bits over
plate's integer kernels: a subnormal is scaled by 2 ** (mantissa bits + 1) first (exact), its exponent lowered by
as much. float16 / bfloat16 compute in float32 (exact both ways), as the CPU's kernel does; exact results."""

from __future__ import annotations

import torch

from .ops import Call, checked
from .table import Row

# float type -> (its bits' integer type, mantissa bits, exponent mask, the biased exponent of [0.5, 1))
LAYOUT = {torch.float32: (torch.int32, 23, 0xFF, 126), torch.float64: (torch.int64, 52, 0x7FF, 1022)}
HALVES = (torch.float16, torch.bfloat16)


def frexp(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    if x.dtype in HALVES:
        mantissa, exponent = frexp(x.float())
        return mantissa.to(x.dtype), exponent
    bits_type, width, mask, half = LAYOUT[x.dtype]
    field = (x.view(bits_type) >> width) & mask
    subnormal = (field == 0) & (x != 0)
    scaled = torch.where(subnormal, x * 2.0 ** (width + 1), x)
    bits = scaled.view(bits_type)
    exponent = ((bits >> width) & mask) - half - torch.where(subnormal, width + 1, 0)
    mantissa = ((bits & ~(mask << width)) | (half << width)).view(x.dtype)
    special = (x == 0) | ~torch.isfinite(x)
    return torch.where(special, x, mantissa), torch.where(special, 0, exponent).to(torch.int32)


def frexp_op(op: torch._ops.OpOverload, row: Row):
    @checked(op)
    def kernel(call: Call, expected):
        x = call["self"]
        if x.dtype not in (*LAYOUT, *HALVES):
            return call.on_host()  # the CPU's error (an integer tensor)
        mantissa, exponent = frexp(x)
        outs = []
        for value, e in zip((mantissa, exponent), expected):
            out = torch.empty_strided(e.shape, e.stride(), dtype=e.dtype, device=x.device)
            outs.append(out.copy_(value))
        return tuple(outs)

    return kernel


FAMILIES = {"frexp": frexp_op}
