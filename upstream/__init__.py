"""Upstream Triton and Inductor test suites run against plate, skip lists and upstream-ready patches.

This package stands apart from `triton_plate_backend`: it never imports it (nor torch, nor triton)
and drives everything through public commands (pytest in a subprocess, git). Run it from the repo
root as ``python -m upstream.runner`` / ``python -m upstream.patches``, or through ``plate upstream``
and ``plate patches``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

UPSTREAM_DIR = Path(__file__).resolve().parent
REPO_ROOT = UPSTREAM_DIR.parent
PATCHES_DIR = REPO_ROOT / "patches"
REPORTS_DIR = UPSTREAM_DIR / "reports"
SKIPLISTS_DIR = UPSTREAM_DIR / "skiplists"
DEFAULT_SRC_DIR = UPSTREAM_DIR / "src"  # git-ignored: fetched upstream trees live here, never committed


class UpstreamError(Exception):
    """Something about the upstream trees, skip lists or patches that the user must fix; says what."""


class OneLineParser(argparse.ArgumentParser):
    """argparse whose errors are one line, ``PROG: error: WHAT``, exit 2: the form of every `plate` command."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")
