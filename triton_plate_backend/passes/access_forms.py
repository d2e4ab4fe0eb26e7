"""The forms the structured access analysis decomposes values into (internal to passes/access*.py).

- `Affine`: an integer tensor as const + sum_k coeffs[k] * i_k over the tile index i;
- `Box`: an i1 tensor that is true exactly on lo_k <= i_k < hi_k;
- `PtrTensor`, `BlockPtr`, `Desc`: pointer tensors, block pointers (tt.make_tensor_ptr) and tensor
  descriptors (tt.make_tensor_descriptor) as Exprs over scalars.

`Forms` memoises the decomposition of each value; one rule per op, in the tables below (mask rules
live in access_masks.py, the remainder rule in access_modular.py). A value that has no such form
raises `NotStructured` with the reason, naming the op and its source line. See passes/access.py for
the public API and the loop-carried pointers.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..errors import CompileError
from ..ir.core import (
    ArrayAttr,
    Block,
    BoolAttr,
    DenseAttr,
    EnumAttr,
    FloatAttr,
    IntAttr,
    Op,
    PtrType,
    Region,
    ScalarType,
    TensorDescType,
    TensorType,
    Value,
    shape_of,
)
from .affine import ONE, ZERO, Carried, Const, Expr, Val, add, atoms, max_, min_, mul, sub, value_name
from .records import plain_init


class NotStructured(CompileError):
    """Internal signal: a value has no structured form; `reason` names the op and its source line.
    Always caught by the analysis and turned into a GatherAccess."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def where(op: Op) -> str:
    return f"{op.name} at {op.loc if op.loc is not None else '<unknown>'}"


# ---- internal forms ---------------------------------------------------------------------------------


@plain_init
@dataclass(frozen=True)
class Affine:
    """An integer tensor: value[i] = const + sum_k coeffs[k] * i_k (a scalar has no coeffs)."""

    const: Expr
    coeffs: tuple[Expr, ...]

    @property
    def uniform(self) -> bool:
        return all(c == ZERO for c in self.coeffs)

    def combine(self, other: Affine, fn) -> Affine:
        return Affine(fn(self.const, other.const), tuple(fn(a, b) for a, b in zip(self.coeffs, other.coeffs)))


@plain_init
@dataclass(frozen=True)
class Box:
    """An i1 tensor that is true exactly where lo_k <= i_k < hi_k for every dim."""

    lo: tuple[Expr | None, ...]
    hi: tuple[Expr | None, ...]

    @staticmethod
    def full(rank: int) -> Box:
        return Box((None,) * rank, (None,) * rank)

    def __and__(self, other: Box) -> Box:
        return Box(
            tuple(max_(a, b) for a, b in zip(self.lo, other.lo)),
            tuple(min_(a, b) for a, b in zip(self.hi, other.hi)),
        )


@plain_init
@dataclass(frozen=True)
class PtrTensor:
    """A pointer (tensor): element i at base + (offset + sum_k strides_k * i_k) elements."""

    base: Expr
    offset: Expr
    strides: tuple[Expr, ...]


@plain_init
@dataclass(frozen=True)
class BlockPtr:
    """tt.make_tensor_ptr: element i at base + offset + sum_k (offsets_k + i_k) * strides_k."""

    base: Expr
    offset: Expr
    shape: tuple[Expr, ...]
    strides: tuple[Expr, ...]
    offsets: tuple[Expr, ...]


@plain_init
@dataclass(frozen=True)
class Desc:
    """tt.make_tensor_descriptor: a (shape, strides) view of memory at base + offset."""

    base: Expr
    offset: Expr
    shape: tuple[Expr, ...]
    strides: tuple[Expr, ...]


# ---- small IR helpers ------------------------------------------------------------------------------------


def defining_op(v: Value) -> Op | None:
    return v.owner if isinstance(v.owner, Op) else None


def for_iter_arg(v: Value) -> tuple[Op, int] | None:
    """(scf.for op, iter_arg index) when v is an iter_arg block argument of an scf.for body."""
    block = v.owner
    if not isinstance(block, Block) or not isinstance(block.parent, Region):
        return None
    loop = block.parent.parent
    if loop is None or loop.name != "scf.for" or loop.regions[0].blocks[0] is not block:
        return None
    pos = next(i for i, a in enumerate(block.args) if a is v)
    return (loop, pos - 1) if pos >= 1 else None


