"""plate's eager special functions (eager_ops/special.py): each op on plate tensors against torch's CPU
result on edge values (NaN, +-inf, +-0, subnormals, large arguments, negative and large degrees n, integer
inputs), run as plate kernels with the host-op counter at zero.

Tolerances: the kernels follow ATen's CPU code step for step in the same precision, so they differ from it
only where the host's libm (acos, cos, exp, log, pow, lgamma) or its compiler's fused multiply-adds round
differently: a few ulp, compounded by each function's own condition number. RTOL below is 16 ulp of the
type; ATOL lets results that are zero up to rounding (a polynomial at a root) differ by that rounding. The
polynomials' recurrences use fused multiply-adds where the host's compiler contracts ATen's `a * q - p`
(matching it bit for bit); their closed forms for |x| < 1 (cos(n acos x)) carry a one-ulp difference of the
host's acos n-fold, so their tolerances grow with the degree: RTOL * (|n| + 1) * max(1, |value|).
log_ndtr, erfcx, lgamma and erfinv use libdevice's erfcx, erfc, lgamma and erfinv where ATen has its own
(LOOSE, 64 ulp): each is accurate to a couple of ulp, but log() of a value near 1 magnifies them (log_ndtr),
as lgamma's near its roots 1 and 2."""

from __future__ import annotations

import pytest
import torch

from triton_plate_backend import eager_ops
from triton_plate_backend.eager_ops import special, special_family, table

eager_ops.register()

RTOL = {torch.float32: 16 * 2.0**-23, torch.float64: 16 * 2.0**-52}
ATOL = {torch.float32: 1e-6, torch.float64: 1e-14}
LOOSE = {torch.float32: 64 * 2.0**-23, torch.float64: 64 * 2.0**-52}
DTYPES = (torch.float32, torch.float64)
INF, NAN = float("inf"), float("nan")


def edge_values(dtype: torch.dtype) -> torch.Tensor:
    """NaN, +-inf, +-0, the smallest subnormal and normal, values around each function's branch points
    (0.5, 1, 2, 2.09, 8, 10), negative integers and non-integers, large arguments."""
    tiny = torch.finfo(dtype).tiny
    values = [NAN, INF, -INF, 0.0, -0.0, tiny * 2**-10, tiny, -tiny, 1e-7, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0]
    values += [2.09, 3.7, 7.99, 8.0, 8.01, 9.5, 10.0, 12.25, 30.0, 85.0, 110.0, 1e5, 1e18]
    values += [-1.0, -2.0, -0.3, -0.75, -1.5, -2.08, -2.5, -3.7, -8.5, -12.25, -30.0]
    return torch.tensor(values, dtype=torch.float64).to(dtype)


def same(plate_result: torch.Tensor, cpu_result: torch.Tensor, loose: bool = False):
    assert plate_result.device.type == "plate"
    assert plate_result.dtype == cpu_result.dtype and plate_result.shape == cpu_result.shape
    dtype = cpu_result.dtype
    rtol = (LOOSE if loose else RTOL)[dtype]
    torch.testing.assert_close(plate_result.cpu(), cpu_result, rtol=rtol, atol=ATOL[dtype], equal_nan=True)


def plate(*args):
    return [a.to("plate") if isinstance(a, torch.Tensor) else a for a in args]


# ---- the table -----------------------------------------------------------------------------------------
def test_every_special_row_names_an_element_function_and_registers():
    rows = {name: row for name, row in table.overloads().items() if row.family == "special"}
    assert len(rows) >= 40
    for name, row in rows.items():
        packet, _, overload = name.partition(".")
        op = getattr(getattr(torch.ops.aten, packet), overload)
        assert torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "PrivateUse1"), name
        assert row.fn in special.FUNCTIONS, name


# ---- functions of x -----------------------------------------------------------------------------------
UNARY = {
    "digamma": torch.digamma,
    "i0": torch.i0,
    "i0e": torch.special.i0e,
    "i1": torch.special.i1,
    "i1e": torch.special.i1e,
    "modified_bessel_i0": torch.special.modified_bessel_i0,
    "modified_bessel_i1": torch.special.modified_bessel_i1,
    "modified_bessel_k0": torch.special.modified_bessel_k0,
    "modified_bessel_k1": torch.special.modified_bessel_k1,
    "scaled_modified_bessel_k0": torch.special.scaled_modified_bessel_k0,
    "scaled_modified_bessel_k1": torch.special.scaled_modified_bessel_k1,
    "spherical_bessel_j0": torch.special.spherical_bessel_j0,
    "airy_ai": torch.special.airy_ai,
    "ndtri": torch.special.ndtri,
    "log_ndtr": torch.special.log_ndtr,
    "bessel_j0": torch.special.bessel_j0,
    "bessel_j1": torch.special.bessel_j1,
    "bessel_y0": torch.special.bessel_y0,
    "bessel_y1": torch.special.bessel_y1,
    "erfcx": torch.special.erfcx,
    "lgamma": torch.lgamma,
    "erfinv": torch.erfinv,
    "entr": torch.special.entr,
    "sinc": torch.sinc,
}
# libdevice's versions where ATen has its own algorithm (see the module's docstring)
LIBDEVICE = {"log_ndtr", "erfcx", "lgamma", "erfinv"}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", UNARY)
def test_functions_of_x_match_the_cpu(name, dtype, no_host_ops):
    fn = UNARY[name]
    x = edge_values(dtype)
    if name in ("ndtri", "erfinv"):  # a probability (or its erf): (0, 1) and its edges
        x = torch.cat([x, -x[10:13]])
        x = torch.cat([x, torch.tensor([1e-30, 1e-10, 0.01, 0.1, 0.2, 0.5, 0.9, 0.99, 1 - 1e-7], dtype=dtype)])
    same(fn(x.to("plate")), fn(x), loose=name in LIBDEVICE)


