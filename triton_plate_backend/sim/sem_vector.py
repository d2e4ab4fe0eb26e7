"""Vector-unit elementwise semantics: v.<binary>, v.<unary>, v.fma, v.select, v.clamp, v.cmpi,
v.cmpf and the conversions.

BINARY and UNARY map an op name (the ISA's VECTOR_BINARY / VECTOR_UNARY keys) to one function
per operand kind, ``fn(a, b, dtype) -> array`` on storage arrays of the ISA ``dtype``. The scalar
unit (sem_scalar), the reductions and scans (sem_tile) reuse the same functions, so an op means
the same thing on every unit.

Floats: exact IEEE ops (add, sub, mul, div, sqrt, recip, fmod, min/max, rounding ops) run in
fp32 for every type up to fp32 (fp64 for fp64) and are rounded once to the tile type, which is
correctly rounded (fp32 holds >= 2p + 2 bits of f16/bf16/fp8). Transcendentals run in fp64 and
are rounded once: within 1 ulp of the exact result (tests measure it), usually correctly rounded.
"""

from __future__ import annotations

import functools

import numpy as np

from ..dtypes import BITS, NUMPY
from ..errors import IsaError
from ..isa.table import INT_BITS, VECTOR_BINARY, VECTOR_UNARY, is_float
from . import libm
from . import numerics as nx
from .numerics import F64, compute_dtype, round_float, signed, store_int, unsigned

try:  # v.select in one pass (sim/csrc/tiles.cpp, built by setup.py); without it, _select's numpy code
    from . import _tiles
except ImportError:  # pragma: no cover - an unbuilt checkout
    _tiles = None
COMPILED_SELECT = True  # tests turn it off to run the numpy code


def kind(dtype: str) -> str:
    return "float" if is_float(dtype) else "int"


# ---- float ops -----------------------------------------------------------------------------------
def _exact(fn):
    """An IEEE-exact op: computed in the compute type, rounded once to the tile type."""

    def op(*args):
        *xs, dt = args
        c = compute_dtype(dt)
        if dt in _OWN_COMPUTE and all(x.dtype == c for x in xs):
            return fn(*xs)  # f32/f64 operands: computed in their own type, nothing to widen or round
        return round_float(fn(*(x.astype(c, copy=False) for x in xs)), dt)

    return op


_OWN_COMPUTE = frozenset({"f32", "f64"})  # float types that compute_dtype keeps as they are


def _wide(fn):
    """A transcendental: computed in float64, rounded once to the tile type. ``op.into(*xs, out=)``: the
    same for f32 tiles, straight into the result's tile: numpy's float64 loop over its cast of the
    operands, its result cast to f32 as round_float's ``astype`` casts it (numpy's ufuncs; None for others)."""

    def op(*args):
        *xs, dt = args
        return round_float(fn(*(x.astype(F64, copy=False) for x in xs)), dt)

    op.into = functools.partial(fn, dtype=F64, casting="same_kind") if isinstance(fn, np.ufunc) else None
    return op


def _zero_ordered(fn, bits):
    """fn(a, b) where a != b, else ``bits`` of the two bit patterns: equal floats have equal bits but
    for the zeros, and of those the AND keeps +0.0 unless both are -0.0 (max), the OR -0.0 (min).
    (numpy's maximum and minimum return either zero.)"""

    def op(a, b):
        r = np.asarray(fn(a, b))
        eq = a == b
        if r.ndim == 0 or not r.flags.writeable:
            return np.where(eq, bits(_bits(a), _bits(b)).view(r.dtype), r)
        bits(_bits(a), _bits(b), out=r.view(f"u{r.itemsize}"), where=eq)
        return r

    return op


def _bits(x):
    x = np.asarray(x)
    return x.view(f"u{x.itemsize}")


def _zero_ordered_max(fn):
    """fn's max, with -0.0 < +0.0."""
    return _zero_ordered(fn, np.bitwise_and)


