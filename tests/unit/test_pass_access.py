"""Structured access analysis: every StructuredAccess is checked against a direct numpy evaluation of
the op's pointer and mask tensors (element addresses and validity), for random argument values."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ttir_fixtures import fixture_text

from triton_plate_backend.ir.core import (
    ArrayAttr,
    Block,
    BoolAttr,
    DenseAttr,
    EnumAttr,
    IntAttr,
    Module,
    Op,
    PtrType,
    Region,
    ScalarType,
    TensorType,
    Value,
    new_op,
    shape_of,
)
from triton_plate_backend.passes import affine as A
from triton_plate_backend.passes.access import (
    MEMORY_OPS,
    GatherAccess,
    StructuredAccess,
    access_report,
    analyze,
    carried_pointers,
    pointer_access,
)
from triton_plate_backend.srcloc import Loc

I1, I32, I64, F32, F16 = (ScalarType(n) for n in ("i1", "i32", "i64", "f32", "f16"))
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CORPUS_SETTINGS = settings(SETTINGS, max_examples=12)


def itemsize(name: str) -> int:
    return 1 if name.startswith("f8") or name in ("i1", "i8") else int("".join(c for c in name if c.isdigit())) // 8


# ---- reference: evaluate the IR directly with numpy --------------------------------------------------


def _tdiv(a, b):
    """C division (toward zero); x / 0 reads as 0 here (only reference scalars that no access uses)."""
    b1 = np.where(b == 0, 1, b)
    q = np.abs(a) // np.abs(b1)
    return np.where(b == 0, 0, np.where((a < 0) != (b1 < 0), -q, q))


def _unsigned(x, op):
    bits = op.operands[0].type
    bits = (bits.element if isinstance(bits, TensorType) else bits).bitwidth
    return np.asarray(x).astype(np.int64) & ((1 << bits) - 1)


_CMP = {
    "eq": np.equal, "ne": np.not_equal, "slt": np.less, "sle": np.less_equal, "sgt": np.greater,
    "sge": np.greater_equal,
}  # fmt: skip


def _cmpi(op, a, b):
    p = op.attrs["predicate"].value
    if p.startswith("u"):
        return _CMP["s" + p[1:]](_unsigned(a, op), _unsigned(b, op))
    return _CMP[p](a, b)


def _attr(x):
    return x.value if hasattr(x, "value") else x


def _constant(op):
    v, t = op.attrs["value"], op.results[0].type
    if isinstance(v, DenseAttr):
        vals = np.array(v.values)
        return np.broadcast_to(vals, t.shape).copy() if v.splat else vals.reshape(t.shape)
    return np.array(_attr(v))


def _pointee_size(t) -> int:
    t = t.element if isinstance(t, TensorType) else t
    return itemsize(str(t.pointee))


class Ref:
    """Evaluates integer, i1 and pointer values of a kernel: pointers are byte addresses, block pointers
    and descriptors tuples. A context is a tuple of (scf.for op, iteration) from the outside in."""

    def __init__(self, args: dict[Value, int], pid=(0, 0, 0), nprog=(1, 1, 1)):
        self.args, self.pid, self.nprog, self.memo = args, pid, nprog, {}

    def __call__(self, v: Value, ctx=()):
        key = (v, ctx)
        if key not in self.memo:
            self.memo[key] = self._eval(v, ctx)
        return self.memo[key]

    def _eval(self, v, ctx):
        if isinstance(v.owner, Block):
            return self._block_arg(v, ctx)
        op = v.owner
        ins = [self(x, ctx) for x in op.operands if op.name not in ("scf.for",)]
        return self.RULES[op.name](self, op, ins)

    def _block_arg(self, v, ctx):
        block = v.owner
        if v in self.args:
            return self.args[v]
        loop = block.parent.parent
        k = next(i for i, (lp, _) in enumerate(ctx) if lp is loop)
        outer, t = ctx[:k], ctx[k][1]
        pos = block.args.index(v)
        if pos == 0:
            return self(loop.operands[0], outer) + t * self(loop.operands[2], outer)
        if t == 0:
            return self(loop.operands[3 + pos - 1], outer)
        return self(block.ops[-1].operands[pos - 1], outer + ((loop, t - 1),))

    def _axis(self, op, table):
        a = _attr(op.attrs["axis"])
        return np.int64(table["xyz".index(a) if isinstance(a, str) else a])

    RULES = {
        "arith.constant": lambda s, op, a: _constant(op),
        "tt.get_program_id": lambda s, op, a: s._axis(op, s.pid),
        "tt.get_num_programs": lambda s, op, a: s._axis(op, s.nprog),
        "tt.make_range": lambda s, op, a: np.arange(_attr(op.attrs["start"]), _attr(op.attrs["end"]), dtype=np.int64),
        "tt.splat": lambda s, op, a: np.full(shape_of(op.results[0].type), a[0]),
        "tt.addptr": lambda s, op, a: a[0] + np.asarray(a[1], dtype=np.int64) * _pointee_size(op.operands[0].type),
        "arith.addi": lambda s, op, a: a[0] + a[1],
        "arith.subi": lambda s, op, a: a[0] - a[1],
        "arith.muli": lambda s, op, a: a[0] * a[1],
        "arith.divsi": lambda s, op, a: _tdiv(a[0], a[1]),
        "arith.remsi": lambda s, op, a: a[0] - a[1] * _tdiv(a[0], a[1]),
        "arith.minsi": lambda s, op, a: np.minimum(a[0], a[1]),
        "arith.maxsi": lambda s, op, a: np.maximum(a[0], a[1]),
        "arith.extsi": lambda s, op, a: a[0],
        "arith.extui": lambda s, op, a: a[0],
        "arith.trunci": lambda s, op, a: a[0],
        "tt.bitcast": lambda s, op, a: a[0],  # pointers of one byte size (the analysis rejects the rest)
        "arith.cmpi": lambda s, op, a: _cmpi(op, a[0], a[1]),
        "arith.andi": lambda s, op, a: a[0] & a[1],
        "arith.ori": lambda s, op, a: a[0] | a[1],
        "arith.select": lambda s, op, a: np.where(a[0], a[1], a[2]),
        "tt.broadcast": lambda s, op, a: np.broadcast_to(a[0], op.results[0].type.shape),
        "tt.expand_dims": lambda s, op, a: np.expand_dims(a[0], _attr(op.attrs["axis"])),
        "tt.reshape": lambda s, op, a: np.reshape(a[0], op.results[0].type.shape),
        "tt.trans": lambda s, op, a: np.transpose(a[0], tuple(op.attrs["order"].values)),
        "tt.make_tensor_ptr": lambda s, op, a: ("bp", a[0], *np.split(np.array(a[1:], dtype=np.int64), 3)),
        "tt.advance": lambda s, op, a: (*a[0][:4], a[0][4] + np.array(a[1:], dtype=np.int64)),
        "tt.make_tensor_descriptor": lambda s, op, a: ("desc", a[0], *np.split(np.array(a[1:], dtype=np.int64), 2)),
    }


def _box(base, shape, strides, offsets, size, tile, checked):
    """Addresses and validity of a tile at per-dim `offsets` of a (shape, strides) view."""
    idx = np.indices(tile, dtype=np.int64)
    addr = np.full(tile, base, dtype=np.int64)
    valid = np.ones(tile, dtype=bool)
    for k in range(len(tile)):
        pos = offsets[k] + idx[k]
        addr = addr + pos * strides[k] * size
        if k in checked:
            valid &= (pos >= 0) & (pos < shape[k])
    return addr, valid


def reference(ref: Ref, op: Op, ctx=()):
    """(addresses, validity) of every element a memory op touches, straight from the IR."""
    ops = op.operands
    if op.name in ("tt.load", "tt.store"):
        p = ref(ops[0], ctx)
        if isinstance(p, tuple):  # block pointer
            _, base, shape, strides, offsets = p
            tile = ops[0].type.pointee.shape
            checked = set(op.attrs["boundaryCheck"].values) if "boundaryCheck" in op.attrs else set()
            return _box(base, shape, strides, offsets, itemsize(str(ops[0].type.pointee.element)), tile, checked)
        k = 1 if op.name == "tt.load" else 2
        mask = ref(ops[k], ctx) if len(ops) > k else np.ones(np.shape(p), dtype=bool)
        return np.asarray(p), np.broadcast_to(mask, np.shape(p))
    _, base, shape, strides = ref(ops[0], ctx)
    size = itemsize(str(ops[0].type.block.element))
    scalars = [ref(v, ctx) for v in ops[1:] if not isinstance(v.type, TensorType)]
    tensors = [v for v in ops[1:] if isinstance(v.type, TensorType)]
    if op.name in ("tt.descriptor_gather", "tt.descriptor_scatter"):
        rows = next(v for v in tensors if len(v.type.shape) == 1)
        data = op.results[0] if op.name == "tt.descriptor_gather" else next(v for v in tensors if v is not rows)
        tile = data.type.shape
        r = np.asarray(ref(rows, ctx))[:, None]
        addr0, valid0 = _box(base, shape, (0, strides[1]), (0, scalars[0]), size, tile, {1})  # columns
        return addr0 + r * strides[0] * size, valid0 & (r >= 0) & (r < shape[0])
    tile = (op.results[0] if op.name == "tt.descriptor_load" else tensors[0]).type.shape
    return _box(base, shape, strides, scalars, size, tile, set(range(len(tile))))


class ExprEnv:
    """The mapping affine.evaluate reads: IR values through the reference, carried companions by
    replaying their init and steps."""

    def __init__(self, ref: Ref, ctx):
        self.ref, self.ctx = ref, ctx

    def __getitem__(self, key):
        if isinstance(key, Value):
            return self.ref(key, self.ctx)
        arg, k = key
        loop = arg.owner.parent.parent
        i = next(i for i, (lp, _) in enumerate(self.ctx) if lp is loop)
        outer, t = self.ctx[:i], self.ctx[i][1]
        cp = carried_pointers(loop)[arg]
        c = A.evaluate(cp.init[k], ExprEnv(self.ref, outer))
        for s in range(t):
            c += A.evaluate(cp.step[k], ExprEnv(self.ref, outer + ((loop, s),)))
        return c


def structured(ref: Ref, acc: StructuredAccess, tile, ctx=()):
    env = ExprEnv(ref, ctx)
    idx = np.indices(tile, dtype=np.int64)
    elem = A.evaluate(acc.offset, env) + sum(idx[k] * A.evaluate(s, env) for k, s in enumerate(acc.strides))
    addr = A.evaluate(acc.base, env) + np.asarray(elem, dtype=np.int64) * itemsize(acc.element)
    valid = np.ones(tile, dtype=bool)
    for k in range(len(tile)):
        if acc.lo[k] is not None:
            valid &= idx[k] >= A.evaluate(acc.lo[k], env)
        if acc.hi[k] is not None:
            valid &= idx[k] < A.evaluate(acc.hi[k], env)
    return np.broadcast_to(addr, tile), valid


def check_against_reference(ref: Ref, op: Op, acc, ctx=()):
    assert isinstance(acc, StructuredAccess), f"{op.name} at {op.loc}: {acc}"
    want_addr, want_valid = reference(ref, op, ctx)
    tile = np.shape(want_valid)
    got_addr, got_valid = structured(ref, acc, tile, ctx)
    np.testing.assert_array_equal(got_valid, want_valid, err_msg=f"validity of {op.name} at {op.loc}")
    np.testing.assert_array_equal(
        got_addr[want_valid], np.asarray(want_addr)[want_valid], err_msg=f"addresses of {op.name} at {op.loc}"
    )
    return int(want_valid.sum())


# ---- a tiny builder for hand-made kernels ---------------------------------------------------------------


def tensor(shape, elem=I32):
    return TensorType(tuple(shape), elem)


class Builder:
    """Appends ops to a tt.func body (or to the body of the innermost open scf.for)."""

    def __init__(self, *arg_types):
        body = Block()
        self.func = new_op("tt.func", regions=[Region([body])])
        body.parent = self.func.regions[0]
        body.args = [Value(t, f"a{i}", body, i) for i, t in enumerate(arg_types)]
        self.args, self.block, self.line = body.args, body, itertools.count(1)

    def module(self) -> Module:
        return Module([self.func])

    def op(self, name, operands=(), type=None, **attrs):
        o = new_op(name, operands, [type] if type is not None else [], attrs, loc=Loc("k.py", next(self.line)))
        self.block.append(o)
        return o.results[0] if type is not None else o

    def const(self, v, type=I32):
        return self.op("arith.constant", (), type, value=IntAttr(v, type))

    def dense(self, v, shape, elem=I32):
        return self.op("arith.constant", (), tensor(shape, elem), value=DenseAttr((v,), tensor(shape, elem)))

    def arange(self, n, start=0):
        return self.op("tt.make_range", (), tensor([n]), start=IntAttr(start, I32), end=IntAttr(start + n, I32))

    def splat(self, x, shape):
        return self.op("tt.splat", [x], tensor(shape, x.type))

    def binary(self, name, x, y):
        return self.op(name, [x, y], x.type)

    def expand(self, x, axis):
        shape = list(x.type.shape)
        shape.insert(axis, 1)
        return self.op("tt.expand_dims", [x], tensor(shape, x.type.element), axis=IntAttr(axis, I32))

    def broadcast(self, x, shape):
        return self.op("tt.broadcast", [x], tensor(shape, x.type.element))

    def trans(self, x):
        shape = tuple(reversed(x.type.shape))
        return self.op("tt.trans", [x], tensor(shape, x.type.element), order=ArrayAttr((1, 0), "i32"))

    def cmpi(self, pred, x, y):
        return self.op(
            "arith.cmpi",
            [x, y],
            tensor(x.type.shape, I1) if isinstance(x.type, TensorType) else I1,
            predicate=EnumAttr(pred),
        )

    def addptr(self, p, off):
        return self.op("tt.addptr", [p, off], p.type)

    def load(self, p, mask=None, other=None):
        ops = [p] + ([mask] if mask is not None else []) + ([other] if other is not None else [])
        t = p.type
        return self.op("tt.load", ops, tensor(t.shape, t.element.pointee) if isinstance(t, TensorType) else t.pointee)

    def store(self, p, v, mask=None):
        return self.op("tt.store", [p, v] + ([mask] if mask is not None else []))

    def loop(self, lb, ub, step, *inits):
        """Open an scf.for; returns (op, iv, iter_args). Close it with end_loop(yielded...)."""
        body = Block()
        op = new_op(
            "scf.for",
            [lb, ub, step, *inits],
            [v.type for v in inits],
            regions=[Region([body])],
            loc=Loc("k.py", next(self.line)),
        )
        body.parent = op.regions[0]
        body.args = [Value(lb.type, "iv", body, 0)] + [
            Value(v.type, f"it{i}", body, i + 1) for i, v in enumerate(inits)
        ]
        self.block.append(op)
        self._outer, self.block = self.block, body
        return op, body.args[0], body.args[1:]

    def end_loop(self, *yielded):
        self.op("scf.yield", yielded)
        self.block = self._outer


def ptr_tensor(shape, elem=F32):
    return tensor(shape, PtrType(elem))


# ---- corpus kernels --------------------------------------------------------------------------------------


def parse_corpus(name: str, edit=None) -> Module:
    from triton_plate_backend.ttir.parser import parse

    text = fixture_text(name)
    return parse(edit(text) if edit else text, "kernels.py")


def kernel_args(module: Module):
    return module.kernel().regions[0].blocks[0].args


def named(module: Module, name: str) -> Value:
    """The value a kernel calls `name` (an argument or an op result), by its SSA name."""
    for v in kernel_args(module):
        if v.name == name:
            return v
    for op in module.walk():
        for v in op.results:
            if v.name == name:
                return v
    raise KeyError(name)


def memory_ops(module: Module) -> list[Op]:
    return [op for op in module.walk() if op.name in MEMORY_OPS]


def loops_around(op: Op) -> list[Op]:
    out, block = [], op.parent
    while block is not None and block.parent is not None and block.parent.parent is not None:
        parent = block.parent.parent
        if parent.name == "scf.for":
            out.append(parent)
        block = parent.parent
    return out[::-1]


def random_args(module: Module, draw_int) -> dict[Value, int]:
    """Distinct, far apart pointer bases; small ints; random values for other block arguments."""
    args = {}
    for i, v in enumerate(kernel_args(module)):
        if isinstance(v.type, PtrType):
            args[v] = (i + 1) << 28
        elif isinstance(v.type, ScalarType) and v.type.is_int:
            args[v] = draw_int()
    for op in module.walk():
        if op.name != "scf.for":
            for region in op.regions:
                for block in region.blocks:
                    for v in block.args:
                        if v not in args and isinstance(v.type, ScalarType) and v.type.is_int:
                            args[v] = draw_int()
    return args


def check_module(module: Module, data, min_structured=0):
    """Every StructuredAccess of the module against the reference, at random arguments and iterations."""
    args = random_args(module, lambda: data.draw(st.integers(0, 300)))
    pid = tuple(data.draw(st.integers(0, 4)) for _ in range(3))
    ref = Ref(args, pid=pid, nprog=tuple(p + data.draw(st.integers(1, 3)) for p in pid))
    checked = 0
    for op in memory_ops(module):
        acc = analyze(op)
        if isinstance(acc, GatherAccess):
            continue
        ctx = tuple((lp, data.draw(st.integers(0, 3))) for lp in loops_around(op))
        check_against_reference(ref, op, acc, ctx)
        checked += 1
    assert checked >= min_structured


# matmul without `% M` / `% N` on the row and column offsets: its A and B tiles become strided
def _matmul_no_mod(text: str) -> str:
    for mod, plain in (("%offs_am_11 {", "%offs_am_9 {"), ("%offs_bn_15 {", "%offs_bn_13 {")):
        assert f"tt.expand_dims {mod}" in text, "the matmul corpus file changed: update this edit"
        text = text.replace(f"tt.expand_dims {mod}", f"tt.expand_dims {plain}")
    return text


CORPUS_STRUCTURED = {  # kernel -> (edit, how many memory ops must be strided)
    "vec_add": (None, 3), "softmax": (None, 2), "layernorm": (None, 8), "attn_fwd": (None, 4),
    "block_ptr": (None, 2), "block_ptr_keepbp": (None, 2), "tensor_desc": (None, 2), "matmul": (None, 1),
    "matmul_no_mod": (_matmul_no_mod, 3), "load_store_flags": (None, 7), "desc_gather": (None, 2),
    "atomics": (None, 2), "extra_ops": (None, 9), "shape_ops": (None, 5), "casts": (None, 17),
    "while_if": (None, 3), "reduce_misc": (None, 8), "big_unrolled": (None, 66), "where_cumsum": (None, 3),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CORPUS_STRUCTURED))
@CORPUS_SETTINGS
@given(data=st.data())
def test_corpus_structured_accesses_match_reference(name, data):
    edit, count = CORPUS_STRUCTURED[name]
    module = _parsed(name, edit)
    check_module(module, data, min_structured=count)


_PARSED: dict[str, Module] = {}


def _parsed(name, edit=None) -> Module:
    if name not in _PARSED:
        _PARSED[name] = parse_corpus(name.removesuffix("_no_mod"), edit)
    return _PARSED[name]


def test_vec_add_bounds():
    m = _parsed("vec_add")
    accs = [analyze(op) for op in memory_ops(m)]
    n, pid = A.Val(named(m, "n")), A.Val(named(m, "pid"))
    for acc, base in zip(accs, ("x", "y", "o")):
        assert isinstance(acc, StructuredAccess)
        assert acc.base == A.Val(named(m, base)) and acc.element == "f32"
        assert acc.offset == A.mul(pid, 1024) and acc.strides == (A.ONE,)
        assert acc.lo == (None,) and acc.hi == (A.sub(n, A.mul(pid, 1024)),)
    assert accs[0].other is None


def test_softmax_row_stride_and_other():
    m = _parsed("softmax")
    load, store = (analyze(op) for op in memory_ops(m))
    row = A.Val(named(m, "row"))
    assert load.base == A.Val(named(m, "inp")) and load.offset == A.mul(row, A.Val(named(m, "in_stride")))
    assert load.hi == (A.Val(named(m, "n_cols")),) and load.other == float("-inf")
    assert store.offset == A.mul(row, A.Val(named(m, "out_stride"))) and store.other is None


def test_matmul_modulo_offsets_are_gathers_with_source_line():
    m = _parsed("matmul")
    a, b, c = (analyze(op) for op in memory_ops(m))
    assert isinstance(a, GatherAccess) and "arith.remsi" in a.reason and "kernels.py:56" in a.reason
    assert isinstance(b, GatherAccess) and "arith.remsi" in b.reason and "kernels.py:57" in b.reason
    assert isinstance(c, StructuredAccess) and c.strides == (A.Val(named(m, "scm")), A.ONE)
    loop = next(op for op in m.walk() if op.name == "scf.for")
    assert carried_pointers(loop) == {}


def test_matmul_loop_carried_pointer_tensors():
    m = _parsed("matmul_no_mod", _matmul_no_mod)
    loop = next(op for op in m.walk() if op.name == "scf.for")
    a_arg, b_arg = loop.regions[0].blocks[0].args[1:3]
    cps = carried_pointers(loop)
    assert set(cps) == {a_arg, b_arg}
    assert cps[a_arg].kind == "offset" and cps[a_arg].step == (A.Const(32),)
    assert cps[b_arg].step == (A.mul(A.Val(named(m, "sbk")), 32),)
    a_load, b_load, _ = (analyze(op) for op in memory_ops(m))
    assert a_load.base == A.Val(named(m, "a")) and a_load.offset == A.Carried(a_arg, 0)
    assert a_load.strides == (A.Val(named(m, "sam")), A.ONE)
    assert b_load.strides == (A.Val(named(m, "sbk")), A.ONE)
    assert a_load.hi[0] is None and a_load.hi[1] is not None and b_load.hi[1] is None
    assert a_load.other == 0.0


def test_block_pointers():
    m = _parsed("block_ptr_keepbp")
    loop = next(op for op in m.walk() if op.name == "scf.for")
    ((arg, cp),) = carried_pointers(loop).items()
    assert cp.kind == "block" and cp.step == (A.ZERO, A.Const(64))
    assert cp.init == (A.mul(A.Val(named(m, "pid")), 32), A.ZERO)
    load, store = (analyze(op) for op in memory_ops(m))
    assert load.lo == (A.neg(A.Carried(arg, 0)), A.neg(A.Carried(arg, 1))) and load.other == 0
    assert load.hi == (A.sub(A.Val(named(m, "M")), A.Carried(arg, 0)), A.sub(A.Val(named(m, "N")), A.Carried(arg, 1)))
    assert store.hi[1] is None and store.strides == (A.Const(64), A.ONE)


def test_tensor_descriptors_and_desc_gather():
    m = _parsed("tensor_desc")
    load, store = (analyze(op) for op in memory_ops(m))
    pid64 = A.mul(A.Val(named(m, "pid")), 64)
    assert load.other == 0 and store.other is None and load == replace(store, other=0, base=A.Val(named(m, "a")))
    assert load.lo == (A.neg(pid64), A.ZERO) and load.hi == (A.sub(A.Val(named(m, "M")), pid64), A.Val(named(m, "N")))
    assert load.strides == (A.Val(named(m, "N")), A.ONE) and load.offset == A.mul(pid64, A.Val(named(m, "N")))
    g = _parsed("desc_gather")
    kinds = {op.name: analyze(op) for op in memory_ops(g)}
    reason = kinds["tt.descriptor_gather"].reason
    assert "tt.load" in reason and "kernels.py:415" in reason
    assert isinstance(kinds["tt.descriptor_scatter"], GatherAccess)
    assert isinstance(kinds["tt.descriptor_reduce"], StructuredAccess)


def test_atomics_are_gathers_and_pointer_access_describes_their_addresses():
    m = _parsed("atomics")
    atomics = [op for op in memory_ops(m) if op.name.startswith("tt.atomic")]
    assert len(atomics) == 11
    for op in atomics:
        acc = analyze(op)
        assert isinstance(acc, GatherAccess) and "atom" in acc.reason
    first, xchg = pointer_access(atomics[0].operands[0]), pointer_access(atomics[4].operands[0])
    assert isinstance(first, GatherAccess) and "arith.remsi" in first.reason  # acc + offs % 16
    assert isinstance(xchg, StructuredAccess) and xchg.offset == A.Const(8) and xchg.strides == ()  # cnt + 8


def test_access_report_covers_every_memory_op():
    m = _parsed("matmul")
    lines = access_report(m).splitlines()
    assert len([ln for ln in lines if ln.startswith("tt.")]) == 3
    assert "gather" in lines[0] and "arith.remsi" in lines[0] and "strided" in lines[2]
    m2 = _parsed("block_ptr_keepbp")
    assert any(ln.startswith("scf.for") and "carries" in ln for ln in access_report(m2).splitlines())


# ---- random kernels: affine offsets and box masks in every spelling the analysis accepts -----------------

PREDICATES = ["slt", "sle", "sgt", "sge", "eq"]
SWAP = {"slt": "sgt", "sle": "sge", "sgt": "slt", "sge": "sle", "eq": "eq"}


def _offset_1d(b: Builder, data, n: int, scalars) -> Value:
    """An i32 vector c + a*i with a constant a (possibly negative, via subi)."""
    x = b.arange(n, start=data.draw(st.integers(0, 3)))
    coef = data.draw(st.sampled_from([1, 1, 2, 3]))
    if coef != 1:
        c = b.dense(coef, [n]) if data.draw(st.booleans()) else b.splat(b.const(coef), [n])
        x = b.binary("arith.muli", c, x) if data.draw(st.booleans()) else b.binary("arith.muli", x, c)
    if data.draw(st.booleans()):
        s = b.splat(data.draw(st.sampled_from(scalars)), [n])
        x = b.binary("arith.subi", s, x) if data.draw(st.booleans()) else b.binary("arith.addi", x, s)
    return x


def _to_2d(b: Builder, x: Value, axis: int, shape) -> Value:
    """A vector along `axis` of a 2-D tile: expand_dims then broadcast."""
    return b.broadcast(b.expand(x, 1 - axis), shape)


def _condition(b: Builder, data, shape, scalars) -> Value:
    kind = data.draw(st.sampled_from(["dim", "dim", "dim", "unsigned", "predicate", "uniform", "unit", "true"]))
    if kind == "true":
        return b.dense(True, shape, I1)
    if kind == "predicate":  # splat of a scalar i1
        p = b.cmpi(data.draw(st.sampled_from(PREDICATES)), data.draw(st.sampled_from(scalars)), b.const(5))
        return b.splat(p, shape)
    if kind == "uniform":  # a comparison of two splats
        x, y = (b.splat(data.draw(st.sampled_from(scalars)), shape) for _ in range(2))
        return b.cmpi(data.draw(st.sampled_from(PREDICATES)), x, y)
    if kind == "unit":  # a bound on a size-1 dim that broadcast widens: all or nothing
        x = _offset_1d(b, data, 1, scalars)
        c = b.cmpi(data.draw(st.sampled_from(PREDICATES)), x, b.splat(data.draw(st.sampled_from(scalars)), [1]))
        return b.broadcast(b.expand(c, 0), shape)
    axis = data.draw(st.integers(0, 1))
    x = _offset_1d(b, data, shape[axis], scalars)
    if kind == "unsigned":
        pred = data.draw(st.sampled_from(["ult", "ule"]))
        bound = b.splat(b.const(data.draw(st.integers(0, 12))), [shape[axis]])
        if data.draw(st.booleans()):
            x, bound, pred = bound, x, {"ult": "ugt", "ule": "uge"}[pred]
        return _to_2d(b, b.cmpi(pred, x, bound), axis, shape)
    pred = data.draw(st.sampled_from(PREDICATES))
    late = data.draw(st.booleans())  # compare before or after going 2-D
    if late:
        x = _to_2d(b, x, axis, shape)
    bound = b.splat(data.draw(st.sampled_from(scalars)), list(shape) if late else [shape[axis]])
    c = b.cmpi(pred, x, bound) if data.draw(st.booleans()) else b.cmpi(SWAP[pred], bound, x)
    return c if late else _to_2d(b, c, axis, shape)


@SETTINGS
@given(data=st.data())
def test_random_kernels_match_reference(data):
    shape = [data.draw(st.sampled_from([1, 2, 3, 4, 8])) for _ in range(2)]
    b = Builder(PtrType(F16), I32, I32, I32)
    ptr, scalars = b.args[0], list(b.args[1:])
    scalars.append(b.binary("arith.subi", b.args[1], b.const(data.draw(st.integers(-4, 4)))))
    scalars.append(b.op("tt.get_program_id", (), I32, axis=EnumAttr("x")))
    off = None
    for axis in (0, 1):
        x = _offset_1d(b, data, shape[axis], scalars)
        stride = data.draw(st.sampled_from(scalars + [None]))
        if stride is not None:
            x = b.binary("arith.muli", x, b.splat(stride, [shape[axis]]))
        x = _to_2d(b, x, axis, shape)
        off = x if off is None else b.binary("arith.addi", off, x)
    if data.draw(st.booleans()):
        off = b.op("arith.extsi", [off], tensor(shape, I64))
    p = b.addptr(b.splat(b.addptr(ptr, data.draw(st.sampled_from(scalars))), shape), off)
    transposed = data.draw(st.booleans())  # look at the tile transposed
    loads = []
    for _ in range(4):  # several masks over the same pointer tile
        mask = None
        for _ in range(data.draw(st.integers(0, 3))):
            c = _condition(b, data, shape, scalars)
            mask = c if mask is None else b.binary("arith.andi", mask, c)
        q = b.trans(p) if transposed else p
        mask = b.trans(mask) if transposed and mask is not None else mask
        loads.append(b.load(q, mask, b.dense(0.0, q.type.shape, F16) if mask is not None else None).owner)
    accs = [analyze(op) for op in loads]
    assert all(isinstance(acc, StructuredAccess) for acc in accs), accs
    for _ in range(3):
        args = {v: data.draw(st.integers(-6, 12)) for v in b.args[1:]}
        args[b.args[0]] = 1 << 20
        ref = Ref(args, pid=(data.draw(st.integers(0, 3)), 0, 0))
        for op, acc in zip(loads, accs):
            check_against_reference(ref, op, acc)


# ---- hand-made kernels: gathers and their reasons ------------------------------------------------------


def _vector_kernel():
    """x: *f32, idx: *i32, n: i32, s: i32; offs = arange(8)."""
    b = Builder(PtrType(F32), PtrType(I32), I32, I32)
    return b, b.arange(8)


def _load_at(b, off, mask=None):
    return analyze(b.load(b.addptr(b.splat(b.args[0], [8]), off), mask).owner)


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda b, r: b.binary("arith.remsi", r, b.splat(b.args[2], [8])), ["offset is not affine", "arith.remsi"]),
        (lambda b, r: b.binary("arith.divsi", r, b.dense(2, [8])), ["arith.divsi"]),
        (lambda b, r: b.binary("arith.muli", r, r), ["two varying"]),
        (lambda b, r: b.load(b.addptr(b.splat(b.args[1], [8]), r)), ["tt.load"]),
    ],
)
def test_non_affine_offsets_are_gathers(make, words):
    b, r = _vector_kernel()
    off = make(b, r)
    acc = _load_at(b, off)
    assert isinstance(acc, GatherAccess)
    for w in words:
        assert w in acc.reason
    assert f"k.py:{off.owner.loc.line}" in acc.reason  # names the op's source line


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda b, r: b.cmpi("ne", r, b.splat(b.args[2], [8])), ["ne comparison"]),
        (
            lambda b, r: b.cmpi("slt", b.binary("arith.muli", r, b.splat(b.args[3], [8])), b.splat(b.args[2], [8])),
            ["coefficient"],
        ),
        (lambda b, r: b.cmpi("ult", r, b.splat(b.args[2], [8])), ["unsigned"]),
        (
            lambda b, r: b.binary("arith.xori", b.cmpi("slt", r, b.splat(b.args[2], [8])), b.dense(True, [8], I1)),
            ["arith.xori"],
        ),
        (
            lambda b, r: b.cmpi("slt", b.binary("arith.remsi", r, b.dense(3, [8])), b.splat(b.args[2], [8])),
            ["arith.remsi"],
        ),
    ],
)
def test_non_box_masks_are_gathers(make, words):
    b, r = _vector_kernel()
    mask = make(b, r)
    acc = _load_at(b, r, mask)
    assert isinstance(acc, GatherAccess), acc
    for w in words:
        assert w in acc.reason, acc.reason
    assert "k.py:" in acc.reason


def test_mask_across_two_dims_is_a_gather():
    b = Builder(PtrType(F32))
    r = b.arange(4)
    rows, cols = _to_2d(b, r, 0, [4, 4]), _to_2d(b, r, 1, [4, 4])
    p = b.addptr(
        b.splat(b.args[0], [4, 4]), b.binary("arith.addi", b.binary("arith.muli", rows, b.dense(4, [4, 4])), cols)
    )
    acc = analyze(b.load(p, b.cmpi("sge", rows, cols)).owner)
    assert isinstance(acc, GatherAccess) and "across dims" in acc.reason


def test_splat_predicate_becomes_select():
    b, r = _vector_kernel()
    pred = b.cmpi("sgt", b.args[2], b.args[3])
    acc = _load_at(b, r, b.splat(pred, [8]))
    assert acc.hi == (A.Select(pred, A.Const(8), A.ZERO),) and acc.lo == (None,)
    for n, s in ((3, 1), (1, 3)):
        ref = Ref({b.args[0]: 4096, b.args[2]: n, b.args[3]: s})
        assert check_against_reference(ref, acc_op(b), acc) == (8 if n > s else 0)


def acc_op(b: Builder) -> Op:
    return [op for op in b.block.ops if op.name == "tt.load"][-1]


def test_reshape_of_unit_dims_and_reordering_reshape():
    b, r = _vector_kernel()
    p = b.addptr(b.splat(b.args[0], [8]), r)
    m = b.cmpi("slt", r, b.splat(b.args[2], [8]))
    p3 = b.op("tt.reshape", [p], ptr_tensor([1, 8, 1]))
    m3 = b.op("tt.reshape", [m], tensor([1, 8, 1], I1))
    acc = analyze(b.load(p3, m3).owner)
    assert acc.strides == (A.ZERO, A.ONE, A.ZERO) and acc.hi == (None, A.Val(b.args[2]), None)
    check_against_reference(Ref({b.args[0]: 4096, b.args[2]: 5}), acc_op(b), acc)
    p2 = b.op("tt.reshape", [p], ptr_tensor([2, 4]))
    assert "layout" in analyze(b.load(p2).owner).reason
    p1 = b.op("tt.reshape", [p], ptr_tensor([8]), allow_reorder=BoolAttr(True))
    assert isinstance(analyze(b.load(p1).owner), GatherAccess)


# ---- loop-carried pointers --------------------------------------------------------------------------------


def test_loop_carried_pointer_with_iteration_dependent_step_and_nested_loop():
    b = Builder(PtrType(F32), I32, I32)
    x, n, s = b.args
    r = b.arange(8)
    p0 = b.addptr(b.splat(b.addptr(x, s), [8]), b.binary("arith.muli", r, b.dense(3, [8])))
    outer, i, (p,) = b.loop(b.const(0), n, b.const(1), p0)
    inner, j, (q,) = b.loop(b.const(0), n, b.const(2), p)
    q_off = b.addptr(q, b.splat(j, [8]))  # an extra uniform offset inside the inner loop
    b.load(q_off, b.cmpi("slt", r, b.splat(j, [8])))
    b.end_loop(b.addptr(q, b.splat(b.binary("arith.addi", j, b.const(1)), [8])))  # step depends on j
    b.end_loop(b.addptr(p, b.splat(b.binary("arith.muli", s, b.const(4)), [8])))
    cp_outer, cp_inner = carried_pointers(outer), carried_pointers(inner)
    assert cp_outer[p].init == (A.Val(s),) and cp_outer[p].step == (A.mul(A.Val(s), 4),)
    assert cp_inner[q].init == (A.Carried(p, 0),) and cp_inner[q].step == (A.add(A.Val(j), 1),)
    load = acc_op_in(inner)
    acc = analyze(load)
    assert acc.base == A.Val(x) and acc.offset == A.add(A.Carried(q, 0), A.Val(j)) and acc.strides == (A.Const(3),)
    for ti, tj in itertools.product(range(3), range(3)):
        ref = Ref({x: 1 << 20, n: 10, s: 7})
        check_against_reference(ref, load, acc, ((outer, ti), (inner, tj)))


def acc_op_in(loop: Op) -> Op:
    return next(op for op in loop.walk() if op.name == "tt.load")


def test_loop_carried_pointer_that_is_not_advanced_uniformly_is_a_gather():
    b = Builder(PtrType(F32), PtrType(F32), I32)
    r = b.arange(8)
    pa, pb = (b.addptr(b.splat(a, [8]), r) for a in b.args[:2])
    loop, _, (p, q) = b.loop(b.const(0), b.args[2], b.const(1), pa, pb)
    b.load(p)
    b.load(q)
    b.end_loop(b.addptr(p, r), q)  # p advances by a non-uniform offset; q never moves
    load_p, load_q = (op for op in loop.walk() if op.name == "tt.load")
    acc = analyze(load_p)
    assert isinstance(acc, GatherAccess) and "loop-carried pointer" in acc.reason
    assert set(carried_pointers(loop)) == {q} and carried_pointers(loop)[q].step == (A.ZERO,)
    assert isinstance(analyze(load_q), StructuredAccess)


def test_swapped_loop_carried_pointers_are_gathers():
    b = Builder(PtrType(F32), PtrType(F32), I32)
    r = b.arange(8)
    pa, pb = (b.addptr(b.splat(a, [8]), r) for a in b.args[:2])
    loop, _, (p, q) = b.loop(b.const(0), b.args[2], b.const(1), pa, pb)
    b.load(p)
    b.end_loop(q, p)
    assert isinstance(analyze(acc_op_in(loop)), GatherAccess) and carried_pointers(loop) == {}


def test_descriptor_gather_with_affine_rows():
    from triton_plate_backend.ir.core import TensorDescType

    b = Builder(PtrType(F16), I32, I32, I32)
    a, m, n, y = b.args
    desc = b.op(
        "tt.make_tensor_descriptor",
        [a, m, n, b.op("arith.extsi", [n], I64), b.const(1, I64)],
        TensorDescType(tensor([1, 16], F16)),
    )
    rows = b.binary("arith.addi", b.binary("arith.muli", b.arange(4), b.dense(2, [4])), b.splat(y, [4]))
    g = b.op("tt.descriptor_gather", [desc, rows, y], tensor([4, 16], F16)).owner
    acc = analyze(g)
    assert isinstance(acc, StructuredAccess) and acc.other == 0
    for mv, nv, yv in ((9, 20, 3), (5, 17, 1), (30, 4, -2)):
        check_against_reference(Ref({a: 1 << 20, m: mv, n: nv, y: yv}), g, acc)


# ---- the expression language ------------------------------------------------------------------------------


def test_expressions_fold_to_a_canonical_form():
    x, y = Value(I32, "x"), Value(I32, "y")
    X, Y = A.Val(x), A.Val(y)
    assert A.add(X, 0) == X and A.mul(X, 1) == X and A.mul(X, 0) == A.ZERO and A.sub(X, X) == A.ZERO
    assert A.add(A.mul(X, 2), A.mul(Y, 3)) == A.add(A.mul(3, Y), A.mul(2, X))
    assert A.sub(A.add(X, Y), Y) == X and A.add(2, 3) == A.Const(5)
    assert A.ceil_div(A.mul(X, 4), 2) == A.mul(X, 2) and A.ceil_div(A.add(A.mul(X, 4), 3), 2) == A.add(A.mul(X, 2), 2)
    assert A.floor_div(-3, 2) == A.Const(-2) and A.ceil_div(-3, 2) == A.Const(-1)
    assert A.min_(X, A.add(X, 3)) == X and A.max_(X, A.add(X, 3)) == A.add(X, 3) and A.min_(None, X) == X
    assert A.min_(X, Y) == A.min_(Y, X) and isinstance(A.min_(X, Y), A.Min)
    assert str(A.sub(X, A.mul(Y, 1024))) == "%x - %y*1024" and str(A.neg(X)) == "-%x"
    assert A.values(A.select(x, X, A.Carried(y, 1))) == {x, y}


@SETTINGS
@given(st.lists(st.integers(-50, 50), min_size=2, max_size=2), st.integers(1, 5), st.integers(0, 7))
def test_expression_helpers_agree_with_integer_arithmetic(vals, c, shape):
    x, y = Value(I32, "x"), Value(I32, "y")
    env = {x: vals[0], y: vals[1]}
    X, Y = A.Val(x), A.Val(y)
    e = A.sub(A.mul(A.add(X, 3), Y), A.mul(X, shape))
    want = (vals[0] + 3) * vals[1] - vals[0] * shape
    assert A.evaluate(e, env) == want
    assert A.evaluate(A.ceil_div(e, c), env) == -(-want // c)
    assert A.evaluate(A.floor_div(A.add(A.mul(X, c), Y), c), env) == (vals[0] * c + vals[1]) // c
    assert A.evaluate(A.min_(e, Y), env) == min(want, vals[1]) and A.evaluate(A.indicator(e), env) == int(want > 0)


def test_block_pointer_padding_fills():
    def edit(pad):
        return lambda text: text.replace(", padding = 1 : i32", pad)

    for pad, fill in ((", padding = 2 : i32", "nan"), ("", None)):
        m = parse_corpus("block_ptr_keepbp", edit(pad))
        load = analyze(memory_ops(m)[0])
        assert (str(load.other) if fill else load.other) == fill and load.lo[0] is not None


def test_other_values_and_scalar_masks():
    b = Builder(PtrType(F32), F32, I32)
    x, f, n = b.args
    r = b.arange(8)
    p = b.addptr(b.splat(x, [8]), r)
    m = b.cmpi("slt", r, b.splat(n, [8]))
    assert _load_other(b, p, m, b.splat(f, [8])) is f  # a splat of a scalar: the scalar
    ramp = b.op("arith.sitofp", [r], tensor([8], F32))
    assert _load_other(b, p, m, ramp) is ramp  # anything else: the tensor (codegen selects)
    assert _load_other(b, p, m, b.dense(2.5, [8], F32)) == 2.5
    scalar = b.addptr(x, n)
    ok = analyze(b.load(scalar, b.op("arith.constant", (), I1, value=BoolAttr(True))).owner)
    assert isinstance(ok, StructuredAccess) and ok.strides == () and ok.offset == A.Val(n)
    bad = analyze(b.load(scalar, b.cmpi("sgt", n, b.const(0))).owner)
    assert isinstance(bad, GatherAccess) and "scalar access" in bad.reason


def _load_other(b, p, m, other):
    return analyze(b.load(p, m, other).owner).other
