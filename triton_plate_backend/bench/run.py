"""`plate bench`: every kernel of ``kernels.CASES`` under two settings, side by side:

- ``baseline``: every tensor ``interleaved``, grid -> core ``round_robin`` (PLATE.md's naive baseline);
- ``plate``: plate's own defaults (placement and grid -> core policy as the knobs leave them).

Per kernel and setting: modeled time (level 1), % of its level-0 bound, % of peak (the matrix
unit's FLOP/s for GEMM and attention, HBM bytes/s otherwise), remote share of the bytes, DMA /
compute overlap (per core, how much of the shorter of DMA-busy and compute-busy time runs under
the other, averaged over the cores used), compile time, simulator wall time, and the cost model's
estimate (``sim.estimate``) with its error against level 1. Writes ``results.json``,
``results.md`` and ``roofline.png`` (matplotlib) to the output folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from ..errors import PlateError
from .kernels import CASES

MODES = ("baseline", "plate")
AUTOTUNE_SIZE = {"quick": 256, "default": 512, "full": 1024}  # n of the n^3 bf16 GEMM autotuned


class BenchError(PlateError):
    """A bad `plate bench` request (unknown kernel, missing plotting library)."""


@contextlib.contextmanager
def _mode(mode: str):
    import torch

    saved = os.environ.get("PLATE_POLICY")
    try:
        if mode == "baseline":
            os.environ["PLATE_POLICY"] = "round_robin"
            with torch.plate.placement("interleaved"):
                yield
        else:
            yield
    finally:
        if saved is None:
            os.environ.pop("PLATE_POLICY", None)
        else:
            os.environ["PLATE_POLICY"] = saved


def _overlap(profile) -> float:
    busy = profile.busy_by_core  # [DMA-in, compute, DMA-out] x cores
    dma, comp = busy[[0, 2]].max(axis=0), busy[1]
    used = (dma > 0) & (comp > 0)
    if not used.any():
        return 0.0
    hidden = (dma[used] + comp[used] - profile.cycles).clip(min=0) / np.minimum(dma[used], comp[used])
    return float(hidden.clip(0, 1).mean())


def _peak(machine, matrix: bool, dtype: str) -> float:
    """FLOP per ns (matrix) or bytes per ns (HBM) of the whole machine at its clock."""
    if matrix:
        macs = machine.core.matrix.macs_per_cycle.get("bf16" if dtype == "bf16" else "f32", 1024)
        return 2.0 * macs * machine.total_cores * machine.clock_ghz
    return machine.domain.hbm_bytes_per_cycle * machine.total_domains * machine.clock_ghz


@contextlib.contextmanager
def _profiles():
    """The Profile of every plate launch in the block (Triton's launch hooks; one kernel or a
    compiled graph's many)."""
    from triton import knobs as triton_knobs

    from ..sim.device import get_device

    profiles, seen = [], []

    def enter(metadata):
        seen.append(get_device().launches)

    def exit_(metadata):
        dev = get_device()
        if seen and dev.launches > seen.pop() and dev.last_profile is not None:
            profiles.append(dev.last_profile)

    triton_knobs.runtime.launch_enter_hook.add(enter)
    triton_knobs.runtime.launch_exit_hook.add(exit_)
    try:
        yield profiles
    finally:
        triton_knobs.runtime.launch_enter_hook.remove(enter)
        triton_knobs.runtime.launch_exit_hook.remove(exit_)


def measure(name: str, size: int, mode: str) -> dict:
    """One kernel (or compiled graph) at one size under one setting (module docstring)."""
    from ..sim.device import get_device

    case = CASES[name]
    dev = get_device()
    with _mode(mode):
        launch = case.setup(size)
        t0 = time.perf_counter()
        launch.run()
        dev.last_profile  # noqa: B018  (times the launch now)
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        with _profiles() as profiles:
            launch.run()
        sim_wall = time.perf_counter() - t0
        with dev.estimating() as estimates:
            launch.run()
    ns = sum(p.time_ns for p in profiles)
    level0 = sum(p.bound.cycles / p.clock_ghz for p in profiles)
    total = sum(p.total_bytes for p in profiles)
    flops = launch.flops or sum(p.flops for p in profiles)
    peak = _peak(dev.machine, launch.matrix, case.dtype)
    achieved = flops / ns if launch.matrix else total / ns
    est_ns = sum(e.time_ns for e in estimates)
    longest = max(profiles, key=lambda p: p.time_ns)
    return {
        "kernel": name,
        "shape": launch.shape,
        "dtype": case.dtype,
        "mode": mode,
        "policy": longest.policy,
        "launches": len(profiles),
        "time_us": ns / 1e3,
        "level0_us": level0 / 1e3,
        "bound": longest.bound.binding,
        "pct_of_level0": 100.0 * level0 / ns if ns else 0.0,
        "peak_kind": "FLOP/s" if launch.matrix else "HBM",
        "pct_of_peak": 100.0 * achieved / peak,
        "flops": flops,
        "bytes": total,
        "intensity": flops / max(total, 1.0),
        "remote_pct": 100.0 * sum(p.remote_bytes for p in profiles) / max(total, 1.0),
        "overlap_pct": 100.0 * sum(_overlap(p) * p.time_ns for p in profiles) / max(ns, 1e-9),
        "compile_s": max(first - sim_wall, 0.0),  # 0 when the same kernel compiled earlier in the run
        "sim_wall_s": sim_wall,
        "estimate_us": est_ns / 1e3,
        "estimate_err_pct": 100.0 * (est_ns - ns) / ns,
        "estimate_wall_s": sum(e.wall_s for e in estimates),
        "tile": launch.tile,
    }


def tile_ceiling(machine, bm: int, bn: int, dtype: str) -> dict:
    """Why a GEMM tile tops out where it does: a BM x BN output tile reads itemsize * k * (BM + BN)
    bytes per K step k for 2 * BM * BN * k FLOPs, so its intensity is 2 * BM * BN / (itemsize * (BM + BN))
    FLOP/byte whatever k; a core streams at most its share of its domain's achievable HBM bandwidth
    (7.2 B/cycle on plate1), so without reuse across cores the matrix unit is busy at most
    intensity * that / its peak FLOP per cycle."""
    itemsize, macs = (
        (2, machine.core.matrix.macs_per_cycle["bf16"])
        if dtype == "bf16"
        else (4, machine.core.matrix.macs_per_cycle["f32"])
    )
    per_core = machine.domain.hbm_bytes_per_cycle * machine.domain.hbm_efficiency / machine.domain.cores
    intensity = 2.0 * bm * bn / (itemsize * (bm + bn))
    return {
        "tile": f"{bm}x{bn}",
        "dtype": dtype,
        "intensity": intensity,
        "bytes_per_cycle_per_core": per_core,
        "ceiling_pct": 100.0 * min(1.0, intensity * per_core / (2.0 * macs)),
    }


def _progress(i: int, n: int, label: str) -> None:
    width = 30
    done = width * i // max(n, 1)
    sys.stderr.write(f"\r[{'#' * done}{'.' * (width - done)}] {i}/{n} {label:<40}")
    sys.stderr.flush()
    if i == n:
        sys.stderr.write("\n")


def run(
    level: str = "default", only=None, out: str | Path = "benchmarks/results", plot: bool = True, autotune: bool = True
) -> dict:
    """Every case (or ``only``) at the sizes of ``level`` ("quick", "default", "full"), both settings,
    and the cost model's autotuning regret (``bench.autotune``)."""
    from .. import torch_device  # noqa: F401  (registers the plate device and torch.plate)
    from ..sim.device import get_device

    unknown = set(only or ()) - CASES.keys()
    if unknown:
        raise BenchError(f"unknown kernel(s) {', '.join(sorted(unknown))}; known: {', '.join(CASES)}")
    jobs = [
        (name, size, mode)
        for name, case in CASES.items()
        if not only or name in only
        for size in getattr(case, level)
        for mode in MODES
    ]
    rows = []
    t0 = time.perf_counter()
    for i, (name, size, mode) in enumerate(jobs):
        _progress(i, len(jobs), f"{name} {size} {mode}")
        rows.append(measure(name, size, mode))
    _progress(len(jobs), len(jobs), "done")
    tuning = None
    if autotune:
        from .autotune import regret

        sys.stderr.write(f"autotuning a {AUTOTUNE_SIZE[level]}^3 bf16 GEMM, exhaustive and model-pruned...\n")
        tuning = regret(AUTOTUNE_SIZE[level])
    machine = get_device().machine
    errors = [abs(r["estimate_err_pct"]) for r in rows]
    result = {
        "machine": machine.name,
        "level": level,
        "python": platform.python_version(),
        "wall_s": time.perf_counter() - t0,
        "estimate_median_abs_err_pct": statistics.median(errors) if errors else 0.0,
        "rows": rows,
        "gemm_ceilings": _ceilings(machine, rows),
        "autotune": tuning,
    }
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / "results.md").write_text(markdown(result))
    if plot:
        roofline(result, machine, out / "roofline.png")
    return result


