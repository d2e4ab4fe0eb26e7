"""The fused optimizer steps and the AMP gradient scaler's ops, as the CPU's kernels compute them, over plate
kernels.

torch's optimizers take their ``fused=True`` path on every device of
``torch.utils._foreach_utils._get_fused_kernels_supported_devices()``, plate included, and
``torch.amp.GradScaler("plate")`` calls the scaler's two ops. All have CPU and CUDA kernels only; here each
tensor's update is the CPU kernel's formula (aten/src/ATen/native/cpu/Fused*Kernel.cpp, AmpGradScalerKernels.cpp),
elementwise ops over plate kernels in the op math type (float32 for fp16/bf16 tensors, rounded once when
written back):

- ``fused_adam`` (``_fused_adam_``, ``_fused_adamw_``; row.fn "adam" or "adamw"): grad / grad_scale (written
  back to the grad), negated when ``maximize``; weight decay added to the grad (adam) or param *= 1 - lr * wd
  (adamw); exp_avg += (1 - beta1) * (grad - exp_avg); exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * grad^2;
  with ``amsgrad`` max_exp_avg_sq = max(it, exp_avg_sq) is the denominator's; param -= lr / (1 - beta1^step) *
  exp_avg / (sqrt(v) / sqrt(1 - beta2^step) + eps), step read from the tensor's state step.
- ``fused_sgd``: grad / grad_scale (written back), negated when ``maximize``, plus wd * param; the momentum
  buffer the grad on the first step, else momentum * buf + (1 - dampening) * grad; the update the buffer
  (or grad + momentum * buf with ``nesterov``); param -= lr * update.
- ``fused_adagrad``: grad / grad_scale (written back), negated when ``maximize``, plus wd * param;
  state_sum += grad^2; param -= lr / (1 + (step - 1) * lr_decay) * grad / (sqrt(state_sum) + eps).
- A ``found_inf`` of 1 skips the whole step, as the CPU's kernels; a Tensor ``lr`` (the ``tensor_lr``
  overloads) is read from the device.
- ``amp_unscale``: ``_amp_foreach_non_finite_check_and_unscale_``: found_inf = 1 if any element of any tensor
  is inf or NaN; every tensor multiplied by inv_scale.
- ``amp_update_scale``: ``_amp_update_scale_``: after an inf, scale *= backoff and the growth tracker restarts;
  else the tracker counts and, reaching growth_interval, scale *= growth (kept if the product is finite) and
  restarts; computed on the device without reading it back.

Tensors of another device run on the host, counted (the host raises torch's error)."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from ..torch_device.accumulation import tensors_in
from .ops import Call
from .table import Row

HALF = (torch.float16, torch.bfloat16)


def _all_on_plate(call: Call) -> bool:
    return all(t.device.type == "plate" for t in tensors_in(call.bound.values()))


def _opmath(t: torch.Tensor) -> torch.Tensor:
    return t.to(torch.float32) if t.dtype in HALF else t


def _number(value) -> float:
    return float(value.item()) if isinstance(value, torch.Tensor) else float(value)


def _refused(call: Call, lists: tuple[str, ...], optional: str | None = None, used: bool = True) -> bool:
    """Tensors of another device, lists of unequal lengths, or an optional state list (max_exp_avg_sqs,
    momentum_buffer_list) not empty although unused: the host runs the call (and raises torch's error)."""
    n = len(call["self"])
    if not _all_on_plate(call) or any(len(call[name]) != n for name in lists):
        return True
    return optional is not None and len(call[optional]) != (n if used else 0)


def _skipped(call: Call) -> bool:
    found_inf = call["found_inf"]
    return found_inf is not None and float(found_inf.item()) == 1.0


def _grad(call: Call, i: int, param: torch.Tensor) -> torch.Tensor:
    """The i-th grad unscaled (and written back, as the CPU's kernels), then negated for ``maximize``."""
    grad, scale = call["grads"][i], call["grad_scale"]
    g = _opmath(grad)
    if scale is not None:
        g = g / scale.reshape(()).to(g.dtype)  # a (1,) scale: the grad keeps its shape, a 0-dim one too
        grad.copy_(g)
    return -g if call["maximize"] else g


def fused_adam(op: torch._ops.OpOverload, row: Row) -> Callable:
    adamw = row.fn == "adamw"

    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        if _refused(call, ("grads", "exp_avgs", "exp_avg_sqs", "state_steps"), "max_exp_avg_sqs", call["amsgrad"]):
            return call.on_host()
        if _skipped(call):
            return None
        lr, beta1, beta2, eps, wd = (_number(call[n]) for n in ("lr", "beta1", "beta2", "eps", "weight_decay"))
        for i, param in enumerate(call["self"]):
            p, g = _opmath(param), _grad(call, i, param)
            if wd != 0:
                p, g = (p * (1 - lr * wd), g) if adamw else (p, g + p * wd)
            m, v = call["exp_avgs"][i], call["exp_avg_sqs"][i]
            m_new = _opmath(m) + (g - _opmath(m)) * (1 - beta1)
            v_new = _opmath(v) * beta2 + g * g * (1 - beta2)
            m.copy_(m_new)
            v.copy_(v_new)
            if call["amsgrad"]:
                v_max = call["max_exp_avg_sqs"][i]
                v_new = torch.maximum(_opmath(v_max), v_new)
                v_max.copy_(v_new)
            step = float(call["state_steps"][i].item())
            step_size = lr / (1 - beta1**step)
            denom = v_new.sqrt() / math.sqrt(1 - beta2**step) + eps
            param.copy_(p - m_new / denom * step_size)
        return None

    return kernel


def fused_sgd(op: torch._ops.OpOverload, row: Row) -> Callable:
    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        if _refused(call, ("grads",), "momentum_buffer_list", _number(call["momentum"]) != 0):
            return call.on_host()
        if _skipped(call):
            return None
        lr, wd, momentum, dampening = (_number(call[n]) for n in ("lr", "weight_decay", "momentum", "dampening"))
        for i, param in enumerate(call["self"]):
            p, g = _opmath(param), _grad(call, i, param)
            if wd != 0:
                g = g + p * wd
            if momentum != 0:
                buf = call["momentum_buffer_list"][i]
                b = g if call["is_first_step"] else _opmath(buf) * momentum + g * (1 - dampening)
                buf.copy_(b)
                g = g + b * momentum if call["nesterov"] else b
            param.copy_(p - g * lr)
        return None

    return kernel


def fused_adagrad(op: torch._ops.OpOverload, row: Row) -> Callable:
    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        if _refused(call, ("grads", "state_sums", "state_steps")):
            return call.on_host()
        if _skipped(call):
            return None
        lr, lr_decay, wd, eps = (_number(call[n]) for n in ("lr", "lr_decay", "weight_decay", "eps"))
        for i, param in enumerate(call["self"]):
            p, g = _opmath(param), _grad(call, i, param)
            if wd != 0:
                g = g + p * wd
            step = float(call["state_steps"][i].item())
            clr = lr / (1 + (step - 1) * lr_decay)
            state_sum = call["state_sums"][i]
            s = _opmath(state_sum) + g * g
            state_sum.copy_(s)
            param.copy_(p - g / (s.sqrt() + eps) * clr)
        return None

    return kernel


def amp_unscale(op: torch._ops.OpOverload, row: Row) -> Callable:
    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        found_inf, inv_scale = call["found_inf"], call["inv_scale"]
        tensors = call["self"]
        if not _all_on_plate(call) or found_inf.numel() != 1 or inv_scale.numel() != 1:
            return call.on_host()
        if inv_scale.dtype != torch.float32 or found_inf.dtype != torch.float32:
            return call.on_host()  # torch's error
        for t in tensors:
            nonfinite = (~torch.isfinite(t)).any()
            found_inf.copy_(torch.where(nonfinite, torch.ones_like(found_inf), found_inf))
            t.copy_(_opmath(t) * inv_scale.reshape(()))
        return None

    return kernel


def amp_update_scale(op: torch._ops.OpOverload, row: Row) -> Callable:
    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        scale, tracker, found_inf = call["self"], call["growth_tracker"], call["found_inf"]
        if not _all_on_plate(call) or scale.numel() != 1 or tracker.numel() != 1 or found_inf.numel() != 1:
            return call.on_host()
        if scale.dtype != torch.float32 or tracker.dtype != torch.int32 or found_inf.dtype != torch.float32:
            return call.on_host()  # torch's error
        inf = found_inf != 0
        successful = tracker + 1
        grow = successful == call["growth_interval"]
        grown = scale * call["scale_growth_factor"]
        grown_scale = torch.where(torch.isfinite(grown), grown, scale)
        new_scale = torch.where(inf, scale * call["scale_backoff_factor"], torch.where(grow, grown_scale, scale))
        new_tracker = torch.where(inf | grow, torch.zeros_like(tracker), successful)
        scale.copy_(new_scale)
        tracker.copy_(new_tracker)
        return scale

    return kernel


FAMILIES = {
    "fused_adam": fused_adam,
    "fused_sgd": fused_sgd,
    "fused_adagrad": fused_adagrad,
    "amp_unscale": amp_unscale,
    "amp_update_scale": amp_update_scale,
}
