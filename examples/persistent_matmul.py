"""Persistent matmul: launch exactly one program per core (the device's multiprocessor_count) and let
each loop with tl.range over the output tiles it owns (tile = pid, pid + cores, ...), instead of one
program per tile: fewer program instances to start, and each core keeps working on its own tiles.

    python examples/persistent_matmul.py [--case bf16]
"""

from __future__ import annotations

import sys

import torch
import triton
import triton.language as tl
from _common import Check, check, core_count, dtype_of, example_main

import triton_plate_backend

CASES = ("fp16", "bf16", "fp32")
M, N, K = 256, 160, 64  # 8 x 5 tiles of 32 x 32: more tiles than plate1 (32) or plate-mini (8) has cores


@triton.jit
def persistent_matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_bk,
    stride_cm,
    NUM_CORES: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    tiles_n = tl.cdiv(N, BLOCK_N)
    tiles = tl.cdiv(M, BLOCK_M) * tiles_n
    for tile in tl.range(tl.program_id(0), tiles, NUM_CORES):
        rows = (tile // tiles_n) * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = (tile % tiles_n) * BLOCK_N + tl.arange(0, BLOCK_N)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            ks = k0 + tl.arange(0, BLOCK_K)
            a = tl.load(
                a_ptr + rows[:, None] * stride_am + ks[None, :], mask=(rows[:, None] < M) & (ks[None, :] < K), other=0.0
            )
            b = tl.load(
                b_ptr + ks[:, None] * stride_bk + cols[None, :], mask=(ks[:, None] < K) & (cols[None, :] < N), other=0.0
            )
            acc = tl.dot(a, b, acc, input_precision="ieee")
        c = acc.to(c_ptr.dtype.element_ty)
        tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :], c, mask=(rows[:, None] < M) & (cols[None, :] < N))


def persistent_matmul(a: torch.Tensor, b: torch.Tensor, block: int = 32) -> torch.Tensor:
    """A @ B (row-major, one float dtype) with a grid of one program per core."""
    if a.shape[1] != b.shape[0] or a.dtype != b.dtype or a.stride(1) != 1 or b.stride(1) != 1:
        raise ValueError(f"persistent_matmul: need row-major A [M,K], B [K,N] of one dtype, got {a.shape}, {b.shape}")
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    cores = core_count()
    tiles = triton.cdiv(m, block) * triton.cdiv(n, block)
    persistent_matmul_kernel[(min(cores, tiles),)](
        a,
        b,
        c,
        m,
        n,
        k,
        a.stride(0),
        b.stride(0),
        c.stride(0),
        NUM_CORES=min(cores, tiles),
        BLOCK_M=block,
        BLOCK_N=block,
        BLOCK_K=block,
    )
    return c


def run(case: str, device: torch.device) -> list[Check]:
    dtype = dtype_of(case)
    g = torch.Generator().manual_seed(7)
    a, b = torch.randn(M, K, generator=g).to(dtype), torch.randn(K, N, generator=g).to(dtype)
    got = persistent_matmul(a.to(device), b.to(device))
    programs = triton_plate_backend.last_profile().num_programs
    tiles = triton.cdiv(M, 32) * triton.cdiv(N, 32)
    print(f"  [{case}] {programs} programs (one per core) for {tiles} tiles")
    return [
        check(f"persistent matmul {M}x{K} @ {K}x{N} {case}", got, (a.float() @ b.float()).to(dtype)),
        check("programs launched == cores (< tiles)", torch.tensor(programs), torch.tensor(min(core_count(), tiles))),
    ]


def main(argv=None) -> int:
    return example_main(__doc__, CASES, run, argv)


if __name__ == "__main__":
    sys.exit(main())
