"""pytest plugin for Liger-Kernel's tests (`-p upstream.libraries.liger_kernel`): the run's device is Liger's device.

Liger's ops and tests pick their device with ``liger_kernel.utils.infer_device()``, which knows only cuda,
npu, xpu and cpu; its test/utils.py reads it at import (``device = infer_device()``, imported by the
conftest). Three mappings, each the answer a known device gets, given for the run's device (``--lib-device``):

- ``name_the_device``: before the conftest is loaded, infer_device answers the device, and
  infer_device_arch (which asks it) forgets what it cached;
- ``answer_bf16_support``: test/utils.py's ``supports_bfloat16()`` decides from the device's name (cuda:
  capability >= 8.0, xpu and npu: yes, anything else: no), and its bf16 cases skip themselves with "bfloat16
  not supported on this GPU/device"; after the conftest imported it, and before a test module imports it,
  it answers ``torch.<device>.is_bf16_supported()``;
- ``DEVICE_GATES``: a test whose body runs on test/utils.py's ``device`` but whose skipif asks CUDA
  (``torch.cuda.is_available()``) for a reason other than CUDA itself has that gate asked of the device
  (``torch.<device>.is_available()``) instead, at collection: each entry says why the test is the device's.
"""

from __future__ import annotations

import importlib
import sys

import pytest

# test function (file::name) -> (the skip reason of its CUDA gate, why its body is not CUDA's)
DEVICE_GATES = {
    "test/transformers/test_swiglu.py::test_swiglu_blackwell_tiled_matches_original": (
        "Blackwell tiled SwiGLU path is CUDA-only",
        "it forces liger's SwiGLU dispatch (infer_device_arch monkeypatched to 'hopper', then 'blackwell') and "
        "compares the column-tiled kernels with the one-row ones bit for bit on test/utils.py's device; its "
        "docstring: 'The tiled kernels use no Blackwell-only instructions'; the gate only keeps it off CPU",
    ),
}


def name_the_device(device: str):
    """liger_kernel.utils.infer_device() answers `device` from now on; returns the module."""
    try:
        utils = importlib.import_module("liger_kernel.utils")
    except ImportError as e:
        raise pytest.UsageError(f"liger_kernel is not importable ({e}): put its src/ on PYTHONPATH") from e
    utils.infer_device = lambda: device
    cached = getattr(utils, "infer_device_arch", None)
    if hasattr(cached, "cache_clear"):
        cached.cache_clear()
    return utils


def device_module(device: str):
    """torch.<device> (a usage error when the device is not registered)."""
    import torch

    module = getattr(torch, device, None)
    if module is None:
        raise pytest.UsageError(f"torch.{device} does not exist: is the device registered?")
    return module


def answer_bf16_support(test_utils, device: str) -> None:
    """`test_utils.supports_bfloat16()` (Liger's test/utils.py) answers torch.<device>.is_bf16_supported()."""
    module = device_module(device)
    if not callable(getattr(module, "is_bf16_supported", None)):
        raise pytest.UsageError(f"torch.{device} has no is_bf16_supported()")
    if getattr(test_utils.supports_bfloat16, "_liger_device", None) == device:
        return

    def supports_bfloat16() -> bool:
        return bool(module.is_bf16_supported())

    supports_bfloat16._liger_device = device
    supports_bfloat16.__doc__ = f"bf16 support of torch.{device} (upstream.libraries.liger_kernel)"
    test_utils.supports_bfloat16 = supports_bfloat16


def loaded_test_utils(rootpath):
    """Liger's test/utils.py as the conftest imported it (module `test.utils` under `rootpath`), or None."""
    module = sys.modules.get("test.utils")
    path = getattr(module, "__file__", None)
    if path is None or not str(path).startswith(str(rootpath)):
        return None  # not loaded, or the standard library's test package
    return module


def gate_on_device(item, reason: str, device: str) -> bool:
    """Replace `item`'s skipif mark with `reason` by one that asks torch.<device>.is_available()."""
    gates = [m for m in item.own_markers if m.name == "skipif" and m.kwargs.get("reason") == reason]
    if not gates:
        return False
    item.own_markers[:] = [m for m in item.own_markers if not any(m is g for g in gates)]
    available = bool(device_module(device).is_available())
    item.add_marker(pytest.mark.skipif(not available, reason=f"{reason} (asked of torch.{device}: not available)"))
    return True


@pytest.hookimpl(tryfirst=True)  # before the conftest imports test/utils.py (pytest loads it in this hook)
def pytest_load_initial_conftests(early_config, parser, args):
    device = early_config.known_args_namespace.lib_device
    if device:
        name_the_device(device)


def pytest_configure(config):
    """After the conftest imported test/utils.py, before the test modules import its supports_bfloat16."""
    device = config.getoption("lib_device", None)
    test_utils = loaded_test_utils(config.rootpath) if device else None
    if test_utils is not None and hasattr(test_utils, "supports_bfloat16"):
        answer_bf16_support(test_utils, device)


def pytest_collection_modifyitems(session, config, items):
    device = config.getoption("lib_device", None)
    if not device:
        return
    for item in items:
        gate = DEVICE_GATES.get(item.nodeid.split("[", 1)[0])
        if gate is not None:
            gate_on_device(item, gate[0], device)
