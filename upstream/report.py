"""Pass-rate reports of an upstream run: JSON for tools, Markdown for people, a file of failure texts.

pass rate = passed / (total - by-design): by-design entries (things plate does not do on purpose) leave the
denominator and are reported as their own share. It is the conservative rate: not-in-pin entries (tests of a
newer upstream copy that need library code the pinned release lacks) stay in it as not passed; the rate
without them, `pass_rate_in_pin` = passed / (total - by-design - not-in-pin), is shown beside it. `xpassed` (a
listed or upstream xfail that passes) counts as passed. A test that passed with any host fallback (an op or
frame that ran on the host inside a compiled function: the record's `host_fallbacks`) is
`passed-with-fallback`, its own column, and does not count as passed.

That rate keeps upstream's own skips in its denominator. The applicable rate leaves out, besides, the
upstream skips in HARDWARE_GATED: those whose condition needs a GPU that plate is not (a vendor, an
architecture or a feature of one), each checked against its skip condition at the pinned commit. Both are
reported, with every hardware-gated reason and its count.

The third rate, over tests some device runs, leaves out as well the upstream skips in EVERY_DEVICE: parameter
combinations a test skips whatever the device (CUDA and HIP included), so no backend can pass them. Upstream's
skips that other backends or the interpreter run (e.g. test_dot3d's small blocks, run on HIP) stay in it.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
import sysconfig
import tempfile
from collections import Counter
from pathlib import Path

PASSED_WITH_FALLBACK = "passed-with-fallback"
OUTCOMES = ("passed", "failed", "errors", "skipped", "xfailed", "xpassed", PASSED_WITH_FALLBACK)
SLOWEST = 20
FAILURES_SHOWN = 100
SKIP_REASONS = 15

# upstream skip reasons (the whole first line) whose condition needs a particular GPU -> what it needs.
# Not here: skips of parameter combinations on every device (e.g. "uint cannot be negative"),
# unconditional ones ("bfloat16 compare not supported before sm90" skips cummax everywhere) and "small
# dots are supported only on HIP at the moment" (off HIP, but the interpreter runs those tests).
HARDWARE_GATED = (
    (r"Requires Hopper or Blackwell", "NVIDIA sm90 or sm100"),
    (r"Requires Blackwell", "NVIDIA sm100"),
    (r"Requires compute capability == 10", "NVIDIA sm100"),
    (r"skip forcing tmem layout on non blackwell targets\.", "NVIDIA sm100 tensor memory"),
    (r"Test requires tensor memory\.", "NVIDIA sm100 tensor memory"),
    (r"TMA Scatter only works on cloud Blackwell Chips", "NVIDIA sm100 TMA scatter"),
    (r"CTAs is unsupported for these cards", "NVIDIA sm90/sm100 CTA clusters (num_ctas=2)"),
    (r"Multi-CTA not supported", "NVIDIA sm90+ native TMA (num_ctas > 1)"),
    (r"Requires compute capability >= 9 for NV", "NVIDIA sm90+"),
    (r"PTX file in this unit test is only for SM90", "NVIDIA sm90"),
    (r"sm\d+ arch only for CUDA", "CUDA"),
    (r"gfx\d+ arch only for HIP", "AMD HIP"),
    (r"(Test )?[Oo]nly supported on CUDA and HIP", "CUDA or HIP"),
    (r"Requires CUDA|CUDA is not available|only currently tested on CUDA", "CUDA"),
    # torch.testing._internal.triton_utils.requires_cuda_and_triton: skipUnless(torch.cuda.is_available() and
    # HAS_TRITON); its tests also hard-code device="cuda" (test_triton_kernels.py's TestUserKernelEpilogueFusion).
    # Not "requires gpu and triton" (CUDA or XPU): upstream/inductor_plugin.py lets a Triton device run those.
    (r"requires cuda and triton", "CUDA"),
    (r"maxnreg only works on CUDA", "CUDA"),
    (r"NYI: scale_dot just implemented in CUDA/HIP", "CUDA or HIP"),
    (r"within_2g is a HIP specific optimization", "AMD HIP"),
    # test_max_autotune.py (torch 2.13's era): has_triton_tma_device() asks torch.cuda for sm90+;
    # `skipIf(not torch.version.hip)`; `skipIf(not HAS_CUDA_AND_TRITON)`; and Inductor's
    # _get_exceeding_shared_memory_checker, which reads shared memory only from torch.cuda / torch.xpu properties
    (r"Need device-side TMA support in Triton", "NVIDIA sm90+ device-side TMA"),
    (r"ROCM only", "AMD ROCm"),
    (r"Scheduler static analysis only tested on cuda", "CUDA"),
    (r"Device does not support shared memory size query", "CUDA or XPU device properties"),
)
_GATES = [(re.compile(p), needs) for p, needs in HARDWARE_GATED]

# upstream skip reasons (the whole first line) whose condition holds on every device -> the condition, as read at
# the pinned commit. Each was checked to test only the test's parameters (no is_cuda()/is_hip()/capability).
EVERY_DEVICE = (
    (r"uint cannot be negative", "an unsigned dtype with a negative-operand mode (test_atomic_rmw)"),
    (r"bfloat16 compare not supported before sm90", "cummax on bfloat16, unconditional (test_scan2d)"),
    (r"Skipping linear_recurrence scan on bfloat16 due to accuracy issues", "unconditional (test_scan2d)"),
    (r"Skipping unsupported case", "mixed float64/other or float32 -> float16 dtype pairs (test_matmul)"),
    (r"Minimal tile size for preshuffling is 32x32x256", "preshuffle with a smaller block (test_matmul)"),
    (r"creates convert layout too big to fit in smem", "epilogue subtile with BLOCK_N >= 512 or 2 CTAs (test_matmul)"),
    (r"Skipping cases small K for float8", "float8e5 with BLOCK_K 16 (test_matmul)"),
    (r"Padding with NaN is not supported for integer types", "NaN padding of an integer tensor (test_block_pointer)"),
    (r"Invalid last dim size", "a descriptor's last block dim under 32 bytes (test_tensor_descriptor)"),
    (r"Skipped", "test_tma_gather/scatter blocks larger than the tensor (test_tensor_descriptor, bare pytest.skip())"),
    # test_triton_kernels.py (torch 2.13's era): its tma_version="old" items need the module
    # triton.tools.experimental_descriptor (has_triton_experimental_host_tma), which the pinned Triton 3.7.1 no
    # longer ships, so they skip on every device with the pinned Triton; and autotune_at_compile_time with a
    # backend other than "inductor" is a parameter combination the test skips itself.
    (
        r"requires triton\.tools\.experimental_descriptor TMA support",
        "tma_version='old': triton.tools.experimental_descriptor, absent from the pinned Triton (test_triton_kernels)",
    ),
    (
        r"compile-time autotuning only exists in inductor",
        "autotune_at_compile_time with backend eager/aot_eager (test_triton_kernels)",
    ),
)
_EVERY_DEVICE = [(re.compile(p), why) for p, why in EVERY_DEVICE]


def every_device_skip(reason: str) -> str | None:
    """The condition of an upstream skip reason that EVERY_DEVICE lists (it holds on any device); else None."""
    return next((why for p, why in _EVERY_DEVICE if p.fullmatch(reason)), None)


def hardware_gate(reason: str) -> str | None:
    """What an upstream skip reason needs, when HARDWARE_GATED lists it; else None."""
    return next((needs for p, needs in _GATES if p.fullmatch(reason)), None)


def _gated_reasons(records: list[dict]) -> list[str]:
    """The reason of each of upstream's own skips (no skip-list entry made it) that HARDWARE_GATED lists."""
    reasons = (first_line(r.get("message")) for r in records if r["outcome"] == "skipped" and not r.get("category"))
    return [why for why in reasons if hardware_gate(why)]


