"""The Triton kernels of plate's eager reductions over rows (reductions.py): a contiguous (rows, m) view,
the reduced elements of each row adjacent, ROWS rows per program, BLOCK columns per step.

Each accumulates in CT (float32 for fp16/bf16, as CUDA's kernels do) in a fixed order, a column block's
partial sums added step by step and then a pairwise tree (tl.sum), and rounds once when it stores: the
simulator computes each step as IEEE says, so a result has the same bits on every host CPU."""

from __future__ import annotations

import triton
import triton.language as tl

from .kernels import machine_of  # noqa: F401 - the launch option every eager kernel takes

BLOCK = 512  # elements a program holds per step: ROWS x COLUMNS
SPLIT_FROM = 16 * BLOCK  # a row this long, of few rows, is summed in chunks by programs of their own
CHUNK = 8 * BLOCK  # a chunk's elements: partial sums in CT, then summed (row_sum) and rounded once


@triton.jit
def _times(a, b):
    return a * b


@triton.jit
def _combined(total, v, PRODUCT: tl.constexpr):
    """One step of the lanes' running sums (products)."""
    if PRODUCT:
        return total * v
    else:
        return total + v


@triton.jit
def _reduced(total, axis: tl.constexpr, PRODUCT: tl.constexpr):
    """The lanes' results combined by a pairwise tree."""
    if PRODUCT:
        return tl.reduce(total, axis, _times)
    else:
        return tl.sum(total, axis=axis)


@triton.jit
def _element(v, inside, AS: tl.constexpr, CT: tl.constexpr, PRODUCT: tl.constexpr, NAN_ZERO: tl.constexpr):
    """A loaded element as a reduction takes it: cast to AS (sum(dtype=) casts its input first), a NaN as 0
    (NAN_ZERO: nansum), in CT; a lane outside the row the reduction's identity (0, or 1 for PRODUCT)."""
    v = v.to(AS)
    if NAN_ZERO:
        v = tl.where(v != v, 0, v)
    v = v.to(CT)
    if PRODUCT:
        v = tl.where(inside, v, 1)
    return v


@triton.jit(do_not_specialize=["rows", "m"])
def row_sum(
    out, x, rows, m, AS: tl.constexpr, CT: tl.constexpr, ROWS: tl.constexpr, COLUMNS: tl.constexpr,
    PRODUCT: tl.constexpr, NAN_ZERO: tl.constexpr,
):  # fmt: skip
    """out[r] = sum (PRODUCT: product) of x[r, :]: each element cast to AS (the result's type: sum(dtype=)
    casts its input first), a NaN taken as 0 with NAN_ZERO (nansum), combined in CT: COLUMNS lanes each
    combine a column of the row's steps, then a pairwise tree (tl.sum, or tl.reduce of a multiply)."""
    r = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    live = r < rows
    if PRODUCT:
        total = tl.full([ROWS, COLUMNS], 1, dtype=CT)
    else:
        total = tl.zeros([ROWS, COLUMNS], dtype=CT)
    for start in range(0, m, COLUMNS):
        c = start + tl.arange(0, COLUMNS)
        inside = live[:, None] & (c < m)[None, :]
        v = _element(tl.load(x + r[:, None] * m + c[None, :], mask=inside, other=0), inside, AS, CT, PRODUCT, NAN_ZERO)
        total = _combined(total, v, PRODUCT)
    result = _reduced(total, 1, PRODUCT)
    tl.store(out + r, result.to(out.dtype.element_ty), mask=live)


@triton.jit(do_not_specialize=["m", "chunk", "chunks"])
def chunk_sum(
    partial, x, m, chunk, chunks, AS: tl.constexpr, CT: tl.constexpr, COLUMNS: tl.constexpr,
    PRODUCT: tl.constexpr, NAN_ZERO: tl.constexpr,
):  # fmt: skip
    """partial[r, s] = sum (PRODUCT: product) of x[r, s * chunk : (s + 1) * chunk] (within the row's m), in CT;
    grid (rows, chunks)."""
    row = tl.program_id(0).to(tl.int64)
    part = tl.program_id(1).to(tl.int64)
    if PRODUCT:
        total = tl.full([COLUMNS], 1, dtype=CT)
    else:
        total = tl.zeros([COLUMNS], dtype=CT)
    for start in range(0, chunk, COLUMNS):
        c = part * chunk + start + tl.arange(0, COLUMNS)
        inside = (c < m) & (start + tl.arange(0, COLUMNS) < chunk)
        v = _element(tl.load(x + row * m + c, mask=inside, other=0), inside, AS, CT, PRODUCT, NAN_ZERO)
        total = _combined(total, v, PRODUCT)
    result = _reduced(total, 0, PRODUCT)
    tl.store(partial + row * chunks + part, result)


