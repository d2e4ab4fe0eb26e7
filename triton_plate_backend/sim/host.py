"""How the simulator uses its host process: Python's cycle collector paused over a launch's work.

A large launch allocates hundreds of thousands of small container objects that live a while (trace
entries, the cost model's per-step tuples) and makes no reference cycle in them; every few hundred
thousand such objects CPython runs a full collection, which walks the whole heap (torch's objects
included): three of them, 1.5 s CPU, inside one 4096^3 bf16 GEMM launch. Paused, they run never or
once after. Reference counting still frees everything as before: only cycles wait, and nothing the
simulator computes depends on when a collector runs."""

from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def cycle_collection_paused():
    """The block with the cycle collector off; on exit, on again if it was on (blocks nest)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
