"""The .pasm assembler and disassembler: the whole ISA table, round trips, pooling, and errors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_isa_encoding import FAST, programs, structure

from triton_plate_backend.errors import AsmError
from triton_plate_backend.isa.asm import (
    as_read_back,
    assemble,
    disassemble,
    disassemble_read_back,
    format_number,
    quote,
)
from triton_plate_backend.isa.encoding import bits_float, decode, encode, float_bits, tile_names
from triton_plate_backend.isa.program import Inst, Program, Tile, verify
from triton_plate_backend.isa.table import ENUMS, ISA
from triton_plate_backend.machine import get_machine
from triton_plate_backend.srcloc import Loc

MINI = get_machine("plate-mini")

BRIEF_EXAMPLE = """
; comment to end of line (also // comments)
.kernel vec_add
.arg x ptr            ; types: isa.program.ARG_TYPES
.arg n i32
.sram 16384           ; optional; else the tiles' high-water mark (13312 here)
.tile A f32[1024] @0x0                      ; named tile, row-major contiguous
.tile B f32[1024] @0x1000
.tile M i1[1024] @0x2000
.tile C f32[32,32] @0x2400
.tile At f32[32,64] strides(1,32) @0x0      // explicit element strides (0 = broadcast)
.tile Bt f32[64,32] @0x0
.loc 1 "kernels.py" 23 31 "x"               ; location table entry 1 (file line col name); 0 = unknown
top:                                        ; label
    s.pid.x r0
    s.li r1, 1024
    s.mul.i32 r2, r0, r1
    dma.load q0, A, r5, [r6], [r7], [r8], 0.0   @1      ; trailing @N = location index N
    dma.wait q0
    v.cmpf.olt M, A, B
    m.mma.tf32 C, At, Bt
    bnz r3, top
    halt
"""


def test_brief_example():
    p = assemble(BRIEF_EXAMPLE, MINI)
    assert p.name == "vec_add" and [(a.name, a.type) for a in p.args] == [("x", "ptr"), ("n", "i32")]
    assert p.sram_bytes == 16384 and tile_names(p) == ["A", "B", "M", "C", "At", "Bt"]
    assert p.tiles[4] == Tile(0, "f32", (32, 64), (1, 32)) and p.tiles[0].strides == (1,)
    assert p.locs[1] == Loc("kernels.py", 23, 31, "x") and p.labels == {"top": 0}
    assert p.instrs[0] == Inst("s.pid", ("x",), (0,))
    assert p.instrs[3] == Inst("dma.load", (), (0, 0, 5, (6,), (7,), (8,), 1), loc=1)
    assert p.instrs[5] == Inst("v.cmpf", ("olt",), (2, 0, 1)) and p.instrs[7] == Inst("bnz", (), (3, 0))
    assert p.consts == [1024, 0.0] and type(p.consts[1]) is float
    text = disassemble(p)
    assert "    dma.load q0, A, r5, [r6], [r7], [r8], 0.0  @1\n" in text
    assert ".tile At f32[32,64] strides(1,32) @0x0\n" in text and ".sram 16384\n" in text
    assert disassemble(assemble(text, MINI)) == text


def test_every_isa_row_and_suffix_value_assembles_and_round_trips():
    operand_text = {"r": "r1", "q": "q2", "t": "A", "imm": "7", "str": '"hi"', "label": "top", "rlist": "[r1, r2]"}
    lines, expected = [".kernel table", ".tile A f32[4] @0x0", "top:"], []
    for row in ISA.values():
        for j in range(max([len(ENUMS[e]) for e in row.suffixes], default=1)):
            suffixes = tuple(ENUMS[e][j % len(ENUMS[e])] for e in row.suffixes)
            ops = ", ".join(operand_text[od.kind] for od in row.operands)
            lines.append("    " + ".".join((row.mnemonic, *suffixes)) + (f" {ops}" if ops else ""))
            expected.append((row.mnemonic, suffixes))
    text = "\n".join(lines) + "\n"
    p = assemble(text)
    assert [(i.mnemonic, i.suffixes) for i in p.instrs] == expected
    assert {i.mnemonic for i in p.instrs} == set(ISA)
    for ins in p.instrs:
        kinds = [od.kind for od in ins.row.operands]
        assert len(ins.operands) == len(kinds)
        for kind, v in zip(kinds, ins.operands):
            want = {"r": 1, "q": 2, "t": 0, "label": 0, "rlist": (1, 2)}.get(kind)
            assert v == want if want is not None else p.consts[v] == {"imm": 7, "str": "hi"}[kind]
    assert disassemble(p) == text  # the text above is canonical
    q = decode(encode(p))
    assert structure(q) == structure(p) and disassemble(q) == text


def _meaning(p: Program):
    """Each instruction with its operands resolved to what they denote (constants by type and bits)."""

    def value(kind, v):
        if kind in ("imm", "str"):
            c = p.consts[v]
            return type(c).__name__, float_bits(c) if isinstance(c, float) else c
        return p.tiles[v] if kind == "t" else v

    return [
        (i.mnemonic, i.suffixes, tuple(value(od.kind, v) for od, v in zip(i.row.operands, i.operands)), p.locs[i.loc])
        for i in p.instrs
    ]


@FAST
@given(programs())
def test_text_round_trip_keeps_meaning_and_reprints_identically(p):
    text = disassemble(p)
    q = assemble(text)
    assert disassemble(q) == text
    assert _meaning(q) == _meaning(p)
    assert (q.name, q.args, q.locs, q.sram_bytes) == (p.name, p.args, p.locs, p.sram_bytes)
    assert all(q.labels[name] == pc for name, pc in p.labels.items())


@FAST
@given(programs())
def test_the_text_and_read_back_found_in_one_walk_are_disassemblys_and_the_texts_assembly(p):
    text, back = disassemble_read_back(p)
    assert text == disassemble(p)
    assert back == as_read_back(p) and back.tile_names == as_read_back(p).tile_names
    q = assemble(text)  # the labels and tile names the text declares
    assert (back.labels, tile_names(back)) == (q.labels, tile_names(q))


def test_constants_pool_by_type_and_bits():
    p = assemble("""
        .tile A f32[4] @0
        v.fill A, 0.0
        v.fill A, -0.0
        v.fill A, 0.0
        v.fill A, 0
        v.fill A, nan
        v.fill A, nan(0x7ff0000000000001)
        v.fill A, -nan
        s.li r1, 0x10
        s.li r1, 16
        s.li r1, 0xffffffffffffffff
        s.li r1, 1e3
        s.li r1, -inf
    """)
    bits = [float_bits(c) if isinstance(c, float) else c for c in p.consts]
    assert bits == [
        0,
        1 << 63,
        0,
        0x7FF8000000000000,
        0x7FF0000000000001,
        0xFFF8000000000000,
        16,
        -1,
        float_bits(1000.0),
        float_bits(float("-inf")),
    ]
    assert [type(c) for c in p.consts[:3]] == [float, float, int]
    assert [i.operands[1] for i in p.instrs] == [0, 1, 0, 2, 3, 4, 5, 6, 6, 7, 8, 9]
    text = disassemble(p)
    for literal in (
        "0.0",
        "-0.0",
        " 0\n",
        " nan\n",
        "nan(0x7ff0000000000001)",
        "-nan",
        " 16\n",
        " -1\n",
        "1000.0",
        "-inf",
    ):
        assert literal in text


@pytest.mark.parametrize("value", [0.1, -2.5e-300, 1e16, 5e-324, float("inf"), bits_float(0x7FF4000000000000)])
def test_format_number_reads_back_bit_exact(value):
    p = assemble(f".tile A f32[1] @0\nv.fill A, {format_number(value)}")
    assert float_bits(p.consts[0]) == float_bits(value)


def test_strings_comments_and_escapes():
    p = assemble('dbg.printr "a;b // c, \\"q\\" \\\\ \\n\\t\\u{1f600}", r1 ; real comment // here')
    assert p.consts == ['a;b // c, "q" \\ \n\t\U0001f600']
    assert quote("a\x00\u2028é\r") == '"a\\u{0}\\u{2028}é\\r"'


@given(
    st.text(st.characters(max_codepoint=0x3000), max_size=12) | st.text(st.sampled_from(' "\\~a\x7f\x1f'), max_size=6)
)
def test_a_string_is_quoted_bare_exactly_when_it_is_printable_without_quote_or_backslash(s):
    bare = s.isprintable() and '"' not in s and "\\" not in s
    assert (quote(s) == f'"{s}"') == bare


def test_labels_on_their_own_line_and_before_instructions():
    p = assemble("a: b: halt\nc:\n  jmp a\nend:")
    assert p.labels == {"a": 0, "b": 0, "c": 1, "end": 2}
    assert disassemble(p).endswith("a:\nb:\n    halt\nc:\n    jmp a\nend:\n")


def test_unnamed_branch_targets_get_fresh_names():
    p = verify(Program("k", [Inst("jmp", (), (1,)), Inst("jmp", (), (2,)), Inst("halt")], labels={"L1": 0}))
    text = disassemble(p)
    assert "L1:\n    jmp L1_\nL1_:\n    jmp L2\nL2:\n    halt" in text
    assert disassemble(assemble(text)) == text


def test_tile_names_fall_back_to_indices_and_sram_prints_only_when_not_implied():
    p = verify(Program("k", [Inst("v.neg", (), (1, 0))], [Tile(0, "f16", (2, 3)), Tile(64, "i8", (4,), (0,))]))
    text = disassemble(p)
    assert ".tile t0 f16[2,3] @0x0\n.tile t1 i8[4] strides(0) @0x40\n" in text and "    v.neg t1, t0\n" in text
    assert ".sram" not in text
    p.sram_bytes = 4096
    assert ".sram 4096\n" in disassemble(p)


def test_quoted_names():
    text = '.kernel "my kernel"\n.arg "x y" f32\n'
    p = assemble(text)
    assert p.name == "my kernel" and p.args[0].name == "x y" and disassemble(p) == text


# ---- errors ----------------------------------------------------------------------------------
TILES = ".tile A f32[4] @0\n"
ERRORS = [
    # (text, machine, message part, line, col)
    ("s.lii r1, 1", None, "unknown mnemonic 's.lii'; did you mean s.li", 1, 1),
    ("    v.addd A, A, A", None, "did you mean v.add", 1, 5),
    ("s.pid r0", None, "s.pid takes 1 suffix(es) (s.pid.axis), got 0", 1, 1),
    ("s.pid.w r0", None, "'w' is not a axis suffix", 1, 7),
    ("s.li.i32 r0, 1", None, "takes 0 suffix", 1, 1),
    ("s.cmpi.i32.slt r0, r1, r2", None, "'i32' is not a ipred suffix", 1, 8),
    ("s.add.i32 r1, r2", None, "expected ',' and operand b:r", 1, 17),
    ("s.add.i32 r1, r2, r3, r4", None, "too many operands (form: s.add d:r, a:r, b:r", 1, 21),
    ("s.add.i32 r1, r2, x3", None, "operand b: expected a scalar register like r3, got 'x3'", 1, 19),
    ("dma.wait r1", None, "expected a DMA token register", 1, 10),
    (TILES + "v.add A, A, X", None, "undefined tile 'X'", 2, 13),
    ("top:\njmp tpo", None, "undefined label 'tpo'; did you mean top", 2, 5),
    ("halt @3", None, "undefined location @3", 1, 7),
    ("a:\n a:", None, "duplicate label 'a' (first declared on line 1)", 2, 2),
    (TILES + ".tile A f32[4] @0x10", None, "duplicate tile 'A'", 2, 7),
    ("s.li r1, 1.2.3", None, "bad number literal '1.2.3'", 1, 10),
    ("s.li r1, 0x", None, "bad number literal", 1, 10),
    ("s.li r1, 99999999999999999999999", None, "does not fit 64 bits", 1, 10),
    ("s.li r1, nan(0x1)", None, "not the bit pattern of a float64 NaN", 1, 14),
    ("s.mov r64, r1", MINI, "register r64 out of range (r0..r63)", 1, 7),
    ("dma.wait q16", MINI, "register q16 out of range", 1, 10),
    ("dma.store q0, A, r1, [r1 r2], [], []", None, "expected ',' or ']'", 1, 26),
    (".tile A f32[9000] @0\n\nv.neg A, A", MINI, "a vector instruction covers at most 8192", 3, 1),
    (TILES + "m.mma.ieee A, A, A", MINI, "matrix operands must be 2-D", 2, 1),
    (
        ".tile C f32[32,32] @0\n.tile A bf16[32,2048] @0x1000\n.tile B bf16[2048,32] @0x21000\nm.mma.ieee C, A, B",
        MINI,
        "32x32x2048 exceeds the matrix unit's K <= 1024 per instruction",
        4,
        1,
    ),
    (".tile A f32[4] @0x100000", MINI, "outside the core's", 1, 1),
    ('dbg.printr "abc, r1', None, "unterminated string", 1, 12),
    ('dbg.printr "a\\q", r1', None, "bad escape \\q", 1, 14),
    ("s.li r1, 1 / 2", None, "unexpected character '/'", 1, 12),
    (".tile A f99[4] @0", None, "element type 'f99' is not one of", 1, 9),
    (".tile A f32[4] strides(1,2) @0", None, "1 dims but 2 strides", 1, 7),
    (".tile A f32[4]", None, "expected '@' and the SRAM byte address", 1, 15),
    (".arg x ptr32", None, "argument type 'ptr32' is not one of", 1, 8),
    (".fo x", None, "unknown directive .fo", 1, 1),
    (".kernel a\n.kernel b", None, "second .kernel directive", 2, 1),
    ('.loc 2 "f" 1 1', None, "expected .loc 1 next", 1, 6),
    (".sram -4", None, "an integer literal >= 0", 1, 7),
    ("1abc: halt", None, "label '1abc' is not an identifier", 1, 1),
]


@pytest.mark.parametrize("text, machine, message, line, col", ERRORS)
def test_errors_say_what_and_where(text, machine, message, line, col):
    with pytest.raises(AsmError) as info:
        assemble(text, machine)
    e = info.value
    assert message in str(e)
    assert (e.line, e.col) == (line, col)
    source = text.split("\n")[line - 1]
    assert f"\n    {source}\n    {' ' * (col - 1)}^" in str(e)  # the caret points at the column


VOCAB = [
    *ISA,
    "s.pid.x",
    "s.cmpi.slt.i32",
    "m.mma.tf32",
    ".kernel",
    ".arg",
    ".sram",
    ".tile",
    ".loc",
    "A",
    "top",
    "r1",
    "r99",
    "q0",
    "q99",
    "ptr",
    "f32",
    "f32[4]",
    "[",
    "]",
    "(",
    ")",
    ",",
    ":",
    "@",
    "@1",
    "0x10",
    "-3",
    "1.5",
    "1e400",
    "nan",
    "nan(0x1)",
    "inf",
    "strides",
    '"s"',
    '"a\\q"',
    '"\\u{d800}"',
    '"',
    ";",
    "//",
    "/",
    "\t",
    "é",
]


@FAST
@given(st.lists(st.lists(st.sampled_from(VOCAB), max_size=8).map(" ".join), max_size=6).map("\n".join))
def test_fuzz_text_only_raises_asm_error(text):
    for machine in (None, MINI):
        try:
            assert isinstance(assemble(text, machine), Program)
        except AsmError as e:
            assert e.line is None or 1 <= e.line <= text.count("\n") + 1


def test_declared_sram_below_the_tiles_is_rejected():
    with pytest.raises(AsmError, match="declares 12288 SRAM bytes but its tiles reach byte 13312"):
        assemble(BRIEF_EXAMPLE.replace(".sram 16384", ".sram 12288"), MINI)
