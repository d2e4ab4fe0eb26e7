"""The ``special`` family of eager kernels: torch.special's functions (and digamma, polygamma, the
orthogonal polynomials, ...) on plate tensors, run by special.py's element functions.

Such a call is elementwise (ops.elementwise's checks, promotion and layout) with two differences:

- a half or bfloat16 operand of a function whose CPU kernel takes float and double only (FLOAT_ONLY) goes
  to the host, which raises torch's own "not implemented for 'Half'" error;
- the kernel takes a scalar LIMIT bounding the function's data-dependent loop (the largest degree n of a
  polynomial, the number of terms zeta sums before its Euler-Maclaurin tail): read from the operand here,
  because a loop bound inside a kernel must be a scalar. A LIMIT above MAX_LIMIT (a degree in the millions,
  a zeta shift q far below 0) leaves the call to the host rather than run that many steps on the simulator.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable

import torch

from ..torch_device.accumulation import tensors_in
from . import launch
from .ops import (
    _WRAPPED_DTYPES,
    HALF,
    Call,
    _overlaps_target,
    _plate_device,
    checked,
    real_operands,
    result_and_strides,
)
from .table import BESSEL, POLYNOMIALS, Row

MAX_LIMIT = 1 << 16
# ops (aten names less "special_") whose CPU kernels dispatch float and double only (AT_DISPATCH_FLOATING_TYPES)
FLOAT_ONLY = frozenset(
    {
        *POLYNOMIALS,
        *(f"bessel_{kind}" for kind in BESSEL),
        "airy_ai",
        "erfcx",
        "modified_bessel_i0",
        "modified_bessel_i1",
        "modified_bessel_k0",
        "modified_bessel_k1",
        "scaled_modified_bessel_k0",
        "scaled_modified_bessel_k1",
        "spherical_bessel_j0",
        "zeta",
        "ndtri",
        "log_ndtr",
    }
)
DEGREE = "degree"  # LIMIT: the largest degree n (the second operand)
ZETA_TERMS = "zeta_terms"  # LIMIT: the direct terms zeta sums for the smallest shift q (LIMITS names the operand)


def _elements(t: torch.Tensor, ct: torch.dtype) -> torch.Tensor:
    """The operand's values as the kernel reads them (converted to the compute type), on the host: a copy,
    not an op on the plate tensor."""
    return t.detach().cpu().to(ct)


def _degree_limit(n: torch.Tensor, ct: torch.dtype) -> int:
    """The largest degree: of the values special._degree keeps (NaN, inf and |n| >= 9e18 count as negative)."""
    values = _elements(n, ct)
    values = values[torch.isfinite(values) & (values.abs() < 9.0e18)]
    return int(values.max().item()) if values.numel() else 0


def _zeta_limit(q: torch.Tensor, ct: torch.dtype) -> int:
    """ATen's loop `while (i < 9 || a <= 9)`, a = q + i: max(9, floor(9 - q) + 1) steps."""
    values = _elements(q, ct)
    values = values[torch.isfinite(values)]
    if not values.numel():
        return 9
    return max(9, math.floor(9 - float(values.min())) + 1)


def _numbers_wrapped(op: torch._ops.OpOverload, args, kwargs):
    """(args, kwargs) with a Python number given for a Tensor argument (a Scalar overload's, unwrapped on
    its way here) as a CPU 0-dim tensor of the type torch promotes the number to against the call's tensor
    (a wrapped number never raises the tensor's type), so the meta kernel gives the CPU's result type."""
    args, kwargs = list(args), dict(kwargs)
    tensors = [v for v in (*args, *kwargs.values()) if isinstance(v, torch.Tensor)]
    for i, a in enumerate(op._schema.arguments):
        value = args[i] if i < len(args) else kwargs.get(a.name)
        if isinstance(a.type, torch.TensorType) and isinstance(value, (bool, int, float)):
            dtype = torch.result_type(tensors[0], value) if tensors else _WRAPPED_DTYPES[type(value)]
            number = torch.tensor(value, dtype=dtype)
            if i < len(args):
                args[i] = number
            else:
                kwargs[a.name] = number
    return tuple(args), kwargs


def special(op: torch._ops.OpOverload, row: Row) -> Callable:
    limit_of = LIMITS.get(row.fn)
    float_only = op._schema.name.removeprefix("aten::").removeprefix("special_") in FLOAT_ONLY

    @checked(op, prepare=_numbers_wrapped)
    def kernel(call: Call, expected):
        if float_only and any(t.dtype in HALF for t in tensors_in(call.bound.values())):
            return call.on_host()
        device = _plate_device(call, row.operands)
        values = [call[name] for name in row.operands]
        if device is None or _overlaps_target(call, values):
            return call.on_host()
        typed = real_operands(call, row, expected, values, device)
        if typed is None or not typed[0].is_floating_point:
            return call.on_host()
        ct, operands = typed
        limit = 0
        if limit_of is not None:
            kind, index, cap = limit_of
            if kind == DEGREE:
                limit = _degree_limit(operands[index], ct)
            else:
                limit = _zeta_limit(operands[index], ct)
            limit = limit if cap is None else min(limit, cap)
            if limit > MAX_LIMIT:
                return call.on_host()
        laid_out = result_and_strides(call, expected, device, operands, split=False)  # _launch: RANK dims
        if laid_out is None:
            return call.on_host()
        out, strides = laid_out
        _launch(expected.shape, [out, *operands], strides, limit, row.fn, ct)
        return out

    return kernel


def _launch(shape, tensors: list[torch.Tensor], strides: list[list[int]], limit: int, fn: str, ct: torch.dtype):
    """launch.launch's steps for special.py's kernel (which takes the scalar `limit` after the strides)."""
    n = math.prod(shape)
    if n == 0:
        return
    sizes, steps = launch.coalesce(shape, strides)
    out = tensors[0]
    pointers = list(tensors) + [out] * (4 - len(tensors))
    steps = steps + [[0] * launch.RANK] * (4 - len(steps))
    flat = [s for step in steps for s in step]
    special_kernels = importlib.import_module(f"{__package__}.special")
    special_kernels.special_pointwise[(launch.triton_cdiv(n, launch.BLOCK),)](
        *pointers, n, sizes[1], sizes[2], sizes[3], *flat, limit,
        FN=special_kernels.FUNCTIONS[fn], ARITY=len(tensors) - 1, CT=launch.triton_dtype(ct), BLOCK=launch.BLOCK,
        machine=launch.kernels().machine_of(out),
    )  # fmt: skip


# element function -> (how its LIMIT is read, the index of the operand it is read from, a cap: the Hermite
# polynomials are NaN above degree 512 (128 in float), so no lane needs more steps)
LIMITS = {
    **{name: (DEGREE, 1, None) for name in FLOAT_ONLY if "_polynomial_" in name and not name.startswith("hermite")},
    "hermite_polynomial_h": (DEGREE, 1, 513),
    "hermite_polynomial_he": (DEGREE, 1, 513),
    "zeta": (ZETA_TERMS, 1, None),
    "polygamma": (ZETA_TERMS, 0, None),
}

FAMILIES: dict[str, Callable[[torch._ops.OpOverload, Row], Callable]] = {"special": special}
