"""The lowering pipeline: parsed TTIR (plate IR) -> IR passes -> code generation -> PLATE Program.

`PASSES` is the ordered list of IR -> IR passes; `run_passes` runs them, and the structural
verifier (`ir.verify`) after each pass that rewrites the IR, so invalid IR is caught at the pass
that made it. `generate` is code generation (`codegen.generate`: rules, register allocation,
SRAM planning, verification) of what the passes produced. The compiler's `pir` stage is
`run_passes` and its printed text; its `pasm` stage is `generate` of that text parsed back.

An exception inside a pass is wrapped ONCE here with the pass name: plate's own errors (PlateError
subclasses) keep their type and get the pass name added; anything else becomes a CompileError
that names the pass and keeps the original as its cause.

The IR after the passes is annotated for reading: every memory op carries `plate.access`
(strided or gather, and why). The kernel's tt.func carries `plate.affinity` (passes/affinity.py:
which bytes each program touches), which code generation copies into the Program, so an edited
`pir` text can change it. Code generation does not read the annotation (it analyses the IR
again), so an edited `pir` text needs none. Where codegen put each op's results in SRAM is in
the report (`report["sram"]`)."""

from __future__ import annotations

from ..errors import CompileError, PlateError
from ..ir.core import Module, StrAttr, number_values
from ..ir.printer import print_module
from ..ir.verify import IrVerifyError, verify
from ..machine import get_machine
from . import access, affinity, codegen, inline, persistent


def annotate_access(module: Module) -> Module:
    """Attach `plate.access` to every memory op: how access analysis sees it."""
    for op in module.kernel().walk():
        if op.name in access.MEMORY_OPS:
            op.attrs["plate.access"] = StrAttr(access.describe(access.analyze(op)))
    return module


PASSES: list[tuple[str, object]] = [
    ("inline", inline.run),
    ("access", annotate_access),
    ("affinity", affinity.annotate_affinity),
]
ANNOTATE_ONLY = {"access", "affinity"}  # passes that leave the IR's ops as they are (the access analysis stays valid)
# what a pass returns when it left the module as it was: the verifier and the value numbering after it are skipped
# once they have run on that module (persistent: 97% of test_core's kernels are not rewritten)
UNCHANGED = object()


def _wrap(name: str, e: Exception) -> Exception:
    if isinstance(e, PlateError):
        if not getattr(e, "plate_pass", None):
            e.plate_pass = name
            e.args = (f"[{name}] {e.args[0] if e.args else e}", *e.args[1:])
        return e
    err = CompileError(f"[{name}] {type(e).__name__}: {e}")
    err.plate_pass = name
    return err


def run_pass(name: str, fn, value):
    try:
        return fn(value)
    except Exception as e:
        wrapped = _wrap(name, e)
        if wrapped is e:
            raise
        raise wrapped from e


def verify_after(name: str, module: Module) -> None:
    """The structural verifier after pass `name`: an IrVerifyError says which pass left invalid IR."""
    try:
        verify(module)
    except IrVerifyError as e:
        e.args = (f"[{name}] the IR this pass produced is invalid: {e.args[0] if e.args else e}", *e.args[1:])
        e.plate_pass = name
        raise


def run_passes(
    module: Module,
    analysis: access.AccessAnalysis | None = None,
    persistent_sram: int | None = None,
    persistent_groups: int = 1,
) -> Module:
    """The IR passes of one kernel module, each rewriting pass checked by the verifier. `analysis`
    (optional) ends up holding the access analysis of the module returned, for `generate`.
    `persistent_sram`: the core's SRAM bytes, to run `persistent` after inlining (the compiler's
    option; a launch must then pass its arguments, as the launcher does), and `persistent_groups` the
    runs of programs the launcher may split its grid into (the machine's domains)."""
    passes = list(PASSES)
    if persistent_sram is not None:

        def persistent_pass(m):
            return m if persistent.rewrite(m, persistent_sram, persistent_groups) else UNCHANGED

        passes.insert(1, ("persistent", persistent_pass))
    verified = False
    with access.shared_analysis(analysis) as analysis:  # each memory op analysed once, not once per pass
        for name, fn in passes:
            out = run_pass(name, fn, module)
            if out is UNCHANGED:
                if verified:  # the verifier's verdict and the value numbers of the IR as it was stand
                    continue
                out = module
            module = out
            if name not in ANNOTATE_ONLY:
                verify_after(name, module)
                verified = True
                number_values(module)  # what orders by Value id sees the order of the text this prints
                analysis.forget()
    return module


def sram_report(sram_by_op: dict) -> str:
    """One line per op whose results got SRAM: op, source line, address+bytes."""
    return "\n".join(f"{op.name} {op.loc or '<unknown>'}: {text}" for op, text in sram_by_op.items())


def generate(
    module: Module,
    options=None,
    machine=None,
    analysis: access.AccessAnalysis | None = None,
    access_report: bool = True,
):
    """(Program, report) of a module the passes produced: code generation and its report. `analysis`:
    the access analysis `run_passes` left of this very module (else the module is analysed again).
    `access_report=False` leaves the report's access lines out (a debug dump's; the compiler's pasm
    stage asks for them only when it writes the dump)."""
    machine = get_machine(machine if machine is not None else getattr(options, "machine", None))
    if number_values(module):  # a module read from text, or built without run_passes: ids in text order
        analysis = None  # what it holds was ordered by the ids before
    with access.shared_analysis(analysis):
        program, report = run_pass("codegen", lambda m: codegen.generate(m, machine, options), module)
        program.affinity = affinity.func_affinity(module)  # the launch maps programs to cores by it
        report["sram"] = sram_report(report.pop("sram_by_op", {}))
        if access_report:
            report["access"] = access.access_report(module.kernel())
    return program, report


def format_report(report: dict) -> str:
    """The report as text (the `report.txt` dump): `key: value`, multi-line values indented below their key."""
    lines = []
    for key, value in report.items():
        text = str(value)
        if "\n" in text or key in ("sram", "access"):
            lines.append(f"{key}:")
            lines += [f"  {line}" for line in text.splitlines()]
        else:
            lines.append(f"{key}: {text}")
    return "\n".join(lines) + "\n"


def run_pipeline(module: Module, options=None, machine=None):
    """(pir text, Program, report) for one kernel module: the passes, the printed IR, code generation."""
    analysis = access.AccessAnalysis()
    module = run_passes(module, analysis)
    pir_text = print_module(module)
    program, report = generate(module, options, machine, analysis)
    return pir_text, program, report
