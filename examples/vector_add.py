"""Vector addition: one program instance per BLOCK elements, the tail masked off.

python examples/vector_add.py [--case fp32] [--device cpu]
plate run examples/vector_add.py --trace add.json
"""

from __future__ import annotations

import sys

import torch
import triton
import triton.language as tl
from _common import Check, check, dtype_of, example_main

CASES = ("fp32", "fp16", "bf16", "int32")
N = 5000  # not a multiple of the block: the last program runs masked


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    start = tl.program_id(axis=0) * BLOCK
    offsets = start + tl.arange(0, BLOCK)
    in_bounds = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=in_bounds)
    y = tl.load(y_ptr + offsets, mask=in_bounds)
    tl.store(out_ptr + offsets, x + y, mask=in_bounds)


def add(x: torch.Tensor, y: torch.Tensor, block: int = 1024) -> torch.Tensor:
    if x.shape != y.shape or x.dtype != y.dtype:
        raise ValueError(f"add: shapes/dtypes differ: {tuple(x.shape)} {x.dtype} vs {tuple(y.shape)} {y.dtype}")
    out = torch.empty_like(x)
    n = out.numel()
    add_kernel[(triton.cdiv(n, block),)](x, y, out, n, BLOCK=block)
    return out


def inputs(dtype: torch.dtype, n: int = N, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return torch.randn(n, generator=g).to(dtype), torch.randn(n, generator=g).to(dtype)
    return torch.randint(-(2**20), 2**20, (n,), generator=g, dtype=dtype), torch.randint(
        -(2**20), 2**20, (n,), generator=g, dtype=dtype
    )


def run(case: str, device: torch.device) -> list[Check]:
    dtype = dtype_of(case)
    x, y = inputs(dtype)
    got = add(x.to(device), y.to(device))
    return [check(f"x + y ({N} x {case})", got, x + y)]


def main(argv=None) -> int:
    return example_main(__doc__, CASES, run, argv)


if __name__ == "__main__":
    sys.exit(main())
