"""Code generation of tt.dot: input types, precisions, accumulator types, one whole-tile m.mma
per K chunk, transposed operands and batched (3-D) dots."""

from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np
import pytest
import triton
import triton.language as tl
from codegen_kernels.harness import MACHINE, close, compile_kernel, run
from triton._C.libtriton import ir

from triton_plate_backend.isa.program import Inst, Tile
from triton_plate_backend.isa.table import ENUMS
from triton_plate_backend.passes.rules_dot import PRECISION_BY_INDEX

RNG = np.random.default_rng(6)


@triton.jit
def dot_kernel(
    a,
    b,
    c,
    o,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    PREC: tl.constexpr,
    OUT: tl.constexpr,
    TRANS_B: tl.constexpr,
):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    av = tl.load(a + rm[:, None] * BK + rk[None, :])
    if TRANS_B:
        bv = tl.trans(tl.load(b + rn[:, None] * BK + rk[None, :]))
    else:
        bv = tl.load(b + rk[:, None] * BN + rn[None, :])
    cv = tl.load(c + rm[:, None] * BN + rn[None, :])
    d = tl.dot(av, bv, cv, input_precision=PREC, out_dtype=OUT)
    tl.store(o + rm[:, None] * BN + rn[None, :], d)


def _dot(a_dt, c_dt, bm, bn, bk, prec="ieee", trans_b=False, machine=MACHINE):
    tl_name = {
        np.float16: "fp16",
        ml_dtypes.bfloat16: "bf16",
        np.float32: "fp32",
        np.float64: "fp64",
        np.int8: "i8",
        np.int32: "i32",
        ml_dtypes.float8_e4m3fn: "fp8e4nv",
    }
    sig = {
        "a": f"*{tl_name[a_dt]}",
        "b": f"*{tl_name[a_dt]}",
        "c": f"*{tl_name[c_dt]}",
        "o": f"*{tl_name[c_dt]}",
        "BM": "constexpr",
        "BN": "constexpr",
        "BK": "constexpr",
        "PREC": "constexpr",
        "OUT": "constexpr",
        "TRANS_B": "constexpr",
    }
    out_dt = {np.float16: tl.float16, np.float32: tl.float32, np.float64: tl.float64, np.int32: tl.int32}[c_dt]
    prog = compile_kernel(
        dot_kernel,
        sig,
        {"BM": bm, "BN": bn, "BK": bk, "PREC": prec, "OUT": out_dt, "TRANS_B": trans_b},
        machine=machine,
    )
    if a_dt is np.int8:
        a, b = (RNG.integers(-128, 128, s).astype(np.int8) for s in ((bm, bk), (bk, bn)))
        c = RNG.integers(-1000, 1000, (bm, bn)).astype(np.int32)
    else:
        a, b = (RNG.uniform(-1, 1, s).astype(a_dt) for s in ((bm, bk), (bk, bn)))
        c = RNG.uniform(-1, 1, (bm, bn)).astype(c_dt)
    b_in = np.ascontiguousarray(b.T) if trans_b else b
    (_, _, _, out), _ = run(prog, 1, [a, b_in, c, np.zeros((bm, bn), c_dt)], machine=machine)
    return a, b, c, out, prog


@pytest.mark.parametrize("a_dt", [np.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn])
def test_low_precision_inputs_f32_acc(a_dt):
    a, b, c, out, _ = _dot(a_dt, np.float32, 64, 32, 32)
    close(out, a.astype(np.float64) @ b.astype(np.float64) + c, rtol=1e-5, atol=1e-5)


def test_f16_accumulator():
    a, b, c, out, _ = _dot(np.float16, np.float16, 32, 32, 16)
    close(
        out,
        (a.astype(np.float32) @ b.astype(np.float32) + c.astype(np.float32)).astype(np.float16),
        rtol=2e-3,
        atol=2e-3,
    )


def _tf32(x):
    bits = x.astype(np.float32).view(np.uint32)
    return ((bits + 0xFFF + ((bits >> 13) & 1)) & 0xFFFFE000).view(np.float32)


