"""Custom forms of the ops that carry regions or successors: builtin.module, tt.func, scf.for,
scf.while, scf.if, scf.condition, cf.br, cf.cond_br. Rows of `ops.CUSTOM_FORMATS`.

Like MLIR, scf.for and scf.if bodies without results may omit their `scf.yield`; the parser
adds it back, so every block of plate IR ends with its terminator.
"""

from __future__ import annotations

from ..ir.core import ArrayAttr, FunctionType, Op, Region, ScalarType, StrAttr, Type, TypeAttr, UnitAttr
from .attrs import symbol

INDEX = ScalarType("index")


def _implicit_yield(region: Region) -> None:
    for block in region.blocks:
        if not block.ops or block.ops[-1].name != "scf.yield":
            block.append(Op("scf.yield"))


def _bound_names(p) -> list[tuple[str, object, int]]:
    """`(%a = %x, %b = %y)` after `iter_args` or `scf.while`: (name, init value, token index)."""
    p.expect("(")
    out = []
    if p.accept(")"):
        return out
    while True:
        index = p.i
        tok = p.next()
        if tok[:1] != "%":
            raise p.error(f"expected a region argument (%name), found '{tok}'", index)
        p.expect("=")
        out.append((tok[1:], p.operand(), index))
        if not p.accept(","):
            break
    p.expect(")")
    return out


def scf_for(p, op: Op) -> list[Type]:
    """`scf.for [unsigned] %iv = %lb to %ub step %s [iter_args(%a = %x) -> (T)] [: T] {...} {attrs}`."""
    if p.accept("unsigned"):
        op.attrs["unsignedCmp"] = UnitAttr()
    iv_index = p.i
    iv = p.next()
    if iv[:1] != "%":
        raise p.error(f"expected the induction variable (%name), found '{iv}'", iv_index)
    p.expect("=")
    bounds = [p.operand()]
    p.expect("to")
    bounds.append(p.operand())
    p.expect("step")
    bounds.append(p.operand())
    carried, types = [], []
    if p.accept("iter_args"):
        carried = _bound_names(p)
        index = p.i
        p.expect("->")
        types = p.result_types()
        if len(types) != len(carried):
            raise p.error(f"{len(carried)} iter_args but {len(types)} result type(s)", index)
        p.bind_types([v for _, v, _ in carried], types, index)
    iv_type = p.type() if p.accept(":") else INDEX
    op.operands = bounds + [v for _, v, _ in carried]
    entry = [(iv[1:], iv_type, iv_index)] + [(n, t, i) for (n, _, i), t in zip(carried, types)]
    body = p.region(op, entry)
    op.regions.append(body)
    p.attr_dict(op.attrs)
    if not types:
        _implicit_yield(body)
    return types


def scf_while(p, op: Op) -> list[Type]:
    """`scf.while [(%a = %x, ...)] : (T) -> (U) {before} do {after} [attributes {attrs}]`."""
    carried = _bound_names(p) if p.peek() == "(" else []
    index = p.i
    p.expect(":")
    ftype = p.function_type()
    if len(ftype.inputs) != len(carried):
        raise p.error(f"{len(carried)} initial value(s) but {len(ftype.inputs)} type(s)", index)
    op.operands = [v for _, v, _ in carried]
    p.bind_types(op.operands, ftype.inputs, index)
    op.regions.append(p.region(op, [(n, t, i) for (n, _, i), t in zip(carried, ftype.inputs)]))
    p.expect("do", "between the two regions of scf.while")
    op.regions.append(p.region(op))
    if p.accept("attributes") or p.peek() == "{":
        p.attr_dict(op.attrs)
    return list(ftype.results)


def scf_if(p, op: Op) -> list[Type]:
    """`scf.if %cond [-> (T)] {then} [else {else}] {attrs}`."""
    op.operands = [p.operand()]
    types = p.result_types() if p.accept("->") else []
    op.regions.append(p.region(op, []))
    # `else {}` written out still gets a block (and its scf.yield), as MLIR's parser does
    op.regions.append(p.region(op, []) if p.accept("else") else Region(parent=op))
    p.attr_dict(op.attrs)
    if not types:
        for region in op.regions:
            _implicit_yield(region)
    return types


