"""Complex tensors through their real views (eager_ops/complex_views.py): cat, sum, mean, index and conj_physical
of complex64 / complex128 plate tensors against the CPU (values, dtype, shape, strides), with no host op."""

from __future__ import annotations

import pytest
import torch

from triton_plate_backend import eager_ops

eager_ops.register()

CASES = {
    "sum": lambda c: c.sum(),
    "sum dims": lambda c: c.sum((0, -1)),
    "sum keepdim": lambda c: c.sum(1, keepdim=True),
    "sum of a 0-dim": lambda c: c[0, 0, 0].sum(),
    "mean dims": lambda c: c.mean((0, 2), keepdim=True),
    "mean": lambda c: c.mean(),
    "cat": lambda c: torch.cat([c, c[:, :2]], 1),
    "cat last dim": lambda c: torch.cat([c, c], -1),
    "stack": lambda c: torch.stack([c, c], 1),
    "cat promoting real and integer tensors": lambda c: torch.cat([c.real, c, c.imag.long()], 2),
    "conj_physical": lambda c: c.conj_physical(),
    "conj_physical transposed": lambda c: c.transpose(0, 2).conj_physical(),
    "a lazy conjugate summed": lambda c: c.conj().sum(0),
    "index": lambda c: c[torch.tensor([0, 2])],
    "index a middle dim": lambda c: c[:, torch.tensor([3, 1])],
    "index by a mask": lambda c: c[c.real > 0],
    "index two dims apart": lambda c: c[torch.tensor([0, 1]), :, torch.tensor([4, 4])],
    "vdot": lambda c: torch.vdot(c.flatten(), c.flatten() * 2),
    "angle": lambda c: torch.angle(c.transpose(0, 1)),
    "bmm": lambda c: c @ c.mT,
    "mm of a lazy conjugate": lambda c: c[0] @ c[1].conj().T,
    "einsum": lambda c: torch.einsum("bij,bkj->ik", c, c),
}


def expected_layout(t: torch.Tensor):
    return t.dtype, t.shape, t.stride()


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=str)
def test_complex_ops_on_real_views_match_the_cpu(name, dtype, no_host_ops):
    c = torch.randn(3, 4, 5, dtype=dtype, generator=torch.Generator().manual_seed(6))
    expected = CASES[name](c)
    got = CASES[name](c.to("plate"))
    assert (got.device.type, got.dtype, got.shape, got.stride()) == ("plate", *expected_layout(expected))
    torch.testing.assert_close(got.cpu(), expected)  # matmuls: within float tolerance of the CPU's cgemm order


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=str)
def test_complex_sgn_and_a_matmuls_gradient_match_the_cpu(dtype, no_host_ops):
    c = torch.randn(4, 5, dtype=dtype, generator=torch.Generator().manual_seed(9))
    c[0, :3] = torch.tensor([0, complex(float("inf"), 1), complex(float("nan"), 0)], dtype=dtype)
    torch.testing.assert_close(torch.sgn(c.to("plate")).cpu(), torch.sgn(c), equal_nan=True)  # z / hypot(z)
    grads = []
    for device in ("cpu", "plate"):
        x = c[1:].to(device, copy=True).requires_grad_()
        (x @ x.mT).real.sum().backward()
        grads.append(x.grad.cpu())
    torch.testing.assert_close(*grads)


def test_complex_matmul_of_shapes_that_do_not_multiply_raises_torchs_error():
    c = torch.randn(5, 7, dtype=torch.complex64, device="plate")
    torch.plate.reset_host_ops()
    with pytest.raises(RuntimeError, match=r"shapes cannot be multiplied \(5x7 and 5x7\)"):
        c @ c
    torch.plate.reset_host_ops()


def test_a_complex_cat_of_mismatched_shapes_raises_torchs_error():
    c = torch.randn(2, 3, dtype=torch.complex64, device="plate")
    torch.plate.reset_host_ops()
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 0"):
        torch.cat([c, c[:, :2]])
    assert torch.plate.host_ops() == {"aten.cat": 1}  # the real views' cat, sent to the host, raises it
    torch.plate.reset_host_ops()


def test_a_sum_into_another_dtype_stays_the_kernels_which_runs_it_on_the_host():
    torch.plate.reset_host_ops()
    c = torch.randn(2, 3, dtype=torch.complex64)
    torch.testing.assert_close(c.to("plate").sum(dtype=torch.complex128).cpu(), c.sum(dtype=torch.complex128))
    assert torch.plate.host_ops() == {"aten.sum": 1}
    torch.plate.reset_host_ops()
