"""``aten._embedding_bag`` (and ``_embedding_bag_forward_only``) as a decomposition over plate tensors, with CUDA's
results: the meta kernel's shapes for a non-CPU device, which plate is.

One definition serves both sides: eager plate runs it (the ``composite`` family: each op of it a plate kernel or
a counted host op) and the Inductor integration decomposes the op with it on plate, so a compiled embedding bag is
plate kernels, not the host's extern call, and agrees with the eager one.

CUDA's kernels (EmbeddingBag.cu), which this follows:

- bag b holds the indices ``[offsets[b], offsets[b + 1])``; bag 0 starts at 0 and the last bag runs to the end of
  ``indices`` (with ``include_last_offset`` the last offset only ends the bag list);
- ``offset2bag[i]`` is the bag of index i; ``bag_size[b]`` counts the bag's indices that are not ``padding_idx``
  (``bag_size`` has ``offsets.size(0)`` elements: with ``include_last_offset`` the last is 0 here, unwritten on
  CUDA);
- sum and mean accumulate in float32 for fp16/bf16 weights (opmath) and round once; an empty bag is 0;
  ``per_sample_weights`` scale the rows (sum only); a ``padding_idx`` row counts as absent;
- max: the largest row value of the bag per feature, ``max_indices`` the index (into ``weight``) it came from,
  the first one on ties; NaN only where the bag's first value is NaN (the kernels' loop keeps a strictly
  greater value); an empty bag (or one of padding_idx only) gives 0 and index -1 (the CPU's gives index 0).
  ``max_indices`` is empty for sum and mean.
"""

from __future__ import annotations

import torch

aten = torch.ops.aten
SUM, MEAN, MAX = 0, 1, 2


def _accumulate_type(dtype: torch.dtype) -> torch.dtype:
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def embedding_bag(
    weight,
    indices,
    offsets,
    scale_grad_by_freq=False,
    mode=SUM,
    sparse=False,
    per_sample_weights=None,
    include_last_offset=False,
    padding_idx=-1,
):
    """(output, offset2bag, bag_size, max_indices) as CUDA's ``_embedding_bag`` returns them."""
    n = indices.shape[0]
    bags = offsets.shape[0] - (1 if include_last_offset else 0)
    # offset2bag[i] = how many bags after the first start at or before i: a 1 at each start (past-the-end starts
    # land in slot n, dropped; equal starts, empty bags, add up), summed along the indices. O(n + bags) memory.
    starts = offsets[1:bags].to(indices.dtype).clamp(max=n)
    marks = torch.zeros(n + 1, dtype=indices.dtype, device=indices.device)
    marks = marks.index_add(0, starts, torch.ones_like(starts))
    offset2bag = marks[:n].cumsum(0).to(indices.dtype)
    if bags == 0:  # include_last_offset with one offset: no bag, every result empty
        bag_size = offsets.new_zeros(offsets.shape[0]).to(indices.dtype)
        output = weight.new_zeros(0, weight.shape[1])
        max_indices = indices.new_zeros(0, weight.shape[1]) if mode == MAX else indices.new_empty(0)
        return output, offset2bag, bag_size, max_indices
    padded = padding_idx is not None and padding_idx >= 0
    valid = indices != padding_idx if padded else torch.ones_like(indices, dtype=torch.bool)
    counts = torch.zeros(bags, dtype=indices.dtype, device=indices.device).index_add(
        0, offset2bag, valid.to(indices.dtype)
    )  # (bags,): each bag's indices that are not padding_idx
    bag_size = torch.cat([counts, counts.new_zeros(offsets.shape[0] - bags)])
    rows = weight.index_select(0, indices)  # (n, D)
    acc = _accumulate_type(weight.dtype)
    if mode == MAX:
        # CUDA's and the CPU's loop: the bag's first value, then each strictly greater one (a NaN first stays,
        # a later NaN is never greater): the largest number per feature, or NaN where the first is NaN; the
        # index is the first in the bag that holds the result
        D = rows.shape[1]
        bag_of = offset2bag.unsqueeze(-1).expand(rows.shape)
        numbers = valid.unsqueeze(-1) & ~rows.isnan()
        candidates = torch.where(numbers, rows, float("-inf"))
        lowest = torch.full((bags, D), float("-inf"), dtype=rows.dtype, device=rows.device)
        best = lowest.scatter_reduce(0, bag_of, candidates, "amax", include_self=True)
        positions = torch.arange(n, dtype=indices.dtype, device=indices.device)
        nowhere = torch.full((bags,), n, dtype=indices.dtype, device=indices.device)
        first = nowhere.scatter_reduce(0, offset2bag, torch.where(valid, positions, n), "amin", include_self=True)
        holds = numbers & (candidates == best.gather(0, bag_of))
        at = torch.where(holds, positions.unsqueeze(-1).expand(rows.shape), n)
        where = torch.full((bags, D), n, dtype=indices.dtype, device=rows.device)
        where = where.scatter_reduce(0, bag_of, at, "amin", include_self=True)
        empty = (counts == 0).unsqueeze(-1)
        if n:
            first_rows = rows[first.clamp(max=n - 1)]  # (bags, D)
            nan_first = first_rows.isnan() & ~empty
            best = torch.where(nan_first, first_rows, best)
            where = torch.where(nan_first, first.unsqueeze(-1), where)
            picked = indices[where.clamp(max=n - 1)]
        else:
            picked = where  # no index: every bag empty
        output = torch.where(empty, 0, best).to(weight.dtype)
        max_indices = torch.where(empty, -1, picked)
        return output, offset2bag, bag_size, max_indices
    values = rows.to(acc)
    if per_sample_weights is not None:
        values = values * per_sample_weights.to(acc).unsqueeze(-1)
    values = torch.where(valid.unsqueeze(-1), values, 0)
    summed = torch.zeros(bags, weight.shape[1], dtype=acc, device=weight.device).index_add(0, offset2bag, values)
    if mode == MEAN:
        summed = summed / counts.clamp(min=1).to(acc).unsqueeze(-1)
    return summed.to(weight.dtype), offset2bag, bag_size, indices.new_empty(0)


DECOMPOSITIONS = {
    aten._embedding_bag.default: embedding_bag,
    aten._embedding_bag_forward_only.default: embedding_bag,
}
