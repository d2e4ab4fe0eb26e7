"""CTC loss (F.ctc_loss, nn.CTCLoss) on plate: _ctc_loss and _ctc_loss_backward, int[] and Tensor lengths.

- ``ctc_loss``: the forward (log-space alpha) recursion of ATen's CPU kernel in one launch (ctc_kernels.ctc_alpha:
  a program per sample, the time loop inside): the extended labels (blank, l1, blank, l2, ..., blank; padded to
  2 * max target length + 1, states no final one reads), alpha_t(s) = logsumexp(alpha_{t-1}(s), alpha_{t-1}(s-1),
  alpha_{t-1}(s-2) where l'(s) is no blank and differs from l'(s-2)) + lp_t(l'(s)), frozen past a sequence's
  input length. neg_log_likelihood = -logsumexp of the last two states (the last one only for an empty target);
  inf where no alignment exists, also under zero_infinity (as the CPU's _ctc_loss: at::ctc_loss zeroes it).
  log_alpha: (batch, T, 2 * S + 1), the steps' alphas (torch leaves the entries past an input length unset; here
  the frozen alphas).
- ``ctc_loss_backward``: ATen's CPU backward in one launch (ctc_kernels.ctc_gradient), from the log_alpha and
  neg_log_likelihood it is given: the beta recursion, and the gradient w.r.t. the logits log_softmax made
  log_probs from (CPU and CUDA alike): grad = (exp(lp) - exp(log(sum of alpha * beta over l'(s) = c) + nll - lp))
  * grad_nll for t below the input length, 0 past it. A sample whose nll is inf: 0 under zero_infinity, NaN
  otherwise (below its input length), as ATen's formula gives.

float32 / float64 log_probs (the CPU kernel's dtypes), 3-D (batch, time, classes) as _ctc_loss takes them, targets
2-D padded or 1-D concatenated, integral; what ATen's checks refuse (or an input length of 0) goes to the host,
which raises torch's error or computes it."""

from __future__ import annotations

import importlib
from collections.abc import Callable

import torch

from . import launch
from .ops import Call
from .table import Row

CLASS_TILE = 4096  # (classes x states) elements a step of the backward takes at once, at most


def _lengths(value) -> list[int] | None:
    if isinstance(value, torch.Tensor):
        return [int(v) for v in value.reshape(-1).tolist()] if not value.is_floating_point() else None
    return [int(v) for v in value]


def _arguments(call: Call):
    """(log_probs, padded targets (batch, S), input lengths, target lengths, blank) or None: the host decides."""
    lp, targets, blank = call["log_probs"], call["targets"], call["blank"]
    if lp.device.type != "plate" or lp.dim() != 3 or lp.dtype not in (torch.float32, torch.float64):
        return None
    if targets.device.type != "plate" or targets.dtype.is_floating_point or targets.dtype == torch.bool:
        return None
    inputs, lengths = _lengths(call["input_lengths"]), _lengths(call["target_lengths"])
    time, batch, classes = lp.shape
    if inputs is None or lengths is None or len(inputs) != batch or len(lengths) != batch or batch == 0:
        return None
    if not 0 <= blank < classes or any(not 0 < n <= time for n in inputs) or any(n < 0 for n in lengths):
        return None
    width = max(lengths)  # the CPU kernel's max_target_length: log_alpha's last dim is 2 * width + 1
    if targets.dim() == 2 and targets.shape[0] == batch and width <= targets.shape[1]:
        padded = targets[:, :width]
    elif targets.dim() == 1 and sum(lengths) <= targets.numel():
        starts = torch.tensor([sum(lengths[:i]) for i in range(batch)], dtype=torch.int64, device=lp.device)
        positions = torch.arange(width, device=lp.device)
        valid = positions[None, :] < torch.tensor(lengths, device=lp.device)[:, None]
        index = torch.where(valid, starts[:, None] + positions[None, :], 0)
        padded = targets[index] if targets.numel() else targets.new_zeros(batch, width)
    else:
        return None
    valid = torch.arange(padded.shape[1], device=lp.device)[None, :] < torch.tensor(lengths, device=lp.device)[:, None]
    padded = torch.where(valid, padded.long(), blank)
    if bool(((padded < 0) | (padded >= classes)).any()):
        return None
    return lp, padded, inputs, lengths, blank


