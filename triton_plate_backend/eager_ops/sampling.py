"""Sampling ops over plate's random kernels (Philox draws from the plate generator, eager_ops/ops.random):

- ``multinomial``: ATen's device-generic algorithm (Distributions.cpp, what CUDA runs): without replacement, or
  one sample, argmax (topk) of p / q with q ~ Exp(1) drawn by exponential_ (the Gumbel-max trick); with
  replacement, each sample the first category whose cumulative probability (cumsum normalized by the row's total,
  in float32 for fp16/bf16 as the CPU kernel's accumulate type) is at least a uniform draw (searchsorted). What
  the CPU refuses (a probability inf, NaN or negative, a row summing to 0, more samples than categories without
  replacement, an integer tensor) goes to the host, which raises its error: the data checks read one flag back.
- ``randperm``: a permutation of range(n) as the indices of a stable sort of n random 63-bit keys (random_ of
  int64), as CUDA's randperm sorts random keys; int64/int32 results (others go to the host, counted)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from .ops import HALF, Call
from .table import Row


def multinomial(op: torch._ops.OpOverload, row: Row) -> Callable:
    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        p, count, replacement = call["self"], call["num_samples"], call["replacement"]
        generator = call.bound.get("generator")
        if call.mixed or call.target_name is not None or not p.dtype.is_floating_point or p.dim() not in (1, 2):
            return call.on_host()
        categories = p.shape[-1]
        if count <= 0 or categories == 0 or p.numel() == 0 or (not replacement and count > categories):
            return call.on_host()
        if bool(((~torch.isfinite(p)) | (p < 0)).any() | (p.sum(-1) == 0).any()):
            return call.on_host()  # the CPU's errors
        if not replacement or count == 1:
            q = torch.empty_like(p).exponential_(1, generator=generator)
            scores = p / q
            return scores.argmax(-1, keepdim=True) if count == 1 else torch.topk(scores, count).indices
        rows = p.reshape(-1, categories)
        rows = rows.float() if rows.dtype in HALF else rows
        cumulative = rows.cumsum(-1)
        cumulative = cumulative / cumulative[:, -1:]
        draws = torch.rand(rows.shape[0], count, dtype=cumulative.dtype, device=p.device, generator=generator)
        picked = torch.searchsorted(cumulative, draws).clamp_(max=categories - 1)
        return picked.reshape(*p.shape[:-1], count)

    return kernel


def randperm(op: torch._ops.OpOverload, row: Row) -> Callable:
    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        n, dtype, device = call["n"], call.bound.get("dtype"), call.bound.get("device")
        dtype = dtype if isinstance(dtype, torch.dtype) else torch.int64  # the schema's default: long
        device = torch.device(device) if device is not None else None
        if device is None or device.type != "plate" or not _integral(dtype) or n < 0:
            return call.on_host()
        if n - 1 > torch.iinfo(dtype).max:
            return call.on_host()  # the CPU's error: n too large for the result type
        if n == 0:
            return torch.empty(0, dtype=dtype, device=device)
        keys = torch.empty(n, dtype=torch.int64, device=device).random_(generator=call.bound.get("generator"))
        return torch.sort(keys, stable=True).indices.to(dtype)

    return kernel


def _integral(dtype: torch.dtype) -> bool:
    """An integer result type: a permutation of a floating, complex or bool type runs on the host, counted."""
    return not (dtype.is_floating_point or dtype.is_complex or dtype == torch.bool)


FAMILIES = {"multinomial": multinomial, "randperm": randperm}
