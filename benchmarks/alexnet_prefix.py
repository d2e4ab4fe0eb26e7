"""test_torchinductor's ``test_alexnet_prefix`` graph (convolution 11x11 stride 4 over 16x3x224x224, relu,
max_pool2d 3x3 stride 2) compiled on plate, run once: the operand planner's CPU and what it decided.

    python benchmarks/alexnet_prefix.py [record FILE | check FILE] [--repeat N]

The default machine, Inductor's cache as the environment leaves it (run once to warm it: the numbers are of
the launches, not the compile). Printed per run: CPU seconds of the compiled call (its launches and the
simulator), of ``OperandPlanner.plan`` within it, and the address-only runs made by the planner's
pricing, then all the call's address-only runs and their CPU seconds (the planner's and the launches' own:
the persistent gate's, sim/persistent_runs.py). Recorded (``record``) and compared (``check``, exit 0 when
equal; FILE.now gets what it saw): each ``plan`` call's kernel, grid and choices, each priced Estimate's
placement, time and bytes, the device's operand moves, its clock and a digest of the result (floats as
Python writes them: bit for bit).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time


def run() -> tuple[dict, dict]:
    import torch

    import inductor_plate  # noqa: F401
    from triton_plate_backend.sim import estimate, operands
    from triton_plate_backend.sim.device import get_device

    def forward(bias, weight, x):
        conv = torch.ops.aten.convolution(x, weight, bias, [4, 4], [2, 2], [1, 1], False, [0, 0], 1)
        return (torch.ops.aten.max_pool2d_with_indices(torch.ops.aten.relu(conv), [3, 3], [2, 2])[0],)

    torch.manual_seed(0)
    args = [torch.randn(64), torch.randn(64, 3, 11, 11), torch.randn(16, 3, 224, 224)]
    dev_args = [a.to("plate") for a in args]
    seen = {"plans": [], "priced": []}
    cpu = {"plan": 0.0, "planner_runs": 0, "runs": 0, "runs_s": 0.0}
    plan, estimate_launch, address_run = operands.OperandPlanner.plan, operands.estimate_launch, estimate._address_run
    depth = [0]

    def timed_plan(self, program, grid, args, memory):
        t0 = time.process_time()
        depth[0] += 1
        try:
            shared, choices = plan(self, program, grid, args, memory)
        finally:
            depth[0] -= 1
        cpu["plan"] += time.process_time() - t0
        operands_seen = [[i, r.nbytes, str(r.placement)] for i, r in shared]
        choices_seen = [[c.arg, c.spec, c.saved_ns, c.replica_gain_ns, c.replica_ns] for c in choices]
        seen["plans"].append([program.name, list(grid), operands_seen, choices_seen])
        return shared, choices

    def priced(program, grid, args, memory, *a, **kw):
        est = estimate_launch(program, grid, args, memory, *a, **kw)
        placement = {str(k): v for k, v in (kw.get("placement") or {}).items()}
        seen["priced"].append([program.name, placement, est.time_ns, est.bytes.sum(), est.bound])
        return est

    def counted(*a, **kw):
        cpu["planner_runs"] += depth[0] > 0
        cpu["runs"] += 1
        t0 = time.process_time()
        try:
            return address_run(*a, **kw)
        finally:
            cpu["runs_s"] += time.process_time() - t0

    operands.OperandPlanner.plan, operands.estimate_launch, estimate._address_run = timed_plan, priced, counted
    compiled = torch.compile(forward)
    t0 = time.process_time()
    out = compiled(*dev_args)[0].cpu()
    cpu["call"] = time.process_time() - t0
    device = get_device()
    torch.testing.assert_close(out, forward(*args)[0], atol=3e-3, rtol=1e-3)  # the test's tolerances
    seen["moves"] = [[m.kernel, m.arg, m.before, m.after, m.migration_ns, m.saved_ns] for m in device.operand_moves]
    seen["clock_ns"] = device.clock_ns
    seen["result"] = hashlib.sha256(out.numpy().tobytes()).hexdigest()
    return seen, cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", nargs="?", choices=("record", "check"))
    ap.add_argument("file", nargs="?")
    args = ap.parse_args()
    seen, cpu = run()
    print(
        f"call {cpu['call']:.2f} s CPU, of it OperandPlanner.plan {cpu['plan']:.2f} s "
        f"({cpu['planner_runs']} address-only runs); {len(seen['priced'])} estimates priced, "
        f"{len(seen['moves'])} moves, clock {seen['clock_ns']!r} ns; all address-only runs: {cpu['runs']}, "
        f"{cpu['runs_s']:.2f} s CPU"
    )
    if args.mode == "record":
        with open(args.file, "w") as f:
            json.dump(seen, f, indent=1)
    elif args.mode == "check":
        with open(args.file + ".now", "w") as f:
            json.dump(seen, f, indent=1)
        with open(args.file) as f:
            same = json.load(f) == json.loads(json.dumps(seen))
        print("equal" if same else "DIFFERENT")
        return 0 if same else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
