"""The Triton kernels of plate's linear algebra (linalg.py): one program per matrix of a batch (per matrix and
block of right-hand-side columns for the solves), each walking its matrix in global memory column by column, its
updates in [BLOCK, BLOCK] tiles. A program reads back what it wrote in the previous step: ``tl.debug_barrier()``
orders those accesses (one program's, as on a GPU).

- ``lu_factor``: LAPACK's getrf in place (row-major, contiguous), partial pivoting: the pivot is the first element
  of largest magnitude in its column (idamax), the whole rows swapped (L's part too), the column below it scaled by
  the pivot's reciprocal (by the pivot itself below the smallest normal number, as getrf2), the trailing matrix
  updated by the rank-1 product; a zero pivot is skipped and its 1-based index kept in ``info`` (the first one).
- ``cholesky``: potrf's lower factor in place, right-looking by columns; a diagonal that is not positive (or NaN)
  puts its 1-based index in ``info`` (the first one) and leaves the steps after it to run on what remains.
- ``permute_rows``: getrs' row swaps (laswp) of a right-hand side, forwards or backwards.
- ``triangular_solve``: trsm of T X = B in place on X (contiguous), T read through its strides (a transposed T is a
  swap of its strides), lower or upper, unit diagonal or not."""

from __future__ import annotations

import triton
import triton.language as tl

from .kernels import machine_of  # noqa: F401 - the launch option every eager kernel takes

BLOCK = 32  # the tiles' side: rows x columns of a trailing update, rows of a pivot search
RHS_BLOCK = 32  # the right-hand-side columns one solve program takes


