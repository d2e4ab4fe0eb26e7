"""Whether a string is plain text: printable ASCII without ``"`` or ``\\``, which the pir and the pasm texts
both write between quotes as it is (ir/printer.py's `format_string`, isa/asm.py's `quote`).

One scan of the bytes in C (deleting the plain ones leaves nothing); the long strings found plain are
remembered by identity (a few, held here so that their ids are not reused), so that a kernel's
footprint text (`plate.affinity`, 30-90 KB), which the pir stage prints and the pasm stage prints
again, the same object, is scanned once per compile, not twice."""

from __future__ import annotations

PLAIN_BYTES = bytes(c for c in range(0x20, 0x7F) if c not in b'"\\')
LONG = 1024  # strings at least this long are remembered once found plain
_KEEP = 4
_found: list[str] = []  # the last long strings found plain, newest last


def plain(s: str) -> bool:
    """s (a str) is printable ASCII without ``"`` or ``\\``."""
    for t in _found:
        if t is s:
            return True
    if not (s.isascii() and not s.encode("ascii").translate(None, PLAIN_BYTES)):
        return False
    if len(s) >= LONG and type(s) is str:
        _found.append(s)
        del _found[:-_KEEP]
    return True
