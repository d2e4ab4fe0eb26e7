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

import contextlib
import contextvars
import threading

KEEP = 16  # compiles in flight at once (threads) that can still find their entry

_BYPASSED: contextvars.ContextVar[bool] = contextvars.ContextVar("plate_text_memo_bypassed", default=False)


class TextMemo:
    """text -> object, at most `keep` entries, each taken at most once.

    The entries are a short list of (text, object) pairs, searched from the newest: first for the very
    text object the stage that printed it returned (Triton hands it to the next stage as it is), then
    for an equal text (compared in full: a length first, then the characters). A dict keyed by the
    text hashed each text once more (the pir and pasm texts are 35-120 KB: a whole read of each, every
    compile); before it, a sha256 of each cost two encodes and hashes per text and compile."""

    def __init__(self, keep: int = KEEP):
        self.keep = keep
        self.entries: list[tuple[str, object]] = []  # oldest first
        self.lock = threading.Lock()

    def _find(self, text: str) -> int:
        """The index of text's newest entry, or -1."""
        entries = self.entries
        for i in range(len(entries) - 1, -1, -1):
            if entries[i][0] is text:
                return i
        text = str(text)
        for i in range(len(entries) - 1, -1, -1):
            if entries[i][0] == text:
                return i
        return -1

    def put(self, text: str, value) -> None:
        if _BYPASSED.get():
            return
        text = str(text)
        with self.lock:
            i = self._find(text)
            if i >= 0:  # a text again: its newer object replaces the entry, which becomes the newest
                del self.entries[i]
            self.entries.append((text, value))
            if len(self.entries) > self.keep:
                del self.entries[: len(self.entries) - self.keep]

    def take(self, text: str):
        """The object left for exactly this text, or None (then read the text)."""
        if _BYPASSED.get():
            return None
        with self.lock:
            i = self._find(text)
            return self.entries.pop(i)[1] if i >= 0 else None

    def peek(self, text: str):
        """The object left for exactly this text, left in place (None if there is none)."""
        if _BYPASSED.get():
            return None
        with self.lock:
            i = self._find(text)
            return self.entries[i][1] if i >= 0 else None

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
