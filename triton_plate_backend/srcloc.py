"""Kernel source locations: where an IR op or a PLATE instruction came from in the user's Python.

At the bottom of the package (it imports nothing of it): the IR, the TTIR parser, the ISA program
and the compiler's error messages all carry the same `Loc`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Loc:
    """A kernel source location: file, line, column and the Python variable name if known."""

    file: str = ""
    line: int = 0
    col: int = 0
    name: str = ""

    def __str__(self) -> str:
        if not self.file and not self.line:
            return "<unknown>"
        s = f"{self.file}:{self.line}:{self.col}"
        return f"{s} ({self.name})" if self.name else s


UNKNOWN_LOC = Loc()
