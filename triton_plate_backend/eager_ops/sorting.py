"""The sort family: sort (stable or not: always stable, as the CPU's sort is for equal elements) and topk
(the k first of a stable sort, so equal elements come in their order in the row) along one dim, as
sorting_kernels' bitonic network over the rows (the dim moved last; one launch for rows up to 4096 long). NaN sorts
after every number (first when descending), as torch sorts it. Complex tensors run on the host,
counted."""

from __future__ import annotations

import importlib

import torch

from . import launch
from .launch import REAL_DTYPES
from .ops import Call, as_expected, checked
from .table import Row


def kernels():
    return importlib.import_module(f"{__package__}.sorting_kernels")


def _rows_stride(t: torch.Tensor) -> int | None:
    """The stride from each row of t (its dims before the last) to the next, where one stride walks them all;
    None where it does not."""
    dims = [(size, stride) for size, stride in zip(t.shape[:-1], t.stride()[:-1]) if size != 1]
    if any(outer != stride * size for (_, outer), (size, stride) in zip(dims, dims[1:])):
        return None
    return dims[-1][1] if dims else 0


def _sort_rows(
    rows: torch.Tensor, descending: bool, keep: int, into: list[torch.Tensor] | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """_bitonic_sort of rows that fit one program (sorting_kernels.sort_rows): one launch, written straight into
    `into`'s (values, indices) where their rows are one stride apart (else into new ones, returned)."""
    kernel = kernels()
    length = rows.shape[-1]
    log_width = max(length - 1, 0).bit_length()
    shape = (*rows.shape[:-1], keep)
    if into is None or None in (_rows_stride(into[0]), _rows_stride(into[1])):
        into = [torch.empty(shape, dtype=d, device=rows.device) for d in (rows.dtype, torch.int64)]
    values, indices = into
    count = values.numel() // max(keep, 1)
    if not values.numel():
        return values, indices
    if _rows_stride(rows) is None:
        rows = rows.contiguous()
    ct = torch.float32 if rows.dtype in (torch.float16, torch.bfloat16) else rows.dtype
    ct = torch.int8 if ct == torch.bool else ct
    log_keep = max(keep - 1, 0).bit_length() if rows.element_size() <= 4 else log_width
    per_program = min(launch.next_power_of_2(count), max(kernel.ROW_ELEMENTS >> log_width, 1))
    arguments = (
        rows, values, indices, count, length, keep,
        _rows_stride(rows), rows.stride(-1), _rows_stride(values), values.stride(-1),
        _rows_stride(indices), indices.stride(-1),
    )  # fmt: skip
    common = {"CT": launch.triton_dtype(ct), "DESCENDING": descending, "LOG_WIDTH": log_width, "ROWS": per_program}
    grid = (launch.triton_cdiv(count, per_program),)
    if 1 < log_width <= kernel.MAX_LOG_RANK and per_program << (2 * log_width) <= kernel.RANK_PAIRS:
        # a few short rows, one program: each element's rank (the same values and indices, fewer instructions;
        # rows of 2 are the network's one stage: it stays)
        kernel.rank_rows[grid](*arguments, **common, machine=kernel.machine_of(rows))
    else:
        kernel.sort_rows[grid](*arguments, **common, LOG_KEEP=log_keep, machine=kernel.machine_of(rows))
    return values, indices


def _bitonic_sort(
    x: torch.Tensor, dim: int, descending: bool, keep: int, into: list[torch.Tensor] | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(values, indices) of the `keep` first of x sorted along dim, with dim moved last. Rows up to
    2**MAX_LOG_WIDTH long: in one launch (_sort_rows; into: where to write them, dim-last views of the
    results); longer ones copied into a power-of-two width (the padding sorts last), sorted in place by the
    bitonic network: its stages within blocks of 2**MAX_LOG_WIDTH one launch each k (sort_blocks), the
    others one launch each (bitonic_stage)."""
    rows = x.movedim(dim, -1)
    length = rows.shape[-1]
    width = 1 << max(length - 1, 0).bit_length()
    if width <= 1 << kernels().MAX_LOG_WIDTH:
        return _sort_rows(rows, descending, keep, into)
    keys = torch.empty((*rows.shape[:-1], width), dtype=x.dtype, device=x.device)
    keys[..., :length].copy_(rows)
    positions = torch.empty(keys.shape, dtype=torch.int64, device=x.device)  # the first launch fills it
    if keys.numel():
        kernel = kernels()
        ct = torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype
        ct = launch.triton_dtype(torch.int8 if ct == torch.bool else ct)
        block = 1 << kernel.MAX_LOG_WIDTH
        common = {"CT": ct, "DESCENDING": descending, "machine": kernel.machine_of(x)}
        blocks = (keys.numel() // block,)
        kernel.sort_blocks[blocks](
            keys, positions, length, width, 0, FIRST=True, LOG_BLOCK=kernel.MAX_LOG_WIDTH, **common
        )
        pairs = keys.numel() // 2
        k = 2 * block
        while k <= width:
            j = k // 2
            while j >= block:
                kernel.bitonic_stage[(launch.triton_cdiv(pairs, kernel.BLOCK),)](
                    keys, positions, pairs, width // 2, length, k, j, FIRST=False, BLOCK=kernel.BLOCK, **common
                )  # fmt: skip
                j //= 2
            kernel.sort_blocks[blocks](
                keys, positions, length, width, k, FIRST=False, LOG_BLOCK=kernel.MAX_LOG_WIDTH, **common
            )
            k *= 2
    return keys[..., :keep], positions[..., :keep]


def _into(expected: torch.Tensor, moved: torch.Tensor, dim: int, target) -> torch.Tensor:
    """The result laid out as torch lays it out (or the out= tensor), from its dim-last copy."""
    out = target
    if out is None:
        out = torch.empty_strided(expected.shape, expected.stride(), dtype=expected.dtype, device=moved.device)
    elif out.shape != expected.shape:
        out.resize_(expected.shape)
    out.copy_(moved.movedim(-1, dim) if moved.dim() else moved)
    return out


def sort(op: torch._ops.OpOverload, row: Row):
    @checked(op)
    def kernel(call: Call, expected):
        x = call["self"]
        if x.dtype not in REAL_DTYPES or x.device.type != "plate":
            return call.on_host()
        dim = call["dim"] % max(x.dim(), 1) if x.dim() else 0
        if row.fn == "topk":
            keep, descending = int(call["k"]), bool(call["largest"])
        else:
            keep, descending = (x.shape[dim] if x.dim() else 1), bool(call["descending"])
        source = x if x.dim() else x.reshape(1)
        targets = (call.bound.get("values"), call.bound.get("indices"))
        if targets == (None, None):  # new results, laid out as torch lays them out, written by the sort itself
            results = [torch.empty_strided(e.shape, e.stride(), dtype=e.dtype, device=x.device) for e in expected]
            into = [(r if x.dim() else r.reshape(1)).movedim(dim, -1) for r in results]
            written = _bitonic_sort(source, dim, descending, keep, into)
            if all(w is i for w, i in zip(written, into)):
                return tuple(results)
            targets = results
        else:
            written = _bitonic_sort(source, dim, descending, keep)
        if not x.dim():
            written = [w.reshape(()) for w in written]
        return tuple(_into(e, w, dim, t) for e, w, t in zip(expected, written, targets))

    return kernel


def _mode_places(values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Of rows sorted ascending (no NaN): the place of the first of the longest run of equal values (the smallest
    such value, as the CPU's mode picks) and the place of that run's last element (its largest index: the sort
    is stable, and the CPU returns the last)."""
    starts = torch.ones(values.shape, dtype=torch.bool, device=values.device)
    starts[..., 1:] = values[..., 1:] != values[..., :-1]
    runs = torch.cumsum(starts, -1) - 1  # each place's run, numbered from 0 along the row
    lengths = torch.zeros(runs.shape, dtype=torch.int64, device=values.device).scatter_add_(
        -1, runs, torch.ones_like(runs)
    )
    longest = lengths.argmax(-1, keepdim=True)  # the first longest run: the smallest value
    first = (runs == longest).to(torch.int8).argmax(-1)
    return first, first + lengths.gather(-1, longest).squeeze(-1) - 1


def order_statistic(op: torch._ops.OpOverload, row: Row):
    """kthvalue, median, nanmedian and mode (along a dim: values and indices; of the whole tensor: the value) as
    one ascending sort of the rows, then a gather at each row's rank: k - 1; for mode the longest run's first
    place (_mode_places; a row with NaN runs on the host); (n - 1) // 2 for median, or the
    first NaN's place when a row holds one (NaN sorts last: median propagates it); (c - 1) // 2 for nanmedian,
    c the row's count of numbers. Where equal elements tie, the index is the first of them in the row (the
    sort is stable). Complex and bool tensors, empty rows and a k out of range run on the host (its errors).
    row.fn: the op's name."""

    @checked(op)
    def kernel(call: Call, expected):
        x = call["self"]
        if x.dtype not in REAL_DTYPES or x.dtype == torch.bool or x.device.type != "plate":
            return call.on_host()
        whole = "dim" not in call.bound
        source = x.reshape(-1) if whole or not x.dim() else x
        dim = 0 if whole or not x.dim() else call["dim"] % x.dim()
        n = source.shape[dim]
        if n == 0 or call.target_name is not None:
            return call.on_host()
        values, indices = _bitonic_sort(source, dim, False, n)
        at = None  # the sorted place whose index the result takes, where not the value's own
        if row.fn == "mode":
            if x.dtype.is_floating_point and bool(torch.isnan(values[..., -1]).any()):
                return call.on_host()
            rank, at = _mode_places(values)
        elif row.fn == "kthvalue":
            k = int(call["k"])
            if not 1 <= k <= n:
                return call.on_host()
            rank = torch.full(values.shape[:-1], k - 1, dtype=torch.int64, device=x.device)
        elif not x.dtype.is_floating_point:
            rank = torch.full(values.shape[:-1], (n - 1) // 2, dtype=torch.int64, device=x.device)
        else:
            numbers = (~torch.isnan(values)).sum(-1)
            if row.fn == "median":
                rank = torch.where(numbers < n, numbers, (n - 1) // 2)
            else:
                rank = torch.clamp_min(numbers - 1, 0) // 2
        value = values.gather(-1, rank.unsqueeze(-1)).squeeze(-1)
        if whole:
            return as_expected(value.reshape(()), expected)
        index = indices.gather(-1, (rank if at is None else at).unsqueeze(-1)).squeeze(-1)
        if call["keepdim"] and x.dim():
            value, index = value.unsqueeze(dim), index.unsqueeze(dim)
        return as_expected(value, expected[0]), as_expected(index, expected[1])

    return kernel


def unique(op: torch._ops.OpOverload, row: Row):
    """_unique2(self, sorted, return_inverse, return_counts) (torch.unique without dim): one stable sort of the
    flattened tensor, a new value wherever an element differs from the one before it (NaN differs from
    everything, so each NaN is its own value, after the numbers, as on the CPU), then the values at those places,
    each element's group scattered back to its place (inverse) and the group sizes (counts); the results not
    asked for are empty, as torch returns them. Always sorted, as on CUDA. Complex tensors run on the host.
    _unique(self, sorted, return_inverse) (torch.unique's older overload, which graph breaks and scripted code
    still call): the same without the counts."""

    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        x = call["self"]
        if call.mixed or x.dtype not in REAL_DTYPES:
            return call.on_host()
        flat = x.reshape(-1)
        empty = torch.empty(0, dtype=torch.int64, device=x.device)
        results = len(op._schema.returns)  # _unique2's 3, _unique's 2 (no counts)
        if flat.numel() == 0:
            inverse = torch.empty(x.shape, dtype=torch.int64, device=x.device) if call["return_inverse"] else empty
            return (flat.clone(), inverse, empty.clone())[:results]
        values, order = torch.sort(flat, stable=True)
        new = torch.ones(flat.shape, dtype=torch.bool, device=x.device)
        new[1:] = values[1:] != values[:-1]
        inverse, counts = empty, empty.clone()
        if call["return_inverse"] or call.bound.get("return_counts", False):  # the groups: two launches more
            group = torch.cumsum(new, 0) - 1
            if call["return_inverse"]:
                inverse = torch.empty_like(group).scatter_(0, order, group).reshape(x.shape)
            if call.bound.get("return_counts", False):
                counts = torch.bincount(group)
        return (values[new], inverse, counts)[:results]

    return kernel


FAMILIES = {"sort": sort, "order_statistic": order_statistic, "unique": unique}
