"""The PLATE instruction set as ONE table.

Every instruction is one row: mnemonic, opcode, the enum suffixes it takes (encoded in the
16-bit modifier field), its operands (kind and whether the instruction defines or uses them),
the unit that executes it and the name of its cost rule in ``triton_plate_backend.cost``.
The encoder, decoder, assembler, verifier, simulator semantics and timing model all read this
table; a completeness test walks it and fails on any gap.

Contract (PLATE.md "What makes the ISA a real ISA"):
- compute instructions read and write SCRATCHPAD tiles (an SRAM address, dtype, shape and
  element strides held in the program's tile table), never device memory;
- device memory is reachable only through ``dma.*`` and ``atom.*``; DMA is asynchronous:
  it defines a token ``q`` that ``dma.wait`` consumes;
- scalars (program ids, addresses, loop counters) live in 64-bit scalar registers ``r``;
- shapes are bounded: a vector instruction covers at most ``VectorUnit.max_elements``
  elements, a matrix instruction at most ``MatrixUnit.max_k`` of K.
- ``m.mma`` takes a whole output tile of any M x N (as large as SRAM holds): PLATE.md's cost
  rule ceil(M/32)*ceil(N/32)*ceil(K*r) + fill prices an instruction of any M x N, the 32x32
  being the physical array it makes passes over, so one fill is paid per instruction, not
  per 32x32 piece (a decision of the project lead; numa-arithmetic's whole-tile GEMM).

Scalar registers hold 64 bits: an integer of any width is kept sign-extended to 64 bits;
a floating-point scalar is kept as the float64 that exactly equals its value in its type.
"""

from __future__ import annotations

from dataclasses import dataclass

# ---- enums (suffixes) ------------------------------------------------------------------------
# Each enum's values are encoded by their index; at most 255 values per enum.

# f8e4m3fnuz, f8e5m2fnuz: AMD's fp8 (Triton's fp8e4b8, fp8e5b16): biases 8 and 16, no infinity, no -0, NaN 0x80
DTYPES = (
    "i1",
    "i8",
    "i16",
    "i32",
    "i64",
    "f16",
    "bf16",
    "f32",
    "f64",
    "f8e4m3fn",
    "f8e5m2",
    "f8e4m3fnuz",
    "f8e5m2fnuz",
)
INT_DTYPES = ("i1", "i8", "i16", "i32", "i64")
FLOAT_DTYPES = ("f16", "bf16", "f32", "f64", "f8e4m3fn", "f8e5m2", "f8e4m3fnuz", "f8e5m2fnuz")
ITEMSIZE = {
    "i1": 1,
    "i8": 1,
    "i16": 2,
    "i32": 4,
    "i64": 8,
    "f16": 2,
    "bf16": 2,
    "f32": 4,
    "f64": 8,
    "f8e4m3fn": 1,
    "f8e5m2": 1,
    "f8e4m3fnuz": 1,
    "f8e5m2fnuz": 1,
}
# value bits of each integer type (i1 is one bit stored in a byte)
INT_BITS = {dtype: 1 if dtype == "i1" else 8 * ITEMSIZE[dtype] for dtype in INT_DTYPES}


def is_float(dtype: str) -> bool:
    """A floating-point element type (of DTYPES, or a kernel argument type)."""
    return dtype.startswith(("f", "bf"))


ENUMS: dict[str, tuple[str, ...]] = {
    "stype": DTYPES,  # scalar op type
    "ipred": ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"),
    "fpred": (
        "false",
        "oeq",
        "ogt",
        "oge",
        "olt",
        "ole",
        "one",
        "ord",
        "ueq",
        "ugt",
        "uge",
        "ult",
        "ule",
        "une",
        "uno",
        "true",
    ),
    # combine ops of reductions/scans; max/min on floats propagate NaN, maxnum/minnum ignore it
    "combine": ("add", "mul", "max", "min", "maxnum", "minnum", "umax", "umin", "and", "or", "xor"),
    # rounding modes (OpenCL names): to nearest even, toward zero, toward +inf, toward -inf
    "round": ("rtne", "rtz", "rtp", "rtn"),
    # tl.dot input precisions (triton ir.INPUT_PRECISION); semantics in the simulator's table
    "prec": ("ieee", "tf32", "tf32x3", "bf16x3", "bf16x6"),
    "atom": ("add", "fadd", "max", "min", "umax", "umin", "and", "or", "xor", "xchg"),
    "sem": ("relaxed", "acquire", "release", "acq_rel"),
    "axis": ("x", "y", "z"),
    "nan": ("none", "all"),  # clamp: propagate NaN or not (tt.clampf propagateNan)
    # special functions of v.libm1..v.libm4 (libdevice), by operand count; semantics in sim/libm.py
    "libm1": (
        "erfinv",
        "erfcinv",
        "erfcx",
        "normcdf",
        "normcdfinv",
        "tgamma",
        "j0",
        "j1",
        "y0",
        "y1",
        "i0",
        "i1",
        "sinpi",
        "cospi",
        "rcbrt",
        "exp10",
        "logb",
        "ilogb",
        "rcp64h",
    ),
    "libm2": ("rhypot", "remainder", "ldexp", "jn", "yn"),
    "libm3": ("norm3d", "rnorm3d"),
    "libm4": ("norm4d", "rnorm4d"),
}

