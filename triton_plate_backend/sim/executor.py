"""The functional executor: runs a Program over a 3-D grid of program instances, many at once.

Program instances (linear id x + gx * (y + gy * z)) run in batches of up to B, in increasing id;
B is chosen so the batch's SRAM image fits ``SRAM_BATCH_BUDGET``, and for programs with large SRAM
rows so it stays cache-sized (``sub_batch_programs``). A batch is a set of CONTEXTS,
each a group of instances at one pc with their own rows of registers [NREG, P] (int64 words, see
isa/table.py), DMA tokens and SRAM [P, row bytes]. Every instruction runs once per context, for
all of its instances, through the SEMANTICS rule of its mnemonic.

Control flow: a branch whose condition agrees across the context just jumps. One that diverges
SPLITS the context: the fall-through part keeps running, the taken part waits. Scheduling:

- a context runs until it halts (or falls off the end), takes a backward branch while others
  wait (round-robin: it goes to the back of the queue), or jumps forward over the pc of a
  waiting context (that one runs next, so an if/else reconverges at its join);
- a context that arrives at the pc of a waiting context absorbs it (the batch re-merges).

Every context executes at least one instruction per turn, so a spin lock built from atom.cas
terminates: the holder progresses between the spinners' turns. Endless loops end in a
SimulatorError instead of a hang: at once when the runaway detector (sim/runaway.py) proves that
the loop can never finish, at the latest when a global budget of instruction steps (``max_steps``,
one step = one instruction for one context; the runtime's PLATE_MAX_STEPS) runs out. Both errors
name the loop's source line.

Sanitizer (``sanitize``: "race", "init"; sim/sanitizer.py): the memory rules report their accesses to
the launch's Sanitizer, which raises one SanitizerError listing its findings when the launch ends.
No sanitizer, no cost beyond one attribute test per memory instruction.

Faults: anything a rule raises is wrapped once into a SimulatorError (or the MemoryFault /
DeviceAssertionError it was) carrying pc, instruction text, source line and grid coordinates.
"""

from __future__ import annotations

import contextlib
import functools
import math
import operator
import threading

import numpy as np

from ..dtypes import NUMPY
from ..errors import IsaError, SimulatorError
from ..isa.asm import format_number, quote
from ..isa.program import Inst, Program, verify
from ..isa.table import ISA, is_float
from ..isa.verified import verify_once
from ..machine import MiB, get_machine
from . import numerics as nx
from . import sem_scalar
from .host import unshared
from .runaway import LoopWatch
from .sanitizer import Sanitizer
from .semantics import HALT, SEMANTICS, Branch, DeviceAssertionError
from .sram_reach import reads_unwritten_sram
from .trace import Trace, TraceEntry

DEFAULT_MAX_STEPS = 10_000_000
SRAM_BATCH_BUDGET = 256 * MiB  # bytes of SRAM image per batch
MAX_BATCH = 4096  # program instances per batch
# Cache-sized sub-batches: every instruction runs one numpy pass per tile over all of a batch's
# programs, so a batch whose SRAM image is past the host's last-level cache streams each tile through
# memory (and an image past _SRAM_KEPT_BYTES comes fresh from the OS, page faults and all, every
# batch). A batch of SRAM_BATCH_BUDGET whose image would pass CACHE_CUT_BYTES runs as sub-batches of as
# many programs as fit CACHE_BATCH_BYTES of image, but at least enough for their largest tile to span
# CACHE_TILE_BYTES (a numpy pass long against the Python step of an instruction) and at least
# CACHE_MIN_PROGRAMS, when the program has no atomics, prints or asserts and no sanitizer runs (their
# order across programs is observable), and for a launch that records its trace, when the program is
# straight-line code (``_BRANCHES``): then every sub-batch is one context from start to halt, the
# sub-batches' trace entries merge into the batch's (the same pcs, programs and traffic rows: what the
# timing model reads is unchanged) and steps count as the batch's. Stores land in program order as
# before. (Only a kernel whose programs race, one loading what another stores in the launch, could see
# other values: Triton leaves that undefined.) Measured on test_conversions' launches of 4096 programs
# (rows of 12 to 115 KB: images of 48 to 470 MB, 8 MiB after): 2x to 6x less CPU per launch.
# A program with matrix work takes sub-batches of CACHE_MATRIX_BATCH_BYTES: its m.mma products are
# compute-bound (BLAS on each program's tiles, cache-blocked by BLAS itself), while its loop's many
# small steps (scalar code, DMA descriptors) cost per sub-batch; measured on the 4096^3 bf16 GEMM's
# launch as written (128x128x64 tiles, 256 KiB rows: 128 programs a sub-batch instead of 32):
# 4.2 -> 3.6 s CPU for its functional run.
CACHE_CUT_BYTES = 32 * MiB
CACHE_BATCH_BYTES = 8 * MiB
CACHE_MATRIX_BATCH_BYTES = 32 * MiB
CACHE_TILE_BYTES = 1 * MiB
CACHE_MIN_PROGRAMS = 32
_CUT_EXCLUDED = frozenset({"atom.cas", "atom.rmw", "dbg.print", "dbg.printr", "dbg.assert"})
_BRANCHES = frozenset({"bz", "bnz", "jmp", "loop"})
_ROW_ALIGN = 64  # SRAM row stride: keeps every tile of every row aligned

