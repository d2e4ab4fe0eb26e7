"""Plate device memory for torch: the runtime the C++ allocator calls, and torch.cuda-style statistics.

The C++ allocator (csrc/allocator.cpp) calls this module, with the GIL, from whatever thread
allocates: ``alloc`` takes the bytes from the simulator's DeviceMemory (so Triton launches and
torch tensors share one memory, every access is bounds-checked and every byte has a home domain)
under the placement of the calling context (placement.py). The simulator device's lock guards the
allocation table, which launches read.
"""

from __future__ import annotations

from ..errors import DeviceOutOfMemory
from . import _registration
from .devices import device_index
from .placement import current_placement

_homes: dict[int, object] = {}  # address -> the sim Device that owns it (survives sim.device.reset_device)


def _device(index: int):
    from ..sim.device import get_device

    return get_device(index)


# ---- the runtime the C++ side calls (names and signatures fixed by csrc/runtime.cpp) -------------------
def alloc(nbytes: int, device: int) -> int | str:
    """Base address of ``nbytes`` new zeroed device bytes, or the out-of-memory message (C++ raises
    torch.OutOfMemoryError with it)."""
    dev = _device(device)
    place = current_placement(nbytes)
    with dev._lock:
        try:
            rec = dev.memory.alloc(nbytes, place, label="torch")
        except DeviceOutOfMemory as err:
            return f"plate:{device}: {err}"
        _homes[rec.base] = dev
    return rec.base


def free(addr: int, device: int) -> None:
    dev = _homes.pop(addr, None) or _device(device)
    with dev._lock:
        dev.memory.free(addr)


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
    """Bytes of device memory held by plate tensors now."""
    return _registration.extension()._memory_counters(device_index(device))[0]


def max_memory_allocated(device=None) -> int:
    """Peak of memory_allocated since the start or the last reset_peak_memory_stats."""
    return _registration.extension()._memory_counters(device_index(device))[1]


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
    _registration.extension()._reset_accumulated(device_index(device))


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
    stats = {
        "allocated_bytes.all.current": allocated,
        "allocated_bytes.all.peak": peak,
        "reserved_bytes.all.current": allocated,
        "reserved_bytes.all.peak": peak,
        "active_bytes.all.current": allocated,
        "active_bytes.all.peak": peak,
        "num_device_alloc": num_allocs,
        "num_device_free": num_frees,
        "num_alloc_retries": 0,
        "num_ooms": num_ooms,
    }
    dev = _device(index)
    with dev._lock:
        stats.update({f"device.{k}": v for k, v in dev.memory.memory_stats().items()})
    return dict(sorted(stats.items()))
