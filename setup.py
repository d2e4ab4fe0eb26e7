"""Builds the C++ side of the plate torch device (triton_plate_backend.torch_device._C).

Everything else about the package lives in pyproject.toml. `pip install -e .` runs this in an
isolated build environment that has torch==2.13.0 (pyproject's [build-system] requires); for
quick iteration in a venv that already has torch: `python setup.py build_ext --inplace`.
"""

from pathlib import Path

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

CSRC = Path("triton_plate_backend/torch_device/csrc")

setup(
    ext_modules=[
        CppExtension(
            "triton_plate_backend.torch_device._C",
            sources=sorted(str(p) for p in CSRC.glob("*.cpp")),
            # the kernels are torch's; this code only dispatches, so build fast rather than optimise
            extra_compile_args=["-O1", "-g0"],
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
