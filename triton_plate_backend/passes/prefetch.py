"""prefetch: software pipelining of the strided loads of an scf.for (num_stages >= 2).

A load in the loop body whose addresses and bounds depend only on the loop counter, scalars the
body computes from it alone (`derived`: a flattened loop's program and chunk, computed again for the
trip fetched), values from before the loop and the loop's own carried-pointer companions is issued A = num_stages - 1
iterations ahead (at most MAX_AHEAD), one staging tile per iteration in flight. The ISA's tile
addresses are static, so the body is lowered once per staging tile (`copies`), copy j taking its
tile from staging tile j.

num_stages >= 3: A + 1 staging tiles, the body computes on them directly (no copy):

    guard (trip count > 0)
    dma.load  staging[j] <- tile of iteration lb + j*step, j < A          (prologue)
  body (copy j of A + 1):
    dma.wait  staging[j]                          (the load's place in the body: its result)
    dma.load  staging[j-1] <- tile of iteration i + A*step, empty past ub (copy j-1 is done with it)
    ... the body computes on staging[j] while the DMA engine fetches the next A tiles ...
    (copies but the last: exit when the counter reaches ub; the last: bnz body)
  exit:
    dma.wait  staging[*]                                                  (the last, empty, prefetches)

num_stages = 2: one staging tile, the body once; the load's place copies the staging tile into
the tile the body computes on (one vector pass) and refills the staging tile at once.

Loops are pipelined when tl.range(num_stages=...) asks for it, when the kernel's num_stages is
>= 2 and the body does matrix work, and always when it does not (at num_stages >= 3, no copy: a
streaming loop's loads run ahead of its compute for the price of the staging tiles). The
prefetch of an out-of-range iteration has an empty box (hi of dim 0 = 0), so it touches no memory.
Loops that write device memory (stores, atomics) are not pipelined: a prefetch must not overtake
a store it could alias; the loop of a persistent kernel (`plate.programs`, one program per trip)
is, since programs do not see each other's stores."""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.core import IntAttr, Op, TensorType
from ..ir.vocabulary import OPS
from .affine import Carried, Select, Val, atoms
from .dma_operands import descriptor, element_dtype, fill_imm, inverse, materialize, memory_order, reorder
from .emitter import Imm, Token, View, VReg, new_vreg

WRITES = frozenset(name for name, op in OPS.items() if op.writes)  # a loop with one of these is not pipelined


MAX_AHEAD = 3  # at most this many tiles of one load in flight (num_stages - 1, capped: code size)


@dataclass
class Prefetch:
    op: Op
    acc: object  # access.StructuredAccess
    loop: Op
    tokens: list  # one Token per staging tile
    stagings: list  # one View per copy of the body: copy j computes on (or copies) stagings[j]
    counter: tuple  # (iv register, ub value, step value, compare predicate, counter type)
    ahead: int  # iterations between a tile's issue and its use: the tiles in flight
    slot: int = 0  # the copy of the body being lowered
    view_order: tuple | None = None  # a transposed load (dma_operands.memory_order): the result's permutation
    derived: tuple = ()  # the body's scalar ops of the counter its addresses read (`derived`), in body order

    @property
    def direct(self) -> bool:
        """The body computes on the staging tile itself (one more staging tile than in flight)
        rather than on a copy of it."""
        return len(self.stagings) > self.ahead


PROGRAMS_ATTR = "plate.programs"  # on the loop of a persistent kernel (passes/persistent.py): one program per trip
ROW_END_ATTR = "plate.program_end"  # on a flattened loop's scf.if that ends a program (its DMAs left in flight)


STREAMING_STAGES = 3  # the least num_stages of a loop without matrix work (``stages``)


def stages(ctx, loop: Op) -> int:
    """The loop's tt.num_stages (tl.range(num_stages=...)) when set; else the kernel's num_stages
    for loops with matrix work, and at least STREAMING_STAGES for other loops, where the body
    computes on the staging tiles themselves: a prefetch hides min(compute, DMA latency), and only
    at num_stages 2 costs a copy (a win when the body computes, a wash when it only streams). A
    kernel's num_stages is a GPU's shared-memory budget for its K loop: Inductor asks 1 for its
    looped reductions, which on plate would leave every chunk's load latency in series with the
    transfers (codegen.generate lowers again unpipelined when the staging tiles do not fit)."""
    a = loop.attrs.get("tt.num_stages")
    matrix = _matrix(ctx, loop)
    if isinstance(a, IntAttr):
        n = a.value
    else:
        n = int(getattr(ctx.options, "num_stages", 2) or 1)
        n = n if matrix else max(n, STREAMING_STAGES)
    n = n if ctx.max_stages is None else min(n, ctx.max_stages)
    if not isinstance(a, IntAttr) and n < 3 and not matrix:
        return 1
    return n


