"""The Triton kernels of plate's linear algebra (linalg.py): one program per matrix of a batch (per matrix and
block of right-hand-side columns for the solves), each walking its matrix (or panel: strided views) in global memory
column by column, its updates in [ROWS, COLS] tiles. A program reads back what it wrote in the previous step:
``tl.debug_barrier()`` orders those accesses (one program's, as on a GPU).

- ``lu_factor``: LAPACK's getrf in place (row-major, contiguous), partial pivoting: the pivot is the first element
  of largest magnitude in its column (idamax), the whole rows swapped (L's part too), the column below it scaled by
  the pivot's reciprocal (by the pivot itself below the smallest normal number, as getrf2), the trailing matrix
  updated by the rank-1 product; a zero pivot is skipped and its 1-based index kept in ``info`` (the first one).
- ``cholesky``: potrf's lower factor in place, right-looking by columns; a diagonal that is not positive (or NaN)
  puts its 1-based index in ``info`` (the first one) and leaves the steps after it to run on what remains.
- ``permute_rows``: getrs' row swaps (laswp) of a right-hand side, forwards or backwards.
- ``triangular_solve``: trsm of T X = B in place on X, both read through their strides (a transposed T is a swap of
  its strides), lower or upper, unit diagonal or not.
- ``householder_qr`` / ``householder_product``: geqr2 and org2r (dlarfg's reflectors, dot products in float64).
- ``symmetric_jacobi``: cyclic Jacobi sweeps of a symmetric matrix, its rotations accumulated in v."""

from __future__ import annotations

import triton
import triton.language as tl

from .kernels import machine_of  # noqa: F401 - the launch option every eager kernel takes

ROWS = 128  # the rows of a tile: a pivot search's, a trailing update's, a solve's update
COLS = 32  # the columns of a trailing update's tile
RHS_BLOCK = 32  # the right-hand-side columns one solve program takes


@triton.jit(do_not_specialize=["rows", "cols", "ld", "a_batch", "pivots_batch", "offset"])
def lu_factor(
    a, pivots, info, rows, cols, ld, a_batch, pivots_batch, offset,
    SMALLEST: tl.constexpr, ROWS: tl.constexpr, COLS: tl.constexpr,
):  # fmt: skip
    """getf2 of the panel a[b] (rows x cols, rows >= cols, row stride ld, column stride 1): pivots[b][j] and the
    first zero pivot in info[b] (where info[b] is still 0) are 1-based, plus ``offset`` (the panel's first row in
    its matrix); the swaps span the panel's columns only."""
    b = tl.program_id(0).to(tl.int64)
    m = a + b * a_batch
    lane = tl.arange(0, ROWS)
    col_lane = tl.arange(0, COLS)
    first_zero = tl.load(info + b)
    for k in range(0, cols):
        # the pivot: the first row of largest magnitude in column k, rows k..rows-1
        best = tl.full([], -1.0, dtype=tl.float64)
        best_row = k
        for r0 in range(k, rows, ROWS):
            r = r0 + lane
            column = tl.load(m + r.to(tl.int64) * ld + k, mask=r < rows, other=0)
            magnitude = tl.where(r < rows, tl.abs(column).to(tl.float64), -1.0)
            top = tl.max(magnitude, axis=0)
            where = tl.argmax(magnitude, axis=0)
            take = top > best
            best_row = tl.where(take, r0 + where, best_row)
            best = tl.where(take, top, best)
        tl.store(pivots + b * pivots_batch + k, (offset + best_row + 1).to(tl.int32))
        # swap rows k and best_row over the panel's columns
        for c0 in range(0, cols, COLS):
            c = c0 + col_lane
            inside = c < cols
            row_k = tl.load(m + k * ld + c, mask=inside, other=0)
            row_p = tl.load(m + best_row.to(tl.int64) * ld + c, mask=inside, other=0)
            tl.debug_barrier()
            tl.store(m + best_row.to(tl.int64) * ld + c, row_k, mask=inside)
            tl.store(m + k * ld + c, row_p, mask=inside)
        tl.debug_barrier()
        pivot = tl.load(m + k * ld + k)
        zero = pivot == 0
        first_zero = tl.where(zero & (first_zero == 0), offset + k + 1, first_zero)
        # the multipliers: column k below the pivot, times 1 / pivot (divided by it below SMALLEST)
        small = tl.abs(pivot) < SMALLEST
        reciprocal = 1 / pivot
        for r0 in range(k + 1, rows, ROWS):
            r = r0 + lane
            inside = (r < rows) & (~zero)
            x = tl.load(m + r.to(tl.int64) * ld + k, mask=inside, other=0)
            scaled = tl.where(small, x / pivot, x * reciprocal)
            tl.store(m + r.to(tl.int64) * ld + k, scaled, mask=inside)
        tl.debug_barrier()
        # the trailing update: a[i, j] -= a[i, k] * a[k, j] for i > k, k < j < cols
        for r0 in range(k + 1, rows, ROWS):
            r = r0 + lane
            l = tl.load(m + r.to(tl.int64) * ld + k, mask=r < rows, other=0)
            for c0 in range(k + 1, cols, COLS):
                c = c0 + col_lane
                u = tl.load(m + k * ld + c, mask=c < cols, other=0)
                at = m + r.to(tl.int64)[:, None] * ld + c[None, :]
                inside = (r < rows)[:, None] & (c < cols)[None, :]
                tile = tl.load(at, mask=inside, other=0)
                tl.store(at, tile - l[:, None] * u[None, :], mask=inside)
        tl.debug_barrier()
    tl.store(info + b, first_zero)


