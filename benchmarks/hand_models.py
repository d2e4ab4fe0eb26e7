"""Small models written the way users write them (no library), for probe_models.py: each builder returns
(module, inputs, inputs of another batch size). Kinds the library models of probe_models.py do not cover: a
Llama-style block with a KV cache written by index_copy_, a mixture-of-experts layer that routes by topk and
combines by index_add_, a CNN of BatchNorm/GroupNorm/depthwise convs and adaptive pooling, recurrent cells in a
Python loop (and nn.LSTM/nn.GRU), a ViT patch embedding by unfold and nn.TransformerEncoderLayer, and losses
(cross_entropy with label smoothing and ignore_index, BCE with logits, smooth L1). Random weights from the caller's
seed; torch is imported on first use (after PLATE_MACHINE is set)."""

from __future__ import annotations

import math

D = 64  # model width
SEQ = 16


def llama_block():
    import torch
    import torch.nn.functional as F
    from torch import nn

    class RMSNorm(nn.Module):
        def __init__(self, dim, eps=1e-6):
            super().__init__()
            self.eps, self.weight = eps, nn.Parameter(torch.ones(dim))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight

    def rope(x, cos, sin):  # x: (B, H, T, hd), rotate pairs of halves
        x1, x2 = x.chunk(2, dim=-1)
        return x * cos + torch.cat((-x2, x1), dim=-1) * sin

    class Block(nn.Module):
        """One decoder layer, gpt-fast style: a static KV cache of MAX positions written at input_pos by
        index_copy_, attention over the whole cache with a mask (stale positions masked out)."""

        MAX = 32

        def __init__(self, heads=4, kv_heads=2):
            super().__init__()
            self.h, self.kvh, self.hd = heads, kv_heads, D // heads
            self.norm1, self.norm2 = RMSNorm(D), RMSNorm(D)
            self.wq = nn.Linear(D, D, bias=False)
            self.wkv = nn.Linear(D, 2 * kv_heads * self.hd, bias=False)
            self.wo = nn.Linear(D, D, bias=False)
            self.w1, self.w3 = nn.Linear(D, 2 * D, bias=False), nn.Linear(D, 2 * D, bias=False)
            self.w2 = nn.Linear(2 * D, D, bias=False)
            inv = 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd))
            freqs = torch.outer(torch.arange(self.MAX).float(), inv)
            self.register_buffer("cos", torch.cat((freqs, freqs), -1).cos(), persistent=False)
            self.register_buffer("sin", torch.cat((freqs, freqs), -1).sin(), persistent=False)
            shape = (2, kv_heads, self.MAX, self.hd)
            self.register_buffer("k_cache", torch.zeros(shape), persistent=False)
            self.register_buffer("v_cache", torch.zeros(shape), persistent=False)

        def forward(self, x, input_pos):
            b, t, _ = x.shape
            h = self.norm1(x)
            q = self.wq(h).view(b, t, self.h, self.hd).transpose(1, 2)
            k, v = self.wkv(h).view(b, t, 2, self.kvh, self.hd).permute(2, 0, 3, 1, 4)
            cos, sin = self.cos[input_pos], self.sin[input_pos]
            q, k = rope(q, cos, sin), rope(k, cos, sin)
            kc = self.k_cache[:b].index_copy_(2, input_pos, k)
            vc = self.v_cache[:b].index_copy_(2, input_pos, v)
            kc = kc.repeat_interleave(self.h // self.kvh, dim=1)
            vc = vc.repeat_interleave(self.h // self.kvh, dim=1)
            mask = torch.arange(self.MAX, device=x.device)[None, :] <= input_pos[:, None]
            a = F.scaled_dot_product_attention(q, kc, vc, attn_mask=mask)
            x = x + self.wo(a.transpose(1, 2).reshape(b, t, D))
            h = self.norm2(x)
            return x + self.w2(F.silu(self.w1(h)) * self.w3(h))

    class Causal(nn.Module):
        """The same block's MLP and a causal SDPA without a cache (is_causal=True): the training form."""

        def __init__(self):
            super().__init__()
            self.block = Block()

        def forward(self, x):
            blk, (b, t, _) = self.block, x.shape
            h = blk.norm1(x)
            q = blk.wq(h).view(b, t, blk.h, blk.hd).transpose(1, 2)
            k, v = blk.wkv(h).view(b, t, 2, blk.kvh, blk.hd).permute(2, 0, 3, 1, 4)
            q, k = rope(q, blk.cos[:t], blk.sin[:t]), rope(k, blk.cos[:t], blk.sin[:t])
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            x = x + blk.wo(a.transpose(1, 2).reshape(b, t, D))
            h = blk.norm2(x)
            return x + blk.w2(F.silu(blk.w1(h)) * blk.w3(h))

    return Block, Causal


def llama_kv():
    import torch

    block, _ = llama_block()
    return block(), (torch.randn(2, SEQ, D), torch.arange(SEQ)), (torch.randn(1, SEQ - 4, D), torch.arange(SEQ - 4))


def llama_causal():
    import torch

    _, causal = llama_block()
    return causal(), (torch.randn(2, SEQ, D),), (torch.randn(3, SEQ - 4, D),)


def moe():
    import torch
    import torch.nn.functional as F
    from torch import nn

    class MoE(nn.Module):
        """Top-2 of 4 experts, no data-dependent shapes: every (token, choice) pair gathers its expert's
        weights, the outputs scaled by the renormalised gate and summed back per token by index_add_; the
        gate's load-balancing loss from a scatter_add_ of the choices."""

        def __init__(self, experts=4, k=2, hidden=2 * D):
            super().__init__()
            self.k, self.experts = k, experts
            self.gate = nn.Linear(D, experts, bias=False)
            self.w1 = nn.Parameter(torch.randn(experts, D, hidden) / math.sqrt(D))
            self.w2 = nn.Parameter(torch.randn(experts, hidden, D) / math.sqrt(hidden))

        def forward(self, x):
            b, t, _ = x.shape
            x = x.reshape(b * t, D)
            probs = F.softmax(self.gate(x), dim=-1)
            top_p, top_e = probs.topk(self.k, dim=-1)
            top_p = top_p / top_p.sum(-1, keepdim=True)
            token = torch.arange(b * t, device=x.device).repeat_interleave(self.k)
            e = top_e.reshape(-1)
            h = F.gelu(torch.bmm(x[token].unsqueeze(1), self.w1[e]))
            y = torch.bmm(h, self.w2[e]).squeeze(1) * top_p.reshape(-1, 1)
            out = torch.zeros_like(x).index_add_(0, token, y.to(x.dtype))  # y: bf16 under autocast
            counts = x.new_zeros(self.experts).scatter_add_(0, e, torch.ones_like(e, dtype=x.dtype))
            aux = (counts / e.numel() * probs.mean(0)).sum() * self.experts
            return out.reshape(b, t, D) + aux

    return MoE(), (torch.randn(2, SEQ, D),), (torch.randn(3, SEQ - 4, D),)


def convnet():
    import torch
    from torch import nn

    def dw_block(c, groups):
        return nn.Sequential(
            nn.Conv2d(c, c, 3, padding=1, groups=c, bias=False),  # depthwise
            nn.BatchNorm2d(c),
            nn.SiLU(),
            nn.Conv2d(c, 2 * c, 1, bias=False),  # pointwise
            nn.GroupNorm(groups, 2 * c),
            nn.ReLU6(),
        )

    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, stride=2, padding=1, bias=False),
        nn.BatchNorm2d(16),
        nn.Hardswish(),
        dw_block(16, 4),
        nn.MaxPool2d(2),
        dw_block(32, 8),
        nn.AdaptiveAvgPool2d(3),  # 8 x 8 -> 3 x 3: overlapping, uneven windows
        nn.Flatten(),
        nn.Dropout(0.1),
        nn.Linear(64 * 9, 10),
    )
    with torch.no_grad():  # BatchNorm's running statistics other than 0/1: eval mode uses them
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
    return model, (torch.randn(2, 3, 32, 32),), (torch.randn(3, 3, 32, 32),)


