"""The matmul family as plate kernels (matmul_kernels.matmul): mm, bmm, addmm, baddbmm, addmv, dot and
_int_mm (hence matmul, linear, mv and einsum's products), their in-place and out= forms.

Every form is one batched product out[p] = alpha * a[p] @ b[p] + beta * c[p] over views of its arguments
(FORMS): no operand is copied, transposed or broadcast ones included (their strides go to the kernel).

Numerics as CUDA's, the same bits on every host CPU (docs/differences.md):
- fp16, bf16, fp32: float32 accumulation (CUDA's), K_STEP[dtype] products at a time: each step's exact
  products are summed in float64 by the matrix unit (tl.dot, input_precision "ieee") and rounded once to
  float32 with the running sum; then alpha and beta * c in float32, one rounding to the result type. With
  torch.backends.cuda.matmul.allow_tf32 on (off by default, as on CUDA) fp32 operands are rounded to TF32
  first (input_precision "tf32", summed in float32).
- fp64: each step's products summed by a fixed pairwise tree in float64, added to the running sum.
- integers: wrap-around (int32 arithmetic, int64 for int64), any sum order gives the same bits.
The bits depend on K_STEP only, never on the tile (BLOCK_M x BLOCK_N) a program computes.
bool and complex operands run on the host (the CPU kernel's behaviour, counted)."""

from __future__ import annotations

import importlib
from collections.abc import Callable

import torch

from .launch import next_power_of_2, triton_cdiv, triton_dtype
from .ops import Call, _result, checked
from .table import Row

DOT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)  # the matrix unit's, through float32
INTEGERS = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)
# the K step of each compute type: it defines where a result rounds (docs/differences.md), so it is fixed
# per type, never a tuning choice. float32: 128 products per m.mma (one fill per 128 of K, tiles that fit a
# core's SRAM at 128 x 128); the tree of the others: a [32, 8, 32] product tile is one vector instruction
K_STEP = {torch.float32: 128, torch.float64: 8, torch.int32: 8, torch.int64: 8}
# the largest (BLOCK_M, BLOCK_N), DOT or not: 256 x 128 fp32 tiles fit SRAM with their prefetch (128 x 256 does
# not) and ran a 4096 x 2048 @ 2048 x 4096 fp32 mm in 3.27 s of CPU (9.23 ms modeled) where 128 x 128 took 4.02 s
# (10.29 ms): benchmarks/results/eager-matmul.md
TILE = {True: (256, 128), False: (32, 32)}
MIN_TILE = 16


def kernels():
    return importlib.import_module(f"{__package__}.matmul_kernels")


def compute_type(dtype: torch.dtype) -> torch.dtype | None:
    """The type a product of `dtype` operands accumulates in; None: no plate kernel (bool, complex)."""
    if dtype in DOT_DTYPES:
        return torch.float32
    if dtype == torch.float64 or dtype == torch.int64:
        return dtype
    if dtype in INTEGERS:
        return torch.int32
    return None


def precision(dtype: torch.dtype) -> str:
    """tl.dot's input_precision: "ieee", or "tf32" for fp32 operands when torch allows TF32 matmuls (the
    flag Inductor reads for every device, torch.backends.cuda.matmul.allow_tf32)."""
    return "tf32" if dtype == torch.float32 and torch.backends.cuda.matmul.allow_tf32 else "ieee"


def tiles(dtype: torch.dtype, m: int, n: int) -> tuple[int, int]:
    """(BLOCK_M, BLOCK_N): the largest tile up to TILE, smaller for a small M or N."""
    top = TILE[dtype in DOT_DTYPES]
    return tuple(min(t, max(MIN_TILE, next_power_of_2(max(d, 1)))) for t, d in zip(top, (m, n)))


def _fits_int32(t: torch.Tensor) -> bool:
    """A batch entry's offsets (rows and columns times strides) fit the kernel's int32 arithmetic (operands,
    result and input alike)."""
    return sum((s - 1) * abs(st) for s, st in zip(t.shape[-2:], t.stride()[-2:]) if s) < 2**31


