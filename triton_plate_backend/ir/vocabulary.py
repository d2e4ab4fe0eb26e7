"""The TTIR op vocabulary: every op plate knows, declared once, with the facts passes ask about.

`OPS[name]` is an `OpDef`: operand and result counts, whether it ends a block (and under which
parent op it may stand), what kind of regions it carries, its effects (the operands through which
it reads or writes device memory, any other effect) and its lowering status. The verifier's
arity, terminator and region rules, the parser's isolated ops, and the passes' lists of memory
ops, ops with effects and ops that write memory are all derived from this table; adding an op
means adding a row here (then a lowering rule in passes/, or a reason why there is none).

The lowering rules themselves live above, in `passes` (`codegen.LOWERING`); here `lowering` only
says which of three cases holds: a rule exists, the op is rejected on purpose (`why` is the
message the user sees), or the op is lowered by the op that owns it (`why` says which and how).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..errors import PlateError


class VocabularyError(PlateError):
    """A row of the op vocabulary is malformed (a bug in this table, found at import)."""


# what an op's regions are (the verifier checks each kind's contract)
REGION_KINDS = (
    "none",
    "module",  # builtin.module: one block of functions
    "function",  # tt.func: the body, ended by tt.return
    "loop",  # scf.for: body(iv, iter_args) -> scf.yield
    "branches",  # scf.if: then / else -> scf.yield
    "while",  # scf.while: before -> scf.condition, after -> scf.yield
    "combine",  # tt.reduce / tt.scan: combine(a..., b...) -> the op's .return
    "elementwise",  # tt.map_elementwise: a scalar function (several blocks allowed) -> .return
)
# effects other than memory reads/writes; an op with none of them, reading no memory, is pure
OTHER_EFFECTS = (
    "control",  # leaves its block for another block or ends the kernel (not a yield to a parent op)
    "print",
    "assert",
    "barrier",
    "call",  # an opaque callee
    "asm",  # inline assembly: anything may happen
)
LOWERING_STATUS = ("rule", "rejected", "parent")


@dataclass(frozen=True)
class OpDef:
    operands: tuple[int, int | None]  # (min, max) operand count; max None = any
    results: tuple[int, int | None]  # (min, max) result count
    region: str = "none"  # one of REGION_KINDS
    terminator: bool = False  # must be the last op of its block
    parents: tuple[str, ...] = ()  # the ops whose regions it may stand in directly (MLIR HasParent); () = any
    isolated: bool = False  # its regions see no value defined outside it (MLIR IsolatedFromAbove)
    reads: tuple[int, ...] = ()  # operands (pointers, descriptors) through which it reads device memory
    writes: tuple[int, ...] = ()  # operands through which it writes device memory
    effect: str = ""  # one of OTHER_EFFECTS, or "" for none
    lowering: str = "rule"  # one of LOWERING_STATUS
    why: str = ""  # for "rejected" / "parent": the reason, as the user or a developer reads it

    def __post_init__(self):
        problems = []
        if self.region not in REGION_KINDS:
            problems.append(f"region {self.region!r} is not one of {REGION_KINDS}")
        if self.effect and self.effect not in OTHER_EFFECTS:
            problems.append(f"effect {self.effect!r} is not one of {OTHER_EFFECTS}")
        if self.lowering not in LOWERING_STATUS:
            problems.append(f"lowering {self.lowering!r} is not one of {LOWERING_STATUS}")
        if (self.lowering == "rule") == bool(self.why):
            problems.append("`why` is required for rejected/parent ops and only for them")
        for lo, hi in (self.operands, self.results):
            if lo < 0 or (hi is not None and hi < lo):
                problems.append(f"bad count range ({lo}, {hi})")
        if problems:
            raise VocabularyError(f"malformed OpDef {self}: {'; '.join(problems)}")

    @property
    def pure(self) -> bool:
        """No memory access and no other effect: removable when its results are unused."""
        return not (self.reads or self.writes or self.effect)


def _rejected(op: OpDef, why: str) -> OpDef:
    return dataclasses.replace(op, lowering="rejected", why=why)


def _by_parent(op: OpDef, why: str) -> OpDef:
    return dataclasses.replace(op, lowering="parent", why=why)


ANY = (0, None)
NONE = (0, 0)
ONE = (1, 1)
CONSTANT = OpDef(NONE, ONE)
UNARY = OpDef(ONE, ONE)
BINARY = OpDef((2, 2), ONE)
TERNARY = OpDef((3, 3), ONE)
YIELD = OpDef(ANY, NONE, terminator=True)  # hands its operands to the parent op

# ops the parser reads that Triton's tl.* functions do not produce: no rule yet, and this says why
_NOT_EMITTED = "plate reads it but has no lowering rule: Triton 3.7.1 does not emit it for tl.* code"

OPS: dict[str, OpDef] = {
    # ---- builtin, functions, calls
    "builtin.module": _by_parent(
        OpDef(NONE, NONE, region="module", isolated=True), "the module: codegen lowers its public tt.func"
    ),
    "tt.func": _by_parent(
        OpDef(NONE, NONE, region="function", isolated=True),
        "the kernel: codegen walks its body; other functions are inlined (passes/inline.py)",
    ),
    "tt.return": OpDef(ANY, NONE, terminator=True, parents=("tt.func",), effect="control"),
    "tt.call": _rejected(
        OpDef(ANY, ANY, effect="call"),
        "a call to a function that could not be inlined (recursive or with several blocks)",
    ),
    # ---- structured control flow
    "scf.for": OpDef((3, None), ANY, region="loop"),
    "scf.if": OpDef(ONE, ANY, region="branches"),
    "scf.while": OpDef(ANY, ANY, region="while"),
    "scf.yield": dataclasses.replace(YIELD, parents=("scf.for", "scf.if", "scf.while")),
    "scf.condition": OpDef((1, None), NONE, terminator=True, parents=("scf.while",)),
    # ---- unstructured control flow
    "cf.br": OpDef(ANY, NONE, terminator=True, effect="control"),
    "cf.cond_br": OpDef((1, None), NONE, terminator=True, effect="control"),
    # ---- arith: constants, integer and float arithmetic, comparisons, casts
    "arith.constant": CONSTANT,
    "arith.select": TERNARY,
    "arith.cmpi": BINARY,
    "arith.cmpf": BINARY,
    "arith.addf": BINARY,
    "arith.subf": BINARY,
    "arith.mulf": BINARY,
    "arith.divf": BINARY,
    "arith.remf": BINARY,
    "arith.negf": _rejected(UNARY, _NOT_EMITTED + " (Triton negates as 0 - x)"),
    "arith.maxnumf": BINARY,
    "arith.minnumf": BINARY,
    "arith.maximumf": BINARY,
    "arith.minimumf": BINARY,
    "arith.addi": BINARY,
    "arith.subi": BINARY,
    "arith.muli": BINARY,
    "arith.divsi": BINARY,
    "arith.divui": BINARY,
    "arith.remsi": BINARY,
    "arith.remui": BINARY,
    "arith.ceildivsi": _rejected(BINARY, _NOT_EMITTED + " (tl.cdiv is (x + div - 1) // div)"),
    "arith.ceildivui": _rejected(BINARY, _NOT_EMITTED + " (tl.cdiv is (x + div - 1) // div)"),
    "arith.floordivsi": _rejected(BINARY, _NOT_EMITTED + " (Triton's // on integers truncates: arith.divsi)"),
    "arith.andi": BINARY,
    "arith.ori": BINARY,
    "arith.xori": BINARY,
    "arith.shli": BINARY,
    "arith.shrsi": BINARY,
    "arith.shrui": BINARY,
    "arith.maxsi": BINARY,
    "arith.minsi": BINARY,
    "arith.maxui": BINARY,
    "arith.minui": BINARY,
    "arith.extf": UNARY,
    "arith.truncf": UNARY,
    "arith.extsi": UNARY,
    "arith.extui": UNARY,
    "arith.trunci": UNARY,
    "arith.sitofp": UNARY,
    "arith.uitofp": UNARY,
    "arith.fptosi": UNARY,
    "arith.fptoui": UNARY,
    "arith.bitcast": UNARY,
    "arith.index_cast": UNARY,
    "arith.index_castui": UNARY,
    "ub.poison": CONSTANT,
    # ---- math
    **{
        f"math.{name}": UNARY
        for name in (
            "absf absi acos acosh asin asinh atan atanh cbrt ceil cos cosh ctlz ctpop erf erfc exp exp2 expm1 "
            "floor isfinite isinf isnan log log10 log1p log2 round roundeven rsqrt sin sinh sqrt tan tanh trunc"
        ).split()
    },
    "math.cttz": _rejected(UNARY, _NOT_EMITTED + " (no tl.* function counts trailing zeros)"),
    "math.atan2": BINARY,
    "math.copysign": BINARY,
    "math.powf": BINARY,
    "math.fma": TERNARY,
    # ---- tt: program ids, ranges, elementwise
    "tt.get_program_id": CONSTANT,
    "tt.get_num_programs": CONSTANT,
    "tt.make_range": CONSTANT,
    "tt.mulhiui": BINARY,
    "tt.precise_sqrt": UNARY,
    "tt.precise_divf": BINARY,
    "tt.clampf": TERNARY,
    "tt.extern_elementwise": OpDef(ANY, ONE),
    "tt.elementwise_inline_asm": OpDef(ANY, ANY, effect="asm"),  # runs only what passes.ptx_asm knows
    "tt.map_elementwise": OpDef((1, None), (1, None), region="elementwise"),
    "tt.map_elementwise.return": _by_parent(
        dataclasses.replace(YIELD, parents=("tt.map_elementwise",)),
        "terminator of a tt.map_elementwise function, read by the tt.map_elementwise rule",
    ),
    # ---- tt: casts and shapes
    "tt.bitcast": UNARY,
    "tt.fp_to_fp": UNARY,
    "tt.int_to_ptr": UNARY,
    "tt.ptr_to_int": UNARY,
    "tt.splat": UNARY,
    "tt.unsplat": UNARY,
    "tt.broadcast": UNARY,
    "tt.expand_dims": UNARY,
    "tt.reshape": UNARY,
    "tt.trans": UNARY,
    "tt.split": OpDef(ONE, (2, 2)),
    "tt.join": BINARY,
    "tt.cat": BINARY,
    "tt.gather": BINARY,
    "tt.histogram": OpDef((1, 2), ONE),  # source, optional mask
    # ---- tt: dot, reductions, scans
    "tt.dot": TERNARY,
    "tt.dot_scaled": OpDef((3, 5), ONE),  # a, b, c, optional a_scale, b_scale (operandSegmentSizes)
    "tt.reduce": OpDef((1, None), (1, None), region="combine"),
    "tt.reduce.return": _by_parent(
        dataclasses.replace(YIELD, parents=("tt.reduce",)),
        "terminator of a tt.reduce combine region, read by the tt.reduce rule",
    ),
    "tt.scan": OpDef((1, None), (1, None), region="combine"),
    "tt.scan.return": _by_parent(
        dataclasses.replace(YIELD, parents=("tt.scan",)),
        "terminator of a tt.scan combine region, read by the tt.scan rule",
    ),
    # ---- tt: pointers and memory
    "tt.addptr": BINARY,
    "tt.load": OpDef((1, 3), ONE, reads=(0,)),  # ptr, optional mask, other
    "tt.store": OpDef((2, 3), NONE, writes=(0,)),  # ptr, value, optional mask
    "tt.atomic_rmw": OpDef((2, 3), ONE, reads=(0,), writes=(0,)),  # ptr, value, optional mask
    "tt.atomic_cas": OpDef((3, 3), ONE, reads=(0,), writes=(0,)),  # ptr, compare, value
    "tt.make_tensor_ptr": OpDef((1, None), ONE),  # base, shape..., strides..., offsets...
    "tt.advance": OpDef((1, None), ONE),  # block pointer, offsets...
    "tt.make_tensor_descriptor": OpDef((1, None), ONE),  # base, shape..., strides...
    "tt.reinterpret_tensor_descriptor": _rejected(
        UNARY,
        "a tensor descriptor read back from a pointer (tl._experimental_reinterpret_tensor_descriptor) has no "
        "PLATE lowering; build descriptors with tl.make_tensor_descriptor",
    ),
    "tt.descriptor_load": OpDef((1, None), ONE, reads=(0,)),  # desc, indices...
    "tt.descriptor_store": OpDef((2, None), NONE, writes=(0,)),  # desc, src, indices...
    "tt.descriptor_reduce": OpDef((2, None), NONE, reads=(0,), writes=(0,)),  # desc, src, indices...
    "tt.descriptor_gather": OpDef((3, 3), ONE, reads=(0,)),  # desc, x offsets, y offset
    "tt.descriptor_scatter": OpDef((4, 4), NONE, writes=(0,)),  # desc, x offsets, y offset, src
    # ---- debugging, hints, synchronisation
    "tt.print": OpDef(ANY, NONE, effect="print"),
    "tt.assert": OpDef(ONE, NONE, effect="assert"),
    # an assumption the compiler may use, with no effect at run time: unused, it is dead code
    "llvm.intr.assume": OpDef((1, None), NONE),
    "ttg.barrier": OpDef(NONE, NONE, effect="barrier"),
    "gpu.barrier": OpDef(NONE, NONE, effect="barrier"),
    # ---- plate's own: the run of programs along x a persistent kernel's launched program runs
    # (passes/program_range.py): plate_split1.., plate_rows, plate_grid_x -> base, count (no TTIR has it)
    "plate.program_range": OpDef((2, None), (2, 2)),
}

# ---- views the verifier and the parser share ------------------------------------------------------
TERMINATORS = frozenset(name for name, op in OPS.items() if op.terminator)
ISOLATED = frozenset(name for name, op in OPS.items() if op.isolated)


def region_terminators(parent: str) -> tuple[str, ...]:
    """The terminators that may end a region of `parent` (those naming it among their parents)."""
    return tuple(name for name, op in OPS.items() if op.terminator and parent in op.parents)
