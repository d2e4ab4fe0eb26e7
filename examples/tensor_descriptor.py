"""Tensor descriptors: tl.make_tensor_descriptor builds, inside the kernel, a descriptor of a 2-D tensor
(base, shape, strides, block shape); desc.load([i, j]) and desc.store([i, j], tile) move whole
blocks, zero-filling reads past the edge and dropping writes past it. Two kernels: a scaled
transpose-add (out = alpha * x^T + y) and a matmul whose operands and result all go through
descriptors. PLATE has no TMA unit: the compiler rewrites descriptors into DMA of strided tiles.

    python examples/tensor_descriptor.py [--case fp16]
"""

from __future__ import annotations

import sys

import torch
import triton
import triton.language as tl
from _common import Check, check, dtype_of, example_main

CASES = ("fp16", "bf16", "fp32")
ROWS, COLS = 80, 48  # x is ROWS x COLS; out and y are COLS x ROWS
M, N, K = 64, 48, 80


@triton.jit
def transpose_add_kernel(x_ptr, y_ptr, out_ptr, rows, cols, alpha, BLOCK: tl.constexpr):
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[rows, cols], strides=[cols, 1], block_shape=[BLOCK, BLOCK])
    y_desc = tl.make_tensor_descriptor(y_ptr, shape=[cols, rows], strides=[rows, 1], block_shape=[BLOCK, BLOCK])
    out_desc = tl.make_tensor_descriptor(out_ptr, shape=[cols, rows], strides=[rows, 1], block_shape=[BLOCK, BLOCK])
    i = tl.program_id(0) * BLOCK  # a block of x's rows = a block of out's columns
    j = tl.program_id(1) * BLOCK
    x_t = tl.trans(x_desc.load([i, j]))
    y = y_desc.load([j, i])
    out_desc.store([j, i], (x_t.to(tl.float32) * alpha + y.to(tl.float32)).to(out_desc.dtype))


@triton.jit
def descriptor_matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr
):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    row0 = tl.program_id(0) * BLOCK_M
    col0 = tl.program_id(1) * BLOCK_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        acc = tl.dot(a_desc.load([row0, k0]), b_desc.load([k0, col0]), acc, input_precision="ieee")
    c_desc.store([row0, col0], acc.to(c_desc.dtype))


def transpose_add(x: torch.Tensor, y: torch.Tensor, alpha: float, block: int = 32) -> torch.Tensor:
    rows, cols = x.shape
    if y.shape != (cols, rows) or not (x.is_contiguous() and y.is_contiguous()):
        raise ValueError(f"transpose_add: need contiguous x [R,C] and y [C,R], got {tuple(x.shape)}, {tuple(y.shape)}")
    out = torch.empty_like(y)
    transpose_add_kernel[(triton.cdiv(rows, block), triton.cdiv(cols, block))](
        x, y, out, rows, cols, alpha, BLOCK=block
    )
    return out


def descriptor_matmul(a: torch.Tensor, b: torch.Tensor, block: int = 32) -> torch.Tensor:
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(m, block), triton.cdiv(n, block))
    descriptor_matmul_kernel[grid](a, b, c, m, n, k, BLOCK_M=block, BLOCK_N=block, BLOCK_K=block)
    return c


def run(case: str, device: torch.device) -> list[Check]:
    dtype = dtype_of(case)
    g = torch.Generator().manual_seed(9)
    x, y = torch.randn(ROWS, COLS, generator=g).to(dtype), torch.randn(COLS, ROWS, generator=g).to(dtype)
    a, b = torch.randn(M, K, generator=g).to(dtype), torch.randn(K, N, generator=g).to(dtype)
    alpha = 0.5
    return [
        check(
            f"alpha * x^T + y {case}",
            transpose_add(x.to(device), y.to(device), alpha),
            (x.float().t() * alpha + y.float()).to(dtype),
        ),
        check(
            f"descriptor matmul {M}x{K} @ {K}x{N} {case}",
            descriptor_matmul(a.to(device), b.to(device)),
            (a.float() @ b.float()).to(dtype),
        ),
    ]


def main(argv=None) -> int:
    return example_main(__doc__, CASES, run, argv)


if __name__ == "__main__":
    sys.exit(main())
