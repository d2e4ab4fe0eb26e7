"""What the code generator writes into: virtual scalar registers, DMA tokens and SRAM buffers,
views of buffers (tiles with an element offset, shape and strides), labels, and a list of
pseudo-instructions that `finalize` turns into a `Program` once registers and SRAM are planned.

The emitter also owns the two hardware contracts every instruction must respect:
- DMA is asynchronous: `emit` inserts `dma.wait` lazily, just before the first instruction that
  reads a tile a pending DMA writes, or writes a tile a pending DMA reads or writes; device-memory
  order (a load after a store, a store after a load, within one program) and the DMA queue depth
  force waits too, and
  every label or branch waits for everything, except loop prefetches marked `carry` (they stay in
  flight across the loop's back edge; the loop waits for them before their first use).
- vector instructions cover at most `max_elements` elements: `vector` chunks larger operations.
"""

from __future__ import annotations

import itertools
import math
import struct
from dataclasses import dataclass, field

from ..errors import CompileError
from ..isa.program import contiguous_strides
from ..isa.table import ISA, ITEMSIZE
from .records import compared_in_c, plain_init

try:
    from . import _emit
except ImportError:  # not built (setup.py build_ext): the Python methods run
    _emit = None

ALIGN = 64  # SRAM byte alignment of every buffer


# Each kind's ids 1, 2, 3, ... in the order of creation, across compiles. Counters of their own: a count kept
# as a class attribute (`VReg._next += 1`) changed the class at every register made, and a class changed is
# one whose attribute lookups the interpreter has to find again (its type cache and specialised lookups).
_VREG_IDS, _TOKEN_IDS, _BUFFER_IDS = itertools.count(1), itertools.count(1), itertools.count(1)


class VReg:
    """A virtual scalar register; `regalloc` maps it to r0..rN."""

    __slots__ = ("id", "hint")

    def __init__(self, hint: str = ""):
        self.id, self.hint = next(_VREG_IDS), hint

    def __repr__(self):
        return f"v{self.id}{'(' + self.hint + ')' if self.hint else ''}"


class Token:
    """A virtual DMA token; `regalloc` maps it to q0..qN."""

    __slots__ = ("id",)

    def __init__(self):
        self.id = next(_TOKEN_IDS)

    def __repr__(self):
        return f"tok{self.id}"


class Buffer:
    """An SRAM allocation: `sram_plan` gives it an address. `what` says what it holds (for
    SramOverflow messages); `owner` is the IR value it was made for (None for temporaries)."""

    __slots__ = ("id", "nbytes", "what", "loc", "owner", "aliases", "addr")

    def __init__(self, nbytes: int, what: str = "", loc=None, owner=None):
        self.id, self.nbytes, self.what, self.loc = next(_BUFFER_IDS), max(int(nbytes), 1), what, loc
        self.owner, self.aliases, self.addr = owner, set(), None

    def __repr__(self):
        return f"buf{self.id}[{self.nbytes}B {self.what}]"


