"""Builds the C++ side of the plate torch device (triton_plate_backend.torch_device._C) and the
simulator's compiled walk (triton_plate_backend.sim._walk: plain CPython, optional at run time).

Everything else about the package lives in pyproject.toml. `pip install -e .` runs this in an
isolated build environment that has torch==2.13.0 (pyproject's [build-system] requires); for
quick iteration in a venv that already has torch: `python setup.py build_ext --inplace`.
"""

from pathlib import Path

from setuptools import Extension, setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

CSRC = Path("triton_plate_backend/torch_device/csrc")


class Build(BuildExtension):
    """torch's build, where an optional extension that fails to build only warns (torch's ninja build
    raises a RuntimeError that setuptools' own ``optional`` handling does not catch)."""

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as e:
            if not ext.optional:
                raise
            self.warn(f"{ext.name} was not built, its Python reference runs instead ({e})")


setup(
    ext_modules=[
        CppExtension(
            "triton_plate_backend.torch_device._C",
            sources=sorted(str(p) for p in CSRC.glob("*.cpp")),
            # the kernels are torch's; this code only dispatches, so build fast rather than optimise
            extra_compile_args=["-O1", "-g0"],
        ),
        # two of the timing model's per-entry walks (sim/estimate.py and sim/bandwidth.py keep their numpy
        # code, used without it, so a failed build only warns): no torch, no numpy headers; no fused
        # multiply-add, so its float results are the numpy code's, bit for bit
        Extension(
            "triton_plate_backend.sim._walk",
            sources=["triton_plate_backend/sim/csrc/walk.cpp"],
            extra_compile_args=["-O2", "-g0", "-ffp-contract=off"],
            language="c++",
            optional=True,
        ),
        # v.select in one pass over a batch's SRAM image (sim/sem_vector.py keeps its numpy code, used
        # without it): moves bits, computes nothing
        Extension(
            "triton_plate_backend.sim._tiles",
            sources=["triton_plate_backend/sim/csrc/tiles.cpp"],
            extra_compile_args=["-O3", "-g0"],  # -O3: gcc 12 vectorizes its loop there, not at -O2 (4x)
            language="c++",
            optional=True,
        ),
        # the walks over the emitted code: licm, scalar_cse, regalloc's liveness and linear scan, finalize's
        # operand mapping (each pass keeps its Python code as the reference, used without it): the same results
        # in the same order
        Extension(
            "triton_plate_backend.passes._codewalk",
            sources=["triton_plate_backend/passes/csrc/codewalk.cpp"],
            extra_compile_args=["-O2", "-g0"],
            language="c++",
            optional=True,
        ),
        # the common case of the Program walks: verify, the disassembly and the code section's packing (the
        # Python code stays the reference, used without it and for every instruction this one does not pass,
        # so every error is Python's)
        Extension(
            "triton_plate_backend.isa._isawalk",
            sources=["triton_plate_backend/isa/csrc/isawalk.cpp"],
            extra_compile_args=["-O2", "-g0"],
            language="c++",
            optional=True,
        ),
        # the printer's walk over generic-form ops (ir/printer.py keeps it in Python, the reference, used without it):
        # the same text
        Extension(
            "triton_plate_backend.ir._irprint",
            sources=["triton_plate_backend/ir/csrc/irprint.cpp"],
            extra_compile_args=["-O2", "-g0"],
            language="c++",
            optional=True,
        ),
        # the TTIR tokenizer (ttir/lexer.py keeps its regular expression, the reference, used without it and for
        # text that is not ASCII): the same tokens
        Extension(
            "triton_plate_backend.ttir._ttirlex",
            sources=["triton_plate_backend/ttir/csrc/ttirlex.cpp"],
            extra_compile_args=["-O2", "-g0"],
            language="c++",
            optional=True,
        ),
    ],
    cmdclass={"build_ext": Build},
)
