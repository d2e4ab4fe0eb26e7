"""text_memo.TextMemo: the object a stage left under its output text, found by the next stage that reads exactly
that text (the same object or an equal copy), once; a text that differs finds nothing; at most `keep` entries."""

from __future__ import annotations

from triton_plate_backend.text_memo import TextMemo, bypassed


def _copy(text: str) -> str:
    """An equal text that is another object."""
    out = "".join(list(text))
    assert out == text and out is not text
    return out


def test_the_same_text_object_finds_its_entry_once():
    memo, text, value = TextMemo(), "x" * 1000, object()
    memo.put(text, value)
    assert memo.peek(text) is value
    assert memo.take(text) is value
    assert memo.take(text) is None and memo.peek(text) is None


def test_an_equal_text_finds_it_and_a_different_one_does_not():
    memo, text, value = TextMemo(), "module {\n" + "op\n" * 300 + "}\n", object()
    memo.put(text, value)
    assert memo.take(text[:-1] + " ") is None  # the same length, the last character differs
    assert memo.take(text + "\n") is None
    assert memo.take(_copy(text)) is value


def test_the_newest_entry_of_a_text_wins_and_the_oldest_go_first():
    memo = TextMemo(keep=3)
    memo.put("a", 1)
    memo.put(_copy("ab")[:1], 2)  # the text "a" again, another object: replaces the entry
    assert memo.peek("a") == 2 and len(memo.entries) == 1
    for k, t in enumerate(["b", "c", "d"]):
        memo.put(t, k)
    assert memo.peek("a") is None and [memo.peek(t) for t in "bcd"] == [0, 1, 2]
    memo.clear()
    assert memo.peek("b") is None


def test_bypassed_keeps_and_finds_nothing():
    memo = TextMemo()
    memo.put("kept", 1)
    with bypassed():
        memo.put("not kept", 2)
        assert memo.take("kept") is None
    assert memo.take("not kept") is None and memo.take("kept") == 1
