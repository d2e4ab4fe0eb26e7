"""sum, mean, max/min and softmax (forward and backward) as plate kernels (reduction_kernels): the reduced dims moved
last and the input copied contiguous on the device, so each result element reduces one row.

Numerics as CUDA's: fp16/bf16 accumulate in float32 and round once to the result type (RTNE), every
other float type in its own type, integers and bools in int64; the kernels add in a fixed order, so a
result has the same bits on every host CPU. What the kernels do not take (complex tensors, a bool
result) runs on the host through the CPU fallback."""

from __future__ import annotations

import importlib
import math

import numpy as np
import torch

from ..torch_device.accumulation import check_softmax_backward
from .launch import FLOAT_DTYPES, REAL_DTYPES, next_power_of_2, triton_dtype
from .ops import HALF, Call, _opmath, _result, checked
from .table import Row


def kernels():
    return importlib.import_module(f"{__package__}.reduction_kernels")


def accumulator(dtype: torch.dtype) -> torch.dtype:
    """The type a reduction adds in: CUDA's (float32 for half types, int64 for integers and bools)."""
    if dtype.is_floating_point:
        return _opmath(dtype)
    return torch.int64


def reduced_dims(x: torch.Tensor, dim) -> list[int]:
    """The dims a reduction covers: None or [] is all of them (as aten's sum.dim_IntList says)."""
    if dim is None or (not isinstance(dim, int) and len(dim) == 0):
        return list(range(x.dim()))
    dims = [dim] if isinstance(dim, int) else list(dim)
    return sorted({d % max(x.dim(), 1) for d in dims})


def as_rows(x: torch.Tensor, dims: list[int]) -> torch.Tensor:
    """x as a contiguous (rows, m) tensor on its device: the dims kept first, the reduced ones last."""
    kept = [d for d in range(x.dim()) if d not in dims]
    rows = math.prod(x.shape[d] for d in kept)
    return x.permute(*kept, *dims).contiguous().view(rows, math.prod(x.shape[d] for d in dims))


def rows_along(t: torch.Tensor, dim: int) -> torch.Tensor:
    """as_rows(t, [dim]) for an op along one dim; a 0-d tensor is one row of one element."""
    return as_rows(t.reshape(1) if t.dim() == 0 else t, [dim])


def _columns(m: int) -> int:
    """A program's step along a row: the row's length up to BLOCK, a power of two."""
    return min(kernels().BLOCK, next_power_of_2(max(m, 1)))


def _written(call: Call, expected: torch.Tensor, result: torch.Tensor) -> torch.Tensor:
    """`result` (contiguous, of expected's shape) as the op returns it: into its out= argument, or in the
    layout the meta kernel gives."""
    if call.target_name is not None:
        return _result(call, expected, result.device).copy_(result)
    if result.stride() == expected.stride():
        return result
    out = torch.empty_strided(expected.shape, expected.stride(), dtype=expected.dtype, device=result.device)
    return out.copy_(result)


# ---- sum, nansum, prod ---------------------------------------------------------------------------------
def sum_(op: torch._ops.OpOverload, row: Row):
    """sum, nansum (row.fn "nansum": a NaN counts as 0) and prod (row.fn "prod": tl.reduce of a multiply) over dims
    (none: every element), with dtype= (the input cast first) and keepdim: one row per result element, combined in
    CUDA's accumulator type (float32 for fp16/bf16, int64 for integers and bools, which wrap as the CPU's) and
    rounded once; a bool result is the int64 one != 0 (sum: any, prod: all). Complex tensors run on the host
    (nansum: the CPU's error)."""

    product, nan_zero = row.fn == "prod", row.fn == "nansum"

    @checked(op)
    def kernel(call: Call, expected):
        x = call["self"]
        out_dtype = expected.dtype
        if x.dtype not in REAL_DTYPES or out_dtype not in REAL_DTYPES:
            return call.on_host()
        source = x.reshape(1) if x.dim() == 0 else x
        rows = as_rows(source, reduced_dims(source, call.bound.get("dim")))  # sum.default, prod.default: all dims
        result = torch.empty(rows.shape[0], dtype=out_dtype, device=x.device)
        launch_row_sum(result, rows, out_dtype, product=product, nan_zero=nan_zero and out_dtype.is_floating_point)
        return _written(call, expected, result.view(expected.shape))

    return kernel


def mean(op: torch._ops.OpOverload, row: Row):
    """mean.dim: the rows summed in the accumulator type, times CUDA's factor (outputs / inputs, computed in the
    accumulator's type: 1/m rounded once, inf for an empty reduction, so 0 * inf gives NaN), then rounded once
    to the result type, as CUDA's MeanOps. A float result of a half input accumulates the same way; other
    dtype pairs and complex tensors run on the host."""

    @checked(op)
    def kernel(call: Call, expected):
        x = call["self"]
        out_dtype = expected.dtype
        widened = x.dtype in HALF and out_dtype == torch.float32
        if out_dtype not in FLOAT_DTYPES or not (x.dtype == out_dtype or widened):
            return call.on_host()
        if x.dim() == 0:
            return _written(call, expected, x.to(out_dtype).reshape(expected.shape).clone())
        rows = as_rows(x, reduced_dims(x, call.bound.get("dim")))
        n, m = rows.shape
        wide = accumulator(out_dtype)
        total = torch.empty(n, dtype=wide, device=x.device)
        launch_row_sum(total, rows, out_dtype)
        factor_type = np.float64 if wide == torch.float64 else np.float32
        with np.errstate(divide="ignore"):
            factor = float(factor_type(n) / factor_type(n * m))
        return _written(call, expected, total.mul_(factor).to(out_dtype).view(expected.shape))

    return kernel


