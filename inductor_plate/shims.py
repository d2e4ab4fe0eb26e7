"""THE module of runtime patches to PyTorch (every place where PyTorch 2.13 hard-codes cuda/xpu) and
to Triton (where Triton assumes a device clock that runs at device speed).

Each shim names the upstream patch (in patches/pytorch/ or patches/triton/) that makes it unnecessary,
and checks first whether the running library already has that patch's behaviour: then it changes nothing. Nothing
here enters Inductor's FX-graph cache key, so no shim may change generated code by itself; the
decisions behind them read inductor_plate.config (which is in the key).

``apply()`` is idempotent; ``STATUS`` says, per shim, "applied" or "not needed".
"""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass

BACKEND = "plate"


@dataclass(frozen=True)
class Shim:
    name: str
    patch: str  # the file under patches/ whose upstream merge removes this shim
    apply: Callable[[], bool]  # True: patched now; False: PyTorch already behaves so


# ---- GPU_TYPES: Inductor's list of GPU-like devices ------------------------------------------------
def _register_gpu_type() -> bool:
    """Device guards, divisibility hints, GEMM templates: Inductor gives GPU treatment only to
    torch._inductor.utils.GPU_TYPES. Every user imports the same list object: append to it."""
    from torch._inductor import utils

    register = getattr(utils, "register_gpu_type", None)
    if register is not None:  # the patch is in: use its API
        register(BACKEND)
        return False
    if BACKEND not in utils.GPU_TYPES:
        utils.GPU_TYPES.append(BACKEND)
        utils.get_gpu_type.cache_clear()
    return True


# ---- has_triton: whether any device can run Triton ------------------------------------------------
def _privateuse1_has_triton() -> bool:
    """What has-triton-privateuse1.patch adds: the PrivateUse1 device's interface answers."""
    import torch
    from torch._dynamo.device_interface import get_registered_device_interfaces
    from torch.utils._triton import has_triton_package

    name = torch._C._get_privateuse1_backend_name()
    interface = dict(get_registered_device_interfaces()).get(name)
    return has_triton_package() and interface is not None and interface.is_available() and interface.is_triton_capable()


def _has_triton_with_privateuse1() -> bool:  # its code replaces has_triton's: runs with that module's globals
    return _plate_builtin_has_triton() or _plate_privateuse1_has_triton()  # noqa: F821


def _has_triton() -> bool:
    """has_triton() is cached and imported by name into a dozen modules (the scheduler refuses to
    create a Triton backend without it, Dynamo treats @triton.jit kernels as opaque): no rebinding
    reaches them all, so the shared function object's code is swapped for "builtin answer, or the
    PrivateUse1 device's interface says it is Triton-capable", and its cache cleared."""
    from torch.utils import _triton as triton_utils

    cached = triton_utils.has_triton
    cached.cache_clear()
    if cached():  # a GPU, or the patch is in (it asks the PrivateUse1 interface, registered by now)
        cached.cache_clear()
        return False
    original = cached.__wrapped__
    namespace = original.__globals__
    namespace["_plate_builtin_has_triton"] = types.FunctionType(
        original.__code__, namespace, "has_triton_builtin", original.__defaults__, original.__closure__
    )
    namespace["_plate_privateuse1_has_triton"] = _privateuse1_has_triton
    original.__code__ = _has_triton_with_privateuse1.__code__
    cached.cache_clear()
    return True


# ---- is_big_gpu: "enough SMs" for the GEMM templates -----------------------------------------------
def _plate_is_big_gpu(device=None) -> bool:
    """PlateInterface.is_big_gpu, the question is-big-gpu-device-interface.patch asks the device."""
    from . import policy

    return policy.use_gemm_templates()


def _is_big_gpu() -> bool:
    """Inductor offers its Triton GEMM templates only on devices with >= 68 SMs (16 on xpu).
    PLATE has 32 cores on plate1 (8 on plate-mini), each with a matrix unit: templates are the way
    to run a GEMM on it. Rather than inflate multi_processor_count (Inductor sizes grids with it),
    plate answers by policy (policy.use_gemm_templates)."""
    import torch
    from torch._dynamo.device_interface import DeviceInterface
    from torch._inductor import utils

    from .device_interface import PlateInterface

    if hasattr(DeviceInterface, "is_big_gpu"):  # the patch is in: is_big_gpu() asks the device's interface
        if "is_big_gpu" not in vars(PlateInterface):
            PlateInterface.is_big_gpu = staticmethod(_plate_is_big_gpu)
        return False
    original = utils.is_big_gpu
    if getattr(original, "_plate_shim", False):
        return False

    def is_big_gpu(index_or_device: int | torch.device = 0) -> bool:
        device = index_or_device
        if not isinstance(device, torch.device):
            device = torch.device(utils.get_gpu_type(), index_or_device)
        if device.type == BACKEND:
            return _plate_is_big_gpu(device)
        return original(index_or_device)

    is_big_gpu._plate_shim = True
    is_big_gpu.__wrapped__ = original
    utils.is_big_gpu = is_big_gpu
    return True


