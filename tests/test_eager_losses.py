"""nn.MSELoss, SmoothL1Loss and HuberLoss on plate (eager_ops table rows LOSSES, composite family): forward and
backward run as plate kernels (no host op), computed in float32 for fp16 inputs and rounded once, as CUDA's
kernels. Checked against the float64 result on the host: fp32 to its rounding, fp16 no further from it than the
host's own fp16 kernels."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

LOSSES = {
    "mse_loss": lambda a, t, reduction: F.mse_loss(a, t, reduction=reduction),
    "smooth_l1_loss": lambda a, t, reduction: F.smooth_l1_loss(a, t, reduction=reduction, beta=0.5),
    "huber_loss": lambda a, t, reduction: F.huber_loss(a, t, reduction=reduction, delta=0.7),
}


def loss_and_grad(loss, x, target, grad, reduction, device, dtype):
    a = x.to(device, dtype).clone().requires_grad_()
    y = LOSSES[loss](a, target.to(device, dtype), reduction)
    y.backward(grad.to(device, dtype) if reduction == "none" else grad.to(device, dtype).reshape(()))
    return y.detach().cpu().double(), a.grad.cpu().double()


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("loss", sorted(LOSSES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_pointwise_losses_run_on_plate(loss, reduction, dtype, no_host_ops):
    gen = torch.Generator().manual_seed(0)
    x, target = torch.randn(6, 37, generator=gen), torch.randn(6, 37, generator=gen)
    grad = torch.randn(6, 37, generator=gen) if reduction == "none" else torch.tensor([0.37])
    plate = loss_and_grad(loss, x, target, grad, reduction, "plate", dtype)
    truth = loss_and_grad(loss, x, target, grad, reduction, "cpu", torch.float64)
    torch.plate.reset_host_ops()  # the host references above are not the test's subject
    if dtype == torch.float32:
        for got, want in zip(plate, truth, strict=True):
            torch.testing.assert_close(got, want, rtol=2e-6, atol=2e-6)
    else:  # one rounding of the float32 result: within an fp16 ulp, and as close as the host's fp16 kernels
        host = loss_and_grad(loss, x, target, grad, reduction, "cpu", dtype)
        for got, want, theirs in zip(plate, truth, host, strict=True):
            assert got.dtype == want.dtype and got.shape == want.shape
            assert (got - want).abs().max() <= (theirs - want).abs().max() + 1e-12
            torch.testing.assert_close(got, want, rtol=1e-3, atol=1e-3)
