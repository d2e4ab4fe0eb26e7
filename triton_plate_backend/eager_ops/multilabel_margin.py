"""multilabel_margin_loss on plate: the forward as the CPU kernel computes it, in tensor ops eager plate runs as plate
kernels, and its backward (gradients.py's vjp of it).

torch's decomposition of multilabel_margin_loss_forward (torch/_decomp, torch 2.13) also counts the target
positions after the first -1 (as class 0): a sample [3, 0, -1, 1, 2] loses 5.16 where the CPU's loss is 1.81. Here
each sample's targets are its entries before the first -1 (all of them without one), repeats counted as the CPU's
loop counts them: loss = sum over targets k, non-target classes j of max(0, 1 - x[k] + x[j]) / classes, then
reduced; ``is_target`` marks the target classes in the input's type. (torch.compile still traces torch's
decomposition, registered as the op's Autograd py_impl, so a compiled loss keeps that miscount.)

float32 / float64 inputs of 0, 1 or 2 dims with a non-empty batch (the CPU refuses fp16/bf16, and leaves an empty
batch's mean unset); a target outside [-1, classes) goes to the host, which raises the CPU's error."""

from __future__ import annotations

from collections.abc import Callable

import torch

from .ops import Call, checked
from .table import Row

REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def multilabel_margin_loss_forward(x: torch.Tensor, target: torch.Tensor, reduction: int):
    """(loss, is_target) of the CPU kernel."""
    inputs, targets = torch.atleast_2d(x), torch.atleast_2d(target)
    classes = inputs.shape[1]
    index = torch.arange(classes, device=targets.device)
    end = torch.amin(torch.where(targets == -1, index, classes), dim=1, keepdim=True)
    valid = index < end  # (batch, positions): a target before the first -1
    picked = inputs.gather(1, torch.where(valid, targets, 0))  # x[k] of each target position
    is_target = (index == torch.where(valid, targets, -1).unsqueeze(-1)).any(1)  # (batch, classes)
    margins = (1 - picked.unsqueeze(2) + inputs.unsqueeze(1)).clamp_min(0)  # (batch, positions, classes)
    counted = valid.unsqueeze(2) & ~is_target.unsqueeze(1)
    loss = torch.where(counted, margins, 0).sum((1, 2)) / classes
    if REDUCTIONS[reduction] == "mean":
        loss = loss.mean()
    elif REDUCTIONS[reduction] == "sum":
        loss = loss.sum()
    elif x.dim() < 2:
        loss = loss.reshape(())
    return loss, is_target.to(x.dtype).reshape(target.shape)


def multilabel_margin(op: torch._ops.OpOverload, row: Row) -> Callable:
    @checked(op)
    def kernel(call: Call, expected):
        x, target, reduction = call["self"], call["target"], call["reduction"]
        if x.dtype not in (torch.float32, torch.float64) or x.dim() > 2 or x.numel() == 0:
            return call.on_host()
        if reduction not in REDUCTIONS or target.shape != x.shape or target.dtype != torch.int64:
            return call.on_host()
        classes = x.shape[-1] if x.dim() else 1  # a 0-dim input: one sample of one class, as the CPU's
        if bool(((target < -1) | (target >= classes)).any()):
            return call.on_host()
        return multilabel_margin_loss_forward(x, target, reduction)  # a 1-D input's unreduced loss 0-dim, as the CPU's

    return kernel


FAMILIES = {"multilabel_margin": multilabel_margin}
