"""sim/numerics.py: rounding, conversions, fma, mulhi, predicates, against independent references
(Python integers and fractions, explicit bit manipulation, torch CPU)."""

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from triton_plate_backend.dtypes import NUMPY
from triton_plate_backend.sim import numerics as nx

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

F32_FINITE = st.floats(width=32, allow_nan=False, allow_infinity=False)


def bits32(x):
    return np.asarray(x, np.float32).view(np.uint32)


# ---- round-to-nearest-even, ties --------------------------------------------------------------------
@pytest.mark.parametrize(
    "dtype, ulp_at_one",
    [("f16", 2.0**-10), ("bf16", 2.0**-7), ("f8e4m3fn", 2.0**-3), ("f8e5m2", 2.0**-2)],
)
def test_rtne_ties_go_to_even(dtype, ulp_at_one):
    half = ulp_at_one / 2
    x = np.array([1 + half, 1 + 3 * half, -(1 + half), 2 - half], np.float32)
    got = nx.round_float(x, dtype).astype(np.float64)
    assert got.tolist() == [1.0, 1 + 2 * ulp_at_one, -1.0, 2.0]


@pytest.mark.parametrize("dtype, torch_dtype", [("f16", torch.float16), ("bf16", torch.bfloat16)])
def test_rtne_matches_torch(dtype, torch_dtype):
    rng = np.random.default_rng(1)
    raw = rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    raw = raw[np.isfinite(raw)]
    ours = nx.round_float(raw, dtype).astype(np.float32)
    ref = torch.from_numpy(raw).to(torch_dtype).float().numpy()
    np.testing.assert_array_equal(bits32(ours), bits32(ref))


@pytest.mark.parametrize("dtype, torch_dtype", [("f8e4m3fn", torch.float8_e4m3fn), ("f8e5m2", torch.float8_e5m2)])
def test_fp8_in_range_matches_torch(dtype, torch_dtype):
    fmax = float(ml_dtypes.finfo(nx.NUMPY[dtype]).max)
    x = np.random.default_rng(2).uniform(-fmax, fmax, 5000).astype(np.float32)
    x = np.concatenate([x, x / 1e3, x / 1e6])
    ours = nx.round_float(x, dtype).astype(np.float32)
    ref = torch.from_numpy(x).to(torch_dtype).float().numpy()
    np.testing.assert_array_equal(ours, ref)


def test_fp8_saturates_like_ptx_satfinite():
    x = np.array([464.0, 470.0, 1e9, np.inf, -np.inf, np.nan], np.float32)
    e4 = nx.round_float(x, "f8e4m3fn").astype(np.float32)
    assert e4[:5].tolist() == [448, 448, 448, 448, -448] and np.isnan(e4[5])
    e5 = nx.round_float(np.array([61440.0, 1e9, -np.inf], np.float32), "f8e5m2").astype(np.float32)
    assert e5.tolist() == [57344, 57344, -57344]


def test_ieee_overflow_goes_to_inf_under_rtne():
    got = nx.round_float(np.array([65520.0, -1e10, 65519.0]), "f16").astype(np.float64)
    assert got.tolist() == [np.inf, -np.inf, 65504.0]


