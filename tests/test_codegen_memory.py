"""Code generation of device-memory ops: strided and gather loads/stores, `other`, masks,
atomics, block pointers and tensor descriptors."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import triton
import triton.language as tl
from codegen_kernels.harness import MACHINE, cdiv, close, compile_kernel, compile_text, run, ttir_of

from triton_plate_backend.errors import SramOverflow
from triton_plate_backend.passes import rules_tt

RNG = np.random.default_rng(5)


@triton.jit
def masked_2d(x, o, M, N, sx, so, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    m = (rm[:, None] < M) & (rn[None, :] < N)
    v = tl.load(x + rm[:, None] * sx + rn[None, :], mask=m, other=-1.0)
    tl.store(o + rm[:, None] * so + rn[None, :], v * 2.0, mask=rn[None, :] < N + 2)


def test_masked_2d_strided():
    M, N = 13, 10
    x = RNG.uniform(0, 1, (M, 16)).astype(np.float32)
    o = np.zeros((cdiv(M, 8) * 8, 20), np.float32)
    sig = {
        "x": "*fp32",
        "o": "*fp32",
        "M": "i32",
        "N": "i32",
        "sx": "i32",
        "so": "i32",
        "BM": "constexpr",
        "BN": "constexpr",
    }
    prog = compile_kernel(masked_2d, sig, {"BM": 8, "BN": 16})
    (_, out), _ = run(prog, cdiv(M, 8), [x, o, M, N, 16, 20])
    want = np.full_like(o, 0)
    vals = np.full((16, 16), -1.0, np.float32)
    vals[:M, :N] = x[:, :N]
    want[:, : N + 2] = (vals * 2)[:, : N + 2]
    np.testing.assert_array_equal(out, want)


@triton.jit
def indirect(x, idx, other, o, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    i = tl.load(idx + offs)
    alt = tl.load(other + offs)
    v = tl.load(x + i, mask=(i >= 0) & (offs < n), other=alt)  # a gather with a tensor `other`
    tl.store(o + i, v + 1.0, mask=i >= 0)  # a scatter


def test_gather_scatter_with_tensor_other():
    n = 30
    x = RNG.uniform(0, 1, 64).astype(np.float32)
    idx = RNG.permutation(64)[:32].astype(np.int32)
    idx[::5] = -1
    alt = RNG.uniform(5, 6, 32).astype(np.float32)
    sig = {"x": "*fp32", "idx": "*i32", "other": "*fp32", "o": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    prog = compile_kernel(indirect, sig, {"BLOCK": 32})
    (_, _, _, out), _ = run(prog, 1, [x, idx, alt, np.zeros(64, np.float32), n])
    want = np.zeros(64, np.float32)
    ok = idx >= 0
    v = np.where(ok & (np.arange(32) < n), x[np.maximum(idx, 0)], alt)
    want[idx[ok]] = v[ok] + 1
    np.testing.assert_array_equal(out, want)


@triton.jit
def store_then_load(x, o, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x + offs, offs.to(tl.float32))
    v = tl.load(x + BLOCK - 1 - offs)  # must see the store just made
    tl.store(o + offs, v)


def test_load_after_store_sees_it():
    prog = compile_kernel(store_then_load, {"x": "*fp32", "o": "*fp32", "BLOCK": "constexpr"}, {"BLOCK": 32})
    (_, out), _ = run(prog, 1, [np.zeros(32, np.float32), np.zeros(32, np.float32)])
    np.testing.assert_array_equal(out, np.arange(32)[::-1])


@triton.jit
def atomics_kernel(fp, ip, up, v, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    f = tl.load(v + offs)
    i = (f * 100).to(tl.int32)
    tl.atomic_add(fp + offs % 4, f, mask=m)
    tl.atomic_max(fp + 4 + offs % 2, f, mask=m)
    tl.atomic_min(fp + 6 + offs % 2, f, mask=m)
    tl.atomic_and(ip + offs % 3, i, mask=m)
    tl.atomic_or(ip + 3 + offs % 3, i, mask=m)
    tl.atomic_xor(ip + 6 + offs % 3, i, mask=m)
    tl.atomic_max(up + offs % 2, i.to(tl.uint32), mask=m)
    tl.atomic_min(up + 2 + offs % 2, i.to(tl.uint32), mask=m)
    old = tl.atomic_xchg(ip + 9 + offs, i, mask=m)
    tl.store(ip + 9 + BLOCK + offs, old, mask=m)
    prev = tl.atomic_cas(ip + 9 + 2 * BLOCK + offs % 2, offs * 0, offs + 1)
    tl.store(ip + 9 + 3 * BLOCK + offs, prev)


def test_atomics():
    B, n = 16, 13
    v = RNG.uniform(-1, 1, B).astype(np.float32)
    fp = np.zeros(8, np.float32)
    fp[6:8] = 10
    ip = np.zeros(9 + 4 * B, np.int32)
    ip[:3] = -1
    ip[9 : 9 + B] = np.arange(100, 100 + B)
    up = np.array([0, 0, 2**32 - 1, 2**32 - 1], np.uint32)
    sig = {"fp": "*fp32", "ip": "*i32", "up": "*u32", "v": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    prog = compile_kernel(atomics_kernel, sig, {"BLOCK": B})
    (fo, io, uo, _), _ = run(prog, 1, [fp, ip.copy(), up, v, n])
    f, i = v[:n], (v[:n] * 100).astype(np.int32)
    k = np.arange(n)
    close(fo[:4], [f[k % 4 == j].sum() for j in range(4)], rtol=1e-6, atol=1e-6)
    close(fo[4:6], [max(0, f[k % 2 == j].max()) for j in range(2)])
    close(fo[6:8], [min(10, f[k % 2 == j].min()) for j in range(2)])
    np.testing.assert_array_equal(io[:3], [np.bitwise_and.reduce(np.append(i[k % 3 == j], -1)) for j in range(3)])
    np.testing.assert_array_equal(io[3:6], [np.bitwise_or.reduce(i[k % 3 == j]) for j in range(3)])
    np.testing.assert_array_equal(io[6:9], [np.bitwise_xor.reduce(i[k % 3 == j]) for j in range(3)])
    iu = i.view(np.uint32)
    np.testing.assert_array_equal(uo[:2], [iu[k % 2 == j].max() for j in range(2)])
    np.testing.assert_array_equal(uo[2:], [iu[k % 2 == j].min() for j in range(2)])
    np.testing.assert_array_equal(io[9 : 9 + n], i)
    np.testing.assert_array_equal(io[9 + B : 9 + B + n], np.arange(100, 100 + n))
    # cas: element 0 and 1 win (memory 0 == cmp 0) and write 1 and 2; the rest see those
    np.testing.assert_array_equal(io[9 + 2 * B : 9 + 2 * B + 2], [1, 2])
    np.testing.assert_array_equal(io[9 + 3 * B : 9 + 4 * B], [0, 0] + [1, 2] * ((B - 2) // 2))


@triton.jit
def block_ptr_2d(a, o, M, N, BM: tl.constexpr, BN: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    p = tl.make_block_ptr(a, (M, N), (N, 1), (pid_m * BM, pid_n * BN), (BM, BN), (1, 0))
    t = tl.load(p, boundary_check=(0, 1), padding_option="nan")
    q = tl.make_block_ptr(o, (M, N), (N, 1), (pid_m * BM, pid_n * BN), (BM, BN), (1, 0))
    tl.store(q, tl.where(t != t, -7.0, t + 1.0), boundary_check=(0, 1))
    tl.store(o + M * N + pid_m * 16 + pid_n, tl.sum(tl.where(t != t, 1.0, 0.0)))


def test_block_pointer_nan_padding_and_bounds():
    M, N, BM, BN = 10, 12, 8, 8
    a = RNG.uniform(0, 1, (M, N)).astype(np.float32)
    o = np.zeros(M * N + 64, np.float32)
    sig = {"a": "*fp32", "o": "*fp32", "M": "i32", "N": "i32", "BM": "constexpr", "BN": "constexpr"}
    (_, out), _ = run(compile_kernel(block_ptr_2d, sig, {"BM": BM, "BN": BN}), (2, 2), [a, o, M, N])
    close(out[: M * N].reshape(M, N), a + 1)
    for pm in range(2):
        for pn in range(2):
            valid = max(0, min(BM, M - pm * BM)) * max(0, min(BN, N - pn * BN))
            assert out[M * N + pm * 16 + pn] == BM * BN - valid


@triton.jit
def desc_oob(a, o, M, N, BM: tl.constexpr, BN: tl.constexpr):
    d = tl.make_tensor_descriptor(a, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    e = tl.make_tensor_descriptor(o, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    t = d.load([tl.program_id(0) * BM - 3, 5])  # starts before row 0: those rows read 0
    e.store([tl.program_id(0) * BM - 3, 5], t + 1.0)


def test_tensor_descriptor_out_of_bounds():
    M, N = 9, 16
    a = RNG.uniform(0, 1, (M, N)).astype(np.float32)
    sig = {"a": "*fp32", "o": "*fp32", "M": "i32", "N": "i32", "BM": "constexpr", "BN": "constexpr"}
    (_, out), _ = run(compile_kernel(desc_oob, sig, {"BM": 8, "BN": 16}), 2, [a, np.zeros_like(a), M, N])
    want = np.zeros_like(a)
    for pid in range(2):
        r0 = pid * 8 - 3
        for r in range(max(r0, 0), min(r0 + 8, M)):
            want[r, 5:] = a[r, 5:] + 1
    np.testing.assert_array_equal(out, want)


@triton.jit
def scalar_memory(x, o, n):
    acc = 0.0
    for i in range(n):
        acc += tl.load(x + i) * i
    tl.store(o + tl.program_id(0), acc)


@pytest.mark.parametrize("grid", [1, 3])
def test_scalar_loads_in_a_loop(grid):
    x = RNG.uniform(0, 1, 9).astype(np.float32)
    prog = compile_kernel(scalar_memory, {"x": "*fp32", "o": "*fp32", "n": "i32"})
    (_, out), _ = run(prog, grid, [x, np.zeros(grid, np.float32), 9])
    close(out, np.full(grid, (x * np.arange(9)).sum()), rtol=1e-6)


@triton.jit
def host_descriptor(d, o, BM: tl.constexpr, BN: tl.constexpr):
    t = d.load([tl.program_id(0) * BM, 4])
    r = tl.arange(0, BM)[:, None]
    c = tl.arange(0, BN)[None, :]
    tl.store(o + (tl.program_id(0) * BM + r) * BN + c, t)


def test_host_side_tensor_descriptor_argument():
    M, N = 12, 16
    a = RNG.uniform(0, 1, (M, N)).astype(np.float32)
    sig = {"d": "tensordesc<fp32[8, 8]>", "o": "*fp32", "BM": "constexpr", "BN": "constexpr"}
    prog = compile_kernel(host_descriptor, sig, {"BM": 8, "BN": 8})
    assert [x.type for x in prog.args] == [
        "ptr",
        "i64",
        "i64",
        "i64",
        "i64",
        "i1",
        "i1",
        "i32",
        "i32",
        "i64",
        "i64",
        "ptr",
    ]
    o = np.zeros((16, 8), np.float32)
    (_, out), _ = run(prog, 2, [a, M, N, N, 1, 0, 0, M, N, N, 1, o])
    want = np.zeros((16, 8), np.float32)
    want[:M] = a[:, 4:12]
    np.testing.assert_array_equal(out, want)


@triton.jit
def transposed_load(x, o, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    # element (n, m) of the tile is x[m, n]: the tile's last dim walks memory with stride N
    t = tl.load(x + rm[None, :] * N + rn[:, None], mask=(rm[None, :] < M) & (rn[:, None] < N), other=-1.0)
    tl.store(o + rn[:, None] * BM + rm[None, :], t + 1.0)


def test_a_transposed_load_moves_memory_rows_and_computes_on_a_permuted_view():
    """The DMA brings rows of contiguous elements (one run per row, not one per element) into a
    tile in memory's order; the tile the kernel computes on is a permuted view of it."""
    M, N, BM, BN = 12, 24, 16, 32
    x = RNG.uniform(0, 1, (M, N)).astype(np.float32)
    sig = {"x": "*fp32", "o": "*fp32", "M": "i32", "N": "i32", "BM": "constexpr", "BN": "constexpr"}
    prog = compile_kernel(transposed_load, sig, {"BM": BM, "BN": BN})
    (_, out), _ = run(prog, 1, [x, np.zeros((BN, BM), np.float32), M, N])
    want = np.full((BN, BM), -1.0, np.float32)
    want[:N, :M] = x.T
    close(out, want + 1.0)
    (load,) = [ins for ins in prog.instrs if ins.mnemonic == "dma.load"]
    dst = prog.tiles[load.operands[1]]
    assert dst.shape == (BM, BN) and dst.strides == (BN, 1)


