"""The canonical algebra of the affine expressions in C (`passes._affine`: key, poly, poly_add, from_poly, canon,
add, sub, mul, neg, atoms) against affine.py's Python functions (`_key_py` ... `atoms_py`), the reference: the same
trees, field for field and class for class, the same things kept in every node's dict (the key, the polynomial in
its insertion order, the canonical marks, the atoms), on the inputs too; the same errors; objects that are not the
node classes themselves (subclasses, dict subclasses) handled by the Python steps."""

from __future__ import annotations

import random

import pytest

from triton_plate_backend.ir.core import Value
from triton_plate_backend.passes import affine
from triton_plate_backend.passes.affine import Add, Carried, CeilDiv, Const, FloorDiv, Max, Min, Mul, Select, Sub, Val

pytestmark = pytest.mark.skipif(affine._affine is None, reason="passes._affine is not built")

VALUES = [Value(None, n) for n in ("x", "y", "z", "w")]
COND = Value(None, "c")
NAMES = ("_key", "poly", "_poly_add", "from_poly", "canon", "add", "sub", "mul", "neg", "atoms")
NAMES += ("min_", "max_", "ceil_div", "floor_div", "select", "const_value")
C = {n: getattr(affine._affine, n.lstrip("_")) for n in NAMES}
PY = {n: getattr(affine, f"{n.rstrip('_')}_py") for n in NAMES}


class SubVal(Val):  # not a node class itself: the C steps hand it to Python
    pass


class SubAdd(Add):
    pass


