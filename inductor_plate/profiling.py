"""Where modeled time went: a collector of every plate kernel launch inside a ``with`` block.

    with inductor_plate.collect_profiles() as run:
        model(x)
    print(run.report())                 # per kernel: launches, modeled time, bytes local/remote
    run.traffic_by_domain()             # bytes by (core domain, home domain), all launches
    run.write_trace("model.json")       # Perfetto: one track of kernels, plus engine tracks

It hooks Triton's launch hooks (``triton.knobs.runtime.launch_enter_hook`` / ``launch_exit_hook``),
which the plate launcher calls around every launch, and reads the simulated device's profile of
each launch (``Device.last_profile``) and its modeled clock.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Launch:
    kernel: str
    start_ns: float  # modeled device clock when the launch began
    profile: object  # triton_plate_backend.sim.profile.Profile

    @property
    def time_ns(self) -> float:
        return float(self.profile.time_ns)


@dataclass
class KernelTotals:
    kernel: str
    launches: int = 0
    time_ns: float = 0.0
    local_bytes: float = 0.0
    remote_bytes: float = 0.0
    flops: float = 0.0


@dataclass
class ProfileRun:
    launches: list[Launch] = field(default_factory=list)

    @property
    def time_ns(self) -> float:
        return sum(launch.time_ns for launch in self.launches)

    def by_kernel(self) -> list[KernelTotals]:
        """Per kernel name, the sum over its launches; most modeled time first."""
        totals: dict[str, KernelTotals] = {}
        for launch in self.launches:
            t = totals.setdefault(launch.kernel, KernelTotals(launch.kernel))
            t.launches += 1
            t.time_ns += launch.time_ns
            t.local_bytes += float(launch.profile.local_bytes)
            t.remote_bytes += float(launch.profile.remote_bytes)
            t.flops += float(launch.profile.flops)
        return sorted(totals.values(), key=lambda t: -t.time_ns)

    def traffic_by_domain(self) -> np.ndarray:
        """Bytes moved, [core domain, home domain], summed over every launch."""
        if not self.launches:
            return np.zeros((0, 0))
        return sum(np.asarray(launch.profile.bytes_by_pair, dtype=np.float64) for launch in self.launches)

    def report(self, top: int | None = None) -> str:
        total = self.time_ns
        lines = [f"{len(self.launches)} launches, {total / 1e3:,.3f} us modeled"]
        lines.append(f"  {'kernel':<48}{'launches':>9}{'time us':>12}{'share':>8}{'local B':>14}{'remote B':>14}")
        for t in self.by_kernel()[:top]:
            share = t.time_ns / total if total else 0.0
            name = t.kernel if len(t.kernel) <= 47 else f"{t.kernel[:29]}..{t.kernel[-16:]}"
            lines.append(
                f"  {name:<48}{t.launches:>9}{t.time_ns / 1e3:>12,.3f}{share:>8.1%}"
                f"{t.local_bytes:>14,.0f}{t.remote_bytes:>14,.0f}"
            )
        pair = self.traffic_by_domain()
        if pair.size:
            lines.append("traffic by (core domain -> home domain), bytes:")
            lines.append("       " + "".join(f"{f'home d{h}':>14}" for h in range(pair.shape[1])))
            for c in range(pair.shape[0]):
                lines.append(f"  d{c:<4}" + "".join(f"{pair[c, h]:>14,.0f}" for h in range(pair.shape[1])))
        return "\n".join(lines)

    def trace_events(self) -> list[dict]:
        """Chrome/Perfetto events: a "kernels" track on the modeled clock, and each launch's engine
        events (when the launches collected them: ``collect_profiles(trace=True)``) shifted to its start."""
        events = [{"name": "process_name", "ph": "M", "pid": 1000, "args": {"name": "plate kernels"}}]
        for launch in self.launches:
            start_us = launch.start_ns / 1e3
            events.append(
                {
                    "name": launch.kernel,
                    "cat": "kernel",
                    "ph": "X",
                    "pid": 1000,
                    "tid": 0,
                    "ts": start_us,
                    "dur": launch.time_ns / 1e3,
                    "args": {"cycles": float(launch.profile.cycles), "programs": launch.profile.num_programs},
                }
            )
            if launch.profile.events is not None:
                for event in launch.profile.trace_events():
                    if event.get("ph") == "X":
                        event = {**event, "ts": event["ts"] + start_us}
                    events.append(event)
        return events

    def write_trace(self, path) -> None:
        with open(path, "w") as f:
            json.dump({"traceEvents": self.trace_events(), "displayTimeUnit": "ns"}, f)


class _Collector:
    def __init__(self, run: ProfileRun):
        self.run = run
        self.pending: list[tuple[int, float]] = []  # (launch count, clock) at each enter

    def enter(self, metadata) -> None:
        from triton_plate_backend.sim.device import get_device

        device = get_device()
        self.pending.append((device.launches, device.now_ns()))

    def exit(self, metadata) -> None:
        from triton_plate_backend.sim.device import get_device

        if not self.pending:
            return
        launches, start_ns = self.pending.pop()
        device = get_device()
        if device.launches > launches and device.last_profile is not None:  # an empty grid launches nothing
            self.run.launches.append(Launch(_kernel_name(metadata), start_ns, device.last_profile))


def _kernel_name(metadata) -> str:
    if metadata is None:
        return "?"
    get = getattr(metadata, "get", None)
    data = get() if callable(get) and not isinstance(metadata, dict) else metadata
    try:
        return str(data["name"])
    except (KeyError, TypeError):
        return "?"


@contextlib.contextmanager
def collect_profiles(trace: bool = False):
    """Collect the profile of every plate launch in the block (yields a ProfileRun).

    trace=True also records each launch's engine events (for ``write_trace``): it sets PLATE_TRACE
    to a temporary directory for the block, which makes the timing model slower."""
    from triton import knobs

    run = ProfileRun()
    collector = _Collector(run)
    knobs.runtime.launch_enter_hook.add(collector.enter)
    knobs.runtime.launch_exit_hook.add(collector.exit)
    previous = os.environ.get("PLATE_TRACE")
    with contextlib.ExitStack() as stack:
        if trace:
            os.environ["PLATE_TRACE"] = stack.enter_context(tempfile.TemporaryDirectory(prefix="plate-trace-"))
        try:
            yield run
        finally:
            knobs.runtime.launch_enter_hook.remove(collector.enter)
            knobs.runtime.launch_exit_hook.remove(collector.exit)
            if trace:
                if previous is None:
                    os.environ.pop("PLATE_TRACE", None)
                else:
                    os.environ["PLATE_TRACE"] = previous
