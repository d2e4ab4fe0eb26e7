"""pytest plugin for Liger-Kernel's tests (`-p upstream.libraries.liger_kernel`): infer_device() names the device.

Liger's ops and tests pick their device with ``liger_kernel.utils.infer_device()``, which knows only cuda,
npu, xpu and cpu; its test/utils.py reads it at import (``device = infer_device()``, imported by the
conftest). Before the conftest is loaded, infer_device answers the run's device (``--lib-device``), and
infer_device_arch (which asks it) forgets what it cached.
"""

from __future__ import annotations

import importlib

import pytest


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


@pytest.hookimpl(tryfirst=True)  # before the conftest imports test/utils.py (pytest loads it in this hook)
def pytest_load_initial_conftests(early_config, parser, args):
    device = early_config.known_args_namespace.lib_device
    if device:
        name_the_device(device)
