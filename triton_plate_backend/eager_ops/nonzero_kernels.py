"""The Triton kernel of nonzero (advanced_index.py): one program walks the elements in order, a block at
a time, and writes each nonzero element's coordinates at its running count (a prefix sum), so the
result lists them in row-major order as torch does."""

from __future__ import annotations

import triton
import triton.language as tl

from .kernels import machine_of  # noqa: F401 - the launch option every eager kernel takes

BLOCK = 512
RANK = 4  # the dims nonzero takes (sizes s0..s3, the first padded with 1)


@triton.jit(do_not_specialize=["n", "s1", "s2", "s3"])
def nonzero(x, out, count, n, s1, s2, s3, NDIM: tl.constexpr, BLOCK: tl.constexpr):
    """x contiguous of n elements, sizes (., s1, s2, s3): out[c, :NDIM] = the coordinates of the c-th
    nonzero element; count[0] = how many."""
    total = tl.zeros([1], dtype=tl.int64)
    for start in range(0, n, BLOCK):
        i = start + tl.arange(0, BLOCK).to(tl.int64)
        inside = i < n
        flag = (tl.load(x + i, mask=inside, other=0) != 0) & inside
        ones = flag.to(tl.int64)
        place = total + tl.cumsum(ones, axis=0) - ones
        i3 = i % s3
        rest = i // s3
        i2 = rest % s2
        rest = rest // s2
        i1 = rest % s1
        i0 = rest // s1
        row = out + place * NDIM
        if NDIM == 1:
            tl.store(row, i3, mask=flag)
        elif NDIM == 2:
            tl.store(row, i2, mask=flag)
            tl.store(row + 1, i3, mask=flag)
        elif NDIM == 3:
            tl.store(row, i1, mask=flag)
            tl.store(row + 1, i2, mask=flag)
            tl.store(row + 2, i3, mask=flag)
        else:
            tl.store(row, i0, mask=flag)
            tl.store(row + 1, i1, mask=flag)
            tl.store(row + 2, i2, mask=flag)
            tl.store(row + 3, i3, mask=flag)
        total += tl.sum(ones, axis=0)
    tl.store(count + tl.arange(0, 1), total)
