"""Convolutions on plate (family ``convolution``): conv1d/2d/3d forward and backward as im2col and matmuls.

A PrivateUse1 device's convolutions reach ``convolution_overrideable`` and its backward
``convolution_backward_overrideable`` (CUDA's reach cuDNN). Non-transposed convolutions of any dimension, stride,
padding, dilation and groups run here over plate kernels:

- forward: the zero-padded input's patches, an ``as_strided`` view (N, G, C/G, *K, *L) copied into columns
  (N, G, C/G*prod(K), prod(L)), one batched matmul with the weight (G, O/G, C/G*prod(K)), plus the bias;
- backward: grad_weight the matmul of grad_output with the same columns (summed over the batch by the matmul
  itself), grad_bias grad_output's sum, grad_input the weight's transpose times grad_output (columns of the
  padded input's gradient) added back into it one kernel offset at a time (col2im), then unpadded.

fp16/bf16 operands compute in float32 and each result is rounded once (cuDNN accumulates in float32 too).
Transposed convolutions are the same pieces swapped: forward the input-gradient computation (col2im), backward the
forward convolution and the weight gradient with grad_output and input exchanged. Results are laid out in the memory
format torch predicts for the Overrideable backend (what Inductor's fake kernels assume)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import torch

from .ops import Call
from .table import Row

HALF = (torch.float16, torch.bfloat16)


def _wide(t: torch.Tensor) -> torch.Tensor:
    return t.float() if t.dtype in HALF else t


def _lists(dims: int, *values):
    """torch's per-dim lists (one entry: every dim's)."""
    return [list(v) * dims if len(v) == 1 else list(v) for v in values]


def _out_sizes(spatial, kernel, stride, padding, dilation) -> list[int]:
    """A (non-transposed) convolution's output sizes for an input of `spatial` sizes."""
    return [
        (size + 2 * p - d * (k - 1) - 1) // st + 1
        for size, k, st, p, d in zip(spatial, kernel, stride, padding, dilation, strict=True)
    ]


def _padded(x: torch.Tensor, padding: list[int]) -> torch.Tensor:
    if not any(padding):
        return x.contiguous()
    shape = [*x.shape[:2], *(s + 2 * p for s, p in zip(x.shape[2:], padding, strict=True))]
    out = x.new_zeros(shape)
    out[(slice(None), slice(None), *(slice(p, p + s) for s, p in zip(x.shape[2:], padding, strict=True)))] = x
    return out


