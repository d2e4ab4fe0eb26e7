"""The Triton kernel of plate's eager matmuls (matmul.py): out[p] = alpha * a[p] @ b[p] + beta * c[p] over
a batch of (M, K) @ (K, N) products, every operand read through its own element strides (transposed,
strided and broadcast operands need no copy). A program computes a BLOCK_M x BLOCK_N tile of one batch
entry; K is walked in steps of BLOCK_K, which the caller fixes per dtype (matmul.K_STEP): the result's
bits depend on that step only, never on BLOCK_M / BLOCK_N.

DOT (fp16, bf16, fp32): both operands widened to float32 and multiplied with tl.dot at input_precision
PRECISION ("ieee" unless the TF32 flag is on): the matrix unit adds a K step's exact products in float64 and
rounds once to float32 with the running sum (sim/sem_matrix.py). Else (fp64, integers): the products of a
K step, in CT, are summed by tl.sum's fixed pairwise tree and added to the running sum: integers wrap, so
any order gives the same bits."""

from __future__ import annotations

import triton
import triton.language as tl

from .kernels import machine_of  # noqa: F401 - the launch option every eager kernel takes


@triton.jit(do_not_specialize=["M", "N", "K", "s_op", "s_ap", "s_bp", "s_cp"])
def matmul(
    out, a, b, c, alpha, beta, M, N, K,
    s_op, s_om, s_on, s_ap, s_am, s_ak, s_bp, s_bk, s_bn, s_cp, s_cm, s_cn,
    CT: tl.constexpr, DOT: tl.constexpr, PRECISION: tl.constexpr, SCALE: tl.constexpr, ADD_C: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    p = tl.program_id(2).to(tl.int64)
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a + p * s_ap + rm[:, None] * s_am + rk[None, :] * s_ak
    b_ptrs = b + p * s_bp + rk[:, None] * s_bk + rn[None, :] * s_bn
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=CT)
    for k0 in range(0, K, BLOCK_K):
        x = tl.load(a_ptrs, mask=(rm < M)[:, None] & (k0 + rk < K)[None, :], other=0).to(CT)
        y = tl.load(b_ptrs, mask=(k0 + rk < K)[:, None] & (rn < N)[None, :], other=0).to(CT)
        if DOT:
            acc = tl.dot(x, y, acc, input_precision=PRECISION)
        else:
            acc += tl.sum(x[:, :, None] * y[None, :, :], axis=1)
        a_ptrs += BLOCK_K * s_ak
        b_ptrs += BLOCK_K * s_bk
    if SCALE:
        acc = acc * tl.load(alpha)
    inside = (rm < M)[:, None] & (rn < N)[None, :]
    if ADD_C:
        z = tl.load(c + p * s_cp + rm[:, None] * s_cm + rn[None, :] * s_cn, mask=inside, other=0).to(CT)
        acc += tl.load(beta) * z
    tl.store(out + p * s_op + rm[:, None] * s_om + rn[None, :] * s_on, acc.to(out.dtype.element_ty), mask=inside)
