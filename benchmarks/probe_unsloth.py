"""Unsloth's Triton kernels (unsloth/kernels) on plate, each against a torch reference on the CPU.

    TRITON_DEFAULT_BACKEND=plate PYTHONPATH=TRANSFORMERS python benchmarks/probe_unsloth.py --src DIR [-k NAME]

DIR is a checkout of unslothai/unsloth (its unsloth/kernels folder is what runs). Unsloth's own tests need a
GPU and the whole package (unsloth/__init__ asks for an accelerator, unsloth.kernels.utils imports
bitsandbytes, unsloth_zoo, and the CUDA stream tables); this harness imports the kernel modules themselves
from DIR with those three replaced by the few names the kernels use, written here: the launch settings
(``calculate_settings``: the next power of two and unsloth's warp table, the same rule as the original),
``torch_gpu_device`` (a single device: no context), ``triton_tanh`` (libdevice's) and unsloth_zoo's
``Version`` (packaging's) and patching hooks (unused by the kernels). Everything under test is the library's
own code: its autograd Functions, host wrappers and @triton.jit kernels.

Each case runs the kernel on "plate" tensors and compares with a float64/float32 torch computation on the
CPU, forward and (where the op has one) backward, and counts the aten ops that ran on the host
(torch.plate.host_ops()). Prints one line per case and a total; exit status 1 when a case failed.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import sys
import types
from pathlib import Path

import torch
from probe_cases import run_cases

DEVICE = "plate"
MAX_FUSED_SIZE = 65536  # unsloth.kernels.utils: the largest row a single program handles


def _module(name: str, **attrs) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    sys.modules[name] = module
    return module


def _package(name: str, folder: Path) -> types.ModuleType:
    return _module(name, __path__=[str(folder)], __package__=name)


def _calculate_settings(n: int) -> tuple[int, int]:
    block = 1 << max(0, (n - 1).bit_length())
    if block > MAX_FUSED_SIZE:
        raise RuntimeError(f"n = {n} exceeds the maximum block size {MAX_FUSED_SIZE}")
    warps = 32 if block >= 32768 else 16 if block >= 8192 else 8 if block >= 2048 else 4
    return block, warps


def install_stand_ins(src: Path) -> None:
    """unsloth, unsloth.kernels, unsloth.device_type, unsloth.kernels.utils and unsloth_zoo as modules whose
    names the kernel files import; the kernel files themselves load from `src`."""
    import triton.language as tl
    from packaging.version import Version
    from triton.language.extra import libdevice

    _package("unsloth", src / "unsloth")
    _package("unsloth.kernels", src / "unsloth" / "kernels")
    _module("unsloth.device_type", DEVICE_COUNT=1, DEVICE_TYPE="cuda", DEVICE_TYPE_TORCH="cuda")
    _module(
        "unsloth.kernels.utils",
        calculate_settings=_calculate_settings,
        MAX_FUSED_SIZE=MAX_FUSED_SIZE,
        triton_tanh=libdevice.tanh,
        triton_cast=tl.cast,
        torch_gpu_device=lambda device: contextlib.nullcontext(),
        torch_device_stream=lambda device: types.SimpleNamespace(synchronize=lambda: None),
        is_cdna=lambda: False,
    )
    _package("unsloth_zoo", src)  # nothing loads from it: its three submodules below are stand-ins
    _module("unsloth_zoo.utils", Version=Version)
    _module("unsloth_zoo.loss_utils", patch_loss_functions=lambda *a, **k: None, post_patch_loss_function=None)
    _module("unsloth_zoo.patching_utils", patch_layernorm=lambda *a, **k: None)
    _module("unsloth_zoo.log", logger=logging.getLogger("unsloth_zoo"))
    _package("unsloth_zoo.temporary_patches", src)
    _module("unsloth_zoo.temporary_patches.common", torch_compile=lambda fn=None, **k: fn or (lambda f: f))


def kernels(name: str):
    return importlib.import_module(f"unsloth.kernels.{name}")


def on_device(*tensors):
    return [t.to(DEVICE) for t in tensors]


def close(got, want, atol, rtol, what):
    got = got.detach().to("cpu", torch.float64)
    want = want.detach().to(torch.float64)
    err = (got - want).abs().max().item()
    if not torch.allclose(got, want, atol=atol, rtol=rtol):
        raise AssertionError(f"{what}: max abs error {err:.3g} (atol {atol}, rtol {rtol})")
    return err


def seeded(seed=0):
    return torch.Generator().manual_seed(seed)


# ---- cases: each returns the largest error it checked ----------------------------------------------------


def case_rms_layernorm(dtype, gemma, rows=64, dim=1000):
    m = kernels("rms_layernorm")
    g = seeded()
    x = torch.randn(rows, dim, generator=g).to(dtype)
    w = (torch.randn(dim, generator=g) * 0.1 + 1).to(dtype)
    dy = torch.randn(rows, dim, generator=g).to(dtype)
    eps = 1e-6
    (xd, wd, dyd) = on_device(x, w, dy)
    xd.requires_grad_()
    y = m.Fast_RMS_Layernorm.apply(xd, wd, eps, gemma)
    y.backward(dyd)
    xr = x.double().requires_grad_()
    scale = (1 + w.double()) if gemma else w.double()
    yr = xr * torch.rsqrt(xr.pow(2).mean(-1, keepdim=True) + eps) * scale
    yr.backward(dy.double())
    tol = 1e-4 if dtype == torch.float32 else 2e-2
    return max(close(y, yr, tol, tol, "Y"), close(xd.grad, xr.grad, 10 * tol, tol, "dX"))


def case_layernorm(dtype, rows=64, dim=777):
    m = kernels("layernorm")
    g = seeded(1)
    x = torch.randn(rows, dim, generator=g).to(dtype)
    w = torch.randn(dim, generator=g).to(dtype)
    b = torch.randn(dim, generator=g).to(dtype)
    dy = torch.randn(rows, dim, generator=g).to(dtype)
    eps = 1e-5
    xd, wd, bd, dyd = on_device(x, w, b, dy)
    xd.requires_grad_()
    y = m.Fast_Layernorm.apply(xd, wd, bd, eps)
    y.backward(dyd)
    xr = x.double().requires_grad_()
    yr = torch.nn.functional.layer_norm(xr, (dim,), w.double(), b.double(), eps)
    yr.backward(dy.double())
    tol = 1e-4 if dtype == torch.float32 else 3e-2
    return max(close(y, yr, tol, tol, "Y"), close(xd.grad, xr.grad, 10 * tol, tol, "dX"))


def _rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def _cos_sin(seq, dim, dtype):
    inv = 1.0 / (10000 ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    freqs = torch.outer(torch.arange(seq, dtype=torch.float64), inv)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def case_rope(dtype, indices, batch=2, heads_q=4, heads_k=2, seq=24, dim=64):
    """fast_rope_embedding: Q, K (batch, heads, seq, dim); with rope indices the fused Q+K kernel
    (_rope_embedding_QK) gathers each row's position, else one launch each of _rope_embedding."""
    m = kernels("rope_embedding")
    g = seeded(2)
    q = torch.randn(batch, heads_q, seq, dim, generator=g).to(dtype)
    k = torch.randn(batch, heads_k, seq, dim, generator=g).to(dtype)
    dq = torch.randn(q.shape, generator=g).to(dtype)
    dk = torch.randn(k.shape, generator=g).to(dtype)
    cos, sin = _cos_sin(2 * seq, dim, dtype)
    pos = torch.randint(0, 2 * seq, (batch, seq), generator=g) if indices else None
    qd, kd, cosd, sind, dqd, dkd = on_device(q, k, cos, sin, dq, dk)
    qd.requires_grad_()
    kd.requires_grad_()
    if indices:
        qo, ko = m.fast_rope_embedding(qd.clone(), kd.clone(), cosd, sind, pos.to(DEVICE))
    else:
        qo, ko = m.fast_rope_embedding(qd, kd, cosd, sind)
    (qo * dqd).sum().add((ko * dkd).sum()).backward()
    qr = q.double().requires_grad_()
    kr = k.double().requires_grad_()
    p = pos[:, None, :, None] if indices else torch.arange(seq)[None, None, :, None]
    c = cos.double()[p.squeeze(-1)]
    s = sin.double()[p.squeeze(-1)]
    qor = qr * c + _rotate_half(qr) * s
    kor = kr * c + _rotate_half(kr) * s
    (qor * dq.double()).sum().add((kor * dk.double()).sum()).backward()
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    errs = [close(qo, qor, tol, tol, "Q"), close(ko, kor, tol, tol, "K")]
    errs += [close(qd.grad, qr.grad, tol, tol, "dQ"), close(kd.grad, kr.grad, tol, tol, "dK")]
    return max(errs)


