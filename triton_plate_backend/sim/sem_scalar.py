"""Scalar-unit semantics: s.*, control flow (jmp, bz, bnz, loop, halt) and dbg.*.

A scalar op ``s.<op>.<stype>`` reads its registers as values of ``stype`` and runs the vector
unit's function for that op (sem_vector.BINARY) on them, so scalar and vector arithmetic agree
bit for bit (wrapping, division by zero, shift clamping, rounding). Control-flow rules return a
``Branch`` (or ``HALT``); the executor turns that into pc updates, divergence and scheduling.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from ..dtypes import BITS
from ..errors import IsaError, SimulatorError
from ..isa.table import ISA, PRINT_HEX, PRINT_LABEL_SHIFT, PRINT_UNSIGNED, is_float
from . import numerics as nx
from .sem_vector import BINARY, DIRECT_INT, convert, kind


class DeviceAssertionError(SimulatorError, RuntimeError):
    """A ``dbg.assert`` (tl.device_assert / tl.static ... assert) failed in some program instances; a
    RuntimeError as well, as torch's CUDA error for a device-side assert is."""


class Branch:
    """A control-flow outcome: ``taken`` (bool, or bool [P] per program) jumps to ``target``."""

    __slots__ = ("taken", "target")

    def __init__(self, taken, target: int):
        self.taken, self.target = taken, target


HALT = object()  # the program instance ends

# s.<op> -> (vector op on integer stypes, vector op on float stypes); None: not defined
SCALAR_OPS = {
    "add": ("add", "add"),
    "sub": ("sub", "sub"),
    "mul": ("mul", "mul"),
    "div": (None, "div"),
    "divs": ("divs", None),
    "divu": ("divu", None),
    "rems": ("rems", None),
    "remu": ("remu", None),
    "and": ("and", None),
    "or": ("or", None),
    "xor": ("xor", None),
    "shl": ("shl", None),
    "shrs": ("shrs", None),
    "shru": ("shru", None),
    "maxs": ("maxs", "maximum"),
    "mins": ("mins", "minimum"),
    "maxu": ("maxu", None),
    "minu": ("minu", None),
}


# One program's registers (P == 1) in Python integers: DIRECT_INT's ops on the exact values, the result wrapped
# to the word's width and sign-extended (i32: the low 32 bits of the i64 result, as the ufunc path's cast;
# two's complement and/or/xor of Python integers are the words'): the same word, without a numpy call on
# 1-element rows per step (~0.8 against 1.6-3 us)
_PY_INT = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "and": operator.and_,
    "or": operator.or_,
    "xor": operator.xor,
}
assert set(_PY_INT) == set(DIRECT_INT)
_WRAP = {"i32": (1 << 31, (1 << 32) - 1), "i64": (1 << 63, (1 << 64) - 1)}  # stype -> (half, mask)
# min/max of one program's words the same way: (pick, whether the values are signed). The vector rule compares the
# low bits as signed or unsigned values of the stype and stores the result wrapped to it (sem_vector's
# _signed_op/_unsigned_op): here the words' values in Python integers, the one picked wrapped and sign-extended
_PY_PICK = {"mins": (min, True), "maxs": (max, True), "minu": (min, False), "maxu": (max, False)}
# s.divs / s.rems of one program's non-negative word by a positive one, both below 2**31 for i32: the ufunc path's
# condition (every word its value), the floor division or remainder of the two values, in range
_PY_FLOOR = {"divs": operator.floordiv, "rems": operator.mod}

_FLOOR_DIV = {"divs": np.floor_divide, "rems": np.remainder}  # s.divs / s.rems of non-negative by positive
_WORD_SHIFT = {"i32": 31, "i64": 63}  # a word >> this is 0 iff it is a non-negative value of the stype


