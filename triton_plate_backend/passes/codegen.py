"""codegen: plate IR (one Triton kernel) -> a PLATE `Program`.

Design
------
- Calling convention: `Program.args` has one `Arg` per tt.func argument, in order (pointer ->
  'ptr', iN -> 'iN', fN -> 'fN'; a host-side `!tt.tensordesc` argument expands as the launcher
  passes it, see `kernel_args`); `s.arg` reads them. One program instance runs one Triton
  program; `s.pid` / `s.nprog` give its id and the grid.
- Scalars (ints, pointers, uniform floats) live in scalar registers. The code generator uses
  virtual registers; after emission `regalloc` computes liveness over the emitted code and
  allocates the machine's registers (a clear CompileError if more are live at once). Scalar
  constants, kernel arguments and DMA address terms are computed (`s.li` / `s.arg` / arithmetic)
  once per basic block (`Emitter.rematerialised`); `licm` then moves those a loop does not change
  in front of it and `scalar_cse` keeps one of each (they hold a register across the loop; when
  that does not fit, the kernel is lowered again with one per use and the code stays as emitted).
- Tensors live in SRAM tiles. Every tensor value that is not a free view gets a buffer; buffers
  get addresses from `sram_plan` after emission (liveness-based first-fit, 64-byte aligned;
  SramOverflow names the largest live tensors). View ops are free: expand_dims, broadcast and
  splat are stride-0 views, tt.trans permutes strides, tt.split takes strided views, reshape
  of a layout strides can express is a view, a bitcast between equal item sizes retypes the
  view. A copy is made only when strides cannot express the result.
- An elementwise result reuses the buffer of an operand that dies at that op (the operand owns
  the whole buffer and no live view aliases it): loop-carried accumulators update in place and
  their scf.yield copy disappears. tt.dot accumulates into its C operand in place when C dies.
- Pointer tensors materialise as i64 byte-address tiles only where a gather/scatter/atomic
  needs them; a load/store that access analysis proves structured becomes a strided
  dma.load/dma.store whose base, strides and bounds are scalar registers (`rules_access`).
  `demand` decides what must be computed at all: the pointer tensors feeding strided accesses
  are never built, and a loop-carried pointer tensor whose accesses are all strided travels as
  scalar companion registers instead of an SRAM tile.
- Bounded instructions: a vector instruction covers at most machine.core.vector.max_elements
  elements (`Emitter.vector` chunks, flat for contiguous tiles, else along leading dims); tt.dot
  becomes one m.mma per K <= max_k chunk over the whole output tile (one fill per instruction).
- Reductions and scans with a single-op combine region use v.reduce / v.scan; other combine
  regions (argmax, several operands, custom combine_fn) run the region's own ops on tile views:
  a log2(n) tree for reductions (adjacent pairs, so order is kept), Hillis-Steele for scans
  (reverse scans run on flipped views).
- Control flow: scf.for (scalar counter, iter_args copied in parallel on scf.yield), scf.if,
  scf.while, cf.br/cf.cond_br with block arguments, tt.return -> halt.
- DMA: issues return tokens; `Emitter` waits lazily (first reader of a DMA'd tile, writer of a
  tile a DMA still reads, device-memory order, queue depth, basic-block boundaries), so loads
  overlap each other and compute. Software pipelining (`prefetch`, num_stages >= 2): a loop's
  strided loads that follow the loop counter are issued num_stages - 1 iterations ahead, one
  staging tile per iteration in flight across the back edge, the body lowered once per staging
  tile (the ISA's tile addresses are static) and, from num_stages 3 on, computing on the staging
  tiles themselves. A K loop lowered as one copy (num_stages 2) whose tt.dot feeds the code after
  it runs its last trip after the loop, m.mma in row blocks each followed by its share of that
  code (`rules_scf.peeled_tail`, `row_blocks`): the epilogue's conversion and store overlap the
  last trip's matrix work.
- Calls: `passes/inline.py` inlines every tt.call before codegen (PLATE has no call).
- Every instruction carries the source location of the op it came from; Program.name is the
  kernel's name.

Lowering rules live in rules_*.py, one `_lower_<dialect>_<op>(ctx, op)` per op, gathered into
the single table `LOWERING` (passes/lowering.py); ops plate refuses on purpose are in `REJECTED`
with the reason. What a rule sees, `Ctx`, lives in passes/context.py, which imports no rule.
"""

