"""libdevice on PLATE: every `__nv_*` function of triton.language.extra.cuda.libdevice lowers, and
computes its documented result on edge values (NaN, inf, signed zeros, subnormals, huge
arguments): bit-exact against exact rational/integer arithmetic where the result is exact or
correctly rounded (rounding modes, conversions, bits, integer ops), within an ulp bound against
numpy/scipy for the transcendental and special functions.

Kernels are TTIR text built here, one per signature with every symbol of that signature in it
(no Triton compile per function), run through the code generator harness on the simulator."""

from __future__ import annotations

import collections
import inspect
import math
from unittest import mock

import numpy as np
import pytest
import triton.language.core as core
from codegen_kernels.harness import compile_text, run
from libdevice_reference import NP, REFERENCE
from triton.language.extra import libdevice as generic_libdevice
from triton.language.extra.cuda import libdevice
from triton.language.extra.hip import libdevice as hip_libdevice

from triton_plate_backend.compiler import PlateBackend
from triton_plate_backend.errors import CompileError
from triton_plate_backend.passes import ptx_asm
from triton_plate_backend.passes.libdevice import LIBDEVICE

TT = {"fp32": "f32", "fp64": "f64", "int32": "i32", "uint32": "i32", "int64": "i64", "uint64": "i64"}
N = 96  # elements per symbol


# ---- the functions of Triton's libdevice module -----------------------------------------------------
def _signatures(module) -> dict:
    """symbol -> (argument dtype names, result dtype name, Triton function name), read by calling
    every @core.extern function of the module with extern_elementwise recording its overloads."""
    out = {}

    def recorder(fn_name):
        def record(lib_name, lib_path, args, table, is_pure, _semantic=None):
            for arg_types, (symbol, ret) in table.items():
                out[symbol] = (tuple(t.name for t in arg_types), ret.name, fn_name)
            return mock.MagicMock()  # some wrappers convert the result (finitef(...).to(int1))

        return record

    for fn_name, fn in inspect.getmembers(module, callable):
        if getattr(fn, "__triton_builtin__", False):
            arity = len(inspect.signature(fn).parameters) - 1
            with mock.patch.object(core, "extern_elementwise", recorder(fn_name)):
                fn(*[None] * arity, _semantic=object())
    return out


SIGNATURES = _signatures(libdevice)
PLATE_MODULE = PlateBackend.get_module_map(None)["triton.language.extra.libdevice"]
PLATE_SIGNATURES = _signatures(PLATE_MODULE)  # CUDA's and the generic names CUDA lacks
GROUPS = collections.defaultdict(list)
for _sym, (_args, _ret, _fn) in sorted(PLATE_SIGNATURES.items()):
    GROUPS[(_args, _ret)].append(_sym)
HIP_SIGNATURES = _signatures(hip_libdevice)  # AMD's names (__ocml_*, __triton_hip_*) for the same functions
HIP_GROUPS = collections.defaultdict(list)
for _sym, (_args, _ret, _fn) in sorted(HIP_SIGNATURES.items()):
    HIP_GROUPS[(_args, _ret)].append(_sym)


def kernel_text(symbols, arg_types, ret, n=N) -> str:
    """TTIR: load one tensor per argument, out[k*n:(k+1)*n] = symbols[k](args...)."""
    args, r = [TT[t] for t in arg_types], TT[ret]
    params = ", ".join(f"%a{i}: !tt.ptr<{t}>" for i, t in enumerate(args)) + f", %o: !tt.ptr<{r}>"
    body = [f"%offs = tt.make_range {{end = {n} : i32, start = 0 : i32}} : tensor<{n}xi32>"]
    for i, t in enumerate(args):
        body += [
            f"%p{i} = tt.splat %a{i} : !tt.ptr<{t}> -> tensor<{n}x!tt.ptr<{t}>>",
            f"%q{i} = tt.addptr %p{i}, %offs : tensor<{n}x!tt.ptr<{t}>>, tensor<{n}xi32>",
            f"%v{i} = tt.load %q{i} : tensor<{n}x!tt.ptr<{t}>>",
        ]
    body.append(f"%po = tt.splat %o : !tt.ptr<{r}> -> tensor<{n}x!tt.ptr<{r}>>")
    ins, types = ", ".join(f"%v{i}" for i in range(len(args))), ", ".join(f"tensor<{n}x{t}>" for t in args)
    for k, s in enumerate(symbols):
        body += [
            f"%c{k} = arith.constant dense<{k * n}> : tensor<{n}xi32>",
            f"%i{k} = arith.addi %offs, %c{k} : tensor<{n}xi32>",
            f"%qo{k} = tt.addptr %po, %i{k} : tensor<{n}x!tt.ptr<{r}>>, tensor<{n}xi32>",
            f'%r{k} = tt.extern_elementwise {ins} {{libname = "", libpath = "", pure = true, symbol = "{s}"}} '
            f": ({types}) -> tensor<{n}x{r}>",
            f"tt.store %qo{k}, %r{k} : tensor<{n}x!tt.ptr<{r}>>",
        ]
    lines = "\n".join(f"    {b}" for b in body + ["tt.return"])
    return f"module {{\n  tt.func public @libdevice_kernel({params}) {{\n{lines}\n  }}\n}}\n"


