"""The Triton kernels of ops that number a tensor's elements in order with a running count: nonzero
(advanced_index.py: each block's count, their exclusive sum, then each block places its elements, one
program per block), repeat_interleave's offsets (scans.py: one program walks the repeats, a block at a
time); and any/all (scans.py), one program per block."""

from __future__ import annotations

import triton
import triton.language as tl
from triton.language.extra import libdevice

from .kernels import machine_of  # noqa: F401 - the launch option every eager kernel takes

BLOCK = 512
ANY_BLOCK = 4096  # any/all: the elements of one program
NONZERO_BLOCK = 4096  # nonzero: the elements of one program (one program's walk of a 6.5M-element mask: minutes)
RANK = 4  # the dims nonzero takes (sizes s0..s3, the first padded with 1)


@triton.jit(do_not_specialize=["n"])
def nonzero_counts(x, counts, n, BLOCK: tl.constexpr):
    """counts[p] = how many elements of block p of x (contiguous, n elements) are nonzero (NaN counts)."""
    p = tl.program_id(0)
    i = p.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = i < n
    flag = (tl.load(x + i, mask=inside, other=0) != 0) & inside
    tl.store(counts + p + tl.arange(0, 1), tl.sum(flag.to(tl.int64), axis=0) + tl.zeros([1], dtype=tl.int64))


@triton.jit(do_not_specialize=["n", "s1", "s2", "s3"])
def nonzero_place(
    x, starts, out, n, s1, s2, s3, NDIM: tl.constexpr, BLOCK: tl.constexpr, ONE_BLOCK: tl.constexpr = False
):
    """x contiguous of n elements, sizes (., s1, s2, s3): out[c, :NDIM] = the coordinates of the c-th
    nonzero element, c = starts[p] (the nonzero elements of the blocks before block p) plus its running
    count in block p, so in row-major order as torch lists them. ONE_BLOCK (n <= BLOCK, one program): no
    starts to read (the counts and their sum are not launched), and starts[0] gets the count."""
    p = tl.program_id(0)
    i = p.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = i < n
    flag = (tl.load(x + i, mask=inside, other=0) != 0) & inside
    ones = flag.to(tl.int64)
    if ONE_BLOCK:
        place = tl.cumsum(ones, axis=0) - ones
        tl.store(starts + tl.arange(0, 1), tl.sum(ones, axis=0) + tl.zeros([1], dtype=tl.int64))
    else:
        place = tl.load(starts + p) + tl.cumsum(ones, axis=0) - ones
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


@triton.jit
def _block_hits(x, i, n, ALL: tl.constexpr):
    """Per element i of x (contiguous, n elements; past n: no hit): nonzero (NaN counts), or with ALL, zero."""
    inside = i < n
    flag = tl.load(x + i, mask=inside) != 0
    if ALL:
        hit = (flag == 0) & inside
    else:
        hit = flag & inside
    return hit


@triton.jit(do_not_specialize=["n"])
def any_nonzero(x, out, n, ALL: tl.constexpr, BLOCK: tl.constexpr):
    """out[0] (int32, 0 before) = 1 where any element of x (contiguous, n elements) is nonzero (NaN counts),
    or with ALL, where any is zero: each program a block, combined by an atomic max (no walk: a 4M-element
    tensor in one program's loop took a minute in the simulator)."""
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    hit = _block_hits(x, i, n, ALL)
    tl.atomic_max(out + tl.arange(0, 1), tl.max(hit.to(tl.int32), axis=0) + tl.zeros([1], dtype=tl.int32))