@compared_in_c
@plain_init
@dataclass(frozen=True)
class View:
    """A tile over a buffer: element offset (in dtype elements), dtype, shape, element strides."""

    buffer: Buffer
    offset: int
    dtype: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def rank(self) -> int:
        return len(self.shape)

    def is_contiguous(self) -> bool:
        return all(s == c for s, c, n in zip(self.strides, contiguous_strides(self.shape), self.shape) if n != 1)

    def is_whole(self) -> bool:
        """The view is its buffer, row-major, nothing else."""
        return self.offset == 0 and self.is_contiguous() and self.numel * ITEMSIZE[self.dtype] == self.buffer.nbytes

    def _with(self, offset=None, shape=None, strides=None, dtype=None) -> View:
        return View(
            self.buffer,
            self.offset if offset is None else offset,
            dtype or self.dtype,
            tuple(self.shape if shape is None else shape),
            tuple(self.strides if strides is None else strides),
        )

    def sub(self, dim: int, start: int, size: int, step: int = 1) -> View:
        """Elements start, start+step, ... (size of them) along dim."""
        shape, strides = list(self.shape), list(self.strides)
        shape[dim], strides[dim] = size, strides[dim] * step
        return self._with(self.offset + start * self.strides[dim], shape, strides)

    def index(self, dim: int, i: int) -> View:
        """Drop dim, fixing it at index i."""
        return self._with(
            self.offset + i * self.strides[dim],
            self.shape[:dim] + self.shape[dim + 1 :],
            self.strides[:dim] + self.strides[dim + 1 :],
        )

    def expand(self, axis: int) -> View:
        return self._with(
            shape=self.shape[:axis] + (1,) + self.shape[axis:], strides=self.strides[:axis] + (0,) + self.strides[axis:]
        )

    def broadcast(self, shape: tuple[int, ...]) -> View:
        if len(shape) != self.rank:
            raise CompileError(f"broadcast of {self.shape} to {shape}: ranks differ")
        strides = []
        for n, m, s in zip(self.shape, shape, self.strides):
            if n != m and n != 1:
                raise CompileError(f"broadcast of {self.shape} to {shape}: dim of size {n} cannot grow to {m}")
            strides.append(s if n == m else 0)
        return self._with(shape=shape, strides=strides)

    def permute(self, order) -> View:
        return self._with(shape=[self.shape[i] for i in order], strides=[self.strides[i] for i in order])

    def flip(self, dim: int) -> View:
        strides = list(self.strides)
        strides[dim] = -strides[dim]
        return self._with(self.offset + (self.shape[dim] - 1) * self.strides[dim], strides=strides)

    def retype(self, dtype: str) -> View:
        if ITEMSIZE[dtype] != ITEMSIZE[self.dtype]:
            raise CompileError(f"view of {self.dtype} as {dtype}: item sizes differ")
        return self._with(dtype=dtype)

    def reshape(self, shape: tuple[int, ...]) -> View | None:
        """The same elements in row-major order with a new shape, without a copy; None when the
        strides cannot express it (the caller then copies to a contiguous buffer first)."""
        shape = tuple(shape)
        if math.prod(shape) != self.numel:
            raise CompileError(f"reshape of {self.shape} to {shape}: element counts differ")
        strides = _reshape_strides([(n, s) for n, s in zip(self.shape, self.strides) if n != 1], shape)
        return None if strides is None else self._with(shape=shape, strides=strides)


def _reshape_strides(old, shape):
    """numpy's no-copy reshape: match groups of old dims (size-1 dims dropped) to groups of new
    dims with equal products; each old group must be one contiguous run."""
    strides = [0] * len(shape)
    oi = ni = 0
    while ni < len(shape) and oi < len(old):
        nj, oj = ni + 1, oi + 1
        pn, po = shape[ni], old[oi][0]
        while pn != po:
            if pn < po:
                pn *= shape[nj]
                nj += 1
            else:
                po *= old[oj][0]
                oj += 1
        if any(old[k][1] != old[k + 1][0] * old[k + 1][1] for k in range(oi, oj - 1)):
            return None
        strides[nj - 1] = old[oj - 1][1]
        for k in range(nj - 1, ni, -1):
            strides[k - 1] = strides[k] * shape[k]
        ni, oi = nj, oj
    return strides


def whole(buffer: Buffer, dtype: str, shape) -> View:
    shape = tuple(shape)
    return View(buffer, 0, dtype, shape, contiguous_strides(shape))


@compared_in_c
@plain_init
@dataclass(frozen=True)
class Label:
    name: str


@plain_init
@dataclass(frozen=True)
class Imm:
    value: int | float


def imm_key(v: Imm) -> tuple:
    """An immediate by type and bits (0.0 apart from -0.0): equal keys, equal values."""
    x = v.value
    if isinstance(x, float):
        return ("f", struct.pack("<d", x))
    return ("i", int(x))


@plain_init
@dataclass(frozen=True)
class Str:
    value: str


@dataclass(slots=True)
class PInst:
    """A pseudo-instruction: an ISA mnemonic with virtual operands, or `.label` / `.def` (a buffer
    is (re)defined whole here: liveness kills it) / `.use` (keeps buffers alive). Its fields are slots: the
    compiled walks (passes/csrc) read them at their offsets (isa/csrc/fields.h)."""

    mnemonic: str
    suffixes: tuple = ()
    operands: tuple = ()
    loc: object = None
    extra_uses: tuple = ()  # buffers a dma.wait keeps alive


@dataclass(eq=False)  # one DMA in flight: told apart by identity (`wait`'s list.remove finds it without __eq__)
class _Pending:
    token: Token
    writes: set = field(default_factory=set)  # buffers the DMA writes (loads)
    reads: set = field(default_factory=set)  # buffers the DMA reads (addresses, masks, stored data)
    memory: str = "read"  # "read" (load/gather) or "write" (store/scatter)
    carried: bool = False  # a prefetch that stays in flight across labels and the loop's back edge
    other_program: bool = False  # a persistent loop's prefetch for a later program: no memory order with this one


_TILE_POSITIONS: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {}  # mnemonic -> (read, written)


