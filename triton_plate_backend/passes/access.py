"""Structured access analysis: which memory ops are boxes (dma.load/dma.store) and which are gathers.

A pure analysis over plate IR. For a memory op, `analyze` returns either

- `StructuredAccess`: element i = (i_0, ..., i_{r-1}) of the accessed tile lives at the byte address
      base + (offset + sum_k i_k * strides_k) * itemsize(element)
  and is accessed exactly when lo_k <= i_k < hi_k for every dim k (a None bound is no bound);
  loads read `other` where the box excludes an element. This is a dma.load/dma.store row; or
- `GatherAccess`: the addresses or the mask are not of that form; `reason` names the op and the
  kernel source line that broke it (the code generator then builds address and mask tensors).

All scalars are `passes.affine.Expr` trees over IR scalars (`Val`) that dominate the memory op.

Recognised forms:
- pointer tensors: splat(scalar pointer), then tt.addptr with affine integer offset tensors, through
  tt.broadcast / tt.expand_dims / tt.trans / tt.reshape (size-1 dims only); scalar tt.addptr chains
  fold into `offset`, so `base` is the root pointer (a kernel argument, usually).
- affine offsets: tt.make_range, tt.splat, dense splat constants (and 1-D arithmetic progressions),
  arith.addi/subi, arith.muli with one uniform side, extsi/extui/trunci (assumed not to overflow, as
  Triton's own axis analysis does, except that a form of constants alone that leaves its i32 or narrower
  type on the tile is refused: a gather, which wraps as CUDA; access_forms `_check_no_wrap`), the shape
  ops above, and arith.remsi by a constant when no tile
  can wrap (`rm % M` of the GEMM templates; passes/access_modular.py).
- masks: arith.andi of arith.cmpi between an offset that varies along one dim with a constant
  coefficient and a uniform bound (either operand order; eq/slt/sle/sgt/sge; ult/ule against a
  non-negative constant), splat(i1 scalar p) (hi_0 = select(p, size_0, 0)), uniform comparisons,
  dense constants, and the shape ops above.
- block pointers: tt.make_tensor_ptr + tt.advance; lo_k = -offset_k, hi_k = shape_k - offset_k on the
  dims boundaryCheck names; padding 1 -> fill 0, 2 -> fill nan.
- tensor descriptors: tt.make_tensor_descriptor + descriptor_load/store/reduce (every dim checked, OOB
  loads read 0, OOB stores are dropped); descriptor_gather/scatter when the row offsets are affine.
- atomics (tt.atomic_rmw / tt.atomic_cas) are always GatherAccess: PLATE's atom.* take address tensors.

Loop-carried pointers. A pointer tensor (or block pointer) that is an scf.for iter_arg, whose init
value is structured and whose yielded value is the same pointer advanced by a uniform amount
(`a_ptrs += BLOCK_K * stride_ak`, `p = tl.advance(p, ...)`), is carried by the code generator as
scalar companion registers instead of a tensor; `carried_pointers(for_op)` lists them:

    CarriedPointer(arg, init, step, kind)
      kind "offset": one companion, the element offset of element 0 from `base`
                     (so element i of arg is at base + (carried + sum i_k*strides_k) * itemsize);
      kind "block":  one companion per dim, the block pointer's offsets.
      Before the loop the codegen sets companion k to init[k] (Exprs over values defined before the
      loop); at scf.yield it adds step[k] (Exprs over values visible at the yield).

Inside the loop, accesses through `arg` use the Expr `Carried(arg, k)` for companion k: e.g. matmul's
A tile is base=%a, offset=carried(%arg10, 0), strides=(sam, 1). Loop results of pointer type are not
tracked (their uses are gathers).

Exprs that appear: Const, Val, Add, Sub, Mul; CeilDiv/FloorDiv (mask bounds with a coefficient > 1,
rounding toward +inf/-inf); Min/Max (conjoined bounds); Select (splat-of-i1 masks); Carried. Scalar
integer arithmetic (arith.constant/addi/subi/muli/extsi) is expanded into Exprs so bounds read
`n - pid*1024`; any other scalar stays a Val of the register the code generator already computes.

API: `analyze(op)`, `carried_pointers(for_op)`, `pointer_access(ptr_value)` (the addresses alone, for
building the address tensor of a gather or atomic), `access_report(module)` (debug dump). Each call
builds a fresh `AccessAnalysis`, unless inside `shared_analysis()` (the pipeline's passes of one kernel
share one); a code generator that walks a kernel should keep one AccessAnalysis and call its methods of
the same names, so every value is decomposed once.
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass
from typing import Any

from ..errors import CompileError
from ..ir.core import Module, Op, PtrType, TensorType, Value, shape_of
from ..ir.vocabulary import OPS
from . import access_masks, access_modular  # noqa: F401  (register the mask rules and the remainder rule)
from .access_forms import (
    Affine,
    BlockPtr,
    Box,
    CarriedPointer,
    Desc,
    Forms,
    NotStructured,
    PtrTensor,
    constant,
    defining_op,
    element_name,
    int_tuple,
    int_value,
    where,
)
from .access_masks import solve
from .affine import ZERO, Carried, Expr, add, atoms, mul, neg, sub, value_name
from .records import plain_init

# the ops that read or write device memory through a pointer or descriptor operand
MEMORY_OPS = tuple(name for name, op in OPS.items() if op.reads or op.writes)


@plain_init
@dataclass(frozen=True)
class StructuredAccess:
    base: Expr  # scalar pointer (byte address = pointer value)
    offset: Expr  # element offset added to base
    strides: tuple[Expr, ...]  # per tile dim, element stride (Const(0) for broadcast and size-1 dims)
    lo: tuple[Expr | None, ...]  # per dim: first valid index (None = no lower bound)
    hi: tuple[Expr | None, ...]  # per dim: one past the last valid index (None = unbounded)
    other: Any  # fill: None (none given), a python number, or an IR Value (a scalar, or a tensor to select)
    element: str  # pointee dtype name as in TTIR (f32, f16, bf16, i8, ...)
    reason: str = ""  # how it was recognised, for the debug dump


@plain_init
@dataclass(frozen=True)
class GatherAccess:
    reason: str  # why the structured form failed, naming the op and its source line


# ---- access rules: one per memory op -----------------------------------------------------------------


def _fill(v: Value | None) -> Any:
    """`other` as a number when it is a constant (splat), else the scalar it splats, else the Value."""
    if v is None:
        return None
    op = defining_op(v)
    if op is not None and op.name == "tt.splat":
        v, op = op.operands[0], defining_op(op.operands[0])
    if op is not None and op.name == "arith.constant":
        c = constant(op)
        if not isinstance(c, tuple):
            return c
    return v


def _normalise(shape, strides) -> tuple[Expr, ...]:
    return tuple(ZERO if n == 1 else s for n, s in zip(shape, strides))


def _box_access(form, idx, checked, shape, other, element, reason) -> StructuredAccess:
    """An access of the box at per-dim offsets idx of a block pointer / descriptor view."""
    offset = form.offset
    for o, s in zip(idx, form.strides):
        offset = add(offset, mul(o, s))
    lo = tuple(neg(o) if k in checked else None for k, o in enumerate(idx))
    hi = tuple(sub(n, o) if k in checked else None for k, (n, o) in enumerate(zip(form.shape, idx)))
    return StructuredAccess(form.base, offset, _normalise(shape, form.strides), lo, hi, other, element, reason)


def _pointer_access(a: Forms, op: Op, ptr: Value, mask: Value | None, other: Any) -> StructuredAccess:
    p = a.pointer(ptr)
    if isinstance(p, BlockPtr):
        checked = set(int_tuple(op.attrs.get("boundaryCheck", ())))
        pad = op.attrs.get("padding")
        fill = None if pad is None or not checked else {1: 0, 2: float("nan")}.get(int_value(pad))
        dims = f"boundary check on dims {sorted(checked)}" if checked else "no boundary check"
        return _box_access(
            p, p.offsets, checked, shape_of(ptr.type.pointee), fill, element_name(ptr.type), f"block pointer, {dims}"
        )
    if not isinstance(p, PtrTensor):
        raise NotStructured(f"{op.name} through a tensor descriptor value: {where(op)}")
    shape = shape_of(ptr.type)
    box = a.mask(mask) if mask is not None else Box.full(len(shape))
    carried = sorted({value_name(n.arg) for n in atoms(p.offset) if isinstance(n, Carried)})
    how = f"loop-carried pointer {', '.join(carried)}" if carried else "pointer tensor" if shape else "scalar pointer"
    bounded = [k for k in range(len(shape)) if box.lo[k] is not None or box.hi[k] is not None]
    how += f", mask bounds dims {bounded}" if bounded else (", no mask" if mask is None else ", mask always true")
    return StructuredAccess(
        p.base, p.offset, _normalise(shape, p.strides), box.lo, box.hi, other, element_name(ptr.type), how
    )


def _access_load(a: Forms, op: Op) -> StructuredAccess:
    ops = op.operands
    mask, other = (ops[1] if len(ops) > 1 else None), (ops[2] if len(ops) > 2 else None)
    return _pointer_access(a, op, ops[0], mask, _fill(other))


def _access_store(a: Forms, op: Op) -> StructuredAccess:
    ops = op.operands
    return _pointer_access(a, op, ops[0], ops[2] if len(ops) > 2 else None, None)


def _access_atomic(a: Forms, op: Op) -> GatherAccess:
    return GatherAccess(f"atomic read-modify-write goes through atom.* with address tensors: {where(op)}")


def _desc(a: Forms, op: Op) -> Desc:
    d = a.pointer(op.operands[0])
    if not isinstance(d, Desc):
        raise NotStructured(f"descriptor operand is not a tt.make_tensor_descriptor: {where(op)}")
    return d


def _access_desc_box(a: Forms, op: Op) -> StructuredAccess:
    """descriptor_load / descriptor_store / descriptor_reduce: a box at scalar indices, OOB -> 0 / dropped."""
    d, desc_t = _desc(a, op), op.operands[0].type
    idx = [v for v in op.operands[1:] if not isinstance(v.type, TensorType)]
    data = op.results[0] if op.name == "tt.descriptor_load" else next(v for v in op.operands[1:] if v not in idx)
    shape = shape_of(data.type)
    if len(shape) != len(d.shape) or len(idx) != len(d.shape):
        raise NotStructured(f"descriptor block rank differs from the tensor rank: {where(op)}")
    what = "atomic reduce on a box (read-modify-write)" if op.name == "tt.descriptor_reduce" else "tensor descriptor"
    other = 0 if op.name == "tt.descriptor_load" else None
    return _box_access(
        d,
        tuple(a.scalar(v) for v in idx),
        set(range(len(shape))),
        shape,
        other,
        element_name(desc_t),
        f"{what}, out-of-bounds elements read 0 / are dropped",
    )


def _access_desc_rows(a: Forms, op: Op) -> StructuredAccess:
    """descriptor_gather / descriptor_scatter: rows x_offsets[r] of a 2-D view, columns y_offset + j."""
    d = _desc(a, op)
    tensors = [v for v in op.operands[1:] if isinstance(v.type, TensorType)]
    rows = next(v for v in tensors if len(shape_of(v.type)) == 1)
    col = next(v for v in op.operands[1:] if not isinstance(v.type, TensorType))
    data = op.results[0] if op.name == "tt.descriptor_gather" else next(v for v in tensors if v is not rows)
    shape = shape_of(data.type)
    try:
        x = a.offset(rows)
    except NotStructured as e:
        raise NotStructured(f"descriptor row offsets are not affine ({e.reason})") from None
    if len(d.shape) != 2 or len(shape) != 2:
        raise NotStructured(f"descriptor gather/scatter on a view of rank {len(d.shape)}: {where(op)}")
    x2 = Affine(x.const, (x.coeffs[0], ZERO))
    y = a.scalar(col)
    rows_box = solve(x2, "sge", shape, op) & solve(x2.combine(Affine(d.shape[0], (ZERO, ZERO)), sub), "slt", shape, op)
    box = rows_box & Box((None, neg(y)), (None, sub(d.shape[1], y)))
    offset = add(add(d.offset, mul(x.const, d.strides[0])), mul(y, d.strides[1]))
    strides = _normalise(shape, (mul(x.coeffs[0], d.strides[0]), d.strides[1]))
    other = 0 if op.name == "tt.descriptor_gather" else None
    return StructuredAccess(
        d.base,
        offset,
        strides,
        box.lo,
        box.hi,
        other,
        element_name(op.operands[0].type),
        "tensor descriptor rows at affine offsets",
    )


_ACCESS_RULES = {
    "tt.load": _access_load,
    "tt.store": _access_store,
    "tt.atomic_rmw": _access_atomic,
    "tt.atomic_cas": _access_atomic,
    "tt.descriptor_load": _access_desc_box,
    "tt.descriptor_store": _access_desc_box,
    "tt.descriptor_reduce": _access_desc_box,
    "tt.descriptor_gather": _access_desc_rows,
    "tt.descriptor_scatter": _access_desc_rows,
}


# ---- public API ----------------------------------------------------------------------------------------


class AccessAnalysis(Forms):
    """The analysis with its memo: share one across a kernel so each value is decomposed once, and each
    memory op analysed once (the access pass, the affinity pass and codegen's demand analysis ask)."""

    def __init__(self):
        super().__init__()
        self.accesses: dict[Op, StructuredAccess | GatherAccess] = {}  # (frozen records: shared as they are)

    def forget(self) -> None:
        """Drop the memo: after a pass rewrote the IR."""
        self.memo.clear()
        self.carried.clear()
        self.accesses.clear()

    def analyze(self, op: Op) -> StructuredAccess | GatherAccess:
        """The access pattern of one memory op (see the module docstring)."""
        got = self.accesses.get(op)
        if got is not None:
            return got
        rule = _ACCESS_RULES.get(op.name)
        if rule is None:
            raise CompileError(f"{op.name} at {op.loc} is not a memory op; analyze takes {', '.join(MEMORY_OPS)}")
        try:
            got = rule(self, op)
        except NotStructured as e:
            got = GatherAccess(e.reason)
        self.accesses[op] = got
        return got

    def carried_pointers(self, loop: Op) -> dict[Value, CarriedPointer]:
        """The iter_args of an scf.for that the code generator carries as scalar companions."""
        if loop.name != "scf.for":
            raise CompileError(f"carried_pointers takes an scf.for, not {loop.name} at {loop.loc}")
        out = {}
        for arg in loop.regions[0].blocks[0].args[1:]:
            t = arg.type
            if (
                isinstance(t, TensorType)
                and isinstance(t.element, PtrType)
                or isinstance(t, PtrType)
                and isinstance(t.pointee, TensorType)
            ):
                try:
                    self.pointer(arg)
                except NotStructured:
                    continue
                out[arg] = self.carried[arg]
        return out

    def pointer_access(self, v: Value) -> StructuredAccess | GatherAccess:
        """The addresses of a pointer tensor, no mask: to build the address tensor of a gather or atomic."""
        try:
            p = self.pointer(v)
        except NotStructured as e:
            return GatherAccess(e.reason)
        if not isinstance(p, PtrTensor):
            return GatherAccess(f"{value_name(v)} is a block pointer or a tensor descriptor")
        shape = shape_of(v.type)
        none = (None,) * len(shape)
        return StructuredAccess(
            p.base, p.offset, _normalise(shape, p.strides), none, none, None, element_name(v.type), "pointer tensor"
        )

    def report(self, root: Module | Op) -> str:
        """One line per memory op (name, source line, strided/gather and why), one per carried pointer."""
        lines = []
        for op in root.walk():
            where_ = op.loc if op.loc is not None else "<unknown>"
            if op.name in _ACCESS_RULES:
                lines.append(f"{op.name} {where_}: {describe(self.analyze(op))}")
            elif op.name == "scf.for":
                for arg, cp in self.carried_pointers(op).items():
                    lines.append(
                        f"scf.for {where_}: carries {value_name(arg)} ({cp.kind}) init={_fmt(cp.init)} "
                        f"step={_fmt(cp.step)}"
                    )
        return "\n".join(lines)


_SHARED: contextvars.ContextVar[AccessAnalysis | None] = contextvars.ContextVar("plate_access", default=None)


@contextlib.contextmanager
def shared_analysis(analysis: AccessAnalysis | None = None):
    """Inside, the functions below share one AccessAnalysis (and its memo): for the passes of one
    kernel while they leave its IR as it is. Yields the analysis (``forget()`` it after a rewrite);
    pass the one an earlier pass over the same, unchanged IR yielded to keep its memo."""
    analysis = analysis if analysis is not None else AccessAnalysis()
    token = _SHARED.set(analysis)
    try:
        yield analysis
    finally:
        _SHARED.reset(token)


def _analysis() -> AccessAnalysis:
    return _SHARED.get() or AccessAnalysis()


def analyze(op: Op) -> StructuredAccess | GatherAccess:
    """The access pattern of one memory op (see the module docstring)."""
    return _analysis().analyze(op)


def carried_pointers(loop: Op) -> dict[Value, CarriedPointer]:
    """The iter_args of an scf.for that the code generator carries as scalar companions."""
    return _analysis().carried_pointers(loop)


def pointer_access(v: Value) -> StructuredAccess | GatherAccess:
    """The addresses of a pointer tensor, no mask: to build the address tensor of a gather or atomic."""
    return _analysis().pointer_access(v)


def access_report(module: Module | Op) -> str:
    """Debug dump: one line per memory op (name, source line, strided/gather and why), one per carried pointer."""
    return _analysis().report(module)


def _fmt(xs) -> str:
    return "[" + ", ".join("-" if x is None else str(x) for x in xs) + "]"


def describe(acc: StructuredAccess | GatherAccess) -> str:
    """One line for a StructuredAccess / GatherAccess."""
    if isinstance(acc, GatherAccess):
        return f"gather   {acc.reason}"
    other = value_name(acc.other) if isinstance(acc.other, Value) else acc.other
    return (
        f"strided  {acc.element} base={acc.base} offset={acc.offset} strides={_fmt(acc.strides)} "
        f"lo={_fmt(acc.lo)} hi={_fmt(acc.hi)} other={other} ({acc.reason})"
    )
