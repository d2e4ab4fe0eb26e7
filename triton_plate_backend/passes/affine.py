"""Scalar expressions over IR values: what the code generator materialises into scalar registers.

An `Expr` is a frozen dataclass tree:

    Const(value)            an integer
    Val(value)              an IR scalar (int, i1 or pointer) the code generator already holds in a register
    Add(a, b) Sub(a, b) Mul(a, b)
    CeilDiv(a, c) FloorDiv(a, c)   mathematical division by a positive int constant c, rounding toward
                                   +inf / -inf (not C's truncation: -3 fdiv 2 == -2)
    Min(a, b) Max(a, b)
    Select(cond, a, b)      cond is an IR i1 scalar Value: a if cond else b
    Carried(arg, k)         the k-th scalar companion register of the loop-carried pointer `arg`
                            (a block argument of an scf.for; see passes/access.py, CarriedPointer)

Build expressions with the helpers `add`, `sub`, `mul`, `neg`, `ceil_div`, `floor_div`, `min_`, `max_`,
`select` rather than the classes: they keep every sum of products in one canonical form (constants
folded, `x*1`, `x+0` and `x-x` gone, terms in a fixed order), so two expressions that are equal as
polynomials compare equal with `==`.

Values are unbounded integers: the code generator evaluates them in 64-bit scalar registers; i32
wrap-around of the TTIR that produced them is not modelled (Triton's address arithmetic assumes none;
passes/access_forms.py refuses a tensor form of constants alone that wraps, so it is computed per element).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Any

from ..ir.core import Value
from .records import plain_init

try:
    from . import _affine
except ImportError:  # not built (setup.py build_ext): the Python method keeps the hash
    _affine = None


class Expr:
    """Base of scalar expressions (see the module docstring)."""

    def __str__(self) -> str:
        return _render(self)

    def __getstate__(self) -> dict:
        """The fields alone: what a node keeps of itself (its hash, key, polynomial...) is not copied or pickled
        (a copy's Values hash apart from the original's)."""
        return {k: v for k, v in self.__dict__.items() if k[0] != "_"}


@plain_init
@dataclass(frozen=True)
class Const(Expr):
    value: int


@plain_init
@dataclass(frozen=True)
class Val(Expr):
    value: Value


@plain_init
@dataclass(frozen=True)
class Add(Expr):
    a: Expr
    b: Expr


@plain_init
@dataclass(frozen=True)
class Sub(Expr):
    a: Expr
    b: Expr


@plain_init
@dataclass(frozen=True)
class Mul(Expr):
    a: Expr
    b: Expr


@plain_init
@dataclass(frozen=True)
class CeilDiv(Expr):
    a: Expr
    c: int


@plain_init
@dataclass(frozen=True)
class FloorDiv(Expr):
    a: Expr
    c: int


@plain_init
@dataclass(frozen=True)
class Min(Expr):
    a: Expr
    b: Expr


@plain_init
@dataclass(frozen=True)
class Max(Expr):
    a: Expr
    b: Expr


@plain_init
@dataclass(frozen=True)
class Select(Expr):
    cond: Value
    a: Expr
    b: Expr


@plain_init
@dataclass(frozen=True)
class Carried(Expr):
    arg: Value
    k: int = 0


_SUMS_AND_PRODUCTS = frozenset((Add, Sub, Mul))
_NODES = frozenset((Const, Val, Add, Sub, Mul, CeilDiv, FloorDiv, Min, Max, Select, Carried))


def _keep_hash(cls: type) -> None:
    """The dataclass' hash of a tree node, kept on the node once computed (the same value: a tuple's hash
    of the fields). A tree used as a dict key was hashed whole at every lookup, and the code generator's
    memos look up each subtree of a deep tree. In C where it is built (`_affine.kept_hash`, passes/csrc/
    affine.cpp: a hit is a dict read, not a Python frame); the method below is the reference."""
    cls._hash_fields = tuple(f.name for f in fields(cls) if (f.compare if f.hash is None else f.hash))
    if _affine is not None:
        cls.__hash__ = _affine.kept_hash(cls)
        _affine.hash_slot(cls)  # hash(node) calls it without a method lookup and call (a dict key's every lookup)
        # == of two nodes of the class compares the fields in C (the dataclass' __eq__ stays the method: a dict
        # lookup that finds an equal node made anew called it, ~110 frames a vec_add compile)
        cls._eq_fields = tuple(f.name for f in fields(cls) if f.compare)
        _affine.eq_slot(cls)
        return
    generated = cls.__hash__

    def __hash__(self) -> int:
        h = self.__dict__.get("_hash")
        if h is None:
            h = self.__dict__["_hash"] = generated(self)
        return h

    cls.__hash__ = __hash__


# the atoms too: the polynomials hash them (their monomials are tuples of atoms)
for _cls in (Const, Val, Carried, Add, Sub, Mul, CeilDiv, FloorDiv, Min, Max, Select):
    _keep_hash(_cls)

ZERO = Const(0)
ONE = Const(1)


# ---- canonical polynomial form ---------------------------------------------------------------------
# A polynomial maps a monomial (sorted tuple of atoms: every node but Const/Add/Sub/Mul) to its coefficient.

Poly = dict[tuple[Expr, ...], int]


def _key_py(e: Expr) -> tuple:
    """A total order on expressions, stable for equal trees. Values order by id: by their definition in the IR's
    text, as `pipeline` numbers them (ir.core.number_values), so the order is the same for a module the passes
    built and for its printed text read back. Kept on the node:
    the trees are immutable, and the flattened loops' index trees are deep and sorted again and again."""
    k = e.__dict__.get("_key")
    if k is None:
        k = e.__dict__["_key"] = _key_of(e)  # frozen forbids setattr, not the instance's own dict
    return k