def _tile_positions(row) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(positions of the tile operands an instruction reads, of those it writes), from its ISA row, once per row."""
    got = _TILE_POSITIONS.get(row.mnemonic)
    if got is None:
        tiles = [(i, od.role) for i, od in enumerate(row.operands) if od.kind == "t"]
        got = (
            tuple(i for i, role in tiles if role in ("use", "inout")),
            tuple(i for i, role in tiles if role in ("def", "inout")),
        )
        _TILE_POSITIONS[row.mnemonic] = got
    return got


DMA_MEMORY = {"dma.load": "read", "dma.gather": "read", "dma.store": "write", "dma.scatter": "write"}
BRANCHES = {"jmp", "bz", "bnz", "loop", "halt"}
_FORWARD = frozenset({"bz", "bnz"})  # branches that end no block of `Emitter.rematerialised` unless they go back
_WRITTEN_AT = {m: tuple(i for i, od in enumerate(row.operands) if od.role != "use") for m, row in ISA.items()}
# instructions `_hazards` has nothing to say about (no tile, no memory, no fence): most of the code, scalar work
_NO_HAZARD = frozenset(
    m
    for m, row in ISA.items()
    if m not in DMA_MEMORY
    and not m.startswith("atom.")
    and m not in ("fence", "barrier")
    and not any(od.kind == "t" for od in row.operands)
)


class Emitter:
    """`emit`, `rematerialised` and `li` run in C (`_emit.Core`, passes/csrc/emit.cpp, built by setup.py) when it
    is built: an emitter then holds the compiled methods as its own attributes, and the compiled `emit` does what
    `_hazards`, `_track`, `wait` and `wait_all` do while they are these; the methods below are the reference, and
    what runs without the module or with ``compiled = False``."""

    share = True  # False: every use of a constant, argument or address term computes its own (`rematerialised`)
    compiled = True  # False: the Python `emit`, `rematerialised` and `li` even where `_emit` is built

    def __init__(self, machine):
        self.machine = machine
        self.max_elements = machine.core.vector.max_elements
        self.queue_depth = machine.core.dma.queue_depth
        self.code: list[PInst] = []
        self.buffers: list[Buffer] = []
        self.pending: list[_Pending] = []
        self.other_program = False  # set while emitting a DMA of another program (prefetch.py, persistent loops)
        self.loc = None
        self._labels = 0
        # (mnemonic, suffixes, operands with their registers' versions) -> the register this basic
        # block already computed it into (`rematerialised`); None: every use computes its own
        # (codegen lowers again so when the code as emitted is needed)
        self.remat: dict | None = {} if self.share else None
        self.shared: set = set()  # registers `rematerialised` handed out more than once
        self._version: dict = {}  # register -> how many instructions have written it (keys of `remat`)
        self._placed: set = set()  # labels placed so far: a branch to one is a back edge
        cls = type(self)  # a subclass that overrides either method keeps its own
        if (
            _emit is not None
            and cls.compiled
            and cls.emit is Emitter.emit
            and cls.rematerialised is Emitter.rematerialised
            and cls.li is Emitter.li
        ):
            core = _emit.Core(self)  # holds a weak reference to self: no cycle
            self.emit, self.rematerialised, self.li = core.emit, core.rematerialised, core.li

    # ---- resources -------------------------------------------------------------------------
    def buffer(self, dtype: str, shape, what: str = "", owner=None) -> View:
        shape = tuple(shape)
        buf = Buffer(math.prod(shape) * ITEMSIZE[dtype], what or f"{dtype}{list(shape)}", self.loc, owner)
        self.buffers.append(buf)
        self.code.append(PInst(".def", operands=(buf,), loc=self.loc))
        return whole(buf, dtype, shape)

    def label(self, hint: str = "L") -> Label:
        self._labels += 1
        return Label(f"{hint}{self._labels}")

    def place(self, label: Label) -> None:
        self.wait_all()
        if self.remat:
            self.remat.clear()
        self._placed.add(label)
        self.code.append(PInst(".label", operands=(label,), loc=self.loc))

    # ---- instructions ------------------------------------------------------------------------
    def emit(self, mnemonic: str, *operands, suffixes=()) -> PInst:
        row = ISA[mnemonic]
        if len(operands) != len(row.operands):
            raise CompileError(f"internal: {mnemonic} takes {len(row.operands)} operands, got {len(operands)}")
        if mnemonic in BRANCHES:
            self.wait_all(force=mnemonic == "halt")
            if self.remat and (mnemonic not in _FORWARD or operands[1] in self._placed):
                self.remat.clear()  # a block ends where scalar_cse's does, and at a loop's back edge
        elif mnemonic not in _NO_HAZARD:
            self._hazards(mnemonic, row, operands)
        inst = PInst(mnemonic, tuple(suffixes), tuple(operands), self.loc)
        self.code.append(inst)
        for i in _WRITTEN_AT[mnemonic]:
            v = operands[i]
            if type(v) is VReg:
                self._version[v] = self._version.get(v, 0) + 1
        if mnemonic in DMA_MEMORY:
            self._track(mnemonic, row, operands)
        return inst

    def rematerialised(self, mnemonic: str, *operands, suffixes=(), hint: str = "") -> VReg:
        """The register of a pure scalar instruction `mnemonic d, *operands` (a constant, a kernel
        argument, descriptor arithmetic): the one an earlier same instruction of this block wrote
        when no operand register was written since, else a fresh one written here. What
        scalar_cse would merge after licm is then never emitted: a loop's body computes each
        constant, argument and address term once, not once per use (licm moves that one in front
        of the loop). The block ends at every label, jmp, halt and loop back edge: inside one, two
        equal instructions are in the same loops, so licm moves both or neither, and scalar_cse
        (whose extended blocks are unions of these) merges them; its result is the same. A caller
        must not write the register it gets (codegen._finalize checks that the shared ones are
        written once, and lowers again without sharing otherwise)."""
        memo = self.remat
        if memo is None:
            r = VReg(hint)
            self.emit(mnemonic, r, *operands, suffixes=suffixes)
            return r
        version = self._version
        key = [mnemonic, suffixes]
        for v in operands:
            key.append((v, version.get(v, 0)) if type(v) is VReg else imm_key(v))
        key = tuple(key)
        r = memo.get(key)
        if r is None:
            r = memo[key] = VReg(hint)
            self.emit(mnemonic, r, *operands, suffixes=suffixes)
        else:
            self.shared.add(r)
        return r

    def li(self, value, hint: str = "") -> VReg:
        """A register holding the constant `value` (`rematerialised` s.li): the caller must not write it."""
        return self.rematerialised("s.li", Imm(value), hint=hint)

    def _hazards(self, mnemonic, row, operands):
        if not self.pending:  # nothing in flight: no clash and no full queue
            return
        memory = DMA_MEMORY.get(mnemonic) or ("both" if mnemonic.startswith("atom.") else None)
        used, written = _TILE_POSITIONS.get(row.mnemonic) or _tile_positions(row)
        if memory is None and not used and not written and mnemonic not in ("fence", "barrier"):
            return  # scalar work (most of a loop): no tile and no memory to clash with
        reads = {operands[i].buffer for i in used}  # the buffers it reads and writes
        writes = {operands[i].buffer for i in written}
        for p in list(self.pending):
            clash = (p.writes & (reads | writes)) or (p.reads & writes)
            ordered = not (self.other_program or p.other_program)  # programs do not see each other's memory
            if ordered and memory in ("read", "both") and p.memory == "write":
                clash = True  # a load must see an earlier store
            if ordered and memory in ("write", "both") and p.memory == "read":
                clash = True  # a store must not overtake an earlier load of the same memory
            if mnemonic in ("fence", "barrier"):
                clash = True
            if clash:
                self.wait(p)
        if memory in ("read", "write"):
            while len(self.pending) >= self.queue_depth:
                self.wait(self.pending[0])

    def _track(self, mnemonic, row, operands):
        tok = operands[0]
        # (the buffers it writes, then those it reads: the ISA row's tile operands)
        used, written = _TILE_POSITIONS.get(row.mnemonic) or _tile_positions(row)
        self.pending.append(
            _Pending(
                tok,
                {operands[i].buffer for i in written},
                {operands[i].buffer for i in used},
                DMA_MEMORY[mnemonic],
                other_program=self.other_program,
            )
        )

    def wait(self, p: _Pending) -> None:
        self.pending.remove(p)
        self.code.append(PInst("dma.wait", (), (p.token,), self.loc, tuple(p.writes | p.reads)))

    def wait_all(self, force: bool = False) -> None:
        """Wait for every outstanding DMA (but carried prefetches, unless force)."""
        for p in list(self.pending):
            if force or not p.carried:
                self.wait(p)

    def branch_keeping(self, mnemonic: str, cond, target: Label) -> list:
        """A conditional branch that leaves this path's DMAs in flight (the fall-through keeps
        tracking them); `target` must be a stub placed by `settle` with what this returns."""
        self.code.append(PInst(mnemonic, (), (cond, target), self.loc))
        return [p for p in self.pending if not p.carried]

    def settle(self, label: Label, pending: list, then: Label) -> None:
        """The stub of a `branch_keeping` branch: wait for the DMAs its path left in flight, go on to `then`."""
        if self.remat:
            self.remat.clear()
        self._placed.add(label)
        self.code.append(PInst(".label", operands=(label,), loc=self.loc))
        for p in pending:
            self.code.append(PInst("dma.wait", (), (p.token,), self.loc, tuple(p.writes | p.reads)))
        self.emit("jmp", then)

    def carry(self, token: Token, carried: bool = True) -> None:
        """Let the DMA of `token` stay in flight across labels and branches (a loop prefetch: the
        loop's code waits for it before its first use in the next iteration), or stop that."""
        for p in self.pending:
            if p.token is token:
                p.carried = carried

    def wait_merged(self, token: Token, buffers=()) -> None:
        """Wait for `token` at a point other paths reach with its DMA in flight (a pipelined
        loop's exit, reached from every copy of the body): an explicit wait when the path being
        emitted has none pending (waiting for a completed DMA is free), else the pending one."""
        for p in self.pending:  # (a loop, not any() over a generator)
            if p.token is token:
                self.wait_token(token)
                return
        self.code.append(PInst("dma.wait", (), (token,), self.loc, tuple(buffers)))

    def wait_token(self, token: Token) -> None:
        for p in list(self.pending):
            if p.token is token:
                self.wait(p)

    # ---- chunked vector instructions --------------------------------------------------------------
    def vector(self, mnemonic: str, *operands, suffixes=()) -> None:
        """Emit an elementwise vector instruction whose tile operands all have one shape, split
        into pieces of at most max_elements elements (flat when every tile is contiguous, else
        along the leading dims). v.iota's start follows the row-major position of each piece."""
        views = [v for v in operands if isinstance(v, View)]
        shape = views[0].shape
        if [v for v in views if v.shape != shape]:
            raise CompileError(f"internal: {mnemonic} operands differ in shape: {[v.shape for v in views]}")
        n = math.prod(shape)
        if n <= self.max_elements:
            self.emit(mnemonic, *operands, suffixes=suffixes)
            return
        flat = [v.reshape((n,)) for v in views]
        if all(f is not None for f in flat):
            it = iter(flat)
            operands = tuple(next(it) if isinstance(v, View) else v for v in operands)
            shape = (n,)
        for start, piece in _pieces(shape, self.max_elements):
            ops = tuple(piece(v) if isinstance(v, View) else v for v in operands)
            if mnemonic == "v.iota":
                ops = (ops[0], Imm(operands[1].value + start))
            self.emit(mnemonic, *ops, suffixes=suffixes)


# mnemonic -> (ISA row, operand count, what `emit` tests by set membership as bits, written operand positions, then
# what `_hazards` and `_track` read: the tile operands read, those written, the memory it touches):
# the table `_emit.Core` reads (the bits are emit.cpp's BRANCH, FORWARD, NO_HAZARD, DMA, HALT, FENCE)
_CORE = {
    m: (
        row,
        len(row.operands),
        (m in BRANCHES)
        | (m in _FORWARD) << 1
        | (m in _NO_HAZARD) << 2
        | (m in DMA_MEMORY) << 3
        | (m == "halt") << 4
        | (m in ("fence", "barrier")) << 5,
        _WRITTEN_AT[m],
        *_tile_positions(row),
        DMA_MEMORY.get(m) or ("both" if m.startswith("atom.") else None),
    )
    for m, row in ISA.items()
}
if _emit is not None:
    _emit.init(_CORE, PInst, VReg, Imm, imm_key, Emitter.emit, Emitter.rematerialised, Emitter.li, _VREG_IDS)
    if hasattr(_emit, "init_dma"):  # (a module built before it: the Python methods)
        _emit.init_dma(Emitter._hazards, Emitter._track, Emitter.wait, Emitter.wait_all, _Pending)
# VReg(hint) for the rules' hot paths: made in C without __init__'s frame where _emit is built (the same register)
new_vreg = _emit.vreg if _emit is not None else VReg


def _pieces(shape, limit):
    """(row-major start, view -> sub-view) covering shape with pieces of <= limit elements."""
    inner = math.prod(shape[1:])
    if inner <= limit:
        rows = max(1, limit // max(inner, 1))
        for r in range(0, shape[0], rows):
            size = min(rows, shape[0] - r)
            yield r * inner, (lambda v, r=r, size=size: v.sub(0, r, size))
        return
    for r in range(shape[0]):
        for start, piece in _pieces(shape[1:], limit):
            yield r * inner + start, (lambda v, r=r, piece=piece: piece(v.index(0, r)))
