"""Liveness over the emitted pseudo-instructions, and interval allocation of scalar registers and
DMA tokens.

Liveness is the textbook backward dataflow over basic blocks (split at labels and after branches),
so loops, scf.while and cf branches with block arguments all come out right. Each resource
(virtual register, DMA token, SRAM buffer) gets one live interval: the hull of every point where
it is live, in half-steps (2*pc = just before pc reads, 2*pc+1 = pc writes). A register or
token written by an instruction may reuse one the same instruction last reads; SRAM buffers are
written at 2*pc, so an instruction's output tile never overlaps one of its dying inputs (unless
the code generator chose that in-place on purpose, by writing the same buffer).

When the scalar registers run out, `spill_choice` runs the same scan and names the registers to
keep in SRAM instead (the one live longest at each point of overflow); `spill` rewrites the code.

`live_intervals` and `allocate` run in C (`_codewalk`, passes/csrc/codewalk.cpp, built by setup.py) when it
is built: the same walks, the same dicts in the same order; the Python functions below
(`live_intervals_py`, `allocate_py`) are the reference, and what runs without it."""

from __future__ import annotations

import heapq

from ..errors import RegisterOverflow
from ..isa.table import ISA
from .emitter import Buffer, Label, PInst, Token, View, VReg

try:
    from . import _codewalk
except ImportError:  # not built (setup.py build_ext): the Python functions below
    _codewalk = None

_NO_EFFECT: tuple = ()


def _effects(inst: PInst):
    """(uses, kills) of one pseudo-instruction: sequences of VReg / Token / Buffer (repeats allowed)."""
    m = inst.mnemonic
    if m[0] == ".":
        if m == ".def":
            return _NO_EFFECT, (inst.operands[0],)
        if m == ".use":
            return inst.operands, _NO_EFFECT
        if m == ".label":
            return _NO_EFFECT, _NO_EFFECT
    uses, kills = list(inst.extra_uses), []
    roles = _DEFS.get(m) or _defs(m)
    for is_def, v in zip(roles, inst.operands):
        t = type(v)
        if t is VReg or t is Token:
            if is_def:
                kills.append(v)
            else:
                uses.append(v)
        elif t is View:
            uses.append(v.buffer)  # tile writes are partial: the .def before them kills
        elif t is tuple:
            uses.extend(v)
    return uses, kills


_DEFS: dict[str, tuple[bool, ...]] = {}  # mnemonic -> per operand: does the instruction define it


def _defs(mnemonic: str) -> tuple[bool, ...]:
    got = _DEFS.get(mnemonic)
    if got is None:
        got = _DEFS[mnemonic] = tuple(od.role == "def" for od in ISA[mnemonic].operands)
    return got


def _blocks(code: list[PInst]):
    """Basic blocks as (start, end) index ranges, and successor lists."""
    starts = {0}
    label_at = {}
    for i, inst in enumerate(code):
        if inst.mnemonic == ".label":
            starts.add(i)
            label_at[inst.operands[0]] = i
        elif inst.mnemonic in ("jmp", "bz", "bnz", "loop", "halt"):
            starts.add(i + 1)
    starts = sorted(s for s in starts if s < len(code))
    bounds = [(s, (starts[k + 1] if k + 1 < len(starts) else len(code)) - 1) for k, s in enumerate(starts)]
    index = {s: k for k, (s, _) in enumerate(bounds)}
    succs = []
    for k, (_, e) in enumerate(bounds):
        last = code[e]
        out = []
        target = next((v for v in last.operands if isinstance(v, Label)), None)
        if target is not None:
            out.append(index[label_at[target]] if label_at[target] < len(code) else None)
        if last.mnemonic not in ("jmp", "halt") and k + 1 < len(bounds):
            out.append(k + 1)
        succs.append([o for o in out if o is not None])
    return bounds, succs


def live_intervals(code: list[PInst]) -> dict:
    """resource -> (lo, hi) half-step interval (see the module docstring); in C when `_codewalk` is built."""
    if _codewalk is not None and type(code) is list:
        return _codewalk.live_intervals(code, _DEFS, _defs, VReg, Token, View, Buffer, Label)
    return live_intervals_py(code)


