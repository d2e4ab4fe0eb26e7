"""pytest plugin for LightLLM's Triton kernel tests (`-p upstream.libraries.lightllm`): CUDA is the run's device.

LightLLM's unit tests of its shared Triton kernels (unit_tests/common: decode/prefill/sampling parameter
generation, multimodal embedding, expert-id repair, sequence-parallel padding, the fused-MoE grouped matmul,
token alignment, grouped top-k, masked SiLU-and-mul, KV transfer) make their tensors with ``device="cuda"``
(or ``.cuda()``), time themselves with ``torch.cuda.Event(enable_timing=True)`` and
``torch.cuda.synchronize()``, and some kernel wrappers ask ``torch.cuda.get_device_properties``. In the test
process each of those names of CUDA means the run's device (``--lib-device``):

- mamba_ssm's ``cuda_is``: a ``device`` argument naming cuda makes tensors on the device, ``torch.cuda.device(i)``
  and torch.cuda's device queries are the device's;
- ``patch_runtime``: ``torch.cuda.synchronize``, ``torch.cuda.Event`` and ``torch.cuda.set_device`` are the
  device's (CUDA's raise "Torch not compiled with CUDA enabled" in a CPU build); ``Tensor.cuda()`` moves to the
  device;
- ``patch_device_name``: ``lightllm.utils.device_utils.get_current_device_name()``, which picks a kernel's tuned
  config file (the fused-MoE grouped matmul's) and answers None when ``torch.cuda.is_available()`` is False (the
  caller then fails on ``None.replace``), is the device's name.

``torch.cuda.is_available()`` stays CUDA's answer (False), and so does ``torch.cuda.CUDAGraph`` (one test
captures its kernel in a CUDA graph: it fails as on any device without CUDA graphs).
"""

from __future__ import annotations

import pytest

from .mamba_ssm import cuda_is as mamba_cuda_is

RUNTIME = ("synchronize", "Event", "set_device")


def patch_runtime(device: str) -> None:
    """torch.cuda.synchronize/Event/set_device are torch.<device>'s; Tensor.cuda(i) is Tensor.to(<device>:i)."""
    import torch

    module = getattr(torch, device, None)
    missing = [name for name in RUNTIME if not hasattr(module, name)]
    if module is None or missing:
        raise pytest.UsageError(f"torch.{device} lacks {missing or RUNTIME}: is the device registered?")
    for name in RUNTIME:
        setattr(torch.cuda, name, getattr(module, name))

    def cuda(self, device_index=None, non_blocking=False, memory_format=torch.preserve_format):
        index = device_index.index if isinstance(device_index, torch.device) else device_index
        target = torch.device(device, index) if index is not None else torch.device(device)
        return self.to(target, non_blocking=non_blocking, memory_format=memory_format)

    torch.Tensor.cuda = cuda


def patch_device_name(device: str, module: str = "lightllm.utils.device_utils") -> None:
    """`module`.get_current_device_name() answers torch.<device>.get_device_name() (before the kernel modules
    import it by name)."""
    import importlib

    import torch

    try:
        utils = importlib.import_module(module)
    except ImportError as e:
        raise pytest.UsageError(f"{module} is not importable ({e}): put the checkout's top folder on PYTHONPATH") from e

    def get_current_device_name():
        return getattr(torch, device).get_device_name()

    utils.get_current_device_name = get_current_device_name


def cuda_is(device: str):
    """Every patch of this module, for `device`; returns the entered TorchFunctionMode."""
    mode = mamba_cuda_is(device)
    patch_runtime(device)
    patch_device_name(device)
    return mode


def pytest_configure(config):
    """After library_plugin registered the device, before the test modules import lightllm."""
    device = config.getoption("lib_device", None)
    if device:
        config._lightllm_mode = cuda_is(device)
