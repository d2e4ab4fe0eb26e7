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