def _binary(op):
    int_op, float_op = SCALAR_OPS[op]
    direct = DIRECT_INT.get(op)  # one numpy ufunc on the raw i64 words: in place on the register rows
    # a non-negative dividend over a positive divisor (index arithmetic): truncation is the floor, and
    # the remainder numpy's, so the ufunc gives the general rule's result without its zero and -1 cases
    floor = _FLOOR_DIV.get(op)
    by_stype = {}  # stype -> the vector function, resolved once

    def resolve(dt, mnemonic):
        name = float_op if is_float(dt) else int_op
        if name is None:
            raise IsaError(f"{mnemonic} is not defined on {dt}")
        by_stype[dt] = BINARY[name][kind(dt)]
        return by_stype[dt]

    py = _PY_INT.get(op)
    pick, signed = _PY_PICK.get(op, (None, False))
    py_floor = _PY_FLOOR.get(op)
    one = py is not None or pick is not None or py_floor is not None  # a one-program path in Python integers

    def rule(st, ins):
        d, a, b = ins.operands
        dt = ins.suffixes[0]
        regs = st.regs
        if one and st.P == 1 and dt in _WRAP:
            half, mask = _WRAP[dt]
            if py is not None:
                regs[d, 0] = ((py(regs.item(a, 0), regs.item(b, 0)) + half) & mask) - half
                return
            if pick is not None:
                x, y = regs.item(a, 0) & mask, regs.item(b, 0) & mask  # the unsigned values of the low bits
                if signed:
                    x, y = ((x + half) & mask) - half, ((y + half) & mask) - half
                regs[d, 0] = ((pick(x, y) + half) & mask) - half
                return
            if py_floor is not None:
                x, y = regs.item(a, 0), regs.item(b, 0)
                if 0 <= x < half and 0 < y < half:
                    regs[d, 0] = py_floor(x, y)
                    return
        if direct is not None and dt == "i64":
            direct(regs[a], regs[b], out=regs[d])
            return
        if direct is not None and dt == "i32":  # the low 32 bits of the i64 result, sign-extended: the same word
            direct(regs[a], regs[b], out=regs[d])
            regs[d] = regs[d].astype(np.int32)
            return
        if floor is not None and dt in _WORD_SHIFT:
            # every word of a non-negative and of b positive, below 2**31 for i32 (one reduction: a | b | b - 1
            # has no bit from the sign's position up iff so): each word is its value, so the floor ufunc on
            # the words is the one below on the values, and its result (in range) is its own word
            wa, wb = regs[a], regs[b]
            high = wb - 1
            high |= wa
            high |= wb
            if not np.bitwise_or.reduce(high) >> _WORD_SHIFT[dt]:
                floor(wa, wb, out=regs[d])
                return
        fn = by_stype.get(dt) or resolve(dt, ins.mnemonic)
        x, y = nx.from_word(regs[a], dt), nx.from_word(regs[b], dt)
        if floor is not None and dt in ("i32", "i64") and x.min(initial=0) >= 0 and y.min(initial=1) > 0:
            regs[d] = nx.to_word(floor(x, y), dt)
            return
        regs[d] = nx.to_word(fn(x, y, dt), dt)

    return rule


def _word_of_const(value) -> np.int64:
    if isinstance(value, float):
        return np.float64(value).view(np.int64)
    return np.int64(((int(value) + (1 << 63)) & nx.MASK64) - (1 << 63))


def _li(st, ins):
    d, v = ins.operands
    st.regs[d] = _word_of_const(st.consts[v])


def li_rule(ins, consts):
    """The rule of this one s.li with its word resolved once (a persistent loop runs each s.li once
    per trip), or None when the constant is not a number (the generic rule then raises as it runs)."""
    d, v = ins.operands
    try:
        word = _word_of_const(consts[v])
    except (TypeError, ValueError, IndexError, OverflowError):
        return None

    def rule(st, ins):
        st.regs[d] = word

    return rule


def _mov(st, ins):
    d, a = ins.operands
    st.regs[d] = st.regs[a]


def _arg(st, ins):
    d, i = ins.operands
    k = st.consts[i]
    if not isinstance(k, int) or not 0 <= k < len(st.args):
        raise IsaError(f"s.arg {k!r}: the kernel has {len(st.args)} arguments")
    st.regs[d] = st.args[k]


_AXIS = {"x": 0, "y": 1, "z": 2}


def _pid(st, ins):
    st.regs[ins.operands[0]] = st.coords()[_AXIS[ins.suffixes[0]]]


def _nprog(st, ins):
    st.regs[ins.operands[0]] = st.grid[_AXIS[ins.suffixes[0]]]


# s.cmpi on i32/i64 words: compare_int's ufunc on the words' low bits (from_word's cast), signed or unsigned
_CMPI_WORDS = {"i32": (np.int32, np.uint32), "i64": (np.int64, np.uint64)}


_PY_CMP = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt}
_PY_CMP["ge"] = operator.ge


def _cmpi(st, ins):
    d, a, b = ins.operands
    pred, dt = ins.suffixes
    words = _CMPI_WORDS.get(dt)
    if words is not None and st.P == 1:  # one program: the words' values in Python integers, compared
        half, mask = _WRAP[dt]
        x, y = st.regs.item(a, 0) & mask, st.regs.item(b, 0) & mask  # the unsigned view of the low bits
        if pred[0] == "s":
            x, y = ((x + half) & mask) - half, ((y + half) & mask) - half  # the signed one
        st.regs[d, 0] = _PY_CMP[pred if pred in ("eq", "ne") else pred[1:]](x, y)
        return
    if words is not None:
        x, y = st.regs[a].astype(words[0], copy=False), st.regs[b].astype(words[0], copy=False)
        if pred[0] == "u":
            x, y = x.view(words[1]), y.view(words[1])
        st.regs[d] = nx.CMP[pred if pred in ("eq", "ne") else pred[1:]](x, y)
        return
    nx.check_int(dt, ins.mnemonic)
    st.regs[d] = nx.compare_int(pred, nx.from_word(st.regs[a], dt), nx.from_word(st.regs[b], dt), dt)


