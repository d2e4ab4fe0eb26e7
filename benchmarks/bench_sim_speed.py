"""Simulator speed: the benchmark kernels against Triton's interpreter, and a 4096^3 bf16 GEMM's wall
time and peak host memory.

    python benchmarks/bench_sim_speed.py [--no-interpreter] [--no-gemm] [--repeat 3] [--gemm-size 4096]

Kernels: those of bench_triton.py (vector add 2^20 fp32, row softmax 1024^2 fp32, matmul 256^3
fp16 -> fp32) at the same sizes. Per kernel: plate's best launch (functional simulation; its
level-1 timing is deferred to the clock, as in bench_triton.py), plate's best launch with its
timing (the clock settled after each launch, every launch timed afresh), and Triton's interpreter
(TRITON_INTERPRET=1, in a subprocess). Each as wall and as CPU time of the process (the CPU ratio
is the steadier one on a shared machine). Ratios: interpreter / plate.

GEMM: bench/kernels.py's matmul_kernel on bf16 4096x4096 operands (C bf16, fp32 accumulation,
GROUP_M 8), tiles 128x128x64 and 512x256x64, each in a fresh subprocess: one launch, functional
and level-1 timing (the launch's Profile read), after a compiling launch with the same tiles at
256^3 (512^3 for the large ones). Peak RSS: the subprocess's ru_maxrss (torch, the operands and
the simulator together), and its RSS before the launch. Figures are measurements of this run on
this machine, not assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

GEMM_TILES = ((128, 128, 64), (512, 256, 64))


def _rss_mib() -> float:
    """Resident set now (MiB), from /proc when there is one."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def _peak_rss_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def gemm_child(n: int, bm: int, bn: int, bk: int) -> dict:
    """One GEMM launch in this process: wall seconds (all, functional, timing), CPU seconds (all threads),
    RSS before the launch and peak RSS (MiB), modeled us."""
    import torch
    import triton

    import triton_plate_backend
    from triton_plate_backend.bench.kernels import matmul_kernel

    def setup(size: int):
        g = torch.Generator().manual_seed(0)
        a = torch.randn(size, size, generator=g).to(torch.bfloat16).to("plate")
        b = torch.randn(size, size, generator=g).to(torch.bfloat16).to("plate")
        c = torch.empty(size, size, dtype=torch.bfloat16, device="plate")
        grid = (triton.cdiv(size, bm) * triton.cdiv(size, bn),)

        def run():
            matmul_kernel[grid](
                a, b, c, size, size, size, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                BM=bm, BN=bn, BK=bk, GROUP_M=8,
            )  # fmt: skip

        return run

    warm = setup(max(256, bm, bn))  # the kernel has no masks on its loads: at least one tile
    warm()
    triton_plate_backend.last_profile()
    del warm
    run = setup(n)
    rss_before = _rss_mib()
    c0, t0 = time.process_time(), time.perf_counter()
    run()
    t1 = time.perf_counter()
    profile = triton_plate_backend.last_profile()
    c2, t2 = time.process_time(), time.perf_counter()
    return {
        "n": n,
        "tiles": f"{bm}x{bn}x{bk}",
        "wall_s": t2 - t0,
        "functional_s": t1 - t0,
        "timing_s": t2 - t1,
        "cpu_s": c2 - c0,
        "rss_before_mib": rss_before,
        "peak_rss_mib": _peak_rss_mib(),
        "modeled_us": profile.time_ns / 1e3,
    }