@pytest.mark.parametrize("prec", ["ieee", "tf32", "tf32x3"])
def test_fp32_precisions(prec):
    a, b, c, out, prog = _dot(np.float32, np.float32, 32, 64, 32, prec=prec)
    assert any(ins.mnemonic == "m.mma" and ins.suffixes == (prec,) for ins in prog.instrs)
    exact = a.astype(np.float64) @ b.astype(np.float64) + c
    if prec == "tf32":
        close(out, _tf32(a).astype(np.float64) @ _tf32(b).astype(np.float64) + c, rtol=1e-5, atol=1e-5)
        assert np.abs(out - exact).max() > 1e-6  # tf32 really drops bits
    else:
        close(out, exact, rtol=1e-5, atol=1e-5)


def test_generic_form_precision_indices_are_triton_s_and_the_isa_s():
    """A generic-form tt.dot carries inputPrecision as Triton's enum index; each index names an m.mma
    precision of the ISA table."""
    triton_index = {name.lower(): int(v) for name, v in ir.INPUT_PRECISION.__members__.items()}
    assert {name: k for k, name in PRECISION_BY_INDEX.items()} == triton_index
    assert sorted(PRECISION_BY_INDEX.values()) == sorted(ENUMS["prec"])


def test_int8_to_int32():
    a, b, c, out, _ = _dot(np.int8, np.int32, 32, 32, 64)
    np.testing.assert_array_equal(out, a.astype(np.int32) @ b.astype(np.int32) + c)


def test_f64_accumulates_in_f64():  # upstream test_dot3d[...-float64-float64]
    a, b, c, out, prog = _dot(np.float64, np.float64, 32, 32, 16)
    assert out.dtype == np.float64 and any(ins.mnemonic == "m.mma" for ins in prog.instrs)
    close(out, a @ b + c, rtol=1e-12, atol=1e-12)


def test_k_chunks_of_max_k_over_the_whole_tile():
    machine = dataclasses.replace(
        MACHINE,
        name="mini-k16",
        core=dataclasses.replace(MACHINE.core, matrix=dataclasses.replace(MACHINE.core.matrix, max_k=16)),
    )
    a, b, c, out, prog = _dot(np.float16, np.float32, 64, 128, 64, trans_b=True, machine=machine)
    close(out, a.astype(np.float64) @ b.astype(np.float64) + c, rtol=1e-5, atol=1e-5)
    mmas = [
        (prog.tiles[ins.operands[0]].shape, prog.tiles[ins.operands[1]].shape)
        for ins in prog.instrs
        if ins.mnemonic == "m.mma"
    ]
    assert mmas == [((64, 128), (64, 16))] * 4


def test_one_m_mma_covers_the_whole_output_tile():
    """Each m.mma pays one fill whatever its M x N (the 32x32 array makes the passes), so a dot is
    one instruction over the whole output tile and its whole K (K <= max_k)."""
    a, b, c, out, prog = _dot(ml_dtypes.bfloat16, np.float32, 64, 128, 256)
    close(out, a.astype(np.float64) @ b.astype(np.float64) + c, rtol=1e-5, atol=1e-5)
    pieces = [
        (prog.tiles[ins.operands[0]].shape, prog.tiles[ins.operands[1]].shape, prog.tiles[ins.operands[2]].shape)
        for ins in prog.instrs
        if ins.mnemonic == "m.mma"
    ]
    assert pieces == [((64, 128), (64, 256), (256, 128))]


