"""A seeded generator of random, valid Triton kernels: source text plus inputs.

Each case is a typed expression tree over loaded tiles (every dtype in DTYPES, masked loads,
row/column broadcasts, casts incl. fp8 round trips, `where`, min/max, bit ops, safe integer
division) with a tail: a masked store, a reduction or scan on a random axis, a transpose or
reshape, an atomic, or (its own template) a `tl.dot`. Loops and branches wrap the body. Every
operand carries its dtype, and every op's result is cast back to it, so the emitted kernel
type-checks whatever Triton's promotion rules do. The same (seed, index) gives the same case."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np

from .values import DTYPES, FLOAT8, random_values


@dataclass(frozen=True)
class Buffer:
    """A kernel pointer argument: an input (with its values) or an output (zero-filled, `check` says how
    compare.py judges it: {"kind": "exact" | "ulp" | "reduce" | "scan" | "dot" | "atomic", ...})."""

    name: str
    dtype: str
    count: int
    values: np.ndarray | None = None
    check: dict = field(default_factory=dict)


@dataclass
class Case:
    seed: int
    index: int
    source: str
    buffers: list[Buffer]
    scalars: dict[str, int]
    constexprs: dict[str, int]
    grid: int
    features: list[str]

    @property
    def name(self) -> str:
        return f"case_{self.seed}_{self.index}"

    def inputs(self) -> list[Buffer]:
        return [b for b in self.buffers if b.values is not None]

    def outputs(self) -> list[Buffer]:
        return [b for b in self.buffers if b.values is None]


INT_OPS = ("+", "-", "*", "&", "|", "^", "<<", ">>", "//", "%")
FLOAT_OPS = ("+", "-", "*", "/")
CMPS = ("<", "<=", ">", ">=", "==", "!=")
TRANSCENDENTAL = {"exp": 4, "exp2": 4, "log": 4, "log2": 4, "sin": 4, "cos": 4, "sqrt": 1, "rsqrt": 4}
CORRECTLY_ROUNDED = ("sqrt_rn",)  # IEEE-exact: div_rn too, emitted as a binary op
TAILS = ("store", "store", "store", "reduce", "scan", "trans", "reshape", "atomic", "dot")
# integer range a float is clamped into before a float -> int cast (NaN and out-of-range are undefined); the
# bounds are fp32 values, as Triton types a float literal fp32: 2**31 - 128 is the largest fp32 below 2**31
INT_RANGE = {"i8": (-128, 127), "i16": (-32768, 32767), "i32": (-(2**31), 2**31 - 128), "i64": (-(2**62), 2**62)}
INT_RANGE |= {"u8": (0, 255), "u32": (0, 2**32 - 256)}


class _Builder:
    """Emits the body of one kernel: `lines` of source, the input buffers it loads, the features it used."""

    def __init__(self, rng: random.Random, nprng: np.random.Generator, sizes: dict[str, int], n_valid: int, grid: int):
        self.rng, self.nprng, self.sizes, self.shape = rng, nprng, sizes, tuple(sizes)
        self.n_valid, self.grid = n_valid, grid
        self.lines: list[str] = []
        self.inputs: list[tuple[str, str, str]] = []  # (name, dtype, layout)
        self.buffers: list[Buffer] = []
        self.features: set[str] = set()
        self.temps = 0

    # ---- source helpers
    def emit(self, expr: str) -> str:
        self.temps += 1
        name = f"t{self.temps}"
        self.lines.append(f"{name} = {expr}")
        return name

    def full(self, value, dtype: str) -> str:
        return f"tl.full([{', '.join(self.shape)}], {value}, {DTYPES[dtype].tl})"

    def tile(self, var: str) -> str:
        """`var` at the full tile shape: a row or column load broadcasts to [BM, BN]."""
        if len(self.shape) == 1:
            return var
        return self.emit(f"tl.broadcast_to({var}, (BM, BN))")

    # ---- leaves
    def load(self, dtype: str) -> str:
        i = len(self.inputs)
        name, var = f"in{i}", f"x{i}"
        layouts = ["full"] if len(self.shape) == 1 else ["full", "full", "row", "col"]
        layout = self.rng.choice(layouts)
        if layout == "full":
            other = self.rng.choice(["", ", other=0", ", other=1"])
            self.lines.append(f"{var} = tl.load({name} + offs, mask=mask{other})")
            count = self.n_valid
            self.features.add("mask")
        elif layout == "row":
            self.lines.append(f"{var} = tl.load({name} + pid * BN + rn)[None, :]")
            count = self.grid * self._size("BN")
            self.features.add("broadcast")
        else:
            self.lines.append(f"{var} = tl.load({name} + pid * BM + rm)[:, None]")
            count = self.grid * self._size("BM")
            self.features.add("broadcast")
        self.inputs.append((name, dtype, layout))
        self.buffers.append(Buffer(name, dtype, count, random_values(self.nprng, dtype, count)))
        return var

    def _size(self, sym: str) -> int:
        return self.sizes[sym]

    def leaf(self, dtype: str) -> str:
        same = [i for i, (_, d, _) in enumerate(self.inputs) if d == dtype]
        if len(self.inputs) < 4 and (not self.inputs or self.rng.random() < 0.5):
            return self.load(dtype)
        if same and self.rng.random() < 0.7:
            return f"x{self.rng.choice(same)}"
        i = self.rng.randrange(len(self.inputs))
        return self.cast(f"x{i}", self.inputs[i][1], dtype)

    # ---- casts
    def cast(self, var: str, src: str, dst: str) -> str:
        if src == dst:
            return var
        s, d = DTYPES[src], DTYPES[dst]
        self.features.add(f"cast:{src}->{dst}")
        if s.kind == "f" and d.kind != "f":  # NaN and out-of-range are undefined: clamp in fp64 first
            lo, hi = INT_RANGE[dst]
            wide = f"{var}.to(tl.float64)"
            return self.emit(
                f"tl.where({var} != {var}, 0.0, tl.minimum(tl.maximum({wide}, {lo}.0), {hi}.0)).to({d.tl})"
            )
        return self.emit(f"{var}.to({d.tl})")

    # ---- expression trees
    def expr(self, dtype: str, depth: int) -> str:
        if depth <= 0 or self.rng.random() < 0.2:
            return self.leaf(dtype)
        kind = DTYPES[dtype].kind
        choices = ["binop"] * 5 + ["unary", "where", "where", "cast", "minmax"]
        if kind == "f" and dtype in ("fp32", "fp16", "bf16"):
            choices.append("fp8")
        if kind == "f" and dtype == "fp32":
            choices.append("rn")
        op = self.rng.choice(choices)
        d = DTYPES[dtype].tl
        if op == "binop":
            a, b = self.expr(dtype, depth - 1), self.expr(dtype, depth - 1)
            sym = self.rng.choice(FLOAT_OPS if kind == "f" else INT_OPS)
            if sym in ("<<", ">>"):
                b = self.emit(f"({b} & {DTYPES[dtype].bits - 1}).to({d})")
                self.features.add("shift")
            elif sym in ("//", "%"):
                b = self.emit(f"(({b} & 15) + 1).to({d})")
                self.features.add("idiv")
            return self.emit(f"({a} {sym} {b}).to({d})")
        if op == "unary":
            a = self.expr(dtype, depth - 1)
            if kind == "u":  # not `~`: the interpreter's invert of an unsigned tile overflows numpy
                return self.emit(f"(-{a}).to({d})")
            return self.emit(self.rng.choice([f"(-{a}).to({d})", f"tl.abs({a}).to({d})"]))
        if op == "where":
            other = self.rng.choice(list(DTYPES))
            c1, c2 = self.expr(other, depth - 1), self.expr(other, depth - 1)
            a, b = self.expr(dtype, depth - 1), self.expr(dtype, depth - 1)
            self.features.add("where")
            return self.emit(f"tl.where({c1} {self.rng.choice(CMPS)} {c2}, {a}, {b}).to({d})")
        if op == "cast":
            src = self.rng.choice([t for t in DTYPES if t != dtype])
            return self.cast(self.expr(src, depth - 1), src, dtype)
        if op == "minmax":
            a, b = self.expr(dtype, depth - 1), self.expr(dtype, depth - 1)
            fn = self.rng.choice(["tl.maximum", "tl.minimum"])
            if kind == "f" and self.rng.random() < 0.5:
                self.features.add("minmax-nan-all")
                return self.emit(f"{fn}({a}, {b}, propagate_nan=tl.PropagateNan.ALL).to({d})")
            self.features.add("minmax" if kind != "f" else "minmax-float")
            return self.emit(f"{fn}({a}, {b}).to({d})")  # bf16 min/max come back fp32
        if op == "fp8":
            f8 = self.rng.choice(list(FLOAT8))
            self.features.add(f"fp8:{f8}")
            a = self.expr(dtype, depth - 1)
            return self.emit(f"{a}.to({FLOAT8[f8]}).to({d})")
        a, b = self.expr(dtype, depth - 1), self.expr(dtype, depth - 1)  # "rn": IEEE-exact fp32 ops
        self.features.add("rn")
        return self.emit(
            self.rng.choice([f"tl.div_rn({a}, {b})", f"tl.sqrt_rn({a})", f"tl.fma({a}, {b}, {a})"]) + ".to(tl.float32)"
        )


HEADER = "import triton\nimport triton.language as tl\n\n\n"


def _pick_shape(rng: random.Random, tail: str) -> dict[str, int]:
    if tail == "dot":
        return {"BM": rng.choice([16, 32]), "BN": rng.choice([16, 32]), "BK": rng.choice([16, 32])}
    two_d = tail in ("trans", "reshape") or rng.random() < 0.6
    if two_d:
        return {"BM": rng.choice([1, 2, 4, 8, 16]), "BN": rng.choice([2, 4, 8, 16, 32])}
    return {"BM": rng.choice([8, 16, 32, 64, 128])}


def generate(seed: int, index: int) -> Case:
    """The case `index` of the run seeded `seed`: deterministic, independent of every other index."""
    rng = random.Random(f"plate-fuzz:{seed}:{index}")
    nprng = np.random.default_rng([seed & 0xFFFFFFFF, index])
    tail = rng.choice(TAILS)
    if tail == "dot":
        return _generate_dot(seed, index, rng, nprng)
    sizes = _pick_shape(rng, tail)
    grid = rng.choice([1, 1, 2, 3])
    shape = tuple(sizes)  # ("BM",) or ("BM", "BN")
    per_program = int(np.prod(list(sizes.values())))
    total = grid * per_program
    n_valid = total if rng.random() < 0.4 else rng.randint(1, total)
    b = _Builder(rng, nprng, sizes, n_valid, grid)
    dtype = rng.choice(list(DTYPES))
    depth = rng.randint(1, 4)

    body = _body(b, rng, dtype, depth)
    out_dtype = dtype
    offs = "pid * BM + rm" if len(shape) == 1 else "pid * BM * BN + rm[:, None] * BN + rn[None, :]"
    store_lines: list[str] = []
    outputs: list[Buffer] = []
    if tail == "store":
        if dtype == "fp32" and rng.random() < 0.6:
            fn = rng.choice([*TRANSCENDENTAL, *CORRECTLY_ROUNDED])
            b.features.add(f"math:{fn}")
            body = b.emit(f"tl.{fn}({body})")
            check = {"kind": "exact"} if fn in CORRECTLY_ROUNDED else {"kind": "ulp", "ulp": TRANSCENDENTAL[fn]}
        else:
            check = {"kind": "exact"}
        store_lines.append(f"tl.store(out0 + offs, {body}, mask=mask)")
        outputs.append(Buffer("out0", out_dtype, total, check=check))
    elif tail in ("reduce", "scan"):
        axis = rng.randrange(len(shape))
        ops = ("sum", "max", "min") if tail == "reduce" else ("cumsum", "cumprod")
        fn = rng.choice(ops)
        b.features.add(f"{tail}:{fn}:axis{axis}")
        store_lines.append(f"tl.store(aux0 + offs, {body})")
        outputs.append(Buffer("aux0", dtype, total, check={"kind": "exact"}))
        res = f"tl.{fn}({body}, axis={axis}).to({DTYPES[dtype].tl})"
        if tail == "reduce":
            if len(shape) == 1:
                store_lines.append(f"tl.store(out0 + pid, {res})")
                count = grid
            elif axis == 1:
                store_lines.append(f"tl.store(out0 + pid * BM + rm, {res})")
                count = grid * sizes["BM"]
            else:
                store_lines.append(f"tl.store(out0 + pid * BN + rn, {res})")
                count = grid * sizes["BN"]
        else:
            store_lines.append(f"tl.store(out0 + offs, {res})")
            count = total
        check = {"kind": tail, "op": fn, "axis": axis, "aux": "aux0", "shape": [grid, *sizes.values()]}
        outputs.append(Buffer("out0", dtype, count, check=check))
    elif tail == "trans":
        b.features.add("trans")
        t_offs = "pid * BM * BN + rn[:, None] * BM + rm[None, :]"
        store_lines.append(f"tl.store(out0 + {t_offs}, tl.trans({body}))")
        outputs.append(Buffer("out0", dtype, total, check={"kind": "exact"}))
    elif tail == "reshape":
        b.features.add("reshape")
        store_lines.append(f"tl.store(out0 + pid * BM * BN + tl.arange(0, BM * BN), tl.reshape({body}, (BM * BN,)))")
        outputs.append(Buffer("out0", dtype, total, check={"kind": "exact"}))
    else:  # atomic
        width = max(1, per_program // rng.choice([1, 2, 4]))
        ok = {"add": ["i32", "u32", "i64", "fp32"], "max": ["i32", "u32", "i64", "fp32"], "min": ["i32", "fp32"]}
        fn = rng.choice(list(ok))
        out_dtype = rng.choice(ok[fn])
        val = b.cast(body, dtype, out_dtype)
        b.features.add(f"atomic:{fn}:{out_dtype}")
        store_lines.append(f"tl.store(aux0 + offs, {val})")
        store_lines.append(f"tl.atomic_{fn}(out0 + offs % {width}, {val}, mask=mask)")
        outputs.append(Buffer("aux0", out_dtype, total, check={"kind": "exact"}))
        outputs.append(Buffer("out0", out_dtype, width, check={"kind": "atomic", "op": fn, "aux": "aux0"}))

    args = [n for n, _, _ in b.inputs] + [o.name for o in outputs]
    consts = ", ".join(f"{k}: tl.constexpr" for k in sizes)
    lines = [
        f"def kernel({', '.join(args)}, n_valid, n_iter, {consts}):",
        "    pid = tl.program_id(0)",
        "    rm = tl.arange(0, BM)",
    ]
    if len(shape) == 2:
        lines.append("    rn = tl.arange(0, BN)")
    lines += [f"    offs = {offs}", "    mask = offs < n_valid"]
    lines += [f"    {line}" for line in b.lines + store_lines]
    source = HEADER + "\n".join(lines) + "\n"
    scalars = {"n_valid": n_valid, "n_iter": rng.randint(0, 3)}
    return Case(seed, index, source, b.buffers + outputs, scalars, sizes, grid, sorted(b.features))


def _body(b: _Builder, rng: random.Random, dtype: str, depth: int) -> str:
    """The value the tail stores: an expression, maybe through a loop or a branch on the program id."""
    shape_kind = rng.random()
    if shape_kind < 0.15:  # loop-carried accumulation, trip count a runtime argument
        b.features.add("loop")
        acc = b.tile(b.expr(dtype, depth))
        step = b.tile(b.expr(dtype, 1))
        d = DTYPES[dtype].tl
        sym = rng.choice(["+", "*", "-"] if DTYPES[dtype].kind == "f" else ["+", "*", "^"])
        b.lines.append(f"acc = {acc}")
        b.lines.append("for i in range(0, n_iter):")
        b.lines.append(f"    acc = (acc {sym} {step}).to({d})")
        return "acc"
    if shape_kind < 0.3:  # scalar branch
        b.features.add("branch")
        e1, e2 = b.expr(dtype, depth - 1), b.expr(dtype, depth - 1)
        e1, e2 = b.tile(e1), b.tile(e2)
        b.lines.append(f"if pid % 2 == 0:\n        r = {e1}\n    else:\n        r = {e2}")
        return "r"
    return b.tile(b.expr(dtype, depth))


DOT_INPUTS = {"fp32": ("ieee", "tf32", "tf32x3"), "fp16": ("ieee",), "bf16": ("ieee",), "i8": ("ieee",)}


def _generate_dot(seed: int, index: int, rng: random.Random, nprng: np.random.Generator) -> Case:
    sizes = _pick_shape(rng, "dot")
    grid = rng.choice([1, 2])
    dtype = rng.choice([*DOT_INPUTS, "fp8e5"])
    src = "fp16" if dtype == "fp8e5" else dtype
    precision = rng.choice(DOT_INPUTS.get(dtype, ("ieee",)))
    acc_dtype = "i32" if dtype == "i8" else "fp32"
    m, n, k = sizes["BM"], sizes["BN"], sizes["BK"]
    a_vals = random_values(nprng, src, grid * m * k, special=0.05)
    b_vals = random_values(nprng, src, grid * k * n, special=0.05)
    with_acc = rng.random() < 0.3
    d_src = DTYPES[src].tl
    lines = [
        "pid = tl.program_id(0)",
        "rm = tl.arange(0, BM)",
        "rn = tl.arange(0, BN)",
        "rk = tl.arange(0, BK)",
        "a = tl.load(in0 + pid * BM * BK + rm[:, None] * BK + rk[None, :])",
        "b = tl.load(in1 + pid * BK * BN + rk[:, None] * BN + rn[None, :])",
    ]
    if rng.random() < 0.3 and DTYPES[src].kind == "f":
        lines.append(f"a = (a * a).to({d_src})")
    if dtype == "fp8e5":
        lines.append(f"a = a.to({FLOAT8['e5']})")
        lines.append(f"b = b.to({FLOAT8['e5']})")
        lines.append(f"tl.store(aux0 + pid * BM * BK + rm[:, None] * BK + rk[None, :], a.to({d_src}))")
        lines.append(f"tl.store(aux1 + pid * BK * BN + rk[:, None] * BN + rn[None, :], b.to({d_src}))")
    else:
        lines.append("tl.store(aux0 + pid * BM * BK + rm[:, None] * BK + rk[None, :], a)")
        lines.append("tl.store(aux1 + pid * BK * BN + rk[:, None] * BN + rn[None, :], b)")
    acc = ""
    buffers = [Buffer("in0", src, grid * m * k, a_vals), Buffer("in1", src, grid * k * n, b_vals)]
    if with_acc:
        lines.append("c = tl.load(in2 + pid * BM * BN + rm[:, None] * BN + rn[None, :])")
        acc = ", acc=c"
        buffers.append(
            Buffer("in2", acc_dtype, grid * m * n, random_values(nprng, acc_dtype, grid * m * n, special=0.0))
        )
    prec = f', input_precision="{precision}"' if dtype == "fp32" else ""
    out_ty = ", out_dtype=tl.int32" if dtype == "i8" else ""
    lines.append(f"d = tl.dot(a, b{acc}{prec}{out_ty})")
    lines.append("tl.store(out0 + pid * BM * BN + rm[:, None] * BN + rn[None, :], d)")
    check = {"kind": "dot", "aux": ["aux0", "aux1"], "acc": "in2" if with_acc else None}
    check |= {"precision": precision, "in_dtype": dtype, "shape": [grid, m, n, k]}
    buffers += [
        Buffer("aux0", src, grid * m * k, check={"kind": "exact"}),
        Buffer("aux1", src, grid * k * n, check={"kind": "exact"}),
        Buffer("out0", acc_dtype, grid * m * n, check=check),
    ]
    args = ", ".join(x.name for x in buffers)
    consts = ", ".join(f"{s}: tl.constexpr" for s in sizes)
    source = HEADER + f"def kernel({args}, n_valid, n_iter, {consts}):\n" + "".join(f"    {x}\n" for x in lines)
    features = [f"dot:{dtype}:{precision}", *(["dot-acc"] if with_acc else [])]
    return Case(seed, index, source, buffers, {"n_valid": 0, "n_iter": 0}, sizes, grid, features)
