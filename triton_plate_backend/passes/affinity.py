"""The affinity pass: which bytes each program touches, as expressions in its program ids.

From the structured access analysis (passes/access.py) every memory op is a box of a pointer
argument: element offset, strides, tile shape. Over the loops around it (scf.for: the induction
variable and loop-carried pointers advance by a uniform step each trip) the box sweeps the range
from its first to its last trip. The pass writes, for each memory op, the byte range of its
pointer argument and the bytes it moves, as the footprint text of isa/footprint.py, into the
``plate.affinity`` attribute of the kernel's tt.func. Code generation copies the text into the
Program (``Program.affinity``), and the launch evaluates it with the actual arguments and the home
domains of their memory (sim/affinity.py) to run each program in the domain that homes its bytes.

A gather or an atomic (its addresses are data) is written as its bytes somewhere in the memory of
its root pointer argument (``argK[:]``, or ``any[:]`` when no argument is its root): work that
steers no program. The pass cannot tell (and says ``none (why)``, so the launch keeps the default
mapping) when no memory op is located, when a located op's pointer is not a kernel argument, when
a scalar in its range or a loop bound is not integer arithmetic over arguments, program ids and
loop counters, or when a memory op sits in a loop other than scf.for. Ranges assume each range end
is monotonic over the trips of a loop (true of affine offsets), so the first and last trips bound it.
"""

from __future__ import annotations

import ast
import functools
import math
import re

from ..ir.core import Block, Module, Op, PtrType, StrAttr, TensorDescType, TensorType, Value, shape_of
from ..isa.footprint import Footprint, share_footprints, unknown
from ..isa.table import ITEMSIZE
from . import access, access_forms, program_range
from .access_forms import constant
from .affine import Add, Carried, CeilDiv, Const, Expr, FloorDiv, Max, Min, Mul, Sub, Val

ATTR = "plate.affinity"


class CannotTell(Exception):
    """A range the footprint language cannot express; the message says which and where."""


# ---- host expressions as text, folded where constant ------------------------------------------------


def _int(text: str) -> int | None:
    head = text[:1]
    if not head or not (head.isdecimal() or head in "+-" or head.isspace()):
        return None  # int() would raise: most texts are names and sums, and a raise is the slow part
    for c in text[1:8]:  # a product or quotient of a constant ("2*...", "0 // ..."): int() would raise
        if not (c.isdecimal() or c.isspace() or c in "+-_"):  # after copying the whole (kilobyte) text
            return None
    try:
        return int(text)
    except ValueError:
        return None


_TAIL = re.compile(r"^(.*) ([+-]) (\d+)$")  # a sum ending in a constant term (at depth 0: nothing follows it)


# Each fold builds its text and, beside it, the text's expression tree (what ast.parse would give): the
# folds read their operands' trees (to parenthesise, to substitute), and the texts grow to kilobytes
# (nested min/max of the trips of every loop), where Python's parser spent most of a first compile.
_TREES: dict[str, ast.expr] = {}  # text -> its parse; shared by compiles (texts repeat across them)
_TREES_MAX = 4096  # as many texts as the parse cache it replaces kept (~250 per matmul compile)
_SUMS, _PRODUCTS = (ast.Add, ast.Sub), (ast.Mult,)
# (subtree, the substitution of the names in it) -> its fold, shared by the substitutions: a footprint
# substitutes the first and the last trip into its low and its high terms, which share the offset's
# subtrees, as do the ops of one loop, and most subtrees hold no loop symbol at all; the trees' subtrees are
# shared objects (each fold builds its tree from its operands' trees). _NAMES: subtree -> the names in it.
_FOLDS: dict[tuple[ast.expr, tuple], str] = {}
_NAMES: dict[ast.expr, frozenset] = {}
_NO_NAMES: frozenset = frozenset()


def _parse(text: str) -> ast.expr:
    """The expression tree of a host expression's text (read only: the folds build new text)."""
    node = _TREES.get(text)
    if node is None:
        if text.isidentifier():
            node = ast.Name(text, ast.Load())
        elif (n := _int(text)) is not None and str(n) == text:
            node = _constant(n)
        else:  # a text no fold here built (a test's, a caller's)
            node = ast.parse(text, mode="eval").body
        _keep(text, node)
    return node


