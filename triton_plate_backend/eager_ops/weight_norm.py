"""Weight norm's fused ops (nn.utils.weight_norm and parametrizations.weight_norm on plate).

- ``weight_norm``: _weight_norm_interface, w = v * (g / ||v||) with the norm over every dim but ``dim``, as the
  CPU kernel computes it: the norm (kept dims, float32 for fp16/bf16 as there) by plate's vector norm, the
  product in the norm's type, rounded once to v's type.
- ``weight_norm_backward``: _weight_norm_interface_backward as a plate kernel (weight_norm_kernels): the
  weight's slices along dim moved first and copied contiguous as rows, one program each.

Both take dim as torch's fused kernels do, the first or the last (given as a non-negative index: the CPU kernel
asserts on -1); another dim, or a dtype the CPU kernel refuses, goes to the host, which raises torch's error."""

from __future__ import annotations

import importlib

import torch

from .launch import FLOAT_DTYPES, REAL_DTYPES, triton_dtype
from .ops import HALF, Call, checked
from .table import Row


def kernels():
    return importlib.import_module(f"{__package__}.weight_norm_kernels")


def weight_norm(op: torch._ops.OpOverload, row: Row):
    @checked(op)
    def kernel(call: Call, expected):
        v, g, dim = call["v"], call["g"], call["dim"]
        if any(t.dtype not in FLOAT_DTYPES or t.dtype not in REAL_DTYPES for t in (v, g)) or v.dim() == 0:
            return call.on_host()
        if v.dtype != g.dtype or dim not in (0, v.dim() - 1) or g.numel() != v.shape[dim]:
            return call.on_host()
        ct = torch.float32 if v.dtype in HALF else v.dtype  # the CPU kernel's norms (the meta kernel says fp16)
        others = [d for d in range(v.dim()) if d != dim]
        norms = torch.linalg.vector_norm(v, 2, others, keepdim=True, dtype=ct)
        w = v.to(ct) * (g.to(ct).reshape(norms.shape) / norms)
        out_w = torch.empty_strided(expected[0].shape, expected[0].stride(), dtype=expected[0].dtype, device=v.device)
        out_norms = torch.empty_strided(expected[1].shape, expected[1].stride(), dtype=ct, device=v.device)
        return out_w.copy_(w), out_norms.copy_(norms)

    return kernel


def weight_norm_backward(op: torch._ops.OpOverload, row: Row):
    @checked(op)
    def kernel(call: Call, expected):
        grad_w, v, g, norms = call["grad_w"], call["saved_v"], call["saved_g"], call["saved_norms"]
        tensors = (grad_w, v, g, norms)
        if any(t.dtype not in FLOAT_DTYPES or t.dtype not in REAL_DTYPES for t in tensors) or v.dim() == 0:
            return call.on_host()
        dim = call["dim"] % v.dim()
        if dim not in (0, v.dim() - 1) or v.shape[dim] != g.numel() or g.numel() != norms.numel():
            return call.on_host()
        rows = v.shape[dim]
        moved_v = v.movedim(dim, 0).contiguous()
        moved_grad = grad_w.movedim(dim, 0).contiguous()
        grad_v = torch.empty(moved_v.shape, dtype=expected[0].dtype, device=v.device)
        grad_g = torch.empty_strided(expected[1].shape, expected[1].stride(), dtype=expected[1].dtype, device=v.device)
        if rows and v.numel():
            k = kernels()
            ct = torch.float64 if v.dtype == torch.float64 else torch.float32
            k.weight_norm_backward[(rows,)](
                grad_v, grad_g, moved_grad, moved_v, g.contiguous(), norms.contiguous(), v.numel() // rows,
                CT=triton_dtype(ct), BLOCK=k.BLOCK, machine=k.machine_of(v),
            )  # fmt: skip
        out_v = torch.empty_strided(expected[0].shape, expected[0].stride(), dtype=expected[0].dtype, device=v.device)
        out_v.copy_(grad_v.movedim(0, dim))
        return out_v, grad_g

    return kernel


FAMILIES = {"weight_norm": weight_norm, "weight_norm_backward": weight_norm_backward}