def int_value(x: Any) -> int:
    return int(x.value) if isinstance(x, IntAttr | BoolAttr | FloatAttr) else int(x)


def int_tuple(x: Any) -> tuple[int, ...]:
    vals = x.values if isinstance(x, ArrayAttr) else x
    return tuple(int_value(v) for v in vals)


def number(x: Any) -> int | float | bool:
    return x.value if isinstance(x, IntAttr | BoolAttr | FloatAttr) else x


def constant(op: Op) -> Any:
    """The python value of an arith.constant: a number for scalars and splats, a tuple otherwise."""
    attr = op.attrs.get("value")
    if isinstance(attr, DenseAttr):
        vals = tuple(number(v) for v in attr.values)
        return vals[0] if attr.splat or len(set(vals)) == 1 else vals
    return number(attr)


_CMPI_CODES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")


def predicate(op: Op) -> str:
    p = op.attrs.get("predicate")
    if isinstance(p, EnumAttr):
        return p.value
    if isinstance(p, IntAttr | int):
        return _CMPI_CODES[int_value(p)]
    return str(p)


def element_name(t) -> str:
    if isinstance(t, TensorDescType):
        return str(t.block.element)
    if isinstance(t, TensorType):
        t = t.element
    pointee = t.pointee if isinstance(t, PtrType) else t
    return str(pointee.element if isinstance(pointee, TensorType) else pointee)


def dim_map(op: Op) -> tuple[list[int | None], list[int], list[int]]:
    """For a shape op: per output dim the input dim it reads (None: a new size-1 dim), the broadcast
    output dims (input size 1, output larger), and the dropped input dims (all of size 1)."""
    src, dst = shape_of(op.operands[0].type), shape_of(op.results[0].type)
    if op.name == "tt.expand_dims":
        m: list[int | None] = list(range(len(src)))
        m.insert(int_value(op.attrs["axis"]), None)
        return m, [], []
    if op.name == "tt.broadcast":
        return list(range(len(src))), [k for k in range(len(dst)) if src[k] == 1 and dst[k] != 1], []
    if op.name == "tt.trans":
        return list(int_tuple(op.attrs["order"])), [], []
    # tt.reshape: only inserting or removing size-1 dims keeps the element order
    src_big, dst_big = [k for k, s in enumerate(src) if s != 1], [k for k, s in enumerate(dst) if s != 1]
    if "allow_reorder" in op.attrs or [src[k] for k in src_big] != [dst[k] for k in dst_big]:
        raise NotStructured(f"reshape changes the element layout: {where(op)}")
    m = [None] * len(dst)
    for s, d in zip(src_big, dst_big):
        m[d] = s
    return m, [], [k for k in range(len(src)) if k not in src_big]


SHAPE_OPS = ("tt.expand_dims", "tt.broadcast", "tt.trans", "tt.reshape")

# op name -> rule(forms, op) -> Box; filled by access_masks.py (imported by access.py)
MASK_RULES: dict[str, Any] = {}


@plain_init
@dataclass(frozen=True)
class CarriedPointer:
    """A loop-carried pointer the code generator keeps as scalar companions (see passes/access.py)."""

    arg: Value  # the scf.for block argument
    init: tuple[Expr, ...]  # companion values before the loop
    step: tuple[Expr, ...]  # added to the companions at scf.yield
    kind: str  # "offset" (pointer tensor) or "block" (block pointer offsets)


# ---- the analysis ---------------------------------------------------------------------------------------


_MISSING = object()  # what the memo holds for a value not decomposed yet


