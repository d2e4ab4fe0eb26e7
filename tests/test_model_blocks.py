"""torch.compile on plate runs the blocks of today's published models, against the same block in CPU eager: a
Llama-style decoder block (RMSNorm, rotary embeddings, causal scaled-dot-product attention, SwiGLU) with a
sequence length marked dynamic, its backward, and AdamW steps compiled as torch.compile(optimizer.step), the way
training scripts compile their optimizer. Nothing of it runs on the host."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch._dynamo.utils import counters

import inductor_plate

TOL = {"rtol": 2e-4, "atol": 2e-4}


@pytest.fixture(scope="module", autouse=True)
def mini(plate_mini_module):
    return plate_mini_module


pytestmark = pytest.mark.usefixtures("fresh_compile")


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(1 + 0.1 * torch.randn(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate(x, cos, sin):
    half = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., half:], x[..., :half]), dim=-1) * sin


class DecoderBlock(nn.Module):
    def __init__(self, dim: int = 32, heads: int = 4, hidden: int = 64, context: int = 32):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.attn_norm, self.mlp_norm = RMSNorm(dim), RMSNorm(dim)
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(dim, dim, bias=False) for _ in range(4))
        self.gate, self.up = nn.Linear(dim, hidden, bias=False), nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)
        inv_freq = 1.0 / 10000 ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim)
        angles = torch.outer(torch.arange(context).float(), inv_freq).repeat(1, 2)
        self.register_buffer("cos", angles.cos())
        self.register_buffer("sin", angles.sin())

    def forward(self, x):
        b, t, d = x.shape
        h = self.attn_norm(x)
        q, k, v = (w(h).view(b, t, self.heads, self.head_dim).transpose(1, 2) for w in (self.wq, self.wk, self.wv))
        q, k = rotate(q, self.cos[:t], self.sin[:t]), rotate(k, self.cos[:t], self.sin[:t])
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.wo(y.transpose(1, 2).reshape(b, t, d))
        h = self.mlp_norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


def test_decoder_block_trains_with_a_dynamic_sequence_and_a_compiled_adamw_step():
    torch.manual_seed(0)
    cpu = DecoderBlock()
    dev = copy.deepcopy(cpu).to("plate")
    compiled = torch.compile(dev)
    opt_cpu = torch.optim.AdamW(cpu.parameters(), lr=1e-2)
    opt_dev = torch.optim.AdamW(dev.parameters(), lr=torch.tensor(1e-2))  # a tensor lr: no recompile per step
    step = torch.compile(opt_dev.step)
    for seq in (8, 13):
        x = torch.randn(2, seq, 32)
        x_dev = x.to("plate")
        torch._dynamo.mark_dynamic(x_dev, 1)
        opt_cpu.zero_grad()
        opt_dev.zero_grad()
        out_cpu, out_dev = cpu(x), compiled(x_dev)
        torch.testing.assert_close(out_dev.cpu(), out_cpu, **TOL)
        out_cpu.square().mean().backward()
        out_dev.square().mean().backward()
        for (name, p_cpu), p_dev in zip(cpu.named_parameters(), dev.parameters(), strict=True):
            torch.testing.assert_close(p_dev.grad.cpu(), p_cpu.grad, **TOL, msg=lambda m, n=name: f"grad {n}: {m}")
        opt_cpu.step()
        step()
    for (name, p_cpu), p_dev in zip(cpu.named_parameters(), dev.parameters(), strict=True):
        torch.testing.assert_close(p_dev.detach().cpu(), p_cpu.detach(), **TOL, msg=lambda m, n=name: f"{n}: {m}")
    assert counters["stats"]["unique_graphs"] == 2  # the block (one graph for both lengths) and the step
    assert inductor_plate.host_fallbacks() == {}
