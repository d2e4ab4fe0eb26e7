"""PTX inline assembly plate gives a meaning: ONE table per kind of snippet, asm text -> what it does on PLATE.

`tl.inline_asm_elementwise` carries PTX, which PLATE cannot run; a kernel that uses it is refused with the op,
its source line and the asm. Two kinds of snippet have a meaning here:

- hints to the CUDA scheduler, which mean nothing on PLATE, where launches run in order and one after another:
  `tl.extra.cuda.gdc_wait()` / `gdc_launch_dependents()` (programmatic dependent launch, Triton's tutorial 11).
  They lower to nothing; their dummy result is 0 (`PTX_HINTS`).
- one arithmetic instruction on the operands, `INSTR $0, $1[, $2[, $3]];`, which kernels write to pin IEEE
  rounding (`add.rn.f32`, `div.rn.f32`: no contraction, no approximate division) or to ask for a fast
  approximation (`tanh.approx.f32`, `ex2.approx.ftz.f32`): each computes what the libdevice function of the
  same meaning computes on PLATE (`PTX_INSTRUCTIONS`; the approximations as accurately as libdevice's fast_*
  functions, subnormals kept), or, with no such function, a few steps (`PTX_STEPS`: `cvt.rna.tf32.f32`), for
  operands and a result of the instruction's type, one element per lane (pack 1).

The text is matched without `//` comments or an enclosing `{ }`, its whitespace normalized (Triton's
gdc_wait is `"griddepcontrol.wait; // dummy $0"`).
"""

from __future__ import annotations

import re

NOTHING = "nothing"  # runs nothing; each result is a 0 of its type

PTX_HINTS: dict[str, str] = {
    # programmatic dependent launch: launches are in order, a grid starts after the one before ends
    "griddepcontrol.wait;": NOTHING,
    "griddepcontrol.launch_dependents;": NOTHING,
}


def _instructions() -> dict[str, str]:
    t = {}
    for mode in ("rn", "rz", "ru", "rd"):  # IEEE ops in a rounding mode: libdevice's __nv_<op>_<mode>
        for op, f32, f64 in (("add", "fadd", "dadd"), ("sub", "fsub", "dsub"), ("mul", "fmul", "dmul")):
            t[f"{op}.{mode}.f32"], t[f"{op}.{mode}.f64"] = f"__nv_{f32}_{mode}", f"__nv_{f64}_{mode}"
        for op, f32, f64 in (("div", "fdiv", "ddiv"), ("rcp", "frcp", "drcp"), ("sqrt", "fsqrt", "dsqrt")):
            t[f"{op}.{mode}.f32"], t[f"{op}.{mode}.f64"] = f"__nv_{f32}_{mode}", f"__nv_{f64}_{mode}"
        t[f"fma.{mode}.f32"], t[f"fma.{mode}.f64"] = f"__nv_fmaf_{mode}", f"__nv_fma_{mode}"
    approx = {  # fast approximations, with and without flush-to-zero
        "tanh": "__nv_fast_tanhf",
        "ex2": "__nv_exp2f",
        "lg2": "__nv_log2f",
        "sin": "__nv_fast_sinf",
        "cos": "__nv_fast_cosf",
        "rsqrt": "__nv_rsqrtf",
        "sqrt": "__nv_sqrtf",
        "rcp": "__nv_frcp_rn",
        "div": "__nv_fast_fdividef",
    }
    for name, symbol in approx.items():
        t[f"{name}.approx.f32"] = t[f"{name}.approx.ftz.f32"] = symbol
    t["div.full.f32"] = t["div.full.ftz.f32"] = "__nv_fast_fdividef"
    # 32-bit integer bit ops and high products
    t.update({"popc.b32": "__nv_popc", "clz.b32": "__nv_clz", "brev.b32": "__nv_brev"})
    t.update({"mul.hi.u32": "__nv_umulhi", "mul.hi.s32": "__nv_mulhi"})
    return t


PTX_INSTRUCTIONS: dict[str, str] = _instructions()  # instruction -> libdevice symbol

# instructions with no libdevice twin: steps as libdevice.py's tables write them (x the operand, out the result)
PTX_STEPS: dict[str, tuple] = {
    # f32 -> tf32 (10 mantissa bits) rounding to nearest, ties away from zero, as f32 bits: add half an ulp
    # of tf32 to the magnitude bits and clear the 13 low bits (a carry rounds up the exponent, to inf at the
    # top); NaN and inf pass unchanged
    "cvt.rna.tf32.f32": (
        ("v.bitcast", "b:i32", ("x",)),
        ("v.add", "b:i32", ("b", 0x1000)),
        ("v.and", "b:i32", ("b", -0x2000)),
        ("v.bitcast", "r", ("b",)),
        ("v.isinf", "m_inf", ("x",)),
        ("v.isnan", "m_nan", ("x",)),
        ("v.or", "m_keep", ("m_inf", "m_nan")),
        ("v.select", "out", ("m_keep", "x", "r")),
    ),
}

WIDTH = {"f32": "f32", "f64": "f64", "b32": "i32", "u32": "i32", "s32": "i32"}  # type suffix -> operand dtype
UNARY = ("popc", "clz", "brev", "rcp", "sqrt", "tanh", "ex2", "lg2", "sin", "cos", "rsqrt", "cvt")


def arity(instr: str) -> int:
    head = instr.split(".", 1)[0]
    return 1 if head in UNARY else 3 if head == "fma" else 2


REFUSED = (
    "PTX inline assembly cannot run on PLATE; express the function with tl.* ops (or libdevice functions plate maps)"
)
_ONE_INSTRUCTION = re.compile(r"^(\S+) \$0((?:, \$\d)*);$")


def normalized(asm: str) -> str:
    """The asm text without `//` comments and an enclosing `{ }`, whitespace collapsed to single spaces, none
    before `,` and `;` and one after `,` (`{ add.rn.f32 $0,$1 ,$2 ; }` is `add.rn.f32 $0, $1, $2;`)."""
    text = " ".join(line.split("//", 1)[0] for line in asm.splitlines()).strip()
    if text.startswith("{") and text.endswith("}") and text.count("{") == 1:
        text = text[1:-1]
    text = re.sub(r"\s*,\s*", ", ", re.sub(r"\s+", " ", text))
    return re.sub(r"\s*;", ";", text).strip()


def meaning(asm: str, operand_dtypes: list[str], result_dtypes: list[str], pack: int) -> str | tuple | None:
    """What the snippet does on PLATE: NOTHING, the libdevice symbol that computes it, its steps, or None
    (it cannot run)."""
    text = normalized(asm)
    if not operand_dtypes and text in PTX_HINTS:
        return PTX_HINTS[text]
    m = _ONE_INSTRUCTION.match(text)
    if m is None or pack != 1 or len(result_dtypes) != 1:
        return None
    instr = m.group(1)
    symbol = PTX_INSTRUCTIONS.get(instr) or PTX_STEPS.get(instr)
    if symbol is None:
        return None
    operands = [f"${i}" for i in range(1, len(operand_dtypes) + 1)]
    if m.group(2).replace(" ", "").split(",")[1:] != operands or len(operands) != arity(instr):
        return None
    width = WIDTH[instr.rsplit(".", 1)[-1]]  # cvt.rna.tf32.f32: an f32 holding a tf32 value
    if any(t != width for t in (*operand_dtypes, *result_dtypes)):
        return None
    return symbol
