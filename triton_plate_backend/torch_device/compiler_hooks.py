"""The torch device's hook for the compiler above it: what ``torch.plate`` answers to Inductor.

Inductor's PrivateUse1 discovery (``init_backend_registration``) asks the device module for
``Scheduling``, ``PythonWrapperCodegen``, ``CppWrapperCodegen`` and ``WrapperFxCodegen`` on the
first ``torch.compile``. The torch device sits below the Inductor integration and never imports it:
the integration registers its answers here (``register_inductor_backend``) when it is imported.
So that ``torch.compile`` on plate tensors works without importing the integration first, the
first question loads the entry points of ``ENTRY_POINT_GROUP``, which the integration's package
metadata declares (pyproject.toml); loading one imports the package, which registers itself.

Dynamo's device registry (``torch._dynamo.device_interface``) asks nothing of the PrivateUse1
device: a fresh process whose first question is ``get_interface_for_device("plate")`` (Inductor's
autotuning subprocess) would never reach the hook. ``install_device_interface_discovery`` makes the
registry ask ``torch.plate.DeviceInterface`` (the fifth answer) when asked about plate.

``torch.nn.attention.flex_attention`` refuses tensors of any device outside a fixed list before its eager
path or Inductor's flex templates run: ``install_flex_attention_device_check`` lets plate's through."""

from __future__ import annotations

import inspect
import sys
import types
import warnings
from importlib.metadata import entry_points

from ..errors import PlateError

ENTRY_POINT_GROUP = "triton_plate_backend.inductor"
INDUCTOR_NAMES = ("Scheduling", "PythonWrapperCodegen", "CppWrapperCodegen", "WrapperFxCodegen", "DeviceInterface")
DEVICE_INTERFACE_MODULE = "torch._dynamo.device_interface"
_answers: dict[str, object] = {}
_warned_missing = False


def register_inductor_backend(**answers) -> None:
    """Set what torch.plate answers for each of INDUCTOR_NAMES (None: plate has no such codegen)."""
    if set(answers) != set(INDUCTOR_NAMES):
        raise PlateError(
            f"register_inductor_backend got {sorted(answers)}; it takes exactly {', '.join(INDUCTOR_NAMES)}"
        )
    _answers.update(answers)


def inductor_answer(name: str):
    """The registered answer for `name`, loading the ENTRY_POINT_GROUP entry points when nothing is
    registered yet. AttributeError when no Inductor integration is installed: Inductor's discovery
    then leaves plate without an Inductor backend, as for any device module without these names."""
    if not _answers:
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            ep.load()  # importing the integration registers it
    if name not in _answers:
        missing = (
            f"no Inductor integration registered (none is imported, and no package declares an entry point in "
            f"the group {ENTRY_POINT_GROUP!r})"
        )
        _warn_missing_once(missing)
        raise AttributeError(f"torch.plate.{name}: {missing}")
    return _answers[name]


def _warn_missing_once(missing: str) -> None:
    # Inductor's discovery swallows the AttributeError and later fails with a bare `assert scheduling_ctor`;
    # the warning is what tells the user why and what to change.
    global _warned_missing
    if not _warned_missing:
        _warned_missing = True
        warnings.warn(
            f"plate: {missing}, so torch.compile on plate tensors has no Inductor backend. Install plate with "
            f"`pip install -e .` (its metadata declares the entry point) or import its Inductor package; a stale "
            f"`*.egg-info` folder in the working directory can shadow the installed metadata.",
            stacklevel=3,
        )


# ---- Dynamo's device registry asks the PrivateUse1 device ------------------------------------------------
def install_device_interface_discovery() -> bool:
    """THE runtime patch of PyTorch's ``torch._dynamo.device_interface.get_interface_for_device`` (removed
    by patches/pytorch/device-interface-privateuse1.patch): asked about the PrivateUse1 device while it has
    no interface registered, it registers the ``DeviceInterface`` torch.plate answers (through the hook
    above, which imports the integration) instead of raising NotImplementedError. It lives
    here, below the integration, because the question can come first in a process that never imported
    the integration. Installed when the device registers (at torch's autoload): torch._dynamo is not
    imported then (importing it costs a second), so an import finder patches the module when it is.
    Returns True when it patched (or will, on import); False when already done or PyTorch has the patch."""
    return _patch_now_or_on_import(DEVICE_INTERFACE_MODULE, _patch_get_interface_for_device)


def _patch_now_or_on_import(fullname: str, patch) -> bool:
    """Run ``patch(module)`` on the module ``fullname`` now if it is imported, else once its code has run
    (an import finder). True: patched now, or will be on import; False: ``patch`` found nothing to do."""
    module = sys.modules.get(fullname)
    if module is not None:
        return patch(module)
    if not any(isinstance(finder, _PatchOnImport) and finder.fullname == fullname for finder in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport(fullname, patch))
    return True


