"""nn.TransformerEncoderLayer's fused fast path decomposed on plate, so that Inductor compiles the layer.

In eval mode without grad, ``nn.TransformerEncoderLayer`` calls ``aten._transformer_encoder_layer_fwd`` (the
"fast path", taken for PrivateUse1 devices as for CUDA, under torch.compile too). Inductor has no lowering for it
and calls the device's kernel: on plate its eager ops, a dozen launches per layer outside Inductor's fusion
(softmax and the products as separate eager kernels). Here it is ATen's arithmetic (native/transformers/
transformer.cpp: layer norms, ``_native_multi_head_attention`` without weights, the feed-forward with GELU or
ReLU, the residual adds) in ops Inductor lowers; the attention is ``scaled_dot_product_attention`` (which ATen's
multi-head attention without weights calls too). Masked or nested inputs keep the fallback (NotImplemented);
other devices keep the table's previous entry (decompositions.install)."""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

from . import decompositions

aten = torch.ops.aten


def _attention(x, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias):
    b, t, _ = x.shape
    q, k, v = F.linear(x, qkv_weight, qkv_bias).view(b, t, 3, num_heads, embed_dim // num_heads).unbind(2)
    out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
    return F.linear(out.transpose(1, 2).reshape(b, t, embed_dim), proj_weight, proj_bias)


def encoder_layer(
    src,
    embed_dim,
    num_heads,
    qkv_weight,
    qkv_bias,
    proj_weight,
    proj_bias,
    use_gelu,
    norm_first,
    eps,
    norm_weight_1,
    norm_bias_1,
    norm_weight_2,
    norm_bias_2,
    ffn_weight_1,
    ffn_bias_1,
    ffn_weight_2,
    ffn_bias_2,
    mask=None,
    mask_type=None,
):
    if src.device.type != "plate" or src.is_nested or mask is not None or src.dim() != 3:
        return NotImplemented

    def norm1(x):
        return F.layer_norm(x, (embed_dim,), norm_weight_1, norm_bias_1, eps)

    def norm2(x):
        return F.layer_norm(x, (embed_dim,), norm_weight_2, norm_bias_2, eps)

    x = norm1(src) if norm_first else src
    x = _attention(x, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias) + src
    if not norm_first:
        x = norm1(x)
    h = F.linear(norm2(x) if norm_first else x, ffn_weight_1, ffn_bias_1)
    x = F.linear(F.gelu(h) if use_gelu else F.relu(h), ffn_weight_2, ffn_bias_2) + x
    return x if norm_first else norm2(x)


DECOMPOSITIONS = {aten._transformer_encoder_layer_fwd.default: encoder_layer}


@functools.cache
def register() -> None:
    """Put the decomposition in Inductor's table (once; inductor_plate.register)."""
    decompositions.install(DECOMPOSITIONS, "_plate_encoder_layer")