@triton.jit(do_not_specialize=["n"])
def any_all_block(x, out, n, ALL: tl.constexpr, BLOCK: tl.constexpr):
    """out[0] (out's type: bool, or uint8 for a uint8 x) = whether any element of x (contiguous, n <= BLOCK
    elements) is nonzero (NaN counts), or with ALL, whether none is zero: any_nonzero's one block, its answer
    stored as the result (one launch: no zeroed flag to combine into, no compare after)."""
    i = tl.arange(0, BLOCK)
    hit = _block_hits(x, i, n, ALL)
    found = tl.max(hit.to(tl.int32), axis=0) + tl.zeros([1], dtype=tl.int32)
    answer = found == 0 if ALL else found != 0
    tl.store(out + tl.arange(0, 1), answer.to(out.dtype.element_ty))


@triton.jit(do_not_specialize=["n"])
def exclusive_sum(x, out, total, n, BLOCK: tl.constexpr):
    """out[i] = x[0] + ... + x[i - 1] (x contiguous, n elements, integers); total[0] = the whole sum."""
    carried = tl.zeros([1], dtype=tl.int64)
    for start in range(0, n, BLOCK):
        i = start + tl.arange(0, BLOCK)
        inside = i < n
        r = tl.load(x + i, mask=inside, other=0).to(tl.int64)
        tl.store(out + i, carried + tl.cumsum(r, axis=0) - r, mask=inside)
        carried += tl.sum(r, axis=0)
    tl.store(total + tl.arange(0, 1), carried)


@triton.jit(do_not_specialize=["n", "m", "steps"])
def repeat_positions(starts, out, n, m, steps, BLOCK: tl.constexpr):
    """out[j] (j < m) = the last i < n whose start (an exclusive sum of repeats) is at most j: a binary
    search of `steps` halvings, one output element per lane."""
    j = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = j < m
    lo = tl.zeros([BLOCK], dtype=tl.int64)
    hi = tl.zeros([BLOCK], dtype=tl.int64) + n
    for _ in range(0, steps):
        mid = (lo + hi) // 2
        start = tl.load(starts + mid, mask=inside & (mid < n), other=0)
        up = (start <= j) & (hi - lo > 1)
        lo = tl.where(up, mid, lo)
        hi = tl.where(up | (hi - lo <= 1), hi, mid)
    tl.store(out + j, lo, mask=inside)


@triton.jit(do_not_specialize=["n"])
def cumsum_rows(x, out, n, ACC: tl.constexpr, BLOCK: tl.constexpr, PRODUCT: tl.constexpr):
    """out[r, :] = the running sum (PRODUCT: product) of x[r, :] (both contiguous rows of n elements), one program
    per row: each block's scan in ACC (float32 for the half types, as CUDA's; tl.cumprod is an associative scan of
    a multiply) combined with the rows' running value before it (0, or 1 for PRODUCT, at first)."""
    row = tl.program_id(0).to(tl.int64) * n
    carry = tl.sum(tl.zeros([BLOCK], dtype=ACC), axis=0)
    if PRODUCT:
        carry = carry + 1
    for start in range(0, n, BLOCK):
        i = start + tl.arange(0, BLOCK)
        inside = i < n
        v = tl.load(x + row + i, mask=inside, other=0).to(ACC)
        if PRODUCT:
            scanned = carry * tl.cumprod(v, axis=0)
            last = tl.minimum(n - start, BLOCK) - 1
            carry = tl.sum(tl.where(tl.arange(0, BLOCK) == last, scanned, 0), axis=0).to(ACC)
        else:
            scanned = tl.cumsum(v, axis=0) + carry
            carry = carry + tl.sum(v, axis=0)
        tl.store(out + row + i, scanned.to(out.dtype.element_ty), mask=inside)


@triton.jit
def _log_add_exp(a, b):
    """ATen's CPU _log_add_exp_helper: log1p(exp(min - max)) + max; NaN on either side gives NaN, and two equal
    infinities give themselves (-inf with -inf stays -inf)."""
    lo = tl.minimum(a, b)
    hi = tl.maximum(a, b)
    same_infinity = (lo == hi) & (tl.abs(lo) == float("inf"))
    r = tl.where(same_infinity, a, libdevice.log1p(tl.exp(lo - hi)) + hi)
    return tl.where((a != a) | (b != b), a + b, r)


