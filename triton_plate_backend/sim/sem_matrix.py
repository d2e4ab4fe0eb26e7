"""Matrix-unit semantics: m.mma.<prec>, acc[M, N] += a[M, K] @ b[K, N].

- f16 / bf16 / fp8 inputs (any mix): widened to fp32 exactly, products exact in fp32, summed
  in fp32 (a float32 matmul: BLAS's summation order), accumulated into acc; the precision
  suffix does not apply.
- i8 inputs: exact products and sums, int32 accumulator wrapping modulo 2**32.
- f32 inputs: PRECISION[prec] below (triton's input_precision).
- f64 inputs: float64 matmul, f64 accumulator.
- an f16 / bf16 accumulator is computed in fp32 and rounded to its type once per instruction.

Float matmuls are taken in blocks of ROWS rows (the matrix unit's pass), the last one padded with
zero rows: every BLAS call of an instruction has the shape (ROWS, K, N) whatever its M, and the
host BLAS picks its kernel and sum order by shape, so an output row's bits do not depend on how
many rows the compiler put in the instruction (a dot cut in ROWS-row blocks computes the whole's
bits). Within a block the order is still the host BLAS's.
"""

from __future__ import annotations

import numpy as np

from ..dtypes import NUMPY, isa_name
from ..errors import IsaError
from ..isa.table import ENUMS
from ..machine import MatrixUnit
from .numerics import F32, F64, round_float, round_tf32, store_int
from .parallel import blas_sgemm, for_rows, one_blas_thread

try:  # bf16 m.mma widened and summed per program in C (sim/csrc/tiles.cpp, built by setup.py); without it,
    from . import _tiles  # the numpy code
except ImportError:  # pragma: no cover - an unbuilt checkout
    _tiles = None
COMPILED_MMA = True  # tests turn it off to run the numpy code
_mma_bf16 = getattr(_tiles, "mma_bf16", None)  # None: a build before it
_sgemm: list = []  # [blas_sgemm()], found once
# the largest K and ROWS * N * K of one sgemm the C path takes. Past 100^3 OpenBLAS on SkylakeX leaves its
# small-matrix kernel (what beta 1 takes below it) for its blocked one: the sums still equal numpy's to K 448
# (from K 512 its K blocks differ), but a NaN product added to a NaN accumulator keeps the product's payload
# where numpy's add keeps the accumulator's
COMPILED_MAX_K = 256
COMPILED_MAX_MNK = 1 << 19

_NARROW = ("f16", "bf16", "f8e4m3fn", "f8e5m2", "f8e4m3fnuz", "f8e5m2fnuz")
ROWS = MatrixUnit.dim  # rows of one BLAS call: the sum order BLAS picks by shape is the same for any M


def _matmul(a, b, out=None, pad=None):
    """a [P, M, K] @ b [P, K, N] (float) as one BLAS product per ROWS-row block of a, the last block
    padded with zero rows: full blocks through views (a's rows split, b broadcast over them, no
    copy), the rest through ``pad`` (zeros past the rest's rows; made when None)."""
    P, M, K = a.shape
    N = b.shape[2]
    # b row-major per program: a column-major b (a tile loaded transposed, x @ w.T) sent numpy's batched
    # matmul down a path that stalls under load (a 1024^3 fp32 dot 2.3 s -> 0.2 s of CPU); one copy of b,
    # and the same BLAS path, hence the same sum order, whatever the tile's layout
    b = np.ascontiguousarray(b)
    if out is None:
        out = np.empty((P, M, N), np.result_type(a, b))
    full = M - M % ROWS
    if full:
        n = full // ROWS
        np.matmul(a[:, :full].reshape(P, n, ROWS, K), b[:, None], out=out[:, :full].reshape(P, n, ROWS, N))
    if full < M:
        if pad is None:
            pad = np.zeros((P, ROWS, K), out.dtype)
        pad[:P, : M - full] = a[:, full:]
        out[:, full:] = np.matmul(pad[:P], b)[:, : M - full]
    return out


def _bf16(x):
    return x.astype(NUMPY["bf16"]).astype(F32)  # RNE


def _split(x, rounder, parts):
    """x = parts[0] + parts[1] + ... (each exactly representable in the narrow format)."""
    out, rest = [], x
    for _ in range(parts):
        p = rounder(rest)
        out.append(p)
        rest = rest - p  # exact in fp32
    return out


def _terms(acc, pairs):
    """acc + sum of a_i @ b_j in the given order (smallest terms first, like triton's F32DotTC)."""
    for a, b in pairs:
        acc = acc + _matmul(a, b)
    return acc


def _ieee(a, b, acc):
    return (acc.astype(F64) + _matmul(a.astype(F64), b.astype(F64))).astype(F32)


def _tf32(a, b, acc):
    return _terms(acc, [(round_tf32(a), round_tf32(b))])