def _zero_ordered_min(fn):
    return _zero_ordered(fn, np.bitwise_or)


_maximum, _minimum = _zero_ordered_max(np.maximum), _zero_ordered_min(np.minimum)  # NaN propagates
_maxnum, _minnum = _zero_ordered_max(np.fmax), _zero_ordered_min(np.fmin)  # a NaN operand is ignored


def _nextafter(a, b, dt):
    return np.nextafter(a, b)  # numpy (f16/f32/f64) and ml_dtypes (bf16, fp8) step in the type itself


def _rsqrt(x, dt):
    """1/sqrt(x). Up to f32: correctly rounded (the float64 quotient, rounded, then moved one ulp
    where the exact value lies beyond a midpoint: m*m*x vs 1, exact through one fma); f64: <= 1 ulp."""
    x64 = x.astype(F64)
    with np.errstate(all="ignore"):
        r = round_float(1.0 / np.sqrt(x64), dt)
        if dt == "f64":
            return r
        r64 = r.astype(F64)
        up = np.nextafter(r, np.array(np.inf, r.dtype)).astype(F64)
        down = np.nextafter(r, np.array(-np.inf, r.dtype)).astype(F64)
        hi, lo = (r64 + up) / 2, (r64 + down) / 2  # midpoints: exact in float64
        go_up = np.isfinite(r64) & (r64 > 0) & (nx.fma64(hi * hi, x64, -1.0) < 0)  # 1/sqrt(x) > hi
        go_down = np.isfinite(r64) & (r64 > 0) & (nx.fma64(lo * lo, x64, -1.0) > 0)  # 1/sqrt(x) < lo
    return np.where(go_up, up, np.where(go_down, down, r64)).astype(r.dtype)


# ---- integer ops ---------------------------------------------------------------------------------
def _wrapping(fn):
    """add/sub/mul/and/or/xor: numpy integer arrays wrap; i1 computes on 0/1 bytes."""

    def op(*args):
        *xs, dt = args
        if dt == "i1":
            return store_int(fn(*(x.astype(np.uint8) for x in xs)), dt)
        return fn(*xs)

    return op


def _plain_divisor(a, b):
    """b, or its one value when every lane holds the same, where a >= 0 and b > 0 (indices over sizes: the usual
    case); then truncation is floor division and the remainder numpy's, and numpy divides by one integer
    through a precomputed reciprocal (libdivide) instead of a hardware division per lane. None otherwise."""
    if a.size == 0 or a.min() < 0:
        return None
    low = b.min()
    if low <= 0:
        return None
    return low if low == b.max() else b


