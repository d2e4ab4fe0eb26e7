"""The shared shapes of custom op forms (MLIR `assemblyFormat` families) and the primitives they
are built from. Each format function reads what follows the op name, fills `op.operands` and
`op.attrs`, and returns the result types. Rows of `ops.CUSTOM_FORMATS` point here.
"""

from __future__ import annotations

from ..ir.core import BoolAttr, EnumAttr, Op, PtrType, ScalarType, TensorType, Type, UnitAttr

I1 = ScalarType("i1")


def i1_like(t: Type) -> Type:
    return TensorType(t.shape, I1, t.encoding) if isinstance(t, TensorType) else I1


def pointee(t: Type) -> Type:
    """What tt.load yields through a pointer type: tensor<Nx!tt.ptr<T>> -> tensor<NxT>, !tt.ptr<T> -> T."""
    if isinstance(t, TensorType) and isinstance(t.element, PtrType):
        return TensorType(t.shape, t.element.pointee, t.encoding)
    if isinstance(t, PtrType):
        return t.pointee
    return t


def typed_operands(p, op: Op, operands) -> list[Type]:
    """`{attrs} : T` after operands whose one type is given (all share it): returns [T]."""
    p.attr_dict(op.attrs)
    index = p.i
    p.expect(":")
    t = p.type()
    p.bind_types(operands, [t] * len(operands), index)
    return [t]


_FLAGS = {"fastmath": ("fastmath", "#arith.fastmath<{}>"), "overflow": ("overflowFlags", "#arith.overflow<{}>")}


def arith_flags(p, op: Op) -> None:
    """`fastmath<fast>` / `overflow<nsw>` after arith operands."""
    while True:
        tok = p.peek()
        head, lt, rest = tok.partition("<")
        if not lt or head not in _FLAGS:
            return
        p.next()
        name, spelling = _FLAGS[head]
        op.attrs[name] = EnumAttr(rest[:-1].strip(), spelling.format(rest[:-1].strip()))


def enum_clauses(p, op: Op, keywords: tuple[str, ...]) -> None:
    """`cacheModifier = ca evictionPolicy = evict_last` in any order (MLIR's oilist)."""
    while p.peek() in keywords:
        name = p.next()
        p.expect("=")
        op.attrs[name] = EnumAttr(p.keyword(f"a value for {name}"))


def leading_enums(p, op: Op, names: tuple[str, ...]) -> None:
    """`fadd, acq_rel, gpu, ...`: enum keywords printed before the operands."""
    for name in names:
        op.attrs[name] = EnumAttr(p.keyword(f"the {name} of {op.name}"))
        p.expect(",")


# ---- families ---------------------------------------------------------------------------------


def same_type(p, op: Op) -> list[Type]:
    """`%a, %b [fastmath<..>] {attrs} : T` -> T (arith binary, math unary/ternary)."""
    op.operands = p.operand_list()
    arith_flags(p, op)
    return typed_operands(p, op, op.operands)


def cmp(p, op: Op) -> list[Type]:
    """`slt, %a, %b : T` -> i1 of T's shape."""
    op.attrs["predicate"] = EnumAttr(p.keyword("a comparison predicate"))
    p.expect(",")
    op.operands = p.operand_list()
    arith_flags(p, op)
    return [i1_like(typed_operands(p, op, op.operands)[0])]


def select(p, op: Op) -> list[Type]:
    """`%c, %a, %b : T` or `: Tcond, T`."""
    op.operands = p.operand_list()
    p.attr_dict(op.attrs)
    index = p.i
    p.expect(":")
    types = p.type_list()
    if len(types) == 1:  # MLIR prints the condition's type only when it is shaped: one type = scalar i1
        types = [I1, types[0]]
    p.bind_types(op.operands, [types[0], types[1], types[1]], index)
    return [types[1]]


