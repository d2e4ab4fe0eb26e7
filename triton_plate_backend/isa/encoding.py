"""The PLATE binary (.pbin): Program <-> bytes, little-endian.

The format is described ONCE, as data: every record kind is a `Layout`, a list of (field, struct
code) pairs, and `Layout.pack` / `Layout.unpack` derive both directions from it, so the encoder and
the decoder cannot disagree. A code ``"I*n"`` is an array of u32 whose length is the earlier field
``n`` (``"s*n"``: n raw bytes); the encoder fills such count fields from the array's length.

File: HEADER, then ``nsections`` SECTION entries, then the sections' payloads. The header's crc32
covers every byte after the header. A section payload is its optional head record, a u32 count,
then that many records (SECTIONS says which). Every string (kernel, argument, file, variable,
label and tile names, string constants) lives in the ``strings`` section and is referenced by
index. Readers skip section kinds they do not know (a minor version may add some).
"""

from __future__ import annotations

import collections
import functools
import numbers
import re
import struct
import zlib
from dataclasses import dataclass

from ..errors import BinaryFormatError, IsaError
from ..srcloc import Loc
from .program import _KIND_CODES, ARG_TYPES, Arg, Inst, Program, Tile, verify
from .table import BY_OPCODE, DTYPES, ENUMS, OPERAND_KINDS
from .verified import content, passed, verify_once

try:
    from . import _isawalk
except ImportError:  # not built (setup.py build_ext): the code section packs in Python
    _isawalk = None

MAGIC = b"PLATEBIN"
VERSION = (1, 0)  # (major, minor): a reader accepts its own major and any minor
# header flags: none are defined in 1.0; written as 0 and ignored on read


class Layout:
    """One record kind: named fields, each a struct code (little-endian), possibly an array."""

    def __init__(self, name: str, fields: tuple[tuple[str, str], ...]):
        self.name, self.fields = name, fields
        self.counts: dict[str, str] = {}  # count field -> the array it counts (filled on pack)
        self.offsets: dict[str, int] = {}  # byte offset of each field before the first array
        self.min_size, fixed = 0, True
        self._steps = []
        for fname, code in fields:
            elem, _, count = code.partition("*")
            st = struct.Struct("<" + elem)
            if count:
                self.counts.setdefault(count, fname)
                fixed = False
            else:
                if fixed:
                    self.offsets[fname] = self.min_size
                self.min_size += st.size
            self._steps.append((fname, code, elem, st, count))
        # a layout without arrays packs each record with one Struct (pack's bytes; pack itself says what does not fit)
        self.names = tuple(f for f, _ in fields)
        self.whole = struct.Struct("<" + "".join(c for _, c in fields)) if fixed else None
        self.flat = None if fixed else self._flat_plan()
        self._flat_structs: dict[int, struct.Struct] = {}  # n -> the Struct of a record whose arrays have n entries

    def _flat_plan(self):
        """(fields before the count, the first array, its arrays and their codes, the codes up to the count) where
        one count field, after the scalar fields, counts every array, which stand last: a record of n entries
        is then one Struct (`pack_flat`); else None."""
        names = [f for f, *_ in self._steps]
        counted = [(f, elem) for f, _code, elem, _st, count in self._steps if count]
        counts = {count for *_, count in self._steps if count}
        if len(counts) != 1 or next(iter(counts)) not in names:
            return None
        at = names.index(next(iter(counts)))
        if names[at + 1 :] != [f for f, _ in counted] or any(self._steps[i][4] for i in range(at + 1)):
            return None
        head = "".join(code for _f, code, *_ in self._steps[: at + 1])
        return tuple(names[:at]), tuple(counted), head

    def pack_flat(self, records) -> bytes | None:
        """The bytes of `pack` over the records, each with one Struct, or None where a record is off that path (a
        missing field, arrays of unequal lengths, a value that does not fit: `pack` then says what)."""
        if self.flat is None:
            return None
        before, counted, head = self.flat
        structs, out = self._flat_structs, []
        try:
            if not before and len(counted) == 1 and counted[0][1] == "s":  # (strings: the size, then the bytes)
                size, f = struct.Struct("<" + head), counted[0][0]
                for r in records:
                    v = r[f]
                    if type(v) is not bytes:
                        return None
                    out.append(size.pack(len(v)))
                    out.append(v)
                return b"".join(out)
            for r in records:
                n = len(r[counted[0][0]])
                vals = list(map(r.__getitem__, before))
                vals.append(n)
                for f, elem in counted:
                    v = r[f]
                    if len(v) != n:
                        return None
                    if elem == "s":
                        vals.append(v)
                    else:
                        vals.extend(v)
                st = structs.get(n)
                if st is None:
                    st = structs[n] = struct.Struct("<" + head + "".join(f"{n}{elem}" for _, elem in counted))
                out.append(st.pack(*vals))
        except (struct.error, TypeError, KeyError):
            return None
        return b"".join(out)

    def pack(self, values: dict) -> bytes:
        out, seen = [], {}
        for fname, code, elem, st, count in self._steps:
            v = len(values[self.counts[fname]]) if fname in self.counts else values[fname]
            seen[fname] = v
            if count and len(v) != seen[count]:
                raise IsaError(f"{self.name}: {fname} has {len(v)} entries but {count} = {seen[count]}")
            try:
                if not count:
                    out.append(st.pack(v))
                else:
                    out.append(bytes(v) if elem == "s" else struct.pack(f"<{len(v)}{elem}", *v))
            except (struct.error, TypeError) as e:
                raise IsaError(f"{self.name}: field {fname} = {v!r} does not fit its encoding {code!r} ({e})") from None
        return b"".join(out)

    def unpack(self, reader: _Reader) -> dict:
        whole = self.whole
        if whole is not None and whole.size <= reader.end - reader.pos:  # no arrays, and it fits: one unpack
            rec = {"_offset": reader.pos}
            rec.update(zip(self.names, whole.unpack_from(reader.data, reader.pos)))
            reader.pos += whole.size
            return rec
        rec = {"_offset": reader.pos}
        for fname, _code, elem, st, count in self._steps:
            if not count:
                rec[fname] = st.unpack(reader.take(st.size, f"{self.name} field {fname}"))[0]
            else:
                n = rec[count]
                raw = reader.take(n * st.size, f"{self.name} field {fname} ({n} entries)")
                rec[fname] = bytes(raw) if elem == "s" else struct.unpack(f"<{n}{elem}", raw)
        return rec

    def at(self, rec: dict, fname: str) -> int:
        """File offset of field fname of a record unpacked by this layout."""
        return rec["_offset"] + self.offsets.get(fname, 0)


