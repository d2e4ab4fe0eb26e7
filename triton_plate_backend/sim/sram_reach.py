"""Which tile writes each tile read of a program can observe: reaching definitions over SRAM bytes.

The SRAM planner (passes/sram_plan.py) gives tiles with disjoint live ranges the same bytes, so two
tiles that overlap in SRAM need not exchange data: a matrix accumulator that dies before an
address tile is written over its bytes never reaches that address tile's readers. This analysis
says which writes a read can see, following the program's control flow (branches, jumps and loop
back edges, data_flow.py's reading of them) to a fixpoint.

SRAM is cut into ATOMS: the pieces between consecutive span boundaries of the program's tiles, so
each tile's span is a run of whole atoms. A write defines the atoms of its tile's span; it KILLS
(replaces every earlier write of) those atoms only when it writes every byte of them: a whole-tile
write of a contiguous tile (every tile write of the executor writes the whole tile). A strided or
broadcast tile writes some bytes of its span, so its write is added to the atoms' writes and
kills none. Bytes nobody wrote yet hold the zeros every program instance starts with (the
executor's fresh SRAM row), the same in every run; ``reads_unwritten_sram`` says whether a program
may read any (the executor zeroes a kept SRAM image again only for one that may).

``reaching_writes(program) -> {(pc, tile): pcs}``: for each tile an instruction reads (role use or
inout), the pcs of the writes whose bytes that read can observe; ``None`` when the control flow
cannot be read (a branch target outside the program): the caller keeps its flow-insensitive
answer."""

from __future__ import annotations

from ..isa.program import Program
from .data_flow import _BRANCHES, _ENDS, _target, slots

_UNITS = ("vector", "matrix", "dma_in", "dma_out")  # the units whose instructions read or write tiles


def _atoms(program: Program) -> tuple[list[int], list[range]]:
    """The sorted atom boundaries, and each tile's atoms as a range of atom indices."""
    spans = [t.span() for t in program.tiles]
    cuts = sorted({b for s in spans for b in s})
    index = {b: i for i, b in enumerate(cuts)}
    return cuts, [range(index[lo], index[hi]) if hi > lo else range(0) for lo, hi in spans]


def _blocks(program: Program) -> tuple[list[tuple[int, int]], list[list[int]]] | None:
    """Basic blocks as [start, end) pc ranges, and each block's successor blocks; None when a branch
    target is not a pc of the program (or its end)."""
    instrs, n = program.instrs, len(program.instrs)
    starts = {0}
    for pc, inst in enumerate(instrs):
        m = inst.mnemonic
        if m in _BRANCHES or m == "jmp":
            t = _target(inst)
            if not isinstance(t, int) or not 0 <= t <= n:
                return None
            starts.add(t)
        if m in _BRANCHES or m in _ENDS:
            starts.add(pc + 1)
    starts = sorted(s for s in starts if s < n)
    bounds = [(s, starts[k + 1] if k + 1 < len(starts) else n) for k, s in enumerate(starts)]
    index = {s: k for k, (s, _) in enumerate(bounds)}
    succs = []
    for k, (_, e) in enumerate(bounds):
        last = instrs[e - 1]
        out = []
        if last.mnemonic in _BRANCHES or last.mnemonic == "jmp":
            t = _target(last)
            if t < n:
                out.append(index[t])
        if last.mnemonic not in _ENDS and k + 1 < len(bounds):
            out.append(k + 1)
        succs.append(out)
    return bounds, succs


def reaching_writes(program: Program) -> dict[tuple[int, int], int] | None:
    """(pc, tile read there) -> bitmask of the pcs whose writes that read can observe (module
    docstring); None when the control flow cannot be read."""
    return _reaching(program, 0)


def reads_unwritten_sram(program: Program) -> bool:
    """Whether some read of the program may observe SRAM bytes no instruction of it wrote before (the zeros a
    fresh row starts with): a tile read reached by the program's entry, an instruction outside the tile
    units that reads a tile (dbg.print, dbg.assert), or control flow that cannot be read. When False,
    what a program instance's row held before it started is never seen (sim/executor.py then skips
    zeroing a kept SRAM image)."""
    for inst in program.instrs:
        s = slots(inst)
        if s.tile_use and s.row.unit not in _UNITS:
            return True
    entry = 1 << len(program.instrs)  # a bit no pc has: "not written by this program instance yet"
    reads = _reaching(program, entry)
    return reads is None or any(seen & entry for seen in reads.values())


def _reaching(program: Program, entry: int) -> dict[tuple[int, int], int] | None:
    """reaching_writes, every atom starting as ``entry`` (the bits of the writes before the program)."""
    got = _blocks(program)
    if got is None:
        return None
    bounds, succs = got
    _, atoms = _atoms(program)
    whole = [t.is_contiguous() and t.numel > 0 for t in program.tiles]
    effects = []  # per pc: (tiles read, [(atoms written, kills)])
    for inst in program.instrs:
        s = slots(inst)
        if s.row.unit not in _UNITS:
            effects.append(((), ()))
            continue
        effects.append((s.values(inst, s.tile_use), [(atoms[t], whole[t]) for t in s.values(inst, s.tile_def)]))

    def through(state: list[int], s: int, e: int, reads: dict | None) -> list[int]:
        for pc in range(s, e):
            used, written = effects[pc]
            if reads is not None:
                for t in used:
                    seen = 0
                    for a in atoms[t]:
                        seen |= state[a]
                    reads[(pc, t)] = seen
            bit = 1 << pc
            for span, kills in written:
                for a in span:
                    state[a] = bit if kills else state[a] | bit
        return state

    width = max((r.stop for r in atoms), default=0)
    into: list[list[int] | None] = [None] * len(bounds)
    if bounds:
        into[0] = [entry] * width
    work = [0] if bounds else []
    while work:
        b = work.pop()
        out = through(list(into[b]), *bounds[b], None)
        for s in succs[b]:
            if into[s] is None:
                into[s] = list(out)
                work.append(s)
                continue
            merged = [x | y for x, y in zip(into[s], out)]
            if merged != into[s]:
                into[s] = merged
                work.append(s)
    reads: dict[tuple[int, int], int] = {}
    for b, (s, e) in enumerate(bounds):
        if into[b] is not None:  # unreachable blocks read nothing
            through(list(into[b]), s, e, reads)
    return reads
