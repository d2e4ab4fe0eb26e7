"""The TTIR parser's op loop compiled in ttir/_ttirparse (ttir/csrc/ttirparse.cpp, built by setup.py) against its
reference, the Python loops `Parser._ops_into` / `Parser._module_items`: the same IR (ops, operands, results and
their names, types, attributes in their order, locations, regions, blocks, successors, and the order Values were
made in) on every TTIR fixture, on hand-written forms the fixtures lack, and on fuzzed text; the same error (its
message, line and column) wherever the text is wrong."""

from __future__ import annotations

import random

import pytest
from test_ttir_parser import BAD, FORMS, ORACLE_SNIPPETS, _wrap
from ttir_fixtures import FILES, fixture_text

from triton_plate_backend.ttir import locs as L
from triton_plate_backend.ttir import parser as P
from triton_plate_backend.ttir.errors import TtirParseError

pytestmark = pytest.mark.skipif(P._ttirparse is None, reason="ttir._ttirparse is not built (setup.py build_ext)")


def describe(module) -> list:
    """Everything a parse decides, with each Value named by where it is defined."""
    labels: dict[int, str] = {}
    made: list = []

    def label(v) -> str:
        return labels.get(id(v), f"?{v.name}")

    def define(v, where: str) -> tuple:
        labels[id(v)] = where
        made.append(v)
        return (where, v.name, str(v.type), v.index, v.owner is not None)

    def block(b, where: str) -> list:
        args = [define(v, f"{where}.arg{k}") for k, v in enumerate(b.args)]
        return [args, [op_(o, f"{where}.{k}") for k, o in enumerate(b.ops)]]

    blocks: dict[int, str] = {}

    def op_(o, where: str) -> list:
        results = [define(v, f"{where}.r{k}") for k, v in enumerate(o.results)]
        for v in o.results:
            assert v.owner is o
        regions = []
        for r, region in enumerate(o.regions):
            assert region.parent is o
            for b, blk in enumerate(region.blocks):
                assert blk.parent is region
                blocks[id(blk)] = f"{where}/{r}/{b}"
                for inner in blk.ops:
                    assert inner.parent is blk
            regions.append([block(blk, f"{where}/{r}/{b}") for b, blk in enumerate(region.blocks)])
        return [
            o.name,
            results,
            [label(v) for v in o.operands],
            [(k, repr(v)) for k, v in o.attrs.items()],
            repr(o.loc),
            regions,
            [blocks.get(id(s), "?") for s in o.successors],
            o.parent is None,
        ]

    ops = [op_(o, str(k)) for k, o in enumerate(module.ops)]
    order = [labels[id(v)] for v in sorted(made, key=lambda v: v.id)]
    return [ops, [(k, repr(v)) for k, v in module.attrs.items()], order]


def outcome(text: str, compiled: bool, monkeypatch) -> tuple:
    with monkeypatch.context() as m:
        if not compiled:
            m.setattr(P.Parser, "_ops_into", P.ops_into_py)
            m.setattr(P.Parser, "_module_items", P.module_items_py)
            m.setattr(P.Parser, "_resolve_locs", P.resolve_locs_py)
            m.setattr(P.Parser, "opt_loc", P.opt_loc_py)
        try:
            return ("ok", describe(P.parse(text, "t.ttir")))
        except TtirParseError as e:
            return ("error", str(e), e.line, e.col)


def same(text: str, monkeypatch) -> tuple:
    got = outcome(text, True, monkeypatch)
    assert got == outcome(text, False, monkeypatch)
    return got


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_fixture(path, monkeypatch):
    assert same(path.read_text(), monkeypatch)[0] == "ok"


def test_forms_the_fixtures_lack(monkeypatch):
    helper = "  tt.func private @helper(%v: i32) -> i32 {\n    tt.return %v : i32\n  }\n"
    assert same(_wrap(FORMS, more=helper), monkeypatch)[0] == "ok"
    args = "%v: tensor<8xi32>, %m: tensor<8xi1>, %x: tensor<8xf32>, %i: i32"
    for body in ORACLE_SNIPPETS.values():
        assert same(_wrap(body, args=args), monkeypatch)[0] == "ok"


