"""A kernel's footprint: which bytes of each pointer argument one program touches, in its program ids.

The compiler's affinity pass (passes/affinity.py) writes it; the launch (sim/affinity.py) evaluates
it for every program of the grid with the actual argument values and the home domains of the
memory behind them, and maps each program to a core of the domain that homes most of its bytes.
It travels with the kernel through every stage as one line of text: the ``plate.affinity``
attribute of the pir's ``tt.func``, the pasm's ``.affinity`` directive, the pbin's affinity section.

The text is ``; ``-separated entries, each ``argK[LO:HI]*BYTES``: program p touches bytes
[argK + LO, argK + HI) of the memory pointer argument K (Program.args index) points into, moving
BYTES bytes through them (a strided tile moves fewer bytes than its span; the launch spreads them
over the span's home domains in proportion). ``argK[:]*BYTES``: BYTES somewhere in that memory (a
gather or an atomic: the addresses are data); ``any[:]*BYTES``: somewhere in device memory. Those
count as work spread over the domains, and steer no program. LO, HI and BYTES are integer expressions (Python
syntax: ``+ - * // %``, ``min(a, b)``, ``max(a, b)``, integer literals) over ``pid_x``, ``pid_y``,
``pid_z`` (the program's ids), ``nprog_x``... (the grid) and ``argK`` (integer arguments). A text
that starts with ``none`` says the analysis cannot tell, and why: the launch keeps the default
grid -> core mapping.
"""

from __future__ import annotations

import ast
import functools
import threading
from dataclasses import dataclass

import numpy as np

from ..errors import PlateError

UNKNOWN = "none"  # prefix of a footprint text that describes no ranges
ANY = "any"  # the name of memory no pointer argument reaches (a pointer made from an integer, ...)
AXES = ("x", "y", "z")


class FootprintError(PlateError, ValueError):
    """A footprint text that does not parse, or names an argument the kernel does not have."""


@dataclass(frozen=True)
class Footprint:
    """One pointer argument's byte range per program (the texts are expressions, see the module docstring)."""

    arg: int  # -1: ``any``
    lo: str | None  # None (with hi): somewhere in the whole allocation (a gather, an atomic)
    hi: str | None
    nbytes: str

    def __str__(self) -> str:
        nbytes = self.nbytes if self.nbytes.isdigit() else f"({self.nbytes})"
        where = ":" if self.lo is None else f"{self.lo}:{self.hi}"
        return f"{ANY if self.arg < 0 else f'arg{self.arg}'}[{where}]*{nbytes}"


def unknown(reason: str) -> str:
    """The footprint text of a kernel the analysis cannot describe."""
    return f"{UNKNOWN} ({reason})"


def format_footprints(footprints) -> str:
    return "; ".join(str(f) for f in footprints)


_BINOPS = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply, ast.FloorDiv: np.floor_divide, ast.Mod: np.mod}
_CALLS = {"min": np.minimum, "max": np.maximum}


def _check(node: ast.AST, text: str) -> None:
    """Only the expression forms the module docstring names."""
    for n in ast.walk(node):
        ok = isinstance(n, (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Name, ast.Load, ast.USub, ast.Call))
        ok = ok or type(n) in _BINOPS or (isinstance(n, ast.Constant) and type(n.value) is int)
        if isinstance(n, ast.Call):
            ok = isinstance(n.func, ast.Name) and n.func.id in _CALLS and len(n.args) == 2 and not n.keywords
        if isinstance(n, ast.Name):
            ok = n.id in _CALLS or n.id.startswith(("pid_", "nprog_", "arg"))
        if not ok:
            raise FootprintError(
                f"footprint expression {text!r}: {type(n).__name__} is not allowed (integers, names, + - * // %, "
                "min, max)"
            )


def parse_footprints(text: str) -> list[Footprint] | None:
    """The entries of a footprint text; None for an empty or ``none ...`` text (the analysis could not tell)."""
    parsed = _parse_footprints(text or "")
    return list(parsed) if parsed is not None else None


@functools.lru_cache(maxsize=256)  # every launch of a kernel reads the same text
def _parse_footprints(text: str) -> tuple[Footprint, ...] | None:
    text = text.strip()
    if not text or text.startswith(UNKNOWN):
        return None
    out = []
    for entry in text.split(";"):
        entry = entry.strip()
        try:
            node = ast.parse(entry, mode="eval").body
        except SyntaxError:
            node = None
        sl = node.left.slice if isinstance(node, ast.BinOp) and isinstance(node.left, ast.Subscript) else None
        name = node.left.value.id if sl is not None and isinstance(node.left.value, ast.Name) else ""
        whole = isinstance(sl, ast.Slice) and sl.lower is None and sl.upper is None
        if not (
            sl is not None
            and isinstance(node.op, ast.Mult)
            and (name[:3] == "arg" and name[3:].isdigit() or name == ANY and whole)
            and isinstance(sl, ast.Slice)
            and sl.step is None
            and (whole or sl.lower is not None and sl.upper is not None)
        ):
            forms = "argK[LO:HI]*BYTES, argK[:]*BYTES or any[:]*BYTES"
            raise FootprintError(f"footprint entry {entry!r}: expected {forms}")
        parts = [node.right] if whole else [sl.lower, sl.upper, node.right]
        for p in parts:
            _check(ast.Expression(p), entry)
        texts = [ast.unparse(p) for p in parts]
        for t, p in zip(texts, parts):  # checked: the launch that evaluates them parses them no more
            _keep_steps(t, p)
        lo, hi = (None, None) if whole else texts[:2]
        out.append(Footprint(-1 if name == ANY else int(name[3:]), lo, hi, texts[-1]))
    return tuple(out)