def _columns(x: torch.Tensor, groups: int, kernel, stride, padding, dilation) -> torch.Tensor:
    """x's zero-padded patches as (N, G, C/G * prod(kernel), prod(out)) columns (a copy)."""
    out = _out_sizes(x.shape[2:], kernel, stride, padding, dilation)
    xp = _padded(x, padding)
    n, c = xp.shape[:2]
    s = xp.stride()
    spatial = s[2:]
    view = xp.as_strided(
        (n, groups, c // groups, *kernel, *out),
        (
            s[0],
            s[1] * (c // groups),
            s[1],
            *(d * t for d, t in zip(dilation, spatial, strict=True)),
            *(st * t for st, t in zip(stride, spatial, strict=True)),
        ),
        xp.storage_offset(),
    )
    return view.reshape(n, groups, (c // groups) * math.prod(kernel), math.prod(out))


def _conv(x, weight, groups, stride, padding, dilation) -> torch.Tensor:
    """The convolution of x (N, C, *S) by weight (O, C/G, *K), wide: (N, O, *out)."""
    kernel = list(weight.shape[2:])
    out = _out_sizes(x.shape[2:], kernel, stride, padding, dilation)
    cols = _columns(x, groups, kernel, stride, padding, dilation)
    o = weight.shape[0]
    result = torch.matmul(weight.reshape(1, groups, o // groups, -1), cols)  # (N, G, O/G, prod(out))
    return result.reshape(x.shape[0], o, *out)


def _conv_grad_weight(grad, x, weight_shape, groups, stride, padding, dilation) -> torch.Tensor:
    """d(loss)/d(weight) of _conv(x, weight) given its output's gradient `grad` (N, O, *out)."""
    kernel = list(weight_shape[2:])
    cols = _columns(x, groups, kernel, stride, padding, dilation)  # (N, G, CK, L)
    out, wanted = list(_out_sizes(x.shape[2:], kernel, stride, padding, dilation)), list(grad.shape[2:])
    if out != wanted:  # transposed: x is the output, output_padding's extra rows past every input position's
        window = (slice(None),) * 3 + tuple(slice(0, w) for w in wanted)
        cols = cols.reshape(*cols.shape[:3], *out)[window].reshape(*cols.shape[:3], -1)
    n, o = grad.shape[:2]
    g = grad.reshape(n, groups, o // groups, -1).permute(1, 2, 0, 3).reshape(groups, o // groups, -1)
    gw = torch.matmul(g, cols.permute(1, 0, 3, 2).reshape(groups, -1, cols.shape[2]))  # summed over the batch
    return gw.reshape(weight_shape)


def _conv_grad_input(grad, weight, input_shape, groups, stride, padding, dilation) -> torch.Tensor:
    """d(loss)/d(x) of _conv(x, weight) for x of `input_shape`, given its output's gradient `grad` (N, O, *out)."""
    n, c = input_shape[:2]
    o, kernel, out = weight.shape[0], list(weight.shape[2:]), list(grad.shape[2:])
    w = weight.reshape(groups, o // groups, -1)
    cols = torch.matmul(w.transpose(1, 2).unsqueeze(0), grad.reshape(n, groups, o // groups, -1))  # (N, G, CK, L)
    cols = cols.reshape(n, c, *kernel, *out)
    spatial = input_shape[2:]
    padded = cols.new_zeros([n, c, *(s + 2 * p for s, p in zip(spatial, padding, strict=True))])
    every = (slice(None), slice(None))
    for offset in itertools.product(*(range(k) for k in kernel)):  # col2im: each kernel offset's patch back
        window = tuple(
            slice(k * d, k * d + st * (length - 1) + 1, st)
            for k, d, st, length in zip(offset, dilation, stride, out, strict=True)
        )
        padded[(*every, *window)] += cols[(*every, *offset)]
    return padded[(*every, *(slice(p, p + s) for s, p in zip(spatial, padding, strict=True)))]


def _laid_out(result: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, dtype) -> torch.Tensor:
    """The result in `dtype` (rounded once) and in the memory format torch predicts for plate's (Overrideable)
    backend, which Inductor's fake kernels assume too. ``contiguous``, not ``to(memory_format=)``: the latter keeps
    a view of a wider buffer (col2im's padded input gradient: strides (24, 8, 1) for a (1, 3, 4) gradient) whose
    suggested memory format is already the one asked for."""
    fmt = torch._C._conv_determine_backend_memory_format(x, weight, torch._C._ConvBackend.Overrideable)
    if result.dim() not in (4, 5):
        fmt = torch.contiguous_format  # channels-last has no 1-d layout
    return result.to(dtype=dtype).contiguous(memory_format=fmt)


def _forward(call: Call):
    x, weight, bias, groups = call["input"], call["weight"], call["bias"], call["groups"]
    dims = weight.dim() - 2
    stride, padding, dilation, output_padding = _lists(
        dims, call["stride"], call["padding"], call["dilation"], call["output_padding"]
    )
    dtype = torch.result_type(x, weight)
    xw, ww = _wide(x), _wide(weight)
    if call["transposed"]:  # the gradient of a convolution by the same weight, wrt its input
        kernel = list(weight.shape[2:])
        sizes = [
            (length - 1) * st - 2 * p + d * (k - 1) + op + 1
            for length, k, st, p, d, op in zip(
                x.shape[2:], kernel, stride, padding, dilation, output_padding, strict=True
            )
        ]
        shape = [x.shape[0], weight.shape[1] * groups, *sizes]
        result = _conv_grad_input(xw, ww, shape, groups, stride, padding, dilation)
    else:
        result = _conv(xw, ww, groups, stride, padding, dilation)
    if bias is not None:
        result = result + _wide(bias).reshape(1, -1, *([1] * dims))
    return _laid_out(result, x, weight, dtype)


def _backward(call: Call):
    grad, x, weight, groups, mask = (
        call["grad_output"],
        call["input"],
        call["weight"],
        call["groups"],
        call["output_mask"],
    )
    dims = weight.dim() - 2
    stride, padding, dilation = _lists(dims, call["stride"], call["padding"], call["dilation"])
    gw_, xw, ww = _wide(grad), _wide(x), _wide(weight)
    grad_input = grad_weight = grad_bias = None
    if mask[2]:
        grad_bias = gw_.sum(dim=[0, *range(2, grad.dim())]).to(grad.dtype)
    if call["transposed"]:  # x -> conv's gradient wrt its input: its adjoint is the convolution itself
        if mask[0]:
            grad_input = _conv(gw_, ww, groups, stride, padding, dilation)
            # output_padding's extra rows give positions past x's (read by no input position): dropped
            grad_input = grad_input[(slice(None),) * 2 + tuple(slice(0, s) for s in x.shape[2:])]
        if mask[1]:
            grad_weight = _conv_grad_weight(xw, gw_, weight.shape, groups, stride, padding, dilation)
    else:
        if mask[0]:
            grad_input = _conv_grad_input(gw_, ww, x.shape, groups, stride, padding, dilation)
        if mask[1]:
            grad_weight = _conv_grad_weight(gw_, xw, weight.shape, groups, stride, padding, dilation)
    grad_input = None if grad_input is None else _laid_out(grad_input, x, weight, x.dtype)
    grad_weight = None if grad_weight is None else _laid_out(grad_weight, x, weight, weight.dtype)
    return grad_input, grad_weight, grad_bias


def convolution(op: torch._ops.OpOverload, row: Row) -> Callable:
    body = _backward if row.fn == "backward" else _forward

    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        devices = {t.device for t in (call["input"], call["weight"], call.bound.get("bias")) if t is not None}
        if len(devices) > 1:
            a, b = sorted(devices, key=str)[:2]
            raise RuntimeError(
                f"Expected all tensors to be on the same device, but found at least two devices, {a} and {b}! "
                f"(plate: in convolution)"
            )
        return body(call)

    return kernel


FAMILIES = {"convolution": convolution}
