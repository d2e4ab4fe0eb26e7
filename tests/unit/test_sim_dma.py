"""Batched DMA and atomics over DeviceMemory, checked against element-by-element references."""

import itertools
import math
import time

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from triton_plate_backend.dtypes import NUMPY, UNSIGNED
from triton_plate_backend.errors import MemoryFault, SimulatorError
from triton_plate_backend.sim import atomics, dma
from triton_plate_backend.sim.memory import DeviceMemory

STRIPE = 4096
HYP = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture
def mem():
    return DeviceMemory("plate-mini")


def typed(mem, rec, dtype):
    """The allocation's bytes as a numpy array of ``dtype`` (a view: writes go to device memory)."""
    return mem.view(rec.base, rec.nbytes).view(NUMPY[dtype] if dtype != "i1" else np.uint8)


def box_args(P, shape, strides, lo=None, hi=None):
    r = len(shape)
    strides = np.broadcast_to(np.asarray(strides, np.int64).reshape(-1, r), (P, r)).copy()
    lo = np.zeros((P, r), np.int64) if lo is None else np.broadcast_to(np.asarray(lo).reshape(-1, r), (P, r))
    hi = (
        np.broadcast_to(np.asarray(shape), (P, r))
        if hi is None
        else np.broadcast_to(np.asarray(hi).reshape(-1, r), (P, r))
    )
    return strides, np.asarray(lo, np.int64), np.asarray(hi, np.int64)


def ref_load(mem, base, dtype, shape, strides, lo, hi, fill):
    npdt = NUMPY[dtype]
    out = np.empty((len(base), *shape), npdt)
    fillv = dma.fill_value(fill, dtype)
    for p in range(len(base)):
        for i in itertools.product(*map(range, shape)):
            if all(lo[p, k] <= i[k] < hi[p, k] for k in range(len(shape))):
                addr = int(base[p]) + sum(i[k] * int(strides[p, k]) for k in range(len(shape))) * npdt.itemsize
                out[(p, *i)] = np.frombuffer(mem.read_bytes(addr, npdt.itemsize), npdt)[0]
            else:
                out[(p, *i)] = fillv
    return out


def ref_traffic(mem, base, isz, shape, strides, lo, hi):
    """Bytes per program and home domain (and the replica column, memory.DeviceMemory.traffic_columns)."""
    P = len(base)
    by_dom = np.zeros((P, mem.traffic_columns))
    for p in range(P):
        for i in itertools.product(*map(range, shape)):
            if all(lo[p, k] <= i[k] < hi[p, k] for k in range(len(shape))):
                addr = int(base[p]) + sum(i[k] * int(strides[p, k]) for k in range(len(shape))) * isz
                by_dom[p, mem.home_domain(np.array([addr]))[0]] += isz
    return by_dom


def ref_runs(base, isz, shape, strides, lo, hi):
    runs = []
    for p in range(len(base)):
        addrs = [
            sum(i[k] * int(strides[p, k]) for k in range(len(shape)))
            for i in itertools.product(*map(range, shape))
            if all(lo[p, k] <= i[k] < hi[p, k] for k in range(len(shape)))
        ]
        runs.append(sum(1 for j, a in enumerate(addrs) if j == 0 or abs(a - addrs[j - 1]) != 1))
    return runs


# ---- strided loads -----------------------------------------------------------------------------------
def test_load_rows_of_a_matrix(mem):
    rec = mem.alloc(64 * 64 * 4)
    typed(mem, rec, "f32")[:] = np.arange(64 * 64)
    P = 8
    base = rec.base + np.arange(P) * 8 * 64 * 4  # program p: rows 8p..8p+7, columns 0..15
    strides, lo, hi = box_args(P, (8, 16), [64, 1])
    vals, tr = dma.load_strided(mem, base, "f32", (8, 16), strides, lo, hi, 0.0)
    want = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)[:, :16].reshape(P, 8, 16)
    assert vals.dtype == np.float32 and np.array_equal(vals, want)
    assert tr.elements.tolist() == [128] * P and tr.runs.tolist() == [8] * P
    assert tr.bytes_by_domain.sum(axis=1).tolist() == [512.0] * P


def test_load_fill_and_masked_off_out_of_bounds(mem):
    rec = mem.alloc(10 * 4)
    typed(mem, rec, "i32")[:] = np.arange(10)
    strides, lo, hi = box_args(2, (8,), [1], lo=[[0], [0]], hi=[[8], [2]])
    base = rec.base + np.array([0, 32])  # program 1's elements 2..7 would be past the end: masked off
    vals, tr = dma.load_strided(mem, base, "i32", (8,), strides, lo, hi, -1)
    assert vals.tolist() == [list(range(8)), [8, 9] + [-1] * 6]
    assert tr.elements.tolist() == [8, 2]
    with pytest.raises(MemoryFault) as e:
        dma.load_strided(mem, base, "i32", (8,), strides, lo, np.array([[8], [3]]), 0)
    assert e.value.programs == [1] and "out-of-bounds load of i32" in str(e.value)


@pytest.mark.parametrize(
    "dtype,fill,want",
    [
        ("f32", float("-inf"), -np.inf),
        ("f16", float("nan"), np.nan),
        ("bf16", 1.5, 1.5),
        ("i32", -2.7, -2),
        ("i32", 2.9, 2),
        ("i8", 300, 44),
        ("i8", float("inf"), 127),
        ("i16", float("nan"), 0),
        ("i1", 1, True),
        ("i64", -1, -1),
    ],
)
def test_fill_values(mem, dtype, fill, want):
    rec = mem.alloc(64)
    strides, lo, hi = box_args(1, (4,), [1], hi=[[0]])
    vals, _ = dma.load_strided(mem, np.array([rec.base]), dtype, (4,), strides, lo, hi, fill)
    assert vals.dtype == NUMPY[dtype]
    got = vals.astype(np.float64) if dtype in ("bf16", "f16") else vals
    if isinstance(want, float) and math.isnan(want):
        assert np.isnan(got).all()
    else:
        assert (got == want).all()