def test_functions_of_x_promote_integers_and_keep_strides(no_host_ops):
    n = torch.arange(-6, 18).reshape(4, 6)
    same(torch.digamma(n.to("plate")), torch.digamma(n))  # int64 -> float32
    x = torch.linspace(-20, 20, 48, dtype=torch.float64).reshape(6, 8)
    same(torch.special.i0e(x.to("plate").t()), torch.special.i0e(x.t()))
    out = torch.empty(6, 8, dtype=torch.float64, device="plate")
    torch.special.airy_ai(x.to("plate"), out=out)
    same(out, torch.special.airy_ai(x))
    y = x.to("plate")
    y.digamma_()
    same(y, x.digamma())


def test_a_half_input_of_a_float_only_function_raises_as_on_the_cpu():
    x = torch.ones(3, dtype=torch.float16)
    with pytest.raises(RuntimeError, match="not implemented for 'Half'"):
        torch.special.ndtri(x.to("plate"))


def test_digamma_of_half_runs_on_plate_in_float(no_host_ops):
    x = torch.tensor([-2.5, -0.5, 0.0, 0.25, 1.0, 3.0, 100.0], dtype=torch.float16)
    torch.testing.assert_close(torch.digamma(x.to("plate")).cpu(), torch.digamma(x), equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_xlogy_and_xlog1py_match_the_cpu(dtype, no_host_ops):
    x = edge_values(dtype)
    y = x.flip(0)
    for fn in (torch.xlogy, torch.special.xlog1py):
        same(fn(*plate(x, y)), fn(x, y))
        same(fn(*plate(torch.zeros_like(x), y)), fn(torch.zeros_like(x), y))  # 0 * log(y) is 0 unless y is NaN
        same(fn(*plate(x, 2.5)), fn(x, 2.5))
    z = torch.arange(-3, 5)
    same(torch.xlogy(*plate(z, z)), torch.xlogy(z, z))  # int64 -> float32


# ---- polygamma, zeta ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_polygamma_matches_the_cpu(dtype, no_host_ops):
    x = edge_values(dtype)
    for n in (0, 1, 2, 3, 6):
        same(torch.special.polygamma(n, x.to("plate")), torch.special.polygamma(n, x))
    y = x.to("plate")
    y.polygamma_(2)
    same(y, x.polygamma(2))


@pytest.mark.parametrize("dtype", DTYPES)
def test_zeta_matches_the_cpu(dtype, no_host_ops):
    x = edge_values(dtype)
    s = torch.tensor([1.0, 1.5, 2.0, 3.0, 4.5, 7.0, 20.0, 0.5, NAN, INF], dtype=dtype)
    q = torch.tensor([1.0, 0.5, 2.0, 10.0, 1e3, -2.0, -2.5, -0.5, 3.0, NAN, INF, 0.0, 1e-3], dtype=dtype)
    grid_s, grid_q = torch.meshgrid(s, q, indexing="ij")
    same(torch.special.zeta(*plate(grid_s, grid_q)), torch.special.zeta(grid_s, grid_q))
    same(torch.special.zeta(*plate(x.abs() + 1, torch.tensor(2.5, dtype=dtype))), torch.special.zeta(x.abs() + 1, 2.5))
    same(torch.special.zeta(3.0, x.to("plate")), torch.special.zeta(3.0, x))  # a Scalar s, q far below 0


def test_zeta_far_below_zero_runs_its_long_sum_on_the_host():
    """A shift q below -MAX_LIMIT would take as many simulated steps: the host runs it (counted)."""
    q = torch.tensor([-(special_family.MAX_LIMIT + 0.5)], dtype=torch.float64)
    torch.plate.reset_host_ops()
    same(
        torch.special.zeta(torch.tensor(2.0, dtype=torch.float64).to("plate"), q.to("plate")),
        torch.special.zeta(2.0, q),
    )
    assert sum(torch.plate.host_ops().values()) == 1


@pytest.mark.parametrize("dtype", DTYPES)
def test_igamma_and_igammac_match_the_cpu(dtype, no_host_ops):
    """Every branch of calc_igamma/calc_igammac: the boundary values, the power series, the continued
    fraction, the complement series, and the asymptotic series for a ~ x (20 < a < 200, and a > 200)."""
    a = torch.tensor(
        [NAN, INF, 0.0, -1.0, 1e-3, 0.1, 0.5, 1.0, 2.5, 7.0, 25.0, 60.0, 150.0, 250.0, 1e3, 1e4], dtype=dtype
    )
    x = torch.tensor(
        [NAN, INF, 0.0, -1.0, 1e-3, 0.3, 0.7, 1.05, 2.0, 6.0, 24.0, 70.0, 140.0, 255.0, 1.01e3, 9.9e3], dtype=dtype
    )
    grid_a, grid_x = torch.meshgrid(a, x, indexing="ij")
    for fn in (torch.igamma, torch.igammac):
        same(fn(*plate(grid_a, grid_x)), fn(grid_a, grid_x))


@pytest.mark.parametrize("dtype", DTYPES)
def test_igamma_and_igammac_of_mixed_blocks_match_the_cpu(dtype, no_host_ops):
    """OpInfo's values (a, x uniform in [-9, 9]: every branch and the domain's NaNs within one block) and lanes
    whose loops run past the steps every lane takes (the continued fraction near x = 1.2 for small a, the power
    series of a = 1e4 and 1e5 at x / a = 0.9 and 0.97: hundreds of steps) beside lanes that take none."""
    g = torch.Generator().manual_seed(7)
    a = torch.rand(2048, generator=g, dtype=torch.float64) * 18 - 9
    x = torch.rand(2048, generator=g, dtype=torch.float64) * 18 - 9
    a[::97], x[::97] = 1e4, 9e3
    a[5::97], x[5::97] = 1e5, 9.7e4
    a[7::97], x[7::97] = 0.43, 1.138
    a, x = a.to(dtype), x.to(dtype)
    for fn in (torch.igamma, torch.igammac):
        got = fn(*plate(a, x))
        assert got.device.type == "plate"
        torch.testing.assert_close(got.cpu(), fn(a, x), rtol=1e-5 if dtype == torch.float32 else 1e-12, atol=1e-6,
                                   equal_nan=True)  # fmt: skip


# ---- polynomials of (x, n) ---------------------------------------------------------------------------------
POLYNOMIALS = {name: getattr(torch.special, name) for name in table.POLYNOMIALS}
# ATen's recurrences that declare `T r;` return it uninitialized for NaN x and n >= 2 (their loop stops
# before its first step on a NaN q): plate returns NaN there, so those lanes are compared apart
UNINITIALIZED_AT_NAN = set(POLYNOMIALS) - {"chebyshev_polynomial_t", "hermite_polynomial_h", "hermite_polynomial_he"}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials_match_the_cpu(name, dtype, no_host_ops):
    fn = POLYNOMIALS[name]
    x = torch.cat([edge_values(dtype), torch.tensor([0.999, -0.999, 0.25, -0.6, 1.0001], dtype=dtype)])
    x = torch.cat([x, x[9:15] / 2 + 0.5])  # the shifted polynomials' branch points: x = 0, 1/2, 1
    degrees = torch.tensor([-3, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 30, 129, 600], dtype=dtype)
    xs, ns = torch.meshgrid(x, degrees, indexing="ij")
    expected = fn(xs, ns)
    got = fn(*plate(xs, ns)).cpu()
    if name in UNINITIALIZED_AT_NAN:
        undefined = xs.isnan() & (ns >= 2)
        assert got[undefined].isnan().all()
        got[undefined] = expected[undefined] = 0
    # the closed forms for |x| < 1 (cos(n acos x), ...) carry a one-ulp difference of the host's acos n-fold
    scale = ns.abs() + 1
    tolerance = RTOL[dtype] * scale * expected.abs().clamp_min(1) + ATOL[dtype]
    both_nan = got.isnan() & expected.isnan()
    bad = ~both_nan & ~((got - expected).abs() <= tolerance) & ~(got == expected)
    assert not bad.any(), (xs[bad], ns[bad], got[bad], expected[bad])
    # a Python degree (the n_scalar overload), a Python x (x_scalar), an int64 degree tensor
    same(fn(x[1:].to("plate"), 5), fn(x[1:], 5))  # x[0] is NaN (undefined above)
    n = torch.arange(-1, 12)
    same(fn(0.375, n.to("plate")), fn(0.375, n))
    # degrees that are NaN, inf or beyond int64 count as negative (x86's conversion): 0
    odd = torch.tensor([NAN, INF, -INF, 1e30], dtype=dtype)
    same(fn(torch.full_like(odd, 0.5).to("plate"), odd.to("plate")), fn(torch.full_like(odd, 0.5), odd))


def test_polynomials_of_integer_tensors_compute_in_the_default_float(no_host_ops):
    x = torch.arange(-3, 4)
    n = torch.arange(0, 7)
    same(torch.special.hermite_polynomial_h(*plate(x, n)), torch.special.hermite_polynomial_h(x, n))
    same(torch.special.legendre_polynomial_p(*plate(x, n)), torch.special.legendre_polynomial_p(x, n))
