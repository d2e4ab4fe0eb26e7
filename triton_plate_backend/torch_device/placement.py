"""Where plate tensors live: the placement of new allocations, and the home domains of a tensor.

`torch.plate.placement(...)` sets, for the code inside it (per thread and per asyncio task: a
contextvar), the PLATE.md placement mode of every tensor allocated there. Outside any such block
tensors are `interleaved` over the chip's domains, the simulator's default.
"""

from __future__ import annotations

import contextlib
import contextvars

import numpy as np
import torch

from ..sim.memory import Placement
from .devices import device_index

_current: contextvars.ContextVar[Placement | None] = contextvars.ContextVar("plate_placement", default=None)


def current_placement() -> Placement:
    """The placement new plate tensors get here (interleaved unless a placement() block says otherwise)."""
    return _current.get() or Placement()


@contextlib.contextmanager
def placement(mode: str = "interleaved", domain: int | None = None, domains=None, device=None):
    """Allocate the plate tensors made inside the block with this placement.

    mode: "interleaved" (4 KiB stripes round robin over ``domains``, default all of chip 0's),
    "local" (all in ``domain``, default 0), "blocked" (one contiguous chunk per domain of
    ``domains``), "explicit" (``domain`` or ``domains`` named). Checked against the machine of
    ``device`` (default: the current plate device) on entry."""
    from ..sim.device import get_device

    place = Placement(mode, domain, tuple(domains) if domains is not None else None)
    place.owners(get_device(device_index(device)).machine)  # a bad domain fails here, not at the first allocation
    token = _current.set(place)
    try:
        yield place
    finally:
        _current.reset(token)


def home_domains(tensor: torch.Tensor) -> dict[int, int]:
    """Bytes of ``tensor``'s memory span (first to last element) per home domain, domains with none left out."""
    from ..sim.device import DeviceError, get_device
    from ..sim.memory import AllocationError

    if tensor.device.type != "plate":
        raise DeviceError(f"home_domains: the tensor is on {tensor.device}, not a plate device; move it with .plate()")
    if tensor.numel() == 0:
        return {}
    span = 1 + sum((s - 1) * st for s, st in zip(tensor.shape, tensor.stride()))
    lo = tensor.data_ptr()
    hi = lo + span * tensor.element_size()
    dev = get_device(tensor.device.index or 0)
    with dev._lock:  # the device's lock also serialises launches: the allocation table stays still
        pos = int(dev.memory.span_positions(np.array([lo]), np.array([hi]))[0])
        if pos < 0:
            raise AllocationError(
                f"home_domains: bytes [{lo:#x}, {hi:#x}) of the tensor are not inside one live allocation of {dev}"
            )
        rec = dev.memory.live(pos)
        per_owner = rec.split(np.array([lo - rec.base]), np.array([hi - rec.base]))[0]
    out: dict[int, int] = {}
    for owner, nbytes in zip(rec.owners, per_owner):
        if nbytes > 0:
            out[owner] = out.get(owner, 0) + int(nbytes)
    return dict(sorted(out.items()))
