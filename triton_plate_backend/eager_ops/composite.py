"""Ops plate runs as on CUDA although it has no kernel of its own for them.

- ``composite``: the op's Python decomposition over plate tensors (each op of it a plate kernel, or a
  counted host op). Registered on plate, the op dispatches as on CUDA, where a fused kernel backs it:
  autograd uses the op's own derivative (``_fused_rms_norm_backward``) and Inductor's lite mode keeps
  the op whole in its graph, instead of decomposing it at the Autograd key as on the CPU. Where torch has no
  decomposition, plate's own (embedding_bag.py: CUDA's results where the CPU kernel's differ).
- ``decomposed``: ``composite`` for ops whose CPU kernel takes fewer dtypes than the decomposition (a bool or
  integer operand the CPU kernel refuses goes to the host, which raises torch's error: Row.floating, Row.boolean),
  the result laid out as the meta kernel lays it out.
- ``upsample_backward``: upsample_{nearest,bilinear,bicubic}2d's gradient (row.fn) as ATen's CPU kernels: each
  output gradient times its weights along each dim (``UPSAMPLE_TAPS``: nearest, ATen's nearest_idx, weight 1;
  bilinear, ATen's two source indices and lambdas; bicubic, its four taps clamped into the input and their cubic
  coefficients, A = -0.75) added (index_add) onto the input elements it reads, one index_add per pair of taps,
  in the op math type (fp32 for fp16/bf16), rounded once.
- ``searchsorted``: a batched binary search over plate kernels, each row of values in its own sorted row (a 1-D
  sequence: one row for all), read through ``sorter`` where given; the CPU kernel's predicate (lower bound: go
  right while not mid >= value, upper: while not mid > value), so NaN sorts last as there.
- ``nextafter``: a step of one unit in the last place of the float's bits viewed as an integer of its width (up
  in magnitude toward a larger |other|, down otherwise; from zero the least subnormal of other's sign), other
  where the two are equal, NaN where either is, in the promoted floating type.
- ``multi_margin_backward``: multi_margin_loss's gradient, ATen's CPU formula per frame over plate kernels.
- ``rrelu``: rrelu_with_noise outside training, leaky_relu with the slope (lower + upper) / 2 (ATen's); in
  training, ATen's: each x <= 0 times a slope drawn uniform in [lower, upper] by plate's Philox (in fp32 for
  fp16/bf16, rounded once), noise the slopes (1 where x > 0); its backward, rrelu_with_noise_backward, is
  torch's decomposition (grad * noise in training).
- ``index_reduce``: scatter_reduce along dim with the index broadcast to the source's shape (ATen's shape and
  dtype checks first: a call they refuse goes to the host, which raises its error).
- ``floating_composite`` (at plate's Autograd key, ops.AUTOGRAD_FAMILIES): a CompositeImplicitAutograd op whose
  CPU kernel refuses integer and bool tensors (upsample_*.vec): those go to the host, which raises its error; the
  others decompose as torch decomposes them (autograd through the decomposition).
- ``nll_loss``: ``composite`` for nll_loss_forward/backward, its targets checked first (out of range: the host
  raises torch's error).
- ``equal``: torch.equal as `!=` and any() over plate kernels.
- ``masked_select``: self[mask] after broadcasting the two.
- ``vector_norm``: linalg_vector_norm as torch's decomposition, the 2-norm as CUDA's kernel computes it.
- ``triangle``: tril / triu as a where() of an index mask; ``flip``: one copy kernel from the mirrored offsets
  (negated strides); ``eye``: zeros and a diagonal fill.
- ``variance``: var / std as two passes (the mean, the squared deviations) accumulating in float32.
- ``bincount``: counts (or sums of weights) per value as a scatter_add into zeros whose length, max(self) + 1 or
  minlength, is read back from the device first (as CUDA's kernel does).
- ``histc``: each element's bin as CUDA's kernel computes it, then a scatter_add of the in-range ones.
- ``replication_pad_backward``: the gradient summed back onto the edge entries each padded one copies, one
  index_add per padded dim.
- ``cdist``: _cdist_forward / _cdist_backward from the pairwise differences, CUDA's formulas per p.
- ``unfold``: Tensor.unfold as the strided view ATen's kernel makes (repeat and tile call it).
- ``nonzero_static``: nonzero's first ``size`` indices, fill_value after them, in the meta kernel's layout (CUDA's
  column-major result, where the CPU's is row-major)."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch._decomp import decomposition_table

from . import embedding_bag, integer_histc, launch
from .ops import HALF, Call, _result, _traced, as_expected, checked, on_one_dim_views
from .table import Row


def composite(op: torch._ops.OpOverload, row: Row) -> Callable:
    decomposition = embedding_bag.DECOMPOSITIONS.get(op) or decomposition_table[op]

    def kernel(*args, **kwargs):
        return decomposition(*args, **kwargs)

    return kernel


def multi_margin_loss(op: torch._ops.OpOverload, row: Row) -> Callable:
    """multi_margin_loss: torch's decomposition over plate tensors (``composite``); unreduced, the loss has the
    target's shape, as the CPU kernel gives it (the decomposition, and the meta kernel, give a 0-dim or 1-D input's
    loss the shape [1] where the CPU's is [])."""
    decomposition = decomposition_table[op]

    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        result = decomposition(*args, **kwargs)
        if call["reduction"] == 0 and call["self"].dim() <= 1:  # Reduction::None
            return result.reshape(call["target"].shape)
        return result

    return kernel


