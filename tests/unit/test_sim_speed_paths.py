"""The simulator's short paths for many-step launches (a persistent loop's trips) give the results of
the general code, bit for bit: the one-axis DMA of evenly spaced programs (dma._Row) against the
_Box code, straight-line blocks and resolved s.li words against one step at a time (the trace, the
memory and the modeled cycles of a persistent kernel), the i32 scalar ops on words against the
generic rule."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trace_compare import assert_same_entries

from triton_plate_backend import cost
from triton_plate_backend.dtypes import NUMPY
from triton_plate_backend.isa.program import Arg, Inst, Program, Tile
from triton_plate_backend.machine import get_machine
from triton_plate_backend.passes import access
from triton_plate_backend.passes.pipeline import generate, run_passes
from triton_plate_backend.sim import dma, estimate, executor, sem_tile
from triton_plate_backend.sim import numerics as nx
from triton_plate_backend.sim.memory import DeviceMemory
from triton_plate_backend.sim.sem_vector import BINARY, DIRECT_INT
from triton_plate_backend.sim.timing import mapped, simulate_timing
from triton_plate_backend.ttir.parser import parse

HYP = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
MACHINE = get_machine("plate-mini")


@pytest.fixture(scope="module")
def mem():
    return DeviceMemory(MACHINE)


@st.composite
def rows(draw):
    """Several programs' one-axis accesses: evenly spaced bases (sometimes not), one stride, per-program bounds."""
    p = draw(st.integers(2, 6))
    size = draw(st.integers(1, 40))
    stride = draw(st.sampled_from([1, 1, 1, -1, 2, 0, 3]))
    step = draw(st.sampled_from([size, size, 64, 0, -size, 7]))
    lo = draw(st.lists(st.sampled_from([-(2**62), 0, 1, 3]), min_size=p, max_size=p))
    hi = draw(st.lists(st.sampled_from([size, size, size, 0, 2, 5, 2**40]), min_size=p, max_size=p))
    uneven = draw(st.booleans()) and draw(st.booleans())
    return dict(
        dtype=draw(st.sampled_from(["f32", "f16", "i64", "i8", "bf16"])),
        placement=draw(st.sampled_from(["interleaved", "local:1", "blocked"])),
        p=p,
        size=size,
        stride=stride,
        step=step,
        uneven=uneven,
        lo=np.array(lo, np.int64)[:, None],
        hi=np.array(hi, np.int64)[:, None],
        seed=draw(st.integers(0, 2**31)),
    )


def _random_allocation(mem, nbytes, case):
    """An allocation of nbytes placed as ``case["placement"]``, filled with random bytes from ``case["seed"]``."""
    rec = mem.alloc(nbytes, case["placement"])
    mem.view(rec.base, nbytes)[:] = np.random.default_rng(case["seed"]).integers(0, 256, nbytes, dtype=np.uint8)
    return rec


def _setup(mem, r, nbytes=64 * 1024):
    rec = _random_allocation(mem, nbytes, r)
    isz = dma._storage(r["dtype"]).itemsize
    first = rec.base + (8000 // isz) * isz  # room below for negative strides and steps
    elems = first // isz + np.arange(r["p"]) * r["step"] + (np.arange(r["p"]) == 1) * 5 * r["uneven"]
    strides = np.full((r["p"], 1), r["stride"], np.int64)
    return rec, elems * isz, strides


def _same_traffic(a, b):
    for f in ("bytes_by_domain", "elements", "runs"):
        x, y = getattr(a, f), getattr(b, f)
        assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y), f


def _general(monkeypatch):
    monkeypatch.setattr(dma._Row, "make", classmethod(lambda cls, *a: None))
    monkeypatch.setattr(dma, "_moves_nothing", lambda *a: None)
    monkeypatch.setattr(dma._MaskedTiles, "make", classmethod(lambda cls, *a: None))


@pytest.mark.parametrize("shape", [(8,), (4, 6), (2, 3, 5)])
@pytest.mark.parametrize("dtype", ["f32", "i1", "bf16", "i8"])
def test_a_load_that_moves_nothing_is_the_box_codes_fill(mem, shape, dtype):
    """Every program masked off on some axis (a prefetch past a loop's last trip; bounds past either end,
    empty or reversed): the fill and zero Traffic of the _Box code, told from the bounds alone; one program
    moving one element: not told so."""
    rng = np.random.default_rng(len(shape))
    p, r = 6, len(shape)
    lo = rng.integers(-3, 3, (p, r))
    hi = np.array([list(shape)] * p, np.int64)
    axis = rng.integers(0, r, p)
    hi[np.arange(p), axis] = lo[np.arange(p), axis] - rng.integers(0, 3, p)  # empty on one axis each
    rec = mem.alloc(4096)
    base = rec.base + np.arange(p, dtype=np.int64) * 64
    strides = np.ones((p, r), np.int64)
    try:
        for bounds in ((lo, hi), (np.full((p, r), 9), hi), (lo, np.full((p, r), -1))):
            args = (mem, base, dtype, shape, strides, *bounds, 1.5)
            assert dma._moves_nothing(base, dtype, shape, *bounds) == p
            for into in (None, np.full((p, *shape), 7, dma._storage(dtype))):
                vals, traffic = dma.load_strided(*args, into=None if into is None else into.copy())
                with pytest.MonkeyPatch.context() as mp:
                    _general(mp)
                    want_vals, want_traffic = dma.load_strided(*args, into=None if into is None else into.copy())
                assert vals.dtype == want_vals.dtype and vals.tobytes() == want_vals.tobytes()
                _same_traffic(traffic, want_traffic)
        one = np.zeros((p, r), np.int64), np.zeros((p, r), np.int64)
        one[1][2] = 1  # program 2 moves its first element
        assert dma._moves_nothing(base, dtype, shape, *one) is None
    finally:
        mem.free(rec.base)


@HYP
@given(r=rows())
def test_row_load_matches_the_box_load(mem, r):
    rec, base, strides = _setup(mem, r)
    args = (mem, base, r["dtype"], (r["size"],), strides, r["lo"], r["hi"], 3)
    try:
        vals, traffic = dma.load_strided(*args)
        uncounted, none = dma.load_strided(*args, counted=False)  # a launch that records no trace
        with pytest.MonkeyPatch.context() as mp:
            _general(mp)
            want_vals, want_traffic = dma.load_strided(*args)
        assert vals.dtype == want_vals.dtype and vals.shape == want_vals.shape
        assert np.ascontiguousarray(vals).tobytes() == np.ascontiguousarray(want_vals).tobytes()
        assert np.ascontiguousarray(uncounted).tobytes() == np.ascontiguousarray(want_vals).tobytes()
        assert none is dma.NOT_COUNTED or dma._Row.make(*args[:-1]) is None
        _same_traffic(traffic, want_traffic)
    finally:
        mem.free(rec.base)


@HYP
@given(r=rows())
def test_row_store_matches_the_box_store(mem, r):
    rec, base, strides = _setup(mem, r)
    before = mem.read_bytes(rec.base, rec.nbytes)
    raw = np.random.default_rng(r["seed"] + 1).integers(0, 256, (r["p"], r["size"], 8), dtype=np.uint8)
    values = raw.view(dma._storage(r["dtype"]))[..., 0].astype(dma.NUMPY[r["dtype"]])
    args = (mem, base, values, strides, r["lo"], r["hi"])
    try:
        traffic = dma.store_strided(*args, dtype=r["dtype"])
        after = mem.read_bytes(rec.base, rec.nbytes)
        mem.write_bytes(rec.base, before)
        dma.store_strided(*args, dtype=r["dtype"], counted=False)  # a launch that records no trace: the same bytes
        assert after == mem.read_bytes(rec.base, rec.nbytes)
        mem.write_bytes(rec.base, before)
        with pytest.MonkeyPatch.context() as mp:
            _general(mp)
            want = dma.store_strided(*args, dtype=r["dtype"])
        assert after == mem.read_bytes(rec.base, rec.nbytes)
        _same_traffic(traffic, want)
    finally:
        mem.free(rec.base)


@pytest.mark.parametrize("placement", ["blocked", "interleaved", "local:1"])
@pytest.mark.parametrize("size, step", [(1024, 4096), (1024, 1024), (1000, 5000), (1024, 16384), (3, 12), (1024, 0)])
@pytest.mark.parametrize("offset", [0, 4096 - 64, 65536 - 2048, 65536 - 4096 + 16])
def test_whole_rows_of_many_programs_match_the_box_traffic(mem, placement, size, step, offset):
    """32 programs' whole rows (the integer-only case) over chunks and stripes: spans inside one piece,
    spans crossing into the next (the general computation), runs of programs per piece; loads and
    stores, values, memory and Traffic equal to the _Box path's."""
    nbytes = 4 * 65536 + 32 * 16384 * 4
    rec = mem.alloc(nbytes, placement)
    try:
        mem.view(rec.base, nbytes)[:] = np.random.default_rng(step + offset).integers(0, 256, nbytes, dtype=np.uint8)
        base = rec.base + offset + np.arange(32, dtype=np.int64) * step * 4
        one = np.ones((32, 1), np.int64)
        args = (mem, base, "f32", (size,), one, one * -(2**62), one * size, 0.0)
        assert dma._Row.make(*args[:-1]).whole
        vals, traffic = dma.load_strided(*args)
        vals = np.array(vals)
        before = mem.read_bytes(rec.base, nbytes)
        store = dma.store_strided(mem, base, -vals, one, one * 0, one * size, dtype="f32")
        after = mem.read_bytes(rec.base, nbytes)
        mem.write_bytes(rec.base, before)
        with pytest.MonkeyPatch.context() as mp:
            _general(mp)
            want_vals, want_traffic = dma.load_strided(*args)
            want_vals = np.array(want_vals)  # a view of memory, which the store changes
            want_store = dma.store_strided(mem, base, -vals, one, one * 0, one * size, dtype="f32")
        assert vals.tobytes() == want_vals.tobytes()
        assert after == mem.read_bytes(rec.base, nbytes)
        _same_traffic(traffic, want_traffic)
        _same_traffic(store, want_store)
    finally:
        mem.free(rec.base)


def test_a_persistent_trip_takes_the_row_path(mem):
    """The common case (32 programs' consecutive blocks, a masked tail) must not fall back, or the path is dead code."""
    rec = mem.alloc(32 * 4096)
    try:
        base = rec.base + np.arange(32, dtype=np.int64) * 4096
        one = np.ones((32, 1), np.int64)
        hi = np.full((32, 1), 1024, np.int64)
        hi[-1] = 100
        assert dma._Row.make(mem, base, "f32", (1024,), one, one * 0, hi) is not None
        hi[-1] = 1024  # every row whole (an unbounded lower bound, as codegen emits): the integer-only case
        row = dma._Row.make(mem, base, "f32", (1024,), one, one * -(2**62), hi)
        assert row is not None and row.whole
    finally:
        mem.free(rec.base)


def _ok_or_fault(fn):
    """("ok", fn()'s result) or ("raised", the type and message of what it raised: a fault)."""
    try:
        return "ok", fn()
    except Exception as e:  # noqa: BLE001 - any error: both paths must raise the same
        return "raised", (type(e), str(e))


