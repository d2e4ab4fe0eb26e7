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

from collections import Counter

from ..isa.table import ISA
from .emitter import Label, PInst, VReg

PURE = frozenset(m for m, row in ISA.items() if m.startswith("s.") and row.unit == "scalar" and row.cost == "scalar")
BRANCHES = frozenset(m for m, row in ISA.items() if row.cost == "branch")

_ROLES: dict[str, tuple[str, ...]] = {}  # mnemonic -> the role of each operand (def, use, inout)


def _roles(mnemonic: str) -> tuple[str, ...]:
    got = _ROLES.get(mnemonic)
    if got is None:
        got = _ROLES[mnemonic] = tuple(od.role for od in ISA[mnemonic].operands)
    return got


def written(inst: PInst) -> list[VReg]:
    """The registers the instruction writes (its def and inout register operands)."""
    if inst.mnemonic.startswith("."):
        return []
    return [v for role, v in zip(_roles(inst.mnemonic), inst.operands) if role != "use" and type(v) is VReg]


def read(inst: PInst) -> list[VReg]:
    """The registers the instruction reads (use and inout operands, register lists included)."""
    if inst.mnemonic.startswith("."):
        return [v for v in inst.operands if type(v) is VReg]
    out = []
    for role, v in zip(_roles(inst.mnemonic), inst.operands):
        if role == "def":
            continue
        if type(v) is VReg:
            out.append(v)
        elif isinstance(v, tuple):
            out.extend(r for r in v if type(r) is VReg)
    return out


def writes(code: list[PInst]) -> Counter:
    """register -> how many instructions of the code write it."""
    count: Counter = Counter()
    for inst in code:
        count.update(written(inst))
    return count


def target(inst: PInst) -> Label | None:
    """The label a branch goes to (None for halt and non-branches)."""
    if inst.mnemonic not in BRANCHES:
        return None
    return next((v for v in inst.operands if isinstance(v, Label)), None)
