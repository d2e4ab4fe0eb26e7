"""The .pbin binary format: round trips on random valid programs, the layout, and the decoder's errors."""

from __future__ import annotations

import dataclasses
import struct
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from triton_plate_backend.errors import BinaryFormatError, IsaError
from triton_plate_backend.isa import encoding
from triton_plate_backend.isa.asm import assemble, disassemble
from triton_plate_backend.isa.encoding import (
    COUNT,
    HEADER,
    INST,
    MAGIC,
    SECTION,
    SECTIONS,
    TILE,
    bits_float,
    decode,
    encode,
    float_bits,
    load,
    tile_names,
)
from triton_plate_backend.isa.program import ARG_TYPES, Arg, Inst, Program, Tile, verify
from triton_plate_backend.isa.table import DTYPES, ENUMS, ISA
from triton_plate_backend.machine import get_machine
from triton_plate_backend.srcloc import UNKNOWN_LOC, Loc


class _Float(float):
    pass


class _Str(str):
    pass


# ---- random valid programs (also used by test_isa_asm) ---------------------------------------
IDENT = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,5}", fullmatch=True)
TEXT = st.text(max_size=6)
INT64 = st.integers(-(1 << 63), (1 << 63) - 1)
FLOAT64 = st.floats() | st.integers(0, (1 << 64) - 1).map(bits_float)  # any bit pattern: NaN payloads, -0.0
U32 = st.integers(0, (1 << 32) - 1)
LOCS = st.builds(Loc, TEXT, U32, U32, TEXT)
ROWS = list(ISA.values())


@st.composite
def tiles(draw):
    dtype, rank = draw(st.sampled_from(DTYPES)), draw(st.integers(0, 3))
    shape = tuple(draw(st.lists(st.integers(0, 6), min_size=rank, max_size=rank)))
    strides = draw(st.none() | st.lists(st.integers(-5, 5), min_size=rank, max_size=rank).map(tuple))
    lo = Tile(0, dtype, shape, strides).span()[0]
    return Tile(-lo + draw(st.integers(0, 1 << 16)), dtype, shape, strides)


@st.composite
def programs(draw, max_instrs=10):
    """A random program that verifies: random ISA rows, suffixes, in-range operands, tiles, consts, locs."""
    consts = draw(
        st.permutations(
            draw(st.lists(INT64 | FLOAT64, min_size=1, max_size=4)) + draw(st.lists(TEXT, min_size=1, max_size=3))
        )
    )
    ntiles_ = draw(st.lists(tiles(), min_size=1, max_size=4))
    locs = [draw(st.just(UNKNOWN_LOC) | LOCS)] + draw(st.lists(LOCS, max_size=2))
    n = draw(st.integers(0, max_instrs))
    reg = st.integers(0, 63)
    operand = {
        "r": reg,
        "q": st.integers(0, 15),
        "t": st.integers(0, len(ntiles_) - 1),
        "label": st.integers(0, n),
        "imm": st.sampled_from([i for i, c in enumerate(consts) if not isinstance(c, str)]),
        "str": st.sampled_from([i for i, c in enumerate(consts) if isinstance(c, str)]),
        "rlist": st.lists(reg, max_size=3).map(tuple),
    }
    instrs = []
    for row in draw(st.lists(st.sampled_from(ROWS), min_size=n, max_size=n)):
        suffixes = tuple(draw(st.sampled_from(ENUMS[e])) for e in row.suffixes)
        operands = tuple(draw(operand[od.kind]) for od in row.operands)
        instrs.append(Inst(row.mnemonic, suffixes, operands, draw(st.integers(0, len(locs) - 1))))
    args = draw(st.lists(st.builds(Arg, IDENT | TEXT, st.sampled_from(ARG_TYPES)), max_size=3))
    labels = draw(st.dictionaries(IDENT, st.integers(0, n), max_size=3))
    p = Program(draw(IDENT | TEXT), instrs, ntiles_, consts, locs, args, labels)
    p.sram_bytes = draw(st.sampled_from([0, p.sram_high_water(), p.sram_high_water() + 64]))
    if draw(st.booleans()):
        p.tile_names = draw(st.lists(IDENT, min_size=len(ntiles_), max_size=len(ntiles_), unique=True))
    return verify(p)


