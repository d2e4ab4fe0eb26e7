"""sim/data_flow.py: the operand positions an analysis reads per ISA row (``Slots``) are the operands
``_regs``, ``_tiles`` and ``_target`` read, for every row of the ISA table."""

from __future__ import annotations

from triton_plate_backend.isa.program import Inst
from triton_plate_backend.isa.table import ISA
from triton_plate_backend.sim.data_flow import _regs, _target, _tiles, slots


def _inst(row) -> Inst:
    """An instruction of ``row`` whose operands are all distinct values (a register list: two registers)."""
    operands = []
    for k, od in enumerate(row.operands):
        operands.append((2 * k + 1, 2 * k + 2) if od.kind == "rlist" else k + 1)
    return Inst(row.mnemonic, operands=tuple(operands))


def _mask(regs) -> int:
    out = 0
    for r in regs:
        out |= 1 << r
    return out


def test_slots_read_the_operands_the_helpers_read_on_every_row():
    assert ISA
    for row in ISA.values():
        inst = _inst(row)
        s = slots(inst)
        assert s.row is row
        assert s.mask(inst, s.reg_use) == _mask(_regs(inst, ("use", "inout")))
        assert s.mask(inst, s.reg_def) == _mask(_regs(inst, ("def", "inout")))
        assert s.values(inst, s.tile_use) == _tiles(inst, ("use", "inout"))
        assert s.values(inst, s.tile_def) == _tiles(inst, ("def", "inout"))
        assert s.values(inst, s.tile_addr) == _tiles(inst, ("use",), ("addr", "m"))
        assert s.target(inst) == _target(inst)
        assert slots(inst) is s  # kept per row


def test_a_row_with_registers_tiles_and_a_label_is_covered():
    kinds = {od.kind for row in ISA.values() for od in row.operands}
    assert {"r", "rlist", "t", "label"} <= kinds  # the test above met every kind it reads
