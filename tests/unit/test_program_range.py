"""passes/program_range.py: a persistent kernel's prologue is ONE IR op (plate.program_range) whose
readers walk one description of its arithmetic. The op lowers to the code, and folds to the footprint
text, of the tt.get_program_id and arith ops it stands for (`program_range.expand`, what
passes/persistent.py built before the op): the pasm text, the pbin and the `.affinity` text are
those of the expanded prologue, for every number of groups (the fixtures: a persistent loop, and
block_ptr a flattened chunk loop)."""

from __future__ import annotations

import pytest
from ttir_fixtures import fixture_text

from triton_plate_backend.ir.core import number_values
from triton_plate_backend.ir.printer import print_module
from triton_plate_backend.ir.verify import verify
from triton_plate_backend.isa.asm import disassemble
from triton_plate_backend.isa.encoding import encode
from triton_plate_backend.machine import get_machine
from triton_plate_backend.passes import program_range
from triton_plate_backend.passes.affinity import footprint_text
from triton_plate_backend.passes.pipeline import generate, run_passes
from triton_plate_backend.ttir.parser import parse

MACHINE = get_machine("plate1")


def _pir(fixture: str, groups: int) -> str:
    module = parse(fixture_text(fixture), f"{fixture}.ttir")
    return print_module(run_passes(module, persistent_sram=MACHINE.core.sram_bytes, persistent_groups=groups))


def _expanded(pir: str):
    """The pir text parsed, its plate.program_range replaced by the ops it stands for."""
    module = parse(pir, "x.pir")
    entry = module.kernel().regions[0].blocks[0]
    (k,) = [k for k, op in enumerate(entry.ops) if op.name == program_range.NAME]
    op = entry.ops[k]
    ops, base, count = program_range.expand(op)
    new = {op.results[0]: base, op.results[1]: count}
    for inner in module.kernel().walk():
        inner.operands = [new.get(v, v) for v in inner.operands]
    for o in ops:
        o.parent = entry
    entry.ops[k : k + 1] = ops
    verify(module)
    number_values(module)
    return module


@pytest.mark.parametrize("groups", [1, 2, 4])
@pytest.mark.parametrize("fixture", ["vec_add", "softmax", "load_store_flags", "block_ptr"])
def test_the_op_lowers_and_folds_as_the_ops_it_stands_for(fixture, groups):
    pir = _pir(fixture, groups)
    assert pir.count(f'"{program_range.NAME}"') == 1, "a persistent kernel holds its prologue as one op"
    assert "{axis = x}" not in pir  # (the op reads program_id(x); the kernel's is the loop's row)
    with_op = parse(pir, "x.pir")
    verify(with_op)
    expanded = _expanded(pir)
    text = footprint_text(with_op.kernel())
    assert text == footprint_text(expanded.kernel())
    if fixture != "block_ptr":  # (its carried block pointers: the pass cannot tell, "none (...)")
        assert "pid_x" in text  # each launched program's range, told by its id
    program, _ = generate(with_op, machine=MACHINE)
    program_x, _ = generate(expanded, machine=MACHINE)
    assert disassemble(program) == disassemble(program_x)
    assert bytes(encode(program)) == bytes(encode(program_x))
    assert sum(i.mnemonic == "s.pid" and i.suffixes == ("x",) for i in program.instrs) == 1


def test_the_arithmetic_is_each_launched_programs_share_of_its_group():
    """`share` evaluated on integers: the launched programs of a group run consecutive runs that cover
    the group's programs once, the first r of them one program more than the rest."""

    def run(pid, splits, rows, grid):
        fns = {
            "arith.addi": lambda a, b: a + b,
            "arith.subi": lambda a, b: a - b,
            "arith.muli": lambda a, b: a * b,
            "arith.divsi": lambda a, b: int(a / b),
            "arith.minsi": min,
            "arith.maxsi": max,
        }
        return program_range.share(pid, splits, rows, grid, lambda n, a, b: fns[n](a, b), lambda c: c)

    for splits, rows, grid in (([], 3, 10), ([4], 2, 9), ([3, 3, 7], 4, 12), ([0, 5, 5], 3, 5)):
        bounds = [0, *splits, grid]
        for g in range(len(bounds) - 1):
            runs = [run(g * rows + i, splits, rows, grid) for i in range(rows)]
            covered = [p for base, count in runs for p in range(base, base + count)]
            assert covered == list(range(bounds[g], bounds[g + 1]))
            counts = [count for _, count in runs]
            assert max(counts) - min(counts) <= 1 and counts == sorted(counts, reverse=True)
