"""The disassembly's instruction walk compiled in isa/_isawalk (`lines`, isa/csrc/isawalk.cpp, built by setup.py)
against its Python loop (isa/asm.py `_disassemble`): every corpus program prints the same text both ways; and
the first instruction of each (mnemonic, suffixes) in two programs, with one operand or its loc replaced
(negative and out-of-range indices, bools, floats, strings, lists, register lists of each kind), prints the
same text, or raises the same error, both ways."""

from __future__ import annotations

import dataclasses

import pytest
import ttir_fixtures

from triton_plate_backend.isa import asm

pytestmark = pytest.mark.skipif(asm._isawalk is None, reason="isa._isawalk is not built (setup.py build_ext)")

KERNELS = ttir_fixtures.LOWERABLE


def printed(program, compiled: bool, monkeypatch):
    return ttir_fixtures.with_or_without_isawalk(
        asm, compiled, monkeypatch, lambda: asm.disassemble_read_back(program)[0]
    )


def same(program, monkeypatch):
    got, want = printed(program, True, monkeypatch), printed(program, False, monkeypatch)
    assert got == want
    return got


@pytest.mark.parametrize("kernel", KERNELS)
def test_every_corpus_program_prints_the_same_text_both_ways(kernel, monkeypatch):
    program = ttir_fixtures.lowered(kernel)
    text = same(program, monkeypatch)
    assert text.count("\n") > len(program.instrs)


@pytest.mark.parametrize("kernel", ["softmax", "matmul"])
def test_odd_operands_print_alike_both_ways(kernel, monkeypatch):
    program = ttir_fixtures.lowered(kernel)
    values = (-1, -2, 0, 1, 1 << 40, True, 2.5, "x", [0], (0, 1), (True,), (), None)
    errors = 0
    for pc, ins in ttir_fixtures.first_of_each_form(program):
        variants = [dataclasses.replace(ins, loc=v) for v in (0, 1, True, -3)]
        variants.append(dataclasses.replace(ins, operands=list(ins.operands)))
        for j in range(len(ins.operands)):
            for v in values:
                ops = list(ins.operands)
                ops[j] = v
                variants.append(dataclasses.replace(ins, operands=tuple(ops)))
        for variant in variants:
            broken = dataclasses.replace(program, instrs=[*program.instrs[:pc], variant, *program.instrs[pc + 1 :]])
            errors += ":" in same(broken, monkeypatch).split("\n")[0]
    assert errors  # some variants cannot print (the comparison covered errors too)


@pytest.mark.parametrize("equal_strings", [False, True])
@pytest.mark.parametrize("kernel", ["softmax", "matmul"])
def test_a_fresh_suffix_tuple_per_instruction_prints_alike(kernel, equal_strings, monkeypatch):
    program = ttir_fixtures.lowered(kernel)
    remade = ttir_fixtures.remade_suffixes(program, equal_strings)
    assert same(remade, monkeypatch) == same(program, monkeypatch)
