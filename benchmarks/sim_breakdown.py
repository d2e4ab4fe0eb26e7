"""Where one steady launch of the benchmark kernels spends its CPU time, inside the simulator.

    python benchmarks/sim_breakdown.py [--repeat 7] [vec_add,softmax,matmul]

Per kernel of bench_triton.py (its sizes, timing deferred to the clock as there): the launch, the
functional executor (sim.executor.execute) within it, and within that the semantic rules by kind
(strided and gather DMA, scalar, vector, matrix, control and sync) and what is left, the executor's
own loop (scheduling, trace entries). Thread CPU time, the launch with the least total of
``--repeat``; every rule call is timed, which adds about half a microsecond per instruction step.
Figures are measurements of this run on this machine, not assertions.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

KINDS = ("dma", "scalar", "vector", "matrix", "control/sync")


def kind_of(mnemonic: str) -> str:
    if mnemonic.startswith(("dma.", "atom.")) and mnemonic != "dma.wait":
        return "dma"
    for prefix, kind in (("s.", "scalar"), ("v.", "vector"), ("m.", "matrix")):
        if mnemonic.startswith(prefix):
            return kind
    return "control/sync"


def breakdown(name: str, device, repeat: int) -> dict[str, float]:
    """ms of the launch with the least CPU: total, execute, per rule kind, executor loop, outside execute."""
    import bench_triton

    from triton_plate_backend.sim import executor

    launch, _ = bench_triton.plate_case(name, device)
    launch()  # compiles
    spent: collections.Counter = collections.Counter()
    original_rules, original_execute = dict(executor.SEMANTICS), executor.execute

    def timed_rule(kind, rule):
        def run(st, ins):
            t = time.thread_time_ns()
            try:
                return rule(st, ins)
            finally:
                spent[kind] += time.thread_time_ns() - t

        return run

    def timed_execute(*args, **kwargs):
        t = time.thread_time_ns()
        try:
            return original_execute(*args, **kwargs)
        finally:
            spent["execute"] += time.thread_time_ns() - t

    best = None
    try:
        executor.SEMANTICS.update({m: timed_rule(kind_of(m), r) for m, r in original_rules.items()})
        executor.execute = timed_execute
        for _ in range(repeat):
            spent.clear()
            t = time.thread_time_ns()
            launch()
            spent["total"] = time.thread_time_ns() - t
            if best is None or spent["total"] < best["total"]:
                best = dict(spent)
    finally:
        executor.SEMANTICS.update(original_rules)
        executor.execute = original_execute
    ms = {k: v / 1e6 for k, v in best.items()}
    rules = sum(ms.get(k, 0.0) for k in KINDS)
    ms["executor loop"] = ms["execute"] - rules
    ms["outside execute"] = ms["total"] - ms["execute"]
    return ms


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kernels", nargs="?", default="vec_add,softmax,matmul")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args(argv)
    import bench_triton

    device = bench_triton._plate_device()
    cols = ("total", "execute", *KINDS, "executor loop", "outside execute")
    print("| kernel (CPU ms) | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for name in args.kernels.split(","):
        ms = breakdown(name, device, args.repeat)
        print(f"| {name} | " + " | ".join(f"{ms.get(c, 0.0):.2f}" for c in cols) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
