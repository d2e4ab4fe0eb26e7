"""persistent: one program runs several consecutive programs along x, so their loads pipeline.

A streaming kernel written like the tutorials (softmax, layer norm: one row per program) loads,
computes and stores, and a core runs its programs one after another: the DMA latency (~450
cycles a load, as much a store) and the compute sit in series with the transfers, and the
engines idle in turn. This pass wraps the kernel's body in a loop over programs,

    base = pid_x * plate_rows
    for j in [0, min(plate_rows, plate_grid_x - base)):     (plate.programs, num_stages 3)
        <the body, with program_id(x) = base + j and num_programs(x) = plate_grid_x>

two i32 arguments appended to the kernel. `prefetch` pipelines the loop like any other (its
trips are distinct programs, so a load may run ahead of the stores of earlier trips): the next
program's loads are in flight while this one computes and its store drains. The launcher
(`launcher.persistent_grid`) picks plate_rows so the grid fills the cores once (one program per
core: the most trips to pipeline over, no core idle) and launches ceil(grid_x / plate_rows)
programs.

Applies to a kernel whose body is one block ending in a plain tt.return, that reads program_id(x)
and loads at the top level of its body (what the pipeline can run ahead), and that has no matrix
work (a GEMM pipelines its K loop instead), no atomics and no device print or assert (their order
across programs would change). Every other kernel is left as it is."""

from __future__ import annotations

import math

from ..ir.core import (
    ArrayAttr,
    Block,
    EnumAttr,
    FunctionType,
    IntAttr,
    Module,
    Op,
    Region,
    ScalarType,
    TensorType,
    TypeAttr,
    Value,
    new_op,
)
from ..ir.vocabulary import OPS
from ..isa.table import ITEMSIZE
from .context import dtype_of
from .prefetch import PROGRAMS_ATTR

ROWS_ARG, GRID_ARG = "plate_rows", "plate_grid_x"  # the appended arguments, by name (launcher.py)
EXCLUDED = frozenset({"tt.dot", "tt.dot_scaled", "tt.atomic_rmw", "tt.atomic_cas", "tt.print", "tt.assert"})
STAGES = 3  # the loop's num_stages: two programs' loads in flight, computed in place (no copy)
I32 = ScalarType("i32")


def _axis(op: Op) -> str:
    a = op.attrs.get("axis")
    return str(getattr(a, "value", a))


def tensor_bytes(func: Op) -> int:
    """Bytes of every tensor the kernel's ops make: what its buffers take if none were reused."""
    total = 0
    for op in func.walk():
        for r in op.results:
            if isinstance(r.type, TensorType):
                total += math.prod(r.type.shape) * ITEMSIZE.get(dtype_of(r.type), 8)
    return total


def eligible(func: Op, sram_bytes: int) -> bool:
    """The kernel can run as a persistent loop, has loads for the pipeline to run ahead, and its
    tensors fit the SRAM twice over even if no buffer were reused: the loop and what is hoisted out
    of it then always fit (when the pipelined loop's copies of the body do not, codegen lowers the
    loop again unpipelined, see codegen.generate), so the transform never makes a kernel overflow."""
    if 2 * tensor_bytes(func) > sram_bytes:
        return False
    blocks = func.regions[0].blocks
    if len(blocks) != 1 or not blocks[0].ops:
        return False
    body = blocks[0].ops
    last = body[-1]
    if last.name != "tt.return" or last.operands:
        return False
    if any(op.name in EXCLUDED or op.name.startswith("cf.") for op in func.walk()):
        return False
    uses_pid = any(op.name == "tt.get_program_id" and _axis(op) in ("x", "0") for op in func.walk())
    return uses_pid and any(op.name == "tt.load" for op in body)


def _const(value: int, loc) -> Op:
    return new_op("arith.constant", (), (I32,), {"value": IntAttr(value, I32)}, loc=loc)


