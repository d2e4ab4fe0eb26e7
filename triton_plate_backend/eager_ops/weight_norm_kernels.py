"""The Triton kernel of weight norm's backward (weight_norm.py): one program per slice of the weight (the
elements sharing one index along weight norm's dim), a first walk summing grad_w * v, a second writing
grad_v."""

from __future__ import annotations

import triton
import triton.language as tl

from .kernels import machine_of  # noqa: F401 - the launch option every eager kernel takes

BLOCK = 512


@triton.jit(do_not_specialize=["m"])
def weight_norm_backward(
    grad_v, grad_g, grad_w, v, g, norms, m, CT: tl.constexpr, BLOCK: tl.constexpr
):  # fmt: skip
    """Rows of m elements (contiguous): with s = sum(grad_w * v) over the row, grad_g = s / norm and
    grad_v = g / norm * (grad_w - v * s / norm^2)."""
    row = tl.program_id(0).to(tl.int64)
    total = tl.zeros([BLOCK], dtype=CT)
    for start in range(0, m, BLOCK):
        i = start + tl.arange(0, BLOCK)
        inside = i < m
        gw = tl.load(grad_w + row * m + i, mask=inside, other=0).to(CT)
        x = tl.load(v + row * m + i, mask=inside, other=0).to(CT)
        total += gw * x
    s = tl.sum(total, axis=0)
    norm = tl.load(norms + row).to(CT)
    scale = tl.load(g + row).to(CT) / norm
    tl.store(grad_g + row, (s / norm).to(grad_g.dtype.element_ty))
    for start in range(0, m, BLOCK):
        i = start + tl.arange(0, BLOCK)
        inside = i < m
        gw = tl.load(grad_w + row * m + i, mask=inside, other=0).to(CT)
        x = tl.load(v + row * m + i, mask=inside, other=0).to(CT)
        result = scale * (gw - x * (s / (norm * norm)))
        tl.store(grad_v + row * m + i, result.to(grad_v.dtype.element_ty), mask=inside)
