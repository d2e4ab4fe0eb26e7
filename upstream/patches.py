"""Upstream-ready patches (patches/<project>/*.patch): list them, check they apply and that their tests pass.

    python -m upstream.patches list  [--src DIR ...]
    python -m upstream.patches check [--src DIR ...] [--interpret | --device D] [--before] [NAME ...]

Each patch is one `git format-patch` file, one future upstream PR; its commit message is the PR
description (problem, change, test) and names its tests in trailers of the last paragraph:

    Test: python/test/unit/language/test_core.py::test_zero_strided_tensors   (repeatable; node ids or files)
    Test-Env: NAME=VALUE                                                       (optional, repeatable)
    Depends-On: triton/other.patch     (optional, repeatable: a patch this one's tests need applied first)

`check` runs `git apply --check` on the pinned tree, then applies the patch to a temporary copy of
the tree's `take` paths and runs the named tests there. A patched library file (triton/*.py,
torch/*.py) is loaded over the installed package (upstream/overlay/sitecustomize.py). The outcome
of each check is kept in <report-dir>/patches.json, which `list` shows.
"""

from __future__ import annotations

import argparse
import datetime
import email
import email.policy
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from . import DEFAULT_SRC_DIR, PATCHES_DIR, REPO_ROOT, REPORTS_DIR, UPSTREAM_DIR, OneLineParser, UpstreamError
from .report import first_line
from .revisions import REVISIONS_FILE, Revision, load_revisions

OVERLAY_DIR = UPSTREAM_DIR / "overlay"
STATE_FILE = "patches.json"
_TRAILER = re.compile(r"^([A-Za-z][A-Za-z-]*):\s+(.+)$")
_DIFF_FILE = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.M)


@dataclass(frozen=True)
class Patch:
    path: Path
    project: str
    subject: str
    body: str
    files: tuple[str, ...]
    tests: tuple[str, ...] = ()
    test_env: dict[str, str] = field(default_factory=dict)
    depends_on: tuple[str, ...] = ()  # other patches (project/file) applied first, before and after

    @property
    def name(self) -> str:
        return f"{self.project}/{self.path.name}"


def parse_patch(path: Path, project: str) -> Patch:
    """Read a `git format-patch` file: subject, message body, touched files and the Test trailers."""
    text = Path(path).read_text()
    if not text.startswith("From "):
        raise UpstreamError(f"{path}: not a `git format-patch` file (it must start with 'From <sha> ...')")
    message = email.message_from_string(text, policy=email.policy.default)
    subject = re.sub(r"^\[PATCH[^\]]*\]\s*", "", " ".join(str(message["Subject"] or "").split()))
    payload = message.get_payload()
    body = payload.split("\n---\n", 1)[0].strip() if isinstance(payload, str) else ""
    last_paragraph = body.split("\n\n")[-1].splitlines()
    trailers = [m.groups() for m in map(_TRAILER.match, last_paragraph) if m]
    tests = tuple(v.strip() for k, v in trailers if k == "Test")
    env = dict(v.strip().split("=", 1) for k, v in trailers if k == "Test-Env" and "=" in v)
    depends_on = tuple(v.strip() for k, v in trailers if k == "Depends-On")
    files = tuple(dict.fromkeys(b for _, b in _DIFF_FILE.findall(text)))
    if not files:
        raise UpstreamError(f"{path}: no `diff --git` in it")
    return Patch(Path(path), project, subject, body, files, tests, env, depends_on)


def find_patches(patches_dir: Path = PATCHES_DIR, names: list[str] | None = None) -> list[Patch]:
    """Every patches/<project>/*.patch, or those whose name contains one of `names`."""
    found = [parse_patch(p, p.parent.name) for p in sorted(Path(patches_dir).glob("*/*.patch"))]
    if names:
        found = [p for p in found if any(n in p.name for n in names)]
        if not found:
            raise UpstreamError(f"no patch under {patches_dir} matches {', '.join(names)}")
    return found


# -- trees ---------------------------------------------------------------------------------------
def detect_project(src: Path, revisions: dict[str, Revision]) -> str:
    """Which project a checkout is: the one whose library package folder it has."""
    for name, rev in revisions.items():
        if (src / rev.library_folder / rev.library_package).is_dir():
            return name
    raise UpstreamError(
        f"{src}: not a checkout of {' or '.join(revisions)} (the patches need the checkout root, with "
        f"{' or '.join(f'{r.library_folder}/{r.library_package}/'.lstrip('/') for r in revisions.values())}); "
        "or say which with --src PROJECT=DIR"
    )


