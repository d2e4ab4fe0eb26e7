"""plate: the PLATE NUMA tile accelerator as a Triton backend.

Kept import-light: Triton imports this package (through its `compiler` and `driver` modules)
during `import triton`."""

__version__ = "0.1.0"


def last_profile(device: int | None = None):
    """The Profile of the most recent launch on ``device`` (default: the current device), or None.

    Has ``.cycles``, ``.time_ns``, ``.summary()`` and ``.write_trace(path)``."""
    from .sim.device import get_device

    return get_device(device).last_profile
