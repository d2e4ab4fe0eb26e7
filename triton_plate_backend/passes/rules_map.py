"""Lowering of tt.map_elementwise, and the machinery that runs a scalar function on whole tiles
(also the combine regions of tt.reduce / tt.scan): each element of the tiles is one call of the
function (a "lane").

- pack=N: one call takes N consecutive elements of each operand along the last axis. Region
  argument j of an operand is the strided view of its elements j, j+N, ... (shape [..., n/N]);
  result element j of each result is written back through the same kind of view.
- Branches (cf.cond_br / cf.br between blocks: what Triton emits for an `if` that returns) are
  if-converted. Blocks run once each, in topological order, on all lanes; a block argument is
  the value of the incoming edge each lane took, picked with v.select by the edge's mask (the
  lanes that take it). Code grows with the function's blocks, not with its paths.
- scf.if on a lane value runs both arms and selects the results per lane.
- Loops: an scf.for whose bounds are the same for every lane is a loop over tiles; scf.while, and
  scf.for whose bounds differ per lane, run while any lane is active, each lane's carried values
  frozen once its own loop ended (and lanes that do not reach the loop never start it).
- Ops on lanes that did not take their branch run anyway (speculation): PLATE defines every pure
  op on every input (x / 0, out-of-range shifts ...), so their results are simply dropped. A
  load is a gather masked to the lanes that run it; an assert holds on the lanes that skip it. A
  print on a branch and stores/atomics (Triton refuses them in map_elementwise too) are refused."""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.core import Block, Value
from .context import dtype_of
from .dma_operands import fill_imm
from .emitter import Imm, Str, Token, View, VReg
from .reduction import reduce_into
from .rules_scf import own
from .rules_tt import byte_offsets, constant_value, pointee_size

MAP_RETURN = "tt.map_elementwise.return"
# ops that read the mask of the lanes running them: loops (a lane outside runs no iteration),
# loads (a lane outside reads no memory), asserts (a lane outside passes), prints (refused on a
# branch: they would print every lane)
MASKED = {"scf.for", "scf.while", "tt.load", "tt.assert", "tt.print"}
REFUSED = {"tt.store", "tt.atomic_rmw", "tt.atomic_cas"}
WHERE = "a scalar function run on whole tiles (tl.map_elementwise, a tl.reduce or tl.associative_scan combine)"


