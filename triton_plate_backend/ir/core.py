"""plate IR: a small MLIR-like IR (Module / Op / Value / Block / Region and types).

`Op` is a data record: name spelled exactly as in TTIR (`tt.load`), operands, results,
attributes, regions, location. Behaviour (parsing, printing, lowering) lives elsewhere."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..srcloc import Loc

try:
    from . import _irwalk
except ImportError:  # not built (setup.py build_ext): the Python generator walks
    _irwalk = None

# ---- types ------------------------------------------------------------------------------------


class Type:
    """Base of IR types (frozen dataclasses, hashable, printed in MLIR syntax)."""


@dataclass(frozen=True)
class ScalarType(Type):
    name: str  # i1 i8 i16 i32 i64 f16 bf16 f32 f64 f8E4M3FN f8E5M2 f8E4M3FNUZ ... index none

    def __str__(self):
        return self.name

    @property
    def is_float(self) -> bool:
        return self.name.startswith(("f", "bf", "tf"))

    @property
    def is_int(self) -> bool:
        return self.name.startswith("i") and self.name != "index"

    @property
    def bitwidth(self) -> int:
        if self.name == "index":
            return 64
        if self.name.startswith("f8"):
            return 8
        return int("".join(c for c in self.name if c.isdigit()) or 0)


@dataclass(frozen=True)
class PtrType(Type):
    pointee: Type
    addr_space: int = 1

    def __str__(self):
        return f"!tt.ptr<{self.pointee}>" if self.addr_space == 1 else f"!tt.ptr<{self.pointee}, {self.addr_space}>"


@dataclass(frozen=True)
class TensorType(Type):
    shape: tuple[int, ...]
    element: Type
    encoding: str | None = None

    def __str__(self):
        dims = "".join(f"{d}x" for d in self.shape)
        enc = f", {self.encoding}" if self.encoding else ""
        return f"tensor<{dims}{self.element}{enc}>"


@dataclass(frozen=True)
class TensorDescType(Type):
    block: TensorType

    def __str__(self):
        return f"!tt.tensordesc<{self.block}>"


@dataclass(frozen=True)
class FunctionType(Type):
    inputs: tuple[Type, ...]
    results: tuple[Type, ...]

    def __str__(self):
        ins = ", ".join(map(str, self.inputs))
        outs = ", ".join(map(str, self.results))
        return f"({ins}) -> ({outs})" if len(self.results) != 1 else f"({ins}) -> {outs}"


@dataclass(frozen=True)
class OpaqueType(Type):
    """A type plate does not model; kept as text so it prints back."""

    text: str

    def __str__(self):
        return self.text


def _keep_str(cls: type) -> None:
    """The type's text, kept on it once printed (a function of its fields: every op prints its types)."""
    printed = cls.__str__

    def __str__(self) -> str:
        text = self.__dict__.get("_str")
        if text is None:
            text = self.__dict__["_str"] = printed(self)
        return text

    cls.__str__ = __str__


for _cls in (PtrType, TensorType, TensorDescType, FunctionType):
    _keep_str(_cls)


def element_type(t: Type) -> Type:
    return t.element if isinstance(t, TensorType) else t


def shape_of(t: Type) -> tuple[int, ...]:
    return t.shape if isinstance(t, TensorType) else ()


# ---- attributes -------------------------------------------------------------------------------
# Attribute values are small frozen records so printing can reproduce them.


@dataclass(frozen=True)
class IntAttr:
    value: int
    type: Type | None = None  # None: bare integer (e.g. inside arrays)


@dataclass(frozen=True)
class FloatAttr:
    value: float
    type: Type | None = None
    text: str = ""  # original spelling (hex forms like 0xFF800000 keep exact bits)


@dataclass(frozen=True)
class BoolAttr:
    value: bool


@dataclass(frozen=True)
class StrAttr:
    value: str


_PRIVATE = StrAttr("private")  # (Module.kernel: a function's sym_visibility that is not the kernel's)


@dataclass(frozen=True)
class EnumAttr:
    """A keyword enum value (`slt`, `acq_rel`, `#tt<cache ca>` keeps its full text in `text`)."""

    value: str
    text: str = ""


@dataclass(frozen=True)
class DenseAttr:
    """dense<...> : tensor<...>; `values` is a tuple (one element when splat)."""

    values: tuple
    type: Type
    splat: bool = True


@dataclass(frozen=True)
class ArrayAttr:
    values: tuple
    element: str = ""  # e.g. "i32" for array<i32: 0, 1>, "" for [a, b]


@dataclass(frozen=True)
class TypeAttr:
    type: Type


@dataclass(frozen=True)
class UnitAttr:
    pass


@dataclass(frozen=True)
class SymbolRefAttr:
    name: str


# ---- values, ops, blocks, regions ---------------------------------------------------------------

# A Value's id: fresh Values count from FRESH_IDS up; `number_values` gives a module's Values 0, 1, 2, ... in the
# order its text defines them, below every fresh id.
FRESH_IDS = 1 << 40
_ids = itertools.count(FRESH_IDS)