def scalar_kernel_text(symbols, arg_types, ret) -> str:
    """TTIR: one scalar load per argument, o[k] = symbols[k](args...) on scalars (no tensors)."""
    args, r = [TT[t] for t in arg_types], TT[ret]
    params = ", ".join(f"%a{i}: !tt.ptr<{t}>" for i, t in enumerate(args)) + f", %o: !tt.ptr<{r}>"
    body = [f"%v{i} = tt.load %a{i} : !tt.ptr<{t}>" for i, t in enumerate(args)]
    ins, types = ", ".join(f"%v{i}" for i in range(len(args))), ", ".join(args)
    for k, s in enumerate(symbols):
        body += [
            f"%c{k} = arith.constant {k} : i32",
            f"%q{k} = tt.addptr %o, %c{k} : !tt.ptr<{r}>, i32",
            f'%r{k} = tt.extern_elementwise {ins} {{libname = "", libpath = "", pure = true, symbol = "{s}"}} '
            f": ({types}) -> {r}",
            f"tt.store %q{k}, %r{k} : !tt.ptr<{r}>",
        ]
    lines = "\n".join(f"    {b}" for b in body + ["tt.return"])
    return f"module {{\n  tt.func public @libdevice_scalars({params}) {{\n{lines}\n  }}\n}}\n"


# ---- (a) completeness ------------------------------------------------------------------------------
def test_triton_libdevice_has_313_symbols():
    assert len(SIGNATURES) == 313, sorted(SIGNATURES)


def test_every_symbol_lowers():
    missing = []
    for (args, ret), symbols in GROUPS.items():
        for s in symbols:
            try:
                compile_text(kernel_text([s], args, ret, 8), s)
            except CompileError:
                missing.append(s)
    lowered = sorted(set(SIGNATURES) - set(missing))
    print(f"libdevice: {len(lowered)}/{len(SIGNATURES)} symbols lower; missing: {missing}")
    assert len(lowered) == 313 and not missing, missing


def test_every_symbol_is_in_the_table():
    assert set(PLATE_SIGNATURES) <= set(LIBDEVICE)


def test_every_generic_name_resolves_on_plate():
    generic = {n for n, f in inspect.getmembers(generic_libdevice, inspect.isfunction)}
    assert generic and generic <= {n for n, f in inspect.getmembers(PLATE_MODULE, callable)}


def test_an_unknown_symbol_names_the_function():
    text = kernel_text(["__nv_no_such_function"], ("fp32",), "fp32", 8)
    with pytest.raises(CompileError, match="__nv_no_such_function"):
        compile_text(text, "unknown")


# ---- (b) numerics: inputs -------------------------------------------------------------------------
RNG = np.random.default_rng(11)
F32_MAX, F64_MAX = float(np.finfo(np.float32).max), float(np.finfo(np.float64).max)
F32_SPECIAL = [math.nan, math.inf, -math.inf, 0.0, -0.0, 2.0**-149, -(2.0**-149), 3 * 2.0**-140, 2.0**-126, F32_MAX]
F32_SPECIAL += [-F32_MAX, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, 0.25, 1e-7, -1e-7, 10.0, -10.0, 1e10, -1e30, 24.5]
F32_SPECIAL += [1 - 2.0**-24, -(1 - 2.0**-24), 2 - 2.0**-22, 88.75, -103.5, 1e-38]
F64_SPECIAL = [math.nan, math.inf, -math.inf, 0.0, -0.0, 5e-324, -5e-324, 3e-310, 2.0**-1022, F64_MAX, -F64_MAX]
F64_SPECIAL += [1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, 0.25, 1e-15, -1e-15, 10.0, -10.0, 1e20, -1e300, 24.5]
F64_SPECIAL += [1 - 2.0**-53, -(1 - 2.0**-53), 2 - 2.0**-51, 709.75, -745.25, 1e-308]


