"""store_pieces: a strided store of a tile that a run of vector instructions has just written piece
by piece (a GEMM's fp32 -> bf16 conversion of its accumulator, chunked by `Emitter.vector`) is
issued in row pieces, each right after the instructions that write its rows.

A core's engines run in program order: one store after the whole conversion leaves HBM idle while
the compute engine converts; stored in pieces, the DMA-out engine moves the first rows while the
compute engine converts the next. Same bytes to the same addresses, so results do not change.

The store's own address arithmetic (scalar instructions, emitted after the conversion) moves in
front of the conversion; each piece's store is the whole store's descriptor with its rows cut:
start + r0 * stride0 * itemsize, dim 0's bounds lo0 - r0 and hi0 - r0 (a masked row stays masked).
At most as many pieces as the DMA queue has free entries (a full queue would stall the compute
engine), cut only where a vector instruction ends a whole row.

Each piece holds a DMA token until the program's end waits for it: when the pieces overflow the
tokens (or registers), `codegen.generate` lowers the kernel again with half as many before it
gives up a pipeline stage (bench's bf16 1024^3 at 256 x 256 x 64 and num_stages 3: 8 pieces
overflow its 16 tokens, 2 fit; with 8 it ran at 2 stages, 99.8 us against 90.7 without pieces,
89.4 us with 2)."""

from __future__ import annotations

import math

from ..isa.table import ISA, ITEMSIZE
from .emitter import BRANCHES, Token, View, VReg


def _scalar(inst) -> bool:
    row = ISA.get(inst.mnemonic)
    return row is not None and row.unit == "scalar" and inst.mnemonic not in BRANCHES


def _writes_piece(inst, v: View) -> tuple[int, int] | None:
    """(first, end) elements of v's buffer that a vector instruction writes as one contiguous piece
    inside v, with tiles and immediates only; else None."""
    row = ISA.get(inst.mnemonic)
    if row is None or row.unit != "vector" or any(isinstance(o, VReg) for o in inst.operands):
        return None
    written = [o for od, o in zip(row.operands, inst.operands) if od.kind == "t" and od.role in ("def", "inout")]
    if len(written) != 1 or written[0].buffer is not v.buffer or not written[0].is_contiguous():
        return None
    w = written[0]
    first, end = w.offset, w.offset + w.numel
    return (first, end) if v.offset <= first and end <= v.offset + v.numel else None


def _groups(pieces: list, v: View, most: int) -> list[tuple[int, int]]:
    """(end piece index, end row) of each store: cuts at row-aligned piece ends, as even as possible.
    With 3 stores or more the first ends at the first cut (the DMA-out engine starts as early as it
    can, the next stores keep it busy); with 2, the second would wait for the rest of the tile."""
    row = math.prod(v.shape[1:])
    aligned = [(i + 1, (end - v.offset) // row) for i, (_, end, _) in enumerate(pieces) if (end - v.offset) % row == 0]
    if len(aligned) < 2 or most < 2:
        return []
    n = min(len(aligned), most)
    first, rest = ([], aligned) if n < 3 else ([aligned[0]], aligned[1:])
    n -= len(first)
    return first + [rest[math.ceil((g + 1) * len(rest) / n) - 1] for g in range(n)]


def store(ctx, v: View, start, strides, lo, hi) -> bool:
    """Emit the store of `v` in row pieces interleaved with the vector instructions that just wrote
    it (module docstring); False (nothing emitted) when the code before is not that shape."""
    em = ctx.em
    if v.rank < 2 or v.shape[0] < 2 or not v.is_contiguous():
        return False
    code = em.code
    k = len(code)
    while k > 0 and _scalar(code[k - 1]):
        k -= 1
    j, pieces = k, []
    while j > 0 and (span := _writes_piece(code[j - 1], v)) is not None:
        pieces.append((*span, code[j - 1]))
        j -= 1
    pieces.reverse()
    if not pieces or pieces[0][0] != v.offset or pieces[-1][1] != v.offset + v.numel:
        return False
    if any(a[1] != b[0] for a, b in zip(pieces, pieces[1:])):
        return False  # not one pass over the tile's elements in order
    most = em.queue_depth - len(em.pending)
    groups = _groups(pieces, v, most if ctx.max_store_pieces is None else min(most, ctx.max_store_pieces))
    if not groups:
        return False
    ctx.most_store_pieces = max(ctx.most_store_pieces, len(groups))
    tail = code[k:]
    del code[j:]
    code += tail  # the store's address arithmetic, before the pieces
    isz = ITEMSIZE[v.dtype]
    cuts, r0 = [], 0
    for _, r1 in groups:  # each piece's descriptor, computed up front
        first = VReg()
        ctx.emit("s.mul", first, strides[0], ctx.li(r0 * isz), suffixes=("i64",))
        s = VReg()
        ctx.emit("s.add", s, start, first, suffixes=("i64",))
        lo0, hi0 = VReg(), VReg()
        ctx.emit("s.sub", lo0, lo[0], ctx.li(r0), suffixes=("i64",))
        ctx.emit("s.sub", hi0, hi[0], ctx.li(r0), suffixes=("i64",))
        cuts.append((r0, r1, s, lo0, hi0))
        r0 = r1
    done = 0
    for (end_piece, _), (r0, r1, s, lo0, hi0) in zip(groups, cuts):
        code += [p[2] for p in pieces[done:end_piece]]
        ctx.emit("dma.store", Token(), v.sub(0, r0, r1 - r0), s, strides, (lo0, *lo[1:]), (hi0, *hi[1:]))
        done = end_piece
    return True
