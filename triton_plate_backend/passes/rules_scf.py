"""Lowering rules for control flow: scf.for, scf.if, scf.while, cf.br / cf.cond_br (block
arguments) and tt.return.

Every value that flows through control flow (loop-carried iter_args, branch results, block
arguments) gets a home: a scalar register, a whole SRAM buffer, or a record of registers (block
pointers, tensor descriptors). scf.yield / scf.condition / cf.br copy into homes in parallel
(`Ctx.assign`), so swaps are right; a result computed in place in its home costs no copy.

scf.for is rotated: one guard before the loop, the test at the bottom (signed compare unless the
op carries `unsignedCmp`). Loads whose addresses follow the loop counter are software-pipelined
(num_stages >= 2): `prefetch` issues each one num_stages - 1 iterations ahead, and the body is
lowered once per staging tile, each copy but the last exiting when the counter reaches the
bound. A loop whose body's tt.dot feeds the code after it (a GEMM's K loop and its epilogue) and
whose body is one copy has its last trip lowered after the loop (`peeled_tail`), m.mma in row blocks
the epilogue follows block by block (`row_blocks`); the epilogue is lowered once more where the
loop runs no trip."""

from __future__ import annotations

from ..ir.core import PtrType, TensorDescType, TensorType
from . import prefetch, row_blocks
from .context import BasedPtr, dtype_of
from .emitter import View, VReg
from .rules_access import init_companions, step_companions


def is_record_type(t) -> bool:
    return isinstance(t, TensorDescType) or (isinstance(t, PtrType) and isinstance(t.pointee, TensorType))


def homes_for(ctx, types, likes=None, steal=(), based=False):
    """Homes for values of these types; an initial tensor value that dies here and owns its
    buffer becomes the home itself (no copy). A BasedPtr gets a record home only when ``based``
    (an scf.for whose every BasedPtr init was checked by `carried_form`), else an address tile."""
    likes = [None if isinstance(x, BasedPtr) and not based else x for x in likes or [None] * len(types)]
    homes, taken = [], set()
    for i, (t, like) in enumerate(zip(types, likes)):
        b = ctx.dying_buffer(steal[i]) if i < len(steal) and steal.count(steal[i]) == 1 else None
        if b is not None and b.buffer not in taken:
            taken.add(b.buffer)
            homes.append(b)
        else:
            homes.append(None if is_record_type(t) and like is None else ctx.home(t, like))
    return homes


def fill_homes(ctx, homes, bindings):
    """Record homes (block pointers) are made from the first binding that reaches them."""
    return [h if h is not None else b.fresh(ctx) for h, b in zip(homes, bindings)]


def own(homes, values) -> None:
    """The home buffers now hold these values (block arguments or results): in-place updates of
    a value that dies in the region may overwrite its home."""
    for h, v in zip(homes, values):
        if hasattr(h, "buffer"):
            h.buffer.owner = v
            h.buffer.aliases.clear()
        elif isinstance(h, BasedPtr):  # offsets shared with the initial pointer: one more reader
            h.offsets.buffer.aliases.add(v)


def carried_iter_args(ctx, op) -> list[int]:
    """Indices of the iter_args codegen carries (demand analysis drops the unread ones, e.g.
    pointer tensors whose accesses are all strided: they travel as companion registers)."""
    args = op.regions[0].blocks[0].args[1:]
    if ctx.demand is None:
        return list(range(len(args)))
    return [j for j, a in enumerate(args) if a in ctx.demand.tensor_args]


def defined_in(loop) -> set:
    """Values a loop's body defines (op results and block arguments, nested regions included):
    a second copy of the body makes them live again."""
    out = set(loop.regions[0].blocks[0].args)
    for op in loop.walk():
        if op is not loop:
            out.update(op.results)
            for r in op.regions:  # (loops, not a generator made for every op: most ops have no regions)
                for b in r.blocks:
                    out.update(b.args)
    return out


def _uniform(op) -> bool:
    """A tensor op whose elements are all one value: tt.splat, or a splat arith.constant."""
    if op is None:
        return False
    if op.name == "tt.splat":
        return True
    value = op.attrs.get("value")
    return op.name == "arith.constant" and bool(getattr(value, "splat", False))


def carried_form(ctx, body, j, b):
    """How an scf.for carries iter_arg j: a BasedPtr stays one when each trip yields it advanced by a
    uniform offset (tt.addptr(arg, splat or splat constant): the base moves, the offsets stay); any other
    BasedPtr is carried as its i64 address tile."""
    if not isinstance(b, BasedPtr):
        return b
    y = body.ops[-1].operands[j]
    step = ctx.defining_op(y)
    if (
        step is not None
        and step.name == "tt.addptr"
        and step.operands[0] is body.args[1 + j]
        and _uniform(ctx.defining_op(step.operands[1]))
    ):
        return b
    return ctx.as_view(b, "i64", b.offsets.shape)


