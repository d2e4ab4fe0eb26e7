"""pytest plugin (`-p upstream.tutorials`): Triton's tutorials (python/tutorials/NN-*.py) as test items.

A tutorial is a script: its correctness checks are module-level asserts, printed verdicts (03 and
09 print ✅ or ❌) and, in 06, pytest tests. Each tutorial file becomes:

    NN-name.py::script     runs the file (as `python NN-name.py` does, or imported and then the calls
                           its `if __name__ == "__main__":` block makes for its checks); fails on an
                           exception, a failed assert, or a ❌ in what it prints
    NN-name.py::test_*     its pytest tests, where TUTORIALS says it has some

Benchmarks do not run: `triton.testing.Mark.run` (what `@triton.testing.perf_report` returns)
prints that it was skipped. The files are never copied or edited; the run only reads them.
"""

from __future__ import annotations

import importlib.util
import io
import re
import runpy
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

TUTORIAL_FILE = re.compile(r"^\d\d-[\w-]+\.py$")
FAILED_CHECK = "❌"  # what 03 and 09 print for a result that does not match


@dataclass(frozen=True)
class Tutorial:
    main: bool = True  # run as __main__ (False: imported, its __main__ block is only benchmarks)
    calls: tuple[str, ...] = ()  # then these, in the module's namespace: the checks of its __main__ block
    tests: bool = False  # collect its pytest tests


# What the correctness part of each tutorial is, at the pinned commit; a file not named here runs as
# a script.
TUTORIALS: dict[str, Tutorial] = {
    "06-fused-attention.py": Tutorial(main=False, tests=True),
    # its __main__ block validates at 32^3 and at 8192x8192x512, then benchmarks. The second size costs hours
    # of simulation (each of 16 autotune configs runs the 68-GFLOP product 4 times, for the naive and the
    # persistent kernel); 1024x1024x512 checks the same kernels, with persistent programs looping over tiles
    # (more tiles than cores).
    "09-persistent-matmul.py": Tutorial(
        main=False,
        calls=(
            "torch.manual_seed(0)",
            "validate(32, 32, 32, torch.float16)",
            "validate(1024, 1024, 512, torch.float16)",
        ),
    ),
}


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path: Path, parent):
    """Python's collector asks this for every file it collects: the runner names the tutorials on the
    command line (or sets python_files), and they become TutorialFiles instead of plain modules."""
    if TUTORIAL_FILE.match(module_path.name):
        return TutorialFile.from_parent(parent, path=module_path)
    return None


class TutorialFile(pytest.Module):
    def collect(self):
        tutorial = TUTORIALS.get(self.path.name, Tutorial())
        yield TutorialScript.from_parent(self, name="script", tutorial=tutorial)
        if tutorial.tests:  # importing the module runs its top level: only for files whose top level is cheap
            yield from super().collect()

    def _getobj(self):
        # the file name is no identifier ("06-fused-attention"): load it under a name of its own
        name = "tutorial_" + re.sub(r"\W", "_", self.path.stem)
        spec = importlib.util.spec_from_file_location(name, self.path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module


class _Tee(io.TextIOBase):
    def __init__(self, *streams):
        self.streams = streams

    def write(self, text):
        for s in self.streams:
            s.write(text)
        return len(text)

    def flush(self):
        for s in self.streams:
            s.flush()


class TutorialScript(pytest.Item):
    def __init__(self, *, tutorial: Tutorial, **kwargs):
        super().__init__(**kwargs)
        self.tutorial = tutorial

    def runtest(self):
        printed = io.StringIO()
        with pytest.MonkeyPatch.context() as mp:
            _skip_benchmarks(mp)
            mp.chdir(self.path.parent)
            mp.syspath_prepend(str(self.path.parent))
            mp.setattr(sys, "argv", [str(self.path)])
            mp.setattr(sys, "stdout", _Tee(sys.stdout, printed))
            run_name = "__main__" if self.tutorial.main else "tutorial_script"
            namespace = runpy.run_path(str(self.path), run_name=run_name)
            for call in self.tutorial.calls:
                exec(call, namespace)
        failed = [line.strip() for line in printed.getvalue().splitlines() if FAILED_CHECK in line]
        if failed:
            raise AssertionError(f"{self.path.name} printed a failed check: " + "; ".join(failed[:5]))

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, AssertionError) and str(excinfo.value).startswith(self.path.name):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, f"{self.path.name}::script"


def _skip_benchmarks(mp: pytest.MonkeyPatch) -> None:
    try:
        import triton.testing
    except ImportError:  # a tutorial that needs Triton fails on its own import, with its own message
        return

    def skipped(self, *args, **kwargs):
        names = ", ".join(
            b.plot_name for b in (self.benchmarks if isinstance(self.benchmarks, list) else [self.benchmarks])
        )
        print(f"[benchmark {names} not run: the tutorial suite checks correctness only]")

    mp.setattr(triton.testing.Mark, "run", skipped)
