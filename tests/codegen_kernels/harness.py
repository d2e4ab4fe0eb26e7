"""Test harness for the code generator: TTIR text -> parse -> run_pipeline -> Program ->
simulator, with numpy arrays in and out.

`ttir_of` makes fresh TTIR for a small @triton.jit kernel without a GPU, exactly like
tests/fixtures/ttir/make_fixtures.py (ASTSource + the NVIDIA backend's make_ttir), cached
for the test session. `corpus_text` reads the committed fixtures (tests/ttir_fixtures.py)."""

from __future__ import annotations

import functools
import math

import numpy as np
from ttir_fixtures import fixture_text

from triton_plate_backend.machine import get_machine
from triton_plate_backend.passes.pipeline import run_pipeline
from triton_plate_backend.sim.executor import execute
from triton_plate_backend.sim.memory import DeviceMemory
from triton_plate_backend.ttir.parser import parse

MACHINE = get_machine("plate-mini")


def corpus_text(name: str) -> str:
    return fixture_text(name)


def compile_text(text: str, name: str = "kernel", machine=MACHINE):
    """(Program, report) for TTIR text; every program is also checked against the
    asynchronous-DMA contract (codegen_kernels/dma_check.py) and lowered again from its printed
    pir text (stage_roundtrip.check_lowering)."""
    from stage_roundtrip import check_lowering

    from .dma_check import dma_violations

    pir_text, program, report = run_pipeline(parse(text, name), None, machine)
    check_lowering(name, pir_text, program, None, machine)  # the pir text alone lowers to this program
    bad = dma_violations(program)
    assert not bad, f"{name}: DMA contract violated: {bad[:5]}"
    return program, report


@functools.cache
def compile_corpus(name: str, machine_name: str = "plate-mini"):
    return compile_text(corpus_text(name), name, get_machine(machine_name))[0]


def run(program, grid, args, machine=MACHINE, **kw):
    """Execute with numpy arrays (copied into device memory) and scalars; returns the arrays
    read back, in argument order, and the trace."""
    mem = DeviceMemory(machine)
    words, arrays = [], []
    for a in args:
        if isinstance(a, np.ndarray):
            al = mem.alloc(max(a.nbytes, 1))
            mem.write_bytes(al.base, np.ascontiguousarray(a).tobytes())
            arrays.append((al, a))
            words.append(al.base)
        else:
            words.append(a)
    trace = execute(program, grid, words, mem, machine, **kw)
    outs = [np.frombuffer(mem.read_bytes(al.base, a.nbytes), a.dtype).reshape(a.shape).copy() for al, a in arrays]
    return outs, trace


# ---- fresh TTIR from @triton.jit kernels -------------------------------------------------------
@functools.cache
def _backend():
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend

    target = GPUTarget("cuda", 90, 32)
    return target, make_backend(target)


def _freeze(d):
    return tuple(sorted((k, _freeze(v) if isinstance(v, dict) else v) for k, v in (d or {}).items()))


@functools.cache
def _ttir(fn, sig, const, attrs, opts) -> str:
    from triton._C.libtriton import ir
    from triton.compiler import ASTSource

    target, backend = _backend()
    src = ASTSource(fn, signature=dict(sig), constexprs=dict(const), attrs=dict(attrs))
    options = backend.parse_options(dict(opts))
    ctx = ir.context()
    ir.load_dialects(ctx)
    backend.load_dialects(ctx)
    mod = src.make_ir(target, options, backend.get_codegen_implementation(options), backend.get_module_map(), ctx)
    mod = backend.make_ttir(mod, {}, options, 90)
    return mod.str()


def ttir_of(
    fn, signature: dict, constexprs: dict | None = None, attrs: dict | None = None, opts: dict | None = None
) -> str:
    """TTIR text of a @triton.jit kernel for this signature (cached)."""
    attrs = {k: tuple(tuple(x) for x in v) for k, v in (attrs or {}).items()}
    return _ttir(
        fn,
        tuple(signature.items()),
        tuple((constexprs or {}).items()),
        tuple(attrs.items()),
        tuple((opts or {}).items()),
    )


def compile_kernel(fn, signature, constexprs=None, machine=MACHINE, **kw):
    return compile_text(ttir_of(fn, signature, constexprs, **kw), fn.__name__, machine)[0]


def cdiv(a, b):
    return -(-a // b)


def close(got, want, rtol=1e-5, atol=1e-6):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


__all__ = [
    "compile_corpus",
    "compile_kernel",
    "compile_text",
    "run",
    "ttir_of",
    "cdiv",
    "close",
    "MACHINE",
    "corpus_text",
    "math",
]