def peeled_tail(ctx, op, keep) -> list | None:
    """The ops after a loop (up to its block's terminator) when its last trip is lowered apart
    (`_lower_scf_for`): a pipelined loop lowered as one copy of its body (num_stages 2), not a
    persistent one, whose body's tt.dot yields a carried value those ops read. Its m.mma then runs in
    row blocks the epilogue follows (`row_blocks`); the ops are lowered once on each path (the loop
    ran, or ran no trip), so none of their results may be read after them."""
    body = op.regions[0].blocks[0]
    if not ctx.peel or prefetch.PROGRAMS_ATTR in op.attrs or ctx.block_homes or not prefetch.candidates(ctx, op):
        return None
    if prefetch.copies(ctx, op) != 1:
        return None
    dots = {r for o in body.ops if o.name == "tt.dot" for r in o.results}
    carried = {op.results[j] for j in keep if body.ops[-1].operands[j] in dots}
    tail = ctx.rest_of_block()
    if not any(v in carried for o in tail for inner in o.walk() for v in inner.operands):
        return None
    made = {r for o in tail for inner in o.walk() for r in inner.results}
    after = ctx.rest[-1][3]
    if any(v in made for o in after for inner in o.walk() for v in inner.operands):
        return None
    return tail


def _lower_scf_for(ctx, op):
    lb, ub, step, *inits = op.operands
    body = op.regions[0].blocks[0]
    keep = carried_iter_args(ctx, op)
    inits = [inits[j] for j in keep]
    stype = dtype_of(lb.type)
    pred = "ult" if "unsignedCmp" in op.attrs else "slt"
    init_b = [carried_form(ctx, body, j, ctx.binding(v)) for j, v in zip(keep, inits)]
    iv = VReg("iv")
    # an initial value the body also reads (acc = x; for ...: acc = acc - x) dies at the loop op, yet
    # the body reads it at every turn: it cannot become the carried value's home
    read_inside = {v for inner in op.walk() if inner is not op for v in inner.operands}
    steal = [None if v in read_inside else v for v in inits]
    homes = homes_for(ctx, [op.results[j].type for j in keep], init_b, steal=steal, based=True)
    homes = fill_homes(ctx, homes, init_b)
    pairs = list(zip(homes, init_b))
    # the first loads issue before a tensor home's fill (an accumulator's zero fill on the compute
    # engine), not behind it in program order: the guard's condition empties them when no trip runs
    early = prefetch.early(ctx, op, pairs)
    now, late = [(iv, ctx.binding(lb))], []
    for p in pairs:
        (late if early and isinstance(p[0], View) else now).append(p)
    ctx.assign(now)
    companions = init_companions(ctx, op)
    tail = peeled_tail(ctx, op, keep)
    top, end = ctx.em.label("for_body"), ctx.em.label("for_end")
    none = ctx.em.label("for_none") if tail is not None else end
    c = VReg()
    ctx.emit("s.cmpi", c, iv, ctx.reg(ub), suffixes=(pred, stype))
    if early:
        ctx.bind(body.args[0], iv)
        prefetches = prefetch.start(ctx, op, (iv, ub, step, pred, stype), guard=c)
        ctx.assign(late)
    ctx.emit("bz", c, none)
    ctx.bind(body.args[0], iv)
    if not early:
        prefetches = prefetch.start(ctx, op, (iv, ub, step, pred, stype))
    n = prefetch.copies(ctx, op)
    exit_ = ctx.em.label("for_exit") if n > 1 else None
    last = end if tail is not None else None  # the last trip starts where the loop ends
    if last is not None:  # one trip: straight to the last
        ctx.emit("bz", _next_runs(ctx, iv, ub, step, pred, stype), last)
    ctx.em.place(top)
    args = [body.args[1 + j] for j in keep]
    # a persistent loop (one program per trip) leaves a trip's stores in flight into the next copy;
    # a copy's early exit goes through a stub that waits for them
    stubs = [] if prefetch.PROGRAMS_ATTR in op.attrs else None
    ctx.body_copies.append(n)
    for copy in range(n):  # one copy of the body per staging tile
        prefetch.select(prefetches, copy)
        if copy:
            ctx.dead -= defined_in(op)
        own(homes, args)
        for a, h in zip(args, homes):
            ctx.bind(a, h)
        term = ctx.lower_ops(body, ("scf.yield",))
        yields = [ctx.binding(term.operands[j]) for j in keep]
        ctx.assign(list(zip(homes, yields)))
        step_companions(ctx, companions)
        ctx.emit("s.add", iv, iv, ctx.reg(step), suffixes=(stype,))
        if last is not None:  # the loop leaves its last trip to the code after it
            c2 = _next_runs(ctx, iv, ub, step, pred, stype)
        else:
            c2 = VReg()
            ctx.emit("s.cmpi", c2, iv, ctx.reg(ub), suffixes=(pred, stype))
        if copy < n - 1 and stubs is not None:
            stub = ctx.em.label("for_exit_wait")
            stubs.append((stub, ctx.em.branch_keeping("bz", c2, stub)))
        elif copy < n - 1:
            ctx.emit("bz", c2, exit_)
        else:
            ctx.emit("bnz", c2, top)
    ctx.body_copies.pop()
    if last is not None:
        _last_trip(ctx, op, last, none, keep, homes, prefetches, early, tail)
        return
    if stubs:
        ctx.emit("jmp", exit_)
        for stub, pending in stubs:
            ctx.em.settle(stub, pending, exit_)
    if exit_ is not None:
        ctx.em.place(exit_)
    prefetch.finish(ctx, prefetches)
    ctx.em.place(end)
    if early:
        prefetch.settle_guard(ctx, prefetches)
    results = [op.results[j] for j in keep]
    own(homes, results)
    for r, h in zip(results, homes):
        ctx.bind(r, h)


