"""pytest plugin (`-p upstream.library_plugin`): a third-party Triton library's own tests on a torch device.

What every library run needs, whatever the library: the device registered with torch before the library's
conftest imports it (``--lib-setup``, default ``triton_plate_backend.torch_device``: ``torch.plate``), and
each test's host ops: the aten ops that ran on the host for device tensors (the device's CPU fallback) while
the test ran. A library test that passed while an op ran on the host did not run on the device alone: its
report carries them (user property ``host_fallbacks``), and the report counts it passed-with-fallback, not
passed. The per-test timeout, skip list and results are upstream/plugin.py's (loaded beside this one).

A library's own plugin (revisions.toml ``plugin``, under upstream/libraries/) adapts what is the library's
alone (FlagGems: which vendor table names the device).
"""

from __future__ import annotations

import importlib

import pytest

from .plugin import HOST_FALLBACKS

DEFAULT_SETUP = "triton_plate_backend.torch_device"


def pytest_addoption(parser):
    group = parser.getgroup("plate-library", "plate: a third-party library's tests on a torch device")
    group.addoption("--lib-device", default=None, help="the torch device the library's tests run on (plate)")
    group.addoption(
        "--lib-setup",
        default=DEFAULT_SETUP,
        help=f"module imported first: it registers the device with torch (default {DEFAULT_SETUP}; '' for none)",
    )


def device_setup(module_name: str, device: str):
    """Import the module that registers `device` (a usage error names what failed); None when there is none."""
    if not module_name:
        return None
    try:
        return importlib.import_module(module_name)
    except Exception as e:
        raise pytest.UsageError(
            f"the {device!r} torch device is not available: importing {module_name} failed with "
            f"{type(e).__name__}: {e}. Install plate (pip install -e .) or pass --lib-setup MODULE"
        ) from e


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    """Before the library's conftest (which imports the library, which looks for its device) is loaded."""
    device = early_config.known_args_namespace.lib_device
    if not device:
        return
    module = device_setup(early_config.known_args_namespace.lib_setup, device)
    if module is not None and all(callable(getattr(module, n, None)) for n in ("host_ops", "reset_host_ops")):
        early_config.pluginmanager.register(HostOpRecorder(module), "plate-library-host-ops")


class HostOpRecorder:
    """Each test starts with no host ops; its call report carries those it had (``host_fallbacks``)."""

    def __init__(self, module):
        self.module = module

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        self.module.reset_host_ops()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        if call.when == "call":
            counts = {name: n for name, n in self.module.host_ops().items() if n}
            if counts:
                outcome.get_result().user_properties.append((HOST_FALLBACKS, counts))