def source_trees(specs: list[str], revisions: dict[str, Revision]) -> dict[str, Path]:
    """--src values (`DIR` or `PROJECT=DIR`) plus the default upstream/src/<project> folders that exist."""
    trees = {p: DEFAULT_SRC_DIR / p for p in revisions if (DEFAULT_SRC_DIR / p).is_dir()}
    for spec in specs:
        project, _, folder = spec.rpartition("=")
        src = Path(folder).resolve()
        if not src.is_dir():
            raise UpstreamError(f"--src {spec}: {src} is not a folder")
        if project and project not in revisions:
            raise UpstreamError(f"--src {spec}: unknown project {project!r}; known: {', '.join(revisions)}")
        trees[project or detect_project(src, revisions)] = src
    return trees


def apply_check(patch: Patch, root: Path) -> tuple[bool, str]:
    done = subprocess.run(
        ["git", "apply", "--check", str(patch.path.resolve())], cwd=root, capture_output=True, text=True
    )
    return done.returncode == 0, done.stderr.strip()


def _copy_tree(patch: Patch, revision: Revision, root: Path, dest: Path) -> None:
    for rel in (*revision.take, *patch.files):
        src = root / rel
        if src.is_dir():
            shutil.copytree(src, dest / rel, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", ".git"))
        elif src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


# -- running a patch's tests ---------------------------------------------------------------------
@dataclass
class TestRun:
    status: str  # pass, fail, skipped, error
    outcomes: dict[str, str]
    detail: str = ""


def run_patch_tests(
    patch: Patch, revision: Revision, tree: Path, options, overlay: bool = True, deps: list[Patch] = ()
) -> TestRun:
    """Run the tests a patch names in `tree` (a copy of the upstream tree, patched or not; its
    dependencies applied in both, so their library files are overlaid either way)."""
    results = tree / ".plate-results.json"
    ini = tree / ".plate-pytest.ini"
    ini.write_text("[pytest]\n")
    files = [f for dep in deps for f in dep.files] + (list(patch.files) if overlay else [])
    modules = {m: str(tree / f) for f in files if (m := revision.module_of(f)) and (tree / f).is_file()}
    env = dict(os.environ)
    env.update(
        HOME=str(tree / ".home"),
        TRITON_HOME=str(tree / ".home"),
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONPATH=os.pathsep.join([str(OVERLAY_DIR), str(REPO_ROOT), *filter(None, [env.get("PYTHONPATH")])]),
        PLATE_UPSTREAM_OVERLAY=json.dumps(modules),
    )
    cmd = [sys.executable, "-m", "pytest", *patch.tests, "-c", str(ini), "--rootdir", str(tree), "-q", "-rN"]
    cmd += [
        "--confcutdir",
        str(tree),
        "-p",
        "no:cacheprovider",
        "-p",
        "upstream.plugin",
        "-p",
        "upstream.tutorials",  # a named python/tutorials/NN-*.py::script runs as the tutorial suite runs it
        "--plate-results",
        str(results),
    ]
    if revision.project == "triton":
        if options.interpret:
            env["TRITON_INTERPRET"] = "1"
            env.pop("TRITON_DEFAULT_BACKEND", None)
        else:
            env["TRITON_DEFAULT_BACKEND"] = options.device
        if any(t.startswith(revision.test_root + "/") for t in patch.tests):  # its conftest defines --device
            cmd += ["--device", "cpu" if options.interpret else options.device]
    if revision.is_library:  # on the device, as the library's suite runs (its plugins, options, environment)
        cmd += ["-p", "upstream.library_plugin", "--lib-device", options.device]
        cmd += ["-p", revision.plugin] if revision.plugin else []
        cmd += list(revision.suite.args)
        if revision.pip is None or importlib.util.find_spec(revision.library_package) is None:  # the tree's copy
            env["PYTHONPATH"] = os.pathsep.join([str(tree / revision.library_folder), env["PYTHONPATH"]])
        env.update(revision.suite.env)
    env.update(patch.test_env)
    done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=options.timeout)
    if not results.is_file():
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        return TestRun("error", {}, f"pytest exited {done.returncode} before running tests:\n{tail}")
    data = json.loads(results.read_text())
    outcomes = {t["test"]: t["outcome"] for t in data["tests"]}
    outcomes.update({e["test"]: "errors" for e in data["collection_errors"]})
    values = set(outcomes.values())
    if not outcomes:
        return TestRun("error", outcomes, "the named tests collected nothing")
    if data["collection_errors"]:
        error = data["collection_errors"][0]
        return TestRun("error", outcomes, f"{error['test']} does not import: {first_line(error['message'])}")
    if values & {"failed", "errors"}:
        bad = [t for t, o in outcomes.items() if o in ("failed", "errors")]
        return TestRun("fail", outcomes, f"{len(bad)} failed: {', '.join(bad[:5])}")
    if values & {"passed", "xpassed"}:
        return TestRun("pass", outcomes)
    return TestRun("skipped", outcomes, "every named test was skipped")


