"""nn.MSELoss, SmoothL1Loss, HuberLoss and BatchNorm on plate (eager_ops table rows LOSSES and native_batch_norm,
composite family): forward and backward run as plate kernels (no host op), computed in float32 for fp16 inputs and
rounded once, as CUDA's kernels. Checked against the float64 result on the host: fp32 to its rounding, fp16 no
further from it than the host's own fp16 kernels (losses) or within its rounding (batch norm)."""

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


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("shape", [(5, 6), (4, 6, 7), (2, 6, 3, 5)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_batch_norm_runs_on_plate(shape, training, dtype, no_host_ops):
    """nn.BatchNorm{1,2}d: output, input/weight/bias gradients and the running statistics (updated in place)."""
    gen = torch.Generator().manual_seed(1)
    x, grad = torch.randn(shape, generator=gen) * 3 + 1, torch.randn(shape, generator=gen)
    weight, bias = torch.randn(6, generator=gen), torch.randn(6, generator=gen)
    stats = torch.randn(6, generator=gen), torch.rand(6, generator=gen) + 0.5
    results = {}
    for device, dt in (("plate", dtype), ("cpu", torch.float64)):
        norm = (torch.nn.BatchNorm1d if len(shape) < 4 else torch.nn.BatchNorm2d)(6, momentum=0.3)
        norm = norm.to(device, torch.float64 if dt == torch.float64 else torch.float32).train(training)
        with torch.no_grad():
            norm.weight.copy_(weight), norm.bias.copy_(bias)
            norm.running_mean.copy_(stats[0]), norm.running_var.copy_(stats[1])
        a = x.to(device, dt).requires_grad_()
        y = norm(a)
        y.backward(grad.to(device, dt))
        results[device] = [
            t.detach().cpu().double()
            for t in (y, a.grad, norm.weight.grad, norm.bias.grad, norm.running_mean, norm.running_var)
        ]
        assert y.dtype == dt and norm.running_mean.device.type == device
    torch.plate.reset_host_ops()  # the host reference is not the test's subject
    tolerance = 2e-5 if dtype == torch.float32 else 2e-3
    for got, want in zip(results["plate"], results["cpu"], strict=True):
        torch.testing.assert_close(got, want, rtol=tolerance, atol=tolerance)