def launch_matmul(
    out: torch.Tensor, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor | None = None,
    alpha=1, beta=0, block: tuple[int, int] | None = None,
) -> None:  # fmt: skip
    """out[P, M, N] = alpha * a[P, M, K] @ b[P, K, N] + beta * c[P, M, N], every tensor a 3-d view (c
    broadcast by 0 strides); beta == 0 reads no c (its NaNs ignored, as torch). block: (BLOCK_M, BLOCK_N),
    else tiles()."""
    p, m, n = out.shape
    k = a.shape[2]
    if out.numel() == 0:
        return
    ct = compute_type(a.dtype)
    dot = a.dtype in DOT_DTYPES
    block_m, block_n = block or tiles(a.dtype, m, n)
    add_c = c is not None and beta != 0
    c = c if add_c else out
    scalars = [torch.tensor(v, dtype=ct, device=out.device) for v in (alpha, beta)]
    km = kernels()
    km.matmul[(triton_cdiv(m, block_m), triton_cdiv(n, block_n), p)](
        out, a, b, c, *scalars, m, n, k, *out.stride(), *a.stride(), *b.stride(), *c.stride(),
        CT=triton_dtype(ct), DOT=dot, PRECISION=precision(a.dtype), SCALE=alpha != 1, ADD_C=add_c,
        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=K_STEP[ct], machine=km.machine_of(out),
    )  # fmt: skip


# ---- the forms: (a, b, c) as 3-d views of the call's arguments, and the result's 3-d view ---------------
def _mm(call: Call):
    return call["self"][None], call["mat2"][None], None


def _addmm(call: Call):
    return call["mat1"][None], call["mat2"][None], call["self"]


def _baddbmm(call: Call):
    return call["batch1"], call["batch2"], call["self"]


def _addmv(call: Call):
    return call["mat"][None], call["vec"][None, :, None], call["self"]


def _dot(call: Call):
    return call["self"][None, None, :], call["tensor"][None, :, None], None


# row.fn -> (the operands as 3-d views, the result as a 3-d view)
FORMS: dict[str, tuple[Callable, Callable]] = {
    "mm": (_mm, lambda t: t[None]),
    "bmm": (lambda call: (call["self"], call["mat2"], None), lambda t: t),
    "addmm": (_addmm, lambda t: t[None]),
    "baddbmm": (_baddbmm, lambda t: t),
    "addmv": (_addmv, lambda t: t[None, :, None]),
    "dot": (_dot, lambda t: t[None, None, None]),
    "int_mm": (_mm, lambda t: t[None]),  # int8 operands, an int32 result
}


def _shares_memory(x: torch.Tensor, y: torch.Tensor) -> bool:
    return x.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()


def matmul(op: torch._ops.OpOverload, row: Row):
    operands, result_view = FORMS[row.fn]

    @checked(op)
    def kernel(call: Call, expected):
        a, b, c = operands(call)
        views = (a, b, result_view(expected)) + (() if c is None else (result_view(c.expand(expected.shape)),))
        if compute_type(a.dtype) is None or b.dtype != a.dtype or not all(map(_fits_int32, views)):
            return call.on_host()
        out = _result(call, expected, a.device)
        if c is not None:
            if c.device != a.device:  # a 0-dim CPU tensor: a scalar, copied as CUDA copies it
                c = c.to(a.device)
            c = result_view(c.expand(expected.shape))
        target = result_view(out)
        # the result written over an operand (out= one of them): computed aside first, then copied in
        in_place = c is not None and (c.data_ptr(), c.stride()) == (target.data_ptr(), target.stride())
        clash = any(_shares_memory(out, t) for t in (a, b)) or (
            c is not None and _shares_memory(out, c) and not in_place
        )
        into = torch.empty(target.shape, dtype=out.dtype, device=out.device) if clash else target
        launch_matmul(into, a, b, c, call.bound.get("alpha", 1), call.bound.get("beta", 0 if c is None else 1))
        if clash:
            target.copy_(into)
        return out

    return kernel


FAMILIES = {"matmul": matmul}