class _Reader:
    """A cursor over data[start:end] that reports truncation with the byte offset."""

    def __init__(self, data: bytes, start: int, end: int):
        self.data, self.pos, self.end = data, start, end

    def take(self, n: int, what: str) -> bytes:
        if n > self.end - self.pos:
            raise BinaryFormatError(f"truncated {what}: needs {n} bytes, {self.end - self.pos} left", offset=self.pos)
        self.pos += n
        return self.data[self.pos - n : self.pos]


# ---- the format, as data ---------------------------------------------------------------------
HEADER = Layout(
    "header", (("magic", "8s"), ("major", "H"), ("minor", "H"), ("flags", "I"), ("crc32", "I"), ("nsections", "I"))
)
SECTION = Layout("section entry", (("kind", "I"), ("offset", "I"), ("size", "I")))
COUNT = Layout("record count", (("count", "I"),))
STRING = Layout("string", (("size", "I"), ("utf8", "s*size")))
META = Layout("meta", (("name", "I"), ("sram_bytes", "I")))  # name: string index
ARG = Layout("argument", (("name", "I"), ("type", "B")))  # type: index in ARG_TYPES
CONST = Layout("constant", (("tag", "B"), ("bits", "Q")))  # tag: index in CONST_TAGS
TILE = Layout("tile", (("addr", "I"), ("dtype", "B"), ("rank", "B"), ("shape", "I*rank"), ("strides", "i*rank")))
LOC = Layout("location", (("file", "I"), ("line", "I"), ("col", "I"), ("name", "I")))
AFFINITY = Layout("affinity", (("text", "I"),))  # text: string index of the footprint (isa/footprint.py)
LABEL = Layout("label", (("kind", "B"), ("name", "I"), ("value", "I")))  # kind: index in LABEL_KINDS
INST = Layout("instruction", (("opcode", "H"), ("modifier", "H"), ("loc", "I")))
WORD = Layout("operand", (("index", "I"),))
RLIST = Layout("register list", (("count", "I"), ("regs", "I*count")))
OPERAND = {kind: RLIST if kind == "rlist" else WORD for kind in OPERAND_KINDS}
CONST_TAGS = ("int", "float", "str")  # int: int64 bits; float: float64 bits; str: string index
LABEL_KINDS = ("label", "tile")  # label: value = pc; tile: the name of tile `value`
MASK64 = (1 << 64) - 1


class _InstructionLayout:
    """An instruction: INST, then each operand of its ISA row in order, laid out by OPERAND[kind]."""

    name, min_size = "instruction", INST.min_size

    def pack(self, values: dict) -> bytes:
        kinds = [od.kind for od in BY_OPCODE[values["opcode"]].operands]
        return INST.pack(values) + b"".join(OPERAND[k].pack(v) for k, v in zip(kinds, values["operands"]))

    def unpack(self, reader: _Reader) -> dict:
        rec = INST.unpack(reader)
        row = BY_OPCODE.get(rec["opcode"])
        if row is None:
            raise BinaryFormatError(
                f"unknown opcode {rec['opcode']} (the ISA has 0..{len(BY_OPCODE) - 1})", offset=rec["_offset"]
            )
        rec["row"] = row
        rec["operands"] = [OPERAND[od.kind].unpack(reader) for od in row.operands]
        return rec