def _on_device(values: list[int], like: torch.Tensor) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.int64).to(like.device)


def _forward(lp: torch.Tensor, padded: torch.Tensor, inputs: list[int], lengths: list[int], blank: int):
    """(neg_log_likelihood, log_alpha) of the alpha recursion in one launch (ctc_kernels.ctc_alpha)."""
    time, batch, _ = lp.shape
    width = 2 * padded.shape[1] + 1
    nll = torch.empty(batch, dtype=lp.dtype, device=lp.device)
    log_alpha = torch.empty(batch, time, width, dtype=lp.dtype, device=lp.device)
    kernels = importlib.import_module(f"{__package__}.ctc_kernels")
    kernels.ctc_alpha[(batch,)](
        lp, padded, _on_device(inputs, lp), _on_device(lengths, lp), nll, log_alpha, time, width, blank,
        *lp.stride(), *padded.stride(), *log_alpha.stride(), W=launch.next_power_of_2(width),
        machine=launch.kernels().machine_of(lp),
    )  # fmt: skip
    return nll, log_alpha


def _gradient(parsed, grad: torch.Tensor, nll: torch.Tensor, log_alpha: torch.Tensor, zero_infinity: bool):
    """d loss / d logits (ATen's formula, the beta recursion) in one launch (ctc_kernels.ctc_gradient)."""
    lp, padded, inputs, lengths, blank = parsed
    time, batch, classes = lp.shape
    width = 2 * padded.shape[1] + 1
    result = torch.empty(time, batch, classes, dtype=lp.dtype, device=lp.device)
    log_beta = torch.empty(batch, time, width, dtype=lp.dtype, device=lp.device)
    wide = launch.next_power_of_2(width)
    kernels = importlib.import_module(f"{__package__}.ctc_kernels")
    kernels.ctc_gradient[(batch,)](
        lp, padded, _on_device(inputs, lp), _on_device(lengths, lp), nll, log_alpha, grad, log_beta, result,
        time, width, classes, blank, int(bool(zero_infinity)), *lp.stride(), *padded.stride(), *log_alpha.stride(),
        nll.stride(0), grad.stride(0), W=wide, C=min(launch.next_power_of_2(classes), max(1, CLASS_TILE // wide)),
        machine=launch.kernels().machine_of(lp),
    )  # fmt: skip
    return result


def ctc_loss(op: torch._ops.OpOverload, row: Row) -> Callable:
    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        parsed = _arguments(call)
        if parsed is None:
            return call.on_host()
        return _forward(*parsed)

    return kernel


def ctc_loss_backward(op: torch._ops.OpOverload, row: Row) -> Callable:
    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        parsed = _arguments(call)
        grad = call["grad"]
        if parsed is None or grad.device.type != "plate" or grad.dtype != parsed[0].dtype:
            return call.on_host()
        nll, log_alpha = call["neg_log_likelihood"], call["log_alpha"]
        lp, padded = parsed[:2]
        batch, time, width = lp.shape[1], lp.shape[0], 2 * padded.shape[1] + 1
        matching = all(t.device.type == "plate" and t.dtype == lp.dtype for t in (nll, log_alpha))
        if not matching or grad.shape != (batch,) or nll.shape != (batch,) or log_alpha.shape != (batch, time, width):
            return call.on_host()
        return _gradient(parsed, grad, nll, log_alpha, call["zero_infinity"])

    return kernel


FAMILIES = {"ctc_loss": ctc_loss, "ctc_loss_backward": ctc_loss_backward}
