"""How the simulator uses its host process: Python's cycle collector paused over a launch's work, and
host buffers kept for reuse only when nothing else holds them (``unshared``).

A large launch allocates hundreds of thousands of small container objects that live a while (trace
entries, the cost model's per-step tuples) and makes no reference cycle in them; every few hundred
thousand such objects CPython runs a full collection, which walks the whole heap (torch's objects
included): three of them, 1.5 s CPU, inside one 4096^3 bf16 GEMM launch. Paused, they run never or
once after. Reference counting still frees everything as before: only cycles wait, and nothing the
simulator computes depends on when a collector runs."""

from __future__ import annotations

import contextlib
import gc
import sys


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


def unshared(box: list):
    """``box``'s one item, taken out of it, when nothing else holds it (no view of a buffer and no name
    outlived its use), else None: what a cache of freed host buffers may keep (sim/executor.py's SRAM
    images, sim/memory.py's freed allocations). The item comes in a box the caller no longer names
    because CPython 3.11 counts a bare positional argument once or twice by how the call was specialized;
    taken out here, its only references are this function's name and getrefcount's argument."""
    item = box.pop()
    return item if sys.getrefcount(item) <= 2 else None
