"""An OpInfo's reference inputs on plate, as TestCommon.test_compare_cpu runs them: CPU seconds of this process
(the simulator's and the eager ops' host code) and the kernel launches per op, for the ops whose compare_cpu test
ran past its timeout (upstream/reports/README.md, pytorch-test_ops-compare_cpu).

    python benchmarks/bench_eager_opinfo.py [NAME[:VARIANT] ...] [--limit N] [--backward] [--dims D]

--backward: forward and backward (the gradient of the outputs' sum w.r.t. the floating inputs OpInfo marks
requires_grad), OpInfo's sample_inputs (reference_inputs have no gradients); --dims D: the samples whose input
has D dims (nn.functional.grid_sample's 3-D ones: --dims 5). Host ops: eager ops the CPU fallback ran.

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
    parser.add_argument("--backward", action="store_true", help="forward and backward of sample_inputs")
    parser.add_argument("--dims", type=int, default=None, help="only samples whose input has this many dims")
    args = parser.parse_args()
    eager_ops.register()
    launches: collections.Counter = collections.Counter()
    launch = sim_device.Device.launch

    def counted(self, program, *a, **k):
        launches[program.name] += 1
        return launch(self, program, *a, **k)

    sim_device.Device.launch = counted
    print("| op | samples | CPU s | launches | host ops |\n|---|---|---|---|---|")
    for spec in args.ops:
        op = _op(spec)
        if args.backward:
            samples = list(op.sample_inputs("plate", torch.float32, requires_grad=True))
        else:
            samples = list(op.reference_inputs("plate", torch.float32))
        samples = [s for s in samples if args.dims is None or s.input.dim() == args.dims][: args.limit]
        run(op, samples[0], args.backward)  # compiles
        launches.clear()
        torch.plate.reset_host_ops()
        start = time.process_time()
        for s in samples:
            run(op, s, args.backward)
        seconds = time.process_time() - start
        hosted = sum(torch.plate.host_ops().values())
        print(f"| {spec} | {len(samples)} | {seconds:.1f} | {sum(launches.values())} | {hosted} |", flush=True)


def run(op, s, backward: bool) -> None:
    result = op(s.input, *s.args, **s.kwargs)
    if not backward:
        if isinstance(result, torch.Tensor):
            result.cpu()
        return
    leaves = [t for t in (s.input, *s.args, *s.kwargs.values()) if isinstance(t, torch.Tensor) and t.requires_grad]
    for g in torch.autograd.grad(result.sum(), leaves):
        g.cpu()


if __name__ == "__main__":
    main()