def _divs(a, b, dt):
    """Toward zero; x / 0 = -1 and INT_MIN / -1 = INT_MIN (wraps), like PTX div.s."""
    a, b = signed(a, dt), signed(b, dt)
    plain = _plain_divisor(a, b)
    if plain is not None:
        return store_int(a // plain, dt)
    zero, m1 = b == 0, b == -1
    safe = np.where(zero | m1, 1, b).astype(a.dtype)
    q = (a - np.fmod(a, safe)) // safe  # exact: the dividend minus its remainder
    q = np.where(m1, -a, q)
    return store_int(np.where(zero, -1, q), dt)


def _rems(a, b, dt):
    """Sign of the dividend; x % 0 = x, like PTX rem.s."""
    a, b = signed(a, dt), signed(b, dt)
    plain = _plain_divisor(a, b)
    if plain is not None:
        return store_int(a % plain, dt)
    zero, m1 = b == 0, b == -1
    r = np.fmod(a, np.where(zero | m1, 1, b).astype(a.dtype))
    return store_int(np.where(zero, a, np.where(m1, 0, r)), dt)


def _divu(a, b, dt):
    """x / 0 = all ones, like PTX div.u."""
    a, b = unsigned(a, dt), unsigned(b, dt)
    plain = _plain_divisor(a, b)
    if plain is not None:
        return store_int(a // plain, dt)
    zero = b == 0
    q = a // np.where(zero, 1, b).astype(b.dtype)
    return store_int(np.where(zero, np.iinfo(a.dtype).max, q), dt)


def _remu(a, b, dt):
    a, b = unsigned(a, dt), unsigned(b, dt)
    plain = _plain_divisor(a, b)
    if plain is not None:
        return store_int(a % plain, dt)
    zero = b == 0
    return store_int(np.where(zero, a, a % np.where(zero, 1, b).astype(b.dtype)), dt)


def _shift_amount(b, dt):
    """Shift amounts are unsigned and clamp at the width (PTX shl/shr semantics)."""
    amt = unsigned(b, dt)
    bits = INT_BITS[dt]
    return amt >= bits, np.minimum(amt, bits - 1).astype(amt.dtype)


def _shl(a, b, dt):
    over, s = _shift_amount(b, dt)
    ua = unsigned(a, dt)
    return store_int(np.where(over, 0, ua << s.astype(ua.dtype)), dt)


def _shru(a, b, dt):
    over, s = _shift_amount(b, dt)
    ua = unsigned(a, dt)
    return store_int(np.where(over, 0, ua >> s.astype(ua.dtype)), dt)


def _shrs(a, b, dt):
    _, s = _shift_amount(b, dt)  # >= width: the sign fills every bit, as a shift by width - 1
    sa = signed(a, dt)
    return store_int(sa >> s.astype(sa.dtype), dt)


def _signed_op(fn):
    return lambda a, b, dt: store_int(fn(signed(a, dt), signed(b, dt)), dt)


def _unsigned_op(fn):
    return lambda a, b, dt: store_int(fn(unsigned(a, dt), unsigned(b, dt)), dt)


def _popc(a, dt):
    return store_int(nx.popcount(unsigned(a, dt)).astype(np.int64), dt)


_BYTE_REVERSED = np.array([int(f"{i:08b}"[::-1], 2) for i in range(256)], np.uint8)


def _brev(a, dt):
    """Bits reversed: the bytes in reverse order, each byte's bits reversed."""
    if dt == "i1":
        return a
    u = np.ascontiguousarray(unsigned(a, dt))
    b = u.view(np.uint8).reshape(u.shape + (u.itemsize,))
    return _BYTE_REVERSED[b[..., ::-1]].copy().view(u.dtype).reshape(u.shape).view(a.dtype)


def _clz(a, dt):
    return store_int(nx.count_leading_zeros(unsigned(a, dt), INT_BITS[dt]), dt)


# ---- the tables ----------------------------------------------------------------------------------
BINARY: dict[str, dict[str, object]] = {
    "add": {"int": _wrapping(np.add), "float": _exact(np.add)},
    "sub": {"int": _wrapping(np.subtract), "float": _exact(np.subtract)},
    "mul": {"int": _wrapping(np.multiply), "float": _exact(np.multiply)},
    "div": {"float": _exact(np.divide)},
    "divs": {"int": _divs},
    "divu": {"int": _divu},
    "rems": {"int": _rems},
    "remu": {"int": _remu},
    "remf": {"float": _exact(np.fmod)},
    "and": {"int": _wrapping(np.bitwise_and)},
    "or": {"int": _wrapping(np.bitwise_or)},
    "xor": {"int": _wrapping(np.bitwise_xor)},
    "shl": {"int": _shl},
    "shrs": {"int": _shrs},
    "shru": {"int": _shru},
    "maxs": {"int": _signed_op(np.maximum)},
    "mins": {"int": _signed_op(np.minimum)},
    "maxu": {"int": _unsigned_op(np.maximum)},
    "minu": {"int": _unsigned_op(np.minimum)},
    "maxnum": {"float": _exact(_maxnum)},
    "minnum": {"float": _exact(_minnum)},
    "maximum": {"float": _exact(_maximum)},
    "minimum": {"float": _exact(_minimum)},
    "mulhiu": {"int": lambda a, b, dt: nx.mulhi(a, b, dt, False)},
    "mulhis": {"int": lambda a, b, dt: nx.mulhi(a, b, dt, True)},
    "pow": {"float": _wide(np.power)},
    "atan2": {"float": _wide(np.arctan2)},
    "hypot": {"float": _wide(np.hypot)},
    "copysign": {"float": _exact(np.copysign)},
    "nextafter": {"float": _nextafter},
}

UNARY: dict[str, dict[str, object]] = {
    "neg": {"int": _wrapping(np.negative), "float": _exact(np.negative)},
    "abs": {"int": lambda a, dt: store_int(np.abs(signed(a, dt)), dt), "float": _exact(np.abs)},
    "not": {"int": lambda a, dt: np.invert(a)},
    "sqrt": {"float": _exact(np.sqrt)},
    "rsqrt": {"float": _rsqrt},
    "exp": {"float": _wide(np.exp)},
    "exp2": {"float": _wide(np.exp2)},
    "expm1": {"float": _wide(np.expm1)},
    "log": {"float": _wide(np.log)},
    "log2": {"float": _wide(np.log2)},
    "log10": {"float": _wide(np.log10)},
    "log1p": {"float": _wide(np.log1p)},
    "sin": {"float": _wide(np.sin)},
    "cos": {"float": _wide(np.cos)},
    "tan": {"float": _wide(np.tan)},
    "asin": {"float": _wide(np.arcsin)},
    "acos": {"float": _wide(np.arccos)},
    "atan": {"float": _wide(np.arctan)},
    "sinh": {"float": _wide(np.sinh)},
    "cosh": {"float": _wide(np.cosh)},
    "tanh": {"float": _wide(np.tanh)},
    "asinh": {"float": _wide(np.arcsinh)},
    "acosh": {"float": _wide(np.arccosh)},
    "atanh": {"float": _wide(np.arctanh)},
    "erf": {"float": _wide(nx.erf)},
    "erfc": {"float": _wide(nx.erfc)},
    "lgamma": {"float": _wide(libm.lgamma)},
    "cbrt": {"float": _wide(np.cbrt)},
    "floor": {"float": _exact(np.floor)},
    "ceil": {"float": _exact(np.ceil)},
    "ftrunc": {"float": _exact(np.trunc)},
    "rint": {"float": _exact(np.rint)},
    "isnan": {"float": lambda a, dt: np.isnan(a.astype(compute_dtype(dt), copy=False))},
    "isinf": {"float": lambda a, dt: np.isinf(a.astype(compute_dtype(dt), copy=False))},
    "signbit": {"float": lambda a, dt: np.signbit(a.astype(compute_dtype(dt), copy=False))},
    "popc": {"int": _popc},
    "clz": {"int": _clz},
    "brev": {"int": _brev},
    "recip": {"float": _exact(np.reciprocal)},
}
PREDICATES = {"isnan", "isinf", "signbit"}  # unary ops whose result is i1

assert set(BINARY) == set(VECTOR_BINARY), "BINARY must cover ISA VECTOR_BINARY exactly"
assert set(UNARY) == set(VECTOR_UNARY), "UNARY must cover ISA VECTOR_UNARY exactly"


def op_for(table: dict, op: str, dtype: str, what: str):
    fn = table[op].get(kind(dtype))
    if fn is None:
        kinds = " or ".join(table[op])
        raise IsaError(f"{what} is defined on {kinds} types, not {dtype}")
    return fn


# ---- rules ---------------------------------------------------------------------------------------
def _same(st, ins, operands, what=None):
    """The common dtype and shape of tile operands; IsaError naming them if they differ."""
    tiles = [st.tiles[i] for i in operands]
    dt, shape = tiles[0].dtype, tiles[0].shape
    for t in tiles:
        if t.dtype != dt or t.shape != shape:
            listing = ", ".join(f"t{j} {u.dtype}{list(u.shape)}" for j, u in zip(operands, tiles))
            raise IsaError(f"{what or ins.mnemonic}: operands must share dtype and shape, got {listing}")
    return dt


def _same_shape(st, ins, x, y):
    if st.tiles[x].shape != st.tiles[y].shape:
        raise IsaError(
            f"{ins.mnemonic}: t{x}{list(st.tiles[x].shape)} and t{y}{list(st.tiles[y].shape)} differ in shape"
        )


def _need(st, ins, tile_index, dtypes, role):
    t = st.tiles[tile_index]
    if t.dtype not in dtypes:
        raise IsaError(f"{ins.mnemonic}: {role} t{tile_index} must be {' or '.join(dtypes)}, got {t.dtype}")
    return t


# ops that are a single numpy ufunc on fp32/fp64 and on i8..i64 storage: computed straight into the
# destination view (numpy buffers operands that overlap it), skipping a temporary and a copy; the
# scalar unit runs DIRECT_INT in place on its i64 register rows
_DIRECT_FLOAT = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "copysign": np.copysign,
    "remf": np.fmod,
}
DIRECT_INT = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
}