# ---- operand kinds ---------------------------------------------------------------------------
# Each kind is encoded as one 32-bit word, except `rlist`: a count word then one word per reg.
OPERAND_KINDS = {
    "r": "scalar register r0..rN",
    "q": "DMA token register q0..qN",
    "t": "scratchpad tile: index into the tile table (sram address, dtype, shape, strides)",
    "imm": "constant: index into the constant pool (int64 or float64)",
    "str": "string: index into the constant pool",
    "label": "instruction index (pc) of a branch target",
    "rlist": "list of scalar registers (count word, then one word each)",
}

UNITS = ("scalar", "vector", "matrix", "dma_in", "dma_out", "sync")


@dataclass(frozen=True)
class Operand:
    name: str
    kind: str
    role: str = "use"  # "def", "use" or "inout"


@dataclass(frozen=True)
class Instr:
    mnemonic: str
    opcode: int
    suffixes: tuple[str, ...]  # enum names, in text order: mnemonic.suffix0.suffix1
    operands: tuple[Operand, ...]
    unit: str
    cost: str  # rule name in cost.COST_RULES
    doc: str


def _ops(spec: str) -> tuple[Operand, ...]:
    """'d:t a:t b:t' -> operands; prefix '=' marks def, '+' inout."""
    out = []
    for tok in spec.split():
        name, kind = tok.split(":")
        role = "use"
        if name.startswith("="):
            name, role = name[1:], "def"
        elif name.startswith("+"):
            name, role = name[1:], "inout"
        out.append(Operand(name, kind, role))
    return tuple(out)


_ROWS: list[tuple] = []  # (mnemonic, suffixes, operand spec, unit, cost, doc)


def _row(mnemonic, suffixes, spec, unit, cost, doc):
    _ROWS.append((mnemonic, tuple(suffixes), spec, unit, cost, doc))


# ---- scalar unit -----------------------------------------------------------------------------
_row("nop", (), "", "scalar", "scalar", "do nothing")
_row("s.li", (), "=d:r v:imm", "scalar", "scalar", "d = constant v")
_row("s.mov", (), "=d:r a:r", "scalar", "scalar", "d = a")
_row("s.arg", (), "=d:r i:imm", "scalar", "scalar", "d = kernel argument i (pointer, int or float)")
_row("s.pid", ("axis",), "=d:r", "scalar", "scalar", "d = program id along axis")
_row("s.nprog", ("axis",), "=d:r", "scalar", "scalar", "d = number of programs along axis")
for _op, _doc in [
    ("add", "a + b"),
    ("sub", "a - b"),
    ("mul", "a * b"),
    ("div", "a / b (float)"),
    ("divs", "a / b signed, toward zero"),
    ("divu", "a / b unsigned"),
    ("rems", "a % b signed (sign of a)"),
    ("remu", "a % b unsigned"),
    ("and", "a & b"),
    ("or", "a | b"),
    ("xor", "a ^ b"),
    ("shl", "a << b"),
    ("shrs", "a >> b arithmetic"),
    ("shru", "a >> b logical"),
    ("maxs", "signed max (float: NaN-propagating)"),
    ("mins", "signed min (float: NaN-propagating)"),
    ("maxu", "unsigned max"),
    ("minu", "unsigned min"),
]:
    _row(f"s.{_op}", ("stype",), "=d:r a:r b:r", "scalar", "scalar", f"d = {_doc}, wrapped to stype")
