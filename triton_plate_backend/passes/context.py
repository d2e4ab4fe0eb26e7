"""The lowering context: what every lowering rule sees (`Ctx`), the values a binding can hold
besides tiles and registers (`Const`, `ArgRef`, `BasedPtr`), and the element types of the ISA (`DTYPE`,
`dtype_of`, `is_float`).

It imports no rule: the rules_*.py modules import it, and codegen (which imports the rules
through the lowering table) hands the table to each `Ctx`."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import CompileError, PlateError
from ..ir.core import Op, PtrType, ScalarType, TensorType, Value, element_type
from ..isa.table import is_float
from ..srcloc import UNKNOWN_LOC
from .emitter import Emitter, Imm, View, VReg
from .records import plain_init

__all__ = ["DTYPE", "ArgRef", "BasedPtr", "Const", "Ctx", "dtype_of", "is_float", "missing_rule"]

# ---- types -------------------------------------------------------------------------------------
# TTIR element type name -> ISA dtype (index is 64-bit; pointers are i64 byte addresses)
DTYPE = {name: name for name in ("i1", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64")}
DTYPE.update(
    {
        "index": "i64",
        "f8E4M3FN": "f8e4m3fn",
        "f8E5M2": "f8e5m2",
        "f8E4M3FNUZ": "f8e4m3fnuz",
        "f8E5M2FNUZ": "f8e5m2fnuz",
    }
)


def dtype_of(t) -> str:
    """ISA dtype of a scalar/tensor type's elements (pointers are i64 byte addresses)."""
    t = element_type(t)
    if isinstance(t, PtrType):
        return "i64"
    if isinstance(t, ScalarType) and t.name in DTYPE:
        return DTYPE[t.name]
    raise CompileError(f"element type {t} has no PLATE dtype (supported: {', '.join(DTYPE)})")


@plain_init
@dataclass(frozen=True)
class Const:
    """A scalar constant, loaded with s.li where it is used (once per basic block: `Ctx.li`)."""

    value: int | float


@plain_init
@dataclass(frozen=True)
class ArgRef:
    """Kernel argument i, read with s.arg where it is used (once per basic block: `Ctx.as_reg`)."""

    index: int


@plain_init
@dataclass(frozen=True)
class BasedPtr:
    """A pointer tensor kept as a scalar base and its tt.addptr's i32 element offsets: element i
        points at base + sext(offsets[i]) * size. Half the bytes of the i64 address tile, which is
        made only where an instruction needs addresses (a gather/scatter makes it a chunk at a time,
        `rules_memory`); adding a uniform offset moves the base alone (`a_ptrs += BLOCK_K * stride`),
        so a loop carries the offsets unchanged. Loops carry it as a record (leaves: base, offsets). The
    offsets' buffer lists the pointer as an alias, so no op overwrites it in place while it lives."""

    base: VReg
    offsets: View  # i32, the pointer tensor's shape
    size: int  # bytes per element of the pointee

    @property
    def shape(self) -> tuple:
        return self.offsets.shape

    def leaves(self):
        return [self.base, self.offsets]

    def fresh(self, ctx):
        """A loop's home: a base register of its own and the same offsets, which nothing writes
        (the loop moves the base only, `rules_scf.carried_form`), so they need no copy."""
        return BasedPtr(VReg("ptr.base"), self.offsets, self.size)

    def addresses(self, ctx, into: View, rows: slice | None = None) -> View:
        """The i64 byte addresses of the elements (of `rows` of dim 0 only), written into `into`."""
        offs = self.offsets if rows is None else self.offsets.sub(0, rows.start, rows.stop - rows.start)
        ctx.vec("v.sext", into, offs)
        if self.size != 1:
            ctx.vec("v.mul", into, into, ctx.fill(self.size, "i64", into.shape))
        ctx.vec("v.add", into, into, ctx.splat(self.base, "i64", into.shape))
        return into


