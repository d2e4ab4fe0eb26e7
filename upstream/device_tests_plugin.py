"""pytest plugin (`-p upstream.device_tests_plugin`): PyTorch's device-generic tests (test_ops.py's OpInfo
tests) on an out-of-tree device, as PyTorch's own harness offers it to one.

`instantiate_device_type_tests` gives a PrivateUse1 device (plate) its own classes (``TestCommonPRIVATEUSE1``,
test ids ``..._plate_float32``) once the device is registered, which upstream/library_plugin.py's ``--lib-setup``
does before any test file is imported. What this plugin adds is PyTorch's switch for such a backend:
``PrivateUse1TestBase.bypass_device_restrictions`` (common_device_type.py: "allow PrivateUse1 backends to run
tests that are currently gated behind device-specific decorators"), so ``@onlyOn(["cuda", "xpu"])`` tests
(``TestCommon.test_compare_cpu``: the device's results against the CPU's) run on the device instead of
skipping. The host ops each test ran are library_plugin's (``host_fallbacks``: passed-with-fallback).
"""

from __future__ import annotations

import importlib

import pytest

COMMON_DEVICE_TYPE = "torch.testing._internal.common_device_type"


def pytest_addoption(parser):
    group = parser.getgroup("plate-device-tests", "plate: PyTorch's device-generic tests on a PrivateUse1 device")
    group.addoption(
        "--device-tests-keep-restrictions",
        action="store_true",
        help="leave PrivateUse1TestBase.bypass_device_restrictions off (PyTorch's default): @onlyCUDA-style tests skip",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    if config.getoption("--device-tests-keep-restrictions"):
        return
    common_device_type = importlib.import_module(COMMON_DEVICE_TYPE)
    common_device_type.PrivateUse1TestBase.bypass_device_restrictions = True
