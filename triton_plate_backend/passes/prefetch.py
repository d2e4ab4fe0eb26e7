"""prefetch: software pipelining of the strided loads of an scf.for (num_stages >= 2).

A load in the loop body whose addresses and bounds depend only on the loop counter, values from
before the loop and the loop's own carried-pointer companions is issued one iteration ahead into
a staging tile:

    guard (trip count > 0)
    dma.load  staging <- tile of iteration lb                      (prologue)
  body:
    dma.wait  staging;  v.copy work <- staging                     (the load's place in the body)
    dma.load  staging <- tile of iteration i + step, empty past ub (in flight across the back edge)
    ... the body computes on `work` while the DMA engine fetches the next tile ...
    bnz body
    dma.wait  staging                                              (the last, empty, prefetch)

Loops are pipelined when tl.range(num_stages=...) asks for it, or when the kernel's num_stages is
>= 2 and the body does matrix work. One tile in flight hides min(body compute, DMA latency);
keeping num_stages - 1 tiles in flight (to hide the latency of streaming loops too) needs the
body unrolled num_stages - 1 times, one staging tile per copy: the next step.

The copy keeps the ISA's static tile addresses (no unrolling); it costs one vector pass per
iteration, against a DMA latency of hundreds of cycles. The prefetch of an out-of-range iteration
has an empty box (hi of dim 0 = 0), so it touches no memory. Loops that write device memory
(stores, atomics) are not pipelined: a prefetch must not overtake a store it could alias."""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.core import IntAttr, Op, TensorType
from ..ir.vocabulary import OPS
from .affine import Carried, Select, Val, nodes
from .dma_operands import descriptor, element_dtype, fill_imm, materialize
from .emitter import Imm, Token, View, VReg

WRITES = frozenset(name for name, op in OPS.items() if op.writes)  # a loop with one of these is not pipelined


@dataclass
class Prefetch:
    op: Op
    acc: object  # access.StructuredAccess
    loop: Op
    token: Token
    staging: View
    counter: tuple  # (iv register, ub value, step value, compare predicate, counter type)


def stages(ctx, loop: Op) -> int:
    """The loop's tt.num_stages (tl.range(num_stages=...)) when set; else the kernel's num_stages
    for loops with matrix work (one prefetch hides min(compute, DMA latency) and costs a copy: a
    win when the body computes, a wash when it only streams)."""
    a = loop.attrs.get("tt.num_stages")
    if isinstance(a, IntAttr):
        return a.value
    if not any(op.name in ("tt.dot", "tt.dot_scaled") for op in loop.walk()):
        return 1
    return int(getattr(ctx.options, "num_stages", 2) or 1)


def candidates(ctx, loop: Op) -> list:
    """(load op, access) of the body's loads that can be issued an iteration early."""
    if ctx.demand is None or stages(ctx, loop) < 2 or any(op.name in WRITES for op in loop.walk()):
        return []
    body = loop.regions[0].blocks[0]
    iv = body.args[0]
    inside = {r for op in loop.walk() if op is not loop for r in op.results}
    inside |= {a for op in loop.walk() for reg in op.regions for b in reg.blocks for a in b.args}
    companions = ctx.demand.companions.get(loop, {})

    def invariant(e, allow_iv=True) -> bool:
        for n in nodes(e):
            if isinstance(n, Val) and n.value in inside and not (allow_iv and n.value is iv):
                return False
            if isinstance(n, Select) and n.cond in inside:
                return False
            if isinstance(n, Carried) and n.arg in inside:
                cp = companions.get(n.arg)
                if cp is None or not all(invariant(s, allow_iv=False) for s in cp.step):
                    return False
        return True

    out = []
    for op in body.ops:
        acc = ctx.demand.strided.get(op)
        volatile = bool(getattr(op.attrs.get("isVolatile"), "value", False))
        if op.name == "tt.load" and acc is not None and not volatile:
            exprs = [acc.base, acc.offset, *acc.strides, *acc.lo, *acc.hi]
            if all(e is None or invariant(e) for e in exprs):
                out.append((op, acc))
    return out


def _issue(ctx, pf: Prefetch, memo: dict, valid: VReg | None) -> None:
    start, strides, lo, hi = descriptor(ctx, pf.acc, memo)
    if valid is not None:  # past the last iteration: an empty box
        h0 = VReg()
        ctx.emit("s.select", h0, valid, hi[0], ctx.li(0))
        hi = (h0, *hi[1:])
    fill = 0 if pf.acc.other is None else pf.acc.other
    ctx.emit("dma.load", pf.token, pf.staging, start, strides, lo, hi, fill_imm(pf.staging.dtype, fill))
    ctx.em.carry(pf.token)


def start(ctx, loop: Op, counter: tuple) -> list[Prefetch]:
    """After the loop guard: issue the first iteration's tile of every pipelined load.
    counter: (iv register, ub value, step value, compare predicate, counter type)."""
    out = []
    for op, acc in candidates(ctx, loop):
        shape = tuple(op.result.type.shape) if isinstance(op.result.type, TensorType) else (1,)
        staging = ctx.new(element_dtype(acc), shape, what=f"prefetch of {op.result.name or 'a load'}")
        pf = Prefetch(op, acc, loop, Token(), staging, counter)
        _issue(ctx, pf, {}, None)
        ctx.prefetches[op] = pf
        out.append(pf)
    return out


def consume(ctx, pf: Prefetch) -> None:
    """At the load's place in the body: take this iteration's tile, fetch the next one."""
    res = pf.op.result
    iv, ub, step, pred, stype = pf.counter
    ctx.em.wait_token(pf.token)
    if isinstance(res.type, TensorType):
        work = ctx.new(pf.staging.dtype, pf.staging.shape, owner=res)
        ctx.copy(work, pf.staging)
        ctx.bind(res, work)
    else:
        r = VReg()
        ctx.emit("v.extract", r, pf.staging, Imm(0))
        ctx.bind(res, r)
    nxt = VReg("iv.next")
    ctx.emit("s.add", nxt, iv, ctx.reg(step), suffixes=(stype,))
    body = pf.loop.regions[0].blocks[0]
    memo = {Val(body.args[0]): nxt}
    for arg, cp in ctx.demand.companions.get(pf.loop, {}).items():
        for k, (reg, s) in enumerate(zip(ctx.companions[arg], cp.step)):
            nk = VReg()
            ctx.emit("s.add", nk, reg, materialize(ctx, s, {}), suffixes=("i64",))
            memo[Carried(arg, k)] = nk
    valid = VReg()
    ctx.emit("s.cmpi", valid, nxt, ctx.reg(ub), suffixes=(pred, stype))
    _issue(ctx, pf, memo, valid)


def finish(ctx, prefetches: list[Prefetch]) -> None:
    """On the loop's exit path: the last (empty) prefetches may be waited for now."""
    for pf in prefetches:
        ctx.em.carry(pf.token, False)
        ctx.prefetches.pop(pf.op, None)
