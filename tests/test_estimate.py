"""The cost model as a query (sim/estimate.py, triton_plate_backend.estimate): a launch estimated
without running it moves the same bytes as the run, leaves memory alone, and lands near level 1."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import triton_plate_backend.torch_device  # noqa: F401
from triton_plate_backend.bench.kernels import CASES, add_kernel
from triton_plate_backend.estimate import estimate
from triton_plate_backend.sim.device import get_device


def test_estimate_leaves_memory_and_matches_the_bytes_of_the_run():
    n = 1 << 16
    x, y = torch.randn(n).to("plate"), torch.randn(n).to("plate")
    out = torch.zeros(n).to("plate")
    dev = get_device()
    before = dev.launches
    est = estimate(add_kernel, (n // 4096,), x, y, out, n, BLOCK=4096)
    assert dev.launches == before + 1 and dev.last_profile is None  # a launch, estimated: no Profile
    assert out.cpu().abs().sum() == 0, "an estimate must not write device memory"
    add_kernel[(n // 4096,)](x, y, out, n, BLOCK=4096)
    prof = get_device().last_profile
    torch.testing.assert_close(out.cpu(), x.cpu() + y.cpu())
    np.testing.assert_allclose(est.read_bytes, prof.read_bytes)
    np.testing.assert_allclose(est.write_bytes, prof.write_bytes)
    assert est.read_bytes.sum() == 8 * n and est.write_bytes.sum() == 4 * n
    assert est.remote_share == pytest.approx(0.0)  # blocked by default, each program in its block's domain
    assert est.level0_ns == pytest.approx(prof.bound.cycles / prof.clock_ghz)
    assert est.time_ns >= est.level0_ns


def test_estimate_of_a_placement_question():
    """Placement as an input: the same launch asked with every tensor in domain 0 is all local
    under a policy that runs every program in domain 0."""
    n = 1 << 16
    x, y, out = (torch.randn(n).to("plate") for _ in range(3))
    dev = get_device()
    k = add_kernel.warmup(x, y, out, n, BLOCK=4096, grid=(16,))
    k._init_handles()
    from triton_plate_backend.sim.estimate import estimate_launch

    # the kernel is persistent (passes/persistent.py): plate_rows 1 and plate_grid_x 16 keep one row per program
    args = [x.data_ptr(), y.data_ptr(), out.data_ptr(), n, 1, 16]
    local = {"x_ptr": "local:0", "y_ptr": "local:0", "out_ptr": "local:0"}
    est = estimate_launch(k.function.program, (16,), args, dev.memory, policy=np.zeros(16, np.int64), placement=local)
    assert est.remote_share == 0.0 and est.bytes[0, 0] == 12 * n


@pytest.mark.parametrize("name", ["vector_add", "softmax", "layer_norm_fwd", "gemm_bf16", "attention_fwd"])
def test_estimate_is_near_level_one(name):
    case = CASES[name]
    launch = case.setup(case.quick[0])
    dev = get_device()
    launch.run()
    level1 = dev.last_profile.time_ns
    with dev.estimating() as ests:
        launch.run()
    (est,) = ests
    assert est.time_ns >= est.level0_ns * 0.999
    assert abs(est.time_ns - level1) / level1 < 0.15, f"{name}: estimate {est.time_ns:.0f} ns vs level 1 {level1:.0f}"


def test_autotune_simulates_only_configs_the_model_ranks_near_the_best(monkeypatch):
    """@triton.autotune through the driver's benchmarker: configs whose estimate is far above the best
    one so far are not simulated, and the choice is exhaustive simulation's."""
    from triton_plate_backend.bench.autotune import regret

    monkeypatch.setenv("PLATE_BENCH_REPS", "1")
    r = regret(256)
    assert r["simulations"] < r["configs"]
    assert r["chosen"] == r["best"] and r["regret_pct"] == 0.0
    assert set(r["estimated_ms"]) == set(r["simulated_ms"])


@pytest.mark.parametrize("name", ["softmax", "reduction", "gemm_fp32", "attention_fwd"])
def test_the_address_only_run_records_the_functional_trace(name, monkeypatch):
    """Step 1 of the estimate is exact: the same entries, programs, bytes per home domain, runs and
    elements as the functional executor's trace (loops, masks and tails included)."""
    from triton_plate_backend.sim.estimate import address_trace
    from triton_plate_backend.sim.executor import execute

    dev = get_device()
    launches = []
    real = type(dev).launch
    case = CASES[name]
    launch = case.setup(case.quick[0])  # keeps its tensors alive (memory is freed on del); a GEMM asks the model
    monkeypatch.setattr(type(dev), "launch", lambda self, p, g, a, **kw: launches.append((p, g, list(a))))
    launch.run()
    monkeypatch.setattr(type(dev), "launch", real)
    ((program, grid, args),) = launches
    functional = execute(program, grid, args, dev.memory, dev.machine)
    assert address_trace(program, grid, args, dev.memory).digest() == functional.digest()
