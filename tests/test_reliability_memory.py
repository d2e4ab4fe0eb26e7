"""Device memory goes back when the last reference goes: no reference cycle on the launch path keeps
a kernel's arguments alive, a full device collects garbage once before it raises out of memory, and
many launches leave memory_allocated and the process's memory flat."""

from __future__ import annotations

import contextlib
import gc
import os

import pytest
import torch
import triton
import triton.language as tl

import triton_plate_backend.torch_device  # noqa: F401 - registers the plate device
from triton_plate_backend.errors import MemoryFault
from triton_plate_backend.sim import clock as sim_clock
from triton_plate_backend.sim import device as sim_device
from triton_plate_backend.sim import memory as sim_memory
from triton_plate_backend.sim.device import get_device

# Launches in the flatness test. Each is a tiny kernel plus a fresh tensor: ~1 ms on a busy machine.
LAUNCHES = 10_000
WARMUP = 2_000
RSS_SLACK = 4 * 2**20  # bytes: allocator noise; a leak of one small Python object per launch is above it
CHUNK = 2**20  # bytes per tensor of the nearly-full-device loop


@pytest.fixture(scope="module", autouse=True)
def _mini(plate_mini_module):
    return plate_mini_module


@pytest.fixture(autouse=True)
def _frozen(frozen_heap):
    """Each test collects garbage several times (directly and through the out-of-memory retry)."""


@triton.jit
def bump(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


@triton.jit
def add_pair(pair, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(pair[0] + offs, mask=mask) + tl.load(pair[1] + offs, mask=mask), mask=mask)


@contextlib.contextmanager
def no_collector():
    """The cycle collector off: only reference counting frees memory (what users rely on)."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _launch_each_kind(device="plate"):
    x, y, out = (torch.ones(1000, device=device) for _ in range(3))
    bump[(1,)](x, 1000, BLOCK=1024)
    add_pair[(4,)]((x, y), out, 1000, BLOCK=256)  # a tuple argument: flattened by the launcher
    with pytest.raises(MemoryFault):
        add_pair[(8,)]((x, y), out, 2000, BLOCK=256)  # past the end: a failed launch
    torch.plate.synchronize()
    assert out.cpu().tolist() == [3.0] * 1000


def _garbage_of(launches) -> list[str]:
    """Type names of what the cycle collector finds after ``launches`` ran with it off."""
    launches()
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        with no_collector():
            for _ in range(3):
                launches()
            gc.collect()
            return sorted({type(g).__qualname__ for g in gc.garbage})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


def test_tensors_passed_to_a_kernel_are_freed_on_del():
    _launch_each_kind()  # compiles outside the measured part
    with no_collector():
        before = torch.plate.memory_allocated()
        _launch_each_kind()
        assert torch.plate.memory_allocated() == before


def test_the_launch_path_makes_no_reference_cycles():
    garbage = _garbage_of(_launch_each_kind)
    assert garbage == [], f"reference cycles on the launch path hold: {garbage}"


def test_host_memory_mode_and_trace_files_make_no_reference_cycles(monkeypatch, tmp_path):
    monkeypatch.setenv("PLATE_HOST_MEMORY", "1")  # CPU tensors registered as device memory per launch
    monkeypatch.setenv("PLATE_TRACE", str(tmp_path / "last.json"))  # timed at launch, trace written
    garbage = _garbage_of(lambda: _launch_each_kind("cpu"))
    assert garbage == [], f"reference cycles on the launch path hold: {garbage}"
    assert (tmp_path / "last.json").stat().st_size > 0


def _fill_domain0(leave: int) -> torch.Tensor:
    memory = get_device().memory
    free0 = int(memory.capacity[0] - memory.used[0])
    with torch.plate.placement("local", domain=0):
        return torch.empty(free0 - leave, dtype=torch.uint8, device="plate")  # never touched: no host pages


def test_allocate_launch_drop_on_a_nearly_full_device():
    bump[(1,)](torch.zeros(16, device="plate"), 16, BLOCK=16)
    filler = _fill_domain0(leave=CHUNK + CHUNK // 2)  # room for one chunk, not two
    retries = torch.plate.memory_stats()["num_alloc_retries"]
    with no_collector():
        for _ in range(4):
            with torch.plate.placement("local", domain=0):
                t = torch.zeros(CHUNK // 4, device="plate")
            bump[(1,)](t, 16, BLOCK=16)
            del t
    assert torch.plate.memory_stats()["num_alloc_retries"] == retries  # freed by reference counting alone
    del filler


def test_out_of_memory_collects_garbage_once_and_retries():
    filler = _fill_domain0(leave=CHUNK + CHUNK // 2)
    retries = torch.plate.memory_stats()["num_alloc_retries"]
    with no_collector():
        with torch.plate.placement("local", domain=0):
            held = [torch.empty(CHUNK, dtype=torch.uint8, device="plate")]
        held.append(held)  # a cycle: only the collector can free this tensor
        del held
        with torch.plate.placement("local", domain=0):
            t = torch.empty(CHUNK, dtype=torch.uint8, device="plate")  # fits once the cycle is collected
    assert torch.plate.memory_stats()["num_alloc_retries"] == retries + 1
    with pytest.raises(torch.OutOfMemoryError, match="domain 0"):  # still full: raises after the one retry
        with torch.plate.placement("local", domain=0):
            torch.empty(CHUNK, dtype=torch.uint8, device="plate")
    assert torch.plate.memory_stats()["num_alloc_retries"] == retries + 2
    del t, filler


def test_many_launches_leave_memory_allocated_and_rss_flat(monkeypatch):
    # Two bounded records grow until full: launches waiting to be timed keep their traces until a
    # synchronize (or PENDING_BYTES of them), device memory remembers its last FREED_KEPT frees for fault
    # messages. Small bounds (a fresh device) let the warm-up fill them, so that RSS measures leaks only.
    monkeypatch.setattr(sim_clock, "PENDING_BYTES", 2**20)
    monkeypatch.setattr(sim_memory, "FREED_KEPT", 64)
    sim_device.reset_device(0)

    def run(n):
        for _ in range(n):
            x = torch.empty(16, device="plate")
            bump[(1,)](x, 16, BLOCK=16)
        torch.plate.synchronize()

    run(WARMUP)
    with no_collector():
        before, rss_before = torch.plate.memory_allocated(), rss_bytes()
        run(LAUNCHES)
        after, rss_after = torch.plate.memory_allocated(), rss_bytes()
    assert after == before
    assert rss_after - rss_before < RSS_SLACK, f"RSS grew by {(rss_after - rss_before) / 2**20:.1f} MiB"
    assert get_device().launches == WARMUP + LAUNCHES
