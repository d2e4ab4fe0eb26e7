"""tl.float8e4b15 end to end: Triton types it i8 in TTIR and plate supplies the conversions
(triton_plate_backend/fp8e4b15.py); kernels compiled through plate's own frontend hooks run in the
simulator and are checked bit for bit against a reference written here with Python fractions."""

from __future__ import annotations

import bisect
import functools
import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
import triton
import triton.language as tl
from codegen_kernels.harness import compile_text, run
from triton._C.libtriton import ir
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from triton_plate_backend.compiler import PLATE_ARCH, WARP_SIZE, PlateBackend, make_ttir

CODES = np.arange(256, dtype=np.uint8)
MAX_ENCODED = 0x7E  # +1.75: conversions saturate here, as CUDA's do (0x7f decodes to 1.875)


# ---- reference (exact rationals) -----------------------------------------------------------------
def ref_value(code: int) -> Fraction:
    """sign, 4 exponent bits (bias 15, 0 = subnormal), 3 mantissa bits; every code finite."""
    exp, man = (code >> 3) & 15, code & 7
    mag = Fraction(man, 8) * Fraction(1, 2**14) if exp == 0 else (1 + Fraction(man, 8)) * Fraction(2) ** (exp - 15)
    return -mag if code & 0x80 else mag


POSITIVE = [(ref_value(c), c) for c in range(MAX_ENCODED + 1)]
VALUES = [v for v, _ in POSITIVE]  # strictly increasing with the code: the nearest codes are x's two neighbours
assert all(a < b for a, b in zip(VALUES, VALUES[1:]))


def ref_encode(x: float, mode: str) -> int:
    """One rounding of x (rtne: nearest, ties to the even code; rtz: toward zero) onto codes 0..0x7e."""
    sign = 0x80 if math.copysign(1.0, x) < 0 else 0
    if math.isnan(x) or math.isinf(x):
        return MAX_ENCODED | sign
    ax = abs(Fraction(x))
    above = bisect.bisect_right(VALUES, ax)  # the codes below it are <= |x| (code 0 is zero: at least one)
    if mode == "rtz":
        return (above - 1) | sign
    neighbours = [c for c in (above - 1, above) if c <= MAX_ENCODED]
    best = min(neighbours, key=lambda c: (abs(VALUES[c] - ax), c & 1))
    return best | sign


def ref_encode_all(xs, mode: str) -> np.ndarray:
    return np.array([ref_encode(float(x), mode) for x in xs], np.uint8)


# ---- kernels, compiled through plate's own codegen hooks -----------------------------------------
@functools.cache
def _program(fn, sig: tuple, const: tuple):
    target = GPUTarget("plate", PLATE_ARCH, WARP_SIZE)
    backend = PlateBackend(target)
    options = backend.parse_options({})
    ctx = ir.context()
    ir.load_dialects(ctx)
    backend.load_dialects(ctx)
    src = ASTSource(fn, signature=dict(sig), constexprs=dict(const))
    mod = src.make_ir(target, options, backend.get_codegen_implementation(options), backend.get_module_map(), ctx)
    return compile_text(str(make_ttir(mod, {}, options)), fn.__name__)[0]


def program(fn, sig: dict, const: dict):
    return _program(fn, tuple(sig.items()), tuple(const.items()))


@triton.jit
def decode_kernel(x, o32, o16, obf, o64, N: tl.constexpr):
    r = tl.arange(0, N)
    v = tl.load(x + r)
    tl.store(o32 + r, v.to(tl.float32))
    tl.store(o16 + r, v.to(tl.float16))
    tl.store(obf + r, v.to(tl.bfloat16))
    tl.store(o64 + r, v.to(tl.float64))


