"""persistent: one program runs several consecutive programs along x, so their loads pipeline.

A streaming kernel written like the tutorials (softmax, layer norm: one row per program) loads,
computes and stores, and a core runs its programs one after another: the DMA latency (~450
cycles a load, as much a store) and the compute sit in series with the transfers, and the
engines idle in turn. This pass wraps the kernel's body in a loop over programs,

    g, i = pid_x // plate_rows, pid_x % plate_rows        (group g, its i-th launched program)
    a, b = split[g], split[g + 1]                         (split = 0, plate_split1.., plate_grid_x)
    q, r = divmod(b - a, plate_rows)                      (shares of q programs, the first r one more)
    base, end = a + i * q + min(i, r), a + (i + 1) * q + min(i + 1, r)
    for j in [0, end - base):                             (plate.programs, num_stages 3)
        <the body, with program_id(x) = base + j and num_programs(x) = plate_grid_x>

(the four lines before the loop are ONE op in the IR, `plate.program_range`: passes/program_range.py
holds its arithmetic for codegen and the affinity pass), on i32 arguments appended to the kernel: a
launched program runs one contiguous run of programs, its share of its group's, and the groups (one
per domain of the machine, `run`'s `groups`) split the grid where the launcher says. `prefetch`
pipelines the loop like any other (its trips are distinct programs, so a load may run ahead of the
stores of earlier trips): the next program's loads are in flight while this one computes and its
store drains. The launcher (`launcher.PersistentSplit`) makes each group the run of programs the
affinity mapping puts in one domain, split over its cores (one launched program per core: the most
trips to pipeline over), or one group split evenly (`persistent_grid`) when the mapping cannot tell;
and it runs one program per launched program (one group of grid_x launched programs: the kernel as
written) when the cost model says that is faster.

Applies to a kernel whose body is one block ending in a plain tt.return, that reads program_id(x)
and loads at the top level of its body (what the pipeline can run ahead), and that has no matrix
work (a GEMM is flattened, below), no atomics and no device print or assert (their order
across programs would change).

A kernel whose program is one chunk loop (a row reduction, Inductor's looped reductions: the loads
inside the loop) is flattened instead (`flattenable`): the loop over programs and the chunk loop
become ONE loop over every chunk of this launch's programs,

    chunks = trips of the chunk loop (its bounds the same in every program)
    if chunks > 0:
        for t in [0, count * chunks):                 (plate.programs, num_stages 3)
            program, chunk = t / chunks, t - program * chunks
            <the ops before the chunk loop that vary with the program>
            a' = <the chunk loop's body> at lb + chunk * step, on the carried a
            a = scf.if chunk == chunks - 1: <the ops after the loop on a'>; yield the initial values
                else: yield a'
    else:
        the plain loop over programs, the ops after the chunk loop on its initial values

so `prefetch` pipelines one stream: the next program's first chunks are in flight under this
program's last chunks, its reduction and its store (prefetch.derived: the addresses of a later trip
come from its program and chunk). The row's store may then be overtaken by the next row's loads:
the transform is made only when the stores go through pointer arguments the loop does not load
from (`_disjoint`).

A GEMM (tt.dot in its chunk loop, the K loop) is flattened the same way: the next output tile's
first K steps load under this tile's last m.mma, its epilogue and its store. Its carried A and B
pointers start where the program's tile does, so they are not carried: each trip computes them as
init + chunk * step from its program and K step (`_advanced`), which `prefetch` recomputes for the
trip it fetches; the accumulator is carried and reset at the program's end as before. The K order of
accumulation is the plain GEMM's: results are bit-identical. The flat loop keeps the kernel's
num_stages; its SRAM is checked by `gemm_fits` (the output tile can no longer reuse the staging
tiles, the next tile's are in flight), else the kernel is left as it is. A launched program that
runs one program (the launcher's one program each) runs it as written, K loop included. Every other
kernel is left as it is."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..ir.core import (
    ArrayAttr,
    Block,
    EnumAttr,
    FunctionType,
    IntAttr,
    Module,
    Op,
    PtrType,
    Region,
    ScalarType,
    TensorType,
    TypeAttr,
    Value,
    element_type,
    new_op,
)
from ..ir.vocabulary import OPS
from ..isa.table import ITEMSIZE
from . import access, program_range
from .affine import Val
from .context import dtype_of
from .prefetch import PROGRAMS_ATTR, ROW_END_ATTR, WRITES

ROWS_ARG, GRID_ARG = "plate_rows", "plate_grid_x"  # the last two appended arguments, by name (launcher.py)
SPLIT_ARG = "plate_split"  # plate_split1 .. plate_split<groups - 1>: where each group after the first starts
MATRIX = frozenset({"tt.dot"})  # a GEMM's K loop may be flattened (`flattenable`); tt.dot_scaled not yet
EXCLUDED = frozenset({"tt.dot", "tt.dot_scaled", "tt.atomic_rmw", "tt.atomic_cas", "tt.print", "tt.assert"})
EXCLUDED_MATRIX = EXCLUDED - MATRIX  # what a GEMM's flattened loop may not hold
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


def kinds(func: Op) -> tuple[set, bool]:
    """(the names of the ops at any depth in func, whether one is program_id(x)): what `_shape_ok` and
    `flattenable` ask of the kernel's ops, in one walk (`rewrite` asks both: most kernels are neither)."""
    names, pid = set(), False
    for op in func.walk():
        name = op.name
        names.add(name)
        if not pid and name == "tt.get_program_id":
            pid = _axis(op) in ("x", "0")
    return names, pid


