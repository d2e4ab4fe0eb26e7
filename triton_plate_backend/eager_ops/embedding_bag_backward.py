"""``aten._embedding_bag_backward`` for a dense weight gradient (nn.EmbeddingBag's and F.embedding_bag's backward),
as CUDA's kernels compute it (EmbeddingBag.cu), over plate kernels; embedding_bag.py holds the forward whose
(offset2bag, bag_size, max_indices) it reads.

- sum and mean: index i adds grad[offset2bag[i]] (times ``per_sample_weights[i]``; divided by the bag's
  ``bag_size`` for mean) to row indices[i] of a zero gradient, an index_add in float32 for fp16/bf16 weights,
  rounded once; ``padding_idx`` rows receive nothing; ``scale_grad_by_freq`` divides each index's share by
  how often the index occurs in ``indices`` (CUDA's; torch 2.13's CPU kernel divides by another index's count,
  pytorch#190063).
- max: each bag's gradient goes to the row its maximum came from (``max_indices``), per feature; empty bags
  (index -1) give nothing.

``sparse=True`` (which the host kernel cannot return on plate either) and tensors of another device run on the
host, counted."""

from __future__ import annotations

from collections.abc import Callable

import torch

from ..torch_device.accumulation import tensors_in
from .embedding_bag import MAX, MEAN, _accumulate_type
from .ops import Call
from .table import Row


def dense_backward(grad, indices, offset2bag, bag_size, max_indices, num_weights, scale_grad_by_freq, mode,
                   per_sample_weights, padding_idx):  # fmt: skip
    acc = _accumulate_type(grad.dtype)
    features = grad.shape[1]
    out = torch.zeros(num_weights, features, dtype=acc, device=grad.device)
    if mode == MAX:
        found = max_indices >= 0  # (bags, D)
        rows = torch.where(found, max_indices, 0)
        shares = torch.where(found, grad.to(acc), 0)
        out.scatter_add_(0, rows, shares)
        return out.to(grad.dtype)
    shares = grad.to(acc).index_select(0, offset2bag)  # (n, D): each index's bag gradient
    if per_sample_weights is not None:
        shares = shares * per_sample_weights.to(acc).unsqueeze(-1)
    if mode == MEAN:
        sizes = bag_size.index_select(0, offset2bag).clamp(min=1).to(acc)
        shares = shares / sizes.unsqueeze(-1)
    if scale_grad_by_freq:
        counts = torch.zeros(num_weights, dtype=acc, device=grad.device).index_add(
            0, indices, torch.ones_like(indices, dtype=acc)
        )
        shares = shares / counts.index_select(0, indices).unsqueeze(-1)
    if padding_idx is not None and padding_idx >= 0:
        shares = torch.where((indices != padding_idx).unsqueeze(-1), shares, 0)
    return out.index_add(0, indices, shares).to(grad.dtype)


def embedding_bag_backward(op: torch._ops.OpOverload, row: Row) -> Callable:
    """_embedding_bag_backward(grad, indices, offsets, offset2bag, bag_size, maximum_indices, num_weights,
    scale_grad_by_freq, mode, sparse, per_sample_weights, padding_idx)."""

    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        tensors = list(tensors_in(call.bound.values()))
        grad, mode = call["grad"], call["mode"]
        on_plate = all(t.device.type == "plate" for t in tensors)
        if call["sparse"] or not on_plate or grad.dim() != 2 or mode not in (0, 1, 2):
            return call.on_host()
        if call["per_sample_weights"] is not None and mode != 0:
            return call.on_host()  # torch's error: per_sample_weights only with mode='sum'
        return dense_backward(
            grad, call["indices"], call["offset2bag"], call["bag_size"], call["maximum_indices"], call["num_weights"],
            call["scale_grad_by_freq"], mode, call["per_sample_weights"], call["padding_idx"],
        )  # fmt: skip

    return kernel


FAMILIES = {"embedding_bag_backward": embedding_bag_backward}