def rnn_cells():
    import torch
    from torch import nn

    class Cells(nn.Module):
        """An LSTMCell and a GRUCell stepped in a Python loop over time (unrolled by Dynamo)."""

        def __init__(self, hidden=32):
            super().__init__()
            self.lstm, self.gru = nn.LSTMCell(D, hidden), nn.GRUCell(hidden, hidden)
            self.head = nn.Linear(hidden, 8)

        def forward(self, x):  # (B, T, D)
            b = x.shape[0]
            h = c = g = x.new_zeros(b, self.lstm.hidden_size)
            outs = []
            for t in range(x.shape[1]):
                h, c = self.lstm(x[:, t], (h, c))
                g = self.gru(h, g)
                outs.append(g)
            return self.head(torch.stack(outs, 1))

    return Cells(), (torch.randn(2, 8, D),), (torch.randn(3, 8, D),)


def rnn_modules():
    import torch
    from torch import nn

    class Seq(nn.Module):
        """nn.LSTM (2 layers, bidirectional) then nn.GRU, batch_first."""

        def __init__(self, hidden=32):
            super().__init__()
            self.lstm = nn.LSTM(D, hidden, num_layers=2, batch_first=True, bidirectional=True)
            self.gru = nn.GRU(2 * hidden, hidden, batch_first=True)

        def forward(self, x):
            y, _ = self.lstm(x)
            y, h = self.gru(y)
            return y + h.transpose(0, 1)

    return Seq(), (torch.randn(2, 8, D),), (torch.randn(3, 8, D),)