def eligible(func: Op, sram_bytes: int, found: tuple[set, bool] | None = None) -> bool:
    """The kernel can run as a persistent loop, has loads for the pipeline to run ahead, and its
    tensors fit the SRAM twice over even if no buffer were reused: the loop and what is hoisted out
    of it then always fit (when the pipelined loop's copies of the body do not, codegen lowers the
    loop again unpipelined, see codegen.generate), so the transform never makes a kernel overflow."""
    ok = _shape_ok(func, sram_bytes, EXCLUDED, found)
    return ok and any(op.name == "tt.load" for op in func.regions[0].blocks[0].ops)


def _shape_ok(
    func: Op, sram_bytes: int | None, excluded: frozenset = EXCLUDED, found: tuple[set, bool] | None = None
) -> bool:
    """One block ending in a plain tt.return, no `excluded` op or branch, reads program_id(x), and its
    tensors fit the SRAM twice over (`eligible`; sram_bytes None: the caller checks the SRAM itself).
    found: `kinds(func)` when the caller has it."""
    blocks = func.regions[0].blocks
    if len(blocks) != 1 or not blocks[0].ops:
        return False
    last = blocks[0].ops[-1]
    if last.name != "tt.return" or last.operands:
        return False
    names, pid = found or kinds(func)  # (the SRAM sum, the costliest check, last)
    if not pid or not names.isdisjoint(excluded) or any(name.startswith("cf.") for name in names):
        return False
    return sram_bytes is None or 2 * tensor_bytes(func) <= sram_bytes


def _const(value: int, loc) -> Op:
    return new_op("arith.constant", (), (I32,), {"value": IntAttr(value, I32)}, loc=loc)


def _append_args(func: Op, groups: int) -> tuple[list[Value], Value, Value]:
    """The launcher's i32 arguments (plate_split1 .. plate_split<groups - 1>, plate_rows,
    plate_grid_x), appended to the kernel's."""
    entry = func.regions[0].blocks[0]
    n = len(entry.args)
    names = [f"{SPLIT_ARG}{g}" for g in range(1, groups)] + [ROWS_ARG, GRID_ARG]
    added = [Value(I32, name, owner=entry, index=n + k) for k, name in enumerate(names)]
    entry.args += added
    ftype = func.attrs["function_type"].type
    func.attrs["function_type"] = TypeAttr(FunctionType((*ftype.inputs, *[I32] * len(added)), ftype.results))
    if "arg_attrs" in func.attrs:
        attrs = func.attrs["arg_attrs"]
        func.attrs["arg_attrs"] = ArrayAttr((*attrs.values, *[{}] * len(added)), attrs.element)
    return added[:-2], added[-2], added[-1]


