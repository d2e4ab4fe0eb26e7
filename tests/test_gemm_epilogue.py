"""A GEMM's prologue and epilogue code: the K loop's first loads issue before the accumulator's zero
fill (prefetch.early), the output tile is stored in the row pieces of its fp32 -> bf16
conversion, each piece's store right after its conversion (passes/store_pieces.py), and the K
loop's last trip is lowered after the loop with its m.mma in row blocks, each block's conversion
and store right after it (rules_scf.peeled_tail, passes/row_blocks.py). They reorder, cut or
duplicate the code only: results are bit-identical to the code without them."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest
import triton
import triton.language as tl
from codegen_kernels.harness import MACHINE, compile_kernel, corpus_text, run

from triton_plate_backend.passes import pipeline, prefetch, rules_dot, rules_scf, store_pieces
from triton_plate_backend.ttir.parser import parse


@triton.jit
def gemm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    num_n = tl.cdiv(N, BN)
    rm = (pid // num_n) * BM + tl.arange(0, BM)
    rn = (pid % num_n) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * K + rk[None, :]
    b = b_ptr + rk[:, None] * N + rn[None, :]
    # i8 operands sum exactly into an int32 accumulator, the others into fp32
    acc = tl.zeros((BM, BN), dtype=tl.int32 if a_ptr.dtype.element_ty == tl.int8 else tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        left = K - k * BK
        x = tl.load(a, mask=(rm[:, None] < M) & (rk[None, :] < left), other=0)
        y = tl.load(b, mask=(rk[:, None] < left) & (rn[None, :] < N), other=0)
        acc += tl.dot(x, y)
        a += BK
        b += BK * N
    c = c_ptr + rm[:, None] * N + rn[None, :]
    tl.store(c, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


SIG = {"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*bf16", "M": "i32", "N": "i32", "K": "i32"}
SIG |= {"BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}
TILE = {"BM": 128, "BN": 256, "BK": 32}  # a 32768-element accumulator: 4 conversion pieces of 8192


def _program():
    return compile_kernel(gemm_kernel, SIG, TILE)


def _without(monkeypatch):
    """The program compiled with neither transformation (the code before them)."""
    with monkeypatch.context() as m:
        m.setattr(prefetch, "early", lambda ctx, loop, pairs: False)
        m.setattr(store_pieces, "store", lambda *a, **k: False)
        m.setattr(rules_scf, "peeled_tail", lambda ctx, loop, keep: None)
        return _program()


def _names(prog):
    return [i.mnemonic for i in prog.instrs]


def test_the_first_loads_issue_before_the_zero_fill(monkeypatch):
    names = _names(_program())
    fill = names.index("v.copy")  # the accumulator's zero fill: the first vector copy
    first_loads = [i for i, n in enumerate(names) if n == "dma.load"][:2]
    assert len(first_loads) == 2 and max(first_loads) < fill
    before = _names(_without(monkeypatch))
    assert before.index("v.copy") < before.index("dma.load")  # what the transformation changed


def _ran(names):
    """The path where the K loop ran (its last trip and the epilogue end in the first halt)."""
    return names[: names.index("halt") + 1]


def test_the_store_follows_the_conversion_piece_by_piece(monkeypatch):
    names = _ran(_names(_program()))
    fcvt = [i for i, n in enumerate(names) if n == "v.fcvt"]
    stores = [i for i, n in enumerate(names) if n == "dma.store"]
    assert len(fcvt) == 4 and len(stores) == 4
    assert all(f < s for f, s in zip(fcvt, stores)) and all(s < f for s, f in zip(stores, fcvt[1:]))
    assert _names(_without(monkeypatch)).count("dma.store") == 1


def test_the_last_trip_runs_after_the_loop_on_its_staging_tiles():
    """The K loop's last trip runs after the loop on the staging tiles (no copy), its bf16 m.mma in 4
    blocks of 32 rows (the simulator sums every m.mma in 32-row blocks: the same bits as the
    whole), each followed by its conversion piece and its store; where the loop runs no trip the
    zero fill is converted and stored, with no m.mma."""
    names = _names(_program())
    ran, none = _ran(names), names[names.index("halt") + 1 :]
    loop, last = ran[: ran.index("bnz") + 1], ran[ran.index("bnz") + 1 :]
    assert loop.count("m.mma") == 1 and "v.copy" not in last
    order = [n for n in last if n in ("m.mma", "v.fcvt", "dma.store")]
    assert order == ["m.mma", "v.fcvt", "dma.store"] * 4
    assert "m.mma" not in none and none.count("v.fcvt") == 4 and none.count("dma.store") == 4


INT_SIG = SIG | {"a_ptr": "*i8", "b_ptr": "*i8", "c_ptr": "*fp32"}


def _int_program():
    return compile_kernel(gemm_kernel, INT_SIG, TILE)


def test_an_integer_last_trip_runs_in_row_blocks_each_followed_by_its_conversion_and_store():
    """Integer products too: the last trip's m.mma runs in 4 blocks of 32 rows, each followed
    by its conversion piece (32 rows of 256) and its store; the loop's m.mma covers the tile."""
    names = _names(_int_program())
    ran = _ran(names)
    loop, last = ran[: ran.index("bnz") + 1], ran[ran.index("bnz") + 1 :]
    assert loop.count("m.mma") == 1
    convert = {n for n in last if n.startswith("v.")}
    assert len(convert) == 1
    order = [n for n in last if n in ("m.mma", "dma.store", *convert)]
    assert order == ["m.mma", *convert, "dma.store"] * 4


