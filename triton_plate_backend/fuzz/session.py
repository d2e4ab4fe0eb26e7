"""`plate fuzz`: generate, run and judge cases in batches; resumable from the results file in --out.

Each finished case appends one JSON line to OUT/results-SEED.jsonl; a rerun with the same seed skips
the cases already there, so a long run can be stopped and continued (or split into --start ranges)."""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from .generator import generate
from .report import summarize, summary_markdown, write_reproducer
from .runner import run_case


def select_device() -> str:
    from ..run_example import select_plate

    os.environ.setdefault("PLATE_MAX_STEPS", "20000000")
    return select_plate()


_DEVICE = None


def _init_worker() -> None:
    global _DEVICE
    _DEVICE = select_device()


def _one(seed: int, index: int, out: str) -> dict:
    case = generate(seed, index)
    with tempfile.TemporaryDirectory(prefix="plate-fuzz-") as tmp:
        result, _, _ = run_case(case, Path(tmp), _DEVICE)
    if result.status == "mismatch":
        write_reproducer(case, result, Path(out) / "reproducers")
    return asdict(result)


def fuzz(cases: int, seed: int, out: Path, jobs: int = 1, start: int = 0, stream=sys.stdout) -> dict:
    """Run cases start..start+cases-1 of `seed`; the summary of every case recorded for `seed` in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    log = out / f"results-{seed}.jsonl"
    done = {}
    if log.exists():
        for line in log.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                done[r["index"]] = r
    todo = [i for i in range(start, start + cases) if i not in done]
    t0 = time.perf_counter()
    counts = {"mismatch": 0, "explained": 0}
    with log.open("a") as f:
        for n, r in enumerate(_results(seed, todo, out, jobs), 1):
            done[r["index"]] = r
            f.write(json.dumps(r) + "\n")
            f.flush()
            counts[r["status"]] = counts.get(r["status"], 0) + 1
            if r["status"] == "mismatch":
                print(f"case {r['index']}: MISMATCH {r['category']}: {r['detail'][:200]}", file=stream)
            elapsed = time.perf_counter() - t0
            print(
                f"\r[{n}/{len(todo)}] {counts['mismatch']} mismatches, {counts['explained']} explained, "
                f"{n / elapsed:.2f} kernels/s",
                end="",
                file=stream,
                flush=True,
            )
    print(file=stream)
    summary = summarize(list(done.values()), seed, time.perf_counter() - t0)
    (out / "fuzz-summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "fuzz-summary.md").write_text(summary_markdown(summary))
    return summary


def _results(seed: int, todo: list[int], out: Path, jobs: int):
    if jobs <= 1:
        _init_worker()
        for i in todo:
            yield _one(seed, i, str(out))
        return
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(jobs, initializer=_init_worker) as pool:
        yield from pool.imap_unordered(_star, [(seed, i, str(out)) for i in todo])


def _star(args) -> dict:
    return _one(*args)