def test_per_program_and_negative_strides(mem):
    rec = mem.alloc(256 * 4)
    typed(mem, rec, "i32")[:] = np.arange(256)
    base = rec.base + np.array([0, 100 * 4, 200 * 4])
    strides = np.array([[4, 1], [1, 4], [-4, -1]])  # row-major, transposed, reversed
    _, lo, hi = box_args(3, (3, 4), [0, 0])
    vals, tr = dma.load_strided(mem, base, "i32", (3, 4), strides, lo, hi, 0)
    assert vals[0].tolist() == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    assert vals[1].tolist() == [[100, 104, 108, 112], [101, 105, 109, 113], [102, 106, 110, 114]]
    assert vals[2].tolist() == [[200, 199, 198, 197], [196, 195, 194, 193], [192, 191, 190, 189]]
    assert tr.runs.tolist() == [1, 12, 1]


def test_bool_and_bf16_round_trip(mem):
    rec = mem.alloc(256)
    strides, lo, hi = box_args(2, (5,), [1])
    flags = np.array([[True, False, True, True, False], [False] * 4 + [True]])
    dma.store_strided(mem, rec.base + np.array([0, 5]), flags, strides, lo, hi)
    assert list(mem.read_bytes(rec.base, 10)) == [1, 0, 1, 1, 0, 0, 0, 0, 0, 1]
    vals, _ = dma.load_strided(mem, rec.base + np.array([0, 5]), "i1", (5,), strides, lo, hi, 0)
    assert vals.dtype == np.bool_ and np.array_equal(vals, flags)
    b = np.array([[1.5, -2.25, 3e38, 0.0, 7.0]] * 2, ml_dtypes.bfloat16)
    dma.store_strided(mem, rec.base + 64 + np.array([0, 10]), b, strides, lo, hi)
    vals, _ = dma.load_strided(mem, rec.base + 64 + np.array([0, 10]), "bf16", (5,), strides, lo, hi, 0)
    assert vals.dtype == ml_dtypes.bfloat16 and np.array_equal(vals.astype(np.float32), b.astype(np.float32))


def test_misaligned_faults(mem):
    rec = mem.alloc(256)
    strides, lo, hi = box_args(2, (4,), [1])
    with pytest.raises(MemoryFault, match="misaligned") as e:
        dma.load_strided(mem, rec.base + np.array([0, 2]), "f32", (4,), strides, lo, hi, 0)
    assert e.value.programs == [1]
    with pytest.raises(MemoryFault, match="misaligned"):
        dma.gather(mem, np.array([[rec.base + 6]]), None, "i64", 0)


def test_load_across_two_allocations(mem):
    a, b = mem.alloc(64, label="a"), mem.alloc(64, label="b")
    typed(mem, a, "i32")[:] = 1
    typed(mem, b, "i32")[:] = 2
    stride = (b.base - a.base) // 4  # element 0 in a, element 1 in b: legal, like a GPU
    vals, tr = dma.load_strided(mem, np.array([a.base]), "i32", (2,), *box_args(1, (2,), [stride]), 0)
    assert vals.tolist() == [[1, 2]] and tr.runs.tolist() == [2] and tr.elements.tolist() == [2]
    with pytest.raises(MemoryFault) as e:  # ... but one element past a's end is a fault
        dma.load_strided(mem, np.array([a.end - 4]), "i32", (2,), *box_args(1, (2,), [1]), 0)
    assert "'a'" in str(e.value)


def test_freed_memory_faults_on_load(mem):
    a = mem.alloc(64, label="gone")
    base = a.base
    mem.free(base)
    mem.alloc(8)
    with pytest.raises(MemoryFault, match="freed allocation 'gone'"):
        dma.load_strided(mem, np.array([base]), "f32", (4,), *box_args(1, (4,), [1]), 0)


