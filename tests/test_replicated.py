"""The replicated layout on plate-mini (4 domains x 2 cores): one copy of a tensor per domain. A read is
served by the reader's own domain's copy; a write updates every copy (each copy written from the
writing core: one local and three remote writes); memory counts every copy; making a replica is a
migration priced by the cost model. Byte counts are functional properties of the mapping, not timings."""

from __future__ import annotations

import gc

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

import triton_plate_backend.torch_device  # noqa: F401  (registers the plate device)
from triton_plate_backend.sim.memory import AllocationError, DeviceMemory, Placement

N = 1 << 14


@pytest.fixture(scope="module", autouse=True)
def mini(plate_mini_module):
    return plate_mini_module


@triton.jit
def add_kernel(x, y, o, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)


@triton.jit
def scale_by_all_kernel(w, x, o, n, BLOCK: tl.constexpr):
    """Every program reads the whole of ``w`` (like a layer norm's weights) and its own block of ``x``."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    total = tl.sum(tl.load(w + tl.arange(0, BLOCK)), axis=0)
    tl.store(o + offs, tl.load(x + offs) * total)


def test_a_replica_is_accounted_once_per_domain():
    mem = DeviceMemory("plate-mini")
    rec = mem.alloc(1000, "replicated")
    assert mem.used.tolist() == [1000] * 4 and rec.replicas == (0, 1, 2, 3)
    assert mem.memory_allocated() == 4000 and mem.copy_bytes == 3000
    moved = mem.migrate(rec.base, "local:2")  # every new home already holds a copy: nothing moves
    assert moved.sum() == moved[2, 2] == 1000 and mem.used.tolist() == [0, 0, 1000, 0] and mem.copy_bytes == 0
    moved = mem.migrate(rec.base, "replicated")  # domain 2 sends a copy to each other domain
    assert moved[2].tolist() == [1000] * 4 and moved.sum() == 4000
    mem.free(rec.base)
    assert mem.memory_allocated() == 0 and mem.copy_bytes == 0 and mem.copy_peak == 3000


def test_a_replica_names_no_domains():
    with pytest.raises(AllocationError, match="replicated placement keeps one copy in every domain"):
        Placement("replicated", domain=1)


def test_torch_counts_every_copy(mini):
    gc.collect()  # a collectable tensor of an earlier test on this worker would be freed mid-count
    before = torch.plate.memory_allocated()
    with torch.plate.placement("replicated"):
        w = torch.ones(N, device="plate")
    assert torch.plate.memory_allocated() - before == 4 * 4 * N
    assert torch.plate.home_domains(w) == {d: 4 * N for d in range(4)}
    del w
    assert torch.plate.memory_allocated() == before


def test_reads_of_a_replica_are_local_and_correct(mini):
    w_cpu, x_cpu = torch.rand(1024), torch.rand(N)
    with torch.plate.placement("interleaved"):  # w read whole by every program: 3/4 of it remote
        w, x = w_cpu.to("plate"), x_cpu.to("plate")
        o, o2 = torch.empty(N, device="plate"), torch.empty(N, device="plate")
    # one program per grid element (no persistent loop), so each of the 16 reads w once
    scale_by_all_kernel[(N // 1024,)](w, x, o, N, BLOCK=1024, persistent_programs=False)
    interleaved = mini.last_profile.read_bytes
    torch.plate.migrate(w, "replicated")
    scale_by_all_kernel[(N // 1024,)](w, x, o2, N, BLOCK=1024, persistent_programs=False)
    read = mini.last_profile.read_bytes
    expected = x_cpu * w_cpu.sum()
    torch.testing.assert_close(o.cpu(), expected)
    torch.testing.assert_close(o2.cpu(), expected)
    # w's bytes (16 programs x 4 KiB) are now all local; x (interleaved 4 KiB stripes) stays as it was
    assert np.trace(read) - np.trace(interleaved) == pytest.approx(16 * 4096 * 3 / 4)
    assert read.sum() == interleaved.sum()


def test_a_write_updates_every_copy(mini):
    x_cpu, y_cpu = torch.rand(N), torch.rand(N)
    x, y = x_cpu.to("plate"), y_cpu.to("plate")
    with torch.plate.placement("replicated"):
        o = torch.empty(N, device="plate")
    add_kernel[(N // 1024,)](x, y, o, N, BLOCK=1024)
    write = mini.last_profile.write_bytes
    assert write.sum() == 4 * 4 * N  # each of the four copies gets every byte
    assert np.all(write.sum(axis=0) == 4 * N)  # ... spread over the four home domains
    torch.testing.assert_close(o.cpu(), x_cpu + y_cpu)
    o += 1  # a host write through torch: the copies are one set of bytes in the simulator
    add_kernel[(N // 1024,)](o, y, x, N, BLOCK=1024)
    torch.testing.assert_close(x.cpu(), x_cpu + 2 * y_cpu + 1)


def test_making_a_replica_is_priced_and_undoing_it_is_free(mini):
    x = torch.arange(N, device="plate", dtype=torch.float32)
    price = torch.plate.migration_cost_ns(x, "replicated")
    clock = mini.clock_ns
    torch.plate.migrate(x, "replicated")
    assert mini.clock_ns - clock == pytest.approx(price) and price > torch.plate.migration_cost_ns(x, "blocked") == 0
    clock = mini.clock_ns
    torch.plate.migrate(x, "interleaved")
    assert mini.clock_ns == clock and torch.equal(x.cpu(), torch.arange(N, dtype=torch.float32))
