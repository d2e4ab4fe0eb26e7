"""`Op.walk` in C (ir/csrc/irwalk.cpp) against the Python generator it replaces (`core.walk_py`): the same ops in the
same order on the TTIR fixtures (as parsed, and after the IR passes), and the same ops when the consumer changes
the IR between steps (what each reads when: an op's regions when the walk goes on after it, a block's ops copied
when the walk reaches it, the regions and blocks lists live); an error ends both walks; a walk asked for its next
op from inside its own step raises as a running generator does; a walk dropped half way or caught in a cycle is
freed."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest

from triton_plate_backend.ir import core
from triton_plate_backend.ir.core import Block, Region, new_op
from triton_plate_backend.passes.pipeline import run_passes
from triton_plate_backend.ttir.parser import parse

pytestmark = pytest.mark.skipif(core._irwalk is None, reason="ir._irwalk is not built")

FIXTURES = sorted((Path(__file__).parent / "fixtures" / "ttir").glob("*.mlir"))


def both(op):
    c, py = list(op.walk()), list(core.walk_py(op))
    assert [id(o) for o in c] == [id(o) for o in py]
    return c


def test_the_c_walk_is_op_walk():
    assert type(core.Op.__dict__["walk"]).__name__ == "method_descriptor"


def test_the_fixtures_as_parsed_and_after_the_passes():
    walked = 0
    for path in FIXTURES[:12]:
        module = parse(path.read_text(), path.name)
        for top in module.ops:
            walked += len(both(top))
        try:
            module = run_passes(module)
        except Exception:  # a fixture the passes refuse: its parse was walked
            continue
        for top in module.ops:
            for op in both(top):
                both(op)
    assert walked > 100


def tree(tag: str):
    """func { a; loop { b; inner { c } ; d } ; e } with two blocks in the loop's region."""

    def op(name, regions=()):
        o = new_op(name, regions=list(regions))
        o.attrs["tag"] = tag
        return o

    def region(*blocks):
        r = Region([Block(ops=list(ops)) for ops in blocks])
        for b in r.blocks:
            b.parent = r
        return r

    inner = op("inner", [region([op("c")])])
    loop = op("loop", [region([op("b"), inner, op("d")], [op("b2")])])
    return op("func", [region([op("a"), loop, op("e")])])


def find(root, name):
    return next(o for o in core.walk_py(root) if o.name == name)


CHANGES = {
    # the consumer's change when the walk has just yielded the op of this name
    "a": lambda root: find(root, "func").regions[0].blocks[0].ops.append(new_op("late")),  # copied: not seen
    "loop": lambda root: find(root, "loop").regions[0].blocks[0].ops.append(new_op("added")),  # not copied yet: seen
    "b": lambda root: find(root, "b").regions.append(Region([Block(ops=[new_op("under_b")])])),  # a leaf: not walked
    "inner": lambda root: find(root, "inner").regions.append(Region([Block(ops=[new_op("x")])])),  # read after: seen
    "c": lambda root: find(root, "loop").regions[0].blocks.append(Block(ops=[new_op("new_block")])),  # live: seen
    "d": lambda root: find(root, "func").regions.append(Region([Block(ops=[new_op("new_region")])])),  # live: seen
}


def changed_walk(walk, tag):
    root = tree(tag)
    seen = []
    for op in walk(root):
        seen.append(op.name)
        change = CHANGES.get(op.name)
        if change is not None:
            change(root)
    return seen


def test_the_ir_changed_between_steps():
    c = changed_walk(core.Op.walk, "c")
    py = changed_walk(core.walk_py, "py")
    assert c == py
    assert "added" in c and "x" in c and "new_block" in c and "new_region" in c
    assert "late" not in c and "under_b" not in c


def test_an_error_ends_both_walks():
    for walk in (core.Op.walk, core.walk_py):
        root = tree("e")
        del find(root, "c").__dict__["regions"]  # reading it raises AttributeError
        it = walk(root)
        got = []
        with pytest.raises(AttributeError):
            for op in it:
                got.append(op.name)
        assert got == ["func", "a", "loop", "b", "inner"]
        assert list(it) == []


def test_a_walk_dropped_half_way_or_in_a_cycle_is_freed():
    root = tree("gc")
    ref = weakref.ref(root)
    it = root.walk()
    next(it), next(it)
    root.attrs["walk"] = it  # the walk holds the op that holds the walk
    del it, root
    gc.collect()
    assert ref() is None


def reentered(walk) -> str:
    """The error of a walk asked for its next op while it reads a region's blocks; the walk is over after it."""
    walks = []

    class Sneaky(Region):  # reading its blocks asks the walk reading them for its next op
        @property
        def blocks(self):
            return [next(walks[0])]

        @blocks.setter
        def blocks(self, value):
            pass

    root = new_op("func", regions=[Sneaky()])
    walks.append(walk(root))
    assert next(walks[0]) is root
    with pytest.raises(ValueError) as e:
        next(walks[0])
    assert list(walks[0]) == []
    return str(e.value)


def test_a_walk_asked_again_from_inside_raises_as_a_generator_does():
    assert reentered(core.Op.walk) == reentered(core.walk_py) == "generator already executing"
