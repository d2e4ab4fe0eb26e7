"""The Triton kernel of sort and topk (sorting.py): one compare-exchange stage of a bitonic sorting
network over rows of a power-of-two length, launched once per stage. Elements compare as (key, position)
pairs: NaN after every number (first when descending, as torch sorts it), equal keys in their order in
the row (a stable sort), and the padding past the row's length after everything."""

from __future__ import annotations

import triton
import triton.language as tl

from .kernels import machine_of  # noqa: F401 - the launch option every eager kernel takes

BLOCK = 512


@triton.jit
def _before(a, ia, b, ib, length, DESCENDING: tl.constexpr):
    """Does (a, ia) sort before (b, ib)?"""
    a_nan = a != a
    b_nan = b != b
    if DESCENDING:
        ahead = (a > b) | (a_nan & ~b_nan)
        behind = (a < b) | (b_nan & ~a_nan)
    else:
        ahead = (a < b) | (b_nan & ~a_nan)
        behind = (a > b) | (a_nan & ~b_nan)
    by_key = ahead | (~behind & (ia < ib))
    a_pad = ia >= length
    b_pad = ib >= length
    return tl.where(a_pad | b_pad, ia < ib, by_key)


@triton.jit(do_not_specialize=["pairs", "half", "length", "k", "j"])
def bitonic_stage(
    keys, positions, pairs, half, length, k, j,
    CT: tl.constexpr, DESCENDING: tl.constexpr, FIRST: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    """Stage (k, j) over rows of 2 * half elements: element i and i + j (i's bit j clear) put in order,
    ascending where i's bit k is clear, descending where it is set. The first stage writes every position."""
    p = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = p < pairs
    row = p // half
    q = p % half
    i = (q // j) * (2 * j) + q % j
    first = row * (2 * half) + i
    second = first + j
    a = tl.load(keys + first, mask=mask)
    b = tl.load(keys + second, mask=mask)
    if FIRST:  # the first stage: every element still at its own position
        ia = i
        ib = i + j
    else:
        ia = tl.load(positions + first, mask=mask)
        ib = tl.load(positions + second, mask=mask)
    up = (i & k) == 0
    swap = tl.where(
        up,
        _before(b.to(CT), ib, a.to(CT), ia, length, DESCENDING),
        _before(a.to(CT), ia, b.to(CT), ib, length, DESCENDING),
    )
    tl.store(keys + first, tl.where(swap, b, a), mask=mask)
    tl.store(keys + second, tl.where(swap, a, b), mask=mask)
    tl.store(positions + first, tl.where(swap, ib, ia), mask=mask)
    tl.store(positions + second, tl.where(swap, ia, ib), mask=mask)