# logical shifts: one ufunc on the unsigned views when every amount is below the width (the usual
# case: a constant amount), else the clamping functions above
_DIRECT_SHIFT = {"shl": np.left_shift, "shru": np.right_shift}


# i1 and/or/xor: one logical ufunc from the operands' bytes (any nonzero byte is true) into the result's
# bool bytes (0 / 1): what the 0/1 words' bitwise op, stored as i1, writes
_DIRECT_I1 = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}


def _binary_rule(op):
    direct_float, direct_int, shift = _DIRECT_FLOAT.get(op), DIRECT_INT.get(op), _DIRECT_SHIFT.get(op)
    direct_i1 = _DIRECT_I1.get(op)

    def rule(st, ins):
        d, a, b = ins.operands
        dt = _same(st, ins, (d, a, b))
        if direct_float is not None and dt in ("f32", "f64"):
            direct_float(st.view(a), st.view(b), out=st.view(d))
        elif direct_i1 is not None and dt == "i1" and st.view(d).dtype == np.bool_:
            direct_i1(st.view(a).view(np.uint8), st.view(b).view(np.uint8), out=st.view(d))
        elif direct_int is not None and dt in ("i8", "i16", "i32", "i64"):
            direct_int(st.view(a), st.view(b), out=st.view(d))
        elif (
            shift is not None
            and dt in ("i8", "i16", "i32", "i64")
            and _in_width(amount := unsigned(st.view(b), dt), dt)
        ):
            shift(unsigned(st.view(a), dt), amount, out=unsigned(st.view(d), dt))
        else:
            fn = op_for(BINARY, op, dt, ins.mnemonic)
            if dt == "f32" and getattr(fn, "into", None) is not None:
                fn.into(st.view(a), st.view(b), out=st.view(d))
            else:
                st.write(d, fn(st.read(a), st.read(b), dt))

    return rule


