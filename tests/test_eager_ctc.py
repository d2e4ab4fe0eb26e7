"""CTC loss on plate (eager_ops/ctc.py): F.ctc_loss forward and backward against the CPU's kernels, with no host op,
over the targets' two layouts, both length types, another blank, empty targets and samples without an alignment."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from triton_plate_backend import eager_ops

eager_ops.register()

CASES = {
    "padded": dict(inputs=[9, 7, 8], lengths=[3, 2, 3]),
    "concatenated": dict(inputs=[9, 7, 8], lengths=[3, 2, 3], concatenated=True),
    "tensor lengths, an empty target": dict(inputs=[9, 7, 8], lengths=[3, 0, 2], tensors=True),
    "every target empty": dict(inputs=[9, 7, 8], lengths=[0, 0, 0], tensors=True),
    "every target empty, concatenated": dict(inputs=[9, 7, 8], lengths=[0, 0, 0], concatenated=True),
    "last class blank": dict(inputs=[9, 9, 9], lengths=[3, 3, 1], blank=4),
    "no alignment": dict(inputs=[9, 2, 8], lengths=[3, 3, 2]),
    "no alignment, zero_infinity": dict(inputs=[9, 2, 8], lengths=[3, 3, 2], zero_infinity=True),
}


def _loss_and_grad(device, logits, targets, inputs, lengths, blank, reduction, zero_infinity, concatenated, tensors):
    x = logits.to(device, copy=True).requires_grad_()
    log_probs = x.log_softmax(2)
    log_probs.retain_grad()
    if concatenated:
        targets = torch.cat([row[:n] for row, n in zip(targets, lengths)])
    if tensors:
        inputs, lengths = torch.tensor(inputs), torch.tensor(lengths)
    loss = F.ctc_loss(log_probs, targets.to(device), inputs, lengths, blank, reduction, zero_infinity)
    loss.sum().backward()
    return [t.detach().cpu() for t in (loss, x.grad, log_probs.grad)]


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("reduction", ["mean", "none"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_ctc_loss_and_gradients_match_the_cpu(name, reduction, dtype, no_host_ops):
    case = dict(blank=0, zero_infinity=False, concatenated=False, tensors=False) | CASES[name]
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(9, 3, 5, generator=g, dtype=dtype)
    targets = torch.randint(0, 5, (3, 3), generator=g)
    targets = torch.where(targets == case["blank"], (case["blank"] + 2) % 5, targets)
    targets[0, 1] = targets[0, 0]  # a repeated label needs a blank between
    args = (logits, targets, case["inputs"], case["lengths"], case["blank"], reduction, case["zero_infinity"])
    kinds = (case["concatenated"], case["tensors"])
    expected = _loss_and_grad("cpu", *args, *kinds)
    got = _loss_and_grad("plate", *args, *kinds)
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == torch.float32 else {}
    for a, b in zip(got, expected, strict=True):
        torch.testing.assert_close(a, b, equal_nan=True, **tol)  # NaN: a sample without alignment, as the CPU's


def test_ctc_loss_refused_by_the_cpu_raises_its_error_on_the_host():
    log_probs = torch.randn(4, 2, 5, device="plate").log_softmax(2)
    with pytest.raises(RuntimeError, match="input_lengths"):
        F.ctc_loss(log_probs, torch.ones(2, 2, dtype=torch.long, device="plate"), [5, 4], [2, 2])
    assert torch.plate.host_ops()["aten._ctc_loss"] == 1
    torch.plate.reset_host_ops()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_raw_ops_match_the_cpu(dtype, no_host_ops):
    """aten._ctc_loss (nll inf without an alignment, also under zero_infinity, as the CPU's) and
    aten._ctc_loss_backward from the CPU's own log_alpha and nll: a gradient past the input lengths, stride-0 grad,
    more classes than one step's tile (float64)."""
    g = torch.Generator().manual_seed(5)
    ops = torch.ops.aten
    for inputs, lengths, blank, zero_infinity, classes in (
        ([9, 7, 8], [3, 2, 3], 0, False, 5),
        ([9, 2, 8], [3, 3, 2], 0, True, 5),
        ([9, 2, 8], [3, 3, 2], 0, False, 5),
        ([9, 9, 6], [3, 0, 1], 4, False, 5),
        ([9, 9, 6], [3, 1, 2], 0, False, 600),  # more classes than a step's tile (ctc.CLASS_TILE): two class blocks
    ):
        if classes > 5 and dtype == torch.float32:
            continue  # one dtype is enough for the class loop (each tile size compiles a kernel)
        lp = torch.randn(9, 3, classes, generator=g, dtype=dtype).log_softmax(2)
        targets = torch.randint(0, 4, (3, 3), generator=g) + (1 if blank == 0 else 0)
        targets[0, 1] = targets[0, 0]
        nll, log_alpha = ops._ctc_loss(lp, targets, inputs, lengths, blank, zero_infinity)
        got = ops._ctc_loss(lp.to("plate"), targets.to("plate"), inputs, lengths, blank, zero_infinity)
        torch.testing.assert_close(got[0].cpu(), nll)
        # the CPU leaves the steps past an input length and the states past 2 * target length unset
        below = torch.arange(9)[None, :, None] < torch.tensor(inputs)[:, None, None]
        below = below & (torch.arange(7)[None, None, :] <= 2 * torch.tensor(lengths)[:, None, None])
        torch.testing.assert_close(torch.where(below, got[1].cpu(), 0.0), torch.where(below, log_alpha, 0.0))
        grad = torch.randn(1, generator=g, dtype=dtype).expand(3)
        args = (lp, targets, inputs, lengths, nll, log_alpha, blank, zero_infinity)
        expected = ops._ctc_loss_backward(grad, *args)
        on_plate = [a.to("plate") if isinstance(a, torch.Tensor) else a for a in (grad, *args)]
        torch.testing.assert_close(ops._ctc_loss_backward(*on_plate).cpu(), expected, equal_nan=True)
