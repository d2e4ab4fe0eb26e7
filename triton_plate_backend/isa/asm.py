"""PLATE assembly text (.pasm) <-> Program.

One statement per line; ``;`` or ``//`` starts a comment::

    .kernel NAME                      .arg NAME TYPE                .sram BYTES
    .affinity "FOOTPRINT"             ; which bytes each program touches (isa/footprint.py)
    .tile NAME DTYPE[d0,d1] [strides(s0,s1)] @ADDR
    .loc N "file" LINE COL ["name"]   ; N = 1, 2, ... in order (.loc 0 redefines "unknown")
    LABEL: [instruction]
    MNEMONIC[.SUFFIX...] OPERAND, ... [@LOC]

Operands follow the ISA row's kinds: ``r12``, ``q3``, a tile name, a number literal, a "string",
a label, ``[r1, r2]``. Names (kernel, argument) that are not identifiers are written quoted.
`disassemble` prints the canonical form, which `assemble` reads back exactly. Number literals are
pooled by (type, bit pattern); NaNs other than ``nan``/``-nan`` print as ``nan(0xBITS)``.
``.affinity`` holds the footprint text as the affinity pass wrote it, a long one with its shared subterms
bound first (``.affinity "$0 = pid_x // arg7; ...; arg0[$13:$14]*$15; ..."``); `assemble` checks that it reads.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import numbers
import re
from dataclasses import dataclass

from ..errors import AsmError, IsaError
from ..plain_text import plain
from ..srcloc import UNKNOWN_LOC, Loc
from .encoding import bits_float, float_bits, tile_names
from .footprint import FootprintError, parse_footprints
from .program import _KIND_CODES, ARG_TYPES, Arg, Inst, Program, Tile, verify
from .table import DTYPES, ENUMS, ISA, Instr, Operand

try:
    from . import _isawalk
except ImportError:  # not built (setup.py build_ext): the disassembly walks in Python
    _isawalk = None

_TOKEN = re.compile(
    r'\s*(?:(?P<comment>;|//)|(?P<str>"(?:[^"\\\n]|\\.)*")|(?P<punct>[\[\](),:@])'
    r'|(?P<word>[^\s\[\](),:@;"/]+))'
)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.$]*")
_INT = re.compile(r"([+-]?)(0[xX][0-9a-fA-F]+|0[bB][01]+|[0-9]+)")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+(?=[eE]))(?:[eE][+-]?[0-9]+)?")
_ESCAPE = re.compile(r"\\(u\{[0-9a-fA-F]{1,6}\}|.)")
_UNESCAPE = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"'}
_QUOTE = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
# printable ASCII but " and \: deleted from a string's bytes, nothing is left of one that needs no escape
QNAN, SIGN = 0x7FF8000000000000, 1 << 63


@dataclass(frozen=True)
class _Tok:
    kind: str  # str, punct or word
    text: str
    col: int  # 1-based


@dataclass(frozen=True)
class _Ref:
    """A tile or label named before it may be declared; resolved when the whole text is read."""

    kind: str
    tok: _Tok


class _Line:
    """The tokens of one source line, with a cursor and errors that point into the line."""

    def __init__(self, number: int, text: str):
        self.number, self.text, self.toks, self.i, pos = number, text, [], 0, 0
        while (m := _TOKEN.match(text, pos)) and m.lastgroup != "comment":
            self.toks.append(_Tok(m.lastgroup, m.group(m.lastgroup), m.start(m.lastgroup) + 1))
            pos = m.end()
        rest = text[pos:].lstrip()
        if rest and not (m and m.lastgroup == "comment"):
            col = len(text) - len(rest) + 1
            raise self.error("unterminated string" if rest[0] == '"' else f"unexpected character {rest[0]!r}", col)

    def error(self, message: str, where: _Tok | int | None = None) -> AsmError:
        col = where.col if isinstance(where, _Tok) else where or len(self.text.rstrip()) + 1
        return AsmError(message, line=self.number, col=col, text=self.text)

    def peek(self, text: str | None = None) -> _Tok | None:
        tok = self.toks[self.i] if self.i < len(self.toks) else None
        return tok if tok and (text is None or (tok.kind != "str" and tok.text == text)) else None

    def next(self, kind: str, what: str) -> _Tok:
        tok = self.peek()
        if tok is None or tok.kind != kind:
            raise self.expected(what)
        self.i += 1
        return tok

    def punct(self, ch: str, what: str = "") -> None:
        if not self.peek(ch):
            raise self.expected(what or repr(ch))
        self.i += 1

    def expected(self, what: str) -> AsmError:
        tok = self.peek()
        return self.error(f"expected {what}, got {repr(tok.text) if tok else 'end of line'}", tok)

    def done(self, what: str) -> None:
        if self.i < len(self.toks):
            raise self.error(f"unexpected {self.toks[self.i].text!r}: {what}", self.toks[self.i])


def _int(text: str) -> int | None:
    m = _INT.fullmatch(text)
    if not m:
        return None
    body = m.group(2).lower()
    v = int(body, 16) if body.startswith("0x") else int(body, 2) if body.startswith("0b") else int(body)
    return -v if m.group(1) == "-" else v


class _Assembler:
    def __init__(self, machine):
        self.machine = machine
        self.nreg = machine.core.scalar_registers if machine else 1 << 16
        self.ntok = machine.core.dma_tokens if machine else 1 << 16
        self.name = self.sram = self.affinity = None
        self.args, self.tiles, self.locs, self.consts, self.instrs = [], [], [UNKNOWN_LOC], [], []
        self.const_ids: dict[tuple, int] = {}
        self.tile_ids: dict[str, int] = {}
        self.labels: dict[str, int] = {}
        self.lines: dict[tuple[str, object], _Line] = {}  # (what, key) -> line that declared it

    # ---- statements ----------------------------------------------------------------------------
    def line(self, ln: _Line) -> None:
        while len(ln.toks) >= 2 and ln.toks[0].kind == "word" and ln.toks[1].text == ":" and ln.toks[1].kind == "punct":
            tok = ln.toks[0]
            self._ident(ln, tok, "label")
            self._declare(ln, tok, "label", tok.text, self.labels)
            self.labels[tok.text] = len(self.instrs)
            ln.toks = ln.toks[2:]
        tok = ln.peek()
        if tok is None:
            return
        if tok.kind == "word" and tok.text.startswith("."):
            directive = self.DIRECTIVES.get(tok.text)
            if directive is None:
                raise ln.error(f"unknown directive {tok.text} (known: {', '.join(self.DIRECTIVES)})", tok)
            ln.i += 1
            directive(self, ln)
            ln.done(f"{tok.text} takes no more fields")
        else:
            self._instruction(ln)

    def _declare(self, ln, tok, what, key, table):
        if key in table:
            first = self.lines[(what, key)].number
            raise ln.error(f"duplicate {what} {key!r} (first declared on line {first})", tok)
        self.lines[(what, key)] = ln

    def _ident(self, ln, tok, what) -> str:
        if not _IDENT.fullmatch(tok.text):
            raise ln.error(f"{what} {tok.text!r} is not an identifier ([A-Za-z_][A-Za-z0-9_.$]*)", tok)
        return tok.text

    def _name(self, ln, what) -> str:
        tok = ln.peek()
        if tok and tok.kind == "str":
            ln.i += 1
            return _unquote(ln, tok)
        return self._ident(ln, ln.next("word", f"{what} (an identifier or a quoted string)"), what)

    def _uint(self, ln, what, signed=False) -> int:
        tok = ln.next("word", what)
        v = _int(tok.text)
        if v is None or (v < 0 and not signed):
            raise ln.error(f"expected {what} (an integer literal{'' if signed else ' >= 0'}), got {tok.text!r}", tok)
        return v

    def _once(self, ln, field, value):
        if getattr(self, field) is not None:
            raise ln.error(f"second {ln.toks[0].text} directive", ln.toks[0])
        setattr(self, field, value)

    def _kernel(self, ln):
        self._once(ln, "name", self._name(ln, "kernel name"))

    def _arg(self, ln):
        name = self._name(ln, "argument name")
        tok = ln.next("word", "an argument type")
        if tok.text not in ARG_TYPES:
            raise ln.error(f"argument type {tok.text!r} is not one of {', '.join(ARG_TYPES)}", tok)
        self.lines[("arg", len(self.args))] = ln
        self.args.append(Arg(name, tok.text))

    def _sram(self, ln):
        self._once(ln, "sram", self._uint(ln, "a byte count"))

    def _tile(self, ln):
        tok = ln.next("word", "a tile name")
        self._declare(ln, tok, "tile", self._ident(ln, tok, "tile name"), self.tile_ids)
        dtype = ln.next("word", "an element type like f32")
        if dtype.text not in DTYPES:
            raise ln.error(f"element type {dtype.text!r} is not one of {', '.join(DTYPES)}", dtype)
        ln.punct("[", "'[' and the shape, like f32[32,64]")
        shape, strides = self._ints(ln, "]", "a dimension", signed=False), None
        if ln.peek("strides"):
            ln.i += 1
            ln.punct("(")
            strides = self._ints(ln, ")", "an element stride", signed=True)
        ln.punct("@", "'@' and the SRAM byte address")
        addr = self._uint(ln, "an SRAM byte address")
        try:
            tile = Tile(addr, dtype.text, shape, strides)
        except IsaError as e:
            raise ln.error(str(e), tok) from None
        self.tile_ids[tok.text] = len(self.tiles)
        self.lines[("tile", len(self.tiles))] = ln
        self.tiles.append(tile)

    def _ints(self, ln, close, what, signed) -> tuple[int, ...]:
        out = []
        while not ln.peek(close):
            if out:
                ln.punct(",", f"',' or {close!r}")
            out.append(self._uint(ln, what, signed))
        ln.i += 1
        return tuple(out)

    def _loc(self, ln):
        first = ln.peek()
        n = self._uint(ln, "a location index")
        if n != len(self.locs) and not (n == 0 and len(self.locs) == 1 and ("loc", 0) not in self.lines):
            raise ln.error(f"expected .loc {len(self.locs)} next (indices are consecutive; .loc 0 only first)", first)
        file = _unquote(ln, ln.next("str", 'a quoted file name like "kernel.py"'))
        line, col = self._uint(ln, "a line number"), self._uint(ln, "a column number")
        name = _unquote(ln, ln.next("str", "a quoted variable name")) if ln.peek() else ""
        self.lines[("loc", n)] = ln
        self.locs[n:] = [Loc(file, line, col, name)]

    def _affinity(self, ln):
        tok = ln.next("str", "a quoted footprint text")
        text = _unquote(ln, tok)
        try:
            parse_footprints(text)
        except FootprintError as e:
            raise ln.error(str(e), tok) from None
        self._once(ln, "affinity", text)

    DIRECTIVES = {
        ".kernel": _kernel,
        ".arg": _arg,
        ".sram": _sram,
        ".tile": _tile,
        ".loc": _loc,
        ".affinity": _affinity,
    }

    # ---- instructions --------------------------------------------------------------------------
    def _instruction(self, ln):
        tok = ln.next("word", "an instruction, label or directive")
        row, suffixes = self._mnemonic(ln, tok)
        sig = f"{row.mnemonic} {', '.join(f'{od.name}:{od.kind}' for od in row.operands)}".strip()
        operands = []
        for k, od in enumerate(row.operands):
            if k:
                ln.punct(",", f"',' and operand {od.name}:{od.kind} (form: {sig})")
            operands.append(self.OPERANDS[od.kind](self, ln, od))
        loc = (0, None)
        if ln.peek("@"):
            ln.i += 1
            loc_tok = ln.peek()
            loc = (self._uint(ln, "a location index after '@'"), loc_tok)
        ln.done(f"too many operands (form: {sig} [@LOC])")
        self.instrs.append((ln, tok, row, suffixes, operands, loc))

    def _mnemonic(self, ln, tok) -> tuple[Instr, tuple[str, ...]]:
        parts = tok.text.split(".")
        for n in range(len(parts), 0, -1):
            if (row := ISA.get(".".join(parts[:n]))) is not None:
                break
        else:
            stem = ".".join(parts[:2])
            close = difflib.get_close_matches(tok.text, ISA, 3) or difflib.get_close_matches(stem, ISA, 3)
            raise ln.error(f"unknown mnemonic {tok.text!r}" + _suggest(close), tok)
        given = parts[n:]
        form = ".".join((row.mnemonic, *row.suffixes))
        if len(given) != len(row.suffixes):
            raise ln.error(f"{row.mnemonic} takes {len(row.suffixes)} suffix(es) ({form}), got {len(given)}", tok)
        col = tok.col + len(row.mnemonic) + 1
        for enum, value in zip(row.suffixes, given):
            if value not in ENUMS[enum]:
                raise ln.error(f"{value!r} is not a {enum} suffix of {form}: one of {', '.join(ENUMS[enum])}", col)
            col += len(value) + 1
        return row, tuple(given)

    def _register(self, ln, od: Operand, prefix: str, limit: int, what: str) -> int:
        tok = ln.next("word", f"{what} register like {prefix}3 for operand {od.name}")
        m = re.fullmatch(prefix + r"([0-9]+)", tok.text)
        if not m:
            raise ln.error(f"operand {od.name}: expected {what} register like {prefix}3, got {tok.text!r}", tok)
        if int(m.group(1)) >= limit:
            raise ln.error(f"register {tok.text} out of range ({prefix}0..{prefix}{limit - 1})", tok)
        return int(m.group(1))

    def _rlist(self, ln, od) -> tuple[int, ...]:
        ln.punct("[", f"'[' starting register list {od.name} (like [r1, r2] or [])")
        regs = []
        while not ln.peek("]"):
            if regs:
                ln.punct(",", "',' or ']'")
            regs.append(self._register(ln, od, "r", self.nreg, "a scalar"))
        ln.i += 1
        return tuple(regs)

    def _imm(self, ln, od) -> int:
        tok = ln.next("word", f"a number for operand {od.name}")
        v, low = _int(tok.text), tok.text.lower()
        if v is not None:
            if not -SIGN <= v < 1 << 64:
                raise ln.error(f"integer literal {tok.text} does not fit 64 bits", tok)
            return self._const(v - (1 << 64) if v >= SIGN else v)
        if low in ("nan", "+nan", "-nan"):
            bits = QNAN | (SIGN if low[0] == "-" else 0)
            if ln.peek("(") and low == "nan":
                ln.i += 1
                btok = ln.next("word", "the NaN's bit pattern like 0x7ff0000000000001")
                bits = _int(btok.text)
                if bits is None or not 0 <= bits < 1 << 64 or not math.isnan(bits_float(bits)):
                    raise ln.error(f"{btok.text!r} is not the bit pattern of a float64 NaN", btok)
                ln.punct(")")
            return self._const(bits_float(bits))
        if low in ("inf", "+inf", "-inf") or _FLOAT.fullmatch(tok.text):
            return self._const(float(tok.text))
        raise ln.error(f"bad number literal {tok.text!r} (integers: 12, -3, 0x1f; floats: 1.5, 2e-3, inf, nan)", tok)

    def _const(self, value) -> int:
        key = (type(value), float_bits(value) if isinstance(value, float) else value)
        if key not in self.const_ids:
            self.const_ids[key] = len(self.consts)
            self.consts.append(value)
        return self.const_ids[key]

    OPERANDS = {
        "r": lambda self, ln, od: self._register(ln, od, "r", self.nreg, "a scalar"),
        "q": lambda self, ln, od: self._register(ln, od, "q", self.ntok, "a DMA token"),
        "t": lambda self, ln, od: _Ref("tile", ln.next("word", f"a tile name for operand {od.name}")),
        "imm": _imm,
        "str": lambda self, ln, od: self._const(_unquote(ln, ln.next("str", f'a "string" for operand {od.name}'))),
        "label": lambda self, ln, od: _Ref("label", ln.next("word", f"a label for operand {od.name}")),
        "rlist": _rlist,
    }

    # ---- the program ---------------------------------------------------------------------------
    def program(self) -> Program:
        instrs = []
        for ln, _tok, row, suffixes, operands, (loc, loc_tok) in self.instrs:
            ops = tuple(self._resolve(ln, v) if isinstance(v, _Ref) else v for v in operands)
            if loc >= len(self.locs):
                raise ln.error(f'undefined location @{loc} (declare it with .loc {loc} "file" LINE COL)', loc_tok)
            instrs.append(Inst(row.mnemonic, suffixes, ops, loc))
        name = "kernel" if self.name is None else self.name
        program = Program(name, instrs, self.tiles, self.consts, self.locs, self.args, self.labels, self.sram or 0)
        program.affinity = self.affinity or ""
        program.tile_names = list(self.tile_ids)
        try:
            return verify(program, self.machine)
        except IsaError as e:  # point at the statement verify() names: "pc N (...)" or "tile tN ..."
            if m := re.match(r"pc (\d+)", str(e)):
                ln, tok = self.instrs[int(m.group(1))][:2]
                raise ln.error(str(e), tok) from e
            if m := re.match(r"tile t(\d+)", str(e)):
                ln = self.lines[("tile", int(m.group(1)))]
                raise ln.error(str(e), 1) from e
            raise AsmError(str(e)) from e

    def _resolve(self, ln, ref: _Ref) -> int:
        table = self.tile_ids if ref.kind == "tile" else self.labels
        if ref.tok.text not in table:
            close = difflib.get_close_matches(ref.tok.text, table)
            raise ln.error(f"undefined {ref.kind} {ref.tok.text!r}" + _suggest(close), ref.tok)
        return table[ref.tok.text]


def _suggest(names: list[str]) -> str:
    return f"; did you mean {', '.join(names)}?" if names else ""


def _unquote(ln: _Line, tok: _Tok) -> str:
    def escape(m):
        e = m.group(1)
        if e in _UNESCAPE:
            return _UNESCAPE[e]
        if e.startswith("u{") and (cp := int(e[2:-1], 16)) <= 0x10FFFF and not 0xD800 <= cp < 0xE000:
            return chr(cp)
        raise ln.error(f'bad escape \\{e} in string (use \\\\ \\" \\n \\t \\r or \\u{{hex}})', tok.col + 1 + m.start())

    return _ESCAPE.sub(escape, tok.text[1:-1])


def assemble(text: str, machine=None) -> Program:
    """.pasm text -> verified Program (against machine's bounds if given). Raises AsmError."""
    asm = _Assembler(machine)
    for number, line in enumerate(text.split("\n"), 1):
        asm.line(_Line(number, line.removesuffix("\r")))
    return asm.program()


# ---- disassembly -------------------------------------------------------------------------------
def quote(s: str) -> str:
    """A string as a .pasm literal (printable characters kept, the rest escaped)."""
    if plain(s):  # the common case (paths, footprints): one scan of the bytes, ~10x str.isprintable's
        return f'"{s}"'
    if not s.isascii() and s.isprintable() and '"' not in s and "\\" not in s:
        return f'"{s}"'
    return '"' + "".join(_QUOTE.get(c) or (c if c.isprintable() else f"\\u{{{ord(c):x}}}") for c in s) + '"'


def format_number(c) -> str:
    """A constant as a .pasm literal that reads back to the same type and bits."""
    if type(c) is int:  # (most constants: the branch below without the ABC's instance check)
        return str(c)
    if isinstance(c, numbers.Integral):
        return str(int(c))
    x = float(c)
    if math.isnan(x):
        bits = float_bits(x)
        return {QNAN: "nan", QNAN | SIGN: "-nan"}.get(bits, f"nan(0x{bits:016x})")
    return repr(x) if math.isfinite(x) else ("inf" if x > 0 else "-inf")


def _name(s: str) -> str:
    return s if _IDENT.fullmatch(s) else quote(s)


_LABEL_POSITIONS: dict[str, tuple[int, ...]] = {}  # mnemonic -> positions of its label operands


def _label_positions(mnemonic: str) -> tuple[int, ...]:
    got = _LABEL_POSITIONS.get(mnemonic)
    if got is None:
        got = _LABEL_POSITIONS[mnemonic] = tuple(i for i, od in enumerate(ISA[mnemonic].operands) if od.kind == "label")
    return got


def _label_names(program: Program) -> dict[int, list[str]]:
    """pc -> the label names printed there: the program's own, plus L<pc> for unnamed branch targets."""
    n, at = len(program.instrs), {}
    for name, pc in program.labels.items():
        if isinstance(name, str) and _IDENT.fullmatch(name) and isinstance(pc, int) and 0 <= pc <= n:
            at.setdefault(pc, []).append(name)
    taken = {name for names in at.values() for name in names}
    positions = _LABEL_POSITIONS
    targets = set()
    for ins in program.instrs:  # (the memo read inline, no call: an instruction's walk is most of this one)
        try:
            known = positions[ins.mnemonic]
        except KeyError:
            known = _label_positions(ins.mnemonic)
        if known:  # (most instructions have no label operand)
            for i in known:
                targets.add(ins.operands[i])
    for pc in sorted(targets - at.keys()):
        name = f"L{pc}"
        while name in taken:
            name += "_"
        at[pc] = [name]
        taken.add(name)
    return at


_FORMAT = {
    "r": lambda p, v: f"r{v}",
    "q": lambda p, v: f"q{v}",
    "t": lambda p, v: p["tiles"][v],
    "imm": lambda p, v: format_number(p["consts"][v]),
    "str": lambda p, v: quote(p["consts"][v]),
    "label": lambda p, v: p["labels"][v][0],
    "rlist": lambda p, v: "[" + ", ".join(f"r{r}" for r in v) + "]",
}


def _printed_tile_names(program: Program) -> list[str]:
    names = tile_names(program)
    if not names or len(set(names)) != len(names) or not all(_IDENT.fullmatch(s) for s in names):
        names = [f"t{i}" for i in range(len(program.tiles))]
    return names


def as_read_back(program: Program) -> Program:
    """The program that ``assemble(disassemble(program))`` returns, without printing and reading the text:
    the same program with the labels and tile names the text declares (what the binary records of them)."""
    return _read_back(program, _label_names(program), _printed_tile_names(program))


def _read_back(program: Program, labels: dict[int, list[str]], names: list[str]) -> Program:
    return dataclasses.replace(
        program, labels={name: pc for pc in sorted(labels) for name in labels[pc]}, tile_names=list(names)
    )


def disassemble(program: Program) -> str:
    """Program -> canonical .pasm text (tiles by their declared names if kept, else t0, t1, ...)."""
    return _disassemble(program, _label_names(program), _printed_tile_names(program))


def disassemble_read_back(program: Program) -> tuple[str, Program]:
    """(``disassemble(program)``, ``as_read_back(program)``): the label and tile names found once for both."""
    labels, names = _label_names(program), _printed_tile_names(program)
    return _disassemble(program, labels, names), _read_back(program, labels, names)


# (mnemonic, suffixes) -> (line head, %-template of its operands or None, formatters)
_LINE_FORMS: dict[tuple, tuple] = {}
_TEMPLATE_KINDS = {"r": "r%s", "q": "q%s"}  # operand kinds whose text is a prefix and the index (as _FORMAT's)


# (mnemonic, suffixes) -> (line head, its operands' kind codes): the table `_isawalk.lines` prints from
_LINE_KINDS: dict[tuple, tuple[str, bytes]] = {}


def _line_form(key: tuple, row) -> tuple:
    """How an instruction with this mnemonic and these suffixes prints, once per pair: its head, and
    either one %-template over its operands (every operand a register or token) or one formatter each."""
    kinds = [od.kind for od in row.operands]
    template = ", ".join(_TEMPLATE_KINDS[k] for k in kinds) if all(k in _TEMPLATE_KINDS for k in kinds) else None
    form = _LINE_FORMS[key] = ("    " + ".".join((key[0], *key[1])), template, [_FORMAT[k] for k in kinds])
    _LINE_KINDS[key] = (form[0], bytes(_KIND_CODES.get(k, len(_KIND_CODES)) for k in kinds))
    return form


def _disassemble(program: Program, labels: dict[int, list[str]], names: list[str]) -> str:
    ctx = {"tiles": names, "consts": program.consts, "labels": labels}
    out = [f".kernel {_name(program.name)}"] + [f".arg {_name(a.name)} {a.type}" for a in program.args]
    if program.sram_bytes not in (0, program.sram_high_water()):
        out.append(f".sram {program.sram_bytes}")
    if program.affinity:
        out.append(f".affinity {quote(program.affinity)}")
    for i, loc in enumerate(program.locs):
        if i or loc != UNKNOWN_LOC:
            out.append(f".loc {i} {quote(loc.file)} {loc.line} {loc.col} {quote(loc.name)}")
    for name, t in zip(names, program.tiles):
        strides = "" if t.is_contiguous() else f" strides({','.join(map(str, t.strides))})"
        out.append(f".tile {name} {t.dtype}[{','.join(map(str, t.shape))}]{strides} @{t.addr:#x}")
    forms, instrs = _LINE_FORMS, program.instrs
    # the loop below in C (`_isawalk.lines`) when it is built: it prints the instructions whose operands are
    # plain indices and stops at any other, which this loop prints, then it goes on
    fast = _isawalk is not None and type(instrs) is list and type(labels) is dict and type(names) is list
    fast = fast and type(program.consts) is list
    imm_texts: dict = {}
    pc, n = 0, len(instrs)
    while pc < n:
        if fast:
            pc = _isawalk.lines(
                instrs, pc, _LINE_KINDS, labels, names, program.consts, imm_texts, format_number, quote, out
            )
            if pc >= n:
                break
        ins = instrs[pc]
        if pc in labels:
            out += [f"{name}:" for name in labels[pc]]
        key = (ins.mnemonic, ins.suffixes)
        head, template, formatters = forms.get(key) or _line_form(key, ins.row)
        if template is not None and type(ins.operands) is tuple and len(ins.operands) == len(formatters):
            ops = template % ins.operands
        else:
            ops = ", ".join([f(ctx, v) for f, v in zip(formatters, ins.operands)])
        text = f"{head} {ops}" if ops else head
        out.append(f"{text}  @{ins.loc}" if ins.loc else text)
        pc += 1
    out += [f"{name}:" for name in labels.get(len(program.instrs), ())]
    return "\n".join(out) + "\n"
