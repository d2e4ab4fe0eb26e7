"""A one-line progress bar for long upstream runs: counts by outcome, rate and time left."""

from __future__ import annotations

import time
from collections import Counter
from typing import TextIO

OUTCOMES = ("passed", "failed", "errors", "skipped", "xfailed", "xpassed")
_SHORT = {
    "passed": "pass",
    "failed": "fail",
    "errors": "err",
    "skipped": "skip",
    "xfailed": "xfail",
    "xpassed": "XPASS",
}


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s"


def format_progress(counts: Counter, total: int, elapsed: float, running: float | None = None, width: int = 24) -> str:
    """`[#######.......]  412/9334   4%  pass 400 fail 3 skip 9 | 1m02s, ~22m left`

    `elapsed` counts from the start; the time left is extrapolated from `running`, the time since the
    first test started (collection can take a large share of a short run).
    """
    done = sum(counts[o] for o in OUTCOMES)
    frac = done / total if total else 0.0
    filled = min(width, int(frac * width))
    bar = "#" * filled + "." * (width - filled)
    parts = " ".join(f"{_SHORT[o]} {counts[o]}" for o in OUTCOMES if counts[o])
    running = elapsed if running is None else running
    left = f", ~{_clock(running / done * (total - done))} left" if 0 < done < total else ""
    digits = len(str(total))
    return f"[{bar}] {done:>{digits}}/{total} {frac:4.0%}  {parts} | {_clock(elapsed)}{left}"


class Progress:
    """Redraws one line on a terminal; elsewhere (CI logs) prints a line every `every_s` seconds or 10%."""

    def __init__(self, stream: TextIO, total: int = 0, every_s: float = 30.0):
        self.stream = stream
        self.total = total
        self.counts: Counter = Counter()
        self.start = time.monotonic()
        self.first_test: float | None = None  # set by begin(), when collection is over
        self.tty = stream.isatty()
        self.every_s = every_s
        self._last_print = self.start
        self._last_decile = 0

    def begin(self, total: int) -> None:
        self.total = total
        self.first_test = time.monotonic()

    def update(self, outcome: str) -> None:
        self.counts[outcome] += 1
        now = time.monotonic()
        running = now - (self.first_test or self.start)
        line = format_progress(self.counts, max(self.total, sum(self.counts.values())), now - self.start, running)
        if self.tty:
            self.stream.write("\r" + line + "\x1b[K")
            self.stream.flush()
            return
        done = sum(self.counts.values())
        decile = int(10 * done / self.total) if self.total else 0
        if now - self._last_print >= self.every_s or decile > self._last_decile or done == self.total:
            self.stream.write(line + "\n")
            self.stream.flush()
            self._last_print, self._last_decile = now, decile

    def finish(self) -> None:
        if self.tty and self.counts:
            self.stream.write("\n")
            self.stream.flush()
