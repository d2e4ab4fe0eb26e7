"""A kernel's footprint: which bytes of each pointer argument one program touches, in its program ids.

The compiler's affinity pass (passes/affinity.py) writes it; the launch (sim/affinity.py) evaluates
it for every program of the grid with the actual argument values and the home domains of the
memory behind them, and maps each program to a core of the domain that homes most of its bytes.
It travels with the kernel through every stage as one line of text: the ``plate.affinity``
attribute of the pir's ``tt.func``, the pasm's ``.affinity`` directive, the pbin's affinity section.

The text is ``; ``-separated entries, each ``argK[LO:HI]*BYTES``: program p touches bytes
[argK + LO, argK + HI) of the memory pointer argument K (Program.args index) points into, moving
BYTES bytes through them (a strided tile moves fewer bytes than its span; the launch spreads them
over the span's home domains in proportion). ``argK[:]*BYTES``: BYTES somewhere in that memory (a
gather or an atomic: the addresses are data); ``any[:]*BYTES``: somewhere in device memory. Those
count as work spread over the domains, and steer no program. LO, HI and BYTES are integer expressions (Python
syntax: ``+ - * // %``, ``min(a, b)``, ``max(a, b)``, integer literals) over ``pid_x``, ``pid_y``,
``pid_z`` (the program's ids), ``nprog_x``... (the grid) and ``argK`` (integer arguments). A text
that starts with ``none`` says the analysis cannot tell, and why: the launch keeps the default
grid -> core mapping.

Shared subterms: before the entries, the text may bind expressions to numbered references,
``$0 = EXPR; $1 = EXPR; ...; argK[LO:HI]*BYTES; ...``, each ``$K`` defined once, in order from 0, by
an expression over the names above and the references defined before it; an expression after its
definition may use ``$K`` as an atom (its value). The affinity pass binds each subterm that more
than one place uses and whose text is long enough to pay for its name (``share_footprints``): the
persistent rewrite's program-range mapping is one such subterm used hundreds of times. A text
without definitions reads as before. ``Footprint.defs`` is the definitions part of the text its
entry came from ("" when none); ``evaluate`` takes it to read an expression that names ``$K``.
"""

from __future__ import annotations

import ast
import bisect
import functools
import re
import threading
from dataclasses import dataclass

import numpy as np

from ..errors import PlateError

UNKNOWN = "none"  # prefix of a footprint text that describes no ranges
ANY = "any"  # the name of memory no pointer argument reaches (a pointer made from an integer, ...)
AXES = ("x", "y", "z")


class FootprintError(PlateError, ValueError):
    """A footprint text that does not parse, or names an argument the kernel does not have."""


@dataclass(frozen=True)
class Footprint:
    """One pointer argument's byte range per program (the texts are expressions, see the module docstring)."""

    arg: int  # -1: ``any``
    lo: str | None  # None (with hi): somewhere in the whole allocation (a gather, an atomic)
    hi: str | None
    nbytes: str
    defs: str = ""  # the definitions of its text, ``$0 = ...; $1 = ...`` (module docstring), which LO, HI, BYTES name

    def __str__(self) -> str:
        bare = self.nbytes.isdigit() or self.nbytes[:1] == "$" and self.nbytes[1:].isdigit()  # a literal, a $K
        nbytes = self.nbytes if bare else f"({self.nbytes})"
        where = ":" if self.lo is None else f"{self.lo}:{self.hi}"
        return f"{ANY if self.arg < 0 else f'arg{self.arg}'}[{where}]*{nbytes}"


def unknown(reason: str) -> str:
    """The footprint text of a kernel the analysis cannot describe."""
    return f"{UNKNOWN} ({reason})"


def format_footprints(footprints) -> str:
    """The text of the entries as they are (the definitions of the first one's text before them, if any)."""
    footprints = list(footprints)
    defs = footprints[0].defs if footprints else ""
    return "; ".join(([defs] if defs else []) + [str(f) for f in footprints])


SHARE_ABOVE = 1024  # characters: a shorter text is written as its entries are (nothing bound)