def _next_runs(ctx, iv, ub, step, pred, stype) -> VReg:
    """A register: the trip after the one at `iv` runs."""
    nxt, c = VReg("iv.next"), VReg()
    ctx.emit("s.add", nxt, iv, ctx.reg(step), suffixes=(stype,))
    ctx.emit("s.cmpi", c, nxt, ctx.reg(ub), suffixes=(pred, stype))
    return c


def _last_trip(ctx, op, last, none, keep, homes, prefetches, early, tail) -> None:
    """The loop's last trip lowered after it (`peeled_tail`), on its staging tiles with nothing
    prefetched, its m.mma in row blocks of the matrix array's rows, then the ops after the loop
    interleaved with those blocks (`row_blocks`); where the loop runs no trip (`none`, the guard's
    branch) the ops after it are lowered again on the carried values' initial homes."""
    body = op.regions[0].blocks[0]
    args, results = [body.args[1 + j] for j in keep], [op.results[j] for j in keep]
    ctx.em.place(last)
    ctx.peeled = True
    ctx.dead -= defined_in(op)
    own(homes, args)
    for a, h in zip(args, homes):
        ctx.bind(a, h)
    mark = len(ctx.em.code)
    ctx.mma_rows, ctx.last_trip = ctx.machine.core.matrix.dim, True
    ctx.body_copies.append(1)
    try:
        term = ctx.lower_ops(body, ("scf.yield",))
    finally:
        ctx.mma_rows, ctx.last_trip = None, False
        ctx.body_copies.pop()
    blocks = [i for i in ctx.em.code[mark:] if i.mnemonic == "m.mma"]
    ctx.assign(list(zip(homes, [ctx.binding(term.operands[j]) for j in keep])))
    prefetch.finish(ctx, prefetches)
    ops = ctx.take_rest()
    after = ctx.rest[-1][3]
    revive = {v for o in ops for inner in o.walk() for v in (*inner.results, *ctx.dies.get(inner, ()))}
    revive |= {v for o in ops for v in ctx.dies.get(o, ())}
    own(homes, results)
    for r, h in zip(results, homes):
        ctx.bind(r, h)
    start = len(ctx.em.code)
    ctx.lower_list(ops, after)
    row_blocks.interleave(ctx.em.code, blocks)
    merge = ctx.em.label("for_merge")
    ended = ctx.em.code[start:] and ctx.em.code[-1].mnemonic == "halt"
    if not ended:
        ctx.emit("jmp", merge)
    ctx.em.place(none)
    if early:
        prefetch.settle_guard(ctx, prefetches)
    ctx.dead -= revive
    own(homes, results)
    for r, h in zip(results, homes):
        ctx.bind(r, h)
    ctx.lower_list(ops, after)
    ctx.em.place(merge)


