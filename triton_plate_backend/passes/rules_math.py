"""Lowering rules for math.*, tt.extern_elementwise (libdevice), tt.precise_sqrt/divf,
tt.clampf, tt.mulhiui and the PTX inline asm ptx_asm.py gives a meaning (tt.elementwise_inline_asm).
Every function maps through ONE table (`MATH`; `LIBDEVICE` in libdevice.py) to a vector instruction;
scalars go through a 1-element tile (the scalar unit has no transcendentals). Functions with no
instruction of their own are short compositions (`COMPOSITE`, or a libdevice entry's steps, run by
`_composite`)."""

from __future__ import annotations

from . import ptx_asm
from .context import Const, dtype_of, is_float
from .emitter import Imm, VReg
from .libdevice import LIBDEVICE
from .rules_arith import elementwise, enum_value, tensor_shape

# math dialect op -> vector mnemonic
MATH = {
    "math.absf": "v.abs",
    "math.absi": "v.abs",
    "math.ceil": "v.ceil",
    "math.floor": "v.floor",
    "math.cos": "v.cos",
    "math.sin": "v.sin",
    "math.tan": "v.tan",
    "math.erf": "v.erf",
    "math.erfc": "v.erfc",
    "math.exp": "v.exp",
    "math.exp2": "v.exp2",
    "math.expm1": "v.expm1",
    "math.log": "v.log",
    "math.log2": "v.log2",
    "math.log10": "v.log10",
    "math.log1p": "v.log1p",
    "math.sqrt": "v.sqrt",
    "math.rsqrt": "v.rsqrt",
    "math.tanh": "v.tanh",
    "math.sinh": "v.sinh",
    "math.cosh": "v.cosh",
    "math.asin": "v.asin",
    "math.acos": "v.acos",
    "math.atan": "v.atan",
    "math.asinh": "v.asinh",
    "math.acosh": "v.acosh",
    "math.atanh": "v.atanh",
    "math.cbrt": "v.cbrt",
    "math.trunc": "v.ftrunc",
    "math.roundeven": "v.rint",
    "math.ctpop": "v.popc",
    "math.ctlz": "v.clz",
    "math.isnan": "v.isnan",
    "math.isinf": "v.isinf",
    "math.powf": "v.pow",
    "math.atan2": "v.atan2",
    "math.copysign": "v.copysign",
    "math.fma": "v.fma",
    "tt.precise_sqrt": "v.sqrt",
    "tt.precise_divf": "v.div",
    "tt.mulhiui": "v.mulhiu",
}

# instructions whose natural result is i1 (converted to the op's result type when it differs)
I1_RESULT = {"v.isnan", "v.isinf", "v.signbit"}


def apply(ctx, op, mnemonic, operands=None, suffixes=()):
    """One mnemonic (or composite) on the op's operands, converting an i1 result when needed."""
    operands = list(op.operands if operands is None else operands)
    if isinstance(mnemonic, tuple):
        _composite(ctx, op, operands, mnemonic)
        return
    if mnemonic in COMPOSITE:
        COMPOSITE[mnemonic](ctx, op, operands)
        return
    res = op.results[0]
    if mnemonic in I1_RESULT and dtype_of(res.type) != "i1":
        shape = tensor_shape(ctx, operands) or (1,)
        tmp = ctx.new("i1", shape, what=f"{mnemonic} result")
        ctx.vec(mnemonic, tmp, *(ctx.view(v, shape) for v in operands))
        dst = ctx.new(dtype_of(res.type), shape, owner=res)
        ctx.vec("v.zext", dst, tmp)
        _bind_result(ctx, op, res, dst, scalar=tensor_shape(ctx, operands) is None)
        return
    elementwise(ctx, op, mnemonic, None, suffixes)


def _bind_result(ctx, op, res, dst, scalar):
    if scalar:
        r = VReg()
        ctx.emit("v.extract", r, dst, Imm(0))
        ctx.bind(res, r)
    else:
        ctx.bind(res, dst)


def _composite(ctx, op, operands, steps):
    """Run a short sequence of vector instructions over tiles of the operands' shape.
    steps: (mnemonic, dst name, src names/constants, *suffixes); 'x','y','z','w' are the operands,
    'out' the result, 'name:dtype' a temporary of that type, 'm*' an i1 one, any other the first
    operand's type; a constant takes the type of the step's first non-i1 named source."""
    res = op.results[0]
    shape = tensor_shape(ctx, operands) or (1,)
    dtype = dtype_of(operands[0].type)
    named = {n: ctx.view(v, shape) for n, v in zip("xyzw", operands)}
    out = ctx.new(dtype_of(res.type), shape, owner=res)
    for mnemonic, dst, srcs, *suffix in steps:
        dst, _, typed = dst.partition(":")
        if dst not in named:
            named[dst] = out if dst == "out" else ctx.new(typed or ("i1" if dst.startswith("m") else dtype), shape)
        const_type = next((named[s].dtype for s in srcs if isinstance(s, str) and named[s].dtype != "i1"), dtype)
        args = [named[s] if isinstance(s, str) else ctx.fill(s, const_type, shape) for s in srcs]
        ctx.vec(mnemonic, named[dst], *args, suffixes=tuple(suffix))
    _bind_result(ctx, op, res, out, scalar=tensor_shape(ctx, operands) is None)


