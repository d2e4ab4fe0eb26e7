"""torch.compile a small GPT for plate, run it on the simulator, and see where the modeled time went.

    python examples/compile_gpt.py [--machine plate1] [--seq 32] [--trace FILE] [--max-autotune | --extern-gemm]

Prints the modeled time of one forward pass, per kernel (launches, modeled time, share, bytes that
stayed in their NUMA domain and bytes that crossed), the traffic matrix by (core domain, home
domain), and writes a Perfetto trace (open it in ui.perfetto.dev): a track of kernels on the
modeled clock and, under it, every core's DMA / vector / matrix engines.

Matrix products run as Triton GEMM templates on the matrix unit: in the default mode with the block
sizes the cost model picks, with --max-autotune with those that win on the modeled clock. --extern-gemm
leaves them to aten on the host instead, outside the model (counted as host fallbacks, printed).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--machine", default="plate1", help="machine preset (triton_plate_backend.machine.PRESETS)")
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--trace", default="gpt_trace.json", help="Perfetto trace to write ('' for none)")
    gemm = p.add_mutually_exclusive_group()
    gemm.add_argument("--max-autotune", action="store_true", help="autotune the GEMM templates on the modeled clock")
    gemm.add_argument("--extern-gemm", action="store_true", help="matrix products as aten kernels on the host")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse(argv)
    os.environ["PLATE_MACHINE"] = args.machine  # read when the simulated device is created
    import torch

    try:
        import inductor_plate
    except ModuleNotFoundError:  # a checkout that is not pip-installed: run from the repository
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        import inductor_plate
    from inductor_plate.model_suite import GPT, GPTConfig

    config = GPTConfig(vocab=256, context=max(args.seq, 8), d_model=args.d_model, heads=4, layers=args.layers)
    torch.manual_seed(0)
    reference = GPT(config).eval()
    model = GPT(config).eval()
    model.load_state_dict(reference.state_dict())
    model = model.to("plate")
    idx = torch.randint(0, config.vocab, (args.batch, args.seq))

    if args.extern_gemm:
        inductor_plate.config.gemm_templates = "never"
    compiled = torch.compile(model, mode="max-autotune-no-cudagraphs" if args.max_autotune else None)
    with torch.no_grad():
        start = time.perf_counter()
        compiled(idx.to("plate"))  # compile, autotune on the modeled clock, first run
        compile_s = time.perf_counter() - start
        with inductor_plate.collect_profiles(trace=bool(args.trace)) as run:
            logits = compiled(idx.to("plate"))
        error = (logits.cpu() - reference(idx)).abs().max().item()

    props = torch.plate.get_device_properties()
    print(f"GPT {config.layers} layers, d_model {config.d_model}, batch {args.batch} x seq {args.seq} on {props.name}")
    print(f"compile + first run: {compile_s:.1f} s wall; max |logits - CPU eager| = {error:.2e}")
    print(f"one forward pass: {run.time_ns / 1e3:,.2f} us modeled in {len(run.launches)} kernel launches")
    print(f"host fallbacks: {dict(inductor_plate.host_fallbacks()) or 'none'}")
    pair = run.traffic_by_domain()
    total = float(pair.sum())
    remote = total - float(pair.trace()) if total else 0.0
    print(f"traffic: {total:,.0f} bytes, {remote:,.0f} remote ({remote / total:.1%})" if total else "traffic: none")
    print(run.report(top=12))
    print(inductor_plate.placement_summary())
    if args.trace:
        run.write_trace(args.trace)
        print(f"trace: {args.trace} (open in ui.perfetto.dev)")
    return 0 if error < 1e-3 else 1


if __name__ == "__main__":
    sys.exit(main())