@triton.jit
def encode_kernel(x, o, N: tl.constexpr, ROUND: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(o + r, tl.load(x + r).to(tl.float8e4b15, fp_downcast_rounding=ROUND))


@triton.jit
def round_trip_kernel(x, o, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(o + r, tl.load(x + r).to(tl.float32).to(tl.float8e4b15))


@triton.jit
def scalar_encode_kernel(x, o):
    tl.store(o, tl.load(x).to(tl.float8e4b15))


@triton.jit
def dot_kernel(a, b, o, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    av = tl.load(a + rm[:, None] * K + rk[None, :])
    bv = tl.load(b + rk[:, None] * N + rn[None, :])
    tl.store(o + rm[:, None] * N + rn[None, :], tl.dot(av, bv))


TL_NAME = {np.float32: "fp32", np.float16: "fp16", ml_dtypes.bfloat16: "bf16", np.float64: "fp64", np.int32: "i32"}


def encode(x: np.ndarray, rounding=None) -> np.ndarray:
    n = 1 << max(0, (len(x) - 1).bit_length())
    xp = np.zeros(n, x.dtype)
    xp[: len(x)] = x
    sig = {"x": f"*{TL_NAME[x.dtype.type]}", "o": "*fp8e4b15", "N": "constexpr", "ROUND": "constexpr"}
    prog = program(encode_kernel, sig, {"N": n, "ROUND": rounding})
    (_, out), _ = run(prog, 1, [xp, np.zeros(n, np.uint8)])
    return out[: len(x)]


# ---- decode --------------------------------------------------------------------------------------
def test_every_code_decodes_exactly_to_every_float_type():
    sig = {"x": "*fp8e4b15", "o32": "*fp32", "o16": "*fp16", "obf": "*bf16", "o64": "*fp64", "N": "constexpr"}
    outs = [np.zeros(256, d) for d in (np.float32, np.float16, ml_dtypes.bfloat16, np.float64)]
    (_, *got), _ = run(program(decode_kernel, sig, {"N": 256}), 1, [CODES, *outs])
    want = np.array([float(ref_value(c)) for c in range(256)])  # 4 significant bits: exact in all four
    for g in got:
        np.testing.assert_array_equal(g.astype(np.float64), want)
        np.testing.assert_array_equal(np.signbit(g.astype(np.float64)), CODES >= 0x80)  # -0 stays -0
    assert want[0x7F] == 1.875 and want[0x01] == 2.0**-17 and want[0x08] == 2.0**-14


# ---- encode --------------------------------------------------------------------------------------
def test_round_trip_of_every_code():
    """fp8e4b15 -> fp32 -> fp8e4b15 gives every code back, except 0x7f/0xff: beyond the saturation."""
    sig = {"x": "*fp8e4b15", "o": "*fp8e4b15", "N": "constexpr"}
    (_, got), _ = run(program(round_trip_kernel, sig, {"N": 256}), 1, [CODES, np.zeros(256, np.uint8)])
    want = CODES.copy()
    want[[0x7F, 0xFF]] = [0x7E, 0xFE]
    np.testing.assert_array_equal(got, want)


def _probe_values() -> np.ndarray:
    """Every value, every midpoint (ties) and their float32 neighbours, specials, random magnitudes."""
    vals = sorted({float(v) for v, _ in POSITIVE} | {1.875})
    mids = [(a + b) / 2 for a, b in zip(vals, vals[1:])] + [2.0**-18, 1.8125]
    grid = np.array(vals + mids, np.float32)
    near = np.concatenate([grid, np.nextafter(grid, np.float32(np.inf)), np.nextafter(grid, np.float32(0))])
    rng = np.random.default_rng(15)
    rand = (rng.uniform(1, 2, 3000) * 2.0 ** rng.integers(-30, 4, 3000)).astype(np.float32)
    special = np.array([np.inf, 1e30, 3.0, 2.0, 1.9, 1e-30, 1e-45, np.float32(2.0**-126) / 3], np.float32)
    pos = np.concatenate([near, rand, special])
    return np.concatenate([pos, -pos, np.array([np.nan, -np.nan], np.float32)])


@pytest.mark.parametrize("rounding", [None, "rtne", "rtz"])
def test_fp32_encode_rounds_once_and_saturates(rounding):
    x = _probe_values()
    got = encode(x, rounding)
    want = ref_encode_all(x, rounding or "rtne")
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, [(float(x[i]), hex(got[i]), hex(want[i])) for i in bad[:8]]


def test_ties_go_to_even_and_nan_inf_saturate_with_sign():
    x = np.array([1.0625, 1.1875, 2.0**-18, 3 * 2.0**-18, 1.8125, np.inf, -np.inf, np.nan, -np.nan], np.float32)
    got = encode(x).tolist()
    assert got[:5] == [0x78, 0x7A, 0x00, 0x02, 0x7E]  # 1.0, 1.25, 0, 2**-16, 1.75
    assert got[5:] == [0x7E, 0xFE, 0x7E, 0xFE]


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_narrow_sources_match_the_fp32_path(dtype):
    with np.errstate(over="ignore"):
        x = _probe_values().astype(dtype)
    want = ref_encode_all(x.astype(np.float64), "rtne")
    np.testing.assert_array_equal(encode(x), want)


def test_fp64_source_rounds_once():
    """A tie nudged by less than an fp32 ulp must still round up: a truncation to fp32 followed by
    a second rounding would see an exact tie and go to even (down)."""
    ties = np.array([1.0625, 1.1875 - 2.0**-4, 2.0**-18, 1.8125 - 2.0**-4, 1.5625], np.float64)
    x = np.concatenate([ties + ties * 2.0**-40, ties - ties * 2.0**-40, ties, _probe_values().astype(np.float64)])
    x = np.concatenate([x, -x])
    got = encode(x)
    np.testing.assert_array_equal(got, ref_encode_all(x, "rtne"))
    assert got[0] == 0x79  # 1.0625 * (1 + 2**-40) -> 1.125, not the tie's even 1.0


def test_integer_source():
    x = np.array([0, 1, -1, 2, -3, 1000, -(2**31), 2**31 - 1], np.int32)
    np.testing.assert_array_equal(encode(x), ref_encode_all(x.astype(np.float64), "rtne"))


def test_scalar_conversion():
    prog = program(scalar_encode_kernel, {"x": "*fp32", "o": "*fp8e4b15"}, {})
    (_, out), _ = run(prog, 1, [np.array([-0.3], np.float32), np.zeros(1, np.uint8)])
    assert out[0] == ref_encode(float(np.float32(-0.3)), "rtne")


# ---- dot: Triton upcasts fp8e4b15 operands to fp16 through the same conversion -------------------
def test_dot_of_fp8e4b15_operands():
    m = n = k = 32
    rng = np.random.default_rng(3)
    a, b = (rng.integers(0, 256, s).astype(np.uint8) for s in ((m, k), (k, n)))
    sig = {"a": "*fp8e4b15", "b": "*fp8e4b15", "o": "*fp32", "M": "constexpr", "N": "constexpr", "K": "constexpr"}
    (_, _, out), _ = run(program(dot_kernel, sig, {"M": m, "N": n, "K": k}), 1, [a, b, np.zeros((m, n), np.float32)])
    va, vb = (np.array([float(ref_value(c)) for c in range(256)])[x] for x in (a, b))
    bound = k * 2.0**-24 * (np.abs(va) @ np.abs(vb))  # fp32 accumulation of exact fp16 products
    assert np.all(np.abs(out - va @ vb) <= bound)