class Forms:
    """Memoised decomposition of values into the forms above; one instance per module walk."""

    def __init__(self):
        self.memo: dict[tuple[str, Value], Any] = {}
        self.carried: dict[Value, CarriedPointer] = {}

    def _cached(self, kind: str, v: Value, compute) -> Any:
        key = (kind, v)
        r = self.memo.get(key, _MISSING)  # (one lookup: a hit is most calls)
        if r is not _MISSING:
            if isinstance(r, NotStructured):
                raise NotStructured(r.reason)
            return r
        try:
            r = compute(v)
        except NotStructured as e:
            # the reason only: a raised exception's traceback holds every caller's frame (and their
            # tensors) alive until the cyclic GC runs
            self.memo[key] = NotStructured(e.reason)
            raise
        self.memo[key] = r
        return r

    # scalars: integer arithmetic expands into Exprs; anything else is a register the codegen holds
    def scalar(self, v: Value) -> Expr:
        return self._cached("scalar", v, self._scalar)

    def _scalar(self, v: Value) -> Expr:
        op = defining_op(v)
        if op is not None and op.name in _SCALAR_RULES and not isinstance(v.type, PtrType):
            r = _SCALAR_RULES[op.name](self, op)
            if r is not None:
                return r
        return Val(v)

    def offset(self, v: Value) -> Affine:
        return self._cached("offset", v, self._offset)

    def _offset(self, v: Value) -> Affine:
        if not isinstance(v.type, TensorType):
            return Affine(self.scalar(v), ())
        op = defining_op(v)
        if op is None:
            raise NotStructured(f"offset is a tensor block argument {value_name(v)}")
        rule = OFFSET_RULES.get(op.name)
        if rule is None:
            raise NotStructured(f"offset is not affine: {where(op)}")
        form = rule(self, op)
        if op.name in _WRAPPING:
            _check_no_wrap(op, form, self.offset(op.operands[0]) if op.name == "arith.extui" else None)
        return form

    def mask(self, v: Value) -> Box:
        return self._cached("mask", v, self._mask)

    def _mask(self, v: Value) -> Box:
        op = defining_op(v)
        if op is None:
            raise NotStructured(f"mask is a block argument {value_name(v)}")
        rule = MASK_RULES.get(op.name)
        if rule is None:
            raise NotStructured(f"mask is not a box: {where(op)}")
        return rule(self, op)

    def pointer(self, v: Value):
        return self._cached("pointer", v, self._pointer)

    def _pointer(self, v: Value):
        scalar_ptr = isinstance(v.type, PtrType) and not isinstance(v.type.pointee, TensorType)
        op = defining_op(v)
        if op is None:
            loop = for_iter_arg(v)
            if scalar_ptr:
                return PtrTensor(Val(v), ZERO, ())
            if loop is not None:
                return self._carried(v, *loop)
            raise NotStructured(f"pointer is a block argument {value_name(v)} (only scf.for iter_args are tracked)")
        rule = _POINTER_RULES.get(op.name)
        if rule is None:
            if scalar_ptr:
                return PtrTensor(Val(v), ZERO, ())
            raise NotStructured(f"pointer is not structured: {where(op)}")
        return rule(self, op)

    def _carried(self, arg: Value, loop: Op, j: int):
        """Tentatively treat `arg` as carried, then check that the loop yields it advanced uniformly."""
        init = self.pointer(loop.operands[3 + j])
        if isinstance(init, PtrTensor):
            form, init_exprs, kind = replace(init, offset=Carried(arg, 0)), (init.offset,), "offset"
            now = (form.offset,)
        elif isinstance(init, BlockPtr):
            now = tuple(Carried(arg, k) for k in range(len(init.offsets)))
            form, init_exprs, kind = replace(init, offsets=now), init.offsets, "block"
        else:
            raise NotStructured(f"loop-carried {value_name(arg)} is not a pointer tensor or block pointer")
        before, carried_before = set(self.memo), set(self.carried)
        self.memo[("pointer", arg)] = form
        try:
            body = loop.regions[0].blocks[0]
            yielded = self.pointer(body.ops[-1].operands[j])
            if type(yielded) is not type(form) or replace(yielded, **_moving(form)) != form:
                raise NotStructured(f"the loop yields a differently based pointer for {value_name(arg)}")
            nxt = (yielded.offset,) if kind == "offset" else yielded.offsets
            step = tuple(sub(n, c) for n, c in zip(nxt, now))
            own = set(body.args)
            if any(isinstance(n, Carried) and n.arg in own for s in step for n in atoms(s)):
                raise NotStructured(f"the step of {value_name(arg)} depends on loop-carried pointers")
        except NotStructured as e:
            for key in set(self.memo) - before:  # forget what assumed `arg` carried
                del self.memo[key]
            for key in set(self.carried) - carried_before:
                del self.carried[key]
            raise NotStructured(f"loop-carried pointer {value_name(arg)}: {e.reason}") from None
        self.carried[arg] = CarriedPointer(arg, tuple(init_exprs), step, kind)
        return form


def _moving(form) -> dict:
    """The fields of `yielded` that advance per iteration, taken from `form` (to compare the rest)."""
    return {"offset": form.offset} if isinstance(form, PtrTensor) else {"offsets": form.offsets}


# ---- scalar rules: integer arithmetic on scalars becomes Exprs -------------------------------------------


