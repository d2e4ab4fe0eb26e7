"""sram_plan: first-fit placement of buffers over their live intervals, 64-byte aligned, the
better of two orders; a plan larger than the core's SRAM is a SramOverflow that names the
largest tensors live at the peak."""

from __future__ import annotations

import random

import pytest

from triton_plate_backend.errors import SramOverflow
from triton_plate_backend.isa.program import Loc
from triton_plate_backend.machine import get_machine
from triton_plate_backend.passes import emitter, regalloc, sram_plan
from triton_plate_backend.passes.emitter import Buffer, Imm, PInst, VReg


def _overlap(a, b, intervals):
    (l1, h1), (l2, h2) = intervals[a], intervals[b]
    return not (h1 < l2 or h2 < l1)


def test_first_fit_is_aligned_and_reuses_space_of_dead_buffers():
    a, b, c = Buffer(100, "a"), Buffer(64, "b"), Buffer(1, "c")
    intervals = {a: (0, 10), b: (0, 10), c: (12, 20), VReg(): (0, 30)}  # registers are not SRAM's business
    top = sram_plan.plan(intervals, 1 << 20)
    assert (a.addr, b.addr, c.addr) == (0, 128, 0)  # a takes 128 bytes (aligned); c reuses a's space
    assert top == 192


def test_the_smaller_of_the_two_orders_wins():
    # by start: x at 0, y at 64, then z (128 B) does not fit below y -> 256 bytes;
    # by size: z at 0, x at 0 (they never overlap), y above both -> 192 bytes
    x, y, z = Buffer(64, "x"), Buffer(64, "y"), Buffer(128, "z")
    intervals = {x: (0, 1), y: (0, 3), z: (2, 3)}
    assert sram_plan.plan(intervals, 1 << 20) == 192
    assert (z.addr, x.addr, y.addr) == (0, 0, 128)


def _two_orders(intervals: dict) -> tuple[dict, int]:
    """The plan as both orders always made it: by start, replaced by the order by size where smaller."""
    items = [(r, iv) for r, iv in intervals.items() if isinstance(r, Buffer)]
    best = None
    for by_start, key in (
        (True, lambda x: (x[1][0], -x[0].nbytes, x[0].id)),
        (False, lambda x: (-sram_plan._align(x[0].nbytes), x[1][0], x[0].id)),
    ):
        addrs, top, _ = sram_plan._first_fit(sorted(items, key=key), by_start)
        if best is None or top < best[1]:
            best = (addrs, top)
    return {b.id: a for b, a in best[0].items()}, best[1]


@pytest.mark.parametrize("seed", range(40))
def test_the_order_by_size_is_left_out_only_where_it_cannot_win(seed):
    """The order by start at the most bytes live at once is kept without trying the order by size: the same
    addresses as trying both, on random intervals (empty ones, lo > hi, included)."""
    rng = random.Random(seed)
    intervals = {}
    for i in range(rng.randrange(1, 14)):
        lo = rng.randrange(30)
        intervals[Buffer(rng.choice([1, 64, 65, 200, 512, 4096]), f"b{i}")] = (lo, lo + rng.randrange(-2, 20))
    want = _two_orders(intervals)
    top = sram_plan.plan(intervals, 1 << 30)
    assert ({b.id: b.addr for b in intervals}, top) == want


def test_buffers_live_at_once_never_share_bytes():
    bufs = [Buffer(n, f"b{i}") for i, n in enumerate([1, 63, 64, 65, 200, 4096, 3, 130])]
    intervals = {b: (i % 3 * 4, i % 3 * 4 + 2 + i) for i, b in enumerate(bufs)}
    top = sram_plan.plan(intervals, 1 << 20)
    for b in bufs:
        assert b.addr % emitter.ALIGN == 0 and b.addr + b.nbytes <= top
    for i, p in enumerate(bufs):
        for q in bufs[i + 1 :]:
            if _overlap(p, q, intervals):
                assert p.addr + p.nbytes <= q.addr or q.addr + q.nbytes <= p.addr, (p, q)