@HYP
@given(r=rows(), cut=st.integers(1, 40), ragged=st.booleans())
def test_rows_past_the_allocations_end_match_the_box_code(mem, r, cut, ragged):
    """Rows whose whole span runs up to ``cut`` elements past the allocation's end (a ragged last block of a
    persistent trip, its masked-off lanes outside): the row path's values, memory and Traffic (or fault) are
    the _Box code's. ``ragged``: the last row by address ends where the allocation does."""
    isz = dma._storage(r["dtype"]).itemsize
    rel = (8000 // isz) + np.arange(r["p"]) * r["step"] + (np.arange(r["p"]) == 1) * 5 * r["uneven"]
    if ragged:  # whole rows but the last one by address, which ends where the allocation does
        r = dict(r, stride=abs(r["stride"]), lo=np.zeros_like(r["lo"]), hi=np.full_like(r["hi"], r["size"]))
        r["hi"][int(rel.argmax())] = max(r["size"] - cut, 1)
    end = (int(rel.max()) + max(0, (r["size"] - 1) * r["stride"]) + 1 - min(cut, r["size"])) * isz
    rec, base, strides = _setup(mem, r, nbytes=max(end, 8000 + isz))
    before = mem.read_bytes(rec.base, rec.nbytes)
    raw = np.random.default_rng(r["seed"] + 1).integers(0, 256, (r["p"], r["size"], 8), dtype=np.uint8)
    values = raw.view(dma._storage(r["dtype"]))[..., 0].astype(dma.NUMPY[r["dtype"]])
    load = (mem, base, r["dtype"], (r["size"],), strides, r["lo"], r["hi"], 3)
    store = (mem, base, values, strides, r["lo"], r["hi"])
    into = np.zeros((r["p"], r["size"]), dma._storage(r["dtype"]))
    into.view(np.uint8)[:] = 0x5A  # the destination's old bytes: garbage
    try:
        got = []
        for general in (False, True):
            with pytest.MonkeyPatch.context() as mp:
                if general:
                    _general(mp)
                how, out = _ok_or_fault(lambda: dma.load_strided(*load, into=into.copy()))
                vals = (how, (np.array(out[0]).tobytes(), out[1]) if how == "ok" else out)
                stored = _ok_or_fault(lambda: dma.store_strided(*store, dtype=r["dtype"]))
                got.append((vals, stored, mem.read_bytes(rec.base, rec.nbytes)))
                mem.write_bytes(rec.base, before)
        (vals, stored, after), (want_vals, want_stored, want_after) = got
        assert after == want_after
        assert vals[0] == want_vals[0] and stored[0] == want_stored[0]
        if vals[0] == "ok":
            assert vals[1][0] == want_vals[1][0]
            _same_traffic(vals[1][1], want_vals[1][1])
        else:
            assert vals[1] == want_vals[1]
        if stored[0] == "ok":
            _same_traffic(stored[1], want_stored[1])
        else:
            assert stored[1] == want_stored[1]
    finally:
        mem.free(rec.base)


def test_a_ragged_last_block_past_the_allocation_takes_the_row_path(mem):
    """n = 5000 over five programs of BLOCK 1024 (the last block's masked-off lanes past the tensor's end):
    the row path, clipped to the valid elements, with the _Box code's values, memory and Traffic."""
    rec = mem.alloc(5000 * 4, "blocked")
    try:
        mem.view(rec.base, rec.nbytes)[:] = np.random.default_rng(5).integers(0, 256, rec.nbytes, dtype=np.uint8)
        base = rec.base + np.arange(5, dtype=np.int64) * 4096
        one = np.ones((5, 1), np.int64)
        hi = np.full((5, 1), 1024, np.int64)
        hi[-1] = 5000 - 4096
        row = dma._Row.make(mem, base, "f32", (1024,), one, one * 0, hi)
        assert row is not None and row.clipped and row._full_lead() == 4
        vals, traffic = dma.load_strided(mem, base, "f32", (1024,), one, one * 0, hi, 0.0)
        before = mem.read_bytes(rec.base, rec.nbytes)
        store = dma.store_strided(mem, base, -vals, one, one * 0, hi, dtype="f32")
        after = mem.read_bytes(rec.base, rec.nbytes)
        mem.write_bytes(rec.base, before)
        with pytest.MonkeyPatch.context() as mp:
            _general(mp)
            want_vals, want_traffic = dma.load_strided(mem, base, "f32", (1024,), one, one * 0, hi, 0.0)
            want_store = dma.store_strided(mem, base, -vals, one, one * 0, hi, dtype="f32")
        assert np.array(vals).tobytes() == np.array(want_vals).tobytes() and not vals[-1, 904:].any()
        assert after == mem.read_bytes(rec.base, rec.nbytes)
        _same_traffic(traffic, want_traffic)
        _same_traffic(store, want_store)
    finally:
        mem.free(rec.base)


def _row_fields(row):
    if row is None:
        return None
    keys = ("whole", "nprog", "size", "stride", "offset", "step", "lo0", "length")
    arrays = tuple(None if x is None else np.asarray(x).tolist() for x in (row.a, row.b, row.count))
    return tuple(getattr(row, k, None) for k in keys) + arrays


@HYP
@given(r=rows(), many=st.sampled_from([1, 64, 4096]))
def test_row_checks_on_arrays_match_the_checks_on_lists(mem, r, many, monkeypatch):
    """_Row.make checks many programs' registers with numpy, a few as Python lists: the same row (or None)."""
    r = dict(r, p=r["p"] if many == 1 else many)
    r["lo"] = np.resize(r["lo"], (r["p"], 1))
    r["hi"] = np.resize(r["hi"], (r["p"], 1))
    rec, base, strides = _setup(mem, r, nbytes=max(64 * 1024, 8192 + r["p"] * (abs(r["step"]) + 48) * 8))
    try:
        args = (mem, base, r["dtype"], (r["size"],), strides, r["lo"], r["hi"])
        got = {}
        for few in (0, 1 << 30):
            monkeypatch.setattr(dma, "FEW_PROGRAMS", few)
            got[few] = _row_fields(dma._Row.make(*args))
        assert got[0] == got[1 << 30]
    finally:
        mem.free(rec.base)


def test_one_span_position_matches_the_array_lookup(mem):
    recs = [mem.alloc(n) for n in (256, 4096, 1000)]
    try:
        for rec in recs:
            for lo, hi in (
                (rec.base, rec.end),
                (rec.base + 8, rec.end - 8),
                (rec.base - 1, rec.end),
                (rec.base, rec.end + 1),
            ):
                want = int(mem.span_positions(np.array([lo], np.int64), np.array([hi], np.int64))[0])
                assert mem.span_position(lo, hi) == want
        assert mem.span_position(recs[0].base, recs[0].end) >= 0 and mem.span_position(0, 8) == -1
    finally:
        for rec in recs:
            mem.free(rec.base)


@pytest.mark.parametrize("dtype", ["f16", "f32", "f64"])
@pytest.mark.parametrize("combine", ["max", "min", "maxnum", "minnum"])
def test_float_extremes_in_one_reduction_match_the_tree(dtype, combine):
    """v.reduce's max/min as one numpy reduction: the pairwise tree's bits, signed zeros included; a
    NaN anywhere leaves it to the tree (which NaN's bits survive depends on the order)."""
    npdt = NUMPY[dtype]
    rng = np.random.default_rng(7)
    fn = sem_tile.combine_fn(combine, dtype, "v.reduce")
    pool = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, 2.5, -2.5, 1e-30, -1e-30], npdt)
    for trial in range(200):
        shape = (int(rng.integers(1, 5)), int(rng.integers(1, 5)), int(rng.integers(1, 70)))
        x = rng.choice(pool, size=shape) if trial % 2 else rng.standard_normal(shape).astype(npdt)
        want = sem_tile.reduce_last(x, fn)
        got = sem_tile.reduce_extreme(x, combine, dtype)
        assert got is not None and got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}")), (x, want, got)
    x = np.array([[1.0, np.nan, 2.0]], npdt)
    assert sem_tile.reduce_extreme(x, combine, dtype) is None
    assert sem_tile.reduce_extreme(np.array([[1, 2]], np.int32), combine, "i32") is None


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("combine", ["add", "mul"])
def test_direct_float_combines_match_the_vector_units_op(dtype, combine):
    npdt = NUMPY[dtype]
    a, b = np.random.default_rng(3).standard_normal((2, 8, 33)).astype(npdt)
    a[0, :3] = [np.nan, -0.0, np.inf]
    b[0, :3] = [1.0, 0.0, -np.inf]
    with np.errstate(all="ignore"):  # inf - inf: as the executor runs
        want = BINARY[combine]["float"](a, b, dtype)
        got = sem_tile.combine_fn(combine, dtype, "v.reduce")(a, b)
    assert got.dtype == want.dtype and np.array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}"))


def test_i32_scalar_ops_on_words_match_the_generic_rule():
    rng = np.random.default_rng(0)
    edges = np.array([0, 1, -1, 2**31 - 1, -(2**31), 2**31, 2**32 - 1, 2**63 - 1, -(2**63)], np.int64)
    vals = np.concatenate([rng.integers(-(2**63), 2**63 - 1, 2000, dtype=np.int64), edges])
    a, b = rng.choice(vals, 8000), rng.choice(vals, 8000)
    for op, fn in DIRECT_INT.items():
        want = nx.to_word(BINARY[op]["int"](nx.from_word(a, "i32"), nx.from_word(b, "i32"), "i32"), "i32")
        regs = np.zeros((3, a.size), np.int64)
        regs[1], regs[2] = a, b
        fn(regs[1], regs[2], out=regs[0])
        regs[0] = regs[0].astype(np.int32)
        assert np.array_equal(regs[0], want), op


@pytest.mark.parametrize("dt", ["i32", "i64"])
def test_cmpi_on_words_matches_compare_int(dt):
    from types import SimpleNamespace

    from triton_plate_backend.sim import sem_scalar

    rng = np.random.default_rng(1)
    edges = np.array([0, 1, -1, 2**31 - 1, -(2**31), 2**31, 2**32 - 1, 2**63 - 1, -(2**63)], np.int64)
    vals = np.concatenate([rng.integers(-(2**63), 2**63 - 1, 500, dtype=np.int64), edges, edges])
    a, b = rng.choice(vals, 3000), rng.choice(vals, 3000)
    b[:500] = a[:500]  # equal operands too
    for pred in ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"):
        want = nx.compare_int(pred, nx.from_word(a, dt), nx.from_word(b, dt), dt)
        st = SimpleNamespace(regs=np.stack([np.zeros_like(a), a, b]), P=a.size)  # a context: its rows, P programs
        sem_scalar._cmpi(st, SimpleNamespace(operands=(0, 1, 2), suffixes=(pred, dt), mnemonic="s.cmpi"))
        assert np.array_equal(st.regs[0], want.astype(np.int64)), pred


VEC_ADD = """
module {
  tt.func public @vec_add(%x: !tt.ptr<f32>, %y: !tt.ptr<f32>, %o: !tt.ptr<f32>, %n: i32) {
    %c = arith.constant 256 : i32
    %pid = tt.get_program_id x : i32
    %start = arith.muli %pid, %c : i32
    %r = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
    %s = tt.splat %start : i32 -> tensor<256xi32>
    %offs = arith.addi %s, %r : tensor<256xi32>
    %ns = tt.splat %n : i32 -> tensor<256xi32>
    %m = arith.cmpi slt, %offs, %ns : tensor<256xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %offs : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
    %a = tt.load %xp, %m : tensor<256x!tt.ptr<f32>>
    %b = tt.load %yp, %m : tensor<256x!tt.ptr<f32>>
    %sum = arith.addf %a, %b : tensor<256xf32>
    %os = tt.splat %o : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>>
    %op = tt.addptr %os, %offs : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
    tt.store %op, %sum, %m : tensor<256x!tt.ptr<f32>>
    tt.return
  }
}
"""


def _persistent_vec_add():
    analysis = access.AccessAnalysis()
    module = run_passes(parse(VEC_ADD, "vec_add.ttir"), analysis, persistent_sram=MACHINE.core.sram_bytes)
    program, _ = generate(module, None, MACHINE, analysis)
    assert [a.name for a in program.args[-2:]] == ["plate_rows", "plate_grid_x"], "not made persistent"
    return program


def _launch(program):
    """A persistent launch as the launcher makes it: one group of 18 programs over 4 launched programs,
    of 5, 5, 4 and 4 trips (plate_rows 4, plate_grid_x 18)."""
    n = 256 * 18 - 37
    mem = DeviceMemory(MACHINE)
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    ptrs = []
    for arr in (x, y, np.zeros(n, np.float32)):
        rec = mem.alloc(arr.nbytes)
        mem.write_bytes(rec.base, arr.tobytes())
        ptrs.append(rec.base)
    trace = executor.execute(program, 4, [*ptrs, n, 4, 18], mem, MACHINE)
    out = np.frombuffer(mem.read_bytes(ptrs[2], 4 * n), np.float32)
    np.testing.assert_array_equal(out, x + y)
    return out.tobytes(), trace.digest(), simulate_timing(trace, MACHINE).cycles