@triton.jit
def advanced_gather(x, o, M, step, n_steps, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM) % M  # a modular row index: the pointers are a tensor, not a strided access
    ptrs = x + rm[:, None] * BN + tl.arange(0, BN)[None, :]
    acc = tl.zeros((BM, BN), tl.float32)
    for _ in range(n_steps):
        acc += tl.load(ptrs)
        ptrs += step  # one runtime offset for every pointer
    tl.store(o + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], acc)


def test_pointers_advanced_by_one_scalar_keep_no_offset_tile():
    """`ptrs += step` with a runtime scalar: its byte count is computed once and broadcast, not
    widened and scaled over an i64 tile as large as the pointers (SRAM a large gather kernel needs)."""
    BM, BN, M, step, n_steps = 16, 32, 12, 7, 3
    x = RNG.uniform(0, 1, 1024).astype(np.float32)
    o = np.zeros((BM, BN), np.float32)
    sig = {
        "x": "*fp32",
        "o": "*fp32",
        "M": "i32",
        "step": "i32",
        "n_steps": "i32",
        "BM": "constexpr",
        "BN": "constexpr",
    }
    prog = compile_kernel(advanced_gather, sig, {"BM": BM, "BN": BN})
    (_, out), _ = run(prog, 1, [x, o, M, step, n_steps])
    rows = np.arange(BM) % M
    base = rows[:, None] * BN + np.arange(BN)[None, :]
    want = sum(x[base + s * step].astype(np.float64) for s in range(n_steps)).astype(np.float32)
    close(out, want)
    widened = [
        ins.mnemonic
        for ins in prog.instrs
        if ins.mnemonic in ("v.sext", "v.mul")
        and prog.tiles[ins.operands[0]].dtype == "i64"
        and prog.tiles[ins.operands[0]].numel == BM * BN
    ]
    # the initial pointers' i32 offsets are widened once; the loop's step is not
    assert widened == ["v.sext", "v.mul"], widened