def _x3(rounder):
    def dot(a, b, acc):
        (ab, as_), (bb, bs) = _split(a, rounder, 2), _split(b, rounder, 2)
        return _terms(acc, [(as_, bb), (ab, bs), (ab, bb)])

    return dot


def _bf16x6(a, b, acc):
    a0, a1, a2 = _split(a, _bf16, 3)
    b0, b1, b2 = _split(b, _bf16, 3)
    return _terms(acc, [(a2, b0), (a1, b1), (a0, b2), (a1, b0), (a0, b1), (a0, b0)])


# fp32 inputs: prec -> fn(a f32 [P,M,K], b f32 [P,K,N], acc f32 [P,M,N]) -> f32 [P,M,N].
# tf32: inputs rounded to 10 mantissa bits (RNE; NVIDIA hardware's cvt.rna rounds ties away);
# tf32x3 / bf16x3: x = big + small, big*big + big*small + small*big; bf16x6: three-way bf16 split,
# the six products whose parts sum to order <= 2.
PRECISION = {"ieee": _ieee, "tf32": _tf32, "tf32x3": _x3(round_tf32), "bf16x3": _x3(_bf16), "bf16x6": _bf16x6}
assert set(PRECISION) == set(ENUMS["prec"]), "PRECISION must cover the ISA's prec enum"


_F16_TO_F32: list = []  # numpy's cast of every f16 bit pattern, once needed


def _widen_into(x, out) -> None:
    """out (f32) = x (f16 / bf16 / fp8), exactly: bf16 by moving its bits up, f16 by a table of
    numpy's cast (both the cast's bits, faster on strided SRAM views), fp8 by the cast."""
    if isa_name(x.dtype) == "bf16":
        # the codes widened by a plain copy, then shifted in place: two unbuffered loops (a shift that
        # casts as it goes runs numpy's buffered loop, ~10% of a 128x128x64 m.mma's CPU more)
        bits = out.view(np.uint32)
        np.copyto(bits, x.view(np.uint16))
        np.left_shift(bits, 16, out=bits)
    elif x.dtype == np.float16:
        if not _F16_TO_F32:
            _F16_TO_F32.append(np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(F32))
        np.take(_F16_TO_F32[0], x.view(np.uint16), out=out)
    else:
        np.copyto(out, x)


PRODUCT_ELEMENTS = 1 << 18  # the products m.mma computes before adding them to the accumulator (1 MiB)


