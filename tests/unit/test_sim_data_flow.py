"""sim/data_flow.py: the operand positions an analysis reads per ISA row (``Slots``) are the operands
``_regs``, ``_tiles`` and ``_target`` read, for every row of the ISA table; ``trace_reads_no_data`` (its
per-mnemonic tables) answers as its per-pc definition does on random programs."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from triton_plate_backend.isa.program import Inst, Program, Tile
from triton_plate_backend.isa.table import ENUMS, ISA
from triton_plate_backend.sim.data_flow import _regs, _target, _tiles, slots, trace_reads_no_data


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


# ---- trace_reads_no_data: the per-mnemonic tables against the per-pc definition ------------------------------
def _reads_no_data_per_pc(program) -> bool:
    """``trace_reads_no_data`` as it read each instruction's operands pc by pc (the definition its per-mnemonic
    ``_Effects`` must keep)."""
    instrs = program.instrs
    if any(i.mnemonic.startswith(("atom.", "dbg.")) for i in instrs):
        return False
    spans = np.array([t.span() for t in program.tiles], dtype=np.int64).reshape(-1, 2)
    overlap = (spans[:, None, 0] < spans[None, :, 1]) & (spans[None, :, 0] < spans[:, None, 1])
    np.fill_diagonal(overlap, True)
    effects, written, n = [], [False] * len(program.tiles), len(instrs)
    for pc, inst in enumerate(instrs):
        m, unit = inst.mnemonic, inst.row.unit
        if unit == "dma_in":
            for t in _tiles(inst, ("def", "inout")):
                written[t] = True
        succ = [pc + 1] if m not in ("jmp", "halt") else []
        if m in ("bz", "bnz", "loop", "jmp"):
            succ.append(_target(inst))
        succ = [x for x in succ if x is not None and x < n]
        dma = unit in ("dma_in", "dma_out")
        vecmat = unit in ("vector", "matrix")
        tiles_in = _tiles(inst, ("use",), ("addr", "m")) if dma else _tiles(inst, ("use", "inout")) if vecmat else []
        tiles_out = _tiles(inst, ("def", "inout")) if vecmat else []
        uses, defs = _mask(_regs(inst, ("use", "inout"))), _mask(_regs(inst, ("def", "inout")))
        effects.append((m, dma, vecmat, uses, defs, tiles_in, tiles_out, succ))
    data = overlap[np.array(written, bool)].any(axis=0).tolist()
    while True:
        grown, into, work = False, [None] * n, [0] if n else []
        if n:
            into[0] = 0
        while work:
            pc = work.pop()
            tainted = into[pc]
            m, dma, vecmat, uses, defs, tiles_in, tiles_out, succ = effects[pc]
            reg_data = bool(tainted & uses)
            if dma and (reg_data or any(data[t] for t in tiles_in)):
                return False
            if not dma and m in ("bz", "bnz", "loop") and reg_data:
                return False
            from_data = reg_data or (vecmat and any(data[t] for t in tiles_in))
            if vecmat and from_data and tiles_out and not all(written[t] for t in tiles_out):
                for t in tiles_out:
                    written[t] = True
                data = overlap[np.array(written, bool)].any(axis=0).tolist()
                grown = True
            out = tainted | defs if from_data else tainted & ~defs
            for x in succ:
                merged = out if into[x] is None else into[x] | out
                if merged != into[x]:
                    into[x] = merged
                    work.append(x)
        if not grown:
            return True


_UNITS = ("scalar", "vector", "matrix", "dma_in", "dma_out", "sync")
_ROWS = [r for r in ISA.values() if not r.mnemonic.startswith(("atom.", "dbg."))]
# where data goes: loads into tiles, tiles into tiles and registers, registers into branches, DMA bases and vectors
_FLOWS = [ISA[m] for m in ("dma.load", "dma.store", "dma.gather", "dma.scatter", "v.extract", "v.add", "v.splat")]
_FLOWS += [ISA[m] for m in ("v.select", "m.mma", "s.add", "s.li", "s.mov", "bz", "bnz", "loop", "jmp", "halt")]


@st.composite
def _programs(draw):
    """A random program over few registers and a few overlapping tiles: mostly the instructions data flows
    through (loads, vector and matrix work, tile -> register, branches, loops, stores), now and then any other
    row, an atomic or a debug instruction."""
    n = draw(st.integers(1, 20))
    reg = st.integers(0, 3)
    offsets = draw(st.lists(st.sampled_from([0, 8, 16, 64, 128]), min_size=1, max_size=4))
    tiles = [Tile(o, "f32", (4,)) for o in offsets]
    operand = {
        "r": reg,
        "q": st.integers(0, 3),
        "t": st.integers(0, len(tiles) - 1),
        "label": st.integers(0, n),
        "imm": st.just(0),
        "str": st.just(0),
        "rlist": st.lists(reg, max_size=2).map(tuple),
    }
    flows = st.sampled_from(_FLOWS)
    rows = flows | flows | flows | st.sampled_from(list(ISA.values()))
    instrs = []
    for row in draw(st.lists(rows, min_size=n, max_size=n)):
        suffixes = tuple(ENUMS[e][0] for e in row.suffixes)
        instrs.append(Inst(row.mnemonic, suffixes, tuple(draw(operand[od.kind]) for od in row.operands)))
    return Program("p", instrs=instrs, tiles=tiles, consts=[0])


SEEN: set = set()


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_programs())
def test_reads_no_data_by_mnemonic_tables_is_the_per_pc_definition(program):
    want = _reads_no_data_per_pc(program)
    assert trace_reads_no_data(program) is want
    assert trace_reads_no_data(program) is want  # the second ask reads the kept tables
    SEEN.add(want)
    if not want and not any(i.mnemonic.startswith(("atom.", "dbg.")) for i in program.instrs):
        SEEN.add("data")  # False from the data flow itself, not an atomic or a debug instruction


def test_reads_no_data_examples_met_both_answers():
    test_reads_no_data_by_mnemonic_tables_is_the_per_pc_definition()
    assert SEEN == {True, False, "data"}
    assert {r.unit for r in _ROWS} >= set(_UNITS)
