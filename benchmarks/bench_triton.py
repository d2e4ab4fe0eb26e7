"""@triton.jit kernels on plate against Triton's interpreter, and plate's compile time against Triton's
own CUDA compile of the same kernels.

    python benchmarks/bench_triton.py [--no-interpreter] [--no-compile] [--repeat 3]

Run time: the kernels of benchmarks/triton_kernels.py (vector add of 2^20 fp32, row softmax of
1024x1024 fp32, matmul 256^3 fp16 -> fp32) launched on plate (functional simulation + timing
model, best of --repeat launches after a compiling first launch) and, in a subprocess with
TRITON_INTERPRET=1, by Triton's interpreter (triton_kernels.run_interpreter). Target: plate at
least 20x faster in geomean.

Compile time: triton.compile of each kernel, cache bypassed (TRITON_ALWAYS_COMPILE=1), timed per
stage by Triton's compilation listener (knobs.compilation.listener; each stage's time includes
writing its output to the cache, as for every backend). Both backends share the frontend (AST ->
TTIR) and the ttir stage (Triton's TTIR passes); what differs is after TTIR:
  plate  ttir -> pir -> pasm -> pbin                        (GPUTarget("plate", 1, 32))
  cuda   ttir -> ttgir -> llir [-> ptx -> cubin]            (GPUTarget("cuda", 90, 32))
The CUDA side needs no GPU: the ttgir and llir stages are MLIR/LLVM passes, and the ptx and cubin
stages run LLVM's NVPTX backend and the ptxas that ships inside the triton wheel. Two ratios:
plate's TTIR -> pbin (a loadable binary) over CUDA's TTIR -> llir (the stage that runs without any
GPU toolchain; no machine code yet), target <= 1.0x; and over CUDA's TTIR -> cubin (the
like-for-like end point, a loadable binary) when ptxas ran. Figures are measurements of this run
on this machine, not assertions.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

KERNELS = ("vec_add", "softmax", "matmul")
PLATE_AFTER_TTIR = ("pir", "pasm", "pbin")
CUDA_TO_LLIR = ("ttgir", "llir")
CUDA_TO_CUBIN = ("ttgir", "llir", "ptx", "cubin")


# ---- run time ------------------------------------------------------------------------------------
def _plate_device():
    """torch device of plate's tensors: the plate device, else CPU in host-memory mode."""
    import torch

    try:
        import triton_plate_backend.torch_device  # noqa: F401

        if torch._C._get_privateuse1_backend_name() == "plate":
            return torch.device("plate")
    except Exception:  # no extension built
        pass
    os.environ["PLATE_HOST_MEMORY"] = "1"
    return torch.device("cpu")