def scf_condition(p, op: Op) -> list[Type]:
    """`scf.condition(%c) %a, %b : Ta, Tb`."""
    p.expect("(")
    op.operands = [p.operand()]
    p.expect(")")
    p.attr_dict(op.attrs)
    rest = p.operand_list()
    if rest:
        index = p.i
        p.expect(":")
        p.bind_types(rest, p.type_list(), index, exact=True)
    op.operands += rest
    return []


def _successor(p, op: Op) -> int:
    """`^bb1` or `^bb1(%a, %b : Ta, Tb)`; returns how many operands it passed."""
    op.successors.append(p.block_ref())
    if not p.accept("("):
        return 0
    args = p.operand_list()
    index = p.i
    p.expect(":")
    p.bind_types(args, p.type_list(), index, exact=True)
    p.expect(")")
    op.operands += args
    return len(args)


def cf_br(p, op: Op) -> list[Type]:
    _successor(p, op)
    p.attr_dict(op.attrs)
    return []


def cf_cond_br(p, op: Op) -> list[Type]:
    """`cf.cond_br %c, ^bb1[(args)], ^bb2[(args)]`; operandSegmentSizes splits the operands."""
    op.operands = [p.operand()]
    p.expect(",")
    n_true = _successor(p, op)
    p.expect(",")
    n_false = _successor(p, op)
    op.attrs["operandSegmentSizes"] = ArrayAttr((1, n_true, n_false), "i32")
    p.attr_dict(op.attrs)
    return []


def func(p, op: Op) -> list[Type]:
    """`tt.func [public|private] @name(%x: T {attrs} loc(..), ...) [-> T] [attributes {..}] [{body}]`.

    Attributes: sym_name, function_type (TypeAttr of FunctionType), sym_visibility, arg_attrs /
    res_attrs (ArrayAttr of one dict per argument, as MLIR; only when some are non-empty)."""
    if p.peek() in ("public", "private", "nested"):
        op.attrs["sym_visibility"] = StrAttr(p.next())
    tok = p.next()
    if tok[:1] != "@":
        raise p.error(f"expected the function name (@name), found '{tok}'", p.i - 1)
    op.attrs["sym_name"] = StrAttr(symbol(tok).name)
    p.expect("(")
    args, arg_attrs = [], []
    if not p.accept(")"):
        while True:
            index, name = p.i, None
            if p.peek()[:1] == "%":
                name = p.next()[1:]
                p.expect(":")
            args.append((name, p.type(), index))
            arg_attrs.append(p.attr_dict({}))
            p.opt_loc()
            if not p.accept(","):
                break
        p.expect(")", "to close the function arguments")
    results, res_attrs = [], []
    if p.accept("->"):
        if p.accept("("):
            while p.peek() != ")":
                results.append(p.type())
                res_attrs.append(p.attr_dict({}))
                if not p.accept(","):
                    break
            p.expect(")")
        else:
            results.append(p.type())
            res_attrs.append({})
    if p.accept("attributes"):
        p.attr_dict(op.attrs)
    op.attrs["function_type"] = TypeAttr(FunctionType(tuple(t for _, t, _ in args), tuple(results)))
    if any(arg_attrs):
        op.attrs["arg_attrs"] = ArrayAttr(tuple(arg_attrs))
    if any(res_attrs):
        op.attrs["res_attrs"] = ArrayAttr(tuple(res_attrs))
    if p.peek() == "{":
        unnamed = [index for name, _, index in args if name is None]
        if unnamed:
            raise p.error("a function with a body needs named arguments (%name: type)", unnamed[0])
        op.regions.append(p.region(op, args))
    else:
        op.regions.append(Region(parent=op))
    return []


def module(p, op: Op) -> list[Type]:
    """`module [@name] [attributes {...}] { ... }`."""
    op.name = "builtin.module"
    if p.peek()[:1] == "@":
        op.attrs["sym_name"] = StrAttr(symbol(p.next()).name)
    if p.accept("attributes"):
        p.attr_dict(op.attrs)
    op.regions.append(p.region(op))
    return []