def share_footprints(footprints, tree=None) -> str:
    """The footprint text of entries whose LO, HI, BYTES are self-contained expression texts (no ``$K``),
    with each subterm that several places use, and whose text is long enough to pay for a name, bound to
    a ``$K`` (the module docstring). ``tree``: text -> its expression tree (an ``ast`` node, as
    ``ast.parse(text, mode="eval").body`` gives it; a caller that built the texts may hand out trees it
    keeps, whose subtrees it shares: each shared subtree object is walked once). Equal subterms are one
    term, so the values are those of the entries' own texts; a text with nothing worth binding is
    ``format_footprints``' text, and so is a text of up to ``SHARE_ABOVE`` characters (a kernel without the
    persistent rewrite's mapping: its entries as a reader writes them)."""
    footprints = list(footprints)
    if any(fp.defs for fp in footprints):
        raise FootprintError("share_footprints takes self-contained entries (no $K definitions)")
    plain = format_footprints(footprints)
    if len(plain) <= SHARE_ABOVE:
        return plain
    tree = tree or _tree_of
    dag = _Dag(texts=False)
    seen: dict[int, int] = {}
    keep = []  # the trees walked, alive while `seen` holds their ids
    fields = []  # per entry: its DAG roots, [LO, HI, BYTES] or [BYTES]
    for fp in footprints:
        texts = [fp.nbytes] if fp.lo is None else [fp.lo, fp.hi, fp.nbytes]
        roots = []
        for t in texts:
            node = tree(t)
            keep.append(node)
            root = dag.add(node, seen)
            if root is None:
                _check(ast.Expression(node), t)
                raise FootprintError(f"footprint expression {t!r}: not an integer expression")
            roots.append(root)
        fields.append(roots)
    nodes, n = dag.nodes, len(dag.nodes)
    uses = [0] * n
    for kind, a, b in nodes:
        if kind != "c" and kind != "n":
            uses[a] += 1
            if b is not None:
                uses[b] += 1
    for roots in fields:
        for r in roots:
            uses[r] += 1
    text: list[str] = [""] * n  # each node's text, its bound operands named
    ref: list[str | None] = [None] * n  # a bound node's $K
    prec = dag.prec
    defs = []

    def operand(i: int, need: int) -> str:
        return ref[i] or (f"({text[i]})" if need > prec[i] else text[i])

    for i, (kind, a, b) in enumerate(nodes):  # operands come before the nodes that use them
        if kind == "c":
            text[i] = repr(a)
            continue
        if kind == "n":
            text[i] = a
            continue
        if kind == "-":
            t = f"-{operand(a, _FACTOR)}"
        elif kind in _CALLS:
            t = f"{kind}({ref[a] or text[a]}, {ref[b] or text[b]})"
        else:
            p = _PRECEDENCE[kind]
            t = f"{operand(a, p)} {_SYMBOL[kind]} {operand(b, p + 1)}"
        text[i] = t
        u = uses[i]
        name = f"${len(defs)}"
        if u > 1 and (u - 1) * len(t) > len(name) + 5 + u * len(name):  # written once plus names: shorter
            ref[i] = name
            defs.append(f"{name} = {t}")
    if not defs:
        return plain
    entries, read = [], []
    shared = "; ".join(defs)
    for fp, roots in zip(footprints, fields):
        head = ANY if fp.arg < 0 else f"arg{fp.arg}"
        parts = [ref[r] or text[r] for r in roots]  # each part's text, as the reader of the text gives it
        nbytes = parts[-1] if ref[roots[-1]] or parts[-1].isdigit() else f"({parts[-1]})"
        entries.append(f"{head}[{':' if fp.lo is None else f'{parts[0]}:{parts[1]}'}]*{nbytes}")
        read.append(Footprint(fp.arg, *((None, None) if fp.lo is None else parts[:2]), parts[-1], shared))
        for t, r in zip(parts, roots):
            _remember((shared, t), dag, r)
    out = "; ".join(defs + entries)
    if len(_WRITTEN) >= _WRITTEN_KEEP:
        _WRITTEN.clear()
    _WRITTEN[out] = tuple(read)
    return out


# text -> its entries, for the texts share_footprints wrote: this process reads them without reading the text (a
# compile's pasm read-back, its first launch); what the reader gives (tests/unit/test_footprint_shared.py), on
# this DAG, which `evaluate` reads through _PARSED
_WRITTEN: dict[str, tuple[Footprint, ...]] = {}
_WRITTEN_KEEP = 64


def _tree_of(text: str) -> ast.expr:
    try:
        return ast.parse(text, mode="eval").body
    except SyntaxError:
        raise FootprintError(f"footprint expression {text!r} does not parse") from None


_BINOPS = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply, ast.FloorDiv: np.floor_divide, ast.Mod: np.mod}
_CALLS = {"min": np.minimum, "max": np.maximum}


def _check(node: ast.AST, text: str) -> None:
    """Only the expression forms the module docstring names."""
    for n in ast.walk(node):
        ok = isinstance(n, (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Name, ast.Load, ast.USub, ast.Call))
        ok = ok or type(n) in _BINOPS or (isinstance(n, ast.Constant) and type(n.value) is int)
        if isinstance(n, ast.Call):
            ok = isinstance(n.func, ast.Name) and n.func.id in _CALLS and len(n.args) == 2 and not n.keywords
        if isinstance(n, ast.Name):
            ok = _allowed_name(n.id)
        if not ok:
            raise FootprintError(
                f"footprint expression {text!r}: {type(n).__name__} is not allowed (integers, names, + - * // %, "
                "min, max)"
            )


