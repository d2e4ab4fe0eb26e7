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
    a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
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
    tl.store(c, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def _flat(pir: str) -> bool:
    return '"arith.divsi"(%trip, %chunks)' in pir


def _matmul(mini, a, b, tile, persistent):
    (m, k), n = a.shape, b.shape[1]
    bm, bn, bk = tile
    c = torch.full((m, n), 7.0, dtype=a.dtype, device="plate")
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    kern = masked_matmul_kernel[grid](
        a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BM=bm, BN=bn, BK=bk, num_stages=3, persistent_programs=persistent,
    )  # fmt: skip
    return c.cpu(), kern, mini.last_profile


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_a_gemm_runs_as_one_flat_loop_bit_identical_in_fewer_cycles(mini, dtype):
    # 5 x 4 = 20 output tiles on 8 cores (2 or 3 each); M, N and K not multiples of the tile (masks)
    m, n, k = 300, 250, 90
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
    # 256 x 512 x 128 bf16: accumulator 512 KiB + staging and work tiles 2 x 192 KiB + output 256 KiB > 1 MiB
    m, n, k = 256, 512, 256
    a = torch.randn(m, k, dtype=torch.bfloat16, device="plate")
    b = torch.randn(k, n, dtype=torch.bfloat16, device="plate")
    got, kern, _ = _matmul(mini, a, b, (256, 512, 128), True)
    pir = kern.asm["pir"]
    assert not _flat(pir) and ROWS_ARG not in pir
    plain, _, _ = _matmul(mini, a, b, (256, 512, 128), False)
    assert torch.equal(got, plain)


def test_gemm_fits_counts_the_output_tile_beside_the_staging_tiles():
    from triton_plate_backend.ir.core import ScalarType, TensorType, Value, new_op
    from triton_plate_backend.passes.persistent import gemm_fits

    def tile(shape, dtype):
        return Value(TensorType(tuple(shape), ScalarType(dtype)), "t")

    def loop(bm, bn, bk):
        from triton_plate_backend.ir.core import Block, Region

        body = Block(args=[])
        body.append(new_op("tt.load", (), (TensorType((bm, bk), ScalarType("bf16")),)))
        body.append(new_op("tt.load", (), (TensorType((bk, bn), ScalarType("bf16")),)))
        op = new_op("scf.for", (), (TensorType((bm, bn), ScalarType("f32")),), regions=[Region([body])])
        store = new_op("tt.store", (tile((bm, bn), "i64"), tile((bm, bn), "bf16")), ())
        return op, [store]

    mib = 1 << 20
    assert gemm_fits(*loop(256, 512, 64), mib)  # 512 + 2 x 96 + 256 = 960 KiB
    assert not gemm_fits(*loop(256, 512, 128), mib)  # 512 + 2 x 192 + 256 = 1152 KiB
    assert gemm_fits(*loop(256, 512, 128), 1152 * 1024)
