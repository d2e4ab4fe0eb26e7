"""The simulator's downcast into every fp8 type (numerics.round_float, what v.fcvt runs over a whole tile) against
an encoder in exact integer arithmetic: every float16 and bfloat16 code and a sample of float32 (random codes,
the midpoints between fp8 neighbours and their float32 neighbours), rtne and rtz. fp8 saturates (overflow and
infinities become the largest finite value), NaN stays NaN; the fnuz types have no -0 and one NaN code, 0x80."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from triton_plate_backend.dtypes import NUMPY
from triton_plate_backend.sim import numerics
from triton_plate_backend.sim.numerics import round_float

# ISA name: (exponent bits, mantissa bits, bias, fnuz)
FP8 = {
    "f8e4m3fn": (4, 3, 7, False),
    "f8e5m2": (5, 2, 15, False),
    "f8e4m3fnuz": (4, 3, 8, True),
    "f8e5m2fnuz": (5, 2, 16, True),
}


def reference(x32: np.ndarray, dtype: str, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """(codes, is NaN) of float32 values rounded into ``dtype``: value = M * 2**E with integers M, E, the
    low bits below the target's unit in the last place dropped and rounded in integers."""
    ebits, mbits, bias, fnuz = FP8[dtype]
    p = mbits + 1
    emin = 1 - bias  # exponent of the smallest normal
    u = x32.view(np.uint32).astype(np.int64)
    sign, e, m = u >> 31, (u >> 23) & 0xFF, u & 0x7FFFFF
    nan, inf = (e == 0xFF) & (m != 0), (e == 0xFF) & (m == 0)
    big = np.where(e == 0, m, m | 0x800000)
    exp = np.where(e == 0, -149, e - 150)
    lead = np.where(big > 0, np.floor(np.log2(np.maximum(big, 1))).astype(np.int64), 0) + exp
    q = np.maximum(lead, emin) - (p - 1)  # exponent of the target's ulp
    shift = np.clip(q - exp, 0, 62)  # < 0 never happens: fp8 has fewer bits than float32 below 2**-149 + 24
    r = big >> shift
    rem = big - (r << shift)
    half = np.where(shift > 0, np.int64(1) << np.maximum(shift - 1, 0), np.int64(1) << 62)
    if mode == "rtne":
        r = r + ((rem > half) | ((rem == half) & (r & 1 == 1)))
    carry = r == (1 << p)  # rounded up to the next binade
    r, q = np.where(carry, r >> 1, r), np.where(carry, q + 1, q)
    normal = r >= (1 << (p - 1))
    mag = np.where(normal, ((q + p - 1 + bias) << mbits) | (r - (1 << (p - 1))), r)
    top = int(np.array(ml_dtypes.finfo(NUMPY[dtype]).max, NUMPY[dtype]).view(np.uint8))
    mag = np.where(inf | (mag > top), top, mag)
    code = np.where((mag == 0) & fnuz, 0, (sign << 7) | mag)  # fnuz: no -0
    return code.astype(np.uint8), nan


def _check(src: np.ndarray, dtype: str, mode: str) -> None:
    got = round_float(src, dtype, mode)
    assert got.dtype == NUMPY[dtype] and got.shape == src.shape
    got, src = got.reshape(-1), src.reshape(-1)
    want, nan = reference(src.astype(np.float32), dtype, mode)
    got_nan = np.isnan(got.astype(np.float32))
    np.testing.assert_array_equal(got_nan, nan)
    if FP8[dtype][3]:
        assert (got.view(np.uint8)[nan] == 0x80).all()
    bad = np.flatnonzero((got.view(np.uint8) != want) & ~nan)
    assert bad.size == 0, (
        f"{bad.size} codes differ, first: {src[bad[0]]!r} -> {got.view(np.uint8)[bad[0]]:#x}, want {want[bad[0]]:#x}"
    )


@pytest.mark.parametrize("path", ["table", "cast"])
@pytest.mark.parametrize("mode", ["rtne", "rtz"])
@pytest.mark.parametrize("dtype", list(FP8))
@pytest.mark.parametrize("source", ["f16", "bf16"])
def test_every_16_bit_value_rounds_into_fp8_exactly(source, dtype, mode, path, monkeypatch):
    if path == "cast":  # what a tile of fewer than _TABLE_FROM elements takes
        monkeypatch.setattr(numerics, "_TABLE_FROM", 1 << 17)
    src = np.arange(1 << 16, dtype=np.uint16).view(NUMPY[source])
    _check(src, dtype, mode)
    _check(src.reshape(256, 256)[:, ::3], dtype, mode)  # a tile's strided view


@pytest.mark.parametrize("mode", ["rtne", "rtz"])
@pytest.mark.parametrize("dtype", list(FP8))
def test_float32_rounds_into_fp8_exactly(dtype, mode):
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 1 << 32, 1 << 18, dtype=np.uint64).astype(np.uint32)
    fp8 = np.arange(256, dtype=np.uint8).view(NUMPY[dtype]).astype(np.float64)
    finite = np.sort(fp8[np.isfinite(fp8)])
    mid = ((finite[1:] + finite[:-1]) / 2).astype(np.float32)  # exact: fp8 neighbours are close in float32
    top = float(finite[-1])
    edges = np.array([top, top * 1.06, top * 2, np.inf, -np.inf, np.nan, 0.0, -0.0, 2.0**-149], np.float32)
    near = np.concatenate([mid, np.nextafter(mid, np.float32(np.inf)), np.nextafter(mid, np.float32(-np.inf))])
    src = np.concatenate([codes.view(np.float32), near, -near, edges])
    _check(src, dtype, mode)
