"""The body of a saved reproducer: run its kernel on plate and under the interpreter, print the differences."""

from __future__ import annotations

from pathlib import Path

from . import compare
from .report import case_from_json
from .runner import run_interpreter, run_plate
from .session import select_device


def reproduce(kernel, case_json: str, path: str) -> int:
    """1 if some output still fails its check, 0 if plate now agrees."""
    case = case_from_json(case_json, Path(path).read_text())
    device = select_device()
    want = run_interpreter(kernel, case)
    got = run_plate(kernel, case, device)
    failed = {n: d for n, (ok, d) in compare.judge(case, got, want).items() if not ok}
    for name, detail in failed.items():
        print(f"{name}: {detail}")
    print("plate and the interpreter agree" if not failed else f"{len(failed)} output(s) differ")
    return 1 if failed else 0
