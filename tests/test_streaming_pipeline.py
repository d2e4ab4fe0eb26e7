"""A loop without matrix work (a looped reduction's chunk loop) is pipelined at num_stages 3 whatever
the kernel's num_stages (passes/prefetch.stages): Inductor compiles its looped reductions with
num_stages=1, a GPU's shared-memory budget, which on plate would leave every chunk's load latency in
series with its transfer. A loop's own tl.range(num_stages=...) is still obeyed."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

import triton_plate_backend.torch_device  # noqa: F401  (registers the plate device)
from triton_plate_backend.bench.kernels import row_sum_kernel
from triton_plate_backend.sim.device import get_device


@triton.jit
def row_sum_unpipelined(x_ptr, out_ptr, stride, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in tl.range(0, n, BLOCK, num_stages=1):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride + cols, mask=cols < n, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


def _program(kernel, args, stages):
    k = kernel.warmup(*args, BLOCK=256, num_stages=stages, grid=(args[0].shape[0],))
    k._init_handles()
    return k.function.program


def _time(kernel, x, out, stages):
    kernel[(x.shape[0],)](x, out, x.stride(0), x.shape[1], BLOCK=256, num_stages=stages)
    torch.testing.assert_close(out.cpu(), x.cpu().sum(dim=1), rtol=1e-4, atol=1e-3)
    return get_device().last_profile.time_ns


def test_a_streaming_loop_is_pipelined_at_num_stages_one():
    rows, n = 64, 1000  # 4 chunks of 256, the last one masked
    x = torch.randn(rows, n).to("plate")
    out = torch.empty(rows, device="plate")
    args = (x, out, x.stride(0), n)
    one, three = _program(row_sum_kernel, args, 1), _program(row_sum_kernel, args, 3)
    assert [str(i) for i in one.instrs] == [str(i) for i in three.instrs]
    # the first loop: the chunk loop, flattened with the loop over programs (passes/persistent.py)
    first_loop = min(at for name, at in one.labels.items() if name.startswith("for_body"))
    before_loop = [i.mnemonic for i in one.instrs[:first_loop]]
    assert before_loop.count("dma.load") == 2, "two chunks issued before the loop"
    unpipelined = _program(row_sum_unpipelined, args, 3)
    assert [i.mnemonic for i in unpipelined.instrs].count("dma.load") == 1, "tl.range(num_stages=1) is obeyed"
    assert _time(row_sum_kernel, x, out, 1) < 0.85 * _time(row_sum_unpipelined, x, out, 3)