def same(a, b, path="e") -> None:
    """a and b are the same tree: the same classes, fields, and kept entries in the same order."""
    assert type(a) is type(b), path
    if isinstance(a, affine.Expr):
        assert list(vars(a)) == list(vars(b)), path
        for k in vars(a):
            same(vars(a)[k], vars(b)[k], f"{path}.{k}")
    elif isinstance(a, dict):
        assert list(a.keys()) == list(b.keys()), path  # (Exprs compare as trees: the order is what differs)
        for (ka, va), (kb, vb) in zip(a.items(), b.items()):
            same(ka, kb, f"{path}[key]")
            same(va, vb, f"{path}[{ka}]")
    elif isinstance(a, tuple | list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{path}[{i}]")
    else:
        assert a == b, path


def leaves():
    """Fresh leaf nodes (nothing kept on them yet), the same for every call."""
    x, y, z, w = (Val(v) for v in VALUES)
    return [
        x,
        y,
        z,
        Carried(VALUES[3], 1),
        Select(COND, Val(VALUES[0]), Const(4)),
        CeilDiv(Add(w, Const(3)), 4),
        FloorDiv(Val(VALUES[1]), 8),
        Min(Val(VALUES[2]), Const(0)),
        Max(Const(1), Val(VALUES[3])),
        SubVal(VALUES[0]),
        Const(0),
        Const(-3),
    ]


def run(fns, seed: int, steps: int = 40) -> list:
    """A random sequence of the algebra's steps; every result and every input kept, to compare after."""
    rng = random.Random(seed)
    pool = leaves()
    out = []
    for _ in range(steps):
        op = rng.choice(
            ("add", "sub", "mul", "neg", "canon", "raw", "atoms", "key", "poly", "min_", "max_", "div", "sel")
        )
        a = rng.choice(pool) if rng.random() < 0.85 else rng.randint(-5, 5)
        b = rng.choice(pool) if rng.random() < 0.85 else rng.randint(-5, 5)
        if op in ("add", "sub", "mul", "min_", "max_"):
            r = fns[op](None if op[-1] == "_" and rng.random() < 0.2 else a, b)
        elif op == "div":
            r = fns[rng.choice(("ceil_div", "floor_div"))](a, rng.choice((1, 2, 3, 4, 8)))
            out.append(fns["const_value"](r))
        elif op == "sel":
            r = fns["select"](COND, a, b if rng.random() < 0.8 else a)
        elif op == "neg":
            r = fns["neg"](a)
        elif op == "canon":
            r = fns["canon"](a)
        elif op == "raw":  # a tree built by hand (not canonical): canon and poly must take it apart
            if isinstance(a, int) or isinstance(b, int):
                continue
            r = rng.choice((Add, Sub, Mul, SubAdd))(a, b)
        elif isinstance(a, int):
            continue
        elif op == "atoms":
            out.append(fns["atoms"](a))
            continue
        elif op == "key":
            out.append(fns["_key"](a))
            continue
        else:
            out.append(fns["poly"](a))
            continue
        out.append(r)
        if len(str(r)) < 400:  # (keep the trees small enough to stay quick)
            pool.append(r)
    return [out, pool]


@pytest.mark.parametrize("seed", range(60))
def test_random_steps_build_the_same_trees_and_keep_the_same(seed):
    same(run(C, seed), run(PY, seed))


def test_the_module_uses_the_compiled_steps():
    for n in NAMES:
        assert getattr(affine, n) is C[n], n


def test_from_poly_and_poly_add_orders():
    x, y = Val(VALUES[0]), Val(VALUES[1])
    for p in ({(y,): 2, (x,): -1, (): 5, (x, y): 1}, {(): -2}, {}, {(x,): 1}, {(x,): -1, (): 0}, {(y,): 3, (x,): 3}):
        same(C["from_poly"](dict(p)), PY["from_poly"](dict(p)))
        for q in ({(x,): 1}, {(): 5}, {(y,): -2, (x,): 1}):
            for sign in (1, -1):
                same(C["_poly_add"](dict(p), q, sign), PY["_poly_add"](dict(p), q, sign))


class PolyDict(dict):
    pass


def test_other_objects_go_to_python():
    x = Val(VALUES[0])
    p = PolyDict({(x,): 2})
    same(C["from_poly"](p), PY["from_poly"](PolyDict({(Val(VALUES[0]),): 2})))
    same(C["add"](SubVal(VALUES[0]), 1), PY["add"](SubVal(VALUES[0]), 1))
    same(C["canon"](SubAdd(Val(VALUES[0]), Const(1))), PY["canon"](SubAdd(Val(VALUES[0]), Const(1))))
    same(C["_key"](SubAdd(Val(VALUES[0]), Const(1))), PY["_key"](SubAdd(Val(VALUES[0]), Const(1))))
    same(C["poly"]("s"), PY["poly"]("s"))  # (the Python step makes an atom of anything)


@pytest.mark.parametrize(
    "step, args",
    [
        ("add", (True, 1)),
        ("sub", (Const(1), "s")),
        ("mul", (1.5, Const(2))),
        ("neg", (None,)),
        ("canon", (True,)),
        ("_key", (3,)),
        ("atoms", (3,)),
        ("ceil_div", (Const(1), 0)),
        ("floor_div", (Const(1), True)),
        ("floor_div", (Const(1), 2.0)),
        ("ceil_div", ("s", 2)),
        ("min_", ("s", Const(1))),
        ("select", (COND, Const(1), 1.5)),
    ],
)
def test_the_same_errors(step, args):
    with pytest.raises(Exception) as py:
        PY[step](*args)
    with pytest.raises(type(py.value)) as c:
        C[step](*args)
    assert str(c.value) == str(py.value)


def exprs(x):
    """Every Expr in a result of `run` (lists and tuples walked)."""
    if isinstance(x, affine.Expr):
        yield x
    elif isinstance(x, list | tuple):
        for y in x:
            yield from exprs(y)


@pytest.mark.parametrize("seed", range(0, 60, 6))
def test_the_text_of_random_trees(seed):
    trees = list(exprs(run(C, seed)))
    assert len(trees) > 20
    for e in trees:
        assert affine._render(e) == affine._render_py(e) == str(e)


def test_the_text_of_every_node_kind_and_of_other_objects():
    x, y = Val(VALUES[0]), Val(Value(None, ""))  # (a Value without a name shows its id)
    for e in (
        Mul(x, Const(-1)),
        Mul(Add(x, y), Const(-5)),
        Mul(Sub(x, y), Add(y, Const(2))),
        Sub(x, Sub(y, x)),
        Sub(x, Mul(y, Const(-2))),
        CeilDiv(Sub(x, Const(1)), 4),
        FloorDiv(x, 8),
        Min(x, Max(y, Const(-2))),
        Select(COND, x, Const(3)),
        Carried(VALUES[1], 2),
        SubVal(VALUES[2]),
        Add(SubAdd(x, y), SubVal(VALUES[2])),
        Mul(x, Const(True)),
        "not an expression",
    ):
        assert affine._render(e) == affine._render_py(e), e
    for bad in (Val(3), Add(Val(None), Const(1))):  # a value with no name: the same error
        with pytest.raises(AttributeError) as py:
            affine._render_py(bad)
        with pytest.raises(AttributeError) as c:
            affine._render(bad)
        assert str(c.value) == str(py.value)
