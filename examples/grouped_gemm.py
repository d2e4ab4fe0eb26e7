"""Grouped GEMM: several independent C_g = A_g @ B_g of different sizes in ONE launch. The kernel gets
arrays of pointers (one entry per GEMM) and of sizes; a fixed grid of programs walks the
concatenated list of every GEMM's output tiles, each program taking every P-th tile.

The operands live in one arena tensor, and the arena is a kernel argument: on the plate device that
is one allocation; in host-memory mode it is what makes the memory behind the pointer arrays device
memory for the launch (only the storages of tensor arguments are registered).

    python examples/grouped_gemm.py [--case fp16]
"""

from __future__ import annotations

import sys

import torch
import triton
import triton.language as tl
from _common import Check, check, core_count, dtype_of, example_main

CASES = ("fp16", "bf16", "fp32")
SHAPES = ((64, 48, 32), (32, 96, 64), (80, 32, 48))  # (M, N, K) of each GEMM


@triton.jit
def grouped_matmul_kernel(
    arena_ptr,
    a_ptrs,
    b_ptrs,
    c_ptrs,
    shapes_ptr,
    n_gemms,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    elem = arena_ptr.dtype.element_ty
    pid = tl.program_id(0)
    programs = tl.num_programs(0)
    tiles_before = 0  # tiles of the GEMMs already walked past
    for g in range(n_gemms):
        m = tl.load(shapes_ptr + g * 3)
        n = tl.load(shapes_ptr + g * 3 + 1)
        k = tl.load(shapes_ptr + g * 3 + 2)
        tiles_n = tl.cdiv(n, BLOCK_N)
        tiles = tl.cdiv(m, BLOCK_M) * tiles_n
        a = tl.load(a_ptrs + g).to(tl.pointer_type(elem))
        b = tl.load(b_ptrs + g).to(tl.pointer_type(elem))
        c = tl.load(c_ptrs + g).to(tl.pointer_type(elem))
        # this program's first tile inside GEMM g: tiles are dealt round-robin over the whole list
        first = (pid - tiles_before) % programs
        first = tl.where(first < 0, first + programs, first)
        for t in range(first, tiles, programs):
            rows = (t // tiles_n) * BLOCK_M + tl.arange(0, BLOCK_M)
            cols = (t % tiles_n) * BLOCK_N + tl.arange(0, BLOCK_N)
            ks = tl.arange(0, BLOCK_K)
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for k0 in range(0, k, BLOCK_K):
                kk = k0 + ks
                a_t = tl.load(
                    a + rows[:, None] * k + kk[None, :], mask=(rows[:, None] < m) & (kk[None, :] < k), other=0.0
                )
                b_t = tl.load(
                    b + kk[:, None] * n + cols[None, :], mask=(kk[:, None] < k) & (cols[None, :] < n), other=0.0
                )
                acc = tl.dot(a_t, b_t, acc, input_precision="ieee")
            tl.store(
                c + rows[:, None] * n + cols[None, :], acc.to(elem), mask=(rows[:, None] < m) & (cols[None, :] < n)
            )
        tiles_before += tiles


def _carve(arena: torch.Tensor, start: int, shape: tuple[int, int]) -> tuple[torch.Tensor, int]:
    count = shape[0] * shape[1]
    return arena[start : start + count].view(shape), start + count


def grouped_matmul(pairs: list[tuple[torch.Tensor, torch.Tensor]], device: torch.device, programs: int | None = None):
    """[A_g @ B_g] for contiguous row-major pairs of one dtype, in one launch; the results are on ``device``."""
    dtype = pairs[0][0].dtype
    sizes = []
    for a, b in pairs:
        if a.dtype != dtype or b.dtype != dtype or a.shape[1] != b.shape[0]:
            raise ValueError(f"grouped_matmul: incompatible {tuple(a.shape)} {a.dtype} @ {tuple(b.shape)} {b.dtype}")
        sizes.append((a.shape[0], b.shape[1], a.shape[1]))
    total = sum(m * k + k * n + m * n for m, n, k in sizes)
    arena = torch.empty(total, dtype=dtype, device=device)
    views, at = [], 0
    for (a, b), (m, n, _) in zip(pairs, sizes):
        a_view, at = _carve(arena, at, tuple(a.shape))
        b_view, at = _carve(arena, at, tuple(b.shape))
        c_view, at = _carve(arena, at, (m, n))
        a_view.copy_(a.to(device))
        b_view.copy_(b.to(device))
        views.append((a_view, b_view, c_view))

    def pointers(i):
        return torch.tensor([v[i].data_ptr() for v in views], dtype=torch.int64, device=device)

    shapes = torch.tensor(sizes, dtype=torch.int32, device=device)
    grid = (programs or core_count(),)
    grouped_matmul_kernel[grid](
        arena, pointers(0), pointers(1), pointers(2), shapes, len(pairs), BLOCK_M=32, BLOCK_N=32, BLOCK_K=32
    )
    return [v[2] for v in views]


def run(case: str, device: torch.device) -> list[Check]:
    dtype = dtype_of(case)
    g = torch.Generator().manual_seed(6)
    pairs = [(torch.randn(m, k, generator=g).to(dtype), torch.randn(k, n, generator=g).to(dtype)) for m, n, k in SHAPES]
    outs = grouped_matmul(pairs, device)
    return [
        check(f"gemm {i}: {m}x{k} @ {k}x{n} {case}", c, (a.float() @ b.float()).to(dtype))
        for i, ((a, b), c, (m, n, k)) in enumerate(zip(pairs, outs, SHAPES))
    ]


def main(argv=None) -> int:
    return example_main(__doc__, CASES, run, argv)


if __name__ == "__main__":
    sys.exit(main())