def parse_footprints(text: str) -> list[Footprint] | None:
    """The entries of a footprint text; None for an empty or ``none ...`` text (the analysis could not tell)."""
    parsed = _parse_footprints(text or "")
    return list(parsed) if parsed is not None else None


@functools.lru_cache(maxsize=256)  # every launch of a kernel reads the same text
def _parse_footprints(text: str) -> tuple[Footprint, ...] | None:
    text = text.strip()
    if not text or text.startswith(UNKNOWN):
        return None
    if text.startswith("$"):
        written = _WRITTEN.get(text)
        return written if written is not None else _read_shared(text)
    with _SHARED_LOCK:
        return _read_footprints(text, _shared_dag())


def _shared_dag() -> _Dag:
    """The DAG every text is read into, until it grows past _SHARED_KEEP (then a fresh one): the texts of one
    kernel's variants (other constexprs, other specializations) repeat their terms too. A node's text and a
    parenthesised term's node depend on nothing but the term, so the sharing changes no result."""
    global _SHARED
    if _SHARED is None or len(_SHARED.nodes) > _SHARED_KEEP or _SHARED.read_chars > 64 * _SHARED_KEEP:
        _SHARED = _Dag()
    return _SHARED


_SHARED: _Dag | None = None
_SHARED_KEEP = 1 << 16  # nodes (and 64 characters of parenthesised terms' texts per node)
_SHARED_LOCK = threading.Lock()  # a launch may read while another thread compiles


def _read_footprints(text: str, dag: _Dag) -> tuple[Footprint, ...]:
    out = []  # dag: the entries' expressions repeat subterms: each is read, checked, printed and evaluated once
    for entry in text.split(";"):
        entry = entry.strip()
        m = _LITERAL_ENTRY.fullmatch(entry)
        if m is not None:  # the texts are the literals as written; `evaluate` reads a literal itself
            arg, lo, hi, any_, nbytes = m.groups()
            out.append(Footprint(-1 if any_ else int(arg[3:]), lo, hi, nbytes))
            continue
        read = _Reader(entry, dag).entry()  # None: a form it does not read; Python's parser decides
        name, roots = read if read is not None else _parse_entry(entry, dag)
        whole = len(roots) == 1
        texts = [dag.text[root] for root in roots]  # as ast.unparse prints them
        for t, root in zip(texts, roots):
            _remember(t, dag, root)
        lo, hi = (None, None) if whole else texts[:2]
        out.append(Footprint(-1 if name == ANY else int(name[3:]), lo, hi, texts[-1]))
    return tuple(out)


_DEF = re.compile(r"\$(0|[1-9][0-9]*) = ")
_REF = re.compile(r"\$([0-9]+)")
_REF_NAME = re.compile(r"__ref([0-9]+)")  # a $K as Python's parser reads it


def _read_shared(text: str) -> tuple[Footprint, ...]:
    """The entries of a text with definitions (the module docstring), read into a DAG of its own: a ``$K``
    is the node of its definition. Each entry's LO, HI, BYTES are its texts as written (naming ``$K``s),
    which ``evaluate`` reads with the entry's ``defs``."""
    dag = _Dag(texts=False)
    parts = [p.strip() for p in text.split(";")]
    refs, k = _read_definitions(parts, dag)
    if k == len(parts):
        raise FootprintError(f"footprint text {text[:80]!r}...: definitions and no entry")
    defs = "; ".join(parts[:k])
    out = []
    for entry in parts[k:]:
        m = _LITERAL_ENTRY.fullmatch(entry)
        if m is not None:
            arg, lo, hi, any_, nbytes = m.groups()
            out.append(Footprint(-1 if any_ else int(arg[3:]), lo, hi, nbytes, defs))
            continue
        reader = _Reader(entry, dag, refs)
        read = reader.entry()
        if read is not None:
            name, roots = read
            texts = [entry[a:b].strip(" \t") for a, b in reader.spans]
        else:  # Python's parser, a $K read as a name that stands for its node
            name, roots = _parse_entry(_REF.sub(r"__ref\1", entry), dag, _ref_names(refs), entry)
            texts = _entry_texts(entry)
        for t, root in zip(texts, roots):
            _remember((defs, t), dag, root)
        lo, hi = (None, None) if len(roots) == 1 else texts[:2]
        out.append(Footprint(-1 if name == ANY else int(name[3:]), lo, hi, texts[-1], defs))
    return tuple(out)


