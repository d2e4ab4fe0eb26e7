"""The eager lock: one eager op at a time across threads (registry.py takes it around every plate kernel), and
a way to give it up for a block that waits on another thread's plate kernels."""

from __future__ import annotations

import contextlib
import threading

# one eager op at a time across threads: library_compiles() flips a process-wide Triton knob, and a first launch
# compiles its kernel through Triton's frontend, whose ast use from two threads at once fails on CPython < 3.12
# (gh-106905: "AST constructor recursion depth mismatch"); re-entrant, since a composite op runs plate ops. The
# device runs one launch at a time anyway (sim/device.py), so threads lose little.
LOCK = threading.RLock()


@contextlib.contextmanager
def lock_released():
    """The block runs with this thread's hold on the eager lock given up (however deep), taken again after: for a
    kernel that waits on another thread running plate kernels, as autograd's engine called outside its device thread
    runs a backward on that thread (gradients.py's vjp; a backward already on it runs inline)."""
    if not LOCK._is_owned():
        yield
        return
    state = LOCK._release_save()
    try:
        yield
    finally:
        LOCK._acquire_restore(state)