def test_f16_rtne_of_tiny_and_overflowing_values_is_numpys_cast():
    """round_float's f16 path rounds values below f16's normal range (and overflowing ones) before numpy's
    cast, which is slow on them; the bits are the cast's: every f32 pattern of the tiny range's edges,
    ties and random bits, zeros, NaN payloads, the overflow boundary; as f32 and as f64, whole and tiny-free."""
    rng = np.random.default_rng(16)
    grid = np.arange(0, 1 << 12, dtype=np.uint32)
    bits = np.concatenate(
        [
            rng.integers(0, 2**32, 1 << 16, dtype=np.uint64).astype(np.uint32),
            0x33000000 + grid - 2048,  # around 2**-25: half the smallest subnormal
            0x387FE000 + grid,  # just below 2**-14, where subnormals end
            0x38800000 - grid,
            0x477FE000 + grid,  # 65504 .. past 65520, where overflow starts
            (0x337FFFFF + (grid << 19)) & 0x7FFFFFFF,  # ties and near-ties of every subnormal exponent
            np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7F800001, 0xFFC00000, 0x7FC02000, 1, 0x80000001]),
        ]
    ).astype(np.uint32)
    bits = np.concatenate([bits, bits ^ np.uint32(0x80000000)])
    x32 = bits.view(np.float32)
    with np.errstate(all="ignore"):
        for x in (x32, x32.astype(np.float64), x32[np.abs(x32) >= 2.0**-14]):
            want = x.astype(np.float16).view(np.uint16)
            got = nx.round_float(x.reshape(2, -1), "f16").reshape(-1).view(np.uint16)
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("mode", ["rtne", "rtz"])
@pytest.mark.parametrize("dtype", nx.FP8)
def test_f32_into_fp8_through_the_rounded_to_odd_table_is_the_direct_rounding(dtype, mode):
    """round_float's f32 -> fp8 lookup (the top 16 bits, the lowest ORed with the rest being nonzero) gives
    _round_f32's bits: every top-16 code with its low half zero, one, a half and all ones (ties, just past
    them, NaNs whose payload is only in the low half), and random patterns."""
    top = np.arange(1 << 16, dtype=np.uint32) << np.uint32(16)
    low = np.array([0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF], np.uint32)
    rng = np.random.default_rng(8)
    bits = np.concatenate([(top[:, None] | low).reshape(-1), rng.integers(0, 2**32, 1 << 14, dtype=np.uint64)])
    x = bits.astype(np.uint32).view(np.float32).reshape(64, -1)
    with np.errstate(all="ignore"):
        want = nx._round_f32(x, nx.FORMATS[dtype], mode, NUMPY[dtype])
        got = nx.round_float(x, dtype, mode)
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


def test_no_double_rounding_from_f64():
    # via float32 this rounds 1 + 2**-8 + 2**-30 -> 1 + 2**-8 (a tie) -> 1.0; correct is 1 + 2**-7
    x = np.array([1 + 2.0**-8 + 2.0**-30])
    assert float(nx.round_float(x, "bf16")[0]) == 1 + 2.0**-7
    assert float(nx.round_float(np.array([448 + 16 + 1e-9]), "f8e4m3fn")[0]) == 448  # saturates, no NaN


# ---- round toward zero -----------------------------------------------------------------------------
def test_rtz_bf16_is_bit_truncation():
    rng = np.random.default_rng(3)
    raw = rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32)
    x = raw.view(np.float32)
    keep = ~np.isnan(x)
    x, raw = x[keep], raw[keep]
    ours = nx.round_float(x, "bf16", "rtz").view(np.uint16).astype(np.uint32)
    np.testing.assert_array_equal(ours, raw >> 16)


def test_rtz_f16_never_rounds_away():
    x = np.random.default_rng(4).standard_normal(20000).astype(np.float32) * np.float32(3e4)
    x = np.concatenate([x, np.array([1e6, -1e6, np.inf, 65519.0, 2.0**-25, -(2.0**-24) * 1.5], np.float32)])
    ours = nx.round_float(x, "f16", "rtz")
    ref = x.astype(np.float16)  # RNE, then step back toward zero where it went away from it
    away = np.abs(ref.astype(np.float64)) > np.abs(x.astype(np.float64))
    ref = np.where(away, np.nextafter(ref, np.float16(0)), ref)
    np.testing.assert_array_equal(ours.view(np.uint16), ref.view(np.uint16))
    assert float(ours[-4]) == np.inf  # inf stays inf; finite overflow saturates (checked by the reference)


# ---- integer -> float --------------------------------------------------------------------------------
def _round_int(x: int, precision: int) -> float:
    """Exact RNE of a Python int to ``precision`` significant bits."""
    m = abs(x)
    if m.bit_length() <= precision:
        return float(x)
    shift = m.bit_length() - precision
    q, r = divmod(m, 1 << shift)
    half = 1 << (shift - 1)
    if r > half or (r == half and q & 1):
        q += 1
    return float(q << shift) * (1 if x >= 0 else -1)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=20))
def test_int64_to_bf16_and_f32_round_once(values):
    x = np.array(values, np.int64)
    assert nx.int_to_float(x, True, "bf16").astype(np.float64).tolist() == [_round_int(v, 8) for v in values]
    assert nx.int_to_float(x, True, "f32").astype(np.float64).tolist() == [_round_int(v, 24) for v in values]


def test_uint64_to_float():
    x = np.array([2**64 - 1, 2**63 + 2**40 + 1, 3], np.uint64)
    got = nx.int_to_float(x, False, "bf16").astype(np.float64).tolist()
    assert got == [_round_int(int(v), 8) for v in x.tolist()]


