"""nn.TransformerEncoderLayer's fast path (eval, no grad: aten._transformer_encoder_layer_fwd) compiled on plate is
Inductor's kernels (inductor_plate/encoder_layer.py), not a call of the op's eager plate kernels, with CPU eager's
values."""

from __future__ import annotations

import pytest
import torch
from torch._inductor.utils import run_and_get_code

import inductor_plate


@pytest.mark.parametrize("norm_first, activation", [(True, "gelu"), (False, "relu")])
def test_compiled_encoder_layer_fast_path_is_decomposed(norm_first, activation):
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(
        16, 2, 32, dropout=0.0, activation=activation, batch_first=True, norm_first=norm_first
    ).eval()
    x = torch.randn(2, 5, 16)
    with torch.no_grad():
        want = layer(x)
        plate = layer.to("plate")
        torch._dynamo.reset()
        inductor_plate.reset_host_fallbacks()
        out, code = run_and_get_code(torch.compile(plate), x.to("plate"))
    assert not any("aten._transformer_encoder_layer_fwd." in source for source in code)
    assert inductor_plate.host_fallbacks() == {}
    torch.testing.assert_close(out.cpu(), want, rtol=1e-5, atol=1e-5)
