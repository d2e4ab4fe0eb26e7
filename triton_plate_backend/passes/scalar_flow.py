"""What the scalar-code optimisations (`licm`, `scalar_cse`) know about the emitted code: which
instructions are pure scalar computations, which virtual registers an instruction writes and
reads, and how many instructions write each register.

A pure scalar instruction (every `s.*` row of the ISA: constants, kernel arguments, program ids,
arithmetic, compares, selects, conversions) reads only scalar registers and immediates, writes one
register, touches no memory and never faults (division by zero and shifts are defined, see the
simulator's sem_scalar): it may run earlier, or once instead of many times, with the same result.
A register written by exactly one instruction (`writes(code)[r] == 1`) holds one value wherever it
is read after that instruction: the code generator's fresh registers; a loop counter or a
loop-carried home is written several times and is never moved or renamed."""

from __future__ import annotations

from ..isa.table import ISA
from .emitter import Label, PInst, VReg

try:
    from . import _codewalk
except ImportError:  # not built (setup.py build_ext): the Python walk runs
    _codewalk = None

PURE = frozenset(m for m, row in ISA.items() if m.startswith("s.") and row.unit == "scalar" and row.cost == "scalar")
BRANCHES = frozenset(m for m, row in ISA.items() if row.cost == "branch")

# mnemonic -> positions of the operands it writes (def, inout) and of those it reads (use, inout)
WRITTEN_AT = {m: tuple(i for i, od in enumerate(row.operands) if od.role != "use") for m, row in ISA.items()}
READ_AT = {m: tuple(i for i, od in enumerate(row.operands) if od.role != "def") for m, row in ISA.items()}


def written(inst: PInst) -> list[VReg]:
    """The registers the instruction writes (its def and inout register operands)."""
    if inst.mnemonic[0] == ".":
        return []
    ops = inst.operands
    return [ops[i] for i in WRITTEN_AT[inst.mnemonic] if type(ops[i]) is VReg]


def read(inst: PInst) -> list[VReg]:
    """The registers the instruction reads (use and inout operands, register lists included)."""
    ops = inst.operands
    if inst.mnemonic[0] == ".":
        return [v for v in ops if type(v) is VReg]
    out = []
    for i in READ_AT[inst.mnemonic]:
        v = ops[i]
        if type(v) is VReg:
            out.append(v)
        elif isinstance(v, tuple):
            out.extend(r for r in v if type(r) is VReg)
    return out


def writes(code: list[PInst]) -> dict[VReg, int]:
    """register -> how many instructions of the code write it (registers never written are absent); in C
    (`_codewalk.writes`) when it is built, except where it leaves the walk to `writes_py`."""
    if _codewalk is not None and type(code) is list:
        got = _codewalk.writes(code, WRITTEN_AT, VReg)
        if got is not NotImplemented:
            return got
    return writes_py(code)


def writes_py(code: list[PInst]) -> dict[VReg, int]:
    """`writes` in Python: the reference."""
    count: dict[VReg, int] = {}
    for inst in code:
        if inst.mnemonic[0] != ".":
            ops = inst.operands
            for i in WRITTEN_AT[inst.mnemonic]:
                v = ops[i]
                if type(v) is VReg:
                    count[v] = count.get(v, 0) + 1
    return count


def target(inst: PInst) -> Label | None:
    """The label a branch goes to (None for halt and non-branches)."""
    if inst.mnemonic not in BRANCHES:
        return None
    return next((v for v in inst.operands if isinstance(v, Label)), None)