def _programs(splits: list[Value], rows: Value, grid: Value, loc) -> tuple[list[Op], Value, Value]:
    """(ops, base, count): this launched program runs programs base .. base + count - 1 along x
    (module docstring): one plate.program_range op (passes/program_range.py holds its arithmetic)."""
    op = program_range.make(splits, rows, grid, loc)
    return [op], op.results[0], op.results[1]


def _along_x(ops: list[Op], row: Value, grid: Value) -> list[Op]:
    """program_id(x) and num_programs(x), at any depth in ops, read `row` and `grid` instead (one
    inside an scf.if reads the grid asked for too); returns the ops replaced (dropped from nested
    blocks; the caller skips top-level ones)."""
    grid_ops = {"tt.get_program_id": row, "tt.get_num_programs": grid}
    along_x = [op for o in ops for op in o.walk() if op.name in grid_ops and _axis(op) in ("x", "0")]
    for op in along_x:
        _replace(op, grid_ops[op.name], ops)
    _drop(ops, along_x)
    _unlink(along_x)
    return along_x


def _unlink(dropped: list[Op]) -> None:
    """Ops out of the IR for good (nothing reads their results): their links back into it cut. A dropped op
    and its result are a reference cycle, and its parent link held the old block, and through it the whole
    kernel, in that cycle after `release`: the IR the compile left waited for the cycle collector's walk."""
    for op in dropped:
        op.parent = None
        for v in op.results:
            v.owner = None


def run(module: Module, sram_bytes: int, groups: int = 1) -> Module:
    """Rewrite the kernel into a persistent loop when it is eligible (module docstring), or into
    one flattened loop over its programs' chunks when `flattenable`. `groups`: how many runs of
    programs the launcher may split the grid into (the machine's domains)."""
    rewrite(module, sram_bytes, groups)
    return module


def rewrite(module: Module, sram_bytes: int, groups: int = 1) -> bool:
    """`run`, and whether it rewrote the kernel: False leaves the module as it was (most of test_core's kernels:
    the pipeline's verifier then has nothing new to check)."""
    func = module.kernel()
    found = kinds(func)
    if not eligible(func, sram_bytes, found):
        plan = flattenable(func, sram_bytes, found)
        if plan is None:
            return False
        _flatten(func, plan, groups)
        return True
    entry = func.regions[0].blocks[0]
    splits, rows, grid = _append_args(func, groups)
    ops, ret = entry.ops[:-1], entry.ops[-1]
    loc = func.loc
    setup, base, ub = _programs(splits, rows, grid, loc)
    zero, one = _const(0, loc), _const(1, loc)
    body = Block(args=[])
    j = Value(I32, "program", owner=body, index=0)
    body.args.append(j)
    row = new_op("arith.addi", (base, j), (I32,), loc=loc)
    body.append(row)
    along_x = _along_x(ops, row.result, grid)
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
    loop = new_op("scf.for", (zero.result, ub, one.result), (), attrs, regions=[Region([body])], loc=loc)
    body.parent = loop.regions[0]
    entry.ops = []
    for op in (*hoisted, *setup, zero, one, loop, ret):
        entry.append(op)
    return True


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


# ---- a program's chunk loop flattened into the persistent loop ----------------------------------


@dataclass
class Flat:
    """What `flattenable` found: the kernel's top-level ops around its one chunk loop."""

    pre: list  # before the loop: the same in every program (hoisted) or pure (recomputed every trip)
    hoisted: list
    loop: Op
    post: list  # after it (its reduce and store), before tt.return
    # a GEMM's carried pointers whose initial values vary with the program: iter_arg index -> (the
    # step each trip adds, the body's ops that compute it), recomputed from the trip's chunk instead
    advanced: dict = field(default_factory=dict)
    matrix: bool = False


def _constant(v: Value) -> int | None:
    op = v.owner if isinstance(v.owner, Op) else None
    if op is not None and op.name == "arith.constant" and isinstance(op.attrs.get("value"), IntAttr):
        return op.attrs["value"].value
    return None


