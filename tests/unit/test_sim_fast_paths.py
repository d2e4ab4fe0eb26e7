"""The simulator's fast paths give the results of the plain code, bit for bit: one program's strided DMA
(sim/dma_one.py) against the batched code in sim/dma.py, a hot CAS run against an element-by-element
loop, a packed trace against the trace it packs, merged runs of compute-engine steps against step by
step timing, m.mma's in-place widened f32 sum (on threads) against the plain expression, m.mma's BLAS on one
thread against its threads, max/min with ordered zeros against their np.where form, rows split across threads."""

import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trace_compare import assert_same_entries

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
            if dtype != "i1":  # into the destination's array (its old bytes garbage): the same values, in it
                into = np.frombuffer(b"\x5a" * want_vals.nbytes, want_vals.dtype).reshape(want_vals.shape).copy()
                vals, traffic = dma_one.load(mem, base, dtype, shape, strides, lo, hi, 7, into=into)
                assert _bits(vals).tobytes() == _bits(want_vals).tobytes()
                assert vals is into  # the tile, or with nothing to move the fill value, written into it
                _same_traffic(traffic, want_traffic)
    finally:
        mem.free(rec.base)


@HYP
@given(access=accesses(), base=st.sampled_from([4096, -8, 2**61, 2**62 - 4096]))
def test_a_box_from_the_registers_is_the_box_of_their_rows(access, base):
    """sem_memory's one-program load and store read the box's words from the registers (``box_of``): the box
    ``_box`` makes of the [1, rank] rows, field by field, or None alike (no safe int64 arithmetic)."""
    dtype, _, shape, strides, lo, hi, offset, _ = access
    r = len(shape)
    regs = np.full((3 * r + 2, 1), 99, np.int64)
    regs[0, 0] = base + offset
    regs[1 : 1 + r, 0], regs[1 + r : 1 + 2 * r, 0], regs[1 + 2 * r : 1 + 3 * r, 0] = strides[0], lo[0], hi[0]
    ss, ls, hs = list(range(1, 1 + r)), list(range(1 + r, 1 + 2 * r)), list(range(1 + 2 * r, 1 + 3 * r))
    got = dma_one.box_of(regs, 0, ss, ls, hs, dtype, shape)
    want = dma_one._box(regs[0], dtype, shape, strides, lo, hi)
    assert (got is None) == (want is None)
    if want is not None:
        assert vars(got) == vars(want)
    assert dma_one.box_of(regs, 0, ss[:-1], ls, hs, dtype, shape) is None  # a list short of the rank: the batched path


def _random_values(dtype, shape, seed):
    """[1, *shape] values of ``dtype`` from random bits (any pattern: NaNs, infinities, subnormals)."""
    values = np.random.default_rng(seed).integers(0, 256, (1, *shape, 8), dtype=np.uint8)
    return values.view(dma._storage(dtype))[..., 0].astype(dma.NUMPY[dtype]) if dtype != "i1" else values[..., 0] & 1


def _store_as_batched(mem, rec, before, base, values, strides, lo, hi, dtype):
    """The one-program store, where it takes the access, writes what the batched store writes from the same
    memory (``before``: rec's bytes before), with its Traffic."""
    traffic = dma_one.store(mem, base, values, strides, lo, hi, dtype)
    if traffic is not None:
        after = mem.read_bytes(rec.base, rec.nbytes)
        mem.write_bytes(rec.base, before)
        want = dma.store_strided(mem, base, values, strides, lo, hi, dtype=dtype)
        assert after == mem.read_bytes(rec.base, rec.nbytes)
        _same_traffic(traffic, want)


@HYP
@given(access=accesses())
def test_store_matches_the_batched_store(mem, access):
    dtype, placement, shape, strides, lo, hi, offset, seed = access
    rec, base = _setup(mem, dtype, placement, offset, seed)
    before = mem.read_bytes(rec.base, rec.nbytes)
    values = _random_values(dtype, shape, seed + 1)
    try:
        _store_as_batched(mem, rec, before, base, values, strides, lo, hi, dtype)
    finally:
        mem.free(rec.base)


@HYP
@given(access=accesses(), room=st.integers(1, 48))
def test_a_tile_past_its_allocations_end_loads_and_stores_its_valid_elements(mem, access, room):
    """A tile whose masked-off elements may lie past its allocation's end (a ragged last block), ``room``
    elements from its base to that end: the one-program path reads and writes only the valid elements,
    with the batched code's values, memory and Traffic (or declines)."""
    dtype, placement, shape, strides, lo, hi, _, seed = access
    isz = dma._storage(dtype).itemsize
    rec, base = _setup(mem, dtype, placement, 64, seed, nbytes=(64 + room) * isz)
    before = mem.read_bytes(rec.base, rec.nbytes)
    values = _random_values(dtype, shape, seed + 1)
    try:
        fast = dma_one.load(mem, base, dtype, shape, strides, lo, hi, 7)
        if fast is not None:
            want_vals, want_traffic = dma.load_strided(mem, base, dtype, shape, strides, lo, hi, 7)
            assert _bits(fast[0]).tobytes() == _bits(want_vals).tobytes()
            _same_traffic(fast[1], want_traffic)
        _store_as_batched(mem, rec, before, base, values, strides, lo, hi, dtype)
    finally:
        mem.free(rec.base)


