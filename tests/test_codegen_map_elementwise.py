"""Code generation of tl.map_elementwise: the mapped scalar function runs on whole tiles. Its
branches (early returns: cf.cond_br between blocks; if/else: scf.if) are if-converted into
per-lane selects, its loops run while some lane is still inside, and pack=N hands the function N
consecutive elements along the last axis. Every kernel is checked against a numpy reference."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import triton
import triton.language as tl
from codegen_kernels.harness import MACHINE, close, compile_kernel, compile_text, run, ttir_of

from triton_plate_backend.errors import CompileError
from triton_plate_backend.sim.semantics import DeviceAssertionError

RNG = np.random.default_rng(11)
N = 64
SIG_I = {"X": "*i32", "Y": "*i32", "Z": "*i32", "W": "*i32", "N": "constexpr"}
SIG_F = {"X": "*fp32", "Y": "*fp32", "Z": "*fp32", "W": "*i32", "N": "constexpr"}
BRANCHES = {"bz", "bnz", "jmp"}


def small_vector_machine(max_elements: int):
    core = dataclasses.replace(MACHINE.core, vector=dataclasses.replace(MACHINE.core.vector, max_elements=max_elements))
    return dataclasses.replace(MACHINE, name=f"mini-vec{max_elements}", core=core)


def mnemonics(prog) -> set:
    return {i.mnemonic for i in prog.instrs}


def wrap32(v: int) -> int:
    return (v + 2**31) % 2**32 - 2**31


def ints(n, lo=-50, hi=50):
    return RNG.integers(lo, hi, n).astype(np.int32)


# ---- branches: early returns (cf.cond_br) --------------------------------------------------------
@triton.jit
def _nested_returns(x, y):
    if x > 0:
        if y > 0:
            return x + y
        z = x * 3
        if z > 10:
            return z
    elif y < -5:
        return -y
    return x - 1


@triton.jit
def nested_returns(X, Y, Z, W, N: tl.constexpr):
    r = tl.arange(0, N)
    z = tl.map_elementwise(_nested_returns, tl.load(X + r), tl.load(Y + r))
    tl.store(Z + r, z)


def nested_returns_ref(x, y):
    out = []
    for a, b in zip(x.tolist(), y.tolist()):
        if a > 0 and b > 0:
            out.append(a + b)
        elif a > 0 and a * 3 > 10:
            out.append(a * 3)
        elif a <= 0 and b < -5:
            out.append(-b)
        else:
            out.append(a - 1)
    return np.array(out, np.int32)


@pytest.mark.parametrize("max_elements", [8192, 16])
def test_nested_early_returns_are_if_converted(max_elements):
    x, y = ints(N, -8, 8), ints(N, -10, 10)
    machine = MACHINE if max_elements == 8192 else small_vector_machine(max_elements)
    assert ttir_of(nested_returns, SIG_I, {"N": N}).count("cf.cond_br") >= 3
    prog = compile_kernel(nested_returns, SIG_I, {"N": N}, machine=machine)
    assert not mnemonics(prog) & BRANCHES  # predicated straight-line code, no branch per element
    (_, _, z, _), _ = run(prog, 1, [x, y, np.zeros(N, np.int32), np.zeros(1, np.int32)], machine=machine)
    np.testing.assert_array_equal(z, nested_returns_ref(x, y))


@triton.jit
def _classify(x, t):
    if x < -t:
        return -x, 0
    elif x > t:
        return x - t, 2
    return x * x, 1


@triton.jit
def classify(X, Y, Z, W, N: tl.constexpr):
    r = tl.arange(0, N)
    v, c = tl.map_elementwise(_classify, tl.load(X + r), tl.load(Y + r))
    tl.store(Z + r, v)
    tl.store(W + r, c)


def test_early_returns_with_several_results():
    x = RNG.uniform(-2, 2, N).astype(np.float32)
    t = RNG.uniform(0.2, 1, N).astype(np.float32)
    prog = compile_kernel(classify, SIG_F, {"N": N})
    (_, _, v, c), _ = run(prog, 1, [x, t, np.zeros(N, np.float32), np.zeros(N, np.int32)])
    code = np.where(x < -t, 0, np.where(x > t, 2, 1))
    np.testing.assert_array_equal(c, code)
    close(v, np.select([code == 0, code == 2], [-x, x - t], x * x), rtol=1e-6)
    assert {0, 1, 2} <= set(c.tolist())


# ---- if/else assigning values (scf.if on a lane value) -------------------------------------------
@triton.jit
def _soft(x):
    if x > 0:
        r = tl.sqrt(x)
    else:
        r = tl.exp(x) - 1.0
    if r > 0.5:
        r = r * 2.0
    return r


@triton.jit
def soft(X, Y, Z, W, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(Z + r, tl.map_elementwise(_soft, tl.load(X + r)))


def test_if_else_runs_both_arms_and_selects():
    x = RNG.uniform(-3, 3, N).astype(np.float32)
    prog = compile_kernel(soft, SIG_F, {"N": N})
    (_, _, z, _), _ = run(prog, 1, [x, x, np.zeros(N, np.float32), np.zeros(1, np.int32)])
    with np.errstate(invalid="ignore"):
        r = np.where(x > 0, np.sqrt(x), np.exp(x) - 1)
    close(z, np.where(r > 0.5, r * 2, r), rtol=1e-6)


# ---- pack ----------------------------------------------------------------------------------------
@triton.jit
def _sort_pairs(a0, a1, b0, b1):
    """Per pair: the pair sorted, and b's difference and successor taken in that order."""
    if a0 > a1:
        return a1, a0, b1 - b0, b0 + 1
    return a0, a1, b0 - b1, b1 + 1


