"""The lines of Python that Inductor's generated wrapper code writes for plate's runtime.

Inductor pastes these strings into the wrapper module of every compiled graph (device guards, stream
lookup, synchronization), so each must stand alone as Python that runs with `torch` imported.
"""

from __future__ import annotations

from torch._inductor.codegen.common import DeviceOpOverrides


def get_raw_stream(device_index: int) -> int:
    """The raw stream handle of the current plate stream (what the generated code passes to
    launches; the launcher runs every launch to completion, in order, whatever the stream)."""
    import torch

    return torch.plate.current_stream(device_index).stream_id


class PlateDeviceOpOverrides(DeviceOpOverrides):
    def import_get_raw_stream_as(self, name: str) -> str:
        return f"from inductor_plate.op_overrides import get_raw_stream as {name}"

    def set_device(self, device_idx: int) -> str:
        return f"torch.plate.set_device({device_idx})"

    def synchronize(self) -> str:
        return "torch.plate.synchronize()"

    def device_guard(self, device_idx: int) -> str:
        return f"torch.plate._DeviceGuard({device_idx})"

    def current_stream(self) -> str:
        return "torch.plate.current_stream()"
