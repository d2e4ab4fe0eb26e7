"""pytest plugin (`-p upstream.inductor_plugin`): PyTorch's Inductor tests, with a Triton device as "the GPU".

`torch/testing/_internal/inductor_utils.py` computes GPU_TYPE, HAS_GPU and RUN_GPU at import from
hard-coded cuda/xpu checks, and test_torchinductor.py builds its `GPUTests` class from them at
import. This plugin imports the device's setup module (which registers the device with torch and
Inductor), then sets those names before any test file is imported, from outside the upstream files.
"""

from __future__ import annotations

import functools
import importlib
import unittest

import pytest

INDUCTOR_UTILS = "torch.testing._internal.inductor_utils"


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
            importlib.import_module(setup)
        except Exception as e:
            raise pytest.UsageError(
                f"the {device!r} torch device is not available: importing {setup} failed with "
                f"{type(e).__name__}: {e}. Install plate (pip install -e .) or pass --inductor-device-setup MODULE"
            ) from e
    name = config.getoption("--inductor-utils-module")
    try:
        utils = importlib.import_module(name)
    except ImportError as e:
        raise pytest.UsageError(
            f"cannot import {name}: {e}. PyTorch's test helpers need its test requirements (pip install expecttest)"
        ) from e
    for attr, value in overrides(device).items():
        setattr(utils, attr, value)
