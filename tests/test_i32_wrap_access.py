"""i32 offset and mask arithmetic that wraps (session 38, wrap38): where the structured access analysis can
see at compile time that an i32 offset or mask operand leaves i32 on the tile (all its terms are constants),
the access is computed per element and wraps as on CUDA instead of addressing or comparing unbounded
integers (passes/access_forms.py `_check_no_wrap`)."""

from __future__ import annotations

import re

import numpy as np
import torch
import triton
import triton.language as tl

import triton_plate_backend.torch_device  # noqa: F401  (registers the plate device)

N = 16


@triton.jit
def mask_mul_wrap(x, o, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(o + r, tl.load(x + r, mask=r * 268435456 >= 0, other=-1))  # r * 2**28 wraps for r >= 8


@triton.jit
def store_mask_add_wrap(x, o, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(o + r, tl.load(x + r), mask=(r + 2147483640) > 0)  # r + (2**31 - 8) wraps for r >= 8


@triton.jit
def offset_wrap(x, o, N: tl.constexpr):
    r = tl.arange(0, N)
    back = r * 268435456 + (r * 268435456 + (-r) * 536870912)  # 0 in i32 (the products wrap on the way)
    v = tl.load(x + (r * 65536 * 65536 + r))  # r * 2**32 wraps to 0: reads x[r]
    tl.store(o + (r * 65536 * 65536 + r) + back, v)  # ... and stores o[r]


@triton.jit
def mask_zero_extended(x, o, N: tl.constexpr):
    r = tl.arange(0, N)
    u = (r - 8).to(tl.uint32).to(tl.int64)  # 2**32 - 8 + r for r < 8: zero-extended
    tl.store(o + r, tl.load(x + r, mask=u >= 8, other=-1))


@triton.jit
def no_wrap(x, o, n, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(o + r, tl.load(x + r * 2 + 1, mask=(r + 2147483600) > 0), mask=r < n)


def _x():
    return torch.arange(100, 100 + 2 * N, dtype=torch.int32).to("plate")


def _gathers(kernel) -> int:
    return len(re.findall(r"\bdma\.(gather|scatter)\b", kernel.asm["pasm"]))


def test_a_load_mask_that_wraps_is_false_where_cudas_is():
    o = torch.zeros(N, dtype=torch.int32, device="plate")
    k = mask_mul_wrap[(1,)](_x(), o, N)
    want = np.where(np.arange(N) < 8, np.arange(100, 100 + N), -1)
    np.testing.assert_array_equal(o.cpu().numpy(), want)
    assert _gathers(k) == 1  # the load, per element; the store stays a strided DMA


def test_a_store_mask_that_wraps_stores_nothing_where_cudas_is_false():
    o = torch.full((N,), 7, dtype=torch.int32, device="plate")
    k = store_mask_add_wrap[(1,)](_x(), o, N)
    want = np.where(np.arange(N) < 8, np.arange(100, 100 + N), 7)
    np.testing.assert_array_equal(o.cpu().numpy(), want)
    assert _gathers(k) == 1  # the masked store, per element


def test_offsets_that_wrap_back_in_range_load_and_store_the_elements_cuda_does():
    o = torch.zeros(N, dtype=torch.int32, device="plate")
    k = offset_wrap[(1,)](_x(), o, N)
    np.testing.assert_array_equal(o.cpu().numpy(), np.arange(100, 100 + N))
    assert _gathers(k) == 2


def test_a_mask_over_zero_extended_negative_values_is_cudas():
    o = torch.zeros(N, dtype=torch.int32, device="plate")
    mask_zero_extended[(1,)](_x(), o, N)
    want = np.where(np.arange(N) < 8, np.arange(100, 100 + N), -1)
    np.testing.assert_array_equal(o.cpu().numpy(), want)


def test_offsets_and_masks_that_stay_in_i32_stay_strided_dma():
    o = torch.zeros(N, dtype=torch.int32, device="plate")
    k = no_wrap[(1,)](_x(), o, N - 3, N)
    want = np.where(np.arange(N) < N - 3, 101 + 2 * np.arange(N), 0)
    np.testing.assert_array_equal(o.cpu().numpy(), want)
    assert _gathers(k) == 0
