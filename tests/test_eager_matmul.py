"""Eager mm, bmm, addmm, baddbmm, addmv, dot and _int_mm (hence matmul, linear, mv, einsum) as plate kernels
(eager_ops/matmul.py): against float64 CPU references within the accumulation's rounding; the exact bits
of the kernel's definition (float32 running sum rounded once per K step of exact products; float64 steps
summed by a fixed pairwise tree; integers wrapping), the same for any tile; layouts, broadcasting,
alpha/beta, empty dims, out= and in-place forms; torch's errors; and no host op."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import triton_plate_backend.torch_device  # noqa: F401 - registers the plate device
from triton_plate_backend.eager_ops import matmul
from triton_plate_backend.torch_device.accumulation import pairwise_sum
from triton_plate_backend.torch_device.host_op_counter import host_op_scope

F = torch.nn.functional
HALF = (torch.float16, torch.bfloat16)
FLOATS = (*HALF, torch.float32, torch.float64)
INTS = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)


def on_plate(fn, *inputs):
    """fn over plate copies of the inputs, its result back on the host; asserts that nothing ran there."""
    with host_op_scope() as ops:
        result = fn(*[x.to("plate") if isinstance(x, torch.Tensor) else x for x in inputs]).cpu()
    assert not ops, ops
    return result


def data(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max, shape, generator=g, dtype=torch.int64).to(dtype)


def close_to(got: torch.Tensor, exact: torch.Tensor, magnitude: torch.Tensor, k: int):
    """got within float32 accumulation's error bound of the float64 `exact` (k products a term, of sum
    `magnitude` of their absolute values), plus one rounding to got's dtype: what CUDA's kernels guarantee."""
    assert got.dtype in FLOATS
    unit = {torch.float64: 2.0**-53}.get(got.dtype, 2.0**-24)
    eps = torch.finfo(got.dtype).eps
    bound = (k + 2) * unit * magnitude.abs() + eps * exact.abs() + 4 * torch.finfo(got.dtype).tiny
    bad = (got.double() - exact).abs() > bound.clamp_min(eps * 2**-10)
    assert not bool(bad.any()), (got[bad][:5], exact[bad][:5])


# ---- every dtype against float64 -------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    "name", ["mm", "mm_t", "bmm", "addmm", "baddbmm", "linear", "matmul_broadcast", "mv", "dot", "einsum"]
)
def test_floats_against_float64(name, dtype):
    fn, shapes = CASES[name]
    inputs = [data(s, dtype, seed=i) for i, s in enumerate(shapes)]
    got = on_plate(fn, *inputs)
    exact = fn(*[x.double() for x in inputs])
    assert got.dtype == dtype and got.shape == exact.shape
    close_to(got, exact, fn(*[x.double().abs() for x in inputs]), max(s[-1] for s in shapes))


CASES = {
    "mm": (torch.mm, ((33, 300), (300, 17))),
    "mm_t": (lambda a, b: a.t() @ b[:, ::2], ((300, 33), (300, 34))),  # transposed and strided operands
    "bmm": (torch.bmm, ((3, 20, 130), (3, 130, 9))),
    "addmm": (lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=-2.0), ((17,), (33, 129), (129, 17))),
    "baddbmm": (lambda c, a, b: torch.baddbmm(c, a, b, beta=3.0), ((1, 20, 9), (4, 20, 70), (4, 70, 9))),
    "linear": (lambda x, w, bias: F.linear(x, w, bias), ((2, 5, 64), (24, 64), (24,))),
    "matmul_broadcast": (torch.matmul, ((2, 1, 6, 40), (3, 40, 5))),
    "mv": (torch.mv, ((30, 200),  (200,))),
    "dot": (torch.dot, ((500,), (500,))),
    "einsum": (lambda a, b: torch.einsum("bik,bkj->bij", a, b), ((2, 9, 33), (2, 33, 7))),
}  # fmt: skip


def test_matmul_family_counts_no_host_op_and_is_device_work():
    a, b = data((8, 64), torch.float32), data((64, 8), torch.float32, 1)
    with host_op_scope() as ops:
        x = torch.nn.Linear(64, 8).plate()(a.plate() @ b.plate() @ b.t().plate())
        x.sum().backward()  # the gradients: mm of transposed operands
    assert not ops, ops


# ---- the exact definition: bits that depend on the K step only ----------------------------------------------
def steps(dtype):
    return matmul.K_STEP[matmul.compute_type(dtype)]


def reference_dot(a: torch.Tensor, b: torch.Tensor, out_dtype) -> torch.Tensor:
    """The float32 definition in numpy: acc = fl32(acc + S_j) over K steps j, S_j the step's products
    summed exactly (the test data keep them exact in float64), then one rounding to the result type."""
    a64, b64 = a.double().numpy(), b.double().numpy()
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    step = steps(a.dtype)
    for k in range(0, a.shape[1], step):
        acc = (acc.astype(np.float64) + a64[:, k : k + step] @ b64[k : k + step]).astype(np.float32)
    return torch.from_numpy(acc).to(out_dtype)


def reference_tree(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The float64 definition: per K step, the products (zero-padded to the step) summed by the pairwise
    tree (element i with i + n/2), added to the running sum."""
    step = steps(a.dtype)
    k = a.shape[1]
    pad = -k % step
    a, b = F.pad(a, (0, pad)), F.pad(b, (0, 0, 0, pad))
    acc = torch.zeros(a.shape[0], b.shape[1], dtype=torch.float64)
    for s in range(0, k + pad, step):
        acc = acc + pairwise_sum(a[:, s : s + step, None] * b[None, s : s + step, :], 1)
    return acc