def run_gemm(n: int, tiles) -> dict:
    """gemm_child(n, *tiles) in a fresh subprocess (its own peak RSS); RuntimeError when it fails."""
    code = (
        f"import sys, json; sys.path.insert(0, {str(HERE)!r}); import bench_sim_speed as b; "
        f"print(json.dumps(b.gemm_child({n}, {tiles[0]}, {tiles[1]}, {tiles[2]})))"
    )
    pythonpath = os.pathsep.join([str(HERE.parent), *filter(None, [os.environ.get("PYTHONPATH")])])
    env = dict(os.environ, TRITON_DEFAULT_BACKEND="plate", PYTHONPATH=pythonpath)  # this checkout's package
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=3600)
    if r.returncode != 0:
        raise RuntimeError(f"GEMM {tiles} failed: {r.stderr.strip()[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def bench_gemm(n: int) -> list[dict]:
    print(f"== bf16 GEMM {n}^3, functional + level-1 timing, one launch per fresh process ==")
    head = f"{'tiles':12} {'wall s':>7} {'functional s':>13} {'timing s':>9} {'CPU s':>6}"
    print(f"{head} {'RSS before MiB':>15} {'peak RSS MiB':>13}")
    out = []
    for tiles in GEMM_TILES:
        r = run_gemm(n, tiles)
        out.append(r)
        print(
            f"{r['tiles']:12} {r['wall_s']:7.2f} {r['functional_s']:13.2f} {r['timing_s']:9.2f} {r['cpu_s']:6.2f} "
            f"{r['rss_before_mib']:15.0f} {r['peak_rss_mib']:13.0f}   (modeled {r['modeled_us']:.1f} us)"
        )
    return out


def _best(fn, repeat: int) -> tuple[float, float]:
    """(best wall ms, best CPU ms) of fn() over ``repeat`` calls."""
    wall = cpu = float("inf")
    for _ in range(repeat):
        c, t = time.process_time(), time.perf_counter()
        fn()
        wall, cpu = min(wall, time.perf_counter() - t), min(cpu, time.process_time() - c)
    return wall * 1e3, cpu * 1e3


def time_plate(name: str, device, repeat: int) -> dict:
    """Best wall and CPU ms of one launch (its timing deferred, as bench_triton.py measures it) and of
    one launch with its level-1 timing (the clock settled, each launch timed afresh), and correctness."""
    import bench_triton

    import triton_plate_backend
    from triton_plate_backend.sim import clock

    kept, clock.PROFILES_KEPT = clock.PROFILES_KEPT, 0  # time each launch, not a copy of an earlier one
    try:
        launch, check = bench_triton.plate_case(name, device)
        launch()
        triton_plate_backend.last_profile()
        wall, cpu = _best(launch, repeat)
        try:
            check()
            ok = True
        except AssertionError:
            ok = False

        def timed():
            launch()
            triton_plate_backend.last_profile()

        triton_plate_backend.last_profile()
        twall, tcpu = _best(timed, repeat)
    finally:
        clock.PROFILES_KEPT = kept
    return {"plate_ms": wall, "plate_cpu_ms": cpu, "plate_timed_ms": twall, "plate_timed_cpu_ms": tcpu, "ok": ok}


def bench_kernels(repeat: int, interpreter: bool) -> list[dict]:
    import bench_triton

    device = bench_triton._plate_device()
    print(f"== benchmark kernels: plate vs TRITON_INTERPRET=1, best of {repeat}; wall ms / CPU ms ==")
    print(
        f"{'kernel':9} {'plate':>13} {'plate+timing':>13} {'interpreter':>15} {'speedup':>13} "
        f"{'with timing':>13} {'ok':>5}"
    )
    rows = []
    for name in bench_triton.KERNELS:
        r = {"kernel": name, **time_plate(name, device, repeat)}
        interp = bench_triton.time_interpreter(name, repeat, cpu=True) if interpreter else None
        r["interp_ms"], r["interp_cpu_ms"] = interp if interp else (None, None)
        rows.append(r)

        def ratio(a, b):
            return f"{a / b:.0f}x" if a else "-"

        print(
            f"{name:9} {r['plate_ms']:6.1f}/{r['plate_cpu_ms']:6.1f} {r['plate_timed_ms']:6.1f}/"
            f"{r['plate_timed_cpu_ms']:6.1f} "
            + (f"{r['interp_ms']:7.0f}/{r['interp_cpu_ms']:7.0f}" if interp else f"{'-':>15}")
            + f" {ratio(r['interp_ms'], r['plate_ms']):>6}/{ratio(r['interp_cpu_ms'], r['plate_cpu_ms']):>6}"
            f" {ratio(r['interp_ms'], r['plate_timed_ms']):>6}/{ratio(r['interp_cpu_ms'], r['plate_timed_cpu_ms']):>6}"
            f" {r['ok']!s:>5}"
        )
    g = speedups(rows)
    if g:
        print(
            f"geomean speedup over TRITON_INTERPRET=1 (target >= 100x): wall {g['ms']:.1f}x, CPU "
            f"{g['cpu_ms']:.1f}x; with timing: wall {g['timed_ms']:.1f}x, CPU {g['timed_cpu_ms']:.1f}x"
        )
    return rows


def speedups(rows: list[dict]) -> dict[str, float] | None:
    """Geomean interpreter / plate over bench_kernels' rows: ``ms`` and ``cpu_ms`` (plate's launch, its
    timing deferred), ``timed_ms`` and ``timed_cpu_ms`` (each launch timed); None unless every kernel
    has an interpreter figure."""
    import bench_triton

    if not rows or not all(r["interp_ms"] for r in rows):
        return None
    return {
        f"{k}{c}": bench_triton.geomean([r[f"interp_{c}"] / r[f"plate_{k}{c}"] for r in rows])
        for k in ("", "timed_")
        for c in ("ms", "cpu_ms")
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-interpreter", action="store_true", help="skip the TRITON_INTERPRET=1 side")
    ap.add_argument("--no-kernels", action="store_true", help="skip the benchmark kernels")
    ap.add_argument("--no-gemm", action="store_true", help="skip the 4096^3 GEMM")
    ap.add_argument("--gemm-size", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=3, help="timed repetitions (best is reported)")
    ap.add_argument("--json", help="write the figures to this file")
    args = ap.parse_args(argv)
    os.environ["TRITON_DEFAULT_BACKEND"] = "plate"
    result = {}
    if not args.no_kernels:
        result["kernels"] = bench_kernels(args.repeat, not args.no_interpreter)
    if not args.no_gemm:
        result["gemm"] = bench_gemm(args.gemm_size)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
