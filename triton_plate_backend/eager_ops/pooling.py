"""The pool family: avg_pool2d/3d, max_pool2d/3d_with_indices, the adaptive average and max pools, and
their backward ops, as launches of pooling_kernels over (N, C, D, H, W) (a 2-D pool has D = 1).

The forward kernel takes one output element per lane; the backward kernel one input element per lane,
adding the gradients of the outputs whose windows hold it in the order the CPU's loop adds them. What
the kernels do not cover (a layout whose N and C do not merge into the launcher's dims, a dtype
plate's kernels lack) runs on the host, counted."""

from __future__ import annotations

import importlib
import math

import torch

from ..errors import PlateError
from . import launch
from .launch import FLOAT_DTYPES, REAL_DTYPES
from .ops import Call, checked
from .table import Row

# Row.fn -> the kernels' mode
MODES = {"avg": "AVG", "max": "MAX", "adaptive_avg": "ADAPTIVE_AVG", "adaptive_max": "ADAPTIVE_MAX"}


def kernels():
    return importlib.import_module(f"{__package__}.pooling_kernels")


def _dims(op: torch._ops.OpOverload) -> int:
    return 3 if "3d" in op._schema.name else 2


def _five(t: torch.Tensor, spatial: int) -> torch.Tensor:
    """t viewed as (N, C, D, H, W): a missing batch dim and a 2-D pool's D as size-1 dims."""
    if t.dim() == spatial + 1:
        t = t.unsqueeze(0)
    return t.unsqueeze(2) if spatial == 2 else t


def _triple(values, spatial: int, default: list[int]) -> list[int]:
    """A pool argument (kernel_size, stride, ...) per dim D, H, W: one value for all, [] the default; a
    2-D pool's D is 1 (the caller sets the D of padding to 0)."""
    values = [int(v) for v in values] if values else list(default)
    if len(values) == 1:
        values = values * spatial
    return ([1] if spatial == 2 else []) + values