def decomposed(op: torch._ops.OpOverload, row: Row) -> Callable:
    decomposition = decomposition_table[op]

    @checked(op)
    def kernel(call: Call, expected):
        operands = [call.bound.get(name) for name in row.operands if isinstance(call.bound.get(name), torch.Tensor)]
        if any(t.device.type != "plate" for t in operands) or not all(_takes(row, t.dtype) for t in operands):
            return call.on_host()
        if row.fn == "probabilities" and bool(((operands[0] < 0) | (operands[0] > 1) | operands[0].isnan()).any()):
            return call.on_host()  # binary_cross_entropy: the CPU kernel raises for an input outside [0, 1]
        if row.fn == "unpool" and _outside(call["indices"], math.prod(call["output_size"])):
            return call.on_host()  # max_unpool: the CPU kernel raises for an index outside the output
        result = decomposition(*call.args, **call.kwargs)
        if call.target_name is not None:
            return result
        if isinstance(result, torch.Tensor):
            return _as_meta(result, expected)
        return tuple(None if r is None else _as_meta(r, e) for r, e in zip(result, expected))  # masked-off outputs

    return kernel


def _outside(indices: torch.Tensor, size: int) -> bool:
    return bool(((indices < 0) | (indices >= size)).any())


def _nearest_taps(size, out_size, corners, scale, dtype, device):
    return [(_nearest_indices(size, out_size, scale, device), None)]


def _linear_taps(size, out_size, corners, scale, dtype, device):
    index0, index1, lambda0, lambda1 = _linear_sources(size, out_size, corners, scale, dtype, device)
    return [(index0, lambda0), (index1, lambda1)]


def _cubic_taps(size, out_size, corners, scale, dtype, device):
    return list(zip(*_cubic_sources(size, out_size, corners, scale, dtype, device)))


# row.fn -> (output index -> the input indices it reads and their weights, along one dim: a list of (index, weight
# or None for 1) pairs, ATen's CPU formulas in the op math type)
UPSAMPLE_TAPS = {"nearest": _nearest_taps, "bilinear": _linear_taps, "bicubic": _cubic_taps}


def upsample_backward(op: torch._ops.OpOverload, row: Row) -> Callable:
    taps = UPSAMPLE_TAPS[row.fn]

    @checked(op)
    def kernel(call: Call, expected):
        grad = call["grad_output"]
        if grad.device.type != "plate" or not grad.dtype.is_floating_point or grad.dim() != 4:
            return call.on_host()
        n, c, h, w = call["input_size"]
        oh, ow = call["output_size"]
        wide = torch.float32 if grad.dtype in HALF else grad.dtype
        corners = call.bound.get("align_corners")
        rows = taps(h, oh, corners, call["scales_h"], wide, grad.device)
        cols = taps(w, ow, corners, call["scales_w"], wide, grad.device)
        g = grad.reshape(n, c, oh * ow).to(wide)
        total = torch.zeros((n, c, h * w), dtype=wide, device=grad.device)
        for hi, hc in rows:
            for wi, wc in cols:
                weighted = g if hc is None else g * (hc.unsqueeze(1) * wc.unsqueeze(0)).reshape(1, 1, -1)
                total.index_add_(2, (hi.unsqueeze(1) * w + wi.unsqueeze(0)).reshape(-1), weighted)
        if call.target_name is not None:
            return call[call.target_name].copy_(total.view(n, c, h, w))
        return as_expected(total.view(n, c, h, w), expected)

    return kernel


def _cubic_sources(size: int, out_size: int, align_corners: bool, scale, dtype, device):
    """ATen's bicubic source taps for each output index: the four input indices (input_index - 1 .. + 2, clamped
    into [0, size - 1]) and their cubic convolution coefficients (A = -0.75) of the fractional part t, from
    area_pixel_compute_source_index(cubic=True) and guard_index_and_lambda, in the op math type."""
    i = torch.arange(out_size, device=device)
    if align_corners:
        ratio = (size - 1) / (out_size - 1) if out_size > 1 else 0.0
    else:
        ratio = 1.0 / scale if scale is not None and scale > 0 else size / out_size
    ratio = torch.tensor(ratio, dtype=dtype).to(device)  # area_pixel_compute_scale, in the op math type
    source = ratio * i.to(dtype) if align_corners else ratio * (i.to(dtype) + 0.5) - 0.5  # cubic: not clamped
    index = source.floor().to(torch.int64).clamp_max(size - 1)
    t = (source - index.to(dtype)).clamp(0, 1)
    a = -0.75

    def near(x):  # cubic_convolution1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # cubic_convolution2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    coefficients = (far(t + 1), near(t), near(1 - t), far(2 - t))
    indices = tuple((index + k).clamp(0, size - 1) for k in (-1, 0, 1, 2))
    return indices, coefficients


