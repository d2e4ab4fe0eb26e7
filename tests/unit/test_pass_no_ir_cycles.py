"""The persistent rewrite leaves none of the kernel's IR in a reference cycle: the ops it drops (program_id(x),
a flattened kernel's chunk loop, its yield and the ops that advanced its pointers) are cut from the IR they were
in. Before, a dropped op and its result were a cycle, and its parent link held the old entry block, and through
it every op of the kernel, after `release`: the cycle collector had to walk the whole kernel (60 / 271 IR objects
of vec_add / block_ptr), and a compile stage's end triggered that walk (vec_add: 0.5 collections a compile)."""

from __future__ import annotations

import gc

import pytest
from ttir_fixtures import fixture_text

from triton_plate_backend.ir.core import Block, Op, Region, Value, release
from triton_plate_backend.machine import get_machine
from triton_plate_backend.passes import persistent
from triton_plate_backend.passes.pipeline import run_passes
from triton_plate_backend.ttir.parser import parse

IR = (Op, Value, Block, Region)
MARKS = (persistent.PROGRAMS_ATTR, persistent.ROW_END_ATTR)


def _left_in_cycles(kernel: str) -> tuple[list, set]:
    """(the IR objects the cycle collector finds after the passes ran with the persistent rewrite and the module
    was released, the rewrite's marks on the kernel's ops)."""
    machine = get_machine("plate1")
    text = fixture_text(kernel)
    gc.collect()
    was_on = gc.isenabled()
    gc.disable()
    try:
        module = run_passes(parse(text, kernel), persistent_sram=machine.core.sram_bytes, persistent_groups=2)
        marks = {a for op in module.kernel().walk() for a in op.attrs if a in MARKS}
        release(module)
        del module
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        found = [type(o).__name__ for o in gc.garbage if type(o) in IR]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was_on:
            gc.enable()
    return found, marks


@pytest.mark.parametrize(
    "kernel, marks",
    [
        ("vec_add", {persistent.PROGRAMS_ATTR}),  # one loop over the programs
        ("block_ptr", {persistent.PROGRAMS_ATTR, persistent.ROW_END_ATTR}),  # a chunk loop flattened
    ],
)
def test_the_rewrite_leaves_no_ir_in_a_cycle(kernel, marks):
    found, seen = _left_in_cycles(kernel)
    assert seen == marks  # the rewrite ran (the check is not vacuous)
    assert found == []