def structure(p: Program):
    """Everything a Program holds, floats by bit pattern and types kept (so 1 != 1.0, 0.0 != -0.0)."""
    consts = [(type(c).__name__, float_bits(c) if isinstance(c, float) else c) for c in p.consts]
    return (p.name, p.instrs, p.tiles, consts, p.locs, p.args, list(p.labels.items()), p.sram_bytes, tile_names(p))


FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---- round trips -----------------------------------------------------------------------------
@FAST
@given(programs())
def test_binary_round_trip_is_structural_identity(p):
    data = encode(p)
    q = decode(data)
    assert structure(q) == structure(p)
    assert disassemble(q) == disassemble(p)
    assert encode(q) == data  # decode then encode gives the same bytes


@FAST
@given(programs())
def test_text_to_binary_to_text_is_identity_on_canonical_text(p):
    text = disassemble(p)
    assert disassemble(decode(encode(assemble(text)))) == text


def test_special_floats_and_ints_survive_by_bits():
    consts = [
        0.0,
        -0.0,
        float("nan"),
        bits_float(0x7FF0000000000001),
        bits_float(0xFFF8000000000123),
        float("-inf"),
        1,
        1.0,
        -(1 << 63),
        (1 << 63) - 1,
        "",
        "naïve ✓",
    ]
    instrs = [Inst("v.fill", (), (0, i)) for i in range(len(consts) - 2)] + [Inst("dbg.printr", (), (10, 0))]
    p = verify(Program("k", instrs, [Tile(0, "f32", (4,))], consts))
    q = decode(encode(p))
    assert structure(q) == structure(p)
    assert [float_bits(c) for c in q.consts[:6]] == [float_bits(c) for c in consts[:6]]
    assert type(q.consts[6]) is int and type(q.consts[7]) is float


# ---- layout ----------------------------------------------------------------------------------
def _entries(data: bytes) -> dict[str, tuple[int, int, int]]:
    """section name -> (entry offset, payload offset, payload size)"""
    names = {s.kind: s.name for s in SECTIONS}
    out = {}
    for i in range(struct.unpack_from("<I", data, 20)[0]):
        at = HEADER.min_size + i * SECTION.min_size
        kind, off, size = struct.unpack_from("<III", data, at)
        out[names[kind]] = (at, off, size)
    return out


def _patch(data: bytes, offset: int, fmt: str, *values, fix_crc=True) -> bytes:
    out = bytearray(data)
    struct.pack_into("<" + fmt, out, offset, *values)
    if fix_crc:
        struct.pack_into("<I", out, 16, zlib.crc32(bytes(out[HEADER.min_size :])))
    return bytes(out)


SAMPLE = """
.kernel k
.arg x ptr
.tile A f32[8] @0x0
.tile B f32[8] @0x20
.loc 1 "k.py" 3 4 "a"
top:
    s.pid.y r1
    s.mov r2, r3
    v.add A, A, B  @1
    bnz r1, top
    halt
"""


@pytest.fixture
def sample() -> bytes:
    return encode(assemble(SAMPLE))


def _inst_offset(data: bytes, pc: int) -> int:
    """Offset of instruction pc in SAMPLE (every SAMPLE instruction before pc is 8 + 4 * operands bytes)."""
    off = _entries(data)["code"][1] + COUNT.min_size
    for ins in assemble(SAMPLE).instrs[:pc]:
        off += INST.min_size + 4 * len(ins.operands)
    return off