def _unary_rule(op):
    def rule(st, ins):
        d, a = ins.operands
        if op in PREDICATES:
            _need(st, ins, d, ("i1",), "result")
            _same_shape(st, ins, d, a)
            dt = st.tiles[a].dtype
        else:
            dt = _same(st, ins, (d, a))
        fn = op_for(UNARY, op, dt, ins.mnemonic)
        if dt == "f32" and getattr(fn, "into", None) is not None:
            fn.into(st.view(a), out=st.view(d))
        else:
            st.write(d, fn(st.read(a), dt))

    return rule


def _fma(st, ins):
    d, a, b, c = ins.operands
    dt = _same(st, ins, (d, a, b, c))
    x, y, z = st.read(a), st.read(b), st.read(c)
    if is_float(dt):
        st.write(d, nx.fma(x, y, z, dt))
    else:
        mul, add = BINARY["mul"]["int"], BINARY["add"]["int"]
        st.write(d, add(mul(x, y, dt), z, dt))


def _in_width(amount: np.ndarray, dt: str) -> bool:
    amount = _distinct(amount)
    return amount.size == 0 or int(amount.max()) < INT_BITS[dt]


def _distinct(v: np.ndarray) -> np.ndarray:
    """v without its broadcast axes (stride 0: a constant tile repeats one element), the same values to
    scan: a shift by a filled constant checks one amount per program, not the tile's every element."""
    if 0 not in v.strides:
        return v
    return v[tuple(slice(0, 1) if s == 0 and n > 1 else slice(None) for s, n in zip(v.strides, v.shape))]


