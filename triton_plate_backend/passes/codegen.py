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
  constants and kernel arguments are re-materialised (`s.li` / `s.arg`) at each use, so they
  never hold a register across a loop.
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
  is tiled into m.mma on views of at most 32x32 outputs and K <= max_k.
- Reductions and scans with a single-op combine region use v.reduce / v.scan; other combine
  regions (argmax, several operands, custom combine_fn) run the region's own ops on tile views:
  a log2(n) tree for reductions (adjacent pairs, so order is kept), Hillis-Steele for scans
  (reverse scans run on flipped views).
- Control flow: scf.for (scalar counter, iter_args copied in parallel on scf.yield), scf.if,
  scf.while, cf.br/cf.cond_br with block arguments, tt.return -> halt.
- DMA: issues return tokens; `Emitter` waits lazily (first reader of a DMA'd tile, writer of a
  tile a DMA still reads, device-memory order, queue depth, basic-block boundaries), so loads
  overlap each other and compute. Software pipelining (`prefetch`, num_stages >= 2): a loop's
  strided loads that follow the loop counter are issued one iteration ahead into a staging
  tile that stays in flight across the back edge; keeping num_stages - 1 tiles in flight (body
  unrolled, one staging tile per copy) is the next step.
- Calls: `passes/inline.py` inlines every tt.call before codegen (PLATE has no call).
- Every instruction carries the source location of the op it came from; Program.name is the
  kernel's name.

Lowering rules live in rules_*.py, one `_lower_<dialect>_<op>(ctx, op)` per op, gathered into
the single table `LOWERING`; ops plate refuses on purpose are in `REJECTED` with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import CompileError, PlateError
from ..ir.core import Op, PtrType, ScalarType, TensorDescType, TensorType, Value, element_type
from ..isa.program import UNKNOWN_LOC, Arg, Program
from . import demand
from .emitter import Emitter, Imm, View, VReg
from .finalize import finalize, sram_by_op