def test_header_and_section_table(sample):
    magic, major, minor, flags, crc, nsec = struct.unpack_from("<8sHHIII", sample, 0)
    assert (magic, major, minor, flags, nsec) == (MAGIC, 1, 0, 0, len(SECTIONS))
    assert crc == zlib.crc32(sample[24:])
    entries = _entries(sample)
    assert set(entries) == {s.name for s in SECTIONS}
    spans = sorted((off, off + size) for _, off, size in entries.values())
    assert spans[0][0] == 24 + 12 * len(SECTIONS) and spans[-1][1] == len(sample)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))  # back to back


def test_instruction_words(sample):
    off = _inst_offset(sample, 0)
    opcode, modifier, loc, reg = struct.unpack_from("<HHII", sample, off)
    assert (opcode, modifier, loc, reg) == (ISA["s.pid"].opcode, ENUMS["axis"].index("y"), 0, 1)
    off = _inst_offset(sample, 2)
    assert struct.unpack_from("<HHIIII", sample, off) == (ISA["v.add"].opcode, 0, 1, 0, 0, 1)


def test_rlist_is_count_then_registers():
    data = encode(assemble(".tile A f32[4] @0\n dma.store q1, A, r2, [r3, r4], [], [r5]\n"))
    off = _entries(data)["code"][1] + 4
    words = struct.unpack_from("<HHI" + "I" * 9, data, off)
    # q1, A (tile 0), r2, then each list as a count and its registers
    assert words == (ISA["dma.store"].opcode, 0, 0, 1, 0, 2, 2, 3, 4, 0, 1, 5)


# ---- decoder errors --------------------------------------------------------------------------
def _error(data, machine=None) -> BinaryFormatError:
    with pytest.raises(BinaryFormatError) as e:
        decode(data, machine)
    return e.value


def test_bad_magic(sample):
    e = _error(b"NOTPLATE" + sample[8:])
    assert e.offset == 0 and "magic" in str(e)


def test_unsupported_version_names_supported_one(sample):
    e = _error(_patch(sample, 8, "H", 2))
    assert e.offset == 8 and "2.0" in str(e) and "1.x" in str(e)


def test_minor_version_is_accepted(sample):
    assert disassemble(decode(_patch(sample, 10, "H", 7))) == disassemble(decode(sample))


def test_crc_mismatch(sample):
    e = _error(_patch(sample, len(sample) - 1, "B", sample[-1] ^ 1, fix_crc=False))
    assert e.offset == 16 and "crc32" in str(e)


@pytest.mark.parametrize("cut", [0, 5, 23])
def test_truncated_header(sample, cut):
    e = _error(sample[:cut])
    assert e.offset <= cut and "truncated header" in str(e)


def test_section_out_of_range(sample):
    at, off, size = _entries(sample)["code"]
    e = _error(_patch(sample, at + 4, "I", len(sample) - size + 1))
    assert e.offset == at and "outside" in str(e)


def test_truncated_instruction(sample):
    at, off, size = _entries(sample)["code"]
    e = _error(_patch(sample, at + 8, "I", size - 2))
    assert "truncated" in str(e) and off < e.offset <= off + size


def test_trailing_bytes_in_section(sample):
    at, off, size = _entries(sample)["locs"]
    data = _patch(sample, at + 8, "I", size + 1)  # eats the first byte of the next section
    assert "trailing" in str(_error(data))


def test_huge_count_fails_fast(sample):
    at, off, size = _entries(sample)["consts"]
    e = _error(_patch(sample, off, "I", 0xFFFFFFFF))
    assert e.offset == off + 4 and "truncated" in str(e)


def test_unknown_opcode(sample):
    off = _inst_offset(sample, 1)
    e = _error(_patch(sample, off, "H", 9999))
    assert e.offset == off and "unknown opcode 9999" in str(e)


def test_suffix_index_outside_its_enum(sample):
    off = _inst_offset(sample, 0)
    e = _error(_patch(sample, off + 2, "H", len(ENUMS["axis"])))
    assert e.offset == off + 2 and "axis" in str(e)
    e = _error(_patch(sample, _inst_offset(sample, 1) + 2, "H", 1 << 8))  # s.mov takes no suffixes
    assert "modifier byte 1" in str(e)


