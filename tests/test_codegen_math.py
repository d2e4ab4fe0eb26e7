"""Code generation of math.*, libdevice (tt.extern_elementwise) and the tt math ops."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import triton
import triton.language as tl
from codegen_kernels.harness import close, compile_kernel, compile_text, run, ttir_of
from triton.language.extra.cuda import libdevice

from triton_plate_backend.errors import CompileError
from triton_plate_backend.isa.table import ENUMS, ISA
from triton_plate_backend.passes import ptx_asm, rules_math

RNG = np.random.default_rng(2)
N = 64
SIG = {"x": "*fp32", "o": "*fp32", "BLOCK": "constexpr"}


@triton.jit
def unary_fns(x, o, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + offs)
    base = o + offs * 16
    tl.store(base + 0, tl.exp(v))
    tl.store(base + 1, tl.exp2(v))
    tl.store(base + 2, tl.log(v))
    tl.store(base + 3, tl.log2(v))
    tl.store(base + 4, tl.sqrt(v))
    tl.store(base + 5, tl.rsqrt(v))
    tl.store(base + 6, tl.sin(v))
    tl.store(base + 7, tl.cos(v))
    tl.store(base + 8, tl.abs(v - 2.0))
    tl.store(base + 9, tl.floor(v - 2.0))
    tl.store(base + 10, tl.ceil(v - 2.0))
    tl.store(base + 11, tl.erf(v - 2.0))
    tl.store(base + 12, tl.sqrt_rn(v))
    tl.store(base + 13, tl.div_rn(v, v + 1.0))
    tl.store(base + 14, tl.clamp(v, 1.0, 3.0))
    tl.store(base + 15, tl.sigmoid(v))


def test_unary_math():
    v = RNG.uniform(0.1, 4, N).astype(np.float32)
    (_, out), _ = run(compile_kernel(unary_fns, SIG, {"BLOCK": N}), 1, [v, np.zeros((N, 16), np.float32)])
    d = v.astype(np.float64)
    erf = np.vectorize(math.erf)
    want = np.stack(
        [
            np.exp(d),
            np.exp2(d),
            np.log(d),
            np.log2(d),
            np.sqrt(d),
            1 / np.sqrt(d),
            np.sin(d),
            np.cos(d),
            np.abs(d - 2),
            np.floor(d - 2),
            np.ceil(d - 2),
            erf(d - 2),
            np.sqrt(d),
            d / (d + 1),
            np.clip(d, 1, 3),
            1 / (1 + np.exp(-d)),
        ],
        1,
    )
    close(out, want, rtol=2e-6, atol=1e-6)


@triton.jit
def libdevice_fns(x, o, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + offs)
    base = o + offs * 8
    tl.store(base + 0, libdevice.tanh(v))
    tl.store(base + 1, libdevice.pow(v, 1.5))
    tl.store(base + 2, libdevice.atan2(v, v + 1.0))
    tl.store(base + 3, libdevice.isnan(v / (v - v)).to(tl.float32))
    tl.store(base + 4, libdevice.round(v * 4.0))
    tl.store(base + 5, libdevice.log1p(v))
    tl.store(base + 6, libdevice.trunc(-v))
    tl.store(base + 7, libdevice.isinf(v / (v - v)).to(tl.float32))


def test_libdevice():
    v = RNG.uniform(0.1, 3, N).astype(np.float32)
    v[:4] = [0.125, 0.375, 1.125, 2.625]  # *4 -> .5 cases: round half away from zero
    (_, out), _ = run(compile_kernel(libdevice_fns, SIG, {"BLOCK": N}), 1, [v, np.zeros((N, 8), np.float32)])
    d = v.astype(np.float64)
    half_away = np.sign(d * 4) * np.floor(np.abs(d * 4) + 0.5)
    want = np.stack(
        [np.tanh(d), d**1.5, np.arctan2(d, d + 1), np.zeros(N), half_away, np.log1p(d), np.trunc(-d), np.ones(N)], 1
    )
    close(out, want, rtol=2e-6, atol=1e-6)


@triton.jit
def rounding_to_int(x, o, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + offs)
    tl.store(o + offs * 2, libdevice.llrint(v))
    tl.store(o + offs * 2 + 1, libdevice.llround(v))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_llrint_and_llround_give_int64(dtype):
    # Python's round(float) in a compiled graph lowers to llrint: half to even, while llround goes away from zero
    v = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999, 3.7, -3.7, 1e10, -7.0, 0.0, 4.5, -4.5, 1e-3, -0.0], dtype)
    sig = {"x": "*fp32" if dtype == np.float32 else "*fp64", "o": "*i64", "BLOCK": "constexpr"}
    (_, out), _ = run(compile_kernel(rounding_to_int, sig, {"BLOCK": len(v)}), 1, [v, np.zeros((len(v), 2), np.int64)])
    d = v.astype(np.float64)
    assert out[:, 0].tolist() == np.rint(d).astype(np.int64).tolist()
    assert out[:, 1].tolist() == (np.sign(d) * np.floor(np.abs(d) + 0.5)).astype(np.int64).tolist()


@triton.jit
def f64_fns(x, o, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    d = tl.load(x + offs)
    tl.store(o + offs, libdevice.cbrt(d) + tl.exp(d))


def test_f64_math():
    x = RNG.uniform(-2, 2, N)
    (_, out), _ = run(
        compile_kernel(f64_fns, {"x": "*fp64", "o": "*fp64", "BLOCK": "constexpr"}, {"BLOCK": N}), 1, [x, np.zeros(N)]
    )
    close(out, np.cbrt(x) + np.exp(x), rtol=1e-13)


@triton.jit
def inline_asm(x, o, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + offs)
    r = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [v], dtype=tl.float32, is_pure=True, pack=1)
    tl.store(o + offs, r)


def test_inline_asm_is_rejected_with_the_source_line():
    text = ttir_of(inline_asm, SIG, {"BLOCK": N})
    with pytest.raises(CompileError) as e:
        compile_text(text, "inline_asm")
    msg = str(e.value)
    assert "tt.elementwise_inline_asm" in msg and "PTX inline assembly cannot run on PLATE" in msg
    assert "test_codegen_math.py:" in msg  # the kernel's source line
    assert "'mov.b32 $0, $1;'" in msg  # and the PTX it refuses


@triton.jit
def dependent_launch(x, o, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.extra.cuda.gdc_wait()  # Triton's tutorial 11 (programmatic dependent launch)
    v = tl.load(x + offs)
    tl.extra.cuda.gdc_launch_dependents()
    tl.store(o + offs, v * 2.0)


def test_grid_dependency_control_asm_runs_as_nothing():
    """gdc_wait / gdc_launch_dependents are PTX asm the scheduler reads: nothing to run on PLATE,
    where a launch starts after the one before has ended (they were refused as inline asm)."""
    text = ttir_of(dependent_launch, SIG, {"BLOCK": N})
    assert text.count("tt.elementwise_inline_asm") == 2 and "griddepcontrol.wait" in text
    x = RNG.uniform(-2, 2, N).astype(np.float32)
    (_, out), _ = run(compile_text(text, "dependent_launch")[0], 1, [x, np.zeros(N, np.float32)])
    np.testing.assert_array_equal(out, x * 2.0)


@triton.jit
def rounded_asm(x, y, z, o, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a, b, c = tl.load(x + offs), tl.load(y + offs), tl.load(z + offs)
    ab = tl.inline_asm_elementwise("mul.rn.f32 $0, $1, $2;", "=f,f,f", [a, b], dtype=tl.float32, is_pure=True, pack=1)
    s = tl.inline_asm_elementwise("add.rn.f32 $0, $1, $2;", "=r,r,r", [ab, c], dtype=tl.float32, is_pure=True, pack=1)
    tl.store(o + offs, s)
    q = tl.inline_asm_elementwise("div.rn.f32 $0, $1, $2;", "=f,f,f", [a, b], dtype=tl.float32, is_pure=True, pack=1)
    tl.store(o + BLOCK + offs, q)
    f = tl.inline_asm_elementwise(
        "fma.rz.f32 $0, $1, $2, $3;", "=f,f,f,f", [a, b, c], dtype=tl.float32, is_pure=True, pack=1
    )
    tl.store(o + 2 * BLOCK + offs, f)
    t = tl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=f,f", [a], dtype=tl.float32, is_pure=True, pack=1)
    tl.store(o + 3 * BLOCK + offs, t)


def test_one_ptx_instruction_computes_its_libdevice_twin():
    """Kernels pin IEEE rounding with single-instruction asm (mul.rn/add.rn: no contraction, div.rn) or ask for
    an approximation (tanh.approx): each runs as the libdevice function of the same meaning (they were refused)."""
    sig = {"x": "*fp32", "y": "*fp32", "z": "*fp32", "o": "*fp32", "BLOCK": "constexpr"}
    x, y, z = (RNG.standard_normal(N).astype(np.float32) for _ in range(3))
    (*_, out), _ = run(compile_kernel(rounded_asm, sig, {"BLOCK": N}), 1, [x, y, z, np.zeros(4 * N, np.float32)])
    np.testing.assert_array_equal(out[:N], x * y + z)  # numpy rounds the product, then the sum
    np.testing.assert_array_equal(out[N : 2 * N], x / y)
    rz = []  # x * y + z exactly, rounded toward zero
    for a, b, c in zip(x.tolist(), y.tolist(), z.tolist()):
        exact = Fraction(a) * Fraction(b) + Fraction(c)
        r = np.float32(float(exact))
        rz.append(np.nextafter(r, np.float32(0)) if abs(Fraction(float(r))) > abs(exact) else r)
    np.testing.assert_array_equal(out[2 * N : 3 * N], np.array(rz, np.float32))
    close(out[3 * N :], np.tanh(x), rtol=1e-6, atol=1e-7)


@triton.jit
def tf32_asm(x, o, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + offs)
    tl.store(
        o + offs,
        tl.inline_asm_elementwise("cvt.rna.tf32.f32 $0, $1;", "=r,r", [v], dtype=tl.float32, is_pure=True, pack=1),
    )


def test_tf32_rounding_asm_rounds_ties_away():
    """cvt.rna.tf32.f32 (kernels that emulate 3xTF32 split their operands with it): 10 mantissa bits, to
    nearest, ties away from zero; the carry out of the largest finite values gives inf; NaN/inf unchanged."""
    bits = np.array(
        [0x3F801000, 0xBF801000, 0x3F800FFF, 0x3F803000, 0x3F802FFF, 0x7F7FFFFF, 0xFF7FF000, 0x7F800000, 0xFF800000,
         0x7FC00001, 0x00000000, 0x80000000, 0x3F800000, 0x4049FDB0],
        np.uint32,
    )  # fmt: skip
    x = np.concatenate([bits.view(np.float32), RNG.standard_normal(N - len(bits)).astype(np.float32)])
    (_, out), _ = run(compile_kernel(tf32_asm, SIG, {"BLOCK": N}), 1, [x, np.zeros(N, np.float32)])
    u = x.view(np.uint32)
    want = np.where(np.isfinite(x), (u + np.uint32(0x1000)) & np.uint32(0xFFFFE000), u)
    np.testing.assert_array_equal(out.view(np.uint32), want)
    assert out.view(np.uint32)[:6].tolist() == [0x3F802000, 0xBF802000, 0x3F800000, 0x3F804000, 0x3F802000, 0x7F800000]


@triton.jit
def bits_asm(x, y, o, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a, b = tl.load(x + offs), tl.load(y + offs)
    tl.store(o + offs, tl.inline_asm_elementwise("popc.b32 $0, $1;", "=r,r", [a], dtype=tl.int32, is_pure=True, pack=1))
    tl.store(
        o + BLOCK + offs,
        tl.inline_asm_elementwise("clz.b32 $0, $1;", "=r,r", [a], dtype=tl.int32, is_pure=True, pack=1),
    )
    tl.store(
        o + 2 * BLOCK + offs,
        tl.inline_asm_elementwise("brev.b32 $0, $1;", "=r,r", [a], dtype=tl.int32, is_pure=True, pack=1),
    )
    hi = tl.inline_asm_elementwise("mul.hi.u32 $0, $1, $2;", "=r,r,r", [a, b], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(o + 3 * BLOCK + offs, hi)
    his = tl.inline_asm_elementwise("mul.hi.s32 $0, $1, $2;", "=r,r,r", [a, b], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(o + 4 * BLOCK + offs, his)


def test_integer_ptx_instructions():
    sig = {"x": "*i32", "y": "*i32", "o": "*i32", "BLOCK": "constexpr"}
    x, y = (RNG.integers(-(2**31), 2**31, N, dtype=np.int64).astype(np.int32) for _ in range(2))
    x[:3] = [0, -1, 1]
    (*_, out), _ = run(compile_kernel(bits_asm, sig, {"BLOCK": N}), 1, [x, y, np.zeros(5 * N, np.int32)])
    u, v = x.view(np.uint32).astype(np.uint64), y.view(np.uint32).astype(np.uint64)
    ints = [int(a) for a in u]
    np.testing.assert_array_equal(out[:N], [bin(a).count("1") for a in ints])
    np.testing.assert_array_equal(out[N : 2 * N], [32 - a.bit_length() for a in ints])
    np.testing.assert_array_equal(out[2 * N : 3 * N].view(np.uint32), [int(f"{a:032b}"[::-1], 2) for a in ints])
    np.testing.assert_array_equal(out[3 * N : 4 * N].view(np.uint32), ((u * v) >> np.uint64(32)).astype(np.uint32))
    signed = [(int(a) * int(b)) >> 32 for a, b in zip(x, y)]
    np.testing.assert_array_equal(out[4 * N :], np.array(signed, np.int64).astype(np.int32))


def test_asm_text_is_matched_whatever_its_spacing_and_only_on_its_types():
    f32 = (["f32", "f32"], ["f32"])
    for text in ("add.rn.f32 $0, $1, $2;", "{ add.rn.f32 $0,$1 ,$2 ; }", "\n  add.rn.f32  $0, $1, $2;  // sum\n"):
        assert ptx_asm.meaning(text, *f32, 1) == "__nv_fadd_rn", text
    assert ptx_asm.meaning("add.rn.f32 $0, $2, $1;", *f32, 1) is None  # operands in another order
    assert ptx_asm.meaning("add.rn.f32 $0, $1, $2;", *f32, 2) is None  # packed
    assert ptx_asm.meaning("add.rn.f32 $0, $1, $2;", ["f16", "f16"], ["f16"], 1) is None
    assert ptx_asm.meaning("add.rn.f32 $0, $1, $2; add.rn.f32 $0, $0, $2;", *f32, 1) is None  # two instructions
    assert ptx_asm.meaning("griddepcontrol.wait; // dummy $0", [], ["i32"], 1) == ptx_asm.NOTHING
    assert ptx_asm.meaning("cvt.u32.u8 $0, $1;", ["i8"], ["i32"], 1) is None  # a type suffix the table lacks


@triton.jit
def misnumbered_asm(x, o, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + offs)
    tl.store(
        o + offs,
        tl.inline_asm_elementwise("add.rn.f32 $0, $1, $1;", "=f,f", [v], dtype=tl.float32, is_pure=True, pack=1),
    )


def test_an_instruction_whose_operands_do_not_match_is_refused():
    with pytest.raises(CompileError, match=r"PTX inline assembly cannot run on PLATE.*'add.rn.f32 \$0, \$1, \$1;'"):
        compile_text(ttir_of(misnumbered_asm, SIG, {"BLOCK": N}), "misnumbered_asm")


@triton.jit
def timer_asm(o):
    tl.store(o, tl.extra.cuda.globaltimer())


def test_asm_with_a_result_outside_the_table_is_refused():
    with pytest.raises(CompileError, match=r"PTX inline assembly cannot run on PLATE.*%globaltimer"):
        compile_text(ttir_of(timer_asm, {"o": "*i64"}), "timer_asm")


def test_unknown_libdevice_symbol_names_it():
    text = ttir_of(libdevice_fns, SIG, {"BLOCK": N}).replace("__nv_tanhf", "__nv_mystery")
    with pytest.raises(CompileError, match="__nv_mystery"):
        compile_text(text, "libdevice_fns")


def test_libdevice_table_maps_to_real_instructions():
    for symbol, lowering in rules_math.LIBDEVICE.items():
        if isinstance(lowering, tuple):  # steps (mnemonic, dst, srcs, *suffixes): real rows, legal suffixes
            for mnemonic, _, _, *suffixes in lowering:
                assert mnemonic in ISA and len(suffixes) == len(ISA[mnemonic].suffixes), f"{symbol} -> {mnemonic}"
                for enum, value in zip(ISA[mnemonic].suffixes, suffixes):
                    assert value in ENUMS[enum], f"{symbol} -> {mnemonic}.{value}"
        else:
            assert lowering in ISA or lowering in rules_math.COMPOSITE, f"{symbol} -> {lowering}"
    for op_name, mnemonic in rules_math.MATH.items():
        assert mnemonic in ISA, f"{op_name} -> {mnemonic}"
    for must in ("__nv_expf", "__nv_tanhf", "__nv_erff", "__nv_rsqrtf", "__nv_powf", "__nv_isnanf", "__nv_cbrt"):
        assert must in rules_math.LIBDEVICE