@pytest.mark.parametrize("cut", ["rows", "32x32"])
@pytest.mark.parametrize(
    "a_dt, prec",
    [(ml_dtypes.bfloat16, "ieee"), (np.float16, "ieee"), (ml_dtypes.float8_e4m3fn, "ieee"), (np.int8, "ieee")]
    + [(np.float32, p) for p in ("ieee", "tf32", "tf32x3", "bf16x3", "bf16x6")],
)
def test_whole_tile_result_equals_the_pieces(a_dt, prec, cut):
    """Cutting an m.mma into 32-row pieces computes the same bits: the simulator sums every m.mma
    in 32-row blocks, so the host BLAS sees the same shapes. Cut in 32x32 pieces too, the bits are
    the same where the sum is exact or taken in fp64 (int8, fp32 ieee); otherwise the BLAS's order
    can depend on N, and the pieces agree with the whole within fp32 summation error."""
    c_dt = np.int32 if a_dt is np.int8 else np.float32
    a, b, c, out, prog = _dot(a_dt, c_dt, 64, 64, 32, prec=prec)
    (mma,) = [i for i in prog.instrs if i.mnemonic == "m.mma"]
    acc_t, a_t, b_t = (prog.tiles[v] for v in mma.operands)

    def view(t, row, col, rows, cols):
        return Tile(t.addr + (row * t.strides[0] + col * t.strides[1]) * t.itemsize, t.dtype, (rows, cols), t.strides)

    tiles, pieces = list(prog.tiles), []
    width = 64 if cut == "rows" else 32
    for i in (0, 32):
        for j in range(0, 64, width):
            tiles += (view(acc_t, i, j, 32, width), view(a_t, i, 0, 32, 32), view(b_t, 0, j, 32, width))
            pieces.append(Inst("m.mma", mma.suffixes, tuple(range(len(tiles) - 3, len(tiles))), mma.loc))
    at = prog.instrs.index(mma)
    cut_prog = dataclasses.replace(prog, instrs=prog.instrs[:at] + pieces + prog.instrs[at + 1 :], tiles=tiles)
    args = [a, b, c, np.zeros_like(c)]
    (*_, whole), _ = run(prog, 1, args)
    (*_, pieced), _ = run(cut_prog, 1, args)
    assert len(pieces) == (2 if cut == "rows" else 4)
    if cut == "rows" or a_dt is np.int8 or (a_dt is np.float32 and prec == "ieee"):
        assert whole.view(np.uint32).tolist() == pieced.view(np.uint32).tolist()
    else:
        wide = [x.astype(np.float64) for x in (a, b, c)]
        bound = 8 * 32 * np.finfo(np.float32).eps * (np.abs(wide[0]) @ np.abs(wide[1]) + np.abs(wide[2]))
        assert np.all(np.abs(whole.astype(np.float64) - pieced.astype(np.float64)) <= bound)


@triton.jit
def batched(a, b, o, BB: tl.constexpr, BM: tl.constexpr):
    r = tl.arange(0, BM)
    rb = tl.arange(0, BB)
    offs = rb[:, None, None] * BM * BM + r[None, :, None] * BM + r[None, None, :]
    tl.store(o + offs, tl.dot(tl.load(a + offs), tl.load(b + offs)))


def test_batched_dot():
    a = RNG.uniform(-1, 1, (2, 16, 16)).astype(np.float16)
    b = RNG.uniform(-1, 1, (2, 16, 16)).astype(np.float16)
    prog = compile_kernel(
        batched, {"a": "*fp16", "b": "*fp16", "o": "*fp32", "BB": "constexpr", "BM": "constexpr"}, {"BB": 2, "BM": 16}
    )
    (_, _, out), _ = run(prog, 1, [a, b, np.zeros((2, 16, 16), np.float32)])
    close(out, np.einsum("bmk,bkn->bmn", a.astype(np.float64), b.astype(np.float64)), rtol=1e-5, atol=1e-5)


