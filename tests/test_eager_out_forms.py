"""The out= and in-place forms eager_ops/out_forms.py adapts (a table row's functional kernel, then ATen's
resize and copy): each named aten form on plate against the CPU's same form, with no host op; out='s
dtype rules, the resize warning, an in-place result type error and an out= aliasing its input as torch has them."""

from __future__ import annotations

import warnings

import pytest
import torch

import triton_plate_backend.torch_device  # noqa: F401 - registers the plate device
from triton_plate_backend.eager_ops import out_forms, table

aten = torch.ops.aten
G = torch.Generator().manual_seed(0)


def rand(*shape, dtype=torch.float32):
    return torch.randn(shape, generator=G).to(dtype)


def ints(high, *shape):
    return torch.randint(0, high, shape, generator=G)


MULTILABEL_TARGET = torch.tensor([[3, 0, -1, 1], [1, 2, 3, -1]])


def _pool_backward(x, forward, *params):
    """(grad_output, self, *params, indices) of a max pool's backward: the forward's indices."""
    out, indices = forward(x, *params)
    if forward in (aten.adaptive_max_pool2d, aten.adaptive_max_pool3d):
        return (rand(*out.shape), x, indices), {}
    return (rand(*out.shape), x, *params, indices), {}


# form -> (functional overload, its arguments on the CPU); the form takes the same arguments (and out=)
CASES = {
    "amax.out": ("amax.default", lambda: ((rand(4, 6), [1]), {})),
    "amin.out": ("amin.default", lambda: ((rand(4, 6), [0], True), {})),
    "argmax.out": ("argmax.default", lambda: ((rand(4, 6), 1), {})),
    "max.dim_max": ("max.dim", lambda: ((rand(4, 6), 1), {})),
    "min.dim_min": ("min.dim", lambda: ((rand(4, 6), 0, True), {})),
    "sum.out": ("sum.default", lambda: ((rand(4, 6),), {})),
    "tril.out": ("tril.default", lambda: ((rand(5, 5), -1), {})),
    "triu.out": ("triu.default", lambda: ((rand(5, 7), 2), {})),
    "flip.out": ("flip.default", lambda: ((rand(3, 4), [0, 1]), {})),
    "roll.out": ("roll.default", lambda: ((rand(3, 4), [1], [1]), {})),
    "round.decimals_out": ("round.decimals", lambda: ((rand(3, 4) * 100,), {"decimals": 1})),
    "round_.decimals": ("round.decimals", lambda: ((rand(3, 4) * 100,), {"decimals": -1})),
    "renorm.out": ("renorm.default", lambda: ((rand(3, 4), 2, 0, 1.0), {})),
    "renorm_.default": ("renorm.default", lambda: ((rand(3, 4), 1, 1, 0.5), {})),
    "relu.out": ("relu.default", lambda: ((rand(3, 4),), {})),
    "glu.out": ("glu.default", lambda: ((rand(3, 4), -1), {})),
    "mse_loss.out": ("mse_loss.default", lambda: ((rand(3, 4), rand(3, 4)), {})),
    "_softmax.out": ("_softmax.default", lambda: ((rand(3, 4), 1, False), {})),
    "_log_softmax.out": ("_log_softmax.default", lambda: ((rand(3, 4), 0, False), {})),
    "any.out": ("any.dim", lambda: ((rand(3, 4) > 1, 1), {})),
    "all.all_out": ("all.default", lambda: ((rand(3, 4) > -1,), {})),
    "count_nonzero.out": ("count_nonzero.default", lambda: ((rand(3, 4) > 0,), {})),
    "var.correction_out": ("var.correction", lambda: ((rand(3, 4), [1]), {"correction": 1})),
    "linalg_vector_norm.out": ("linalg_vector_norm.default", lambda: ((rand(3, 4), 2.0, [1]), {})),
    "sort.values": ("sort.default", lambda: ((rand(3, 5), 1), {})),
    "topk.values": ("topk.default", lambda: ((rand(3, 5), 2), {})),
    "kthvalue.values": ("kthvalue.default", lambda: ((rand(3, 5), 2), {})),
    "trace.out": ("trace.default", lambda: ((rand(4, 4),), {})),
    "linalg_cross.out": ("linalg_cross.default", lambda: ((rand(4, 3), rand(4, 3)), {})),
    "reflection_pad2d.out": ("reflection_pad2d.default", lambda: ((rand(1, 2, 4, 4), [1, 1, 2, 0]), {})),
    "upsample_nearest2d.out": ("upsample_nearest2d.default", lambda: ((rand(1, 2, 3, 3), [6, 5]), {})),
    "avg_pool2d.out": ("avg_pool2d.default", lambda: ((rand(1, 2, 6, 6), [2, 2]), {})),
    "_adaptive_avg_pool2d.out": ("_adaptive_avg_pool2d.default", lambda: ((rand(1, 2, 7, 5), [3, 2]), {})),
    "index_add.out": ("index_add.default", lambda: ((rand(5, 3), 0, ints(5, 4), rand(4, 3)), {})),
    "scatter.src_out": ("scatter.src", lambda: ((rand(5, 3), 0, ints(5, 2, 3), rand(2, 3)), {})),
    "isin.Tensor_Tensor_out": ("isin.Tensor_Tensor", lambda: ((ints(6, 10), ints(6, 3)), {})),
    "searchsorted.Tensor_out": ("searchsorted.Tensor", lambda: ((torch.arange(8.0), rand(3, 4) * 4), {})),
    "conj_physical_.default": ("conj_physical.default", lambda: ((rand(3, 4, dtype=torch.complex64),), {})),
    "conj_physical.out": ("conj_physical.default", lambda: ((rand(3, 4),), {})),
    "_softmax_backward_data.out": (
        "_softmax_backward_data.default",
        lambda: ((rand(3, 4), rand(3, 4).softmax(1), 1, torch.float32), {}),
    ),
    "_log_softmax_backward_data.out": (
        "_log_softmax_backward_data.default",
        lambda: ((rand(3, 4), rand(3, 4).log_softmax(1), 1, torch.float32), {}),
    ),
    "_upsample_nearest_exact1d.out": ("_upsample_nearest_exact1d.default", lambda: ((rand(1, 2, 5), [7]), {})),
    "_upsample_nearest_exact2d.out": ("_upsample_nearest_exact2d.default", lambda: ((rand(1, 2, 3, 5), [4, 7]), {})),
    "upsample_nearest1d.out": ("upsample_nearest1d.default", lambda: ((rand(1, 2, 5), [9]), {})),
    "upsample_nearest3d.out": ("upsample_nearest3d.default", lambda: ((rand(1, 1, 2, 3, 2), [3, 4, 4]), {})),
    "upsample_linear1d.out": ("upsample_linear1d.default", lambda: ((rand(1, 2, 5), [8], False), {})),
    "upsample_bilinear2d.out": ("upsample_bilinear2d.default", lambda: ((rand(1, 2, 3, 3), [5, 4], True), {})),
    "upsample_bicubic2d.out": ("upsample_bicubic2d.default", lambda: ((rand(1, 2, 4, 4), [6, 5], False), {})),
    "upsample_trilinear3d.out": ("upsample_trilinear3d.default", lambda: ((rand(1, 1, 2, 3, 2), [3, 4, 4], False), {})),
    "adaptive_max_pool2d.out": ("adaptive_max_pool2d.default", lambda: ((rand(1, 2, 7, 5), [3, 2]), {})),
    "max_pool2d_with_indices.out": ("max_pool2d_with_indices.default", lambda: ((rand(1, 2, 6, 6), [2, 2]), {})),
    "aminmax.out": ("aminmax.default", lambda: ((rand(4, 6),), {"dim": 1})),
    "median.dim_values": ("median.dim", lambda: ((rand(4, 5), 1), {})),
    "nanmedian.dim_values": ("nanmedian.dim", lambda: ((rand(4, 5), 0), {})),
    "sort.values_stable": ("sort.stable", lambda: ((rand(3, 5),), {"stable": True, "dim": 1})),
    "binary_cross_entropy.out": (
        "binary_cross_entropy.default",
        lambda: ((rand(3, 4).sigmoid(), rand(3, 4).sigmoid()), {}),
    ),
    "huber_loss.out": ("huber_loss.default", lambda: ((rand(3, 4), rand(3, 4)), {})),
    "smooth_l1_loss.out": ("smooth_l1_loss.default", lambda: ((rand(3, 4), rand(3, 4)), {})),
    "mse_loss_backward.grad_input": ("mse_loss_backward.default", lambda: ((rand(), rand(3, 4), rand(3, 4), 1), {})),
    "glu_backward.grad_input": ("glu_backward.default", lambda: ((rand(3, 2), rand(3, 4), 1), {})),
    "nll_loss_forward.output": ("nll_loss_forward.default", lambda: ((rand(5, 3), ints(3, 5), None, 1, -100), {})),
    "multi_margin_loss.out": ("multi_margin_loss.default", lambda: ((rand(5, 3), ints(3, 5)), {})),
    "im2col.out": ("im2col.default", lambda: ((rand(1, 2, 5, 5), [2, 2], [1, 1], [0, 0], [1, 1]), {})),
    "col2im.out": ("col2im.default", lambda: ((rand(1, 8, 16), [5, 5], [2, 2], [1, 1], [0, 0], [1, 1]), {})),
    "index.Tensor_out": ("index.Tensor", lambda: ((rand(5, 3), [ints(5, 4)]), {})),
    "isin.Tensor_Scalar_out": ("isin.Tensor_Scalar", lambda: ((ints(6, 10), 3), {})),
    "searchsorted.Scalar_out": ("searchsorted.Scalar", lambda: ((torch.arange(8.0), 2.5), {})),
    "scatter.value_out": ("scatter.value", lambda: ((rand(5, 3), 0, ints(5, 2, 3), 1.5), {})),
    "norm.out": ("norm.ScalarOpt_dim", lambda: ((rand(3, 4), 2, [1]), {})),
    "reflection_pad1d.out": ("reflection_pad1d.default", lambda: ((rand(1, 2, 5), [2, 1]), {})),
    "replication_pad1d.out": ("replication_pad1d.default", lambda: ((rand(1, 2, 5), [2, 1]), {})),
    "replication_pad2d.out": ("replication_pad2d.default", lambda: ((rand(1, 2, 4, 4), [1, 2, 0, 1]), {})),
    "reflection_pad3d.out": ("reflection_pad3d.default", lambda: ((rand(1, 1, 3, 3, 3), [1, 1, 1, 1, 1, 1]), {})),
    "replication_pad3d.out": ("replication_pad3d.default", lambda: ((rand(1, 1, 3, 3, 3), [1, 0, 1, 0, 2, 1]), {})),
    "reflection_pad1d_backward.grad_input": (
        "reflection_pad1d_backward.default",
        lambda: ((rand(1, 2, 8), rand(1, 2, 5), [2, 1]), {}),
    ),
    "reflection_pad2d_backward.grad_input": (
        "reflection_pad2d_backward.default",
        lambda: ((rand(1, 2, 6, 6), rand(1, 2, 4, 4), [1, 1, 2, 0]), {}),
    ),
    "reflection_pad3d_backward.grad_input": (
        "reflection_pad3d_backward.default",
        lambda: ((rand(1, 1, 5, 5, 5), rand(1, 1, 3, 3, 3), [1] * 6), {}),
    ),
    "replication_pad1d_backward.grad_input": (
        "replication_pad1d_backward.default",
        lambda: ((rand(1, 2, 8), rand(1, 2, 5), [2, 1]), {}),
    ),
    "replication_pad2d_backward.grad_input": (
        "replication_pad2d_backward.default",
        lambda: ((rand(1, 2, 5, 7), rand(1, 2, 4, 4), [1, 2, 0, 1]), {}),
    ),
    "replication_pad3d_backward.grad_input": (
        "replication_pad3d_backward.default",
        lambda: ((rand(1, 1, 6, 4, 4), rand(1, 1, 3, 3, 3), [1, 0, 1, 0, 2, 1]), {}),
    ),
    "upsample_nearest1d_backward.grad_input": (
        "upsample_nearest1d_backward.default",
        lambda: ((rand(1, 2, 9), [9], [1, 2, 5]), {}),
    ),
    "upsample_nearest3d_backward.grad_input": (
        "upsample_nearest3d_backward.default",
        lambda: ((rand(1, 1, 3, 4, 4), [3, 4, 4], [1, 1, 2, 3, 2]), {}),
    ),
    "upsample_linear1d_backward.grad_input": (
        "upsample_linear1d_backward.default",
        lambda: ((rand(1, 2, 8), [8], [1, 2, 5], False), {}),
    ),
    "upsample_trilinear3d_backward.grad_input": (
        "upsample_trilinear3d_backward.default",
        lambda: ((rand(1, 1, 3, 4, 4), [3, 4, 4], [1, 1, 2, 3, 2], False), {}),
    ),
    "upsample_bicubic2d_backward.grad_input": (
        "upsample_bicubic2d_backward.default",
        lambda: ((rand(1, 2, 6, 5), [6, 5], [1, 2, 4, 4], False), {}),
    ),
    "_upsample_nearest_exact1d_backward.grad_input": (
        "_upsample_nearest_exact1d_backward.default",
        lambda: ((rand(1, 2, 7), [7], [1, 2, 5]), {}),
    ),
    "_upsample_nearest_exact2d_backward.grad_input": (
        "_upsample_nearest_exact2d_backward.default",
        lambda: ((rand(1, 2, 4, 7), [4, 7], [1, 2, 3, 5]), {}),
    ),
    "_upsample_nearest_exact3d.out": (
        "_upsample_nearest_exact3d.default",
        lambda: ((rand(1, 1, 2, 3, 2), [3, 4, 4]), {}),
    ),
    "avg_pool2d_backward.grad_input": (
        "avg_pool2d_backward.default",
        lambda: ((rand(1, 2, 3, 3), rand(1, 2, 6, 6), [2, 2], [2, 2], [0, 0], False, True, None), {}),
    ),
    "smooth_l1_loss_backward.grad_input": (
        "smooth_l1_loss_backward.default",
        lambda: ((rand(), rand(3, 4), rand(3, 4), 1, 1.0), {}),
    ),
    "huber_loss_backward.out": ("huber_loss_backward.default", lambda: ((rand(), rand(3, 4), rand(3, 4), 1, 1.0), {})),
    "binary_cross_entropy_backward.grad_input": (
        "binary_cross_entropy_backward.default",
        lambda: ((rand(), rand(3, 4).sigmoid(), rand(3, 4).sigmoid(), None, 1), {}),
    ),
    "nll_loss_backward.grad_input": (
        "nll_loss_backward.default",
        lambda: ((rand(), rand(5, 3), ints(3, 5), None, 1, -100, torch.tensor(5.0)), {}),
    ),
    "isin.Scalar_Tensor_out": ("isin.Scalar_Tensor", lambda: ((3, ints(6, 4)), {})),
    "max_pool3d_with_indices.out": ("max_pool3d_with_indices.default", lambda: ((rand(1, 1, 4, 4, 4), [2, 2, 2]), {})),
    "adaptive_max_pool3d.out": ("adaptive_max_pool3d.default", lambda: ((rand(1, 1, 5, 4, 3), [2, 2, 2]), {})),
    "max_pool2d_with_indices_backward.grad_input": (
        "max_pool2d_with_indices_backward.default",
        lambda: _pool_backward(rand(1, 2, 6, 6), aten.max_pool2d_with_indices, [2, 2], [2, 2], [0, 0], [1, 1], False),
    ),
    "adaptive_max_pool2d_backward.grad_input": (
        "adaptive_max_pool2d_backward.default",
        lambda: _pool_backward(rand(1, 2, 7, 5), aten.adaptive_max_pool2d, [3, 2]),
    ),
    "norm.dtype_out": ("norm.ScalarOpt_dim_dtype", lambda: ((rand(3, 4), 2, [1], False), {"dtype": torch.float64})),
    "_upsample_nearest_exact3d_backward.grad_input": (
        "_upsample_nearest_exact3d_backward.default",
        lambda: ((rand(1, 1, 3, 4, 4), [3, 4, 4], [1, 1, 2, 3, 2]), {}),
    ),
    "avg_pool3d_backward.grad_input": (
        "avg_pool3d_backward.default",
        lambda: ((rand(1, 1, 2, 2, 2), rand(1, 1, 4, 4, 4), [2] * 3, [2] * 3, [0] * 3, False, True, None), {}),
    ),
    "max_pool3d_with_indices_backward.grad_input": (
        "max_pool3d_with_indices_backward.default",
        lambda: _pool_backward(
            rand(1, 1, 4, 4, 4), aten.max_pool3d_with_indices, [2] * 3, [2] * 3, [0] * 3, [1] * 3, False
        ),
    ),
    "adaptive_max_pool3d_backward.grad_input": (
        "adaptive_max_pool3d_backward.default",
        lambda: _pool_backward(rand(1, 1, 5, 4, 3), aten.adaptive_max_pool3d, [2, 2, 2]),
    ),
    "max_unpool3d.out": (
        "max_unpool3d.default",
        lambda: ((rand(1, 1, 1, 1, 2), torch.tensor([[[[[0, 7]]]]]), [2, 2, 2], [2, 2, 2], [0, 0, 0]), {}),
    ),
    "multi_margin_loss_backward.grad_input": (
        "multi_margin_loss_backward.default",
        lambda: ((rand(), rand(5, 3), ints(3, 5), 1, 1.0, None, 1), {}),
    ),
    "multilabel_margin_loss_forward.output": (
        "multilabel_margin_loss_forward.default",
        lambda: ((rand(2, 4), MULTILABEL_TARGET, 1), {}),
    ),
    "multilabel_margin_loss_backward.grad_input": (
        "multilabel_margin_loss_backward.default",
        lambda: (
            (
                rand(),
                x := rand(2, 4),
                MULTILABEL_TARGET,
                1,
                aten.multilabel_margin_loss_forward(x, MULTILABEL_TARGET, 1)[1],
            ),
            {},
        ),
    ),
    "max_unpool2d.out": (
        "max_unpool2d.default",
        lambda: ((rand(1, 1, 2, 2), torch.tensor([[[[0, 3], [9, 14]]]]), [4, 4]), {}),
    ),
    "native_layer_norm.out": ("native_layer_norm.default", lambda: ((rand(3, 4), [4], rand(4), rand(4), 1e-5), {})),
}


