"""`plate run SCRIPT [--trace PATH] [script args...]`: run a Triton script's main() on plate.

The script is any Python file with a ``main()`` (``examples/*.py``). Before it runs, Triton is
pointed at plate (``TRITON_DEFAULT_BACKEND=plate``) and, when the ``plate`` torch device is not
available, host-memory mode is switched on (``PLATE_HOST_MEMORY=1``) so CPU tensors work as kernel
arguments. After ``main()`` returns, the profile of the last launch is printed. ``--trace PATH``
(anywhere in the arguments; every other argument goes to the script) sets ``PLATE_TRACE``: a path
ending in ``.json`` receives the trace of the last launch, any other path is a directory that
gets one trace per launch (open them in https://ui.perfetto.dev). ``--sanitize race,init`` sets
``PLATE_SANITIZE`` for the script (docs/sanitizer.md).
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import os
import runpy
import sys
from collections.abc import Sequence
from pathlib import Path

from . import knobs
from .errors import PlateError


class ScriptError(PlateError):
    """A script `plate run` cannot run: missing file, no main()."""


def plate_torch_device_available() -> bool:
    """Is the ``plate`` torch device registered (importing triton_plate_backend.torch_device does it)?"""
    try:
        import torch

        import triton_plate_backend.torch_device  # noqa: F401
    except Exception:  # extension not built: host-memory mode is the fallback
        return False
    return torch._C._get_privateuse1_backend_name() == "plate"


def split_trace(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """(the --trace PATH of plate, the remaining arguments for the script)."""
    trace, rest, args = None, [], list(argv)
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--trace":
            if i + 1 >= len(args):
                raise ScriptError("--trace needs a PATH (a .json file, or a directory for one trace per launch)")
            trace, i = args[i + 1], i + 2
            continue
        if a.startswith("--trace="):
            trace = a.split("=", 1)[1]
        else:
            rest.append(a)
        i += 1
    return trace, rest


@contextlib.contextmanager
def _script_context(path: Path, argv: list[str]):
    """sys.argv and sys.path as when running ``python SCRIPT ARGV`` (the script's folder importable)."""
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(path), *argv]
    sys.path.insert(0, str(path.parent))
    try:
        yield
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path


def select_plate() -> str:
    """Point Triton at plate; returns where kernel tensors live: "plate" or "cpu" (host-memory mode)."""
    os.environ["TRITON_DEFAULT_BACKEND"] = "plate"
    if "triton" in sys.modules:  # a driver chosen before the switch would still be active
        import triton

        from .driver import PlateDriver

        if not isinstance(triton.runtime.driver.active, PlateDriver):
            triton.runtime.driver.set_active(PlateDriver())
    if plate_torch_device_available():
        return "plate"
    os.environ["PLATE_HOST_MEMORY"] = "1"
    return "cpu"


def run_example(
    path: str | os.PathLike, argv: Sequence[str] = (), *, trace: str | None = None, sanitize: str | None = None
) -> int:
    """Run the ``main()`` of the script at ``path`` on plate with ``argv`` (``--trace PATH`` in it is
    taken out, as is ``trace=``), print the last launch's profile; returns main's exit status.
    ``sanitize``: PLATE_SANITIZE modes for the script ("race", "init", "race,init")."""
    script = Path(path)
    if not script.is_file():
        raise ScriptError(f"no such script {str(script)!r}")
    _check_python(script)
    if sanitize is not None:
        knobs.parse_sanitize(sanitize)  # a KnobError before anything runs
        os.environ["PLATE_SANITIZE"] = sanitize
    trace_in_argv, argv = split_trace(argv)
    trace = trace or trace_in_argv
    if trace:
        os.environ["PLATE_TRACE"] = str(trace)
    where = select_plate()
    print(f"plate run {script}: tensors on {'the plate device' if where == 'plate' else 'CPU (host-memory mode)'}")

    with _script_context(script.resolve(), argv):
        namespace = runpy.run_path(str(script), run_name="__plate_run__")
        main = namespace.get("main")
        if not callable(main):
            raise ScriptError(f"{script} defines no main(); add one (examples/*.py show the shape)")
        try:
            takes_argv = bool(inspect.signature(main).parameters)
            status = main(argv) if takes_argv else main()
        except SystemExit as e:  # argparse --help and sys.exit inside main
            status = e.code
    status = status if isinstance(status, int) else (0 if status is None else 1)

    from . import last_profile

    profile = last_profile()
    if profile is None:
        print("plate run: no kernel was launched")
    else:
        print("last launch:")
        print(profile.summary())
        if trace:
            where_to = trace if str(trace).endswith(".json") else f"{trace}/ (one file per launch)"
            print(f"trace written to {where_to} (open in https://ui.perfetto.dev)")
    return status


def _check_python(script: Path) -> None:
    """A file that is not Python at all is bad input, not an error of the script: say so in one line."""
    try:
        compile(script.read_bytes(), str(script), "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as e:  # ValueError: null bytes
        where = f" (line {e.lineno})" if getattr(e, "lineno", None) else ""
        reason = e.msg if isinstance(e, SyntaxError) else str(e)
        raise ScriptError(f"{script} is not a Python script: {reason}{where}") from None
    except OSError as e:
        raise ScriptError(f"cannot read {script}: {e.strerror}") from None


# ---- the `plate run` subcommand ------------------------------------------------------------------
def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("script", help="a Python script with a main() (e.g. examples/matmul.py)")
    parser.add_argument("--trace", help="Perfetto trace: PATH.json gets the last launch, a directory one per launch")
    parser.add_argument(
        "--sanitize", metavar="MODES", help="sanitizer modes, comma-separated: race, init (sets PLATE_SANITIZE)"
    )
    parser.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments for the script's main()")


def cmd_run(args) -> int:
    if getattr(args, "machine", None):
        os.environ["PLATE_MACHINE"] = args.machine
    return run_example(args.script, args.script_args, trace=args.trace, sanitize=getattr(args, "sanitize", None))


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m triton_plate_backend.run_example SCRIPT [--trace PATH] [args...]``."""
    parser = argparse.ArgumentParser(prog="plate run", description=__doc__.splitlines()[0])
    parser.add_argument("--machine", default=None, help="machine preset (plate1, plate-mini, plate4)")
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return cmd_run(args)
    except PlateError as e:
        print(f"plate run: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
