"""torch.nn.attention.flex_attention on plate tensors (shims._flex_attention_device_check):
PyTorch 2.13 refuses every device outside {cuda, cpu, xpu, hpu, mps} before anything runs. Eager (the math
reference Dynamo traces) and compiled (Inductor's flex templates as plate Triton kernels), forward and
backward, against a float64 CPU reference, with nothing on the host."""

from __future__ import annotations

import pytest
import torch
from torch.nn.attention import flex_attention as flex_module
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

import inductor_plate

B, H, S, D = 1, 2, 128, 16  # 128: flex's default block size, the smallest sequence one block covers


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def relative_bias(score, b, h, q_idx, kv_idx):
    return score + (q_idx - kv_idx) * 0.05


def reference(q, k, v, grad_out):
    """Causal attention with relative_bias's bias, in float64 on the CPU: output and the three gradients."""
    q, k, v = (t.double().requires_grad_() for t in (q, k, v))
    idx = torch.arange(S)
    scores = q @ k.transpose(-1, -2) / D**0.5 + (idx[:, None] - idx[None, :]) * 0.05
    out = scores.masked_fill(idx[:, None] < idx[None, :], float("-inf")).softmax(-1) @ v
    out.backward(grad_out.double())
    return out.detach(), q.grad, k.grad, v.grad


def test_the_device_check_lets_plate_through_and_still_refuses_others():
    assert getattr(flex_module._validate_device, "_plate_patch", False)
    plate = torch.empty(1, device="plate")
    flex_module._validate_device(plate, plate, plate)
    meta = torch.empty(1, device="meta")
    with pytest.raises(ValueError, match="only supported on"):
        flex_module._validate_device(meta, meta, meta)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_flex_attention_forward_and_backward(compiled, no_host_ops):
    torch.manual_seed(0)
    q, k, v, grad_out = (torch.randn(B, H, S, D) for _ in range(4))
    torch._dynamo.reset()
    inductor_plate.reset_host_fallbacks()
    block_mask = create_block_mask(causal, B, H, S, S, device="plate")
    attention = torch.compile(flex_attention) if compiled else flex_attention
    inputs = [t.to("plate").requires_grad_() for t in (q, k, v)]
    out = attention(*inputs, score_mod=relative_bias, block_mask=block_mask)
    out.backward(grad_out.to("plate"))
    assert inductor_plate.host_fallbacks() == {}
    for got, want in zip([out, *(t.grad for t in inputs)], reference(q, k, v, grad_out)):
        torch.testing.assert_close(got.cpu().double(), want, rtol=2e-3, atol=2e-3)


def test_flex_decoding_short_query_compiles_on_plate(no_host_ops):
    """A short query takes Inductor's flex decoding lowering, whose KV split asked torch.cuda's SM count
    (shims._flex_decoding_split_k_per_device): GQA, 16 queries over 256 keys."""
    torch.manual_seed(0)
    q = torch.randn(1, 4, 16, D)
    k, v = (torch.randn(1, 2, 256, D) for _ in range(2))
    torch._dynamo.reset()
    inductor_plate.reset_host_fallbacks()
    out = torch.compile(flex_attention)(q.to("plate"), k.to("plate"), v.to("plate"), enable_gqa=True)
    assert inductor_plate.host_fallbacks() == {}
    k, v = (t.double().repeat_interleave(2, 1) for t in (k, v))
    want = (q.double() @ k.transpose(-1, -2) / D**0.5).softmax(-1) @ v
    torch.testing.assert_close(out.cpu().double(), want, rtol=2e-3, atol=2e-3)