@triton.jit(do_not_specialize=["n"])
def logcumsumexp_rows(x, out, n, ACC: tl.constexpr, BLOCK: tl.constexpr):
    """out[r, :] = the running log(sum(exp)) of x[r, :] (both contiguous rows of n elements), one program per row:
    each block's scan of _log_add_exp in ACC (float32 for the half types) combined with the rows' value before it
    (-inf at first), a NaN once met staying NaN, as ATen's CPU loop."""
    row = tl.program_id(0).to(tl.int64) * n
    carry = tl.sum(tl.zeros([BLOCK], dtype=ACC), axis=0) - float("inf")
    for start in range(0, n, BLOCK):
        i = start + tl.arange(0, BLOCK)
        inside = i < n
        v = tl.load(x + row + i, mask=inside, other=-float("inf")).to(ACC)
        scanned = _log_add_exp(carry, tl.associative_scan(v, 0, _log_add_exp))
        tl.store(out + row + i, scanned.to(out.dtype.element_ty), mask=inside)
        last = tl.minimum(n - start, BLOCK) - 1
        carry = tl.sum(tl.where(tl.arange(0, BLOCK) == last, scanned, 0), axis=0).to(ACC)


@triton.jit
def _later_max(av, ai, bv, bi):
    # ATen's cummax step (x >= running or isnan(x): x and its index), over segments: b is the later one
    take = (bv >= av) | (bv != bv)
    return tl.where(take, bv, av), tl.where(take, bi, ai)


@triton.jit
def _later_min(av, ai, bv, bi):
    take = (bv <= av) | (bv != bv)
    return tl.where(take, bv, av), tl.where(take, bi, ai)


@triton.jit
def cumextreme_rows(x, values, indices, n, MAX: tl.constexpr, BLOCK: tl.constexpr):
    """values[r, :], indices[r, :] = the running max (MAX) or min of x[r, :] and where it was (contiguous rows
    of n elements), one program per row: the later of equal elements wins, and NaN once met stays (the last
    NaN's index), as ATen's cummax / cummin."""
    row = tl.program_id(0).to(tl.int64) * n
    carry_v = tl.load(x + row)
    carry_i = tl.sum(tl.zeros([BLOCK], dtype=tl.int64), axis=0)
    for start in range(0, n, BLOCK):
        i = start + tl.arange(0, BLOCK)
        inside = i < n
        v = tl.load(x + row + i, mask=inside, other=0)
        idx = i.to(tl.int64)
        if MAX:  # the block's scan, then the rows before it (the carry) as the earlier segment of each
            sv, si = tl.associative_scan((v, idx), 0, _later_max)
            sv, si = _later_max(carry_v, carry_i, sv, si)
        else:
            sv, si = tl.associative_scan((v, idx), 0, _later_min)
            sv, si = _later_min(carry_v, carry_i, sv, si)
        tl.store(values + row + i, sv, mask=inside)
        tl.store(indices + row + i, si, mask=inside)
        last = tl.minimum(n - start, BLOCK) - 1
        pick = tl.arange(0, BLOCK) == last
        carry_v = tl.sum(tl.where(pick, sv, 0), axis=0).to(sv.dtype)
        carry_i = tl.sum(tl.where(pick, si, 0), axis=0)


GROUP = 16  # long rows' cumsum: the BLOCK-element blocks of one program (a [GROUP, BLOCK] tile)
CHAIN = 64  # long rows: the block sums one step of the carries walk loads
LONG_ROW = 8 * BLOCK  # rows at least this long, and few of them, scan in three launches (scans.cumsum)