def ahead(ctx, loop: Op) -> int:
    """Tiles of each pipelined load in flight: num_stages - 1, at most MAX_AHEAD."""
    return max(1, min(stages(ctx, loop) - 1, MAX_AHEAD))


def copies(ctx, loop: Op) -> int:
    """How many times the loop's body is lowered, one staging tile per copy: num_stages = 2
    keeps today's single copy (the body computes on a copy of the one staging tile); from 3 on
    the body computes on the staging tiles themselves, one more than are in flight."""
    if not candidates(ctx, loop):
        return 1
    n = ahead(ctx, loop)
    if stages(ctx, loop) < 3:
        return n
    # a persistent loop stores what it computed on (often the staging tile itself): one more tile, so
    # the refill of a tile waits for a store issued two trips before, not the one just issued; a
    # flattened GEMM stores its own output tile, never a staging tile
    return n + 2 if PROGRAMS_ATTR in loop.attrs and not _matrix(ctx, loop) else n + 1


def _matrix(ctx, loop: Op) -> bool:
    """The loop does matrix work (tt.dot): a walk of its body, once per loop (``stages`` is asked often)."""
    key = ("matrix", loop)
    found = ctx.loop_memo.get(key)
    if found is None:
        found = ctx.loop_memo[key] = any(op.name in ("tt.dot", "tt.dot_scaled") for op in loop.walk())
    return found


def select(prefetches: list, slot: int) -> None:
    """The copy of the body about to be lowered takes staging tile `slot` of every prefetch."""
    for pf in prefetches:
        pf.slot = slot


def _blocking(loop: Op) -> frozenset:
    """Ops that keep a loop's loads from being issued early: any write to device memory, except
    the stores of a persistent kernel's loop, whose trips are distinct programs (a program's load
    may not depend on another program's store; atomics still block)."""
    return WRITES - {"tt.store", "tt.descriptor_store"} if PROGRAMS_ATTR in loop.attrs else WRITES


def derived(loop: Op) -> list[Op]:
    """The ops at the top of the loop's body that compute a scalar from the counter and values from
    before the loop only (a flattened loop's program and chunk, passes/persistent.py): a prefetch
    computes them again for the iteration it fetches."""
    body = loop.regions[0].blocks[0]
    inside = {r for op in loop.walk() if op is not loop for r in op.results}
    known, out = {body.args[0]}, []
    for op in body.ops:
        d = OPS.get(op.name)
        scalar = len(op.results) == 1 and not isinstance(op.result.type, TensorType)
        if d is not None and d.pure and not op.regions and scalar:
            if all(v in known or (v not in inside and v not in body.args) for v in op.operands):
                known.add(op.result)
                out.append(op)
    return out


def derived_of(ctx, loop: Op) -> list[Op]:
    """`derived(loop)`, kept in the ctx's loop memo (the prefetcher asks it of a loop at every load it starts
    and when it picks the candidates: a walk of the whole loop each; read the list, do not change it)."""
    key = ("derived", loop)
    found = ctx.loop_memo.get(key)
    if found is None:
        found = ctx.loop_memo[key] = derived(loop)
    return found


def _needed(ops: list[Op], exprs) -> tuple:
    """The ops of `derived` that the expressions read, with the ones they read, in body order."""
    want = {n.value for e in exprs if e is not None for n in atoms(e) if isinstance(n, Val)}
    want |= {n.cond for e in exprs if e is not None for n in atoms(e) if isinstance(n, Select)}
    keep = []
    for op in reversed(ops):
        if op.result in want:
            keep.append(op)
            want.update(op.operands)
    return tuple(reversed(keep))


def candidates(ctx, loop: Op) -> list:
    """(load op, access) of the body's loads that can be issued an iteration early (the list is the
    ctx's: a lowering asks about a loop several times; read it, do not change it)."""
    key = ("candidates", loop)
    found = ctx.loop_memo.get(key)
    if found is None:
        found = ctx.loop_memo[key] = _candidates(ctx, loop)
    return found


def _invariant(e, within: tuple, allow_iv: bool = True) -> bool:
    """e reads nothing the loop computes (with allow_iv, but for the induction variable and what is
    derived from it); within: (the values defined inside the loop, those derived from its counter, the
    same with the induction variable, the loop's companions). (A function of its own, not a closure of
    `_candidates`: a recursive closure is a reference cycle.)"""
    inside, of_counter, of_counter_or_iv, companions = within
    for n in atoms(e):
        if isinstance(n, Val) and n.value in inside and not (allow_iv and n.value in of_counter_or_iv):
            return False
        if isinstance(n, Select) and n.cond in inside and not (allow_iv and n.cond in of_counter):
            return False
        if isinstance(n, Carried) and n.arg in inside:
            cp = companions.get(n.arg)
            if cp is None or not all(_invariant(s, within, allow_iv=False) for s in cp.step):
                return False
    return True


