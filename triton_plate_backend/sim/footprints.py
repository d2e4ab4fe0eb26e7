"""A launch's footprints evaluated over its programs: once for the affinity mapping and the operand planner.

Both read the same expressions (isa/footprint.py) at every launch, and the operand planner's estimates map
the launch again under each placement they price. The values depend only on the footprint text, the grid
and the integer arguments, so they are kept per those for the last few launch shapes.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..isa.footprint import (
    Footprint,
    evaluate,
    evaluate_one,
    launch_ints,
    one_program_names,
    parse_footprints,
    program_names,
)

LAUNCH_SHAPES = 8  # launch shapes kept (each holds a few int64 arrays over its programs)
KEPT_PROGRAMS = 1 << 16  # larger grids: only the last launch shape is kept (its arrays are large)


class LaunchFootprints:
    """The footprints of one launch shape and their expressions' values over its programs."""

    def __init__(self, footprints: tuple[Footprint, ...], grid: tuple[int, ...], int_args: dict[int, int]):
        self.footprints = footprints
        self.defs = footprints[0].defs if footprints else ""  # the text's definitions: one text, one defs
        self.programs = math.prod(grid)
        self._names: dict | None = None  # program_names, made at the first ``value`` (``one`` needs none)
        self._values: dict[str, np.ndarray] = {}
        self._subterms: dict = {}  # evaluate's memo: the expressions share most of their subterms
        self._grid, self._int_args = grid, int_args  # what the names are made of
        self._int_names: dict | None = None
        self._ints: dict[str, int] = {}
        self._int_subterms: dict = {}

    def value(self, expr: str) -> np.ndarray:
        """``expr`` over the launch's programs: int64 [programs], read-only; raises FootprintError."""
        got = self._values.get(expr)
        if got is None:
            if self._names is None:
                self._names = program_names(self._grid, self._int_args)
            got = np.broadcast_to(evaluate(expr, self._names, self._subterms, self.defs), (self.programs,))
            self._values[expr] = got
        return got

    def one(self, expr: str) -> int:
        """``int(value(expr)[0])`` of a one-program launch, in Python integers where every value on the way
        fits int64 (isa/footprint.py ``evaluate_one``: a dozen numpy calls on one-element arrays fewer);
        raises FootprintError as ``value`` does."""
        got = self._ints.get(expr)
        if got is None:
            if self._int_names is None:
                self._int_names = one_program_names(self._grid, self._int_args)
            got = evaluate_one(expr, self._int_names, self._int_subterms, self.defs)
            if got is None:  # past int64 on the way: numpy's wrapping arithmetic is the answer
                got = int(self.value(expr)[0])
            self._ints[expr] = got
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
    return LaunchFootprints(tuple(parse_footprints(text)), grid, dict(ints))


_kept = functools.lru_cache(maxsize=LAUNCH_SHAPES)(_launch)


__all__ = ["LaunchFootprints", "launch_footprints"]