def vit_tiny():
    import torch
    import torch.nn.functional as F
    from torch import nn

    class ViT(nn.Module):
        """Patches by F.unfold + Linear, a class token, learned positions, two nn.TransformerEncoderLayer
        (pre-norm, GELU, batch_first: eval mode without grad takes PyTorch's fused encoder fast path), a
        LayerNorm and a head on the class token."""

        def __init__(self, side=32, patch=8):
            super().__init__()
            self.patch = patch
            n = (side // patch) ** 2
            self.embed = nn.Linear(3 * patch * patch, D)
            self.cls = nn.Parameter(torch.randn(1, 1, D) * 0.02)
            self.pos = nn.Parameter(torch.randn(1, n + 1, D) * 0.02)
            layer = nn.TransformerEncoderLayer(D, 4, 2 * D, dropout=0.0, activation="gelu", batch_first=True)
            layer.norm_first = True
            self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(D)
            self.head = nn.Linear(D, 10)

        def forward(self, x):
            p = F.unfold(x, self.patch, stride=self.patch).transpose(1, 2)  # (B, N, 3 * patch^2)
            x = torch.cat((self.cls.expand(x.shape[0], -1, -1), self.embed(p)), 1) + self.pos
            return self.head(self.norm(self.encoder(x))[:, 0])

    return ViT(), (torch.randn(2, 3, 32, 32),), (torch.randn(3, 3, 32, 32),)


def losses():
    import torch
    import torch.nn.functional as F
    from torch import nn

    class Losses(nn.Module):
        """A linear classifier's logits under the losses a training loop uses: cross_entropy with label
        smoothing and ignore_index (targets of -100 skipped), per-sample (reduction='none'), BCE with logits
        (pos_weight), smooth L1, KL divergence of log-softmaxes."""

        def __init__(self, classes=10):
            super().__init__()
            self.fc = nn.Linear(D, classes)
            self.register_buffer("pos_weight", torch.linspace(0.5, 2.0, classes))

        def forward(self, x, target):
            logits = self.fc(x)  # (B, T, C)
            flat = logits.reshape(-1, logits.shape[-1])
            ce = F.cross_entropy(flat, target.reshape(-1), label_smoothing=0.1, ignore_index=-100)
            per = F.cross_entropy(logits.transpose(1, 2), target, ignore_index=-100, reduction="none")
            onehot = F.one_hot(target.clamp(min=0), logits.shape[-1]).float()
            bce = F.binary_cross_entropy_with_logits(logits, onehot, pos_weight=self.pos_weight)
            sl1 = F.smooth_l1_loss(logits.tanh(), onehot, beta=0.5)
            kl = F.kl_div(F.log_softmax(logits, -1), F.log_softmax(logits.detach() * 0.5, -1), log_target=True,
                          reduction="batchmean")  # fmt: skip
            return torch.stack([ce, bce, sl1, kl]), per

    def make(b, t):
        target = torch.randint(0, 10, (b, t))
        target[0, :3] = -100
        return torch.randn(b, t, D), target

    return Losses(), make(2, SEQ), make(3, SEQ - 4)


MODELS = {
    "hand_llama_kv": llama_kv,
    "hand_llama_causal": llama_causal,
    "hand_moe": moe,
    "hand_convnet": convnet,
    "hand_rnn_cells": rnn_cells,
    "hand_rnn_modules": rnn_modules,
    "hand_vit": vit_tiny,
    "hand_losses": losses,
}
