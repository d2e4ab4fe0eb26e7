"""The `plate` command: one subcommand per job, registered in COMMANDS."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .errors import PlateError


def _machine(args):
    from .machine import get_machine

    return get_machine(args.machine)


def cmd_info(args) -> int:
    from .isa.table import ISA

    m = _machine(args)
    if args.json:
        print(json.dumps(m.to_dict(), indent=2))
    else:
        print(m.describe())
        print(f"  ISA      : {len(ISA)} instructions")
    return 0


def cmd_isa(args) -> int:
    from .isa.table import ENUMS, ISA

    print("| mnemonic | operands | unit | cost rule | semantics |\n|---|---|---|---|---|")
    for row in ISA.values():
        name = ".".join((row.mnemonic, *(f"<{s}>" for s in row.suffixes)))
        ops = ", ".join(
            ("=" if o.role == "def" else "+" if o.role == "inout" else "") + f"{o.name}:{o.kind}" for o in row.operands
        )
        print(f"| `{name}` | {ops} | {row.unit} | {row.cost} | {row.doc} |")
    print()
    for enum, values in ENUMS.items():
        print(f"- `<{enum}>`: {', '.join(values)}")
    return 0


def _load_program(path: str):
    from .isa import asm, encoding

    data = Path(path).read_bytes()
    if data[:8] == b"PLATEBIN":
        return encoding.decode(data)
    try:
        return asm.assemble(data.decode())
    except PlateError as e:
        e.args = (f"{path}: {e}",)  # name the file; the message already has line, column and caret
        raise


def cmd_asm(args) -> int:
    from .isa import encoding, program

    prog = _load_program(args.file)
    program.verify(prog, _machine(args))
    out = Path(args.output or Path(args.file).with_suffix(".pbin"))
    out.write_bytes(encoding.encode(prog))
    print(f"{out}: {len(prog.instrs)} instructions, {len(prog.tiles)} tiles, {prog.sram_bytes} SRAM bytes")
    return 0


def cmd_disasm(args) -> int:
    from .isa import asm

    print(asm.disassemble(_load_program(args.file)), end="")
    return 0


def cmd_run_asm(args) -> int:
    from .runasm import check_expect, run_asm

    prog = _load_program(args.file)
    grid = tuple(int(g) for g in args.grid.split(","))
    grid = grid + (1,) * (3 - len(grid))
    specs = {}
    for a in args.arg:
        if "=" not in a:
            raise PlateError(f"--arg {a!r}: expected NAME=VALUE")
        k, v = a.split("=", 1)
        specs[k.strip()] = v.strip()
    run = run_asm(prog, grid, specs, _machine(args), seed=args.seed, policy=args.policy, trace_path=args.trace)
    print(f"kernel {prog.name}: grid {grid}, {len(prog.instrs)} instructions, {prog.sram_bytes} SRAM bytes per core")
    print(run.profile.summary())
    if args.trace:
        print(f"trace written to {args.trace} (open in https://ui.perfetto.dev)")
    if args.expect:
        ok, msg = check_expect(run, args.expect)
        print(msg)
        return 0 if ok else 1
    return 0


def _upstream(module: str):
    """upstream/ sits at the repository root beside the package (an editable install of a checkout)."""
    import importlib

    root = Path(__file__).resolve().parent.parent
    if not (root / "upstream" / "__init__.py").is_file():
        raise PlateError(
            f"{root}/upstream/ not found: `plate upstream` and `plate patches` need a plate "
            "source checkout installed editable (pip install -e .)"
        )
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return importlib.import_module(f"upstream.{module}")


def cmd_upstream(args) -> int:
    return _upstream("runner").main(args.rest, prog="plate upstream")


def cmd_patches(args) -> int:
    return _upstream("patches").main(args.rest, prog="plate patches")


def cmd_run(args) -> int:
    from .run_example import cmd_run as run

    return run(args)


def cmd_bench(args) -> int:
    from .bench.run import run

    level = "quick" if args.quick else "full" if args.full else "default"
    result = run(level, only=args.kernel or None, out=args.out, plot=not args.no_plot, autotune=not args.kernel)
    print(
        f"{len(result['rows'])} runs in {result['wall_s']:.0f} s; cost-model median |error| "
        f"{result['estimate_median_abs_err_pct']:.1f}%; results in {args.out}/"
    )
    return 0


COMMANDS = {
    "run": (cmd_run, "run a Triton script's main() on plate (examples/*.py) and print its last launch's profile"),
    "info": (cmd_info, "print the PLATE machine description"),
    "upstream": (cmd_upstream, "run Triton's and Inductor's own test suites against plate (upstream/)"),
    "patches": (cmd_patches, "list or check the upstream-ready patches under patches/"),
    "bench": (cmd_bench, "benchmark the standard kernels, baseline vs plate's placement (Markdown, JSON, roofline)"),
    "isa": (cmd_isa, "print the instruction set table (Markdown)"),
    "asm": (cmd_asm, "assemble a .pasm file into a .pbin binary"),
    "disasm": (cmd_disasm, "print a .pbin (or .pasm) program as canonical assembly"),
    "run-asm": (cmd_run_asm, "run a .pasm/.pbin program on the simulator and print its profile"),
}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="plate", description="PLATE: NUMA tile accelerator toolchain and simulator")
    sub = p.add_subparsers(dest="command", required=True)
    for name, (_, help_) in COMMANDS.items():
        if name in ("upstream", "patches"):  # their own parsers take every argument
            sp = sub.add_parser(name, help=help_, add_help=False)
            sp.add_argument("rest", nargs=argparse.REMAINDER)
            continue
        sp = sub.add_parser(name, help=help_)
        sp.add_argument("--machine", default=None, help="machine preset (plate1, plate-mini, plate4)")
        if name == "run":
            from .run_example import add_arguments

            add_arguments(sp)
        if name == "bench":
            sp.add_argument("--quick", action="store_true", help="small sizes (CI, under 2 minutes)")
            sp.add_argument("--full", action="store_true", help="the largest sizes too (GEMM 4096^3)")
            sp.add_argument("--kernel", action="append", help="only this kernel (repeatable)")
            sp.add_argument("--out", default="benchmarks/results", help="output folder")
            sp.add_argument("--no-plot", action="store_true", help="skip the roofline PNG (no matplotlib)")
        if name == "info":
            sp.add_argument("--json", action="store_true", help="print the description as JSON")
        if name in ("asm", "disasm", "run-asm"):
            sp.add_argument("file")
        if name == "asm":
            sp.add_argument("-o", "--output")
        if name == "run-asm":
            sp.add_argument("--grid", default="1", help="X[,Y[,Z]] program instances")
            sp.add_argument("--arg", action="append", default=[], help="NAME=NUMBER or NAME=KIND:DTYPE:COUNT")
            sp.add_argument("--expect", help="'OUT = numpy expression' checked after the run")
            sp.add_argument("--trace", help="write a Chrome/Perfetto trace JSON here")
            sp.add_argument("--policy", default="round_robin", help="grid -> core policy")
            sp.add_argument("--seed", type=int, default=0)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    fn = COMMANDS[args.command][0]
    try:
        return fn(args)
    except PlateError as e:
        print(f"plate {args.command}: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `plate isa | head`
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
