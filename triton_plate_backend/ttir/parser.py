"""TTIR text -> plate IR (`ir.core.Module`), by recursive descent over the lexer's tokens.

The parser knows MLIR's shared grammar: SSA names and their region scoping, blocks and
successors, regions, the generic op form `"op"(...) <{props}> ({regions}) {attrs} : (T) -> T`,
attribute values, types, locations and `#alias = ...` definitions. What each op looks like in
its CUSTOM printed form lives in ONE table, `ops.CUSTOM_FORMATS`; the small primitives here
(`operand_list`, `type`, `attr_dict`, `region`, ...) are what those format functions use.

The loops over a block's ops and the module's items, the commonest op forms (`COMPILED_FORMS`, by their
format function), `#name = loc(...)`, `opt_loc` and the locations' resolution run in C (`_ttirparse`,
ttir/csrc/ttirparse.cpp, built by setup.py) when it is built: the same IR, and everything else (and every
error) through the Python methods here, which stay the reference (`ops_into_py`, `module_items_py`,
`opt_loc_py`, `resolve_locs_py`; tests/test_compiled_parser.py compares both).
"""

from __future__ import annotations

from ..ir.core import Block, BoolAttr, EnumAttr, IntAttr, Module, Op, Region, ScalarType, Type, TypeAttr, Value
from ..ir.vocabulary import ISOLATED
from ..srcloc import Loc
from . import attrs as A
from . import formats as F
from . import locs as L
from . import tt_formats as TT
from . import types as T
from .errors import TtirParseError
from .lexer import EOF, error_at, tokenize
from .locs import LocResolver
from .ops import CUSTOM_FORMATS
from .types import SCALAR, TypeSyntaxError

try:  # the loops compiled (optional: without it, the Python methods below)
    from . import _ttirparse
except ImportError:
    _ttirparse = None

_FORWARD = object()  # owner of a placeholder for a value used before its definition
# names scoped like the vocabulary's isolated ops: `module` is how builtin.module prints (its format
# renames it), func.func / llvm.func are MLIR functions outside TTIR that only the generic form reads
_ISOLATED = ISOLATED | {"module", "func.func", "llvm.func"}


def parse(text: str, filename: str = "<ttir>") -> Module:
    """Parse TTIR text (custom or generic op forms, with or without locations)."""
    parser = Parser(text, filename)
    try:
        return parser.parse_module()
    except RecursionError:
        raise parser.error("regions nested too deeply to parse") from None
    except (A.AttrSyntaxError, TypeSyntaxError) as e:  # raised below a primitive that had no token index
        raise parser.error(str(e)) from None
    except (IndexError, KeyError, ValueError, TypeError, AttributeError) as e:
        # a gap in the parser, not in the text's grammar: still point at the text
        raise parser.error(f"internal parser error ({type(e).__name__}: {e}); please report this input") from e