def _window_args(call: Call, row: Row, spatial: int, x5: torch.Tensor, o5: torch.Tensor) -> tuple[list, list] | None:
    """(K, S, P, L per dim, the loop counts of the forward kernel) of the call."""
    sizes_in, sizes_out = list(x5.shape[2:]), list(o5.shape[2:])
    if row.fn.startswith("adaptive"):
        k = [1] * 3
        s, p, dil = [1] * 3, [0] * 3, [1] * 3
        # the largest window: ceil((o + 1) * i / n) - floor(o * i / n) over the outputs o
        counts = [max(-(-(o + 1) * i // n) - o * i // n for o in range(n)) for i, n in zip(sizes_in, sizes_out)]
        return [k, s, p, dil], counts
    kernel = _triple(call["kernel_size"], spatial, [])
    stride = _triple(call["stride"], spatial, kernel[-spatial:])
    padding = _triple(call["padding"], spatial, [0])
    dilation = _triple(call.bound.get("dilation"), spatial, [1])
    padding[0] = padding[0] if spatial == 3 else 0
    return [kernel, stride, padding, dilation], list(kernel)


def _position() -> list[int]:
    """The position operand's strides over (N, C, D, H, W) (pooling_kernels)."""
    k = kernels()
    return [0, 0, k.POS_D.value, k.POS_H.value, 1]


def _spatial_strides(t: torch.Tensor) -> list[int]:
    return list(t.stride()[2:])


def _launch(kernel, shape, tensors, strides, scalars, mode, count_pad, ct) -> bool:
    if not launch.fits(shape, strides):
        return False
    k = kernels()
    launch.launch_kernel(
        kernel, shape, tensors, strides, *scalars,
        MODE=getattr(k, mode).value, COUNT_PAD=bool(count_pad), CT=launch.triton_dtype(ct),
    )  # fmt: skip
    return True


# torch's names of the dtypes (c10::toString of a ScalarType), as its "not implemented for" errors spell them
_SCALAR_TYPE_NAMES = {
    torch.bool: "Bool",
    torch.uint8: "Byte",
    torch.int8: "Char",
    torch.int16: "Short",
    torch.int32: "Int",
    torch.int64: "Long",
    torch.uint16: "UInt16",
    torch.uint32: "UInt32",
    torch.uint64: "UInt64",
}


class PoolDtypeNotImplemented(PlateError, NotImplementedError):
    """An adaptive pool of an integer or bool tensor: torch (CPU and CUDA) implements them for floats only."""


def _refuse_integers(op: torch._ops.OpOverload, row: Row, x: torch.Tensor) -> None:
    """Raise torch's error for an adaptive pool of integers here, as CUDA's kernel does, rather than letting the
    host's kernel raise it (a host op)."""
    if row.fn.startswith("adaptive") and x.dtype in _SCALAR_TYPE_NAMES:
        name = op._schema.name.split("::")[-1].lstrip("_")
        raise PoolDtypeNotImplemented(
            f"\"{name}\" not implemented for '{_SCALAR_TYPE_NAMES[x.dtype]}' on plate: pool a float tensor"
        )


def _covered(*tensors) -> bool:
    return all(t.dtype in FLOAT_DTYPES and t.dtype in REAL_DTYPES and t.device.type == "plate" for t in tensors)


def _small(*tensors) -> bool:
    return all(max(t.shape[2:], default=1) < kernels().POS_W for t in tensors)


def _empty_batch(x: torch.Tensor, spatial: int) -> bool:
    """A batch of no samples whose other dims are not empty (those the CPU refuses: its error, from the host)."""
    return x.dim() == spatial + 2 and x.shape[0] == 0 and all(x.shape[1:])


def pool(op: torch._ops.OpOverload, row: Row):
    spatial = _dims(op)

    @checked(op)
    def kernel(call: Call, expected):
        x = call["self"]
        shapes = expected if isinstance(expected, tuple) else (expected,)
        _refuse_integers(op, row, x)
        results = [torch.empty_strided(e.shape, e.stride(), dtype=e.dtype, device=x.device) for e in shapes]
        if _covered(x) and _empty_batch(x, spatial):  # the CPU's "optional 0 dim batch size": nothing to pool
            return tuple(results) if isinstance(expected, tuple) else results[0]
        if not _covered(x) or any(e.numel() == 0 for e in shapes) or x.numel() == 0:
            return call.on_host()
        x5, o5 = _five(x, spatial), _five(results[0], spatial)
        i5 = _five(results[1], spatial) if len(results) > 1 else o5
        if not _small(x5, o5):
            return call.on_host()
        (k, s, p, dil), counts = _window_args(call, row, spatial, x5, o5)
        divisor = call.bound.get("divisor_override") or 0
        shape = list(o5.shape)
        strides = [list(o5.stride()), [*x5.stride()[:2], 0, 0, 0], list(i5.stride()), _position()]
        scalars = (
            *x5.shape[2:], *o5.shape[2:], *_spatial_strides(x5), 0, 0, 0, *k, *s, *p, *dil, *counts, divisor
        )  # fmt: skip
        ct = torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype
        count_pad = call.bound.get("count_include_pad", True)
        if not _launch(kernels().pool, shape, [o5, x5, i5], strides, scalars, MODES[row.fn], count_pad, ct):
            return call.on_host()
        return tuple(results) if isinstance(expected, tuple) else results[0]

    return kernel


def pool_backward(op: torch._ops.OpOverload, row: Row):
    spatial = _dims(op)

    @checked(op)
    def kernel(call: Call, expected):
        grad, x = call["grad_output"], call["self"]
        indices = call.bound.get("indices")
        out = call[call.target_name] if call.target_name else None
        if out is not None or not _covered(grad, x) or x.numel() == 0:
            return call.on_host()  # grad_input= (out=) calls
        result = torch.empty_strided(expected.shape, expected.stride(), dtype=expected.dtype, device=x.device)
        r5, g5, x5 = _five(result, spatial), _five(grad, spatial), _five(x, spatial)
        i5 = _five(indices, spatial) if indices is not None else g5
        if not _small(r5, g5):
            return call.on_host()
        (k, s, p, dil), _ = _window_args(call, row, spatial, x5, g5)
        ct = torch.float32 if grad.dtype in (torch.float16, torch.bfloat16) else grad.dtype
        count_pad = call.bound.get("count_include_pad", True)
        divisor = call.bound.get("divisor_override") or 0
        if row.fn == "avg":
            done = _avg_backward(r5, g5, list(x5.shape[2:]), (k, s, p), divisor, count_pad, ct)
            return result if done else call.on_host()
        if row.fn.startswith("adaptive"):
            counts = [-(-o // i) + 1 for i, o in zip(x5.shape[2:], g5.shape[2:])]
        else:
            counts = [((kk - 1) * dd + 1 - 1) // ss + 1 for kk, dd, ss in zip(k, dil, s)]
        window = (k, s, p, dil, counts)
        if not _backward(r5, g5, i5, window, divisor, MODES[row.fn], count_pad, ct):
            return call.on_host()
        return result

    return kernel


def _backward(result, grad, indices, window, divisor, mode, count_pad, ct) -> bool:
    """One launch of pool_backward: result (N, C, D, H, W) from grad (and the max pools' indices)."""
    k, s, p, dil, counts = window
    strides = [list(result.stride()), [*grad.stride()[:2], 0, 0, 0], [*indices.stride()[:2], 0, 0, 0], _position()]
    scalars = (
        *result.shape[2:], *grad.shape[2:], *_spatial_strides(indices), *_spatial_strides(grad),
        *k, *s, *p, *dil, *counts, divisor,
    )  # fmt: skip
    return _launch(
        kernels().pool_backward, list(result.shape), [result, grad, indices], strides, scalars, mode, count_pad, ct
    )


# avg_pool's backward in one pass where each input element has at most this many candidate outputs (windows no
# wider than the stride: one); three one-dim passes where more
ONE_PASS_CANDIDATES = 8


def _avg_backward(result, grad, sizes, window, divisor, count_pad, ct) -> bool:
    """avg_pool's backward one dim at a time (W, then H, then D): its windows and divisors are products of
    one factor per dim, so three passes of one-dim windows do what one pass of K^3 candidates would (a
    13x13x13 window: 13 * 3 steps per element instead of 2197). The divisor_override divides once. With at most
    ONE_PASS_CANDIDATES candidates (test_avg_pool3d_backward3's 1x1x1 window at stride 2: one), one pass over
    the input does it: the first two passes' tensors are not written and read (a third and half of the last
    pass's elements there), and each share is one division by the window's count, as torch's kernels divide."""
    k, s, p = window
    counts = [(kk - 1) // ss + 1 for kk, ss in zip(k, s)]  # outputs whose windows may hold one input, per dim
    if math.prod(counts) <= ONE_PASS_CANDIDATES:  # few: one pass over the input, one division by the count
        return _backward(result, grad, grad, (k, s, p, [1, 1, 1], counts), divisor, "AVG", count_pad, ct)
    source = grad
    for axis in (2, 1, 0):
        one = [1, 1, 1]
        ks, ss, ps, counts = list(one), list(one), [0, 0, 0], list(one)
        ks[axis], ss[axis], ps[axis] = k[axis], s[axis], p[axis]
        counts[axis] = (k[axis] - 1) // s[axis] + 1
        shape = list(source.shape)
        shape[2 + axis] = sizes[axis]
        target = result if axis == 0 else torch.empty(shape, dtype=ct, device=result.device)
        part = divisor if axis == 2 else (1 if divisor else 0)
        if not _backward(target, source, source, (ks, ss, ps, one, counts), part, "AVG", count_pad, ct):
            return False
        source = target
    return True


FAMILIES = {"pool": pool, "pool_backward": pool_backward}
