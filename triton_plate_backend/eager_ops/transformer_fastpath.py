"""The fused ops of torch's transformer fast paths, as their math over plate kernels.

In eval mode without autograd, ``nn.MultiheadAttention`` calls ``torch._native_multi_head_attention`` and
``nn.TransformerEncoderLayer`` calls ``torch._transformer_encoder_layer_fwd`` on CPU, CUDA and the PrivateUse1
device (torch's ``_supported_devices``), so plate takes those paths too. Both ops have CPU and CUDA kernels
only; here they are the same computation as ATen's kernels (native/transformers/attention.cpp,
transformer.cpp), each step a plate kernel (linear, matmul, softmax, layer norm, gelu/relu):

- ``native_mha``: q, k, v projected by the three row blocks of ``qkv_weight`` and ``qkv_bias``; q scaled by
  1/sqrt(head_dim); scores q @ k^T per head; the mask (True, or for a float mask nonzero, drops the key:
  -inf, as the CPU kernel reads every mask as bool; nn.MultiheadAttention passes 0 / -inf) broadcast by
  ``mask_type`` (0: (L, S) for every batch and head, 1: a (B, S) key padding mask, 2:
  (B, H, L, S)); softmax over the keys (a row with every key dropped is NaN, as the CPU's); the heads'
  contexts concatenated and projected by ``proj_weight``/``proj_bias``. The weights returned: none unless
  ``need_weights``, else per head, or their mean over heads when ``average_attn_weights``.
- ``transformer_encoder_layer``: self-attention as above plus the residual, the feed-forward block (linear,
  gelu or relu, linear) plus its residual, each block's layer norm before it (``norm_first``) or after its
  residual.

Calls the CPU kernel refuses, nested (jagged) inputs and tensors of another device run on the host,
counted (the host raises torch's error)."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from ..torch_device.accumulation import tensors_in
from .ops import Call
from .table import Row


def _on_plate(call: Call) -> bool:
    tensors = list(tensors_in(call.bound.values()))
    return all(t.device.type == "plate" and not t.is_nested for t in tensors)


def _mask_shape(mask_type: int, batch: int, heads: int, length: int) -> tuple[int, ...] | None:
    """The shape of a mask of ``mask_type`` over self-attention scores (batch, heads, length, length): 0 one
    (L, S) mask for every batch and head, 1 a (B, S) key padding mask, 2 a (B, H, L, S) mask; None: another."""
    return {0: (length, length), 1: (batch, length), 2: (batch, heads, length, length)}.get(mask_type)


def _refused(query, key, value, embed_dim, num_head, qkv_weight, mask, mask_type) -> bool:
    """The calls the CPU kernel refuses (it raises torch's error on the host), and nested tensors."""
    if query.dim() != 3 or key.shape != query.shape or value.shape != query.shape or query.shape[-1] != embed_dim:
        return True
    if num_head <= 0 or embed_dim % num_head or qkv_weight.shape != (3 * embed_dim, embed_dim):
        return True
    if mask is None:
        return False
    batch, length, _ = query.shape
    return mask.shape != _mask_shape(mask_type, batch, num_head, length)


def _attention(query, key, value, embed_dim, num_head, qkv_weight, qkv_bias, proj_weight, proj_bias, mask,
               need_weights, average_attn_weights, mask_type):  # fmt: skip
    """ATen's multi_head_attention on plate tensors: (output (B, L, E), weights or None)."""
    batch, length, _ = query.shape
    head_dim = embed_dim // num_head
    w_q, w_k, w_v = qkv_weight.chunk(3)
    b_q, b_k, b_v = qkv_bias.chunk(3) if qkv_bias is not None else (None, None, None)

    def heads(x, w, b):  # (B, T, E) -> (B, H, T, head_dim)
        return F.linear(x, w, b).view(x.shape[0], x.shape[1], num_head, head_dim).transpose(1, 2)

    q = heads(query, w_q, b_q) / math.sqrt(head_dim)
    k, v = heads(key, w_k, b_k), heads(value, w_v, b_v)
    scores = q @ k.transpose(-2, -1)  # (B, H, L, S)
    if mask is not None:
        # over the scores (B, H, L, S)
        mask = mask.view({0: (1, 1, length, length), 1: (batch, 1, 1, length)}.get(mask_type, mask.shape))
        scores = scores.masked_fill(mask if mask.dtype == torch.bool else mask != 0, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    context = (weights @ v).transpose(1, 2).reshape(batch, length, embed_dim)
    out = F.linear(context, proj_weight, proj_bias)
    if not need_weights:
        return out, None
    return out, (weights.mean(dim=1) if average_attn_weights else weights)


CHECKED = ("query", "key", "value", "embed_dim", "num_head", "qkv_weight", "mask", "mask_type")


def native_mha(op: torch._ops.OpOverload, row: Row) -> Callable:
    """_native_multi_head_attention(query, key, value, embed_dim, num_head, qkv_weight, qkv_bias, proj_weight,
    proj_bias, mask, need_weights, average_attn_weights, mask_type) -> (output, weights)."""

    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        if not _on_plate(call) or _refused(*(call[name] for name in CHECKED)):
            return call.on_host()
        return _attention(*(call[a.name] for a in op._schema.arguments))

    return kernel


def transformer_encoder_layer(op: torch._ops.OpOverload, row: Row) -> Callable:
    """_transformer_encoder_layer_fwd(src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias,
    use_gelu, norm_first, eps, norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2, ffn_weight_1, ffn_bias_1,
    ffn_weight_2, ffn_bias_2, mask, mask_type) -> output."""

    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        src = call["src"]
        checked = (src, src, src, call["embed_dim"], call["num_heads"], call["qkv_weight"], call["mask"])
        if not _on_plate(call) or _refused(*checked, call["mask_type"]):
            return call.on_host()
        eps, norm_first = call["eps"], call["norm_first"]
        embed_dim = call["embed_dim"]

        def norm(x, i):
            return F.layer_norm(x, (embed_dim,), call[f"norm_weight_{i}"], call[f"norm_bias_{i}"], eps)

        x = norm(src, 1) if norm_first else src
        x = _attention(
            x, x, x, embed_dim, call["num_heads"], call["qkv_weight"], call["qkv_bias"], call["proj_weight"],
            call["proj_bias"], call["mask"], False, False, call["mask_type"],
        )[0] + src  # fmt: skip
        if not norm_first:
            x = norm(x, 1)
        residual = x
        if norm_first:
            x = norm(x, 2)
        x = F.linear(x, call["ffn_weight_1"], call["ffn_bias_1"])
        x = F.gelu(x) if call["use_gelu"] else F.relu(x)
        x = F.linear(x, call["ffn_weight_2"], call["ffn_bias_2"]) + residual
        return x if norm_first else norm(x, 2)

    return kernel


FAMILIES = {"native_mha": native_mha, "transformer_encoder_layer": transformer_encoder_layer}
