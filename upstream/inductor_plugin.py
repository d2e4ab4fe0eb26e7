"""pytest plugin (`-p upstream.inductor_plugin`): PyTorch's Inductor tests, with a Triton device as "the GPU".

`torch/testing/_internal/inductor_utils.py` computes GPU_TYPE, HAS_GPU and RUN_GPU at import from
hard-coded cuda/xpu checks, and test_torchinductor.py builds its `GPUTests` class from them at
import. This plugin imports the device's setup module (which registers the device with torch and
Inductor), then sets those names before any test file is imported, from outside the upstream files, and
`triton_utils.requires_gpu_and_triton` (computed from the cuda/xpu checks too) so the device's tests under it run.

Host fallbacks: the setup module's ``config.fallback_on_compile_error`` (a kernel the device cannot compile
runs its frame eagerly) is set from ``--inductor-fallback-on-compile-error`` (off unless given). When the
setup module counts host fallbacks (``host_fallbacks()``, ``reset_host_fallbacks()``: inductor_plate does),
each test starts from zero and its report carries what ran on the host (user property ``host_fallbacks``):
the report counts a test that passed with any as passed-with-fallback, not passed.
"""

from __future__ import annotations

import functools
import importlib
import unittest

import pytest

from .plugin import HOST_FALLBACKS

INDUCTOR_UTILS = "torch.testing._internal.inductor_utils"
TRITON_UTILS = "torch.testing._internal.triton_utils"  # its requires_gpu_and_triton: a Triton device's tests


def overrides(device: str) -> dict[str, object]:
    """The names of inductor_utils a device test run needs, and their values for `device`."""
    return {
        "GPU_TYPE": device,
        "HAS_GPU": True,
        "HAS_GPU_AND_TRITON": True,
        "RUN_GPU": True,
        "RUN_CPU": False,  # CpuTests would run Inductor's C++ backend: not what this run measures
        "requires_gpu": functools.partial(unittest.skipIf, False, "requires gpu"),
    }


def pytest_addoption(parser):
    group = parser.getgroup("plate-inductor", "plate: Inductor tests on a Triton device")
    group.addoption("--inductor-device", default=None, help="the torch device Inductor tests run on (plate)")
    group.addoption(
        "--inductor-device-setup",
        default="inductor_plate",
        help="module imported first: it registers the device with torch and Inductor ('' for none)",
    )
    group.addoption(
        "--inductor-fallback-on-compile-error",
        action="store_true",
        help="let a kernel the device cannot compile run its frame eagerly (the setup module's "
        "config.fallback_on_compile_error); off: the compile error fails the test",
    )
    group.addoption(
        "--inductor-utils-module",
        default=INDUCTOR_UTILS,
        help="the module whose GPU_TYPE/HAS_GPU/RUN_GPU are set (the runner's own tests use a stand-in)",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    device = config.getoption("--inductor-device")
    if not device:
        return
    setup = config.getoption("--inductor-device-setup")
    if setup:
        try:
            module = importlib.import_module(setup)
        except Exception as e:
            raise pytest.UsageError(
                f"the {device!r} torch device is not available: importing {setup} failed with "
                f"{type(e).__name__}: {e}. Install plate (pip install -e .) or pass --inductor-device-setup MODULE"
            ) from e
        device_config = getattr(module, "config", None)
        if hasattr(device_config, "fallback_on_compile_error"):
            device_config.fallback_on_compile_error = config.getoption("--inductor-fallback-on-compile-error")
        if callable(getattr(module, "host_fallbacks", None)) and callable(
            getattr(module, "reset_host_fallbacks", None)
        ):
            config.pluginmanager.register(HostFallbackRecorder(module), "plate-host-fallbacks")
    name = config.getoption("--inductor-utils-module")
    try:
        utils = importlib.import_module(name)
    except ImportError as e:
        raise pytest.UsageError(
            f"cannot import {name}: {e}. PyTorch's test helpers need its test requirements (pip install expecttest)"
        ) from e
    for attr, value in overrides(device).items():
        setattr(utils, attr, value)
    if name == INDUCTOR_UTILS:  # triton_utils computed its decorator from the cuda/xpu checks at import too
        triton_utils = importlib.import_module(TRITON_UTILS)
        triton_utils.requires_gpu_and_triton = unittest.skipUnless(True, "requires gpu and triton")


class HostFallbackRecorder:
    """Each test starts with no host fallbacks; its call report carries those it had (``host_fallbacks``)."""

    def __init__(self, module):
        self.module = module

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        self.module.reset_host_fallbacks()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        if call.when == "call":
            counts = dict(self.module.host_fallbacks())
            if counts:
                outcome.get_result().user_properties.append((HOST_FALLBACKS, counts))