@pytest.mark.parametrize("placement", PLACEMENTS)
@pytest.mark.parametrize("dtype", ["f32", "i8", "f16", "i64"])
def test_one_element_over_a_block_counts_the_batched_traffic(mem, placement, dtype):
    """An eager 0-dim view's load and store: one element read with stride 0 over a 512-lane block (one valid
    lane, or a wider box clipped to one), at every element around stripe and chunk boundaries: the batched
    code's values and Traffic, counted as one range without numpy arrays."""
    rec, base = _setup(mem, dtype, placement, 0, 3)
    isz = dma._storage(dtype).itemsize
    try:
        for boundary in (4096, 16384, 32768):
            for delta in range(-2 * isz, 2 * isz, isz):
                at = np.array([rec.base + boundary + delta], np.int64)
                for shape, strides, lo, hi in (
                    ((512,), [[0]], [[0]], [[1]]),
                    ((3, 4), [[5, 0]], [[2, 1]], [[3, 2]]),  # one element of a strided box
                ):
                    strides, lo, hi = (np.array(v, np.int64) for v in (strides, lo, hi))
                    vals, traffic = dma_one.load(mem, at, dtype, shape, strides, lo, hi, 7)
                    want_vals, want = dma.load_strided(mem, at, dtype, shape, strides, lo, hi, 7)
                    assert _bits(vals).tobytes() == _bits(want_vals).tobytes()
                    _same_traffic(traffic, want)
                    values = np.asarray(want_vals)
                    _same_traffic(
                        dma_one.store(mem, at, values, strides, lo, hi, dtype),
                        dma.store_strided(mem, at, values, strides, lo, hi, dtype),
                    )
    finally:
        mem.free(rec.base)


@pytest.mark.parametrize("placement", PLACEMENTS)
@pytest.mark.parametrize("shape", [(40,), (1, 40), (2, 40)])
@pytest.mark.parametrize("step", [1, -1])
def test_one_row_traffic_across_a_stripe_or_chunk_boundary(mem, placement, shape, step):
    """The one-row access (one byte range, counted in Python integers) around every boundary of the
    allocation's stripes (interleaved: 4 KiB) and chunks (blocked: 16 KiB): the batched code's Traffic."""
    rec, base = _setup(mem, "f32", placement, 0, 1)
    r = len(shape)
    inner = [1] * r
    for k in range(r - 2, -1, -1):
        inner[k] = inner[k + 1] * shape[k + 1]
    strides = np.array([[step * s for s in inner]], np.int64)
    lo, hi = np.zeros((1, r), np.int64), np.array([shape], np.int64)
    extent = (max(shape) - 1) * 4
    try:
        for boundary in (4096, 8192, 16384, 32768):
            for delta in range(-extent - 8, 12, 4):  # the row's bytes before, across and after the boundary
                first = boundary + delta if step == 1 else boundary + delta + extent
                at = np.array([rec.base + first], np.int64)
                for b in (lo, np.array([[1] * r], np.int64)):  # the whole row, then all but its first element
                    fast = dma_one.load(mem, at, "f32", shape, strides, b, hi, 0.0)
                    assert fast is not None
                    _same_traffic(fast[1], dma.load_strided(mem, at, "f32", shape, strides, b, hi, 0.0)[1])
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
    rec = mem.alloc(100 * 4)  # n = 100 elements, BLOCK 128: the masked-off lanes past the allocation's end
    try:
        base = np.array([rec.base], np.int64)
        mem.view(rec.base, 400)[:] = np.arange(400, dtype=np.uint32).astype(np.uint8)
        vals, _ = dma_one.load(mem, base, "f32", (128,), *args, 0.0)
        assert _bits(vals[0, :100]).tobytes() == mem.read_bytes(rec.base, 400) and not vals[0, 100:].any()
        assert dma_one.store(mem, base, -vals, *args, "f32") is not None
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
    assert_same_entries(trace.entries, back.entries)
    shared = [id(e.programs) for e in back.entries]
    assert len(set(shared)) == len({id(e.programs) for e in trace.entries})  # sharing kept


