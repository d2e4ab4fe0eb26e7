"""The encoder's code section compiled in isa/_isawalk (`pack_code`, isa/csrc/isawalk.cpp, built by setup.py)
against its Python walk (isa/encoding.py `_pack_code`), and the fixed-layout records packed with one Struct
against `Layout.pack`: every corpus program encodes to the same bytes both ways; the first instruction of each
(mnemonic, suffixes) in two programs, with one operand, its loc or its register list replaced by odd values
(negative, over 32 bits, bools, floats, lists), packs to the same bytes or the same error both ways (the
compiled walk hands those it cannot pack to Python); a record that does not fit its layout names the same
field. `Layout.pack` (one Struct a record, arrays included) against `Layout.pack_fields` (field by field) on
every layout with odd values, and the constant records' int / float shortcut against numbers' checks."""

from __future__ import annotations

import dataclasses

import pytest
import ttir_fixtures

from triton_plate_backend.errors import IsaError
from triton_plate_backend.isa import encoding

pytestmark = pytest.mark.skipif(encoding._isawalk is None, reason="isa._isawalk is not built (setup.py build_ext)")

KERNELS = ttir_fixtures.LOWERABLE


def packed(instrs, compiled: bool, monkeypatch):
    return ttir_fixtures.with_or_without_isawalk(encoding, compiled, monkeypatch, lambda: encoding._pack_code(instrs))


@pytest.mark.parametrize("kernel", KERNELS)
def test_every_corpus_program_encodes_to_the_same_bytes_both_ways(kernel, monkeypatch):
    program = ttir_fixtures.lowered(kernel)
    encoding._pack_code(program.instrs)  # its forms known, so the compiled walk packs it all
    assert encoding._isawalk.pack_code(program.instrs, encoding._CODE_KINDS) == packed(
        program.instrs, False, monkeypatch
    )
    with_c = encoding._encode(program)
    with monkeypatch.context() as m:
        m.setattr(encoding, "_isawalk", None)
        for layout in (encoding.META, encoding.ARG, encoding.CONST, encoding.LOC, encoding.LABEL, encoding.AFFINITY):
            m.setattr(layout, "whole", None)
        m.setattr(encoding.Layout, "pack", encoding.Layout.pack_fields)  # every record field by field
        without = encoding._encode(program)
    assert with_c == without


@pytest.mark.parametrize("kernel", ["softmax", "matmul"])
def test_odd_operands_pack_alike_both_ways(kernel, monkeypatch):
    program = ttir_fixtures.lowered(kernel)
    values = (-1, 1 << 32, (1 << 32) - 1, True, 2.5, "x", [0, 1], (0, -1), (1 << 32,), (), None)
    odd = 0
    for pc, ins in ttir_fixtures.first_of_each_form(program):
        variants = [dataclasses.replace(ins, loc=v) for v in (-1, 1 << 32, True, 1.5)]
        for j in range(len(ins.operands)):
            for v in values:
                ops = list(ins.operands)
                ops[j] = v
                variants.append(dataclasses.replace(ins, operands=tuple(ops)))
        for variant in variants:
            instrs = [*program.instrs[:pc], variant, *program.instrs[pc + 1 :]]
            got, want = packed(instrs, True, monkeypatch), packed(instrs, False, monkeypatch)
            assert got == want
            odd += isinstance(want, str) or encoding._isawalk.pack_code(instrs, encoding._CODE_KINDS) is None
    assert odd  # some variants do not fit (the comparison covered those too)


def test_a_record_that_does_not_fit_names_the_same_field_both_ways(monkeypatch):
    section = encoding.SECTION_BY_KIND[5]  # locs
    records = [{"file": 0, "line": 1, "col": 2, "name": 3}, {"file": 0, "line": -1, "col": 2, "name": 3}]
    one_struct = encoding._pack_section(section, None, records[:1])
    with pytest.raises(IsaError, match="field line = -1") as fast:
        encoding._pack_section(section, None, records)
    monkeypatch.setattr(encoding.LOC, "whole", None)
    with pytest.raises(IsaError) as slow:
        encoding._pack_section(section, None, records)
    assert str(fast.value) == str(slow.value)
    assert (
        one_struct
        == encoding._pack_section(section, None, records[:1])
        == b"\x01\0\0\0" + bytes([0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0])
    )


