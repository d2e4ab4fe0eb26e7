"""pytest plugin for FlagGems' tests (`-p upstream.libraries.flag_gems`): its vendor table names the device.

FlagGems picks a vendor (``GEMS_VENDOR``, or by probing vendor commands such as nvidia-smi) and takes from
that vendor's ``vendor_info`` the torch device it runs on (``torch.<device_name>``, ``torch.backends.<...>``),
the dispatch key its ops register under and the ``triton.language.extra`` module of its math functions.
No vendor names a PrivateUse1 device, so before FlagGems is imported the vendor of the run (the suite's
``GEMS_VENDOR``) gets VENDOR_INFO's fields: its kernels, tuning tables and heuristics stay that vendor's.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import os
import sys
from pathlib import Path

import pytest

VENDOR_ENV = "GEMS_VENDOR"
BACKEND_DIR = ("runtime", "backend")  # under the flag_gems package: the `_<vendor>` modules
# the fields of FlagGems' VendorInfoBase that name the device; the device is --lib-device
VENDOR_INFO = {
    "dispatch_key": "PrivateUse1",  # a PrivateUse1 device's ops register under that key, whatever its name
    "triton_extra_name": "cuda",  # triton.language.extra.cuda.libdevice: plate's libdevice is CUDA's names
}


def vendor_module(vendor: str):
    """FlagGems' `_<vendor>` module (runtime/backend/_<vendor>), imported as FlagGems imports it, without
    importing flag_gems itself (whose import looks the device up)."""
    spec = importlib.util.find_spec("flag_gems")
    if spec is None or not spec.submodule_search_locations:
        raise pytest.UsageError("flag_gems is not importable: install it or put its src/ on PYTHONPATH")
    backend = str(Path(spec.submodule_search_locations[0], *BACKEND_DIR))
    if backend not in sys.path:
        sys.path.append(backend)  # what flag_gems.runtime.backend.get_vendor_module does
    return importlib.import_module(f"_{vendor}")


def name_the_device(vendor: str, device: str) -> object:
    """Give the vendor's vendor_info the device's fields; returns the new vendor_info."""
    module = vendor_module(vendor)
    module.vendor_info = dataclasses.replace(module.vendor_info, device_name=device, **VENDOR_INFO)
    return module.vendor_info


@pytest.hookimpl(tryfirst=True)  # before the conftest imports flag_gems (pytest loads it in this hook)
def pytest_load_initial_conftests(early_config, parser, args):
    device = early_config.known_args_namespace.lib_device
    vendor = os.environ.get(VENDOR_ENV)
    if not device:
        return
    if not vendor:
        raise pytest.UsageError(f"set {VENDOR_ENV} (revisions.toml [flag_gems.suite] env): the vendor whose tables run")
    name_the_device(vendor, device)