def test_register_out_of_range_for_the_machine(sample):
    off = _inst_offset(sample, 1)
    data = _patch(sample, off + INST.min_size, "I", 64)  # s.mov r64, r3
    assert decode(data).instrs[1].operands == (64, 3)  # no machine: only the ISA's limits
    e = _error(data, get_machine("plate-mini"))
    assert e.offset == off + INST.min_size and "index 64" in str(e)  # points at the operand word


def test_tile_index_out_of_range(sample):
    off = _inst_offset(sample, 2)
    e = _error(_patch(sample, off + INST.min_size + 4, "I", 2))  # v.add A, t2, B with 2 tiles
    assert e.offset == off + INST.min_size + 4 and "out of range" in str(e)


def test_location_index_out_of_range(sample):
    off = _inst_offset(sample, 2)
    e = _error(_patch(sample, off + 4, "I", 2))
    assert e.offset == off and "location index 2" in str(e)


def test_unknown_dtype_code(sample):
    off = _entries(sample)["tiles"][1] + 4
    e = _error(_patch(sample, off + TILE.offsets["dtype"], "B", len(DTYPES)))
    assert e.offset == off + 4 and "dtype code" in str(e)


def test_bad_string(sample):
    off = _entries(sample)["strings"][1] + 4  # first string: the kernel name "k"
    assert "UTF-8" in str(_error(_patch(sample, off + 4, "B", 0xFF)))
    meta = _entries(sample)["meta"][1]
    e = _error(_patch(sample, meta, "I", 999))
    assert e.offset == meta and "string index 999" in str(e)


def test_missing_and_duplicate_sections(sample):
    entries = _entries(sample)
    e = _error(_patch(sample, entries["code"][0], "I", 99))  # unknown kinds are skipped, so code is missing
    assert "missing code section" in str(e)
    e = _error(_patch(sample, entries["code"][0], "I", 5))
    assert "second locs section" in str(e)


@FAST
@given(programs())
def test_a_program_packed_straight_is_the_bytes_of_its_records(p):
    """`_encode_packed` (no dict per record) gives the bytes of `_encode_records` (one record per entry, by Layout),
    strings numbered in the same order; it packs every valid program of the kinds codegen makes."""
    packed = encoding._encode_packed(p)
    assert packed is not None and packed == encoding._encode_records(p)


def _bytes_or_error(f, program):
    try:
        return f(program)
    except Exception as e:
        return f"{type(e).__name__}: {e}"


@pytest.mark.parametrize(
    "change",
    [
        {"consts": [1 << 63]},  # beyond int64
        {"consts": [True, 2.5, "s"]},  # a bool (an Integral, not an int)
        {"consts": [_Float(2.5)]},  # a float subclass (numpy's float64 is one)
        {"consts": [_Str("s")]},
        {"consts": [object()]},
        {"labels": {"x": 5}},  # past the end
        {"labels": {"x": True}},
        {"labels": {3: 0}},  # a name that is not a str
        {"locs": [UNKNOWN_LOC, Loc("f.py", -1, 0, "x")]},  # a line that does not fit u32
        {"locs": [UNKNOWN_LOC, Loc("f.py", 1, 0, None)]},
        {"locs": [UNKNOWN_LOC, Loc("\udc80.py", 1, 0, "x")]},  # not UTF-8
        {"args": [Arg(7, "i32")]},
        {"args": [Arg("a", "u7")]},
        {"affinity": 12},
        {"sram_bytes": -64},
        {"name": _Str("k")},
    ],
)
def test_what_the_straight_packing_leaves_the_records_pack_or_reject_alike(change):
    """Off the plain path, `_encode_packed` gives up (None) and `_encode` is the verifier and `_encode_records`: the
    same bytes, or the same error naming what does not fit."""
    program = Program("k", [Inst("s.li", (), (0, 0)), Inst("halt", (), (), 1)], consts=[3], locs=[UNKNOWN_LOC, Loc()])
    program = dataclasses.replace(program, **change)
    assert encoding._encode_packed(program) is None
    records = _bytes_or_error(lambda p: encoding._encode_records(encoding.verify_once(p)), program)
    assert _bytes_or_error(encoding._encode, program) == records


