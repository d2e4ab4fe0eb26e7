"""The Triton kernel of scatter reductions in index order (scatter_reduce.py): one lane per place of the
result, each walking the index along the scattered dim, so no two lanes write one place and no atomic
is needed (prod and mean, and the types Triton's atomics lack, bool and the half types)."""

from __future__ import annotations

import triton
import triton.language as tl

from .kernels import _NO_SPECIALIZE, _at, _indices

SUM, PROD, MEAN, AMAX, AMIN = (tl.constexpr(k) for k in range(5))


@triton.jit
def _combine(acc, x, MODE: tl.constexpr):
    if MODE == PROD:
        result = acc * x
    elif MODE == AMAX:
        result = tl.where((x > acc) | (x != x), x, acc)  # NaN wins, as the CPU's max keeps it
    elif MODE == AMIN:
        result = tl.where((x < acc) | (x != x), x, acc)
    else:  # SUM, MEAN
        result = acc + x
    return result


@triton.jit(do_not_specialize=_NO_SPECIALIZE + ["length", "a_step", "b_step"])
def scatter_ordered(
    out, a, b, c, n, s1, s2, s3,
    o0, o1, o2, o3, a0, a1, a2, a3, b0, b1, b2, b3, p0, p1, p2, p3,
    length, a_step, b_step,
    MODE: tl.constexpr, INCLUDE_SELF: tl.constexpr, CT: tl.constexpr, FLOOR: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    """Over the places the index can reach (out's), `p` the strides that give a place's position along the
    scattered dim: out[place] combined, in index order, with a[j] for each j < length where b[j] (the
    index) is that position (an index out of range matches no place: torch checks the range first). a and b
    step by a_step and b_step along the dim. The half types add and multiply in float32 and round once, as
    the CPU does."""
    i, mask, i0, i1, i2, i3 = _indices(n, s1, s2, s3, BLOCK)
    position = _at(i0, i1, i2, i3, p0, p1, p2, p3)
    where = out + _at(i0, i1, i2, i3, o0, o1, o2, o3)
    pa = a + _at(i0, i1, i2, i3, a0, a1, a2, a3)
    pb = b + _at(i0, i1, i2, i3, b0, b1, b2, b3)
    own = tl.load(where, mask=mask)
    acc = own.to(CT)
    hits = tl.zeros([BLOCK], dtype=tl.int64)
    for j in range(0, length):
        idx = tl.load(pb + j * b_step, mask=mask, other=-1).to(tl.int64)
        x = tl.load(pa + j * a_step, mask=mask).to(CT)
        hit = idx == position
        combined = _combine(acc, x, MODE)
        if not INCLUDE_SELF:
            combined = tl.where(hits == 0, x, combined)
        acc = tl.where(hit, combined, acc)
        hits += hit.to(tl.int64)
    if MODE == MEAN:  # the sum, stored, then divided (the CPU's sum, then div_ by the counts)
        acc = acc.to(out.dtype.element_ty).to(CT)
        count = tl.maximum(hits + INCLUDE_SELF, 1).to(CT)  # no division by 0 where nothing came
        if FLOOR:
            q = acc // count
            acc = tl.where((acc % count != 0) & ((acc < 0) != (count < 0)), q - 1, q)
        else:
            acc = acc / count
    if not INCLUDE_SELF:
        acc = tl.where(hits == 0, own.to(CT), acc)
    tl.store(where, acc.to(out.dtype.element_ty), mask=mask)