def _narrow_into(A, B, C, a32=None, b32=None, spare=()):
    """C (an f32 tile view) += widen(A) @ widen(B): the same fp32 matmul and sum as
    ``C + _matmul(A.astype(F32), B.astype(F32))``, written in place, rows split across threads.
    ``a32`` / ``b32``: A / B already widened; ``spare``: f32 arrays free to widen into (fresh pages
    cost more than the widening). Returns (a32, b32)."""
    P, M, K = A.shape
    N = B.shape[2]
    wa, wb = a32 is None, b32 is None
    spare = list(spare)

    def buffer(shape):
        for i, x in enumerate(spare):
            if x.shape == shape and x.dtype == F32:
                return spare.pop(i)
        return np.empty(shape, F32)

    a32 = buffer(A.shape) if wa else a32
    b32 = buffer(B.shape) if wb else b32
    step = max(1, PRODUCT_ELEMENTS // max(M * N, 1))
    sgemm = _compiled_sgemm(A, B, M)

    def rows(s):
        # bf16: per program, its operands widened and its ROWS-row blocks multiplied by numpy's own sgemm call
        # with beta 1 in C, the products added to the accumulator by the sgemm (False: a layout it does not take)
        if sgemm is not None and _mma_bf16(*sgemm, A16[s], B16[s], C[s], a32[s], b32[s], wa, wb, ROWS):
            return
        prod = np.empty((min(step, s.stop - s.start), M, N), F32)
        pad = np.zeros((len(prod), ROWS, K), F32) if M % ROWS else None
        for i in range(s.start, s.stop, step):  # a few programs' products at a time, added while in cache
            j = min(i + step, s.stop)
            # their operands widened just before (still in cache for the product); a program's rows are its
            # own, so the accumulator rows written below are never another program's operands
            if wa:
                _widen_into(A[i:j], a32[i:j])
            if wb:
                _widen_into(B[i:j], b32[i:j])
            _matmul(a32[i:j], b32[i:j], prod[: j - i], pad)
            np.add(C[i:j], prod[: j - i], out=C[i:j])

    if sgemm is not None:
        A16, B16 = A.view(np.uint16), B.view(np.uint16)
    for_rows(rows, P, P * M * N * K)
    return a32, b32


def _compiled_sgemm(A, B, M):
    """(sgemm address, 64-bit integers) when the bf16 m.mma may run in C (tiles.cpp's mma_bf16), else None.

    numpy's float32 matmul of a row block is one cblas_sgemm (row-major, no transposes, alpha 1, beta 0) into
    a product, which _narrow_into then adds to the accumulator; mma_bf16 makes the same call with beta 1,
    on the accumulator. Both give the accumulator plus the product's sum rounded once when OpenBLAS sums
    the block's K products in a register from zero in the same order for both calls and then adds alpha
    times it to beta times C (alpha and beta 1: exact). OpenBLAS documents none of this; on SkylakeX (its
    "direct" kernel for beta 0, its small-matrix kernel for beta 1) the bits, NaN payloads included, were
    measured equal within COMPILED_MAX_K and COMPILED_MAX_MNK: tests/unit/test_sim_fast_paths.py compares
    the two paths, and sim_identity.py and the 4096^3 GEMM's output hash checked them."""
    K, N = A.shape[-1], B.shape[-1]
    if not COMPILED_MMA or _mma_bf16 is None or M % ROWS or K > COMPILED_MAX_K or ROWS * N * K > COMPILED_MAX_MNK:
        return None
    if isa_name(A.dtype) != "bf16" or isa_name(B.dtype) != "bf16":
        return None
    if not _sgemm:
        _sgemm.append(blas_sgemm())
    return _sgemm[0]


WIDENED_BYTES = 256 << 20  # widened operands kept between consecutive m.mma of one context, at most


def _kept_widened(st) -> tuple[dict, list]:
    """The widened operands the context's previous instruction kept, when it was an m.mma (a dot
    split into pieces of the matrix unit reads each piece of A and B several times in a row): no
    other instruction ran in between, so SRAM holds what they were widened from (the same rows: a
    context that split or absorbed others since has another SRAM array). Else the arrays an earlier
    m.mma kept, stale, free to widen into again: ({}, arrays)."""
    launch = getattr(st, "launch", None)
    kept = getattr(st, "mma_widened", None)
    if kept is None:
        return {}, []
    if launch is None or kept[0] != launch.steps - 1 or kept[1] is not st.sram:
        st.mma_widened = None
        return {}, list(kept[2].values())
    return kept[2], []


def _keep_widened(st, kept: dict, acc: int) -> None:
    launch = getattr(st, "launch", None)
    if launch is None:
        return
    lo, hi = st.tiles[acc].span()
    kept = {t: v for t, v in kept.items() if not (st.tiles[t].span()[0] < hi and lo < st.tiles[t].span()[1])}
    while kept and sum(v.nbytes for v in kept.values()) > WIDENED_BYTES:
        del kept[next(iter(kept))]  # the oldest first
    st.mma_widened = (launch.steps, st.sram, kept)


def _mma(st, ins):
    # numpy's OpenBLAS on one thread: its threads split no sum (the same bits) but, on a tile-sized product
    # past its threading size (a 128x64 @ 64x128 i8 or f32 ieee dot), cost ~100x the CPU of one thread
    # (0.04 -> 16 ms, 42 ms wall, on the shared 2-core host) and oversubscribe the cores (sim/parallel.py)
    with one_blas_thread():
        _mma_rule(st, ins)


def _mma_rule(st, ins):
    acc, a, b = ins.operands
    tc, ta, tb = st.tiles[acc], st.tiles[a], st.tiles[b]
    if (
        len(tc.shape) != 2
        or len(ta.shape) != 2
        or len(tb.shape) != 2
        or (ta.shape[0], tb.shape[1], ta.shape[1]) != (tc.shape[0], tc.shape[1], tb.shape[0])
    ):
        raise IsaError(f"m.mma: shapes acc{list(tc.shape)} a{list(ta.shape)} b{list(tb.shape)} do not chain")
    A, B, C = st.read(a), st.read(b), st.read(acc)
    pair = {ta.dtype, tb.dtype}
    if pair == {"i8"} and tc.dtype == "i32":
        exact = np.matmul(A.astype(F64), B.astype(F64)).astype(np.int64)  # |sum| < 2**53: exact
        st.write(acc, store_int(exact + C, "i32"))
    elif pair == {"f64"} and tc.dtype == "f64":
        st.write(acc, C + _matmul(A, B))
    elif pair == {"f32"} and tc.dtype in ("f32", "f16", "bf16"):
        st.write(acc, round_float(PRECISION[ins.suffixes[0]](A, B, C.astype(F32)), tc.dtype))
    elif pair <= set(_NARROW) and tc.dtype == "f32":
        kept, spare = _kept_widened(st)
        kept[a], kept[b] = _narrow_into(A, B, C, kept.get(a), kept.get(b), spare)
        _keep_widened(st, kept, acc)
    elif pair <= set(_NARROW) and tc.dtype in ("f16", "bf16"):
        st.write(acc, round_float(C.astype(F32) + _matmul(A.astype(F32), B.astype(F32)), tc.dtype))
    else:
        raise IsaError(
            f"m.mma: unsupported types acc {tc.dtype}, a {ta.dtype}, b {tb.dtype} (inputs f16/bf16/fp8 "
            "with an f32/f16/bf16 accumulator, f32 with f32, i8 with i32, or f64 with f64)"
        )


SEMANTICS = {"m.mma": _mma}
