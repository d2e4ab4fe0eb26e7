"""passes/persistent.py's flattened form: a program that is one chunk loop (a row reduction) runs,
with the persistent loop over programs, as ONE pipelined loop over every chunk of every program.
Same results, fewer modeled cycles; a kernel it cannot prove legal keeps today's code."""

from __future__ import annotations

import dataclasses

import numpy as np
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
def row_sum_kernel(x_ptr, out_ptr, stride, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride + cols, mask=cols < n, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


@triton.jit
def row_max_scaled_kernel(x_ptr, out_ptr, stride, n, scale, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = x_ptr + row * stride  # varies with the program: recomputed every trip of the flat loop
    nprog = tl.num_programs(0)  # the grid asked for, not the persistent one
    acc = tl.full([BLOCK], -float("inf"), tl.float32)
    total = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(base + cols, mask=cols < n, other=-float("inf"))
        acc = tl.maximum(acc, x)
        total += tl.where(cols < n, x, 0.0)
    tl.store(out_ptr + 2 * row, tl.max(acc, axis=0) * scale + nprog)
    tl.store(out_ptr + 2 * row + 1, tl.sum(total, axis=0))


@triton.jit
def row_sum_in_place_kernel(x_ptr, stride, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride + cols, mask=cols < n, other=0.0)
    tl.store(x_ptr + row * stride, tl.sum(acc, axis=0))  # the tensor it reads: maybe the next row's


@triton.jit
def looped_sum_kernel(in_ptr0, out_ptr0, xnumel, r0_numel, XBLOCK: tl.constexpr, R0_BLOCK: tl.constexpr):
    # the shape of Inductor's looped reductions (triton_red_fused_sum_0 of x.sum(dim=1))
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    _tmp2 = tl.full([XBLOCK, R0_BLOCK], 0, tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        tmp0 = tl.load(in_ptr0 + (r0_index + r0_numel * xindex), r0_mask & xmask, other=0.0)
        _tmp2 = tl.where(r0_mask & xmask, _tmp2 + tmp0, _tmp2)
    tl.store(out_ptr0 + xindex, tl.sum(_tmp2, 1)[:, None], xmask)


def _flat(pir: str) -> bool:
    return '"arith.divsi"(%trip, %chunks)' in pir


def _sum(x, rows, n, **opts):
    out = torch.empty(rows, device="plate")
    k = row_sum_kernel[(rows,)](x, out, x.stride(0), n, BLOCK=64, **opts)
    return out, k


def test_a_row_reduction_runs_as_one_flat_loop_with_the_same_results_in_fewer_cycles(mini):
    rows, n = 70, 500  # more rows than cores, not a multiple of them; a partial last chunk
    x = torch.randn(rows, n, device="plate")
    flat, k = _sum(x, rows, n)
    t_flat = mini.last_profile.time_ns
    plain, k0 = _sum(x, rows, n, persistent_programs=False)
    t_plain = mini.last_profile.time_ns
    assert _flat(k.asm["pir"]) and not _flat(k0.asm["pir"])
    assert torch.equal(flat.cpu(), plain.cpu())  # the same operations in the same order: bit-identical
    torch.testing.assert_close(flat.cpu(), x.cpu().sum(dim=1), rtol=1e-5, atol=1e-4)
    assert t_flat < 0.9 * t_plain
    k._init_handles()
    assert not dma_violations(k.function.program), "the DMA contract holds with each row's store left in flight"


def test_ops_before_the_loop_that_vary_with_the_program_and_two_results(mini):
    rows, n = 37, 300
    x = torch.randn(rows, n, device="plate")
    out = torch.empty(2 * rows, device="plate")
    k = row_max_scaled_kernel[(rows,)](x, out, x.stride(0), n, 0.5, BLOCK=64)
    assert _flat(k.asm["pir"])
    got = out.cpu().view(rows, 2)
    torch.testing.assert_close(got[:, 0], x.cpu().amax(dim=1) * 0.5 + rows)
    torch.testing.assert_close(got[:, 1], x.cpu().sum(dim=1), rtol=1e-5, atol=1e-4)


def test_a_chunk_loop_of_no_trips_still_stores_every_row(mini):
    rows = 40
    x = torch.randn(rows, 8, device="plate")
    out = torch.full((rows,), 7.0, device="plate")
    k = row_sum_kernel[(rows,)](x, out, x.stride(0), 0, BLOCK=64)
    assert _flat(k.asm["pir"]) and out.cpu().tolist() == [0.0] * rows


def test_a_store_to_the_tensor_the_loop_reads_keeps_todays_code(mini):
    rows, n = 40, 200
    x = torch.randn(rows, n, device="plate")
    want = x.cpu().clone()
    want[:, 0] = want.sum(dim=1)
    k = row_sum_in_place_kernel[(rows,)](x, x.stride(0), n, BLOCK=64)
    pir = k.asm["pir"]
    assert not _flat(pir) and ROWS_ARG not in pir  # not flattened: one program per row, as before
    torch.testing.assert_close(x.cpu(), want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("xblock", [1, 4])  # XBLOCK 1: the row mask is a scalar condition of the trip's program
def test_inductors_looped_reduction_is_flattened_and_pipelined(mini, xblock):
    rows, n = 64, 7000  # 7 chunks of 1024 a row, the last one partial; 8 rows a core, none across domains
    x = torch.randn(rows, n, device="plate")
    times, outs = [], []
    for persistent in (True, False):
        out = torch.empty(rows, 1, device="plate")
        k = looped_sum_kernel[(-(-rows // xblock),)](
            x, out, rows, n, XBLOCK=xblock, R0_BLOCK=1024, persistent_programs=persistent
        )
        assert _flat(k.asm["pir"]) == persistent
        times.append(mini.last_profile.time_ns)
        outs.append(out.cpu())
    assert torch.equal(outs[0], outs[1])
    torch.testing.assert_close(outs[0][:, 0], x.cpu().sum(dim=1), rtol=1e-5, atol=1e-4)
    assert times[0] < 0.9 * times[1]


def _looped(x, rows, n, persistent):
    out = torch.empty(rows, 1, device="plate")
    k = looped_sum_kernel[(rows,)](x, out, rows, n, XBLOCK=1, R0_BLOCK=1024, persistent_programs=persistent)
    return out.cpu(), k


def test_rows_across_domain_boundaries_split_by_the_affinity_mapping(mini):
    """66 rows of 7000: the domains' shares of the tensor end mid-row. Each launched program runs the
    rows of one domain's run (the mapping the plain grid gets), so none reads across a boundary."""
    rows, n = 66, 7000
    x = torch.randn(rows, n, device="plate")
    flat, k = _looped(x, rows, n, True)
    profile = mini.last_profile
    plain, _ = _looped(x, rows, n, False)
    base = mini.last_profile
    assert _flat(k.asm["pir"]) and torch.equal(flat, plain)
    share = profile.remote_bytes / profile.total_bytes
    assert share <= base.remote_bytes / base.total_bytes + 1e-3 and share < 0.02  # not the contiguous split's 13.6%
    assert profile.num_programs == mini.machine.total_cores and profile.time_ns <= base.time_ns


def test_the_cost_model_keeps_one_program_each_when_that_is_cheaper(mini, monkeypatch):
    """The launcher prices the persistent launch against one program per launched program and runs
    the cheaper: here the model is made to prefer the latter, and the grid runs as written."""
    from triton_plate_backend.sim import estimate

    real = estimate.estimate_launch

    def prefer_plain(program, grid, args, *a, **kw):
        est = real(program, grid, args, *a, **kw)
        return dataclasses.replace(est, time_ns=est.time_ns * (100.0 if grid[0] < rows else 1.0))

    monkeypatch.setattr(estimate, "estimate_launch", prefer_plain)
    rows, n = 40, 3000
    x = torch.randn(rows, n, device="plate")
    flat, k = _looped(x, rows, n, True)
    assert _flat(k.asm["pir"]) and mini.last_profile.num_programs == rows
    assert torch.equal(flat, _looped(x, rows, n, False)[0])


def test_domain_runs():
    from triton_plate_backend.machine import get_machine
    from triton_plate_backend.sim.affinity import domain_runs

    mini = get_machine("plate-mini")  # 4 domains of 2 cores
    assert domain_runs(np.array([0, 1, 0, 2, 3, 3, 6, 7]), mini) == [0, 3, 6]
    assert domain_runs(np.array([4, 5, 0, 1]), mini) == [0, 2]  # runs in any domain order
    assert domain_runs(np.array([0, 2, 0]), mini) is None  # domain 0's programs are two runs