@triton.jit
def sort_pairs(X, Y, Z, W, N: tl.constexpr):
    r = tl.arange(0, N)
    s, t = tl.map_elementwise(_sort_pairs, tl.load(X + r), tl.load(Y + r), pack=2)
    tl.store(Z + r, s)
    tl.store(W + r, t)


def test_pack2_takes_consecutive_pairs():
    x, y = ints(N), ints(N)
    assert "cf.cond_br" in ttir_of(sort_pairs, SIG_I, {"N": N})  # an early return in a packed function
    prog = compile_kernel(sort_pairs, SIG_I, {"N": N})
    (_, _, s, t), _ = run(prog, 1, [x, y, np.zeros(N, np.int32), np.zeros(N, np.int32)])
    a, b = x.reshape(-1, 2), y.reshape(-1, 2)
    swap = a[:, 0] > a[:, 1]
    np.testing.assert_array_equal(s, np.sort(a, axis=1).ravel())
    t0 = np.where(swap, b[:, 1] - b[:, 0], b[:, 0] - b[:, 1])
    t1 = np.where(swap, b[:, 0], b[:, 1]) + 1
    np.testing.assert_array_equal(t, np.stack([t0, t1], axis=1).ravel())
    assert swap.any() and not swap.all()


@triton.jit
def _rotate_prefix(a0, a1, a2, a3):
    return a1, a2, a3, a0, a0, a0 + a1, a0 + a1 + a2, a0 + a1 + a2 + a3