_row("s.cmpi", ("ipred", "stype"), "=d:r a:r b:r", "scalar", "scalar", "d = (a pred b) as 0/1")
_row("s.cmpf", ("fpred", "stype"), "=d:r a:r b:r", "scalar", "scalar", "d = (a pred b) as 0/1")
_row("s.select", (), "=d:r c:r a:r b:r", "scalar", "scalar", "d = c != 0 ? a : b")
for _op, _doc in [
    ("sext", "sign-extend/convert int"),
    ("zext", "zero-extend int"),
    ("trunc", "truncate int"),
    ("sitofp", "signed int to float"),
    ("uitofp", "unsigned int to float"),
    ("fptosi", "float to signed int, toward zero"),
    ("fptoui", "float to unsigned int, toward zero"),
    ("fcvt", "float to float, rtne"),
    ("bitcast", "reinterpret bits"),
]:
    _row(
        f"s.{_op}",
        ("stype", "stype"),
        "=d:r a:r",
        "scalar",
        "scalar",
        f"d = {_doc}; suffixes: destination type, source type",
    )

# ---- control flow ----------------------------------------------------------------------------
_row("jmp", (), "target:label", "scalar", "branch", "pc = target")
_row("bz", (), "c:r target:label", "scalar", "branch", "if c == 0: pc = target")
_row("bnz", (), "c:r target:label", "scalar", "branch", "if c != 0: pc = target")
_row("loop", (), "+c:r target:label", "scalar", "branch", "hardware loop: c -= 1; if c != 0: pc = target")
_row("halt", (), "", "scalar", "branch", "end of the program instance")

# ---- vector unit: data movement ----------------------------------------------------------------
_row("v.splat", (), "=d:t a:r", "vector", "vector", "every element of d = scalar a converted to d's dtype")
_row("v.extract", (), "=d:r a:t i:imm", "vector", "vector_one", "d = element i (row-major) of a")
_row("v.iota", (), "=d:t start:imm", "vector", "vector", "d (row-major) = start, start+1, ...")
_row("v.fill", (), "=d:t v:imm", "vector", "vector", "every element of d = constant v")
_row(
    "v.copy",
    (),
    "=d:t a:t",
    "vector",
    "vector",
    "d = a element by element in row-major order (same element count): reshape, transpose, "
    "broadcast, split/join/concat through tile views with strides",
)
_row("v.gather", (), "=d:t a:t idx:t axis:imm", "vector", "vector", "d = take_along_axis(a, idx, axis)")
_row(
    "v.hist",
    (),
    "=d:t a:t m:t",
    "vector",
    "vector",
    "d[b] = count of a == b where m (d is i32/i64 of n bins; values outside [0, n) ignored)",
)

# ---- vector unit: elementwise ------------------------------------------------------------------
VECTOR_BINARY = {
    "add": "a + b",
    "sub": "a - b",
    "mul": "a * b",
    "div": "a / b (float, IEEE)",
    "divs": "a / b signed int, toward zero",
    "divu": "a / b unsigned int",
    "rems": "a % b signed int (sign of a)",
    "remu": "a % b unsigned int",
    "remf": "fmod(a, b)",
    "and": "a & b",
    "or": "a | b",
    "xor": "a ^ b",
    "shl": "a << b",
    "shrs": "a >> b arithmetic",
    "shru": "a >> b logical",
    "maxs": "signed int max",
    "mins": "signed int min",
    "maxu": "unsigned int max",
    "minu": "unsigned int min",
    "maxnum": "float max ignoring NaN",
    "minnum": "float min ignoring NaN",
    "maximum": "float max propagating NaN",
    "minimum": "float min propagating NaN",
    "mulhiu": "high half of unsigned a * b",
    "mulhis": "high half of signed a * b",
    "pow": "a ** b",
    "atan2": "atan2(a, b)",
    "hypot": "hypot(a, b)",
    "copysign": "copysign(a, b)",
    "nextafter": "nextafter(a, b)",
}
VECTOR_UNARY = {
    "neg": "-a",
    "abs": "|a|",
    "not": "~a",
    "sqrt": "sqrt(a) (IEEE)",
    "rsqrt": "1/sqrt(a)",
    "exp": "e**a",
    "exp2": "2**a",
    "expm1": "e**a - 1",
    "log": "ln a",
    "log2": "log2 a",
    "log10": "log10 a",
    "log1p": "ln(1 + a)",
    "sin": "sin a",
    "cos": "cos a",
    "tan": "tan a",
    "asin": "asin a",
    "acos": "acos a",
    "atan": "atan a",
    "sinh": "sinh a",
    "cosh": "cosh a",
    "tanh": "tanh a",
    "asinh": "asinh a",
    "acosh": "acosh a",
    "atanh": "atanh a",
    "erf": "erf a",
    "erfc": "erfc a",
    "lgamma": "log|gamma(a)|",
    "cbrt": "cube root",
    "floor": "floor a",
    "ceil": "ceil a",
    "ftrunc": "round toward zero",
    "rint": "round to nearest even",
    "isnan": "a is NaN (i1)",
    "isinf": "a is +-inf (i1)",
    "signbit": "sign bit of a (i1)",
    "popc": "population count",
    "clz": "count leading zeros",
    "brev": "bit reversal",
    "recip": "1 / a",
}
TRANSCENDENTAL = {
    "sqrt",
    "rsqrt",
    "exp",
    "exp2",
    "expm1",
    "log",
    "log2",
    "log10",
    "log1p",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "erf",
    "erfc",
    "lgamma",
    "cbrt",
    "pow",
    "atan2",
    "hypot",
    "div",
    "recip",
    "remf",
}
for _op, _doc in VECTOR_BINARY.items():
    _row(f"v.{_op}", (), "=d:t a:t b:t", "vector", "vector_tx" if _op in TRANSCENDENTAL else "vector", f"d = {_doc}")
