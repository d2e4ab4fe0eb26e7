"""The simulator's IEEE ops in each rounding mode (sim/rounding.py), float -> float conversion in
each mode (numerics.round_float), int -> float in each mode and the f32 reciprocal square root:
bit-exact against exact rational arithmetic on random operands spread over the whole exponent
range (subnormal results, overflow, near-cancelling sums and fmas). No torch, no Triton."""

from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from exact_rounding import MODE, ieee_reference, round_fraction

from triton_plate_backend.sim import rounding
from triton_plate_backend.sim.numerics import round_float
from triton_plate_backend.sim.sem_vector import UNARY

DTYPES = {"f32": np.float32, "f64": np.float64}
ARITY = {"add": 2, "sub": 2, "mul": 2, "div": 2, "rcp": 1, "sqrt": 1, "fma": 3}
N = 160


def _operands(dtype, n, seed):
    """Random signs and significands; exponents over the whole range, half of them near 0 (so sums
    cancel and products stay finite), a few specials."""
    rng = np.random.default_rng(seed)
    info = np.finfo(dtype)
    wide = rng.uniform(info.minexp - info.nmant, info.maxexp, n)
    narrow = rng.uniform(-30, 30, n)
    e = np.where(rng.random(n) < 0.5, wide, narrow)
    x = rng.choice([-1.0, 1.0], n) * rng.uniform(1, 2, n) * np.exp2(np.floor(e))
    x = np.nan_to_num(x.astype(dtype), posinf=info.max, neginf=-info.max)
    x[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, info.smallest_subnormal]
    return x


@pytest.mark.parametrize("mode", sorted(MODE))
@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("op", sorted(ARITY))
def test_ieee_op_in_each_mode_is_exact(op, dtype, mode):
    np_dtype = DTYPES[dtype]
    xs = [_operands(np_dtype, N, seed) for seed in range(ARITY[op])]
    if op in ("add", "sub", "fma") and ARITY[op] >= 2:  # exact and near cancellation
        with np.errstate(over="ignore"):
            prod = xs[0].astype(np.float64) * (xs[1].astype(np.float64) if op == "fma" else 1.0)
        target = -prod if op in ("add", "fma") else prod
        last = xs[-1]
        with np.errstate(over="ignore"):
            last[10:40] = target[10:40].astype(np_dtype)
            last[40:50] = np.nextafter(last[40:50], np_dtype(np.inf))
    if op == "sqrt":
        xs[0] = np.abs(xs[0])
        xs[0][6] = -1.0
    got = rounding.ieee_op("recip" if op == "rcp" else op, xs, dtype, MODE[mode])
    want = ieee_reference(op, xs, np_dtype, MODE[mode])
    bits = {np.float32: np.uint32, np.float64: np.uint64}[np_dtype]
    same = (got.view(bits) == want.view(bits)) | (np.isnan(got) & np.isnan(want))
    bad = np.nonzero(~same)[0]
    assert not len(bad), [(op, [x[i] for x in xs], got[i], want[i]) for i in bad[:4]]


@pytest.mark.parametrize("mode", sorted(MODE))
def test_f64_to_f32_in_each_mode_is_exact(mode):
    x = _operands(np.float64, 400, 7)
    x[6:40] = np.ldexp(np.random.default_rng(8).uniform(1, 2, 34), np.arange(-160, -126))  # f32 subnormals
    x[40:50] = [3.5e38, -3.5e38, 3.4028235677973366e38, -3.4028235677973366e38, 1e-46, -1e-46, 7e-46, 2**-150, 1, -1]
    with np.errstate(over="ignore"):
        got = round_float(x, "f32", MODE[mode])
    want = np.array([round_fraction(Fraction(v), np.float32, MODE[mode]) if np.isfinite(v) and v else v for v in x])
    want = want.astype(np.float32)
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), [(x[i], got[i], want[i]) for i in np.nonzero(~same)[0][:4]]