from __future__ import annotations

from ..errors import CompileError, RegisterOverflow, SramOverflow
from ..ir.core import Op, PtrType, TensorDescType, TensorType
from ..isa.program import Arg, Program
from . import demand, licm, scalar_cse
from .context import ArgRef, Ctx, dtype_of
from .finalize import finalize, sram_by_op
from .lowering import HANDLED_BY_PARENT, LOWERING, REJECTED
from .rules_memory import TensorDesc
from .rules_scf import enter_block, prepare_blocks
from .scalar_flow import writes

__all__ = ["HANDLED_BY_PARENT", "LOWERING", "REJECTED", "arg_type", "func_name", "generate", "kernel_args"]


def arg_type(t) -> str:
    if isinstance(t, PtrType):
        return "ptr"
    if isinstance(t, TensorType):
        raise CompileError(f"kernel argument of type {t} is not supported; pass pointers and scalars")
    d = dtype_of(t)
    if d.startswith("f8"):
        raise CompileError(f"kernel argument of type {t} is not supported")
    return d


def kernel_args(ctx, params) -> list[Arg]:
    """Program.args for the kernel's parameters, binding each parameter to what reads it.

    A host-side tensor descriptor (`!tt.tensordesc` parameter) arrives as the launcher expands
    it (launcher._expand_tensordesc): base pointer, shape (i64 x rank), strides (i64 x rank),
    padding-is-nan (i1), round-f32-to-tf32 (i1); Triton's own shape/stride parameters follow it.
    Descriptor loads fill out-of-bounds elements with 0 (a "nan" padding flag is not honoured)."""
    args: list[Arg] = []
    for i, a in enumerate(params):
        name = a.name or f"arg{i}"
        if isinstance(a.type, TensorDescType):
            r = len(a.type.block.shape)
            j = len(args)
            args += [Arg(name, "ptr")] + [Arg(f"{name}.shape{k}", "i64") for k in range(r)]
            args += [Arg(f"{name}.stride{k}", "i64") for k in range(r)]
            args += [Arg(f"{name}.padding_nan", "i1"), Arg(f"{name}.round_tf32", "i1")]
            ctx.bind(
                a,
                TensorDesc(
                    ArgRef(j),
                    tuple(ArgRef(j + 1 + k) for k in range(r)),
                    tuple(ArgRef(j + 1 + r + k) for k in range(r)),
                    tuple(a.type.block.shape),
                    dtype_of(a.type.block),
                ),
            )
            continue
        ctx.bind(a, ArgRef(len(args)))
        args.append(Arg(name, arg_type(a.type)))
    return args


# ---- the driver ------------------------------------------------------------------------------
def func_name(func: Op) -> str:
    for key in ("sym_name", "name"):
        v = func.attrs.get(key)
        if v is not None:
            return getattr(v, "value", None) or getattr(v, "name", None) or str(v)
    return "kernel"


