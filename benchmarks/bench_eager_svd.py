"""The SVD of plate tensors (eager_ops/linalg_svd.py, one-sided Jacobi) and the lstsq built on it: CPU seconds of
the simulator for one call per (op, shape, dtype), after a call of the same shape that compiled its kernels, and the
error against the host's float64 result relative to its largest entry (the host's own error at that dtype in
parentheses; 0 for float64, whose reference is the host's result).

    python benchmarks/bench_eager_svd.py [--shapes 8x8 16x16 32x32 64x16]

- svdvals: the singular values; svd: U S Vh - A (reconstruction, full_matrices=False); lstsq: the solution of 4
  right-hand sides (driver gelsd).

Figures are measurements of this run on this machine, not assertions; CPU time is the steadier figure on a shared
machine."""

from __future__ import annotations

import argparse
import os
import time

import torch

import triton_plate_backend  # noqa: F401 - the plate device and its eager kernels


def reconstruction(a):
    u, s, vh = torch.linalg.svd(a, full_matrices=False)
    return (u * s[..., None, :]) @ vh - a


OPS = {
    "svdvals": lambda a, b: torch.linalg.svdvals(a),
    "svd (U S Vh - A)": lambda a, b: reconstruction(a),
    "lstsq (4 rhs)": lambda a, b: torch.linalg.lstsq(a, b, driver="gelsd").solution,
}


def timed(fn, *args):
    fn(*args).cpu()  # compile the kernels and the launches of this shape
    start = time.process_time()
    result = fn(*args).cpu()
    return time.process_time() - start, result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="*", default=["8x8", "16x16", "32x32", "64x16"])
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}\n")
    print("| op | m x n | dtype | CPU s | error vs float64 (host's error) |")
    print("|---|---|---|---|---|")
    for shape in args.shapes:
        m, n = (int(x) for x in shape.split("x"))
        g = torch.Generator().manual_seed(0)
        a64 = torch.randn(m, n, generator=g, dtype=torch.float64)
        b64 = torch.randn(m, 4, generator=g, dtype=torch.float64)
        for dtype in (torch.float32, torch.float64):
            a, b = a64.to(dtype), b64.to(dtype)
            for name, fn in OPS.items():
                seconds, got = timed(fn, a.to("plate"), b.to("plate"))
                exact = fn(a64, b64) if name != "svd (U S Vh - A)" else torch.zeros_like(a64)
                scale = a64.abs().max() if name == "svd (U S Vh - A)" else exact.abs().max()
                error = (got.double() - exact).abs().max() / scale
                host_error = (fn(a, b).double() - exact).abs().max() / scale
                print(
                    f"| {name} | {m}x{n} | {str(dtype)[6:]} | {seconds:.2f} | {error:.1e} ({host_error:.1e}) |",
                    flush=True,
                )
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