@HYP
@given(data=st.data())
def test_load_matches_reference(mem, data):
    rank = data.draw(st.integers(0, 3))
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    P = data.draw(st.integers(1, 4))
    dtype = data.draw(st.sampled_from(["i8", "i16", "f32", "f64"]))
    place = data.draw(st.sampled_from(["interleaved", "local:1", "blocked", [2, 0, 3]]))
    isz = NUMPY[dtype].itemsize
    rec = mem.alloc(4 * STRIPE * isz // 2 + 512, place)
    typed(mem, rec, "i8")[:] = np.arange(rec.nbytes) % 251 - 100
    draw_row = st.lists(st.integers(-300, 300), min_size=rank, max_size=rank)
    strides = np.array([data.draw(draw_row) for _ in range(P)], np.int64).reshape(P, rank)
    lo = np.array(
        [data.draw(st.lists(st.integers(-1, 3), min_size=rank, max_size=rank)) for _ in range(P)], np.int64
    ).reshape(P, rank)
    hi = lo + np.array(
        [data.draw(st.lists(st.integers(0, 5), min_size=rank, max_size=rank)) for _ in range(P)], np.int64
    ).reshape(P, rank)
    # every element of every tile inside the allocation: start in the middle, strides up to 300
    limit = rec.nbytes // isz // 2 - sum(300 * 4 for _ in range(rank)) - 1
    base = (
        rec.base
        + (rec.nbytes // isz // 2 + np.array(data.draw(st.lists(st.integers(-limit, limit), min_size=P, max_size=P))))
        * isz
    )
    vals, tr = dma.load_strided(mem, base, dtype, shape, strides, lo, hi, 7)
    assert vals.shape == (P, *shape)
    ref = ref_load(mem, base, dtype, shape, strides, lo, hi, 7)
    bits = f"u{vals.dtype.itemsize}"  # bit-exact, and random bytes may be NaN
    assert np.array_equal(vals.view(bits), ref.view(bits))
    assert np.array_equal(tr.bytes_by_domain, ref_traffic(mem, base, isz, shape, strides, lo, hi))
    assert tr.runs.tolist() == ref_runs(base, isz, shape, strides, lo, hi)
    n = np.clip(np.minimum(hi, shape) - np.maximum(lo, 0), 0, None)
    assert tr.elements.tolist() == np.prod(n, axis=1).astype(int).tolist()


# ---- strided stores ----------------------------------------------------------------------------------
def test_store_writes_only_valid_elements(mem):
    rec = mem.alloc(64 * 4)
    t = typed(mem, rec, "i32")
    t[:] = -1
    vals = np.arange(2 * 4 * 4, dtype=np.int32).reshape(2, 4, 4)
    strides, lo, hi = box_args(2, (4, 4), [8, 1], lo=[[0, 1], [1, 0]], hi=[[4, 3], [3, 4]])
    tr = dma.store_strided(mem, rec.base + np.array([0, 4 * 4]), vals, strides, lo, hi)
    want = np.full(64, -1, np.int32)
    for p, off in enumerate([0, 4]):
        for i, j in itertools.product(range(4), range(4)):
            if lo[p, 0] <= i < hi[p, 0] and lo[p, 1] <= j < hi[p, 1]:
                want[off + i * 8 + j] = vals[p, i, j]
    assert np.array_equal(t, want)
    assert tr.elements.tolist() == [8, 8] and tr.runs.tolist() == [4, 2]


def test_store_masked_off_out_of_bounds_is_not_touched(mem):
    rec = mem.alloc(16)
    canary = mem.alloc(16)
    typed(mem, canary, "i32")[:] = 99
    strides, lo, hi = box_args(1, (8,), [1], hi=[[4]])
    dma.store_strided(mem, np.array([rec.base]), np.arange(8, dtype=np.int32)[None], strides, lo, hi)
    assert typed(mem, rec, "i32").tolist() == [0, 1, 2, 3] and typed(mem, canary, "i32").tolist() == [99] * 4
    with pytest.raises(MemoryFault):
        dma.store_strided(mem, np.array([rec.base]), np.arange(8, dtype=np.int32)[None], strides, lo, hi + 1)
    assert typed(mem, rec, "i32").tolist() == [0, 1, 2, 3]  # a faulting store writes nothing


def test_store_overlaps_last_wins(mem):
    rec = mem.alloc(64)
    t = typed(mem, rec, "i32")
    # stride 0: all four elements of each program to one address; program 1 overlaps program 0
    vals = np.array([[1, 2, 3, 4], [5, 6, 7, 8]], np.int32)
    dma.store_strided(mem, rec.base + np.array([0, 0]), vals, *box_args(2, (4,), [0]))
    assert t[0] == 8
    vals = np.array([[1, 2, 3, 4], [5, 6, 7, 8]], np.int32)
    dma.store_strided(mem, rec.base + np.array([16, 20]), vals, *box_args(2, (4,), [1]))
    assert t[4:10].tolist() == [1, 5, 6, 7, 8, 0]
    dma.store_strided(mem, rec.base + np.array([20, 16]), vals, *box_args(2, (4,), [1]))
    assert t[4:10].tolist() == [5, 6, 7, 8, 4, 0]


def test_store_tiles_of_a_matrix_in_a_grid(mem):
    rec = mem.alloc(20 * 20 * 4)
    t = typed(mem, rec, "f32")
    gi, gj = np.meshgrid(np.arange(3), np.arange(3), indexing="ij")
    gi, gj = gi.ravel(), gj.ravel()
    base = rec.base + (gi * 8 * 20 + gj * 8) * 4
    lo = np.zeros((9, 2), np.int64)
    hi = np.stack([np.minimum(8, 20 - gi * 8), np.minimum(8, 20 - gj * 8)], axis=1)
    vals = np.broadcast_to(np.arange(9, dtype=np.float32)[:, None, None], (9, 8, 8))
    dma.store_strided(mem, base, vals, *box_args(9, (8, 8), [20, 1])[:1], lo, hi)
    want = (np.arange(20)[:, None] // 8) * 3 + np.arange(20)[None, :] // 8
    assert np.array_equal(t.reshape(20, 20), want.astype(np.float32))
    back, tr = dma.load_strided(mem, base, "f32", (8, 8), np.broadcast_to([20, 1], (9, 2)), lo, hi, -1.0)
    assert (back[8, 4:] == -1).all() and (back[8, :4, :4] == 8).all()
    assert tr.elements.tolist() == np.prod(hi, axis=1).tolist()


@HYP
@given(data=st.data())
def test_store_matches_reference(mem, data):
    rank = data.draw(st.integers(1, 2))
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    P = data.draw(st.integers(1, 4))
    rec = mem.alloc(2048)
    t = typed(mem, rec, "i16")
    strides = np.array([data.draw(st.lists(st.integers(-3, 5), min_size=rank, max_size=rank)) for _ in range(P)])
    lo = np.array([data.draw(st.lists(st.integers(-1, 2), min_size=rank, max_size=rank)) for _ in range(P)])
    hi = lo + np.array([data.draw(st.lists(st.integers(0, 5), min_size=rank, max_size=rank)) for _ in range(P)])
    base = rec.base + 1024 + np.array(data.draw(st.lists(st.integers(-40, 40), min_size=P, max_size=P))) * 2
    vals = np.arange(P * math.prod(shape), dtype=np.int16).reshape(P, *shape) + 1
    want = t.copy()
    for p in range(P):
        for i in itertools.product(*map(range, shape)):
            if all(lo[p, k] <= i[k] < hi[p, k] for k in range(rank)):
                want[(base[p] - rec.base) // 2 + sum(i[k] * strides[p, k] for k in range(rank))] = vals[(p, *i)]
    tr = dma.store_strided(mem, base, vals, strides, lo, hi)
    assert np.array_equal(t, want)
    assert tr.runs.tolist() == ref_runs(base, 2, shape, strides, lo, hi)


# ---- traffic by home domain -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "place,want",
    [
        ("interleaved", [4096.0, 4096.0, 4096.0, 4096.0]),
        ("local:1", [0.0, 16384.0, 0.0, 0.0]),
        ("blocked", [4096.0, 4096.0, 4096.0, 4096.0]),
        ("blocked:3,2", [0.0, 0.0, 8192.0, 8192.0]),
    ],
)
def test_traffic_whole_allocation(mem, place, want):
    rec = mem.alloc(16384, place)
    vals, tr = dma.load_strided(mem, np.array([rec.base]), "f32", (64, 64), *box_args(1, (64, 64), [64, 1]), 0)
    assert tr.bytes_by_domain[0].tolist() == [*want, 0.0] and tr.runs.tolist() == [1] and tr.elements.tolist() == [4096]


def test_traffic_interleaved_per_program(mem):
    rec = mem.alloc(9 * STRIPE)
    P = 8
    base = rec.base + np.arange(P) * STRIPE + 1024  # each program: 4 KiB straddling two stripes
    vals, tr = dma.load_strided(mem, base, "i8", (4096,), *box_args(P, (4096,), [1]), 0)
    for p in range(P):
        want = np.zeros(4)
        want[p % 4] += 3072
        want[(p + 1) % 4] += 1024
        assert tr.bytes_by_domain[p].tolist() == [*want.tolist(), 0.0]
    # a column walk (stride = one stripe): one element per stripe, round robin, one run each
    vals, tr = dma.load_strided(mem, np.array([rec.base]), "i32", (9,), *box_args(1, (9,), [1024]), 0)
    assert tr.bytes_by_domain[0].tolist() == [12.0, 8.0, 8.0, 8.0, 0.0] and tr.runs.tolist() == [9]


# ---- gather / scatter ---------------------------------------------------------------------------------
def test_gather_and_scatter_reference(mem):
    rec = mem.alloc(256 * 8, "blocked")
    t = typed(mem, rec, "f64")
    t[:] = np.arange(256) * 0.5
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 256, (3, 4, 5))
    mask = rng.random((3, 4, 5)) < 0.7
    addrs = np.where(mask, rec.base + idx * 8, -12345)  # masked-off addresses are never checked
    vals, tr = dma.gather(mem, addrs, mask, "f64", -1.0)
    assert np.array_equal(vals, np.where(mask, idx * 0.5, -1.0))
    assert tr.elements.tolist() == mask.reshape(3, -1).sum(1).tolist() == tr.runs.tolist()
    dom = idx * 8 // 512
    for p in range(3):
        assert tr.bytes_by_domain[p].tolist() == [*(8.0 * np.sum(mask[p] & (dom[p] == d)) for d in range(4)), 0.0]
    new = rng.random((3, 4, 5))
    want = t.copy()
    for p, i, j in itertools.product(range(3), range(4), range(5)):
        if mask[p, i, j]:
            want[idx[p, i, j]] = new[p, i, j]
    dma.scatter(mem, addrs, mask, new)
    assert np.array_equal(t, want)


def test_scatter_faults_before_writing(mem):
    rec = mem.alloc(64)
    t = typed(mem, rec, "i32")
    with pytest.raises(MemoryFault) as e:
        dma.scatter(mem, np.array([[rec.base], [rec.base + 64]]), None, np.array([[5], [6]], np.int32))
    assert e.value.programs == [1] and t[0] == 0


# ---- atomics ---------------------------------------------------------------------------------------
def ref_atomic(t, op, idx, vals, mask, dtype, cmp=None):
    """Element-by-element reference on a numpy array t (modified in place)."""
    npdt = NUMPY[dtype]
    old = np.zeros(idx.shape, npdt)
    for k in np.ndindex(*idx.shape):
        if not mask[k]:
            continue
        i = idx[k]
        cur = t[i : i + 1].copy()
        old[k] = cur[0]
        v = np.array([vals[k]], npdt)
        if cmp is not None:
            new = (
                v if cur.view(f"u{npdt.itemsize}")[0] == np.array([cmp[k]], npdt).view(f"u{npdt.itemsize}")[0] else cur
            )
        elif op in ("add", "fadd"):
            new = cur + v
        elif op in ("umax", "umin"):
            f = np.maximum if op == "umax" else np.minimum
            new = f(cur.view(UNSIGNED[dtype]), v.view(UNSIGNED[dtype])).view(npdt)
        elif op in ("max", "min"):
            f = {"max": np.maximum, "min": np.minimum} if dtype.startswith("i") else {"max": np.fmax, "min": np.fmin}
            new = f[op](cur, v)
        elif op == "xchg":
            new = v
        else:
            new = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op](cur, v)
        t[i] = new[0]
    return old


OPS_BY_DTYPE = {
    "i32": ["add", "max", "min", "umax", "umin", "and", "or", "xor", "xchg"],
    "i8": ["add", "max", "umin", "xor", "xchg"],
    "i64": ["add", "min", "umax", "or"],
    "f32": ["fadd", "max", "min", "xchg"],
    "f16": ["fadd", "max"],
    "bf16": ["fadd", "min"],
    "f64": ["fadd"],
}


@HYP
@given(data=st.data())
def test_atomic_rmw_matches_sequential_reference(mem, data):
    dtype = data.draw(st.sampled_from(list(OPS_BY_DTYPE)))
    op = data.draw(st.sampled_from(OPS_BY_DTYPE[dtype]))
    npdt = NUMPY[dtype]
    P, n = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 80))
    nslots = data.draw(st.sampled_from([1, 2, 5, 64]))
    rec = mem.alloc(64 * npdt.itemsize)
    t = typed(mem, rec, dtype)
    if not dtype.startswith("i"):
        init = np.array(data.draw(st.lists(st.floats(-100, 100, width=16), min_size=64, max_size=64)), npdt)
        vals = np.array(
            data.draw(
                st.lists(
                    st.sampled_from([0.1, -2.5, 1.0, 3.25, 1e3, float("nan"), -0.0]), min_size=P * n, max_size=P * n
                )
            ),
            np.float64,
        ).astype(npdt)
    else:
        info = np.iinfo(npdt)
        ints = st.integers(int(info.min), int(info.max))
        init = np.array(data.draw(st.lists(ints, min_size=64, max_size=64)), npdt)
        vals = np.array(data.draw(st.lists(ints, min_size=P * n, max_size=P * n)), npdt)
    t[:] = init
    idx = np.array(data.draw(st.lists(st.integers(0, nslots - 1), min_size=P * n, max_size=P * n))).reshape(P, n)
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=P * n, max_size=P * n))).reshape(P, n) | (nslots == 1)
    vals = vals.reshape(P, n)
    want = init.copy()
    want_old = ref_atomic(want, op, idx, vals, mask, dtype)
    old, tr = atomics.atomic_rmw(mem, op, rec.base + idx * npdt.itemsize, vals, mask, dtype)
    assert old.dtype == npdt
    bits = f"u{npdt.itemsize}"
    if op in ("max", "min") and not dtype.startswith("i"):
        # IEEE maxNum/minNum leave the sign of a zero result open: compare -0.0 and +0.0 as equal
        old, want_old, want = old + npdt.type(0), want_old + npdt.type(0), want + npdt.type(0)
        t = t + npdt.type(0)
    assert np.array_equal(old[mask].view(bits), want_old[mask].view(bits))
    assert np.array_equal(t.view(bits), want.view(bits))
    assert tr.elements.tolist() == mask.sum(1).tolist()
    assert tr.bytes_by_domain.sum(1).tolist() == (mask.sum(1) * npdt.itemsize).astype(float).tolist()