def _base_arg(acc, args: set) -> Value | None:
    """The kernel argument a structured access's addresses start from; None when not known."""
    base = getattr(acc, "base", None)
    return base.value if isinstance(base, Val) and base.value in args else None


def _disjoint(func: Op, loop: Op, post: list) -> bool:
    """The writes after the chunk loop go through pointer arguments its loads do not read: the next
    program's prefetches, issued before this program's store, cannot read what it stores."""
    args = set(func.regions[0].blocks[0].args)
    loads = [access.analyze(op) for op in loop.walk() if op.name in access.MEMORY_OPS]
    writes = [access.analyze(op) for o in post for op in o.walk() if op.name in WRITES]
    read = {_base_arg(a, args) for a in loads}
    written = {_base_arg(a, args) for a in writes}
    return None not in read and None not in written and not read & written


def flattenable(func: Op, sram_bytes: int, found: tuple[set, bool] | None = None) -> Flat | None:
    """The kernel is a program of one chunk loop (a row reduction, Inductor's looped reductions, a
    GEMM's K loop): `_shape_ok` as for `eligible` (a GEMM: tt.dot allowed, `gemm_fits` for the
    SRAM); one top-level scf.for whose body loads at its top level and writes no memory, with
    bounds, a positive constant step and initial values the same in every program (i32), except a
    GEMM's carried pointers advanced by a step the same in every trip (`_advanced`); the ops before
    it that vary with the program pure (recomputed every trip); the writes after it `_disjoint`
    from its loads. Else None: the kernel is left as it is. found: `kinds(func)` when the caller has it."""
    found = found or kinds(func)
    matrix = not found[0].isdisjoint(MATRIX)
    if not _shape_ok(func, None if matrix else sram_bytes, EXCLUDED_MATRIX if matrix else EXCLUDED, found):
        return None
    ops = func.regions[0].blocks[0].ops[:-1]
    loops = [op for op in ops if op.name == "scf.for"]
    if len(loops) != 1:
        return None
    loop = loops[0]
    i = ops.index(loop)
    pre, post = ops[:i], ops[i + 1 :]
    lb, ub, step = loop.operands[:3]
    if str(lb.type) != "i32" or not ((_constant(step) or 0) > 0):
        return None
    if "tt.num_stages" in loop.attrs or not any(op.name == "tt.load" for op in loop.regions[0].blocks[0].ops):
        return None  # tl.range(num_stages=...) asked for its own pipelining: as asked
    if any(op.name in WRITES or op.name == "scf.while" for op in loop.walk()):
        return None
    if matrix and any(op.name in MATRIX for o in (*pre, *post) for op in o.walk()):
        return None  # matrix work outside the chunk loop: not a GEMM's K loop
    hoisted, varying, stored = [], set(), False
    for op in pre:
        d = OPS.get(op.name)
        stored = stored or d is None or bool(d.writes or d.effect)
        reads = {v for inner in op.walk() for v in inner.operands}
        if op.name == "tt.get_program_id" and _axis(op) in ("x", "0"):
            varying.update(op.results)
        elif _invariant(op, d, reads, varying, stored):
            hoisted.append(op)
        elif d is not None and d.pure and not op.regions:
            varying.update(op.results)
        else:
            return None
    if set(loop.operands[:3]) & varying or not _disjoint(func, loop, post):
        return None
    advanced = {}
    used_after = {v for o in post for inner in o.walk() for v in inner.operands}
    for j, v in enumerate(loop.operands[3:]):
        if v in varying:
            found = _advanced(loop, j) if matrix else None
            if found is None or loop.results[j] in used_after:
                return None
            advanced[j] = found
    if matrix and not gemm_fits(loop, post, sram_bytes):
        return None
    return Flat(pre, hoisted, loop, post, advanced, matrix)


