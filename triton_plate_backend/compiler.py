"""The Triton compiler backend for PLATE: option parsing and stage wiring, nothing else.

Stages (keys are the file extensions of kernel.asm, of Triton's cache and of its dumps):

    ttir  Triton's own TTIR passes (the list the NVIDIA backend runs, less those a module's ops show
          would change nothing: ttir_passes), on Triton's MLIR module
    pir   our TTIR parser, then the IR passes (passes.pipeline.run_passes, each rewriting pass
          checked by ir.verify): plate IR text, memory ops annotated with `plate.access`
    pasm  the pir text parsed back, then code generation (passes.pipeline.generate): PLATE
          assembly text; a comment block at its top says where each op's results live in SRAM
    pbin  the pasm text assembled, verified and encoded: the bytes the launcher loads

Each stage reads only the text (or bytes) of the stage before and ``metadata``, so a user can edit
a ``pir`` or ``pasm`` text and compile on from it: with Triton's override flow
(``TRITON_KERNEL_DUMP`` then ``TRITON_KERNEL_OVERRIDE``/``TRITON_OVERRIDE_DIR``, or the
``ir_override`` option naming a ``.pir``/``.pasm`` file). Triton 3.7.1 reads an override file only
for its own extensions and hands the next stage ``None`` for ours; that stage then reads the file
(``overridden_stage_file``). An edited text that does not read names its file and line.

Reading a text back costs time when the stage before has just built what it describes: a small
content-addressed memo (``text_memo``) hands the parsed module / the Program on when the text is
exactly the one printed; any other text is parsed for real. The per-kernel report (instructions,
tiles, SRAM per op, access analysis) is the ``report.txt`` dump of the pasm stage (PLATE_DUMP_DIR).

Triton imports this module during ``import triton``: keep the imports at the top light (no torch,
no triton.language, no triton.runtime.jit, no other backend's classes).
"""

from __future__ import annotations

import functools
import glob
import hashlib
import importlib
import operator
import os
import re
import tempfile
from dataclasses import dataclass, fields

from .target import BACKEND, PLATE_ARCH, WARP_SIZE, import_triton_first

import_triton_first(__name__)

from triton.backends.compiler import BaseBackend, GPUTarget, Language  # noqa: E402

from . import __version__, knobs  # noqa: E402
from .errors import AsmError, CompileError, PlateError, SramOverflow  # noqa: E402
from .isa.table import ENUMS  # noqa: E402
from .machine import PRESETS  # noqa: E402
from .sim.host import cycle_collection_paused  # noqa: E402
from .text_memo import TextMemo  # noqa: E402
from .vendor_options import accept_vendor_options  # noqa: E402

DOT_INPUT_PRECISIONS = ENUMS["prec"]  # the m.mma precisions of the ISA table
# Triton names of the ISA's f8e4m3fn, f8e5m2, f8e4m3fnuz and f8e5m2fnuz, and fp8e4b15 (i8 in TTIR, converted by
# fp8e4b15.py)
FP8_DTYPES = ("fp8e4nv", "fp8e5", "fp8e4b15", "fp8e4b8", "fp8e5b16")

# Triton's TTIR passes, in the order the NVIDIA backend's make_ttir runs them. PLATE has no TMA:
# tensor descriptors are always rewritten to pointers (NVIDIA does so below sm90).
TTIR_PASSES = (
    ("common", "add_inliner"),
    ("ttir", "add_rewrite_tensor_pointer"),
    ("ttir", "add_rewrite_tensor_descriptor_to_pointer"),
    ("common", "add_canonicalizer"),
    ("ttir", "add_combine"),
    ("ttir", "add_reorder_broadcast"),
    ("common", "add_cse"),
    ("common", "add_symbol_dce"),
    ("ttir", "add_loop_unroll"),
)
REORDER_BROADCAST = ("ttir", "add_reorder_broadcast")
CSE = ("common", "add_cse")


class OptionError(PlateError, ValueError):
    """A compile option with a value PLATE cannot honour; says the legal form."""


class NumWarpsError(OptionError, AssertionError):
    """num_warps not a power of 2: an AssertionError too, as Triton's GPU backends raise (test_num_warps_pow2)."""


def _tuple(value) -> tuple:
    return tuple(value) if isinstance(value, (list, tuple, set, frozenset)) else (value,)