@pytest.mark.parametrize("dtype,op", [("i32", "add"), ("f32", "fadd"), ("i64", "xchg"), ("i32", "max")])
def test_4096_atomics_to_one_address(mem, dtype, op):
    rec = mem.alloc(16)
    npdt = NUMPY[dtype]
    P = 64
    vals = np.arange(P * 64).reshape(P, 64).astype(npdt)
    old, _ = atomics.atomic_rmw(mem, op, np.full((P, 64), rec.base), vals, None, dtype)
    t = typed(mem, rec, dtype)
    flat = np.arange(P * 64)
    if op in ("add", "fadd"):
        assert np.array_equal(old.reshape(-1), np.concatenate([[0], np.cumsum(flat)[:-1]]).astype(npdt))
        assert t[0] == flat.sum()
    elif op == "xchg":
        assert old.reshape(-1).tolist() == [0] + flat[:-1].tolist() and t[0] == P * 64 - 1
    else:
        assert old.reshape(-1).tolist() == [0] + flat[:-1].tolist() and t[0] == P * 64 - 1


def test_atomic_add_histogram_and_wraparound(mem):
    rec = mem.alloc(16 * 4)
    rng = np.random.default_rng(1)
    bins = rng.integers(0, 16, (32, 128))
    atomics.atomic_rmw(mem, "add", rec.base + bins * 4, np.ones((32, 128), np.int32), None, "i32")
    assert np.array_equal(typed(mem, rec, "i32"), np.bincount(bins.ravel(), minlength=16))
    r8 = mem.alloc(1)
    old, _ = atomics.atomic_rmw(mem, "add", np.full((1, 3), r8.base), np.array([[100, 100, 100]], np.int8), None, "i8")
    assert old.tolist() == [[0, 100, -56]] and typed(mem, r8, "i8")[0] == 44


