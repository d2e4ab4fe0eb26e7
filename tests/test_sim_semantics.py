"""SEMANTICS rules, family by family, driven one instruction at a time through a Context, against
numpy / torch-CPU / Python-integer references, including the edge cases the NOTES table defines."""

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
import torch

from triton_plate_backend.dtypes import NUMPY
from triton_plate_backend.errors import IsaError, SimulatorError
from triton_plate_backend.isa.program import Arg, Inst, Program, Tile
from triton_plate_backend.isa.table import ISA
from triton_plate_backend.sim import sem_vector
from triton_plate_backend.sim.executor import new_context
from triton_plate_backend.sim.memory import DeviceMemory
from triton_plate_backend.sim.semantics import HALT, SEMANTICS, Branch, DeviceAssertionError

_UNIT_PREFIXES = ("s", "v", "m", "dma", "atom", "dbg")


class Bench:
    """Tiles laid out in SRAM, a context over P programs, and one-instruction runs."""

    def __init__(self, *tiles, P=2, grid=None, args=(), arg_types=(), memory=None, printer=None):
        addr, out = 0, []
        for spec in tiles:
            if isinstance(spec, Tile):
                out.append(spec)
                continue
            dtype, shape = spec[0], tuple(spec[1])
            out.append(Tile(addr, dtype, shape))
            addr += -(-max(int(np.prod(shape)), 1) * NUMPY[dtype].itemsize // 64) * 64
        self.program = Program("bench", tiles=out, consts=[], args=[Arg(f"a{i}", t) for i, t in enumerate(arg_types)])
        self.ctx = new_context(self.program, grid or (P,), args, memory, "plate-mini", printer=printer)
        self.P = self.ctx.P

    def set(self, t, values):
        np.copyto(self.ctx.view(t), np.asarray(values).astype(self.ctx.view(t).dtype))
        return self

    def get(self, t):
        return self.ctx.read(t).copy()

    def k(self, value):
        self.program.consts.append(value)
        return len(self.program.consts) - 1

    def run(self, text, *operands):
        parts = text.split(".")
        n = 2 if parts[0] in _UNIT_PREFIXES else 1
        mnemonic, suffixes = ".".join(parts[:n]), tuple(parts[n:])
        with np.errstate(all="ignore"):
            return SEMANTICS[mnemonic](self.ctx, Inst(mnemonic, suffixes, tuple(operands)))


def ulp_distance(a, b):
    """|a - b| in float32 units in the last place (0 for equal values, NaN == NaN)."""
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    ia, ib = (x.view(np.int32).astype(np.int64) for x in (a, b))
    ia = np.where(ia < 0, -(2**31) - ia, ia)
    ib = np.where(ib < 0, -(2**31) - ib, ib)
    return np.where(np.isnan(a) & np.isnan(b), 0, np.abs(ia - ib))


def test_semantics_cover_every_isa_row():
    assert set(SEMANTICS) == set(ISA)
    assert all(callable(f) for f in SEMANTICS.values())


# ---- integers --------------------------------------------------------------------------------------
def _wrap(v, bits):
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >= 1 << (bits - 1) else v


def _tdiv(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


INT_REF = {  # Python-integer definitions of the NOTES table
    "add": lambda a, b, w: _wrap(a + b, w),
    "sub": lambda a, b, w: _wrap(a - b, w),
    "mul": lambda a, b, w: _wrap(a * b, w),
    "divs": lambda a, b, w: -1 if b == 0 else _wrap(_tdiv(a, b), w),
    "rems": lambda a, b, w: a if b == 0 else _wrap(a - _tdiv(a, b) * b, w),
    "divu": lambda a, b, w: _wrap(-1 if b % 2**w == 0 else (a % 2**w) // (b % 2**w), w),
    "remu": lambda a, b, w: a if b % 2**w == 0 else _wrap((a % 2**w) % (b % 2**w), w),
    "and": lambda a, b, w: a & b,
    "or": lambda a, b, w: a | b,
    "xor": lambda a, b, w: a ^ b,
    "shl": lambda a, b, w: 0 if b % 2**w >= w else _wrap(a << (b % 2**w), w),
    "shru": lambda a, b, w: 0 if b % 2**w >= w else _wrap((a % 2**w) >> (b % 2**w), w),
    "shrs": lambda a, b, w: a >> min(b % 2**w, w - 1),
    "maxs": lambda a, b, w: max(a, b),
    "mins": lambda a, b, w: min(a, b),
    "maxu": lambda a, b, w: _wrap(max(a % 2**w, b % 2**w), w),
    "minu": lambda a, b, w: _wrap(min(a % 2**w, b % 2**w), w),
    "mulhis": lambda a, b, w: _wrap((a * b) >> w, w),
    "mulhiu": lambda a, b, w: _wrap(((a % 2**w) * (b % 2**w)) >> w, w),
}


def _int_operands(bits, n=64):
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    edge = [0, 1, -1, 2, lo, hi, lo + 1, bits, bits + 1, bits - 1, 3, -7]
    rng = np.random.default_rng(bits)
    rand = rng.integers(lo, hi, n, endpoint=True).tolist()
    pairs = [(a, b) for a in edge for b in edge] + list(zip(rand, rng.permutation(rand).tolist()))
    pairs += [(a, int(rng.integers(0, bits + 2))) for a in rand]  # shift amounts around the width
    return pairs[: len(pairs) // 2 * 2]


@pytest.mark.parametrize("dtype, bits", [("i8", 8), ("i32", 32), ("i64", 64)])
@pytest.mark.parametrize("op", sorted(INT_REF))
def test_integer_binary_matches_python_integers(op, dtype, bits):
    pairs = _int_operands(bits)
    n = len(pairs) // 2
    b = Bench((dtype, [n]), (dtype, [n]), (dtype, [n]), P=2)
    b.set(1, np.array([p[0] for p in pairs]).reshape(2, n)).set(2, np.array([p[1] for p in pairs]).reshape(2, n))
    b.run(f"v.{op}", 0, 1, 2)
    assert b.get(0).reshape(-1).tolist() == [INT_REF[op](x, y, bits) for x, y in pairs]


@pytest.mark.parametrize("dtype, bits", [("i8", 8), ("i16", 16), ("i32", 32), ("i64", 64)])
@pytest.mark.parametrize("op", ["divs", "rems", "divu", "remu"])
@pytest.mark.parametrize("divisors", ["one", "positive", "one negative", "one zero"])
def test_divisions_of_indices_by_sizes_match_python_integers(op, dtype, bits, divisors):
    """Nonnegative dividends over positive divisors (an index over a size) take numpy's floor division, by one
    integer when every lane divides by the same; one negative dividend or divisor, or a zero divisor, among them
    keeps the general path: the same values either way."""
    n = 64
    rng = np.random.default_rng(bits)
    hi = 2 ** (bits - 1) - 1
    a = [0, 1, hi, hi - 1, *rng.integers(0, hi, n - 4, endpoint=True).tolist()]
    b_vals = [7] * n if divisors == "one" else [hi, 1, *rng.integers(1, min(hi, 1000), n - 2).tolist()]
    if divisors == "one negative":
        a[5] = -a[5] - 1
        b_vals[6] = -3
    if divisors == "one zero":
        b_vals[7] = 0
    b = Bench((dtype, [n]), (dtype, [n]), (dtype, [n]), P=1)
    b.set(1, np.array(a).reshape(1, n)).set(2, np.array(b_vals).reshape(1, n))
    b.run(f"v.{op}", 0, 1, 2)
    assert b.get(0).reshape(-1).tolist() == [INT_REF[op](x, y, bits) for x, y in zip(a, b_vals)]


@pytest.mark.parametrize("dtype, bits", [("i8", 8), ("i16", 16), ("i32", 32), ("i64", 64)])
@pytest.mark.parametrize("op", ["shl", "shru", "shrs"])
def test_shifts_with_every_amount_below_the_width_match_python_integers(op, dtype, bits):
    """The one-ufunc path (no amount to clamp) against the same definitions."""
    rng = np.random.default_rng(bits)
    a = rng.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1, 64, endpoint=True).tolist()
    amounts = [0, bits - 1, *rng.integers(0, bits, 62).tolist()]
    b = Bench((dtype, [32]), (dtype, [32]), (dtype, [32]), P=2)
    b.set(1, np.array(a).reshape(2, 32)).set(2, np.array(amounts).reshape(2, 32))
    b.run(f"v.{op}", 0, 1, 2)
    assert b.get(0).reshape(-1).tolist() == [INT_REF[op](x, y, bits) for x, y in zip(a, amounts)]
    b.run(f"v.{op}", 1, 1, 2)  # in place
    assert b.get(1).reshape(-1).tolist() == [INT_REF[op](x, y, bits) for x, y in zip(a, amounts)]


@pytest.fixture(params=["compiled", "numpy"])
def select_impl(request, monkeypatch):
    """v.select's one-pass C code (sim/_tiles, when built) and its numpy reference, each."""
    if request.param == "compiled" and sem_vector._tiles is None:
        pytest.skip("sim._tiles is not built (setup.py build_ext)")
    monkeypatch.setattr(sem_vector, "COMPILED_SELECT", request.param == "compiled")
    return request.param


@pytest.mark.parametrize("share", [0.0, 0.02, 0.5, 0.97, 1.0])  # one side whole, few of one side, mixed
@pytest.mark.parametrize("dtype", ["f32", "bf16", "i8", "i64"])
def test_select_keeps_every_bit_whatever_the_condition_and_aliasing(dtype, share, select_impl):
    n = 256
    rng = np.random.default_rng(int(share * 100))
    bits = np.dtype(f"u{NUMPY[dtype].itemsize}")
    raw_a = rng.integers(0, np.iinfo(bits).max, (2, n), dtype=bits, endpoint=True)
    raw_b = rng.integers(0, np.iinfo(bits).max, (2, n), dtype=bits, endpoint=True)
    if dtype == "f32":  # NaN payloads and -0.0 pass through untouched
        raw_a[0, :3] = [0x7FC00001, 0xFFFFFFFF, 0x80000000]
    cond = rng.random((2, n)) < share
    want = np.where(cond, raw_a, raw_b)
    for d, a, b_ in [(0, 2, 3), (2, 2, 3), (3, 2, 3)]:  # distinct, d == a, d == b
        b = Bench((dtype, [n]), ("i1", [n]), (dtype, [n]), (dtype, [n]), P=2).set(1, cond)
        b.ctx.view(2).view(bits)[...] = raw_a
        b.ctx.view(3).view(bits)[...] = raw_b
        b.run("v.select", d, 1, a, b_)
        np.testing.assert_array_equal(b.ctx.view(d).view(bits), want)


@pytest.mark.parametrize("dtype", ["f32", "i8", "i16"])
def test_select_takes_any_nonzero_condition_byte_as_true(dtype, select_impl):
    """An i1 byte may hold any bits (a load or a bitcast writes them): nonzero selects a."""
    n = 64
    bits = np.dtype(f"u{NUMPY[dtype].itemsize}")
    rng = np.random.default_rng(5)
    raw_c = rng.choice(np.array([0, 1, 2, 0x80, 0xFF], np.uint8), (2, n))
    raw_a = rng.integers(0, np.iinfo(bits).max, (2, n), dtype=bits, endpoint=True)
    raw_b = rng.integers(0, np.iinfo(bits).max, (2, n), dtype=bits, endpoint=True)
    for d, a, b_ in [(0, 2, 3), (2, 2, 3), (3, 2, 3)]:
        b = Bench((dtype, [n]), ("i1", [n]), (dtype, [n]), (dtype, [n]), P=2)
        b.ctx.view(1).view(np.uint8)[...] = raw_c
        b.ctx.view(2).view(bits)[...] = raw_a
        b.ctx.view(3).view(bits)[...] = raw_b
        b.run("v.select", d, 1, a, b_)
        np.testing.assert_array_equal(b.ctx.view(d).view(bits), np.where(raw_c != 0, raw_a, raw_b))


@pytest.mark.parametrize("dtype, bits", [("i8", 8), ("i16", 16), ("i32", 32), ("i64", 64)])
def test_every_integer_compare_writes_0_or_1_bytes_of_python_comparisons(dtype, bits):
    """v.cmpi computes into the i1 tile's bytes (whatever they held before): signed and unsigned orders."""
    rng = np.random.default_rng(bits)
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    a = [lo, hi, -1, 0, 1, *rng.integers(lo, hi, 59, endpoint=True).tolist()]
    b_vals = [hi, lo, 1, 0, -1, *rng.integers(lo, hi, 59, endpoint=True).tolist()]
    b_vals[10:20] = a[10:20]
    refs = {
        "eq": lambda x, y: x == y,
        "ne": lambda x, y: x != y,
        "slt": lambda x, y: x < y,
        "sle": lambda x, y: x <= y,
        "sgt": lambda x, y: x > y,
        "sge": lambda x, y: x >= y,
        "ult": lambda x, y: x % 2**bits < y % 2**bits,
        "ule": lambda x, y: x % 2**bits <= y % 2**bits,
        "ugt": lambda x, y: x % 2**bits > y % 2**bits,
        "uge": lambda x, y: x % 2**bits >= y % 2**bits,
    }
    b = Bench(("i1", [32]), (dtype, [32]), (dtype, [32]), P=2)
    b.set(1, np.array(a).reshape(2, 32)).set(2, np.array(b_vals).reshape(2, 32))
    for pred, ref in refs.items():
        b.ctx.view(0).view(np.uint8)[...] = 0xAA
        b.run(f"v.cmpi.{pred}", 0, 1, 2)
        got = b.ctx.view(0).view(np.uint8).reshape(-1).tolist()
        assert got == [int(ref(x, y)) for x, y in zip(a, b_vals)], pred


@pytest.mark.parametrize("dtype", ["f32", "i8", "i64"])
def test_select_into_a_destination_that_overlaps_a_side_in_part_or_a_broadcast_side(dtype, select_impl):
    """d shifted by a few elements against a or b (SRAM reuse can overlap tiles in part), and b a
    stride-0 constant: np.where of the operands as they were before the write, bit for bit."""
    n, size = 64, NUMPY[dtype].itemsize
    bits = np.dtype(f"u{size}")
    rng = np.random.default_rng(3)
    cond = rng.random((2, n)) < 0.5
    region = 3 * n * size + 64
    for d_off, a_off, b_off, b_stride in [
        (8, 0, 2 * n, 1),  # d over a's tail
        (0, 8, 2 * n, 1),  # d over a's head
        (2 * n - 8, 0, 2 * n, 1),  # d over b's head
        (2 * n + 8, 0, 2 * n, 1),  # d over b's tail
        (0, n + 8, 2 * n, 0),  # b a broadcast constant
        (n // 2, 0, n, 1),  # d over a's tail and b's head
    ]:
        tiles = [
            Tile(region, "i1", (n,)),
            Tile(d_off * size, dtype, (n,)),
            Tile(a_off * size, dtype, (n,)),
            Tile(b_off * size, dtype, (n,), (b_stride,)),
        ]
        b = Bench(*tiles, P=2)
        raw = rng.integers(0, 256, (2, region), dtype=np.uint8)
        b.ctx.sram[:, :region] = raw
        b.set(0, cond)
        want = np.where(cond, b.ctx.view(2).view(bits).copy(), b.ctx.view(3).view(bits).copy())
        b.run("v.select", 1, 0, 2, 3)
        np.testing.assert_array_equal(b.ctx.view(1).view(bits), want, err_msg=f"d@{d_off} a@{a_off} b@{b_off}")


@pytest.mark.parametrize("dtype", ["i8", "f16", "f32", "i64"])
def test_select_with_strided_sides_matches_np_where_bit_for_bit(dtype, select_impl):
    """Sides with strides of their own (a reduction tree's even/odd halves, a flipped view, a column, a
    broadcast row) into a contiguous destination apart from them: np.where of the side views."""
    size = NUMPY[dtype].itemsize
    bits = np.dtype(f"u{size}")
    rng = np.random.default_rng(size)
    src = Tile(0, dtype, (3, 4, 16))  # the tree's source tile, viewed below
    base = 3 * 4 * 16 * size
    cases = [  # (shape, a: (offset in elements, strides), b: (offset, strides))
        ((3, 4, 8), (0, (64, 16, 2)), (1, (64, 16, 2))),  # even and odd halves of the last axis
        ((3, 2, 16), (0, (64, 32, 1)), (16, (64, 32, 1))),  # even and odd rows
        ((3, 4, 8), (15, (64, 16, -2)), (1, (64, 16, 2))),  # a flipped half against a half
        ((4, 3), (5, (16, 64)), (0, (0, 1))),  # a transposed column block against a broadcast row
        ((48,), (0, (4,)), (2, (4,))),  # one axis, stride 4
    ]
    for shape, (a_off, a_st), (b_off, b_st) in cases:
        numel = int(np.prod(shape))
        tiles = [
            src,
            Tile(base, "i1", shape),
            Tile(base + -(-numel // 64) * 64, dtype, shape),  # d, apart from the source and the condition
            Tile(a_off * size, dtype, shape, a_st),
            Tile(b_off * size, dtype, shape, b_st),
        ]
        b = Bench(*tiles, P=3)
        b.ctx.sram[...] = rng.integers(0, 256, b.ctx.sram.shape, np.uint8)
        b.ctx.view(1).view(np.uint8)[...] = rng.choice(np.array([0, 1, 2, 0xFF], np.uint8), (3, *shape))
        cond = b.ctx.view(1).view(np.uint8) != 0
        want = np.where(cond, b.ctx.view(3).view(bits).copy(), b.ctx.view(4).view(bits).copy())
        b.run("v.select", 2, 1, 3, 4)
        np.testing.assert_array_equal(b.ctx.view(2).view(bits), want, err_msg=f"{shape} a{a_st} b{b_st}")


def test_select_with_strided_sides_of_more_dims_than_the_c_code_takes(select_impl):
    """tl.sort's hypercube of a broadcast tile: 10 dims of 2 whose strides alternate 0 and not, which no fold
    merges below _tiles.select_strided's 8 (it raised ValueError); and 10 that fold to 1: np.where's bits."""
    rng = np.random.default_rng(10)
    shape = (2,) * 10
    alternating = (16, 0, 8, 0, 4, 0, 2, 0, 1, 0)
    row_major = tuple(2**k for k in range(9, -1, -1))
    for a_st, b_st in ((alternating, alternating), (row_major, row_major)):
        b = Bench(
            Tile(0, "i32", (1024,)), Tile(4096, "i1", shape), Tile(8192, "i32", shape),
            Tile(0, "i32", shape, a_st), Tile(4, "i32", shape, b_st),
        )  # fmt: skip
        b.ctx.sram[...] = rng.integers(0, 256, b.ctx.sram.shape, np.uint8)
        cond = b.ctx.view(1).view(np.uint8) != 0
        want = np.where(cond, b.ctx.view(3).view(np.uint32).copy(), b.ctx.view(4).view(np.uint32).copy())
        b.run("v.select", 2, 1, 3, 4)
        np.testing.assert_array_equal(b.ctx.view(2).view(np.uint32), want, err_msg=str(a_st))


def test_select_with_strided_sides_runs_the_numpy_code_under_a_tiles_built_before_select_strided(monkeypatch):
    """A _tiles module without select_strided (an older build): the strided select falls back, same bits."""
    if sem_vector._tiles is None:
        pytest.skip("sim._tiles is not built (setup.py build_ext)")
    old = type("OldTiles", (), {"select": staticmethod(sem_vector._tiles.select)})
    monkeypatch.setattr(sem_vector, "_tiles", old)
    rng = np.random.default_rng(11)
    b = Bench(
        Tile(0, "f32", (2, 16)), Tile(128, "i1", (2, 8)), Tile(192, "f32", (2, 8)),
        Tile(0, "f32", (2, 8), (16, 2)), Tile(4, "f32", (2, 8), (16, 2)),
    )  # fmt: skip
    b.ctx.sram[...] = rng.integers(0, 256, b.ctx.sram.shape, np.uint8)
    want = np.where(b.ctx.view(1).view(np.uint8) != 0, b.ctx.view(3).view(np.uint32), b.ctx.view(4).view(np.uint32))
    b.run("v.select", 2, 1, 3, 4)
    np.testing.assert_array_equal(b.ctx.view(2).view(np.uint32), want)


@pytest.mark.parametrize("op, ref", [("and", np.logical_and), ("or", np.logical_or), ("xor", np.logical_xor)])
def test_i1_logic_takes_any_nonzero_byte_as_true_and_writes_0_or_1(op, ref):
    """v.and/or/xor on i1 tiles whose bytes hold any bits (a load or a bitcast writes them), in place too."""
    rng = np.random.default_rng(7)
    raw = rng.choice(np.array([0, 1, 2, 0x80, 0xFE, 0xFF], np.uint8), (3, 2, 40))
    want = ref(raw[1] != 0, raw[2] != 0).astype(np.uint8)
    for d in (0, 1, 2):
        b = Bench(("i1", [40]), ("i1", [40]), ("i1", [40]), P=2)
        for t in range(3):
            b.ctx.view(t).view(np.uint8)[...] = raw[t]
        b.run(f"v.{op}", d, 1, 2)
        np.testing.assert_array_equal(b.ctx.view(d).view(np.uint8), want)


@pytest.mark.parametrize("dtype", ["f16", "f32", "f64"])
def test_every_float_compare_writes_0_or_1_bytes_of_llvm_fcmp(dtype):
    """v.cmpf's predicates against LLVM's fcmp on Python floats: ordered ones false on a NaN, unordered
    ones true; -0.0 == +0.0; whatever the result tile's bytes held before."""
    specials = [math.nan, -math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0, 1.5, 65504.0]
    x = np.array([p for p in specials for _ in specials], NUMPY[dtype])
    y = np.array([q for _ in specials for q in specials], NUMPY[dtype])
    n = x.size // 2
    ordered = {
        "oeq": lambda p, q: p == q,
        "ogt": lambda p, q: p > q,
        "oge": lambda p, q: p >= q,
        "olt": lambda p, q: p < q,
        "ole": lambda p, q: p <= q,
        "one": lambda p, q: p < q or p > q,
    }
    b = Bench(("i1", [n]), (dtype, [n]), (dtype, [n]), P=2)
    b.ctx.view(1)[...] = x.reshape(2, n)
    b.ctx.view(2)[...] = y.reshape(2, n)
    pairs = [(float(p), float(q)) for p, q in zip(x, y)]
    for pred, fn in ordered.items():
        for name, want in [(pred, [fn(p, q) for p, q in pairs]), ("u" + pred[1:], None)]:
            if want is None:  # the unordered form: true on a NaN, else the ordered one
                want = [math.isnan(p) or math.isnan(q) or fn(p, q) for p, q in pairs]
            b.ctx.view(0).view(np.uint8)[...] = 0xAA
            b.run(f"v.cmpf.{name}", 0, 1, 2)
            assert b.ctx.view(0).view(np.uint8).reshape(-1).tolist() == [int(w) for w in want], name


def test_i1_arithmetic_wraps_mod_2():
    b = Bench(("i1", [4]), ("i1", [4]), ("i1", [4]), P=1)
    b.set(1, [[0, 1, 0, 1]]).set(2, [[0, 0, 1, 1]])
    b.run("v.add", 0, 1, 2)
    assert b.get(0).tolist() == [[False, True, True, False]]
    b.run("v.and", 0, 1, 2)
    assert b.get(0).tolist() == [[False, False, False, True]]


def test_integer_unary():
    vals = [0, 1, -1, -128, 127, 0x10]
    b = Bench(("i8", [6]), ("i8", [6]), P=1).set(1, [vals])
    expect = {
        "neg": [_wrap(-v, 8) for v in vals],
        "abs": [_wrap(abs(v), 8) for v in vals],
        "not": [~v for v in vals],
        "popc": [bin(v % 256).count("1") for v in vals],
        "clz": [8 - (v % 256).bit_length() for v in vals],
    }
    for op, want in expect.items():
        b.run(f"v.{op}", 0, 1)
        assert b.get(0)[0].tolist() == want, op


def test_float_ops_on_integers_are_isa_errors():
    b = Bench(("i32", [4]), ("i32", [4]), ("i32", [4]))
    with pytest.raises(IsaError, match="float"):
        b.run("v.sqrt", 0, 1)
    with pytest.raises(IsaError, match="share dtype"):
        Bench(("f32", [4]), ("i32", [4]), ("i32", [4])).run("v.add", 0, 1, 2)


# ---- floats ----------------------------------------------------------------------------------------
SPECIAL = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-40, 3.0, 0.1, 65504.0, 1e30]

TORCH_BINARY = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "remf": torch.fmod,
    "maxnum": torch.fmax,
    "minnum": torch.fmin,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "copysign": torch.copysign,
}
TORCH_TYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def _torch_same_bits(x, dtype):
    """A torch tensor with exactly x's bits (torch's own f32 -> bf16 cast flips NaN signs)."""
    if dtype == "bf16":
        return torch.from_numpy(x.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(x.copy())


def _float_pairs(seed=0, n=200):
    rng = np.random.default_rng(seed)
    a = [x for x in SPECIAL for _ in SPECIAL] + (rng.standard_normal(n) * 10).tolist()
    b = [y for _ in SPECIAL for y in SPECIAL] + (rng.standard_normal(n) * 10).tolist()
    return np.array(a), np.array(b)


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("op", sorted(TORCH_BINARY))
def test_exact_float_binary_matches_torch_bitwise(op, dtype):
    a, b = _float_pairs()
    npdt = NUMPY[dtype]
    with np.errstate(over="ignore"):
        a, b = a.astype(npdt), b.astype(npdt)
    n = a.size
    bench = Bench((dtype, [n]), (dtype, [n]), (dtype, [n]), P=1).set(1, a[None]).set(2, b[None])
    bench.run(f"v.{op}", 0, 1, 2)
    ta, tb = (_torch_same_bits(x, dtype) for x in (a, b))
    ref = TORCH_BINARY[op](ta, tb).float().numpy()
    got = bench.get(0)[0].astype(np.float32)
    same = (got.view(np.uint32) == ref.view(np.uint32)) | (np.isnan(got) & np.isnan(ref))
    if "max" in op or "min" in op:  # torch leaves the sign of max(-0, +0) open; we define it below
        same |= (got == 0) & (ref == 0)
    if op == "remf":  # torch's vectorized fmod flushes subnormal divisors (NaN); IEEE fmod does not
        tiny = np.abs(b.astype(np.float32)) < np.finfo(np.float32).tiny
        same |= tiny & (b != 0)
        with np.errstate(invalid="ignore"):
            exact = np.fmod(a.astype(np.float64), b.astype(np.float64))[tiny & (b != 0)]
        assert np.array_equal(got[tiny & (b != 0)], exact.astype(NUMPY[dtype]).astype(np.float32), equal_nan=True)
    assert same.all(), (a[~same][:4], b[~same][:4], got[~same][:4], ref[~same][:4])


def test_maximum_minimum_order_signed_zeros_and_nan():
    b = Bench(("f32", [4]), ("f32", [4]), ("f32", [4]), P=1)
    b.set(1, [[-0.0, 0.0, np.nan, 1.0]]).set(2, [[0.0, -0.0, 1.0, np.nan]])
    b.run("v.maximum", 0, 1, 2)
    mx = b.get(0)[0]
    assert not np.signbit(mx[0]) and not np.signbit(mx[1]) and np.isnan(mx[2:]).all()
    b.run("v.minimum", 0, 1, 2)
    mn = b.get(0)[0]
    assert np.signbit(mn[0]) and np.signbit(mn[1]) and np.isnan(mn[2:]).all()
    b.run("v.maxnum", 0, 1, 2)
    mx = b.get(0)[0]
    assert mx[2:].tolist() == [1.0, 1.0] and not np.signbit(mx[0]) and not np.signbit(mx[1])
    b.run("v.minnum", 0, 1, 2)
    mn = b.get(0)[0]
    assert mn[2:].tolist() == [1.0, 1.0] and np.signbit(mn[0]) and np.signbit(mn[1])


@pytest.mark.parametrize("op, ref", [("pow", np.power), ("atan2", np.arctan2), ("hypot", np.hypot)])
def test_wide_binary_within_one_ulp(op, ref):
    rng = np.random.default_rng(5)
    a = np.abs(rng.standard_normal(512)).astype(np.float32) * 3
    c = rng.standard_normal(512).astype(np.float32) * 3
    b = Bench(("f32", [512]), ("f32", [512]), ("f32", [512]), P=1).set(1, a[None]).set(2, c[None])
    b.run(f"v.{op}", 0, 1, 2)
    want = torch.from_numpy(ref(a.astype(np.float64), c.astype(np.float64))).float().numpy()
    assert ulp_distance(b.get(0)[0], want).max() <= 1


def test_nextafter_steps_in_the_tile_type():
    b = Bench(("bf16", [3]), ("bf16", [3]), ("bf16", [3]), P=1)
    b.set(1, [[1.0, 0.0, 1.0]]).set(2, [[2.0, -1.0, 1.0]])
    b.run("v.nextafter", 0, 1, 2)
    got = b.get(0)[0].astype(np.float64)
    assert got[0] == 1 + 2.0**-7 and got[1] < 0 and got[1] > -1e-38 and got[2] == 1.0


TRANSCENDENTAL = {
    "exp": torch.exp,
    "exp2": torch.exp2,
    "expm1": torch.expm1,
    "log": torch.log,
    "log2": torch.log2,
    "log10": torch.log10,
    "log1p": torch.log1p,
    "sin": torch.sin,
    "cos": torch.cos,
    "tan": torch.tan,
    "asin": torch.asin,
    "acos": torch.acos,
    "atan": torch.atan,
    "sinh": torch.sinh,
    "cosh": torch.cosh,
    "tanh": torch.tanh,
    "asinh": torch.asinh,
    "acosh": torch.acosh,
    "atanh": torch.atanh,
    "erf": torch.erf,
    "erfc": torch.erfc,
    "lgamma": torch.lgamma,
    "rsqrt": torch.rsqrt,
    "sqrt": torch.sqrt,
    "recip": torch.reciprocal,
}


@pytest.mark.parametrize("op", sorted(TRANSCENDENTAL))
def test_transcendentals_within_one_ulp_of_fp64_reference(op):
    """Measured: every op is within 1 ulp (fp32) of torch's fp64 result rounded to fp32; the
    computation is fp64 then one rounding, so it is almost always the correctly rounded value."""
    rng = np.random.default_rng(6)
    x = np.concatenate([rng.uniform(-0.99, 0.99, 300), rng.uniform(1.01, 20, 300), [0.0, -0.0, 1.0, np.inf, np.nan]])
    x = x.astype(np.float32)
    b = Bench(("f32", [x.size]), ("f32", [x.size]), P=1).set(1, x[None])
    b.run(f"v.{op}", 0, 1)
    want = TRANSCENDENTAL[op](torch.from_numpy(x.astype(np.float64))).float().numpy()
    dist = ulp_distance(b.get(0)[0], want)
    assert dist.max() <= 1, (op, x[dist > 1][:4])
    assert (dist == 0).mean() > 0.99


def test_exact_unary_and_predicates():
    x = np.array([[2.5, -2.5, 0.5, -0.0, np.inf, np.nan, 3.7, -1e-45]], np.float32)
    b = Bench(("f32", [8]), ("f32", [8]), ("i1", [8]), P=1).set(1, x)
    for op, ref in [
        ("floor", np.floor),
        ("ceil", np.ceil),
        ("ftrunc", np.trunc),
        ("rint", np.rint),
        ("neg", np.negative),
        ("abs", np.abs),
    ]:
        b.run(f"v.{op}", 0, 1)
        np.testing.assert_array_equal(b.get(0), ref(x), err_msg=op)
    for op, ref in [("isnan", np.isnan), ("isinf", np.isinf), ("signbit", np.signbit)]:
        b.run(f"v.{op}", 2, 1)
        assert b.get(2).tolist() == ref(x).tolist(), op
    b.run("v.neg", 0, 1)
    assert not np.signbit(b.get(0)[0, 3])  # -(-0.0) is +0.0


def test_lgamma_poles_are_inf():
    b = Bench(("f32", [3]), ("f32", [3]), P=1).set(1, [[0.0, -2.0, 1.0]])
    b.run("v.lgamma", 0, 1)
    assert b.get(0)[0].tolist() == [np.inf, np.inf, 0.0]


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_narrow_transcendental_rounds_once(dtype):
    x = np.linspace(-4, 4, 97).astype(NUMPY[dtype])
    b = Bench((dtype, [97]), (dtype, [97]), P=1).set(1, x[None])
    b.run("v.exp", 0, 1)
    want = torch.exp(torch.from_numpy(x.astype(np.float64))).to(TORCH_TYPES[dtype]).float().numpy()
    np.testing.assert_array_equal(b.get(0)[0].astype(np.float32), want)


def test_fma_rounds_once_and_int_fma_wraps():
    a = np.float32(1 + 2.0**-12)
    b = Bench(("f32", [1]), ("f32", [1]), ("f32", [1]), ("f32", [1]), P=1)
    b.set(1, [[a]]).set(2, [[a]]).set(3, [[-(1 + 2.0**-11)]])
    b.run("v.fma", 0, 1, 2, 3)
    assert b.get(0)[0, 0] == np.float32(2.0**-24)
    bi = Bench(("i8", [1]), ("i8", [1]), ("i8", [1]), ("i8", [1]), P=1).set(1, [[100]]).set(2, [[3]]).set(3, [[1]])
    bi.run("v.fma", 0, 1, 2, 3)
    assert bi.get(0)[0, 0] == _wrap(301, 8)
    bb = Bench(("bf16", [1]), ("bf16", [1]), ("bf16", [1]), ("bf16", [1]), P=1)
    x = ml_dtypes.bfloat16(1 + 2.0**-7)
    bb.set(1, [[x]]).set(2, [[x]]).set(3, [[-1.0]])
    bb.run("v.fma", 0, 1, 2, 3)
    exact = Fraction(float(x)) ** 2 - 1  # 2**-6 + 2**-14: exactly representable in bf16? no, rounds once
    assert float(bb.get(0)[0, 0]) == float(ml_dtypes.bfloat16(float(exact)))


def test_select_clamp_and_compares():
    b = Bench(("f32", [4]), ("i1", [4]), ("f32", [4]), ("f32", [4]), ("f32", [4]), P=1)
    b.set(1, [[1, 0, 1, 0]]).set(2, [[1, 2, 3, 4]]).set(3, [[10, 20, 30, 40]])
    b.run("v.select", 0, 1, 2, 3)
    assert b.get(0).tolist() == [[1, 20, 3, 40]]
    b.set(2, [[np.nan, -5, 5, 0.5]]).set(3, [[0, 0, 0, 0]]).set(4, [[1, 1, 1, 1]])
    b.run("v.clamp.all", 0, 2, 3, 4)
    got = b.get(0)[0]
    assert np.isnan(got[0]) and got[1:].tolist() == [0, 1, 0.5]
    b.run("v.clamp.none", 0, 2, 3, 4)
    assert b.get(0)[0].tolist() == [0, 0, 1, 0.5]
    b.set(3, [[np.nan, -5, 6, 0.5]])
    b.run("v.cmpf.oeq", 1, 2, 3)
    assert b.get(1).tolist() == [[False, True, False, True]]
    b.run("v.cmpf.une", 1, 2, 3)
    assert b.get(1).tolist() == [[True, False, True, False]]
    bi = Bench(("i1", [3]), ("i32", [3]), ("i32", [3]), P=1).set(1, [[-1, 1, 5]]).set(2, [[1, -1, 5]])
    for pred, want in [("slt", [1, 0, 0]), ("ult", [0, 1, 0]), ("sge", [0, 1, 1]), ("ne", [1, 1, 0])]:
        bi.run(f"v.cmpi.{pred}", 0, 1, 2)
        assert bi.get(0)[0].astype(int).tolist() == want, pred


# ---- conversions -----------------------------------------------------------------------------------
def test_integer_conversions():
    b = Bench(("i32", [3]), ("i8", [3]), P=1).set(1, [[-1, 127, -128]])
    b.run("v.sext", 0, 1)
    assert b.get(0).tolist() == [[-1, 127, -128]]
    b.run("v.zext", 0, 1)
    assert b.get(0).tolist() == [[255, 127, 128]]
    b.set(0, [[300, -129, 2**31 - 1]])
    b.run("v.trunc", 1, 0)
    assert b.get(1).tolist() == [[44, 127, -1]]
    b1 = Bench(("i32", [2]), ("i1", [2]), P=1).set(1, [[1, 0]])
    b1.run("v.sext", 0, 1)
    assert b1.get(0).tolist() == [[-1, 0]]
    b1.run("v.zext", 0, 1)
    assert b1.get(0).tolist() == [[1, 0]]


def test_int_float_conversions():
    ints = np.array([[0, -1, 2**24 + 1, -(2**31), 2**31 - 1]], np.int32)
    b = Bench(("f32", [5]), ("i32", [5]), ("bf16", [5]), P=1).set(1, ints)
    b.run("v.sitofp", 0, 1)
    np.testing.assert_array_equal(b.get(0), torch.from_numpy(ints).float().numpy())
    b.run("v.uitofp", 0, 1)
    assert b.get(0)[0].tolist() == [float(np.float32(v % 2**32)) for v in ints[0].tolist()]
    b.run("v.sitofp", 2, 1)
    assert b.get(2).astype(np.float64)[0].tolist() == [0.0, -1.0, 2.0**24, -(2.0**31), 2.0**31]
    b.set(0, [[np.nan, 1e10, -1e10, -2.7, 2.7]])
    b.run("v.fptosi", 1, 0)
    assert b.get(1).tolist() == [[0, 2**31 - 1, -(2**31), -2, 2]]
    b.run("v.fptoui", 1, 0)
    assert b.get(1).view(np.uint32).tolist() == [[0, 2**32 - 1, 0, 0, 2]]
    b.set(0, [[-0.0, -2.7, 2.7, -(2.0**31), 2.0**31 - 128]])  # all in range: the plain cast path
    b.run("v.fptosi", 1, 0)
    assert b.get(1).tolist() == [[0, -2, 2, -(2**31), 2**31 - 128]]
    b.set(0, [[0.0, 0.9, 2.7, 2.0**32 - 256, 5.0]])
    b.run("v.fptoui", 1, 0)
    assert b.get(1).view(np.uint32).tolist() == [[0, 0, 2, 2**32 - 256, 5]]


def test_fcvt_modes():
    x = np.array([[1 + 2.0**-8, 1 + 3 * 2.0**-8, -(1 + 2.0**-7 + 2.0**-9), 1e39 / 1e1, np.inf]], np.float32)
    b = Bench(("bf16", [5]), ("f32", [5]), ("f8e4m3fn", [5]), P=1).set(1, x)
    b.run("v.fcvt.rtne", 0, 1)
    np.testing.assert_array_equal(b.get(0).astype(np.float32), torch.from_numpy(x).bfloat16().float().numpy())
    b.run("v.fcvt.rtz", 0, 1)
    np.testing.assert_array_equal(b.get(0).view(np.uint16).astype(np.uint32), x.view(np.uint32) >> 16)
    b.run("v.fcvt.rtne", 2, 1)
    assert b.get(2).astype(np.float32)[0, -2:].tolist() == [448.0, 448.0]
    b.run("v.fcvt.rtz", 0, 1)
    b.run("v.fcvt.rtne", 1, 0)  # widening back is exact
    np.testing.assert_array_equal(b.get(1).view(np.uint32), (x.view(np.uint32) >> 16) << 16)
    with pytest.raises(IsaError, match="float"):
        Bench(("i32", [5]), ("f32", [5])).run("v.fcvt.rtne", 0, 1)


def test_bitcast():
    b = Bench(("i32", [2]), ("f32", [2]), ("i16", [2]), P=1).set(1, [[1.0, -0.0]])
    b.run("v.bitcast", 0, 1)
    assert b.get(0).tolist() == [[0x3F800000, -(2**31)]]
    b.run("v.bitcast", 1, 0)
    assert b.get(1)[0, 0] == 1.0 and np.signbit(b.get(1)[0, 1])
    with pytest.raises(IsaError, match="item sizes"):
        b.run("v.bitcast", 2, 1)


# ---- data movement, reductions, scans -----------------------------------------------------------------
def test_splat_extract_iota_fill():
    b = Bench(("f32", [2, 3]), ("i8", [4]), ("bf16", [3]), P=2)
    b.ctx.regs[1] = np.array([1.5, -2.25]).view(np.int64)
    b.run("v.splat", 0, 1)
    assert b.get(0).tolist() == [[[1.5] * 3] * 2, [[-2.25] * 3] * 2]
    b.ctx.regs[2] = [-1, 300]
    b.run("v.splat", 1, 2)
    assert b.get(1).tolist() == [[-1] * 4, [44] * 4]
    b.run("v.iota", 0, b.k(5))
    assert b.get(0)[1].tolist() == [[5, 6, 7], [8, 9, 10]]
    b.run("v.extract", 3, 0, b.k(4))
    assert b.ctx.regs[3].view(np.float64).tolist() == [9.0, 9.0]
    b.run("v.extract", 3, 1, b.k(0))
    assert b.ctx.regs[3].tolist() == [-1, 44]
    b.run("v.fill", 2, b.k(0.1))
    assert b.get(2)[0].tolist() == [ml_dtypes.bfloat16(0.1)] * 3
    b.run("v.fill", 1, b.k(-129))
    assert b.get(1)[0].tolist() == [127] * 4


def test_copy_reshape_transpose_broadcast_and_overlap():
    a = Tile(0, "f32", (2, 3))
    at = Tile(0, "f32", (3, 2), (1, 3))  # a transposed, a view of the same bytes
    d = Tile(64, "f32", (3, 2))
    row = Tile(128, "f32", (3,))
    bcast = Tile(128, "f32", (2, 3), (0, 1))  # row broadcast over 2 rows
    flat = Tile(192, "f32", (6,))
    shifted = Tile(4, "f32", (5,))  # a[1:] as a flat run, overlapping a
    b = Bench(a, at, d, row, bcast, flat, shifted, Tile(0, "f32", (5,)), P=1)
    base = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    b.set(0, base)
    b.run("v.copy", 2, 1)
    assert b.get(2)[0].tolist() == base[0].T.tolist()
    b.set(3, [[7, 8, 9]])
    b.run("v.copy", 0, 4)
    assert b.get(0)[0].tolist() == [[7, 8, 9], [7, 8, 9]]
    b.set(0, base)
    b.run("v.copy", 5, 0)
    assert b.get(5)[0].tolist() == list(range(6))
    b.run("v.copy", 6, 7)  # dst overlaps src one element later: must read before writing
    assert b.get(0)[0].reshape(-1).tolist() == [0, 0, 1, 2, 3, 4]
    with pytest.raises(IsaError, match="element count"):
        b.run("v.copy", 5, 3)


def test_gather_and_out_of_range_index():
    b = Bench(("f32", [2, 3]), ("f32", [2, 3]), ("i32", [2, 3]), P=2)
    src = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    idx = np.array([[[2, 0, 1], [1, 1, 0]], [[0, 0, 0], [2, 2, 2]]])
    b.set(1, src).set(2, idx)
    b.run("v.gather", 0, 1, 2, b.k(1))
    np.testing.assert_array_equal(b.get(0), np.take_along_axis(src, idx, axis=2))
    b.set(2, np.where(np.arange(2)[:, None, None] == 1, 3, idx))
    with pytest.raises(SimulatorError, match="outside axis 1") as err:
        b.run("v.gather", 0, 1, 2, b.k(1))
    assert list(err.value.programs) == [1]


def test_hist_counts_masked_in_range_values():
    vals = np.array([[0, 1, 1, 3, -1, 7, 2, 1]], np.int32)
    mask = np.array([[1, 1, 0, 1, 1, 1, 1, 1]], bool)
    b = Bench(("i32", [4]), ("i32", [8]), ("i1", [8]), P=1).set(1, vals).set(2, mask)
    b.run("v.hist", 0, 1, 2)
    assert b.get(0).tolist() == [[1, 2, 1, 1]]


def test_reduce_integer_and_unsigned():
    x = np.array([[2**31 - 1, 1, 5, -3]], np.int32)
    b = Bench(("i32", []), ("i32", [4]), P=1).set(1, x)
    for comb, want in [
        ("add", _wrap(2**31 - 1 + 1 + 5 - 3, 32)),
        ("max", 2**31 - 1),
        ("min", -3),
        ("umax", -3),
        ("umin", 1),
        ("xor", (2**31 - 1) ^ 1 ^ 5 ^ -3),
    ]:
        b.run(f"v.reduce.{comb}", 0, 1, b.k(0))
        assert b.get(0).tolist() == [want], comb


def test_reduce_float_nan_handling_axes_and_tree_order():
    b = Bench(("f32", [3]), ("f32", [2, 3]), ("f32", [2]), P=1)
    b.set(1, [[[1, np.nan, 3], [4, 5, -6]]])
    b.run("v.reduce.max", 0, 1, b.k(0))
    got = b.get(0)[0]
    assert got[0] == 4 and np.isnan(got[1]) and got[2] == 3
    b.run("v.reduce.maxnum", 0, 1, b.k(0))
    assert b.get(0)[0].tolist() == [4, 5, 3]
    b.run("v.reduce.add", 2, 1, b.k(1))
    assert np.isnan(b.get(2)[0, 0]) and b.get(2)[0, 1] == 3
    # f16 adds round at every combine, in a pairwise tree: (2048 + 1) + (1 + 1) = 2048 + 2
    h = Bench(("f16", []), ("f16", [4]), P=1).set(1, [[2048, 1, 1, 1]])
    h.run("v.reduce.add", 0, 1, h.k(0))
    assert h.get(0).tolist() == [2050.0]
    with pytest.raises(IsaError, match="not defined"):
        b.run("v.reduce.umax", 0, 1, b.k(0))


def test_reduce_float_sum_accuracy():
    x = np.random.default_rng(7).standard_normal((2, 1000)).astype(np.float32)
    b = Bench(("f32", []), ("f32", [1000]), P=2).set(1, x)
    b.run("v.reduce.add", 0, 1, b.k(0))
    np.testing.assert_allclose(b.get(0), x.astype(np.float64).sum(axis=1), rtol=1e-5)


def test_scan_add_wraps_reverse_and_axis():
    x = np.array([[[1, 2, 3], [2**31 - 1, 1, 1]]], np.int32)
    b = Bench(("i32", [2, 3]), ("i32", [2, 3]), P=1).set(1, x)
    b.run("v.scan.add", 0, 1, b.k(1), b.k(0))
    assert b.get(0)[0].tolist() == [[1, 3, 6], [2**31 - 1, -(2**31), -(2**31) + 1]]
    b.run("v.scan.add", 0, 1, b.k(1), b.k(1))
    assert b.get(0)[0].tolist() == [[6, 5, 3], [_wrap(2**31 + 1, 32), 2, 1]]
    b.run("v.scan.max", 0, 1, b.k(0), b.k(0))
    assert b.get(0)[0].tolist() == [[1, 2, 3], [2**31 - 1, 2, 3]]
    y = np.random.default_rng(8).integers(-50, 50, (3, 37)).astype(np.float32)
    f = Bench(("f32", [37]), ("f32", [37]), P=3).set(1, y)
    f.run("v.scan.add", 0, 1, f.k(0), f.k(0))
    np.testing.assert_array_equal(f.get(0), np.cumsum(y, axis=1))


# ---- matrix unit -----------------------------------------------------------------------------------
def _mma_bench(adt, bdt, cdt, m=8, k=16, n=4, P=2):
    return Bench((cdt, [m, n]), (adt, [m, k]), (bdt, [k, n]), P=P)


def test_mma_f16_and_bf16_accumulate_in_f32():
    rng = np.random.default_rng(9)
    for dt in ("f16", "bf16"):
        a = rng.standard_normal((2, 8, 16)).astype(NUMPY[dt])
        bm = rng.standard_normal((2, 16, 4)).astype(NUMPY[dt])
        acc = rng.standard_normal((2, 8, 4)).astype(np.float32)
        b = _mma_bench(dt, dt, "f32").set(0, acc).set(1, a).set(2, bm)
        b.run("m.mma.ieee", 0, 1, 2)
        ref = (torch.from_numpy(a.astype(np.float64)) @ torch.from_numpy(bm.astype(np.float64))).numpy() + acc
        np.testing.assert_allclose(b.get(0), ref, rtol=2e-6, atol=2e-6)


def test_mma_int8_is_exact_and_wraps():
    rng = np.random.default_rng(10)
    a = rng.integers(-128, 128, (2, 8, 16)).astype(np.int8)
    bm = rng.integers(-128, 128, (2, 16, 4)).astype(np.int8)
    acc = np.full((2, 8, 4), 2**31 - 100, np.int32)
    b = _mma_bench("i8", "i8", "i32").set(0, acc).set(1, a).set(2, bm)
    b.run("m.mma.ieee", 0, 1, 2)
    exact = a.astype(np.int64) @ bm.astype(np.int64) + acc.astype(np.int64)
    np.testing.assert_array_equal(b.get(0), exact.astype(np.int32))


def test_mma_f32_precisions():
    one = np.float32(1 + 2.0**-12)  # not a TF32 value: tf32 rounds it to 1.0
    b = _mma_bench("f32", "f32", "f32", m=2, k=4, n=2, P=1).set(1, np.full((1, 2, 4), one)).set(2, np.ones((1, 4, 2)))
    b.run("m.mma.tf32", 0, 1, 2)
    assert b.get(0).tolist() == [[[4.0, 4.0]] * 2]
    b.set(0, 0).run("m.mma.ieee", 0, 1, 2)
    assert b.get(0)[0, 0, 0] == np.float32(4 * float(one))
    rng = np.random.default_rng(11)
    a = rng.standard_normal((1, 16, 64)).astype(np.float32)
    bm = rng.standard_normal((1, 64, 16)).astype(np.float32)
    exact = a.astype(np.float64) @ bm.astype(np.float64)
    err = {}
    for prec in ("ieee", "tf32", "tf32x3", "bf16x3", "bf16x6"):
        bb = _mma_bench("f32", "f32", "f32", m=16, k=64, n=16, P=1).set(1, a).set(2, bm)
        bb.run(f"m.mma.{prec}", 0, 1, 2)
        err[prec] = np.abs(bb.get(0) - exact).max()
    assert err["ieee"] <= 4e-6 and err["tf32x3"] < err["tf32"] / 50 and err["bf16x6"] < err["bf16x3"] <= err["tf32"]
    assert err["tf32x3"] < 1e-4 and err["bf16x6"] < 1e-5


@pytest.mark.parametrize(
    "dt, prec, acc",
    [("bf16", "ieee", "f32"), ("f16", "ieee", "f32"), ("f8e4m3fn", "ieee", "f32"), ("bf16", "ieee", "bf16")]
    + [("f32", p, "f32") for p in ("ieee", "tf32", "tf32x3", "bf16x3", "bf16x6")],
)
def test_mma_row_does_not_depend_on_the_instructions_rows(dt, prec, acc):
    """The host BLAS picks its kernel and sum order by shape (OpenBLAS sums 8-row and 32-row
    products differently): m.mma sums in blocks of ROWS rows, so the first rows of an
    instruction have the same bits whatever its M (multiples of ROWS, not, and fewer than ROWS)."""
    from triton_plate_backend.sim.sem_matrix import ROWS

    rng = np.random.default_rng(12)
    k, n, top = 96, 48, ROWS // 2
    a = rng.standard_normal((2, 4 * ROWS, k)).astype(NUMPY[dt])
    bm = rng.standard_normal((2, k, n)).astype(NUMPY[dt])
    c = rng.standard_normal((2, 4 * ROWS, n)).astype(NUMPY[acc])
    rows = {}
    for m in (ROWS, 2 * ROWS, 4 * ROWS, 3 * ROWS - 5, top, 8):
        b = _mma_bench(dt, dt, acc, m=m, k=k, n=n).set(0, c[:, :m]).set(1, a[:, :m]).set(2, bm)
        b.run(f"m.mma.{prec}", 0, 1, 2)
        rows[m] = b.get(0)[:, :8].tobytes()
        if m >= 2 * ROWS:  # a later block's rows too
            rows[m, "block 1"] = b.get(0)[:, ROWS : ROWS + top].tobytes()
    assert len(set(rows[m] for m in rows if not isinstance(m, tuple))) == 1
    assert rows[2 * ROWS, "block 1"] == rows[4 * ROWS, "block 1"]


def test_mma_f16_accumulator_rounds_and_bad_types_fail():
    b = _mma_bench("f16", "f16", "f16", m=1, k=2, n=1, P=1).set(0, [[[2048.0]]]).set(1, [[[1.0, 1.0]]])
    b.set(2, [[[0.5], [0.5]]])
    b.run("m.mma.ieee", 0, 1, 2)
    assert b.get(0).tolist() == [[[2048.0]]]  # 2049 rounds to even in f16
    with pytest.raises(IsaError, match="unsupported types"):
        _mma_bench("i8", "f16", "f32").run("m.mma.ieee", 0, 1, 2)
    with pytest.raises(IsaError, match="do not chain"):
        Bench(("f32", [4, 4]), ("f16", [4, 8]), ("f16", [4, 4])).run("m.mma.ieee", 0, 1, 2)


# ---- scalar unit -----------------------------------------------------------------------------------
def _regs(b, r, values, floats=False):
    b.ctx.regs[r] = np.array(values, np.float64).view(np.int64) if floats else values


def test_scalar_integer_ops_wrap_to_stype():
    b = Bench(P=3)
    _regs(b, 1, [2**31 - 1, -(2**31), 7])
    _regs(b, 2, [1, -1, 0])
    b.run("s.add.i32", 0, 1, 2)
    assert b.ctx.regs[0].tolist() == [-(2**31), 2**31 - 1, 7]
    b.run("s.divs.i32", 0, 1, 2)
    assert b.ctx.regs[0].tolist() == [2**31 - 1, -(2**31), -1]
    b.run("s.divu.i32", 0, 1, 2)
    assert b.ctx.regs[0].tolist() == [2**31 - 1, 0, -1]
    b.run("s.remu.i64", 0, 1, 2)
    assert b.ctx.regs[0].tolist() == [0, -(2**31), 7]
    b.run("s.shl.i8", 0, 2, 1)  # amounts wrap to i8 and read unsigned: 255 (clamps to 0), 0, 7
    assert b.ctx.regs[0].tolist() == [0, -1, 0]
    b.run("s.cmpi.ult.i32", 0, 1, 2)
    assert b.ctx.regs[0].tolist() == [0, 1, 0]
    b.run("s.maxu.i32", 0, 1, 2)
    assert b.ctx.regs[0].tolist() == [2**31 - 1, -1, 7]
    with pytest.raises(IsaError, match="not defined on f32"):
        b.run("s.shl.f32", 0, 1, 2)
    with pytest.raises(IsaError, match="not defined on i32"):
        b.run("s.div.i32", 0, 1, 2)


def test_scalar_float_ops_round_to_stype():
    b = Bench(P=2)
    _regs(b, 1, [0.1, 1.0], floats=True)
    _regs(b, 2, [0.2, 0.0], floats=True)
    b.run("s.add.f32", 0, 1, 2)
    assert b.ctx.regs[0].view(np.float64).tolist() == [float(np.float32(0.1) + np.float32(0.2)), 1.0]
    b.run("s.div.f32", 0, 1, 2)
    assert b.ctx.regs[0].view(np.float64)[1] == np.inf
    b.run("s.cmpf.uno.f32", 0, 1, 2)
    assert b.ctx.regs[0].tolist() == [0, 0]
    b.run("s.fcvt.bf16.f64", 0, 1)
    assert b.ctx.regs[0].view(np.float64)[0] == float(ml_dtypes.bfloat16(0.1))
    b.run("s.fptosi.i8.f32", 0, 2)
    assert b.ctx.regs[0].tolist() == [0, 0]
    _regs(b, 1, [-1e10, 3.9], floats=True)
    b.run("s.fptosi.i8.f32", 0, 1)
    assert b.ctx.regs[0].tolist() == [-128, 3]
    b.run("s.bitcast.i32.f32", 0, 1)
    assert b.ctx.regs[0].tolist() == [int(np.float32(-1e10).view(np.int32)), int(np.float32(3.9).view(np.int32))]
    b.run("s.sitofp.f32.i32", 3, 0)
    b.run("s.maxs.f32", 0, 1, 2)
    assert b.ctx.regs[0].view(np.float64).tolist() == [float(np.float32(0.2)), float(np.float32(3.9))]


def test_scalar_moves_args_ids_and_select():
    b = Bench(grid=(2, 3, 2), args=[0x1000, -1, 0.1], arg_types=["ptr", "i8", "f32"])
    b.run("s.li", 0, b.k(-5))
    b.run("s.li", 1, b.k(2.5))
    assert b.ctx.regs[0].tolist() == [-5] * 12 and b.ctx.regs[1].view(np.float64).tolist() == [2.5] * 12
    for i, want in enumerate([0x1000, -1, float(np.float32(0.1))]):
        b.run("s.arg", 2, b.k(i))
        got = b.ctx.regs[2].view(np.float64)[0] if isinstance(want, float) else b.ctx.regs[2][0]
        assert got == want
    for axis, r in zip("xyz", (3, 4, 5)):
        b.run(f"s.pid.{axis}", r)
    pids = np.arange(12)
    assert b.ctx.regs[3].tolist() == (pids % 2).tolist()
    assert b.ctx.regs[4].tolist() == (pids // 2 % 3).tolist()
    assert b.ctx.regs[5].tolist() == (pids // 6).tolist()
    b.run("s.nprog.y", 6)
    assert b.ctx.regs[6].tolist() == [3] * 12
    b.run("s.select", 7, 3, 0, 6)
    assert b.ctx.regs[7].tolist() == [3, -5] * 6
    b.run("s.mov", 8, 7)
    assert b.ctx.regs[8].tolist() == b.ctx.regs[7].tolist()


def test_control_flow_rules_return_branches():
    b = Bench(P=3)
    b.ctx.regs[1] = [0, 1, 2]
    out = b.run("bz", 1, 7)
    assert isinstance(out, Branch) and out.target == 7 and out.taken.tolist() == [True, False, False]
    assert b.run("bnz", 1, 2).taken.tolist() == [False, True, True]
    out = b.run("loop", 1, 0)
    assert b.ctx.regs[1].tolist() == [-1, 0, 1] and out.taken.tolist() == [True, False, True]
    assert b.run("jmp", 3).taken is True and b.run("halt") is HALT
    assert b.run("nop") is None and b.run("dma.wait", 0) is None and b.run("fence.acq_rel") is None


# ---- memory rules ----------------------------------------------------------------------------------
@pytest.fixture
def mem():
    return DeviceMemory("plate-mini")


def test_gather_scatter_and_strided_load(mem):
    buf = mem.alloc(64 * 4)
    host = mem.view(buf.base, 64 * 4).view(np.float32)
    host[:] = np.arange(64)
    b = Bench(("f32", [4]), ("i64", [4]), ("i1", [4]), ("f32", [3, 4]), memory=mem, P=2)
    addrs = buf.base + 4 * np.array([[0, 5, 63, 9999], [1, 2, 3, 4]])
    b.set(1, addrs).set(2, [[1, 1, 1, 0], [1, 0, 1, 0]])
    traffic = b.run("dma.gather", 0, 0, 1, 2, b.k(-1.0))
    assert b.get(0).tolist() == [[0, 5, 63, -1], [1, -1, 3, -1]]
    assert traffic.elements.tolist() == [3, 2] and traffic.bytes_by_domain.shape == (2, mem.traffic_columns)
    assert b.ctx.tokens[0].tolist() == [1, 1]
    b.set(0, [[100, 101, 102, 103], [200, 201, 202, 203]])
    b.run("dma.scatter", 1, 0, 1, 2)
    assert host[[0, 5, 63, 1, 3]].tolist() == [100, 101, 102, 200, 202]
    # a 3x4 box at rows of 8 elements, rows >= 2 of program 1 outside hi: filled
    b.ctx.regs[1] = [buf.base, buf.base + 4 * 8]
    b.ctx.regs[2], b.ctx.regs[3], b.ctx.regs[4], b.ctx.regs[5] = 8, 1, 0, 4
    b.ctx.regs[6] = [3, 2]
    b.run("dma.load", 2, 3, 1, (2, 3), (4, 4), (6, 5), b.k(0.5))
    want = host.copy().reshape(8, 8)[:, :4]
    assert b.get(3)[0].tolist() == want[:3].tolist()
    assert b.get(3)[1].tolist() == want[1:3].tolist() + [[0.5] * 4]
    with pytest.raises(IsaError, match="registers per list"):
        b.run("dma.load", 2, 3, 1, (2,), (4, 4), (6, 5), b.k(0.0))


def test_atomics_apply_in_program_order(mem):
    buf = mem.alloc(8)
    host = mem.view(buf.base, 8).view(np.int32)
    b = Bench(("i32", [2]), ("i64", [2]), ("i32", [2]), ("i1", [2]), ("i32", [2]), memory=mem, P=3)
    b.set(1, np.full((3, 2), buf.base)).set(2, [[1, 2], [3, 4], [5, 6]]).set(3, True)
    b.run("atom.rmw.add.relaxed", 0, 1, 2, 3)
    assert b.get(0).reshape(-1).tolist() == [0, 1, 3, 6, 10, 15] and host[0] == 21
    host[0] = 0
    b.set(4, 0).set(2, [[7, 8], [9, 10], [11, 12]])
    b.run("atom.cas.acq_rel", 0, 1, 4, 2, 3)  # only the first sees 0
    assert b.get(0).reshape(-1).tolist() == [0, 7, 7, 7, 7, 7] and host[0] == 7


# ---- debug -----------------------------------------------------------------------------------------
def test_print_and_assert():
    lines = []
    b = Bench(("f32", [2]), ("i1", [2]), grid=(2, 1, 1), printer=lines.append)
    b.set(0, [[1.5, -2], [3, 4]])
    b.run("dbg.print", b.k("x"), 0, b.k(0))
    assert lines[:2] == ["pid (0, 0, 0) idx (0) x: 1.500000", "pid (0, 0, 0) idx (1) x: -2.000000"] and len(lines) == 4
    lines.clear()
    b.run("dbg.print", b.k("h"), 0, b.k(1))
    assert lines[0] == "pid (0, 0, 0) idx (0) h: 0x3fc00000"
    lines.clear()
    b.ctx.regs[3] = [-7, 9]
    b.run("dbg.printr", b.k("r"), 3)
    assert lines == ["pid (0, 0, 0) r: -7", "pid (1, 0, 0) r: 9"]
    b.set(1, [[1, 1], [1, 0]])
    with pytest.raises(DeviceAssertionError, match="n must be positive") as err:
        b.run("dbg.assert", 1, b.k("n must be positive"))
    assert list(err.value.programs) == [1]
    b.set(1, True).run("dbg.assert", 1, b.k("ok"))


def test_failed_device_assert_is_a_runtime_error_as_on_cuda():
    """torch raises RuntimeError('... device-side assert triggered') on CUDA; Triton's tests catch that."""
    b = Bench(("i1", [2]), grid=(1, 1, 1))
    b.set(0, [[True, False]])
    with pytest.raises(RuntimeError, match="device-side assert triggered: boom"):
        b.run("dbg.assert", 0, b.k("boom"))


def _contexts(id_groups, pc=3):
    """Contexts of a stub launch holding the given instance ids, each instance's registers, tokens and SRAM row
    filled from its id (so a row that lands with another instance's id shows)."""
    from types import SimpleNamespace

    from triton_plate_backend.sim.executor import Context

    launch = SimpleNamespace(
        program=SimpleNamespace(tiles=[], consts=[]), args=[], grid=(16, 1, 1), memory=None, machine=None, printer=None
    )
    launch.batch_rows = 0
    made = []
    for ids in id_groups:
        pids = np.array(ids, np.int64)
        regs = np.stack([pids * 10 + r for r in range(4)])
        tokens = np.stack([pids * 100 + t for t in range(2)])
        sram = (pids[:, None] * 1000 + np.arange(8)).astype(np.uint8)
        made.append(Context(launch, pids, regs, tokens, sram, pc))
    return made


@pytest.mark.parametrize(
    "id_groups",
    [
        [[0, 1, 2], [3, 4], [5]],  # in order
        [[5, 6], [0, 1], [2, 3, 4]],  # whole contexts out of order: ordered by their first id
        [[0, 4, 6], [1, 2], [3, 5, 7]],  # interleaved: the permutation
        [[7], [2, 3]],
    ],
)
def test_absorb_merges_contexts_in_increasing_instance_id_with_their_rows(id_groups):
    first, *others = _contexts(id_groups)
    first.absorb(others)
    ids = sorted(i for g in id_groups for i in g)
    (want,) = _contexts([ids])
    assert sorted(first.pids.tolist()) == ids and first.P == len(ids)
    first.in_order()  # what a memory instruction sees
    assert first.pids.tolist() == ids and first.ordered
    np.testing.assert_array_equal(first.regs, want.regs)
    np.testing.assert_array_equal(first.tokens, want.tokens)
    np.testing.assert_array_equal(first.sram, want.sram)