# ---- float -> integer --------------------------------------------------------------------------------
def test_float_to_int_saturates_and_nan_is_zero():
    x = np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, -2.9, 2.9, 2.0**63, -(2.0**63)])
    assert nx.float_to_int(x, "i64", True).tolist() == [
        0,
        2**63 - 1,
        -(2**63),
        2**63 - 1,
        -(2**63),
        -2,
        2,
        2**63 - 1,
        -(2**63),
    ]
    assert nx.float_to_int(x, "i8", True).tolist() == [0, 127, -128, 127, -128, -2, 2, 127, -128]
    u32 = nx.float_to_int(x, "i32", False).view(np.uint32).tolist()
    assert u32 == [0, 2**32 - 1, 0, 2**32 - 1, 0, 0, 2, 2**32 - 1, 0]
    u64 = nx.float_to_int(np.array([2.0**64, 2.0**63, -1.0]), "i64", False).view(np.uint64).tolist()
    assert u64 == [2**64 - 1, 2**63, 0]


def _float_to_int_saturating(x, dtype, signed):
    """float_to_int's general path (trunc, NaN -> 0, clip), whatever the values' range."""
    lo, hi = nx.int_range(nx.INT_BITS[dtype], signed)
    t = np.trunc(x.astype(np.float64))
    if nx.INT_BITS[dtype] < 64:
        return nx.store_int(np.clip(np.where(np.isnan(t), 0.0, t), lo, hi).astype(np.int64), dtype)
    work, top = (np.int64, 2.0**63) if signed else (np.uint64, 2.0**64)
    v = np.clip(np.where(np.isnan(t), 0.0, t), float(lo), np.nextafter(top, 0)).astype(work)
    return nx.store_int(np.where(t >= top, np.array(hi).astype(work), v), dtype)


@pytest.mark.parametrize("fdtype", [np.float32, np.float64])
@pytest.mark.parametrize("dtype", ["i8", "i16", "i32", "i64"])
@pytest.mark.parametrize("signed", [True, False])
def test_float_to_int_in_range_fast_path_equals_the_saturating_one(fdtype, dtype, signed):
    # arrays all in range take C's cast (64 bits too): each edge of the range alone, then with the whole lot
    lo, hi = nx.int_range(nx.INT_BITS[dtype], signed)
    edges = [float(lo), float(hi + 1), -0.0, 0.5, -0.5, -1.0, 2.9, -2.9, 1e30, -1e30, np.inf, -np.inf, np.nan]
    edges += [float(np.nextafter(fdtype(v), fdtype(0))) for v in (float(lo), float(hi + 1)) if v]
    rng = np.random.default_rng(0)
    cases = [np.array([v], fdtype) for v in edges] + [
        np.array(edges, fdtype),
        (rng.uniform(-1, 1, 1000) * min(2.0**62, float(hi))).astype(fdtype),
    ]
    for x in cases:
        got, want = nx.float_to_int(x, dtype, signed), _float_to_int_saturating(x, dtype, signed)
        assert got.dtype == want.dtype and got.tolist() == want.tolist(), x


# ---- fused multiply-add ------------------------------------------------------------------------------
def _round_fraction_f32(fr: Fraction) -> np.float32:
    """Exact RNE of a rational to float32: pick the nearest of the neighbours of float(fr)."""
    c = np.float32(float(fr))
    cands = {c, np.nextafter(c, np.float32(np.inf)), np.nextafter(c, np.float32(-np.inf))}
    cands = [v for v in cands if np.isfinite(v)]
    best = min(cands, key=lambda v: (abs(Fraction(float(v)) - fr), int(bits32(v)) & 1))
    return np.float32(best)


@settings(max_examples=150, deadline=None)
@given(F32_FINITE, F32_FINITE, F32_FINITE)
def test_fma_f32_rounds_once(a, b, c):
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if abs(exact) > Fraction(float(np.finfo(np.float32).max)):
        return
    got = nx.fma(np.array([a], np.float32), np.array([b], np.float32), np.array([c], np.float32), "f32")[0]
    # an exact zero takes its sign from IEEE rules (the product is exact in float64)
    want = np.float32(np.float64(a) * np.float64(b) + np.float64(c)) if exact == 0 else _round_fraction_f32(exact)
    assert bits32(got) == bits32(want)


