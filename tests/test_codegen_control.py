"""Code generation of control flow: scf.for (iter_args, parallel copies, nesting), scf.if with
tensor results, scf.while, early returns (cf.cond_br)."""

from __future__ import annotations

import numpy as np
import triton
import triton.language as tl
from codegen_kernels.harness import MACHINE, close, compile_kernel, run

from triton_plate_backend.passes import codegen
from triton_plate_backend.passes.emitter import Emitter

RNG = np.random.default_rng(4)
B = 32


@triton.jit
def swap_loop(x, o, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(x + offs)
    b = tl.load(x + BLOCK + offs)
    s = 0
    t = 1
    for _ in range(n):
        a, b = b, a + b  # yields swap tensors: parallel-copy semantics
        s, t = t, s + t
    tl.store(o + offs, a)
    tl.store(o + BLOCK + offs, b)
    tl.store(o + 2 * BLOCK, s.to(tl.float32))


def test_loop_carried_swaps():
    x = RNG.uniform(-1, 1, 2 * B).astype(np.float32)
    prog = compile_kernel(swap_loop, {"x": "*fp32", "o": "*fp32", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": B})
    (_, out), _ = run(prog, 1, [x, np.zeros(2 * B + 1, np.float32), 7])
    a, b, s, t = x[:B].copy(), x[B:].copy(), 0, 1
    for _ in range(7):
        a, b = b, a + b
        s, t = t, s + t
    close(out[:B], a, rtol=1e-6)
    close(out[B : 2 * B], b, rtol=1e-6)
    assert out[2 * B] == s


@triton.jit
def init_read_in_body(x, o, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(x + offs)
    acc = a
    for _ in range(n):
        acc = acc ^ a  # the initial value is read at every turn: it must not be the carried value's home
    tl.store(o + offs, acc)


def test_a_loop_init_value_read_in_the_body_keeps_its_value():  # found by plate fuzz (seed 1, case 239)
    x = RNG.integers(1, 2**30, B).astype(np.int32)
    prog = compile_kernel(init_read_in_body, {"x": "*i32", "o": "*i32", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": B})
    for n in (1, 2, 3):
        (_, out), _ = run(prog, 1, [x, np.zeros(B, np.int32), n])
        np.testing.assert_array_equal(out, x if n % 2 == 0 else np.zeros_like(x))


@triton.jit
def nested_loops(x, o, n, m, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(n):
        row = tl.zeros([BLOCK], dtype=tl.float32)
        for j in range(i, m):
            row += tl.load(x + j * BLOCK + offs) * (i + 1)
        acc = acc * 0.5 + row
    tl.store(o + offs, acc)


def test_nested_loops():
    n, m = 3, 5
    x = RNG.uniform(-1, 1, (m, B)).astype(np.float32)
    sig = {"x": "*fp32", "o": "*fp32", "n": "i32", "m": "i32", "BLOCK": "constexpr"}
    (_, out), _ = run(compile_kernel(nested_loops, sig, {"BLOCK": B}), 1, [x, np.zeros(B, np.float32), n, m])
    acc = np.zeros(B, np.float32)
    for i in range(n):
        acc = acc * 0.5 + sum(x[j] * (i + 1) for j in range(i, m))
    close(out, acc, rtol=1e-5)


@triton.jit
def if_tensor(x, o, flag, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + offs)
    if flag > 0:
        w = v * 2.0
        k = 1
    else:
        w = v - 1.0
        k = 2
    tl.store(o + offs, w + k)


def test_if_with_tensor_results():
    x = RNG.uniform(-1, 1, B).astype(np.float32)
    prog = compile_kernel(if_tensor, {"x": "*fp32", "o": "*fp32", "flag": "i32", "BLOCK": "constexpr"}, {"BLOCK": B})
    for flag, want in [(1, x * 2 + 1), (0, x - 1 + 2)]:
        (_, out), _ = run(prog, 1, [x, np.zeros(B, np.float32), flag])
        close(out, want, rtol=1e-6)


@triton.jit
def while_tensor(x, o, limit, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + offs)
    steps = 0
    while tl.max(v, axis=0) < limit:
        v = v * 2.0 + 0.5
        steps += 1
    tl.store(o + offs, v)
    tl.store(o + BLOCK, steps.to(tl.float32))


def test_while_with_tensor_state():
    x = RNG.uniform(0, 1, B).astype(np.float32)
    sig = {"x": "*fp32", "o": "*fp32", "limit": "fp32", "BLOCK": "constexpr"}
    (_, out), _ = run(compile_kernel(while_tensor, sig, {"BLOCK": B}), 1, [x, np.zeros(B + 1, np.float32), 40.0])
    v, steps = x.copy(), 0
    while v.max() < 40:
        v, steps = v * 2 + 0.5, steps + 1
    close(out[:B], v, rtol=1e-6)
    assert out[B] == steps


@triton.jit
def early_exit(x, o, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if tl.load(x + pid * BLOCK) < 0:
        return
    tl.store(o + offs, tl.load(x + offs) + 1.0)


def test_early_return_per_program():
    x = RNG.uniform(0, 1, 4 * B).astype(np.float32)
    x[B] = -1.0  # program 1 returns early
    prog = compile_kernel(early_exit, {"x": "*fp32", "o": "*fp32", "BLOCK": "constexpr"}, {"BLOCK": B})
    (_, out), _ = run(prog, 4, [x, np.zeros(4 * B, np.float32)])
    want = x + 1
    want[B : 2 * B] = 0
    close(out, want)


@triton.jit
def loop_with_step(o, lo, hi, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.int32)
    for i in tl.range(lo, hi, 3):
        acc += offs * i
    tl.store(o + offs, acc)


def test_loop_bounds_and_zero_trip():
    prog = compile_kernel(loop_with_step, {"o": "*i32", "lo": "i32", "hi": "i32", "BLOCK": "constexpr"}, {"BLOCK": B})
    for lo, hi in [(-4, 11), (5, 5), (9, 2)]:
        (out,), _ = run(prog, 1, [np.zeros(B, np.int32), lo, hi])
        np.testing.assert_array_equal(out, np.arange(B) * sum(range(lo, hi, 3)))


@triton.jit(noinline=True)
def _poly(v, n):
    acc = v * 0.0
    for i in range(n):
        acc = acc * v + i
    return acc


@triton.jit
def calls(x, o, n):
    v = tl.load(x)
    tl.store(o, _poly(v, n) + _poly(v * 2.0, n + 1))


def test_noinline_calls_are_inlined():
    x = np.array([0.75], np.float32)
    prog = compile_kernel(calls, {"x": "*fp32", "o": "*fp32", "n": "i32"})
    (_, out), _ = run(prog, 1, [x, np.zeros(1, np.float32), 4])

    def poly(v, n):
        acc = np.float32(0)
        for i in range(n):
            acc = acc * v + np.float32(i)
        return acc

    close(out, [poly(x[0], 4) + poly(x[0] * 2, 5)], rtol=1e-6)


@triton.jit
def _early_returns(x, k):
    if k == 0:
        return x + 1
    elif k == 1:
        return x * 3
    return x - 5


@triton.jit
def branchy_call(x, o, k):
    v = tl.load(x)
    if tl.program_id(0) == 0:  # the call sits inside an scf.if region: it cannot stay a multi-block CFG
        v = _early_returns(v, k)
    tl.store(o, v)


def test_call_with_early_returns_in_a_region_becomes_nested_ifs():  # upstream test_if_call[jit_if]
    prog = compile_kernel(branchy_call, {"x": "*i32", "o": "*i32", "k": "i32"})
    assert not any(ins.mnemonic.startswith("call") for ins in prog.instrs)
    for k, want in [(0, 8), (1, 21), (2, 2)]:
        (_, out), _ = run(prog, 1, [np.array([7], np.int32), np.zeros(1, np.int32), k])
        assert out[0] == want, (k, out)


@triton.jit
def many_scalars(o, n, NS: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    vals = ()
    for i in tl.static_range(NS):
        vals = vals + ((pid + 1) * (i * 7 + 3) + n,)
    acc = tl.zeros([BLOCK], tl.int32)
    for t in range(n):
        for i in tl.static_range(NS):
            acc += vals[i] * (i + t)
    tl.store(o + pid * BLOCK + tl.arange(0, BLOCK), acc)


def test_code_out_of_registers_once_moved_is_lowered_again_with_a_load_per_use(monkeypatch):
    """The emitter computes a constant or argument once per block; when licm's code does not fit
    the registers, the code as emitted (codegen._finalize's fallback) must recompute them at each
    use: the kernel is lowered again without sharing, to the program sharing never made."""
    sig, const = {"o": "*i32", "n": "i32", "NS": "constexpr", "BLOCK": "constexpr"}, {"NS": 100, "BLOCK": 16}
    asked = []
    finalize = codegen._finalize

    def spy(em, *args, **kw):
        try:
            return finalize(em, *args, **kw)
        except codegen.Rematerialise:
            asked.append(len(em.shared))
            raise

    monkeypatch.setattr(codegen, "_finalize", spy)
    prog = compile_kernel(many_scalars, sig, const)
    assert asked and all(asked)  # the first lowering shared loads, and was lowered again
    monkeypatch.setattr(Emitter, "share", False)
    asked.clear()
    unshared = compile_kernel(many_scalars, sig, const)
    assert not asked
    assert [(i.mnemonic, i.suffixes, i.operands) for i in prog.instrs] == [
        (i.mnemonic, i.suffixes, i.operands) for i in unshared.instrs
    ]


def test_a_hundred_live_scalars_spill_to_sram_and_compute_the_same():
    """100 scalars live across a loop, more than the core's 64 registers: the ones the registers
    cannot hold live in SRAM slots (v.splat after a write, v.extract before a read)."""
    prog = compile_kernel(
        many_scalars, {"o": "*i32", "n": "i32", "NS": "constexpr", "BLOCK": "constexpr"}, {"NS": 100, "BLOCK": 16}
    )
    slots = [i for i in prog.instrs if i.mnemonic == "v.splat" and prog.tiles[i.operands[0]].shape == (1,)]
    assert len(slots) >= 100 - MACHINE.core.scalar_registers
    n = 3
    (out,), _ = run(prog, 2, [np.zeros(32, np.int32), n])
    for pid in range(2):
        want = sum(((pid + 1) * (i * 7 + 3) + n) * (i + t) for t in range(n) for i in range(100))
        assert (out[pid * 16 : pid * 16 + 16] == want).all()
