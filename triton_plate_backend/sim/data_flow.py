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


class _Effects:
    """What ``trace_reads_no_data`` reads of one mnemonic's instructions, found once per mnemonic: its unit's part
    (a DMA, a vector or matrix instruction), its branching, and the operand positions of the registers it reads and
    writes (single ones and lists apart) and of the tiles it reads and writes as the walk counts them."""

    __slots__ = ("row", "dma", "loaded", "vecmat", "branch", "falls", "jumps", "label")
    __slots__ += ("use_one", "use_many", "def_one", "def_many", "tiles_in", "tiles_out")

    def __init__(self, mnemonic: str, s: Slots):
        unit = s.row.unit
        self.row = s.row
        self.dma = unit in ("dma_in", "dma_out")
        self.loaded = s.tile_def if unit == "dma_in" else ()  # the tiles a load writes data into
        self.vecmat = unit in ("vector", "matrix")
        self.branch = mnemonic in _BRANCHES
        self.falls = mnemonic not in _ENDS
        self.jumps = self.branch or mnemonic == "jmp"
        self.label = s.label
        self.use_one = tuple(i for i, many in s.reg_use if not many)
        self.use_many = tuple(i for i, many in s.reg_use if many)
        self.def_one = tuple(i for i, many in s.reg_def if not many)
        self.def_many = tuple(i for i, many in s.reg_def if many)
        self.tiles_in = s.tile_addr if self.dma else s.tile_use if self.vecmat else ()
        self.tiles_out = s.tile_def if self.vecmat else ()


_EFFECTS: dict[str, _Effects] = {}  # mnemonic -> its _Effects (checked against the row the ISA table has now)


def _effects_of(inst) -> _Effects:
    got = _EFFECTS.get(inst.mnemonic)
    if got is None or got.row is not inst.row:
        got = _EFFECTS[inst.mnemonic] = _Effects(inst.mnemonic, slots(inst))
    return got


def _bits(operands, one, many) -> int:
    """The registers at positions ``one`` (a register each) and ``many`` (a list each) as a bitmask."""
    out = 0
    for i in one:
        out |= 1 << operands[i]
    for i in many:
        for r in operands[i]:
            out |= 1 << r
    return out


_BY_INST: dict[tuple, tuple] = {}  # (mnemonic, operands) -> _facts of the instruction
_BY_INST_KEPT = 1 << 16  # instructions kept, at most (then forgotten all at once)


def _facts(inst) -> tuple:
    """What ``trace_reads_no_data`` reads of ``inst``, a function of its mnemonic and operands: (the tiles a load
    writes data into, whether it falls through, its jump target or None, whether it is a DMA, a branch, a vector
    or matrix instruction, the registers it reads and writes as bitmasks, the tiles it reads and writes)."""
    e = _effects_of(inst)
    ops = inst.operands
    target = ops[e.label] if e.jumps and e.label is not None else None
    uses = _bits(ops, e.use_one, e.use_many)
    defs = _bits(ops, e.def_one, e.def_many)
    tiles_in, tiles_out = tuple(ops[i] for i in e.tiles_in), tuple(ops[i] for i in e.tiles_out)
    return tuple(ops[i] for i in e.loaded), e.falls, target, e.dma, e.branch, e.vecmat, uses, defs, tiles_in, tiles_out


def trace_reads_no_data(program: Program) -> bool:
    """True when no control flow, address, mask or DMA descriptor of ``program`` is computed from
    memory's contents (module docstring): its trace over a grid, arguments and allocation layout is
    the same whatever the memory holds."""
    instrs = program.instrs
    if any(i.mnemonic.startswith(("atom.", "dbg.")) for i in instrs):
        return False
    n = len(instrs)
    # per pc, what the walk reads of it: (whether it is a DMA, a branch, a vector or matrix instruction,
    # registers read and written as bitmasks, the address and mask tiles of a DMA or the tiles a vector or
    # matrix instruction reads, the tiles it writes, successors); a kernel's second launch asks this
    # (sim/persistent_runs.py): each instruction's part is found once (_facts, kept by its mnemonic and operands:
    # a test suite's fresh kernels share most of their instructions)
    effects = []
    dma_written = []  # tiles a load writes data into
    kept = _BY_INST
    if len(kept) > _BY_INST_KEPT:
        kept.clear()
    for pc, inst in enumerate(instrs):
        key = (inst.mnemonic, inst.operands)
        try:
            facts = kept.get(key)
        except TypeError:  # operands that are no tuple of numbers: found each time
            facts = key = None
        if facts is None:
            facts = _facts(inst)
            if key is not None:
                kept[key] = facts
        loaded, falls, target, dma, branch, vecmat, uses, defs, tiles_in, tiles_out = facts
        if loaded:
            dma_written.extend(loaded)
        succ = [pc + 1] if falls and pc + 1 < n else []
        if target is not None and target < n:
            succ.append(target)
        effects.append((dma, branch, vecmat, uses, defs, tiles_in, tiles_out, succ))
    spans = np.array([t.span() for t in program.tiles], dtype=np.int64).reshape(-1, 2)
    overlap = (spans[:, None, 0] < spans[None, :, 1]) & (spans[None, :, 0] < spans[:, None, 1])
    np.fill_diagonal(overlap, True)
    written = [False] * len(program.tiles)  # tiles some instruction writes data into (to a fixpoint)
    for t in dma_written:
        written[t] = True
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
            dma, branch, vecmat, uses, defs_mask, tiles_in, tiles_out, succ = effects[pc]
            reg_data = bool(tainted & uses)
            if dma:
                if reg_data or any(data[t] for t in tiles_in):
                    return False
            elif branch and reg_data:
                return False
            from_data = reg_data
            if vecmat:
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