def _floats(dtype, n=N, seed=0):
    rng = np.random.default_rng(seed)
    special = F32_SPECIAL if dtype == np.float32 else F64_SPECIAL
    big = 38 if dtype == np.float32 else 300
    rest = n - len(special)
    parts = [
        rng.uniform(-1, 1, rest // 4),
        rng.uniform(-30, 30, rest // 4),
        rng.choice([-1, 1], rest // 4) * 10.0 ** rng.uniform(-big, big, rest // 4),
    ]
    parts.append(rng.uniform(0, 4, rest - sum(len(p) for p in parts)))
    return np.concatenate([np.array(special), *parts]).astype(dtype)


def _ints(dtype, n=N, seed=0):
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    special = [0, 1, info.max, info.min, 2, 3, 0xFFFFFF, 0x800000, 0x7F, 0x12345678 % (info.max + 1)]
    if info.min < 0:
        special += [-1, -2, -0x800000]
    if info.bits == 64:
        special += [2**53 + 1, 2**62 + 3, 2**53 - 1]
    rand = rng.integers(info.min, info.max, n - len(special), dtype=dtype, endpoint=True)
    small = rng.integers(max(info.min, -1000), 1000, n // 4, dtype=dtype)
    rand[: len(small)] = small
    return np.concatenate([np.array(special, dtype=dtype), rand]).astype(dtype)


def inputs(args: tuple) -> list:
    """One array per argument: edge values first, then random ones; the second float operand
    negates or repeats the first on a few lanes (exact zero sums, x / x)."""
    out = []
    for i, t in enumerate(args):
        if t.startswith("fp"):
            x = _floats(NP[t], seed=i)
            if i > 0 and out and out[0].dtype == x.dtype:
                x[:12], x[12:20] = -out[0][:12], out[0][12:20]
        else:
            x = _ints(NP[t], seed=i)
        out.append(x)
    if args[0] == "int32" and args[1:2] in (("fp32",), ("fp64",)):  # jn, yn: small orders
        out[0] = np.resize(np.array([0, 1, 2, 3, 5, 8, 13, 30, -1], np.int32), N)
    if args[0].startswith("fp") and args[1:] == ("int32",):  # ldexp, scalbn, powi: exponents
        n = [0, 1, -1, 2, 3, -3, 7, 20, -20, 64, -64, 150, -150, 300, -300, 1100, -1100, 2**31 - 1, -(2**31)]
        out[1] = np.resize(np.array(n, np.int32), N)
        out[1][len(n) :] = RNG.integers(-400, 400, N - len(n))
    if len(args) == 3 and args[0].startswith("fp"):  # fma, norm3d: near-cancelling a*b + c
        with np.errstate(all="ignore"):
            p = out[0].astype(np.float64) * out[1].astype(np.float64)
            out[2][40:60] = -p[40:60].astype(out[2].dtype)
    return out


# ---- (b) numerics: the test --------------------------------------------------------------------------
def _ordinal(x) -> list:
    ints = x.view(np.int32 if x.itemsize == 4 else np.int64).tolist()
    top = -(2 ** (8 * x.itemsize - 1))
    return [top - i if i < 0 else i for i in ints]


def mismatches(got, want, tol) -> np.ndarray:
    """Indices where got is not want within tol (0: bit-exact; k: ulps; ("abs", k, atol); ("rel", r, atol))."""
    if got.dtype.kind != "f":
        return np.nonzero(got != want)[0]
    nan = np.isnan(got) | np.isnan(want)
    bad = np.isnan(got) != np.isnan(want)
    if tol == 0:
        return np.nonzero(
            bad
            | (~nan & (got.view(np.uint8).reshape(len(got), -1) != want.view(np.uint8).reshape(len(got), -1)).any(1))
        )[0]
    inf = np.isinf(got) | np.isinf(want)
    bad |= inf & ~nan & (got != want)
    zero = (got == 0) & (want == 0)
    if isinstance(tol, int):  # an underflowing Bessel value's sign is the reference's guess
        bad |= zero & (np.signbit(got) != np.signbit(want))
    k, atol = (tol, 0.0) if isinstance(tol, int) else (tol[1], tol[2])
    ulps = np.array([abs(a - b) for a, b in zip(_ordinal(got), _ordinal(want))], dtype=float)
    with np.errstate(all="ignore"):
        err = np.abs(got.astype(np.float64) - want.astype(np.float64))
    if isinstance(tol, tuple) and tol[0] == "rel":
        close = err <= np.maximum(k * np.abs(want.astype(np.float64)), atol)
    else:
        close = (ulps <= k) | (err <= atol)
    bad |= ~nan & ~inf & ~close
    return np.nonzero(bad)[0]


@pytest.mark.parametrize("signature", sorted(GROUPS), ids=lambda s: "-".join(s[0]) + "->" + s[1])
def test_numerics_on_edge_values(signature):
    check_numerics(GROUPS[signature], *signature, PLATE_SIGNATURES)


def check_numerics(symbols, args, ret, signatures):
    program, _ = compile_text(kernel_text(symbols, args, ret), "libdevice_" + "_".join(args))
    xs = inputs(args)
    outs, _ = run(program, 1, [*xs, np.zeros(N * len(symbols), NP[ret])])
    failures = []
    for k, symbol in enumerate(symbols):
        fn = signatures[symbol][2]
        got = outs[-1][k * N : (k + 1) * N]
        with np.errstate(all="ignore"):  # overflow to inf is part of the references
            want, tol = REFERENCE[fn](xs, ret)
        want = np.asarray(want).astype(NP[ret])
        bad = mismatches(got, want, tol)
        if len(bad):
            rows = [f"{[x[i] for x in xs]} -> {got[i]!r}, want {want[i]!r}" for i in bad[:4]]
            failures.append(f"{symbol} ({len(bad)} of {N}): " + "; ".join(rows))
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("signature", sorted(GROUPS), ids=lambda s: "-".join(s[0]) + "->" + s[1])
def test_scalar_operands_give_the_tensor_results(signature):
    """Scalars go through 1-element tiles: every symbol on the first lanes' values, as scalars."""
    args, ret = signature
    symbols = GROUPS[signature]
    lanes = 3
    tensor, _ = compile_text(kernel_text(symbols, args, ret, lanes), "libdevice_lanes")
    scalar, _ = compile_text(scalar_kernel_text(symbols, args, ret), "libdevice_scalars")
    xs = [x[5 : 5 + lanes] for x in inputs(args)]  # past the NaNs and infinities
    (*_, want), _ = run(tensor, 1, [*xs, np.zeros(lanes * len(symbols), NP[ret])])
    for lane in range(lanes):
        (*_, got), _ = run(scalar, 1, [*(x[lane : lane + 1] for x in xs), np.zeros(len(symbols), NP[ret])])
        expect = np.ascontiguousarray(want[lane::lanes])
        same = (got.view(np.uint8) == expect.view(np.uint8)).reshape(len(symbols), -1).all(1)
        same |= np.isnan(got) & np.isnan(expect) if got.dtype.kind == "f" else same
        assert same.all(), [(s, got[k], expect[k]) for k, s in enumerate(symbols) if not same[k]]


def test_every_function_has_a_reference():
    assert {fn for _, _, fn in PLATE_SIGNATURES.values()} <= set(REFERENCE)


# ---- (c) AMD's libdevice names ----------------------------------------------------------------------
def test_every_amd_name_is_in_the_table():
    """A kernel written against triton.language.extra.hip.libdevice compiles on PLATE (its __ocml_* symbols
    were refused as functions with no PLATE equivalent)."""
    assert len(HIP_SIGNATURES) == 109
    assert set(HIP_SIGNATURES) <= set(LIBDEVICE), sorted(set(HIP_SIGNATURES) - set(LIBDEVICE))
    assert {fn for _, _, fn in HIP_SIGNATURES.values()} <= set(REFERENCE)


@pytest.mark.parametrize("signature", sorted(HIP_GROUPS), ids=lambda s: "-".join(s[0]) + "->" + s[1])
def test_amd_names_compute_their_functions(signature):
    check_numerics(HIP_GROUPS[signature], *signature, HIP_SIGNATURES)


# ---- (d) PTX instructions that run as libdevice functions (passes/ptx_asm.py) ------------------------
def test_every_ptx_instruction_is_a_libdevice_function_of_its_arity_and_type():
    for instr, symbol in ptx_asm.PTX_INSTRUCTIONS.items():
        args, ret, _ = PLATE_SIGNATURES[symbol]
        width = {"f32": {"fp32"}, "f64": {"fp64"}}.get(instr.rsplit(".", 1)[-1], {"int32", "uint32"})
        assert len(args) == ptx_asm.arity(instr) and set(args) <= width and ret in width, (instr, symbol, args, ret)