def _linear_sources(size: int, out_size: int, align_corners: bool, scale, dtype, device):
    """ATen's compute_source_index_and_lambda for each output index: (index0, index1, lambda0, lambda1)."""
    i = torch.arange(out_size, device=device)
    if out_size == size:
        return i, i, torch.ones(out_size, dtype=dtype, device=device), torch.zeros(out_size, dtype=dtype, device=device)
    if align_corners:
        ratio = (size - 1) / (out_size - 1) if out_size > 1 else 0.0
    else:
        ratio = 1.0 / scale if scale is not None and scale > 0 else size / out_size
    ratio = torch.tensor(ratio, dtype=dtype).to(device)  # area_pixel_compute_scale, in the op math type
    if align_corners:
        source = ratio * i.to(dtype)
    else:
        source = (ratio * (i.to(dtype) + 0.5) - 0.5).clamp_min(0)
    index0 = source.floor().to(torch.int64).clamp_max(size - 1)
    lambda1 = (source - index0.to(dtype)).clamp(0, 1)
    index1 = index0 + (index0 < size - 1).to(torch.int64)
    return index0, index1, 1 - lambda1, lambda1


def _nearest_indices(size: int, out_size: int, scale, device) -> torch.Tensor:
    """ATen's nearest_idx for each output index: min(floor(i * s), size - 1) in float32, s = 1 / scale when one
    is given, else size / out_size (the same index, an output twice the input's: i >> 1)."""
    i = torch.arange(out_size, device=device)
    if out_size == size:
        return i
    if out_size == 2 * size:
        return i // 2
    s = float(torch.tensor(1.0 / scale if scale is not None and scale > 0 else size / out_size, dtype=torch.float32))
    step = torch.tensor(s, dtype=torch.float32).to(device)
    return (i.to(torch.float32) * step).floor().to(torch.int64).clamp_max(size - 1)