class Parser:
    def __init__(self, text: str, filename: str = "<ttir>"):
        self.text, self.filename = text, filename
        self.toks = tokenize(text)
        self.i = 0
        self.values: dict[str, Value] = {}  # visible SSA names
        self.scopes: list[list[str]] = []  # names defined in each open region
        self.blocks: dict[str, tuple[Block, int]] = {}  # labels of the innermost region: block, first use
        self.forward: dict[str, tuple[Value, int]] = {}  # placeholder, token index of first use
        self.resolved: dict[Value, Value] = {}  # placeholder -> definition
        self.loc_aliases: dict[str, tuple] = {}
        self.attr_aliases: dict[str, object] = {}
        self.pending_locs: list[tuple[Op, tuple, int]] = []  # op, location tree, token index

    # ---- errors and tokens ---------------------------------------------------------------

    def error(self, message: str, index: int | None = None) -> TtirParseError:
        return error_at(self.text, self.filename, self.i if index is None else index, message)

    def peek(self) -> str:
        return self.toks[self.i]

    def next(self) -> str:
        tok = self.toks[self.i]
        if tok == EOF:
            raise self.error("unexpected end of input")
        self.i += 1
        return tok

    def accept(self, tok: str) -> bool:
        if self.toks[self.i] == tok:
            self.i += 1
            return True
        return False

    def expect(self, tok: str, context: str = "") -> None:
        if self.toks[self.i] != tok:
            found = self.toks[self.i] or "end of input"
            raise self.error(f"expected '{tok}'{' ' + context if context else ''}, found '{found}'")
        self.i += 1

    def keyword(self, what: str = "a keyword") -> str:
        tok = self.toks[self.i]
        if not (tok[:1].isalpha() or tok[:1] == "_") or "<" in tok:
            raise self.error(f"expected {what}, found '{tok or 'end of input'}'")
        self.i += 1
        return tok

    def integer(self) -> int:
        tok = self.toks[self.i]
        try:
            value = int(tok, 0)
        except ValueError:
            raise self.error(f"expected an integer, found '{tok or 'end of input'}'") from None
        self.i += 1
        return value

    def string(self) -> str:
        tok = self.toks[self.i]
        if tok[:1] != '"' or len(tok) < 2:
            raise self.error(f"expected a string, found '{tok or 'end of input'}'")
        self.i += 1
        try:
            return A.decode_string(tok)
        except A.AttrSyntaxError as e:
            raise self.error(str(e), self.i - 1) from None

    # ---- SSA values ----------------------------------------------------------------------

    def use(self, tok: str, type: Type | None = None) -> Value:
        name = tok[1:]
        v = self.values.get(name)
        if v is None:
            v = self._alias_group_name(name)
        if v is None:
            entry = self.forward.get(name)
            if entry is None:
                entry = self.forward[name] = (Value(type, name, _FORWARD), self.i - 1)
            v = entry[0]
        return v

    def _alias_group_name(self, name: str) -> Value | None:
        # `%5` names result 0 of the group `%5:2`; `%x#0` names the single result `%x`
        if "#" not in name:
            return self.values.get(name + "#0")
        base, _, k = name.partition("#")
        return self.values.get(base) if k == "0" else None

    def define(self, name: str, value: Value, index: int) -> None:
        if name in self.values:
            raise self.error(f"redefinition of SSA value '%{name}'", index)
        if name in self.forward:
            placeholder, _ = self.forward.pop(name)
            if placeholder.type is not None and placeholder.type != value.type:
                raise self.error(
                    f"'%{name}' was used as {placeholder.type} before its definition as {value.type}", index
                )
            self.resolved[placeholder] = value
        value.name = name
        self.values[name] = value
        self.scopes[-1].append(name)

    def operand(self) -> Value:
        tok = self.toks[self.i]
        if tok[:1] != "%":
            raise self.error(f"expected an SSA value (%name), found '{tok or 'end of input'}'")
        self.i += 1
        return self.use(tok)

    def operand_list(self) -> list[Value]:
        """Zero or more comma-separated SSA uses."""
        if self.toks[self.i][:1] != "%":
            return []
        out = [self.operand()]
        while self.toks[self.i] == "," and self.toks[self.i + 1][:1] == "%":
            self.i += 1
            out.append(self.operand())
        return out

    def bracket_operands(self) -> list[Value]:
        self.expect("[")
        out = self.operand_list()
        self.expect("]")
        return out

    # ---- types ---------------------------------------------------------------------------

    type = T.parse_type
    elided_type = T.parse_elided_type
    type_list = T.parse_type_list
    paren_types = T.parse_paren_types
    result_types = T.parse_result_types
    function_type = T.parse_function_type
    attr = A.parse_attr
    attr_dict = A.parse_attr_dict
    opt_loc = L.parse_opt_loc

    # ---- regions and blocks --------------------------------------------------------------

    def block_ref(self) -> Block:
        tok = self.toks[self.i]
        if tok[:1] != "^":
            raise self.error(f"expected a block label (^bb1), found '{tok or 'end of input'}'")
        self.i += 1
        entry = self.blocks.get(tok)
        if entry is None:
            entry = self.blocks[tok] = (Block(), self.i - 1)
        return entry[0]

    def region(self, owner: Op, entry_args: list[tuple[str, Type, int]] | None = None) -> Region:
        """`{ ops }` or `{ ^bb0(...): ops ^bb1: ops }`. `entry_args` are (name, type, token index)
        for ops whose syntax declares the entry block's arguments (scf.for, tt.func)."""
        self.expect("{", f"to open a region of {owner.name}")
        region = Region(parent=owner)
        outer_blocks, self.blocks = self.blocks, {}
        self.scopes.append([])
        if entry_args is not None and self.toks[self.i][:1] == "^":
            raise self.error(f"the entry block of {owner.name} takes its arguments from the op; drop the label")
        if self.toks[self.i][:1] != "^" and (self.toks[self.i] != "}" or entry_args is not None):
            block = self._new_block(region)
            for name, type, index in entry_args or ():
                self._block_arg(block, name, type, index)
            self._ops_into(block)
        while self.toks[self.i][:1] == "^":
            self._labeled_block(region)
        self.expect("}", f"to close a region of {owner.name}")
        for label, (block, first_use) in self.blocks.items():
            if block.parent is None:
                raise self.error(f"block {label} is used but never defined", first_use)
        for name in self.scopes.pop():
            del self.values[name]
        self.blocks = outer_blocks
        return region

    def _new_block(self, region: Region, block: Block | None = None) -> Block:
        block = block or Block()
        block.parent = region
        region.blocks.append(block)
        return block

    def _block_arg(self, block: Block, name: str, type: Type, index: int) -> None:
        v = Value(type, name, block, len(block.args))
        block.args.append(v)
        self.define(name, v, index)

    def _labeled_block(self, region: Region) -> None:
        label_index = self.i
        label = self.next()
        block, first_use = self.blocks.get(label, (None, label_index))
        if block is not None and block.parent is not None:
            raise self.error(f"redefinition of block {label}", label_index)
        block = self._new_block(region, block)
        self.blocks[label] = (block, first_use)
        if self.accept("("):
            if not self.accept(")"):
                while True:
                    index = self.i
                    tok = self.next()
                    if tok[:1] != "%":
                        raise self.error(f"expected a block argument (%name), found '{tok}'", index)
                    self.expect(":", "after a block argument name")
                    self._block_arg(block, tok[1:], self.type(), index)
                    self.opt_loc()
                    if not self.accept(","):
                        break
                self.expect(")", "to close the block arguments")
        self.expect(":", f"after block label {label}")
        self._ops_into(block)

    def _ops_into(self, block: Block) -> None:
        toks = self.toks
        while True:
            tok = toks[self.i]
            if tok == "}" or tok[:1] == "^" or tok == EOF:
                return
            self.parse_op(block)

    # ---- operations ----------------------------------------------------------------------

    def parse_op(self, block: Block | None) -> Op:
        toks = self.toks
        results: list[tuple[str, int, int]] = []  # name, count, token index
        bound = 0
        if toks[self.i][:1] == "%":
            while True:
                index = self.i
                name = toks[self.i][1:]
                self.i += 1
                count = 1
                if self.accept(":"):
                    count = self.integer()
                    if count < 1:
                        raise self.error("a result group needs at least one result", index)
                results.append((name, count, index))
                bound += count
                if not self.accept(","):
                    break
                if toks[self.i][:1] != "%":
                    raise self.error(f"expected a result name, found '{toks[self.i] or 'end of input'}'")
            self.expect("=", "after the result names")
        name_index = self.i
        tok = self.next()
        if tok[:1] == '"':
            op = Op(A.decode_string(tok))
            fmt = Parser.generic_body
        else:
            fmt = CUSTOM_FORMATS.get(tok)
            if fmt is None:
                if tok[:1].isalpha():
                    raise self.error(
                        f"unknown op '{tok}' in custom form; plate reads ops it has no format for only in MLIR's "
                        f'generic form ("{tok}"(%a) : (T) -> T)',
                        name_index,
                    )
                raise self.error(f"expected an op, found '{tok or 'end of input'}'", name_index)
            op = Op(tok)
        if op.name in _ISOLATED:
            saved = self._enter_isolated()
            types = fmt(self, op)
            self._leave_isolated(op, saved)
        else:
            types = fmt(self, op)
        loc_index = self.i
        tree = self.opt_loc()
        if tree is not None:
            self.pending_locs.append((op, tree, loc_index))
        if bound != len(types):
            raise self.error(f"{op.name} has {len(types)} result(s) but {bound} name(s) are bound", name_index)
        op.results = [Value(t, "", op, k) for k, t in enumerate(types)]
        k = 0
        for name, n, index in results:
            if n == 1:
                self.define(name, op.results[k], index)
            else:
                for j in range(n):
                    self.define(f"{name}#{j}", op.results[k + j], index)
            k += n
        if block is not None:
            op.parent = block
            block.ops.append(op)
        return op

    def generic_body(self, op: Op) -> list[Type]:
        """`(%a, %b) [^succ] <{props}> ({regions}) {attrs} : (T, T) -> (T)` after the quoted name."""
        self.expect("(", f'after the generic op name "{op.name}"')
        op.operands = self.operand_list()
        self.expect(")", "to close the operand list")
        if self.accept("["):
            op.successors.append(self.block_ref())
            while self.accept(","):
                op.successors.append(self.block_ref())
            self.expect("]")
        if self.toks[self.i] == "<" and self.toks[self.i + 1] == "{":
            self.i += 1
            self.attr_dict(op.attrs)
            self.expect(">", "to close the properties <{...}>")
        if self.toks[self.i] == "(" and self.toks[self.i + 1] == "{":
            self.i += 1
            op.regions.append(self.region(op))
            while self.accept(","):
                op.regions.append(self.region(op))
            self.expect(")", "to close the region list")
        self.attr_dict(op.attrs)
        index = self.i
        self.expect(":", f'before the function type of "{op.name}"')
        ftype = self.function_type()
        self.bind_types(op.operands, ftype.inputs, index, exact=True)
        return list(ftype.results)

    def bind_types(self, values: list[Value], types, index: int, exact: bool = False) -> None:
        """Check operands against the types the text gives for them (and type forward uses)."""
        if exact and len(values) != len(types):
            raise self.error(f"{len(values)} operand(s) but {len(types)} operand type(s)", index)
        for v, t in zip(values, types):
            if v.type is t:
                continue
            if v.type is None and v.owner is _FORWARD:
                v.type = t
            elif v.type != t:
                raise self.error(f"operand %{v.name} has type {v.type}, but the text gives {t}", index)

    def _enter_isolated(self):
        saved = (self.values, self.forward, self.resolved)
        self.values, self.forward, self.resolved = {}, {}, {}
        return saved

    def _leave_isolated(self, op: Op, saved) -> None:
        if self.forward:
            name, (_, index) = next(iter(self.forward.items()))
            raise self.error(f"use of undefined SSA value '%{name}'", index)
        if self.resolved:
            resolved = self.resolved
            for inner in op.walk():
                inner.operands = [resolved.get(v, v) for v in inner.operands]
        self.values, self.forward, self.resolved = saved

    # ---- module --------------------------------------------------------------------------

    def parse_module(self) -> Module:
        top = Block()
        self.scopes.append([])
        self._module_items(top)
        self.scopes.pop()
        if len(top.ops) == 1 and top.ops[0].name == "builtin.module":
            mod_op = top.ops[0]
            body = mod_op.regions[0].blocks[0].ops if mod_op.regions and mod_op.regions[0].blocks else []
            module = Module(list(body), dict(mod_op.attrs))
            # the wrapper is dropped: unlinked from the body, its few objects are not a cycle that holds
            # the whole module until Python's cycle collector runs (ir.core.release)
            for region in mod_op.regions:
                for block in region.blocks:
                    block.ops, block.parent = [], None
                region.parent = None
            mod_op.regions, mod_op.parent = [], None
        else:
            module = Module(list(top.ops))
        for op in module.ops:
            op.parent = None
        self._resolve_locs()
        return module

    def _module_items(self, top: Block) -> None:
        """The ops and `#name = ...` alias definitions at the top of the text."""
        while self.peek() != EOF:
            tok = self.peek()
            if tok[:1] == "#" and "<" not in tok and self.toks[self.i + 1] == "=":
                self._alias_definition()
            else:
                self.parse_op(top)

    def _alias_definition(self) -> None:
        index = self.i
        name = self.next()[1:]
        self.expect("=")
        if name in self.loc_aliases or name in self.attr_aliases:
            raise self.error(f"redefinition of alias #{name}", index)
        if self.peek() == "loc":
            self.loc_aliases[name] = self.opt_loc()
        elif self.peek()[:1] == "!" or SCALAR.match(self.peek()):
            self.attr_aliases[name] = TypeAttr(self.type())
        else:
            self.attr_aliases[name] = self.attr()

    def _resolve_locs(self) -> None:
        resolve = LocResolver(self.loc_aliases)
        for op, tree, index in self.pending_locs:
            try:
                op.loc = resolve(tree)
            except KeyError as e:
                raise self.error(f"location alias #{e.args[0]} (used by {op.name}) is never defined", index) from None
            except ValueError as e:
                raise self.error(str(e), index) from None


