"""An OpInfo's reference inputs on plate, as TestCommon.test_compare_cpu runs them: CPU seconds of this process
(the simulator's and the eager ops' host code) and the kernel launches per op, for the ops whose compare_cpu test
ran past its timeout (upstream/reports/README.md, pytorch-test_ops-compare_cpu).

    python benchmarks/bench_eager_opinfo.py [NAME[:VARIANT] ...] [--limit N]

Each op's samples run once after its first sample (which compiles its kernels) and are not compared (the test
does that); the inputs are built before the clock starts. Figures are measurements of this run on this machine,
not assertions; CPU time is the steadier figure on a shared machine."""

from __future__ import annotations

import argparse
import collections
import time

import torch

from triton_plate_backend import eager_ops
from triton_plate_backend.sim import device as sim_device

DEFAULT = [
    "igamma",
    "igammac",
    "logspace:tensor_overload",
    "_refs.logspace:tensor_overload",
    "nn.functional.ctc_loss",
    "grid_sampler_3d",
    "max_pool2d_with_indices_backward",
]


def _op(spec: str):
    from torch.testing._internal.common_methods_invocations import op_db, python_ref_db

    name, _, variant = spec.partition(":")
    return next(o for o in op_db + python_ref_db if o.name == name and o.variant_test_name == variant)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("ops", nargs="*", default=DEFAULT)
    parser.add_argument("--limit", type=int, default=None, help="the first N samples of each op")
    args = parser.parse_args()
    eager_ops.register()
    launches: collections.Counter = collections.Counter()
    launch = sim_device.Device.launch

    def counted(self, program, *a, **k):
        launches[program.name] += 1
        return launch(self, program, *a, **k)

    sim_device.Device.launch = counted
    print("| op | samples | CPU s | launches |\n|---|---|---|---|")
    for spec in args.ops:
        op = _op(spec)
        samples = list(op.reference_inputs("plate", torch.float32))[: args.limit]
        op(samples[0].input, *samples[0].args, **samples[0].kwargs)  # compiles
        launches.clear()
        start = time.process_time()
        for s in samples:
            result = op(s.input, *s.args, **s.kwargs)
            if isinstance(result, torch.Tensor):
                result.cpu()
        seconds = time.process_time() - start
        print(f"| {spec} | {len(samples)} | {seconds:.1f} | {sum(launches.values())} |", flush=True)


if __name__ == "__main__":
    main()