def _constant(n: int) -> ast.expr:
    return ast.Constant(n) if n >= 0 else ast.UnaryOp(ast.USub(), ast.Constant(-n))


def _keep(text: str, node: ast.expr) -> str:
    if len(_TREES) >= _TREES_MAX:
        _TREES.clear()
        _FOLDS.clear()  # their keys hold the trees alive: let them go together
        _NAMES.clear()
        _MEMO.clear()  # (its texts' trees are gone: a fold of them would parse them again)
    _TREES[text] = node
    return text


def _joined(a: ast.expr, op: ast.operator, b: ast.expr, spine: tuple) -> ast.expr:
    """The parse of ``A op B`` with B's text bare: Python's left-associative parse hangs A under the
    leftmost operand of B's chain of ``spine`` operators (``a + x - 1`` is ``(a + x) - 1``)."""
    chain = []
    while isinstance(b, ast.BinOp) and isinstance(b.op, spine):
        chain.append(b)
        b = b.left
    node = ast.BinOp(a, op, b)
    for link in reversed(chain):
        node = ast.BinOp(node, link.op, link.right)
    return node


def _add(a: str, b: str) -> str:
    x, y = _int(a), _int(b)
    if x is not None and y is not None:
        return str(x + y)
    if y is not None and a[-1:].isdigit() and (m := _TAIL.match(a)):  # (the test first: a failed match scans a)
        head = m.group(1)
        if head not in _TREES:  # a's tree is (head +- n): its left operand is head's parse
            t = _parse(a)
            sign = ast.Add if m.group(2) == "+" else ast.Sub
            if isinstance(t, ast.BinOp) and isinstance(t.op, sign) and isinstance(t.right, ast.Constant):
                _keep(head, t.left)
        return _add(head, str(int(m.group(3)) * (1 if m.group(2) == "+" else -1) + y))
    if x == 0:
        return b
    if y == 0:
        return a
    if not b.startswith("-"):
        return _keep(f"{a} + {b}", _joined(_parse(a), ast.Add(), _parse(b), _SUMS))
    if y is not None:
        return _keep(f"{a} - {b[1:]}", ast.BinOp(_parse(a), ast.Sub(), ast.Constant(-y)))
    return _keep(f"{a} + ({b})", ast.BinOp(_parse(a), ast.Add(), _parse(b)))


def _sub(a: str, b: str) -> str:
    y = _int(b)
    if y is not None:
        return _add(a, str(-y))
    return _keep(f"{a} - ({b})", ast.BinOp(_parse(a), ast.Sub(), _parse(b)))


def _mul(a: str, b: str) -> str:
    x, y = _int(a), _int(b)
    if x is not None and y is not None:
        return str(x * y)
    if x == 0 or y == 0:
        return "0"
    if x == 1:
        return b
    if y == 1:
        return a
    right = _right(b, product=True)
    node = _parse(b)
    node = _joined(_parse(a), ast.Mult(), node, _PRODUCTS) if right is b else ast.BinOp(_parse(a), ast.Mult(), node)
    return _keep(f"{_left(a)}*{right}", node)


def _left(a: str) -> str:
    """a as the left operand of * // %: bare unless a sum or a negation (the three are left-associative)."""
    node = _parse(a)
    sum_ = isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub))
    return f"({a})" if sum_ or isinstance(node, ast.UnaryOp) else a


def _right_bare(node: ast.AST, product: bool) -> bool:
    if isinstance(node, (ast.Name, ast.Call)) or isinstance(node, ast.Constant) and node.value >= 0:
        return True
    return (
        product
        and isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Mult)
        and (_right_bare(node.left, True) and _right_bare(node.right, True))
    )


def _right(a: str, product: bool = False) -> str:
    """a as the right operand: bare if an atom (or, right of *, a product of atoms: * is associative)."""
    return a if _right_bare(_parse(a), product) else f"({a})"


def _mod(a: str, b: str) -> str:
    return _keep(f"{_left(a)} % {_right(b)}", ast.BinOp(_parse(a), ast.Mod(), _parse(b)))


def _call(fn: str, a: str, b: str) -> str:
    x, y = _int(a), _int(b)
    if x is not None and y is not None:
        return str(min(x, y) if fn == "min" else max(x, y))
    return _keep(f"{fn}({a}, {b})", ast.Call(ast.Name(fn, ast.Load()), [_parse(a), _parse(b)], []))