class _PatchOnImport:
    """Finds nothing itself: for ``fullname`` it takes the spec the other finders give and patches the
    module once its code has run; then it leaves sys.meta_path."""

    def __init__(self, fullname: str, patch) -> None:
        self.fullname = fullname
        self.patch = patch

    def find_spec(self, fullname, path, target=None):
        if fullname != self.fullname:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        for finder in sys.meta_path:
            find_spec = getattr(finder, "find_spec", None)
            spec = find_spec(fullname, path, target) if find_spec is not None else None
            if spec is not None:
                break
        else:
            return None
        exec_module = spec.loader.exec_module
        patch = self.patch

        def exec_then_patch(module):
            exec_module(module)
            patch(module)

        spec.loader.exec_module = exec_then_patch  # this module's own loader object
        return spec


def _patch_get_interface_for_device(module) -> bool:
    """get_interface_for_device is imported by name into many modules: no rebinding reaches them all, so
    the shared function object's code is swapped for "the built-in answer, or else the PrivateUse1
    device's" (the same shape as the integration's has_triton shim)."""
    original = module.get_interface_for_device
    namespace = module.__dict__
    if "_plate_builtin_get_interface_for_device" in namespace or _asks_privateuse1(original):
        return False
    namespace["_plate_builtin_get_interface_for_device"] = types.FunctionType(
        original.__code__, namespace, "get_interface_for_device_builtin", original.__defaults__, original.__closure__
    )
    namespace["_plate_register_privateuse1_interface"] = _register_privateuse1_interface
    original.__code__ = _get_interface_for_device_or_privateuse1.__code__
    return True


def _asks_privateuse1(function) -> bool:
    """Whether PyTorch's own function already asks the PrivateUse1 device (a PyTorch with the patch); a
    function whose source is not on disk (a build without .py files) is taken not to."""
    try:
        return "privateuse1" in inspect.getsource(function)
    except (OSError, TypeError):
        return False


def _get_interface_for_device_or_privateuse1(device):  # its code replaces the original's: runs in its module
    try:
        return _plate_builtin_get_interface_for_device(device)  # noqa: F821
    except NotImplementedError:
        if not _plate_register_privateuse1_interface(device):  # noqa: F821
            raise
    return _plate_builtin_get_interface_for_device(device)  # noqa: F821


def _register_privateuse1_interface(device) -> bool:
    """What device-interface-privateuse1.patch adds: an unregistered name of the PrivateUse1 device
    ("plate", "plate:0") gets the interface its device module answers. False: not that device, or no answer."""
    import torch

    key = device.type if isinstance(device, torch.device) else str(device)
    name = torch._C._get_privateuse1_backend_name()
    if key.partition(":")[0] != name:
        return False
    interface = getattr(getattr(torch, name, None), "DeviceInterface", None)  # loads the integration
    if interface is None:
        return False
    module = sys.modules[DEVICE_INTERFACE_MODULE]
    if key not in module.device_interfaces:
        module.register_interface_for_device(key, interface)
    return True


# ---- flex_attention accepts the PrivateUse1 device -------------------------------------------------------
FLEX_ATTENTION_MODULE = "torch.nn.attention.flex_attention"


def install_flex_attention_device_check() -> bool:
    """THE runtime patch of PyTorch's ``torch.nn.attention.flex_attention._validate_device`` (removed by
    patches/pytorch/flex-attention-privateuse1.patch): it refuses every device outside {cuda, cpu, xpu, hpu,
    mps} before anything runs, though flex_attention's eager path (its math reference, traced by Dynamo) and
    Inductor's flex templates (Triton kernels) need nothing of the device but its ops and its Triton. The
    patched check lets the PrivateUse1 device's tensors through and asks the original about every other
    device. Installed when the device registers: flex_attention is imported by the user, later (importing it
    costs a second), so an import finder patches the module when it is.
    Returns True when it patched (or will, on import); False when already done or PyTorch has the patch."""
    return _patch_now_or_on_import(FLEX_ATTENTION_MODULE, _patch_flex_attention_validate_device)


def _patch_flex_attention_validate_device(module) -> bool:
    """flex_attention looks ``_validate_device`` up in its module at each call (Dynamo too, when it traces the
    call): rebinding the module's name reaches every caller."""
    import torch

    original = module._validate_device
    name = torch._C._get_privateuse1_backend_name()  # a constant for Dynamo: fixed once the device registered
    if getattr(original, "_plate_patch", False) or _flex_accepts(original, torch.device(name)):
        return False

    def _validate_device(query, key, value):
        if query.device.type == name:
            return None
        return original(query, key, value)

    _validate_device._plate_patch = True
    _validate_device.__wrapped__ = original
    module._validate_device = _validate_device
    return True


def _flex_accepts(validate_device, device) -> bool:
    """Whether PyTorch's own check already lets tensors of ``device`` through (a PyTorch with the patch): asked
    with stand-ins that carry only what the check reads."""
    stand_in = types.SimpleNamespace(device=device, requires_grad=False, is_nested=False)
    try:
        validate_device(stand_in, stand_in, stand_in)
    except (ValueError, NotImplementedError, AttributeError):
        return False
    return True
