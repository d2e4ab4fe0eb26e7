"""SRAM planning: give every buffer the code generator made (one per tensor value that is not a
free view of another, plus temporaries) a scratchpad address.

Liveness comes from `regalloc.live_intervals` over the emitted code, so a buffer live into a
loop stays live for the whole loop, and a buffer a DMA reads or writes stays live until its
`dma.wait`. Placement is first-fit over the live intervals, 64-byte aligned, trying two orders
(by start, by size) and keeping the smaller footprint (by size is not tried where by start needs no
more than the bytes live at once). A plan that exceeds the core's SRAM is
a compile-time error (`SramOverflow`), never a silent spill."""

from __future__ import annotations

import heapq
from bisect import insort

from ..errors import SramOverflow
from .emitter import ALIGN, Buffer


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _first_fit(items, by_start: bool = False) -> tuple[dict, int, int | None]:
    """by_start: the items come in the order of their starts, so a placed buffer that ended before an
    item's start is free for every later one too, and leaves the list of those looked at; the buffers left
    are then the ones live at that start, and the third value is the most bytes live at once (no plan needs
    less: `plan`), else None."""
    # (addr, end, lo, hi) of each buffer placed (with by_start, of those not ended), kept in address order: an
    # item looks at them in that order and stops at the first gap it fits (no list of the busy ones to sort)
    spans: list[tuple[int, int, int, int]] = []
    ends: list[tuple[int, int, tuple]] = []  # a heap of (hi, k, span): with by_start, the placed buffers that end first
    addrs, top, live, peak = {}, 0, 0, 0
    for k, (buf, (lo, hi)) in enumerate(items):
        size = _align(buf.nbytes)
        while by_start and ends and ends[0][0] < lo:
            gone = heapq.heappop(ends)[2]
            spans.remove(gone)
            if gone[2] <= gone[3]:  # (an empty interval, never live, was never counted)
                live -= gone[1] - gone[0]
        addr = 0
        for a, e, l2, h2 in spans:
            if h2 < lo or hi < l2:  # not live with this one
                continue
            if addr + size <= a:
                break
            if e > addr:
                addr = e
        addrs[buf] = addr
        span = (addr, addr + size, lo, hi)
        insort(spans, span)
        if by_start:
            heapq.heappush(ends, (hi, k, span))
            live += size if lo <= hi else 0
            if live > peak:
                peak = live
        if addr + size > top:
            top = addr + size
    return addrs, top, peak if by_start else None


def plan(intervals: dict, sram_bytes: int, kernel: str = "kernel") -> int:
    """Set `addr` on every Buffer in `intervals`; return the SRAM high-water mark in bytes."""
    items = [(r, iv) for r, iv in intervals.items() if isinstance(r, Buffer)]
    addrs, top, most_live = _first_fit(sorted(items, key=lambda x: (x[1][0], -x[0].nbytes, x[0].id)), True)
    # the order by size is kept only when smaller; no plan goes below the bytes live at once, so when the
    # order by start reached that (85% of test_core's kernels), the order by size is not tried
    if top != most_live:
        by_size, smaller, _ = _first_fit(sorted(items, key=lambda x: (-_align(x[0].nbytes), x[1][0], x[0].id)))
        if smaller < top:
            addrs, top = by_size, smaller
    if top > sram_bytes:
        raise SramOverflow(overflow_message(kernel, items, top, sram_bytes), required=top, limit=sram_bytes)
    for buf, addr in addrs.items():
        buf.addr = addr
    return top


def peak(items) -> tuple[int, list]:
    """The point where the most bytes are live at once, and the buffers live there."""
    events = sorted({lo for _, (lo, _) in items})
    best, at = 0, []
    for p in events:
        live = [b for b, (lo, hi) in items if lo <= p <= hi]
        total = sum(_align(b.nbytes) for b in live)
        if total > best:
            best, at = total, live
    return best, at


def overflow_message(kernel: str, items, needed: int, available: int) -> str:
    total, live = peak(items)
    live = sorted(live, key=lambda b: -b.nbytes)[:6]
    lines = [
        f"kernel {kernel} needs {needed} bytes of SRAM but a core has {available} "
        f"({total} bytes are live at once at the peak). Largest live tensors there:"
    ]
    for b in live:
        lines.append(f"  {b.nbytes:>9} B  {b.what}  at {b.loc or '<unknown>'}")
    lines.append("Shrink the block sizes (BLOCK_*, BLOCK_M/N/K) or num_stages so the live tiles fit.")
    return "\n".join(lines)
