"""Simulator speed on the hand-written programs at realistic sizes, timing model on.

    python benchmarks/bench_asm.py [--no-interpreter]

Prints, per program: simulator wall time (functional + timing), modeled device time, and the
wall time of Triton's interpreter (TRITON_INTERPRET=1, measured here in a subprocess) on the same
kernel written in Triton, with the ratio. Figures are measurements of this run, not assertions."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
CASES = {
    "vec_add": dict(
        grid=(1024, 1, 1),
        args={"x": "rand:f32:1048576", "y": "rand:f32:1048576", "o": "zeros:f32:1048576", "n": "1048576"},
        expect="o = x + y",
    ),
    "softmax": dict(
        grid=(1024, 1, 1),
        args={
            "out": "zeros:f32:1048576",
            "inp": "randn:f32:1048576",
            "in_stride": "1024",
            "out_stride": "1024",
            "n_cols": "1024",
        },
        expect="out = softmax(inp.reshape(1024, 1024)).ravel()",
    ),
    "matmul": dict(
        grid=(8, 8, 1),
        args={
            "a": "randn:f16:65536",
            "b": "randn:f16:65536",
            "c": "zeros:f32:65536",
            "M": "256",
            "N": "256",
            "K": "256",
        },
        expect="c = (a.astype('f4').reshape(256, 256) @ b.astype('f4').reshape(256, 256)).ravel()",
    ),
}


def time_plate(name: str, repeat: int = 3):
    from triton_plate_backend.isa import asm
    from triton_plate_backend.machine import get_machine
    from triton_plate_backend.runasm import check_expect, run_asm

    case = CASES[name]
    program = asm.assemble((ROOT / "examples" / "asm" / f"{name}.pasm").read_text())
    best, run = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        run = run_asm(program, case["grid"], case["args"], get_machine("plate1"))
        best = min(best, time.perf_counter() - t)
    ok, _ = check_expect(run, case["expect"])
    return best * 1e3, run.profile, ok


def main() -> int:
    import bench_triton

    ap = argparse.ArgumentParser()
    ap.add_argument("--no-interpreter", action="store_true", help="skip the TRITON_INTERPRET=1 side")
    args = ap.parse_args()
    ratios = []
    print(f"{'program':10} {'plate wall ms':>14} {'modeled us':>11} {'correct':>8} {'interp ms':>10} {'speedup':>8}")
    for name in CASES:
        wall, profile, ok = time_plate(name)
        timed = None if args.no_interpreter else bench_triton.time_interpreter(name, repeat=3)
        interp = timed[0] if timed else None
        ratio = interp / wall if interp else None
        if ratio:
            ratios.append(ratio)
        print(
            f"{name:10} {wall:14.1f} {profile.time_ns / 1e3:11.1f} {str(ok):>8} "
            f"{(f'{interp:.1f}' if interp else '-'):>10} {(f'{ratio:.1f}x' if ratio else '-'):>8}"
        )
    if ratios:
        print(f"geomean speedup over TRITON_INTERPRET=1: {bench_triton.geomean(ratios):.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