@dataclass(frozen=True)
class PlateOptions:
    num_warps: int = 4  # accepted for Triton's layouts; PLATE runs one program instance per core
    num_ctas: int = 1
    num_stages: int = 3
    # streaming kernels run as persistent loops over programs (passes/persistent.py); False: one program each
    persistent_programs: bool = True
    warp_size: int = WARP_SIZE
    ir_override: str | None = None
    enable_fp_fusion: bool = True
    launch_cooperative_grid: bool = False
    supported_fp8_dtypes: tuple[str, ...] = FP8_DTYPES
    deprecated_fp8_dot_operand_dtypes: tuple[str, ...] = ()
    # with "tf32" allowed, tl.dot defaults to tf32 whatever this says (Triton's frontend)
    default_dot_input_precision: str = "tf32"
    allowed_dot_input_precisions: tuple[str, ...] = DOT_INPUT_PRECISIONS
    max_num_imprecise_acc_default: int = 0
    extern_libs: tuple | None = None
    debug: bool = False
    backend_name: str = BACKEND
    sanitize_overflow: bool = True
    arch: str = f"plate-isa{PLATE_ARCH}"
    instrumentation_mode: str = ""
    machine: str = "plate1"  # machine.PRESETS name; parse_options fills it from PLATE_MACHINE
    # other backends' options (vendor_options.VENDOR_OPTIONS says what plate does with each): fields so
    # that Triton's runtime accepts them as launch kwargs; parse_options keeps them at their defaults
    maxnreg: int | None = None
    launch_pdl: bool = False
    ptx_version: int | None = None
    ptx_options: str | None = None
    enable_reflect_ftz: bool = True
    waves_per_eu: int = 0
    matrix_instr_nonkdim: int = 0
    kpack: int = 1
    schedule_hint: str = "none"
    allow_flush_denorm: bool = False

    def __post_init__(self):
        def bad(field, value, legal, error=OptionError):
            raise error(f"option {field}={value!r} is not supported by plate; legal: {legal}")

        def is_int(v):
            return isinstance(v, int) and not isinstance(v, bool)

        for name in ("supported_fp8_dtypes", "deprecated_fp8_dot_operand_dtypes", "allowed_dot_input_precisions"):
            object.__setattr__(self, name, _tuple(getattr(self, name)))
        if self.extern_libs is not None:
            libs = self.extern_libs.items() if isinstance(self.extern_libs, dict) else self.extern_libs
            object.__setattr__(self, "extern_libs", tuple(sorted((str(k), str(v)) for k, v in libs)))
        n = self.num_warps
        if not is_int(n) or n < 1 or n & (n - 1):
            bad("num_warps", n, "a power of 2 (1, 2, 4, 8, ...): num_warps must be a power of 2", NumWarpsError)
        if self.num_ctas != 1:
            bad("num_ctas", self.num_ctas, "1 (PLATE has no CTA clusters)")
        if not is_int(self.num_stages) or self.num_stages < 0:
            bad("num_stages", self.num_stages, "an integer >= 0")
        if self.warp_size != WARP_SIZE:
            bad("warp_size", self.warp_size, str(WARP_SIZE))
        if self.maxnreg is not None and (not is_int(self.maxnreg) or self.maxnreg < 1):
            bad("maxnreg", self.maxnreg, "None or a positive integer")
        unknown = [p for p in self.allowed_dot_input_precisions if p not in DOT_INPUT_PRECISIONS]
        if unknown or not self.allowed_dot_input_precisions:
            bad(
                "allowed_dot_input_precisions",
                self.allowed_dot_input_precisions,
                f"a non-empty subset of {DOT_INPUT_PRECISIONS}",
            )
        if self.default_dot_input_precision not in self.allowed_dot_input_precisions:
            bad(
                "default_dot_input_precision",
                self.default_dot_input_precision,
                f"one of {self.allowed_dot_input_precisions}",
            )
        for name in ("supported_fp8_dtypes", "deprecated_fp8_dot_operand_dtypes"):
            if any(d not in FP8_DTYPES for d in getattr(self, name)):
                bad(name, getattr(self, name), f"a subset of {FP8_DTYPES}")
        if self.instrumentation_mode:
            bad("instrumentation_mode", self.instrumentation_mode, "'' (no instrumentation passes on plate)")
        if self.machine not in PRESETS:
            bad("machine", self.machine, f"one of {', '.join(PRESETS)} (set PLATE_MACHINE)")
        if self.backend_name != BACKEND:
            bad("backend_name", self.backend_name, repr(BACKEND))

    def hash(self) -> str:
        # by identity: equal options can differ in a value's type (debug=1 and debug=True), and so in digest
        kept = _OPTION_HASHES.get(id(self))
        if kept is not None and kept[0] is self:
            return kept[1]
        digest = self._digest()
        _remember(_OPTION_HASHES, id(self), (self, digest))  # holding self: its id is not reused meanwhile
        return digest

    def _digest(self) -> str:
        key = "_".join(f"{k}-{v}" for k, v in sorted(self.__dict__.items()))
        return hashlib.sha256(key.encode("utf-8")).hexdigest()


