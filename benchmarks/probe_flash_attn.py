"""flash-attention's rotary and cross-entropy Triton ops on plate, where its own tests cannot run them.

    TRITON_DEFAULT_BACKEND=plate PYTHONPATH=EINOPS python benchmarks/probe_flash_attn.py --src DIR [-k NAME]

DIR is a checkout of Dao-AILab/flash-attention. Its tests of these two ops do not run here: tests/layers/test_rotary.py
imports transformers' GPT-NeoX ``RotaryEmbedding`` (gone from transformers 4.57), and
tests/losses/test_cross_entropy.py goes through ``flash_attn.losses.cross_entropy.CrossEntropyLoss``, which asserts
``input.is_cuda``, on 51-206 M-element logits. This harness calls the ops themselves (``apply_rotary``,
``cross_entropy_loss``) from DIR's flash_attn/ops/triton, imported as the flash_attn library plugin imports them
(the package folder without its ``__init__``, which loads the CUDA extension; ``torch.cuda.device(i)``, which
the ops enter around each launch, the device's), on "plate" tensors at small sizes,
against float64 torch computations on the CPU: forward and backward, and the host ops that ran
(torch.plate.host_ops()). Prints one line per case and a total; exit status 1 when a case failed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from probe_cases import run_cases

DEVICE = "plate"


def seeded(seed=0):
    return torch.Generator().manual_seed(seed)


def close(got, want, tol, what):
    got = got.detach().to("cpu", torch.float64)
    want = want.detach().to(torch.float64)
    err = (got - want).abs().max().item()
    if not torch.allclose(got, want, atol=tol, rtol=tol):
        raise AssertionError(f"{what}: max abs error {err:.3g} (tolerance {tol})")
    return err


def rotary_ref(x, cos, sin, offsets, interleaved, conjugate):
    """x (batch, seqlen, heads, dim) rotated in its first 2 * cos.shape[1] features, each sequence from its offset."""
    batch, seqlen = x.shape[:2]
    rot = 2 * cos.shape[1]
    pos = torch.arange(seqlen)[None, :] + torch.as_tensor(offsets).view(-1, 1)
    c, s = cos.double()[pos][:, :, None, :], sin.double()[pos][:, :, None, :]
    s = -s if conjugate else s
    x64 = x.double()
    xr = x64[..., :rot]
    if interleaved:
        x1, x2 = xr[..., 0::2], xr[..., 1::2]
        out = torch.stack((x1 * c - x2 * s, x1 * s + x2 * c), dim=-1).flatten(-2)
    else:
        x1, x2 = xr.chunk(2, dim=-1)
        out = torch.cat((x1 * c - x2 * s, x1 * s + x2 * c), dim=-1)
    return torch.cat((out, x64[..., rot:]), dim=-1)


def case_rotary(dtype, interleaved, offsets_tensor=False, conjugate=False, inplace=False):
    """apply_rotary: half the head dim rotated (rotary_dim 32 of 64), GPT-NeoX halves or GPT-J interleaved pairs;
    one int offset or a tensor of per-sequence offsets (a KV cache's); conjugate is the backward's rotation."""
    from flash_attn.ops.triton.rotary import apply_rotary

    g = seeded(1)
    batch, seqlen, heads, dim, rot = 3, 37, 4, 64, 32
    x = torch.randn(batch, seqlen, heads, dim, generator=g).to(dtype)
    angle = torch.rand(seqlen + 20, rot // 2, generator=g) * 6.3
    cos, sin = angle.cos().to(dtype), angle.sin().to(dtype)
    offsets = torch.tensor([0, 7, 20]) if offsets_tensor else 5
    got = apply_rotary(
        x.to(DEVICE),
        cos.to(DEVICE),
        sin.to(DEVICE),
        seqlen_offsets=offsets.to(DEVICE) if offsets_tensor else offsets,
        interleaved=interleaved,
        inplace=inplace,
        conjugate=conjugate,
    )
    want = rotary_ref(x, cos, sin, offsets, interleaved, conjugate)
    return close(got, want, 1e-5 if dtype == torch.float32 else 2e-2, "out")


def case_rotary_varlen(dtype=torch.float32):
    """apply_rotary with cu_seqlens: three packed sequences of 5, 17 and 9 tokens, each from position 0 + offset 3."""
    from flash_attn.ops.triton.rotary import apply_rotary

    g = seeded(2)
    lens = [5, 17, 9]
    heads, dim = 2, 32
    x = torch.randn(sum(lens), heads, dim, generator=g).to(dtype)
    angle = torch.rand(40, dim // 2, generator=g) * 6.3
    cos, sin = angle.cos().to(dtype), angle.sin().to(dtype)
    cu = torch.tensor([0, 5, 22, 31], dtype=torch.int32)
    got = apply_rotary(
        x.to(DEVICE), cos.to(DEVICE), sin.to(DEVICE), seqlen_offsets=3, cu_seqlens=cu.to(DEVICE), max_seqlen=17
    )
    parts = [rotary_ref(x[a:b][None], cos, sin, 3, False, False)[0] for a, b in zip(cu[:-1], cu[1:], strict=True)]
    return close(got, torch.cat(parts), 1e-5, "out")


def case_cross_entropy(dtype, vocab, smoothing=0.0, scale=1.0, lse_square=0.0, rows=6):
    """cross_entropy_loss: loss per row with ignore_index rows, label smoothing, logit scale and the z-loss
    (lse_square_scale), its backward; vocabularies past 64K run in several blocks per row."""
    from flash_attn.ops.triton.cross_entropy import cross_entropy_loss

    g = seeded(3)
    logits = (torch.randn(rows, vocab, generator=g) * 2).to(dtype)
    labels = torch.randint(0, vocab, (rows,), generator=g)
    labels[-1] = -100
    dloss = torch.rand(rows, generator=g)
    ld = logits.to(DEVICE).requires_grad_()
    loss, z_loss = cross_entropy_loss(
        ld, labels.to(DEVICE), label_smoothing=smoothing, logit_scale=scale, lse_square_scale=lse_square
    )
    loss.backward(dloss.to(DEVICE))
    lr = logits.double().requires_grad_()
    z = lr * scale
    ref = torch.nn.functional.cross_entropy(z, labels, label_smoothing=smoothing, reduction="none", ignore_index=-100)
    lse = torch.logsumexp(z, dim=-1)
    zref = torch.where(labels == -100, 0.0, lse_square * lse.square())
    ref = ref + zref
    ref.backward(dloss.double())
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    errs = [close(loss, ref, tol, "loss"), close(z_loss, zref, tol, "z_loss"), close(ld.grad, lr.grad, tol, "dlogits")]
    return max(errs)


CASES = {
    "rotary-f32": lambda: case_rotary(torch.float32, False),
    "rotary-interleaved-bf16": lambda: case_rotary(torch.bfloat16, True),
    "rotary-offsets-tensor-f16": lambda: case_rotary(torch.float16, False, offsets_tensor=True),
    "rotary-conjugate-inplace-f32": lambda: case_rotary(torch.float32, True, conjugate=True, inplace=True),
    "rotary-varlen-f32": case_rotary_varlen,
    "cross_entropy-f32": lambda: case_cross_entropy(torch.float32, 5000),
    "cross_entropy-smoothing-scale-zloss-f32": lambda: case_cross_entropy(
        torch.float32, 5000, smoothing=0.1, scale=0.7, lse_square=1e-2
    ),
    "cross_entropy-bf16": lambda: case_cross_entropy(torch.bfloat16, 3000),
    "cross_entropy-70000-f32": lambda: case_cross_entropy(torch.float32, 70000, rows=2),
}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--src", type=Path, required=True, help="a checkout of Dao-AILab/flash-attention")
    p.add_argument("-k", default="", help="run the cases whose name contains this")
    args = p.parse_args(argv)
    import triton_plate_backend.torch_device  # noqa: F401 - registers torch.plate

    sys.path.insert(0, str(args.src))
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from upstream.libraries.flash_attn import cuda_is

    cuda_is(DEVICE)  # as in the library's test run: torch.cuda.device(i) around each launch is the device's
    return run_cases(CASES, args.k)


if __name__ == "__main__":
    sys.exit(main())
