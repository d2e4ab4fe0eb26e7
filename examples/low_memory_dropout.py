"""Low-memory dropout: the keep mask is never stored. Each element draws a Philox number from
(seed, its offset) with tl.rand, so the backward pass (or a replay) regenerates the same mask from
the seed alone. A second kernel exposes the raw tl.randint stream.

The torch reference recomputes Philox-4x32-10 in numpy, so the kernel's random bits are checked
exactly, and the same seed must give the same mask while another seed gives a different one.

    python examples/low_memory_dropout.py [--case fp16]
"""

from __future__ import annotations

import sys

import numpy as np
import torch
import triton
import triton.language as tl
from _common import Check, check, dtype_of, example_main

CASES = ("fp32", "fp16")
N = 3000
P_DROP = 0.3
SEEDS = (1234, 98765)


@triton.jit
def dropout_kernel(x_ptr, out_ptr, n_elements, p_drop, seed, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    in_bounds = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=in_bounds)
    keep = tl.rand(seed, offsets) > p_drop  # the mask is a function of (seed, offset): nothing to store
    scaled = x.to(tl.float32) / (1 - p_drop)
    tl.store(out_ptr + offsets, tl.where(keep, scaled, 0.0).to(x.dtype), mask=in_bounds)


@triton.jit
def randint_kernel(out_ptr, n_elements, seed, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.randint(seed, offsets), mask=offsets < n_elements)


def dropout(x: torch.Tensor, p_drop: float, seed: int, block: int = 1024) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    dropout_kernel[(triton.cdiv(n, block),)](x, out, n, p_drop, seed, BLOCK=block)
    return out


def randint(n: int, seed: int, device: torch.device, block: int = 1024) -> torch.Tensor:
    out = torch.empty(n, dtype=torch.int32, device=device)
    randint_kernel[(triton.cdiv(n, block),)](out, n, seed, BLOCK=block)
    return out


# ---- the reference: Philox-4x32 with 10 rounds, counter (offset, 0, 0, 0), key (seed lo, seed hi) ----
_ROUND_A, _ROUND_B = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_KEY_A, _KEY_B = np.uint32(0x9E3779B9), np.uint32(0xBB67AE85)


def philox_first_word(seed: int, offsets: np.ndarray, rounds: int = 10) -> np.ndarray:
    """The first output word of Philox-4x32 for each offset: what tl.randint returns (as uint32)."""
    c0 = offsets.astype(np.uint32)
    c1 = np.zeros_like(c0)
    c2 = np.zeros_like(c0)
    c3 = np.zeros_like(c0)
    k0, k1 = np.uint32(seed & 0xFFFFFFFF), np.uint32((seed >> 32) & 0xFFFFFFFF)
    with np.errstate(over="ignore"):
        for _ in range(rounds):
            prod_b = _ROUND_B * c2.astype(np.uint64)
            prod_a = _ROUND_A * c0.astype(np.uint64)
            hi_b, lo_b = (prod_b >> np.uint64(32)).astype(np.uint32), prod_b.astype(np.uint32)
            hi_a, lo_a = (prod_a >> np.uint64(32)).astype(np.uint32), prod_a.astype(np.uint32)
            c0, c1, c2, c3 = hi_b ^ c1 ^ k0, lo_b, hi_a ^ c3 ^ k1, lo_a
            k0, k1 = k0 + _KEY_A, k1 + _KEY_B
    return c0


def uniform_from_bits(bits: np.ndarray) -> np.ndarray:
    """tl.rand's map from 32 random bits to [0, 1): fold the sign, scale by just under 2**-31 (fp32)."""
    x = bits.view(np.int32).astype(np.int64)
    x = np.where(x < 0, -x - 1, x)
    return x.astype(np.float32) * np.float32(4.6566127342e-10)


def reference_dropout(x: torch.Tensor, p_drop: float, seed: int) -> torch.Tensor:
    keep = torch.from_numpy(uniform_from_bits(philox_first_word(seed, np.arange(x.numel()))) > np.float32(p_drop))
    return torch.where(keep, x.float() / (1 - p_drop), 0.0).to(x.dtype)


def run(case: str, device: torch.device) -> list[Check]:
    dtype = dtype_of(case)
    x = (torch.randn(N, generator=torch.Generator().manual_seed(3)) + 4).to(dtype)  # never 0: a zero means dropped
    xd = x.to(device)
    first, again, other = dropout(xd, P_DROP, SEEDS[0]), dropout(xd, P_DROP, SEEDS[0]), dropout(xd, P_DROP, SEEDS[1])
    kept = first.cpu() != 0
    bits = randint(N, SEEDS[0], device).cpu()
    want_bits = torch.from_numpy(philox_first_word(SEEDS[0], np.arange(N)).view(np.int32))
    differs = torch.tensor((kept != (other.cpu() != 0)).float().mean().item() > 0.2)
    return [
        check(f"tl.randint bits (seed {SEEDS[0]})", bits, want_bits),
        check(f"dropout p={P_DROP} {case} (seed {SEEDS[0]})", first, reference_dropout(x, P_DROP, SEEDS[0])),
        check(f"dropout p={P_DROP} {case} (seed {SEEDS[1]})", other, reference_dropout(x, P_DROP, SEEDS[1])),
        check("same seed, same mask", again.cpu() != 0, kept),
        check("another seed, another mask (>20% of elements differ)", differs, torch.tensor(True)),
        check(
            f"kept share near 1 - p = {1 - P_DROP}",
            torch.tensor(abs(kept.float().mean().item() - (1 - P_DROP)) < 0.05),
            torch.tensor(True),
        ),
    ]


def main(argv=None) -> int:
    return example_main(__doc__, CASES, run, argv)


if __name__ == "__main__":
    sys.exit(main())
