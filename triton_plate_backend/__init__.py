"""plate: the PLATE NUMA tile accelerator as a Triton backend.

Kept import-light: Triton imports this package (through its `compiler` and `driver` modules)
during `import triton`."""

__version__ = "0.1.0"
