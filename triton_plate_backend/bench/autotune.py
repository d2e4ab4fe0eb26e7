"""Autotuning regret of the cost model: ``@triton.autotune`` over GEMM tile configs with the
driver's benchmarker asking the model first (``PLATE_AUTOTUNE_MARGIN``), against exhaustive
simulation of the same configs. Regret = simulated time of the chosen config / the best one - 1.
Also the regret of ranking by the estimate alone and simulating only the top k."""

from __future__ import annotations

import contextlib
import os

import torch
import triton

from .kernels import matmul_kernel

CONFIGS = [
    triton.Config({"BM": bm, "BN": bn, "BK": bk, "GROUP_M": 8})
    for bm, bn, bk in (
        (32, 32, 32),
        (64, 64, 32),
        (64, 64, 64),
        (128, 64, 64),
        (64, 128, 64),
        (128, 128, 32),
        (128, 128, 64),
        (256, 128, 64),
    )
]


@contextlib.contextmanager
def _env(**values):
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update({k: v for k, v in values.items()})
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def regret(n: int, dtype: torch.dtype = torch.bfloat16) -> dict:
    """Exhaustive simulation, the model's estimates, and the autotuner's choice for an n^3 GEMM
    (n a multiple of 256: the kernel loads whole tiles, unmasked)."""
    from .. import driver
    from ..estimate import estimate

    a, b = (torch.randn(n, n, dtype=dtype).to("plate") for _ in range(2))
    c = torch.empty(n, n, dtype=dtype, device="plate")
    args = (a, b, c, n, n, n, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))

    def grid(meta):
        return (triton.cdiv(n, meta["BM"]) * triton.cdiv(n, meta["BN"]),)

    simulated, estimated = {}, {}
    with _env(PLATE_AUTOTUNE_MARGIN="off", PLATE_BENCH_REPS="1"):
        for cfg in CONFIGS:
            name = "x".join(str(cfg.kwargs[k]) for k in ("BM", "BN", "BK"))
            simulated[name] = driver.do_bench_modeled(lambda cfg=cfg: matmul_kernel[grid](*args, **cfg.kwargs))
            estimated[name] = estimate(matmul_kernel, grid, *args, **cfg.kwargs).time_ns / 1e6
    best = min(simulated.values())
    driver._BEST_ESTIMATE.clear()
    pruned_before = len(driver.PRUNED)
    tuned = triton.autotune(configs=CONFIGS, key=["M", "N", "K"])(matmul_kernel)
    with _env(PLATE_BENCH_REPS="1"):
        tuned[grid](*args)
    chosen = "x".join(str(tuned.best_config.kwargs[k]) for k in ("BM", "BN", "BK"))
    ranked = sorted(estimated, key=estimated.get)
    return {
        "shape": f"{n}^3",
        "dtype": str(dtype).removeprefix("torch."),
        "configs": len(CONFIGS),
        "simulated_ms": simulated,
        "estimated_ms": estimated,
        "best": min(simulated, key=simulated.get),
        "chosen": chosen,
        "simulations": len(CONFIGS) - (len(driver.PRUNED) - pruned_before),
        "regret_pct": 100.0 * (simulated[chosen] / best - 1),
        "top_k_regret_pct": {
            k: 100.0 * (min(simulated[c] for c in ranked[:k]) / best - 1) for k in (1, 2, 3) if k <= len(ranked)
        },
    }
