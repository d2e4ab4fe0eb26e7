"""The case loop of the library probe scripts (probe_flash_attn.py, probe_unsloth.py): each case a function that
returns its largest error against the reference; a verdict, the host ops it ran and its wall time per line."""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable

import torch


def run_cases(cases: dict[str, Callable[[], float]], k: str = "") -> int:
    """Run the cases whose name contains ``k``; 1 if any failed, else 0 (a failure is reported, the next case runs)."""
    failed = 0
    selected = [n for n in cases if k in n]
    for name in selected:
        torch.plate.reset_host_ops()
        t0 = time.perf_counter()
        try:
            verdict = f"pass (max error {cases[name]():.3g})"
        except Exception as e:
            failed += 1
            verdict = f"FAIL {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            traceback.print_exc(limit=-3)
        host = {k: v for k, v in torch.plate.host_ops().items() if v}
        print(f"{name}: {verdict}; host ops {host or 'none'}; {time.perf_counter() - t0:.1f} s", flush=True)
    print(f"{len(selected) - failed} passed, {failed} failed")
    return 1 if failed else 0