@triton.jit(do_not_specialize=["n", "ld", "a_batch", "offset"])
def cholesky(a, info, n, ld, a_batch, offset, ROWS: tl.constexpr, COLS: tl.constexpr):
    """potf2 of a[b]'s lower triangle (n x n, row stride ld): the first diagonal that is not positive goes to
    info[b] (where it is still 0), 1-based plus ``offset``."""
    b = tl.program_id(0).to(tl.int64)
    m = a + b * a_batch
    lane = tl.arange(0, ROWS)
    col_lane = tl.arange(0, COLS)
    first_bad = tl.load(info + b)
    for k in range(0, n):
        d = tl.load(m + k * ld + k)
        bad = ~(d > 0)  # NaN too
        first_bad = tl.where(bad & (first_bad == 0), offset + k + 1, first_bad)
        root = tl.sqrt(d)
        tl.store(m + k * ld + k, root)
        for r0 in range(k + 1, n, ROWS):
            rows = r0 + lane
            x = tl.load(m + rows.to(tl.int64) * ld + k, mask=rows < n, other=0)
            tl.store(m + rows.to(tl.int64) * ld + k, x / root, mask=rows < n)
        tl.debug_barrier()
        # the trailing lower triangle: a[i, j] -= a[i, k] * a[j, k] for i >= j > k
        for r0 in range(k + 1, n, ROWS):
            rows = r0 + lane
            li = tl.load(m + rows.to(tl.int64) * ld + k, mask=rows < n, other=0)
            for c0 in range(k + 1, r0 + ROWS, COLS):
                cols = c0 + col_lane
                lj = tl.load(m + cols.to(tl.int64) * ld + k, mask=cols < n, other=0)
                at = m + rows.to(tl.int64)[:, None] * ld + cols[None, :]
                inside = (rows < n)[:, None] & (cols[None, :] <= rows[:, None])
                tile = tl.load(at, mask=inside, other=0)
                tl.store(at, tile - li[:, None] * lj[None, :], mask=inside)
        tl.debug_barrier()
    tl.store(info + b, first_bad)


