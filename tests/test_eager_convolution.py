"""Convolutions on plate (eager_ops/convolution.py): conv1d/2d/3d and transposed convolutions, forward and backward,
as im2col and plate matmuls, no host op. Checked against float64 on the host: fp32 within its rounding, fp16 within
a half ulp or so (computed in float32, rounded once); the output's and the gradients' strides the CPU's."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

CASES = {  # name: (function, input shape, weight shape, keyword arguments)
    "conv1d groups stride": (F.conv1d, (2, 4, 9), (6, 2, 3), dict(stride=2, padding=1, groups=2)),
    "conv2d dilation": (F.conv2d, (1, 3, 10, 9), (4, 3, 3, 2), dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2))),
    "conv2d 1x1": (F.conv2d, (2, 8, 5, 5), (3, 8, 1, 1), dict()),
    # one image, strided and padded: the input gradient is the padded buffer's interior (OpInfo's conv1d/conv2d)
    "conv1d one image": (F.conv1d, (1, 3, 4), (3, 3, 3), dict(stride=2, padding=2)),
    "conv2d one image": (F.conv2d, (1, 3, 4, 4), (3, 3, 3, 3), dict(stride=2, padding=2)),
    "conv3d depthwise": (F.conv3d, (2, 4, 5, 6, 5), (4, 1, 2, 3, 2), dict(padding=1, groups=4)),
    "conv_transpose1d": (
        F.conv_transpose1d,
        (2, 4, 7),
        (4, 3, 3),
        dict(stride=2, padding=1, output_padding=1, groups=2),
    ),
    "conv_transpose2d": (
        F.conv_transpose2d,
        (1, 3, 5, 6),
        (3, 2, 3, 2),
        dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2), dilation=(1, 2)),
    ),
    # output_padding past the stride (allowed below the dilation): its extra rows give the adjoint convolution
    # positions past the input's, which the backward drops (test_noncontiguous_samples' conv_transpose2d sample 2)
    "conv_transpose2d output_padding past the stride": (
        F.conv_transpose2d,
        (2, 2, 4, 4),
        (2, 2, 4, 5),
        dict(stride=(3, 2), padding=(1, 2), output_padding=(2, 3), groups=2, dilation=(4, 4)),
    ),
}


def run(case, device, dtype, inputs=torch.float32):
    """The case's output and gradients, from inputs (and grad_output) first rounded to `inputs`, and their strides."""
    fn, x_shape, w_shape, kwargs = CASES[case]
    gen = torch.Generator().manual_seed(0)
    x, w = torch.randn(x_shape, generator=gen), torch.randn(w_shape, generator=gen)
    out_channels = w_shape[1] * kwargs.get("groups", 1) if "transpose" in fn.__name__ else w_shape[0]
    b = torch.randn(out_channels, generator=gen)
    x, w, b = (t.to(inputs).to(device, dtype).requires_grad_() for t in (x, w, b))
    y = fn(x, w, b, **kwargs)
    grad = torch.randn(y.shape, generator=gen).to(inputs).to(device, dtype)
    grads = torch.autograd.grad(y, (x, w, b), grad)  # as computed (.grad would be a copy in the layout contract's)
    assert y.dtype == dtype and y.device.type == device
    results = (y, *grads)
    return [t.detach().cpu().double() for t in results], [t.stride() for t in results]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("case", sorted(CASES))
def test_convolution_runs_on_plate(case, dtype, no_host_ops):
    got, got_strides = run(case, "plate", dtype, dtype)
    want, want_strides = run(case, "cpu", torch.float64, dtype)
    torch.plate.reset_host_ops()  # the host reference is not the test's subject
    assert got_strides == want_strides
    for g, w in zip(got, want, strict=True):
        if dtype == torch.float32:
            torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)
        else:  # one rounding of a float32 result: half an fp16 ulp, and float32's own error
            assert bool(((g - w).abs() <= 2**-11 * w.abs() + 1e-4).all())


def test_convolution_refuses_mixed_devices():
    with pytest.raises(RuntimeError, match="same device"):
        F.conv2d(torch.randn(1, 3, 5, 5, device="plate"), torch.randn(2, 3, 3, 3))
