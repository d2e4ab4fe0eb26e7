"""Lowering rules for the arith dialect: elementwise integer/float ops, comparisons, select,
constants and casts. Shape-polymorphic: an op whose operands are bound to tiles lowers to a
vector instruction (scalars splatted), one whose operands are scalars to a scalar instruction
(or, where the scalar unit has none, through a 1-element tile). Combine regions of reductions
and scans reuse these rules on tile views."""

from __future__ import annotations

from ..ir.core import BoolAttr, DenseAttr, EnumAttr, IntAttr
from ..isa.table import ENUMS
from . import program_range
from .context import Const, dtype_of, is_float
from .emitter import Imm, VReg, new_vreg

# op -> (vector mnemonic, scalar mnemonic or None: go through a 1-element tile)
BINARY = {
    "arith.addf": ("v.add", "s.add"),
    "arith.addi": ("v.add", "s.add"),
    "arith.subf": ("v.sub", "s.sub"),
    "arith.subi": ("v.sub", "s.sub"),
    "arith.mulf": ("v.mul", "s.mul"),
    "arith.muli": ("v.mul", "s.mul"),
    "arith.divf": ("v.div", "s.div"),
    "arith.divsi": ("v.divs", "s.divs"),
    "arith.divui": ("v.divu", "s.divu"),
    "arith.remsi": ("v.rems", "s.rems"),
    "arith.remui": ("v.remu", "s.remu"),
    "arith.remf": ("v.remf", None),
    "arith.andi": ("v.and", "s.and"),
    "arith.ori": ("v.or", "s.or"),
    "arith.xori": ("v.xor", "s.xor"),
    "arith.shli": ("v.shl", "s.shl"),
    "arith.shrsi": ("v.shrs", "s.shrs"),
    "arith.shrui": ("v.shru", "s.shru"),
    "arith.maxsi": ("v.maxs", "s.maxs"),
    "arith.minsi": ("v.mins", "s.mins"),
    "arith.maxui": ("v.maxu", "s.maxu"),
    "arith.minui": ("v.minu", "s.minu"),
    "arith.maxnumf": ("v.maxnum", None),
    "arith.minnumf": ("v.minnum", None),
    "arith.maximumf": ("v.maximum", "s.maxs"),
    "arith.minimumf": ("v.minimum", "s.mins"),
}

# op -> (vector mnemonic, scalar mnemonic)
CASTS = {
    "arith.extsi": ("v.sext", "s.sext"),
    "arith.extui": ("v.zext", "s.zext"),
    "arith.trunci": ("v.trunc", "s.trunc"),
    "arith.sitofp": ("v.sitofp", "s.sitofp"),
    "arith.uitofp": ("v.uitofp", "s.uitofp"),
    "arith.fptosi": ("v.fptosi", "s.fptosi"),
    "arith.fptoui": ("v.fptoui", "s.fptoui"),
    "arith.extf": ("v.fcvt", "s.fcvt"),
    "arith.truncf": ("v.fcvt", "s.fcvt"),
    "arith.index_cast": ("v.sext", "s.sext"),
    "arith.index_castui": ("v.zext", "s.zext"),
}


def enum_value(attr, enum: str) -> str:
    """An enum attribute as its keyword (MLIR's generic form prints the integer index)."""
    if isinstance(attr, IntAttr):
        return ENUMS[enum][attr.value]
    if isinstance(attr, EnumAttr):
        return attr.value
    return getattr(attr, "value", str(attr))


# ---- shared shape-polymorphic helpers -------------------------------------------------------------
def tensor_shape(ctx, values):
    for v in values:
        if ctx.is_tensor(v):
            return ctx.binding(v).shape
    return None


def vector_op(ctx, op, mnemonic, suffixes=(), operands=None, result=None):
    """result = mnemonic(operands) on tiles; scalars among the operands are splatted."""
    operands = list(op.operands if operands is None else operands)
    result = result or op.results[0]
    shape = tensor_shape(ctx, operands)
    srcs = [ctx.view(v, shape) for v in operands]
    dst = ctx.out(result, shape, reuse=operands)
    ctx.vec(mnemonic, dst, *srcs, suffixes=suffixes)
    ctx.bind(result, dst)
    return dst