def test_a_persistent_kernel_runs_the_same_on_the_short_paths(monkeypatch):
    """Straight-line blocks, resolved s.li words and the row DMA path: the same memory, the same trace
    (what the timing model reads) and the same modeled cycles as one step at a time on the general code."""
    program = _persistent_vec_add()
    fast = _launch(program)
    straight = executor._straight(program)
    assert any(end > pc + 1 for pc, end in enumerate(straight)), "no straight-line block: the path is dead code"
    monkeypatch.setattr(executor, "_straight", lambda p: list(range(len(p.instrs))))
    monkeypatch.setattr(executor, "_rules", lambda p: [executor.SEMANTICS[i.mnemonic] for i in p.instrs])
    _general(monkeypatch)
    assert _launch(program) == fast


# ---- packed traces: equal arrays packed once, one pass over the entries ---------------------------
def _reference_pack(trace):
    """The packing as it was before equal arrays shared their compact form: (table rows, packed
    arrays, digest), each array packed on its own and the digest fed field by field."""
    import hashlib
    import zlib

    from triton_plate_backend.sim import trace as tr

    held = [a for e in trace.entries for a in (e.programs, e.bytes_by_domain, e.elements, e.runs)]
    first: dict = {}
    for a in held:
        first.setdefault(id(a), a)
    first.pop(id(None), None)
    slot = {k: i for i, k in enumerate(first)}
    slot[id(None)] = -1
    arrays = [tr._pack_array(a) for a in first.values()]
    table = np.empty((len(trace.entries), 5), np.int64)
    table[:, 0] = [e.pc for e in trace.entries]
    table[:, 1:] = np.array([slot[id(a)] for a in held], np.int64).reshape(-1, 4)
    h = hashlib.blake2b(repr(trace.grid).encode(), digest_size=20)
    h.update(b"%d|" % len(table))
    h.update(zlib.compress(table.tobytes(), 1))
    for a in arrays:
        if isinstance(a, tr._Bitmap):
            h.update(f"|B{a.dtype.str} {a.lo} {a.n}|".encode())
            h.update(a.bits.tobytes())
        elif isinstance(a, tr._Runs):
            h.update(f"|R{a.rows.dtype.str}{a.shape}{a.starts.size}|".encode())
            h.update(a.starts.tobytes())
            h.update(np.ascontiguousarray(a.rows).tobytes())
        elif isinstance(a, np.ndarray):
            h.update(f"|A{a.dtype.str}{a.shape}|".encode())
            h.update(np.ascontiguousarray(a).tobytes())
        else:
            h.update(f"|O{a!r}|".encode())
    return table, arrays, h.digest()


def _loop_trace(seed: int):
    """A persistent loop's trace: contexts sharing their programs array, DMA entries whose traffic
    arrays are equal trip after trip but distinct objects, some shared between fields, some large,
    some random (kept as they are), a split context, an empty entry list's neighbours."""
    from triton_plate_backend.sim.trace import Trace, TraceEntry

    rng = np.random.default_rng(seed)
    pids, entries = np.arange(32, dtype=np.int64), []
    for trip in range(12):
        for pc in range(5):
            if pc == 1:
                out = np.zeros((32, 5))
                out[:, trip % 4] = 4096.0
                count = np.full(32, 1024, np.int64)
                entries.append(TraceEntry(pc, pids, out, count, np.ones(32, np.int64)))
            elif pc == 2:
                runs = rng.integers(0, 3, 32)
                entries.append(TraceEntry(pc, pids, np.tile([[8.0, 0, 0, 0, 0]], (32, 1)), runs, runs))
            elif pc == 3 and trip % 3 == 0:
                big = np.zeros((5000, 5))
                big[::7, 1] = 2.0
                entries.append(TraceEntry(pc, np.arange(5000, dtype=np.int64), big, np.arange(5000), None))
            elif pc == 4 and trip < 2:  # equal bytes, another dtype: not the same array
                entries.append(TraceEntry(pc, pids, np.zeros(32), np.zeros(32, np.int64), np.zeros(32, np.int32)))
            else:
                entries.append(TraceEntry(pc, pids))
        if trip == 6:
            pids = pids[::2].copy()
    return Trace(None, (32, 1, 1), entries)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_packing_equal_arrays_once_matches_packing_each(seed):
    trace = _loop_trace(seed)
    packed = trace.pack()
    table, arrays, digest = _reference_pack(trace)
    assert packed.digest() == digest
    assert np.array_equal(packed._table(), table)
    assert len(packed.arrays) == len(arrays)
    for a, b in zip(packed.arrays, arrays, strict=True):
        assert type(a) is type(b)
        x, y = (v.unpack() if hasattr(v, "unpack") else v for v in (a, b))
        assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
    back = packed.unpack()
    assert_same_entries(trace.entries, back.entries)
    # each trip's equal traffic arrays share one compact form
    forms = {id(a) for a in packed.arrays if not isinstance(a, np.ndarray)}
    assert len(forms) < len([a for a in packed.arrays if not isinstance(a, np.ndarray)])


# ---- a matrix tile's rows (the traffic of 2-D DMAs crossing stripes) --------------------------------
@pytest.mark.parametrize("seed", range(8))
def test_matrix_tile_rows_match_the_general_rows(seed):
    """_Box.rows of a uniform rank-2 tile (the row-major shortcut) against the general computation
    (the same box taken as non-uniform): masked rows and columns, empty programs, negative inner
    strides, a selection of programs."""
    rng = np.random.default_rng(seed)
    p, r0, r1 = int(rng.integers(1, 40)), int(rng.integers(1, 40)), int(rng.integers(1, 40))
    inner = int(rng.choice([1, -1]))
    strides = np.tile([[int(rng.integers(-3, 300)), inner]], (p, 1))
    lo = rng.integers(-3, 5, (p, 2))
    hi = np.stack([rng.integers(-1, r0 + 3, p), rng.integers(-1, r1 + 3, p)], axis=1)
    base = (1 << 20) + rng.integers(0, 4096, p) * 8
    box = dma._Box(base, "f64", (r0, r1), strides, lo, hi)
    assert box.uniform and box.unit_inner
    general = dma._Box(base, "f64", (r0, r1), strides, lo, hi)
    general.uniform = False
    for sel in (slice(None), np.flatnonzero(rng.random(p) < 0.5)):
        for got, want in zip(box.rows(sel), general.rows(sel), strict=True):
            assert got.dtype == want.dtype and np.array_equal(got, want)


# ---- whole matrix tiles (dma._Tiles: a trip of a matmul's K loop) -----------------------------------
@st.composite
def tiles(draw):
    """Several programs' rank-2/3 accesses: one set of strides (sometimes not), bases on a few tile
    rows and columns (not evenly spaced), whole tiles (sometimes one element masked off, misaligned or
    past the allocation's end)."""
    p = draw(st.integers(2, 9))
    shape = tuple(draw(st.lists(st.integers(1, 9), min_size=2, max_size=3)))
    r = len(shape)
    strides = draw(st.lists(st.sampled_from([1, 1, -1, 0, 2, 9, 40, 64, -40]), min_size=r, max_size=r))
    return dict(
        dtype=draw(st.sampled_from(["f32", "f16", "i64", "bf16", "i8"])),
        placement=draw(st.sampled_from(["interleaved", "local:1", "blocked"])),
        shape=shape,
        strides=strides,
        rows=draw(st.lists(st.integers(0, 3), min_size=p, max_size=p)),
        cols=draw(st.lists(st.integers(0, 3), min_size=p, max_size=p)),
        row_step=draw(st.sampled_from([0, 512, 4096, 4160])),
        col_step=draw(st.sampled_from([0, 8, 64, 1000])),
        odd=draw(st.sampled_from([None, None, "masked", "strides", "misaligned", "outside"])),
        seed=draw(st.integers(0, 2**31)),
    )


def _tile_args(mem, t):
    nbytes = 256 * 1024
    rec = _random_allocation(mem, nbytes, t)
    isz = dma._storage(t["dtype"]).itemsize
    p, r = len(t["rows"]), len(t["shape"])
    elems = 24000 // isz + np.array(t["rows"]) * t["row_step"] + np.array(t["cols"]) * t["col_step"]
    base = rec.base + elems * isz
    strides = np.tile(np.array(t["strides"], np.int64), (p, 1))
    lo, hi = np.full((p, r), -(2**62), np.int64), np.tile(np.array(t["shape"], np.int64) + 5, (p, 1))
    if t["odd"] == "masked":
        hi[p - 1, 0] = t["shape"][0] - 1
    elif t["odd"] == "strides":
        strides[0, -1] += 1
    elif t["odd"] == "misaligned" and isz > 1:
        base[1] += 1
    elif t["odd"] == "outside":
        base[0] = rec.end
    return rec, (mem, base, t["dtype"], t["shape"], strides, lo, hi)


def _no_tiles(monkeypatch):
    monkeypatch.setattr(dma._Tiles, "make", classmethod(lambda cls, *a: None))


def _outcome(fn):
    from triton_plate_backend.errors import SimulatorError

    try:
        return fn(), None
    except SimulatorError as e:
        return None, str(e)


@HYP
@given(t=tiles())
def test_whole_tile_load_and_traffic_match_the_box_path(mem, t):
    """The load's values and Traffic, and the traffic-only count (the cost model's) with what it keeps for
    re-pricing: equal to the general path's; a descriptor it does not cover (masked, differing strides,
    misaligned, outside) takes the general path, faults included."""
    rec, args = _tile_args(mem, t)
    p = len(t["rows"])
    try:
        into = np.zeros((p, *t["shape"]), dma._storage(t["dtype"]))
        got = _outcome(lambda: dma.load_strided(*args, 3, into=into.copy()))
        uncounted = _outcome(lambda: dma.load_strided(*args, 3, into=into.copy(), counted=False))
        count = _outcome(lambda: dma.strided_traffic(*args))
        with pytest.MonkeyPatch.context() as mp:
            _no_tiles(mp)
            want = _outcome(lambda: dma.load_strided(*args, 3, into=into.copy()))
            want_count = _outcome(lambda: dma.strided_traffic(*args))
        assert got[1] == want[1] and count[1] == want_count[1] and uncounted[1] == want[1]
        if want[1] is None:
            (vals, traffic), (want_vals, want_traffic) = got[0], want[0]
            # a launch that records no trace: the same values, and on the tile path no bytes counted
            assert np.ascontiguousarray(uncounted[0][0]).tobytes() == np.ascontiguousarray(want_vals).tobytes()
            if dma._Tiles.make(*args) is not None:
                assert uncounted[0][1] is dma.NOT_COUNTED
            elif uncounted[0][1] is not dma.NOT_COUNTED:  # element by element, or nothing moved: counted
                _same_traffic(uncounted[0][1], want_traffic)
            assert vals.dtype == want_vals.dtype and vals.shape == want_vals.shape
            assert np.ascontiguousarray(vals).tobytes() == np.ascontiguousarray(want_vals).tobytes()
            _same_traffic(traffic, want_traffic)
            _same_traffic(count[0], want_count[0])
            kept, want_kept = count[0].keep(), want_count[0].keep()
            assert (kept.lo, kept.hi) == (want_kept.lo, want_kept.hi)
            _same_traffic(kept.traffic(mem), want_kept.traffic(mem))
        tiles = dma._Tiles.make(*args)
        assert (tiles is not None) == (
            t["odd"] is None or (t["odd"] == "misaligned" and dma._storage(t["dtype"]).itemsize == 1)
        )
        if tiles is not None:  # its general descriptor: every attribute _Box() computes, equal
            box, want_box = vars(tiles.box()), vars(dma._Box(*args[1:]))
            assert box.keys() == want_box.keys()
            for k, v in want_box.items():
                got = box[k]
                assert type(got) is type(v), k
                if isinstance(v, np.ndarray):
                    assert got.dtype == v.dtype and got.shape == v.shape and np.array_equal(got, v), k
                else:
                    assert got == v, k
    finally:
        mem.free(rec.base)


