"""Fused attention forward, softmax(Q K^T * scale) V, with an online softmax: each program owns a block
of query rows, streams key/value blocks through SRAM, and keeps a running row max and row sum so
the N x N score matrix never exists. tl.dot computes both Q K^T and P V (ieee precision, so fp32
inputs are not rounded to tf32); causal attention stops at the diagonal block and masks inside it.

    python examples/fused_attention.py [--case fp16-causal]
"""

from __future__ import annotations

import math
import sys

import torch
import triton
import triton.language as tl
from _common import Check, check, dtype_of, example_main

CASES = ("fp16", "fp16-causal", "bf16", "bf16-causal", "fp32", "fp32-causal")
BATCH, HEADS, SEQ, HEAD_DIM = 1, 2, 64, 32
LOG2E = 1.4426950408889634


@triton.jit
def attention_forward_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    stride_head,
    stride_seq,
    seq_len,
    scale_log2,
    CAUSAL: tl.constexpr,
    HEAD_DIM: tl.constexpr,
    BLOCK_Q: tl.constexpr,
    BLOCK_KV: tl.constexpr,
):
    q_block = tl.program_id(0)
    head = tl.program_id(1)  # batch and head folded: every (batch, head) is one contiguous [seq, dim] matrix
    base = head * stride_head
    q_rows = q_block * BLOCK_Q + tl.arange(0, BLOCK_Q)
    dims = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + base + q_rows[:, None] * stride_seq + dims[None, :], mask=q_rows[:, None] < seq_len, other=0.0)

    row_max = tl.full((BLOCK_Q,), -float("inf"), dtype=tl.float32)
    row_sum = tl.zeros((BLOCK_Q,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_Q, HEAD_DIM), dtype=tl.float32)
    kv_end = tl.minimum((q_block + 1) * BLOCK_Q, seq_len) if CAUSAL else seq_len
    for kv_start in range(0, kv_end, BLOCK_KV):
        kv_rows = kv_start + tl.arange(0, BLOCK_KV)
        kv_ok = kv_rows < seq_len
        k = tl.load(k_ptr + base + kv_rows[:, None] * stride_seq + dims[None, :], mask=kv_ok[:, None], other=0.0)
        v = tl.load(v_ptr + base + kv_rows[:, None] * stride_seq + dims[None, :], mask=kv_ok[:, None], other=0.0)
        # scores in log2 units: exp(s * scale) == exp2(s * scale * log2(e))
        s = tl.dot(q, tl.trans(k), input_precision="ieee") * scale_log2
        visible = kv_ok[None, :]
        if CAUSAL:
            visible = visible & (kv_rows[None, :] <= q_rows[:, None])
        s = tl.where(visible, s, -float("inf"))
        new_max = tl.maximum(row_max, tl.max(s, axis=1))
        p = tl.exp2(s - new_max[:, None])
        rescale = tl.exp2(row_max - new_max)  # shrink what was summed under the old max
        row_sum = row_sum * rescale + tl.sum(p, axis=1)
        acc = acc * rescale[:, None] + tl.dot(p.to(v.dtype), v, input_precision="ieee")
        row_max = new_max

    out = acc / row_sum[:, None]
    tl.store(
        o_ptr + base + q_rows[:, None] * stride_seq + dims[None, :],
        out.to(o_ptr.dtype.element_ty),
        mask=q_rows[:, None] < seq_len,
    )


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, block_q: int = 32, block_kv: int = 32):
    """softmax(q @ k^T / sqrt(d)) @ v for contiguous [batch, heads, seq, dim] tensors."""
    if not (q.shape == k.shape == v.shape) or q.dim() != 4:
        raise ValueError(
            f"attention: q, k, v must share a [batch, heads, seq, dim] shape, got {q.shape}, {k.shape}, {v.shape}"
        )
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    batch, heads, seq, dim = q.shape
    o = torch.empty_like(q)
    grid = (triton.cdiv(seq, block_q), batch * heads)
    attention_forward_kernel[grid](
        q,
        k,
        v,
        o,
        q.stride(1),
        q.stride(2),
        seq,
        LOG2E / math.sqrt(dim),
        CAUSAL=causal,
        HEAD_DIM=dim,
        BLOCK_Q=block_q,
        BLOCK_KV=block_kv,
    )
    return o


def reference(q, k, v, causal):
    s = (q.float() @ k.float().transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if causal:
        n = q.shape[-2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    return (torch.softmax(s, dim=-1) @ v.float()).to(q.dtype)


def run(case: str, device: torch.device) -> list[Check]:
    dtype_name, _, variant = case.partition("-")
    dtype, causal = dtype_of(dtype_name), variant == "causal"
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(BATCH, HEADS, SEQ, HEAD_DIM, generator=g).to(dtype) for _ in range(3))
    got = attention(q.to(device), k.to(device), v.to(device), causal)
    return [check(f"attention {case} [{BATCH},{HEADS},{SEQ},{HEAD_DIM}]", got, reference(q, k, v, causal))]


def main(argv=None) -> int:
    return example_main(__doc__, CASES, run, argv)


if __name__ == "__main__":
    sys.exit(main())
