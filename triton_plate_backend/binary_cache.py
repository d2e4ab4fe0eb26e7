"""Corrupt binaries in Triton's kernel cache: found, reported once, recompiled, rewritten.

Triton hands ``driver.PlateUtils.load_binary`` the bytes of the cached ``<kernel>.pbin`` and nothing
else. When they do not decode (a truncated or garbled file), the cache entry is the one directory of
Triton's cache that holds a ``<kernel>.pbin`` with exactly those bytes; beside it lie the TTIR the
binary was compiled from and the metadata with the compile options. ``recompile`` warns once, runs
the backend's stages after ``ttir`` again and writes the fresh binary in place, so this launch and
every later process load a good one. An entry that cannot be rebuilt is removed (the next run
compiles from the Python source), with an error that names the kernel and the file.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path

from triton import knobs as triton_knobs
from triton.backends.compiler import GPUTarget

from .compiler import PlateBackend
from .errors import BinaryFormatError, PlateError

BINARY_EXT = "pbin"
SOURCE_EXT = "ttir"  # the stage the rebuild starts from: the backend's input, before anything plate made
NAME_LIMIT = 150  # Triton truncates cache file names to this many characters (triton.compiler.compile)


class CorruptCacheWarning(UserWarning):
    """A cached kernel binary did not decode and was recompiled."""


class CorruptCacheError(PlateError):
    """A cached kernel binary did not decode and could not be rebuilt from its cache entry."""


def recompile(name: str, data: bytes, error: BinaryFormatError) -> bytes:
    """Fresh pbin bytes for kernel ``name``, whose cached binary ``data`` failed to decode with ``error``."""
    path = find_entry(name, data)
    if path is None:
        raise CorruptCacheError(
            f"kernel {name}: its binary is corrupt ({error}) and no entry of Triton's cache "
            f"({triton_knobs.cache.dir}) holds it, so there is nothing to recompile it from; compile the kernel "
            f"again (TRITON_ALWAYS_COMPILE=1)"
        ) from error
    warnings.warn(
        f"kernel {name}: the cached binary {path} is corrupt ({error}); recompiling it from the TTIR in the same "
        f"cache entry",
        CorruptCacheWarning,
        stacklevel=3,
    )
    try:
        fresh = rebuild(path)
    except Exception as e:  # anything: the entry is unusable either way
        shutil.rmtree(path.parent, ignore_errors=True)
        raise CorruptCacheError(
            f"kernel {name}: the cached binary {path} is corrupt ({error}) and recompiling its cache entry "
            f"failed ({type(e).__name__}: {e}); the entry is removed: the next run compiles from the source"
        ) from e
    _replace(path, fresh)
    return fresh


def find_entry(name: str, data: bytes) -> Path | None:
    """The cached ``<name>.pbin`` whose bytes are ``data``, or None."""
    root = triton_knobs.cache.dir
    if not root or not os.path.isdir(root):
        return None
    for path in Path(root).glob(f"*/{name[:NAME_LIMIT]}.{BINARY_EXT}"):
        try:
            if path.read_bytes() == data:
                return path
        except OSError:
            continue
    return None


def rebuild(path: Path) -> bytes:
    """Run the backend's stages after ttir on the entry's cached TTIR, with its cached options."""
    stem = path.name[: -len(BINARY_EXT) - 1]
    metadata = json.loads((path.parent / f"{stem}.json").read_text())
    module = (path.parent / f"{stem}.{SOURCE_EXT}").read_text()
    target = GPUTarget(**metadata["target"])
    backend = PlateBackend(target)
    options = backend.parse_options(metadata)
    stages: dict = {}
    backend.add_stages(stages, options)
    order = list(stages)
    metadata = dict(metadata)
    for ext in order[order.index(SOURCE_EXT) + 1 :]:
        module = stages[ext](module, metadata)  # as triton.compile calls them: options are bound
    if not isinstance(module, bytes):
        raise PlateError(f"the last stage, {order[-1]}, returned {type(module).__name__}, not bytes")
    return module


def _replace(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: a reader sees the old file or the new one, never a part."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        os.unlink(tmp)
        raise
