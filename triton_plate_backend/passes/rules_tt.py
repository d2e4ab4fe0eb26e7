"""Lowering rules for tt shape ops (splat, make_range, expand_dims, broadcast, reshape, trans,
join, split, cat, gather, histogram), pointer arithmetic (addptr), program ids and debug ops.
Most shape ops are free views of their operand's tile; join and cat copy into one buffer."""

from __future__ import annotations

import math

from ..ir.core import ArrayAttr, DenseAttr, EnumAttr, IntAttr, PtrType, TensorType, element_type
from ..isa.table import ITEMSIZE, PRINT_HEX, PRINT_LABEL_SHIFT, PRINT_UNSIGNED
from .context import BasedPtr, Const, dtype_of, is_float
from .emitter import Imm, Str, View, VReg

AXES = "xyz"


def int_list(attr) -> list[int]:
    if isinstance(attr, (ArrayAttr, DenseAttr)):
        return [int(getattr(x, "value", x)) for x in attr.values]
    return [int(getattr(attr, "value", attr))]


def int_attr(op, name, default=None) -> int:
    a = op.attrs.get(name)
    return default if a is None else int(getattr(a, "value", a))


def constant_value(ctx, value):
    """The Python value of a splat constant operand (arith.constant), or None."""
    op = ctx.defining_op(value)
    if op is None or op.name != "arith.constant":
        return None
    attr = op.attrs.get("value")
    if isinstance(attr, DenseAttr):
        vals = set(attr.values)
        return next(iter(vals)) if len(vals) == 1 else None
    return getattr(attr, "value", None)


def pointee_size(t) -> int:
    p = element_type(t)
    if not isinstance(p, PtrType):
        raise TypeError(f"{t} is not a pointer type")
    return ITEMSIZE[dtype_of(p.pointee)]


# ---- views and copies ------------------------------------------------------------------------------
def _lower_tt_splat(ctx, op):
    t = op.result.type
    b = ctx.binding(op.operands[0])
    if isinstance(b, Const):
        ctx.bind(op.result, ctx.fill(b.value, dtype_of(t), t.shape))
    else:
        ctx.bind(op.result, ctx.splat(ctx.as_reg(b), dtype_of(t), t.shape))


def _lower_tt_make_range(ctx, op):
    n = op.result.type.shape[0]
    dst = ctx.new(dtype_of(op.result.type), (n,), owner=op.result)
    ctx.vec("v.iota", dst, Imm(int_attr(op, "start", 0)))
    ctx.bind(op.result, dst)


def _lower_tt_expand_dims(ctx, op):
    ctx.bind(op.result, ctx.view(op.operands[0]).expand(int_attr(op, "axis")))


def _lower_tt_broadcast(ctx, op):
    ctx.bind(op.result, ctx.view(op.operands[0]).broadcast(tuple(op.result.type.shape)))


def _lower_tt_reshape(ctx, op):
    ctx.bind(op.result, ctx.reshaped(ctx.view(op.operands[0]), op.result.type.shape))


def _lower_tt_trans(ctx, op):
    ctx.bind(op.result, ctx.view(op.operands[0]).permute(int_list(op.attrs["order"])))


def _lower_tt_join(ctx, op):
    t = op.result.type
    dst = ctx.new(dtype_of(t), t.shape, owner=op.result)
    last = len(t.shape) - 1
    for i, v in enumerate(op.operands):
        ctx.copy(dst.index(last, i), ctx.view(v))
    ctx.bind(op.result, dst)


def _lower_tt_split(ctx, op):
    src = ctx.view(op.operands[0])
    for i, r in enumerate(op.results):
        ctx.bind(r, src.index(src.rank - 1, i))


def _lower_tt_cat(ctx, op):
    t = op.result.type
    dst = ctx.new(dtype_of(t), t.shape, owner=op.result)
    start = 0
    for v in op.operands:
        src = ctx.view(v)
        ctx.copy(dst.sub(0, start, src.shape[0]), src)
        start += src.shape[0]
    ctx.bind(op.result, dst)


def _lower_tt_unsplat(ctx, op):
    r = VReg()
    ctx.emit("v.extract", r, ctx.view(op.operands[0]), Imm(0))
    ctx.bind(op.result, r)


def _lower_tt_gather(ctx, op):
    axis = int_attr(op, "axis")
    src, idx = ctx.view(op.operands[0]), ctx.view(op.operands[1])
    dst = ctx.new(dtype_of(op.result.type), idx.shape, owner=op.result)
    gather_pieces(ctx, dst, src, idx, axis)
    ctx.bind(op.result, dst)


