"""Kernels over the Triton language surface that benchmarks/probe_language.py found wrong on plate, each
reduced to a small case (numpy references)."""

from __future__ import annotations

import dataclasses

import mpmath
import numpy as np
import pytest
import triton
import triton.language as tl
from codegen_kernels.harness import MACHINE, compile_kernel, run
from triton.language.extra import libdevice

from triton_plate_backend.dtypes import NUMPY


@triton.jit
def sort_broadcast(x, o, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    rows = tl.load(x + tl.arange(0, A)[:, None] * B + tl.arange(0, B)[None, :])
    t = tl.broadcast_to(tl.expand_dims(rows, 2), (A, B, C))  # stride 0 along the sorted axis
    s = tl.sort(t, descending=True)  # rows of equal values: the compare-and-swap selects still run
    tl.store(o + tl.arange(0, A * B * C), tl.reshape(s, (A * B * C,)))


def test_sort_of_a_broadcast_tile_whose_hypercube_has_more_dims_than_the_strided_select_takes():
    """tl.sort reshapes its input to log2(numel) dims of 2; of an [8, 8, 8] tile built by a broadcast the
    compare-and-swap's v.select saw 9 strided dims and _tiles.select_strided (8 at most) raised ValueError."""
    a, b, c = 8, 8, 8
    x = np.random.default_rng(0).integers(-50, 50, a * b).astype(np.int32)
    sig = {"x": "*i32", "o": "*i32", "A": "constexpr", "B": "constexpr", "C": "constexpr"}
    prog = compile_kernel(sort_broadcast, sig, {"A": a, "B": b, "C": c})
    (_, out), _ = run(prog, 1, [x, np.zeros(a * b * c, np.int32)])
    np.testing.assert_array_equal(out, np.repeat(x, c))


def vector_machine(max_elements):
    core = dataclasses.replace(MACHINE.core, vector=dataclasses.replace(MACHINE.core.vector, max_elements=max_elements))
    return dataclasses.replace(MACHINE, name=f"mini-vec{max_elements}", core=core)


@triton.jit
def gather_long_lines(x, i, o, M: tl.constexpr, NS: tl.constexpr, NI: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    src = tl.load(x + rm * NS + tl.arange(0, NS)[None, :])
    idx = tl.load(i + rm * NI + tl.arange(0, NI)[None, :])
    tl.store(o + rm * NI + tl.arange(0, NI)[None, :], tl.gather(src, idx, 1))


@pytest.mark.parametrize("m, ns, ni, itype", [(2, 64, 32, "i32"), (1, 16, 64, "i16"), (1, 128, 64, "i64")])
def test_gather_along_lines_longer_than_the_vector_unit(m, ns, ni, itype):
    """tl.gather whose source or index line along the axis is longer than the vector unit (16 elements here, 8192 on
    plate1: a gather over a 16384-element row) was refused ("cannot be split"); the index line now goes in pieces
    and a long source line is gathered from piece by piece."""
    machine = vector_machine(16)
    rng = np.random.default_rng(ns + ni)
    x = rng.uniform(-1, 1, (m, ns)).astype(np.float32)
    idx = rng.integers(0, ns, (m, ni)).astype(NUMPY[itype])
    sig = {"x": "*fp32", "i": f"*{itype}", "o": "*fp32", "M": "constexpr", "NS": "constexpr", "NI": "constexpr"}
    prog = compile_kernel(gather_long_lines, sig, {"M": m, "NS": ns, "NI": ni}, machine=machine)
    (_, _, out), _ = run(prog, 1, [x, idx, np.zeros((m, ni), np.float32)], machine=machine)
    np.testing.assert_array_equal(out, np.take_along_axis(x, idx.astype(np.int64), 1))


@triton.jit
def histogram_many_bins(x, o, N: tl.constexpr, BINS: tl.constexpr):
    v = tl.load(x + tl.arange(0, N))
    tl.store(o + tl.arange(0, BINS), tl.histogram(v, BINS, mask=(v % 3) != 0))


@pytest.mark.parametrize("n, bins, vtype", [(8, 64, "i32"), (64, 32, "i16"), (32, 128, "i64")])
def test_histogram_of_more_bins_than_the_vector_unit(n, bins, vtype):
    """tl.histogram of more bins than the vector unit covers (16 here, 8192 on plate1) made a v.hist the ISA refused
    ("covers at most 16: split it"); the bins now go in pieces, values outside every piece (negative, past the
    last bin, masked off) counting nowhere."""
    machine = vector_machine(16)
    rng = np.random.default_rng(n + bins)
    x = rng.integers(-4, bins + 4, n).astype(NUMPY[vtype])
    sig = {"x": f"*{vtype}", "o": "*i32", "N": "constexpr", "BINS": "constexpr"}
    prog = compile_kernel(histogram_many_bins, sig, {"N": n, "BINS": bins}, machine=machine)
    (_, out), _ = run(prog, 1, [x, np.zeros(bins, np.int32)], machine=machine)
    v = x.astype(np.int64)
    keep = (v >= 0) & (v < bins) & (np.fmod(v, 3) != 0)
    np.testing.assert_array_equal(out, np.bincount(v[keep], minlength=bins))


@triton.jit
def fp64_libm(x, y, z, o, N: tl.constexpr):
    r = tl.arange(0, N)
    a, b, c = tl.load(x + r), tl.load(y + r), tl.load(z + r)
    tl.store(o + r, libdevice.rhypot(a, b))
    tl.store(o + N + r, libdevice.rnorm3d(a, b, c))
    tl.store(o + 2 * N + r, libdevice.rcbrt(a))
    tl.store(o + 3 * N + r, libdevice.lgamma(a))
    tl.store(o + 4 * N + r, libdevice.cyl_bessel_i0(a))
    tl.store(o + 5 * N + r, libdevice.cyl_bessel_i1(a))


def test_fp64_rhypot_rnorm3d_rcbrt_lgamma_bessel_i_within_cudas_bounds():
    """libdevice.rhypot in fp64 (CUDA: at most 1 ulp; rnorm3d 2) was 1 / norm, rounded twice: 1.7 ulp at
    rhypot(2.5, 100), up to 2.5 ulp on random triples; now a double-double sum of squares and a Newton step.
    rcbrt (CUDA: 1 ulp) was 1 / cbrt: 1.32 ulp at 3.611960753068763e-05; now with a Newton step. lgamma
    (CUDA: 4 ulp outside (-11.0001, -2.2637)) was 11 ulp near its minimum (1.459), 8 at -1.66 (reflection),
    7 at 4.07 (Python's math.lgamma); now a double-double series head and recurrences. cyl_bessel_i0/i1
    (CUDA: 6 ulp) were 12.1 ulp at 26.80 and 10.3 at 22.83 (the power series' terms rounded in turn); now the
    series in double-double (|x| <= 30; the asymptotic expansion beyond is not checked here)."""
    n = 64
    g = np.random.default_rng(28)
    x, y, z = (g.standard_normal(n) * 10.0 ** g.integers(-3, 4, n) for _ in range(3))
    x[0], y[0], x[1] = 2.5, 100.0, 3.611960753068763e-05
    x[2:6] = [1.4592904913016116, -1.662558875880641, 4.067563799736419, 1.4550749639944431]
    x[6:8] = [26.804725717836305, 22.828785649733632]
    sig = {"x": "*fp64", "y": "*fp64", "z": "*fp64", "o": "*fp64", "N": "constexpr"}
    prog = compile_kernel(fp64_libm, sig, {"N": n})
    (*_, out), _ = run(prog, 1, [x, y, z, np.zeros(6 * n)])
    mpmath.mp.dps = 50
    for k, args in enumerate(((x, y), (x, y, z), (x,), (x,), (x,), (x,))):
        for i in range(n):
            exact = 1 / mpmath.sqrt(sum(mpmath.mpf(float(a[i])) ** 2 for a in args))
            if k == 2:
                exact = mpmath.sign(x[i]) / mpmath.cbrt(abs(mpmath.mpf(float(x[i]))))
            if k == 3:
                if -11.0001 < x[i] < -2.2637:  # no bound there
                    continue
                exact = mpmath.log(abs(mpmath.gamma(mpmath.mpf(float(x[i])))))
            if k >= 4:
                if abs(x[i]) > 30:
                    continue
                exact = mpmath.besseli(k - 4, mpmath.mpf(float(x[i])))
            got = out[k * n + i]
            ulps = {3: 4, 4: 6, 5: 6}.get(k, 1)
            assert abs(mpmath.mpf(float(got)) - exact) <= ulps * np.spacing(abs(got)), (k, i, got, exact)