@pytest.mark.parametrize("body", [b[0] for b in BAD], ids=[b[1] for b in BAD])
def test_errors(body, monkeypatch):
    assert same(_wrap(body), monkeypatch)[0] == "error"


MORE = [
    "    %x = arith.addi %a, %a : i32 loc(#l)\n",  # an alias defined after its use, and the forms of loc(...)
    '    %x = arith.addi %a, %a : i32 loc("k.py":3:4)\n    %y = arith.addi %x, %x : i32 loc(callsite(#l at #m))',
    "    %x = arith.addi %a, %a : i32 loc(#nowhere)",
    "    %x = arith.addi %y, %a : i32\n    %y = arith.addi %a, %a : i32",  # a use before the definition
    "    %x = arith.addi %a, %a : f32",  # the text's type is not the operand's
    "    %x = arith.addi %a, %a {flag} : i32\n    %y = arith.cmpi slt, %x, %a {k = 1 : i32} : i32",
    "    %x, %y = arith.addi %a, %a : i32",  # two names, one result
    "    tt.return %a : i32\n    %x = arith.addi %a, %a : i32",
    "    %x = tt.get_program_id y {a = 2 : i64} : i32\n    %c = arith.constant {k} 7 : i64",
    "    %c = arith.constant true\n    %d = arith.constant 1.5 : f32\n    %e = arith.constant 0xFF800000 : f32",
    "    %c = arith.constant 7\n",  # an untyped constant: an error
    "    %c = arith.constant -7 : i64\n    %d = arith.constant +012 : index\n    %e = arith.constant 1 : i1\n"
    "    %f = arith.constant 3 : f32\n    %g = arith.constant 3 : bf16\n"
    "    %h = arith.constant 99999999999999999999 : i64\n    %i = arith.constant 0x10 : i32\n"
    "    %k = arith.constant 5 : i7\n    %j = arith.constant 1e3 : i32\n",  # the last one: an error
    "    %c = arith.constant 5 : tensor<4xi32>\n    %x = tt.expand_dims %a {axis = 0 : i32} {b} : i32 -> tensor<1xi32>",
    "    %r = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32>\n"
    "    %s = tt.splat %p : !tt.ptr<f32> -> tensor<8x!tt.ptr<f32>>\n"
    "    %q = tt.addptr %s, %r : tensor<8x!tt.ptr<f32>>, tensor<8xi32>\n"
    "    %l = tt.load %q {k = 1 : i32} : tensor<8x!tt.ptr<f32>>\n"
    "    %l2 = tt.load %q cacheModifier = ca : tensor<8x!tt.ptr<f32>>\n"
    "    tt.store %q, %l : tensor<8x!tt.ptr<f32>>\n    %f = arith.sitofp %a : i32 to f32",
    "    %q = tt.addptr %p, %a : !tt.ptr<f32>\n",  # one type for two operands
    "    %x = arith.addi %a, %a : i32 loc(#l2)\n    %x2 = arith.addi %x, %x : i32 loc(fused[#l, #l2])",
    "    %x = arith.addi %a, %a : (i32)",
    "    %x = tt.bogus.op %a : i32",
    '    %x = "arith.addi"(%a, %a) : (i32, i32) -> i32\n    %y = arith.addi %x, %x : i32',
    "    %x = arith.addi %a, %a : i32 %y = arith.addi %x, %x : i32",
    "    %x = arith.addi %a, %a : i32 loc(#l) loc(#l)",
]
ALIASES = [
    "",
    '#l = loc("k.py":3:4)\n#m = loc("n"(#l))\n#l2 = loc(unknown)\n',
    '#l = loc("k.py":3:4 to 5:6)\n#m = loc(#l)\n#l2 = loc(callsite("f"("a.py":1:2) at #l))\n',
    '#l = loc("k.py":03:4)\n#m = loc("e\\22sc":1:1)\n#l2 = loc(fused<"x">[#l])\n#l = loc(unknown)\n',
    "#l = 5 : i32\n#m = loc(\n",
    '#l = loc(#m)\n#m = loc("n"(#l))\n#l2 = loc(unknown)\n',  # an alias that refers to itself
    '#l = loc("only")\n#m = loc("n"(#l2))\n#l2 = loc(callsite(#l at "k.py":1:2))\n',  # a name without a file
    '#l = loc("k.py":3:4)\n#m = loc("k.py":3)\n#l2 = loc(#m)\n',
]