def test_fadd_f16_rounds_each_step(mem):
    rec = mem.alloc(2)
    typed(mem, rec, "f16")[0] = 2048
    old, _ = atomics.atomic_rmw(mem, "fadd", np.full((100, 1), rec.base), np.ones((100, 1), np.float16), None, "f16")
    assert typed(mem, rec, "f16")[0] == 2048 and (old == 2048).all()  # 2048 + 1 rounds back to 2048 every time


def test_float_max_ignores_nan_and_umax_is_unsigned(mem):
    rec = mem.alloc(8)
    old, _ = atomics.atomic_rmw(
        mem, "max", np.full((1, 3), rec.base), np.array([[np.nan, 3.0, -1.0]], np.float32), None, "f32"
    )
    assert typed(mem, rec, "f32")[0] == 3.0
    r = mem.alloc(4)
    atomics.atomic_rmw(mem, "umax", np.array([[r.base, r.base]]), np.array([[5, -1]], np.int32), None, "i32")
    assert typed(mem, r, "i32")[0] == -1  # 0xffffffff is the largest unsigned value
    atomics.atomic_rmw(mem, "max", np.array([[r.base]]), np.array([[5]], np.int32), None, "i32")
    assert typed(mem, r, "i32")[0] == 5


def test_atomic_type_errors(mem):
    rec = mem.alloc(8)
    with pytest.raises(SimulatorError, match="fadd"):
        atomics.atomic_rmw(mem, "add", np.array([[rec.base]]), np.array([[1.0]], np.float32), None, "f32")
    with pytest.raises(SimulatorError):
        atomics.atomic_rmw(mem, "fadd", np.array([[rec.base]]), np.array([[1]], np.int32), None, "i32")
    with pytest.raises(SimulatorError, match="unknown op"):
        atomics.atomic_rmw(mem, "nand", np.array([[rec.base]]), np.array([[1]], np.int32), None, "i32")


def test_atomic_faults_before_any_update(mem):
    rec = mem.alloc(8)
    with pytest.raises(MemoryFault) as e:
        atomics.atomic_rmw(mem, "add", np.array([[rec.base], [rec.base + 8]]), np.ones((2, 1), np.int32), None, "i32")
    assert e.value.programs == [1] and typed(mem, rec, "i32")[0] == 0


def test_cas_lock_acquisition_order(mem):
    lock = mem.alloc(4)
    P = 200
    addrs = np.full((P, 1), lock.base)
    me = (np.arange(P) + 1).reshape(P, 1).astype(np.int32)
    # everyone tries to take the free lock: program 0 (first in order) wins, the rest see its id
    old, tr = atomics.atomic_cas(mem, addrs, np.zeros((P, 1), np.int32), me, None, "i32")
    assert old[0, 0] == 0 and (old[1:, 0] == 1).all() and typed(mem, lock, "i32")[0] == 1
    # program 0 releases (1 -> 0) and, later in order, program 5 and then 7 try: 5 wins
    mask = np.zeros((P, 1), bool)
    mask[[0, 5, 7]] = True
    cmp = np.where(np.arange(P)[:, None] == 0, 1, 0).astype(np.int32)
    val = np.where(np.arange(P)[:, None] == 0, 0, me).astype(np.int32)
    old, tr = atomics.atomic_cas(mem, addrs, cmp, val, mask, "i32")
    assert old[[0, 5, 7], 0].tolist() == [1, 0, 6] and typed(mem, lock, "i32")[0] == 6
    assert tr.elements.tolist() == mask[:, 0].astype(int).tolist()