__all__ = ["execute", "new_context", "Context", "DeviceAssertionError", "DEFAULT_MAX_STEPS", "format_inst"]


class GridCoords(list):
    """(x, y, z) of program instances; prints the first few only."""

    SHOWN = 8

    def __repr__(self) -> str:
        head = ", ".join(map(str, self[: self.SHOWN]))
        return f"[{head}, ... {len(self) - self.SHOWN} more]" if len(self) > self.SHOWN else f"[{head}]"


class Context:
    """A group of program instances at one pc, with their registers, tokens and SRAM rows.

    What semantic rules use: ``P``, ``regs`` [NREG, P] int64, ``tokens`` [NTOK, P] int64,
    ``read(t)`` / ``write(t, values)`` / ``view(t)`` on tile t ([P, *shape] numpy views of SRAM),
    ``coords()``, and the launch's ``tiles``, ``consts``, ``args`` (int64 words), ``grid``,
    ``memory``, ``machine``, ``printer``."""

    def __init__(self, launch: _Launch, pids, regs, tokens, sram, pc: int = 0):
        self.launch = launch
        self.tiles, self.consts, self.args = launch.program.tiles, launch.program.consts, launch.args
        self.grid, self.memory, self.machine, self.printer = launch.grid, launch.memory, launch.machine, launch.printer
        self.pc = pc
        self._set(pids, regs, tokens, sram)

    @classmethod
    def fresh(cls, launch: _Launch, pids: np.ndarray, zero: bool = True) -> Context:
        p = pids.size
        regs = np.zeros((launch.machine.core.scalar_registers, p), np.int64)
        tokens = np.zeros((launch.machine.core.dma_tokens, p), np.int64)
        return cls(launch, pids, regs, tokens, _zeroed_sram(p, launch.row_bytes, zero))

    def _set(self, pids, regs, tokens, buf, lo: int = 0, cap: int | None = None, ordered: bool | None = None):
        """The instances ``pids`` in the order of their rows, their registers and tokens, their SRAM rows
        ``buf[lo : lo + P]``; rows up to ``lo + cap`` of ``buf`` are the context's too, free for absorb() to
        fill. ``ordered``: whether ``pids`` increase (None: find out)."""
        self.pids, self.regs, self.tokens = pids, regs, tokens
        self.P = p = pids.size
        self._buf, self._lo, self._cap = buf, lo, p if cap is None else cap
        self.sram = buf if lo == 0 and buf.shape[0] == p else buf[lo : lo + p]
        self.ordered = bool(p < 2 or np.all(pids[1:] > pids[:-1])) if ordered is None else ordered
        self._trace_pids = None
        self._views = [None] * len(self.tiles)
        # where the rows are in the batch image (a stand-in launch of a test may have none)
        self._image_lo = lo if buf is getattr(self.launch, "image", None) else None
        self._coords = None
        self.loop_seen = None  # the runaway detector's record of this group of instances

    # ---- tiles -------------------------------------------------------------------------------
    def view(self, t: int) -> np.ndarray:
        v = self._views[t]
        if v is None:
            lo = self._image_lo
            if lo is not None:
                # rows of the batch image's view of the tile: a slice costs ~0.1 us where a view made over the
                # rows costs ~4 (a spin lock's winner is a new context every round, viewing ~9 tiles anew)
                views = self.launch.image_views
                whole = views[t]
                if whole is None:
                    whole = views[t] = _tile_view(self.tiles, t, self.launch.image)
                v = whole if lo == 0 and self.P == whole.shape[0] else whole[lo : lo + self.P]
            else:
                v = _tile_view(self.tiles, t, self.sram)
            self._views[t] = v
        return v

    def read(self, t: int) -> np.ndarray:
        v = self.view(t)
        return v.view(np.uint8) != 0 if v.dtype == np.bool_ else v  # an i1 byte may hold any bits

    def write(self, t: int, values) -> None:
        np.copyto(self.view(t), values)  # copyto buffers overlapping source views

    def coords(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._coords is None:
            gx, gy, _ = self.grid
            p = self.pids
            self._coords = (p % gx, (p // gx) % gy, p // (gx * gy))
        return self._coords

    # ---- divergence --------------------------------------------------------------------------
    # A split moves only the instances that leave, a merge only the smaller parts: the rows of a context need not
    # follow its instances' ids (``ordered``). What no instruction but the memory, atomic and debug ones can see:
    # every other rule works on each instance's own registers and SRAM row. Those see the rows in increasing id
    # again (``in_order``, before such an instruction runs: _ORDERED_UNITS), and so do a trace entry's programs
    # (``trace_pids``) and a fault's list of programs.
    def split_off(self, mask: np.ndarray) -> Context:
        """Move the instances where ``mask`` into a new context (same pc); keep the rest. Costs in proportion to
        the smaller part: it leaves by a copy of its rows (none when it is a slice at either end: a spin lock's
        winner), and the last rows of the larger part fill the holes it leaves."""
        p, moved = self.P, np.flatnonzero(mask)
        m, k = moved.size, self.P - moved.size
        views, buf, lo, cap, ordered = self._views, self._buf, self._lo, self._cap, self.ordered
        if m and moved[-1] - moved[0] + 1 == m and (moved[0] == 0 or moved[-1] == p - 1):
            # a slice at either end: both parts keep views of these rows, and their tile views sliced alike (the
            # same memory, shape and strides as view() would make again)
            front = moved[0] == 0
            out, kept = (slice(0, m), slice(m, p)) if front else (slice(k, p), slice(0, k))
            other = self._part(out)
            if self._image_lo is not None:  # its rows are a view of the image's rows (not the image itself)
                other._image_lo = self._image_lo + out.start
            other._views = [None if v is None else v[out] for v in views]
            start, room = (lo + m, cap - m) if front else (lo, k)
            self._set(self.pids[kept], self.regs[:, kept], self.tokens[:, kept], buf, start, room, ordered)
            self._views = [None if v is None else v[kept] for v in views]
            other.ordered = ordered
            return other
        # the smaller part leaves by a copy of its rows; the larger keeps the array, the last of its rows filling
        # the holes the other leaves (a loop's back edge takes the instances staying in the loop)
        leaving = mask if m <= k else ~mask
        rows = np.flatnonzero(leaving)
        copied = self._part(rows)
        n = p - rows.size
        holes = rows[rows < n]
        pids, regs, tokens = self.pids[:n].copy(), self.regs[:, :n], self.tokens[:, :n]  # a trace entry holds pids
        if holes.size:
            fills = n + np.flatnonzero(~leaving[n:])
            pids[holes] = self.pids[fills]
            regs[:, holes] = self.regs[:, fills]
            tokens[:, holes] = self.tokens[:, fills]
            self.sram[holes] = self.sram[fills]
        if leaving is not mask:  # this context takes the copied rows (those kept), the new one these
            self._set(copied.pids, copied.regs, copied.tokens, copied._buf, 0, copied._cap, copied.ordered)
        stays = self if leaving is mask else copied
        stays._set(pids, regs, tokens, buf, lo, cap, None if holes.size else ordered)
        stays._views = [None if v is None else v[:n] for v in views]  # the same rows
        return copied

    def _part(self, rows) -> Context:
        """A context of the instances at ``rows`` (a slice: views of their state; an index: a copy)."""
        return Context(self.launch, self.pids[rows], self.regs[:, rows], self.tokens[:, rows], self.sram[rows], self.pc)

    def absorb(self, others: list[Context]) -> None:
        """Merge contexts waiting at this pc into this one. Parts that are adjacent rows of one array in increasing
        id join without a copy (spinners of a lock rejoining behind its winner); else the rows of all but the
        largest part are copied after its own when its array has room for them, or all into a new array with room
        for all of the batch."""
        group = sorted([self, *others], key=lambda c: int(c.pids.min()) if c.pids.size else -1)
        total = sum(c.P for c in group)
        pids = np.concatenate([c.pids for c in group])
        first, last = group[0], group[-1]
        if all(c.ordered and c._buf is first._buf for c in group) and all(
            a._lo + a.P == b._lo for a, b in zip(group, group[1:])
        ):
            regs = np.concatenate([c.regs for c in group], axis=1)
            tokens = np.concatenate([c.tokens for c in group], axis=1)
            ordered = bool(np.all(pids[1:] > pids[:-1]))
            self._set(pids, regs, tokens, first._buf, first._lo, last._lo + last._cap - first._lo, ordered)
            return
        roomy = [c for c in group if c._cap >= total]
        into = max(roomy, key=lambda c: c.P) if roomy else None
        if into is not None:
            group = [into, *(c for c in group if c is not into)]
            dest, at = (into._buf, into._lo, into._cap), into._lo + into.P
            copied = group[1:]
        else:
            # room for every instance of the batch (pages no row reaches are never touched): a part that goes on
            # absorbing others copies only theirs
            rows = self.launch.batch_rows if self.launch.batch_rows >= total else 2 * total
            dest, at, copied = (np.empty((rows, self.sram.shape[1]), np.uint8), 0, rows), 0, group
        for c in copied:
            dest[0][at : at + c.P] = c.sram
            at += c.P
        pids = np.concatenate([c.pids for c in group])
        regs = np.concatenate([c.regs for c in group], axis=1)
        tokens = np.concatenate([c.tokens for c in group], axis=1)
        self._set(pids, regs, tokens, *dest)

    def in_order(self) -> None:
        """Put the rows in increasing instance id (before an instruction that sees their order): moves the rows
        out of place only."""
        if self.ordered:
            return
        order = np.argsort(self.pids, kind="stable")
        out = np.flatnonzero(order != np.arange(self.P))
        self.sram[out] = self.sram[order[out]]
        self._set(self.pids[order], self.regs[:, order], self.tokens[:, order], self._buf, self._lo, self._cap, True)

    def trace_pids(self) -> np.ndarray:
        """The instances in increasing id, for a trace entry (the rows' own array when they are in order)."""
        if self.ordered:
            return self.pids
        if self._trace_pids is None:
            self._trace_pids = np.sort(self.pids)
        return self._trace_pids


def _tile_view(tiles, t: int, rows: np.ndarray) -> np.ndarray:
    """Tile ``t`` of every row of the SRAM rows ``rows`` [P, row bytes]: a [P, *shape] view."""
    tile = tiles[t]
    isz = tile.itemsize
    if tile.addr % isz:
        raise IsaError(
            f"tile t{t} at SRAM address {tile.addr:#x} is not aligned to its {isz}-byte {tile.dtype} elements"
        )
    return np.ndarray(
        (rows.shape[0], *tile.shape),
        NUMPY[tile.dtype],
        buffer=rows,
        offset=tile.addr,
        strides=(rows.shape[1], *(s * isz for s in tile.strides)),
    )


class _Waiting:
    """Contexts waiting for a turn, in round-robin order, with a count per pc for O(1) arrival checks."""

    def __init__(self):
        self.queue: list[Context] = []
        self.pcs: dict[int, int] = {}

    def add(self, ctx: Context, front: bool = False) -> None:
        self.queue.insert(0, ctx) if front else self.queue.append(ctx)
        self.pcs[ctx.pc] = self.pcs.get(ctx.pc, 0) + 1

    def take(self, ctx: Context) -> Context:
        self.queue.remove(ctx)
        n = self.pcs[ctx.pc] - 1
        if n:
            self.pcs[ctx.pc] = n
        else:
            del self.pcs[ctx.pc]
        return ctx

    def at(self, pc: int) -> list[Context]:
        if pc not in self.pcs:
            return []
        return [self.take(c) for c in [c for c in self.queue if c.pc == pc]]

    def jumped_over(self, lo: int, hi: int) -> Context | None:
        """The waiting context with the lowest pc strictly between lo and hi, if any."""
        if not any(lo < pc < hi for pc in self.pcs):
            return None
        return self.take(min((c for c in self.queue if lo < c.pc < hi), key=lambda c: c.pc))

    def next(self) -> Context | None:
        if not self.queue:
            return None
        ctx = self.take(self.queue[0])
        same = self.at(ctx.pc)
        if same:
            ctx.absorb(same)
        return ctx


_DONE, _YIELD = object(), object()

# A batch's SRAM image, kept for the next batch of the same shape: zeroing a kept image costs a
# third of what a fresh one does (the kernel zeroes each new page on its first write: 32 MiB for a
# vector add of 1024 programs of 32 KiB rows). Up to _SRAM_KEPT images of up to _SRAM_KEPT_BYTES each.
_SRAM_KEPT, _SRAM_KEPT_BYTES = 2, 64 * MiB
_sram_kept: list[np.ndarray] = []
_sram_lock = threading.Lock()


_ZERO_UNASKED_BYTES = 1 * MiB  # a kept image up to this size is zeroed without asking whether it must be


def _zeroed_sram(p: int, row_bytes: int, zero=True) -> np.ndarray:
    """A zeroed [p, row_bytes] SRAM image: a kept one of that shape zeroed again, else a new one. ``zero``
    False (or a callable that answers False, asked only for a kept image past _ZERO_UNASKED_BYTES): a kept
    one as it is (for a program that never reads bytes it did not write: sram_reach.py's
    ``reads_unwritten_sram``; zeroing 8 MiB costs ~0.7 ms, a launch of test_conversions' cut into 30 to 60
    sub-batches, against ~0.03 ms for 1 MiB and 0.1-0.5 ms for the analysis of a small kernel)."""
    with _sram_lock:
        for i, img in enumerate(_sram_kept):
            if img.shape == (p, row_bytes):
                del _sram_kept[i]
                break
        else:
            img = None
    if img is None:
        return np.zeros((p, row_bytes), np.uint8)
    if callable(zero):
        zero = img.nbytes <= _ZERO_UNASKED_BYTES or zero()
    if zero:
        img.fill(0)
    return img


def _keep_sram(box: list[np.ndarray]) -> None:
    """Keep a finished batch's SRAM image, ``box``'s one item, for ``_zeroed_sram`` when nothing else holds it
    (sim/host.py ``unshared``: no view of it outlived the batch)."""
    img = unshared(box)
    if img is None or img.nbytes > _SRAM_KEPT_BYTES:
        return
    with _sram_lock:
        _sram_kept.insert(0, img)
        del _sram_kept[_SRAM_KEPT:]


# units and mnemonics whose rules never return anything (no branch, halt or memory traffic): a run of
# them executes as one block (_Launch._run)
_PLAIN_UNITS = frozenset({"vector", "matrix"})
_PLAIN_SCALAR = frozenset({"nop", "dma.wait", "fence", "barrier"})


def _straight(program: Program) -> list[int]:
    """Per pc, the end of the run of plain instructions starting there (pc itself when it is not plain)."""
    kinds = _KINDS
    plain = [(kinds.get(ins.mnemonic) or _kind(ins.mnemonic))[0] for ins in program.instrs]
    n = len(plain)
    end = list(range(n))
    after = n  # end[pc + 1], or n past the last pc
    for pc in range(n - 1, -1, -1):
        if plain[pc]:
            end[pc] = after
        after = end[pc]
    return end


# units and mnemonics whose rules see the order of a context's rows (memory traffic, atomics' order, printed
# lines, asserts): a context runs them with its rows in increasing instance id (Context.in_order)
_ORDERED_UNITS = frozenset({"dma_in", "dma_out"})
_ORDERED_SCALAR = frozenset({"dbg.print", "dbg.printr", "dbg.assert"})


def _sees_order(program: Program) -> list[bool]:
    """Per pc, whether the instruction sees the order of a context's rows."""
    kinds = _KINDS
    return [(kinds.get(ins.mnemonic) or _kind(ins.mnemonic))[1] for ins in program.instrs]


_KINDS: dict[str, tuple[bool, bool]] = {}  # mnemonic -> (plain: _straight's, sees the rows' order: _sees_order's)


def _kind(mnemonic: str) -> tuple[bool, bool]:
    """What ``_straight`` and ``_sees_order`` read of an instruction, a function of its mnemonic, found once per
    mnemonic (a fresh kernel's first launch derives them for every pc: a test suite's launches)."""
    unit = ISA[mnemonic].unit
    plain = mnemonic.startswith("s.") or mnemonic in _PLAIN_SCALAR or unit in _PLAIN_UNITS
    got = _KINDS[mnemonic] = (plain, unit in _ORDERED_UNITS or mnemonic in _ORDERED_SCALAR)
    return got


def _rules(program: Program) -> list:
    """The SEMANTICS rule of each pc; an s.li gets a rule with its word resolved once (unless the
    table's s.li was replaced, as a test may do)."""
    li = SEMANTICS["s.li"] is sem_scalar._li
    out = []
    for ins in program.instrs:
        rule = sem_scalar.li_rule(ins, program.consts) if li and ins.mnemonic == "s.li" else None
        out.append(rule or SEMANTICS[ins.mnemonic])
    return out


_DERIVED = "_plate_executor"  # on the program: (what it was derived from, the SEMANTICS rules it used, the values)


def _derived(program: Program) -> tuple[list, list[int], int, list[bool]]:
    """(``_rules``, ``_straight``, SRAM row bytes, ``_sees_order``) of the program as it is now, kept on the program (a
    launch of a kernel repeats them): made again when its instructions, constants, tiles or SRAM size
    changed, or when a SEMANTICS rule of one of its mnemonics was replaced (as tests and tools do)."""
    source = (tuple(program.instrs), tuple(program.consts), tuple(program.tiles), program.sram_bytes)
    kept = getattr(program, _DERIVED, None)
    # the rules its mnemonics had, read back in one C call (itemgetter); rules compare by identity
    if kept is not None and kept[0] == source and kept[1][0](SEMANTICS) == kept[1][1]:
        return kept[2]
    names = [m for m in {"s.li", *(ins.mnemonic for ins in program.instrs)} if m in SEMANTICS]
    rules_of = operator.itemgetter(*names) if names else (lambda _: ())
    used = (rules_of, rules_of(SEMANTICS))
    row_bytes = -(-max(program.sram_bytes, program.sram_high_water(), 1) // _ROW_ALIGN) * _ROW_ALIGN
    values = (_rules(program), _straight(program), row_bytes, _sees_order(program))
    setattr(program, _DERIVED, (source, used, values))
    return values


_UNWRITTEN = "_plate_reads_unwritten"  # on the program: (its instructions, reads_unwritten_sram of them)


def _reads_unwritten(program: Program) -> bool:
    """``reads_unwritten_sram(program)``, kept on the program: asked only when a large kept SRAM image could be
    reused unzeroed (_zeroed_sram)."""
    return program.kept_answer(_UNWRITTEN, reads_unwritten_sram)


class _Launch:
    """One execute() call: the program, its rule per pc, the shared state and the step budget."""

    def __init__(
        self, program: Program, grid, args, memory, machine, printer, record_trace, max_steps, sanitize=(), rules=None
    ):
        self.program, self.grid, self.memory, self.machine = program, grid, memory, machine
        self.printer = printer or print
        self.args = _arg_words(program, args)
        self.sanitizer = (
            Sanitizer(sanitize, memory, program, self.args, self.describe_pc, self.grid_coords) if sanitize else None
        )
        derived_rules, self.straight, self.row_bytes, self.sees_order = _derived(program)
        # a batch's SRAM image starts zeroed when a program may read bytes it did not write (or a sanitizer
        # watches); else a kept image is taken as it is (_zeroed_sram: asked only of a large kept image)
        self.zero_sram = True if self.sanitizer is not None else functools.partial(_reads_unwritten, program)
        self.rules = rules if rules is not None else derived_rules
        self.record = record_trace
        # the memory rules' Traffic is what a trace records: a launch recording none counts none
        # (sim/dma.py NOT_COUNTED); a context made for tests and tools (new_context) counts it
        self.counted = record_trace
        self.max_steps, self.steps = max_steps, 0
        self.watch = LoopWatch(program)
        self.loop_pc = None  # the back edge taken last: where a runaway is looping
        self.trace = Trace(program, grid)
        self.fills: dict = {}  # (constant index, dtype) -> a fill value (sem_memory.fill_value)
        self.batch_rows = 0  # the instances of the batch running
        # the running batch's SRAM image and its view of each tile over all of its rows (Context.view)
        self.image, self.image_views = None, None

    def run_batch(self, pids: np.ndarray) -> None:
        waiting = _Waiting()
        self.batch_rows = pids.size
        ctx = Context.fresh(self, pids, self.zero_sram)
        sram = ctx.sram
        self.image, self.image_views = sram, [None] * len(self.program.tiles)
        ctx._image_lo = 0  # (made before the launch knew its image)
        while ctx is not None:
            event = self._run(ctx, waiting)
            if event is _DONE:
                ctx = waiting.next()
            elif event is _YIELD:
                waiting.add(ctx)
                ctx = waiting.next()
            else:  # jumped forward over a waiting context: run that one first
                waiting.add(ctx, front=True)
                ctx = event
        self.image = self.image_views = None  # no view of the image may outlive the batch (_keep_sram)
        box = [sram]
        del sram
        _keep_sram(box)

    def _run(self, ctx: Context, waiting: _Waiting):
        instrs, rules, n, straight = self.program.instrs, self.rules, len(self.program.instrs), self.straight
        sees_order = self.sees_order
        entries = self.trace.entries if self.record else None
        while True:
            pc = ctx.pc
            if pc >= n:
                return _DONE
            end = straight[pc]
            if (
                end > pc + 1
                and self.steps + (end - pc) <= self.max_steps
                and not (waiting.pcs and any(pc < w <= end for w in waiting.pcs))
            ):
                # a block of plain instructions with no context waiting inside it or at its end (one the
                # steps would reach and absorb): the same steps, without the per-step tests (none branches,
                # halts or moves memory); a spin lock's winner runs its blocks so while the spinners wait
                pids = ctx.pids if ctx.ordered else ctx.trace_pids()
                for q in range(pc, end):
                    self.steps += 1
                    ctx.pc = q
                    try:
                        rules[q](ctx, instrs[q])
                    except Exception as e:
                        raise self._fault(ctx, q, e) from e
                    if entries is not None:
                        entries.append(TraceEntry(q, pids))
                ctx.pc = end
                continue
            if self.steps >= self.max_steps:
                raise self._fault(ctx, pc, SimulatorError(self._over_budget()))
            self.steps += 1
            ins = instrs[pc]
            if not ctx.ordered and sees_order[pc]:
                ctx.in_order()
            try:
                out = rules[pc](ctx, ins)
            except Exception as e:
                raise self._fault(ctx, pc, e) from e
            if out is None:
                if entries is not None:
                    entries.append(TraceEntry(pc, ctx.pids if ctx.ordered else ctx.trace_pids()))
                new = pc + 1
            elif out is HALT:
                if entries is not None:
                    entries.append(TraceEntry(pc, ctx.pids if ctx.ordered else ctx.trace_pids()))
                return _DONE
            elif isinstance(out, Branch):
                if entries is not None:
                    entries.append(TraceEntry(pc, ctx.pids if ctx.ordered else ctx.trace_pids()))
                taken, target = out.taken, out.target
                if taken is not True:
                    count = np.count_nonzero(taken)
                    taken = False if count == 0 else True if count == taken.size else taken
                if taken is True:
                    ctx.pc = target
                    if target <= pc:
                        self.loop_pc = pc
                        if self.watch.back_edge(self.steps, ctx, pc, waiting):
                            raise self._fault(ctx, pc, SimulatorError(self._endless(pc)))
                        if waiting.queue:
                            return _YIELD
                        continue
                    if waiting.queue:
                        over = waiting.jumped_over(pc, target)
                        if over is not None:
                            return over
                    new = target
                elif taken is False:
                    new = pc + 1
                else:
                    other = ctx.split_off(taken)
                    other.pc = target
                    waiting.add(other, front=target > pc)
                    new = pc + 1
            else:  # a memory access's Traffic
                if entries is not None:
                    entries.append(TraceEntry(pc, ctx.pids, out.bytes_by_domain, out.elements, out.runs))
                if self.watch.armed:
                    self.watch.accessed(ctx, pc, ins)
                new = pc + 1
            ctx.pc = new
            if waiting.pcs:
                same = waiting.at(new)
                if same:
                    ctx.absorb(same)

    def describe_pc(self, pc: int) -> str:
        return f"pc {pc}: {format_inst(self.program, self.program.instrs[pc])}; source: {self.program.loc_of(pc)}"

    def grid_coords(self, pid: int) -> tuple[int, int, int]:
        gx, gy, _ = self.grid
        return pid % gx, (pid // gx) % gy, pid // (gx * gy)

    def _loop_text(self, pc: int) -> str:
        branch = format_inst(self.program, self.program.instrs[pc])
        return f"the loop at {self.program.loc_of(pc)} (back edge at pc {pc}: {branch})"

    def _over_budget(self) -> str:
        if self.loop_pc is None:
            why = "it took no loop, its grid needs more"
        else:
            why = f"possible infinite loop in {self._loop_text(self.loop_pc)}"
        return (
            f"kernel {self.program.name!r} did not finish within {self.max_steps} instruction steps: {why}. "
            f"If it is legitimately this long, raise the budget: "
            f"PLATE_MAX_STEPS={10 * self.max_steps} (execute(max_steps=...) when calling the simulator directly)"
        )

    def _endless(self, pc: int) -> str:
        return (
            f"kernel {self.program.name!r} is in an endless loop: {self._loop_text(pc)} came back to the same "
            f"registers and SRAM with no memory changed in between, in every program instance still running, "
            f"so it can never finish. Fix the loop's exit condition (raising the step budget, "
            f"PLATE_MAX_STEPS={self.max_steps} now, cannot help)"
        )

    def _fault(self, ctx: Context, pc: int, e: Exception) -> SimulatorError:
        rows = None
        if isinstance(e, SimulatorError):
            cls, msg, rows = type(e), e.args[0] if e.args else str(e), e.programs
            if rows is not None:
                msg = msg.rsplit("\n  program id(s): ", 1)[0]
        else:
            cls, msg = SimulatorError, f"{type(e).__name__}: {e}"
        rows = np.arange(ctx.P) if rows is None else np.asarray(rows, np.int64).reshape(-1)
        rows = rows[(rows >= 0) & (rows < ctx.P)]
        if not ctx.ordered:  # as the rows would be in increasing instance id
            rows = rows[np.argsort(ctx.pids[rows], kind="stable")]
        x, y, z = (c[rows] for c in ctx.coords())
        coords = GridCoords(zip(x.tolist(), y.tolist(), z.tolist()))
        where = dict(
            pc=pc,
            instr=format_inst(self.program, self.program.instrs[pc]),
            loc=str(self.program.loc_of(pc)),
            programs=coords,
        )
        try:
            return cls(msg, **where)
        except TypeError:  # a subclass with another constructor
            return SimulatorError(f"{type(e).__name__}: {msg}", **where)


def format_inst(program: Program, ins: Inst) -> str:
    """One instruction as assembly-like text: ``v.add t2, t0, t1``."""
    labels = {pc: name for name, pc in program.labels.items()}

    def operand(kind, v):
        if kind == "rlist":
            return "[" + ", ".join(f"r{r}" for r in v) + "]"
        if kind in ("r", "q", "t"):
            return f"{kind}{v}"
        if kind in ("imm", "str") and isinstance(v, int) and 0 <= v < len(program.consts):
            c = program.consts[v]
            return quote(c) if isinstance(c, str) else format_number(c)
        if kind == "label":
            return labels.get(v, f"L{v}")
        return f"?{v}"

    ops = ", ".join(operand(od.kind, v) for od, v in zip(ins.row.operands, ins.operands))
    return ".".join((ins.mnemonic, *ins.suffixes)) + (f" {ops}" if ops else "")


_ARG_WORDS = "_plate_arg_words"  # on the program: (its arguments, the last all-int arguments, their words)


def _arg_words(program: Program, args) -> np.ndarray:
    """Kernel arguments as register words: pointers and ints wrapped to their type, floats rounded.
    The words of the last launch whose arguments were all Python ints are kept on the program (a
    repeated launch passes the same ones)."""
    args = list(args)
    types = tuple(program.args)  # its Args (frozen): their types, compared without a loop in Python
    key = tuple(args) if {*map(type, args)} <= _INT_ONLY else None  # ints only: 0.0 == -0.0, 1 == 1.0
    kept = getattr(program, _ARG_WORDS, None)
    if key is not None and kept is not None and kept[0] == types and kept[1] == key:
        return kept[2].copy()
    words = _words(program, args)
    if key is not None:
        setattr(program, _ARG_WORDS, (types, key, words.copy()))
    return words


_INT_ONLY = {int}
_INT_BITS = {"ptr": 64, "i64": 64, "i32": 32, "i16": 16, "i8": 8, "i1": 1}  # an argument's word width


def _words(program: Program, args: list) -> np.ndarray:
    if len(args) != len(program.args):
        names = ", ".join(f"{a.name}: {a.type}" for a in program.args)
        raise SimulatorError(
            f"kernel {program.name!r} takes {len(program.args)} argument(s) ({names}), got {len(args)}"
        )
    words = np.zeros(len(args), np.int64)
    for i, (arg, v) in enumerate(zip(program.args, args)):
        try:
            if arg.type == "ptr":
                v = getattr(v, "base", v)
            bits = _INT_BITS.get(arg.type)
            if bits is not None and type(v) is int:  # a Python int wrapped to the width: const_array's word
                half = 1 << (bits - 1)
                words[i] = ((v + half) & ((half << 1) - 1)) - half if bits > 1 else v & 1
            elif arg.type == "ptr":
                words[i] = nx.const_array(int(v), "i64").astype(np.int64)[0]
            else:
                value = float(v) if is_float(arg.type) else v
                words[i] = nx.to_word(nx.const_array(value, arg.type), arg.type)[0]
        except (TypeError, ValueError) as e:
            raise SimulatorError(
                f"kernel {program.name!r} argument {arg.name!r} ({arg.type}): cannot use {v!r}: {e}"
            ) from None
    return words


def batch_programs(row_bytes: int) -> int:
    """How many program instances one batch runs: as many as fit SRAM_BATCH_BUDGET, up to MAX_BATCH."""
    return min(MAX_BATCH, max(1, SRAM_BATCH_BUDGET // row_bytes))


def sub_batch_programs(program: Program, row_bytes: int, batch: int, traced: bool = True) -> int:
    """How many of a batch's ``batch`` programs one cache-sized sub-batch runs (``CACHE_CUT_BYTES``,
    ``CACHE_MATRIX_BATCH_BYTES`` for a program with matrix work): ``batch``
    itself when its image is small enough or the program may not be cut (``_CUT_EXCLUDED``, and
    ``_BRANCHES`` when the launch records its trace: ``traced``)."""
    excluded = _CUT_EXCLUDED | _BRANCHES if traced else _CUT_EXCLUDED
    if batch * row_bytes <= CACHE_CUT_BYTES or any(ins.mnemonic in excluded for ins in program.instrs):
        return batch
    tile = max((t.itemsize * math.prod(t.shape) for t in program.tiles), default=1)
    matrix = any(ins.row.unit == "matrix" for ins in program.instrs)
    image = CACHE_MATRIX_BATCH_BYTES if matrix else CACHE_BATCH_BYTES
    cut = max(CACHE_MIN_PROGRAMS, image // row_bytes, CACHE_TILE_BYTES // max(tile, 1))
    return min(batch, cut)


def _run_cut(launch: _Launch, pids: np.ndarray, cut: int) -> None:
    """Run one batch as sub-batches of ``cut`` programs; when the launch records its trace (straight-line
    code: each sub-batch one context from start to halt, the same pcs), merge their entries into what the
    batch itself records. Steps count once: the most a sub-batch took."""
    entries = launch.trace.entries if launch.record else None
    first, steps = (len(entries) if entries is not None else 0), launch.steps
    most, subs = steps, []
    for start in range(0, pids.size, cut):
        launch.steps = steps
        launch.run_batch(pids[start : start + cut])
        most = max(most, launch.steps)
        if entries is not None:
            subs.append(entries[first:])
            del entries[first:]
    launch.steps = most
    if entries is None:
        return
    n = len(subs[0])
    if any(len(sub) != n for sub in subs):
        raise SimulatorError(
            f"kernel {launch.program.name!r}: sub-batches of a straight-line program took different paths"
        )
    for k in range(n):
        parts = [sub[k] for sub in subs]
        e = parts[0]
        traffic = (
            None if getattr(e, f) is None else np.concatenate([getattr(x, f) for x in parts])
            for f in ("bytes_by_domain", "elements", "runs")
        )
        entries.append(TraceEntry(e.pc, pids, *traffic))


def _grid3(grid) -> tuple[int, int, int]:
    g = (grid,) if isinstance(grid, (int, np.integer)) else tuple(grid)
    ints = tuple(map(int, g)) if 1 <= len(g) <= 3 else ()
    if not ints or min(ints) < 0:
        raise SimulatorError(f"grid {grid!r}: expected 1 to 3 non-negative sizes")
    return ints + (1,) * (3 - len(ints))


def new_context(program: Program, grid=1, args=(), memory=None, machine=None, *, printer=None) -> Context:
    """A fresh context of every instance of ``grid`` at pc 0, for tests and tools that drive
    SEMANTICS rules directly (``SEMANTICS[m](ctx, inst)``)."""
    machine = get_machine(machine if machine is not None else getattr(memory, "machine", None))
    verify(program, machine)
    grid = _grid3(grid)
    launch = _Launch(program, grid, args, memory, machine, printer, False, DEFAULT_MAX_STEPS)
    launch.counted = True
    return Context.fresh(launch, np.arange(grid[0] * grid[1] * grid[2], dtype=np.int64))


def execute(
    program: Program,
    grid,
    args,
    memory,
    machine=None,
    *,
    record_trace: bool = True,
    max_steps: int | None = None,
    batch_size: int | None = None,
    printer=None,
    sanitize=(),
    rules=None,
    programs=None,
) -> Trace:
    """Run ``program`` for every instance of ``grid`` (int or up to 3 sizes) with kernel ``args``
    (Program.args order: pointers as device addresses, ints, floats) on device ``memory``.

    Returns the Trace (one entry per instruction per context; empty unless ``record_trace``).
    ``printer`` receives dbg.print lines (default: print). ``max_steps`` bounds the instructions
    executed (one per context; default DEFAULT_MAX_STEPS). ``sanitize``: sanitizer modes ("race",
    "init"; sim/sanitizer.py), checked over the whole launch. ``rules``: one semantic rule per pc in
    place of SEMANTICS (the cost model's address-only run, sim/estimate.py). ``programs``: the linear
    ids of the instances to run, increasing (default: all of the grid; sim/persistent_runs.py leaves
    out programs that write nothing). Raises SimulatorError
    (MemoryFault, DeviceAssertionError) naming pc, instruction, source line and grid coordinates,
    also for an endless loop (module docstring), and after a launch with sanitizer findings
    SanitizerError listing them."""
    machine = get_machine(machine if machine is not None else getattr(memory, "machine", None))
    verify_once(program, machine)
    grid = _grid3(grid)
    max_steps = DEFAULT_MAX_STEPS if max_steps is None else int(max_steps)
    launch = _Launch(program, grid, args, memory, machine, printer, record_trace, max_steps, sanitize, rules)
    total = grid[0] * grid[1] * grid[2]
    cut = None
    if batch_size is None:
        batch_size = batch_programs(launch.row_bytes)
        # a launch of at most CACHE_MIN_PROGRAMS programs is never cut (a cut is at least that many), so
        # its program's instructions are not scanned for the mnemonics that forbid one (most launches of a
        # test suite: one program)
        if not sanitize and total > CACHE_MIN_PROGRAMS:
            cut = sub_batch_programs(program, launch.row_bytes, batch_size, record_trace)
    batch_size = max(1, int(batch_size))
    frees_held = getattr(memory, "frees_held", contextlib.nullcontext)
    with np.errstate(all="ignore"), frees_held():
        if programs is None:
            batches = (
                np.arange(start, min(total, start + batch_size), dtype=np.int64)
                for start in range(0, total, batch_size)
            )
        else:
            programs = np.asarray(programs, np.int64)
            batches = (programs[start : start + batch_size] for start in range(0, programs.size, batch_size))
        for pids in batches:
            if cut is not None and cut < pids.size:
                _run_cut(launch, pids, cut)
            else:
                launch.run_batch(pids)
        if launch.sanitizer is not None:
            launch.sanitizer.finish(program.name, grid)
    return launch.trace