def _advanced(loop: Op, j: int) -> tuple[Value, list[Op]] | None:
    """(step, ops) when the loop's carried value j is a pointer the body advances as
    arg' = tt.addptr(arg, step), with an i32 step computed from values from before the loop by `ops`
    (pure ops of the body, in body order): at chunk c it is then init + c * step. Else None."""
    body = loop.regions[0].blocks[0]
    arg, nxt = body.args[1 + j], body.ops[-1].operands[j]
    op = nxt.owner if isinstance(nxt.owner, Op) else None
    if op is None or op.name != "tt.addptr" or op.operands[0] is not arg or op.parent is not body:
        return None
    step = op.operands[1]
    if dtype_of(step.type) != "i32":
        return None
    own = {r: o for o in body.ops for r in o.results}
    chain: list[Op] = []

    def outside(v: Value) -> bool:  # v is computed from values from before the loop only
        o = own.get(v)
        if o is None:
            return v not in body.args
        d = OPS.get(o.name)
        if d is None or not d.pure or o.regions or not all(outside(x) for x in o.operands):
            return False
        if o not in chain:
            chain.append(o)
        return True

    if not outside(step):
        return None
    order = {id(o): k for k, o in enumerate(body.ops)}
    return step, sorted(chain, key=lambda o: order[id(o)])


def gemm_fits(loop: Op, post: list, sram_bytes: int) -> bool:
    """The flattened GEMM's SRAM at num_stages 2 (codegen lowers it that shallow when deeper does
    not fit), worked out rather than planned: the carried tensors (the accumulator) and each load's
    staging tile (the next trip's, in flight across the loop's back edge) for the whole loop, then
    the larger of the tiles the body computes on (the staging tiles' copies) and the output tile the
    program's end makes (waited for there: rules_scf, one copy of the body), which share SRAM.
    The plain GEMM puts its output tile over the staging tiles instead; the flat one cannot, the
    next program's first tiles are in flight. A stored loop result (an fp32 accumulator stored as
    it is) is no tile of its own. When this does not fit the kernel keeps today's code."""
    body = loop.regions[0].blocks[0]

    def nbytes(t) -> int:
        if not isinstance(t, TensorType) or isinstance(element_type(t), PtrType):
            return 0  # pointer tensors are addresses the DMAs compute, not tiles
        return math.prod(t.shape) * ITEMSIZE.get(dtype_of(t), 8)

    carried = sum(nbytes(r.type) for r in loop.results)
    loads = sum(nbytes(op.result.type) for op in body.ops if op.name == "tt.load")
    stored = [op.operands[1] for o in post for op in o.walk() if op.name == "tt.store"]
    out = sum(nbytes(v.type) for v in stored if v not in loop.results)
    return carried + loads + max(loads, out) <= sram_bytes