# The custom forms ttir/csrc/ttirparse.cpp reads itself (when written the plain way; it hands any other op, and
# any text it does not accept, to `Parser.parse_op`), by the format function `ops.CUSTOM_FORMATS` names.
COMPILED_FORMS = {
    F.same_type: "same_type",
    F.cmp: "cmp",
    F.arrow: "arrow",
    F.cast: "cast",
    F.constant: "constant",
    F.attrs_colon_type: "attrs_colon_type",
    F.operands_colon_types: "operands_colon_types",
    TT.load: "load",
    TT.store: "store",
    TT.addptr: "addptr",
    TT.program_axis: "program_axis",
}

ops_into_py = Parser._ops_into  # the references
module_items_py = Parser._module_items
resolve_locs_py = Parser._resolve_locs
opt_loc_py = Parser.opt_loc


def _ops_into_compiled(self: Parser, block: Block) -> None:
    _ttirparse.ops_into(self, block)


def _module_items_compiled(self: Parser, top: Block) -> None:
    _ttirparse.module_items(self, top)


def _opt_loc_compiled(self: Parser):
    return _ttirparse.opt_loc(self)


def _resolve_locs_compiled(self: Parser) -> None:
    if not _ttirparse.resolve_locs(self.pending_locs, self.loc_aliases):
        resolve_locs_py(self)  # a location that does not resolve: the Python code raises its error


if _ttirparse is not None:
    _ttirparse.setup(
        {
            "forms": {
                name: COMPILED_FORMS[fmt]
                for name, fmt in CUSTOM_FORMATS.items()
                if fmt in COMPILED_FORMS and name not in _ISOLATED
            },
            "Op": Op,
            "Value": Value,
            "EnumAttr": EnumAttr,
            "Type": Type,
            "BoolAttr": BoolAttr,
            "I1": F.I1,
            "TYPE_CACHE": T.TYPE_CACHE,
            "parse_type": T.parse_type,
            "parse_attr": A.parse_attr,
            "parse_attr_dict": A.parse_attr_dict,
            "parse_opt_loc": L.parse_opt_loc,
            "i1_like": F.i1_like,
            "pointee": F.pointee,
            "UNKNOWN_LOC": L.UNKNOWN,
            "Loc": Loc,
            "IntAttr": IntAttr,
            "ScalarType": ScalarType,
        }
    )
    Parser._ops_into = _ops_into_compiled
    Parser._module_items = _module_items_compiled
    Parser._resolve_locs = _resolve_locs_compiled
    Parser.opt_loc = _opt_loc_compiled
