"""Ops that walk a tensor in order with a running count (prefix_kernels): any and all of a whole tensor,
cumsum along a dim, and repeat_interleave(repeats) (each position i repeated repeats[i] times: the exclusive sum of the
repeats gives each run's start, and each output element finds its run by a binary search). any/all
along dims run on the host, counted."""

from __future__ import annotations

import importlib

import torch

from . import launch, ops
from .launch import REAL_DTYPES
from .ops import Call, checked
from .table import BINARY, Row


def kernels():
    return importlib.import_module(f"{__package__}.prefix_kernels")


def any_all(op: torch._ops.OpOverload, row: Row):
    @checked(op)
    def kernel(call: Call, expected):
        x = call["self"]
        if x.dtype not in REAL_DTYPES or call.target_name is not None:
            return call.on_host()
        k = kernels()
        if 0 < x.numel() <= k.ANY_BLOCK:  # one program: its answer is the result
            out = torch.empty((), dtype=expected.dtype, device=x.device)
            k.any_all_block[(1,)](
                x.contiguous(), out, x.numel(), ALL=row.fn == "all", BLOCK=k.ANY_BLOCK, machine=k.machine_of(x)
            )
            return out
        found = torch.zeros(1, dtype=torch.int32, device=x.device)
        if x.numel():
            grid = (launch.triton_cdiv(x.numel(), k.ANY_BLOCK),)
            k.any_nonzero[grid](
                x.contiguous(), found, x.numel(), ALL=row.fn == "all", BLOCK=k.ANY_BLOCK, machine=k.machine_of(x)
            )
        # any: something found; all: nothing zero found
        return (found != 0 if row.fn == "any" else found == 0).reshape(()).to(expected.dtype)

    return kernel


def allclose(op: torch._ops.OpOverload, row: Row):
    """allclose as ATen composes it, isclose(...).all(), with the isclose of one plate kernel (ops.isclose): the
    op is CompositeExplicitAutograd, so its at::isclose runs below plate's Autograd key, where the fused isclose
    is registered, and would take isclose's decomposition (13 launches over the tensors). Mixed devices and
    dtypes (torch's errors) run on the host."""
    fused = ops.isclose(torch.ops.aten.isclose.default, Row("isclose", operands=BINARY))

    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        a, b = call["self"], call["other"]
        if call.mixed or a.dtype != b.dtype:
            return call.on_host()
        close = fused(a, b, call["rtol"], call["atol"], call["equal_nan"])
        return bool(close.all().item())

    return kernel


def repeat_interleave(op: torch._ops.OpOverload, row: Row):
    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        repeats = call["repeats"]
        if call.mixed or repeats.dim() != 1 or repeats.dtype not in (torch.int64, torch.int32):
            return call.on_host()  # a 0-dim repeats, a wrong dtype: the host raises torch's error
        n = repeats.numel()
        k = kernels()
        starts = torch.empty(n, dtype=torch.int64, device=repeats.device)
        total = torch.zeros(1, dtype=torch.int64, device=repeats.device)
        if n:
            k.exclusive_sum[(1,)](repeats.contiguous(), starts, total, n, BLOCK=k.BLOCK, machine=k.machine_of(repeats))
        size = call.bound.get("output_size")
        m = int(total.item()) if size is None else int(size)
        out = torch.empty(m, dtype=repeats.dtype, device=repeats.device)
        if m and n:
            grid = (launch.triton_cdiv(m, k.BLOCK),)
            k.repeat_positions[grid](
                starts, out, n, m, max(n - 1, 1).bit_length() + 1, BLOCK=k.BLOCK, machine=k.machine_of(repeats)
            )
        return out

    return kernel


LONG_ROWS = 64  # at most this many rows at least prefix_kernels.LONG_ROW long: cumsum by long_rows


def long_rows(rows: torch.Tensor, scanned: torch.Tensor, acc: torch.dtype) -> None:
    """scanned = the running sum of each row of rows (contiguous, few and long), the values cumsum_rows gives
    (its blocks' scans and its carry added block by block, in order): each block's sum (block_sums), the sums
    before each block walked one element a step (carries), then every block's scan plus that (scan_blocks), the
    blocks GROUP to a program; one program walking a 1M-element row a block at a time took 2.7 s."""
    k = kernels()
    n = rows.shape[-1]
    count = rows.numel() // n
    blocks = launch.triton_cdiv(n, k.BLOCK)
    sums = torch.empty((count, blocks), dtype=acc, device=rows.device)
    before = torch.empty_like(sums)
    grid = (count, launch.triton_cdiv(blocks, k.GROUP))
    shape = dict(ACC=launch.triton_dtype(acc), BLOCK=k.BLOCK, GROUP=k.GROUP, machine=k.machine_of(rows))
    k.block_sums[grid](rows, sums, n, blocks, **shape)
    k.carries[(count,)](
        sums, before, blocks, CHAIN=k.CHAIN, EXACT=not acc.is_floating_point, machine=k.machine_of(rows)
    )
    k.scan_blocks[grid](rows, before, scanned, n, blocks, **shape)


