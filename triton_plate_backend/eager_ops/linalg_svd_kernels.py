"""The Triton kernel of plate's SVD (linalg_svd.py): one-sided Jacobi (Hestenes) on the columns of one matrix a
program, the columns stored as the rows of w (contiguous: a column's loads are one stride-1 walk).

- ``one_sided_jacobi``: cyclic sweeps over the column pairs p < q; a pair whose cosine |w_p . w_q| / (||w_p||
  ||w_q||) is above ``tolerance`` is rotated to orthogonality (Rutishauser's formulas on the 2 x 2 Gram matrix, in
  float64), the same rotation applied to the rows p, q of v (VECTORS: v starts as the identity and ends as V^T).
  Sweeps go on while one of them rotated a pair, at most ``max_sweeps``. The column norms of w are then the
  singular values, w_j / ||w_j|| the left singular vectors."""

from __future__ import annotations

import triton
import triton.language as tl

from .kernels import machine_of  # noqa: F401 - the launch option every eager kernel takes

ROWS = 128  # the most elements of a column one step of a dot product or a rotation takes
SHORT_ROWS = 16  # columns up to this long (and V's rows up to it) take one kernel: few compiled variants


@triton.jit
def _rotate(p_ptrs, q_ptrs, mask, c, s):
    """Rows p and q <- (c p - s q, s p + c q) in float64, stored in their own dtype (both read before either is
    written: the barrier keeps a program's lanes from storing over what another still reads)."""
    x_p = tl.load(p_ptrs, mask=mask, other=0)
    x_q = tl.load(q_ptrs, mask=mask, other=0)
    tl.debug_barrier()
    tl.store(p_ptrs, (c * x_p.to(tl.float64) - s * x_q.to(tl.float64)).to(x_p.dtype), mask=mask)
    tl.store(q_ptrs, (s * x_p.to(tl.float64) + c * x_q.to(tl.float64)).to(x_p.dtype), mask=mask)


@triton.jit(do_not_specialize=["m", "n", "max_sweeps", "tolerance"])
def one_sided_jacobi(
    w, v, m, n, max_sweeps, tolerance, VECTORS: tl.constexpr, ROWS: tl.constexpr, N: tl.constexpr
):  # fmt: skip
    """w[b]: n columns of length m (row-major (n, m), n * m apart); v[b]: (n, n) row-major (n <= N)."""
    b = tl.program_id(0).to(tl.int64)
    wm = w + b * n * m
    vm = v + b * n * n
    lane = tl.arange(0, ROWS)
    k = tl.arange(0, N)
    across = k < n
    sweep = 0
    rotated = 1
    while (sweep < max_sweeps) & (rotated > 0):
        rotated = 0
        for p in range(0, n - 1):
            for q in range(p + 1, n):
                alpha_acc = tl.zeros([ROWS], dtype=tl.float64)
                beta_acc = tl.zeros([ROWS], dtype=tl.float64)
                gamma_acc = tl.zeros([ROWS], dtype=tl.float64)
                for r0 in range(0, m, ROWS):
                    r = r0 + lane
                    inside = r < m
                    wp = tl.load(wm + p * m + r, mask=inside, other=0).to(tl.float64)
                    wq = tl.load(wm + q * m + r, mask=inside, other=0).to(tl.float64)
                    alpha_acc += wp * wp
                    beta_acc += wq * wq
                    gamma_acc += wp * wq
                alpha = tl.sum(alpha_acc, axis=0)
                beta = tl.sum(beta_acc, axis=0)
                gamma = tl.sum(gamma_acc, axis=0)
                if tl.abs(gamma) > tolerance * tl.sqrt(alpha) * tl.sqrt(beta):
                    rotated += 1
                    zeta = (beta - alpha) / (2 * gamma)
                    sign = tl.where(zeta >= 0, 1.0, -1.0)
                    t = sign / (tl.abs(zeta) + tl.sqrt(zeta * zeta + 1))
                    c = 1 / tl.sqrt(t * t + 1)
                    s = c * t
                    for r0 in range(0, m, ROWS):
                        r = r0 + lane
                        inside = r < m
                        _rotate(wm + p * m + r, wm + q * m + r, inside, c, s)
                    if VECTORS:
                        _rotate(vm + p * n + k, vm + q * n + k, across, c, s)
                tl.debug_barrier()
        sweep += 1