@dataclass
class CheckResult:
    patch: Patch
    apply: str  # applies, fails, untested
    detail: str = ""
    tests: TestRun | None = None
    before: TestRun | None = None

    def to_dict(self) -> dict:
        out = {"apply": self.apply, "detail": self.detail}
        for key, run in (("tests", self.tests), ("before", self.before)):
            if run is not None:
                out[key] = {"status": run.status, "outcomes": run.outcomes, "detail": run.detail}
        return out


def _dependencies(patch: Patch) -> list[Patch]:
    """The patches `patch` names in Depends-On: trailers, in order (one level: a dependency's own are its own)."""
    root = patch.path.resolve().parent.parent
    deps = []
    for name in patch.depends_on:
        path = root / name
        if not path.is_file():
            raise UpstreamError(f"{patch.name}: Depends-On {name}, which is not under {root}")
        deps.append(parse_patch(path, path.parent.name))
    return deps


def _prepare(patch: Patch, deps: list[Patch], revision: Revision, root: Path, dest: Path) -> str:
    """Copy the tree `patch` needs into `dest` and apply its dependencies there; an error message or ''."""
    _copy_tree(patch, revision, root, dest)
    for dep in deps:
        _copy_tree(dep, revision, root, dest)
        done = subprocess.run(["git", "apply", str(dep.path.resolve())], cwd=dest, capture_output=True, text=True)
        if done.returncode != 0:
            return f"its dependency {dep.name} does not apply: {done.stderr.strip()}"
    return ""


def check_patch(patch: Patch, revision: Revision, root: Path | None, options) -> CheckResult:
    if root is None:
        return CheckResult(patch, "untested", f"no {patch.project} tree: pass --src or fetch it into upstream/src/")
    deps = _dependencies(patch)
    with tempfile.TemporaryDirectory(prefix="plate-patch-") as tmp:
        base = root
        if deps:  # the patch applies to the tree its dependencies make
            base = Path(tmp) / "base"
            if message := _prepare(patch, deps, revision, root, base):
                return CheckResult(patch, "fails", message)
        ok, message = apply_check(patch, base)
        if not ok:
            return CheckResult(patch, "fails", message)
        result = CheckResult(patch, "applies", f"with {', '.join(d.name for d in deps)} applied first" if deps else "")
        if options.no_tests or not patch.tests:
            result.detail = "; ".join(
                filter(None, [result.detail, "tests not run" if patch.tests else "names no Test: trailer"])
            )
            return result
        if options.before:
            before = Path(tmp) / "before"
            _prepare(patch, deps, revision, root, before)
            # test files the patch adds go in unchanged, so its named tests exist and show the change missing
            added = [f for f in patch.files if not (root / f).exists() and not revision.module_of(f)]
            if added:
                include = [f"--include={f}" for f in added]
                subprocess.run(["git", "apply", *include, str(patch.path.resolve())], cwd=before, check=True)
            result.before = run_patch_tests(patch, revision, before, options, overlay=False, deps=deps)
        tree = Path(tmp) / "patched"
        _prepare(patch, deps, revision, root, tree)
        done = subprocess.run(["git", "apply", str(patch.path.resolve())], cwd=tree, capture_output=True, text=True)
        if done.returncode != 0:
            return CheckResult(patch, "fails", f"applies to {base} but not to its copy: {done.stderr.strip()}")
        result.tests = run_patch_tests(patch, revision, tree, options, deps=deps)
    return result


# -- state and printing --------------------------------------------------------------------------
def _load_state(report_dir: Path) -> dict:
    path = Path(report_dir) / STATE_FILE
    return json.loads(path.read_text()) if path.is_file() else {}