def _overlap(st, x: int, y: int) -> bool:
    """Whether tiles x and y share SRAM bytes (within a program's row; rows never overlap)."""
    (lo_x, hi_x), (lo_y, hi_y) = st.tiles[x].span(), st.tiles[y].span()
    return lo_x < hi_y and lo_y < hi_x


def _select(st, ins):
    d, c, a, b = ins.operands
    dt = _same(st, ins, (d, a, b))
    _need(st, ins, c, ("i1",), "condition")
    _same_shape(st, ins, c, d)
    if dt == "i1" or not st.tiles[d].is_contiguous():  # i1: the bytes are normalised on the way
        st.write(d, np.where(st.read(c), st.read(a), st.read(b)))
        return
    if COMPILED_SELECT and _tiles is not None and _select_compiled(st, d, c, a, b):
        return
    raw = st.view(c).view(np.uint8)  # an i1 byte may hold any bits: nonzero is true
    taken = np.count_nonzero(raw)
    if taken in (0, raw.size):  # one side whole (copyto buffers a source overlapping d)
        np.copyto(st.view(d), st.view(a if taken else b))
        return
    # b + (a - b) * cond on the bits as unsigned integers (exact mod 2**width): branch-free, about
    # twice as fast as np.where's per-element branch even when it predicts well. The condition as 0/1
    # words of the width first (a multiply by the bool tile casts it chunk by chunk inside the ufunc: as
    # much as the two passes). Computed in the destination when it does not overlap the side added back
    # last (no tile-sized temporary: a fresh one costs more in page faults than the arithmetic); else
    # through a temporary, the last ufunc buffering an overlap
    bits = BITS[dt]
    cond = raw.astype(bits)
    if raw.max() > 1:
        np.minimum(cond, 1, out=cond)
    ua, ub, ud = st.view(a).view(bits), st.view(b).view(bits), st.view(d).view(bits)
    if not _overlap(st, d, b):
        np.subtract(ua, ub, out=ud)
        np.multiply(ud, cond, out=ud)
        np.add(ud, ub, out=ud)
    elif not _overlap(st, d, a):  # a + (b - a) * not cond
        np.subtract(ub, ua, out=ud)
        np.multiply(ud, np.subtract(1, cond, out=cond), out=ud)
        np.add(ud, ua, out=ud)
    else:
        x = np.subtract(ua, ub)
        np.multiply(x, cond, out=x)
        np.add(x, ub, out=ud)


SELECT_STRIDED_MAX_RANK = 8  # _tiles.select_strided's MAX_RANK (sim/csrc/tiles.cpp)


def _fold_dims(shape, *strides):
    """(shape, *strides) with unit dims dropped and each dim merged into the one before it where every
    stride tuple steps through both as one (a row-major destination always does): the same elements in the
    same order, in as few dims as the strided sides allow."""
    dims = [(n, [s[i] for s in strides]) for i, n in enumerate(shape) if n != 1] or [(1, [0 for _ in strides])]
    out = [dims[0]]
    for n, ss in dims[1:]:
        m, prev = out[-1]
        if all(p == q * n for p, q in zip(prev, ss)):
            out[-1] = (m * n, ss)
        else:
            out.append((n, ss))
    return (tuple(n for n, _ in out), *(tuple(ss[k] for _, ss in out) for k in range(len(strides))))


