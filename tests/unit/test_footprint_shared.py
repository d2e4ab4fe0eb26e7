"""The footprint text with shared subterms (isa/footprint.py: ``$K = EXPR`` definitions before the entries),
which the affinity pass writes (`share_footprints`): every lowerable corpus kernel, with and without the
persistent rewrite, evaluates to the same values over several grids and argument values as the entries'
whole trees (`format_footprints` of `footprint_entries`: the text the pass wrote before, read by the tree
reader that tests/unit/test_footprint_reader.py checks against Python's parser), and the grammar's errors."""

from __future__ import annotations

import re

import numpy as np
import pytest
from ttir_fixtures import LOWERABLE, fixture_text

from triton_plate_backend.isa import footprint as F
from triton_plate_backend.machine import get_machine
from triton_plate_backend.passes import affinity
from triton_plate_backend.passes.affinity import footprint_entries, footprint_text
from triton_plate_backend.passes.pipeline import run_passes
from triton_plate_backend.sim.footprints import LaunchFootprints

GRIDS = [(1, 1, 1), (7, 1, 1), (13, 4, 2), (300, 1, 1)]
ARG_VALUES = [
    lambda k: 7 * k + 3,
    lambda k: 1 << (k % 11 + 4),
    lambda k: (k * 37) % 5,  # zeros among them: a grid axis or size of 0 divides by nothing
]


def _compiled(name: str, persistent: bool):
    from triton_plate_backend.ttir.parser import parse

    machine = get_machine("plate1")
    sram = machine.core.sram_bytes if persistent else None
    module = run_passes(parse(fixture_text(name), f"{name}.ttir"), None, sram, machine.total_domains)
    return module.kernel()


def _values(fps, names) -> list:
    memo: dict = {}
    out = []
    for fp in fps:
        for e in (fp.lo, fp.hi, fp.nbytes):
            if e is not None:
                out.append(np.broadcast_to(F.evaluate(e, names, memo, fp.defs), (len(names["pid_x"]),)).copy())
    return out


CASES = [
    pytest.param(name, persistent, id=f"{name}-{persistent}") for name in LOWERABLE for persistent in (False, True)
]


def _entries_and_text(name: str, persistent: bool):
    """The kernel's entries and the text the pass writes for them now: share_footprints runs in this test (its
    memos of texts are bounded: a worker's earlier compiles may have pushed a text out since collection)."""
    func = _compiled(name, persistent)
    affinity._SHARED_TEXTS.clear()
    return footprint_entries(func), footprint_text(func)


@pytest.mark.parametrize("name,persistent", CASES)
def test_the_shared_text_evaluates_as_the_whole_trees(name, persistent):
    entries, text = _entries_and_text(name, persistent)
    if isinstance(entries, str):  # none (why): nothing to share
        assert text == entries and F.parse_footprints(text) is None
        return
    tree = F.format_footprints(entries)  # the text as the pass wrote it before
    assert "$" not in tree and len(text) <= len(tree)
    assert (text == tree) == (len(tree) <= F.SHARE_ABOVE or "$" not in text)
    F._parse_footprints.cache_clear()
    want = F.parse_footprints(tree)
    # the text read (not what share_footprints kept of it for this process: it is compared with the reading)
    got = list(F._read_shared(text)) if "$" in text else F.parse_footprints(text)
    assert [(f.arg, f.lo is None) for f in got] == [(f.arg, f.lo is None) for f in want]
    written = F._WRITTEN.get(text)
    assert (written is not None) == ("$" in text)
    if written is not None:  # share_footprints' own entries: what the reader gives, on the writer's DAG
        assert list(written) == got and F.parse_footprints(text) == list(written)
    ints_of = sorted({int(k) for k in re.findall(r"\barg([0-9]+)\b", tree)})
    for grid in GRIDS:
        for value in ARG_VALUES:
            names = F.program_names(grid, {k: value(k) for k in ints_of})
            for g, w in zip(_values(got, names), _values(want, names), strict=True):
                np.testing.assert_array_equal(g, w)
            if written is not None:  # the writer's DAG: written again, its nodes where the reader's were
                F._PARSED.clear()
                assert F.share_footprints(entries, affinity._parse) == text
                dag = F._PARSED[(written[0].defs, written[0].nbytes)][0]
                assert all(F._PARSED[(fp.defs, fp.nbytes)][0] is dag for fp in written)
                for g, w in zip(_values(written, names), _values(want, names), strict=True):
                    np.testing.assert_array_equal(g, w)
                F._PARSED.clear()
                F._read_shared(text)  # the reader's nodes again, for the next grid
            launch = LaunchFootprints(tuple(got), tuple(grid), {k: value(k) for k in ints_of})  # as a launch reads them
            for fp, w in zip(got, F.parse_footprints(tree)):
                np.testing.assert_array_equal(launch.value(fp.nbytes), _values([w], names)[-1])
                if launch.programs == 1:  # a one-program launch's Python integers: the same values
                    assert launch.one(fp.nbytes) == int(launch.value(fp.nbytes)[0])


