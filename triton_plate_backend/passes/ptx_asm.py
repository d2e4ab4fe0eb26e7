"""PTX inline assembly plate gives a meaning: ONE table, instruction text -> what it does on PLATE.

`tl.inline_asm_elementwise` carries PTX, which PLATE cannot run; a kernel that uses it is refused
with the op and its source line. A few snippets of Triton's own library are not computations but
hints to the CUDA scheduler, and mean nothing on PLATE, where launches run in order and one after
another: `tl.extra.cuda.gdc_wait()` / `gdc_launch_dependents()` (programmatic dependent launch,
Triton's tutorial 11). Those lower to nothing, their dummy result is 0.

The key is the asm text without `//` comments, its whitespace collapsed (Triton's gdc_wait is
`"griddepcontrol.wait; // dummy $0"`); only asm without operands is matched, so a snippet that
computes on its inputs is never mistaken for one of these.
"""

from __future__ import annotations

import re

NOTHING = "nothing"  # runs nothing; each result is a 0 of its type

PTX_ON_PLATE: dict[str, str] = {
    # programmatic dependent launch: launches are in order, a grid starts after the one before ends
    "griddepcontrol.wait;": NOTHING,
    "griddepcontrol.launch_dependents;": NOTHING,
}

REFUSED = (
    "PTX inline assembly cannot run on PLATE; express the function with tl.* ops (or libdevice functions plate maps)"
)


def normalized(asm: str) -> str:
    """The asm text without `//` comments, whitespace collapsed to single spaces."""
    lines = (line.split("//", 1)[0] for line in asm.splitlines())
    return re.sub(r"\s+", " ", " ".join(lines)).strip()


def meaning(asm: str, n_operands: int) -> str | None:
    """What the snippet does on PLATE (a PTX_ON_PLATE value), or None: it cannot run."""
    return PTX_ON_PLATE.get(normalized(asm)) if n_operands == 0 else None