@pytest.mark.parametrize("dtype", [np.int64, np.float64, np.float32, np.int16, np.int8, np.bool_])
@pytest.mark.parametrize("cols", [None, 1, 3, 5])
def test_a_packed_array_of_runs_unpacks_bit_for_bit(dtype, cols):
    """Arrays of runs of equal rows (rows that differ in one byte of one element, too) pack to runs where
    the rows repeat and unpack to the same bits, shape and dtype."""
    from triton_plate_backend.sim.trace import _pack_array, _Runs, _unpack_array

    rng = np.random.default_rng(cols or 0)
    for _ in range(40):
        n = int(rng.integers(2, 200))
        rows = rng.integers(0, 3, (int(rng.integers(1, 6)), *(() if cols is None else (cols,)))).astype(dtype)
        a = np.ascontiguousarray(np.repeat(rows, rng.integers(1, 60, rows.shape[0]), axis=0)[:n])
        if a.shape[0] < 2:
            continue
        packed = _pack_array(a)
        back = _unpack_array(packed)
        assert back.dtype == a.dtype and back.shape == a.shape and _bits(back).tobytes() == _bits(a).tobytes()
        flips = a.copy()
        flips.view(np.uint8).reshape(a.shape[0], -1)[a.shape[0] // 2, -1] ^= 1  # one byte of one row's last element
        back = _unpack_array(_pack_array(flips))
        assert _bits(back).tobytes() == _bits(flips).tobytes()
    assert isinstance(_pack_array(np.zeros((64, *(() if cols is None else (cols,))), dtype)), _Runs)


def test_a_packed_trace_gives_its_source_while_it_lives_then_unpacks():
    """What the clock times a kept trace from: the Trace it was packed from (no unpacking) while
    something holds it, an equal unpacked one once it is gone."""
    import gc

    trace = _trace(np.random.default_rng(2))
    want = trace.digest()
    packed = trace.pack()
    assert packed.trace() is trace
    entries = list(trace.entries)
    del trace
    gc.collect()
    back = packed.trace()
    assert packed.trace() is not back  # the source is gone: unpacked afresh at each call
    assert back.digest() == want
    assert_same_entries(entries, back.entries)


def test_packs_like_is_true_only_for_the_same_digest():
    """Trace.packs_like (the clock's repeat test without packing) says True only where the digests are
    equal: the same entries in new arrays, not a changed element, pc, dtype or sharing of an array."""
    a, b = _trace(np.random.default_rng(1)), _trace(np.random.default_rng(1))
    assert a.packs_like(b) and b.packs_like(a) and a.digest() == b.digest()
    changed = []
    c = _trace(np.random.default_rng(1))
    c.entries[7].runs = c.entries[7].runs + 1
    changed.append(c)
    c = _trace(np.random.default_rng(1))
    c.entries[3] = TraceEntry(c.entries[3].pc, c.entries[3].programs.copy())  # same values, not shared
    changed.append(c)
    c = _trace(np.random.default_rng(1))
    c.entries[2].bytes_by_domain = c.entries[2].bytes_by_domain.astype(np.float32)
    changed.append(c)
    c = _trace(np.random.default_rng(1))
    c.entries[4] = TraceEntry(9, c.entries[4].programs)
    changed.append(c)
    c = _trace(np.random.default_rng(1))
    c.entries[2].elements = None
    changed.append(c)
    c = _trace(np.random.default_rng(1))
    c.entries.pop()
    changed.append(c)
    for c in changed:
        assert not a.packs_like(c) and not c.packs_like(a)
        assert a.digest() != c.digest()


def test_a_digest_sees_every_field():
    a, b = _trace(np.random.default_rng(1)), _trace(np.random.default_rng(1))
    assert a.digest() == b.digest()
    b = _trace(np.random.default_rng(1))  # a trace's entries do not change once packed (Trace.pack keeps it)
    b.entries[7].runs = b.entries[7].runs + 1
    assert a.digest() != b.digest()
    c = _trace(np.random.default_rng(1))
    c.entries[3] = TraceEntry(c.entries[3].pc, c.entries[3].programs.copy())  # same values, not shared
    assert a.digest() != c.digest()


# ---- level-1 timing: runs of compute-engine steps merged ---------------------------------------------
def _run_program():
    """Loads, waits, a fence, chains of compute over overlapping tiles, scalar runs, a store."""
    from triton_plate_backend.isa.program import Inst, Program, Tile

    tiles = [Tile(0, "f32", (1024,)), Tile(4096, "f32", (1024,)), Tile(8192, "f32", (1024,)), Tile(0, "f32", (512,))]
    load = lambda q, t: Inst("dma.load", (), (q, t, 0, (1,), (2,), (1,), 0))  # noqa: E731
    store = lambda q, t: Inst("dma.store", (), (q, t, 0, (1,), (2,), (1,)))  # noqa: E731
    ins = [
        Inst("s.li", (), (0, 0)),
        load(0, 0),
        load(1, 1),
        Inst("s.li", (), (1, 0)),
        Inst("dma.wait", (), (0,)),
        Inst("v.exp", (), (2, 0)),
        Inst("s.li", (), (2, 0)),
        Inst("dma.wait", (), (1,)),
        Inst("v.add", (), (3, 1, 2)),
        Inst("v.exp", (), (1, 3)),
        Inst("fence", ("acq_rel",), ()),
        Inst("v.exp", (), (0, 2)),
        store(2, 0),
        Inst("v.exp", (), (2, 1)),
        Inst("v.exp", (), (3, 2)),
        store(3, 2),
        Inst("halt"),
    ]
    return Program("runs", ins, tiles, consts=[0])


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31), st.sampled_from([1, 5, 40, 100]), st.sampled_from(["round_robin", "blocked"]))
def test_merged_compute_runs_time_as_step_by_step(seed, nprog, policy):
    from triton_plate_backend.machine import get_machine
    from triton_plate_backend.sim import replay
    from triton_plate_backend.sim.timing import simulate_timing

    machine = get_machine("plate1")
    prog = _run_program()
    rng = np.random.default_rng(seed)
    allp = np.arange(nprog)
    some = np.flatnonzero(rng.random(nprog) < 0.5) if nprog > 1 else allp
    entries = []
    for pc, ins in enumerate(prog.instrs):
        who = some if ins.mnemonic == "v.exp" and pc > 10 and some.size else allp  # a branch skips a part
        for _ in range(2 if pc in (5, 9) else 1):  # a loop runs these twice
            if ins.row.unit in ("dma_in", "dma_out"):
                b = rng.integers(0, 3, (who.size, machine.total_domains)) * rng.uniform(100, 9000)
                entries.append(TraceEntry(pc, who, b, np.full(who.size, 1024), np.full(who.size, 3)))
            else:
                entries.append(TraceEntry(pc, who))
    trace = Trace(prog, (nprog, 1, 1), entries)
    merged = simulate_timing(trace, machine, policy=policy)
    replay.MERGE_RUNS = False
    try:
        plain = simulate_timing(trace, machine, policy=policy)
    finally:
        replay.MERGE_RUNS = True
    assert merged.cycles == plain.cycles
    for field in ("busy_by_core", "read_bytes", "write_bytes"):
        np.testing.assert_array_equal(getattr(merged, field), getattr(plain, field))
    assert (merged.instr_count, merged.dma_count, merged.flops) == (plain.instr_count, plain.dma_count, plain.flops)


