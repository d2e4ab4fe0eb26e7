"""Ops Inductor runs as extern (host) calls, decomposed on plate into ops it lowers to plate kernels.

Inductor has no lowering of its own for these: it calls the aten kernel (an ``extern_kernels`` call or a
fallback), which on plate runs its CPU kernel on the host, outside the modeled clock, and counts as a host
fallback (fallback_counter.py). Registered in Inductor's decomposition table (declining for other devices, which
keep what the table held), they are rewritten before lowering:

- ``_weight_int8pack_mm(x, w_int8, scales)``: ``(x @ w.T) * scales`` in float32 (the CPU kernel's
  accumulation), rounded once to x's dtype: a plate GEMM template and a pointwise kernel;
- ``_embedding_bag`` and ``_embedding_bag_forward_only``: the decomposition eager plate runs too
  (triton_plate_backend/eager_ops/embedding_bag.py: CUDA's results), so compiled and eager agree;
- ``_fft_c2c`` of complex64 tensors whose transformed dims are at most ``MAX_DFT`` long: a DFT per dim as
  float64 matrix products with the cos/sin table (angles ``2*pi*(j*k mod n)/n``, exact arguments), rounded once
  to complex64 at the end: more accurate than a float32 FFT, O(n^2) per dim instead of O(n log n).
  float64 products are plate reductions (reduction_gemm.py); the result has the strides eager's kernel gives
  (its meta function: batch dims ordered by the input's strides), not contiguous ones;
- ``_fft_r2c`` of float32 and ``_fft_c2r`` of complex64 tensors (rfft/irfft and their n-dim forms) under the
  same bound: the last transformed dim as a real product with the onesided half of the table, the others as
  ``_fft_c2c``'s DFTs;
- ``mm`` and ``bmm`` of complex tensors (``einsum``/``matmul`` of complex64, as spectral layers multiply their
  modes, and their gradients): one real product of the real and imaginary parts,
  ``[re(a) | im(a)] @ [[re(b), im(b)], [-im(b), re(b)]] = [re(ab) | im(ab)]``, a plate GEMM (its K doubled) in
  the real dtype, where Inductor calls the complex aten kernel; ``addmm``/``baddbmm`` add beta * input to
  alpha times it; a complex ``sum`` over dims (``mv``'s decomposition) sums the two parts;
- ``_embedding_bag_per_sample_weights_backward``: each index's bag gradient dotted with its weight row;
  ``segment_reduce`` (1-D lengths or offsets): a scatter_reduce onto the segments, each element's found by a
  searchsorted of the segments' ends;
- ``_conj`` of complex64: a physical conjugate (conj_resolved), where Inductor's fallback returned a conjugate view
  that the traced graph did not know of;
- ``_upsample_bilinear2d_aa``/``_upsample_bicubic2d_aa`` (``F.interpolate(..., antialias=True)``) and their
  backward: ATen's antialiased weights along each dim as an (output, input) matrix, two matmuls (transposed for
  the gradient) in the op math type.

Ops with an eager plate kernel (``_pdist_forward``/``_pdist_backward``, ``addbmm``, ``multinomial``,
``index_reduce``, ...: triton_plate_backend/eager_ops) need no entry: Inductor's fallback calls them on plate, as it
calls CUDA's kernels.

And one lowering: ``lift_fresh_copy`` of a complex constant of the graph (``x + torch.tensor(1 + 1j, device=...)``).
Inductor lowers the op as a clone even for complex tensors (it exempts it from its complex fallback), and no Triton
kernel takes a complex pointer: generating the copy failed with KeyError 'complex64'. On plate the constant is kept
as its real view (view_as_real), copied by a float kernel and viewed as complex again (view_as_complex, a view).
"""

from __future__ import annotations

import functools
import math

import torch

from triton_plate_backend.eager_ops import embedding_bag

from . import decompositions

aten = torch.ops.aten

MAX_DFT = 1024  # the longest dim _fft_c2c transforms as a DFT product (n^2 table entries)
# fft_norm_mode (aten/native/SpectralOpsUtils.h): none, 1/sqrt(n), 1/n
NORM_NONE, NORM_BY_ROOT_N, NORM_BY_N = 0, 1, 2