for _op, _doc in VECTOR_UNARY.items():
    _row(f"v.{_op}", (), "=d:t a:t", "vector", "vector_tx" if _op in TRANSCENDENTAL else "vector", f"d = {_doc}")
_row("v.fma", (), "=d:t a:t b:t c:t", "vector", "vector", "d = a * b + c, one rounding")
_row("v.select", (), "=d:t c:t a:t b:t", "vector", "vector", "d = c ? a : b")
_row("v.clamp", ("nan",), "=d:t a:t lo:t hi:t", "vector", "vector", "d = min(max(a, lo), hi)")
_row("v.cmpi", ("ipred",), "=d:t a:t b:t", "vector", "vector", "d (i1) = a pred b, integers")
_row("v.cmpf", ("fpred",), "=d:t a:t b:t", "vector", "vector", "d (i1) = a pred b, floats")
for _op, _doc in [
    ("sext", "sign-extend int"),
    ("zext", "zero-extend int"),
    ("trunc", "truncate int"),
    ("sitofp", "signed int to float, rtne"),
    ("uitofp", "unsigned int to float, rtne"),
    ("fptosi", "float to signed int, toward zero"),
    ("fptoui", "float to unsigned int, toward zero"),
    ("bitcast", "reinterpret bits (same item size)"),
]:
    _row(f"v.{_op}", (), "=d:t a:t", "vector", "vector", f"d = {_doc}")
_row("v.fcvt", ("round",), "=d:t a:t", "vector", "vector", "d = float a converted to d's float type")

# ---- vector unit: IEEE ops in a chosen rounding mode, special functions --------------------------
for _op, _spec, _cost, _doc in [
    ("addr", "=d:t a:t b:t", "vector", "a + b"),
    ("subr", "=d:t a:t b:t", "vector", "a - b"),
    ("mulr", "=d:t a:t b:t", "vector", "a * b"),
    ("divr", "=d:t a:t b:t", "vector_tx", "a / b"),
    ("sqrtr", "=d:t a:t", "vector_tx", "sqrt(a)"),
    ("recipr", "=d:t a:t", "vector_tx", "1 / a"),
    ("fmar", "=d:t a:t b:t c:t", "vector", "a * b + c"),
    ("sitofpr", "=d:t a:t", "vector", "signed int a to d's float type"),
    ("uitofpr", "=d:t a:t", "vector", "unsigned int a to d's float type"),
]:
    _row(f"v.{_op}", ("round",), _spec, "vector", _cost, f"d = {_doc}, rounded once in the given mode (f32, f64)")
_row("v.libm1", ("libm1",), "=d:t a:t", "vector", "vector_tx", "d = f(a), a libdevice special function")
_row("v.libm2", ("libm2",), "=d:t a:t b:t", "vector", "vector_tx", "d = f(a, b), a libdevice special function")
_row("v.libm3", ("libm3",), "=d:t a:t b:t c:t", "vector", "vector_tx", "d = f(a, b, c), a libdevice function")
_row("v.libm4", ("libm4",), "=d:t a:t b:t c:t e:t", "vector", "vector_tx", "d = f(a, b, c, e), a libdevice function")
_row(
    "v.prmt",
    (),
    "=d:t a:t b:t s:t",
    "vector",
    "vector",
    "i32 byte permute: byte n of d = byte (s >> 4n) & 7 of the 8 bytes b:a (a the low word)",
)

