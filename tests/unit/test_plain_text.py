"""plain_text.plain: printable ASCII without " or \\ (what the pir and pasm texts quote as it is), the same
answer as the definition for every character class and length, the long strings found plain remembered by
identity only."""

from __future__ import annotations

import random

import pytest

from triton_plate_backend import plain_text
from triton_plate_backend.ir.printer import format_string
from triton_plate_backend.isa.asm import quote
from triton_plate_backend.plain_text import LONG, plain


def _definition(s: str) -> bool:
    return all(0x20 <= ord(c) < 0x7F and c not in '"\\' for c in s)


ALPHABET = ["a", "Z", "0", " ", "~", "(", '"', "\\", "\n", "\t", "\x7f", "\x00", "é", "λ", "\U0001f600"]


@pytest.mark.parametrize("length", [0, 1, 5, LONG - 1, LONG, 3 * LONG])
def test_plain_is_the_definition(length):
    rng = random.Random(length)
    for _ in range(200):
        s = "".join(rng.choice(ALPHABET[:6] if rng.random() < 0.5 else ALPHABET) for _ in range(length))
        assert plain(s) == _definition(s), repr(s[:40])
        assert plain(s) == _definition(s)  # again (a long plain one now from the memo)


def test_only_long_plain_strings_are_remembered_and_by_identity():
    plain_text._found.clear()
    short, long_, bad = "abc", "x" * LONG, "x" * LONG + '"'
    assert plain(short) and plain(long_) and not plain(bad)
    assert plain_text._found == [long_] and plain_text._found[0] is long_
    many = ["y" * LONG + str(k) for k in range(10)]
    assert all(plain(s) for s in many)
    assert plain_text._found == many[-4:]  # a few, the newest


def test_the_texts_quote_as_before():
    long_ = "arg0[min(pid_x // arg7, 3)*arg4 + 1]; " * 100
    for s in ("", "a b", 'say "hi"', "back\\slash", "tab\there", "naïve", long_, long_ + "\n"):
        assert (format_string(s) == f'"{s}"') == _definition(s)
        assert (quote(s) == f'"{s}"') == (_definition(s) or (not s.isascii() and s.isprintable()))