def _select_compiled(st, d, c, a, b) -> bool:
    """_select in C (``_tiles.select``: one pass per program row) when its layout allows: the image one
    C-contiguous block, d and the condition contiguous, each side contiguous or a broadcast constant and
    either d itself or apart from it, the condition apart from d; a side with strides of its own, apart
    from d, through ``_tiles.select_strided``. False: the numpy code runs instead."""
    tiles, img = st.tiles, st.sram
    td, tc = tiles[d], tiles[c]
    if not (img.flags.c_contiguous and tc.is_contiguous() and not _overlap(st, d, c)):
        return False
    steps, strided = [], False
    for side in (a, b):
        t = tiles[side]
        if t.is_contiguous():
            step = t.itemsize
        elif all(s == 0 for s in t.strides):
            step = 0
        else:
            step, strided = None, True  # strides of its own (a reduction tree's halves): select_strided
        if side != d and _overlap(st, d, side) and not (t.addr == td.addr and step):
            return False
        steps.append(step)
    row = img.shape[1]
    if strided:
        select_strided = getattr(_tiles, "select_strided", None)  # None: a _tiles built before it (rebuild)
        if select_strided is None:
            return False
        ta, tb, isz = tiles[a], tiles[b], td.itemsize
        shape, sa, sb = _fold_dims(td.shape, ta.strides, tb.strides)
        if len(shape) > SELECT_STRIDED_MAX_RANK:  # tl.sort's hypercube of a broadcast tile: 10 dims of 2
            return False
        select_strided(
            img, st.P, row, isz, shape, td.addr, tc.addr,
            ta.addr, tuple(s * isz for s in sa), tb.addr, tuple(s * isz for s in sb),
        )  # fmt: skip
        return True
    _tiles.select(
        img, st.P, row, td.itemsize, td.numel, td.addr, tc.addr, tiles[a].addr, steps[0], tiles[b].addr, steps[1]
    )
    return True


def _clamp(st, ins):
    """tt.clampf: nan=all propagates a NaN operand (max/min), nan=none ignores it (maxnum/minnum)."""
    d, a, lo, hi = ins.operands
    dt = _same(st, ins, (d, a, lo, hi))
    if is_float(dt):
        mx, mn = ("maximum", "minimum") if ins.suffixes[0] == "all" else ("maxnum", "minnum")
    else:
        mx, mn = "maxs", "mins"
    k = kind(dt)
    st.write(d, BINARY[mn][k](BINARY[mx][k](st.read(a), st.read(lo), dt), st.read(hi), dt))


_SIGNEDNESS = {"s": signed, "u": unsigned}
# fcmp predicates that are one numpy comparison (numerics.FPRED's: ordered ones false on a NaN, une true)
_DIRECT_FCMP = {
    "oeq": np.equal,
    "ogt": np.greater,
    "oge": np.greater_equal,
    "olt": np.less,
    "ole": np.less_equal,
    "une": np.not_equal,
}


def _cmp_rule(is_int):
    def rule(st, ins):
        d, a, b = ins.operands
        dt = _same(st, ins, (a, b))
        _need(st, ins, d, ("i1",), "result")
        _same_shape(st, ins, d, a)
        if is_int:
            nx.check_int(dt, ins.mnemonic)
            pred = ins.suffixes[0]
            if dt != "i1" and st.view(d).dtype == np.bool_:  # straight into the result's bytes (0 / 1)
                view, name = (nx.unsigned, pred) if pred in ("eq", "ne") else (_SIGNEDNESS[pred[0]], pred[1:])
                nx.CMP[name](view(st.view(a), dt), view(st.view(b), dt), out=st.view(d))
                return
            st.write(d, nx.compare_int(pred, st.read(a), st.read(b), dt))
        else:
            nx.check_float(dt, ins.mnemonic)
            direct = _DIRECT_FCMP.get(ins.suffixes[0])
            if direct is not None and dt in ("f32", "f64") and st.view(d).dtype == np.bool_:
                direct(st.view(a), st.view(b), out=st.view(d))  # straight into the result's bytes (0 / 1)
                return
            st.write(d, nx.compare_float(ins.suffixes[0], st.read(a), st.read(b)))

    return rule


