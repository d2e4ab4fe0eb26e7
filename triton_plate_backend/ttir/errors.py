"""The one error the TTIR reader raises: what was wrong, and where, with the line and a caret."""

from __future__ import annotations

from ..errors import PlateError


class TtirParseError(PlateError):
    """Malformed or unsupported TTIR text: carries file, line, column and the offending line."""

    def __init__(self, message: str, *, filename: str = "<ttir>", line: int = 0, col: int = 0, text: str = ""):
        self.message, self.filename, self.line, self.col, self.text = message, filename, line, col, text
        where = f"{filename}:{line}:{col}" if line else filename
        caret = f"\n    {text}\n    {' ' * max(col - 1, 0)}^" if line else ""
        super().__init__(f"{where}: {message}{caret}")