def _on_plate(*tensors) -> bool:
    return any(isinstance(t, torch.Tensor) and t.device.type == "plate" for t in tensors)


def _eager_strides(op, x, *args) -> tuple | None:
    """The strides of ``op(x, *args)``'s result as the device's kernel lays it out: its meta function run on a
    fake copy of x under the fake mode being traced (None outside one). The FFT kernels' outputs are not
    contiguous (ATen's _exec_fft orders the batch dims by the input's strides), and eager plate returns them so."""
    from torch._guards import detect_fake_mode
    from torch.fx.experimental.proxy_tensor import disable_proxy_modes_tracing

    mode = detect_fake_mode((x,))
    if mode is None:
        return None
    with disable_proxy_modes_tracing(), mode:
        fake = torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=x.device)
        return tuple(op(fake, *args).stride())


def _order(strides: tuple) -> tuple[list[int], list[int]]:
    """The dims from outermost to innermost of dense ``strides``, and the permutation that undoes that order."""
    order = sorted(range(len(strides)), key=lambda d: (-strides[d], -d))
    return order, [order.index(d) for d in range(len(strides))]


def _laid_out(t, strides: tuple | None):
    """t with the dense strides ``strides`` (None: as it is): copied in the order of those strides (a permuted
    contiguous copy, a pointwise kernel) and viewed back, so the graph's output keeps the eager layout
    (Inductor's keep_output_stride)."""
    if strides is None or tuple(strides) == tuple(t.stride()):
        return t
    order, inverse = _order(strides)
    return t.permute(order).contiguous().permute(inverse)


def _complex_laid_out(re, im, strides: tuple | None):
    """complex64 of float64 (re, im), rounded once, with the complex strides ``strides`` (None: contiguous): the
    float32 pair made contiguous in the order of those strides, viewed as complex (Inductor's view_as_complex
    takes a contiguous input) and permuted back, a view: no kernel takes a complex pointer."""
    order, inverse = _order(strides) if strides is not None else (list(range(re.dim())),) * 2
    pair = torch.stack([re.permute(order), im.permute(order)], -1).to(torch.float32).contiguous()
    return torch.view_as_complex(pair).permute(inverse)


def weight_int8pack_mm(x, weight, scales):
    if not _on_plate(x, weight, scales):
        return NotImplemented
    product = torch.mm(x.to(torch.float32), weight.to(torch.float32).t())
    return (product * scales.to(torch.float32)).to(x.dtype)


def embedding_bag_on_plate(weight, indices, offsets, *args, **kwargs):
    if not _on_plate(weight, indices, offsets):
        return NotImplemented
    return embedding_bag.embedding_bag(weight, indices, offsets, *args, **kwargs)


