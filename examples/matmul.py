"""Tiled matrix multiplication C = epilogue(A @ B), autotuned over tile shapes on the modeled clock.

Programs are ordered in groups of GROUP_M tile-rows so that neighbours share B tiles; the K loop
accumulates in fp32 (int32 for int8 inputs) and the epilogue (optional leaky ReLU) runs on the
accumulator before the cast to the output dtype.

    python examples/matmul.py [--case fp16] [--case int8] [--case fp16-leaky_relu]
"""

from __future__ import annotations

import sys

import torch
import triton
import triton.language as tl
from _common import Check, check, dtype_of, example_main

CASES = ("fp16", "bf16", "fp32", "int8", "fp16-leaky_relu")
M, N, K = 96, 80, 72  # none a multiple of 64: edge tiles run masked
OUT_DTYPE = {torch.float16: torch.float16, torch.bfloat16: torch.bfloat16, torch.float32: torch.float32}
OUT_DTYPE[torch.int8] = torch.int32
LEAKY_SLOPE = tl.constexpr(0.01)  # a global a @triton.jit function reads must be a constexpr

CONFIGS = [
    triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 2}),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 2}),
    triton.Config({"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 4}),
]


@triton.jit
def leaky_relu(x):
    return tl.where(x >= 0, x, x * LEAKY_SLOPE)


@triton.autotune(configs=CONFIGS, key=["M", "N", "K"])
@triton.jit
def matmul_kernel(
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
    ACC_TYPE: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
    EPILOGUE: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    # which tile: walk GROUP_M tile-rows column by column, so a group reuses each B tile GROUP_M times
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    tiles_per_group = GROUP_M * tiles_n
    group_first_row = (pid // tiles_per_group) * GROUP_M
    rows_in_group = tl.minimum(tiles_m - group_first_row, GROUP_M)
    within = pid % tiles_per_group
    tile_m = group_first_row + within % rows_in_group
    tile_n = within // rows_in_group

    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    a_tile = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_tile = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_TYPE)
    for k0 in range(0, K, BLOCK_K):
        k_left = K - k0
        a = tl.load(a_tile, mask=(rows[:, None] < M) & (ks[None, :] < k_left), other=0)
        b = tl.load(b_tile, mask=(ks[:, None] < k_left) & (cols[None, :] < N), other=0)
        acc = tl.dot(a, b, acc, input_precision=DOT_PRECISION, out_dtype=ACC_TYPE)
        a_tile += BLOCK_K * stride_ak
        b_tile += BLOCK_K * stride_bk

    if EPILOGUE == "leaky_relu":
        acc = leaky_relu(acc)
    c = acc.to(c_ptr.dtype.element_ty)
    tl.store(
        c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn, c, mask=(rows[:, None] < M) & (cols[None, :] < N)
    )


def matmul(a: torch.Tensor, b: torch.Tensor, epilogue: str = "") -> torch.Tensor:
    """A @ B for 2-D fp16/bf16/fp32/int8 tensors; int8 accumulates and returns int32."""
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0] or a.dtype != b.dtype:
        raise ValueError(f"matmul: incompatible {tuple(a.shape)} {a.dtype} @ {tuple(b.shape)} {b.dtype}")
    if epilogue not in ("", "leaky_relu"):
        raise ValueError(f"matmul: epilogue {epilogue!r}: expected '' or 'leaky_relu'")
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), dtype=OUT_DTYPE[a.dtype], device=a.device)
    integer = a.dtype == torch.int8

    def grid(meta):
        return (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)

    matmul_kernel[grid](
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
        ACC_TYPE=tl.int32 if integer else tl.float32,
        DOT_PRECISION="ieee",
        EPILOGUE=epilogue,
    )
    return c


def reference(a: torch.Tensor, b: torch.Tensor, epilogue: str = "") -> torch.Tensor:
    if a.dtype == torch.int8:
        return a.int() @ b.int()
    c = a.float() @ b.float()
    if epilogue == "leaky_relu":
        c = torch.where(c >= 0, c, c * LEAKY_SLOPE.value)
    return c.to(OUT_DTYPE[a.dtype])


def inputs(dtype: torch.dtype, seed: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.int8:
        return (
            torch.randint(-128, 128, (M, K), generator=g, dtype=dtype),
            torch.randint(-128, 128, (K, N), generator=g, dtype=dtype),
        )
    return torch.randn(M, K, generator=g).to(dtype), torch.randn(K, N, generator=g).to(dtype)


def run(case: str, device: torch.device) -> list[Check]:
    dtype_name, _, epilogue = case.partition("-")
    a, b = inputs(dtype_of(dtype_name))
    got = matmul(a.to(device), b.to(device), epilogue)
    print(f"  [{case}] autotuner chose {matmul_kernel.best_config}")
    return [check(f"matmul {M}x{K} @ {K}x{N} {case}", got, reference(a, b, epilogue))]


def main(argv=None) -> int:
    return example_main(__doc__, CASES, run, argv)


if __name__ == "__main__":
    sys.exit(main())
