"""The Triton twins of the hand-written .pasm programs, at the benchmark sizes.

Imported by bench_asm.py in a subprocess with TRITON_INTERPRET=1 to time Triton's interpreter on
the same work, and (once the backend lowers them) compiled for plate."""

import triton
import triton.language as tl


@triton.jit
def vec_add(x, y, o, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)


@triton.jit
def softmax(out, inp, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(inp + row * in_stride + cols, mask=m, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out + row * out_stride + cols, num / tl.sum(num, axis=0), mask=m)


@triton.jit
def matmul(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_n, pid_m = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        kk = k + rk
        a_t = tl.load(a + rm[:, None] * K + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b_t = tl.load(b + kk[:, None] * N + rn[None, :], mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a_t, b_t, input_precision="ieee")
    tl.store(c + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def run_interpreter(name: str, repeat: int = 3) -> float:
    """Best wall time in ms of one launch under TRITON_INTERPRET=1 (call in a subprocess with it set)."""
    import time

    import torch

    torch.manual_seed(0)
    if name == "vec_add":
        n = 1 << 20
        x, y, o = torch.rand(n), torch.rand(n), torch.empty(n)

        def launch():
            vec_add[(n // 1024,)](x, y, o, n, BLOCK=1024)
    elif name == "softmax":
        x, o = torch.randn(1024, 1024), torch.empty(1024, 1024)

        def launch():
            softmax[(1024,)](o, x, 1024, 1024, 1024, BLOCK=1024)
    else:
        a, b = torch.randn(256, 256).half(), torch.randn(256, 256).half()
        c = torch.empty(256, 256)

        def launch():
            matmul[(8, 8)](a, b, c, 256, 256, 256, BM=32, BN=32, BK=32)

    launch()
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        launch()
        best = min(best, time.perf_counter() - t)
    return best * 1e3