def element_of(p, op: Op) -> list[Type]:
    """`%x {attrs} : tensor<1xT>` -> T (tt.unsplat)."""
    op.operands = p.operand_list()
    t = typed_operands(p, op, op.operands)[0]
    return [t.element if isinstance(t, TensorType) else t]


def cast(p, op: Op) -> list[Type]:
    """`%a {attrs} : T1 to T2` -> T2."""
    op.operands = p.operand_list()
    arith_flags(p, op)
    typed_operands(p, op, op.operands)
    p.expect("to", f"in {op.name} (T1 to T2)")
    return [p.type()]


def constant(p, op: Op) -> list[Type]:
    """`arith.constant 1024 : i32`, `dense<...> : tensor<...>`, `true`, `0xFF800000 : f32`."""
    p.attr_dict(op.attrs)
    index = p.i
    value = op.attrs["value"] = p.attr()
    t = I1 if isinstance(value, BoolAttr) else getattr(value, "type", None)
    if not isinstance(t, Type):
        raise p.error("arith.constant needs a typed value (`1 : i32`, `dense<...> : tensor<...>`)", index)
    return [t]


def arrow(p, op: Op, results: int = 1) -> list[Type]:
    """`%x [keywords] {attrs} [, name = value] : T1 -> T2` (splat, broadcast, reshape, fp_to_fp...)."""
    op.operands = p.operand_list()
    while True:
        tok = p.peek()
        if tok == "{":
            p.attr_dict(op.attrs)
        elif tok == "," and p.toks[p.i + 1][:1].isalpha():
            p.next()
            name = p.keyword()
            p.expect("=")
            op.attrs[name] = p.attr()
        elif tok[:1].isalpha() and "<" not in tok:
            op.attrs[p.next()] = UnitAttr()
        else:
            break
    index = p.i
    p.expect(":")
    src = p.type()
    p.bind_types(op.operands[:1], [src], index)  # T1 types the source (tt.histogram may add a mask)
    p.expect("->", f"in {op.name} (T1 -> T2)")
    return [p.type()] * results


def functional(p, op: Op, enums: tuple[str, ...] = ()) -> list[Type]:
    """`[enum, ...] %a, %b {attrs} : (T, T) -> T` (atomics, extern_elementwise)."""
    leading_enums(p, op, enums)
    op.operands = p.operand_list()
    return function_signature(p, op)


def function_signature(p, op: Op) -> list[Type]:
    p.attr_dict(op.attrs)
    index = p.i
    p.expect(":")
    ftype = p.function_type()
    p.bind_types(op.operands, ftype.inputs, index, exact=True)
    return list(ftype.results)


def indexed(p, op: Op) -> list[Type]:
    """`%src[%i, %j] {attrs} : (T, T, T) -> T` (tt.gather, tt.descriptor_gather)."""
    op.operands = [p.operand(), *p.bracket_operands()]
    return function_signature(p, op)


def operands_colon_types(p, op: Op) -> list[Type]:
    """`{attrs} [%a, %b : T, U]` (terminators: scf.yield, tt.return, tt.reduce.return)."""
    p.attr_dict(op.attrs)
    op.operands = p.operand_list()
    if op.operands:
        index = p.i
        p.expect(":")
        p.bind_types(op.operands, p.type_list(), index, exact=True)
    return []


def effect(p, op: Op) -> list[Type]:
    """`%c {attrs} : T` with no result (llvm.intr.assume)."""
    op.operands = p.operand_list()
    p.attr_dict(op.attrs)
    index = p.i
    p.expect(":")
    p.bind_types(op.operands, p.type_list(), index, exact=True)
    return []


def attrs_colon_type(p, op: Op) -> list[Type]:
    """`{attrs} : T` (tt.make_range, ub.poison)."""
    if p.peek() == "<":  # ub.poison <#ub.poison>
        p.next()
        p.attr()
        p.expect(">")
    p.attr_dict(op.attrs)
    p.expect(":")
    return [p.type()]
