"""Compile time of the model suite for plate, against Inductor compiling the same models for the CPU.

    python benchmarks/bench_compile.py [--models mlp,cnn,block,gpt,embedding_ce] [--train] [--machine plate-mini]

For each model, in this one process: a fresh compile (Dynamo reset, Inductor's and Triton's caches off) for the
plate device and for the CPU, timed as the wall time of the first call (trace, lower, generate and
compile kernels, run once) minus the time of a second call. The ratio is plate / CPU. Figures are
measurements of this run on this machine, not assertions.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import time
from pathlib import Path


def first_call_seconds(model, inputs, train: bool) -> tuple[float, float]:
    """(compile seconds, steady call seconds) of torch.compile(model) on ``inputs``."""
    import torch

    compiled = torch.compile(model)

    def call():
        out = compiled(*inputs)
        if train:
            (out if out.dim() == 0 else out.float().square().mean()).backward()
        return out

    start = time.perf_counter()
    call()
    first = time.perf_counter() - start
    start = time.perf_counter()
    call()
    steady = time.perf_counter() - start
    return max(first - steady, 0.0), steady


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="mlp,cnn,block,gpt,embedding_ce")
    p.add_argument("--train", action="store_true", help="time forward + backward (AOTAutograd compiles both)")
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
    from inductor_plate import model_suite

    print(f"compile time, {'forward + backward' if args.train else 'forward'}, caches off, machine {args.machine}")
    print(f"{'model':<14}{'plate s':>10}{'cpu s':>10}{'plate/cpu':>11}{'plate run s':>13}{'cpu run s':>11}")
    totals = [0.0, 0.0]
    with torch._inductor.config.patch(force_disable_caches=True), torch.set_grad_enabled(args.train):
        for name in args.models.split(","):
            cpu_model = model_suite.build(name)
            plate_model = copy.deepcopy(cpu_model).to("plate")
            inputs = model_suite.example_inputs(name)
            torch._dynamo.reset()
            plate_s, plate_run = first_call_seconds(plate_model, [x.to("plate") for x in inputs], args.train)
            torch._dynamo.reset()
            cpu_s, cpu_run = first_call_seconds(cpu_model, list(inputs), args.train)
            totals[0] += plate_s
            totals[1] += cpu_s
            print(f"{name:<14}{plate_s:>10.2f}{cpu_s:>10.2f}{plate_s / cpu_s:>11.2f}{plate_run:>13.3f}{cpu_run:>11.3f}")
    print(f"{'total':<14}{totals[0]:>10.2f}{totals[1]:>10.2f}{totals[0] / totals[1]:>11.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