def _scalar_constant(a: Forms, op: Op) -> Expr | None:
    v = constant(op)
    return Const(int(v)) if isinstance(v, int) and not isinstance(v, bool) else None


_SCALAR_RULES = {
    "arith.constant": _scalar_constant,
    "arith.addi": lambda a, op: add(a.scalar(op.operands[0]), a.scalar(op.operands[1])),
    "arith.subi": lambda a, op: sub(a.scalar(op.operands[0]), a.scalar(op.operands[1])),
    "arith.muli": lambda a, op: mul(a.scalar(op.operands[0]), a.scalar(op.operands[1])),
    "arith.extsi": lambda a, op: a.scalar(op.operands[0]),  # exact: sign extension keeps the value
}


# ---- offset rules: integer tensors as affine functions of the tile index ---------------------------------

# Ops whose result CUDA computes in a fixed-width type (wrapping) where the forms keep unbounded integers.
_WRAPPING = frozenset(("arith.addi", "arith.subi", "arith.muli", "arith.trunci", "arith.extui"))
_INT_BITS = {"i8": 8, "i16": 16, "i32": 32, "i64": 64}


def _const_range(form: Affine, shape: tuple[int, ...]) -> tuple[int, int] | None:
    """[lo, hi] of a form whose terms are all constants, over the tile; None when a term is not (its value
    is known at the launch only)."""
    terms = (form.const, *form.coeffs)
    if not all(isinstance(t, Const) for t in terms):
        return None
    lo = hi = form.const.value
    for c, n in zip(form.coeffs, shape):
        span = c.value * (n - 1)
        lo, hi = lo + min(span, 0), hi + max(span, 0)
    return lo, hi


def _check_no_wrap(op: Op, form: Affine, source: Affine | None) -> None:
    """Refuse (a gather: computed per element, wrapping as on CUDA) a tensor of at most 32 bits whose form,
    all constants, leaves its type's range somewhere on the tile: `r * 2**28` with r < 16 wraps in i32, and
    the unbounded form would compare or address other elements. An extui of a
    negative value is 2**bits more. Forms over runtime scalars are not checked here."""
    shape = shape_of(op.results[0].type)
    if source is not None:  # extui (to any width): the source's signed values must be non-negative
        got = _const_range(source, shape)
        if got is not None and got[0] < 0:
            raise NotStructured(f"offset wraps: zero-extends values down to {got[0]} at {where(op)}")
        return
    bits = _INT_BITS.get(element_name(op.results[0].type))
    if bits is None or bits > 32:
        return
    got = _const_range(form, shape)
    if got is not None and (got[0] < -(1 << (bits - 1)) or got[1] >= 1 << (bits - 1)):
        raise NotStructured(
            f"offset wraps in i{bits}: values {got[0]}..{got[1]} at {where(op)} (computed per element, wrapping)"
        )


def _off_constant(a: Forms, op: Op) -> Affine:
    shape, v = shape_of(op.results[0].type), constant(op)
    if isinstance(v, int):
        return Affine(Const(int(v)), (ZERO,) * len(shape))
    if isinstance(v, tuple) and len(shape) == 1 and all(isinstance(x, int) for x in v):
        step = v[1] - v[0]
        if all(x == v[0] + step * i for i, x in enumerate(v)):
            return Affine(Const(v[0]), (Const(step),))
    raise NotStructured(f"offset is not affine (a non-progression constant): {where(op)}")


def _off_muli(a: Forms, op: Op) -> Affine:
    x, y = a.offset(op.operands[0]), a.offset(op.operands[1])
    if y.uniform:
        x, y = y, x
    if not x.uniform:
        raise NotStructured(f"offset is not affine (product of two varying tensors): {where(op)}")
    return Affine(mul(x.const, y.const), tuple(mul(x.const, c) for c in y.coeffs))


def _off_shape(a: Forms, op: Op) -> Affine:
    x = a.offset(op.operands[0])
    m, bcast, _ = dim_map(op)
    return Affine(x.const, tuple(ZERO if s is None or k in bcast else x.coeffs[s] for k, s in enumerate(m)))