def _key_of(e: Expr) -> tuple:
    match e:
        case Const(v):
            return (0, v)
        case Val(v):
            return (1, v.id)
        case Carried(arg, k):
            return (2, arg.id, k)
        case CeilDiv(a, c):
            return (3, _key_py(a), c)
        case FloorDiv(a, c):
            return (4, _key_py(a), c)
        case Min(a, b):
            return (5, _key_py(a), _key_py(b))
        case Max(a, b):
            return (6, _key_py(a), _key_py(b))
        case Select(cond, a, b):
            return (7, cond.id, _key_py(a), _key_py(b))
        case Add(a, b) | Sub(a, b) | Mul(a, b):
            return (8, type(e).__name__, _key_py(a), _key_py(b))
    raise TypeError(f"not an Expr: {e!r}")


def _mono_key(m: tuple[Expr, ...]) -> tuple:
    return (len(m), tuple(_key_py(a) for a in m))


def poly_py(e: Expr) -> Poly:
    """The polynomial of e (a sum or product's is kept on the node, like its key: callers read it,
    never change it; an atom's, which would hold the atom itself, in a cycle, is built again)."""
    if type(e) not in _SUMS_AND_PRODUCTS:
        return _poly_of(e)
    p = e.__dict__.get("_poly")
    if p is None:
        p = e.__dict__["_poly"] = _poly_of(e)
    return p


def _poly_of(e: Expr) -> Poly:
    match e:
        case Const(v):
            return {(): v} if v else {}
        case Add(a, b):
            return _poly_add_py(poly_py(a), poly_py(b), 1)
        case Sub(a, b):
            return _poly_add_py(poly_py(a), poly_py(b), -1)
        case Mul(a, b):
            pa, pb = poly_py(a), poly_py(b)
            if len(pb) == 1 and () in pb:  # times a constant (a stride, a size): the monomials stay as they are
                c = pb[()]
                return {m: k * c for m, k in pa.items()}  # (c is not 0: a polynomial holds no zero coefficient)
            out: Poly = {}
            for ma, ca in pa.items():
                for mb, cb in pb.items():
                    m = tuple(sorted(ma + mb, key=_key_py))
                    out[m] = out.get(m, 0) + ca * cb
            return {m: c for m, c in out.items() if c}
    return {(e,): 1}


def _poly_add_py(p: Poly, q: Poly, sign: int) -> Poly:
    """p + sign * q. Neither holds a zero coefficient, nor does the sum: a term that cancels leaves it."""
    out = dict(p)
    for m, c in q.items():
        k = out.get(m, 0) + sign * c
        if k:
            out[m] = k
        else:
            del out[m]
    return out


def _product(atoms: tuple[Expr, ...]) -> Expr:
    acc = atoms[0]
    for a in atoms[1:]:
        acc = Mul(acc, a)
    return acc


def _term(m: tuple[Expr, ...], c: int) -> Expr:
    if not m:
        return Const(c)
    return _product(m) if c == 1 else Mul(_product(m), Const(c))