def _flatten(func: Op, plan: Flat, groups: int) -> None:
    """Rewrite the kernel into one loop over every chunk of its programs (module docstring)."""
    entry = func.regions[0].blocks[0]
    ret, loc = entry.ops[-1], func.loc
    splits, rows, grid = _append_args(func, groups)
    setup, base, nrows = _programs(splits, rows, grid, loc)
    loop = plan.loop
    lb, ub, step, *inits = loop.operands
    inner = loop.regions[0].blocks[0]
    top: list[Op] = []

    def op_(name, *operands, into=top, attrs=None, name_as=""):
        o = new_op(name, operands, (I32,), attrs, loc=loc)
        o.results[0].name = name_as
        into.append(o)
        return o.result

    zero, one = _const(0, loc), _const(1, loc)
    top += [zero, one]
    # the chunk loop's trips, the same in every program: max(0, ceil((ub - lb) / step)), step > 0
    span = op_("arith.subi", ub, lb)
    bias = _const(_constant(step) - 1, loc)
    top.append(bias)
    trips = op_("arith.divsi", op_("arith.addi", span, bias.result), step)
    trips = op_("arith.maxsi", trips, zero.result, name_as="chunks")
    last_chunk = op_("arith.subi", trips, one.result)
    total = op_("arith.muli", nrows, trips)
    some = new_op("arith.cmpi", (trips, zero.result), (ScalarType("i1"),), {"predicate": EnumAttr("sgt")}, loc=loc)
    top.append(some)
    if plan.matrix:  # a GEMM runs flat only with several programs: one alone runs as written (no per-trip
        # program and K-step arithmetic), as the launcher's one program each does
        several = new_op("arith.cmpi", (nrows, one.result), (ScalarType("i1"),), {"predicate": EnumAttr("sgt")})
        some = new_op("arith.andi", (some.result, several.result), (ScalarType("i1"),), loc=loc)
        several.loc = loc
        top += [several, some]

    # the flat loop's body: trip t is chunk c of program base + j
    body = Block(args=[])
    t = Value(I32, "trip", owner=body, index=0)
    kept = [n for n in range(len(inits)) if n not in plan.advanced]  # the values the flat loop carries
    carried = [
        Value(inner.args[1 + n].type, inner.args[1 + n].name, owner=body, index=i + 1) for i, n in enumerate(kept)
    ]
    body.args += [t, *carried]
    head: list[Op] = []
    j = op_("arith.divsi", t, trips, into=head, name_as="program")
    c = op_("arith.subi", t, op_("arith.muli", j, trips, into=head), into=head, name_as="chunk")
    row = op_("arith.addi", base, j, into=head)
    k = op_("arith.addi", lb, op_("arith.muli", c, step, into=head), into=head, name_as=inner.args[0].name)
    along_x = _along_x([*plan.pre, loop, *plan.post], row, grid)
    plan.post = [op for op in plan.post if op not in along_x]
    recomputed = [op for op in plan.pre if op not in plan.hoisted and op not in along_x]

    # the programs of a launch whose chunk loop runs no trip (a GEMM's: or that runs one program): the
    # plain loop over programs (a GEMM's: each program as written, its K loop included)
    plain = Block(args=[])
    jp = Value(I32, "program", owner=plain, index=0)
    plain.args.append(jp)
    row_p = op_("arith.addi", base, jp, into=plain.ops)
    for o in plain.ops:
        o.parent = plain
    vmap = {row: row_p} if plan.matrix else {row: row_p, **dict(zip(loop.results, inits))}
    for op in (*recomputed, loop, *plan.post) if plan.matrix else (*recomputed, *plan.post):
        plain.append(_clone(op, vmap))
    plain.append(new_op("scf.yield", (), (), loc=ret.loc))

    # the chunk loop's body, on this trip's chunk and the carried values; a GEMM's advanced pointers
    # computed from the trip's program and chunk: init + chunk * step
    advance = _advance_ops(plan, inner, inits, c, loc)
    body_ops = [op for op in inner.ops[:-1] if op not in advance.dropped]
    _substitute(inner.ops, {inner.args[0]: k, **dict(zip([inner.args[1 + n] for n in kept], carried)), **advance.args})
    all_yields = inner.ops[-1].operands
    yields = [all_yields[n] for n in kept]
    _substitute(plan.post, dict(zip(loop.results, all_yields)))
    then = Block(args=[])
    for op in plan.post:
        then.append(op)
    then.append(new_op("scf.yield", [inits[n] for n in kept], (), loc=ret.loc))
    keep = Block(args=[])
    keep.append(new_op("scf.yield", yields, (), loc=ret.loc))
    is_last = new_op("arith.cmpi", (c, last_chunk), (ScalarType("i1"),), {"predicate": EnumAttr("eq")}, loc=loc)
    row_end = new_op("scf.if", (is_last.result,), [v.type for v in carried], regions=[_region(then), _region(keep)])
    row_end.loc = loc
    row_end.attrs[ROW_END_ATTR] = IntAttr(1, I32)
    for op in (*head, *recomputed, *advance.ops, *body_ops, is_last, row_end):
        body.append(op)
    body.append(new_op("scf.yield", row_end.results, (), loc=ret.loc))

    # a GEMM keeps the kernel's num_stages (its staging tiles are large: codegen goes shallower when short)
    attrs = {} if plan.matrix else {"tt.num_stages": IntAttr(STAGES, I32)}
    attrs[PROGRAMS_ATTR] = IntAttr(1, I32)
    flat_inits = [inits[n] for n in kept]
    flat = new_op("scf.for", (zero.result, total, one.result, *flat_inits), [v.type for v in carried], attrs, loc=loc)
    flat.regions = [_region(body)]
    flat.regions[0].parent = flat
    attrs = {"tt.num_stages": IntAttr(STAGES, I32), PROGRAMS_ATTR: IntAttr(1, I32)}
    per_program = new_op("scf.for", (zero.result, nrows, one.result), (), attrs, loc=loc)
    per_program.regions = [_region(plain)]
    per_program.regions[0].parent = per_program
    then_b, else_b = Block(args=[]), Block(args=[])
    then_b.append(flat)
    then_b.append(new_op("scf.yield", (), (), loc=loc))
    else_b.append(per_program)
    else_b.append(new_op("scf.yield", (), (), loc=loc))
    choose = new_op("scf.if", (some.result,), (), regions=[_region(then_b), _region(else_b)], loc=loc)
    entry.ops = []
    for op in (*(op for op in plan.hoisted if op not in along_x), *setup, *top, choose, ret):
        entry.append(op)
    # the chunk loop is gone: its body's ops live on in the flat loop, its yield and the advancing ops do not
    _unlink([loop, inner.ops[-1], *advance.dropped])
    loop.regions[0].parent = inner.parent = None
    for a in inner.args:
        a.owner = None