@pytest.mark.parametrize("mode", sorted(MODE))
@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("source", ["i32", "u32", "i64", "u64"])
def test_int_to_float_in_each_mode_is_exact(source, dtype, mode):
    signed, bits = source[0] == "i", int(source[1:])
    rng = np.random.default_rng(bits + signed)
    lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    values = [lo, hi, 0, 1, 2**24 + 1, 2**53 + 1, 2**62 + 2**9 + 1] + [
        int(v) for v in rng.integers(lo, hi, 200, dtype=np.uint64 if hi >= 2**63 else np.int64)
    ]
    values = [v for v in values if lo <= v <= hi]
    storage = {32: np.int32, 64: np.int64}[bits]
    x = np.array([v % 2**bits for v in values], np.uint64).astype(np.uint32 if bits == 32 else np.uint64)
    x = x.view(storage) if signed else x
    got = rounding.int_to_float(x, signed, dtype, MODE[mode])
    np_dtype = DTYPES[dtype]
    want = np.array([round_fraction(Fraction(v), np_dtype, MODE[mode]) if v else 0.0 for v in values], np_dtype)
    assert got.dtype == np_dtype and (got == want).all(), [(v, g, w) for v, g, w in zip(values, got, want) if g != w][
        :4
    ]


def test_f32_rsqrt_is_correctly_rounded():
    """v.rsqrt on f32: 1/sqrt(x) lies between the midpoints around the result (exact rationals)."""
    x = np.abs(_operands(np.float32, 3000, 9))
    x = x[np.isfinite(x) & (x > 0)]
    r = UNARY["rsqrt"]["float"](x, "f32")
    for xi, ri in zip(x.tolist(), r.tolist()):
        lo = (Fraction(ri) + Fraction(float(np.nextafter(np.float32(ri), np.float32(0))))) / 2
        hi = (Fraction(ri) + Fraction(float(np.nextafter(np.float32(ri), np.float32(np.inf))))) / 2
        assert lo * lo * Fraction(xi) <= 1 <= hi * hi * Fraction(xi), (xi, ri)


def _f32_edge_values():
    """Every sign and exponent (zeros, subnormals, inf, NaNs with payloads) with significands at and
    next to a tie for every bit position a narrower format can round at, plus random ones."""
    low = {0, 1, 0x7FFFFF, 0x400000, 0x400001, 0x3FFFFF}
    for j in range(23):
        low |= {(1 << j) - 1, 1 << j, (1 << j) + 1, 3 << j, ((1 << j) - 1) | (1 << 22)}
    rng = np.random.default_rng(0)
    m = np.array(sorted(low) + list(rng.integers(0, 1 << 23, 100)), np.uint32)
    bits = (np.arange(256, dtype=np.uint32)[:, None] << np.uint32(23) | m[None, :]).reshape(-1)
    return np.concatenate([bits, bits | np.uint32(0x80000000)]).view(np.float32)


_EDGE_SOURCES = {
    "f32": _f32_edge_values,
    "f16": lambda: np.arange(1 << 16, dtype=np.uint16).view(np.float16),
    "bf16": lambda: np.arange(1 << 16, dtype=np.uint16).view(ml_dtypes.bfloat16),
}


# (source, target, mode) that the float32 path handles: not a source into itself, and not f32 into
# f16/bf16 to nearest even (a plain numpy / ml_dtypes cast, before it)
_NARROWINGS = [
    (source, dtype, mode)
    for source in sorted(_EDGE_SOURCES)
    for dtype in ("f16", "bf16", "f8e4m3fn", "f8e5m2")
    for mode in sorted(MODE)
    if source != dtype and not (source == "f32" and MODE[mode] == "rtne" and dtype in ("f16", "bf16"))
]


@pytest.mark.parametrize("source, dtype, mode", _NARROWINGS)
def test_narrowing_from_f32_and_halves_keeps_the_float64_paths_bits(source, dtype, mode):
    """round_float rounds f32/f16/bf16 into narrower formats in float32 (rtne into fp8: one
    saturating cast); every bit must be the float64 path's, NaN payloads, signed zeros,
    subnormals, ties and saturation included."""
    x = _EDGE_SOURCES[source]()
    with np.errstate(all="ignore"):
        got = round_float(x, dtype, MODE[mode])
        want = round_float(x.astype(np.float64), dtype, MODE[mode])
    assert got.dtype == want.dtype
    u = f"u{got.dtype.itemsize}"
    bad = np.nonzero(got.view(u) != want.view(u))[0]
    assert not len(bad), [(x[i], got.view(u)[i], want.view(u)[i]) for i in bad[:4]]
