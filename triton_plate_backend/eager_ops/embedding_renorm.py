"""``aten.embedding_renorm_`` (F.embedding / nn.Embedding with ``max_norm``) over plate kernels, as the CPU kernel
computes it: each distinct row ``indices`` names whose ``norm_type``-norm exceeds ``max_norm`` is multiplied, in
place, by ``max_norm / (norm + 1e-7)`` (the norm rounded to the weight's type, the scale a double, the product in
the op math type). An index out of
range, or a weight other than 2-D floating, goes to the host, which raises torch's error or computes it."""

from __future__ import annotations

from collections.abc import Callable

import torch

from .ops import Call
from .table import Row


def embedding_renorm(op: torch._ops.OpOverload, row: Row) -> Callable:
    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        weight, indices = call["self"], call["indices"]
        if call.mixed or weight.dim() != 2 or not weight.dtype.is_floating_point:
            return call.on_host()
        if indices.dtype not in (torch.int32, torch.int64) or weight.shape[1] == 0:
            return call.on_host()
        rows = torch.unique(indices.reshape(-1))
        if rows.numel() == 0:
            return weight
        if bool(((rows < 0) | (rows >= weight.shape[0])).any()):
            return call.on_host()
        picked = weight.index_select(0, rows)
        ct = torch.float32 if picked.dtype in (torch.float16, torch.bfloat16) else picked.dtype  # the CPU's opmath
        # row.norm(norm_type) in the weight's type (accumulated in ct), its item() a double
        norms = torch.linalg.vector_norm(picked, call["norm_type"], dim=1, dtype=ct).to(picked.dtype).double()
        max_norm = call["max_norm"]
        scale = (max_norm / (norms + 1e-7)).to(ct)  # row *= scale: the double scalar in the op math type
        scaled = torch.where((norms > max_norm)[:, None], (picked.to(ct) * scale[:, None]).to(picked.dtype), picked)
        return weight.index_copy_(0, rows, scaled)

    return kernel


FAMILIES = {"embedding_renorm": embedding_renorm}
