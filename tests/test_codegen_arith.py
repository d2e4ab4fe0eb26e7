"""Code generation of arith ops and casts, on fresh TTIR of small kernels, against numpy."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import triton
import triton.language as tl
from codegen_kernels.harness import close, compile_kernel, run

RNG = np.random.default_rng(1)
N = 128


@triton.jit
def int_ops(x, y, o, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(x + offs)
    b = tl.load(y + offs)
    base = o + offs * 12
    tl.store(base + 0, a + b)
    tl.store(base + 1, a - b)
    tl.store(base + 2, a * b)
    tl.store(base + 3, a // b)
    tl.store(base + 4, a % b)
    tl.store(base + 5, a & b)
    tl.store(base + 6, a | b)
    tl.store(base + 7, a ^ b)
    tl.store(base + 8, a << (b & 7))
    tl.store(base + 9, a >> (b & 7))
    tl.store(base + 10, tl.maximum(a, b) - tl.minimum(a, b))
    tl.store(base + 11, tl.where(a < b, a, b) + (a == b).to(tl.int32))


def test_int_ops():
    a = RNG.integers(-1000, 1000, N).astype(np.int32)
    b = RNG.integers(1, 50, N).astype(np.int32) * RNG.choice([-1, 1], N).astype(np.int32)
    o = np.zeros((N, 12), np.int32)
    prog = compile_kernel(int_ops, {"x": "*i32", "y": "*i32", "o": "*i32", "BLOCK": "constexpr"}, {"BLOCK": N})
    (_, _, out), _ = run(prog, 1, [a, b, o])
    q = np.trunc(a / b).astype(np.int32)  # C division: toward zero
    want = np.stack(
        [
            a + b,
            a - b,
            a * b,
            q,
            a - q * b,
            a & b,
            a | b,
            a ^ b,
            a << (b & 7),
            a >> (b & 7),
            np.maximum(a, b) - np.minimum(a, b),
            np.where(a < b, a, b) + (a == b),
        ],
        1,
    )
    np.testing.assert_array_equal(out, want)


@triton.jit
def uint_ops(x, y, o, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(x + offs)
    b = tl.load(y + offs)
    base = o + offs * 6
    tl.store(base + 0, a // b)
    tl.store(base + 1, a % b)
    tl.store(base + 2, a >> 3)
    tl.store(base + 3, tl.maximum(a, b))
    tl.store(base + 4, tl.umulhi(a, b))
    tl.store(base + 5, (a < b).to(tl.uint32))


def test_unsigned_ops():
    a = RNG.integers(0, 2**32, N, dtype=np.uint64).astype(np.uint32)
    b = RNG.integers(1, 2**32, N, dtype=np.uint64).astype(np.uint32)
    o = np.zeros((N, 6), np.uint32)
    prog = compile_kernel(uint_ops, {"x": "*u32", "y": "*u32", "o": "*u32", "BLOCK": "constexpr"}, {"BLOCK": N})
    (_, _, out), _ = run(prog, 1, [a, b, o])
    hi = ((a.astype(np.uint64) * b.astype(np.uint64)) >> np.uint64(32)).astype(np.uint32)
    want = np.stack([a // b, a % b, a >> 3, np.maximum(a, b), hi, (a < b).astype(np.uint32)], 1)
    np.testing.assert_array_equal(out, want)


@triton.jit
def float_ops(x, y, o, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(x + offs)
    b = tl.load(y + offs)
    base = o + offs * 8
    tl.store(base + 0, a + b * 2.0)
    tl.store(base + 1, a / b)
    tl.store(base + 2, tl.maximum(a, b))
    tl.store(base + 3, tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL))
    tl.store(base + 4, tl.fma(a, b, a))
    tl.store(base + 5, (a >= b).to(tl.float32) - (a != b).to(tl.float32))
    tl.store(base + 6, -a)
    tl.store(base + 7, a % b)


def test_float_ops():
    a, b = RNG.uniform(-4, 4, N).astype(np.float32), RNG.uniform(0.5, 3, N).astype(np.float32)
    a[:4] = [np.nan, 1.0, -np.inf, 0.0]
    b[:4] = [1.0, np.nan, 2.0, 1.0]
    o = np.zeros((N, 8), np.float32)
    prog = compile_kernel(float_ops, {"x": "*fp32", "y": "*fp32", "o": "*fp32", "BLOCK": "constexpr"}, {"BLOCK": N})
    (_, _, out), _ = run(prog, 1, [a, b, o])
    want = np.stack(
        [
            a + b * 2,
            a / b,
            np.fmax(a, b),
            np.minimum(a, b),
            (a.astype(np.float64) * b + a).astype(np.float32),
            (a >= b).astype(np.float32) - (a != b),
            -a,
            np.fmod(a, b),
        ],
        1,
    )
    np.testing.assert_allclose(out, want, rtol=1e-6, equal_nan=True)


@triton.jit
def scalar_ops(x, o, n, f):
    s = tl.load(x)
    i = n * 3 - 7
    i = i // 2 + i % 5
    g = f * 2.5 - s
    tl.store(o, i.to(tl.float32))
    tl.store(o + 1, g)
    tl.store(o + 2, tl.exp(g))  # scalar transcendental: through a 1-element tile
    tl.store(o + 3, tl.maximum(s, f))
    tl.store(o + 4, (n > 3).to(tl.float32) + tl.where(f < s, 1.0, 2.0))
    tl.store(o + 5, (n.to(tl.int8) * 100).to(tl.float32))
    tl.store(o + 6, tl.sqrt(f) + (n.to(tl.float64) / 3.0).to(tl.float32))


def test_scalar_ops():
    x = np.array([0.75], np.float32)
    o = np.zeros(7, np.float32)
    sig = {"x": "*fp32", "o": "*fp32", "n": "i32", "f": "fp32"}
    prog = compile_kernel(scalar_ops, sig)
    (_, out), _ = run(prog, 1, [x, o, 11, 1.5])
    i = 11 * 3 - 7
    i = i // 2 + i % 5
    g = np.float32(1.5 * 2.5 - 0.75)
    want = [
        i,
        g,
        np.exp(g),
        1.5,
        1 + 2.0,
        np.float32(np.int8(np.int8(11) * np.int8(100))),
        np.sqrt(np.float32(1.5)) + np.float32(11 / 3),
    ]
    close(out, want, rtol=1e-6)


@triton.jit
def casts_kernel(x, xi, o_f16, o_bf16, o_i8, o_u16, o_f64, o_i64, o_rtz, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + offs)
    w = tl.load(xi + offs)
    tl.store(o_f16 + offs, v.to(tl.float16))
    tl.store(o_bf16 + offs, v.to(tl.bfloat16))
    tl.store(o_i8 + offs, w.to(tl.int8))
    tl.store(o_u16 + offs, w.to(tl.uint16))
    tl.store(o_f64 + offs, w.to(tl.float64) + v.to(tl.float64))
    tl.store(o_i64 + offs, w.to(tl.uint32).to(tl.int64) + v.to(tl.int64))
    tl.store(o_rtz + offs, v.to(tl.float16, fp_downcast_rounding="rtz"))


def test_casts():
    v = RNG.uniform(-300, 300, N).astype(np.float32)
    w = RNG.integers(-(2**31), 2**31, N, dtype=np.int64).astype(np.int32)
    outs = [
        np.zeros(N, d) for d in (np.float16, ml_dtypes.bfloat16, np.int8, np.uint16, np.float64, np.int64, np.float16)
    ]
    sig = {
        "x": "*fp32",
        "xi": "*i32",
        "o_f16": "*fp16",
        "o_bf16": "*bf16",
        "o_i8": "*i8",
        "o_u16": "*u16",
        "o_f64": "*fp64",
        "o_i64": "*i64",
        "o_rtz": "*fp16",
        "BLOCK": "constexpr",
    }
    prog = compile_kernel(casts_kernel, sig, {"BLOCK": N})
    (_, _, f16, bf16, i8, u16, f64, i64, rtz), _ = run(prog, 1, [v, w, *outs])
    np.testing.assert_array_equal(f16, v.astype(np.float16))
    np.testing.assert_array_equal(bf16, v.astype(ml_dtypes.bfloat16))
    np.testing.assert_array_equal(i8, w.astype(np.int8))
    np.testing.assert_array_equal(u16, w.astype(np.uint16))
    np.testing.assert_array_equal(f64, w.astype(np.float64) + v.astype(np.float64))
    np.testing.assert_array_equal(i64, w.view(np.uint32).astype(np.int64) + np.trunc(v).astype(np.int64))
    up = v.astype(np.float16).astype(np.float32)
    toward_zero = np.where(
        np.abs(up) > np.abs(v), np.nextafter(v.astype(np.float16), np.float16(0)), v.astype(np.float16)
    )
    np.testing.assert_array_equal(rtz, toward_zero)


@pytest.mark.parametrize("dtype", ["i1", "i8", "i16", "i64"])
def test_select_and_compare_dtypes(dtype):
    @triton.jit
    def sel(x, y, o, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        a = tl.load(x + offs)
        b = tl.load(y + offs)
        tl.store(o + offs, tl.where(a > b, a, b))

    npdt = {"i1": np.bool_, "i8": np.int8, "i16": np.int16, "i64": np.int64}[dtype]
    a = RNG.integers(0 if dtype == "i1" else -100, 2 if dtype == "i1" else 100, N).astype(npdt)
    b = RNG.integers(0 if dtype == "i1" else -100, 2 if dtype == "i1" else 100, N).astype(npdt)
    prog = compile_kernel(
        sel, {"x": f"*{dtype}", "y": f"*{dtype}", "o": f"*{dtype}", "BLOCK": "constexpr"}, {"BLOCK": N}
    )
    (_, _, out), _ = run(prog, 1, [a, b, np.zeros(N, npdt)])
    np.testing.assert_array_equal(out, np.where(a > b, a, b))
