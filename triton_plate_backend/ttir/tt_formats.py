"""Custom forms of Triton's own ops (memory, pointers, descriptors, dot, debug, calls), as
Triton 3.7.1 prints them. Rows of `ops.CUSTOM_FORMATS` point here."""

from __future__ import annotations

from ..ir.core import ArrayAttr, EnumAttr, Op, StrAttr, Type
from .attrs import symbol
from .formats import enum_clauses, function_signature, leading_enums, pointee, typed_operands

# ---- tt ops with their own shapes -------------------------------------------------------------


def load(p, op: Op) -> list[Type]:
    """`tt.load %ptr[, %mask[, %other]] [cacheModifier = ca] [evictionPolicy = ..] {attrs} : Tptr`."""
    op.operands = p.operand_list()
    enum_clauses(p, op, ("cacheModifier", "evictionPolicy"))
    ptr = typed_operands(p, op, op.operands[:1])[0]
    return [pointee(ptr)]


def store(p, op: Op) -> list[Type]:
    """`tt.store %ptr, %value[, %mask] [cacheModifier = ..] {attrs} : Tptr`."""
    op.operands = p.operand_list()
    enum_clauses(p, op, ("cacheModifier", "evictionPolicy"))
    typed_operands(p, op, op.operands[:1])
    return []


def addptr(p, op: Op) -> list[Type]:
    """`tt.addptr %p, %off : Tptr, Toff`."""
    op.operands = p.operand_list()
    p.attr_dict(op.attrs)
    index = p.i
    p.expect(":")
    types = p.type_list()
    p.bind_types(op.operands, types, index, exact=True)
    return [types[0]]


def advance(p, op: Op) -> list[Type]:
    """`tt.advance %ptr, [%o0, %o1] : <tensor<...>>` (the !tt.ptr prefix is elided)."""
    op.operands = [p.operand()]
    p.expect(",")
    op.operands += p.bracket_operands()
    p.attr_dict(op.attrs)
    p.expect(":")
    t = p.elided_type("!tt.ptr")
    return [t]


def make_tensor_ptr(p, op: Op) -> list[Type]:
    """`tt.make_tensor_ptr %base, [shape], [strides], [offsets] {order = ...} : <tensor<...>>`."""
    op.operands = [p.operand()]
    for _ in range(3):
        p.expect(",")
        op.operands += p.bracket_operands()
    p.attr_dict(op.attrs)
    p.expect(":")
    return [p.elided_type("!tt.ptr")]


def make_tensor_descriptor(p, op: Op) -> list[Type]:
    """`tt.make_tensor_descriptor %base, [shape], [strides] : <f16>, <tensor<...>>`."""
    op.operands = [p.operand()]
    for _ in range(2):
        p.expect(",")
        op.operands += p.bracket_operands()
    p.attr_dict(op.attrs)
    index = p.i
    p.expect(":")
    p.bind_types(op.operands[:1], [p.elided_type("!tt.ptr")], index)
    p.expect(",")
    return [p.elided_type("!tt.tensordesc")]


def descriptor_load(p, op: Op) -> list[Type]:
    """`tt.descriptor_load %desc[%i, %j] [cacheModifier = ..] {attrs} : Tdesc -> T`."""
    op.operands = [p.operand(), *p.bracket_operands()]
    enum_clauses(p, op, ("cacheModifier", "evictionPolicy"))
    typed_operands(p, op, op.operands[:1])
    p.expect("->")
    return [p.type()]


def descriptor_store(p, op: Op, kind: bool = False) -> list[Type]:
    """`tt.descriptor_store %desc[%i, %j], %src : Tdesc, Tsrc` (operands: desc, src, indices);
    `tt.descriptor_reduce add, %desc[...], %src : ...` adds the reduction `kind`."""
    if kind:
        leading_enums(p, op, ("kind",))
    desc = p.operand()
    indices = p.bracket_operands()
    p.expect(",")
    src = p.operand()
    op.operands = [desc, src, *indices]
    p.attr_dict(op.attrs)
    index = p.i
    p.expect(":")
    p.bind_types([desc, src], p.type_list(), index, exact=True)
    return []


def descriptor_scatter(p, op: Op) -> list[Type]:
    """`tt.descriptor_scatter %desc[%x, %y], %src : Tdesc, Tx, Ty, Tsrc`."""
    op.operands = [p.operand(), *p.bracket_operands()]
    p.expect(",")
    op.operands.append(p.operand())
    p.attr_dict(op.attrs)
    index = p.i
    p.expect(":")
    p.bind_types(op.operands, p.type_list(), index, exact=True)
    return []