def gather_pieces(ctx, dst, src, idx, axis: int) -> None:
    """dst = take_along_axis(src, idx, axis) in v.gathers that each fit the vector unit. Source, indices and result
    agree on every dim but the axis, whose pieces are independent: split there first, into pieces of 1. A line of
    indices longer than the unit goes in pieces along the axis, each against the whole source line; a source line
    longer than the unit is gathered from piece by piece, each lane keeping the piece its index falls in."""
    limit = ctx.em.max_elements
    if max(dst.numel, src.numel, idx.numel) <= limit:
        ctx.emit("v.gather", dst, src, idx, Imm(axis))
        return
    for k in range(dst.rank):
        if k != axis and dst.shape[k] > 1:
            for i in range(dst.shape[k]):
                gather_pieces(ctx, dst.sub(k, i, 1), src.sub(k, i, 1), idx.sub(k, i, 1), axis)
            return
    n = dst.shape[axis]
    if dst.numel > limit:
        for s in range(0, n, limit):
            m = min(limit, n - s)
            gather_pieces(ctx, dst.sub(axis, s, m), src, idx.sub(axis, s, m), axis)
        return
    wide = idx  # the indices in i64, where every piece's bounds fit
    if idx.dtype != "i64":
        wide = ctx.new("i64", idx.shape, what="gather indices in i64")
        ctx.vec("v.sext", wide, idx)
    local = ctx.new("i64", idx.shape, what="gather index within a source piece")
    inside = ctx.new("i1", idx.shape, what="gather index in the source piece")
    below = ctx.new("i1", idx.shape, what="gather index below the piece's end")
    part = ctx.new(dst.dtype, dst.shape, what="gather from a source piece")
    length = src.shape[axis]
    for s in range(0, length, limit):
        m = min(limit, length - s)
        ctx.vec("v.cmpi", inside, wide, ctx.fill(s, "i64", idx.shape), suffixes=("sge",))
        ctx.vec("v.cmpi", below, wide, ctx.fill(s + m, "i64", idx.shape), suffixes=("slt",))
        ctx.vec("v.and", inside, inside, below)
        ctx.vec("v.sub", local, wide, ctx.fill(s, "i64", idx.shape))
        ctx.vec("v.select", local, inside, local, ctx.fill(0, "i64", idx.shape))  # in the piece, whatever it keeps
        ctx.emit("v.gather", dst if s == 0 else part, src.sub(axis, s, m), local, Imm(axis))
        if s:
            ctx.vec("v.select", dst, inside, part, dst)


def _lower_tt_histogram(ctx, op):
    src = ctx.view(op.operands[0])
    mask = ctx.view(op.operands[1]) if len(op.operands) > 1 else ctx.fill(1, "i1", src.shape)
    dst = ctx.new(dtype_of(op.result.type), op.result.type.shape, owner=op.result)
    if dst.numel > ctx.em.max_elements:
        histogram_bins_in_pieces(ctx, dst, src, mask)
    elif src.numel > ctx.em.max_elements:  # count piece by piece, then add the partial histograms
        part = ctx.new(dst.dtype, dst.shape, what="partial histogram")
        ctx.vec("v.fill", dst, Imm(0))
        step = ctx.em.max_elements
        flat, fm = ctx.reshaped(src, (src.numel,)), ctx.reshaped(mask, (src.numel,))
        for s in range(0, src.numel, step):
            n = min(step, src.numel - s)
            ctx.emit("v.hist", part, flat.sub(0, s, n), fm.sub(0, s, n))
            ctx.vec("v.add", dst, dst, part)
    else:
        ctx.emit("v.hist", dst, src, mask)
    ctx.bind(op.result, dst)


