"""The ISA table is the single definition: every row is consistent, and every other table
(cost rules, simulator semantics) covers it exactly."""

from triton_plate_backend.isa.table import BY_OPCODE, ENUMS, ISA, OPERAND_KINDS, UNITS


def test_rows_are_consistent():
    assert len(BY_OPCODE) == len(ISA)
    for m, row in ISA.items():
        assert row.mnemonic == m
        assert row.unit in UNITS, m
        assert all(s in ENUMS for s in row.suffixes), m
        assert all(o.kind in OPERAND_KINDS and o.role in ("def", "use", "inout") for o in row.operands), m
        assert len({o.name for o in row.operands}) == len(row.operands), f"{m}: duplicate operand names"
        assert row.doc, m
    assert all(len(v) < 256 for v in ENUMS.values())  # one byte per suffix in the encoding


def test_isa_covers_the_required_families():
    need = [
        "s.add",
        "s.cmpi",
        "jmp",
        "bnz",
        "loop",
        "s.pid",
        "s.nprog",
        "dma.load",
        "dma.store",
        "dma.gather",
        "dma.scatter",
        "dma.wait",
        "v.add",
        "v.exp",
        "v.cmpf",
        "v.select",
        "v.fcvt",
        "v.copy",
        "v.reduce",
        "v.scan",
        "m.mma",
        "atom.rmw",
        "atom.cas",
        "fence",
        "barrier",
        "dbg.print",
        "dbg.assert",
    ]
    assert not [m for m in need if m not in ISA]
    assert set(ENUMS["atom"]) >= {"add", "fadd", "min", "max", "umin", "umax", "and", "or", "xor", "xchg"}


def test_memory_only_through_dma_and_atomics():
    for m, row in ISA.items():
        if row.unit in ("vector", "matrix"):
            assert not m.startswith(("dma.", "atom.")), m
        if m.startswith(("dma.", "atom.")):
            assert row.unit in ("dma_in", "dma_out", "sync"), m


def test_cost_rules_cover_the_table():
    from triton_plate_backend.cost import COST_RULES

    missing = sorted({row.cost for row in ISA.values()} - set(COST_RULES))
    assert not missing, f"ISA rows name cost rules that do not exist: {missing}"


def test_dot_precision_tables_cover_the_prec_enum():
    from triton_plate_backend.cost import PREC_PASSES
    from triton_plate_backend.sim.sem_matrix import PRECISION

    for table in (PREC_PASSES, PRECISION):
        assert sorted(table) == sorted(ENUMS["prec"])
    assert PREC_PASSES["ieee"] == 1 and PREC_PASSES["bf16x6"] == 6


def test_semantics_cover_the_table():
    from triton_plate_backend.sim.semantics import SEMANTICS

    assert sorted(set(ISA) - set(SEMANTICS)) == []
    assert sorted(set(SEMANTICS) - set(ISA)) == []
