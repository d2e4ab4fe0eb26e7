"""Loading the C++ extension and registering `plate` with torch: the few calls, in one place.

Registration is idempotent and cheap (no simulator import: the simulator's device is built on the
first allocation). It runs on `import triton_plate_backend.torch_device` and on `import torch`
through the `torch.backends` entry point (torch's device-backend autoload).
"""

from __future__ import annotations

import atexit
import importlib
import sys
import types
import warnings

import torch

BACKEND = "plate"
NOT_BUILT = "the plate torch extension is not built: run pip install -e ."
_registered = False
_extension = None


def _autoloading() -> bool:
    """True while torch's device-backend autoload (torch/__init__.py: _import_device_backends) runs."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "_import_device_backends":
            return True
        frame = frame.f_back
    return False


def load_extension():
    """The compiled extension module, or None while torch autoloads a broken build (it warns then,
    so that `import torch` survives; importing the package directly raises)."""
    global _extension
    try:
        _C = importlib.import_module(f"{__package__}._C")
    except ImportError as err:
        message = f"{NOT_BUILT} (error: {err})"
        if _autoloading():
            warnings.warn(f"{message}; torch goes on without the plate device", RuntimeWarning, stacklevel=2)
            return None
        raise ImportError(message) from err
    _extension = _C
    return _C


def extension():
    """The loaded extension module (what the API functions call)."""
    if _extension is None:
        raise ImportError(NOT_BUILT)
    return _extension


def register(module, runtime, extension) -> None:
    """Make `module` torch.plate, with `runtime` serving the C++ allocator (see memory.py)."""
    global _registered
    if _registered:
        return
    extension._set_runtime(runtime)
    name = torch._C._get_privateuse1_backend_name()
    if name != BACKEND:
        if name != "privateuseone":
            raise ImportError(
                f"torch's PrivateUse1 backend is already renamed {name!r}: one process can hold only one "
                f"PrivateUse1 device; import triton_plate_backend.torch_device without {name!r}"
            )
        torch.utils.rename_privateuse1_backend(BACKEND)
    current = getattr(torch, BACKEND, None)
    if current is None:
        torch._register_device_module(BACKEND, module)
    elif current is not module:
        raise ImportError(f"torch.{BACKEND} is already registered as {current!r}")
    if not hasattr(torch.Tensor, f"is_{BACKEND}"):
        torch.utils.generate_methods_for_privateuse1_backend(for_storage=True)
    _register_backends_module()
    atexit.register(extension._stop_runtime)  # tensors freed during shutdown must not call Python
    _registered = True


def _register_backends_module() -> None:
    """``torch.backends.plate``, as ``torch.backends.cuda`` and ``torch.backends.mps``: libraries that serve
    several devices import ``torch.backends.<device>`` by name (FlagGems does at import)."""
    name = f"torch.backends.{BACKEND}"
    if name in sys.modules:
        return
    module = types.ModuleType(name, "The plate device's backend flags: it is built when this module exists.")
    module.is_built = lambda: _extension is not None
    module.is_available = lambda: _extension is not None
    sys.modules[name] = module
    setattr(torch.backends, BACKEND, module)


def forget(module_name: str) -> None:
    """Drop a half-imported package (autoload of a broken build), so that importing it again raises."""
    sys.modules.pop(module_name, None)
    parent, _, child = module_name.rpartition(".")
    if parent in sys.modules and getattr(sys.modules[parent], child, None) is not None:
        delattr(sys.modules[parent], child)
