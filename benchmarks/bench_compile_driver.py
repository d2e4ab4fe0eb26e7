"""What Triton's compile() costs around the frontend and plate's stages, per compile of a small kernel.

    python benchmarks/bench_compile_driver.py [--kernels 40]
    valgrind --tool=callgrind --collect-atstart=no --instr-atstart=no \
        python benchmarks/bench_compile_driver.py --callgrind

Compiles ``--kernels`` fresh binary-op kernels (test_core-like: load, load, op, store; each its own source
and JITFunction) for fp32 and fp16 with a cold Triton cache in a temporary folder (the plate cache
manager installed, as the plate driver installs it), then as many fresh JITFunctions of the same sources
(file cache hits). Prints the CPU ms per compile of ``triton.compile`` and of what is left of it without
the frontend (``ASTSource.make_ir``) and the four stages: key and hash computations, the cache manager, its
files, the metadata JSON, ``CompiledKernel``. ``--callgrind``: under callgrind, count only that remainder
(the frontend's and stages' instructions are not collected), one dump for the cold compiles and one for the
hits; needs a C compiler and valgrind's headers (a three-line helper is built in a temporary folder). Figures
are measurements of this run on this machine, not assertions.
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import linecache
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MEMORY_TMP = "/dev/shm"

KERNEL = """
def kernel_{i}(X, Y, Z, SIZE: tl.constexpr):
    off = tl.arange(0, SIZE)
    x = tl.load(X + off)
    y = tl.load(Y + off)
    z = x {op} y + {i} + {salt}
    tl.store(Z + off, z)
"""
OPS = ("+", "-", "*", "/", "%")
DTYPES = ("fp32", "fp16")

TOGGLE_C = """#include <valgrind/callgrind.h>
void start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; CALLGRIND_TOGGLE_COLLECT; }
void toggle(void) { CALLGRIND_TOGGLE_COLLECT; }
void stop(const char *name) { CALLGRIND_TOGGLE_COLLECT; CALLGRIND_DUMP_STATS_AT(name); }
"""


def _callgrind(folder: str):
    """The client requests (a no-op outside valgrind), built from TOGGLE_C."""
    src, lib = os.path.join(folder, "toggle.c"), os.path.join(folder, "toggle.so")
    with open(src, "w") as f:
        f.write(TOGGLE_C)
    subprocess.run([os.environ.get("CC", "cc"), "-shared", "-fPIC", "-O1", "-o", lib, src], check=True)
    return ctypes.CDLL(lib)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, default=40)
    ap.add_argument("--callgrind", action="store_true", help="count only the driver's instructions (module doc)")
    args = ap.parse_args(argv)
    home = tempfile.mkdtemp(prefix="plate-driver-", dir=MEMORY_TMP if os.access(MEMORY_TMP, os.W_OK) else None)
    os.environ["TRITON_CACHE_DIR"] = os.path.join(home, "cache")
    sys.path.insert(0, os.path.dirname(HERE))
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler import compiler as triton_compiler

    import triton_plate_backend.compiler as plate_compiler
    from triton_plate_backend import cache_files, shims
    from triton_plate_backend.target import BACKEND, PLATE_ARCH, WARP_SIZE

    cache_files.install()
    shims.install("driver")
    target = GPUTarget(BACKEND, PLATE_ARCH, WARP_SIZE)
    counter = _callgrind(home) if args.callgrind else None
    collecting = [False]
    inner = [0.0]

    def excluded(fn):
        @functools.wraps(fn)
        def wrapper(*a, **k):
            if collecting[0]:
                counter.toggle()
            start = time.process_time()
            try:
                return fn(*a, **k)
            finally:
                inner[0] += time.process_time() - start
                if collecting[0]:
                    counter.toggle()

        return wrapper

    make_ir = triton_compiler.ASTSource.make_ir
    stages = dict(plate_compiler.STAGES)
    triton_compiler.ASTSource.make_ir = excluded(make_ir)
    plate_compiler.STAGES.update({ext: excluded(stage) for ext, stage in stages.items()})

    def kernels(salt: int, n: int) -> list:
        made = []
        for i in range(n):
            path = os.path.join(home, f"kernel_{salt}_{i}.py")
            text = KERNEL.format(i=i, op=OPS[i % len(OPS)], salt=salt)
            with open(path, "w") as f:
                f.write(text)
            linecache.cache[path] = (len(text), None, text.splitlines(True), path)
            scope = {"tl": tl}
            exec(compile(text, path, "exec"), scope)
            made.append(triton.jit(scope[f"kernel_{i}"]))
        return made

    def run(fns, dtypes, name=None) -> tuple[int, float, float]:
        inner[0] = 0.0
        n = 0
        if counter is not None and name:
            counter.start()
            collecting[0] = True
        start = time.process_time()
        for fn in fns:
            for dt in dtypes:
                signature = {"X": f"*{dt}", "Y": f"*{dt}", "Z": f"*{dt}", "SIZE": "constexpr"}
                triton.compile(ASTSource(fn, signature, constexprs={"SIZE": 128}), target=target)
                n += 1
        total = time.process_time() - start
        if collecting[0]:
            collecting[0] = False
            counter.stop(name.encode())
        return n, total, inner[0]

    try:
        run(kernels(1000, 2), DTYPES[:1])  # imports, Triton's own key: not the compiles counted
        for label, salt in (("cold (cache misses)", 2000), ("warm (file cache hits)", 2000)):
            n, total, rest = run(kernels(salt, args.kernels), DTYPES, label.split()[0])
            print(
                f"{label}: {n} compiles, {total / n * 1e3:.3f} ms CPU each; without the frontend and the stages "
                f"{(total - rest) / n * 1e3:.3f} ms"
            )
    finally:
        triton_compiler.ASTSource.make_ir = make_ir
        plate_compiler.STAGES.update(stages)
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
