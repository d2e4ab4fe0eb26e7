"""Where plate tensors live: the placement of new allocations, the home domains of a tensor, and
moving a tensor to another placement.

`torch.plate.placement(...)` sets, for the code inside it (per thread and per asyncio task: a
contextvar), the PLATE.md placement mode of every tensor allocated there. Outside any such block a
tensor gets the default (sim.memory.default_placement, docs/placement.md): `blocked` over the chip's
domains when it is large, `interleaved` when small. `torch.plate.migrate(t, ...)` gives a tensor's
memory a new placement in place and charges the copy to the modeled clock (cost.migration_cycles).
"""

from __future__ import annotations

import contextlib
import contextvars

import numpy as np
import torch

from .. import cost
from ..sim.memory import Placement, default_placement
from .devices import device_index

_current: contextvars.ContextVar[Placement | None] = contextvars.ContextVar("plate_placement", default=None)


def current_placement(nbytes: int | None = None) -> Placement:
    """The placement a new plate tensor of ``nbytes`` bytes gets here: the innermost placement() block's,
    else the default for its size (interleaved when the size is not given)."""
    chosen = _current.get()
    if chosen is not None:
        return chosen
    return default_placement(nbytes) if nbytes is not None else Placement()


def placement_chosen() -> bool:
    """True inside a placement() block: the placement of a new tensor is the user's (or a compiler's) choice."""
    return _current.get() is not None


@contextlib.contextmanager
def placement(mode: str = "interleaved", domain: int | None = None, domains=None, device=None):
    """Allocate the plate tensors made inside the block with this placement.

    mode: "interleaved" (4 KiB stripes round robin over ``domains``, default all of chip 0's),
    "local" (all in ``domain``, default 0), "blocked" (one contiguous chunk per domain of
    ``domains``), "explicit" (``domain`` or ``domains`` named), "replicated" (a copy in each of
    chip 0's domains: reads are local, a write updates every copy; memory counts every copy).
    Checked against the machine of ``device`` (default: the current plate device) on entry."""
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
        if rec.replicas:  # a copy of every byte in each domain
            return {d: hi - lo for d in rec.replicas}
        per_owner = rec.split(np.array([lo - rec.base]), np.array([hi - rec.base]))[0]
    out: dict[int, int] = {}
    for owner, nbytes in zip(rec.owners, per_owner):
        if nbytes > 0:
            out[owner] = out.get(owner, 0) + int(nbytes)
    return dict(sorted(out.items()))


def placement_of(tensor: torch.Tensor) -> str:
    """The placement mode of ``tensor``'s storage ("interleaved", "blocked", "replicated", ...)."""
    _, rec = _allocation(tensor, "placement_of")
    return rec.placement.mode


def _allocation(tensor: torch.Tensor, what: str):
    """(device, live allocation) holding ``tensor``'s storage."""
    from ..sim.device import DeviceError, get_device
    from ..sim.memory import AllocationError

    if tensor.device.type != "plate":
        raise DeviceError(f"{what}: the tensor is on {tensor.device}, not a plate device; move it with .plate()")
    dev = get_device(tensor.device.index or 0)
    base = tensor.untyped_storage().data_ptr()
    rec = dev.memory.holding(base)
    if rec is None:
        raise AllocationError(f"{what}: the tensor's storage at {base:#x} is not a live allocation of {dev}")
    return dev, rec


def migrate(tensor: torch.Tensor, mode: str = "blocked", domain: int | None = None, domains=None) -> torch.Tensor:
    """Move ``tensor``'s memory (its whole storage: views share it) to a new placement, in place, and
    return the tensor. The bytes that change home domain are copied by DMA: the copy's modeled time
    (cost.migration_cycles) advances the device clock, as a launch would. Arguments as in placement()."""
    place = Placement(mode, domain, tuple(domains) if domains is not None else None)
    dev, rec = _allocation(tensor, "migrate")
    with dev._lock:
        moved = dev.memory.migrate(rec.base, place)
        rec.pinned = True  # placed by the caller: launches keep it there
        cycles = cost.migration_cycles(dev.machine, moved)
        dev.advance_clock(cycles / dev.machine.clock_ghz)
    return tensor


def migration_cost_ns(tensor: torch.Tensor, mode: str = "blocked", domain: int | None = None, domains=None) -> float:
    """What ``migrate(tensor, ...)`` would charge, in modeled nanoseconds, without moving anything."""
    place = Placement(mode, domain, tuple(domains) if domains is not None else None)
    dev, rec = _allocation(tensor, "migration_cost_ns")
    with dev._lock:
        moved = dev.memory.moved_by(rec.base, place)
    return cost.migration_cycles(dev.machine, moved) / dev.machine.clock_ghz