def test_encode_rejects_what_it_cannot_represent():
    with pytest.raises(IsaError, match="int64"):
        encode(Program("k", [Inst("s.li", (), (0, 0))], consts=[1 << 63]))
    with pytest.raises(IsaError, match="label"):
        encode(Program("k", [Inst("halt")], labels={"x": 5}))
    with pytest.raises(IsaError, match="loc"):
        encode(Program("k", [Inst("halt", (), (), 3)]))


# ---- fuzz: only BinaryFormatError (or a program) comes out -----------------------------------
def _decodes_or_rejects(data: bytes) -> None:
    try:
        assert isinstance(decode(data), Program)
    except BinaryFormatError as e:
        assert e.offset is not None


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200) | st.binary(max_size=200).map(lambda b: MAGIC + struct.pack("<HH", 1, 0) + b))
def test_fuzz_random_bytes(data):
    _decodes_or_rejects(data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(max_instrs=6), st.data())
def test_fuzz_flips_and_truncations(p, data):
    good = bytearray(encode(p))
    kind = data.draw(st.sampled_from(["flip", "flip+crc", "truncate", "truncate+crc"]))
    if kind.startswith("flip"):
        for _ in range(data.draw(st.integers(1, 4))):
            i = data.draw(st.integers(0, len(good) - 1))
            good[i] ^= data.draw(st.integers(1, 255))
    else:
        good = good[: data.draw(st.integers(0, len(good) - 1))]
    if kind.endswith("+crc") and len(good) >= HEADER.min_size:
        struct.pack_into("<I", good, 16, zlib.crc32(bytes(good[HEADER.min_size :])))
    _decodes_or_rejects(bytes(good))


def test_load_reuses_the_program_just_encoded_unless_it_changed():
    encoding._ENCODED.clear()  # (a program an earlier test encoded to these bytes, unchanged, would be kept)
    sample = assemble(SAMPLE)
    data = encode(sample)
    assert load(data) is sample  # Triton loads the binary it just compiled: no second decode
    assert load(data, get_machine("plate-mini")) is sample
    sample.instrs.append(sample.instrs[-1])  # changed after encoding: the bytes are decoded afresh
    again = load(data)
    assert again is not sample and len(again.instrs) == len(sample.instrs) - 1
    assert decode(data) is not decode(data)  # decode itself always parses (the format tests rely on it)


def test_load_reuses_a_program_only_for_the_very_bytes_it_was_encoded_to():
    """The memo finds a binary by its length and header (the crc32 of the rest) and compares the bytes in full:
    other bytes under the same key (a crc32 collision) are decoded, not taken for the program kept."""
    from triton_plate_backend.isa import encoding

    encoding._ENCODED.clear()
    sample = assemble(SAMPLE)
    data = encode(sample)
    key = encoding._fingerprint(data)
    assert key == (len(data), data[: HEADER.min_size])
    kept = encoding._ENCODED[key]
    other = bytearray(data)
    other[-1] ^= 1  # the same length and header, another binary
    encoding._ENCODED[key] = (bytes(other), *kept[1:])
    again = load(data)
    assert again is not sample and disassemble(again) == disassemble(sample)
    encoding._ENCODED[key] = kept
    assert load(bytearray(data)) is sample  # (any bytes-like object of the same bytes)


