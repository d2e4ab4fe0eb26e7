"""passes/persistent.py's flattened GEMM: a program's K loop and the loop over a core's programs
(output tiles) run as ONE pipelined loop, so the next tile's first K step loads under this tile's
last m.mma, epilogue and store. The carried A and B pointers are recomputed from the trip's program
and K step; the K order of accumulation is the plain GEMM's, so results are bit-identical. A GEMM
whose flattened form would not fit the SRAM (`gemm_fits`) keeps today's code."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl
from codegen_kernels.dma_check import dma_violations

from triton_plate_backend.passes.persistent import ROWS_ARG


@pytest.fixture(scope="module", autouse=True)
def mini(plate_mini_module):
    return plate_mini_module


@triton.jit
def masked_matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn, alpha,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(0)
    num_n = tl.cdiv(N, BN)
    rm = (pid // num_n) * BM + tl.arange(0, BM)
    rn = (pid % num_n) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * sam + rk[None, :] * sak  # varies with the program: carried, then recomputed
    b = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        left = K - k * BK
        x = tl.load(a, mask=(rm[:, None] < M) & (rk[None, :] < left), other=0.0)
        y = tl.load(b, mask=(rk[:, None] < left) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(x, y)
        a += BK * sak
        b += BK * sbk
    c = c_ptr + rm[:, None] * scm + rn[None, :] * scn
    tl.store(c, (acc * alpha).to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def _flat(pir: str) -> bool:
    return '"arith.divsi"(%trip, %chunks)' in pir


def _matmul(mini, a, b, tile, persistent):
    (m, k), n = a.shape, b.shape[1]
    bm, bn, bk = tile
    c = torch.full((m, n), 7.0, dtype=a.dtype, device="plate")
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    kern = masked_matmul_kernel[grid](
        a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1), 1.0,
        BM=bm, BN=bn, BK=bk, num_stages=3, persistent_programs=persistent,
    )  # fmt: skip
    return c.cpu(), kern, mini.last_profile


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_a_gemm_runs_as_one_flat_loop_bit_identical_in_fewer_cycles(mini, dtype):
    # 5 x 4 = 20 output tiles on 8 cores (2 or 3 each); M, N and K not multiples of the tile (masks)
    m, n, k = 300, 250, 250
    a, b = torch.randn(m, k, dtype=dtype, device="plate"), torch.randn(k, n, dtype=dtype, device="plate")
    flat, kern, prof = _matmul(mini, a, b, (64, 64, 32), True)
    plain, kern0, prof0 = _matmul(mini, a, b, (64, 64, 32), False)
    assert _flat(kern.asm["pir"]) and not _flat(kern0.asm["pir"])
    assert prof.num_programs < prof0.num_programs == 20  # the model chose the persistent launch
    assert torch.equal(flat, plain)  # the same K order of accumulation: bit-identical
    want = (a.cpu().float() @ b.cpu().float()).to(dtype)
    torch.testing.assert_close(flat, want, rtol=2e-2, atol=1e-1)
    assert prof.time_ns < 0.9 * prof0.time_ns
    kern._init_handles()
    assert not dma_violations(kern.function.program), "the DMA contract holds with each tile's store left in flight"


def test_a_gemm_whose_flat_form_overflows_the_sram_keeps_todays_code(mini):
    # 256 x 512 x 32 fp32 with an fp32 epilogue tile (acc * alpha): accumulator 512 KiB + staging
    # tiles 96 KiB + output tile 512 KiB > 1 MiB; the plain GEMM puts its output over the staging tiles
    m, n, k = 256, 512, 64
    a = torch.randn(m, k, device="plate")
    b = torch.randn(k, n, device="plate")
    got, kern, _ = _matmul(mini, a, b, (256, 512, 32), True)
    pir = kern.asm["pir"]
    assert not _flat(pir) and ROWS_ARG not in pir
    plain, _, _ = _matmul(mini, a, b, (256, 512, 32), False)
    assert torch.equal(got, plain)
    torch.testing.assert_close(got, a.cpu() @ b.cpu(), rtol=2e-2, atol=1e-1)  # tl.dot's default: tf32


def test_gemm_fits_counts_the_output_tile_beside_the_staging_tiles():
    from triton_plate_backend.ir.core import Block, Region, ScalarType, TensorType, Value, new_op
    from triton_plate_backend.passes.persistent import gemm_fits

    def loop(bm, bn, bk, out_dtype):
        body = Block(args=[])
        body.append(new_op("tt.load", (), (TensorType((bm, bk), ScalarType("bf16")),)))
        body.append(new_op("tt.load", (), (TensorType((bk, bn), ScalarType("bf16")),)))
        op = new_op("scf.for", (), (TensorType((bm, bn), ScalarType("f32")),), regions=[Region([body])])
        out = op.result if out_dtype is None else Value(TensorType((bm, bn), ScalarType(out_dtype)), "c")
        store = new_op("tt.store", (Value(TensorType((bm, bn), ScalarType("i64")), "p"), out), ())
        return op, [store]

    kib = 1024
    assert gemm_fits(*loop(256, 512, 128, "bf16"), 960 * kib)  # 512 + 192 staging + max(192 work, 256 out)
    assert not gemm_fits(*loop(256, 512, 128, "bf16"), 959 * kib)
    assert gemm_fits(*loop(256, 512, 128, None), 896 * kib)  # the accumulator stored as it is: 512 + 192 + 192
    assert not gemm_fits(*loop(256, 512, 128, "f32"), 1024 * kib)  # 512 + 192 + 512
