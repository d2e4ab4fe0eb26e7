"""passes/records.py: the frozen dataclasses the code generator builds by the thousand get a plain ``__init__``
that makes the same instance as the dataclass' generated one (kept as ``_dataclass_init``): the same
``vars()`` in the same order, the same defaults, the same TypeError for a wrong call; and `plain_init`
refuses a class whose generated ``__init__`` does more than set its fields."""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import InitVar, dataclass, field

import pytest

from triton_plate_backend.passes import access, access_forms, affine, context, emitter, records
from triton_plate_backend.passes.records import compared_in_c, plain_init

PLAIN = list(
    {
        cls: None
        for module in (affine, emitter, context, access_forms, access)
        for cls in vars(module).values()
        if isinstance(cls, type) and cls.__module__ == module.__name__ and "_dataclass_init" in cls.__dict__
    }
)


def test_the_hot_records_are_plain():
    names = {f"{c.__module__.rsplit('.', 1)[1]}.{c.__name__}" for c in PLAIN}
    assert {"affine.Add", "affine.Const", "affine.Mul", "emitter.Imm", "emitter.View", "access_forms.Box"} <= names
    assert len(PLAIN) == 26


def _calls(cls):
    """Calls of cls.__init__ by arity and keyword, some wrong: every positional prefix, all by keyword, an
    unknown keyword, a field given twice, one argument too many."""
    fields = [f for f in dataclasses.fields(cls)]
    values = [object() for _ in fields]
    out = [(tuple(values[:k]), {}) for k in range(len(fields) + 2)]
    out[-1] = (tuple(values) + (object(),), {})
    out.append(((), {f.name: v for f, v in zip(fields, values)}))
    out.append(((), {"no_such_field": 1}))
    if fields:
        out.append(((values[0],), {fields[0].name: values[0]}))
    return out


def _made(init, cls, args, kwargs):
    obj = object.__new__(cls)
    try:
        init(obj, *args, **kwargs)
    except TypeError as e:
        return f"TypeError: {e}"
    return list(vars(obj).items())


@pytest.mark.parametrize("cls", PLAIN, ids=lambda c: c.__qualname__)
def test_plain_init_makes_what_the_dataclass_init_makes(cls):
    for args, kwargs in _calls(cls):
        assert _made(cls.__init__, cls, args, kwargs) == _made(cls._dataclass_init, cls, args, kwargs)
    assert inspect.signature(cls.__init__) == inspect.signature(cls._dataclass_init)
    assert cls.__init__.__qualname__ == cls._dataclass_init.__qualname__


def test_instances_compare_and_hash_as_before():
    a, b = affine.add(affine.Val(None), 3), affine.add(affine.Val(None), 3)
    assert a is not b and a == b and hash(a) == hash(b)
    assert emitter.Imm(1.5) == emitter.Imm(1.5) and emitter.Label("L1") != emitter.Label("L2")
    with pytest.raises(dataclasses.FrozenInstanceError):
        emitter.Imm(1).value = 2
    assert dataclasses.replace(emitter.Imm(1), value=2) == emitter.Imm(2)


def test_plain_init_refuses_what_it_cannot_copy():
    @dataclass
    class Mutable:
        x: int

    @dataclass(frozen=True)
    class Post:
        x: int

        def __post_init__(self):
            pass

    @dataclass(frozen=True)
    class Factory:
        x: list = field(default_factory=list)

    @dataclass(frozen=True)
    class NoInit:
        x: int = field(default=0, init=False)

    @dataclass(frozen=True)
    class WithInitVar:
        x: InitVar[int]

    @dataclass(frozen=True)
    class KwOnly:
        x: int = field(kw_only=True)

    @dataclass(frozen=True, slots=True)
    class Slots:
        x: int

    for cls in (Mutable, Post, Factory, NoInit, WithInitVar, KwOnly, Slots, int):
        with pytest.raises(TypeError):
            plain_init(cls)


def test_plain_init_with_defaults_and_no_fields():
    @plain_init
    @dataclass(frozen=True)
    class Two:
        a: int
        b: tuple = (1, 2)

    @plain_init
    @dataclass(frozen=True)
    class Empty:
        pass

    assert vars(Two(1)) == {"a": 1, "b": (1, 2)} and Two(1, ()).b == () and vars(Empty()) == {}
    with pytest.raises(TypeError, match=r"Two.__init__\(\) missing 1 required positional argument: 'a'"):
        Two()


@pytest.mark.skipif(records._affine is None, reason="passes._affine is not built")
def test_labels_and_views_compare_and_hash_in_c_as_the_dataclass():
    """`compared_in_c`: a label's and a view's == and hash are the generated methods' answers, without their frames."""
    import sys

    buf = emitter.Buffer(64, "x")
    pairs = [
        (emitter.Label("L1"), emitter.Label("L1")),
        (emitter.Label("L1"), emitter.Label("L2")),
        (emitter.View(buf, 0, "f32", (4, 4), (4, 1)), emitter.View(buf, 0, "f32", (4, 4), (4, 1))),
        (emitter.View(buf, 0, "f32", (4, 4), (4, 1)), emitter.View(buf, 4, "f32", (4, 4), (4, 1))),
    ]
    seen = []
    sys.setprofile(lambda frame, event, arg: event == "call" and seen.append(frame.f_code.co_name))
    try:
        got = [(a == b, a != b, hash(a), {a: 1}.get(b)) for a, b in pairs]
    finally:
        sys.setprofile(None)
    assert "__eq__" not in seen and "__hash__" not in seen
    for (a, b), (eq, ne, h, found) in zip(pairs, got):
        want = type(a).__dict__["__eq__"](a, b)
        assert eq is want and ne is not want and (found == 1) is want
        assert h == type(a).__dict__["__hash__"](a) == hash(tuple(getattr(a, f.name) for f in dataclasses.fields(a)))
    assert emitter.Label("L1") != 3 and emitter.Label("L1") != emitter.Imm("L1")


@pytest.mark.skipif(records._affine is None, reason="passes._affine is not built")
def test_compared_in_c_gives_way_to_a_later_method_and_a_subclass_and_refuses_others():
    @compared_in_c
    @dataclass(frozen=True)
    class Rec:
        a: object = 5  # (the class attribute is the default: the instance's value is the field)
        b: object = field(default=0, compare=False)

    assert Rec(1, 2) == Rec(1, 3) and hash(Rec(1, 2)) == hash((1,)) and Rec(1) != Rec(2)
    assert Rec() == Rec(5) and hash(Rec()) == hash((5,)) and Rec() != Rec(None)

    class Sub(Rec):
        pass

    assert Sub(1) == Sub(1) and Sub(1) != Rec(1) and hash(Sub(5)) == hash((5,))
    Rec.__hash__ = lambda self: 9
    Rec.__eq__ = lambda self, other: "later"
    assert hash(Rec(1)) == 9 and (Rec(1) == Rec(2)) == "later"
    with pytest.raises(TypeError):
        compared_in_c(dataclass(type("Loose", (), {})))
    with pytest.raises(TypeError):
        records._affine.field_hash_slot(3)
