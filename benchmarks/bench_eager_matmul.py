"""Eager matmuls on plate tensors (eager_ops/matmul.py): CPU seconds of the simulator and modeled time of one
mm per (dtype, layout, tile): the better of two launches after a compiling launch of the same shape.

    python benchmarks/bench_eager_matmul.py [--size 4096 2048 4096] [--small 512 512 512]

fp16/bf16/fp32 run at --size (the matrix unit, float32 steps); fp64 and int32 (the vector unit's tree) at
--small. Layouts: "a @ b" both row-major; "a @ w.t()" a Linear's forward (w row-major [N, K]). Tiles: the
kernel's own choice (matmul.tiles) and 128 x 128. Figures are measurements of this run on this machine,
not assertions; CPU time is the steadier figure on a shared machine."""

from __future__ import annotations

import argparse
import os
import time

import torch

import triton_plate_backend as plate
import triton_plate_backend.torch_device  # noqa: F401 - registers the plate device
from triton_plate_backend import eager_ops
from triton_plate_backend.eager_ops import matmul


def operands(m: int, k: int, n: int, dtype: torch.dtype, layout: str):
    g = torch.Generator().manual_seed(0)
    if dtype.is_floating_point:
        a, w = torch.randn(m, k, generator=g).to(dtype), torch.randn(n, k, generator=g).to(dtype)
    else:
        a, w = (torch.randint(-100, 100, s, generator=g).to(dtype) for s in ((m, k), (n, k)))
    a, w = a.to("plate"), w.to("plate")
    return (a, w.t()) if layout == "a @ w.t()" else (a, w.t().contiguous())


def one(m: int, k: int, n: int, dtype: torch.dtype, layout: str, block) -> tuple[float, float, float]:
    a, b = operands(m, k, n, dtype, layout)
    out = torch.empty(1, m, n, dtype=dtype, device="plate")
    if block is None:
        run = lambda: torch.mm(a, b, out=out[0])  # noqa: E731 - the eager op itself
    else:
        run = lambda: matmul.launch_matmul(out, a[None], b[None], block=block)  # noqa: E731
    run()  # compiles
    best = (float("inf"), float("inf"))
    for _ in range(2):  # the first launch after the compile still runs slower (about 2x for the 4096 fp32 mm)
        cpu, wall = time.process_time(), time.perf_counter()
        run()
        best = min(best, (time.process_time() - cpu, time.perf_counter() - wall))
    return *best, plate.last_profile().time_ns / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, nargs=3, default=(4096, 2048, 4096), metavar=("M", "K", "N"))
    parser.add_argument("--small", type=int, nargs=3, default=(512, 512, 512), metavar=("M", "K", "N"))
    args = parser.parse_args()
    eager_ops.register()
    print(f"load average before: {os.getloadavg()[0]:.2f}\n")
    print("| dtype | M x K x N | layout | tile (BLOCK_M x BLOCK_N) | CPU s | wall s | modeled ms |")
    print("|---|---|---|---|---|---|---|")
    for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.float64, torch.int32):
        m, k, n = args.size if dtype in matmul.DOT_DTYPES else args.small
        for layout in ("a @ b", "a @ w.t()"):
            for block in (None, (128, 128)):
                if block is not None and (dtype not in matmul.DOT_DTYPES or layout != "a @ b"):
                    continue
                cpu, wall, modeled = one(m, k, n, dtype, layout, block)
                tile = "x".join(map(str, block or matmul.tiles(dtype, m, n)))
                name = str(dtype).removeprefix("torch.")
                print(
                    f"| {name} | {m}x{k}x{n} | `{layout}` | {tile} | {cpu:.2f} | {wall:.2f} | {modeled:.3f} |",
                    flush=True,
                )
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