@pytest.mark.parametrize("aliases", range(len(ALIASES)))
def test_hand_written(aliases, monkeypatch):
    for body in MORE:
        same(_wrap(body) + ALIASES[aliases], monkeypatch)


ARG_LOCS = [
    '%a: i32 loc("a"("k.py":1:2 to 1:5)), %b: f32 loc(fused[#l, #m]), %p: !tt.ptr<f32> loc(callsite(#l at #m))',
    '%a: i32 loc(#l), %b: f32 loc("b"), %p: !tt.ptr<f32> loc(unknown)',
    '%a: i32 loc("a"(#l), %b: f32, %p: !tt.ptr<f32>',
    '%a: i32 loc("e\\22sc":1:2), %b: f32 loc(), %p: !tt.ptr<f32>',
]


@pytest.mark.parametrize("args", range(len(ARG_LOCS)))
def test_argument_locations(args, monkeypatch):
    """tt.func's format (Python) reads its arguments' locations through Parser.opt_loc."""
    for aliases in ALIASES[:3]:
        same(_wrap("    %x = arith.addi %a, %a : i32 loc(#m)", args=ARG_LOCS[args]) + aliases, monkeypatch)


def test_regions_nested_too_deeply(monkeypatch):
    body = "    scf.if %c {\n" * 400 + "    }\n" * 400
    text = _wrap("    %c = arith.cmpi slt, %a, %a : i32\n" + body)
    assert same(text, monkeypatch)[0] == "error"


def test_fuzzed(monkeypatch):
    rng = random.Random(28)
    small = [p.read_text() for p in FILES if p.stat().st_size < 6000]
    pieces = list('%^@#!"(){}[]<>,:=x0-.\\ \n') + ["loc(", "tensor<", "^bb1", "loc(#loc1)", ": i32", "%0", "%1 = "]
    kinds = set()
    for _ in range(150):
        text = rng.choice(small)
        for _ in range(rng.randint(1, 3)):
            i = rng.randint(0, len(text))
            if rng.random() < 0.5:
                text = text[:i] + text[i + rng.randint(1, 12) :]
            else:
                text = text[:i] + rng.choice(pieces) + text[i:]
        kinds.add(same(text, monkeypatch)[0])
    assert kinds == {"ok", "error"}


def test_the_common_ops_are_read_in_c(monkeypatch):
    """On a plain kernel the Python parser reads only the module and the function, and no location."""
    seen = []
    parse_op, alias, body = P.Parser.parse_op, P.Parser._alias_definition, L.parse_loc_body
    monkeypatch.setattr(P.Parser, "parse_op", lambda self, block: seen.append(self.peek()) or parse_op(self, block))
    monkeypatch.setattr(P.Parser, "_alias_definition", lambda self: seen.append(self.peek()) or alias(self))
    monkeypatch.setattr(L, "parse_loc_body", lambda p: seen.append(p.peek()) or body(p))
    P.parse(fixture_text("vec_add"))
    assert seen == ["module", "tt.func"]
    P.parse(_wrap("    %x = arith.addi %a, %a : i32 loc(fused[#l])") + ALIASES[1])
    assert seen[2:] == ["module", "tt.func", "fused", "#l"]  # what C does not read goes to the Python code
