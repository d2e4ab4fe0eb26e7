"""Reductions and scans of tiles with one combine (add, max, xor, ...): v.reduce / v.scan, split
into pieces when a tile exceeds the vector unit's max_elements, the pieces merged with the
elementwise instruction of the same combine. Shared by the tt.reduce / tt.scan rules
(rules_reduce) and the lane machinery of rules_map (any-lane tests)."""

from __future__ import annotations

from .context import is_float
from .emitter import Imm, View

# combine -> the elementwise instruction that merges two partial results (float, int)
MERGE = {
    "add": ("v.add", "v.add"),
    "mul": ("v.mul", "v.mul"),
    "maxnum": ("v.maxnum", "v.maxnum"),
    "minnum": ("v.minnum", "v.minnum"),
    "max": ("v.maximum", "v.maxs"),
    "min": ("v.minimum", "v.mins"),
    "umax": ("v.maxu", "v.maxu"),
    "umin": ("v.minu", "v.minu"),
    "and": ("v.and", "v.and"),
    "or": ("v.or", "v.or"),
    "xor": ("v.xor", "v.xor"),
}


def merge(ctx, combine, dst, a, b):
    ctx.vec(MERGE[combine][0 if is_float(dst.dtype) else 1], dst, a, b)


def reduce_into(ctx, combine, dst: View, src: View, axis: int) -> None:
    limit = ctx.em.max_elements
    if src.numel <= limit:
        ctx.emit("v.reduce", dst, src, Imm(axis), suffixes=(combine,))
        return
    others = [k for k in range(src.rank) if k != axis and src.shape[k] > 1]
    if others:
        k = others[0]
        kd = k if k < axis else k - 1
        per = max(1, limit // (src.numel // src.shape[k]))
        for s in range(0, src.shape[k], per):
            n = min(per, src.shape[k] - s)
            reduce_into(ctx, combine, dst.sub(kd, s, n), src.sub(k, s, n), axis)
        return
    n = src.shape[axis]
    reduce_into(ctx, combine, dst, src.sub(axis, 0, limit), axis)
    part = ctx.new(dst.dtype, dst.shape, what="partial reduction")
    for s in range(limit, n, limit):
        reduce_into(ctx, combine, part, src.sub(axis, s, min(limit, n - s)), axis)
        merge(ctx, combine, dst, dst, part)


def scan_into(ctx, combine, dst: View, src: View, axis: int, reverse: bool) -> None:
    limit = ctx.em.max_elements
    if src.numel <= limit:
        ctx.emit("v.scan", dst, src, Imm(axis), Imm(int(reverse)), suffixes=(combine,))
        return
    others = [k for k in range(src.rank) if k != axis and src.shape[k] > 1]
    if others:
        k = others[0]
        per = max(1, limit // (src.numel // src.shape[k]))
        for s in range(0, src.shape[k], per):
            n = min(per, src.shape[k] - s)
            scan_into(ctx, combine, dst.sub(k, s, n), src.sub(k, s, n), axis, reverse)
        return
    n = src.shape[axis]
    starts = list(range(0, n, limit))
    if reverse:
        starts.reverse()
    prev = None
    for s in starts:
        size = min(limit, n - s)
        piece = dst.sub(axis, s, size)
        scan_into(ctx, combine, piece, src.sub(axis, s, size), axis, reverse)
        if prev is not None:  # fold in the carry from the previous piece
            carry = prev.sub(axis, 0 if reverse else prev.shape[axis] - 1, 1).broadcast(piece.shape)
            merge(ctx, combine, piece, carry, piece)
        prev = piece