def _unnamed(name: str) -> str:
    return f"footprint names {name}, which is not an integer argument, pid_* or nprog_*"


@dataclass(frozen=True)
class _Steps:
    """An expression as the post-order steps of its distinct subexpressions (the affinity pass writes
    one subexpression many times over: a persistent loop's bounds, 74,310 nodes in 32 expressions of
    a 4096^3 GEMM, 2,810 distinct). Step i: (kind, payload, operand step indices); ``frees[i]``: the
    steps whose value step i is the last to read."""

    steps: tuple[tuple, ...]
    frees: tuple[tuple[int, ...], ...]


def _steps(node: ast.AST) -> _Steps:
    index: dict[tuple, int] = {}  # a subexpression (its operation and operands' steps) -> its step
    steps: list[tuple] = []

    def visit(n: ast.AST) -> int:
        if isinstance(n, ast.Constant):
            key, step = ("const", n.value), ("const", n.value, ())
        elif isinstance(n, ast.Name):
            key, step = ("name", n.id), ("name", n.id, ())
        elif isinstance(n, ast.UnaryOp):
            i = visit(n.operand)
            key, step = ("neg", i), ("neg", None, (i,))
        elif isinstance(n, ast.Call):
            args = tuple(visit(a) for a in n.args)
            key, step = (n.func.id, *args), ("call", _CALLS[n.func.id], args)
        else:
            args = (visit(n.left), visit(n.right))
            key = (type(n.op), *args)
            step = ("div" if isinstance(n.op, (ast.FloorDiv, ast.Mod)) else "op", _BINOPS[type(n.op)], args)
        found = index.get(key)
        if found is None:
            found = index[key] = len(steps)
            steps.append(step)
        return found

    visit(node)
    last = {i: k for k, (_, _, args) in enumerate(steps) for i in args}
    frees = [[] for _ in steps]
    for i, k in last.items():
        frees[k].append(i)
    return _Steps(tuple(steps), tuple(tuple(f) for f in frees))


EXPRESSIONS_KEPT = 1024  # expressions whose steps are kept, the oldest dropped first
_kept_steps: dict[str, _Steps] = {}
_kept_lock = threading.Lock()


def _keep_steps(expr: str, node: ast.AST) -> _Steps:
    """The steps of ``expr`` (``node``: its checked tree; ast.unparse's text parses back to the same
    tree), kept for ``_expression``: _parse_footprints has the trees of the texts it makes."""
    steps = _steps(node)
    with _kept_lock:
        _kept_steps.pop(expr, None)
        _kept_steps[expr] = steps
        while len(_kept_steps) > EXPRESSIONS_KEPT:
            del _kept_steps[next(iter(_kept_steps))]
    return steps


def _expression(expr: str) -> _Steps:
    got = _kept_steps.get(expr)
    if got is None:
        node = ast.parse(expr, mode="eval").body
        _check(ast.Expression(node), expr)
        got = _keep_steps(expr, node)
    return got


def evaluate(expr: str, names: dict) -> np.ndarray:
    """An expression over ``names`` (numpy int64 scalars or arrays over the programs): each distinct
    subexpression computed once, by the numpy operation the tree walk would apply to the same values."""
    try:
        plan = _expression(expr)
    except SyntaxError:
        raise FootprintError(f"footprint expression {expr!r} does not parse") from None
    values: list = [None] * len(plan.steps)
    for k, (kind, payload, args) in enumerate(plan.steps):
        if kind == "op":
            v = payload(values[args[0]], values[args[1]])
        elif kind == "call":
            v = payload(*(values[i] for i in args))
        elif kind == "div":
            b = values[args[1]]
            b = np.where(b == 0, 1, b)  # a grid axis or argument of 0 describes no bytes; never divide by it
            v = payload(values[args[0]], b)
        elif kind == "name":
            if payload not in names:
                raise FootprintError(_unnamed(payload))
            v = names[payload]
        elif kind == "const":
            v = np.int64(payload)
        else:
            v = np.negative(values[args[0]])
        values[k] = v
        for i in plan.frees[k]:
            values[i] = None
    return np.asarray(values[-1], dtype=np.int64)


def program_names(grid, int_args: dict[int, int]) -> dict:
    """pid_*/nprog_* arrays over the programs (program p = x + gx*(y + gy*z), as the executor numbers
    them) and the integer arguments ``argK``."""
    gx, gy, gz = (int(g) for g in grid)
    p = np.arange(gx * gy * gz, dtype=np.int64)
    names = {"pid_x": p % gx, "pid_y": (p // gx) % gy, "pid_z": p // (gx * gy)}
    names.update({f"nprog_{a}": np.int64(g) for a, g in zip(AXES, (gx, gy, gz))})
    names.update({f"arg{k}": np.int64(v) for k, v in int_args.items()})
    return names


def launch_ints(params, args) -> dict[int, int]:
    """The integer arguments among a launch's ``args`` by index (``params``: the Program's args)."""
    return {k: int(v) for k, (a, v) in enumerate(zip(params, args)) if a.type != "ptr" and not isinstance(v, float)}


def launch_names(grid, params, args) -> dict:
    """program_names of a launch: the integer arguments among ``args`` (``params``: the Program's args)."""
    return program_names(grid, launch_ints(params, args))
