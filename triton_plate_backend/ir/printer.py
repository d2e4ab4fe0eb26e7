"""plate IR -> text that `ttir.parse` reads back (the `pir` stage dump, debugging, tests).

Ops print in MLIR's generic form, `%r = "tt.load"(%p, %m) {attrs} : (T, U) -> V loc(...)`, so
any op (Triton's or plate's own) prints without a per-op table; `builtin.module` and `tt.func`
print in their custom forms for readability. Names: each value keeps its SSA name when it is
valid and free in its scope; `%5#1` style group names print as `%5:2 = ...`; the rest get fresh
numbers. Floats that decimal cannot carry (inf, nan) print as MLIR hex bit patterns.

The walk over generic-form ops (`_Printer.op`, `region`, the names they bind, their attribute
dictionaries and locations) runs in C (`_irprint`, ir/csrc/irprint.cpp, built by setup.py) when it is
built: the same lines into the same objects, calling back here for the custom forms, the attribute values
other than integers, strings, units and enums' kept texts, the strings that need escapes, and the types.
`_Printer.op_py` and `region_py` stay the reference, and what runs without it
(tests/test_compiled_printer.py compares both).
"""

from __future__ import annotations

import math
import re
import struct
from typing import Any

from ..errors import PlateError
from ..plain_text import plain
from ..srcloc import Loc
from .core import (
    ArrayAttr,
    Block,
    BoolAttr,
    DenseAttr,
    EnumAttr,
    FloatAttr,
    FunctionType,
    IntAttr,
    Module,
    Op,
    Region,
    ScalarType,
    StrAttr,
    SymbolRefAttr,
    TensorType,
    Type,
    TypeAttr,
    UnitAttr,
    Value,
    element_type,
)


class IrPrintError(PlateError):
    """An IR object the printer cannot spell (an attribute value of an unknown kind)."""


_BARE_ID = re.compile(r"[A-Za-z_][\w$.]*\Z")
_SSA_ID = re.compile(r"(?:[A-Za-z_$.-][\w$.-]*|\d+)\Z")
_TYPE_LIKE = re.compile(r"(?:[su]?i\d+|f16|bf16|f32|f64|f80|f128|tf32|f[468]E\w+|index|none|true|false|unit)\Z")
_ENUM_ESCAPE = "#plate.enum<"  # read back by ttir.attrs.dialect_attr

# ---- attributes -------------------------------------------------------------------------------


def format_string(s: str) -> str:
    if plain(s):  # (one scan in C: a footprint text of 44-91 KB took 0.1-0.25 ms through a regular expression)
        return '"' + s + '"'
    out = []
    for b in s.encode("utf-8", errors="surrogateescape"):
        c = chr(b)
        if c in '"\\':
            out.append("\\" + c)
        elif 0x20 <= b < 0x7F:
            out.append(c)
        else:
            out.append(f"\\{b:02X}")
    return '"' + "".join(out) + '"'


_FLOAT_FORMATS = {"f16": ("<e", 4), "f32": ("<f", 8), "f64": ("<d", 16)}


def _float_bits(value: float, type_name: str) -> str | None:
    """MLIR's hex spelling of a float of type `type_name` (uppercase, full width)."""
    if type_name in _FLOAT_FORMATS:
        fmt, width = _FLOAT_FORMATS[type_name]
        bits = int.from_bytes(struct.pack(fmt, value), "little")
        return f"0x{bits:0{width}X}"
    if type_name == "bf16":
        bits = int.from_bytes(struct.pack("<f", value), "little") >> 16
        return f"0x{bits:04X}"
    if type_name.startswith("f8"):
        import ml_dtypes
        import numpy as np

        dtype = getattr(ml_dtypes, "float8_" + type_name[2:].lower(), None)
        if dtype is not None:
            return f"0x{int(np.array([value], dtype=dtype).view(np.uint8)[0]):02X}"
    return None


def format_float(value: float, type: Type | None, text: str = "") -> str:
    name = type.name if isinstance(type, ScalarType) else "f64"
    if text.startswith(("0x", "0X")):
        bits = _float_bits(value, name) if not math.isnan(value) else None
        if math.isnan(value) or (bits is not None and int(bits, 16) == int(text, 16)):
            return text
    if math.isfinite(value):
        r = repr(float(value))
        return r.replace("e", ".0e") if "e" in r and "." not in r else r
    bits = _float_bits(value, name)
    if bits is None:
        raise IrPrintError(f"cannot spell {value} as a {name} literal")
    return bits