def generate(module, machine, options=None) -> tuple[Program, dict]:
    """Lower the module's kernel to a verified Program; also return a small report.

    Pipelining deeper than num_stages 2 costs a staging tile (and a DMA token) per stage: when that
    plan overflows SRAM or the tokens, the kernel is lowered again one stage shallower (down to 2,
    one tile in flight; when a loop without matrix work was pipelined, down to 1: no pipelining)
    before the overflow is reported, so pipelining never makes a kernel that fits fail; a store cut in
    pieces (`store_pieces`, each piece a DMA token) that overflows the registers is first cut in half
    as many, since a pipeline stage is worth more than the pieces. Before either, a kernel with a
    loop's last trip lowered apart (`rules_scf.peeled_tail`) is lowered again without it when that
    overflows; one whose code leaves licm's loop-invariant scalars no registers keeps the peel and
    recomputes them in the loop, on the scalar engine under the matrix work (`_finalize`; bf16
    2048^3 480.2 -> 476.2 us with the peel, 4096^3 3665.1 -> 3665.3 us). When the
    overflow persists at every depth, the kernel is lowered again, from the deepest: scalar registers
    with the scalars the registers cannot hold kept in SRAM (`spill`); SRAM with its large pointer
    tensors kept as a scalar base and i32 offsets (`context.BasedPtr`). A kernel that fits as it is
    is lowered as it is."""
    cap, spill_scalars, based, pieces, peel, remat = None, False, False, None, True, True
    while True:
        ctx = Ctx(machine, func_name(module.kernel()), LOWERING, REJECTED, options)
        ctx.max_stages, ctx.based_pointers, ctx.max_store_pieces = cap, based, pieces
        ctx.peel = peel
        if not remat:
            ctx.em.remat = None
        try:
            return _lower_kernel(ctx, module, machine, spill_scalars)
        except Rematerialise:
            remat = False  # this lowering again, each use of a constant, argument or address term computing it
        except (SramOverflow, RegisterOverflow) as e:
            if ctx.peeled:
                peel = False  # a loop's peeled last trip keeps its staging tiles live with the epilogue's
            elif isinstance(e, RegisterOverflow) and ctx.most_store_pieces:
                pieces = ctx.most_store_pieces // 2  # a store's pieces hold DMA tokens: fewer before a stage
            elif ctx.deepest_stages > (1 if ctx.streaming_pipelined else 2):
                cap, pieces = ctx.deepest_stages - 1, None
            elif isinstance(e, RegisterOverflow) and not spill_scalars:
                cap, spill_scalars = None, True
            elif isinstance(e, SramOverflow) and not based and ctx.based_candidates:
                cap, based = None, True
            else:
                raise


class Rematerialise(Exception):
    """The code must be lowered again with every use of a constant, kernel argument or DMA address
    term computing its own register (`Emitter.remat` off): the code as emitted is what `_finalize`
    falls back to."""


def _finalize(em, name, args, machine, spill_scalars=False):
    """finalize the code with its loop-invariant scalar instructions in front of their loops and
    recomputed scalar values dropped (licm, scalar_cse); the code as emitted when what they keep in
    registers across a loop does not fit the machine's registers; with ``spill_scalars``, when even
    that does not fit, the code as emitted with the scalars the registers cannot hold in SRAM.

    The emitter computes a constant, kernel argument or address term once per basic block (`Emitter.rematerialised`),
    which licm and scalar_cse turn into the same code as one load per use. The code as emitted is
    meant to recompute them at each use (short live ranges): when it is needed and some load was
    shared, or a shared register was written again (a caller broke the contract), `Rematerialise`
    asks `generate` to lower the kernel again with a load per use."""
    emitted = em.code
    count = writes(emitted)
    for r in em.shared:  # (a loop, not any() over a generator: ~30 shared registers a compile)
        if count.get(r) != 1:
            raise Rematerialise
    em.code = scalar_cse.run(licm.run(emitted, count), count)
    try:
        return finalize(em, name, args, machine)
    except RegisterOverflow:
        if em.shared:
            raise Rematerialise from None
        em.code = emitted
    if not spill_scalars:
        return finalize(em, name, args, machine)
    try:
        return finalize(em, name, args, machine)
    except RegisterOverflow:
        em.code = emitted
        return finalize(em, name, args, machine, spill_scalars=True)


def _lower_kernel(ctx, module, machine, spill_scalars=False) -> tuple[Program, dict]:
    func = module.kernel()
    name = ctx.name
    block0 = func.regions[0].blocks[0]
    args = kernel_args(ctx, block0.args)
    ctx.dies, ctx.unused = demand.last_uses(func)
    ctx.defs = {r: op for op in func.walk() for r in op.results}
    ctx.demand = demand.analyze(func)
    ctx.op, ctx.em.loc = func, func.loc
    blocks = func.regions[0].blocks
    prepare_blocks(ctx, blocks)
    for b in blocks:
        enter_block(ctx, b)
        ctx.lower_ops(b)
    code = ctx.em.code
    if not code or code[-1].mnemonic != "halt":
        ctx.em.wait_all()
        ctx.emit("halt")
    program, planned = _finalize(ctx.em, name, args, machine, spill_scalars)
    report = {
        "kernel": name,
        "instructions": len(program.instrs),
        "tiles": len(program.tiles),
        "sram_bytes": program.sram_bytes,
        "buffers": planned,
        "sram_by_op": sram_by_op(ctx),
    }
    return program, report
