"""``estimate``: the cost model's answer for a Triton launch, without running it.

``estimate(kernel, grid, *args, **meta) -> sim.estimate.Estimate`` takes what a launch takes (a
``@triton.jit`` function or an autotuned one, its grid, its arguments and meta-parameters) and
returns the modeled time, what binds it, its level-0 bound and the bytes per (core domain, home
domain). The launch is priced as it would run, with the moves of shared operands it would make
(`sim/operands.py`). The kernel is compiled if needed; device memory and results are left
untouched, and the device clock advances by the estimate (as a launch would advance it by its
modeled time).
"""

from __future__ import annotations

from .sim.device import get_device
from .sim.estimate import Estimate, EstimateError


def estimate(kernel, grid, *args, **meta) -> Estimate:
    """The Estimate of ``kernel[grid](*args, **meta)`` (module docstring)."""
    with get_device().estimating() as estimates:
        kernel[grid](*args, **meta)
    if not estimates:
        raise EstimateError(f"{getattr(kernel, '__name__', kernel)}[{grid}]: the call launched no kernel")
    return estimates[-1]


__all__ = ["estimate", "Estimate", "EstimateError"]
