"""Hand-written Triton kernels over the language surface, on plate and under Triton's interpreter.

    TRITON_DEFAULT_BACKEND=plate python benchmarks/probe_language.py [-k NAME] [--no-interpret]

Each probe is a small @triton.jit kernel written as a Triton 3.7 user would write it, launched on "plate"
tensors, its outputs checked against a numpy/torch reference on the CPU (exact unless a tolerance is named)
and compared with the same kernel run by ``TRITON_INTERPRET=1`` on CPU tensors (a child process: the
interpreter is chosen when the kernels are defined). The interpreter is a second opinion, not the judge:
where Triton's semantics are undefined (a shift by the width or more, an out-of-range float to int
conversion) or the interpreter approximates them (its fma is a multiply and an add, its clamp ignores
``propagate_nan``), the reference says what CUDA's lowering gives and the table shows both.

Prints one row per probe: name, feature, result (pass / FAIL / error), whether the interpreter's
outputs are the same bits, and the first mismatch. Exit status 1 when a probe failed.
"""

from __future__ import annotations

import argparse
import math
import os
import pickle
import subprocess
import sys
import tempfile
import traceback
from fractions import Fraction

import mpmath
import numpy as np
import scipy.special
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
DEVICE = "cpu" if INTERPRET else "plate"
PROBES = []


def probe(feature):
    def register(fn):
        PROBES.append((fn.__name__.removeprefix("probe_"), feature, fn))
        return fn

    return register


def dev(a):
    """A numpy array or torch tensor on the probe's device."""
    t = torch.from_numpy(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) else a
    return t.to(DEVICE)


def empty(shape, dtype):
    return torch.zeros(shape, dtype=dtype, device=DEVICE)


def host(t):
    return t.detach().to("cpu").numpy() if t.dtype != torch.bfloat16 else t.detach().to("cpu").float().numpy()


RNG_SEED = 27


def rng(seed=RNG_SEED):
    return np.random.default_rng(seed)


# ---- comparisons ------------------------------------------------------------------------------------------------
def mismatch(got, want, tol):
    """None when got equals want (floats: same bits up to NaN payloads, or within tol), else a description."""
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype.kind in "UO":  # a probe's own list of problems, against ["ok"]
        return None if got.tolist() == want.tolist() else "; ".join(str(g) for g in got.ravel())
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    if got.dtype.kind == "f" or want.dtype.kind == "f":
        g, w = got.astype(np.float64), want.astype(np.float64)
        both_nan = np.isnan(g) & np.isnan(w)
        if tol:
            ok = both_nan | np.isclose(g, w, rtol=tol, atol=tol)
        else:
            ok = both_nan | ((g == w) & (np.signbit(g) == np.signbit(w)))
    else:
        g, w = got, want
        ok = g == w
    if ok.all():
        return None
    i = np.argwhere(~ok)[0]
    i = tuple(int(v) for v in i)
    return f"{int((~ok).sum())} differ, first at {i}: got {g[i]!r} want {w[i]!r}"


