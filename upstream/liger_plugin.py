"""pytest plugin (`-p upstream.liger_plugin`): Liger-Kernel's tests with plate as their device.

Liger's tests and ops pick their device with `liger_kernel.utils.infer_device()`, which knows only
cuda, npu, xpu and cpu, and test/utils.py reads it at import (`device = infer_device()`). This plugin
makes it answer the device of ``--liger-device`` (plate) before any test file is imported, from
outside the Liger tree. Run from a Liger checkout's root (its pyproject puts src/ and . on the path)::

    TRITON_DEFAULT_BACKEND=plate pytest -p upstream.liger_plugin test/transformers/test_rms_norm.py
"""

from __future__ import annotations

import importlib


def pytest_addoption(parser):
    group = parser.getgroup("plate-liger", "plate: Liger-Kernel's tests on a Triton device")
    group.addoption("--liger-device", default="plate", help="the torch device infer_device() answers")
    group.addoption(
        "--liger-device-setup",
        default="triton_plate_backend.torch_device",
        help="module imported first: it registers the device with torch ('' for none)",
    )


def pytest_configure(config):
    setup = config.getoption("--liger-device-setup")
    if setup:
        importlib.import_module(setup)
    device = config.getoption("--liger-device")
    utils = importlib.import_module("liger_kernel.utils")
    utils.infer_device = lambda: device
    if hasattr(utils.infer_device_arch, "cache_clear"):
        utils.infer_device_arch.cache_clear()
