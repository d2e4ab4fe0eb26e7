"""isa/footprint.py reads a footprint entry with its own reader into a DAG of shared subterms (the affinity pass's
texts repeat their terms many times over): the texts, the errors and the values must be those of the reading
through Python's parser (`_parse_entry`: ast.parse, `_check`, ast.unparse) and the evaluation of each tree node by
node (`tree_eval`, the reference kept here)."""

from __future__ import annotations

import ast

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ttir_fixtures import LOWERABLE, fixture_text

from triton_plate_backend.isa import footprint as F
from triton_plate_backend.passes.affinity import footprint_entries
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
    st.tuples(  # literal entries (read whole by one regex), and near misses
        st.sampled_from(["arg0", "arg12", "arg007", "any", "arg", "arg0 ", "ARG0"]),
        st.sampled_from(["0:0", "0:1024", "4096:8192", "00:4", "0:07", ":", " : ", "1:2:3", "1 : 2", "", "0:1_0"]),
        st.sampled_from(["4", "0", "00", "012", "(4)", "4 ", "-4", "4*2", "1e3"]),
    ).map(lambda t: f"{t[0]}[{t[1]}]*{t[2]}"),
    st.tuples(
        st.sampled_from(["arg0[a:]*4", "arg0[0:1]*4*2", "arg0[0:1]*4 + 1", "arg0[ : ]*4", "arg0[0:1]*(4"]),
    ),
).map(lambda t: t if isinstance(t, str) else t[0])


def through_python(entry: str):
    """(argument index, -1 for any; texts) or the FootprintError message, read by Python's parser."""
    try:
        dag = F._Dag()
        name, roots = F._parse_entry(entry.strip(), dag)  # _parse_footprints strips each entry
        return (-1 if name == "any" else int(name[3:])), [dag.text[r] for r in roots]
    except F.FootprintError as e:
        return str(e)


def through_reader(entry: str):
    """The same through `_parse_footprints` (the reader, Python's parser where it declines)."""
    try:
        (fp,) = F._parse_footprints.__wrapped__(entry)
    except F.FootprintError as e:
        return str(e)
    return fp.arg, ([fp.nbytes] if fp.lo is None else [fp.lo, fp.hi, fp.nbytes])


@settings(max_examples=400, deadline=None)
@given(ENTRIES)
def test_the_reader_reads_as_python_does_and_declines_the_rest(entry):
    want = through_python(entry)
    assert through_reader(entry) == want
    if not isinstance(want, str):
        assert want[1] == [ast.unparse(ast.parse(t, mode="eval")) for t in want[1]]


def affinity_texts():
    """The affinity pass's entries of every corpus kernel plate compiles as whole trees (the text before
    `share_footprints` binds their shared subterms: a text without definitions, which still reads)."""
    for name in LOWERABLE:
        entries = footprint_entries(run_passes(parse(fixture_text(name), f"{name}.ttir")).kernel())
        if not isinstance(entries, str):
            yield name, F.format_footprints(entries)


@pytest.mark.parametrize("name,text", list(affinity_texts()))
def test_the_affinity_pass_texts_read_and_evaluate_as_through_python(name, text):
    footprints = F._parse_footprints.__wrapped__(text)
    entries = [e.strip() for e in text.split(";")]
    assert len(footprints) == len(entries)
    names = F.program_names((5, 3, 2), {k: 7 * k + 3 for k in range(16)})
    memo = {}
    for fp, entry in zip(footprints, entries):
        assert F._Reader(entry, F._Dag()).entry() is not None  # the fast path, not Python's parser
        arg, texts = through_python(entry)
        assert fp.arg == arg
        assert ([fp.nbytes] if fp.lo is None else [fp.lo, fp.hi, fp.nbytes]) == texts
        for t in texts:
            want = np.asarray(tree_eval(ast.parse(t, mode="eval").body, names), dtype=np.int64)
            np.testing.assert_array_equal(F.evaluate(t, names, memo), want)
            np.testing.assert_array_equal(F.evaluate(t, names), want)


def test_an_expression_not_read_from_a_footprint_still_evaluates_and_checks():
    names = F.program_names((4, 1, 1), {0: 9})
    np.testing.assert_array_equal(F.evaluate("max(pid_x - 2, 0) // 0 + arg0 % 4", names), [1, 1, 1, 1 + 1])
    with pytest.raises(F.FootprintError, match="Pow is not allowed"):
        F.evaluate("pid_x ** 2", names)
    with pytest.raises(F.FootprintError, match="footprint names arg5"):
        F.evaluate("arg5 + 1", names)


@given(st.text(alphabet="()a", max_size=40), st.sampled_from([0, 10**9]))
def test_closing_parens_match_as_a_stack_does(text, few):
    """Both forms (a Python stack up to `few` "("s, numpy's sorted ")"s past it), asked as the reader asks: for
    a "(" with every ")" before it matched, and the "("s still open around it."""
    closings = F._Closings(text, few)
    want, opened = {}, []
    for i, c in enumerate(text):
        if c == "(":
            opened.append(i)
        elif c == ")" and opened:
            want[opened.pop()] = i
    opened = []
    for i, c in enumerate(text):
        if c == "(":
            assert closings.get(i, len(opened)) == want.get(i)
            opened.append(i)
        elif c == ")":
            if not opened:
                break  # a stray ")": the reader never reads past one
            opened.pop()


