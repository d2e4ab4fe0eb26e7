"""Device selection for torch.plate, as in torch.cuda: count, current device, the device() context.

The current device lives in C++ (thread-local, what torch's device guard changes) and is mirrored
into the simulator's current device (what Triton's driver asks), so both sides agree.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..device_properties import device_answers
from ..sim.device import DeviceError
from . import _registration

_ext = _registration.extension


def device_index(device=None) -> int:
    """The plate device index meant by ``device``: None (current), an int, "plate", "plate:1" or a torch.device."""
    if device is None:
        return current_device()
    if isinstance(device, int):
        return device
    dev = torch.device(device)
    if dev.type != _registration.BACKEND:
        raise DeviceError(f"expected a plate device (an index, 'plate', 'plate:i'), got {dev}")
    return current_device() if dev.index is None else dev.index


def is_available() -> bool:
    return device_count() > 0


def device_count() -> int:
    return _ext()._device_count()


def current_device() -> int:
    return _ext()._current_device()


def set_device(device) -> None:
    from ..sim.device import set_current_device

    index = device_index(device)
    if index < 0:
        return
    _ext()._set_device(index)
    set_current_device(index)


def synchronize(device=None) -> None:
    """Launches are synchronous on the simulator: returns at once (kept for the torch.cuda shape)."""
    from ..sim.device import get_device

    get_device(device_index(device)).synchronize()


class device:
    """Context manager that makes ``device`` (index, "plate:i" or torch.device; None: no change) current."""

    def __init__(self, device):
        self.index = -1 if device is None else device_index(device)
        self.previous = -1

    def __enter__(self):
        self.previous = current_device()
        if self.index >= 0 and self.index != self.previous:
            set_device(self.index)
        return self

    def __exit__(self, *exc):
        if self.index >= 0 and self.index != self.previous:
            set_device(self.previous)
        return False


class _DeviceGuard(device):
    """torch.cuda._DeviceGuard's counterpart, which Inductor's wrapper code enters: an integer index only."""

    def __init__(self, index: int):
        super().__init__(int(index))


class device_of(device):
    """Context manager that makes the device of ``obj`` (a plate tensor) current; a CPU tensor changes nothing."""

    def __init__(self, obj):
        super().__init__(obj.get_device() if obj.device.type == _registration.BACKEND else None)


@dataclass(frozen=True)
class PlateDeviceProperties:
    """What torch.plate.get_device_properties returns: the CUDA-shaped fields Triton and Inductor read,
    from the machine description (PLATE.md), plus PLATE's own."""

    name: str
    machine: str
    total_memory: int  # bytes of HBM, all domains
    multi_processor_count: int  # cores
    major: int
    minor: int
    warp_size: int
    max_threads_per_block: int
    max_threads_per_multi_processor: int
    regs_per_multiprocessor: int  # scalar registers x lanes (device_properties says why)
    clock_rate: int  # kHz
    domains: int
    cores_per_domain: int
    sram_bytes: int  # scratchpad per core
    hbm_bytes_per_domain: int
    # CUDA's shared-memory fields (what a kernel's `shared` may use: one core's SRAM, device_properties'
    # max_shared_mem); libraries size their pipelines by them (triton_kernels' matmul: shared_memory_per_block_optin)
    shared_memory_per_block: int
    shared_memory_per_block_optin: int
    shared_memory_per_multiprocessor: int


def get_device_properties(device=None) -> PlateDeviceProperties:
    from ..sim.device import get_device

    m = get_device(device_index(device)).machine
    a = device_answers(m)
    return PlateDeviceProperties(
        name=f"PLATE {m.name}",
        machine=m.name,
        total_memory=m.domain.hbm_bytes * m.total_domains,
        multi_processor_count=a.multiprocessor_count,
        major=1,
        minor=0,
        warp_size=a.warp_size,
        max_threads_per_block=a.max_threads_per_block,
        max_threads_per_multi_processor=a.max_threads_per_multiprocessor,
        regs_per_multiprocessor=a.regs_per_multiprocessor,
        clock_rate=a.clock_khz,
        domains=m.total_domains,
        cores_per_domain=m.domain.cores,
        sram_bytes=m.core.sram_bytes,
        hbm_bytes_per_domain=m.domain.hbm_bytes,
        shared_memory_per_block=a.max_shared_mem,
        shared_memory_per_block_optin=a.max_shared_mem,
        shared_memory_per_multiprocessor=a.max_shared_mem,
    )


def get_device_name(device=None) -> str:
    return get_device_properties(device).name


def get_device_capability(device=None) -> tuple[int, int]:
    props = get_device_properties(device)
    return props.major, props.minor