@triton.jit
def dot_scaled_lhs_only(a, sa, b, o, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    av = tl.load(a + rm[:, None] * BK + rk[None, :])
    sv = tl.load(sa + rm[:, None] * (BK // 32) + tl.arange(0, BK // 32)[None, :])
    bv = tl.load(b + rk[:, None] * BN + rn[None, :])
    d = tl.dot_scaled(av, sv, "e4m3", bv, None, "bf16")
    tl.store(o + rm[:, None] * BN + rn[None, :], d)


def test_dot_scaled_with_one_scale_and_a_bf16_side():  # upstream test_scaled_dot[...-e4m3-bf16-...]
    bm, bn, bk = 32, 32, 64
    sig = {"a": "*fp8e4nv", "sa": "*u8", "b": "*bf16", "o": "*fp32", "BM": "constexpr", "BN": "constexpr"}
    prog = compile_kernel(dot_scaled_lhs_only, {**sig, "BK": "constexpr"}, {"BM": bm, "BN": bn, "BK": bk})
    a = RNG.uniform(-2, 2, (bm, bk)).astype(ml_dtypes.float8_e4m3fn)
    sa = RNG.integers(120, 135, (bm, bk // 32)).astype(np.uint8)
    b = RNG.uniform(-1, 1, (bk, bn)).astype(ml_dtypes.bfloat16)
    (_, _, _, out), _ = run(prog, 1, [a, sa, b, np.zeros((bm, bn), np.float32)])
    a_scaled = a.astype(np.float64) * np.repeat(2.0 ** (sa.astype(np.float64) - 127), 32, axis=1)
    close(out, a_scaled @ b.astype(np.float64), rtol=1e-5, atol=1e-5)


E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])  # OCP MX spec, table 5


def unpack_e2m1(packed: np.ndarray, axis: int) -> np.ndarray:
    """Two codes per byte along axis, element 2i in the low nibble (Triton's packing)."""
    lo, hi = E2M1[packed & 15], E2M1[packed >> 4]
    return np.stack([lo, hi], axis=axis + 1).reshape(*[n * (2 if d == axis else 1) for d, n in enumerate(packed.shape)])


@triton.jit
def dot_scaled_e2m1(a, sa, b, sb, o, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, LHS_FP4: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rg = tl.arange(0, BK // 32)
    if LHS_FP4:  # a: [BM, BK/2] packed e2m1 with scales, b: bf16 [BK, BN]
        av = tl.load(a + rm[:, None] * (BK // 2) + tl.arange(0, BK // 2)[None, :])
        sv = tl.load(sa + rm[:, None] * (BK // 32) + rg[None, :])
        bv = tl.load(b + tl.arange(0, BK)[:, None] * BN + rn[None, :])
        d = tl.dot_scaled(av, sv, "e2m1", bv, None, "bf16")
    else:  # a: e4m3 [BM, BK] with scales, b: [BK/2, BN] packed e2m1 with scales
        av = tl.load(a + rm[:, None] * BK + tl.arange(0, BK)[None, :])
        sv = tl.load(sa + rm[:, None] * (BK // 32) + rg[None, :])
        bv = tl.load(b + tl.arange(0, BK // 2)[:, None] * BN + rn[None, :])
        tv = tl.load(sb + rn[:, None] * (BK // 32) + rg[None, :])
        d = tl.dot_scaled(av, sv, "e4m3", bv, tv, "e2m1")
    tl.store(o + rm[:, None] * BN + rn[None, :], d)


@pytest.mark.parametrize("lhs_fp4", [True, False])
def test_dot_scaled_e2m1_unpacks_low_nibble_first(lhs_fp4):  # upstream test_scaled_dot[...-e2m1-...]
    bm, bn, bk = 32, 32, 64
    groups = bk // 32
    a_type = "*u8" if lhs_fp4 else "*fp8e4nv"
    b_type = "*bf16" if lhs_fp4 else "*u8"
    sig = {"a": a_type, "sa": "*u8", "b": b_type, "sb": "*u8", "o": "*fp32"}
    consts = {"BM": bm, "BN": bn, "BK": bk, "LHS_FP4": lhs_fp4}
    prog = compile_kernel(dot_scaled_e2m1, {**sig, **dict.fromkeys(consts, "constexpr")}, consts)
    sa = RNG.integers(120, 135, (bm, groups)).astype(np.uint8)
    sb = RNG.integers(120, 135, (bn, groups)).astype(np.uint8)
    sa[3, 1] = 0xFF  # e8m0 NaN: row 3 of the result is NaN
    if lhs_fp4:
        a = RNG.integers(0, 256, (bm, bk // 2)).astype(np.uint8)
        b = RNG.uniform(-1, 1, (bk, bn)).astype(ml_dtypes.bfloat16)
        a_val, b_val = unpack_e2m1(a, 1), b.astype(np.float64)
        b_scale = np.ones((bk, bn))
    else:
        a = RNG.uniform(-2, 2, (bm, bk)).astype(ml_dtypes.float8_e4m3fn)
        b = RNG.integers(0, 256, (bk // 2, bn)).astype(np.uint8)
        a_val, b_val = a.astype(np.float64), unpack_e2m1(b, 0)
        b_scale = np.repeat(2.0 ** (sb.T.astype(np.float64) - 127), 32, axis=0)
    a_scale = np.repeat(np.where(sa == 0xFF, np.nan, 2.0 ** (sa.astype(np.float64) - 127)), 32, axis=1)
    (*_, out), _ = run(prog, 1, [a, sa, b, sb, np.zeros((bm, bn), np.float32)])
    want = (a_val * a_scale) @ (b_val * b_scale)
    assert np.isnan(out[3]).all() and np.isnan(want[3]).all()
    close(np.delete(out, 3, 0), np.delete(want, 3, 0), rtol=1e-5, atol=1e-5)


@triton.jit
def dot_scaled_nvfp4(a, sa, b, sb, o, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, VEC: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK // 2)
    rg = tl.arange(0, BK // VEC)
    av = tl.load(a + rm[:, None] * (BK // 2) + rk[None, :])
    bv = tl.load(b + rk[:, None] + rn[None, :] * (BK // 2))  # b stored [BN, BK/2]: a transposed view, as upstream's
    sv = tl.load(sa + rm[:, None] * (BK // VEC) + rg[None, :])
    tv = tl.load(sb + rn[:, None] * (BK // VEC) + rg[None, :])
    d = tl.dot_scaled(av, sv, "e2m1", bv, tv, "e2m1")
    tl.store(o + rm[:, None] * BN + rn[None, :], d)


def test_dot_scaled_nvfp4_takes_e4m3_scales_per_16_elements():  # upstream test_block_scale_fp4[0-nvfp4-...]
    """nvfp4: e2m1 operands with float8_e4m3fn scales (their value, not an e8m0 exponent), one per 16 K elements."""
    bm, bn, bk, vec = 32, 16, 64, 16
    sig = {"a": "*u8", "sa": "*fp8e4nv", "b": "*u8", "sb": "*fp8e4nv", "o": "*fp32"}
    consts = {"BM": bm, "BN": bn, "BK": bk, "VEC": vec}
    prog = compile_kernel(dot_scaled_nvfp4, {**sig, **dict.fromkeys(consts, "constexpr")}, consts)
    a = RNG.integers(0, 256, (bm, bk // 2)).astype(np.uint8)
    b_nk = RNG.integers(0, 256, (bn, bk // 2)).astype(np.uint8)
    sa = RNG.uniform(0, 1, (bm, bk // vec)).astype(ml_dtypes.float8_e4m3fn)
    sb = RNG.uniform(0, 1, (bn, bk // vec)).astype(ml_dtypes.float8_e4m3fn)
    (*_, out), _ = run(prog, 1, [a, sa, b_nk, sb, np.zeros((bm, bn), np.float32)])
    a_val = unpack_e2m1(a, 1) * np.repeat(sa.astype(np.float64), vec, axis=1)
    b_val = unpack_e2m1(b_nk, 1) * np.repeat(sb.astype(np.float64), vec, axis=1)
    close(out, a_val @ b_val.T, rtol=1e-5, atol=1e-5)


@triton.jit
def dot_scaled_e2m1_mn(a, sa, b, sb, o, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rk = tl.arange(0, BK)
    rg = tl.arange(0, BK // 32)
    av = tl.load(a + tl.arange(0, BM // 2)[:, None] * BK + rk[None, :])  # [BM/2, BK]: two rows per byte
    bv = tl.load(b + rk[:, None] * (BN // 2) + tl.arange(0, BN // 2)[None, :])  # [BK, BN/2]: two columns per byte
    sv = tl.load(sa + tl.arange(0, BM)[:, None] * (BK // 32) + rg[None, :])
    tv = tl.load(sb + tl.arange(0, BN)[:, None] * (BK // 32) + rg[None, :])
    d = tl.dot_scaled(av, sv, "e2m1", bv, tv, "e2m1", lhs_k_pack=False, rhs_k_pack=False)
    tl.store(o + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], d)


def test_dot_scaled_e2m1_packed_along_m_and_n():  # upstream test_block_scale_fp4[0-mxfp4-False-...]
    bm, bn, bk = 32, 16, 64
    sig = {"a": "*u8", "sa": "*u8", "b": "*u8", "sb": "*u8", "o": "*fp32"}
    consts = {"BM": bm, "BN": bn, "BK": bk}
    prog = compile_kernel(dot_scaled_e2m1_mn, {**sig, **dict.fromkeys(consts, "constexpr")}, consts)
    a = RNG.integers(0, 256, (bm // 2, bk)).astype(np.uint8)
    b = RNG.integers(0, 256, (bk, bn // 2)).astype(np.uint8)
    sa = RNG.integers(120, 135, (bm, bk // 32)).astype(np.uint8)
    sb = RNG.integers(120, 135, (bn, bk // 32)).astype(np.uint8)
    (*_, out), _ = run(prog, 1, [a, sa, b, sb, np.zeros((bm, bn), np.float32)])
    a_val = unpack_e2m1(a, 0) * np.repeat(2.0 ** (sa.astype(np.float64) - 127), 32, axis=1)
    b_val = unpack_e2m1(b, 1) * np.repeat(2.0 ** (sb.T.astype(np.float64) - 127), 32, axis=0)
    close(out, a_val @ b_val, rtol=1e-5, atol=1e-5)
