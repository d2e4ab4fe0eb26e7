"""The meta kernels' results, remembered per call signature: an eager kernel runs its op on meta tensors first
(ops.Call.meta) for torch's checks and the result's layout, and for most ops torch's meta kernel is a Python ref
(torch._refs through _prims_common's type promotion and Dynamo's disable wrapper): 0.16 ms of CPU for a small
``x + y``, 3.8 ms for isclose's decomposition (assert_close), each call. A meta kernel is a function of what its
meta arguments hold (shapes, strides, dtypes, the other arguments' values) and of the default dtype, so the same
signature gives the same result: the memo keys on exactly that, and leaves out whatever it cannot key exactly (a
host tensor, whose values a meta kernel may read; a tensor subclass; a symbolic size; an unknown argument type)."""

from __future__ import annotations

import math

import torch

# the most signatures remembered: a full memo starts over (test suites make many shapes; a signature is ~1 KB)
LIMIT = 4096
_results: dict = {}
# arguments keyed by value (their type too: True == 1, but a bool operand promotes as bool)
_PLAIN = frozenset({int, bool, str, type(None), torch.dtype, torch.device, torch.layout, torch.memory_format})


class _Unkeyed(Exception):
    """An argument the memo cannot key exactly."""


def _key(value):
    kind = type(value)
    if kind is torch.Tensor:
        if value.device.type == "cpu":  # passed to the meta kernel as it is (see ops._meta): its values may count
            raise _Unkeyed
        return (value.dtype, value.shape, value.stride())
    if kind in _PLAIN:
        return (kind, value)
    if kind is float:  # -0.0 == 0.0 and NaN != NaN: key the sign and NaN-ness too
        return (kind, "nan") if value != value else (kind, value, math.copysign(1.0, value))
    if kind is complex:
        return (kind, _key(value.real), _key(value.imag))
    if kind is list or kind is tuple:
        return (kind, *(_key(v) for v in value))
    if isinstance(value, torch.Generator):  # the meta kernel gets None
        return (torch.Generator,)
    raise _Unkeyed


def key(op: torch._ops.OpOverload, bound: dict):
    """The signature of a call's meta run (``bound``: its arguments by schema name, in schema order); None when
    an argument cannot be keyed exactly."""
    try:
        return (op, torch.get_default_dtype(), *(_key(v) for v in bound.values()))
    except _Unkeyed:
        return None


def lookup(signature):
    return _results.get(signature)


def remember(signature, result) -> None:
    """Remember a meta run's result: a meta tensor or a tuple of them (None where an output is absent)."""
    parts = result if isinstance(result, tuple) else (result,)
    if not all(p is None or (type(p) is torch.Tensor and p.is_meta) for p in parts):
        return
    if len(_results) >= LIMIT:
        _results.clear()
    _results[signature] = result
