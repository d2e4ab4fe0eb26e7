"""The upstream runner, skip lists, reports and patch tooling, on a tiny fake upstream tree.

CI cannot fetch Triton or PyTorch: tests/fake_upstream/ mimics their layouts with a handful of
passing, failing, skipped, xfail, parametrized and broken tests, and a skip list with stale entries.
The runner is exercised end to end (pytest in a subprocess, as on the real trees).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # `upstream/` is a repo-root package, not part of the installed wheel
    sys.path.insert(0, str(REPO))

from upstream import REPO_ROOT, UpstreamError, patches, report, runner  # noqa: E402
from upstream.progress import format_progress  # noqa: E402
from upstream.revisions import get_revision  # noqa: E402
from upstream.skiplist import find_stale, load_skiplist  # noqa: E402

FAKE = REPO / "tests" / "fake_upstream"
FAKE_SKIPLIST = FAKE / "skiplist.toml"


@pytest.fixture(autouse=True)
def _fast_pytest_subprocesses(monkeypatch):
    # the fake trees need no hypothesis: its pytest plugin alone costs seconds of import per subprocess
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:hypothesispytest")


def _materialize(src: Path, dest: Path) -> Path:
    """Copy a fake tree, dropping the `.in` suffix that hides it from the project's own pytest run."""
    shutil.copytree(src, dest)
    for f in dest.rglob("*.in"):
        f.rename(f.with_suffix(""))
    return dest


@pytest.fixture(scope="module")
def triton_tree(tmp_path_factory) -> Path:
    return _materialize(FAKE / "triton", tmp_path_factory.mktemp("fake") / "triton")


def _run(argv: list[str]) -> int:
    return runner.main(argv)


def _report(report_dir: Path, name: str = "triton") -> dict:
    return json.loads((report_dir / f"{name}.json").read_text())