def via_tile(ctx, op, mnemonic, suffixes=(), operands=None):
    """A scalar op the scalar unit lacks: splat into 1-element tiles, run the vector op, extract."""
    operands = list(op.operands if operands is None else operands)
    srcs = [ctx.view(v, (1,)) for v in operands]
    dst = ctx.new(dtype_of(op.results[0].type), (1,), what=f"scalar {op.name}")
    ctx.vec(mnemonic, dst, *srcs, suffixes=suffixes)
    r = VReg()
    ctx.emit("v.extract", r, dst, Imm(0))
    ctx.bind(op.results[0], r)


def elementwise(ctx, op, vector, scalar=None, vsuffixes=(), ssuffixes=None):
    if tensor_shape(ctx, op.operands) is not None:
        vector_op(ctx, op, vector, vsuffixes)
    elif scalar is None:
        via_tile(ctx, op, vector, vsuffixes)
    else:
        d = VReg()
        stype = dtype_of(op.operands[0].type)
        ctx.emit(scalar, d, *(ctx.reg(v) for v in op.operands), suffixes=(stype,) if ssuffixes is None else ssuffixes)
        ctx.bind(op.results[0], d)


# ---- rules ---------------------------------------------------------------------------------------
def _binary(name):
    vector, scalar = BINARY[name]

    def rule(ctx, op):
        elementwise(ctx, op, vector, scalar)

    rule.__name__ = "_lower_" + name.replace(".", "_")
    return rule


def _lower_arith_cmpi(ctx, op):
    pred = enum_value(op.attrs["predicate"], "ipred")
    elementwise(ctx, op, "v.cmpi", "s.cmpi", (pred,), (pred, dtype_of(op.operands[0].type)))


def _lower_arith_cmpf(ctx, op):
    pred = enum_value(op.attrs["predicate"], "fpred")
    elementwise(ctx, op, "v.cmpf", "s.cmpf", (pred,), (pred, dtype_of(op.operands[0].type)))


def _lower_arith_select(ctx, op):
    if tensor_shape(ctx, op.operands) is not None:
        vector_op(ctx, op, "v.select")
        return
    b = [ctx.binding(v) for v in op.operands[1:]]
    if any(hasattr(x, "leaves") for x in b):  # records (block pointers) selected by a scalar
        raise ctx.error("select between block pointers or tensor descriptors is not supported")
    d = VReg()
    ctx.emit("s.select", d, *(ctx.reg(v) for v in op.operands))
    ctx.bind(op.result, d)


def scalar_constant(attr, t):
    if isinstance(attr, BoolAttr):
        return int(attr.value)
    v = attr.value
    if is_float(dtype_of(t)):
        return float(v)
    return int(v)


def _lower_arith_constant(ctx, op):
    attr, t = op.attrs["value"], op.result.type
    if not isinstance(attr, DenseAttr):
        ctx.bind(op.result, Const(scalar_constant(attr, t)))
        return
    dtype, shape = dtype_of(t), t.shape
    conv = float if is_float(dtype) else int
    values = [conv(x) for x in attr.values]
    if attr.splat or len(set(values)) == 1:
        ctx.bind(op.result, ctx.fill(values[0], dtype, shape))
        return
    dst = ctx.new(dtype, shape, owner=op.result)
    flat = dst.reshape((dst.numel,))
    i = 0
    while i < len(values):  # one v.fill per run of equal values
        j = i
        while j + 1 < len(values) and values[j + 1] == values[i]:
            j += 1
        ctx.vec("v.fill", flat.sub(0, i, j - i + 1), Imm(values[i]))
        i = j + 1
    ctx.bind(op.result, dst)