def _read_definitions(parts: list[str], dag: _Dag) -> tuple[list[int], int]:
    """(the node of each ``$K``, how many of `parts` are definitions) of a text's parts, in order."""
    refs: list[int] = []
    k = 0
    while k < len(parts) and parts[k].startswith("$"):
        part = parts[k]
        m = _DEF.match(part)
        if m is None or int(m.group(1)) != len(refs):
            raise FootprintError(f"footprint definition {part[:80]!r}: expected ${len(refs)} = EXPR")
        refs.append(_read_expression(part, m.end(), dag, refs))
        k += 1
    return refs, k


def _ref_names(refs: list[int]) -> dict[str, int]:
    return {f"__ref{k}": node for k, node in enumerate(refs)}


def _read_expression(text: str, start: int, dag: _Dag, refs: list[int]) -> int:
    """The node of the expression text[start:] (the reader, else Python's parser), its ``$K``s those of refs."""
    reader = _Reader(text, dag, refs)
    reader.pos = start
    try:
        node = reader.expr()
        if text[reader.pos :].strip(" \t"):
            raise _Unread
        return node
    except _Unread:
        pass
    source = _REF.sub(r"__ref\1", text[start:]).strip()
    try:
        tree = ast.parse(source, mode="eval").body
    except SyntaxError:
        raise FootprintError(f"footprint expression {text[start:][:80]!r} does not parse") from None
    node = dag.add(tree, None, _ref_names(refs))
    if node is None:
        _check(ast.Expression(tree), text[start:])
        raise FootprintError(f"footprint expression {text[start:][:80]!r}: not an integer expression")
    return node


def _entry_texts(entry: str) -> list[str]:
    """The LO, HI, BYTES (or BYTES) source texts of an entry Python's parser read (as it reads them)."""
    node = ast.parse(_REF.sub(r"__ref\1", entry), mode="eval").body
    sl = node.left.slice
    parts = [node.right] if sl.lower is None else [sl.lower, sl.upper, node.right]
    return [_REF_NAME.sub(r"$\1", ast.unparse(p)) for p in parts]


def _parse_entry(entry: str, dag: _Dag, refs: dict | None = None, shown: str | None = None) -> tuple[str, list[int]]:
    """(argument name, DAG nodes of [LO, HI, BYTES] or [BYTES]) of an entry, read by Python's parser. `refs`:
    names that stand for nodes (a text's definitions); `shown`: the entry as the error messages name it."""
    shown = entry if shown is None else shown
    try:
        node = ast.parse(entry, mode="eval").body
    except SyntaxError:
        node = None
    sl = node.left.slice if isinstance(node, ast.BinOp) and isinstance(node.left, ast.Subscript) else None
    name = node.left.value.id if sl is not None and isinstance(node.left.value, ast.Name) else ""
    whole = isinstance(sl, ast.Slice) and sl.lower is None and sl.upper is None
    if not (
        sl is not None
        and isinstance(node.op, ast.Mult)
        and (name[:3] == "arg" and name[3:].isdigit() or name == ANY and whole)
        and isinstance(sl, ast.Slice)
        and sl.step is None
        and (whole or sl.lower is not None and sl.upper is not None)
    ):
        forms = "argK[LO:HI]*BYTES, argK[:]*BYTES or any[:]*BYTES"
        raise FootprintError(f"footprint entry {shown!r}: expected {forms}")
    roots = []
    for p in [node.right] if whole else [sl.lower, sl.upper, node.right]:
        root = dag.add(p, None, refs)
        if root is None:  # a form the grammar does not allow: the walk names it
            _check(ast.Expression(p), shown)
            raise FootprintError(f"footprint entry {shown!r}: not an integer expression")
        roots.append(root)
    return name, roots


# ---- the expressions as a DAG: equal subterms once ---------------------------------------------------
# A node is (kind, a, b): ("c", value, None) a constant, ("n", name, None) a name, ("-", i, None) a negation,
# ("min"/"max", i, j) a call, (ast operator class, i, j) a binary operation; i, j index earlier nodes.

_ARITH, _TERM, _FACTOR, _ATOM = 1, 2, 3, 9  # in the order of ast._Precedence's ARITH, TERM, FACTOR, ATOM
_SYMBOL = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%"}
_SYMBOL_OP = {symbol: op for op, symbol in _SYMBOL.items()}
_PRECEDENCE = {ast.Add: _ARITH, ast.Sub: _ARITH, ast.Mult: _TERM, ast.FloorDiv: _TERM, ast.Mod: _TERM}


