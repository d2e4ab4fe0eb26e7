"""shims._disable_dynamo_without_dynamo: a plate eager op's meta run (a torch._refs function behind torch's
_disable_dynamo) imports no Dynamo in a process that never compiles; once Dynamo is imported, the refs' wrappers
disable Dynamo as torch's do (patches/pytorch/disable-dynamo-without-dynamo.patch)."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys, torch
from triton_plate_backend import shims
x = torch.arange(4.0, device="plate")
print((x == 2).cpu().tolist(), (x + x).cpu().tolist(), "torch._dynamo" in sys.modules, len(shims._undisabled) > 0)
import torch._dynamo
ref = torch._refs.eq.__wrapped__  # _disable_dynamo's wrapper: its closure's fn is the function it disables
fn = ref.__closure__[ref.__code__.co_freevars.index("fn")].cell_contents
print(len(shims._undisabled), "__dynamo_disable" in fn.__dict__)
assert (x == 3).cpu().tolist() == [False, False, False, True]  # a new signature: the meta kernel runs
print(fn.__dict__["__dynamo_disable"] is not fn)
"""


def test_meta_runs_import_no_dynamo_until_dynamo_is_imported():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out == [
        "[False, False, True, False] [0.0, 2.0, 4.0, 6.0] False True",
        "0 False",  # Dynamo imported: the seeded attributes are gone
        "True",  # the next call built torch._dynamo.disable(fn), as torch does
    ]