# ---- conversions: fn(values, src dtype, dst dtype, suffixes) -------------------------------------
def _bitcast(x, src, dst, _):
    if NUMPY[src].itemsize != NUMPY[dst].itemsize:
        raise IsaError(f"bitcast {src} -> {dst}: item sizes differ")
    raw = x.astype(np.uint8) if src == "i1" else x.view(BITS[src])
    return store_int(raw, dst) if dst == "i1" else raw.view(NUMPY[dst])


# name -> (source kind, destination kind, fn)
CONVERSIONS = {
    "sext": ("int", "int", lambda x, s, d, _: store_int(signed(x, s).astype(np.int64), d)),
    "zext": ("int", "int", lambda x, s, d, _: store_int(unsigned(x, s).astype(np.uint64), d)),
    "trunc": ("int", "int", lambda x, s, d, _: store_int(x, d)),
    "sitofp": ("int", "float", lambda x, s, d, _: nx.int_to_float(signed(x, s), True, d)),
    "uitofp": ("int", "float", lambda x, s, d, _: nx.int_to_float(unsigned(x, s), False, d)),
    "fptosi": ("float", "int", lambda x, s, d, _: nx.float_to_int(x, d, True)),
    "fptoui": ("float", "int", lambda x, s, d, _: nx.float_to_int(x, d, False)),
    "fcvt": ("float", "float", lambda x, s, d, suf: round_float(x, d, suf[0] if suf else "rtne")),
    "bitcast": (None, None, _bitcast),
}


def convert(name: str, x, src: str, dst: str, suffixes=(), what: str = ""):
    src_kind, dst_kind, fn = CONVERSIONS[name]
    what = what or name
    if src_kind and kind(src) != src_kind or dst_kind and kind(dst) != dst_kind:
        raise IsaError(f"{what}: converts {src_kind} to {dst_kind}, got {src} -> {dst}")
    return fn(x, src, dst, suffixes)


# one casting copy into the destination: integer width changes (C's integer casts wrap, as
# store_int does: the source seen zero- or sign-extended, or as it is for a truncation) and
# integers to f32/f64 (C's conversion rounds once, to nearest even, as int_to_float's does)
_INT_RESIZE = {"zext": unsigned, "sext": signed, "trunc": lambda x, _: x}
_INT_TO_WIDE_FLOAT = {"sitofp": signed, "uitofp": unsigned}


def _convert_rule(name):
    resize, to_float = _INT_RESIZE.get(name), _INT_TO_WIDE_FLOAT.get(name)

    def rule(st, ins):
        d, a = ins.operands
        td, ta = st.tiles[d], st.tiles[a]
        if td.shape != ta.shape:
            raise IsaError(f"{ins.mnemonic}: shapes differ, t{d}{list(td.shape)} vs t{a}{list(ta.shape)}")
        if ta.dtype in INT_BITS and (
            resize is not None
            and td.dtype in INT_BITS
            and td.dtype != "i1"
            or to_float is not None
            and td.dtype in ("f32", "f64")
        ):
            np.copyto(st.view(d), (resize or to_float)(st.read(a), ta.dtype), casting="unsafe")
            return
        st.write(d, convert(name, st.read(a), ta.dtype, td.dtype, ins.suffixes, ins.mnemonic))

    return rule


SEMANTICS = {f"v.{op}": _binary_rule(op) for op in BINARY}
SEMANTICS.update({f"v.{op}": _unary_rule(op) for op in UNARY})
SEMANTICS.update({f"v.{name}": _convert_rule(name) for name in CONVERSIONS})
SEMANTICS.update(
    {"v.fma": _fma, "v.select": _select, "v.clamp": _clamp, "v.cmpi": _cmp_rule(True), "v.cmpf": _cmp_rule(False)}
)
