"""``verify()`` once per unchanged Program.

A kernel's program is verified when codegen finishes it, when it is encoded, when the binary is
decoded and when it is launched. A program that passed on a machine and has not changed since
passes again: ``verify_once`` skips the walk then. Passing on a machine implies passing with no
machine (the machine only adds bounds), so a pass on any machine also answers ``machine=None``.
"""

from __future__ import annotations

from .program import Program, verify

_MARK = "_plate_verified"  # on the program: (machine key or None, content it passed with)


def content(program: Program) -> tuple:
    """What verify() reads (a const is checked only for being a string, a loc index against the count)."""
    return (
        tuple(program.instrs),
        tuple(program.tiles),
        tuple(program.consts),
        tuple(program.args),
        len(program.locs),
        program.sram_bytes,
    )


def verify_once(program: Program, machine=None) -> Program:
    """verify(program, machine) unless this program, unchanged, already passed it (module docstring)."""
    mark = getattr(program, _MARK, None)
    if mark is not None and (machine is None or mark[0] == machine.cache_key()) and mark[1] == content(program):
        return program
    verify(program, machine)
    passed(program, machine)
    return program


def passed(program: Program, machine=None) -> None:
    """Record (on the program itself: nothing outlives it) that it passed verify() on ``machine`` as it is now."""
    setattr(program, _MARK, (None if machine is None else machine.cache_key(), content(program)))