def case_cross_entropy(dtype, vocab, softcap=0.0, scale=0.0, rows=8):
    """fast_cross_entropy_loss: one program per row up to 65536 columns, a chunked forward (rows x chunks
    programs, the chunks' logsumexp combined on the host) past it; backward in 4096-column blocks."""
    m = kernels("cross_entropy_loss")
    g = seeded(3)
    logits = (torch.randn(1, rows, vocab, generator=g) * 3).to(dtype)
    labels = torch.randint(0, vocab, (1, rows), generator=g)
    labels[0, 1] = -100
    ld = logits.to(DEVICE).requires_grad_()
    loss = m.fast_cross_entropy_loss(ld, labels.to(DEVICE), logit_softcapping=softcap, logit_scaling=scale)
    loss.backward()
    lr = logits.double().requires_grad_()
    z = lr * scale if scale else lr
    z = softcap * torch.tanh(z / softcap) if softcap else z
    ref = torch.nn.functional.cross_entropy(z.view(rows, vocab), labels.view(-1), ignore_index=-100)
    ref.backward()
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    return max(close(loss, ref, tol, tol, "loss"), close(ld.grad, lr.grad, tol, tol, "dlogits"))


def case_swiglu(dtype, n=3000):
    """swiglu_fg_kernel: h = silu(e) * g; swiglu_DWf_DW_dfg_kernel: the three backward products in place."""
    m = kernels("swiglu")
    g = seeded(4)
    e, gg, dw = (torch.randn(4, n, generator=g).to(dtype) for _ in range(3))
    h = m.swiglu_fg_kernel(*on_device(e.view(2, 2, n), gg.view(2, 2, n))).view(4, n)  # (batch, seq, hd)
    ed, gd, dwd = on_device(e, gg, dw)
    h2, df, de = m.swiglu_DWf_DW_dfg_kernel(dwd, ed, gd)
    e64, g64, dw64 = e.double(), gg.double(), dw.double()
    se = torch.sigmoid(e64)
    f = e64 * se
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    errs = [close(h, f * g64, tol, tol, "h"), close(h2, f * g64, tol, tol, "h (backward)")]
    errs += [close(df, dw64 * f, tol, tol, "df"), close(de, dw64 * g64 * se * (1 + e64 * (1 - se)), tol, tol, "de")]
    return max(errs)