def _in_registers(args, seed):
    """A register file [registers, P] holding the descriptor ``_tile_args`` made, each row in its own register
    (shuffled), and (regs, base, strides, lo, hi) naming them, as a dma.load's operands do."""
    mem, base, dtype, shape, strides, lo, hi = args
    p, r = strides.shape
    order = np.random.default_rng(seed).permutation(3 * r + 5)
    regs = np.random.default_rng(seed).integers(-9, 9, (3 * r + 5, p))
    rows = [base, *strides.T, *lo.T, *hi.T]
    for i, row in enumerate(rows):
        regs[order[i]] = row
    names = [int(x) for x in order[: len(rows)]]
    return regs, names[0], tuple(names[1 : r + 1]), tuple(names[r + 1 : 2 * r + 1]), tuple(names[2 * r + 1 :])


@pytest.mark.skipif(dma._tiles is None, reason="sim._tiles is not built (setup.py build_ext)")
@HYP
@given(t=tiles())
def test_whole_tiles_from_the_registers_match_make(mem, t):
    """The compiled whole-tile test (``_Tiles.from_registers``: _tiles.whole_tiles over the register file)
    against ``make`` over the registers read into arrays: the same descriptor or None, every attribute
    equal; its Traffic and what it keeps for re-pricing equal to ``strided_traffic``'s, with the compiled
    count by home (_tiles.tile_homes) and with the numpy one."""
    rec, args = _tile_args(mem, t)
    try:
        regs, base, strides, lo, hi = _in_registers(args, t["seed"])
        dtype, shape = args[2], args[3]
        got = dma._Tiles.from_registers(mem, regs, base, strides, lo, hi, dtype, shape)
        want = dma._Tiles.make(*args)
        assert (got is None) == (want is None)
        if want is not None:
            for k in dma._Tiles.__slots__:
                g, w = getattr(got, k), getattr(want, k)
                assert type(g) is type(w), k
                if isinstance(w, np.ndarray):
                    assert g.dtype == w.dtype and np.array_equal(g, w), k
                else:
                    assert g == w, k
            assert np.shares_memory(got.base, regs)  # a view of the registers, as make's, copied when kept
            count = dma.strided_traffic_of_registers(mem, regs, base, strides, lo, hi, dtype, shape)
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(dma, "COMPILED_TILES", False)
                assert dma.strided_traffic_of_registers(mem, regs, base, strides, lo, hi, dtype, shape) is None
                want_count = _outcome(lambda: dma.strided_traffic(*args))[0]
                want_kept = want_count.keep()
                want_repriced = want_kept.traffic(mem)
            _same_traffic(count, want_count)
            kept = count.keep()
            assert (kept.lo, kept.hi) == (want_kept.lo, want_kept.hi)
            _same_traffic(kept.traffic(mem), want_repriced)
    finally:
        mem.free(rec.base)