def test_cas_float_compares_bits(mem):
    rec = mem.alloc(4)
    t = typed(mem, rec, "f32")
    t[0] = -0.0
    old, _ = atomics.atomic_cas(
        mem, np.array([[rec.base]]), np.array([[0.0]], np.float32), np.array([[1.0]], np.float32), None, "f32"
    )
    assert t[0] == 0.0 and np.signbit(t[0])  # +0.0 != -0.0 bitwise: no swap
    t[0] = np.nan
    atomics.atomic_cas(
        mem, np.array([[rec.base]]), np.array([[np.nan]], np.float32), np.array([[2.0]], np.float32), None, "f32"
    )
    assert t[0] == 2.0  # same NaN bits compare equal


# ---- external memory through DMA ------------------------------------------------------------------------
def test_registered_numpy_array_through_dma(mem):
    host = np.arange(32, dtype=np.float32)
    rec = mem.register(host.ctypes.data, host.nbytes, "local:2", owner=host)
    vals, tr = dma.load_strided(mem, np.array([rec.base, rec.base + 64]), "f32", (4,), *box_args(2, (4,), [2]), 0)
    assert vals.tolist() == [[0, 2, 4, 6], [16, 18, 20, 22]]
    assert tr.bytes_by_domain[:, 2].tolist() == [16.0, 16.0] and tr.bytes_by_domain.sum() == 32
    dma.store_strided(mem, np.array([rec.base + 4]), -np.ones((1, 3), np.float32), *box_args(1, (3,), [1]))
    assert host[:5].tolist() == [0, -1, -1, -1, 4]
    atomics.atomic_rmw(mem, "fadd", np.array([[rec.base + 124]]), np.array([[0.5]], np.float32), None, "f32")
    assert host[31] == 31.5
    with pytest.raises(MemoryFault):
        dma.gather(mem, np.array([[rec.base + 128]]), None, "f32", 0)


# ---- speed ----------------------------------------------------------------------------------------------
def test_big_strided_load(mem):
    """2^20 fp32 over 1024 programs (32x32 tiles of a 1024x1024 matrix) in one strided load: its values and
    traffic (a few ms; its time printed, benchmarks/bench_sim_speed.py measures it)."""
    rec = mem.alloc(4 << 20)
    typed(mem, rec, "f32")[:] = np.arange(1 << 20)
    pid = np.arange(1024)
    base = rec.base + ((pid // 32) * 32 * 1024 + (pid % 32) * 32) * 4
    args = box_args(1024, (32, 32), [1024, 1])
    best = math.inf
    for _ in range(3):
        t0 = time.perf_counter()
        vals, tr = dma.load_strided(mem, base, "f32", (32, 32), *args, 0.0)
        best = min(best, time.perf_counter() - t0)
    print(f"strided load of 2^20 elements: {best * 1e3:.1f} ms")  # speed is benchmarks/' business, not an assert
    assert vals[33, 1, 2] == (32 + 1) * 1024 + 32 + 2 and tr.bytes_by_domain.sum() == 4 << 20


@HYP
@given(data=st.data())
def test_atomic_cas_matches_sequential_reference(mem, data):
    dtype = data.draw(st.sampled_from(["i32", "i8", "f32", "i64"]))
    npdt = NUMPY[dtype]
    P, n = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 90))
    nslots = data.draw(st.sampled_from([1, 3, 16]))
    small = st.lists(st.integers(0, 3), min_size=P * n, max_size=P * n)
    rec = mem.alloc(16 * npdt.itemsize)
    t = typed(mem, rec, dtype)
    t[:] = np.array(data.draw(st.lists(st.integers(0, 3), min_size=16, max_size=16)), npdt)
    init = t.copy()
    idx = np.array(data.draw(st.lists(st.integers(0, nslots - 1), min_size=P * n, max_size=P * n))).reshape(P, n)
    cmp = np.array(data.draw(small), npdt).reshape(P, n)
    vals = np.array(data.draw(small), npdt).reshape(P, n)
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=P * n, max_size=P * n))).reshape(P, n)
    want = init.copy()
    want_old = ref_atomic(want, "cas", idx, vals, mask, dtype, cmp=cmp)
    old, _ = atomics.atomic_cas(mem, rec.base + idx * npdt.itemsize, cmp, vals, mask, dtype)
    assert np.array_equal(old[mask], want_old[mask]) and np.array_equal(t, want)


def test_store_many_distinct_boxes(mem):
    rec = mem.alloc(64 * 64 * 2)
    t = typed(mem, rec, "i16")
    P = 40  # every program its own box extent: more groups than one strided view each
    base = rec.base + np.arange(P) * 64 * 2
    hi = np.stack([np.full(P, 1), np.arange(P) % 33 + 1], axis=1)
    vals = np.broadcast_to(np.arange(P, dtype=np.int16)[:, None, None] + 1, (P, 1, 64))
    dma.store_strided(mem, base, vals, np.broadcast_to([64, 1], (P, 2)), np.zeros((P, 2), np.int64), hi)
    rows = t.reshape(64, 64)
    for p in range(P):
        assert (rows[p, : hi[p, 1]] == p + 1).all() and (rows[p, hi[p, 1] :] == 0).all()
    back, _ = dma.load_strided(
        mem, base, "i16", (1, 64), np.broadcast_to([64, 1], (P, 2)), np.zeros((P, 2), np.int64), hi, -1
    )
    assert all((back[p, 0, : hi[p, 1]] == p + 1).all() and (back[p, 0, hi[p, 1] :] == -1).all() for p in range(P))


def test_address_order_is_stable_even_without_packing():
    addrs = np.array([5, 1 << 61, 5, 0, 1 << 61, 5], np.int64)  # too wide to pack address and position
    assert dma._address_order(addrs).tolist() == [3, 0, 2, 5, 1, 4]
    assert dma._address_order(np.array([7, 3, 7, 3])).tolist() == [1, 3, 0, 2]


