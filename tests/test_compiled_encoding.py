"""The encoder's code section compiled in isa/_isawalk (`pack_code`, isa/csrc/isawalk.cpp, built by setup.py)
against its Python walk (isa/encoding.py `_pack_code`), and the fixed-layout records packed with one Struct
against `Layout.pack`: every corpus program encodes to the same bytes both ways; the first instruction of each
(mnemonic, suffixes) in two programs, with one operand, its loc or its register list replaced by odd values
(negative, over 32 bits, bools, floats, lists), packs to the same bytes or the same error both ways (the
compiled walk hands those it cannot pack to Python); a record that does not fit its layout names the same
field. The records with arrays of one count (strings, tiles) packed with one Struct a record against
`Layout.pack`, odd ones included (the same bytes or the same error)."""

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
        for layout in (encoding.STRING, encoding.TILE):
            m.setattr(layout, "flat", None)
        m.setattr(encoding, "_const_record", _const_record_by_abcs)
        without = encoding._encode_records(program)  # (the records' path: `_encode_packed` packs no record)
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


_CONST_RECORD = encoding._const_record


def _const_record_by_abcs(c, s):
    """`_const_record` without its plain-int path (the number ABCs decide)."""
    return _CONST_RECORD(_NotPlain(c), s) if type(c) is int else _CONST_RECORD(c, s)


class _NotPlain(int):
    pass


def _pack_both_ways(layout, records, monkeypatch):
    def pack():
        try:
            return encoding._pack_section(section, None, records)
        except IsaError as e:
            return f"IsaError: {e}"
        except (KeyError, TypeError) as e:
            return f"{type(e).__name__}: {e}"

    section = next(sec for sec in encoding.SECTIONS if sec.record is layout)
    flat = pack()
    with monkeypatch.context() as m:
        m.setattr(layout, "flat", None)
        return flat, pack()


@pytest.mark.parametrize(
    "record",
    [
        {"addr": 64, "dtype": 1, "shape": (4, 8), "strides": (8, 1)},
        {"addr": 0, "dtype": 0, "shape": (), "strides": ()},
        {"addr": 0, "dtype": 0, "shape": [3], "strides": [-1]},
        {"addr": 0, "dtype": 0, "shape": (4, 8), "strides": (8,)},  # unequal arrays
        {"addr": -1, "dtype": 0, "shape": (4,), "strides": (1,)},
        {"addr": 0, "dtype": 300, "shape": (4,), "strides": (1,)},
        {"addr": 0, "dtype": 0, "shape": (1 << 32,), "strides": (1,)},
        {"addr": 0, "dtype": 0, "shape": tuple(range(256)), "strides": tuple(range(256))},  # rank over a byte
        {"addr": 0, "dtype": 0, "shape": (2.5,), "strides": (1,)},
        {"addr": 0, "dtype": 0, "shape": None, "strides": ()},
        {"addr": 0, "shape": (4,), "strides": (1,)},  # a field missing
        {"addr": True, "dtype": 0, "shape": b"ab", "strides": (1, 2)},
    ],
)
def test_tiles_pack_alike_with_one_struct_and_field_by_field(record, monkeypatch):
    good = {"addr": 128, "dtype": 2, "shape": (2, 2), "strides": (2, 1)}
    flat, by_field = _pack_both_ways(encoding.TILE, [good, record, good], monkeypatch)
    assert flat == by_field


@pytest.mark.parametrize("utf8", [b"", b"abc", bytearray(b"xy"), [104, 105], "text", None, b"\0" * 300])
def test_strings_pack_alike_with_one_struct_and_field_by_field(utf8, monkeypatch):
    flat, by_field = _pack_both_ways(encoding.STRING, [{"utf8": b"kernel"}, {"utf8": utf8}], monkeypatch)
    assert flat == by_field
    assert (
        encoding._pack_section(encoding.SECTIONS[0], None, [{"utf8": b"ab"}]) == bytes([1, 0, 0, 0, 2, 0, 0, 0]) + b"ab"
    )


@pytest.mark.parametrize("c", [0, 5, -1, (1 << 63) - 1, -(1 << 63), 1 << 63, -(1 << 63) - 1, True, 2.5, "s"])
def test_constants_record_alike_without_the_abcs(c):
    def record(f):
        try:
            return f(c, {}.setdefault)
        except IsaError as e:
            return str(e)

    assert record(_CONST_RECORD) == record(_const_record_by_abcs)


@pytest.mark.parametrize("equal_strings", [False, True])
@pytest.mark.parametrize("kernel", ["softmax", "matmul"])
def test_a_fresh_suffix_tuple_per_instruction_packs_alike(kernel, equal_strings, monkeypatch):
    program = ttir_fixtures.lowered(kernel)
    remade = ttir_fixtures.remade_suffixes(program, equal_strings)
    fresh = [b for a, b in zip(program.instrs, remade.instrs) if b.suffixes and b.suffixes is not a.suffixes]
    assert len({(ins.mnemonic, ins.suffixes) for ins in fresh}) > 3  # several forms, each met in new tuples
    encoding._pack_code(program.instrs)
    want = packed(program.instrs, False, monkeypatch)
    assert encoding._isawalk.pack_code(remade.instrs, encoding._CODE_KINDS) == want
    assert encoding._isawalk.pack_code(program.instrs, encoding._CODE_KINDS) == want