def _floordiv(a: str, c: str) -> str:
    return _keep(f"{_left(a)} // {_right(c)}", ast.BinOp(_parse(a), ast.FloorDiv(), _parse(c)))


# (fold, its operand texts) -> its text: a fold is a function of its texts alone, and a kernel's host
# expressions repeat across its compiles (and across kernels: the persistent loop's share of the grid), so a
# repeated compile's folds are lookups. Emptied with _TREES (a text kept here has its tree there).
_MEMO: dict[tuple, str] = {}


def _memo(fold):
    def folded(*texts: str) -> str:
        key = (fold, *texts)
        got = _MEMO.get(key)
        if got is None:
            got = fold(*texts)
            if len(_MEMO) >= 4 * _TREES_MAX:
                _MEMO.clear()
            _MEMO[key] = got
        return got

    folded.__wrapped__ = fold
    folded.__name__ = fold.__name__
    return folded


_add, _sub, _mul, _mod, _call, _floordiv = map(_memo, (_add, _sub, _mul, _mod, _call, _floordiv))


def _substitute(text: str, values: dict[str, str]) -> str:
    """text with loop symbols replaced by expressions, folded again."""
    return _substituted(text, tuple(values.items()))


@functools.lru_cache(maxsize=4096)
def _substituted(text: str, items: tuple[tuple[str, str], ...]) -> str:
    """_substitute's fold (a function of its texts alone): each footprint substitutes the first and the
    last trip into the same terms, and the ops of one tile share them."""
    values = dict(items)
    node = _parse(text)
    folds = _FOLDS  # the key holds the subtree, so its id is not reused while the entry lives
    if len(folds) >= 16 * _TREES_MAX:
        folds.clear()
        _NAMES.clear()
    done: dict[int, str] = {}  # id(subtree) -> its fold in this substitution
    return _folded(node, (values, items, folds, done))


# (module functions, not closures of _substituted: two closures that call each other are a reference cycle)
def _folded(n, sub: tuple) -> str:
    """n's fold in the substitution sub = (values, items, the folds kept across calls, those of this call)."""
    _, items, folds, done = sub
    got = done.get(id(n))
    if got is None:
        names = _names(n)
        key = (n, tuple(kv for kv in items if kv[0] in names) if names else ())
        got = folds.get(key)
        if got is None:
            got = folds[key] = _fold_node(n, sub)
        done[id(n)] = got
    return got


def _fold_node(n, sub: tuple) -> str:
    if isinstance(n, ast.Name):
        return sub[0].get(n.id, n.id)
    if isinstance(n, ast.Constant):
        return str(n.value)
    if isinstance(n, ast.UnaryOp):
        return _mul("-1", _folded(n.operand, sub))
    if isinstance(n, ast.Call):
        return _call(n.func.id, _folded(n.args[0], sub), _folded(n.args[1], sub))
    a, b = _folded(n.left, sub), _folded(n.right, sub)
    op = type(n.op)
    if op is ast.Add:
        return _add(a, b)
    if op is ast.Sub:
        return _sub(a, b)
    if op is ast.Mult:
        return _mul(a, b)
    if op is ast.FloorDiv:
        return _floordiv(a, b)
    return _mod(a, b)


def _names(n: ast.expr) -> frozenset:
    """The names a subtree reads (not the called functions')."""
    got = _NAMES.get(n)
    if got is None:
        if isinstance(n, ast.Name):
            got = frozenset((n.id,))
        elif isinstance(n, ast.Constant):
            got = _NO_NAMES
        elif isinstance(n, ast.UnaryOp):
            got = _names(n.operand)
        elif isinstance(n, ast.Call):
            got = _names(n.args[0]) | _names(n.args[1])
        else:
            got = _names(n.left) | _names(n.right)
        _NAMES[n] = got
    return got


def _share(splits: tuple, rows: str, grid: str) -> tuple[str, str]:
    """The persistent prologue's (base, count) texts: ~50 folds, a function of the operands' texts alone, so
    kept in _MEMO as one entry (a repeated compile's prologue is one lookup; emptied with the trees)."""
    key = (program_range.share, splits, rows, grid)
    got = _MEMO.get(key)
    if got is None:
        got = program_range.share("pid_x", splits, rows, grid, _fold, str)
        if len(_MEMO) >= 4 * _TREES_MAX:
            _MEMO.clear()
        _MEMO[key] = got
    return got