def program_axis(p, op: Op) -> list[Type]:
    """`tt.get_program_id x : i32`."""
    op.attrs["axis"] = EnumAttr(p.keyword("a program axis (x, y, z)"))
    p.attr_dict(op.attrs)
    p.expect(":")
    return [p.type()]


def dot(p, op: Op) -> list[Type]:
    """`tt.dot %a, %b, %c[, inputPrecision = tf32] {attrs} : Ta * Tb -> Tc`."""
    op.operands = p.operand_list()
    if p.peek() == ",":
        p.next()
        p.expect("inputPrecision")
        p.expect("=")
        op.attrs["inputPrecision"] = EnumAttr(p.keyword("an input precision"))
    p.attr_dict(op.attrs)
    index = p.i
    p.expect(":")
    ta = p.type()
    p.expect("*")
    tb = p.type()
    p.expect("->")
    tc = p.type()
    p.bind_types(op.operands, [ta, tb, tc], index, exact=True)
    return [tc]


def dot_scaled(p, op: Op) -> list[Type]:
    """`tt.dot_scaled %a [scale %as], %b [scale %bs], %c lhs = e4m3 rhs = e4m3 {attrs}
    : Ta[, Tas] * Tb[, Tbs] -> Tc`; operands a, b, c, a_scale?, b_scale? (operandSegmentSizes)."""
    a = p.operand()
    a_scale = [p.operand()] if p.accept("scale") else []
    p.expect(",")
    b = p.operand()
    b_scale = [p.operand()] if p.accept("scale") else []
    p.expect(",")
    c = p.operand()
    op.operands = [a, b, c, *a_scale, *b_scale]
    op.attrs["operandSegmentSizes"] = ArrayAttr((1, 1, 1, len(a_scale), len(b_scale)), "i32")
    enum_clauses(p, op, ("lhs", "rhs"))
    p.attr_dict(op.attrs)
    p.expect(":")
    p.type()
    if p.accept(","):
        p.type()
    p.expect("*")
    p.type()
    if p.accept(","):
        p.type()
    p.expect("->")
    return [p.type()]


def clampf(p, op: Op) -> list[Type]:
    """`tt.clampf %x, %lo, %hi, propagateNan = none : T`."""
    op.operands = p.operand_list()
    p.expect(",")
    p.expect("propagateNan")
    p.expect("=")
    op.attrs["propagateNan"] = EnumAttr(p.keyword("a propagateNan value"))
    return typed_operands(p, op, op.operands)


def print_(p, op: Op) -> list[Type]:
    """`tt.print " x: " {hex = false, isSigned = array<i32: 0>} : %x : T`."""
    op.attrs["prefix"] = StrAttr(p.string())
    p.attr_dict(op.attrs)
    if p.accept(":"):
        op.operands = p.operand_list()
        index = p.i
        p.expect(":")
        p.bind_types(op.operands, p.type_list(), index, exact=True)
    return []


def assert_(p, op: Op) -> list[Type]:
    """`tt.assert %cond, "message" : T`."""
    op.operands = [p.operand()]
    p.expect(",")
    op.attrs["message"] = StrAttr(p.string())
    typed_operands(p, op, op.operands)
    return []


def inline_asm(p, op: Op) -> list[Type]:
    """`tt.elementwise_inline_asm "asm" {constraints = .., pure = ..} %a, %b : Ta, Tb -> T[, U]`."""
    op.attrs["asm_string"] = StrAttr(p.string())
    p.attr_dict(op.attrs)
    op.operands = p.operand_list()
    if op.operands:
        index = p.i
        p.expect(":")
        p.bind_types(op.operands, p.type_list(), index, exact=True)
    p.expect("->")
    return p.type_list()


def call(p, op: Op) -> list[Type]:
    """`tt.call @f(%a, %b) {attrs} : (Ta, Tb) -> T`."""
    tok = p.next()
    if tok[:1] != "@":
        raise p.error(f"expected a callee symbol (@name), found '{tok}'", p.i - 1)
    op.attrs["callee"] = symbol(tok)
    p.expect("(")
    op.operands = p.operand_list()
    p.expect(")")
    return function_signature(p, op)


def barrier(p, op: Op) -> list[Type]:
    """`ttg.barrier all` / `ttg.barrier local|global_read`."""
    words = [p.keyword("a barrier address space")]
    while p.accept("|"):
        words.append(p.keyword("a barrier address space"))
    op.attrs["addrSpace"] = EnumAttr("|".join(words))
    p.attr_dict(op.attrs)
    return []
