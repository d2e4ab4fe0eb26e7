"""Layer normalisation, forward and backward.

Forward: one program per row computes the row's mean and 1/std in fp32 and writes y, mean, rstd.
Backward: each program takes a strided set of rows, writes their dx, and sums its share of dw and db
in registers; it then adds those partial sums into one of SLOTS rows of a partial-sum buffer,
guarded by a spin lock per slot (tl.atomic_cas to take it, tl.atomic_xchg to give it back). A final
kernel reduces the SLOTS rows to dw and db.

    python examples/layer_norm.py [--case bf16]
"""

from __future__ import annotations

import sys

import torch
import triton
import triton.language as tl
from _common import Check, check, dtype_of, example_main

CASES = ("fp32", "fp16", "bf16")
ROWS, COLS = 64, 100
EPS = 1e-5
BACKWARD_PROGRAMS = 16  # more programs than slots: the locks are contended
SLOTS = 4


@triton.jit
def layer_norm_forward_kernel(
    x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, row_stride, n_cols, eps, BLOCK_COLS: tl.constexpr
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_COLS)
    in_row = cols < n_cols
    x = tl.load(x_ptr + row * row_stride + cols, mask=in_row, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    centred = tl.where(in_row, x - mean, 0.0)
    rstd = 1 / tl.sqrt(tl.sum(centred * centred, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=in_row).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=in_row).to(tl.float32)
    y = centred * rstd * w + b
    tl.store(y_ptr + row * row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=in_row)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)


@triton.jit
def layer_norm_backward_kernel(
    dy_ptr,
    x_ptr,
    w_ptr,
    mean_ptr,
    rstd_ptr,
    dx_ptr,
    partial_dw_ptr,
    partial_db_ptr,
    locks_ptr,
    row_stride,
    n_rows,
    n_cols,
    SLOTS: tl.constexpr,
    BLOCK_COLS: tl.constexpr,
):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_COLS)
    in_row = cols < n_cols
    w = tl.load(w_ptr + cols, mask=in_row).to(tl.float32)
    dw = tl.zeros((BLOCK_COLS,), dtype=tl.float32)
    db = tl.zeros((BLOCK_COLS,), dtype=tl.float32)
    for row in range(pid, n_rows, tl.num_programs(0)):
        x = tl.load(x_ptr + row * row_stride + cols, mask=in_row, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + row * row_stride + cols, mask=in_row, other=0.0).to(tl.float32)
        mean = tl.load(mean_ptr + row)
        rstd = tl.load(rstd_ptr + row)
        x_hat = tl.where(in_row, (x - mean) * rstd, 0.0)
        w_dy = w * dy
        # d/dx of (x - mean) * rstd: remove the mean of w*dy and its projection on x_hat
        proj = tl.sum(x_hat * w_dy, axis=0) / n_cols
        shift = tl.sum(w_dy, axis=0) / n_cols
        dx = (w_dy - (x_hat * proj + shift)) * rstd
        tl.store(dx_ptr + row * row_stride + cols, dx.to(dx_ptr.dtype.element_ty), mask=in_row)
        dw += dy * x_hat
        db += dy

    # add this program's share into its slot of the partial-sum buffer, one program per slot at a time
    slot = pid % SLOTS
    lock = locks_ptr + slot
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    slot_cols = slot * n_cols + cols
    tl.store(partial_dw_ptr + slot_cols, tl.load(partial_dw_ptr + slot_cols, mask=in_row) + dw, mask=in_row)
    tl.store(partial_db_ptr + slot_cols, tl.load(partial_db_ptr + slot_cols, mask=in_row) + db, mask=in_row)
    tl.atomic_xchg(lock, 0)


