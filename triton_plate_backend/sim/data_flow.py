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
    written = np.zeros(len(program.tiles), bool)  # tiles some instruction writes data into (to a fixpoint)
    for inst in instrs:
        if inst.row.unit == "dma_in":
            written[_tiles(inst, ("def", "inout"))] = True
    data = overlap[written].any(axis=0)  # tiles sharing SRAM bytes with those
    n = len(instrs)
    while True:
        grown = False
        # registers holding data, per pc (a bitmask of register numbers), by a forward walk to a fixpoint
        into = [None] * n
        into[0] = 0
        work = [0] if n else []
        while work:
            pc = work.pop()
            tainted = into[pc]
            inst = instrs[pc]
            m, unit = inst.mnemonic, inst.row.unit
            uses = _regs(inst, ("use", "inout"))
            reg_data = any(tainted >> r & 1 for r in uses)
            if unit in ("dma_in", "dma_out"):
                if reg_data or data[_tiles(inst, ("use",), ("addr", "m"))].any():
                    return False
            elif m in _BRANCHES and reg_data:
                return False
            from_data = reg_data
            if unit in ("vector", "matrix"):
                from_data = reg_data or bool(data[_tiles(inst, ("use", "inout"))].any())
                defs = _tiles(inst, ("def", "inout"))
                if from_data and defs and not written[defs].all():
                    written[defs] = True
                    data = overlap[written].any(axis=0)
                    grown = True
            out = tainted
            for r in _regs(inst, ("def", "inout")):
                out = out | (1 << r) if from_data else out & ~(1 << r)
            succ = []
            if m not in _ENDS:
                succ.append(pc + 1)
            if m in _BRANCHES or m == "jmp":
                succ.append(_target(inst))
            for s in succ:
                if s is None or s >= n:
                    continue
                merged = out if into[s] is None else into[s] | out
                if merged != into[s]:
                    into[s] = merged
                    work.append(s)
        if not grown:
            return True