def _scalar(v, elem: Type | None) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) or (isinstance(elem, ScalarType) and elem.is_float):
        return format_float(float(v), elem)
    return str(v)


def _nested(values: tuple, shape: tuple[int, ...], elem: Type) -> str:
    if len(shape) <= 1:
        return "[" + ", ".join(_scalar(v, elem) for v in values) + "]"
    step = len(values) // shape[0] if shape[0] else 0
    return "[" + ", ".join(_nested(values[k * step : (k + 1) * step], shape[1:], elem) for k in range(shape[0])) + "]"


def format_dense(a: DenseAttr) -> str:
    elem = element_type(a.type)
    if not a.values:
        body = ""
    elif a.splat:
        body = _scalar(a.values[0], elem)
    else:
        body = _nested(tuple(a.values), a.type.shape if isinstance(a.type, TensorType) else (len(a.values),), elem)
    return f"dense<{body}> : {a.type}"


def format_enum(a: EnumAttr) -> str:
    if a.text:
        return a.text
    if _BARE_ID.match(a.value) and not _TYPE_LIKE.match(a.value):
        return a.value
    quoted = format_string(a.value).replace("<", "\\3C").replace(">", "\\3E")  # keep the token's <> balanced
    return f"{_ENUM_ESCAPE}{quoted}>"


def _format_array(a: ArrayAttr) -> str:
    if a.element:
        elem = ScalarType(a.element)
        body = ", ".join(_scalar(v, elem) for v in a.values)
        return f"array<{a.element}: {body}>" if body else f"array<{a.element}>"
    return "[" + ", ".join(format_attr(v) for v in a.values) + "]"


def format_dict(d: dict) -> str:
    items = []
    for k, v in d.items():
        key = k if _BARE_ID.match(k) else format_string(k)
        items.append(key if isinstance(v, UnitAttr) else f"{key} = {format_attr(v)}")
    return "{" + ", ".join(items) + "}"


def _symbol(name: str) -> str:
    return "@" + (name if _BARE_ID.match(name) else format_string(name))


_ATTR_FORMATS = {
    IntAttr: lambda a: f"{a.value} : {a.type}" if a.type is not None else str(a.value),
    FloatAttr: lambda a: format_float(a.value, a.type, a.text) + (f" : {a.type}" if a.type is not None else ""),
    BoolAttr: lambda a: "true" if a.value else "false",
    StrAttr: lambda a: format_string(a.value),
    EnumAttr: format_enum,
    DenseAttr: format_dense,
    ArrayAttr: _format_array,
    TypeAttr: lambda a: str(a.type),
    UnitAttr: lambda a: "unit",
    SymbolRefAttr: lambda a: _symbol(a.name),
    dict: format_dict,
    bool: lambda a: "true" if a else "false",
    int: str,
    float: lambda a: format_float(a, None),
    str: format_string,
}


def format_attr(a: Any) -> str:
    fn = _ATTR_FORMATS.get(type(a))
    if fn is None:
        raise IrPrintError(f"cannot print attribute value {a!r} of type {type(a).__name__}")
    return fn(a)


def format_loc(loc: Loc) -> str:
    if loc.file:
        inner = f"{format_string(loc.file)}:{loc.line}:{loc.col}"
        return f"loc({format_string(loc.name)}({inner}))" if loc.name else f"loc({inner})"
    return f"loc({format_string(loc.name)})" if loc.name else "loc(unknown)"


def format_function_type(ins, outs) -> str:
    res = ", ".join(map(str, outs))
    if len(outs) != 1 or isinstance(outs[0], FunctionType):
        res = f"({res})"
    return f"({', '.join(map(str, ins))}) -> {res}"


# ---- names ------------------------------------------------------------------------------------