@triton.jit(do_not_specialize=["n"])
def lu_factor(a, pivots, info, n, SMALLEST: tl.constexpr, BLOCK: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    m = a + b * n * n
    lane = tl.arange(0, BLOCK)
    first_zero = tl.zeros([], dtype=tl.int32)
    for k in range(0, n):
        # the pivot: the first row of largest magnitude in column k, rows k..n-1
        best = tl.full([], -1.0, dtype=tl.float64)
        best_row = k
        for r0 in range(k, n, BLOCK):
            rows = r0 + lane
            column = tl.load(m + rows.to(tl.int64) * n + k, mask=rows < n, other=0)
            magnitude = tl.where(rows < n, tl.abs(column).to(tl.float64), -1.0)
            top = tl.max(magnitude, axis=0)
            where = tl.argmax(magnitude, axis=0)
            take = top > best
            best_row = tl.where(take, r0 + where, best_row)
            best = tl.where(take, top, best)
        tl.store(pivots + b * n + k, (best_row + 1).to(tl.int32))
        # swap rows k and best_row over every column
        for c0 in range(0, n, BLOCK):
            cols = c0 + lane
            inside = cols < n
            row_k = tl.load(m + k * n + cols, mask=inside, other=0)
            row_p = tl.load(m + best_row.to(tl.int64) * n + cols, mask=inside, other=0)
            tl.debug_barrier()
            tl.store(m + best_row.to(tl.int64) * n + cols, row_k, mask=inside)
            tl.store(m + k * n + cols, row_p, mask=inside)
        tl.debug_barrier()
        pivot = tl.load(m + k * n + k)
        zero = pivot == 0
        first_zero = tl.where(zero & (first_zero == 0), k + 1, first_zero)
        # the multipliers: column k below the pivot, times 1 / pivot (divided by it below SMALLEST)
        small = tl.abs(pivot) < SMALLEST
        reciprocal = 1 / pivot
        for r0 in range(k + 1, n, BLOCK):
            rows = r0 + lane
            inside = (rows < n) & (~zero)
            x = tl.load(m + rows.to(tl.int64) * n + k, mask=inside, other=0)
            scaled = tl.where(small, x / pivot, x * reciprocal)
            tl.store(m + rows.to(tl.int64) * n + k, scaled, mask=inside)
        tl.debug_barrier()
        # the trailing update: a[i, j] -= a[i, k] * a[k, j] for i, j > k
        for r0 in range(k + 1, n, BLOCK):
            rows = r0 + lane
            l = tl.load(m + rows.to(tl.int64) * n + k, mask=rows < n, other=0)
            for c0 in range(k + 1, n, BLOCK):
                cols = c0 + lane
                u = tl.load(m + k * n + cols, mask=cols < n, other=0)
                at = m + rows.to(tl.int64)[:, None] * n + cols[None, :]
                inside = (rows < n)[:, None] & (cols < n)[None, :]
                tile = tl.load(at, mask=inside, other=0)
                tl.store(at, tile - l[:, None] * u[None, :], mask=inside)
        tl.debug_barrier()
    tl.store(info + b, first_zero)


@triton.jit(do_not_specialize=["n"])
def cholesky(a, info, n, BLOCK: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    m = a + b * n * n
    lane = tl.arange(0, BLOCK)
    first_bad = tl.zeros([], dtype=tl.int32)
    for k in range(0, n):
        d = tl.load(m + k * n + k)
        bad = ~(d > 0)  # NaN too
        first_bad = tl.where(bad & (first_bad == 0), k + 1, first_bad)
        root = tl.sqrt(d)
        tl.store(m + k * n + k, root)
        for r0 in range(k + 1, n, BLOCK):
            rows = r0 + lane
            x = tl.load(m + rows.to(tl.int64) * n + k, mask=rows < n, other=0)
            tl.store(m + rows.to(tl.int64) * n + k, x / root, mask=rows < n)
        tl.debug_barrier()
        # the trailing lower triangle: a[i, j] -= a[i, k] * a[j, k] for i >= j > k
        for r0 in range(k + 1, n, BLOCK):
            rows = r0 + lane
            li = tl.load(m + rows.to(tl.int64) * n + k, mask=rows < n, other=0)
            for c0 in range(k + 1, r0 + BLOCK, BLOCK):
                cols = c0 + lane
                lj = tl.load(m + cols.to(tl.int64) * n + k, mask=cols < n, other=0)
                at = m + rows.to(tl.int64)[:, None] * n + cols[None, :]
                inside = (rows < n)[:, None] & (cols[None, :] <= rows[:, None])
                tile = tl.load(at, mask=inside, other=0)
                tl.store(at, tile - li[:, None] * lj[None, :], mask=inside)
        tl.debug_barrier()
    tl.store(info + b, first_bad)


@triton.jit(do_not_specialize=["n", "nrhs", "pivots_batch"])
def permute_rows(x, pivots, n, nrhs, pivots_batch, BACKWARD: tl.constexpr, BLOCK: tl.constexpr):
    """x[b] (n x nrhs, contiguous): rows i and pivots[i] - 1 swapped for i = 0..n-1 (BACKWARD: n-1..0)."""
    b = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    inside = cols < nrhs
    m = x + b * n * nrhs
    for step in range(0, n):
        if BACKWARD:
            i = n - 1 - step
        else:
            i = step
        i = i.to(tl.int64)
        p = tl.load(pivots + b * pivots_batch + i).to(tl.int64) - 1
        row_i = tl.load(m + i * nrhs + cols, mask=inside, other=0)
        row_p = tl.load(m + p * nrhs + cols, mask=inside, other=0)
        tl.debug_barrier()
        tl.store(m + p * nrhs + cols, row_i, mask=inside)
        tl.store(m + i * nrhs + cols, row_p, mask=inside)
        tl.debug_barrier()


@triton.jit(do_not_specialize=["n", "nrhs", "t_batch", "t_row", "t_col"])
def triangular_solve(
    t, x, n, nrhs, t_batch, t_row, t_col, UPPER: tl.constexpr, UNIT: tl.constexpr, BLOCK: tl.constexpr
):  # fmt: skip
    """x[b] (n x nrhs, contiguous) := T^-1 x[b], T[i, j] at t + b * t_batch + i * t_row + j * t_col: column by column
    (forward for a lower T, backward for an upper one), each solved row divided by its diagonal (UNIT: not) and
    subtracted from the rows still to solve."""
    b = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    inside = cols < nrhs
    m = x + b * n * nrhs
    tm = t + b * t_batch
    lane = tl.arange(0, BLOCK)
    for step in range(0, n):
        if UPPER:
            k = n - 1 - step
        else:
            k = step
        k = k.to(tl.int64)
        row = tl.load(m + k * nrhs + cols, mask=inside, other=0)
        if not UNIT:
            row = row / tl.load(tm + k * t_row + k * t_col)
            tl.store(m + k * nrhs + cols, row, mask=inside)
        tl.debug_barrier()
        # the rows still to solve: k+1..n-1 (lower) or 0..k-1 (upper)
        if UPPER:
            first = 0
            last = k
        else:
            first = k + 1
            last = n
        for r0 in range(first, last, BLOCK):
            rows = (r0 + lane).to(tl.int64)
            live = rows < last
            coefficient = tl.load(tm + rows * t_row + k * t_col, mask=live, other=0)
            at = m + rows[:, None] * nrhs + cols[None, :]
            both = live[:, None] & inside[None, :]
            tile = tl.load(at, mask=both, other=0)
            tl.store(at, tile - coefficient[:, None] * row[None, :], mask=both)
        tl.debug_barrier()