@pytest.mark.skipif(dma._tiles is None, reason="sim._tiles is not built (setup.py build_ext)")
@pytest.mark.parametrize("placement", ["interleaved", "blocked", "local:1"])
def test_compiled_count_by_home_matches_numpy(mem, placement):
    """_tiles.tile_homes against _Tiles.traffic's numpy count: 32 programs' 2x32 f16 tiles at offsets across
    stripes and chunks (tiles inside one stripe or chunk: counted in C; crossing one: False, ``out``
    untouched, the numpy count row by row)."""
    rec = mem.alloc(1 << 20, placement)
    seen = set()
    try:
        strides, lo, hi = np.tile([[64, 1]], (32, 1)), np.zeros((32, 2), np.int64), np.tile([[2, 32]], (32, 1))
        rng = np.random.default_rng(0)
        for shift in range(0, 1 << 14, 96):
            base = rec.base + shift + rng.integers(0, 60, 32) * 4096
            tiles = dma._Tiles.make(mem, base, "f16", (2, 32), strides, lo, hi)
            assert tiles is not None
            got = tiles.traffic(mem)
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(dma, "COMPILED_TILES", False)
                _same_traffic(got, tiles.traffic(mem))
            if len(rec.owners) > 1:
                out = np.full((32, mem.traffic_columns), 7.0)
                span = (tiles.hi_off - tiles.lo_off) * 2
                owners, g = rec.owners, rec.granule
                whole = dma._tiles.tile_homes(out, tiles.base, -rec.base, span, g, owners, rec.striped, 1.0)
                rel = tiles.base - rec.base
                assert whole == bool((rel // g == (rel + span - 1) // g).all())
                assert (out == 7.0).all() if not whole else (out == 1.0).sum() == 32
                seen.add(whole)
        assert seen == ({True, False} if placement == "interleaved" else {True} if placement == "blocked" else set())
    finally:
        mem.free(rec.base)


@pytest.mark.parametrize("placement", ["blocked", "interleaved", "local:1"])
def test_a_matmul_trip_takes_the_tile_path(mem, placement):
    """32 programs' 32x32 f16 tiles of a 256x256 matrix (4 tile rows, 8 tile columns, the codegen's
    unbounded masks), over chunks and stripes: the tile path, or it is dead code; its Traffic equal to
    the general path's, also where tiles cross stripes."""
    rec = mem.alloc(256 * 256 * 2, placement)
    try:
        pm, pn = np.divmod(np.arange(32), 8)
        base = rec.base + (pm * 32 * 256 + pn * 32) * 2
        strides = np.tile([[256, 1]], (32, 1))
        lo, hi = np.full((32, 2), -(2**62)), np.tile([[256, 192]], (32, 1))
        args = (mem, base, "f16", (32, 32), strides, lo, hi)
        assert dma._Tiles.make(*args) is not None
        traffic = dma.strided_traffic(*args)
        with pytest.MonkeyPatch.context() as mp:
            _no_tiles(mp)
            _same_traffic(traffic, dma.strided_traffic(*args))
    finally:
        mem.free(rec.base)


@pytest.mark.parametrize("placement", ["interleaved", "blocked"])
def test_tiles_crossing_stripes_are_counted_row_by_row_on_the_tile_path(mem, placement, monkeypatch):
    """A GEMM's B tiles (64 x 128 bf16 of a 1024-wide matrix, 32 programs: each tile's rows in several
    stripes, or two chunks): each row's bytes to its home without the general box, the general path's
    Traffic bit for bit, counted and re-priced from the kept access; a row that itself crosses a stripe
    (a 3000-element row) takes the general path."""
    rec = mem.alloc(1024 * 1024 * 2, placement)
    general, box_traffic = [], dma._box_traffic
    monkeypatch.setattr(dma, "_box_traffic", lambda *a: general.append(1) or box_traffic(*a))
    try:
        k, n = np.divmod(np.arange(32), 8)
        for cols in (128, 3000):
            base = rec.base + (k * 64 * 1024 + n * 16) * 2 if cols == 128 else rec.base + k * 2 * 3000 * 2
            shape = (64, cols) if cols == 128 else (2, 3000)
            strides = np.tile([[1024 if cols == 128 else 3000, 1]], (32, 1))
            lo, hi = np.zeros((32, 2), np.int64), np.tile([shape], (32, 1))
            args = (mem, base, "bf16", shape, strides, lo, hi)
            assert dma._Tiles.make(*args) is not None
            with pytest.MonkeyPatch.context() as mp:
                _no_tiles(mp)
                want = dma.strided_traffic(*args)
                want_kept = want.keep().traffic(mem)  # re-priced (estimate._repriced)
            del general[:]
            got = dma.strided_traffic(*args)
            _same_traffic(got, want)
            _same_traffic(got.keep().traffic(mem), want_kept)
            crossing = (want.bytes_by_domain > 0).sum(axis=1).max() > 1
            if cols == 128:
                assert general == [] and crossing == (placement == "interleaved")
            else:
                assert general == [1, 1] or not crossing  # counted and re-priced
    finally:
        mem.free(rec.base)


@pytest.mark.parametrize("kind", ["load", "store"])
def test_whole_rows_past_the_allocation_still_fault(mem, kind):
    """The integer-only whole-row case checks the last program's span: a row one element past the end
    raises the general path's MemoryFault, naming the programs."""
    from triton_plate_backend.errors import MemoryFault

    rec = mem.alloc(32 * 4096)
    try:
        base = rec.base + 4 + np.arange(32, dtype=np.int64) * 4096
        one = np.ones((32, 1), np.int64)
        with pytest.raises(MemoryFault, match="out-of-bounds") as err:
            if kind == "load":
                dma.load_strided(mem, base, "f32", (1024,), one, one * -(2**62), one * 1024, 0.0)
            else:
                dma.store_strided(mem, base, np.zeros((32, 1024), np.float32), one, one * 0, one * 1024, dtype="f32")
        assert err.value.programs == [31]
    finally:
        mem.free(rec.base)


def test_an_empty_trace_packs_as_before():
    from triton_plate_backend.sim.trace import Trace

    trace = Trace(None, (0, 1, 1), [])
    packed = trace.pack()
    assert packed.digest() == _reference_pack(trace)[2] and packed.unpack().entries == []


def _spin_trace():
    """A spin lock's trace: a context that shrinks by one program a round (its CAS traffic of another size
    each round, ones that repeat within a round: elements and runs), a one-program winner each round, and
    arrays of one shape whose first and last rows agree but whose middles differ."""
    from triton_plate_backend.sim.trace import Trace, TraceEntry

    entries = []
    for r in range(12):
        pids = np.arange(r, 40, dtype=np.int64)
        n = pids.size
        traffic = np.zeros((n, 5))
        traffic[:, 0] = 4.0
        entries.append(TraceEntry(0, pids, traffic, np.ones(n, np.int64), np.ones(n, np.int64)))
        entries.append(TraceEntry(1, pids))
        mid = np.zeros((64, 5))
        mid[20:30, r % 5] = 1.0  # same sketch (first and last rows) every round, another content: runs
        entries.append(TraceEntry(2, np.arange(64, dtype=np.int64), mid, np.full(64, 2, np.int64), None))
        win = pids[:1].copy()
        entries.append(TraceEntry(3, win, np.array([[0.0, 4.0, 0, 0, 0]]), np.ones(1, np.int64), np.ones(1, np.int64)))
    return Trace(None, (40, 1, 1), entries)


def test_packing_keyed_by_sketch_matches_packing_each():
    """_pack_arrays keys an array's content only once its sketch repeats: the same table, forms and digest
    as packing each array on its own, and equal arrays still share one compact form."""
    from triton_plate_backend.sim import trace as tr

    trace = _spin_trace()
    packed = trace.pack()
    table, arrays, digest = _reference_pack(trace)
    assert packed.digest() == digest and np.array_equal(packed._table(), table)
    for a, b in zip(packed.arrays, arrays, strict=True):
        assert type(a) is type(b)
        x, y = (v.unpack() if hasattr(v, "unpack") else v for v in (a, b))
        assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
    assert_same_entries(trace.entries, packed.unpack().entries)
    # a round's elements and runs (equal, two arrays) share one form; the sketch-equal middles do not
    forms = [a for a in packed.arrays if isinstance(a, tr._Runs)]
    by_content = {}
    for f in forms:
        by_content.setdefault(f.unpack().tobytes() + repr(f.shape).encode(), set()).add(id(f))
    assert all(len(ids) == 1 for ids in by_content.values())
    assert len({id(f) for f in forms}) < len(forms)


@pytest.mark.parametrize("cols", [2, 3, 5, 8, 9, 13])
def test_rows_differ_column_by_column_matches_any(cols):
    """_rows_differ over rows of a few words (a pass per column) answers as any() over each row: a single
    flipped byte in any column of any row is found."""
    from triton_plate_backend.sim.trace import _rows_differ

    rng = np.random.default_rng(cols)
    a = np.repeat(rng.integers(0, 3, (6, cols)).astype(np.float64), 7, axis=0)
    raw = a.view(np.uint8).reshape(a.shape[0], -1).copy()
    for k in range(0, raw.shape[0], 5):
        raw[k, (k * 3) % raw.shape[1]] ^= 1
    expect = (raw[1:] != raw[:-1]).any(axis=1)
    assert np.array_equal(_rows_differ(raw), expect)
    assert expect.any() and not expect.all()


# ---- the cost model's per-program replay: scalar runs and each entry's programs taken once -----------
def _reference_program_times(trace, machine, pcs, core_of, issues):
    """estimate._program_times as it was: every entry on its own (its programs converted, each scalar
    entry's cost added by itself, the DMA's waves found again)."""
    from triton_plate_backend.sim.replay import static_facts
    from triton_plate_backend.sim.timing import program_waves

    n, prog = trace.num_programs, trace.program
    T, Q = max(len(prog.tiles), 1), static_facts(prog, machine)[1]
    eng, ready, read = np.zeros((3, n)), np.zeros((T, n)), np.zeros((T, n))
    issued = np.zeros((3, n))
    tok, done, out_busy = np.zeros((Q, n)), np.zeros(n), np.zeros(n)
    depth = machine.core.dma.queue_depth
    ring, nq = np.zeros((2, depth, n)), np.zeros((2, n), dtype=np.int64)
    rates = estimate._StepRates(machine)
    wave = program_waves(core_of)
    for entry in trace.entries:
        p = pcs[entry.pc]
        ps = np.asarray(entry.programs, dtype=np.int64)
        ix = slice(None) if len(ps) == n else ps
        if p.kind == "scalar":
            eng[1, ix] += p.cost
            continue
        if p.kind == "wait":
            eng[1, ix] = np.maximum(eng[1, ix], tok[p.token, ix]) + p.cost
            continue
        if p.kind == "wait_all":
            eng[1, ix] = np.maximum(eng[1, ix], done[ix]) + p.cost
            continue
        if p.kind == "compute":
            start = eng[1, ix].copy()
            for t in p.after_write:
                np.maximum(start, ready[t, ix], out=start)
            for t in p.after_read:
                np.maximum(start, read[t, ix], out=start)
            end = start + p.cost
            eng[1, ix] = end
            for t in p.reads:
                read[t, ix] = np.maximum(read[t, ix], end)
            for t in p.writes:
                ready[t, ix] = np.maximum(ready[t, ix], end)
            continue
        k = p.engine // 2
        slot = nq[k, ix] % depth
        rows = np.arange(n)[ix]
        start1 = np.maximum(eng[1, ix], ring[k, slot, rows])
        eng[1, ix] = start1
        for t in p.after_write:
            np.maximum(start1, ready[t, ix], out=start1)
        for t in p.after_read:
            np.maximum(start1, read[t, ix], out=start1)
        moving = eng[p.engine, ix].copy()
        s, issued[p.engine, ix], a = cost.dma_stages(issued[p.engine, ix], moving, start1, issues[id(entry)])
        xe, comp = a, a
        bbd = entry.bytes_by_domain
        if bbd is not None and bbd.any():
            xfer, flight, moved = rates.transfer(bbd, rates.group(core_of[ps], wave[ps]), p.outbound)
            xe = a + xfer
            comp = np.where(moved, xe + flight + p.extra_latency, a)
        eng[p.engine, ix] = xe
        if p.outbound:
            out_busy[ix] += xe - np.maximum(s, moving)
        if p.token is not None:
            tok[p.token, ix] = comp
        done[ix] = np.maximum(done[ix], comp)
        ring[k, slot, rows] = comp
        nq[k, ix] += 1
        for t in p.reads:
            read[t, ix] = np.maximum(read[t, ix], xe)
        for t in p.writes:
            ready[t, ix] = np.maximum(ready[t, ix], comp)
    occupancy = np.maximum(eng[0], eng[1])
    return occupancy, np.maximum(done, eng.max(axis=0)), out_busy


@pytest.mark.parametrize("launched, rows", [(4, 18), (300, 601), (700, 1403)])
def test_the_estimate_over_grouped_entries_matches_entry_by_entry(monkeypatch, launched, rows):
    """The cost model's replay with scalar runs added per group and each programs array converted once:
    the same per-program times (bit for bit) as entry by entry, over persistent launches whose programs
    run different trip counts (split contexts) across one to six waves of cores, two placements."""
    program = _persistent_vec_add()
    n = 256 * rows - 37
    results = []
    for reference in (False, True):
        if reference:
            monkeypatch.setattr(estimate, "_program_times", _reference_program_times)
        for placement in ("blocked", "interleaved"):
            mem = DeviceMemory(MACHINE)
            ptrs = [mem.alloc(4 * n, placement=placement).base for _ in range(3)]
            trace = executor.execute(program, launched, [*ptrs, n, launched, rows], mem, MACHINE)
            if not reference:
                assert len({id(e.programs) for e in trace.entries}) > (launched > 4), "no split context"
            est = estimate.model(trace, MACHINE, policy="round_robin")
            m = mapped(trace, MACHINE, "round_robin")
            times = estimate._program_times(m.trace, MACHINE, m.pcs, m.core_of, m.issues)
            results.append((est.time_ns, est.bound, est.read_bytes.tobytes(), *(t.tobytes() for t in times)))
    assert results[:2] == results[2:]


def test_scalar_runs_add_their_costs_in_order():
    """estimate._program_times adds a run of scalar entries' costs with one np.add.accumulate: one add
    after another, the bits of entry by entry, also for costs with fractions where the order of the adds
    shows (adding the run's sum instead differs: checked), over runs of two programs arrays (all
    programs: a view; every other one: a copy written back) and runs of one."""
    from triton_plate_backend.sim.replay import Pc
    from triton_plate_backend.sim.trace import Trace, TraceEntry

    rng = np.random.default_rng(14)
    program = _persistent_vec_add()
    n = 12
    waits = [Pc("wait", 1, c, (), (), 0, 0, False, 0.0) for c in (0.1, 1 / 3, np.pi * 1e-3, 2.5e-7)]
    scalars = [Pc("scalar", 1, c, (), (), None, 0, False, 0.0) for c in (1.0, 0.3, 7.0, 1 / 7, 11.0, 2.5e-3)]
    pcs = waits + scalars
    everyone, half = np.arange(n), np.arange(0, n, 2)
    entries, programs = [], everyone
    for _ in range(4000):
        if rng.random() < 0.05:
            programs = half if programs is everyone else everyone
        pc = int(rng.integers(0, len(waits))) if rng.random() < 0.1 else len(waits) + int(rng.integers(0, len(scalars)))
        entries.append(TraceEntry(pc, programs))
    trace = Trace(program, (n, 1, 1), entries)
    core_of = np.arange(n) % MACHINE.total_cores
    got = estimate._program_times(trace, MACHINE, pcs, core_of, {})
    want = _reference_program_times(trace, MACHINE, pcs, core_of, {})
    assert all(g.tobytes() == w.tobytes() for g, w in zip(got, want))
    assert (got[0] % 1).all()  # times with fractions: each add rounds, the order shows
    # the sum of each run added at once: other bits (so the comparison above can fail)
    summed, run = np.zeros(n), None
    for e in [*entries, None]:
        p = None if e is None else pcs[e.pc]
        if p is not None and p.kind == "scalar" and run is not None and e.programs is run[0]:
            run[1].append(p.cost)
            continue
        if run is not None:
            summed[run[0]] += sum(run[1])
        run = None if p is None or p.kind == "wait" else (e.programs, [p.cost])
        if p is not None and p.kind == "wait":
            summed[e.programs] += p.cost
    assert summed.tobytes() != want[0].tobytes()


@pytest.mark.parametrize("dt", ["i32", "i64"])
@pytest.mark.parametrize("op", ["divs", "rems"])
def test_divs_rems_of_non_negative_by_positive_match_the_general_rule(dt, op):
    """s.divs / s.rems take numpy's floor division when every dividend is >= 0 and every divisor > 0 (as
    words of ``dt``; on the words themselves when each is its value): the same words as the general
    rule's truncation, and the general rule otherwise (a zero or negative divisor, a negative dividend,
    in one program of many)."""
    from types import SimpleNamespace

    from triton_plate_backend.sim import sem_scalar

    rng = np.random.default_rng(2)
    hi = 2**31 - 1 if dt == "i32" else 2**63 - 1
    edges = np.array([0, 1, 2, 3, 7, 64, hi - 1, hi], np.int64)
    a = np.concatenate([rng.integers(0, hi, 300, dtype=np.int64), edges])
    b = np.concatenate(
        [rng.integers(1, 1000, 150, dtype=np.int64), rng.integers(1, hi, 150, dtype=np.int64), np.maximum(edges, 1)]
    )
    if dt == "i32":  # words whose low 32 bits are what the rule reads: high bits set
        a = a + (rng.integers(-4, 4, a.size) << 32)
    # every word its value (sign-extended i32): the floor ufunc on the words themselves
    cases = [(a, b), (nx.to_word(nx.from_word(a, dt), dt), b)]
    for bad in (0, -1, -3):  # one program's divisor off the fast path
        y = b.copy()
        y[17] = bad
        cases.append((a, y))
    x = a.copy()
    x[5] = -9  # one negative dividend
    cases.append((x, b))
    fast = general = 0
    for x, y in cases:
        want = nx.to_word(BINARY[op]["int"](nx.from_word(x, dt), nx.from_word(y, dt), dt), dt)
        st = SimpleNamespace(regs=np.stack([np.zeros_like(x), x, y]), P=x.size)
        sem_scalar.SEMANTICS[f"s.{op}"](st, SimpleNamespace(operands=(0, 1, 2), suffixes=(dt,), mnemonic=f"s.{op}"))
        assert st.regs[0].dtype == np.int64 and np.array_equal(st.regs[0], want)
        on_fast = nx.from_word(x, dt).min() >= 0 and nx.from_word(y, dt).min() > 0
        fast, general = fast + on_fast, general + (not on_fast)
    assert fast == 2 and general == 4


def _reference_aggregate(trace, machine, core_of, pcs, issues):
    """timing._aggregate as it was: every non-DMA entry's cost added to its programs' table row."""
    C, D = machine.total_cores, machine.total_domains
    comp, issued, moved = np.zeros(C), np.zeros((2, C)), np.zeros((2, C))
    read, write = np.zeros((D, D)), np.zeros((D, D))
    rate = machine.core.dma.bytes_per_cycle
    compute = {}
    for entry in trace.entries:
        p = pcs[entry.pc]
        if p.kind != "dma":
            acc = compute.get(id(entry.programs))
            if acc is None:
                compute[id(entry.programs)] = [entry.programs, p.cost]
            else:
                acc[1] += p.cost
            continue
        cs = core_of[np.asarray(entry.programs, dtype=np.int64)]
        issue = issues[id(entry)]
        bbd = entry.bytes_by_domain if entry.bytes_by_domain is not None else np.zeros((len(cs), D))
        issued[p.engine // 2] += np.bincount(cs, weights=issue, minlength=C)
        moved[p.engine // 2] += np.bincount(cs, weights=bbd.sum(axis=1) / rate, minlength=C)
        onehot = np.zeros((D, len(cs)))
        onehot[cs // machine.domain.cores, np.arange(len(cs))] = 1.0
        mat = write if p.outbound else read
        mat += onehot @ bbd
    for progs, total in compute.values():
        comp += np.bincount(core_of[np.asarray(progs, dtype=np.int64)], minlength=C) * total
    return comp, cost.dma_engine_bound(issued, moved), read, write


@pytest.mark.parametrize("launched, rows", [(4, 18), (300, 601)])
def test_the_level0_inputs_over_runs_of_entries_match_entry_by_entry(monkeypatch, launched, rows):
    """mapped() with each run of non-DMA entries of one programs array summed before it meets the table,
    and issue cycles kept as computed when already one per program: the same compute, engine and byte
    sums, bound, issue cycles and FLOPs (bit for bit) as entry by entry, over persistent launches whose
    programs run different trip counts (contexts interleaved), x replicated (the replica column folded)."""
    from triton_plate_backend.sim import timing

    program = _persistent_vec_add()
    n = 256 * rows - 37
    results = []
    for reference in (False, True):
        if reference:
            monkeypatch.setattr(timing, "_aggregate", _reference_aggregate)
        for placement in ("blocked", "replicated"):
            mem = DeviceMemory(MACHINE)
            ptrs = [mem.alloc(4 * n, placement=p).base for p in (placement, "blocked", "interleaved")]
            trace = executor.execute(program, launched, [*ptrs, n, launched, rows], mem, MACHINE)
            if not reference:
                assert any(e.bytes_by_domain is not None and e.bytes_by_domain[:, -1].any() for e in trace.entries) == (
                    placement == "replicated"
                )
            m = mapped(trace, MACHINE, "round_robin")
            dmas = [e for e in m.trace.entries if id(e) in m.issues]
            issues = [m.issues[id(e)] for e in dmas]
            assert dmas and all(i.shape == (len(e.programs),) for i, e in zip(issues, dmas))
            flops = estimate.model(trace, MACHINE, policy="round_robin").flops
            results.append(
                (
                    m.compute.tobytes(),
                    m.engines.tobytes(),
                    m.read.tobytes(),
                    m.write.tobytes(),
                    m.bound,
                    b"".join(i.astype(np.float64).tobytes() for i in issues),
                    flops,
                    float(sum(m.pcs[e.pc].flops * len(e.programs) for e in m.trace.entries)),
                )
            )
    assert results[:2] == results[2:]
    assert all(r[6] == r[7] for r in results)


@pytest.mark.parametrize("placement", ["blocked", "replicated"])
def test_the_level0_terms_kept_per_dma_match_each_computed(monkeypatch, placement):
    """mapped() with a DMA entry's issue cycles kept per (pc, programs, runs, elements) and its level-0
    terms per (programs, issue, bytes by home), each entry's terms still added one after another: the same
    compute, engine and byte sums, bound and issue cycles, bit for bit, as each computed afresh (KEY_BYTES
    0); fewer issue cycles are computed, and a kept issue array is read-only."""
    from triton_plate_backend.sim import timing

    program = _persistent_vec_add()
    n = 256 * 601 - 37
    mem = DeviceMemory(MACHINE)
    ptrs = [mem.alloc(4 * n, placement=p).base for p in (placement, "blocked", "interleaved")]
    trace = executor.execute(program, 4, [*ptrs, n, 4, 601], mem, MACHINE)  # 4 programs: ~150 trips each
    calls = []
    issue = timing._issue
    monkeypatch.setattr(timing, "_issue", lambda *a: calls.append(1) or issue(*a))
    results = []
    for key_bytes in (timing.KEY_BYTES, 0):
        monkeypatch.setattr(timing, "KEY_BYTES", key_bytes)
        del calls[:]
        m = mapped(trace, MACHINE, "round_robin")
        issues = b"".join(m.issues[id(e)].tobytes() for e in m.trace.entries if id(e) in m.issues)
        bits = (m.compute.tobytes(), m.engines.tobytes(), m.read.tobytes(), m.write.tobytes(), m.bound, issues)
        results.append((bits, len(calls), not any(i.flags.writeable for i in m.issues.values())))
    (kept, kept_calls, kept_read_only), (each, each_calls, _) = results
    assert kept == each
    assert kept_calls < each_calls
    assert kept_read_only


@pytest.mark.parametrize("launched, rows", [(4, 18), (300, 601)])
def test_the_model_s_transfer_times_kept_per_bytes_match_each_computed(monkeypatch, launched, rows):
    """estimate._program_times with the transfer times of one programs array kept by the DMA entry's
    bytes by home (a persistent loop's trips repeat them): the same occupancy, end and DMA-out busy
    per program, bit for bit, as each entry's computed afresh; the kept times are used."""
    program = _persistent_vec_add()
    n = 256 * rows - 37
    mem = DeviceMemory(MACHINE)
    ptrs = [mem.alloc(4 * n, placement=p).base for p in ("blocked", "interleaved", "blocked")]
    trace = executor.execute(program, launched, [*ptrs, n, launched, rows], mem, MACHINE)
    m = mapped(trace, MACHINE, "round_robin")
    calls = []
    transfer = estimate._StepRates.transfer
    monkeypatch.setattr(estimate._StepRates, "transfer", lambda *a: calls.append(1) or transfer(*a))
    results = []
    for key_bytes in (estimate.TRANSFER_KEY_BYTES, 0):
        monkeypatch.setattr(estimate, "TRANSFER_KEY_BYTES", key_bytes)
        del calls[:]
        out = estimate._program_times(m.trace, MACHINE, m.pcs, m.core_of, m.issues)
        results.append((b"".join(x.tobytes() for x in out), len(calls)))
    (kept, kept_calls), (each, each_calls) = results
    assert kept == each
    assert kept_calls < each_calls


@pytest.mark.parametrize("launched, rows", [(4, 18), (300, 601)])
def test_the_level1_flows_kept_per_bytes_match_each_built(monkeypatch, launched, rows):
    """replay._plan with the flows of one programs array kept by the DMA entry's direction and bytes by
    home (a persistent loop's trips repeat them): the same Profile, bit for bit, as each entry's flows built
    afresh; fewer are built."""
    from triton_plate_backend.sim import replay

    program = _persistent_vec_add()
    n = 256 * rows - 37
    mem = DeviceMemory(MACHINE)
    ptrs = [mem.alloc(4 * n, placement=p).base for p in ("blocked", "interleaved", "blocked")]
    trace = executor.execute(program, launched, [*ptrs, n, launched, rows], mem, MACHINE)
    built = []
    flows = replay._Flows
    monkeypatch.setattr(replay, "_Flows", lambda *a: built.append(1) or flows(*a))
    results = []
    for key_bytes in (replay.FLOWS_KEY_BYTES, 0):
        monkeypatch.setattr(replay, "FLOWS_KEY_BYTES", key_bytes)
        del built[:]
        p = simulate_timing(trace, MACHINE)
        bits = (p.cycles, p.busy_by_core.tobytes(), p.read_bytes.tobytes(), p.write_bytes.tobytes(), p.bucket_cycles)
        results.append((bits, len(built)))
    (kept, kept_built), (each, each_built) = results
    assert kept == each
    assert kept_built < each_built


def test_the_cycle_collector_is_paused_inside_and_restored_after():
    """sim.host.cycle_collection_paused: off inside (nested blocks too), back as it was after, also
    when the block raises; a block entered with the collector off leaves it off."""
    import gc

    from triton_plate_backend.sim.host import cycle_collection_paused

    was = gc.isenabled()
    try:
        gc.enable()
        with pytest.raises(ValueError):
            with cycle_collection_paused():
                with cycle_collection_paused():
                    assert not gc.isenabled()
                assert not gc.isenabled()
                raise ValueError
        assert gc.isenabled()
        gc.disable()
        with cycle_collection_paused():
            pass
        assert not gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()


def _f32_operands(n, seed):
    """f32 values of every kind: random bit patterns (NaNs, infinities, subnormals), normal values, specials."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2**32, n // 2, dtype=np.uint64).astype(np.uint32).view(np.float32)
    normal = (rng.standard_normal(n - n // 2 - 16) * 4).astype(np.float32)
    special = [0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-38, 88.7, 89, -103, 1, -1, 0.5, 2, 710]
    special = np.array(special, np.float32)
    return rng.permutation(np.concatenate([bits, normal, special]))


@pytest.mark.parametrize("kind", ["unary", "binary"])
def test_wide_f32_ops_into_the_tile_match_the_rounded_float64_result(kind):
    """A transcendental on f32 tiles computed straight into the result's tile (``_wide``'s ``into``: numpy's
    float64 loop over the cast operands, the result cast to f32) gives the bits of the op as defined
    (float64 result rounded by round_float), in place and into another tile, for every such op."""
    from triton_plate_backend.sim.sem_vector import UNARY
    from triton_plate_backend.sim.semantics import SEMANTICS

    table = UNARY if kind == "unary" else BINARY
    ops = [op for op, fns in table.items() if getattr(fns.get("float"), "into", None) is not None]
    assert "exp" in ops or "pow" in ops  # the path is taken at all
    P, n = 8, 512
    tiles = [Tile(0, "f32", (n,)), Tile(4096, "f32", (n,)), Tile(8192, "f32", (n,))]
    program = Program("wide", tiles=tiles, consts=[])
    for op in ops:
        fn = table[op]["float"]
        for d in (2, 0):  # another tile, and in place over the first operand
            ctx = executor.new_context(program, P, (), None, MACHINE)
            a, b = _f32_operands(P * n, 1).reshape(P, n), _f32_operands(P * n, 2).reshape(P, n)
            ctx.write(0, a)
            ctx.write(1, b)
            operands = (d, 0) if kind == "unary" else (d, 0, 1)
            with np.errstate(all="ignore"):
                SEMANTICS[f"v.{op}"](ctx, Inst(f"v.{op}", (), operands))
                want = fn(a, "f32") if kind == "unary" else fn(a, b, "f32")
            got = ctx.read(d)
            assert got.dtype == want.dtype and np.array_equal(got.view(np.uint32), want.view(np.uint32)), (op, d)


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16", "i8", "i32", "f64"])
@pytest.mark.parametrize("fill", [0.0, float("-inf"), float("nan"), -7.5, 300])
def test_a_fully_masked_load_fills_the_tile_it_is_given(mem, dtype, fill):
    """A strided load with every element masked off (a prefetch past a loop's last trip) writes its
    fill into the destination tile it is given: the values and Traffic of the load without one."""
    rec = mem.alloc(64 * 1024)
    try:
        p, size = 16, 64
        isz = NUMPY[dtype].itemsize
        base = rec.base + np.arange(p, dtype=np.int64) * size * isz
        st = np.ones((p, 1), np.int64)
        zero = np.zeros((p, 1), np.int64)
        for lo, hi in ((zero, zero), (zero + 5, zero + 2)):  # empty, and lo past hi
            args = (mem, base, dtype, (size,), st, lo, hi, fill)
            want, want_traffic = dma.load_strided(*args)
            into = np.full((p, size), 3, NUMPY[dtype])
            got, traffic = dma.load_strided(*args, into=into)
            assert got is into
            assert np.array_equal(got.view(f"u{isz}"), np.asarray(want).view(f"u{isz}"))
            for f in ("bytes_by_domain", "elements", "runs"):
                assert np.array_equal(getattr(traffic, f), getattr(want_traffic, f)), f
    finally:
        mem.free(rec.base)


def test_a_kept_sram_image_is_zeroed_and_one_still_viewed_is_not_kept():
    executor._sram_kept.clear()
    img = executor._zeroed_sram(4, 128)
    img[:] = 7
    kept_id = id(img)
    box = [img]
    del img
    executor._keep_sram(box)
    again = executor._zeroed_sram(4, 128)
    assert id(again) == kept_id and not again.any()
    view = again[1:]
    executor._keep_sram([again])  # the caller's name still holds it: not kept
    assert executor._sram_kept == []
    box = [again]
    del again
    executor._keep_sram(box)  # a view of it outlived the batch: not kept
    assert executor._sram_kept == []
    again = view.base
    del view
    box = [again]
    del again
    executor._keep_sram(box)
    assert len(executor._sram_kept) == 1
    assert executor._zeroed_sram(4, 64) is not executor._sram_kept[0]
    assert id(executor._zeroed_sram(4, 128)) == kept_id and executor._sram_kept == []
    executor._keep_sram([np.zeros((1, executor._SRAM_KEPT_BYTES + 1), np.uint8)])
    assert executor._sram_kept == []


def test_whether_a_kept_sram_image_must_be_zeroed_is_asked_only_of_a_large_one():
    """``_zeroed_sram``'s ``zero`` as a callable (the executor's ``reads_unwritten_sram`` of the program): not
    asked for a fresh image nor for a kept one up to _ZERO_UNASKED_BYTES (zeroed either way), asked for a
    larger kept one, which is zeroed only when it answers True."""
    executor._sram_kept.clear()
    asked = []

    def answer(value):
        return lambda: asked.append(value) or value

    small = 4, executor._ZERO_UNASKED_BYTES // 4
    large = 2, executor._ZERO_UNASKED_BYTES // 2 + 64
    for p, row in (small, large):
        img = executor._zeroed_sram(p, row, answer(False))  # fresh: zeros, nothing asked
        assert asked == [] and not img.any()
        img[:] = 5
        box = [img]
        del img
        executor._keep_sram(box)
    img = executor._zeroed_sram(*small, answer(False))
    assert asked == [] and not img.any()  # small: zeroed without asking
    img = executor._zeroed_sram(*large, answer(True))
    assert asked == [True] and not img.any()
    img[:] = 5
    box = [img]
    del img
    executor._keep_sram(box)
    img = executor._zeroed_sram(*large, answer(False))
    assert asked == [True, False] and (img == 5).all()  # the program never reads what it did not write
    executor._sram_kept.clear()


def test_a_launch_after_one_that_wrote_its_sram_starts_from_zeros(mem):
    """A launch's kept SRAM image, taken by the next context of its shape, holds zeros where the launch
    wrote (the SRAM starts at zero)."""
    program = Program(
        "writes",
        instrs=[
            Inst("s.arg", (), (0, 0)),
            Inst("v.splat", (), (0, 0)),
            Inst("v.splat", (), (2, 0)),
            Inst("halt", (), ()),
        ],
        tiles=[Tile(0, "i32", (16,)), Tile(64, "i32", (16,)), Tile(192, "i32", (8,))],
        consts=[0],
        args=[Arg("v", "i32")],
    )
    executor._sram_kept.clear()
    executor.execute(program, 4, [7], mem, MACHINE, record_trace=False)
    assert len(executor._sram_kept) == 1
    kept = executor._sram_kept[0]
    assert kept[:, :64].view(np.int32).tolist() == [[7] * 16] * 4  # what the launch left
    ctx = executor.new_context(program, 4, [7], None, MACHINE)
    assert ctx.sram is kept and not ctx.sram.any() and executor._sram_kept == []


def test_a_program_s_derived_rules_follow_its_changes_and_replaced_rules(monkeypatch):
    """The rules, plain-run ends and SRAM row of a program are kept on it between launches, and made
    again when its constants change or a SEMANTICS rule it uses is replaced."""
    from triton_plate_backend.sim.semantics import SEMANTICS

    program = Program(
        "derived",
        instrs=[Inst("s.li", (), (0, 0)), Inst("v.add", (), (0, 0, 0)), Inst("halt", (), ())],
        tiles=[Tile(0, "f32", (4,))],
        consts=[5],
    )
    first = executor._derived(program)
    assert executor._derived(program) is first and first[1] == executor._straight(program) and first[2] == 64
    program.consts[0] = 6
    second = executor._derived(program)
    assert second is not first
    ctx = executor.new_context(program, 2, (), None, MACHINE)
    second[0][0](ctx, program.instrs[0])
    assert ctx.regs[0].tolist() == [6, 6]

    def replaced(st, ins):
        return None

    monkeypatch.setitem(SEMANTICS, "v.add", replaced)
    assert executor._derived(program)[0][1] is replaced


def test_plain_run_ends_and_ordered_pcs_are_the_per_pc_definitions():
    """``_straight`` and ``_sees_order`` (kept per mnemonic) give the per-pc definition on a persistent kernel (its
    prologue, loop and DMA) and on random programs of plain, branching and halting instructions."""

    def plain(ins):
        return (
            ins.mnemonic.startswith("s.")
            or ins.mnemonic in executor._PLAIN_SCALAR
            or ins.row.unit in ("vector", "matrix")
        )

    def ordered(ins):
        return ins.row.unit in ("dma_in", "dma_out") or ins.mnemonic in ("dbg.print", "dbg.printr", "dbg.assert")

    def want_ends(program):
        n, ends = len(program.instrs), []
        for pc in range(n):
            end = pc
            while end < n and plain(program.instrs[end]):
                end += 1
            ends.append(end)
        return ends

    kinds = [Inst("s.li", (), (0, 0)), Inst("v.add", (), (0, 0, 0)), Inst("bz", (), (0, 0)), Inst("dma.wait", (), (0,))]
    kinds += [Inst("halt", (), ()), Inst("fence", (), ())]
    programs = [_persistent_vec_add()]
    rng = np.random.default_rng(5)
    for _ in range(30):
        programs.append(Program("p", instrs=[kinds[i] for i in rng.integers(0, len(kinds), rng.integers(0, 12))]))
    for program in programs:
        assert executor._straight(program) == want_ends(program)
        assert executor._sees_order(program) == [ordered(i) for i in program.instrs]
    assert any(executor._sees_order(programs[0])) and any(e > pc + 1 for pc, e in enumerate(want_ends(programs[0])))


# ---- cache-sized sub-batches of straight-line programs ----------------------------------------------
def test_large_images_of_straight_line_programs_run_in_cache_sized_sub_batches():
    def program(tiles, *mnemonics):
        return Program("p", instrs=[Inst(m, (), ()) for m in (*mnemonics, "halt")], tiles=tiles)

    small = program([Tile(0, "f32", (1024,))])
    assert executor.sub_batch_programs(small, 8 * 1024, executor.MAX_BATCH) == executor.MAX_BATCH  # 32 MiB image
    assert executor.sub_batch_programs(small, 12288, 4096) == executor.CACHE_BATCH_BYTES // 12288  # the eager ops' rows
    large = program([Tile(0, "f32", (4096,)), Tile(16384, "i8", (64,))])
    row = 71040  # test_conversions' downcast_emulated: 60 tiles, the largest 16 KiB, 4096 programs
    assert executor.sub_batch_programs(large, row, 64) == 64
    assert executor.sub_batch_programs(large, row, 3778) == executor.CACHE_BATCH_BYTES // row
    # the floors: enough programs for the largest tile to span CACHE_TILE_BYTES, and CACHE_MIN_PROGRAMS
    assert executor.sub_batch_programs(large, 1 << 20, 256) == executor.CACHE_TILE_BYTES // (4 * 4096)
    wide = program([Tile(0, "i8", (65536,))])
    assert executor.sub_batch_programs(wide, 4 << 20, 64) == executor.CACHE_MIN_PROGRAMS
    # matrix work: sub-batches of CACHE_MATRIX_BATCH_BYTES (the 4096^3 GEMM's 256 KiB rows: 128 programs, not 32)
    acc = [Tile(0, "f32", (128, 128))]
    gemm_row = 256 << 10
    assert executor.CACHE_MATRIX_BATCH_BYTES // gemm_row > executor.CACHE_BATCH_BYTES // gemm_row
    for m in ("m.mma", "loop"):
        rows = executor.sub_batch_programs(program(acc, "m.mma", m), gemm_row, 1024, traced=False)
        assert rows == executor.CACHE_MATRIX_BATCH_BYTES // gemm_row
    assert executor.sub_batch_programs(program(acc, "nop", "loop"), gemm_row, 1024, traced=False) == 32
    assert executor.sub_batch_programs(program(acc, "m.mma", "loop"), gemm_row, 1024) == 1024  # traced: whole
    # atomics, prints and asserts: the batch as it is; branches too when the launch records its trace
    for m in ("atom.rmw", "atom.cas", "dbg.print", "dbg.assert"):
        assert executor.sub_batch_programs(program(large.tiles, "nop", m), row, 3778, traced=False) == 3778
    for m in ("bz", "bnz", "jmp", "loop"):
        assert executor.sub_batch_programs(program(large.tiles, "nop", m), row, 3778) == 3778
        assert executor.sub_batch_programs(program(large.tiles, "nop", m), row, 3778, traced=False) < 3778


def test_sub_batches_write_and_trace_what_the_batch_does(monkeypatch):
    """A straight-line launch in cache-sized sub-batches: the same memory, the same trace (entries, digest,
    modeled cycles) and the same step count as the whole batch."""
    analysis = access.AccessAnalysis()
    program, _ = generate(run_passes(parse(VEC_ADD, "vec_add.ttir"), analysis), None, MACHINE, analysis)
    assert not any(ins.mnemonic in executor._CUT_EXCLUDED for ins in program.instrs)
    n, grid = 256 * 37 - 11, 37
    batches = []
    run_batch = executor._Launch.run_batch
    monkeypatch.setattr(
        executor._Launch, "run_batch", lambda self, pids: (batches.append(pids.size), run_batch(self, pids))
    )
    steps = []
    init = executor._Launch.__init__

    def keep(self, *a, **k):
        init(self, *a, **k)
        steps.append(self)

    monkeypatch.setattr(executor._Launch, "__init__", keep)

    def launch():
        mem = DeviceMemory(MACHINE)
        rng = np.random.default_rng(3)
        ptrs = []
        for arr in (rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)):
            rec = mem.alloc(arr.nbytes)
            mem.write_bytes(rec.base, arr.tobytes())
            ptrs.append(rec.base)
        ptrs.append(mem.alloc(4 * n).base)
        batches.clear()
        trace = executor.execute(program, grid, [*ptrs, n], mem, MACHINE)
        return mem.read_bytes(ptrs[2], 4 * n), trace, steps[-1].steps

    whole, trace, nsteps = launch()
    assert batches == [grid]
    row = executor._derived(program)[2]
    monkeypatch.setattr(executor, "CACHE_CUT_BYTES", 8 * row - 1)
    monkeypatch.setattr(executor, "CACHE_BATCH_BYTES", 8 * row)
    monkeypatch.setattr(executor, "CACHE_TILE_BYTES", 1)
    monkeypatch.setattr(executor, "CACHE_MIN_PROGRAMS", 1)
    cut, cut_trace, cut_steps = launch()
    assert batches == [8, 8, 8, 8, 5] and cut == whole and cut_steps == nsteps
    assert_same_entries(cut_trace.entries, trace.entries)
    assert cut_trace.digest() == trace.digest()
    assert simulate_timing(cut_trace, MACHINE).cycles == simulate_timing(trace, MACHINE).cycles


@st.composite
def sub_boxes(draw):
    """Several programs' 2-3 axis tiles whose valid elements are the same sub-box in every program (a
    masked loop's last trip, rows past a tensor's end), bases evenly spaced or not, strides of any sign."""
    p = draw(st.integers(1, 6))
    rank = draw(st.integers(2, 3))
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=rank, max_size=rank)))
    strides = draw(st.lists(st.sampled_from([1, 1, 2, 7, 40, -1, -9, 0]), min_size=rank, max_size=rank))
    lo = [draw(st.integers(-2, n)) for n in shape]
    hi = [draw(st.integers(0, n + 3)) for n in shape]
    step = draw(st.sampled_from([0, 3, 250, -250, 1000]))
    return dict(
        dtype=draw(st.sampled_from(["f32", "f16", "i64", "i8", "bf16", "i1"])),
        placement=draw(st.sampled_from(["interleaved", "local:1", "blocked"])),
        p=p,
        shape=shape,
        strides=np.array(strides, np.int64),
        step=step,
        uneven=draw(st.booleans()),
        lo=np.array(lo, np.int64),
        hi=np.array(hi, np.int64),
        seed=draw(st.integers(0, 2**31)),
    )


def _sub_box_setup(mem, r):
    rec = mem.alloc(64 * 1024, r["placement"])
    mem.view(rec.base, 64 * 1024)[:] = np.random.default_rng(r["seed"]).integers(0, 256, 64 * 1024, dtype=np.uint8)
    isz = dma._storage(r["dtype"]).itemsize
    first = rec.base + (16000 // isz) * isz  # room either side for negative strides and steps
    elems = first // isz + np.arange(r["p"]) * r["step"] + (np.arange(r["p"]) == 1) * 5 * r["uneven"]
    return rec, elems * isz, np.broadcast_to(r["strides"], (r["p"], len(r["shape"])))


@HYP
@given(r=sub_boxes(), with_into=st.booleans())
def test_a_sub_box_load_matches_the_masked_box_load(mem, r, with_into):
    """A load whose programs all have the same valid sub-box reads only that part and fills the rest:
    the values and Traffic of the general (mask and gather) path, into the tile it is given or not."""
    rec, base, strides = _sub_box_setup(mem, r)
    args = (mem, base, r["dtype"], r["shape"], strides, r["lo"], r["hi"], -3)
    storage = dma._storage(r["dtype"])
    try:
        into = np.full((r["p"], *r["shape"]), 5, storage) if with_into and r["dtype"] != "i1" else None
        vals, traffic = dma.load_strided(*args, into=into)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(dma, "_sub_box", lambda box: None)
            mp.setattr(dma._MaskedTiles, "make", classmethod(lambda cls, *a: None))
            want_vals, want_traffic = dma.load_strided(*args)
        assert vals.dtype == want_vals.dtype and vals.shape == want_vals.shape
        assert np.ascontiguousarray(vals).tobytes() == np.ascontiguousarray(want_vals).tobytes()
        _same_traffic(traffic, want_traffic)
    finally:
        mem.free(rec.base)


@HYP
@given(r=sub_boxes())
def test_a_sub_box_store_matches_the_masked_box_store(mem, r):
    """A store whose programs all have the same valid sub-box writes the bytes (overlapping addresses:
    the last in program, row-major order) and Traffic of the general path."""
    rec, base, strides = _sub_box_setup(mem, r)
    before = mem.read_bytes(rec.base, rec.nbytes)
    raw = np.random.default_rng(r["seed"] + 1).integers(0, 256, (r["p"], *r["shape"], 8), dtype=np.uint8)
    values = raw.view(dma._storage(r["dtype"]))[..., 0].astype(dma.NUMPY[r["dtype"]])
    if r["dtype"] == "i1":
        values = raw[..., 0] % 2 == 1
    args = (mem, base, values, strides, r["lo"], r["hi"])
    try:
        traffic = dma.store_strided(*args, dtype=r["dtype"])
        after = mem.read_bytes(rec.base, rec.nbytes)
        mem.write_bytes(rec.base, before)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(dma, "_sub_box", lambda box: None)
            mp.setattr(dma._MaskedTiles, "make", classmethod(lambda cls, *a: None))
            want = dma.store_strided(*args, dtype=r["dtype"])
        assert after == mem.read_bytes(rec.base, rec.nbytes)
        _same_traffic(traffic, want)
    finally:
        mem.free(rec.base)


def test_a_tile_past_a_tensor_s_end_loads_without_its_mask(mem, monkeypatch):
    """16 programs' [2048, 8] tiles of which rows 2 and up lie past the tensor (FlagGems' batch norm at
    batch 2050, its second row block): the rows inside are read, the rest filled, no mask built."""
    rec = mem.alloc(2050 * 16 * 8 * 4)
    try:
        data = np.random.default_rng(0).standard_normal((2050, 16, 8)).astype(np.float32)
        mem.view(rec.base, data.nbytes)[:] = data.view(np.uint8).reshape(-1)
        base = rec.base + (2048 * 128 + np.arange(16) * 8) * 4  # row 2048 of each program's column block
        strides = np.array([[128, 1]] * 16, np.int64)
        lo, hi = np.zeros((16, 2), np.int64), np.array([[2, 8]] * 16, np.int64)

        def no_mask(*a, **k):
            raise AssertionError("the mask of every element was built")

        monkeypatch.setattr(dma._Box, "valid", no_mask)
        monkeypatch.setattr(dma._Box, "offsets", no_mask)
        vals, _ = dma.load_strided(mem, base, "f32", (2048, 8), strides, lo, hi, 0.0)
        want = np.zeros((16, 2048, 8), np.float32)
        want[:, :2] = data[2048:].transpose(1, 0, 2)
        assert np.array_equal(vals, want)
        rng = np.random.default_rng(1).standard_normal((16, 2048, 8)).astype(np.float32)
        dma.store_strided(mem, base, rng, strides, lo, hi, dtype="f32")
        got = mem.view(rec.base, data.nbytes).view(np.float32).reshape(2050, 16, 8)
        assert np.array_equal(got[2048:], rng[:, :2].transpose(1, 0, 2))
        assert np.array_equal(got[:2048], data[:2048])
    finally:
        mem.free(rec.base)


@st.composite
def edge_tiles(draw):
    """Several programs' 2-3 axis tiles with per-program valid sub-boxes (a matrix's edge blocks: interior,
    right edge, bottom edge, corner), side by side in a matrix or evenly spaced, strides of any sign, some
    running past their allocation's end (the valid part inside or not: a fault)."""
    p = draw(st.integers(2, 9))
    rank = draw(st.integers(2, 3))
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=rank, max_size=rank)))
    strides = draw(st.lists(st.sampled_from([1, 1, 1, 2, 7, 40, -1, -9, 0]), min_size=rank, max_size=rank))
    kinds = [(tuple(draw(st.integers(-2, n)) for n in shape), tuple(draw(st.integers(0, n + 3)) for n in shape))]
    kinds += [((0,) * rank, shape), ((0,) * rank, shape)]
    kinds += [  # edges: a ragged end on some axes
        (tuple(draw(st.integers(0, 1)) for n in shape), tuple(draw(st.integers(1, n + 1)) for n in shape))
        for _ in range(3)
    ]
    pick = draw(st.lists(st.integers(0, len(kinds) - 1), min_size=p, max_size=p))
    if draw(st.booleans()):  # bounds of their own per program (several groups, sometimes more than 8)
        pick = list(range(p))
        kinds = [(tuple(draw(st.integers(-1, n)) for n in shape), tuple(draw(st.integers(0, n + 1)) for n in shape))]
        kinds = kinds + [
            (tuple(draw(st.integers(0, n)) for n in shape), tuple(draw(st.integers(1, n + 1)) for n in shape))
            for _ in range(p - 1)
        ]
    return dict(
        dtype=draw(st.sampled_from(["f32", "f16", "i64", "i8", "bf16", "i1"])),
        placement=draw(st.sampled_from(["interleaved", "local:1", "blocked"])),
        p=p,
        shape=shape,
        strides=np.array(strides, np.int64),
        layout=draw(st.sampled_from(["matrix", "even", "uneven"])),
        end=draw(st.sampled_from([None, None, 0, 3, 20])),  # elements of the last tile's corner before the end
        lo=np.array([kinds[k][0] for k in pick], np.int64),
        hi=np.array([kinds[k][1] for k in pick], np.int64),
        seed=draw(st.integers(0, 2**31)),
    )


