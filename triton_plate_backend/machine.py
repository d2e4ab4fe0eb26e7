"""The PLATE machine description: PLATE.md's numbers as data, in one place, with presets.

Everything that reports cycles, bytes or utilisation (simulator timing, compiler tiling and
scheduling, Inductor placement) reads these fields; change a number here and in PLATE.md together.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass, field

from .errors import MachineError

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB


@dataclass(frozen=True)
class MatrixUnit:
    # the physical array: one pass computes dim x dim outputs; an m.mma of any M x N makes
    # ceil(M/dim) * ceil(N/dim) passes behind one fill (PLATE.md's cost rule)
    dim: int = 32
    max_k: int = 1024  # bound on K of one matrix instruction
    # MACs per cycle by input dtype; fp32 takes the tf32-like path
    macs_per_cycle: dict = field(
        default_factory=lambda: {"bf16": 1024, "f16": 1024, "f8e4m3fn": 2048, "f8e5m2": 2048, "i8": 2048, "f32": 128}
    )
    fill_cycles: int = 94

    def k_rate(self, dtype: str) -> float:
        """r of PLATE.md: cycles per unit of K for one 32x32 output tile."""
        return (self.dim * self.dim) / self.macs_per_cycle[dtype]


@dataclass(frozen=True)
class VectorUnit:
    lanes_fp32: int = 32  # 32-bit lanes; narrower types pack, 64-bit types take two lanes
    overhead_cycles: int = 5
    transcendental_cpo: int = 4  # cycles per vector for exp/log/sin/...
    max_elements: int = 8192  # ISA bound on the elements of one vector instruction

    def lanes(self, itemsize: int) -> int:
        return max(1, self.lanes_fp32 * 4 // max(itemsize, 1))


@dataclass(frozen=True)
class Dma:
    engines: int = 2  # one in, one out
    bytes_per_cycle: int = 64
    queue_depth: int = 8
    issue_cycles: int = 50
    gather_cycles_per_element: int = 1
    strided_cycles_per_run: int = 2


@dataclass(frozen=True)
class Core:
    sram_bytes: int = 1 * MiB
    sram_banks: int = 16
    sram_bank_bytes: int = 16
    sram_latency: int = 6
    scalar_ops_per_cycle: int = 1
    scalar_registers: int = 64
    dma_tokens: int = 16
    matrix: MatrixUnit = field(default_factory=MatrixUnit)
    vector: VectorUnit = field(default_factory=VectorUnit)
    dma: Dma = field(default_factory=Dma)


@dataclass(frozen=True)
class Domain:
    cores: int = 8
    hbm_bytes: int = 8 * GiB
    hbm_bytes_per_cycle: float = 64.0
    hbm_efficiency: float = 0.9  # share of peak that is achievable
    hbm_latency: int = 400
    die_link_bytes_per_cycle: float = 32.0  # per direction
    die_crossing_cycles: int = 200
    stripe_bytes: int = 4 * KiB  # interleaved placement granule


@dataclass(frozen=True)
class ChipLinks:
    links_per_neighbour: int = 2
    bytes_per_cycle: float = 16.0  # per link per direction (16 GB/s at 1 GHz)
    hop_cycles: int = 700
    issue_cycles: int = 100
    engine_domains: tuple = (0, 2)  # only these domains' link engines reach the links


@dataclass(frozen=True)
class Machine:
    name: str
    clock_ghz: float = 1.0
    chips: int = 1
    domains: int = 4  # per chip, on a 2x2 ring
    domain: Domain = field(default_factory=Domain)
    core: Core = field(default_factory=Core)
    links: ChipLinks = field(default_factory=ChipLinks)

    def __post_init__(self):
        if self.chips < 1 or self.domains < 1 or self.domain.cores < 1:
            raise MachineError(f"machine {self.name!r}: chips, domains and cores must be >= 1")
        if self.domains not in (1, 2, 4):
            raise MachineError(f"machine {self.name!r}: domains must be 1, 2 or 4 (a 2x2 ring), got {self.domains}")

    # ---- counts --------------------------------------------------------------------------
    @property
    def cores_per_chip(self) -> int:
        return self.domains * self.domain.cores

    @property
    def total_cores(self) -> int:
        return self.chips * self.cores_per_chip

    @property
    def total_domains(self) -> int:
        return self.chips * self.domains

    def core_domain(self, core: int) -> int:
        """Global domain index (chip * domains + domain) of a global core index."""
        return core // self.domain.cores

    # ---- topology ------------------------------------------------------------------------
    def domain_hops(self, a: int, b: int) -> int:
        """Die crossings between two domains of one chip: 2x2 ring, diagonal = 2 hops."""
        a, b = a % self.domains, b % self.domains
        if a == b:
            return 0
        if self.domains == 2:
            return 1
        # ring order 0-1-3-2-0: position on the ring
        pos = {0: 0, 1: 1, 3: 2, 2: 3}
        d = abs(pos[a] - pos[b])
        return min(d, 4 - d)

    def domain_path(self, src: int, dst: int) -> list[tuple[int, int]]:
        """Directed die links (from, to) that data crosses going from domain src to dst."""
        src, dst = src % self.domains, dst % self.domains
        if src == dst:
            return []
        if self.domains == 2:
            return [(src, dst)]
        # domain d sits at (x, y) = (d % 2, d // 2) of the 2x2 ring; a diagonal goes along x first, then
        # y (dimension order): every directed link then carries one neighbour's traffic and one
        # diagonal's, where always turning the same way round the ring loads half the links three times
        if src ^ dst == 3:
            mid = dst ^ 2  # src with dst's x
            return [(src, mid), (mid, dst)]
        return [(src, dst)]

    def chip_hops(self, a: int, b: int) -> int:
        d = abs(a - b)
        return min(d, self.chips - d)

    # ---- peaks ---------------------------------------------------------------------------
    def peak_macs_per_cycle(self, dtype: str = "bf16") -> int:
        return self.core.matrix.macs_per_cycle[dtype] * self.cores_per_chip * self.chips

    def peak_flops(self, dtype: str = "bf16") -> float:
        """FLOP/s of the whole system (a MAC is 2 FLOP)."""
        return 2.0 * self.peak_macs_per_cycle(dtype) * self.clock_ghz * 1e9

    def hbm_bytes_per_cycle_chip(self) -> float:
        return self.domain.hbm_bytes_per_cycle * self.domains

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @functools.cached_property
    def _cache_key(self) -> str:  # cached_property writes __dict__ directly, so frozen is fine
        return json.dumps(self.to_dict(), sort_keys=True)

    def cache_key(self) -> str:
        """The whole description as canonical JSON (compile cache keys, memoisation)."""
        return self._cache_key

    def describe(self) -> str:
        d, c, m, v = self.domain, self.core, self.core.matrix, self.core.vector
        hbm_chip = self.hbm_bytes_per_cycle_chip() * self.clock_ghz
        lines = [
            f"machine {self.name}: {self.chips} chip(s) x {self.domains} domains x {d.cores} cores "
            f"= {self.total_cores} cores, clock {self.clock_ghz:g} GHz",
            f"  per core : SRAM {c.sram_bytes // KiB} KiB ({c.sram_banks} banks x {c.sram_bank_bytes} B, "
            f"{c.sram_latency}-cycle load-to-use), {c.scalar_registers} scalar registers, "
            f"{c.dma_tokens} DMA tokens",
            f"  matrix   : {m.dim}x{m.dim}, MAC/cycle "
            + ", ".join(f"{k} {v_}" for k, v_ in m.macs_per_cycle.items())
            + f", fill {m.fill_cycles} cycles, K <= {m.max_k} per instruction",
            f"  vector   : {v.lanes_fp32} fp32 lanes, {v.transcendental_cpo} cycles/vector transcendental, "
            f"+{v.overhead_cycles} per instruction, <= {v.max_elements} elements per instruction",
            f"  DMA      : {c.dma.engines} engines x {c.dma.bytes_per_cycle} B/cycle, queue {c.dma.queue_depth}, "
            f"issue {c.dma.issue_cycles} cycles",
            f"  domain   : HBM {d.hbm_bytes // GiB} GiB, {d.hbm_bytes_per_cycle:g} B/cycle "
            f"({d.hbm_efficiency:.0%} achievable), latency {d.hbm_latency} cycles; die links "
            f"{d.die_link_bytes_per_cycle:g} B/cycle/direction, +{d.die_crossing_cycles} cycles per crossing; "
            f"interleave stripe {d.stripe_bytes // KiB} KiB",
            f"  chip     : HBM {hbm_chip:g} GB/s, {self.peak_flops('bf16') / self.chips / 1e12:.1f} TFLOP/s bf16, "
            f"balance {self.peak_flops('bf16') / self.chips / (hbm_chip * 1e9):.0f} FLOP/B",
        ]
        if self.chips > 1:
            lk = self.links
            lines.append(
                f"  system   : {self.chips} chips on a ring, {lk.links_per_neighbour} links/neighbour x "
                f"{lk.bytes_per_cycle:g} B/cycle/direction, {lk.hop_cycles}+{lk.issue_cycles} cycles per hop, "
                f"link engines in domains {list(lk.engine_domains)}"
            )
        return "\n".join(lines)


PRESETS: dict[str, Machine] = {
    "plate1": Machine(name="plate1"),
    # small and fast for tests: still 4 domains so NUMA effects show, 2 cores each
    "plate-mini": Machine(name="plate-mini", domain=Domain(cores=2, hbm_bytes=1 * GiB)),
    "plate4": Machine(name="plate4", chips=4),
}

DEFAULT_PRESET = "plate1"


def get_machine(name: str | Machine | None = None) -> Machine:
    if isinstance(name, Machine):
        return name
    name = name or DEFAULT_PRESET
    try:
        return PRESETS[name]
    except KeyError:
        raise MachineError(f"unknown machine preset {name!r}; known: {', '.join(PRESETS)}") from None
