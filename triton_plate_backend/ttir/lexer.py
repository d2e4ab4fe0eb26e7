"""TTIR tokens: one regular expression, run once over the whole text (`findall` keeps it fast).

Tokens are plain strings; the parser tells kinds apart by their first character. Parametric
types and attributes (`tensor<4x!tt.ptr<f32>>`, `dense<...>`, `array<i32: 0>`, `#tt<cache ca>`)
are ONE token each (balanced `<...>`, four levels deep), so types are parsed from their text and
memoised. `loc(#alias)`, the commonest location, is one token too. Anything the grammar does not
know becomes a one-character token that the parser reports with a caret. The list ends with "" "".

`tokenize` runs a compiled scan (`_ttirlex`, ttir/csrc/ttirlex.cpp, built by setup.py) on ASCII text when
it is built: the same tokens; the expression stays the reference and runs on any other text (and where the
scan declines: a `//` comment that ends the text); tests/test_compiled_lexer.py compares both.
"""

from __future__ import annotations

import re

from .errors import TtirParseError

_B = r"[^<>]*"
for _ in range(4):  # balanced <...> up to four levels of nesting, no backtracking blow-up
    _B = rf"(?:[^<>]|<{_B}>)*"

_TOKEN = re.compile(
    r"\s*(?://[^\n]*\s*)*("  # whitespace and // comments
    r"%[\w$.-]+(?:#\d+)?"  # %x, %5#1
    r"|loc\(#[\w$.-]+\)"  # loc(#loc12)
    rf"|[A-Za-z_][\w$.]*(?:<{_B}>)?"  # op names, keywords; tensor<...> dense<...> array<...>
    rf"|[!#][\w$.-]+(?:<{_B}>)?"  # !tt.ptr<...> #tt<cache ca> #loc3
    r"|\^[\w$.-]+"  # ^bb0
    r'|@[\w$.-]+|@"(?:[^"\\\n]|\\.)*"'  # @f, @"quoted"
    r'|"(?:[^"\\\n]|\\.)*"'  # "string"
    r"|[-+]?0x[0-9A-Fa-f]+|[-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?"  # numbers
    r"|->|::|[(){}\[\]<>,:=*?+|]"  # punctuation
    r"|\S)",  # anything else: reported by the parser
    re.S,
)

EOF = ""

try:  # the compiled scan (optional: without it, the expression)
    from . import _ttirlex
except ImportError:
    _ttirlex = None


def tokenize(text: str) -> list[str]:
    toks = _ttirlex.tokenize(text) if _ttirlex is not None else None
    if toks is None:
        toks = _TOKEN.findall(text)
    toks += (EOF, EOF)  # the second one lets the parser look one token past the end
    return toks


def token_position(text: str, index: int) -> tuple[int, int]:
    """(line, column), 1-based, of token `index` (the end of the text for EOF)."""
    offset = len(text.rstrip())
    for k, m in enumerate(_TOKEN.finditer(text)):
        if k == index:
            offset = m.start(1)
            break
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, col


def error_at(text: str, filename: str, index: int, message: str) -> TtirParseError:
    line, col = token_position(text, index)
    lines = text.splitlines()
    src = lines[line - 1] if 0 < line <= len(lines) else ""
    return TtirParseError(message, filename=filename, line=line, col=col, text=src)