def test_the_long_texts_are_a_tenth_or_less():
    """The persistent rewrite's program-range mapping, substituted into every term, is bound once: every
    text of over 16 KB as whole trees (vec_add's and softmax's persistent ones among them) shrinks tenfold."""
    sizes = {}
    for name, persistent in (c.values for c in CASES):
        entries, text = _entries_and_text(name, persistent)
        if not isinstance(entries, str) and len(F.format_footprints(entries)) > 16384:
            sizes[name, persistent] = (len(F.format_footprints(entries)), len(text))
    assert {("vec_add", True), ("softmax", True)} <= set(sizes)
    for key, (tree, shared) in sizes.items():
        assert shared * 10 <= tree, (key, tree, shared)


def test_definitions_and_references_read_in_order():
    text = "$0 = pid_x // arg3; $1 = min($0, 4) * 16; arg0[$1:$1 + 16]*($1 + 1); arg1[:]*$1; arg2[0:4]*4"
    fps = F.parse_footprints(text)
    defs = "$0 = pid_x // arg3; $1 = min($0, 4) * 16"
    assert fps == [
        F.Footprint(0, "$1", "$1 + 16", "$1 + 1", defs),
        F.Footprint(1, None, None, "$1", defs),
        F.Footprint(2, "0", "4", "4", defs),
    ]
    assert F.format_footprints(fps) == text
    names = F.program_names((10, 1, 1), {3: 3})
    want = np.minimum(np.arange(10) // 3, 4) * 16
    np.testing.assert_array_equal(F.evaluate("$1", names, None, defs), want)
    np.testing.assert_array_equal(F.evaluate("$1 * 2 - $0", names, None, defs), want * 2 - np.arange(10) // 3)
    # an entry the reader leaves to Python's parser (0x10): its $K are read there too
    (fp,) = F.parse_footprints("$0 = pid_x * 3; arg0[$0:0x10 + $0]*4")
    assert (fp.lo, fp.hi, fp.nbytes) == ("$0", "16 + $0", "4")
    np.testing.assert_array_equal(F.evaluate(fp.hi, names, None, fp.defs), 16 + 3 * np.arange(10))


@pytest.mark.parametrize(
    "text,message",
    [
        ("$1 = pid_x; arg0[$1:$1]*4", r"expected \$0 = EXPR"),
        ("$0 = pid_x; $0 = 2; arg0[$0:$0]*4", r"expected \$1 = EXPR"),
        ("$0 = $0 + 1; arg0[$0:$0]*4", r"\$0 is not defined before it"),
        ("$0 = pid_x; arg0[$0:$1]*4", r"\$1 is not defined before it"),
        ("$0 = pid_x; arg0[$00:$0]*4", r"\$00 is not defined before it"),
        ("arg0[$0:4]*4", r"\$0 is not defined before it"),
        ("$0 = pid_x", "definitions and no entry"),
        ("$0 = pid_x ** 2; arg0[$0:$0]*4", "Pow is not allowed"),
        ("$0 = foo; arg0[$0:$0]*4", "Name is not allowed"),
        ("$0 = pid_x; arg0[$0:]*4", "expected argK"),
    ],
)
def test_a_malformed_shared_text_is_refused(text, message):
    with pytest.raises(F.FootprintError, match=message):
        F.parse_footprints(text)


def test_share_footprints_binds_only_what_pays():
    short = [F.Footprint(0, "pid_x*4", "pid_x*4 + 4", "4"), F.Footprint(1, "pid_x*4", "pid_x*4 + 4", "4")]
    assert F.share_footprints(short) == F.format_footprints(short)  # under SHARE_ABOVE: written as it is
    # operands of equal precedence on the right (a - (b - c), a // (b*c)) and a negated sum keep their parentheses
    term = " + ".join(
        f"min(1, max(0, pid_x // arg7 - {k}))*arg{k + 1} - (pid_x - arg{k}) + pid_x // (arg2*arg3) % (arg4 % 5)"
        f" - 2*-(pid_x + {k})"
        for k in range(12)
    )
    long = [F.Footprint(k, f"({term})*{k + 1}", f"({term} + 1)*{k + 1}", "64") for k in range(3)]
    text = F.share_footprints(long)
    assert len(text) * 4 < len(F.format_footprints(long)) and text.count("$0 = pid_x // arg7") == 1
    names = F.program_names((40, 1, 1), {k: k + 2 for k in range(14)})
    got, want = F.parse_footprints(text), F.parse_footprints(F.format_footprints(long))
    for g, w in zip(_values(got, names), _values(want, names), strict=True):
        np.testing.assert_array_equal(g, w)
    with pytest.raises(F.FootprintError, match="self-contained"):
        F.share_footprints(got)
