"""A launch's footprints evaluated over its programs: once for the affinity mapping and the operand planner.

Both read the same expressions (isa/footprint.py) at every launch, and the operand planner's estimates map
the launch again under each placement they price. The values depend only on the footprint text, the grid
and the integer arguments, so they are kept per those for the last few launch shapes.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..isa.footprint import Footprint, evaluate, launch_ints, parse_footprints, program_names

LAUNCH_SHAPES = 8  # launch shapes kept (each holds a few int64 arrays over its programs)
KEPT_PROGRAMS = 1 << 16  # larger grids: only the last launch shape is kept (its arrays are large)


class LaunchFootprints:
    """The footprints of one launch shape and their expressions' values over its programs."""

    def __init__(self, footprints: tuple[Footprint, ...], names: dict, programs: int):
        self.footprints = footprints
        self.defs = footprints[0].defs if footprints else ""  # the text's definitions: one text, one defs
        self.programs = programs
        self._names = names
        self._values: dict[str, np.ndarray] = {}
        self._subterms: dict = {}  # evaluate's memo: the expressions share most of their subterms

    def value(self, expr: str) -> np.ndarray:
        """``expr`` over the launch's programs: int64 [programs], read-only; raises FootprintError."""
        got = self._values.get(expr)
        if got is None:
            got = np.broadcast_to(evaluate(expr, self._names, self._subterms, self.defs), (self.programs,))
            self._values[expr] = got
        return got


def launch_footprints(program, grid, args) -> LaunchFootprints | None:
    """The footprints of ``program`` launched over ``grid`` with ``args``; None when it has none."""
    text = getattr(program, "affinity", "")
    if not parse_footprints(text):
        return None
    key = (text, tuple(int(g) for g in grid), tuple(launch_ints(program.args, args).items()))
    if math.prod(key[1]) <= KEPT_PROGRAMS:  # Python integers: np.prod of a tuple costs ~3 us a call
        return _kept(*key)
    last = _last
    if last and last[0] == key:
        return last[1]
    found = _launch(*key)
    _last[:] = [key, found]
    return found


_last: list = []  # [key, LaunchFootprints] of the last launch shape over KEPT_PROGRAMS programs


def _launch(text: str, grid: tuple[int, ...], ints: tuple[tuple[int, int], ...]) -> LaunchFootprints:
    names = program_names(grid, dict(ints))
    return LaunchFootprints(tuple(parse_footprints(text)), names, int(np.prod(grid)))


_kept = functools.lru_cache(maxsize=LAUNCH_SHAPES)(_launch)


__all__ = ["LaunchFootprints", "launch_footprints"]