# forms whose CPU out= kernel differs from its functional form with an empty out (binary_cross_entropy.out of a mean
# loss returned nan here, binary_cross_entropy_backward.grad_input left grad_input empty): plate's result is compared
# with the functional CPU result
CPU_FORM_DIFFERS = {"binary_cross_entropy.out", "binary_cross_entropy_backward.grad_input"}


def _op(name):
    packet, _, overload = name.partition(".")
    return getattr(getattr(aten, packet), overload)


def _plate(value):
    if isinstance(value, torch.Tensor):
        return value.to("plate")
    return type(value)(_plate(v) for v in value) if isinstance(value, (list, tuple)) else value


def _run(form, args, kwargs, results):
    """The form over ``args``: in place (on a clone of self) or with out= tensors like ``results`` (empty ones)."""
    op = _op(form)
    outs = [a.name for a in op._schema.arguments if a.is_out]
    if not outs:
        self = args[0].clone()
        op(self, *args[1:], **kwargs)
        return [self]
    device = next(a.device for a in args if isinstance(a, torch.Tensor))
    written = [torch.empty(0, dtype=r.dtype, device=device) for r in results]
    op(*args, **kwargs, **dict(zip(outs, written)))
    return written


def test_every_case_is_an_adapted_form_or_a_composite():
    """A case's form is adapted (of its functional row) or ATen's composite over the functional op."""
    forms = out_forms.derived(table.EAGER_OPS, table.overloads())
    adapted = {form: forms[form] for form in CASES if form in forms}
    assert adapted == {form: CASES[form][0] for form in adapted}
    assert all(out_forms._composite(form) for form in CASES if form not in forms)
    assert out_forms.STUB_COMPOSITES <= forms.keys()
    assert len(adapted) >= 25


