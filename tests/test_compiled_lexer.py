"""The TTIR tokenizer compiled in ttir/_ttirlex (ttir/csrc/ttirlex.cpp, built by setup.py) against its reference,
the regular expression (`lexer._TOKEN.findall`): the same tokens on every TTIR fixture, on the pir text the passes
print of every lowerable one, and on random text made of the characters the grammar tells apart (angle brackets
nested past the expression's depth, quotes and escapes, comments, numbers, signs, names); None (the expression
runs) for text that is not ASCII and for a comment that ends the text."""

from __future__ import annotations

import random

import pytest
import ttir_fixtures

from triton_plate_backend.ir.printer import print_module
from triton_plate_backend.passes import access
from triton_plate_backend.passes.pipeline import run_passes
from triton_plate_backend.ttir import lexer
from triton_plate_backend.ttir.parser import parse

pytestmark = pytest.mark.skipif(lexer._ttirlex is None, reason="ttir._ttirlex is not built (setup.py build_ext)")


def same(text: str) -> list[str]:
    got = lexer._ttirlex.tokenize(text)
    assert got == lexer._TOKEN.findall(text)
    return got


@pytest.mark.parametrize("name", [p.name for p in ttir_fixtures.FILES])
def test_fixture(name):
    assert len(same(ttir_fixtures.fixture_text(name))) > 10


@pytest.mark.parametrize("kernel", ttir_fixtures.LOWERABLE)
def test_printed_pir(kernel):
    module = run_passes(parse(ttir_fixtures.fixture_text(kernel), kernel), access.AccessAnalysis())
    same(print_module(module))


PIECES = list('<<>>""\\\\//\n  \t\x0b\x1c#%@^!-+0x1e.9aZ_$(){}[],:=*?|l') + [
    "loc(#",
    "0x",
    "0xF",
    "->",
    "::",
    "//",
    "tensor<",
    "e+",
    '@"',
    "%5#",
    "<<<<<",
    ">>>>>",
]


def test_random_text():
    rng = random.Random(14)
    declined = compared = 0
    for _ in range(30000):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 30)))
        if lexer._ttirlex.tokenize(text) is None:
            declined += 1
            assert "//" in text
            continue
        same(text)
        compared += 1
    assert compared > 20000 and declined > 0


def test_declines():
    assert lexer._ttirlex.tokenize("%x = é") is None  # not ASCII: \w and \s are Unicode
    assert lexer._ttirlex.tokenize("tt.return // done") is None  # the expression backtracks into the comment
    assert lexer.tokenize("tt.return // done") == lexer._TOKEN.findall("tt.return // done") + ["", ""]
    assert same("tt.return // done\n%x") == ["tt.return", "%x"]
    assert same("tensor<1x<2x<3x<4x<5xf32>>>>>")[0] == "tensor<1x<2x<3x<4x<5xf32>>>>>"  # four pairs inside
    assert same("tensor<1x<2x<3x<4x<5x<6>>>>>>")[:2] == ["tensor", "<"]  # five: the expression stops
    assert same('@"a\\"b" "x\\\n" "open') == ['@"a\\"b"', '"x\\\n"', '"', "open"]
