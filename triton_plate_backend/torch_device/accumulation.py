"""Eager fp16/bf16 numerics like CUDA's: the ops that accumulate, computed wide and rounded once.

plate's eager ops run the host CPU's kernels (csrc/fallback.cpp). For fp16/bf16 inputs those may
accumulate in half precision (layer_norm's backward sums dW in fp16: 0.06 off at 1151x8192), and how
they block a sum or a matmul depends on the CPU (ISA, oneDNN/BLAS path, memory layout). CUDA's
kernels accumulate these ops in fp32 and round once to the half type; kernels are checked against
eager references computed on the same device, so plate does the same, and the same way on every host.

Each op of ACCUMULATING (the FFTs) runs here on float32/complex64 inputs (a "host" rule's on fp16/bf16): every
floating input is upcast to float64 (complex128), the op is computed on the host, and each result is rounded once to
the dtype the op returns on CUDA (its meta kernel's; through float32, which for fp16/bf16 is the same as rounding
once: float32 has at least 2p+2 bits of each). float64 accumulation is fp32's and more: the result is CUDA's within
CUDA's own fp32 rounding. How, by kind:

- "host": the op's host kernel in float64 (no row uses it now: the batch norms became plate rows). The host's
  vectorized float64 may differ in the last bits between CPUs (lane count, libm); once rounded to fp16/bf16 that
  changes a result only when the exact value lies within about 2**-50 (relative) of a rounding midpoint of the half
  type: about one element in 2**38.
- "fft": the FFTs (_fft_c2c, _fft_r2c, _fft_c2r) of float32/complex64 tensors run the host's FFT in
  float64/complex128 and round once. The host's fp32 FFT (pocketfft) is off by O(log n) ulps of the largest
  output (2.5e-5 at 16^3 against numpy's float64 FFT); compiled code decomposes complex64 _fft_c2c into float64
  DFT products rounded once (Inductor's extern decompositions on plate). On CUDA eager and compiled both call cuFFT, so
  Inductor's tests compare a kernel with itself; here the two agree to the last rounding instead.

Other dtypes (float64, fp32 outside the FFTs, integers) keep the host kernel's behaviour.

sum, nansum, prod, mean, var, std, var_mean, std_mean, cumsum, cumprod, linalg_vector_norm and norm over dims,
softmax/log_softmax, layer norm, group norm and the batch norms (forward and backward) and the matmuls mm, bmm,
addmm, addbmm, baddbmm, addmv, dot and _int_mm are no longer here: they are plate kernels (eager_ops/reductions.py,
scans.py, composite.py, layer_norm.py, matmul.py, rewritten.py) accumulating in float32 as CUDA's, in a fixed order,
on the device.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from .host_op_counter import count_host_op

HALF = (torch.float16, torch.bfloat16)


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


def check_softmax_backward(grad_output, output, dim, input_dtype):
    """CUDA's check: a softmax backward whose grad is not of the input's dtype is the half-to-float one (float32
    grad of a float16 input); CPU's kernel would return the grad's dtype, the meta kernel the input's."""
    if grad_output.dtype != input_dtype and not (grad_output.dtype == torch.float32 and input_dtype == torch.float16):
        raise RuntimeError("expected input and grad types to match, or input to be at::Half and grad to be at::Float")


@dataclass(frozen=True)
class Rule:
    kind: str  # "host" or "fft" (the module docstring says what each guarantees)
    compute: Callable | None = None  # None: the aten op itself on float64 host tensors
    check: Callable | None = None  # raises CUDA's error for arguments CUDA's kernel refuses (the op's arguments)

    def applies_to(self, dtypes: set[torch.dtype]) -> bool:
        if self.kind == "fft":
            return bool(dtypes & {torch.float32, torch.complex64})
        return bool(dtypes & set(HALF))


# aten overloads (the ones that reach the plate device: composite ones decompose into these) -> rule
ACCUMULATING: dict[str, Rule] = {
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