def _ceilings(machine, rows) -> list[dict]:
    """tile_ceiling of every GEMM tile the rows chose, and of the bf16 tiles the bench offers."""
    from .kernels import GEMM_TILES

    seen = dict.fromkeys((r["dtype"], tuple(r["tile"][:2])) for r in rows if r.get("tile"))
    seen.update(dict.fromkeys(("bf16", t[:2]) for t in GEMM_TILES["bf16"]))
    return [tile_ceiling(machine, bm, bn, dtype) for dtype, (bm, bn) in sorted(seen)]


def markdown(result: dict) -> str:
    cols = [
        ("kernel", "{}"),
        ("shape", "{}"),
        ("mode", "{}"),
        ("time_us", "{:.1f}"),
        ("pct_of_level0", "{:.0f}%"),
        ("pct_of_peak", "{:.0f}%"),
        ("peak_kind", "{}"),
        ("remote_pct", "{:.0f}%"),
        ("overlap_pct", "{:.0f}%"),
        ("bound", "{}"),
        ("estimate_us", "{:.1f}"),
        ("estimate_err_pct", "{:+.1f}%"),
        ("compile_s", "{:.2f}"),
        ("sim_wall_s", "{:.2f}"),
    ]
    head = [
        f"# plate bench ({result['level']}, machine {result['machine']})",
        "",
        "`baseline`: tensors interleaved, grid -> core round_robin; `plate`: plate's own defaults. Times are",
        "modeled (level 1) in microseconds; `% L0`: level-0 bound / modeled time; `est`: the cost model's",
        "estimate without running the kernel, and its error against level 1.",
        "",
        f"Cost-model estimate: median |error| {result['estimate_median_abs_err_pct']:.1f}% over {len(result['rows'])} "
        f"runs. Bench wall time {result['wall_s']:.0f} s.",
        "",
        "| kernel | shape | mode | time (us) | % L0 | % peak | peak | remote | overlap | bound | est (us) "
        "| est err | compile (s) | sim wall (s) |",
        "|" + "---|" * len(cols),
    ]
    lines = ["| " + " | ".join(fmt.format(r[k]) for k, fmt in cols) + " |" for r in result["rows"]]
    ceilings = result.get("gemm_ceilings")
    if ceilings:
        per_core = ceilings[0]["bytes_per_cycle_per_core"]
        lines += [
            "",
            "## GEMM tiles: the ceiling from local HBM",
            "",
            "GEMM rows use the tile the cost model's estimate picks (`bench.kernels.GEMM_TILES`, num_stages 3). A",
            "BM x BN output tile reads itemsize * k * (BM + BN) bytes per K step for 2 * BM * BN * k FLOPs: intensity",
            f"2 * BM * BN / (itemsize * (BM + BN)) FLOP/byte. A core streams at most {per_core:.1f} B/cycle (its share",
            "of its domain's achievable HBM), so with no reuse across cores the matrix unit is busy at most",
            "intensity * that / its peak (2048 FLOP/cycle bf16, 256 fp32). The 1 MiB SRAM holds at most a 512x256",
            "(or 256x512) fp32 accumulator with its staged operands (512x512 needs 1 MiB for the accumulator",
            "alone), hence about 60% of peak for bf16; the output store, the pipeline's fill and its drain (the",
            "last K step's m.mma and the epilogue) come on top.",
            "",
            "| tile | dtype | intensity (FLOP/B) | ceiling (% of peak) |",
            "|---|---|---|---|",
            *(f"| {c['tile']} | {c['dtype']} | {c['intensity']:.0f} | {c['ceiling_pct']:.0f}% |" for c in ceilings),
        ]
    tuning = result.get("autotune")
    if tuning:
        lines += [
            "",
            f"## Autotuning {tuning['shape']} {tuning['dtype']} GEMM over {tuning['configs']} tile configs",
            "",
            f"`@triton.autotune` with the cost model first chose {tuning['chosen']} after simulating "
            f"{tuning['simulations']} of {tuning['configs']} configs; exhaustive simulation's best is "
            f"{tuning['best']}: regret {tuning['regret_pct']:.1f}%. Ranking by the estimate alone and "
            "simulating the top k: "
            + ", ".join(f"k={k}: {v:.1f}%" for k, v in tuning["top_k_regret_pct"].items())
            + ".",
            "",
            "| config | simulated (us) | estimated (us) |",
            "|---|---|---|",
            *(
                f"| {c} | {1e3 * t:.1f} | {1e3 * tuning['estimated_ms'][c]:.1f} |"
                for c, t in tuning["simulated_ms"].items()
            ),
        ]
    return "\n".join(head + lines) + "\n"


