"""Ops that are another plate op called with their arguments rewritten (the accumulation table's float64 host rows
they were before: torch_device/accumulation.py):

- ``addbmm``: addbmm(self, batch1, batch2, beta, alpha) = beta * self + alpha * sum_i batch1[i] @ batch2[i], one
  addmm over the batch and K together: batch1 as (n, B * k) (batch entries side by side along K), batch2 as
  (B * k, p), so plate's matmul accumulates the whole sum in float32 for fp16/bf16/fp32 operands (fp64 in fp64,
  integers wrapping) and rounds once, with cuBLAS's epilogue (beta = 0 ignores self, NaNs included). CUDA's addbmm
  adds the batch entries one addmm_ at a time, rounding to the result type after each.
- ``norm``: norm.ScalarOpt_dim(_dtype)(self, p, dim, keepdim, dtype) is linalg_vector_norm(self, p (None: 2), dim,
  keepdim, dtype=dtype) (plate's vector_norm row), for floating tensors; others go to the host (torch's error).
- ``scatter_reduce_legacy``: scatter(self, dim, index, src or value, reduce="add" / "multiply") (and scatter_,
  out=) is scatter_reduce(self, dim, index, src, "sum" / "prod", include_self=True) (plate's scatter rows), a value
  as a src of index's shape in self's type; mixed devices and another reduce go to the host (torch's error)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from .ops import Call, _result, as_expected, checked
from .table import Row


def addbmm(op: torch._ops.OpOverload, row: Row) -> Callable:
    @checked(op)
    def kernel(call: Call, expected):
        c, batch1, batch2 = call["self"], call["batch1"], call["batch2"]
        if c.device.type != "plate" or batch1.dtype != c.dtype or batch2.dtype != c.dtype:
            return call.on_host()  # a CPU operand (mixed devices), other dtypes: torch's errors
        count, n, k = batch1.shape
        a = batch1.transpose(0, 1).reshape(n, count * k)
        b = batch2.reshape(count * k, batch2.shape[2])
        product = torch.addmm(c, a, b, beta=call["beta"], alpha=call["alpha"])
        if call.target_name is not None:
            return _result(call, expected, c.device).copy_(product)
        return product if product.stride() == expected.stride() else as_expected(product, expected)

    return kernel


def norm(op: torch._ops.OpOverload, row: Row) -> Callable:
    @checked(op)
    def kernel(call: Call, expected):
        x = call["self"]
        if not x.dtype.is_floating_point or call.target_name is not None:
            return call.on_host()
        p = call["p"]
        result = torch.linalg.vector_norm(
            x, 2 if p is None else p, call["dim"], call["keepdim"], dtype=call.bound.get("dtype")
        )
        return result if result.stride() == expected.stride() else as_expected(result, expected)

    return kernel


LEGACY_REDUCE = {"add": "sum", "multiply": "prod"}


def scatter_reduce_legacy(op: torch._ops.OpOverload, row: Row) -> Callable:
    @checked(op)
    def kernel(call: Call, expected):
        x, index, reduce = call["self"], call["index"], call["reduce"]
        src = call.bound.get("src")
        if call.mixed or reduce not in LEGACY_REDUCE or (src is not None and src.dtype != x.dtype):
            return call.on_host()
        if src is None:
            src = torch.full(index.shape, call["value"], dtype=x.dtype, device=x.device)
        if call.target_name == "self":
            return x.scatter_reduce_(call["dim"], index, src, LEGACY_REDUCE[reduce])
        result = torch.scatter_reduce(x, call["dim"], index, src, LEGACY_REDUCE[reduce])
        if call.target_name is not None:
            return _result(call, expected, x.device).copy_(result)
        return result if result.stride() == expected.stride() else as_expected(result, expected)

    return kernel


FAMILIES = {"addbmm": addbmm, "norm": norm, "scatter_reduce_legacy": scatter_reduce_legacy}