@triton.jit
def _extreme_step(row, c, m, first, best, nan, MAX: tl.constexpr, IS_FLOAT: tl.constexpr):
    """One chunk of a max/min row walk: columns c of row (those past m taking the row's first element) folded
    into best (strictly greater or less: the first of equal values stays), NaNs seen into nan."""
    v = tl.load(row + c, mask=c < m, other=0)
    v = tl.where(c < m, v, first)
    if IS_FLOAT:
        nan = nan | (v != v)
    if MAX:
        best = tl.where(v > best, v, best)
    else:
        best = tl.where(v < best, v, best)
    return best, nan


@triton.jit(do_not_specialize=["rows", "m"])
def row_extreme(out, x, rows, m, MAX: tl.constexpr, IS_FLOAT: tl.constexpr, COLUMNS: tl.constexpr):
    """out[r] = max (MAX) or min of x[r, :] (m >= 1), NaN if any element is NaN (as torch's max/amax);
    one row per program, the masked-off columns taking the row's first element."""
    r = tl.program_id(0).to(tl.int64)
    first = tl.load(x + r * m)
    best = tl.full([COLUMNS], 0, dtype=first.dtype) + first
    nan = tl.zeros([COLUMNS], dtype=tl.int1)
    for start in range(0, m, COLUMNS):
        c = start + tl.arange(0, COLUMNS)
        best, nan = _extreme_step(x + r * m, c, m, first, best, nan, MAX, IS_FLOAT)
    if MAX:
        top = tl.max(best, axis=0)
    else:
        top = tl.min(best, axis=0)
    if IS_FLOAT:
        top = tl.where(tl.max(nan.to(tl.int32), axis=0) != 0, float("nan"), top.to(tl.float32)).to(first.dtype)
    tl.store(out + r, top)


@triton.jit(do_not_specialize=["rows", "m"])
def row_arg_extreme(
    values, indices, x, rows, m, MAX: tl.constexpr, IS_FLOAT: tl.constexpr, COLUMNS: tl.constexpr
):  # fmt: skip
    """values[r], indices[r] = the max (MAX) or min of x[r, :] (m >= 1) and its first index; a NaN is the
    extreme (its first index), as torch's max.dim / argmax."""
    r = tl.program_id(0).to(tl.int64)
    first = tl.load(x + r * m)
    best = tl.full([COLUMNS], 0, dtype=first.dtype) + first
    where = tl.zeros([COLUMNS], dtype=tl.int64)
    for start in range(0, m, COLUMNS):
        c = start + tl.arange(0, COLUMNS)
        v = tl.load(x + r * m + c, mask=c < m, other=0)
        v = tl.where(c < m, v, first)
        if MAX:
            take = v > best
        else:
            take = v < best
        if IS_FLOAT:
            take = (take | (v != v)) & (best == best)
        take = take & (c < m)
        best = tl.where(take, v, best)
        where = tl.where(take, c.to(tl.int64), where)
    if MAX:
        top = tl.max(best, axis=0)
    else:
        top = tl.min(best, axis=0)
    hit = best == top
    if IS_FLOAT:
        any_nan = tl.max((best != best).to(tl.int32), axis=0) != 0
        hit = tl.where(any_nan, best != best, hit)
    at = tl.min(tl.where(hit, where, m), axis=0)
    tl.store(indices + r, at)
    tl.store(values + r, tl.load(x + r * m + at))


@triton.jit
def _row_max(x, row, m, CT: tl.constexpr, COLUMNS: tl.constexpr):
    best = tl.full([COLUMNS], float("-inf"), dtype=CT)
    for start in range(0, m, COLUMNS):
        c = start + tl.arange(0, COLUMNS)
        v = tl.load(x + row * m + c, mask=c < m, other=float("-inf")).to(CT)
        best = tl.maximum(best, v, propagate_nan=tl.PropagateNan.ALL)
    top = tl.max(best, axis=0)
    any_nan = tl.max((best != best).to(tl.int32), axis=0)
    return tl.where(any_nan != 0, float("nan"), top)


