"""Complex tensors through their real views: ops whose complex result is the same op on ``view_as_real`` (the
real and imaginary parts as a trailing dim of 2), run that way on plate kernels for complex64 / complex128
operands. ``stand_in(name, op, kernel)`` wraps an overload's kernel (registry.register) where COMPLEX_VIEWS has it;
a lazy conjugate or negative bit is resolved first. Any other call (real operands, mixed dtypes, complex32, a
``dtype`` argument) is the kernel's, which sends what it does not cover to the host, counted.

- ``cat``: the real views concatenated along the same dim (operands of one rank, promoted to a complex type).
- ``sum`` / ``mean``: the real view reduced over the same dims (all but the trailing one for an empty dim list).
- ``index``: the real view indexed by the same indices (they never reach the trailing dim).
- ``mm`` / ``bmm``: two real matmuls of the parts side by side (shapes checked by the real matmuls); ``addmv`` over
  that product.
- ``angle``: atan2 of the imaginary and real parts (std::arg's).
- ``conj_physical``: a family (table.py rows ``_conj_physical``, which the composite ``conj_physical`` calls, and
  ``conj_physical``'s out= / in-place forms): the real view times (1, -1), into a tensor laid out as the input.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch

from .ops import Call
from .table import Row

PARTS = (torch.complex64, torch.complex128)


def _viewable(tensors) -> bool:
    """Plate tensors, all complex64 or all complex128."""
    tensors = list(tensors)
    return (
        bool(tensors)
        and len({t.dtype for t in tensors}) == 1
        and tensors[0].dtype in PARTS
        and all(t.device.type == "plate" for t in tensors)
    )


def _real(t: torch.Tensor) -> torch.Tensor:
    """``t``'s real view, a lazy conjugate or negative bit resolved first (conj_physical, neg on plate)."""
    return torch.view_as_real(t.resolve_conj().resolve_neg())


def _complex(real: torch.Tensor) -> torch.Tensor:
    if real.stride(-1) != 1 or any(s % 2 for s in real.stride()[:-1]):
        real = real.contiguous()
    return torch.view_as_complex(real)


def cat(op: torch._ops.OpOverload, kernel: Callable) -> Callable:
    def run(*args, **kwargs):
        call = Call(op, args, kwargs)
        tensors = list(call["tensors"])
        if tensors and all(t.device.type == "plate" for t in tensors):
            common = functools.reduce(torch.promote_types, (t.dtype for t in tensors))
            if common in PARTS:  # real operands promote to the complex type first, as cat's own promotion
                tensors = [t if t.dtype == common else t.to(common) for t in tensors]
        if _viewable(tensors) and len({t.dim() for t in tensors}) == 1 and tensors[0].dim() > 0:
            dim = call["dim"] % tensors[0].dim()
            return _complex(torch.cat([_real(t) for t in tensors], dim))
        return kernel(*args, **kwargs)

    return run


def reduction(op: torch._ops.OpOverload, kernel: Callable) -> Callable:
    """sum / mean (.default, .dim_IntList / .dim) without a dtype argument."""

    def run(*args, **kwargs):
        call = Call(op, args, kwargs)
        x = call["self"]
        if isinstance(x, torch.Tensor) and _viewable([x]) and call.bound.get("dtype") is None:
            dims = call.bound.get("dim")
            dims = list(range(x.dim())) if not dims else [d % x.dim() for d in dims] if x.dim() else []
            if not dims:  # a 0-dim tensor: nothing to reduce
                return x.clone()
            reduce = torch.sum if op._schema.name == "aten::sum" else torch.mean
            return _complex(reduce(_real(x), dims, keepdim=bool(call.bound.get("keepdim", False))))
        return kernel(*args, **kwargs)

    return run


def index(op: torch._ops.OpOverload, kernel: Callable) -> Callable:
    def run(*args, **kwargs):
        call = Call(op, args, kwargs)
        x = call["self"]
        if _viewable([x]) and x.dim() > 0:
            indices = tuple(slice(None) if i is None else i for i in call["indices"])  # aten's None: a whole dim
            return _complex(_real(x)[indices])
        return kernel(*args, **kwargs)

    return run


def matmul(op: torch._ops.OpOverload, kernel: Callable) -> Callable:
    """mm / bmm: (Ar + i Ai)(Br + i Bi) as two real matmuls of [Ar | Ai] with [Br; -Bi] and [Bi; Br] (plate's
    matmul rows; the CPU's cgemm sums in another order)."""

    def run(*args, **kwargs):
        call = Call(op, args, kwargs)
        a, b = call["self"], call["mat2"]
        if not _viewable([a, b]) or a.dim() != b.dim() or a.shape[:-2] != b.shape[:-2] or a.shape[-1] != b.shape[-2]:
            return kernel(*args, **kwargs)  # torch's error for shapes that do not multiply
        ra, rb = _real(a), _real(b)
        left = torch.cat([ra[..., 0], ra[..., 1]], -1)
        real = left @ torch.cat([rb[..., 0], -rb[..., 1]], -2)
        imag = left @ torch.cat([rb[..., 1], rb[..., 0]], -2)
        return torch.view_as_complex(torch.stack([real, imag], -1))

    return run


