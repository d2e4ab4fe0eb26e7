"""The simulator's fast paths give the results of the plain code, bit for bit: one program's strided DMA
(sim/dma_one.py) against the batched code in sim/dma.py, a hot CAS run against an element-by-element
loop, a packed trace against the trace it packs."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from triton_plate_backend.sim import atomics, dma, dma_one
from triton_plate_backend.sim.memory import DeviceMemory
from triton_plate_backend.sim.trace import Trace, TraceEntry

HYP = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
DTYPES = ("f32", "i8", "i1", "f16", "i64", "bf16")
PLACEMENTS = ("interleaved", "local:1", "blocked")


@pytest.fixture(scope="module")
def mem():
    return DeviceMemory("plate-mini")


@st.composite
def accesses(draw):
    r = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=r, max_size=r)))
    strides = draw(st.lists(st.sampled_from([1, -1, 0, 2, 3, 7, 64, 1100, -5]), min_size=r, max_size=r))
    lo = draw(st.lists(st.integers(-2, 2), min_size=r, max_size=r))
    hi = draw(st.lists(st.integers(0, 7), min_size=r, max_size=r))
    return (
        draw(st.sampled_from(DTYPES)),
        draw(st.sampled_from(PLACEMENTS)),
        shape,
        np.array([strides], np.int64),
        np.array([lo], np.int64),
        np.array([hi], np.int64),
        draw(st.integers(0, 3000)),  # elements from the allocation's start to the tile's base
        draw(st.integers(0, 2**31)),  # seed of the contents
    )


def _setup(mem, dtype, placement, offset, seed, nbytes=64 * 1024):
    rec = mem.alloc(nbytes, placement)
    mem.view(rec.base, nbytes)[:] = np.random.default_rng(seed).integers(0, 256, nbytes, dtype=np.uint8)
    isz = dma._storage(dtype).itemsize
    return rec, np.array([rec.base + offset * isz], np.int64)


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint8)


def _same_traffic(a, b):
    for f in ("bytes_by_domain", "elements", "runs"):
        x, y = getattr(a, f), getattr(b, f)
        assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y), f


@HYP
@given(access=accesses())
def test_load_matches_the_batched_load(mem, access):
    dtype, placement, shape, strides, lo, hi, offset, seed = access
    rec, base = _setup(mem, dtype, placement, offset, seed)
    try:
        fast = dma_one.load(mem, base, dtype, shape, strides, lo, hi, 7)
        if fast is not None:
            want_vals, want_traffic = dma.load_strided(mem, base, dtype, shape, strides, lo, hi, 7)
            vals, traffic = fast
            assert vals.dtype == want_vals.dtype and vals.shape == want_vals.shape
            assert _bits(vals).tobytes() == _bits(want_vals).tobytes()
            _same_traffic(traffic, want_traffic)
    finally:
        mem.free(rec.base)


@HYP
@given(access=accesses())
def test_store_matches_the_batched_store(mem, access):
    dtype, placement, shape, strides, lo, hi, offset, seed = access
    rec, base = _setup(mem, dtype, placement, offset, seed)
    before = mem.read_bytes(rec.base, rec.nbytes)
    values = np.random.default_rng(seed + 1).integers(0, 256, (1, *shape, 8), dtype=np.uint8)
    values = values.view(dma._storage(dtype))[..., 0].astype(dma.NUMPY[dtype]) if dtype != "i1" else values[..., 0] & 1
    try:
        traffic = dma_one.store(mem, base, values, strides, lo, hi, dtype)
        if traffic is not None:
            after = mem.read_bytes(rec.base, rec.nbytes)
            mem.write_bytes(rec.base, before)
            want = dma.store_strided(mem, base, values, strides, lo, hi, dtype=dtype)
            assert after == mem.read_bytes(rec.base, rec.nbytes)
            _same_traffic(traffic, want)
    finally:
        mem.free(rec.base)


def test_a_plain_tile_takes_the_one_program_path(mem):
    """The common case (a contiguous row, a masked tail) must not fall back, or the path is dead code."""
    rec, base = _setup(mem, "f32", "interleaved", 1000, 1)
    try:
        args = (np.array([[1]]), np.array([[0]]), np.array([[100]]))
        assert dma_one.load(mem, base, "f32", (128,), *args, 0.0) is not None
        assert dma_one.store(mem, base, np.ones((1, 128), np.float32), *args, "f32") is not None
    finally:
        mem.free(rec.base)


def test_off_the_common_path_it_declines(mem):
    rec, base = _setup(mem, "f32", "interleaved", 0, 1)
    try:
        ones = (np.array([[1]]), np.array([[0]]), np.array([[4]]))
        assert dma_one.load(mem, base + 1, "f32", (4,), *ones, 0.0) is None  # misaligned: the batched code faults
        assert dma_one.load(mem, base - 64, "f32", (4,), *ones, 0.0) is None  # outside the allocation
        two = np.zeros((2, 1), np.int64)  # two programs: the batched code's business
        assert dma_one.load(mem, base.repeat(2), "f32", (4,), two + 1, two, two + 4, 0.0) is None
        overlapping = (np.array([[0]]), np.array([[0]]), np.array([[4]]))  # stride 0: four writes to one element
        assert dma_one.store(mem, base, np.ones((1, 4), np.float32), *overlapping, "f32") is None
    finally:
        mem.free(rec.base)


def _cas_loop(cur, cs, vs):
    olds = []
    for c, x in zip(cs.tolist(), vs.tolist()):
        olds.append(cur)
        cur = x if cur == c else cur
    return olds, cur


@HYP
@given(values=st.lists(st.integers(0, 3), min_size=1, max_size=300), seed=st.integers(0, 2**31))
def test_a_hot_cas_run_is_the_loop_over_its_elements(values, seed):
    """Few distinct values: runs of many successful swaps, past the jumps into the plain loop."""
    cs = np.array(values, np.uint32)
    vs = np.random.default_rng(seed).integers(0, 4, cs.size).astype(np.uint32)
    olds, final = atomics._cas_run(np.uint32(values[-1]), cs, vs)
    want_olds, want_final = _cas_loop(int(values[-1]), cs, vs)
    assert olds.dtype == np.uint32 and olds.tolist() == want_olds and int(final) == want_final


def test_a_lock_run_takes_one_jump():
    cs, vs = np.zeros(1000, np.uint32), np.ones(1000, np.uint32)  # 1000 spinners: only the first gets the lock
    olds, final = atomics._cas_run(np.uint32(0), cs, vs)
    assert olds[0] == 0 and (olds[1:] == 1).all() and final == 1


def _trace(rng, program=None):
    """A trace shaped like a spin loop: contexts shrinking by one, with shared program arrays."""
    entries, pids = [], np.arange(40, dtype=np.int64)
    for _ in range(30):
        for pc in range(4):
            traffic = (None, None, None)
            if pc == 2:
                traffic = (
                    np.tile([[4.0, 0, 0, 0]], (pids.size, 1)),
                    np.ones(pids.size, np.int64),
                    rng.integers(0, 3, pids.size),
                )
            entries.append(TraceEntry(pc, pids, *traffic))
        entries.append(TraceEntry(5, pids[:1].copy()))
        pids = pids[1:]
    return Trace(program, (40, 1, 1), entries)


def test_a_packed_trace_unpacks_to_the_same_trace():
    trace = _trace(np.random.default_rng(0))
    packed = trace.pack()
    assert packed.nbytes() < trace.nbytes() / 3  # spin traces pack well (bitmaps, equal rows)
    back = packed.unpack()
    assert back.digest() == trace.digest() and back.grid == trace.grid and back.program is trace.program
    for e, f in zip(trace.entries, back.entries, strict=True):
        assert e.pc == f.pc
        for a, b in zip(
            (e.programs, e.bytes_by_domain, e.elements, e.runs), (f.programs, f.bytes_by_domain, f.elements, f.runs)
        ):
            assert (a is None) == (b is None)
            if a is not None:
                assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    shared = [id(e.programs) for e in back.entries]
    assert len(set(shared)) == len({id(e.programs) for e in trace.entries})  # sharing kept


def test_a_digest_sees_every_field():
    a, b = _trace(np.random.default_rng(1)), _trace(np.random.default_rng(1))
    assert a.digest() == b.digest()
    b.entries[7].runs = b.entries[7].runs + 1
    assert a.digest() != b.digest()
    c = _trace(np.random.default_rng(1))
    c.entries[3] = TraceEntry(c.entries[3].pc, c.entries[3].programs.copy())  # same values, not shared
    assert a.digest() != c.digest()