@triton.jit(do_not_specialize=["n", "blocks"])
def block_sums(x, sums, n, blocks, ACC: tl.constexpr, BLOCK: tl.constexpr, GROUP: tl.constexpr):
    """sums[r, b] = the sum in ACC of block b (BLOCK elements) of row r of x (contiguous rows of n elements),
    program (r, g) taking blocks g*GROUP .. as the rows of one tile: each row's tl.sum the one cumsum_rows
    takes of that block."""
    r = tl.program_id(0).to(tl.int64)
    b = tl.program_id(1).to(tl.int64) * GROUP + tl.arange(0, GROUP)
    i = b[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :]
    v = tl.load(x + r * n + i, mask=i < n, other=0).to(ACC)
    tl.store(sums + r * blocks + b, tl.sum(v, axis=1), mask=b < blocks)


@triton.jit(do_not_specialize=["blocks"])
def carries(sums, before, blocks, CHAIN: tl.constexpr, EXACT: tl.constexpr):
    """before[r, b] = sums[r, 0] + ... + sums[r, b - 1], added one at a time in order from +0.0 as cumsum_rows's
    carry (program r): CHAIN sums loaded and CHAIN results stored at a time, each picked out by a tl.sum of it and
    zeros (exact: the carry is never -0.0). EXACT (integers, whose sums any order gives): a tl.cumsum of CHAIN
    sums a step."""
    row = tl.program_id(0).to(tl.int64) * blocks
    carry = tl.sum(tl.zeros([CHAIN], dtype=sums.dtype.element_ty), axis=0)
    lane = tl.arange(0, CHAIN)
    for start in range(0, blocks, CHAIN):
        s = tl.load(sums + row + start + lane, mask=start + lane < blocks, other=0)
        if EXACT:
            tl.store(before + row + start + lane, carry + tl.cumsum(s, axis=0) - s, mask=start + lane < blocks)
            carry = carry + tl.sum(s, axis=0)
        else:
            carry = _chain(s, carry, before + row + start, blocks - start, CHAIN)


@triton.jit
def _chain(s, carry, before, left, CHAIN: tl.constexpr):
    """before[j] = carry + s[0] + ... + s[j - 1] for j < min(left, CHAIN), one add a step; returns the last carry."""
    lane = tl.arange(0, CHAIN)
    got = tl.zeros([CHAIN], dtype=s.dtype)
    for j in range(0, tl.minimum(left, CHAIN)):
        pick = lane == j
        got = tl.where(pick, carry, got)
        carry = carry + tl.sum(tl.where(pick, s, 0), axis=0)
    tl.store(before + lane, got, mask=lane < left)
    return carry


@triton.jit(do_not_specialize=["n", "blocks"])
def scan_blocks(x, before, out, n, blocks, ACC: tl.constexpr, BLOCK: tl.constexpr, GROUP: tl.constexpr):
    """out[r, i] = tl.cumsum of i's block plus the sum of the blocks before it (before[r, b]): cumsum_rows's
    values, GROUP blocks a program as the rows of one tile."""
    r = tl.program_id(0).to(tl.int64)
    b = tl.program_id(1).to(tl.int64) * GROUP + tl.arange(0, GROUP)
    i = b[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :]
    inside = i < n
    v = tl.load(x + r * n + i, mask=inside, other=0).to(ACC)
    carry = tl.load(before + r * blocks + b, mask=b < blocks, other=0)
    scanned = tl.cumsum(v, axis=1) + carry[:, None]
    tl.store(out + r * n + i, scanned.to(out.dtype.element_ty), mask=inside)


@triton.jit
def _later_max_pair(av, ai, bv, bi):
    return _later_max(av, ai, bv, bi)


@triton.jit
def _later_min_pair(av, ai, bv, bi):
    return _later_min(av, ai, bv, bi)


