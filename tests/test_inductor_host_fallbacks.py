"""Ops that ran on the host inside compiled functions now run on plate: each case compiles with zero host
fallbacks (inductor_plate.host_fallbacks()) and matches a CPU reference.

- extern_decomps.py: _weight_int8pack_mm, _embedding_bag, complex64 _fft_c2c, _fft_r2c and _fft_c2r,
  complex mm and bmm, segment_reduce, embedding_bag's per-sample-weights gradient, the antialiased upsamplings
  and their backward decomposed into plate kernels;
- eager_ops: _pdist_forward and its backward, addbmm, multinomial, index_reduce (Inductor's fallback calls their plate
  kernels);
- eager_ops: div in every rounding mode (a graph break's eager code runs it as a plate kernel);
- eager_ops: convolutions as im2col and plate matmuls (the eager reference Inductor's tests compare with)."""

from __future__ import annotations

import pytest
import torch
from torch.testing._internal.common_quantization import _dynamically_quantize_per_channel

import inductor_plate

aten = torch.ops.aten


def on_plate(values):
    return [v.to("plate") if isinstance(v, torch.Tensor) else v for v in values]


def compiled_without_host_ops(fn, *args, **compile_options):
    """``fn`` compiled and run on plate copies of ``args``; asserts nothing ran on the host inside it."""
    torch._dynamo.reset()
    inductor_plate.reset_host_fallbacks()
    out = torch.compile(fn, **compile_options)(*on_plate(args))
    assert inductor_plate.host_fallbacks() == {}
    return out


def cpu(values):
    return [v.cpu() for v in values] if isinstance(values, (tuple, list)) else values.cpu()


def test_int8_weight_only_mm_is_a_plate_gemm():
    torch.manual_seed(0)
    a, c = torch.rand(32, 32, dtype=torch.bfloat16), torch.rand(32, 48, dtype=torch.bfloat16)
    w_int8, scales, _ = _dynamically_quantize_per_channel(
        torch.rand(48, 32, dtype=torch.bfloat16), -128, 127, torch.int8
    )

    def fn(a, w, s, c):
        return torch._weight_int8pack_mm(a, w, s) + c

    got = cpu(compiled_without_host_ops(fn, a, w_int8, scales, c))
    want = fn(a.float(), w_int8, scales.float(), c.float())  # the CPU kernel in float32
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.float(), want, rtol=1.6e-2, atol=1e-5)  # bf16's tolerance


EMBEDDING_BAGS = {  # mode, per_sample_weights, padding_idx
    "sum": (0, False, -1),
    "sum weighted": (0, True, -1),
    "mean padded": (1, False, 3),
    "max": (2, False, -1),
}


@pytest.mark.parametrize("case", sorted(EMBEDDING_BAGS))
def test_embedding_bag_compiles_to_plate_kernels_and_matches_eager(case):
    mode, weighted, padding_idx = EMBEDDING_BAGS[case]
    torch.manual_seed(0)
    weight, indices = torch.randn(10, 4), torch.tensor([3, 1, 3, 7, 0, 9, 3, 2, 5])
    offsets = torch.tensor([0, 2, 2, 6])  # an empty bag among them
    psw = torch.rand(9) if weighted else None

    def fn(w, i, o, p):
        return aten._embedding_bag(w, i, o, False, mode, False, p, False, padding_idx)

    got = cpu(compiled_without_host_ops(fn, weight, indices, offsets, psw))
    eager = cpu(fn(*on_plate((weight, indices, offsets, psw))))
    want = fn(weight, indices, offsets, psw)  # the CPU kernel
    torch.testing.assert_close(got[0], want[0])
    assert [t.shape for t in got] == [t.shape for t in eager]  # CUDA's shapes (the meta kernel's) both ways
    for g, e in zip(got, eager):
        torch.testing.assert_close(g, e)
    assert got[1].tolist() == [0, 0, 2, 2, 2, 2, 3, 3, 3]  # offset2bag: the bag of each index
    if mode == 2:  # max_indices: where the max came from, -1 for the empty bag
        assert torch.equal(got[3][[0, 2, 3]], want[3][[0, 2, 3]]) and got[3][1].tolist() == [-1] * 4


