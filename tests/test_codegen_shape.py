"""Code generation of shape ops (views, copies) and of operations larger than the vector unit."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import triton
import triton.language as tl
from codegen_kernels.harness import MACHINE, close, compile_kernel, run

RNG = np.random.default_rng(7)


def vector_machine(max_elements):
    core = dataclasses.replace(MACHINE.core, vector=dataclasses.replace(MACHINE.core.vector, max_elements=max_elements))
    return dataclasses.replace(MACHINE, name=f"mini-vec{max_elements}", core=core)


@triton.jit
def views(x, o, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    ra = tl.arange(0, A)
    rb = tl.arange(0, B)
    rc = tl.arange(0, C)
    v = tl.load(x + ra[:, None, None] * B * C + rb[None, :, None] * C + rc[None, None, :])
    p = tl.permute(v, (2, 0, 1))  # [C, A, B], a strided view
    flat = tl.reshape(p, (C * A * B,))  # needs a copy: the view is not contiguous
    tl.store(o + tl.arange(0, A * B * C), flat)
    t = tl.trans(tl.reshape(v, (A * B, C)))  # [C, A*B]
    s = tl.sum(t, axis=1)
    tl.store(o + A * B * C + rc, s)
    j = tl.join(s, s * 3.0)
    tl.store(o + A * B * C + C + tl.arange(0, 2 * C), tl.reshape(j, (2 * C,)))
    lo, hi = tl.split(tl.reshape(v, (A * B * C // 2, 2)))
    tl.store(o + A * B * C + 3 * C + tl.arange(0, A * B * C // 2), hi - lo)


@pytest.mark.parametrize("max_elements", [8192, 8])
def test_views_and_copies(max_elements):
    A, B, C = 2, 4, 8
    x = RNG.uniform(-1, 1, (A, B, C)).astype(np.float32)
    n = A * B * C
    machine = MACHINE if max_elements == 8192 else vector_machine(max_elements)
    sig = {"x": "*fp32", "o": "*fp32", "A": "constexpr", "B": "constexpr", "C": "constexpr"}
    prog = compile_kernel(views, sig, {"A": A, "B": B, "C": C}, machine=machine)
    (_, out), _ = run(prog, 1, [x, np.zeros(n + 3 * C + n // 2, np.float32)], machine=machine)
    np.testing.assert_array_equal(out[:n], x.transpose(2, 0, 1).reshape(-1))
    s = x.reshape(A * B, C).T.sum(1)
    close(out[n : n + C], s, rtol=1e-6)
    close(out[n + C : n + 3 * C], np.stack([s, s * 3], 1).reshape(-1), rtol=1e-6)
    pairs = x.reshape(-1, 2)
    np.testing.assert_array_equal(out[n + 3 * C :], pairs[:, 1] - pairs[:, 0])


@triton.jit
def big_elementwise(x, y, o, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    a = tl.load(x + rm[:, None] * N + rn[None, :])
    b = tl.load(y + rn[:, None] * M + rm[None, :])  # [N, M]
    c = a * 2.0 + tl.trans(b)  # a strided operand: chunks go along the leading dim
    tl.store(o + rm[:, None] * N + rn[None, :], tl.exp(c) + tl.arange(0, M)[:, None].to(tl.float32))


def test_operations_larger_than_the_vector_unit_are_split():
    M, N = 16, 32
    machine = vector_machine(64)
    x, y = RNG.uniform(-1, 1, (M, N)).astype(np.float32), RNG.uniform(-1, 1, (N, M)).astype(np.float32)
    sig = {"x": "*fp32", "y": "*fp32", "o": "*fp32", "M": "constexpr", "N": "constexpr"}
    prog = compile_kernel(big_elementwise, sig, {"M": M, "N": N}, machine=machine)
    vec = [ins for ins in prog.instrs if ins.row.unit == "vector"]
    assert vec and all(
        prog.tiles[v].numel <= 64 for ins in vec for od, v in zip(ins.row.operands, ins.operands) if od.kind == "t"
    )
    (_, _, out), _ = run(prog, 1, [x, y, np.zeros((M, N), np.float32)], machine=machine)
    close(out, np.exp(x * 2 + y.T) + np.arange(M)[:, None], rtol=1e-6)


@triton.jit
def cat_gather_hist(x, idx, o, oh, N: tl.constexpr):
    r = tl.arange(0, N)
    v = tl.load(x + r)
    c = tl.cat(v, v * 2.0, can_reorder=False)
    tl.store(o + tl.arange(0, 2 * N), c)
    i = tl.load(idx + r)
    g = tl.gather(tl.reshape(c, (2, N)), tl.reshape(i, (2, N // 2)) % N, axis=1)
    tl.store(o + 2 * N + tl.arange(0, N), tl.reshape(g, (N,)))
    h = tl.histogram(i, 8, mask=i < 6)
    tl.store(oh + tl.arange(0, 8), h)


def test_cat_gather_histogram():
    N = 16
    x = RNG.uniform(-1, 1, N).astype(np.float32)
    idx = RNG.integers(0, 8, N).astype(np.int32)
    sig = {"x": "*fp32", "idx": "*i32", "o": "*fp32", "oh": "*i32", "N": "constexpr"}
    (_, _, out, hist), _ = run(
        compile_kernel(cat_gather_hist, sig, {"N": N}), 1, [x, idx, np.zeros(3 * N, np.float32), np.zeros(8, np.int32)]
    )
    c = np.concatenate([x, x * 2])
    np.testing.assert_array_equal(out[: 2 * N], c)
    np.testing.assert_array_equal(out[2 * N :], np.take_along_axis(c.reshape(2, N), idx.reshape(2, -1) % N, 1).ravel())
    np.testing.assert_array_equal(hist, np.bincount(idx[idx < 6], minlength=8))
