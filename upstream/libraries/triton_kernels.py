"""pytest plugin for triton_kernels' tests (`-p upstream.libraries.triton_kernels`): CUDA is the run's device.

triton_kernels (python/triton_kernels of the Triton pin) asks the active Triton target what it runs on
(``triton_kernels.target_info``: is_cuda/is_hip, capability numbers), which answers plate's target (backend
'plate', no CUDA capability: the generic paths, no TMA, no native mxfp, no inline PTX). What still names CUDA,
in the test process, means the run's device (``--lib-device``):

- ``device_type_mode`` (attorch's): the tests' ``device = "cuda"`` factories, and the library's
  (roofline's ``torch.empty(..., device="cuda")``), make tensors on the device;
- ``patch_capability`` (attorch's): ``torch.cuda.get_device_capability()`` answers ``torch.<device>``'s
  (test_matmul's and opt_flags' skips and choices: plate's (1, 0) is below every CUDA feature gate);
- ``patch_device_properties``: ``torch.cuda.get_device_properties`` answers ``torch.<device>``'s (num_sms,
  split-k and the matmul's pipeline depth read multi_processor_count and shared_memory_per_block_optin);
- ``patch_opt_flags``: ``make_opt_flags`` (matmul's block sizes, split-k, stages) knows the 'cuda' and 'hip'
  backends and asserts on any other; on the device's backend it takes the NVIDIA heuristics, the generic ones
  (with capability (1, 0) they choose no TMA, no native mxfp, no Hopper/Blackwell layouts).

Each patch is entered once, before the test modules import triton_kernels, for the whole run.
"""

from __future__ import annotations

import dataclasses
import functools

import pytest

from .attorch import device_type_mode, patch_capability


def patch_device_properties(device: str) -> None:
    """torch.cuda.get_device_properties(...) answers torch.<device>.get_device_properties(...)."""
    import torch

    module = getattr(torch, device, None)
    if module is None or not callable(getattr(module, "get_device_properties", None)):
        raise pytest.UsageError(f"torch.{device} has no get_device_properties: is the device registered?")
    torch.cuda.get_device_properties = module.get_device_properties


def patch_opt_flags(backend: str, opt_flags, *users) -> None:
    """``opt_flags.make_opt_flags`` (and each user module's name for it) on `backend`, Triton's active target,
    answers with the NVIDIA heuristics; on any other backend it is the library's own."""
    make = opt_flags.make_opt_flags
    if getattr(make, "_plate_backend", None) == backend:
        return
    import triton

    @functools.wraps(make)
    def make_opt_flags(*args, **kwargs):
        active = triton.runtime.driver.active
        target = active.get_current_target()
        if target.backend != backend:
            return make(*args, **kwargs)
        # make_opt_flags' own dispatch reads the backend's name: for the call it is 'cuda', with the device's
        # arch (plate's 1: every cuda_capability_geq gate the heuristics ask is False, as on a pre-Volta GPU)
        get = active.get_current_target
        active.get_current_target = lambda: dataclasses.replace(target, backend="cuda")
        try:
            return make(*args, **kwargs)
        finally:
            active.get_current_target = get

    make_opt_flags._plate_backend = backend
    for module in (opt_flags, *users):
        module.make_opt_flags = make_opt_flags


def cuda_is(device: str, backend: str):
    """Every patch of this module, for `device` (and Triton's `backend`); returns the entered TorchFunctionMode."""
    patch_capability(device)
    patch_device_properties(device)
    try:
        from triton_kernels import matmul
        from triton_kernels.matmul_details import opt_flags
    except ImportError as e:
        raise pytest.UsageError(
            f"triton_kernels is not importable ({e}): put python/triton_kernels on PYTHONPATH"
        ) from e
    patch_opt_flags(backend, opt_flags, matmul)
    mode = device_type_mode(device)
    mode.__enter__()
    return mode


def pytest_configure(config):
    """After library_plugin registered the device, before the test modules import triton_kernels."""
    device = config.getoption("lib_device", None)
    if device:
        import triton

        config._triton_kernels_mode = cuda_is(device, triton.runtime.driver.active.get_current_target().backend)
