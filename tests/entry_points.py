"""A fake installed distribution that declares an entry point, for tests of discovery in fresh processes.

The editable install's metadata may not be on the path a test's subprocess sees (or may declare what the
test wants to leave out); a dist-info folder on PYTHONPATH stands for the installed package's metadata.
"""

from __future__ import annotations

from pathlib import Path


def declare_entry_point(folder: Path, group: str, target: str, name: str = "plate") -> str:
    """Write `<folder>/<dist>.dist-info` declaring `[group] name = target`; return `folder` for PYTHONPATH."""
    dist = f"fake_{group.replace('.', '_').replace('-', '_')}_{name}"
    info = Path(folder) / f"{dist}-0.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist.replace('_', '-')}\nVersion: 0.0\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{name} = {target}\n")
    return str(folder)
