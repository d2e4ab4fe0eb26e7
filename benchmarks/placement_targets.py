"""Streaming kernels on plate1: % of HBM peak and remote share, the interleaved + round-robin
baseline against plate's defaults (size-based placement + the compiler's affinity mapping).

    python benchmarks/placement_targets.py [--quick]

Kernels (issue 9's streaming targets): vector add 2^24 fp32 BLOCK 4096, row softmax 4096x2048
fp32, layer norm forward 4096x2048 fp32. Figures are modeled time of this run (docs/placement.md
holds a table of them), not assertions. ``--quick``: a quarter of the sizes.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

os.environ.setdefault("TRITON_DEFAULT_BACKEND", "plate")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

import torch  # noqa: E402
import triton  # noqa: E402
from layer_norm import layer_norm_forward  # noqa: E402
from triton_kernels import softmax as softmax_kernel  # noqa: E402  (beside this script)
from triton_kernels import vec_add  # noqa: E402

import triton_plate_backend.torch_device  # noqa: E402, F401
from triton_plate_backend.sim.device import get_device  # noqa: E402


def vector_add(scale):
    n = (1 << 24) // scale
    x, y, o = torch.rand(n, device="plate"), torch.rand(n, device="plate"), torch.empty(n, device="plate")
    return lambda: vec_add[(triton.cdiv(n, 4096),)](x, y, o, n, BLOCK=4096)


def softmax(scale):
    x = torch.rand(4096 // scale, 2048, device="plate")
    o = torch.empty_like(x)
    return lambda: softmax_kernel[(x.shape[0],)](o, x, x.stride(0), o.stride(0), 2048, BLOCK=2048)


def layer_norm(scale):
    x = torch.rand(4096 // scale, 2048, device="plate")
    w, b = torch.rand(2048, device="plate"), torch.rand(2048, device="plate")
    return lambda: layer_norm_forward(x, w, b)


KERNELS = {"vector add 2^24 fp32": vector_add, "softmax 4096x2048 fp32": softmax, "layer norm 4096x2048": layer_norm}
SETTINGS = {
    "interleaved + round_robin": (lambda: torch.plate.placement("interleaved"), "round_robin"),
    "plate default": (contextlib.nullcontext, "affinity"),
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    scale = 4 if args.quick else 1
    dev = get_device()
    print("| kernel | setting | % of HBM peak | % of achievable | remote share | time (us) |")
    print("|---|---|---|---|---|---|")
    for name, make in KERNELS.items():
        for setting, (place, policy) in SETTINGS.items():
            os.environ["PLATE_POLICY"] = policy
            with place():
                launch = make(scale)
            launch()
            p = dev.last_profile
            print(
                f"| {name} | {setting} | {p.hbm_share_of_peak * 100:.1f} | {p.hbm_share_of_sustained * 100:.1f} | "
                f"{p.remote_bytes / p.total_bytes * 100:.1f}% | {p.time_ns / 1e3:.1f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
