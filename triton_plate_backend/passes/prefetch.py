"""prefetch: software pipelining of the strided loads of an scf.for (num_stages >= 2).

A load in the loop body whose addresses and bounds depend only on the loop counter, values from
before the loop and the loop's own carried-pointer companions is issued num_stages - 1
iterations ahead, one staging tile per iteration in flight. The ISA's tile addresses are static,
so the body is lowered num_stages - 1 times (`copies`), copy j taking its tile from staging
tile j:

    guard (trip count > 0)
    dma.load  staging[j] <- tile of iteration lb + j*step, j < S-1     (prologue)
  body (copy j of S-1):
    dma.wait  staging[j];  v.copy work <- staging[j]                   (the load's place in the body)
    dma.load  staging[j] <- tile of iteration i + (S-1)*step, empty past ub
    ... the body computes on `work` while the DMA engine fetches the next S-1 tiles ...
    (copies but the last: exit when the counter reaches ub; the last: bnz body)
  exit:
    dma.wait  staging[*]                                               (the last, empty, prefetches)

Loops are pipelined when tl.range(num_stages=...) asks for it, or when the kernel's num_stages is
>= 2 and the body does matrix work. num_stages = 2 keeps one tile in flight and the body once.

The copy keeps the ISA's static tile addresses; it costs one vector pass per iteration, against
a DMA latency of hundreds of cycles. The prefetch of an out-of-range iteration has an empty box
(hi of dim 0 = 0), so it touches no memory. Loops that write device memory (stores, atomics) are
not pipelined: a prefetch must not overtake a store it could alias."""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.core import IntAttr, Op, TensorType
from ..ir.vocabulary import OPS
from .affine import Carried, Select, Val, nodes
from .dma_operands import descriptor, element_dtype, fill_imm, materialize
from .emitter import Imm, Token, View, VReg

WRITES = frozenset(name for name, op in OPS.items() if op.writes)  # a loop with one of these is not pipelined


MAX_COPIES = 4  # the body is lowered at most this many times (num_stages - 1, capped: code size)


@dataclass
class Prefetch:
    op: Op
    acc: object  # access.StructuredAccess
    loop: Op
    tokens: list  # one Token per staging tile
    stagings: list  # one View per copy of the body: the tile of iteration i + j*step in flight
    counter: tuple  # (iv register, ub value, step value, compare predicate, counter type)
    slot: int = 0  # the copy of the body being lowered

    @property
    def token(self) -> Token:
        return self.tokens[self.slot]

    @property
    def staging(self) -> View:
        return self.stagings[self.slot]


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


def copies(ctx, loop: Op) -> int:
    """How many times the loop's body is lowered: one copy per staging tile in flight when
    loads are pipelined (num_stages - 1, at most MAX_COPIES), else 1."""
    if not candidates(ctx, loop):
        return 1
    return max(1, min(stages(ctx, loop) - 1, MAX_COPIES))


def select(prefetches: list, slot: int) -> None:
    """The copy of the body about to be lowered takes staging tile `slot` of every prefetch."""
    for pf in prefetches:
        pf.slot = slot


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


def _ahead(ctx, pf: Prefetch, d: int) -> tuple[dict, VReg]:
    """A descriptor memo binding the loop counter and the carried-pointer companions to their
    values d iterations ahead, and the register that says whether that iteration runs."""
    iv, ub, step, pred, stype = pf.counter
    nxt = iv
    for _ in range(d):
        r = VReg("iv.next")
        ctx.emit("s.add", r, nxt, ctx.reg(step), suffixes=(stype,))
        nxt = r
    body = pf.loop.regions[0].blocks[0]
    memo = {Val(body.args[0]): nxt}
    for arg, cp in ctx.demand.companions.get(pf.loop, {}).items():
        for k, (reg, s) in enumerate(zip(ctx.companions[arg], cp.step)):
            step_reg = materialize(ctx, s, {})
            nk = reg
            for _ in range(d):
                r = VReg()
                ctx.emit("s.add", r, nk, step_reg, suffixes=("i64",))
                nk = r
            memo[Carried(arg, k)] = nk
    valid = VReg()
    ctx.emit("s.cmpi", valid, nxt, ctx.reg(ub), suffixes=(pred, stype))
    return memo, valid


def start(ctx, loop: Op, counter: tuple) -> list[Prefetch]:
    """After the loop guard: issue the tiles of the first num_stages - 1 iterations of every
    pipelined load (the first runs: the guard passed; the others only if they run).
    counter: (iv register, ub value, step value, compare predicate, counter type)."""
    out = []
    n = copies(ctx, loop)
    for op, acc in candidates(ctx, loop):
        shape = tuple(op.result.type.shape) if isinstance(op.result.type, TensorType) else (1,)
        what = f"prefetch of {op.result.name or 'a load'}"
        stagings = [ctx.new(element_dtype(acc), shape, what=what) for _ in range(n)]
        pf = Prefetch(op, acc, loop, [Token() for _ in range(n)], stagings, counter)
        for j in range(n):
            pf.slot = j
            if j == 0:
                _issue(ctx, pf, {}, None)
            else:
                _issue(ctx, pf, *_ahead(ctx, pf, j))
        pf.slot = 0
        ctx.prefetches[op] = pf
        out.append(pf)
    return out


def consume(ctx, pf: Prefetch) -> None:
    """At the load's place in the body: take this iteration's tile, fetch the one num_stages - 1
    iterations ahead into the same staging tile."""
    res = pf.op.result
    ctx.em.wait_token(pf.token)
    if isinstance(res.type, TensorType):
        work = ctx.new(pf.staging.dtype, pf.staging.shape, owner=res)
        ctx.copy(work, pf.staging)
        ctx.bind(res, work)
    else:
        r = VReg()
        ctx.emit("v.extract", r, pf.staging, Imm(0))
        ctx.bind(res, r)
    _issue(ctx, pf, *_ahead(ctx, pf, len(pf.stagings)))


def finish(ctx, prefetches: list[Prefetch]) -> None:
    """On the loop's exit path: the last (empty) prefetches may be waited for now."""
    for pf in prefetches:
        for token in pf.tokens:
            ctx.em.carry(token, False)
        ctx.prefetches.pop(pf.op, None)