def _cmpf(st, ins):
    d, a, b = ins.operands
    pred, dt = ins.suffixes
    nx.check_float(dt, ins.mnemonic)
    st.regs[d] = nx.compare_float(pred, nx.from_word(st.regs[a], dt), nx.from_word(st.regs[b], dt))


def _select(st, ins):
    d, c, a, b = ins.operands
    regs = st.regs
    if st.P == 1:  # one program: the chosen word
        regs[d, 0] = regs.item(a, 0) if regs.item(c, 0) != 0 else regs.item(b, 0)
        return
    regs[d] = np.where(regs[c] != 0, regs[a], regs[b])


def _conversion(name):
    def rule(st, ins):
        d, a = ins.operands
        dst, src = ins.suffixes
        st.regs[d] = nx.to_word(convert(name, nx.from_word(st.regs[a], src), src, dst, (), ins.mnemonic), dst)

    return rule


# ---- control flow --------------------------------------------------------------------------------
def _jmp(st, ins):
    return Branch(True, ins.operands[0])


def _bz(st, ins):
    c, target = ins.operands
    return Branch(st.regs[c] == 0, target)


def _bnz(st, ins):
    c, target = ins.operands
    return Branch(st.regs[c] != 0, target)


def _loop(st, ins):
    c, target = ins.operands
    counter = st.regs[c]
    np.subtract(counter, 1, out=counter)
    return Branch(counter != 0, target)


def _halt(st, ins):
    return HALT


# ---- debug ---------------------------------------------------------------------------------------
def _text(v, dtype: str, fmt: int) -> str:
    if fmt & PRINT_HEX:
        bits = np.asarray(v).astype(np.uint8) if dtype == "i1" else np.asarray(v).view(BITS[dtype])
        return f"0x{int(bits):0{2 * bits.itemsize}x}"
    if is_float(dtype):
        return f"{float(v):f}"  # printf's %f, as Triton's device_print
    if fmt & PRINT_UNSIGNED and dtype != "i1":
        return str(int(np.asarray(v).view(BITS[dtype])))
    return str(int(v))


def _print(st, ins):
    """Triton's device_print format: ``pid (x, y, z) idx (  i,  j) prefix: value``, one line per element; each
    index padded to the digits of its dimension (ceil(log10(size))), floats as printf's %f; an operand of a print
    of several says which (``prefix: (operand n) value``)."""
    p, a, f = ins.operands
    prefix, t, fmt = st.consts[p], st.tiles[a], int(st.consts[f])
    vals = st.read(a)
    xs, ys, zs = st.coords()
    widths = [math.ceil(math.log10(n)) if n > 1 else 0 for n in t.shape]
    tail = f" {prefix}: " if prefix else ": "
    if fmt >> PRINT_LABEL_SHIFT:
        tail += f"(operand {(fmt >> PRINT_LABEL_SHIFT) - 1}) "
    for row in range(st.P):
        pid = f"pid ({xs[row]}, {ys[row]}, {zs[row]})"
        for idx in np.ndindex(*t.shape):
            index = ", ".join(f"{i:{w}}" for i, w in zip(idx, widths, strict=True))
            st.printer(f"{pid} idx ({index}){tail}{_text(vals[(row, *idx)], t.dtype, fmt)}")


def _printr(st, ins):
    """The register as a signed 64-bit integer (print a float through a tile)."""
    p, a = ins.operands
    xs, ys, zs = st.coords()
    for row in range(st.P):
        st.printer(f"pid ({xs[row]}, {ys[row]}, {zs[row]}) {st.consts[p]}: {int(st.regs[a][row])}")


def _assert(st, ins):
    c, m = ins.operands
    if st.tiles[c].dtype != "i1":
        raise IsaError(f"dbg.assert: condition t{c} must be i1, got {st.tiles[c].dtype}")
    ok = st.read(c).reshape(st.P, -1).all(axis=1)
    if not ok.all():
        raise DeviceAssertionError(f"device-side assert triggered: {st.consts[m]}", programs=np.nonzero(~ok)[0])


SEMANTICS = {f"s.{op}": _binary(op) for op in SCALAR_OPS}
SEMANTICS.update(
    {
        f"s.{name}": _conversion(name)
        for name in ("sext", "zext", "trunc", "sitofp", "uitofp", "fptosi", "fptoui", "fcvt", "bitcast")
    }
)
SEMANTICS.update(
    {
        "nop": lambda st, ins: None,
        "s.li": _li,
        "s.mov": _mov,
        "s.arg": _arg,
        "s.pid": _pid,
        "s.nprog": _nprog,
        "s.cmpi": _cmpi,
        "s.cmpf": _cmpf,
        "s.select": _select,
        "jmp": _jmp,
        "bz": _bz,
        "bnz": _bnz,
        "loop": _loop,
        "halt": _halt,
        "dbg.print": _print,
        "dbg.printr": _printr,
        "dbg.assert": _assert,
    }
)
assert all(m in ISA for m in SEMANTICS), "scalar SEMANTICS names a mnemonic the ISA lacks"
