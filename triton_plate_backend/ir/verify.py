"""Structural verifier for plate IR: what every pass may assume and must preserve.

Checks: parent links; every operand defined before its use (in its block, an enclosing block,
or a dominating block of a multi-block region), never across an isolated op (`tt.func`);
terminators last in their block and present where a region needs one; successors inside the
same region with matching argument counts; the region contracts of scf.for / scf.if / scf.while
/ tt.reduce / tt.scan / tt.func (block arguments, terminator operands, result counts and types);
operand/result counts and the parent op of every op in the vocabulary. Terminators, isolated ops,
counts, parents and region kinds are `vocabulary.OPS` facts; the rules for each region kind are
here (`REGION_RULES`). Raises `IrVerifyError` naming op and location.
"""

from __future__ import annotations

from ..errors import PlateError
from .core import Block, FunctionType, Module, Op, Region, Type, TypeAttr, Value, element_type
from .vocabulary import ISOLATED, OPS, TERMINATORS, region_terminators

try:
    from ._irwalk import sound as _sound
except ImportError:  # not built (setup.py build_ext), or built before it: the Python walk alone
    _sound = None


class IrVerifyError(PlateError):
    """plate IR breaks a structural rule; names the op, its source location and the rule."""


def _fail(op: Op, message: str) -> IrVerifyError:
    where = f" at {op.loc}" if op.loc is not None else ""
    return IrVerifyError(f"{op.name}{where}: {message}")


def _types(values: list[Value]) -> list[Type]:
    return [v.type for v in values]


def _terminator(op: Op, region: Region, names: tuple[str, ...]) -> Op:
    if not region.blocks or not region.blocks[-1].ops:
        raise _fail(op, f"region must end with {' or '.join(names)}, but it is empty")
    last = region.blocks[-1].ops[-1]
    if last.name not in names:
        raise _fail(op, f"region must end with {' or '.join(names)}, not {last.name}")
    return last


def _regions(op: Op, n: int) -> None:
    if len(op.regions) != n:
        raise _fail(op, f"has {len(op.regions)} region(s), expected {n}")


def _single_block(op: Op, region: Region) -> Block:
    if len(region.blocks) != 1:
        raise _fail(op, f"region must have one block, has {len(region.blocks)}")
    return region.blocks[0]


def _same(op: Op, what: str, got: list[Type], want: list[Type]) -> None:
    if list(got) != list(want):
        raise _fail(op, f"{what}: {[str(t) for t in got]} != {[str(t) for t in want]}")


def _check_for(op: Op) -> None:
    _regions(op, 1)
    body = _single_block(op, op.regions[0])
    inits = op.operands[3:]
    _same(op, "iter_args vs results", _types(inits), _types(op.results))
    _same(op, "body arguments vs (iv, iter_args)", _types(body.args), [op.operands[0].type] + _types(inits))
    _same(
        op,
        "scf.yield operands vs results",
        _types(_terminator(op, op.regions[0], ("scf.yield",)).operands),
        _types(op.results),
    )


def _check_if(op: Op) -> None:
    _regions(op, 2)
    for k, region in enumerate(op.regions):
        if not region.blocks:
            if k == 0 or op.results:
                raise _fail(op, "an scf.if with results needs both regions")
            continue
        block = _single_block(op, region)
        if block.args:
            raise _fail(op, "scf.if regions take no arguments")
        _same(
            op,
            "scf.yield operands vs results",
            _types(_terminator(op, region, ("scf.yield",)).operands),
            _types(op.results),
        )


def _check_while(op: Op) -> None:
    _regions(op, 2)
    before, after = op.regions
    _same(
        op,
        "before-region arguments vs initial values",
        _types(before.blocks[0].args if before.blocks else []),
        _types(op.operands),
    )
    cond = _terminator(op, before, ("scf.condition",))
    _same(op, "scf.condition values vs results", _types(cond.operands[1:]), _types(op.results))
    _same(
        op,
        "after-region arguments vs results",
        _types(after.blocks[0].args if after.blocks else []),
        _types(op.results),
    )
    _same(
        op,
        "scf.yield operands vs initial values",
        _types(_terminator(op, after, ("scf.yield",)).operands),
        _types(op.operands),
    )