def _every_device_reasons(records: list[dict]) -> list[str]:
    """The reason of each of upstream's own skips that EVERY_DEVICE lists."""
    reasons = (first_line(r.get("message")) for r in records if r["outcome"] == "skipped" and not r.get("category"))
    return [why for why in reasons if every_device_skip(why)]


def path_roots(src: Path | None, repo: Path) -> list[tuple[str, str]]:
    """The machine's folders a run's texts name, each with what a committed report says instead: paths under
    --src and the repo relative to them, Python's own packages by import path (`torch/...`), the interpreter as
    `python`, the temporary folder as `$TMPDIR` and the home folder as `~`."""
    roots = [(sys.executable, "python")]
    roots += [(sysconfig.get_paths()[k] + "/", "") for k in ("purelib", "platlib", "stdlib")]
    for folder, name in ((src, "<src>"), (repo, ".")):
        for path in {str(folder), str(Path(folder).resolve())} if folder else ():
            roots += [(path + "/", ""), (path, name)]
    for path, name in ((tempfile.gettempdir(), "$TMPDIR"), (str(Path.home()), "~")):
        roots += [(path + "/", name + "/"), (str(Path(path).resolve()) + "/", name + "/")]
    return roots


def relative_paths(value, roots: list[tuple[str, str]]):
    """`value` (a report, results, any JSON-like data) with every mention of a root replaced as path_roots says."""
    replace = dict(roots)
    # longest first, so a folder inside another (--src in $TMPDIR) wins; a bare root must end where the path ends
    alternatives = [re.escape(r) + ("" if r.endswith("/") else r"(?![\w.+-])") for r in sorted(replace, key=len)[::-1]]
    pattern = re.compile("|".join(alternatives))

    def rewrite(v):
        if isinstance(v, str):
            return pattern.sub(lambda m: replace[m.group()], v)
        if isinstance(v, dict):
            return {k: rewrite(x) for k, x in v.items()}
        if isinstance(v, list):
            return [rewrite(x) for x in v]
        return v

    return rewrite(value)


