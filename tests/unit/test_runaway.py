"""sim/runaway.py and the step budget: an endless loop stops early with an error naming the kernel and
the loop's source line; loops that end, however long or however they wait, are never stopped."""

import numpy as np
import pytest

from triton_plate_backend.errors import SimulatorError
from triton_plate_backend.isa.asm import assemble
from triton_plate_backend.machine import get_machine
from triton_plate_backend.sim import runaway
from triton_plate_backend.sim.executor import execute
from triton_plate_backend.sim.memory import DeviceMemory

MACHINE = get_machine("plate-mini")
# Every proof needs one watch window; a budget that ends right after the first one shows that the
# detector, not the budget, stopped the loop.
FIRST_WINDOW_END = runaway.WATCH_FIRST + runaway.WATCH_STEPS

# program instances with an even id spin on a flag nobody sets, odd ones on a lock nobody releases
TWO_LOOPS = """
.kernel two_loops
.arg flag ptr
.arg lock ptr
.tile F i32[1] @0x0
.tile L i64[1] @0x40
.tile M i1[1] @0x80
.tile OLD i32[1] @0xc0
.tile ZERO i32[1] @0x100
.tile ONE i32[1] @0x140
.loc 1 "waits.py" 7 4
.loc 2 "waits.py" 12 4
    s.arg r0, 0
    s.arg r9, 1
    s.li r1, 1
    s.li r2, 0
    v.splat L, r9
    v.fill M, 1
    v.fill ZERO, 0
    v.fill ONE, 1
    s.pid.x r5
    s.and.i64 r7, r5, r1
    bnz r7, odd
even:
    dma.load q0, F, r0, [r1], [r2], [r1], 0 @1
    v.extract r3, F, 0 @1
    bz r3, even @1
    halt
odd:
    atom.cas.acquire OLD, L, ZERO, ONE, M @2
    v.extract r4, OLD, 0 @2
    bnz r4, odd @2
    halt
"""

# a spin on an atomic read (add 0): it writes, but never changes memory
POLL = """
.kernel poll
.arg flag ptr
.tile L i64[1] @0x0
.tile M i1[1] @0x40
.tile OLD i32[1] @0x80
.tile ZERO i32[1] @0xc0
.loc 1 "poll.py" 3 4
    s.arg r0, 0
    v.splat L, r0
    v.fill M, 1
    v.fill ZERO, 0
top:
    atom.rmw.add.acquire OLD, L, ZERO, M @1
    v.extract r3, OLD, 0 @1
    bz r3, top @1
    halt
"""

# program 0 counts COUNT iterations, then sets the flag the others wait for
HANDOFF = """
.kernel handoff
.arg flag ptr
.tile F i32[1] @0x0
.tile G i32[1] @0x40
.loc 1 "handoff.py" 5 4
.loc 2 "handoff.py" 9 4
    s.arg r0, 0
    s.li r1, 1
    s.li r2, 0
    s.pid.x r5
    bnz r5, consumer
    s.li r8, COUNT
count:
    loop r8, count @1
    v.fill F, 1
    dma.store q1, F, r0, [r1], [r2], [r1]
    halt
consumer:
    dma.load q0, G, r0, [r1], [r2], [r1], 0 @2
    v.extract r3, G, 0 @2
    bz r3, consumer @2
    halt
"""

# the state changes at every turn (a counter): only the step budget ends it
COUNTER = """
.kernel counter
.loc 1 "count.py" 21 8
    s.li r0, 1
top:
    s.add.i64 r1, r1, r0 @1
    jmp top @1
"""


@pytest.fixture
def mem():
    return DeviceMemory(MACHINE)


def buffer(mem, values, dtype=np.int32) -> int:
    data = np.asarray(values, dtype)
    rec = mem.alloc(data.nbytes)
    mem.write_bytes(rec.base, data.tobytes())
    return rec.base


def read(mem, addr, n=1, dtype=np.int32):
    return np.frombuffer(mem.read_bytes(addr, n * np.dtype(dtype).itemsize), dtype)


