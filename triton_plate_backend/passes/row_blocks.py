"""row_blocks: the epilogue of a peeled last K trip follows its m.mma row block by row block.

A core's compute engine runs matrix and vector instructions in program order: after a loop whose
last trip ends in one m.mma over the whole output tile, the epilogue's conversion (and so the first
store piece, `store_pieces`) waits for all of it, and only the store then runs under nothing.
`rules_scf` lowers such a loop's last trip apart from the loop with its m.mma cut in row blocks
(`rules_dot.mma`, ctx.mma_rows); `interleave` then moves each later instruction up over the blocks
it does not depend on (scalar work also over the waits for the blocks' operands and over buffers'
definitions), so each block's conversion and store piece come right after it and the DMA-out
engine moves rows while the matrix unit computes the next. Only the order changes (same
instructions, each after everything it reads or overwrites), so results do not change."""

from __future__ import annotations

from ..isa.table import ISA, ITEMSIZE
from .emitter import BRANCHES, Buffer, View, _tile_positions


def _span(v: View) -> tuple:
    """(buffer, first byte, end byte) a view touches."""
    lo = hi = v.offset
    for n, s in zip(v.shape, v.strides):
        if n > 1:
            lo, hi = lo + min(0, (n - 1) * s), hi + max(0, (n - 1) * s)
    size = ITEMSIZE[v.dtype]
    return v.buffer, lo * size, (hi + 1) * size


def _whole(b: Buffer) -> tuple:
    return b, 0, b.nbytes


def _access(inst) -> tuple[list, list] | None:
    """(spans read, spans written) of an instruction; None when nothing may move over it."""
    m = inst.mnemonic
    if m == ".def":
        return [], [_whole(inst.operands[0])]
    if m in (".use", "dma.wait"):
        spans = [_whole(b) for b in (*inst.operands, *inst.extra_uses) if isinstance(b, Buffer)]
        return spans, spans
    row = ISA.get(m)
    if row is None or m in BRANCHES or row.unit == "sync" or m.startswith("atom."):
        return None
    reads, writes = _tile_positions(row)
    rd = [_span(inst.operands[i]) for i in reads]
    wr = [_span(inst.operands[i]) for i in writes]
    if row.unit.startswith("dma"):  # a transfer reads and writes its tiles until it is waited for
        return rd + wr, rd + wr
    return rd, wr


def _overlap(xs: list, ys: list) -> bool:
    return any(a[0] is b[0] and a[1] < b[2] and b[1] < a[2] for a in xs for b in ys)


def _independent(x: tuple, y: tuple) -> bool:
    (xr, xw), (yr, yw) = x, y
    return not (_overlap(xr, yw) or _overlap(xw, yr) or _overlap(xw, yw))


def interleave(code: list, blocks: list) -> None:
    """Reorder `code` in place from the first of `blocks` (m.mma instructions, straight-line code
    after them): every other instruction moves up over the blocks just above it that it does not
    depend on; instructions other than the blocks keep their order, and nothing crosses a label,
    a branch or an instruction `_access` does not know."""
    ids = {id(b) for b in blocks}
    first = next((i for i, inst in enumerate(code) if id(inst) in ids), None)
    if first is None:
        return
    waits = set()  # the waits for the blocks' operands just above them: scalar work moves over them too
    while first > 0 and code[first - 1].mnemonic == "dma.wait":
        first -= 1
        waits.add(id(code[first]))
    out: list = []
    for inst in code[first:]:
        pos = len(out)
        if id(inst) not in ids and (x := _access(inst)) is not None:
            scalar = _scalar(inst)
            while pos > 0 and (
                (id(out[pos - 1]) in ids and _independent(x, _access(out[pos - 1])))
                or (scalar and (id(out[pos - 1]) in waits or out[pos - 1].mnemonic == ".def"))
            ):
                pos -= 1
        out.insert(pos, inst)
    code[first:] = out


def _scalar(inst) -> bool:
    """Scalar register work only: no tile, no DMA token, no memory (a wait does not delay it)."""
    row = ISA.get(inst.mnemonic)
    return row is not None and row.unit == "scalar" and all(od.kind in ("r", "rlist", "imm") for od in row.operands)
