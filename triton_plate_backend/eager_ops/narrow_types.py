"""Stand-in types: element types plate's kernels do not load or store (launch.REAL_DTYPES lacks the float8
types and uint16/uint32/uint64), for the ops where another type gives the same result exactly. ``stand_in(op,
kernel)`` wraps an op's kernel (registry.register): a call whose operands are all of one such type runs the op on
their stand-ins; any other call is the kernel's (which sends a type it cannot load to the host, counted).

- ``eq``/``ne``: an unsigned integer compares as the signed integer of its width (integer equality is equality of
  the bits; a number operand wraps to the type first, as TensorIterator casts it); a float8 value as float16 (every
  float8_e4m3fn/e5m2/fnuz value is exact in float16, so NaN stays unequal and -0 == +0; a number operand rounds to
  the float8 type first, as torch rounds a scalar to the common type). Bitmask tensors (uint32 views) and float8
  results compared with ``==`` (triton_kernels' tests) stay on the device.
- ``cat``: inputs all of one such type (no conversion) concatenate as the signed integer of its width: a copy moves
  bits.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

# a type plate does not load -> the type of the same width whose bits a copy moves
BITS = {
    torch.uint16: torch.int16,
    torch.uint32: torch.int32,
    torch.uint64: torch.int64,
    torch.float8_e4m3fn: torch.int8,
    torch.float8_e5m2: torch.int8,
    torch.float8_e4m3fnuz: torch.int8,
    torch.float8_e5m2fnuz: torch.int8,
}
FLOAT8 = frozenset(d for d in BITS if d.is_floating_point)


def _compare_type(dtype: torch.dtype) -> torch.dtype:
    """The type ``dtype``'s values compare in, exactly: float16 for a float8, the signed integer of the width else."""
    return torch.float16 if dtype in FLOAT8 else BITS[dtype]


def _as(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``x``'s values in ``_compare_type(dtype)``: a float8 tensor converted (exact), an unsigned one viewed."""
    return x.to(torch.float16) if dtype in FLOAT8 else x.view(BITS[dtype])


def _number(value, dtype: torch.dtype):
    """A number operand as torch compares it with a ``dtype`` tensor: rounded (float8) or wrapped (unsigned) to
    ``dtype``, then as a value of the compare type. None: the number changes the result type (a float with an
    unsigned tensor), which the op's own kernel answers."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if dtype in FLOAT8:
        return torch.tensor(float(value)).to(dtype).to(torch.float16).item()
    if isinstance(value, float):
        return None
    bits = dtype.itemsize * 8
    wrapped = value % (1 << bits)
    return wrapped - (1 << bits) if wrapped >= 1 << (bits - 1) else wrapped


def comparison(op: torch._ops.OpOverload, kernel: Callable) -> Callable:
    """eq/ne (.Tensor, .Scalar) of operands of one stand-in type on the device: the op on their compare types."""

    def run(*args, **kwargs):
        if len(args) == 2 and not kwargs:
            x, other = args
            if isinstance(x, torch.Tensor) and x.device.type == "plate" and x.dtype in BITS:
                if isinstance(other, torch.Tensor):
                    if other.dtype == x.dtype and other.device == x.device:
                        return op(_as(x, x.dtype), _as(other, x.dtype))
                else:
                    number = _number(other, x.dtype)
                    if number is not None:
                        return op(_as(x, x.dtype), number)
        return kernel(*args, **kwargs)

    return run


def cat(op: torch._ops.OpOverload, kernel: Callable) -> Callable:
    """cat(tensors, dim) of plate tensors of one stand-in type: cat of their integer views, viewed back."""

    def run(*args, **kwargs):
        tensors = args[0] if args else kwargs.get("tensors")
        dtypes = {t.dtype for t in tensors} if tensors else set()
        if len(dtypes) == 1 and (dtype := dtypes.pop()) in BITS and all(t.device.type == "plate" for t in tensors):
            rest = {**kwargs}
            rest.pop("tensors", None)
            return op([t.view(BITS[dtype]) for t in tensors], *args[1:], **rest).view(dtype)
        return kernel(*args, **kwargs)

    return run


# overload -> the wrapper that gives its stand-in types to it
STAND_INS = {
    "eq.Tensor": comparison,
    "eq.Scalar": comparison,
    "ne.Tensor": comparison,
    "ne.Scalar": comparison,
    "cat.default": cat,
}


def stand_in(name: str, op: torch._ops.OpOverload, kernel: Callable) -> Callable:
    """The kernel registered for the overload ``name``: ``kernel``, wrapped where STAND_INS has the overload."""
    wrap = STAND_INS.get(name)
    return kernel if wrap is None else wrap(op, kernel)
