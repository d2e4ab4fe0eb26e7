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


def _tables_now(pcs):
    estimate._PC_TABLES.clear()
    return estimate._pc_tables(pcs)


def test_pc_tables_follow_their_facts():
    machine = get_machine("plate-mini")
    facts = [static_facts(assemble((ASM / f).read_text()), machine)[0] for f in ("vec_add.pasm", "softmax.pasm")]
    fresh = [_tables_now(pcs) for pcs in facts]
    estimate._PC_TABLES.clear()
    for _ in range(2):  # kept: the same tables, each list its own
        for pcs, want in zip(facts, fresh):
            got = estimate._pc_tables(pcs)
            assert len(got[0]) == len(pcs)
            for g, w in zip(got, want):
                assert np.array_equal(g, w) and g.dtype == w.dtype
    kinds = [t[3].tolist() for t in fresh]
    assert kinds[0] != kinds[1]