def _candidates(ctx, loop: Op) -> list:
    if ctx.demand is None or stages(ctx, loop) < 2:
        return []
    blocking = _blocking(loop)  # (once, not once per op: a persistent loop's is a set difference)
    for op in loop.walk():
        if op.name in blocking:
            return []
    body = loop.regions[0].blocks[0]
    iv = body.args[0]
    inside = {r for op in loop.walk() if op is not loop for r in op.results}
    inside |= {a for op in loop.walk() for reg in op.regions for b in reg.blocks for a in b.args}
    of_counter = {op.result for op in derived_of(ctx, loop)}
    of_counter_or_iv = of_counter | {iv}
    within = (inside, of_counter, of_counter_or_iv, ctx.demand.companions.get(loop, {}))
    out, stored = [], False
    for op in body.ops:
        acc = ctx.demand.strided.get(op)
        volatile = bool(getattr(op.attrs.get("isVolatile"), "value", False))
        # in a persistent loop a load after the trip's own store must see it: not issued early
        if not stored:  # (a loop, not any() over a generator: once per op of the body)
            for inner in op.walk():
                if inner.name in WRITES:
                    stored = True
                    break
        if op.name == "tt.load" and acc is not None and not volatile and not stored:
            exprs = [acc.base, acc.offset, *acc.strides, *acc.lo, *acc.hi]
            if all(e is None or _invariant(e, within) for e in exprs):
                out.append((op, acc))
    return out


def _issue(ctx, pf: Prefetch, slot: int, memo: dict, valid: VReg | None) -> None:
    """dma.load into staging tile `slot`; valid (a register) empties the box when false."""
    start, strides, lo, hi = descriptor(ctx, pf.acc, memo)
    if valid is not None:  # past the last iteration: an empty box
        h0 = new_vreg()
        ctx.emit("s.select", h0, valid, hi[0], ctx.li(0))
        hi = (h0, *hi[1:])
    fill = 0 if pf.acc.other is None else pf.acc.other
    staging, token = pf.stagings[slot], pf.tokens[slot]
    ctx.em.other_program = PROGRAMS_ATTR in pf.loop.attrs  # a later trip: another program's load
    loc, ctx.em.loc = ctx.em.loc, pf.op.loc or ctx.em.loc  # the DMA names its load's source line
    try:
        ctx.emit("dma.load", token, staging, start, strides, lo, hi, fill_imm(staging.dtype, fill))
    finally:
        ctx.em.other_program, ctx.em.loc = False, loc
    ctx.em.carry(token)


def _ahead(ctx, pf: Prefetch, d: int) -> tuple[dict, VReg | None]:
    """A descriptor memo binding the loop counter, the scalars derived from it and the carried-pointer
    companions to their values d iterations ahead, and the register that says whether that
    iteration runs (None for d = 0: this one)."""
    iv, ub, step, pred, stype = pf.counter
    nxt = iv
    for _ in range(d):
        r = new_vreg("iv.next")
        ctx.emit("s.add", r, nxt, ctx.reg(step), suffixes=(stype,))
        nxt = r
    body = pf.loop.regions[0].blocks[0]
    memo = {Val(body.args[0]): nxt, **_recompute(ctx, pf.derived, body.args[0], nxt)}
    for arg, cp in ctx.demand.companions.get(pf.loop, {}).items():
        for k, (reg, s) in enumerate(zip(ctx.companions[arg], cp.step)):
            step_reg = materialize(ctx, s, {})
            nk = reg
            for _ in range(d):
                r = new_vreg()
                ctx.emit("s.add", r, nk, step_reg, suffixes=("i64",))
                nk = r
            memo[Carried(arg, k)] = nk
    if d == 0:
        return memo, None
    valid = new_vreg()
    ctx.emit("s.cmpi", valid, nxt, ctx.reg(ub), suffixes=(pred, stype))
    return memo, valid


def _recompute(ctx, ops: tuple, iv, reg: VReg) -> dict:
    """{Val(result): register} of the derived ops lowered again with the counter in `reg`; the
    bindings of the body's own lowering are left as they were."""
    if not ops:
        return {}
    saved = {v: ctx.env[v] for v in (iv, *(op.result for op in ops)) if v in ctx.env}
    ctx.bind(iv, reg)
    out = {}
    try:
        for op in ops:
            ctx.rules[op.name](ctx, op)
            out[Val(op.result)] = ctx.reg(op.result)
    finally:
        for v in (iv, *(op.result for op in ops)):
            ctx.env.pop(v, None)
        ctx.env.update(saved)
    return out


