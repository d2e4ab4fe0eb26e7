"""Modular tile indices end to end: `(pid * BM + arange(BM)) % M`, the clamp of Inductor's mm template and
the tutorial matmul, reads the right rows for every M, and is a strided dma.load (no dma.gather) exactly
when the analysis proves that no tile wraps (passes/access_modular.py)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

import triton_plate_backend.torch_device  # noqa: F401  (registers the plate device)
from triton_plate_backend.errors import PlateError

COLS = 4


@triton.jit
def wrapped_rows(A, O, start_mul, M: tl.constexpr, BM: tl.constexpr, COLS: tl.constexpr):
    start = tl.program_id(0) * BM if start_mul == 0 else start_mul * BM
    rows = (start + tl.arange(0, BM)) % M
    x = tl.load(A + rows[:, None] * COLS + tl.arange(0, COLS)[None, :])
    out = tl.program_id(0) * BM + tl.arange(0, BM)
    tl.store(O + out[:, None] * COLS + tl.arange(0, COLS)[None, :], x)


def _dma_counts(kernel) -> tuple[int, int]:
    text = kernel.asm["pasm"]
    return len(re.findall(r"\bdma\.load\b", text)), len(re.findall(r"\bdma\.gather\b", text))


@pytest.mark.parametrize(
    "M, BM, strided",
    [(64, 16, True), (48, 16, True), (16, 16, True), (40, 16, False), (20, 16, False), (12, 16, False), (5, 16, False)],
)
def test_wrapped_rows_read_the_right_rows_for_every_modulus(M, BM, strided):
    """M a multiple of BM: strided; M % BM != 0 (the last tile wraps once) and M < BM (it wraps several
    times): a gather. Every program past the grid of M wraps around, as `%` does."""
    a = torch.arange(M * COLS, dtype=torch.float32).reshape(M, COLS)
    grid = 2 * triton.cdiv(M, BM) + 1
    o = torch.full((grid * BM, COLS), -1.0, device="plate")
    k = wrapped_rows[(grid,)](a.to("plate"), o, 0, M, BM, COLS)
    want = a.numpy()[np.arange(grid * BM) % M]
    np.testing.assert_array_equal(o.cpu().numpy(), want)
    loads, gathers = _dma_counts(k)
    assert (gathers == 0) == strided, k.asm["pasm"]
    assert loads >= (1 if strided else 0)
    access = re.search(r'tt.load.*plate.access = "(\w+)', k.asm["pir"]).group(1)
    assert access == ("strided" if strided else "gather")


def test_a_start_of_unknown_sign_reads_right_and_faults_when_negative():
    """start = start_mul * BM: the analysis cannot prove it non-negative. Non-negative: the right rows;
    negative: the access faults naming the load's source line (the gather of those negative offsets did
    too), rather than reading rows that `%` would not give."""
    M, BM = 32, 8
    a = torch.arange(M * COLS, dtype=torch.float32).reshape(M, COLS).to("plate")
    for s in (1, 3, 5):
        o = torch.empty((BM, COLS), device="plate")
        wrapped_rows[(1,)](a, o, s, M, BM, COLS)
        np.testing.assert_array_equal(o.cpu().numpy(), a.cpu().numpy()[(s * BM + np.arange(BM)) % M])
    line = 1 + Path(__file__).read_text().splitlines().index(
        "    x = tl.load(A + rows[:, None] * COLS + tl.arange(0, COLS)[None, :])"
    )
    with pytest.raises(PlateError, match=rf"dma.load(.|\n)*source: .*test_modular_access.py:{line}:"):
        wrapped_rows[(1,)](a, torch.empty((BM, COLS), device="plate"), -4, M, BM, COLS)
