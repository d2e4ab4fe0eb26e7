"""A static check of the asynchronous-DMA contract on a compiled Program.

The simulator completes a DMA when it is issued, so a missing dma.wait never changes its
results; this check finds one anyway. A forward dataflow over the program's control flow keeps,
at every pc, the SRAM byte ranges each possibly outstanding DMA writes (dma.load/gather
destinations) and reads (addresses, masks, stored data). It reports any instruction that reads
bytes an outstanding DMA writes, or writes bytes an outstanding DMA reads or writes, a token
reissued before its wait, and any DMA still outstanding at halt. A DMA may stay in flight across
a branch (a loop prefetch) as long as every use waits for it."""

from __future__ import annotations

from triton_plate_backend.isa.table import ISA


def _tiles(program, inst, written: bool):
    out = []
    for od, v in zip(ISA[inst.mnemonic].operands, inst.operands):
        if od.kind != "t":
            continue
        w = od.role in ("def", "inout")
        r = od.role in ("use", "inout")
        if w if written else r:
            out.append(program.tiles[v].span())
    return tuple(out)


def _overlap(a, b) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def _successors(program, pc):
    ins = program.instrs[pc]
    target = [v for od, v in zip(ins.row.operands, ins.operands) if od.kind == "label"]
    if ins.mnemonic == "halt":
        return []
    if ins.mnemonic == "jmp":
        return target
    return target + [pc + 1]


def _step(program, pc, state, report):
    """The outstanding-DMA state after pc; report(msg) for each violation."""
    ins = program.instrs[pc]
    if ins.mnemonic == "dma.wait":
        return frozenset(x for x in state if x[0] != ins.operands[0])
    reads, writes = _tiles(program, ins, False), _tiles(program, ins, True)
    for tok, w, r in state:
        if any(_overlap(s, x) for s in reads for x in w):
            report(f"pc {pc} {ins.mnemonic}: reads SRAM that DMA q{tok} may still be writing")
        if any(_overlap(s, x) for s in writes for x in w + r):
            report(f"pc {pc} {ins.mnemonic}: writes SRAM that DMA q{tok} may still use")
    if ins.mnemonic == "halt" and state:
        report(f"pc {pc} halt: DMA tokens {sorted({t for t, _, _ in state})} never waited for")
    if ins.mnemonic.startswith("dma."):
        tok = ins.operands[0]
        if any(t == tok for t, _, _ in state):
            report(f"pc {pc} {ins.mnemonic}: token q{tok} reissued before its dma.wait")
        state = state | {(tok, writes, reads)}
    return state


def dma_violations(program) -> list[str]:
    n = len(program.instrs)
    states = [None] * (n + 1)
    states[0] = frozenset()
    work = [0]
    while work:
        pc = work.pop()
        if pc >= n:
            continue
        out = _step(program, pc, states[pc], lambda msg: None)
        for s in _successors(program, pc):
            merged = out if states[s] is None else states[s] | out
            if merged != states[s]:
                states[s] = merged
                work.append(s)
    bad: list[str] = []
    for pc in range(n):
        if states[pc] is not None:
            _step(program, pc, states[pc], bad.append)
    return sorted(set(bad))