OPTION_FIELDS = tuple(f.name for f in fields(PlateOptions))

# Triton parses the options twice per compile (the launch's binder, then compile() from the first's __dict__)
# and hashes them once for the cache key: ~40 us of CPU a compile, for the few distinct option sets a process
# uses. Options are frozen, so equal arguments can share one instance and its digest.
_PARSED: dict[tuple, PlateOptions] = {}  # parse_options' arguments (_options_key) -> the options made of them
_OPTION_HASHES: dict[int, tuple[PlateOptions, str]] = {}  # id(options) -> (options, digest)
_MEMO_LIMIT = 256  # distinct option sets kept; a process with more starts over


def _remember(memo: dict, key, value) -> None:
    if len(memo) >= _MEMO_LIMIT:
        memo.clear()
    memo[key] = value


def _options_key(args: dict) -> tuple | None:
    """parse_options' arguments as a key, each value with its type (1 and True are equal as keys, not as
    options), or None where a value is not an int, bool, str, None or a tuple of strings (a dict or list the
    constructor converts, whose elements' types the key would not tell apart)."""
    key = []
    for name, value in args.items():
        kind = type(value)
        if kind is tuple:
            if not all(type(v) is str for v in value):
                return None
        elif kind not in _SCALARS:
            return None
        key.append((name, kind, value))
    return tuple(key)


# The options parse_options returned last (a few slots, by the options' identity), with their field names in order.
# Triton's compile() parses the options again from a copy of the ``__dict__`` of those the launch's binder has just
# parsed (jit.py's _do_compile: ``options.__dict__``, copied by ``dict(options, **extra_options)``): ~40 us of CPU a
# compile to key the copy's 35 fields (types included) for _PARSED, for the options it came from.
_RETURNED: list[tuple[PlateOptions, tuple[str, ...]] | None] = [None] * 4


def _returned_slot(options: PlateOptions) -> int:
    return (id(options) >> 4) % len(_RETURNED)


def _options_copied(opts) -> PlateOptions | None:
    """The options parse_options returned whose ``__dict__`` ``opts`` is a copy of: the same names in the same
    order, each value the very object (so of the same type: ``debug=1`` is not ``debug=True``), or None. Those
    arguments give the options equal to them, of the same types and digest; no vendor option warns (each is at
    its default in options parse_options made), and no knob is read (``machine`` and ``enable_fp_fusion`` are
    given)."""
    if type(opts) is not dict:
        return None
    for kept in _RETURNED:
        if kept is None:
            continue
        options, names = kept
        values = options.__dict__
        if len(opts) == len(names) and tuple(opts) == names and all(map(operator.is_, opts.values(), values.values())):
            return options
    return None


_SCALARS = frozenset({str, int, bool, type(None)})  # no float: 0.0 and -0.0 are equal keys, "0.0" and "-0.0" digests


@functools.cache
def package_source_hash() -> str:
    """sha256 of every .py file of triton_plate_backend: Triton's own key (triton_key) covers only
    Triton, so a change to the lowering must change ours."""
    root = os.path.dirname(os.path.abspath(__file__))
    h = hashlib.sha256(__version__.encode())
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                h.update(os.path.relpath(path, root).encode())
                with open(path, "rb") as f:
                    h.update(f.read())
    return h.hexdigest()


def min_dot_size(lhs_type, rhs_type) -> tuple[int, int, int]:
    """Smallest (M, N, K) of a tl.dot: the compiler pads any tile to the matrix unit, so none."""
    return (1, 1, 1)


