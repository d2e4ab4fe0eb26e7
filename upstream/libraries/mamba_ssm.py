"""pytest plugin for mamba_ssm's Triton ops tests (`-p upstream.libraries.mamba_ssm`): CUDA is the run's device.

mamba_ssm's Triton ops (tests/ops/triton: the gated layer norm, selective_state_update, the SSD chunked scan)
and their tests name CUDA for their device: ``device = "cuda"`` in every test, ``with
torch.cuda.device(x.device.index):`` around each kernel launch (the launch's current device),
``torch.cuda.get_device_properties(x.device).multi_processor_count`` for the grids of the persistent backward
kernels and ``torch.cuda.get_device_capability(...)`` in the Mamba-3 autotune pruning. In the test process each
of those names of CUDA means the run's device (``--lib-device``):

- ``device_type_mode`` (attorch's): a ``device`` argument naming cuda makes tensors on the device;
- ``patch_capability`` (attorch's) and ``patch_device_properties`` (gemlite's): torch.cuda's answer the device's;
- ``patch_device_context``: ``torch.cuda.device(i)`` is ``torch.<device>.device(i)``, the device's
  current-device context (CUDA's raises "PyTorch was compiled without CUDA support" in a CPU build).

``torch.cuda.is_available()`` stays CUDA's answer (False): tests that ask it skip themselves.
Each patch is entered once, before the test modules import mamba_ssm, for the whole run.
"""

from __future__ import annotations

import pytest

from .attorch import device_type_mode, patch_capability
from .gemlite import patch_device_properties


def patch_device_context(device: str) -> None:
    """torch.cuda.device(i) (a context manager class) is torch.<device>.device(i)."""
    import torch

    context = getattr(getattr(torch, device, None), "device", None)
    if not callable(context):
        raise pytest.UsageError(f"torch.{device} has no device context: is the device registered?")
    torch.cuda.device = context


def cuda_is(device: str):
    """Every patch of this module, for `device`; returns the entered TorchFunctionMode."""
    patch_capability(device)
    patch_device_properties(device)
    patch_device_context(device)
    mode = device_type_mode(device)
    mode.__enter__()
    return mode


def pytest_configure(config):
    """After library_plugin registered the device, before the test modules import mamba_ssm."""
    device = config.getoption("lib_device", None)
    if device:
        config._mamba_ssm_mode = cuda_is(device)
