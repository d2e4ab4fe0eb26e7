"""Vector-unit semantics of libdevice's extra hardware: IEEE ops in a chosen rounding mode
(v.addr, v.subr, v.mulr, v.divr, v.sqrtr, v.recipr, v.fmar, v.sitofpr, v.uitofpr), the special
functions v.libm1 .. v.libm4 (sim/libm.py) and the byte permute v.prmt."""

from __future__ import annotations

import numpy as np

from ..errors import IsaError
from ..isa.table import ENUMS, is_float
from . import libm, rounding
from .numerics import round_float, signed, store_int, unsigned

_ROUNDED = {
    "addr": "add",
    "subr": "sub",
    "mulr": "mul",
    "divr": "div",
    "sqrtr": "sqrt",
    "recipr": "recip",
    "fmar": "fma",
}


def _tiles(st, ins):
    return [st.tiles[i] for i in ins.operands]


def _rounded_rule(op):
    def rule(st, ins):
        d, *srcs = _tiles(st, ins)
        for t in srcs:
            if t.dtype != d.dtype or t.shape != d.shape:
                raise IsaError(
                    f"{ins.mnemonic}: operands must share the result's dtype and shape {d.dtype}{list(d.shape)}"
                )
        if not is_float(d.dtype):
            raise IsaError(f"{ins.mnemonic}: needs a float type, got {d.dtype}")
        xs = [st.read(i) for i in ins.operands[1:]]
        st.write(ins.operands[0], rounding.ieee_op(op, xs, d.dtype, ins.suffixes[0]))

    return rule


def _int_to_float_rule(is_signed):
    def rule(st, ins):
        d, a = _tiles(st, ins)
        if not is_float(d.dtype) or is_float(a.dtype) or d.shape != a.shape:
            raise IsaError(
                f"{ins.mnemonic}: converts an int tile to a float tile of its shape, got {a.dtype} -> {d.dtype}"
            )
        x = st.read(ins.operands[1])
        x = signed(x, a.dtype) if is_signed else unsigned(x, a.dtype)
        st.write(ins.operands[0], rounding.int_to_float(x, is_signed, d.dtype, ins.suffixes[0]))

    return rule


def _libm_rule(st, ins):
    name = ins.suffixes[0]
    kinds, result_kind, fn = libm.LIBM[name]
    d, *srcs = _tiles(st, ins)
    if len(srcs) != len(kinds):
        raise IsaError(f"{ins.mnemonic}.{name}: takes {len(kinds)} operands, got {len(srcs)}")
    for i, t, k in zip(ins.operands[1:], srcs, kinds):
        if is_float(t.dtype) != (k == "f") or t.shape != d.shape:
            want = "float" if k == "f" else "int"
            raise IsaError(f"{ins.mnemonic}.{name}: operand t{i} must be a {want} tile of shape {list(d.shape)}")
    if is_float(d.dtype) != (result_kind == "f"):
        raise IsaError(f"{ins.mnemonic}.{name}: result must be {'a float' if result_kind == 'f' else 'an int'} tile")
    xs = []
    for i, t in zip(ins.operands[1:], srcs):
        x = st.read(i)
        xs.append(x.astype(np.float64) if is_float(t.dtype) else signed(x, t.dtype).astype(np.int64))
    out = fn(*xs)
    st.write(ins.operands[0], round_float(out, d.dtype) if result_kind == "f" else store_int(out, d.dtype))


def _prmt(st, ins):
    d, a, b, s = _tiles(st, ins)
    if any(t.dtype != "i32" or t.shape != d.shape for t in (d, a, b, s)):
        raise IsaError(f"{ins.mnemonic}: operands must be i32 tiles of one shape")
    ua, ub, us = (unsigned(st.read(i), "i32").astype(np.uint64) for i in ins.operands[1:])
    both = (ub << np.uint64(32)) | ua
    out = np.zeros_like(both)
    for n in range(4):
        sel = (us >> np.uint64(4 * n)) & np.uint64(7)
        out |= ((both >> (sel * np.uint64(8))) & np.uint64(0xFF)) << np.uint64(8 * n)
    st.write(ins.operands[0], store_int(out.astype(np.uint32).view(np.int32), "i32"))


SEMANTICS = {f"v.{name}": _rounded_rule(op) for name, op in _ROUNDED.items()}
SEMANTICS.update({"v.sitofpr": _int_to_float_rule(True), "v.uitofpr": _int_to_float_rule(False), "v.prmt": _prmt})
SEMANTICS.update({f"v.libm{k}": _libm_rule for k in range(1, 5)})

for _k in range(1, 5):
    _missing = set(ENUMS[f"libm{_k}"]) - set(libm.LIBM)
    assert not _missing, f"libm{_k} functions without semantics: {sorted(_missing)}"
