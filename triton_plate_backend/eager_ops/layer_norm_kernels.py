"""The Triton kernels of layer norm, forward and backward (layer_norm.py), over a contiguous (rows, n)
view of the input: n the normalized elements of a row.

They compute in CT (float32 for fp16/bf16, as CUDA's kernels) in a fixed order and round once when they
store, so a result has the same bits on every host CPU. The statistics are two-pass (mean, then the
mean of squared deviations), biased as torch's."""

from __future__ import annotations

import triton
import triton.language as tl

from .kernels import machine_of  # noqa: F401 - the launch option every eager kernel takes

BLOCK = 512


@triton.jit
def _row_mean(x, row, n, CT: tl.constexpr, BLOCK: tl.constexpr):
    total = tl.zeros([BLOCK], dtype=CT)
    for start in range(0, n, BLOCK):
        c = start + tl.arange(0, BLOCK)
        total += tl.load(x + row * n + c, mask=c < n, other=0).to(CT)
    return tl.sum(total, axis=0) / n


@triton.jit(do_not_specialize=["n", "eps"])
def forward(
    out, mean, rstd, x, w, b, n, eps,
    HAS_W: tl.constexpr, HAS_B: tl.constexpr, CT: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    """One row per program: out = (x - mean) * rstd * w + b, rstd = 1 / sqrt(var + eps)."""
    row = tl.program_id(0).to(tl.int64)
    mu = _row_mean(x, row, n, CT, BLOCK)
    total = tl.zeros([BLOCK], dtype=CT)
    for start in range(0, n, BLOCK):
        c = start + tl.arange(0, BLOCK)
        d = tl.where(c < n, tl.load(x + row * n + c, mask=c < n, other=0).to(CT) - mu, 0.0)
        total += d * d
    r = 1.0 / tl.sqrt_rn(tl.sum(total, axis=0) / n + eps)
    tl.store(mean + row, mu.to(mean.dtype.element_ty))
    tl.store(rstd + row, r.to(rstd.dtype.element_ty))
    for start in range(0, n, BLOCK):
        c = start + tl.arange(0, BLOCK)
        y = (tl.load(x + row * n + c, mask=c < n, other=0).to(CT) - mu) * r
        if HAS_W:
            y = y * tl.load(w + c, mask=c < n, other=0).to(CT)
        if HAS_B:
            y = y + tl.load(b + c, mask=c < n, other=0).to(CT)
        tl.store(out + row * n + c, y.to(out.dtype.element_ty), mask=c < n)


@triton.jit
def _g_and_xhat(dy, x, w, row, n, c, mu, r, HAS_W: tl.constexpr, CT: tl.constexpr):
    """Columns c of a row: g = dy * w and xhat = (x - mean) * rstd, in the accumulation type."""
    g = tl.load(dy + row * n + c, mask=c < n, other=0).to(CT)
    if HAS_W:
        g = g * tl.load(w + c, mask=c < n, other=0).to(CT)
    xhat = (tl.load(x + row * n + c, mask=c < n, other=0).to(CT) - mu) * r
    return g, xhat


@triton.jit(do_not_specialize=["n"])
def backward_input(
    grad_in, dy, x, mean, rstd, w, n, HAS_W: tl.constexpr, CT: tl.constexpr, BLOCK: tl.constexpr
):  # fmt: skip
    """One row per program: with xhat = (x - mean) * rstd and g = dy * w,
    grad_in = rstd * (g - mean(g) - xhat * mean(g * xhat))."""
    row = tl.program_id(0).to(tl.int64)
    mu = tl.load(mean + row).to(CT)
    r = tl.load(rstd + row).to(CT)
    sum_g = tl.zeros([BLOCK], dtype=CT)
    sum_gx = tl.zeros([BLOCK], dtype=CT)
    for start in range(0, n, BLOCK):
        c = start + tl.arange(0, BLOCK)
        g, xhat = _g_and_xhat(dy, x, w, row, n, c, mu, r, HAS_W, CT)
        sum_g += g
        sum_gx += tl.where(c < n, g * xhat, 0.0)
    mean_g = tl.sum(sum_g, axis=0) / n
    mean_gx = tl.sum(sum_gx, axis=0) / n
    for start in range(0, n, BLOCK):
        c = start + tl.arange(0, BLOCK)
        g, xhat = _g_and_xhat(dy, x, w, row, n, c, mu, r, HAS_W, CT)
        result = r * (g - mean_g - xhat * mean_gx)
        tl.store(grad_in + row * n + c, result.to(grad_in.dtype.element_ty), mask=c < n)


@triton.jit(do_not_specialize=["rows", "n"])
def backward_params(
    grad_w, grad_b, dy, x, mean, rstd, rows, n,
    WANT_W: tl.constexpr, WANT_B: tl.constexpr, CT: tl.constexpr, ROWS: tl.constexpr, COLUMNS: tl.constexpr,
):  # fmt: skip
    """COLUMNS columns per program, summed over every row, ROWS rows a step:
    grad_w[j] = sum_i dy[i, j] * xhat[i, j], grad_b[j] = sum_i dy[i, j]."""
    c = tl.program_id(0).to(tl.int64) * COLUMNS + tl.arange(0, COLUMNS)
    live = c < n
    total_w = tl.zeros([ROWS, COLUMNS], dtype=CT)
    total_b = tl.zeros([ROWS, COLUMNS], dtype=CT)
    for start in range(0, rows, ROWS):
        r = start + tl.arange(0, ROWS).to(tl.int64)
        inside = (r < rows)[:, None] & live[None, :]
        g = tl.load(dy + r[:, None] * n + c[None, :], mask=inside, other=0).to(CT)
        if WANT_W:
            mu = tl.load(mean + r, mask=r < rows, other=0).to(CT)
            rs = tl.load(rstd + r, mask=r < rows, other=0).to(CT)
            v = tl.load(x + r[:, None] * n + c[None, :], mask=inside, other=0).to(CT)
            total_w += tl.where(inside, g * ((v - mu[:, None]) * rs[:, None]), 0.0)
        total_b += g
    if WANT_W:
        tl.store(grad_w + c, tl.sum(total_w, axis=0).to(grad_w.dtype.element_ty), mask=live)
    if WANT_B:
        tl.store(grad_b + c, tl.sum(total_b, axis=0).to(grad_b.dtype.element_ty), mask=live)