class _Dag:
    """Hash-consed expression nodes, each with the text ast.unparse gives it and its precedence."""

    def __init__(self, texts: bool = True):
        self.texts = texts  # False: no node's text is made (a writer prints the nodes its own way)
        self.nodes: list[tuple] = []
        self.text: list[str] = []
        self.prec: list[int] = []
        self.index: dict[tuple, int] = {}
        self.read: dict[str, int] = {}  # a parenthesised term's source text -> its node (_Reader)
        self.read_chars = 0  # the length of those texts, together

    def _node(self, key: tuple, text: str, prec: int) -> int:
        i = self.index.get(key)
        if i is None:
            i = self.index[key] = len(self.nodes)
            self.nodes.append(key)
            self.text.append(text)
            self.prec.append(prec)
        return i

    def _operand(self, i: int, need: int) -> str:
        return f"({self.text[i]})" if need > self.prec[i] else self.text[i]

    def binop(self, op: type, a: int, b: int) -> int:
        i = self.index.get((op, a, b))
        if i is not None:  # printed before
            return i
        prec = _PRECEDENCE[op]
        text = f"{self._operand(a, prec)} {_SYMBOL[op]} {self._operand(b, prec + 1)}" if self.texts else ""
        return self._node((op, a, b), text, prec)

    def name(self, name: str) -> int:
        return self._node(("n", name, None), name, _ATOM)

    def const(self, value: int) -> int:
        return self._node(("c", value, None), repr(value), _ATOM)

    def call(self, f: str, a: int, b: int) -> int:
        i = self.index.get((f, a, b))
        if i is not None:
            return i
        return self._node((f, a, b), f"{f}({self.text[a]}, {self.text[b]})" if self.texts else "", _ATOM)

    def neg(self, a: int) -> int:
        return self._node(("-", a, None), f"-{self._operand(a, _FACTOR)}" if self.texts else "", _FACTOR)

    def add(self, n: ast.AST, seen: dict | None = None, refs: dict | None = None) -> int | None:
        """The node of an expression `_check` accepts; None for any other. `seen`: id(subtree) -> its node,
        kept by a caller whose trees share subtree objects (each is walked once; the caller keeps the trees
        alive). `refs`: a name -> the node it stands for (a definition's, ``$K`` read as a name)."""
        if seen is None:
            return self._add(n, None, refs)
        i = seen.get(id(n))
        if i is None:
            i = seen[id(n)] = self._add(n, seen, refs)
        return i

    def _add(self, n: ast.AST, seen: dict | None, refs: dict | None) -> int | None:
        add = self.add
        t = type(n)
        if t is ast.BinOp:
            op = type(n.op)
            a = add(n.left, seen, refs) if op in _PRECEDENCE else None
            b = add(n.right, seen, refs) if a is not None else None
            return None if b is None else self.binop(op, a, b)
        if t is ast.Name:
            if refs is not None and n.id in refs:
                return refs[n.id]
            return self.name(n.id) if _allowed_name(n.id) else None
        if t is ast.Constant:
            return self.const(n.value) if type(n.value) is int else None
        if t is ast.Call:
            f = n.func
            if not (type(f) is ast.Name and f.id in _CALLS and len(n.args) == 2 and not n.keywords):
                return None
            a = add(n.args[0], seen, refs)
            b = add(n.args[1], seen, refs) if a is not None else None
            return None if b is None else self.call(f.id, a, b)
        if t is ast.UnaryOp and type(n.op) is ast.USub:
            a = add(n.operand, seen, refs)
            return None if a is None else self.neg(a)
        return None

    def _needed(self, root: int, memo: dict) -> list[int]:
        """The nodes not yet in ``memo`` that ``root`` needs, a node's operands before it (nodes are numbered
        operands first)."""
        todo, seen = [root], set()
        while todo:
            i = todo.pop()
            if i in seen or i in memo:
                continue
            seen.add(i)
            kind, a, b = self.nodes[i]
            if kind != "c" and kind != "n":
                todo.append(a)
                if b is not None:
                    todo.append(b)
        return sorted(seen)

    def evaluate(self, root: int, names: dict, memo: dict):
        """The value of node `root` (its tree evaluated bottom up), each node computed once: `memo` keeps them."""
        if root in memo:
            return memo[root]
        for i in self._needed(root, memo):
            kind, a, b = self.nodes[i]
            if kind == "c":
                v = np.int64(a)
            elif kind == "n":
                if a not in names:
                    raise FootprintError(f"footprint names {a}, which is not an integer argument, pid_* or nprog_*")
                v = names[a]
            elif kind == "-":
                v = np.negative(memo[a])
            elif kind in _CALLS:
                v = _CALLS[kind](memo[a], memo[b])
            else:
                x, y = memo[a], memo[b]
                if kind is ast.FloorDiv or kind is ast.Mod:
                    y = np.where(y == 0, 1, y)  # a grid axis or argument of 0 describes no bytes; never divide by it
                v = _BINOPS[kind](x, y)
            memo[i] = v
        return memo[root]

    def evaluate_int(self, root: int, names: dict, memo: dict) -> int | None:
        """``evaluate`` of one program in Python integers (``names``: Python ints), each node computed once
        (``memo``); None when a node's value leaves int64, where numpy's wrapping arithmetic is the answer.
        Within int64 the two agree: + - * exactly, // and % both floor (a divisor of 0 read as 1), min, max."""
        if root in memo:
            return memo[root]
        for i in self._needed(root, memo):
            kind, a, b = self.nodes[i]
            if kind == "c":
                v = a
            elif kind == "n":
                if a not in names:
                    raise FootprintError(f"footprint names {a}, which is not an integer argument, pid_* or nprog_*")
                v = names[a]
            elif kind == "-":
                v = -memo[a]
            elif kind == "min":
                v = min(memo[a], memo[b])
            elif kind == "max":
                v = max(memo[a], memo[b])
            else:
                x, y = memo[a], memo[b]
                if kind is ast.Add:
                    v = x + y
                elif kind is ast.Sub:
                    v = x - y
                elif kind is ast.Mult:
                    v = x * y
                elif kind is ast.FloorDiv:
                    v = x // (y or 1)
                else:
                    v = x % (y or 1)
            if not _INT64_MIN <= v <= _INT64_MAX:
                return None
            memo[i] = v
        return memo[root]