def _item_key(item: tuple) -> tuple:
    return _mono_key(item[0])


def from_poly_py(p: Poly) -> Expr:
    """The canonical tree of a polynomial: positive terms, then negative ones, constant last."""
    const, terms = 0, []
    for m, c in p.items():  # (items: no monomial hashed again)
        if m:
            terms.append((m, c))
        else:
            const = c
    if len(terms) > 1:
        terms.sort(key=_item_key)
    acc: Expr | None = None
    for m, c in terms:
        if c > 0:
            t = _term(m, c)
            acc = t if acc is None else Add(acc, t)
    if const > 0:
        acc = Const(const) if acc is None else Add(acc, Const(const))
    for m, c in terms:
        if c < 0:
            acc = _term(m, c) if acc is None else Sub(acc, _term(m, -c))
    if const < 0:
        acc = Const(const) if acc is None else Sub(acc, Const(-const))
    if acc is None:
        return ZERO
    if type(acc) in _SUMS_AND_PRODUCTS:  # a tree built here: its polynomial is p, and it is canonical
        acc.__dict__["_poly"] = p  # (read only, as poly() hands it out; an atom returned is not marked)
        acc.__dict__["_canonical"] = True
    return acc


def _e(x: Expr | int) -> Expr:
    if type(x) in _NODES:
        return x
    if isinstance(x, bool) or not isinstance(x, int | Expr):
        raise TypeError(f"expected an Expr or an int, got {x!r}")
    return Const(x) if isinstance(x, int) else x


def canon_py(e: Expr | int) -> Expr:
    if type(e) is int:
        return Const(e) if e else ZERO
    if type(e) not in _SUMS_AND_PRODUCTS:
        return _e(e)  # a constant or an atom is its own form (from_poly of its polynomial gives it back)
    d = e.__dict__
    if d.get("_canonical"):
        return e
    c = d.get("_canon")  # (an Expr checked by _e when it was first asked)
    if c is None:
        c = from_poly_py(poly_py(_e(e)))
        if c is not e:  # (an atom is its own form: kept, it would hold itself in a cycle)
            e.__dict__["_canon"] = c
    return c


def add_py(a: Expr | int, b: Expr | int) -> Expr:
    return from_poly_py(_poly_add_py(poly_py(_e(a)), poly_py(_e(b)), 1))


def sub_py(a: Expr | int, b: Expr | int) -> Expr:
    return from_poly_py(_poly_add_py(poly_py(_e(a)), poly_py(_e(b)), -1))


def mul_py(a: Expr | int, b: Expr | int) -> Expr:
    return canon_py(Mul(_e(a), _e(b)))


def neg_py(a: Expr | int) -> Expr:
    return sub_py(0, a)


# The algebra above in C where it is built (`passes._affine`, passes/csrc/affine.cpp: the same trees, the same
# things kept on the nodes; any object that is not one of the node classes goes to the Python step): the access
# analysis, the DMA descriptors and the affinity pass build ~4000 canonical forms a matmul compile. The `_py`
# functions are the reference (tests/test_compiled_affine.py compares the two); what follows uses these names
# (bound to C after `atoms_py`, below).
_key, poly, _poly_add, from_poly, canon = _key_py, poly_py, _poly_add_py, from_poly_py, canon_py
add, sub, mul, neg = add_py, sub_py, mul_py, neg_py


def const_value_py(e: Expr) -> int | None:
    """The integer an expression folds to, or None when it depends on a register."""
    return _const_of(poly_py(e))


def _const_of(p: Poly) -> int | None:
    if not p:
        return 0
    if len(p) == 1 and () in p:
        return p[()]
    return None