def _git(cwd: Path, *args: str) -> str:
    ident = ["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    return subprocess.run(["git", *ident, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


# -- skip lists ----------------------------------------------------------------------------------
def test_skiplist_reports_every_problem_at_once(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(
        '[[skip]]\ntest = "a.py::t"\ncategory = "maybe"\nreason = ""\n'
        '[[skip]]\nglob = "a.py::t*"\ncategory = "by-design"\nreason = "r"\n'
        '[[skip]]\ntest = "a.py::u"\ncategory = "not-yet"\nreason = "r"\ncolour = "red"\n'
        '[[skip]]\ntest = "a.py::v"\ncategory = "not-yet"\nreason = "r"\n'
        '[[skip]]\ntest = "a.py::v"\ncategory = "not-yet"\nreason = "again"\n'
    )
    with pytest.raises(UpstreamError) as e:
        load_skiplist(bad)
    text = str(e.value)
    for expected in (
        "'maybe' is not one of",
        "`reason` is missing",
        "a glob needs `count`",
        "unknown key 'colour'",
        "duplicate of entry 4",
    ):
        assert expected in text


def test_skiplist_lookup_exact_file_and_glob_with_literal_brackets():
    sl = load_skiplist(FAKE_SKIPLIST)
    assert sl.lookup("unit/language/test_alpha.py::test_param[3]").category == "not-yet"
    assert sl.lookup("unit/language/test_alpha.py::test_param[2]") is None
    assert sl.lookup("unit/language/test_beta.py::test_cast[bfloat16]").key.endswith("[*16]")
    assert sl.lookup("unit/language/test_beta.py::test_cast[float32]") is None
    assert sl.lookup("unit/language/test_beta.py::test_cast1") is None  # `[` is not a character class
    assert sl.lookup("unit/language/test_cuda_only.py::anything").is_file


def test_find_stale_counts_globs_and_skips_files_not_in_the_run(tmp_path):
    (tmp_path / "a.py").write_text("")
    (tmp_path / "b.py").write_text("")
    path = tmp_path / "skiplist.toml"
    path.write_text(
        '[[skip]]\ntest = "a.py::x"\ncategory = "not-yet"\nreason = "r"\n'
        '[[skip]]\ntest = "a.py::gone"\ncategory = "upstream-bug"\nreason = "r"\n'
        '[[skip]]\ntest = "b.py::y"\ncategory = "not-yet"\nreason = "r"\n'
        '[[skip]]\nglob = "a.py::g*"\ncount = 3\ncategory = "by-design"\nreason = "r"\n'
    )
    collected = ["a.py::x", "a.py::g1", "a.py::g2"]
    stale = find_stale(load_skiplist(path), collected, {"a.py"}, {"a.py::x": "xpassed"}, tmp_path)
    assert stale.passing == {"a.py::x": ["a.py::x"]}
    assert set(stale.missing) == {"a.py::gone", "a.py::g*"}
    assert "glob matches 2 tests, the entry says count = 3" in stale.missing["a.py::g*"]
    assert stale.not_checked == ["b.py::y"]  # b.py exists but was not part of this run


# -- progress and reports ------------------------------------------------------------------------
def test_format_progress_shows_counts_and_time_left():
    line = format_progress(Counter(passed=40, failed=2, skipped=8), total=100, elapsed=70.0, running=50.0)
    assert " 50/100  50%" in line and "pass 40 fail 2 skip 8" in line
    assert "1m10s, ~0m50s left" in line
    assert line.startswith("[" + "#" * 12 + "." * 12 + "]")


def test_report_pass_rate_excludes_by_design():
    results = {
        "tests": [
            {"test": "f.py::a", "outcome": "passed", "duration": 2.0},
            {"test": "f.py::b", "outcome": "failed", "duration": 1.0, "message": "x\nE   ValueError: bad\ny"},
            {
                "test": "f.py::c",
                "outcome": "skipped",
                "duration": 0.0,
                "category": "by-design",
                "message": "[by-design] r",
            },
            {"test": "g.py::d", "outcome": "xpassed", "duration": 0.5, "category": "not-yet"},
        ],
        "collection_errors": [{"test": "h.py", "message": "E   ImportError: nope"}],
    }
    rep = report.summarize(results, {"suite": "triton", "wall_s": 3.0})
    t = rep["totals"]
    assert (t["total"], t["by_design"], t["errors"]) == (5, 1, 1)
    assert t["pass_rate"] == 0.5  # (1 passed + 1 xpassed) / (5 - 1)
    assert t["by_design_share"] == 0.2
    assert rep["failures"] == [
        {"test": "f.py::b", "outcome": "failed", "message": "ValueError: bad"},
        {"test": "h.py", "outcome": "errors", "message": "ImportError: nope"},
    ]
    assert rep["slowest"][0] == {"test": "f.py::a", "duration": 2.0}
    md = report.render_markdown(rep)
    assert "pass rate: **50.0%**" in md and "| `g.py` | 0 | 0 | 0 | 0 | 0 | 1 |" in md


def test_applicable_rate_also_leaves_out_upstream_skips_gated_on_hardware():
    skip = {"outcome": "skipped", "duration": 0.0}
    results = {
        "tests": [
            {"test": "f.py::a", "outcome": "passed", "duration": 1.0},
            {"test": "f.py::b", "outcome": "failed", "duration": 1.0, "message": "E   AssertionError"},
            {"test": "f.py::c", **skip, "message": "Requires Hopper or Blackwell"},
            {"test": "f.py::d", **skip, "message": "gfx942 arch only for HIP"},
            {"test": "f.py::e", **skip, "message": "uint cannot be negative"},  # every device: stays in
            {"test": "f.py::f", **skip, "message": "small dots are supported only on HIP at the moment"},  # stays
            {"test": "f.py::g", **skip, "category": "by-design", "message": "[by-design] Requires CUDA"},
            {"test": "f.py::h", **skip, "message": "requires cuda and triton"},  # torch's requires_cuda_and_triton
            {"test": "f.py::i", **skip, "message": "requires gpu and triton"},  # CUDA or XPU: a Triton device runs it
        ],
    }
    rep = report.summarize(results, {"suite": "triton"})
    t = rep["totals"]
    assert t["pass_rate"] == round(1 / 8, 4)  # the conservative rate keeps upstream's own skips
    assert (t["hardware_gated"], t["applicable_rate"]) == (3, 0.2)  # 1 / (9 - 1 by-design - 3 gated)
    assert rep["hardware_gated"] == [
        {"reason": "Requires Hopper or Blackwell", "count": 1, "needs": "NVIDIA sm90 or sm100"},
        {"reason": "gfx942 arch only for HIP", "count": 1, "needs": "AMD HIP"},
        {"reason": "requires cuda and triton", "count": 1, "needs": "CUDA"},
    ]
    md = report.render_markdown(rep)
    assert "pass rate: **12.5%**" in md and "pass rate over applicable tests: **20.0%**" in md
    assert "| 1 | gfx942 arch only for HIP | AMD HIP |" in md


def test_rate_over_tests_some_device_runs_leaves_out_skips_every_device_takes():
    skip = {"outcome": "skipped", "duration": 0.0}
    results = {
        "tests": [
            {"test": "f.py::a", "outcome": "passed", "duration": 1.0},
            {"test": "f.py::b", "outcome": "failed", "duration": 1.0, "message": "E   AssertionError"},
            {"test": "f.py::c", **skip, "message": "Requires Hopper or Blackwell"},
            {"test": "f.py::e", **skip, "message": "uint cannot be negative"},
            {"test": "f.py::f", **skip, "message": "small dots are supported only on HIP at the moment"},  # HIP runs it
            {"test": "f.py::g", **skip, "category": "by-design", "message": "[by-design] uint cannot be negative"},
        ],
    }
    rep = report.summarize(results, {"suite": "triton"})
    t = rep["totals"]
    assert (t["applicable_rate"], t["every_device"]) == (0.25, 1)  # 1 / (6 - 1 by-design - 1 gated)
    assert t["runnable_rate"] == round(1 / 3, 4)  # ... - 1 every device: the HIP-run skip stays in
    assert rep["every_device"] == [
        {
            "reason": "uint cannot be negative",
            "count": 1,
            "condition": report.every_device_skip("uint cannot be negative"),
        }
    ]
    md = report.render_markdown(rep)
    assert "pass rate over tests some device runs: **33.3%**" in md and "## Upstream skips on every device" in md


def test_applicable_rate_line_names_the_not_in_pin_tests_it_leaves_out():
    skip = {"outcome": "skipped", "duration": 0.0}
    results = {
        "tests": [
            {"test": "f.py::a", "outcome": "passed", "duration": 1.0},
            {"test": "f.py::c", **skip, "message": "Requires Hopper or Blackwell"},
            {"test": "f.py::n", **skip, "category": "not-in-pin", "message": "[not-in-pin] newer torch"},
        ],
    }
    md = report.render_markdown(report.summarize(results, {"suite": "triton"}))
    assert "applicable tests: **100.0%** = 1 passed / (3 total - 0 by-design - 1 not-in-pin - 1 upstream skips" in md


def test_not_in_pin_entries_count_as_not_passed_in_the_headline_and_the_other_rate_is_beside_it(tmp_path):
    results = {
        "tests": [
            {"test": "f.py::a", "outcome": "passed", "duration": 1.0},
            {"test": "f.py::b", "outcome": "failed", "duration": 1.0, "message": "E   AssertionError"},
            *(
                {"test": f"f.py::new{i}", "outcome": "skipped", "duration": 0.0, "category": "not-in-pin"}
                for i in range(2)
            ),
        ],
    }
    t = report.summarize(results, {"suite": "inductor"})["totals"]
    assert (t["total"], t["not_in_pin"], t["by_design"], t["pass_rate"]) == (4, 2, 0, 0.25)  # 1 / 4
    assert t["pass_rate_in_pin"] == 0.5  # 1 / (4 - 2)
    md = report.render_markdown(report.summarize(results, {"suite": "inductor"}))
    assert "pass rate: **25.0%** = 1 passed / (4 total - 0 by-design); without the 2 not-in-pin tests: 50.0%" in md
    (tmp_path / "s.toml").write_text('[[skip]]\ntest = "f.py::new0"\ncategory = "not-in-pin"\nreason = "r"\n')
    entry = load_skiplist(tmp_path / "s.toml").lookup("f.py::new0")
    assert entry.category == "not-in-pin" and not entry.is_known_failure  # skipped, not run as an xfail


def test_caveats_of_an_old_report_show_in_its_header():
    results = {"tests": [{"test": "f.py::a", "outcome": "passed", "duration": 1.0}]}
    rep = report.summarize(results, {"suite": "inductor", "command": "python -m upstream.runner inductor"})
    assert "caveat" not in report.render_markdown(rep)
    rep["caveats"] = ["measured with fallbacks on"]
    header = report.render_markdown(rep).split("## Totals")[0]
    assert "- **caveat**: measured with fallbacks on" in header


# -- the runner, end to end on the fake Triton tree ----------------------------------------------
def test_runner_on_fake_tree(triton_tree, tmp_path, capfd):
    argv = ["triton", "--src", str(triton_tree), "--device", "fakedev", "--skiplist", str(FAKE_SKIPLIST)]
    rc = _run([*argv, "--report-dir", str(tmp_path), "--jobs", "0"])
    out, err = capfd.readouterr()
    assert rc == runner.EXIT_STALE
    rep = _report(tmp_path)
    t = rep["totals"]
    assert (t["passed"], t["failed"], t["errors"], t["skipped"], t["xfailed"], t["xpassed"]) == (6, 1, 1, 4, 4, 1)
    assert (t["total"], t["by_design"], t["pass_rate"]) == (17, 3, 0.5)
    assert rep["files"]["unit/runtime/test_gamma.py"]["by_design"] == 2
    assert "unit/language/test_cuda_only.py" not in rep["files"]  # a whole-file entry is never collected
    assert rep["skiplist"]["ignored_files"] == ["unit/language/test_cuda_only.py"]
    stale = rep["skiplist"]["stale"]
    assert list(stale["passing"]) == ["unit/language/test_alpha.py::test_fixed_now"]
    assert set(stale["missing"]) == {
        "unit/language/test_alpha.py::test_removed",
        "unit/language/test_deleted.py",
        "unit/runtime/test_gamma.py::test_launch_*",
    }
    assert [f["test"] for f in rep["failures"]] == [
        "unit/language/test_alpha.py::test_fails",
        "unit/language/test_broken.py",
    ]
    assert "16/16 100%" in err  # the progress line
    assert "STALE skip-list entries (4)" in out and "test_fixed_now: listed as failing but passes" in out
    md = (tmp_path / "triton.md").read_text()
    assert "483327f0336aac7feb02a0eed45c2a6e2207ca00" in md and "--device fakedev" in md
    failures = (tmp_path / "triton-failures.txt").read_text()
    assert "arithmetic is broken" in failures
    assert all(line == line.rstrip() for line in failures.splitlines())  # committed as is: no trailing blanks


ABSOLUTE_PATH = re.compile(r"(?:^|[\s\"'`(=,:\[])(/(?:[\w.+-]+/)+[\w.+-]*)", re.M)


def test_reports_name_no_folder_of_the_machine(triton_tree, tmp_path):
    baseline = tmp_path / "baseline.tsv"
    baseline.write_text("passed\tunit/language/test_alpha.py::test_fails\n")
    argv = ["triton", "--src", str(triton_tree), "--device", "fakedev", "--skiplist", str(FAKE_SKIPLIST)]
    _run([*argv, "--report-dir", str(tmp_path / "out"), "--jobs", "0", "--baseline", str(baseline)])
    files = sorted((tmp_path / "out").iterdir())
    assert [f.name for f in files] == ["triton-failures.txt", "triton.json", "triton.md"]
    for f in files:
        text = f.read_text()
        for folder in (str(tmp_path), str(triton_tree), str(REPO), sys.executable):
            assert folder not in text, f"{f.name} names {folder}"
        assert not ABSOLUTE_PATH.findall(text), f"{f.name}: {ABSOLUTE_PATH.findall(text)[:5]}"
    rep = _report(tmp_path / "out")
    assert rep["skiplist"]["path"] == "tests/fake_upstream/skiplist.toml"  # relative to the repo
    assert "--src <src> " in rep["command"] and "--rootdir python/test " in rep["pytest_command"]  # to --src
    assert rep["baseline"]["path"].startswith("$TMPDIR/") and rep["baseline"]["path"].endswith("/baseline.tsv")
    assert "arithmetic is broken" in (tmp_path / "out" / "triton-failures.txt").read_text()


def test_relative_paths_rewrite_whole_paths_only():
    roots = report.path_roots(Path("/data/src/triton"), Path("/home/u/plate"))
    data = {
        "a": ["/data/src/triton/python/test x", "/data/src/triton-old/y", "--src /data/src/triton -k"],
        "b": 'File "/home/u/plate/upstream/plugin.py", line 3; repo /home/u/plate;',
        "c": 7,
    }
    assert report.relative_paths(data, roots) == {
        "a": ["python/test x", "/data/src/triton-old/y", "--src <src> -k"],
        "b": 'File "upstream/plugin.py", line 3; repo .;',
        "c": 7,
    }


def test_timeout_is_rethrown_without_the_interrupted_frames():
    from upstream.plugin import TestTimeout, rethrown_timeout

    def hangs():
        raise TestTimeout("t.py::test_x: call ran past --timeout 1 s")

    try:
        hangs()
    except TestTimeout as exc:
        fresh = rethrown_timeout(exc)
    assert fresh.__traceback__ is None  # pytest formats only frames with line numbers from here on
    text = str(fresh)
    assert text.startswith("t.py::test_x: call ran past --timeout 1 s")
    assert text.rstrip().endswith("in hangs")  # innermost frame last


def test_each_test_starts_a_new_clock_epoch_where_the_simulator_runs(monkeypatch):
    import importlib
    import types

    from upstream import plugin

    resets = []
    monkeypatch.delitem(sys.modules, plugin.SIM_DEVICE, raising=False)
    run = types.SimpleNamespace(imports=None)  # no freezer: the collector is left alone here
    plugin.UpstreamRun.pytest_runtest_teardown(run, item=None)  # no simulator loaded: nothing to reset
    assert resets == []
    fake = types.SimpleNamespace(reset_clocks=lambda: resets.append(1))
    monkeypatch.setitem(sys.modules, plugin.SIM_DEVICE, fake)
    plugin.UpstreamRun.pytest_runtest_teardown(run, item=None)
    assert resets == [1]
    monkeypatch.undo()
    assert callable(importlib.import_module(plugin.SIM_DEVICE).reset_clocks)  # the name the plugin looks up


def test_after_a_test_that_imported_modules_the_cycles_are_collected_and_the_rest_frozen(monkeypatch):
    import gc
    import types
    import weakref

    from upstream import plugin

    class Node:
        pass

    was_on = gc.isenabled()
    try:
        gc.unfreeze()
        gc.enable()
        freezer = plugin.ImportFreezer()
        run = types.SimpleNamespace(imports=freezer)
        assert not freezer.after_test() and gc.get_freeze_count() == 0  # nothing imported: nothing done
        dead, kept = Node(), Node()
        dead.me = dead  # a cycle nothing else holds
        gone = weakref.ref(dead)
        del dead
        monkeypatch.setitem(sys.modules, "plate_test_imported_module", types.ModuleType("plate_test_imported_module"))
        plugin.UpstreamRun.pytest_runtest_teardown(run, item=None)  # the hook asks the freezer
        assert gone() is None  # collected before the freeze, not kept for good
        assert gc.get_freeze_count() > 0
        assert all(o is not kept for o in gc.get_objects())  # alive at the freeze: out of the collector's view
        frozen = gc.get_freeze_count()
        # no new import since: nothing frozen (the count may fall: a frozen object whose last reference goes is freed)
        assert not freezer.after_test() and gc.get_freeze_count() <= frozen
        monkeypatch.setitem(sys.modules, "plate_test_imported_module_2", types.ModuleType("m2"))
        gc.disable()  # a process whose collector is off is left alone
        assert not freezer.after_test() and gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()
        if was_on:
            gc.enable()


def test_runner_under_xdist_with_timeout_and_selection(triton_tree, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_SLEEP", "20")
    argv = ["triton", "--src", str(triton_tree), "--device", "fakedev", "--skiplist", str(FAKE_SKIPLIST)]
    rc = _run([*argv, "--report-dir", str(tmp_path), "-j", "2", "--timeout", "0.5", "-k", "test_sleeps or test_passes"])
    rep = _report(tmp_path)
    assert rc == runner.EXIT_STALE  # the removed test and file are still found with -k
    assert rep["totals"]["passed"] == 1 and rep["totals"]["failed"] == 1
    assert rep["failures"][0]["test"].endswith("test_sleeps")
    assert "ran past --timeout 0.5 s" in rep["failures"][0]["message"]
    assert rep["skiplist"]["stale"]["passing"] == {}  # test_fixed_now was not selected
    # entries of deselected tests still match: staleness looks at the collection before -k
    assert set(rep["skiplist"]["stale"]["missing"]) == {
        "unit/language/test_alpha.py::test_removed",
        "unit/language/test_deleted.py",
        "unit/runtime/test_gamma.py::test_launch_*",
    }


@pytest.mark.parametrize("jobs", ["0", "2"])
def test_a_stopped_run_reports_the_tests_that_finished(triton_tree, tmp_path, jobs):
    pid_file = tmp_path / "runner.pid"
    env = {**os.environ, "FAKE_SLEEP": "60", "FAKE_TERMINATE_RUNNER": str(pid_file), "PYTHONPATH": str(REPO)}
    argv = ["triton", "--src", str(triton_tree), "--device", "fakedev", "--skiplist", str(FAKE_SKIPLIST)]
    argv += ["--report-dir", str(tmp_path), "-j", jobs, "--files", "unit/language/test_alpha.py"]
    # test_sleeps (the file's last test) SIGTERMs the runner, then sleeps: the runner stops pytest, which still
    # writes the outcomes of the tests that finished
    cmd = [sys.executable, "-m", "upstream.runner", *argv]
    proc = subprocess.Popen(cmd, env=env, cwd=REPO, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    pid_file.write_text(str(proc.pid))
    out, _ = proc.communicate(timeout=50)
    assert proc.returncode == runner.EXIT_INTERRUPTED, out
    rep = _report(tmp_path)
    assert rep["interrupted"] and "INTERRUPTED" in out and "**interrupted**" in (tmp_path / "triton.md").read_text()
    assert 0 < rep["totals"]["total"] < 11 and "unit/language/test_alpha.py::test_sleeps" not in str(rep["slowest"])
    if jobs == "0":  # one process runs the file in order: every test before test_sleeps finished
        assert rep["totals"]["total"] == 10 and rep["totals"]["passed"] == 4


def test_check_stale_runs_only_listed_known_failures(triton_tree, tmp_path):
    argv = ["triton", "--src", str(triton_tree), "--device", "fakedev", "--skiplist", str(FAKE_SKIPLIST)]
    rc = _run([*argv, "--report-dir", str(tmp_path), "-j", "0", "--check-stale"])
    rep = _report(tmp_path)
    assert rc == runner.EXIT_STALE
    assert rep["totals"]["total"] == 4 + 1  # param[3], cast[float16], cast[bfloat16], fixed_now; + test_broken.py
    assert (rep["totals"]["xfailed"], rep["totals"]["xpassed"]) == (3, 1)


def test_skip_known_skips_them_and_cannot_see_passes(triton_tree, tmp_path):
    argv = ["triton", "--src", str(triton_tree), "--device", "fakedev", "--skiplist", str(FAKE_SKIPLIST)]
    _run([*argv, "--report-dir", str(tmp_path), "-j", "0", "--skip-known", "--files", "unit/language/test_alpha.py"])
    rep = _report(tmp_path)
    assert rep["totals"]["xfailed"] == 1  # only upstream's own xfail
    assert rep["skiplist"]["stale"]["passing"] == {}
    assert "unit/runtime/test_gamma.py::test_launch_*" in rep["skiplist"]["stale"]["not_checked"]


def test_bad_skiplist_or_tree_fails_before_pytest(triton_tree, tmp_path, capfd):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[skip]]\ntest = "x.py::t"\ncategory = "later"\nreason = "r"\n')
    assert _run(["triton", "--src", str(triton_tree), "--skiplist", str(bad)]) == runner.EXIT_USAGE
    assert _run(["triton", "--src", str(tmp_path / "nowhere")]) == runner.EXIT_USAGE
    err = capfd.readouterr().err
    assert "category 'later' is not one of" in err
    assert "not a triton checkout" in err and "--fetch" in err


def test_fetch_clones_the_pinned_commit_from_a_mirror(tmp_path, capfd):
    mirror = _materialize(FAKE / "triton", tmp_path / "mirror")
    _git(mirror, "init", "-q")
    _git(mirror, "add", "-A")
    _git(mirror, "commit", "-q", "-m", "fake triton")
    commit = _git(mirror, "rev-parse", "HEAD").strip()
    revisions = (REPO / "upstream" / "revisions.toml").read_text().replace(get_revision("triton").ref, commit)
    (tmp_path / "revisions.toml").write_text(revisions)
    common = ["triton", "--revisions", str(tmp_path / "revisions.toml"), "--fetch", "--report-dir", str(tmp_path)]
    common += ["--skiplist", str(FAKE_SKIPLIST)]
    rc = _run([*common, "--src", str(tmp_path / "clone"), "--fetch-url", str(mirror), "--device", "fakedev", "-j", "0"])
    assert rc == runner.EXIT_STALE and _report(tmp_path)["totals"]["total"] == 17
    assert _run([*common, "--src", str(tmp_path / "clone2"), "--fetch-url", str(tmp_path / "no-such-repo")]) == 2
    assert "no network here?" in capfd.readouterr().err
    assert not (tmp_path / "clone2").exists()  # a failed fetch leaves nothing behind


# -- the Inductor plugin --------------------------------------------------------------------------
def test_inductor_plugin_makes_the_device_the_gpu(tmp_path, capfd):
    tree = _materialize(FAKE / "inductor", tmp_path / "inductor")
    revisions = (REPO / "upstream" / "revisions.toml").read_text()
    (tmp_path / "rev.toml").write_text(revisions.replace('requires = ["expecttest"]', "requires = []"))
    (tmp_path / "missing.toml").write_text(
        revisions.replace('requires = ["expecttest"]', 'requires = ["no_such_mod_x"]')
    )
    (tmp_path / "empty.toml").write_text("# the real list names tests the fake tree does not have\n")
    argv = ["inductor", "--src", str(tree), "--device", "fakedev", "--report-dir", str(tmp_path), "-j", "0"]
    argv += ["--skiplist", str(tmp_path / "empty.toml")]
    extra = ["--device-setup", "fake_device_setup", "--", "--inductor-utils-module", "fake_inductor_utils"]
    assert _run([*argv, "--revisions", str(tmp_path / "rev.toml"), *extra]) == runner.EXIT_OK
    rep = _report(tmp_path, "inductor")
    assert rep["totals"]["passed"] == 2 and rep["totals"]["total"] == 2  # GPUTests only: RUN_CPU is off
    assert _run([*argv, "--revisions", str(tmp_path / "missing.toml")]) == runner.EXIT_USAGE
    assert "pip install no_such_mod_x" in capfd.readouterr().err


def test_inductor_plugin_runs_the_tests_that_require_a_gpu_and_triton(monkeypatch):
    """triton_utils.requires_gpu_and_triton was computed from the cuda/xpu checks at import: the plugin makes the
    device's tests under it run (upstream skipped 16 tests of test_torchinductor.py on plate with it)."""
    import importlib
    import unittest

    from upstream import inductor_plugin

    utils = importlib.import_module(inductor_plugin.INDUCTOR_UTILS)
    triton_utils = importlib.import_module(inductor_plugin.TRITON_UTILS)
    for attr in inductor_plugin.overrides("fakedev"):  # restored after the test
        monkeypatch.setattr(utils, attr, getattr(utils, attr))
    monkeypatch.setattr(triton_utils, "requires_gpu_and_triton", triton_utils.requires_gpu_and_triton)
    options = {
        "--inductor-device": "fakedev",
        "--inductor-device-setup": "",
        "--inductor-utils-module": inductor_plugin.INDUCTOR_UTILS,
    }

    class Config:
        def getoption(self, name):
            return options[name]

    inductor_plugin.pytest_configure(Config())

    @triton_utils.requires_gpu_and_triton
    class Case(unittest.TestCase):
        def test_it(self):
            pass

    assert not getattr(Case, "__unittest_skip__", False)
    assert utils.GPU_TYPE == "fakedev"


@pytest.mark.parametrize("fallback", [False, True])
def test_inductor_run_counts_passes_with_host_fallbacks_apart(tmp_path, monkeypatch, fallback):
    """The runner turns the device's fallback_on_compile_error off unless asked; a test that ran anything on the
    host is passed-with-fallback, not passed, in the report."""
    tree = _materialize(FAKE / "inductor", tmp_path / "inductor")
    revisions = (REPO / "upstream" / "revisions.toml").read_text()
    (tmp_path / "rev.toml").write_text(revisions.replace('requires = ["expecttest"]', "requires = []"))
    (tmp_path / "empty.toml").write_text("# the real list names tests the fake tree does not have\n")
    monkeypatch.setenv("FAKE_FALLBACK_EXPECTED", str(fallback))
    argv = ["inductor", "--src", str(tree), "--device", "fakedev", "--report-dir", str(tmp_path), "-j", "0"]
    argv += ["--skiplist", str(tmp_path / "empty.toml"), "--revisions", str(tmp_path / "rev.toml")]
    argv += ["--files", "inductor/test_host_fallbacks.py", "--device-setup", "fake_device_setup"]
    argv += ["--fallback-on-compile-error"] if fallback else []
    assert _run([*argv, "--", "--inductor-utils-module", "fake_inductor_utils"]) == runner.EXIT_OK
    rep = _report(tmp_path, "inductor")
    t = rep["totals"]
    assert (t["passed"], t["passed-with-fallback"], t["failed"], t["total"]) == (2, 1, 0, 3)
    assert t["pass_rate"] == round(2 / 3, 4)
    md = (tmp_path / "inductor.md").read_text()
    assert "passed with host fallbacks: 1" in md and "passed-with-fallback" in md


def test_report_counts_a_pass_with_host_fallbacks_apart():
    results = {
        "tests": [
            {"test": "f.py::a", "outcome": "passed", "duration": 1.0},
            {"test": "f.py::b", "outcome": "passed", "duration": 1.0, "host_fallbacks": {"op aten.mm": 2}},
            {"test": "f.py::c", "outcome": "xpassed", "duration": 1.0, "host_fallbacks": {"frame 0/0 (x)": 1}},
        ],
    }
    rep = report.summarize(results, {"suite": "inductor"})
    t = rep["totals"]
    assert (t["passed"], t["xpassed"], t["passed-with-fallback"], t["pass_rate"]) == (1, 0, 2, round(1 / 3, 4))
    assert rep["passed_with_fallback"] == [
        {"test": "f.py::b", "host_fallbacks": {"op aten.mm": 2}},
        {"test": "f.py::c", "host_fallbacks": {"frame 0/0 (x)": 1}},
    ]
    assert "- `f.py::b`: op aten.mm x2" in report.render_markdown(rep)
    baseline = {"path": "b.tsv", "outcomes": {"f.py::a": "passed", "f.py::b": "passed"}}
    fare = report.compare_baseline([dict(r) for r in results["tests"]], baseline)
    assert fare["here"] == {"passed": 1, "passed-with-fallback": 1}


# -- patches ---------------------------------------------------------------------------------------
FAKE_REVISIONS = """
[fakeproj]
repo = "https://example.invalid/fakeproj.git"
commit = "0000000000000000000000000000000000000000"
take = ["src", "tests"]
test_root = "tests"
library = { package = "fakelib", folder = "src" }
[fakeproj.suite]
paths = ["test_lib.py"]
"""


def _commit_patch(repo: Path, file: str, text: str, message: str) -> str:
    (repo / file).write_text(text)
    _git(repo, "commit", "-q", "-a", "-m", message)
    return _git(repo, "format-patch", "--stdout", "HEAD~1..HEAD")


@pytest.fixture
def patch_setup(tmp_path):
    repo = tmp_path / "fakeproj"
    (repo / "src").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "src" / "fakelib.py").write_text("VALUE = 1\n")
    (repo / "tests" / "conftest.py").write_text(
        "# fakelib is not installed: only the overlay of a patched copy finds it\n"
    )
    (repo / "tests" / "test_lib.py").write_text(
        "import fakelib\n\n\ndef test_value():\n    assert fakelib.VALUE == 2\n"
    )
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    body = "Problem: VALUE is 1.\n\nChange: make it 2.\n\nTest: tests/test_lib.py::test_value\nTest-Env: FAKE=1"
    good = _commit_patch(repo, "src/fakelib.py", "VALUE = 2\n", "Set VALUE to 2\n\n" + body)
    _commit_patch(repo, "src/fakelib.py", "VALUE = 3\n", "an unexported step")
    stale = _commit_patch(repo, "src/fakelib.py", "VALUE = 4\n", "Move VALUE from 3 to 4\n\nTest: tests/test_lib.py")
    _git(repo, "reset", "-q", "--hard", "HEAD~3")
    untested = _commit_patch(repo, "tests/conftest.py", "# nothing\n", "A long subject line " + "x" * 80)
    _git(repo, "reset", "-q", "--hard", "HEAD~1")
    (repo / "src" / "fakelib.py").write_text("VALUE = 2\n")  # a change that brings its own new test file
    (repo / "tests" / "test_new.py").write_text("import fakelib\n\n\ndef test_new():\n    assert fakelib.VALUE == 2\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "Set VALUE to 2, with a test\n\nTest: tests/test_new.py")
    with_test = _git(repo, "format-patch", "--stdout", "HEAD~1..HEAD")
    _git(repo, "reset", "-q", "--hard", "HEAD~1")
    pdir = tmp_path / "patches" / "fakeproj"
    pdir.mkdir(parents=True)
    patch_texts = (("good.patch", good), ("stale.patch", stale), ("untested.patch", untested))
    for name, text in (*patch_texts, ("with-test.patch", with_test)):
        (pdir / name).write_text(text)
    (tmp_path / "rev.toml").write_text(FAKE_REVISIONS)
    common = ["--patches-dir", str(tmp_path / "patches"), "--revisions", str(tmp_path / "rev.toml")]
    return repo, common + ["--report-dir", str(tmp_path / "reports")]


def test_parse_patch_reads_subject_trailers_and_files(patch_setup, tmp_path):
    found = {p.path.name: p for p in patches.find_patches(tmp_path / "patches")}
    good = found["good.patch"]
    assert good.subject == "Set VALUE to 2"
    assert good.tests == ("tests/test_lib.py::test_value",) and good.test_env == {"FAKE": "1"}
    assert good.files == ("src/fakelib.py",)
    assert found["untested.patch"].subject.endswith("x" * 80)  # a folded Subject: header is joined back
    assert found["untested.patch"].tests == ()


def test_patches_check_and_list(patch_setup, capsys):
    repo, common = patch_setup
    assert patches.main(["list", *common]) == 0
    listed = capsys.readouterr().out
    assert "fakeproj/good.patch" in listed and "untested" in listed  # no tree given: nothing checked
    rc = patches.main(["check", *common, "--src", f"fakeproj={repo}", "--before"])
    out = capsys.readouterr().out
    assert rc == 1  # stale.patch does not apply
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("fakeproj/")}
    assert "applies" in rows["fakeproj/good.patch"] and "pass 1/1 (before: error)" in rows["fakeproj/good.patch"]
    assert " fails " in rows["fakeproj/stale.patch"]
    assert "names no Test: trailer" in rows["fakeproj/untested.patch"]
    # before = the unpatched tree plus the test file the patch adds: the file is there (it cannot import the
    # fake library unpatched here), instead of "the named tests collected nothing"
    state = json.loads((Path(common[-1]) / "patches.json").read_text())["fakeproj/with-test.patch"]
    assert state["tests"]["status"] == "pass" and "does not import" in state["before"]["detail"]
    assert patches.main(["list", *common, "--src", f"fakeproj={repo}"]) == 0
    listed = capsys.readouterr().out
    good_row = next(line for line in listed.splitlines() if line.startswith("fakeproj/good.patch"))
    assert "applies" in good_row and "pass 1/1 (before: error)" in good_row  # the last check is remembered


def test_a_patch_checks_on_top_of_the_patch_it_depends_on(patch_setup, tmp_path, capsys):
    """Depends-On: the named patch is applied first in both trees, so a patch whose context and tests need
    another one's change (preshuffle-mxfp-test-device on matmul-pipeliner-importable-without-cuda) is checked."""
    repo, common = patch_setup
    (repo / "src" / "fakelib.py").write_text("VALUE = 2\n")  # good.patch's change
    _git(repo, "commit", "-q", "-a", "-m", "as good.patch")
    (repo / "src" / "fakelib.py").write_text("VALUE = 2\nEXTRA = VALUE * 3\n")
    (repo / "tests" / "test_extra.py").write_text(
        "import fakelib\n\n\ndef test_extra():\n    assert fakelib.EXTRA == 6\n"
    )
    _git(repo, "add", "-A")
    message = "Add EXTRA\n\nTest: tests/test_extra.py\nDepends-On: fakeproj/good.patch"
    _git(repo, "commit", "-q", "-m", message)
    (tmp_path / "patches" / "fakeproj" / "extra.patch").write_text(
        _git(repo, "format-patch", "--stdout", "HEAD~1..HEAD")
    )
    _git(repo, "reset", "-q", "--hard", "HEAD~2")
    extra = next(p for p in patches.find_patches(tmp_path / "patches") if p.path.name == "extra.patch")
    assert extra.depends_on == ("fakeproj/good.patch",)
    rc = patches.main(["check", *common, "--src", f"fakeproj={repo}", "--before", "extra"])
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("fakeproj/extra.patch"))
    assert rc == 0 and "applies" in row and "pass 1/1 (before: fail)" in row  # before: VALUE = 2, no EXTRA
    assert "fakeproj/good.patch applied first" in row


def test_runner_compares_with_a_baseline_and_the_interpreter(triton_tree, tmp_path):
    baseline = tmp_path / "baseline.tsv"
    alpha = "unit/language/test_alpha.py::"
    baseline.write_text(
        "outcome\ttest id\n"
        + "".join(
            f"{o}\t{alpha}{t}\n"
            for o, t in [
                ("passed", "test_passes"),
                ("passed", "test_fails"),
                ("passed", "test_param[3]"),
                ("passed", "test_param[1]"),
                ("skipped", "test_param[2]"),
                ("passed", "test_sleeps"),  # deselected by -k
                ("passed", "test_not_in_the_tree"),
            ]
        )
    )
    argv = ["triton", "--src", str(triton_tree), "--device", "fakedev", "--skiplist", str(FAKE_SKIPLIST)]
    argv += ["--report-dir", str(tmp_path), "--jobs", "0", "--baseline", str(baseline), "--vs-interpreter"]
    _run([*argv, "-k", "test_passes or test_param or test_fails"])
    rep = _report(tmp_path)
    b = rep["baseline"]
    assert b["baseline_passed"] == 4 and b["baseline_passed_not_run"] == 2  # test_sleeps, test_not_in_the_tree
    assert b["here"] == {"passed": 2, "failed": 1, "xfailed (not-yet)": 1}
    assert [x["test"] for x in b["not_passing_here"]] == [f"{alpha}test_fails", f"{alpha}test_param[3]"]
    i = rep["interpreter"]
    assert "TRITON_INTERPRET" not in i["pytest_command"] and "--device cpu" in i["pytest_command"]
    assert i["totals"]["failed"] == 2  # test_passes wants --device fakedev, and test_fails
    assert i["wall_ratio"] == pytest.approx(rep["wall_s"] / i["wall_s"], abs=0.1)  # both walls are rounded
    by = i["by_function"]  # the five tests -k selects ran in both halves (test_param[3]: the not-yet xfail)
    assert by["both"]["tests"] == 5 and by["plate_only"] == {"tests": 0, "plate_s": 0.0}
    assert by["interpreter_only"] == {"tests": 0, "interpreter_s": 0.0}
    rows = {r["function"]: r for r in by["functions"]}
    assert rows[f"{alpha}test_param"]["tests"] == 3 and rows[f"{alpha}test_passes"]["tests"] == 1
    md = (tmp_path / "triton.md").read_text()
    assert "plate / interpreter wall time" in md and "Passing there, not here:" in md
    assert f"| `{alpha}test_param` | 3 |" in md and "over the 5 tests both ran: plate" in md
    assert runner.main(["inductor", "--vs-interpreter", "--src", str(tmp_path)]) == runner.EXIT_USAGE


def test_the_interpreter_comparison_by_test_function():
    def results(**tests):
        return {
            "tests": [
                {"test": f"t.py::{k.replace('_', '[', 1)}]", "outcome": o, "duration": d} for k, (o, d) in tests.items()
            ]
        }

    plate = results(f_1=("passed", 2.0), f_2=("passed", 3.0), g_1=("passed", 1.0), h_1=("skipped", 0.0))
    interpreter = results(f_1=("passed", 0.5), f_2=("skipped", 0.0), g_1=("failed", 4.0), h_1=("passed", 0.25))
    by = report.compare_by_function(plate, interpreter)
    assert by["both"] == {"tests": 2, "plate_s": 3.0, "interpreter_s": 4.5}
    assert by["plate_only"] == {"tests": 1, "plate_s": 3.0}
    assert by["interpreter_only"] == {"tests": 1, "interpreter_s": 0.25}
    f, h, g = by["functions"]  # by plate's seconds less the interpreter's: f +4.5 s, h -0.25 s, g -3.0 s
    assert (f["function"], f["tests"], f["plate_s"], f["interpreter_s"], f["plate_only_tests"]) == (
        "t.py::f",
        1,
        2.0,
        0.5,
        1,
    )
    assert h["interpreter_only_tests"] == 1 and h["tests"] == 0
    assert [r["function"] for r in report.compare_by_function(plate, interpreter, shown=1)["functions"]] == [
        "t.py::f",
        "t.py::g",
        "t.py::h",  # beyond the one shown: where plate gains, most first
    ]


def test_the_default_triton_baseline_ships_with_the_repo():
    """The interpreter baseline lives in the repo (a user's clone has nothing beside it) and reads as outcomes."""
    from upstream.report import read_baseline
    from upstream.runner import DEFAULT_BASELINE

    assert DEFAULT_BASELINE.is_file() and DEFAULT_BASELINE.is_relative_to(REPO_ROOT)
    outcomes = read_baseline(DEFAULT_BASELINE)["outcomes"]
    assert len(outcomes) > 8000
    assert sum(o == "passed" for o in outcomes.values()) == 6999


# -- the tutorials ----------------------------------------------------------------------------------
FAKE_TUTORIALS = [
    "01-passes.py",
    "02-assert-fails.py",
    "03-prints-cross.py",
    "06-fused-attention.py",
    "09-persistent-matmul.py",
]


def test_tutorials_run_as_scripts_with_their_checks_and_no_benchmark(triton_tree, tmp_path, capfd):
    empty = tmp_path / "none.toml"
    empty.write_text("")
    argv = ["triton", "--src", str(triton_tree), "--tutorials", "--skiplist", str(empty), "-j", "0"]
    rc = _run([*argv, "--report-dir", str(tmp_path), "--files", *FAKE_TUTORIALS])
    out, _ = capfd.readouterr()
    assert rc == runner.EXIT_FAILURES
    rep = _report(tmp_path, "triton-tutorials")
    assert rep["suite"] == "triton-tutorials" and rep["paths"] == FAKE_TUTORIALS
    failures = {f["test"]: f["message"] for f in rep["failures"]}
    assert set(failures) == {
        "02-assert-fails.py::script",  # a module-level assert
        "03-prints-cross.py::script",  # a printed ❌ verdict
        "06-fused-attention.py::test_op[3]",  # one of its pytest tests
    }
    assert "fake check: the sum is off" in failures["02-assert-fails.py::script"]
    assert "printed a failed check: ❌ fake Triton and Torch differ" in failures["03-prints-cross.py::script"]
    files = rep["files"]
    # 01 ran as __main__ with its benchmark skipped; 06 and 09 were imported, their __main__ benchmarks not run,
    # and 09's checks (the validate calls of its __main__ block) ran
    assert files["01-passes.py"]["passed"] == 1 and files["09-persistent-matmul.py"]["passed"] == 1
    assert (files["06-fused-attention.py"]["passed"], files["06-fused-attention.py"]["failed"]) == (3, 1)
    assert rep["totals"]["total"] == 8
    md = (tmp_path / "triton-tutorials.md").read_text()
    assert "tutorials correct: **2/5** (not: 02-assert-fails.py, 03-prints-cross.py, 06-fused-attention.py)" in md


def test_patched_tutorials_run_a_copy_with_the_patches_that_touch_them(triton_tree, tmp_path, monkeypatch):
    patches_dir = tmp_path / "patches"
    (patches_dir / "triton").mkdir(parents=True)
    repo = tmp_path / "repo"
    shutil.copytree(triton_tree / "python" / "tutorials", repo / "python" / "tutorials")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    fixed = repo / "python" / "tutorials" / "02-assert-fails.py"
    fixed.write_text(fixed.read_text().replace("== 7", "== 6"))
    _git(repo, "commit", "-qam", "[TUTORIALS] fix the fake sum\n\nTest: python/tutorials/02-assert-fails.py::script")
    (patches_dir / "triton" / "fix-sum.patch").write_text(_git(repo, "format-patch", "--stdout", "HEAD~1"))
    monkeypatch.setattr(runner, "PATCHES_DIR", patches_dir)
    empty = tmp_path / "none.toml"
    empty.write_text("")
    argv = ["triton", "--src", str(triton_tree), "--tutorials", "--patched", "--skiplist", str(empty), "-j", "0"]
    assert _run([*argv, "--report-dir", str(tmp_path), "--files", "01-passes.py", "02-assert-fails.py"]) == 0
    rep = _report(tmp_path, "triton-tutorials")
    assert rep["patches_applied"] == ["triton/fix-sum.patch"] and rep["totals"]["passed"] == 2
    md = (tmp_path / "triton-tutorials.md").read_text()
    assert "- patches applied: `triton/fix-sum.patch`" in md and "--src <src> --tutorials --patched" in md
    assert str(triton_tree) not in md and "plate-tutorials-" not in md
    assert "== 7" in (triton_tree / "python" / "tutorials" / "02-assert-fails.py").read_text()  # the tree is untouched


def test_patched_suite_runs_a_copy_with_the_patches_that_touch_only_its_files(triton_tree, tmp_path, monkeypatch):
    """A test file that does not collect unpatched runs with --patched; a patch of other files stays out."""
    patches_dir = tmp_path / "patches"
    (patches_dir / "triton").mkdir(parents=True)
    repo = tmp_path / "repo"
    shutil.copytree(triton_tree / "python" / "test", repo / "python" / "test")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    broken = repo / "python" / "test" / "unit" / "language" / "test_broken.py"
    broken.write_text("def test_x():\n    assert True\n")
    _git(repo, "commit", "-qam", "[TESTS] importable\n\nTest: python/test/unit/language/test_broken.py::test_x")
    (patches_dir / "triton" / "importable.patch").write_text(_git(repo, "format-patch", "--stdout", "HEAD~1"))
    beta = repo / "python" / "test" / "unit" / "language" / "test_beta.py"
    beta.write_text(beta.read_text().replace('== "float32"', "is not None"))
    _git(repo, "commit", "-qam", "[TESTS] beta\n\nTest: python/test/unit/language/test_beta.py::test_cast")
    (patches_dir / "triton" / "beta.patch").write_text(_git(repo, "format-patch", "--stdout", "HEAD~1"))
    monkeypatch.setattr(runner, "PATCHES_DIR", patches_dir)
    listed = tmp_path / "list.toml"  # the file's entry names the patch: with the patch applied it is no failure
    listed.write_text(
        '[[skip]]\ntest = "unit/language/test_broken.py"\ncategory = "upstream-bug"\nreason = "does not collect"\n'
        'patch = "triton/importable.patch"\n'
    )
    argv = ["triton", "--src", str(triton_tree), "--patched", "--skiplist", str(listed), "-j", "0"]
    assert _run([*argv, "--report-dir", str(tmp_path), "--files", "unit/language/test_broken.py"]) == 0
    rep = _report(tmp_path)
    assert rep["patches_applied"] == ["triton/importable.patch"]  # beta.patch touches a file this run leaves out
    assert rep["totals"]["passed"] == rep["totals"]["total"] == 1
    original = triton_tree / "python" / "test" / "unit" / "language" / "test_broken.py"
    assert "import a_module_that_does_not_exist" in original.read_text()  # the tree is untouched


def test_tutorials_need_a_tree_with_them(triton_tree, tmp_path, capfd):
    tree = tmp_path / "triton"
    shutil.copytree(triton_tree, tree, ignore=shutil.ignore_patterns("tutorials"))
    rc = _run(["triton", "--src", str(tree), "--tutorials", "-j", "0", "--report-dir", str(tmp_path)])
    assert rc == runner.EXIT_USAGE
    assert "has no python/tutorials/; pass --src the checkout root" in capfd.readouterr().err
    assert not list(tmp_path.glob("*.json"))


def test_plate_knobs_set_in_the_environment_are_part_of_the_command(monkeypatch):
    for name in [n for n in os.environ if n.startswith("PLATE_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PLATE_AUTOTUNE_MARGIN", "off")
    monkeypatch.setenv("OTHER_KNOB", "1")
    assert runner._plate_knobs_set() == ["PLATE_AUTOTUNE_MARGIN=off"]


def test_a_runs_caches_go_to_a_fresh_memory_folder_unless_the_home_is_kept(monkeypatch, tmp_path):
    import argparse

    memory, home = tmp_path / "shm", tmp_path / "home"
    memory.mkdir()
    home.mkdir()
    monkeypatch.setattr(runner, "MEMORY_TMP", memory)
    args = argparse.Namespace(keep_home=False, suite="triton", interpret=False)
    caches, remove = runner._cache_folder(args, home)
    assert caches == remove and caches.parent == memory and caches.name.startswith("plate-upstream-triton-caches-")
    revision = get_revision("triton")
    env = runner._environment(revision, args, home, caches)
    assert env["TRITON_CACHE_DIR"] == str(caches / ".triton" / "cache")
    assert env["TORCHINDUCTOR_CACHE_DIR"] == str(caches / "inductor-cache")
    assert env["HOME"] == str(home)
    # a kept HOME keeps its caches; no memory folder: the HOME
    assert runner._cache_folder(argparse.Namespace(keep_home=True, suite="triton"), home) == (home, None)
    monkeypatch.setattr(runner, "MEMORY_TMP", tmp_path / "absent")
    assert runner._cache_folder(args, home) == (home, None)
    assert runner._environment(revision, args, home)["TRITON_CACHE_DIR"] == str(home / ".triton" / "cache")


def test_keep_cache_puts_the_caches_in_its_folder_and_keeps_them(monkeypatch, tmp_path):
    memory, home, kept = tmp_path / "shm", tmp_path / "home", tmp_path / "kept" / "cache"
    memory.mkdir()
    home.mkdir()
    monkeypatch.setattr(runner, "MEMORY_TMP", memory)
    args = runner.build_parser().parse_args(["triton", "--keep-cache", str(kept)])
    assert args.keep_cache == kept
    caches, remove = runner._cache_folder(args, home)
    assert (caches, remove) == (kept.resolve(), None) and kept.is_dir()  # created, and nothing to remove after
    env = runner._environment(get_revision("triton"), args, home, caches)
    assert env["TRITON_CACHE_DIR"] == str(kept.resolve() / ".triton" / "cache")
    assert env["TORCHINDUCTOR_CACHE_DIR"] == str(kept.resolve() / "inductor-cache")
    assert not any(memory.iterdir())  # no fresh memory folder either
    # without it: a fresh folder each run
    args = runner.build_parser().parse_args(["triton"])
    assert args.keep_cache is None and runner._cache_folder(args, home)[0].parent == memory


def test_the_plugin_freezes_what_collection_left_and_raises_the_first_generation():
    import gc
    import types

    from upstream import plugin

    saved, was_on = gc.get_threshold(), gc.isenabled()
    try:
        gc.unfreeze()
        gc.enable()
        # a worker (or a run without xdist): off from pytest_configure to the end of collection, then on,
        # with what collection left frozen and the first generation raised
        worker = types.SimpleNamespace(collector_paused=plugin._pause_cycle_collector(), progress=None)
        assert worker.collector_paused and not gc.isenabled()
        gc.set_threshold(700, 10, 10)
        plugin.UpstreamRun.pytest_collection_finish(worker, session=None)
        assert gc.isenabled() and not worker.collector_paused
        assert gc.get_threshold() == plugin.GC_THRESHOLDS
        assert gc.get_freeze_count() > 0
        assert isinstance(worker.imports, plugin.ImportFreezer)  # the tests' imports are frozen from now on
        plugin.UpstreamRun.pytest_runtestloop(worker, session=None)  # nothing more to do there
        assert gc.isenabled() and gc.get_threshold() == plugin.GC_THRESHOLDS
        # xdist's controller collects nothing: back on when its test loop starts, thresholds as they were
        gc.unfreeze()
        gc.set_threshold(700, 10, 10)
        controller = types.SimpleNamespace(collector_paused=plugin._pause_cycle_collector(), progress=None)
        assert not gc.isenabled()
        plugin.UpstreamRun.pytest_runtestloop(controller, session=None)
        assert gc.isenabled() and gc.get_threshold() == (700, 10, 10) and gc.get_freeze_count() == 0
        # a process whose collector was off stays off
        gc.disable()
        quiet = types.SimpleNamespace(collector_paused=plugin._pause_cycle_collector(), progress=None)
        plugin.UpstreamRun.pytest_collection_finish(quiet, session=None)
        plugin.UpstreamRun.pytest_runtestloop(quiet, session=None)
        assert not gc.isenabled()
    finally:
        gc.unfreeze()
        gc.set_threshold(*saved)
        if was_on:
            gc.enable()
