"""demand: what the code generator must compute, given how each memory op is lowered.

Access analysis decides, per tt.load / tt.store, whether it is a strided DMA (its addresses and
bounds are scalar expressions) or a gather/scatter (it needs the pointer and mask tensors). This
analysis walks backwards from the ops with effects (stores, atomics, prints, branches ...) and
marks the values each one really reads: for a strided access only the scalars of its
expressions, so the pointer tensors feeding it are never materialised. A loop-carried pointer
tensor whose accesses are all strided travels as scalar companion registers (`carried`) instead
of an SRAM tile. Ops inside combine regions (tt.reduce, tt.scan) are lowered with their op.

Result: `Demand.live` (ops to lower), `Demand.needed` (values someone reads), `Demand.strided`
(memory op -> StructuredAccess), `Demand.companions` (scf.for -> {iter_arg: CarriedPointer}).
`last_uses` says at which op each value dies (codegen reuses a dying operand's tile in place)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.core import Op, PtrType, TensorType, Value
from ..ir.vocabulary import OPS
from . import access
from .affine import Carried, Select, Val, atoms

# ops demanded for their own sake: they write memory, print, assert, synchronise or leave the block
EFFECTS = frozenset(name for name, op in OPS.items() if op.writes or op.effect)
STRUCTURED_OPS = ("tt.load", "tt.store")
# ops whose regions are a function the op applies (combine, map): codegen lowers the region with the
# op, so every op inside runs when the op does
OPAQUE_REGIONS = frozenset(name for name, op in OPS.items() if op.region in ("combine", "elementwise"))


@dataclass
class Demand:
    live: set = field(default_factory=set)
    needed: set = field(default_factory=set)
    strided: dict = field(default_factory=dict)
    companions: dict = field(default_factory=dict)  # scf.for op -> {arg: CarriedPointer}
    tensor_args: set = field(default_factory=set)  # scf.for iter args carried as tensors/records


def _strided_access(op: Op):
    ptr_t = op.operands[0].type
    if isinstance(ptr_t, PtrType) and isinstance(ptr_t.pointee, TensorType):
        return None  # block pointers: records of registers already (rules_memory)
    acc = access.analyze(op)
    if not isinstance(acc, access.StructuredAccess) or isinstance(acc.other, Value):
        return None
    return acc


def analyze(func: Op) -> Demand:
    d = Demand()
    parent, def_op, loops = {}, {}, {}

    def visit(op, up):
        parent[op] = up
        for r in op.results:
            def_op[r] = op
        for region in op.regions:
            for b in region.blocks:
                for a in b.args:
                    def_op.setdefault(a, None)
                for o in b.ops:
                    visit(o, op)

    visit(func, None)
    for op in func.walk():
        if op.name in STRUCTURED_OPS:
            acc = _strided_access(op)
            if acc is not None:
                d.strided[op] = acc
        if op.name == "scf.for":
            loops[op] = access.carried_pointers(op)
    arg_owner = {}
    for op in func.walk():
        for i, region in enumerate(op.regions):
            for b in region.blocks:
                for j, a in enumerate(b.args):
                    arg_owner[a] = (op, i, j, b)
    work: list = []

    def need(v):
        if v is not None and v not in d.needed:
            d.needed.add(v)
            work.append(v)

    def need_expr(e, op):
        for n in atoms(e):
            if isinstance(n, Val):
                need(n.value)
            elif isinstance(n, Select):
                need(n.cond)
            elif isinstance(n, Carried):
                companion(n.arg)

    def companion(arg):
        loop = arg_owner[arg][0]
        cp = loops[loop][arg]
        if arg not in d.companions.setdefault(loop, {}):
            d.companions[loop][arg] = cp
            for e in (*cp.init, *cp.step):
                need_expr(e, loop)
            make_live(loop)

    def make_live(op):
        while op is not None and op is not func and op not in d.live:
            d.live.add(op)
            inputs(op)
            op = parent.get(op)

    def inputs(op):
        if op in d.strided:
            acc = d.strided[op]
            for e in (acc.base, acc.offset, *acc.strides, *acc.lo, *acc.hi):
                if e is not None:
                    need_expr(e, op)
            if op.name == "tt.store":
                need(op.operands[1])
            return
        if op.name == "scf.for":  # iter args are needed one by one (_need_iter)
            for v in op.operands[:3]:
                need(v)
            return
        for v in op.operands:
            need(v)
        if op.name in ("scf.if", "scf.while"):  # every result / block argument is carried
            for region in op.regions:
                for b in region.blocks:
                    if b.ops:
                        d.live.add(b.ops[-1])
                        for v in b.ops[-1].operands:
                            need(v)
        if op.name in OPAQUE_REGIONS:
            for inner in op.walk():
                if inner is not op:
                    d.live.add(inner)
                    for v in inner.operands:
                        need(v)

    for op in func.walk():
        if op.name in EFFECTS or _volatile(op):
            make_live(op)
    while work:
        v = work.pop()
        op = def_op.get(v)
        if op is not None:
            make_live(op)
            if op.name == "scf.for":
                _need_iter(d, op, op.results.index(v), need)
            continue
        owner = arg_owner.get(v)
        if owner is None:
            continue
        loop, _, j, _ = owner
        if loop.name == "scf.for" and j > 0:
            _need_iter(d, loop, j - 1, need)
        if loop is not func:
            make_live(loop)
    # the nested functions reach each other (and visit itself) through closure cells: a reference cycle per
    # call, holding every op and value of the maps above, that only Python's cycle collector would free.
    # Emptying the cells lets reference counting free it all on return.
    visit = need = need_expr = companion = make_live = inputs = None  # noqa: F811 (the cells, not new names)
    return d


def _volatile(op: Op) -> bool:
    """A volatile load is an effect: a spin wait reads memory that someone else writes."""
    return op.name == "tt.load" and bool(getattr(op.attrs.get("isVolatile"), "value", False))


def _need_iter(d: Demand, loop: Op, j: int, need) -> None:
    """Iter arg j of an scf.for is carried: its init and its yielded value are needed."""
    arg = loop.regions[0].blocks[0].args[j + 1]
    if arg in d.tensor_args:
        return
    d.tensor_args.add(arg)
    need(arg)
    need(loop.results[j])
    need(loop.operands[3 + j])
    need(loop.regions[0].blocks[0].ops[-1].operands[j])


# ---- last uses: which values die at which op (codegen's in-place reuse) ----------------------------
def last_uses(func: Op) -> tuple[dict, set]:
    """op -> values whose last use (in their defining block) is that op; and the unused values.
    A value used from another block of a multi-block region never dies."""
    def_block, parent_of, position = {}, {}, {}

    def visit(block, parent_op):
        for a in block.args:
            def_block[a] = block
        for i, op in enumerate(block.ops):
            parent_of[op] = (block, parent_op)
            position[op] = i
            for r in op.results:
                def_block[r] = block
            for region in op.regions:
                for b in region.blocks:
                    parent_of[b] = op
                    visit(b, op)

    for b in func.regions[0].blocks:
        visit(b, func)
    visit = None  # recursive through its own closure cell: a reference cycle (analyze)

    def enclosing(op, block):
        """The op of `block` that contains `op` (or op itself), or None."""
        while op is not None and op is not func:
            blk, parent = parent_of[op]
            if blk is block:
                return op
            op = parent
        return None

    last, immortal, used = {}, set(), set()
    for op in func.walk():
        if op is func:
            continue
        for v in op.operands:
            used.add(v)
            blk = def_block.get(v)
            top = enclosing(op, blk) if blk is not None else None
            if top is None:
                immortal.add(v)
                continue
            pos = position[top]
            if v not in last or pos > last[v][0]:
                last[v] = (pos, top)
    dies: dict = {}
    for v, (_, op) in last.items():
        if v not in immortal:
            dies.setdefault(op, set()).add(v)
    unused = set(def_block) - used
    return dies, unused