# ---- tt.map_elementwise ----------------------------------------------------------------------------
def packed(v: View, j: int, pack: int) -> View:
    """Element j of every group of `pack` consecutive elements along the last axis."""
    return v if pack == 1 else v.sub(v.rank - 1, j, v.shape[-1] // pack, pack)


def _lower_tt_map_elementwise(ctx, op):
    pack = int(getattr(op.attrs.get("pack"), "value", 1))
    shape = tuple(op.results[0].type.shape)
    if pack < 1 or not shape or shape[-1] % pack:
        raise ctx.error(f"pack={pack} must divide the last dimension of the {list(shape)} operands")
    lanes = shape[:-1] + (shape[-1] // pack,)
    args = [packed(ctx.view(v, shape), j, pack) for v in op.operands for j in range(pack)]
    outs = run_cfg(ctx, op.regions[0].blocks, args, lanes, None, MAP_RETURN)
    if len(outs) != len(op.results) * pack:
        raise ctx.error(f"the function returns {len(outs)} values; {len(op.results)} results x pack={pack} expected")
    for k, r in enumerate(op.results):
        dtype = dtype_of(r.type)
        if pack == 1:
            ctx.bind(r, ctx.as_view(outs[k], dtype, shape))
            continue
        dst = ctx.new(dtype, shape, owner=r)
        for j in range(pack):
            ctx.copy(packed(dst, j, pack), ctx.as_view(outs[k * pack + j], dtype, lanes))
        ctx.bind(r, dst)


# ---- lane masks (i1 tiles; None: every lane) -------------------------------------------------------
def mask_of(ctx, value: Value, lanes) -> View:
    return ctx.as_view(ctx.binding(value), "i1", lanes)


def mask_and(ctx, a: View | None, b: View | None, lanes) -> View | None:
    if a is None or b is None:
        return b if a is None else a
    out = ctx.new("i1", lanes, what="lane mask")
    ctx.vec("v.and", out, a, b)
    return out


def mask_or(ctx, masks: list, lanes) -> View | None:
    if any(m is None for m in masks):
        return None
    out = masks[0]
    for m in masks[1:]:
        acc = ctx.new("i1", lanes, what="lane mask")
        ctx.vec("v.or", acc, out, m)
        out = acc
    return out


def mask_not(ctx, m: View, lanes) -> View:
    out = ctx.new("i1", lanes, what="lane mask")
    ctx.vec("v.xor", out, m, ctx.fill(1, "i1", lanes))
    return out


def any_lane(ctx, mask: View) -> VReg:
    """1 when some lane of a whole mask tile is set."""
    one = ctx.new("i1", (1,), what="any lane active")
    reduce_into(ctx, "or", one, mask.reshape((mask.numel,)).expand(0), 1)
    r = VReg("any")
    ctx.emit("v.extract", r, one, Imm(0))
    return r


def select_into(ctx, mask: View, homes: list[View], values: list) -> None:
    """homes[i] = mask ? values[i] : homes[i], all values read before any home is written."""
    bufs = {h.buffer for h in homes}
    staged = []
    for h, v in zip(homes, values):
        v = ctx.as_view(v, h.dtype, h.shape)
        if v.buffer in bufs and v != h:
            t = ctx.new(h.dtype, h.shape, what="parallel select")
            ctx.copy(t, v)
            v = t
        staged.append((h, v))
    for h, v in staged:
        if v != h:
            ctx.vec("v.select", h, mask, v, h)


def lane_homes(ctx, types, lanes, what: str) -> list[View]:
    return [ctx.new(dtype_of(t), lanes, what=f"{what} {t}") for t in types]


# ---- blocks and ops ------------------------------------------------------------------------------
def reads_mask(block: Block) -> bool:
    return any(o.name in MASKED for op in block.ops for o in op.walk())


def run_block(ctx, block: Block, args, lanes, mask, terminator: str) -> list:
    """Run a single-block region on the lanes; the bindings of its terminator's operands."""
    term = block.ops[-1] if block.ops else None
    if term is None or term.name != terminator:
        raise ctx.error(f"region does not end with {terminator}")
    for a, b in zip(block.args, args):
        ctx.bind(a, b)
    lower_body(ctx, block, lanes, mask)
    return [ctx.binding(v) for v in term.operands]


def lower_body(ctx, block: Block, lanes, mask) -> None:
    """Lower a block's ops but its terminator; `mask` holds the lanes that run it."""
    for op in block.ops[:-1]:
        if op.name in REFUSED:
            raise ctx.error(f"{op.name} inside {WHERE} is not supported; store the results outside", op)
        if op.name == "tt.print" and mask is not None:
            raise ctx.error(f"tt.print on a branch of {WHERE} is not supported (it would print every element)", op)
        rule = LANE_RULES.get(op.name)
        if rule is None:
            ctx.lower_op(op)
        else:
            _lower_at(ctx, op, rule, lanes, mask)


def _lower_at(ctx, op, rule, lanes, mask) -> None:
    """ctx.lower_op for a lane rule: the op names errors and locates the code it emits."""
    saved_op, saved_loc = ctx.op, ctx.em.loc
    ctx.op, ctx.em.loc = op, op.loc
    try:
        rule(ctx, op, lanes, mask)
        ctx.dead |= ctx.dies.get(op, set())
    finally:
        ctx.op, ctx.em.loc = saved_op, saved_loc


def _lane_if(ctx, op, lanes, mask):
    """Both arms on every lane; each result picked per lane by the condition."""
    cond = mask_of(ctx, op.operands[0], lanes)
    arms = [r.blocks[0] for r in op.regions if r.blocks and r.blocks[0].ops]
    yields = []
    for arm, sense in zip(arms, (True, False)):
        arm_mask = None
        if reads_mask(arm):
            arm_mask = mask_and(ctx, mask, cond if sense else mask_not(ctx, cond, lanes), lanes)
        yields.append(run_block(ctx, arm, [], lanes, arm_mask, "scf.yield"))
    for r, t, e in zip(op.results, *yields):  # an scf.if with results has both arms
        if t == e:
            ctx.bind(r, t)
            continue
        dtype = dtype_of(r.type)
        dst = ctx.new(dtype, lanes, owner=r)
        ctx.vec("v.select", dst, cond, ctx.as_view(t, dtype, lanes), ctx.as_view(e, dtype, lanes))
        ctx.bind(r, dst)


def _lane_for(ctx, op, lanes, mask):
    lb, ub, step = (ctx.binding(v) for v in op.operands[:3])
    if any(isinstance(b, View) for b in (lb, ub, step)):
        _divergent_for(ctx, op, lanes, mask)
    else:
        _uniform_for(ctx, op, lanes, mask)


def _uniform_for(ctx, op, lanes, mask):
    """Bounds the same for every lane: one scalar counter, the carried values are tiles."""
    lb, ub, step, *inits = op.operands
    body = op.regions[0].blocks[0]
    stype, pred = dtype_of(lb.type), "ult" if "unsignedCmp" in op.attrs else "slt"
    homes = lane_homes(ctx, [r.type for r in op.results], lanes, "loop value")
    iv = VReg("iv")
    ctx.assign([(iv, ctx.binding(lb))] + [(h, ctx.binding(v)) for h, v in zip(homes, inits)])
    top, end = ctx.em.label("map_for"), ctx.em.label("map_for_end")
    c = VReg()
    ctx.emit("s.cmpi", c, iv, ctx.reg(ub), suffixes=(pred, stype))
    ctx.emit("bz", c, end)
    ctx.em.place(top)
    own(homes, body.args[1:])
    yields = run_block(ctx, body, [iv, *homes], lanes, mask, "scf.yield")
    ctx.assign(list(zip(homes, yields)))
    ctx.emit("s.add", iv, iv, ctx.reg(step), suffixes=(stype,))
    c2 = VReg()
    ctx.emit("s.cmpi", c2, iv, ctx.reg(ub), suffixes=(pred, stype))
    ctx.emit("bnz", c2, top)
    ctx.em.place(end)
    _bind_results(ctx, op, homes)


def _divergent_for(ctx, op, lanes, mask):
    """Bounds that differ per lane: a counter tile; loop while some lane is inside its range."""
    lb, ub, step, *inits = op.operands
    body = op.regions[0].blocks[0]
    stype, pred = dtype_of(lb.type), "ult" if "unsignedCmp" in op.attrs else "slt"
    iv = ctx.new(stype, lanes, what="per-lane loop counter")
    ctx.copy(iv, ctx.as_view(ctx.binding(lb), stype, lanes))
    homes = lane_homes(ctx, [r.type for r in op.results], lanes, "loop value")
    ctx.assign([(h, ctx.binding(v)) for h, v in zip(homes, inits)])
    active = ctx.new("i1", lanes, what="active lanes")
    in_range = ctx.new("i1", lanes, what="lanes in range")
    ub_v = ctx.as_view(ctx.binding(ub), stype, lanes)

    def narrow():  # active &= iv < ub
        ctx.vec("v.cmpi", in_range, iv, ub_v, suffixes=(pred,))
        ctx.vec("v.and", active, active, in_range)

    ctx.copy(active, mask if mask is not None else ctx.fill(1, "i1", lanes))
    narrow()
    top, end = ctx.em.label("map_for"), ctx.em.label("map_for_end")
    ctx.emit("bz", any_lane(ctx, active), end)
    ctx.em.place(top)
    yields = run_block(ctx, body, [iv, *homes], lanes, active, "scf.yield")
    select_into(ctx, active, homes, yields)
    ctx.vec("v.add", iv, iv, ctx.as_view(ctx.binding(step), stype, lanes))
    narrow()
    ctx.emit("bnz", any_lane(ctx, active), top)
    ctx.em.place(end)
    _bind_results(ctx, op, homes)


def _lane_while(ctx, op, lanes, mask):
    """Loop while some lane is active; a lane's results are its forwarded values when its own
    condition first fails."""
    before, after = op.regions[0].blocks[0], op.regions[1].blocks[0]
    carried = lane_homes(ctx, [a.type for a in before.args], lanes, "while value")
    ctx.assign([(h, ctx.binding(v)) for h, v in zip(carried, op.operands)])
    results = lane_homes(ctx, [r.type for r in op.results], lanes, "while result")
    active = ctx.new("i1", lanes, what="active lanes")
    ctx.copy(active, mask if mask is not None else ctx.fill(1, "i1", lanes))
    top, end = ctx.em.label("map_while"), ctx.em.label("map_while_end")
    ctx.em.place(top)
    own(carried, before.args)
    cond, *fwd = run_block(ctx, before, carried, lanes, active, "scf.condition")
    select_into(ctx, active, results, fwd)
    ctx.vec("v.and", active, active, ctx.as_view(cond, "i1", lanes))
    ctx.emit("bz", any_lane(ctx, active), end)
    yields = run_block(ctx, after, fwd, lanes, active, "scf.yield")
    ctx.assign(list(zip(carried, yields)))
    ctx.emit("jmp", top)
    ctx.em.place(end)
    _bind_results(ctx, op, results)


def _lane_assert(ctx, op, lanes, mask):
    """The lanes that do not run the assert pass it."""
    ok = mask_of(ctx, op.operands[0], lanes)
    if mask is not None:
        skipped = ctx.new("i1", lanes, what="assert condition")
        ctx.vec("v.or", skipped, ok, mask_not(ctx, mask, lanes))
        ok = skipped
    ctx.emit("dbg.assert", ok, Str(getattr(op.attrs.get("message"), "value", "assertion failed")))


def _lane_addptr(ctx, op, lanes, mask):
    ptr, off = op.operands
    if not isinstance(ctx.binding(ptr), View) and not isinstance(ctx.binding(off), View):
        ctx.lower_op(op)  # the same pointer on every lane: scalar registers
        return
    size = pointee_size(ptr.type)
    o = ctx.as_view(ctx.binding(off), dtype_of(off.type), lanes)
    dst = ctx.new("i64", lanes, owner=op.result)
    o = byte_offsets(ctx, o, size, dst)
    ctx.vec("v.add", dst, ctx.as_view(ctx.binding(ptr), "i64", lanes), o)
    ctx.bind(op.result, dst)


def _lane_load(ctx, op, lanes, mask):
    """A gather of one element per lane, masked to the lanes that run the load."""
    ptr, res = op.operands[0], op.result
    if len(op.operands) > 1:
        mask = mask_and(ctx, mask, mask_of(ctx, op.operands[1], lanes), lanes)
    mask = mask if mask is not None else ctx.fill(1, "i1", lanes)
    dtype = dtype_of(res.type)
    other = op.operands[2] if len(op.operands) > 2 else None
    fill = 0 if other is None else constant_value(ctx, other)
    dst = ctx.new(dtype, lanes, owner=res)
    addr = ctx.as_view(ctx.binding(ptr), "i64", lanes)
    ctx.emit("dma.gather", Token(), dst, addr, mask, fill_imm(dtype, 0 if fill is None else fill))
    if fill is None:
        ctx.vec("v.select", dst, mask, dst, ctx.as_view(ctx.binding(other), dtype, lanes))
    ctx.bind(res, dst)


def _bind_results(ctx, op, homes) -> None:
    own(homes, op.results)
    for r, h in zip(op.results, homes):
        ctx.bind(r, h)


LANE_RULES = {
    "scf.if": _lane_if,
    "scf.for": _lane_for,
    "scf.while": _lane_while,
    "tt.addptr": _lane_addptr,
    "tt.load": _lane_load,
    "tt.assert": _lane_assert,
}


# ---- if-conversion of branches between blocks ------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Edge:
    """A control-flow edge: src's terminator goes to dst (None: the function returns) with args,
    for the lanes where cond == sense (cond None: every lane that runs src)."""

    src: Block
    dst: Block | None
    cond: Value | None
    sense: bool
    args: tuple


class Cfg:
    """The blocks of a region reachable from its entry, in topological order, with their edges;
    which blocks every lane runs; which masks the if-conversion needs."""

    def __init__(self, ctx, entry: Block, terminator: str):
        self.entry, self.out, self.order = entry, {}, []
        self._visit(ctx, entry, terminator, {})
        self.order.reverse()
        self.into = {b: [] for b in self.order}
        self.exits = []
        for b in self.order:
            for e in self.out[b]:
                (self.exits if e.dst is None else self.into[e.dst]).append(e)
        self.always = {b for b in self.order if self._on_every_path(b)}
        self.need_block, self.need_edge = set(), set()
        self._needs()

    def _visit(self, ctx, b: Block, terminator: str, state: dict) -> None:
        state[b] = "open"
        self.out[b] = block_edges(ctx, b, terminator)
        for e in self.out[b]:
            if e.dst is None:
                continue
            if state.get(e.dst) == "open":
                raise ctx.error(
                    f"branches that loop back inside {WHERE} are not supported (use a for/while loop)",
                    b.ops[-1],
                )
            if e.dst not in state:
                self._visit(ctx, e.dst, terminator, state)
        state[b] = "done"
        self.order.append(b)

    def _on_every_path(self, b: Block) -> bool:
        """No path from the entry to a return avoids b."""
        if b is self.entry:
            return True
        seen, stack = {b, self.entry}, [self.entry]
        while stack:
            for e in self.out[stack.pop()]:
                if e.dst is None:
                    return False
                if e.dst not in seen:
                    seen.add(e.dst)
                    stack.append(e.dst)
        return True

    @staticmethod
    def merging(edges: list[Edge]) -> list[Edge]:
        """The edges whose values must be selected at a join: all but the last (the default),
        unless they carry the same values as it."""
        if len(edges) < 2:
            return []
        last = edges[-1]
        return [e for e in edges[:-1] if any(a is not b for a, b in zip(e.args, last.args))]

    def _needs(self) -> None:
        """A block's mask is needed by its masked ops or an edge mask; an edge's mask to select
        values at a join or to make its destination's mask. Successors first."""
        self.need_edge.update(self.merging(self.exits))
        for b in reversed(self.order):
            if b not in self.always and (reads_mask(b) or any(e in self.need_edge for e in self.out[b])):
                self.need_block.add(b)
                self.need_edge.update(self.into[b])
            self.need_edge.update(self.merging(self.into.get(b, [])))


def block_edges(ctx, block: Block, terminator: str) -> list[Edge]:
    term = block.ops[-1] if block.ops else None
    if term is None:
        raise ctx.error(f"an empty block inside {WHERE}")
    if term.name == terminator:
        return [Edge(block, None, None, True, tuple(term.operands))]
    if term.name == "cf.br":
        return [Edge(block, term.successors[0], None, True, tuple(term.operands))]
    if term.name == "cf.cond_br":
        t, f = term.successors
        cond, rest = term.operands[0], term.operands[1:]
        seg = term.attrs.get("operandSegmentSizes")
        nt = int(seg.values[1]) if seg is not None else len(t.args)
        return [
            Edge(block, t, cond, True, tuple(rest[:nt])),
            Edge(block, f, cond, False, tuple(rest[nt : nt + len(f.args)])),
        ]
    raise ctx.error(f"a block of {WHERE} ends with {term.name}, not a branch or {terminator}", term)


def run_cfg(ctx, blocks: list[Block], args, lanes, mask, terminator: str) -> list:
    """Run a region of one or more blocks on the lanes (`mask`: the lanes that run it); the
    bindings of the values it returns, one per lane."""
    cfg = Cfg(ctx, blocks[0], terminator)
    masks, edge_masks, negated = {}, {}, {}
    for b in cfg.order:
        if b is cfg.entry:
            values = list(args)
        else:
            values = join(ctx, cfg.into[b], edge_masks, [a.type for a in b.args], lanes, b.args)
        for a, v in zip(b.args, values):
            ctx.bind(a, v)
        if b in cfg.always:
            masks[b] = mask
        elif b in cfg.need_block:
            masks[b] = mask_or(ctx, [edge_masks[e] for e in cfg.into[b]], lanes)
        else:
            masks[b] = None  # nothing in b or after it reads b's mask
        lower_body(ctx, b, lanes, masks[b])
        for e in cfg.out[b]:
            if e in cfg.need_edge:
                edge_masks[e] = edge_mask(ctx, masks[b], e, lanes, negated)
    types = [v.type for v in cfg.exits[0].args]
    return join(ctx, cfg.exits, edge_masks, types, lanes, None)


def edge_mask(ctx, src_mask, e: Edge, lanes, negated: dict) -> View | None:
    if e.cond is None:
        return src_mask
    cond = mask_of(ctx, e.cond, lanes)
    if not e.sense:
        if e.cond not in negated:
            negated[e.cond] = mask_not(ctx, cond, lanes)
        cond = negated[e.cond]
    return mask_and(ctx, src_mask, cond, lanes)


def join(ctx, edges: list[Edge], edge_masks: dict, types, lanes, owners) -> list:
    """The values arriving over `edges` (which exclude each other): per lane, the one of the edge
    that lane took. The last edge is the default; the others are selected by their masks."""
    if len({len(e.args) for e in edges}) > 1:
        raise ctx.error(f"the returns of {WHERE} return different numbers of values")
    default, merging = edges[-1], Cfg.merging(edges)
    out = []
    for j, t in enumerate(types):
        picks = [e for e in merging if e.args[j] is not default.args[j]]
        base = ctx.binding(default.args[j])
        if not picks:
            out.append(base)
            continue
        dtype = dtype_of(t)
        base = ctx.as_view(base, dtype, lanes)
        dst = ctx.new(dtype, lanes, owner=owners[j] if owners else None, what=f"joined value {t}")
        for e in picks:
            ctx.vec("v.select", dst, edge_masks[e], ctx.as_view(ctx.binding(e.args[j]), dtype, lanes), base)
            base = dst
        out.append(dst)
    return out


RULES = {"tt.map_elementwise": _lower_tt_map_elementwise}