def long_extreme_rows(rows: torch.Tensor, scanned: torch.Tensor, where: torch.Tensor, maximum: bool) -> None:
    """scanned, where = the running max (maximum) or min of each row of rows (contiguous, few and long) and its
    index, cumextreme_rows's values (the last extreme, NaN first: one answer whatever the order of the combines):
    each block's extreme (block_extremes), the running extreme over blocks (extreme_carries), then every block's
    scan with the blocks' before it (scan_extreme_blocks), the blocks GROUP to a program."""
    k = kernels()
    n = rows.shape[-1]
    count = rows.numel() // n
    blocks = launch.triton_cdiv(n, k.BLOCK)
    ends = torch.empty((count, blocks), dtype=rows.dtype, device=rows.device)
    ends_at = torch.empty((count, blocks), dtype=torch.int64, device=rows.device)
    grid = (count, launch.triton_cdiv(blocks, k.GROUP))
    shape = dict(MAX=maximum, BLOCK=k.BLOCK, GROUP=k.GROUP, machine=k.machine_of(rows))
    k.block_extremes[grid](rows, ends, ends_at, n, blocks, **shape)
    k.extreme_carries[(count,)](ends, ends_at, blocks, MAX=maximum, CHAIN=k.CHAIN, machine=k.machine_of(rows))
    k.scan_extreme_blocks[grid](rows, ends, ends_at, scanned, where, n, blocks, **shape)


def cumsum(op: torch._ops.OpOverload, row: Row):
    """cumsum (row.fn "sum"), cumprod (row.fn "prod") or _logcumsumexp (row.fn "logsumexp") along a dim: the input
    (cast to the result's type first, as ATen does) with that dim last and contiguous, one program per row
    (prefix_kernels.cumsum_rows, logcumsumexp_rows), accumulating in float32 for fp16/bf16 as CUDA's kernels (and
    integers in int64, the result type of an integer cumsum / cumprod); the result laid out as the meta kernel lays
    it out, or written into the in-place op's self or the out= op's out (the input is read into a contiguous copy
    first). Other types (logcumsumexp: any but a real floating one, which the CPU refuses) run on the host,
    counted. _logcumsumexp has no meta kernel: its result is the CPU's, contiguous in self's dtype, and
    a dim out of range or an out= of another dtype goes to the host (torch's error)."""

    def body(call: Call, expected):
        x = call["self"]
        dtype = expected.dtype
        target = call[call.target_name] if call.target_name else None  # cumsum_'s self, cumsum.out's out
        if x.device.type != "plate" or dtype not in REAL_DTYPES or (target is not None and target.device != x.device):
            return call.on_host()
        if row.fn == "logsumexp" and not dtype.is_floating_point:
            return call.on_host()
        if target is None:
            out = torch.empty_strided(expected.shape, expected.stride(), dtype=dtype, device=x.device)
        else:
            out = target if target.shape == expected.shape else target.resize_(expected.shape)
        if out.numel() == 0:
            return out
        src = (x if x.dim() else x.reshape(1)).to(dtype)
        rows = src.movedim(call["dim"] if x.dim() else 0, -1).contiguous()
        scanned = torch.empty_like(rows)
        n = rows.shape[-1]
        k = kernels()
        acc = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
        grid = (rows.numel() // n,)
        if row.fn == "logsumexp":
            k.logcumsumexp_rows[grid](
                rows, scanned, n, ACC=launch.triton_dtype(acc), BLOCK=k.BLOCK, machine=k.machine_of(x)
            )
        elif row.fn == "sum" and n >= k.LONG_ROW and grid[0] <= LONG_ROWS:
            long_rows(rows, scanned, acc)
        else:
            k.cumsum_rows[grid](
                rows, scanned, n, ACC=launch.triton_dtype(acc), BLOCK=k.BLOCK, PRODUCT=row.fn == "prod",
                machine=k.machine_of(x),
            )  # fmt: skip
        result = scanned.movedim(-1, call["dim"] if x.dim() else 0)
        return out.copy_(result if x.dim() else result.reshape(()))

    def logcumsumexp(*args, **kwargs):
        call = Call(op, args, kwargs)
        x, dim = call["self"], call["dim"]
        target = call[call.target_name] if call.target_name else None
        if (
            call.mixed
            or not -max(x.dim(), 1) <= dim < max(x.dim(), 1)
            or (target is not None and target.dtype != x.dtype)
        ):
            return call.on_host()
        return body(call, torch.empty(x.shape, dtype=x.dtype, device="meta"))

    return logcumsumexp if row.fn == "logsumexp" else checked(op)(body)


def cumextreme(op: torch._ops.OpOverload, row: Row):
    """_cummax_helper / _cummin_helper(self, values, indices, dim), which cummax / cummin call with the results
    allocated: self with dim last and contiguous, one program per row (prefix_kernels.cumextreme_rows), the
    results copied into values and indices. bool tensors compare as int8; complex ones run on the host."""

    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        x, values, indices = call["self"], call["values"], call["indices"]
        if call.mixed or x.dtype not in REAL_DTYPES:
            return call.on_host()
        if x.numel() == 0:
            return None
        dim = call["dim"] % x.dim() if x.dim() else 0
        source = x.to(torch.int8) if x.dtype == torch.bool else x
        rows = (source if x.dim() else source.reshape(1)).movedim(dim, -1).contiguous()
        scanned, where = torch.empty_like(rows), torch.empty(rows.shape, dtype=torch.int64, device=x.device)
        n = rows.shape[-1]
        k = kernels()
        if n >= k.LONG_ROW and rows.numel() // n <= LONG_ROWS:
            long_extreme_rows(rows, scanned, where, row.fn == "max")
        else:
            k.cumextreme_rows[(rows.numel() // n,)](
                rows, scanned, where, n, MAX=row.fn == "max", BLOCK=k.BLOCK, machine=k.machine_of(x)
            )
        values.copy_(scanned.movedim(-1, dim).reshape(values.shape))
        indices.copy_(where.movedim(-1, dim).reshape(indices.shape))
        return None

    return kernel


FAMILIES = {
    "any_all": any_all,
    "allclose": allclose,
    "repeat_interleave": repeat_interleave,
    "cumsum": cumsum,
    "cumextreme": cumextreme,
}
