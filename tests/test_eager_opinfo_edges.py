"""Edge inputs PyTorch's OpInfo reference inputs give every device (test_ops.py's test_compare_cpu, run on plate by
``python -m upstream.runner ops``): empty batches of 0 x 0 matrices for the linalg kernels (linalg.py flattens batch
dims without ``reshape(-1, ...)``, which torch refuses for them), and the 2-norm of a 0-dim tensor over dim 0 (torch
wraps that dim). Against the CPU, with the host-op counter at zero."""

from __future__ import annotations

import pytest
import torch

from triton_plate_backend import eager_ops

eager_ops.register()


def _spd(a):
    return a @ a.mT + torch.eye(a.shape[-1], device=a.device)


def _well_conditioned(a):
    return a + 3 * torch.eye(a.shape[-1], device=a.device)


LINALG = {
    "inv": lambda a: torch.linalg.inv(_well_conditioned(a)),
    "det": torch.linalg.det,
    "cholesky": lambda a: torch.linalg.cholesky(_spd(a)),
    "solve": lambda a: torch.linalg.solve(_well_conditioned(a), a),
    "qr": lambda a: torch.linalg.qr(a).R,
    "eigvalsh": lambda a: torch.linalg.eigvalsh(a + a.mT),
    "solve_triangular": lambda a: torch.linalg.solve_triangular(_well_conditioned(a.triu()), a, upper=True),
    "lu_solve": lambda a: torch.linalg.lu_solve(*torch.linalg.lu_factor(_well_conditioned(a)), a),
}


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0), (0, 3, 3), (2, 3, 3)])
@pytest.mark.parametrize("name", sorted(LINALG))
def test_linalg_on_empty_batches_matches_the_cpu(name, shape, no_host_ops):
    a = torch.randn(shape)
    got, want = LINALG[name](a.to("plate")), LINALG[name](a)
    assert got.device.type == "plate" and got.shape == want.shape
    torch.testing.assert_close(got.cpu(), want, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("options", [{"dim": 0, "keepdim": True}, {"dim": -1}, {"dim": (0,)}, {}])
def test_vector_norm_of_a_0_dim_tensor_matches_the_cpu(options, no_host_ops):
    x = torch.tensor(-3.0)
    got, want = torch.linalg.vector_norm(x.to("plate"), **options), torch.linalg.vector_norm(x, **options)
    assert got.shape == want.shape
    torch.testing.assert_close(got.cpu(), want)
