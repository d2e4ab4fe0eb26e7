"""pytest plugin for gemlite's tests (`-p upstream.libraries.gemlite`): CUDA is the run's device.

gemlite (quantized GEMM/GEMV kernels in Triton: fp16/bf16 activations, 1-8 bit and MXFP/NVFP weights) and its
tests name CUDA for their device: ``device='cuda:0'`` in the tests and the library's helpers, ``f"cuda:{i}"``
tables built at import for each of ``torch.cuda.device_count()`` devices (indexed by ``W_q.device.index``), and
``torch.cuda.get_device_properties("cuda" or 0)`` at import and at each call of some kernels (the SM count of
its persistent split-K grid, the name that picks a tuned config file and the fp16-accumulation and
shared-memory choices). In the test process each of those names of CUDA means the run's device
(``--lib-device``):

- ``device_type_mode`` (attorch's): a ``device`` argument naming cuda makes tensors on the device;
- ``patch_capability`` (attorch's): ``torch.cuda.get_device_capability()`` answers ``torch.<device>``'s;
- ``patch_device_properties``: ``torch.cuda.get_device_properties`` answers ``torch.<device>``'s, its
  device argument mapped as above;
- ``import_library``: gemlite is imported, and reloads its kernel modules (``set_autotune`` calls
  ``config.reload_all_modules``), while ``torch.cuda.device_count()`` answers the device's: the modules build
  their per-device tables then; otherwise it is CUDA's.

What torch itself asks stays CUDA's answer: ``torch.cuda.is_available()`` (False: the tests'
``is_fp8_supported()``, is_available and capability >= 8.9, is False, so their fp8 cases skip themselves),
``torch.cuda.current_device()`` (Inductor's cache key asks it, and takes no device name when it raises) and
``torch.cuda.empty_cache()`` (a no-op while CUDA is not initialized).
Each patch is entered once, before the test modules import gemlite, for the whole run.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import sys

import pytest

from .attorch import device_type_mode, map_device, patch_capability


def patch_device_properties(device: str) -> None:
    """torch.cuda.get_device_properties(d) answers torch.<device>.get_device_properties(d, cuda mapped to it)."""
    import torch

    module = getattr(torch, device, None)
    if module is None or not callable(getattr(module, "get_device_properties", None)):
        raise pytest.UsageError(f"torch.{device} has no get_device_properties: is the device registered?")
    if getattr(torch.cuda.get_device_properties, "_gemlite_device", None) == device:
        return

    @functools.wraps(module.get_device_properties)
    def get_device_properties(dev=None):
        return module.get_device_properties(None if dev is None else map_device(dev, device))

    get_device_properties._gemlite_device = device
    torch.cuda.get_device_properties = get_device_properties


@contextlib.contextmanager
def device_count_of(device: str):
    """Within: torch.cuda.device_count() answers torch.<device>.device_count()."""
    import torch

    count = torch.cuda.device_count
    torch.cuda.device_count = getattr(torch, device).device_count
    try:
        yield
    finally:
        torch.cuda.device_count = count


def import_library(device: str, name: str = "gemlite", reloader: str = "gemlite.triton_kernels.config"):
    """Import `name` with torch.cuda.device_count() the device's, and make `reloader`'s reload_all_modules (gemlite
    reloads its kernel modules, which rebuild the tables, at each set_autotune) do the same; returns the library."""
    with device_count_of(device):
        try:
            library = importlib.import_module(name)
        except ImportError as e:
            raise pytest.UsageError(
                f"{name} is not importable ({e}): put the checkout's top folder on PYTHONPATH"
            ) from e
    config = sys.modules.get(reloader)
    reload_all = getattr(config, "reload_all_modules", None)
    if callable(reload_all) and getattr(reload_all, "_gemlite_device", None) != device:

        @functools.wraps(reload_all)
        def reload_all_modules(*args, **kwargs):
            with device_count_of(device):
                return reload_all(*args, **kwargs)

        reload_all_modules._gemlite_device = device
        config.reload_all_modules = reload_all_modules
    return library


def cuda_is(device: str):
    """Every patch of this module, for `device`, and gemlite imported; returns the entered TorchFunctionMode."""
    patch_capability(device)
    patch_device_properties(device)
    mode = device_type_mode(device)
    mode.__enter__()
    import_library(device)
    return mode


def pytest_configure(config):
    """After library_plugin registered the device, before the test modules import gemlite."""
    device = config.getoption("lib_device", None)
    if device:
        config._gemlite_mode = cuda_is(device)