def _lower_plate_program_range(ctx, op):
    """A persistent kernel's prologue (passes/program_range.py): each of its operations emitted as the
    scalar instruction its arith op's rule emits, in the same order (constants and arguments loaded at
    their first use, `Ctx.reg`): the code of the op expanded (`program_range.expand`)."""
    pid = VReg("pid")
    ctx.emit("s.pid", pid, suffixes=("x",))
    as_reg, emit, li = ctx.as_reg, ctx.emit, ctx.li
    suffixes = ("i32",)

    def scalar(name, a, b):  # (a register is its own, a constant its `li` (as `as_reg` does): `as_reg` for arguments)
        d = new_vreg()
        ta, tb = type(a), type(b)
        a = a if ta is VReg else li(a.value) if ta is Const else as_reg(a)
        emit(BINARY[name][1], d, a, b if tb is VReg else li(b.value) if tb is Const else as_reg(b), suffixes=suffixes)
        return d

    splits, rows, grid = program_range.operands(op)
    base, count = program_range.share(
        pid, [ctx.binding(v) for v in splits], ctx.binding(rows), ctx.binding(grid), scalar, Const
    )
    ctx.bind(op.results[0], base)
    ctx.bind(op.results[1], count)


def _lower_ub_poison(ctx, op):
    t = op.result.type
    zero = 0.0 if is_float(dtype_of(t)) else 0
    ctx.bind(op.result, ctx.fill(zero, dtype_of(t), t.shape) if hasattr(t, "shape") else Const(zero))


def rounding(op) -> str:
    attr = op.attrs.get("rounding") or op.attrs.get("roundingmode")
    if attr is None:
        return "rtne"
    v = enum_value(attr, "round") if not isinstance(attr, IntAttr) else ("rtz" if attr.value == 1 else "rtne")
    return {"to_nearest_even": "rtne", "toward_zero": "rtz"}.get(v, v)


def cast(ctx, op, vector, scalar, rnd=None):
    src, res = op.operands[0], op.result
    sd, dd = dtype_of(src.type), dtype_of(res.type)
    if ctx.is_tensor(src):
        dst = ctx.out(res, ctx.binding(src).shape, reuse=[src] if sd == dd else [])
        ctx.vec(vector, dst, ctx.view(src), suffixes=(rnd,) if rnd else ())
        ctx.bind(res, dst)
    elif rnd == "rtz":
        via_tile(ctx, op, vector, (rnd,))
    else:
        d = VReg()
        ctx.emit(scalar, d, ctx.reg(src), suffixes=(dd, sd))
        ctx.bind(res, d)


def _cast(name):
    vector, scalar = CASTS[name]

    def rule(ctx, op):
        cast(ctx, op, vector, scalar, rounding(op) if vector == "v.fcvt" else None)

    rule.__name__ = "_lower_" + name.replace(".", "_")
    return rule


def _lower_tt_fp_to_fp(ctx, op):
    cast(ctx, op, "v.fcvt", "s.fcvt", rounding(op))


def _lower_arith_bitcast(ctx, op):
    src, res = op.operands[0], op.result
    sd, dd = dtype_of(src.type), dtype_of(res.type)
    b = ctx.binding(src)
    if sd == dd:  # pointer <-> pointer / i64: the same bits in the same place
        ctx.bind(res, b)
    elif ctx.is_tensor(src) and "i1" not in (sd, dd):
        ctx.bind(res, b.retype(dd))  # a free view: same bytes read as another type
    elif ctx.is_tensor(src):
        cast(ctx, op, "v.bitcast", "s.bitcast")
    else:
        d = VReg()
        ctx.emit("s.bitcast", d, ctx.reg(src), suffixes=(dd, sd))
        ctx.bind(res, d)


def _lower_alias(ctx, op):
    """int_to_ptr / ptr_to_int: pointers are i64 byte addresses already."""
    ctx.bind(op.result, ctx.binding(op.operands[0]))


RULES = {name: _binary(name) for name in BINARY}
RULES.update({name: _cast(name) for name in CASTS})
RULES.update(
    {
        "arith.cmpi": _lower_arith_cmpi,
        "arith.cmpf": _lower_arith_cmpf,
        "arith.select": _lower_arith_select,
        "arith.constant": _lower_arith_constant,
        program_range.NAME: _lower_plate_program_range,
        "arith.bitcast": _lower_arith_bitcast,
        "tt.bitcast": _lower_arith_bitcast,
        "tt.fp_to_fp": _lower_tt_fp_to_fp,
        "tt.int_to_ptr": _lower_alias,
        "tt.ptr_to_int": _lower_alias,
        "ub.poison": _lower_ub_poison,
    }
)