@triton.jit
def large_gather(x, o, M, step, n_steps, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM) % M  # a modular row index: a gather
    ptrs = x + (rm[:, None] * BN + tl.arange(0, BN)[None, :])  # one tt.addptr of i32 offsets
    acc = tl.zeros((BM, BN), tl.float32)
    for _ in range(n_steps):
        acc += tl.load(ptrs)
        ptrs += step
    tl.store(o + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], acc)


def tighter(prog, name):
    """plate-mini with one byte of SRAM less than ``prog`` needs as it is."""
    core = dataclasses.replace(MACHINE.core, sram_bytes=prog.sram_bytes - 1)
    return dataclasses.replace(MACHINE, name=name, core=core)


def test_a_large_gathered_pointer_tile_is_a_scalar_base_and_i32_offsets(monkeypatch):
    """A 128x256 pointer tensor carried through a loop: as an i64 address tile it needs 256 KiB of
    SRAM (and as much again while its i32 offsets are widened). On a core without that SRAM it is
    kept as i32 offsets from a scalar base (the loop moves only the base), 128 KiB, and the gather
    makes its addresses 32 KiB at a time: the kernel runs, with the same results."""
    BM, BN, M, step, n_steps = 128, 256, 100, 7, 3
    sig = {"x": "*fp32", "o": "*fp32", "M": "i32", "step": "i32", "n_steps": "i32", "BM": "constexpr"}
    sig["BN"] = "constexpr"
    text = ttir_of(large_gather, sig, {"BM": BM, "BN": BN})
    wide = compile_text(text, "large_gather")[0]  # fits a whole core as it is: unchanged
    assert [i.mnemonic for i in wide.instrs].count("dma.gather") == 1
    tight = tighter(wide, "tight-sram")
    prog = compile_text(text, "large_gather", tight)[0]
    assert wide.sram_bytes - prog.sram_bytes >= 2 * BM * BN
    with monkeypatch.context() as m:
        m.setattr(rules_tt, "BASED_POINTER_BYTES", 1 << 60)  # no pointer tensor kept as offsets
        with pytest.raises(SramOverflow, match="large_gather"):
            compile_text(text, "large_gather", tight)
    x = RNG.uniform(0, 1, BM * BN + n_steps * step).astype(np.float32)
    (_, out), _ = run(prog, 1, [x, np.zeros((BM, BN), np.float32), M, step, n_steps], machine=tight)
    rows = np.arange(BM) % M
    offs = rows[:, None] * BN + np.arange(BN)[None, :]
    want = sum(x[offs + s * step].astype(np.float64) for s in range(n_steps)).astype(np.float32)
    close(out, want)
    gathers = [i for i in prog.instrs if i.mnemonic == "dma.gather"]
    assert len(gathers) == BM * BN // 4096 and all(prog.tiles[i.operands[2]].numel == 4096 for i in gathers)


