"""The pir and pasm texts are real stage boundaries: checked on every kernel the test suite compiles.

For each compile through plate's stages (tests/conftest.py wraps `compiler.STAGES`):

- pir:  the text parses back and prints as itself, and code generation from the parsed text gives
        the pasm text the compile produced;
- pasm: the text assembled and encoded gives the pbin bytes the compile produced.

Both re-runs read the texts for real (`text_memo.bypassed()`): the memo that lets an unedited
compile skip re-reading is valid only if reading gives the same result, which is what this checks.
Kernels the harness lowers without Triton (codegen_kernels/harness.py) get the pir check through
`check_lowering`.
"""

from __future__ import annotations

import contextlib
import hashlib

from triton_plate_backend.ir.printer import print_module
from triton_plate_backend.isa.asm import as_read_back, disassemble
from triton_plate_backend.isa.encoding import encode
from triton_plate_backend.text_memo import bypassed
from triton_plate_backend.ttir.parser import parse

_CHECKED: set[bytes] = set()  # (stage, text, options) already checked this session: same input, same answer


class StageRoundTripError(AssertionError):
    """A stage text does not read back to what the compile made of it."""


def _first_time(*parts) -> bool:
    key = hashlib.sha256("\0".join(map(str, parts)).encode("utf-8", "surrogatepass")).digest()
    if key in _CHECKED:
        return False
    _CHECKED.add(key)
    return True


def _diff(a: str, b: str) -> str:
    import difflib

    return "".join(list(difflib.unified_diff(a.splitlines(True), b.splitlines(True), "compiled", "re-read"))[:40])


def check_pir(name: str, pir_text: str) -> None:
    """pir text -> parse -> print is the same text."""
    again = print_module(parse(pir_text, f"{name}.pir"))
    if again != pir_text:
        raise StageRoundTripError(f"{name}: the pir text does not print back as itself:\n{_diff(pir_text, again)}")


def check_lowering(name: str, pir_text: str, program, options=None, machine=None) -> None:
    """For lowerings outside Triton's stages: the pir text round-trips, and code generation from it
    gives the same program (as its pasm text and its binary)."""
    from triton_plate_backend.passes.pipeline import generate

    if not _first_time("lowering", pir_text, getattr(options, "num_stages", None), getattr(machine, "name", None)):
        return
    check_pir(name, pir_text)
    again, _ = generate(parse(pir_text, f"{name}.pir"), options, machine)
    if encode(as_read_back(again)) != encode(as_read_back(program)):
        raise StageRoundTripError(
            f"{name}: code generation from the pir text differs from the in-memory lowering:\n"
            f"{_diff(disassemble(program), disassemble(again))}"
        )


def _checked_pasm(make_pasm):
    def stage(src, metadata, options):
        pasm_text = make_pasm(src, metadata, options)
        if src is not None and _first_time("pasm", src, options.hash()):  # None: Triton read an override file
            name = metadata.get("name", "kernel")
            check_pir(name, str(src))
            with bypassed():
                again = make_pasm(str(src), dict(metadata), options)
            if again != pasm_text:
                raise StageRoundTripError(
                    f"{name}: the pasm stage gives another text from the pir text read back:\n{_diff(pasm_text, again)}"
                )
        return pasm_text

    return stage


def _checked_pbin(make_pbin):
    def stage(src, metadata, options):
        pbin = make_pbin(src, metadata, options)
        if src is not None and _first_time("pbin", src, options.hash()):
            with bypassed():  # assembled and encoded for real
                again = make_pbin(str(src), dict(metadata), options)
            if again != pbin:
                name = metadata.get("name", "kernel")
                raise StageRoundTripError(f"{name}: the pasm text assembles to other bytes than the compile's pbin")
        return pbin

    return stage


@contextlib.contextmanager
def checked_stages(stages: dict):
    """Within, the pasm and pbin entries of `stages` (compiler.STAGES) check their input text round-trips."""
    saved = dict(stages)
    stages["pasm"] = _checked_pasm(stages["pasm"])
    stages["pbin"] = _checked_pbin(stages["pbin"])
    try:
        yield
    finally:
        stages.update(saved)
