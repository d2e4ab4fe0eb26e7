"""The unit tier (tests/unit: ir, isa, machine, cost model, sim, passes on parsed or hand-built IR) runs
with torch and triton unimportable: those layers need neither, and the root conftest installs nothing
that does for the tier's tests. Run in a subprocess whose import system refuses both. Where this test is in
the session, the unit tier's tests run only here, not a second time in the session (conftest.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
UNIT = REPO / "tests" / "unit"

# a meta-path finder that refuses torch and triton; checks that it does, then runs pytest
RUN_BLOCKED = """
import sys

class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("torch", "triton"):
            raise ImportError(f"the unit tier imported {name}")
        return None

sys.meta_path.insert(0, Refuse())
for name in ("torch", "triton"):
    try:
        __import__(name)
    except ImportError:
        pass
    else:
        sys.exit(f"{name} was importable: the blocker does not work")
import pytest

sys.exit(pytest.main(sys.argv[1:]))
"""


def _run_blocked(*args: str) -> subprocess.CompletedProcess:
    # one process (the blocker lives in it), without the suite's -n addopts
    cmd = [sys.executable, "-c", RUN_BLOCKED, *args, "-q", "-o", "addopts=", "-p", "no:cacheprovider", "-p", "no:xdist"]
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1200)


def test_unit_tier_passes_without_torch_and_triton():
    done = _run_blocked(str(UNIT), "-rs")
    tail = done.stdout[-4000:] + done.stderr[-2000:]
    assert done.returncode == 0, tail
    summary = done.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "skipped" not in summary and "error" not in summary, summary
    assert int(summary.split(" passed")[0].split()[-1]) > 300, summary


def test_the_blocker_catches_a_test_that_imports_triton(tmp_path):
    (tmp_path / "test_imports_triton.py").write_text("def test_it():\n    import triton  # noqa: F401\n")
    done = _run_blocked(str(tmp_path), "--rootdir", str(tmp_path))
    assert done.returncode == 1 and "the unit tier imported triton" in done.stdout, done.stdout[-2000:]
