"""sim/executor.py: whole hand-built programs over grids: batching, masking, divergence and
reconvergence, loops, a spin lock, fault wrapping, the step budget, tracing and speed."""

import time
import warnings

import numpy as np
import pytest

from triton_plate_backend.errors import MemoryFault, SimulatorError
from triton_plate_backend.isa.program import Arg, Inst, Program, Tile
from triton_plate_backend.isa.table import ISA
from triton_plate_backend.machine import get_machine
from triton_plate_backend.sim.executor import execute, format_inst
from triton_plate_backend.sim.memory import DeviceMemory
from triton_plate_backend.sim.runaway import WATCH_FIRST
from triton_plate_backend.sim.semantics import DeviceAssertionError
from triton_plate_backend.srcloc import Loc

MACHINE = get_machine("plate-mini")
_UNIT_PREFIXES = ("s", "v", "m", "dma", "atom", "dbg")


class Builder:
    """Builds a Program from mnemonic text and raw operands: numbers for imm/str operands (put in
    the constant pool), label names for label operands, tuples for register lists."""

    def __init__(self, name="k", args=()):
        self.program = Program(name, args=[Arg(n, t) for n, t in args])
        self.lines = []
        self.loc = 0

    def tile(self, dtype, shape, strides=None):
        addr = max((t.span()[1] for t in self.program.tiles), default=0)
        addr = -(-addr // 64) * 64
        self.program.tiles.append(Tile(addr, dtype, tuple(shape), strides))
        return len(self.program.tiles) - 1

    def at(self, file, line):
        self.program.locs.append(Loc(file, line, 1))
        self.loc = len(self.program.locs) - 1
        return self

    def label(self, name):
        self.program.labels[name] = len(self.lines)
        return self

    def __call__(self, text, *operands):
        parts = text.split(".")
        n = 2 if parts[0] in _UNIT_PREFIXES else 1
        self.lines.append((".".join(parts[:n]), tuple(parts[n:]), operands, self.loc))
        return self

    def _const(self, value):
        for i, c in enumerate(self.program.consts):
            if type(c) is type(value) and c == value:
                return i
        self.program.consts.append(value)
        return len(self.program.consts) - 1

    def build(self):
        for mnemonic, suffixes, operands, loc in self.lines:
            vals = []
            for od, v in zip(ISA[mnemonic].operands, operands):
                if od.kind in ("imm", "str"):
                    vals.append(self._const(v))
                elif od.kind == "label":
                    vals.append(self.program.labels[v])
                else:
                    vals.append(tuple(v) if od.kind == "rlist" else v)
            self.program.instrs.append(Inst(mnemonic, suffixes, tuple(vals), loc))
        return self.program


@pytest.fixture
def mem():
    return DeviceMemory(MACHINE)


def alloc(mem, values):
    values = np.ascontiguousarray(values)
    a = mem.alloc(max(values.nbytes, 1))
    mem.view(a.base, values.nbytes)[:] = values.view(np.uint8).reshape(-1)
    return a.base


def host(mem, addr, n, dtype):
    return mem.view(addr, n * np.dtype(dtype).itemsize).view(dtype)


def vector_add(block):
    """out[i] = x[i] + y[i] for i < n, one block of ``block`` elements per program."""
    b = Builder("add", [("x", "ptr"), ("y", "ptr"), ("out", "ptr"), ("n", "i32")])
    tx, ty, to = b.tile("f32", [block]), b.tile("f32", [block]), b.tile("f32", [block])
    b("s.pid.x", 0)("s.li", 1, block)("s.mul.i64", 2, 0, 1)("s.arg", 3, 3)("s.sub.i64", 4, 3, 2)  # r4: elements left
    b("s.li", 5, 4)("s.mul.i64", 6, 2, 5)("s.li", 10, 1)("s.li", 11, 0)
    for reg, arg in ((7, 0), (8, 1), (9, 2)):
        b("s.arg", reg, arg)("s.add.i64", reg, reg, 6)
    b.at("add.py", 7)("dma.load", 0, tx, 7, [10], [11], [4], 0.0)("dma.load", 1, ty, 8, [10], [11], [4], 0.0)
    b("dma.wait", 0)("dma.wait", 1)("v.add", to, tx, ty)
    b("dma.store", 2, to, 9, [10], [11], [4])("dma.wait", 2)("halt")
    return b.build()


def _pc_of(program, mnemonic):
    return next(pc for pc, ins in enumerate(program.instrs) if ins.mnemonic == mnemonic)


def store_i64_at_pid(b, value_reg, out_arg=0):
    """Append: out[pid] = r<value_reg> (i64), through a one-element tile."""
    t = b.tile("i64", [1])
    b("s.pid.x", 40)("s.li", 41, 8)("s.mul.i64", 40, 40, 41)("s.arg", 42, out_arg)("s.add.i64", 42, 42, 40)
    b("s.li", 43, 1)("s.li", 44, 0)("v.splat", t, value_reg)("dma.store", 0, t, 42, [43], [44], [43])


# ---- straight-line programs over a grid ----------------------------------------------------------------
@pytest.mark.parametrize("batch_size", [None, 3])
def test_vector_add_with_masked_tail(mem, batch_size):
    n, block = 1000, 128
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    y = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    px, py, po = alloc(mem, x), alloc(mem, y), alloc(mem, np.zeros(n, np.float32))
    grid = -(-n // block)
    trace = execute(vector_add(block), grid, [px, py, po, n], mem, MACHINE, batch_size=batch_size)
    np.testing.assert_array_equal(host(mem, po, n, np.float32), x + y)
    assert trace.grid == (grid, 1, 1) and trace.num_programs == 8
    ran = np.concatenate([e.programs for e in trace.entries if e.pc == 0])
    assert sorted(ran.tolist()) == list(range(8))
    first_load = _pc_of(vector_add(block), "dma.load")
    loads = [e for e in trace.entries if e.pc == first_load]
    assert sum(float(e.bytes_by_domain.sum()) for e in loads) == 4 * n
    assert np.concatenate([e.elements for e in loads]).tolist() == [block] * 7 + [n - 7 * block]


def test_free_during_a_launch_waits_until_it_ends(mem, monkeypatch):
    """A garbage collection inside a launch can free a dead tensor (same thread, so the device lock
    lets it through); the launch's live-table positions must stay valid (upstream test_bin_op)."""
    n, block = 256, 128
    x = np.arange(n, dtype=np.float32)
    px, py, po = alloc(mem, x), alloc(mem, x), alloc(mem, np.zeros(n, np.float32))
    victim = mem.register(256, 64)  # the lowest address: freeing it shifts every other position
    collected = []

    def then_collect(looked_up):  # a DMA's allocation lookup (of many ranges or of one), then a free
        def lookup(lo, hi):
            out = looked_up(lo, hi)
            if not collected:
                collected.append(mem.free(victim.base))
            return out

        return lookup

    monkeypatch.setattr(mem, "span_positions", then_collect(mem.span_positions))
    monkeypatch.setattr(mem, "span_position", then_collect(mem.span_position))
    execute(vector_add(block), n // block, [px, py, po, n], mem, MACHINE)
    np.testing.assert_array_equal(host(mem, po, n, np.float32), 2 * x)
    assert collected and not victim.live


def test_three_d_grid_program_ids(mem):
    b = Builder("ids", [("out", "ptr")])
    b("s.pid.x", 1)("s.pid.y", 2)("s.pid.z", 3)("s.nprog.x", 4)("s.nprog.y", 5)
    b("s.li", 6, 10)("s.mul.i64", 2, 2, 6)("s.li", 6, 100)("s.mul.i64", 3, 3, 6)
    b("s.add.i64", 1, 1, 2)("s.add.i64", 1, 1, 3)
    # linear id = x + nx * (y + ny * z), the slot this program writes
    b("s.pid.x", 7)("s.pid.y", 8)("s.pid.z", 9)("s.mul.i64", 9, 9, 5)("s.add.i64", 8, 8, 9)("s.mul.i64", 8, 8, 4)
    b("s.add.i64", 7, 7, 8)("s.li", 41, 8)("s.mul.i64", 7, 7, 41)("s.arg", 42, 0)("s.add.i64", 42, 42, 7)
    t = b.tile("i64", [1])
    b("s.li", 43, 1)("s.li", 44, 0)("v.splat", t, 1)("dma.store", 0, t, 42, [43], [44], [43])
    out = alloc(mem, np.zeros(24, np.int64))
    execute(b.build(), (2, 3, 4), [out], mem, MACHINE, record_trace=False)
    want = [x + 10 * y + 100 * z for z in range(4) for y in range(3) for x in range(2)]
    assert host(mem, out, 24, np.int64).tolist() == want


# ---- control flow ---------------------------------------------------------------------------------------
def test_divergent_if_else_reconverges(mem):
    b = Builder("branchy", [("out", "ptr")])
    b("s.pid.x", 0)("s.li", 1, 2)("s.rems.i64", 2, 0, 1)("bz", 2, "even")
    b("s.mul.i64", 3, 0, 1)("jmp", "join")  # odd: 2 * pid
    b.label("even")("s.li", 4, 0)("s.sub.i64", 3, 4, 0)  # even: -pid
    b.label("join")
    store_i64_at_pid(b, 3)
    b("halt")
    program = b.build()
    out = alloc(mem, np.zeros(10, np.int64))
    trace = execute(program, 10, [out], mem, MACHINE)
    assert host(mem, out, 10, np.int64).tolist() == [2 * p if p % 2 else -p for p in range(10)]
    join = program.labels["join"]
    at_join = [e for e in trace.entries if e.pc == join]
    assert len(at_join) == 1 and at_join[0].programs.tolist() == list(range(10))  # merged again
    odd = [e for e in trace.entries if e.pc == join - 3]  # the odd branch's multiply
    assert len(odd) == 1 and odd[0].programs.tolist() == [1, 3, 5, 7, 9]


def test_loop_with_per_program_trip_counts(mem):
    b = Builder("tri", [("out", "ptr")])
    b("s.pid.x", 0)("s.li", 1, 1)("s.add.i64", 2, 0, 1)("s.li", 3, 0)  # r2 = pid + 1 trips, r3 = acc
    b.label("top")("s.add.i64", 3, 3, 2)("loop", 2, "top")  # acc += counter
    store_i64_at_pid(b, 3)
    out = alloc(mem, np.zeros(16, np.int64))
    trace = execute(b.build(), 16, [out], mem, MACHINE)  # no halt: falling off the end ends a program
    assert host(mem, out, 16, np.int64).tolist() == [(p + 1) * (p + 2) // 2 for p in range(16)]
    assert sum(len(e.programs) for e in trace.entries if e.pc == 4) == sum(p + 1 for p in range(16))


def test_rows_out_of_id_order_meet_an_atomic_in_id_order(mem):
    """The larger part of a split keeps its SRAM array, its last rows filling the holes the smaller part leaves, so
    its rows are out of id order; an atomic sees them in id order all the same. Programs with pid % 5 == 2 take one
    trip of the loop, the others two: the first take the counter's values 0, 1, ... in increasing pid, then the
    others in increasing pid."""
    b = Builder("order", [("out", "ptr"), ("counter", "ptr")])
    t_cnt, m, one, old = b.tile("i64", [1]), b.tile("i1", [1]), b.tile("i32", [1]), b.tile("i32", [1])
    b("s.arg", 6, 1)("v.splat", t_cnt, 6)("v.fill", m, 1)("v.fill", one, 1)
    b("s.pid.x", 0)("s.li", 1, 5)("s.rems.i64", 2, 0, 1)("s.li", 3, 2)("s.sub.i64", 4, 2, 3)("s.li", 5, 2)
    b("bnz", 4, "go")("s.li", 5, 1)  # pid % 5 == 2: one trip
    b.label("go")("s.add.i64", 7, 7, 5)("loop", 5, "go")
    b("atom.rmw.add.relaxed", old, t_cnt, one, m)("v.extract", 8, old, 0)
    store_i64_at_pid(b, 8)
    b("halt")
    n = 40
    out, counter = alloc(mem, np.zeros(n, np.int64)), alloc(mem, np.zeros(1, np.int32))
    trace = execute(b.build(), n, [out, counter], mem, MACHINE)
    first = [p for p in range(n) if p % 5 == 2]
    rest = [p for p in range(n) if p % 5 != 2]
    want = np.zeros(n, np.int64)
    want[first + rest] = np.arange(n)
    assert host(mem, out, n, np.int64).tolist() == want.tolist()
    assert all(np.all(np.diff(e.programs) > 0) for e in trace.entries)  # a trace entry's programs in increasing id


def _spin_lock_program():
    b = Builder("spin", [("lock", "ptr"), ("counter", "ptr")])
    t_lock, m, old, zero, one = (
        b.tile("i64", [1]),
        b.tile("i1", [1]),
        b.tile("i32", [1]),
        b.tile("i32", [1]),
        b.tile("i32", [1]),
    )
    t_cnt, val = b.tile("i64", [1]), b.tile("i32", [1])
    b("s.arg", 0, 0)("s.arg", 1, 1)("v.splat", t_lock, 0)("v.splat", t_cnt, 1)
    b("v.fill", m, 1)("v.fill", zero, 0)("v.fill", one, 1)
    b.label("spin")("atom.cas.acquire", old, t_lock, zero, one, m)("v.extract", 2, old, 0)("bnz", 2, "spin")
    # critical section: a plain (non-atomic) read-modify-write, safe only under the lock
    b("dma.gather", 0, val, t_cnt, m, 0)("dma.wait", 0)("v.add", val, val, one)
    b("dma.scatter", 1, val, t_cnt, m)("dma.wait", 1)
    b("atom.rmw.xchg.release", old, t_lock, zero, m)("halt")
    return b.build()


@pytest.mark.parametrize("batch_size", [None, 16])
def test_spin_lock_from_cas_terminates_and_counts(mem, batch_size):
    lock, counter = alloc(mem, np.zeros(1, np.int32)), alloc(mem, np.zeros(1, np.int32))
    execute(_spin_lock_program(), 64, [lock, counter], mem, MACHINE, batch_size=batch_size, max_steps=200_000)
    assert host(mem, counter, 1, np.int32)[0] == 64 and host(mem, lock, 1, np.int32)[0] == 0


def test_step_budget_stops_endless_loops(mem):
    b = Builder("forever")
    b("s.li", 0, 1).label("top")("s.add.i64", 1, 1, 0)("jmp", "top")
    with pytest.raises(SimulatorError, match="did not finish within 1000") as err:
        execute(b.build(), 4, [], mem, MACHINE, max_steps=1000)
    assert err.value.pc in (1, 2)
    # a lock nobody releases: every program spins, in several contexts, and the budget still ends it
    # (a budget below the runaway detector's first watch: test_runaway.py has the detector's cases)
    lock, counter = alloc(mem, np.ones(1, np.int32)), alloc(mem, np.zeros(1, np.int32))
    with pytest.raises(SimulatorError, match="possible infinite loop"):
        execute(_spin_lock_program(), 8, [lock, counter], mem, MACHINE, max_steps=WATCH_FIRST)


# ---- faults, debug, arguments ------------------------------------------------------------------------------
def test_memory_fault_names_pc_instruction_source_and_grid(mem):
    n = 300
    x = alloc(mem, np.zeros(n, np.float32))
    with pytest.raises(MemoryFault) as err:  # n says 1000 but the buffers hold 300
        execute(vector_add(128), 8, [x, x, x, 1000], mem, MACHINE)
    e = err.value
    text = str(e)
    pc = _pc_of(vector_add(128), "dma.load")
    assert e.pc == pc and "dma.load q0, t0, r7, [r10], [r11], [r4], 0.0" in text and f"at pc {pc}:" in text
    assert "add.py:7" in text and e.loc.startswith("add.py:7")
    assert (2, 0, 0) in e.programs and (0, 0, 0) not in e.programs and "out-of-bounds" in text


def test_rule_errors_are_wrapped_once_with_context(mem):
    b = Builder("bad")
    ta, tb = b.tile("f32", [4]), b.tile("i32", [4])
    b("v.fill", ta, 1.0).at("bad.py", 3)("v.add", ta, ta, tb)
    with pytest.raises(SimulatorError) as err:
        execute(b.build(), (2, 2), [], mem, MACHINE)
    text = str(err.value)
    assert text.count("at pc 1") == 1 and "IsaError" in text and "v.add t0, t0, t1" in text and "bad.py:3" in text
    assert list(err.value.programs) == [(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0)]


def test_misaligned_tile_and_division_by_zero(mem):
    b = Builder("odd")
    b.program.tiles.append(Tile(2, "f32", (4,)))
    b("v.fill", 0, 1.0)
    with pytest.raises(SimulatorError, match="not aligned") as err:
        execute(b.build(), 1, [], mem, MACHINE)
    assert err.value.pc == 0
    b = Builder("div0", [("out", "ptr")])
    f, z, i = b.tile("f32", [2]), b.tile("f32", [2]), b.tile("i32", [2])
    b("v.fill", f, 1.0)("v.fill", z, 0.0)("v.div", f, f, z)("v.fill", i, 7)("v.divs", i, i, i)
    b("v.fill", i, 0)("v.divs", i, i, i)("v.extract", 0, i, 0)("s.li", 1, 0)("s.divs.i64", 2, 1, 1)
    store_i64_at_pid(b, 0)
    out = alloc(mem, np.zeros(1, np.int64))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy warning escapes the executor
        execute(b.build(), 1, [out], mem, MACHINE)
    assert host(mem, out, 1, np.int64)[0] == -1  # 0 / 0 = -1 (PTX div.s)


def test_print_and_assert_through_the_executor(mem):
    b = Builder("dbg", [("n", "i32")])
    c, v = b.tile("i1", [2]), b.tile("i32", [2])
    b("s.pid.x", 0)("v.splat", v, 0)("dbg.print", "v", v, 0)("s.arg", 1, 0)("dbg.printr", "n", 1)
    b("v.fill", c, 1)("s.li", 2, 2)("bnz", 0, "check")("v.fill", c, 0)  # program 0 fails the assert
    b.label("check").at("dbg.py", 9)("dbg.assert", c, "pid must be positive")
    lines = []
    with pytest.raises(DeviceAssertionError, match="pid must be positive") as err:
        execute(b.build(), 3, [5], mem, MACHINE, printer=lines.append)
    assert lines[:3] == ["pid (0, 0, 0) idx (0) v: 0", "pid (0, 0, 0) idx (1) v: 0", "pid (1, 0, 0) idx (0) v: 1"]
    assert "pid (2, 0, 0) n: 5" in lines
    assert list(err.value.programs) == [(0, 0, 0)] and "dbg.py:9" in str(err.value)


def test_arguments_are_checked_and_converted(mem):
    b = Builder("args", [("x", "f32"), ("k", "i8"), ("out", "ptr")])
    b("s.arg", 0, 0)("s.arg", 1, 1)
    store_i64_at_pid(b, 1, out_arg=2)
    out = alloc(mem, np.zeros(1, np.int64))
    execute(b.build(), 1, [0.1, 200, out], mem, MACHINE)
    assert host(mem, out, 1, np.int64)[0] == 200 - 256  # i8 arguments wrap
    with pytest.raises(SimulatorError, match="takes 3 argument"):
        execute(b.build(), 1, [0.1], mem, MACHINE)


def test_argument_words_kept_for_a_repeat_follow_every_change():
    """A launch repeated with the same int arguments reuses their words (kept on the program); any other
    arguments are converted again: another int, a float (0.0 and -0.0 are equal, their words are not)."""
    from triton_plate_backend.sim.executor import _arg_words

    program = Builder("words", [("x", "f32"), ("k", "i8"), ("out", "ptr")]).build()
    first = _arg_words(program, [1, 200, 4096])
    assert first.tolist() == [np.float64(1.0).view(np.int64), 200 - 256, 4096]
    first[1] = 7  # the caller's copy: the kept words are not changed through it
    assert _arg_words(program, [1, 200, 4096]).tolist()[1] == 200 - 256
    assert _arg_words(program, [1, 201, 4096]).tolist()[1] == 201 - 256
    assert _arg_words(program, [0.0, 1, 0])[0] == 0
    assert _arg_words(program, [-0.0, 1, 0])[0] == np.float64(-0.0).view(np.int64) != 0
    assert _arg_words(program, [0, 1, 0])[0] == 0


@pytest.mark.parametrize("atype", ["ptr", "i64", "i32", "i16", "i8", "i1"])
def test_int_argument_words_are_the_constant_pools(atype):
    """A Python int argument's word (wrapped in Python integers) is the constant conversion's word: the
    value wrapped to the type's width and sign-extended (i1: its low bit), at and past every edge."""
    from triton_plate_backend.sim import numerics as nx
    from triton_plate_backend.sim.executor import _words

    program = Builder("words", [("a", atype)]).build()
    edges = [0, 1, -1, 127, 128, -129, 255, 256, 32767, 32768, -32769, 65535, 2**31 - 1, 2**31, -(2**31) - 1]
    edges += [2**32 + 3, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64 - 1, 2**64 + 5, 10**30, -(10**30)]
    rng = np.random.default_rng(0)
    edges += [int(v) * int(w) for v, w in zip(rng.integers(-(2**62), 2**62, 200), rng.integers(-(2**12), 2**12, 200))]
    for v in edges:
        if atype == "ptr":
            want = nx.const_array(v, "i64").astype(np.int64)[0]
        else:
            want = nx.to_word(nx.const_array(v, atype), atype)[0]
        assert _words(program, [v])[0] == want, v


def test_trace_records_contexts_and_can_be_off(mem):
    x = alloc(mem, np.zeros(256, np.float32))
    program = vector_add(64)
    trace = execute(program, 4, [x, x, x, 256], mem, MACHINE, batch_size=2)
    assert [e.pc for e in trace.entries[: len(program.instrs)]] == list(range(len(program.instrs)))
    assert {tuple(e.programs.tolist()) for e in trace.entries} == {(0, 1), (2, 3)}
    mem_entries = [e for e in trace.entries if e.runs is not None]
    assert len(mem_entries) == 6 and all(e.runs.tolist() == [1, 1] for e in mem_entries)
    assert execute(program, 4, [x, x, x, 256], mem, MACHINE, record_trace=False).entries == []


def test_format_inst():
    program = vector_add(16)
    assert format_inst(program, program.instrs[0]) == "s.pid.x r0"
    assert format_inst(program, program.instrs[-1]) == "halt"


# ---- speed ------------------------------------------------------------------------------------------------
def test_vector_add_one_million_elements(mem):
    """2**20 f32 in blocks of 1024 (1024 programs, 23 instructions): the values (the time is printed; ~55 ms per
    launch on the 2-core dev box, ~45 ms of it in sim/dma.py's strided load/store)."""
    n = 1 << 20
    x = np.arange(n, dtype=np.float32)
    px, py, po = alloc(mem, x), alloc(mem, x), alloc(mem, np.zeros(n, np.float32))
    program = vector_add(1024)
    execute(program, 1024, [px, py, po, n], mem, MACHINE)
    best = min(_timed(lambda: execute(program, 1024, [px, py, po, n], mem, MACHINE)) for _ in range(3))
    np.testing.assert_array_equal(host(mem, po, n, np.float32), 2 * x)
    print(f"vector add 2**20 f32: {best * 1e3:.1f} ms")  # printed: speed is benchmarks/' business, not an assert


def _timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


# ---- SRAM a program instance did not write ---------------------------------------------------------------
def _fill_or_store(write: bool, branch: bool = False):
    """Stores a 64-element tile to out[64 * pid:]; fills it with 7 first (``write``), or only in program 0
    (``branch``: the others jump over the fill), or never: the store then reads a fresh row."""
    b = Builder("fill", [("out", "ptr")])
    t = b.tile("i32", [64])
    b("s.pid.x", 0)("s.li", 1, 256)("s.mul.i64", 2, 0, 1)("s.arg", 3, 0)("s.add.i64", 3, 3, 2)
    b("s.li", 10, 1)("s.li", 11, 0)("s.li", 12, 64)
    if branch:
        b("bnz", 0, "skip")
    if write or branch:
        b("v.fill", t, 7)
    if branch:
        b.label("skip")
    b("dma.store", 0, t, 3, [10], [11], [12])("dma.wait", 0)("halt")
    return b.build()


def test_which_programs_may_read_sram_they_did_not_write():
    from triton_plate_backend.sim.sram_reach import reads_unwritten_sram

    assert not reads_unwritten_sram(vector_add(128))
    assert not reads_unwritten_sram(_fill_or_store(True))
    assert reads_unwritten_sram(_fill_or_store(False))
    assert reads_unwritten_sram(_fill_or_store(False, branch=True))  # one path writes, the other does not
    b = Builder("print")
    t = b.tile("i32", [4])
    b("dbg.print", "t", t, 0)("halt")
    assert reads_unwritten_sram(b.build())  # dbg.print reads its tile from the scalar unit


@pytest.mark.parametrize("branch", [False, True])
def test_a_program_reading_sram_it_did_not_write_sees_zeros_after_a_kept_image_was_written(mem, branch):
    """A batch's kept SRAM image is zeroed again for a program that may read bytes it did not write (and
    only then): the same row size and batch, the first launch writing 7s, the second storing what it finds."""
    grid = 4
    out = alloc(mem, np.full(64 * grid, -1, np.int32))
    execute(_fill_or_store(True), grid, [out], mem, MACHINE)
    assert host(mem, out, 64 * grid, np.int32).tolist() == [7] * (64 * grid)
    execute(_fill_or_store(False, branch=branch), grid, [out], mem, MACHINE)
    want = ([7] * 64 if branch else [0] * 64) + [0] * 64 * (grid - 1)  # program 0 falls through to the fill
    assert host(mem, out, 64 * grid, np.int32).tolist() == want


@pytest.mark.parametrize("moved", [[1, 2, 3, 4], [0], [0, 2], [2, 3]])
def test_split_off_keeps_the_tile_views_a_fresh_view_makes(moved):
    """A context split into row slices (a spin lock's winner and spinners) keeps its tile views, sliced:
    each part's view of every tile is the one view() makes afresh over the part's SRAM (same address, shape,
    strides, dtype, values), a tile no view was made of is made then, and a write through one part's view
    lands in that part's rows only. Each instance keeps its own row (the rows of the part kept need not stay
    in increasing id: the last ones fill the holes the moved ones leave)."""
    from triton_plate_backend.isa.program import Program as Prog
    from triton_plate_backend.sim.executor import Context, new_context

    tiles = [Tile(0, "f32", (2, 3)), Tile(64, "i32", (4,), (2,)), Tile(128, "i1", (3,))]
    ctx = new_context(Prog("views", [], tiles), grid=5)
    for t, tile in enumerate(tiles[:2]):
        ctx.write(t, np.arange(5 * tile.numel).reshape(5, *tile.shape))
    ctx.read(0), ctx.read(1)  # views of t0 and t1 made before the split, none of t2
    mask = np.isin(np.arange(5), moved)
    other = ctx.split_off(mask)
    for part, rows in ((other, np.flatnonzero(mask)), (ctx, np.flatnonzero(~mask))):
        fresh = Context(part.launch, part.pids, part.regs, part.tokens, part.sram)
        assert sorted(part.pids.tolist()) == rows.tolist()
        for t, tile in enumerate(tiles[:2]):
            assert np.array_equal(part.view(t), np.arange(5 * tile.numel).reshape(5, *tile.shape)[part.pids])
        for t in range(len(tiles)):
            got, want = part.view(t), fresh.view(t)
            assert got.__array_interface__ == want.__array_interface__
            assert np.array_equal(got, want)
    ctx.write(0, np.full((ctx.P, 2, 3), -1.0))
    assert (other.view(0) >= 0).all() and (ctx.view(0) == -1).all()


def test_a_plain_block_ending_where_a_context_waits_merges_there(mem):
    """The odd programs run a block of plain instructions while the even ones wait at the store that ends
    it: reaching the store they absorb the waiting part (one trace entry of every program there), as the
    step-by-step path does; a block run past that pc would store twice, in two entries."""
    b = Builder("join", [("out", "ptr")])
    t = b.tile("i64", [1])
    b("s.pid.x", 0)("s.li", 1, 2)("s.rems.i64", 2, 0, 1)
    b("s.li", 41, 8)("s.mul.i64", 40, 0, 41)("s.arg", 42, 0)("s.add.i64", 42, 42, 40)("s.li", 43, 1)("s.li", 44, 0)
    b("v.splat", t, 0)("bz", 2, "store")  # even: store pid
    b("s.li", 3, 100)("s.add.i64", 3, 3, 0)("v.splat", t, 3)  # odd: pid + 100, a plain block up to the store
    b.label("store")("dma.store", 0, t, 42, [43], [44], [43])("halt")
    program = b.build()
    out = alloc(mem, np.zeros(10, np.int64))
    trace = execute(program, 10, [out], mem, MACHINE)
    assert host(mem, out, 10, np.int64).tolist() == [p + 100 if p % 2 else p for p in range(10)]
    stores = [e for e in trace.entries if e.pc == program.labels["store"]]
    assert len(stores) == 1 and stores[0].programs.tolist() == list(range(10))
