"""Structured loads and stores: access analysis (passes/access.py) proved the pointer tensor is
base + affine offsets with a box mask, so the op becomes one strided dma.load / dma.store whose
base, strides and bounds are scalar registers materialised from the analysis' expressions
(passes/dma_operands.py); loop-carried pointers travel as companion registers."""

from __future__ import annotations

from ..ir.core import TensorType
from . import store_pieces
from .dma_operands import (
    bind_loaded,
    descriptor,
    element_dtype,
    fill_imm,
    inverse,
    materialize,
    memory_order,
    reorder,
    shape_of_result,
)
from .emitter import Token, VReg
from .prefetch import consume


def lower_structured(ctx, op) -> bool:
    """Emit a strided DMA for op when codegen's demand analysis chose one; else False."""
    acc = ctx.demand.strided.get(op) if ctx.demand is not None else None
    if acc is None:
        return False
    if op in ctx.prefetches:  # software-pipelined: the DMA was issued an iteration ago
        consume(ctx, ctx.prefetches[op])
        return True
    if op.name == "tt.load":
        res = op.result
        shape = shape_of_result(res)
        order = memory_order(acc, shape) if isinstance(res.type, TensorType) else None
        if order is not None:  # a transposed load: rows of memory into a tile of memory's order
            acc, shape = reorder(acc, order), tuple(shape[k] for k in order)
        start, strides, lo, hi = descriptor(ctx, acc)
        dst = ctx.new(element_dtype(acc), shape, owner=res)
        fill = 0 if acc.other is None else acc.other
        ctx.emit("dma.load", Token(), dst, start, strides, lo, hi, fill_imm(dst.dtype, fill))
        bind_loaded(ctx, res, dst if order is None else dst.permute(inverse(order)))
    else:
        start, strides, lo, hi = descriptor(ctx, acc)
        val = op.operands[1]
        tile = ctx.view(val, shape_of_result(val))
        if not store_pieces.store(ctx, tile, start, strides, lo, hi):  # whole, unless just written in pieces
            ctx.emit("dma.store", Token(), tile, start, strides, lo, hi)
    return True


def init_companions(ctx, loop) -> list:
    """Before an scf.for: companion registers of its carried pointers, set to their init values."""
    homes = []
    for arg, cp in ctx.demand.companions.get(loop, {}).items() if ctx.demand is not None else ():
        memo: dict = {}
        regs = [VReg("carried") for _ in cp.init]
        for r, e in zip(regs, cp.init):
            ctx.emit("s.mov", r, materialize(ctx, e, memo))
        ctx.companions[arg] = regs
        homes.append((regs, cp))
    return homes


def step_companions(ctx, homes) -> None:
    """At the scf.yield: advance every companion by its step."""
    for regs, cp in homes:
        memo: dict = {}
        steps = [materialize(ctx, e, memo) for e in cp.step]
        for r, s in zip(regs, steps):
            ctx.emit("s.add", r, r, s, suffixes=("i64",))
