"""Every PLATE_* environment variable, typed and documented, in one place.

No other module reads the environment for plate settings: they call the accessors below. Each
accessor reads the variable when called (not at import), so a test or a user can change it between
launches. Settings that change what a compile produces (PLATE_MACHINE) are read once per compile by
``compiler.parse_options`` and so land in the options and the cache key; the rest only change
what happens at run time or what gets written to disk.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from .errors import PlateError


class KnobError(PlateError, ValueError):
    """A PLATE_* environment variable holds a value of the wrong form."""


@dataclass(frozen=True)
class Knob:
    name: str
    default: object
    parse: Callable[[str], object]
    doc: str

    def get(self):
        raw = os.environ.get(self.name)
        if raw is None or raw == "":
            return self.default
        return self.parse(raw)


def _flag(name: str) -> Callable[[str], bool]:
    def parse(raw: str) -> bool:
        value = raw.strip().lower()
        if value in ("1", "true", "yes", "on"):
            return True
        if value in ("0", "false", "no", "off"):
            return False
        raise KnobError(f"{name}={raw!r}: expected 1 or 0 (also true/false, yes/no, on/off)")

    return parse


def _positive_int(name: str) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        try:
            value = int(raw)
        except ValueError:
            value = 0
        if value < 1:
            raise KnobError(f"{name}={raw!r}: expected a positive integer")
        return value

    return parse


def _margin(name: str) -> Callable[[str], float | None]:
    def parse(raw: str) -> float | None:
        if raw.strip().lower() in ("off", "none", "exhaustive"):
            return None
        try:
            value = float(raw)
        except ValueError:
            value = -1.0
        if value < 0:
            raise KnobError(f"{name}={raw!r}: expected a percentage >= 0, or off")
        return value

    return parse


def _text(raw: str) -> str:
    return raw.strip()


SANITIZE_MODES = ("race", "init")


def parse_sanitize(raw: str) -> frozenset[str]:
    """'race', 'init', 'race,init' (any order, blanks ignored) -> the set of sanitizer modes."""
    modes = frozenset(m.strip().lower() for m in raw.split(",") if m.strip())
    unknown = sorted(modes - set(SANITIZE_MODES))
    if unknown:
        raise KnobError(
            f"PLATE_SANITIZE={raw!r}: unknown mode(s) {', '.join(unknown)}; expected a comma-separated list of "
            f"{', '.join(SANITIZE_MODES)}"
        )
    return modes


KNOBS: dict[str, Knob] = {
    k.name: k
    for k in (
        Knob(
            "PLATE_MACHINE",
            "plate1",
            _text,
            "Machine preset the compiler targets and the simulator runs (machine.PRESETS: plate1, plate-mini, "
            "plate4). Part of the compile cache key.",
        ),
        Knob(
            "PLATE_TRACE",
            None,
            _text,
            "Write a Perfetto/Chrome trace of every launch. A path ending in .json names one file, rewritten "
            "by each launch (so it holds the last one); any other path is a directory that gets one file per "
            "launch, <launch number>-<kernel>.json. Unset: no traces (faster timing).",
        ),
        Knob(
            "PLATE_HOST_MEMORY",
            False,
            _flag("PLATE_HOST_MEMORY"),
            "1: explicit host-memory mode. CPU torch tensors are accepted as kernel pointer arguments; each "
            "tensor's storage is registered with the simulator's device memory for the duration of the launch "
            "(bounds-checked like any allocation). Temporary: it exists until the plate torch device does; "
            "without it a CPU tensor argument is an error, as on CUDA.",
        ),
        Knob(
            "PLATE_POLICY",
            "affinity",
            _text,
            "Grid -> core policy of a launch: affinity (default: each program runs in the domain that homes "
            "most of its bytes, from the compiled kernel's footprint and the arguments' memory; round_robin "
            "where the compiler cannot tell) or a sim.timing.POLICIES name (round_robin, blocked, "
            "domain_aligned) to override it for experiments.",
        ),
        Knob(
            "PLATE_DUMP_DIR",
            None,
            _text,
            "Directory that receives the ttir, pir and pasm text of each compile, as <kernel>-<hash>.<ext>. "
            "Only compiles write it: a cache hit writes nothing (set TRITON_ALWAYS_COMPILE=1 to force).",
        ),
        Knob(
            "PLATE_MAX_STEPS",
            None,
            _positive_int("PLATE_MAX_STEPS"),
            "Step budget of one launch: instructions executed (one per group of program instances running "
            "together) before the simulator stops the kernel as a possible infinite loop. Unset: the "
            "simulator's default, 10,000,000 (about a minute of simulation). Loops proven endless (same state "
            "again, no memory changed) are stopped at once whatever the budget.",
        ),
        Knob(
            "PLATE_BENCH_REPS",
            3,
            _positive_int("PLATE_BENCH_REPS"),
            "Timed repetitions of the driver's benchmarker (get_benchmarker, used by @triton.autotune), at "
            "most: modeled time does not jitter, so it stops once two runs in a row took the same modeled time "
            "(return_mode='all' runs them all; data-dependent kernels may differ and run on).",
        ),
        Knob(
            "PLATE_AUTOTUNE_MARGIN",
            10.0,
            _margin("PLATE_AUTOTUNE_MARGIN"),
            "The driver's benchmarker asks the cost model first (sim.estimate, no run) and simulates a "
            "config only if its estimate is within this many percent of the best estimate of the same "
            "launch so far; the others are timed by their estimate (scaled like the best simulated one). "
            "off: simulate every config (exhaustive autotuning).",
        ),
        Knob(
            "PLATE_SANITIZE",
            frozenset(),
            parse_sanitize,
            "Sanitizer modes, comma-separated (docs/sanitizer.md): race (conflicting accesses by different "
            "programs of one launch without atomics), init (kernel reads of device bytes never written since "
            "allocation; fresh allocations are filled with 0xFF bytes instead of zeros). A launch with findings "
            "raises SanitizerError listing them. Bounds checks are always on. Unset: off, at no cost.",
        ),
    )
}


def machine() -> str:
    return KNOBS["PLATE_MACHINE"].get()


def trace() -> str | None:
    return KNOBS["PLATE_TRACE"].get()


def host_memory() -> bool:
    return KNOBS["PLATE_HOST_MEMORY"].get()


def policy() -> str:
    return KNOBS["PLATE_POLICY"].get()


def dump_dir() -> str | None:
    return KNOBS["PLATE_DUMP_DIR"].get()


def max_steps() -> int | None:
    return KNOBS["PLATE_MAX_STEPS"].get()


def bench_reps() -> int:
    return KNOBS["PLATE_BENCH_REPS"].get()


def autotune_margin() -> float | None:
    return KNOBS["PLATE_AUTOTUNE_MARGIN"].get()


def sanitize() -> frozenset[str]:
    return KNOBS["PLATE_SANITIZE"].get()


def describe() -> str:
    """All knobs with their current values, for `plate info`-style output and bug reports."""
    lines = []
    for k in KNOBS.values():
        lines.append(f"{k.name} = {os.environ.get(k.name, '')!r} (default {k.default!r})\n    {k.doc}")
    return "\n".join(lines)