def test_fftn_of_a_real_input_is_float64_dft_products():
    torch.manual_seed(0)
    x = torch.randn(16, 16, 16)
    got = cpu(compiled_without_host_ops(lambda x: torch.fft.fftn(x), x))
    assert got.dtype == torch.complex64
    torch.testing.assert_close(got, torch.fft.fftn(x.double()).to(torch.complex64), rtol=1e-6, atol=1e-5)
    real = cpu(compiled_without_host_ops(lambda x: torch.fft.fftn(x).real, x))
    # against float64's: the CPU's float32 FFT is up to 2e-5 off it here (the plate result is its rounding)
    torch.testing.assert_close(real, torch.fft.fftn(x.double()).real.float(), rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_inverse_fft_of_a_complex_input_with_each_norm(norm):
    torch.manual_seed(0)
    x = torch.randn(6, 10, dtype=torch.complex64)

    def fn(x):
        return torch.fft.ifftn(x, dim=(0, 1), norm=norm)

    got = cpu(compiled_without_host_ops(fn, x))
    torch.testing.assert_close(got, fn(x.to(torch.complex128)).to(torch.complex64), rtol=1e-6, atol=1e-6)


REAL_FFTS = {  # name: (function, input shape, real input)
    "rfft even": (lambda x: torch.fft.rfft(x), (3, 16), True),
    "rfft odd ortho": (lambda x: torch.fft.rfft(x, norm="ortho"), (3, 15), True),
    "rfft2 forward": (lambda x: torch.fft.rfft2(x, norm="forward"), (2, 6, 9), True),
    "irfft even": (lambda x: torch.fft.irfft(x), (3, 9), False),
    "irfft odd n": (lambda x: torch.fft.irfft(x, n=17), (3, 9), False),
    "irfft padded n ortho": (lambda x: torch.fft.irfft(x, n=24, norm="ortho"), (2, 9), False),
    "irfftn forward": (lambda x: torch.fft.irfftn(x, dim=(0, 2), norm="forward"), (5, 2, 7), False),
    "hfft": (lambda x: torch.fft.hfft(x, n=12), (4, 7), False),
    "rfft then irfft": (lambda x: torch.fft.irfft(torch.fft.rfft(x) * 0.5, n=20), (2, 20), True),
}


@pytest.mark.parametrize("case", sorted(REAL_FFTS))
def test_real_ffts_are_float64_dft_products(case):
    """_fft_r2c / _fft_c2r (rfft, irfft, their n-dim forms, hfft) decomposed like _fft_c2c: the onesided half
    of the table for the last dim; irfft's Hermitian mirror counts each inner entry twice."""
    fn, shape, real = REAL_FFTS[case]
    torch.manual_seed(0)
    x = torch.randn(shape) if real else torch.randn(shape, dtype=torch.complex64)
    got = cpu(compiled_without_host_ops(fn, x))
    want = fn(x.double() if real else x.to(torch.complex128))
    assert got.dtype == (torch.complex64 if want.is_complex() else torch.float32)
    torch.testing.assert_close(got, want.to(got.dtype), rtol=1e-5, atol=1e-5)


FFT_LAYOUTS = {  # eager's strides are the CPU kernel's (ATen's _exec_fft: batch dims ordered by the input's strides)
    "rfft middle dim": (lambda x: torch.fft.rfft(x, dim=1), (5, 12, 7)),
    "fft2 outer dims": (lambda x: torch.fft.fft2(x, dim=(0, 2)), (5, 6, 7)),
    "hfftn": (lambda x: torch.fft.hfftn(x, dim=(0, 1)), (5, 6, 7)),
}


@pytest.mark.parametrize("case", sorted(FFT_LAYOUTS))
def test_fft_decompositions_keep_the_eager_strides(case):
    """The DFT decompositions return the layout eager plate returns (test_torchinductor_opinfo compares strides
    exactly: fft.fft2, fft.rfft, fft.ihfft and fft.hfftn failed on it), values as before."""
    fn, shape = FFT_LAYOUTS[case]
    torch.manual_seed(0)
    x = torch.randn(shape)
    got = compiled_without_host_ops(fn, x)
    assert got.stride() == fn(x).stride() == fn(x.to("plate")).stride()
    want = fn(x.double())
    torch.testing.assert_close(cpu(got), want.to(got.dtype), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("p", [0.0, 0.5, 1.0, 1.5, 2.0, 3.5, float("inf")])
def test_pdist_and_its_gradient_are_pairwise_differences_on_plate(p):
    torch.manual_seed(0)
    x = torch.randn(9, 5)
    x[3] = x[1] + 1e-4  # a near pair: the reference decomposition's |a|^2 + |b|^2 - 2ab cancels there
    x[6, :2] = x[2, :2]  # equal features: p = 0 counts the others
    got = cpu(compiled_without_host_ops(lambda x: torch.pdist(x, p), x))
    torch.testing.assert_close(got, torch.pdist(x.double(), p).float(), rtol=1e-5, atol=1e-6)
    grad = torch.randn(got.shape)
    x_plate = x.to("plate").requires_grad_()
    torch._dynamo.reset()
    inductor_plate.reset_host_fallbacks()
    torch.compile(lambda x: torch.pdist(x, p))(x_plate).backward(grad.to("plate"))
    assert inductor_plate.host_fallbacks() == {}
    x_ref = x.double().requires_grad_()
    torch.pdist(x_ref, p).backward(grad.double())
    torch.testing.assert_close(x_plate.grad.cpu(), x_ref.grad.float(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False], ids=["with_self", "without_self"])
def test_index_reduce_is_a_scatter_reduce_on_plate(reduce, include_self):
    torch.manual_seed(0)
    x, source = torch.randn(4, 6, 3), torch.randn(4, 5, 3)
    index = torch.tensor([0, 4, 4, 1, 0])

    def fn(x, index, source):
        return x.index_reduce(1, index, source, reduce, include_self=include_self)

    got = cpu(compiled_without_host_ops(fn, x, index, source))
    torch.testing.assert_close(got, fn(x.double(), index, source.double()).float(), rtol=1e-5, atol=1e-6)


ANTIALIASED = {  # name: interpolate's size or scale_factor options, align_corners
    "down": ({"size": (7, 5)}, False),
    "up aligned": ({"size": (30, 17)}, True),
    "scale factor": ({"scale_factor": 0.6}, False),
}


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("case", sorted(ANTIALIASED))
def test_antialiased_interpolate_and_its_gradient_on_plate(mode, case):
    """_upsample_{bilinear,bicubic}2d_aa and their backward: ATen's antialiased weights as a matrix per dim."""
    options, align_corners = ANTIALIASED[case]
    torch.manual_seed(0)
    x = torch.randn(2, 3, 16, 12)

    def fn(x):
        return torch.nn.functional.interpolate(x, mode=mode, antialias=True, align_corners=align_corners, **options)

    x_plate = x.to("plate").requires_grad_()
    torch._dynamo.reset()
    inductor_plate.reset_host_fallbacks()
    got = torch.compile(fn)(x_plate)
    grad = torch.randn(got.shape)
    got.backward(grad.to("plate"))
    assert inductor_plate.host_fallbacks() == {}
    x_ref = x.double().requires_grad_()
    want = fn(x_ref)
    want.backward(grad.double())
    torch.testing.assert_close(got.cpu(), want.float(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(x_plate.grad.cpu(), x_ref.grad.float(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("beta, alpha", [(1, 1), (0.5, 2.0), (0, 1.5)])
def test_addbmm_is_one_gemm_on_plate(beta, alpha):
    torch.manual_seed(0)
    x, batch1, batch2 = torch.randn(3, 4), torch.randn(5, 3, 6), torch.randn(5, 6, 4)
    if beta == 0:
        x[0, 0] = float("nan")  # ignored when beta is 0

    def fn(x, batch1, batch2):
        return torch.addbmm(x, batch1, batch2, beta=beta, alpha=alpha)

    got = cpu(compiled_without_host_ops(fn, x, batch1, batch2))
    torch.testing.assert_close(got, fn(x.double(), batch1.double(), batch2.double()).float(), rtol=1e-4, atol=1e-4)


COMPLEX_PRODUCTS = {
    "mm": (lambda a, b: a @ b, (5, 6), (6, 4)),
    "bmm einsum": (lambda a, b: torch.einsum("bix,iox->box", a, b), (2, 3, 5), (3, 4, 5)),
    "conjugate transpose": (lambda a, b: a @ b.mH, (5, 6), (4, 6)),
    "matmul broadcast": (lambda a, b: torch.matmul(a, b), (2, 5, 6), (6, 3)),
}


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
@pytest.mark.parametrize("case", sorted(COMPLEX_PRODUCTS))
def test_complex_products_are_one_real_gemm_on_plate(case, dtype):
    """mm and bmm of complex tensors (and the conjugate views of a gradient): [re a | im a] @ [[re b, im b],
    [-im b, re b]] on plate, against the complex128 product."""
    fn, a_shape, b_shape = COMPLEX_PRODUCTS[case]
    torch.manual_seed(0)
    a, b = torch.randn(a_shape, dtype=dtype), torch.randn(b_shape, dtype=dtype)
    got = cpu(compiled_without_host_ops(fn, a, b))
    want = fn(a.to(torch.complex128), b.to(torch.complex128)).to(dtype)
    tol = 1e-5 if dtype == torch.complex64 else 1e-12
    torch.testing.assert_close(got, want, rtol=tol, atol=tol)


COMPLEX_REDUCTIONS = {
    "linear with bias": (lambda i, a, b: torch.nn.functional.linear(a, b.mT, i), (4,), (5, 6), (6, 4)),
    "addmm alpha beta": (lambda i, a, b: torch.addmm(i, a, b, beta=0.5, alpha=2.0), (5, 4), (5, 6), (6, 4)),
    "baddbmm beta 0": (lambda i, a, b: torch.baddbmm(i, a, b, beta=0), (2, 5, 4), (2, 5, 6), (2, 6, 4)),
    "mv": (lambda i, a, b: a @ b[:, 0] + i, (5,), (5, 6), (6, 4)),
    "sums": (lambda i, a, b: (a.sum(), a.sum(1), a.conj().sum((0, 1), keepdim=True), i.sum(0)), (3, 2), (5, 6), (6,)),
}


@pytest.mark.parametrize("case", sorted(COMPLEX_REDUCTIONS))
def test_complex_addmm_baddbmm_and_sums_run_on_plate(case):
    """addmm/baddbmm of complex tensors (beta * input + alpha * the real GEMM of the parts; beta 0 reads no input)
    and complex sums (mv's decomposition among them: one real reduction of the parts)."""
    fn, *shapes = COMPLEX_REDUCTIONS[case]
    torch.manual_seed(0)
    i, a, b = (torch.randn(shape, dtype=torch.complex64) for shape in shapes)
    i.view(-1)[0] = complex(float("nan"), 0.0) if case == "baddbmm beta 0" else i.view(-1)[0]
    got = cpu(compiled_without_host_ops(fn, i, a, b))
    want = fn(*(t.to(torch.complex128) for t in (i, a, b)))
    want = [w.to(torch.complex64) for w in want] if isinstance(want, tuple) else want.to(torch.complex64)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_a_spectral_layer_trains_without_host_ops():
    """A Fourier layer (rfft, a complex einsum with complex weights, irfft): forward and both gradients on plate."""
    torch.manual_seed(0)
    x, w = torch.randn(2, 3, 16), torch.randn(3, 4, 5, dtype=torch.complex64)

    def layer(x, w):
        modes = torch.einsum("bix,iox->box", torch.fft.rfft(x)[..., :5], w)
        return torch.fft.irfft(modes, n=16).square().sum()

    x_ref, w_ref = x.clone().requires_grad_(), w.clone().requires_grad_()
    layer(x_ref, w_ref).backward()
    x_plate, w_plate = x.to("plate").requires_grad_(), w.to("plate").requires_grad_()
    torch._dynamo.reset()
    inductor_plate.reset_host_fallbacks()
    loss = torch.compile(layer)(x_plate, w_plate)
    loss.backward()
    assert inductor_plate.host_fallbacks() == {}
    torch.testing.assert_close(loss.cpu(), layer(x, w), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(x_plate.grad.cpu(), x_ref.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(w_plate.grad.cpu(), w_ref.grad, rtol=1e-4, atol=1e-4)


def test_embedding_bag_per_sample_weights_gradient_on_plate():
    torch.manual_seed(0)
    weight, per_sample = torch.randn(10, 3), torch.rand(7)
    indices, offsets = torch.tensor([1, 2, 4, 5, 4, 3, 0]), torch.tensor([0, 2, 2, 5])

    def fn(weight, per_sample):
        return torch.nn.functional.embedding_bag(
            indices.to(weight.device),
            weight,
            offsets.to(weight.device),
            mode="sum",
            per_sample_weights=per_sample,
            padding_idx=4,
        )

    weight_plate, per_sample_plate = weight.to("plate").requires_grad_(), per_sample.to("plate").requires_grad_()
    torch._dynamo.reset()
    inductor_plate.reset_host_fallbacks()
    grad = torch.randn(4, 3)
    torch.compile(fn)(weight_plate, per_sample_plate).backward(grad.to("plate"))
    assert inductor_plate.host_fallbacks() == {}
    weight_ref, per_sample_ref = weight.double().requires_grad_(), per_sample.double().requires_grad_()
    fn(weight_ref, per_sample_ref).backward(grad.double())
    torch.testing.assert_close(per_sample_plate.grad.cpu(), per_sample_ref.grad.float(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(weight_plate.grad.cpu(), weight_ref.grad.float(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize("bounds, initial", [("lengths", None), ("offsets", 2.5)])
def test_segment_reduce_is_a_scatter_reduce_on_plate(reduce, bounds, initial):
    """An empty segment (initial or the identity; a mean's NaN) and a NaN in a segment (max/min: NaN, as ATen)."""
    torch.manual_seed(0)
    data = torch.randn(10, 3)
    data[4, 1] = float("nan")
    given = {"lengths": torch.tensor([3, 0, 5, 2]), "offsets": torch.tensor([0, 3, 3, 8, 10])}[bounds]

    def fn(data, given):
        return torch.segment_reduce(data, reduce, initial=initial, **{bounds: given})

    got = cpu(compiled_without_host_ops(fn, data, given))
    torch.testing.assert_close(got, fn(data.double(), given).float(), rtol=1e-5, atol=1e-6, equal_nan=True)


def test_multinomial_draws_on_plate():
    """Plate's generator (Inductor's fallback runs the eager kernel), not the host's: frequencies within 6
    standard deviations of the probabilities with replacement; without, distinct draws, never a zero-probability
    category, and the chance of the heavy category among two draws (5/8 + 3/8 * 5/7) per draw."""
    torch.manual_seed(0)
    probs = torch.tensor([[0.1, 0.0, 0.6, 0.3], [1.0, 1.0, 1.0, 5.0]])
    drawn = cpu(compiled_without_host_ops(lambda p: torch.multinomial(p, 20000, replacement=True), probs))
    for row in range(2):
        frequency = torch.bincount(drawn[row], minlength=4).double() / 20000
        torch.testing.assert_close(frequency, (probs[row] / probs[row].sum()).double(), rtol=0, atol=0.02)
    assert (drawn[0] != 1).all()
    # 200 draws of each row as the rows of one call (200 calls took 11 s of the suite for their launches)
    pairs = torch.compile(lambda p: torch.multinomial(p, 2, replacement=False))(probs.repeat(200, 1).to("plate"))
    heavy = 0
    for pair in pairs.cpu().reshape(200, 2, 2):
        assert pair[0, 0] != pair[0, 1] and pair[1, 0] != pair[1, 1] and 1 not in pair[0].tolist()
        heavy += int((pair[1] == 3).sum())
    assert inductor_plate.host_fallbacks() == {}
    assert abs(heavy / 200 - (5 / 8 + 3 / 8 * 5 / 7)) < 0.15


def test_div_at_a_graph_break_runs_on_plate():
    """The eager code Dynamo leaves at a graph break counts too (``eager op``): div is a plate kernel now."""
    torch.manual_seed(0)
    a, b = torch.randn(64) * 10, torch.randn(64) * 3

    def fn(a, b):
        t = torch.div(a, b, rounding_mode="trunc")
        torch._dynamo.graph_break()
        f = torch.div(a, b, rounding_mode="floor")
        return t, f, a / b

    got = cpu(compiled_without_host_ops(fn, a, b))
    for g, w in zip(got, fn(a, b)):
        torch.testing.assert_close(g, w, rtol=0, atol=0)


@pytest.mark.parametrize("channels_last", ["weight", "input"])
def test_conv_backward_compiled_matches_eager_at_fp32_tolerance(channels_last):
    """Inductor's test_conv2d_backward_channels_last(_input): a 2048-channel 1x1 convolution backward, compiled
    (plate GEMMs) against eager at fp32's default tolerance. The eager one is plate kernels (eager_ops/convolution.py:
    the eager matmuls, their K steps summed exactly): within float32 rounding of the exact result, where the host's
    fp32 kernel was 7e-5 off at these sizes and failed it."""
    torch.manual_seed(0)
    grad, x, w = torch.randn(2, 320, 8, 8), torch.randn(2, 2048, 8, 8), torch.randn(320, 2048, 1, 1)
    if channels_last == "weight":
        w = w.to(memory_format=torch.channels_last)
    else:
        x = x.to(memory_format=torch.channels_last)

    def fn(grad, x, w):
        return aten.convolution_backward(grad, x, w, [320], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True] * 3)

    torch.plate.reset_host_ops()
    eager = cpu(fn(*on_plate((grad, x, w))))
    assert torch.plate.host_ops() == {}
    exact = fn(grad.double(), x.double(), w.double())
    for e, want in zip(eager, exact):
        torch.testing.assert_close(e.double(), want, rtol=2**-20, atol=2**-20 * float(want.abs().max()))
    got = cpu(compiled_without_host_ops(fn, grad, x, w))
    for g, e in zip(got, eager):
        torch.testing.assert_close(g, e)


def test_a_device_reset_under_another_preset_drops_the_kernels_compiled_for_the_old_one(monkeypatch):
    """reset_device runs the integration's hook: Inductor's caches keyed by kernel source (which names no preset)
    are emptied when the preset changed, and kept when it did not."""
    from torch._inductor import async_compile

    from inductor_plate import compile_workers
    from triton_plate_backend.sim import device as sim_device

    assert compile_workers.follow_machine in sim_device._reset_hooks  # registered by inductor_plate.register()
    monkeypatch.setattr(async_compile, "shutdown_compile_workers", lambda: None)
    monkeypatch.setattr(compile_workers, "_machine", "plate1")
    async_compile.CompiledTritonKernels.save("kernel source", "compiled for plate1")
    sim_device.reset_device(0)  # still plate1: kept
    assert async_compile.CompiledTritonKernels.get("kernel source") == "compiled for plate1"
    monkeypatch.setenv("PLATE_MACHINE", "plate-mini")
    sim_device.reset_device(0)
    assert async_compile.CompiledTritonKernels.get("kernel source") is None
    monkeypatch.setenv("PLATE_MACHINE", "plate1")
    sim_device.reset_device(0)


def test_compile_workers_restart_when_the_machine_preset_changes(monkeypatch):
    """Compile workers inherit PLATE_MACHINE when they start: after a switch of preset they are stopped, so the
    next graph's kernels are not compiled for the old one (a LaunchError "compiled for machine 'plate-mini' but
    device 0 runs 'plate1'" when test_models.py, on plate-mini, ran before a plate1 test in one process)."""
    from torch._inductor import async_compile

    from inductor_plate import compile_workers

    stopped = []
    monkeypatch.setattr(async_compile, "shutdown_compile_workers", lambda: stopped.append(True))
    monkeypatch.setattr(compile_workers, "_machine", None)  # no graph compiled yet, whatever ran before in the process
    monkeypatch.setenv("PLATE_MACHINE", "plate-mini")
    compile_workers.follow_machine()  # stops them or not, as the graphs compiled before this test ran
    stopped.clear()
    assert not compile_workers.follow_machine() and stopped == []  # the same preset: the workers stay
    monkeypatch.setenv("PLATE_MACHINE", "plate1")
    assert compile_workers.follow_machine() and stopped == [True]
    assert not compile_workers.follow_machine() and stopped == [True]


def test_the_first_switch_after_registration_stops_the_workers(monkeypatch):
    """The pool starts with Dynamo's first compile, before any graph need schedule a kernel (a graph of one op at a
    graph break): the preset at registration is the first one followed, so the first switch stops that pool (it
    kept it, and a max-autotune test on plate-mini launched a kernel its workers compiled for plate1, in CI)."""
    from torch._inductor import async_compile

    from inductor_plate import compile_workers
    from triton_plate_backend.sim import device as sim_device

    stopped = []
    monkeypatch.setattr(async_compile, "shutdown_compile_workers", lambda: stopped.append(True))
    monkeypatch.setattr(compile_workers, "_machine", None)
    monkeypatch.setenv("PLATE_MACHINE", "plate1")
    compile_workers.watch()  # what inductor_plate.register() calls
    assert compile_workers.follow_machine in sim_device._reset_hooks
    monkeypatch.setenv("PLATE_MACHINE", "plate-mini")
    sim_device.reset_device(0)
    assert stopped == [True]
    monkeypatch.setenv("PLATE_MACHINE", "plate1")
    sim_device.reset_device(0)


@pytest.mark.parametrize("shape", ["0-d", "1-d"])
def test_a_complex_constant_of_the_graph_compiles(shape):
    """lift_fresh_copy of a complex constant: a float copy of its real view (it was a clone Inductor generated as a
    complex Triton kernel: KeyError 'complex64')."""
    value = 1 + 1j if shape == "0-d" else [1 + 1j, 2j, 3, -4]
    x = torch.randn(4, dtype=torch.complex64)

    def fn(x):
        return x + torch.tensor(value, dtype=torch.complex64, device=x.device)

    got = cpu(compiled_without_host_ops(fn, x))
    torch.testing.assert_close(got, fn(x), rtol=0, atol=0)


def test_compiled_scatter_reduce_amin_amax_keep_nan():
    """Inductor sends scatter_reduce's and index_reduce's amin/amax to the device's eager ops (its fallback): a
    NaN wins both, as on the CPU."""
    nan = float("nan")
    x = torch.tensor([1.0, 2.0, nan, 4.0])
    source = torch.tensor([nan, 5.0, -1.0, -nan, 7.0, 0.5])
    index = torch.tensor([0, 0, 1, 1, 2, 3])

    rows, values = torch.tensor([3, 0, 3]), torch.tensor([[nan, 1.0], [3.0, -nan], [5.0, 6.0]])

    def fn(x, index, source, rows, values):
        target = x[:, None].expand(4, 2).contiguous()
        return (
            x.scatter_reduce(0, index, source, "amin"),
            x.scatter_reduce(0, index, source, "amax", include_self=False),
            target.index_reduce(0, rows, values, "amin"),
            target.index_reduce(0, rows, values, "amax", include_self=False),
        )

    for got, expected in zip(
        compiled_without_host_ops(fn, x, index, source, rows, values), fn(x, index, source, rows, values)
    ):
        torch.testing.assert_close(cpu(got), expected, equal_nan=True, rtol=0, atol=0)


def test_ihfft_gradient_conjugates_physically():
    """ihfft's backward conjugates its gradient (aten._conj), which Inductor ran as a fallback whose result was a
    conjugate view at run time though not when traced: the DFT decomposition's view_as_real then raised
    (test_torchinductor_opinfo's fft.ihfft, a (1, 1) input). extern_decomps.conj_resolved makes it a plate copy."""
    torch.manual_seed(0)
    x, grad = torch.randn(1, 1), torch.randn(1, 1, dtype=torch.complex64)
    x_ref = x.clone().requires_grad_()
    (want,) = torch.autograd.grad(torch.fft.ihfft(x_ref), x_ref, grad)
    x_plate = x.to("plate").requires_grad_()
    torch._dynamo.reset()
    inductor_plate.reset_host_fallbacks()
    out = torch.compile(torch.fft.ihfft)(x_plate)
    (got,) = torch.autograd.grad(out, x_plate, grad.to("plate"))
    torch.testing.assert_close(out.detach().cpu(), torch.fft.ihfft(x), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got.cpu(), want, rtol=1e-5, atol=1e-5)
