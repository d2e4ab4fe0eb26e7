"""Convolutions on plate as GEMMs: im2col gathers and matrix products, forward and backward, every variant.

Inductor lowers a convolution to an extern aten kernel in the default mode, and torch 2.13 offers no Triton
template for a transposed one at all; on plate an extern kernel runs on the host. Instead, the plate
device's decompositions (registered in Inductor's decomposition table, declining for other devices)
rewrite ``aten.convolution`` and ``aten.convolution_backward`` on plate tensors before Inductor lowers
the graph:

- forward: pad; gather the input window of each kernel offset (one strided view, copied: im2col); one
  GEMM per group, ``weight[g] (O/G x C/G*K) @ cols[g] (C/G*K x N*L)``: mm, or bmm over the groups
  (grouped and depthwise convolutions alike); the bias added to the product;
- transposed: zeros inserted between input elements (stride), the padding turned into
  ``dilation * (k - 1) - padding`` (plus output_padding at the end), the weight flipped with its in/out
  channels swapped per group: then the forward above with stride 1;
- backward: the input gradient is the transposed convolution of the output gradient (the plain one for
  a transposed convolution), the weight gradient one GEMM per group of the output gradient with the
  im2col of the input, the bias gradient a sum.

The GEMMs then lower as every plate matrix product does (gemm_lowering.py); the gathers and pads are
Triton kernels. ``config.conv_as_gemm = False`` leaves convolutions to Inductor.
"""

from __future__ import annotations

import functools
import itertools
import math

import torch
from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols, guard_int
from torch.utils._sympy.functions import FloorDiv

from triton_plate_backend import cost

from . import config, decompositions, gemm_config, policy

aten = torch.ops.aten


def _on_plate(*tensors) -> bool:
    return config.conv_as_gemm and any(t is not None and t.device.type == "plate" for t in tensors)


def _static(values) -> bool:
    return all(isinstance(v, int) for v in values)


def _guarded_kernel(weight):
    """The kernel's spatial sizes ``weight.shape[2:]`` as ints, or None. With dynamic shapes and the weight a graph
    input (not a parameter), they are backed symbols: each is guarded to its value, as Inductor's own convolution
    lowering guards the whole weight size (``guard_int_seq``), so the GEMM form is traced for this kernel and a
    different one recompiles; the GEMM form needs them as ints (one strided view and one GEMM row per kernel
    offset). An unbacked size (data-dependent, no value to guard on) leaves the convolution to Inductor."""
    sizes = list(weight.shape[2:])
    if any(free_unbacked_symbols(s) for s in sizes):
        return None
    return [guard_int(s) for s in sizes]


def _pad_dims(x, pads):
    """Pad (or, with negative amounts, crop) spatial dims 2.. of ``x`` by ``pads[i] = (before, after)``."""
    if not any(lo or hi for lo, hi in pads):
        return x
    flat = [amount for lo, hi in reversed(pads) for amount in (lo, hi)]  # constant_pad_nd: last dim first
    return aten.constant_pad_nd(x, flat, 0.0)


def _insert_zeros(x, stride):
    """Between neighbours along each spatial dim, stride - 1 zeros (the input of a transposed conv)."""
    for i, s in enumerate(stride):
        if s == 1:
            continue
        dim = 2 + i
        size = x.shape[dim]
        spread = aten.constant_pad_nd(x.unsqueeze(dim + 1), [0, 0] * (x.dim() - dim - 1) + [0, s - 1], 0.0)
        shape = list(x.shape)
        shape[dim] = size * s
        x = spread.reshape(shape).narrow(dim, 0, (size - 1) * s + 1)
    return x