# op name -> rule(forms, op) -> Affine; access_modular.py adds the remainder rule (imported by access.py)
OFFSET_RULES: dict[str, Any] = {
    "arith.constant": _off_constant,
    "tt.make_range": lambda a, op: Affine(Const(int_value(op.attrs["start"])), (ONE,)),
    "tt.splat": lambda a, op: Affine(a.scalar(op.operands[0]), (ZERO,) * len(shape_of(op.results[0].type))),
    "arith.addi": lambda a, op: a.offset(op.operands[0]).combine(a.offset(op.operands[1]), add),
    "arith.subi": lambda a, op: a.offset(op.operands[0]).combine(a.offset(op.operands[1]), sub),
    "arith.muli": _off_muli,
    "arith.extsi": lambda a, op: a.offset(op.operands[0]),
    "arith.extui": lambda a, op: a.offset(op.operands[0]),  # offsets are non-negative
    "arith.trunci": lambda a, op: a.offset(op.operands[0]),  # and fit the narrower type
    **{name: _off_shape for name in SHAPE_OPS},
}


# ---- pointer rules -------------------------------------------------------------------------------------


def _ptr_tensor(a: Forms, v: Value, op: Op) -> PtrTensor:
    p = a.pointer(v)
    if not isinstance(p, PtrTensor):
        raise NotStructured(f"{op.name} of a block pointer or descriptor: {where(op)}")
    return p


def _ptr_splat(a: Forms, op: Op) -> PtrTensor:
    p = _ptr_tensor(a, op.operands[0], op)
    return PtrTensor(p.base, p.offset, (ZERO,) * len(shape_of(op.results[0].type)))


def _ptr_addptr(a: Forms, op: Op) -> PtrTensor:
    p, off = _ptr_tensor(a, op.operands[0], op), a.offset(op.operands[1])
    return PtrTensor(p.base, add(p.offset, off.const), tuple(add(s, c) for s, c in zip(p.strides, off.coeffs)))


def _ptr_shape(a: Forms, op: Op) -> PtrTensor:
    p = _ptr_tensor(a, op.operands[0], op)
    m, bcast, _ = dim_map(op)
    return replace(p, strides=tuple(ZERO if s is None or k in bcast else p.strides[s] for k, s in enumerate(m)))


def _ptr_make_tensor_ptr(a: Forms, op: Op) -> BlockPtr:
    r = len(op.results[0].type.pointee.shape)
    b = _ptr_tensor(a, op.operands[0], op)
    shape, strides, offsets = (tuple(a.scalar(v) for v in op.operands[1 + i * r : 1 + (i + 1) * r]) for i in range(3))
    return BlockPtr(b.base, b.offset, shape, strides, offsets)


def _ptr_advance(a: Forms, op: Op) -> BlockPtr:
    p = a.pointer(op.operands[0])
    if not isinstance(p, BlockPtr):
        raise NotStructured(f"tt.advance of a non-block pointer: {where(op)}")
    return replace(p, offsets=tuple(add(o, a.scalar(v)) for o, v in zip(p.offsets, op.operands[1:])))


def _ptr_make_desc(a: Forms, op: Op) -> Desc:
    r = len(op.results[0].type.block.shape)
    b = _ptr_tensor(a, op.operands[0], op)
    shape, strides = (tuple(a.scalar(v) for v in op.operands[1 + i * r : 1 + (i + 1) * r]) for i in range(2))
    return Desc(b.base, b.offset, shape, strides)


def _pointee_bytes(t) -> int | None:
    pointee = (t.element if isinstance(t, TensorType) else t).pointee
    return (pointee.bitwidth + 7) // 8 if isinstance(pointee, ScalarType) else None


def _ptr_bitcast(a: Forms, op: Op) -> PtrTensor:
    """A pointer cast between types of one byte size (Triton stores i1 through *i8) keeps the form."""
    src, dst = op.operands[0].type, op.results[0].type
    if _pointee_bytes(src) is not None and _pointee_bytes(src) == _pointee_bytes(dst):
        return _ptr_tensor(a, op.operands[0], op)
    if not isinstance(dst, TensorType):
        return PtrTensor(Val(op.results[0]), ZERO, ())
    raise NotStructured(f"pointer bitcast changes the element size: {where(op)}")


_POINTER_RULES = {
    "tt.bitcast": _ptr_bitcast,
    "tt.splat": _ptr_splat,
    "tt.addptr": _ptr_addptr,
    "tt.make_tensor_ptr": _ptr_make_tensor_ptr,
    "tt.advance": _ptr_advance,
    "tt.make_tensor_descriptor": _ptr_make_desc,
    **{name: _ptr_shape for name in SHAPE_OPS},
}