@dataclass
class _Advance:
    ops: list  # the ops to put before the chunk loop's body
    args: dict  # the body's advanced pointer -> its value at this trip
    dropped: list  # the body's ops that advanced them (their results only yielded)


def _advance_ops(plan: Flat, inner: Block, inits: list, chunk: Value, loc) -> _Advance:
    """For each advanced pointer (`_advanced`): its step's ops cloned, then init + splat(chunk) * step."""
    out = _Advance([], {}, [])
    vmap: dict = {}
    uses = [v for op in inner.ops for inner_op in op.walk() for v in inner_op.operands]
    for n, (step, chain) in plan.advanced.items():
        for op in chain:
            if op.results[0] not in vmap:
                out.ops.append(_clone(op, vmap))
        step_now = vmap.get(step, step)
        arg = inner.args[1 + n]
        times = chunk
        if isinstance(step_now.type, TensorType):
            splat = new_op("tt.splat", (chunk,), (step_now.type,), loc=loc)
            out.ops.append(splat)
            times = splat.result
        prod = new_op("arith.muli", (step_now, times), (step_now.type,), loc=loc)
        at = new_op("tt.addptr", (inits[n], prod.result), (arg.type,), loc=loc)
        at.results[0].name = arg.name
        out.ops += [prod, at]
        out.args[arg] = at.result
        nxt = inner.ops[-1].operands[n]
        if uses.count(nxt) == 1:  # only yielded: the flat loop no longer carries it
            out.dropped.append(nxt.owner)
    return out


def _region(block: Block) -> Region:
    r = Region([block])
    block.parent = r
    for op in block.ops:
        op.parent = block
    return r


def _substitute(ops: list[Op], mapping: dict) -> None:
    """Every use of a key of mapping, in ops and their regions, reads its value instead."""
    for o in ops:
        for inner in o.walk():
            inner.operands = [mapping.get(v, v) for v in inner.operands]


def _clone(op: Op, vmap: dict) -> Op:
    """A copy of op (regions included) reading vmap[v] for every mapped v; vmap gains its results."""
    regions = []
    for region in op.regions:
        blocks = []
        for block in region.blocks:
            nb = Block(args=[])
            for i, a in enumerate(block.args):
                nb.args.append(Value(a.type, a.name, owner=nb, index=i))
                vmap[a] = nb.args[-1]
            for o in block.ops:
                nb.append(_clone(o, vmap))
            blocks.append(nb)
        r = Region(blocks)
        for nb in blocks:
            nb.parent = r
        regions.append(r)
    new = new_op(op.name, [vmap.get(v, v) for v in op.operands], [r.type for r in op.results], dict(op.attrs), regions)
    new.loc = op.loc
    for old, r in zip(op.results, new.results):
        r.name = old.name
        vmap[old] = r
    return new