@pytest.mark.parametrize("placement", ["blocked", "interleaved"])
def test_compiled_element_homes_at_every_chunk_and_stripe_edge(mem, placement):
    """``_tiles.element_homes`` at each chunk's or stripe's first and last elements and their neighbours, in
    a blocked allocation whose chunk is not a power of two (its quotient without a division: corrected by
    one either way) and an interleaved one: each element's own home (``DeviceMemory.home_domain``)."""
    if dma._element_homes is None:
        pytest.skip("sim._tiles is not built with element_homes (setup.py build_ext)")
    rec = mem.alloc(4 * 256512, placement)  # blocked: 4 chunks of 256,512 bytes (256 x 1002)
    g = rec.granule
    edges = np.arange(g, rec.nbytes, g)[:64]
    rel = np.unique(np.clip(np.concatenate([edges - 4, edges, edges + 4, [0, rec.nbytes - 4]]), 0, rec.nbytes - 4))
    if placement == "blocked":  # the reciprocal's quotient is one short at some chunk starts: corrected
        assert g == 256512 and ((rel * (1.0 / g)).astype(np.int64) != rel // g).any()
    addrs = (rec.base + rel).astype(np.int64)
    counts = np.array([addrs.size // 2, addrs.size - addrs.size // 2], np.int64)
    out = np.zeros((2, mem.traffic_columns))
    dma._element_homes(out, addrs, counts, rec.base, g, rec.owners, rec.striped, 4.0)
    expect = np.zeros_like(out)
    homes = mem.home_domain(addrs)
    np.add.at(expect, (np.repeat([0, 1], counts), homes), 4.0)
    assert out.tobytes() == expect.tobytes()
    assert len(set(homes.tolist())) == len(rec.owners)  # every owner's edges were asked


@pytest.mark.parametrize(
    "case", ["increasing", "permuted", "wide", "duplicates", "misaligned", "duplicates_wide", "one"]
)
def test_last_writes_keeps_the_last_write_to_each_address(case):
    """``_last_writes``: each address's last write in (program, element) order, the writes in address
    order, or all of them as they are when no two share an address, whether that is told by increase, by
    the table of slots (``_distinct``) or by the sort: the same as a write-by-write reference."""
    rng = np.random.default_rng(3)
    n, step = 4096, 4
    addrs = (1 << 40) + step * {
        "increasing": np.arange(n) * 3,
        "permuted": rng.permutation(2 * n)[:n],  # unique, within the table's slots
        "wide": rng.permutation(n) * (dma.DISTINCT_SLOTS + 1),  # unique, past the slots per address: sorted
        "duplicates": rng.integers(0, n, n),
        "misaligned": rng.permutation(n),
        "duplicates_wide": rng.integers(0, n, n) * (dma.DISTINCT_SLOTS + 1),
        "one": np.zeros(1, np.int64),
    }[case].astype(np.int64)
    if case == "misaligned":  # distinct addresses half a step apart, two to a slot: not told apart by the table
        addrs = (1 << 40) + (step // 2) * rng.permutation(n).astype(np.int64)
    values = np.arange(addrs.size, dtype=np.float32)
    pos = np.arange(addrs.size) % 3
    got_a, got_v, got_p = dma._last_writes(addrs, values, pos, step)
    last = {}
    for i, a in enumerate(addrs.tolist()):
        last[a] = i
    keep = np.array(sorted(last.values(), key=lambda i: addrs[i]))
    if len(last) == addrs.size:  # all kept: as they are, in order
        keep = np.arange(addrs.size)
    assert got_a.tolist() == addrs[keep].tolist()
    assert got_v.tolist() == values[keep].tolist() and got_p.tolist() == pos[keep].tolist()
    assert (len(last) < addrs.size) == case.startswith("duplicates")


def test_float8_e5m2_store_and_load_round_trip():
    import ml_dtypes

    from triton_plate_backend.sim import dma
    from triton_plate_backend.sim.memory import DeviceMemory

    mem = DeviceMemory("plate-mini")
    base = mem.alloc(8).base
    vals = np.arange(8, dtype=np.float32).astype(ml_dtypes.float8_e5m2).reshape(1, 8)
    dma.store_strided(mem, [base], vals, [1], [0], [8], "f8e5m2")
    got, _ = dma.load_strided(mem, np.array([base]), "f8e5m2", (8,), [1], [0], [8], 0.0)
    np.testing.assert_array_equal(got.astype(np.float32), vals.astype(np.float32))


@pytest.mark.parametrize("extra", [0, 768])  # 768 more bytes: blocked chunks of 2^18 + 256 bytes, not a power of two
@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("placement", ["blocked", "interleaved", "local:2"])
@pytest.mark.parametrize("rows", ["within", "straddling", "masked", "middle"])
def test_element_traffic_by_home_counts_each_element_in_its_home_domain(
    mem, placement, rows, compiled, extra, monkeypatch
):
    """A gather's bytes by home domain (``dma.element_traffic``): a blocked allocation's rows are counted
    whole where a row stays in one chunk and by chunk where it crosses some (``middle``: rows within the
    second and third chunks, some in one of them); every placement the same counts as each element's own
    home domain (``DeviceMemory.home_domain``), bit for bit, in C (``_tiles.element_homes``: the elements
    in one allocation of several owners) and in numpy."""
    if compiled and dma._element_homes is None:
        pytest.skip("sim._tiles is not built with element_homes (setup.py build_ext)")
    monkeypatch.setattr(dma, "COMPILED_TILES", compiled)
    calls, homes = [], dma._element_homes
    if compiled:
        monkeypatch.setattr(dma, "_element_homes", lambda *a: calls.append(1) or homes(*a))
    rec = mem.alloc((1 << 20) + extra, placement)  # blocked over plate-mini's 4 domains: a chunk of 256 KiB each
    if placement == "blocked":
        assert rec.granule == (1 << 18) + (256 if extra else 0)
    other = mem.alloc(1 << 12, "local:1")  # a second allocation in the same access
    rng = np.random.default_rng(7)
    P, N = 12, 96
    if rows == "within":  # each row inside one chunk
        addrs = rec.base + (rng.integers(0, 4, P)[:, None] << 18) + 4 * rng.integers(0, 1 << 16, (P, N))
    elif rows == "middle":  # rows crossing from the second chunk into the third, two inside the second
        addrs = rec.base + (1 << 18) + 4 * rng.integers(0, 1 << 17, (P, N))
        addrs[[2, 7]] = rec.base + (1 << 18) + 4 * rng.integers(0, 1 << 16, (2, N))
    else:  # rows spread over the whole allocation, one of them into the other allocation
        addrs = rec.base + 4 * rng.integers(0, 1 << 18, (P, N))
        addrs[3, ::5] = other.base + 4 * rng.integers(0, 1 << 10, N)[::5]
    mask = rng.random((P, N)) < 0.7 if rows == "masked" else None
    if mask is not None:
        mask[5] = False  # a program that moves nothing
    t = dma.element_traffic(mem, addrs, mask, "f32")
    expect = np.zeros((P, mem.traffic_columns))
    homes = mem.home_domain(addrs)
    for p in range(P):
        for i in range(N):
            if mask is None or mask[p, i]:
                expect[p, homes[p, i]] += 4.0
    assert t.bytes_by_domain.tobytes() == expect.tobytes()
    assert t.elements.tolist() == [N if mask is None else int(mask[p].sum()) for p in range(P)]
    assert len(calls) == (compiled and placement != "local:2" and rows in ("within", "middle"))  # in one, of several


@pytest.mark.parametrize("placement", ["local:1", "blocked", "interleaved", [2, 0, 3], "replicated"])
def test_one_address_atomics_match_the_sorted_path(mem, placement):
    """An atomic whose elements all have one address (a lock's spinners, one program's element) takes
    ``_one_address`` and ``_one_address_traffic``: no sort, no grouping, one home. At an address in each
    owner's chunk or stripe, with programs masked off, its old values, memory and Traffic (bytes by home,
    element and run counts: the same float64 bits) are those of the general path (``_element_traffic``)."""
    rec = mem.alloc(4 * 256512, placement)
    t = typed(mem, rec, "i32")
    P = 300  # past _BIG_GROUP: a hot CAS run
    mask = (np.arange(P) % 7 != 3)[:, None]
    for rel in sorted({0, rec.granule - 4, rec.granule, rec.nbytes - 4} & set(range(0, rec.nbytes, 4))):
        addrs = np.full((P, 1), rec.base + rel, np.int64)
        t[rel // 4] = 0
        cmp, vals = np.zeros((P, 1), np.int32), (np.arange(P, dtype=np.int32) % 2)[:, None]
        old, traffic = atomics.atomic_cas(mem, addrs, cmp, vals, mask, "i32")
        want_old = np.where(mask, 1, 0)  # first unmasked program swaps 0 -> 0 (program 0's value), next 0 -> 1
        want_old[:2] = 0
        assert old.tolist() == want_old.tolist() and t[rel // 4] == 1
        av, counts = dma._elements_of(addrs, mask)
        want = dma._element_traffic(mem, mem.locate(addrs, 4, mask, "cas", av), av, counts, 4)
        for got, expect in zip(
            (traffic.bytes_by_domain, traffic.elements, traffic.runs),
            (want.bytes_by_domain, want.elements, want.runs),
        ):
            assert got.dtype == expect.dtype and got.shape == expect.shape and got.tobytes() == expect.tobytes()
        assert traffic.bytes_by_domain.sum() == 4 * mask.sum()
        old, traffic = atomics.atomic_rmw(mem, "xchg", addrs[:1], np.full((1, 1), 7, np.int32), None, "i32")
        assert old.tolist() == [[1]] and t[rel // 4] == 7
        want = dma._element_traffic(mem, mem.locate(addrs[:1], 4), addrs[:1].reshape(-1), np.ones(1, np.int64), 4)
        assert traffic.bytes_by_domain.tobytes() == want.bytes_by_domain.tobytes()


@pytest.mark.parametrize("P", [2, 10, 64, 65, 300])
def test_one_address_atomics_match_the_reference(mem, P):
    """Every element at one address (a lock, a counter) at any count: a CAS chain that swaps at every element
    (past the searched jumps) and one that swaps at some, exchanges and adds, against the element-by-element
    reference; the old values, what memory holds after, and the traffic in the address's home domain."""
    rec = mem.alloc(64)
    t = typed(mem, rec, "i32")
    idx = np.full((P, 1), 3)
    addrs = rec.base + idx * 4
    mask = np.ones((P, 1), bool)
    mask[1::3] = False
    chain = np.arange(P, dtype=np.int32).reshape(P, 1)
    rng = np.random.default_rng(P)
    some = rng.integers(0, 3, (P, 1)).astype(np.int32)
    for cmp, vals in ((chain, chain + 1), (some, rng.integers(0, 3, (P, 1)).astype(np.int32))):
        t[:] = 0
        want = t.copy()
        want_old = ref_atomic(want, "cas", idx, vals, mask, "i32", cmp=cmp)
        old, tr = atomics.atomic_cas(mem, addrs, cmp, vals, mask, "i32")
        assert np.array_equal(old[mask], want_old[mask]) and (old[~mask] == 0).all() and np.array_equal(t, want)
        assert tr.elements.tolist() == mask[:, 0].astype(int).tolist()
        assert tr.bytes_by_domain.sum() == 4 * mask.sum()
    for op in ("xchg", "add", "max"):
        vals = rng.integers(-5, 5, (P, 1)).astype(np.int32)
        want = t.copy()
        want_old = ref_atomic(want, op, idx, vals, mask, "i32")
        old, _ = atomics.atomic_rmw(mem, op, addrs, vals, mask, "i32")
        assert np.array_equal(old[mask], want_old[mask]) and np.array_equal(t, want)


def test_one_address_atomic_faults_name_the_programs(mem):
    """One address for every element, but misaligned or past the allocation's end: the fault names every program
    that touched it, and memory is unchanged."""
    rec = mem.alloc(256)
    t = typed(mem, rec, "i32")
    mask = np.array([[True], [False], [True]])
    for addr, what in ((rec.base + 2, "misaligned"), (rec.end, "outside")):
        with pytest.raises(MemoryFault) as e:
            atomics.atomic_cas(
                mem, np.full((3, 1), addr), np.zeros((3, 1), np.int32), np.ones((3, 1), np.int32), mask, "i32"
            )
        assert e.value.programs == [0, 2], what
        with pytest.raises(MemoryFault):
            atomics.atomic_rmw(mem, "add", np.full((1, 1), addr), np.ones((1, 1), np.int32), None, "i32")
    assert (t == 0).all()
