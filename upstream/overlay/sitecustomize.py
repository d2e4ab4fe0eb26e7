"""Imported at interpreter start when this folder is on PYTHONPATH (`upstream.patches` puts it there).

PLATE_UPSTREAM_OVERLAY holds JSON {module name: file}: those modules load from the given files (a
patched copy of an upstream library file) instead of the installed package, so a patch to, say,
triton/_internal_testing.py is tested against the installed triton without reinstalling it.
"""

import importlib.abc
import importlib.util
import json
import os
import sys

_OVERLAY = json.loads(os.environ.get("PLATE_UPSTREAM_OVERLAY") or "{}")


class _OverlayFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        file = _OVERLAY.get(fullname)
        if file is None:
            return None
        return importlib.util.spec_from_file_location(fullname, file)


if _OVERLAY:
    sys.meta_path.insert(0, _OverlayFinder())