# round half away from zero: t = trunc(x); t + (|x - t| >= 0.5 ? copysign(1, x) : 0)  (x - t is exact),
# with x's sign
_ROUND = [
    ("v.ftrunc", "t", ["x"]),
    ("v.sub", "f", ["x", "t"]),
    ("v.abs", "f", ["f"]),
    ("v.cmpf", "m", ["f", 0.5], "oge"),
    ("v.copysign", "s", [1.0, "x"]),
    ("v.select", "s", ["m", "s", 0.0]),
    ("v.add", "a", ["t", "s"]),
    ("v.copysign", "out", ["a", "x"]),  # round(-0.4) = -0
]
_ISFINITE = [
    ("v.isnan", "m1", ["x"]),
    ("v.isinf", "m2", ["x"]),
    ("v.or", "m1", ["m1", "m2"]),
    ("v.not", "m1", ["m1"]),
    ("v.zext", "out", ["m1"]),
]
# float -> int64 after rounding: llrint half to even (the current mode), llround half away from zero
_LLRINT = [("v.rint", "t", ["x"]), ("v.fptosi", "out", ["t"])]
_LLROUND = [(m, "r" if dst == "out" else dst, srcs, *rest) for m, dst, srcs, *rest in _ROUND] + [
    ("v.fptosi", "out", ["r"])
]
_SATURATE = [("v.maxnum", "t", ["x", 0.0]), ("v.minnum", "out", ["t", 1.0])]

COMPOSITE = {
    "round": lambda ctx, op, xs: _composite(ctx, op, xs, _ROUND),
    "isfinite": lambda ctx, op, xs: _composite(
        ctx, op, xs, _ISFINITE if dtype_of(op.result.type) != "i1" else _ISFINITE[:3] + [("v.not", "out", ["m1"])]
    ),
    "saturate": lambda ctx, op, xs: _composite(ctx, op, xs, _SATURATE),
    "llrint": lambda ctx, op, xs: _composite(ctx, op, xs, _LLRINT),
    "llround": lambda ctx, op, xs: _composite(ctx, op, xs, _LLROUND),
}


def _math(name):
    mnemonic = MATH[name]

    def rule(ctx, op):
        apply(ctx, op, mnemonic)

    rule.__name__ = "_lower_" + name.replace(".", "_")
    return rule


def _lower_math_round(ctx, op):
    apply(ctx, op, "round")


def _lower_math_isfinite(ctx, op):
    apply(ctx, op, "isfinite")


def _lower_tt_clampf(ctx, op):
    nan = enum_value(op.attrs.get("propagateNan"), "nan") if "propagateNan" in op.attrs else "none"
    nan = "all" if nan in ("all", "ALL", "1") else "none"
    elementwise(ctx, op, "v.clamp", None, (nan,))


def _lower_tt_extern_elementwise(ctx, op):
    symbol = op.attrs["symbol"].value
    mnemonic = LIBDEVICE.get(symbol)
    if mnemonic is None:
        raise ctx.error(
            f"external function {symbol!r} (library {getattr(op.attrs.get('libname'), 'value', '?')}) "
            f"has no PLATE equivalent; plate maps these libdevice functions: "
            f"{', '.join(sorted(s for s in LIBDEVICE if s.endswith('f'))[:12])}, ..."
        )
    apply(ctx, op, mnemonic)


def _lower_tt_elementwise_inline_asm(ctx, op):
    """PTX runs only where ptx_asm gives it a meaning on PLATE: a scheduler hint (nothing) or one arithmetic
    instruction (the libdevice function that computes it)."""
    asm = getattr(op.attrs.get("asm_string"), "value", "")
    pack = int(getattr(op.attrs.get("packed_element"), "value", 1))
    dtypes = [dtype_of(v.type) for v in op.operands]
    meaning = ptx_asm.meaning(asm, dtypes, [dtype_of(r.type) for r in op.results], pack)
    if meaning is None:
        raise ctx.error(f"{ptx_asm.REFUSED} (the asm: {ptx_asm.normalized(asm)[:80]!r})")
    if meaning != ptx_asm.NOTHING:
        apply(ctx, op, meaning if isinstance(meaning, tuple) else LIBDEVICE[meaning])
        return
    for r in op.results:
        zero = 0.0 if is_float(dtype_of(r.type)) else 0
        ctx.bind(r, ctx.fill(zero, dtype_of(r.type), r.type.shape) if hasattr(r.type, "shape") else Const(zero))


RULES = {name: _math(name) for name in MATH}
RULES.update(
    {
        "math.round": _lower_math_round,
        "math.isfinite": _lower_math_isfinite,
        "tt.clampf": _lower_tt_clampf,
        "tt.extern_elementwise": _lower_tt_extern_elementwise,
        "tt.elementwise_inline_asm": _lower_tt_elementwise_inline_asm,
    }
)