@pytest.mark.parametrize("form", sorted(CASES))
def test_form_on_plate_is_the_cpus(form):
    name, make = CASES[form]
    args, kwargs = make()
    results = _op(name)(*args, **kwargs)
    results = list(results) if isinstance(results, (tuple, list)) else [results]
    want = results if form in CPU_FORM_DIFFERS else _run(form, args, kwargs, results)
    torch.plate.reset_host_ops()
    got = _run(form, _plate(args), _plate(kwargs), results)
    assert torch.plate.host_ops() == {}
    for g, w in zip(got, want):
        assert g.device.type == "plate" and g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g.cpu(), w, equal_nan=True)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: torch.round(x * 100, decimals=1, out=torch.empty(3, 4, dtype=torch.float64, device=x.device)),
        lambda x: aten.sum.out(x, out=torch.empty(0, dtype=torch.float64, device=x.device)),
        lambda x: torch.tril(x, out=torch.empty(0, dtype=torch.float64, device=x.device)),
        lambda x: torch.amax(x, 0, out=torch.empty(4, dtype=torch.float64, device=x.device)),
        lambda x: torch.round(x * 100, decimals=1, out=torch.empty(3, 4, dtype=torch.long, device=x.device)),
        lambda x: x.long().round_(decimals=1),
        lambda x: x[0].renorm_(2, 0, 1.0),
    ],
    ids=["round_out_double", "sum_out_double", "tril_out_double", "amax_out_double", "round_out_long",
         "round_inplace_long", "renorm_inplace_1d"],
)  # fmt: skip
def test_an_out_of_another_type_or_a_bad_call_is_the_cpus(fn):
    """Another type than the result's: what the CPU does (a cast, its result type, or its error), on the host."""
    x = rand(3, 4)
    try:
        want = fn(x)
    except (RuntimeError, NotImplementedError) as cpu:
        with pytest.raises(type(cpu)) as plate:
            fn(x.to("plate"))
        assert str(plate.value) == str(cpu)
        return
    got = fn(x.to("plate"))
    assert got.dtype == want.dtype
    torch.testing.assert_close(got.cpu(), want)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.complex64])