def start(ctx, loop: Op, counter: tuple, guard: VReg | None = None) -> list[Prefetch]:
    """After the loop guard: issue the tiles of the first `ahead` iterations of every pipelined
    load into staging tiles 0, 1, ..., iteration by iteration (the first runs: the guard passed;
    the others only if they run). counter: (iv register, ub value, step value, compare predicate, counter type).
    guard: the guard's condition when the tiles are issued before the guard branches (`early`): the
    first iteration's tile is then empty when the loop runs no trip, like the others past the bound."""
    out = []
    n, depth, found = copies(ctx, loop), ahead(ctx, loop), candidates(ctx, loop)
    if found:
        ctx.deepest_stages = max(ctx.deepest_stages, stages(ctx, loop))
        ctx.streaming_pipelined |= not _matrix(ctx, loop)
    for op, acc in found:
        tensor = isinstance(op.result.type, TensorType)
        shape = tuple(op.result.type.shape) if tensor else (1,)
        order = memory_order(acc, shape) if tensor else None
        if order is not None:
            acc, shape = reorder(acc, order), tuple(shape[k] for k in order)
        what = f"prefetch of {op.result.name or 'a load'}"
        stagings = [ctx.new(element_dtype(acc), shape, what=what) for _ in range(n)]
        pf = Prefetch(op, acc, loop, [Token() for _ in range(n)], stagings, counter, depth)
        pf.view_order = None if order is None else inverse(order)
        pf.derived = _needed(derived_of(ctx, loop), [acc.base, acc.offset, *acc.strides, *acc.lo, *acc.hi])
        memo, valid = _ahead(ctx, pf, 0)
        _issue(ctx, pf, 0, memo, guard if valid is None else valid)
        ctx.prefetches[op] = pf
        out.append(pf)
    for j in range(1, depth):  # iteration by iteration: the tiles the body needs first are issued first
        for pf in out:
            _issue(ctx, pf, j, *_ahead(ctx, pf, j))
    return out


def early(ctx, loop: Op, pairs) -> bool:
    """Issue the loop's first tiles before its carried values are copied into their homes (and so
    before the guard): when some tensor home is filled by a copy (an accumulator's zero fill, vector
    work on the compute engine) and the loop has loads to pipeline, whose issue would otherwise wait
    in program order behind that copy."""
    copied = any(
        isinstance(home, View) and not (isinstance(init, View) and init.buffer is home.buffer) for home, init in pairs
    )
    return copied and bool(candidates(ctx, loop))


def settle_guard(ctx, prefetches: list[Prefetch]) -> None:
    """After the loop (where its guard's skip lands): wait for the first tiles issued before the guard
    (`early`); a loop that ran waited for them already, one that did not left them (empty) in flight."""
    for pf in prefetches:
        for token, staging in zip(pf.tokens[: pf.ahead], pf.stagings):
            ctx.em.wait_merged(token, (staging.buffer,))


def consume(ctx, pf: Prefetch) -> None:
    """At the load's place in the body: take this iteration's tile (staging tile `slot`), fetch
    the one `ahead` iterations on into the staging tile the previous copy of the body computed
    on (direct) or, once copied, into this one."""
    res = pf.op.result
    staging = pf.stagings[pf.slot]
    ctx.em.wait_token(pf.tokens[pf.slot])
    if not isinstance(res.type, TensorType):
        r = VReg()
        ctx.emit("v.extract", r, staging, Imm(0))
        ctx.bind(res, r)
    elif pf.direct or ctx.last_trip:  # a peeled last trip refills nothing: it computes on the tile itself
        staging.buffer.owner = res
        staging.buffer.aliases.clear()
        ctx.bind(res, staging if pf.view_order is None else staging.permute(pf.view_order))
    else:
        work = ctx.new(staging.dtype, staging.shape, owner=res)
        ctx.copy(work, staging)
        ctx.bind(res, work if pf.view_order is None else work.permute(pf.view_order))
    if ctx.last_trip:
        return
    _issue(ctx, pf, (pf.slot + pf.ahead) % len(pf.stagings), *_ahead(ctx, pf, pf.ahead))


def finish(ctx, prefetches: list[Prefetch]) -> None:
    """On the loop's exit path: the last (empty) prefetches may be waited for now."""
    for pf in prefetches:
        for token, staging in zip(pf.tokens, pf.stagings):
            ctx.em.carry(token, False)
            if pf.direct:  # an exit from copy j leaves a different set of staging tiles in flight
                ctx.em.wait_merged(token, (staging.buffer,))
        ctx.prefetches.pop(pf.op, None)