@triton.jit(do_not_specialize=["n", "blocks"])
def block_extremes(x, values, indices, n, blocks, MAX: tl.constexpr, BLOCK: tl.constexpr, GROUP: tl.constexpr):
    """values[r, b], indices[r, b] = the running max (MAX) or min of block b of row r of x at its end, and where
    (cumextreme_rows's step; a choice of the last extreme, NaN first, whatever the order of the combines), GROUP
    blocks a program as the rows of one tile."""
    r = tl.program_id(0).to(tl.int64)
    b = tl.program_id(1).to(tl.int64) * GROUP + tl.arange(0, GROUP)
    i = b[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :]
    idx = tl.minimum(i, n - 1)  # past the row's end: its last element again, which a later tie takes anyway
    v = tl.load(x + r * n + idx)
    if MAX:
        bv, bi = tl.reduce((v, idx), 1, _later_max_pair)
    else:
        bv, bi = tl.reduce((v, idx), 1, _later_min_pair)
    tl.store(values + r * blocks + b, bv, mask=b < blocks)
    tl.store(indices + r * blocks + b, bi, mask=b < blocks)


@triton.jit(do_not_specialize=["blocks"])
def extreme_carries(values, indices, blocks, MAX: tl.constexpr, CHAIN: tl.constexpr):
    """values[r, b], indices[r, b] become the running extreme of blocks 0..b of row r (program r, CHAIN blocks a
    step: a scan of them then the blocks before as the earlier segment)."""
    row = tl.program_id(0).to(tl.int64) * blocks
    carry_v = tl.load(values + row)
    carry_i = tl.load(indices + row)
    lane = tl.arange(0, CHAIN)
    for start in range(0, blocks, CHAIN):
        inside = start + lane < blocks
        v = tl.load(values + row + start + lane, mask=inside, other=0)
        i = tl.load(indices + row + start + lane, mask=inside, other=0)
        if MAX:
            sv, si = tl.associative_scan((v, i), 0, _later_max)
            sv, si = _later_max(carry_v, carry_i, sv, si)
        else:
            sv, si = tl.associative_scan((v, i), 0, _later_min)
            sv, si = _later_min(carry_v, carry_i, sv, si)
        tl.store(values + row + start + lane, sv, mask=inside)
        tl.store(indices + row + start + lane, si, mask=inside)
        last = start + tl.minimum(blocks - start, CHAIN) - 1
        carry_v = tl.load(values + row + last)  # read back: its bits (a -0.0 stays)
        carry_i = tl.load(indices + row + last)


@triton.jit(do_not_specialize=["n", "blocks"])
def scan_extreme_blocks(
    x, ends, ends_at, out, out_at, n, blocks, MAX: tl.constexpr, BLOCK: tl.constexpr, GROUP: tl.constexpr
):
    """out[r, i], out_at[r, i] = cumextreme_rows's values and indices: the scan of i's block with the running
    extreme of the blocks before it (ends[r, b - 1], ends_at[r, b - 1]; the row's first element for block 0) as
    its earlier segment, GROUP blocks a program as the rows of one tile."""
    r = tl.program_id(0).to(tl.int64)
    b = tl.program_id(1).to(tl.int64) * GROUP + tl.arange(0, GROUP)
    i = b[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :]
    inside = i < n
    v = tl.load(x + r * n + i, mask=inside, other=0)
    idx = i + tl.zeros([GROUP, BLOCK], dtype=tl.int64)
    first = b == 0
    before = (b < blocks) & ~first
    cv = tl.where(first, tl.load(x + r * n + b * 0), tl.load(ends + r * blocks + b - 1, mask=before, other=0))
    ci = tl.where(first, 0, tl.load(ends_at + r * blocks + b - 1, mask=before, other=0))
    if MAX:
        sv, si = tl.associative_scan((v, idx), 1, _later_max)
        sv, si = _later_max(cv[:, None], ci[:, None], sv, si)
    else:
        sv, si = tl.associative_scan((v, idx), 1, _later_min)
        sv, si = _later_min(cv[:, None], ci[:, None], sv, si)
    tl.store(out + r * n + i, sv, mask=inside)
    tl.store(out_at + r * n + i, si, mask=inside)