class _Names:
    """SSA names by scope: a region's names are released when it closes (siblings may reuse)."""

    def __init__(self):
        self.of: dict[int, str] = {}  # id(value) -> printed name (without %)
        self.used: set[str] = set()
        self.scopes: list[list[str]] = [[]]
        self.counter = 0

    def push(self):
        self.scopes.append([])

    def pop(self):
        for name in self.scopes.pop():
            self.used.discard(name)

    def _take(self, name: str) -> None:
        self.used.add(name)
        self.scopes[-1].append(name)

    def _fresh(self, hint: str) -> str:
        if hint and _SSA_ID.match(hint) and not hint.isdigit():
            if hint not in self.used:
                return hint
            k = 0
            while f"{hint}_{k}" in self.used:
                k += 1
            return f"{hint}_{k}"
        while str(self.counter) in self.used:
            self.counter += 1
        return str(self.counter)

    def bind(self, v: Value) -> str:
        name = v.name if v.name and _SSA_ID.match(v.name) and v.name not in self.used else self._fresh(v.name)
        self._take(name)
        self.of[id(v)] = name
        return name

    def bind_results(self, op: Op) -> str:
        """The `%a, %b = ` / `%g:2 = ` prefix of an op (empty without results)."""
        rs = op.results
        if not rs:
            return ""
        if len(rs) > 1:
            base = rs[0].name.partition("#")[0]
            if (
                base
                and _SSA_ID.match(base)
                and base not in self.used
                and all(v.name == f"{base}#{k}" for k, v in enumerate(rs))
            ):
                self._take(base)
                for k, v in enumerate(rs):
                    self._take(f"{base}#{k}")
                    self.of[id(v)] = f"{base}#{k}"
                return f"%{base}:{len(rs)} = "
        return ", ".join("%" + self.bind(v) for v in rs) + " = "

    def ref(self, v: Value) -> str:
        name = self.of.get(id(v))
        if name is None:  # a use the printer has not seen defined: invalid IR, still printable
            name = self.bind(v)
        return "%" + name


# ---- ops --------------------------------------------------------------------------------------


