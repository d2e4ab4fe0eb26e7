"""Triton's file cache, writing each file without a temporary directory.

Triton's ``FileCacheManager.put`` writes every file of a compile (the stages' texts, the binary, the
metadata, the group index: seven per kernel) into a fresh temporary directory, renames it into place
and removes the directory. Removing a directory costs milliseconds on some filesystems (ext4 mounted
with ``discard`` frees and trims its block synchronously: ~4 ms against ~0.2 ms for the write), so
on such a disk the cache writes outweigh plate's whole compile. ``PlateFileCacheManager.put`` writes
a uniquely named temporary file beside the target and renames it over the target: the same atomic
replacement (a reader sees the old file or the new one, never a part), the same files, paths and
permissions, no directory to remove.

The plate driver installs it as Triton's ``knobs.cache.manager_class`` when it becomes the active
driver and no cache manager is configured (``TRITON_CACHE_MANAGER`` or the knob): a user's choice
always wins, and nothing changes for a process where plate is not the active driver.
"""

from __future__ import annotations

import os
import uuid

from triton import knobs as triton_knobs
from triton.runtime.cache import FileCacheManager


class PlateFileCacheManager(FileCacheManager):
    """FileCacheManager whose put renames a temporary file instead of a temporary directory's file."""

    def put(self, data, filename, binary=True) -> str:
        if not self.cache_dir:
            raise RuntimeError("Could not create or locate cache dir")
        binary = isinstance(data, bytes)
        if not binary:
            data = str(data)
        filepath = self._make_path(filename)
        # hidden, and named by pid and a random id as Triton names its temporary directories
        temp_path = os.path.join(self.cache_dir, f".tmp.pid_{os.getpid()}_{uuid.uuid4()}.{filename}")
        try:
            with open(temp_path, "xb" if binary else "x") as f:
                f.write(data)
            os.replace(temp_path, filepath)
        except BaseException:
            if os.path.exists(temp_path):
                os.unlink(temp_path)
            raise
        return filepath


def install() -> bool:
    """Make PlateFileCacheManager Triton's cache manager unless one is configured; True if installed."""
    if triton_knobs.cache.manager_class is not None:
        return False
    triton_knobs.cache.manager_class = PlateFileCacheManager
    return True