def launch_row_sum(
    out: torch.Tensor, rows: torch.Tensor, as_dtype: torch.dtype, *, product: bool = False, nan_zero: bool = False
) -> None:
    """out[r] = sum (product: product) of rows[r, :], each element cast to `as_dtype` first (nan_zero: a NaN then
    taken as 0), combined in its accumulator type."""
    n, m = rows.shape
    if n == 0:
        return
    k = kernels()
    combine = {"PRODUCT": product, "NAN_ZERO": nan_zero}
    if m >= k.SPLIT_FROM and n < 64:  # few long rows: chunks in parallel, then their partial results
        chunks = -(-m // k.CHUNK)
        ct = accumulator(as_dtype)
        partial = torch.empty((n, chunks), dtype=ct, device=rows.device)
        k.chunk_sum[(n, chunks)](
            partial, rows, m, k.CHUNK, chunks, AS=triton_dtype(as_dtype), CT=triton_dtype(ct), COLUMNS=k.BLOCK,
            **combine, machine=k.machine_of(out),
        )  # fmt: skip
        rows, as_dtype, m = partial, ct, chunks
        combine["NAN_ZERO"] = False
    columns = _columns(m)
    per_program = max(1, k.BLOCK // columns)
    k.row_sum[(-(-n // per_program),)](
        out, rows, n, m, AS=triton_dtype(as_dtype), CT=triton_dtype(accumulator(as_dtype)),
        ROWS=per_program, COLUMNS=columns, **combine, machine=k.machine_of(out),
    )  # fmt: skip


# ---- max / min / amax / amin -------------------------------------------------------------------------
def _empty(call: Call, expected, x: torch.Tensor):
    """An empty tensor reduced over dims of nonzero size (amax(1) of a (0, 5) tensor): results as empty as the
    meta kernel's, nothing to compute. A reduction over an empty dim, or of every element of an empty tensor
    (max()), goes to the host, which raises torch's error (the meta kernel lets max() through)."""
    results = expected if isinstance(expected, (tuple, list)) else (expected,)
    if any(r.numel() != 0 for r in results):
        return call.on_host()
    made = tuple(torch.empty_strided(r.shape, r.stride(), dtype=r.dtype, device=x.device) for r in results)
    return made if isinstance(expected, (tuple, list)) else made[0]


def long_row_extremes(out: torch.Tensor, rows: torch.Tensor, maximum: bool) -> None:
    """out[r] = row_extreme's max (maximum) or min of rows[r, :] (contiguous, few and long), the same bits: its
    lanes (each the first of its greatest elements in order) by lane_extremes over chunks of the row in parallel,
    then over the chunks' lanes, until one chunk is left, then combined by lanes_extreme; one program walking a
    1M-element row took 850 ms."""
    k = kernels()
    n, m = rows.shape
    shape = dict(MAX=maximum, IS_FLOAT=rows.dtype.is_floating_point, COLUMNS=k.BLOCK, machine=k.machine_of(out))
    x = rows
    while True:
        chunks = -(-m // (k.LANE_STEPS * k.BLOCK))
        lanes = torch.empty((n, chunks * k.BLOCK), dtype=rows.dtype, device=rows.device)
        k.lane_extremes[(n, chunks)](lanes, x, rows, m, rows.shape[1], chunks, STEPS=k.LANE_STEPS, **shape)
        x, m = lanes, chunks * k.BLOCK
        if chunks == 1:
            break
    k.lanes_extreme[(n,)](out, x, **shape)


def extreme(op: torch._ops.OpOverload, row: Row):
    """max.default / min.default (every element) and amax / amin (over dims): one row per result element,
    NaN if the row holds one, as torch's; a bool tensor over its bytes (0 and 1, as uint8). Empty reductions (the
    host raises torch's error; empty results: see ``_empty``) and complex tensors run on the host."""

    @checked(op)
    def kernel(call: Call, expected):
        x = call["self"]
        if x.dtype not in REAL_DTYPES or call.target_name is not None:
            return call.on_host()
        if x.numel() == 0:
            return _empty(call, expected, x)
        x = x.view(torch.uint8) if x.dtype == torch.bool else x
        if x.dim() == 0:
            return _written(call, expected, x.view(expected.dtype).reshape(expected.shape).clone())
        rows = as_rows(x, reduced_dims(x, call.bound.get("dim")))  # max.default: all dims
        n, m = rows.shape
        result = torch.empty(n, dtype=x.dtype, device=x.device)
        k = kernels()
        if m >= k.SPLIT_FROM and n < 64:
            long_row_extremes(result, rows, row.fn == "max")
        else:
            k.row_extreme[(n,)](
                result, rows, n, m, MAX=row.fn == "max", IS_FLOAT=x.dtype.is_floating_point, COLUMNS=_columns(m),
                machine=k.machine_of(x),
            )  # fmt: skip
        return _written(call, expected, result.view(expected.dtype).view(expected.shape))

    return kernel


def arg_extreme(op: torch._ops.OpOverload, row: Row):
    """max.dim / min.dim (values and first indices) and argmax / argmin (dim None: every element): one row per
    result element, a NaN the extreme as torch's; a bool tensor's max.dim / min.dim over its bytes (argmax and
    argmin refuse bool: the host raises torch's error). Empty rows (empty results: ``_empty``) and complex tensors
    run on the host."""

    @checked(op)
    def kernel(call: Call, expected):
        x = call["self"]
        if x.dtype not in REAL_DTYPES or call.target_name is not None:
            return call.on_host()
        if x.dtype == torch.bool and not isinstance(expected, (tuple, list)):
            return call.on_host()  # argmax / argmin: the CPU's error
        if x.numel() == 0:
            return _empty(call, expected, x)
        x = x.view(torch.uint8) if x.dtype == torch.bool else x
        dim = call.bound.get("dim")
        source = x.reshape(1) if x.dim() == 0 else x
        rows = as_rows(source, reduced_dims(source, dim))
        n, m = rows.shape
        values = torch.empty(n, dtype=x.dtype, device=x.device)
        indices = torch.empty(n, dtype=torch.int64, device=x.device)
        k = kernels()
        k.row_arg_extreme[(n,)](
            values, indices, rows, n, m, MAX=row.fn == "max", IS_FLOAT=x.dtype.is_floating_point,
            COLUMNS=_columns(m), machine=k.machine_of(x),
        )  # fmt: skip
        if isinstance(expected, (tuple, list)):  # max.dim / min.dim
            return (
                _written(call, expected[0], values.view(expected[0].dtype).view(expected[0].shape)),
                _written(call, expected[1], indices.view(expected[1].shape)),
            )
        return _written(call, expected, indices.view(expected.shape))

    return kernel


# ---- softmax and log_softmax, forward and backward -----------------------------------------------------


def softmax(op: torch._ops.OpOverload, row: Row):
    """_softmax / _log_softmax(self, dim, half_to_float): one program per row along dim."""

    @checked(op)
    def kernel(call: Call, expected):
        x = call["self"]
        if x.dtype not in FLOAT_DTYPES:
            return call.on_host()
        dim = call["dim"] % max(x.dim(), 1)
        rows = rows_along(x, dim)
        result = torch.empty(rows.shape, dtype=expected.dtype, device=x.device)
        n, m = rows.shape
        if n and m:
            k = kernels()
            k.softmax[(n,)](
                result, rows, m, LOG=row.fn == "log", CT=triton_dtype(_opmath(x.dtype)), COLUMNS=_columns(m),
                machine=k.machine_of(x),
            )  # fmt: skip
        return _written(call, expected, _unrows(result, x, dim))

    return kernel


def softmax_backward(op: torch._ops.OpOverload, row: Row):
    """_softmax_backward_data / _log_softmax_backward_data(grad_output, output, dim, input_dtype)."""

    @checked(op)
    def kernel(call: Call, expected):
        grad, y = call["grad_output"], call["output"]
        check_softmax_backward(grad, y, call["dim"], call["input_dtype"])
        if grad.dtype not in FLOAT_DTYPES or y.dtype not in FLOAT_DTYPES or grad.shape != y.shape:
            return call.on_host()
        dim = call["dim"] % max(y.dim(), 1)
        grads, outputs = rows_along(grad, dim), rows_along(y, dim)
        result = torch.empty(grads.shape, dtype=expected.dtype, device=y.device)
        n, m = grads.shape
        if n and m:
            k = kernels()
            k.softmax_backward[(n,)](
                result, grads, outputs, m, LOG=row.fn == "log", CT=triton_dtype(_opmath(grad.dtype)),
                COLUMNS=_columns(m), machine=k.machine_of(y),
            )  # fmt: skip
        return _written(call, expected, _unrows(result, y, dim))

    return kernel


def _unrows(result: torch.Tensor, like: torch.Tensor, dim: int) -> torch.Tensor:
    """A (rows, m) result of as_rows(like, [dim]) back in like's shape (contiguous where dim is last)."""
    if like.dim() == 0:
        return result.view(())
    moved = [like.shape[d] for d in range(like.dim()) if d != dim] + [like.shape[dim]]
    return result.view(moved).movedim(-1, dim).contiguous()


FAMILIES = {
    "sum": sum_,
    "mean": mean,
    "extreme": extreme,
    "arg_extreme": arg_extreme,
    "softmax": softmax,
    "softmax_backward": softmax_backward,
}