# ---- SkipFrame through the FX-graph-cache bypass path ------------------------------------------------
def _skip_frame_on_cache_bypass() -> bool:
    """A backend asks Dynamo to run a frame eagerly by raising SkipFrame (plate does when a kernel
    cannot compile: fallback.py). compile_fx re-raises SkipFrame on the cache-hit/miss paths but
    wraps it in InductorError on the cache-bypass path (caches off, or an uncacheable graph), which
    turns the fallback into a crash: unwrap it there. _compile_fx_inner is looked up by name at each
    call (compile_fx_inner -> wrap_compiler_debug(_compile_fx_inner)), so rebinding it reaches it."""
    from torch._dynamo.exc import SkipFrame
    from torch._inductor import compile_fx
    from torch._inductor.exc import InductorError

    original = compile_fx._compile_fx_inner
    if getattr(original, "_plate_shim", False) or _bypass_reraises_skip_frame(original):
        return False

    def _compile_fx_inner(*args, **kwargs):
        try:
            return original(*args, **kwargs)
        except InductorError as error:
            if isinstance(error.inner_exception, SkipFrame):
                raise error.inner_exception from None
            raise

    _compile_fx_inner._plate_shim = True
    _compile_fx_inner.__wrapped__ = original
    compile_fx._compile_fx_inner = _compile_fx_inner
    return True


def _bypass_reraises_skip_frame(compile_fx_inner) -> bool:
    """Whether inductor-cache-bypass-reraises-skipframe.patch is in: the cache-bypass branch of
    _compile_fx_inner (between its "bypass" and "miss" cache states) re-raises SkipFrame. Read from
    the source: running the function to find out would compile a graph. Unreadable: apply the shim
    (it only unwraps InductorError(SkipFrame), harmless if the patch is in)."""
    import inspect

    try:
        source = inspect.getsource(inspect.unwrap(compile_fx_inner))
    except (OSError, TypeError):
        return False
    _, found, rest = source.partition('== "bypass"')
    bypass_branch = rest.partition('== "miss"')[0]
    return bool(found) and "SkipFrame" in bypass_branch


# ---- layout optimization: channels-last convolutions -------------------------------------------------
def _conv_layout_per_device() -> bool:
    """Inductor turns convolutions channels-last on every GPU-like device (layout optimization).
    Convolutions that reach Inductor on plate (config.conv_as_gemm off: conv_gemm.py rewrites them
    otherwise) are extern kernels on the host (policy.py), so the layout buys nothing, and
    the host kernel's output strides can differ from what the fake kernel predicted for the plate
    device. A graph with a convolution on plate keeps Inductor's decision only when
    config.conv_layout_optimization says so (config is in the FX-graph cache key)."""
    from torch._dynamo.device_interface import DeviceInterface
    from torch._inductor.graph import GraphLowering

    from .device_interface import PlateInterface

    if hasattr(DeviceInterface, "use_layout_optimization"):  # the patch is in: it asks the device's interface
        if "use_layout_optimization" not in vars(PlateInterface):
            PlateInterface.use_layout_optimization = staticmethod(_plate_use_layout_optimization)
        return False
    original = GraphLowering.decide_layout_opt
    if getattr(original, "_plate_shim", False):
        return False

    def decide_layout_opt(gm, *, is_inference: bool) -> bool:
        if not _plate_use_layout_optimization() and _has_plate_convolution(gm):
            return False
        return original(gm, is_inference=is_inference)

    decide_layout_opt._plate_shim = True
    decide_layout_opt.__wrapped__ = original
    GraphLowering.decide_layout_opt = staticmethod(decide_layout_opt)
    return True


def _plate_use_layout_optimization(device=None) -> bool:
    """PlateInterface.use_layout_optimization, the question layout-opt-per-device.patch asks the device."""
    from . import config

    return config.conv_layout_optimization