@pytest.mark.parametrize("grid", [1, 2, 64])
def test_spins_that_can_never_end_stop_within_the_first_watch(mem, grid):
    flag, lock = buffer(mem, [0]), buffer(mem, [1])
    with pytest.raises(SimulatorError, match="is in an endless loop") as err:
        execute(assemble(TWO_LOOPS), grid, [flag, lock], mem, MACHINE, max_steps=FIRST_WINDOW_END)
    text = str(err.value)
    assert "kernel 'two_loops'" in text and "PLATE_MAX_STEPS=" in text and "cannot help" in text
    assert "waits.py:7" in text or "waits.py:12" in text  # the loop's source line
    assert err.value.loc.startswith("waits.py:")
    assert read(mem, lock)[0] == 1 and read(mem, flag)[0] == 0  # the failed CAS left memory alone


def test_a_lock_taken_and_never_released_stops_the_others(mem):
    lock = buffer(mem, [0])
    program = assemble(TWO_LOOPS.replace("s.and.i64 r7, r5, r1", "s.li r7, 1"))  # every instance takes the lock
    with pytest.raises(SimulatorError, match="endless loop") as err:
        execute(program, 64, [buffer(mem, [0]), lock], mem, MACHINE, max_steps=FIRST_WINDOW_END)
    assert "waits.py:12" in str(err.value) and len(err.value.programs) == 63  # all but the holder
    assert read(mem, lock)[0] == 1


def test_polling_with_an_atomic_that_changes_nothing_is_endless(mem):
    with pytest.raises(SimulatorError, match="endless loop") as err:
        execute(assemble(POLL), 4, [buffer(mem, [0])], mem, MACHINE, max_steps=FIRST_WINDOW_END)
    assert "poll.py:3" in str(err.value)


def test_a_wait_that_another_instance_ends_is_not_stopped(mem):
    count = FIRST_WINDOW_END // 2  # 4 steps a turn (1 count, 3 wait): the waiters spin through a whole window
    flag = buffer(mem, [0])
    execute(assemble(HANDOFF.replace("COUNT", str(count))), 8, [flag], mem, MACHINE)
    assert read(mem, flag)[0] == 1


def test_a_long_loop_that_changes_state_runs_to_its_end(mem):
    out = buffer(mem, [0], np.int64)
    program = assemble(
        """
        .kernel long_sum
        .arg out ptr
        .tile S i64[1] @0x0
            s.li r0, 0
            s.li r1, N
            s.li r2, 1
        top:
            s.add.i64 r0, r0, r2
            loop r1, top
            v.splat S, r0
            s.arg r3, 0
            s.li r4, 0
            dma.store q0, S, r3, [r2], [r4], [r2]
        """.replace("N", str(2 * FIRST_WINDOW_END))
    )
    execute(program, 3, [out], mem, MACHINE)
    assert read(mem, out, dtype=np.int64)[0] == 2 * FIRST_WINDOW_END


def test_the_budget_stops_loops_that_change_state_and_names_the_loop(mem):
    with pytest.raises(SimulatorError, match="did not finish within 5000 instruction steps") as err:
        execute(assemble(COUNTER), 2, [], mem, MACHINE, max_steps=5000)
    text = str(err.value)
    assert "kernel 'counter'" in text and "possible infinite loop" in text
    assert "the loop at count.py:21:8" in text and "PLATE_MAX_STEPS=50000" in text