ODD = (0, 1, -1, 255, 256, 1 << 16, 1 << 31, 1 << 32, -(1 << 31), True, 2.5, "x", b"ab", None, [1], (1, 2))
ARRAYS = ((), (0,), (1, 2), (1 << 31, 5), (-1, 2), (1.5,), [3, 4, 5], b"xyz", "s", (True, 2))


def _same(layout, values):
    try:
        want = layout.pack_fields(values)
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        want = (type(e), str(e))
    try:
        got = layout.pack(values)
    except Exception as e:  # noqa: BLE001
        got = (type(e), str(e))
    assert got == want, (layout.name, values)
    return isinstance(want, bytes)


@pytest.mark.parametrize("layout", [v for v in vars(encoding).values() if isinstance(v, encoding.Layout)], ids=lambda lay: lay.name)
def test_a_record_packs_to_the_same_bytes_or_error_in_one_struct_and_field_by_field(layout):
    plain = [f for f, code in layout.fields if "*" not in code]
    arrays = [f for f, code in layout.fields if "*" in code]
    base = {f: 1 for f in plain}
    for f in arrays:
        base[f] = b"ab" if layout._steps[[s[0] for s in layout._steps].index(f)][2] == "s" else (1, 2)
    fits = _same(layout, base)
    for f in plain:
        for v in ODD:
            fits += _same(layout, {**base, f: v})
        fits += not _same(layout, {k: v for k, v in base.items() if k != f} if f not in layout.counts else base)
    for f in arrays:
        for v in ARRAYS:
            fits += _same(layout, {**base, f: v})
            for g in arrays:  # the arrays of one count with other lengths
                fits += _same(layout, {**base, f: v, g: ARRAYS[2]})
    assert fits  # some records fit (the comparison was not of errors alone)


def test_the_tile_records_pack_alike_with_ranks_0_to_4():
    for rank in range(5):
        shape, strides = tuple(range(2, 2 + rank)), tuple(range(-1, -1 + rank))
        values = {"addr": 64, "dtype": 3, "shape": shape, "strides": strides}
        assert encoding.TILE.pack(values) == encoding.TILE.pack_fields(values)
        bad = {**values, "strides": strides + (1,)}
        with pytest.raises(IsaError, match="strides has") as fast:
            encoding.TILE.pack(bad)
        with pytest.raises(IsaError) as slow:
            encoding.TILE.pack_fields(bad)
        assert str(fast.value) == str(slow.value)


def _const_record_by_numbers(c, s):  # the constant record as numbers' checks alone make it
    import numbers

    if isinstance(c, str):
        return {"tag": 2, "bits": s(c)}
    if isinstance(c, numbers.Integral):
        if not -(1 << 63) <= int(c) < 1 << 63:
            raise IsaError(f"integer constant {c} does not fit int64")
        return {"tag": 0, "bits": int(c) & encoding.MASK64}
    if isinstance(c, numbers.Real):
        return {"tag": 1, "bits": encoding.float_bits(float(c))}
    raise IsaError(f"constant {c!r} is not an int, float or str")


def test_constant_records_are_those_numbers_checks_make():
    import fractions

    import numpy as np

    values = [0, 1, -1, (1 << 63) - 1, -(1 << 63), 1 << 63, -(1 << 63) - 1, 1 << 64, True, False, 0.0, -0.0]
    values += [1.5, float("inf"), float("nan"), np.int32(-7), np.float32(0.25), fractions.Fraction(1, 3), "s"]
    values += [None, 1j, b"x"]
    for c in values:
        outcome = []
        for fn in (encoding._const_record, _const_record_by_numbers):
            try:
                outcome.append(fn(c, {"s": 5}.get))
            except IsaError as e:
                outcome.append(str(e))
        assert outcome[0] == outcome[1], c
