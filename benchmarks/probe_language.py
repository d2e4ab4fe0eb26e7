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
            bad = [(k, m) for k, (g, w, tol) in r.items() if w is not None and (m := mismatch(g, w, tol))]
            verdict = "FAIL" if bad else "pass"
            failed += bool(bad)
            note = "; ".join(f"{k}: {m}" for k, m in bad)
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