# ---- probes -----------------------------------------------------------------------------------------------------
@triton.jit
def k_clamp(x, lo, hi, o, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(x + r)
    lo_v = tl.load(lo + r)
    hi_v = tl.load(hi + r)
    tl.store(o + r, tl.clamp(a, lo_v, hi_v, propagate_nan=tl.PropagateNan.ALL))
    tl.store(o + N + r, tl.clamp(a, lo_v, hi_v))
    tl.store(o + 2 * N + r, tl.minimum(a, lo_v, propagate_nan=tl.PropagateNan.ALL))
    tl.store(o + 3 * N + r, tl.maximum(a, hi_v))
    tl.store(o + 4 * N + r, tl.clamp(a, -0.5, 0.5, propagate_nan=tl.PropagateNan.ALL))


@probe("tl.clamp / minimum / maximum with propagate_nan, NaN inputs")
def probe_clamp_nan():
    n = 16
    x = rng().uniform(-2, 2, n).astype(np.float32)
    x[[1, 5, 9]] = np.nan
    x[3] = -np.inf
    lo = np.full(n, -1.0, np.float32)
    hi = np.full(n, 1.0, np.float32)
    lo[5] = np.nan  # minimum/maximum only: clamp with a NaN bound is undefined, lane 5 of the clamps ignored
    o = empty(5 * n, torch.float32)
    k_clamp[(1,)](dev(x), dev(lo), dev(hi), o, n)
    got = host(o).reshape(5, n)
    with np.errstate(invalid="ignore"):
        want = np.stack(
            [
                np.minimum(np.maximum(x, lo), hi),  # ALL: NaN x gives NaN
                np.fmin(np.fmax(x, lo), hi),  # NONE: minnum(maxnum(x, lo), hi), CUDA's lowering
                np.minimum(x, lo),
                np.fmax(x, hi),
                np.minimum(np.maximum(x, -0.5), 0.5),
            ]
        ).astype(np.float32)
    got[:2, 5] = want[:2, 5] = 0  # NaN bound: undefined
    return {"out": (got, want, 0)}


@triton.jit
def k_int_div(a, b, o, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(a + r)
    y = tl.load(b + r)
    tl.store(o + r, x // y)
    tl.store(o + N + r, x % y)
    tl.store(o + 2 * N + r, x // 7)
    tl.store(o + 3 * N + r, x % -7)
    tl.store(o + 4 * N + r, tl.cdiv(x, 4))


def c_div(x, y):
    """C's truncating quotient and remainder, exactly (Python integers)."""
    q = [abs(int(a)) // abs(int(b)) * (1 if (a < 0) == (b < 0) else -1) for a, b in zip(x, y)]
    return np.array(q, object), np.array([int(a) - qi * int(b) for a, b, qi in zip(x, y, q)], object)


@probe("integer // % of negatives (C truncation), tl.cdiv, int8/int32/int64")
def probe_int_div_negatives():
    res = {}
    for dt, tdt in ((np.int8, torch.int8), (np.int32, torch.int32), (np.int64, torch.int64)):
        n = 32
        g = rng()
        info = np.iinfo(dt)
        x = g.integers(info.min + 1, info.max, n, dtype=np.int64)
        x[:4] = [-7, 7, -1, info.min + 1]
        y = g.integers(-9, 10, n)
        y[y == 0] = 3
        y[:4] = [2, -2, 7, -1]
        x, y = x.astype(dt), y.astype(dt)
        o = empty(5 * n, tdt)
        k_int_div[(1,)](dev(x), dev(y), o, n)
        q, m = c_div(x, y)
        q7, _ = c_div(x, np.full(n, 7))
        _, m7 = c_div(x, np.full(n, -7))
        with np.errstate(over="ignore"):
            cd, _ = c_div((x + dt(3)).astype(dt), np.full(n, 4))  # tl.cdiv(x, 4): (x + 3) // 4, wrapping, truncating
        want = np.stack([q, m, q7, m7, cd]).astype(dt)
        res[np.dtype(dt).name] = (host(o).reshape(5, n), want, 0)
    return res


@triton.jit
def k_uint(a, b, o, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(a + r)
    y = tl.load(b + r)
    tl.store(o + r, (x < y).to(x.dtype))
    tl.store(o + N + r, tl.minimum(x, y))
    tl.store(o + 2 * N + r, tl.maximum(x, y))
    tl.store(o + 3 * N + r, x // (y | 1))
    tl.store(o + 4 * N + r, x % (y | 1))
    tl.store(o + 5 * N + r, x >> 3)
    tl.store(o + 6 * N + r, tl.where(x > 5, x, y))


@probe("unsigned compare/min/max/div/rem/shift (uint8/16/32/64 values past the sign bit)")
def probe_unsigned_ops():
    res = {}
    for dt, tdt in (
        (np.uint8, torch.uint8),
        (np.uint16, torch.uint16),
        (np.uint32, torch.uint32),
        (np.uint64, torch.uint64),
    ):
        n = 32
        info = np.iinfo(dt)
        g = rng()
        x = g.integers(0, info.max, n, dtype=np.uint64, endpoint=True).astype(dt)
        y = g.integers(0, info.max, n, dtype=np.uint64, endpoint=True).astype(dt)
        x[:3] = [info.max, 1 << (info.bits - 1), 0]
        y[:3] = [1, 2, info.max]
        o = empty(7 * n, tdt)
        k_uint[(1,)](dev(x), dev(y), o, n)
        y1 = y | dt(1)
        want = np.stack(
            [(x < y).astype(dt), np.minimum(x, y), np.maximum(x, y), x // y1, x % y1, x >> dt(3), np.where(x > 5, x, y)]
        ).astype(dt)
        res[np.dtype(dt).name] = (
            host(o).reshape(7, n).view(dt) if dt in (np.uint16, np.uint32, np.uint64) else host(o).reshape(7, n),
            want,
            0,
        )
    return res


@triton.jit
def k_shift(a, s, o, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(a + r)
    k = tl.load(s + r)
    tl.store(o + r, x << k)
    tl.store(o + N + r, x >> k)
    tl.store(o + 2 * N + r, (x.to(tl.uint32, bitcast=True) >> k.to(tl.uint32)).to(tl.int32, bitcast=True))


@probe("shifts by a runtime amount, including >= the width (undefined in Triton: PTX clamps)")
def probe_shift_width():
    n = 32
    x = rng().integers(-(2**31), 2**31, n).astype(np.int32)
    x[:4] = [-1, 1, -(2**31), 2**31 - 1]
    k = (np.arange(n) % 41).astype(np.int32)
    o = empty(3 * n, torch.int32)
    k_shift[(1,)](dev(x), dev(k), o, n)
    got = host(o).reshape(3, n)
    in_range = k < 32
    kk = np.minimum(k, 31)
    with np.errstate(over="ignore"):
        want = np.stack(
            [
                np.where(in_range, (x.astype(np.int64) << kk).astype(np.int32), 0),  # shl.b32 clamps: 0
                np.where(in_range, x >> kk, x >> 31),  # shr.s32: sign fill
                np.where(in_range, (x.view(np.uint32) >> kk.astype(np.uint32)).view(np.int32), 0),
            ]
        ).astype(np.int32)
    # in range: defined and checked; >= 32: undefined, what PTX gives shown apart
    return {
        "defined": (got[:, in_range], want[:, in_range], 0),
        "width_or_more (undefined; PTX's value)": (got[:, ~in_range], want[:, ~in_range], None),
    }


@triton.jit
def k_f2i(x, o8, ou8, o32, o64, N: tl.constexpr):
    r = tl.arange(0, N)
    v = tl.load(x + r)
    tl.store(o8 + r, v.to(tl.int8))
    tl.store(ou8 + r, v.to(tl.uint8))
    tl.store(o32 + r, v.to(tl.int32))
    tl.store(o64 + r, v.to(tl.int64))


@probe("float -> int8/uint8/int32/int64 conversions: truncation, in range (out of range undefined)")
def probe_float_to_int():
    n = 64
    x = rng().uniform(-130, 260, n).astype(np.float32)
    x[:8] = [-0.9, 0.9, -1.5, 127.99, -128.5, 255.7, 1e10, -1e19]
    outs = [empty(n, t) for t in (torch.int8, torch.uint8, torch.int32, torch.int64)]
    k_f2i[(1,)](dev(x), *outs, n)
    t = np.trunc(x.astype(np.float64))
    res = {}
    for o, dt in zip(outs, (np.int8, np.uint8, np.int32, np.int64)):
        info = np.iinfo(dt)
        ok = (t >= info.min) & (t <= info.max)
        res[np.dtype(dt).name] = (host(o)[ok], t[ok].astype(dt), 0)
        sat = np.clip(t, info.min, info.max).astype(dt)  # cvt.rzi.sat: what CUDA gives out of range
        res[np.dtype(dt).name + " out of range (undefined; saturated shown)"] = (host(o)[~ok], sat[~ok], None)
    return res


@triton.jit
def k_i2f(a, b, c, o32, o64, o16, obf, ou, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(a + r)
    y = tl.load(b + r)
    z = tl.load(c + r)
    tl.store(o32 + r, x.to(tl.float32))
    tl.store(o64 + r, x.to(tl.float64))
    tl.store(o16 + r, z.to(tl.float16))
    tl.store(obf + r, z.to(tl.bfloat16))
    tl.store(ou + r, y.to(tl.float32))


@probe("int64/uint64/int32 -> fp32/fp64/fp16/bf16 rounding (ties to even, overflow to inf)")
def probe_int_to_float():
    n = 32
    g = rng()
    x = g.integers(-(2**62), 2**62, n, dtype=np.int64)
    x[:6] = [2**53 + 1, 2**24 + 1, 2**24 + 3, -(2**63), 2**63 - 1, (2**25) + 2]
    y = g.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)
    y[:3] = [2**64 - 1, 2**63 + 2**39, 2**63 + 2**40 + 1]
    z = g.integers(-80000, 80000, n).astype(np.int32)
    z[:6] = [65504, 65520, 65519, -70000, 2049, 257]
    outs = [empty(n, t) for t in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.float32)]
    k_i2f[(1,)](dev(x), dev(y), dev(z), *outs, n)
    exact_f32 = np.array([float(int(v)) for v in x])  # Python's int -> float is exact RTNE to fp64; fp32 below
    return {
        "i64->f32": (host(outs[0]), np.array([np.float32(int(v)) for v in x], np.float32), 0),
        "i64->f64": (host(outs[1]), exact_f32, 0),
        "i32->f16": (host(outs[2]), z.astype(np.float16), 0),
        "i32->bf16": (host(outs[3]), torch.from_numpy(z).to(torch.bfloat16).float().numpy(), 0),
        "u64->f32": (host(outs[4]), np.array([np.float32(int(v)) for v in y], np.float32), 0),
    }


@triton.jit
def k_downcast(x, o16, o16z, obf, obfz, N: tl.constexpr):
    r = tl.arange(0, N)
    v = tl.load(x + r)
    tl.store(o16 + r, v.to(tl.float16))
    tl.store(o16z + r, v.to(tl.float16, fp_downcast_rounding="rtz"))
    tl.store(obf + r, v.to(tl.bfloat16))
    tl.store(obfz + r, v.to(tl.bfloat16, fp_downcast_rounding="rtz"))


def toward_zero(x, rounded_up_or_down):
    """The rounding of x toward zero, given its round-to-nearest value r in a narrower type."""
    r = rounded_up_or_down
    too_far = np.abs(r.astype(np.float64)) > np.abs(x.astype(np.float64))
    return np.where(too_far & np.isfinite(x), np.nextafter(r, np.zeros_like(r)), r), too_far


@probe("fp32 -> fp16 / bf16 conversions, round to nearest even and fp_downcast_rounding='rtz', subnormals")
def probe_downcast_rounding():
    n = 64
    g = rng()
    x = (g.standard_normal(n) * np.exp2(g.integers(-26, 17, n))).astype(np.float32)
    x[:8] = [65520.0, 65519.99, 1e-8, -3e-8, 5.960464477539063e-08, np.inf, -np.nan, 70000.0]
    outs = [empty(n, t) for t in (torch.float16, torch.float16, torch.bfloat16, torch.bfloat16)]
    k_downcast[(1,)](dev(x), *outs, n)
    with np.errstate(over="ignore"):
        h = x.astype(np.float16)
    rz16 = h.copy()
    big = np.isinf(h) & np.isfinite(x)
    rz16[big] = np.copysign(np.float16(65504), x[big])
    rz16, _ = toward_zero(x, rz16)
    b = torch.from_numpy(x).to(torch.bfloat16)
    bits = x.view(np.uint32) & np.uint32(0xFFFF0000)  # bf16 rtz is truncation of the low 16 bits (NaN kept NaN)
    rzb = bits.view(np.float32)
    return {
        "f16 rtne": (host(outs[0]), h, 0),
        "f16 rtz": (host(outs[1]), rz16.astype(np.float16), 0),
        "bf16 rtne": (host(outs[2]), b.float().numpy(), 0),
        "bf16 rtz": (host(outs[3]), rzb, 0),
    }


@triton.jit
def k_bitcast(x, h, d, o, oh, od, N: tl.constexpr):
    r = tl.arange(0, N)
    v = tl.load(x + r).to(tl.int32, bitcast=True)
    tl.store(o + r, (v ^ 0x1).to(tl.float32, bitcast=True))
    w = tl.cast(tl.load(h + r), tl.int16, bitcast=True)
    tl.store(oh + r, w + 1)
    u = tl.load(d + r).to(tl.uint64, bitcast=True)
    tl.store(od + r, (u >> 52).to(tl.int64))


@probe("bitcasts fp32<->int32 (NaN payloads kept), fp16->int16, fp64->uint64")
def probe_bitcast():
    n = 16
    g = rng()
    x = g.standard_normal(n).astype(np.float32)
    x[:3] = np.array([0x7FC00001, 0xFF800001, 0x7F800000], np.uint32).view(np.float32)  # NaNs with payloads, inf
    hh = g.standard_normal(n).astype(np.float16)
    hh[0] = np.array(0xFE01, np.uint16).view(np.float16)
    d = g.standard_normal(n) * 1e300
    d[0] = -np.inf
    o, oh, od = empty(n, torch.int32), empty(n, torch.int16), empty(n, torch.int64)
    # stored as int32 for the fp32 output so that NaN payloads are compared bit for bit
    k_bitcast[(1,)](dev(x), dev(hh), dev(d), o.view(torch.float32), oh, od, n)
    with np.errstate(over="ignore"):
        return {
            "f32 bits": (host(o), x.view(np.int32) ^ 1, 0),
            "f16 bits": (host(oh), (hh.view(np.int16) + np.int16(1)).astype(np.int16), 0),
            "f64 exponent": (host(od), (d.view(np.uint64) >> np.uint64(52)).astype(np.int64), 0),
        }


@triton.jit
def k_abs(a, b, f, o, ob, of, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(o + r, tl.abs(tl.load(a + r)))
    tl.store(ob + r, tl.abs(tl.load(b + r)))
    tl.store(of + r, tl.abs(tl.load(f + r)).to(tl.int32, bitcast=True))


@probe("tl.abs of INT_MIN (wraps) on int8/int32, of -0.0 and NaN on fp32 (sign bit cleared)")
def probe_abs_edges():
    n = 8
    a = np.array([-128, -127, -1, 0, 1, 127, -5, 5], np.int8)
    b = np.array([-(2**31), -(2**31) + 1, -1, 0, 1, 2**31 - 1, -7, 7], np.int32)
    f = np.array([-0.0, 0.0, -np.inf, np.nan, -1.5, 1.5, -1e-45, 3.0], np.float32)
    f[3] = np.array(0xFFC00000, np.uint32).view(np.float32)  # -NaN
    o, ob, of = empty(n, torch.int8), empty(n, torch.int32), empty(n, torch.int32)
    k_abs[(1,)](dev(a), dev(b), dev(f), o, ob, of, n)
    with np.errstate(over="ignore"):
        return {
            "int8": (host(o), np.abs(a), 0),
            "int32": (host(ob), np.abs(b), 0),
            "fp32 bits": (host(of), (f.view(np.uint32) & np.uint32(0x7FFFFFFF)).view(np.int32), 0),
        }


@triton.jit
def k_reorder(x, o, M: tl.constexpr, N: tl.constexpr):
    r = tl.arange(0, M * N)
    v = tl.load(x + r)
    a = tl.reshape(v, (M, N), can_reorder=True)
    tl.store(o, tl.sum(tl.sum(a, axis=1), axis=0))
    tl.store(o + 1, tl.max(tl.max(a, axis=0), axis=0))
    b = tl.cat(v, v * 2, can_reorder=True)
    tl.store(o + 2, tl.sum(b, axis=0))
    tl.store(o + 3, tl.min(b, axis=0))


@probe("tl.reshape(can_reorder=True) and tl.cat(can_reorder=True) followed by order-free reductions")
def probe_reshape_reorder():
    m, n = 8, 16
    x = rng().integers(-1000, 1000, m * n).astype(np.int32)
    o = empty(4, torch.int32)
    k_reorder[(1,)](dev(x), o, m, n)
    return {"out": (host(o), np.array([x.sum(), x.max(), 3 * x.sum(), min(x.min(), 2 * x.min())], np.int32), 0)}


@triton.jit
def k_gather0(src, idx, o, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    s = tl.load(src + rm[:, None] * N + rn[None, :])
    i = tl.load(idx + rk[:, None] * N + rn[None, :])
    g = tl.gather(s, i, axis=0)  # [K, N]: g[k, n] = s[i[k, n], n]
    tl.store(o + rk[:, None] * N + rn[None, :], g)
    j = tl.load(idx + rk[:, None] * N + rn[None, :] % 4) % N  # [K, N] column indices into rows < K
    h = tl.gather(g, j, axis=1)
    tl.store(o + K * N + rk[:, None] * N + rn[None, :], h)


@probe("tl.gather along axis 0 with more index rows than source rows, then along axis 1")
def probe_gather_axis0():
    m, n, k = 8, 16, 32
    g = rng()
    s = g.standard_normal((m, n)).astype(np.float32)
    i = g.integers(0, m, (k, n)).astype(np.int32)
    o = empty(2 * k * n, torch.float32)
    k_gather0[(1,)](dev(s), dev(i), o, m, n, k)
    g0 = np.take_along_axis(s, i, 0)
    j = i[:, np.arange(n) % 4] % n
    got = host(o).reshape(2, k, n)
    return {"axis0": (got[0], g0, 0), "axis1": (got[1], np.take_along_axis(g0, j, 1), 0)}


@triton.jit
def _seg_combine(v1, f1, v2, f2):
    # segmented sum in scan order: a flagged element starts a new sum
    return tl.where(f2 != 0, v2, v1 + v2), f1 | f2


@triton.jit
def k_segscan(x, f, o, N: tl.constexpr):
    r = tl.arange(0, N)
    v = tl.load(x + r)
    fl = tl.load(f + r)
    s, _ = tl.associative_scan((v, fl), 0, _seg_combine, reverse=True)
    tl.store(o + r, s)


@probe("tl.associative_scan with a tuple (segmented sum) and reverse=True")
def probe_segscan_reverse():
    n = 64
    g = rng()
    x = g.integers(-50, 50, n).astype(np.int32)
    fl = (g.random(n) < 0.2).astype(np.int32)
    o = empty(n, torch.int32)
    k_segscan[(1,)](dev(x), dev(fl), o, n)
    # reverse=True scans from the last element: out[i] = x[i] + out[i + 1] unless element i is flagged
    want = np.zeros(n, np.int32)
    acc = 0
    for i in range(n - 1, -1, -1):
        acc = x[i] if fl[i] else x[i] + acc
        want[i] = acc
    return {"out": (host(o), want, 0)}


@triton.jit
def _max_last_count(v1, i1, c1, v2, i2, c2):
    gt = v1 > v2
    lt = v1 < v2
    v = tl.where(gt, v1, v2)
    i = tl.where(gt, i1, tl.where(lt, i2, tl.maximum(i1, i2)))
    c = tl.where(gt, c1, tl.where(lt, c2, c1 + c2))
    return v, i, c


@triton.jit
def k_reduce3(x, o, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    v = tl.load(x + rm[:, None] * N + rn[None, :])
    idx = tl.broadcast_to(rn[None, :], (M, N))
    one = tl.full((M, N), 1, tl.int32)
    mv, mi, mc = tl.reduce((v, idx, one), 1, _max_last_count, keep_dims=True)
    tl.store(o + rm[:, None] * 3, mv.to(tl.int32))
    tl.store(o + rm[:, None] * 3 + 1, mi)
    tl.store(o + rm[:, None] * 3 + 2, mc)
    am = tl.argmax(v, axis=1, tie_break_left=False)
    an = tl.argmin(v, axis=1)
    tl.store(o + 3 * M + rm, am)
    tl.store(o + 4 * M + rm, an)


@probe("tl.reduce with a 3-tuple combine (max, last index, count), keep_dims; argmax tie_break_left=False")
def probe_reduce_tuple3():
    m, n = 8, 32
    x = rng().integers(0, 6, (m, n)).astype(np.int16)
    o = empty(5 * m, torch.int32)
    k_reduce3[(1,)](dev(x), o, m, n)
    mx = x.max(1)
    last = n - 1 - np.argmax(x[:, ::-1], 1)
    want = np.concatenate([np.stack([mx, last, (x == mx[:, None]).sum(1)], 1).reshape(-1), last, np.argmin(x, 1)])
    return {"out": (host(o), want.astype(np.int32), 0)}


@triton.autotune(
    configs=[triton.Config({"BLOCK": b}, num_warps=w) for b, w in ((16, 1), (32, 2), (64, 4))],
    key=["n"],
    restore_value=["x"],
    prune_configs_by={
        "early_config_prune": lambda configs, nargs, **kw: [c for c in configs if c.kwargs["BLOCK"] <= nargs["n"]]
    },
)
@triton.jit
def k_bump(x, n, BLOCK: tl.constexpr):
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = r < n
    tl.store(x + r, tl.load(x + r, mask=m) + 1, mask=m)


@triton.heuristics({"BLOCK": lambda a: triton.next_power_of_2(a["n"]) // 4, "EVEN": lambda a: a["n"] % a["BLOCK"] == 0})
@triton.jit
def k_scaled(x, o, n, scale, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(o + r, tl.load(x + r) * scale)
    else:
        tl.store(o + r, tl.load(x + r, mask=r < n) * scale, mask=r < n)


@probe("autotune with restore_value + prune_configs_by on an in-place kernel; heuristics; grid lambda on meta")
def probe_autotune_restore():
    n = 50
    x = np.arange(n, dtype=np.float32)
    t = dev(x)
    k_bump[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](t, n)
    k_bump[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](t, n)  # the cached best config, no tuning
    o = empty(n, torch.float32)
    k_scaled[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](t, o, n, 0.5)
    o2 = empty(64, torch.float32)
    k_scaled[lambda meta: (triton.cdiv(64, meta["BLOCK"]),)](dev(np.arange(64, dtype=np.float32)), o2, 64, 2.0)
    return {
        "x + 2": (host(t), x + 2, 0),
        "masked": (host(o), (x + 2) * 0.5, 0),
        "even": (host(o2), np.arange(64, dtype=np.float32) * 2, 0),
    }


@triton.jit
def k_atomics(acc16, accb, idx, vals, cas, xch, bits, m64, N: tl.constexpr):
    r = tl.arange(0, N)
    i = tl.load(idx + r)
    v = tl.load(vals + r)
    keep = (r % 3) != 0
    tl.atomic_add(acc16 + i, v.to(tl.float16), mask=keep)
    tl.atomic_add(accb + i, v.to(tl.bfloat16), mask=keep, sem="relaxed", scope="gpu")
    old = tl.atomic_cas(cas + r, r % 2, r + 100)  # lanes whose value equals r % 2 take r + 100
    tl.store(cas + N + r, old)
    prev = tl.atomic_xchg(xch + i, r)  # same-address lanes: the last one in lane order stays
    tl.atomic_or(bits + (r % 4), (1 << (r % 63)).to(tl.int64))
    tl.atomic_and(bits + 4 + (r % 4), ~(1 << (r % 63)).to(tl.int64))
    tl.atomic_xor(bits + 8 + (r % 4), (r * 0x1E3779B9).to(tl.int64))  # int32 product, wraps
    tl.atomic_max(m64 + (r % 2), (v * 1e6).to(tl.int64) - (1 << 40), mask=keep)
    tl.atomic_min(m64 + 2 + (r % 2), (v * 1e6).to(tl.int64) - (1 << 40), mask=keep, sem="acq_rel")
    tl.store(xch + N + r, prev * 0 + 1)


@probe("atomics: masked fp16/bf16 add on repeated addresses, cas per lane, xchg, and/or/xor/max/min on int64")
def probe_atomics_mix():
    n = 32
    g = rng()
    idx = g.integers(0, 4, n).astype(np.int32)
    v = g.choice([0.25, 0.5, -1.0, 2.0, -0.125], n).astype(np.float32)  # sums exact in fp16 and bf16
    acc16, accb = empty(4, torch.float16), empty(4, torch.bfloat16)
    cas = torch.cat([dev(np.arange(n, dtype=np.int32) % 4), empty(n, torch.int32)])
    xch = empty(2 * n, torch.int32)
    bits = dev(np.array([0] * 4 + [-1] * 4 + [0] * 4, np.int64))
    m64 = dev(np.array([-(2**62), -(2**62), 2**62, 2**62], np.int64))
    k_atomics[(1,)](acc16, accb, dev(idx), dev(v), cas, xch, bits, m64, n)
    r = np.arange(n)
    keep = r % 3 != 0
    want_sum = np.array([v[keep & (idx == j)].sum() for j in range(4)], np.float32)
    init = r % 4
    want_cas = np.concatenate([np.where(init == r % 2, r + 100, init), init]).astype(np.int32)
    last = np.array([r[idx == j].max() if (idx == j).any() else 0 for j in range(4)])
    bit = (np.int32(1) << (r % 63).astype(np.int32)).astype(np.int64)  # an int32 shift (1 << 31 is INT_MIN)
    o_or = [np.bitwise_or.reduce(bit[r % 4 == j]) for j in range(4)]
    o_and = [np.bitwise_and.reduce(~bit[r % 4 == j]) for j in range(4)]
    wrapped = [(int(k) * 0x1E3779B9 + 2**31) % 2**32 - 2**31 for k in r]
    o_xor = [np.bitwise_xor.reduce([np.int64(wrapped[k]) for k in r if k % 4 == j]) for j in range(4)]
    w = (v * np.float32(1e6)).astype(np.int64) - (1 << 40)
    want_m = [w[keep & (r % 2 == j)].max() for j in range(2)] + [w[keep & (r % 2 == j)].min() for j in range(2)]
    return {
        "fp16 add": (host(acc16), want_sum, 0),
        "bf16 add": (host(accb), want_sum, 0),
        "cas": (host(cas), want_cas, 0),
        "xchg last lane": (host(xch)[:4], last.astype(np.int32), 0),
        "or/and/xor": (host(bits), np.array(o_or + o_and + o_xor, np.int64), 0),
        "max/min": (host(m64), np.array(want_m, np.int64), 0),
    }


@triton.jit
def k_blockptr(a, o, M, N, stride_m, BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    src = tl.make_block_ptr(a, (M, N), (stride_m, 1), (pid * BM, 0), (BM, BN), (1, 0))
    dst = tl.make_block_ptr(o, (M, N), (stride_m, 1), (pid * BM, 0), (BM, BN), (1, 0))
    acc = tl.zeros((BM,), tl.float32)
    for _ in range(0, tl.cdiv(N, BN)):
        t = tl.load(src, boundary_check=(0, 1), padding_option="nan")
        nan_count = tl.sum(tl.where(t != t, 1.0, 0.0), axis=1)
        acc += nan_count
        tl.store(dst, tl.where(t != t, -1.0, t * 2.0), boundary_check=(0, 1))
        src = tl.advance(src, (0, BN))
        dst = tl.advance(dst, (0, BN))
    tl.store(o + M * stride_m + pid * BM + tl.arange(0, BM), acc, mask=pid * BM + tl.arange(0, BM) < M)


@probe("block pointers: boundary_check on both dims, padding_option='nan', advance in a loop, ragged stores")
def probe_block_ptr_nan_pad():
    m, n, bm, bn = 37, 29, 16, 8
    a = rng().standard_normal((m, n)).astype(np.float32)
    o = empty(m * n + 48, torch.float32)
    o[m * n :] = 7.0
    k_blockptr[(triton.cdiv(m, bm),)](dev(a), o, m, n, n, bm, bn)
    got = host(o)
    pad_cols = triton.cdiv(n, bn) * bn - n
    pads = np.full(48, 7.0, np.float32)
    pads[:m] = pad_cols  # rows past M are padded too, but their counts are not stored
    return {"tile": (got[: m * n].reshape(m, n), a * 2, 0), "nan pad count": (got[m * n : m * n + m], pads[:m], 0)}


@triton.jit
def k_collatz(x, o, N: tl.constexpr):
    r = tl.arange(0, N)
    v = tl.load(x + r).to(tl.int64)
    steps = tl.zeros((N,), tl.int32)
    while tl.max(v, axis=0) > 1:
        active = v > 1
        v = tl.where(active, tl.where(v % 2 == 0, v // 2, 3 * v + 1), v)
        steps += active.to(tl.int32)
    tl.store(o + r, steps)
    # a scalar while loop whose bound is read from memory, and an early exit through the condition
    i = 0
    total = 0
    limit = tl.load(x)
    while (i < limit) & (total < 1000):
        total += i * i
        i += 1
    tl.store(o + N, total)
    tl.store(o + N + 1, i)


@probe("while loops with data-dependent exits (vector Collatz; scalar loop with a compound condition)")
def probe_while_collatz():
    n = 16
    x = np.array([27, 1, 2, 3, 7, 9, 97, 871, 6171, 5, 6, 8, 16, 31, 41, 55], np.int32)
    o = empty(n + 2, torch.int32)
    k_collatz[(1,)](dev(x), o, n)

    def steps(v):
        k = 0
        while v > 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            k += 1
        return k

    i = total = 0
    while i < x[0] and total < 1000:
        total += i * i
        i += 1
    return {"out": (host(o), np.array([steps(int(v)) for v in x] + [total, i], np.int32), 0)}


@triton.jit
def k_bdot(a, b, o, B: tl.constexpr, M: tl.constexpr, K: tl.constexpr, N: tl.constexpr):
    rb = tl.arange(0, B)[:, None, None]
    rm = tl.arange(0, M)[None, :, None]
    rk = tl.arange(0, K)
    rn = tl.arange(0, N)[None, None, :]
    x = tl.load(a + rb * M * K + rm * K + rk[None, None, :])
    y = tl.load(b + rb * K * N + rk[None, :, None] * N + rn)
    c = tl.dot(x, y)  # int8 x int8 -> int32, batched
    tl.store(o + rb * M * N + rm * N + rn, c)
    y2 = tl.permute(y, (0, 2, 1))  # [B, N, K]
    d = tl.dot(tl.permute(y2, (0, 2, 1)).to(tl.float16), tl.full((B, N, 16), 1.0, tl.float16), out_dtype=tl.float16)
    tl.store(
        o + B * M * N + rb * K * 16 + tl.arange(0, K)[None, :, None] * 16 + tl.arange(0, 16)[None, None, :],
        d.to(tl.int32),
    )


@probe("3-D (batched) tl.dot int8 -> int32 exact; fp16 dot with out_dtype=fp16 over permuted operands")
def probe_batched_int8_dot():
    b, m, k, n = 2, 16, 32, 16
    g = rng()
    x = g.integers(-128, 128, (b, m, k)).astype(np.int8)
    y = g.integers(-128, 128, (b, k, n)).astype(np.int8)
    o = empty(b * m * n + b * k * 16, torch.int32)
    k_bdot[(1,)](dev(x), dev(y), o, b, m, k, n)
    got = host(o)
    want = np.einsum("bmk,bkn->bmn", x.astype(np.int64), y.astype(np.int64)).astype(np.int32)
    rowsum = np.repeat(y.astype(np.int64).sum(2)[:, :, None], 16, 2).astype(np.int32)
    return {
        "int8": (got[: b * m * n].reshape(b, m, n), want, 0),
        "fp16 out": (got[b * m * n :].reshape(b, k, 16), rowsum, 0),
    }


@triton.jit
def k_rounded(a, b, c, o, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(a + r)
    y = tl.load(b + r)
    z = tl.load(c + r)
    tl.store(o + r, tl.fma(x, y, z))
    tl.store(o + N + r, tl.div_rn(x, y))
    tl.store(o + 2 * N + r, tl.sqrt_rn(tl.abs(x)))
    tl.store(o + 3 * N + r, tl.fdiv(x, y, ieee_rounding=True))
    tl.store(o + 4 * N + r, x / y)


@probe("tl.fma (one rounding), div_rn, sqrt_rn, fdiv(ieee_rounding), '/' on fp32: bit-exact")
def probe_fma_div():
    n = 64
    g = rng()
    x = g.standard_normal(n).astype(np.float32)
    y = g.standard_normal(n).astype(np.float32)
    z = (-x.astype(np.float64) * y).astype(np.float32)  # cancellation: fma and mul+add differ
    o = empty(5 * n, torch.float32)
    k_rounded[(1,)](dev(x), dev(y), dev(z), o, n)
    got = host(o).reshape(5, n)
    fma = np.array([np.float32(float(a) * float(b) + float(c)) for a, b, c in zip(x, y, z)], np.float32)
    q = (x / y).astype(np.float32)
    return {
        "fma": (got[0], fma, 0),
        "div_rn": (got[1], q, 0),
        "sqrt_rn": (got[2], np.sqrt(np.abs(x)), 0),
        "fdiv ieee": (got[3], q, 0),
        "/": (got[4], q, 0),
    }


@triton.jit
def k_sort2d(x, o, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    v = tl.load(x + rm * N + rn)
    tl.store(o + rm * N + rn, tl.sort(v, descending=True))
    tl.store(o + M * N + rm * N + rn, tl.flip(v, 0))
    tl.store(o + 2 * M * N + rm * N + rn, tl.sort(tl.flip(v, 1)))


@probe("tl.sort descending on int16 rows with duplicates, tl.flip along dim 0, sort of a flipped tensor")
def probe_sort_flip_2d():
    m, n = 4, 32
    x = rng().integers(-5, 5, (m, n)).astype(np.int16)
    x[0, :3] = [-32768, 32767, -32768]
    o = empty(3 * m * n, torch.int16)
    k_sort2d[(1,)](dev(x), o, m, n)
    got = host(o).reshape(3, m, n)
    return {
        "desc": (got[0], -np.sort(-x.astype(np.int32), 1).astype(np.int16), 0),
        "flip0": (got[1], x[::-1], 0),
        "asc": (got[2], np.sort(x, 1), 0),
    }


@triton.jit
def k_small_scan(a, bl, f, o, o64, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    x = tl.load(a + rm * N + rn)  # int8
    tl.store(o + rm * N + rn, tl.cumsum(x, axis=1))  # int8 sums in int32
    tl.store(o + M * N + rm * N + rn, tl.cumsum(x, axis=0, reverse=True))
    b = tl.load(bl + rm * N + rn)  # bool
    tl.store(o + 2 * M * N + tl.arange(0, M), tl.sum(b.to(tl.int32), axis=1))
    tl.store(o + 2 * M * N + M + tl.arange(0, N), tl.sum(x, axis=0))
    fv = tl.load(f + rm * N + rn)
    tl.store(o64 + tl.arange(0, M), tl.sum(fv, axis=1, dtype=tl.float64))


@probe("cumsum of int8 (int32 result) on both axes, reverse; sums of bool and int8; tl.sum(dtype=float64)")
def probe_small_int_scans():
    m, n = 8, 32
    g = rng()
    x = g.integers(-128, 128, (m, n)).astype(np.int8)
    bl = g.random((m, n)) < 0.5
    f = (g.standard_normal((m, n)) * 1e8).astype(np.float32)
    o, o64 = empty(2 * m * n + m + n, torch.int32), empty(m, torch.float64)
    k_small_scan[(1,)](dev(x), dev(bl), dev(f), o, o64, m, n)
    got = host(o)
    x32 = x.astype(np.int32)
    return {
        "cumsum": (got[: m * n].reshape(m, n), np.cumsum(x32, 1), 0),
        "cumsum rev axis0": (got[m * n : 2 * m * n].reshape(m, n), np.cumsum(x32[::-1], 0)[::-1], 0),
        "bool sum": (got[2 * m * n : 2 * m * n + m], bl.sum(1), 0),
        "int8 sum": (got[2 * m * n + m :], x32.sum(0), 0),
        "f64 sum": (host(o64), f.astype(np.float64).sum(1), 1e-15),
    }


@triton.jit
def k_literals(a, h, o32, ou, o64, oh, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(a + r)  # int32
    tl.store(o32 + r, x * -3 + 7)
    tl.store(ou + r, x.to(tl.uint32) + 3_000_000_000)  # a uint32 literal
    tl.store(o64 + r, x.to(tl.int64) * 2**40)
    tl.store(o64 + N + r, (x // 2) * 0x7FFFFFFF)  # int32, wraps
    v = tl.load(h + r)  # fp16
    tl.store(oh + r, v * 1e-8)  # the literal becomes fp16 (0): fp16 * 0
    tl.store(oh + N + r, v + 70000.0)  # fp16 + inf


@probe("Python literal promotions: int32 with uint32/int64 literals, fp16 with literals that underflow/overflow fp16")
def probe_literal_promotion():
    n = 16
    g = rng()
    x = g.integers(-(2**31), 2**31, n).astype(np.int32)
    h = g.standard_normal(n).astype(np.float16)
    o32, ou, o64, oh = (
        empty(n, torch.int32),
        empty(n, torch.uint32),
        empty(2 * n, torch.int64),
        empty(2 * n, torch.float16),
    )
    k_literals[(1,)](dev(x), dev(h), o32, ou, o64, oh, n)
    with np.errstate(over="ignore"):
        half = np.trunc(x / 2).astype(np.int32)
        want64 = np.concatenate([x.astype(np.int64) * 2**40, (half * np.int32(0x7FFFFFFF)).astype(np.int64)])
        return {
            "int32": (host(o32), x * np.int32(-3) + np.int32(7), 0),
            "uint32": (host(ou).view(np.uint32), x.view(np.uint32) + np.uint32(3_000_000_000), 0),
            "int64": (host(o64), want64, 0),
            "fp16": (host(oh), np.concatenate([h * np.float16(1e-8), h + np.float16(70000.0)]), 0),
        }


@triton.jit
def k_tiny(x, o, N: tl.constexpr):
    one = tl.arange(0, 1)
    v = tl.load(x + one)  # [1]
    m = tl.load(x + tl.arange(0, 4)[:, None] + tl.arange(0, 1)[None, :])  # [4, 1]
    tl.store(o + one, tl.sum(v, axis=0) + tl.max(m, axis=1, keep_dims=True).sum())
    tl.store(o + 1 + tl.arange(0, 4), tl.reshape(tl.cumsum(m, axis=1), (4,)))
    tl.store(o + 5 + tl.arange(0, 4), tl.reshape(tl.sort(tl.trans(m)), (4,)))  # [1, 4] sorted
    b = tl.broadcast_to(tl.reshape(v, (1, 1)), (8, 16))
    w = tl.load(x + tl.arange(0, 16))
    full = tl.reshape(b + w[None, :], (1, 8, 16, 1))
    tl.store(o + 9 + tl.arange(0, 8), tl.max(tl.sum(full, axis=2), axis=2).reshape(1, 8).sum(axis=0))
    tl.store(o + 17 + tl.arange(0, 1), tl.min(tl.reshape(w, (2, 2, 4)), axis=None) + tl.zeros((1,), tl.float32))
    tl.store(o + 18 + tl.arange(0, 1), tl.cumsum(v, axis=0))


@probe("size-1 dims: [1] tensors, [4,1] reductions/cumsum over the unit axis, sort of [1,4], reshape to (1,8,16,1)")
def probe_unit_dims():
    x = rng().integers(-9, 9, 16).astype(np.float32)
    o = empty(19, torch.float32)
    k_tiny[(1,)](dev(x), o, 16)
    want = np.concatenate(
        [[x[0] + x[:4].sum()], x[:4], np.sort(x[:4]), np.full(8, 16 * x[0] + x.sum()), [x.min()], [x[0]]]
    )
    return {"out": (host(o), want.astype(np.float32), 0)}


@triton.jit
def k_nan_reduce(x, o, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    v = tl.load(x + rm[:, None] * N + rn[None, :])
    tl.store(o + rm, tl.max(v, axis=1))
    tl.store(o + M + rm, tl.min(v, axis=1))
    tl.store(o + 2 * M + rm, tl.sum(v, axis=1))
    tl.store(o + 3 * M + rm, tl.reduce(v, 1, _max_nan))


@triton.jit
def _max_nan(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@probe(
    "reductions over rows with NaN and +-inf: tl.max/tl.min ignore NaN (maxnum), sum gives NaN, a NaN-propagating max"
)
def probe_nan_reductions():
    m, n = 8, 16
    x = rng().standard_normal((m, n)).astype(np.float32)
    x[0, 3] = np.nan
    x[1, :] = np.nan
    x[2, 5], x[2, 6] = np.inf, -np.inf
    x[3, 0] = np.nan
    x[4, 15] = -np.inf
    o = empty(4 * m, torch.float32)
    k_nan_reduce[(1,)](dev(x), o, m, n)
    got = host(o).reshape(4, m)
    with np.errstate(invalid="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = np.stack([np.nanmax(x, 1), np.nanmin(x, 1), x.sum(1, dtype=np.float64).astype(np.float32), x.max(1)])
    return {"max/min": (got[:2], want[:2], 0), "sum": (got[2], want[2], 1e-6), "max propagate": (got[3], want[3], 0)}


@triton.jit
def k_casts(a, o, N: tl.constexpr, SRC: tl.constexpr, DST: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(o + r, tl.load(a + r).to(DST))


INT_TYPES = [
    (tl.int8, np.int8, torch.int8),
    (tl.uint8, np.uint8, torch.uint8),
    (tl.int16, np.int16, torch.int16),
    (tl.uint16, np.uint16, torch.uint16),
    (tl.int32, np.int32, torch.int32),
    (tl.uint32, np.uint32, torch.uint32),
    (tl.int64, np.int64, torch.int64),
    (tl.uint64, np.uint64, torch.uint64),
]


@probe("integer casts between all 8 integer types (sign/zero extension by the source's signedness, truncation)")
def probe_int_cast_matrix():
    n = 16
    res = {}
    bad = []
    for s_tl, s_np, _ in INT_TYPES:
        info = np.iinfo(s_np)
        x = rng().integers(info.min, info.max, n, dtype=s_np, endpoint=True)
        x[:3] = [info.min, info.max, 0]
        for d_tl, d_np, d_t in INT_TYPES:
            o = empty(n, d_t)
            k_casts[(1,)](dev(x), o, n, s_tl, d_tl)
            got = host(o).view(d_np)
            want = x.astype(d_np)  # numpy: wrap modulo 2^bits after sign/zero extension by the source type
            if (m := mismatch(got, want, 0)) is not None:
                bad.append(f"{s_np.__name__}->{d_np.__name__}: {m}")
    res["64 casts"] = (np.array(bad[:3] or ["ok"]), np.array(["ok"]), 0)
    return res


@triton.jit
def k_ufloat(a, f, o, ou, oh, N: tl.constexpr):
    r = tl.arange(0, N)
    u = tl.load(a + r)  # uint32
    tl.store(o + r, u.to(tl.float32))
    tl.store(o + N + r, (u.to(tl.uint8)).to(tl.float16).to(tl.float32))
    tl.store(ou + r, tl.load(f + r).to(tl.uint32))
    tl.store(oh + r, u.to(tl.float16))


@probe("unsigned <-> float: uint32 past 2^31 to fp32/fp16, uint8 to fp16, fp32 past 2^31 to uint32")
def probe_unsigned_float():
    n = 16
    g = rng()
    u = g.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    u[:4] = [2**32 - 1, 2**31, 2**31 + 129, 65519]
    f = g.uniform(0, 4e9, n).astype(np.float32)
    o, ou, oh = empty(2 * n, torch.float32), empty(n, torch.uint32), empty(n, torch.float16)
    k_ufloat[(1,)](dev(u), dev(f), o, ou, oh, n)
    with np.errstate(over="ignore"):
        return {
            "u32->f32": (host(o)[:n], u.astype(np.float32), 0),
            "u8->f16": (host(o)[n:], (u.astype(np.uint8)).astype(np.float16).astype(np.float32), 0),
            "f32->u32": (host(ou).view(np.uint32), f.astype(np.uint32), 0),
            "u32->f16": (host(oh), u.astype(np.float16), 0),
        }


@triton.jit
def k_wrap(a, b, o8, o16, o64, ou64, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(a + r)  # int64
    y = tl.load(b + r)  # int64
    tl.store(o8 + r, x.to(tl.uint8) + y.to(tl.uint8))
    tl.store(o8 + N + r, x.to(tl.uint8) * y.to(tl.uint8) - 7)
    tl.store(o16 + r, x.to(tl.int16) * y.to(tl.int16))
    tl.store(o64 + r, x * y)
    tl.store(o64 + N + r, tl.umulhi(x, y))
    tl.store(ou64 + r, tl.umulhi(x.to(tl.uint64), y.to(tl.uint64)))
    tl.store(o64 + 2 * N + r, -x)


@probe("wrapping arithmetic: uint8 add/mul/sub, int16 mul, int64 mul/negate overflow, umulhi on int64 and uint64")
def probe_wrap_arith():
    n = 16
    g = rng()
    x = g.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)
    y = g.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)
    x[0], y[0] = -(2**63), -1
    o8, o16, o64, ou64 = (
        empty(2 * n, torch.uint8),
        empty(n, torch.int16),
        empty(3 * n, torch.int64),
        empty(n, torch.uint64),
    )
    k_wrap[(1,)](dev(x), dev(y), o8, o16, o64, ou64, n)
    xu, yu = [int(v) % 2**64 for v in x], [int(v) % 2**64 for v in y]
    hi = np.array([(a * b) >> 64 for a, b in zip(xu, yu)], np.uint64)
    with np.errstate(over="ignore"):
        return {
            "uint8": (
                host(o8),
                np.concatenate(
                    [x.astype(np.uint8) + y.astype(np.uint8), x.astype(np.uint8) * y.astype(np.uint8) - np.uint8(7)]
                ),
                0,
            ),
            "int16": (host(o16), x.astype(np.int16) * y.astype(np.int16), 0),
            "int64": (host(o64)[:n], x * y, 0),
            "umulhi i64 (Triton: unsigned high word)": (host(o64)[n : 2 * n], hi.view(np.int64), 0),
            "umulhi u64": (host(ou64).view(np.uint64), hi, 0),
            "negate": (host(o64)[2 * n :], -x, 0),
        }


@triton.jit
def k_grid3(o):
    x, y, z = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    nx, ny, nz = tl.num_programs(0), tl.num_programs(1), tl.num_programs(2)
    lin = (z * ny + y) * nx + x
    tl.store(o + lin * 4 + tl.arange(0, 4), tl.join(tl.join(x, y), tl.join(z, nx * 100 + ny * 10 + nz)).reshape(4))


@probe("3-D grid: program_id / num_programs on all axes, scalar joins")
def probe_grid3():
    gx, gy, gz = 3, 2, 4
    o = empty(gx * gy * gz * 4, torch.int32)
    k_grid3[(gx, gy, gz)](o)
    want = np.array(
        [[x, z, y, gx * 100 + gy * 10 + gz] for z in range(gz) for y in range(gy) for x in range(gx)], np.int32
    )
    return {"out": (host(o).reshape(-1, 4), want, 0)}


@triton.jit
def k_masks(x, o, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)[:, None]
    rn = tl.arange(0, BN)[None, :]
    mask = (rm < M) & (rn < N)
    other = (rm * 1000 + rn).to(tl.int32)
    v = tl.load(x + rm * N + rn, mask=mask, other=other)  # a tensor other
    w = tl.load(x + rm * N + rn, mask=rn < N, other=-1.5)  # a float other on an int load: -1; rows past M out of bounds
    tl.store(o + rm * BN + rn, v)
    tl.store(o + BM * BN + rm * BN + rn, w, mask=rm < M)
    tl.store(o + 2 * BM * BN + rm * BN + rn, v + 1, mask=(rm % 2 == 0))


@probe("2-D masks: [M,1] & [1,N] masks, a tensor `other`, a float `other` on an int load, row-only store masks")
def probe_masks_2d():
    m, n, bm, bn = 5, 6, 8, 8
    x = rng().integers(-100, 100, bm * n + bn).astype(np.int32)  # rows past M are read by the row-unmasked load
    o = empty(3 * bm * bn, torch.int32)
    k_masks[(1,)](dev(x), o, m, n, bm, bn)
    rm, rn = np.arange(bm)[:, None], np.arange(bn)[None, :]
    inside = (rm < m) & (rn < n)
    flat = np.clip(rm * n + rn, 0, len(x) - 1)
    v = np.where(inside, x[flat], rm * 1000 + rn)
    w = np.where(rn < n, x[flat], -1)
    w = np.where(rm < m, w, 0)
    want = np.concatenate([v.ravel(), w.ravel(), np.where(rm % 2 == 0, v + 1, 0).ravel()]).astype(np.int32)
    return {"out": (host(o), want, 0)}


@triton.jit
def k_topk_iter(x, ov, oi, N: tl.constexpr, K: tl.constexpr):
    row = tl.program_id(0)
    r = tl.arange(0, N)
    v = tl.load(x + row * N + r)
    for k in tl.static_range(K):
        m = tl.max(v, axis=0)
        i = tl.min(tl.where(v == m, r, N), axis=0)  # first index of the maximum
        tl.store(ov + row * K + k, m)
        tl.store(oi + row * K + k, i)
        v = tl.where(r == i, -float("inf"), v)


@probe("top-k by repeated max + first-index argmin in a static_range, one program per row")
def probe_topk_iterative():
    m, n, k = 4, 64, 5
    x = rng().integers(-20, 20, (m, n)).astype(np.float32)
    ov, oi = empty(m * k, torch.float32), empty(m * k, torch.int32)
    k_topk_iter[(m,)](dev(x), ov, oi, n, k)
    order = np.argsort(-x, axis=1, kind="stable")[:, :k]
    return {
        "values": (host(ov).reshape(m, k), np.take_along_axis(x, order, 1), 0),
        "indices": (host(oi).reshape(m, k), order, 0),
    }


@triton.jit
def k_counting_sort(keys, counts, out, N: tl.constexpr, BINS: tl.constexpr):
    r = tl.arange(0, N)
    k = tl.load(keys + r)
    h = tl.histogram(k, BINS)
    start = tl.cumsum(h, axis=0) - h  # exclusive prefix sum
    tl.store(counts + tl.arange(0, BINS), start)
    slot = tl.atomic_add(counts + k, 1)  # each key takes the next slot of its bin
    tl.store(out + slot, k)


@probe("counting sort: tl.histogram, exclusive cumsum, atomic_add slots (returned old values), scatter store")
def probe_counting_sort():
    n, bins = 128, 16
    k = rng().integers(0, bins, n).astype(np.int32)
    counts, out = empty(bins, torch.int32), empty(n, torch.int32)
    k_counting_sort[(1,)](dev(k), counts, out, n, bins)
    return {
        "sorted": (host(out), np.sort(k), 0),
        "bin ends": (host(counts), np.cumsum(np.bincount(k, minlength=bins)), 0),
    }


@triton.jit
def k_spmv(rowptr, cols, vals, x, y, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    lo = tl.load(rowptr + row)
    hi = tl.load(rowptr + row + 1)
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(lo, hi, BLOCK):
        j = start + tl.arange(0, BLOCK)
        m = j < hi
        c = tl.load(cols + j, mask=m, other=0)
        acc += tl.load(vals + j, mask=m, other=0.0) * tl.load(x + c, mask=m, other=0.0)
    tl.store(y + row, tl.sum(acc, axis=0))


@probe("CSR SpMV: runtime loop bounds loaded from memory (empty rows, ragged tails), gathered loads")
def probe_csr_spmv():
    g = rng()
    rows, ncols = 12, 40
    nnz = g.integers(0, 30, rows)
    nnz[3] = 0
    rowptr = np.concatenate([[0], np.cumsum(nnz)]).astype(np.int32)
    cols = np.concatenate([np.sort(g.choice(ncols, c, replace=False)) for c in nnz]).astype(np.int32)
    vals = g.integers(-4, 5, rowptr[-1]).astype(np.float32)  # small integers: every sum exact
    x = g.integers(-4, 5, ncols).astype(np.float32)
    y = empty(rows, torch.float32)
    k_spmv[(rows,)](dev(rowptr), dev(cols), dev(vals), dev(x), y, 8)
    want = np.array(
        [(vals[rowptr[i] : rowptr[i + 1]] * x[cols[rowptr[i] : rowptr[i + 1]]]).sum() for i in range(rows)], np.float32
    )
    return {"y": (host(y), want, 0)}


@triton.jit
def k_stencil(u, o, H, W, BH: tl.constexpr, BW: tl.constexpr):
    i = tl.program_id(0) * BH + tl.arange(0, BH)[:, None]
    j = tl.program_id(1) * BW + tl.arange(0, BW)[None, :]
    inside = (i < H) & (j < W)
    c = tl.load(u + i * W + j, mask=inside, other=0.0)
    n = tl.load(u + (i - 1) * W + j, mask=inside & (i > 0), other=0.0)
    s = tl.load(u + (i + 1) * W + j, mask=inside & (i + 1 < H), other=0.0)
    w = tl.load(u + i * W + j - 1, mask=inside & (j > 0), other=0.0)
    e = tl.load(u + i * W + j + 1, mask=inside & (j + 1 < W), other=0.0)
    tl.store(o + i * W + j, 4.0 * c - n - s - w - e, mask=inside)


@probe("5-point stencil on a 2-D grid of programs with halo masks (negative offsets masked off)")
def probe_stencil():
    h, w = 19, 23
    u = rng().integers(-8, 8, (h, w)).astype(np.float32)
    o = empty(h * w, torch.float32)
    k_stencil[(triton.cdiv(h, 8), triton.cdiv(w, 16))](dev(u), o, h, w, 8, 16)
    p = np.pad(u, 1)
    want = 4 * u - p[:-2, 1:-1] - p[2:, 1:-1] - p[1:-1, :-2] - p[1:-1, 2:]
    return {"out": (host(o).reshape(h, w), want, 0)}


@triton.jit
def k_hash(x, o, N: tl.constexpr):
    r = tl.arange(0, N)
    h = tl.load(x + r)  # uint32
    h ^= h >> 16
    h *= 0x85EBCA6B
    h ^= h >> 13
    h *= 0xC2B2AE35
    h ^= h >> 16
    tl.store(o + r, h)
    f = tl.load(x + N + r).to(tl.float32, bitcast=True)
    i = f.to(tl.int32, bitcast=True)
    y = (0x5F3759DF - (i >> 1)).to(tl.float32, bitcast=True)
    y = y * (1.5 - 0.5 * f * y * y)
    tl.store(o + N + r, y.to(tl.uint32, bitcast=True))


@probe(
    "bit tricks: murmur3 finalizer on uint32 (wrapping multiplies by uint32 literals), fast inverse sqrt via bitcasts"
)
def probe_bit_tricks():
    n = 32
    g = rng()
    x = g.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    f = g.uniform(0.1, 100, n).astype(np.float32)
    inp = np.concatenate([x, f.view(np.uint32)])
    o = empty(2 * n, torch.uint32)
    k_hash[(1,)](dev(inp), o, n)
    h = x.copy()
    with np.errstate(over="ignore"):
        h ^= h >> np.uint32(16)
        h *= np.uint32(0x85EBCA6B)
        h ^= h >> np.uint32(13)
        h *= np.uint32(0xC2B2AE35)
        h ^= h >> np.uint32(16)
        y = (np.int32(0x5F3759DF) - (f.view(np.int32) >> 1)).view(np.float32)
    half = np.float32(0.5) * f
    y = y * (np.float32(1.5) - half * y * y)
    got = host(o).view(np.uint32)
    return {
        "murmur": (got[:n], h, 0),
        "rsqrt (fp32 steps, no contraction assumed)": (got[n:].view(np.float32), y, 2e-7),
    }


@triton.jit
def k_compact(x, o, cnt, N: tl.constexpr):
    r = tl.arange(0, N)
    v = tl.load(x + r)
    keep = v > 0
    pos = tl.cumsum(keep.to(tl.int32), axis=0) - 1
    tl.store(o + pos, v, mask=keep)
    tl.store(cnt, tl.sum(keep.to(tl.int32), axis=0))


@probe("stream compaction: cumsum of a bool mask as scatter positions, masked scatter store")
def probe_compaction():
    n = 256
    x = rng().integers(-5, 5, n).astype(np.int32)
    o, cnt = empty(n, torch.int32), empty(1, torch.int32)
    k_compact[(1,)](dev(x), o, cnt, n)
    kept = x[x > 0]
    return {"values": (host(o)[: len(kept)], kept, 0), "count": (host(cnt), np.array([len(kept)], np.int32), 0)}


@triton.jit
def k_welford_loop(x, o, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    mean = tl.zeros((BLOCK,), tl.float32)
    m2 = tl.zeros((BLOCK,), tl.float32)
    cnt = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, N, BLOCK):
        c = start + tl.arange(0, BLOCK)
        v = tl.load(x + row * N + c, mask=c < N, other=0.0)
        valid = (c < N).to(tl.float32)
        cnt_new = cnt + valid
        delta = v - mean
        mean = tl.where(valid > 0, mean + delta / tl.maximum(cnt_new, 1.0), mean)
        m2 = tl.where(valid > 0, m2 + delta * (v - mean), m2)
        cnt = cnt_new
    m, q, n = tl.reduce((mean, m2, cnt), 0, _welford_merge)
    tl.store(o + row * 2, m)
    tl.store(o + row * 2 + 1, q / n)


@triton.jit
def _welford_merge(m1, q1, n1, m2, q2, n2):
    n = n1 + n2
    d = m2 - m1
    w = tl.where(n == 0, 0.0, n2 / tl.where(n == 0, 1.0, n))
    return m1 + d * w, q1 + q2 + d * d * n1 * w, n


@probe("Welford variance: per-lane running state in a masked loop, merged by a 3-tuple tl.reduce")
def probe_welford_loop():
    rows, n = 3, 300
    x = (rng().standard_normal((rows, n)) * 3 + 10).astype(np.float32)
    o = empty(rows * 2, torch.float32)
    k_welford_loop[(rows,)](dev(x), o, n, 64)
    want = np.stack([x.astype(np.float64).mean(1), x.astype(np.float64).var(1)], 1)
    return {"mean/var": (host(o).reshape(rows, 2), want, 1e-5)}


@triton.jit
def k_loop_if(x, flags, o, N, BLOCK: tl.constexpr):
    ptrs = x + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.int32)
    alt = tl.zeros((BLOCK,), tl.int32)
    for it in range(0, N):
        f = tl.load(flags + it)
        v = tl.load(ptrs)
        if f > 0:
            acc += v
        elif f < 0:
            acc -= v
            alt = tl.maximum(alt, v)
        else:
            alt += 1
        ptrs += BLOCK
    tl.store(o + tl.arange(0, BLOCK), acc)
    tl.store(o + BLOCK + tl.arange(0, BLOCK), alt)


@probe("a loop carrying a pointer tensor (ptrs += BLOCK) with an if/elif/else on a loaded flag yielding two tensors")
def probe_loop_if_ptr():
    steps, block = 9, 16
    g = rng()
    x = g.integers(-50, 50, (steps, block)).astype(np.int32)
    fl = np.array([1, -1, 0, 1, 1, -1, 0, 0, -1], np.int32)
    o = empty(2 * block, torch.int32)
    k_loop_if[(1,)](dev(x), dev(fl), o, steps, block)
    acc = np.zeros(block, np.int32)
    alt = np.zeros(block, np.int32)
    for it in range(steps):
        if fl[it] > 0:
            acc += x[it]
        elif fl[it] < 0:
            acc -= x[it]
            alt = np.maximum(alt, x[it])
        else:
            alt += 1
    return {"out": (host(o), np.concatenate([acc, alt]), 0)}


@triton.jit
def _tree_sum(v, N: tl.constexpr):
    if N == 1:
        return v
    else:
        a, b = tl.split(tl.reshape(v, (N // 2, 2)))
        return _tree_sum(a + b, N // 2)


@triton.jit
def k_recursive(x, o, N: tl.constexpr):
    v = tl.load(x + tl.arange(0, N))
    s = _tree_sum(v, N)
    tl.store(o + tl.arange(0, 1), tl.reshape(s, (1,)))


@probe("a recursive @triton.jit helper specialized on a constexpr (pairwise sum by split/reshape)")
def probe_recursive_helper():
    x = rng().integers(-100, 100, 64).astype(np.int32)
    o = empty(1, torch.int32)
    k_recursive[(1,)](dev(x), o, 64)
    return {"sum": (host(o), np.array([x.sum()], np.int32), 0)}


@triton.jit
def _int_ops(x, y, k):
    """The same integer operations on scalars or tensors: (x, y) of one integer type, k an int32 shift amount."""
    if x.dtype.primitive_bitwidth >= 32:
        hi = tl.umulhi(x, y)
    else:
        hi = (x.to(tl.int32) * y.to(tl.int32)) >> 8
    return (
        x // y,
        x % y,
        x < y,
        tl.minimum(x, y),
        tl.maximum(x, y),
        x >> k.to(x.dtype),
        x << k.to(x.dtype),
        tl.abs(x),
        x * y,
        hi,
        x.to(tl.float32),
        x.to(tl.int8),
    )


@triton.jit
def k_int_ops_scalar(a, b, s, o, NOUT: tl.constexpr):
    i = tl.program_id(0)
    outs = _int_ops(tl.load(a + i), tl.load(b + i), tl.load(s + i))
    for j in tl.static_range(NOUT):
        tl.store(
            o + j * tl.num_programs(0) + i,
            outs[j].to(tl.float64) if outs[j].dtype.is_floating() else outs[j].to(tl.int64),
        )


@triton.jit
def k_int_ops_vector(a, b, s, o, N: tl.constexpr, NOUT: tl.constexpr):
    i = tl.arange(0, N)
    outs = _int_ops(tl.load(a + i), tl.load(b + i), tl.load(s + i))
    for j in tl.static_range(NOUT):
        tl.store(o + j * N + i, outs[j].to(tl.float64) if outs[j].dtype.is_floating() else outs[j].to(tl.int64))


@probe("scalar (one value per program) vs tensor integer ops: // % < min max >> << abs * umulhi to-f32 to-i8, 6 types")
def probe_scalar_int_ops():
    n, nout = 32, 12
    res = {}
    for np_t in (np.int8, np.int32, np.int64, np.uint8, np.uint32, np.uint64):
        info = np.iinfo(np_t)
        g = rng()
        x = g.integers(info.min, info.max, n, dtype=np_t, endpoint=True)
        y = g.integers(info.min, info.max, n, dtype=np_t, endpoint=True)
        x[:4] = [info.min, info.max, 0, 1 if info.min == 0 else -7]
        y[:4] = [1, 3, 5, 2]
        y[y == 0] = 1
        if info.min < 0:
            y[y == -1] = 2
        k = (np.arange(n) % info.bits).astype(np.int32)  # shifts within the width: defined
        bufs = [dev(x), dev(y), dev(k)]
        os_, ov = empty(nout * n, torch.int64), empty(nout * n, torch.int64)
        k_int_ops_scalar[(n,)](*bufs, os_, nout)
        k_int_ops_vector[(1,)](*bufs, ov, n, nout)
        name = np.dtype(np_t).name
        res[name] = (
            host(os_).reshape(nout, n),
            host(ov).reshape(nout, n),
            0,
        )  # the scalar path against the tensor path
    return res


@triton.jit
def _float_ops(x, y, z):
    if x.dtype == tl.float64:
        xf, yf = x, y
        q, r = x / y, tl.sqrt(tl.abs(x))
    else:
        xf, yf = x.to(tl.float32), y.to(tl.float32)
        q, r = tl.div_rn(xf, yf), tl.sqrt_rn(tl.abs(xf))
    return (
        tl.fma(x, y, z),
        q,
        x / y,
        r,
        tl.clamp(x, -0.5, 0.5, propagate_nan=tl.PropagateNan.ALL),
        tl.minimum(x, y),
        tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL),
        x.to(tl.float16),
        xf.to(tl.bfloat16, fp_downcast_rounding="rtz"),
        x.to(tl.int32),
        x.to(tl.uint8),
        tl.abs(x),
        x * 1e30 * 1e10,
        tl.floor(xf),
        tl.exp(xf),
        tl.math.log2(tl.abs(yf)),
        x < y,
        x != y,
    )


@triton.jit
def k_float_ops_scalar(a, b, c, o, NOUT: tl.constexpr):
    i = tl.program_id(0)
    outs = _float_ops(tl.load(a + i), tl.load(b + i), tl.load(c + i))
    for j in tl.static_range(NOUT):
        tl.store(o + j * tl.num_programs(0) + i, outs[j].to(tl.float64))


@triton.jit
def k_float_ops_vector(a, b, c, o, N: tl.constexpr, NOUT: tl.constexpr):
    i = tl.arange(0, N)
    outs = _float_ops(tl.load(a + i), tl.load(b + i), tl.load(c + i))
    for j in tl.static_range(NOUT):
        tl.store(o + j * N + i, outs[j].to(tl.float64))


@probe(
    "scalar vs tensor float ops, fp32/fp16/bf16/fp64: fma div sqrt clamp min max casts abs floor exp log2 <, NaN/inf"
)
def probe_scalar_float_ops():
    n, nout = 32, 18
    res = {}
    for t_t in (torch.float32, torch.float16, torch.float64, torch.bfloat16):
        g = rng()
        vals = [g.standard_normal(n) * 4 for _ in range(3)]
        x, y, z = (torch.from_numpy(v).to(t_t) for v in vals)
        x[:6] = torch.tensor([float("nan"), float("inf"), -0.0, 300.5, -1e-40, 1.0]).to(t_t)
        y[:6] = torch.tensor([1.0, float("nan"), 0.0, -0.0, 3.0, float("-inf")]).to(t_t)
        os_, ov = empty(nout * n, torch.float64), empty(nout * n, torch.float64)
        k_float_ops_scalar[(n,)](x.to(DEVICE), y.to(DEVICE), z.to(DEVICE), os_, nout)
        k_float_ops_vector[(1,)](x.to(DEVICE), y.to(DEVICE), z.to(DEVICE), ov, n, nout)
        got_s, got_v = host(os_).reshape(nout, n), host(ov).reshape(nout, n)
        # conversions of NaN/inf/out-of-range values to integers are undefined: compared as 0
        for j in (9, 10):
            bad = ~np.isfinite(x.double().numpy()) | (np.abs(x.double().numpy()) > 255)
            got_s[j, bad] = got_v[j, bad] = 0
        res[str(t_t).removeprefix("torch.")] = (got_s, got_v, 0)
    return res


@triton.jit
def k_desc_negative(a, o, M, N, BM: tl.constexpr, BN: tl.constexpr):
    src = tl.make_tensor_descriptor(a, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    dst = tl.make_tensor_descriptor(o, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    pid = tl.program_id(0)
    off_m = pid * BM - BM // 2  # the first block starts above row 0
    t = src.load([off_m, -4])  # out-of-bounds rows and columns (negative too) read as zero
    dst.store([off_m, -4], t + 1.0)  # only in-bounds elements are written


@probe("tensor descriptors at negative coordinates: out-of-bounds (negative) rows/columns load zero, stores clipped")
def probe_desc_negative_coords():
    m, n, bm, bn = 20, 12, 8, 16
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device=DEVICE))
    a = rng().integers(-9, 9, (m, n)).astype(np.float32)
    o = empty(m * n, torch.float32)
    k_desc_negative[(triton.cdiv(m + bm // 2, bm),)](dev(a), o, m, n, bm, bn)
    # columns -4..11 cover all 12 columns; rows -4..23 cover all 20 rows
    return {"out": (host(o).reshape(m, n), a + 1, 0)}


@triton.jit
def k_bp_negative(a, o, M, N, BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    src = tl.make_block_ptr(a, (M, N), (N, 1), (pid * BM - 3, -5), (BM, BN), (1, 0))
    t = tl.load(src, boundary_check=(0, 1), padding_option="zero")
    dst = tl.make_block_ptr(o, (M, N), (N, 1), (pid * BM - 3, -5), (BM, BN), (1, 0))
    tl.store(dst, t * 2.0, boundary_check=(0, 1))
    tl.store(o + M * N + pid * BM * BN + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], t)


@probe("block pointers at negative offsets with boundary_check: padded loads, clipped stores")
def probe_block_ptr_negative():
    m, n, bm, bn = 13, 11, 8, 16
    a = rng().integers(-9, 9, (m, n)).astype(np.float32)
    progs = triton.cdiv(m + 3, bm)
    o = empty(m * n + progs * bm * bn, torch.float32)
    k_bp_negative[(progs,)](dev(a), o, m, n, bm, bn)
    tiles = np.zeros((progs, bm, bn), np.float32)
    for p in range(progs):
        for i in range(bm):
            for j in range(bn):
                r, c = p * bm - 3 + i, j - 5
                if 0 <= r < m and 0 <= c < n:
                    tiles[p, i, j] = a[r, c]
    got = host(o)
    return {"stored": (got[: m * n].reshape(m, n), a * 2, 0), "tiles": (got[m * n :].reshape(progs, bm, bn), tiles, 0)}


@triton.jit
def k_big_shapes(x, idx, o, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    v = tl.load(x + rm * N + rn)  # [M, N] int32, more elements than one vector op takes
    base = 0
    tl.store(o + base + rm * N + rn, tl.cumsum(v, axis=0))
    base += M * N
    tl.store(o + base + rm * N + rn, tl.sort(v, descending=True))
    base += M * N
    i = tl.load(idx + rm * N + rn)
    tl.store(o + base + rm * N + rn, tl.gather(v, i, axis=1))
    base += M * N
    p = tl.permute(tl.reshape(v, (M, N // 4, 4)), (2, 0, 1))  # [4, M, N/4]
    tl.store(o + base + tl.arange(0, M * N), tl.reshape(p, (M * N,)))
    base += M * N
    il = tl.interleave(v, -v)  # [M, 2N]
    tl.store(o + base + rm * 2 * N + tl.arange(0, 2 * N)[None, :], il)
    base += 2 * M * N
    tl.store(o + base + tl.arange(0, N), tl.max(v, axis=0))
    base += N
    h = tl.histogram(tl.reshape(v, (M * N,)) & 1023, 1024)
    tl.store(o + base + tl.arange(0, 1024), h)
    base += 1024
    vals, ids = tl.max(v, axis=1, return_indices=True)
    tl.store(o + base + tl.arange(0, M), ids)
    base += M
    t = tl.trans(v)  # [N, M]
    tl.store(o + base + tl.arange(0, N)[:, None] * M + tl.arange(0, M)[None, :], t + tl.flip(t, 1))


@probe(
    "128 x 256 int32 (4x the vector unit): cumsum axis 0, sort, gather, permute, interleave, histogram, argmax, trans"
)
def probe_big_shapes():
    m, n = 128, 256
    g = rng()
    x = g.integers(-(2**20), 2**20, (m, n)).astype(np.int32)
    x[:, 7] = x[:, 3]  # ties for argmax
    idx = g.integers(0, n, (m, n)).astype(np.int32)
    total = 7 * m * n + n + 1024 + m
    o = empty(total, torch.int32)
    k_big_shapes[(1,)](dev(x), dev(idx), o, m, n)
    got = host(o)
    want = np.concatenate(
        [
            np.cumsum(x, 0).ravel(),
            -np.sort(-x, 1).ravel(),
            np.take_along_axis(x, idx, 1).ravel(),
            x.reshape(m, n // 4, 4).transpose(2, 0, 1).ravel(),
            np.stack([x, -x], 2).reshape(m, 2 * n).ravel(),
            x.max(0),
            np.bincount((x & 1023).ravel(), minlength=1024),
            np.argmax(x, 1),
            (x.T + x.T[:, ::-1]).ravel(),
        ]
    ).astype(np.int32)
    return {"out": (got, want, 0)}


@triton.jit
def k_mem_deps(buf, alias, chain, o, n, N: tl.constexpr):
    r = tl.arange(0, N)
    # a loop that reads and writes the same addresses: the load may not be hoisted
    for _ in range(n):
        v = tl.load(buf + r)
        tl.store(buf + r, v * 2 + 1)
    # store through one argument, load through another pointing to the same memory
    tl.store(alias + r, r * 10)
    w = tl.load(buf + N + r)  # buf + N is alias
    tl.store(o + r, w)
    # a scalar stored, reloaded, stored again within a loop
    for i in range(n):
        c = tl.load(buf + 2 * N)
        tl.store(buf + 2 * N, c + i)
    # pointer chasing: each address comes from the previous load
    j = 0
    steps = 0
    while j >= 0:
        j = tl.load(chain + j)
        steps += 1
    tl.store(o + N, steps)
    # an atomic, then a plain load of the same word
    tl.atomic_add(buf + 2 * N + 1, 5)
    tl.store(o + N + 1, tl.load(buf + 2 * N + 1))


@probe("memory dependences: load/store of one address in a loop, aliased arguments, pointer chasing, atomic then load")
def probe_memory_dependences():
    n_iter, n = 5, 16
    buf = torch.zeros(2 * n + 2, dtype=torch.int32)
    buf[:n] = torch.arange(n, dtype=torch.int32)
    buf[2 * n + 1] = 100
    chain = np.full(32, -1, np.int32)
    perm = rng().permutation(np.arange(1, 32))[:12]
    cur = 0
    for nxt in perm:
        chain[cur] = nxt
        cur = nxt
    chain[cur] = -1
    b = dev(buf)
    o = empty(n + 2, torch.int32)
    k_mem_deps[(1,)](b, b[n:], dev(chain), o, n_iter, n)
    v = np.arange(n, dtype=np.int64)
    for _ in range(n_iter):
        v = v * 2 + 1
    want_buf = np.concatenate([v, np.arange(n) * 10, [sum(range(n_iter)), 105]]).astype(np.int32)
    want_o = np.concatenate([np.arange(n) * 10, [13, 105]]).astype(np.int32)
    return {"buf": (host(b), want_buf, 0), "out": (host(o), want_o, 0)}


@triton.jit
def k_addr_forms(x, o, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(o + r, tl.load(x + (r ^ 1)))
    tl.store(o + N + r, tl.load(x + r // 3))
    tl.store(o + 2 * N + r, tl.load(x + (r * 7) % N))
    tl.store(o + 3 * N + r, tl.load(x + (N - 1 - r)))
    tl.store(o + 4 * N + r, tl.load(x + tl.where(r % 2 == 0, r // 2, N - 1 - r // 2)))
    tl.store(o + 5 * N + r, tl.load(x + (r & ~3)))
    tl.store(o + 6 * N + r, tl.load(x + (r * r) % N))
    tl.store(o + 7 * N + (r * 5) % N, tl.load(x + r))  # a permuted store
    off = r.to(tl.uint8) * 16  # uint8 offsets wrap at 256
    tl.store(o + 8 * N + r, tl.load(x + off % N))
    tl.store(o + 9 * N + r, tl.load(x + N // 2 + ((r << 28) >> 28)))  # the low nibble sign-extended: -8..7
    u = r.to(tl.uint32)
    tl.store(o + 10 * N + r, tl.load(x + (u * 3 + 1) % N))  # unsigned offsets


@probe("address forms: r^1, r//3, (7r)%N, N-1-r, where, r&~3, r*r%N, permuted store, uint8/uint32 offsets, negative")
def probe_address_forms():
    n = 64
    x = rng().integers(-1000, 1000, n).astype(np.int32)
    o = empty(11 * n, torch.int32)
    k_addr_forms[(1,)](dev(x), o, n)
    r = np.arange(n)
    perm_store = np.zeros(n, np.int32)
    perm_store[(r * 5) % n] = x
    want = np.concatenate(
        [
            x[r ^ 1],
            x[r // 3],
            x[(r * 7) % n],
            x[n - 1 - r],
            x[np.where(r % 2 == 0, r // 2, n - 1 - r // 2)],
            x[r & ~3],
            x[(r * r) % n],
            perm_store,
            x[((r.astype(np.uint8) * np.uint8(16)).astype(np.int64)) % n],
            x[n // 2 + ((r.astype(np.int32) << 28) >> 28)],
            x[(r * 3 + 1) % n],
        ]
    )
    return {"out": (host(o), want, 0)}


@triton.jit
def k_loops(o, lo, hi, big, step, N: tl.constexpr):
    r = tl.arange(0, N)
    acc = r * 0
    cnt = 0
    for i in range(lo, hi):  # zero trips when lo >= hi: the carried values keep their entry values
        acc += i
        cnt += 1
    tl.store(o + r, acc + cnt)
    tri = 0
    inner_sum = tl.zeros((N,), tl.int32)
    for i in range(0, N):  # a triangular nest: the inner bound is the outer variable
        for j in range(i, N):
            tri += 1
            inner_sum += (r == j).to(tl.int32) * i
    tl.store(o + N + r, inner_sum)
    tl.store(o + 2 * N, tri)
    t = 0
    for _k in range(0, big, 2**33):  # an int64 induction variable past 2**32
        t += 1
    tl.store(o + 2 * N + 1, t)
    s, p = 0, 1
    for k in tl.range(0, hi, step, loop_unroll_factor=4):  # a runtime trip count not a multiple of 4
        s, p = s + k, (p * 3) % 1000003
    tl.store(o + 2 * N + 2, s)
    tl.store(o + 2 * N + 3, p)
    down = 0
    for k in range(hi, lo, -step):  # a runtime negative step: Triton emits scf.for(hi, lo, -step), no trips
        down += k
    tl.store(o + 2 * N + 4, down)
    down = 0
    for k in range(hi, lo, -3):  # a constexpr negative step: the frontend reverses the loop
        down += k
    tl.store(o + 2 * N + 5, down)
    for _k in tl.static_range(0):  # an empty static loop
        tl.store(o, -1)


@probe("loops: zero-trip carries, triangular nest, int64 iv past 2**32, unroll 4 of a runtime count, negative steps")
def probe_loop_forms():
    n = 16
    o = empty(2 * n + 6, torch.int32)
    lo, hi, step = 5, 27, 3
    big = 3 * 2**33 + 5
    k_loops[(1,)](o, 9, 9, big, step, n)  # lo == hi: zero trips
    first = host(o).copy()
    k_loops[(1,)](o, lo, hi, big, step, n)
    second = host(o)
    inner = np.array([sum(i for i in range(n) if i <= j) for j in range(n)])

    def tail(lo_, hi_):
        return [
            n * (n + 1) // 2,
            4,
            sum(range(0, hi_, step)),
            pow(3, len(range(0, hi_, step)), 1000003),
            0,  # CUDA's scf.for: iv < ub fails at once (the interpreter runs Python's range: differs)
            sum(range(hi_, lo_, -3)),
        ]

    want1 = np.concatenate([np.zeros(n), inner, tail(9, 9)]).astype(np.int32)
    want2 = np.concatenate([np.full(n, sum(range(lo, hi)) + hi - lo), inner, tail(lo, hi)]).astype(np.int32)
    return {"zero trips": (first, want1, 0), "trips": (second, want2, 0)}


@triton.jit
def _count_combine(a1, c1, a2, c2):
    return a1 + a2, c1 + c2


@triton.jit
def k_view_consumer(x, o, VIEW: tl.constexpr, USE: tl.constexpr, DT: tl.constexpr):
    r = tl.arange(0, 16)
    X = tl.load(x + r[:, None] * 16 + r[None, :]).to(DT)
    if VIEW == 0:
        V = X
    elif VIEW == 1:
        V = tl.broadcast_to(tl.load(x + r).to(DT)[None, :], (16, 16))
    elif VIEW == 2:
        V = tl.broadcast_to(tl.load(x + r).to(DT)[:, None], (16, 16))
    elif VIEW == 3:
        V = tl.trans(X)
    elif VIEW == 4:
        V = tl.flip(X, 0)
    elif VIEW == 5:
        V = tl.reshape(tl.permute(tl.reshape(X, (4, 4, 16)), (1, 0, 2)), (16, 16))
    else:
        Y = tl.load(x + tl.arange(0, 4)[:, None] * 16 + r[None, :]).to(DT)
        V = tl.reshape(tl.broadcast_to(tl.expand_dims(Y, 1), (4, 4, 16)), (16, 16))
    Vi = V.to(tl.int32)
    i256 = tl.arange(0, 256)
    if USE == 0:
        tl.store(o + i256, tl.reshape(tl.cumsum(V, 0), (256,)).to(tl.int32))
    elif USE == 1:
        tl.store(o + i256, tl.reshape(tl.cumsum(V, 1, reverse=True), (256,)).to(tl.int32))
    elif USE == 2:
        tl.store(o + r, tl.sum(V, 0).to(tl.int32))
    elif USE == 3:
        m, i = tl.max(V, 1, return_indices=True, return_indices_tie_break_left=True)
        tl.store(o + r, m.to(tl.int32))
        tl.store(o + 16 + r, i)
    elif USE == 4:
        tl.store(o + i256, tl.reshape(tl.sort(V, descending=True), (256,)).to(tl.int32))
    elif USE == 5:
        tl.store(o + i256, tl.reshape(tl.gather(V, Vi & 15, 0), (256,)).to(tl.int32))
    elif USE == 6:
        tl.store(o + i256, tl.reshape(tl.gather(V, (Vi >> 1) & 15, 1), (256,)).to(tl.int32))
    elif USE == 7:
        d = tl.dot(V.to(tl.float32), X.to(tl.float32), input_precision="ieee")
        tl.store(o + i256, tl.reshape(d.to(tl.int32), (256,)))
    elif USE == 8:
        tl.store(o + i256, tl.reshape(tl.where(V > 0, V, X * 2), (256,)).to(tl.int32))
    elif USE == 9:
        tl.store(o + tl.arange(0, 512), tl.reshape(tl.interleave(V, -V), (512,)).to(tl.int32))
    elif USE == 10:
        a, b = tl.split(tl.reshape(V, (16, 8, 2)))
        tl.store(o + tl.arange(0, 128), tl.reshape(a - 3 * b, (128,)).to(tl.int32))
    elif USE == 11:
        s, c = tl.associative_scan((V, tl.full((16, 16), 1, DT)), 1, _count_combine)
        tl.store(o + i256, tl.reshape(s.to(tl.int32) * 100 + c.to(tl.int32), (256,)))
    elif USE == 12:
        tl.store(o + tl.arange(0, 64), tl.histogram(tl.reshape(Vi, (256,)) & 63, 64))
    elif USE == 13:
        tl.atomic_add(o + (Vi & 15), 1)
    elif USE == 15:
        d = tl.dot(V.to(tl.float16), tl.trans(X).to(tl.float16))
        tl.store(o + i256, tl.reshape(d.to(tl.int32), (256,)))
    elif USE == 16:
        d = tl.dot(tl.trans(V.to(tl.int8)), X.to(tl.int8))
        tl.store(o + i256, tl.reshape(d, (256,)))
    else:
        tl.store(o + r, tl.argmin(V, 0, tie_break_left=True))


def view_model(x, view):
    X = x.reshape(16, 16)
    return [
        X,
        np.broadcast_to(x[:16][None, :], (16, 16)),
        np.broadcast_to(x[:16][:, None], (16, 16)),
        X.T,
        X[::-1],
        X.reshape(4, 4, 16).transpose(1, 0, 2).reshape(16, 16),
        np.broadcast_to(x[:64].reshape(4, 1, 16), (4, 4, 16)).reshape(16, 16),
    ][view]


def use_model(V, X, use):
    """Consumer `use` of V (values small enough that no type of the probe overflows but the custom scan's)."""
    r = np.arange(16)
    V, X = V.astype(np.int64), X.astype(np.int64)
    if use == 0:
        return np.cumsum(V, 0)
    if use == 1:
        return np.cumsum(V[:, ::-1], 1)[:, ::-1]
    if use == 2:
        return V.sum(0)
    if use == 3:
        return np.concatenate([V.max(1), V.argmax(1)])
    if use == 4:
        return np.sort(V, 1)[:, ::-1]
    if use == 5:
        return np.take_along_axis(V, V & 15, 0)
    if use == 6:
        return np.take_along_axis(V, (V >> 1) & 15, 1)
    if use == 7:
        return V @ X
    if use == 8:
        return np.where(V > 0, V, X * 2)
    if use == 9:
        return np.stack([V, -V], -1).reshape(16, 32)
    if use == 10:
        p = V.reshape(16, 8, 2)
        return p[..., 0] - 3 * p[..., 1]
    if use == 11:
        return np.cumsum(V, 1) * 100 + (r + 1)[None, :]
    if use == 12:
        return np.bincount((V & 63).ravel(), minlength=64)
    if use == 13:
        return np.bincount((V & 15).ravel(), minlength=16)
    if use == 15:
        return V @ X.T
    if use == 16:
        return V.T @ X
    return V.argmin(0)


VIEW_TYPES = {"int32": tl.int32, "int8": tl.int8, "int16": tl.int16, "int64": tl.int64, "float16": tl.float16}


@probe(
    "7 views (plain, broadcasts, trans, flip, permuted, 3-D broadcast) x 17 consumers (scan, reduce, sort, dots)"
    " x 5 types (int8/16/32/64, fp16)"
)
def probe_view_consumers():
    x = rng().integers(-7, 8, 256).astype(np.int32)  # the int8 tuple scan (16 * 7 = 112) stays in range
    bad, outs = [], []
    for tname, dt in VIEW_TYPES.items():
        for view in range(7):
            V = view_model(x, view)
            for use in range(17):
                o = empty(512, torch.int32)
                try:
                    k_view_consumer[(1,)](dev(x), o, view, use, dt)
                except Exception as exc:
                    first = str(exc).strip().splitlines()[0][:100]
                    bad.append(f"{tname} view {view} use {use}: {type(exc).__name__}: {first}")
                    continue
                got = host(o)
                want = np.asarray(use_model(V, x.reshape(16, 16), use)).reshape(-1).astype(np.int32)
                outs.append(got)
                if (m := mismatch(got[: want.size], want, 0)) is not None:
                    bad.append(f"{tname} view {view} use {use}: {m}")
    return {
        "525 kernels": (np.array(bad[:4] or ["ok"]), np.array(["ok"]), 0),
        "outputs": (np.concatenate(outs), None, 0),
    }


@triton.jit
def k_uniform_div(a, dv, o, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(a + r)
    d = tl.load(dv)  # one divisor for every lane, known only at run time
    tl.store(o + r, x // d)
    tl.store(o + N + r, x % d)
    tl.store(o + 2 * N + r, (x & 0x7F) // d)  # nonnegative dividends
    tl.store(o + 3 * N + r, (x & 0x7F) % d)


@probe("division and remainder by one runtime divisor for every lane (1, -1, 3, 7, 16, -128, MAX) on 6 integer types")
def probe_uniform_divisor():
    n = 64
    res = {}
    for np_t in (np.int8, np.int16, np.int32, np.int64, np.uint32, np.uint64):
        info = np.iinfo(np_t)
        x = rng().integers(info.min, info.max, n, dtype=np_t, endpoint=True)
        x[:4] = [info.min, info.max, 0, info.min + 1]
        got, want = [], []
        for dv in (1, -1, 3, 7, 16, -128, int(info.max)):
            if dv < 0 and info.min == 0:
                continue
            o = empty(4 * n, getattr(torch, np.dtype(np_t).name))
            k_uniform_div[(1,)](dev(x), dev(np.array([dv], np_t)), o, n)
            got.append(host(o).view(np_t))
            q, m = c_div(x, np.full(n, dv))
            if dv == -1 and info.min < 0:  # MIN // -1 overflows: undefined (PTX gives MIN); compared as 0
                got[-1] = got[-1].copy()
                got[-1][[0, n]] = 0
                q[0] = m[0] = 0
            xs = x & np_t(0x7F)
            q2, m2 = c_div(xs, np.full(n, dv))
            with np.errstate(over="ignore"):
                want.append(np.concatenate([q, m, q2, m2]).astype(np_t))
        res[np.dtype(np_t).name] = (np.concatenate(got), np.concatenate(want), 0)
    return res


@triton.jit
def k_rank10(x, o):
    h = tl.reshape(tl.load(x + tl.arange(0, 1024)), (2, 2, 2, 2, 2, 2, 2, 2, 2, 2))
    p = tl.permute(h, (9, 8, 7, 6, 5, 4, 3, 2, 1, 0))  # a bit reversal of the index
    tl.store(o + tl.arange(0, 1024), tl.reshape(p, (1024,)))
    tl.store(o + 1024 + tl.arange(0, 1024), tl.reshape(tl.cumsum(p, 4) - tl.max(p, 2, keep_dims=True), (1024,)))
    tl.store(o + 2048 + tl.arange(0, 1024), tl.reshape(tl.sort(tl.gather(p, p & 1, 3)), (1024,)))


@probe("rank-10 tiles (2 x ... x 2): a bit-reversal permute, cumsum / keep_dims max / gather / sort on middle axes")
def probe_rank10():
    x = rng().integers(-100, 100, 1024).astype(np.int32)
    o = empty(3072, torch.int32)
    k_rank10[(1,)](dev(x), o)
    p = x.reshape((2,) * 10).transpose(tuple(range(9, -1, -1)))
    want = np.concatenate(
        [
            p.ravel(),
            (np.cumsum(p, 4) - p.max(2, keepdims=True)).ravel(),
            np.sort(np.take_along_axis(p, p & 1, 3), -1).ravel(),
        ]
    )
    return {"out": (host(o), want.astype(np.int32), 0)}


def philox_ref(seed, offsets, rounds=10):
    """Triton's randint4x(seed, offset) for uint32 counters (random.py), in Python integers."""
    M = 2**32 - 1
    out = []
    for off in offsets:
        off = int(off) % 2**64
        c = [off & M, (off >> 32) & M, 0, 0]
        k0, k1 = seed & M, (seed >> 32) & M
        for _ in range(rounds):
            c0, c1, c2, c3 = c
            c = [
                ((0xCD9E8D57 * c2) >> 32) ^ c1 ^ k0,
                (0xCD9E8D57 * c2) & M,
                ((0xD2511F53 * c0) >> 32) ^ c3 ^ k1,
                (0xD2511F53 * c0) & M,
            ]
            k0, k1 = (k0 + 0x9E3779B9) & M, (k1 + 0xBB67AE85) & M
        out.append(c)
    return np.array(out, np.uint64).astype(np.uint32).T  # [4, n]


@triton.jit
def k_philox(o, of, seed, base, N: tl.constexpr):
    off = base + tl.arange(0, N).to(tl.int64) * 3_000_000_007  # int64 offsets past 2**32
    a, b, c, d = tl.randint4x(seed, off)
    tl.store(o + tl.arange(0, N), a)
    tl.store(o + N + tl.arange(0, N), b)
    tl.store(o + 2 * N + tl.arange(0, N), c)
    tl.store(o + 3 * N + tl.arange(0, N), d)
    tl.store(of + tl.arange(0, N), tl.rand(seed, off))


@probe("tl.randint4x / tl.rand with a 64-bit seed and int64 offsets past 2**32: bit-exact against Philox in Python")
def probe_philox():
    n, seed, base = 64, 0x1234_5678_9ABC_DEF1, 2**33 + 5
    o, of = empty(4 * n, torch.int32), empty(n, torch.float32)
    k_philox[(1,)](o, of, seed, base, n)
    ref = philox_ref(seed, base + np.arange(n, dtype=object) * 3_000_000_007)
    x = ref[0].view(np.int32)
    x = np.where(x < 0, -x - 1, x).astype(np.float32)
    return {
        "randint4x": (host(o).reshape(4, n).view(np.uint32), ref, 0),
        "rand": (host(of), x * np.float32(4.6566127342e-10), 0),
    }


@triton.jit
def _mixed_combine(v1, i1, f1, v2, i2, f2):
    take = (v2 > v1) | ((v2 == v1) & (i2 < i1))
    return tl.where(take, v2, v1), tl.where(take, i2, i1), f1 | f2


@triton.jit
def k_mixed_tuple(x, o, oi, of, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    v = tl.load(x + rm * N + rn)  # fp16
    idx = (rn + rm * 0).to(tl.int64) + 2**40
    flag = ((v < 0) << (rn % 8)).to(tl.int8)
    mv, mi, mf = tl.reduce((v, idx, flag), 1, _mixed_combine)
    tl.store(o + tl.arange(0, M), mv)
    tl.store(oi + tl.arange(0, M), mi)
    tl.store(of + tl.arange(0, M), mf)
    sv, si, sf = tl.associative_scan((v, idx, flag), 1, _mixed_combine)
    tl.store(o + M + rm * N + rn, sv)
    tl.store(oi + M + rm * N + rn, si)
    tl.store(of + M + rm * N + rn, sf)


@probe("tl.reduce / associative_scan over a tuple of mixed types (fp16 value, int64 index past 2**40, int8 flags)")
def probe_mixed_tuple():
    m, n = 4, 32
    v = rng().integers(-6, 6, (m, n)).astype(np.float16)
    o, oi, of = empty(m + m * n, torch.float16), empty(m + m * n, torch.int64), empty(m + m * n, torch.int8)
    k_mixed_tuple[(1,)](dev(v), o, oi, of, m, n)
    flag = ((v < 0).astype(np.int64) << (np.arange(n) % 8)).astype(np.uint8).view(np.int8)
    mx = v.max(1)
    first = np.argmax(v == mx[:, None], 1)
    cm = np.maximum.accumulate(v, 1)
    ci = np.array([[np.argmax(v[r, : j + 1] == cm[r, j]) for j in range(n)] for r in range(m)]) + 2**40
    cf = np.bitwise_or.accumulate(flag.view(np.uint8), 1).view(np.int8)
    return {
        "values": (host(o), np.concatenate([mx, cm.ravel()]), 0),
        "indices": (host(oi), np.concatenate([first + 2**40, ci.ravel()]), 0),
        "flags": (
            host(of),
            np.concatenate([np.bitwise_or.reduce(flag.view(np.uint8), 1).view(np.int8), cf.ravel()]),
            0,
        ),
    }


@triton.jit(debug=True)
def k_assert(x, N: tl.constexpr):
    v = tl.load(x + tl.arange(0, N))
    tl.device_assert(v >= 0, "negative input")


@triton.jit
def k_asm(x, o, N: tl.constexpr):
    v = tl.load(x + tl.arange(0, N))
    y = tl.inline_asm_elementwise("lop3.b32 $0, $1, $1, $1, 0x1e;", "=r,r", [v], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(o + tl.arange(0, N), y)


@triton.jit
def k_static_assert(x, N: tl.constexpr):
    tl.static_assert(N % 3 == 0, "N must be a multiple of 3")
    tl.store(x + tl.arange(0, N), 0)


def error_text(fn):
    try:
        fn()
    except Exception as exc:  # the message is what the probe checks
        return f"{type(exc).__name__}: {exc}"
    return "no error"


@probe("errors: device_assert(debug=True) fires, inline asm refused naming the op/line/asm, static_assert at compile")
def probe_clear_errors():
    if INTERPRET:  # the interpreter raises its own errors: nothing to compare
        return {}
    x = dev(np.array([1, -2, 3, 4], np.int32))
    fired = error_text(lambda: k_assert[(1,)](x, 4))
    asm = error_text(lambda: k_asm[(1,)](x, empty(4, torch.int32), 4))
    static = error_text(lambda: k_static_assert[(1,)](x, 4))
    import inspect

    lines, first = inspect.getsourcelines(k_asm.fn)
    asm_line = first + next(i for i, line in enumerate(lines) if "inline_asm_elementwise" in line)
    checks = {
        "device_assert names the message": "negative input" in fired,
        "inline asm names the op": "inline_asm" in asm,
        "inline asm names the source line": f"{__file__}:{asm_line}:" in asm,
        "inline asm shows the asm text": "lop3.b32" in asm,
        "static_assert names its message": "N must be a multiple of 3" in static,
    }
    return {k: (np.array([v]), np.array([True]), 0) for k, v in checks.items()}


@triton.jit
def k_bcast_dots(a, b, o, USE: tl.constexpr):
    r16 = tl.arange(0, 16)
    r32 = tl.arange(0, 32)
    r4 = tl.arange(0, 4)
    A = tl.load(a + r16[:, None] * 32 + r32[None, :])  # [16, 32]
    B = tl.load(b + r32[:, None] * 16 + r16[None, :])  # [32, 16]
    if USE == 0:  # batch-broadcast B
        A3 = tl.reshape(tl.load(a + tl.arange(0, 4 * 16 * 32)), (4, 16, 32))
        Bb = tl.broadcast_to(B[None, :, :], (4, 32, 16))
        c = tl.dot(A3, Bb)
        tl.store(o + tl.arange(0, 1024), tl.reshape(c, (1024,)))
    elif USE == 1:  # batch-broadcast A, B permuted from [16, 4, 32]
        B3 = tl.permute(tl.reshape(tl.load(b + tl.arange(0, 2048)), (16, 4, 32)), (1, 2, 0))  # [4, 32, 16]
        Ab = tl.broadcast_to(A[None, :, :], (4, 16, 32))
        c = tl.dot(Ab, B3)
        tl.store(o + tl.arange(0, 1024), tl.reshape(c, (1024,)))
    elif USE == 2:  # acc is a broadcast row
        acc = tl.broadcast_to(tl.load(b + r16)[None, :], (16, 16))
        c = tl.dot(A, B, acc)
        tl.store(o + tl.arange(0, 256), tl.reshape(c, (256,)))
    elif USE == 3:  # operands built by join + reshape (interleaved K)
        A2 = tl.reshape(tl.join(tl.reshape(A, (16, 16, 2)).sum(2), tl.reshape(A, (16, 2, 16)).max(1)), (16, 32))
        c = tl.dot(A2, B)
        tl.store(o + tl.arange(0, 256), tl.reshape(c, (256,)))
    elif USE == 4:  # dot of a transposed broadcast column
        col = tl.broadcast_to(tl.load(a + r32)[:, None], (32, 16))
        c = tl.dot(tl.trans(col), B.to(tl.float16).to(tl.float32))
        tl.store(o + tl.arange(0, 256), tl.reshape(c, (256,)))
    else:  # int8 batched with broadcast both
        A8 = tl.broadcast_to(A.to(tl.int8)[None, :, :], (4, 16, 32))
        B8 = tl.broadcast_to(tl.flip(B, 0).to(tl.int8)[None, :, :], (4, 32, 16))
        c = tl.dot(A8, B8) + r4[:, None, None]
        tl.store(o + tl.arange(0, 1024), tl.reshape(c.to(tl.float32), (1024,)))


@triton.jit
def k_loop_views(x, o, n, USE: tl.constexpr):
    r = tl.arange(0, 16)
    t = tl.load(x + r[:, None] * 16 + r[None, :])
    if USE == 0:
        for i in range(n):
            t = tl.trans(t)
            t = t + i
    elif USE == 1:
        for _i in range(n):
            t = tl.flip(t, 1)
    elif USE == 2:
        u = tl.reshape(t, (4, 4, 16))
        for _i in range(n):
            u = tl.permute(u, (1, 0, 2))
            u = tl.flip(u, 2) * 2 - 1
        t = tl.reshape(u, (16, 16))
    elif USE == 3:
        for i in range(n):
            if i % 2 == 0:
                t = tl.trans(t)
            else:
                t = t * 3
    elif USE == 4:
        row = tl.load(x + r)
        for i in range(n):
            t = tl.where(i % 2 == 0, tl.broadcast_to(row[None, :], (16, 16)), tl.trans(t))
            row = row + 1
    elif USE == 5:
        i = 0
        while i < n:
            t = tl.trans(tl.flip(t, 0))
            i += 1
    elif USE == 6:
        s = tl.sum(t, 0)
        for _i in range(n):
            t = tl.trans(t) + s[None, :]
            s = tl.max(t, 1)
    else:
        for _i in range(n):
            a, b = tl.split(tl.reshape(t, (16, 8, 2)))
            t = tl.reshape(tl.join(b, a), (16, 16))
            t = tl.trans(t)
    tl.store(o + r[:, None] * 16 + r[None, :], t)


@probe("tl.dot with broadcast operands: batch-broadcast A or B (GQA-like), a broadcast acc, join-built K, int8 batched")
def probe_broadcast_dots():
    g = rng(0)
    a = g.integers(-8, 8, 4 * 16 * 32).astype(np.float32)
    b = g.integers(-8, 8, 2048).astype(np.float32)
    A, B = a[:512].reshape(16, 32), b[:512].reshape(32, 16)
    A2 = np.stack([A.reshape(16, 16, 2).sum(2), A.reshape(16, 2, 16).max(1)], -1).reshape(16, 32)
    models = [
        a.reshape(4, 16, 32) @ B,
        A @ b.reshape(16, 4, 32).transpose(1, 2, 0),
        A @ B + b[:16][None, :],
        A2 @ B,
        np.broadcast_to(a[:32][:, None], (32, 16)).T @ B,
        np.broadcast_to(A @ B[::-1], (4, 16, 16)) + np.arange(4)[:, None, None],
    ]
    res = {}
    for use, want in enumerate(models):
        o = empty(want.size, torch.float32)
        k_bcast_dots[(1,)](dev(a), dev(b), o, use)
        res[f"use {use}"] = (host(o), want.ravel().astype(np.float32), 0)
    return res


def loop_views_model(x, use, n):
    t = x.reshape(16, 16).copy()
    if use == 0:
        for i in range(n):
            t = t.T + i
    elif use == 1:
        for _ in range(n):
            t = t[:, ::-1]
    elif use == 2:
        u = t.reshape(4, 4, 16)
        for _ in range(n):
            u = u.transpose(1, 0, 2)[:, :, ::-1] * 2 - 1
        t = u.reshape(16, 16)
    elif use == 3:
        for i in range(n):
            t = t.T if i % 2 == 0 else t * 3
    elif use == 4:
        row = x[:16].copy()
        for i in range(n):
            t = np.broadcast_to(row[None, :], (16, 16)).copy() if i % 2 == 0 else t.T
            row = row + 1
    elif use == 5:
        for _ in range(n):
            t = t[::-1].T
    elif use == 6:
        s = t.sum(0)
        for _ in range(n):
            t = t.T + s[None, :]
            s = t.max(1)
    else:
        for _ in range(n):
            q = t.reshape(16, 8, 2)
            t = np.stack([q[..., 1], q[..., 0]], -1).reshape(16, 16).T
    return np.ascontiguousarray(t).ravel()


@probe(
    "loop-carried views: trans/flip/permute/split+join/broadcast carried through for/while/if, trip counts 0, 1, 3, 4"
)
def probe_loop_carried_views():
    x = rng(0).integers(-20, 20, 256).astype(np.int32)
    res = {}
    for use in range(8):
        got, want = [], []
        for n in (0, 1, 3, 4):
            o = empty(256, torch.int32)
            k_loop_views[(1,)](dev(x), o, n, use)
            got.append(host(o))
            want.append(loop_views_model(x, use, n))
        res[f"use {use}"] = (np.stack(got), np.stack(want), 0)
    return res


@triton.jit
def k_bcast_operands(x, o, USE: tl.constexpr):
    r = tl.arange(0, 16)
    X = tl.load(x + r[:, None] * 16 + r[None, :])
    row = tl.load(x + r) & 15
    if USE == 0:
        g = tl.gather(X, tl.broadcast_to(row[None, :], (16, 16)), 0)
        tl.store(o + r[:, None] * 16 + r[None, :], g)
    elif USE == 1:
        g = tl.gather(X, tl.broadcast_to(row[:, None], (16, 16)), 1)
        tl.store(o + r[:, None] * 16 + r[None, :], g)
    elif USE == 2:
        h = tl.histogram(tl.reshape(tl.broadcast_to(row[None, :], (16, 16)), (256,)), 16)
        tl.store(o + r, h)
    elif USE == 3:
        tl.atomic_max(o + (r % 2)[:, None] + r[None, :] * 0, tl.broadcast_to(row[None, :], (16, 16)))
    elif USE == 4:
        tl.atomic_add(o + row[:, None] * 0 + r[None, :], tl.broadcast_to(row[:, None], (16, 16)))
    elif USE == 5:
        c = tl.broadcast_to((row > 7)[None, :], (16, 16))
        tl.store(o + r[:, None] * 16 + r[None, :], tl.where(c, X, tl.trans(X)))
    elif USE == 6:
        tl.store(o + r[None, :] * 16 + r[:, None], tl.broadcast_to(row[None, :], (16, 16)))
    elif USE == 7:
        g = tl.gather(tl.broadcast_to(row[None, :], (16, 16)), tl.trans(X) & 15, 1)
        tl.store(o + r[:, None] * 16 + r[None, :], g)
    else:
        m = tl.broadcast_to((row % 3 == 0)[:, None], (16, 16))
        tl.store(o + r[:, None] * 16 + r[None, :], X, mask=m)


@triton.jit
def k_sort_broadcast(x, o, DT: tl.constexpr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    rows = tl.load(x + tl.arange(0, A)[:, None] * B + tl.arange(0, B)[None, :]).to(DT)
    t = tl.broadcast_to(tl.expand_dims(rows, 1), (A, C, B))  # broadcast in the middle: sorted axis B dense
    s = tl.sort(t, descending=True)
    u = tl.topk(tl.broadcast_to(tl.expand_dims(rows, 2), (A, B, C)), C // 2)
    tl.store(o + tl.arange(0, A * B * C), tl.reshape(s, (A * B * C,)).to(tl.float32))
    tl.store(o + A * B * C + tl.arange(0, A * B * C // 2), tl.reshape(u, (A * B * C // 2,)).to(tl.float32))


def bcast_operands_model(x, use):
    X, row, o = x.reshape(16, 16), x[:16] & 15, np.zeros(256, np.int32)
    if use == 0:
        return np.take_along_axis(X, np.broadcast_to(row[None, :], (16, 16)), 0).ravel()
    if use == 1:
        return np.take_along_axis(X, np.broadcast_to(row[:, None], (16, 16)), 1).ravel()
    if use == 2:
        o[:16] = np.bincount(np.broadcast_to(row[None, :], (16, 16)).ravel(), minlength=16)
    elif use == 3:
        o[:2] = row.max()
    elif use == 4:
        o[:16] = row.sum()
    elif use == 5:
        return np.where(np.broadcast_to((row > 7)[None, :], (16, 16)), X, X.T).ravel()
    elif use == 6:
        return np.broadcast_to(row[None, :], (16, 16)).T.ravel().astype(np.int32)
    elif use == 7:
        return np.take_along_axis(np.broadcast_to(row[None, :], (16, 16)), X.T & 15, 1).ravel()
    else:
        return np.where(np.broadcast_to((row % 3 == 0)[:, None], (16, 16)), X, 0).ravel()
    return o


@probe(
    "broadcast tiles as the second operand: gather indices, histogram input, atomic values, where condition, store mask"
)
def probe_broadcast_operands():
    x = rng(1).integers(-50, 50, 256).astype(np.int32)
    res = {}
    for use in range(9):
        o = empty(256, torch.int32)
        k_bcast_operands[(1,)](dev(x), o, use)
        res[f"use {use}"] = (host(o), bcast_operands_model(x, use), 0)
    return res


@probe("tl.sort / tl.topk of broadcast tiles (broadcast axis in the middle or last) on 6 types, 3 shapes")
def probe_sort_of_broadcasts():
    res = {}
    for dt, name in (
        (tl.float32, "f32"),
        (tl.float16, "f16"),
        (tl.bfloat16, "bf16"),
        (tl.int64, "i64"),
        (tl.int8, "i8"),
        (tl.uint8, "u8"),
    ):
        for a, b, c in ((8, 8, 8), (32, 4, 8), (2, 16, 32)):
            x = rng(0).integers(-50, 50, a * b).astype(np.float32)
            if name == "u8":
                x = np.abs(x)
            o = empty(a * b * c + a * b * c // 2, torch.float32)
            k_sort_broadcast[(1,)](dev(x), o, dt, a, b, c)
            rows = x.reshape(a, b)
            srt = np.flip(np.sort(np.broadcast_to(rows[:, None, :], (a, c, b)), -1), -1)
            top = np.broadcast_to(rows[:, :, None], (a, b, c))[..., : c // 2]
            res[f"{name} {(a, b, c)}"] = (host(o), np.concatenate([srt.ravel(), top.ravel()]), 0)
    return res


@triton.jit
def k_long_gather(x, i, o, M: tl.constexpr, NS: tl.constexpr, NI: tl.constexpr, IT: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    v = tl.load(x + rm * NS + tl.arange(0, NS)[None, :])
    j = tl.load(i + rm * NI + tl.arange(0, NI)[None, :]).to(IT)
    tl.store(o + rm * NI + tl.arange(0, NI)[None, :], tl.gather(v, j, 1))


@triton.jit
def k_many_bins(x, o, N: tl.constexpr, BINS: tl.constexpr, IT: tl.constexpr, MASKED: tl.constexpr):
    v = tl.load(x + tl.arange(0, N)).to(IT)
    if MASKED:
        h = tl.histogram(v, BINS, mask=(v % 3) != 0)
    else:
        h = tl.histogram(v, BINS)
    tl.store(o + tl.arange(0, BINS), h)


@triton.jit
def _sum_max_combine(a1, b1, a2, b2):
    return a1 + a2, tl.maximum(b1, b2)


@triton.jit
def k_long_line(x, o, N: tl.constexpr, USE: tl.constexpr):
    r = tl.arange(0, N)
    v = tl.load(x + r)
    if USE == 0:
        tl.store(o + r, tl.sort(v))
    elif USE == 1:
        tl.store(o + r, tl.cumsum(v, 0, reverse=True))
    elif USE == 2:
        a, b = tl.associative_scan((v, v), 0, _sum_max_combine)
        tl.store(o + r, a * 3 + b)
    elif USE == 3:
        tl.store(o + tl.arange(0, 1), tl.argmax(v, 0) + tl.zeros((1,), tl.int32))
    elif USE == 4:
        tl.store(o + tl.arange(0, 16), tl.topk(v, 16))
    elif USE == 5:
        tl.store(o + tl.arange(0, 2 * N), tl.interleave(v, -v))
    elif USE == 6:
        tl.store(o + r, tl.flip(v, 0))
    elif USE == 7:
        tl.store(o + tl.arange(0, 1), tl.xor_sum(v, 0) + tl.zeros((1,), tl.int32))
    elif USE == 8:
        w = tl.reshape(v, (2, N // 2))
        tl.store(o + r, tl.reshape(tl.trans(w), (N,)))
    else:
        tl.store(o + r, tl.cumprod(v | 1, 0))


@probe(
    "tl.gather along lines longer than the vector unit (source or indices past 8192 elements; i8/i16/i32/i64 indices)"
)
def probe_long_gather():
    res = {}
    cases = ((1, 32768, 64, tl.int32), (1, 64, 16384, tl.int32), (2, 16384, 16384, tl.int64), (1, 16384, 8, tl.int16))
    for m, ns, ni, it in (*cases, (2, 128, 32768, tl.int8), (1, 65536, 4096, tl.int32)):
        g = rng(0)
        x = g.integers(-100, 100, m * ns).astype(np.float32)
        idx = g.integers(0, min(ns, 127) if it == tl.int8 else ns, m * ni).astype(np.int32)
        o = empty(m * ni, torch.float32)
        k_long_gather[(1,)](dev(x), dev(idx), o, m, ns, ni, it)
        res[f"{(m, ns, ni)} {it}"] = (host(o), np.take_along_axis(x.reshape(m, ns), idx.reshape(m, ni), 1).ravel(), 0)
    return res


@probe("tl.histogram of 16384-65536 bins (more than the vector unit), masked, i16/i32/i64 values, values out of range")
def probe_many_bins():
    res = {}
    cases = ((1024, 16384, tl.int32, False, -100, 17000), (32768, 16384, tl.int32, True, -5, 16384))
    for n, bins, it, masked, lo, hi in (
        *cases,
        (64, 32768, tl.int16, False, -32768, 32767),
        (16384, 65536, tl.int64, False, 0, 65536),
    ):
        x = rng(0).integers(lo, hi, n).astype(np.int64)
        o = empty(bins, torch.int32)
        k_many_bins[(1,)](dev(x), o, n, bins, it, masked)
        xv = x.astype({tl.int32: np.int32, tl.int16: np.int16, tl.int64: np.int64}[it]).astype(np.int64)
        keep = (xv >= 0) & (xv < bins) & ((np.fmod(xv, 3) != 0) if masked else True)
        res[f"{(n, bins, masked)}"] = (host(o), np.bincount(xv[keep], minlength=bins), 0)
    return res


def long_line_model(x, use):
    n = x.size
    if use == 0:
        return np.sort(x)
    if use == 1:
        return np.cumsum(x[::-1])[::-1]
    if use == 2:
        return np.cumsum(x) * 3 + np.maximum.accumulate(x)
    if use == 3:
        return np.array([np.argmax(x)])
    if use == 4:
        return np.sort(x)[::-1][:16]
    if use == 5:
        return np.stack([x, -x], -1).ravel()
    if use == 6:
        return x[::-1]
    if use == 7:
        return np.array([np.bitwise_xor.reduce(x)])
    if use == 8:
        return x.reshape(2, n // 2).T.ravel()
    with np.errstate(over="ignore"):
        return np.cumprod(x | 1, dtype=np.int32)


@probe(
    "one 16384-element line (2x the vector unit): sort, reverse cumsum, tuple scan, argmax, topk, interleave, flip, ..."
)
def probe_long_line():
    n = 16384
    x = rng(0).integers(-1000, 1000, n).astype(np.int32)
    res = {}
    for use in range(10):
        want = long_line_model(x, use).astype(np.int32)
        o = empty(2 * n, torch.int32)
        k_long_line[(1,)](dev(x), o, n, use)
        res[f"use {use}"] = (host(o)[: want.size], want, 0)
    return res


# ---- random chains of shape ops ---------------------------------------------------------------------------------
# Each chain starts from a loaded integer tile of 1-3 power-of-two dims and applies 3-8 random steps: permute,
# reshape, flip, cumsum (either direction), cumprod, a keep_dims sum/max/min/xor_sum/argmax combined back, where
# (also on a keep_dims max), a gather by the tile's own low bits, sort, topk, histogram, join, interleave,
# expand_dims + broadcast_to, split, a cast to another integer type, and an elementwise combination with an
# earlier tile of the same shape; numpy runs the same steps (Triton's promotions: sums of types narrower than 32
# bits in (u)int32; wrapping arithmetic). Found: tl.sort of a broadcast tile (8dc046e).
CHAIN_TYPES = {"int8": "tl.int8", "int16": "tl.int16", "int32": "tl.int32", "uint32": "tl.uint32", "int64": "tl.int64"}


def _pow2_dims(numel, rank, rnd):
    e = numel.bit_length() - 1
    cuts = sorted(rnd.randint(0, e) for _ in range(rank - 1))
    return tuple(2 ** (b - a) for a, b in zip([0, *cuts], [*cuts, e]))


def _sum_type(t):
    return {"int8": "int32", "int16": "int32"}.get(t, t)


def shape_chain(seed):
    """(kernel lines, numpy lines, first shape, last name, last shape, last type) of chain `seed`."""
    import math
    import random

    rnd = random.Random(seed)
    shape = _pow2_dims(2 ** rnd.randint(3, 9), rnd.randint(1, 3), rnd)
    first = shape
    kl, nl = [], []
    seen = [("t0", shape, "int32")]
    cur, ty = "t0", "int32"
    for step in range(1, rnd.randint(3, 8) + 1):
        n, numel, rank = f"t{step}", math.prod(shape), len(shape)
        ops = ["permute", "reshape", "flip", "cumsum", "reduce", "where", "gather", "sort", "cast", "combine"]
        ops += ["cumprod", "xor_sum", "argmax", "where_kept"] + (["topk"] if shape[-1] >= 2 else [])
        ops += ["histogram"] if rank == 1 and numel >= 64 else []
        if numel * 2 <= 4096 and rank < 4:
            ops += ["join", "interleave", "bcast"]
        if shape[-1] == 2 and rank > 1:
            ops.append("split")
        op = rnd.choice(ops)
        d = rnd.randrange(rank)
        if op == "permute" and rank > 1:
            perm = list(range(rank))
            rnd.shuffle(perm)
            kl.append(f"{n} = tl.permute({cur}, {tuple(perm)})")
            nl.append(f"{n} = {cur}.transpose({tuple(perm)})")
            shape = tuple(shape[p] for p in perm)
        elif op in ("reshape", "permute"):
            shape = _pow2_dims(numel, rnd.randint(1, 4), rnd)
            kl.append(f"{n} = tl.reshape({cur}, {shape})")
            nl.append(f"{n} = {cur}.reshape({shape})")
        elif op == "flip":
            kl.append(f"{n} = tl.flip({cur}, {d})")
            nl.append(f"{n} = np.flip({cur}, {d})")
        elif op == "cumsum":
            rev, ty = rnd.random() < 0.5, _sum_type(ty)
            kl.append(f"{n} = tl.cumsum({cur}, {d}, reverse={rev})")
            scan = (
                f"np.cumsum(np.flip({cur}, {d}), {d}, dtype=np.{ty})"
                if rev
                else f"np.cumsum({cur}, {d}, dtype=np.{ty})"
            )
            nl.append(f"{n} = np.flip({scan}, {d})" if rev else f"{n} = {scan}")
        elif op == "reduce":
            f = rnd.choice(["sum", "max", "min"])
            kl.append(f"{n} = {cur} - tl.{f}({cur}, {d}, keep_dims=True)")
            ty = _sum_type(ty)  # tl.max/tl.min promote types narrower than 32 bits to int32 too
            if f == "sum":
                nl.append(f"{n} = {cur}.astype(np.{ty}) - {cur}.sum({d}, keepdims=True, dtype=np.{ty})")
            else:
                nl.append(f"{n} = {cur}.astype(np.{ty}) - {cur}.{f}({d}, keepdims=True).astype(np.{ty})")
        elif op == "where":
            k = rnd.randint(2, 5)
            kl.append(f"{n} = tl.where({cur} % {k} == 0, {cur} * 3 + 1, {cur} ^ {k})")
            nl.append(
                f"{n} = np.where(np.fmod({cur}, {k}) == 0, {cur} * np.{ty}(3) + np.{ty}(1), {cur} ^ np.{ty}({k}))"
            )
        elif op == "gather":
            kl.append(f"{n} = tl.gather({cur}, ({cur}.to(tl.int64) & {shape[d] - 1}).to(tl.int32), {d})")
            nl.append(f"{n} = np.take_along_axis({cur}, {cur}.astype(np.int64) & {shape[d] - 1}, {d})")
        elif op == "sort":
            desc = rnd.random() < 0.5
            kl.append(f"{n} = tl.sort({cur}, descending={desc})")
            nl.append(f"{n} = np.flip(np.sort({cur}, -1), -1)" if desc else f"{n} = np.sort({cur}, -1)")
        elif op == "cast":
            ty = rnd.choice(sorted(CHAIN_TYPES))
            kl.append(f"{n} = {cur}.to({CHAIN_TYPES[ty]})")
            nl.append(f"{n} = {cur}.astype(np.{ty})")
        elif op == "combine":
            same = [(v, t) for v, sh, t in seen if sh == shape and t == ty and v != cur]
            if same:
                other = rnd.choice(same)[0]
                f = rnd.choice(["+", "^", "min"])
                kl.append(f"{n} = tl.minimum({cur}, {other})" if f == "min" else f"{n} = {cur} {f} {other}")
                nl.append(f"{n} = np.minimum({cur}, {other})" if f == "min" else f"{n} = {cur} {f} {other}")
            else:
                kl.append(f"{n} = {cur} + 1")
                nl.append(f"{n} = {cur} + np.{ty}(1)")
        elif op == "cumprod":
            kl.append(f"{n} = tl.cumprod({cur} | 1, {d})")
            nl.append(f"{n} = np.cumprod({cur} | np.{ty}(1), {d}, dtype=np.{ty})")
        elif op == "xor_sum":
            kl.append(f"{n} = {cur} - tl.xor_sum({cur}, {d}, keep_dims=True)")
            nl.append(f"{n} = {cur} - np.bitwise_xor.reduce({cur}, {d}, keepdims=True)")
        elif op == "argmax":
            kl.append(f"{n} = {cur}.to(tl.int32) + tl.argmax({cur}, {d}, keep_dims=True)")
            nl.append(f"{n} = {cur}.astype(np.int32) + np.argmax({cur}, {d}, keepdims=True).astype(np.int32)")
            ty = "int32"
        elif op == "where_kept":
            kl.append(f"{n} = tl.where(tl.max({cur}, {d}, keep_dims=True) > {cur}, {cur}, {cur} * 2)")
            nl.append(f"{n} = np.where({cur}.max({d}, keepdims=True) > {cur}, {cur}, {cur} * np.{ty}(2))")
        elif op == "topk":
            k = max(2, shape[-1] // rnd.choice([1, 2, 4]))  # k = 1: Triton's frontend refuses it
            kl.append(f"{n} = tl.topk({cur}, {k})")
            if k < shape[-1]:  # topk's tl.max steps promote narrow types to int32 (k = n is a plain sort)
                ty = _sum_type(ty)
            nl.append(f"{n} = np.ascontiguousarray(np.flip(np.sort({cur}, -1), -1)[..., :{k}]).astype(np.{ty})")
            shape = (*shape[:-1], k)
        elif op == "histogram":
            kl.append(f"{n} = tl.histogram({cur} & 63, 64)")
            nl.append(f"{n} = np.bincount(({cur}.astype(np.int64) & 63).ravel(), minlength=64).astype(np.int32)")
            shape, ty = (64,), "int32"
        elif op == "join":
            k = rnd.randint(2, 9)
            kl.append(f"{n} = tl.join({cur}, {cur} * {k} + 1)")
            nl.append(f"{n} = np.stack([{cur}, {cur} * np.{ty}({k}) + np.{ty}(1)], -1)")
            shape = (*shape, 2)
        elif op == "interleave":
            k = rnd.randint(2, 9)
            shape = (*shape[:-1], 2 * shape[-1])
            kl.append(f"{n} = tl.interleave({cur}, {cur} - {k})")
            nl.append(f"{n} = np.stack([{cur}, {cur} - np.{ty}({k})], -1).reshape({shape})")
        elif op == "bcast":
            d, m = rnd.randint(0, rank), rnd.choice([1, 2, 4])
            shape = (*shape[:d], m, *shape[d:])
            kl.append(f"{n} = tl.broadcast_to(tl.expand_dims({cur}, {d}), {shape})")
            nl.append(f"{n} = np.broadcast_to(np.expand_dims({cur}, {d}), {shape}).copy()")
        elif op == "split":
            kl.append(f"{n}a, {n}b = tl.split({cur})")
            kl.append(f"{n} = {n}a - 3 * {n}b")
            nl.append(f"{n} = {cur}[..., 0] - np.{ty}(3) * {cur}[..., 1]")
            shape = shape[:-1]
        cur = n
        seen.append((cur, shape, ty))
    return kl, nl, first, cur, shape, ty


def shape_chain_module(seeds):
    """Python source of a module defining CHAINS[seed] = (kernel, numpy model, input numel, output numel, type)."""
    import math

    out = ["import numpy as np", "import triton", "import triton.language as tl", "", "CHAINS = {}", ""]
    for seed in seeds:
        kl, nl, first, last, shape, ty = shape_chain(seed)
        n0, n1 = math.prod(first), math.prod(shape)
        body = "\n    ".join(kl)
        model = "\n    ".join(nl)
        out.append(
            f"""
@triton.jit
def chain_{seed}(x, o):
    t0 = tl.reshape(tl.load(x + tl.arange(0, {n0})), {first})
    {body}
    tl.store(o + tl.arange(0, {n1}), tl.reshape({last}, ({n1},)))


def model_{seed}(t0):
    t0 = t0.reshape({first})
    {model}
    return np.ascontiguousarray({last}).reshape(-1)


CHAINS[{seed}] = (chain_{seed}, model_{seed}, {n0}, {n1}, "{ty}")
"""
        )
    return "\n".join(out)


CHAIN_SEEDS = range(int(os.environ.get("PROBE_CHAIN_START", "0")), int(os.environ.get("PROBE_CHAIN_END", "60")))


@probe(f"random chains of shape ops on integer tiles (seeds {CHAIN_SEEDS.start}-{CHAIN_SEEDS.stop - 1}), numpy model")
def probe_shape_chains():
    import importlib.util
    import warnings

    folder = tempfile.mkdtemp(prefix="shape_chains_")
    path = os.path.join(folder, f"chains_{CHAIN_SEEDS.start}_{CHAIN_SEEDS.stop}.py")
    with open(path, "w") as f:
        f.write(shape_chain_module(CHAIN_SEEDS))
    spec = importlib.util.spec_from_file_location("shape_chains", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    got, want = {}, {}
    for seed, (kernel, model, n0, n1, ty) in mod.CHAINS.items():
        x = rng(seed).integers(-50, 50, n0).astype(np.int32)
        o = empty(n1, getattr(torch, ty))
        try:
            kernel[(1,)](dev(x), o)
            got[seed] = host(o).view(np.dtype(ty))
        except Exception as exc:
            got[seed] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:120]}"
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            try:
                want[seed] = model(x.copy())
            except Exception as exc:  # the generator's own mistake: shown, not counted as plate's
                got[seed] = f"model: {type(exc).__name__}: {exc}"
    bad = [s for s in got if isinstance(got[s], str) or mismatch(got[s], want[s], 0)]
    detail = [f"seed {s}: {got[s] if isinstance(got[s], str) else mismatch(got[s], want[s], 0)}" for s in bad[:3]]
    flat = np.concatenate([g if not isinstance(g, str) else np.array([-1]) for g in got.values()]).astype(np.int64)
    return {"chains": (np.array(detail or ["ok"]), np.array(["ok"]), 0), "outputs": (flat, None, 0)}


def small_vector_machine(max_elements):
    """plate-mini with a vector unit of `max_elements`: every tile op is split the way plate1 splits 8192+ tiles."""
    import dataclasses

    from triton_plate_backend.machine import get_machine

    base = get_machine("plate-mini")
    vector = dataclasses.replace(base.core.vector, max_elements=max_elements)
    return dataclasses.replace(base, name=f"mini-vec{max_elements}", core=dataclasses.replace(base.core, vector=vector))


def compile_and_run(fn, signature, machine, arrays, constexprs=None):
    """Compile a @triton.jit kernel for `machine` (TTIR from Triton's NVIDIA frontend at sm90, as tests/'s harness
    makes it; plate's pipeline) and run one program on numpy arrays; the arrays read back."""
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler.compiler import make_backend

    from triton_plate_backend.passes.pipeline import run_pipeline
    from triton_plate_backend.sim.executor import execute
    from triton_plate_backend.sim.memory import DeviceMemory
    from triton_plate_backend.ttir.parser import parse

    target = GPUTarget("cuda", 90, 32)
    backend = make_backend(target)
    options = backend.parse_options({})
    ctx = ir.context()
    ir.load_dialects(ctx)
    backend.load_dialects(ctx)
    src = ASTSource(fn, signature=signature, constexprs=constexprs or {}, attrs={})
    mod = src.make_ir(target, options, backend.get_codegen_implementation(options), backend.get_module_map(), ctx)
    ttir = backend.make_ttir(mod, {}, options, 90).str()
    _, program, _ = run_pipeline(parse(ttir, fn.__name__), None, machine)
    mem = DeviceMemory(machine)
    allocs = []
    for a in arrays:
        al = mem.alloc(max(a.nbytes, 1))
        mem.write_bytes(al.base, a.tobytes())
        allocs.append(al)
    execute(program, 1, [al.base for al in allocs], mem, machine)
    return [np.frombuffer(mem.read_bytes(al.base, a.nbytes), a.dtype).copy() for al, a in zip(allocs, arrays)]


@probe(
    f"the random shape chains (seeds {CHAIN_SEEDS.start}-{CHAIN_SEEDS.stop - 1}) compiled for a 16-element vector unit"
)
def probe_shape_chains_small_vector():
    import importlib.util
    import warnings

    if INTERPRET:
        return {}
    folder = tempfile.mkdtemp(prefix="shape_chains_")
    path = os.path.join(folder, f"chains_sv_{CHAIN_SEEDS.start}_{CHAIN_SEEDS.stop}.py")
    with open(path, "w") as f:
        f.write(shape_chain_module(CHAIN_SEEDS))
    spec = importlib.util.spec_from_file_location("shape_chains_sv", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    machine = small_vector_machine(16)
    tt = {"int8": "i8", "int16": "i16", "int32": "i32", "uint32": "u32", "int64": "i64"}
    bad = []
    for seed, (kernel, model, n0, n1, ty) in mod.CHAINS.items():
        x = rng(seed).integers(-50, 50, n0).astype(np.int32)
        try:
            _, out = compile_and_run(kernel, {"x": "*i32", "o": "*" + tt[ty]}, machine, [x, np.zeros(n1, ty)])
        except Exception as exc:
            bad.append(f"seed {seed}: {type(exc).__name__}: {str(exc).strip().splitlines()[0][:120]}")
            continue
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            want = model(x.copy())
        if (m := mismatch(out, want, 0)) is not None:
            bad.append(f"seed {seed}: {m}")
    return {"chains": (np.array(bad[:3] or ["ok"]), np.array(["ok"]), 0)}


@probe("the views x consumers matrix (int32, fp16, int8; 16 consumers) compiled for a 16-element vector unit")
def probe_view_consumers_small_vector():
    if INTERPRET:
        return {}
    machine = small_vector_machine(16)
    x = rng().integers(-7, 8, 256).astype(np.int32)
    sig = {"x": "*i32", "o": "*i32", "VIEW": "constexpr", "USE": "constexpr", "DT": "constexpr"}
    bad = []
    for tname in ("int32", "float16", "int8"):
        for view in range(7):
            V = view_model(x, view)
            for use in range(16):  # not 16: the NVIDIA frontend wants K >= 32 for an int8 dot (plate's takes 16)
                const = {"VIEW": view, "USE": use, "DT": VIEW_TYPES[tname]}
                try:
                    _, out = compile_and_run(k_view_consumer, sig, machine, [x, np.zeros(512, np.int32)], const)
                except Exception as exc:
                    bad.append(f"{tname} view {view} use {use}: {type(exc).__name__}: {str(exc).strip()[:100]}")
                    continue
                want = np.asarray(use_model(V, x.reshape(16, 16), use)).reshape(-1).astype(np.int32)
                if (m := mismatch(out[: want.size], want, 0)) is not None:
                    bad.append(f"{tname} view {view} use {use}: {m}")
    return {"336 kernels": (np.array(bad[:3] or ["ok"]), np.array(["ok"]), 0)}


# ---- math library: triton.language.extra.libdevice and tl.math (session 28) ---------------------------------------
def _edges(dtype):
    """Edge values of a float type: zeros, subnormals, +-inf, NaN, large, negative, half-integers, then randoms."""
    tiny = np.finfo(dtype).smallest_subnormal
    big = 1e30 if dtype == np.float32 else 1e300
    e = [0.0, -0.0, tiny, -tiny * 3, np.finfo(dtype).tiny, np.inf, -np.inf, np.nan, big, -big, 1.0, -1.0, 0.5, -0.5]
    e += [2.5, -2.5, 3.5, -3.0, 100.0, -100.0, 88.5, -104.0, 1e-7, 0.999, -0.999, 7.25, -7.75, 20.0, 1.5, 3e5]
    e += [-0.25, 0.75]
    return np.concatenate([np.array(e, dtype), (rng(len(e)).standard_normal(32) * 3).astype(dtype)])


def _ulp_problems(name, got, want, dtype, bound, abs_tol=0.0):
    """Problems of `got` (the kernel's, in `dtype`) against `want` (float64 reference): NaN where NaN, infinities
    and (bound 0) zeros' signs exact, else within `bound` ulp of the type (or `abs_tol`)."""
    bad = []
    g = np.asarray(got, np.float64)
    w = np.asarray(want, np.float64)
    with np.errstate(all="ignore"):
        wr = w.astype(dtype).astype(np.float64)  # the reference rounded to the type
        ulp = np.spacing(np.abs(wr).astype(dtype)).astype(np.float64)
        err = np.abs(g - w) / ulp
    for i in range(g.size):
        if np.isnan(w[i]) or np.isnan(g[i]):
            ok = np.isnan(w[i]) and np.isnan(g[i])
        elif np.isinf(wr[i]) or np.isinf(g[i]):
            ok = g[i] == wr[i] or (bound > 0 and np.isfinite(g[i]) and abs(g[i]) == np.finfo(dtype).max)
        elif bound == 0:
            ok = g[i] == wr[i] and np.signbit(g[i]) == np.signbit(wr[i])
        else:
            ok = err[i] <= bound or abs(g[i] - w[i]) <= abs_tol
        if not ok:
            bad.append(f"{name}({i}): got {g[i]!r} want {w[i]!r}")
    return bad


def _ilogb(x):
    if x == 0 or np.isnan(x):
        return -(2**31)
    return 2**31 - 1 if np.isinf(x) else math.frexp(float(x))[1] - 1


def _round_half_away(x):
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


def _to_float(v):
    try:
        return float(v)
    except OverflowError:
        return math.copysign(math.inf, float(mpmath.sign(v)))


def _mp(fn):
    """An mpmath function of float64s (60 digits), to float64; NaN for a non-finite input."""

    def f(x):
        mpmath.mp.dps = 60
        return np.array([_to_float(fn(mpmath.mpf(float(v)))) if np.isfinite(v) else np.nan for v in x])

    return f


def _sp(name):
    return lambda x: getattr(scipy.special, name)(x)


def _bessel(name):
    """scipy's Bessel function, 0 at +-inf (j1 odd: -0 at -inf) as C's and CUDA's."""
    return lambda x: np.where(np.isinf(x) & ((x > 0) | (name[0] == "j")), 0.0, getattr(scipy.special, name)(x))


def _lgamma(x):
    return np.array([np.inf if (v <= 0 and v == np.floor(v)) else math.lgamma(v) for v in x])


def _erfc_mp(x):
    """erfc in mpmath (scipy's fp64 erfc is some ulp off in the tail)."""
    return np.where(
        np.isfinite(x), _mp(mpmath.erfc)(np.clip(x, -30, 30)), np.where(x > 0, 0.0, np.where(x < 0, 2.0, x))
    )


def _normcdf_mp(x):
    f = _mp(lambda v: mpmath.erfc(-v / mpmath.sqrt(2)) / 2)
    return np.where(np.isfinite(x), f(np.clip(x, -50, 50)), np.where(x > 0, 1.0, np.where(x < 0, 0.0, x)))


def _erfcx_mp(x):
    def one(v):
        if v > 1e6:  # the asymptotic series' first terms (mpmath's erfc fails far out)
            return (1 - 1 / (2 * v * v)) / (v * mpmath.sqrt(mpmath.pi))
        return mpmath.inf if v < -30 else mpmath.exp(v * v) * mpmath.erfc(v)

    f = _mp(one)
    return np.where(np.isfinite(x), f(x), np.where(x > 0, 0.0, np.where(x < 0, np.inf, x)))


def _erfcinv1(y):
    if np.isnan(y) or y < 0 or y > 2:
        return np.nan
    if y == 0 or y == 2:
        return np.inf if y == 0 else -np.inf
    if y == 1:
        return 0.0
    mpmath.mp.dps = 60
    t0 = float(scipy.special.erfcinv(max(y, 1e-300)))
    ly = mpmath.log(mpmath.mpf(float(y)))
    return float(mpmath.findroot(lambda t: mpmath.log(mpmath.erfc(t)) - ly, t0))


def _erfcinv_mp(x):
    return np.array([_erfcinv1(v) for v in x])


# name, reference on float64 inputs, CUDA's fp32 ulp bound, CUDA's fp64 ulp bound (0: exact), absolute tolerance
LIBDEVICE_UNARY = [
    ("exp", np.exp, 2, 1, 0),
    ("expm1", np.expm1, 1, 1, 0),
    ("log", np.log, 1, 1, 0),
    ("log1p", np.log1p, 1, 1, 0),
    ("log2", np.log2, 1, 1, 0),
    ("log10", np.log10, 2, 1, 0),
    ("exp2", np.exp2, 2, 1, 0),
    ("exp10", lambda x: 10.0**x, 2, 1, 0),
    ("sqrt", np.sqrt, 0, 0, 0),
    ("rsqrt", lambda x: 1 / np.sqrt(x), 2, 1, 0),
    ("cbrt", np.cbrt, 1, 1, 0),
    ("rcbrt", lambda x: 1 / np.cbrt(x), 1, 1, 0),
    ("erf", _sp("erf"), 2, 2, 0),
    ("erfc", _erfc_mp, 4, 5, 0),
    ("erfinv", _sp("erfinv"), 2, 5, 0),
    ("erfcinv", _erfcinv_mp, 4, 6, 0),
    ("erfcx", _erfcx_mp, 4, 4, 0),
    ("normcdf", _normcdf_mp, 5, 5, 0),
    ("normcdfinv", _sp("ndtri"), 5, 8, 0),
    ("tanh", np.tanh, 2, 1, 0),
    ("sinh", np.sinh, 3, 2, 0),
    ("cosh", np.cosh, 2, 1, 0),
    ("asinh", np.arcsinh, 3, 2, 0),
    ("atan", np.arctan, 2, 2, 0),
    ("sin", np.sin, 2, 2, 0),
    ("cos", np.cos, 2, 2, 0),
    ("tan", np.tan, 4, 2, 0),
    ("asin", np.arcsin, 2, 2, 0),
    ("acos", np.arccos, 2, 2, 0),
    ("acosh", np.arccosh, 4, 3, 0),
    ("atanh", np.arctanh, 3, 2, 0),
    ("cyl_bessel_i0", lambda x: np.where(np.isinf(x), np.inf, scipy.special.i0(x)), 6, 6, 0),  # scipy: NaN at inf
    ("cyl_bessel_i1", lambda x: np.where(np.isinf(x), x, scipy.special.i1(x)), 6, 6, 0),
    ("sinpi", _mp(mpmath.sinpi), 1, 1, 0),
    ("cospi", _mp(mpmath.cospi), 1, 1, 0),
    ("lgamma", _lgamma, 6, 4, 1e-6),
    ("tgamma", _sp("gamma"), 5, 10, 0),
    ("j0", _bessel("j0"), 9, 7, 2.2e-6),
    ("j1", _bessel("j1"), 9, 7, 2.2e-6),
    ("y0", _bessel("y0"), 9, 7, 2.2e-6),
    ("y1", _bessel("y1"), 9, 7, 2.2e-6),
    ("round", _round_half_away, 0, 0, 0),
    ("rint", np.rint, 0, 0, 0),
    ("nearbyint", np.rint, 0, 0, 0),
    ("trunc", np.trunc, 0, 0, 0),
    ("floor", np.floor, 0, 0, 0),
    ("ceil", np.ceil, 0, 0, 0),
    ("abs", np.abs, 0, 0, 0),
    (
        "logb",
        lambda x: np.array(
            [np.nan if np.isnan(v) else -np.inf if v == 0 else np.inf if np.isinf(v) else _ilogb(v) for v in x]
        ),
        0,
        0,
        0,
    ),
    ("ilogb", lambda x: np.array([_ilogb(v) for v in x], np.float64), 0, 0, 0),
    ("signbit", lambda x: np.signbit(x).astype(np.float64), 0, 0, 0),
    ("isnan", lambda x: np.isnan(x).astype(np.float64), 0, 0, 0),
    ("isinf", lambda x: np.isinf(x).astype(np.float64), 0, 0, 0),
    ("finite", lambda x: np.isfinite(x).astype(np.float64), 0, 0, 0),
]


@triton.jit
def _libdevice_unary(x):
    if x.dtype == tl.float32:
        finite = libdevice.finitef(x)
    else:
        finite = libdevice.isfinited(x)
    return (
        libdevice.exp(x),
        libdevice.expm1(x),
        libdevice.log(x),
        libdevice.log1p(x),
        libdevice.log2(x),
        libdevice.log10(x),
        libdevice.exp2(x),
        libdevice.exp10(x),
        libdevice.sqrt(x),
        libdevice.rsqrt(x),
        libdevice.cbrt(x),
        libdevice.rcbrt(x),
        libdevice.erf(x),
        libdevice.erfc(x),
        libdevice.erfinv(x),
        libdevice.erfcinv(x),
        libdevice.erfcx(x),
        libdevice.normcdf(x),
        libdevice.normcdfinv(x),
        libdevice.tanh(x),
        libdevice.sinh(x),
        libdevice.cosh(x),
        libdevice.asinh(x),
        libdevice.atan(x),
        libdevice.sin(x),
        libdevice.cos(x),
        libdevice.tan(x),
        libdevice.asin(x),
        libdevice.acos(x),
        libdevice.acosh(x),
        libdevice.atanh(x),
        libdevice.cyl_bessel_i0(x),
        libdevice.cyl_bessel_i1(x),
        libdevice.sinpi(x),
        libdevice.cospi(x),
        libdevice.lgamma(x),
        libdevice.tgamma(x),
        libdevice.j0(x),
        libdevice.j1(x),
        libdevice.y0(x),
        libdevice.y1(x),
        libdevice.round(x),
        libdevice.rint(x),
        libdevice.nearbyint(x),
        libdevice.trunc(x),
        libdevice.floor(x),
        libdevice.ceil(x),
        libdevice.abs(x),
        libdevice.logb(x),
        libdevice.ilogb(x),
        libdevice.signbit(x) != 0,
        libdevice.isnan(x) != 0,
        libdevice.isinf(x) != 0,
        finite != 0,
    )


@triton.jit
def k_libdevice_unary(x, o, N: tl.constexpr, NOUT: tl.constexpr):
    r = tl.arange(0, N)
    outs = _libdevice_unary(tl.load(x + r))
    for j in tl.static_range(NOUT):
        tl.store(o + j * N + r, outs[j].to(tl.float64))


def _libdevice_unary_problems(got, x, dtype, which):
    bad = []
    with np.errstate(all="ignore"):
        for j, (name, ref, b32, b64, abs_tol) in enumerate(LIBDEVICE_UNARY):
            want = np.asarray(ref(x.astype(np.float64)), np.float64)
            bound = b32 if dtype == np.float32 else b64
            out_type = np.float64 if name == "ilogb" else dtype  # an int32 result
            bad += _ulp_problems(f"{which}{name}", got[j], want, out_type, bound, abs_tol)
    return bad


@probe(
    "libdevice unary functions (54: exp..erfinv..lgamma..j0..i0..ilogb..isinf), fp32/fp64 edge values, CUDA ulp bounds"
)
def probe_libdevice_unary():
    res = {}
    nout = len(LIBDEVICE_UNARY)
    for dtype in (np.float32, np.float64):
        x = _edges(dtype)
        o = empty(nout * x.size, torch.float64)
        k_libdevice_unary[(1,)](dev(x), o, x.size, nout)
        got = host(o).reshape(nout, x.size)
        bad = [] if INTERPRET else _libdevice_unary_problems(got, x, dtype, "")
        res[np.dtype(dtype).name] = (got, None, None)
        res[np.dtype(dtype).name + " ulp"] = (np.array(bad[:4] or ["ok"]), np.array(["ok"]), 0)
    return res


@triton.jit
def k_libdevice_binary(x, y, n, o, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(x + r)
    b = tl.load(y + r)
    k = tl.load(n + r)
    outs = (
        libdevice.pow(a, b),
        libdevice.atan2(a, b),
        libdevice.hypot(a, b),
        libdevice.rhypot(a, b),
        libdevice.fmod(a, b),
        libdevice.remainder(a, b),
        libdevice.copysign(a, b),
        libdevice.nextafter(a, b),
        libdevice.fdim(a, b),
        libdevice.ldexp(a, k),
        libdevice.scalbn(a, k),
    )
    for j in tl.static_range(len(outs)):
        tl.store(o + j * N + r, outs[j].to(tl.float64))


def _c_remainder(x, y):
    return np.array(
        [math.remainder(a, b) if np.isfinite(a) and b != 0 and not np.isnan(b) else np.nan for a, b in zip(x, y)]
    )


def _rhypot(a, b):
    mpmath.mp.dps = 60
    with np.errstate(all="ignore"):
        rough = 1 / np.hypot(a, b)
    fine = [
        _to_float(1 / mpmath.sqrt(mpmath.mpf(u) ** 2 + mpmath.mpf(v) ** 2)) if (u or v) else 0 for u, v in zip(a, b)
    ]
    return np.where(np.isfinite(a) & np.isfinite(b) & ((a != 0) | (b != 0)), fine, rough)


def _nextafter(x, y, dtype):
    return np.nextafter(x.astype(dtype), y.astype(dtype)).astype(np.float64)


LIBDEVICE_BINARY = [  # name, reference (a, b, k, dtype), fp32 ulp bound, fp64 ulp bound
    ("pow", lambda a, b, k, t: np.power(a, b), 4, 2),
    ("atan2", lambda a, b, k, t: np.arctan2(a, b), 3, 2),
    ("hypot", lambda a, b, k, t: np.hypot(a, b), 3, 2),
    ("rhypot", lambda a, b, k, t: _rhypot(a, b), 2, 1),
    ("fmod", lambda a, b, k, t: np.fmod(a, b), 0, 0),
    ("remainder", lambda a, b, k, t: np.where(np.isinf(b) & np.isfinite(a), a, _c_remainder(a, b)), 0, 0),
    ("copysign", lambda a, b, k, t: np.copysign(a, b), 0, 0),
    ("nextafter", lambda a, b, k, t: _nextafter(a, b, t), 0, 0),
    ("fdim", lambda a, b, k, t: np.where(np.isnan(a) | np.isnan(b), np.nan, np.where(a > b, a - b, 0.0)), 0, 0),
    ("ldexp", lambda a, b, k, t: np.ldexp(a.astype(t), k).astype(np.float64), 0, 0),
    ("scalbn", lambda a, b, k, t: np.ldexp(a.astype(t), k).astype(np.float64), 0, 0),
]


@probe(
    "libdevice binary functions (pow atan2 hypot rhypot fmod remainder copysign nextafter fdim ldexp scalbn), fp32/fp64"
)
def probe_libdevice_binary():
    res = {}
    for dtype in (np.float32, np.float64):
        e = _edges(dtype)
        ne = e.size
        x = np.repeat(e[:32], 32)[: 32 * 32]  # every pair of the 32 edge values
        y = np.tile(e[:32], 32)
        g = rng(ne)  # then 1024 random pairs, a third of the exponents small integers
        rx, ry = g.standard_normal((2, 1024)) * 4
        ry[::3] = np.round(ry[::3])
        x = np.concatenate([x, rx.astype(dtype)])
        y = np.concatenate([y, ry.astype(dtype)])
        k = rng(3).integers(-300, 300, x.size).astype(np.int32)
        k[:8] = [0, 1, -1, 2**31 - 1, -(2**31), 128, -150, -1100]
        o = empty(len(LIBDEVICE_BINARY) * x.size, torch.float64)
        k_libdevice_binary[(1,)](dev(x), dev(y), dev(k), o, x.size)
        got = host(o).reshape(len(LIBDEVICE_BINARY), x.size)
        bad = []
        if not INTERPRET:
            with np.errstate(all="ignore"):
                a, b = x.astype(np.float64), y.astype(np.float64)
                for j, (name, ref, b32, b64) in enumerate(LIBDEVICE_BINARY):
                    bound = b32 if dtype == np.float32 else b64
                    bad += _ulp_problems(name, got[j], ref(a, b, k, dtype), dtype, bound)
        res[np.dtype(dtype).name] = (got, None, None)
        res[np.dtype(dtype).name + " ulp"] = (np.array(bad[:4] or ["ok"]), np.array(["ok"]), 0)
    return res


@triton.jit
def k_tl_math(x, o, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(x + r)
    if a.dtype == tl.float32:  # the IEEE-rounded forms take fp32 only; fp64's plain ones are IEEE
        s_rn, q_rn, r_ieee = tl.sqrt_rn(a), tl.div_rn(a, 3.0), tl.fdiv(1.0, a, ieee_rounding=True)
    else:
        s_rn, q_rn, r_ieee = tl.sqrt(a), a / 3.0, 1.0 / a
    outs = (
        tl.exp(a),
        tl.exp2(a),
        tl.log(a),
        tl.log2(a),
        tl.sqrt(a),
        s_rn,
        tl.rsqrt(a),
        tl.erf(a),
        tl.floor(a),
        tl.ceil(a),
        tl.abs(a),
        tl.sin(a),
        tl.cos(a),
        q_rn,
        r_ieee,
        tl.fma(a, a, -1.0),
        tl.clamp(a, -2.0, 2.0, propagate_nan=tl.PropagateNan.ALL),
        tl.sigmoid(a),
    )
    for j in tl.static_range(len(outs)):
        tl.store(o + j * N + r, outs[j].to(tl.float64))


def _fma_ref(a, dtype):
    """a * a - 1 rounded once to dtype (exact rationals; inf past the type's largest)."""
    out = []
    for v in a.tolist():
        if not np.isfinite(v):
            out.append(v * v - 1)
            continue
        q = Fraction(v) * Fraction(v) - 1
        out.append(float(q) if abs(q) < 2**1000 else np.inf)
    return np.array(out)


TL_MATH = [  # name, reference on float64, ulp bound (0: exact)
    ("exp", np.exp, 2),
    ("exp2", np.exp2, 2),
    ("log", np.log, 2),
    ("log2", np.log2, 2),
    ("sqrt", np.sqrt, 1),
    ("sqrt_rn", np.sqrt, 0),
    ("rsqrt", lambda a: 1 / np.sqrt(a), 2),
    ("erf", _sp("erf"), 2),
    ("floor", np.floor, 0),
    ("ceil", np.ceil, 0),
    ("abs", np.abs, 0),
    ("sin", np.sin, 2),
    ("cos", np.cos, 2),
    ("div_rn", lambda a: None, 0),
    ("fdiv ieee", lambda a: None, 0),
    ("fma", None, 0),
    ("clamp", lambda a: np.where(np.isnan(a), np.nan, np.clip(a, -2.0, 2.0)), 0),
    ("sigmoid", None, 2),  # Triton's formula 1 / (1 + exp(-x)) in the type: exp(100) overflows fp32, sigmoid(-100) = 0
]


@probe("tl.exp/exp2/log/log2/sqrt/sqrt_rn/rsqrt/erf/floor/ceil/abs/sin/cos/div_rn/fdiv/fma/clamp/sigmoid, edge values")
def probe_tl_math_edges():
    res = {}
    for dtype in (np.float32, np.float64):
        x = _edges(dtype)
        o = empty(len(TL_MATH) * x.size, torch.float64)
        k_tl_math[(1,)](dev(x), o, x.size)
        got = host(o).reshape(len(TL_MATH), x.size)
        bad = []
        if not INTERPRET:
            a = x.astype(np.float64)
            for j, (name, ref, bound) in enumerate(TL_MATH):
                with np.errstate(all="ignore"):
                    if name == "div_rn":  # correctly rounded: the float64 quotient rounded once (no double rounding)
                        want = (x / dtype(3.0)).astype(np.float64)
                    elif name == "fdiv ieee":
                        want = (dtype(1.0) / x).astype(np.float64)
                    elif name == "fma":
                        want = _fma_ref(a, dtype)
                    elif name == "sigmoid":
                        want = (1 / (1 + np.exp(-x))).astype(np.float64)
                    else:
                        want = ref(a)
                bad += _ulp_problems(name, got[j], want, dtype, bound)
        res[np.dtype(dtype).name] = (got, None, None)
        res[np.dtype(dtype).name + " ulp"] = (np.array(bad[:4] or ["ok"]), np.array(["ok"]), 0)
    return res


def _round_exact(q, dtype, mode):
    """The rational q rounded to dtype in mode rn/rz/ru/rd (finite, no overflow), as float64."""
    f = dtype(float(q))
    down, up = dtype(-np.inf), dtype(np.inf)
    while Fraction(float(f)) > q:
        f = np.nextafter(f, down)
    while Fraction(float(np.nextafter(f, up))) <= q:
        f = np.nextafter(f, up)
    lo, hi = f, np.nextafter(f, up)  # lo <= q < hi
    if Fraction(float(lo)) == q:
        return float(lo)
    if mode == "rd":
        return float(lo)
    if mode == "ru":
        return float(hi)
    if mode == "rz":
        return float(lo if q > 0 else hi)
    mid = (Fraction(float(lo)) + Fraction(float(hi))) / 2
    if q != mid:
        return float(lo if q < mid else hi)
    return float(lo if int(np.asarray(lo).view(np.uint32 if dtype == np.float32 else np.uint64)) % 2 == 0 else hi)


def _sqrt_exact(v, dtype, mode):
    """sqrt(v) rounded in mode: the candidates bracketed by comparing squares exactly."""
    f = dtype(np.sqrt(v))
    q = Fraction(float(v))
    down, up = dtype(-np.inf), dtype(np.inf)
    while Fraction(float(f)) ** 2 > q:
        f = np.nextafter(f, down)
    while Fraction(float(np.nextafter(f, up))) ** 2 <= q:
        f = np.nextafter(f, up)
    lo, hi = f, np.nextafter(f, up)
    if Fraction(float(lo)) ** 2 == q or mode in ("rd", "rz"):
        return float(lo)
    if mode == "ru":
        return float(hi)
    mid = (Fraction(float(lo)) + Fraction(float(hi))) / 2
    return float(lo if q < mid * mid else hi)


@triton.jit
def k_libdevice_rounding(x, y, z, o, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(x + r)
    b = tl.load(y + r)
    c = tl.load(z + r)
    sa = tl.abs(a)
    outs = (
        libdevice.div_rn(a, b),
        libdevice.div_rz(a, b),
        libdevice.div_ru(a, b),
        libdevice.div_rd(a, b),
        libdevice.mul_rz(a, b),
        libdevice.mul_ru(a, b),
        libdevice.add_rd(a, b),
        libdevice.sub_ru(a, b),
        libdevice.fma_rn(a, b, c),
        libdevice.fma_rz(a, b, c),
        libdevice.fma_ru(a, b, c),
        libdevice.fma_rd(a, b, c),
        libdevice.sqrt_rn(sa),
        libdevice.sqrt_rz(sa),
        libdevice.sqrt_ru(sa),
        libdevice.sqrt_rd(sa),
        libdevice.rcp_rn(a),
        libdevice.rcp_rz(a),
        libdevice.rcp_ru(a),
        libdevice.rcp_rd(a),
    )
    for j in tl.static_range(len(outs)):
        tl.store(o + j * N + r, outs[j].to(tl.float64))


ROUNDED = [  # name, exact rational of (a, b, c)
    *((f"div_{m}", m, lambda a, b, c: a / b) for m in ("rn", "rz", "ru", "rd")),
    ("mul_rz", "rz", lambda a, b, c: a * b),
    ("mul_ru", "ru", lambda a, b, c: a * b),
    ("add_rd", "rd", lambda a, b, c: a + b),
    ("sub_ru", "ru", lambda a, b, c: a - b),
    *((f"fma_{m}", m, lambda a, b, c: a * b + c) for m in ("rn", "rz", "ru", "rd")),
    *((f"sqrt_{m}", m, None) for m in ("rn", "rz", "ru", "rd")),
    *((f"rcp_{m}", m, lambda a, b, c: 1 / a) for m in ("rn", "rz", "ru", "rd")),
]


@probe("libdevice IEEE ops in each rounding mode (div/mul/add/sub/fma/sqrt/rcp _rn/_rz/_ru/_rd), fp32/fp64, exact")
def probe_libdevice_rounding():
    res = {}
    n = 64
    for dtype in (np.float32, np.float64):
        g = rng(n)
        x, y = (g.standard_normal(n) * 10.0 ** g.integers(-3, 4, n)).astype(dtype), g.standard_normal(n).astype(dtype)
        z = (-(x.astype(np.float64) * y)).astype(dtype)  # cancellation: the fma's one rounding shows
        z[::2] = g.standard_normal(n // 2).astype(dtype)
        o = empty(len(ROUNDED) * n, torch.float64)
        k_libdevice_rounding[(1,)](dev(x), dev(y), dev(z), o, n)
        got = host(o).reshape(len(ROUNDED), n)
        bad = []
        if not INTERPRET:
            for j, (name, mode, fn) in enumerate(ROUNDED):
                want = []
                for a, b, c in zip(x.tolist(), y.tolist(), z.tolist()):
                    if fn is None:
                        want.append(_sqrt_exact(abs(a), dtype, mode))
                    else:
                        want.append(_round_exact(fn(Fraction(a), Fraction(b), Fraction(c)), dtype, mode))
                bad += _ulp_problems(name, got[j], np.array(want), dtype, 0)
        res[np.dtype(dtype).name] = (got, None, None)
        res[np.dtype(dtype).name + " exact"] = (np.array(bad[:4] or ["ok"]), np.array(["ok"]), 0)
    return res


@triton.jit
def k_libdevice_int(a, b, c, a64, b64, o, o64, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(a + r)
    y = tl.load(b + r)
    z = tl.load(c + r)
    x64 = tl.load(a64 + r)
    y64 = tl.load(b64 + r)
    outs = (
        libdevice.popc(x),
        libdevice.clz(x),
        libdevice.brev(x),
        libdevice.ffs(x),
        libdevice.mulhi(x, y),
        libdevice.mulhi(x.to(tl.uint32, bitcast=True), y.to(tl.uint32, bitcast=True)).to(tl.int32, bitcast=True),
        libdevice.hadd(x, y),
        libdevice.rhadd(x, y),
        libdevice.sad(x, y, z.to(tl.uint32, bitcast=True)).to(tl.int32, bitcast=True),
        libdevice.mul24(x, y),
        libdevice.popc(x64),
        libdevice.clz(x64),
        libdevice.ffs(x64),
    )
    for j in tl.static_range(len(outs)):
        tl.store(o + j * N + r, outs[j])
    outs64 = (libdevice.brev(x64), libdevice.mulhi(x64, y64))
    for j in tl.static_range(len(outs64)):
        tl.store(o64 + j * N + r, outs64[j])


def _s(v, bits):
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


@probe(
    "libdevice integer functions: popc clz brev ffs mulhi umulhi hadd rhadd sad mul24 (i32), popc clz ffs brev mulhi"
)
def probe_libdevice_int():
    n = 64
    g = rng(5)
    x = g.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    y = g.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    z = g.integers(0, 2**16, n).astype(np.int32)
    x[:6] = [0, -1, 1, -(2**31), 2**31 - 1, 1 << 20]
    y[:6] = [0, -1, -1, -(2**31), 2**31 - 1, 3]
    x64 = g.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)
    y64 = g.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)
    x64[:4] = [0, -1, -(2**63), 1 << 40]
    o, o64 = empty(13 * n, torch.int32), empty(2 * n, torch.int64)
    k_libdevice_int[(1,)](dev(x), dev(y), dev(z), dev(x64), dev(y64), o, o64, n)
    xs, ys, zs = x.tolist(), y.tolist(), z.tolist()
    u = [v & 0xFFFFFFFF for v in xs]
    uy = [v & 0xFFFFFFFF for v in ys]
    u64 = [v & (2**64 - 1) for v in x64.tolist()]

    def low24(v):
        return _s(v, 24)

    want = [
        [bin(v).count("1") for v in u],
        [32 - v.bit_length() for v in u],
        [_s(int(f"{v:032b}"[::-1], 2), 32) for v in u],
        [(v & -v).bit_length() for v in u],
        [_s((a * b) >> 32, 32) for a, b in zip(xs, ys)],
        [_s((a * b) >> 32, 32) for a, b in zip(u, uy)],
        [(a + b) >> 1 for a, b in zip(xs, ys)],
        [(a + b + 1) >> 1 for a, b in zip(xs, ys)],
        [_s(abs(a - b) + c, 32) for a, b, c in zip(xs, ys, zs)],
        [_s(low24(a) * low24(b), 32) for a, b in zip(xs, ys)],
        [bin(v).count("1") for v in u64],
        [64 - v.bit_length() for v in u64],
        [(v & -v).bit_length() for v in u64],
    ]
    want64 = [
        [_s(int(f"{v:064b}"[::-1], 2), 64) for v in u64],
        [_s((a * b) >> 64, 64) for a, b in zip(x64.tolist(), y64.tolist())],
    ]
    return {
        "int32": (host(o).reshape(13, n), np.array(want, np.int64).astype(np.int32), 0),
        "int64": (host(o64).reshape(2, n), np.array(want64, np.int64), 0),
    }


@triton.jit
def k_libdevice_fast(x, y, o, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(x + r)
    b = tl.load(y + r)
    outs = (
        libdevice.fast_expf(a),
        libdevice.fast_exp10f(a),
        libdevice.fast_logf(a),
        libdevice.fast_log2f(a),
        libdevice.fast_log10f(a),
        libdevice.fast_sinf(a),
        libdevice.fast_cosf(a),
        libdevice.fast_tanf(a),
        libdevice.fast_tanhf(a),
        libdevice.fast_powf(a, b),
        libdevice.fast_dividef(a, b),
        libdevice.saturatef(a),
    )
    for j in tl.static_range(len(outs)):
        tl.store(o + j * N + r, outs[j])


FAST = [  # name, reference, ulp bound, absolute tolerance (CUDA's intrinsics: __expf 2 + 1.173|x| ulp, __sinf 2^-21.4)
    ("fast_expf", lambda a, b: np.exp(a), 2, 0),
    ("fast_exp10f", lambda a, b: 10.0**a, 2, 0),
    ("fast_logf", lambda a, b: np.log(a), 3, 2**-21.41),
    ("fast_log2f", lambda a, b: np.log2(a), 3, 2**-22),
    ("fast_log10f", lambda a, b: np.log10(a), 3, 2**-21.41),
    ("fast_sinf", lambda a, b: np.sin(a), 3, 2**-21.41),
    ("fast_cosf", lambda a, b: np.cos(a), 3, 2**-21.41),
    ("fast_tanf", lambda a, b: np.tan(a), 4, 2**-21),
    ("fast_tanhf", lambda a, b: np.tanh(a), 2, 2**-21),
    ("fast_powf", lambda a, b: np.power(a, b), 8, 0),
    ("fast_dividef", lambda a, b: a / b, 2, 0),
    ("saturatef", lambda a, b: np.where(np.isnan(a), 0.0, np.clip(a, 0.0, 1.0) + 0.0), 0, 0),  # [+0, 1]: -0 -> +0
]


@probe("libdevice fast_* fp32 intrinsics (exp exp10 log log2 log10 sin cos tan tanh pow dividef) and saturatef")
def probe_libdevice_fast():
    x = _edges(np.float32)
    y = np.roll(x, 5)
    o = empty(len(FAST) * x.size, torch.float32)
    k_libdevice_fast[(1,)](dev(x), dev(y), o, x.size)
    got = host(o).reshape(len(FAST), x.size)
    bad = []
    if not INTERPRET:
        a, b = x.astype(np.float64), y.astype(np.float64)
        with np.errstate(all="ignore"):
            for j, (name, ref, bound, atol) in enumerate(FAST):
                bad += _ulp_problems(name, got[j], ref(a, b), np.float32, bound, atol)
    return {"fp32": (got, None, None), "ulp": (np.array(bad[:4] or ["ok"]), np.array(["ok"]), 0)}


@triton.jit
def k_libdevice_convert(f, d, i, ll, o_i, o_ll, o_f, o_d, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(f + r)
    y = tl.load(d + r)
    a = tl.load(i + r)
    b = tl.load(ll + r)
    ints = (
        libdevice.float2int_rn(x),
        libdevice.float2int_rz(x),
        libdevice.float2int_ru(x),
        libdevice.float2int_rd(x),
        libdevice.float2uint_rn(x).to(tl.int32, bitcast=True),
        libdevice.double2int_rd(y),
        libdevice.float_as_int(x),
        libdevice.double2hiint(y),
        libdevice.double2loint(y),
    )
    for j in tl.static_range(len(ints)):
        tl.store(o_i + j * N + r, ints[j])
    lls = (libdevice.float2ll_ru(x), libdevice.double2ll_rz(y), libdevice.llrint(y), libdevice.llround(y))
    for j in tl.static_range(len(lls)):
        tl.store(o_ll + j * N + r, lls[j])
    fs = (
        libdevice.double2float_rn(y),
        libdevice.double2float_rz(y),
        libdevice.double2float_ru(y),
        libdevice.double2float_rd(y),
        libdevice.int2float_rz(a),
        libdevice.int2float_ru(a),
        libdevice.ll2float_rd(b),
        libdevice.int_as_float(a),
    )
    for j in tl.static_range(len(fs)):
        tl.store(o_f + j * N + r, fs[j])
    ds = (libdevice.ll2double_ru(b), libdevice.ll2double_rz(b), libdevice.hiloint2double(a, a + 1))
    for j in tl.static_range(len(ds)):
        tl.store(o_d + j * N + r, ds[j])


def _to_int_mode(v, mode, bits=32, signed=True):
    lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    if np.isnan(v):
        return 0
    if np.isinf(v):
        return hi if v > 0 else lo
    q = Fraction(float(v))
    n = {"rn": round(q), "rz": math.trunc(q), "ru": math.ceil(q), "rd": math.floor(q)}[mode]
    return min(max(n, lo), hi)


@probe(
    "libdevice conversions in each rounding mode (float/double -> int/uint/ll, double -> float, int/ll -> float/"
    "double), saturation, NaN -> 0, bit casts (float_as_int, double2hiint/loint, hiloint2double), llrint/llround"
)
def probe_libdevice_convert():
    n = 64
    g = rng(9)
    x = (g.standard_normal(n) * 10.0 ** g.integers(0, 12, n)).astype(np.float32)
    x[:10] = [0.5, 1.5, 2.5, -0.5, -2.5, np.nan, np.inf, -np.inf, 3e9, -3e9]
    y = g.standard_normal(n) * 10.0 ** g.integers(-40, 20, n)
    y[:10] = [0.5, 1.5, -2.5, np.nan, np.inf, -1e300, 1e39, -1e-46, 2.0**63, 4.5]
    a = g.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    b = g.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)
    o_i, o_ll = empty(9 * n, torch.int32), empty(4 * n, torch.int64)
    o_f, o_d = empty(8 * n, torch.float32), empty(3 * n, torch.float64)
    k_libdevice_convert[(1,)](dev(x), dev(y), dev(a), dev(b), o_i, o_ll, o_f, o_d, n)
    xs, ys, as_, bs = x.tolist(), y.tolist(), a.tolist(), b.tolist()
    yb = y.view(np.int64)
    want_i = [
        *([_to_int_mode(v, m) for v in xs] for m in ("rn", "rz", "ru", "rd")),
        [_s(_to_int_mode(v, "rn", 32, False), 32) for v in xs],
        [_to_int_mode(v, "rd") for v in ys],
        x.view(np.int32).tolist(),
        (yb >> 32).astype(np.int32).tolist(),
        (yb & 0xFFFFFFFF).astype(np.uint32).view(np.int32).tolist(),
    ]
    want_ll = [
        [_to_int_mode(v, "ru", 64) for v in xs],
        [_to_int_mode(v, "rz", 64) for v in ys],
        [_to_int_mode(v, "rn", 64) for v in ys],
        [_to_int_mode(float(_round_half_away(np.array([v]))[0]) if np.isfinite(v) else v, "rz", 64) for v in ys],
    ]

    def rounded(q, t, mode):
        if isinstance(q, float) and not np.isfinite(q):
            return q
        if abs(q) >= Fraction(float(np.finfo(t).max)) * 2:  # far past the largest: inf or max by the mode
            big = float(np.finfo(t).max)
            return {"rn": math.copysign(math.inf, q), "rz": math.copysign(big, q)}.get(
                mode, (math.inf if q > 0 else -big) if mode == "ru" else (big if q > 0 else -math.inf)
            )
        return _round_exact(q, t, mode) if q != 0 else float(q)

    want_f = [
        *([rounded(Fraction(v) if np.isfinite(v) else v, np.float32, m) for v in ys] for m in ("rn", "rz", "ru", "rd")),
        [rounded(Fraction(v), np.float32, "rz") for v in as_],
        [rounded(Fraction(v), np.float32, "ru") for v in as_],
        [rounded(Fraction(v), np.float32, "rd") for v in bs],
        a.view(np.float32).astype(np.float64).tolist(),
    ]
    hilo = ((a.astype(np.int64) << 32) | ((a.astype(np.int64) + 1) & 0xFFFFFFFF)).view(np.float64)
    want_d = [
        [rounded(Fraction(v), np.float64, "ru") for v in bs],
        [rounded(Fraction(v), np.float64, "rz") for v in bs],
        hilo.tolist(),
    ]
    bad = []
    for name, got, want in (
        ("to f32", host(o_f).reshape(8, n), want_f),
        ("to f64", host(o_d).reshape(3, n), want_d),
    ):
        for j in range(len(want)):
            bad += _ulp_problems(f"{name}[{j}]", got[j], np.array(want[j], np.float64), np.float64, 0)
    return {
        "to int32": (host(o_i).reshape(9, n), np.array(want_i, np.int64).astype(np.int32), 0),
        "to int64": (host(o_ll).reshape(4, n), np.array(want_ll, np.int64), 0),
        "to float": (np.array(bad[:4] or ["ok"]), np.array(["ok"]), 0),
    }


@triton.jit
def k_libdevice_mixed(x, s, o, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(x + r)
    p = tl.load(s)  # a scalar operand
    outs = (
        libdevice.pow(a, 3.0),
        libdevice.pow(a, p),
        libdevice.fmod(a, 2.0),
        libdevice.ldexp(a, 3),
        libdevice.atan2(p, a),
        libdevice.exp(p) + a,
        libdevice.erf(a * 0.5) * tl.where(a > 0, 1.0, 2.0),
        libdevice.tanh(a).to(tl.float16).to(tl.float32),
    )
    m = r < N - 3  # a masked store of a libdevice value
    for j in tl.static_range(len(outs)):
        tl.store(o + j * N + r, outs[j], mask=m)


@probe(
    "libdevice with Python-literal and scalar operands (pow(x, 3.0), fmod(x, 2.0), ldexp(x, 3), atan2(s, x)), masked"
)
def probe_libdevice_mixed():
    n = 32
    x = _edges(np.float32)[32:]  # the random values
    x[:4] = [0.0, -2.5, np.inf, np.nan]
    s = np.array([1.5], np.float32)
    o = empty(8 * n, torch.float32)
    k_libdevice_mixed[(1,)](dev(x), dev(s), o, n)
    got = host(o).reshape(8, n)
    a = x.astype(np.float64)
    with np.errstate(all="ignore"):
        want = [
            a**3,
            np.power(a, 1.5),
            np.fmod(a, 2.0),
            np.ldexp(a, 3),
            np.arctan2(1.5, a),
            np.float32(np.exp(np.float64(1.5))).astype(np.float64) + a,
            scipy.special.erf(a * 0.5) * np.where(a > 0, 1.0, 2.0),
            np.tanh(a).astype(np.float16).astype(np.float64),
        ]
    bad = []
    for j, (w, bound) in enumerate(zip(want, (4, 4, 0, 0, 3, 1, 3, 1))):
        bad += _ulp_problems(f"out[{j}]", got[j, : n - 3], np.asarray(w)[: n - 3], np.float32, bound)
    if (got[:, n - 3 :] != 0).any():
        bad.append("a masked-off lane was stored")
    return {"fp32": (got, None, None), "ulp": (np.array(bad[:4] or ["ok"]), np.array(["ok"]), 0)}


# ---- tl.dot options (session 28) ----------------------------------------------------------------------------------
@triton.jit
def k_dot_precision(a, b, o, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, PREC: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    rk = tl.arange(0, K)
    x = tl.load(a + rm * K + rk[None, :])
    y = tl.load(b + rk[:, None] * N + rn)
    tl.store(o + rm * N + rn, tl.dot(x, y, input_precision=PREC))


def _tf32(v):
    """fp32 -> tf32, round to nearest even on the 13 dropped bits (plate's rule; CUDA's cvt.rna ties away)."""
    u = v.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0xFFF + ((u >> 13) & 1)) & 0xFFFFE000
    return u.astype(np.uint32).view(np.float32)


@probe("tl.dot fp32 input_precision ieee / tf32 / tf32x3 against fp64 products of the (tf32-rounded) inputs")
def probe_dot_input_precision():
    m, n, k = 16, 16, 32
    g = rng()
    x = g.standard_normal((m, k)).astype(np.float32)
    y = g.standard_normal((k, n)).astype(np.float32)
    res = {}
    exact = x.astype(np.float64) @ y.astype(np.float64)
    for prec, want, tol in (
        ("ieee", exact, 1e-6),
        ("tf32", _tf32(x).astype(np.float64) @ _tf32(y).astype(np.float64), 1e-5),
        ("tf32x3", exact, 1e-5),
    ):
        o = empty((m, n), torch.float32)
        k_dot_precision[(1,)](dev(x), dev(y), o, m, n, k, prec)
        got = host(o)
        res[prec] = (got, want.astype(np.float32), tol)
        if prec == "tf32":  # tf32's error is visible: the plain fp32 product is farther than 1e-5 somewhere
            res["tf32 not ieee"] = (
                np.array([mismatch(got, exact.astype(np.float32), 1e-6) is not None]),
                np.array([True]),
                0,
            )
    return res


@triton.jit
def k_dot_acc(a, b, c, o, oh, oi, ai, bi, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    rk = tl.arange(0, K)
    x = tl.load(a + rm * K + rk[None, :])  # fp16
    y = tl.load(b + rk[:, None] * N + rn)
    acc = tl.load(c + rm * N + rn)  # fp32
    acc = tl.dot(x, y, acc=acc)  # acc= keyword: acc + x @ y
    acc = tl.dot(x, y, acc)  # positional
    tl.store(o + rm * N + rn, acc)
    tl.store(oh + rm * N + rn, tl.dot(x, y, out_dtype=tl.float16))
    xi = tl.load(ai + rm * K + rk[None, :])  # int8
    yi = tl.load(bi + rk[:, None] * N + rn)
    acc_i = tl.full((M, N), 1000, tl.int32)
    for _ in range(3):
        acc_i = tl.dot(xi, yi, acc_i, out_dtype=tl.int32)
    tl.store(oi + rm * N + rn, acc_i)


@probe("tl.dot acc= (keyword and positional) fp16 -> fp32, out_dtype=fp16, an int8 -> int32 accumulator in a loop")
def probe_dot_acc():
    m, n, k = 16, 16, 32
    g = rng()
    x = (g.integers(-8, 8, (m, k)) / 4).astype(np.float16)  # products and sums exact in fp32 and fp16
    y = (g.integers(-8, 8, (k, n)) / 4).astype(np.float16)
    c = g.standard_normal((m, n)).astype(np.float32)
    xi = g.integers(-128, 128, (m, k)).astype(np.int8)
    yi = g.integers(-128, 128, (k, n)).astype(np.int8)
    o, oh, oi = empty((m, n), torch.float32), empty((m, n), torch.float16), empty((m, n), torch.int32)
    k_dot_acc[(1,)](dev(x), dev(y), dev(c), o, oh, oi, dev(xi), dev(yi), m, n, k)
    p = x.astype(np.float64) @ y.astype(np.float64)
    pi = xi.astype(np.int64) @ yi.astype(np.int64)
    return {
        "acc": (host(o), ((c + p.astype(np.float32)) + p.astype(np.float32)).astype(np.float32), 0),
        "fp16 out": (host(oh), p.astype(np.float16), 0),
        "int8 acc": (host(oi), (1000 + 3 * pi).astype(np.int32), 0),
    }


@triton.jit
def k_dot_batched(a, b, c, o, d, e, od, B: tl.constexpr, M: tl.constexpr, K: tl.constexpr, N: tl.constexpr):
    rb = tl.arange(0, B)[:, None, None]
    rm = tl.arange(0, M)[None, :, None]
    rk = tl.arange(0, K)
    rn = tl.arange(0, N)[None, None, :]
    x = tl.load(a + rb * M * K + rm * K + rk[None, None, :])
    y = tl.load(b + rb * K * N + rk[None, :, None] * N + rn)
    acc = tl.load(c + rb * M * N + rm * N + rn)
    acc = tl.dot(x, y, acc, input_precision="tf32")  # 3-D fp32 tf32 with an accumulator
    acc = tl.dot(x.to(tl.float16), y.to(tl.float16), acc=acc)  # then fp16 into the same accumulator
    tl.store(o + rb * M * N + rm * N + rn, acc)
    r2 = tl.arange(0, M)[:, None]
    xd = tl.load(d + r2 * K + rk[None, :])  # fp64 2-D dot
    yd = tl.load(e + rk[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(od + r2 * N + tl.arange(0, N)[None, :], tl.dot(xd, yd))


@probe("3-D batched tl.dot fp32 tf32 with acc, then fp16 into the same accumulator; fp64 tl.dot")
def probe_dot_batched_acc():
    bt, m, k, n = 2, 16, 16, 16
    g = rng()
    x = (g.integers(-64, 64, (bt, m, k)) / 16).astype(np.float32)  # exact in tf32 and fp16: exact products
    y = (g.integers(-64, 64, (bt, k, n)) / 16).astype(np.float32)
    c = (g.integers(-64, 64, (bt, m, n)) / 16).astype(np.float32)
    xd, yd = g.standard_normal((m, k)), g.standard_normal((k, n))
    o, od = empty((bt, m, n), torch.float32), empty((m, n), torch.float64)
    k_dot_batched[(1,)](dev(x), dev(y), dev(c), o, dev(xd), dev(yd), od, bt, m, k, n)
    p = np.einsum("bmk,bkn->bmn", x.astype(np.float64), y.astype(np.float64))
    return {"batched": (host(o), (c + 2 * p).astype(np.float32), 0), "fp64": (host(od), xd @ yd, 1e-14)}


@triton.jit
def k_dot_fp8(a, b, o, o2, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, E5: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    rk = tl.arange(0, K)
    xb = tl.load(a + rm * K + rk[None, :])
    yb = tl.load(b + rk[:, None] * N + rn)
    if E5:
        x = xb.to(tl.float8e5, bitcast=True)
        y = yb.to(tl.float8e5, bitcast=True)
    else:
        x = xb.to(tl.float8e4nv, bitcast=True)
        y = yb.to(tl.float8e4nv, bitcast=True)
    tl.store(o + rm * N + rn, tl.dot(x, y))
    tl.store(o2 + rm * N + rn, tl.dot(x, y, max_num_imprecise_acc=32))


@probe("tl.dot of fp8 e4m3 (float8e4nv) and e5m2 inputs -> fp32, also with max_num_imprecise_acc=32")
def probe_dot_fp8():
    m, n, k = 16, 16, 64
    g = rng()
    res = {}
    for name, e5, tt in (("e4m3", False, torch.float8_e4m3fn), ("e5m2", True, torch.float8_e5m2)):
        xf = torch.from_numpy(g.standard_normal((m, k)).astype(np.float32)).to(tt)
        yf = torch.from_numpy(g.standard_normal((k, n)).astype(np.float32)).to(tt)
        xb, yb = xf.view(torch.uint8).numpy(), yf.view(torch.uint8).numpy()
        o, o2 = empty((m, n), torch.float32), empty((m, n), torch.float32)
        k_dot_fp8[(1,)](dev(xb), dev(yb), o, o2, m, n, k, e5)
        want = (xf.double().numpy() @ yf.double().numpy()).astype(np.float32)
        res[name] = (host(o), want, 1e-5)
        res[name + " imprecise"] = (host(o2), want, 1e-5)
    return res


@triton.jit
def k_dot_scaled(a, b, sa, sb, o, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    rk = tl.arange(0, K)
    x = tl.load(a + rm * K + rk[None, :])
    y = tl.load(b + rk[:, None] * N + rn)
    xs = tl.load(sa + rm * (K // 32) + tl.arange(0, K // 32)[None, :])
    ys = tl.load(sb + tl.arange(0, N)[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    tl.store(o + rm * N + rn, tl.dot_scaled(x, xs, "e4m3", y, ys, "e4m3"))


@probe("tl.dot_scaled e4m3 x e4m3 with e8m0 block scales (32 elements a scale) -> fp32")
def probe_dot_scaled():
    m, n, k = 16, 16, 64
    g = rng()
    xf = torch.from_numpy(g.standard_normal((m, k)).astype(np.float32)).to(torch.float8_e4m3fn)
    yf = torch.from_numpy(g.standard_normal((k, n)).astype(np.float32)).to(torch.float8_e4m3fn)
    sa = g.integers(124, 131, (m, k // 32)).astype(np.uint8)  # e8m0: 2^(s - 127)
    sb = g.integers(124, 131, (n, k // 32)).astype(np.uint8)
    o = empty((m, n), torch.float32)
    k_dot_scaled[(1,)](
        dev(xf.view(torch.uint8).numpy()), dev(yf.view(torch.uint8).numpy()), dev(sa), dev(sb), o, m, n, k
    )
    xa = xf.double().numpy() * np.repeat(2.0 ** (sa.astype(np.float64) - 127), 32, 1)
    ya = yf.double().numpy() * np.repeat(2.0 ** (sb.astype(np.float64) - 127), 32, 1).T
    return {"out": (host(o), (xa @ ya).astype(np.float32), 1e-5)}


@triton.jit
def k_dot_scaled_fp4(a, sa, b, o, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    x = tl.load(a + rm * (K // 2) + tl.arange(0, K // 2)[None, :])  # two e2m1 a byte, the first in the low bits
    xs = tl.load(sa + rm * (K // 32) + tl.arange(0, K // 32)[None, :])
    y = tl.load(b + tl.arange(0, K)[:, None] * N + rn)  # bf16, no scale
    acc = tl.full((M, N), 1.0, tl.float32)
    tl.store(o + rm * N + rn, tl.dot_scaled(x, xs, "e2m1", y, None, "bf16", acc=acc))


E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])


@probe("tl.dot_scaled e2m1 (packed fp4, e8m0 scales) x bf16 (no scale) with acc=")
def probe_dot_scaled_fp4():
    m, n, k = 16, 16, 64
    g = rng()
    codes = g.integers(0, 16, (m, k)).astype(np.uint8)
    packed = (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8)
    sa = g.integers(124, 131, (m, k // 32)).astype(np.uint8)
    y = torch.from_numpy(g.standard_normal((k, n)).astype(np.float32)).to(torch.bfloat16)
    o = empty((m, n), torch.float32)
    k_dot_scaled_fp4[(1,)](dev(packed), dev(sa), y.to(DEVICE), o, m, n, k)
    xa = E2M1[codes] * np.repeat(2.0 ** (sa.astype(np.float64) - 127), 32, 1)
    return {"out": (host(o), (1.0 + xa @ y.double().numpy()).astype(np.float32), 1e-5)}


# ---- loop and memory hints (session 28) ---------------------------------------------------------------------------
@triton.jit
def k_range_hints(x, w, o, n, ROWS: tl.constexpr, BLOCK: tl.constexpr, K: tl.constexpr):
    tl.assume(n > 0)
    tl.assume(n % BLOCK == 0)
    r = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in tl.range(0, n, BLOCK, num_stages=3, loop_unroll_factor=2, disallow_acc_multi_buffer=True):
        offs = tl.max_contiguous(tl.multiple_of(i + r, BLOCK), BLOCK)
        acc += tl.load(x + offs, cache_modifier=".cg", eviction_policy="evict_last")
    tl.store(o + r, acc, cache_modifier=".cs", eviction_policy="evict_first")
    total = tl.zeros((BLOCK,), tl.float32)
    for a in tl.range(0, ROWS, flatten=True):  # nested loops flattened into one
        for b in tl.range(0, 2, num_stages=2):
            offs = (a * 2 + b) * BLOCK + r
            total += tl.load(x + offs, volatile=True) * (b + 1)
    tl.store(o + BLOCK + r, total, cache_modifier=".wt")
    c = tl.zeros((16, 16), tl.float32)
    ra = tl.arange(0, 16)
    for kk in tl.range(0, K, 16, warp_specialize=False, disable_licm=True):
        xa = tl.load(x + ra[:, None] * K + kk + ra[None, :])
        wb = tl.load(w + (kk + ra[:, None]) * 16 + ra[None, :], cache_modifier=".ca")
        c = tl.dot(xa, wb, c)
    tl.store(o + 2 * BLOCK + ra[:, None] * 16 + ra[None, :], c)
    s = tl.zeros((BLOCK,), tl.float32)
    for j in tl.static_range(4):
        s += tl.load(x + j * BLOCK + tl.max_constancy(r // BLOCK * 0, BLOCK) + r) * j
    tl.store(o + 2 * BLOCK + 256 + r, s)


@probe(
    "tl.range num_stages/loop_unroll_factor/disallow_acc_multi_buffer/flatten/warp_specialize/disable_licm, "
    "static_range, assume, multiple_of/max_contiguous/max_constancy, cache_modifier/eviction_policy/volatile"
)
def probe_range_hints():
    block, rows, k = 32, 3, 64
    n = 8 * block
    g = rng()
    x = (g.integers(-8, 8, 16 * k) / 8).astype(np.float32)  # exact sums
    w = (g.integers(-8, 8, (k, 16)) / 8).astype(np.float32)
    o = empty(2 * block + 256 + block, torch.float32)
    k_range_hints[(1,)](dev(x), dev(w), o, n, rows, block, k)
    got = host(o)
    xs = x.astype(np.float64)
    want_sum = xs[:n].reshape(-1, block).sum(0)
    want_nested = sum(xs[(a * 2 + b) * block :][:block] * (b + 1) for a in range(rows) for b in range(2))
    xa = xs[: 16 * k].reshape(16, k)
    want_dot = np.zeros((16, 16))
    for kk in range(0, k, 16):
        want_dot += xa[np.arange(16)[:, None], kk + np.arange(16)[None, :]] @ w[kk : kk + 16].astype(np.float64)
    want_static = sum(xs[j * block :][:block] * j for j in range(4))
    return {
        "tl.range sum": (got[:block], want_sum.astype(np.float32), 0),
        "flatten nested": (got[block : 2 * block], want_nested.astype(np.float32), 0),
        "dot loop": (got[2 * block : 2 * block + 256].reshape(16, 16), want_dot.astype(np.float32), 1e-6),
        "static_range": (got[2 * block + 256 :], want_static.astype(np.float32), 0),
    }


# ---- session 37 (probe37): division by zero, non-commutative scans, fp8 casts, offsets, errors --------------------
@triton.jit
def k_div_zero_vector(a, b, o, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(a + r)
    y = tl.load(b + r)
    tl.store(o + r, x // y)
    tl.store(o + N + r, x % y)


@triton.jit
def k_div_zero_scalar(a, b, o):
    i = tl.program_id(0)
    x = tl.load(a + i)
    y = tl.load(b + i)
    tl.store(o + i, x // y)
    tl.store(o + tl.num_programs(0) + i, x % y)


def ptx_div(x, y, dt):
    """PTX div/rem as semantics.NOTES defines them: x / 0 all ones, x % 0 = x, INT_MIN / -1 wraps."""
    info = np.iinfo(dt)
    q, m = [], []
    for a, b in zip(x.tolist(), y.tolist()):
        if b == 0:
            q.append(-1 if info.min < 0 else info.max)
            m.append(a)
        else:
            qi = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
            q.append(qi)
            m.append(a - qi * b)
    wrap = lambda v: np.array([(int(t) - info.min) % (1 << info.bits) + info.min for t in v], object)  # noqa: E731
    return np.stack([wrap(q), wrap(m)]).astype(dt)


@probe("integer // and % by zero (PTX: all ones, x) and INT_MIN // -1, tensor and scalar paths, 6 types")
def probe_div_by_zero():
    n = 16
    res = {}
    for dt in (np.int8, np.int16, np.int32, np.int64, np.uint32, np.uint64):
        info = np.iinfo(dt)
        g = rng(37)
        x = g.integers(info.min, info.max, n, dtype=dt, endpoint=True)
        x[:6] = [info.min, info.max, 0, 1, info.min, 7]
        y = g.integers(-5 if info.min < 0 else 0, 6, n).astype(dt)
        y[:6] = [0, 0, 0, 0, -1 if info.min < 0 else 0, 0]
        want = ptx_div(x, y, dt)
        tdt = getattr(torch, np.dtype(dt).name)
        ov, os_ = empty(2 * n, tdt), empty(2 * n, tdt)
        k_div_zero_vector[(1,)](dev(x), dev(y), ov, n)
        k_div_zero_scalar[(n,)](dev(x), dev(y), os_)
        name = np.dtype(dt).name
        res[name + " tensor"] = (host(ov).reshape(2, n), want, 0)
        res[name + " scalar"] = (host(os_).reshape(2, n), want, 0)
    return res


@triton.jit
def _affine(a1, b1, a2, b2):
    # x -> a1 x + b1, then a2 x + b2: associative, not commutative
    return a1 * a2, b1 * a2 + b2


@triton.jit
def k_affine_scan(a, b, oa, ob, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    A = tl.load(a + rm * N + rn)
    B = tl.load(b + rm * N + rn)
    i = 0
    for axis in tl.static_range(2):
        for rev in tl.static_range(2):
            sa, sb = tl.associative_scan((A, B), axis, _affine, reverse=rev == 1)
            tl.store(oa + i * M * N + rm * N + rn, sa)
            tl.store(ob + i * M * N + rm * N + rn, sb)
            i += 1
    ra, rb = tl.reduce((A, B), 1, _affine)
    tl.store(oa + 4 * M * N + tl.arange(0, M), ra)
    tl.store(ob + 4 * M * N + tl.arange(0, M), rb)
    ca, cb = tl.reduce((A, B), 0, _affine, keep_dims=True)
    tl.store(oa + 4 * M * N + M + rn, ca)
    tl.store(ob + 4 * M * N + M + rn, cb)
    ta, tb = tl.reduce((tl.trans(A), tl.trans(B)), None, _affine)  # all axes, column-major order
    tl.store(oa + 4 * M * N + M + N, ta)
    tl.store(ob + 4 * M * N + M + N, tb)


def affine_fold(pairs_a, pairs_b, dt):
    """Left fold of the affine maps (wrapping in dt), every prefix."""
    bits = np.iinfo(dt).bits
    mask = (1 << bits) - 1
    ca, cb, out = 1, 0, []
    for a, b in zip(pairs_a, pairs_b):
        ca, cb = (ca * int(a)) & mask, (cb * int(a) + int(b)) & mask
        out.append((ca, cb))
    return np.array(out, dtype=np.uint64).astype(np.dtype(dt).str.replace("i", "u")).view(dt)


@probe("non-commutative tuple combine (affine maps, wrapping int32): scans on both axes, reverse, reduce axis 0/1/None")
def probe_affine_scan():
    m, n = 8, 16
    dt = np.int32
    g = rng(37)
    a = g.integers(-(2**31), 2**31, (m, n), dtype=np.int64).astype(dt)
    b = g.integers(-(2**31), 2**31, (m, n), dtype=np.int64).astype(dt)
    oa, ob = empty(4 * m * n + m + n + 1, torch.int32), empty(4 * m * n + m + n + 1, torch.int32)
    k_affine_scan[(1,)](dev(a), dev(b), oa, ob, m, n)
    scans = []
    for axis in (0, 1):
        for rev in (False, True):
            A, B = (a, b) if axis == 1 else (a.T, b.T)
            rows = []
            for ra, rb in zip(A, B):
                if rev:
                    rows.append(affine_fold(ra[::-1], rb[::-1], dt)[::-1])
                else:
                    rows.append(affine_fold(ra, rb, dt))
            s = np.stack(rows)  # [rows, len, 2]
            scans.append(s if axis == 1 else s.transpose(1, 0, 2))
    red1 = np.stack([affine_fold(ra, rb, dt)[-1] for ra, rb in zip(a, b)])
    red0 = np.stack([affine_fold(ca, cb, dt)[-1] for ca, cb in zip(a.T, b.T)])
    whole = affine_fold(a.T.ravel(), b.T.ravel(), dt)[-1]
    wa = np.concatenate([s[..., 0].ravel() for s in scans] + [red1[:, 0], red0[:, 0], whole[:1]])
    wb = np.concatenate([s[..., 1].ravel() for s in scans] + [red1[:, 1], red0[:, 1], whole[1:]])
    return {"a": (host(oa), wa, 0), "b": (host(ob), wb, 0)}


@triton.jit
def k_fp8_casts(x, o4, o5, o4z, o5z, h4, b5, u, N: tl.constexpr):
    r = tl.arange(0, N)
    v = tl.load(x + r)
    tl.store(o4 + r, v.to(tl.float8e4nv).to(tl.uint8, bitcast=True))
    tl.store(o5 + r, v.to(tl.float8e5).to(tl.uint8, bitcast=True))
    tl.store(o4z + r, v.to(tl.float8e4nv, fp_downcast_rounding="rtz").to(tl.uint8, bitcast=True))
    tl.store(o5z + r, v.to(tl.float8e5, fp_downcast_rounding="rtz").to(tl.uint8, bitcast=True))
    tl.store(h4 + r, v.to(tl.float16).to(tl.float8e4nv).to(tl.uint8, bitcast=True))
    tl.store(b5 + r, v.to(tl.bfloat16).to(tl.float8e5).to(tl.uint8, bitcast=True))
    c = tl.arange(0, 256).to(tl.uint8)  # every code, up to fp32 and fp16 and back
    e4 = c.to(tl.float8e4nv, bitcast=True)
    e5 = c.to(tl.float8e5, bitcast=True)
    tl.store(u + tl.arange(0, 256), e4.to(tl.float32))
    tl.store(u + 256 + tl.arange(0, 256), e5.to(tl.float32))
    tl.store(u + 512 + tl.arange(0, 256), e4.to(tl.float16).to(tl.float32))
    tl.store(u + 768 + tl.arange(0, 256), e5.to(tl.bfloat16).to(tl.float32))


def fp8_reference(x, fmt, mode):
    """float64 values -> fp8 codes: one rounding (RNE or toward zero), satfinite (+-max for overflow and inf)."""
    import ml_dtypes

    t = {"e4": ml_dtypes.float8_e4m3fn, "e5": ml_dtypes.float8_e5m2}[fmt]
    finite = np.array([float(v) for v in np.arange(256, dtype=np.uint8).view(t)])
    ok = np.isfinite(finite)
    vals, codes = finite[ok], np.arange(256)[ok]
    top = vals.max()
    out = []
    for v in x.astype(np.float64):
        if np.isnan(v):
            out.append(0x7F if fmt == "e4" else 0x7E)  # the canonical NaN: PTX's, Triton's fp8 NaN
            continue
        a = min(abs(v), top) if mode == "rtz" or abs(v) > top else abs(v)
        best = None
        for val, code in zip(vals, codes):
            if val < 0 or (val == 0 and code != 0):
                continue
            if mode == "rtz":
                if val <= a and (best is None or val > best[0]):
                    best = (val, code)
            else:
                d = abs(val - a)
                if best is None or d < best[2] or (d == best[2] and code % 2 == 0):
                    best = (val, code, d)
        code = best[1]
        out.append(code | (0x80 if np.signbit(v) else 0))
    return np.array(out, np.uint8)


@probe("fp32/fp16/bf16 -> fp8 e4m3/e5m2: ties to even, rtz, subnormals, satfinite overflow and inf; all 256 codes up")
def probe_fp8_casts():
    import ml_dtypes

    n = 64
    g = rng(37)
    e4 = np.array([float(v) for v in np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn)])
    e5 = np.array([float(v) for v in np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e5m2)])
    mid4 = (e4[1:0x7E] + e4[2:0x7F]) / 2  # exact ties between neighbouring e4m3 values
    mid5 = (e5[1:0x7B] + e5[2:0x7C]) / 2
    x = np.concatenate(
        [
            [0.0, -0.0, np.inf, -np.inf, np.nan, 448, 464, 465, -480, 1e6, 57344, 61440, 61441, -1e30],
            [2.0**-9, 2.0**-10, 3 * 2.0**-11, 2.0**-16, 2.0**-17, 3 * 2.0**-18, 1e-30, -(2.0**-10)],
            g.choice(mid4, 12),
            -g.choice(mid5, 12),
            g.standard_normal(n - 46) * 10,
        ]
    ).astype(np.float32)
    outs = [empty(n, torch.uint8) for _ in range(6)]
    u = empty(1024, torch.float32)
    k_fp8_casts[(1,)](dev(x), *outs, u, n)
    xh = x.astype(np.float16).astype(np.float64)
    xb = torch.from_numpy(x).to(torch.bfloat16).double().numpy()
    got = [host(t) for t in outs]
    ups = host(u)
    return {
        "f32->e4m3": (got[0], fp8_reference(x, "e4", "rtne"), 0),
        "f32->e5m2": (got[1], fp8_reference(x, "e5", "rtne"), 0),
        "f32->e4m3 rtz": (got[2], fp8_reference(x, "e4", "rtz"), 0),
        "f32->e5m2 rtz": (got[3], fp8_reference(x, "e5", "rtz"), 0),
        "f16->e4m3": (got[4], fp8_reference(xh, "e4", "rtne"), 0),
        "bf16->e5m2": (got[5], fp8_reference(xb, "e5", "rtne"), 0),
        "e4m3 codes up": (ups[:256], e4.astype(np.float32), 0),
        "e5m2 codes up": (ups[256:512], e5.astype(np.float32), 0),
        "e4m3 -> f16": (ups[512:768], e4.astype(np.float16).astype(np.float32), 0),
        "e5m2 -> bf16": (ups[768:], e5.astype(np.float32), 0),
    }


@triton.jit
def k_bitcast_chain(x, d, o16, o32, o64, N: tl.constexpr):
    r = tl.arange(0, N)
    v = tl.load(x + r)
    bits = v.to(tl.uint32, bitcast=True)
    hi = (bits >> 16).to(tl.uint16).to(tl.bfloat16, bitcast=True)  # truncation to bf16 by bits
    lo = bits.to(tl.uint16).to(tl.int16, bitcast=True)
    tl.store(o16 + r, lo)
    tl.store(o32 + r, hi.to(tl.float32))
    back = ((hi.to(tl.uint16, bitcast=True).to(tl.uint32) << 16) | lo.to(tl.uint16, bitcast=True).to(tl.uint32)).to(
        tl.float32, bitcast=True
    )
    tl.store(o32 + N + r, back)
    w = tl.load(d + r)
    wb = w.to(tl.int64, bitcast=True)
    flipped = (wb ^ -(2**63)).to(tl.float64, bitcast=True)  # sign flip through the bits
    tl.store(o64 + r, flipped)
    tl.store(o64 + N + r, (wb >> 32).to(tl.int32).to(tl.float32, bitcast=True).to(tl.float64))
    s8 = (bits & 0xFF).to(tl.uint8).to(tl.int8, bitcast=True)
    tl.store(o16 + N + r, s8.to(tl.int16))
    f8 = (bits & 0xFF).to(tl.uint8).to(tl.float8e5, bitcast=True).to(tl.float16)
    tl.store(o16 + 2 * N + r, f8.to(tl.int16, bitcast=True))


@probe("bitcast chains: fp32 -> u32 -> (hi bf16, lo i16) -> fp32 again; fp64 sign flip by bits; u8 -> i8/fp8e5 -> fp16")
def probe_bitcast_chains():
    n = 32
    g = rng(37)
    x = (g.standard_normal(n) * 1e3).astype(np.float32)
    x[:5] = [np.nan, -0.0, np.inf, 1e-45, -3.4e38]
    x[5] = np.array([0x7FC01234], np.uint32).view(np.float32)[0]  # NaN with a payload
    d = g.standard_normal(n) * 1e200
    d[:3] = [np.nan, -0.0, np.inf]
    o16, o32, o64 = empty(3 * n, torch.int16), empty(2 * n, torch.float32), empty(2 * n, torch.float64)
    k_bitcast_chain[(1,)](dev(x), dev(d), o16, o32, o64, n)
    bits = x.view(np.uint32)
    hi = (bits & 0xFFFF0000).view(np.float32)
    import ml_dtypes

    f8 = (bits & 0xFF).astype(np.uint8).view(ml_dtypes.float8_e5m2).astype(np.float16).view(np.int16)
    w16 = np.concatenate(
        [(bits & 0xFFFF).astype(np.uint16).view(np.int16), (bits & 0xFF).astype(np.uint8).view(np.int8), f8]
    )
    got16, got32, got64 = host(o16), host(o32), host(o64)
    return {
        "lo/i8/fp8 bits": (got16, w16.astype(np.int16), 0),
        "hi as bf16": (got32[:n].view(np.uint32), hi.view(np.uint32), 0),
        "round trip": (got32[n:].view(np.uint32), bits, 0),
        "f64 sign flip": (got64[:n].view(np.uint64), d.view(np.uint64) ^ np.uint64(1 << 63), 0),
        "f64 hi word": (
            got64[n:],
            (d.view(np.uint64) >> np.uint64(32)).astype(np.uint32).view(np.float32).astype(np.float64),
            0,
        ),
    }


@triton.jit
def k_offset_wrap(x, o, big, c, N: tl.constexpr):
    r = tl.arange(0, N)
    off64 = r.to(tl.int64) * big  # past 2**40
    v0 = tl.load(x + (off64 - off64 + (N - 1 - r)))
    p = x + big  # a pointer far outside the allocation, never dereferenced
    p = p - big + 2 * r
    v1 = tl.load(p, mask=2 * r < N, other=-1)
    u = r.to(tl.uint32) + c  # uint32 offsets past 2**31 (c: a uint32 argument) ...
    v2 = tl.load(x + (u - c))  # ... brought back in range before the add
    q = x + N * big  # a far scalar pointer, then a tensor of offsets back into range
    v3 = tl.load(q - N * big + (r ^ 1))
    tl.store(o + r, v0)
    tl.store(o + N + r, v1)
    tl.store(o + 2 * N + r, v2)
    tl.store(o + 3 * N + r, v3)


@triton.jit
def k_offset_i32_wrap(x, o, n, a, b, N: tl.constexpr):
    r = tl.arange(0, N)
    zero32 = n * n  # 65536 * 65536 wraps to 0 in int32
    tl.store(o + r, tl.load(x + r + zero32))
    tl.store(o + N + r, tl.load(x + N + (r + a + b)))  # a + b wraps to -N in int32


@triton.jit
def k_mask_i32_wrap(x, o, big, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(o + r, tl.load(x + r, mask=(r + big) > 0, other=-1))  # r + big wraps negative for r >= 8
    tl.store(o + N + r, tl.load(x + r, mask=r * 268435456 >= 0, other=-1))  # r * 2**28 wraps for r >= 8
    tl.store(o + 2 * N + r, tl.load(x + r), mask=(r + big) > 0)
    tl.store(o + 3 * N + r, tl.where(r + big > 0, r, -1))  # the same comparison as a value


@triton.jit
def k_const_i32_wrap(x, o, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(o + r, tl.load(x + r, mask=(r + 2147483640) > 0, other=-1))  # r + (2**31 - 8) wraps for r >= 8
    tl.store(o + N + r, tl.load(x + r), mask=(r + 2147483640) > 0)


@triton.jit
def k_const_offset_wrap(x, o, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(o + r, tl.load(x + (r * 65536 * 65536 + r)))  # r * 2**32 wraps to 0 in int32


@probe("offsets: int64 offsets past 2**40 that cancel, far pointers brought back, uint32 offsets past 2**31; i32 wraps")
def probe_offset_wrap():
    n = 16
    x = np.arange(100, 100 + n, dtype=np.int32)
    o = empty(4 * n, torch.int32)
    k_offset_wrap[(1,)](dev(x), o, 2**40 + 12345, 0xFFFFFFF0, n)
    r = np.arange(n)
    want = np.concatenate([x[::-1], np.where(2 * r < n, x[np.minimum(2 * r, n - 1)], -1), x, x[r ^ 1]])
    res = {"out": (host(o), want.astype(np.int32), 0)}
    # i32 wrap in masks and offsets whose terms are all constants: the access analysis sees the wrap at compile
    # time and computes the access per element, wrapping as CUDA (passes/access_forms.py, wrap38). Counted
    first8 = np.arange(n) < 8
    c = empty(2 * n, torch.int32)
    c[n:] = 7
    k_const_i32_wrap[(1,)](dev(x), c, n)
    got = host(c).reshape(2, n)
    res["mask (r + (2**31 - 8)) > 0, a literal"] = (got[0], np.where(first8, x, -1), 0)
    res["store mask (r + (2**31 - 8)) > 0, a literal"] = (got[1], np.where(first8, x, 7), 0)
    # with a runtime scalar in the sum (big, an argument) the analysis cannot tell at compile time: the mask is
    # computed as if nothing wrapped, true where CUDA's (and the interpreter's) is false: no fault, other data.
    # Shown, not counted (CUDA's result)
    m = empty(4 * n, torch.int32)
    m[2 * n :] = 7
    k_mask_i32_wrap[(1,)](dev(x), m, 2**31 - 8, n)
    got = host(m).reshape(4, n)
    res["mask (r + big) > 0, big = 2**31 - 8"] = (got[0], np.where(first8, x, -1), None)
    res["mask r * 2**28 >= 0"] = (got[1], np.where(first8, x, -1), 0)
    res["store mask (r + big) > 0, big = 2**31 - 8"] = (got[2], np.where(first8, x, 7), None)
    res["where (r + big) > 0"] = (got[3], np.where(first8, np.arange(n), -1), 0)
    if INTERPRET:  # the interpreter does not wrap either: it reads 2**32 elements away and dies (SIGSEGV)
        return res
    c = empty(n, torch.int32)
    k_const_offset_wrap[(1,)](dev(x), c, n)
    res["offset r * 65536 * 65536 + r (constants)"] = (host(c), x, 0)
    # i32 offset arithmetic over runtime scalars that wraps back into range: CUDA computes the i32 offset
    # (wrapping), then the address; plate's address expressions over scalars are unbounded integers
    # (passes/affine.py), so it addresses 2**32 elements away and faults. Shown, not counted: CUDA's result.
    wrap = empty(2 * n, torch.int32)
    b = 2**31 - 1 - (n - 2) - 2**32  # as int32: (2**31 - 1) + b == -n (mod 2**32)
    err = error_text(lambda: k_offset_i32_wrap[(1,)](dev(x), wrap, 65536, 2**31 - 1, b, n))
    wrapped = "ok" if err == "no error" and (host(wrap) == np.concatenate([x, x])).all() else err.splitlines()[0][:90]
    res["i32 wrap (CUDA: in range)"] = (np.array([wrapped]), np.array(["ok"]), None)
    return res


@triton.jit
def _stats(v, WHICH: tl.constexpr):
    if WHICH == 0:
        return tl.max(v, 0), tl.sum(v, 0)
    else:
        m = tl.min(v, 0)
        return m, tl.sum(v - m, 0)


@triton.jit
def k_persistent(x, o, M, N, BM: tl.constexpr, BN: tl.constexpr, NPROG: tl.constexpr, WHICH: tl.constexpr):
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(N, BN)
    num_tiles = tl.cdiv(M, BM) * tiles_n
    for t in tl.range(pid, num_tiles, NPROG, num_stages=2):
        tm = t // tiles_n
        tn = t % tiles_n
        rm = tm * BM + tl.arange(0, BM)
        rn = tn * BN + tl.arange(0, BN)
        mask = (rm[:, None] < M) & (rn[None, :] < N)
        v = tl.load(x + rm[:, None] * N + rn[None, :], mask=mask, other=0)
        a, s = _stats(v, WHICH)  # per column of the tile
        tl.store(o + tm * N + rn, a * 1000 + s, mask=rn < N)
        tl.debug_barrier()


@probe(
    "persistent kernel: tl.range(pid, tiles, NPROG) over ragged tiles, a constexpr-branching helper returning tuples"
)
def probe_persistent_tiles():
    m, n, bm, bn = 37, 45, 8, 16
    x = rng(37).integers(0, 50, (m, n)).astype(np.int32)
    res = {}
    for which in (0, 1):
        tm = -(-m // bm)
        o = empty(tm * n, torch.int32)
        k_persistent[(3,)](dev(x), o, m, n, bm, bn, 3, which)
        want = []
        for i in range(tm):
            blk = np.zeros((bm, n), np.int64)
            rows = x[i * bm : (i + 1) * bm]
            blk[: len(rows)] = rows
            if which == 0:
                want.append(blk.max(0) * 1000 + blk.sum(0))
            else:
                mn = blk.min(0)
                want.append(mn * 1000 + (blk - mn).sum(0))
        res[f"which={which}"] = (host(o), np.concatenate(want).astype(np.int32), 0)
    return res


@triton.jit
def k_where_zero(x, y, c, o, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(x + r)
    b = tl.load(y + r)
    k = tl.load(c + r) != 0
    tl.store(o + r, tl.where(k, a, b))
    tl.store(o + N + r, tl.where(k, a, -0.0))
    tl.store(o + 2 * N + r, tl.where(a != a, float("nan"), b))  # a NaN test by self-inequality
    tl.store(o + 3 * N + r, tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL))
    tl.store(o + 4 * N + r, tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL))
    tl.store(o + 5 * N + r, tl.maximum(a, b))
    tl.store(o + 6 * N + r, tl.where(a == b, 1.0, 0.0))  # -0.0 == 0.0
    tl.store(o + 7 * N + r, tl.where(k, a.to(tl.float16), b).to(tl.float32))  # promotion of the branches


@probe("tl.where with NaN/-0.0 payloads and scalar branches, maximum/minimum of signed zeros and NaN")
def probe_where_nan_zero():
    n = 16
    a = np.array(
        [0.0, -0.0, 0.0, -0.0, np.nan, 1.0, np.nan, -np.inf, 2.5, -0.0, 0.0, 3.0, -1.0, np.inf, 1e-45, -7.0], np.float32
    )
    b = np.array(
        [-0.0, 0.0, 0.0, -0.0, 1.0, np.nan, np.nan, -0.0, -2.5, 1.0, -1.0, 3.0, -1.0, -np.inf, -1e-45, 7.0], np.float32
    )
    a[6] = np.array([0x7FC0BEEF], np.uint32).view(np.float32)[0]
    c = (np.arange(n) % 3 == 0).astype(np.int32)
    o = empty(8 * n, torch.float32)
    k_where_zero[(1,)](dev(a), dev(b), dev(c), o, n)
    got = host(o).reshape(8, n)
    k = c != 0
    # NOTES: maximum/minimum (propagate_nan=ALL) propagate NaN with -0.0 < +0.0; maxnum (default) ignores a NaN
    signed_max = np.where(
        np.isnan(a) | np.isnan(b),
        np.nan,
        np.where((a == b) & (a == 0), np.where(np.signbit(a), b, a), np.maximum(a, b)),
    )
    signed_min = np.where(
        np.isnan(a) | np.isnan(b),
        np.nan,
        np.where((a == b) & (a == 0), np.where(np.signbit(a), a, b), np.minimum(a, b)),
    )
    fmax = np.where(np.isnan(a), b, np.where(np.isnan(b), a, signed_max))
    return {
        "where": (got[0], np.where(k, a, b), 0),
        # Triton's frontend makes any constant equal to 0 its type's null value: -0.0 becomes +0.0 on every backend
        "where -0.0 scalar": (got[1], np.where(k, a, np.float32(0.0)), 0),
        "where NaN test": (got[2], np.where(np.isnan(a), np.nan, b).astype(np.float32), 0),
        "where keeps payload": (
            got[0][6:7].view(np.uint32),
            a[6:7].view(np.uint32) if k[6] else b[6:7].view(np.uint32),
            0,
        ),
        "maximum ALL": (got[3], signed_max.astype(np.float32), 0),
        "minimum ALL": (got[4], signed_min.astype(np.float32), 0),
        "maximum (maxnum)": (got[5], fmax.astype(np.float32), 0),
        "-0.0 == 0.0": (got[6], (a == b).astype(np.float32), 0),
        "where fp16 branch": (got[7], np.where(k, a.astype(np.float16).astype(np.float32), b), 0),
    }


@triton.jit
def k_barrier_transpose(x, scratch, o, N: tl.constexpr):
    r = tl.arange(0, N)
    t = tl.load(x + r[:, None] * N + r[None, :])
    tl.store(scratch + r[:, None] * N + r[None, :], t * 2)
    tl.debug_barrier()
    u = tl.load(scratch + r[None, :] * N + r[:, None])  # read back transposed, other lanes' stores
    tl.store(scratch + r[:, None] * N + r[None, :], u + 1)
    tl.debug_barrier()
    w = tl.load(scratch + (N - 1 - r[:, None]) * N + r[None, :])
    tl.store(o + r[:, None] * N + r[None, :], w)


@probe("tl.debug_barrier between a store and a transposed reload of the same scratch (lanes read others' stores)")
def probe_barrier_scratch():
    n = 16
    x = rng(37).integers(-100, 100, (n, n)).astype(np.int32)
    scratch, o = empty((n, n), torch.int32), empty((n, n), torch.int32)
    k_barrier_transpose[(1,)](dev(x), scratch, o, n)
    return {"out": (host(o), ((x * 2).T + 1)[::-1], 0)}


@triton.jit
def k_hist_mask(x, o, N: tl.constexpr, BINS: tl.constexpr):
    r = tl.arange(0, N)
    v = tl.load(x + r)
    tl.store(o + tl.arange(0, BINS), tl.histogram(v, BINS, mask=r % 3 != 0))
    tl.store(o + BINS + tl.arange(0, BINS), tl.histogram(v.to(tl.int8), BINS))  # negative int8 values: no bin


@probe("tl.histogram with mask=, and of int8 values (negatives fall in no bin)")
def probe_histogram_mask():
    n, bins = 256, 32
    x = rng(37).integers(-40, 40, n).astype(np.int32)
    o = empty(2 * bins, torch.int32)
    k_hist_mask[(1,)](dev(x), o, n, bins)
    keep = np.arange(n) % 3 != 0
    h1 = np.bincount(x[keep & (x >= 0) & (x < bins)], minlength=bins)
    h2 = np.bincount(x[(x >= 0) & (x < bins)], minlength=bins)
    return {"masked": (host(o)[:bins], h1.astype(np.int32), 0), "int8": (host(o)[bins:], h2.astype(np.int32), 0)}


@triton.jit
def k_sort_specials(x, u, o, ou, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    v = tl.load(x + rm * N + rn)
    tl.store(o + rm * N + rn, tl.sort(v, 1))
    tl.store(o + M * N + rm * N + rn, tl.sort(v, 1, descending=True))
    w = tl.load(u + rm * N + rn)
    tl.store(ou + rm * N + rn, tl.sort(w, 1, descending=True))
    tl.store(ou + M * N + rm * 4 + tl.arange(0, 4)[None, :], tl.topk(w, 4, 1))


@probe("tl.sort of fp32 rows with +-0.0, +-inf, subnormals (ascending, descending); uint64 sort and topk past 2**63")
def probe_sort_specials():
    m, n = 4, 16
    g = rng(37)
    x = g.standard_normal((m, n)).astype(np.float32)
    x[0, :8] = [0.0, -0.0, np.inf, -np.inf, 1e-45, -1e-45, 0.0, -0.0]
    x[1, :4] = [-0.0, -0.0, 0.0, 0.0]
    u = g.integers(0, 2**64, (m, n), dtype=np.uint64)
    u[0, :3] = [2**64 - 1, 2**63, 2**63 - 1]
    o, ou = empty(2 * m * n, torch.float32), empty(m * n + m * 4, torch.uint64)
    k_sort_specials[(1,)](dev(x), dev(u), o, ou, m, n)
    got, gu = host(o).reshape(2, m, n), host(ou)
    return {
        # a zero's sign within a run of equal zeros is the network's choice: compared as values (1e-300 tolerance)
        "ascending": (got[0], np.sort(x, 1), 1e-300),
        "descending": (got[1], -np.sort(-x, 1), 1e-300),
        # Triton's compare-and-swap gives both sides the same one of two equal values (-0.0 and +0.0 compare
        # equal), so zero signs are the network's: only compared with the interpreter's bits
        "zero bits": (np.signbit(got), None, None),
        "uint64 descending": (gu[: m * n].reshape(m, n), np.sort(u, 1)[:, ::-1], 0),
        "uint64 topk": (gu[m * n :].reshape(m, 4), np.sort(u, 1)[:, ::-1][:, :4], 0),
    }


@triton.jit
def k_oob_load(x, o, N: tl.constexpr):
    r = tl.arange(0, 2 * N)
    v = tl.load(x + r)  # past the end of an N-element tensor
    tl.store(o + r, v)


@triton.jit
def k_oob_store(x, o, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(o + r - 3, tl.load(x + r))  # 3 elements before the tensor


@triton.jit
def k_oob_atomic(x, o, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.atomic_add(o + r * 1000, tl.load(x + r))


@triton.jit
def k_oob_gather(x, idx, o, N: tl.constexpr):
    r = tl.arange(0, N)
    v = tl.load(x + r)
    i = tl.load(idx + r)
    tl.store(o + r, tl.gather(v, i, 0))  # an index >= N


@triton.jit
def k_endless(x, o, n):
    i = tl.load(x)
    while i < n:
        i = (i + 1) % 3  # cycles 0, 1, 2 below n: not the same registers at consecutive visits
    tl.store(o, i)


@triton.jit
def k_spin(flag, o):
    while tl.load(flag, volatile=True) == 0:  # waits for a store nobody makes
        pass
    tl.store(o, 1)


@triton.jit
def k_assert_env(x, N: tl.constexpr):
    v = tl.load(x + tl.arange(0, N))
    tl.device_assert(v < 100, "value too large")


def source_line(kernel, text):
    import inspect

    lines, first = inspect.getsourcelines(kernel.fn)
    return f"{__file__}:{first + next(i for i, line in enumerate(lines) if text in line)}"


@probe(
    "errors: out-of-bounds load/store/atomic, gather index out of range, endless loop, device_assert by TRITON_DEBUG"
)
def probe_runtime_errors():
    if INTERPRET:  # the interpreter raises its own errors (or none): nothing to compare
        return {}
    n = 16
    x = dev(np.arange(n, dtype=np.int32))
    o = empty(n, torch.int32)
    load = error_text(lambda: k_oob_load[(1,)](x, empty(2 * n, torch.int32), n))
    store = error_text(lambda: k_oob_store[(1,)](x, o, n))
    atomic = error_text(lambda: k_oob_atomic[(1,)](x, o, n))
    idx = np.arange(n, dtype=np.int32)
    idx[5] = n + 2
    gather = error_text(lambda: k_oob_gather[(1,)](x, dev(idx), o, n))
    old_steps = os.environ.get("PLATE_MAX_STEPS")
    os.environ["PLATE_MAX_STEPS"] = "200000"  # the budget's error, in a second instead of a minute
    try:
        endless = error_text(lambda: k_endless[(1,)](dev(np.zeros(1, np.int32)), o, 5))
    finally:
        if old_steps is None:
            os.environ.pop("PLATE_MAX_STEPS")
        else:
            os.environ["PLATE_MAX_STEPS"] = old_steps
    spin = error_text(lambda: k_spin[(1,)](dev(np.zeros(1, np.int32)), o))
    old = triton.knobs.runtime.debug  # TRITON_DEBUG=1, read when triton is imported
    triton.knobs.runtime.debug = True
    try:
        fired = error_text(lambda: k_assert_env[(1,)](dev(np.array([1, 200, 3, 4], np.int32)), 4))
    finally:
        triton.knobs.runtime.debug = old
    checks = {
        "load: MemoryFault": "MemoryFault" in load,
        "load: source line": source_line(k_oob_load, "tl.load(x + r)") in load,
        "store: MemoryFault": "MemoryFault" in store,
        "store: source line": source_line(k_oob_store, "tl.store(o + r - 3") in store,
        "atomic: MemoryFault": "MemoryFault" in atomic,
        "atomic: source line": source_line(k_oob_atomic, "tl.atomic_add") in atomic,
        "gather: names the gather": "gather" in gather,
        "gather: source line": source_line(k_oob_gather, "tl.gather") in gather,
        "endless: source line": source_line(k_endless, "while i < n") in endless,
        "spin: proven endless": "endless loop" in spin,
        "spin: source line": source_line(k_spin, "while tl.load") in spin,
        "TRITON_DEBUG assert fires": "value too large" in fired,
    }
    texts = {
        "load": load,
        "store": store,
        "atomic": atomic,
        "gather": gather,
        "endless": endless,
        "spin": spin,
        "assert": fired,
    }
    if os.environ.get("PROBE_SHOW_ERRORS"):
        for k, v in texts.items():
            print(f"--- {k}: {v}\n")
    return {k: (np.array([v]), np.array([True]), 0) for k, v in checks.items()}


@triton.jit
def k_fma_half(a, b, c, o, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(o + r, tl.fma(tl.load(a + r), tl.load(b + r), tl.load(c + r)))
    i = tl.program_id(0)
    tl.store(o + N + r, tl.fma(tl.load(a + i), tl.load(b + i), tl.load(c + i)) + r * 0)  # the scalar path


@probe("fp16 tl.fma at a crafted tie: a*b + c is a half-ulp plus 2**-31 (fp32 then fp16 rounds it to even: wrong)")
def probe_fma_half_tie():
    # (1 + 2**-10)(2 - 2**-9) = 2(1 - 2**-20): a*b = -(2**-11 - 2**-31), c = 1 + 2**-10: the exact sum is
    # 1 + 2**-11 + 2**-31, just above the tie between 1 and 1 + 2**-10; rounded to fp32 first it is the tie
    a = np.array([-(1 + 2**-10) * 2**-6, (1 + 2**-10) * 2**-6, 3.0, -0.0], np.float16)
    b = np.array([(2 - 2**-9) * 2**-6, -(2 - 2**-9) * 2**-6, 2**-14, 5.0], np.float16)
    c = np.array([1 + 2**-10, -(1 + 2**-10), -(2**-24), 0.0], np.float16)
    exact = [Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)) for x, y, z in zip(a, b, c)]
    want = np.array([float(e) for e in exact]).astype(np.float16)  # float64 holds these sums exactly
    want[3] = np.float16(0.0)  # -0 * 5 + 0 = +0
    o = empty(2 * 4, torch.float16)
    k_fma_half[(1,)](dev(a), dev(b), dev(c), o, 4)
    got = host(o)
    return {"tensor": (got[:4], want, 0), "scalar (program 0)": (got[4:], np.full(4, want[0]), 0)}


@triton.jit
def _or(a, b):
    return a | b


@triton.jit
def _xor_count(a, b, c, d):
    return a ^ c, b + d


@triton.jit
def k_bool_tiles(x, idx, o, M: tl.constexpr, N: tl.constexpr, W: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    b = tl.load(x + rm * N + rn) != 0
    halves = tl.split(tl.reshape(b, (M, N // 2, 2)))
    outs = (
        tl.sort(b, 1),
        tl.sort(b, 1, descending=True),
        tl.flip(b, 1),
        tl.flip(b, 0),
        tl.gather(b, tl.load(idx + rm * N + rn), 1),
        tl.trans(tl.reshape(tl.trans(b), (N, M))),
        tl.associative_scan(b, 1, _or),
        tl.associative_scan(b, 0, _or, reverse=True),
        tl.broadcast_to(tl.reduce(b, 1, _or)[:, None], (M, N)),
        tl.broadcast_to(tl.xor_sum(b, 1)[:, None], (M, N)),
        tl.broadcast_to(tl.max(b, 1)[:, None], (M, N)),
        tl.broadcast_to(tl.argmax(b, 1)[:, None], (M, N)),
        tl.where(b, rm, -rn),
        tl.reshape(tl.permute(tl.reshape(b, (M, N // 2, 2)), (0, 2, 1)), (M, N)),
        tl.associative_scan((b, b.to(tl.int32)), 1, _xor_count)[0],
        tl.associative_scan((b, b.to(tl.int32)), 1, _xor_count)[1],
        tl.interleave(halves[1], halves[0]),
        (b.to(tl.int8) * 3 - (~b).to(tl.int16)),
    )
    for j in tl.static_range(W):
        tl.store(o + j * M * N + rm * N + rn, outs[j].to(tl.int8))


@probe("bool (i1) tiles through sort, flip, gather, trans/reshape/permute, or/xor scans and reduces, argmax, split")
def probe_bool_tiles():
    m, n, w = 4, 16, 18
    g = rng(37)
    x = g.integers(0, 2, (m, n)).astype(np.int8)
    x[1], x[2] = 0, 1
    x[3, ::3] = 7  # nonzero bytes other than 1
    idx = g.integers(0, n, (m, n)).astype(np.int32)
    o = empty(w * m * n, torch.int8)
    k_bool_tiles[(1,)](dev(x), dev(idx), o, m, n, w)
    b = x != 0
    rm, rn = np.arange(m)[:, None], np.arange(n)[None, :]

    def rows(v):
        return np.broadcast_to(np.asarray(v)[:, None], (m, n))

    pairs = b.reshape(m, n // 2, 2)
    want = [
        np.sort(b, 1),
        np.sort(b, 1)[:, ::-1],
        b[:, ::-1],
        b[::-1],
        np.take_along_axis(b, idx, 1),
        b,
        np.logical_or.accumulate(b, 1),
        np.logical_or.accumulate(b[::-1], 0)[::-1],
        rows(b.any(1)),
        rows(b.sum(1) % 2),
        rows(b.max(1)),
        rows(b.argmax(1)),
        np.where(b, rm, -rn),
        pairs.transpose(0, 2, 1).reshape(m, n),
        np.cumsum(b, 1) % 2,
        np.cumsum(b, 1),
        np.stack([pairs[..., 1], pairs[..., 0]], -1).reshape(m, n),
        b * 3 - ~b,
    ]
    got = host(o).reshape(w, m, n)
    return {f"out {j}": (got[j], np.asarray(v).astype(np.int8), 0) for j, v in enumerate(want)}


@triton.jit
def k_int1_casts(xi, xf, bo, o, i1, i2, i3, i4, i5, f1, f2, flag, N: tl.constexpr):
    r = tl.arange(0, N)
    bi = tl.load(xi + r).to(tl.int1)  # != 0, not a truncation
    bf = tl.load(xf + r).to(tl.int1)  # != 0.0: NaN true, -0.0 false
    tl.store(bo + r, bi)
    tl.store(bo + N + r, bf)
    tl.store(o + r, bi.to(tl.float64))
    tl.store(o + N + r, bf.to(tl.int8).to(tl.float64))
    tl.store(o + 2 * N + r, (tl.load(xi + 2).to(tl.int1) + r * 0).to(tl.float64))  # the scalar path
    tl.store(o + 3 * N + r, (tl.arange(5, 5 + N) + tl.arange(2**30, 2**30 + N) - 2**30).to(tl.float64))
    tl.store(o + 4 * N + 0, i1 + 0.0)  # 1: Triton specializes it as a constant
    tl.store(o + 4 * N + 1, i2 + 0.0)  # 2**31: uint32
    tl.store(o + 4 * N + 2, (i3 + 0).to(tl.float64))  # int64
    tl.store(o + 4 * N + 3, (i4 + 0).to(tl.float64))
    tl.store(o + 4 * N + 4, (i5 >> 60).to(tl.float64))  # uint64 past 2**63
    tl.store(o + 4 * N + 5, f1 * 1.0)  # Python floats are fp32 arguments
    tl.store(o + 4 * N + 6, f2 * 1.0)  # 1e300 -> inf
    tl.store(o + 4 * N + 7, flag.to(tl.float64))


@probe("casts to int1 (!= 0; NaN true, -0.0 false), tensor and scalar paths; scalar args (1, u32, i64, u64, f32, bool)")
def probe_int1_and_args():
    n = 8
    xi = np.array([0, 1, 2, -1, 256, -128, 0, 3], np.int16)
    xf = np.array([0.0, -0.0, 0.5, np.nan, -1e-45, np.inf, 1e-30, -2.0], np.float32)
    bo, o = empty(2 * n, torch.bool), empty(5 * n, torch.float64)
    k_int1_casts[(1,)](dev(xi), dev(xf), bo, o, 1, 2**31, 2**32 + 5, -(2**40), 2**63 + 7, 0.1, 1e300, True, n)
    got = host(o)
    args = [1, 2**31, 2**32 + 5, -(2**40), 8, float(np.float32(0.1)), np.inf, 1]
    return {
        "bools": (host(bo), np.concatenate([xi != 0, xf != 0]), 0),
        "as numbers": (got[: 2 * n], np.concatenate([xi != 0, xf != 0]).astype(np.float64), 0),
        "scalar cast": (got[2 * n : 3 * n], np.ones(n), 0),
        "arange with a start": (got[3 * n : 4 * n], 5.0 + 2 * np.arange(n), 0),
        "arguments": (got[4 * n :], np.array(args, np.float64), 0),
    }


@triton.jit
def k_address_forms_neg(x, o, s, t, seed, N: tl.constexpr, W: tl.constexpr):
    r = tl.arange(0, N)
    m = x + 64  # the middle of a 128-element buffer: negative offsets are in bounds
    rm = tl.arange(0, 4)[:, None]
    rn = tl.arange(0, 8)[None, :]
    pid = tl.program_id(0)
    offs = (
        (r - 5) % 16,  # C remainder: negative for r < 5
        (r - 20) // 4,  # truncation toward zero, not floor
        (r - 13) % 7 * 3,
        (s - r) // 3,  # s: a runtime scalar
        (r - s) % 5,
        tl.reshape((rm * 8 + rn - 9) % 6 + rm * 10 - 20, (N,)),
        (r * -3) // 2,
        (r - 16) // t,  # t: a negative runtime divisor
        (r - 16) % t,
        (r - 10) >> 1,  # arithmetic shift: floor
        (r.to(tl.int64) - 17) // 4,
        (r * 1103515245 + 12345) % 64,  # an LCG: the i32 product wraps, its C remainder is in (-64, 64)
        ((r + pid * N) * 1103515245 + seed) % 63,
        (r * 1103515245) // 33554432,  # a wrapped product / 2**25
        (r * 1103515245 + 12345) & 63,
        ((r.to(tl.uint32) * 2654435761) >> 26).to(tl.int32),  # Knuth's multiplicative hash in uint32
        ((r.to(tl.uint32) * 2654435761) % 64).to(tl.int32),
        ((seed * seed) & 63) + r * 0,  # a scalar product that wraps
    )
    for j in tl.static_range(W):
        tl.store(o + pid * W * N + j * N + r, tl.load(m + offs[j]))


def c_trunc(a, b):
    """C's quotient and remainder of integer arrays (objects) by b, elementwise."""
    q = np.array([abs(int(v)) // abs(b) * (1 if (v < 0) == (b < 0) else -1) for v in a], dtype=object)
    return q, np.array([int(v) - int(qi) * b for v, qi in zip(a, q)], dtype=object)


def wrap32(v, signed=True):
    out = [int(t) & 0xFFFFFFFF for t in np.asarray(v, dtype=object)]
    return np.array([t - (1 << 32) if signed and t >= 1 << 31 else t for t in out], dtype=object)


@probe("address forms with negative operands (C // and %), runtime divisors, and hashes whose i32/u32 products wrap")
def probe_address_forms_neg():
    n, w, progs, s, t, seed = 32, 18, 2, 7, -3, 1987654321
    if INTERPRET:  # the interpreter computes the i32 products unwrapped and reads far away (SIGSEGV)
        w = 11
    x = np.arange(-64, 64, dtype=np.int32)
    o = empty(progs * w * n, torch.int32)
    k_address_forms_neg[(progs,)](dev(x), o, s, t, seed, n, w)
    got = host(o).reshape(progs, w, n)
    r = np.arange(n, dtype=object)
    rm, rn = np.arange(4)[:, None], np.arange(8)[None, :]
    res = {}
    for p in range(progs):
        want = [
            c_trunc(r - 5, 16)[1],
            c_trunc(r - 20, 4)[0],
            c_trunc(r - 13, 7)[1] * 3,
            c_trunc(s - r, 3)[0],
            c_trunc(r - s, 5)[1],
            c_trunc((rm * 8 + rn - 9).ravel(), 6)[1] + (rm * 10 - 20 + rn * 0).ravel(),
            c_trunc(r * -3, 2)[0],
            c_trunc(r - 16, t)[0],
            c_trunc(r - 16, t)[1],
            np.array([int(v) >> 1 for v in r - 10], dtype=object),
            c_trunc(r - 17, 4)[0],
            c_trunc(wrap32(r * 1103515245 + 12345), 64)[1],
            c_trunc(wrap32((r + p * n) * 1103515245 + seed), 63)[1],
            c_trunc(wrap32(r * 1103515245), 33554432)[0],
            wrap32(r * 1103515245 + 12345) & 63,
            wrap32(r * 2654435761, signed=False) >> 26,
            wrap32(r * 2654435761, signed=False) % 64,
            np.full(n, int(wrap32([seed * seed])[0]) & 63, dtype=object),
        ]
        for j, v in enumerate(want[:w]):
            res[f"program {p} form {j}"] = (got[p, j], x[64 + np.asarray(v, dtype=np.int64)], 0)
    return res


@triton.jit
def k_block_ptr_views(x, o, M, N, sm, sn, BM: tl.constexpr, BN: tl.constexpr):
    # a column-major M x N matrix (strides (1, M)), order (0, 1); only dim 1 checked (dim 0 is in range)
    p = tl.make_block_ptr(x, shape=(M, N), strides=(sm, sn), offsets=(2, -3), block_shape=(BM, BN), order=(0, 1))
    q = tl.make_block_ptr(o, shape=(M, N), strides=(N, 1), offsets=(0, 0), block_shape=(BM, BN), order=(1, 0))
    tl.store(q, tl.load(p, boundary_check=(1,), padding_option="zero"))
    b = tl.load(tl.advance(p, (-2, 6)), boundary_check=(0, 1), padding_option="nan")
    tl.store(tl.advance(q, (BM, 0)), b, boundary_check=(0,))  # rows M.. of the output block clipped
    # a 3-D view (2, M, N // 2) of the same storage, strides (N // 2, N, 1): the middle dim checked
    r = tl.make_block_ptr(
        x, shape=(2, M, N // 2), strides=(N // 2, N, 1), offsets=(0, M - 2, 0), block_shape=(2, 4, 4), order=(2, 1, 0)
    )
    s = tl.make_block_ptr(
        o + 2 * BM * BN, shape=(2, 4, 4), strides=(16, 4, 1), offsets=(0, 0, 0), block_shape=(2, 4, 4), order=(2, 1, 0)
    )
    tl.store(s, tl.load(r, boundary_check=(1,), padding_option="zero"))


@probe("block pointers: column-major order (0, 1) checking one dim, advance into NaN padding, clipped rows, a 3-D view")
def probe_block_ptr_views():
    m, n, bm, bn = 6, 8, 4, 8
    storage = np.arange(m * n, dtype=np.float32)
    X = storage.reshape(n, m).T  # X[i, j] = storage[j * m + i]
    o = empty(2 * bm * bn + 32, torch.float32)
    o.fill_(-7.0)
    k_block_ptr_views[(1,)](dev(storage), o, m, n, 1, m, bm, bn)

    def window(r0, c0, fill, rows_checked):
        out = np.full((bm, bn), fill, np.float32)
        for i in range(bm):
            for j in range(bn):
                if (not rows_checked or 0 <= r0 + i < m) and 0 <= c0 + j < n:
                    out[i, j] = X[r0 + i, c0 + j]
        return out

    second = window(0, 3, np.nan, True)
    second[m - bm :] = -7.0  # output rows m.. (rows 2, 3 of the block) are clipped: untouched
    view = np.zeros((2, 4, 4), np.float32)
    for bi in range(2):
        for i in range(4):
            if m - 2 + i < m:
                view[bi, i] = storage[bi * (n // 2) + (m - 2 + i) * n :][:4]
    got = host(o)
    return {
        "column-major": (got[: bm * bn].reshape(bm, bn), window(2, -3, 0.0, False), 0),
        "advance, nan padding, clipped store": (got[bm * bn : 2 * bm * bn].reshape(bm, bn), second, 0),
        "3-D view": (got[2 * bm * bn :].reshape(2, 4, 4), view, 0),
    }


@triton.jit
def k_cas_loops(counter, tickets, fmax, vals, N: tl.constexpr):
    pid = tl.program_id(0)
    r = tl.arange(0, N)
    # a ticket per lane from one counter, by a CAS loop (lanes done expect -1: their CAS fails)
    done = r < 0
    mine = tl.zeros((N,), tl.int32)
    while tl.sum((~done).to(tl.int32)) > 0:
        cur = tl.load(counter + r * 0, volatile=True)
        old = tl.atomic_cas(counter + r * 0, tl.where(done, -1, cur), cur + 1)
        won = (old == cur) & ~done
        mine = tl.where(won, cur, mine)
        done = done | won
    tl.store(tickets + pid * N + r, mine)
    # fp16 max into 4 slots through a 16-bit CAS loop on the bits (lanes done expect a value that is not there)
    v = tl.load(vals + pid * N + r)
    slot = fmax + r % 4
    todo = r >= 0
    while tl.max(todo.to(tl.int32), 0) > 0:
        curb = tl.load(slot, volatile=True)
        new = tl.maximum(v, curb.to(tl.float16, bitcast=True)).to(tl.int16, bitcast=True)
        old = tl.atomic_cas(slot, tl.where(todo, curb, curb ^ 1), new, sem="acq_rel", scope="gpu")
        todo = todo & (old != curb)


@probe("CAS loops: a ticket per lane from one counter (3 programs), an fp16 max through 16-bit CAS on the bits")
def probe_cas_loops():
    n, progs = 16, 3
    counter, tickets = empty(1, torch.int32), empty(progs * n, torch.int32)
    vals = rng(37).standard_normal(progs * n).astype(np.float16)
    fmax = dev(np.full(4, -np.inf, np.float16).view(np.int16))
    k_cas_loops[(progs,)](counter, tickets, fmax, dev(vals), n)
    return {
        "counter": (host(counter), np.array([progs * n], np.int32), 0),
        "tickets (sorted)": (np.sort(host(tickets)), np.arange(progs * n, dtype=np.int32), 0),
        "fp16 max": (host(fmax).view(np.float16), vals.reshape(-1, 4).max(0), 0),
    }


@triton.jit
def k_long_affine(a, b, oa, ob, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    A = tl.load(a + rm * N + rn)
    B = tl.load(b + rm * N + rn)
    AX: tl.constexpr = 1 if N > M else 0
    sa, sb = tl.associative_scan((A, B), AX, _affine)
    tl.store(oa + rm * N + rn, sa)
    tl.store(ob + rm * N + rn, sb)
    ra, rb = tl.associative_scan((A, B), AX, _affine, reverse=True)
    tl.store(oa + M * N + rm * N + rn, ra)
    tl.store(ob + M * N + rm * N + rn, rb)
    ta, tb = tl.reduce((A, B), AX, _affine, keep_dims=True)
    if AX == 1:
        tl.store(oa + 2 * M * N + rm, ta)
        tl.store(ob + 2 * M * N + rm, tb)
    else:
        tl.store(oa + 2 * M * N + rn, ta)
        tl.store(ob + 2 * M * N + rn, tb)


def affine_prefixes(pa, pb):
    """Every prefix composition of each row's affine maps, wrapping i32 (uint64 arithmetic mod 2**32)."""
    mask = np.uint64(0xFFFFFFFF)
    ca, cb = np.ones(pa.shape[0], np.uint64), np.zeros(pa.shape[0], np.uint64)
    outa, outb = np.empty(pa.shape, np.uint64), np.empty(pa.shape, np.uint64)
    for j in range(pa.shape[1]):
        x, y = (v[:, j].astype(np.uint32).astype(np.uint64) for v in (pa, pb))
        ca, cb = (ca * x) & mask, (cb * x + y) & mask
        outa[:, j], outb[:, j] = ca, cb
    return outa.astype(np.uint32).view(np.int32), outb.astype(np.uint32).view(np.int32)


@probe("the affine-map tuple combine on lines past the vector unit: a 16384-element row, 8192 rows on axis 0")
def probe_long_affine_scan():
    res = {}
    shapes = ((1, 16384),) if INTERPRET else ((1, 16384), (8192, 2))  # the interpreter: a minute a shape
    for m, n in shapes:
        g = rng(37)
        a = g.integers(-(2**31), 2**31, (m, n), dtype=np.int64).astype(np.int32)
        b = g.integers(-(2**31), 2**31, (m, n), dtype=np.int64).astype(np.int32)
        oa, ob = empty(2 * m * n + max(m, n), torch.int32), empty(2 * m * n + max(m, n), torch.int32)
        k_long_affine[(1,)](dev(a), dev(b), oa, ob, m, n)
        rows = (a, b) if n > m else (a.T, b.T)
        fa, fb = affine_prefixes(*rows)
        ra, rb = (v[:, ::-1] for v in affine_prefixes(rows[0][:, ::-1], rows[1][:, ::-1]))
        red = (fa[:, -1], fb[:, -1])
        if n <= m:
            fa, fb, ra, rb = fa.T, fb.T, ra.T, rb.T
        ga, gb = host(oa), host(ob)
        k = len(red[0])
        for name, got, want in (
            ("scan", (ga[: m * n], gb[: m * n]), (fa.ravel(), fb.ravel())),
            ("reverse scan", (ga[m * n : 2 * m * n], gb[m * n : 2 * m * n]), (ra.ravel(), rb.ravel())),
            ("reduce", (ga[2 * m * n :][:k], gb[2 * m * n :][:k]), red),
        ):
            res[f"{m}x{n} {name} a"] = (got[0], want[0], 0)
            res[f"{m}x{n} {name} b"] = (got[1], want[1], 0)
    return res


# ---- runner -----------------------------------------------------------------------------------------------------
def run_probes(selected):
    """{name: {output: (got, want, tol)} or the error text}."""
    results = {}
    for name, _feature, fn in selected:
        try:
            results[name] = fn()
        except Exception as exc:  # a probe's failure is its result
            text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            # plate's errors say what failed on their first line (pc, source, programs follow); Triton's last
            line = text.splitlines()[0 if type(exc).__module__.startswith("triton_plate_backend") else -1]
            results[name] = f"{type(exc).__name__}: {line[:300]}"
            if os.environ.get("PROBE_TRACEBACK"):
                traceback.print_exc()
    return results


def interpreted(names):
    """The probes' outputs under TRITON_INTERPRET=1 (a child process), {name: {output: got} or error text}."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "interp.pkl")
        env = dict(os.environ, TRITON_INTERPRET="1")
        cmd = [sys.executable, __file__, "--child", path, "-k", ",".join(names)]
        subprocess.run(cmd, env=env, check=True)
        with open(path, "rb") as f:
            return pickle.load(f)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="comma-separated probe names (substrings) to run")
    parser.add_argument("--no-interpret", action="store_true", help="skip the TRITON_INTERPRET=1 comparison")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    keys = [k for k in args.k.split(",") if k]
    selected = [p for p in PROBES if not keys or any(k in p[0] for k in keys)]
    results = run_probes(selected)
    if args.child:
        plain = {n: r if isinstance(r, str) else {k: v[0] for k, v in r.items()} for n, r in results.items()}
        with open(args.child, "wb") as f:
            pickle.dump(plain, f)
        return 0
    interp = {} if args.no_interpret else interpreted([p[0] for p in selected])
    failed = 0
    print("| probe | feature | plate vs reference | interpreter vs plate | note |")
    print("|---|---|---|---|---|")
    for name, feature, _fn in selected:
        r = results[name]
        note = ""
        if isinstance(r, str):
            verdict, note = "error", r
            failed += 1
        else:
            bad = [
                (k, m)
                for k, (g, w, tol) in r.items()
                if w is not None and tol is not None and (m := mismatch(g, w, tol))
            ]
            verdict = "FAIL" if bad else "pass"
            failed += bool(bad)
            note = "; ".join(f"{k}: {m}" for k, m in bad)
            info = [
                (k, m) for k, (g, w, tol) in r.items() if w is not None and tol is None and (m := mismatch(g, w, 0))
            ]
            note += "; ".join(f"{k}: {m}" for k, m in info)
        if args.no_interpret:
            same = "-"
        elif isinstance(interp.get(name), str):
            same = f"interpreter error: {interp[name][:120]}"
        elif isinstance(r, str) or not interp[name]:  # plate's error, or a probe that does not run interpreted
            same = "-"
        else:
            diffs = [
                (k, m) for k, (g, _w, _t) in r.items() if k in interp[name] and (m := mismatch(interp[name][k], g, 0))
            ]
            same = "same" if not diffs else "differs: " + "; ".join(f"{k}: {m}" for k, m in diffs)[:200]
        print(f"| {name} | {feature} | {verdict} | {same} | {note} |", flush=True)
    print(f"\n{len(selected) - failed} of {len(selected)} pass")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
