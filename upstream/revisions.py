"""The pinned upstream revisions (revisions.toml), where their trees are, and how to fetch one."""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from . import DEFAULT_SRC_DIR, UPSTREAM_DIR, UpstreamError

REVISIONS_FILE = UPSTREAM_DIR / "revisions.toml"
LIBRARY = "library"
KINDS = ("suite", LIBRARY)


@dataclass(frozen=True)
class Suite:
    paths: tuple[str, ...]
    extended: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    requires: tuple[str, ...] = ()
    root: str | None = None  # tutorials: the folder of the checkout they live in (test_root otherwise)
    args: tuple[str, ...] = ()  # libraries: pytest options of the library's own conftest (--quick, ...)
    jobs: int | None = None  # libraries: pytest-xdist workers when --jobs is not given (0: in process)
    timeout: float | None = None  # libraries: seconds per test phase when --timeout is not given


@dataclass(frozen=True)
class Pip:
    """A third-party library's package (`kind = "library"`): what `pip install NAME==VERSION` installs."""

    name: str
    version: str


@dataclass(frozen=True)
class Revision:
    project: str
    repo: str
    ref: str  # a full commit hash or a tag
    describe: str
    take: tuple[str, ...]
    test_root: str
    library_package: str
    library_folder: str
    suite: Suite
    tutorials: Suite | None = None
    kind: str = "suite"  # "suite": Triton's or PyTorch's own tests; "library": a third-party Triton library
    pip: Pip | None = None  # libraries: the package the tests import (None: not published, the checkout's)
    plugin: str | None = None  # libraries: a pytest plugin of the library's own (upstream/libraries/)

    @property
    def is_library(self) -> bool:
        return self.kind == LIBRARY

    def module_of(self, path: str) -> str | None:
        """The module name of a library file of this project (`python/triton/x.py` -> `triton.x`), else None."""
        rel = Path(path)
        if self.library_folder:
            try:
                rel = rel.relative_to(self.library_folder)
            except ValueError:
                return None
        parts = rel.with_suffix("").parts
        if rel.suffix != ".py" or not parts or parts[0] != self.library_package:
            return None
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def load_revisions(path: Path = REVISIONS_FILE) -> dict[str, Revision]:
    try:
        data = tomllib.loads(Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise UpstreamError(f"{path}: cannot read the pinned revisions: {e}") from e
    revisions = {}
    for project, table in data.items():
        try:
            suite = table["suite"]
            tutorials = table.get("tutorials")
            kind = table.get("kind", "suite")
            if kind not in KINDS:
                raise UpstreamError(f"{path}: [{project}] kind = {kind!r}; one of {', '.join(KINDS)}")
            pip = table.get("pip") if kind == LIBRARY else None  # none: a library published only as source
            revisions[project] = Revision(
                project=project,
                repo=table["repo"],
                ref=table.get("commit") or table["tag"],
                describe=table.get("describe", ""),
                take=tuple(table["take"]),
                test_root=table["test_root"],
                library_package=table["library"]["package"],
                library_folder=table["library"]["folder"],
                suite=Suite(
                    paths=tuple(suite["paths"]),
                    extended=tuple(suite.get("extended", ())),
                    env=dict(suite.get("env", {})),
                    requires=tuple(suite.get("requires", ())),
                    args=tuple(suite.get("args", ())),
                    jobs=suite.get("jobs"),
                    timeout=suite.get("timeout"),
                ),
                kind=kind,
                pip=Pip(pip["name"], pip["version"]) if pip else None,
                plugin=table.get("plugin"),
                tutorials=None
                if tutorials is None
                else Suite(
                    paths=tuple(tutorials["paths"]),
                    env=dict(tutorials.get("env", {})),
                    requires=tuple(tutorials.get("requires", ())),
                    root=tutorials["root"],
                ),
            )
        except KeyError as e:
            raise UpstreamError(f"{path}: [{project}] lacks the key {e}; see the comment at the top of the file") from e
    return revisions


def libraries(path: Path = REVISIONS_FILE) -> list[str]:
    """The projects of `kind = "library"`: what `python -m upstream.runner <library>` accepts."""
    return sorted(name for name, r in load_revisions(path).items() if r.is_library)


def get_revision(project: str, path: Path = REVISIONS_FILE) -> Revision:
    revisions = load_revisions(path)
    if project not in revisions:
        raise UpstreamError(f"{path}: no [{project}] table; known: {', '.join(sorted(revisions))}")
    return revisions[project]


@dataclass(frozen=True)
class Tree:
    """An upstream tree on disk: `root` is the checkout (None when only the test folder was given)."""

    root: Path | None
    test_dir: Path


def find_tree(revision: Revision, src: Path | None) -> Tree:
    """Accept a checkout of the project, or just its test folder (`python/test` for Triton, `test` for PyTorch)."""
    src = Path(src) if src is not None else DEFAULT_SRC_DIR / revision.project
    src = src.resolve()
    if (src / revision.test_root).is_dir():
        return Tree(src, src / revision.test_root)
    tail = Path(revision.test_root).parts
    top_dirs = {Path(p).parts[0] for p in revision.suite.paths}
    if src.is_dir() and any((src / d).exists() for d in top_dirs):
        root = src.parents[len(tail) - 1] if src.parts[-len(tail) :] == tail else None
        return Tree(root, src)
    raise UpstreamError(
        f"{src}: not a {revision.project} checkout (no {revision.test_root}/) nor its test folder "
        f"(no {' or '.join(sorted(top_dirs))}/). Pass --src DIR pointing at one, or --fetch to clone "
        f"{revision.repo} at {revision.ref} into {src}"
    )


def _git(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)


def fetch(revision: Revision, dest: Path, repo: str | None = None) -> Tree:
    """Clone `revision` (only the `take` paths, depth 1) into `dest`; `repo` overrides the URL (a mirror)."""
    dest = Path(dest)
    url = repo or revision.repo
    if (dest / ".git").exists():
        head = _git(["rev-parse", "HEAD"], cwd=dest).stdout.strip()
        if head and (head == revision.ref or head.startswith(revision.ref)):
            return find_tree(revision, dest)
        raise UpstreamError(f"{dest}: already a git checkout (HEAD {head[:12] or 'none'}); remove it or pass --src")
    if dest.exists() and any(dest.iterdir()):
        raise UpstreamError(f"{dest}: exists and is not empty; remove it or choose another --src")
    created = not dest.exists()
    dest.mkdir(parents=True, exist_ok=True)
    steps = [
        ["init", "-q"],
        ["remote", "add", "origin", url],
        ["sparse-checkout", "set", "--no-cone", *(f"/{p}" for p in revision.take)],
        ["fetch", "-q", "--depth", "1", "origin", revision.ref],
        ["-c", "advice.detachedHead=false", "checkout", "-q", "FETCH_HEAD"],
    ]
    for step in steps:
        done = _git(step, cwd=dest)
        if done.returncode != 0:
            shutil.rmtree(dest / ".git", ignore_errors=True)  # ours, half made: the next --fetch starts clean
            if created:
                shutil.rmtree(dest, ignore_errors=True)
            raise UpstreamError(
                f"git {' '.join(step[:3])} failed for {url} at {revision.ref}: {done.stderr.strip()}\n"
                f"(no network here?) Get the tree another way and pass --src DIR: a checkout of {revision.repo} "
                f"at {revision.ref}, or just its {revision.test_root}/ folder."
            )
    return find_tree(revision, dest)
