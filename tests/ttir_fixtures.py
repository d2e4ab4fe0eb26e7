"""The TTIR fixtures: real TTIR of the kernels in tests/fixtures/ttir/kernels.py, made by
tests/fixtures/ttir/make_fixtures.py and committed (`K.ttir.mlir` with locations,
`K.ttir.noloc.mlir` without). Locations name `kernels.py`, so a test can read the source line
an op came from with `kernels_py_line`."""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import pathlib
import types

DIR = pathlib.Path(__file__).resolve().parent / "fixtures" / "ttir"
FILES = sorted(DIR.glob("*.mlir"))
KERNELS = sorted(p.name[: -len(".ttir.mlir")] for p in DIR.glob("*.ttir.mlir"))
KERNELS_PY = DIR / "kernels.py"
REJECTED = {"math_fns": "PTX inline asm"}  # kernels plate rejects by design, and why
LOWERABLE = [k for k in KERNELS if k not in REJECTED]


def fixture_text(name: str) -> str:
    """A fixture's text by file name (`vec_add.ttir.noloc.mlir`) or kernel name (`vec_add`)."""
    return (DIR / (name if name.endswith(".mlir") else f"{name}.ttir.mlir")).read_text()


@functools.cache
def make_fixtures() -> types.ModuleType:
    """The generator script as a module (load_kernels, source_ttir, make, ...)."""
    spec = importlib.util.spec_from_file_location("make_fixtures", DIR / "make_fixtures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def kernels_py_line(line: int) -> str:
    """Line `line` (1-based, as in a location) of kernels.py."""
    return KERNELS_PY.read_text().splitlines()[line - 1]


def lowered(kernel: str, machine: str = "plate1"):
    """A lowerable fixture's finished Program on `machine` (a fresh one per call: tests may alter it)."""
    from triton_plate_backend.machine import get_machine
    from triton_plate_backend.passes.pipeline import run_pipeline
    from triton_plate_backend.ttir.parser import parse

    return run_pipeline(parse(fixture_text(kernel), kernel), None, get_machine(machine))[1]


def first_of_each_form(program):
    """(pc, instruction) of the first instruction of each (mnemonic, suffixes): every form, not every repeat."""
    seen = {}
    for pc, ins in enumerate(program.instrs):
        seen.setdefault((ins.mnemonic, ins.suffixes), (pc, ins))
    return list(seen.values())


def with_or_without_isawalk(module, compiled: bool, monkeypatch, fn):
    """``fn()`` with ``module``'s compiled walk (isa._isawalk) or, not ``compiled``, without it (its Python
    reference): the result, or the error as text (the same error both ways is the point)."""
    with monkeypatch.context() as m:
        if not compiled:
            m.setattr(module, "_isawalk", None)
        try:
            return fn()
        except Exception as e:  # noqa: BLE001
            return f"{type(e).__name__}: {e}"


def remade_suffixes(program, equal_strings: bool):
    """The program with a tuple of its own as every instruction's suffixes (the compiled walks remember a form by
    the suffixes' items, not the tuple): of the same strings, or of equal strings that are other objects."""

    def remake(suffixes):
        return tuple("".join(list(s)) if equal_strings else s for s in suffixes)

    instrs = [dataclasses.replace(ins, suffixes=remake(ins.suffixes)) for ins in program.instrs]
    return dataclasses.replace(program, instrs=instrs)
