"""The `plate` command: one subcommand per job, registered in COMMANDS.

Bad input (a file that is missing, empty or not what the command reads, an argument of the wrong
form) ends in one line on stderr, ``plate <cmd>: error: <what>``, and exit status 2; a malformed
assembly file adds the offending line with a caret."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .errors import PlateError

BINARY_MAGIC = b"PLATEBIN"  # isa/encoding.py's MAGIC: what tells a .pbin from .pasm text


class CliError(PlateError):
    """Bad input to a plate subcommand: a file it cannot use or an argument of the wrong form."""


class _Parser(argparse.ArgumentParser):
    """argparse with plate's error form: one line, ``plate <cmd>: error: <what>``, exit 2 (no usage block)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


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


def _read_input(path: str) -> bytes:
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise CliError(f"cannot read {path}: {e.strerror}") from None
    if not data.strip():
        raise CliError(f"{path} is empty: expected PLATE assembly text (.pasm) or a PLATE binary (.pbin)")
    return data


def _load_program(path: str):
    from .isa import asm, encoding

    data = _read_input(path)
    try:
        if data.startswith(BINARY_MAGIC):
            return encoding.decode(data)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise CliError(
                f"{path} is neither a PLATE binary (it does not start with {BINARY_MAGIC.decode()}) nor UTF-8 "
                f"assembly text (byte {data[e.start]:#04x} at offset {e.start})"
            ) from None
        return asm.assemble(text)
    except CliError:
        raise
    except PlateError as e:
        e.args = (f"{path}: {e}",)  # name the file; an assembly error already has line, column and caret
        raise


def _write_output(path: Path, data: bytes) -> None:
    try:
        path.write_bytes(data)
    except OSError as e:
        raise CliError(f"cannot write {path}: {e.strerror}") from None


def cmd_asm(args) -> int:
    from .isa import encoding, program

    prog = _load_program(args.file)
    program.verify(prog, _machine(args))
    out = Path(args.output or Path(args.file).with_suffix(".pbin"))
    _write_output(out, encoding.encode(prog))
    print(f"{out}: {len(prog.instrs)} instructions, {len(prog.tiles)} tiles, {prog.sram_bytes} SRAM bytes")
    return 0


def cmd_disasm(args) -> int:
    from .isa import asm

    print(asm.disassemble(_load_program(args.file)), end="")
    return 0


def cmd_run_asm(args) -> int:
    from .runasm import check_expect, run_asm

    grid = _grid(args.grid)
    prog = _load_program(args.file)
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


def _grid(text: str) -> tuple[int, int, int]:
    parts = text.split(",")
    if not 1 <= len(parts) <= 3 or not all(p.strip().isdigit() for p in parts):
        raise CliError(f"--grid {text!r}: expected X[,Y[,Z]], one to three non-negative integers")
    grid = tuple(int(p) for p in parts)
    return grid + (1,) * (3 - len(grid))


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


def cmd_fuzz(args) -> int:
    from .fuzz.session import fuzz

    for flag, value, least in (("--cases", args.cases, 1), ("--jobs", args.jobs, 1), ("--start", args.start, 0)):
        if value < least:
            raise CliError(f"{flag} {value}: expected an integer >= {least}")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise CliError(f"--out {args.out}: not a directory")
    summary = fuzz(args.cases, args.seed, out, jobs=args.jobs, start=args.start)
    print((out / "fuzz-summary.md").read_text())
    print(f"summary: {out / 'fuzz-summary.md'} and .json; reproducers: {out / 'reproducers'}")
    return 1 if summary["mismatches"] else 0


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
    "fuzz": (cmd_fuzz, "differential fuzzing: random Triton kernels on plate against Triton's interpreter"),
}


PASS_THROUGH = ("upstream", "patches")  # their own parsers take every argument


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="plate", description="PLATE: NUMA tile accelerator toolchain and simulator")
    sub = p.add_subparsers(dest="command", required=True)
    p.commands = {}  # name -> its parser, to report an argument it does not take in its name
    for name, (_, help_) in COMMANDS.items():
        if name in PASS_THROUGH:
            sp = p.commands[name] = sub.add_parser(name, help=help_, add_help=False)
            sp.add_argument("rest", nargs=argparse.REMAINDER)
            continue
        sp = p.commands[name] = sub.add_parser(name, help=help_)
        sp.add_argument("--machine", default=None, help="machine preset (plate1, plate-mini, plate4)")
        if name == "run":
            from .run_example import add_arguments

            add_arguments(sp)
        if name == "bench":
            size = sp.add_mutually_exclusive_group()
            size.add_argument("--quick", action="store_true", help="small sizes (CI, about 2 minutes)")
            size.add_argument("--full", action="store_true", help="the largest sizes too (GEMM 4096^3)")
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
            sp.add_argument("--policy", help="grid -> core policy (default: PLATE_POLICY, as launches use)")
            sp.add_argument("--seed", type=int, default=0)
        if name == "fuzz":
            sp.add_argument("--cases", type=int, default=200, help="how many kernels (cases START..START+N-1)")
            sp.add_argument("--seed", type=int, default=0, help="the run's seed: the same seed, the same kernels")
            sp.add_argument("--start", type=int, default=0, help="first case index (to split a run into batches)")
            sp.add_argument("--out", default="fuzz-out", help="results, summary and reproducers (resumable)")
            sp.add_argument("--jobs", type=int, default=1, help="worker processes")
    return p


def main(argv=None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command in PASS_THROUGH:
        args.rest = extra + args.rest  # options before the first positional: REMAINDER leaves them out
    elif extra:
        parser.commands[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    fn = COMMANDS[args.command][0]
    try:
        return fn(args)
    except PlateError as e:
        print(f"plate {args.command}: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `plate isa | head`
        sys.stderr.close()
        return 0
    except OSError as e:  # a file the command writes (--trace) or reads late
        what = f"{e.strerror}: {e.filename}" if e.filename else str(e)
        print(f"plate {args.command}: error: {what}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
