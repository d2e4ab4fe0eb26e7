"""What one launch cost: the Profile the timing model returns, its text summary and its
Chrome/Perfetto trace (catapult "traceEvents" JSON: one "X" event per instruction instance,
pid = domain, tid = one track per core engine)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from ..cost import Bound

ENGINES = ("dma_in", "compute", "dma_out")


@dataclass
class Profile:
    machine: str
    clock_ghz: float
    policy: str
    num_programs: int
    cores_used: int
    cycles: float  # level 1: last engine or DMA completion over all cores
    bound: Bound  # level 0
    busy_by_core: np.ndarray  # float64 [3, total_cores]: busy cycles per engine (ENGINES order) per core
    read_bytes: np.ndarray  # float64 [D, D]: bytes read, rows = core domain, cols = home domain
    write_bytes: np.ndarray  # float64 [D, D]: bytes written, same layout
    dma_count: int
    instr_count: int
    flops: float  # matrix FLOPs (2*M*N*K per m.mma)
    peak_hbm_bytes_per_cycle: float  # all domains, at peak (not the achievable share)
    hbm_efficiency: float
    peak_flops_per_cycle_core: float  # bf16 matrix peak of one core
    core_domain: np.ndarray  # int64 [total_cores]
    bucket_cycles: float = 0.0  # time resolution of the bandwidth calendar
    wall_s: float = 0.0  # host seconds the timing model took
    events: list | None = None  # (pc, engine, cores, start, end, programs) arrays per step
    event_names: list[str] = field(default_factory=list)  # per pc: mnemonic @ loc
    events_dropped: int = 0
    max_events: int = 0

    # ---- derived figures ------------------------------------------------------------------
    @property
    def time_ns(self) -> float:
        return self.cycles / self.clock_ghz

    @property
    def busy(self) -> dict[str, float]:
        return {name: float(self.busy_by_core[i].sum()) for i, name in enumerate(ENGINES)}

    @property
    def utilisation(self) -> dict[str, float]:
        """Busy share of each engine kind over the cores used and the whole run."""
        denom = self.cycles * max(self.cores_used, 1)
        return {k: (v / denom if denom else 0.0) for k, v in self.busy.items()}

    @property
    def matrix_utilisation(self) -> float:
        denom = self.cycles * max(self.cores_used, 1) * self.peak_flops_per_cycle_core
        return self.flops / denom if denom else 0.0

    @property
    def bytes_by_pair(self) -> np.ndarray:
        return self.read_bytes + self.write_bytes

    @property
    def total_bytes(self) -> float:
        return float(self.bytes_by_pair.sum())

    @property
    def local_bytes(self) -> float:
        return float(np.trace(self.bytes_by_pair))

    @property
    def remote_bytes(self) -> float:
        return self.total_bytes - self.local_bytes

    @property
    def hbm_bytes_per_cycle(self) -> float:
        """Achieved: every DMA byte passes its home domain's HBM once."""
        return self.total_bytes / self.cycles if self.cycles else 0.0

    @property
    def hbm_share_of_peak(self) -> float:
        return self.hbm_bytes_per_cycle / self.peak_hbm_bytes_per_cycle

    @property
    def hbm_share_of_sustained(self) -> float:
        return self.hbm_share_of_peak / self.hbm_efficiency

    def to_dict(self) -> dict:
        return {
            "machine": self.machine,
            "policy": self.policy,
            "programs": self.num_programs,
            "cores_used": self.cores_used,
            "cycles": self.cycles,
            "time_ns": self.time_ns,
            "level0_cycles": self.bound.cycles,
            "level0_binding": self.bound.binding,
            "level0_terms": self.bound.terms,
            "busy": self.busy,
            "utilisation": self.utilisation,
            "matrix_utilisation": self.matrix_utilisation,
            "flops": self.flops,
            "bytes_by_pair": self.bytes_by_pair.tolist(),
            "local_bytes": self.local_bytes,
            "remote_bytes": self.remote_bytes,
            "hbm_bytes_per_cycle": self.hbm_bytes_per_cycle,
            "hbm_share_of_peak": self.hbm_share_of_peak,
            "dma_count": self.dma_count,
            "instr_count": self.instr_count,
        }

    # ---- text -----------------------------------------------------------------------------
    def summary(self) -> str:
        b = self.bound
        ratio = self.cycles / b.cycles if b.cycles else float("nan")
        util = "  ".join(f"{k} {v:.1%}" for k, v in self.utilisation.items())
        lines = [
            f"{self.machine}: {self.num_programs} programs on {self.cores_used} cores ({self.policy}): "
            f"{self.cycles:,.0f} cycles = {self.time_ns / 1e3:,.3f} us",
            f"level-0 bound {b.cycles:,.0f} cycles, bound by {b.binding} ({b.where.get(b.binding, '')}); "
            f"level-1 / level-0 = {ratio:.2f}",
            "  terms: " + ", ".join(f"{k} {v:,.0f}" for k, v in b.terms.items()),
            f"utilisation: {util}  matrix {self.matrix_utilisation:.1%} of peak",
            f"HBM: {self.hbm_bytes_per_cycle:.1f} B/cycle = {self.hbm_share_of_peak:.1%} of peak "
            f"({self.hbm_share_of_sustained:.1%} of sustained); {self.dma_count} DMAs, "
            f"{self.instr_count} instructions, {self.flops:.3g} FLOP",
            f"bytes: {self.total_bytes:,.0f} total, local {self.local_bytes:,.0f}, remote {self.remote_bytes:,.0f}"
            + (f" ({self.remote_bytes / self.total_bytes:.1%} remote)" if self.total_bytes else ""),
        ]
        pair = self.bytes_by_pair
        if pair.size and self.total_bytes:
            D = pair.shape[0]
            lines.append("traffic by (core domain, home domain), bytes:")
            lines.append("       " + "".join(f"{f'home d{h}':>14}" for h in range(D)))
            for c in range(D):
                lines.append(f"  d{c:<4}" + "".join(f"{pair[c, h]:>14,.0f}" for h in range(D)))
        if self.events_dropped:
            lines.append(f"trace: {self.events_dropped} events dropped over the cap of {self.max_events}")
        return "\n".join(lines)

    # ---- Chrome / Perfetto trace -------------------------------------------------------------
    def trace_events(self) -> list[dict]:
        if self.events is None:
            raise ValueError("this profile collected no events: run simulate_timing(..., collect_events=True)")
        us = 1.0 / (self.clock_ghz * 1e3)  # microseconds per cycle
        out = []
        domains = sorted(set(self.core_domain.tolist()))
        for d in domains:
            out.append({"name": "process_name", "ph": "M", "pid": int(d), "args": {"name": f"domain {d}"}})
        cores = np.unique(np.concatenate([ev[2] for ev in self.events])) if self.events else []
        for c in cores:
            for e, name in enumerate(ENGINES):
                out.append(
                    {
                        "name": "thread_name",
                        "ph": "M",
                        "pid": int(self.core_domain[c]),
                        "tid": int(c) * 3 + e,
                        "args": {"name": f"core {c} {name}"},
                    }
                )
        for pc, engine, cs, start, end, progs in self.events:
            name = self.event_names[pc] if 0 <= pc < len(self.event_names) else f"pc {pc}"
            for c, s, t, p in zip(cs.tolist(), start.tolist(), end.tolist(), progs.tolist()):
                out.append(
                    {
                        "name": name,
                        "cat": ENGINES[engine],
                        "ph": "X",
                        "pid": int(self.core_domain[c]),
                        "tid": c * 3 + engine,
                        "ts": s * us,
                        "dur": max(t - s, 0.0) * us,
                        "args": {"program": p, "pc": pc, "start_cycle": s, "end_cycle": t},
                    }
                )
        if self.events_dropped:
            out.append(
                {
                    "name": f"{self.events_dropped} events dropped (cap {self.max_events})",
                    "ph": "i",
                    "s": "g",
                    "pid": 0,
                    "tid": 0,
                    "ts": 0,
                }
            )
        return out

    def write_trace(self, path) -> None:
        """Write the catapult trace JSON (open in ui.perfetto.dev or chrome://tracing)."""
        doc = {
            "traceEvents": self.trace_events(),
            "displayTimeUnit": "ns",
            "otherData": {
                "machine": self.machine,
                "cycles": self.cycles,
                "policy": self.policy,
                "events_dropped": self.events_dropped,
            },
        }
        with open(path, "w") as f:
            f.write(json.dumps(doc))  # dumps: the C encoder; json.dump's Python one leaves reference cycles