def histogram_bins_in_pieces(ctx, dst, src, mask) -> None:
    """A histogram of more bins than the vector unit covers: each piece of bins [b, b + n) counts the values minus b
    (in i64: no value wraps into the piece), a piece of values at a time (v.hist ignores values outside its bins)."""
    step = ctx.em.max_elements
    flat, fm = ctx.reshaped(src, (src.numel,)), ctx.reshaped(mask, (src.numel,))
    m_max = min(step, src.numel)
    shifted = ctx.new("i64", (m_max,), what="histogram values minus the first bin of a piece")
    part = ctx.new(dst.dtype, (step,), what="partial histogram")
    for b in range(0, dst.numel, step):
        out = dst.sub(0, b, min(step, dst.numel - b))
        for s in range(0, src.numel, step):
            m = min(step, src.numel - s)
            values, sh = flat.sub(0, s, m), shifted.sub(0, 0, m)
            if values.dtype != "i64":
                ctx.vec("v.sext", sh, values)
                values = sh
            ctx.vec("v.sub", sh, values, ctx.fill(b, "i64", (m,)))
            counts = out if s == 0 else part.sub(0, 0, out.numel)
            ctx.emit("v.hist", counts, sh, fm.sub(0, s, m))
            if s:
                ctx.vec("v.add", out, out, counts)


# ---- pointers -------------------------------------------------------------------------------------


def byte_offsets(ctx, o, size: int, into):
    """Element offsets o as i64 byte offsets (times the pointee size), written into `into`; o itself when it
    already is one."""
    if o.dtype != "i64":
        ctx.vec("v.sext", into, o)
        o = into
    if size != 1:
        ctx.vec("v.mul", into, o, ctx.fill(size, "i64", into.shape))
        o = into
    return o


# an i64 address tile at least this large is kept as a scalar base and i32 offsets (context.BasedPtr)
# when the kernel does not fit SRAM otherwise (`ctx.based_pointers`, codegen.generate)
BASED_POINTER_BYTES = 64 * 1024


def _uniform_reg(ctx, off):
    """The scalar every element of the offset `off` holds, as a register; None when they differ."""
    b = ctx.binding(off)
    if not isinstance(b, View):
        return ctx.as_reg(b)
    if any(b.strides):
        return None
    return ctx.as_reg(b._with(shape=(1,), strides=(1,)))


def _based(ctx, op, size: int) -> bool:
    """tt.addptr into a BasedPtr: a uniform offset added to one moves its base; splat(p) + i32 offsets
    with a large result starts one. False: lowered as an i64 address tile."""
    ptr, off = op.operands
    pb = ctx.env.get(ptr)
    if isinstance(pb, BasedPtr):
        step = _uniform_reg(ctx, off)  # an i32 register holds its value sign-extended: usable as i64
        if step is None:
            return False
        if size != 1:
            t = VReg()
            ctx.emit("s.mul", t, step, ctx.li(size), suffixes=("i64",))
            step = t
        base = VReg("ptr.base")
        ctx.emit("s.add", base, pb.base, step, suffixes=("i64",))
        pb.offsets.buffer.aliases.add(op.result)
        ctx.bind(op.result, BasedPtr(base, pb.offsets, size))
        return True
    shape = tuple(op.result.type.shape)
    splat = ctx.defining_op(ptr)
    ob = ctx.env.get(off)
    if (
        splat is None
        or splat.name != "tt.splat"
        or not isinstance(ob, View)
        or ob.dtype != "i32"
        or not any(ob.strides)
        or 8 * math.prod(shape) < BASED_POINTER_BYTES
    ):
        return False
    ctx.based_candidates = True
    if not ctx.based_pointers:
        return False
    offsets = ob if ob.shape == shape else ob.broadcast(shape)
    offsets.buffer.aliases.add(op.result)  # the offsets stay as long as the pointer does
    ctx.bind(op.result, BasedPtr(ctx.reg(splat.operands[0]), offsets, size))
    return True


def _lower_tt_addptr(ctx, op):
    ptr, off = op.operands
    size = pointee_size(ptr.type)
    res = op.result
    if isinstance(res.type, TensorType) and _based(ctx, op, size):
        return
    if not ctx.is_tensor(ptr) and not ctx.is_tensor(off):
        ob = ctx.binding(off)
        if isinstance(ob, Const):
            o = ctx.li(ob.value * size)
        else:
            o = ctx.reg(off)
            if size != 1:
                t = VReg()
                ctx.emit("s.mul", t, o, ctx.li(size), suffixes=("i64",))
                o = t
        d = VReg("ptr")
        ctx.emit("s.add", d, ctx.reg(ptr), o, suffixes=("i64",))
        ctx.bind(res, d)
        return
    shape = tuple(res.type.shape)
    p, o = ctx.view(ptr, shape), ctx.view(off, shape)
    c = constant_value(ctx, off)
    if c is not None:  # a constant offset: one splat of its byte count
        dst = ctx.out(res, shape, reuse=[ptr])
        ctx.vec("v.add", dst, p, ctx.fill(int(c) * size, "i64", shape))
        ctx.bind(res, dst)
        return
    if (o.dtype != "i64" or size != 1) and shape and not any(o.strides):
        # one offset for every element (`ptrs += BLOCK_K * stride`): its byte count once, broadcast,
        # instead of a tile of i64 as large as the pointers
        one = byte_offsets(ctx, o._with(shape=(1,), strides=(1,)), size, ctx.new("i64", (1,), what="pointer offset"))
        o = one.reshape((1,) * len(shape)).broadcast(shape)
    elif o.dtype != "i64" or size != 1:
        o = byte_offsets(ctx, o, size, ctx.new("i64", shape, what="pointer offset (bytes)"))
    dst = ctx.out(res, shape, reuse=[ptr])
    ctx.vec("v.add", dst, p, o)
    ctx.bind(res, dst)