def test_conj_physical_in_place_is_the_cpus(dtype):
    """conj_physical_ (its ATen composite calls a DispatchStub plate lacks): the conjugate, a real tensor unchanged."""
    x = rand(3, 4, dtype=dtype) if dtype != torch.int64 else ints(9, 3, 4)
    p = x.to("plate")
    torch.plate.reset_host_ops()
    p.conj_physical_()
    assert torch.plate.host_ops() == {}
    assert torch.equal(p.cpu(), x.clone().conj_physical_())


def test_a_wrong_shaped_out_is_resized_with_torchs_warning():
    x = rand(5, 5)
    out = torch.zeros(2, 3, device="plate")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.tril(x.to("plate"), out=out)
    assert any("was resized" in str(w.message) for w in caught)
    assert out.shape == (5, 5) and torch.equal(out.cpu(), x.tril())


def test_a_form_whose_functional_has_no_meta_kernel_resizes_with_torchs_warning():
    """multi_margin_loss_backward has no meta kernel: the result's shape and type come from plate's kernel."""
    args = (rand(), rand(5, 3), ints(3, 5), 1, 1.0, None, 1)
    want = aten.multi_margin_loss_backward(*args)
    out = torch.zeros(2, device="plate")
    torch.plate.reset_host_ops()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        aten.multi_margin_loss_backward.grad_input(*_plate(args), grad_input=out)
    assert torch.plate.host_ops() == {}
    assert any("was resized" in str(w.message) for w in caught)
    torch.testing.assert_close(out.cpu(), want)


def test_an_out_aliasing_its_input_reads_the_input_first():
    x = rand(4, 5)
    p = x.to("plate")
    torch.plate.reset_host_ops()
    aten.flip.out(p, [1], out=p)
    torch.amax(p, 1, keepdim=True, out=p[:, :1])
    assert torch.plate.host_ops() == {}
    want = x.flip(1)
    want[:, :1] = want.amax(1, keepdim=True)
    assert torch.equal(p.cpu(), want)
