"""What PLATE_SANITIZE costs: launch time of each sanitizer mode over the launch time without it.

    python benchmarks/bench_sanitize.py [--repeat 3] [--modes off,race,init,race+init]

The kernels and sizes of bench_triton.py (vector add of 2^20 fp32, row softmax of 1024x1024 fp32,
matmul 256^3 fp16 -> fp32), tensors on the plate device. Each mode has its own tensors, made under
that mode (init mode poisons them at allocation); after a warm-up launch per mode, --repeat rounds
launch once per mode in turn (so a busy machine slows all modes alike), and the best launch of each
mode counts. A launch here is the functional simulation (Triton's launcher leaves the
timing model for later, when the clock is read), so the ratios are those of the part the sanitizer
adds to; a launch whose timing is read as well costs more in every mode, and its ratio is lower.
Figures are measurements of this run on this machine, not assertions.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

MODES = ("off", "race", "init", "race+init")


def set_mode(mode: str) -> None:
    if mode == "off":
        os.environ.pop("PLATE_SANITIZE", None)
    else:
        os.environ["PLATE_SANITIZE"] = mode.replace("+", ",")


def time_modes(name: str, modes, device, repeat: int) -> dict[str, float]:
    """Best launch time (ms) of kernel ``name`` under each sanitizer mode."""
    from bench_triton import plate_case

    cases = {}
    for mode in modes:
        set_mode(mode)
        cases[mode] = plate_case(name, device)
        cases[mode][0]()  # warm-up (the first one compiles)
    best = dict.fromkeys(modes, float("inf"))
    for _ in range(repeat):
        for mode in modes:
            set_mode(mode)
            t = time.perf_counter()
            cases[mode][0]()
            best[mode] = min(best[mode], time.perf_counter() - t)
    for mode in modes:
        cases[mode][1]()  # the results are right
    set_mode("off")
    return {m: t * 1e3 for m, t in best.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of {', '.join(MODES)}")
    args = parser.parse_args(argv)
    modes = args.modes.split(",")
    if modes[0] != "off":
        modes.insert(0, "off")
    os.environ.setdefault("TRITON_DEFAULT_BACKEND", "plate")
    import torch

    import triton_plate_backend.torch_device  # noqa: F401

    device = torch.device("plate")
    ratios: dict[str, list[float]] = {m: [] for m in modes[1:]}
    head = "".join(f"{m + ' ms':>14}" for m in modes) + "".join(f"{m + ' x':>14}" for m in modes[1:])
    print(f"{'kernel':<10}{head}")
    for name in ("vec_add", "softmax", "matmul"):
        ms = time_modes(name, modes, device, args.repeat)
        for m in modes[1:]:
            ratios[m].append(ms[m] / ms["off"])
        row = "".join(f"{ms[m]:>14.1f}" for m in modes) + "".join(f"{ms[m] / ms['off']:>13.1f}x" for m in modes[1:])
        print(f"{name:<10}{row}")
    geo = "".join(f"{math.exp(sum(map(math.log, r)) / len(r)):>13.1f}x" for r in ratios.values())
    print(f"{'geomean':<10}{' ' * 14 * len(modes)}{geo}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
