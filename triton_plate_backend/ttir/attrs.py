"""TTIR attribute values -> ir.core attribute records.

Numbers: `16 : i32` (IntAttr), `1.5 : f32` (FloatAttr), `0xFF800000 : f32` (a float's bit
pattern, decoded exactly: -inf), bare `3` (IntAttr, type None). `true`/`false` (BoolAttr),
`"..."` with MLIR escapes (StrAttr), `dense<...> : type` (DenseAttr, values flattened),
`array<i32: 0, 1>` and `[a, b]` (ArrayAttr), `{k = v}` (a plain dict), `@f` (SymbolRefAttr),
types (TypeAttr), `#tt<cache ca>` and bare keywords (EnumAttr), `unit` (UnitAttr).
"""

from __future__ import annotations

import math
import re
import struct

from ..ir.core import (
    ArrayAttr,
    BoolAttr,
    DenseAttr,
    EnumAttr,
    FloatAttr,
    IntAttr,
    ScalarType,
    StrAttr,
    SymbolRefAttr,
    TensorType,
    Type,
    TypeAttr,
    UnitAttr,
    element_type,
)
from .lexer import tokenize
from .types import SCALAR, TypeSyntaxError

# printer-side spelling for a keyword enum whose value would read back as something else
# (`tf32` is also a type, `true` a bool): `#plate.enum<"tf32">`
ENUM_ESCAPE = "#plate.enum<"

_NUMBER = re.compile(r"[-+]?(?:0x[0-9A-Fa-f]+|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)\Z")


class AttrSyntaxError(ValueError):
    """Raised inside this module; the parser turns it into a TtirParseError at the token."""


# ---- strings --------------------------------------------------------------------------------

_ESCAPES = {'"': b'"', "\\": b"\\", "n": b"\n", "t": b"\t"}


def decode_string(tok: str) -> str:
    body = tok[1:-1]
    if "\\" not in body:
        return body
    out, i = bytearray(), 0
    while i < len(body):
        j = body.find("\\", i)
        if j < 0:
            out += body[i:].encode()
            break
        out += body[i:j].encode()
        nxt = body[j + 1 : j + 2]
        if nxt in _ESCAPES:
            out += _ESCAPES[nxt]
            i = j + 2
        elif re.fullmatch(r"[0-9A-Fa-f]{2}", body[j + 1 : j + 3]):
            out.append(int(body[j + 1 : j + 3], 16))
            i = j + 3
        else:
            raise AttrSyntaxError(f"unknown escape '\\{nxt}' in string {tok}")
    return out.decode("utf-8", errors="surrogateescape")


# ---- numbers --------------------------------------------------------------------------------


def float_from_bits(bits: int, type_name: str) -> float:
    """The value of a float type's bit pattern (how MLIR prints inf/nan: `0xFF800000`)."""
    try:
        if type_name == "f32":
            return struct.unpack("<f", bits.to_bytes(4, "little"))[0]
        if type_name == "f64":
            return struct.unpack("<d", bits.to_bytes(8, "little"))[0]
        if type_name == "f16":
            return struct.unpack("<e", bits.to_bytes(2, "little"))[0]
        if type_name == "bf16":
            return struct.unpack("<f", (bits << 16).to_bytes(4, "little"))[0]
        if type_name.startswith("f8"):
            import numpy as np

            from ..dtypes import ml_dtypes

            dtype = getattr(ml_dtypes(), "float8_" + type_name[2:].lower(), None)
            if dtype is not None:
                return float(np.array([bits], dtype=np.uint8).view(dtype)[0])
    except OverflowError:
        raise AttrSyntaxError(f"hex literal 0x{bits:X} has too many bits for {type_name}") from None
    raise AttrSyntaxError(f"cannot decode a hex float literal for type {type_name}")


def number(tok: str, type: Type | None):
    """An int/float literal as the Python value its type implies."""
    if not _NUMBER.match(tok):
        raise AttrSyntaxError(f"expected a number, found {tok!r}")
    is_hex = "x" in tok
    name = type.name if isinstance(type, ScalarType) else ""
    if isinstance(type, ScalarType) and type.is_float:
        if is_hex:
            if tok[0] in "+-":
                raise AttrSyntaxError(f"hex float literal {tok} cannot carry a sign")
            return float_from_bits(int(tok, 16), name)
        return float(tok)
    if is_hex:
        return int(tok, 16)
    if "." in tok or "e" in tok or "E" in tok:
        if type is not None and name not in ("", "index"):
            raise AttrSyntaxError(f"float literal {tok} for integer type {type}")
        return float(tok)
    return int(tok)


def number_attr(tok: str, type: Type | None):
    value = number(tok, type)
    if isinstance(value, float):
        return FloatAttr(value, type, tok if "x" in tok else "")
    if isinstance(type, ScalarType) and type.name == "i1":
        return BoolAttr(bool(value))
    return IntAttr(value, type)


# ---- dense<...> -----------------------------------------------------------------------------


def _element(tok: str, elem: Type):
    if tok in ("true", "false"):
        return tok == "true"
    value = number(tok, elem)
    if isinstance(elem, ScalarType) and elem.name == "i1":
        return bool(value)
    return value


