"""Fused row softmax: each program instance walks rows with a stride of the grid, keeps a whole row
in SRAM, and reads and writes it once (max, exp, sum and scale fused; fp32 math for any dtype).

    python examples/fused_softmax.py [--case fp16]
"""

from __future__ import annotations

import sys

import torch
import triton
import triton.language as tl
from _common import Check, check, core_count, dtype_of, example_main

CASES = ("fp32", "fp16", "bf16")
ROWS, COLS = 48, 200  # COLS not a power of two: the row block is padded with -inf


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_rows, n_cols, BLOCK_COLS: tl.constexpr):
    cols = tl.arange(0, BLOCK_COLS)
    in_row = cols < n_cols
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        x = tl.load(in_ptr + row * in_row_stride + cols, mask=in_row, other=-float("inf")).to(tl.float32)
        shifted = x - tl.max(x, axis=0)  # exp of a number <= 0 cannot overflow
        e = tl.exp(shifted)
        y = e / tl.sum(e, axis=0)
        tl.store(out_ptr + row * out_row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=in_row)


def softmax(x: torch.Tensor, programs: int | None = None) -> torch.Tensor:
    """Softmax over the last dimension of a 2-D tensor; ``programs`` caps the grid (default: one per core)."""
    if x.dim() != 2:
        raise ValueError(f"softmax: expected a 2-D tensor, got shape {tuple(x.shape)}")
    rows, cols = x.shape
    out = torch.empty_like(x)
    grid = (max(1, min(rows, programs or core_count())),)
    softmax_kernel[grid](out, x, x.stride(0), out.stride(0), rows, cols, BLOCK_COLS=triton.next_power_of_2(cols))
    return out


def run(case: str, device: torch.device) -> list[Check]:
    dtype = dtype_of(case)
    x = (torch.randn(ROWS, COLS, generator=torch.Generator().manual_seed(1)) * 3).to(dtype)
    got = softmax(x.to(device))
    want = torch.softmax(x.float(), dim=-1).to(dtype)
    return [check(f"softmax({ROWS}x{COLS} {case})", got, want)]


def main(argv=None) -> int:
    return example_main(__doc__, CASES, run, argv)


if __name__ == "__main__":
    sys.exit(main())