# ---- IR scalars -> host expressions ------------------------------------------------------------------

_BINARY = {
    "arith.addi": _add,
    "arith.subi": _sub,
    "arith.muli": _mul,
    "arith.divsi": _floordiv,  # trunc == floor on the non-negative ids and sizes address math uses
    "arith.divui": _floordiv,
    "arith.floordivsi": _floordiv,
    "arith.ceildivsi": lambda a, b: _floordiv(_sub(_add(a, b), "1"), b),
    "arith.remsi": lambda a, b: _mod(a, b),
    "arith.remui": lambda a, b: _mod(a, b),
    "arith.minsi": lambda a, b: _call("min", a, b),
    "arith.minui": lambda a, b: _call("min", a, b),
    "arith.maxsi": lambda a, b: _call("max", a, b),
    "arith.maxui": lambda a, b: _call("max", a, b),
}


def _fold(name: str, a: str, b: str) -> str:
    return _BINARY[name](a, b)


_SAME = ("arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast", "arith.index_castui")
_GRID = {"tt.get_program_id": "pid", "tt.get_num_programs": "nprog"}
# ops whose first operand is the pointer they derive from: a gather's root argument is found through them
_POINTER_CHAIN = (
    "tt.addptr",
    "tt.splat",
    "tt.broadcast",
    "tt.expand_dims",
    "tt.reshape",
    "tt.trans",
    "tt.advance",
    "tt.make_tensor_ptr",
    "tt.make_tensor_descriptor",
)


def _axis(op: Op) -> str:
    a = op.attrs.get("axis")
    text = str(getattr(a, "value", a))
    return {"0": "x", "1": "y", "2": "z"}.get(text, text)


