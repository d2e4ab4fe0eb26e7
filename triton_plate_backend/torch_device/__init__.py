"""torch.plate: the PLATE accelerator as a PyTorch device ("plate", PyTorch's PrivateUse1 renamed).

Importing this package registers the device; so does `import torch` itself, through the
`torch.backends` entry point (``_autoload``). Then::

    x = torch.randn(1024, device="plate")        # lives in the simulator's device memory
    with torch.plate.placement("local", domain=2):
        y = torch.empty(4096, device="plate")    # every byte in domain 2
    torch.plate.home_domains(y)                  # {2: 16384}

The API mirrors torch.cuda (device selection, memory statistics, seeds, Stream/Event on the modeled
clock) plus plate's own: ``placement``, ``home_domains``, ``migrate``, ``last_profile``. Layers, top down: this
package -> the C++ extension (csrc/: allocator, device guard, hooks, kernels, CPU fallback) -> the
simulator's Device and DeviceMemory (sim/).
"""

from __future__ import annotations

import sys

import torch

from .. import shims
from . import _registration, accumulation, compiler_hooks, memory, rng
from .devices import (
    PlateDeviceProperties,
    _DeviceGuard,  # noqa: F401 - entered by Inductor's wrapper code, as torch.cuda._DeviceGuard
    current_device,
    device,
    device_count,
    device_index,
    device_of,
    get_device_capability,
    get_device_name,
    get_device_properties,
    is_available,
    set_device,
    synchronize,
)
from .host_op_counter import host_op_scope, host_ops, reset_host_ops
from .memory import (
    empty_cache,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_stats,
    reset_accumulated_memory_stats,
    reset_peak_memory_stats,
)
from .placement import current_placement, home_domains, migrate, migration_cost_ns, placement, placement_of
from .rng import (
    default_generator,
    get_rng_state,
    get_rng_state_all,
    initial_seed,
    manual_seed,
    manual_seed_all,
    seed,
    seed_all,
    set_rng_state,
    set_rng_state_all,
)
from .streams import Event, Stream, StreamContext, current_stream, default_stream, set_stream, stream

__all__ = [
    "Event",
    "PlateDeviceProperties",
    "Stream",
    "StreamContext",
    "current_device",
    "current_placement",
    "current_stream",
    "default_generator",
    "default_generators",
    "default_stream",
    "device",
    "device_count",
    "device_index",
    "device_of",
    "empty_cache",
    "get_amp_supported_dtype",
    "get_device_capability",
    "get_device_name",
    "get_device_properties",
    "get_rng_state",
    "get_rng_state_all",
    "home_domains",
    "host_op_scope",
    "host_ops",
    "init",
    "initial_seed",
    "is_available",
    "is_bf16_supported",
    "is_initialized",
    "last_profile",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "max_memory_reserved",
    "mem_get_info",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "migrate",
    "migration_cost_ns",
    "placement",
    "placement_of",
    "reset_accumulated_memory_stats",
    "reset_host_ops",
    "reset_peak_memory_stats",
    "seed",
    "seed_all",
    "set_device",
    "set_rng_state",
    "set_rng_state_all",
    "set_stream",
    "stream",
    "synchronize",
]


def is_initialized() -> bool:
    return True  # nothing to initialise lazily on the torch side


def init() -> None:
    """Nothing to do: the simulated device is built on first use."""


def _is_in_bad_fork() -> bool:
    return False  # the simulator is plain Python state: a forked child may use it


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return True


def get_amp_supported_dtype() -> list[torch.dtype]:
    return [torch.float16, torch.bfloat16]


def last_profile(device=None):
    """The Profile of the last kernel launch on the device (cycles, bytes per domain, ...), or None."""
    from ..sim.device import get_device

    return get_device(device_index(device)).last_profile


def __getattr__(name):
    """``default_generators``: the tuple of every device's generator, as torch.cuda's. Inductor's PrivateUse1
    discovery asks torch.plate for Scheduling, PythonWrapperCodegen, ... on the
    first compile, Dynamo's device registry for DeviceInterface: the answers are what the Inductor
    integration registered (compiler_hooks)."""
    if name in compiler_hooks.INDUCTOR_NAMES:
        return compiler_hooks.inductor_answer(name)
    if name == "default_generators":  # torch.cuda.default_generators: one per device, built on first use
        return rng.default_generators()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _autoload() -> None:
    """The `torch.backends` entry point: importing this package already registered plate."""
    if _extension is None:  # torch is autoloading a broken build: importing the package again must raise
        _registration.forget(__name__)


_extension = _registration.load_extension()
if _extension is not None:
    _registration.register(sys.modules[__name__], memory, _extension)
    shims.install("device")  # Dynamo's device registry asks torch.plate too; flex_attention takes plate tensors
    accumulation.register()  # eager fp16/bf16 reductions, norms, softmax and matmuls accumulate as on CUDA