@triton.jit(do_not_specialize=["m"])
def softmax(out, x, m, LOG: tl.constexpr, CT: tl.constexpr, COLUMNS: tl.constexpr):
    """One row per program: softmax (LOG: log_softmax) of x[row, :] as CUDA's kernel computes it,
    exp(x - max) / sum(exp(x - max)) (x - max - log(sum)), in CT."""
    row = tl.program_id(0).to(tl.int64)
    top = _row_max(x, row, m, CT, COLUMNS)
    # a row of -inf (or all masked): CUDA's max is -inf and x - max NaN, as here
    total = tl.zeros([COLUMNS], dtype=CT)
    for start in range(0, m, COLUMNS):
        c = start + tl.arange(0, COLUMNS)
        v = tl.load(x + row * m + c, mask=c < m, other=float("-inf")).to(CT)
        total += tl.where(c < m, tl.exp(v - top), 0.0)
    s = tl.sum(total, axis=0)
    for start in range(0, m, COLUMNS):
        c = start + tl.arange(0, COLUMNS)
        v = tl.load(x + row * m + c, mask=c < m, other=0).to(CT)
        if LOG:
            y = v - top - tl.log(s)
        else:
            y = tl.exp(v - top) / s
        tl.store(out + row * m + c, y.to(out.dtype.element_ty), mask=c < m)


@triton.jit(do_not_specialize=["m"])
def softmax_backward(grad_in, grad, y, m, LOG: tl.constexpr, CT: tl.constexpr, COLUMNS: tl.constexpr):
    """One row per program: softmax's gradient y * (grad - sum(grad * y)), or log_softmax's
    grad - exp(y) * sum(grad), in CT."""
    row = tl.program_id(0).to(tl.int64)
    total = tl.zeros([COLUMNS], dtype=CT)
    for start in range(0, m, COLUMNS):
        c = start + tl.arange(0, COLUMNS)
        g = tl.load(grad + row * m + c, mask=c < m, other=0).to(CT)
        if LOG:
            total += g
        else:
            total += g * tl.load(y + row * m + c, mask=c < m, other=0).to(CT)
    s = tl.sum(total, axis=0)
    for start in range(0, m, COLUMNS):
        c = start + tl.arange(0, COLUMNS)
        g = tl.load(grad + row * m + c, mask=c < m, other=0).to(CT)
        v = tl.load(y + row * m + c, mask=c < m, other=0).to(CT)
        if LOG:
            result = g - tl.exp(v) * s
        else:
            result = v * (g - s)
        tl.store(grad_in + row * m + c, result.to(grad_in.dtype.element_ty), mask=c < m)


LANE_STEPS = 16  # few long rows' max/min: the COLUMNS-wide steps of one program (lane_extremes)


@triton.jit(do_not_specialize=["m", "first_stride", "chunks"])
def lane_extremes(
    lanes, x, first_of, m, first_stride, chunks, MAX: tl.constexpr, IS_FLOAT: tl.constexpr,
    COLUMNS: tl.constexpr, STEPS: tl.constexpr,
):  # fmt: skip
    """lanes[r, s, :] = row_extreme's lanes over chunk s (STEPS * COLUMNS elements) of x[r, :] (m elements): lane
    j the first of the greatest (MAX; least) of the row's first element (first_of[r * first_stride]) and the
    chunk's elements at j mod COLUMNS in order, NaN (as float("nan")) where one was met; grid (rows, chunks).
    Run again on the lanes (their chunks in order, the same first element), it gives row_extreme's lanes."""
    r = tl.program_id(0).to(tl.int64)
    s = tl.program_id(1).to(tl.int64)
    first = tl.load(first_of + r * first_stride)
    best = tl.full([COLUMNS], 0, dtype=first.dtype) + first
    nan = tl.zeros([COLUMNS], dtype=tl.int1)
    for k in range(0, STEPS):
        c = (s * STEPS + k) * COLUMNS + tl.arange(0, COLUMNS)
        best, nan = _extreme_step(x + r * m, c, m, first, best, nan, MAX, IS_FLOAT)
    if IS_FLOAT:
        best = tl.where(nan, float("nan"), best).to(first.dtype)  # only its NaN-ness read on
    tl.store(lanes + (r * chunks + s) * COLUMNS + tl.arange(0, COLUMNS), best)


@triton.jit
def lanes_extreme(out, lanes, MAX: tl.constexpr, IS_FLOAT: tl.constexpr, COLUMNS: tl.constexpr):
    """out[r] = row_extreme's result from its lanes (lanes[r, :], NaN where one was met)."""
    r = tl.program_id(0).to(tl.int64)
    best = tl.load(lanes + r * COLUMNS + tl.arange(0, COLUMNS))
    if MAX:
        top = tl.max(best, axis=0)
    else:
        top = tl.min(best, axis=0)
    if IS_FLOAT:
        nan = best != best
        top = tl.where(tl.max(nan.to(tl.int32), axis=0) != 0, float("nan"), top.to(tl.float32)).to(best.dtype)
    tl.store(out + r, top)
