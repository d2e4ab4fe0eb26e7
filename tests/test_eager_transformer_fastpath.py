"""The transformer fast paths on plate (triton_plate_backend/eager_ops/transformer_fastpath.py): the fused
ops that nn.MultiheadAttention and nn.TransformerEncoderLayer call in eval mode without autograd, against the
CPU's kernels of the same ops, with the host-op counter at zero; calls the CPU refuses go to the host, which
raises torch's error."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from triton_plate_backend import eager_ops

eager_ops.register()
aten = torch.ops.aten
B, L, E, H = 2, 4, 8, 2


def plate(values):
    return [v.to("plate") if isinstance(v, torch.Tensor) else v for v in values]


def attention_args(mask, mask_type, need_weights, average, dtype=torch.float32):
    gen = torch.Generator().manual_seed(0)

    def rand(*shape, scale=1.0):
        return (torch.randn(*shape, generator=gen) * scale).to(dtype)

    q, k, v = rand(B, L, E), rand(B, L, E), rand(B, L, E)
    return [q, k, v, E, H, rand(3 * E, E, scale=0.3), rand(3 * E), rand(E, E, scale=0.3), rand(E), mask,
            need_weights, average, mask_type]  # fmt: skip


PADDING = torch.tensor([[False, False, True, True], [False, True, False, True]])
SCORES = torch.tensor(
    [[False, True, True, False], [False, False, True, True], [True, False, False, False]] + [[False] * 4]
)
MASKS = {
    "none": (None, None),
    "scores bool": (SCORES, 0),
    "scores float": (torch.zeros(L, L).masked_fill(SCORES, float("-inf")), 0),
    "padding bool": (PADDING, 1),
    "padding float": (torch.zeros(B, L).masked_fill(PADDING, float("-inf")), 1),
    "per head": (SCORES.expand(B, H, L, L), 2),
    "every key of a row dropped": (torch.tensor([[False, False, True, True], [True, True, True, True]]), 1),
}


@pytest.mark.parametrize("mask", list(MASKS))
@pytest.mark.parametrize("need_weights, average", [(True, True), (True, False), (False, True)])
def test_native_multi_head_attention_matches_the_cpu(mask, need_weights, average, no_host_ops):
    args = attention_args(*MASKS[mask], need_weights, average)
    expected = aten._native_multi_head_attention(*args)
    got = aten._native_multi_head_attention(*plate(args))
    assert got[0].device.type == "plate"
    torch.testing.assert_close(got[0].cpu(), expected[0], atol=1e-5, rtol=1e-4, equal_nan=True)
    assert (got[1] is None) == (expected[1] is None)
    if expected[1] is not None:
        torch.testing.assert_close(got[1].cpu(), expected[1], atol=1e-5, rtol=1e-4, equal_nan=True)


def test_a_nonzero_float_mask_drops_its_keys_as_the_cpus_kernel(no_host_ops):
    # the CPU kernel reads every mask as bool: 0.5 drops the key as -inf would
    args = attention_args(torch.zeros(L, L).masked_fill(SCORES, 0.5), 0, True, True)
    expected = aten._native_multi_head_attention(*attention_args(SCORES, 0, True, True))
    got = aten._native_multi_head_attention(*plate(args))
    torch.testing.assert_close(got[0].cpu(), expected[0], atol=1e-5, rtol=1e-4)


def test_half_attention_matches_the_cpu(no_host_ops):
    args = attention_args(None, None, True, True, dtype=torch.float16)
    expected = aten._native_multi_head_attention(*[a.float() if isinstance(a, torch.Tensor) else a for a in args])
    got = aten._native_multi_head_attention(*plate(args))
    assert got[0].dtype == torch.float16
    torch.testing.assert_close(got[0].cpu().float(), expected[0], atol=2e-2, rtol=1e-2)


@pytest.mark.parametrize(
    "change, error",
    [
        ({9: PADDING, 12: None}, "Mask Type should be defined"),  # a mask without its type
        ({1: torch.zeros(B, L - 1, E), 2: torch.zeros(B, L - 1, E)}, "shapes to match"),
    ],
)
def test_calls_the_cpu_refuses_go_to_the_host_which_raises_torchs_error(change, error):
    args = attention_args(None, None, True, True)
    for i, value in change.items():
        args[i] = value
    with pytest.raises(RuntimeError, match=error):
        aten._native_multi_head_attention(*args)
    torch.plate.reset_host_ops()
    with pytest.raises(RuntimeError, match=error):
        aten._native_multi_head_attention(*plate(args))
    assert torch.plate.host_ops() == {"aten._native_multi_head_attention": 1}


@pytest.mark.parametrize("batch_first", [True, False])
def test_multihead_attention_in_eval_takes_the_fast_path_on_plate(batch_first, no_host_ops):
    torch.manual_seed(0)
    module = nn.MultiheadAttention(E, H, batch_first=batch_first).eval()
    x = torch.randn(3, 5, E)
    on_plate = copy.deepcopy(module).to("plate")
    with torch.no_grad():
        expected = module(x, x, x)
        torch.plate.reset_host_ops()
        got = on_plate(*plate([x, x, x]))
    torch.testing.assert_close(got[0].cpu(), expected[0], atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(got[1].cpu(), expected[1], atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_transformer_encoder_layer_fast_path_matches_the_cpu(norm_first, activation, no_host_ops):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(
        E, H, 16, dropout=0.0, activation=activation, batch_first=True, norm_first=norm_first
    ).eval()
    x, mask = torch.randn(B, 5, E), torch.rand(5, 5) > 0.6
    mask.fill_diagonal_(False)
    on_plate = copy.deepcopy(layer).to("plate")
    with torch.no_grad():
        expected = layer(x, src_mask=mask)
        got = on_plate(x.to("plate"), src_mask=mask.to("plate"))
    torch.testing.assert_close(got.cpu(), expected, atol=1e-5, rtol=1e-4)
    assert torch.plate.host_ops() == {}
