"""What the Triton target "plate" is, in one place: its name, ISA version and warp size, and the
import guard that `compiler.py` and `driver.py` (the two modules Triton's discovery imports) run first.

Imports nothing but `sys`: Triton imports this module during ``import triton``.
"""

from __future__ import annotations

import sys

BACKEND = "plate"  # the entry-point name, GPUTarget.backend and the torch device type
PLATE_ARCH = 1  # the ISA version: GPUTarget(BACKEND, PLATE_ARCH, WARP_SIZE)
WARP_SIZE = 32  # PLATE has no warps; Triton's layouts still need a warp size


def import_triton_first(module_name: str) -> None:
    """Run at the top of a module Triton's discovery imports, before it imports Triton.

    Imported before Triton, the module steps aside: `import triton` runs Triton's backend discovery,
    which imports the module and must find its classes complete, not the half-run copy that called
    this. Discovery builds a fresh copy, and importlib then hands that copy (the one Triton
    registered) to the importer. Without the plate entry point installed, discovery skips us: the
    half-run copy takes its place back and finishes as an ordinary import."""
    if "triton" in sys.modules:
        return
    partial = sys.modules.pop(module_name)
    import triton  # noqa: F401

    sys.modules.setdefault(module_name, partial)
