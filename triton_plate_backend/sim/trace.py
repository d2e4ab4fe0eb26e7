"""What the functional executor records for the timing model: which program instances ran
which instruction, and for memory instructions how many bytes each moved to/from which home
domain. The executor never computes time; the timing model never touches data."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..isa.program import Program


@dataclass
class TraceEntry:
    pc: int
    # linear program ids (x fastest: pid = x + gx * (y + gy * z)) that executed this instruction,
    # in increasing order
    programs: np.ndarray
    # memory instructions only (dma.*, atom.*): float64 [len(programs), total_domains], bytes
    # moved per HOME domain of the device memory touched (the core's domain is the timing
    # model's business: it depends on the grid -> core policy)
    bytes_by_domain: np.ndarray | None = None
    # memory instructions only: int64 [len(programs)], elements moved (gather/scatter/atomic
    # cost is per element) and contiguous runs (strided DMA cost is per run)
    elements: np.ndarray | None = None
    runs: np.ndarray | None = None


@dataclass
class Trace:
    program: Program
    grid: tuple[int, int, int]
    entries: list[TraceEntry] = field(default_factory=list)

    @property
    def num_programs(self) -> int:
        gx, gy, gz = self.grid
        return gx * gy * gz