@triton.jit(do_not_specialize=["n", "nrhs", "x_batch", "x_row", "x_col", "pivots_batch", "base"])
def permute_rows(
    x, pivots, n, nrhs, x_batch, x_row, x_col, pivots_batch, base, BACKWARD: tl.constexpr, BLOCK: tl.constexpr
):  # fmt: skip
    """x[b] (rows at x_row apart, columns at x_col): rows i and pivots[b][i] - 1 - base swapped for i = 0..n-1
    (BACKWARD: n-1..0)."""
    b = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    inside = cols < nrhs
    m = x + b * x_batch + cols.to(tl.int64) * x_col
    for step in range(0, n):
        if BACKWARD:
            i = n - 1 - step
        else:
            i = step
        i = i.to(tl.int64)
        p = tl.load(pivots + b * pivots_batch + i).to(tl.int64) - 1 - base
        row_i = tl.load(m + i * x_row, mask=inside, other=0)
        row_p = tl.load(m + p * x_row, mask=inside, other=0)
        tl.debug_barrier()
        tl.store(m + p * x_row, row_i, mask=inside)
        tl.store(m + i * x_row, row_p, mask=inside)
        tl.debug_barrier()


@triton.jit(do_not_specialize=["n", "nrhs", "t_batch", "t_row", "t_col", "x_batch", "x_row", "x_col"])
def triangular_solve(
    t, x, n, nrhs, t_batch, t_row, t_col, x_batch, x_row, x_col,
    UPPER: tl.constexpr, UNIT: tl.constexpr, ROWS: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    """x[b] (n x nrhs at x + b * x_batch + i * x_row + j * x_col) := T^-1 x[b], T[i, j] at t + b * t_batch +
    i * t_row + j * t_col: column by column (forward for a lower T, backward for an upper one), each solved row
    divided by its diagonal (UNIT: not) and subtracted from the rows still to solve."""
    b = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    inside = cols < nrhs
    m = x + b * x_batch
    column_at = cols.to(tl.int64) * x_col
    tm = t + b * t_batch
    lane = tl.arange(0, ROWS)
    for step in range(0, n):
        if UPPER:
            k = n - 1 - step
        else:
            k = step
        k = k.to(tl.int64)
        row = tl.load(m + k * x_row + column_at, mask=inside, other=0)
        if not UNIT:
            row = row / tl.load(tm + k * t_row + k * t_col)
            tl.store(m + k * x_row + column_at, row, mask=inside)
        tl.debug_barrier()
        # the rows still to solve: k+1..n-1 (lower) or 0..k-1 (upper)
        if UPPER:
            first = 0
            last = k
        else:
            first = k + 1
            last = n
        for r0 in range(first, last, ROWS):
            rows = (r0 + lane).to(tl.int64)
            live = rows < last
            coefficient = tl.load(tm + rows * t_row + k * t_col, mask=live, other=0)
            at = m + rows[:, None] * x_row + column_at[None, :]
            both = live[:, None] & inside[None, :]
            tile = tl.load(at, mask=both, other=0)
            tl.store(at, tile - coefficient[:, None] * row[None, :], mask=both)
        tl.debug_barrier()


@triton.jit(do_not_specialize=["m", "n", "a_batch", "tau_batch"])
def householder_qr(a, tau, m, n, a_batch, tau_batch, ROWS: tl.constexpr, COLS: tl.constexpr):
    """geqr2 of a[b] (m x n, row-major, a_batch apart) in place: for each column k < min(m, n) dlarfg's reflector
    H = I - tau v v^T (v[k] = 1, v below k kept under the diagonal, beta = -sign(alpha) ||(alpha, x)|| on it; tau 0
    where x is 0), then H applied to the columns on its right."""
    b = tl.program_id(0).to(tl.int64)
    mat = a + b * a_batch
    lane = tl.arange(0, ROWS)
    col_lane = tl.arange(0, COLS)
    for k in range(0, tl.minimum(m, n)):
        alpha = tl.load(mat + k * n + k)
        total = tl.zeros([ROWS], dtype=tl.float64)
        for r0 in range(k + 1, m, ROWS):
            r = r0 + lane
            x = tl.load(mat + r.to(tl.int64) * n + k, mask=r < m, other=0).to(tl.float64)
            total += x * x
        xnorm2 = tl.sum(total, axis=0)
        norm = tl.sqrt(alpha.to(tl.float64) * alpha.to(tl.float64) + xnorm2)
        beta = tl.where(alpha >= 0, -norm, norm).to(alpha.dtype)
        trivial = xnorm2 == 0
        t = tl.where(trivial, 0.0, (beta - alpha) / beta)
        scale = tl.where(trivial, 1.0, 1 / (alpha - beta))
        for r0 in range(k + 1, m, ROWS):
            r = r0 + lane
            inside = r < m
            x = tl.load(mat + r.to(tl.int64) * n + k, mask=inside, other=0)
            tl.store(mat + r.to(tl.int64) * n + k, x * scale, mask=inside)
        tl.store(mat + k * n + k, tl.where(trivial, alpha, beta))
        tl.store(tau + b * tau_batch + k, t)
        tl.debug_barrier()
        # the columns on the right: c -= tau v (v^T c)
        for c0 in range(k + 1, n, COLS):
            c = c0 + col_lane
            live = c < n
            w = tl.load(mat + k * n + c, mask=live, other=0).to(tl.float64)  # v[k] = 1
            for r0 in range(k + 1, m, ROWS):
                r = r0 + lane
                inside = (r < m)[:, None] & live[None, :]
                v = tl.load(mat + r.to(tl.int64) * n + k, mask=r < m, other=0).to(tl.float64)
                tile = tl.load(mat + r.to(tl.int64)[:, None] * n + c[None, :], mask=inside, other=0).to(tl.float64)
                w += tl.sum(v[:, None] * tile, axis=0)
            tw = t.to(tl.float64) * w
            top = tl.load(mat + k * n + c, mask=live, other=0)
            tl.store(mat + k * n + c, (top - tw).to(top.dtype), mask=live)
            for r0 in range(k + 1, m, ROWS):
                r = r0 + lane
                inside = (r < m)[:, None] & live[None, :]
                v = tl.load(mat + r.to(tl.int64) * n + k, mask=r < m, other=0)
                at = mat + r.to(tl.int64)[:, None] * n + c[None, :]
                tile = tl.load(at, mask=inside, other=0)
                tl.store(at, (tile - v[:, None] * tw.to(tile.dtype)[None, :]), mask=inside)
        tl.debug_barrier()


@triton.jit(do_not_specialize=["m", "n", "q_cols", "reflectors", "a_batch", "a_row", "a_col", "tau_batch"])
def householder_product(
    q, a, tau, m, q_cols, reflectors, a_batch, a_row, a_col, tau_batch, ROWS: tl.constexpr, COLS: tl.constexpr
):  # fmt: skip
    """orgqr / org2r: q[b] (m x q_cols, row-major, holding the identity's first columns) := H_0 ... H_{r-1} q[b],
    the reflectors' v below the diagonal of a[b] (strided), v[i] = 1, applied last first."""
    b = tl.program_id(0).to(tl.int64)
    qm = q + b * m * q_cols
    am = a + b * a_batch
    lane = tl.arange(0, ROWS)
    col_lane = tl.arange(0, COLS)
    for step in range(0, reflectors):
        i = (reflectors - 1 - step).to(tl.int64)
        t = tl.load(tau + b * tau_batch + i).to(tl.float64)
        for c0 in range(0, q_cols, COLS):
            c = c0 + col_lane
            live = c < q_cols
            w = tl.load(qm + i * q_cols + c, mask=live, other=0).to(tl.float64)
            for r0 in range(i + 1, m, ROWS):
                r = (r0 + lane).to(tl.int64)
                v = tl.load(am + r * a_row + i * a_col, mask=r < m, other=0).to(tl.float64)
                tile = tl.load(qm + r[:, None] * q_cols + c[None, :], mask=(r < m)[:, None] & live[None, :], other=0)
                w += tl.sum(v[:, None] * tile.to(tl.float64), axis=0)
            tw = t * w
            top = tl.load(qm + i * q_cols + c, mask=live, other=0)
            tl.store(qm + i * q_cols + c, (top - tw).to(top.dtype), mask=live)
            for r0 in range(i + 1, m, ROWS):
                r = (r0 + lane).to(tl.int64)
                inside = (r < m)[:, None] & live[None, :]
                v = tl.load(am + r * a_row + i * a_col, mask=r < m, other=0)
                at = qm + r[:, None] * q_cols + c[None, :]
                tile = tl.load(at, mask=inside, other=0)
                tl.store(at, tile - v[:, None] * tw.to(tile.dtype)[None, :], mask=inside)
        tl.debug_barrier()


@triton.jit(do_not_specialize=["n", "sweeps"])
def symmetric_jacobi(a, v, n, sweeps, N: tl.constexpr):
    """Cyclic Jacobi on the symmetric a[b] (n x n, row-major, n <= N): ``sweeps`` sweeps over p < q in row order. An
    a[p, q] too small to change a[p, p] or a[q, q] by 100 times itself is set to 0 (Numerical Recipes' test: no
    rotation); any other is zeroed by the rotation of Rutishauser's formulas (t = sign(theta) / (|theta| +
    sqrt(theta^2 + 1)), theta = (a_qq - a_pp) / 2 a_pq), applied to columns then rows p, q of a and to columns p, q
    of v[b] (which starts as the identity). The eigenvalues end on a's diagonal, the eigenvectors in v's columns."""
    b = tl.program_id(0).to(tl.int64)
    m = a + b * n * n
    vm = v + b * n * n
    k = tl.arange(0, N)
    inside = k < n
    for _sweep in range(0, sweeps):
        for p in range(0, n - 1):
            for q in range(p + 1, n):
                apq = tl.load(m + p * n + q)
                app = tl.load(m + p * n + p)
                aqq = tl.load(m + q * n + q)
                g = 100 * tl.abs(apq)
                negligible = (tl.abs(app) + g == tl.abs(app)) & (tl.abs(aqq) + g == tl.abs(aqq))
                if negligible:
                    tl.store(m + p * n + q, tl.zeros_like(apq))
                    tl.store(m + q * n + p, tl.zeros_like(apq))
                else:
                    theta = (aqq - app) / (2 * apq)
                    sign = tl.where(theta >= 0, 1.0, -1.0)
                    t = sign / (tl.abs(theta) + tl.sqrt(theta * theta + 1))
                    c = 1 / tl.sqrt(t * t + 1)
                    s = t * c
                    # columns p, q of a and v
                    akp = tl.load(m + k * n + p, mask=inside, other=0)
                    akq = tl.load(m + k * n + q, mask=inside, other=0)
                    vkp = tl.load(vm + k * n + p, mask=inside, other=0)
                    vkq = tl.load(vm + k * n + q, mask=inside, other=0)
                    tl.debug_barrier()
                    tl.store(m + k * n + p, c * akp - s * akq, mask=inside)
                    tl.store(m + k * n + q, s * akp + c * akq, mask=inside)
                    tl.store(vm + k * n + p, c * vkp - s * vkq, mask=inside)
                    tl.store(vm + k * n + q, s * vkp + c * vkq, mask=inside)
                    tl.debug_barrier()
                    # rows p, q of a
                    apk = tl.load(m + p * n + k, mask=inside, other=0)
                    aqk = tl.load(m + q * n + k, mask=inside, other=0)
                    tl.debug_barrier()
                    tl.store(m + p * n + k, c * apk - s * aqk, mask=inside)
                    tl.store(m + q * n + k, s * apk + c * aqk, mask=inside)
                    tl.debug_barrier()
                    tl.store(m + p * n + q, tl.zeros_like(apq))
                    tl.store(m + q * n + p, tl.zeros_like(apq))
                tl.debug_barrier()
