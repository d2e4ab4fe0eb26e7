"""sim/clock.py: launches timed on demand read exactly as launches timed as they ran (the clock's
float sum, every Profile field), whether their traces wait whole, packed, or are served again."""

import pickle

import numpy as np
import pytest
from test_timing import MINI, straight_trace, stream_program

from triton_plate_backend.sim import clock as sim_clock
from triton_plate_backend.sim.timing import simulate_timing


def _fields(profile) -> bytes:
    d = dict(profile.__dict__)
    d.pop("wall_s")  # host seconds, not a modeled figure
    return pickle.dumps(d)


def _launches(n=9):
    """Traces of a few programs and grids; some repeat (same program object, same entries)."""
    progs = [stream_program(chunks=c, elems=e) for c, e in ((1, 1024), (2, 4096), (3, 256))]
    rng = np.random.default_rng(5)
    out = []
    for i in range(n):
        prog = progs[i % 3]
        grid = 1 + (i * 7) % 13
        scale = 1.0 if i % 2 else 2.0  # even launches repeat an earlier trace of their program
        bytes_ = np.zeros((grid, MINI.total_domains))
        bytes_[np.arange(grid), np.arange(grid) % MINI.total_domains] = 4096 * scale
        bytes_ += rng.integers(0, 2) * 64
        out.append(straight_trace(prog, grid, bytes_))
    return out + out[:3]


def _eager(traces):
    profiles = [simulate_timing(t, MINI) for t in traces]
    ns = 0.0
    for p in profiles:
        ns += float(p.time_ns)
    return ns, profiles


@pytest.mark.parametrize("budget", [sim_clock.PENDING_BYTES, 1, 30_000])  # whole, all timed, packed
def test_the_clock_and_profiles_read_as_if_timed_at_launch(monkeypatch, budget):
    monkeypatch.setattr(sim_clock, "PENDING_BYTES", budget)
    traces = _launches()
    want_ns, want = _eager(traces)
    c = sim_clock.Clock(MINI)
    for i, t in enumerate(traces):
        c.add_untimed(t, "round_robin")
        if i == 4:
            assert _fields(c.last_profile()) == _fields(want[4])
    assert _fields(c.last_profile()) == _fields(want[-1])
    assert c.now_ns() == want_ns  # the same float sum, in launch order
    c.set_ns(0.0)
    assert c.now_ns() == 0.0


def test_a_repeated_launch_gets_its_own_equal_profile():
    trace = _launches(1)[0]
    c = sim_clock.Clock(MINI)
    c.add_untimed(trace, "round_robin")
    first = c.last_profile()
    c.add_untimed(straight_trace(trace.program, trace.grid[0], trace.entries[3].bytes_by_domain), "round_robin")
    second = c.last_profile()
    assert second is not first and _fields(second) == _fields(first)
    assert c.now_ns() == float(first.time_ns) + float(second.time_ns)


def test_timed_launches_and_untimed_ones_keep_launch_order():
    traces = _launches(4)[:4]
    want_ns, want = _eager(traces)
    c = sim_clock.Clock(MINI)
    c.add_untimed(traces[0], "round_robin")
    c.add_timed(want[1])
    c.add_untimed(traces[2], "round_robin")
    c.add_timed(want[3])
    assert c.last_profile() is want[3]
    assert c.now_ns() == want_ns


def test_time_advanced_between_launches_times_none_and_adds_in_its_place(monkeypatch):
    """An operand's copy before a launch (sim/device.py) advances the clock without timing the launches
    waiting: the same float sum as ``set_ns(now_ns() + ns)`` after each, and the last profile stays the
    last launch's."""
    traces = _launches(5)[:5]
    _, want = _eager(traces)
    copies = [0.1, 1134.444444, 0.0, 3e-7]
    want_ns = 0.0
    for i, p in enumerate(want):
        want_ns += float(p.time_ns)
        if i < len(copies):
            want_ns += copies[i]
    timed = []
    monkeypatch.setattr(sim_clock, "simulate_timing", lambda *a, **k: timed.append(1) or simulate_timing(*a, **k))
    c = sim_clock.Clock(MINI)
    c.advance(0.0)  # nothing waiting: added at once
    for i, t in enumerate(traces):
        c.add_untimed(t, "round_robin")
        if i < len(copies):
            c.advance(copies[i])
    c.advance(0.3)
    c.add_untimed(traces[-1], "round_robin")  # the last launch again after a copy: not folded into it
    want_ns = want_ns + 0.3 + float(want[-1].time_ns)
    assert timed == []
    assert _fields(c.last_profile()) == _fields(want[-1])
    assert c.now_ns() == want_ns


def test_waiting_traces_stay_under_the_budget(monkeypatch):
    """The launches before the last one stay under the budget at every add, and all of them once the next
    launch makes room (sim/device.py, before it runs)."""
    monkeypatch.setattr(sim_clock, "PENDING_BYTES", 50_000)
    c = sim_clock.Clock(MINI)
    for t in _launches(30):
        c.add_untimed(t, "round_robin")
        assert c._waiting_bytes - c._waiting[-1].nbytes <= 50_000
        c.make_room()
        assert c._waiting_bytes <= 50_000
    assert c._waiting_bytes == sum(w.nbytes for w in c._waiting)