# ---- stages --------------------------------------------------------------------------------------
def make_ttir(mod, metadata, options):
    chosen = ttir_passes(mod)
    if REORDER_BROADCAST in chosen:
        _run_ttir_passes(mod, chosen)
    else:  # decided on the module as combine leaves it: the passes before CSE, the check, the rest
        cut = chosen.index(CSE)
        _run_ttir_passes(mod, chosen[:cut])
        _run_ttir_passes(mod, ((REORDER_BROADCAST,) if reorder_broadcast_can_change(mod) else ()) + chosen[cut:])
    from triton import knobs as triton_knobs

    if triton_knobs.compilation.use_ir_loc == "ttir":  # Triton snapshots the locations of the module
        return mod
    # its text, printed once: Triton's cache writes the .ttir file from it and the pir stage reads it (the
    # module handed on was printed by both: ~0.1 ms per print of a small kernel)
    return str(mod)


def _run_ttir_passes(mod, pass_list) -> None:
    from triton._C.libtriton import ir, passes

    pm = ir.pass_manager(mod.context)
    pm.enable_debug()
    for namespace, add_pass in pass_list:
        getattr(getattr(passes, namespace), add_pass)(pm)
    pm.run(mod, "make_ttir")


def ttir_passes(mod) -> tuple[tuple[str, str], ...]:
    """TTIR_PASSES less those that would leave this module as it is, told from its ops (one walk, ~0.05 ms
    against ~0.1 ms of an MLIR pass's fixed cost on a small kernel), in the same order. A module with no block
    pointer (``tt.make_tensor_ptr``, ``tt.advance``, a ``!tt.ptr<tensor<..>>`` argument) and no descriptor (an
    op named ``*desc*``, a ``!tt.tensordesc`` argument: the descriptor rewrite also expands those arguments)
    skips

    - both rewrites;
    - without a ``tt.call``: the inliner and symbol DCE (the frontend emits a function per called one; a
      module without a call holds only the public kernel), and the canonicalizer is its first simplification;
    - with calls: the canonicalizer, as the inliner's own pipeline is the canonicalizer, run on every function
      it inlined into, so the module is canonical already.

    A module with a block pointer or a descriptor runs every pass (without the inliner's canonicalization
    first, the descriptor rewrite's constants come out in another order). Any module skips the loop unroller
    (the last pass) without an ``scf.for`` carrying ``tt.loop_unroll_factor``. Reorder-broadcast is in the list
    only for a module with a ``tt.broadcast`` or a rewrite to run; elsewhere make_ttir decides it on the module
    combine leaves (reorder_broadcast_can_change). Combine and CSE always run. Over every 5th test of upstream
    test_core's interpreter selection (2441 compiles) the TTIR this list produces is the full list's text for
    text."""
    names: set[str] = set()
    unroll = []

    def visit(op) -> None:
        name = op.get_name()
        names.add(name)
        if name == "scf.for" and op.get_int_attr("tt.loop_unroll_factor") is not None:
            unroll.append(op)

    mod.walk(visit)
    entry = mod.get_function(mod.get_entry_func_name())
    arg_types = " ".join(str(t) for t in mod.get_function_signature(entry))
    calls = "tt.call" in names
    block_ptrs = bool(names & {"tt.make_tensor_ptr", "tt.advance"}) or "!tt.ptr<tensor<" in arg_types
    descriptors = any("desc" in n for n in names) or "tensordesc" in arg_types
    skip = set() if unroll else {"add_loop_unroll"}
    if not (block_ptrs or descriptors):
        skip |= {"add_rewrite_tensor_pointer", "add_rewrite_tensor_descriptor_to_pointer"}
        skip |= {"add_canonicalizer"} if calls else {"add_inliner", "add_symbol_dce"}
        if "tt.broadcast" not in names:
            skip.add("add_reorder_broadcast")
    return tuple(p for p in TTIR_PASSES if p[1] not in skip)


# the ops whose results reorder-broadcast's patterns take as splats: tt.splat, and arith.constant (the TTIR
# op with the ConstantLike trait whose value can be a splat DenseElementsAttr; scalar ones count too: a
# harmless over-approximation)
_SPLAT_SOURCES = frozenset(("tt.splat", "arith.constant"))
# ops that are neither Elementwise nor tt.expand_dims: their operands need no look (loop bounds, stored values)
_NOT_ROOTS = frozenset(
    ("tt.load", "tt.store", "tt.return", "tt.call", "tt.func", "scf.for", "scf.if", "scf.yield", "scf.while")
    + ("scf.condition", "tt.reduce", "tt.reduce.return", "tt.scan", "tt.scan.return", "tt.dot", "tt.print")
    + ("tt.assert", "tt.atomic_rmw", "tt.atomic_cas", "tt.make_range", "tt.get_program_id", "builtin.module")
)


