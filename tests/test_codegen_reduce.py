"""Code generation of tt.reduce and tt.scan: single-op combines (v.reduce / v.scan), general
combine regions (tree / Hillis-Steele on views), and pieces larger than the vector unit."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
import triton
import triton.language as tl
from codegen_kernels.harness import MACHINE, close, compile_kernel, compile_text, run, ttir_of

RNG = np.random.default_rng(3)
M, N = 8, 32
SIG = {"x": "*fp32", "o": "*fp32", "oi": "*i32", "M": "constexpr", "N": "constexpr"}


def small_vector_machine(max_elements: int):
    core = dataclasses.replace(MACHINE.core, vector=dataclasses.replace(MACHINE.core.vector, max_elements=max_elements))
    return dataclasses.replace(MACHINE, name=f"mini-vec{max_elements}", core=core)


@triton.jit
def reductions(x, o, oi, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    v = tl.load(x + rm[:, None] * N + rn[None, :])
    tl.store(o + rm, tl.sum(v, axis=1))
    tl.store(o + M + rn, tl.max(v, axis=0))
    tl.store(o + M + N + rm, tl.min(v, axis=1))
    tl.store(o + 2 * M + N, tl.sum(v))
    i = (v * 100).to(tl.int32)
    tl.store(oi + rm, tl.argmax(v, axis=1))
    tl.store(oi + M + rn, tl.argmin(v, axis=0))
    tl.store(oi + M + N + rm, tl.reduce_or(i, axis=1))
    tl.store(oi + 2 * M + N + rm, tl.max(i, axis=1) - tl.min(i, axis=1))


@pytest.mark.parametrize("max_elements", [8192, 16])
def test_reductions(max_elements):
    x = RNG.uniform(-1, 1, (M, N)).astype(np.float32)
    o, oi = np.zeros(2 * M + N + 1, np.float32), np.zeros(3 * M + N, np.int32)
    machine = MACHINE if max_elements == 8192 else small_vector_machine(max_elements)
    prog = compile_kernel(reductions, SIG, {"M": M, "N": N}, machine=machine)
    (_, out, outi), _ = run(prog, 1, [x, o, oi], machine=machine)
    close(out[:M], x.sum(1), rtol=1e-5)
    np.testing.assert_array_equal(out[M : M + N], x.max(0))
    np.testing.assert_array_equal(out[M + N : 2 * M + N], x.min(1))
    close(out[2 * M + N], x.sum(), rtol=1e-5)
    i = (x * 100).astype(np.int32)
    np.testing.assert_array_equal(outi[:M], x.argmax(1))
    np.testing.assert_array_equal(outi[M : M + N], x.argmin(0))
    np.testing.assert_array_equal(outi[M + N : 2 * M + N], np.bitwise_or.reduce(i, axis=1))
    np.testing.assert_array_equal(outi[2 * M + N :], i.max(1) - i.min(1))


@triton.jit
def _first_nonzero(a, b):
    return tl.where(a != 0, a, b)  # associative, not commutative


@triton.jit
def custom_reduce(x, o, oi, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    v = tl.load(x + rm[:, None] * N + rn[None, :])
    tl.store(o + rm, tl.reduce(v, 1, _first_nonzero))
    tl.store(o + M + rn, tl.reduce(v, 0, _first_nonzero))


def test_non_commutative_reduce_keeps_order():
    x = np.where(RNG.random((M, N)) < 0.7, 0, RNG.uniform(1, 2, (M, N))).astype(np.float32)
    prog = compile_kernel(custom_reduce, SIG, {"M": M, "N": N})
    (_, out, _), _ = run(prog, 1, [x, np.zeros(M + N, np.float32), np.zeros(1, np.int32)])

    def first(a):
        nz = a[a != 0]
        return nz[0] if nz.size else 0

    np.testing.assert_array_equal(out[:M], [first(r) for r in x])
    np.testing.assert_array_equal(out[M:], [first(c) for c in x.T])


@triton.jit
def _max(a, b):
    return tl.maximum(a, b)


@triton.jit
def scans(x, o, oi, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    offs = rm[:, None] * N + rn[None, :]
    v = tl.load(x + offs)
    tl.store(o + offs, tl.cumsum(v, axis=1))
    tl.store(o + M * N + offs, tl.cumsum(v, axis=0, reverse=True))
    tl.store(o + 2 * M * N + offs, tl.associative_scan(v, 1, _max))
    tl.store(oi + offs, tl.cumsum((v > 0).to(tl.int32), axis=1, reverse=True))


@pytest.mark.parametrize("max_elements", [8192, 8])
def test_scans(max_elements):
    x = RNG.uniform(-1, 1, (M, N)).astype(np.float32)
    machine = MACHINE if max_elements == 8192 else small_vector_machine(max_elements)
    prog = compile_kernel(scans, SIG, {"M": M, "N": N}, machine=machine)
    (_, out, outi), _ = run(prog, 1, [x, np.zeros(3 * M * N, np.float32), np.zeros(M * N, np.int32)], machine=machine)
    out = out.reshape(3, M, N)
    close(out[0], np.cumsum(x, 1), rtol=1e-5, atol=1e-6)
    close(out[1], np.cumsum(x[::-1], 0)[::-1], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(out[2], np.maximum.accumulate(x, 1))
    np.testing.assert_array_equal(outi.reshape(M, N), np.cumsum((x > 0)[:, ::-1], 1)[:, ::-1])


@triton.jit
def _affine(a1, b1, a2, b2):
    return a1 * a2, b1 * a2 + b2  # composition of x -> a x + b: associative, not commutative


@triton.jit
def linear_recurrence(x, o, oi, M: tl.constexpr, N: tl.constexpr):
    rn = tl.arange(0, N)
    a = tl.load(x + rn)
    b = tl.load(x + N + rn)
    _, h = tl.associative_scan((a, b), 0, _affine)
    tl.store(o + rn, h)
    _, hr = tl.associative_scan((a, b), 0, _affine, reverse=True)
    tl.store(o + N + rn, hr)


def test_general_scan_linear_recurrence():
    a = RNG.uniform(0.5, 1.0, N).astype(np.float32)
    b = RNG.uniform(-1, 1, N).astype(np.float32)
    prog = compile_kernel(linear_recurrence, SIG, {"M": 1, "N": N})
    (_, out, _), _ = run(prog, 1, [np.concatenate([a, b]), np.zeros(2 * N, np.float32), np.zeros(1, np.int32)])
    h, hs = 0.0, []
    for k in range(N):
        h = h * a[k] + b[k]
        hs.append(h)
    close(out[:N], hs, rtol=1e-4, atol=1e-5)
    h, hr = 0.0, []
    for k in reversed(range(N)):
        h = h * a[k] + b[k]
        hr.append(h)
    close(out[N:], hr[::-1], rtol=1e-4, atol=1e-5)


@triton.jit
def _piecewise(a, b):
    return tl.where(a > b, a - b, b * 2.0), a + 1.0


@triton.jit
def map_elementwise(x, o, oi, M: tl.constexpr, N: tl.constexpr):
    r = tl.arange(0, N)
    v = tl.load(x + r)
    p, q = tl.map_elementwise(_piecewise, v, v * 0.5)
    tl.store(o + r, p * q)


def _generic_map_return(text: str) -> str:
    """The TTIR parser reads tt.map_elementwise.return only in MLIR's generic form (for now)."""

    def generic(m):
        values, types = m.group(1), m.group(2)
        return f'"tt.map_elementwise.return"({values}) : ({types}) -> ()'

    return re.sub(r"tt\.map_elementwise\.return ([^:]+?) : ([^\n]+?)(?= loc\(|$)", generic, text, flags=re.M)


def test_map_elementwise_runs_its_region_on_tiles():
    x = RNG.uniform(-1, 1, N).astype(np.float32)
    text = _generic_map_return(ttir_of(map_elementwise, SIG, {"M": 1, "N": N}))
    prog = compile_text(text, "map_elementwise")[0]
    (_, out, _), _ = run(prog, 1, [x, np.zeros(N, np.float32), np.zeros(1, np.int32)])
    b = x * np.float32(0.5)
    close(out, np.where(x > b, x - b, b * 2) * (x + 1), rtol=1e-6)
