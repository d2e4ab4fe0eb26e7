"""Lowering rules for device-memory ops: tt.load / tt.store (pointer tensors, scalar pointers,
block pointers), atomics, block pointers (tt.make_tensor_ptr / tt.advance) and tensor
descriptors (tt.make_tensor_descriptor and descriptor load/store/gather/scatter/reduce).

- A load/store that access analysis proved structured becomes a strided dma.load/dma.store
  (`rules_access`); any other pointer tensor is materialised as an i64 byte-address tile and
  goes through dma.gather / dma.scatter with its mask (all-true when there is none).
- A load's `other` that is a constant becomes the DMA fill value; any other `other` is merged
  with a v.select after the load. Cache modifiers, eviction policies and `isVolatile` are
  ignored: PLATE has no caches between the DMA engines and HBM.
- Block pointers and tensor descriptors are records of scalar registers (base, shape, strides,
  offsets); their loads/stores are strided DMAs whose bounds implement boundary_check/padding.
- Atomics take tiles of addresses, values and a mask; scalar forms use 1-element tiles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..ir.core import IntAttr, TensorType
from ..isa.table import ITEMSIZE
from .context import BasedPtr, dtype_of, is_float
from .dma_operands import HUGE, bind_loaded, fill_imm, s_op, shape_of_result
from .emitter import Imm, Token, View, VReg
from .rules_access import lower_structured
from .rules_arith import enum_value
from .rules_tt import constant_value, int_list

RMW = {
    "and": "and",
    "or": "or",
    "xor": "xor",
    "add": "add",
    "fadd": "fadd",
    "max": "max",
    "min": "min",
    "umax": "umax",
    "umin": "umin",
    "exch": "xchg",
    "xchg": "xchg",
}
RMW_BY_INDEX = {1: "and", 2: "or", 3: "xor", 4: "add", 5: "fadd", 6: "max", 7: "min", 8: "umax", 9: "umin", 10: "exch"}
SEM_BY_INDEX = {1: "relaxed", 2: "acquire", 3: "release", 4: "acq_rel"}


# ---- records -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class BlockPtr:
    """tt.make_tensor_ptr: base pointer, shape/strides/offsets bindings, static block shape."""

    base: object
    shape: tuple
    strides: tuple
    offsets: tuple
    block: tuple
    dtype: str

    def leaves(self):
        return [self.base, *self.shape, *self.strides, *self.offsets]

    def fresh(self, ctx):
        r = len(self.block)
        return BlockPtr(
            VReg("bp.base"),
            tuple(VReg() for _ in range(r)),
            tuple(VReg() for _ in range(r)),
            tuple(VReg("bp.off") for _ in range(r)),
            self.block,
            self.dtype,
        )


@dataclass(frozen=True)
class TensorDesc:
    """tt.make_tensor_descriptor: base pointer, shape and strides bindings, block shape."""

    base: object
    shape: tuple
    strides: tuple
    block: tuple
    dtype: str

    def leaves(self):
        return [self.base, *self.shape, *self.strides]

    def fresh(self, ctx):
        r = len(self.block)
        return TensorDesc(
            VReg("desc.base"), tuple(VReg() for _ in range(r)), tuple(VReg() for _ in range(r)), self.block, self.dtype
        )


# ---- helpers -------------------------------------------------------------------------------------
def mask_view(ctx, mask, shape) -> View:
    return ctx.view(mask, shape) if mask is not None else ctx.fill(1, "i1", shape)


# ---- tt.load / tt.store --------------------------------------------------------------------------
def _lower_tt_load(ctx, op):
    if lower_structured(ctx, op):
        return
    b = ctx.binding(op.operands[0])
    if isinstance(b, BlockPtr):
        load_block(ctx, op, b)
    else:
        load_gather(ctx, op)


def load_gather(ctx, op):
    ptr, res = op.operands[0], op.result
    mask = op.operands[1] if len(op.operands) > 1 else None
    other = op.operands[2] if len(op.operands) > 2 else None
    shape, dtype = shape_of_result(res), dtype_of(res.type)
    m = mask_view(ctx, mask, shape)
    fill = 0 if other is None else constant_value(ctx, other)
    dst = ctx.new(dtype, shape, owner=res if isinstance(res.type, TensorType) else None)
    for addr, rows in addresses(ctx, ctx.binding(ptr), ptr, shape):
        fill_value = fill_imm(dtype, 0 if fill is None else fill)
        ctx.emit("dma.gather", tok := Token(), rows_of(dst, rows), addr, rows_of(m, rows), fill_value)
    if rows is not None:
        ctx.em.wait_token(tok)  # the chunks' address tiles die now, not where the result is first read
    if other is not None and fill is None:
        sel = ctx.new(dtype, shape, owner=res)
        ctx.vec("v.select", sel, m, dst, ctx.view(other, shape))
        dst = sel
    bind_loaded(ctx, res, dst)


def _lower_tt_store(ctx, op):
    if lower_structured(ctx, op):
        return
    b = ctx.binding(op.operands[0])
    if isinstance(b, BlockPtr):
        store_block(ctx, op, b)
    else:
        store_scatter(ctx, op)


def store_scatter(ctx, op):
    ptr, val = op.operands[:2]
    mask = op.operands[2] if len(op.operands) > 2 else None
    shape = shape_of_result(val)
    v, m = ctx.view(val, shape), mask_view(ctx, mask, shape)
    for addr, rows in addresses(ctx, ctx.binding(ptr), ptr, shape):
        ctx.emit("dma.scatter", tok := Token(), rows_of(v, rows), addr, rows_of(m, rows))
    if rows is not None:
        ctx.em.wait_token(tok)  # the chunks' address tiles die now


def rows_of(v: View, rows: slice | None) -> View:
    return v if rows is None else v.sub(0, rows.start, rows.stop - rows.start)


ADDRESS_CHUNK = 4096  # i64 addresses a gather/scatter through a BasedPtr makes at a time (32 KiB)


def addresses(ctx, b, ptr, shape):
    """(address tile, rows of dim 0 it covers or None for all) for a gather/scatter: the pointer's own
    tile, or for a BasedPtr its addresses a chunk of rows at a time, into two tiles used in turn (the
    emitter waits for the DMA that reads one before it is written again): the SRAM of two chunks,
    not of the whole i64 tile."""
    if not isinstance(b, BasedPtr) or not shape:
        yield ctx.view(ptr, shape), None
        return
    per_row = math.prod(shape[1:])
    n = max(1, min(shape[0], ADDRESS_CHUNK // max(per_row, 1)))
    if n == shape[0]:
        yield b.addresses(ctx, ctx.new("i64", shape, what=f"pointer addresses i64{list(shape)}")), None
        return
    tiles = [ctx.new("i64", (n, *shape[1:]), what=f"pointer addresses i64{[n, *shape[1:]]} (chunk)") for _ in range(2)]
    for k, r0 in enumerate(range(0, shape[0], n)):
        rows = slice(r0, min(r0 + n, shape[0]))
        t = tiles[k % 2]
        if rows.stop - rows.start < n:
            t = t.sub(0, 0, rows.stop - rows.start)
        yield b.addresses(ctx, t, rows), rows


# ---- atomics -------------------------------------------------------------------------------------
def _sem(op) -> str:
    a = op.attrs.get("sem")
    if a is None:
        return "acq_rel"
    return SEM_BY_INDEX[a.value] if isinstance(a, IntAttr) else enum_value(a, "sem")


def _lower_tt_atomic_rmw(ctx, op):
    a = op.attrs["atomic_rmw_op"]
    kind = RMW[RMW_BY_INDEX[a.value] if isinstance(a, IntAttr) else enum_value(a, "atom")]
    ptr, val = op.operands[:2]
    mask = op.operands[2] if len(op.operands) > 2 else None
    res = op.result
    dtype = dtype_of(res.type)
    if kind == "add" and is_float(dtype):
        kind = "fadd"
    shape = shape_of_result(res)
    d = ctx.new(dtype, shape, owner=res if isinstance(res.type, TensorType) else None)
    ctx.emit(
        "atom.rmw",
        d,
        ctx.view(ptr, shape),
        ctx.view(val, shape),
        mask_view(ctx, mask, shape),
        suffixes=(kind, _sem(op)),
    )
    bind_loaded(ctx, res, d)


def _lower_tt_atomic_cas(ctx, op):
    ptr, cmp, val = op.operands[:3]
    res = op.result
    shape = shape_of_result(res)
    d = ctx.new(dtype_of(res.type), shape, owner=res if isinstance(res.type, TensorType) else None)
    ctx.emit(
        "atom.cas",
        d,
        ctx.view(ptr, shape),
        ctx.view(cmp, shape),
        ctx.view(val, shape),
        ctx.fill(1, "i1", shape),
        suffixes=(_sem(op),),
    )
    bind_loaded(ctx, res, d)


# ---- block pointers ------------------------------------------------------------------------------
def _lower_tt_make_tensor_ptr(ctx, op):
    t = op.result.type.pointee
    r = len(t.shape)
    ops = [ctx.binding(v) for v in op.operands]
    base, shape, strides, offsets = ops[0], ops[1 : 1 + r], ops[1 + r : 1 + 2 * r], ops[1 + 2 * r : 1 + 3 * r]
    ctx.bind(op.result, BlockPtr(base, tuple(shape), tuple(strides), tuple(offsets), tuple(t.shape), dtype_of(t)))


def _lower_tt_advance(ctx, op):
    bp = ctx.binding(op.operands[0])
    offsets = tuple(s_op(ctx, "s.add", ctx.as_reg(o), ctx.reg(d)) for o, d in zip(bp.offsets, op.operands[1:]))
    ctx.bind(op.result, BlockPtr(bp.base, bp.shape, bp.strides, offsets, bp.block, bp.dtype))


def box(ctx, base, shape, strides, offsets, checked, dtype):
    """(start address, stride regs, lo regs, hi regs) of a strided DMA over a block at `offsets`:
    element i is valid when 0 <= offsets + i < shape on the checked dims."""
    isz = ITEMSIZE[dtype]
    stride_r = tuple(ctx.as_reg(s) for s in strides)
    off_r = [ctx.as_reg(o) for o in offsets]
    elems = None
    for o, s in zip(off_r, stride_r):
        t = s_op(ctx, "s.mul", o, s)
        elems = t if elems is None else s_op(ctx, "s.add", elems, t)
    start = ctx.as_reg(base)
    if elems is not None:
        start = s_op(ctx, "s.add", start, s_op(ctx, "s.mul", elems, ctx.li(isz)))
    lo, hi = [], []
    for k, o in enumerate(off_r):
        if k in checked:
            lo.append(s_op(ctx, "s.sub", ctx.li(0), o))
            hi.append(s_op(ctx, "s.sub", ctx.as_reg(shape[k]), o))
        else:
            lo.append(ctx.li(-HUGE))
            hi.append(ctx.li(HUGE))
    return start, stride_r, tuple(lo), tuple(hi)


def _checked(op):
    """The dims a block-pointer access bounds-checks (boundaryCheck)."""
    a = op.attrs.get("boundaryCheck")
    return set(int_list(a)) if a is not None else set()


def load_block(ctx, op, bp: BlockPtr):
    res = op.result
    padding = int(getattr(op.attrs.get("padding"), "value", 1))
    fill = math.nan if padding == 2 else 0
    start, strides, lo, hi = box(ctx, bp.base, bp.shape, bp.strides, bp.offsets, _checked(op), bp.dtype)
    dst = ctx.new(bp.dtype, bp.block, owner=res)
    ctx.emit("dma.load", Token(), dst, start, strides, lo, hi, fill_imm(bp.dtype, fill))
    ctx.bind(res, dst if dst.shape == tuple(res.type.shape) else ctx.reshaped(dst, res.type.shape))


def store_block(ctx, op, bp: BlockPtr):
    start, strides, lo, hi = box(ctx, bp.base, bp.shape, bp.strides, bp.offsets, _checked(op), bp.dtype)
    val = ctx.view(op.operands[1])
    ctx.emit("dma.store", Token(), ctx.reshaped(val, bp.block), start, strides, lo, hi)


# ---- tensor descriptors --------------------------------------------------------------------------
def _lower_tt_make_tensor_descriptor(ctx, op):
    block = op.result.type.block
    r = len(block.shape)
    ops = [ctx.binding(v) for v in op.operands]
    ctx.bind(
        op.result,
        TensorDesc(ops[0], tuple(ops[1 : 1 + r]), tuple(ops[1 + r : 1 + 2 * r]), tuple(block.shape), dtype_of(block)),
    )


def _desc_box(ctx, desc: TensorDesc, offsets):
    return box(
        ctx,
        desc.base,
        desc.shape,
        desc.strides,
        [ctx.binding(v) for v in offsets],
        set(range(len(desc.block))),
        desc.dtype,
    )


def _lower_tt_descriptor_load(ctx, op):
    desc = ctx.binding(op.operands[0])
    res = op.result
    start, strides, lo, hi = _desc_box(ctx, desc, op.operands[1:])
    dst = ctx.new(desc.dtype, desc.block, owner=res)
    ctx.emit("dma.load", Token(), dst, start, strides, lo, hi, fill_imm(desc.dtype, 0))
    ctx.bind(res, dst if dst.shape == tuple(res.type.shape) else ctx.reshaped(dst, res.type.shape))


def _lower_tt_descriptor_store(ctx, op):
    desc = ctx.binding(op.operands[0])  # operands (ODS order): desc, src, indices...
    start, strides, lo, hi = _desc_box(ctx, desc, op.operands[2:])
    ctx.emit("dma.store", Token(), ctx.reshaped(ctx.view(op.operands[1]), desc.block), start, strides, lo, hi)


def grid_addresses(ctx, desc: TensorDesc, index: list[View]):
    """Byte addresses and in-bounds mask of the grid index[0] x index[1] x ... (1-D i64 views)."""
    shape = tuple(v.shape[0] for v in index)
    isz = ITEMSIZE[desc.dtype]
    addr = ctx.new("i64", shape, what="descriptor addresses")
    mask = ctx.new("i1", shape, what="descriptor bounds")
    ctx.vec("v.splat", addr, ctx.as_reg(desc.base))
    ctx.vec("v.fill", mask, Imm(1))
    for k, idx in enumerate(index):
        n = idx.shape[0]
        dims = [1] * len(shape)
        dims[k] = n

        def grid(v, dims=tuple(dims)):
            return v.reshape(dims).broadcast(shape)

        step = s_op(ctx, "s.mul", ctx.as_reg(desc.strides[k]), ctx.li(isz))
        term = ctx.new("i64", (n,), what="descriptor offsets")
        ctx.vec("v.mul", term, idx, ctx.splat(step, "i64", (n,)))
        ctx.vec("v.add", addr, addr, grid(term))
        ok = ctx.new("i1", (n,), what="descriptor bounds")
        below = ctx.new("i1", (n,), what="descriptor bounds")
        ctx.vec("v.cmpi", ok, idx, ctx.fill(0, "i64", (n,)), suffixes=("sge",))
        ctx.vec("v.cmpi", below, idx, ctx.splat(ctx.as_reg(desc.shape[k]), "i64", (n,)), suffixes=("slt",))
        ctx.vec("v.and", ok, ok, below)
        ctx.vec("v.and", mask, mask, grid(ok))
    return addr, mask


def _index_views(ctx, desc: TensorDesc, rows, col, shape):
    """i64 index vectors: the row offsets tensor, and col + 0..n-1 for the rest."""
    r = ctx.new("i64", (shape[0],), what="descriptor rows")
    ctx.vec("v.sext", r, ctx.view(rows))
    c = ctx.new("i64", (shape[1],), what="descriptor columns")
    ctx.vec("v.iota", c, Imm(0))
    ctx.vec("v.add", c, c, ctx.splat(ctx.reg(col), "i64", (shape[1],)))
    return [r, c]


def _lower_tt_descriptor_gather(ctx, op):
    desc = ctx.binding(op.operands[0])
    res = op.result
    shape = tuple(res.type.shape)
    addr, mask = grid_addresses(ctx, desc, _index_views(ctx, desc, op.operands[1], op.operands[2], shape))
    dst = ctx.new(desc.dtype, shape, owner=res)
    ctx.emit("dma.gather", Token(), dst, addr, mask, fill_imm(desc.dtype, 0))
    ctx.bind(res, dst)


def _lower_tt_descriptor_scatter(ctx, op):
    desc = ctx.binding(op.operands[0])
    val = ctx.view(op.operands[3])
    addr, mask = grid_addresses(ctx, desc, _index_views(ctx, desc, op.operands[1], op.operands[2], val.shape))
    ctx.emit("dma.scatter", Token(), val, addr, mask)


def _lower_tt_descriptor_reduce(ctx, op):
    desc = ctx.binding(op.operands[0])
    kind = enum_value(op.attrs["kind"], "atom")
    val = ctx.view(op.operands[1])  # operands (ODS order): desc, src, indices...
    shape = val.shape
    index = []
    for k, o in enumerate(op.operands[2:]):
        c = ctx.new("i64", (shape[k],), what="descriptor index")
        ctx.vec("v.iota", c, Imm(0))
        ctx.vec("v.add", c, c, ctx.splat(ctx.reg(o), "i64", (shape[k],)))
        index.append(c)
    addr, mask = grid_addresses(ctx, desc, index)
    kind = RMW.get(kind)
    if kind is None or kind == "xchg":
        raise ctx.error(f"descriptor reduce kind {op.attrs['kind']} is not supported (add, min, max, and, or, xor)")
    if kind == "add" and is_float(desc.dtype):
        kind = "fadd"
    old = ctx.new(desc.dtype, shape, what="descriptor reduce old values")
    ctx.emit("atom.rmw", old, addr, val, mask, suffixes=(kind, "relaxed"))


RULES = {
    "tt.load": _lower_tt_load,
    "tt.store": _lower_tt_store,
    "tt.atomic_rmw": _lower_tt_atomic_rmw,
    "tt.atomic_cas": _lower_tt_atomic_cas,
    "tt.make_tensor_ptr": _lower_tt_make_tensor_ptr,
    "tt.advance": _lower_tt_advance,
    "tt.make_tensor_descriptor": _lower_tt_make_tensor_descriptor,
    "tt.descriptor_load": _lower_tt_descriptor_load,
    "tt.descriptor_store": _lower_tt_descriptor_store,
    "tt.descriptor_gather": _lower_tt_descriptor_gather,
    "tt.descriptor_scatter": _lower_tt_descriptor_scatter,
    "tt.descriptor_reduce": _lower_tt_descriptor_reduce,
}