def run(module: Module, sram_bytes: int) -> Module:
    """Rewrite the kernel into a persistent loop when it is eligible (module docstring)."""
    func = module.kernel()
    if not eligible(func, sram_bytes):
        return module
    entry = func.regions[0].blocks[0]
    n = len(entry.args)
    rows, grid = Value(I32, ROWS_ARG, owner=entry, index=n), Value(I32, GRID_ARG, owner=entry, index=n + 1)
    entry.args += [rows, grid]
    ftype = func.attrs["function_type"].type
    func.attrs["function_type"] = TypeAttr(FunctionType((*ftype.inputs, I32, I32), ftype.results))
    if "arg_attrs" in func.attrs:
        attrs = func.attrs["arg_attrs"]
        func.attrs["arg_attrs"] = ArrayAttr((*attrs.values, {}, {}), attrs.element)
    ops, ret = entry.ops[:-1], entry.ops[-1]
    loc = func.loc
    pid = new_op("tt.get_program_id", (), (I32,), {"axis": EnumAttr("x")}, loc=loc)
    base = new_op("arith.muli", (pid.result, rows), (I32,), loc=loc)
    left = new_op("arith.subi", (grid, base.result), (I32,), loc=loc)
    ub = new_op("arith.minsi", (rows, left.result), (I32,), loc=loc)
    zero, one = _const(0, loc), _const(1, loc)
    body = Block(args=[])
    j = Value(I32, "program", owner=body, index=0)
    body.args.append(j)
    row = new_op("arith.addi", (base.result, j), (I32,), loc=loc)
    body.append(row)
    grid_ops = {"tt.get_program_id": row.result, "tt.get_num_programs": grid}
    along_x = [op for o in ops for op in o.walk() if op.name in grid_ops and _axis(op) in ("x", "0")]
    for op in along_x:  # at any depth: one inside an scf.if reads the grid asked for too
        _replace(op, grid_ops[op.name], ops)
    _drop(ops, along_x)
    hoisted, varying, stored = [], {row.result}, False
    for op in ops:
        if op in along_x:
            continue
        d = OPS.get(op.name)
        stored = stored or d is None or bool(d.writes or d.effect)
        reads = {v for inner in op.walk() for v in inner.operands}
        if _invariant(op, d, reads, varying, stored):
            hoisted.append(op)  # the same in every program: computed (or loaded) once
        else:
            varying.update(op.results)
            body.append(op)
    body.append(new_op("scf.yield", (), (), loc=ret.loc))
    attrs = {"tt.num_stages": IntAttr(STAGES, I32), PROGRAMS_ATTR: IntAttr(1, I32)}
    loop = new_op("scf.for", (zero.result, ub.result, one.result), (), attrs, regions=[Region([body])], loc=loc)
    body.parent = loop.regions[0]
    entry.ops = []
    for op in (*hoisted, pid, base, left, ub, zero, one, loop, ret):
        entry.append(op)
    return module


def _invariant(op: Op, d, reads: set, varying: set, stored: bool) -> bool:
    """op computes the same value for every program: no regions, nothing it reads varies, and it
    is pure or a non-volatile load before any store of the body (a program may read what it wrote)."""
    if d is None or op.regions or reads & varying:
        return False
    if d.pure:
        return True
    volatile = bool(getattr(op.attrs.get("isVolatile"), "value", False))
    return op.name == "tt.load" and not stored and not volatile and not d.writes


def _drop(ops: list[Op], dropped: list[Op]) -> None:
    """Remove `dropped` from the blocks of the regions nested in ops (top-level ones are skipped by the caller)."""
    gone = set(map(id, dropped))
    for o in ops:
        for inner in o.walk():
            for region in inner.regions:
                for block in region.blocks:
                    block.ops = [x for x in block.ops if id(x) not in gone]


def _replace(op: Op, new: Value, ops: list[Op]) -> None:
    """Every use of op's result (in ops and their regions) reads `new` instead."""
    old = op.result
    for o in ops:
        for inner in o.walk():
            inner.operands = [new if v is old else v for v in inner.operands]
