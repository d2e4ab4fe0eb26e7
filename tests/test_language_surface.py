"""Kernels over the Triton language surface that benchmarks/probe_language.py found wrong on plate, each
reduced to a small case (numpy references)."""

from __future__ import annotations

import numpy as np
import triton
import triton.language as tl
from codegen_kernels.harness import compile_kernel, run


@triton.jit
def sort_broadcast(x, o, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    rows = tl.load(x + tl.arange(0, A)[:, None] * B + tl.arange(0, B)[None, :])
    t = tl.broadcast_to(tl.expand_dims(rows, 2), (A, B, C))  # stride 0 along the sorted axis
    s = tl.sort(t, descending=True)  # rows of equal values: the compare-and-swap selects still run
    tl.store(o + tl.arange(0, A * B * C), tl.reshape(s, (A * B * C,)))


def test_sort_of_a_broadcast_tile_whose_hypercube_has_more_dims_than_the_strided_select_takes():
    """tl.sort reshapes its input to log2(numel) dims of 2; of an [8, 8, 8] tile built by a broadcast the
    compare-and-swap's v.select saw 9 strided dims and _tiles.select_strided (8 at most) raised ValueError."""
    a, b, c = 8, 8, 8
    x = np.random.default_rng(0).integers(-50, 50, a * b).astype(np.int32)
    sig = {"x": "*i32", "o": "*i32", "A": "constexpr", "B": "constexpr", "C": "constexpr"}
    prog = compile_kernel(sort_broadcast, sig, {"A": a, "B": b, "C": c})
    (_, out), _ = run(prog, 1, [x, np.zeros(a * b * c, np.int32)])
    np.testing.assert_array_equal(out, np.repeat(x, c))