def test_overflow_names_the_largest_tensors_live_at_the_peak():
    big = Buffer(6000, "f32[1500]", Loc("kernels.py", 12, 4))
    mid = Buffer(3000, "f16[1500]", Loc("kernels.py", 13, 4))
    small = Buffer(64, "i32[16]")
    early = Buffer(7000, "f32[1750] (dead before the peak)")
    intervals = {early: (0, 1), big: (2, 9), mid: (3, 9), small: (4, 9)}
    with pytest.raises(SramOverflow) as e:
        sram_plan.plan(intervals, 8192, "my_kernel")
    msg = str(e.value)
    assert e.value.required == 9088 and e.value.limit == 8192  # 6016 + 3008 + 64 (aligned), more than early
    assert "kernel my_kernel needs 9088 bytes of SRAM but a core has 8192 (9088 bytes are live at once" in msg
    lines = msg.splitlines()
    listed = lines[1 : lines.index(next(ln for ln in lines if ln.startswith("Shrink")))]
    assert [ln.split()[2] for ln in listed] == ["f32[1500]", "f16[1500]", "i32[16]"]  # largest first
    assert "kernels.py:12" in listed[0] and "<unknown>" in listed[2]
    assert "dead before the peak" not in msg
    assert big.addr is None  # nothing is placed when the plan does not fit


def test_a_buffer_a_dma_reads_stays_live_until_its_wait():
    em = emitter.Emitter(get_machine("plate-mini"))
    data = em.buffer("f32", (64,), "data")
    em.emit("v.fill", data, Imm(1.0))
    base = VReg()
    em.emit("s.li", base, Imm(0))
    em.emit("dma.store", emitter.Token(), data, base, (), (), ())
    other = em.buffer("f32", (64,), "other")  # would reuse data's bytes if the store were synchronous
    em.emit("v.fill", other, Imm(2.0))
    em.code.append(PInst(".use", operands=(other.buffer,)))
    em.emit("halt")  # waits for the store
    intervals = regalloc.live_intervals(em.code)
    wait = next(pc for pc, i in enumerate(em.code) if i.mnemonic == "dma.wait")
    assert intervals[data.buffer][1] == 2 * wait
    sram_plan.plan(intervals, 1 << 20)
    assert data.buffer.addr != other.buffer.addr


def _first_fit_plainly(items) -> tuple[dict, int]:
    """First fit as defined: each buffer at the lowest aligned address clear of every buffer placed before it
    whose interval meets its own."""
    placed, addrs, top = [], {}, 0
    for buf, (lo, hi) in items:
        size, addr = sram_plan._align(buf.nbytes), 0
        for a, e in sorted((a, e) for a, e, l2, h2 in placed if not (h2 < lo or hi < l2)):
            if addr + size <= a:
                break
            addr = max(addr, e)
        addrs[buf], top = addr, max(top, addr + size)
        placed.append((addr, addr + size, lo, hi))
    return addrs, top


@pytest.mark.parametrize("seed", range(40))
def test_first_fit_places_as_defined_in_both_orders(seed):
    """(the placed buffers are kept in address order, and with the order by start the ended ones dropped: the
    same addresses as the definition; the bytes live at once are the peak's)"""
    rng = random.Random(1000 + seed)
    items = []
    for i in range(rng.randrange(1, 30)):
        lo = rng.randrange(40)
        items.append((Buffer(rng.choice([1, 64, 65, 200, 512, 4096]), f"b{i}"), (lo, lo + rng.randrange(-2, 25))))
    by_start = sorted(items, key=lambda x: (x[1][0], -x[0].nbytes, x[0].id))
    by_size = sorted(items, key=lambda x: (-sram_plan._align(x[0].nbytes), x[1][0], x[0].id))
    addrs, top, most_live = sram_plan._first_fit(by_start, True)
    assert (addrs, top) == _first_fit_plainly(by_start)
    assert most_live == sram_plan.peak(items)[0]
    addrs, top, _ = sram_plan._first_fit(by_size)
    assert (addrs, top) == _first_fit_plainly(by_size)
