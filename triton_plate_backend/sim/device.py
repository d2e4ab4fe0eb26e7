"""The runtime device: one simulated PLATE machine with its memory and its modeled clock.

A launch runs the program functionally (``sim.executor.execute``: results land in device memory),
then through the timing model (``sim.timing.simulate_timing``: a Profile). The device clock is the
modeled clock: it advances by each launch's modeled time, and it is what Triton's ``do_bench`` and
``@triton.autotune`` read through the driver's events. Launches are synchronous: when ``launch``
returns, the results are in memory and the clock has advanced. A launch with ``defer_timing``
(Triton's launcher) leaves its timing to ``sim.clock``: computed when the clock or its Profile is
first read, with the same result.

A lock serialises launches, so kernels launched from several Python threads run one after another
and each sees a consistent memory and clock.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from collections import deque
from dataclasses import dataclass

import numpy as np

from .. import knobs
from ..errors import PlateError
from ..machine import Machine, get_machine
from .clock import Clock
from .memory import DeviceMemory
from .persistent_runs import PersistentRuns

DEVICE_COUNT = 1  # one simulated system per process; a multi-chip preset is still one device


class DeviceError(PlateError):
    """A bad device index or a device-level misuse."""


@dataclass(frozen=True)
class HostBuffer:
    """Host memory to make device memory for the duration of one launch (host-memory mode)."""

    addr: int
    nbytes: int
    owner: object = None  # kept alive while registered
    label: str = "host"


class Device:
    def __init__(self, index: int = 0, machine: Machine | str | None = None):
        self.index = index
        self.machine = get_machine(machine if machine is not None else knobs.machine())
        self.memory = DeviceMemory(self.machine)
        self.launches = 0
        self._clock = Clock(self.machine)
        self._lock = threading.RLock()
        self._estimates: list | None = None  # inside estimating(): the Estimates of the launches
        self._operands = None  # sim.operands.OperandPlanner, made at the first affinity launch
        self.operand_moves: deque = deque(maxlen=256)  # the operand placement changes launches made (sim/operands.py)
        self._persistent_runs = PersistentRuns()  # traces of launches that read no data, for their repeats

    def __repr__(self) -> str:
        return f"Device({self.index}, machine={self.machine.name!r}, clock_ns={self.clock_ns:g})"

    # ---- time ------------------------------------------------------------------------------
    @property
    def clock_ns(self) -> float:
        """Modeled time of every launch so far."""
        with self._lock:
            return self._clock.now_ns()

    @clock_ns.setter
    def clock_ns(self, ns: float) -> None:
        with self._lock:
            self._clock.set_ns(ns)

    def reset_clock(self, ns: float = 0.0) -> None:
        """Set the modeled clock to ``ns`` without timing the launches still waiting (sim/clock.py
        ``Clock.reset``): what ran before is not counted, and ``last_profile`` is None."""
        with self._lock:
            self._clock.reset(ns)

    def advance_clock(self, ns: float) -> None:
        """Add ``ns`` (a copy between launches: an operand's migration) after the launches so far, without
        timing the ones waiting (sim/clock.py ``Clock.advance``): ``clock_ns += ns``, read later."""
        with self._lock:
            self._clock.advance(ns)

    @property
    def last_profile(self):
        """The Profile of the most recent launch, or None."""
        with self._lock:
            return self._clock.last_profile()

    @last_profile.setter
    def last_profile(self, profile) -> None:
        with self._lock:
            self._clock.set_last_profile(profile)

    def now_ns(self) -> float:
        return self.clock_ns

    def synchronize(self) -> None:
        """Wait for a launch running in another thread (a launch itself returns only when it is done)
        and settle the modeled clock: the launches waiting to be timed (sim.clock) are timed and their
        traces dropped, so nothing a launch queued outlives a synchronize."""
        with self._lock:
            self._clock.now_ns()

    # ---- memory ----------------------------------------------------------------------------
    def covers(self, addr: int, nbytes: int) -> bool:
        """True when bytes [addr, addr + nbytes) lie inside one live allocation."""
        with self._lock:
            lo = np.array([int(addr)], np.int64)
            return bool(self.memory.span_positions(lo, lo + max(int(nbytes), 1))[0] >= 0)

    # ---- launch ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def estimating(self):
        """Inside the block, launches are ESTIMATED by the cost model (``sim.estimate``), not run:
        priced with the moves of shared operands the launch would make (``_planned_operands``),
        memory is left as it is, the clock advances by each estimate, ``launches`` counts them,
        ``last_profile`` is None after them (no Profile), and the Estimates are appended to the
        list the block receives. What autotuning and ``triton_plate_backend.estimate`` use."""
        with self._lock:
            outer, self._estimates = self._estimates, []
            try:
                yield self._estimates
            finally:
                self._estimates = outer

    def _planner(self):
        """The device's operand planner (sim/operands.py), made at the first affinity launch."""
        from .operands import OperandPlanner

        if self._operands is None:
            self._operands = OperandPlanner()
        return self._operands

    def _place_operands(self, program, grid, args) -> None:
        """Per-operand placement for this launch (sim/operands.py); each move's copy advances the clock (after
        the launches before it, which it does not time)."""
        for move in self._planner().apply(program, grid, args, self.memory):
            self.advance_clock(move.migration_ns)
            self.operand_moves.append(move)

    def _planned_operands(self, program, grid, args) -> dict[int, str] | None:
        """The moves a launch would make to its shared operands by itself (``_place_operands``
        without the replicas a rent pays for), as an estimate's placement: argument -> layout."""
        _, choices = self._planner().plan(program, grid, args, self.memory)
        return {c.arg: c.spec for c in choices if c.spec is not None} or None

    def launch(
        self,
        program,
        grid: tuple[int, int, int],
        args,
        *,
        host_buffers=(),
        policy=None,
        trace_path=None,
        defer_timing: bool = False,
        sanitize=(),
        max_steps: int | None = None,
        as_written=None,
    ):
        """Run ``program`` over ``grid`` with runtime ``args`` (Program.args order: ints for
        pointers and integers, floats for floats) and return its Profile.

        ``host_buffers`` are registered as device memory for this launch only, unless an
        allocation already covers them. ``policy`` (grid -> core) and ``trace_path`` default to
        the PLATE_POLICY and PLATE_TRACE knobs, ``max_steps`` (the step budget) to PLATE_MAX_STEPS;
        policy ``affinity`` maps each program to a core of the domain that homes most of its bytes,
        from the kernel's footprint and the arguments' memory (sim/affinity.py), and falls back to
        ``round_robin`` when the footprint cannot tell. ``defer_timing``: return None and time the
        launch when the clock or ``last_profile`` is read (a named policy or mapping and no trace to
        write only). A launch that raises leaves nothing behind: no registered host buffer, nothing
        waiting on the clock. ``sanitize``: sanitizer modes for this launch ("race", "init";
        sim/sanitizer.py); a launch with findings raises SanitizerError after running, without timing.
        Inside ``estimating()`` a launch is estimated by the cost model (sim/estimate.py), not run.
        ``as_written``: (grid, args) of the same launch run one program per grid element (launcher.py:
        a persistent kernel's launch without its loop over programs, any other launch itself): a launch
        whose trace reads no data runs that way, only its programs that store anything, timed from the
        address-only run's trace, kept for its repeats (sim/persistent_runs.py)."""
        affinity, estimate, operands, timing = _modules()
        AFFINITY, MAPPINGS = affinity.AFFINITY, affinity.MAPPINGS

        grid = tuple(map(int, grid))
        trace_path = trace_path or knobs.trace()
        policy = policy or knobs.policy()
        max_steps = max_steps or knobs.max_steps()
        named = isinstance(policy, timing.CoreMapping) or (
            isinstance(policy, str) and (policy in timing.POLICIES or policy == AFFINITY)
        )
        defer_timing = defer_timing and not trace_path and named
        with self._lock:
            registered = []
            try:
                for buf in host_buffers:
                    if buf.nbytes <= 0 or self.covers(buf.addr, buf.nbytes):
                        continue
                    rec = self.memory.register(buf.addr, buf.nbytes, owner=buf.owner, label=buf.label)
                    registered.append(rec.base)
                planned = None
                if isinstance(policy, str) and policy == AFFINITY:
                    if self._estimates is None:
                        self._place_operands(program, grid, args)
                    else:
                        planned = self._planned_operands(program, grid, args)
                if planned is None:  # else the estimate resolves it under the planned placement
                    policy = MAPPINGS.resolve(policy, program, grid, args, self.memory)
                if self._estimates is not None:
                    # the launch as it would run, with the operand moves it would make
                    est = estimate.estimate_launch(
                        program, grid, list(args), self.memory, self.machine, policy=policy, placement=planned
                    )
                    self._estimates.append(est)
                    self._clock.set_ns(self._clock.now_ns() + est.time_ns)
                    self._clock.set_last_profile(None)  # a launch, estimated: it has no Profile
                    self.launches += 1
                    return None
                self._clock.make_room()  # the traces waiting, under their bound before this one runs
                trace, kept = self._run(program, grid, args, sanitize, max_steps, as_written)
            finally:
                for base in registered:
                    self.memory.free(base)
            if self._operands is not None:
                operands.drop_written_replicas(trace, program, args, self.memory)
            if defer_timing:
                self.launches += 1
                self._clock.add_untimed(trace if kept is None else kept, policy)
                return None
            profile = timing.simulate_timing(trace, self.machine, policy=policy, collect_events=bool(trace_path))
            self.launches += 1
            self._clock.add_timed(profile)
            if trace_path:
                profile.write_trace(_trace_file(trace_path, self.launches, program.name))
            return profile

    def _run(self, program, grid, args, sanitize, max_steps, as_written):
        """(the launch's trace, its packed form when it is a kept one): the launch run, or for a
        launch whose trace reads no data the launch as written, untraced (sim/persistent_runs.py)."""
        from .executor import execute

        runs = self._persistent_runs
        # a launch of at most one program per core (most of a test suite's): its first run traced costs
        # less than the address-only run and the run as written after it, and its repeats run every program;
        # whether its trace reads data is asked at its first repeat (PersistentRuns.key, checked=False)
        small = as_written is not None and math.prod(as_written[0]) <= self.machine.total_cores
        key = None if as_written is None or sanitize else runs.key(program, grid, list(args), self.memory, not small)
        trace = None if key is None else runs.get(key, program)
        if trace is None and key is not None and not small:
            trace = runs.first(key, program, grid, list(args), self.memory, self.machine, max_steps)
        if trace is None:
            trace = execute(
                program,
                grid,
                list(args),
                self.memory,
                self.machine,
                record_trace=True,
                sanitize=sanitize,
                max_steps=max_steps,
            )
            if key is not None:
                runs.keep(key, program, trace)
            return trace, None
        grid_w, args_w = as_written[0], list(as_written[1])
        live = None if small else runs.live(key, program, grid_w, args_w, self.memory, self.machine)
        if live is None or live.size:
            execute(
                program,
                grid_w,
                args_w,
                self.memory,
                self.machine,
                record_trace=False,
                max_steps=max_steps,
                programs=live,
            )
        return trace, runs.packed(key, program)


_MODULES: list = []  # the modules a launch calls, imported at the first launch


def _modules() -> tuple:
    """(sim.affinity, sim.estimate, sim.operands, sim.timing), imported once: an import statement in a function costs
    a few microseconds each time it runs (4 a launch). A launch reads their functions as module attributes when
    it calls them, so a tool or test that replaces one (benchmarks/sim_identity.py) is seen as before."""
    if not _MODULES:
        from . import affinity, estimate, operands, timing

        _MODULES.append((affinity, estimate, operands, timing))
    return _MODULES[0]


def _trace_file(setting: str, launch_number: int, kernel: str) -> str:
    if setting.endswith(".json"):
        parent = os.path.dirname(setting)
        if parent:
            os.makedirs(parent, exist_ok=True)
        return setting
    os.makedirs(setting, exist_ok=True)
    return os.path.join(setting, f"{launch_number:06d}-{kernel}.json")


# ---- the device table and the current device (per thread, like CUDA) ------------------------
_devices: dict[int, Device] = {}
_devices_lock = threading.Lock()
_current = threading.local()


def device_count() -> int:
    return DEVICE_COUNT


def _check_index(index: int) -> int:
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < DEVICE_COUNT:
        raise DeviceError(
            f"no plate device {index!r}: there {'is' if DEVICE_COUNT == 1 else 'are'} "
            f"{DEVICE_COUNT} (indices 0..{DEVICE_COUNT - 1})"
        )
    return int(index)


def current_device() -> int:
    return getattr(_current, "index", 0)


def set_current_device(index: int) -> None:
    _current.index = _check_index(index)


def get_device(index: int | None = None) -> Device:
    """The Device of ``index`` (default: the current device), created on first use from the knobs."""
    index = current_device() if index is None else _check_index(index)
    dev = _devices.get(index)
    if dev is None:
        with _devices_lock:
            dev = _devices.get(index)
            if dev is None:
                dev = _devices[index] = Device(index)
    return dev


def reset_clocks() -> None:
    """Every device made so far starts a new clock epoch at 0 (``Device.reset_clock``): the launches no one
    timed are dropped untimed. The test suite calls it after each test, so that a test reading the clock does
    not pay for the timing of the launches of the tests before it."""
    for dev in list(_devices.values()):
        dev.reset_clock()


_reset_hooks: list = []  # called after every reset_device: the layers above keep state per machine preset


def on_reset(hook) -> None:
    """Call ``hook()`` after each ``reset_device`` (the Inductor integration drops kernels it compiled for the
    preset before: its caches key them by source, which names no preset)."""
    if hook not in _reset_hooks:
        _reset_hooks.append(hook)


def reset_device(index: int = 0) -> None:
    """Forget device ``index``: its memory, clock and profile. The next ``get_device`` builds a
    fresh one from the knobs as they are then (tests use this to switch PLATE_MACHINE)."""
    with _devices_lock:
        _devices.pop(_check_index(index), None)
    from .affinity import MAPPINGS

    MAPPINGS.clear()  # its answers are keyed by layout, not by device: a fresh device starts without them
    for hook in list(_reset_hooks):
        hook()
