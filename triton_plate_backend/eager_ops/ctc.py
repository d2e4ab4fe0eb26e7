"""CTC loss (F.ctc_loss, nn.CTCLoss) on plate: _ctc_loss and _ctc_loss_backward, int[] and Tensor lengths.

- ``ctc_loss``: the forward (log-space alpha) recursion of ATen's CPU kernel, batched over plate kernels: the
  extended labels (blank, l1, blank, l2, ..., blank; padded to 2 * max target length + 1, states no final one
  reads) gathered from log_probs once, then one step per time: alpha_t(s) = logsumexp(alpha_{t-1}(s),
  alpha_{t-1}(s-1), alpha_{t-1}(s-2) where l'(s) is no blank and differs from l'(s-2)) + lp_t(l'(s)), frozen
  past a sequence's input length. neg_log_likelihood = -logsumexp of the last two states (the last one only for an
  empty target); inf where no alignment exists, 0 there under zero_infinity. log_alpha: (batch, T, 2 * S + 1),
  the steps' alphas (torch leaves the entries past an input length unset; here the frozen alphas).
- ``ctc_loss_backward``: ATen's formula, which is the gradient w.r.t. the logits log_softmax made log_probs
  from (CPU and CUDA alike): grad = (exp(lp) - exp(log(sum of alpha * beta over l'(s) = c) + nll - lp)) * grad_nll
  for t below the input length, 0 past it. The second term is d nll / d lp: the vjp of the forward recursion
  (torch.func.vjp), so no beta recursion. A sample without an alignment: 0 under zero_infinity, NaN otherwise
  (below its input length), as ATen's formula gives.

float32 / float64 log_probs (the CPU kernel's dtypes), 3-D (batch, time, classes) as _ctc_loss takes them, targets
2-D padded or 1-D concatenated, integral; what ATen's checks refuse (or an input length of 0) goes to the host,
which raises torch's error or computes it."""

from __future__ import annotations

import importlib
from collections.abc import Callable

import torch

from . import launch
from .eager_lock import lock_released
from .ops import Call
from .table import Row

NEG_INF = float("-inf")


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


def _logsumexp(*terms: torch.Tensor) -> torch.Tensor:
    """logsumexp of same-shape tensors elementwise, -inf where all are, with a finite gradient everywhere."""
    top = terms[0]
    for t in terms[1:]:
        top = torch.maximum(top, t)
    top = torch.where(top == NEG_INF, 0.0, top).detach()
    total = sum(torch.exp(t - top) for t in terms)
    some = total > 0
    return torch.where(some, top + torch.log(torch.where(some, total, 1.0)), NEG_INF)


def _alphas(lp: torch.Tensor, padded: torch.Tensor, inputs: list[int], lengths: list[int], blank: int):
    """(neg_log_likelihood (batch,), log_alpha (batch, T, 2 S + 1)) of the recursion, differentiable in lp."""
    time, batch, _ = lp.shape
    width = 2 * padded.shape[1] + 1
    ext = torch.full((batch, width), blank, dtype=torch.int64, device=lp.device)
    ext[:, 1::2] = padded
    states = torch.arange(width, device=lp.device)
    skip = (states >= 2) & (ext != blank) & (ext != torch.cat([ext[:, :2], ext[:, :-2]], 1))
    emitted = lp.gather(2, ext[None].expand(time, batch, width))  # (T, batch, width)
    target_lengths = torch.tensor(lengths, device=lp.device)
    start = (states[None, :] == 0) | ((states[None, :] == 1) & (target_lengths[:, None] > 0))
    alpha = torch.where(start, emitted[0], NEG_INF)
    steps = [alpha]
    inputs_t = torch.tensor(inputs, device=lp.device)
    pad = torch.full((batch, 2), NEG_INF, dtype=lp.dtype, device=lp.device)
    for t in range(1, max(inputs)):
        shifted = torch.cat([pad, alpha], 1)
        one, two = shifted[:, 1:-1], torch.where(skip, shifted[:, :-2], NEG_INF)
        stepped = _logsumexp(alpha, one, two) + emitted[t]
        alpha = torch.where((inputs_t > t)[:, None], stepped, alpha)
        steps.append(alpha)
    steps += [alpha] * (time - len(steps))
    last = alpha.gather(1, (2 * target_lengths)[:, None])[:, 0]
    before = alpha.gather(1, (2 * target_lengths - 1).clamp_min(0)[:, None])[:, 0]
    before = torch.where(target_lengths > 0, before, NEG_INF)
    return -_logsumexp(last, before), torch.stack(steps, 1)


def _forward(lp: torch.Tensor, padded: torch.Tensor, inputs: list[int], lengths: list[int], blank: int, zero_infinity):
    """(neg_log_likelihood, log_alpha) of _alphas' recursion in one launch (ctc_kernels.ctc_alpha)."""
    time, batch, _ = lp.shape
    width = 2 * padded.shape[1] + 1
    nll = torch.empty(batch, dtype=lp.dtype, device=lp.device)
    log_alpha = torch.empty(batch, time, width, dtype=lp.dtype, device=lp.device)
    inputs_t, lengths_t = (torch.tensor(v, dtype=torch.int64).to(lp.device) for v in (inputs, lengths))
    kernels = importlib.import_module(f"{__package__}.ctc_kernels")
    kernels.ctc_alpha[(batch,)](
        lp, padded, inputs_t, lengths_t, nll, log_alpha, time, width, blank, int(bool(zero_infinity)),
        *lp.stride(), *padded.stride(), *log_alpha.stride(), W=launch.next_power_of_2(width),
        machine=launch.kernels().machine_of(lp),
    )  # fmt: skip
    return nll, log_alpha


def ctc_loss(op: torch._ops.OpOverload, row: Row) -> Callable:
    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        parsed = _arguments(call)
        if parsed is None:
            return call.on_host()
        return _forward(*parsed, call["zero_infinity"])

    return kernel


def ctc_loss_backward(op: torch._ops.OpOverload, row: Row) -> Callable:
    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        parsed = _arguments(call)
        grad = call["grad"]
        if parsed is None or grad.device.type != "plate" or grad.dtype != parsed[0].dtype:
            return call.on_host()
        lp, padded, inputs, lengths, blank = parsed
        nll, pullback = torch.func.vjp(lambda x: _alphas(x, padded, inputs, lengths, blank)[0], lp)
        with lock_released():  # the pullback's backward may run on autograd's device thread
            (slope,) = pullback(grad.expand(nll.shape))  # d nll / d lp times the incoming gradient
        time, batch, _ = lp.shape
        below = torch.arange(time, device=lp.device)[:, None] < torch.tensor(inputs, device=lp.device)[None, :]
        result = torch.where(below[:, :, None], torch.exp(lp) * grad.expand(nll.shape)[None, :, None] + slope, 0.0)
        lost = (nll == float("inf"))[None, :, None] & below[:, :, None]
        return torch.where(lost, 0.0 if call["zero_infinity"] else float("nan"), result).contiguous()

    return kernel


FAMILIES = {"ctc_loss": ctc_loss, "ctc_loss_backward": ctc_loss_backward}