# ---- program ids ---------------------------------------------------------------------------------
def axis_of(op) -> str:
    a = op.attrs.get("axis")
    if isinstance(a, IntAttr):
        return AXES[a.value]
    if isinstance(a, EnumAttr):
        return a.value
    return str(getattr(a, "value", "x"))


def _lower_tt_get_program_id(ctx, op):
    d = VReg("pid")
    ctx.emit("s.pid", d, suffixes=(axis_of(op),))
    ctx.bind(op.result, d)


def _lower_tt_get_num_programs(ctx, op):
    d = VReg("nprog")
    ctx.emit("s.nprog", d, suffixes=(axis_of(op),))
    ctx.bind(op.result, d)


# ---- debug ---------------------------------------------------------------------------------------
def _lower_tt_print(ctx, op):
    # Triton's prefix ends in ": "; dbg.print adds its own separator
    prefix = getattr(op.attrs.get("prefix"), "value", "").strip()
    prefix = prefix[:-1].rstrip() if prefix.endswith(":") else prefix
    hexa = PRINT_HEX if getattr(op.attrs.get("hex"), "value", False) else 0
    signed = [getattr(x, "value", x) for x in getattr(op.attrs.get("isSigned"), "values", ())]
    if not op.operands:
        ctx.emit("dbg.printr", Str(prefix), ctx.li(0))
    for i, v in enumerate(op.operands):
        fmt = hexa | (PRINT_UNSIGNED if i < len(signed) and not signed[i] else 0)
        if len(op.operands) > 1:
            fmt |= (i + 1) << PRINT_LABEL_SHIFT
        if ctx.is_tensor(v):
            ctx.emit("dbg.print", Str(prefix), ctx.view(v), Imm(fmt))
        elif fmt != hexa or is_float(dtype_of(v.type)):  # dbg.printr prints signed integers, no label
            ctx.emit("dbg.print", Str(prefix), ctx.view(v, (1,)), Imm(fmt))
        else:
            ctx.emit("dbg.printr", Str(prefix), ctx.reg(v))


def _lower_tt_assert(ctx, op):
    msg = getattr(op.attrs.get("message"), "value", "assertion failed")
    cond = op.operands[0]
    ctx.emit("dbg.assert", ctx.view(cond) if ctx.is_tensor(cond) else ctx.view(cond, (1,)), Str(msg))


def _lower_barrier(ctx, op):
    ctx.emit("barrier")


def _lower_drop(ctx, op):
    """llvm.intr.assume: a hint; nothing to run."""


RULES = {
    "tt.splat": _lower_tt_splat,
    "tt.make_range": _lower_tt_make_range,
    "tt.expand_dims": _lower_tt_expand_dims,
    "tt.broadcast": _lower_tt_broadcast,
    "tt.reshape": _lower_tt_reshape,
    "tt.trans": _lower_tt_trans,
    "tt.join": _lower_tt_join,
    "tt.split": _lower_tt_split,
    "tt.cat": _lower_tt_cat,
    "tt.unsplat": _lower_tt_unsplat,
    "tt.gather": _lower_tt_gather,
    "tt.histogram": _lower_tt_histogram,
    "tt.addptr": _lower_tt_addptr,
    "tt.get_program_id": _lower_tt_get_program_id,
    "tt.get_num_programs": _lower_tt_get_num_programs,
    "tt.print": _lower_tt_print,
    "tt.assert": _lower_tt_assert,
    "ttg.barrier": _lower_barrier,
    "gpu.barrier": _lower_barrier,
    "llvm.intr.assume": _lower_drop,
}