def _lower_scf_if(ctx, op):
    cond = ctx.reg(op.operands[0])
    row_end = prefetch.ROW_END_ATTR in op.attrs
    # a flattened loop's program end yields the chunk loop's values unchanged on the other path:
    # they become the results' homes (no copy on every trip), the program's end overwrites them last
    steal = op.regions[1].blocks[0].ops[-1].operands if row_end else ()
    homes = homes_for(ctx, [r.type for r in op.results], steal=list(steal))
    other, end = ctx.em.label("else"), ctx.em.label("endif")
    ctx.emit("bz", cond, other)
    then_y = ctx.run_region(op.regions[0].blocks[0], [], "scf.yield")
    homes = fill_homes(ctx, homes, then_y)
    ctx.assign(list(zip(homes, then_y)))
    # the end of a flattened loop's program (passes/persistent.py): its store stays in flight past
    # the merge, under the next program's chunks; the code after it waits as for any pending DMA
    # (on the other path it waits for an earlier program's store, done or not). A loop lowered as
    # one copy of its body would wait for it at the back edge anyway: there it is waited for on this
    # path, so the stored tile is not live on the other one (a GEMM's output tile then shares SRAM
    # with the tiles the body computes on)
    in_flight = row_end and bool(ctx.body_copies) and ctx.body_copies[-1] > 1
    kept = [p for p in ctx.em.pending if not p.carried] if in_flight else []
    for p in kept:
        p.carried = True
    has_else = len(op.regions) > 1 and op.regions[1].blocks and op.regions[1].blocks[0].ops
    if has_else:
        ctx.emit("jmp", end)
    ctx.em.place(other)
    if has_else:
        else_y = ctx.run_region(op.regions[1].blocks[0], [], "scf.yield")
        ctx.assign(list(zip(homes, else_y)))
        ctx.em.place(end)
    for p in kept:
        p.carried = False
    own(homes, op.results)
    for r, h in zip(op.results, homes):
        ctx.bind(r, h)


def _lower_scf_while(ctx, op):
    before, after = op.regions[0].blocks[0], op.regions[1].blocks[0]
    init_b = [ctx.binding(v) for v in op.operands]
    before_homes = fill_homes(ctx, homes_for(ctx, [a.type for a in before.args], init_b), init_b)
    ctx.assign(list(zip(before_homes, init_b)))
    top, end = ctx.em.label("while"), ctx.em.label("endwhile")
    ctx.em.place(top)
    own(before_homes, before.args)
    cond, *fwd = ctx.run_region(before, before_homes, "scf.condition")
    after_homes = fill_homes(ctx, homes_for(ctx, [r.type for r in op.results], fwd), fwd)
    ctx.assign(list(zip(after_homes, fwd)))
    ctx.emit("bz", ctx.as_reg(cond), end)
    own(after_homes, after.args)
    yields = ctx.run_region(after, after_homes, "scf.yield")
    ctx.assign(list(zip(before_homes, yields)))
    ctx.emit("jmp", top)
    ctx.em.place(end)
    own(after_homes, op.results)
    for r, h in zip(op.results, after_homes):
        ctx.bind(r, h)


def _lower_stray_terminator(ctx, op):
    raise ctx.error("terminator outside the region op that owns it")


# ---- unstructured control flow (cf dialect) ---------------------------------------------------------
def prepare_blocks(ctx, blocks) -> None:
    """A label and homes for the arguments of every block but the entry."""
    for b in blocks[1:]:
        if any(is_record_type(a.type) for a in b.args):
            raise ctx.error("block arguments of block-pointer or descriptor type are not supported")
        ctx.block_homes[b] = (ctx.em.label("bb"), [ctx.home(a.type) for a in b.args])


def enter_block(ctx, block) -> None:
    if block not in ctx.block_homes:
        return
    label, homes = ctx.block_homes[block]
    ctx.em.place(label)
    for a, h in zip(block.args, homes):
        ctx.bind(a, h)


def _branch(ctx, dest, args):
    label, homes = ctx.block_homes[dest]
    ctx.assign(list(zip(homes, [ctx.binding(v) for v in args])))
    ctx.emit("jmp", label)


def _lower_cf_br(ctx, op):
    _branch(ctx, op.successors[0], op.operands)


def _lower_cf_cond_br(ctx, op):
    t, f = op.successors
    cond, rest = op.operands[0], op.operands[1:]
    seg = op.attrs.get("operandSegmentSizes")
    nt = int(seg.values[1]) if seg is not None else len(t.args)
    c = ctx.reg(cond)
    other = ctx.em.label("false")
    ctx.emit("bz", c, other)
    _branch(ctx, t, rest[:nt])
    ctx.em.place(other)
    _branch(ctx, f, rest[nt : nt + len(f.args)])


def _lower_tt_return(ctx, op):
    if op.operands:
        raise ctx.error("a kernel returns no values (tt.return with operands in the entry function)")
    ctx.emit("halt")


RULES = {
    "scf.for": _lower_scf_for,
    "scf.if": _lower_scf_if,
    "scf.while": _lower_scf_while,
    "scf.yield": _lower_stray_terminator,
    "scf.condition": _lower_stray_terminator,
    "cf.br": _lower_cf_br,
    "cf.cond_br": _lower_cf_cond_br,
    "tt.return": _lower_tt_return,
}
