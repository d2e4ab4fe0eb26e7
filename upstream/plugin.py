"""pytest plugin for upstream runs (`-p upstream.plugin`): skip lists, per-test timeout, progress, JSON results.

Loaded into the upstream suites from outside their files. It works alone and under pytest-xdist:
workers apply the skip list at collection and enforce the timeout; the controller (or the single
process) records every outcome, draws the progress line and writes the results file.
"""

from __future__ import annotations

import contextlib
import faulthandler
import gc
import json
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from . import UpstreamError
from .progress import Progress
from .skiplist import SkipList, find_stale, load_skiplist

MESSAGE_CHARS = 4000  # of each failure's text kept in the results file
HOST_FALLBACKS = "host_fallbacks"  # user property {name: count} of what a test ran on the host (inductor_plugin)


class TestTimeout(BaseException):  # noqa: N818 - BaseException: a test's `except Exception` must not swallow it
    """A test phase ran past --plate-timeout."""


def rethrown_timeout(exc: TestTimeout, frames: int = 8) -> TestTimeout:
    """``exc`` anew, without its traceback: the frames the alarm interrupted become lines of its text.
    Python 3.11 can leave ``tb_lineno`` None on the frame a signal handler's exception started in, and
    pytest's traceback formatting then fails with an INTERNALERROR that ends the whole run."""
    where, tb = [], exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        where.append(f"  {code.co_filename}:{tb.tb_lineno} in {code.co_name}")
        tb = tb.tb_next
    text = "\n".join([str(exc), "interrupted in (innermost last):", *where[-frames:]])
    return TestTimeout(text)


def pytest_addoption(parser):
    group = parser.getgroup("plate-upstream", "plate: upstream suite runs")
    group.addoption("--plate-skiplist", default=None, help="skip list TOML (upstream/skiplists/*.toml)")
    group.addoption("--plate-results", default=None, help="write every outcome here as JSON")
    group.addoption("--plate-timeout", type=float, default=0.0, help="seconds per test phase; 0 = none")
    group.addoption(
        "--plate-known",
        choices=("xfail", "skip", "only"),
        default="xfail",
        help="not-yet/upstream-bug entries: run as expected failures (a pass is stale), skip them, "
        "or run only them (stale check)",
    )
    group.addoption("--plate-progress", action="store_true", help="draw a progress line on stderr")
    group.addoption("--plate-patches-applied", default="", help="patches (comma-separated) the tests run with")


def pytest_configure(config):
    try:
        run = UpstreamRun(config)
    except UpstreamError as e:
        raise pytest.UsageError(str(e)) from e
    config.pluginmanager.register(run, "plate-upstream-run")


def _is_worker(config) -> bool:
    return hasattr(config, "workerinput")


def _outcome(report) -> str | None:
    """The outcome one phase report settles, or None when the phase says nothing new."""
    xfail = hasattr(report, "wasxfail")
    if report.when == "call":
        if report.passed:
            return "xpassed" if xfail else "passed"
        if report.skipped:
            return "xfailed" if xfail else "skipped"
        return "failed"
    if report.failed:  # setup or teardown
        return "errors"
    if report.when == "setup" and report.skipped:
        return "xfailed" if xfail else "skipped"
    return None


def _message(report) -> str:
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2]).removeprefix("Skipped: ")
    return report.longreprtext[-MESSAGE_CHARS:]


# The cycle collector of a test process (both runs, plate's and the interpreter's): a first generation of
# 10,000 allocations (Python's default 700), and everything the process holds once collection is done (torch,
# Triton, numpy, the collected items: it lives to the end) frozen out of the collector's view. Measured on
# every 80th test_core item: 2.6 s of 15 s CPU in collections with the defaults (1.9 s in 18 full ones), 1.2 s
# tuned. Objects freed are the same; cycles are found later, never missed (the tests' own gc.collect() calls
# still collect everything not frozen).
GC_THRESHOLDS = (10_000, 10, 10)


# From pytest_configure to the end of collection (``import torch`` with the device's autoload, Triton, the test
# files, 7451 items in test_core) the collector is off: with Python's defaults it ran 8 full collections there
# in every worker of both halves (0.64-0.69 s CPU each, session 29), walking a heap that only grows and is frozen
# right after. One full collection at the end frees the cycles those imports left, before the freeze keeps
# everything alive for good.
def _pause_cycle_collector() -> bool:
    """Switch the collector off until collection is done; whether it was on."""
    was_on = gc.isenabled()
    gc.disable()
    return was_on


