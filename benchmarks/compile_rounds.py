"""A model's default-mode compile on plate against Inductor's for the CPU, one process per run, in alternating rounds.

    PYTHONPATH=.:LIBS python benchmarks/compile_rounds.py [--models bert,llama] [--rounds 3] [--trees BASE,.]
                                                           [--machine plate-mini] [--no-cpu] [--also-threads N]

LIBS holds transformers (bench_models.py's docstring). Each run is its own Python process: the model built as
bench_models.py builds it (``MODELS[name]()``, a fixed seed), Dynamo reset, ``torch.compile`` in the default mode
under ``force_disable_caches`` and ``torch.no_grad()``, ``TRITON_ALWAYS_COMPILE=1``, Inductor's default
``compile_threads``; the compile is the first call minus the second call, in wall seconds and in CPU seconds of the
process, its waited-for children and its live descendants (Inductor's compile workers; read from /proc, so the
CPU column needs Linux). A fresh process pays what a user's first compile pays: imports, Triton's per-process
``triton_key``, Inductor's worker pool. Plate's eager kernels (its ATen) load from Triton's cache when it holds
them (bench_models.py's docstring says why); run once before measuring so that every tree's are there.

``--trees``: the source trees whose plate compile is measured (each run from that tree: its directory first on
PYTHONPATH); the default is this checkout. Give a base checkout first (``git worktree add`` or ``git archive``
of the commit, with its built extension) to measure a change against it: each round runs every tree then the CPU
per model, so base and change alternate under the same load. The CPU run uses the first tree's integration
(inductor_plate only registers the device; the CPU compile does not use it). Prints one row per run and, per
model, the medians of plate / CPU from each tree. ``--also-threads N`` adds a run of the last tree with Inductor's
``compile_threads`` = N (TORCHINDUCTOR_COMPILE_THREADS): what Inductor's compile-worker pool, which the first plate
kernel starts, costs the compile. Figures are measurements of this run, not assertions; state
the load with them (the 1-minute load average is printed with each run).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _live_descendants_cpu() -> float:
    """CPU seconds of the live processes under this one (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[tuple[int, float]]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append((int(entry), (int(fields[11]) + int(fields[12])) / tick))
    total, todo = 0.0, [os.getpid()]
    while todo:
        for pid, seconds in children.get(todo.pop(), []):
            total += seconds
            todo.append(pid)
    return total


def cpu_seconds() -> float:
    """CPU seconds of this process, its waited-for children and its live descendants."""
    import resource

    own, waited = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + waited.ru_utime + waited.ru_stime + _live_descendants_cpu()


def one_run(device: str, name: str, machine: str) -> dict:
    """Compile ``name`` for ``device`` in this process: wall and CPU seconds of the first call minus the second."""
    os.environ["PLATE_MACHINE"] = machine
    os.environ["TRITON_ALWAYS_COMPILE"] = "1"
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    import copy

    import torch

    import inductor_plate  # noqa: F401

    sys.path.insert(0, str(HERE))
    import bench_models

    with torch._inductor.config.patch(force_disable_caches=True), torch.no_grad():
        torch.manual_seed(0)
        model, inputs = bench_models.MODELS[name]()
        model = copy.deepcopy(model.eval())
        if device == "plate":
            model, inputs = model.to("plate"), [x.to("plate") for x in inputs]
        torch._dynamo.reset()
        compiled = torch.compile(model)
        t0, c0 = time.perf_counter(), cpu_seconds()
        compiled(*inputs)
        t1, c1 = time.perf_counter(), cpu_seconds()
        compiled(*inputs)
        t2, c2 = time.perf_counter(), cpu_seconds()
    return {
        "wall": max((t1 - t0) - (t2 - t1), 0.0),
        "cpu": max((c1 - c0) - (c2 - c1), 0.0),
        "load": os.getloadavg()[0],
        "ml_dtypes": "ml_dtypes" in sys.modules,
    }


def spawn(tree: Path, device: str, name: str, machine: str, threads: int | None = None) -> dict:
    """``one_run`` in a fresh process run from ``tree`` (``threads``: Inductor's compile_threads, else its default)."""
    env = dict(os.environ)
    if threads is not None:
        env["TORCHINDUCTOR_COMPILE_THREADS"] = str(threads)
    env["PYTHONPATH"] = os.pathsep.join([str(tree), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))])
    cmd = [sys.executable, str(HERE / "compile_rounds.py"), "--one", device, name, "--machine", machine]
    done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    raise RuntimeError(f"{device} {name} from {tree} failed:\n{done.stderr[-3000:]}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="bert,llama")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--trees", default=".", help="comma-separated source trees to measure plate from")
    p.add_argument("--machine", default="plate-mini")
    p.add_argument("--no-cpu", action="store_true", help="leave out Inductor for the CPU")
    p.add_argument(
        "--also-threads",
        type=int,
        metavar="N",
        help="one more plate run per round, from the last tree, with Inductor's compile_threads = N",
    )
    p.add_argument("--one", nargs=2, metavar=("DEVICE", "MODEL"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        print("RESULT " + json.dumps(one_run(args.one[0], args.one[1], args.machine)), flush=True)
        return 0
    trees = [Path(t).resolve() for t in args.trees.split(",")]
    models = list(filter(None, args.models.split(",")))
    rows: dict[tuple[str, str], list[dict]] = {}
    print(f"{'UTC':<10}{'model':<8}{'run':<28}{'wall s':>8}{'CPU s':>8}{'load':>6}", flush=True)
    for _ in range(args.rounds):
        for name in models:
            runs = [(str(t), "plate", t, None) for t in trees]
            if args.also_threads is not None:
                runs.append((f"{trees[-1]} threads={args.also_threads}", "plate", trees[-1], args.also_threads))
            runs += [] if args.no_cpu else [("cpu", "cpu", trees[0], None)]
            for label, device, tree, threads in runs:
                r = spawn(tree, device, name, args.machine, threads)
                rows.setdefault((name, label), []).append(r)
                shown = (
                    "cpu"
                    if device == "cpu"
                    else f"plate {tree.name or tree}" + (f" threads={threads}" if threads else "")
                )
                print(
                    f"{time.strftime('%H:%M:%S', time.gmtime()):<10}{name:<8}{shown[:27]:<28}"
                    f"{r['wall']:>8.2f}{r['cpu']:>8.2f}{r['load']:>6.1f}",
                    flush=True,
                )
    if args.no_cpu:
        return 0
    print("\nmedian plate / CPU of each round (wall, CPU s):")
    for name in models:
        cpu = rows[(name, "cpu")]
        for label, mine in rows.items():
            if label[0] != name or label[1] == "cpu":
                continue
            wall = statistics.median(a["wall"] / b["wall"] for a, b in zip(mine, cpu))
            cpus = statistics.median(a["cpu"] / b["cpu"] for a, b in zip(mine, cpu))
            shown = Path(label[1].split(" ")[0]).name + "".join(f" {w}" for w in label[1].split(" ")[1:])
            print(f"  {name:<8}{shown[:40]:<42}{wall:>6.2f}x {cpus:>6.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
