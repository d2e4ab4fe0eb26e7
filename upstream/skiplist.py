"""Skip lists: upstream tests plate does not pass, one entry each, with a category and a reason.

A skip list is a TOML file of `[[skip]]` tables, kept outside the upstream tree:

    [[skip]]
    test = "unit/language/test_core.py::test_no_rematerialization_op"   # a pytest node id, exact
    category = "by-design"
    reason = "reads asm['ttgir']: plate compiles TTIR to its own ISA, there is no TTGIR stage"

    [[skip]]
    glob = "unit/runtime/test_blaslt.py::*"     # `*` and `?` are the only wildcards ([ ] are literal)
    count = 3                                   # how many tests it must match at the pinned revision
    category = "by-design"
    reason = "cuBLASLt/hipBLASLt bindings: vendor libraries"

    [[skip]]
    test = "unit/language/test_matmul.py"       # a whole file: not collected at all
    category = "by-design"
    reason = "imports CUDA-only helpers at module level"

Node ids are relative to the suite's test root (`python/test` for Triton, `test` for PyTorch).
Optional keys: `patch` (the file under patches/ that fixes it), `issue` (a link).

Categories: `by-design` entries are skipped and counted apart (they leave the pass-rate
denominator); `not-yet` and `upstream-bug` entries run as expected failures, so one that passes is
reported as stale; an entry that matches no collected test is stale too. `not-in-pin` entries (a
newer copy of an upstream file stands in for the pinned one, and the test needs code the pinned
library lacks) are skipped and leave the denominator too, counted on their own.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from . import UpstreamError

CATEGORIES = {
    "by-design": "plate does not do this on purpose (PTX/inline asm, CUDA-only features, vendor libraries)",
    "not-yet": "plate should pass this and does not yet",
    "upstream-bug": "the test itself is wrong or non-portable; a patch or upstream fix is due",
    "not-in-pin": "not a test of the pinned revision: the run uses a newer copy of the file, and the test needs "
    "library code the pinned release does not have (it fails on every device)",
}
KNOWN_FAILURE_CATEGORIES = ("not-yet", "upstream-bug")
_KEYS = {"test", "glob", "count", "category", "reason", "patch", "issue"}


@dataclass(frozen=True)
class SkipEntry:
    key: str  # the node id, glob or file as written
    category: str
    reason: str
    is_glob: bool = False
    count: int | None = None
    patch: str | None = None
    issue: str | None = None
    _pattern: re.Pattern | None = field(default=None, compare=False, repr=False)

    @property
    def file(self) -> str:
        return self.key.split("::", 1)[0]

    @property
    def is_file(self) -> bool:
        return not self.is_glob and "::" not in self.key

    @property
    def is_known_failure(self) -> bool:
        return self.category in KNOWN_FAILURE_CATEGORIES

    def matches(self, nodeid: str) -> bool:
        if self.is_glob:
            return bool(self._pattern.fullmatch(nodeid))
        if self.is_file:
            return nodeid == self.key or nodeid.startswith(self.key + "::")
        return nodeid == self.key

    def file_matches(self, file: str) -> bool:
        if self.is_glob:
            return bool(_glob_regex(self.file).fullmatch(file))
        return self.file == file

    def marker_reason(self) -> str:
        return f"[{self.category}] {self.reason}"


def _glob_regex(glob: str) -> re.Pattern:
    return re.compile(re.escape(glob).replace(r"\*", ".*").replace(r"\?", "."))


def _parse_entry(index: int, table: dict) -> tuple[SkipEntry | None, list[str]]:
    where = f"entry {index + 1} ({table.get('test') or table.get('glob') or '?'})"
    problems = [f"{where}: unknown key {k!r} (known: {', '.join(sorted(_KEYS))})" for k in table if k not in _KEYS]
    if ("test" in table) == ("glob" in table):
        problems.append(f"{where}: give exactly one of `test` (a node id) or `glob` (a pattern)")
    if table.get("category") not in CATEGORIES:
        problems.append(f"{where}: category {table.get('category')!r} is not one of {', '.join(CATEGORIES)}")
    if not str(table.get("reason", "")).strip():
        problems.append(f"{where}: `reason` is missing or empty: say why plate does not pass it")
    is_glob = "glob" in table
    key = str(table.get("glob") if is_glob else table.get("test", ""))
    count = table.get("count")
    if is_glob:
        if not any(c in key for c in "*?"):
            problems.append(f"{where}: a glob without `*` or `?`; use `test` for one node id")
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            problems.append(f"{where}: a glob needs `count`, how many tests it matches at the pinned revision")
    elif count is not None:
        problems.append(f"{where}: `count` is only for globs")
    if not is_glob and "::" not in key and not key.endswith(".py"):
        problems.append(f"{where}: a whole-file entry must name a .py file; a test id has `::`")
    if problems:
        return None, problems
    entry = SkipEntry(
        key=key,
        category=table["category"],
        reason=table["reason"].strip(),
        is_glob=is_glob,
        count=count,
        patch=table.get("patch"),
        issue=table.get("issue"),
        _pattern=_glob_regex(key) if is_glob else None,
    )
    return entry, []


class SkipList:
    """The entries of one skip list, looked up by node id: exact ids first, then files, then globs."""

    def __init__(self, entries: list[SkipEntry], path: Path | None = None):
        self.entries = entries
        self.path = path
        self._exact = {e.key: e for e in entries if not e.is_glob and not e.is_file}
        self._files = {e.key: e for e in entries if e.is_file}
        self._globs = [e for e in entries if e.is_glob]

    def __len__(self) -> int:
        return len(self.entries)

    def lookup(self, nodeid: str) -> SkipEntry | None:
        entry = self._exact.get(nodeid) or self._files.get(nodeid.split("::", 1)[0])
        if entry:
            return entry
        return next((g for g in self._globs if g.matches(nodeid)), None)

    def file_entries(self) -> list[SkipEntry]:
        return list(self._files.values())

    def by_key(self, key: str) -> SkipEntry:
        return next(e for e in self.entries if e.key == key)


def load_skiplist(path: Path | None) -> SkipList:
    """Read and validate a skip list; every problem is reported at once. A missing path is an empty list."""
    if path is None:
        return SkipList([], None)
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except OSError as e:
        raise UpstreamError(f"skip list {path}: cannot read it: {e}") from e
    except tomllib.TOMLDecodeError as e:
        raise UpstreamError(f"skip list {path}: not valid TOML: {e}") from e
    extra = sorted(set(data) - {"skip"})
    problems = [f"top-level key(s) {extra}: only [[skip]] tables are allowed"] if extra else []
    entries, seen = [], {}
    for i, table in enumerate(data.get("skip", [])):
        entry, found = _parse_entry(i, table)
        problems += found
        if entry is None:
            continue
        if entry.key in seen:
            problems.append(f"entry {i + 1} ({entry.key}): duplicate of entry {seen[entry.key] + 1}")
        seen[entry.key] = i
        entries.append(entry)
    if problems:
        raise UpstreamError(f"skip list {path}:\n  " + "\n  ".join(problems))
    return SkipList(entries, path)


@dataclass
class Staleness:
    """Entries that no longer describe the tree: they pass, or match nothing, or match a different count."""

    passing: dict[str, list[str]] = field(default_factory=dict)  # entry key -> node ids that passed
    missing: dict[str, str] = field(default_factory=dict)  # entry key -> why
    not_checked: list[str] = field(default_factory=list)  # entries whose file was not part of this run

    @property
    def stale(self) -> bool:
        return bool(self.passing or self.missing)

    def lines(self) -> list[str]:
        out = [
            f"{key}: listed as failing but passes ({len(ids)}: {', '.join(ids[:3])})"
            for key, ids in self.passing.items()
        ]
        return out + [f"{key}: {why}" for key, why in self.missing.items()]

    def to_dict(self) -> dict:
        return {"passing": self.passing, "missing": self.missing, "not_checked": self.not_checked}


def find_stale(
    skiplist: SkipList,
    collected: list[str],
    collected_files: set[str],
    outcomes: dict[str, str],
    rootdir: Path,
    errored_files: frozenset[str] = frozenset(),
) -> Staleness:
    """Compare the entries with what was collected (before -k/-m deselection) and how listed tests ended.

    `collected_files` are the files collection reached; entries of files it did not reach, or that failed
    to import (`errored_files`), are only checked for their file still existing under `rootdir`.
    An id matched by an exact entry does not count towards a glob's `count`.
    """
    result = Staleness()
    matched: dict[str, int] = {e.key: 0 for e in skiplist.entries}
    for nodeid in collected:
        entry = skiplist.lookup(nodeid)
        if entry is None:
            continue
        matched[entry.key] += 1
        if entry.is_known_failure and outcomes.get(nodeid) == "xpassed":
            result.passing.setdefault(entry.key, []).append(nodeid)
    checkable = collected_files - set(errored_files)
    for entry in skiplist.entries:
        wild_file = entry.is_glob and any(c in entry.file for c in "*?")
        if not wild_file and not (rootdir / entry.file).is_file():
            result.missing[entry.key] = (
                "file no longer exists" if entry.is_file else f"file {entry.file} no longer exists"
            )
        elif entry.is_file:
            continue
        elif not any(entry.file_matches(f) for f in checkable):
            result.not_checked.append(entry.key)
        elif matched[entry.key] == 0:
            result.missing[entry.key] = "matches no collected test (renamed or removed upstream?)"
        elif entry.is_glob and matched[entry.key] != entry.count:
            result.missing[entry.key] = f"glob matches {matched[entry.key]} tests, the entry says count = {entry.count}"
    return result
