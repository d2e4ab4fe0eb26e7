"""Plate's compile stages alone, on the benchmark kernels: CPU ms of pir / pasm / pbin and function calls.

    python benchmarks/compile_stages.py [--repeat 15] [--first]

Compiles bench_triton.py's three kernels once through Triton (its cache bypassed) to capture each
kernel's TTIR text, metadata and stage functions, then calls plate's three stage functions directly
on that TTIR ``--repeat`` times and prints the best CPU ms of each stage (the least noisy figure on a
shared machine), and the function calls of one compile (cProfile; the same on every machine).
``--first``: empty the caches the stages keep across compiles (the affinity pass's folds) before
every compile, as a process that has not compiled the kernel before sees it; without it, what a
repeated compile (bench_speed.py's best of N) sees. Figures are measurements of this run on this
machine, not assertions.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import cProfile
import os
import pstats
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


@contextlib.contextmanager
def stage_calls(name: str):
    """Inside: every triton.compile runs plate's stages through Triton's stage-inspection hook (its
    cache bypassed); yields a dict ext -> [(stage function, source, metadata before the stage), ...]
    in call order."""
    from triton import knobs

    calls: dict = {}

    def hook(*args):
        if not args:  # triton.compile asks for the hook's part of the cache key
            return name, "0"
        for ext, stage in list(args[1].items()):

            def run(src, md, ext=ext, stage=stage):
                calls.setdefault(ext, []).append((stage, str(src), copy.deepcopy(dict(md))))
                return stage(src, md)

            args[1][ext] = run

    saved = knobs.runtime.add_stages_inspection_hook, knobs.compilation.always_compile
    knobs.runtime.add_stages_inspection_hook, knobs.compilation.always_compile = hook, True
    try:
        yield calls
    finally:
        knobs.runtime.add_stages_inspection_hook, knobs.compilation.always_compile = saved


def capture() -> dict:
    """kernel -> (pir stage, TTIR text, metadata before the pir stage, pasm stage, pbin stage)."""
    os.environ.setdefault("TRITON_DEFAULT_BACKEND", "plate")
    import bench_triton
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from triton_plate_backend.compiler import PLATE_ARCH, WARP_SIZE

    out = {}
    with stage_calls("compile-stages") as seen:
        for name, (fn, sig, const) in bench_triton.sources().items():
            seen.clear()
            triton.compile(ASTSource(fn, sig, constexprs=const), target=GPUTarget("plate", PLATE_ARCH, WARP_SIZE))
            pir, ttir, md = seen["pir"][-1]
            out[name] = (pir, ttir, md, seen["pasm"][-1][0], seen["pbin"][-1][0])
    return out


def forget() -> None:
    """Empty what the stages keep across compiles (the affinity folds' texts, trees and results; before 2ccc6a6
    the trees were an lru_cache of ``_parse``, so an A/B against an older checkout empties that)."""
    from triton_plate_backend.passes import affinity

    for name in ("_parse", "_substituted"):
        getattr(getattr(affinity, name), "cache_clear", lambda: None)()
    getattr(affinity, "_TREES", {}).clear()
    getattr(affinity, "_FOLDS", {}).clear()
    getattr(affinity, "_NAMES", {}).clear()
    getattr(affinity, "_MEMO", {}).clear()
    getattr(affinity, "_SHARED_TEXTS", {}).clear()  # (the shared footprint text of the entries, since comp25)


def compile_once(kernel, first: bool) -> list[float]:
    """CPU ms of the pir, pasm and pbin stages of one compile."""
    pir, ttir, md0, pasm, pbin = kernel
    if first:
        forget()
    md = copy.deepcopy(md0)
    md.pop("hash", None)
    t0 = time.process_time()
    a = pir(ttir, md)
    t1 = time.process_time()
    b = pasm(a, md)
    t2 = time.process_time()
    pbin(b, md)
    t3 = time.process_time()
    return [(t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15, help="compiles per kernel (the best is reported)")
    ap.add_argument("--first", action="store_true", help="empty the stages' caches before every compile")
    args = ap.parse_args(argv)
    kernels = capture()
    print(f"plate stage CPU ms, best of {args.repeat} ({'first compiles' if args.first else 'repeated compiles'})")
    print("| kernel | pir | pasm | pbin | all | calls |")
    print("|---|---|---|---|---|---|")
    for name, k in kernels.items():
        best = min((compile_once(k, args.first) for _ in range(args.repeat)), key=sum)
        prof = cProfile.Profile()
        prof.runcall(compile_once, k, args.first)
        calls = pstats.Stats(prof).total_calls
        print(f"| {name} | {best[0]:.1f} | {best[1]:.1f} | {best[2]:.1f} | {sum(best):.1f} | {calls / 1000:.1f}k |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