def case_geglu(dtype, approx, n=3000):
    """geglu exact (erf) and approximate (tanh) forward and backward kernels."""
    m = kernels("geglu")
    g = seeded(5)
    e, gg, dw = (torch.randn(4, n, generator=g).to(dtype) for _ in range(3))
    fwd = m.geglu_approx_forward_kernel if approx else m.geglu_exact_forward_kernel
    bwd = m.geglu_approx_backward_kernel if approx else m.geglu_exact_backward_kernel
    h = fwd(*on_device(e.view(2, 2, n), gg.view(2, 2, n))).view(4, n)  # (batch, seq, hd)
    h2, df, de = bwd(*on_device(dw, e, gg))
    e64 = e.double().requires_grad_()
    f = torch.nn.functional.gelu(e64, approximate="tanh" if approx else "none")
    (dfde,) = torch.autograd.grad(f.sum(), e64)
    e64 = e64.detach()
    f = f.detach()
    g64, dw64 = gg.double(), dw.double()
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    errs = [close(h, f * g64, tol, tol, "h"), close(h2, f * g64, tol, tol, "h (backward)")]
    errs += [close(df, dw64 * f, tol, tol, "df"), close(de, dw64 * g64 * dfde, tol, tol, "de")]
    return max(errs)


def _block_quant(x, block):
    """(x as float8_e4m3fn, float32 scales per block x block tile): DeepSeek-V3's weight layout."""
    m, n = x.shape
    s = torch.empty(-(-m // block), -(-n // block))
    q = torch.empty(m, n, dtype=torch.float8_e4m3fn)
    for i in range(s.shape[0]):
        for j in range(s.shape[1]):
            tile = x[i * block : (i + 1) * block, j * block : (j + 1) * block]
            s[i, j] = tile.abs().max() / 448.0
            q[i * block : (i + 1) * block, j * block : (j + 1) * block] = (tile / s[i, j]).to(torch.float8_e4m3fn)
    return q, s


def case_fp8_act_quant(rows=6, cols=384):
    """act_quant: per 128-element group, scale = amax / 448 and x / scale cast to float8_e4m3fn (bit-exact
    against the same steps in torch on the CPU; an all-zero group keeps scale 1)."""
    m = kernels("fp8")
    x = torch.randn(rows, cols, generator=seeded(6)) * 5
    x[2, 128:256] = 0
    y, s = m.act_quant(x.to(DEVICE), 128)
    groups = x.view(rows, -1, 128)
    sr = groups.abs().amax(-1) / 448.0
    sr = torch.where(sr == 0, torch.ones_like(sr), sr)
    yr = (groups / sr[..., None]).to(torch.float8_e4m3fn).view(rows, cols)
    if not torch.equal(s.cpu(), sr):
        raise AssertionError(f"scales differ: {(s.cpu() - sr).abs().max().item()}")
    if not torch.equal(y.cpu().view(torch.uint8), yr.view(torch.uint8)):
        raise AssertionError(f"{(y.cpu().view(torch.uint8) != yr.view(torch.uint8)).sum().item()} fp8 codes differ")
    return 0.0


def case_fp8_weight_dequant(m_=300, n=200):
    """weight_dequant (block scales): an fp8 weight times its 128 x 128 tile's scale, as bf16."""
    m = kernels("fp8")
    q, s = _block_quant(torch.randn(m_, n, generator=seeded(7)), 128)
    y = m.weight_dequant(q.to(DEVICE), s.to(DEVICE), dtype=torch.bfloat16)
    ref = (q.float() * s.repeat_interleave(128, 0)[:m_].repeat_interleave(128, 1)[:, :n]).to(torch.bfloat16)
    if not torch.equal(y.cpu(), ref):
        raise AssertionError(f"max error {(y.cpu().float() - ref.float()).abs().max().item()}")
    return 0.0


def case_fp8_block_matmul(out_dtype, m_=40, n=256, k=384):
    """w8a8_block_fp8_matmul_triton (sglang's kernel): A quantized per 1 x 128 group, B per 128 x 128 tile,
    an fp8 tl.dot per K block scaled by both scales in float32."""
    m = kernels("fp8")
    g = seeded(8)
    a = torch.randn(m_, k, generator=g)
    b = torch.randn(n, k, generator=g) * 0.1
    aq, As = m.act_quant(a.to(DEVICE), 128)
    bq, Bs = _block_quant(b, 128)
    c = m.w8a8_block_fp8_matmul_triton(aq, bq.to(DEVICE), As, Bs.to(DEVICE), [128, 128], out_dtype)
    a64 = aq.cpu().double() * As.cpu().double().repeat_interleave(128, 1)
    b64 = bq.double() * Bs.double().repeat_interleave(128, 0).repeat_interleave(128, 1)
    ref = a64 @ b64.T
    tol = 1e-4 if out_dtype == torch.float32 else 2e-2
    return close(c, ref, tol, tol, "C")


def _moe_forward_kernel():
    """unsloth's grouped-GEMM forward kernel, imported without the MoE package's host interface (which asserts
    X.device.type == "cuda" before launching it)."""
    root = Path(sys.modules["unsloth.kernels"].__path__[0]) / "moe"
    _package("unsloth.kernels.moe", root)
    _package("unsloth.kernels.moe.grouped_gemm", root / "grouped_gemm")
    _package("unsloth.kernels.moe.grouped_gemm.kernels", root / "grouped_gemm" / "kernels")
    return importlib.import_module("unsloth.kernels.moe.grouped_gemm.kernels.forward")._grouped_gemm_forward_kernel


def case_moe_grouped_gemm(permute_x=False, permute_y=False, fuse_mul=False, tma=False, tokens=24, topk=2):
    """The persistent grouped GEMM of a MoE MLP (E experts' X_e @ W_e.T in one launch of NUM_SMS programs walking
    the experts' tiles): token -> expert permutation fused into the loads (PERMUTE_X), expert -> token into the
    stores (PERMUTE_Y, with the routing weights multiplied in: FUSE_MUL_POST), or X, W loads and Y stores through
    device-side tensor descriptors (TMA, one Y descriptor per expert made inside the expert loop). Launched as
    grouped_gemm_forward launches it; the reference is a float64 matmul per expert."""
    import triton

    kernel = _moe_forward_kernel()
    g = seeded(9)
    experts, k, n = 4, 64, 48
    total = tokens * topk
    expert_of = torch.randint(0, experts, (total,), generator=g)
    expert_of[:3] = 2  # an expert with a partial tile, and (with 4 experts, 48 slots) likely none empty
    gather = torch.argsort(expert_of, stable=True)  # expert order -> slot (token * topk + j)
    m_sizes = torch.bincount(expert_of, minlength=experts).to(torch.int32)
    w = torch.randn(experts, n, k, generator=g).to(torch.bfloat16) * 0.1
    x_tokens = torch.randn(tokens, k, generator=g).to(torch.bfloat16)
    x_sorted = x_tokens[gather // topk]  # the permuted input of a grouped GEMM without PERMUTE_X
    x = x_tokens if permute_x else x_sorted
    weights = torch.rand(total, generator=g)
    y = torch.empty(total, n, dtype=torch.bfloat16, device=DEVICE)
    sms = torch.plate.get_device_properties(DEVICE).multi_processor_count
    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, device=DEVICE, dtype=torch.int8))
    kernel[(sms,)](
        x_ptr=x.to(DEVICE),
        w_ptr=w.view(-1, k).to(DEVICE),
        y_ptr=y,
        m_sizes_ptr=m_sizes.to(DEVICE),
        gather_indices_ptr=gather.to(torch.int32).to(DEVICE),
        topk_weights_ptr=weights.to(DEVICE),
        NUM_EXPERTS=experts,
        NUM_TOKENS=tokens,
        TOPK=topk,
        N=n,
        K=k,
        NUM_SMS=sms,
        BLOCK_SIZE_M=16,
        BLOCK_SIZE_N=32,
        BLOCK_SIZE_K=32,
        PERMUTE_X=permute_x,
        PERMUTE_Y=permute_y,
        FUSE_MUL_POST=fuse_mul,
        USE_TMA_LOAD_W=tma,
        USE_TMA_LOAD_X=tma,
        USE_TMA_STORE=tma,
        num_warps=4,
        num_stages=2,
    )
    ref = torch.einsum("tk,tnk->tn", x_sorted.double(), w.double()[expert_of[gather]])  # expert order
    if fuse_mul:
        ref = ref * weights.double()[gather][:, None]
    if permute_y:
        ref = torch.empty_like(ref).index_copy_(0, gather, ref)  # back to slot (token) order
    return close(y, ref, 2e-2, 2e-2, "Y")


CASES = {
    "rms_layernorm-f32": lambda: case_rms_layernorm(torch.float32, False),
    "rms_layernorm-bf16": lambda: case_rms_layernorm(torch.bfloat16, False),
    "rms_layernorm-gemma-f16": lambda: case_rms_layernorm(torch.float16, True),
    "layernorm-f32": lambda: case_layernorm(torch.float32),
    "layernorm-f16": lambda: case_layernorm(torch.float16),
    "rope-f32": lambda: case_rope(torch.float32, False),
    "rope-bf16": lambda: case_rope(torch.bfloat16, False),
    "rope-indices-f32": lambda: case_rope(torch.float32, True),
    "cross_entropy-f32": lambda: case_cross_entropy(torch.float32, 5000),
    "cross_entropy-softcap-scale-bf16": lambda: case_cross_entropy(torch.bfloat16, 5000, softcap=30.0, scale=0.5),
    "cross_entropy-chunked-f32": lambda: case_cross_entropy(torch.float32, 70000, rows=2),
    "swiglu-f32": lambda: case_swiglu(torch.float32),
    "swiglu-bf16": lambda: case_swiglu(torch.bfloat16),
    "geglu-exact-f32": lambda: case_geglu(torch.float32, False),
    "geglu-approx-f16": lambda: case_geglu(torch.float16, True),
    "fp8-act_quant": case_fp8_act_quant,
    "fp8-weight_dequant": case_fp8_weight_dequant,
    "fp8-block_matmul-f32": lambda: case_fp8_block_matmul(torch.float32),
    "fp8-block_matmul-bf16": lambda: case_fp8_block_matmul(torch.bfloat16),
    "moe-grouped_gemm": case_moe_grouped_gemm,
    "moe-grouped_gemm-permute_x": lambda: case_moe_grouped_gemm(permute_x=True),
    "moe-grouped_gemm-permute_y-fuse_mul": lambda: case_moe_grouped_gemm(permute_y=True, fuse_mul=True),
    "moe-grouped_gemm-tma": lambda: case_moe_grouped_gemm(tma=True),
}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--src", type=Path, required=True, help="a checkout of unslothai/unsloth")
    p.add_argument("-k", default="", help="run the cases whose name contains this")
    args = p.parse_args(argv)
    import triton_plate_backend.torch_device  # noqa: F401 - registers torch.plate

    install_stand_ins(args.src)
    return run_cases(CASES, args.k)


if __name__ == "__main__":
    sys.exit(main())
