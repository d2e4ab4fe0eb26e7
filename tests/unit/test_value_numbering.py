"""Code generation depends on the IR alone, not on the order its Values were created in.

A Value's id is a creation counter; affine expressions order their terms by it (passes/affine.py). The
passes that build a module create Values in their own order, a parse of its printed text in text order, so
the pasm stage gave another text for the compile's own module than for its pir text read back (the stage
round trip check of tests/stage_roundtrip.py failed). `ir.core.number_values` numbers the Values in text
order wherever a module enters code generation."""

from __future__ import annotations

import pytest
from ttir_fixtures import fixture_text

from triton_plate_backend.ir import core
from triton_plate_backend.ir.printer import print_module
from triton_plate_backend.isa.asm import disassemble
from triton_plate_backend.passes.pipeline import generate, run_passes
from triton_plate_backend.ttir.parser import parse

# kernels whose affine expressions mix several Values (strides, offsets, loop-carried pointers, masks)
KERNELS = ["matmul", "load_store_flags", "softmax", "block_ptr"]


def recreated_backwards(module: core.Module) -> core.Module:
    """The module with its Values' ids as if they had been created last to first (as a pass may create them)."""
    for v in reversed(list(core.defined_values(module))):
        v.id = next(core._ids)
    return module


def pasm(module: core.Module) -> str:
    program, _ = generate(module, machine="plate1")
    return disassemble(program)


@pytest.fixture(scope="module", params=KERNELS)
def kernel(request) -> tuple[str, str]:
    """(kernel name, its pir text)"""
    return request.param, print_module(run_passes(parse(fixture_text(request.param), f"{request.param}.ttir")))


def test_two_parses_whose_values_were_created_in_another_order_give_the_same_pasm(kernel):
    _, pir_text = kernel
    assert pasm(recreated_backwards(parse(pir_text, "k.pir"))) == pasm(parse(pir_text, "k.pir"))


def test_the_passes_module_and_its_text_read_back_give_the_same_pasm(kernel):
    name, pir_text = kernel
    module = run_passes(recreated_backwards(parse(fixture_text(name), f"{name}.ttir")))
    assert print_module(module) == pir_text  # the annotations' expressions too
    assert pasm(module) == pasm(parse(pir_text, "k.pir"))


def test_numbering_follows_the_text_and_is_kept_when_already_so():
    module = parse(fixture_text("matmul"), "matmul.ttir")
    values = list(core.defined_values(module))
    assert core.number_values(module)
    assert [v.id for v in values] == list(range(len(values)))
    assert not core.number_values(module)  # generate keeps the access analysis of such a module
    fresh = core.Value(core.ScalarType("i32"))
    assert fresh.id > len(values)  # a Value created afterwards orders after every numbered one