def tree_eval(node, names):
    """The reference: a footprint expression's tree evaluated node by node (the evaluation before the DAG)."""
    if isinstance(node, ast.Constant):
        return np.int64(node.value)
    if isinstance(node, ast.Name):
        if node.id not in names:
            raise F.FootprintError(f"footprint names {node.id}")
        return names[node.id]
    if isinstance(node, ast.UnaryOp):
        return np.negative(tree_eval(node.operand, names))
    if isinstance(node, ast.Call):
        return F._CALLS[node.func.id](*(tree_eval(a, names) for a in node.args))
    a, b = tree_eval(node.left, names), tree_eval(node.right, names)
    if isinstance(node.op, (ast.FloorDiv, ast.Mod)):
        b = np.where(b == 0, 1, b)
    return F._BINOPS[type(node.op)](a, b)


@st.composite
def footprint_expressions(draw, depth=4):
    """An expression of the footprint forms, its subexpressions drawn again and again (as the affinity
    pass writes a persistent loop's bounds)."""
    pool = ["pid_x", "pid_y", "nprog_x", "arg0", "arg1", "arg2", str(draw(st.integers(0, 9)))]
    for _ in range(draw(st.integers(2, 12))):
        a, b = draw(st.sampled_from(pool)), draw(st.sampled_from(pool))
        form = draw(
            st.sampled_from(
                [
                    "({} + {})",
                    "({} - {})",
                    "{} * {}",
                    "({}) // ({})",
                    "({}) % ({})",
                    "min({}, {})",
                    "max({}, {})",
                    "-({})",
                ]
            )
        )
        pool.append(form.format(a, b) if form.count("{}") == 2 else form.format(a))
    return pool[-1]


@given(footprint_expressions(), st.integers(0, 2**31))
@settings(max_examples=300, deadline=None)
def test_footprint_expressions_with_repeated_subterms_match_the_tree_walk(expr, seed):
    rng = np.random.default_rng(seed)
    p = int(rng.integers(1, 40))
    gx = int(rng.integers(1, 8))
    ids = np.arange(p, dtype=np.int64)
    names = {"pid_x": ids % gx, "pid_y": ids // gx, "nprog_x": np.int64(gx)}
    names.update({f"arg{k}": np.int64(rng.integers(-5, 300)) for k in range(3)})
    with np.errstate(all="ignore"):
        want = np.asarray(tree_eval(ast.parse(expr, mode="eval").body, names), dtype=np.int64)
        got = F.evaluate(expr, names)
    assert got.dtype == np.int64 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_a_repeated_footprint_subexpression_is_one_node_and_a_missing_name_still_fails():
    inner = "min(1, max(0, pid_x // arg3 - 1)) * (arg4 - arg5)"
    expr = " + ".join([f"({inner})"] * 50)
    dag, _ = F._expression(expr)
    assert len(dag.nodes) == 12 + 49  # 50 copies of one subtree (12 distinct nodes): once, and the 49 additions
    names = {"pid_x": np.arange(10, dtype=np.int64), "arg3": np.int64(2), "arg4": np.int64(7), "arg5": np.int64(3)}
    np.testing.assert_array_equal(
        F.evaluate(expr, names), 50 * np.minimum(1, np.maximum(0, np.arange(10) // 2 - 1)) * 4
    )
    with pytest.raises(F.FootprintError, match="arg5"):
        F.evaluate(expr, {k: v for k, v in names.items() if k != "arg5"})


def test_a_parsed_footprint_s_expressions_are_not_parsed_again(monkeypatch):
    lo = " + ".join(f"min(1, max(0, pid_x // arg1 - {k})) * arg2" for k in range(6))
    text = f"arg0[{lo}:({lo}) + 64]*(arg2 * 2 + 0); arg3[:]*16"
    fps = F.parse_footprints(text)
    parses = []
    real_parse = ast.parse
    monkeypatch.setattr(ast, "parse", lambda *a, **k: parses.append(a[0]) or real_parse(*a, **k))
    names = {"pid_x": np.arange(7, dtype=np.int64), "arg1": np.int64(2), "arg2": np.int64(5)}
    got = [F.evaluate(e, names) for fp in fps for e in (fp.lo, fp.hi, fp.nbytes) if e is not None]
    assert parses == []  # every text came with its steps
    want = [tree_eval(real_parse(e, mode="eval").body, names) for fp in fps for e in (fp.lo, fp.hi, fp.nbytes) if e]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_texts_read_into_the_shared_dag_in_any_order_or_after_a_reset_read_as_alone(monkeypatch):
    texts = [text for _, text in affinity_texts()]
    texts += [t.replace("arg0[", "arg1[", 1) for t in texts]  # variants that share the terms
    alone = []
    for t in texts:
        monkeypatch.setattr(F, "_SHARED", None)
        alone.append(F._parse_footprints.__wrapped__(t))
    for keep in (F._SHARED_KEEP, 8):  # 8: a fresh DAG nearly every text
        monkeypatch.setattr(F, "_SHARED_KEEP", keep)
        monkeypatch.setattr(F, "_SHARED", None)
        assert [F._parse_footprints.__wrapped__(t) for t in reversed(texts)] == alone[::-1]
    names = F.program_names((4, 2, 1), {k: 5 * k + 1 for k in range(16)})
    for fps in alone:
        memo = {}
        for e in (e for fp in fps for e in (fp.lo, fp.hi, fp.nbytes) if e is not None):
            want = np.asarray(tree_eval(ast.parse(e, mode="eval").body, names), dtype=np.int64)
            np.testing.assert_array_equal(F.evaluate(e, names, memo), want)
