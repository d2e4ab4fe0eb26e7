"""Whether a program's trace can depend on the data in device memory.

The executor's trace (sim/trace.py) records which instructions each program ran (control flow) and
what each memory access moved (its addresses, masks and element counts). When no branch condition,
no DMA descriptor register (base, strides, bounds) and no DMA address or mask tile is computed from
memory's contents, the trace is a function of the program, grid, arguments and the allocations'
layout only: the launch's data cannot change it (`trace_reads_no_data`).

The analysis is conservative. Registers are followed per pc (a register reused for data and for a
loop bound is data only where the data reaches); tiles are data for the whole program once any
instruction writes data into SRAM bytes they share (loads, atomics, anything computed from data).
Atomics and debug instructions make the answer False outright (an atomic's result is data; a print
or an assert is an effect of its own)."""

from __future__ import annotations

import numpy as np

from ..isa.program import Program

_BRANCHES = frozenset({"bz", "bnz", "loop"})
_ENDS = frozenset({"jmp", "halt"})  # no fall-through


def _regs(inst, roles) -> list[int]:
    out: list[int] = []
    for od, v in zip(inst.row.operands, inst.operands):
        if od.role in roles:
            if od.kind == "r":
                out.append(v)
            elif od.kind == "rlist":
                out.extend(v)
    return out


def _tiles(inst, roles, names=None) -> list[int]:
    return [
        v
        for od, v in zip(inst.row.operands, inst.operands)
        if od.kind == "t" and od.role in roles and (names is None or od.name in names)
    ]


def _target(inst) -> int | None:
    return next((v for od, v in zip(inst.row.operands, inst.operands) if od.kind == "label"), None)


class Slots:
    """Which operands of an ISA row ``_regs``, ``_tiles`` and ``_target`` read, as operand positions: a
    row's instructions all have them at the same places, so an analysis that visits every instruction (and
    some many times, to a fixpoint) finds its registers and tiles by position (``slots``)."""

    __slots__ = ("row", "reg_use", "reg_def", "tile_use", "tile_def", "tile_addr", "label")

    def __init__(self, row):
        ops = list(enumerate(row.operands))
        self.row = row
        # (position, is a register list) of the registers it reads and writes
        self.reg_use = tuple((i, od.kind == "rlist") for i, od in ops if od.kind in ("r", "rlist") and od.role != "def")
        self.reg_def = tuple((i, od.kind == "rlist") for i, od in ops if od.kind in ("r", "rlist") and od.role != "use")
        self.tile_use = tuple(i for i, od in ops if od.kind == "t" and od.role in ("use", "inout"))
        self.tile_def = tuple(i for i, od in ops if od.kind == "t" and od.role in ("def", "inout"))
        self.tile_addr = tuple(i for i, od in ops if od.kind == "t" and od.role == "use" and od.name in ("addr", "m"))
        self.label = next((i for i, od in ops if od.kind == "label"), None)

    def mask(self, inst, regs) -> int:
        """The registers at positions ``regs`` (reg_use or reg_def) of ``inst`` as a bitmask."""
        out = 0
        for i, many in regs:
            if many:
                for r in inst.operands[i]:
                    out |= 1 << r
            else:
                out |= 1 << inst.operands[i]
        return out

    def values(self, inst, positions) -> list[int]:
        return [inst.operands[i] for i in positions]

    def target(self, inst) -> int | None:
        return None if self.label is None else inst.operands[self.label]


_SLOTS: dict[int, Slots] = {}  # id(row) -> its Slots (the row kept in it: an id is reused once freed)


def slots(inst) -> Slots:
    """The Slots of ``inst``'s ISA row."""
    row = inst.row
    got = _SLOTS.get(id(row))
    if got is None or got.row is not row:
        got = _SLOTS[id(row)] = Slots(row)
    return got


def trace_reads_no_data(program: Program) -> bool:
    """True when no control flow, address, mask or DMA descriptor of ``program`` is computed from
    memory's contents (module docstring): its trace over a grid, arguments and allocation layout is
    the same whatever the memory holds."""
    instrs = program.instrs
    if any(i.mnemonic.startswith(("atom.", "dbg.")) for i in instrs):
        return False
    spans = np.array([t.span() for t in program.tiles], dtype=np.int64).reshape(-1, 2)
    overlap = (spans[:, None, 0] < spans[None, :, 1]) & (spans[None, :, 0] < spans[:, None, 1])
    np.fill_diagonal(overlap, True)
    # per pc, what the walk reads of it: (mnemonic, unit, registers read and written as bitmasks, the
    # address and mask tiles of a DMA, the tiles a vector or matrix instruction reads and writes, successors)
    effects = []
    written = [False] * len(program.tiles)  # tiles some instruction writes data into (to a fixpoint)
    n = len(instrs)
    for pc, inst in enumerate(instrs):
        s = slots(inst)
        m, unit = inst.mnemonic, s.row.unit
        if unit == "dma_in":
            for t in s.values(inst, s.tile_def):
                written[t] = True
        succ = []
        if m not in _ENDS:
            succ.append(pc + 1)
        if m in _BRANCHES or m == "jmp":
            succ.append(s.target(inst))
        succ = [x for x in succ if x is not None and x < n]
        dma = unit in ("dma_in", "dma_out")
        tiles_in = s.values(inst, s.tile_addr if dma else s.tile_use) if dma or unit in ("vector", "matrix") else []
        tiles_out = s.values(inst, s.tile_def) if unit in ("vector", "matrix") else []
        effects.append((m, unit, s.mask(inst, s.reg_use), s.mask(inst, s.reg_def), dma, tiles_in, tiles_out, succ))
    data = overlap[np.array(written, bool)].any(axis=0).tolist()  # tiles sharing SRAM bytes with those
    while True:
        grown = False
        # registers holding data, per pc (a bitmask of register numbers), by a forward walk to a fixpoint
        into = [None] * n
        into[0] = 0
        work = [0] if n else []
        while work:
            pc = work.pop()
            tainted = into[pc]
            m, unit, uses, defs_mask, dma, tiles_in, tiles_out, succ = effects[pc]
            reg_data = bool(tainted & uses)
            if dma:
                if reg_data or any(data[t] for t in tiles_in):
                    return False
            elif m in _BRANCHES and reg_data:
                return False
            from_data = reg_data
            if unit in ("vector", "matrix"):
                from_data = reg_data or any(data[t] for t in tiles_in)
                if from_data and tiles_out and not all(written[t] for t in tiles_out):
                    for t in tiles_out:
                        written[t] = True
                    data = overlap[np.array(written, bool)].any(axis=0).tolist()
                    grown = True
            out = tainted | defs_mask if from_data else tainted & ~defs_mask
            for x in succ:
                merged = out if into[x] is None else into[x] | out
                if merged != into[x]:
                    into[x] = merged
                    work.append(x)
        if not grown:
            return True
