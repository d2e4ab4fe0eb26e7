"""cat's kernel: up to PARTS inputs copied into their slices of the result in one launch of one program (each
part, a source and its slice, over its own coalesced layout: what one elementwise copy launch per input does, the
same loads, conversions and stores)."""

from __future__ import annotations

import triton
import triton.language as tl

from .kernels import _at, _split

PARTS = 8  # the most inputs one launch copies
BLOCK = 512  # the most elements (all parts together) of one launch: one program
_NAMES = ("n", "s1", "s2", "s3", "o0", "o1", "o2", "o3", "a0", "a1", "a2", "a3")
# not specialized (nor the pointers on their alignment: rows of a stack start anywhere): one compile per PARTS
_INTS = [f"{name}_{j}" for j in range(PARTS) for name in _NAMES]
_POINTERS = [f"{name}{j}" for j in range(PARTS) for name in ("dst", "src")]


@triton.jit
def _copy_part(i, start, dst, src, n, s1, s2, s3, o0, o1, o2, o3, a0, a1, a2, a3, CT: tl.constexpr, DIMS: tl.constexpr):
    """Lanes [start, start + n) copy src's elements into dst (its slice of the result), each through its strides, as
    elementwise's copy does (loaded in CT, stored in dst's type); returns the next part's start."""
    local = i - start
    mask = (local >= 0) & (local < n)
    i0, i1, i2, i3 = _split(local, s1, s2, s3, DIMS)  # an arange plus a scalar: strided loads, not gathers
    x = tl.load(src + _at(i0, i1, i2, i3, a0, a1, a2, a3), mask=mask).to(CT)
    tl.store(dst + _at(i0, i1, i2, i3, o0, o1, o2, o3), x.to(dst.dtype.element_ty), mask=mask)
    return start + n


@triton.jit(do_not_specialize=_INTS, do_not_specialize_on_alignment=_POINTERS)
def cat_parts(
    dst0, src0, n_0, s1_0, s2_0, s3_0, o0_0, o1_0, o2_0, o3_0, a0_0, a1_0, a2_0, a3_0,
    dst1, src1, n_1, s1_1, s2_1, s3_1, o0_1, o1_1, o2_1, o3_1, a0_1, a1_1, a2_1, a3_1,
    dst2, src2, n_2, s1_2, s2_2, s3_2, o0_2, o1_2, o2_2, o3_2, a0_2, a1_2, a2_2, a3_2,
    dst3, src3, n_3, s1_3, s2_3, s3_3, o0_3, o1_3, o2_3, o3_3, a0_3, a1_3, a2_3, a3_3,
    dst4, src4, n_4, s1_4, s2_4, s3_4, o0_4, o1_4, o2_4, o3_4, a0_4, a1_4, a2_4, a3_4,
    dst5, src5, n_5, s1_5, s2_5, s3_5, o0_5, o1_5, o2_5, o3_5, a0_5, a1_5, a2_5, a3_5,
    dst6, src6, n_6, s1_6, s2_6, s3_6, o0_6, o1_6, o2_6, o3_6, a0_6, a1_6, a2_6, a3_6,
    dst7, src7, n_7, s1_7, s2_7, s3_7, o0_7, o1_7, o2_7, o3_7, a0_7, a1_7, a2_7, a3_7,
    PARTS: tl.constexpr, CT: tl.constexpr, BLOCK: tl.constexpr, DIMS: tl.constexpr,
):  # fmt: skip
    """Parts 0..PARTS-1 laid end to end over the lanes (a launch's unused parts repeat its first with n 0; the
    arguments of parts from PARTS on are None)."""
    i = tl.arange(0, BLOCK).to(tl.int64)
    start = 0
    start = _copy_part(
        i, start, dst0, src0, n_0, s1_0, s2_0, s3_0,
        o0_0, o1_0, o2_0, o3_0, a0_0, a1_0, a2_0, a3_0, CT, DIMS,
    )  # fmt: skip
    if PARTS > 1:
        start = _copy_part(
            i, start, dst1, src1, n_1, s1_1, s2_1, s3_1,
            o0_1, o1_1, o2_1, o3_1, a0_1, a1_1, a2_1, a3_1, CT, DIMS,
        )  # fmt: skip
    if PARTS > 2:
        start = _copy_part(
            i, start, dst2, src2, n_2, s1_2, s2_2, s3_2,
            o0_2, o1_2, o2_2, o3_2, a0_2, a1_2, a2_2, a3_2, CT, DIMS,
        )  # fmt: skip
    if PARTS > 3:
        start = _copy_part(
            i, start, dst3, src3, n_3, s1_3, s2_3, s3_3,
            o0_3, o1_3, o2_3, o3_3, a0_3, a1_3, a2_3, a3_3, CT, DIMS,
        )  # fmt: skip
    if PARTS > 4:
        start = _copy_part(
            i, start, dst4, src4, n_4, s1_4, s2_4, s3_4,
            o0_4, o1_4, o2_4, o3_4, a0_4, a1_4, a2_4, a3_4, CT, DIMS,
        )  # fmt: skip
    if PARTS > 5:
        start = _copy_part(
            i, start, dst5, src5, n_5, s1_5, s2_5, s3_5,
            o0_5, o1_5, o2_5, o3_5, a0_5, a1_5, a2_5, a3_5, CT, DIMS,
        )  # fmt: skip
    if PARTS > 6:
        start = _copy_part(
            i, start, dst6, src6, n_6, s1_6, s2_6, s3_6,
            o0_6, o1_6, o2_6, o3_6, a0_6, a1_6, a2_6, a3_6, CT, DIMS,
        )  # fmt: skip
    if PARTS > 7:
        start = _copy_part(
            i, start, dst7, src7, n_7, s1_7, s2_7, s3_7,
            o0_7, o1_7, o2_7, o3_7, a0_7, a1_7, a2_7, a3_7, CT, DIMS,
        )  # fmt: skip