def reorder_broadcast_can_change(mod) -> bool:
    """Whether Triton's reorder-broadcast pass could change ``mod`` as combine leaves it (one walk, 30-45 us on a
    small kernel at load 9, against 0.13-0.37 ms for the pass: its greedy driver freezes two trait patterns over
    every registered op). From lib/Dialect/Triton/Transforms/ReorderBroadcast.cpp (3.7.1) its patterns are

    - BroadcastOp's canonicalizations, broadcast(splat) and broadcast(broadcast): rooted at ``tt.broadcast``;
    - ExpandDimsOp's canonicalization: expand_dims of a splat or of a broadcast;
    - MoveSplatAfterElementwise: an Elementwise op with operands, each a ``tt.splat`` or a splat constant;
    - MoveBroadcastAfterElementwise: an Elementwise op with a ``tt.broadcast`` operand.

    So True for a module with a ``tt.broadcast`` or with an op (not in _NOT_ROOTS) whose operands all come
    from _SPLAT_SOURCES. Without one no pattern matches, and the rest of the greedy driver (folding, dead-op
    removal, uniquing and hoisting constants, region simplification) is what combine's driver, with the same
    default config, has just done to a fixpoint (it converged: a driver that does not fails the pass), so the
    pass leaves the module as it is (constants: combine left them uniqued at the front of their block, where a
    fresh driver's folder keeps them). Checked over upstream test_core's interpreter selection (9339 compiles):
    make_ttir's TTIR is the one with the pass, text for text. The walk is post-order: an operand's defining op
    comes before its user."""
    splats: set[int] = set()
    found = []

    def visit(op) -> None:
        if found:
            return
        name = op.get_name()
        if name in _SPLAT_SOURCES:
            splats.add(op.get_result(0).id())
        elif name == "tt.broadcast":
            found.append(op)
        elif name not in _NOT_ROOTS and splats:
            n = op.get_num_operands()
            if n and all(op.get_operand(i).id() in splats for i in range(n)):
                found.append(op)

    mod.walk(visit)
    return bool(found)


@functools.cache
def _sram_out_of_resources_class():
    """SramOverflow as Triton's OutOfResources too, so @triton.autotune prunes a config that does not
    fit. Built lazily: importing triton.runtime from this module's top level is a circular import."""
    from triton.runtime.errors import OutOfResources

    class SramOutOfResources(SramOverflow, OutOfResources):
        def __init__(self, message: str, *, required=None, limit=None):
            SramOverflow.__init__(self, message, required=required, limit=limit)
            self.name = "shared memory (PLATE scratchpad SRAM)"

        def __str__(self) -> str:  # our message (sizes, largest tensors, what to shrink), not Triton's
            return Exception.__str__(self)

        def __reduce__(self):
            return (sram_out_of_resources, (str(self), self.required, self.limit))

    return SramOutOfResources


def sram_out_of_resources(message: str, required=None, limit=None):
    return _sram_out_of_resources_class()(message, required=required, limit=limit)


# exact stage text -> what the stage that printed it built: the next stage takes it (text_memo)
PARSED_PIR = TextMemo()  # pir text -> (the plate IR module it was printed from, its access analysis)
ASSEMBLED_PASM = TextMemo()  # pasm text -> the Program it was disassembled from (as read back)
TTIR_READ = TextMemo()  # f"{compile hash} ttir" -> the TTIR text the pir stage read (to tell override folders apart)


class _StageModules:
    """The modules the stages call, imported at the first compile that reads one (not at ``import triton``: the
    imports at the top stay light), then kept as attributes: an import statement in a stage function ran the import
    machinery at every compile (15 a compile, ~10k instructions each). Read through the module at each call, as
    those statements did, so a test's monkeypatch of a module's function still reaches the stages."""

    _PATHS = {
        "access": ".passes.access",
        "asm": ".isa.asm",
        "core": ".ir.core",
        "encoding": ".isa.encoding",
        "machine": ".machine",
        "parser": ".ttir.parser",
        "pipeline": ".passes.pipeline",
        "printer": ".ir.printer",
        "ttir_errors": ".ttir.errors",
        "verified": ".isa.verified",
    }

    def __getattr__(self, name: str):  # (only while the attribute is not set yet)
        if name not in self._PATHS:
            raise AttributeError(name)
        module = importlib.import_module(self._PATHS[name], __package__)
        setattr(self, name, module)
        return module