@settings(max_examples=150, deadline=None)
@given(st.floats(-1e150, 1e150), st.floats(-1e150, 1e150), st.floats(-1e300, 1e300))
@example(1.5, 1.1498320780359375e-294, 1.1498320780359375e-294)  # subnormal result: CI found a double rounding
@example(2.0**-600, 2.0**-500, 2.0**-1074)
@example(2.0**970, 2.0**40 + 1, -(2.0**1009))  # product beyond the fast path's safe range
def test_fma_f64_rounds_once(a, b, c):
    got = nx.fma64(np.array([a]), np.array([b]), np.array([c]))[0]
    assert got == float(Fraction(a) * Fraction(b) + Fraction(c))


def test_fma_cancellation_case():
    a = np.float32(1 + 2.0**-12)
    c = -np.float32(1 + 2.0**-11)
    got = nx.fma(np.array([a]), np.array([a]), np.array([c]), "f32")[0]
    assert got == np.float32(2.0**-24)  # a*a - c keeps the 2**-24 that a rounded product loses


# ---- integer helpers ---------------------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-(2**63), 2**63 - 1), st.integers(-(2**63), 2**63 - 1)), min_size=1))
def test_mulhi_64(pairs):
    a = np.array([p[0] for p in pairs], np.int64)
    b = np.array([p[1] for p in pairs], np.int64)
    hs = nx.mulhi(a, b, "i64", True).tolist()
    assert hs == [(x * y) >> 64 for x, y in pairs]
    hu = nx.mulhi(a, b, "i64", False).view(np.uint64).tolist()
    assert hu == [((x % 2**64) * (y % 2**64)) >> 64 for x, y in pairs]


def test_mulhi_32():
    a = np.array([-(2**31), 2**31 - 1, -1], np.int32)
    b = np.array([-(2**31), 2**31 - 1, -1], np.int32)
    assert nx.mulhi(a, b, "i32", True).tolist() == [(2**62) >> 32, ((2**31 - 1) ** 2) >> 32, 0]
    assert nx.mulhi(a, b, "i32", False).view(np.uint32).tolist() == [2**30, ((2**31 - 1) ** 2) >> 32, 2**32 - 2]


@pytest.mark.parametrize("dtype", ["i8", "i16", "i32"])
def test_mulhi_narrow_every_sign_and_extreme(dtype):
    """The widening-ufunc path of mulhi for widths up to 32: the high half of every pair of extremes and
    small values, signed and unsigned, in the storage dtype."""
    bits = int(dtype[1:])
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    values = [lo, lo + 1, -2, -1, 0, 1, 2, 3, hi - 1, hi]
    pairs = [(x, y) for x in values for y in values]
    a = np.array([p[0] for p in pairs], NUMPY[dtype])
    b = np.array([p[1] for p in pairs], NUMPY[dtype])
    hs = nx.mulhi(a, b, dtype, True)
    assert hs.dtype == NUMPY[dtype]
    assert hs.tolist() == [(x * y) >> bits for x, y in pairs]
    hu = nx.mulhi(a, b, dtype, False)
    assert hu.dtype == NUMPY[dtype]
    assert hu.view(f"u{bits // 8}").tolist() == [((x % 2**bits) * (y % 2**bits)) >> bits for x, y in pairs]


def test_clz_and_popcount():
    u = np.array([0, 1, 0x80000000, 0x00F0F000, 0xFFFFFFFF], np.uint32)
    assert nx.count_leading_zeros(u, 32).tolist() == [32, 31, 0, 8, 0]
    assert nx.popcount(u).tolist() == [0, 1, 1, 8, 32]
    assert nx.count_leading_zeros(np.array([1], np.uint64), 64).tolist() == [63]


# ---- comparisons -------------------------------------------------------------------------------------
def _llvm_fcmp(pred, a, b):
    unord = a != a or b != b
    rel = {"eq": a == b, "gt": a > b, "ge": a >= b, "lt": a < b, "le": a <= b, "ne": a != b}
    if pred in ("false", "true"):
        return pred == "true"
    if pred == "ord":
        return not unord
    if pred == "uno":
        return unord
    if pred[0] == "o":
        return not unord and rel[pred[1:]]
    return unord or rel[pred[1:]]


