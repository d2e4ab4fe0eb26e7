"""inline: replace every tt.call of a function of the module by a copy of its body.

Triton's own inliner already inlined everything but `noinline=True` functions; PLATE has no
call instruction, so plate inlines those too (innermost calls first, as many rounds as the call
depth). A callee with several blocks (an early return: `if c: return a` becomes cf.cond_br) is
inlined as nested scf.if when its branches form no loop, each block copied on every path that
reaches it. A recursive call, or a callee with a loop of branches, cannot be inlined: the call
stays and codegen rejects it with the kernel's source line. Functions no longer called are
dropped from the module."""

from __future__ import annotations

from ..errors import CompileError
from ..ir.core import Block, Module, Op, Region, Value, new_op

MAX_DEPTH = 32
MAX_STRUCTURED_OPS = 4096  # ops copied when a branchy callee becomes nested scf.if (paths duplicate blocks)


def _name(func: Op) -> str:
    return getattr(func.attrs.get("sym_name"), "value", "")


def _clone_block(block: Block, vmap: dict, into: Block | None = None) -> Block:
    out = into or Block(args=[])
    if into is None:
        for a in block.args:
            na = Value(a.type, a.name)
            out.args.append(na)
            vmap[a] = na
    for op in block.ops:
        out.append(_clone_op(op, vmap))
    return out


def _clone_op(op: Op, vmap: dict) -> Op:
    new = Op(op.name, [vmap.get(v, v) for v in op.operands], [], dict(op.attrs), [], op.loc)
    for i, r in enumerate(op.results):
        nr = Value(r.type, r.name, owner=new, index=i)
        new.results.append(nr)
        vmap[r] = nr
    for region in op.regions:
        nreg = Region(blocks=[], parent=new)
        bmap = {}
        for b in region.blocks:
            nb = Block(args=[], parent=nreg)
            for a in b.args:
                na = Value(a.type, a.name)
                nb.args.append(na)
                vmap[a] = na
            bmap[b] = nb
            nreg.blocks.append(nb)
        for b in region.blocks:
            for o in b.ops:
                bmap[b].append(_clone_op(o, vmap))
        for nb in nreg.blocks:
            for o in nb.ops:
                o.successors = [bmap.get(s, s) for s in o.successors]
        new.regions.append(nreg)
    new.successors = list(op.successors)
    return new


class _Unstructured(Exception):
    """The callee's branches loop, end in something else than tt.return, or copy too many ops."""


def _structured(block: Block, args, vmap: dict, results: tuple, budget: list) -> tuple[list[Op], list]:
    """Ops running ``block`` (with ``args`` for its arguments) to the callee's tt.return, branches
    as nested scf.if yielding the returned values; and those values."""
    vmap = {**vmap, **dict(zip(block.args, args))}
    budget[0] -= len(block.ops)
    if budget[0] < 0 or not block.ops:
        raise _Unstructured
    ops = [_clone_op(op, vmap) for op in block.ops[:-1]]
    term = block.ops[-1]
    operands = [vmap.get(v, v) for v in term.operands]
    if term.name == "tt.return":
        return ops, operands
    if term.name == "cf.br":
        more, returned = _structured(term.successors[0], operands, vmap, results, budget)
        return ops + more, returned
    if term.name != "cf.cond_br":
        raise _Unstructured
    n_true = term.attrs["operandSegmentSizes"].values[1]
    arms = []
    for succ, succ_args in zip(term.successors, (operands[1 : 1 + n_true], operands[1 + n_true :])):
        body, returned = _structured(succ, succ_args, vmap, results, budget)
        arm = Block(args=[])
        for op in body:
            arm.append(op)
        arm.append(new_op("scf.yield", returned, loc=term.loc))
        arms.append(Region(blocks=[arm]))
    branch = new_op("scf.if", [operands[0]], results, regions=arms, loc=term.loc)
    for arm in arms:
        arm.blocks[0].parent = arm
    return [*ops, branch], list(branch.results)


def _loops(blocks: list[Block]) -> bool:
    """True when some branch path returns to a block it left (a cycle of successors)."""
    state: dict = {}

    def visit(b: Block) -> bool:
        state[b] = 1
        for s in b.ops[-1].successors if b.ops else []:
            if state.get(s) == 1 or (s not in state and visit(s)):
                return True
        state[b] = 2
        return False

    return visit(blocks[0])


def _inline_call(call: Op, callee: Op) -> list[Op] | None:
    """Ops replacing `call`, or None when the callee cannot be inlined."""
    blocks = callee.regions[0].blocks
    if not blocks or not blocks[0].ops:
        return None
    if len(blocks) != 1 or blocks[0].ops[-1].name != "tt.return":
        if _loops(blocks):
            return None
        results = tuple(callee.attrs["function_type"].type.results)
        try:
            body, returned = _structured(blocks[0], call.operands, {}, results, [MAX_STRUCTURED_OPS])
        except _Unstructured:
            return None
    else:
        vmap = dict(zip(blocks[0].args, call.operands))
        body = [_clone_op(op, vmap) for op in blocks[0].ops[:-1]]
        returned = [vmap.get(v, v) for v in blocks[0].ops[-1].operands]
    if len(returned) != len(call.results):
        raise CompileError(
            f"tt.call at {call.loc}: {_name(callee)} returns {len(returned)} values, the call expects "
            f"{len(call.results)}"
        )
    return body, dict(zip(call.results, returned))


def _replace_uses(root_ops, mapping: dict) -> None:
    for top in root_ops:
        for op in top.walk():
            if any(v in mapping for v in op.operands):
                op.operands = [mapping.get(v, v) for v in op.operands]


def _blocks(op: Op):
    for region in op.regions:
        for b in region.blocks:
            yield b
            for o in b.ops:
                yield from _blocks(o)


def _inline_block(block: Block, funcs: dict, func: Op, mapping: dict) -> bool:
    changed, ops = False, []
    for op in block.ops:
        callee = funcs.get(getattr(op.attrs.get("callee"), "name", "")) if op.name == "tt.call" else None
        done = _inline_call(op, callee) if callee is not None and callee is not func else None
        if done is None:
            ops.append(op)
            continue
        body, results = done
        for b in body:
            b.parent = block
        ops.extend(body)
        mapping.update(results)
        changed = True
    block.ops = ops
    return changed


def run(module: Module) -> Module:
    kernel = module.kernel()  # (first: a module without a public tt.func raises as before)
    if _nothing_to_inline(module, kernel):
        return module
    funcs = {_name(f): f for f in module.functions()}
    for _ in range(MAX_DEPTH):
        changed = False
        for func in module.functions():
            mapping: dict = {}
            for block in list(_blocks(func)):
                changed |= _inline_block(block, funcs, func, mapping)
            if mapping:  # a callee may return one of its arguments: follow chains
                for k, v in mapping.items():
                    while v in mapping:
                        v = mapping[v]
                    mapping[k] = v
                _replace_uses([func], mapping)
        if not changed:
            break
    called = {getattr(op.attrs.get("callee"), "name", "") for op in kernel.walk() if op.name == "tt.call"}
    module.ops = [op for op in module.ops if op.name != "tt.func" or op is kernel or _name(op) in called]
    return module


def _nothing_to_inline(module: Module, kernel: Op) -> bool:
    """The kernel is the module's one function and calls nothing: `run` would leave every op where it is (all but
    one of 1826 test_core kernels), so it returns at once instead of rebuilding each block's op list."""
    if len(module.functions()) != 1:
        return False
    for op in kernel.walk():
        if op.name == "tt.call":
            return False
    return True