def _check_combine(op: Op) -> None:
    """One region: entry arguments (a..., b...) of the operands' element types; every block that
    returns (a region may branch between blocks) returns those types."""
    (ret,) = region_terminators(op.name)
    _regions(op, 1)
    region = op.regions[0]
    n = len(op.operands)
    if len(op.results) != n:
        raise _fail(op, f"{n} operand(s) but {len(op.results)} result(s)")
    returns = [b.ops[-1] for b in region.blocks if b.ops and b.ops[-1].name == ret]
    if not returns:
        raise _fail(op, f"region must end with {ret}")
    elems = [element_type(v.type) for v in op.operands]
    _same(op, "combine arguments", _types(region.blocks[0].args), elems + elems)
    for r in returns:
        _same(op, f"{ret} operands", _types(r.operands), elems)


def _check_func(op: Op) -> None:
    ftype = op.attrs.get("function_type")
    if not (isinstance(ftype, TypeAttr) and isinstance(ftype.type, FunctionType)):
        raise _fail(op, "tt.func needs a function_type attribute (TypeAttr of FunctionType)")
    if not op.regions or not op.regions[0].blocks:
        return  # a declaration
    _same(op, "entry block arguments vs signature", _types(op.regions[0].blocks[0].args), list(ftype.type.inputs))
    for block in op.regions[0].blocks:
        last = block.ops[-1] if block.ops else None
        if last is not None and last.name == "tt.return":
            _same(op, "tt.return operands vs signature", _types(last.operands), list(ftype.type.results))


# region kind (vocabulary.REGION_KINDS) -> its contract; "module" and "elementwise" have none beyond
# the structural checks every region gets
REGION_RULES = {
    "loop": _check_for,
    "branches": _check_if,
    "while": _check_while,
    "combine": _check_combine,
    "function": _check_func,
}


def _count(what: str, n: int, lo: int, hi: int | None) -> str | None:
    if lo <= n and (hi is None or n <= hi):
        return None
    expected = str(lo) if lo == hi else f"{lo}..{hi if hi is not None else 'any'}"
    return f"has {n} {what}(s), expected {expected}"


def _dominators(region: Region) -> list[set[int]]:
    """Dominator sets of a multi-block region (block 0 is the entry). As in MLIR, every block
    dominates an unreachable one, so uses there never fail the check."""
    index = {id(b): k for k, b in enumerate(region.blocks)}
    succs: list[list[int]] = [
        [index[id(s)] for s in b.ops[-1].successors if id(s) in index] if b.ops else [] for b in region.blocks
    ]
    reachable, stack = {0}, [0]
    while stack:
        for s in succs[stack.pop()]:
            if s not in reachable:
                reachable.add(s)
                stack.append(s)
    preds: list[set[int]] = [set() for _ in region.blocks]
    for k in reachable:
        for s in succs[k]:
            preds[s].add(k)
    everything = set(range(len(region.blocks)))
    dom = [{0}] + [set(everything) for _ in region.blocks[1:]]
    changed = True
    while changed:
        changed = False
        for k in sorted(reachable - {0}):
            new = {k} | set.intersection(*(dom[p] for p in preds[k]))
            if new != dom[k]:
                dom[k], changed = new, True
    return dom