@triton.jit
def sum_slots_kernel(
    partial_dw_ptr, partial_db_ptr, dw_ptr, db_ptr, n_cols, SLOTS: tl.constexpr, BLOCK_COLS: tl.constexpr
):
    cols = tl.program_id(0) * BLOCK_COLS + tl.arange(0, BLOCK_COLS)
    slots = tl.arange(0, SLOTS)
    where = slots[:, None] * n_cols + cols[None, :]
    in_bounds = (cols < n_cols)[None, :]
    dw = tl.sum(tl.load(partial_dw_ptr + where, mask=in_bounds, other=0.0), axis=0)
    db = tl.sum(tl.load(partial_db_ptr + where, mask=in_bounds, other=0.0), axis=0)
    tl.store(dw_ptr + cols, dw.to(dw_ptr.dtype.element_ty), mask=cols < n_cols)
    tl.store(db_ptr + cols, db.to(db_ptr.dtype.element_ty), mask=cols < n_cols)


def layer_norm_forward(x, w, b, eps=EPS):
    rows, cols = x.shape
    y = torch.empty_like(x)
    mean = torch.empty(rows, dtype=torch.float32, device=x.device)
    rstd = torch.empty(rows, dtype=torch.float32, device=x.device)
    block = triton.next_power_of_2(cols)
    layer_norm_forward_kernel[(rows,)](x, y, w, b, mean, rstd, x.stride(0), cols, eps, BLOCK_COLS=block)
    return y, mean, rstd


def layer_norm_backward(dy, x, w, mean, rstd, programs=BACKWARD_PROGRAMS, slots=SLOTS):
    rows, cols = x.shape
    dx = torch.empty_like(x)
    partial_dw = torch.zeros((slots, cols), dtype=torch.float32, device=x.device)
    partial_db = torch.zeros((slots, cols), dtype=torch.float32, device=x.device)
    locks = torch.zeros(slots, dtype=torch.int32, device=x.device)
    block = triton.next_power_of_2(cols)
    layer_norm_backward_kernel[(min(programs, rows),)](
        dy, x, w, mean, rstd, dx, partial_dw, partial_db, locks, x.stride(0), rows, cols, SLOTS=slots, BLOCK_COLS=block
    )
    dw, db = torch.empty_like(w), torch.empty_like(w)
    sum_block = 32
    sum_slots_kernel[(triton.cdiv(cols, sum_block),)](
        partial_dw, partial_db, dw, db, cols, SLOTS=slots, BLOCK_COLS=sum_block
    )
    return dx, dw, db


def run(case: str, device: torch.device) -> list[Check]:
    dtype = dtype_of(case)
    g = torch.Generator().manual_seed(4)
    x = (torch.randn(ROWS, COLS, generator=g) * 2 + 0.5).to(dtype)
    w = (torch.rand(COLS, generator=g) + 0.5).to(dtype)
    b = torch.randn(COLS, generator=g).to(dtype)
    dy = torch.randn(ROWS, COLS, generator=g).to(dtype)

    xd, wd, bd, dyd = (t.to(device) for t in (x, w, b, dy))
    y, mean, rstd = layer_norm_forward(xd, wd, bd)
    dx, dw, db = layer_norm_backward(dyd, xd, wd, mean, rstd)

    xr, wr, br = (t.float().requires_grad_() for t in (x, w, b))
    yr = torch.nn.functional.layer_norm(xr, (COLS,), wr, br, EPS)
    yr.backward(dy.float())
    mean_r = x.float().mean(dim=1)
    rstd_r = torch.rsqrt(x.float().var(dim=1, unbiased=False) + EPS)
    return [
        check(f"y {case}", y, yr.detach().to(dtype)),
        check("mean", mean, mean_r),
        check("rstd", rstd, rstd_r),
        check(f"dx {case}", dx, xr.grad.to(dtype)),
        check(f"dw {case} (lock-protected partial sums)", dw, wr.grad.to(dtype), scale=4),
        check(f"db {case} (lock-protected partial sums)", db, br.grad.to(dtype), scale=4),
    ]


def main(argv=None) -> int:
    return example_main(__doc__, CASES, run, argv)


if __name__ == "__main__":
    sys.exit(main())