def _edge_setup(mem, t):
    nbytes = 64 * 1024
    rec = _random_allocation(mem, nbytes, t)
    isz = dma._storage(t["dtype"]).itemsize
    p, inner = t["p"], t["shape"][-1]
    i = np.arange(p, dtype=np.int64)
    rel = {"matrix": (i // 3) * 200 + (i % 3) * inner, "even": i * 37, "uneven": i * 37 + (i == 1) * 5}[t["layout"]]
    first = (16000 // isz) if t["end"] is None else nbytes // isz - t["end"] - int(rel[-1])
    return rec, rec.base + (first + rel) * isz, np.broadcast_to(t["strides"], (p, len(t["shape"])))


def _no_masked_tiles(monkeypatch):
    monkeypatch.setattr(dma._MaskedTiles, "make", classmethod(lambda cls, *a: None))


@HYP
@given(t=edge_tiles(), with_into=st.booleans(), few=st.sampled_from([64, 1]))
def test_masked_tiles_load_like_the_box_code(mem, t, with_into, few):
    """Matrix tiles whose programs' valid sub-boxes differ read each sub-box and fill the rest: the values,
    Traffic and faults (message and all) of the general path, into the tile they are given or not (grouped
    in Python or, past ``few`` programs, by numpy)."""
    rec, base, strides = _edge_setup(mem, t)
    args = (mem, base, t["dtype"], t["shape"], strides, t["lo"], t["hi"], -3)
    storage = dma._storage(t["dtype"])
    try:
        into = np.full((t["p"], *t["shape"]), 5, storage) if with_into and t["dtype"] != "i1" else None
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(dma, "FEW_PROGRAMS", few)
            got, err = _outcome(lambda: dma.load_strided(*args, into=into))
        with pytest.MonkeyPatch.context() as mp:
            _no_masked_tiles(mp)
            want, want_err = _outcome(lambda: dma.load_strided(*args))
        assert err == want_err
        if want is not None:
            assert got[0].dtype == want[0].dtype and got[0].shape == want[0].shape
            assert np.ascontiguousarray(got[0]).tobytes() == np.ascontiguousarray(want[0]).tobytes()
            _same_traffic(got[1], want[1])
    finally:
        mem.free(rec.base)


@HYP
@given(t=edge_tiles())
def test_masked_tiles_store_like_the_box_code(mem, t):
    """The same tiles stored: the bytes written (overlapping addresses: the box code's, last in program,
    row-major order), Traffic and faults of the general path."""
    rec, base, strides = _edge_setup(mem, t)
    before = mem.read_bytes(rec.base, rec.nbytes)
    raw = np.random.default_rng(t["seed"] + 1).integers(0, 256, (t["p"], *t["shape"], 8), dtype=np.uint8)
    values = raw.view(dma._storage(t["dtype"]))[..., 0].astype(dma.NUMPY[t["dtype"]])
    if t["dtype"] == "i1":
        values = raw[..., 0] % 2 == 1
    args = (mem, base, values, strides, t["lo"], t["hi"])
    try:
        got, err = _outcome(lambda: dma.store_strided(*args, dtype=t["dtype"]))
        after = mem.read_bytes(rec.base, rec.nbytes)
        mem.write_bytes(rec.base, before)
        with pytest.MonkeyPatch.context() as mp:
            _no_masked_tiles(mp)
            want, want_err = _outcome(lambda: dma.store_strided(*args, dtype=t["dtype"]))
        assert err == want_err and after == mem.read_bytes(rec.base, rec.nbytes)
        if want is not None:
            _same_traffic(got, want)
    finally:
        mem.free(rec.base)


def test_a_matrix_s_edge_blocks_load_and_store_without_the_mask(mem, monkeypatch):
    """A 90 x 60 f32 matrix in 32 x 32 blocks (3 x 2 programs: interior, right edge, bottom edge, corner), its
    last rows the allocation's end: each block's valid part read and written, the rest filled, no mask
    built and no masked-off lane read or written."""
    rec = mem.alloc(90 * 60 * 4)
    try:
        data = np.random.default_rng(0).standard_normal((90, 60)).astype(np.float32)
        mem.view(rec.base, data.nbytes)[:] = data.view(np.uint8).reshape(-1)
        pm, pn = np.divmod(np.arange(6), 2)
        base = rec.base + (pm * 32 * 60 + pn * 32) * 4
        strides = np.array([[60, 1]] * 6, np.int64)
        lo = np.zeros((6, 2), np.int64)
        hi = np.stack([90 - pm * 32, 60 - pn * 32], axis=1)

        def no_mask(*a, **k):
            raise AssertionError("the mask of every element was built")

        monkeypatch.setattr(dma._Box, "valid", no_mask)
        monkeypatch.setattr(dma._Box, "offsets", no_mask)
        vals, traffic = dma.load_strided(mem, base, "f32", (32, 32), strides, lo, hi, 7.0, counted=False)
        want = np.full((6, 32, 32), 7.0, np.float32)
        for i in range(6):
            block = data[pm[i] * 32 : pm[i] * 32 + 32, pn[i] * 32 : pn[i] * 32 + 32]
            want[i, : block.shape[0], : block.shape[1]] = block
        assert np.array_equal(vals, want) and traffic is dma.NOT_COUNTED
        new = np.random.default_rng(1).standard_normal((6, 32, 32)).astype(np.float32)
        dma.store_strided(mem, base, new, strides, lo, hi, dtype="f32", counted=False)
        got = mem.view(rec.base, data.nbytes).view(np.float32).reshape(90, 60)
        for i in range(6):
            block = got[pm[i] * 32 : pm[i] * 32 + 32, pn[i] * 32 : pn[i] * 32 + 32]
            assert np.array_equal(block, new[i, : block.shape[0], : block.shape[1]])
    finally:
        mem.free(rec.base)


@pytest.mark.parametrize(
    "rel, strides, distinct",
    [
        ([0, 32, 1920, 1952], [60, 1], True),  # a matrix's 2 x 2 blocks side by side: rows interleave, disjoint
        ([0, 30, 1920, 1950], [60, 1], False),  # blocks two columns apart: rows overlap
        ([0, 37, 74, 111], [40, 1], False),  # 37 apart, rows 40 apart: row j of one meets row j - 1 of the next
        ([0, 1, 2, 3], [60, 0], False),  # a repeated address inside a tile
        ([0, 40000, 80000, 120000], [1000, 7], True),  # disjoint spans, any inner stride
    ],
)
def test_masked_tiles_tell_distinct_addresses(mem, rel, strides, distinct):
    """The store's proof that no two valid elements share an address: spans, else rows, else not proven."""
    rec = mem.alloc(200000 * 4)
    try:
        base = rec.base + np.array(rel, np.int64) * 4
        lo, hi = np.zeros((4, 2), np.int64), np.array([[32, 32], [32, 28], [26, 32], [26, 28]], np.int64)
        st_ = np.array([strides] * 4, np.int64)
        tiles = dma._MaskedTiles.make(mem, base, "f32", (32, 32), st_, lo, hi)
        assert tiles is not None and len(tiles.groups) == 4
        assert tiles.distinct() is distinct
    finally:
        mem.free(rec.base)
