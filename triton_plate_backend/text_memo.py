"""A content-addressed memo between compile stages: exact stage text -> the object derived with it.

The `pir` and `pasm` texts are the source of truth: the next stage reads its input from the text.
Reading a text costs time (parsing plate IR, assembling PLATE assembly) when the stage before has
just built the very object that text describes. So the stage that prints a text leaves the object
here under the text itself; the next stage takes it when its input is exactly that text, and
parses the text otherwise (a user's edit, an override file, a different text). Entries are taken
once (the next stage may change the object) and only a few are kept.

Valid only because the object read back from the text equals the one left here: the test suite
checks that on every kernel it compiles, with `bypassed()` (tests/stage_roundtrip.py).
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import threading

KEEP = 16  # compiles in flight at once (threads) that can still find their entry

_BYPASSED: contextvars.ContextVar[bool] = contextvars.ContextVar("plate_text_memo_bypassed", default=False)


def _key(text: str) -> str:
    """The text itself: a str caches its hash, so the stage that printed it hashes it once and the next
    stage, handed the same object by Triton, finds it without reading it again (an equal text that is
    another object is compared in full). A sha256 of the text cost two encodes and hashes of 50-120 KB
    per text and compile."""
    return str(text)


class TextMemo:
    """text -> object, at most `keep` entries, each taken at most once."""

    def __init__(self, keep: int = KEEP):
        self.keep = keep
        self.entries: collections.OrderedDict[str, object] = collections.OrderedDict()
        self.lock = threading.Lock()

    def put(self, text: str, value) -> None:
        if _BYPASSED.get():
            return
        with self.lock:
            self.entries[_key(text)] = value
            while len(self.entries) > self.keep:
                self.entries.popitem(last=False)

    def take(self, text: str):
        """The object left for exactly this text, or None (then read the text)."""
        if _BYPASSED.get():
            return None
        with self.lock:
            return self.entries.pop(_key(text), None)

    def peek(self, text: str):
        """The object left for exactly this text, left in place (None if there is none)."""
        if _BYPASSED.get():
            return None
        with self.lock:
            return self.entries.get(_key(text))

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()


@contextlib.contextmanager
def bypassed():
    """Inside, every memo is empty and keeps nothing: each stage reads its input text for real."""
    token = _BYPASSED.set(True)
    try:
        yield
    finally:
        _BYPASSED.reset(token)