_M = _StageModules()


def make_pir(src, metadata, options):
    ttir_text = str(src)
    name = _entry_name(src, ttir_text)
    metadata["name"] = name
    _dump(metadata, "ttir", ttir_text)
    try:
        analysis = _M.access.AccessAnalysis()
        machine = _M.machine.get_machine(options.machine)
        sram = machine.core.sram_bytes if options.persistent_programs else None
        module = _M.pipeline.run_passes(
            _M.parser.parse(ttir_text, f"{name}.ttir"),
            analysis,
            persistent_sram=sram,
            persistent_groups=machine.total_domains,
        )
        pir_text = _M.printer.print_module(module)
    except PlateError as e:
        e.add_note(f"reproducer: {_write_reproducer(metadata, 'ttir', ttir_text)} (the TTIR the pir stage read)")
        raise
    PARSED_PIR.put(pir_text, (module, analysis))
    if "hash" in metadata:
        TTIR_READ.put(f"{metadata['hash']} ttir", ttir_text)
    _dump(metadata, "pir", pir_text)
    return pir_text


def make_pasm(src, metadata, options):
    pir_text, filename = _stage_text(src, "pir", metadata, options)
    machine = _M.machine.get_machine(options.machine)
    try:
        module, analysis = PARSED_PIR.take(pir_text) or (_read_pir(pir_text, filename), None)
        program, report = _M.pipeline.generate(module, options, machine, analysis, access_report=bool(knobs.dump_dir()))
        _M.core.release(module)  # read no more: freed now, not by the cycle collector's walk
        _M.verified.verify_once(program, machine)
    except SramOverflow as e:  # as Triton's OutOfResources too, so @triton.autotune prunes the config
        raise sram_out_of_resources(str(e), e.required, e.limit) from e
    except PlateError as e:
        if isinstance(e, _M.ttir_errors.TtirParseError):  # names the file, line and column itself
            raise
        if src is None:  # an override file: the file is the reproducer
            e.add_note(f"in {filename} (the plate IR the pasm stage read)")
        else:
            e.add_note(f"reproducer: {_write_reproducer(metadata, 'pir', pir_text)} (the plate IR the pasm stage read)")
        raise
    _set_binary_metadata(metadata, program)
    text, read_back = _M.asm.disassemble_read_back(program)
    text = _sram_comment(report.get("sram", "")) + text
    _M.verified.passed(read_back, machine)  # what verify() reads is the same: the names differ, not the content
    ASSEMBLED_PASM.put(text, read_back)
    _dump(metadata, "pasm", text)
    if knobs.dump_dir():
        _dump(metadata, "report.txt", _M.pipeline.format_report(report))
    return text


def make_pbin(src, metadata, options):
    text, filename = _stage_text(src, "pasm", metadata, options)
    machine = _M.machine.get_machine(options.machine)
    program = ASSEMBLED_PASM.take(text)
    if program is None:
        try:
            program = _M.asm.assemble(text, machine)
        except AsmError as e:
            raise _in_file(e, filename) from e
    _M.verified.verify_once(program, machine)
    _set_binary_metadata(metadata, program)
    return bytes(_M.encoding.encode(program))


def _read_pir(text: str, filename: str):
    """plate IR text (a user's edit, an override file) -> a module codegen may take."""
    from .ir.verify import verify
    from .ttir.parser import parse

    module = parse(text, filename)
    verify(module)
    return module


def _sram_comment(sram: str) -> str:
    """The SRAM each op's results got, as `;` comments for the top of the pasm text (the assembler skips them)."""
    if not sram:
        return ""
    lines = ["; SRAM of the plate IR ops' results (op, source line: address+bytes):"]
    return "\n".join(lines + [f";   {line}" for line in sram.splitlines()]) + "\n"


def _in_file(e: AsmError, filename: str) -> AsmError:
    """The assembler's error with the stage file it read in front of its line and column."""
    err = AsmError(f"{filename}: {e}")
    err.line, err.col, err.text = e.line, e.col, e.text
    return err