@triton.jit
def large_gather_uses(x, o, M, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM) % M
    ptrs = x + (rm[:, None] * BN + tl.arange(0, BN)[None, :])
    addrs = ptrs.to(tl.int64, bitcast=True)  # the pointer tensor's addresses themselves
    v = tl.load(ptrs, mask=rm[:, None] < M - 1, other=-1.0)
    tl.store(o + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], v + (addrs - addrs).to(tl.float32))
    tl.store(ptrs + 1, v * 2, mask=rm[:, None] == 0)  # a scatter through the same pointers


def test_other_uses_of_a_based_pointer_tensor_see_its_addresses():
    """A pointer tensor kept as base + i32 offsets read as addresses (a bitcast), through a masked
    gather with `other`, and moved by a constant into a masked scatter."""
    BM, BN, M = 128, 128, 100
    sig = {"x": "*fp32", "o": "*fp32", "M": "i32", "BM": "constexpr", "BN": "constexpr"}
    text = ttir_of(large_gather_uses, sig, {"BM": BM, "BN": BN})
    tight = tighter(compile_text(text, "large_gather_uses")[0], "tight-sram-2")
    prog = compile_text(text, "large_gather_uses", tight)[0]
    x = RNG.uniform(0, 1, BM * BN + 1).astype(np.float32)
    (xo, out), _ = run(prog, 1, [x, np.zeros((BM, BN), np.float32), M], machine=tight)
    rows = np.arange(BM) % M
    offs = rows[:, None] * BN + np.arange(BN)[None, :]
    want = np.where(rows[:, None] < M - 1, x[offs], -1.0)
    close(out, want)
    xw = x.copy()
    xw[offs[0] + 1] = want[0] * 2
    close(xo, xw)
    chunks = BM * BN // 4096  # the gather and the scatter make their addresses 4096 at a time
    assert [i.mnemonic for i in prog.instrs].count("dma.gather") == chunks
    assert [i.mnemonic for i in prog.instrs].count("dma.scatter") == chunks


@triton.jit
def divided_rows(x, o, BN: tl.constexpr):
    r = tl.arange(0, BN) // 3  # not affine: a gather, which the analysis memoises as not structured
    tl.store(o + tl.arange(0, BN), tl.load(x + r))


def test_an_unstructured_access_keeps_no_callers_frame_alive():
    """The analysis memoises a value it cannot structure by its reason, not by the raised exception:
    the traceback of that would hold the caller's frame, and its tensors, until the cyclic GC ran
    (an eager kernel's first call left torch's compared tensors alive)."""
    import gc
    import weakref

    text = ttir_of(divided_rows, {"x": "*fp32", "o": "*fp32", "BN": "constexpr"}, {"BN": 16})

    class Held:
        pass

    def caller():
        held = Held()
        compile_text(text, "divided_rows")
        return weakref.ref(held)

    gc.collect()
    gc.disable()
    try:
        ref = caller()
        assert ref() is None, "a frame of the compile outlived it"
    finally:
        gc.enable()
