"""What a fuzz run leaves behind: a reproducer per mismatch and the run's summary (Markdown and JSON).

A reproducer is one Python file: the kernel source as generated, the case (inputs as base64
bytes, grid, scalars, checks) as JSON, and a main() that runs it on plate and under the
interpreter and prints every differing output."""

from __future__ import annotations

import base64
import json
from collections import Counter
from pathlib import Path

import numpy as np

from .generator import Buffer, Case
from .values import DTYPES


def case_to_json(case: Case) -> str:
    bufs = []
    for b in case.buffers:
        row = {"name": b.name, "dtype": b.dtype, "count": b.count, "check": b.check}
        if b.values is not None:
            row["values"] = base64.b64encode(b.values.tobytes()).decode()
        bufs.append(row)
    keep = {"seed": case.seed, "index": case.index, "grid": case.grid, "features": case.features}
    return json.dumps(keep | {"scalars": case.scalars, "constexprs": case.constexprs, "buffers": bufs})


def case_from_json(text: str, source: str) -> Case:
    d = json.loads(text)
    bufs = []
    for row in d["buffers"]:
        values = None
        if "values" in row:
            values = np.frombuffer(base64.b64decode(row["values"]), DTYPES[row["dtype"]].np).copy()
        bufs.append(Buffer(row["name"], row["dtype"], row["count"], values, row["check"]))
    return Case(d["seed"], d["index"], source, bufs, d["scalars"], d["constexprs"], d["grid"], d["features"])


REPRODUCER = '''r"""plate fuzz reproducer: seed {seed}, case {index} ({category}).
{detail}

Run: python {name}.py  (prints the outputs where plate and Triton's interpreter differ)"""
{source}

CASE = {case_json!r}

if __name__ == "__main__":
    import sys

    from triton_plate_backend.fuzz.reproduce import reproduce

    sys.exit(reproduce(kernel, CASE, __file__))
'''


def write_reproducer(case: Case, result, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{case.name}.py"
    body = case.source.split("\n", 2)[2]  # the imports are in the template's source already
    text = REPRODUCER.format(
        seed=case.seed,
        index=case.index,
        category=result.category,
        detail=result.detail.replace('"""', "'''"),
        name=case.name,
        source="import triton\nimport triton.language as tl\n" + body,
        case_json=case_to_json(case),
    )
    path.write_text(text)
    return path


def summarize(results: list[dict], seed: int, wall: float) -> dict:
    status = Counter(r["status"] for r in results)
    mismatches = Counter(r["category"] for r in results if r["status"] == "mismatch")
    explained = Counter(r["rule"] for r in results if r["status"] == "explained")
    invalid = Counter(r["detail"].split(":")[0] for r in results if r["status"] == "invalid")
    features = Counter(kind for r in results for kind in {f.split(":")[0] for f in r["features"]})
    cases = len(results)
    return {
        "seed": seed,
        "cases": cases,
        "exact": status["exact"],
        "bounded": status["bounded"],
        "explained": status["explained"],
        "mismatches": status["mismatch"],
        "invalid": status["invalid"],
        "mismatches_by_category": dict(mismatches.most_common()),
        "explained_by_rule": dict(explained.most_common()),
        "invalid_by_error": dict(invalid.most_common()),
        "features": dict(features.most_common()),
        "wall_seconds": round(wall, 1),
        "kernel_seconds": round(sum(r["seconds"] for r in results), 1),
    }


def summary_markdown(s: dict) -> str:
    rate = s["cases"] / s["kernel_seconds"] if s["kernel_seconds"] else 0.0
    lines = [
        f"# plate fuzz: seed {s['seed']}, {s['cases']} kernels",
        "",
        "| result | kernels |",
        "|---|---|",
        f"| bit-exact | {s['exact']} |",
        f"| within the bound of their check (reductions, scans, dots, transcendentals) | {s['bounded']} |",
        f"| explained by a rule | {s['explained']} |",
        f"| **unexplained mismatches** | **{s['mismatches']}** |",
        f"| not runnable by the interpreter | {s['invalid']} |",
        "",
        f"Time: {s['kernel_seconds']} s in kernels, all batches ({rate:.2f} kernels/s); "
        f"{s['wall_seconds']} s wall in the last batch.",
        "",
    ]
    for title, key in (
        ("Mismatches by category", "mismatches_by_category"),
        ("Explained by rule", "explained_by_rule"),
        ("Not runnable by the interpreter", "invalid_by_error"),
        ("Features covered", "features"),
    ):
        if s[key]:
            lines += [f"## {title}", "", "| | kernels |", "|---|---|"]
            lines += [f"| `{k}` | {v} |" for k, v in s[key].items()]
            lines.append("")
    return "\n".join(lines)