def spread(shape, dtype, mantissa: int, seed: int) -> torch.Tensor:
    """Values m * 2**e, |m| < 2**mantissa, e in [-16, -6]: exact in `dtype`, and a step's products sum
    exactly in float64 (they are multiples of 2**-32 below 2**(2 * mantissa - 12)), while a float32
    running sum over many steps rounds."""
    g = torch.Generator().manual_seed(seed)
    m = torch.randint(-(2**mantissa), 2**mantissa, shape, generator=g).double()
    e = torch.randint(-16, -5, shape, generator=g).double()
    return (m * 2**e).to(dtype)


BLOCKS = [(16, 16), (64, 32), (256, 128)]


@pytest.mark.parametrize("dtype, mantissa", [(torch.float16, 10), (torch.bfloat16, 7), (torch.float32, 12)])
def test_float32_accumulation_bits_are_the_definition_for_any_tile(dtype, mantissa):
    a, b = spread((70, 700), dtype, mantissa, 1), spread((700, 45), dtype, mantissa, 2)
    want = reference_dot(a, b, dtype)
    assert not torch.equal(want, (a.double() @ b.double()).to(dtype)) or dtype != torch.float32  # it rounds
    for block in BLOCKS:
        out = torch.empty(1, 70, 45, dtype=dtype, device="plate")
        matmul.launch_matmul(out, a.plate()[None], b.plate()[None], block=block)
        assert torch.equal(out.cpu()[0], want), block
    assert torch.equal(on_plate(torch.mm, a, b), want)
    assert torch.equal(on_plate(lambda x, y: x @ y.t(), a, b.t().contiguous()), want)  # b of a Linear's layout
    assert torch.equal(on_plate(lambda x, y: x.t() @ y, a.t().contiguous(), b), want)


def test_float64_bits_are_the_fixed_tree_for_any_tile():
    a, b = data((37, 61), torch.float64, 1), data((61, 29), torch.float64, 2)
    want = reference_tree(a, b)
    for block in BLOCKS[:2]:
        out = torch.empty(1, 37, 29, dtype=torch.float64, device="plate")
        matmul.launch_matmul(out, a.plate()[None], b.plate()[None], block=block)
        assert torch.equal(out.cpu()[0], want), block
    assert torch.equal(on_plate(torch.mm, a, b), want)


@pytest.mark.parametrize("dtype", HALF)
def test_half_results_round_once_from_float32(dtype):
    """fp16/bf16 accumulate in float32 and round once: a long sum the half type could not hold."""
    ones = torch.ones(1, 8192, dtype=dtype)
    assert on_plate(torch.mm, ones, ones.t()).item() == 8192  # an fp16 accumulator stops at 2048
    a, b = data((16, 4096), dtype, 3), data((4096, 8), dtype, 4)
    close_to(on_plate(torch.mm, a, b), a.double() @ b.double(), a.double().abs() @ b.double().abs(), 4096)


def test_tf32_only_when_torch_allows_it():
    a = torch.full((4, 64), 1 + 2**-20)
    b = torch.ones(64, 4)
    assert torch.equal(on_plate(torch.mm, a, b), torch.full((4, 4), 64 * (1 + 2**-20)))
    flag = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = True
        assert torch.equal(on_plate(torch.mm, a, b), torch.full((4, 4), 64.0))  # operands rounded to TF32
    finally:
        torch.backends.cuda.matmul.allow_tf32 = flag


# ---- integers wrap ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", INTS)
def test_integers_wrap_as_the_cpu(dtype):
    a, b = data((19, 77), dtype, 1), data((77, 23), dtype, 2)
    want = torch.mm(a, b)  # the CPU's kernel wraps around
    if dtype != torch.int64:
        assert torch.equal(want, (a.long() @ b.long()).to(dtype))
    assert torch.equal(on_plate(torch.mm, a, b), want)
    c = data((23,), dtype, 3)
    for beta, alpha in ((3, -5), (2.7, 1.5)):  # float scalars of integer tensors truncate, as on the CPU
        want = torch.addmm(c, a, b, beta=beta, alpha=alpha)
        assert torch.equal(on_plate(lambda *t, s=(beta, alpha): torch.addmm(*t, beta=s[0], alpha=s[1]), c, a, b), want)


def test_int_mm():
    a, b = data((32, 64), torch.int8, 1), data((64, 24), torch.int8, 2)
    got = on_plate(torch._int_mm, a, b)
    assert got.dtype == torch.int32 and torch.equal(got, a.int() @ b.int())