def _save_state(report_dir: Path, results: list[CheckResult], mode: str) -> Path:
    state = _load_state(report_dir)
    now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    for r in results:
        state[r.patch.name] = {"checked": now, "mode": mode, **r.to_dict()}
    path = Path(report_dir) / STATE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(state, indent=1, sort_keys=True) + "\n")
    return path


def _tests_column(entry: dict | None) -> str:
    if not entry or "tests" not in entry:
        return "-"
    run = entry["tests"]
    passed = sum(o in ("passed", "xpassed") for o in run["outcomes"].values())
    text = f"{run['status']} {passed}/{len(run['outcomes'])}"
    if "before" in entry:
        text += f" (before: {entry['before']['status']})"
    return text


def _print_table(rows: list[list[str]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1])


def cmd_list(args, revisions) -> int:
    trees = source_trees(args.src, revisions)
    state = _load_state(args.report_dir)
    rows = [["patch", "apply", "last check", "tests named", "subject"]]
    for patch in find_patches(args.patches_dir, args.names):
        root = trees.get(patch.project)
        apply = ("applies" if apply_check(patch, root)[0] else "fails") if root else "untested"
        last = state.get(patch.name)
        checked = f"{_tests_column(last)}, {last['mode']}, {last['checked'][:10]}" if last and "tests" in last else "-"
        rows.append([patch.name, apply, checked, str(len(patch.tests)), patch.subject])
    _print_table(rows)
    return 0


def cmd_check(args, revisions) -> int:
    trees = source_trees(args.src, revisions)
    results = []
    for patch in find_patches(args.patches_dir, args.names):
        if patch.project not in revisions:
            raise UpstreamError(f"{patch.path}: its folder {patch.project!r} is not a project of {args.revisions}")
        print(f"{patch.name}: checking ({len(patch.tests)} tests named) ...", file=sys.stderr, flush=True)
        results.append(check_patch(patch, revisions[patch.project], trees.get(patch.project), args))
    mode = "interpreter" if args.interpret else f"device {args.device}"
    state_path = _save_state(args.report_dir, results, mode)
    rows = [["patch", "apply", "tests", "detail"]]
    for r in results:
        detail = r.tests.detail if r.tests and r.tests.detail else r.detail
        rows.append([r.patch.name, r.apply, _tests_column(r.to_dict()), detail.splitlines()[0] if detail else ""])
    _print_table(rows)
    print(f"state: {state_path}")
    bad = [r for r in results if r.apply == "fails" or (r.tests and r.tests.status in ("fail", "error"))]
    return 1 if bad else 0


COMMANDS = {"list": cmd_list, "check": cmd_check}


def build_parser(prog: str = "python -m upstream.patches") -> argparse.ArgumentParser:
    p = OneLineParser(prog=prog, description="Upstream-ready patches under patches/.")
    sub = p.add_subparsers(dest="command", required=True)
    for name, help_ in (("list", "each patch with its status"), ("check", "apply each patch and run its tests")):
        sp = sub.add_parser(name, help=help_)
        sp.add_argument("names", nargs="*", help="only patches whose name contains one of these")
        sp.add_argument(
            "--src", action="append", default=[], metavar="[PROJECT=]DIR", help="an upstream checkout (repeatable)"
        )
        sp.add_argument("--report-dir", type=Path, default=REPORTS_DIR, help="where patches.json is kept")
        sp.add_argument("--patches-dir", type=Path, default=PATCHES_DIR, help=argparse.SUPPRESS)
        sp.add_argument("--revisions", type=Path, default=REVISIONS_FILE, help=argparse.SUPPRESS)
        if name == "check":
            sp.add_argument(
                "--device",
                default="plate",
                help="triton tests: --device and TRITON_DEFAULT_BACKEND; a library's: --lib-device",
            )
            sp.add_argument(
                "--interpret", action="store_true", help="triton tests under TRITON_INTERPRET=1, --device cpu"
            )
            sp.add_argument("--before", action="store_true", help="also run the tests on the unpatched tree")
            sp.add_argument("--no-tests", action="store_true", help="only `git apply --check`")
            sp.add_argument("--timeout", type=float, default=1800.0, help="seconds for one patch's tests")
    return p


def main(argv: list[str] | None = None, prog: str = "python -m upstream.patches") -> int:
    """Entry point of `python -m upstream.patches` and of `plate patches` (which passes prog="plate patches")."""
    args = build_parser(prog).parse_args(argv)
    try:
        return COMMANDS[args.command](args, load_revisions(args.revisions))
    except UpstreamError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `... list | head`
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
