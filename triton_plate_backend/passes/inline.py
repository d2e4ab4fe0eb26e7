"""inline: replace every tt.call of a function of the module by a copy of its body.

Triton's own inliner already inlined everything but `noinline=True` functions; PLATE has no
call instruction, so plate inlines those too (innermost calls first, as many rounds as the call
depth). A callee with several blocks (early returns) or a recursive call cannot be inlined: the
call stays and codegen rejects it with the kernel's source line. Functions no longer called are
dropped from the module."""

from __future__ import annotations

from ..errors import CompileError
from ..ir.core import Block, Module, Op, Region, Value

MAX_DEPTH = 32


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


def _inline_call(call: Op, callee: Op) -> list[Op] | None:
    """Ops replacing `call`, or None when the callee cannot be inlined."""
    blocks = callee.regions[0].blocks
    if len(blocks) != 1 or not blocks[0].ops or blocks[0].ops[-1].name != "tt.return":
        return None
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
    funcs = {_name(f): f for f in module.functions()}
    kernel = module.kernel()
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
