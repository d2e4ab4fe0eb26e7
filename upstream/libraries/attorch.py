"""pytest plugin for attorch's tests (`-p upstream.libraries.attorch`): CUDA is the run's device.

attorch (and its tests) name CUDA wherever they name a device: ``device='cuda'`` in its factories and
module constructors, ``torch.autocast('cuda')`` and ``custom_fwd/custom_bwd(device_type='cuda')``,
``torch.get_autocast_dtype('cuda')`` and ``torch.is_autocast_enabled()`` (no argument: CUDA's state), and
``torch.cuda.get_device_capability()`` (TF32 and pipelining choices). There is no device function to answer
(Liger's infer_device) and no vendor table (FlagGems'): in the test process, each of those names of CUDA
means the run's device (``--lib-device``):

- ``device_type_mode``: a TorchFunctionMode that rewrites a ``device`` argument naming cuda (a string or a
  torch.device; ``Tensor.to``'s positional device too) to the device, index kept;
- ``patch_autocast``: ``torch.autocast`` (torch.amp.autocast, the class custom_bwd enters) with device_type
  'cuda' is the device's autocast;
- ``patch_autocast_state``: ``torch.is_autocast_enabled`` and ``torch.get_autocast_dtype`` asked about cuda
  (or, for is_autocast_enabled, about nothing) answer the device's state;
- ``patch_capability``: ``torch.cuda.get_device_capability`` answers ``torch.<device>``'s.

Each patch is entered once, before the test modules import attorch, for the whole run.
"""

from __future__ import annotations

import contextlib
import functools

import pytest

CUDA = "cuda"


def device_type_of(name: str, device: str) -> str:
    """`name` with the cuda device type replaced by `device` ('cuda:1' -> 'plate:1'); anything else as is."""
    if name == CUDA or name.startswith(CUDA + ":"):
        return device + name[len(CUDA) :]
    return name


def map_device(value, device: str):
    """A device argument (str or torch.device) naming cuda, as the run's device; anything else unchanged."""
    import torch

    if isinstance(value, str):
        return device_type_of(value, device)
    if isinstance(value, torch.device) and value.type == CUDA:
        return torch.device(device, value.index)
    return value


def device_type_mode(device: str):
    """A TorchFunctionMode whose functions see `device` wherever their `device` argument names cuda."""
    import torch
    from torch.overrides import TorchFunctionMode

    class CudaIsDevice(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if "device" in kwargs:
                kwargs["device"] = map_device(kwargs["device"], device)
            if func is torch.Tensor.to and len(args) > 1:  # Tensor.to(device, ...): the device positional
                args = (args[0], map_device(args[1], device), *args[2:])
            return func(*args, **kwargs)

    return CudaIsDevice()


def patch_autocast(device: str) -> None:
    """torch.autocast('cuda', ...) (and every alias of torch.amp.autocast) is the device's autocast."""
    from torch.amp import autocast_mode

    init = autocast_mode.autocast.__init__
    if getattr(init, "_attorch_device", None) == device:
        return

    @functools.wraps(init)
    def __init__(self, device_type, *args, **kwargs):
        named = device_type_of(device_type, device) if isinstance(device_type, str) else device_type
        init(self, named, *args, **kwargs)

    __init__._attorch_device = device
    autocast_mode.autocast.__init__ = __init__


def patch_autocast_state(device: str) -> None:
    """torch.is_autocast_enabled(['cuda']) and torch.get_autocast_dtype('cuda') answer for the device."""
    import torch

    is_enabled, get_dtype = torch.is_autocast_enabled, torch.get_autocast_dtype
    if getattr(is_enabled, "_attorch_device", None) == device:
        return

    def is_autocast_enabled(device_type: str | None = None) -> bool:
        return is_enabled(device if device_type is None else device_type_of(device_type, device))

    def get_autocast_dtype(device_type: str):
        return get_dtype(device_type_of(device_type, device))

    is_autocast_enabled._attorch_device = get_autocast_dtype._attorch_device = device
    torch.is_autocast_enabled, torch.get_autocast_dtype = is_autocast_enabled, get_autocast_dtype


@contextlib.contextmanager
def cuda_answers(device: str, name: str):
    """Within: torch.cuda.<name>() answers torch.<device>.<name>() (a library that asks CUDA while it imports)."""
    import torch

    saved = getattr(torch.cuda, name)
    setattr(torch.cuda, name, getattr(getattr(torch, device), name))
    try:
        yield
    finally:
        setattr(torch.cuda, name, saved)


def patch_capability(device: str) -> None:
    """torch.cuda.get_device_capability(d) answers torch.<device>.get_device_capability(d), a device argument
    naming cuda ("cuda", torch.device("cuda", 0): flash-attention's tests ask at import) mapped to the device."""
    import torch

    module = getattr(torch, device, None)
    if module is None or not callable(getattr(module, "get_device_capability", None)):
        raise pytest.UsageError(f"torch.{device} has no get_device_capability: is the device registered?")
    if getattr(torch.cuda.get_device_capability, "_attorch_device", None) == device:
        return

    @functools.wraps(module.get_device_capability)
    def get_device_capability(dev=None):
        return module.get_device_capability(None if dev is None else map_device(dev, device))

    get_device_capability._attorch_device = device
    torch.cuda.get_device_capability = get_device_capability


def cuda_is(device: str):
    """Every patch of this module, for `device`; returns the entered TorchFunctionMode."""
    patch_autocast(device)
    patch_autocast_state(device)
    patch_capability(device)
    mode = device_type_mode(device)
    mode.__enter__()
    return mode


def pytest_configure(config):
    """After library_plugin registered the device, before the test modules import attorch."""
    device = config.getoption("lib_device", None)
    if device:
        config._attorch_mode = cuda_is(device)
