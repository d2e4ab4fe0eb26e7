"""Matmul with block pointers: tl.make_block_ptr describes each operand as a 2-D tensor (shape, strides,
a tile offset and shape) and tl.advance steps the A and B tiles along K. boundary_check zero-fills
the loads and clips the store at the matrix edges, with no hand-written masks.

    python examples/block_ptr_matmul.py [--case fp32]
"""

from __future__ import annotations

import sys
import warnings

import torch
import triton
import triton.language as tl
from _common import Check, check, dtype_of, example_main

# Triton 3.7 steers new code to tensor descriptors (see tensor_descriptor.py); block pointers still compile
warnings.filterwarnings("ignore", message="tl.make_block_ptr is deprecated", category=UserWarning)

CASES = ("fp16", "bf16", "fp32")
M, N, K = 96, 72, 80  # the last tiles of every dimension hang over the edge


@triton.jit
def block_ptr_matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    row0 = tl.program_id(0) * BLOCK_M
    col0 = tl.program_id(1) * BLOCK_N
    a_tile = tl.make_block_ptr(
        a_ptr,
        shape=(M, K),
        strides=(stride_am, stride_ak),
        offsets=(row0, 0),
        block_shape=(BLOCK_M, BLOCK_K),
        order=(1, 0),
    )
    b_tile = tl.make_block_ptr(
        b_ptr,
        shape=(K, N),
        strides=(stride_bk, stride_bn),
        offsets=(0, col0),
        block_shape=(BLOCK_K, BLOCK_N),
        order=(1, 0),
    )
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_tile, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_tile, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(a, b, acc, input_precision="ieee")
        a_tile = tl.advance(a_tile, (0, BLOCK_K))
        b_tile = tl.advance(b_tile, (BLOCK_K, 0))
    c_tile = tl.make_block_ptr(
        c_ptr,
        shape=(M, N),
        strides=(stride_cm, stride_cn),
        offsets=(row0, col0),
        block_shape=(BLOCK_M, BLOCK_N),
        order=(1, 0),
    )
    tl.store(c_tile, acc.to(c_ptr.dtype.element_ty), boundary_check=(0, 1))


def block_ptr_matmul(a: torch.Tensor, b: torch.Tensor, block_m: int = 32, block_n: int = 32, block_k: int = 32):
    if a.shape[1] != b.shape[0] or a.dtype != b.dtype:
        raise ValueError(f"block_ptr_matmul: incompatible {tuple(a.shape)} {a.dtype} @ {tuple(b.shape)} {b.dtype}")
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(m, block_m), triton.cdiv(n, block_n))
    block_ptr_matmul_kernel[grid](
        a,
        b,
        c,
        m,
        n,
        k,
        a.stride(0),
        a.stride(1),
        b.stride(0),
        b.stride(1),
        c.stride(0),
        c.stride(1),
        BLOCK_M=block_m,
        BLOCK_N=block_n,
        BLOCK_K=block_k,
    )
    return c


def run(case: str, device: torch.device) -> list[Check]:
    dtype = dtype_of(case)
    g = torch.Generator().manual_seed(8)
    a, b = torch.randn(M, K, generator=g).to(dtype), torch.randn(K, N, generator=g).to(dtype)
    got = block_ptr_matmul(a.to(device), b.to(device))
    checks = [check(f"block-pointer matmul {M}x{K} @ {K}x{N} {case}", got, (a.float() @ b.float()).to(dtype))]
    # a transposed (column-major) B: the block pointer takes its strides, nothing else changes
    b_column_major = b.to(device).t().contiguous().t()
    if b_column_major.stride() != (1, K):
        raise AssertionError(f"expected a column-major B, got strides {b_column_major.stride()}")
    got_t = block_ptr_matmul(a.to(device), b_column_major)
    checks.append(check(f"... with column-major B {case}", got_t, (a.float() @ b.float()).to(dtype)))
    return checks


def main(argv=None) -> int:
    return example_main(__doc__, CASES, run, argv)


if __name__ == "__main__":
    sys.exit(main())
