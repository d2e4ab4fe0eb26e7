"""randperm and multinomial on the device, over plate's own random draws (the generator's stream, as every plate
random op: not the CPU's numbers, as CUDA's are not), the way CUDA's kernels sample:

- ``randperm(n)``: the order that sorts n random keys (float64 uniforms: a uniformly random permutation up to ties,
  which 53-bit keys make negligible; CUDA sorts random integer keys the same way), in the requested integer dtype.
- ``multinomial(p, k, replacement)``: with replacement, inverse-CDF sampling (a uniform draw scaled by the row's
  total, searched in the float64 running sum: a zero-probability category is never drawn); without replacement,
  the k largest of p / Exp(1) draws (the exponential race CUDA uses), in order of key (zero-probability categories,
  key 0, last, as torch's kernels reach them once the others are drawn).

Inputs torch rejects (negative, non-finite or all-zero probabilities, k past the categories without
replacement, n past the dtype's range, out=, a CPU generator) go to the host, which raises torch's error or
draws there, counted."""

from __future__ import annotations

from collections.abc import Callable

import torch

from .ops import Call
from .table import Row


def _device_generator(generator, device) -> bool:
    return generator is None or generator.device.type == device.type


def randperm(op: torch._ops.OpOverload, row: Row) -> Callable:
    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        n, generator = call["n"], call.bound.get("generator")
        dtype = call.bound.get("dtype")
        dtype = dtype if isinstance(dtype, torch.dtype) else torch.int64  # the schema's default: long
        device = torch.device(call.bound.get("device") or "plate")
        if (
            device.type != "plate"
            or not _device_generator(generator, device)
            or op._schema.overload_name.endswith("out")
        ):
            return call.on_host()
        if dtype.is_floating_point or dtype.is_complex or dtype == torch.bool:
            return call.on_host()
        if n < 0 or (n > 0 and n - 1 > torch.iinfo(dtype).max):
            return call.on_host()
        keys = torch.rand(n, dtype=torch.float64, device=device, generator=generator)
        return torch.argsort(keys, stable=True).to(dtype)

    return kernel


def multinomial(op: torch._ops.OpOverload, row: Row) -> Callable:
    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        p, k, replacement = call["self"], call["num_samples"], call["replacement"]
        generator = call.bound.get("generator")
        if call.mixed or call.target_name is not None or not _device_generator(generator, p.device):
            return call.on_host()
        if p.dim() not in (1, 2) or not p.dtype.is_floating_point or k <= 0 or p.shape[-1] == 0:
            return call.on_host()
        rows = p.reshape(-1, p.shape[-1]).to(torch.float64)
        bad = (rows < 0).any() | ~torch.isfinite(rows).all() | (rows.sum(-1) <= 0).any()
        if (not replacement and k > rows.shape[-1]) or bad.item():
            return call.on_host()  # torch's error
        shape = (rows.shape[0], k)
        if replacement:
            cdf = rows.cumsum(-1)
            draws = torch.rand(shape, dtype=torch.float64, device=p.device, generator=generator) * cdf[:, -1:]
            samples = torch.searchsorted(cdf, draws, right=True).clamp_(max=rows.shape[-1] - 1)
        else:
            u = torch.rand(rows.shape, dtype=torch.float64, device=p.device, generator=generator)
            samples = torch.topk(rows / -torch.log1p(-u), k, dim=-1).indices
        return samples.reshape(*p.shape[:-1], k)

    return kernel


FAMILIES = {"randperm": randperm, "multinomial": multinomial}
