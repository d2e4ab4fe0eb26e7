"""Row-parallel numpy work: a context's program instances split across host threads.

numpy releases the GIL inside its loops and BLAS calls, and program instances never share SRAM
rows, so a rule can hand disjoint row ranges to several threads. Each row is computed by the same
numpy calls on the same values as on one thread: results do not depend on the thread count.

Inside that work numpy's OpenBLAS runs on one thread: its own threads, on the many small matrices of
a batched matmul (a 128x64 @ 64x128 tile per program), cost ~7x the CPU time of one thread (measured:
256 such products, 61 ms CPU against 8.5 ms) and, beside these threads, oversubscribe the cores. It
splits no sum over threads, so the results are the same.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

MIN_WORK = 1 << 22  # below this many multiply-adds (or elements) per instruction, one thread: pool overhead
MAX_THREADS = 4


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


THREADS = max(1, min(MAX_THREADS, _cores()))
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _get_pool() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(THREADS, thread_name_prefix="plate-sim")
    return _pool


# numpy's OpenBLAS thread-count functions (scipy-openblas wheels prefix and suffix the names)
_BLAS_THREADS = (
    ("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
    ("scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads"),
    ("openblas_get_num_threads", "openblas_set_num_threads"),
)
# its cblas_sgemm and whether its integers are 64-bit (names whose width is known; sim/sem_matrix.py)
_SGEMM = (("scipy_cblas_sgemm64_", True), ("scipy_cblas_sgemm", False), ("cblas_sgemm64_", True))
_blas: list = []  # [(get, set, library)] or [None], found once


def _openblas():
    """(get, set, library) of the OpenBLAS that numpy loaded, or None (another BLAS, or not Linux)."""
    if not _blas:
        found = None
        try:
            with open("/proc/self/maps") as maps:
                paths = sorted({line.split()[-1] for line in maps if "openblas" in line.lower()})
            for path in paths:
                lib = ctypes.CDLL(path)
                names = next((n for n in _BLAS_THREADS if all(hasattr(lib, f) for f in n)), None)
                if names is not None:
                    found = getattr(lib, names[0]), getattr(lib, names[1]), lib
                    found[1].argtypes = [ctypes.c_int]
                    break
        except OSError:
            pass
        _blas.append(found)
    return _blas[0]


def blas_sgemm() -> tuple[int, bool] | None:
    """(address, 64-bit integers) of cblas_sgemm in the OpenBLAS numpy loaded (the library numpy's float32
    matmul calls), or None where there is none of a known integer width."""
    blas = _openblas()
    if blas is None:
        return None
    for name, int64 in _SGEMM:
        if hasattr(blas[2], name):
            return ctypes.cast(getattr(blas[2], name), ctypes.c_void_p).value, int64
    return None


@contextlib.contextmanager
def one_blas_thread():
    """numpy's BLAS on one thread inside the block (module docstring); restored after."""
    blas = _openblas()
    before = blas[0]() if blas is not None else 1
    if before != 1:
        blas[1](1)
    try:
        yield
    finally:
        if before != 1:
            blas[1](before)


def chunks(rows: int, work: int) -> list[slice]:
    """Row ranges covering [0, rows): one when ``work`` is small or there is one thread."""
    n = min(THREADS, rows, max(1, work // MIN_WORK))
    if n <= 1:
        return [slice(0, rows)]
    step = -(-rows // n)
    return [slice(i, min(rows, i + step)) for i in range(0, rows, step)]


def for_rows(fn, rows: int, work: int) -> None:
    """fn(row_slice) over [0, rows), the slices on threads when the work is large; exceptions re-raised."""
    with one_blas_thread():
        _for_rows(fn, rows, work)


def _for_rows(fn, rows: int, work: int) -> None:
    parts = chunks(rows, work)
    if len(parts) == 1 or threading.current_thread().name.startswith("plate-sim"):
        for s in parts:
            fn(s)
        return
    errstate = np.geterr()  # numpy's error state is per thread: the workers take the caller's

    def run(s):
        with np.errstate(**errstate):
            fn(s)

    futures = [_get_pool().submit(run, s) for s in parts[1:]]
    try:
        fn(parts[0])
    finally:
        errors = [f.exception() for f in futures]
    for e in errors:
        if e is not None:
            raise e
