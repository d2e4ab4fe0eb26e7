"""licm: loop-invariant scalar instructions of the emitted code, moved in front of their loop.

The code generator loads scalar constants and kernel arguments where they are used and builds every
DMA descriptor from its access expressions where the DMA is issued (dma_operands), once per basic
block (`Emitter.rematerialised`), so a loop's body recomputes, every trip, address arithmetic that
does not change from trip to trip: a pipelined persistent loop (passes/persistent.py, prefetch.py)
spent ~70 of a vector add trip's ~90 instructions on it. This pass works on the code generator's
virtual code (before register allocation), where that arithmetic exists; the IR has none of it (the
descriptors come from access analysis of tensor ops, and Triton's frontend already hoists the IR's
invariant ops).

A loop is a backward branch (scf.for's rotated `bnz`, scf.while's `jmp`, a cf back edge) to a
label before it, with one entry: nothing outside [label, branch] branches into it, and the code
before the label falls through into it. An instruction inside a loop is invariant when it is pure
(scalar_flow.PURE), its register is written by no other instruction of the code, and every
register it reads is written nowhere in the loop or by an invariant instruction. Invariant
instructions move, in an order that keeps each after what it reads, to just before the loop's
label: after the loop's guard and prefetch prologue, so they run once when the loop runs and not
at all when its guard skips it. One that ran only on some trips (inside an if) now runs once
regardless: it cannot fault and writes a register nothing else writes. Inner loops go first, so
what leaves an inner loop can leave the outer one too.

What moved is recomputed once per loop instead of once per use (`scalar_cse` then merges the
copies); it holds a register across the loop, so codegen keeps the code as it was when the
registers run out (codegen._finalize).

`run` walks in C (`_codewalk.licm`, passes/csrc/codewalk.cpp, built by setup.py) when it is built: the same
loops, the same moves; `run_py` below is the reference, and what runs without it."""

from __future__ import annotations

from .emitter import Label, PInst, VReg
from .scalar_flow import BRANCHES, PURE, READ_AT, WRITTEN_AT, read, target, writes, written

try:
    from . import _codewalk
except ImportError:  # not built (setup.py build_ext): run_py
    _codewalk = None

UNCONDITIONAL = frozenset({"jmp", "halt"})


def loops(code: list[PInst]) -> list[tuple[int, int]]:
    """(header index, last back-edge index) of every loop with one entry, innermost (shortest) first."""
    label_at: dict = {}
    branches = []  # (index, target label or None) of every branch, in one pass over the code
    for i, inst in enumerate(code):
        m = inst.mnemonic
        if m == ".label":
            label_at[inst.operands[0]] = i
        elif m in BRANCHES:
            branches.append((i, target(inst)))
    ends: dict[int, int] = {}
    for i, t in branches:
        if t is not None and label_at.get(t, i + 1) <= i:
            h = label_at[t]
            ends[h] = max(ends.get(h, i), i)
    jumps = [(k, label_at.get(t, -1)) for k, t in branches]
    out = []
    for h, e in ends.items():
        if h == 0 or code[h - 1].mnemonic in UNCONDITIONAL:
            continue  # no fall-through entry to put the moved code on
        if not any(h <= to <= e and not h <= k <= e for k, to in jumps):  # nothing jumps in from outside
            out.append((h, e))
    return sorted(out, key=lambda he: he[1] - he[0])


def invariant(code: list[PInst], header: int, end: int, count) -> list[int]:
    """Indices of the loop's invariant instructions, each after the ones it reads (module docstring)."""
    body = range(header, end + 1)
    written_inside = {r for k in body for r in written(code[k])}
    found: list[int] = []
    moved_regs: set = set()
    # (index, register written, registers read inside the loop) of each pure once-written instruction
    candidates = [
        (k, inst.operands[0], [r for r in read(inst) if r in written_inside])
        for k in body
        if (inst := code[k]).mnemonic in PURE and count.get(inst.operands[0]) == 1
    ]
    changed = True
    while changed:  # in code order, again until nothing more moves: a value read before its write is found
        changed = False
        left = []
        for c in candidates:
            k, d, inside = c
            if all(r in moved_regs for r in inside):
                found.append(k)
                moved_regs.add(d)
                changed = True
            else:
                left.append(c)
        candidates = left
    return found


def run(code: list[PInst], count: dict | None = None) -> list[PInst]:
    """The code with every loop's invariant scalar instructions in front of the loop; ``count``:
    `writes(code)` when the caller has it."""
    if count is None:
        count = writes(code)  # moving instructions changes no count
    if _codewalk is not None and type(code) is list and type(count) is dict:
        return _codewalk.licm(code, count, PURE, BRANCHES, WRITTEN_AT, READ_AT, VReg, Label)
    return run_py(code, count)


def run_py(code: list[PInst], count: dict | None = None) -> list[PInst]:
    """`run` in Python: the reference."""
    if count is None:
        count = writes(code)
    # the loops are found once: moving a loop's instructions in front of it keeps every other loop
    # where it was (loops nest or are disjoint, inner ones go first and move code within themselves)
    for header, end in loops(code):
        found = invariant(code, header, end, count)
        if found:
            gone = set(found)
            hoisted = [code[k] for k in found]
            code = code[:header] + hoisted + [inst for k, inst in enumerate(code) if k >= header and k not in gone]
    return code
