"""Builds the C++ side of the plate torch device (triton_plate_backend.torch_device._C) and the compiled
walks (plain CPython modules, optional at run time: each module's Python code is the reference and runs
without it; tests/test_compiled_*.py compare the two).

Everything else about the package lives in pyproject.toml. `pip install -e .` runs this in an
isolated build environment that has torch==2.13.0 (pyproject's [build-system] requires); for
quick iteration in a venv that already has torch: `python setup.py build_ext --inplace`.
"""

from pathlib import Path

from setuptools import Extension, setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

CSRC = Path("triton_plate_backend/torch_device/csrc")

# The compiled walks: (package, module, compile flags), built from <package>/csrc/<module without its _>.cpp.
WALKS = [
    # two of the timing model's per-entry walks (sim/estimate.py, sim/bandwidth.py): no torch, no numpy
    # headers; no fused multiply-add, so its float results are the numpy code's, bit for bit
    ("sim", "_walk", ["-O2", "-ffp-contract=off"]),
    # v.select in one pass over a batch's SRAM image (sim/sem_vector.py): moves bits, computes nothing;
    # -O3: gcc 12 vectorizes its loop there, not at -O2 (4x); a bf16 m.mma's widening, its sums numpy's sgemm's
    # (sim/sem_matrix.py)
    ("sim", "_tiles", ["-O3"]),
    # the walks over the emitted code: licm, scalar_cse, regalloc's liveness and linear scan, finalize's
    # operand mapping: the same results in the same order
    ("passes", "_codewalk", ["-O2"]),
    # the code generator's most called methods, Emitter.emit and Emitter.rematerialised: the same code
    ("passes", "_emit", ["-O2"]),
    # the affine expression nodes' kept hash (passes/affine.py): the same value, a dict read when kept
    ("passes", "_affine", ["-O2"]),
    # the common case of the Program walks: verify, the disassembly and the code section's packing (every
    # instruction it does not pass goes to the Python code, so every error is Python's)
    ("isa", "_isawalk", ["-O2"]),
    # the pir printer's walk over generic-form ops: the same text
    ("ir", "_irprint", ["-O2"]),
    # Op.walk, the pre-order walk every pass and analysis runs: the same ops in the same order
    ("ir", "_irwalk", ["-O2"]),
    # the TTIR tokenizer (ttir/lexer.py's regular expression still reads text that is not ASCII): the same tokens
    ("ttir", "_ttirlex", ["-O2"]),
    # the TTIR parser's loop over a block's ops with the commonest custom op forms (every other op, and any text
    # they do not accept, goes to the Python parser, so every error is Python's): the same IR
    ("ttir", "_ttirparse", ["-O2"]),
]


def walk_extension(package: str, module: str, flags: list[str]) -> Extension:
    source = f"triton_plate_backend/{package}/csrc/{module.lstrip('_')}.cpp"
    name = f"triton_plate_backend.{package}.{module}"
    # every csrc header, as a walk may include another package's (passes' walks read isa/csrc/fields.h, irwalk and
    # codewalk share ir/csrc/ptr_table.h): an incremental build_ext rebuilds a module whose header changed
    depends = sorted(str(p) for p in Path("triton_plate_backend").glob("*/csrc/*.h"))
    return Extension(
        name, sources=[source], depends=depends, extra_compile_args=[*flags, "-g0"], language="c++", optional=True
    )


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
        *(walk_extension(*walk) for walk in WALKS),
    ],
    cmdclass={"build_ext": Build},
)
