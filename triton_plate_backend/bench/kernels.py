"""The kernels of `plate bench`: plain Triton written like the tutorials, and how to launch each.

``CASES``: name -> Case. A case's ``setup(size, dtype)`` allocates its plate tensors (under the
caller's placement) and returns a Launch: ``run()`` launches the kernel once, ``flops`` and
``min_bytes`` are what the roofline plots it by, ``matrix`` says whether its peak is the matrix
unit's (FLOP/s) or HBM's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


@triton.jit
def softmax_kernel(out_ptr, in_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * stride + cols, num / tl.sum(num, axis=0), mask=cols < n_cols)


@triton.jit
def layer_norm_fwd_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, stride, n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n
    xc = tl.where(m, x - mean, 0.0)
    rstd = 1 / tl.sqrt(tl.sum(xc * xc, axis=0) / n + eps)
    w = tl.load(w_ptr + cols, mask=m)
    b = tl.load(b_ptr + cols, mask=m)
    tl.store(y_ptr + row * stride + cols, xc * rstd * w + b, mask=m)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)


@triton.jit
def layer_norm_bwd_dx_kernel(dx_ptr, dy_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, stride, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * stride + cols, mask=m, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=m).to(tl.float32)
    mean = tl.load(mean_ptr + row)
    rstd = tl.load(rstd_ptr + row)
    xhat = tl.where(m, (x - mean) * rstd, 0.0)
    wdy = tl.where(m, w * dy, 0.0)
    c1 = tl.sum(xhat * wdy, axis=0) / n
    c2 = tl.sum(wdy, axis=0) / n
    tl.store(dx_ptr + row * stride + cols, (wdy - (xhat * c1 + c2)) * rstd, mask=m)


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, stride, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride + cols, mask=cols < n, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


@triton.jit
def matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    sam,
    sak,
    sbk,
    sbn,
    scm,
    scn,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    pid = tl.program_id(0)
    num_m, num_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    group = GROUP_M * num_n
    first_m = (pid // group) * GROUP_M
    size_m = min(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % size_m
    pid_n = (pid % group) // size_m
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * sam + rk[None, :] * sak
    b = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BK)):
        acc += tl.dot(tl.load(a), tl.load(b))
        a += BK * sak
        b += BK * sbk
    c = c_ptr + rm[:, None] * scm + rn[None, :] * scn
    tl.store(c, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def attention_fwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq, scale, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    start_m = tl.program_id(0)
    head = tl.program_id(1)
    base = head * seq * D
    rm = start_m * BM + tl.arange(0, BM)
    rd = tl.arange(0, D)
    q = tl.load(q_ptr + base + rm[:, None] * D + rd[None, :])
    m_i = tl.full([BM], -float("inf"), tl.float32)
    l_i = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, D], tl.float32)
    for start_n in range(0, seq, BN):
        rn = start_n + tl.arange(0, BN)
        k = tl.load(k_ptr + base + rn[None, :] * D + rd[:, None])
        s = tl.dot(q, k) * scale
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + base + rn[:, None] * D + rd[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    tl.store(o_ptr + base + rm[:, None] * D + rd[None, :], (acc / l_i[:, None]).to(o_ptr.dtype.element_ty))


# ---- cases -------------------------------------------------------------------------------------------


@dataclass
class Launch:
    run: Callable[[], object]
    flops: float
    min_bytes: float  # bytes the kernel must move at least (inputs read once, outputs written once)
    matrix: bool  # peak: the matrix unit's FLOP/s (True) or HBM bandwidth (False)
    shape: str
    tile: tuple[int, int, int] | None = None  # GEMM: the (BM, BN, BK) chosen


@dataclass(frozen=True)
class Case:
    name: str
    setup: Callable[[int], Launch]
    quick: tuple[int, ...]
    default: tuple[int, ...]
    full: tuple[int, ...]
    dtype: str = "fp32"


def _dev(*shape, dtype=torch.float32):
    return torch.randn(*shape, dtype=dtype).to("plate")


def _vector_add(n: int) -> Launch:
    x, y = _dev(n), _dev(n)
    out = torch.empty_like(x)
    grid = (triton.cdiv(n, 4096),)
    return Launch(lambda: add_kernel[grid](x, y, out, n, BLOCK=4096), 0.0, 12.0 * n, False, f"{n}")


def _rows(n_rows: int, n_cols: int = 2048):
    return _dev(n_rows, n_cols), n_cols


def _softmax(n_rows: int) -> Launch:
    x, n = _rows(n_rows)
    out = torch.empty_like(x)
    return Launch(
        lambda: softmax_kernel[(n_rows,)](out, x, x.stride(0), n, BLOCK=triton.next_power_of_2(n)),
        0.0,
        8.0 * x.numel(),
        False,
        f"{n_rows}x{n}",
    )


def _layer_norm_fwd(n_rows: int) -> Launch:
    x, n = _rows(n_rows)
    y, w, b = torch.empty_like(x), _dev(n), _dev(n)
    mean, rstd = torch.empty(n_rows, device="plate"), torch.empty(n_rows, device="plate")
    block = triton.next_power_of_2(n)
    return Launch(
        lambda: layer_norm_fwd_kernel[(n_rows,)](x, y, w, b, mean, rstd, x.stride(0), n, 1e-5, BLOCK=block),
        0.0,
        8.0 * x.numel(),
        False,
        f"{n_rows}x{n}",
    )


def _layer_norm_bwd(n_rows: int) -> Launch:
    x, n = _rows(n_rows)
    dy, dx, w = _dev(n_rows, n), torch.empty_like(x), _dev(n)
    mean, rstd = _dev(n_rows), _dev(n_rows).abs()
    block = triton.next_power_of_2(n)
    return Launch(
        lambda: layer_norm_bwd_dx_kernel[(n_rows,)](dx, dy, x, w, mean, rstd, x.stride(0), n, BLOCK=block),
        0.0,
        12.0 * x.numel(),
        False,
        f"{n_rows}x{n}",
    )


def _reduction(n_rows: int) -> Launch:
    x, n = _rows(n_rows, 8192)
    out = torch.empty(n_rows, device="plate")
    return Launch(
        lambda: row_sum_kernel[(n_rows,)](x, out, x.stride(0), n, BLOCK=1024),
        0.0,
        4.0 * x.numel(),
        False,
        f"{n_rows}x{n}",
    )


# GEMM tiles (BM, BN, BK) the bench chooses from, smallest to largest; num_stages 3 (the compiler drops
# to fewer stages when SRAM is short: 512x256x128 runs 2 stages). The cost model's estimate picks one
# per shape and placement. A DMA's issue runs under the previous transfer (cost.dma_stages), so BK
# sets little but the drain: with one output tile a core (2048^3) the last K step's m.mma runs after
# the last load with HBM idle, 8.3k cycles at 256x512x64 and 4.2k at 256x512x32. 256x512 moves the
# bytes of 512x256 in fewer DMA runs (256 rows of A and 128 of B per K step, instead of 512 and 128).
GEMM_TILES = {
    "bf16": (
        (128, 128, 64),
        (256, 128, 64),
        (256, 256, 64),
        (512, 256, 64),
        (512, 256, 128),
        (256, 512, 32),
        (256, 512, 64),
        (256, 512, 128),
    ),
    "fp32": ((64, 64, 32), (128, 128, 32), (256, 128, 32), (256, 256, 32)),
}
GEMM_STAGES = 3


def gemm_tile(n: int, a, b, c, tiles) -> tuple[int, int, int]:
    """The tile of ``tiles`` with the least estimated time for an n^3 GEMM on these tensors (their
    placement included); a tile whose plan overflows SRAM is skipped."""
    from triton_plate_backend.errors import SramOverflow
    from triton_plate_backend.estimate import estimate

    best, chosen = float("inf"), None
    for bm, bn, bk in tiles:
        grid = (triton.cdiv(n, bm) * triton.cdiv(n, bn),)
        args = (a, b, c, n, n, n, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
        try:
            t = estimate(matmul_kernel, grid, *args, BM=bm, BN=bn, BK=bk, GROUP_M=8, num_stages=GEMM_STAGES).time_ns
        except SramOverflow:
            continue
        if t < best:
            best, chosen = t, (bm, bn, bk)
    return chosen or tiles[0]  # none fits: the smallest, whose launch then reports the overflow


def _gemm(dtype):
    def setup(n: int) -> Launch:
        a, b = _dev(n, n, dtype=dtype), _dev(n, n, dtype=dtype)
        c = torch.empty(n, n, dtype=dtype, device="plate")
        fitting = [t for t in GEMM_TILES["bf16" if dtype == torch.bfloat16 else "fp32"] if n % t[0] == n % t[1] == 0]
        bm, bn, bk = gemm_tile(n, a, b, c, fitting)
        grid = (triton.cdiv(n, bm) * triton.cdiv(n, bn),)

        def run():
            return matmul_kernel[grid](
                a, b, c, n, n, n, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                BM=bm, BN=bn, BK=bk, GROUP_M=8, num_stages=GEMM_STAGES,
            )  # fmt: skip

        return Launch(run, 2.0 * n**3, 3.0 * n * n * a.element_size(), True, f"{n}^3 ({bm}x{bn}x{bk})", (bm, bn, bk))

    return setup


def _attention(seq: int, heads: int = 8, d: int = 64) -> Launch:
    q, k, v = (_dev(heads, seq, d, dtype=torch.bfloat16) for _ in range(3))
    o = torch.empty_like(q)
    grid = (seq // 64, heads)
    return Launch(
        lambda: attention_fwd_kernel[grid](q, k, v, o, seq, d**-0.5, D=d, BM=64, BN=64),
        4.0 * heads * seq * seq * d,
        4.0 * q.numel() * 2,
        True,
        f"{heads}x{seq}x{d}",
    )


class TransformerBlock(torch.nn.Module):
    """Pre-norm attention + MLP block, the shape of a GPT layer."""

    def __init__(self, d_model: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(d_model), torch.nn.LayerNorm(d_model)
        self.qkv, self.proj = torch.nn.Linear(d_model, 3 * d_model), torch.nn.Linear(d_model, d_model)
        self.fc, self.out = torch.nn.Linear(d_model, 4 * d_model), torch.nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (y.view(b, t, self.heads, d // self.heads).transpose(1, 2) for y in (q, k, v))
        att = torch.softmax((q @ k.transpose(-2, -1)) * (d // self.heads) ** -0.5, dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.out(torch.nn.functional.gelu(self.fc(self.ln2(x))))


def _inductor_block(seq: int, d_model: int = 128, heads: int = 4, batch: int = 2) -> Launch:
    torch.manual_seed(0)
    block = TransformerBlock(d_model, heads).eval().to("plate")
    x = torch.randn(batch, seq, d_model).to("plate")
    compiled = torch.compile(block, mode="max-autotune-no-cudagraphs")

    def run():
        with torch.no_grad():
            return compiled(x)

    flops = 2.0 * batch * seq * (12 * d_model * d_model + 2 * seq * d_model)  # linears + attention
    return Launch(run, flops, 0.0, True, f"b{batch} t{seq} d{d_model} h{heads}")


CASES: dict[str, Case] = {
    c.name: c
    for c in (
        Case("vector_add", _vector_add, (1 << 16,), (1 << 22,), (1 << 24,)),
        Case("softmax", _softmax, (64,), (1024,), (4096,)),
        Case("layer_norm_fwd", _layer_norm_fwd, (64,), (1024,), (4096,)),
        Case("layer_norm_bwd", _layer_norm_bwd, (64,), (1024,), (4096,)),
        Case("reduction", _reduction, (64,), (512,), (2048,)),
        Case("gemm_bf16", _gemm(torch.bfloat16), (256,), (1024, 2048), (1024, 2048, 4096), "bf16"),
        Case("gemm_fp32", _gemm(torch.float32), (128,), (1024,), (1024, 2048, 4096)),
        Case("attention_fwd", _attention, (128,), (1024,), (2048,), "bf16"),
        Case("inductor_block", _inductor_block, (32,), (128,), (256,)),
    )
}
