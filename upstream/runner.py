"""Run an upstream test suite (Triton's or Inductor's) against plate and write its pass-rate report.

    python -m upstream.runner triton   --src DIR [options] [-- extra pytest args]
    python -m upstream.runner inductor --src DIR [options] [-- extra pytest args]
    python -m upstream.runner LIBRARY  --src DIR [options] [-- extra pytest args]

LIBRARY is a project of `kind = "library"` in revisions.toml (a third-party Triton library: flag_gems):
its own test suite runs on the plate device with upstream/library_plugin.py (and the library's plugin,
if it names one); its report is reports/lib-LIBRARY.*, its skip list skiplists/lib-LIBRARY.toml.

DIR is a checkout of the upstream repo at the pinned revision (revisions.toml) or just its test
folder. pytest runs in a subprocess with our plugins (skip list, timeout, progress, JSON results),
under pytest-xdist, with HOME/TRITON_HOME/caches in a fresh temporary folder. Exit status: 0 all
ran tests passed or are listed; 1 unlisted failures or errors; 2 a usage or setup problem; 3 stale
skip-list entries (a listed test passes, or an entry matches nothing).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import importlib.metadata
import importlib.util
import json
import os
import posixpath
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import DEFAULT_SRC_DIR, PATCHES_DIR, REPO_ROOT, REPORTS_DIR, SKIPLISTS_DIR, OneLineParser, UpstreamError
from .patches import find_patches
from .report import (
    compare_by_function,
    path_roots,
    read_baseline,
    relative_paths,
    summarize,
    summary_lines,
    write_report,
)
from .revisions import REVISIONS_FILE, Revision, Tree, fetch, find_tree, get_revision, libraries
from .skiplist import load_skiplist

# suite name -> [project] of revisions.toml; "ops": PyTorch's device-generic OpInfo tests (test/test_ops.py) on the
# device's eager ops, with the library plugin's device setup and host-op count (upstream/device_tests_plugin.py)
SUITE_PROJECT = {"triton": "triton", "inductor": "pytorch", "ops": "pytorch"}
EXIT_OK, EXIT_FAILURES, EXIT_USAGE, EXIT_STALE, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
PYTEST_INTERRUPTED = 2  # pytest.ExitCode.INTERRUPTED, as the plugin's results file records it
DEFAULT_BASELINE = REPO_ROOT / "upstream" / "baselines" / "interpreter-unit-language.tsv.gz"
DEFAULT_TIMEOUT = 300.0
LIBRARY_PREFIX = "lib-"  # a library's report and skip list: reports/lib-NAME.*, skiplists/lib-NAME.toml
EMPTY_INI = "[pytest]\n"  # so no pytest config of the tree's parents (ours included) leaks into the run


def build_parser(prog: str = "python -m upstream.runner") -> argparse.ArgumentParser:
    p = OneLineParser(
        prog=prog,
        description="Run an upstream test suite against plate; pytest args may follow `--`.",
    )
    p.add_argument(
        "suite",
        metavar="SUITE",
        help=f"which upstream suite ({', '.join(sorted(SUITE_PROJECT))}) or library of revisions.toml "
        f"({', '.join(_libraries()) or 'none'})",
    )
    p.add_argument(
        "--src", type=Path, help=f"the upstream checkout or its test folder (default {DEFAULT_SRC_DIR}/<project>)"
    )
    p.add_argument("--fetch", action="store_true", help="clone the pinned revision into --src first (needs network)")
    p.add_argument("--fetch-url", help="clone from here instead of the repo in revisions.toml (a mirror)")
    p.add_argument("-k", "--select", metavar="EXPR", help="pytest -k expression")
    p.add_argument(
        "--files", nargs="+", metavar="PATH", help="files/folders under the test root instead of the suite's"
    )
    p.add_argument("--extended", action="store_true", help="also run the suite's `extended` files")
    p.add_argument(
        "--tutorials",
        action="store_true",
        help="triton: run the tutorials (python/tutorials 01-09: their checks, not their benchmarks) instead",
    )
    p.add_argument(
        "--patched",
        action="store_true",
        help="run a copy of the tests (or --tutorials) with the patches under patches/ applied that touch only "
        "the files the run selects (test patches: a file that does not collect unpatched)",
    )
    p.add_argument(
        "-j",
        "--jobs",
        type=int,
        help="pytest-xdist workers; 0 = in process (default: the library's `jobs`, else one per CPU)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        help=f"seconds per test phase (0 = none; default: the library's `timeout`, else {DEFAULT_TIMEOUT:g})",
    )
    p.add_argument("--report-dir", type=Path, default=REPORTS_DIR, help=f"where reports go (default {REPORTS_DIR})")
    p.add_argument("--name", help="report file name stem (default: the suite)")
    p.add_argument("--skiplist", type=Path, help="skip list TOML (default upstream/skiplists/<suite>.toml)")
    p.add_argument("--revisions", type=Path, default=REVISIONS_FILE, help=argparse.SUPPRESS)
    p.add_argument("--device", default="plate", help="the device the tests run on (default plate)")
    p.add_argument(
        "--interpret",
        action="store_true",
        help="triton: run under Triton's interpreter (TRITON_INTERPRET=1, --device cpu): checks the runner, not plate",
    )
    p.add_argument(
        "--baseline",
        type=Path,
        help="TSV of `outcome<TAB>test id` from another run (triton default: the interpreter's, where present): the "
        "report lists the tests that pass there and not here",
    )
    p.add_argument(
        "--vs-interpreter",
        action="store_true",
        help="triton: then run the same selection under Triton's interpreter and report both wall times",
    )
    p.add_argument("--device-setup", default="inductor_plate", help="inductor: module that registers the device")
    p.add_argument(
        "--fallback-on-compile-error",
        action="store_true",
        help="inductor: a kernel the device cannot compile runs its frame eagerly (counted as a host fallback: "
        "the test is then passed-with-fallback at best); default off: the compile error fails the test",
    )
    known = p.add_mutually_exclusive_group()
    known.add_argument(
        "--skip-known", action="store_true", help="skip not-yet/upstream-bug entries instead of running them as xfail"
    )
    known.add_argument(
        "--check-stale", action="store_true", help="run only the not-yet/upstream-bug entries; report those that pass"
    )
    p.add_argument(
        "--pytest-output", action="store_true", help="pytest's own terminal output instead of the progress line"
    )
    p.add_argument(
        "--src-revision",
        metavar="OWNER/REPO@COMMIT",
        help="where --src's test files really came from when that is not the pin of revisions.toml (a fork's or "
        "another commit's copy): the report's header names it instead of the pin",
    )
    p.add_argument(
        "--keep-home", action="store_true", help="keep the temporary HOME (caches, dumps) and print its path"
    )
    p.add_argument(
        "--keep-cache",
        metavar="DIR",
        type=Path,
        help="the Triton and Inductor caches in DIR (created if missing, kept after the run): a second run with "
        "the same DIR reuses the kernels the first compiled, as a user rerunning the suite does",
    )
    return p


def _libraries() -> list[str]:
    try:
        return libraries()
    except UpstreamError:  # a broken revisions.toml: the run that reads it says what is wrong
        return []


def _split_passthrough(argv: list[str]) -> tuple[list[str], list[str]]:
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1 :]
    return argv, []


def _test_paths(revision: Revision, tree: Tree, args) -> list[str]:
    wanted = list(args.files or revision.suite.paths)
    if args.extended and not args.files:
        wanted += revision.suite.extended
    present = [p for p in wanted if (tree.test_dir / p.split("::", 1)[0]).exists()]
    for p in sorted(set(wanted) - set(present)):
        print(f"upstream: {p} is not in {tree.test_dir}; skipping it", file=sys.stderr)
    if not present:
        raise UpstreamError(f"none of {', '.join(wanted)} exists under {tree.test_dir}")
    return present


# A run's Triton and Inductor caches are thrown away with its HOME: in memory they cost no disk writes (each
# compile writes ~7 small files; on an ext4 disk mounted with ``discard`` that is ~2-4 ms CPU and 1-20 ms wall
# per compile, by the disk's load). The tmpfs every Linux mounts here; elsewhere the caches stay in the HOME.
MEMORY_TMP = Path("/dev/shm")


def _cache_folder(args, home: Path) -> tuple[Path, Path | None]:
    """(the folder of the run's caches, the folder to remove after the run, if not the HOME): --keep-cache's
    folder, kept; a fresh folder in MEMORY_TMP when it is a writable directory and the HOME is not kept
    (--keep-home keeps the caches in the HOME, where its message says they are), else the HOME itself."""
    kept = getattr(args, "keep_cache", None)
    if kept is not None:
        kept = Path(kept).resolve()
        kept.mkdir(parents=True, exist_ok=True)
        return kept, None
    if args.keep_home or not (MEMORY_TMP.is_dir() and os.access(MEMORY_TMP, os.W_OK)):
        return home, None
    try:
        folder = Path(tempfile.mkdtemp(prefix=f"plate-upstream-{args.suite}-caches-", dir=MEMORY_TMP))
    except OSError:  # full, or not writable after all
        return home, None
    return folder, folder


def _environment(revision: Revision, args, home: Path, caches: Path | None = None) -> dict[str, str]:
    caches = home if caches is None else caches
    env = dict(os.environ)
    env.update(revision.suite.env)
    if args.interpret:
        env.pop("TRITON_DEFAULT_BACKEND", None)
        env["TRITON_INTERPRET"] = "1"
    env.update(
        HOME=str(home),
        TRITON_HOME=str(home),  # fresh_knobs resets TRITON_HOME: HOME keeps the cache in the sandbox too
        TRITON_CACHE_DIR=str(caches / ".triton" / "cache"),
        TORCHINDUCTOR_CACHE_DIR=str(caches / "inductor-cache"),
        PYTHONPATH=os.pathsep.join(
            [str(REPO_ROOT), *filter(None, [env.get("PYTHONPATH"), getattr(args, "library_path", None)])]
        ),
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


def pytest_command(suite: str, tree: Tree, paths: list[str], args, ini: Path, results: Path) -> list[str]:
    """The pytest command line of a run (run with cwd = the test root)."""
    device = "cpu" if args.interpret else args.device
    known = "only" if args.check_stale else "skip" if args.skip_known else "xfail"
    skiplist = args.skiplist or SKIPLISTS_DIR / f"{suite}.toml"
    cmd = [sys.executable, "-m", "pytest", *paths, "-c", str(ini), "--rootdir", str(tree.test_dir)]
    cmd += ["--confcutdir", str(tree.test_dir), "-p", "no:cacheprovider", "--continue-on-collection-errors"]
    cmd += ["-p", "upstream.plugin", "--plate-skiplist", str(skiplist), "--plate-results", str(results)]
    cmd += ["--plate-timeout", str(args.timeout), "--plate-known", known]
    library = getattr(args, "library", None)
    if library is not None:  # a third-party library's own suite, on the device
        cmd += ["-p", "upstream.library_plugin", "--lib-device", device]
        cmd += ["-p", library.plugin] if library.plugin else []
        cmd += list(library.suite.args)
    elif getattr(args, "tutorials", False):  # no conftest there: the device is the active driver's
        cmd += ["-p", "upstream.tutorials", "-o", "python_files=[0-9][0-9]-*.py"]
    elif suite == "triton":
        cmd += ["--device", device]
    elif suite == "ops":  # the eager device: registered first, each test's host ops recorded
        cmd += ["-p", "upstream.library_plugin", "--lib-device", device, "-p", "upstream.device_tests_plugin"]
    else:
        cmd += ["-p", "upstream.inductor_plugin", "--inductor-device", device]
        cmd += ["--inductor-device-setup", args.device_setup]
        if args.fallback_on_compile_error:
            cmd += ["--inductor-fallback-on-compile-error"]
    if getattr(args, "patches_applied", None):
        cmd += ["--plate-patches-applied", ",".join(args.patches_applied)]
    if args.jobs > 0:
        cmd += ["-n", str(args.jobs)]
    cmd += ["-q", "-rN"] if args.pytest_output else ["-p", "no:terminal", "--plate-progress"]
    if args.select:
        cmd += ["-k", args.select]
    return cmd


def _plate_knobs_set() -> list[str]:
    """``NAME=value`` of every plate knob (PLATE_*) set in the environment: part of the command that reproduces
    a run (e.g. PLATE_AUTOTUNE_MARGIN=off, which simulates every autotuning choice)."""
    return [f"{name}={value}" for name, value in sorted(os.environ.items()) if name.startswith("PLATE_")]


def _revision_of_tests(revision: Revision, src_revision: str | None) -> dict:
    """The revision the report names: the pin, or the copy --src-revision says the test files came from."""
    if not src_revision:
        return {"project": revision.project, "repo": revision.repo, "ref": revision.ref, "describe": revision.describe}
    repo, sep, commit = src_revision.partition("@")
    if not sep or not repo or not commit:
        raise UpstreamError(f"--src-revision {src_revision!r}: give OWNER/REPO@COMMIT, where --src's tests came from")
    return {
        "project": revision.project,
        "repo": repo,
        "ref": commit,
        "describe": f"test files from {repo} @ {commit[:12]}, not the pinned {revision.ref}",
    }


def _plate_commit() -> str | None:
    done = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True)
    return done.stdout.strip() or None


def _run_pytest(args, revision: Revision, tree: Tree, paths: list[str], passthrough: list[str]):
    """One pytest run in a fresh temporary HOME: (results, wall seconds, command, return code); results say
    "interrupted" when the run was stopped."""
    home = Path(tempfile.mkdtemp(prefix=f"plate-upstream-{args.suite}-"))
    caches, in_memory = _cache_folder(args, home)
    try:
        ini = home / "pytest.ini"
        upstream_ini = tree.root / "pytest.ini" if tree.root else None
        if upstream_ini is not None and upstream_ini.is_file():
            ini = upstream_ini
        else:
            ini.write_text(EMPTY_INI)
        results_path = home / "results.json"
        cmd = pytest_command(args.suite, tree, paths, args, ini, results_path) + passthrough
        env = _environment(revision, args, home, caches)
        print(f"upstream {args.suite}: {revision.project} {revision.ref[:12]} in {tree.test_dir}", file=sys.stderr)
        print(f"upstream {args.suite}: {shlex.join(cmd)}", file=sys.stderr)
        t0 = time.monotonic()
        proc, stopped = subprocess.Popen(cmd, cwd=tree.test_dir, env=env), False
        try:
            rc = proc.wait()
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: let pytest stop and write what ran so far
            proc.send_signal(signal.SIGINT)
            rc = proc.wait()
            stopped = True  # pytest may not know: `timeout` signals the whole process group
            print(f"upstream {args.suite}: interrupted; reporting the tests that finished", file=sys.stderr)
        wall = time.monotonic() - t0
        if not results_path.is_file():
            raise UpstreamError(f"pytest exited with status {rc} before writing results (see its output above)")
        results = json.loads(results_path.read_text())
        results["interrupted"] = stopped or results.get("exitstatus") == PYTEST_INTERRUPTED
        return results, wall, cmd, rc
    finally:
        if args.keep_home:
            print(f"upstream: temporary HOME kept at {home}", file=sys.stderr)
        else:
            shutil.rmtree(home, ignore_errors=True)
        if in_memory is not None:
            shutil.rmtree(in_memory, ignore_errors=True)


def _tutorials(revision: Revision, tree: Tree) -> tuple[Revision, Tree]:
    """The revision and tree of a --tutorials run: the tutorials' folder instead of the test root."""
    if revision.tutorials is None:
        raise UpstreamError(f"--tutorials: {revision.project} has no [{revision.project}.tutorials] in revisions.toml")
    folder = (tree.root / revision.tutorials.root) if tree.root else None
    if folder is None or not folder.is_dir():
        where = tree.root or tree.test_dir
        raise UpstreamError(
            f"--tutorials: {where} has no {revision.tutorials.root}/; pass --src the checkout root "
            f"(a tree with {revision.test_root}/ and {revision.tutorials.root}/), or --fetch"
        )
    return dataclasses.replace(revision, suite=revision.tutorials), Tree(tree.root, folder)


def _patched_copy(revision: Revision, tree: Tree, dest: Path, root: str, wanted: list[str]) -> tuple[Tree, list[str]]:
    """A copy of the tree's test (or tutorials) folder `root` under `dest` (same layout) with every patch
    applied whose files all lie in that folder, under the `wanted` paths (relative to it): (its tree, the
    patches' names)."""
    copy = dest / root  # root "." (a library's tests at the top of its checkout): the copy is dest itself
    shutil.copytree(tree.test_dir, copy, ignore=shutil.ignore_patterns("__pycache__", ".git"), dirs_exist_ok=True)
    prefixes = [posixpath.normpath(f"{root}/{w.split('::', 1)[0].rstrip('/')}") for w in wanted]
    applied = []
    for patch in find_patches(PATCHES_DIR):
        inside = all(any(f == p or f.startswith(p + "/") for p in prefixes) for f in patch.files)
        if patch.project != revision.project or not inside:
            continue
        done = subprocess.run(["git", "apply", str(patch.path)], cwd=dest, capture_output=True, text=True)
        if done.returncode != 0:
            raise UpstreamError(f"--patched: {patch.name} does not apply to {tree.test_dir}: {done.stderr.strip()}")
        applied.append(patch.name)
    return Tree(dest, copy), applied


def _library_path(revision: Revision, tree: Tree) -> tuple[str | None, str]:
    """(what goes on PYTHONPATH, where the library comes from): the installed package when Python finds
    one (pip install NAME==VERSION, or PYTHONPATH), else the checkout's source folder (library.folder)."""
    package = revision.library_package
    spec = importlib.util.find_spec(package) if revision.pip is not None else None  # no package: the checkout's
    if spec is not None:
        try:
            version = importlib.metadata.version(revision.pip.name)
        except importlib.metadata.PackageNotFoundError:
            version = None
        if version is not None and version != revision.pip.version:
            raise UpstreamError(
                f"{revision.pip.name} {version} is installed; the pin is {revision.pip.version}: "
                f"pip install --no-deps {revision.pip.name}=={revision.pip.version}, or put its source on PYTHONPATH"
            )
        return None, f"installed {package} {version or '(no package metadata: a source folder on PYTHONPATH)'}"
    folder = (tree.root / revision.library_folder) if tree.root else None
    if folder is None or not (folder / package).is_dir():
        raise UpstreamError(
            f"{package} is not importable and the tree has no {revision.library_folder}/{package}: "
            + (
                f"pip install --no-deps {revision.pip.name}=={revision.pip.version} (and its dependencies)"
                if revision.pip is not None
                else "it is not a package: --src names a checkout of the pinned commit"
            )
        )
    where = f"{revision.library_folder}/" if revision.library_folder else "top folder"
    return str(folder), f"{package} from the checkout's {where} (not installed)"


def run_suite(args, passthrough: list[str], argv: list[str]) -> int:
    if args.suite in SUITE_PROJECT:
        revision = get_revision(SUITE_PROJECT[args.suite], args.revisions)
    else:  # a library: its project name is the suite's
        if args.suite not in libraries(args.revisions):
            raise UpstreamError(
                f"no suite or library {args.suite!r}: choose from "
                f"{', '.join(sorted(SUITE_PROJECT) + libraries(args.revisions))}"
            )
        revision = get_revision(args.suite, args.revisions)
    args.library = revision if revision.is_library else None
    if args.library is not None and (args.tutorials or args.interpret or args.vs_interpreter):
        raise UpstreamError("--tutorials, --interpret and --vs-interpreter are for the triton suite, not a library")
    suite_defaults = revision.suite if revision.is_library else None
    if args.jobs is None:
        args.jobs = suite_defaults.jobs if suite_defaults and suite_defaults.jobs is not None else os.cpu_count() or 1
    if args.timeout is None:
        timeout = suite_defaults.timeout if suite_defaults else None
        args.timeout = float(timeout if timeout is not None else DEFAULT_TIMEOUT)
    if args.interpret and args.suite != "triton":
        raise UpstreamError("--interpret is Triton's interpreter: only for the triton suite")
    if args.vs_interpreter and (args.suite != "triton" or args.interpret):
        raise UpstreamError("--vs-interpreter compares a plate run of the triton suite with Triton's interpreter")
    tree = fetch(revision, args.src or DEFAULT_SRC_DIR / revision.project, args.fetch_url) if args.fetch else None
    tree = tree or find_tree(revision, args.src)
    suite_name, applied = args.suite, None
    args.library_path = None
    if args.library is not None:
        suite_name = LIBRARY_PREFIX + args.suite
        args.library_path, args.library_from = _library_path(revision, tree)
    if args.tutorials:
        revision, tree = _tutorials(revision, tree)
        suite_name = f"{args.suite}-tutorials"
    src = tree.root or tree.test_dir
    if args.patched:
        root = revision.suite.root or revision.test_root
        patched_dir = Path(tempfile.mkdtemp(prefix="plate-patched-"))
        try:
            tree, applied = _patched_copy(revision, tree, patched_dir, root, _test_paths(revision, tree, args))
            if args.library is not None and args.library_path is not None and root == ".":  # the copy's package
                args.library_path, args.library_from = _library_path(revision, tree)
            return _run_suite(args, passthrough, argv, revision, tree, suite_name, applied, src)
        finally:
            shutil.rmtree(patched_dir, ignore_errors=True)
    return _run_suite(args, passthrough, argv, revision, tree, suite_name, applied, src)


def _run_suite(args, passthrough, argv, revision: Revision, tree: Tree, suite_name: str, applied, src: Path) -> int:
    missing = [m for m in revision.suite.requires if importlib.util.find_spec(m) is None]
    if missing:
        raise UpstreamError(f"the {args.suite} tests import {', '.join(missing)}: pip install {' '.join(missing)}")
    args.skiplist = Path(args.skiplist or SKIPLISTS_DIR / f"{suite_name}.toml").resolve()  # pytest runs elsewhere
    load_skiplist(args.skiplist)  # a bad list fails here, before pytest starts
    paths = _test_paths(revision, tree, args)
    if args.baseline is None and suite_name == "triton" and not args.interpret and DEFAULT_BASELINE.is_file():
        args.baseline = DEFAULT_BASELINE
    started = datetime.datetime.now(datetime.UTC)
    plate_commit = _plate_commit()  # the code under test: HEAD when the run starts, not when it ends
    args.patches_applied = applied
    results, wall, cmd, rc = _run_pytest(args, revision, tree, paths, passthrough)
    interpreter = None
    if args.vs_interpreter:  # the same selection under Triton's interpreter, right after, for the wall-time ratio
        i_results, i_wall, i_cmd, i_rc = _run_pytest(
            argparse.Namespace(**{**vars(args), "interpret": True}), revision, tree, paths, passthrough
        )
        interpreter = {
            "wall_s": round(i_wall, 2),
            "pytest_command": shlex.join(i_cmd),
            "pytest_returncode": i_rc,
            "totals": summarize(i_results, {})["totals"],
            "wall_ratio": round(wall / i_wall, 2) if i_wall else None,
            "by_function": compare_by_function(results, i_results),
        }
    meta = {
        "suite": suite_name,
        "device": "cpu (Triton interpreter)" if args.interpret else args.device,
        "revision": _revision_of_tests(revision, args.src_revision),
        "plate_commit": plate_commit,
        "command": shlex.join([*_plate_knobs_set(), "python", "-m", "upstream.runner", *argv]),
        "pytest_command": shlex.join(cmd),
        "started": started.isoformat(timespec="seconds"),
        "wall_s": round(wall, 2),
        "jobs": args.jobs,
        "timeout_s": args.timeout,
        "paths": paths,
        "pytest_returncode": rc,
        "interrupted": results["interrupted"],
        "interpreter": interpreter,
        "patches_applied": applied,
    }
    if args.library is not None:
        pip = f"{revision.pip.name}=={revision.pip.version}" if revision.pip is not None else None
        meta["library"] = {"pip": pip, "from": args.library_from}
    report = summarize(results, meta, baseline=read_baseline(args.baseline) if args.baseline else None)
    # committed reports name no folder of this machine: paths relative to --src, the repo, $TMPDIR, ...
    # the tree --src names, then the one that ran (the same, or a patched copy under $TMPDIR)
    roots = [(str(src) + "/", ""), (str(src), "<src>"), *path_roots(tree.root or tree.test_dir, REPO_ROOT)]
    shown = relative_paths(report, roots)
    if shown.get("baseline") and Path(shown["baseline"]["path"]).is_absolute():  # elsewhere: its name says enough
        shown["baseline"]["path"] = Path(shown["baseline"]["path"]).name
    written = write_report(shown, relative_paths(results, roots), args.report_dir, args.name or suite_name)
    for line in summary_lines(report):
        print(line)
    print("report: " + ", ".join(str(p) for p in written))
    if meta["interrupted"]:
        return EXIT_INTERRUPTED
    stale = report["skiplist"]["stale"]
    stale_lines = [f"  {k}: listed as failing but passes: {', '.join(v[:3])}" for k, v in stale["passing"].items()]
    stale_lines += [f"  {k}: {why}" for k, why in stale["missing"].items()]
    if stale_lines:
        print(f"STALE skip-list entries ({len(stale_lines)}); fix {results['skiplist']['path']}:")
        print("\n".join(stale_lines))
        return EXIT_STALE
    if report["failures"]:
        print(f"{len(report['failures'])} failures/errors not in the skip list; first: {report['failures'][0]['test']}")
        return EXIT_FAILURES
    return EXIT_OK


def main(argv: list[str] | None = None, prog: str = "python -m upstream.runner") -> int:
    """Entry point of `python -m upstream.runner` and of `plate upstream` (which passes prog="plate upstream")."""
    argv = list(sys.argv[1:] if argv is None else argv)
    own, passthrough = _split_passthrough(argv)
    args = build_parser(prog).parse_args(own)
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)  # `kill` stops a run like Ctrl-C does
    try:
        return run_suite(args, passthrough, argv)
    except UpstreamError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"upstream {args.suite}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