# ---- the lowering context ----------------------------------------------------------------------
class Ctx:
    """What a lowering rule sees: the emitter, value bindings and helpers. Rules take it as
    their first argument; nothing is global. `rules` is the lowering table (op name -> rule) that
    `lower_op` dispatches through, `rejected` the ops refused on purpose with the reason (both
    passed in by codegen, which owns the table: this module imports no rule)."""

    def __init__(self, machine, name: str, rules: dict, rejected: dict, options=None):
        self.machine, self.name, self.options = machine, name, options
        self.rules, self.rejected = rules, rejected
        self.em = Emitter(machine)
        if "emit" in vars(self.em):  # its compiled methods (passes/_emit): called without a frame of this class'
            self.emit, self.li = self.em.emit, self.em.li
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
        self.loop_memo: dict = {}  # (what, scf.for) -> prefetch's finding about the loop (it asks again and again)
        self.max_stages: int | None = None  # cap on a loop's num_stages (codegen lowers again if SRAM overflows)
        self.deepest_stages = 0  # the largest num_stages a pipelined loop used
        self.streaming_pipelined = False  # a loop without matrix work was pipelined (it may go unpipelined)
        self.body_copies: list[int] = []  # the enclosing scf.for's copies of its body, innermost last
        self.based_pointers = False  # large pointer tensors as BasedPtr (codegen lowers again if SRAM overflows)
        self.based_candidates = False  # a pointer tensor that could have been a BasedPtr was seen
        self.max_store_pieces: int | None = None  # cap on store_pieces' pieces (codegen lowers again on overflow)
        self.most_store_pieces = 0  # the most pieces one store was cut in
        self.rest: list = []  # op lists being lowered, innermost last: [ops, index, end, ops after]
        self.mma_rows: int | None = None  # set while a peeled last trip is lowered: m.mma in row blocks
        self.last_trip = False  # set while a peeled last trip is lowered: its loads prefetch nothing
        self.peel = True  # a K loop's last trip may be lowered apart (codegen lowers again without on overflow)
        self.peeled = False  # some loop's last trip was

    def defining_op(self, value: Value) -> Op | None:
        return self.defs.get(value)

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
        return isinstance(self.env.get(value), (View, BasedPtr))

    def reg(self, value: Value) -> VReg:
        b = self.env.get(value)  # (`binding` and `as_reg` inline for the common cases: a register, a constant,
        t = type(b)  # a kernel argument)
        if t is VReg:
            return b
        if t is Const:
            return self.li(b.value)
        if t is ArgRef:
            return self.em.rematerialised("s.arg", Imm(b.index), hint="arg")
        return self.as_reg(self.binding(value), value.type)

    def as_reg(self, b, t=None) -> VReg:
        if isinstance(b, VReg):
            return b
        if isinstance(b, Const):
            return self.li(b.value)
        if isinstance(b, ArgRef):
            return self.em.rematerialised("s.arg", Imm(b.index), hint="arg")
        if isinstance(b, View) and b.numel == 1:
            r = VReg()
            self.emit("v.extract", r, b, Imm(0))
            return r
        raise self.error(f"expected a scalar, got {b!r} of type {t}")

    def li(self, value, hint: str = "") -> VReg:
        """A register holding the constant, which the caller must not write (`Emitter.rematerialised`)."""
        return self.em.li(value, hint)

    def view(self, value: Value, shape=None) -> View:
        """The tile of a tensor value; a scalar is splatted to `shape` (a stride-0 view)."""
        b = self.binding(value)
        if shape is None:
            if isinstance(b, BasedPtr):
                return self.as_view(b, "i64", b.offsets.shape)
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
        if isinstance(b, BasedPtr):  # an instruction that needs the whole address tile
            t = b.addresses(
                self, self.new("i64", b.offsets.shape, what=f"pointer addresses i64{list(b.offsets.shape)}")
            )
            return t if t.shape == tuple(shape) else t.broadcast(tuple(shape))
        if isinstance(b, Const):
            return self.fill(b.value, dtype, shape)
        return self.splat(self.as_reg(b), dtype, shape)

    # ---- walking IR
    def lower_ops(self, block, terminators=()) -> Op | None:
        """Lower every op of a block; return its terminator if its name is in `terminators`
        (the caller lowers it)."""
        ops = block.ops
        end = len(ops) - 1 if ops and ops[-1].name in terminators else len(ops)
        self.lower_list(ops[:end], ops[end:])
        return ops[end] if end < len(ops) else None

    def rest_of_block(self) -> list[Op]:
        """The ops after the one being lowered in its block, its terminator left out when the caller
        lowers it (`lower_ops`' terminators)."""
        ops, i, end, _ = self.rest[-1]
        return ops[i + 1 : end]

    def take_rest(self) -> list[Op]:
        """`rest_of_block`, which the rule being run now lowers itself (`lower_list`, once per path):
        `lower_ops` then skips it."""
        frame = self.rest[-1]
        ops = frame[0][frame[1] + 1 : frame[2]]
        frame[1] = frame[2] - 1
        return ops

    def lower_list(self, ops, after=()) -> None:
        """Lower these ops in order (a block's, or the ops after a loop a rule lowers itself); `after`:
        the ops that follow them, which the caller lowers (a block's terminator)."""
        ops = list(ops)
        frame = [ops, 0, len(ops), list(after)]  # what `take_rest` hands a rule: ops[i + 1 : end]
        self.rest.append(frame)
        try:
            while frame[1] < frame[2]:
                op = ops[frame[1]]
                if self.demand is None or op in self.demand.live:
                    self.lower_op(op)
                frame[1] += 1
        finally:
            self.rest.pop()

    def lower_op(self, op: Op) -> None:
        saved_op, saved_loc = self.op, self.em.loc
        self.op, self.em.loc = op, op.loc
        try:
            rule = self.rules.get(op.name)
            if rule is None:
                raise missing_rule(op, self.rejected)
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


def missing_rule(op: Op, rejected: dict) -> CompileError:
    """The error for an op with no lowering rule: the reason when plate refuses it on purpose."""
    if op.name in rejected:
        return CompileError(f"{op.name} at {op.loc or UNKNOWN_LOC}: {rejected[op.name]}")
    res = ", ".join(str(r.type) for r in op.results) or "none"
    ins = ", ".join(str(v.type) for v in op.operands) or "none"
    return CompileError(
        f"no PLATE lowering for {op.name} (results: {res}; operands: {ins}) at "
        f"{op.loc or UNKNOWN_LOC}; the kernel uses an op plate does not support yet"
    )
