"""isa.program.verify's walk compiled in isa/_isawalk (isa/csrc/isawalk.cpp, built by setup.py) against its Python
walk: every corpus program passes both ways; and every instruction of two programs, broken one field at a time
(each operand set to values of each wrong kind and out of range, its loc, its mnemonic, its suffixes, its operand
count; a vector tile over the machine's bound; a matrix instruction's shapes), fails with the same message both
ways or passes both ways."""

from __future__ import annotations

import dataclasses

import pytest
import ttir_fixtures

from triton_plate_backend.errors import IsaError
from triton_plate_backend.isa import program as program_module
from triton_plate_backend.isa.program import Tile, verify
from triton_plate_backend.machine import get_machine

pytestmark = pytest.mark.skipif(
    program_module._isawalk is None, reason="isa._isawalk is not built (setup.py build_ext)"
)

KERNELS = ttir_fixtures.LOWERABLE
MACHINE = get_machine("plate1")


def outcome(program, machine, compiled: bool, monkeypatch):
    """verify's message (None: it passed), and the sram_bytes it leaves, with the compiled walk or without."""
    with monkeypatch.context() as m:
        if not compiled:
            m.setattr(program_module, "_isawalk", None)
        try:
            verify(program, machine)
        except IsaError as e:
            return str(e), program.sram_bytes
    return None, program.sram_bytes


def same(program, machine, monkeypatch):
    got = outcome(dataclasses.replace(program), machine, True, monkeypatch)
    want = outcome(dataclasses.replace(program), machine, False, monkeypatch)
    assert got == want
    return got[0]


@pytest.mark.parametrize("kernel", KERNELS)
def test_every_corpus_program_passes_both_walks(kernel, monkeypatch):
    program = ttir_fixtures.lowered(kernel)
    assert same(program, MACHINE, monkeypatch) is None
    assert same(program, None, monkeypatch) is None


@pytest.mark.parametrize("kernel", ["softmax", "matmul"])
def test_each_broken_field_fails_both_walks_alike(kernel, monkeypatch):
    program = ttir_fixtures.lowered(kernel)
    n = len(program.instrs)
    failed = 0
    for pc, ins in enumerate(program.instrs):
        variants = [
            dataclasses.replace(ins, loc=len(program.locs)),
            dataclasses.replace(ins, loc=-1),
            dataclasses.replace(ins, mnemonic="no.such"),
            dataclasses.replace(ins, suffixes=(*ins.suffixes, "i32")),
            dataclasses.replace(ins, suffixes=list(ins.suffixes)),
            dataclasses.replace(ins, operands=ins.operands[:-1]),
            dataclasses.replace(ins, operands=list(ins.operands)),
        ]
        bad_values = (-1, 1 << 20, n + 1, len(program.tiles), len(program.consts), True, 1.0, "x", (0, 1 << 20), (0,))
        for j in range(len(ins.operands)):
            for v in bad_values:
                ops = list(ins.operands)
                ops[j] = v
                variants.append(dataclasses.replace(ins, operands=tuple(ops)))
        for variant in variants:
            broken = dataclasses.replace(program, instrs=[*program.instrs[:pc], variant, *program.instrs[pc + 1 :]])
            failed += same(broken, MACHINE, monkeypatch) is not None
            failed += same(broken, None, monkeypatch) is not None
    assert failed > n  # most variants are errors (the test is not vacuous)


def test_a_vector_tile_over_the_bound_and_a_matrix_that_does_not_chain_fail_both_walks_alike(monkeypatch):
    for kernel, unit in (("softmax", "vector"), ("matmul", "matrix")):
        program = ttir_fixtures.lowered(kernel)
        row_of = {i: program_module.ISA[ins.mnemonic] for i, ins in enumerate(program.instrs)}
        pc = next(i for i, row in row_of.items() if row.unit == unit)
        ins = program.instrs[pc]
        t = next(k for k, od in enumerate(row_of[pc].operands) if od.kind == "t")
        big = Tile(0, "f32", (MACHINE.core.vector.max_elements + 1,))
        for tile in (big, Tile(0, "f32", (3, 5)), Tile(0, "f32", (7,))):
            ops = list(ins.operands)
            ops[t] = len(program.tiles)
            broken = dataclasses.replace(
                program,
                tiles=[*program.tiles, tile],
                instrs=[*program.instrs[:pc], dataclasses.replace(ins, operands=tuple(ops)), *program.instrs[pc + 1 :]],
                sram_bytes=0,
            )
            message = same(broken, MACHINE, monkeypatch)
            if tile is big or unit == "matrix":
                assert message is not None
            same(broken, None, monkeypatch)  # (no machine: neither bounds nor shapes are checked)