# ---- types -------------------------------------------------------------------------------------
# TTIR element type name -> ISA dtype (index is 64-bit; pointers are i64 byte addresses)
DTYPE = {name: name for name in ("i1", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64")}
DTYPE.update({"index": "i64", "f8E4M3FN": "f8e4m3fn", "f8E5M2": "f8e5m2"})


def dtype_of(t) -> str:
    """ISA dtype of a scalar/tensor type's elements (pointers are i64 byte addresses)."""
    t = element_type(t)
    if isinstance(t, PtrType):
        return "i64"
    if isinstance(t, ScalarType) and t.name in DTYPE:
        return DTYPE[t.name]
    raise CompileError(f"element type {t} has no PLATE dtype (supported: {', '.join(DTYPE)})")


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
            from .rules_memory import TensorDesc

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


def is_float(dtype: str) -> bool:
    return dtype.startswith(("f", "bf"))


@dataclass(frozen=True)
class Const:
    """A scalar constant, re-materialised with s.li at each use."""

    value: int | float


@dataclass(frozen=True)
class ArgRef:
    """Kernel argument i, re-read with s.arg at each use."""

    index: int


# ---- the lowering context ----------------------------------------------------------------------
class Ctx:
    """What a lowering rule sees: the emitter, value bindings and helpers. Rules take it as
    their first argument; nothing is global."""

    def __init__(self, machine, name: str, access=None, options=None):
        self.machine, self.name, self.access, self.options = machine, name, access or {}, options
        self.em = Emitter(machine)
        self.env: dict[Value, object] = {}
        self.op: Op | None = None
        self.dies: dict[Op, set] = {}
        self.dead: set = set()
        self.unused: set = set()
        self.block_homes: dict = {}  # cf blocks: Block -> (label, homes)
        self.defs: dict = {}  # Value -> the op that defines it
        self.demand = None  # demand.Demand: live ops, strided accesses, carried pointers
        self.companions: dict = {}  # loop-carried pointer (block arg) -> companion registers
        self.prefetches: dict = {}  # load op -> prefetch.Prefetch (software-pipelined loads)

    def defining_op(self, value: Value) -> Op | None:
        return self.defs.get(value)

    def try_structured(self, op: Op) -> bool:
        """Lower a load/store as a strided DMA when access analysis proved it structured."""
        from .rules_access import lower_structured

        return lower_structured(self, op)

    # ---- errors and emission
    def error(self, msg: str, op: Op | None = None) -> CompileError:
        op = op or self.op
        return CompileError(f"{op.name} at {op.loc or UNKNOWN_LOC}: {msg}" if op else msg)

    def emit(self, mnemonic, *operands, suffixes=()):
        return self.em.emit(mnemonic, *operands, suffixes=suffixes)

    def vec(self, mnemonic, *operands, suffixes=()):
        self.em.vector(mnemonic, *operands, suffixes=suffixes)

    # ---- bindings
    def bind(self, value: Value, binding) -> None:
        self.env[value] = binding
        if isinstance(binding, View) and binding.buffer.owner is not value:
            binding.buffer.aliases.add(value)

    def binding(self, value: Value):
        try:
            return self.env[value]
        except KeyError:
            raise self.error(f"value {value!r} is used before it is defined (or its defining op was skipped)") from None

    def is_tensor(self, value: Value) -> bool:
        return isinstance(self.env.get(value), View)

    def reg(self, value: Value) -> VReg:
        return self.as_reg(self.binding(value), value.type)

    def as_reg(self, b, t=None) -> VReg:
        if isinstance(b, VReg):
            return b
        if isinstance(b, Const):
            return self.li(b.value)
        if isinstance(b, ArgRef):
            r = VReg("arg")
            self.emit("s.arg", r, Imm(b.index))
            return r
        if isinstance(b, View) and b.numel == 1:
            r = VReg()
            self.emit("v.extract", r, b, Imm(0))
            return r
        raise self.error(f"expected a scalar, got {b!r} of type {t}")

    def li(self, value, hint: str = "") -> VReg:
        r = VReg(hint)
        self.emit("s.li", r, Imm(value))
        return r

    def view(self, value: Value, shape=None) -> View:
        """The tile of a tensor value; a scalar is splatted to `shape` (a stride-0 view)."""
        b = self.binding(value)
        if shape is None:
            if not isinstance(b, View):
                raise self.error(f"expected a tensor, got a scalar {value!r}")
            return b
        return self.as_view(b, dtype_of(value.type), shape)

    # ---- tiles
    def new(self, dtype: str, shape, owner: Value | None = None, what: str = "") -> View:
        what = what or (f"{owner.name or 'tmp'}: {dtype}{list(shape)}" if owner is not None else "")
        return self.em.buffer(dtype, shape, what, owner)

    def out(self, value: Value, shape, reuse=()) -> View:
        """The tile a result is written to: an operand's buffer when that operand dies here and
        owns it whole (in place), else a fresh buffer."""
        dtype = dtype_of(value.type)
        for v in reuse:
            b = self.dying_buffer(v)
            if b is not None and b.dtype == dtype and b.shape == tuple(shape):
                b.buffer.owner = value
                b.buffer.aliases.clear()
                return b
        return self.new(dtype, shape, owner=value)

    def dying_buffer(self, value: Value) -> View | None:
        """The whole buffer of a value that dies at the current op and that no live value
        aliases: the op may overwrite it."""
        b = self.env.get(value)
        dying = self.dies.get(self.op, ())
        if (
            isinstance(b, View)
            and value in dying
            and b.buffer.owner is value
            and b.is_whole()
            and all(a in self.dead or a in dying or a in self.unused for a in b.buffer.aliases)
        ):
            return b
        return None

    def splat(self, reg: VReg, dtype: str, shape) -> View:
        one = self.new(dtype, (1,), what=f"splat {dtype}")
        self.emit("v.splat", one, reg)
        return one.reshape((1,) * len(shape)).broadcast(tuple(shape)) if shape else one

    def fill(self, value, dtype: str, shape) -> View:
        one = self.new(dtype, (1,), what=f"constant {value} {dtype}")
        self.emit("v.fill", one, Imm(value))
        return one.reshape((1,) * len(shape)).broadcast(tuple(shape)) if shape else one

    def copy(self, dst: View, src: View) -> None:
        if dst != src:
            self.vec("v.copy", dst, src.broadcast(dst.shape) if src.shape != dst.shape else src)

    def contiguous(self, v: View, what: str = "") -> View:
        if v.is_contiguous():
            return v
        c = self.new(v.dtype, v.shape, what=what or f"copy {v.dtype}{list(v.shape)}")
        self.copy(c, v)
        return c

    def reshaped(self, v: View, shape) -> View:
        r = v.reshape(tuple(shape))
        if r is None:
            c = self.new(v.dtype, v.shape, what=f"reshape {v.dtype}{list(v.shape)}")
            self.copy(c, v)
            r = c.reshape(tuple(shape))
        return r

    # ---- homes and parallel copies (loop-carried values, branch results, block arguments)
    def home(self, t, like=None):
        """Fresh storage for a value of type t (like: an example binding for records)."""
        if like is not None and hasattr(like, "fresh"):
            return like.fresh(self)
        if isinstance(t, TensorType):
            return self.new(dtype_of(t), t.shape, what=f"loop/branch value {t}")
        if isinstance(t, (PtrType, ScalarType)) and not isinstance(element_type(t), TensorType):
            return VReg("home")
        raise self.error(f"cannot carry a value of type {t} through control flow")

    def assign(self, pairs) -> None:
        """Parallel copy: every (dst home, src binding) pair as if all sources were read first."""
        leaves = []
        for dst, src in pairs:
            leaves += _leaf_pairs(dst, src)
        dst_regs = {d for d, _ in leaves if isinstance(d, VReg)}
        dst_bufs = {d.buffer for d, _ in leaves if isinstance(d, View)}
        staged = []
        for d, s in leaves:
            if s is d:
                continue
            if isinstance(s, VReg) and s in dst_regs:
                t = VReg("pcopy")
                self.emit("s.mov", t, s)
                s = t
            elif isinstance(s, View) and s.buffer in dst_bufs:
                t = self.new(s.dtype, s.shape, what="parallel copy")
                self.copy(t, s)
                s = t
            staged.append((d, s))
        for d, s in staged:
            if isinstance(d, VReg):
                src = s if isinstance(s, VReg) else self.as_reg(s)
                self.emit("s.mov", d, src)
            else:
                self.copy(d, self.as_view(s, d.dtype, d.shape))

    def as_view(self, b, dtype: str, shape) -> View:
        """A binding (tile, scalar register or constant) as a tile of this dtype and shape."""
        if isinstance(b, View):
            return b if b.shape == tuple(shape) else b.broadcast(tuple(shape))
        if isinstance(b, Const):
            return self.fill(b.value, dtype, shape)
        return self.splat(self.as_reg(b), dtype, shape)

    # ---- walking IR
    def lower_ops(self, block, terminators=()) -> Op | None:
        """Lower every op of a block; return its terminator if its name is in `terminators`
        (the caller lowers it)."""
        for op in block.ops:
            if op.name in terminators and op is block.ops[-1]:
                return op
            if self.demand is None or op in self.demand.live:
                self.lower_op(op)
        return None

    def lower_op(self, op: Op) -> None:
        saved_op, saved_loc = self.op, self.em.loc
        self.op, self.em.loc = op, op.loc
        try:
            rule = LOWERING.get(op.name)
            if rule is None:
                raise missing_rule(op)
            try:
                rule(self, op)
            except PlateError:
                raise
            except Exception as e:  # a bug in a rule: name the op and line, keep the traceback
                raise self.error(f"internal error while lowering: {type(e).__name__}: {e}") from e
            self.dead |= self.dies.get(op, set())
        finally:
            self.op, self.em.loc = saved_op, saved_loc

    def run_region(self, block, args, terminator: str) -> list:
        """Bind a region's block arguments, lower its ops, return the terminator's operand bindings."""
        for a, b in zip(block.args, args):
            self.bind(a, b)
        term = self.lower_ops(block, (terminator,))
        if term is None:
            raise self.error(f"region does not end with {terminator}")
        return [self.binding(v) for v in term.operands]


def _leaf_pairs(dst, src):
    if hasattr(dst, "leaves"):
        return list(zip(dst.leaves(), src.leaves()))
    return [(dst, src)]


def missing_rule(op: Op) -> CompileError:
    if op.name in REJECTED:
        return CompileError(f"{op.name} at {op.loc or UNKNOWN_LOC}: {REJECTED[op.name]}")
    res = ", ".join(str(r.type) for r in op.results) or "none"
    ins = ", ".join(str(v.type) for v in op.operands) or "none"
    return CompileError(
        f"no PLATE lowering for {op.name} (results: {res}; operands: {ins}) at "
        f"{op.loc or UNKNOWN_LOC}; the kernel uses an op plate does not support yet"
    )


# ---- the driver ------------------------------------------------------------------------------
def func_name(func: Op) -> str:
    for key in ("sym_name", "name"):
        v = func.attrs.get(key)
        if v is not None:
            return getattr(v, "value", None) or getattr(v, "name", None) or str(v)
    return "kernel"


def generate(module, machine, options=None, access=None) -> tuple[Program, dict]:
    """Lower the module's kernel to a verified Program; also return a small report."""
    func = module.kernel()
    name = func_name(func)
    ctx = Ctx(machine, name, access, options)
    block0 = func.regions[0].blocks[0]
    args = kernel_args(ctx, block0.args)
    ctx.dies, ctx.unused = demand.last_uses(func)
    ctx.defs = {r: op for op in func.walk() for r in op.results}
    ctx.demand = demand.analyze(func)
    ctx.op, ctx.em.loc = func, func.loc
    blocks = func.regions[0].blocks
    from .rules_scf import enter_block, prepare_blocks

    prepare_blocks(ctx, blocks)
    for b in blocks:
        enter_block(ctx, b)
        ctx.lower_ops(b)
    code = ctx.em.code
    if not code or code[-1].mnemonic != "halt":
        ctx.em.wait_all()
        ctx.emit("halt")
    program, planned = finalize(ctx.em, name, args, machine)
    report = {
        "kernel": name,
        "instructions": len(program.instrs),
        "tiles": len(program.tiles),
        "sram_bytes": program.sram_bytes,
        "buffers": planned,
        "sram_by_op": sram_by_op(ctx),
    }
    return program, report


# ---- the one lowering table ------------------------------------------------------------------------
def _gather_rules() -> dict:
    from . import rules_arith, rules_dot, rules_map, rules_math, rules_memory, rules_reduce, rules_scf, rules_tt

    table: dict = {}
    for mod in (rules_arith, rules_math, rules_tt, rules_reduce, rules_map, rules_memory, rules_scf, rules_dot):
        for op_name, rule in mod.RULES.items():
            if op_name in table:
                raise CompileError(f"internal: two lowering rules for {op_name}")
            table[op_name] = rule
    return table


# ops plate refuses on purpose, with the reason the user sees
REJECTED: dict[str, str] = {
    "tt.elementwise_inline_asm": "PTX inline assembly cannot run on PLATE; express the function with tl.* ops "
    "(or libdevice functions plate maps)",
    "tt.call": "a call to a function that could not be inlined (recursive or with several blocks)",
}

# ops with no rule of their own because the op that owns them lowers them
HANDLED_BY_PARENT: dict[str, str] = {
    "builtin.module": "the module: codegen lowers its public tt.func",
    "tt.func": "the kernel: codegen walks its body; other functions are inlined (passes/inline.py)",
    "tt.reduce.return": "terminator of a tt.reduce combine region, read by the tt.reduce rule",
    "tt.scan.return": "terminator of a tt.scan combine region, read by the tt.scan rule",
}

LOWERING: dict = {}


def _init():
    LOWERING.update(_gather_rules())


_init()
