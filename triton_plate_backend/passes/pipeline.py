"""The lowering pipeline: parsed TTIR (plate IR) -> passes -> PLATE Program.

`PASSES` is the ordered list of IR -> IR passes; `run_pipeline` runs them, then code
generation (`codegen.generate`: rules, register allocation, SRAM planning, verification). An
exception inside a pass is wrapped ONCE here with the pass name: plate's own errors (PlateError
subclasses) keep their type and get the pass name added; anything else becomes a CompileError
that names the pass and keeps the original as its cause.

The `pir` text is the IR after the passes, annotated for reading: every memory op carries
`plate.access` (strided or gather, and why) and, after codegen, ops whose results got SRAM carry
`plate.sram` (address and bytes)."""

from __future__ import annotations

from ..errors import CompileError, PlateError
from ..ir.core import Module, StrAttr
from ..machine import get_machine
from . import access, codegen, inline


def annotate_access(module: Module) -> Module:
    """Attach `plate.access` to every memory op: how access analysis sees it."""
    for op in module.kernel().walk():
        if op.name in access.MEMORY_OPS:
            op.attrs["plate.access"] = StrAttr(access.describe(access.analyze(op)))
    return module


PASSES: list[tuple[str, object]] = [
    ("inline", inline.run),
    ("access", annotate_access),
]
ANNOTATE_ONLY = {"access"}  # passes that leave the IR's ops as they are (the access analysis stays valid)


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


def annotate_sram(program, report: dict) -> None:
    """Attach `plate.sram` to ops whose results own a buffer (filled in by codegen's report)."""
    for op, text in report.pop("sram_by_op", {}).items():
        op.attrs["plate.sram"] = StrAttr(text)


def run_pipeline(module: Module, options=None, machine=None):
    """(pir text, Program, report) for one kernel module."""
    machine = get_machine(machine if machine is not None else getattr(options, "machine", None))
    with access.shared_analysis() as analysis:  # each memory op analysed once, not once per pass
        for name, fn in PASSES:
            module = run_pass(name, fn, module)
            if name not in ANNOTATE_ONLY:
                analysis.forget()
        program, report = run_pass("codegen", lambda m: codegen.generate(m, machine, options), module)
        annotate_sram(program, report)
        report["access"] = access.access_report(module.kernel())
    from ..ir.printer import print_module

    return print_module(module), program, report
