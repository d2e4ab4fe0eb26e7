"""Eager fp16/bf16 numerics like CUDA's: the ops that accumulate, computed wide and rounded once.

plate's eager ops run the host CPU's kernels (csrc/fallback.cpp). For fp16/bf16 inputs those may
accumulate in half precision (layer_norm's backward sums dW in fp16: 0.06 off at 1151x8192), and how
they block a sum or a matmul depends on the CPU (ISA, oneDNN/BLAS path, memory layout). CUDA's
kernels accumulate these ops in fp32 and round once to the half type; kernels are checked against
eager references computed on the same device, so plate does the same, and the same way on every host.

Each op of ACCUMULATING runs here on fp16/bf16 inputs (addbmm also on fp32): every
floating input is upcast to float64, the op is computed on the host, and each result is rounded once
to the dtype the op returns on CUDA (its meta kernel's; through float32, which for fp16/bf16 is the
same as rounding once: float32 has at least 2p+2 bits of each). float64 accumulation is fp32's and
more: the result is CUDA's within CUDA's own fp32 rounding. How, by kind:

- "matmul" (addbmm): the operands are split into integer slices whose products the host's float64 BLAS
  sums exactly, in whatever order it adds (matmul64): the same bits on every host CPU, for fp16, bf16
  and fp32, and the exact result to about 60 bits. (float64 addbmm keeps the host's BLAS.)
- "tree": sum/mean/var/std/vector norms add in a fixed pairwise order, elementwise: the same bits on
  every host CPU (a fp16 sum is even exact: its values are multiples of 2**-24 below 2**16).
- "host": norms' and softmax's forward and backward run the host's float64 kernel. The host's
  vectorized float64 may differ in the last bits between CPUs (lane count, libm); once rounded to
  fp16/bf16 that changes a result only when the exact value lies within about 2**-50 (relative) of a
  rounding midpoint of the half type: about one element in 2**38.

- "fft": the FFTs (_fft_c2c, _fft_r2c, _fft_c2r) of float32/complex64 tensors run the host's FFT in
  float64/complex128 and round once. The host's fp32 FFT (pocketfft) is off by O(log n) ulps of the largest
  output (2.5e-5 at 16^3 against numpy's float64 FFT); compiled code decomposes complex64 _fft_c2c into float64
  DFT products rounded once (Inductor's extern decompositions on plate). On CUDA eager and compiled both call cuFFT, so
  Inductor's tests compare a kernel with itself; here the two agree to the last rounding instead.

Other dtypes (float64, fp32 outside the matmul family and the FFTs, integers) keep the host kernel's behaviour.

sum, nansum, prod, mean, var, std, var_mean, std_mean, cumsum, cumprod, linalg_vector_norm, softmax/log_softmax,
layer norm and native_batch_norm (forward and backward) and the matmuls mm, bmm, addmm, baddbmm, addmv, dot and
_int_mm are no longer here: they are plate kernels (eager_ops/reductions.py, scans.py, composite.py, layer_norm.py,
matmul.py) accumulating in float32 as CUDA's, in a fixed order, on the device.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from .host_op_counter import count_host_op

HALF = (torch.float16, torch.bfloat16)
SLICES = 3  # a matmul operand's integer slices (matmul64): 3 x 21 bits cover fp32's 24 and a wide row


# -- fixed-order arithmetic (float64, elementwise only: the same bits on every host) -------------------


def pairwise_sum(x: torch.Tensor, dim: int) -> torch.Tensor:
    """Sum over `dim` by halving: element i adds element i + half, and an odd last one is carried."""
    n = x.shape[dim]
    if n == 0:
        return x.new_zeros(_drop(x.shape, dim))
    while n > 1:
        half = n // 2
        head = x.narrow(dim, 0, half) + x.narrow(dim, half, half)
        x = torch.cat([head, x.narrow(dim, 2 * half, 1)], dim) if n % 2 else head
        n = x.shape[dim]
    return x.select(dim, 0)


def _drop(shape, dim: int):
    dim %= len(shape)
    return shape[:dim] + shape[dim + 1 :]


def _reduced_dims(x: torch.Tensor, dim) -> list[int]:
    """The dims a reduction covers: None or [] is all of them (as aten's sum.dim_IntList says)."""
    if dim is None or (not isinstance(dim, int) and len(dim) == 0):
        return list(range(x.dim()))
    dims = [dim] if isinstance(dim, int) else list(dim)
    return sorted({d % max(x.dim(), 1) for d in dims})


def tree_sum(x: torch.Tensor, dim=None, keepdim: bool = False) -> torch.Tensor:
    """Sum over `dim` in a fixed pairwise order: the reduced dims flattened, in their order."""
    dims = _reduced_dims(x, dim)
    if x.dim() == 0:
        return x.clone()
    kept = [d for d in range(x.dim()) if d not in dims]
    count = math.prod(x.shape[d] for d in dims)
    flat = x.permute(*kept, *dims).reshape(*(x.shape[d] for d in kept), count)
    out = pairwise_sum(flat, flat.dim() - 1)
    if keepdim:
        out = out.reshape([1 if d in dims else x.shape[d] for d in range(x.dim())])
    return out


def _count(x: torch.Tensor, dim) -> int:
    return math.prod(x.shape[d] for d in _reduced_dims(x, dim)) if x.dim() else 1


def _pow2(exponent: torch.Tensor) -> torch.Tensor:
    """2**exponent (int64, within float64's normal range) as float64, built from the bits: exact."""
    return ((exponent + 1023) << 52).view(torch.float64)


def _slices(x: torch.Tensor, exponent: torch.Tensor, bits: int) -> list[torch.Tensor]:
    """x (|x| < 2**exponent along its rows) as SLICES integer-valued tensors of `bits` bits each, the
    most significant first: x ~ sum_p slice_p * 2**(exponent - (p + 1) * bits). Every step is exact."""
    rest = x * _pow2(-exponent)
    out = []
    for _ in range(SLICES):
        rest = rest * float(2**bits)
        digit = torch.trunc(rest)
        rest = rest - digit
        out.append(digit)
    return out


def matmul64(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """(..., M, K) @ (..., K, N) of float64 tensors holding float32-representable values, the same bits
    on every host: each operand is split into integer slices of `bits` bits (scaled per row of a, per
    column of b) so small that a slice product's dot products, K terms below 2**53, are exact in
    float64 whatever order the host's BLAS adds them in; the slice products are then combined in a
    fixed order, elementwise. With SLICES slices of 21 bits (K <= 1024) this keeps 63 bits below each
    row's (column's) largest value: far inside float32's rounding, let alone a half type's. Infinities
    and NaNs take the plain float64 product, which is order-independent (finite parts cannot overflow)."""
    k = a.shape[-1]
    bits = max(1, (53 - max(k - 1, 1).bit_length()) // 2)
    finite_a, finite_b = torch.isfinite(a), torch.isfinite(b)
    plain = None
    if not (bool(finite_a.all()) and bool(finite_b.all())):
        plain = torch.matmul(a, b)
        a, b = torch.where(finite_a, a, 0.0), torch.where(finite_b, b, 0.0)
    row = torch.frexp(a.abs().amax(-1, keepdim=True) if k else a.new_zeros(*a.shape[:-1], 1))[1].long()
    col = torch.frexp(b.abs().amax(-2, keepdim=True) if k else b.new_zeros(*b.shape[:-2], 1, b.shape[-1]))[1].long()
    sa, sb = _slices(a, row, bits), _slices(b.mT, col.mT, bits)
    out = None
    for order in range(SLICES - 1, -1, -1):  # the least significant terms first, in a fixed order
        for p in range(order + 1):
            term = torch.matmul(sa[p], sb[order - p].mT) * float(2.0 ** (-(order + 2) * bits))
            out = term if out is None else out + term
    out = out * _pow2(row) * _pow2(col)
    return out if plain is None else torch.where(torch.isfinite(plain), out, plain)


# -- the ops: each takes the op's arguments with every floating tensor in float64 ----------------------


def _sum(x, dim=None, keepdim=False, *, dtype=None):
    return tree_sum(x, dim, keepdim)


def _mean(x, dim=None, keepdim=False, *, dtype=None):
    return tree_sum(x, dim, keepdim) / _count(x, dim)


def _vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    ord = float(ord)
    a = x.abs()
    if ord == math.inf:
        return torch.amax(a, _reduced_dims(x, dim), keepdim) if a.numel() else tree_sum(a, dim, keepdim)
    if ord == -math.inf:
        return torch.amin(a, _reduced_dims(x, dim), keepdim)
    if ord == 0:
        return tree_sum((a != 0).to(x.dtype), dim, keepdim)
    if ord == 1:
        return tree_sum(a, dim, keepdim)
    if ord == 2:
        return torch.sqrt(tree_sum(a * a, dim, keepdim))
    return tree_sum(a.pow(ord), dim, keepdim).pow(1.0 / ord)


def _norm(x, p=2, dim=None, keepdim=False, *, dtype=None):
    return _vector_norm(x, 2 if p is None else p, dim, keepdim)


def _addbmm(c, a, b, *, beta=1, alpha=1):
    # sum over the batch of a[i] @ b[i] is one matmul over the batch and K together
    flat_a = a.permute(1, 0, 2).reshape(a.shape[1], -1)
    return _scaled_add(matmul64(flat_a, b.reshape(-1, b.shape[-1])), c, beta, alpha)


def _scaled_add(product, c, beta, alpha):
    """alpha * product + beta * c, as cuBLAS's epilogue (beta == 0 ignores c, NaNs included)."""
    out = product if alpha == 1 else product * alpha
    if beta == 0:
        return out
    return out + (c if beta == 1 else c * beta)


def check_softmax_backward(grad_output, output, dim, input_dtype):
    """CUDA's check: a softmax backward whose grad is not of the input's dtype is the half-to-float one (float32
    grad of a float16 input); CPU's kernel would return the grad's dtype, the meta kernel the input's."""
    if grad_output.dtype != input_dtype and not (grad_output.dtype == torch.float32 and input_dtype == torch.float16):
        raise RuntimeError("expected input and grad types to match, or input to be at::Half and grad to be at::Float")


@dataclass(frozen=True)
class Rule:
    kind: str  # "matmul", "tree", "host" or "fft" (the module docstring says what each guarantees)
    compute: Callable | None = None  # None: the aten op itself on float64 host tensors
    check: Callable | None = None  # raises CUDA's error for arguments CUDA's kernel refuses (the op's arguments)

    def applies_to(self, dtypes: set[torch.dtype]) -> bool:
        if self.kind == "fft":
            return bool(dtypes & {torch.float32, torch.complex64})
        wide = HALF + (torch.float32,) if self.kind == "matmul" else HALF
        if self.kind == "matmul" and not all(d.is_floating_point for d in dtypes):
            return False  # an integer operand: the host kernel raises its dtype error, as CUDA's does
        return bool(dtypes & set(wide))


# aten overloads (the ones that reach the plate device: composite ones decompose into these) -> rule
ACCUMULATING: dict[str, Rule] = {
    # addbmm (mm, bmm, addmm, baddbmm, addmv, dot and _int_mm are plate kernels: eager_ops/matmul.py)
    "addbmm": Rule("matmul", _addbmm),
    # reductions (sum.default, logsumexp, norm.Scalar decompose into these; sum, nansum, prod, cumprod and mean are
    # plate kernels)
    "norm.ScalarOpt_dim": Rule("tree", _norm),
    "norm.ScalarOpt_dim_dtype": Rule("tree", _norm),
    # norms, forward and backward (rms_norm upcasts to float32 itself, then reduces with mean.dim)
    "native_group_norm": Rule("host"),
    "native_group_norm_backward": Rule("host"),
    "_native_batch_norm_legit": Rule("host"),
    "_native_batch_norm_legit.no_stats": Rule("host"),
    "_batch_norm_with_update": Rule("host"),
    "batch_norm_backward": Rule("host"),
    # FFTs (torch.fft's functions decompose into these)
    "_fft_c2c": Rule("fft"),
    "_fft_r2c": Rule("fft"),
    "_fft_c2r": Rule("fft"),
}

# arguments that name a compute dtype: on the float64 copies the op computes in float64 instead
_WIDE_ARGUMENTS = {"dtype": None, "half_to_float": False, "input_dtype": torch.float64}


def _host(value, wide: bool):
    """A plate value as a host one; floating tensors in float64 (complex64 in complex128) when `wide`."""
    if isinstance(value, torch.Tensor):
        host = value.cpu()
        if wide and host.dtype == torch.complex64:
            return host.to(torch.complex128)
        return host.double() if wide and host.is_floating_point() else host
    if isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value):
        return type(value)(_host(v, wide) for v in value)
    return value


def _meta(value):
    if isinstance(value, torch.Tensor):
        return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device="meta")
    if isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value):
        return type(value)(_meta(v) for v in value)
    return value