def searchsorted(op: torch._ops.OpOverload, row: Row) -> Callable:
    @checked(op)
    def kernel(call: Call, expected):
        sequence, values, sorter = call["sorted_sequence"], call["self"], call["sorter"]
        tensors = [t for t in (sequence, values, sorter) if isinstance(t, torch.Tensor)]
        if any(t.device.type != "plate" for t in tensors) or call.target_name is not None:
            return call.on_host()
        if any(t.dtype == torch.bool or t.is_complex() for t in tensors[:2]):
            return call.on_host()  # the CPU kernel's error
        m = sequence.shape[-1]
        if sorter is not None and (sorter.dtype != torch.int64 or sorter.shape != sequence.shape):
            return call.on_host()  # the CPU kernel's errors (the meta kernel checks neither)
        if sorter is not None and m and bool(((sorter < 0) | (sorter >= m)).any()):
            return call.on_host()  # the CPU kernel's error: a sorter index out of range
        if not isinstance(values, torch.Tensor):
            values = torch.full((), values, dtype=torch.result_type(sequence, values), device=sequence.device)
        batch = math.prod(sequence.shape[:-1])
        rows = sequence.reshape(batch, m)
        flat = values.reshape(batch, values.numel() // batch if batch else 0)
        order = None if sorter is None else sorter.reshape(batch, m)
        right = bool(call["right"]) or call["side"] == "right"
        start = torch.zeros(flat.shape, dtype=torch.int64, device=sequence.device)
        end = torch.full(flat.shape, m, dtype=torch.int64, device=sequence.device)
        for _ in range(m.bit_length()):  # each element's search ends within floor(log2(m)) + 1 halvings
            active = start < end
            mid = torch.where(active, start + (end - start) // 2, 0)
            mid_value = rows.gather(1, mid if order is None else order.gather(1, mid))
            after = ~(mid_value > flat) if right else ~(mid_value >= flat)  # NaN compares false: searched past
            start = torch.where(active & after, mid + 1, start)
            end = torch.where(active & ~after, mid, end)
        return as_expected(start.to(torch.int32 if call["out_int32"] else torch.int64), expected)

    return kernel


BITS = {torch.float16: torch.int16, torch.bfloat16: torch.int16, torch.float32: torch.int32, torch.float64: torch.int64}


def nextafter(op: torch._ops.OpOverload, row: Row) -> Callable:
    @checked(op)
    def kernel(call: Call, expected):
        a, b = call["self"], call["other"]
        dtype = expected.dtype
        target = call[call.target_name] if call.target_name else None
        if a.device.type != "plate" or b.device.type != "plate" or dtype not in BITS:
            return call.on_host()  # integer and bool tensors: the CPU kernel's error
        if target is not None and (target.dtype != dtype or target.device != a.device):
            return call.on_host()
        a, b = torch.broadcast_tensors(a.to(dtype), b.to(dtype))
        bits = a.contiguous().view(BITS[dtype])
        away = (b > a) == (a > 0)  # a nonzero a steps its magnitude up (its bits + 1) or down
        stepped = torch.where(away, bits + 1, bits - 1)
        tiny = torch.where(b > 0, 1, torch.iinfo(BITS[dtype]).min + 1).to(BITS[dtype])  # +-the least subnormal
        stepped = torch.where(a == 0, tiny, stepped).view(dtype)
        result = torch.where(a == b, b, stepped)
        result = torch.where(a.isnan() | b.isnan(), a + b, result)
        if target is None:
            return as_expected(result, expected)
        if target.shape != expected.shape:
            target.resize_(expected.shape)
        return target.copy_(result)

    return kernel


def multi_margin_backward(op: torch._ops.OpOverload, row: Row) -> Callable:
    """multi_margin_loss_backward(grad_output, self, target, p, margin, weight, reduction) as ATen's CPU kernel, row
    by row over plate kernels: z = (margin - x[target]) + x[d]; where z > 0 (d not the target) the gradient is
    g (p = 1) or 2 g z (p = 2), g = 1 / (frames * classes) for the mean, else 1 / classes, times weight[target];
    the target's entry is minus the sum of the others; all times grad_output (per frame for reduction none). No
    meta kernel: float32/float64 only, as the CPU kernel, the shapes and targets checked here; anything else goes
    to the host (its error)."""

    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        grad, x, target, weight = call["grad_output"], call["self"], call["target"], call["weight"]
        p, margin, reduction = call["p"], call["margin"], call["reduction"]
        if call.mixed or x.dtype not in (torch.float32, torch.float64) or p not in (1, 2) or x.dim() > 2:
            return call.on_host()
        frames, size = (1, max(x.numel(), 1)) if x.dim() <= 1 else x.shape
        if size == 0 or x.numel() != frames * size or target.numel() != frames or target.dim() > 1:
            return call.on_host()
        if target.dtype != torch.int64 or grad.dtype != x.dtype or (weight is not None and weight.dtype != x.dtype):
            return call.on_host()
        if weight is not None and (weight.dim() > 1 or weight.numel() != size):
            return call.on_host()
        per_frame = reduction == 0 and grad.dim() > 0
        if (grad.numel() != frames if per_frame else grad.numel() != 1) and frames:
            return call.on_host()
        t = target.reshape(frames, 1)
        if frames and bool(((t < 0) | (t >= size)).any()):
            return call.on_host()  # the CPU kernel's "target out of range"
        rows = x.reshape(frames, size)
        g = torch.tensor(1.0 / (frames * size) if reduction == 1 and frames else 1.0 / size, dtype=x.dtype).item()
        z = (margin - rows.gather(1, t)) + rows
        live = (z > 0) & (torch.arange(size, device=x.device) != t)
        h = torch.full_like(z, g) if p == 1 else (2 * g) * z
        if weight is not None:
            h = h * weight.reshape(size)[t]
        h = torch.where(live, h, torch.zeros((), dtype=x.dtype, device=x.device))
        result = h.scatter(1, t, -h.sum(1, keepdim=True))
        result = result * (grad.reshape(frames, 1) if per_frame else grad.reshape(()))
        return result.reshape(x.shape).contiguous()

    return kernel


def rrelu(op: torch._ops.OpOverload, row: Row) -> Callable:
    @checked(op)
    def kernel(call: Call, expected):
        x, noise = call["self"], call["noise"]
        lower, upper = call["lower"], call["upper"]
        if x.device.type != "plate" or not x.dtype.is_floating_point:
            return call.on_host()
        if not call["training"]:
            result = torch.ops.aten.leaky_relu.default(x, (lower + upper) / 2)
        else:
            if noise.device != x.device or noise.numel() != x.numel() or noise.dtype != x.dtype:
                return call.on_host()
            # ATen's training: a slope uniform in [lower, upper] where x <= 0 (drawn in the op math type,
            # fp32 for fp16/bf16, by plate's Philox uniform_), 1 elsewhere; noise keeps the slopes
            math = torch.float32 if x.dtype in HALF else x.dtype
            slope = torch.empty(x.shape, dtype=math, device=x.device).uniform_(
                lower, upper, generator=call.bound.get("generator")
            )
            slope = torch.where(x <= 0, slope, torch.ones((), dtype=math, device=x.device))
            result = (x.to(math) * slope).to(x.dtype)
            noise.copy_(slope.reshape(noise.shape))
        # rrelu_with_noise_ writes self; the functional op's only mutated argument (its "target") is noise
        return x.copy_(result) if call.target_name == "self" else result

    return kernel


def index_reduce(op: torch._ops.OpOverload, row: Row) -> Callable:
    @checked(op)
    def kernel(call: Call, expected):
        x, index, source = call["self"], call["index"], call["source"]
        if x.dim() == 0 and source.dim() == 0 and index.dim() <= 1 and x.dtype == source.dtype:
            return on_one_dim_views(call, expected, ("self", "source"))
        if x.dim() == 0 or source.dim() != x.dim() or x.dtype != source.dtype or index.dim() > 1:
            return call.on_host()  # what ATen checks (its errors) and the 0-dim forms
        dim = call["dim"] % x.dim()
        others_match = all(source.shape[d] == x.shape[d] for d in range(x.dim()) if d != dim)
        if index.dtype not in (torch.int64, torch.int32) or index.numel() != source.shape[dim] or not others_match:
            return call.on_host()
        # scatter_reduce along dim with the index broadcast to the source's shape: the same reductions and
        # include_self rule (an index out of range faults in the simulator, as CUDA's device assert)
        shape = [-1 if d == dim else 1 for d in range(x.dim())]
        expanded = index.reshape(shape).expand_as(source)
        include_self = call.bound.get("include_self", True)
        if call.target_name == "self":
            return x.scatter_reduce_(dim, expanded, source, call["reduce"], include_self=include_self)
        result = torch.scatter_reduce(x, dim, expanded, source, call["reduce"], include_self=include_self)
        if call.target_name is None:
            return result
        return _result(call, expected, x.device).copy_(result)  # index_reduce.out

    return kernel


def floating_composite(op: torch._ops.OpOverload, row: Row) -> Callable:
    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        operands = [call.bound.get(name) for name in row.operands]
        integral = any(isinstance(t, torch.Tensor) and not t.dtype.is_floating_point for t in operands)
        if integral and not (_traced(args) or _traced(kwargs.values())):  # a tracer decomposes, as it always did
            return call.on_host()
        return op.decompose(*args, **kwargs)

    return kernel


def _takes(row: Row, dtype: torch.dtype) -> bool:
    if row.floating and not dtype.is_floating_point:
        return False
    return row.boolean or dtype != torch.bool


def _as_meta(result: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
    if result.stride() == expected.stride() and result.dtype == expected.dtype:
        return result
    return as_expected(result, expected)


def nll_loss(op: torch._ops.OpOverload, row: Row) -> Callable:
    """nll_loss_forward / nll_loss_backward: torch's decomposition (a gather of the targets' entries) over
    plate tensors, as ``composite``; a target out of [0, classes) that is not ignore_index makes the host
    run the call, which raises torch's error (the gather would read outside the tensor)."""
    decomposition = decomposition_table[op]

    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        x, target = call["self"], call["target"]
        if call.mixed:
            return call.on_host()
        classes = x.shape[1 if x.dim() > 1 else 0]
        live = target != call["ignore_index"]
        if bool((live & ((target < 0) | (target >= classes))).any()):
            return call.on_host()
        return decomposition(*args, **kwargs)

    return kernel


def equal(op: torch._ops.OpOverload, row: Row) -> Callable:
    """torch.equal: the same shape and every element equal (NaN equals nothing), as one any() of `!=` over
    plate kernels (of two dtypes: compared in the promoted type, as the host does); tensors of other devices
    go to the host."""

    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        a, b = call["self"], call["other"]
        if call.mixed or a.device != b.device:
            return call.on_host()
        if a.shape != b.shape:
            return False
        return not bool((a != b).any())

    return kernel


def masked_select(op: torch._ops.OpOverload, row: Row) -> Callable:
    """masked_select: self and mask broadcast together, then self[mask] (plate's index by a mask)."""

    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        x, mask = call["self"], call["mask"]
        if call.mixed or mask.dtype != torch.bool or call.target_name is not None:
            return call.on_host()  # torch's errors, its deprecated uint8 masks
        x, mask = torch.broadcast_tensors(x, mask)
        return x[mask]

    return kernel


def vector_norm(op: torch._ops.OpOverload, row: Row) -> Callable:
    """linalg_vector_norm (torch.norm, F.normalize): torch's decomposition over plate tensors (sum, amax, pow),
    except the 2-norm of a real floating tensor, which is CUDA's norm kernel's sqrt(sum(x * x)) in the reduction's
    computation type (float32 for the half types), one sqrt instead of pow(., 0.5)."""
    decomposition = decomposition_table[op]

    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        if call.mixed:
            return call.on_host()
        x, dtype = call["self"], call["dtype"]
        if call["ord"] != 2 or not x.dtype.is_floating_point or (dtype is not None and dtype != x.dtype):
            return decomposition(*args, **kwargs)  # its checks raise torch's errors
        dims = list(call["dim"] or []) or None  # None or []: every dim
        shape = x.shape or (1,)  # a 0-dim tensor reduces over dim 0 (or -1) as over one element, as torch wraps it
        reduced = [shape[d] for d in dims] if dims is not None else [x.numel()]
        if x.numel() == 0 or all(n == 1 for n in reduced):
            return decomposition(*args, **kwargs)  # torch's errors; over one element, |x| as ATen's shortcut
        wide = x.to(torch.float32) if x.dtype in (torch.float16, torch.bfloat16) else x
        squares = wide * wide
        total = squares.sum() if dims is None else squares.sum(dims, keepdim=call["keepdim"])
        if dims is None and call["keepdim"]:
            total = total.reshape([1] * x.dim())
        return total.sqrt().to(x.dtype)

    return kernel


def triangle(op: torch._ops.OpOverload, row: Row) -> Callable:
    """tril / triu (and in place): where(col - row <= or >= diagonal, self, 0) over the last two dims, the mask
    built from two aranges on the device (CUDA's kernel tests the same index inequality); the result laid out as
    the meta kernel lays it out. row.fn: "tril" or "triu"."""

    @checked(op)
    def kernel(call: Call, expected):
        x, diagonal = call["self"], call["diagonal"]
        if x.device.type != "plate" or (call.target_name is not None and call.target_name != "self"):
            return call.on_host()
        rows, cols = x.shape[-2], x.shape[-1]
        offset = torch.arange(cols, device=x.device) - torch.arange(rows, device=x.device).unsqueeze(-1)
        keep = offset <= diagonal if row.fn == "tril" else offset >= diagonal
        result = torch.where(keep, x, torch.zeros((), dtype=x.dtype, device=x.device))
        if call.target_name == "self":
            return x.copy_(result)
        out = torch.empty_strided(expected.shape, expected.stride(), dtype=expected.dtype, device=x.device)
        return out.copy_(result)

    return kernel


def flip(op: torch._ops.OpOverload, row: Row) -> Callable:
    """flip: one copy kernel reading each element from its mirrored offset (CUDA's kernel does the same): the
    source walked from its last element along each flipped dim with that dim's stride negated, as the integer type
    of its width in and out (the same bits; one kernel a width); the result laid out as the meta kernel lays it
    out. A layout the kernel cannot address (more than RANK merged dims): index_select by a reversed arange along
    each flipped dim."""

    @checked(op)
    def kernel(call: Call, expected):
        x = call["self"]
        if x.device.type != "plate":
            return call.on_host()
        dims = sorted({d % max(x.dim(), 1) for d in call["dims"]}) if x.dim() else []
        out = torch.empty_strided(expected.shape, expected.stride(), dtype=expected.dtype, device=x.device)
        source, target = x.resolve_neg(), out
        if x.is_complex():  # over the real views: (real, imag) pairs, the last dim not flipped
            source, target = torch.view_as_real(source.resolve_conj()), torch.view_as_real(out)
        if _mirrored_copy(source, target, dims):
            return out
        result = source
        for d in dims:
            result = result.index_select(d, torch.arange(x.shape[d] - 1, -1, -1, device=x.device))
        return out.copy_(torch.view_as_complex(result) if x.is_complex() else result)

    return kernel


def _mirrored_copy(source: torch.Tensor, target: torch.Tensor, dims: list[int]) -> bool:
    """target = source flipped along dims, as one launch of the elementwise copy (False: more than RANK merged dims).
    The source's pointer is its element at the far end of each flipped dim, its strides there negated."""
    shape = list(source.shape)
    if source.numel() == 0:
        return True
    steps = [-s if d in dims else s for d, s in enumerate(source.stride())]
    strides = [launch.broadcast_strides(target, shape), steps]
    if not launch.fits(shape, strides):
        return False
    far = source.storage_offset() + sum((shape[d] - 1) * source.stride(d) for d in dims)
    bits = launch.BIT_TYPES.get(source.dtype)  # the same bits through integer views: one kernel a width
    if bits is not None:
        source, target = source.view(bits), target.view(bits)
    launch.launch(
        "elementwise", shape, [target, source.as_strided((1,), (1,), far)], strides,
        FN=launch.kernels().copy, ARITY=1, CT=launch.triton_dtype(source.dtype),
    )  # fmt: skip
    return True


def eye(op: torch._ops.OpOverload, row: Row) -> Callable:
    """eye(n) / eye(n, m) on plate: zeros, then 1 along the diagonal (a strided fill), in torch's default dtype
    unless one is given; a negative size or another layout goes to the host, which raises torch's error."""

    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        n = call["n"]
        m = call.bound.get("m", n)
        device = call["device"]
        if n < 0 or m < 0 or call["layout"] not in (None, torch.strided) or torch.device(device).type != "plate":
            return call.on_host()
        out = torch.zeros((n, m), dtype=call["dtype"] or torch.get_default_dtype(), device=device)
        out.diagonal().fill_(1)
        return out

    return kernel


def variance(op: torch._ops.OpOverload, row: Row) -> Callable:
    """var / std / var_mean / std_mean (.correction) of a real floating tensor: the mean, then the sum of
    squared deviations over max(0, N - correction), two passes over plate kernels in float32 for fp16/bf16
    (CUDA's Welford accumulates in float32 too), std its sqrt; the *_mean ops also return that mean, rounded
    once. Complex tensors and out= go to the host, counted. row.fn: the op's name."""

    @checked(op)
    def kernel(call: Call, expected):
        x = call["self"]
        if x.device.type != "plate" or call.target_name is not None or not x.dtype.is_floating_point:
            return call.on_host()
        dims = list(call["dim"] or []) or None  # None or []: every dim
        correction = 1 if call["correction"] is None else call["correction"]
        n = math.prod(x.shape[d] for d in dims) if dims is not None else x.numel()
        wide = x.to(torch.float32) if x.dtype in (torch.float16, torch.bfloat16) else x
        deviation = wide - (wide.mean(dims, keepdim=True) if dims is not None else wide.mean())
        squares = deviation * deviation
        total = squares.sum(dims, keepdim=call["keepdim"]) if dims is not None else squares.sum()
        result = total / max(0, n - correction)
        result = result.sqrt() if row.fn.startswith("std") else result
        if not row.fn.endswith("_mean"):
            return as_expected(result, expected)
        mean = wide.mean(dims, keepdim=call["keepdim"]) if dims is not None else wide.mean()
        return as_expected(result, expected[0]), as_expected(mean, expected[1])

    return kernel


def bincount(op: torch._ops.OpOverload, row: Row) -> Callable:
    """bincount(self, weights, minlength) of a 1-D non-negative integer tensor: zeros of max(max(self) + 1,
    minlength) entries, then a scatter_add of ones (int64) or of the weights (float32 weights sum in float32,
    any other dtype in float64, as torch does). Calls torch refuses (negative values, another rank or a
    float self, weights of another length, a negative minlength) go to the host, which raises its error."""

    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        x, weights, minlength = call["self"], call["weights"], call["minlength"]
        integral = not (x.dtype.is_floating_point or x.is_complex() or x.dtype == torch.bool)
        if call.mixed or x.dim() != 1 or not integral or minlength < 0:
            return call.on_host()
        if weights is not None and (weights.shape != x.shape or weights.is_complex()):
            return call.on_host()
        if x.numel() and int(x.min()) < 0:
            return call.on_host()
        size = max(int(x.max()) + 1 if x.numel() else 0, minlength)
        if weights is None:
            dtype, values = torch.int64, torch.ones(x.shape, dtype=torch.int64, device=x.device)
        else:
            dtype = torch.float32 if weights.dtype == torch.float32 else torch.float64
            values = weights.to(dtype)
        return torch.zeros(size, dtype=dtype, device=x.device).scatter_add_(0, x.to(torch.int64), values)

    return kernel


def histc(op: torch._ops.OpOverload, row: Row) -> Callable:
    """histc(self, bins, min, max) of a floating tensor: min == max takes the data's min and max (equal: widened
    by 1 each way); element x in [min, max] counts in bin int((x - min) * bins / (max - min)), the last bin
    holding max, each step rounded to self's dtype with min and max rounded to it first (CUDA's getBin and the
    CPU's linear interpolation, in input_t); NaN and out-of-range elements count nowhere.
    The counts accumulate in self's dtype, as torch returns them. Integer tensors (which the CPU refuses) count as
    CUDA's kernel counts them (integer_histc.py). A range that is not finite or inverted, bins < 1 and out= go to
    the host, which raises or computes them."""

    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        x, bins = call["self"], call["bins"]
        low, high = float(call["min"]), float(call["max"])
        if call.mixed or x.dtype.is_complex or bins < 1 or call.target_name is not None:
            return call.on_host()
        if not x.dtype.is_floating_point:  # an integer tensor: CUDA's integer histc (integer_histc.py)
            counts = integer_histc.histc(call, x, bins)
            return call.on_host() if counts is None else counts
        if low == high and x.numel():
            low, high = float(x.min()), float(x.max())
        if low == high:
            low, high = low - 1, high + 1
        if not (math.isfinite(low) and math.isfinite(high)) or low > high:
            return call.on_host()
        edges = torch.tensor([low, high], dtype=x.dtype)  # on the host: the bounds in self's dtype
        low, high, span = edges[0].item(), edges[1].item(), (edges[1] - edges[0]).item()
        flat = x.reshape(-1)
        inside = (flat >= low) & (flat <= high)
        place = ((torch.where(inside, flat, low) - low) * bins / span).to(torch.int64).clamp_(0, bins - 1)
        counts = torch.zeros(bins, dtype=x.dtype, device=x.device)
        return counts.scatter_add_(0, place, inside.to(x.dtype))

    return kernel


def replication_pad_backward(op: torch._ops.OpOverload, row: Row) -> Callable:
    """replication_pad{1,2,3}d_backward(grad_output, self, padding): along each padded dim (the last ones,
    padding given last dim first as (left, right) pairs), output entry o copied input entry
    clamp(o - left, 0, size - 1), so the gradient is an index_add of grad_output's entries at those places,
    dim after dim; the result laid out as self (empty_like), empty for an empty self. Shapes that disagree go to
    the host (its error)."""

    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        grad, x, padding = call["grad_output"], call["self"], list(call["padding"])
        dims = len(padding) // 2
        if call.mixed or grad.dim() != x.dim() or grad.dtype != x.dtype or x.dim() < dims:
            return call.on_host()
        expected = list(x.shape)
        for i in range(dims):
            d = x.dim() - 1 - i
            expected[d] = x.shape[d] + padding[2 * i] + padding[2 * i + 1]
        if list(grad.shape) != expected:
            return call.on_host()
        if x.numel() == 0:  # an empty batch (or a zero-size dim): nothing to sum, the CPU's empty result
            return torch.empty_like(x)
        result = grad
        for i in range(dims):
            d = x.dim() - 1 - i
            source = torch.arange(grad.shape[d], device=x.device) - padding[2 * i]
            places = source.clamp_(0, x.shape[d] - 1)
            shape = list(result.shape)
            shape[d] = x.shape[d]
            result = torch.zeros(shape, dtype=grad.dtype, device=x.device).index_add_(d, places, result)
        return torch.empty_like(x).copy_(result)

    return kernel


def _pairwise(x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
    return x1.unsqueeze(-2) - x2.unsqueeze(-3)  # (..., R1, R2, M), the batch dims broadcast


def cdist(op: torch._ops.OpOverload, row: Row) -> Callable:
    """_cdist_forward(x1, x2, p, compute_mode): the p-norm of each pairwise difference (0: the count of nonzeros,
    inf: the largest |difference|); for p = 2 where torch picks the matrix-product form (compute_mode 1, or the
    default with more than 25 rows either side) torch's _euclidean_dist over plate kernels, as CUDA.
    _cdist_backward(grad, x1, x2, p, cdist): the gradient for x1 by CUDA's kernel's formulas (p = 0: zeros; p < 2:
    sign(d) |d|^(p-1) / dist^(p-1), 0 where dist = 0 or, for p < 1, where d = 0; p = inf: sign(d) where |d| is
    the distance; otherwise d |d|^(p-2) / dist^(p-1), 0 where dist = 0), times grad and summed over x2's rows
    (in the broadcast batch shape). Other dtypes than float32/float64, and shapes torch refuses, go to the host."""

    def forward(call: Call, expected):
        x1, x2, p, mode = call["x1"], call["x2"], call["p"], call["compute_mode"]
        if p == 2 and (mode == 1 or (mode in (None, 0) and (x1.shape[-2] > 25 or x2.shape[-2] > 25))):
            return as_expected(torch.ops.aten._euclidean_dist(x1, x2), expected)
        diff = _pairwise(x1, x2).abs()
        if p == 0:
            result = (diff != 0).sum(-1).to(x1.dtype)
        elif math.isinf(p):
            result = diff.amax(-1)
        elif p == 1:
            result = diff.sum(-1)
        elif p == 2:
            result = (diff * diff).sum(-1).sqrt()
        else:
            result = diff.pow(p).sum(-1).pow(1.0 / p)
        return as_expected(result, expected)

    def backward(call: Call, expected):
        grad, x1, x2, p, dist = call["grad"], call["x1"], call["x2"], call["p"], call["cdist"]
        diff = _pairwise(x1, x2)
        g, d = grad.unsqueeze(-1), dist.unsqueeze(-1)
        zero = torch.zeros((), dtype=x1.dtype, device=x1.device)
        if p == 0:
            return as_expected(torch.zeros(expected.shape, dtype=x1.dtype, device=x1.device), expected)
        if math.isinf(p):
            each = torch.sign(diff) * (diff.abs() == d).to(x1.dtype) * g
        elif p < 2:
            each = torch.sign(diff) * diff.abs().pow(p - 1) * g / d.pow(p - 1)
            dead = ((d == 0) | (diff == 0)) if p < 1 else (d == 0)
            each = torch.where(dead, zero, each)
        else:
            each = torch.where(d == 0, zero, diff * diff.abs().pow(p - 2) * g / d.pow(p - 1))
        # x1 broadcast over the batch: its gradient sums over the batch dims (none of an empty batch: zeros)
        return as_expected(each.sum(-2).sum_to_size(expected.shape), expected)

    body = forward if op._schema.name == "aten::_cdist_forward" else backward

    @checked(op)
    def kernel(call: Call, expected):
        tensors = [v for v in call.bound.values() if isinstance(v, torch.Tensor)]
        if any(t.dtype not in (torch.float32, torch.float64) for t in tensors) or call["p"] < 0:
            return call.on_host()
        return body(call, expected)

    return kernel


def unfold(op: torch._ops.OpOverload, row: Row) -> Callable:
    """unfold(self, dimension, size, step): a view of self, as at::native::unfold makes it (CPU and CUDA register
    that kernel, out-of-tree devices get none): dim `dimension` becomes (size - window) // step + 1 windows, its
    stride times step, and a last dim of `size` elements at the dim's stride. Arguments torch refuses go to
    the host, which raises its error."""

    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        x, size, step = call["self"], call["size"], call["step"]
        sizes, strides = (list(x.shape), list(x.stride())) if x.dim() else ([1], [1])
        d = call["dimension"]
        if call.mixed or step <= 0 or size < 0 or not -len(sizes) <= d < len(sizes) or size > sizes[d % len(sizes)]:
            return call.on_host()
        d %= len(sizes)
        windowed = sizes[:]
        windowed[d] = (sizes[d] - size) // step + 1
        shape = [*windowed, size] if x.dim() else [size]
        stride = [*strides[:d], strides[d] * step, *strides[d + 1 :], strides[d]] if x.dim() else [1]
        return x.as_strided(shape, stride, x.storage_offset())

    return kernel


def nonzero_static(op: torch._ops.OpOverload, row: Row) -> Callable:
    @checked(op)
    def kernel(call: Call, expected):
        x = call["self"]
        found = torch.nonzero(x)  # plate's nonzero: the CPU's row-major order
        out = torch.empty_strided(expected.shape, expected.stride(), dtype=expected.dtype, device=x.device)
        out.fill_(call["fill_value"])
        taken = min(found.shape[0], out.shape[0])
        out[:taken].copy_(found[:taken])
        return out

    return kernel


FAMILIES: dict[str, Callable[[torch._ops.OpOverload, Row], Callable]] = {
    "composite": composite,
    "decomposed": decomposed,
    "upsample_backward": upsample_backward,
    "searchsorted": searchsorted,
    "rrelu": rrelu,
    "index_reduce": index_reduce,
    "multi_margin_backward": multi_margin_backward,
    "multi_margin_loss": multi_margin_loss,
    "nextafter": nextafter,
    "floating_composite": floating_composite,
    "nll_loss": nll_loss,
    "equal": equal,
    "masked_select": masked_select,
    "nonzero_static": nonzero_static,
    "vector_norm": vector_norm,
    "triangle": triangle,
    "flip": flip,
    "eye": eye,
    "variance": variance,
    "bincount": bincount,
    "histc": histc,
    "replication_pad_backward": replication_pad_backward,
    "cdist": cdist,
    "unfold": unfold,
}