@pytest.mark.parametrize("programs", [2, 300])
def test_an_atomic_at_one_address_changed_memory_when_an_old_value_differs_from_it_now(mem, programs):
    """The runaway check of a CAS whose elements share one address (a lock's spinners): memory changed when any
    masked element's old value differs from what memory holds now, even a swap undone by a later program
    (0 -> 1 -> 0), and not when every swap failed, wrote back what was there, or was masked off."""
    from triton_plate_backend.isa.program import Inst, Program, Tile
    from triton_plate_backend.sim.executor import new_context
    from triton_plate_backend.sim.semantics import SEMANTICS

    tiles = [Tile(0, "i64", (1,)), Tile(64, "i1", (1,)), Tile(128, "i32", (1,)), Tile(192, "i32", (1,))]
    tiles.append(Tile(256, "i32", (1,)))
    cas = Inst("atom.cas", ("acq_rel",), (2, 0, 3, 4, 1))  # old t2, addresses t0, cmp t3, value t4, mask t1
    lock = buffer(mem, [0])
    ctx = new_context(Program("cas", [cas], tiles), grid=programs, memory=mem)
    ctx.write(0, np.full((programs, 1), lock))

    def run(cmp, value, mask=None, now=0):
        mem.write_bytes(lock, np.int32(now).tobytes())
        ctx.write(1, np.ones((programs, 1), bool) if mask is None else np.asarray(mask)[:, None])
        ctx.write(3, np.asarray(cmp, np.int32)[:, None]), ctx.write(4, np.asarray(value, np.int32)[:, None])
        SEMANTICS["atom.cas"](ctx, cas)
        changed = runaway._atomic_changed(ctx, cas)
        check = runaway._atomic_check(ctx.tiles, cas)  # from the CAS's own tiles, without reading memory
        assert check is not runaway._atomic_changed and check(ctx, cas) == changed
        return changed

    pids = np.arange(programs)
    assert run(np.zeros(programs), np.ones(programs))  # program 0 takes the lock
    assert not run(np.zeros(programs), np.ones(programs), now=1)  # all spin: nothing changed
    assert not run(np.full(programs, 3), np.full(programs, 3), now=3)  # every swap writes back 3
    assert run(pids % 2, (pids + 1) % 2)  # 0 -> 1 -> 0 -> ...: memory ends as it began, changed in between
    assert not run(np.zeros(programs), np.ones(programs), mask=pids > programs)  # every element masked off


@pytest.mark.parametrize("programs", [1, 300])
def test_an_exchange_changed_memory_when_a_value_it_wrote_differs_from_the_one_it_found(mem, programs):
    """The runaway check of atom.rmw.xchg from its own tiles agrees with reading memory back; a result tile that
    overlaps a tile the atomic reads (here its value tile) is checked by reading memory."""
    from triton_plate_backend.isa.program import Inst, Program, Tile
    from triton_plate_backend.sim.executor import new_context
    from triton_plate_backend.sim.semantics import SEMANTICS

    tiles = [Tile(0, "i64", (1,)), Tile(64, "i1", (1,)), Tile(128, "i32", (1,)), Tile(192, "i32", (1,))]
    xchg = Inst("atom.rmw", ("xchg", "acq_rel"), (2, 0, 3, 1))  # old t2, addresses t0, value t3, mask t1
    in_place = Inst("atom.rmw", ("xchg", "acq_rel"), (3, 0, 3, 1))  # the old values over the values
    assert runaway._atomic_check(tiles, in_place) is runaway._atomic_changed
    lock = buffer(mem, [0])
    ctx = new_context(Program("xchg", [xchg], tiles), grid=programs, memory=mem)
    ctx.write(0, np.full((programs, 1), lock))
    check = runaway._atomic_check(ctx.tiles, xchg)
    assert check is not runaway._atomic_changed

    def run(value, mask=None, now=0):
        mem.write_bytes(lock, np.int32(now).tobytes())
        ctx.write(1, np.ones((programs, 1), bool) if mask is None else np.asarray(mask)[:, None])
        ctx.write(3, np.asarray(value, np.int32)[:, None])
        SEMANTICS["atom.rmw"](ctx, xchg)
        changed = runaway._atomic_changed(ctx, xchg)
        assert check(ctx, xchg) == changed
        return changed

    pids = np.arange(programs)
    assert run(np.ones(programs))  # 0 -> 1
    assert not run(np.full(programs, 5), now=5)  # writes back what was there
    assert not run(np.ones(programs), mask=pids > programs)  # every element masked off
    if programs > 1:
        assert run(pids % 2 * 7)  # 0 -> 0 -> 7 -> 0 -> ... -> 7