def _raw_hex(text: str, elem: Type, count: int) -> tuple[tuple, bool]:
    import numpy as np

    from ..dtypes import NUMPY

    dtype = NUMPY.get(elem.name.lower() if isinstance(elem, ScalarType) else "")
    if dtype is None:
        raise AttrSyntaxError(f"raw hex dense data for element type {elem} is not supported")
    data = np.frombuffer(bytes.fromhex(text[2:]), dtype=dtype)
    splat = data.size == 1 and count != 1
    return tuple(v.item() for v in data), splat


def dense_attr(tok: str, type: Type) -> DenseAttr:
    """`dense<...>` (the whole token) once its `: type` is known."""
    body = tok[len("dense<") : -1].strip()
    elem = element_type(type)
    count = math.prod(type.shape) if isinstance(type, TensorType) else 1
    if not body:
        return DenseAttr((), type, splat=False)
    if body[0] == '"':
        values, splat = _raw_hex(decode_string(body), elem, count)
        return DenseAttr(values, type, splat=splat)
    if body[0] != "[":
        return DenseAttr((_element(body, elem),), type, splat=True)
    values, depth = [], 0
    for t in filter(None, tokenize(body)):
        if t == "[":
            depth += 1
        elif t == "]":
            depth -= 1
        elif t != ",":
            values.append(_element(t, elem))
        if depth < 0:
            raise AttrSyntaxError(f"unbalanced brackets in {tok}")
    if depth:
        raise AttrSyntaxError(f"unbalanced brackets in {tok}")
    if len(values) != count:
        raise AttrSyntaxError(f"{tok} has {len(values)} elements, {type} needs {count}")
    return DenseAttr(tuple(values), type, splat=False)


# ---- array<i32: ...> and dialect enums ------------------------------------------------------


def array_attr(tok: str) -> ArrayAttr:
    body = tok[len("array<") : -1]
    elem, _, rest = body.partition(":")
    elem = elem.strip()
    type = ScalarType(elem) if SCALAR.match(elem) else None
    values = tuple(_element(t, type) for t in tokenize(rest) if t and t != ",")
    return ArrayAttr(values, elem)


def dialect_attr(tok: str) -> EnumAttr:
    """`#tt<cache ca>`, `#arith.fastmath<fast>`: the enum keyword is the last word inside."""
    if tok.startswith(ENUM_ESCAPE):
        return EnumAttr(decode_string(tok[len(ENUM_ESCAPE) : -1].strip()))
    inner = tok[tok.index("<") + 1 : -1].strip()
    words = inner.replace(",", " ").split()
    return EnumAttr(words[-1] if words else inner, tok)


KEYWORD_VALUES = {"true": BoolAttr(True), "false": BoolAttr(False), "unit": UnitAttr()}


def keyword_attr(tok: str):
    """A bare identifier in attribute position: bool, unit, a builtin type, else an enum keyword."""
    if tok in KEYWORD_VALUES:
        return KEYWORD_VALUES[tok]
    if SCALAR.match(tok):
        return TypeAttr(ScalarType(tok))
    return EnumAttr(tok)


def symbol(tok: str) -> SymbolRefAttr:
    return SymbolRefAttr(decode_string(tok[1:]) if tok[1:2] == '"' else tok[1:])


# ---- attributes in the token stream (bound as Parser methods: p.attr(), p.attr_dict()) ----------


def parse_attr(p):
    tok = p.toks[p.i]
    c = tok[:1]
    start = p.i
    try:
        if c and (c.isdigit() or c in "-+"):
            p.i += 1
            type = p.type() if p.accept(":") else None
            return number_attr(tok, type)
        if c == '"':
            return StrAttr(p.string())
        if tok.startswith("dense<"):
            p.i += 1
            p.expect(":", "after dense<...> (its type)")
            return dense_attr(tok, p.type())
        if tok.startswith("array<"):
            p.i += 1
            return array_attr(tok)
        if c == "[":
            p.i += 1
            items = []
            if not p.accept("]"):
                items.append(p.attr())
                while p.accept(","):
                    items.append(p.attr())
                p.expect("]")
            return ArrayAttr(tuple(items))
        if c == "{":
            return p.attr_dict({})
        if c == "@":
            p.i += 1
            return symbol(tok)
        if c == "#":
            p.i += 1
            if "<" in tok:
                return dialect_attr(tok)
            if tok[1:] in p.attr_aliases:
                return p.attr_aliases[tok[1:]]
            raise p.error(f"unknown attribute alias '{tok}'", start)
        if c == "(" or c == "!" or (tok.endswith(">") and c.isalpha()):
            return TypeAttr(p.type())
        if c.isalpha() or c == "_":
            p.i += 1
            return keyword_attr(tok)
    except (AttrSyntaxError, TypeSyntaxError) as e:
        raise p.error(str(e), start) from None
    raise p.error(f"expected an attribute value, found '{tok or 'end of input'}'")


def parse_attr_dict(p, into: dict) -> dict:
    """`{name = value, unit_name, "quoted" = value}` merged into `into` (no-op without '{')."""
    if not p.accept("{"):
        return into
    if p.accept("}"):
        return into
    while True:
        tok = p.toks[p.i]
        if tok[:1] == '"':
            name = p.string()
        else:
            name = p.keyword("an attribute name")
        into[name] = p.attr() if p.accept("=") else UnitAttr()
        if not p.accept(","):
            break
    p.expect("}", "to close the attribute dictionary")
    return into