def _tune_cycle_collector(resume: bool = True) -> None:
    """After collection: the cycles found, the rest frozen, the first generation raised, the collector back on
    (``resume``: when it was on before the pause)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    if resume:
        gc.enable()


# What a test imports lives to the end as well (a plate worker's first compile and launch import the compile path
# and the simulator, 143 modules; later tests ml_dtypes, Dynamo; the interpreter's half torch.distributed's tensor
# ops): after a test that grew sys.modules, the cycles are collected and the rest is frozen again, as after
# collection. Left in view, every full collection walked them again: at the end of a worker's share (every 2nd test
# of the selection) 399k objects were in the collector's view on plate's side, 202k with this (interpreter 156k /
# 52k). Python 3.11 runs a full collection once the objects promoted since the last one pass a quarter of its
# survivors; each freeze's collection sets that base to what is left in view, so full collections come more often
# and each is short (5-50 ms). Measured: the collector's CPU over that share -0.10 / -0.12 s on plate's side (two
# pairs, 2.10 -> 2.00 and 1.90 -> 1.78 s), +0.04 s on the interpreter's; peak RSS the same (benchmarks/results/
# speed-breakdown-after.md, gc31). A cycle that dies later among frozen objects is not collected: each freeze
# follows a full collection, so only what is alive at the end of a test is kept, as with the freeze above.
class ImportFreezer:
    """Freezes what the process holds after a test that imported modules (``after_test``)."""

    def __init__(self) -> None:
        self.modules = len(sys.modules)

    def after_test(self) -> bool:
        """Whether it froze: only when sys.modules grew, and only when the collector is on."""
        grew, self.modules = len(sys.modules) > self.modules, len(sys.modules)
        if not grew or not gc.isenabled():
            return False
        gc.collect()
        gc.freeze()
        return True


# The simulated device's clock keeps each launch's trace (up to 64 MiB: sim/clock.py) until someone reads the
# time; no upstream test reads a time another test's launches made. Each test starts a new clock epoch, as plate's
# own suite does (tests/conftest.py): the traces are dropped, not left for the collector to walk (every 10th
# test_core test: full collections 1.49 -> 0.85 s CPU) nor packed when the bound is passed. The interpreter's run
# loads the module too (torch's device autoload registers plate's device) but launches nothing there: no clock has
# anything to drop; a process without the module is left alone.
SIM_DEVICE = "triton_plate_backend.sim.device"


def _new_clock_epoch() -> None:
    sim_device = sys.modules.get(SIM_DEVICE)
    if sim_device is not None:
        sim_device.reset_clocks()


class UpstreamRun:
    def __init__(self, config):
        self.config = config
        opt = config.getoption
        skiplist = load_skiplist(Path(opt("--plate-skiplist")) if opt("--plate-skiplist") else None)
        applied = set(filter(None, (opt("--plate-patches-applied") or "").split(",")))
        # an entry whose patch this run applied is fixed here: the test runs as any other
        self.skiplist = SkipList([e for e in skiplist.entries if e.patch not in applied], skiplist.path)
        self.results_path = opt("--plate-results")
        self.timeout = opt("--plate-timeout")
        self.known = opt("--plate-known")
        self.worker = _is_worker(config)
        self.tests: dict[str, dict] = {}
        self.collect_errors: dict[str, str] = {}
        self.collected: list[str] | None = None
        self.progress = None
        if opt("--plate-progress") and not self.worker:
            self.progress = Progress(sys.stderr)
        if not self.worker and threading.current_thread() is threading.main_thread():
            # SIGINT may arrive ignored (a background job of a script) and SIGTERM would kill pytest before it
            # writes anything: both stop the session like Ctrl-C, so the tests that finished are still reported
            signal.signal(signal.SIGINT, signal.default_int_handler)
            signal.signal(signal.SIGTERM, signal.default_int_handler)
        self.start = time.time()
        self.collector_paused = _pause_cycle_collector()  # True: switch it on again after collection
        # from the end of collection on (xdist's controller, which collects nothing, runs no test either)
        self.imports: ImportFreezer | None = None

    # -- collection: whole-file entries are not collected; the others get a mark -----------------
    def pytest_ignore_collect(self, collection_path, config):
        try:
            rel = Path(collection_path).relative_to(config.rootpath).as_posix()
        except ValueError:
            return None
        entry = self.skiplist.lookup(rel)
        return True if entry is not None and entry.is_file else None

    @pytest.hookimpl(tryfirst=True)  # before -k/-m deselection: staleness needs the whole collection
    def pytest_collection_modifyitems(self, session, config, items):
        self.collected = [item.nodeid for item in items]
        keep, drop = [], []
        for item in items:
            entry = self.skiplist.lookup(item.nodeid)
            if entry is not None and entry.is_known_failure and self.known != "skip":
                item.add_marker(pytest.mark.xfail(reason=entry.marker_reason(), strict=False))
            elif entry is not None:
                item.add_marker(pytest.mark.skip(reason=entry.marker_reason()))
            only_known = self.known == "only" and not (entry is not None and entry.is_known_failure)
            (drop if only_known else keep).append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep
        if self.worker:
            config.workeroutput["plate_collected"] = self.collected

    def pytest_collection_finish(self, session):
        _tune_cycle_collector(resume=self.collector_paused)
        self.collector_paused = False
        self.imports = ImportFreezer()
        if self.progress is not None:
            self.progress.begin(len(session.items))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session):
        """xdist's controller collects nothing (no pytest_collection_finish): its collector goes back on here,
        with Python's thresholds, as before the pause."""
        if self.collector_paused:
            gc.enable()
            self.collector_paused = False

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        if self.progress is not None and self.progress.first_test is None:
            self.progress.begin(len(ids))

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        collected = getattr(node, "workeroutput", {}).get("plate_collected")
        if collected is not None and self.collected is None:
            self.collected = list(collected)

    def pytest_collectreport(self, report):
        if report.failed and not self.worker:
            self.collect_errors.setdefault(report.nodeid, report.longreprtext[-MESSAGE_CHARS:])

    # -- per-test timeout -------------------------------------------------------------------------
    @contextlib.contextmanager
    def _deadline(self, item, phase):
        if not self.timeout or threading.current_thread() is not threading.main_thread():
            yield
            return

        def expire(signum, frame):
            raise TestTimeout(f"{item.nodeid}: {phase} ran past --timeout {self.timeout:g} s")

        previous = signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, self.timeout)
        if self.worker:  # a hang in C code never returns to Python: let xdist replace the worker
            faulthandler.dump_traceback_later(self.timeout + 60, exit=True)
        try:
            yield
        except TestTimeout as exc:
            raise rethrown_timeout(exc) from None
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
            if self.worker:
                faulthandler.cancel_dump_traceback_later()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item):
        with self._deadline(item, "setup"):
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item):
        with self._deadline(item, "call"):
            return (yield)

    @pytest.hookimpl(trylast=True)  # after the test's fixtures are torn down (they may launch)
    def pytest_runtest_teardown(self, item):
        _new_clock_epoch()
        if self.imports is not None:
            self.imports.after_test()

    # -- outcomes ---------------------------------------------------------------------------------
    def pytest_runtest_logreport(self, report):
        if self.worker:
            return
        record = self.tests.setdefault(report.nodeid, {"test": report.nodeid, "outcome": None, "duration": 0.0})
        record["duration"] += report.duration
        outcome = _outcome(report)
        if outcome is not None and record["outcome"] != "errors":
            record["outcome"] = outcome
            if outcome not in ("passed", "xpassed"):
                record["message"] = _message(report)
        for name, value in report.user_properties:
            if name == HOST_FALLBACKS and value:
                record[HOST_FALLBACKS] = dict(value)
        entry = self.skiplist.lookup(report.nodeid)
        if entry is not None:
            record["category"] = entry.category
        finished = report.when not in ("setup", "call")  # teardown, or xdist's report for a crashed worker
        if finished and self.progress is not None:
            capman = self.config.pluginmanager.getplugin("capturemanager")
            with capman.global_and_fixture_disabled() if capman else contextlib.nullcontext():
                self.progress.update(record["outcome"] or "errors")

    def pytest_sessionfinish(self, session, exitstatus):
        if self.worker:
            return
        if self.progress is not None:
            self.progress.finish()
        if self.results_path:
            self._write_results(session, int(exitstatus))

    def _write_results(self, session, exitstatus):
        rootdir = Path(self.config.rootpath)
        errored = {nodeid.split("::", 1)[0] for nodeid in self.collect_errors}
        collected = self.collected or []
        files = {nodeid.split("::", 1)[0] for nodeid in collected} | errored
        outcomes = {t: r["outcome"] for t, r in self.tests.items()}
        stale = find_stale(self.skiplist, collected, files, outcomes, rootdir, frozenset(errored))
        if self.known == "skip":  # listed tests did not run: a pass could not be seen
            stale.passing.clear()
        data = {
            "rootdir": str(rootdir),
            "exitstatus": exitstatus,
            "wall_s": round(time.time() - self.start, 3),
            "collected": len(collected),
            "known_failures": self.known,
            "tests": [r for r in self.tests.values() if r["outcome"] is not None],
            "unfinished": [t for t, r in self.tests.items() if r["outcome"] is None],  # running when interrupted
            "collection_errors": [{"test": k, "message": v} for k, v in self.collect_errors.items()],
            "skiplist": {
                "path": str(self.skiplist.path) if self.skiplist.path else None,
                "entries": [
                    {"key": e.key, "category": e.category, "reason": e.reason, "glob": e.is_glob, "file": e.is_file}
                    for e in self.skiplist.entries
                ],
                "ignored_files": [e.key for e in self.skiplist.file_entries() if (rootdir / e.key).is_file()],
                "stale": stale.to_dict(),
            },
        }
        Path(self.results_path).parent.mkdir(parents=True, exist_ok=True)
        Path(self.results_path).write_text(json.dumps(data, indent=1))
