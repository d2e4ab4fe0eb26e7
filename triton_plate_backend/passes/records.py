"""Frozen dataclasses the code generator builds by the thousand (expression nodes, immediates, views,
access forms), made with a plain ``__init__``.

A frozen dataclass's generated ``__init__`` sets each field through ``object.__setattr__`` (its own
``__setattr__`` refuses): a call and a global lookup per field. `plain_init` gives such a class an
``__init__`` that writes the fields into the instance's ``__dict__`` in field order, with the same
signature, defaults and qualified name: the same ``vars()``, the same errors for a wrong call. The
generated one stays as ``cls._dataclass_init`` (the reference; tests/unit/test_pass_records.py
compares the two). A class with ``__slots__``, ``__post_init__``, a field outside ``__init__``, a
default factory or an ``InitVar`` keeps its generated ``__init__`` (`plain_init` raises TypeError)."""

from __future__ import annotations

import dataclasses

try:
    from . import _affine  # the C slots (passes/csrc/affine.cpp, built by setup.py)
except ImportError:  # not built: the generated methods answer
    _affine = None


def plain_init(cls: type) -> type:
    """Give the frozen dataclass `cls` the plain ``__init__`` (module docstring); returns cls."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" in cls.__dict__ or hasattr(cls, "__post_init__"):
        raise TypeError(f"plain_init takes a frozen dataclass without __slots__ or __post_init__, not {cls!r}")
    fields = list(cls.__dataclass_fields__.values())
    args, body, defaults = [], [], {}
    for f in fields:
        if f._field_type is not dataclasses._FIELD:  # a ClassVar is no field; an InitVar is none of ours
            if f._field_type is dataclasses._FIELD_INITVAR:
                raise TypeError(f"plain_init: {cls.__name__}.{f.name} is an InitVar")
            continue
        if not f.init or f.default_factory is not dataclasses.MISSING or f.kw_only:
            raise TypeError(f"plain_init: {cls.__name__}.{f.name} is not a plain positional field")
        if f.default is dataclasses.MISSING:
            args.append(f.name)
        else:
            defaults[f"_d_{f.name}"] = f.default
            args.append(f"{f.name}=_d_{f.name}")
        body.append(f"    d[{f.name!r}] = {f.name}")
    text = f"def __init__(self, {', '.join(args)}):\n    d = self.__dict__\n" + "\n".join(body or ["    pass"])
    space: dict = {}
    exec(text, dict(defaults), space)  # noqa: S102 (the text is built from the class's own field names)
    init = space["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__annotations__ = dict(cls.__init__.__annotations__)
    cls._dataclass_init = cls.__init__
    cls.__init__ = init
    return cls


def compared_in_c(cls: type) -> type:
    """The generated ``__eq__`` and ``__hash__`` of the frozen dataclass `cls` answered in C where it is built
    (`_affine.eq_slot`, `_affine.field_hash_slot`): the same fields compared and hashed, without a method lookup
    and a Python frame each (the compiled walks key dicts by labels and views). The methods stay the class's (the
    reference); a subclass, or a method set later, is Python's again. Returns cls."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or not params.eq:
        raise TypeError(f"compared_in_c takes a frozen dataclass with a generated __eq__, not {cls!r}")
    if _affine is not None:
        fs = dataclasses.fields(cls)
        cls._eq_fields = tuple(f.name for f in fs if f.compare)
        cls._hash_fields = tuple(f.name for f in fs if (f.compare if f.hash is None else f.hash))
        _affine.eq_slot(cls)
        _affine.field_hash_slot(cls)
    return cls
