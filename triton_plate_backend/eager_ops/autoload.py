"""torch's device-backend autoload entry point (``torch.backends: plate``): the plate device, then its
eager kernels (eager_ops.register).

The device sits below the Triton backend and never imports it, so the hook that registers both lives
here, a floor up. Registering imports no Triton: the kernels compile on their first call."""

from __future__ import annotations

from .. import torch_device
from ..torch_device import autoload as device_autoload
from .registry import register


def autoload() -> None:
    device_autoload.autoload()
    if getattr(torch_device, "_extension", True) is not None:  # absent: half-imported, registering itself
        register()
