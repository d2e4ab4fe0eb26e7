"""What every example shares: where its tensors live, how close is close enough, what it prints.

Device: the ``plate`` torch device when it is registered (``import triton_plate_backend.torch_device``);
otherwise CPU tensors in explicit host-memory mode (``PLATE_HOST_MEMORY=1``: the simulator uses each
CPU tensor argument's storage as device memory for the duration of a launch).

Each example module has ``CASES`` (case names, mostly dtypes), ``run(case, device) -> list[Check]``
(the kernel's results next to a torch CPU reference) and ``main(argv)``; ``tests/test_examples.py``
runs the same ``run`` for every case.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

DTYPES: dict[str, torch.dtype] = {
    "fp32": torch.float32,
    "fp16": torch.float16,
    "bf16": torch.bfloat16,
    "int8": torch.int8,
    "int32": torch.int32,
}

# (rtol, atol) for results stored in a dtype, after fp32 math: about two units in the last place
# of the stored dtype (the kernel's fp32 sums run in another order than torch's), exact for ints.
TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float32: (1e-4, 1e-5),
    torch.float16: (2e-3, 2e-3),
    torch.bfloat16: (1.6e-2, 1e-2),
    torch.int8: (0.0, 0.0),
    torch.int32: (0.0, 0.0),
    torch.int64: (0.0, 0.0),
    torch.bool: (0.0, 0.0),
}


def plate_device_available() -> bool:
    """Is the ``plate`` torch device registered (importing it registers it)?"""
    try:
        import triton_plate_backend.torch_device  # noqa: F401
    except Exception:  # no extension built: fall back to host-memory mode
        return False
    return torch._C._get_privateuse1_backend_name() == "plate"


def select_device(prefer: str | None = None) -> torch.device:
    """The device the example's tensors go to: ``plate`` when available (or ``prefer="plate"``),
    else ``cpu`` with host-memory mode switched on. ``prefer="cpu"`` forces host-memory mode."""
    os.environ.setdefault("TRITON_DEFAULT_BACKEND", "plate")
    if prefer not in (None, "plate", "cpu"):
        raise ValueError(f"device {prefer!r}: expected 'plate' or 'cpu'")
    if prefer != "cpu" and plate_device_available():
        return torch.device("plate")
    if prefer == "plate":
        raise RuntimeError("the plate torch device is not available: build the extension (pip install -e .)")
    os.environ["PLATE_HOST_MEMORY"] = "1"
    return torch.device("cpu")


def core_count() -> int:
    """Cores of the current plate device: the grid of a persistent kernel."""
    import triton

    driver = triton.runtime.driver.active
    return int(driver.utils.get_device_properties(driver.get_current_device())["multiprocessor_count"])


def dtype_of(name: str) -> torch.dtype:
    try:
        return DTYPES[name]
    except KeyError:
        raise ValueError(f"dtype {name!r}: expected one of {', '.join(DTYPES)}") from None


def tolerance(dtype: torch.dtype, scale: float = 1.0) -> tuple[float, float]:
    """(rtol, atol) for results stored in ``dtype``; ``scale`` widens both (long reductions, tf32)."""
    rtol, atol = TOLERANCES[dtype]
    return rtol * scale, atol * scale


@dataclass
class Check:
    """One result of a kernel next to its torch CPU reference."""

    label: str
    got: torch.Tensor
    want: torch.Tensor
    rtol: float
    atol: float

    def assert_close(self) -> None:
        torch.testing.assert_close(
            self.got.cpu(),
            self.want.cpu(),
            rtol=self.rtol,
            atol=self.atol,
            equal_nan=True,
            msg=lambda m: f"{self.label}: {m}",
        )

    def max_error(self) -> float:
        got, want = self.got.cpu(), self.want.cpu()
        if got.dtype == torch.bool:
            return float((got != want).sum())
        return float((got.double() - want.double()).abs().max()) if got.numel() else 0.0


def check(label: str, got: torch.Tensor, want: torch.Tensor, *, scale: float = 1.0) -> Check:
    """A Check with the tolerance of ``want``'s dtype (widened by ``scale``)."""
    rtol, atol = tolerance(want.dtype, scale)
    return Check(label, got.detach().cpu(), want.detach().cpu(), rtol, atol)


def print_profile(label: str = "") -> None:
    """The modeled cost of the last launch: cycles, time, what bound it (the first line of the summary)."""
    import triton_plate_backend

    profile = triton_plate_backend.last_profile()
    if profile is None:
        print(f"  {label}: no launch profiled")
        return
    first = profile.summary().splitlines()[0]
    print(f"  {label + ': ' if label else ''}last launch {first}")


def example_main(
    description: str,
    cases: Sequence[str],
    run: Callable[[str, torch.device], list[Check]],
    argv: Sequence[str] | None = None,
) -> int:
    """The ``main()`` of every example: run the chosen cases, check them, print errors and the profile."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--case", action="append", choices=list(cases), help="run only this case (repeatable)")
    ap.add_argument("--device", choices=("plate", "cpu"), default=None, help="cpu: host-memory mode")
    args = ap.parse_args(list(argv) if argv is not None else None)
    device = select_device(args.device)
    failures = 0
    for case in args.case or cases:
        for c in run(case, device):
            try:
                c.assert_close()
                status = "ok"
            except AssertionError as e:
                status, failures = f"MISMATCH\n{e}", failures + 1
            print(f"[{case}] {c.label}: max abs error {c.max_error():.3g} (rtol {c.rtol:g}, atol {c.atol:g}) {status}")
        print_profile(case)
    title = description.strip().splitlines()[0].split(":")[0].rstrip(".")
    print(f"{title}: {'all results match' if not failures else f'{failures} mismatch(es)'}")
    return 1 if failures else 0
