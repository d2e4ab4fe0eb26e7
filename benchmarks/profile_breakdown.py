"""Where the time of a plate launch and of a test goes: Triton's frontend, plate's stages, cache I/O,
the launcher, the simulator (functional, level-1 timing), the torch device's copies.

    python benchmarks/profile_breakdown.py launch [--repeat 3]
    python benchmarks/profile_breakdown.py test-core [--every 25] [--match NAME] [--src DIR] [--keep-cache DIR]
    python benchmarks/profile_breakdown.py tests -- <pytest args>

``launch``: the benchmark kernels of triton_kernels.py (bench_triton.py's sizes), their first launch
(compile included, Triton's cache bypassed) and their best steady launch. ``test-core``: every
``--every``-th test of upstream test_core's interpreter selection (``-m interpreter``), or of its tests
whose id contains ``--match`` (one test function: ``--match test_compare_op[``), run in this process on
the plate device with a fresh Triton cache in a temporary folder. ``tests``: any pytest
run. Each prints a markdown table of seconds per section.

How: while it runs, the entry function of each section is wrapped with a timer (nothing else
changes); time is charged to the innermost section running, so sections never overlap, and
"other" is what is left (pytest, the test's own torch/numpy work, imports). ``--eager-ops`` adds one line:
the torch ops run on plate tensors (a test's ``torch.randn(..., device=device)``, ``assert_close``), timed
inclusive of the sections they ran in (their kernels' compiles and simulation): what an upstream test pays
on plate that its interpreter run, on CPU tensors, does not. Wall time by default,
``--cpu`` for this process' CPU time (a shared machine inflates wall time). Figures are
measurements of this run on this machine, not assertions.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
MEMORY_TMP = Path("/dev/shm")  # upstream/runner.py's: the tmpfs every Linux mounts

# the sections the run's counts are read from, by name (an index into SECTIONS moved when sections were added)
LAUNCH_PATH = "Triton launch path (binder, specialization, keys)"
COMPILE_DRIVER = "Triton compile driver (hashes, metadata)"
PIR_STAGE = "pir: TTIR parse + IR passes"

# (section, module, attribute path) of each entry function; order = order of the table
SECTIONS = (
    # Inductor's own graph work (an Inductor test's compile): the Triton and plate stages it calls are charged
    # to their own sections below, since time goes to the innermost section
    ("Inductor: lowering (GraphLowering.run)", "torch._inductor.graph", "GraphLowering.run"),
    ("Inductor: scheduling + codegen (compile_to_module)", "torch._inductor.graph", "GraphLowering.compile_to_module"),
    (LAUNCH_PATH, "triton.runtime.jit", "JITFunction.run"),
    (COMPILE_DRIVER, "triton.compiler.compiler", "compile"),
    (COMPILE_DRIVER, "triton.compiler", "compile"),
    ("Triton frontend AST->TTIR", "triton.compiler.compiler", "ASTSource.make_ir"),
    ("Triton MLIR context (load_dialects)", "triton._C.libtriton", "ir.load_dialects"),
    ("ttir: Triton's TTIR passes", "triton_plate_backend.compiler", "STAGES.ttir"),
    (PIR_STAGE, "triton_plate_backend.compiler", "STAGES.pir"),
    ("pasm: code generation", "triton_plate_backend.compiler", "STAGES.pasm"),
    ("pbin: assemble + encode", "triton_plate_backend.compiler", "STAGES.pbin"),
    ("cache I/O (Triton's file cache)", "triton.runtime.cache", "FileCacheManager.put"),
    ("cache I/O (Triton's file cache)", "triton.runtime.cache", "FileCacheManager.get_group"),
    ("cache I/O (Triton's file cache)", "triton.runtime.cache", "FileCacheManager.get_file"),
    ("cache I/O (Triton's file cache)", "triton_plate_backend.cache_files", "PlateFileCacheManager.put"),
    ("load binary (decode pbin)", "triton.compiler.compiler", "CompiledKernel._init_handles"),
    ("launcher (arguments, placement)", "triton_plate_backend.launcher", "PlateLauncher.__call__"),
    ("simulator: functional", "triton_plate_backend.sim.executor", "execute"),
    ("simulator: level-1 timing", "triton_plate_backend.sim.clock", "simulate_timing"),
    ("simulator: level-1 timing", "triton_plate_backend.sim.timing", "simulate_timing"),
)
OTHER = "other (pytest, the test's torch/numpy work, imports)"
COPIES = "torch device copies (host <-> plate)"
COLLECTOR = "Python's cycle collector (gc)"


class Sections:
    """Exclusive time per section: a stack of running sections, time charged to the innermost."""

    def __init__(self, clock):
        self.clock = clock
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self.stack = [OTHER]
        self.last = clock()
        # (generation, the section it interrupted) -> [collections, seconds]
        self.collections: dict[tuple[int, str], list] = {}
        self._gc_started = None
        # --eager-ops: inclusive seconds and calls of the torch ops run on plate tensors, by op, and the
        # sections' seconds charged while one ran
        self.eager: dict[str, list] = {}
        self.eager_sections: dict[str, float] = {}

    def on_gc(self, phase: str, info: dict) -> None:
        """A ``gc.callbacks`` entry: a collection's time is its own section, whatever it interrupted."""
        if phase == "start":
            self._charge()
            self._gc_started = (info["generation"], self.stack[-1], self.last)
            self.stack.append(COLLECTOR)
        elif self._gc_started is not None:
            self._charge()
            self.stack.pop()
            gen, where, start = self._gc_started
            self._gc_started = None
            rec = self.collections.setdefault((gen, where), [0, 0.0])
            rec[0] += 1
            rec[1] += self.last - start
            self.calls[COLLECTOR] = self.calls.get(COLLECTOR, 0) + 1

    def _charge(self) -> None:
        now = self.clock()
        self.seconds[self.stack[-1]] = self.seconds.get(self.stack[-1], 0.0) + now - self.last
        self.last = now

    @contextlib.contextmanager
    def section(self, name: str):
        self._charge()
        self.stack.append(name)
        self.calls[name] = self.calls.get(name, 0) + 1
        try:
            yield
        finally:
            self._charge()
            self.stack.pop()

    def timed(self, name: str, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.section(name):
                return fn(*args, **kwargs)

        return wrapper

    def close(self) -> None:
        self._charge()


def _resolve(module: str, path: str):
    """(owner, key, function) of ``module.path``; ``STAGES.x`` is a dict entry."""
    owner = importlib.import_module(module)
    *parents, key = path.split(".")
    for p in parents:
        owner = owner[p] if isinstance(owner, dict) else getattr(owner, p)
    return owner, key, (owner[key] if isinstance(owner, dict) else owner.__dict__.get(key, getattr(owner, key)))


@contextlib.contextmanager
def instrumented(sections: Sections, skip: tuple[str, ...] = (), eager_ops: bool = False):
    """Every entry function of SECTIONS wrapped with its timer, and plate tensor copies timed. ``skip``: module
    prefixes whose sections are left out (not imported: test_core's tests never import Inductor, whose import
    here was charged to "other", ~4 s CPU, and is not part of the run measured)."""
    import torch

    restore = []
    for name, module, path in SECTIONS:
        if module.startswith(skip):
            continue
        try:
            owner, key, fn = _resolve(module, path)
        except (ImportError, AttributeError, KeyError):  # a plate without this function: nothing to time
            continue
        if isinstance(owner, dict):
            owner[key] = sections.timed(name, fn)
            restore.append(functools.partial(owner.__setitem__, key, fn))
        else:
            setattr(owner, key, sections.timed(name, fn))
            restore.append(functools.partial(setattr, owner, key, fn))
    for method in ("to", "cpu", "copy_"):
        fn = getattr(torch.Tensor, method)
        setattr(torch.Tensor, method, _timed_copy(sections, fn))
        restore.append(functools.partial(setattr, torch.Tensor, method, fn))
    gc.callbacks.append(sections.on_gc)
    restore.append(functools.partial(gc.callbacks.remove, sections.on_gc))
    mode = _EagerOps(sections) if eager_ops else contextlib.nullcontext()
    sections.last = sections.clock()
    try:
        with mode:
            yield sections
    finally:
        sections.close()
        for undo in reversed(restore):
            undo()


def _timed_copy(sections: Sections, fn):
    """A tensor method that times only the calls with a plate tensor on either side."""

    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        plate = self.device.type == "plate" or any(_on_plate(a) for a in (*args, *kwargs.values()))
        if not plate:
            return fn(self, *args, **kwargs)
        with sections.section(COPIES):
            return fn(self, *args, **kwargs)

    return wrapper


def _eager_ops_mode():
    """The TorchDispatchMode class of --eager-ops (made on first use: importing torch is the caller's)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class EagerOps(TorchDispatchMode):
        """Times every torch op dispatched with a plate tensor or onto the plate device, inclusive: its host
        work, its kernels' compiles and their simulation, whatever sections those are charged to. The ops an
        op runs inside are not seen again (the mode is off while it runs)."""

        def __init__(self, sections: Sections):
            super().__init__()
            self.sections = sections

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if not any(_on_plate(a) for a in (*args, *kwargs.values())):
                return func(*args, **kwargs)
            sections = self.sections
            sections._charge()
            before, start = dict(sections.seconds), sections.last
            try:
                return func(*args, **kwargs)
            finally:
                sections._charge()
                rec = sections.eager.setdefault(str(func.overloadpacket.__name__), [0, 0.0])
                rec[0] += 1
                rec[1] += sections.last - start
                for name, seconds in sections.seconds.items():
                    if seconds != before.get(name, 0.0):
                        spent = seconds - before.get(name, 0.0)
                        sections.eager_sections[name] = sections.eager_sections.get(name, 0.0) + spent

    return EagerOps


def _EagerOps(sections: Sections):  # noqa: N802 - a class made on first use
    return _eager_ops_mode()(sections)


def _on_plate(value) -> bool:
    import torch

    if isinstance(value, torch.Tensor):
        return value.device.type == "plate"
    if isinstance(value, torch.device):
        return value.type == "plate"
    return isinstance(value, str) and value.startswith("plate")


def table(sections: Sections, title: str, per: int | None = None) -> str:
    """Markdown: seconds (ms per test when ``per`` tests ran; else ms) and share of each section."""
    total = sum(sections.seconds.values())
    order = [OTHER, *dict.fromkeys(name for name, _, _ in SECTIONS), COPIES, COLLECTOR]
    head = "| section | s | share | ms per test |" if per else "| section | ms | share |"
    lines = [f"**{title}**", "", head, "|---|---|---|---|" if per else "|---|---|---|"]
    for name in [*order, "total"]:
        s = total if name == "total" else sections.seconds.get(name, 0.0)
        if s == 0.0:
            continue
        share = f"{s / total * 100:.1f}%"
        figures = f"{s:.2f} | {share} | {s / per * 1e3:.1f}" if per else f"{s * 1e3:.1f} | {share}"
        lines.append(f"| {name} | {figures} |")
    counts = ", ".join(
        f"{what} {sections.calls.get(name, 0)}"
        for what, name in (
            ("launches", LAUNCH_PATH),
            ("compiles", COMPILE_DRIVER),
            ("plate compiles (pir stage runs)", PIR_STAGE),
            ("simulated launches", "simulator: functional"),
        )
    )
    return "\n".join(lines + ["", counts, "", *_collections(sections), *_eager_lines(sections, per), ""])


def _eager_lines(sections: Sections, per: int | None) -> list[str]:
    """--eager-ops: the torch ops run on plate tensors, inclusive of every section they ran in."""
    if not sections.eager:
        return []
    calls = sum(c for c, _ in sections.eager.values())
    seconds = sum(t for _, t in sections.eager.values())
    top = sorted(sections.eager.items(), key=lambda kv: -kv[1][1])[:8]
    each = ", ".join(f"{name} {c} / {t:.2f} s" for name, (c, t) in top)
    total = sum(sections.seconds.values())
    share = f"{seconds / total * 100:.1f}% of the total" + (f", {seconds / per * 1e3:.1f} ms per test" if per else "")
    parts = sorted(sections.eager_sections.items(), key=lambda kv: -kv[1])
    within = "; ".join(f"{name} {t:.2f} s" for name, t in parts if t >= 0.005)
    return [
        "",
        f"torch ops on plate tensors (inclusive): {calls} calls, {seconds:.2f} s ({share}); most: {each}",
        "",
        f"their time by section: {within}",
    ]


def _collections(sections: Sections) -> list[str]:
    """One line per generation: collections, seconds, and the sections they interrupted (the most first)."""
    out = []
    for gen in sorted({g for g, _ in sections.collections}):
        recs = sorted(((v[1], v[0], w) for (g, w), v in sections.collections.items() if g == gen), reverse=True)
        n, s = sum(r[1] for r in recs), sum(r[0] for r in recs)
        where = "; ".join(f"{w}: {c} / {t:.2f} s" for t, c, w in recs[:4])
        out.append(f"gc generation {gen}: {n} collections, {s:.2f} s (in {where})")
    return out


# ---- launch: the benchmark kernels ---------------------------------------------------------------
def run_launch(args) -> str:
    os.environ["TRITON_DEFAULT_BACKEND"] = "plate"
    sys.path.insert(0, str(HERE))
    import bench_triton
    import triton_kernels
    from triton import knobs

    import triton_plate_backend

    clock = time.process_time if args.cpu else time.perf_counter
    device = bench_triton._plate_device()
    out = []
    for name in bench_triton.KERNELS:
        launch, check = bench_triton.plate_case(name, device)
        first = Sections(clock)
        saved = knobs.compilation.always_compile
        knobs.compilation.always_compile = True
        try:
            launch()  # the process' first compile (imports, Triton's own hashes) is not the one shown
            getattr(triton_kernels, name).device_caches.clear()  # so that the next launch compiles again
            with instrumented(first):
                launch()
                triton_plate_backend.last_profile()  # the deferred level-1 timing runs here
        finally:
            knobs.compilation.always_compile = saved
        best = None
        for _ in range(args.repeat):
            steady = Sections(clock)
            with instrumented(steady):
                launch()
                triton_plate_backend.last_profile()  # the deferred level-1 timing runs here
            if best is None or sum(steady.seconds.values()) < sum(best.seconds.values()):
                best = steady
        check()
        out.append(table(first, f"{name}: a compiling launch (cache bypassed, not the process' first)"))
        out.append(table(best, f"{name}: steady launch (best of {args.repeat})"))
    return "\n".join(out)


# ---- tests: a pytest run in this process ------------------------------------------------------------
def run_pytest(pytest_args: list[str], clock, title: str, skip: tuple[str, ...] = (), eager_ops=False) -> str:
    import pytest

    sections = Sections(clock)
    counter = _TestCounter()
    with instrumented(sections, skip, eager_ops):
        rc = pytest.main(pytest_args, plugins=[counter])
    n = max(counter.tests, 1)
    return table(sections, f"{title} ({counter.tests} tests, pytest exit {int(rc)})", per=n)


class _TestCounter:
    def __init__(self):
        self.tests = 0

    def pytest_runtest_logfinish(self, nodeid, location):
        self.tests += 1


def run_test_core(args) -> str:
    src = Path(args.src or REPO / "upstream" / "src" / "triton")
    test_dir = (src / "python" / "test" if (src / "python" / "test").is_dir() else src).resolve()
    if not (test_dir / "unit" / "language" / "test_core.py").is_file():
        raise SystemExit(f"no unit/language/test_core.py under {test_dir}: pass --src a Triton checkout")
    keep = args.keep_cache is not None
    # a fresh cache where the upstream runner puts its run's caches (its MEMORY_TMP, /dev/shm: no disk writes),
    # so that the cache I/O section measures what the command pays
    memory = MEMORY_TMP if MEMORY_TMP.is_dir() and os.access(MEMORY_TMP, os.W_OK) else None
    home = Path(args.keep_cache) if keep else Path(tempfile.mkdtemp(prefix="plate-profile-", dir=memory))
    home.mkdir(parents=True, exist_ok=True)
    ini = home / "pytest.ini"
    ini.write_text("[pytest]\n")
    os.environ.update(
        TRITON_DEFAULT_BACKEND="plate",
        TRITON_CACHE_DIR=str(home / "triton-cache"),
        TORCHINDUCTOR_CACHE_DIR=str(home / "inductor-cache"),
    )
    common = ["-c", str(ini), "--rootdir", str(test_dir), "--confcutdir", str(test_dir), "-p", "no:cacheprovider"]
    common += ["-p", "upstream.plugin", "--plate-skiplist", str(REPO / "upstream" / "skiplists" / "triton.toml")]
    common += ["--device", "plate", "-m", "interpreter"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]))
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "unit/language/test_core.py", *common, "--collect-only", "-q"],
        cwd=test_dir,
        env=env,
        capture_output=True,
        text=True,
    )
    # the test ids only: pytest's warnings summary may quote one ("  Test: unit/...::test_atomic_rmw, ...")
    ids = [line for line in collected.stdout.splitlines() if line.startswith("unit/language/test_core.py::")]
    if args.match:
        ids = [i for i in ids if args.match in i.split("::", 1)[1]]
    sample = ids[args.every - 1 :: args.every]
    if not sample:
        raise SystemExit(f"collected no tests:\n{collected.stdout[-2000:]}{collected.stderr[-2000:]}")
    os.chdir(test_dir)
    sys.path.insert(0, str(REPO))
    clock = time.process_time if args.cpu else time.perf_counter
    title = f"test_core interpreter selection, every {args.every}th test"
    if args.match:
        title += f" of those matching {args.match!r}"
    try:
        pytest_args = [*sample, *common, "-q", "-p", "no:randomly"]
        return run_pytest(pytest_args, clock, title, skip=("torch._inductor",), eager_ops=args.eager_ops)
    finally:
        if not keep:
            shutil.rmtree(home, ignore_errors=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("launch", "test-core", "tests"))
    ap.add_argument("--cpu", action="store_true", help="this process' CPU time instead of wall time")
    ap.add_argument("--repeat", type=int, default=3, help="launch: steady launches (the best is shown)")
    ap.add_argument("--every", type=int, default=25, help="test-core: run every N-th test of the selection")
    ap.add_argument(
        "--eager-ops",
        action="store_true",
        help="tests: also time the torch ops run on plate tensors, inclusive (a dispatch mode, which costs a little)",
    )
    ap.add_argument("--match", help="test-core: only the tests whose id (after the file) contains this")
    ap.add_argument("--src", help="test-core: the Triton checkout (default upstream/src/triton)")
    ap.add_argument(
        "--keep-cache",
        metavar="DIR",
        help="test-core: keep the Triton cache in DIR (made if missing, not removed): a second run is a warm one",
    )
    ap.add_argument("pytest_args", nargs="*", help="tests: the pytest arguments (after --)")
    args = ap.parse_args(argv)
    start_wall, start_cpu = time.perf_counter(), time.process_time()
    if args.what == "launch":
        text = run_launch(args)
    elif args.what == "test-core":
        text = run_test_core(args)
    else:
        clock = time.process_time if args.cpu else time.perf_counter
        text = run_pytest(args.pytest_args, clock, "pytest " + " ".join(args.pytest_args), eager_ops=args.eager_ops)
    wall, cpu = time.perf_counter() - start_wall, time.process_time() - start_cpu
    print(text)
    print(f"{'CPU' if args.cpu else 'wall'} seconds per section; this process: {wall:.1f} s wall, {cpu:.1f} s CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
