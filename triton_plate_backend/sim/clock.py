"""A device's modeled clock, with each launch's level-1 timing computed when first read.

A launch runs its program eagerly (results land in memory at once), but its timing
(``sim.timing.simulate_timing``) only matters to whoever reads it: the launch's Profile
(``last_profile``) or the clock (events, ``do_bench``, the autotuner). Most launches (tests,
Triton's own test suite) have no such reader, and timing can cost more than running. So a launch
hands its Trace to the Clock, which times it on demand:

- ``profile(launch)`` times one launch; ``now_ns()`` times every waiting launch and adds their
  times in launch order: the same float sum as adding each launch's time as it ran;
- waiting traces hold memory: past ``PENDING_BYTES`` the largest are packed (``Trace.pack``),
  then, if that is not enough, timed (their traces dropped): first those a recent profile serves,
  then the largest; a run that never reads the clock stays bounded. The bound is kept before a
  launch runs (``make_room``) and before one is added, not right after a launch is added: a launch
  over the bound by itself (test_atomic_cas's 2000-program spin lock: a 134 MiB trace, 0.2 s to
  pack) that the next clock epoch drops, or a read times, is never packed (the next launch would
  pack it before running, so no two such traces are held);
- a launch identical to the one before it, still waiting (same program object, policy and trace
  digest: a kernel launched again and again with the same arguments) keeps no trace of its own: the
  waiting launch counts it (``repeats``), so a loop of launches that never reads the clock holds
  one trace, not one per launch;
- a trace identical to one timed recently (same program object and content, policy, grid and
  entries: ``Trace.digest``) gets a copy of that Profile: the timing model is deterministic, so a
  kernel launched many times over the same layout is timed once.
"""

from __future__ import annotations

import copy
import time
from collections import OrderedDict, deque

from ..machine import Machine, MiB
from .host import cycle_collection_paused
from .profile import Profile
from .timing import simulate_timing
from .trace import PackedTrace, Trace

PENDING_BYTES = 64 * MiB  # traces kept for timing on demand
SHRINK_TO = 0.75  # past PENDING_BYTES, make room down to this share of it
SMALL_REPEAT_ENTRIES = 256  # a repeat of a trace this short is found entry by entry (Clock._like)
PENDING_LAUNCHES = 100_000  # launches waiting (timed or not) before the oldest are added to the clock
PROFILES_KEPT = 32  # recent Profiles kept by trace digest for repeated launches


class Launch:
    """One launch's timing: its Profile once computed, until then the Trace and policy it comes from."""

    __slots__ = ("trace", "policy", "nbytes", "profile", "digest", "repeats", "shared")

    def __init__(self, trace: Trace | PackedTrace | None, policy: str | None, profile: Profile | None = None):
        self.trace: Trace | PackedTrace | None = trace
        self.policy, self.profile = policy, profile
        self.nbytes = trace.nbytes() if trace is not None else 0
        self.digest: bytes | None = trace.digest() if isinstance(trace, PackedTrace) else None
        self.repeats = 1  # launches this one stands for: itself and identical ones right after it
        self.shared = False  # its profile is a recent one lent to it (last_profile copies it first)

    def unpacked(self) -> Trace:
        return self.trace.trace() if isinstance(self.trace, PackedTrace) else self.trace

    def key(self) -> tuple:
        """What recent profiles are kept by: (program object, policy, trace digest)."""
        if self.digest is None:
            self.digest = self.trace.digest()
        return (id(self.trace.program), self.policy, self.digest)

    def pack(self) -> int:
        """Pack the trace (digesting it on the way: a digest is the packed form's); the bytes saved."""
        packed = self.trace.pack()
        self.digest = packed.digest()
        saved, self.trace, self.nbytes = self.nbytes - packed.nbytes(), packed, packed.nbytes()
        return saved


class _Elapsed:
    """Clock time that is no launch's (an operand's copy), waiting in launch order: a Profile's ``time_ns``."""

    __slots__ = ("time_ns",)

    def __init__(self, ns: float):
        self.time_ns = float(ns)


