"""The operand planner's decisions and the modeled time of real models, to show that a change keeps them.

    PYTHONPATH=.:LIBS python benchmarks/planner_decisions.py record FILE [--models bert,llama,gpt2,t5,bart]
    PYTHONPATH=.:LIBS python benchmarks/planner_decisions.py check FILE [--models ...]

LIBS holds transformers (bench_models.py's docstring). For each model, in this one process (plate-mini, default
mode, caches off, Inductor's compile_threads = 1 so that every launch runs here): bench_models.run_plate's compile,
then one more forward timed by the model. Recorded: every call of ``OperandPlanner.plan`` in launch order (kernel,
grid, the shared operands' argument, size and placement, and each choice: placement, ns saved, a replica's gain
and its migration ns), the device's operand moves, the launches and the modeled microseconds of the last
forward (floats as Python writes them: bit for bit). ``record`` writes them; ``check`` runs again and exits 0 when
they are equal (it writes what it saw to FILE.now). CPU seconds spent in ``plan`` are printed, not compared.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run(models: list[str]) -> dict:
    os.environ["PLATE_MACHINE"] = "plate-mini"
    os.environ["TRITON_ALWAYS_COMPILE"] = "1"
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    import torch
    import torch._inductor.config as inductor_config

    import inductor_plate  # noqa: F401
    from triton_plate_backend.sim import operands
    from triton_plate_backend.sim.device import get_device

    sys.path.insert(0, str(HERE))
    import bench_models

    inductor_config.compile_threads = 1
    plans: list = []
    spent = [0.0]
    plan = operands.OperandPlanner.plan

    def recorded(self, program, grid, args, memory):
        t0 = time.process_time()
        shared, choices = plan(self, program, grid, args, memory)
        spent[0] += time.process_time() - t0
        plans.append(
            [
                program.name,
                list(grid),
                [(i, rec.nbytes, str(rec.placement)) for i, rec in shared],
                [(c.arg, c.spec, repr(c.saved_ns), repr(c.replica_gain_ns), repr(c.replica_ns)) for c in choices],
            ]
        )
        return shared, choices

    operands.OperandPlanner.plan = recorded
    out = {}
    try:
        for name in models:
            plans.clear()
            spent[0] = 0.0
            moved = len(get_device(0).operand_moves)
            with inductor_config.patch(force_disable_caches=True), torch.no_grad():
                torch.manual_seed(0)
                model, inputs = bench_models.MODELS[name]()
                model = model.eval()
                r = bench_models.run_plate(model, inputs, model(*inputs), None)
            moves = [
                (m.kernel, m.arg, m.before, m.after, repr(m.migration_ns), repr(m.saved_ns))
                for m in list(get_device(0).operand_moves)[moved:]
            ]
            out[name] = {"modeled_us": repr(r.modeled_us), "launches": r.launches, "plans": list(plans), "moves": moves}
            print(
                f"{name}: modeled {r.modeled_us:.4f} us, {r.launches} launches, {len(plans)} plans "
                f"({spent[0]:.3f} CPU s in plan), {len(moves)} moves",
                flush=True,
            )
    finally:
        operands.OperandPlanner.plan = plan
    return json.loads(json.dumps(out))  # tuples as lists, as a file reads back


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mode", choices=("record", "check"))
    p.add_argument("file")
    p.add_argument("--models", default="bert,llama,gpt2,t5,bart")
    args = p.parse_args(argv)
    seen = run(list(filter(None, args.models.split(","))))
    if args.mode == "record":
        Path(args.file).write_text(json.dumps(seen, indent=0))
        return 0
    Path(args.file + ".now").write_text(json.dumps(seen, indent=0))
    before = json.loads(Path(args.file).read_text())
    differ = [name for name in seen if seen[name] != before.get(name)]
    print("all equal" if not differ else f"differ: {', '.join(differ)}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
