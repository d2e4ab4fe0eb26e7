"""Matrix products no GEMM template takes (float64, integers) as Inductor IR: a plate kernel, not the host.

The product is the elementwise product broadcast over ([batch,] m, k, n), summed over k by Inductor's own
reduction (as its decompositions write reductions), then scaled and biased for addmm/baddbmm. The semantics are
torch's on CPU: float64 accumulates in float64; an integer product wraps around in its dtype (any wider
accumulation truncated to the output dtype gives the same bits, since wrapping arithmetic is exact modulo 2^n).
"""

from __future__ import annotations

import torch
from torch._inductor import ir
from torch._inductor.lowering import lowerings
from torch._inductor.virtualized import ops

aten = torch.ops.aten

# the dtypes torch multiplies matrices in on CPU that no Triton GEMM template takes
DTYPES = frozenset({torch.float64, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8})


def takes(mat1, mat2) -> bool:
    """Is this a product this module lowers: both operands one dtype it takes?"""
    return mat1.get_dtype() in DTYPES and mat2.get_dtype() == mat1.get_dtype()


def product(mat1, mat2):
    """mat1 @ mat2 ([batch,] m x k by [batch,] k x n) as a sum over k, in the operands' dtype."""
    *batch, m, k = mat1.get_size()
    n = mat2.get_size()[-1]
    load1, load2 = mat1.make_loader(), mat2.make_loader()

    def inner_fn(index, reduction_index):
        *b, i, j = index
        (r,) = reduction_index
        return ops.mul(load1([*b, i, r]), load2([*b, r, j]))

    dtype = mat1.get_dtype()
    result = ir.Reduction.create(
        device=mat1.get_device(),
        dst_dtype=dtype,
        src_dtype=dtype,
        inner_fn=inner_fn,
        ranges=[*batch, m, n],
        reduction_ranges=[k],
        reduction_type="sum",
    )
    result.realize()  # a buffer, as the extern kernel's output was (later consumers load it, layouts apply)
    return result


def biased(bias, mat1, mat2, alpha=1, beta=1):
    """beta * bias + alpha * (mat1 @ mat2) (addmm/baddbmm); beta == 0 ignores the bias, as torch does."""
    result = product(mat1, mat2)
    if alpha != 1:
        result = lowerings[aten.mul.Tensor](result, alpha)
    if beta == 0:
        return result
    if beta != 1:
        bias = lowerings[aten.mul.Tensor](bias, beta)
    return lowerings[aten.add.Tensor](result, bias)
