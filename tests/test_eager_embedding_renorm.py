"""embedding_renorm_ on plate (eager_ops/embedding_renorm.py): F.embedding's max_norm against the CPU kernel (the
renormed weight, in place, and the lookup), with no host op; what the CPU refuses raises its error from the host."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from triton_plate_backend import eager_ops

eager_ops.register()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.5])
def test_embedding_max_norm_renorms_the_rows_it_looks_up_as_the_cpu(dtype, norm_type, no_host_ops):
    weight = (torch.randn(7, 5, generator=torch.Generator().manual_seed(5)) * 2).to(dtype)
    indices = torch.tensor([[0, 2, 2], [6, 0, 3]])  # repeated rows renorm once; rows 1, 4, 5 untouched
    expected_weight = weight.clone()
    expected = F.embedding(indices, expected_weight, max_norm=1.5, norm_type=norm_type)
    plate_weight = weight.to("plate")
    got = F.embedding(indices.to("plate"), plate_weight, max_norm=1.5, norm_type=norm_type)
    tol = {"rtol": 1e-2, "atol": 1e-2} if dtype in (torch.float16, torch.bfloat16) else {}
    torch.testing.assert_close(plate_weight.cpu(), expected_weight, **tol)
    torch.testing.assert_close(got.cpu(), expected, **tol)
    assert torch.equal(plate_weight.cpu()[[1, 4, 5]], weight[[1, 4, 5]])


def test_embedding_renorm_of_an_index_out_of_range_raises_the_cpus_error_from_the_host():
    torch.plate.reset_host_ops()
    weight = torch.randn(4, 3, device="plate")
    with pytest.raises(IndexError):
        torch.embedding_renorm_(weight, torch.tensor([1, 4], device="plate"), 1.0, 2.0)
    assert torch.plate.host_ops() == {"aten.embedding_renorm_": 1}
    torch.plate.reset_host_ops()
