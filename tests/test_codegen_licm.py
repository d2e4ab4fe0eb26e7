"""Loop-invariant scalar code out of compiled kernels' loops (passes/licm.py, scalar_cse.py): a
persistent vector add, a reduction's chunk loop and a GEMM's K loop compute what numpy computes,
and each loop's body is shorter than the same kernel lowered without the two passes."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from triton_plate_backend.passes import codegen, pipeline
from triton_plate_backend.passes.emitter import Emitter
from triton_plate_backend.ttir.parser import parse


@pytest.fixture(scope="module", autouse=True)
def mini(plate_mini_module):
    return plate_mini_module


@triton.jit
def add_kernel(x, y, o, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)


@triton.jit
def row_sum_kernel(out, inp, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(inp + row * stride + cols, mask=cols < n_cols, other=0.0)
    tl.store(out + row, tl.sum(acc, axis=0))


@triton.jit
def matmul_kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_n, pid_m = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        kk = k + rk
        a_t = tl.load(a + rm[:, None] * K + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b_t = tl.load(b + kk[:, None] * N + rn[None, :], mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a_t, b_t, input_precision="ieee")
    tl.store(c + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def loop_lengths(program) -> list[int]:
    """Instructions from each loop's first to its back edge (a branch to an earlier pc), in order."""
    out = []
    for pc, inst in enumerate(program.instrs):
        if inst.mnemonic in ("bnz", "jmp", "bz") and inst.operands[-1] <= pc:
            out.append(pc - inst.operands[-1] + 1)
    return out


def lowered(kernel, monkeypatch, optimized: bool, machine):
    """The kernel's plate IR lowered again, with or without licm and scalar_cse (without: each use of
    a constant, argument or address term computes its own, as the emitter's sharing is off too)."""
    if not optimized:
        monkeypatch.setattr(codegen.licm, "run", lambda code, count=None: code)
        monkeypatch.setattr(codegen.scalar_cse, "run", lambda code, count=None: code)
        monkeypatch.setattr(Emitter, "share", False)
    try:
        options = SimpleNamespace(num_stages=kernel.metadata.num_stages)  # the one option codegen reads
        program, _ = pipeline.generate(parse(kernel.asm["pir"], "k.pir"), options, machine)
    finally:
        monkeypatch.undo()
    return program


def shorter_loops(kernel, monkeypatch, machine) -> tuple[list[int], list[int]]:
    """(loop lengths of the kernel as compiled, of the same IR lowered without the passes)."""
    kernel._init_handles()
    opt = loop_lengths(kernel.function.program)
    assert opt == loop_lengths(lowered(kernel, monkeypatch, True, machine))  # lowered again as the compiler did
    return opt, loop_lengths(lowered(kernel, monkeypatch, False, machine))


def test_persistent_vector_add(mini, monkeypatch):
    n = 40 * 1024 + 100  # more programs than plate-mini's cores, a masked tail
    x, y = torch.randn(n), torch.randn(n)
    o = torch.empty(n, device="plate")
    k = add_kernel[(triton.cdiv(n, 1024),)](x.to("plate"), y.to("plate"), o, n, BLOCK=1024)
    np.testing.assert_array_equal(o.cpu().numpy(), x.numpy() + y.numpy())
    assert "plate.programs" in k.asm["pir"]
    opt, plain = shorter_loops(k, monkeypatch, mini.machine)
    assert len(opt) == 1 and opt[0] * 2 < plain[0], (opt, plain)  # less than half the instructions per trip


def test_reduction_chunk_loop(mini, monkeypatch):
    rows, cols = 6, 1000
    x = torch.randn(rows, cols)
    out = torch.empty(rows, device="plate")
    k = row_sum_kernel[(rows,)](out, x.to("plate"), x.stride(0), cols, BLOCK=128)
    want = x.numpy().astype(np.float64).sum(axis=1)
    np.testing.assert_allclose(out.cpu().numpy(), want, rtol=1e-5, atol=1e-4)
    opt, plain = shorter_loops(k, monkeypatch, mini.machine)
    assert opt and all(a < b for a, b in zip(opt, plain)), (opt, plain)


def test_gemm_k_loop(mini, monkeypatch):
    M, N, K = 64, 64, 160
    a, b = torch.randn(M, K).half(), torch.randn(K, N).half()
    c = torch.empty(M, N, device="plate")
    k = matmul_kernel[(2, 2)](a.to("plate"), b.to("plate"), c, M, N, K, BM=32, BN=32, BK=32)
    want = a.float().numpy() @ b.float().numpy()
    np.testing.assert_allclose(c.cpu().numpy(), want, rtol=1e-4, atol=1e-3)
    opt, plain = shorter_loops(k, monkeypatch, mini.machine)
    assert opt and all(a < b for a, b in zip(opt, plain)), (opt, plain)
