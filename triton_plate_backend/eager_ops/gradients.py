"""Backward ops as the vector-Jacobian product of their forward's decomposition over plate kernels.

- ``vjp``: an ``*_backward`` op whose forward (Row.fn, an aten overload torch decomposes) has a Python
  decomposition: torch.func.vjp of that decomposition at the call's inputs, applied to the incoming gradient
  (functorch's transform layers run autograd inside the kernel, below plate's Autograd key). fp16/bf16 operands
  compute in float32 and round once. ``output_mask``'s False entries are None (undefined) where the CPU
  kernel leaves them so (VJP_SIGNATURES). Floating operands only; others go to the host, which raises torch's error.

  grid_sampler_2d_backward: (grad_output, input, grid, interpolation_mode, padding_mode, align_corners,
  output_mask) -> (grad_input, grad_grid), the gradient of torch's grid_sampler_2d decomposition (the one plate
  runs the forward with: the ``decomposed`` row of table.py)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch._decomp import decomposition_table

from .eager_lock import lock_released
from .ops import HALF, Call, checked
from .table import Row

# backward op -> (its differentiable operands, the forward's further arguments, by schema name; the gradients
# output_mask may leave undefined: the CPU kernel computes grid_sampler's grad_grid whatever the mask says)
VJP_SIGNATURES = {
    "grid_sampler_2d_backward": (("input", "grid"), ("interpolation_mode", "padding_mode", "align_corners"), (0,)),
}


def _forward(name: str) -> Callable:
    packet, _, overload = name.partition(".")
    return decomposition_table[getattr(getattr(torch.ops.aten, packet), overload)]


def vjp(op: torch._ops.OpOverload, row: Row) -> Callable:
    forward = _forward(row.fn)
    operands, further, maskable = VJP_SIGNATURES[op._schema.name.removeprefix("aten::")]

    @checked(op)
    def kernel(call: Call, expected):
        grad, inputs = call["grad_output"], [call[name] for name in operands]
        tensors = (grad, *inputs)
        if any(t.device.type != "plate" or not t.dtype.is_floating_point for t in tensors):
            return call.on_host()
        ct = torch.float32 if any(t.dtype in HALF for t in tensors) else None
        inputs = [t.to(ct) if ct else t for t in inputs]
        arguments = [call[name] for name in further]
        _, pullback = torch.func.vjp(lambda *xs: forward(*xs, *arguments), *inputs)
        with lock_released():  # the pullback's backward may run on autograd's device thread
            grads = pullback(grad.to(ct) if ct else grad)
        mask = call.bound.get("output_mask") or [True] * len(grads)
        return tuple(
            None if i in maskable and not mask[i] else torch.empty_like(e, device=g.device).copy_(g)
            for i, (g, e) in enumerate(zip(grads, expected))
        )

    return kernel


FAMILIES = {"vjp": vjp}
