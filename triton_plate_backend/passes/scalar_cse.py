"""scalar_cse: a pure scalar instruction that recomputes a value already held in a register is
dropped, and what read its register reads the earlier one (local value numbering).

The code generator builds each DMA descriptor on its own and shares values only inside a basic
block (`Emitter.rematerialised`), so the loads of one trip in different blocks (a pipelined loop's
body copies) compute the same offsets, bounds and next-trip counters once per block, and `licm`
leaves one copy of each invariant per block in front of the loop. Values are numbered along
extended basic blocks: the numbering runs on across a conditional branch (the code after it is
reached only from here) and starts again at a label (other paths join there) and after jmp/halt.

An instruction is dropped only when it is pure (scalar_flow.PURE), its register is written by no
other instruction, and the register that holds the value is written only once, earlier in the
same extended block: that write then precedes every read of the dropped register, and nothing
changes the register between. A copy (`s.mov`) between two such registers is dropped the same
way. Commutative operations number their operands in either order alike; immediates are told
apart by type and bits (0.0 from -0.0).

`run` walks in C (`_codewalk.scalar_cse`, passes/csrc/codewalk.cpp, built by setup.py) when it is built: the
same walk and code, its keys as bytes (the tuples where an operand does not encode); `run_py` below is the
reference, and what runs without it."""

from __future__ import annotations

from .emitter import Imm, PInst, VReg
from .emitter import imm_key as _imm_key
from .scalar_flow import PURE, WRITTEN_AT, writes

try:
    from . import _codewalk
except ImportError:  # not built (setup.py build_ext): run_py
    _codewalk = None

# operands in either order give the same bits (integers only: a float sum of two NaNs keeps the first's payload)
COMMUTATIVE = frozenset(f"s.{op}" for op in ("add", "mul", "and", "or", "xor", "maxs", "mins", "maxu", "minu"))
NEW_BLOCK = frozenset({".label", "jmp", "halt"})


def run(code: list[PInst], count: dict | None = None) -> list[PInst]:
    """The code with recomputed pure scalar values dropped and their readers renamed (module
    docstring); ``count``: `writes(code)` when the caller has it (licm moves, it changes no count)."""
    if count is None:
        count = writes(code)
    if _codewalk is not None and type(code) is list and type(count) is dict:
        return _codewalk.scalar_cse(code, count, PURE, COMMUTATIVE, NEW_BLOCK, WRITTEN_AT, VReg, Imm, _imm_key, PInst)
    return run_py(code, count)


def run_py(code: list[PInst], count: dict | None = None) -> list[PInst]:
    """`run` in Python: the reference."""
    if count is None:
        count = writes(code)
    rename: dict[VReg, VReg] = {}
    number: dict[VReg, int] = {}  # register -> the value number it holds in this extended block
    holder: dict[tuple, VReg] = {}  # expression key -> the once-written register that holds it
    fresh = iter(range(1 << 62))
    keep = []

    for inst in code:
        m, ops = inst.mnemonic, inst.operands
        if m == ".label":
            number.clear()
            holder.clear()
        if m in PURE and count.get(ops[0]) == 1:
            d = ops[0]
            srcs = []
            for v in ops[1:]:
                if type(v) is VReg:  # the value number the register holds (one on first sight)
                    v = rename.get(v, v)
                    n = number.get(v)
                    if n is None:
                        n = number[v] = next(fresh)
                    srcs.append(("r", n))
                else:
                    srcs.append(_imm_key(v))
            if m in COMMUTATIVE and inst.suffixes[0].startswith("i"):
                srcs.sort()
            if m == "s.mov":
                key = ("mov", srcs[0])
                if type(ops[1]) is VReg:
                    src = rename.get(ops[1], ops[1])
                    if count.get(src) == 1:
                        rename[d] = src
                        continue
            else:
                key = (m, inst.suffixes, tuple(srcs))
            h = holder.get(key)
            if h is not None:
                rename[d] = h
                continue
            holder[key] = d
            number[d] = next(fresh)
        elif m[0] != ".":
            for i in WRITTEN_AT[m]:
                if type(ops[i]) is VReg:
                    number[ops[i]] = next(fresh)
        keep.append(inst)
        if m in NEW_BLOCK:
            number.clear()
            holder.clear()
    if not rename:
        return keep
    out = []
    for inst in keep:
        for v in inst.operands:
            t = type(v)
            if (t is VReg and v in rename) or t is tuple:
                ops = tuple(_renamed(v, rename) for v in inst.operands)
                inst = PInst(inst.mnemonic, inst.suffixes, ops, inst.loc, inst.extra_uses)
                break
        out.append(inst)
    return out


def _renamed(v, rename: dict):
    if isinstance(v, tuple):
        return tuple(rename.get(r, r) for r in v)
    return rename.get(v, v) if type(v) is VReg else v