def _has_plate_convolution(gm) -> bool:
    import torch

    for node in gm.graph.nodes:
        if node.target is torch.ops.aten.convolution.default:
            val = node.meta.get("val")
            if getattr(getattr(val, "device", None), "type", None) == BACKEND:
                return True
    return False


# ---- host-side TMA: tensor descriptors built by the host ---------------------------------------------
def _plate_supports_tma(device=None) -> bool:
    """PlateInterface.supports_tma, the question device-supports-tma-interface.patch asks the device:
    plate's launcher takes triton.tools.tensor_descriptor.TensorDescriptor arguments (the kernel
    reads the descriptor's base, shape and strides), so user kernels with host TMA run on it."""
    from .device_interface import PlateInterface

    return PlateInterface.is_available()


def _device_supports_tma() -> bool:
    """torch.utils._triton._device_supports_tma() accepts only CUDA sm90+: host-side TMA (user
    Triton kernels taking TensorDescriptor arguments inside torch.compile, and the tests of it)
    is refused on every other device. has_triton_tensor_descriptor_host_tma() and friends look the
    function up by name in their module at each (cached) call, so rebinding it there and clearing
    their caches reaches them all."""
    from torch._dynamo.device_interface import DeviceInterface
    from torch.utils import _triton as triton_utils

    from .device_interface import PlateInterface

    if hasattr(DeviceInterface, "supports_tma"):  # the patch is in: it asks the PrivateUse1 device's interface
        if "supports_tma" not in vars(PlateInterface):
            PlateInterface.supports_tma = staticmethod(_plate_supports_tma)
        return False
    original = triton_utils._device_supports_tma
    if getattr(original, "_plate_shim", False):
        return False

    def device_supports_tma() -> bool:
        return original() or _plate_supports_tma()

    device_supports_tma._plate_shim = True
    device_supports_tma.__wrapped__ = original
    triton_utils._device_supports_tma = device_supports_tma
    for name in ("has_triton_tensor_descriptor_host_tma", "has_triton_experimental_host_tma", "has_triton_tma"):
        getattr(triton_utils, name).cache_clear()
    return True


# ---- triton.testing.do_bench: a time budget on a modeled clock ------------------------------------
def _do_bench_on_modeled_clock() -> bool:
    """do_bench hands its loop to a modeled-clock driver's benchmarker: the driver holds that patch
    (triton_plate_backend.driver.install_do_bench, installed when plate's driver is built); this makes
    sure it is in before Inductor's autotuners run."""
    import triton.testing

    from triton_plate_backend.driver import install_do_bench

    return install_do_bench() or getattr(triton.testing.do_bench, "_plate_shim", False)


# ---- get_interface_for_device: the PrivateUse1 device answers -------------------------------------
def _device_interface_from_device_module() -> bool:
    """get_interface_for_device asks torch.plate for its DeviceInterface: the torch device holds that
    patch (triton_plate_backend.torch_device.compiler_hooks.install_device_interface_discovery, installed
    when the device registers), since a fresh process (Inductor's autotuning subprocess) can ask before
    this package is imported; this makes sure it is in."""
    from torch._dynamo import device_interface

    from triton_plate_backend.torch_device.compiler_hooks import install_device_interface_discovery

    return install_device_interface_discovery() or "_plate_builtin_get_interface_for_device" in vars(device_interface)


# ---- flex_attention: the device check ---------------------------------------------------------------
def _flex_attention_takes_privateuse1() -> bool:
    """flex_attention accepts plate tensors: the torch device holds that patch
    (triton_plate_backend.torch_device.compiler_hooks.install_flex_attention_device_check, installed when
    the device registers, since eager code can call flex_attention before this package is imported); this
    makes sure it is in."""
    import sys

    from triton_plate_backend.torch_device.compiler_hooks import (
        FLEX_ATTENTION_MODULE,
        install_flex_attention_device_check,
    )

    module = sys.modules.get(FLEX_ATTENTION_MODULE)
    patched = module is not None and getattr(module._validate_device, "_plate_patch", False)
    return install_flex_attention_device_check() or patched