def roofline(result: dict, machine, path: Path) -> None:
    """Each run's achieved point (FLOP/byte, FLOP/s or bytes/s as FLOP/s at 1 FLOP/byte) under the
    machine's rooflines (bf16 and fp32 matrix peaks, HBM peak)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise BenchError(
            "the roofline plot needs matplotlib: pip install matplotlib (or the dev extra: "
            "pip install -e '.[dev]'), or run `plate bench --no-plot`"
        ) from None
    hbm = _peak(machine, False, "")  # bytes per ns
    fig, ax = plt.subplots(figsize=(8, 5.5))
    xs = [2.0**e for e in range(-4, 12)]
    for dtype, style in (("bf16", "-"), ("fp32", "--")):
        top = _peak(machine, True, dtype)
        ax.plot(xs, [min(top, hbm * x) for x in xs], style, color="gray", label=f"roofline {dtype}")
    markers = {"baseline": "o", "plate": "^"}
    kernels = list(dict.fromkeys(r["kernel"] for r in result["rows"]))
    colours = {k: plt.get_cmap("tab10")(i % 10) for i, k in enumerate(kernels)}
    labelled = set()
    for r in result["rows"]:
        intensity = max(r["intensity"], 1 / 16)
        achieved = r["flops"] / (r["time_us"] * 1e3) if r["flops"] else r["bytes"] / (r["time_us"] * 1e3) * intensity
        label = None if r["kernel"] in labelled else r["kernel"]
        labelled.add(r["kernel"])
        ax.scatter([intensity], [achieved], marker=markers[r["mode"]], color=colours[r["kernel"]], s=36, label=label)
    ax.scatter([], [], marker="o", color="gray", label="o: baseline, ^: plate")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / byte moved; streaming kernels at 1/16)")
    ax.set_ylabel("GFLOP/s (streaming kernels: GB/s x intensity)")
    ax.set_title(f"plate bench on {machine.name}: achieved vs roofline")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