def _file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _rate(passed: int, denominator: int) -> float | None:
    return round(passed / denominator, 4) if denominator else None


def outcome_of(record: dict) -> str:
    """The outcome a report counts: passed-with-fallback for a pass with host fallbacks."""
    outcome = record["outcome"] or "errors"
    if outcome in ("passed", "xpassed") and record.get("host_fallbacks"):
        return PASSED_WITH_FALLBACK
    return outcome


def _counts(records: list[dict]) -> dict:
    c = Counter(outcome_of(r) for r in records)
    cat = Counter(r.get("category") for r in records)
    total = len(records)
    by_design, not_in_pin = cat["by-design"], cat["not-in-pin"]
    passed = c["passed"] + c["xpassed"]
    gated = len(_gated_reasons(records))
    everywhere = len(_every_device_reasons(records))
    out = {o: c[o] for o in OUTCOMES}
    out.update(
        total=total,
        by_design=by_design,
        not_yet=cat["not-yet"],
        upstream_bug=cat["upstream-bug"],
        not_in_pin=not_in_pin,
        pass_rate=_rate(passed, total - by_design),
        pass_rate_in_pin=_rate(passed, total - by_design - not_in_pin),
        by_design_share=_rate(by_design, total),
        hardware_gated=gated,
        applicable_rate=_rate(passed, total - by_design - not_in_pin - gated),
        every_device=everywhere,
        runnable_rate=_rate(passed, total - by_design - not_in_pin - gated - everywhere),
    )
    return out


def _not_in_pin(t: dict) -> str:
    """The other rate, beside the conservative one: without the not-in-pin tests."""
    if not t.get("not_in_pin"):
        return ""
    in_pin = t.get("pass_rate_in_pin", _rate(t["passed"] + t["xpassed"], t["total"] - t["by_design"] - t["not_in_pin"]))
    return f"; without the {t['not_in_pin']} not-in-pin tests: {_pct(in_pin)}"


def first_line(message: str | None) -> str:
    """The line of a failure text that says what went wrong (pytest's `E   ...`), else its last line."""
    lines = [ln.strip() for ln in (message or "").splitlines() if ln.strip()]
    errors = [ln[1:].strip() for ln in lines if ln.startswith("E ")]
    return (errors[0] if errors else lines[-1] if lines else "")[:200].rstrip()


def read_baseline(path: Path) -> dict:
    """A baseline run as {test id: outcome}: `outcome<TAB>test id` lines (gzipped when the name ends in .gz); a
    first line naming the columns and lines of other shapes are skipped."""
    outcomes = {}
    path = Path(path)
    text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
    for line in text.splitlines():
        outcome, sep, test = line.partition("\t")
        if sep and outcome in OUTCOMES + ("error",):
            outcomes[test] = outcome
    return {"path": str(path), "outcomes": outcomes}