@dataclass(frozen=True)
class Section:
    kind: int
    name: str
    head: Layout | None  # one record before the count
    record: Layout | _InstructionLayout
    required: bool = True


SECTIONS = (
    Section(1, "strings", None, STRING),
    Section(2, "meta", META, ARG),
    Section(3, "consts", None, CONST),
    Section(4, "tiles", None, TILE),
    Section(5, "locs", None, LOC),
    Section(6, "code", None, _InstructionLayout()),
    Section(7, "labels", None, LABEL, required=False),
    Section(8, "affinity", None, AFFINITY, required=False),  # absent or empty: the footprint is unknown
)
SECTION_BY_KIND = {s.kind: s for s in SECTIONS}


def float_bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def bits_float(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def tile_names(program: Program) -> list[str] | None:
    """The names the tiles were declared with (kept by the assembler and the binary), or None.

    Empty or mismatched names (e.g. compiler output) print as t0..tN."""
    names = getattr(program, "tile_names", None)
    if names and len(names) == len(program.tiles) and not [n for n in names if not isinstance(n, str)]:
        return list(names)
    return None


# ---- encode ----------------------------------------------------------------------------------
# Binaries encoded (or loaded) in this process and the programs they came from (or decoded to). Triton
# compiles a kernel and then loads the bytes it just wrote, and loads a cached kernel's bytes again for
# each new definition of it: load() hands that program back (if unchanged) instead of parsing and
# verifying it again. Programs are not changed after finalize; the snapshot check covers anyone who does.
# Keyed by `_fingerprint` (the length and the header, which holds the crc32 of the rest), the bytes kept
# and compared in full on a hit: a key of the whole binary hashed every 35-100 KB binary once more.
_ENCODED: collections.OrderedDict[tuple[int, bytes], tuple[bytes, Program, tuple]] = collections.OrderedDict()
_ENCODED_KEEP = 64


def _snapshot(program: Program) -> tuple:
    """Everything of a program that its binary holds."""
    names = tuple(tile_names(program) or ())
    return content(program), program.name, tuple(program.labels.items()), names, program.affinity


def encode(program: Program) -> bytes:
    """Program -> .pbin bytes. Verifies the program first (IsaError if it is not valid)."""
    data = _encode(program)
    _remember(data, program)
    return data


def _remember(data: bytes, program: Program) -> None:
    """Keep ``program`` as the one ``data`` stands for (``load``), the oldest kept forgotten past _ENCODED_KEEP.
    Where another program, unchanged, already stands for these very bytes (a kernel's other specialization
    compiled to the same binary), that one stays: its loads get one program, as a warm cache's loads of the two
    binaries do (decode, then the same bytes again), so the analyses kept per program (sim/operands.py's
    decisions, the per-program derivations) serve both."""
    key = _fingerprint(data)
    snapshot = _snapshot(program)
    known = _ENCODED.get(key)
    if known is not None and known[1] is not program and known[0] == data and known[2] == snapshot:
        if _snapshot(known[1]) == snapshot:  # the same content as the bytes say, and unchanged since
            program = known[1]
    _ENCODED[key] = (data, program, snapshot)
    _ENCODED.move_to_end(key)
    while len(_ENCODED) > _ENCODED_KEEP:
        _ENCODED.popitem(last=False)


def _fingerprint(data: bytes) -> tuple[int, bytes]:
    """A binary's key in _ENCODED: its length and header bytes (a crc32 of everything after the header)."""
    return len(data), data[: HEADER.min_size]


def _encode(program: Program) -> bytes:
    verify_once(program)
    packed = _encode_packed(program)
    return packed if packed is not None else _encode_records(program)


def _encode_records(program: Program) -> bytes:
    """The binary through one record (a dict) per entry and its Layout: what `_encode_packed` packs straight, and
    what says which value does not fit where that one gives up."""
    strings: dict[str, int] = {}

    def s(text: str) -> int:
        return strings.setdefault(text, len(strings))

    n = len(program.instrs)
    for name, pc in program.labels.items():
        if not isinstance(pc, int) or not 0 <= pc <= n:
            raise IsaError(f"label {name!r} points at pc {pc}, outside the program's 0..{n}")
    labels = [{"kind": 0, "name": s(name), "value": pc} for name, pc in program.labels.items()]
    labels += [{"kind": 1, "name": s(name), "value": i} for i, name in enumerate(tile_names(program) or ())]
    args = [dict(name=s(a.name), type=ARG_TYPES.index(a.type)) for a in program.args]
    tiles = [dict(addr=t.addr, dtype=DTYPES.index(t.dtype), shape=t.shape, strides=t.strides) for t in program.tiles]
    locs = [dict(file=s(loc.file), line=loc.line, col=loc.col, name=s(loc.name)) for loc in program.locs]
    records = {
        "meta": (dict(name=s(program.name), sram_bytes=program.sram_bytes), args),
        "consts": (None, [_const_record(c, s) for c in program.consts]),
        "tiles": (None, tiles),
        "locs": (None, locs),
        "labels": (None, labels),
        "affinity": (None, [{"text": s(program.affinity)}] if program.affinity else []),
    }
    payloads = {sec.name: _pack_section(sec, *records[sec.name]) for sec in SECTIONS if sec.name in records}
    payloads["code"] = _pack_code(program.instrs)
    payloads["strings"] = _pack_section(SECTION_BY_KIND[1], None, [{"utf8": _utf8(t)} for t in strings])
    table, body, offset = [], [], HEADER.min_size + SECTION.min_size * len(SECTIONS)
    for sec in SECTIONS:
        table.append(SECTION.pack({"kind": sec.kind, "offset": offset, "size": len(payloads[sec.name])}))
        body.append(payloads[sec.name])
        offset += len(payloads[sec.name])
    rest = b"".join(table + body)
    major, minor = VERSION
    crc, nsections = zlib.crc32(rest), len(SECTIONS)
    return HEADER.pack(dict(magic=MAGIC, major=major, minor=minor, flags=0, crc32=crc, nsections=nsections)) + rest


_LABEL_ST, _ARG_ST, _CONST_ST, _LOC_ST, _META_ST = (x.whole for x in (LABEL, ARG, CONST, LOC, META))
_SECTION_ST, _HEADER_ST = SECTION.whole, HEADER.whole
_TILE_STS: dict[int, struct.Struct] = {}  # rank -> a tile record's Struct (TILE's head, then rank shapes and strides)


def _encode_packed(program: Program) -> bytes | None:
    """`_encode`'s bytes packed straight from the program, the strings numbered in the same order, without a dict
    per record and `Layout.pack` per section and count (a small kernel's encode was ~0.7 M instructions, most of
    them those); None where anything is off the plain path (a value that does not fit, a string that is not a
    str, unequal tile arrays, an odd constant): `_encode_records` then packs it, or says what does not fit."""
    strings: dict[str, int] = {}
    s = strings.setdefault
    u32 = _U32.pack
    try:
        n = len(program.instrs)
        labels = []
        for name, pc in program.labels.items():
            if type(pc) is not int or not 0 <= pc <= n or type(name) is not str:
                return None
            labels.append(_LABEL_ST.pack(0, s(name, len(strings)), pc))
        for i, name in enumerate(tile_names(program) or ()):
            labels.append(_LABEL_ST.pack(1, s(name, len(strings)), i))
        args = []
        for a in program.args:
            if type(a.name) is not str:
                return None
            args.append(_ARG_ST.pack(s(a.name, len(strings)), ARG_TYPES.index(a.type)))
        tiles = []
        for t in program.tiles:
            rank = len(t.shape)
            if len(t.strides) != rank:
                return None
            st = _TILE_STS.get(rank)
            if st is None:
                st = _TILE_STS[rank] = struct.Struct(f"<IBB{rank}I{rank}i")
            tiles.append(st.pack(t.addr, DTYPES.index(t.dtype), rank, *t.shape, *t.strides))
        locs = []
        for loc in program.locs:
            if type(loc.file) is not str or type(loc.name) is not str:
                return None
            f = s(loc.file, len(strings))
            locs.append(_LOC_ST.pack(f, loc.line, loc.col, s(loc.name, len(strings))))
        if type(program.name) is not str:
            return None
        meta = _META_ST.pack(s(program.name, len(strings)), program.sram_bytes)
        consts = []
        for c in program.consts:
            if type(c) is int and -(1 << 63) <= c < 1 << 63:
                consts.append(_CONST_ST.pack(0, c & MASK64))
            elif type(c) is str:
                consts.append(_CONST_ST.pack(2, s(c, len(strings))))
            elif type(c) is float:
                consts.append(_CONST_ST.pack(1, float_bits(c)))
            else:
                return None
        affinity = program.affinity
        if affinity and type(affinity) is not str:
            return None
        affinity = [u32(s(affinity, len(strings)))] if affinity else []
        code = _pack_code(program.instrs)
        texts = []
        for text in strings:
            data = text.encode("utf-8")
            texts.append(u32(len(data)))
            texts.append(data)
    except (struct.error, TypeError, ValueError, AttributeError, OverflowError):
        return None
    payloads = (  # in SECTIONS' order: strings, meta, consts, tiles, locs, code, labels, affinity
        b"".join([u32(len(strings)), *texts]),
        b"".join([meta, u32(len(args)), *args]),
        b"".join([u32(len(consts)), *consts]),
        b"".join([u32(len(tiles)), *tiles]),
        b"".join([u32(len(locs)), *locs]),
        code,
        b"".join([u32(len(labels)), *labels]),
        b"".join([u32(len(affinity)), *affinity]),
    )
    table, offset = [], HEADER.min_size + SECTION.min_size * len(SECTIONS)
    for sec, payload in zip(SECTIONS, payloads):
        table.append(_SECTION_ST.pack(sec.kind, offset, len(payload)))
        offset += len(payload)
    rest = b"".join([*table, *payloads])
    major, minor = VERSION
    return _HEADER_ST.pack(MAGIC, major, minor, 0, zlib.crc32(rest), len(SECTIONS)) + rest


def _pack_section(sec: Section, head: dict | None, records: list[dict]) -> bytes:
    whole = getattr(sec.record, "whole", None)
    body = None
    if whole is not None:
        names = sec.record.names
        try:
            body = b"".join([whole.pack(*[r[f] for f in names]) for r in records])
        except (struct.error, TypeError, KeyError):
            body = None  # the record that does not fit: Layout.pack names it
    elif getattr(sec.record, "flat", None) is not None:  # arrays of one count (strings, tiles): a Struct a record
        body = sec.record.pack_flat(records)
    if body is None:
        body = b"".join(sec.record.pack(r) for r in records)
    return (sec.head.pack(head) if sec.head else b"") + COUNT.pack({"count": len(records)}) + body


def _utf8(text: str) -> bytes:
    if not isinstance(text, str):
        raise IsaError(f"expected a string (name, file or constant), got {text!r}")
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise IsaError(f"string {text!r} cannot be encoded as UTF-8: {e}") from None


def _const_record(c, s) -> dict:
    if type(c) is int and -(1 << 63) <= c < 1 << 63:  # (the common case, without the ABCs' instance checks below)
        return {"tag": 0, "bits": c & MASK64}
    if isinstance(c, str):
        return {"tag": 2, "bits": s(c)}
    if isinstance(c, numbers.Integral):
        if not -(1 << 63) <= int(c) < 1 << 63:
            raise IsaError(f"integer constant {c} does not fit int64")
        return {"tag": 0, "bits": int(c) & MASK64}
    if isinstance(c, numbers.Real):
        return {"tag": 1, "bits": float_bits(float(c))}
    raise IsaError(f"constant {c!r} is not an int, float or str")


_U32 = struct.Struct("<I")
_INST_HEAD = struct.Struct("<HHI")  # INST's fields: opcode, modifier, loc


def _pack_code(instrs) -> bytes:
    """The code section's payload, packed straight from the instructions: the bytes of
    _pack_section over _inst_record's records (which a value that does not fit falls back to, for
    its error message), without building them; in C (`_isawalk.pack_code`) when it is built and knows every
    instruction's form (this walk fills them)."""
    if _isawalk is not None and type(instrs) is list:
        got = _isawalk.pack_code(instrs, _CODE_KINDS)
        if got is not None:
            return got
    try:
        out = [_U32.pack(len(instrs))]
        for ins in instrs:
            key = (ins.mnemonic, ins.suffixes)
            form = _CODE_FORMS.get(key) or _code_form(key, ins.row)
            if form[0] is not None:  # no register list: the whole record in one pack
                out.append(form[0].pack(form[1], form[2], ins.loc, *ins.operands))
                continue
            out.append(_INST_HEAD.pack(form[1], form[2], ins.loc))
            for od, v in zip(ins.row.operands, ins.operands):
                out.append(struct.pack(f"<I{len(v)}I", len(v), *v) if od.kind == "rlist" else _U32.pack(v))
        return b"".join(out)
    except (struct.error, TypeError):
        return _pack_section(SECTION_BY_KIND[6], None, [_inst_record(ins) for ins in instrs])


_CODE_FORMS: dict[tuple, tuple] = {}  # (mnemonic, suffixes) -> (Struct of the whole record or None, opcode, modifier)
_CODE_KINDS: dict[tuple, tuple] = {}  # (mnemonic, suffixes) -> (opcode, modifier, operand kind codes): pack_code's


def _code_form(key: tuple, row) -> tuple:
    """What _pack_code packs of every instruction with this mnemonic and these suffixes, once per pair."""
    modifier = sum(ENUMS[e].index(v) << (8 * k) for k, (e, v) in enumerate(zip(row.suffixes, key[1])))
    whole = None if any(od.kind == "rlist" for od in row.operands) else struct.Struct(f"<HHI{len(row.operands)}I")
    _CODE_FORMS[key] = form = (whole, row.opcode, modifier)
    _CODE_KINDS[key] = (row.opcode, modifier, bytes(_KIND_CODES.get(od.kind, len(_KIND_CODES)) for od in row.operands))
    return form


def _inst_record(ins: Inst) -> dict:
    row = ins.row
    modifier = sum(ENUMS[e].index(v) << (8 * k) for k, (e, v) in enumerate(zip(row.suffixes, ins.suffixes)))
    return {
        "opcode": row.opcode,
        "modifier": modifier,
        "loc": ins.loc,
        "operands": [{"regs": v} if od.kind == "rlist" else {"index": v} for od, v in zip(row.operands, ins.operands)],
    }


# ---- decode ----------------------------------------------------------------------------------
def load(data: bytes, machine=None) -> Program:
    """decode(), or the program these bytes were encoded from or decoded to in this process if it is unchanged
    (a kernel loaded again from Triton's cache: a test suite defines its kernels anew per test; the first such
    program where several were: ``_remember``)."""
    raw = bytes(data)
    known = _ENCODED.get(_fingerprint(raw))
    if known is not None and known[0] == raw and known[2] == _snapshot(known[1]):
        try:
            return verify_once(known[1], machine)
        except IsaError:
            pass  # not within this machine's bounds: decode says where
    program = decode(raw, machine)
    _remember(raw, program)
    return program


def decode(data: bytes, machine=None) -> Program:
    """.pbin bytes -> Program, verified (against machine's bounds if given).

    Raises BinaryFormatError, carrying the byte offset, on anything malformed."""
    data = bytes(data)
    reader = _Reader(data, 0, len(data))
    head = HEADER.unpack(reader)
    if head["magic"] != MAGIC:
        raise BinaryFormatError(f"bad magic {head['magic']!r}: not a PLATE binary (expected {MAGIC!r})", offset=0)
    if head["major"] != VERSION[0]:
        raise BinaryFormatError(
            f"unsupported .pbin version {head['major']}.{head['minor']}: this reader supports version {VERSION[0]}.x",
            offset=HEADER.offsets["major"],
        )
    crc = zlib.crc32(data[HEADER.min_size :])
    if crc != head["crc32"]:
        raise BinaryFormatError(
            f"crc32 mismatch: header says {head['crc32']:#010x}, contents give {crc:#010x} (the file is corrupt)",
            offset=HEADER.offsets["crc32"],
        )
    bounded = _bounded(head["nsections"], SECTION, reader)  # raises where the table cannot fit
    entries = _unpack_fixed(SECTION, reader, len(bounded))  # where it fits, read in one pass
    if entries is None:
        entries = [SECTION.unpack(reader) for _ in bounded]
    table_end, sections = reader.pos, {}
    for e in entries:
        sec = SECTION_BY_KIND.get(e["kind"])
        if sec is None:
            continue
        if sec.name in sections:
            raise BinaryFormatError(f"second {sec.name} section", offset=e["_offset"])
        if e["offset"] < table_end or e["offset"] + e["size"] > len(data):
            raise BinaryFormatError(
                f"{sec.name} section [{e['offset']}, {e['offset'] + e['size']}) lies outside "
                f"the file's payload [{table_end}, {len(data)})",
                offset=e["_offset"],
            )
        start, end = e["offset"], e["offset"] + e["size"]
        instrs = _unpack_code(data, start, end) if sec.name == "code" else None
        if instrs is not None:  # records only to point an error at: read again on demand
            sections[sec.name] = (None, instrs, functools.partial(_unpack_section, sec, _Reader(data, start, end)))
            continue
        sections[sec.name] = _unpack_section(sec, _Reader(data, start, end))
    for sec in SECTIONS:
        if sec.required and sec.name not in sections:
            raise BinaryFormatError(f"missing {sec.name} section", offset=HEADER.min_size)
    return _program(sections, machine)


def _bounded(count: int, layout, reader: _Reader) -> range:
    """range(count), after checking the records can fit (so a bogus count fails fast)."""
    if count * layout.min_size > reader.end - reader.pos:
        raise BinaryFormatError(
            f"truncated: {count} {layout.name} records need at least "
            f"{count * layout.min_size} bytes, {reader.end - reader.pos} left",
            offset=reader.pos,
        )
    return range(count)


def _unpack_code(data: bytes, pos: int, end: int) -> list[Inst] | None:
    """The code section as instructions, what _inst makes of its records; None at anything a
    well-formed section does not hold (the records then say what is wrong, and where)."""
    try:
        (count,) = _U32.unpack_from(data, pos)
        pos += 4
        if pos + count * INST.min_size > end:
            return None
        instrs, forms = [], _DECODE_FORMS
        for _ in range(count):
            if pos + INST.min_size > end:
                return None
            opcode, modifier, loc = _INST_HEAD.unpack_from(data, pos)
            pos += INST.min_size
            form = forms.get((opcode, modifier))
            if form is None:
                form = _decode_form(opcode, modifier)
                if form is None:
                    return None
            mnemonic, suffixes, whole, row = form
            if whole is not None:  # no register list: every operand in one unpack
                if pos + whole.size > end:
                    return None
                operands = whole.unpack_from(data, pos)
                pos += whole.size
                instrs.append(Inst(mnemonic, suffixes, operands, loc))
                continue
            operands = []
            for od in row.operands:
                if pos + 4 > end:
                    return None
                (v,) = _U32.unpack_from(data, pos)
                pos += 4
                if od.kind == "rlist":
                    if pos + 4 * v > end:
                        return None
                    operands.append(struct.unpack_from(f"<{v}I", data, pos))
                    pos += 4 * v
                else:
                    operands.append(v)
            instrs.append(Inst(mnemonic, suffixes, tuple(operands), loc))
    except struct.error:
        return None
    return instrs if pos == end else None


# (opcode, modifier) -> (mnemonic, suffixes, Struct of all the operands or None where one is a register
# list, the ISA row): what _unpack_code reads of every instruction with that opcode and modifier, once per pair
_DECODE_FORMS: dict[tuple[int, int], tuple] = {}


def _decode_form(opcode: int, modifier: int) -> tuple | None:
    """The (opcode, modifier) pair's entry of _DECODE_FORMS, made; None for a pair _inst would reject."""
    row = BY_OPCODE.get(opcode)
    suffixes = _suffixes(row, modifier) if row is not None else None
    if suffixes is None:
        return None
    whole = None if any(od.kind == "rlist" for od in row.operands) else struct.Struct(f"<{len(row.operands)}I")
    form = _DECODE_FORMS[(opcode, modifier)] = (row.mnemonic, suffixes, whole, row)
    return form


def _suffixes(row, modifier: int) -> tuple | None:
    """The suffixes the modifier spells for row (as _inst), or None if _inst would reject it."""
    out = []
    for k in range(2):
        i = (modifier >> (8 * k)) & 0xFF
        if k < len(row.suffixes):
            values = ENUMS[row.suffixes[k]]
            if i >= len(values):
                return None
            out.append(values[i])
        elif i:
            return None
    return tuple(out)


def _unpack_section(sec: Section, reader: _Reader) -> tuple[dict | None, list[dict]]:
    head = sec.head.unpack(reader) if sec.head else None
    count = COUNT.unpack(reader)["count"]
    read = _UNPACK_RECORDS.get(sec.record)
    records = read(reader, count) if read is not None else _unpack_fixed(sec.record, reader, count)
    if records is None:
        records = [sec.record.unpack(reader) for _ in _bounded(count, sec.record, reader)]
    if reader.pos != reader.end:
        raise BinaryFormatError(
            f"{reader.end - reader.pos} trailing bytes in the {sec.name} section", offset=reader.pos
        )
    return head, records


def _unpack_fixed(layout, reader: _Reader, count: int) -> list[dict] | None:
    """``count`` records of a layout without arrays, each in one unpack: the records ``Layout.unpack`` makes
    (the same keys in the same order), the reader moved past them; None (the reader where it was) for a
    layout with arrays or records that do not fit, which ``Layout.unpack`` then reads or reports."""
    whole = getattr(layout, "whole", None)
    if whole is None:
        return None
    size, pos = whole.size, reader.pos
    if count * size > reader.end - pos:
        return None
    names, records = layout.names, []
    for values in whole.iter_unpack(reader.data[pos : pos + count * size]):
        rec = {"_offset": pos}
        rec.update(zip(names, values))
        records.append(rec)
        pos += size
    reader.pos = pos
    return records


def _unpack_strings(reader: _Reader, count: int) -> list[dict] | None:
    """``count`` STRING records, as ``_unpack_fixed`` reads a layout without arrays; None where one does not fit."""
    data, pos, end, records = reader.data, reader.pos, reader.end, []
    for _ in range(count):
        if pos + 4 > end:
            return None
        (n,) = _U32.unpack_from(data, pos)
        if pos + 4 + n > end:
            return None
        records.append({"_offset": pos, "size": n, "utf8": data[pos + 4 : pos + 4 + n]})
        pos += 4 + n
    reader.pos = pos
    return records


_TILE_HEAD = struct.Struct("<IBB")  # TILE's fields before its arrays: addr, dtype, rank


def _unpack_tiles(reader: _Reader, count: int) -> list[dict] | None:
    """``count`` TILE records, as ``_unpack_fixed`` reads a layout without arrays (the head in one unpack, each
    array in one); None where one does not fit."""
    data, pos, end, records = reader.data, reader.pos, reader.end, []
    for _ in range(count):
        if pos + _TILE_HEAD.size > end:
            return None
        addr, dtype, rank = _TILE_HEAD.unpack_from(data, pos)
        arrays = pos + _TILE_HEAD.size
        if arrays + 8 * rank > end:
            return None
        shape = struct.unpack_from(f"<{rank}I", data, arrays)
        strides = struct.unpack_from(f"<{rank}i", data, arrays + 4 * rank)
        records.append({"_offset": pos, "addr": addr, "dtype": dtype, "rank": rank, "shape": shape, "strides": strides})
        pos = arrays + 8 * rank
    reader.pos = pos
    return records


_UNPACK_RECORDS = {STRING: _unpack_strings, TILE: _unpack_tiles}  # a layout with arrays read in one pass


def _pick(table, layout: Layout, rec: dict, fname: str, what: str):
    """table[rec[fname]], or a BinaryFormatError pointing at the field."""
    i = rec[fname]
    if i >= len(table):
        raise BinaryFormatError(f"{what} {i} out of range (0..{len(table) - 1})", offset=layout.at(rec, fname))
    return table[i]


def _program(sections: dict, machine) -> Program:
    strings = []
    for rec in sections["strings"][1]:
        try:
            strings.append(rec["utf8"].decode("utf-8"))
        except UnicodeDecodeError as e:
            raise BinaryFormatError(f"string is not valid UTF-8: {e.reason}", offset=rec["_offset"] + 4) from None

    def s(layout, rec, fname):
        return _pick(strings, layout, rec, fname, "string index")

    meta, args = sections["meta"]
    consts = [_const_value(rec, s) for rec in sections["consts"][1]]
    tiles = [
        Tile(r["addr"], _pick(DTYPES, TILE, r, "dtype", "dtype code"), r["shape"], r["strides"])
        for r in sections["tiles"][1]
    ]
    loc_recs, n = sections["locs"][1], len(strings)
    if all(r["file"] < n and r["name"] < n for r in loc_recs):  # every string index in range: no _pick each
        locs = [Loc(strings[r["file"]], r["line"], r["col"], strings[r["name"]]) for r in loc_recs]
    else:
        locs = [Loc(s(LOC, r, "file"), r["line"], r["col"], s(LOC, r, "name")) for r in loc_recs]
    code = sections["code"][1]
    fast = len(sections["code"]) == 3  # instructions already (decode's _unpack_code), records on demand
    program = Program(
        name=s(META, meta, "name"),
        instrs=list(code) if fast else [_inst(r) for r in code],
        tiles=tiles,
        consts=consts,
        locs=locs,
        args=[Arg(s(ARG, r, "name"), _pick(ARG_TYPES, ARG, r, "type", "argument type code")) for r in args],
        sram_bytes=meta["sram_bytes"],
    )
    for r in sections.get("affinity", (None, []))[1]:
        program.affinity = s(AFFINITY, r, "text")
    names: dict[int, str] = {}
    for r in sections.get("labels", (None, []))[1]:
        kind, name, value = _pick(LABEL_KINDS, LABEL, r, "kind", "label kind"), s(LABEL, r, "name"), r["value"]
        table, limit = (program.labels, len(code) + 1) if kind == "label" else (names, len(tiles))
        key = name if kind == "label" else value
        if value >= limit or key in table:
            raise BinaryFormatError(
                f"{kind} {name!r} -> {value}: out of range (0..{limit - 1}) or defined twice",
                offset=LABEL.at(r, "value"),
            )
        table[key] = name if kind == "tile" else value
    if names:
        if len(names) != len(tiles):
            raise BinaryFormatError(f"names for {len(names)} of {len(tiles)} tiles", offset=HEADER.min_size)
        program.tile_names = [names[i] for i in range(len(tiles))]
    try:
        verify(program, machine)
    except IsaError as e:
        records = sections["code"][2]()[1] if fast else code
        raise BinaryFormatError(f"invalid program: {e}", offset=_offset_of(e, records, sections["tiles"][1])) from e
    passed(program, machine)  # a launch of it need not verify again
    return program


def _const_value(rec: dict, s):
    tag, bits = _pick(CONST_TAGS, CONST, rec, "tag", "constant tag"), rec["bits"]
    if tag == "int":
        return bits - (1 << 64) if bits >> 63 else bits
    if tag == "float":
        return bits_float(bits)
    return s(CONST, rec, "bits")


def _inst(rec: dict) -> Inst:
    row, suffixes = rec["row"], []
    for k in range(2):
        i = (rec["modifier"] >> (8 * k)) & 0xFF
        if k < len(row.suffixes):
            values = ENUMS[row.suffixes[k]]
            if i >= len(values):
                raise BinaryFormatError(
                    f"{row.mnemonic}: suffix {k} index {i} is not a {row.suffixes[k]} (0..{len(values) - 1})",
                    offset=INST.at(rec, "modifier"),
                )
            suffixes.append(values[i])
        elif i:
            raise BinaryFormatError(
                f"{row.mnemonic} takes {len(row.suffixes)} suffixes but modifier byte {k} is {i}",
                offset=INST.at(rec, "modifier"),
            )
    operands = tuple(tuple(o["regs"]) if "regs" in o else o["index"] for o in rec["operands"])
    return Inst(row.mnemonic, tuple(suffixes), operands, rec["loc"])


def _offset_of(err: IsaError, code: list[dict], tiles: list[dict]) -> int:
    """The record a verify() message names ("pc N (...): operand X: ..." or "tile tN ...")."""
    for pattern, records in ((r"pc (\d+)", code), (r"tile t(\d+)", tiles)):
        m = re.match(pattern, str(err))
        if m and int(m.group(1)) < len(records):
            rec = records[int(m.group(1))]
            if records is code and (op := re.search(r"\): operand (\w+):", str(err))):
                names = [od.name for od in rec["row"].operands]
                return rec["operands"][names.index(op.group(1))]["_offset"] if op.group(1) in names else rec["_offset"]
            return rec["_offset"]
    return HEADER.min_size  # not tied to one record: point at the section table