_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _allowed_name(name: str) -> bool:
    return name in _CALLS or name.startswith(("pid_", "nprog_", "arg"))


_TOKEN = re.compile(r"[ \t]*(?:([0-9]+)|([A-Za-z_][A-Za-z0-9_]*)|(//|[-+*%(),:\[\]])|\$([0-9]+))")
_HEAD = re.compile(r"(arg[0-9]+|any)\[")
# the commonest entry, whole: argK[LO:HI]*BYTES of integer literals, argK[:]*BYTES, any[:]*BYTES (BYTES a literal)
_LITERAL_ENTRY = re.compile(r"(?:(arg[0-9]+)\[(?:(0|[1-9][0-9]*):(0|[1-9][0-9]*)|:)|(any)\[:)\]\*(0|[1-9][0-9]*)")


_PAREN = re.compile(r"[()]")
_FEW_PARENS = 48  # up to this many "(": paired by a Python stack; more: numpy's sort (its fixed cost, ~15 us, pays)


class _Closings:
    """Where each "(" of a text closes: the first ")" after it back at its depth, its match as a stack pairs
    them. Numpy's form keeps the ")"s sorted by (depth, position) and finds one on request: a long entry's
    reader skips most of its parentheses (their terms were read before)."""

    def __init__(self, text: str, few: int = _FEW_PARENS):
        self.pairs: dict[int, int] | None = None
        if text.count("(") <= few or not text.isascii():
            self.pairs, opened = {}, []
            for m in _PAREN.finditer(text):
                if m.group() == "(":
                    opened.append(m.start())
                elif opened:
                    self.pairs[opened.pop()] = m.start()
            return
        b = np.frombuffer(text.encode("ascii"), np.uint8)
        closes = np.flatnonzero(b == 41)
        depth = np.cumsum((b == 40).astype(np.int64) - (b == 41))[closes] + 1  # before each ")"
        self.n = len(b) + 1  # a key (depth, position) as one integer
        self.keys = np.sort(depth * self.n + closes).tolist()

    def get(self, opening: int, depth: int) -> int | None:
        """The ")" of the "(" at `opening`, which `depth` "("s still open before it enclose; None: unclosed."""
        if self.pairs is not None:
            return self.pairs.get(opening)
        n, keys = self.n, self.keys
        at = bisect.bisect_left(keys, (depth + 1) * n + opening)
        return keys[at] % n if at < len(keys) and keys[at] // n == depth + 1 else None


class _Unread(Exception):
    """A form _Reader leaves to Python's parser."""