def _dtypes(values) -> set[torch.dtype]:
    found = set()
    for v in values:
        if isinstance(v, torch.Tensor):
            found.add(v.dtype)
        elif isinstance(v, (list, tuple)):
            found |= _dtypes(v)
    return found


def _flat(result) -> list:
    return list(result) if isinstance(result, (tuple, list)) else [result]


def _round_to(value: torch.Tensor, dtype: torch.dtype, device) -> torch.Tensor:
    """A host result rounded once to `dtype`, on `device`."""
    if value.dtype == torch.float64 and dtype in HALF:
        value = value.float()  # float64 -> float32 -> half rounds as float64 -> half does
    return value.to(dtype).to(device)


def tensors_in(values):
    """The tensors among an op's argument values, nested lists and tuples included."""
    for v in values:
        if isinstance(v, torch.Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from tensors_in(v)


def _device_of(values, op: str) -> torch.device:
    """The plate device of the arguments; mixed devices raise as the CPU fallback does (a 0-dim CPU
    tensor is a scalar, as in TensorIterator)."""
    tensors = list(tensors_in(values))
    device = next(t.device for t in tensors if t.device.type != "cpu")
    for t in tensors:
        if t.device != device and not (t.device.type == "cpu" and t.dim() == 0):
            raise RuntimeError(
                f"Expected all tensors to be on the same device, but found at least two devices, {device} and "
                f'{t.device}! (plate: in {op}; move the tensors with .to("plate") or .cpu() first)'
            )
    return device


def kernel_for(op: torch._ops.OpOverload, rule: Rule) -> Callable:
    """The plate kernel of `op`: wide (float64, rounded once) where `rule` applies, else the host's own."""
    schema = op._schema
    names = [a.name for a in schema.arguments]
    # the batch norms (_native_batch_norm_legit, _batch_norm_with_update) update their running statistics without
    # saying so in their schemas
    written = [
        a.name
        for a in schema.arguments
        if (a.alias_info is not None and a.alias_info.is_write) or a.name in ("running_mean", "running_var")
    ]
    outs = [a.name for a in schema.arguments if a.is_out]
    by_alias = {frozenset(a.alias_info.before_set): a.name for a in schema.arguments if a.alias_info}
    operator = f"{schema.name}.{op._overloadname}"

    def kernel(*args, **kwargs):
        count_host_op(operator)  # it computes on the host, as the CPU fallback's ops do
        bound = dict(zip(names, args))
        bound.update({a.name: kwargs.get(a.name, a.default_value) for a in schema.arguments[len(args) :]})
        device = _device_of(bound.values(), str(op))
        if rule.check is not None:
            rule.check(**bound)
        wide = rule.applies_to(_dtypes(bound.values()))
        expected = _flat(op(**{k: _meta(v) for k, v in bound.items()}))  # CUDA's result dtypes
        host = {k: _host(v, wide) for k, v in bound.items()}
        if wide:
            host.update({k: v for k, v in _WIDE_ARGUMENTS.items() if k in host})
        if wide and rule.compute is not None:  # functional compute; out= arguments are filled below
            given = {k: v for k, v in host.items() if k not in outs}
            positional = [given.pop(a.name) for a in schema.arguments if not a.kwarg_only and a.name in given]
            results = _flat(rule.compute(*positional, **given))
        else:
            results = _flat(op(**host))
        for name in written:  # out= arguments and running statistics (batch norm)
            original = bound[name]
            if original is None:
                continue
            value = results[outs.index(name)] if name in outs else host[name]
            value = _round_to(value, original.dtype, original.device)
            if original.shape != value.shape:
                original.resize_(value.shape)
            original.copy_(value)
        returned = []
        for ret, value, like in zip(schema.returns, results, expected, strict=True):
            alias = ret.alias_info
            if alias is not None and alias.is_write:  # returns its written argument
                returned.append(bound[by_alias[frozenset(alias.before_set)]])
            elif value is None or like is None:  # an output the mask left out (norms' backward)
                returned.append(None)
            else:
                returned.append(_round_to(value, like.dtype, device))
        return returned[0] if len(returned) == 1 else tuple(returned)

    return kernel


_library = None


def register() -> None:
    """Put ACCUMULATING's kernels on the plate device (idempotent)."""
    global _library
    if _library is not None:
        return
    library = torch.library.Library("aten", "IMPL")
    for name, rule in ACCUMULATING.items():
        packet, _, overload = name.partition(".")
        op = getattr(getattr(torch.ops.aten, packet), overload or "default")
        library.impl(op, kernel_for(op, rule), "PrivateUse1")
    _library = library
