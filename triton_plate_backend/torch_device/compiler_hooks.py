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
autotuning subprocess) would never reach the hook. A shim (triton_plate_backend/shims.py, installed
when the device registers) makes the registry ask ``torch.plate.DeviceInterface`` (the fifth answer)
when asked about plate."""

from __future__ import annotations

import warnings
from importlib.metadata import entry_points

from ..errors import PlateError

ENTRY_POINT_GROUP = "triton_plate_backend.inductor"
INDUCTOR_NAMES = ("Scheduling", "PythonWrapperCodegen", "CppWrapperCodegen", "WrapperFxCodegen", "DeviceInterface")
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