class Clock:
    """Modeled nanoseconds of every launch so far, launches timed on demand (module docstring)."""

    def __init__(self, machine: Machine):
        self.machine = machine
        self._ns = 0.0  # the times of the launches no longer waiting
        self._waiting: deque[Launch] = deque()  # launches whose time is not in _ns yet, in launch order
        self._waiting_bytes = 0
        self._last: Launch | None = None
        self._recent: OrderedDict = OrderedDict()  # (id(program), policy, digest) -> (program, content, Profile)
        # (the last waiting launch, a small Trace that packs to its digest): its repeats are found by
        # Trace.packs_like, entry by entry, instead of packing and digesting each (a warm eager op's launches)
        self._like: tuple[Launch, Trace] | None = None

    # ---- the clock -----------------------------------------------------------------------------
    def now_ns(self) -> float:
        while self._waiting:
            self._retire()
        return self._ns

    def set_ns(self, ns: float) -> None:
        self.now_ns()
        self._ns = float(ns)

    def reset(self, ns: float = 0.0) -> None:
        """Start a new epoch at ``ns``: the launches waiting to be timed are dropped untimed (``set_ns``
        times them first), and ``last_profile`` is None. For a reader who does not care what came before:
        a benchmark phase's start, a test's (the suite drops what no test read, tests/conftest.py)."""
        self._waiting.clear()
        self._waiting_bytes = 0
        self._last = self._like = None
        self._ns = float(ns)

    def advance(self, ns: float) -> None:
        """Add ``ns`` after the launches so far (an operand's copy before the next launch) without timing
        the waiting ones: it is added in its place when they are, the same float sum as
        ``set_ns(now_ns() + ns)``. It is no launch: ``last_profile`` stays the last launch's."""
        if self._waiting:
            self._waiting.append(Launch(None, None, _Elapsed(ns)))
        else:
            self._ns += float(ns)

    # ---- launches ------------------------------------------------------------------------------
    def add_timed(self, profile: Profile) -> None:
        """A launch timed as it ran."""
        self._add(Launch(None, None, profile))

    def add_untimed(self, trace: Trace | PackedTrace, policy: str) -> None:
        """A launch to time on demand (``policy``: a name in timing.POLICIES or a timing.CoreMapping);
        its trace may come packed (a kept one: sim/persistent_runs.py)."""
        self.make_room()  # for the launches before it: this one is left whole until the next (module docstring)
        prev = self._waiting[-1] if self._waiting else None
        small = trace if type(trace) is Trace and len(trace.entries) <= SMALL_REPEAT_ENTRIES else None
        if prev is not None and prev.profile is None and _may_repeat(prev, trace, policy):
            like = self._like
            if small is not None and like is not None and like[0] is prev and like[1].packs_like(small):
                if prev.digest is None:  # packed as at the digests' comparison: the same bytes waiting
                    self._waiting_bytes -= prev.pack()
                prev.repeats += 1  # the same launch again, found without packing this trace (a warm eager op's)
                self._last = prev
                return
            if prev.digest is None:
                self._waiting_bytes -= prev.pack()
            packed = trace if isinstance(trace, PackedTrace) else trace.pack()
            if packed.digest() == prev.digest:
                prev.repeats += 1  # the same launch again: counted, its trace dropped
                self._last = prev
                self._like = None if small is None else (prev, small)
                return
            trace = packed  # kept packed: packing was the price of the comparison
        launch = Launch(trace, policy)
        self._like = None if small is None else (launch, small)
        self._waiting_bytes += launch.nbytes
        self._add(launch)
        while len(self._waiting) > PENDING_LAUNCHES:
            self._retire()

    def last_profile(self) -> Profile | None:
        launch = self._last
        if launch is None:
            return None
        profile = self.profile(launch)
        if launch.shared:  # a reader may change it: a copy of its own, as when timed as it ran
            launch.profile, launch.shared = copy.deepcopy(profile), False
        return launch.profile

    def set_last_profile(self, profile: Profile | None) -> None:
        self._last = None if profile is None else Launch(None, None, profile)

    def profile(self, launch: Launch, own: bool | None = None) -> Profile:
        """The launch's Profile; ``own`` (default: for the last launch) a copy of its own."""
        if launch.profile is None:
            with cycle_collection_paused():
                launch.profile, launch.shared = self._time(launch, own=launch is self._last if own is None else own)
            self._waiting_bytes -= launch.nbytes
            launch.trace, launch.nbytes = None, 0
        return launch.profile

    def make_room(self) -> None:
        """Bring the waiting traces under ``PENDING_BYTES`` (``_shrink``) if they passed it: before a launch
        runs (sim/device.py) and before one is added."""
        if self._waiting_bytes > PENDING_BYTES:
            self._shrink()

    def _shrink(self) -> None:
        """Down to SHRINK_TO of PENDING_BYTES (a margin, so that this runs now and then, not at every
        launch): pack the largest waiting traces; then time the launches a recent profile serves;
        then time the largest one, and again (the ones like it are served now)."""
        target = int(PENDING_BYTES * SHRINK_TO)
        untimed = sorted((w for w in self._waiting if w.profile is None), key=lambda w: -w.nbytes)
        for launch in untimed:
            if isinstance(launch.trace, Trace):
                self._waiting_bytes -= launch.pack()
                if self._waiting_bytes <= target:
                    return
        while self._waiting_bytes > target and untimed:
            for launch in untimed:
                if launch.key() in self._recent:
                    self.profile(launch)
            untimed = [w for w in untimed if w.profile is None]
            if self._waiting_bytes > target and untimed:
                self.profile(untimed.pop(0))  # the largest

    def _add(self, launch: Launch) -> None:
        self._waiting.append(launch)
        self._last = launch
        while self._waiting and self._waiting[0].profile is not None:  # nothing left to compute: fold it in
            self._fold(self._waiting.popleft())

    def _retire(self) -> None:
        """Time the oldest waiting launch and add its time to the clock (a lent profile will do: only
        `last_profile` hands a Profile out)."""
        launch = self._waiting.popleft()
        self.profile(launch, own=False)
        self._fold(launch)

    def _fold(self, launch: Launch) -> None:
        t = float(launch.profile.time_ns)
        for _ in range(launch.repeats):  # one add per launch: the same float sum as launch by launch
            self._ns += t

    # ---- timing, with repeats served from recent profiles ----------------------------------------
    def _time(self, launch: Launch, own: bool = True) -> tuple[Profile, bool]:
        """(the launch's Profile, whether it is a recent one lent to it). ``own``: a copy of its own
        (the last launch's, which a reader may get and change); other launches only lend their time
        to the clock, so they share a recent one."""
        t0 = time.perf_counter()
        program = launch.trace.program
        content = (self.machine.cache_key(), tuple(program.instrs), tuple(program.tiles), tuple(program.consts))
        key = launch.key()
        hit = self._recent.get(key)
        if hit is not None and hit[0] is program and hit[1] == content:
            self._recent.move_to_end(key)
            if not own:
                return hit[2], True
            profile = copy.deepcopy(hit[2])  # each launch its own Profile, as when timed as it ran
            profile.wall_s = time.perf_counter() - t0
            return profile, False
        profile = simulate_timing(launch.unpacked(), self.machine, policy=launch.policy)
        self._recent[key] = (program, content, copy.deepcopy(profile))
        if len(self._recent) > PROFILES_KEPT:
            self._recent.popitem(last=False)
        return profile, False


def _rows(trace: Trace | PackedTrace) -> int:
    return trace.rows if isinstance(trace, PackedTrace) else len(trace.entries)


def _may_repeat(prev: Launch, trace: Trace | PackedTrace, policy) -> bool:
    """Cheap checks before comparing digests: the same program object, policy, grid and length."""
    held = prev.trace
    if held is None or held.program is not trace.program or held.grid != trace.grid or prev.policy != policy:
        return False
    return _rows(held) == _rows(trace)