# ---- vector unit: reductions and scans ---------------------------------------------------------
_row(
    "v.reduce",
    ("combine",),
    "=d:t a:t axis:imm",
    "vector",
    "reduce",
    "d = a combined along axis (d has a's shape without that axis)",
)
_row(
    "v.scan",
    ("combine",),
    "=d:t a:t axis:imm reverse:imm",
    "vector",
    "reduce",
    "d = inclusive scan of a along axis (reverse != 0: from the end)",
)

# ---- matrix unit -------------------------------------------------------------------------------
_row(
    "m.mma",
    ("prec",),
    "+acc:t a:t b:t",
    "matrix",
    "mma",
    "acc[M,N] += a[M,K] @ b[K,N]; any M x N (passes of the 32x32 array), K <= max_k; products exact, "
    "fp32/int32 accumulation",
)

# ---- DMA engines -------------------------------------------------------------------------------
_row(
    "dma.load",
    (),
    "=q:q =d:t base:r strides:rlist lo:rlist hi:rlist fill:imm",
    "dma_in",
    "dma",
    "d[i] = mem[base + sum(i_k * strides_k) * itemsize] where lo_k <= i_k < hi_k, else fill",
)
_row(
    "dma.store",
    (),
    "=q:q a:t base:r strides:rlist lo:rlist hi:rlist",
    "dma_out",
    "dma",
    "mem[base + sum(i_k * strides_k) * itemsize] = a[i] where lo_k <= i_k < hi_k",
)
_row(
    "dma.gather",
    (),
    "=q:q =d:t addr:t m:t fill:imm",
    "dma_in",
    "dma_gather",
    "d[i] = m[i] ? mem[addr[i]] : fill (addr: byte addresses)",
)
_row(
    "dma.scatter",
    (),
    "=q:q a:t addr:t m:t",
    "dma_out",
    "dma_gather",
    "mem[addr[i]] = a[i] where m[i], in row-major order",
)
_row("dma.wait", (), "q:q", "sync", "sync", "block until the DMA that defined q is complete")
_row(
    "atom.rmw",
    ("atom", "sem"),
    "=d:t addr:t v:t m:t",
    "dma_out",
    "atomic",
    "d[i] = mem[addr[i]]; mem[addr[i]] = op(d[i], v[i]) where m[i], element by element",
)
_row(
    "atom.cas",
    ("sem",),
    "=d:t addr:t cmp:t v:t m:t",
    "dma_out",
    "atomic",
    "d[i] = mem[addr[i]]; if d[i] == cmp[i]: mem[addr[i]] = v[i], where m[i]",
)
_row("fence", ("sem",), "", "sync", "sync", "order memory accesses; waits for outstanding DMA")
_row("barrier", (), "", "sync", "sync", "wait for all outstanding DMA of this core")

# ---- debug ---------------------------------------------------------------------------------------
# dbg.print's fmt flags: Triton's hex= and isSigned= per operand, and the operand's label when tt.print has several
# (Triton prints each as "(operand n) value").
PRINT_HEX = 1
PRINT_UNSIGNED = 2
PRINT_LABEL_SHIFT = 8
_row(
    "dbg.print",
    (),
    "prefix:str a:t fmt:imm",
    "scalar",
    "scalar",
    "print a with the program id and prefix; fmt: PRINT_HEX | PRINT_UNSIGNED | (n + 1) << PRINT_LABEL_SHIFT",
)
_row("dbg.printr", (), "prefix:str a:r", "scalar", "scalar", "print scalar register a")
_row(
    "dbg.assert",
    (),
    "c:t msg:str",
    "scalar",
    "scalar",
    "raise, with the instruction's source location, if any element of c is false",
)


ISA: dict[str, Instr] = {}
for _i, (_m, _s, _spec, _u, _c, _d) in enumerate(_ROWS):
    assert _m not in ISA, f"duplicate ISA row {_m}"
    ISA[_m] = Instr(_m, _i, _s, _ops(_spec), _u, _c, _d)
BY_OPCODE: dict[int, Instr] = {row.opcode: row for row in ISA.values()}

del _i, _m, _s, _spec, _u, _c, _d, _op, _doc
