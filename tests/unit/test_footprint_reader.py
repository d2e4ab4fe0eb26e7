"""isa/footprint.py reads a footprint entry with its own reader into a DAG of shared subterms (the affinity pass's
texts repeat their terms many times over): the texts, the errors and the values must be those of the reading
through Python's parser (`_parse_entry`: ast.parse, `_check`, ast.unparse) and the evaluation of each tree node by
node (`_eval`)."""

from __future__ import annotations

import ast

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ttir_fixtures import fixture_text

from triton_plate_backend.isa import footprint as F
from triton_plate_backend.passes.affinity import func_affinity
from triton_plate_backend.passes.pipeline import run_passes
from triton_plate_backend.ttir.parser import parse

NAMES = ["pid_x", "pid_y", "nprog_x", "arg3", "arg4", "min", "max", "foo", "if", "x1"]
ATOMS = st.one_of(
    st.sampled_from(NAMES), st.integers(0, 300).map(str), st.sampled_from(["007", "00", "1_0", "0x1f", "1.5", "2j"])
)


def _expr(children):
    two = st.tuples(children, children)
    return st.one_of(
        two.map(lambda t: f"{t[0]} + {t[1]}"),
        two.map(lambda t: f"{t[0]}-{t[1]}"),
        two.map(lambda t: f"{t[0]} * {t[1]}"),
        two.map(lambda t: f"{t[0]} // {t[1]}"),
        two.map(lambda t: f"{t[0]} % {t[1]}"),
        two.map(lambda t: f"{t[0]} ** {t[1]}"),
        two.map(lambda t: f"min({t[0]}, {t[1]})"),
        two.map(lambda t: f"max({t[0]},{t[1]})"),
        two.map(lambda t: f"pid_x({t[0]}, {t[1]})"),
        children.map(lambda a: f"-{a}"),
        children.map(lambda a: f"({a})"),
        children.map(lambda a: f"max({a})"),
        children.map(lambda a: f"+{a}"),
    )


EXPRS = st.recursive(ATOMS, _expr, max_leaves=12)
ENTRIES = st.one_of(
    st.tuples(st.sampled_from(["arg0", "arg12", "any", "argx", "pid_x"]), EXPRS, EXPRS, EXPRS).map(
        lambda t: f"{t[0]}[{t[1]}:{t[2]}]*{t[3]}"
    ),
    st.tuples(st.sampled_from(["arg0", "any", "arg1 "]), EXPRS).map(lambda t: f"{t[0]}[:]*{t[1]}"),
    st.tuples(
        st.sampled_from(["arg0[a:]*4", "arg0[0:1]*4*2", "arg0[0:1]*4 + 1", "arg0[ : ]*4", "arg0[0:1]*(4"]),
    ),
).map(lambda t: t if isinstance(t, str) else t[0])


def through_python(entry: str):
    """(argument, texts) or the FootprintError message, read by Python's parser."""
    try:
        dag = F._Dag()
        name, roots = F._parse_entry(entry, dag)
        return name, [dag.text[r] for r in roots]
    except F.FootprintError as e:
        return str(e)


def through_reader(entry: str):
    """The same through `_parse_footprints` (the reader, Python's parser where it declines)."""
    try:
        (fp,) = F._parse_footprints.__wrapped__(entry)
    except F.FootprintError as e:
        return str(e)
    return ("any" if fp.arg < 0 else f"arg{fp.arg}"), ([fp.nbytes] if fp.lo is None else [fp.lo, fp.hi, fp.nbytes])


@settings(max_examples=400, deadline=None)
@given(ENTRIES)
def test_the_reader_reads_as_python_does_and_declines_the_rest(entry):
    want = through_python(entry)
    assert through_reader(entry) == want
    if not isinstance(want, str):
        assert want[1] == [ast.unparse(ast.parse(t, mode="eval")) for t in want[1]]


def affinity_texts():
    for name in ["matmul", "vec_add", "softmax", "layernorm", "attn_fwd", "block_ptr", "load_store_flags"]:
        text = func_affinity(run_passes(parse(fixture_text(name), f"{name}.ttir")))
        if F.parse_footprints(text):
            yield name, text


@pytest.mark.parametrize("name,text", list(affinity_texts()))
def test_the_affinity_pass_texts_read_and_evaluate_as_through_python(name, text):
    footprints = F._parse_footprints.__wrapped__(text)
    entries = [e.strip() for e in text.split(";")]
    assert len(footprints) == len(entries)
    names = F.program_names((5, 3, 2), {k: 7 * k + 3 for k in range(16)})
    memo = {}
    for fp, entry in zip(footprints, entries):
        assert F._Reader(entry, F._Dag()).entry() is not None  # the fast path, not Python's parser
        _, texts = through_python(entry)
        assert ([fp.nbytes] if fp.lo is None else [fp.lo, fp.hi, fp.nbytes]) == texts
        for t in texts:
            want = np.asarray(F._eval(ast.parse(t, mode="eval").body, names), dtype=np.int64)
            np.testing.assert_array_equal(F.evaluate(t, names, memo), want)
            np.testing.assert_array_equal(F.evaluate(t, names), want)


def test_an_expression_not_read_from_a_footprint_still_evaluates_and_checks():
    names = F.program_names((4, 1, 1), {0: 9})
    np.testing.assert_array_equal(F.evaluate("max(pid_x - 2, 0) // 0 + arg0 % 4", names), [1, 1, 1, 1 + 1])
    with pytest.raises(F.FootprintError, match="Pow is not allowed"):
        F.evaluate("pid_x ** 2", names)
    with pytest.raises(F.FootprintError, match="footprint names arg5"):
        F.evaluate("arg5 + 1", names)


@given(st.text(alphabet="()a", max_size=40))
def test_closing_parens_match_as_a_stack_does(text):
    want, opened = {}, []
    for i, c in enumerate(text):
        if c == "(":
            opened.append(i)
        elif c == ")" and opened:
            want[opened.pop()] = i
    assert F._closing_parens(text) == want