# ---- m.mma: narrow inputs into an f32 accumulator, widened in place, rows on threads -----------------
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float8_e4m3fn", "float8_e5m2"])
def test_widening_is_the_cast(dtype):
    import ml_dtypes

    from triton_plate_backend.sim.sem_matrix import _widen_into

    dt = np.dtype(getattr(ml_dtypes, dtype, None) or dtype)
    x = np.arange(2 ** (8 * dt.itemsize), dtype=f"u{dt.itemsize}").view(dt)  # every bit pattern
    out = np.empty(x.shape, np.float32)
    _widen_into(x, out)
    np.testing.assert_array_equal(out.view(np.uint32), x.astype(np.float32).view(np.uint32))


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("per_step", [None, 2])
def test_narrow_mma_in_place_is_the_plain_sum(monkeypatch, threads, per_step):
    """Whatever the threads and the programs per product step (each step widens its own programs'
    operands just before their product), the bits of the accumulator plus the f32 product."""
    import ml_dtypes

    from triton_plate_backend.sim import parallel, sem_matrix
    from triton_plate_backend.sim.sem_matrix import _narrow_into

    monkeypatch.setattr(parallel, "MIN_WORK", 1)
    monkeypatch.setattr(parallel, "THREADS", threads)
    if per_step is not None:
        monkeypatch.setattr(sem_matrix, "PRODUCT_ELEMENTS", per_step * 32 * 32)
    rng = np.random.default_rng(threads)
    a = rng.standard_normal((7, 32, 64)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((7, 64, 32)).astype(np.float32).astype(ml_dtypes.bfloat16)
    a[0, 0, 0], a[1, 2, 3] = np.inf, np.nan
    sram = rng.standard_normal((7, 2 * 32 * 32)).astype(np.float32)
    c = sram[:, ::2].reshape(7, 32, 32)  # a strided view, like a tile in SRAM rows
    want = c + np.matmul(a.astype(np.float32), b.astype(np.float32))
    _narrow_into(a, b, c)
    np.testing.assert_array_equal(c.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("threads", [1, 3])
def test_bf16_mma_in_c_is_the_numpy_code(monkeypatch, threads):
    """The bf16 m.mma in C (each ROWS-row block one sgemm with beta 1 on the accumulator) gives the numpy
    code's bits (numpy's sgemm with beta 0, then the add): shapes of one to four row blocks up to
    COMPILED_MAX_K and COMPILED_MAX_MNK (past them, the numpy code runs), strided accumulators in SRAM rows,
    operands already widened, infinities, NaN payloads, signed zeros, large and tiny magnitudes."""
    import ml_dtypes

    from triton_plate_backend.sim import parallel, sem_matrix
    from triton_plate_backend.sim.sem_matrix import _narrow_into

    compiled = sem_matrix._mma_bf16
    if compiled is None:
        pytest.skip("sim._tiles is not built (setup.py build_ext)")
    if sys.platform == "linux":
        assert parallel.blas_sgemm() is not None, "numpy's cblas_sgemm not found: the C path never runs"
    monkeypatch.setattr(parallel, "MIN_WORK", 1)
    monkeypatch.setattr(parallel, "THREADS", threads)
    rng = np.random.default_rng(threads)
    calls = []
    monkeypatch.setattr(sem_matrix, "_mma_bf16", lambda *a: calls.append(1) or compiled(*a))
    shapes = [(5, 32, 64, 32), (7, 128, 64, 128), (3, 64, 16, 96), (2, 64, 64, 256), (2, 32, 256, 64)]
    shapes += [(2, 96, 1024, 64), (2, 32, 64, 512)]  # past COMPILED_MAX_K, past COMPILED_MAX_MNK: the numpy code
    with np.errstate(invalid="ignore"):  # inf * 0 in the products
        for case, (P, M, K, N) in enumerate(shapes):
            scale = np.float32(10.0) ** rng.integers(-30, 30, (P, M, 1))
            a = (rng.standard_normal((P, M, K)) * scale).astype(np.float32).astype(ml_dtypes.bfloat16)
            b = rng.standard_normal((P, K, N)).astype(np.float32).astype(ml_dtypes.bfloat16)
            a[0, 0, 0], a[-1, 2, 3], b[0, 1, 5], a[1, 4, :] = np.inf, np.nan, -np.inf, 0
            b[1, :, 7] = -0.0
            sram = rng.standard_normal((P, 3 * M * N)).astype(np.float32) * np.float32(1e3)
            sram[1, 9 * N : 10 * N] = -0.0  # program 1's accumulator row 4, where its A row is zeros
            a.view(np.uint16)[0, 1, 5] = 0x7FC5  # NaN payloads: in A's row 1, in the accumulator's rows 1 and 2,
            b.view(np.uint16)[0, min(9, K - 1), ::3] = 0xFFC9  # in B's row 9 (after A's in row 1's sums)
            sram.view(np.uint32)[0, 3 * N : 4 * N], sram.view(np.uint32)[0, 5 * N : 6 * N] = 0x7FC00123, 0xFFC00456
            for widened in (False, True):
                c1 = sram[:, N : N + 2 * M * N].reshape(P, M, 2 * N)[:, :, :N].copy()
                kept = (a.astype(np.float32), b.astype(np.float32)) if widened else (None, None)
                monkeypatch.setattr(sem_matrix, "COMPILED_MMA", False)
                plain = _narrow_into(a, b, c1, *kept)
                monkeypatch.setattr(sem_matrix, "COMPILED_MMA", True)
                c2 = np.array(sram)[:, N : N + 2 * M * N].reshape(P, M, 2 * N)[:, :, :N]  # rows strided, as in SRAM
                got = _narrow_into(a, b, c2, *kept)
                np.testing.assert_array_equal(c2.view(np.uint32), c1.view(np.uint32), err_msg=f"case {case}")
                for x, y in zip(got, plain):
                    np.testing.assert_array_equal(x.view(np.uint32), y.view(np.uint32))
    ran = parallel.blas_sgemm() is not None
    assert len(calls) == (2 * sum(min(threads, s[0]) for s in shapes[:5]) if ran else 0)  # one per row range


def test_bf16_mma_in_c_declines_other_layouts():
    """mma_bf16 does nothing and returns False for layouts it does not take (the numpy code runs them)."""
    from triton_plate_backend.sim import parallel, sem_matrix

    sgemm = parallel.blas_sgemm()
    if sem_matrix._mma_bf16 is None or sgemm is None:
        pytest.skip("no compiled m.mma here")
    a, b = np.full((2, 32, 8), 0x3F80, np.uint16), np.full((2, 8, 16), 0x3F80, np.uint16)  # bf16 1.0
    c, a32, b32 = np.zeros((2, 32, 16), np.float32), np.empty((2, 32, 8), np.float32), np.empty((2, 8, 16), np.float32)
    assert sem_matrix._mma_bf16(*sgemm, a, b, c, a32, b32, True, True, 32)
    assert (c == 8).all() and (a32 == 1).all() and (b32 == 1).all()
    c[...] = 0
    assert not sem_matrix._mma_bf16(*sgemm, a, b, c[:, :, ::-1], a32, b32, True, True, 32)  # columns reversed
    assert not sem_matrix._mma_bf16(*sgemm, a, b, c, a32, b32, True, True, 12)  # 32 rows in 12-row blocks
    assert not sem_matrix._mma_bf16(*sgemm, a, b[:, :4], c, a32, b32, True, True, 32)  # K does not chain
    assert not (c != 0).any()


def _mma_products(a, b, c):
    """What m.mma computes with BLAS from f32 operands: each f32 precision, an i8 product (f64, exact), f64."""
    from triton_plate_backend.sim import sem_matrix

    i8 = np.rint(a.clip(-127, 127)).astype(np.float64), np.rint(b * 40).clip(-127, 127).astype(np.float64)
    out = [f(a, b, c) for f in sem_matrix.PRECISION.values()]
    return [*out, np.matmul(*i8), sem_matrix._matmul(a.astype(np.float64), b.astype(np.float64))]


def test_mma_runs_blas_on_one_thread_and_its_threads_give_the_same_bits(monkeypatch):
    """Every m.mma runs with numpy's OpenBLAS on one thread (its threads cost ~100x the CPU on a tile's
    product) and restores the count after; the products that thread count would change are the same bits
    with BLAS on two threads: the i8 (f64 exact), f32 (each precision) and f64 sums of test_dot's shapes."""
    from triton_plate_backend.sim import parallel, sem_matrix

    blas = parallel._openblas()
    if blas is None:
        pytest.skip("numpy's BLAS is not an OpenBLAS whose threads can be set")
    before = blas[0]()
    blas[1](2)
    try:
        if blas[0]() != 2:
            pytest.skip("OpenBLAS here runs one thread")
        seen = []
        monkeypatch.setattr(sem_matrix, "_mma_rule", lambda st, ins: seen.append(blas[0]()))
        sem_matrix.SEMANTICS["m.mma"](None, None)
        assert seen == [1] and blas[0]() == 2
        rng = np.random.default_rng(5)
        for P, M, K, N in [(1, 128, 64, 128), (1, 64, 128, 128), (2, 128, 32, 256), (1, 256, 256, 64)]:
            a = (rng.standard_normal((P, M, K)) * 10.0 ** rng.integers(-3, 4, (P, M, 1))).astype(np.float32)
            b = rng.standard_normal((P, K, N)).astype(np.float32)
            c = rng.standard_normal((P, M, N)).astype(np.float32)
            threaded = _mma_products(a, b, c)
            with parallel.one_blas_thread():
                single = _mma_products(a, b, c)
            for x, y in zip(threaded, single):
                np.testing.assert_array_equal(x.view(np.uint8), y.view(np.uint8))
    finally:
        blas[1](before)


def test_widened_operands_are_reused_only_while_sram_is_unchanged():
    """Consecutive m.mma of a context reuse A and B widened; a write to them (by an accumulator
    aliasing A, or by any other instruction in between) makes the next m.mma widen afresh."""
    import ml_dtypes

    from triton_plate_backend.isa.program import Inst, Program, Tile
    from triton_plate_backend.sim.executor import new_context
    from triton_plate_backend.sim.semantics import SEMANTICS

    tiles = [
        Tile(0, "bf16", (4, 8)),  # t0: A
        Tile(64, "bf16", (8, 4)),  # t1: B0
        Tile(128, "bf16", (8, 4)),  # t2: B1
        Tile(256, "f32", (4, 4)),  # t3: C0
        Tile(320, "f32", (4, 4)),  # t4: C1
        Tile(0, "f32", (2, 4)),  # t5: an accumulator over A's first 32 bytes
        Tile(384, "bf16", (2, 4)),  # t6
        Tile(400, "bf16", (4, 4)),  # t7
    ]
    mma = lambda c, a, b: Inst("m.mma", ("ieee",), (c, a, b))  # noqa: E731
    prog = Program("mmas", [mma(3, 0, 1), mma(4, 0, 2), mma(5, 6, 7), mma(3, 0, 1), mma(4, 0, 2)], tiles)
    ctx = new_context(prog, grid=3)
    rng = np.random.default_rng(0)
    for t in (0, 1, 2, 6, 7):
        ctx.write(t, rng.standard_normal((3, *tiles[t].shape)).astype(ml_dtypes.bfloat16))
    for t in (3, 4):
        ctx.write(t, rng.standard_normal((3, 4, 4)).astype(np.float32))
    want = ctx.sram.copy()

    def plain(sram, c, a, b):  # the plain rule on a copy of SRAM
        view = lambda t: np.ndarray(  # noqa: E731
            (3, *tiles[t].shape), np.float32 if tiles[t].dtype == "f32" else ml_dtypes.bfloat16, sram, tiles[t].addr,
            (sram.shape[1], tiles[t].shape[1] * tiles[t].itemsize, tiles[t].itemsize),
        )  # fmt: skip
        view(c)[...] = view(c) + np.matmul(view(a).astype(np.float32), view(b).astype(np.float32))

    steps = [1, 2, 3, 4, 6]  # the last m.mma comes after another instruction (ctx.write below)
    for i, ins in enumerate(prog.instrs):
        if i == 4:
            ctx.write(0, np.ones((3, 4, 8), ml_dtypes.bfloat16))
            want_view = np.ndarray((3, 4, 8), ml_dtypes.bfloat16, want, 0, (want.shape[1], 16, 2))
            want_view[...] = 1
        ctx.launch.steps = steps[i]
        SEMANTICS["m.mma"](ctx, ins)
        plain(want, *ins.operands)
        np.testing.assert_array_equal(ctx.sram, want, err_msg=f"after m.mma #{i}")
    assert ctx.mma_widened[0] == 6 and set(ctx.mma_widened[2]) == {0, 2}


# ---- max / min with ordered zeros: bit operations on equal operands against the np.where form ---------
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_zero_ordered_max_min_are_the_where_form(dtype):
    from triton_plate_backend.sim import sem_vector as sv

    def plain_max(fn):
        return lambda a, b: np.where(a == b, np.where(np.signbit(a), b, a), fn(a, b))

    def plain_min(fn):
        return lambda a, b: np.where(a == b, np.where(np.signbit(a), a, b), fn(a, b))

    special = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0, 5e-324, -5e-324, 2.0]
    vals = np.concatenate([special, np.random.default_rng(0).standard_normal(20)]).astype(dtype)
    a, b = np.meshgrid(vals, vals)
    pairs = [(a, b), (a[:, :1], b), (a[::2], b[::2]), (a.T, b), (dtype(-0.0), dtype(0.0)), (a[0, 1], b[0, 1])]
    for fast, plain in (
        (sv._maximum, plain_max(np.maximum)),
        (sv._minimum, plain_min(np.minimum)),
        (sv._maxnum, plain_max(np.fmax)),
        (sv._minnum, plain_min(np.fmin)),
    ):
        for x, y in pairs:
            got, want = np.asarray(fast(x, y)), np.asarray(plain(x, y))
            assert got.dtype == want.dtype and got.shape == want.shape
            assert got.tobytes() == want.tobytes()


# ---- strided DMA: evenly spaced programs through one view, large tiles copied program by program ------
@pytest.mark.parametrize("order", ["even", "shuffled", "grouped"])
@pytest.mark.parametrize("masked", [False, True])
def test_strided_load_into_sram_and_store_from_it_match_the_gather(mem, order, masked):
    rows, cols, nprog = 64, 48, 12  # 3072 elements per program: the program-by-program copy
    a = mem.alloc(nprog * rows * cols * 4 + 4096, "interleaved")
    src = np.random.default_rng(1).standard_normal(nprog * rows * cols).astype(np.float32)
    mem.write_bytes(a.base, src.tobytes())
    progs = {
        "even": np.arange(nprog),
        "shuffled": np.random.default_rng(2).permutation(nprog),
        "grouped": np.array([9, 6, 3, 0, 1, 4, 7, 10, 2, 2, 2, 2]),  # evenly spaced runs, down to 0, a repeated tile
    }[order]
    base = a.base + progs * rows * cols * 4
    strides, lo = np.array([cols, 1]), np.zeros(2, np.int64)
    hi = np.array([rows - 3, cols]) if masked else np.array([rows, cols])
    want = src.reshape(nprog, rows, cols)[progs].copy()
    if masked:
        want[:, rows - 3 :] = -1.0
    plain, t1 = dma.load_strided(mem, base, "f32", (rows, cols), strides, lo, hi, -1.0)
    sram = np.zeros((nprog, rows * cols * 4 + 64), np.uint8)
    into = np.ndarray((nprog, rows, cols), np.float32, sram, 64, (sram.shape[1], cols * 4, 4))
    got, t2 = dma.load_strided(mem, base, "f32", (rows, cols), strides, lo, hi, -1.0, into=into)
    np.testing.assert_array_equal(plain, want)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(t1.bytes_by_domain, t2.bytes_by_domain)
    # evenly spaced and whole: a view of memory the caller copies; masked (the same rows of every program):
    # the rows inside read into the tile given, the rest filled there
    assert (got is into) == (order != "even" or masked)
    if got is not into:
        into[...] = got
    # and back: a store from the SRAM view puts the same bytes where they came from
    mem.write_bytes(a.base, bytes(len(src) * 4))
    dma.store_strided(mem, base, into, strides, lo, hi, dtype="f32")
    back = np.frombuffer(mem.read_bytes(a.base, len(src) * 4), np.float32).reshape(nprog, rows, cols)[progs]
    np.testing.assert_array_equal(back[:, : hi[0]], want[:, : hi[0]])
    mem.free(a.base)


# ---- rows on threads ------------------------------------------------------------------------------------
def test_rows_on_threads_cover_every_row_once_and_keep_numpys_error_state(monkeypatch):
    from triton_plate_backend.sim import parallel

    monkeypatch.setattr(parallel, "MIN_WORK", 1)
    monkeypatch.setattr(parallel, "THREADS", 3)
    assert parallel.chunks(10, 0) == [slice(0, 10)]  # small work: one piece
    seen = np.zeros(10, np.int64)

    def count(s):
        seen[s] += 1

    parallel.for_rows(count, 10, 10**9)
    assert (seen == 1).all() and len(parallel.chunks(10, 10**9)) == 3
    x = np.full(30, np.inf)
    with np.errstate(all="ignore"):
        parallel.for_rows(lambda s: x[s] - x[s], 30, 10**9)
    with pytest.raises(FloatingPointError), np.errstate(invalid="raise"):
        parallel.for_rows(lambda s: x[s] - x[s], 30, 10**9)


def test_rows_run_numpys_openblas_on_one_thread_and_restore_it(monkeypatch):
    from triton_plate_backend.sim import parallel

    blas = parallel._openblas()
    if sys.platform == "linux":
        assert blas is not None, "numpy's OpenBLAS not found: its threads would run under the simulator's"
    if blas is None:
        return
    before = blas[0]()
    blas[1](2)
    try:
        inside = []
        parallel.for_rows(lambda s: inside.append(blas[0]()), 4, 0)
        assert inside == [1] and blas[0]() == 2
        a = np.arange(4 * 64 * 64, dtype=np.float32).reshape(4, 64, 64) / 7
        with parallel.one_blas_thread():
            one = np.matmul(a, a)
        np.testing.assert_array_equal(one, np.matmul(a, a))  # one thread or two: the same sums
    finally:
        blas[1](before)


class _Regs:
    """What a scalar rule reads of a context: its register rows and program count."""

    def __init__(self, regs):
        self.regs, self.P = regs, regs.shape[1]


_EDGE_WORDS = [0, 1, -1, 2, 7, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**32 - 1, 2**32, 2**62, 2**63 - 1, -(2**63)]


_SCALAR_RULES = ["s.add", "s.sub", "s.mul", "s.and", "s.or", "s.xor", "s.select", "s.cmpi"]
_SCALAR_RULES += ["s.mins", "s.maxs", "s.minu", "s.maxu", "s.divs", "s.rems"]


@pytest.mark.parametrize("mnemonic", _SCALAR_RULES)
def test_one_program_scalar_rules_give_the_many_program_words(mnemonic):
    """A one-program context's s.<op> / s.cmpi / s.select in Python integers writes the word the numpy rule
    writes for each of many programs (edge words, small and random ones, i32 and i64, every predicate)."""
    from triton_plate_backend.isa.program import Inst
    from triton_plate_backend.sim.sem_scalar import SEMANTICS

    rng = np.random.default_rng(3)
    small = [int(w) for w in rng.integers(-50, 1000, 16)]  # index arithmetic's values (s.divs / s.rems' fast case)
    words = np.array(
        _EDGE_WORDS + small + [int(w) for w in rng.integers(-(2**63), 2**63 - 1, 40, dtype=np.int64)], np.int64
    )
    a, b = np.meshgrid(words, words)
    a, b = a.reshape(-1), b.reshape(-1)
    n = a.size
    if mnemonic == "s.select":
        forms = [((), (3, 0, 1, 2))]
    elif mnemonic == "s.cmpi":
        preds = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
        forms = [((p, dt), (3, 1, 2)) for p in preds for dt in ("i32", "i64")]
    else:
        forms = [((dt,), (3, 1, 2)) for dt in ("i32", "i64")]
    rule = SEMANTICS[mnemonic]
    for suffixes, operands in forms:
        ins = Inst(mnemonic, suffixes, operands)
        many = np.zeros((8, n), np.int64)
        many[0], many[1], many[2] = a & 1, a, b  # r0: a condition for s.select
        rule(_Regs(many), ins)
        for i in range(n):
            one = np.ascontiguousarray(many[:, i : i + 1])
            one[3] = 12345  # the destination's old word: overwritten
            rule(_Regs(one), ins)
            assert one[3, 0] == many[3, i], (suffixes, int(a[i]), int(b[i]))


def test_a_traces_byte_count_follows_its_entries():
    """nbytes is kept for the entries as they are and counted again once one is appended or the list replaced."""
    from triton_plate_backend.isa.program import Program

    pids = np.arange(4)
    trace = Trace(Program("k"), (4, 1, 1), [TraceEntry(0, pids), TraceEntry(1, pids)])
    first = trace.nbytes()
    assert first == trace._nbytes_now() == pids.nbytes + 2 * 200
    traffic = np.ones((4, 3))
    trace.entries.append(TraceEntry(2, pids, traffic, np.ones(4, np.int64), np.ones(4, np.int64)))
    assert trace.nbytes() == trace._nbytes_now() == first + traffic.nbytes + 2 * 32 + 200
    trace.entries = trace.entries[:1]
    assert trace.nbytes() == pids.nbytes + 200


def test_a_traces_packed_form_is_kept_for_its_entries_as_they_are(monkeypatch):
    """pack() is made once for the entries as they are (a kept trace's repeat asks it for its kept packed form and
    again for the clock's comparison with the waiting first launch that holds the same trace: one packing), and
    made again once an entry is appended or the list replaced; the repeat is still counted as one."""
    from triton_plate_backend.isa.program import Program
    from triton_plate_backend.machine import get_machine
    from triton_plate_backend.sim import clock as sim_clock
    from triton_plate_backend.sim import trace as sim_trace

    made = []
    real = sim_trace.PackedTrace.__init__
    monkeypatch.setattr(sim_trace.PackedTrace, "__init__", lambda self, t: made.append(t) or real(self, t))
    pids = np.arange(4)
    trace = Trace(Program("k"), (4, 1, 1), [TraceEntry(0, pids), TraceEntry(1, pids)])
    first = trace.pack()
    assert trace.pack() is first and trace.digest() == first.digest() and len(made) == 1
    trace.entries.append(TraceEntry(2, pids, np.ones((4, 3)), np.ones(4, np.int64), np.ones(4, np.int64)))
    second = trace.pack()
    assert second is not first and second.rows == 3 and trace.pack() is second and len(made) == 2
    trace.entries = trace.entries[:2]
    assert trace.pack() is not second and trace.pack().digest() == first.digest() and len(made) == 3
    made.clear()
    trace = Trace(trace.program, trace.grid, list(trace.entries))
    c = sim_clock.Clock(get_machine("plate-mini"))
    c.add_untimed(trace, "round_robin")  # a first launch, its trace kept (sim/persistent_runs.py)
    c.add_untimed(trace.pack(), "round_robin")  # its repeat, timed from the kept trace packed
    assert len(made) == 1 and len(c._waiting) == 1 and c._waiting[0].repeats == 2


def test_packing_keeps_one_row_arrays_and_shares_equal_larger_ones():
    """_pack_arrays: an array of one row (or none, or 0-d) is kept as it is, the same object, equal ones
    too; equal arrays of more rows share one compact form."""
    from triton_plate_backend.sim.trace import _pack_arrays, _Runs

    one, same, zero_d, empty = np.ones((1, 5)), np.ones((1, 5)), np.array(3), np.zeros((0, 5))
    big, big2 = np.zeros((64, 5)), np.zeros((64, 5))
    out = _pack_arrays([one, same, zero_d, empty, big, big2])
    assert out[0] is one and out[1] is same and out[2] is zero_d and out[3] is empty
    assert isinstance(out[4], _Runs) and out[5] is out[4]