# ---- arguments: alpha/beta, broadcasting, empty dims, out=, in place -----------------------------------------
def test_beta_zero_ignores_nan_and_alpha_scales():
    a, b = data((5, 40), torch.float32), data((40, 6), torch.float32, 1)
    c = torch.full((5, 6), float("nan"))
    got = on_plate(lambda *t: torch.addmm(*t, beta=0, alpha=0.5), c, a, b)
    torch.testing.assert_close(got, 0.5 * (a @ b))
    assert not got.isnan().any()
    got = on_plate(lambda *t: torch.baddbmm(*t, beta=0), c[None], a[None], b[None])
    assert not got.isnan().any()


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.int32])
def test_empty_dims(dtype):
    c = data((4, 3), dtype)
    empty_a, empty_b = torch.zeros(4, 0, dtype=dtype), torch.zeros(0, 3, dtype=dtype)
    assert torch.equal(on_plate(torch.mm, empty_a, empty_b), torch.zeros(4, 3, dtype=dtype))
    assert torch.equal(on_plate(lambda *t: torch.addmm(*t, beta=2), c, empty_a, empty_b), 2 * c)
    assert on_plate(torch.mm, torch.zeros(0, 5, dtype=dtype), torch.zeros(5, 3, dtype=dtype)).shape == (0, 3)
    assert on_plate(torch.bmm, torch.zeros(0, 2, 5, dtype=dtype), torch.zeros(0, 5, 3, dtype=dtype)).shape == (0, 2, 3)


def test_out_and_in_place_forms():
    a, b, c = data((6, 50), torch.float32), data((50, 7), torch.float32, 1), data((6, 7), torch.float32, 2)
    with host_op_scope() as ops:
        out = torch.empty(0, device="plate")
        assert torch.mm(a.plate(), b.plate(), out=out) is out
        strided = torch.empty(7, 6, device="plate").t()  # a transposed out= keeps its strides
        torch.addmm(c.plate(), a.plate(), b.plate(), out=strided)
        inplace = c.plate()
        assert inplace.addmm_(a.plate(), b.plate(), alpha=2) is inplace
        square = a[:, :6].clone().plate()
        torch.mm(square, square, out=square)  # out= an operand: computed aside, then copied
        batched = c[None].plate()
        batched.baddbmm_(a[None].plate(), b[None].plate())
        vec = c[:, 0].clone().plate()
        vec.addmv_(a.plate(), b[:, 0].plate())
    assert not ops, ops
    torch.testing.assert_close(out.cpu(), a @ b)
    torch.testing.assert_close(strided.cpu(), torch.addmm(c, a, b))
    assert strided.stride() == (1, 6)
    torch.testing.assert_close(inplace.cpu(), torch.addmm(c, a, b, alpha=2))
    torch.testing.assert_close(square.cpu(), a[:, :6] @ a[:, :6])
    torch.testing.assert_close(batched.cpu()[0], torch.addmm(c, a, b))
    torch.testing.assert_close(vec.cpu(), torch.addmv(c[:, 0], a, b[:, 0]))


def test_cpu_scalar_input_of_addmm():
    a, b = data((3, 8), torch.float32), data((8, 4), torch.float32, 1)
    got = torch.addmm(torch.tensor(1.5), a.plate(), b.plate()).cpu()
    torch.testing.assert_close(got, torch.addmm(torch.tensor(1.5), a, b))


# ---- torch's errors -----------------------------------------------------------------------------------------
ERRORS = {
    "shapes": (torch.mm, ((2, 3), (4, 5)), (torch.float32, torch.float32)),
    "dtypes": (torch.mm, ((2, 3), (3, 5)), (torch.float32, torch.float64)),
    "float and int": (torch.mm, ((2, 3), (3, 5)), (torch.float32, torch.int64)),
    "batch": (torch.bmm, ((2, 2, 3), (3, 3, 5)), (torch.float32, torch.float32)),
    "rank": (torch.mm, ((2, 3, 1), (3, 5)), (torch.float32, torch.float32)),
    "addmm input": (
        lambda a, b: torch.addmm(torch.zeros(7, device=a.device), a, b), ((2, 3), (3, 5)), (torch.float32,) * 2
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_are_torchs(name):
    fn, shapes, dtypes = ERRORS[name]
    inputs = [torch.ones(s, dtype=d) for s, d in zip(shapes, dtypes)]
    with pytest.raises(RuntimeError) as on_cpu:
        fn(*inputs)
    with pytest.raises(RuntimeError) as on_plate_:
        fn(*[x.plate() for x in inputs])
    assert str(on_plate_.value) == str(on_cpu.value)


def test_every_matmul_row_has_a_form():
    from triton_plate_backend.eager_ops import table

    rows = {name: row for name, row in table.overloads().items() if row.family == "matmul"}
    assert {"mm.default", "mm.out", "addmm_.default", "baddbmm.out", "_int_mm.default"} <= set(rows)
    assert all(row.fn in matmul.FORMS for row in rows.values())