def compare_baseline(records: list[dict], baseline: dict) -> dict:
    """How the tests the baseline passed fare here: counts by outcome (and skip-list category), and every one
    that does not pass."""
    here = {r["test"]: r for r in records}
    passed_there = [t for t, o in baseline["outcomes"].items() if o in ("passed", "xpassed") and t in here]
    fare = Counter()
    lost = []
    for t in passed_there:
        r = here[t]
        key = outcome_of(r)
        if key in ("passed", "xpassed"):
            fare["passed"] += 1
            continue
        key = f"{key} ({r['category']})" if r.get("category") else key
        fare[key] += 1
        lost.append({"test": t, "outcome": key, "category": r.get("category")})
    files = {_file(r["test"]) for r in records}
    return {
        "path": baseline["path"],
        "baseline_passed": len(passed_there),
        "baseline_passed_not_run": sum(
            1
            for t, o in baseline["outcomes"].items()
            if o in ("passed", "xpassed") and t not in here and _file(t) in files
        ),
        "here": dict(fare),
        "not_passing_here": lost,
    }


def summarize(results: dict, meta: dict, baseline: dict | None = None) -> dict:
    """Combine the plugin's results file with what the runner knows (suite, revision, command, wall time) and, given
    a baseline run (read_baseline), how the tests it passed fare here."""
    records = [dict(r) for r in results.get("tests", [])]
    records += [
        {"test": e["test"], "outcome": "errors", "duration": 0.0, "message": e["message"], "collection": True}
        for e in results.get("collection_errors", [])
    ]
    by_file: dict[str, list[dict]] = {}
    for r in records:
        by_file.setdefault(_file(r["test"]), []).append(r)
    unlisted_failures = [r for r in records if r["outcome"] in ("failed", "errors") and not r.get("category")]
    skiplist = results.get("skiplist", {})
    return {
        **meta,
        "totals": _counts(records),
        "files": {f: _counts(rs) for f, rs in sorted(by_file.items())},
        "slowest": [
            {"test": r["test"], "duration": round(r["duration"], 3)}
            for r in sorted(records, key=lambda r: -r["duration"])[:SLOWEST]
        ],
        "failures": [
            {"test": r["test"], "outcome": r["outcome"], "message": first_line(r.get("message"))}
            for r in unlisted_failures
        ],
        "passed_with_fallback": [
            {"test": r["test"], "host_fallbacks": r["host_fallbacks"]}
            for r in records
            if outcome_of(r) == PASSED_WITH_FALLBACK
        ],
        "skiplist": {
            "path": skiplist.get("path"),
            "entries": len(skiplist.get("entries", [])),
            "by_category": dict(Counter(e["category"] for e in skiplist.get("entries", []))),
            "ignored_files": skiplist.get("ignored_files", []),
            "stale": skiplist.get("stale", {"passing": {}, "missing": {}, "not_checked": []}),
        },
        "skip_reasons": [
            {"reason": reason, "count": n}
            for reason, n in Counter(
                first_line(r.get("message")) for r in records if r["outcome"] == "skipped" and not r.get("category")
            ).most_common(SKIP_REASONS)
        ],
        "hardware_gated": [
            {"reason": reason, "count": n, "needs": hardware_gate(reason)}
            for reason, n in Counter(_gated_reasons(records)).most_common()
        ],
        "every_device": [
            {"reason": reason, "count": n, "condition": every_device_skip(reason)}
            for reason, n in Counter(_every_device_reasons(records)).most_common()
        ],
        "collected": results.get("collected", 0),
        "pytest_exitstatus": results.get("exitstatus"),
        "baseline": compare_baseline(records, baseline) if baseline else None,
    }


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _table(rows: list[list[str]], header: list[str]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |" for r in rows]


def _interpreter_lines(report: dict) -> list[str]:
    i = report.get("interpreter")
    if not i:
        return [""]
    it = i["totals"]
    return [
        f"- the same selection under Triton's interpreter (`TRITON_INTERPRET=1`, run right after): wall "
        f"{i['wall_s']:.1f} s, {it['passed'] + it['xpassed']} passed / {it['failed'] + it['errors']} failed / "
        f"{it['skipped']} skipped; **plate / interpreter wall time = {i['wall_ratio']}**",
        f"- interpreter command: `{i['pytest_command']}`",
        *_by_function_lines(i.get("by_function")),
        "",
    ]


BY_FUNCTION = 15  # test functions shown where plate loses the most seconds (and the 5 where it gains the most)


def _ran(record: dict) -> bool:
    return record["outcome"] != "skipped"


def compare_by_function(plate: dict, interpreter: dict, shown: int = BY_FUNCTION) -> dict:
    """Plate's and the interpreter's summed test durations (setup + call + teardown) per test function (the id
    up to its parameters), over the tests both ran (not skipped), and the tests only one of them ran: where
    the wall-time ratio comes from. The functions shown: the ``shown`` where plate's seconds exceed the
    interpreter's the most (over all the tests either ran), then up to 5 where they fall short the most.
    ``plate``, ``interpreter``: the two runs' results files."""
    p = {r["test"]: r for r in plate.get("tests", [])}
    i = {r["test"]: r for r in interpreter.get("tests", [])}
    functions: dict[str, dict] = {}
    totals = {"both": [0, 0.0, 0.0], "plate_only": [0, 0.0], "interpreter_only": [0, 0.0]}
    for test in p.keys() | i.keys():
        f = functions.setdefault(test.split("[", 1)[0], {"tests": 0, "plate_s": 0.0, "interpreter_s": 0.0})
        in_p, in_i = test in p and _ran(p[test]), test in i and _ran(i[test])
        if in_p and in_i:
            f["tests"] += 1
            f["plate_s"] += p[test]["duration"]
            f["interpreter_s"] += i[test]["duration"]
            both = totals["both"]
            both[0], both[1], both[2] = both[0] + 1, both[1] + p[test]["duration"], both[2] + i[test]["duration"]
        elif in_p or in_i:
            key, record = ("plate_only", p[test]) if in_p else ("interpreter_only", i[test])
            f[f"{key}_tests"] = f.get(f"{key}_tests", 0) + 1
            f[f"{key}_s"] = f.get(f"{key}_s", 0.0) + record["duration"]
            totals[key][0] += 1
            totals[key][1] += record["duration"]
    rows = [
        {"function": name, **{k: round(v, 2) if isinstance(v, float) else v for k, v in f.items()}}
        for name, f in functions.items()
    ]
    gap = _function_gap
    rows.sort(key=lambda row: (-gap(row), row["function"]))
    gains = [row for row in reversed(rows[shown:]) if gap(row) < 0][:5]
    return {
        "both": {
            "tests": totals["both"][0],
            "plate_s": round(totals["both"][1], 2),
            "interpreter_s": round(totals["both"][2], 2),
        },
        "plate_only": {"tests": totals["plate_only"][0], "plate_s": round(totals["plate_only"][1], 2)},
        "interpreter_only": {
            "tests": totals["interpreter_only"][0],
            "interpreter_s": round(totals["interpreter_only"][1], 2),
        },
        "functions": rows[:shown] + gains,
    }


def _function_gap(row: dict) -> float:
    """Plate's seconds less the interpreter's, over every test of the function that either ran."""
    plate = row["plate_s"] + row.get("plate_only_s", 0.0)
    return plate - row["interpreter_s"] - row.get("interpreter_only_s", 0.0)


def _by_function_lines(by_function: dict | None) -> list[str]:
    if not by_function:
        return []
    b, po, io = by_function["both"], by_function["plate_only"], by_function["interpreter_only"]
    ratio = f"{b['plate_s'] / b['interpreter_s']:.2f}" if b["interpreter_s"] else "-"
    rows = [
        [
            f"`{r['function']}`",
            str(r["tests"]),
            f"{r['plate_s']:.1f}",
            f"{r['interpreter_s']:.1f}",
            f"{_function_gap(r):+.1f}",
            f"{r.get('plate_only_tests', 0)}: {r.get('plate_only_s', 0.0):.1f} s",
            f"{r.get('interpreter_only_tests', 0)}: {r.get('interpreter_only_s', 0.0):.1f} s",
        ]
        for r in by_function["functions"]
    ]
    return [
        f"- summed test durations over the {b['tests']} tests both ran: plate {b['plate_s']:.1f} s, interpreter "
        f"{b['interpreter_s']:.1f} s (**{ratio}x**); {po['tests']} tests only plate ran ({po['plate_s']:.1f} s of "
        f"plate's), {io['tests']} only the interpreter ({io['interpreter_s']:.1f} s of its). By test function, "
        "where plate loses the most seconds, then where it gains the most:",
        "",
        *_table(
            rows,
            [
                "test function",
                "both ran",
                "plate s",
                "interpreter s",
                "plate - interpreter s (all run)",
                "plate only",
                "interpreter only",
            ],
        ),
    ]


def _baseline_lines(report: dict) -> list[str]:
    b = report.get("baseline")
    if not b:
        return []
    fare = ", ".join(f"{n} {k}" for k, n in sorted(b["here"].items(), key=lambda kv: -kv[1]))
    lines = [
        "## Against the baseline",
        "",
        f"`{b['path']}` passes {b['baseline_passed']} of the tests this run has; here: {fare or 'none ran'}.",
    ]
    if b["baseline_passed_not_run"]:
        lines.append(
            f"{b['baseline_passed_not_run']} more it passes, in these files, did not run here "
            "(deselected, or not in this tree)."
        )
    if b["not_passing_here"]:
        lines += ["", "Passing there, not here:", ""]
        lines += [
            f"- `{x['test']}`: {x['outcome']}" + (f" ({x['category']} entry)" if x["category"] else "")
            for x in b["not_passing_here"][:FAILURES_SHOWN]
        ]
        if len(b["not_passing_here"]) > FAILURES_SHOWN:
            lines.append(f"- ... and {len(b['not_passing_here']) - FAILURES_SHOWN} more (see the .json file)")
    return [*lines, ""]


def tutorials_line(report: dict) -> str:
    """How many tutorials are correct: every check of the file ran and passed (upstream's own skips aside)."""
    bad = ("failed", "errors", "xfailed", "xpassed")
    files = report["files"]
    correct = [f for f, c in files.items() if c["passed"] and not any(c[o] for o in bad)]
    wrong = sorted(set(files) - set(correct))
    return f"- tutorials correct: **{len(correct)}/{len(files)}**" + (f" (not: {', '.join(wrong)})" if wrong else "")


def _applicable_lines(t: dict) -> list[str]:
    if not t.get("hardware_gated"):
        return _runnable_lines(t)
    not_in_pin = f" - {t['not_in_pin']} not-in-pin" if t.get("not_in_pin") else ""  # the rate leaves them out
    return [
        f"- pass rate over applicable tests: **{_pct(t['applicable_rate'])}** = {t['passed'] + t['xpassed']} passed / "
        f"({t['total']} total - {t['by_design']} by-design{not_in_pin} - {t['hardware_gated']} upstream skips "
        'that need a particular GPU, listed under "Upstream skips gated on hardware")',
        *_runnable_lines(t),
    ]


def _runnable_lines(t: dict) -> list[str]:
    if not t.get("every_device"):
        return []
    return [
        f"- pass rate over tests some device runs: **{_pct(t['runnable_rate'])}** (also leaving out "
        f"{t['every_device']} upstream skips of parameter combinations every device skips, listed under "
        '"Upstream skips on every device")'
    ]


def _library_line(library: dict) -> str:
    """Which package the library's tests imported (none for a library published only as source) and whence."""
    package = f"`{library['pip']}`" if library.get("pip") else "no package (published only as source)"
    return f"- library: {package}, {library['from']}"


def render_markdown(report: dict) -> str:
    t = report["totals"]
    rev = report.get("revision", {})
    lines = [
        f"# Upstream {report['suite']} {'tests' if report.get('library') else 'suite'} on {report.get('device', '?')}",
        "",
        f"- revision: {rev.get('project', '?')} `{rev.get('ref', '?')}` ({rev.get('describe', '')})",
        *([_library_line(report["library"])] if report.get("library") else []),
        f"- plate: `{report.get('plate_commit') or 'unknown'}`",
        f"- started: {report.get('started', '?')}, wall time {report.get('wall_s', 0):.1f} s, "
        f"{report.get('jobs', '?')} jobs",
        f"- command: `{report.get('command', '')}`",
        # what a reader must know that the counts cannot say (added to an old report's JSON, never by a run)
        *(f"- **caveat**: {c}" for c in report.get("caveats", [])),
        *(
            [f"- patches applied: {', '.join(f'`{p}`' for p in report['patches_applied']) or 'none apply'}"]
            if report.get("patches_applied") is not None
            else []
        ),
        *(
            [f"- **interrupted**: {t['total']} tests finished before the run was stopped"]
            if report.get("interrupted")
            else []
        ),
        f"- pass rate: **{_pct(t['pass_rate'])}** = {t['passed'] + t['xpassed']} passed / "
        f"({t['total']} total - {t['by_design']} by-design){_not_in_pin(t)}",
        *_applicable_lines(t),
        f"- by-design share: {_pct(t['by_design_share'])} ({t['by_design']} of {t['total']})",
        *([tutorials_line(report)] if report["suite"].endswith("-tutorials") else []),
        f"- passed with host fallbacks: {t[PASSED_WITH_FALLBACK]} ("
        + (
            "an aten op ran on the host for a device tensor during the test"
            if report.get("library")
            else "an op or frame ran on the host inside a compiled function"
        )
        + "; not counted as passed)",
        *(
            [
                f"- not in the pinned revision: {t['not_in_pin']} tests of the newer file copy this run used, which "
                f"need library code the pinned release lacks (skip list category `not-in-pin`); the pass rate "
                "counts them as not passed"
            ]
            if t.get("not_in_pin")
            else []
        ),
        "",
        *_interpreter_lines(report),
        "## Totals",
        "",
        *_table([[str(t[o]) for o in (*OUTCOMES, "total")]], [*OUTCOMES, "total"]),
        "",
        *_baseline_lines(report),
        "## Per file",
        "",
    ]
    rows = [
        [
            f"`{f}`",
            *(str(c[o]) for o in OUTCOMES),
            str(c["by_design"]),
            str(c["total"]),
            _pct(c["pass_rate"]),
            str(c.get("hardware_gated", 0)),
            _pct(c.get("applicable_rate", c["pass_rate"])),
        ]
        for f, c in report["files"].items()
    ]
    lines += _table(
        rows, ["file", *OUTCOMES, "by-design", "total", "pass rate", "hardware-gated", "applicable pass rate"]
    )
    sk = report["skiplist"]
    stale = sk["stale"]
    lines += ["", "## Skip list", "", f"`{sk['path']}`: {sk['entries']} entries {sk['by_category']}."]
    if sk["ignored_files"]:
        lines.append("Files not collected (whole-file entries): " + ", ".join(f"`{f}`" for f in sk["ignored_files"]))
    if stale.get("passing") or stale.get("missing"):
        lines += ["", "**Stale entries** (remove or fix them):", ""]
        lines += [f"- `{k}`: passes ({', '.join(v[:3])})" for k, v in stale.get("passing", {}).items()]
        lines += [f"- `{k}`: {why}" for k, why in stale.get("missing", {}).items()]
    if stale.get("not_checked"):
        lines.append(f"\n{len(stale['not_checked'])} entries not checked (their files were not in this run).")
    classes = (
        (
            "hardware_gated",
            "needs",
            "Upstream skips gated on hardware",
            "Upstream's own skips whose condition needs a GPU plate is not (`upstream/report.py` HARDWARE_GATED); "
            "the applicable pass rate leaves them out, the pass rate above keeps them.",
        ),
        (
            "every_device",
            "condition",
            "Upstream skips on every device",
            "Upstream's own skips whose condition holds whatever the device (`upstream/report.py` EVERY_DEVICE); "
            "only the rate over tests some device runs leaves them out.",
        ),
    )
    for key, column, title, intro in classes:
        if report.get(key):
            lines += ["", f"## {title}", "", intro, ""]
            lines += _table(
                [[str(g["count"]), g["reason"], g[column]] for g in report[key]], ["tests", "reason", column]
            )
    if report["skip_reasons"]:
        lines += ["", "## Upstream's own skips, by reason", ""]
        lines += _table(
            [[str(s["count"]), s["reason"] or "(none given)"] for s in report["skip_reasons"]], ["tests", "reason"]
        )
    lines += ["", f"## Slowest {len(report['slowest'])}", ""]
    lines += _table([[f"`{s['test']}`", f"{s['duration']:.2f} s"] for s in report["slowest"]], ["test", "time"])
    with_fallback = report.get("passed_with_fallback")
    if with_fallback:
        lines += ["", f"## Passed with host fallbacks ({len(with_fallback)}): what ran on the host", ""]
        lines += [
            f"- `{r['test']}`: " + ", ".join(f"{name} x{n}" for name, n in r["host_fallbacks"].items())
            for r in with_fallback
        ]
    failures = report["failures"]
    lines += ["", f"## Failures not in the skip list ({len(failures)})", ""]
    lines += [f"- `{f['test']}` ({f['outcome']}): {f['message']}" for f in failures[:FAILURES_SHOWN]]
    if len(failures) > FAILURES_SHOWN:
        lines.append(f"- ... and {len(failures) - FAILURES_SHOWN} more (see the .json and -failures.txt files)")
    return "\n".join(lines) + "\n"


def write_report(report: dict, results: dict, report_dir: Path, name: str) -> list[Path]:
    """Write `<name>.json`, `<name>.md` and `<name>-failures.txt` (full failure texts) into report_dir."""
    report_dir = Path(report_dir)
    report_dir.mkdir(parents=True, exist_ok=True)
    paths = [report_dir / f"{name}.json", report_dir / f"{name}.md", report_dir / f"{name}-failures.txt"]
    paths[0].write_text(json.dumps(report, indent=1) + "\n")
    paths[1].write_text(render_markdown(report))
    texts = [
        f"{'=' * 100}\n{r['test']} ({r['outcome']})\n{r.get('message', '')}\n"
        for r in [
            *results.get("tests", []),
            *({"outcome": "errors", **e} for e in results.get("collection_errors", [])),
        ]
        if r["outcome"] in ("failed", "errors")
    ]
    paths[2].write_text(_strip_line_ends("".join(texts)))
    return paths


def _strip_line_ends(text: str) -> str:
    """Failure texts end many lines in blanks (pytest's "E   "): the committed files keep none."""
    return "".join(line.rstrip() + "\n" for line in text.splitlines())


def summary_lines(report: dict) -> list[str]:
    """What the runner prints at the end of a run."""
    t = report["totals"]
    counts = ", ".join(f"{t[o]} {o}" for o in OUTCOMES if t[o])
    lines = [
        f"{report['suite']}: {t['total']} tests: {counts or 'nothing ran'}",
        f"pass rate {_pct(t['pass_rate'])} (passed / (total - {t['by_design']} by-design){_not_in_pin(t)}), "
        f"by-design share {_pct(t['by_design_share'])}, wall {report.get('wall_s', 0):.1f} s",
    ]
    if t.get("hardware_gated"):
        lines.append(
            f"pass rate over applicable tests {_pct(t['applicable_rate'])} (also leaving out {t['hardware_gated']} "
            "upstream skips that need a particular GPU)"
        )
    if t.get("every_device"):
        lines.append(
            f"pass rate over tests some device runs {_pct(t['runnable_rate'])} (also leaving out {t['every_device']} "
            "upstream skips every device takes)"
        )
    if report.get("interrupted"):
        lines.append(f"INTERRUPTED: only the {t['total']} tests that finished are counted")
    if report.get("interpreter"):
        i = report["interpreter"]
        lines.append(
            f"interpreter on the same selection: wall {i['wall_s']:.1f} s; plate / interpreter = {i['wall_ratio']}"
        )
    if report.get("baseline"):
        b = report["baseline"]
        lines.append(
            f"baseline ({b['path']}): {b['baseline_passed']} pass there; "
            f"{len(b['not_passing_here'])} of them do not pass here"
        )
    return lines
