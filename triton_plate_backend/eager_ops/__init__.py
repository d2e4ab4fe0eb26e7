"""plate's eager kernels: aten ops on plate tensors run as Triton kernels compiled by plate's backend
and executed on the simulator (modeled and counted as device work, like CUDA's eager kernels) instead
of the host's CPU kernels.

``register()`` puts the table (table.py) on the PrivateUse1 dispatch key through torch.library. It
runs when torch autoloads plate (the ``torch.backends`` entry point, autoload.py: the device first,
then these kernels) and may be called again (idempotent), e.g. after ``import
triton_plate_backend.torch_device`` with torch's autoload off. Registering imports torch and the
torch device only; each Triton kernel compiles on its first call and is cached as Triton caches
kernels."""

from __future__ import annotations

# torch first: its autoload (autoload.py) imports .registry, which must not find this package half-way
import torch  # noqa: F401

from .registry import FAMILIES, register, registered

__all__ = ["FAMILIES", "register", "registered"]
