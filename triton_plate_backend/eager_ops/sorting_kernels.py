"""The Triton kernels of sort and topk (sorting.py), a bitonic sorting network over rows padded to a power-of-two
length. Elements compare as (key, position) pairs: NaN after every number (first when descending, as torch sorts
it), equal keys in their order in the row (a stable sort), and the padding past the row's length after everything.
Any network that sorts by this order gives the same values and indices, so the three ways of running it agree
bit for bit: sort_rows (rows up to 2**MAX_LOG_WIDTH: the whole network in one program's registers, one launch),
sort_blocks (the stages within blocks of wider rows, one launch each) and bitonic_stage (one stage a launch)."""

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


# ---- one launch: rows of up to 2**MAX_LOG_WIDTH elements sorted in registers, one program per ROWS rows ----------
MAX_LOG_WIDTH = 12
# the elements a program sorts at once: short rows go ROW_ELEMENTS // width to a program (the simulator steps a
# program's instructions over all its rows at once: 8192 rows of 8, k=4, 300 ms at one row a program, 7 at 512)
ROW_ELEMENTS = 8192


@triton.jit
def _order_key(x, c, length, LOG_WIDTH: tl.constexpr, DESCENDING: tl.constexpr):
    """An element of at most 32 bits as one int64 that orders as _before orders (key, position): a key that
    orders as the number (-0.0 as 0.0, every NaN after +inf; the bits inverted when descending), offset to
    [0, 2**32), the padding 2**32; then the position in the low LOG_WIDTH bits (equal keys by position)."""
    if x.dtype.is_floating():
        f = x.to(tl.float32)
        bits = tl.where(f == 0, 0, f.to(tl.int32, bitcast=True))
        bits = tl.where(bits < 0, bits ^ 0x7FFFFFFF, bits)  # negative numbers: larger magnitude, smaller key
        key = tl.where(f != f, 0x7F800001, bits)  # +inf is 0x7F800000
    else:
        key = x.to(tl.int32)  # bool and uint8 zero-extended
    if DESCENDING:
        key = ~key
    key = tl.where(c < length, key.to(tl.int64) + 0x80000000, 0x100000000)
    return (key << LOG_WIDTH) | c


