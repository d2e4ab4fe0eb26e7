"""PlateInterface: the Dynamo/Inductor DeviceInterface of the plate device.

Dynamo and Inductor reach a device's runtime only through this class (device guards, streams,
events, properties, the compute capability that becomes the Triton target's arch). Everything
delegates to torch.plate (triton_plate_backend.torch_device); the properties come from the machine
description, with the CUDA-shaped names Inductor reads.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch._dynamo import device_interface as dynamo_devices

import triton_plate_backend.torch_device  # noqa: F401  (registers torch.plate, which this module reads)
from triton_plate_backend.errors import PlateError
from triton_plate_backend.target import BACKEND, PLATE_ARCH, WARP_SIZE


class TritonUnavailable(PlateError, RuntimeError):
    """Triton cannot compile for plate in this process (plugin missing or another backend selected)."""


@dataclass(frozen=True)
class PlateInductorProperties:
    """What Inductor reads of a device (CUDA's field names), from the machine description.

    multi_processor_count is the honest core count (32 on plate1, 8 on plate-mini): Inductor sizes
    grids and split reductions with it. Its GEMM templates also want >= 68 "SMs" (is_big_gpu);
    plate answers that question by policy instead (shims.py), so no count is inflated here."""

    name: str
    machine: str
    major: int
    minor: int
    multi_processor_count: int  # cores, all chips
    warp_size: int
    max_threads_per_block: int
    max_threads_per_multi_processor: int
    regs_per_multiprocessor: int  # scalar registers x lanes (triton_plate_backend.device_properties)
    shared_memory_per_block: int  # SRAM of one core
    shared_memory_per_block_optin: int
    total_memory: int  # HBM bytes, all domains
    clock_rate: int  # kHz
    domains: int
    cores_per_domain: int
    sram_bytes: int


def _index(device) -> int:
    if device is None:
        return torch.plate.current_device()
    if isinstance(device, int):
        return device
    device = torch.device(device)
    if device.type != BACKEND:
        raise ValueError(f"expected a plate device, got {device}")
    return torch.plate.current_device() if device.index is None else device.index


def device_properties(device=None) -> PlateInductorProperties:
    props = torch.plate.get_device_properties(_index(device))
    return PlateInductorProperties(
        name=props.name,
        machine=props.machine,
        major=PLATE_ARCH,
        minor=0,
        multi_processor_count=props.multi_processor_count,
        warp_size=WARP_SIZE,
        max_threads_per_block=props.max_threads_per_block,
        max_threads_per_multi_processor=props.max_threads_per_multi_processor,
        regs_per_multiprocessor=props.regs_per_multiprocessor,
        shared_memory_per_block=props.sram_bytes,
        shared_memory_per_block_optin=props.sram_bytes,
        total_memory=props.total_memory,
        clock_rate=props.clock_rate,
        domains=props.domains,
        cores_per_domain=props.cores_per_domain,
        sram_bytes=props.sram_bytes,
    )


class PlateInterface(dynamo_devices.DeviceInterface):
    device = torch.plate.device  # type: ignore[assignment]
    Event = torch.plate.Event  # type: ignore[assignment]  # records the modeled clock
    Stream = torch.plate.Stream  # type: ignore[assignment]

    class Worker:
        """Properties recorded in the main process, readable in compile workers without a device."""

        @staticmethod
        def set_device(device: int) -> None:
            dynamo_devices.caching_worker_current_devices[BACKEND] = device

        @staticmethod
        def current_device() -> int:
            if BACKEND in dynamo_devices.caching_worker_current_devices:
                return dynamo_devices.caching_worker_current_devices[BACKEND]
            return torch.plate.current_device()

        @staticmethod
        def get_device_properties(device=None) -> PlateInductorProperties:
            """Read afresh (cheap: a record built from the machine description), so a device rebuilt
            for another machine preset is seen; stored where forked compile workers read it."""
            index = PlateInterface.Worker.current_device() if device is None else _index(device)
            props = [device_properties(i) for i in range(torch.plate.device_count())]
            dynamo_devices.caching_worker_device_properties[BACKEND] = props
            return props[index]

    @staticmethod
    def current_device() -> int:
        return torch.plate.current_device()

    @staticmethod
    def set_device(device) -> None:
        torch.plate.set_device(device)

    @staticmethod
    def exchange_device(device: int) -> int:
        previous = torch.plate.current_device()
        if device >= 0 and device != previous:
            torch.plate.set_device(device)
        return previous

    maybe_exchange_device = exchange_device  # the simulator needs no lazy init: same as exchange

    @staticmethod
    def device_count() -> int:
        return torch.plate.device_count()

    @staticmethod
    def is_available() -> bool:
        return torch.plate.is_available()

    @staticmethod
    def stream(stream: torch.Stream):
        return torch.plate.stream(stream)

    @staticmethod
    def current_stream() -> torch.Stream:
        return torch.plate.current_stream()

    @staticmethod
    def set_stream(stream: torch.Stream) -> None:
        torch.plate.set_stream(stream)

    @staticmethod
    def _set_stream_by_id(stream_id: int, device_index: int, device_type: int) -> None:
        stream = torch.plate.Stream(stream_id=stream_id, device_index=device_index, device_type=device_type)
        torch.plate.set_stream(stream)

    @staticmethod
    def get_raw_stream(device_idx: int) -> int:
        return torch.plate.current_stream(device_idx).stream_id

    @staticmethod
    def synchronize(device=None) -> None:
        torch.plate.synchronize(device)

    @classmethod
    def get_device_properties(cls, device=None) -> PlateInductorProperties:
        return cls.Worker.get_device_properties(device)

    @staticmethod
    def get_compute_capability(device=None) -> int:
        """The Triton target's arch (GPUTarget("plate", arch, 32)): the PLATE ISA version."""
        return PLATE_ARCH

    @staticmethod
    def is_bf16_supported(including_emulation: bool = False) -> bool:
        return True

    @staticmethod
    def memory_allocated(device=None) -> int:
        return torch.plate.memory_allocated(device)

    @staticmethod
    def is_triton_capable(device=None) -> bool:
        return True  # every plate kernel is a Triton kernel

    @classmethod
    def raise_if_triton_unavailable(cls, device=None) -> None:
        import triton.backends

        if BACKEND not in triton.backends.backends:
            raise TritonUnavailable(
                "Triton has no plate backend: the triton.backends entry point of triton_plate_backend is not "
                "installed (pip install -e . in the plate repository), or TRITON_BACKENDS_IN_TREE=1 hides it"
            )
        from triton.runtime.driver import driver

        backend = driver.active.get_current_target().backend
        if backend != BACKEND:
            raise TritonUnavailable(
                f"Triton's active driver is {backend!r}, not plate: set TRITON_DEFAULT_BACKEND=plate before "
                "importing triton"
            )