class _Footprints:
    """The host expressions of one kernel: its arguments, and a symbol per scf.for (its trip index)."""

    def __init__(self, func: Op):
        self.entry = func.regions[0].blocks[0]
        self.loops: dict[Op, tuple[str, str]] = {}  # scf.for -> (trip symbol, trip count)
        self.memo: dict[Value, str] = {}

    def value(self, v: Value) -> str:
        if v not in self.memo:
            self.memo[v] = self._value(v)
        return self.memo[v]

    def _value(self, v: Value) -> str:
        owner = v.owner
        if isinstance(owner, Block):
            if owner is self.entry:
                return f"arg{v.index}"
            loop = owner.parent.parent if owner.parent is not None else None
            if loop is not None and loop.name == "scf.for" and v.index == 0:
                sym, _ = self.loop(loop)
                lb, step = self.value(loop.operands[0]), self.value(loop.operands[2])
                return _add(lb, _mul(sym, step))
            raise CannotTell(f"%{v.name} is a block argument of {getattr(loop, 'name', 'a block')}")
        op: Op = owner
        if op.name == "arith.constant":
            c = constant(op)
            if isinstance(c, bool) or not isinstance(c, int):
                raise CannotTell(f"constant %{v.name} is not an integer")
            return str(c)
        if op.name in _GRID:
            return f"{_GRID[op.name]}_{_axis(op)}"
        if op.name in _SAME:
            return self.value(op.operands[0])
        if op.name in _BINARY:
            return _BINARY[op.name](self.value(op.operands[0]), self.value(op.operands[1]))
        if op.name == program_range.NAME:  # the persistent prologue: its arithmetic folded as its ops' would be
            splits, rows, grid = program_range.operands(op)
            texts = _share(tuple([self.value(s) for s in splits]), self.value(rows), self.value(grid))
            self.memo.update(zip(op.results, texts))
            return self.memo[v]
        raise CannotTell(f"%{v.name} comes from {op.name} at {op.loc}")

    def loop(self, loop: Op) -> tuple[str, str]:
        if loop not in self.loops:
            lb, ub, step = (self.value(x) for x in loop.operands[:3])
            trips = _call("max", "0", _floordiv(_add(_sub(ub, lb), _sub(step, "1")), step))
            self.loops[loop] = (f"trip{len(self.loops)}", trips)
        return self.loops[loop]

    def expr(self, e: Expr) -> str:
        match e:
            case Const(c):
                return str(c)
            case Val(v):
                return self.value(v)
            case Add(a, b):
                return _add(self.expr(a), self.expr(b))
            case Sub(a, b):
                return _sub(self.expr(a), self.expr(b))
            case Mul(a, b):
                return _mul(self.expr(a), self.expr(b))
            case FloorDiv(a, c):
                return _floordiv(self.expr(a), str(c))
            case CeilDiv(a, c):
                return _floordiv(_add(self.expr(a), str(c - 1)), str(c))
            case Min(a, b):
                return _call("min", self.expr(a), self.expr(b))
            case Max(a, b):
                return _call("max", self.expr(a), self.expr(b))
            case Carried(arg, k):
                loop = arg.owner.parent.parent
                cp = access.carried_pointers(loop)[arg]
                sym, _ = self.loop(loop)
                return _add(self.expr(cp.init[k]), _mul(sym, self.expr(cp.step[k])))
        raise CannotTell(f"the expression {e} is not integer arithmetic")

    def enclosing_loops(self, op: Op) -> list[Op]:
        loops, parent = [], op.parent
        while parent is not None and parent is not self.entry:
            owner = parent.parent.parent if parent.parent is not None else None
            if owner is None or owner.name == "tt.func":
                break
            if owner.name == "scf.for":
                loops.append(owner)
            elif owner.name in ("scf.while", "scf.execute_region") or not owner.name.startswith(("scf.", "tt.")):
                raise CannotTell(f"{op.name} at {op.loc} is inside {owner.name}")
            parent = owner.parent
        return loops

    def trip_bounds(self, loops: list[Op]) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
        """(first, last, trips) of `loops` (innermost first, as enclosing_loops lists them): each loop's
        trip symbol at its first and at its last trip, and its trip count, as expressions in the
        arguments and program ids alone. A loop's bounds may come from the trips of the loops around it
        (a row loop from program_id(x) inside the persistent loop over programs, `for r in
        range(pid * n, ...)`): its last trip is taken with theirs at their last, and its count is the mean
        of its counts at their first and their last trips (exact for counts affine in the trips)."""
        first: dict[str, str] = {}
        last: dict[str, str] = {}
        trips: dict[str, str] = {}
        for loop in reversed(loops):  # outermost first: the symbols of a loop's bounds are substituted
            sym, count = self.loop(loop)
            at_first, at_last = _substitute(count, first), _substitute(count, last)
            first[sym] = "0"
            last[sym] = _call("max", "0", _sub(at_last, "1"))
            trips[sym] = at_first if at_first == at_last else _floordiv(_add(_add(at_first, at_last), "1"), "2")
        return first, last, trips

    def weight(self, op: Op, itemsize: int) -> str:
        """Bytes the op moves per program: its tile, times the trips of the loops around it."""
        nbytes = str(math.prod(_tile_shape(op)) * itemsize)
        for count in self.trip_bounds(self.enclosing_loops(op))[2].values():
            nbytes = _mul(nbytes, count)
        return nbytes

    def somewhere(self, op: Op) -> Footprint:
        """A gather or atomic: its bytes, somewhere in the memory its root pointer argument points into."""
        ptr = op.operands[0]
        element = access_forms.element_name(ptr.type)
        while not (isinstance(ptr.owner, Block) and ptr.owner is self.entry):
            owner = ptr.owner
            loop = owner.parent.parent if isinstance(owner, Block) and owner.parent is not None else None
            if loop is not None and loop.name == "scf.for" and ptr.index >= 1:
                ptr = loop.operands[2 + ptr.index]  # an iter_arg: follow its initial value
                continue
            if isinstance(owner, Block) or owner is None or owner.name not in _POINTER_CHAIN:
                return Footprint(-1, None, None, self.weight(op, _itemsize(element)))
            ptr = owner.operands[0]
        return Footprint(ptr.index, None, None, self.weight(op, _itemsize(element)))

    def footprint(self, op: Op, acc: access.StructuredAccess) -> Footprint:
        if not (isinstance(acc.base, Val) and acc.base.value.owner is self.entry):
            raise CannotTell(f"{op.name} at {op.loc}: its pointer is not a kernel argument ({acc.base})")
        arg = acc.base.value.index
        shape = _tile_shape(op)
        isz = _itemsize(acc.element)
        lo_terms = hi_terms = self.expr(acc.offset)
        for n, s in zip(shape, acc.strides):
            if n > 1:
                reach = _mul(str(n - 1), self.expr(s))
                lo_terms = _add(lo_terms, _call("min", "0", reach))
                hi_terms = _add(hi_terms, _call("max", "0", reach))
        hi_terms = _add(hi_terms, "1")
        start, end, _ = self.trip_bounds(self.enclosing_loops(op))
        lo_first, lo_last = _substitute(lo_terms, start), _substitute(lo_terms, end)
        hi_first, hi_last = _substitute(hi_terms, start), _substitute(hi_terms, end)
        lo = lo_first if lo_first == lo_last else _call("min", lo_first, lo_last)
        hi = hi_first if hi_first == hi_last else _call("max", hi_first, hi_last)
        return Footprint(arg, _mul(lo, str(isz)), _mul(hi, str(isz)), self.weight(op, isz))


