"""Backward ops as the vector-Jacobian product of their forward's decomposition over plate kernels.

- ``vjp``: an ``*_backward`` op whose forward (Row.fn, an aten overload torch decomposes) has a Python
  decomposition: torch.func.vjp of that decomposition at the call's inputs, applied to the incoming gradient
  (functorch's transform layers run autograd inside the kernel, below plate's Autograd key). fp16/bf16 operands
  compute in float32 and round once. ``output_mask``'s False entries are None (undefined) where the CPU
  kernel leaves them so (VJP_SIGNATURES). Floating operands only; others go to the host, which raises torch's error.

  grid_sampler_2d_backward: (grad_output, input, grid, interpolation_mode, padding_mode, align_corners,
  output_mask) -> (grad_input, grad_grid), the gradient of torch's grid_sampler_2d decomposition (the one plate
  runs the forward with: the ``decomposed`` row of table.py). (grid_sampler_3d_backward: its own kernel,
  grid_sampler_3d.py.)

  upsample_{nearest,linear,trilinear}*_backward and _upsample_nearest_exact*d_backward: (grad_output,
  output_size, input_size, [align_corners,] scales...) -> grad_input. The forward is linear in its input, which
  the backward does not get: its vjp at zeros of input_size (the ``sized`` primal) is the gradient.

  multilabel_margin_loss_backward: (grad_output, self, target, reduction, is_target) -> grad_input, the gradient of
  multilabel_margin.py's forward (the loss, its first output; not torch's decomposition: FORWARDS) w.r.t. self."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import torch
from torch._decomp import decomposition_table

from . import multilabel_margin
from .eager_lock import lock_released
from .ops import HALF, Call
from .table import Row


@dataclasses.dataclass(frozen=True)
class Signature:
    """How a backward op's arguments (by schema name) make its forward's call."""

    operands: tuple[str, ...]  # the differentiable operands, the forward's first arguments
    further: tuple[str, ...]  # the forward's further arguments
    maskable: tuple[int, ...] = ()  # the gradients output_mask may leave undefined (None)
    sized: str | None = None  # an int[] argument: the one operand is zeros of that size (a forward linear in it)
    output: int | None = None  # the forward's output the gradient is of, where it returns several
    like: str | None = None  # no meta kernel: the one gradient is laid out as this operand (empty_like)


_SCALES = {1: ("scales",), 2: ("scales_h", "scales_w"), 3: ("scales_d", "scales_h", "scales_w")}
UPSAMPLE_BACKWARDS = {
    **{f"upsample_nearest{d}d_backward": (False, d) for d in (1, 3)},
    **{f"_upsample_nearest_exact{d}d_backward": (False, d) for d in (1, 2, 3)},
    "upsample_linear1d_backward": (True, 1),
    "upsample_trilinear3d_backward": (True, 3),
}

# backward op -> its Signature (the CPU kernel computes grid_sampler's grad_grid whatever output_mask says)
VJP_SIGNATURES = {
    "grid_sampler_2d_backward": Signature(
        ("input", "grid"), ("interpolation_mode", "padding_mode", "align_corners"), maskable=(0,)
    ),
    **{
        name: Signature((), ("output_size", *(("align_corners",) if corners else ()), *_SCALES[d]), sized="input_size")
        for name, (corners, d) in UPSAMPLE_BACKWARDS.items()
    },
    "multilabel_margin_loss_backward": Signature(("self",), ("target", "reduction"), output=0, like="self"),
}
# forwards whose torch decomposition is not the CPU's result: plate's own
FORWARDS = {
    "multilabel_margin_loss_forward.default": multilabel_margin.multilabel_margin_loss_forward,
}


def _forward(name: str) -> Callable:
    if name in FORWARDS:
        return FORWARDS[name]
    packet, _, overload = name.partition(".")
    return decomposition_table[getattr(getattr(torch.ops.aten, packet), overload)]


def vjp(op: torch._ops.OpOverload, row: Row) -> Callable:
    forward = _forward(row.fn)
    signature = VJP_SIGNATURES[op._schema.name.removeprefix("aten::")]

    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        if call.mixed:
            return call.on_host()
        if signature.like is None:
            expected = call.meta()
            if expected is None:
                return call.host_result
        else:
            expected = torch.empty_like(call[signature.like], device="meta")
        return body(call, expected)

    def body(call: Call, expected):
        grad, inputs = call["grad_output"], [call[name] for name in signature.operands]
        tensors = (grad, *inputs)
        if any(t.device.type != "plate" or not t.dtype.is_floating_point for t in tensors):
            return call.on_host()
        ct = torch.float32 if any(t.dtype in HALF for t in tensors) else None
        if signature.sized:
            inputs = [torch.zeros(call[signature.sized], dtype=grad.dtype, device=grad.device)]
        inputs = [t.to(ct) if ct else t for t in inputs]
        arguments = [call[name] for name in signature.further]
        pick = (lambda out: out[signature.output]) if signature.output is not None else (lambda out: out)
        _, pullback = torch.func.vjp(lambda *xs: pick(forward(*xs, *arguments)), *inputs)
        with lock_released():  # the pullback's backward may run on autograd's device thread
            grads = pullback(grad.to(ct) if ct else grad)
        if isinstance(expected, torch.Tensor):
            return torch.empty_like(expected, device=grad.device).copy_(grads[0])
        mask = call.bound.get("output_mask") or [True] * len(grads)
        return tuple(
            None if i in signature.maskable and not mask[i] else torch.empty_like(e, device=g.device).copy_(g)
            for i, (g, e) in enumerate(zip(grads, expected))
        )

    return kernel


FAMILIES = {"vjp": vjp}
