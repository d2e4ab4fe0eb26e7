"""native_layer_norm and native_layer_norm_backward as plate kernels (layer_norm_kernels): the input as
contiguous (rows, n) rows, n the normalized shape's elements; results laid out as the meta kernel lays
them out (CUDA's: mean and rstd in float32 for fp16/bf16 inputs). A row of no elements runs on the host."""

from __future__ import annotations

import importlib
import math

import torch

from .launch import FLOAT_DTYPES, next_power_of_2, triton_dtype
from .ops import Call, _opmath, checked
from .table import Row


def kernels():
    return importlib.import_module(f"{__package__}.layer_norm_kernels")


def _floats(*tensors) -> bool:
    return all(t is None or (t.dtype in FLOAT_DTYPES and t.device.type != "cpu") for t in tensors)


def _like(expected: torch.Tensor, device) -> torch.Tensor:
    return torch.empty_strided(expected.shape, expected.stride(), dtype=expected.dtype, device=device)


def _flat(t: torch.Tensor | None, n: int) -> torch.Tensor | None:
    return None if t is None else t.contiguous().view(-1, n) if n else t


def forward(op: torch._ops.OpOverload, row: Row):
    @checked(op)
    def kernel(call: Call, expected):
        x, w, b = call["input"], call["weight"], call["bias"]
        n = math.prod(call["normalized_shape"])
        if not _floats(x, w, b) or n == 0:
            return call.on_host()
        rows = x.numel() // n
        out, mean, rstd = (_like(e, x.device) for e in expected)
        flat_out = torch.empty((rows, n), dtype=out.dtype, device=x.device)
        flat_mean = torch.empty(rows, dtype=mean.dtype, device=x.device)
        flat_rstd = torch.empty(rows, dtype=rstd.dtype, device=x.device)
        if rows:
            k = kernels()
            k.forward[(rows,)](
                flat_out, flat_mean, flat_rstd, _flat(x, n), x if w is None else w.contiguous(),
                x if b is None else b.contiguous(), n, float(call["eps"]), HAS_W=w is not None,
                HAS_B=b is not None, CT=triton_dtype(_opmath(x.dtype)), BLOCK=k.BLOCK, machine=k.machine_of(x),
            )  # fmt: skip
        out.copy_(flat_out.view(out.shape))
        mean.copy_(flat_mean.view(mean.shape))
        rstd.copy_(flat_rstd.view(rstd.shape))
        return out, mean, rstd

    return kernel


def backward(op: torch._ops.OpOverload, row: Row):
    @checked(op)
    def kernel(call: Call, expected):
        dy, x, mean, rstd = call["grad_out"], call["input"], call["mean"], call["rstd"]
        w, b = call["weight"], call["bias"]
        n = math.prod(call["normalized_shape"])
        if not _floats(dy, x, mean, rstd, w, b) or n == 0 or dy.shape != x.shape:
            return call.on_host()
        rows = x.numel() // n
        mask = list(call["output_mask"])
        results = [None if e is None else _like(e, x.device) for e in expected]
        if not any(r is not None and r.numel() for r in results) or rows == 0:
            return _empty_grads(results)
        k = kernels()
        ct = triton_dtype(_opmath(x.dtype))
        flat_dy, flat_x = _flat(dy, n), _flat(x, n)
        flat_mean, flat_rstd = mean.contiguous().view(-1), rstd.contiguous().view(-1)
        if mask[0] and results[0] is not None:
            grad_in = torch.empty((rows, n), dtype=results[0].dtype, device=x.device)
            k.backward_input[(rows,)](
                grad_in, flat_dy, flat_x, flat_mean, flat_rstd, x if w is None else w.contiguous(), n,
                HAS_W=w is not None, CT=ct, BLOCK=k.BLOCK, machine=k.machine_of(x),
            )  # fmt: skip
            results[0].copy_(grad_in.view(results[0].shape))
        want_w = mask[1] and results[1] is not None
        want_b = mask[2] and results[2] is not None
        if want_w or want_b:
            grad_w = torch.empty(n, dtype=results[1].dtype if want_w else x.dtype, device=x.device)
            grad_b = torch.empty(n, dtype=results[2].dtype if want_b else x.dtype, device=x.device)
            columns = min(k.BLOCK // 8, next_power_of_2(n))
            k.backward_params[(-(-n // columns),)](
                grad_w, grad_b, flat_dy, flat_x, flat_mean, flat_rstd, rows, n, WANT_W=want_w, WANT_B=want_b,
                CT=ct, ROWS=k.BLOCK // columns, COLUMNS=columns, machine=k.machine_of(x),
            )  # fmt: skip
            if want_w:
                results[1].copy_(grad_w.view(results[1].shape))
            if want_b:
                results[2].copy_(grad_b.view(results[2].shape))
        return tuple(results)

    return kernel


def _empty_grads(results):
    """Gradients of no rows: zeros (a weight's gradient sums nothing), as torch returns them."""
    for r in results:
        if r is not None:
            r.zero_()
    return tuple(results)


FAMILIES = {"layer_norm": forward, "layer_norm_backward": backward}