class _Reader:
    """Reads one footprint entry straight into DAG nodes, as Python's parser and ast.unparse would see it: the
    grammar of the module docstring, tokens spaced on one line. A parenthesised term (a call's or a group's)
    whose text it read before is looked up: the affinity pass's texts repeat their terms many times over.
    `entry()` is None for any other form (a syntax error, a form the grammar does not allow, another spacing):
    Python's parser reads those (`_parse_entry`), and names what is wrong."""

    def __init__(self, text: str, dag: _Dag, refs: list[int] | None = None):
        self.s, self.dag, self.pos = text, dag, 0
        self.refs = refs  # the node of each $K of the text's definitions (None: a text without them)
        self.spans: list[tuple[int, int]] = []  # where the entry's LO, HI, BYTES (or BYTES) are
        self.close: _Closings | None = None  # made on the first "("
        self.depth = 0  # the "("s being read around pos (every other one before it is closed before it)
        self.peeked = (-1, (0, "", 0))  # (position, token there): a token is looked at again after a term

    def entry(self) -> tuple[str, list[int]] | None:
        try:
            m = _HEAD.match(self.s)
            if m is None:
                raise _Unread
            name, self.pos = m.group(1), m.end()
            if self.s.startswith(":]", self.pos):
                self.pos += 2
                roots = []
            elif name == ANY:
                raise _Unread
            else:
                start = self.pos
                lo = self.expr()
                self.spans.append((start, self.pos))
                self.expect(":")
                start = self.pos
                roots = [lo, self.expr()]
                self.spans.append((start, self.pos))
                self.expect("]")
            self.expect("*")
            start = self.pos
            roots.append(self.factor())
            while self.s[start] in " \t":
                start += 1
            group = self.s[start] == "("  # BYTES in parentheses: its text is what they hold, as Footprint has it
            self.spans.append((start + 1, self.pos - 1) if group else (start, self.pos))
            if self.s[self.pos :].strip(" \t"):
                raise _Unread
            return name, roots
        except _Unread:
            return None

    def token(self) -> tuple[int, str, int]:
        """(kind: 1 integer, 2 name, 3 symbol; its text; where it ends) of the next token; kind 0 at the end."""
        at, tok = self.peeked
        if at == self.pos:
            return tok
        m = _TOKEN.match(self.s, self.pos)
        if m is None:
            if self.s[self.pos :].strip(" \t"):
                raise _Unread
            tok = 0, "", len(self.s)
        else:
            kind = m.lastindex
            tok = kind, m.group(kind), m.end()
        self.peeked = (self.pos, tok)
        return tok

    def expect(self, symbol: str) -> None:
        kind, text, end = self.token()
        if kind != 3 or text != symbol:
            raise _Unread
        self.pos = end

    def expr(self) -> int:
        node = self.term()
        while True:
            kind, text, end = self.token()
            if kind != 3 or text not in "+-":
                return node
            self.pos = end
            node = self.dag.binop(ast.Add if text == "+" else ast.Sub, node, self.term())

    def term(self) -> int:
        node = self.factor()
        while True:
            kind, text, end = self.token()
            if kind != 3 or text not in ("*", "//", "%"):
                return node
            self.pos = end
            if self.s.startswith("*", end):  # **: a power, not in the grammar
                raise _Unread
            node = self.dag.binop(_SYMBOL_OP[text], node, self.factor())

    def factor(self) -> int:
        kind, text, end = self.token()
        if kind == 3 and text == "-":
            self.pos = end
            return self.dag.neg(self.factor())
        if kind == 1:
            if len(text) > 1 and text[0] == "0":  # Python's parser: 00 is 0, 01 an error
                raise _Unread
            self.pos = end
            return self.dag.const(int(text))
        if kind == 2:
            if not _allowed_name(text):
                raise _Unread
            if text in _CALLS and self.s.startswith("(", end):
                return self.group(end - len(text), end, text)
            self.pos = end
            return self.dag.name(text)
        if kind == 3 and text == "(":
            return self.group(end - 1, end - 1, "")
        if kind == 4:  # $K: its definition's node
            k = int(text)
            if self.refs is None or k >= len(self.refs) or str(k) != text:
                raise FootprintError(f"footprint entry {self.s[:80]!r}: ${text} is not defined before it")
            self.pos = end
            return self.refs[k]
        raise _Unread

    def group(self, start: int, opening: int, call: str) -> int:
        """The node of `call(a, b)` or `(a)`, whose text runs from `start`; its "(" is at `opening`."""
        if self.close is None:
            self.close = _Closings(self.s)
        closing = self.close.get(opening, self.depth)
        if closing is None:
            raise _Unread
        key = self.s[start : closing + 1]
        node = self.dag.read.get(key)
        if node is None:
            self.pos = opening + 1
            self.depth += 1
            a = self.expr()
            if call:
                self.expect(",")
                node = self.dag.call(call, a, self.expr())
            else:
                node = a
            self.depth -= 1
            if self.pos > closing or self.s[self.pos : closing].strip(" \t"):
                raise _Unread
            self.dag.read[key] = node
            self.dag.read_chars += len(key)
        self.pos = closing + 1
        return node


