"""Every kernel of the TTIR corpus: lower it, run it on the simulator, compare with numpy.

The constexprs are the corpus' (see tests/fixtures/ttir/kernels.py); runtime sizes are
chosen to hit masks and partial blocks."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from codegen_kernels.harness import cdiv, close, compile_corpus, run

from triton_plate_backend.errors import CompileError
from triton_plate_backend.sim.semantics import DeviceAssertionError

RNG = np.random.default_rng(0)


def rand(*shape, lo=-1.0, hi=1.0, dtype=np.float32):
    return RNG.uniform(lo, hi, shape).astype(dtype)


def test_vec_add():
    n = 2500
    x, y, o = rand(n), rand(n), np.zeros(n, np.float32)
    (_, _, out), _ = run(compile_corpus("vec_add"), cdiv(n, 1024), [x, y, o, n])
    np.testing.assert_array_equal(out, x + y)


def test_softmax():
    rows, cols = 5, 100
    x = rand(rows, 128, lo=-5, hi=5)
    o = np.zeros((rows, 128), np.float32)
    (out, _), _ = run(compile_corpus("softmax"), rows, [o, x, 128, 128, cols])
    ref = np.exp(x[:, :cols] - x[:, :cols].max(1, keepdims=True))
    close(out[:, :cols], ref / ref.sum(1, keepdims=True), rtol=1e-5)
    assert not out[:, cols:].any(), "masked-off columns must stay untouched"


def test_matmul_fp16():
    M, N, K = 80, 72, 48
    a, b = rand(M, K, dtype=np.float16), rand(K, N, dtype=np.float16)
    c = np.zeros((M, N), np.float16)
    (_, _, out), _ = run(compile_corpus("matmul"), cdiv(M, 64) * cdiv(N, 64), [a, b, c, M, N, K, K, N, N])
    ref = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    close(out, ref, rtol=2e-3, atol=2e-3)


def test_layernorm():
    rows, N = 3, 300
    X = rand(rows, N, lo=-2, hi=2)
    W, B = rand(N), rand(N)
    Y = np.zeros((rows, N), np.float16)
    mean, rstd = np.zeros(rows, np.float32), np.zeros(rows, np.float32)
    (_, y, _, _, m, r), _ = run(compile_corpus("layernorm"), rows, [X, Y, W, B, mean, rstd, N, N, 1e-5])
    mu = X.mean(1)
    var = ((X - mu[:, None]) ** 2).mean(1)
    rs = 1 / np.sqrt(var + 1e-5)
    close(m, mu, atol=1e-5)
    close(r, rs, rtol=1e-4)
    close(y, ((X - mu[:, None]) * rs[:, None] * W + B).astype(np.float16), rtol=2e-3, atol=2e-3)


def test_where_cumsum():
    n = 200
    x = rand(256, lo=-3, hi=3)
    o, oi = np.zeros(256, np.float32), np.zeros(256, np.int32)
    (_, out, outi), _ = run(compile_corpus("where_cumsum"), 1, [x, o, oi, n])
    v = np.where(np.arange(256) < n, x, 0)
    v = np.where(v > 0, v, -v * 0.5).astype(np.float32)
    cp = np.cumprod(v[::-1])[::-1]
    close(out[:n], (np.cumsum(v) + cp)[:n], rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(outi[:n], np.cumsum(v > 1.0)[:n])


def test_reduce_misc():
    M, N = 16, 32
    x = rand(M, N)
    o, oi = np.zeros(80, np.float32), np.zeros(32, np.int32)
    (_, out, outi), _ = run(compile_corpus("reduce_misc"), 1, [x, o, oi])
    np.testing.assert_array_equal(out[:M], x.max(1))
    np.testing.assert_array_equal(outi[:M], x.argmax(1))
    np.testing.assert_array_equal(out[M : 2 * M], x.max(1))
    np.testing.assert_array_equal(outi[M : 2 * M], x.argmax(1))
    close(out[2 * M : 3 * M], x.argmin(1) + x.min(1))  # xor_sum of 0..31 is 0
    s = x.astype(np.float64).sum()
    close(out[3 * M], s, rtol=1e-5)
    close(out[4 * M], np.float32(out[3 * M]) * np.float32(out[3 * M]) + 1, rtol=1e-6)


def test_atomics_one_program():
    n = 100
    x = rand(128)
    acc = rand(32)
    cnt = np.array([50, 60, 70, 80, 0, 0, 0, 0, 5, 12, 8, 6], np.int32)
    lock = np.zeros(1, np.int32)
    (_, acc_o, cnt_o, lock_o), _ = run(compile_corpus("atomics"), 1, [x, acc.copy(), cnt.copy(), lock, n])
    v = np.where(np.arange(128) < n, x, 0)[:n]
    offs = np.arange(n)
    want = acc.astype(np.float64).copy()
    np.add.at(want, offs % 16, v)
    np.maximum.at(want, 16 + offs % 4, v)
    old = want[0]
    want[0] += v.sum()
    want[1] = old
    close(acc_o, want, rtol=1e-5, atol=1e-5)
    c = cnt.copy()
    np.minimum.at(c, offs % 4, offs.astype(np.int32))
    c[8], c[9], c[10], c[11] = 3, cnt[9] & 7, cnt[10] | 7, cnt[11] ^ 7
    np.testing.assert_array_equal(cnt_o, c)
    assert lock_o[0] == 0


def test_atomics_spin_lock_two_programs():
    n = 256
    x = rand(256)
    acc, cnt, lock = np.zeros(32, np.float32), np.zeros(12, np.int32), np.zeros(1, np.int32)
    (_, acc_o, cnt_o, lock_o), _ = run(compile_corpus("atomics"), 2, [x, acc, cnt, lock, n])
    want = np.zeros(32)
    np.add.at(want, np.arange(n) % 16, x)
    close(acc_o[2:16], want[2:16], rtol=1e-5, atol=1e-5)
    close(acc_o[0], want[0] + x.sum(), rtol=1e-5, atol=1e-5)
    close(acc_o[16:20], [max(0, x[np.arange(n) % 4 == k].max()) for k in range(4)])
    assert cnt_o[11] == 0 and cnt_o[10] == 7 and cnt_o[8] == 3 and lock_o[0] == 0


def test_shape_ops():
    x = rand(128)
    o = np.zeros(1152, np.float32)
    (_, out), _ = run(compile_corpus("shape_ops"), 1, [x, o])
    v = x
    t = v.reshape(8, 16).T
    a, b = t, t * 2
    p = (a + b).reshape(4, 4, 8).transpose(2, 0, 1)
    bb = np.broadcast_to(p.sum(2)[None], (2, 8, 4))
    close(out[:64], bb.reshape(64), rtol=1e-6)
    close(out[64:320], np.stack([v, v], -1).reshape(256) + np.concatenate([v, v]))
    close(out[512:640], v.reshape(8, 16)[:, ::-1].reshape(128))
    close(out[1024:1152], np.sort(v))


def test_block_ptr():
    M, N = 40, 150
    a = rand(M, N, dtype=np.float16)
    o = np.zeros((M, 64), np.float32)
    for name in ("block_ptr", "block_ptr_keepbp"):
        (_, out), _ = run(compile_corpus(name), cdiv(M, 32), [a, o.copy(), M, N, N, 1])
        pad = np.zeros((M, cdiv(N, 64) * 64), np.float32)
        pad[:, :N] = a
        close(out, pad.reshape(M, -1, 64).sum(1), rtol=1e-5, atol=1e-5)


def test_math_fns_rejects_inline_asm():
    with pytest.raises(CompileError, match="PTX inline assembly cannot run on PLATE.*|.*kernels.py:192"):
        compile_corpus("math_fns")


def _f8(x, dt):
    return x.astype(dt)


def test_casts():
    n = 128
    x = rand(n, lo=-0.9, hi=100)
    outs = [
        np.zeros(n, d)
        for d in (
            np.float16,
            ml_dtypes.bfloat16,
            ml_dtypes.float8_e4m3fn,
            ml_dtypes.float8_e5m2,
            np.int8,
            np.int64,
            np.uint8,
            np.bool_,
        )
    ]
    o = np.zeros(n, np.float32)
    res, _ = run(compile_corpus("casts"), 1, [x, *outs, o])
    h, bf, f8, f8b, i8, i64, u8, b1, out = res[1:]
    np.testing.assert_array_equal(h, x.astype(np.float16))
    np.testing.assert_array_equal(bf, x.astype(ml_dtypes.bfloat16))
    np.testing.assert_array_equal(f8.view(np.uint8), x.astype(ml_dtypes.float8_e4m3fn).view(np.uint8))
    np.testing.assert_array_equal(f8b.view(np.uint8), x.astype(np.float16).astype(ml_dtypes.float8_e5m2).view(np.uint8))
    np.testing.assert_array_equal(i8, np.trunc(x).astype(np.int8))
    np.testing.assert_array_equal(i64, np.trunc(x).astype(np.int64))
    np.testing.assert_array_equal(u8, np.trunc(np.maximum(x, 0)).astype(np.uint8))
    np.testing.assert_array_equal(b1, x > 0)
    f32 = np.float32
    w = (
        h.astype(f32)
        + bf.astype(f32)
        + f8.astype(f32)
        + i8.astype(f32)
        + i64.astype(f32)
        + u8.astype(f32)
        + b1.astype(f32)
        + x.view(np.int32).astype(f32)
        + (i8.astype(np.int32) + i64.astype(np.int16).astype(np.int32)).astype(f32)
        + x
        + x
        + x
    )
    close(out, w, rtol=1e-6)


def test_while_if():
    x = np.arange(1, 11, dtype=np.int32)
    for flag, f, want in [(1, 2.0, 2 * 55), (-9, 0.0, 55 + 3), (-1, 2.0, 54)]:
        o = np.zeros(2, np.int32)
        (_, out), _ = run(compile_corpus("while_if"), 1, [x, o, 10, flag, f])
        assert out[0] == want
        assert out[1] == (want if f > 1.5 else 0)


def test_debug_ops_prints_and_asserts():
    n = 50
    x = rand(64, lo=0, hi=1)
    lines = []
    (_, out), _ = run(compile_corpus("debug_ops"), 1, [x, np.zeros(64, np.float32), n], printer=lines.append)
    np.testing.assert_array_equal(out[:n], x[:n])
    assert sum("idx (" in line and " v =: " in line for line in lines) == 64
    assert any(line.endswith(" pid: 0") for line in lines)
    x[3] = -1
    with pytest.raises(DeviceAssertionError, match="negative value"):
        run(compile_corpus("debug_ops"), 1, [x, np.zeros(64, np.float32), n], printer=lines.append)


def test_histogram():
    x = RNG.integers(0, 32, 256).astype(np.int32)
    (_, out), _ = run(compile_corpus("histogram"), 1, [x, np.zeros(32, np.int32)])
    np.testing.assert_array_equal(out, np.bincount(x, minlength=32))


def test_gather():
    x = rand(32, 16)
    idx = RNG.integers(0, 32, (32, 16)).astype(np.int32)
    (_, _, out), _ = run(compile_corpus("gather"), 1, [x, idx, np.zeros((32, 16), np.float32)])
    np.testing.assert_array_equal(out, np.take_along_axis(x, idx, 0))


def test_load_store_flags():
    n = 200
    x = rand(256)
    o = np.zeros(3 * n + 256, np.float32)
    (_, out), _ = run(compile_corpus("load_store_flags"), (1, 2), [x, o, n])
    offs = np.arange(256)
    a = np.where(offs < n, x, 1.0)
    want = np.zeros_like(o)
    want[:n] = (a + np.where(offs < n, x, 0))[:n]
    want[n : 2 * n + 56] = a[: n + 56]
    want[2 * n : 2 * n + 256] = 3.0
    want[0] = x[0] * 2
    close(out[: 2 * n + 256], want[: 2 * n + 256])


def test_tensor_desc():
    M, N = 100, 64
    a = rand(M, N, dtype=np.float16)
    (_, out), _ = run(compile_corpus("tensor_desc"), cdiv(M, 64), [a, np.zeros_like(a), M, N])
    np.testing.assert_array_equal(out, a * np.float16(2))


def test_desc_gather():
    M, N = 12, 64
    a = rand(M, N, dtype=np.float16)
    idx = np.array([3, 0, 7, 11, 2, 5, 9, 1], np.int32)
    o = np.zeros_like(a)
    (_, _, out), _ = run(compile_corpus("desc_gather"), 1, [a, idx, o, M, N])
    want = np.zeros_like(a)
    want[idx] = a[idx]
    np.testing.assert_array_equal(out, want)


def test_dot_variants():
    a = rand(64, 64).astype(ml_dtypes.float8_e4m3fn)
    b = rand(64, 64).astype(ml_dtypes.float8_e4m3fn)
    a32, b32 = rand(64, 64), rand(64, 64)
    o, o2 = np.zeros((64, 64), np.float32), np.zeros((64, 64), np.float32)
    (_, _, _, _, out, out2), _ = run(compile_corpus("dot_variants"), 1, [a, b, a32, b32, o, o2])
    close(out, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-5, atol=1e-5)
    close(out2, 2 * (a32.astype(np.float64) @ b32), rtol=1e-4, atol=1e-4)


def test_attn_fwd():
    H, N_CTX, D = 2, 100, 64
    q, k, v = (rand(H, N_CTX, D, dtype=np.float16) for _ in range(3))
    o = np.zeros_like(q)
    scale = 0.125
    (_, _, _, out), _ = run(compile_corpus("attn_fwd"), (cdiv(N_CTX, 64), H), [q, k, v, o, scale, N_CTX])
    s = np.einsum("hmd,hnd->hmn", q.astype(np.float32), k.astype(np.float32)) * scale
    causal = np.arange(N_CTX)[:, None] >= np.arange(N_CTX)[None, :]
    s = np.where(causal, s, -1e6 * scale)
    p = np.exp(s - s.max(-1, keepdims=True))
    ref = np.einsum("hmn,hnd->hmd", p / p.sum(-1, keepdims=True), v.astype(np.float32))
    close(out, ref, rtol=2e-2, atol=2e-2)


def test_big_unrolled():
    x = rand(256 * 65)
    (_, out), _ = run(compile_corpus("big_unrolled"), 1, [x, np.zeros(256, np.float32)])
    v = x[:256].astype(np.float32)
    acc = np.zeros(256, np.float32)
    for i in range(64):
        w = x[256 * (i + 1) : 256 * (i + 2)]
        acc += np.where(w > v, np.exp(w - v), np.sqrt(np.abs(w)) * i).astype(np.float32)
        v = np.maximum(v, w) + np.float32(w.sum(dtype=np.float32) * np.float32(0.001))
    close(out, acc + v, rtol=1e-4, atol=1e-4)


def test_extra_ops_early_return():
    x = rand(64)
    x[0] = -1.0  # `if tl.load(x) < 0: return` -> nothing stored
    u8 = np.zeros(32 * 64, np.uint8)
    s = np.full(64, 127, np.uint8)
    o = np.zeros(4096 + 64, np.float32)
    (_, _, _, _, _, out), _ = run(compile_corpus("extra_ops"), 1, [x, u8, u8, s, s, o, 64])
    assert not out.any()


def test_extra_ops_dot_scaled_and_select():
    n = 64
    x = rand(64)
    x[0] = 0.5
    a = rand(32, 64).astype(ml_dtypes.float8_e4m3fn)
    b = rand(64, 32).astype(ml_dtypes.float8_e4m3fn)
    sa = RNG.integers(125, 130, (32, 2)).astype(np.uint8)
    sb = RNG.integers(125, 130, (32, 2)).astype(np.uint8)
    o = np.zeros(4096 + 64, np.float32)
    (_, _, _, _, _, out), _ = run(compile_corpus("extra_ops"), 1, [x, a.view(np.uint8), b.view(np.uint8), sa, sb, o, n])
    af = a.astype(np.float32) * np.exp2(np.repeat(sa.astype(np.float32) - 127, 32, axis=1))
    bf = b.astype(np.float32) * np.exp2(np.repeat(sb.astype(np.float32) - 127, 32, axis=1)).T
    close(out[:1024].reshape(32, 32), af @ bf, rtol=1e-5, atol=1e-5)
    close(out[2048:2056], x.reshape(8, 8).sum(1), rtol=1e-5)
    close(out[4096 : 4096 + 64], x)


def _philox(seed: int, c0: np.ndarray, rounds: int = 10):
    """Triton's philox 4x32 (triton/language/random.py) for counters (c0, 0, 0, 0)."""
    u32 = np.uint64(0xFFFFFFFF)
    c0 = c0.astype(np.uint64)
    c1 = np.zeros_like(c0)
    c2 = np.zeros_like(c0)
    c3 = np.zeros_like(c0)
    k0, k1 = np.uint64(seed & 0xFFFFFFFF), np.uint64((seed >> 32) & 0xFFFFFFFF)
    A, B = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
    for _ in range(rounds):
        _c0, _c2 = c0, c2
        c0 = ((B * _c2) >> np.uint64(32)) ^ c1 ^ k0
        c2 = ((A * _c0) >> np.uint64(32)) ^ c3 ^ k1
        c1 = (B * _c2) & u32
        c3 = (A * _c0) & u32
        k0 = (k0 + np.uint64(0x9E3779B9)) & u32
        k1 = (k1 + np.uint64(0xBB67AE85)) & u32
    return [c.astype(np.uint32) for c in (c0, c1, c2, c3)]


def _uniform(x: np.ndarray) -> np.ndarray:
    x = x.view(np.int32)
    return (np.where(x < 0, -x - 1, x).astype(np.float32) * np.float32(4.6566127342e-10)).astype(np.float32)


def test_rand_loops():
    n, seed = 20, 1234
    (out,), _ = run(compile_corpus("rand_loops"), 1, [np.zeros(128, np.float32), seed, n])
    offs = np.arange(128)
    r = _uniform(_philox(seed, offs)[0])
    ri = _philox(seed, offs)[0]  # uint32: randint is unsigned
    acc = np.zeros(128, np.float32)
    for i in range(0, n, 2):
        acc += r * np.float32(i)
    acc += 3
    for k in range(n):
        c = _philox(seed, offs + k)
        u1, u2 = np.maximum(np.float32(1e-7), _uniform(c[0])), _uniform(c[1])
        acc += np.sqrt(np.float32(-2.0) * np.log(u1)) * np.cos(np.float32(6.283185307179586) * u2)
    close(out[:n], (acc + ri.astype(np.float32))[:n], rtol=1e-5, atol=1e-3)
    assert not out[n:].any()