# ---- a stage's input: the text of the stage before, or the file that overrides it -----------------------
def _stage_text(src, ext: str, metadata, options) -> tuple[str, str]:
    """(text, file name for errors) of the `ext` stage's output that this stage reads."""
    if src is not None:
        return str(src), f"{metadata.get('name', 'kernel')}.{ext}"
    path = overridden_stage_file(ext, metadata, options)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    _cache_overriding_text(metadata, ext, path, text)
    return text, path


def overridden_stage_file(ext: str, metadata, options) -> str:
    """The file Triton read in place of the `ext` stage's output (it hands the next stage None).

    The ``ir_override`` option if it names a ``.ext`` file, else the one file
    ``$TRITON_OVERRIDE_DIR/<source hash>/<kernel>.ext`` for this kernel. Triton keys the folder by a
    hash of the kernel's source that no stage sees: of several folders for one kernel name (e.g. two
    autotune configs), the one whose dumped ``<kernel>.ttir`` is the TTIR this compile read."""
    name = metadata.get("name", "kernel")
    override = getattr(options, "ir_override", None)
    if override and override.endswith(f".{ext}"):
        return override
    from triton import knobs as triton_knobs

    found = []
    if triton_knobs.compilation.override and triton_knobs.cache.override_dir:
        root = glob.escape(triton_knobs.cache.override_dir)
        for stem in (name, f"@{name}"):  # ASTSource names files by the function, IRSource by @function
            found += glob.glob(os.path.join(root, "*", glob.escape(f"{stem}.{ext}")))
    if len(found) > 1:  # the folder Triton chose holds the dumped TTIR this compile read, if it was copied whole
        ttir = TTIR_READ.peek(f"{metadata.get('hash')} ttir")
        found = [f for f in found if _read_or_none(os.path.splitext(f)[0] + ".ttir") == ttir] or found
    if len(found) == 1:
        return found[0]
    if not found:
        raise CompileError(
            f"kernel {name}: the {ext} stage produced no text (Triton overrode it with a file plate cannot "
            f"find); name the file with the ir_override option or put it in $TRITON_OVERRIDE_DIR/<hash>/{name}.{ext}"
        )
    raise CompileError(
        f"kernel {name}: {len(found)} override files could replace its {ext} stage ({', '.join(sorted(found))}) "
        "and plate cannot tell which one Triton chose; copy each dumped folder whole (its .ttir tells them apart), "
        "keep one per kernel name, or name the file with the ir_override option"
    )


def _read_or_none(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return None


def _cache_overriding_text(metadata, ext: str, path: str, text: str) -> None:
    """Triton cached the text it could not read as "None": put the overriding text there (kernel.asm[ext])."""
    from triton.runtime.cache import get_cache_manager

    if "hash" not in metadata:
        return
    cache = get_cache_manager(metadata["hash"])
    for filename in {os.path.basename(path), f"{metadata.get('name', 'kernel')}.{ext}"}:
        cached = cache.get_file(filename)
        if cached is not None:
            with open(cached, encoding="utf-8") as f:
                if f.read() != "None":
                    continue
            cache.put(text, filename, binary=False)


def _set_binary_metadata(metadata, program) -> None:
    """What Triton's launcher, its cache and Inductor read; PLATE needs no scratch memory."""
    metadata["name"] = program.name
    metadata["shared"] = int(program.sram_bytes or program.sram_high_water())
    metadata["global_scratch_size"] = 0
    metadata["global_scratch_align"] = 1
    metadata["profile_scratch_size"] = 0
    metadata["profile_scratch_align"] = 1


def _entry_name(src, text: str) -> str:
    get = getattr(src, "get_entry_func_name", None)
    if get is not None:
        return get()
    m = re.search(r"tt\.func\s+(?:public\s+)?@([\w$.]+)", text)
    if m is None:
        raise CompileError("the TTIR has no tt.func: nothing to compile")
    return m.group(1)


def _file_stem(metadata) -> str:
    return f"{metadata.get('name', 'kernel')}-{str(metadata.get('hash', 'nohash'))[:12]}"


def _dump(metadata, ext: str, text: str) -> None:
    directory = knobs.dump_dir()
    if directory:
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, f"{_file_stem(metadata)}.{ext}"), "w") as f:
            f.write(text)