def test_a_launch_over_the_budget_alone_is_packed_only_when_the_next_makes_room(monkeypatch):
    """A launch whose trace passes the budget by itself waits whole (packing it is wasted where the clock
    epoch ends or the clock is read before another launch: test_atomic_cas's spin lock); the next launch's
    room packs it, and the clock reads as if each had been timed as it ran."""
    traces = _launches(3)
    monkeypatch.setattr(sim_clock, "PENDING_BYTES", traces[1].nbytes() - 1)
    packs = []
    pack = sim_clock.Trace.pack
    monkeypatch.setattr(sim_clock.Trace, "pack", lambda self: packs.append(self) or pack(self))
    c = sim_clock.Clock(MINI)
    c.add_untimed(traces[1], "round_robin")
    assert packs == [] and c._waiting_bytes == traces[1].nbytes()  # whole, over the budget
    c.reset()  # a new epoch (the next test): dropped, never packed
    assert packs == [] and c._waiting_bytes == 0
    want_ns, _ = _eager(traces[1:3])
    c.add_untimed(traces[1], "round_robin")
    c.make_room()  # the next launch, before it runs
    assert packs == [traces[1]] and c._waiting_bytes < traces[1].nbytes()
    c.add_untimed(traces[2], "round_robin")
    assert c.now_ns() == want_ns


def test_a_launch_repeated_many_times_holds_one_trace():
    """A loop that launches one kernel the same way again and again without reading the clock (the
    upstream test_launch memory-leak check): one waiting launch counts them, and the clock and the
    last profile read as if each had been timed as it ran."""
    trace = _launches(1)[0]
    again = [straight_trace(trace.program, trace.grid[0], trace.entries[3].bytes_by_domain) for _ in range(200)]
    want_ns, want = _eager([trace, *again])
    c = sim_clock.Clock(MINI)
    for t in [trace, *again]:
        c.add_untimed(t, "round_robin")
    assert len(c._waiting) == 1 and c._waiting[0].repeats == 201
    assert c._waiting_bytes == c._waiting[0].nbytes < trace.nbytes()  # one trace, kept packed
    other = _launches(2)[1]  # another program: a launch of its own
    c.add_untimed(other, "round_robin")
    assert len(c._waiting) == 2
    assert _fields(c.last_profile()) == _fields(simulate_timing(other, MINI))
    assert c.now_ns() == want_ns + float(simulate_timing(other, MINI).time_ns)


@pytest.mark.parametrize("small", [0, sim_clock.SMALL_REPEAT_ENTRIES])
def test_repeats_found_entry_by_entry_are_those_the_digests_find(monkeypatch, small):
    """Small traces' repeats are found by Trace.packs_like (small > 0), without packing each: the same
    waiting launches, repeat counts, bytes and times as comparing digests (small = 0)."""
    monkeypatch.setattr(sim_clock, "SMALL_REPEAT_ENTRIES", small)
    series = []
    for t in _launches(3)[:3]:
        b = t.entries[3].bytes_by_domain
        series += [straight_trace(t.program, t.grid[0], b.copy()) for _ in range(3)]
        series.append(straight_trace(t.program, t.grid[0], b + 1.0))  # same program and length, other bytes
    want_ns, want = _eager(series)
    packs = []
    pack = sim_clock.Trace.pack
    monkeypatch.setattr(sim_clock.Trace, "pack", lambda self: packs.append(1) or pack(self))
    c = sim_clock.Clock(MINI)
    for t in series:
        c.add_untimed(t, "round_robin")
    monkeypatch.setattr(sim_clock.Trace, "pack", pack)
    # each group: the first launch packed at its first repeat, then every launch after it (digests), or
    # only the one with other bytes (entry by entry)
    assert len(packs) == (12 if small == 0 else 6)
    assert [w.repeats for w in c._waiting] == [3, 1, 3, 1, 3, 1]
    assert c._waiting_bytes == sum(w.nbytes for w in c._waiting)
    assert all(w.digest is not None for w in c._waiting)  # packed as the digests' comparison leaves them
    assert _fields(c.last_profile()) == _fields(want[-1])
    assert c.now_ns() == want_ns


def test_a_launch_retired_by_reading_the_clock_still_hands_out_its_own_profile():
    """Reading the clock times a launch with a recent profile lent to it (no copy: do_bench reads the
    clock around every launch); last_profile() then gives a copy of its own."""
    trace = _launches(1)[0]
    c = sim_clock.Clock(MINI)
    c.add_untimed(trace, "round_robin")
    first = c.last_profile()
    c.add_untimed(straight_trace(trace.program, trace.grid[0], trace.entries[3].bytes_by_domain), "round_robin")
    c.add_timed(first)  # something in between, so that the second launch is not coalesced into a later one
    c.add_untimed(straight_trace(trace.program, trace.grid[0], trace.entries[3].bytes_by_domain), "round_robin")
    assert c.now_ns() == 4 * float(first.time_ns)
    lent = c._last.profile
    assert c._last.shared and lent is next(iter(c._recent.values()))[2]
    own = c.last_profile()
    assert own is not lent and _fields(own) == _fields(first) and not c._last.shared


def test_a_reset_drops_the_waiting_launches_untimed_and_counts_from_there(monkeypatch):
    traces = _launches()
    timed = []
    monkeypatch.setattr(sim_clock, "simulate_timing", lambda *a, **k: timed.append(1) or simulate_timing(*a, **k))
    c = sim_clock.Clock(MINI)
    for t in traces[:5]:
        c.add_untimed(t, "round_robin")
    c.reset(10.0)
    assert timed == [] and c.last_profile() is None and c.now_ns() == 10.0
    c.add_untimed(traces[5], "round_robin")
    assert c.now_ns() == 10.0 + float(simulate_timing(traces[5], MINI).time_ns)
    assert len(timed) == 1  # only the launch after the reset was timed
