"""Ops plate runs as their Python decomposition over plate tensors (each op of it a plate kernel, or a
counted host op). Registering them on plate makes them dispatch as on CUDA, where a fused kernel
backs them: autograd uses the op's own derivative (``_fused_rms_norm_backward``) and Inductor's lite
mode keeps the op whole in its graph, instead of decomposing it at the Autograd key as on the CPU."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch._decomp import decomposition_table

from .table import Row


def composite(op: torch._ops.OpOverload, row: Row) -> Callable:
    decomposition = decomposition_table[op]

    def kernel(*args, **kwargs):
        return decomposition(*args, **kwargs)

    return kernel


FAMILIES: dict[str, Callable[[torch._ops.OpOverload, Row], Callable]] = {"composite": composite}