def live_intervals_py(code: list[PInst]) -> dict:
    """`live_intervals` in Python: the reference."""
    bounds, succs = _blocks(code)
    # One walk in code order gives each block's gen (read before any write in the block) and kill
    # (written in it and not in gen), and each resource's first and last def / use point: every point
    # a resource is live at but not read or written lies between two such points or a block boundary,
    # so the points to take are each def and use, the end of each block it is live out of and the
    # start of each block it is live into (those are added after the dataflow, below).
    gen, kill, lo, hi = [], [], {}, {}
    for s, e in bounds:
        g, k = set(), set()
        for i in range(s, e + 1):
            u, d = _effects(code[i])
            p = 2 * i
            for r in u:  # an instruction reads before it writes: a use counts even if it also defines
                if r not in lo:
                    lo[r] = p
                hi[r] = p
                if r not in k:
                    g.add(r)
            for r in d:
                q = p if type(r) is Buffer else p + 1
                if r not in lo:
                    lo[r] = q
                hi[r] = q
                k.add(r)
        gen.append(g)
        kill.append(k - g)
    live_in = [set() for _ in bounds]
    live_out = [set() for _ in bounds]
    changed = True
    while changed:
        changed = False
        for b in range(len(bounds) - 1, -1, -1):
            out = set().union(*(live_in[s] for s in succs[b])) if succs[b] else set()
            inn = gen[b] | (out - kill[b])
            if out != live_out[b] or inn != live_in[b]:
                live_out[b], live_in[b], changed = out, inn, True
    for b, (s, e) in enumerate(bounds):
        for p, live in ((2 * e + 2, live_out[b]), (2 * s, live_in[b])):
            for r in live:
                low = lo.get(r)
                if low is None:
                    lo[r] = hi[r] = p
                elif p < low:
                    lo[r] = p
                elif p > hi[r]:
                    hi[r] = p
    return {r: (lo[r], hi[r]) for r in lo}


def allocate(intervals: dict, kind: type, count: int, what: str, kernel: str) -> dict:
    """Linear scan over hull intervals: resource -> physical index in 0..count-1; in C when `_codewalk` is built."""
    if _codewalk is not None and type(intervals) is dict:
        out = _codewalk.allocate(intervals, kind, count)
        if out is not None:
            return out
    return allocate_py(intervals, kind, count, what, kernel)  # (its RegisterOverflow when the registers run out)


def allocate_py(intervals: dict, kind: type, count: int, what: str, kernel: str) -> dict:
    """`allocate` in Python: the reference."""
    items = sorted(((iv, r) for r, iv in intervals.items() if isinstance(r, kind)), key=lambda x: (x[0][0], x[1].id))
    free = list(range(count))  # a heap: the lowest free index is taken first
    active: list[tuple[int, int]] = []  # a heap of (hi, phys): the intervals that end first leave first
    out = {}
    for (lo, hi), r in items:
        while active and active[0][0] < lo:
            heapq.heappush(free, heapq.heappop(active)[1])
        if not free:
            raise RegisterOverflow(
                f"kernel {kernel}: more than {count} {what} live at once; split the kernel, reduce the number of "
                f"live scalars (pointers, offsets, loop-carried scalars) or unroll less"
            )
        phys = heapq.heappop(free)
        out[r] = phys
        heapq.heappush(active, (hi, phys))
    return out


def spill_choice(intervals: dict, count: int, pinned: set) -> tuple[set, int | None]:
    """The same linear scan as `allocate`, choosing instead of failing: where more than ``count``
    VRegs are live, the live one (not in ``pinned``) whose interval ends last goes to SRAM.
    Returns (the chosen VRegs, None), or (set(), the half-step where only pinned ones are live)."""
    items = sorted(((iv, r) for r, iv in intervals.items() if isinstance(r, VReg)), key=lambda x: (x[0][0], x[1].id))
    free = list(range(count))
    active: list[tuple[int, int, VReg]] = []  # a heap of (hi, id, vreg)
    chosen = set()
    for (lo, hi), r in items:
        while active and active[0][0] < lo:
            heapq.heappop(active)
            free.append(0)
        if free:
            free.pop()
            heapq.heappush(active, (hi, r.id, r))
            continue
        victims = [(h, i, v) for h, i, v in active if v not in pinned]
        far = max(victims, key=lambda x: (x[0], x[1]), default=None)
        if r not in pinned and (far is None or hi >= far[0]):
            chosen.add(r)  # the new one lives longest: it goes to SRAM, the registers stay as they are
            continue
        if far is None:
            return set(), lo
        chosen.add(far[2])
        active.remove(far)
        heapq.heapify(active)
        heapq.heappush(active, (hi, r.id, r))
    return chosen, None