def plate_case(name: str, device):
    """(launch, check) for one kernel of triton_kernels at the benchmark size, tensors on ``device``."""
    import torch
    import triton_kernels as k

    g = torch.Generator().manual_seed(0)
    if name == "vec_add":
        n = 1 << 20
        x, y = torch.rand(n, generator=g), torch.rand(n, generator=g)
        xd, yd, od = x.to(device), y.to(device), torch.empty(n, device=device)

        def launch():
            k.vec_add[(n // 1024,)](xd, yd, od, n, BLOCK=1024)

        return launch, lambda: torch.testing.assert_close(od.cpu(), x + y, rtol=0, atol=0)
    if name == "softmax":
        x = torch.randn(1024, 1024, generator=g)
        xd, od = x.to(device), torch.empty(1024, 1024, device=device)

        def launch():
            k.softmax[(1024,)](od, xd, 1024, 1024, 1024, BLOCK=1024)

        return launch, lambda: torch.testing.assert_close(od.cpu(), torch.softmax(x, -1), rtol=1e-4, atol=1e-6)
    a, b = torch.randn(256, 256, generator=g).half(), torch.randn(256, 256, generator=g).half()
    ad, bd, cd = a.to(device), b.to(device), torch.empty(256, 256, device=device)

    def launch():
        k.matmul[(8, 8)](ad, bd, cd, 256, 256, 256, BM=32, BN=32, BK=32)

    return launch, lambda: torch.testing.assert_close(cd.cpu(), a.float() @ b.float(), rtol=1e-4, atol=1e-3)


def time_plate(name: str, device, repeat: int):
    """(first launch ms incl. compile, best launch ms, modeled us, correct)."""
    import triton_plate_backend

    launch, check = plate_case(name, device)
    t = time.perf_counter()
    launch()
    first = time.perf_counter() - t
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        launch()
        best = min(best, time.perf_counter() - t)
    try:
        check()
        ok = True
    except AssertionError as e:
        print(f"  {name}: plate result differs from torch: {str(e).splitlines()[1:3]}")
        ok = False
    return first * 1e3, best * 1e3, triton_plate_backend.last_profile().time_ns / 1e3, ok


def time_interpreter(name: str, repeat: int, cpu: bool = False) -> tuple[float, float | None] | None:
    """(best wall ms, best CPU ms or None) of one launch under TRITON_INTERPRET=1, in a subprocess:
    triton_kernels' run_interpreter, and with ``cpu`` again with its clock read as the process's CPU time
    (the steadier figure on a shared machine). None when the interpreter run fails."""
    cpu_run = f"time.perf_counter = time.process_time; cpu = k.run_interpreter({name!r}, repeat={repeat})"
    code = (
        f"import sys, json, time; sys.path.insert(0, {str(HERE)!r}); import triton_kernels as k; "
        f"wall = k.run_interpreter({name!r}, repeat={repeat}); {cpu_run if cpu else 'cpu = None'}; "
        f"print(json.dumps([wall, cpu]))"
    )
    env = dict(os.environ, TRITON_INTERPRET="1")
    env.pop("TRITON_DEFAULT_BACKEND", None)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=3600)
    if r.returncode != 0:
        print(f"  interpreter run of {name} failed: {r.stderr.strip().splitlines()[-1:]}")
        return None
    wall, cpu_ms = json.loads(r.stdout.strip().splitlines()[-1])
    return wall, cpu_ms


def geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def bench_run_time(repeat: int, interpreter: bool) -> None:
    device = _plate_device()
    where = "plate device" if device.type == "plate" else "CPU tensors, host-memory mode"
    print(f"== run time: plate ({where}) vs TRITON_INTERPRET=1, best of {repeat} launches ==")
    print(
        f"{'kernel':9} {'plate 1st ms':>13} {'plate ms':>9} {'modeled us':>11} {'correct':>8} "
        f"{'interp ms':>10} {'speedup':>8}"
    )
    ratios = []
    for name in KERNELS:
        first, best, modeled, ok = time_plate(name, device, repeat)
        timed = time_interpreter(name, repeat) if interpreter else None
        interp = timed[0] if timed else None
        ratio = interp / best if interp else None
        if ratio:
            ratios.append(ratio)
        print(
            f"{name:9} {first:13.1f} {best:9.1f} {modeled:11.2f} {str(ok):>8} "
            f"{(f'{interp:.1f}' if interp else '-'):>10} {(f'{ratio:.1f}x' if ratio else '-'):>8}"
        )
    if ratios:
        print(f"geomean speedup over TRITON_INTERPRET=1: {geomean(ratios):.1f}x (target >= 20x)")


# ---- compile time --------------------------------------------------------------------------------
def sources():
    """ASTSource arguments of the three kernels: (fn, signature, constexprs)."""
    import triton_kernels as k

    return {
        "vec_add": (
            k.vec_add,
            {"x": "*fp32", "y": "*fp32", "o": "*fp32", "n": "i32", "BLOCK": "constexpr"},
            {"BLOCK": 1024},
        ),
        "softmax": (
            k.softmax,
            {
                "out": "*fp32",
                "inp": "*fp32",
                "in_stride": "i32",
                "out_stride": "i32",
                "n_cols": "i32",
                "BLOCK": "constexpr",
            },
            {"BLOCK": 1024},
        ),
        "matmul": (
            k.matmul,
            {
                "a": "*fp16",
                "b": "*fp16",
                "c": "*fp32",
                "M": "i32",
                "N": "i32",
                "K": "i32",
                "BM": "constexpr",
                "BN": "constexpr",
                "BK": "constexpr",
            },
            {"BM": 32, "BN": 32, "BK": 32},
        ),
    }


def compile_stage_times(fn, signature, constexprs, target, repeat: int) -> dict[str, float]:
    """Best (over ``repeat`` uncached compiles) ms of the frontend ("ast") and of each stage."""
    import triton
    from triton import knobs
    from triton.compiler import ASTSource

    best: dict[str, float] = {}

    def listener(src, metadata, metadata_group, times, cache_hit):
        if cache_hit:
            raise RuntimeError("compile-time benchmark hit the cache: TRITON_ALWAYS_COMPILE=1 was not honoured")
        stages = {"ast": times.ir_initialization / 1e3, **{s: us / 1e3 for s, us in times.lowering_stages}}
        for stage, ms in stages.items():
            best[stage] = min(best.get(stage, float("inf")), ms)

    saved = knobs.compilation.listener, knobs.compilation.always_compile
    knobs.compilation.listener, knobs.compilation.always_compile = listener, True
    try:
        for _ in range(repeat):
            triton.compile(ASTSource(fn, signature, constexprs=constexprs), target=target)
    finally:
        knobs.compilation.listener, knobs.compilation.always_compile = saved
    return best


def bench_compile_time(repeat: int) -> None:
    from triton.backends.compiler import GPUTarget

    from triton_plate_backend.compiler import PLATE_ARCH, WARP_SIZE

    plate_target, cuda_target = GPUTarget("plate", PLATE_ARCH, WARP_SIZE), GPUTarget("cuda", 90, 32)
    print(f"\n== compile time, best of {repeat} uncached compiles (ms): plate vs Triton's CUDA sm_90 ==")
    print(
        f"{'kernel':9} {'ast->ttir':>9} {'ttir':>6} | {'plate ttir->pbin':>16} | {'cuda ->llir':>11} "
        f"{'->cubin':>8} | {'ratio llir':>10} {'ratio cubin':>11}"
    )
    to_llir, to_cubin = [], []
    for name, (fn, sig, const) in sources().items():
        plate = compile_stage_times(fn, sig, const, plate_target, repeat)
        try:
            cuda = compile_stage_times(fn, sig, const, cuda_target, repeat)
        except Exception as e:  # no NVIDIA backend in this Triton build, or a stage needs a tool it lacks
            print(f"  {name}: the CUDA compile failed: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
            cuda = {}
        plate_ms = sum(plate[s] for s in PLATE_AFTER_TTIR)
        llir_ms = sum(cuda[s] for s in CUDA_TO_LLIR) if all(s in cuda for s in CUDA_TO_LLIR) else None
        cubin_ms = sum(cuda[s] for s in CUDA_TO_CUBIN) if all(s in cuda for s in CUDA_TO_CUBIN) else None
        r_llir = plate_ms / llir_ms if llir_ms else None
        r_cubin = plate_ms / cubin_ms if cubin_ms else None
        if r_llir:
            to_llir.append(r_llir)
        if r_cubin:
            to_cubin.append(r_cubin)
        stages = " ".join(f"{s} {plate[s]:.1f}" for s in PLATE_AFTER_TTIR)
        print(
            f"{name:9} {plate['ast']:9.1f} {plate['ttir']:6.1f} | {plate_ms:16.1f} | "
            f"{(f'{llir_ms:.1f}' if llir_ms else '-'):>11} {(f'{cubin_ms:.1f}' if cubin_ms else '-'):>8} | "
            f"{(f'{r_llir:.2f}x' if r_llir else '-'):>10} {(f'{r_cubin:.2f}x' if r_cubin else '-'):>11}"
            f"   (plate {stages})"
        )
    if to_llir:
        print(f"geomean plate TTIR->pbin / CUDA TTIR->llir : {geomean(to_llir):.2f}x (target <= 1.0x)")
    if to_cubin:
        print(f"geomean plate TTIR->pbin / CUDA TTIR->cubin: {geomean(to_cubin):.2f}x")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-interpreter", action="store_true", help="skip the TRITON_INTERPRET=1 side")
    ap.add_argument("--no-compile", action="store_true", help="skip the compile-time comparison")
    ap.add_argument("--no-run", action="store_true", help="skip the run-time comparison")
    ap.add_argument("--repeat", type=int, default=3, help="timed repetitions (best is reported)")
    args = ap.parse_args(argv)
    os.environ["TRITON_DEFAULT_BACKEND"] = "plate"
    if not args.no_run:
        bench_run_time(args.repeat, not args.no_interpreter)
    if not args.no_compile:
        bench_compile_time(args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
