"""pytest plugin: what Python's cycle collector does in a test process, and which objects it frees.

    cd upstream/src/triton/python/test && PYTHONPATH=<repo>:<repo>/benchmarks GC_PROBE_OUT=gc.json \\
        python -m pytest unit/language/test_core.py -p upstream.plugin --device plate -m interpreter \\
        -p gc_probe [...the runner's options]

Writes GC_PROBE_OUT (JSON) at the end: per generation the collections, their process CPU and the objects
they freed (all and after the first test), each full collection's test number, CPU and survivors, the
objects left in the collector's view at the end by type, peak RSS and the process CPU. ``GC_PROBE_EVERY=N``
keeps every N-th collected item (the whole file is collected first, as an xdist worker does, then a
share runs: N=2 is about one worker's share of the runner's ``--jobs 2``). ``GC_PROBE_GARBAGE=1`` also
counts, by type, what each collection found in cycles (``gc.DEBUG_SAVEALL``; the found objects are kept
to the end so that none is counted twice: a diagnosis, its times are not the collector's).
"""

from __future__ import annotations

import collections
import gc
import json
import os
import resource
import time

import pytest

EVERY = int(os.environ.get("GC_PROBE_EVERY", "1"))
GARBAGE = bool(os.environ.get("GC_PROBE_GARBAGE"))


def _type_name(obj) -> str:
    t = type(obj)
    return f"{t.__module__}.{t.__qualname__}"


class Probe:
    def __init__(self):
        self.gens = {
            g: {"collections": 0, "cpu": 0.0, "freed": 0, "after_first": 0, "cpu_after_first": 0.0} for g in range(3)
        }
        self.full: list[dict] = []
        self.tests = 0
        self.started = 0.0
        self.garbage = collections.Counter()
        self.garbage_functions = collections.Counter()
        self.kept: list[list] = []  # DEBUG_SAVEALL's finds: freed again they would be found (and counted) again

    def on_gc(self, phase: str, info: dict) -> None:
        if phase == "start":
            self.started = time.process_time()
            return
        cpu = time.process_time() - self.started
        gen = self.gens[info["generation"]]
        gen["collections"] += 1
        gen["cpu"] += cpu
        gen["freed"] += info["collected"]
        if self.tests:
            gen["after_first"] += 1
            gen["cpu_after_first"] += cpu
        if info["generation"] == 2:
            survivors = len(gc.get_objects(2))
            self.full.append(
                {"test": self.tests, "cpu": round(cpu, 4), "freed": info["collected"], "survivors": survivors}
            )

    @pytest.hookimpl(trylast=True)  # after the runner's plugin marked and deselected
    def pytest_collection_modifyitems(self, session, config, items):
        if EVERY > 1:
            drop = [item for i, item in enumerate(items) if i % EVERY != EVERY - 1]
            items[:] = items[EVERY - 1 :: EVERY]
            config.hook.pytest_deselected(items=drop)

    def pytest_runtest_setup(self, item):
        if GARBAGE:
            gc.set_debug(gc.DEBUG_SAVEALL)

    def pytest_runtest_logfinish(self, nodeid, location):
        self.tests += 1
        if GARBAGE and gc.garbage:
            found = list(gc.garbage)
            gc.garbage.clear()
            self.kept.append(found)
            self.garbage.update(_type_name(o) for o in found)
            self.garbage_functions.update(o.__qualname__ for o in found if type(o).__name__ == "function")

    def pytest_unconfigure(self, config):
        out = os.environ.get("GC_PROBE_OUT")
        if not out:
            return
        gc.set_debug(0)
        in_view = collections.Counter(_type_name(o) for o in gc.get_objects())
        usage = resource.getrusage(resource.RUSAGE_SELF)
        result = {
            "tests": self.tests,
            "cpu": time.process_time(),
            "peak_rss_mb": usage.ru_maxrss / 1024,
            "generations": self.gens,
            "full": self.full,
            "threshold": gc.get_threshold(),
            "frozen": gc.get_freeze_count(),
            "in_view_at_end": sum(in_view.values()),
            "in_view_by_type": in_view.most_common(30),
            "garbage_by_type": self.garbage.most_common(40),
            "garbage_functions": self.garbage_functions.most_common(30),
        }
        with open(out, "w") as f:
            json.dump(result, f, indent=1)


def pytest_configure(config):
    probe = Probe()
    gc.callbacks.append(probe.on_gc)
    config.pluginmanager.register(probe, "gc-probe")
