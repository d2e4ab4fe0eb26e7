"""Modeled time of the model suite and of GEMM/conv cases in Inductor's default mode against max-autotune.

    python benchmarks/bench_modes.py [--cases mlp,cnn,block,gpt,embedding_ce,mm,addmm_bf16,bmm,conv2d,conv1d,scaled_mm]
                                     [--machine plate-mini]

For each case, in this one process: compile for plate in the default mode (one GEMM configuration, the cost
model's choice, nothing benchmarked) and under max-autotune (every fitting configuration ranked by modeled
time), run once more and read the modeled time of that run (inductor_plate.collect_profiles). The ratio is
default / max-autotune. Each row also counts what ran on the host inside the compiled region
(inductor_plate.host_fallbacks(), which counts every op the device's CPU fallback ran while a compiled
graph ran) and checks the result against the CPU. Figures are measurements of this run, not assertions.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import time
from pathlib import Path

CASES = "mlp,cnn,block,gpt,embedding_ce,mm,addmm_bf16,bmm,conv2d,conv1d,scaled_mm"


def gemm_case(name: str):
    """(fn, CPU inputs, tolerance) of a GEMM/conv case."""
    import torch
    import torch.nn.functional as F

    g = torch.Generator().manual_seed(0)

    def randn(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=g).to(dtype)

    cases = {
        "mm": (torch.mm, (randn(256, 256), randn(256, 256)), 1e-3),
        "addmm_bf16": (
            torch.addmm,
            (
                randn(256, dtype=torch.bfloat16),
                randn(128, 256, dtype=torch.bfloat16),
                randn(256, 256, dtype=torch.bfloat16),
            ),
            5e-2,
        ),
        "bmm": (torch.bmm, (randn(4, 64, 128), randn(4, 128, 64)), 1e-3),
        "conv2d": (
            lambda x, w, b: F.relu(F.conv2d(x, w, b, padding=1)),
            (randn(2, 16, 16, 16), randn(32, 16, 3, 3), randn(32)),
            1e-3,
        ),
        "conv1d": (lambda x, w: F.conv1d(x, w, stride=2, dilation=2), (randn(2, 16, 64), randn(32, 16, 5)), 1e-3),
        "scaled_mm": (
            lambda a, b, sa, sb: torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16),
            (
                randn(128, 128, dtype=torch.float8_e4m3fn),
                randn(128, 128, dtype=torch.float8_e4m3fn).t(),
                torch.rand(128, 1, generator=g) + 0.5,
                torch.rand(1, 128, generator=g) + 0.5,
            ),
            5e-2,
        ),
    }
    return cases[name]


def run_case(name: str, mode: str | None):
    """(modeled us of one run after compiling, launches, host fallbacks, max error vs the CPU, compile s)."""
    import torch

    import inductor_plate
    from inductor_plate import model_suite

    if name in model_suite.MODELS:
        cpu_fn = model_suite.build(name).eval()
        plate_fn = copy.deepcopy(cpu_fn).to("plate")
        inputs, tol = model_suite.example_inputs(name), 1e-3
    else:
        cpu_fn, inputs, tol = gemm_case(name)
        plate_fn = cpu_fn
    plate_inputs = [x.to("plate") for x in inputs]
    torch._dynamo.reset()
    inductor_plate.reset_host_fallbacks()
    compiled = torch.compile(plate_fn, mode=mode)
    with torch.no_grad():
        start = time.perf_counter()
        compiled(*plate_inputs)
        compile_s = time.perf_counter() - start
        with inductor_plate.collect_profiles() as run:
            out = compiled(*plate_inputs)
        want = cpu_fn(*inputs)
    error = (out.cpu().float() - want.float()).abs().max().item()
    scale = max(want.float().abs().max().item(), 1.0)
    ok = error <= tol * scale
    return run.time_ns / 1e3, len(run.launches), dict(inductor_plate.host_fallbacks()), ok, compile_s


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", default=CASES)
    p.add_argument("--machine", default="plate-mini")
    args = p.parse_args(argv)
    os.environ["PLATE_MACHINE"] = args.machine
    os.environ["TRITON_ALWAYS_COMPILE"] = "1"  # Triton's own kernel cache would skip the plate lowering
    import torch

    try:
        import inductor_plate  # noqa: F401
    except ModuleNotFoundError:  # a checkout that is not pip-installed: run from the repository
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        import inductor_plate  # noqa: F401

    print(f"modeled time of one run, default mode vs max-autotune, caches off, machine {args.machine}")
    print(
        f"{'case':<14}{'default us':>12}{'autotune us':>13}{'ratio':>8}{'launches':>10}"
        f"{'host ops (default)':>20}{'correct':>9}{'compile s (default/autotune)':>30}"
    )
    with torch._inductor.config.patch(force_disable_caches=True):
        for name in args.cases.split(","):
            default = run_case(name, None)
            tuned = run_case(name, "max-autotune-no-cudagraphs")
            host = ", ".join(f"{k} x{v}" for k, v in default[2].items()) or "none"
            compile_s = f"{default[4]:.1f} / {tuned[4]:.1f}"
            print(
                f"{name:<14}{default[0]:>12.2f}{tuned[0]:>13.2f}{default[0] / tuned[0]:>8.2f}"
                f"{default[1]:>5}/{tuned[1]:<4}{host:>20}{str(default[3] and tuned[3]):>9}{compile_s:>30}",
                flush=True,
            )
            if tuned[2]:
                print(f"{'':<14}host ops under max-autotune: {tuned[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
