"""Weight norm's backward on plate (triton_plate_backend/eager_ops/weight_norm.py) against the CPU, along
the first and the last dim, and through autograd of nn.utils.parametrizations.weight_norm, with the
host-op counter at zero for the backward op."""

from __future__ import annotations

import pytest
import torch

from triton_plate_backend import eager_ops

eager_ops.register()
aten = torch.ops.aten


@pytest.mark.parametrize("shape, dim", [((2, 7), 0), ((4, 3, 3, 3), 0), ((5, 6), 1), ((3, 4, 600), 2)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_weight_norm_backward_matches_the_cpu(shape, dim, dtype, no_host_ops):
    v = torch.randn(shape, dtype=dtype)
    g = torch.randn([n if d == dim else 1 for d, n in enumerate(shape)], dtype=dtype)
    _, norms = aten._weight_norm_interface(v, g, dim)
    grad_w = torch.randn(shape, dtype=dtype)
    expected = aten._weight_norm_interface_backward(grad_w, v, g, norms, dim)
    plate = [t.to("plate") for t in (grad_w, v, g, norms)]
    got = aten._weight_norm_interface_backward(*plate, dim)
    for a, b in zip(got, expected, strict=True):
        assert a.device.type == "plate" and (a.shape, a.stride(), a.dtype) == (b.shape, b.stride(), b.dtype)
        torch.testing.assert_close(a.cpu(), b)


def test_a_middle_dim_goes_to_the_host_which_raises_torchs_error():
    v = torch.randn(3, 4, 5, device="plate")
    g, norms = torch.ones(1, 4, 1, device="plate"), torch.ones(1, 4, 1, device="plate")
    with pytest.raises(RuntimeError, match="first or last dim"):
        aten._weight_norm_interface_backward(v, v, g, norms, 1)


@pytest.mark.parametrize("shape, dim", [((2, 7), 0), ((4, 3, 3, 3), 0), ((5, 6), 1), ((3, 4, 600), 2)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
def test_weight_norm_forward_matches_the_cpu(shape, dim, dtype, no_host_ops):
    v = torch.randn(shape).to(dtype)
    g = torch.randn([n if d == dim else 1 for d, n in enumerate(shape)]).to(dtype)
    expected = aten._weight_norm_interface(v, g, dim)
    got = aten._weight_norm_interface(v.to("plate"), g.to("plate"), dim)
    tol = {"rtol": 1e-2, "atol": 1e-2} if dtype in (torch.bfloat16, torch.float16) else {}
    for a, b in zip(got, expected, strict=True):  # fp16's norms float32 as the CPU's (the meta kernel says fp16)
        assert a.device.type == "plate" and (a.shape, a.stride(), a.dtype) == (b.shape, b.stride(), b.dtype)
        torch.testing.assert_close(a.cpu(), b, **tol)


def test_weight_norm_forward_of_a_middle_dim_an_integer_or_mixed_dtypes_goes_to_the_host_which_raises_torchs_error():
    v = torch.randn(3, 4, 5, device="plate")
    with pytest.raises(RuntimeError, match="dim == 0"):
        aten._weight_norm_interface(v, torch.ones(1, 4, 1, device="plate"), 1)
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        aten._weight_norm_interface(v.long(), torch.ones(3, 1, 1, device="plate").long(), 0)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        aten._weight_norm_interface(v, torch.ones(3, 1, 1, device="plate", dtype=torch.float64), 0)
    assert torch.plate.host_ops()["aten._weight_norm_interface"] == 3
    torch.plate.reset_host_ops()


def test_weight_norm_parametrization_trains_on_plate(no_host_ops):
    """nn.utils.parametrizations.weight_norm of a Linear, forward and backward, against the CPU."""
    results = []
    for device in ("cpu", "plate"):
        torch.manual_seed(0)
        layer = torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(6, 4)).to(device)
        x = torch.randn(3, 6, generator=torch.Generator().manual_seed(1)).to(device)
        y = layer(x)
        y.square().sum().backward()
        weight = layer.parametrizations.weight
        results.append([t.detach().cpu() for t in (y, weight.original0.grad, weight.original1.grad)])
    for a, b in zip(*results, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
