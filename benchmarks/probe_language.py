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
import os
import pickle
import subprocess
import sys
import tempfile
import traceback

import numpy as np
import torch
import triton
import triton.language as tl

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
    return np.array(q, np.int64), np.array([int(a) - qi * int(b) for a, b, qi in zip(x, y, q)], np.int64)


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


# ---- runner -----------------------------------------------------------------------------------------------------
def run_probes(selected):
    """{name: {output: (got, want, tol)} or the error text}."""
    results = {}
    for name, _feature, fn in selected:
        try:
            results[name] = fn()
        except Exception as exc:  # a probe's failure is its result
            text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            results[name] = f"{type(exc).__name__}: {text.splitlines()[-1][:300]}"
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
        elif isinstance(r, str):
            same = "-"
        else:
            diffs = [(k, m) for k, (g, _w, _t) in r.items() if (m := mismatch(interp[name][k], g, 0))]
            same = "same" if not diffs else "differs: " + "; ".join(f"{k}: {m}" for k, m in diffs)[:200]
        print(f"| {name} | {feature} | {verdict} | {same} | {note} |", flush=True)
    print(f"\n{len(selected) - failed} of {len(selected)} pass")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