def _tile_shape(op: Op) -> tuple[int, ...]:
    """The shape of the tile a memory op moves: its result, or the stored value."""
    if op.results and isinstance(op.results[0].type, TensorType):
        return tuple(shape_of(op.results[0].type))
    for v in op.operands:
        t = v.type
        if isinstance(t, TensorType) and not isinstance(t.element, PtrType):
            if op.name in ("tt.descriptor_scatter",) and len(shape_of(t)) == 1:
                continue  # the row offsets, not the data
            return tuple(shape_of(t))
    return ()


def _itemsize(element: str) -> int:
    if element in ITEMSIZE:
        return ITEMSIZE[element]
    if element.startswith("f8") or element in ("i1", "i8"):
        return 1
    if element.startswith("!tt.ptr"):
        return 8
    digits = "".join(c for c in element if c.isdigit())
    return max(int(digits) // 8, 1) if digits else 1


def footprint_text(func: Op) -> str:
    """The footprint text of a kernel (isa/footprint.py): an entry per memory op, its shared subterms bound
    to ``$K``s (``share_footprints``), or ``none (why)``. Inside ``access.shared_analysis()`` (the pipeline)
    it reuses the analysis of the passes before."""
    entries = footprint_entries(func)
    if isinstance(entries, str):
        return entries
    key = tuple(entries)
    text = _SHARED_TEXTS.get(key)
    if text is None:  # the entries' texts were built by the folds here: their trees are kept, subtrees shared
        if len(_SHARED_TEXTS) >= 64:
            _SHARED_TEXTS.clear()
        text = _SHARED_TEXTS[key] = share_footprints(entries, _parse)
    return text


# entries -> their shared text: a kernel's entries repeat across its compiles (their texts are the memo's)
_SHARED_TEXTS: dict[tuple[Footprint, ...], str] = {}


def footprint_entries(func: Op) -> list[Footprint] | str:
    """The footprints of a kernel's memory ops, each expression a whole tree of its own (no ``$K``), or the
    text ``none (why)``: what ``footprint_text`` writes, before its shared subterms are bound."""
    if any(isinstance(a.type, TensorDescType) for a in func.regions[0].blocks[0].args):
        return unknown("a host-side tensor descriptor argument")
    fp = _Footprints(func)
    entries, gathers = [], []
    try:
        for op in func.walk():
            if op.name not in access.MEMORY_OPS:
                continue
            acc = access.analyze(op)
            if isinstance(acc, access.GatherAccess):
                gathers.append(f"{op.name} at {op.loc} is a gather ({acc.reason})")
                entries.append(fp.somewhere(op))
            else:
                entries.append(fp.footprint(op, acc))
    except CannotTell as e:
        return unknown(str(e))
    if all(f.lo is None for f in entries):  # nothing located: nothing to steer a program by
        return unknown(gathers[0] if gathers else "no memory ops")
    return entries


def annotate_affinity(module: Module) -> Module:
    """Attach ``plate.affinity`` (the footprint text) to the kernel's tt.func."""
    func = module.kernel()
    func.attrs[ATTR] = StrAttr(footprint_text(func))
    return module


def func_affinity(module: Module) -> str:
    """The footprint text a (parsed) pir module carries; "" when it has none."""
    attr = module.kernel().attrs.get(ATTR)
    return getattr(attr, "value", "") if attr is not None else ""
