"""Inductor's compile workers follow the machine preset: a graph's kernels compile for the preset of the process.

Inductor compiles Triton kernels in a pool of worker processes, which take the environment of the moment the pool
started; plate's backend reads the machine preset (PLATE_MACHINE, triton_plate_backend.knobs) in the process that
compiles, and it is part of the kernel (its launch checks it against the device's). A process that switches
presets after the pool started (reset_device under another PLATE_MACHINE: tests of plate-mini, then plate1) would
have its workers compile for the old one, and the launch fails ("compiled for machine 'plate-mini' but device 0
runs 'plate1'"). ``follow_machine()``, called before each graph's kernels are generated (scheduling.py) and after
every device reset (the switch itself: a graph served whole from Inductor's caches schedules nothing), shuts the
pool down when the preset differs from the previous one; the next compile starts workers with the environment as it
is. The first "previous one" is the preset when the integration registered (``watch()``), before Dynamo's first
compile warms the pool: a process whose first graphs schedule no kernel would otherwise have no record, and its
first switch would keep a pool started under the old preset. The same switch empties Inductor's in-process caches
keyed by kernel source, which names no preset: compiled Triton kernels, loaded wrapper modules, and the device
properties the generated code reads.
"""

from __future__ import annotations

import threading

from triton_plate_backend import knobs

_lock = threading.Lock()
_machine: str | None = None  # the preset the last graph compiled for (at first: the one at registration)


def watch() -> None:
    """Record the preset of the moment and follow every device reset from now on."""
    global _machine
    from triton_plate_backend.sim import device as sim_device

    with _lock:
        _machine = knobs.machine()
    sim_device.on_reset(follow_machine)


def follow_machine() -> bool:
    """Stop the compile workers if the preset changed since the last graph; True when it did."""
    global _machine
    machine = knobs.machine()
    with _lock:
        previous, _machine = _machine, machine
    if previous is None or previous == machine:
        return False
    from torch._inductor import async_compile, utils
    from torch._inductor.codecache import PyCodeCache
    from torch._inductor.runtime.hints import DeviceProperties

    async_compile.shutdown_compile_workers()
    async_compile.CompiledTritonKernels.cache_clear()
    PyCodeCache.cache_clear(purge=False)
    DeviceProperties.create.cache_clear()
    utils.clear_caches()  # what fresh_cache() clears: the template choices' generated and precompiled code
    return True
