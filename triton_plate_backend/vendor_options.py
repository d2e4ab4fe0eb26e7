"""Compile and launch options of other Triton backends, and what plate does with each: one table.

Portable kernels carry their vendors' options: AMD autotune configs put ``matrix_instr_nonkdim``,
``waves_per_eu`` or ``kpack`` in ``triton.Config`` kwargs, NVIDIA ones set ``maxnreg`` or
``launch_pdl``. Triton's runtime rejects a launch kwarg that is neither a kernel parameter nor a
field of the backend's options (``KeyError: Keyword argument ... unrecognised``), so every name
here is a field of ``PlateOptions``. A value other than the vendor's default warns once per name
and process; ``parse_options`` then stores the default, so an ignored option never splits the
kernel cache.

Imports nothing but the standard library: ``compiler`` (imported during ``import triton``) reads it.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass


class VendorOptionWarning(UserWarning):
    """A vendor-specific option was given a value; plate ignores it (the message says why)."""


@dataclass(frozen=True)
class VendorOption:
    vendor: str  # the backend(s) that define the option
    default: object  # the vendor's default: the value plate stores
    plate: str  # what plate does with it, and why


VENDOR_OPTIONS: dict[str, VendorOption] = {
    # NVIDIA (CUDAOptions)
    "maxnreg": VendorOption(
        "NVIDIA",
        None,
        "ignored: plate's register allocator uses the core's 64 scalar registers, there is no cap to set",
    ),
    "launch_pdl": VendorOption(
        "NVIDIA",
        False,
        "ignored: launches are synchronous and in order, so a dependent launch always starts after the one "
        "before has finished; gdc_wait/gdc_launch_dependents have nothing to wait for",
    ),
    "launch_cooperative_grid": VendorOption(
        "NVIDIA, AMD",
        False,
        "ignored: a cooperative launch promises that every program of the grid runs at once (grid-wide "
        "barriers); a PLATE core runs one program at a time and the simulator runs programs one after another, "
        "so a kernel that waits for another program of its grid does not finish",
    ),
    "ptx_version": VendorOption("NVIDIA", None, "ignored: no PTX is generated"),
    "ptx_options": VendorOption("NVIDIA", None, "ignored: no ptxas runs"),
    "enable_reflect_ftz": VendorOption(
        "NVIDIA", True, "ignored: libdevice is plate's own lowering, subnormals are kept (no flush-to-zero)"
    ),
    # AMD (HIPOptions)
    "waves_per_eu": VendorOption(
        "AMD", 0, "ignored: an occupancy hint; a PLATE core runs one program instance at a time"
    ),
    "matrix_instr_nonkdim": VendorOption(
        "AMD", 0, "ignored: the compiler shapes tl.dot onto the 32x32 matrix unit (m.mma) itself"
    ),
    "kpack": VendorOption("AMD", 1, "ignored: operand packing for MFMA; m.mma reads its operands from SRAM tiles"),
    "schedule_hint": VendorOption(
        "AMD", "none", "ignored: instruction scheduling hints for LLVM's AMDGPU backend; plate schedules DMA itself"
    ),
    "allow_flush_denorm": VendorOption("AMD", False, "ignored: subnormals are kept (no flush-to-zero)"),
}

_warned: set[str] = set()


def accept_vendor_options(opts: dict) -> dict[str, object]:
    """The vendor options of ``opts`` (launch kwargs or an options dict), each at its vendor default;
    warn once per name whose value is not that default."""
    accepted = {}
    for name, option in VENDOR_OPTIONS.items():
        if name not in opts:
            continue
        value = opts[name]
        if value is not None and value != option.default and name not in _warned:
            _warned.add(name)
            warnings.warn(
                f"{name}={value!r} is an option of Triton's {option.vendor} backend, {option.plate}",
                VendorOptionWarning,
                stacklevel=3,
            )
        accepted[name] = option.default
    return accepted


def forget_warnings() -> None:
    """Warn again for every name (tests)."""
    _warned.clear()
