"""The fused optimizer steps and torch.amp.GradScaler's ops on plate (triton_plate_backend/eager_ops/
fused_optimizers.py) against the CPU's kernels of the same ops (every list they write: params, grads, states),
and torch.optim's fused=True path end to end against its float64 reference, with the host-op counter at zero."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from triton_plate_backend import eager_ops

eager_ops.register()
aten = torch.ops.aten
SHAPES = ((5, 3), (7,), ())


def lists(n, dtype=torch.float32, positive=()):
    gen = torch.Generator().manual_seed(0)
    made = [[torch.randn(s, generator=gen).to(dtype) for s in SHAPES] for _ in range(n)]
    return [[t.abs() for t in made[i]] if i in positive else made[i] for i in range(n)]


def on_plate(value):
    if isinstance(value, list):
        return [on_plate(v) for v in value]
    return value.to("plate") if isinstance(value, torch.Tensor) else value


def check_against_the_cpu(op, tensor_lists, kwargs, atol=1e-6, rtol=1e-5):
    cpu = [[t.clone() for t in tensors] for tensors in tensor_lists]
    plate = on_plate(tensor_lists)
    op(*cpu, **kwargs)
    op(*plate, **{k: on_plate(v) for k, v in kwargs.items()})
    for i, (expected, got) in enumerate(zip(cpu, plate, strict=True)):
        for e, g in zip(expected, got, strict=True):
            torch.testing.assert_close(g.cpu(), e, atol=atol, rtol=rtol, msg=lambda m, i=i: f"list {i}: {m}")


def steps(*values):
    return [torch.tensor(float(v)) for v in values]


SCALED = {"none": {}, "grad_scale": {"grad_scale": torch.tensor([4.0])}}
SCALED["found_inf"] = {**SCALED["grad_scale"], "found_inf": torch.tensor([1.0])}


@pytest.mark.parametrize("name", ["_fused_adam_", "_fused_adamw_"])
@pytest.mark.parametrize("amsgrad", [False, True])
@pytest.mark.parametrize("weight_decay, maximize", [(0.0, False), (0.1, True)])
@pytest.mark.parametrize("scaled", list(SCALED))
def test_fused_adam_matches_the_cpu(name, amsgrad, weight_decay, maximize, scaled, no_host_ops):
    tensors = lists(5, positive=(3, 4))
    if not amsgrad:
        tensors[4] = []
    kwargs = dict(lr=0.01, beta1=0.9, beta2=0.99, weight_decay=weight_decay, eps=1e-8, amsgrad=amsgrad)
    check_against_the_cpu(
        getattr(aten, name), [*tensors, steps(3, 1, 7)], {**kwargs, "maximize": maximize, **SCALED[scaled]}
    )


def test_fused_adamw_of_bf16_params_and_a_tensor_lr_matches_the_cpu(no_host_ops):
    tensors = lists(5, torch.bfloat16, positive=(3,))
    tensors[4] = []
    kwargs = dict(
        lr=torch.tensor(0.02), beta1=0.9, beta2=0.99, weight_decay=0.1, eps=1e-8, amsgrad=False, maximize=False
    )
    check_against_the_cpu(aten._fused_adamw_.tensor_lr, [*tensors, steps(2, 2, 2)], kwargs, atol=1e-2, rtol=1e-2)


@pytest.mark.parametrize("momentum, nesterov, dampening", [(0.0, False, 0.0), (0.9, False, 0.1), (0.9, True, 0.0)])
@pytest.mark.parametrize("is_first_step", [True, False])
@pytest.mark.parametrize("scaled", ["none", "grad_scale"])
def test_fused_sgd_matches_the_cpu(momentum, nesterov, dampening, is_first_step, scaled, no_host_ops):
    tensors = lists(3)
    if momentum == 0:
        tensors[2] = []
    kwargs = dict(weight_decay=0.01, momentum=momentum, lr=0.1, dampening=dampening, nesterov=nesterov)
    kwargs.update(maximize=scaled != "none", is_first_step=is_first_step, **SCALED[scaled])
    check_against_the_cpu(aten._fused_sgd_, tensors, kwargs)


@pytest.mark.parametrize("scaled", ["none", "grad_scale"])
def test_fused_adagrad_matches_the_cpu(scaled, no_host_ops):
    kwargs = dict(lr=0.1, lr_decay=0.01, weight_decay=0.05, eps=1e-10, maximize=scaled != "none", **SCALED[scaled])
    check_against_the_cpu(aten._fused_adagrad_, [*lists(3, positive=(2,)), steps(3, 4, 1)], kwargs)


def test_an_unused_state_list_not_empty_goes_to_the_host_which_raises_torchs_error():
    tensors = on_plate([*lists(5), steps(1, 1, 1)])
    with pytest.raises(RuntimeError, match=r"max_exp_avg_sqs.empty\(\)"):
        aten._fused_adam_(
            *tensors, lr=0.1, beta1=0.9, beta2=0.99, weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False
        )


@pytest.mark.parametrize("last", [2.0, float("inf"), float("nan")])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_amp_unscale_matches_the_cpu(last, dtype, no_host_ops):
    tensors = [torch.randn(4, 3).to(dtype), torch.tensor([1.0, last], dtype=dtype), torch.tensor(3.0, dtype=dtype)]
    cpu, plate = [t.clone() for t in tensors], on_plate(tensors)
    found_cpu, found_plate = torch.zeros(1), torch.zeros(1, device="plate")
    aten._amp_foreach_non_finite_check_and_unscale_(cpu, found_cpu, torch.tensor([0.25]))
    aten._amp_foreach_non_finite_check_and_unscale_(plate, found_plate, torch.tensor([0.25], device="plate"))
    assert found_plate.item() == found_cpu.item() == (0.0 if last == 2.0 else 1.0)
    for e, g in zip(cpu, plate, strict=True):
        torch.testing.assert_close(g.cpu(), e, equal_nan=True)


@pytest.mark.parametrize("found_inf, tracker, interval", [(0.0, 0, 3), (0.0, 2, 3), (1.0, 2, 3), (0.0, 1, 2)])
@pytest.mark.parametrize("scale", [1024.0, 3e38])
def test_amp_update_scale_matches_the_cpu(found_inf, tracker, interval, scale, no_host_ops):
    args = [torch.tensor([scale]), torch.tensor([tracker], dtype=torch.int32), torch.tensor([found_inf])]
    plate = on_plate(args)
    aten._amp_update_scale_(*args, 2.0, 0.5, interval)
    returned = aten._amp_update_scale_(*plate, 2.0, 0.5, interval)
    assert returned is plate[0]
    torch.testing.assert_close(plate[0].cpu(), args[0])
    torch.testing.assert_close(plate[1].cpu(), args[1])


OPTIMIZERS = {
    "adamw": lambda params, **kw: torch.optim.AdamW(params, lr=0.05, weight_decay=0.1, **kw),
    "adam amsgrad": lambda params, **kw: torch.optim.Adam(params, lr=0.05, amsgrad=True, **kw),
    "sgd nesterov": lambda params, **kw: torch.optim.SGD(params, lr=0.1, momentum=0.9, nesterov=True, **kw),
    "adagrad": lambda params, **kw: torch.optim.Adagrad(params, lr=0.1, **kw),
}


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_fused_optimizer_steps_match_float64(name, no_host_ops):
    start = lists(2)[0]
    grads = [torch.randn_like(p) for p in start]
    plate = [p.to("plate").requires_grad_() for p in start]
    exact = [p.double().requires_grad_() for p in start]
    fused, reference = OPTIMIZERS[name](plate, fused=True), OPTIMIZERS[name](exact, foreach=False)
    for step in range(3):
        for p, q, g in zip(plate, exact, grads, strict=True):
            p.grad, q.grad = (g * (step + 1)).to("plate"), (g * (step + 1)).double()
        fused.step()
        reference.step()
    for p, q in zip(plate, exact, strict=True):
        torch.testing.assert_close(p.detach().cpu().double(), q.detach(), atol=1e-6, rtol=1e-5)


def test_grad_scaler_skips_a_step_with_infs_and_grows_after_finite_ones(no_host_ops):
    model = nn.Linear(4, 2).to("plate")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, fused=True)
    scaler = torch.amp.GradScaler("plate", init_scale=2.0**10, growth_interval=1)
    before = model.weight.detach().cpu().clone()
    scaler.scale(model(torch.randn(3, 4, device="plate")).square().mean()).backward()
    scaler.step(optimizer)
    scaler.update()
    assert scaler.get_scale() == 2.0**11 and not torch.equal(model.weight.detach().cpu(), before)
    after = model.weight.detach().cpu().clone()
    optimizer.zero_grad()
    scaler.scale(model(torch.full((3, 4), float("inf"), device="plate")).sum()).backward()
    scaler.step(optimizer)
    scaler.update()
    assert scaler.get_scale() == 2.0**10 and torch.equal(model.weight.detach().cpu(), after)
