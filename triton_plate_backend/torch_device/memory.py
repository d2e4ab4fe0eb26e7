"""Plate device memory for torch: the runtime the C++ allocator calls, and torch.cuda-style statistics.

The C++ allocator (csrc/allocator.cpp) calls this module, with the GIL, from whatever thread
allocates: ``alloc`` takes the bytes from the simulator's DeviceMemory (so Triton launches and
torch tensors share one memory, every access is bounds-checked and every byte has a home domain)
under the placement of the calling context (placement.py). The simulator device's lock guards the
allocation table, which launches read.

Under PLATE_SANITIZE=init a new allocation is poisoned (0xFF bytes, its writes tracked: sim/memory.py),
and the C++ side reports the bytes torch writes from the host (copies, in-place ops) through ``wrote``.
"""

from __future__ import annotations

import gc

from .. import knobs
from ..errors import DeviceOutOfMemory
from . import _registration
from .devices import device_index
from .placement import current_placement, placement_chosen

_homes: dict[int, object] = {}  # address -> the sim Device that owns it (survives sim.device.reset_device)
_alloc_retries: dict[int, int] = {}  # device index -> allocations retried after a garbage collection


def _device(index: int):
    from ..sim.device import get_device

    return get_device(index)


# ---- the runtime the C++ side calls (names and signatures fixed by csrc/runtime.cpp) -------------------
def alloc(nbytes: int, device: int) -> int | str:
    """Base address of ``nbytes`` new zeroed device bytes, or the out-of-memory message (C++ raises
    torch.OutOfMemoryError with it). On out of memory it runs the cycle collector once and retries:
    tensors kept only by a reference cycle (a user's, or a library's) are garbage whose bytes a full
    device needs now, not when the collector next happens to run."""
    dev = _device(device)
    place = current_placement(nbytes)
    poison = "init" in knobs.sanitize()
    if poison:
        _registration.extension()._track_host_writes(True)
    try:
        return _alloc(dev, nbytes, place, poison)
    except DeviceOutOfMemory:
        pass
    _alloc_retries[dev.index] = _alloc_retries.get(dev.index, 0) + 1
    gc.collect()  # outside the device lock: the collected tensors' frees take it
    try:
        return _alloc(dev, nbytes, place, poison)
    except DeviceOutOfMemory as err:
        return f"plate:{device}: {err}"


def _alloc(dev, nbytes: int, place, poison: bool) -> int:
    with dev._lock:
        rec = dev.memory.alloc(nbytes, place, label="torch", poison=poison)
        rec.pinned = placement_chosen()  # inside torch.plate.placement(): launches keep it where it is
        _homes[rec.base] = dev
    return rec.base


def free(addr: int, device: int) -> None:
    dev = _homes.pop(addr, None) or _device(device)
    with dev._lock:
        dev.memory.free(addr)


def wrote(addr: int, nbytes: int, device: int) -> None:
    """Torch wrote device bytes [addr, addr + nbytes) from the host (only called while poisoned
    allocations may exist): they count as initialised for the init sanitizer."""
    dev = _homes.get(addr) or _device(device)
    with dev._lock:
        dev.memory.mark_written(addr, nbytes)


def now_ns(device: int) -> float:
    return float(_device(device).now_ns())


def mem_info(device: int) -> tuple[int, int]:
    memory = _device(device).memory
    total = int(memory.capacity.sum())
    return total - memory.memory_allocated(), total


def covers(device: int, addr: int, nbytes: int) -> bool:
    return _device(device).covers(addr, nbytes)


def device_count() -> int:
    from ..sim.device import device_count as count

    return count()


# ---- torch.plate memory statistics --------------------------------------------------------------------
def memory_allocated(device=None) -> int:
    """Bytes of device memory held by plate tensors now, every copy of a replicated one counted."""
    index = device_index(device)
    return _registration.extension()._memory_counters(index)[0] + _device(index).memory.copy_bytes


def max_memory_allocated(device=None) -> int:
    """Peak of memory_allocated since the start or the last reset_peak_memory_stats (the copies of replicated
    tensors add their own peak: exact while they are made once, like a model's weights, else an upper bound)."""
    index = device_index(device)
    return _registration.extension()._memory_counters(index)[1] + _device(index).memory.copy_peak


def memory_reserved(device=None) -> int:
    """No caching allocator: reserved equals allocated."""
    return memory_allocated(device)


def max_memory_reserved(device=None) -> int:
    return max_memory_allocated(device)


def reset_peak_memory_stats(device=None) -> None:
    index = device_index(device)
    _registration.extension()._reset_peak(index)
    dev = _device(index)
    with dev._lock:
        dev.memory.reset_peak()


def reset_accumulated_memory_stats(device=None) -> None:
    index = device_index(device)
    _registration.extension()._reset_accumulated(index)
    _alloc_retries.pop(index, None)


def empty_cache() -> None:
    """Nothing is cached: freed tensors return their bytes to the device at once."""


def mem_get_info(device=None) -> tuple[int, int]:
    """(free, total) bytes of the device's HBM, all domains."""
    return mem_info(device_index(device))


def memory_stats(device=None) -> dict:
    """torch.cuda.memory_stats-style keys for the tensors, plus ``device.*``: the simulator's accounting
    of ALL device memory (tensors and anything else) per NUMA domain."""
    index = device_index(device)
    allocated, peak, num_allocs, num_frees, num_ooms = _registration.extension()._memory_counters(index)
    allocated, peak = memory_allocated(index), max_memory_allocated(index)  # with the replicas' copies
    stats = {
        "allocated_bytes.all.current": allocated,
        "allocated_bytes.all.peak": peak,
        "reserved_bytes.all.current": allocated,
        "reserved_bytes.all.peak": peak,
        "active_bytes.all.current": allocated,
        "active_bytes.all.peak": peak,
        "num_device_alloc": num_allocs,
        "num_device_free": num_frees,
        "num_alloc_retries": _alloc_retries.get(index, 0),
        "num_ooms": num_ooms,
    }
    dev = _device(index)
    with dev._lock:
        stats.update({f"device.{k}": v for k, v in dev.memory.memory_stats().items()})
    return dict(sorted(stats.items()))
