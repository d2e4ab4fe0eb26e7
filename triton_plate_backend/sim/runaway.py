"""The runaway detector: proves that a launch is in an endless loop, long before its step budget runs out.

Execution is deterministic: what a program instance does next depends only on its registers, its SRAM
and device memory (DMA tokens only count issued transfers; waits are no-ops). So if, at a loop's back
edge, every context of the batch holds the registers and SRAM it held at an earlier visit of that back
edge, and no memory changed in between, each context repeats that stretch forever and nothing else can
end the batch (later batches start only when it ends). That is the proof the detector looks for.

A memory change is any store or scatter, and an atomic that changed a value: a CAS that fails, or an
atomic read-modify-write that writes back what was there, changes nothing, so spinning on a lock nobody
releases is caught too. A loop whose registers change (a counter) is not: the step budget ends it.

Watching costs a copy of the registers at each back edge, so it runs in windows of WATCH_STEPS steps
(steps: instructions executed, one per context; see sim.executor): the first after WATCH_FIRST steps,
then after gaps as long as the launch so far, up to WATCH_EVERY. A runaway stops after a few thousand
steps; a long legitimate loop is watched about a tenth of its time.
"""

from __future__ import annotations

import numpy as np

from ..dtypes import BITS
from ..isa.table import ISA
from .dma import gather

WATCH_FIRST = 1_024  # steps before the first window: most kernels end before
WATCH_STEPS = 4_096  # steps a window lasts: enough for a few turns of every waiting context
WATCH_EVERY = 32_768  # the longest gap between two windows


class _Visit:
    """A context's state at its last visit of one back edge (SRAM only once the registers repeat)."""

    __slots__ = ("writes", "regs", "sram")

    def __init__(self, writes: int, regs: np.ndarray):
        self.writes, self.regs, self.sram = writes, regs, None


class _Seen:
    """What the watch knows of one context in one window: its visits and whether it is proven stuck."""

    __slots__ = ("window", "visits", "stuck")

    def __init__(self, window: int):
        self.window, self.visits = window, {}
        self.stuck: int | None = None  # the memory-change count at which it was proven stuck


class LoopWatch:
    """Back-edge checks of one launch (``back_edge``), and the memory changes between them (``accessed``)."""

    def __init__(self, program):
        self.program = program
        # per pc: may change device memory, is an atomic; made at the first armed access (most launches
        # end before the first window: a launch of a small kernel would pay for them every time)
        self.writes_at: list[bool] | None = None
        self.atomic_at: list | None = None  # per pc: None, or how to tell whether the atomic changed memory
        self.arm_at, self.until, self.window, self.armed = WATCH_FIRST, 0, 0, False
        self.changes = 0  # memory changes seen while armed

    def back_edge(self, steps: int, ctx, pc: int, waiting) -> bool:
        """Record ``ctx`` at the back edge ``pc``; True when every context of the batch is proven stuck."""
        if not self.armed:
            if steps < self.arm_at:
                return False
            self.armed, self.window, self.until = True, self.window + 1, steps + WATCH_STEPS
        elif steps >= self.until:
            self.armed, self.arm_at = False, steps + min(steps, WATCH_EVERY)
            return False
        seen = ctx.loop_seen
        if seen is None or seen.window != self.window:
            seen = ctx.loop_seen = _Seen(self.window)
        if seen.stuck != self.changes:
            seen.stuck = None
            visit = seen.visits.get(pc)
            if visit is None or visit.writes != self.changes or not np.array_equal(visit.regs, ctx.regs):
                seen.visits[pc] = _Visit(self.changes, ctx.regs.copy())
                return False
            if visit.sram is None or not np.array_equal(visit.sram, ctx.sram):
                visit.sram = ctx.sram.copy()
                return False
            seen.stuck = self.changes
        return all(_stuck(c, self.window, self.changes) for c in waiting.queue)

    def accessed(self, ctx, pc: int, ins) -> None:
        """After a memory access at ``pc`` (armed windows only): count it if it changed memory."""
        if self.writes_at is None:
            rows = [ISA[i.mnemonic] for i in self.program.instrs]
            self.writes_at = [row.unit == "dma_out" for row in rows]
            self.atomic_at = [
                _atomic_check(ctx.tiles, i) if row.cost == "atomic" else None
                for row, i in zip(rows, self.program.instrs)
            ]
        if not self.writes_at[pc]:
            return
        check = self.atomic_at[pc]
        if check is not None and not check(ctx, ins):
            return
        self.changes += 1


def _stuck(ctx, window: int, changes: int) -> bool:
    seen = ctx.loop_seen
    return seen is not None and seen.window == window and seen.stuck == changes


def _atomic_check(tiles, ins):
    """How to tell whether the atomic ``ins`` changed memory: from its own tiles for a CAS or an exchange
    (``_swap_changed``) when its result tile overlaps none of the tiles it reads, else ``_atomic_changed``."""
    ops = dict(zip((od.name for od in ins.row.operands), ins.operands))
    kind = "cas" if ins.mnemonic == "atom.cas" else "xchg" if ins.suffixes[:1] == ("xchg",) else None
    d = tiles[ops["d"]]
    if kind is None or d.dtype == "i1":  # an i1 tile's bytes may hold any bits: compare what memory holds
        return _atomic_changed
    lo, hi = d.span()
    read = [ops[k] for k in ("addr", "m", "cmp", "v") if k in ops]
    if any(tiles[t].span()[0] < hi and lo < tiles[t].span()[1] for t in read):
        return _atomic_changed
    bits = BITS[d.dtype]
    d, m, v, cmp = ops["d"], ops["m"], ops["v"], ops.get("cmp")

    def _swap_changed(ctx, ins) -> bool:
        """Element k (in order, each seeing the ones before it) found ``old_k`` (the result tile) and wrote
        ``v_k`` (a CAS: where ``old_k`` equals ``cmp_k``), bitwise: memory changed where some element wrote
        other bits than it found. (Where none did, every element found and left what memory held before; where
        one did, the last element at that address found other bits than memory holds now: the same answer as
        ``_atomic_changed``'s comparison, without reading memory.)"""
        old, new = ctx.view(d).view(bits), ctx.view(v).view(bits)
        wrote = new != old
        if cmp is not None:
            wrote &= ctx.view(cmp).view(bits) == old
        return bool(np.any(wrote & ctx.read(m)))

    return _swap_changed


def _atomic_changed(ctx, ins) -> bool:
    """Did this atomic change memory? Its result tile holds the values it found (element by element,
    each seeing the ones before); if memory now holds those same values everywhere it touched, every
    element wrote back what was there."""
    ops = dict(zip((od.name for od in ins.row.operands), ins.operands))
    d, addr, m = ops["d"], ops["addr"], ops["m"]
    mask = ctx.read(m)
    # the values only: the check's own Traffic would be counted and dropped (bytes by home per element)
    now, _ = gather(ctx.memory, ctx.read(addr), mask, ctx.tiles[d].dtype, 0, access="runaway check", counted=False)
    return not np.array_equal(_bytes(now)[mask], _bytes(ctx.read(d))[mask])


def _bytes(a: np.ndarray) -> np.ndarray:
    """[P, *shape, itemsize] raw bytes: a bitwise comparison (NaN equals itself, -0.0 differs from 0.0)."""
    a = np.ascontiguousarray(a)
    return a.view(np.uint8).reshape(*a.shape, a.itemsize)
