"""Tiny models that exercise what Inductor generates for plate: shared by tests/test_models.py,
examples/compile_gpt.py and benchmarks/bench_compile.py. Sizes are small: every kernel runs on the
simulator."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F


class MLP(nn.Module):
    def __init__(self, d_in: int = 32, d_hidden: int = 64, d_out: int = 16):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d_in, d_hidden), nn.Linear(d_hidden, d_out)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class SmallCNN(nn.Module):
    """conv -> batchnorm -> relu -> max pool -> conv -> relu -> global average pool -> linear."""

    def __init__(self, channels: int = 8, classes: int = 10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, channels, 3, padding=1)
        self.bn = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)
        self.head = nn.Linear(channels, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv1(x))), 2)
        x = F.relu(self.conv2(x))
        return self.head(x.mean(dim=(2, 3)))


class Block(nn.Module):
    """Pre-norm transformer block: causal self-attention and a GELU MLP, each with a residual."""

    def __init__(self, d_model: int = 32, heads: int = 2):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.qkv, self.proj = nn.Linear(d_model, 3 * d_model), nn.Linear(d_model, d_model)
        self.fc1, self.fc2 = nn.Linear(d_model, 4 * d_model), nn.Linear(4 * d_model, d_model)

    def attention(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        causal = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
        y = torch.softmax(scores, dim=-1) @ v
        return self.proj(y.transpose(1, 2).reshape(b, t, d))

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


@dataclass(frozen=True)
class GPTConfig:
    vocab: int = 64
    context: int = 32
    d_model: int = 32
    heads: int = 2
    layers: int = 2


class GPT(nn.Module):
    """A GPT-style decoder: token + position embeddings, blocks, final layer norm, tied head."""

    def __init__(self, config: GPTConfig = GPTConfig()):
        super().__init__()
        self.config = config
        self.tokens = nn.Embedding(config.vocab, config.d_model)
        self.positions = nn.Embedding(config.context, config.d_model)
        self.blocks = nn.ModuleList(Block(config.d_model, config.heads) for _ in range(config.layers))
        self.ln = nn.LayerNorm(config.d_model)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tokens(idx) + self.positions(torch.arange(t, device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.ln(x) @ self.tokens.weight.t()


class EmbeddingHead(nn.Module):
    """Embedding, a linear classifier, cross-entropy: the loss is the output."""

    def __init__(self, vocab: int = 64, d_model: int = 32):
        super().__init__()
        self.embed, self.head = nn.Embedding(vocab, d_model), nn.Linear(d_model, vocab)

    def forward(self, idx, targets):
        logits = self.head(self.embed(idx))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def example_inputs(name: str, generator: torch.Generator | None = None, seq: int = 8) -> tuple:
    """CPU inputs of the suite's model ``name`` (move them to plate with .to("plate"))."""
    g = generator or torch.Generator().manual_seed(0)
    table = {
        "mlp": lambda: (torch.randn(8, 32, generator=g),),
        "cnn": lambda: (torch.randn(2, 3, 8, 8, generator=g),),
        "block": lambda: (torch.randn(2, seq, 32, generator=g),),
        "gpt": lambda: (torch.randint(0, 64, (2, seq), generator=g),),
        "embedding_ce": lambda: tuple(torch.randint(0, 64, (2, seq), generator=g) for _ in range(2)),
    }
    return table[name]()


MODELS = {"mlp": MLP, "cnn": SmallCNN, "block": Block, "gpt": GPT, "embedding_ce": EmbeddingHead}


def build(name: str, seed: int = 0, **kwargs) -> nn.Module:
    """The suite's model ``name`` (constructor ``kwargs``) with weights drawn from ``seed``, on the CPU."""
    torch.manual_seed(seed)
    return MODELS[name](**kwargs)