def _out_size(spatial, kernel, stride, dilation) -> list[int]:
    """The output's spatial size of a convolution over a (padded) input of size ``spatial``."""
    return [(spatial[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(len(kernel))]


def windows(x, kernel, stride, pads, dilation):
    """(N, C, *S) -> ((N, C, *kernel, *out), out): the input window of each kernel offset, one strided view of the
    padded input."""
    x = _pad_dims(x, pads).contiguous()
    shape = list(x.shape)
    spatial = shape[2:]
    out = _out_size(spatial, kernel, stride, dilation)
    strides = [math.prod(shape[i + 1 :]) for i in range(len(shape))]  # contiguous
    inner = strides[2:]
    view = aten.as_strided(
        x,
        [*shape[:2], *kernel, *out],
        [
            *strides[:2],
            *(inner[i] * dilation[i] for i in range(len(kernel))),
            *(inner[i] * stride[i] for i in range(len(kernel))),
        ],
        x.storage_offset(),
    )
    return view, out


def _grouped_cols(cols, groups):
    """(N, C, K, *out) -> (G, C/G*K, N*L): the right-hand matrix of each group's GEMM (every size named: a -1
    cannot be inferred when the batch is empty)."""
    n, c, k = cols.shape[:3]
    length = math.prod(cols.shape[3:])
    per_group = c // groups * k
    return cols.reshape(n, groups, per_group, length).permute(1, 2, 0, 3).reshape(groups, per_group, n * length)


def _floor_divided(size) -> bool:
    """A symbolic size with a floor division in it (a strided convolution's output size, ``(s - 1) // 2 + 1``)."""
    return isinstance(size, torch.SymInt) and size.node.expr.has(FloorDiv)


def gemm_cols(x, kernel, stride, pads, dilation, groups):
    """(N, C, *S) -> ((G, C/G*K, N*L), out): the right-hand matrix of each group's GEMM.

    Static sizes: im2col's gather reshaped and permuted (_grouped_cols); Inductor fuses the two copies this takes into
    one, and that one into the GEMM template as its prologue. Under dynamic shapes it does neither where an output
    size is a floor division (a strided convolution's, and every layer's after one): its view of the permuted copy
    as the matrix is an index computation, which the GEMM's operand realizes as a second full copy, and no prologue
    fuses (resnet18, dynamic=True: two pointwise kernels per convolution). There the windows' view is permuted to
    (C, *kernel, N, *out) and copied once (contiguous), and the matrix is a strided view of that copy (as_strided,
    which Inductor lowers to a view of the realized buffer, as _images does): one gather kernel, no copy. Symbolic
    sizes without a floor division keep the first form: its copy fuses into the template, whose loads then index 4
    dims rather than the 6 of the permuted copy (a 2x16x8x8 3x3 convolution: 16.6 against 19.0 us modeled)."""
    view, out = windows(x, kernel, stride, pads, dilation)
    if not any(_floor_divided(size) for size in out):
        cols = view.reshape(*x.shape[:2], math.prod(kernel), *out)
        return _grouped_cols(cols, groups), out
    k = len(kernel)
    gathered = view.permute([1, *range(2, 2 + k), 0, *range(2 + k, 2 + 2 * k)]).contiguous()
    per_group = x.shape[1] // groups * math.prod(kernel)
    columns = x.shape[0] * math.prod(out)
    return aten.as_strided(
        gathered, [groups, per_group, columns], [per_group * columns, columns, 1], gathered.storage_offset()
    ), out


def _per_group_mm(a, b):
    """a (G, M, K) @ b (G, K, N): mm when G == 1, else bmm."""
    if a.shape[0] == 1:
        return aten.mm(a[0], b[0]).unsqueeze(0)
    return aten.bmm(a, b)


def _images(product, n, out_channels, out):
    """The GEMMs' product (G, O/G, N*L) back into images (N, O, *out): one strided view of it (contiguous). A reshape
    would split L = prod(out) into the spatial dims by floor division, which for equal symbolic sizes (a square
    image under dynamic shapes) leaves ``s**2 // s`` unsimplified, and Inductor's range analysis of that fails
    (ValueRangeError) where a later kernel asks for a stride order."""
    product = product.contiguous()
    length = math.prod(out)
    inner = [math.prod(out[i + 1 :]) for i in range(len(out))]
    # one image: the batch dim's stride is free; eager's contiguous one (O * L), since Inductor keeps a graph
    # output's strides, size-1 dims' too, and test_torchinductor_opinfo compares them exactly
    batch = out_channels * length if isinstance(n, int) and n == 1 else length
    return aten.as_strided(product, [n, out_channels, *out], [batch, n * length, *inner], product.storage_offset())


MAX_VECTOR_TERMS = 64  # multiply-adds per output of the vector form: one load each in a single kernel


def on_vector_unit(x, weight, groups, out) -> bool:
    """Is this convolution cheaper as multiply-adds on the vector unit than as per-group GEMMs on the matrix unit?

    A group's GEMM is (O/G x C/G*k) @ (C/G*k x N*L): the matrix unit pads O/G and C/G*k up to its tile, so a
    depthwise convolution (O/G = C/G = 1, 9 or 25 useful products of a 32x32 pass) wastes almost all of it, and
    each group is a launch's program of its own. The vector form does only the useful multiply-adds, every output
    element in one lane. Both are the cost model's cycles for the whole convolution (cost.mma_cycles per group,
    cost.vector_cycles of a multiply and an add per term). The vector form's loads are not in that sum: each term
    loads a shifted window (a DMA run per output row) and the weight broadcast per element, and with several input
    channels per group they outweigh the matrix unit's padding (2x32x8x8 input, 4 channels per group, 3x3:
    46.1 us as multiply-adds against 31.0 us as GEMMs), so only a group of one input channel (depthwise, with any
    channel multiplier) qualifies (2x64x16x16 depthwise 3x3: 102.6 against 188.9 us)."""
    out_channels, c_group, kernel = weight.shape[0], weight.shape[1], list(weight.shape[2:])
    terms = c_group * math.prod(kernel)
    if groups == 1 or c_group != 1 or terms > MAX_VECTOR_TERMS or not _static([*x.shape, *out]):
        return False
    machine = policy.machine()
    dtype, itemsize = gemm_config.DTYPES.get(str(x.dtype).removeprefix("torch."), ("f32", 4))
    columns = x.shape[0] * math.prod(out)
    matrix = groups * cost.mma_cycles(machine, out_channels // groups, columns, terms, dtype)
    vector = 2 * terms * cost.vector_cycles(machine, out_channels * columns, itemsize)
    return vector < matrix


def conv_on_vector_unit(x, weight, bias, stride, pads, dilation, groups):
    """A grouped convolution as a sum over the window (and the group's input channels) of a weight times a shifted
    view of the padded input: one pointwise kernel, no im2col buffer, no GEMM (on_vector_unit says when)."""
    n, out_channels, c_group, kernel = x.shape[0], weight.shape[0], weight.shape[1], list(weight.shape[2:])
    view, out = windows(x, kernel, stride, pads, dilation)
    per_group = out_channels // groups
    # (N, G, 1, C/G, *kernel, *out) against (1, G, O/G, C/G, *kernel, 1...): each term is (N, G, O/G, *out)
    view = view.reshape(n, groups, 1, c_group, *kernel, *out)
    w = weight.reshape(1, groups, per_group, c_group, *kernel, *([1] * len(out)))
    y = None
    for index in itertools.product(range(c_group), *(range(k) for k in kernel)):
        term = view[(slice(None),) * 3 + index] * w[(slice(None),) * 3 + index]
        y = term if y is None else y + term
    y = y.reshape(n, out_channels, *out)
    if bias is not None:
        y = y + bias.reshape(1, out_channels, *([1] * len(out)))
    return y.contiguous()


def conv_as_gemm(x, weight, bias, stride, pads, dilation, groups):
    """A plain convolution with explicit (before, after) padding per spatial dim, as GEMMs (or, for a grouped
    convolution whose groups are too small for the matrix unit, multiply-adds on the vector unit)."""
    n, out_channels, kernel = x.shape[0], weight.shape[0], list(weight.shape[2:])
    spatial = [x.shape[2 + i] + lo + hi for i, (lo, hi) in enumerate(pads)]
    out = _out_size(spatial, kernel, stride, dilation)
    if on_vector_unit(x, weight, groups, out):
        return conv_on_vector_unit(x, weight, bias, stride, pads, dilation, groups)
    cols, out = gemm_cols(x, kernel, stride, pads, dilation, groups)
    per_group = out_channels // groups
    product = _per_group_mm(weight.reshape(groups, per_group, math.prod(weight.shape[1:])), cols)
    y = _images(product, n, out_channels, out)
    if bias is not None:
        y = y + bias.reshape(1, out_channels, *([1] * len(out)))
    return y.contiguous()


def _transposed_weight(weight, groups):
    """(C_in, C_out/G, *k) of a transposed conv -> (C_out, C_in/G, *k) of the plain conv it equals, flipped."""
    c_in, per_group, kernel = weight.shape[0], weight.shape[1], list(weight.shape[2:])
    swapped = weight.reshape(groups, c_in // groups, per_group, *kernel).transpose(1, 2)
    return swapped.reshape(groups * per_group, c_in // groups, *kernel).flip(list(range(2, 2 + len(kernel))))


def conv_transpose_as_gemm(x, weight, bias, stride, padding, output_padding, dilation, groups):
    kernel = list(weight.shape[2:])
    reach = [dilation[i] * (kernel[i] - 1) for i in range(len(kernel))]
    pads = [(reach[i] - padding[i], reach[i] - padding[i] + output_padding[i]) for i in range(len(kernel))]
    ones = [1] * len(kernel)
    return conv_as_gemm(
        _insert_zeros(x, stride), _transposed_weight(weight, groups), bias, ones, pads, dilation, groups
    )


def weight_grad(x, grad_out, kernel, stride, pads, dilation, groups):
    """d(loss)/d(weight) of y = conv(x, w): per group, grad_out (O/G x N*L) @ cols(x)^T; (O, C/G, *kernel)."""
    cols, _ = gemm_cols(x, kernel, stride, pads, dilation, groups)
    n, out_channels = grad_out.shape[:2]
    length = math.prod(grad_out.shape[2:])
    per_group = out_channels // groups
    g = grad_out.reshape(n, groups, per_group, length).permute(1, 2, 0, 3).reshape(groups, per_group, n * length)
    return _per_group_mm(g, cols.transpose(1, 2)).reshape(out_channels, x.shape[1] // groups, *kernel)


def _pads_onto(x, size, kernel, stride, padding, dilation) -> list[tuple[int, int]]:
    """(before, after) padding of each spatial dim of ``x`` whose convolution windows number exactly ``size``: the
    transposed convolution's gradients run a plain convolution over its output gradient, whose extent
    output_padding may have grown by more than a stride (allowed when below the dilation); a symmetric padding would
    give that many more windows than the transposed convolution's input has, so the end is cropped (or padded) to
    the last window that input reaches."""
    return [
        (padding[i], (size[i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1 - x.shape[2 + i] - padding[i])
        for i in range(len(kernel))
    ]


def _n(values, dims) -> list:
    values = list(values)
    return values * dims if len(values) == 1 else values


# ---- the decompositions ------------------------------------------------------------------------------------
def convolution(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    if not _on_plate(x, weight) or _guarded_kernel(weight) is None:
        return NotImplemented
    dims = weight.dim() - 2
    stride, padding, dilation = _n(stride, dims), _n(padding, dims), _n(dilation, dims)
    if transposed:
        output_padding = _n(output_padding, dims)
        return conv_transpose_as_gemm(x, weight, bias, stride, padding, output_padding, dilation, groups)
    return conv_as_gemm(x, weight, bias, stride, [(p, p) for p in padding], dilation, groups)


def convolution_backward(
    grad_out, x, weight, bias_sizes, stride, padding, dilation, transposed, output_padding, groups, output_mask
):
    if not _on_plate(grad_out, x, weight):
        return NotImplemented
    kernel = _guarded_kernel(weight)
    if kernel is None:
        return NotImplemented
    dims = weight.dim() - 2
    stride, padding, dilation = _n(stride, dims), _n(padding, dims), _n(dilation, dims)
    grad_x = grad_w = grad_b = None
    symmetric = [(p, p) for p in padding]
    onto_x = _pads_onto(grad_out, x.shape[2:], kernel, stride, padding, dilation) if transposed else symmetric
    if output_mask[0]:
        if transposed:
            grad_x = conv_as_gemm(grad_out, weight, None, stride, onto_x, dilation, groups)
        else:
            output_padding = [  # what the forward's floor division dropped
                x.shape[2 + i]
                - ((grad_out.shape[2 + i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (kernel[i] - 1) + 1)
                for i in range(dims)
            ]
            grad_x = conv_transpose_as_gemm(grad_out, weight, None, stride, padding, output_padding, dilation, groups)
    if output_mask[1]:
        if transposed:
            grad_w = weight_grad(grad_out, x, kernel, stride, onto_x, dilation, groups)
        else:
            grad_w = weight_grad(x, grad_out, kernel, stride, symmetric, dilation, groups)
    if output_mask[2]:
        grad_b = aten.sum(grad_out, [0, *range(2, grad_out.dim())])
    return grad_x, grad_w, grad_b


DECOMPOSITIONS = {aten.convolution.default: convolution, aten.convolution_backward.default: convolution_backward}


@functools.cache
def register() -> None:
    """Put the decompositions in Inductor's table (once; inductor_plate.register)."""
    decompositions.install(DECOMPOSITIONS, "_plate_conv")