# ---- flex decoding: the SM count of the query's device -------------------------------------------------
def _plate_split_kv(batch: int, kv_heads: int, device) -> int:
    """flex_decoding's SPLIT_KV rule (two splits per SM over the batch-heads) with the SM count of the
    device the query lives on, which flex-decoding-split-k-device.patch passes to get_split_k."""
    from torch._dynamo.device_interface import get_interface_for_device

    cores = get_interface_for_device(device).Worker.get_device_properties(device).multi_processor_count
    return max(cores // max(batch * kv_heads, 1) * 2, 1)


def _flex_decoding_split_k_per_device() -> bool:
    """Inductor's flex decoding (flex_attention with a short query) sizes its KV split with
    get_split_k, which reads torch.cuda's SM count unless XPU is there: on plate without CUDA the
    lowering raises "Torch not compiled with CUDA enabled". get_split_k is given no device, so its
    caller (create_flex_decoding_kernel, looked up by name in its module and in flex_attention's at
    each call) is wrapped to note the query's device for the duration of the lowering; get_split_k
    answers for a plate query with plate's core count and asks the original otherwise."""
    import inspect
    import threading

    from torch._inductor.kernel.flex import flex_attention as flex_lowering
    from torch._inductor.kernel.flex import flex_decoding

    original_split_k = flex_decoding.get_split_k
    if getattr(original_split_k, "_plate_shim", False):
        return False
    if "device" in inspect.signature(original_split_k).parameters:  # the patch is in: it asks the device
        return False
    original_create = flex_decoding.create_flex_decoding_kernel
    lowering = threading.local()

    def create_flex_decoding_kernel(*args, **kwargs):
        previous = getattr(lowering, "device", None)
        lowering.device = args[0].get_device()  # the query
        try:
            return original_create(*args, **kwargs)
        finally:
            lowering.device = previous

    def get_split_k(B, H, Mk):  # noqa: N803 (flex_decoding's names)
        device = getattr(lowering, "device", None)
        if device is not None and device.type == BACKEND:
            return _plate_split_kv(B, H, device)
        return original_split_k(B, H, Mk)

    for function, original in ((create_flex_decoding_kernel, original_create), (get_split_k, original_split_k)):
        function._plate_shim = True
        function.__wrapped__ = original
    flex_decoding.get_split_k = get_split_k
    flex_decoding.create_flex_decoding_kernel = create_flex_decoding_kernel
    if flex_lowering.create_flex_decoding_kernel is original_create:
        flex_lowering.create_flex_decoding_kernel = create_flex_decoding_kernel
    return True


SHIMS: tuple[Shim, ...] = (
    Shim("GPU_TYPES includes plate", "patches/pytorch/register-gpu-type.patch", _register_gpu_type),
    Shim("has_triton() asks the PrivateUse1 device", "patches/pytorch/has-triton-privateuse1.patch", _has_triton),
    Shim(
        "is_big_gpu() asks the device's policy",
        "patches/pytorch/is-big-gpu-device-interface.patch",
        _is_big_gpu,
    ),
    Shim(
        "layout optimization asks the device",
        "patches/pytorch/layout-opt-per-device.patch",
        _conv_layout_per_device,
    ),
    Shim(
        "SkipFrame passes the FX-cache bypass path",
        "patches/pytorch/inductor-cache-bypass-reraises-skipframe.patch",
        _skip_frame_on_cache_bypass,
    ),
    Shim(
        "host-side TMA asks the device",
        "patches/pytorch/device-supports-tma-interface.patch",
        _device_supports_tma,
    ),
    Shim(
        "get_interface_for_device asks the PrivateUse1 device",
        "patches/pytorch/device-interface-privateuse1.patch",
        _device_interface_from_device_module,
    ),
    Shim(
        "triton.testing.do_bench asks a modeled-clock driver",
        "patches/triton/do-bench-modeled-clock-driver.patch",
        _do_bench_on_modeled_clock,
    ),
    Shim(
        "flex_attention accepts the PrivateUse1 device",
        "patches/pytorch/flex-attention-privateuse1.patch",
        _flex_attention_takes_privateuse1,
    ),
    Shim(
        "flex decoding's KV split asks the query's device",
        "patches/pytorch/flex-decoding-split-k-device.patch",
        _flex_decoding_split_k_per_device,
    ),
)

STATUS: dict[str, str] = {}


def apply() -> dict[str, str]:
    """Apply every shim not applied yet; returns {shim name: "applied" | "not needed"}."""
    for shim in SHIMS:
        if shim.name not in STATUS:
            STATUS[shim.name] = "applied" if shim.apply() else "not needed"
    return dict(STATUS)


def describe() -> str:
    return "\n".join(f"{s.name}: {STATUS.get(s.name, 'pending')} (removed by {s.patch})" for s in SHIMS)
