"""Custom printed forms of TTIR ops, as Triton 3.7.1 (and the MLIR it ships) prints them.

`CUSTOM_FORMATS` is THE table: op name -> format function `fn(p, op) -> result types`. A format
function reads what follows the op name, fills `op.operands`, `op.attrs`, `op.regions` and
`op.successors`, and returns the result types; the parser binds result names and `loc(...)`.
Most ops share a family (`formats.same_type`, `formats.cast`, `formats.arrow`, ...) that follows
the ODS `assemblyFormat` of those ops; Triton's own shapes are in `tt_formats`, ops with regions or
successors in `control`. Ops printed only in MLIR's generic form (`"tt.reduce"(...)`) need
no row: the parser reads the generic form for every op. Attribute names are the keywords the
text shows (`cacheModifier`, `inputPrecision`, `lhs`...).

This table is syntax only, so it stays with the parser: which ops exist and what they are
(operand counts, terminators, regions, effects) is `ir.vocabulary.OPS`, one layer below, where the
verifier and the passes read it; every op named here has a row there (tests/test_ir_vocabulary.py).
"""

from __future__ import annotations

from functools import partial

from . import control as C
from . import formats as F
from . import tt_formats as TT

_ARITH_SAME = (
    "addf subf mulf divf remf negf maxnumf minnumf maximumf minimumf addi subi muli divsi divui remsi remui "
    "ceildivsi ceildivui floordivsi andi ori xori shli shrsi shrui maxsi minsi maxui minui"
).split()
_MATH_SAME = (
    "absf absi acos acosh asin asinh atan atan2 atanh cbrt ceil copysign cos cosh ctlz cttz ctpop erf erfc exp "
    "exp2 expm1 floor fma log log10 log1p log2 powf round roundeven rsqrt sin sinh sqrt tan tanh trunc"
).split()
_ARITH_CASTS = "extf truncf extsi extui trunci sitofp uitofp fptosi fptoui bitcast index_cast index_castui".split()
_TT_ARROW = (
    "splat broadcast expand_dims bitcast int_to_ptr ptr_to_int histogram trans reshape fp_to_fp cat join"
).split()

CUSTOM_FORMATS = {
    **{f"arith.{n}": F.same_type for n in _ARITH_SAME},
    **{f"math.{n}": F.same_type for n in _MATH_SAME},
    **{f"arith.{n}": F.cast for n in _ARITH_CASTS},
    **{f"tt.{n}": F.arrow for n in _TT_ARROW},
    "tt.precise_sqrt": F.same_type,
    "tt.precise_divf": F.same_type,
    "tt.mulhiui": F.same_type,
    "arith.cmpi": F.cmp,
    "arith.cmpf": F.cmp,
    "arith.select": F.select,
    "arith.constant": F.constant,
    "ub.poison": F.attrs_colon_type,
    "tt.make_range": F.attrs_colon_type,
    "tt.split": partial(F.arrow, results=2),
    "tt.unsplat": F.element_of,
    "tt.reinterpret_tensor_descriptor": F.cast,
    "tt.atomic_rmw": partial(F.functional, enums=("atomic_rmw_op", "sem", "scope")),
    "tt.atomic_cas": partial(F.functional, enums=("sem", "scope")),
    "tt.extern_elementwise": F.functional,
    "tt.gather": F.indexed,
    "tt.descriptor_gather": F.indexed,
    "tt.return": F.operands_colon_types,
    "tt.reduce.return": F.operands_colon_types,
    "tt.scan.return": F.operands_colon_types,
    "tt.map_elementwise.return": F.operands_colon_types,
    "scf.yield": F.operands_colon_types,
    "llvm.intr.assume": F.effect,
    "tt.load": TT.load,
    "tt.store": TT.store,
    "tt.addptr": TT.addptr,
    "tt.advance": TT.advance,
    "tt.make_tensor_ptr": TT.make_tensor_ptr,
    "tt.make_tensor_descriptor": TT.make_tensor_descriptor,
    "tt.descriptor_load": TT.descriptor_load,
    "tt.descriptor_store": TT.descriptor_store,
    "tt.descriptor_reduce": partial(TT.descriptor_store, kind=True),
    "tt.descriptor_scatter": TT.descriptor_scatter,
    "tt.get_program_id": TT.program_axis,
    "tt.get_num_programs": TT.program_axis,
    "tt.dot": TT.dot,
    "tt.dot_scaled": TT.dot_scaled,
    "tt.clampf": TT.clampf,
    "tt.print": TT.print_,
    "tt.assert": TT.assert_,
    "tt.elementwise_inline_asm": TT.inline_asm,
    "tt.call": TT.call,
    "ttg.barrier": TT.barrier,
    "module": C.module,
    "builtin.module": C.module,
    "tt.func": C.func,
    "scf.for": C.scf_for,
    "scf.while": C.scf_while,
    "scf.if": C.scf_if,
    "scf.condition": C.scf_condition,
    "cf.br": C.cf_br,
    "cf.cond_br": C.cf_cond_br,
}
