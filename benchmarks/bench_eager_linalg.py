"""Eager linear algebra on plate tensors (eager_ops/linalg.py, matrix_exp.py): CPU seconds of the simulator for one
call per (op, size, dtype), after a call of the same shape that compiled its kernels, and the error against the
host's float64 result (relative to its largest entry), with the host's own error at that dtype in parentheses (0 for
float64: the reference is the host's result).

    python benchmarks/bench_eager_linalg.py [--sizes 64 128 256] [--eigh 8 16 32]

Figures are measurements of this run on this machine, not assertions; CPU time is the steadier figure on a shared
machine."""

from __future__ import annotations

import argparse
import os
import time

import torch

import triton_plate_backend  # noqa: F401 - the plate device and its eager kernels


def matrices(n: int, dtype: torch.dtype):
    g = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=g, dtype=torch.float64)
    spd = a @ a.mT + n * torch.eye(n, dtype=torch.float64)
    return a.to(dtype), spd.to(dtype), torch.randn(n, 4, generator=g, dtype=torch.float64).to(dtype)


OPS = {
    "lu_factor": lambda a, spd, b: torch.linalg.lu_factor(a)[0],
    "solve (4 rhs)": lambda a, spd, b: torch.linalg.solve(a, b),
    "cholesky": lambda a, spd, b: torch.linalg.cholesky(spd),
    "qr": lambda a, spd, b: torch.linalg.qr(a)[1],
    "inv": lambda a, spd, b: torch.linalg.inv(spd),
}


def timed(fn, *args):
    fn(*(t[:2, :2] if t.shape[0] == t.shape[1] else t[:2] for t in args))  # compile the kernels
    fn(*args).cpu()  # and the launches of this shape
    start = time.process_time()
    result = fn(*args).cpu()
    return time.process_time() - start, result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[64, 128, 256])
    parser.add_argument("--eigh", type=int, nargs="*", default=[8, 16, 32])
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}\n")
    print("| op | n | dtype | CPU s | error vs float64 (host's error) |")
    print("|---|---|---|---|---|")
    for n in args.sizes:
        for dtype in (torch.float32, torch.float64):
            host = matrices(n, dtype)
            reference = matrices(n, torch.float64)
            for name, fn in OPS.items():
                seconds, got = timed(fn, *(t.to("plate") for t in host))
                exact = fn(*reference)
                scale = exact.abs().max()
                error, host_error = (
                    ((got.double() - exact).abs().max() / scale),
                    ((fn(*host).double() - exact).abs().max() / scale),
                )
                print(
                    f"| {name} | {n} | {str(dtype)[6:]} | {seconds:.2f} | {error:.1e} ({host_error:.1e}) |", flush=True
                )
    for n in args.eigh:
        for dtype in (torch.float32, torch.float64):
            _, spd, _ = matrices(n, dtype)
            seconds, got = timed(lambda a: torch.linalg.eigvalsh(a), spd.to("plate"))
            exact = torch.linalg.eigvalsh(spd.double())
            error = (got.double() - exact).abs().max() / exact.abs().max()
            print(f"| eigvalsh | {n} | {str(dtype)[6:]} | {seconds:.2f} | {error:.1e} |", flush=True)
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
