"""Modeled time and remote share of compiled models, one forward pass after some warm calls: the model
suite (inductor_plate.model_suite) and compile_gpt's GPT, default mode, on plate1 (or --machine).

    python benchmarks/graph_placement.py [--warm 3] [--machine plate1]

The warm calls compile and let the placement settle (replicas are bought once their price is paid,
inductor_plate/placement.py and triton_plate_backend/sim/operands.py); the measured call is the next one.
Copies made during warm calls are charged to the device clock then, not to the measured call. ``level 0``:
the sum of the launches' level-0 bounds, what no placement can go below."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--machine", default="plate1")
    p.add_argument("--warm", type=int, default=3, help="calls before the measured one")
    args = p.parse_args(argv)
    os.environ["PLATE_MACHINE"] = args.machine
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import torch

    import inductor_plate
    from inductor_plate import model_suite

    cases = [(name, model_suite.build(name), model_suite.example_inputs(name)) for name in model_suite.MODELS]
    config = model_suite.GPTConfig(vocab=256, context=32, d_model=64, heads=4, layers=2)
    cases.append(
        ("compile_gpt", model_suite.build("gpt", config=config), (torch.randint(0, 256, (2, 32), generator=None),))
    )
    print("| model | warm calls | time (us) | level 0 (us) | remote | launches | wall (s) |")
    print("|---|---|---|---|---|---|---|")
    for name, model, inputs in cases:
        t0 = time.perf_counter()
        torch._dynamo.reset()
        compiled = torch.compile(model.eval().to("plate"))
        with torch.no_grad():
            for _ in range(args.warm):
                compiled(*(x.to("plate") for x in inputs))
            with inductor_plate.collect_profiles() as run:
                compiled(*(x.to("plate") for x in inputs))
        level0_ns = sum(launch.profile.bound.cycles / launch.profile.clock_ghz for launch in run.launches)
        pair = run.traffic_by_domain()
        total = float(pair.sum())
        remote = (total - float(pair.trace())) / total if total else 0.0
        print(
            f"| {name} | {args.warm} | {run.time_ns / 1e3:.1f} | {level0_ns / 1e3:.1f} | {remote:.1%} "
            f"| {len(run.launches)} | {time.perf_counter() - t0:.0f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