@triton.jit
def two_loops_kernel(a_ptr, b_ptr, c_ptr, d_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """Two K loops in a row, each with its epilogue: the first's peeled tail holds the second loop."""
    pid = tl.program_id(0)
    num_n = tl.cdiv(N, BN)
    rm = (pid // num_n) * BM + tl.arange(0, BM)
    rn = (pid % num_n) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    for out in tl.static_range(2):
        a = a_ptr + rm[:, None] * K + rk[None, :]
        b = b_ptr + rk[:, None] * N + rn[None, :]
        acc = tl.zeros((BM, BN), dtype=tl.int32)
        for k in range(0, tl.cdiv(K, BK)):
            left = K - k * BK
            x = tl.load(a, mask=(rm[:, None] < M) & (rk[None, :] < left), other=0)
            y = tl.load(b, mask=(rk[:, None] < left) & (rn[None, :] < N), other=0)
            acc += tl.dot(x, y)
            a += BK
            b += BK * N
        if out == 0:
            tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float32), mask=mask)
        else:
            tl.store(d_ptr + rm[:, None] * N + rn[None, :], (acc * 2).to(tl.float32), mask=mask)


def test_two_loops_in_a_row_each_peel_and_keep_the_bits(monkeypatch):
    """The second loop is in the first one's tail, lowered on both of its paths, and peels there too:
    4 epilogues, the exact products in both outputs, with K = 0 and K of several blocks."""
    sig = INT_SIG | {"d_ptr": "*fp32"}
    prog = compile_kernel(two_loops_kernel, sig, TILE)
    names = _names(prog)
    # the first loop and its 4 blocks, then the second loop and its blocks on both of the first's paths
    assert names.count("halt") >= 4 and names.count("m.mma") == 5 + 2 * 5
    rng = np.random.default_rng(2)
    for m, n, k in [(150, 300, 70), (128, 256, 0)]:
        a = rng.integers(-128, 128, (m, max(k, 1)), dtype=np.int8)
        b = rng.integers(-128, 128, (max(k, 1), n), dtype=np.int8)
        c, d = np.full((m, n), np.nan, np.float32), np.full((m, n), np.nan, np.float32)
        grid = -(-m // TILE["BM"]) * -(-n // TILE["BN"])
        (*_, got_c, got_d), _ = run(prog, grid, [a, b, c, d, m, n, k])
        want = (a.astype(np.int64)[:, :k] @ b.astype(np.int64)[:k]).astype(np.float32)
        np.testing.assert_array_equal(got_c, want)
        np.testing.assert_array_equal(got_d, 2 * want)


@pytest.mark.parametrize("m, n, k", [(200, 300, 70), (130, 256, 0), (128, 256, 20), (100, 256, 32)])
def test_row_blocks_give_the_bits_of_the_whole_loop(monkeypatch, m, n, k):
    """Integer products: masked edges, no trip, K below one block, one trip: the same results as the
    loop lowered whole, and the exact integer products."""
    rng = np.random.default_rng(1)
    a = rng.integers(-128, 128, (m, max(k, 1)), dtype=np.int8)
    b = rng.integers(-128, 128, (max(k, 1), n), dtype=np.int8)
    grid = -(-m // TILE["BM"]) * -(-n // TILE["BN"])
    outs = []
    with monkeypatch.context() as mp:
        for prog in (_int_program(), None):
            if prog is None:
                mp.setattr(rules_scf, "peeled_tail", lambda ctx, loop, keep: None)
                prog = _int_program()
            c = np.full((m, n), np.nan, np.float32)
            (*_, got), _ = run(prog, grid, [a, b, c, m, n, k])
            outs.append(got)
    assert outs[0].tobytes() == outs[1].tobytes()
    want = a.astype(np.int64)[:, :k] @ b.astype(np.int64)[:k]
    np.testing.assert_array_equal(outs[0], want.astype(np.float32))


def test_a_last_trip_that_overflows_sram_is_lowered_with_the_loop(monkeypatch):
    """The last trip lowered apart keeps its staging tiles live with the output tile: on a core whose
    SRAM holds the kernel only without that, codegen lowers the loop whole at the same depth."""
    peeled = _program()
    with monkeypatch.context() as m:
        m.setattr(rules_scf, "peeled_tail", lambda ctx, loop, keep: None)
        whole = _program()
    assert whole.sram_bytes < peeled.sram_bytes
    core = dataclasses.replace(MACHINE.core, sram_bytes=whole.sram_bytes)
    names = _names(compile_kernel(gemm_kernel, SIG, TILE, machine=dataclasses.replace(MACHINE, core=core)))
    assert names == _names(whole)


@pytest.mark.parametrize("m, n, k", [(256, 512, 96), (200, 300, 70), (130, 256, 0), (128, 256, 20), (100, 256, 32)])
def test_results_are_bit_identical_to_the_code_without_them(monkeypatch, m, n, k):
    """bf16 with the last trip's m.mma in row blocks: masked edges (rows and columns past M and N
    inside a tile, K not a multiple of BK), a K loop that runs no trip (its early loads empty, the
    zero fill stored), K smaller than one block and K of one block (one trip: the last, straight
    after the guard)."""
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((m, max(k, 1))).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    b = (rng.standard_normal((max(k, 1), n)).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    grid = -(-m // TILE["BM"]) * -(-n // TILE["BN"])
    outs = []
    for prog in (_program(), _without(monkeypatch)):
        c = np.full((m, n), 0x7FC1, np.uint16)  # a NaN pattern: every element the kernel leaves keeps it
        (*_, got), _ = run(prog, grid, [a, b, c, m, n, k])
        outs.append(got)
    assert outs[0].tobytes() == outs[1].tobytes()
    want = (a.astype(np.uint32) << 16).view(np.float32)[:, :k] @ (b.astype(np.uint32) << 16).view(np.float32)[:k]
    got = (outs[0].astype(np.uint32) << 16).view(np.float32)
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2)


def test_pieces_that_overflow_the_dma_tokens_are_halved_before_a_stage_goes():
    """Each piece's store holds a token until the program's end: on a core with 3 tokens the 4 pieces
    do not fit, 2 do, at the same pipeline depth (the K loop's loads unchanged)."""
    core = dataclasses.replace(MACHINE.core, dma_tokens=3)
    names = _names(compile_kernel(gemm_kernel, SIG, TILE, machine=dataclasses.replace(MACHINE, core=core)))
    assert names.count("dma.store") == 2
    assert names.count("dma.load") == _names(_program()).count("dma.load")


def test_the_first_of_three_or_more_stores_is_one_piece_and_two_split_evenly():
    """8 conversion pieces of 4 rows each: 4 stores start the DMA-out engine after the first piece,
    2 stores cut the tile in halves (the second would otherwise wait for the rest of the tile)."""
    v = SimpleNamespace(shape=(32, 16), offset=0)
    pieces = [(64 * i, 64 * (i + 1), None) for i in range(8)]
    assert store_pieces._groups(pieces, v, 4) == [(1, 4), (4, 16), (6, 24), (8, 32)]
    assert store_pieces._groups(pieces, v, 2) == [(4, 16), (8, 32)]


@pytest.mark.parametrize("m, n, k", [(256, 512, 96), (200, 300, 70)])
def test_fp32_sums_of_the_row_blocks_are_the_whole_loops_bits(monkeypatch, m, n, k):
    """bf16 products into an fp32 output, not rounded to bf16: every fp32 sum of the row-blocked
    last trip has the bits of the loop lowered whole."""
    sig = SIG | {"c_ptr": "*fp32"}
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((m, k)).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    b = (rng.standard_normal((k, n)).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    grid = -(-m // TILE["BM"]) * -(-n // TILE["BN"])
    outs = []
    with monkeypatch.context() as mp:
        for whole in (False, True):
            if whole:
                mp.setattr(rules_scf, "peeled_tail", lambda ctx, loop, keep: None)
            prog = compile_kernel(gemm_kernel, sig, TILE)
            assert _names(prog).count("m.mma") == (1 if whole else 5)
            (*_, got), _ = run(prog, grid, [a, b, np.full((m, n), np.nan, np.float32), m, n, k])
            outs.append(got)
    assert outs[0].tobytes() == outs[1].tobytes()


def test_attention_with_its_last_trip_in_row_blocks_keeps_the_bits(monkeypatch):
    """Attention at 2 stages: its dots do not accumulate into the loop's carried value, so its last
    trip keeps whole-tile m.mma (each block would pay a fill); cut in 32-row blocks all the same (q @
    k^T and p @ v), the output has the bits of the loop lowered whole."""
    rng = np.random.default_rng(8)
    H, N, D = 2, 256, 64
    q, k, v = (rng.uniform(-1, 1, (H, N, D)).astype(np.float16) for _ in range(3))

    def lowered():
        module = parse(corpus_text("attn_fwd"), "attn_fwd")
        return pipeline.run_pipeline(module, SimpleNamespace(num_stages=2), MACHINE)[1]

    assert _names(lowered()).count("m.mma") == 4  # two in the loop, two in its last trip
    outs = []
    with monkeypatch.context() as mp:
        mma = rules_dot.mma
        mp.setattr(rules_dot, "mma", lambda ctx, acc, a, b, prec, blocks=False: mma(ctx, acc, a, b, prec, True))
        for whole in (False, True):
            if whole:
                mp.setattr(rules_scf, "peeled_tail", lambda ctx, loop, keep: None)
            prog = lowered()
            assert _names(prog).count("m.mma") == (2 if whole else 6)
            (*_, out), _ = run(prog, (N // 64, H), [q, k, v, np.zeros_like(q), 0.125, N])
            outs.append(out)
    assert outs[0].tobytes() == outs[1].tobytes()
