"""The persistent prologue as one IR op: which programs along x a launched program runs.

A persistent kernel (passes/persistent.py) starts with this launched program's run of programs,

    g, i = pid_x // plate_rows, pid_x % plate_rows        (group g, its i-th launched program)
    a, b = split[g], split[g + 1]                         (split = 0, plate_split1.., plate_grid_x)
    q, r = divmod(b - a, plate_rows)                      (shares of q programs, the first r one more)
    base, end = a + i * q + min(i, r), a + (i + 1) * q + min(i + 1, r)

(base and end each capped by plate_grid_x). It is the same ~50 scalar operations in every persistent
kernel, up to the number of groups, so the IR holds it as ONE op,

    %base, %count = "plate.program_range"(%plate_split1, .., %plate_rows, %plate_grid_x)

(count = end - base), and every reader of the op walks `share` below, the one description of that
arithmetic, with its own meaning of an operation: code generation emits each as the scalar
instruction the arith rules would (rules_arith, the same code as the ops expanded), the affinity
pass folds each into a host-expression text (the same text), and `expand` builds the arith ops.
The pir text, the passes that walk the IR (verify, number, print, access, demand) and the lowering
see one op instead of ~70.

The arithmetic has no select, so the affinity pass can still tell each launched program's range; the
outer min of base by plate_grid_x (the identity here) makes base an atom to the access analysis, as
the op's result is."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from ..ir.core import EnumAttr, IntAttr, Op, ScalarType, Value, new_op

NAME = "plate.program_range"

H = TypeVar("H")  # what a reader's operation gives: an IR value, a register, a host-expression text


def share(
    pid: H, splits: Sequence[H], rows: H, grid: H, op: Callable[..., H], const: Callable[[int], H]
) -> tuple[H, H]:
    """(base, count) of this launched program's run, built by ``op(name, a, b)`` (an arith op name:
    addi, subi, muli, divsi, minsi, maxsi) and ``const(value)`` (i32 constants), called in the order
    the ops stand in the program (an operand's ops before the op reading it, left operand first)."""
    g = op("arith.divsi", pid, rows)
    i = op("arith.subi", pid, op("arith.muli", g, rows))
    bounds = [*splits, grid]  # split[1..D]; split[0] = 0
    # past[k - 1] = [g >= k] = min(1, max(0, g - (k - 1))) for k = 1..D (g >= 0: pid_x and plate_rows are)
    past = [
        op("arith.minsi", const(1), op("arith.maxsi", const(0), op("arith.subi", g, const(k)) if k else g))
        for k in range(len(bounds))
    ]
    widths = [bounds[0], *(op("arith.subi", bounds[k], bounds[k - 1]) for k in range(1, len(bounds)))]
    # a = split[g] = the widths of the groups before g; b = split[g + 1] = group 0's and the others' before g + 1
    a = op("arith.muli", past[0], widths[0])
    for k in range(1, len(bounds)):
        a = op("arith.addi", a, op("arith.muli", past[k], widths[k]))
    b = widths[0]
    for k in range(1, len(bounds)):
        b = op("arith.addi", b, op("arith.muli", past[k - 1], widths[k]))
    n = op("arith.subi", b, a)
    q = op("arith.divsi", n, rows)  # shares of q programs, the first r of them one more (no i32 product over n)
    r = op("arith.subi", n, op("arith.muli", q, rows))

    def share_start(k: H) -> H:  # min(a + k * q + min(k, r), plate_grid_x): the min (the identity here) makes
        # it an atom to the access analysis, so an address in the loop adds one register, not every term of
        # the sum above (a term a trip each)
        at = op("arith.addi", op("arith.addi", a, op("arith.muli", k, q)), op("arith.minsi", k, r))
        return op("arith.minsi", at, grid)

    base = share_start(i)
    end = share_start(op("arith.addi", i, const(1)))
    return base, op("arith.subi", end, base)


I32 = ScalarType("i32")


def make(splits: Sequence[Value], rows: Value, grid: Value, loc) -> Op:
    """The op: results (base, count), both i32."""
    return new_op(NAME, (*splits, rows, grid), (I32, I32), loc=loc)


def operands(op: Op) -> tuple[list[Value], Value, Value]:
    """(splits, rows, grid) of a plate.program_range op: its operands."""
    *splits, rows, grid = op.operands
    return splits, rows, grid


def expand(op: Op) -> tuple[list[Op], Value, Value]:
    """(ops, base, count): the op as the tt.get_program_id and arith ops it stands for, at its location
    (what persistent.py built before the op; the lowering of these ops is the op's)."""
    ops: list[Op] = []
    consts: dict[int, Value] = {}

    def emit(name: str, a: Value, b: Value) -> Value:
        ops.append(new_op(name, (a, b), (I32,), loc=op.loc))
        return ops[-1].result

    def const(v: int) -> Value:
        if v not in consts:
            ops.append(new_op("arith.constant", (), (I32,), {"value": IntAttr(v, I32)}, loc=op.loc))
            consts[v] = ops[-1].result
        return consts[v]

    ops.append(new_op("tt.get_program_id", (), (I32,), {"axis": EnumAttr("x")}, loc=op.loc))
    base, count = share(ops[0].result, *operands(op), emit, const)
    return ops, base, count