class _Printer:
    def __init__(self, locs: bool):
        self.locs = locs
        self.type_text: dict = {}  # the compiled walk's: id(type) -> (type, its text)
        self.lines: list[str] = []
        self.names = _Names()
        self.block_labels: dict[int, str] = {}
        self.loc_text: dict[int, str] = {}  # id(loc) -> its text (ops share their Loc objects; all live while printing)

    def _loc(self, op: Op) -> str:
        loc = op.loc
        if not self.locs or loc is None:
            return ""
        text = self.loc_text.get(id(loc))
        if text is None:
            text = self.loc_text[id(loc)] = f" {format_loc(loc)}"
        return text

    def op(self, op: Op, indent: int) -> None:
        if _irprint is not None:
            return _irprint.op(self, op, indent, self.type_text)
        return self.op_py(op, indent)

    def op_py(self, op: Op, indent: int) -> None:
        if op.name == "builtin.module":
            return self.module_op(op, indent)
        if op.name == "tt.func" and isinstance(op.attrs.get("function_type"), TypeAttr):
            return self.func(op, indent)
        head = " " * indent + self.names.bind_results(op)
        operands = ", ".join(self.names.ref(v) for v in op.operands)
        succ = "[" + ", ".join(self._block_label(b) for b in op.successors) + "]" if op.successors else ""
        self.lines.append(f'{head}"{op.name}"({operands}){succ}')
        tail = ""
        if op.regions:
            self.lines[-1] += " ("
            for k, region in enumerate(op.regions):
                self.region_py(region, indent)
                if k + 1 < len(op.regions):
                    self.lines[-1] += ", "
            tail = ")"
        attrs = f" {format_dict(op.attrs)}" if op.attrs else ""
        ftype = format_function_type([v.type for v in op.operands], [v.type for v in op.results])
        self.lines[-1] += f"{tail}{attrs} : {ftype}{self._loc(op)}"

    def region_py(self, region: Region, indent: int) -> None:
        """Appends `{` to the current line, the blocks, and a closing `}` line."""
        self.names.push()
        labels = self._label_blocks(region)
        self.lines[-1] += "{"
        for k, block in enumerate(region.blocks):
            if k > 0 or block.args:
                self._block_header(block, labels[k], indent)
            for inner in block.ops:
                self.op(inner, indent + 2)
        self.lines.append(" " * indent + "}")
        self.names.pop()

    def _label_blocks(self, region: Region) -> list[str]:
        labels = [f"^bb{k}" for k in range(len(region.blocks))]
        for block, label in zip(region.blocks, labels):
            self.block_labels[id(block)] = label
        return labels

    def _block_label(self, block: Block) -> str:
        return self.block_labels.get(id(block), "^bb_unknown")

    def _block_header(self, block: Block, label: str, indent: int) -> None:
        args = ", ".join(f"%{self.names.bind(a)}: {a.type}" for a in block.args)
        self.lines.append(" " * indent + (f"{label}({args}):" if block.args else f"{label}:"))

    def module_op(self, op: Op, indent: int) -> None:
        self.module(op.regions[0].blocks[0].ops if op.regions and op.regions[0].blocks else [], op.attrs, indent)

    def module(self, ops: list[Op], attrs: dict, indent: int = 0) -> None:
        pad = " " * indent
        extra = {k: v for k, v in attrs.items() if k != "sym_name"}
        name = f" {_symbol(attrs['sym_name'].value)}" if isinstance(attrs.get("sym_name"), StrAttr) else ""
        self.lines.append(f"{pad}module{name}{' attributes ' + format_dict(extra) if extra else ''} {{")
        outer, self.names = self.names, _Names()
        for op in ops:
            self.op(op, indent + 2)
        self.names = outer
        self.lines.append(f"{pad}}}")

    def func(self, op: Op, indent: int) -> None:
        pad = " " * indent
        attrs = dict(op.attrs)
        ftype = attrs.pop("function_type").type
        name = attrs.pop("sym_name", StrAttr("")).value
        vis = attrs.pop("sym_visibility", None)
        arg_attrs = attrs.pop("arg_attrs", ArrayAttr(())).values
        res_attrs = attrs.pop("res_attrs", ArrayAttr(())).values
        outer, self.names = self.names, _Names()
        body = op.regions[0] if op.regions else Region()
        entry = body.blocks[0] if body.blocks else None
        args = []
        for k, t in enumerate(ftype.inputs):
            extra = arg_attrs[k] if k < len(arg_attrs) and arg_attrs[k] else None
            spelled = f"%{self.names.bind(entry.args[k])}: {t}" if entry and k < len(entry.args) else str(t)
            args.append(spelled + (f" {format_dict(extra)}" if extra else ""))
        results = ""
        if ftype.results:
            rs = [
                str(t) + (f" {format_dict(res_attrs[k])}" if k < len(res_attrs) and res_attrs[k] else "")
                for k, t in enumerate(ftype.results)
            ]
            plain = len(rs) == 1 and not any(res_attrs) and not isinstance(ftype.results[0], FunctionType)
            results = " -> " + (rs[0] if plain else f"({', '.join(rs)})")
        vis_text = f"{vis.value} " if isinstance(vis, StrAttr) else ""
        head = f"{pad}tt.func {vis_text}{_symbol(name)}({', '.join(args)}){results}"
        if attrs:
            head += f" attributes {format_dict(attrs)}"
        if entry is None:
            self.lines.append(head + self._loc(op))
        else:
            self.lines.append(head + " ")
            labels = self._label_blocks(body)
            self.lines[-1] += "{"
            for k, block in enumerate(body.blocks):
                if k > 0:
                    self._block_header(block, labels[k], indent)
                for inner in block.ops:
                    self.op(inner, indent + 2)
            self.lines.append(f"{pad}}}{self._loc(op)}")
        self.names = outer


try:  # the compiled walk (optional: without it, or built from another irprint.cpp, op_py)
    from . import _irprint

    _irprint.init(
        format_dict,
        FunctionType,
        TypeAttr,
        _SSA_ID.match,
        format_attr,
        format_string,
        Loc,
        IntAttr,
        StrAttr,
        UnitAttr,
        EnumAttr,
    )
except (ImportError, TypeError):
    _irprint = None


def print_module(module: Module, *, locs: bool = True) -> str:
    """The whole module as text; `ttir.parse(print_module(m))` rebuilds an equal module."""
    p = _Printer(locs)
    p.module(module.ops, module.attrs)
    return "\n".join(p.lines) + "\n"


def print_op(op: Op, *, locs: bool = True) -> str:
    """One op (and its regions) as text, names local to this print."""
    p = _Printer(locs)
    p.op(op, 0)
    return "\n".join(p.lines)