class _Verifier:
    def op(self, op: Op, visible: set[Value]) -> None:
        for v in op.operands:
            if v not in visible:
                raise _fail(op, f"operand %{v.name or v.id} ({v.type}) is not defined before this use")
        for k, r in enumerate(op.results):
            if r.owner is not op or r.index != k:
                raise _fail(op, f"result {k} (%{r.name}) does not point back to its op")
        known = OPS.get(op.name)  # ops outside the vocabulary are codegen's to reject
        if known is not None:  # (the counts compared here: `_count` words the problem)
            (lo, hi), n = known.operands, len(op.operands)
            if n < lo or (hi is not None and n > hi):
                raise _fail(op, _count("operand", n, lo, hi))
            (lo, hi), n = known.results, len(op.results)
            if n < lo or (hi is not None and n > hi):
                raise _fail(op, _count("result", n, lo, hi))
        inner = set() if op.name in ISOLATED else visible
        for region in op.regions:
            if region.parent is not op:
                raise _fail(op, "a region does not point back to its op")
            self.region(op, region, inner)
        rule = REGION_RULES.get(known.region) if known is not None else None
        if rule is not None:
            rule(op)

    def region(self, owner: Op, region: Region, visible: set[Value]) -> None:
        blocks = region.blocks
        if len(blocks) <= 1:
            for block in blocks:
                self.block(block, region, visible)
            return
        dom = _dominators(region)
        defs = [set(b.args).union(*(o.results for o in b.ops)) for b in blocks]
        for k, block in enumerate(blocks):
            if not block.ops or block.ops[-1].name not in TERMINATORS:
                raise _fail(owner, f"block {k} of a multi-block region does not end with a terminator")
            seen = set(visible)
            for d in dom[k] - {k}:
                seen |= defs[d]
            self.block(block, region, seen)

    def block(self, block: Block, region: Region, visible: set[Value]) -> None:
        if block.parent is not region:
            raise IrVerifyError("a block does not point back to its region")
        seen = set(visible)
        seen.update(block.args)
        last = len(block.ops) - 1
        for k, op in enumerate(block.ops):
            if op.parent is not block:
                raise _fail(op, "does not point back to its block")
            if op.name in TERMINATORS and k != last:
                raise _fail(op, "a terminator must be the last op of its block")
            known = OPS.get(op.name)
            parents = known.parents if known is not None else ()
            if parents and region.parent.name not in parents:
                raise _fail(op, f"stands in a region of {region.parent.name}; it belongs in {' or '.join(parents)}")
            self.op(op, seen)
            for succ in op.successors:
                self._successor(op, succ, region)
            seen.update(op.results)
        if block.ops and block.ops[-1].successors:
            self._successor_args(block.ops[-1])

    def _successor(self, op: Op, succ: Block, region: Region) -> None:
        if succ.parent is not region:
            raise _fail(op, "branches to a block outside its own region")

    def _successor_args(self, op: Op) -> None:
        seg = op.attrs.get("operandSegmentSizes")
        if op.name == "cf.cond_br" and seg is not None:
            groups = [op.operands[1 : 1 + seg.values[1]], op.operands[1 + seg.values[1] :]]
        elif len(op.successors) == 1:
            groups = [op.operands]
        else:
            return
        for succ, args in zip(op.successors, groups):
            _same(op, "successor arguments vs block arguments", _types(args), _types(succ.args))


# name -> (operands min, max or -1, results min, max or -1, parents, region rule or None): what `_Verifier` reads of
# OPS and REGION_RULES, as the compiled check (`_irwalk.sound`) reads it
_FACTS = {
    name: (
        d.operands[0],
        -1 if d.operands[1] is None else d.operands[1],
        d.results[0],
        -1 if d.results[1] is None else d.results[1],
        tuple(d.parents),
        REGION_RULES.get(d.region),
    )
    for name, d in OPS.items()
}


def verify(ir: Module | Op) -> None:
    """Raise IrVerifyError on the first structural problem; return None when the IR is sound.

    Where ir/_irwalk is built, `sound` makes `_Verifier`'s checks in C first (the region contracts through the
    functions above) and answers True only where they find nothing; anything it leaves (a region of several blocks,
    a branch to a block) or finds wrong goes to `_Verifier`, which raises what it finds."""
    roots = ir.ops if isinstance(ir, Module) else [ir]
    if _sound is not None and _sound(roots, _FACTS, ISOLATED, TERMINATORS):
        return
    v = _Verifier()
    for op in roots:
        v.op(op, set())
