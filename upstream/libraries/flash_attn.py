"""pytest plugin for flash-attention's Triton ops tests (`-p upstream.libraries.flash_attn`): CUDA is the run's device.

flash-attention's Triton ops (flash_attn/ops/triton: the fused dropout + residual + layer/RMS norm, rotary
embedding, cross entropy) are pure Triton, but the package around them is not: ``flash_attn/__init__.py``
imports ``flash_attn_interface``, which loads the CUDA extension ``flash_attn_2_cuda``. Their tests name CUDA
for their device as mamba_ssm's do (``device = "cuda"``, ``with torch.cuda.device(x.device.index):`` around each
launch, ``torch.cuda.get_device_properties(x.device).multi_processor_count`` for the backward's partial sums,
``torch.cuda.get_device_capability("cuda")`` at import), and the layer norm module asks
``torch.cuda.get_device_properties(torch.cuda.current_device())`` at import for its autotune warp counts.
In the test process:

- mamba_ssm's ``cuda_is``: a ``device`` argument naming cuda makes tensors on the run's device
  (``--lib-device``), ``torch.cuda.device(i)`` and torch.cuda's device queries are the device's;
- attorch's ``patch_autocast`` and ``patch_autocast_state``: ``torch.autocast(device_type="cuda")`` (the fused
  norm + linear test) and the ``torch.amp.custom_fwd(device_type="cuda")`` of the ops' autograd Functions
  are the device's autocast;
- ``package_without_init``: ``flash_attn`` is the checkout's package folder with its ``__init__`` not run
  (its submodules import as usual), so the Triton ops import without the CUDA extension;
- ``import_ops``: the Triton ops modules are imported once, while ``torch.cuda.current_device()`` answers the
  device's; otherwise it stays CUDA's (Inductor's cache key asks it, gemlite's plugin says why).

``torch.cuda.is_available()`` stays CUDA's answer (False).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types

import pytest

from .attorch import cuda_answers, patch_autocast, patch_autocast_state
from .mamba_ssm import cuda_is as mamba_cuda_is

OPS = ("flash_attn.ops.triton.layer_norm", "flash_attn.ops.triton.rotary", "flash_attn.ops.triton.cross_entropy")


def package_without_init(name: str = "flash_attn") -> types.ModuleType:
    """sys.modules[name] is the package found on the path, its folder searched for submodules, its __init__ not
    run; an already imported package is left as it is. Returns the package."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise pytest.UsageError(f"{name} is not importable: put the checkout's top folder on PYTHONPATH")
    package = types.ModuleType(name)
    package.__path__ = list(spec.submodule_search_locations)
    package.__file__ = spec.origin
    package.__spec__ = spec
    package.__package__ = name
    sys.modules[name] = package
    return package


def import_ops(device: str, modules=OPS) -> list[types.ModuleType]:
    """Import each of `modules` with torch.cuda.current_device() the device's."""
    with cuda_answers(device, "current_device"):
        return [importlib.import_module(name) for name in modules]


def cuda_is(device: str):
    """Every patch of this module, for `device`, and the ops imported; returns the entered TorchFunctionMode."""
    mode = mamba_cuda_is(device)
    patch_autocast(device)
    patch_autocast_state(device)
    package_without_init()
    import_ops(device)
    return mode


def pytest_configure(config):
    """After library_plugin registered the device, before the test modules import flash_attn."""
    device = config.getoption("lib_device", None)
    if device:
        config._flash_attn_mode = cuda_is(device)