@triton.jit
def rotate_prefix(X, Y, Z, W, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    x = tl.load(X + rm * N + rn)
    col = tl.load(Y + rn)  # broadcast along the rows: a stride-0 operand
    rot, pre = tl.map_elementwise(_rotate_prefix, x * col, pack=4)
    tl.store(Z + rm * N + rn, rot)
    tl.store(W + rm * N + rn, pre)


@pytest.mark.parametrize("max_elements", [8192, 16])
def test_pack4_on_a_2d_tile_groups_along_the_last_axis(max_elements):
    M = 4
    x, col = ints((M, N)), ints(N, -3, 4)
    machine = MACHINE if max_elements == 8192 else small_vector_machine(max_elements)
    sig = {"X": "*i32", "Y": "*i32", "Z": "*i32", "W": "*i32", "M": "constexpr", "N": "constexpr"}
    prog = compile_kernel(rotate_prefix, sig, {"M": M, "N": N}, machine=machine)
    zeros = np.zeros((M, N), np.int32)
    (_, _, rot, pre), _ = run(prog, 1, [x, col, zeros, zeros.copy()], machine=machine)
    g = (x * col).reshape(M, N // 4, 4)
    np.testing.assert_array_equal(rot, np.roll(g, -1, axis=2).reshape(M, N))
    np.testing.assert_array_equal(pre, np.cumsum(g, axis=2).reshape(M, N))


@triton.jit
def _swap(a0, a1):
    return a1, a0


@triton.jit
def column_pack(X, Y, Z, W, N: tl.constexpr):
    r = tl.arange(0, N)[:, None]
    (z,) = tl.map_elementwise(_swap, tl.load(X + r), pack=2)
    tl.store(Z + r, z)


def test_pack_that_does_not_divide_the_last_axis_is_refused():
    with pytest.raises(CompileError, match=r"pack=2 must divide the last dimension of the \[64, 1\] operands"):
        compile_kernel(column_pack, SIG_I, {"N": N})


# ---- loops inside the function -------------------------------------------------------------------
@triton.jit
def _bounce(x, y):
    acc = x
    for _ in range(5):  # the same trip count for every lane
        if acc > y:
            acc = acc - 7
        else:
            acc = acc * 2 + 1
    return acc


@triton.jit
def bounce(X, Y, Z, W, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(Z + r, tl.map_elementwise(_bounce, tl.load(X + r), tl.load(Y + r)))


def test_loop_with_uniform_bounds():
    x, y = ints(N), ints(N)
    prog = compile_kernel(bounce, SIG_I, {"N": N})
    (_, _, z, _), _ = run(prog, 1, [x, y, np.zeros(N, np.int32), np.zeros(1, np.int32)])
    acc = x.copy()
    for _ in range(5):
        acc = np.where(acc > y, acc - 7, acc * 2 + 1)
    np.testing.assert_array_equal(z, acc)


@triton.jit
def _halvings(x):
    if x < 0:
        return -1
    n = 0
    while x != 0:  # x >> 1 never reaches 0 for x < 0: those lanes must not run the loop
        x = x >> 1
        n += 1
    return n


@triton.jit
def _ipow(x, n):
    acc = 1
    for _ in range(n):  # a trip count per lane
        acc *= x
    return acc


@triton.jit
def lane_loops(X, Y, Z, W, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(X + r)
    tl.store(Z + r, tl.map_elementwise(_halvings, x))
    tl.store(W + r, tl.map_elementwise(_ipow, x, tl.load(Y + r)))


def test_loops_whose_trip_count_differs_per_lane():
    x = RNG.integers(-1000, 100000, N).astype(np.int32)
    x[:3] = [0, -1, 1]
    e = RNG.integers(-2, 7, N).astype(np.int32)
    prog = compile_kernel(lane_loops, SIG_I, {"N": N})
    (_, _, z, w), _ = run(prog, 1, [x, e, np.zeros(N, np.int32), np.zeros(N, np.int32)])
    halvings = [-1 if v < 0 else int(v).bit_length() for v in x.tolist()]
    np.testing.assert_array_equal(z, halvings)
    powers = [wrap32(v**k) if k > 0 else 1 for v, k in zip(x.tolist(), e.tolist())]
    np.testing.assert_array_equal(w, powers)


# ---- loads inside the function: masked to the lanes that run them ---------------------------------
@triton.jit
def _lookup(table, i):
    if (i >= 0) & (i < 16):
        return tl.load(table + i)  # lanes outside the table must not read it
    return -1


@triton.jit
def lookup(X, Y, Z, W, N: tl.constexpr):
    r = tl.arange(0, N)
    table = X + r * 0  # a tensor of pointers, all to the table
    tl.store(Z + r, tl.map_elementwise(_lookup, table, tl.load(Y + r)))


def test_loads_only_on_the_lanes_that_run_them():
    table = RNG.integers(100, 200, 16).astype(np.int32)
    i = RNG.integers(0, 16, N).astype(np.int32)
    i[::3] = RNG.choice([-(2**30), -1, 16, 2**30], len(i[::3]))  # far outside device memory
    prog = compile_kernel(lookup, SIG_I, {"N": N})
    assert not mnemonics(prog) & BRANCHES
    (_, _, z, _), _ = run(prog, 1, [table, i, np.zeros(N, np.int32), np.zeros(1, np.int32)])
    inside = (i >= 0) & (i < 16)
    np.testing.assert_array_equal(z, np.where(inside, table[np.clip(i, 0, 15)], -1))


# ---- the same machinery runs tl.reduce / tl.associative_scan combine functions ----------------------
@triton.jit
def _argmax_first(v1, i1, v2, i2):
    if v1 > v2:
        return v1, i1
    if v1 == v2:
        return v1, tl.minimum(i1, i2)
    return v2, i2


@triton.jit
def _larger(a, b):
    if a > b:
        return a
    return b


@triton.jit
def branchy_combines(X, Y, Z, W, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    x = tl.load(X + rm * N + rn)
    _, idx = tl.reduce((x, rn + rm * 0), 1, _argmax_first)
    tl.store(W + tl.arange(0, M), idx)
    tl.store(Z + rm * N + rn, tl.associative_scan(x, 1, _larger, reverse=True))


def test_reduce_and_scan_with_branchy_combine_functions():
    M = 4
    x = RNG.integers(0, 5, (M, N)).astype(np.int32)  # ties: the first maximum wins
    sig = {"X": "*i32", "Y": "*i32", "Z": "*i32", "W": "*i32", "M": "constexpr", "N": "constexpr"}
    prog = compile_kernel(branchy_combines, sig, {"M": M, "N": N})
    (_, _, z, w), _ = run(prog, 1, [x, x, np.zeros((M, N), np.int32), np.zeros(M, np.int32)])
    np.testing.assert_array_equal(w, x.argmax(axis=1))
    np.testing.assert_array_equal(z, np.maximum.accumulate(x[:, ::-1], axis=1)[:, ::-1])


# a combine region with blocks of its own (Triton inlines none into it today; plate accepts it)
MULTI_BLOCK_REDUCE = """module {
  tt.func public @max_by_blocks(%X: !tt.ptr<i32>, %Z: !tt.ptr<i32>) {
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %p = tt.splat %X : !tt.ptr<i32> -> tensor<64x!tt.ptr<i32>>
    %q = tt.addptr %p, %r : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
    %x = tt.load %q : tensor<64x!tt.ptr<i32>>
    %m = "tt.reduce"(%x) <{axis = 0 : i32}> ({
    ^bb0(%a: i32, %b: i32):
      %c = arith.cmpi sgt, %a, %b : i32
      cf.cond_br %c, ^bb2(%a : i32), ^bb1
    ^bb1:
      %d = arith.subi %b, %a : i32
      %e = arith.addi %a, %d : i32
      cf.br ^bb2(%e : i32)
    ^bb2(%v: i32):
      tt.reduce.return %v : i32
    }) : (tensor<64xi32>) -> i32
    tt.store %Z, %m : !tt.ptr<i32>
    tt.return
  }
}
"""


def test_reduce_combine_region_with_blocks():
    x = ints(N, -1000, 1000)
    prog = compile_text(MULTI_BLOCK_REDUCE, "max_by_blocks")[0]
    (_, z), _ = run(prog, 1, [x, np.zeros(1, np.int32)])
    assert z[0] == x.max()


# ---- asserts (Triton allows them in combine functions) hold on the lanes that skip them --------------
@triton.jit
def _checked_max(a, b):
    if a > b:
        tl.device_assert((a > b) & (a < 1000), "value too large")  # a > b fails on the lanes that skip it
        return a
    return b


@triton.jit
def checked_max(X, Y, Z, W, N: tl.constexpr):
    tl.store(Z, tl.reduce(tl.load(X + tl.arange(0, N)), 0, _checked_max))


def test_asserts_in_branches_of_a_combine_function():
    x = RNG.integers(-500, 500, N).astype(np.int32)
    prog = compile_kernel(checked_max, SIG_I, {"N": N}, opts={"debug": True})
    assert "dbg.assert" in mnemonics(prog)
    (_, _, z, _), _ = run(prog, 1, [x, x, np.zeros(1, np.int32), np.zeros(1, np.int32)])
    assert z[0] == x.max()
    x[7] = 5000  # the maximum: it wins every comparison it meets, so its assert runs and fails
    with pytest.raises(DeviceAssertionError, match="value too large"):
        run(prog, 1, [x, x, np.zeros(1, np.int32), np.zeros(1, np.int32)])
