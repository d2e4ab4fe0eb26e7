"""A launch whose trace reads no data: timed from a kept trace, run as written.

A persistent kernel (passes/persistent.py) runs a few launched programs, one per core, each looping
over a run of the grid's programs; its loop is software-pipelined, so the executor steps it trip by
trip for each group of launched programs (2048 trips of 32 programs for a 65536-program launch:
~40,000 steps, against ~400 for the same grid run one program per grid element in batches of 4096).
The pipelined loop issues a trip's loads ahead of earlier trips' stores and carries tiles from one
trip to the next, so its trips cannot be stepped as one batch of instances in the loop's own code.

Two facts let the launch run otherwise without changing what is computed or timed:

- the trips are the grid's programs, independent by construction (that is what the pass and its
  pipelining assume), so running the kernel as written over the grid (one program per launched
  program, ``launcher._one_each``) writes the same results;
- when the program's control flow, addresses and masks read no memory data
  (``data_flow.trace_reads_no_data``), its trace (what the timing model reads: control flow,
  elements, runs and bytes by home domain, no address) is the address-only run's (sim/estimate.py:
  no vector work, no data moved; the same entries as the functional run's), and depends only on the
  program, the launched grid, the integer and float arguments, and for each pointer argument its
  offset in its allocation and that allocation's size and placement (a home domain follows the
  offset in the allocation, sim/memory.py), as long as every access stays in the allocation of the
  pointer it comes from (a kernel that reads another tensor through an out-of-bounds pointer is out
  of contract).

So such a launch takes its trace from the address-only run of the persistent launch (``first``),
kept by that key for its repeats (``KEPT`` recent ones), and runs as written, untraced: the Profile
is the one the persistent run records.

A program whose every store is masked off writes nothing (such a kernel has no atomics, prints or
asserts: `trace_reads_no_data`), so the run as written leaves it out: the programs that store
anything come from the address-only run of the launch as written (its masks are the functional
run's, they read no data), kept with the trace (``live``). A 512 x 256 grid of 64 x 64 tiles over a
512 x 256 tensor runs 32 programs of its 131,072. Where no such run is at hand (the launcher priced
none) and every store the persistent run's trace ran moved something, each trip that reached a store
stored, so the launch runs all its programs without that run (``_every_store_moved``).

A launch of a kernel that is not persistent is its own launch as written (the launcher passes it as
such), so the same holds for it: its trace is the address-only run's (which the operand planner's
estimate of the launch has already made, sim/estimate.py ``shared_estimates``), and its run leaves
out the programs that store nothing. The same grid of 128 x 128 tiles (too large for the persistent
pipeline's SRAM) runs 8 programs, untraced, where the traced run stepped all 131,072 in full.

A launch of at most one program per core (sim/device.py ``_run``: most of a test suite's launches, one
program over a small tensor) is the exception: its first run is traced, its trace kept by the same key,
and its repeats run every program untraced. The address-only run and the run as written after it cost
more than the run traced (a 223-instruction one-program kernel: 3.2 ms against 1.2 ms of CPU), and
leaving out programs that store nothing saves little over so few. Such a launch asks whether its trace
reads data only when a repeat finds the trace kept (``PersistentRuns.key`` with ``checked`` False): the
answer is needed only to use a kept trace, and most such kernels are launched once (test_core: ~2 programs
a test, ~0.4 ms of analysis each)."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from .data_flow import trace_reads_no_data
from .memory import held_by_argument, pointer_positions
from .trace import PackedTrace, Trace

KEPT = 8  # recent launches' traces kept
KEPT_BYTES = 64 << 20  # ... and at most this many bytes of them (Trace.nbytes)


_NO_DATA = "_plate_reads_no_data"  # on the program: (its instructions, trace_reads_no_data of them)


def reads_no_data(program) -> bool:
    """``trace_reads_no_data(program)``, kept on the program: every device's launches of a kernel ask it
    (a test suite's eager kernels at most of their launches, while hundreds of fresh kernels come and go)."""
    return program.kept_answer(_NO_DATA, trace_reads_no_data)


def known_reads_no_data(program) -> bool | None:
    """``reads_no_data(program)`` when it was found for the program's instructions as they are, else None
    (not found yet: nothing is computed here)."""
    return program.kept_answer(_NO_DATA)


def _every_store_moved(trace: Trace, program) -> bool:
    """Whether a kept trace of the launch's persistent run (its programs loop over the grid's, one trip
    each: passes/persistent.py) ran stores and every one it ran moved something: then every trip that
    reached a store stored, so every program as written does but any a branch on its ids leaves without
    a store, which writes nothing run or not. The launch then runs them all without the address-only run
    of the launch as written that would tell them apart (an input copy's 18,156 programs: 0.8 s CPU)."""
    outbound = [i.row.unit == "dma_out" for i in program.instrs]
    stores = [e for e in trace.entries if outbound[e.pc]]
    return bool(stores) and all(e.elements is not None and e.elements.all() for e in stores)


class PersistentRuns:
    """The traces of recent persistent launches whose trace reads no memory data (module docstring)."""

    def __init__(self):
        # key -> [program, trace, nbytes, live programs (None: not found yet), packed trace (None: not yet),
        #         whether reads_no_data(program) was asked (else ``get`` asks it before the trace is used)]
        self._traces: OrderedDict = OrderedDict()

    def key(self, program, grid, args, memory, checked: bool = True) -> tuple | None:
        """What a kept trace is found by, or None when the program's trace may read data. ``checked`` False
        (a launch of at most one program per core, sim/device.py): None only when the program is known to
        read data; a program not asked yet is asked when a trace kept by the key is found (``get``), so a
        kernel launched once (most of a test suite's) is never asked."""
        known = reads_no_data(program) if checked else known_reads_no_data(program)
        if known is False:
            return None
        recs = held_by_argument(program, args, memory)
        layout = list(args[: len(recs)])
        for i in pointer_positions(program):
            rec = recs[i] if i < len(recs) else None
            if rec is not None:  # where in its allocation, and how that allocation is placed: what its homes follow
                v = args[i]
                where = (int(v) - rec.base, rec.nbytes, str(rec.placement), rec.owners, rec.striped, rec.granule)
                layout[i] = (*where, rec.replica_of is not None)
        key = (id(program), tuple(map(int, grid)), tuple(layout), id(memory))
        try:
            hash(key)
        except TypeError:
            return None
        return key

    def get(self, key, program) -> Trace | None:
        hit = self._traces.get(key)
        if hit is None or hit[0] is not program:
            return None
        if not hit[5]:  # kept by a launch that did not ask (``key``): asked before the trace is used
            if not reads_no_data(program):
                del self._traces[key]
                return None
            hit[5] = True
        self._traces.move_to_end(key)
        return hit[1]

    def packed(self, key, program) -> PackedTrace | None:
        """The kept trace packed, once (what the clock compares and keeps a repeat by)."""
        hit = self._traces.get(key)
        if hit is None or hit[0] is not program or not hit[5]:
            return None
        if hit[4] is None:
            hit[4] = hit[1].pack()
        return hit[4]

    def keep(self, key, program, trace: Trace) -> None:
        known = known_reads_no_data(program)
        if known is False:
            return
        nbytes = trace.nbytes()
        if nbytes > KEPT_BYTES:
            return
        self._traces[key] = [program, trace, nbytes, None, None, bool(known)]
        self._traces.move_to_end(key)
        while len(self._traces) > KEPT or sum(h[2] for h in self._traces.values()) > KEPT_BYTES:
            self._traces.popitem(last=False)

    def live(self, key, program, grid, args, memory, machine) -> np.ndarray | None:
        """The programs of the launch as written (``grid``, ``args``) that store anything, in increasing
        id, found once per kept trace (module docstring); None (run them all) when the address-only run
        cannot tell, or when no run is at hand and the kept trace of a persistent launch says they all do
        (``_every_store_moved``)."""
        hit = self._traces.get(key)
        if hit is None or hit[0] is not program or not hit[5]:
            return None
        if hit[3] is None:
            from ..errors import PlateError
            from .estimate import kept_address_trace

            try:  # which programs store: the same over any placement
                written = kept_address_trace(program, grid, args, memory, machine, placed=False, run=False)
                if written is None and tuple(hit[1].grid) != tuple(grid) and _every_store_moved(hit[1], program):
                    hit[3] = False
                    return None
                if written is None:
                    written = kept_address_trace(program, grid, args, memory, machine, placed=False)
            except PlateError:
                hit[3] = False
                return None
            outbound = [i.row.unit == "dma_out" for i in program.instrs]
            stored = [e.programs[e.elements > 0] for e in written.entries if outbound[e.pc] and e.elements is not None]
            hit[3] = np.unique(np.concatenate(stored)) if stored else np.zeros(0, np.int64)
        return None if hit[3] is False else hit[3]

    def first(self, key, program, grid, args, memory, machine, max_steps) -> Trace | None:
        """The first launch of a key: its trace from the address-only run of the launch (sim/estimate.py:
        the functional run's trace, without its vector work or data moved), kept; None when that run
        cannot tell (the launch then runs for real)."""
        from ..errors import PlateError
        from .estimate import kept_address_trace

        try:  # the launch's preparation (launcher.py) may have priced this layout already
            trace = kept_address_trace(program, grid, args, memory, machine, max_steps=max_steps)
        except PlateError:
            return None
        self.keep(key, program, trace)
        return trace