def addmv(op: torch._ops.OpOverload, kernel: Callable) -> Callable:
    """beta * self + alpha * (mat @ vec) of complex tensors (addmv and addmv_, which torch.mv calls): the product as
    the complex mm above (a column), the scaling and the sum by plate's complex mul and add; beta = 0 reads no self
    (its NaNs ignored), as ATen."""
    in_place = op._schema.name == "aten::addmv_"

    def run(*args, **kwargs):
        call = Call(op, args, kwargs)
        x, mat, vec, beta, alpha = call["self"], call["mat"], call["vec"], call["beta"], call["alpha"]
        if not _viewable([x, mat, vec]) or mat.dim() != 2 or vec.dim() != 1 or mat.shape[1] != vec.shape[0]:
            return kernel(*args, **kwargs)  # torch's error for shapes that do not multiply
        if x.dim() > 1 or (x.dim() == 1 and x.shape[0] not in (1, mat.shape[0])) or (in_place and x.dim() != 1):
            return kernel(*args, **kwargs)
        product = torch.mm(mat, vec.unsqueeze(1)).squeeze(1)
        if alpha != 1:
            product = product * alpha
        if beta != 0:
            product = (x if beta == 1 else x * beta) + product
        result = product.expand(mat.shape[0]).contiguous()
        return x.copy_(result) if in_place else result

    return run


def product(op: torch._ops.OpOverload, kernel: Callable) -> Callable:
    """prod of a complex tensor (all of it, or along a dim) without a dtype argument: pairs of elements multiplied
    by plate's complex mul, a halving at a time (a tree: the CPU multiplies in another order), 1 where empty."""

    def run(*args, **kwargs):
        call = Call(op, args, kwargs)
        x = call["self"]
        if not _viewable([x]) or call.bound.get("dtype") is not None:
            return kernel(*args, **kwargs)
        whole = "dim" not in call.bound
        dim = 0 if whole else call["dim"] % max(x.dim(), 1)
        rows = x.reshape(-1) if whole else (x.unsqueeze(0) if x.dim() == 0 else x).movedim(dim, -1)
        while rows.shape[-1] > 1:
            if rows.shape[-1] % 2:
                one = torch.ones((*rows.shape[:-1], 1), dtype=rows.dtype, device=rows.device)
                rows = torch.cat([rows, one], -1)
            rows = rows[..., 0::2] * rows[..., 1::2]
        if rows.shape[-1] == 0:
            rows = torch.ones((*rows.shape[:-1], 1), dtype=rows.dtype, device=rows.device)
        result = rows[..., 0]
        if whole:
            return result.reshape(()).clone()
        if x.dim() == 0:
            return result.reshape(()).clone()
        return (result.unsqueeze(dim) if call["keepdim"] else result).contiguous()

    return run


# pow(z, exponent) exponents ATen's CPU kernel computes without std::pow (pow_tensor_scalar_optimized_kernel)
SPECIAL_POWERS: dict[float, Callable] = {
    0.0: torch.ones_like,  # pow_out fills 1 and copies the base before any kernel
    1.0: torch.clone,
    0.5: torch.sqrt,
    2.0: lambda z: z * z,
    3.0: lambda z: z * z * z,
    -0.5: lambda z: torch.reciprocal(torch.sqrt(z)),
    -1.0: torch.reciprocal,
    -2.0: lambda z: torch.reciprocal(z * z),
}


def power(op: torch._ops.OpOverload, kernel: Callable) -> Callable:
    """pow(complex tensor, number): the exponents ATen's CPU kernel takes apart (SPECIAL_POWERS) as those ops;
    others are the kernel's (complex_pow, std::pow's formula)."""

    def run(*args, **kwargs):
        call = Call(op, args, kwargs)
        x, exponent = call["self"], call["exponent"]
        if _viewable([x]) and isinstance(exponent, (int, float)) and float(exponent) in SPECIAL_POWERS:
            return SPECIAL_POWERS[float(exponent)](x)
        return kernel(*args, **kwargs)

    return run


def angle(op: torch._ops.OpOverload, kernel: Callable) -> Callable:
    """angle of a complex tensor: std::arg's atan2(imag, real) of the parts (the out= form stays the kernel's)."""

    def run(*args, **kwargs):
        call = Call(op, args, kwargs)
        x = call["self"]
        if _viewable([x]) and call.target_name is None:
            parts = _real(x)
            # contiguous as the CPU's result (the meta kernel keeps a transposed input's layout)
            return torch.atan2(parts[..., 1], parts[..., 0]).contiguous()
        return kernel(*args, **kwargs)

    return run


def conj_physical(op: torch._ops.OpOverload, row: Row) -> Callable:
    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        x = call["self"]
        if not x.is_complex() and call.target_name is None and not call.mixed:
            return x.clone()  # a real tensor is its own conjugate (ATen's copy)
        if not _viewable([x]) or call.target_name is not None:
            return call.on_host()
        out = torch.empty_like(x)
        signs = torch.tensor([1.0, -1.0], dtype=torch.view_as_real(x).dtype, device=x.device)
        torch.view_as_real(out).copy_(torch.view_as_real(x) * signs)
        return out

    return kernel


# overload -> the wrapper that runs its complex calls on real views
COMPLEX_VIEWS = {
    "cat.default": cat,
    "sum.default": reduction,
    "sum.dim_IntList": reduction,
    "mean.dim": reduction,
    "index.Tensor": index,
    "angle.default": angle,
    "mm.default": matmul,
    "bmm.default": matmul,
    "addmv.default": addmv,
    "addmv_.default": addmv,
    "pow.Tensor_Scalar": power,
    "prod.default": product,
    "prod.dim_int": product,
}
FAMILIES = {"conj_physical": conj_physical}


def stand_in(name: str, op: torch._ops.OpOverload, kernel: Callable) -> Callable:
    """The kernel registered for the overload ``name``: ``kernel``, wrapped where COMPLEX_VIEWS has the overload."""
    wrap = COMPLEX_VIEWS.get(name)
    return kernel if wrap is None else wrap(op, kernel)