def _write_reproducer(metadata, ext: str, text: str) -> str:
    directory = knobs.dump_dir() or os.path.join(tempfile.gettempdir(), "plate-repro")
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{_file_stem(metadata)}.{ext}")
    with open(path, "w") as f:
        f.write(text)
    return path


STAGES = {"ttir": make_ttir, "pir": make_pir, "pasm": make_pasm, "pbin": make_pbin}


# ---- the backend ----------------------------------------------------------------------------------
class PlateBackend(BaseBackend):
    # One MLIR context per thread for its compiles, where Triton reads this (patches/triton/
    # compile-mlir-context-reuse.patch; before it lands, the shim of shims.py reads it): loading the dialects
    # into a fresh context costs ~1.2 ms of CPU per compile, and plate's own stages need none (load_dialects)
    reuse_mlir_context = True

    @staticmethod
    def supports_target(target: GPUTarget):
        return target.backend == BACKEND

    def __init__(self, target: GPUTarget) -> None:
        super().__init__(target)
        self.binary_ext = "pbin"

    def hash(self) -> str:
        return f"plate-{__version__}-{package_source_hash()[:16]}-{knobs.machine()}-{self.target.arch}"

    def get_target_name(self, options) -> str:
        return f"{BACKEND}:{self.target.arch}"

    def parse_options(self, opts) -> PlateOptions:
        options = _options_copied(opts)
        if options is not None:
            return options
        args = {k: opts[k] for k in OPTION_FIELDS if k in opts and opts[k] is not None}
        args.update(accept_vendor_options(opts))
        args.setdefault("machine", knobs.machine())
        if "enable_fp_fusion" not in args:
            from triton import knobs as triton_knobs

            args["enable_fp_fusion"] = triton_knobs.language.default_fp_fusion
        key = _options_key(args)
        options = _PARSED.get(key) if key is not None else None
        if options is None:
            options = PlateOptions(**args)  # raises on an illegal value: such arguments are never kept
            if key is not None:
                _remember(_PARSED, key, options)
        _RETURNED[_returned_slot(options)] = (options, tuple(options.__dict__))
        return options

    def add_stages(self, stages, options, language=Language.TRITON):
        if language != Language.TRITON:
            raise CompileError(
                f"plate compiles Triton kernels only, not {language.name} (Gluon targets GPU "
                "layouts and starts at ttgir)"
            )
        for ext, stage in STAGES.items():
            stages[ext] = functools.partial(_run_stage, stage, options=options)
        from triton import knobs as triton_knobs

        if triton_knobs.runtime.add_stages_inspection_hook is not None:
            triton_knobs.runtime.add_stages_inspection_hook(self, stages, options, language, None)

    def pack_metadata(self, metadata):
        return (metadata.num_warps, metadata.num_ctas, metadata.shared, getattr(metadata, "machine", None))

    def get_codegen_implementation(self, options):
        from .fp8e4b15 import convert_custom_types  # imports triton.language: not at module top

        return {"min_dot_size": min_dot_size, "convert_custom_types": convert_custom_types}

    def get_module_map(self):
        # Inductor and users call triton.language.extra.libdevice: map it to the CUDA libdevice
        # wrappers (plus the generic names they lack), whose tt.extern_elementwise symbols
        # (__nv_tanhf, ...) the lowering maps to PLATE math. Nothing of the NVIDIA backend is imported.
        from . import libdevice_api

        return {"triton.language.extra.libdevice": libdevice_api}

    def load_dialects(self, ctx):
        """Triton's own dialects (loaded by Triton) are all the TTIR stage needs."""
        return None


def _run_stage(stage, src, metadata, *, options):
    """One stage with Python's cycle collector paused (sim/host.py). A stage keeps thousands of young
    container objects alive at once (the IR, the emitted code, their dicts and sets): every 700 of
    them CPython ran a collection that walked them all and found nearly nothing to free, every tenth
    of those a larger one, and now and then a full one over the whole heap (torch's and Triton's
    objects included): 6-18% of a benchmark kernel's compile CPU on average, far more than their
    share of the instructions (cache misses). Reference counting frees a stage's temporaries as
    before; the garbage a compile leaves in cycles (its IR, through the parent links: 800-2000
    objects on the benchmark kernels) waits for the first collection after the stage, as it waited
    for a later one before."""
    with cycle_collection_paused():
        return stage(src, metadata, options)