class Value:
    __slots__ = ("type", "name", "owner", "index", "id")

    def __init__(self, type: Type, name: str = "", owner: Any = None, index: int = 0):
        self.type, self.name, self.owner, self.index = type, name, owner, index
        self.id = next(_ids)

    def __repr__(self):
        return f"%{self.name or self.id}: {self.type}"


@dataclass(eq=False)
class Op:
    name: str
    operands: list[Value] = field(default_factory=list)
    results: list[Value] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)
    regions: list[Region] = field(default_factory=list)
    loc: Loc | None = None
    successors: list[Block] = field(default_factory=list)  # cf.br / cf.cond_br targets
    parent: Block | None = None

    @property
    def result(self) -> Value:
        if len(self.results) != 1:
            raise ValueError(f"{self.name} has {len(self.results)} results, not one")
        return self.results[0]

    def walk(self) -> Iterator[Op]:
        """Pre-order walk of this op and every op nested in its regions."""
        yield self
        for region in self.regions:
            for block in region.blocks:
                for op in list(block.ops):
                    if op.regions:
                        yield from op.walk()
                    else:  # a leaf yields itself: no generator per op (most ops are leaves)
                        yield op

    def __repr__(self):
        return f"<Op {self.name} at {self.loc}>"


walk_py = Op.walk  # the reference: `Op.walk` is this generator in C where it is built (ir/csrc/irwalk.cpp)
if _irwalk is not None:
    Op.walk = _irwalk.walk_method(Op)


@dataclass(eq=False)
class Block:
    args: list[Value] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)
    parent: Region | None = None

    def append(self, op: Op) -> Op:
        op.parent = self
        self.ops.append(op)
        return op


@dataclass(eq=False)
class Region:
    blocks: list[Block] = field(default_factory=list)
    parent: Op | None = None


@dataclass(eq=False)
class Module:
    ops: list[Op] = field(default_factory=list)  # tt.func ops (and anything else at top level)
    attrs: dict[str, Any] = field(default_factory=dict)

    def walk(self) -> Iterator[Op]:
        for op in self.ops:
            yield from op.walk()

    def functions(self) -> list[Op]:
        return [op for op in self.ops if op.name == "tt.func"]

    def kernel(self) -> Op:
        """The public entry function (Triton modules hold one public tt.func): the first tt.func not private (one
        loop and one StrAttr made at import: asked 4-5 times a compile)."""
        for op in self.ops:
            if op.name == "tt.func" and op.attrs.get("sym_visibility") != _PRIVATE:
                return op
        raise ValueError("module has no public tt.func")


def new_op(name: str, operands=(), result_types=(), attrs=None, regions=(), loc=None) -> Op:
    """Build an op with fresh result values owned by it."""
    op = Op(name, list(operands), [], dict(attrs or {}), list(regions), loc)
    op.results = [Value(t, owner=op, index=i) for i, t in enumerate(result_types)]
    for r in op.regions:
        r.parent = op
    return op


def defined_values(root: Module | Op) -> Iterator[Value]:
    """Every Value defined in `root`, in the order the printed text defines them: an op's results, then its
    regions' block arguments and the ops inside them."""
    for op in root.walk():
        yield from op.results
        for region in op.regions:
            for block in region.blocks:
                yield from block.args


def number_values(root: Module | Op) -> bool:
    """Number the Values of `root` 0, 1, 2, ... in definition order (`defined_values`): True when that changed an
    id. A fresh Value's id tells when it was created, which differs between the passes that built a module and a
    parse of its printed text (and with whatever the process created before); after this, what orders Values by
    id (passes/affine.py) or prints it depends on the IR alone. Values created afterwards order after all of
    these, in the order they are created."""
    changed, i = False, 0
    for op in root.walk():  # defined_values' order, walked inline (no generator resumed per Value)
        for v in op.results:
            if v.id != i:
                v.id, changed = i, True
            i += 1
        for region in op.regions:
            for block in region.blocks:
                for v in block.args:
                    if v.id != i:
                        v.id, changed = i, True
                    i += 1
    return changed


def release(module: Module) -> None:
    """Unlink a module nobody reads again: each op's, block's and region's parent and each value's owner
    (the back links that make the IR one reference cycle), so reference counting frees it at once instead
    of Python's cycle collector walking it first. A top-level op still nested in the parsed
    ``builtin.module`` op is released from there."""
    roots = {}
    for top in module.ops:
        while top.parent is not None and top.parent.parent is not None and top.parent.parent.parent is not None:
            top = top.parent.parent.parent
        roots[id(top)] = top
    for top in roots.values():
        for op in top.walk():
            op.parent = None
            for v in op.results:
                v.owner = None
            for region in op.regions:
                region.parent = None
                for block in region.blocks:
                    block.parent = None
                    for v in block.args:
                        v.owner = None


def replace_all_uses(root: Module | Op, old: Value, new: Value) -> None:
    for op in root.walk():
        op.operands = [new if v is old else v for v in op.operands]
