"""A PLATE program in memory: what the assembler reads and writes, what the encoder turns into
bytes, what the simulator executes and what the compiler emits. A data record, no behaviour
beyond checking itself against the ISA table and a machine."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..errors import IsaError
from ..srcloc import UNKNOWN_LOC, Loc
from .table import ENUMS, ISA, ITEMSIZE, Instr

try:
    from . import _isawalk
except ImportError:  # not built (setup.py build_ext): verify walks in Python
    _isawalk = None

_INT = frozenset((int,))  # (Tile.of: the element types of a shape as __post_init__ leaves it)
ARG_TYPES = ("ptr", "i1", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64")


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= n
    return tuple(reversed(strides))


@dataclass(frozen=True)
class Tile:
    """A scratchpad region: SRAM byte address, element type, shape, element strides."""

    addr: int
    dtype: str
    shape: tuple[int, ...]
    strides: tuple[int, ...] | None = None  # None: row-major contiguous

    def __post_init__(self):
        if self.dtype not in ITEMSIZE:
            raise IsaError(f"tile dtype {self.dtype!r} is not one of {', '.join(ITEMSIZE)}")
        object.__setattr__(self, "shape", tuple(map(int, self.shape)))  # (map: no generator frame per tile)
        if self.strides is None:
            object.__setattr__(self, "strides", contiguous_strides(self.shape))
        else:
            object.__setattr__(self, "strides", tuple(map(int, self.strides)))
        if len(self.strides) != len(self.shape):
            raise IsaError(f"tile {self}: {len(self.shape)} dims but {len(self.strides)} strides")

    @classmethod
    def of(cls, addr: int, dtype: str, shape: tuple[int, ...], strides: tuple[int, ...]) -> Tile:
        """``Tile(addr, dtype, shape, strides)``, without the frozen dataclass' checked path where the fields are
        already what `__post_init__` makes of them (an int address, a dtype of ITEMSIZE, tuples of ints of one
        length: each view of a compile's code; ~2 us a tile as the dataclass makes it)."""
        if (
            type(addr) is int
            and type(shape) is tuple
            and type(strides) is tuple
            and len(shape) == len(strides)
            and dtype in ITEMSIZE
            and _INT.issuperset(map(type, shape + strides))
        ):
            tile = object.__new__(cls)
            tile.__dict__.update(addr=addr, dtype=dtype, shape=shape, strides=strides)
            return tile
        return cls(addr, dtype, shape, strides)

    @property
    def itemsize(self) -> int:
        return ITEMSIZE[self.dtype]

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def span(self) -> tuple[int, int]:
        """[lo, hi) SRAM bytes this tile can touch (kept on the tile: a function of its fields, asked by
        verify, by every high-water mark and by each launch's planning)."""
        got = self.__dict__.get("_span")
        if got is None:
            got = self.__dict__["_span"] = self._span()
        return got

    def _span(self) -> tuple[int, int]:
        if self.numel == 0:
            return self.addr, self.addr
        below = above = 0  # the most negative and most positive element offsets (one loop: no generator frames)
        for n, s in zip(self.shape, self.strides):
            d = (n - 1) * s
            if d < 0:
                below += d
            else:
                above += d
        isz = self.itemsize
        return self.addr + below * isz, self.addr + (above + 1) * isz

    def is_contiguous(self) -> bool:
        """Row-major contiguous (kept on the tile like span: a semantic rule asks it at every step)."""
        got = self.__dict__.get("_contiguous")
        if got is None:
            got = self.__dict__["_contiguous"] = self.strides == contiguous_strides(self.shape)
        return got


@dataclass(frozen=True, slots=True)
class Inst:
    """One instruction: ISA row, enum suffix values, operand values, location index. Its fields are slots: the
    compiled walks (isa/csrc, passes/csrc) read them at their offsets (isa/csrc/fields.h)."""

    mnemonic: str
    suffixes: tuple[str, ...] = ()
    operands: tuple = ()  # int per operand; tuple[int, ...] for rlist
    loc: int = 0  # index into Program.locs; 0 is unknown

    @property
    def row(self) -> Instr:
        return ISA[self.mnemonic]


@dataclass(frozen=True)
class Arg:
    name: str
    type: str  # one of ARG_TYPES


@dataclass
class Program:
    name: str
    instrs: list[Inst] = field(default_factory=list)
    tiles: list[Tile] = field(default_factory=list)
    consts: list = field(default_factory=list)  # int, float or str
    locs: list[Loc] = field(default_factory=lambda: [UNKNOWN_LOC])
    args: list[Arg] = field(default_factory=list)
    labels: dict[str, int] = field(default_factory=dict)  # for printing only
    sram_bytes: int = 0  # high-water mark of the tiles, filled by verify() if 0
    tile_names: list[str] = field(default_factory=list, compare=False)  # for printing only; empty: t0..tN
    affinity: str = ""  # the footprint text of isa/footprint.py: which bytes each program touches ("": unknown)

    def loc_of(self, pc: int) -> Loc:
        if 0 <= pc < len(self.instrs):
            i = self.instrs[pc].loc
            if 0 <= i < len(self.locs):
                return self.locs[i]
        return UNKNOWN_LOC

    def sram_high_water(self) -> int:
        top = None  # (a loop, not max over a generator: asked three times a compile, a frame resumed per tile)
        for t in self.tiles:
            hi = t.span()[1]
            if top is None or hi > top:
                top = hi
        return 0 if top is None else top

    def kept_answer(self, name: str, analysis=None):
        """An analysis of the instructions as they are, kept on the program under `name` (made again when its
        instructions changed): ``analysis(self)``'s answer, or without `analysis` the kept one or None."""
        instrs = tuple(self.instrs)
        kept = getattr(self, name, None)
        if kept is None or kept[0] != instrs:
            if analysis is None:
                return None
            kept = (instrs, analysis(self))
            setattr(self, name, kept)
        return kept[1]


def verify(program: Program, machine=None) -> Program:
    """Check every instruction against the ISA table (and the machine's bounds if given).

    Raises IsaError naming the pc, the instruction and what is wrong. The walk over the instructions runs
    in C (`_isawalk.scan`, isa/csrc/isawalk.cpp) when it is built: it passes the instructions whose every check
    is a plain index in range, and each other one is checked here (`_check_instr`, which alone raises)."""
    nreg = machine.core.scalar_registers if machine else 1 << 16
    ntok = machine.core.dma_tokens if machine else 1 << 16
    sram = machine.core.sram_bytes if machine else 1 << 32
    for i, t in enumerate(program.tiles):
        lo, hi = t.span()
        if lo < 0 or hi > sram:
            raise IsaError(f"tile t{i} {t} covers SRAM bytes [{lo}, {hi}), outside the core's {sram} bytes")
    for a in program.args:
        if a.type not in ARG_TYPES:
            raise IsaError(f"argument {a.name!r} has type {a.type!r}; expected one of {', '.join(ARG_TYPES)}")
    instrs, n = program.instrs, len(program.instrs)
    limits = {"r": nreg, "q": ntok, "t": len(program.tiles), "imm": len(program.consts), "str": len(program.consts)}
    limits["label"] = n + 1  # operand kind -> the bound of its index (an rlist's registers: "r")
    heads: dict[tuple, Instr] = {}  # (mnemonic, suffixes) that passed -> the ISA row
    if _isawalk is not None and type(instrs) is list and type(program.consts) is list:
        # the walk in C; each instruction it does not pass by itself is checked here, which raises or passes it
        numels = None if machine is None else [t.numel for t in program.tiles]
        bound = 0 if machine is None else machine.core.vector.max_elements
        sizes = (nreg, ntok, len(program.tiles), n + 1, program.consts, len(program.locs), numels, bound)
        pc = _isawalk.scan(instrs, _FAST_HEADS, 0, *sizes)
        while pc < n:
            _check_instr(program, pc, instrs[pc], heads, limits, machine)
            pc = _isawalk.scan(instrs, _FAST_HEADS, pc + 1, *sizes)
    else:
        for pc, ins in enumerate(instrs):
            _check_instr(program, pc, ins, heads, limits, machine)
    high_water = program.sram_high_water()
    if not program.sram_bytes:
        program.sram_bytes = high_water
    elif program.sram_bytes < high_water:
        raise IsaError(f"program declares {program.sram_bytes} SRAM bytes but its tiles reach byte {high_water}")
    return program


def _check_instr(program: Program, pc: int, ins: Inst, heads: dict, limits: dict, machine) -> None:
    """verify's checks of one instruction (IsaError naming what is wrong)."""
    row = heads.get((ins.mnemonic, ins.suffixes)) if type(ins.suffixes) is tuple else None
    if row is None:
        row = _check_head(pc, ins)
        if type(ins.suffixes) is tuple:
            heads[ins.mnemonic, ins.suffixes] = row
            if (ins.mnemonic, ins.suffixes) not in _FAST_HEADS:
                codes = bytes(_KIND_CODES.get(od.kind, len(_KIND_CODES)) for od in row.operands)
                _FAST_HEADS[ins.mnemonic, ins.suffixes] = (codes, _UNIT_CODES.get(row.unit, 0))
    if len(ins.operands) != len(row.operands):
        raise IsaError(f"{_where(pc, ins)}: takes {len(row.operands)} operands, got {len(ins.operands)}")
    for od, val in zip(row.operands, ins.operands):
        kind = od.kind
        if kind in _PLAIN_INDEX and type(val) is int and 0 <= val < limits[kind]:
            continue  # the common case, checked inline; _check_operand says what is wrong otherwise
        _check_operand(program, pc, ins, kind, od.name, val, limits)
    if not 0 <= ins.loc < len(program.locs):
        raise IsaError(f"{_where(pc, ins)}: location index {ins.loc} outside the table of {len(program.locs)}")
    if machine is not None and row.unit in _BOUNDED_UNITS:
        _check_bounds(program, _where(pc, ins), ins, machine)


# (mnemonic, suffixes) whose head passed _check_head -> (its operands' kind codes, its unit's code): the table
# `_isawalk.scan` (isa/csrc/isawalk.cpp) checks instructions against; the ISA does not change, so it is kept
_FAST_HEADS: dict[tuple, tuple[bytes, int]] = {}
_KIND_CODES = {"r": 0, "q": 1, "t": 2, "label": 3, "imm": 4, "str": 5, "rlist": 6}  # any other: scan leaves it
_UNIT_CODES = {"vector": 1, "matrix": 2}  # the units _check_bounds checks (0: any other)


def _check_head(pc: int, ins: Inst) -> Instr:
    """The instruction's ISA row, after checking its mnemonic and suffixes."""
    row = ISA.get(ins.mnemonic)
    if row is None:
        raise IsaError(f"{_where(pc, ins)}: unknown instruction")
    if len(ins.suffixes) != len(row.suffixes):
        raise IsaError(f"{_where(pc, ins)}: takes suffixes {'.'.join(row.suffixes) or 'none'}, got {ins.suffixes}")
    for enum, val in zip(row.suffixes, ins.suffixes):
        if val not in ENUMS[enum]:
            raise IsaError(f"{_where(pc, ins)}: {val!r} is not a {enum} ({', '.join(ENUMS[enum])})")
    return row


_PLAIN_INDEX = frozenset(("r", "q", "t", "label"))  # operand kinds whose only check is an int index in range
_BOUNDED_UNITS = frozenset(("vector", "matrix"))  # the units _check_bounds checks against the machine


def _where(pc: int, ins: Inst) -> str:
    """The instruction an error names (formatted only when there is an error)."""
    return f"pc {pc} ({ins.mnemonic})"


def _check_operand(program, pc, ins, kind, name, val, limits):
    def bad(msg):
        raise IsaError(f"{_where(pc, ins)}: operand {name}: {msg}")

    if kind == "rlist":
        if not isinstance(val, tuple):
            bad("expected a register list")
        for r in val:
            if not (isinstance(r, int) and 0 <= r < limits["r"]):
                bad(f"register r{r} out of range (0..{limits['r'] - 1})")
        return
    if not isinstance(val, int) or isinstance(val, bool):
        bad(f"expected an integer index, got {val!r}")
    limit = limits[kind]
    if not 0 <= val < limit:
        bad(f"{kind} index {val} out of range (0..{limit - 1})")
    if kind == "str" and not isinstance(program.consts[val], str):
        bad(f"constant {val} is not a string")
    if kind == "imm" and isinstance(program.consts[val], str):
        bad(f"constant {val} is a string, expected a number")


def _check_bounds(program, where, ins, machine):
    row = ins.row
    tiles = [program.tiles[v] for od, v in zip(row.operands, ins.operands) if od.kind == "t"]
    if row.unit == "vector":
        for t in tiles:
            if t.numel > machine.core.vector.max_elements:
                raise IsaError(
                    f"{where}: tile {t} has {t.numel} elements; a vector instruction covers at most "
                    f"{machine.core.vector.max_elements}: split it"
                )
    if row.unit == "matrix":
        acc, a, b = tiles
        max_k = machine.core.matrix.max_k
        if len(acc.shape) != 2 or len(a.shape) != 2 or len(b.shape) != 2:
            raise IsaError(f"{where}: matrix operands must be 2-D")
        (m, nn), (m2, k), (k2, n2) = acc.shape, a.shape, b.shape
        if (m, nn, k) != (m2, n2, k2):
            raise IsaError(f"{where}: shapes acc{acc.shape} a{a.shape} b{b.shape} do not chain")
        if k > max_k:  # M and N are any size: the array makes ceil(M/32)*ceil(N/32) passes
            raise IsaError(f"{where}: {m}x{nn}x{k} exceeds the matrix unit's K <= {max_k} per instruction")