def _dft_table(n: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of 2*pi*j*k/n (n x n, float64), the angle's multiple reduced mod n first (exact)."""
    k = torch.arange(n, dtype=torch.int64, device=device)
    turns = (k.unsqueeze(1) * k.unsqueeze(0)) % n
    angle = turns.to(torch.float64) * (2.0 * math.pi / n)
    return torch.cos(angle), torch.sin(angle)


def _dft_along(re, im, d: int, forward: bool):
    """One complex DFT along dim d of (re, im), float64: (a + ib)(cos + i sign sin) summed over the index."""
    sign = -1.0 if forward else 1.0  # the exponent's sign: e^(-i theta) forward
    cos, sin = _dft_table(re.shape[d], re.device)
    a, b = re.movedim(d, -1), im.movedim(d, -1)
    re_out = torch.matmul(a, cos) - sign * torch.matmul(b, sin)
    im_out = torch.matmul(b, cos) + sign * torch.matmul(a, sin)
    return re_out.movedim(-1, d), im_out.movedim(-1, d)


def fft_c2c(x, dim, normalization, forward):
    if not _on_plate(x) or x.dtype != torch.complex64 or any(x.shape[d] > MAX_DFT for d in dim):
        return NotImplemented
    parts = torch.view_as_real(x).to(torch.float64)
    re, im = parts[..., 0], parts[..., 1]
    for d in dim:
        re, im = _dft_along(re, im, d, forward)
    re, im = _normalized([re, im], normalization, math.prod(x.shape[d] for d in dim))
    return _complex_laid_out(re, im, _eager_strides(aten._fft_c2c.default, x, dim, normalization, forward))


def conj_resolved(x):
    """aten._conj of a complex64 plate tensor as a physical conjugate: the real view's parts, the imaginary one
    negated, viewed as complex in x's layout. Inductor runs _conj as a fallback, whose result is a conjugate view
    at run time though its fake tensor was not (a conjugate gradient: ihfft's backward); the view_as_real of the
    FFT decompositions then refused it ('view_as_real doesn't work on unresolved conjugated tensors')."""
    if not _on_plate(x) or x.dtype != torch.complex64:
        return NotImplemented
    re, im = _parts(x)
    return _complex_laid_out(re, -im, x.stride())


def _parts(x):
    """(real, imaginary) of a complex tensor (a conjugate view resolved first): views of its real view."""
    parts = torch.view_as_real(x.resolve_conj())
    return parts[..., 0], parts[..., 1]


def complex_product(a, b):
    """a (..., M, K) @ b (..., K, N) of complex tensors on plate as one real product: [ar | ai] (M x 2K) times
    [[br, bi], [-bi, br]] (2K x 2N) is [ar br - ai bi | ar bi + ai br]."""
    if not _on_plate(a, b) or not (a.is_complex() and b.is_complex()):
        return NotImplemented
    (ar, ai), (br, bi) = _parts(a), _parts(b)
    left = torch.cat([ar, ai], -1)
    right = torch.cat([torch.cat([br, bi], -1), torch.cat([-bi, br], -1)], -2)
    out = torch.matmul(left, right)
    n = b.shape[-1]
    return torch.view_as_complex(torch.stack([out[..., :n], out[..., n:]], -1))


def complex_product_added(input, a, b, *, beta=1, alpha=1):
    """addmm / baddbmm of complex tensors on plate: beta * input + alpha * (a @ b), the product as above; beta = 0
    reads no input (its NaNs ignored), as ATen."""
    if not _on_plate(input, a, b) or not (input.is_complex() and a.is_complex() and b.is_complex()):
        return NotImplemented
    product = complex_product(a, b)
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return product
    return product + (input if beta == 1 else input * beta)


def complex_sum(x, dim=None, keepdim=False, *, dtype=None):
    """sum of a complex tensor on plate (``mv``'s decomposition sums complex products): the sums of its real and
    imaginary parts, a real reduction each."""
    if not _on_plate(x) or not x.is_complex() or (dtype is not None and dtype != x.dtype):
        return NotImplemented
    if x.dim() == 0:  # nothing to sum: Inductor's copy of a complex 0-d tensor is the aten kernel's
        return NotImplemented
    dims = list(range(x.dim())) if dim is None or len(dim) == 0 else [d % x.dim() for d in dim]
    parts = torch.view_as_real(x.resolve_conj()).sum(dims, keepdim=keepdim)
    return torch.view_as_complex(parts.contiguous())


def complex_sum_all(x, *, dtype=None):
    return complex_sum(x, None, False, dtype=dtype)


def _normalized(parts, normalization: int, count: int):
    if normalization == NORM_BY_ROOT_N:
        return [p / math.sqrt(count) for p in parts]
    if normalization == NORM_BY_N:
        return [p / count for p in parts]
    return parts


def fft_r2c(x, dim, normalization, onesided):
    """A real input's forward DFT: the last transformed dim first, as a real matrix product with the first
    n // 2 + 1 columns of the table when onesided (the rest of the spectrum mirrors them), then c2c over
    the other dims."""
    if not _on_plate(x) or x.dtype != torch.float32 or any(x.shape[d] > MAX_DFT for d in dim):
        return NotImplemented
    last = dim[-1]
    n = x.shape[last]
    cos, sin = _dft_table(n, x.device)
    if onesided:
        cos, sin = cos[:, : n // 2 + 1], sin[:, : n // 2 + 1]
    a = x.to(torch.float64).movedim(last, -1)
    re, im = torch.matmul(a, cos).movedim(-1, last), (-torch.matmul(a, sin)).movedim(-1, last)
    for d in dim[:-1]:
        re, im = _dft_along(re, im, d, forward=True)
    re, im = _normalized([re, im], normalization, math.prod(x.shape[d] for d in dim))
    return _complex_laid_out(re, im, _eager_strides(aten._fft_r2c.default, x, dim, normalization, onesided))


def fft_c2r(x, dim, normalization, last_dim_size):
    """The inverse DFT of a onesided (Hermitian) spectrum: c2c over all transformed dims but the last, then
    the last as a real matrix product over its n // 2 + 1 entries, each but the first (and the middle one for
    an even n) counted twice for its mirror; their imaginary parts meet a zero sine, as in pocketfft."""
    if not _on_plate(x) or x.dtype != torch.complex64 or max([last_dim_size, *(x.shape[d] for d in dim)]) > MAX_DFT:
        return NotImplemented
    parts = torch.view_as_real(x).to(torch.float64)
    re, im = parts[..., 0], parts[..., 1]
    for d in dim[:-1]:
        re, im = _dft_along(re, im, d, forward=False)
    last = dim[-1]
    n = last_dim_size
    half = n // 2 + 1
    re, im = re.narrow(last, 0, min(half, re.shape[last])), im.narrow(last, 0, min(half, im.shape[last]))
    kept = re.shape[last]
    cos, sin = _dft_table(n, x.device)
    k = torch.arange(kept, device=x.device).unsqueeze(1)
    once = (k == 0) | ((k == n // 2) if n % 2 == 0 else (k < 0))
    weight = torch.where(once, 1.0, 2.0).to(torch.float64)
    cos, sin = cos[:kept] * weight, sin[:kept] * weight
    out = torch.matmul(re.movedim(last, -1), cos) - torch.matmul(im.movedim(last, -1), sin)
    out = out.movedim(-1, last)
    count = n * math.prod(x.shape[d] for d in dim[:-1])
    (out,) = _normalized([out], normalization, count)
    out = out.to(torch.float32)
    return _laid_out(out, _eager_strides(aten._fft_c2r.default, x, dim, normalization, last_dim_size))


def _bilinear_aa_filter(x):
    x = x.abs()
    return torch.where(x < 1.0, 1.0 - x, 0.0)


def _bicubic_aa_filter(x, a=-0.5):  # Keys' cubic with a = -0.5, as ATen's antialiased bicubic
    x = x.abs()
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return torch.where(x < 1.0, near, torch.where(x < 2.0, far, 0.0))


AA_FILTERS = {"bilinear": (_bilinear_aa_filter, 2), "bicubic": (_bicubic_aa_filter, 4)}  # filter, interp_size


def _aa_weights(mode: str, input_size: int, output_size: int, align_corners: bool, scale, device):
    """The (output_size, input_size) matrix of ATen's antialiased interpolation weights along one dim
    (UpSampleKernel.cpp, _compute_weights_aa): output i reads inputs [xmin, xmin + xsize) around
    center = scale (i + 0.5), each weighted by the filter at (j - center + 0.5) / max(scale, 1), the row
    normalized to sum 1; the filter's support widened by the scale when downsampling."""
    filter_fn, interp_size = AA_FILTERS[mode]
    if align_corners:
        scale = (input_size - 1) / (output_size - 1) if output_size > 1 else 0.0
    else:
        scale = 1.0 / scale if scale is not None and scale > 0 else input_size / output_size
    support = interp_size * 0.5 * scale if scale >= 1.0 else interp_size * 0.5
    invscale = 1.0 / scale if scale >= 1.0 else 1.0
    center = (torch.arange(output_size, dtype=torch.float64, device=device) + 0.5) * scale
    xmin = torch.clamp(torch.trunc(center - support + 0.5), min=0)
    xmax = torch.clamp(torch.trunc(center + support + 0.5), max=input_size)
    j = torch.arange(input_size, dtype=torch.float64, device=device)
    inside = (j >= xmin.unsqueeze(1)) & (j < xmax.unsqueeze(1))
    w = torch.where(inside, filter_fn((j - center.unsqueeze(1) + 0.5) * invscale), 0.0)
    total = w.sum(1, keepdim=True)
    return torch.where(total != 0, w / torch.where(total != 0, total, 1.0), w)


def _upsample_aa(mode: str):
    def upsample(x, output_size, align_corners, scales_h=None, scales_w=None):
        if not _on_plate(x) or x.dim() != 4 or not x.dtype.is_floating_point:
            return NotImplemented
        (h, w), (out_h, out_w) = x.shape[2:], output_size
        compute = torch.float64 if x.dtype == torch.float64 else torch.float32  # the op math type
        rows = _aa_weights(mode, h, out_h, align_corners, scales_h, x.device).to(compute)
        cols = _aa_weights(mode, w, out_w, align_corners, scales_w, x.device).to(compute)
        return torch.matmul(torch.matmul(rows, x.to(compute)), cols.t()).to(x.dtype)

    def backward(grad, output_size, input_size, align_corners, scales_h=None, scales_w=None):
        if not _on_plate(grad) or len(input_size) != 4 or not grad.dtype.is_floating_point:
            return NotImplemented
        (h, w), (out_h, out_w) = input_size[2:], output_size
        compute = torch.float64 if grad.dtype == torch.float64 else torch.float32
        rows = _aa_weights(mode, h, out_h, align_corners, scales_h, grad.device).to(compute)
        cols = _aa_weights(mode, w, out_w, align_corners, scales_w, grad.device).to(compute)
        return torch.matmul(torch.matmul(rows.t(), grad.to(compute)), cols).to(grad.dtype)

    return upsample, backward


upsample_bilinear2d_aa, upsample_bilinear2d_aa_backward = _upsample_aa("bilinear")
upsample_bicubic2d_aa, upsample_bicubic2d_aa_backward = _upsample_aa("bicubic")


def embedding_bag_per_sample_weights_backward(grad, weight, indices, offsets, offset2bag, mode, padding_idx=-1):
    """The gradient of embedding_bag's per_sample_weights (mode sum, the only one taking them): each index's
    bag gradient dotted with the weight row it read; 0 at padding_idx."""
    if not _on_plate(grad, weight, indices) or mode != 0:
        return NotImplemented
    dots = (grad.index_select(0, offset2bag) * weight.index_select(0, indices)).sum(1)
    return torch.where(indices == padding_idx, torch.zeros_like(dots), dots)


SEGMENT_REDUCTIONS = {  # segment_reduce's reduce: scatter_reduce's, the value of an empty segment
    "sum": ("sum", 0.0),
    "mean": ("sum", 0.0),
    "prod": ("prod", 1.0),
    "max": ("amax", -math.inf),
    "min": ("amin", math.inf),
}


def segment_reduce(data, reduce, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None):
    """segment_reduce as a scatter_reduce of the data onto its segments, each element's segment found by a
    searchsorted of its position in the segments' ends (1-D lengths or offsets; the elements outside every
    segment go to a slot dropped at the end). Each segment starts from ``initial`` or the reduction's identity
    (ATen's loop); a mean divides by the length, an empty one is ``initial`` or NaN; a max or min with a NaN
    in its segment is NaN."""
    if (
        not _on_plate(data)
        or reduce not in SEGMENT_REDUCTIONS
        or indices is not None
        or not data.dtype.is_floating_point
    ):
        return NotImplemented
    bounds = lengths if lengths is not None else offsets
    if bounds is None or bounds.dim() != 1:
        return NotImplemented
    op, identity = SEGMENT_REDUCTIONS[reduce]
    axis = axis % data.dim()
    values = data.movedim(axis, 0)
    if lengths is not None:
        ends = torch.cumsum(lengths, 0)
        starts, counts = ends - lengths, lengths
    else:
        starts, ends = offsets[:-1], offsets[1:]
        counts = ends - starts
    segments = ends.shape[0]
    position = torch.arange(values.shape[0], device=data.device, dtype=ends.dtype)
    segment = torch.searchsorted(ends, position, right=True)
    inside = (segment < segments) & (position >= starts.gather(0, segment.clamp(max=max(segments - 1, 0))))
    segment = torch.where(inside, segment, segments)
    start = identity if initial is None else float(initial)
    out = torch.full((segments + 1, *values.shape[1:]), start, dtype=data.dtype, device=data.device)
    index = segment.reshape(-1, *([1] * (values.dim() - 1))).expand_as(values)
    out = out.scatter_reduce(0, index, values, op, include_self=True)[:segments]
    if reduce in ("max", "min"):  # a NaN of the segment wins, as in ATen's loop (whatever scatter_reduce's atomics do)
        nans = torch.zeros(out.shape[0] + 1, *values.shape[1:], dtype=data.dtype, device=data.device)
        nans = nans.scatter_add(0, index, values.isnan().to(data.dtype))[:segments]
        out = torch.where(nans > 0, math.nan, out)
    if reduce == "mean":
        count = counts.reshape(-1, *([1] * (values.dim() - 1))).to(data.dtype)
        empty = math.nan if initial is None else float(initial)
        out = torch.where(count > 0, out / count.clamp(min=1), empty)
    return out.movedim(0, axis)


DECOMPOSITIONS = {
    aten._weight_int8pack_mm.default: weight_int8pack_mm,
    aten._embedding_bag.default: embedding_bag_on_plate,
    aten._embedding_bag_forward_only.default: embedding_bag_on_plate,
    aten._fft_c2c.default: fft_c2c,
    aten._fft_r2c.default: fft_r2c,
    aten._fft_c2r.default: fft_c2r,
    aten._conj.default: conj_resolved,
    aten.segment_reduce.default: segment_reduce,
    aten.mm.default: complex_product,
    aten.bmm.default: complex_product,
    aten.addmm.default: complex_product_added,
    aten.baddbmm.default: complex_product_added,
    aten.sum.dim_IntList: complex_sum,
    aten.sum.default: complex_sum_all,
    aten._embedding_bag_per_sample_weights_backward.default: embedding_bag_per_sample_weights_backward,
    aten._upsample_bilinear2d_aa.default: upsample_bilinear2d_aa,
    aten._upsample_bilinear2d_aa_backward.default: upsample_bilinear2d_aa_backward,
    aten._upsample_bicubic2d_aa.default: upsample_bicubic2d_aa,
    aten._upsample_bicubic2d_aa_backward.default: upsample_bicubic2d_aa_backward,
}


def _complex_constant_copy(original):
    """Inductor's lift_fresh_copy lowering; a complex constant on plate copied through its real view."""
    from torch._inductor.lowering import lowerings
    from torch._inductor.virtualized import V

    def lowering(x):
        device = x.get_device()
        value = None
        if x.get_dtype().is_complex and device is not None and device.type == "plate":
            try:
                value = V.graph.constants.get(x.get_name())
            except (AttributeError, NotImplementedError):  # not a buffer: a view of one
                value = None
        if value is None:
            return original(x)
        parts = V.graph.add_tensor_constant(torch.view_as_real(value).contiguous())
        return lowerings[aten.view_as_complex.default](lowerings[aten.clone.default](parts))

    lowering._plate_extern = True
    return lowering


@functools.cache
def register() -> None:
    """Put the decompositions in Inductor's table and the lowering in its lowerings (once; inductor_plate.register)."""
    from torch._inductor.lowering import lowerings

    decompositions.install(DECOMPOSITIONS, "_plate_extern")
    original = lowerings[aten.lift_fresh_copy.default]
    if not getattr(original, "_plate_extern", False):
        lowerings[aten.lift_fresh_copy.default] = _complex_constant_copy(original)
