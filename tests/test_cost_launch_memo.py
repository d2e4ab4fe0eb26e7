"""What the operand planner's pricing keeps between estimates gives what computing it again gives: the
migration cycles of a move (cost.migration_cycles, kept per machine and bytes) and the compiled walk's
per-pc tables (sim/estimate.py ``_pc_tables``, kept per static-facts list)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from triton_plate_backend import cost
from triton_plate_backend.isa.asm import assemble
from triton_plate_backend.machine import get_machine
from triton_plate_backend.sim import estimate
from triton_plate_backend.sim.replay import static_facts


def test_migration_cycles_kept_per_machine_and_bytes():
    rng = np.random.default_rng(0)
    mini = get_machine("plate-mini")
    # the same machine but for its DMA engines' rate: the same shape of bytes, a move engine-bound
    big = dataclasses.replace(
        mini, core=dataclasses.replace(mini.core, dma=dataclasses.replace(mini.core.dma, bytes_per_cycle=1))
    )
    D = mini.total_domains
    cost._MIGRATIONS.clear()
    for _ in range(20):
        moved = rng.integers(0, 3, (D, D)) * rng.integers(1, 1 << 16)
        fresh = moved.astype(np.float64)
        np.fill_diagonal(fresh, 0.0)
        for machine in (mini, big, mini):
            want = cost._migration_cycles(machine, fresh) if fresh.any() else 0.0
            assert cost.migration_cycles(machine, moved) == want
    # one move, two machines: each its own cycles (a key without the machine would answer the first's)
    moved = np.zeros((D, D))
    moved[0, 1] = 1 << 20
    assert cost.migration_cycles(mini, moved) != cost.migration_cycles(big, moved)
    assert cost.migration_cycles(big, moved) == cost._migration_cycles(big, moved)


ASM = Path(__file__).resolve().parents[1] / "examples" / "asm"


def _tables_by_loop(pcs):
    """The walk's per-pc tables built pc by pc (what _walk_compiled built before they were kept)."""
    pc_int, pc_f64, deps = [], [], []
    for p in pcs:
        offsets = [len(deps)]
        for tiles in (p.after_write, p.after_read, p.reads, p.writes):
            deps.extend(tiles)
            offsets.append(len(deps))
        token = -1 if p.token is None else p.token
        pc_int.append([estimate._KIND_CODE[p.kind], p.engine, token, int(p.outbound), *offsets])
        pc_f64.append((p.cost, p.extra_latency))
    return (
        np.array(pc_int, np.int64),
        np.array(pc_f64, np.float64),
        np.array(deps, np.int64),
        np.array([p.kind == "dma" for p in pcs], bool),
    )


def test_pc_tables_follow_their_facts():
    machine = get_machine("plate-mini")
    names = ("vec_add.pasm", "softmax.pasm", "matmul.pasm")
    facts = [static_facts(assemble((ASM / f).read_text()), machine)[0] for f in names]
    want = [_tables_by_loop(pcs) for pcs in facts]
    estimate._PC_TABLES.clear()
    for _ in range(2):  # made, then kept: each list its own tables, the loop's values and dtypes
        for pcs, w in zip(facts, want):
            got = estimate._pc_tables(pcs)
            for g, x in zip(got, w, strict=True):
                assert np.array_equal(g, x) and g.dtype == x.dtype
    assert [t[3].sum() for t in want] != [0, 0, 0]
