"""The one configuration of a pointwise or reduction kernel in the default mode, chosen by the cost model.

Inductor offers a pointwise or reduction kernel several block configurations and, in the default mode too,
compiles every one at the first call and benchmarks them (its "autotune_pointwise" and reduction
autotuning). On plate a benchmark is a simulated run, so the default mode instead runs ONE of Inductor's
configurations (heuristics.py's, the one-wave block included): the one of least time under this module's
model, from the cost model's formulas (cost.py), without compiling or running the others. Max-autotune
(``max_autotune`` or ``max_autotune_pointwise``) still compiles them all and ranks them by modeled time
(benchmarker.py); ``config.cost_model_configs = False`` does that in the default mode too.

The model of a kernel with blocks B over sizes N (Inductor's size hints), whose pointer arguments move
``itemsize`` bytes per element each:

- programs: the product over the non-reduction dims of ceil(N / B); reduction steps: the same over the
  reduction dims (a persistent reduction has no R block: one step over the whole row);
- where the programs run: a tensor of the kernel's size in its widest operand type is placed blocked over
  the domains from ``BLOCKED_MIN_BYTES`` and in 4 KiB stripes round robin below (sim.memory's default
  placement), so it spans that many domains (every one, or one per stripe), and the launch's affinity
  mapping runs each program in the domain of its bytes: ceil(programs / domains) programs share one
  domain's cores, in waves;
- a step: one DMA of every operand's tile (``dma_cycles``: issue, transfer, flight latency, one die
  crossing when the tile is larger than a stripe, or than a domain's share of a blocked tensor) and the
  vector work of the tile (``vector_cycles`` per load and reduction, plus the store);
- the kernel: waves x steps x step.

Ties go to Inductor's order (its first configuration is its own default). Of the 46 kernels bert, llama, gpt2,
t5 and bart of bench_models.py autotune, the choice is the one Inductor's benchmark ranks first for 45
(benchmarks/results/compile-speed.md has the miss).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from triton_plate_backend import cost
from triton_plate_backend.machine import Machine
from triton_plate_backend.sim.memory import BLOCKED_MIN_BYTES

_POINTER = re.compile(r"\*(?:k?)(?:fp|bf|i|u)(\d+)")


def pointer_itemsizes(signature: dict[str, str]) -> list[int]:
    """Bytes per element of each pointer argument of a Triton signature ("*fp32" -> 4, "*i1" -> 1)."""
    sizes = []
    for kind in signature.values():
        match = _POINTER.match(str(kind))
        if match:
            sizes.append(max(1, int(match.group(1)) // 8))
    return sizes or [4]


def _block_name(dim: str) -> str:
    """The config's block kwarg of a size-hint dim: x -> XBLOCK, r0_ -> R0_BLOCK."""
    return f"{dim.upper()}BLOCK"


def estimate(
    machine: Machine, size_hints: dict[str, int], kwargs: dict[str, Any], itemsizes: Sequence[int], ops: int
) -> float:
    """Modeled cycles of a kernel over ``size_hints`` run with the block sizes ``kwargs`` (module docstring)."""
    blocks = {d: max(1, min(int(kwargs.get(_block_name(d), n)), n)) for d, n in size_hints.items()}
    programs = math.prod(math.ceil(n / blocks[d]) for d, n in size_hints.items() if not d.startswith("r"))
    steps = math.prod(math.ceil(n / blocks[d]) for d, n in size_hints.items() if d.startswith("r"))
    elements = math.prod(blocks.values())
    widest = max(itemsizes)
    nbytes = math.prod(size_hints.values()) * widest
    stripe = machine.domain.stripe_bytes
    if nbytes >= BLOCKED_MIN_BYTES:
        domains, share = machine.domains, nbytes / machine.domains
    else:
        domains, share = min(machine.domains, math.ceil(nbytes / stripe)), stripe
    hops = 1 if elements * widest > share else 0
    waves = math.ceil(math.ceil(programs / max(domains, 1)) / machine.domain.cores)
    step = cost.dma_cycles(machine, elements * sum(itemsizes), hops) + ops * cost.vector_cycles(machine, elements, 4)
    return waves * steps * step


def choose(machine: Machine, size_hints: dict[str, int], configs: list, triton_meta: dict, inductor_meta: dict):
    """The configuration of ``configs`` (triton.Config) of least modeled time; ties: the earliest."""
    itemsizes = pointer_itemsizes(triton_meta.get("signature", {}))
    ops = max(1, int(inductor_meta.get("num_load", 1) or 1)) + int(inductor_meta.get("num_reduction", 0) or 0) + 1
    times = [estimate(machine, size_hints, c.kwargs, itemsizes, ops) for c in configs]
    return configs[min(range(len(configs)), key=lambda i: (times[i], i))]