def _div(a: Expr | int, c: int, node: type, rounding) -> Expr:
    if isinstance(c, bool) or not isinstance(c, int) or c <= 0:
        raise ValueError(f"division by {c!r}: the divisor must be a positive int constant")
    p = poly_py(_e(a))
    if c == 1:
        return from_poly_py(p)
    const = p.get((), 0)
    rest = {m: k for m, k in p.items() if m}
    if all(k % c == 0 for k in rest.values()):  # the variable part divides exactly: q + round(const / c)
        return add_py(from_poly_py({m: k // c for m, k in rest.items()}), rounding(const, c))
    return node(from_poly_py(p), c)


def ceil_div_py(a: Expr | int, c: int) -> Expr:
    return _div(a, c, CeilDiv, lambda x, d: -(-x // d))


def floor_div_py(a: Expr | int, c: int) -> Expr:
    return _div(a, c, FloorDiv, lambda x, d: x // d)


def _minmax(a: Expr | int | None, b: Expr | int | None, node: type, pick_a_when_a_le_b: bool) -> Expr | None:
    """min/max where None stands for 'no bound' (the other operand wins)."""
    if a is None or b is None:
        return None if a is None and b is None else canon_py(a if b is None else b)
    a, b = canon_py(a), canon_py(b)
    d = _const_of(_poly_add_py(poly_py(a), poly_py(b), -1))  # const_value(sub(a, b)), without building the tree
    if d is not None:
        return a if (d <= 0) == pick_a_when_a_le_b else b
    return node(*sorted((a, b), key=_key_py))


def min_py(a: Expr | int | None, b: Expr | int | None) -> Expr | None:
    """min(a, b); None (unbounded) is the identity."""
    return _minmax(a, b, Min, True)


def max_py(a: Expr | int | None, b: Expr | int | None) -> Expr | None:
    """max(a, b); None (unbounded) is the identity."""
    return _minmax(a, b, Max, False)


def select_py(cond: Value, a: Expr | int, b: Expr | int) -> Expr:
    a, b = canon_py(a), canon_py(b)
    return a if a == b else Select(cond, a, b)


# (in C where it is built, as the algebra above: bound after `atoms_py`, below)
const_value, ceil_div, floor_div, min_, max_, select = (
    const_value_py,
    ceil_div_py,
    floor_div_py,
    min_py,
    max_py,
    select_py,
)


def carried(arg: Value, k: int = 0) -> Expr:
    return Carried(arg, k)


def indicator(y: Expr | int) -> Expr:
    """1 when the integer y > 0, else 0 (as min(max(y, 0), 1))."""
    return min_(max_(y, 0), 1)


# ---- walking and evaluating ------------------------------------------------------------------------


def nodes(e: Expr) -> Iterator[Expr]:
    """Every node of the tree, pre-order."""
    yield e
    for child in (getattr(e, "a", None), getattr(e, "b", None)):
        if isinstance(child, Expr):
            yield from nodes(child)


_ATOMS = (Val, Select, Carried)


def atoms_py(e: Expr) -> tuple[Expr, ...]:
    """The Val, Select and Carried nodes of the tree, pre-order (what `nodes` yields of them; kept on
    the node: the access expressions are asked again and again what they read)."""
    got = e.__dict__.get("_atoms")
    if got is None:
        got = (e,) if isinstance(e, _ATOMS) else ()
        for child in (getattr(e, "a", None), getattr(e, "b", None)):
            if isinstance(child, Expr):
                got += atoms_py(child)
        if not got or got[0] is not e:  # (one holding the node itself would be a cycle: built again)
            e.__dict__["_atoms"] = got
    return got


atoms = atoms_py
if _affine is not None:
    _affine.bind(
        (Const, Val, Carried, CeilDiv, FloorDiv, Min, Max, Select, Add, Sub, Mul),
        Expr,
        ZERO,
        _key_py,
        poly_py,
        _e,
        atoms_py,
        from_poly_py,
        _poly_add_py,
    )
    _key, poly, _poly_add, from_poly, canon, add, sub, mul, neg, atoms = (
        _affine.key,
        _affine.poly,
        _affine.poly_add,
        _affine.from_poly,
        _affine.canon,
        _affine.add,
        _affine.sub,
        _affine.mul,
        _affine.neg,
        _affine.atoms,
    )
    _affine.bind_minmax(min_py, max_py, ceil_div_py, floor_div_py)
    const_value, ceil_div, floor_div, min_, max_, select = (
        _affine.const_value,
        _affine.ceil_div,
        _affine.floor_div,
        _affine.min_,
        _affine.max_,
        _affine.select,
    )


def values(e: Expr) -> set[Value]:
    """The IR values an expression reads (Val and Select conditions; Carried args)."""
    out: set[Value] = set()
    for n in atoms(e):
        if isinstance(n, Val):
            out.add(n.value)
        elif isinstance(n, Select):
            out.add(n.cond)
        elif isinstance(n, Carried):
            out.add(n.arg)
    return out


def evaluate(e: Expr, env: Mapping[Any, Any]) -> int:
    """The integer value of `e`; env maps each Value to its int and each (arg, k) to a carried companion."""
    match e:
        case Const(v):
            return v
        case Val(v):
            return int(env[v])
        case Carried(arg, k):
            return int(env[(arg, k)])
        case Add(a, b):
            return evaluate(a, env) + evaluate(b, env)
        case Sub(a, b):
            return evaluate(a, env) - evaluate(b, env)
        case Mul(a, b):
            return evaluate(a, env) * evaluate(b, env)
        case CeilDiv(a, c):
            return -(-evaluate(a, env) // c)
        case FloorDiv(a, c):
            return evaluate(a, env) // c
        case Min(a, b):
            return min(evaluate(a, env), evaluate(b, env))
        case Max(a, b):
            return max(evaluate(a, env), evaluate(b, env))
        case Select(cond, a, b):
            return evaluate(a, env) if env[cond] else evaluate(b, env)
    raise TypeError(f"not an Expr: {e!r}")


# ---- printing ----------------------------------------------------------------------------------------


def value_name(v: Value) -> str:
    return f"%{v.name}" if v.name else f"%{v.id}"


def _render_py(e: Expr) -> str:
    """An expression's text (`str(e)`): by the node's class (`_RENDER`), else `_render_matched`. In C where it is
    built (`_affine.render`, `_render`); this is the reference."""
    how = _RENDER.get(type(e))
    return how(e) if how is not None else _render_matched(e)


def _in_parens(x: Expr) -> str:
    return f"({_render_py(x)})" if isinstance(x, Add | Sub) else _render_py(x)


def _render_mul(e: Mul) -> str:
    a, b = e.a, e.b
    if isinstance(b, Const) and b.value < 0:  # (as `case Mul(a, Const(c)) if c < 0`)
        c = b.value
        return f"-{_render_py(Mul(a, Const(-c)) if c != -1 else a)}"
    return f"{_in_parens(a)}*{_in_parens(b)}"


def _render_sub(e: Sub) -> str:
    b = e.b
    rb = _render_py(b)
    return f"{_render_py(e.a)} - ({rb})" if isinstance(b, Add | Sub) else f"{_render_py(e.a)} - {rb}"


_RENDER = {
    Const: lambda e: str(e.value),
    Val: lambda e: value_name(e.value),
    Carried: lambda e: f"carried({value_name(e.arg)}, {e.k})",
    Add: lambda e: f"{_render_py(e.a)} + {_render_py(e.b)}",
    Sub: _render_sub,
    Mul: _render_mul,
    CeilDiv: lambda e: f"cdiv({_render_py(e.a)}, {e.c})",
    FloorDiv: lambda e: f"fdiv({_render_py(e.a)}, {e.c})",
    Min: lambda e: f"min({_render_py(e.a)}, {_render_py(e.b)})",
    Max: lambda e: f"max({_render_py(e.a)}, {_render_py(e.b)})",
    Select: lambda e: f"select({value_name(e.cond)}, {_render_py(e.a)}, {_render_py(e.b)})",
}


def _render_matched(e: Expr) -> str:
    """The text of an expression whose node is not one of the classes themselves (a subclass; not an Expr):
    what `_render` was, one `match` over the node kinds; `_RENDER` answers the classes' own nodes the same."""
    match e:
        case Const(v):
            return str(v)
        case Val(v):
            return value_name(v)
        case Carried(arg, k):
            return f"carried({value_name(arg)}, {k})"
        case Add(a, b):
            return f"{_render(a)} + {_render(b)}"
        case Sub(a, b):
            rb = _render(b)
            return f"{_render(a)} - ({rb})" if isinstance(b, Add | Sub) else f"{_render(a)} - {rb}"
        case Mul(a, Const(c)) if c < 0:
            return f"-{_render(Mul(a, Const(-c)) if c != -1 else a)}"
        case Mul(a, b):
            return "*".join(f"({_render(x)})" if isinstance(x, Add | Sub) else _render(x) for x in (a, b))
        case CeilDiv(a, c):
            return f"cdiv({_render(a)}, {c})"
        case FloorDiv(a, c):
            return f"fdiv({_render(a)}, {c})"
        case Min(a, b):
            return f"min({_render(a)}, {_render(b)})"
        case Max(a, b):
            return f"max({_render(a)}, {_render(b)})"
        case Select(cond, a, b):
            return f"select({value_name(cond)}, {_render(a)}, {_render(b)})"
    return repr(e)


_render = _render_py
if _affine is not None:
    _affine.bind_render(_render_matched)
    _render = _affine.render