_PARSED_KEEP = 4096  # expression texts whose DAG node is kept (about 3 per footprint entry)
# expression text (as ast.unparse prints it), or (a text's definitions, an expression as written there) -> its DAG node
_PARSED: dict[str | tuple[str, str], tuple[_Dag, int]] = {}


def _remember(text: str | tuple[str, str], dag: _Dag, root: int) -> None:
    if len(_PARSED) >= _PARSED_KEEP:
        _PARSED.clear()
    _PARSED[text] = (dag, root)


@functools.lru_cache(maxsize=1024)
def _expression(expr: str) -> tuple[_Dag, int]:
    node = ast.parse(expr, mode="eval").body
    dag = _Dag()
    root = dag.add(node)
    if root is None:
        _check(ast.Expression(node), expr)
        raise FootprintError(f"footprint expression {expr!r}: not an integer expression")
    return dag, root


@functools.lru_cache(maxsize=256)
def _shared_expression(expr: str, defs: str) -> tuple[_Dag, int]:
    dag = _Dag(texts=False)
    refs, k = _read_definitions([p.strip() for p in defs.split(";")], dag)
    return dag, _read_expression(expr, 0, dag, refs)


def _parsed(expr: str, defs: str):
    """(dag, root) of ``expr`` (with its ``defs``), parsed once; None for a plain decimal literal not parsed
    before (each caller answers it without a DAG)."""
    found = _PARSED.get((defs, expr) if defs else expr)
    if found is not None:
        return found
    if expr.isdigit() and expr.isascii() and (expr[0] != "0" or expr == "0"):
        return None
    if defs:
        return _shared_expression(expr, defs)
    try:
        return _expression(expr)
    except SyntaxError:
        raise FootprintError(f"footprint expression {expr!r} does not parse") from None


def evaluate(expr: str, names: dict, memo: dict | None = None, defs: str = "") -> np.ndarray:
    """An expression over ``names`` (numpy int64 scalars or arrays over the programs). ``memo``: a dict kept
    by the caller between expressions over the same ``names``, so their common subterms are computed once.
    ``defs``: the definitions its ``$K``s name (``Footprint.defs`` of the entry it is a part of)."""
    found = _parsed(expr, defs)
    if found is None:
        return np.asarray(np.int64(int(expr)), dtype=np.int64)  # a literal, as its one DAG node gives it
    dag, root = found
    memo = {} if memo is None else memo
    return np.asarray(dag.evaluate(root, names, memo.setdefault(dag, {})), dtype=np.int64)


def evaluate_one(expr: str, names: dict, memo: dict, defs: str = "") -> int | None:
    """``evaluate`` of one program (``names``: Python ints, ``one_program_names``) as a Python int, or None
    when a value on the way leaves int64 (``_Dag.evaluate_int``: then ``evaluate`` is the answer). The same
    errors as ``evaluate``. ``memo``: kept by the caller between expressions over the same ``names``."""
    found = _parsed(expr, defs)
    if found is None:
        v = int(expr)
        return v if v <= _INT64_MAX else None
    dag, root = found
    return dag.evaluate_int(root, names, memo.setdefault(dag, {}))


def one_program_names(grid, int_args: dict[int, int]) -> dict:
    """``program_names`` of a one-program grid in Python ints (program 0: every pid 0); the integer arguments
    as ``np.int64`` holds them (a value past int64 raises as there)."""
    names = {"pid_x": 0, "pid_y": 0, "pid_z": 0}
    names.update({f"nprog_{a}": int(np.int64(g)) for a, g in zip(AXES, (int(g) for g in grid))})
    names.update({f"arg{k}": int(np.int64(v)) for k, v in int_args.items()})
    return names


def program_names(grid, int_args: dict[int, int]) -> dict:
    """pid_*/nprog_* arrays over the programs (program p = x + gx*(y + gy*z), as the executor numbers
    them) and the integer arguments ``argK``."""
    gx, gy, gz = (int(g) for g in grid)
    p = np.arange(gx * gy * gz, dtype=np.int64)
    names = {"pid_x": p % gx, "pid_y": (p // gx) % gy, "pid_z": p // (gx * gy)}
    names.update({f"nprog_{a}": np.int64(g) for a, g in zip(AXES, (gx, gy, gz))})
    names.update({f"arg{k}": np.int64(v) for k, v in int_args.items()})
    return names


def launch_ints(params, args) -> dict[int, int]:
    """The integer arguments among a launch's ``args`` by index (``params``: the Program's args)."""
    return {k: int(v) for k, (a, v) in enumerate(zip(params, args)) if a.type != "ptr" and not isinstance(v, float)}


def launch_names(grid, params, args) -> dict:
    """program_names of a launch: the integer arguments among ``args`` (``params``: the Program's args)."""
    return program_names(grid, launch_ints(params, args))
