"""Lowering rules for tt.reduce and tt.scan (tt.map_elementwise: rules_map).

A combine region that is one commutative op on the two block arguments (addf, maxnumf, xori, ...)
becomes v.reduce / v.scan with that combine, split into pieces when the tile exceeds the vector
unit. Any other region (argmax, several operands, a custom combine_fn) runs its own ops on tile
views: a reduction pairs adjacent elements (views with stride 2) for log2(n) steps, a scan is
Hillis-Steele (element i combines with i - d for d = 1, 2, 4, ...); a reverse scan runs forward on
views with a negative stride. Adjacent pairing keeps the operands' order, so any associative
combine (not only commutative ones) is right."""

from __future__ import annotations

from ..ir.core import TensorType
from .context import dtype_of
from .emitter import Imm, View, VReg
from .reduction import reduce_into, scan_into
from .rules_map import run_cfg
from .rules_tt import int_attr

COMBINE = {
    "arith.addf": "add",
    "arith.addi": "add",
    "arith.mulf": "mul",
    "arith.muli": "mul",
    "arith.maxnumf": "maxnum",
    "arith.minnumf": "minnum",
    "arith.maximumf": "max",
    "arith.minimumf": "min",
    "arith.maxsi": "max",
    "arith.minsi": "min",
    "arith.maxui": "umax",
    "arith.minui": "umin",
    "arith.andi": "and",
    "arith.ori": "or",
    "arith.xori": "xor",
}


def single_combine(op) -> str | None:
    """The v.reduce/v.scan combine when the region is one known op on its two arguments."""
    if len(op.operands) != 1:
        return None
    block = op.regions[0].blocks[0]
    if len(block.ops) != 2 or len(block.args) != 2:
        return None
    body, ret = block.ops
    if body.name not in COMBINE or len(ret.operands) != 1 or ret.operands[0] is not body.results[0]:
        return None
    if set(map(id, body.operands)) != set(map(id, block.args)):
        return None
    return COMBINE[body.name]


# ---- reductions ------------------------------------------------------------------------------------
def run_combine(ctx, op, args: list, shape, terminator: str) -> list[View]:
    """The op's combine region applied elementwise to tile views of one shape (its branches and
    loops run per element, see rules_map); results as views."""
    out = run_cfg(ctx, op.regions[0].blocks, args, shape, None, terminator)
    return [ctx.as_view(b, dtype_of(v.type), shape) for b, v in zip(out, op.operands)]  # combine: operand types


def reduce_tree(ctx, op, srcs: list[View], axis: int) -> list[View]:
    """Views with `axis` of size 1 holding the reduction of each operand."""
    cur, n = srcs, srcs[0].shape[axis]
    while n > 1:
        h = n // 2
        lhs = [c.sub(axis, 0, h, 2) for c in cur]
        rhs = [c.sub(axis, 1, h, 2) for c in cur]
        res = run_combine(ctx, op, lhs + rhs, lhs[0].shape, "tt.reduce.return")
        if n % 2:  # the odd last element rides along to the next step
            nxt = []
            for r, c in zip(res, cur):
                shape = list(c.shape)
                shape[axis] = h + 1
                buf = ctx.new(r.dtype, shape, what="reduction step")
                ctx.copy(buf.sub(axis, 0, h), r)
                ctx.copy(buf.sub(axis, h, 1), c.sub(axis, n - 1, 1))
                nxt.append(buf)
            res = nxt
        cur, n = res, h + n % 2
    return cur


def _bind_reduced(ctx, result, kept: View, axis: int) -> None:
    """Bind a reduction result from a view whose reduced axis has size 1."""
    if kept.rank == 1:
        r = VReg()
        ctx.emit("v.extract", r, kept, Imm(0))
        ctx.bind(result, r)
    else:
        ctx.bind(result, kept.index(axis, 0))


def _lower_tt_reduce(ctx, op):
    axis = int_attr(op, "axis")
    srcs = [ctx.view(v) for v in op.operands]
    combine = single_combine(op)
    if combine is None:
        for r, kept in zip(op.results, reduce_tree(ctx, op, srcs, axis)):
            _bind_reduced(ctx, r, kept, axis)
        return
    src, res = srcs[0], op.results[0]
    scalar = not isinstance(res.type, TensorType)
    if scalar:  # keep the reduced axis so no tile is 0-d
        src, axis = src.expand(0), 1
    shape = src.shape[:axis] + src.shape[axis + 1 :]
    dst = ctx.new(dtype_of(res.type), shape, owner=None if scalar else res)
    reduce_into(ctx, combine, dst, src, axis)
    if scalar:
        r = VReg()
        ctx.emit("v.extract", r, dst, Imm(0))
        ctx.bind(res, r)
    else:
        ctx.bind(res, dst)


# ---- scans -----------------------------------------------------------------------------------------
def scan_tree(ctx, op, srcs: list[View], axis: int, reverse: bool) -> list[View]:
    if reverse:
        srcs = [s.flip(axis) for s in srcs]
    cur, n, d = srcs, srcs[0].shape[axis], 1
    while d < n:
        outs = [ctx.new(c.dtype, c.shape, what="scan step") for c in cur]
        for o, c in zip(outs, cur):
            ctx.copy(o.sub(axis, 0, d), c.sub(axis, 0, d))
        lhs = [c.sub(axis, 0, n - d) for c in cur]
        rhs = [c.sub(axis, d, n - d) for c in cur]
        res = run_combine(ctx, op, lhs + rhs, rhs[0].shape, "tt.scan.return")
        for o, r in zip(outs, res):
            ctx.copy(o.sub(axis, d, n - d), r)
        cur, d = outs, d * 2
    return [c.flip(axis) for c in cur] if reverse else cur


def _lower_tt_scan(ctx, op):
    axis = int_attr(op, "axis")
    reverse = bool(getattr(op.attrs.get("reverse"), "value", False))
    srcs = [ctx.view(v) for v in op.operands]
    combine = single_combine(op)
    if combine is None:
        for r, v in zip(op.results, scan_tree(ctx, op, srcs, axis, reverse)):
            ctx.bind(r, v)
        return
    res = op.results[0]
    dst = ctx.new(dtype_of(res.type), srcs[0].shape, owner=res)
    scan_into(ctx, combine, dst, srcs[0], axis, reverse)
    ctx.bind(res, dst)


RULES = {"tt.reduce": _lower_tt_reduce, "tt.scan": _lower_tt_scan}
