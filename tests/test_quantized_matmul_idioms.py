"""Quantized-matmul idioms of published Triton libraries (gemlite's GEMV/GEMM kinds), on plate, exact against numpy:
int8 activations times 4-bit weights packed eight to an int32 word (the top nibble sets the word's sign bit),
unpacked with an arithmetic shift and a mask, shifted by a zero point, summed in int32 by ``tl.sum`` or by an int8
``tl.dot`` with an int32 accumulator, scaled per output channel after the K sum or not, and split over K with
``tl.atomic_add``. Every value is an integer, and the scales powers of two, so each sum is exact in any order."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

RNG = np.random.default_rng(26)
NBITS, PER_WORD = 4, 8  # 4-bit weights, eight to an int32 word
ZERO = 7


@triton.jit
def gemv_w4_kernel(
    a,
    b,
    scales,
    c,
    N,
    K,
    ZERO: tl.constexpr,
    SCALED: tl.constexpr,
    NBITS: tl.constexpr,
    PER_WORD: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
):
    pid_n, pid_k, m = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    offs_k = pid_k * BK + tl.arange(0, BK)
    offs_n = pid_n * BN + tl.arange(0, BN)
    x = tl.load(a + m * K + offs_k)
    w = tl.load(b + (offs_k[:, None] // PER_WORD) * N + offs_n[None, :])
    shift = ((offs_k % PER_WORD) * NBITS).to(tl.int32)[:, None]
    w = ((w >> shift) & ((1 << NBITS) - 1)) - ZERO
    acc = tl.sum(x.reshape((BK, 1)).to(tl.int32) * w, axis=0, keep_dims=True)
    if SCALED:
        acc = acc.to(tl.float32) * tl.load(scales + offs_n)[None, :]
    else:
        acc = acc.to(tl.float32)
    tl.atomic_add(c + m * N + offs_n[None, :], acc)


@triton.jit
def gemm_w4_dot_kernel(
    a,
    b,
    c,
    M,
    N,
    K,
    ZERO: tl.constexpr,
    NBITS: tl.constexpr,
    PER_WORD: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    SPLIT_K: tl.constexpr,
):
    pid_m, pid_n, pid_k = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.int32)
    for k0 in range(pid_k * BK, K, BK * SPLIT_K):
        offs_k = k0 + tl.arange(0, BK)
        x = tl.load(a + offs_m[:, None] * K + offs_k[None, :])
        w = tl.load(b + (offs_k[:, None] // PER_WORD) * N + offs_n[None, :])
        shift = ((offs_k % PER_WORD) * NBITS).to(tl.int32)[:, None]
        w = (((w >> shift) & ((1 << NBITS) - 1)) - ZERO).to(tl.int8)
        acc = tl.dot(x, w, acc, out_dtype=tl.int32)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.atomic_add(c + offs_m[:, None] * N + offs_n[None, :], acc, mask=mask)


def packed(w_q: np.ndarray) -> np.ndarray:
    """(K, N) values in [0, 16) as (K // 8, N) int32 words, row k in bits 4 * (k % 8)."""
    words = np.zeros((w_q.shape[0] // PER_WORD, w_q.shape[1]), dtype=np.uint32)
    for j in range(PER_WORD):
        words |= w_q[j::PER_WORD].astype(np.uint32) << (NBITS * j)
    return words.view(np.int32)


def operands(M, N, K):
    x = RNG.integers(-10, 10, (M, K), dtype=np.int8)
    w_q = RNG.integers(0, 16, (K, N), dtype=np.uint8)
    w_q[PER_WORD - 1 :: PER_WORD, 0] = 15  # a top nibble of 15: that column's words are negative
    return x, w_q, packed(w_q)


@pytest.mark.parametrize("scaled", [True, False])
def test_gemv_packed_int4_split_k(scaled):
    M, N, K, BN, BK = 2, 64, 256, 32, 64
    x, w_q, words = operands(M, N, K)
    assert (words[:, 0] < 0).all()
    scales = np.exp2(RNG.integers(-12, -4, N)).astype(np.float32)
    c = torch.zeros((M, N), dtype=torch.float32, device="plate")
    gemv_w4_kernel[(N // BN, K // BK, M)](
        torch.from_numpy(x).to("plate"),
        torch.from_numpy(words).to("plate"),
        torch.from_numpy(scales).to("plate"),
        c,
        N,
        K,
        ZERO=ZERO,
        SCALED=scaled,
        NBITS=NBITS,
        PER_WORD=PER_WORD,
        BN=BN,
        BK=BK,
    )
    sums = x.astype(np.int64) @ (w_q.astype(np.int64) - ZERO)
    want = sums.astype(np.float32) * (scales[None, :] if scaled else np.float32(1))
    np.testing.assert_array_equal(c.cpu().numpy(), want)


@pytest.mark.parametrize("split_k", [1, 2])
def test_gemm_packed_int4_int8_dot(split_k):
    M, N, K, BM, BN, BK = 16, 32, 256, 16, 32, 64
    x, w_q, words = operands(M, N, K)
    c = torch.zeros((M, N), dtype=torch.int32, device="plate")
    gemm_w4_dot_kernel[(M // BM, N // BN, split_k)](
        torch.from_numpy(x).to("plate"),
        torch.from_numpy(words).to("plate"),
        c,
        M,
        N,
        K,
        ZERO=ZERO,
        NBITS=NBITS,
        PER_WORD=PER_WORD,
        BM=BM,
        BN=BN,
        BK=BK,
        SPLIT_K=split_k,
    )
    want = x.astype(np.int64) @ (w_q.astype(np.int64) - ZERO)
    np.testing.assert_array_equal(c.cpu().numpy(), want.astype(np.int32))