@triton.jit
def _halves(x, j: tl.constexpr):
    """Of rows [ROWS, WIDTH]: the elements whose bit j is clear and their partners i + j, [ROWS, WIDTH // 2j, j]
    each (Triton's tl.sort pairs them as [..., 2, ...] of a reshape; here split along a last dim of 2)."""
    return tl.split(tl.permute(tl.reshape(x, [x.shape[0], x.shape[1] // (2 * j), 2, j]), (0, 1, 3, 2)))


@triton.jit
def _joined(a, b):
    """_halves' inverse: rows [ROWS, 2 * a.shape[1] * a.shape[2]]."""
    x = tl.permute(tl.join(a, b), (0, 1, 3, 2))
    return tl.reshape(x, [x.shape[0], x.shape[1] * x.shape[2] * x.shape[3]])


@triton.jit
def _ascending(groups, j: tl.constexpr, k, base=0):
    """bitonic_stage's direction of the pairs of stage (k, j): ascending where the first's bit k is clear (its
    position in the row: base, the block's first, on)."""
    return (((base + tl.arange(0, groups) * (2 * j)) & k) == 0)[None, :, None]


@triton.jit
def _runtime(k: tl.constexpr):
    """k as an int32 value, not a constexpr: Triton's frontend generates a callee once per set of constexpr
    arguments, so the stages' (k, j) passed as constexprs made one _exchange per stage (36 at 256 wide, ~0.15 s
    of a sort kernel's compile); with k a value, one per j. The inliner and constant folding then leave the
    same program."""
    return tl.full([], k, tl.int32)


@triton.jit
def _exchange(x, k, j: tl.constexpr):
    """Stage (k, j) over order keys: each pair's smaller first where ascending, last where not."""
    a, b = _halves(x, j)
    lo = tl.minimum(a, b)
    hi = tl.maximum(a, b)
    up = _ascending(a.shape[1], j, k)
    return _joined(tl.where(up, lo, hi), tl.where(up, hi, lo))


@triton.jit
def _exchange_pairs(keys, positions, length, base, k, j: tl.constexpr, CT: tl.constexpr,
                    DESCENDING: tl.constexpr):  # fmt: skip
    """Stage (k, j) over (key, position) pairs (64-bit keys; blocks of wider rows, base: the block's first
    position): swapped where _before says the pair is out of order (it orders every two elements one way:
    positions differ)."""
    a, b = _halves(keys, j)
    ia, ib = _halves(positions, j)
    up = _ascending(a.shape[1], j, k, base)
    swap = _before(a.to(CT), ia, b.to(CT), ib, length, DESCENDING) != up
    keys = _joined(tl.where(swap, b, a), tl.where(swap, a, b))
    positions = _joined(tl.where(swap, ib, ia), tl.where(swap, ia, ib))
    return keys, positions


@triton.jit
def _first_half(x, LOG_KEEP: tl.constexpr):
    """Rows of runs of 2**LOG_KEEP sorted ascending and descending by turns: the smaller of each element of an
    ascending run and its partner in the descending run after it, a bitonic run holding the run pair's
    2**LOG_KEEP first (the top-k step of Triton's tl.topk); rows half as wide."""
    a, b = _halves(x, 1 << LOG_KEEP)
    return tl.reshape(tl.minimum(a, b), [x.shape[0], x.shape[1] // 2])


@triton.jit(do_not_specialize=["rows", "length", "keep", "s_row", "s_col", "v_row", "v_col", "i_row", "i_col"])
def sort_rows(
    src, values, indices, rows, length, keep, s_row, s_col, v_row, v_col, i_row, i_col,
    CT: tl.constexpr, DESCENDING: tl.constexpr, LOG_WIDTH: tl.constexpr, LOG_KEEP: tl.constexpr,
    ROWS: tl.constexpr,
):  # fmt: skip
    """The `keep` first of rows of `length` elements (strides s_row, s_col) in bitonic_stage's order, sorted in
    one program per ROWS rows (2**LOG_WIDTH wide, padded), stored to values and indices (their strides
    v_*, i_*). Elements of at most 32 bits sort as _order_key's int64s; the network's first LOG_KEEP
    rounds sort runs of 2**LOG_KEEP >= keep, then each _first_half halves the rows, merged back into
    runs, until one run is left; the values are loaded again at the sorted positions (their own bits).
    64-bit elements sort whole, as (key, position) pairs."""
    WIDTH: tl.constexpr = 1 << LOG_WIDTH
    r = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)[:, None]
    c = tl.arange(0, WIDTH)[None, :]
    x = tl.load(src + r * s_row + c * s_col, mask=(r < rows) & (c < length), other=0)
    KEEP: tl.constexpr = 1 << LOG_KEEP
    o = tl.arange(0, KEEP)[None, :]
    out = (r < rows) & (o < keep)
    if x.dtype.primitive_bitwidth <= 32:
        x = _order_key(x, c.to(tl.int64), length, LOG_WIDTH, DESCENDING)
        for s in tl.static_range(1, LOG_KEEP + 1):
            for t in tl.static_range(s):
                x = _exchange(x, _runtime(1 << s), 1 << (s - 1 - t))
        for _ in tl.static_range(LOG_KEEP, LOG_WIDTH):
            x = _first_half(x, LOG_KEEP)
            for t in tl.static_range(LOG_KEEP):
                x = _exchange(x, _runtime(KEEP), 1 << (LOG_KEEP - 1 - t))
        positions = x & (WIDTH - 1)
        tl.store(values + r * v_row + o * v_col, tl.load(src + r * s_row + positions * s_col, mask=out), mask=out)
    else:
        positions = tl.broadcast_to(c.to(tl.int64), [ROWS, WIDTH])
        for s in tl.static_range(1, LOG_WIDTH + 1):
            for t in tl.static_range(s):
                k = _runtime(1 << s)
                x, positions = _exchange_pairs(x, positions, length, 0, k, 1 << (s - 1 - t), CT, DESCENDING)
        tl.store(values + r * v_row + o * v_col, x, mask=out)  # LOG_KEEP == LOG_WIDTH
    tl.store(indices + r * i_row + o * i_col, positions, mask=out)


# ---- rows of up to 2**MAX_LOG_RANK elements: each element's rank, one compare of every pair -------------------
MAX_LOG_RANK = 5
# the most pairs rank_rows compares ([ROWS, WIDTH, WIDTH] tiles: 16384 64-bit keys broadcast are 128 KiB of SRAM);
# more rows go to sort_rows (8192 rows of 8 in 32 rank_rows programs: 7.2 ms, in sort_rows' 8: 5.6)
RANK_PAIRS = 16384


@triton.jit(do_not_specialize=["rows", "length", "keep", "s_row", "s_col", "v_row", "v_col", "i_row", "i_col"])
def rank_rows(
    src, values, indices, rows, length, keep, s_row, s_col, v_row, v_col, i_row, i_col,
    CT: tl.constexpr, DESCENDING: tl.constexpr, LOG_WIDTH: tl.constexpr, ROWS: tl.constexpr,
):  # fmt: skip
    """sort_rows' results for short rows: _before's order is strict and total (positions differ), so an element's
    place in the sorted row is the count of the row's elements that sort before it (_before's order, written
    out without its padding case: the padding is left out of the count), and each element is stored
    there (the `keep` first). WIDTH**2 compares a row in a few instructions, where the network's
    LOG_WIDTH * (LOG_WIDTH + 1) / 2 stages each reshape, split and join the row."""
    WIDTH: tl.constexpr = 1 << LOG_WIDTH
    r = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)[:, None]
    c = tl.arange(0, WIDTH)[None, :]
    live = (r < rows) & (c < length)
    x = tl.load(src + r * s_row + c * s_col, mask=live, other=0)
    key = x.to(CT)
    a = key[:, :, None]  # the element ranked
    b = key[:, None, :]  # each other element of its row: does it sort before a?
    if DESCENDING:
        ahead = b > a
    else:
        ahead = b < a
    tie = b == a
    if key.dtype.is_floating():  # NaN after every number, first when descending; NaNs tie
        a_nan = a != a
        b_nan = b != b
        if DESCENDING:
            ahead = ahead | (b_nan & ~a_nan)
        else:
            ahead = ahead | (a_nan & ~b_nan)
        tie = tie | (a_nan & b_nan)
    earlier = c[:, None, :] < c[:, :, None]
    ahead = (ahead | (tie & earlier)) & (c < length)[:, None, :]  # the padding sorts last
    rank = tl.sum(ahead.to(tl.int32), axis=2)
    out = live & (rank < keep)
    tl.store(values + r * v_row + rank * v_col, x, mask=out)
    tl.store(indices + r * i_row + rank * i_col, c.to(tl.int64), mask=out)


@triton.jit(do_not_specialize=["length", "width", "k"])
def sort_blocks(
    keys, positions, length, width, k,
    CT: tl.constexpr, DESCENDING: tl.constexpr, FIRST: tl.constexpr, LOG_BLOCK: tl.constexpr,
):  # fmt: skip
    """Rows wider than sort_rows takes (keys and positions as bitonic_stage holds them, rows `width` wide),
    a block of 2**LOG_BLOCK elements a program, the stages inside a block in one launch: FIRST, every stage
    (k, j) up to k = 2**LOG_BLOCK (the blocks sorted ascending and descending by turns; every position
    written); else the stages (k, j) of one k with j < 2**LOG_BLOCK, after bitonic_stage's of larger j."""
    BLOCK_: tl.constexpr = 1 << LOG_BLOCK
    start = tl.program_id(0).to(tl.int64) * BLOCK_
    at = start + tl.arange(0, BLOCK_)[None, :]
    base = start & (width - 1)  # the block's first position in its row
    x = tl.load(keys + at)
    if FIRST:
        p = base + tl.arange(0, BLOCK_)[None, :].to(tl.int64)
        for s in tl.static_range(1, LOG_BLOCK + 1):
            for t in tl.static_range(s):
                x, p = _exchange_pairs(x, p, length, base, _runtime(1 << s), 1 << (s - 1 - t), CT, DESCENDING)
    else:
        p = tl.load(positions + at)
        for t in tl.static_range(LOG_BLOCK):
            x, p = _exchange_pairs(x, p, length, base, k, 1 << (LOG_BLOCK - 1 - t), CT, DESCENDING)
    tl.store(keys + at, x)
    tl.store(positions + at, p)
