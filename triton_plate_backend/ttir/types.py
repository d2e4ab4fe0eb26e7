"""TTIR types from their text. A type is one token (the lexer keeps `<...>` balanced), so it is
parsed from its spelling and memoised: a kernel names the same few types thousands of times."""

from __future__ import annotations

import re

from ..ir.core import FunctionType, OpaqueType, PtrType, ScalarType, TensorDescType, TensorType, Type

# builtin scalar spellings: integers, floats (incl. every f8/f6/f4 variant), index, none
SCALAR = re.compile(r"(?:[su]?i\d+|f16|bf16|f32|f64|f80|f128|tf32|f[468]E\w+|index|none)\Z")
_DIM = re.compile(r"(\d+|\?)x")


class TypeSyntaxError(ValueError):
    """Raised inside this module; the parser turns it into a TtirParseError at the token."""


TYPE_CACHE: dict[str, Type] = {}  # spelling -> type; one object per spelling, so `is` compares


def type_from_text(text: str) -> Type:
    t = TYPE_CACHE.get(text)
    if t is None:
        t = _parse(text.strip())
        if len(TYPE_CACHE) < 100_000:
            TYPE_CACHE[text] = t
    return t


def split_top_level(body: str, sep: str = ",") -> list[str]:
    """Split on `sep` outside any <...>, (...), [...] or {...}."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(body):
        if c in "<([{":
            depth += 1
        elif c in ">)]}":
            depth -= 1
        elif c == sep and depth == 0:
            parts.append(body[start:i])
            start = i + 1
    parts.append(body[start:])
    return [p.strip() for p in parts]


def _params(text: str, prefix: str) -> str:
    if not text.endswith(">"):
        raise TypeSyntaxError(f"type {text!r} lacks its closing '>'")
    return text[len(prefix) : -1].strip()


def _tensor(text: str) -> Type:
    parts = split_top_level(_params(text, "tensor<"))
    if "?" in parts[0]:
        return OpaqueType(text)  # dynamic shapes never reach TTIR; keep the spelling
    body, encoding = parts[0], (", ".join(parts[1:]) or None)
    shape, pos = [], 0
    while m := _DIM.match(body, pos):
        shape.append(-1 if m.group(1) == "?" else int(m.group(1)))
        pos = m.end()
    element = body[pos:].strip()
    if not element:
        raise TypeSyntaxError(f"tensor type {text!r} has no element type")
    return TensorType(tuple(shape), type_from_text(element), encoding)


def _ptr(text: str) -> PtrType:
    parts = split_top_level(_params(text, "!tt.ptr<"))
    if len(parts) > 2 or not parts[0]:
        raise TypeSyntaxError(f"pointer type {text!r} is not !tt.ptr<T> or !tt.ptr<T, N>")
    space = 1
    if len(parts) == 2:
        if not parts[1].isdigit():
            raise TypeSyntaxError(f"pointer address space {parts[1]!r} is not an integer")
        space = int(parts[1])
    return PtrType(type_from_text(parts[0]), space)


def _tensordesc(text: str) -> TensorDescType:
    block = type_from_text(_params(text, "!tt.tensordesc<"))
    if not isinstance(block, TensorType):
        raise TypeSyntaxError(f"tensor descriptor {text!r} must wrap a tensor type")
    return TensorDescType(block)


_PARAMETRIC = {"tensor<": _tensor, "!tt.ptr<": _ptr, "!tt.tensordesc<": _tensordesc}


def _parse(text: str) -> Type:
    if SCALAR.match(text):
        return ScalarType(text)
    for prefix, fn in _PARAMETRIC.items():
        if text.startswith(prefix):
            return fn(text)
    if text[:1] == "!" or re.match(r"[A-Za-z_][\w.]*<", text):
        return OpaqueType(text)  # a type plate does not model (vector<>, !ttg.memdesc<>, ...)
    raise TypeSyntaxError(f"expected a type, found {text!r}")


# ---- types in the token stream (bound as Parser methods: p.type(), p.type_list(), ...) ----------


def parse_type(p) -> Type:
    tok = p.toks[p.i]
    t = TYPE_CACHE.get(tok)
    if t is not None:
        p.i += 1
        return t
    if tok == "(":
        return p.function_type()
    if tok == "<":
        raise p.error("expected a type, found '<' (a dialect type without its '!dialect.name' prefix)")
    if not (tok[:1] == "!" or SCALAR.match(tok) or (tok[:1].isalpha() and tok.endswith(">"))):
        raise p.error(f"expected a type, found '{tok or 'end of input'}'")
    p.i += 1
    try:
        return type_from_text(tok)
    except TypeSyntaxError as e:
        raise p.error(str(e), p.i - 1) from None


def parse_elided_type(p, prefix: str) -> Type:
    """A dialect type printed without its prefix (`<f16>` for `!tt.ptr<f16>`), or in full."""
    if p.toks[p.i] != "<":
        return p.type()
    start, depth, parts = p.i, 0, []
    while True:
        tok = p.next()
        depth += (tok == "<") - (tok == ">")
        parts.append(tok)
        if depth == 0:
            break
    try:
        return type_from_text(prefix + "".join(parts))
    except TypeSyntaxError as e:
        raise p.error(str(e), start) from None


def parse_type_list(p) -> list[Type]:
    out = [p.type()]
    while p.accept(","):
        out.append(p.type())
    return out


def parse_paren_types(p) -> list[Type]:
    p.expect("(")
    if p.accept(")"):
        return []
    out = p.type_list()
    p.expect(")")
    return out


def parse_result_types(p) -> list[Type]:
    """After `->`: one type, or `(T, U)`, or `()`."""
    if p.toks[p.i] == "(":
        return p.paren_types()
    return [p.type()]


def parse_function_type(p) -> FunctionType:
    ins = p.paren_types()
    p.expect("->", "in a function type")
    return FunctionType(tuple(ins), tuple(p.result_types()))