def test_load_keeps_the_program_it_decoded_for_the_same_bytes_again():
    """A kernel loaded from Triton's cache again (a new definition of it: each test defines its kernels) gets the
    program its bytes were decoded to, unless that program changed since."""
    from triton_plate_backend.isa import encoding

    data = encode(assemble(SAMPLE))
    encoding._ENCODED.clear()  # bytes this process did not encode: a warm cache's
    first = load(data)
    assert load(data) is first and load(data, get_machine("plate-mini")) is first
    first.instrs.append(first.instrs[-1])
    again = load(data)
    assert again is not first and disassemble(again) == disassemble(assemble(SAMPLE))
    assert load(data) is again


def test_byte_identical_binaries_load_to_the_program_encoded_first():
    """Two programs compiled to the same bytes (a kernel's two specializations) load to the first, as a warm
    cache's loads of the two binaries do; not once the first changed, nor for a program whose bytes differ."""
    encoding._ENCODED.clear()
    first, second = assemble(SAMPLE), assemble(SAMPLE)
    data = encode(first)
    assert encode(second) == data
    assert load(data) is first and load(data, get_machine("plate-mini")) is first
    assert encode(second) == data and load(data) is first  # asked again: still the first
    other = assemble(SAMPLE)
    other.instrs.append(other.instrs[-1])
    assert load(encode(other)) is other  # other bytes: its own
    first.instrs.append(first.instrs[-1])  # the first changed since: the second stands for the bytes
    assert encode(second) == data and load(data) is second
    encoding._ENCODED.clear()
    decoded = load(data)  # a warm cache's: decoded once, then the same program for the same bytes
    third = assemble(SAMPLE)
    assert encode(third) == data and load(data) is decoded


def _outcome(data: bytes):
    """What decode makes of ``data``: the program's every field, or the error's type, message and offset."""
    try:
        p = decode(data)
    except (BinaryFormatError, IsaError) as e:
        return (type(e).__name__, str(e), getattr(e, "offset", None))
    return (
        p.name,
        [(i.mnemonic, i.suffixes, i.operands, i.loc) for i in p.instrs],
        p.tiles,
        [(type(c), c if c == c else "nan") for c in p.consts],
        p.locs,
        p.args,
        p.sram_bytes,
        p.labels,
        getattr(p, "tile_names", None),
        p.affinity,
    )


def _field_by_field(monkeypatch):
    """Decode as before the one-unpack paths: every record read field by field (Layout.unpack's loop)."""
    from triton_plate_backend.isa import encoding

    monkeypatch.setattr(encoding, "_unpack_fixed", lambda layout, reader, count: None)
    monkeypatch.setattr(encoding, "_UNPACK_RECORDS", {})
    for layout in (HEADER, SECTION, COUNT, TILE, *[sec.head for sec in SECTIONS if sec.head]):
        monkeypatch.setattr(layout, "whole", None)
    for sec in SECTIONS:
        if getattr(sec.record, "whole", None) is not None:
            monkeypatch.setattr(sec.record, "whole", None)
    real = encoding._decode_form
    monkeypatch.setattr(encoding, "_DECODE_FORMS", {})
    monkeypatch.setattr(
        encoding, "_decode_form", lambda op, mod: None if (f := real(op, mod)) is None else (*f[:2], None, f[3])
    )


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(programs(max_instrs=8), st.data())
def test_one_unpack_paths_decode_as_field_by_field(monkeypatch, p, data):
    good = bytearray(encode(p))
    cases = [bytes(good)]
    for _ in range(3):
        bad = bytearray(good)
        if data.draw(st.booleans()):
            i = data.draw(st.integers(0, len(bad) - 1))
            bad[i] ^= data.draw(st.integers(1, 255))
        else:
            bad = bad[: data.draw(st.integers(0, len(bad) - 1))]
        if len(bad) >= HEADER.min_size:
            struct.pack_into("<I", bad, 16, zlib.crc32(bytes(bad[HEADER.min_size :])))
        cases.append(bytes(bad))
    fast = [_outcome(c) for c in cases]
    with monkeypatch.context() as m:
        _field_by_field(m)
        slow = [_outcome(c) for c in cases]
    assert fast == slow
    assert fast[0][0] == p.name  # the good binary decodes