@pytest.mark.parametrize("pred", list(nx.FPRED))
def test_fcmp_predicates_follow_llvm(pred):
    vals = [0.0, -0.0, 1.0, -1.0, np.inf, np.nan]
    a = np.array([x for x in vals for _ in vals], np.float32)
    b = np.array([y for _ in vals for y in vals], np.float32)
    got = nx.compare_float(pred, a, b).tolist()
    assert got == [_llvm_fcmp(pred, float(x), float(y)) for x, y in zip(a, b)]


def test_icmp_signed_and_unsigned():
    a, b = np.array([-1, 1], np.int8), np.array([1, -1], np.int8)
    assert nx.compare_int("slt", a, b, "i8").tolist() == [True, False]
    assert nx.compare_int("ult", a, b, "i8").tolist() == [False, True]
    assert nx.compare_int("eq", np.array([True]), np.array([True]), "i1").tolist() == [True]


def test_const_and_words_round_trip():
    assert nx.const_array(2**40 + 7, "i32").tolist() == [7]
    assert nx.const_array(-1.7, "i8").tolist() == [-1]
    assert nx.const_array(0.1, "bf16").astype(np.float32).tolist() == [float(ml_dtypes.bfloat16(0.1))]
    w = nx.to_word(np.array([-3], np.int16), "i16")
    assert w.tolist() == [-3] and nx.from_word(w, "i16").tolist() == [-3]
    fw = nx.to_word(np.array([1.5], np.float32), "f32")
    assert fw.view(np.float64).tolist() == [1.5]
    assert nx.to_word(np.array([True]), "i1").tolist() == [1]


def test_const_scalar_is_const_arrays_number_per_value_and_dtype():
    """The kept conversion answers each number as const_array does, also for numbers equal but apart in bits
    (-0.0 and 0.0, two NaN payloads) or in type (True and 1 both read as 1), asked in either order."""
    nan_a = np.frombuffer(np.array([0x7FF8000000000001], np.uint64).tobytes(), np.float64)[0]
    nan_b = np.frombuffer(np.array([0x7FF8000000000002], np.uint64).tobytes(), np.float64)[0]
    values = [0, 0.0, -0.0, 1, True, 1.0, -1, 2**64 + 5, 5, -1.7, float("inf"), float("-inf"), nan_a, nan_b, 0.1, 300]
    for dtype in ("f32", "f16", "bf16", "f64", "i8", "i32", "i64", "i1"):
        for order in (values, values[::-1]):
            for v in order:
                want = nx.const_array(v, dtype)[0]
                got = nx.const_scalar(v, dtype)
                assert type(got) is type(want)
                assert np.asarray(got).tobytes() == np.asarray(want).tobytes(), (v, dtype)
    with pytest.raises((TypeError, ValueError)):
        nx.const_scalar("x", "i32")


# ---- the formats written out, the dtype table loading ml_dtypes on its first bf16 / fp8 use ---------
@pytest.mark.parametrize("name", ["bf16", "f8e4m3fn", "f8e5m2", "f8e4m3fnuz", "f8e5m2fnuz"])
def test_the_written_out_formats_are_ml_dtypes_finfo(name):
    from triton_plate_backend.dtypes import NUMPY

    fi, fmt = ml_dtypes.finfo(NUMPY[name]), nx.FORMATS[name]
    assert (fmt.precision, fmt.min_exp, fmt.max_finite) == (int(fi.nmant) + 1, int(fi.minexp), float(fi.max))
    assert fmt.has_inf == bool(np.isinf(np.array(np.inf, np.float32).astype(NUMPY[name])))
    assert fmt.saturate == (name != "bf16")


def test_the_dtype_table_sees_every_type_and_names_the_ml_dtypes_ones():
    from triton_plate_backend.dtypes import NUMPY, isa_name

    names = ["i1", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64", "f8e4m3fn", "f8e5m2"]
    assert list(NUMPY)[: len(names)] == names and len(NUMPY) == 13 and "bf16" in NUMPY and "f8" not in NUMPY
    assert NUMPY["bf16"] == np.dtype(ml_dtypes.bfloat16) and NUMPY.get("f8e5m2") == np.dtype(ml_dtypes.float8_e5m2)
    assert NUMPY.get("u8") is None and dict(NUMPY.items()) == {
        k: NUMPY[k] for k in names + ["f8e4m3fnuz", "f8e5m2fnuz"]
    }
    assert [isa_name(NUMPY[k]) for k in NUMPY] == list(NUMPY) and isa_name(np.dtype(np.uint16)) is None
    with pytest.raises(KeyError):
        NUMPY["u8"]
