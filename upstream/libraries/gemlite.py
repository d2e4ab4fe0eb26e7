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
- ``take_cuda_branches``: what gemlite does for a tensor whose ``device.type == "cuda"`` it does for the
  device's tensors (``CUDA_BRANCHES``: ``GemLiteLinearTriton.pack`` bit-packs a CUDA W_q with its Triton
  kernel, any other with a Python loop of two eager ops per input column: 8192 launches for the tests'
  4096-column layer, 350 s of the simulator's per-launch cost where the kernel takes 2 s);
- ``FP8_GATES``: a test skipped with the tests' "GPU does not support FP8" (their ``is_fp8_supported()``:
  torch.cuda.is_available() and capability >= (8, 9), sm_89's native e4m3) runs when the device's Triton
  backend compiles the fp8 type the tests use (``supported_fp8_dtypes`` has fp8e4nv, torch.float8_e4m3fn:
  what Triton's NVIDIA backend adds at capability >= 89); left skipped otherwise.

What torch itself asks stays CUDA's answer: ``torch.cuda.is_available()`` (False; the tests' fp8 gate is
asked of the device instead, ``FP8_GATES``), ``torch.cuda.current_device()`` (Inductor's cache key asks it,
and takes no device name when it raises) and ``torch.cuda.empty_cache()`` (a no-op while CUDA is not
initialized).
Each patch is entered once, before the test modules import gemlite, for the whole run.
"""

from __future__ import annotations

import functools
import importlib
import sys

import pytest

from .attorch import cuda_answers, device_type_mode, map_device, patch_capability


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


def import_library(device: str, name: str = "gemlite", reloader: str = "gemlite.triton_kernels.config"):
    """Import `name` with torch.cuda.device_count() the device's, and make `reloader`'s reload_all_modules (gemlite
    reloads its kernel modules, which rebuild the tables, at each set_autotune) do the same; returns the library."""
    with cuda_answers(device, "device_count"):
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
            with cuda_answers(device, "device_count"):
                return reload_all(*args, **kwargs)

        reload_all_modules._gemlite_device = device
        config.reload_all_modules = reload_all_modules
    return library


# module -> [(the function gemlite calls for a tensor not on CUDA, the one it calls for a CUDA tensor)]
CUDA_BRANCHES = {
    "gemlite.core": [("pack_weights_over_cols_torch", "pack_weights_over_cols_triton")],  # pack(): W_q's bits
}


def take_cuda_branches(device: str, branches: dict | None = None) -> list[str]:
    """Each (not-CUDA, CUDA) pair of `branches` (default CUDA_BRANCHES): the not-CUDA name answers the CUDA
    function for a first argument on `device`, itself otherwise. Returns the names replaced."""
    done = []
    for module_name, pairs in (CUDA_BRANCHES if branches is None else branches).items():
        module = sys.modules.get(module_name)
        for other_name, cuda_name in pairs:
            other, cuda = getattr(module, other_name, None), getattr(module, cuda_name, None)
            if not callable(other) or not callable(cuda):
                raise pytest.UsageError(f"{module_name} has no {other_name} and {cuda_name}: not gemlite's layout")
            if getattr(other, "_gemlite_device", None) == device:
                continue

            def branch(tensor, *args, _other=other, _cuda=cuda, **kwargs):
                return (_cuda if tensor.device.type == device else _other)(tensor, *args, **kwargs)

            functools.update_wrapper(branch, other)
            branch._gemlite_device = device
            setattr(module, other_name, branch)
            done.append(f"{module_name}.{other_name}")
    return done


# a unittest skip reason of the tests -> the Triton fp8 type whose support the gate asks about
FP8_GATES = {
    "Skipping test: GPU does not support FP8": "fp8e4nv",  # their fp8_dtype / gemlite's default: float8_e4m3fn
}


def device_fp8_types() -> tuple[str, ...]:
    """The fp8 types the active Triton driver's backend compiles (its options' supported_fp8_dtypes)."""
    from triton.compiler.compiler import make_backend
    from triton.runtime import driver

    return tuple(make_backend(driver.active.get_current_target()).parse_options({}).supported_fp8_dtypes)


def ask_fp8_gates(cls, supported: tuple[str, ...]) -> list[str]:
    """In unittest class `cls`: each test skipped with an FP8_GATES reason whose fp8 type is in `supported`
    is the test again (unittest.skipIf wraps it; the wrapped function is put back). Returns their names."""
    opened = []
    for name, fn in list(vars(cls).items()):
        fp8 = FP8_GATES.get(getattr(fn, "__unittest_skip_why__", None))
        if fp8 is None or not getattr(fn, "__unittest_skip__", False) or fp8 not in supported:
            continue
        setattr(cls, name, fn.__wrapped__)
        opened.append(name)
    return opened


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector, name, obj):
    """Before a test class's methods are collected: its fp8 gates asked of the device (FP8_GATES)."""
    device = collector.config.getoption("lib_device", None)
    unittest = sys.modules.get("unittest")
    if device and unittest is not None and isinstance(obj, type) and issubclass(obj, unittest.TestCase):
        ask_fp8_gates(obj, device_fp8_types())


def cuda_is(device: str):
    """Every patch of this module, for `device`, and gemlite imported; returns the entered TorchFunctionMode."""
    patch_capability(device)
    patch_device_properties(device)
    mode = device_type_mode(device)
    mode.__enter__()
    import_library(device)
    take_cuda_branches(device)
    return mode


def pytest_configure(config):
    """After library_plugin registered the device, before the test modules import gemlite."""
    device = config.getoption("lib_device", None)
    if device:
        config._gemlite_mode = cuda_is(device)
