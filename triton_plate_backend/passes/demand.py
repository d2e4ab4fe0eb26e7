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
    return _Analysis(func).run()


def _index(op: Op, up: Op | None, parent: dict, def_op: dict) -> None:
    """parent[op] for op and every op nested in it; def_op[v]: the op defining v (None for a block argument)."""
    parent[op] = up
    for r in op.results:
        def_op[r] = op
    for region in op.regions:
        for b in region.blocks:
            for a in b.args:
                def_op.setdefault(a, None)
            for o in b.ops:
                _index(o, op, parent, def_op)


class _Analysis:
    """One run of `analyze`: its tables and the walk back from the effects. (Methods, not closures of
    `analyze`: closures that call each other make reference cycles, which would keep the tables, and
    the IR they name, until the cycle collector's next walk.)"""

    def __init__(self, func: Op):
        self.func, self.d = func, Demand()
        self.parent, self.def_op, self.loops, self.arg_owner = {}, {}, {}, {}
        self.work: list = []

    def run(self) -> Demand:
        func, d, loops, arg_owner = self.func, self.d, self.loops, self.arg_owner
        _index(func, None, self.parent, self.def_op)
        for op in func.walk():
            if op.name in STRUCTURED_OPS:
                acc = _strided_access(op)
                if acc is not None:
                    d.strided[op] = acc
            if op.name == "scf.for":
                loops[op] = access.carried_pointers(op)
        for op in func.walk():
            for i, region in enumerate(op.regions):
                for b in region.blocks:
                    for j, a in enumerate(b.args):
                        arg_owner[a] = (op, i, j, b)
        for op in func.walk():
            if op.name in EFFECTS or _volatile(op):
                self.make_live(op)
        work, def_op, need = self.work, self.def_op, self.need
        while work:
            v = work.pop()
            op = def_op.get(v)
            if op is not None:
                self.make_live(op)
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
                self.make_live(loop)
        return d

    def need(self, v):
        needed = self.d.needed
        if v is not None and v not in needed:
            needed.add(v)
            self.work.append(v)

    def need_expr(self, e, op):
        for n in atoms(e):
            if isinstance(n, Val):
                self.need(n.value)
            elif isinstance(n, Select):
                self.need(n.cond)
            elif isinstance(n, Carried):
                self.companion(n.arg)

    def companion(self, arg):
        d = self.d
        loop = self.arg_owner[arg][0]
        cp = self.loops[loop][arg]
        if arg not in d.companions.setdefault(loop, {}):
            d.companions[loop][arg] = cp
            for e in (*cp.init, *cp.step):
                self.need_expr(e, loop)
            self.make_live(loop)

    def make_live(self, op):
        func, live, parent = self.func, self.d.live, self.parent
        while op is not None and op is not func and op not in live:
            live.add(op)
            self.inputs(op)
            op = parent.get(op)

    def inputs(self, op):
        d, need = self.d, self.need
        if op in d.strided:
            acc = d.strided[op]
            for e in (acc.base, acc.offset, *acc.strides, *acc.lo, *acc.hi):
                if e is not None:
                    self.need_expr(e, op)
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
def _define(block, def_block: dict) -> None:
    """Each value's defining block: the block's arguments and its ops' results, nested blocks too."""
    for a in block.args:
        def_block[a] = block
    for op in block.ops:
        for r in op.results:
            def_block[r] = block
        for region in op.regions:
            for b in region.blocks:
                _define(b, def_block)


def _uses(block, at: dict, def_block: dict, last: dict, immortal: set, used: set) -> None:
    """The uses in the block's ops, nested ones too (`last_uses`; a function of its own, not a closure that calls
    itself: that would leave a cycle for the collector at every compile). `at`: block -> its op the walk is in,
    for the blocks around the op walked only: a use's defining block is one of them (then that op is where the
    use sits in it) or the value never dies; the walk meets a block's ops in order, so the latest is the last."""
    for op in block.ops:
        at[block] = op
        for v in op.operands:
            used.add(v)
            top = at.get(def_block.get(v))
            if top is None:
                immortal.add(v)
            else:
                last[v] = top
        for region in op.regions:
            for b in region.blocks:
                _uses(b, at, def_block, last, immortal, used)
    at.pop(block, None)


def last_uses(func: Op) -> tuple[dict, set]:
    """op -> values whose last use (in their defining block) is that op; and the unused values.
    A value used from another block of a multi-block region never dies."""
    def_block: dict = {}
    for b in func.regions[0].blocks:
        _define(b, def_block)
    last, immortal, used, at = {}, set(), set(), {}
    for region in func.regions:
        for b in region.blocks:
            _uses(b, at, def_block, last, immortal, used)
    dies: dict = {}
    for v, op in last.items():
        if v not in immortal:
            dies.setdefault(op, set()).add(v)
    unused = set(def_block) - used
    return dies, unused
