"""plate's eager kernels (triton_plate_backend/eager_ops): each op of the table against the CPU on edge
cases (strided, broadcast, 0-dim, empty, promoted, in-place, out=), with the host-op counter at zero;
Philox random numbers reproducible from a seed and from a saved generator state; what the table does
not cover still runs on the host, counted."""

from __future__ import annotations

import concurrent.futures
import math
import re
import subprocess
import sys

import pytest
import torch

from triton_plate_backend import eager_ops
from triton_plate_backend.eager_ops import kernels, launch, ops, registry, table

eager_ops.register()  # what the torch.backends entry point does at `import torch`


def same(plate_result, cpu_result):
    assert plate_result.device.type == "plate"
    assert plate_result.dtype == cpu_result.dtype
    assert plate_result.shape == cpu_result.shape
    torch.testing.assert_close(plate_result.cpu(), cpu_result, equal_nan=True)


# ---- the table -----------------------------------------------------------------------------------------
def test_every_row_names_a_real_overload_family_and_function():
    for name, row in table.overloads().items():
        packet, _, overload = name.partition(".")
        op = getattr(getattr(torch.ops.aten, packet), overload)  # raises for a misspelt overload
        key = "AutogradPrivateUse1" if row.family in ops.AUTOGRAD_FAMILIES else "PrivateUse1"
        # a composite's row (conj_physical) gives its out= / in-place forms; the composite reaches plate's kernels
        registers = key != "PrivateUse1" or not registry.composite_autograd(name)
        assert torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), key) == registers, name
        assert row.family in eager_ops.FAMILIES, name
        if row.family == "elementwise":
            assert row.fn in kernels.FUNCTIONS, name
            complex_fns = (None, "real", *table.PART_COMPARISONS.values())
            assert row.complex_fn in complex_fns or row.complex_fn in kernels.FUNCTIONS, name


# ---- elementwise ---------------------------------------------------------------------------------------
A = torch.randn(5, 6)
B = torch.randn(6)
LAYOUTS = {
    "contiguous": (A, A * 2),
    "transposed": (A.t(), A.t() + 1),
    "broadcast": (A, B),
    "sliced": (A[::2, 1::2], A[::2, ::2]),
    "0-dim": (torch.tensor(1.5), torch.tensor(-2.0)),
    "0-dim with tensor": (A, torch.tensor(3.0)),
    "empty": (torch.empty(0, 6), B),
    "5-dim": (torch.randn(2, 3, 1, 4, 5).permute(4, 2, 0, 3, 1), torch.randn(5, 1, 2, 1, 3)),
}
BINARY = {
    "add": lambda a, b: a + b,
    "add alpha": lambda a, b: torch.add(a, b, alpha=-3),
    "sub": lambda a, b: torch.sub(a, b, alpha=2),
    "mul": lambda a, b: a * b,
    "where": lambda a, b: torch.where(a > 0, a, b),
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("fn", BINARY)
def test_binary_ops_match_the_cpu(fn, layout, no_host_ops):
    a, b = LAYOUTS[layout]
    pa, pb = a.to("plate"), b.to("plate")
    cond = a > 0
    if fn == "where":
        same(torch.where(cond.to("plate"), pa, pb), torch.where(cond, a, b))
    else:
        same(BINARY[fn](pa, pb), BINARY[fn](a, b))


@pytest.mark.parametrize(
    "a, b",
    [
        (torch.arange(6, dtype=torch.int32), torch.arange(6, dtype=torch.int64)),  # int32 + int64 -> int64
        (torch.arange(6, dtype=torch.int64), torch.randn(6)),  # int + float -> float
        (torch.randn(6).half(), torch.randn(6).bfloat16()),  # -> float32
        (torch.randn(6).half(), 2.5),  # a Python scalar keeps half
        (torch.tensor([True, False, True]), torch.tensor([True, True, False])),  # bool add is or, mul is and
        (torch.randn(6, dtype=torch.float64), torch.randn(6)),
        (torch.arange(6, dtype=torch.int8), 100),  # wraps as int8
    ],
)
def test_promotion_is_torchs(a, b, no_host_ops):
    pb = b.to("plate") if isinstance(b, torch.Tensor) else b
    same(a.to("plate") + pb, a + b)
    same(a.to("plate") * pb, a * b)


def test_a_python_scalar_is_rounded_to_the_common_type_first(no_host_ops):
    # bf16 == 3.14 compares with 3.14 in bf16 (3.140625), as TensorIterator casts the scalar
    x = torch.tensor([3.14, 1.0, 3.140625, 0.0], dtype=torch.bfloat16)
    same(x.to("plate") == 3.14, x == 3.14)
    same(x.to("plate") != 3.14, x != 3.14)
    same(x.to("plate") == torch.tensor(3.14, dtype=torch.float64), x == torch.tensor(3.14, dtype=torch.float64))
    same(torch.where(x.to("plate") > 0.5, x.to("plate"), 3.14), torch.where(x > 0.5, x, 3.14))


def test_an_int_scalar_out_of_the_common_types_range_wraps_as_on_cuda(no_host_ops):
    # int8 == 0x80 compares with -128 (torch.where(dst == 0x80, 0, dst) in Triton's test_conversions)
    x = torch.tensor([-128, 0, 127], dtype=torch.int8)
    same(x.to("plate") == 0x80, x == 0x80)
    same(torch.where(x.to("plate") == 0x80, 0, x.to("plate")), torch.where(x == 0x80, 0, x))
    u = torch.tensor([255, 1], dtype=torch.uint8)
    same(u.to("plate") == -1, u == -1)


@pytest.mark.parametrize(
    "dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8, torch.int64, torch.bool]
)
def test_add_and_sub_with_alpha_one_launch_two_operands_with_the_cpus_bits(dtype, monkeypatch, no_host_ops):
    # alpha 1 (x += y's default, or given as 1 / 1.0 / True) is not made a third operand: plus / minus over two
    # operands, exactly the CPU's x + 1 * y; another alpha keeps add / sub's three
    g = torch.Generator().manual_seed(3)
    a = (torch.randn(40, generator=g, dtype=torch.float64) * 300).to(dtype)
    if dtype.is_floating_point:
        a[:5] = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0, 0.0]).to(dtype)
    b = a.flip(0)
    launched = []
    real = launch.launch
    monkeypatch.setattr(launch, "launch", lambda *a, **k: launched.append((k["FN"], k["ARITY"])) or real(*a, **k))
    pa, pb = a.to("plate"), b.to("plate")
    one = True if dtype == torch.bool else 1.0 if dtype.is_floating_point else 1
    calls = {
        "add": (lambda x, y: x + y, "plus", 2),
        "add alpha 1": (lambda x, y: torch.add(x, y, alpha=one), "plus", 2),
        "add_ of 0-dim": (lambda x, y: x[3].clone().add_(y[5]), "plus", 2),
        "add alpha 2": (lambda x, y: torch.add(x, y, alpha=2), "add", 3),
    }
    if dtype != torch.bool:  # torch refuses sub of bools
        calls["sub"] = (lambda x, y: x - y, "minus", 2)
        calls["rsub"] = (lambda x, y: torch.rsub(x, y), "minus", 2)
        calls["sub_ alpha 3"] = (lambda x, y: x.clone().sub_(y, alpha=3), "sub", 3)
    for name, (fn, function, arity) in calls.items():
        launched.clear()
        got, cpu = fn(pa, pb), fn(a, b)
        assert launched == [(kernels.FUNCTIONS[function], arity)], name
        if arity == 3:  # x - 3 * y: within rounding of the CPU's (which may fuse the multiply-add)
            same(got, cpu)
            continue
        assert (got.dtype, got.shape) == (cpu.dtype, cpu.shape), name
        torch.testing.assert_close(got.cpu(), cpu, rtol=0, atol=0, equal_nan=True, msg=name)


def test_a_contiguous_operand_is_a_strided_load_not_a_gather(no_host_ops):
    """The kernel of a layout that coalesces to one dim skips the index divisions (DIMS=1): its loads
    and stores are strided DMA, not gathers of computed offsets (the simulator runs those per element)."""
    import re

    a = torch.randn(3001)
    same(a.to("plate") * 3.0 - a.to("plate"), a * 3.0 - a)
    compiled = [k for cache in kernels.elementwise.device_caches.values() for k in cache[0].values()]
    flat = [k for k in compiled if k.src.constants.get((k.src.fn.arg_names.index("DIMS"),)) == 1]
    assert flat, "no kernel compiled for one dim"
    for k in flat:
        assert not re.search(r"\bdma\.(gather|scatter)\b", k.asm["pasm"]), k.asm["pasm"]


def test_a_launch_of_one_program_reads_no_program_id(no_host_ops):
    """A launch of one program runs the kernel's ONE_PROGRAM form: no program_id read, so no persistent loop
    around its one trip; the same values as the form a launch of more programs runs, random numbers included
    (the same Philox counters)."""
    n = launch.BLOCK
    a, b = torch.randn(n + 1), torch.randn(n + 1)
    pa, pb = a.to("plate"), b.to("plate")
    same(pa[:n] * pb[:n] - pa[:n], a[:n] * b[:n] - a[:n])  # one program
    same(pa * pb - pa, a * b - a)  # two
    compiled = [k for cache in kernels.elementwise.device_caches.values() for k in cache[0].values()]
    one = [k for k in compiled if k.src.constants.get((k.src.fn.arg_names.index("ONE_PROGRAM"),))]
    assert one and len(one) < len(compiled)
    for k in one:
        assert not re.search(r"\bs\.pid\b", k.asm["pasm"]) and "plate_rows" not in k.asm["pasm"], k.asm["pasm"]
    torch.manual_seed(5)
    short = torch.randn(n, device="plate")
    torch.manual_seed(5)
    long = torch.randn(n + 1, device="plate")
    assert torch.equal(short.cpu(), long[:n].cpu())


def test_a_large_one_dim_op_runs_in_wide_programs(monkeypatch, no_host_ops):
    """From WIDE_FROM elements an elementwise op over one coalesced dim takes WIDE_BLOCK elements per program
    (fewer persistent-loop trips to simulate): same values, the tail masked, every float function's tiles
    within a core's SRAM; a layout of more dims keeps BLOCK."""
    from triton_plate_backend.eager_ops import launch

    monkeypatch.setattr(launch, "WIDE_FROM", launch.WIDE_BLOCK)
    n = 2 * launch.WIDE_BLOCK + 77
    x = torch.rand(n) * 4 + 0.1
    y = torch.rand(n) * 2 - 1
    px, py = x.to("plate"), y.to("plate")
    for name in [*table.FLOAT_FUNCTIONS, "abs", "relu"]:
        same(getattr(torch, name)(px), getattr(torch, name)(x))
    same(torch.where(px > 1, py, px), torch.where(x > 1, y, x))
    same(px * py - px, x * y - x)
    same(px.to(torch.float64), x.to(torch.float64))
    i = torch.arange(n, dtype=torch.int64) * 0x9E3779B97F4A7C15
    same(-i.to("plate"), -i)
    b = torch.arange(-128, 128, dtype=torch.int8).repeat(n // 256 + 1)[:n]
    pb = b.to("plate")
    same(torch.where(pb == 0x80, 0, pb), torch.where(b == 0x80, 0, b))  # test_conversions' fnuz fix-up
    grid = torch.rand(n // 7, 7)
    same(grid.to("plate").t() * 2, grid.t() * 2)  # two dims: BLOCK
    arg = kernels.elementwise.arg_names.index("BLOCK")
    blocks = {
        k.src.constants.get((arg,)) for cache in kernels.elementwise.device_caches.values() for k in cache[0].values()
    }
    assert {launch.BLOCK, launch.WIDE_BLOCK} <= blocks


LAUNCH = ops.launch.launch
ISCLOSE_SPECIALS = [0.0, -0.0, 1.0, float("nan"), float("inf"), float("-inf"), 1e-5, 1.00001, 65504.0, 3.0e38]


def isclose_operands(dtype):
    """Random pairs near each other, the specials against each other, integers near and far (to the ends of
    the type's range: an integer difference is taken in the default float type, not the integer type)."""
    g = torch.Generator().manual_seed(0)
    if dtype.is_floating_point:
        base = torch.randn(500, dtype=torch.float64, generator=g)
        near = base * (1 + torch.randn(500, dtype=torch.float64, generator=g) * 1e-4)
        near = near + torch.randn(500, dtype=torch.float64, generator=g) * 1e-5
        s = torch.tensor(ISCLOSE_SPECIALS, dtype=torch.float64)
        a, b = torch.cat([base, s.repeat_interleave(len(s))]), torch.cat([near, s.repeat(len(s))])
        return a.to(dtype), b.to(dtype)
    if dtype == torch.bool:
        return torch.rand(500, generator=g) < 0.5, torch.rand(500, generator=g) < 0.5
    info = torch.iinfo(dtype)
    a = torch.randint(info.min, info.max, (500,), dtype=torch.int64, generator=g).to(dtype)
    far = torch.randint(info.min, info.max, (500,), dtype=torch.int64, generator=g).to(dtype)
    b = torch.where(torch.rand(500, generator=g) < 0.5, a, far)
    b[:100] = a[:100] + 1
    return a, b


@pytest.mark.parametrize(
    "dtype",
    [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.bool, torch.uint8, torch.int8, torch.int64],
)
def test_isclose_is_one_kernel_with_the_decompositions_bits(dtype, no_host_ops, monkeypatch):
    """torch.isclose (a CompositeImplicitAutograd decomposition of eight or more ops, on CUDA too) is one plate
    kernel: the CPU's result bit for bit, each error term rounded as torch's ops round it (half types: each
    step to the half type), for NaN/inf/signed zeros, zero and nonzero tolerances, equal_nan both ways."""
    launched = []
    monkeypatch.setattr(ops.launch, "launch", lambda name, *a, **k: launched.append(name) or LAUNCH(name, *a, **k))
    a, b = isclose_operands(dtype)
    pa, pb = a.to("plate"), b.to("plate")
    for rtol, atol, equal_nan in [(1e-4, 1e-5, True), (1.3e-6, 1e-5, False), (0, 0, True), (0.5, 3, False)]:
        want = torch.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
        assert torch.equal(torch.isclose(pa, pb, rtol=rtol, atol=atol, equal_nan=equal_nan).cpu(), want)
    assert launched == ["isclose"] * 4
    grid = torch.randn(6, 7)
    same(
        torch.isclose(grid.to("plate").t(), grid[:1].to("plate").t(), atol=0.5),
        torch.isclose(grid.t(), grid[:1].t(), atol=0.5),
    )


def test_isclose_traced_decomposes_as_before():
    """Traced (torch.compile), isclose still decomposes at the Autograd key, above functionalization: the graph
    stays functional (a PrivateUse1 kernel let a tracer decompose it below, into in-place steps) and the
    compiled result matches the eager one."""
    torch._dynamo.reset()
    a = torch.randn(300)
    b = a * 2 + torch.randn(300) * 1e-3

    def fn(a, b):
        return torch.isclose(a * 2, b, rtol=1e-3, atol=1e-4) & (a > 0)

    got = torch.compile(fn)(a.to("plate"), b.to("plate"))
    assert torch.equal(got.cpu(), fn(a, b))
    torch._dynamo.reset()


def test_a_pointwise_op_on_a_permuted_dense_layout_runs_over_one_dim(monkeypatch, no_host_ops):
    """Torch lays an op's result on a transposed view out as its input: the launch orders its dims by the
    output's strides (TensorIterator's order) and coalesces them into one, the same values as the CPU's;
    random numbers keep the logical order (their counter is the element's index)."""
    from triton_plate_backend.eager_ops import launch

    seen = []
    original = launch.launch_kernel

    def record(kernel, shape, tensors, strides, *a, **kw):
        seen.append(launch.coalesce(shape, strides)[0])
        return original(kernel, shape, tensors, strides, *a, **kw)

    monkeypatch.setattr(launch, "launch_kernel", record)
    x = torch.randn(6, 5, 7).permute(2, 0, 1)
    y = torch.randn(6, 5, 7).permute(2, 0, 1)
    px = torch.empty_strided(x.shape, x.stride(), device="plate").copy_(x.to("plate"))
    py = torch.empty_strided(y.shape, y.stride(), device="plate").copy_(y.to("plate"))
    seen.clear()
    same(px * 2 + py, x * 2 + y)
    same(torch.isclose(px, py + 1e-7, atol=1e-6), torch.isclose(x, y + 1e-7, atol=1e-6))
    assert seen and all(s == [1, 1, 1, 7 * 6 * 5] for s in seen), seen


def test_unary_isnan_and_neg(no_host_ops):
    x = torch.tensor([[1.0, float("nan")], [-float("inf"), 0.0]])
    same(torch.isnan(x.to("plate").t()), torch.isnan(x.t()))
    same(-x.to("plate"), -x)
    same(-torch.arange(5).to("plate"), -torch.arange(5))


@pytest.mark.parametrize("name", [*table.FLOAT_FUNCTIONS, "abs", "relu"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.float16])
def test_unary_functions(name, dtype, no_host_ops):
    x = (torch.rand(4, 5) * 4 + 0.1).to(dtype)
    fn = getattr(torch, name)
    same(fn(x.to("plate").t()), fn(x.t()))  # an int input gives float32, as torch's does


def test_in_place_and_out_variants(no_host_ops):
    a = torch.randn(4, 5)
    x = a.to("plate")
    x.t().add_(torch.ones(5, 1).to("plate"))  # in place through a transposed view, broadcast operand
    same(x, a + 1)
    x.mul_(2).sub_(torch.tensor(1.0))
    same(x, (a + 1) * 2 - 1)
    out = torch.empty(0, device="plate")  # out= is resized as torch resizes it
    torch.add(x, x, alpha=0.5, out=out)
    same(out, torch.add((a + 1) * 2 - 1, (a + 1) * 2 - 1, alpha=0.5))
    mask = torch.empty(4, 5, dtype=torch.bool, device="plate")
    torch.gt(x, 0, out=mask)
    same(mask, (a + 1) * 2 - 1 > 0)


def test_a_call_torch_refuses_raises_torchs_error():
    ints = torch.arange(6).to("plate")
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        ints.add_(0.5)  # the CPU's error text (the meta kernel words it differently)
    with pytest.raises(RuntimeError, match="must match the size"):
        torch.ones(3, device="plate") + torch.ones(4, device="plate")


@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int8, torch.int32, torch.int64])
def test_bitwise_ops_match_the_cpu(dtype, no_host_ops):
    a = (torch.arange(12) % 3).to(dtype).reshape(3, 4)
    b = (torch.arange(12) % 5).to(dtype).reshape(3, 4)
    pa, pb = a.to("plate"), b.to("plate")
    for got, want in [(pa & pb, a & b), (pa | pb, a | b), (pa ^ pb, a ^ b), (pa & pb[0], a & b[0])]:
        assert got.dtype == want.dtype and torch.equal(got.cpu(), want)
    pa &= pb
    assert torch.equal(pa.cpu(), a & b)


def test_bitwise_ops_on_floats_raise_torchs_error():
    x = torch.ones(3, device="plate")
    with pytest.raises(RuntimeError, match="not implemented for 'Float'"):
        x & x


def test_an_output_overlapping_its_input_is_left_to_the_host():
    x = torch.arange(6.0).to("plate")
    torch.plate.reset_host_ops()
    x[1:].add_(x[:-1])  # elements read after they were written: the host's CPU kernel decides
    assert torch.plate.host_ops() == {"aten.add_": 1}


def test_an_operand_wholly_below_the_output_in_its_storage_stays_on_plate(no_host_ops):
    x, p = torch.arange(6.0), torch.arange(6.0).to("plate")
    p[2] += p[1]  # one element onto another of the same storage (triton_kernels' make_slice_sizes)
    x[2] += x[1]
    p[3:].add_(p[:3])
    x[3:].add_(x[:3])
    same(p, x)


def test_autograd_through_plate_kernels():
    x = torch.randn(3, 4).to("plate").requires_grad_()
    y = torch.randn(4).to("plate").requires_grad_()
    torch.plate.reset_host_ops()
    (x * y + x).backward(torch.ones(3, 4).to("plate"))
    same(x.grad, y.detach().cpu().expand(3, 4) + 1)
    same(y.grad, x.detach().cpu().sum(0))
    assert torch.plate.host_ops() == {}  # y's broadcast gradient: sum, a plate kernel (reductions.py)


def test_an_uncovered_dtype_runs_on_the_host_counted():
    x = torch.ones(4, dtype=torch.uint16).to("plate")
    torch.plate.reset_host_ops()
    x.fill_(2)
    assert torch.equal(x.cpu(), torch.full((4,), 2, dtype=torch.uint16))
    assert torch.plate.host_ops() == {"aten.fill_": 1}


# ---- fill_ / zero_ -------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.bool, torch.int8])
def test_fill_and_zero(dtype, no_host_ops):
    x = torch.ones(4, 6, dtype=dtype).to("plate")
    x[:, ::2].fill_(3)  # a strided target; only its elements change
    expected = torch.ones(4, 6, dtype=dtype)
    expected[:, ::2] = 3
    same(x, expected)
    x.t()[1].zero_()
    expected.t()[1] = 0
    same(x, expected)
    x.fill_(torch.tensor(2))
    same(x, torch.full((4, 6), 2, dtype=dtype))
    same(torch.zeros(0, 3, dtype=dtype, device="plate"), torch.zeros(0, 3, dtype=dtype))


def test_fill_complex(no_host_ops):
    x = torch.zeros(3, dtype=torch.complex64, device="plate")
    x.fill_(1 - 2j)
    same(x, torch.full((3,), 1 - 2j, dtype=torch.complex64))


# ---- arange --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("start", "end", "step", "dtype"),
    [
        (0, 10, 1, None),  # int64
        (2, -7, -3, None),
        (0, 1, 0.1, torch.float32),  # computed in double and rounded once, as the CPU kernel
        (0, 1, 0.1, torch.float64),
        (-3.5, 4, 0.25, torch.float16),
        (0, 5, 1, torch.bfloat16),
        (1, 9, 2, torch.int32),
        (0.5, 3, 1, None),  # float bounds: the default float type
    ],
)
def test_arange(start, end, step, dtype, no_host_ops):
    """Every arange overload reaches arange.start_out (the composites call it): a plate kernel, not the host's."""
    got = torch.arange(start, end, step, dtype=dtype, device="plate")
    want = torch.arange(start, end, step, dtype=dtype)
    same(got, want)
    assert torch.equal(got.cpu(), want)


def test_arange_out_and_a_tensor_bound(no_host_ops):
    out = torch.empty(0, device="plate")
    torch.arange(0, 6, out=out)
    same(out, torch.arange(0, 6, dtype=torch.float32))
    end = torch.tensor(5).to("plate")  # a 0-dim bound (a graph break's data-dependent length): its value
    same(torch.arange(0, end, device="plate"), torch.arange(5))


# ---- complex: views and arithmetic ---------------------------------------------------------------------
def test_view_as_real_and_complex_are_views(no_host_ops):
    c = torch.randn(4, 3, dtype=torch.complex64)
    pc = c.to("plate")
    r = torch.view_as_real(pc)
    assert r.untyped_storage().data_ptr() == pc.untyped_storage().data_ptr()
    same(r, torch.view_as_real(c))
    back = torch.view_as_complex(r)
    assert back.data_ptr() == pc.data_ptr()
    same(back, c)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_arithmetic(dtype, no_host_ops):
    a = torch.randn(3, 4, dtype=dtype)
    b = torch.randn(4, dtype=dtype)
    pa, pb = a.to("plate"), b.to("plate")
    same(pa + pb, a + b)
    same(pa.t() - 2 * pb[:3], a.t() - 2 * b[:3])
    same(pa * pb, a * b)
    same(pa.t() * pa.t(), a.t() * a.t())
    same(-pa, -a)
    same(pa * 3, a * 3)
    same(pa + torch.ones(4).to("plate"), a + torch.ones(4))  # real + complex promotes
    same(torch.where(pa.real > 0, pa, pb), torch.where(a.real.contiguous() > 0, a, b))


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_division_is_c10s_formula(dtype, no_host_ops):
    # numpy's: the ratio of the divisor's smaller part to its larger; a zero divisor's parts a / |c|, b / |d|;
    # the last bits may differ where the compilers contract a multiply-add differently
    g = torch.Generator().manual_seed(8)
    a, b = torch.randn(200, dtype=dtype, generator=g), torch.randn(200, dtype=dtype, generator=g)
    b[:4] = torch.tensor([0, 1e-30, 3e30, complex(float("nan"), 1)], dtype=dtype)
    a[4] = 0
    same(a.to("plate") / b.to("plate"), a / b)
    same(a.to("plate") / b.real.to("plate"), a / b.real)  # complex / real promotes
    same(a.to("plate").t() / 2.5, a / 2.5)
    quotient = a.to("plate")
    quotient /= b.to("plate")
    same(quotient, a / b)
    special = torch.view_as_real((a.to("plate") / b.to("plate")).cpu()[:4])  # inf, huge, tiny and NaN parts exactly
    torch.testing.assert_close(special, torch.view_as_real(a / b)[:4], rtol=0, atol=0, equal_nan=True)


def test_complex32_arithmetic_computes_in_float32(no_host_ops):
    a = torch.tensor([1 + 1j, -1 + 1j, -2 + 2j, 3 - 3j, 0, 1j, 1, -1], dtype=torch.complex32)
    got, expected = (a.to("plate") + a.to("plate")) * 2, (a + a) * 2
    assert got.dtype == torch.complex32
    torch.testing.assert_close(torch.view_as_real(got.cpu()), torch.view_as_real(expected), rtol=0, atol=0)


def test_complex32_abs_is_the_cpus_half_magnitude(no_host_ops):
    nan, inf = float("nan"), float("inf")
    a = (torch.randn(64, dtype=torch.complex64) * torch.logspace(-6, 4, 64)).to(torch.complex32)
    a[:3] = torch.tensor([complex(inf, nan), complex(nan, 1), 65504 + 65504j])  # inf wins over NaN; overflow
    got = a.plate().abs()
    assert got.dtype == torch.float16
    torch.testing.assert_close(got.cpu(), a.abs(), rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.complex32, torch.complex64, torch.complex128])
def test_complex_eq_ne_compare_both_parts_as_the_cpus(dtype, no_host_ops):
    nan, inf = float("nan"), float("inf")
    a = torch.tensor([1 + 2j, complex(nan, 0), 3 + 1j, complex(1, nan), complex(inf, -inf), 0j, -0.0 + 0j, 5j])
    b = torch.tensor([1 + 2j, complex(nan, 0), 3 + 2j, complex(1, nan), complex(inf, -inf), 0j, 0j, 4j])
    a, b = a.to(dtype), b.to(dtype)
    square = torch.randn(3, 4, dtype=torch.complex64).to(dtype)
    square[1] = square[0]  # equal rows of the transposed (noncontiguous) view against row 0 broadcast
    for cmp in (torch.eq, torch.ne):
        same(cmp(a.plate(), b.plate()), cmp(a, b))
        same(cmp(a.plate().conj(), b.plate()), cmp(a.conj(), b))  # a conjugate view: its parts resolved
        same(cmp(square.plate().t(), square[0].plate()[:3]), cmp(square.t(), square[0][:3]))
        for scalar in (1 + 2j, 5j, 3.0, nan):  # the Scalar form, complex and real numbers
            same(cmp(a.plate(), scalar), cmp(a, scalar))
        same(cmp(a.real.plate(), 3 + 0j), cmp(a.real, 3 + 0j))  # a real tensor against a complex number
        same(cmp(a.plate(), torch.tensor(1 + 2j, dtype=dtype)), cmp(a, torch.tensor(1 + 2j, dtype=dtype)))


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64])
def test_integer_pow_is_exact_and_wraps_as_the_cpus(dtype, no_host_ops):
    top = torch.iinfo(dtype).max
    x = torch.randint(-100 if dtype.is_signed else 0, 100, (16, 16)).to(dtype)
    y = torch.randint(0, top, (16, 16), dtype=torch.int64).to(dtype)
    same(torch.pow(x.to("plate"), 0x57), torch.pow(x, 0x57))
    same(torch.pow(x.to("plate"), y.to("plate")), torch.pow(x, y))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int64])
def test_div_in_every_rounding_mode_is_the_cpus(dtype, no_host_ops):
    """true, trunc and floor division, by a tensor and by a Python scalar: the CPU's bits (fp16/bf16 trunc and floor
    round every step to the half type, as ATen's scalar code does); 0 and inf quotients included for floats."""
    torch.manual_seed(0)
    if dtype.is_floating_point:
        a, b = (torch.randn(512) * 10).to(dtype), (torch.randn(512) * 3).to(dtype)
        a[:4], b[:4] = torch.tensor([0.0, -0.0, 5.0, -7.0]), torch.tensor([3.0, -2.0, 0.0, 0.0])
    else:
        a, b = torch.randint(-100, 100, (512,), dtype=dtype), torch.randint(1, 9, (512,), dtype=dtype)
        b[::2] *= -1

    def exact(got, want):
        same(got, want)
        torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0, equal_nan=True)

    for mode in (None, "trunc", "floor"):
        exact(torch.div(a.to("plate"), b.to("plate"), rounding_mode=mode), torch.div(a, b, rounding_mode=mode))
        exact(torch.div(a.to("plate"), -3, rounding_mode=mode), torch.div(a, -3, rounding_mode=mode))
    out = a.to("plate").clone()
    out.div_(b.to("plate"), rounding_mode="floor")
    exact(out, torch.div(a, b, rounding_mode="floor"))


def test_integer_division_by_zero_runs_on_the_host_and_raises():
    torch.plate.reset_host_ops()
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        torch.div(torch.arange(4).to("plate"), torch.tensor([1, 0, 2, 3]).to("plate"), rounding_mode="trunc")
    assert torch.plate.host_ops() == {"aten.div": 1}


def test_pow_of_negative_exponents_and_floats(no_host_ops):
    base, exponent = torch.tensor([-3, -1, 0, 1, 2, -1]), torch.tensor([-2, -3, 3, -1, 10, -4])
    same(torch.pow(base.to("plate"), exponent.to("plate")), torch.pow(base, exponent))
    f = torch.rand(10) * 3
    same(torch.pow(f.to("plate"), 2.5), torch.pow(f, 2.5))
    same(torch.pow(f.to("plate"), f.to("plate")), torch.pow(f, f))


def test_pow_of_a_scalar_base(no_host_ops):
    # pow.Scalar: a Python number raised to a tensor (RoPE's inv_freq = base ** (arange(0, d, 2) / d))
    e = torch.arange(0, 64, 2).float() / 64
    same(10000.0 ** e.to("plate"), 10000.0**e)
    same(torch.pow(2, torch.arange(12).to("plate")), torch.pow(2, torch.arange(12)))  # int ** int stays int64
    same(torch.pow(2.5, torch.arange(6).to("plate")), torch.pow(2.5, torch.arange(6)))  # float ** int: float32
    h = torch.linspace(-2, 2, 9, dtype=torch.bfloat16)
    same(3 ** h.to("plate"), 3**h)
    odd = torch.tensor([0.5, 2.0, float("nan"), float("inf"), float("-inf")])
    same((-2.0) ** odd.to("plate"), (-2.0) ** odd)


def test_pow_in_place_and_out_variants(no_host_ops):
    # x.pow_(2) is linalg.vector_norm's backward for p != 2; out= of each form, resized from empty, or in float64
    f, e = torch.rand(4, 5) + 0.5, torch.randn(4, 5)
    pf, pe = f.to("plate"), e.to("plate")
    same(pf.clone().pow_(2), f.clone().pow_(2))
    same(pf.clone().pow_(pe), f.clone().pow_(e))
    same(torch.arange(6).to("plate").pow_(3), torch.arange(6).pow_(3))
    same(torch.pow(pf, 3, out=torch.empty(0, device="plate")), torch.pow(f, 3))
    same(torch.pow(2.0, pe, out=torch.empty(4, 5, device="plate")), torch.pow(2.0, e))
    same(torch.pow(pf, pe, out=torch.empty(4, 5, dtype=torch.float64, device="plate")), torch.pow(f, e).double())
    x = torch.randn(4, 5, device="plate", requires_grad=True)
    torch.linalg.vector_norm(x, 3).backward()
    xc = x.detach().cpu().requires_grad_()
    torch.linalg.vector_norm(xc, 3).backward()
    torch.testing.assert_close(x.grad.cpu(), xc.grad)


def test_pow_into_an_integer_output_raises_torchs_error_from_the_host():
    torch.plate.reset_host_ops()
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        torch.arange(3, device="plate").pow_(1.5)
    assert torch.plate.host_ops() == {"aten.pow_": 1}
    torch.plate.reset_host_ops()


def test_complex_exp_log_log1p_isnan(no_host_ops):
    a = torch.randn(8, 8).to(torch.complex64)
    a[0, 0] = complex(float("nan"), 1.0)
    a[1, 1] = complex(1e-5, -2e-5)  # log1p near 0: its real part through log1p, not log
    a[2, 2], a[3, 3] = complex(-0.99, 0.0), complex(-1.2, 1e-3)  # log1p near -1: through log
    for fn in (torch.exp, torch.log, torch.log1p, torch.isnan):
        same(fn(a.to("plate")), fn(a))


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_abs_is_the_hypot_of_the_parts(dtype, no_host_ops):
    """abs of a complex tensor (a real result): hypot(re, im) as std::abs, so no overflow at 1e30 and inf with NaN
    is inf; of a conjugate view and a strided one too."""
    inf, nan = float("inf"), float("nan")
    re = torch.tensor([3.0, 0.0, -1e30, inf, nan, 1e-30, -0.0, 2.5])
    im = torch.tensor([4.0, -2.0, 1e30, nan, 1.0, 1e-30, 0.0, -1.5])
    z = torch.complex(re, im).to(dtype)
    for t in (z, z.conj(), z.view(8, 1).expand(8, 3).t()):
        same(t.to("plate").abs(), t.abs())


def test_complex_and_polar_build_complex_tensors(no_host_ops):
    a = torch.randn(5, 3).permute(1, 0)
    got, expected = torch.complex(a.to("plate"), a.to("plate") * 2), torch.complex(a, a * 2)
    assert got.stride() == expected.stride()
    same(got, expected)
    dist = torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64)
    angle = torch.tensor([1.5707963267948966, 3.9269908169872414, -1.0], dtype=torch.float64)
    same(torch.polar(dist.to("plate"), angle.to("plate")), torch.polar(dist, angle))


# ---- random numbers ------------------------------------------------------------------------------------
SAMPLERS = {
    "rand": lambda **kw: torch.rand(64, 33, device="plate", **kw),
    "randn": lambda **kw: torch.randn(1000, device="plate", **kw),
    "randint": lambda **kw: torch.randint(-5, 7, (1000,), device="plate", **kw),
    "randint64": lambda **kw: torch.randint(2**63 - 1, (100,), device="plate", **kw),
    "randint full": lambda **kw: torch.randint(-(2**63), 2**63 - 1, (100,), device="plate", **kw),
    "bernoulli": lambda **kw: torch.empty(1000, device="plate").bernoulli_(0.25, **kw),
    "exponential": lambda **kw: torch.empty(1000, device="plate").exponential_(2.0, **kw),
}


@pytest.mark.parametrize("sample", SAMPLERS)
def test_random_numbers_reproduce_from_a_seed_and_a_state(sample, no_host_ops):
    draw = SAMPLERS[sample]
    torch.plate.manual_seed(7)
    first, second = draw().cpu(), draw().cpu()
    assert not torch.equal(first, second)  # the generator moved on
    torch.plate.manual_seed(7)
    assert torch.equal(draw().cpu(), first)
    state = torch.plate.get_rng_state()
    assert torch.equal(draw().cpu(), second)
    torch.plate.set_rng_state(state)
    assert torch.equal(draw().cpu(), second)
    gen = torch.Generator(device="plate").manual_seed(7)
    assert torch.equal(draw(generator=gen).cpu(), first)  # a generator of its own: the same stream


def test_random_numbers_are_distributed_as_asked(no_host_ops):
    torch.plate.manual_seed(0)
    u = torch.empty(20000, device="plate").uniform_(-2, 3).cpu()
    assert u.min() >= -2 and u.max() < 3 and abs(u.mean() - 0.5) < 0.05
    n = torch.empty(20000, dtype=torch.float64, device="plate").normal_(1.0, 2.0).cpu()
    assert abs(n.mean() - 1) < 0.1 and abs(n.std() - 2) < 0.1
    i = torch.randint(-5, 7, (20000,), device="plate").cpu()
    assert set(i.unique().tolist()) == set(range(-5, 7))
    big = torch.randint(2**63 - 1, (1000,), device="plate").cpu()
    assert big.min() >= 0 and big.max() > 2**62  # 63 random bits, not 32
    full = torch.randint(-(2**63), 2**63 - 1, (1000,), device="plate").cpu()
    assert full.min() < -(2**62) and full.max() > 2**62  # the whole int64 range
    b = torch.bernoulli(torch.full((20000,), 0.3, device="plate")).cpu()
    assert set(b.unique().tolist()) <= {0.0, 1.0} and abs(b.mean() - 0.3) < 0.02
    f = torch.empty(1000, dtype=torch.float16, device="plate").random_().cpu()
    assert f.min() >= 0 and f.max() <= 2**11 and torch.equal(f, f.round())
    flags = torch.empty(1000, dtype=torch.bool, device="plate").random_().cpu()
    assert flags.any() and not flags.all()


def test_complex_normal_and_uniform_draw_over_the_real_view(no_host_ops):
    """ATen's normal_/uniform_ of a complex tensor: both parts from the distribution, normal's std divided
    by sqrt(2) (each part's variance half the complex one); randn(complex) is its normal_(0, 1)."""
    torch.plate.manual_seed(0)
    z = torch.randn(20000, dtype=torch.complex64, device="plate").cpu()
    assert z.dtype == torch.complex64
    for part in (z.real, z.imag):
        assert abs(part.mean()) < 0.03 and abs(part.std() - 0.5**0.5) < 0.03
    n = torch.empty(20000, dtype=torch.complex128, device="plate").normal_(1.0, 2.0).cpu()
    assert abs(n.real.mean() - 1) < 0.05 and abs(n.imag.mean() - 1) < 0.05
    assert abs((n - n.mean()).abs().pow(2).mean() - 4) < 0.2  # the complex variance: std**2
    u = torch.empty(5000, dtype=torch.complex64, device="plate").uniform_(2, 3).cpu()
    assert u.real.min() >= 2 and u.imag.max() < 3 and abs(u.imag.mean() - 2.5) < 0.02
    torch.plate.manual_seed(1)
    a = torch.randn(64, dtype=torch.complex64, device="plate").cpu()
    torch.plate.manual_seed(1)
    torch.testing.assert_close(torch.view_as_real(a).flatten(), torch.randn(128, device="plate").cpu() / 2**0.5)


def test_plate_numbers_differ_from_the_cpus():
    torch.manual_seed(3)  # seeds the CPU and plate alike
    on_plate = torch.rand(100, device="plate").cpu()
    torch.manual_seed(3)
    assert not torch.equal(on_plate, torch.rand(100))  # Philox, as CUDA's, not the CPU's Mersenne twister


def test_fork_rng_restores_plate(no_host_ops):
    torch.plate.manual_seed(11)
    with torch.random.fork_rng(device_type="plate"):
        inside = torch.rand(10, device="plate").cpu()
    assert torch.equal(torch.rand(10, device="plate").cpu(), inside)


def test_dropout(no_host_ops):
    x = torch.ones(50, 40).to("plate")
    torch.plate.manual_seed(1)
    out, mask = torch.ops.aten.native_dropout(x, 0.25, True)
    out, mask = out.cpu(), mask.cpu()
    assert mask.dtype == torch.bool and abs(mask.float().mean() - 0.75) < 0.05
    assert torch.equal(out, mask.float() / 0.75)
    torch.plate.manual_seed(1)
    assert torch.equal(torch.ops.aten.native_dropout(x, 0.25, True)[1].cpu(), mask)
    kept, all_kept = torch.ops.aten.native_dropout(x, 0.25, False)
    assert torch.equal(kept.cpu(), x.cpu()) and all_kept.cpu().all()


# ---- registration --------------------------------------------------------------------------------------
def test_import_torch_registers_the_eager_ops_without_importing_triton():
    code = (
        "import sys, torch\n"
        "from triton_plate_backend import eager_ops\n"
        "assert eager_ops.registered(), 'the torch.backends entry point did not register the eager ops'\n"
        "assert 'triton' not in sys.modules, 'registering imported triton'\n"
        "torch.plate.reset_host_ops()\n"
        "x = torch.zeros(3, device='plate') + 1\n"
        "assert torch.plate.host_ops() == {}, torch.plate.host_ops()\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_importing_the_eager_ops_before_torch_registers_them():
    # torch's autoload runs inside the package's `import torch` and needs `register` before the package is done
    code = (
        "from triton_plate_backend import eager_ops\n"
        "import torch\n"
        "assert eager_ops.registered()\n"
        "assert (torch.zeros(3, device='plate') + 1).cpu().tolist() == [1.0, 1.0, 1.0]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_cat(no_host_ops):
    a, b = torch.randn(2, 3), torch.arange(12).reshape(4, 3)
    same(torch.cat([a.to("plate"), b.to("plate")]), torch.cat([a, b]))  # promoted to float
    same(torch.cat([a.to("plate").t(), b.to("plate").t()], 1), torch.cat([a.t(), b.t()], 1))
    same(torch.cat([a.to("plate"), torch.empty(0).to("plate")]), torch.cat([a, torch.empty(0)]))
    e = torch.empty(0, 4, 3)  # all empty: empty storages share the null pointer, and no memory
    same(torch.cat([e.to("plate"), e.to("plate")], -1), torch.cat([e, e], -1))
    same(torch.stack([e.to("plate"), e.to("plate")], -1), torch.stack([e, e], -1))
    out = torch.empty(0, dtype=torch.float64, device="plate")
    torch.cat([a.half().to("plate"), a.to("plate")], -1, out=out)
    same(out, torch.cat([a.half(), a], -1).double())


def test_small_cat_inputs_go_several_to_a_launch_with_the_same_bits(no_host_ops, monkeypatch):
    from triton_plate_backend.sim.device import Device

    launched = []
    real = Device.launch
    monkeypatch.setattr(Device, "launch", lambda self, *a, **k: launched.append(1) or real(self, *a, **k))
    for dtype in (torch.float32, torch.float16, torch.int64, torch.bool, torch.bfloat16):
        rows = [torch.randn(7).to(dtype) for _ in range(8)]
        launched.clear()
        out = torch.stack([r.to("plate") for r in rows])
        assert len(launched) == 1  # the 8 rows in one launch (cat_kernels.PARTS)
        assert torch.equal(out.cpu(), torch.stack(rows))  # bit for bit, NaNs none
    # mixed types (a run per compute type), a transposed input, a 3-dim layout, 11 inputs (two launches), a
    # part over cat_kernels.BLOCK (its own elementwise copy), a legacy empty input
    a, b, c = torch.randn(4, 6), torch.randint(0, 9, (4, 3)), torch.randn(6, 4).t()
    same(torch.cat([a.to("plate"), b.to("plate"), c.t().to("plate").t()], 1), torch.cat([a, b, c], 1))
    xs = [torch.randn(3, 2, 5) for _ in range(11)]
    launched.clear()
    same(torch.cat([x.to("plate") for x in xs], 2), torch.cat(xs, 2))
    assert len(launched) == 2
    big = [torch.randn(300), torch.randn(300), torch.randn(5), torch.randn(0)]
    same(torch.cat([x.to("plate") for x in big]), torch.cat(big))
    e = [torch.randn(0), torch.randn(3, 4), torch.randn(2, 4)]
    same(torch.cat([x.to("plate") for x in e]), torch.cat(e))


# ---- index ops -----------------------------------------------------------------------------------------
X = torch.randn(5, 7)
INDEX = torch.randint(0, 5, (3, 7))
SOURCE = torch.randn(3, 7)
PERMUTED = torch.stack([torch.randperm(5)[:3] for _ in range(7)], 1)  # distinct targets per column


def test_gather_and_index_select(no_host_ops):
    px, pi = X.to("plate"), INDEX.to("plate")
    same(torch.gather(px, 0, pi), torch.gather(X, 0, INDEX))
    same(torch.gather(px.t(), 1, pi.t()), torch.gather(X.t(), 1, INDEX.t()))
    j = torch.tensor([4, 0, 2, 4])
    same(torch.index_select(px, 1, j.to("plate")), torch.index_select(X, 1, j))
    same(torch.index_select(px.t(), 1, j.to("plate")), torch.index_select(X.t(), 1, j))
    same(px[j], X[j])  # a CPU index, as CUDA takes one
    same(px[j.to("plate")][:, 1:], X[j][:, 1:])


@pytest.mark.parametrize("reduce", ["sum", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_family(reduce, include_self, no_host_ops):
    px, pi, ps = X.to("plate"), INDEX.to("plate"), SOURCE.to("plate")
    same(px.scatter(0, PERMUTED.to("plate"), ps), X.scatter(0, PERMUTED, SOURCE))
    same(px.scatter(0, PERMUTED.to("plate"), 2.5), X.scatter(0, PERMUTED, 2.5))
    same(px.scatter_add(0, pi, ps), X.scatter_add(0, INDEX, SOURCE))
    same(
        px.scatter_reduce(0, pi, ps, reduce, include_self=include_self),
        X.scatter_reduce(0, INDEX, SOURCE, reduce, include_self=include_self),
    )
    ints = torch.arange(10)
    where, values = torch.tensor([1, 1, 2]), torch.tensor([5, 6, 7])
    same(ints.to("plate").scatter_add(0, where.to("plate"), values.to("plate")), ints.scatter_add(0, where, values))


def test_index_put(no_host_ops):
    y = X.clone()
    py = y.to("plate")
    rows, values = torch.tensor([1, 3, 3]), torch.randn(3, 7)
    py.index_put_((rows,), values.to("plate"), accumulate=True)
    y.index_put_((rows,), values, accumulate=True)
    same(py, y)
    py[torch.tensor([0, 2])] = 1.0
    y[torch.tensor([0, 2])] = 1.0
    same(py, y)


def test_index_of_5_dims_that_do_not_coalesce_loops_over_the_outermost(no_host_ops):
    cube = torch.randn(2, 3, 2, 3, 2).permute(0, 2, 4, 1, 3)
    same(cube.to("plate")[torch.tensor([1, 0])], cube[torch.tensor([1, 0])])


def test_elementwise_of_more_than_rank_dims_splits_the_launch(no_host_ops):
    # BigBird's block-sparse attention: a sliced, permuted index tensor times a broadcast one, 5 dims that
    # do not merge (more than the kernels' RANK): launches over the inner 4 dims, one per outer index
    base = torch.arange(2 * 16 * 4).reshape(2, 16, 4, 1, 1)
    other = torch.arange(2 * 4 * 14 * 8).reshape(2, 4, 14, 1, 8)
    view = base.to("plate")[:, 1:15].permute(0, 3, 1, 2, 4)
    want = base[:, 1:15].permute(0, 3, 1, 2, 4) * other
    strides = [launch.broadcast_strides(t, want.shape) for t in (want, view, other)]
    assert len(launch.merged_dims(want.shape, strides)[0]) > launch.RANK
    same(view * other.to("plate"), want)
    same(view.float() * other.float().to("plate"), want.float())


def test_in_place_through_a_view_of_more_than_rank_dims(no_host_ops):
    x = torch.randn(2, 3, 4, 5, 6)
    y = torch.randn(3, 5, 2, 1, 6)
    px = x.to("plate")
    view, cpu_view = (t.permute(1, 3, 0, 2, 4)[:, :, :, ::2] for t in (px, x))
    view.add_(y.to("plate"))
    cpu_view.add_(y)
    same(px, x)


def test_cat_of_views_of_more_than_rank_dims_splits_the_launch(no_host_ops):
    bases = [torch.randn(2, 16, 4, 4, 16) for _ in range(3)]
    parts = [b[:, 1:13].permute(0, 3, 1, 2, 4) for b in bases]
    plate_parts = [b.to("plate")[:, 1:13].permute(0, 3, 1, 2, 4) for b in bases]
    for dim in (1, 3, 4):
        same(torch.cat(plate_parts, dim), torch.cat(parts, dim))


def test_a_layout_past_the_split_limit_stays_on_the_host():
    # more than SPLIT_LAUNCHES launches of the inner dims: the host (counted), the same values
    base = torch.randn(9, 2, 9, 2, 2, 2)
    x = base.permute(0, 2, 1, 3, 5, 4)  # 6 dims, none merge: 9 x 9 outer launches
    assert len(launch.merged_dims(x.shape, [list(x.stride())])[0]) == 6
    px = base.to("plate").permute(0, 2, 1, 3, 5, 4)
    torch.plate.reset_host_ops()
    same(px * 2.0, x * 2.0)
    assert torch.plate.host_ops() == {"aten.mul": 1}


def test_complex_elements_are_indexed_through_the_real_view(no_host_ops):
    # the index family takes real elements; a complex tensor's index is its real view's (complex_views.py)
    z = torch.randn(4, 3, dtype=torch.complex64)
    same(z.to("plate")[torch.tensor([1, 0])], z[torch.tensor([1, 0])])


def test_a_kernel_follows_the_device_to_another_machine(plate_mini_module):
    """Run last in this module: the fixture resets device 0 to plate-mini; the kernels compiled for plate1
    above compile again for it rather than launch on the wrong machine."""
    assert plate_mini_module.machine.name == "plate-mini"
    torch.plate.reset_host_ops()
    same(torch.zeros(5, device="plate") + 1, torch.ones(5))
    assert torch.plate.host_ops() == {}


# ---- composite ops -------------------------------------------------------------------------------------
def test_fused_rms_norm_runs_whole_on_plate_and_stays_whole_in_lite_mode():
    """_fused_rms_norm (CUDA: a fused kernel) is registered on plate as its decomposition, so it dispatches
    as on CUDA: forward and backward match the CPU, and Inductor's lite mode keeps the op in its graph."""
    from torch._inductor.utils import run_and_get_code

    x = torch.randn(4, 6)
    w = torch.randn(6)
    xp = x.to("plate").requires_grad_()
    wp = w.to("plate").requires_grad_()
    xc, wc = x.clone().requires_grad_(), w.clone().requires_grad_()
    out = torch.nn.functional.rms_norm(xp, [6], wp, 1e-5)
    ref = torch.nn.functional.rms_norm(xc, [6], wc, 1e-5)
    same(out.detach(), ref.detach())
    out.sum().backward()
    ref.sum().backward()
    same(xp.grad, xc.grad)
    same(wp.grad, wc.grad)

    def f(x, shape):
        z = torch.ops.aten._fused_rms_norm(x + 1, shape, None, None)
        return z[0] + z[1]

    result, (code,) = run_and_get_code(torch.compile(f, mode="lite"), x.to("plate"), [6])
    assert "torch.ops.aten._fused_rms_norm.default(" in code
    same(result, f(x, [6]))


def test_nonzero_static_has_the_layout_of_its_meta_kernel(no_host_ops):
    """CUDA's nonzero_static is column-major, as its meta (fake) kernel says; the CPU kernel's is row-major: plate
    lays nonzero's result out as the meta kernel does."""
    from torch._subclasses import FakeTensorMode

    x = torch.eye(8)
    eager = torch.nonzero_static(x.to("plate"), size=8)
    mode = FakeTensorMode()
    fake_x = mode.from_tensor(x.to("plate"))
    with mode:
        fake = torch.nonzero_static(fake_x, size=8)
    assert eager.stride() == fake.stride() == (1, 8)
    same(eager, torch.nonzero_static(x, size=8))


# ---- gelu and its gradient ----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_and_its_gradient_as_the_cpus(dtype, approximate, no_host_ops):
    x = torch.cat([torch.linspace(-9, 9, 301), torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan")])])
    x, g = x.to(dtype), torch.linspace(-2, 2, x.numel()).to(dtype)
    f = torch.nn.functional.gelu
    # the references in float64, rounded once: the CPU's vectorized fp32/bf16 erf path gives gelu(inf) = nan on
    # some hosts (AVX-512 EPYC) and inf on others; CUDA and plate give inf, as float64 does everywhere
    ref = lambda fn, *ts: fn(*(t.double() for t in ts), approximate=approximate).to(dtype)  # noqa: E731
    same(f(x.plate(), approximate=approximate), ref(f, x))
    grad = torch.ops.aten.gelu_backward(g.plate(), x.plate(), approximate=approximate)
    same(grad, ref(torch.ops.aten.gelu_backward, g, x))
    y = x.plate()[::2].clone()
    torch.ops.aten.gelu_(y, approximate=approximate)
    same(y, ref(f, x[::2]))


# ---- silu and its gradient ----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_silu_and_its_gradient_as_the_cpus(dtype, no_host_ops):
    x = torch.cat([torch.linspace(-90, 90, 301), torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan")])])
    x, g = x.to(dtype), torch.linspace(-2, 2, x.numel()).to(dtype)
    # the references in float64, rounded once (ATen computes fp16/bf16 in float32 and rounds once)
    ref = lambda fn, *ts: fn(*(t.double() for t in ts)).to(dtype)  # noqa: E731
    same(torch.nn.functional.silu(x.plate()), ref(torch.nn.functional.silu, x))
    same(torch.ops.aten.silu_backward(g.plate(), x.plate()), ref(torch.ops.aten.silu_backward, g, x))
    y = x.plate()[::2].clone()
    torch.nn.functional.silu(y, inplace=True)
    same(y, ref(torch.nn.functional.silu, x[::2]))
    # autograd through silu: silu_backward on the device
    xs = x[:301].plate().requires_grad_(True)
    torch.nn.functional.silu(xs).backward(g[:301].plate())
    same(xs.grad, ref(torch.ops.aten.silu_backward, g[:301], x[:301]))


# ---- max / min / amax / amin, equal, masked_fill, bitwise_not, nll_loss ----------------------------------
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.uint8])
def test_max_min_amax_amin_as_the_cpus(dtype, no_host_ops):
    x = (
        torch.linspace(-3, 3, 7 * 1300).reshape(7, 1300)[
            :, torch.randperm(1300, generator=torch.Generator().manual_seed(0))
        ]
        * 40
    ).to(dtype)
    p = x.plate()
    same(p.max(), x.max())
    same(p.min(), x.min())
    same(p.amax(1), x.amax(1))
    same(torch.amin(p, (0,), keepdim=True), torch.amin(x, (0,), keepdim=True))
    same(p[:, ::3].T.amax((0, 1)), x[:, ::3].T.amax((0, 1)))  # a strided view, every dim
    same(p[2, 5].max(), x[2, 5])  # 0-d
    if dtype.is_floating_point:  # a NaN anywhere in the row is the result, as torch's
        x[3, 77] = float("nan")
        same(x.plate().max(), x.max())
        same(x.plate().amin(1), x.amin(1))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
def test_argmax_argmin_and_max_min_along_a_dim_as_the_cpus(dtype, no_host_ops):
    # few distinct values: ties everywhere, each result the first index as torch's
    x = torch.randint(-5, 5, (7, 1300), generator=torch.Generator().manual_seed(0)).to(dtype)
    p = x.plate()
    same(p.argmax(), x.argmax())
    same(p.argmin(1), x.argmin(1))
    same(p.argmax(0, keepdim=True), x.argmax(0, keepdim=True))
    for got, want in ((p.max(1), x.max(1)), (p.min(0, keepdim=True), x.min(0, keepdim=True))):
        same(got.values, want.values)
        same(got.indices, want.indices)
    if dtype.is_floating_point:  # the first NaN is the extreme, for max and min alike
        x[3, 77] = x[3, 900] = float("nan")
        same(x.plate().argmax(1), x.argmax(1))
        same(x.plate().argmin(), x.argmin())


def test_extremes_of_empty_tensors_into_empty_results_stay_on_plate(no_host_ops):
    e = torch.empty(0, 5)
    p = e.plate()
    for fn in (lambda t: t.amax(1), lambda t: t.amin(1, keepdim=True), lambda t: t.argmax(1), lambda t: t.max(1)):
        got, want = fn(p), fn(e)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            assert g.device.type == "plate" and (g.shape, g.dtype) == (w.shape, w.dtype)


@pytest.mark.parametrize(
    "fn",
    [lambda t: t.amax(0), lambda t: t.max(), lambda t: t.argmax(0), lambda t: t.min(0)],
    ids=["amax", "max", "argmax", "min"],
)
def test_an_extreme_over_an_empty_dim_raises_torchs_error_from_the_host(fn):
    with pytest.raises((RuntimeError, IndexError)) as on_cpu:
        fn(torch.empty(0, 5))
    with pytest.raises(type(on_cpu.value), match=re.escape(str(on_cpu.value))):
        fn(torch.empty(0, 5, device="plate"))


def test_equal(no_host_ops):
    a = torch.randn(5, 6)
    p = a.plate()
    assert torch.equal(p, p.clone()) and torch.equal(p.T.contiguous().T, p)
    assert not torch.equal(p, p + 1)
    assert not torch.equal(p, p[:4])  # other shapes
    n = torch.tensor([1.0, float("nan")]).plate()
    assert not torch.equal(n, n.clone())  # NaN equals nothing


def test_ops_that_move_elements_compile_one_kernel_for_every_type_of_a_width(monkeypatch, no_host_ops):
    """fill (zeros, full), flip and the index gather run on integer views of their type's width: the same bits
    (NaN payloads and -0.0 kept), and after an int32 op its float32 twin compiles nothing."""
    import triton.compiler

    compiles = []
    real = triton.compiler.compile
    monkeypatch.setattr(triton.compiler, "compile", lambda src, *a, **k: compiles.append(src) or real(src, *a, **k))
    kernels.elementwise.device_caches.clear()  # so that the int32 ops below reach compile()
    kernels.indexed.device_caches.clear()
    values = torch.tensor([1.5, -0.0, float("nan"), -3.25, float("inf"), 7.0, 2.0**-140])
    index = torch.tensor([6, 0, 2, 2, 1])

    def moves(x, fill_value):
        px = x.to("plate")
        full = torch.full((3, 5), fill_value, dtype=x.dtype)
        return [
            (torch.full((3, 5), fill_value, dtype=x.dtype, device="plate"), full),
            (torch.zeros(9, dtype=x.dtype, device="plate"), torch.zeros(9, dtype=x.dtype)),
            (px.flip(0), x.flip(0)),
            (px[index.to("plate")], x[index]),
            (px.index_select(0, index.to("plate")), x.index_select(0, index)),
        ]

    for got, want in moves(values.view(torch.int32), -7):
        assert torch.equal(got.cpu(), want)
    assert compiles
    compiles.clear()
    for got, want in moves(values, -0.0):
        assert torch.equal(got.cpu().view(torch.int32), want.view(torch.int32))  # the bits: NaN, -0.0
    assert compiles == []
    for dtype, bits in ((torch.float16, torch.int16), (torch.bfloat16, torch.int16), (torch.bool, torch.int8)):
        for got, want in moves(values.to(dtype), 1):
            assert got.dtype == want.dtype and torch.equal(got.cpu().view(bits), want.view(bits))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool])
def test_masked_fill_and_bitwise_not(dtype, no_host_ops):
    x = torch.randn(4, 5)
    mask, xx = x > 0.3, (x * 10).to(dtype)
    same(xx.plate().masked_fill(mask.plate(), 7), xx.masked_fill(mask, 7))
    same(xx.plate().masked_fill(mask.plate(), torch.tensor(1).plate()), xx.masked_fill(mask, torch.tensor(1)))
    y = xx.plate()
    y.masked_fill_(mask.plate()[:1], 0)  # a broadcast mask, in place
    same(y, xx.clone().masked_fill_(mask[:1], 0))
    if not dtype.is_floating_point:
        same(~xx.plate(), ~xx)  # bool: logical not (its kernel operand is int8 0/1)
    # a 0-dim value on the host fills as its .item(), as on CUDA (attention masks' torch.tensor(float("-inf")))
    same(xx.plate().masked_fill(mask.plate(), torch.tensor(3)), xx.masked_fill(mask, torch.tensor(3)))
    z = xx.plate()
    z.masked_fill_(mask.plate(), torch.tensor(True))
    same(z, xx.clone().masked_fill_(mask, torch.tensor(True)))


def test_masked_fill_value_the_type_cannot_hold_raises_torchs_error():
    # c10's checked conversion: a finite number past the type's range is an error, inf is not
    h = torch.randn(4, 8, dtype=torch.float16)
    same(h.plate().masked_fill(h.plate() > 0, float("-inf")), h.masked_fill(h > 0, float("-inf")))
    for value in (1e5, torch.tensor(1e5)):
        with pytest.raises(RuntimeError, match="cannot be converted to type c10::Half without overflow"):
            h.plate().masked_fill(h.plate() > 0, value)
    i = torch.arange(6, dtype=torch.int8)
    with pytest.raises(RuntimeError, match="without overflow"):
        i.plate().masked_fill(i.plate() > 2, 300)


def test_fill_with_a_number_the_type_cannot_hold_raises_torchs_error():
    h = torch.zeros(3, dtype=torch.float16)
    with pytest.raises(RuntimeError, match="cannot be converted to type c10::Half without overflow"):
        h.plate().fill_(1e5)
    same(h.plate().fill_(torch.tensor(1e5)), h.clone().fill_(torch.tensor(1e5)))  # a tensor value: inf, as the CPU
    same(h.plate().fill_(float("inf")), h.clone().fill_(float("inf")))


@pytest.mark.parametrize(
    "kw", [{}, {"reduction": "sum"}, {"reduction": "none"}, {"weight": True}, {"label_smoothing": 0.1}]
)
def test_cross_entropy_and_its_gradient_as_the_cpus(kw, no_host_ops):
    # log_softmax, then nll_loss_forward/backward (torch's decomposition over plate kernels), ignore_index -100
    x, t = torch.randn(37, 11, generator=torch.Generator().manual_seed(0)), torch.arange(37) % 11
    t[3] = -100
    if kw.get("weight"):
        kw = {"weight": torch.linspace(0.1, 2, 11)}
    xp, xc = x.plate().requires_grad_(True), x.clone().requires_grad_(True)
    kwp = {k: v.plate() if isinstance(v, torch.Tensor) else v for k, v in kw.items()}
    loss = torch.nn.functional.cross_entropy(xp, t.plate(), **kwp)
    ref = torch.nn.functional.cross_entropy(xc, t, **kw)
    same(loss, ref)
    loss.sum().backward()
    ref.sum().backward()
    same(xp.grad, xc.grad)


def test_nll_loss_of_a_target_out_of_range_raises_torchs_error():
    torch.plate.reset_host_ops()
    with pytest.raises(IndexError, match="out of bounds"):
        torch.nn.functional.nll_loss(torch.randn(4, 3).plate(), torch.tensor([0, 1, 3, 2]).plate())
    assert torch.plate.host_ops() == {"aten.nll_loss_forward": 1}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_lerp_and_tanh_backward_as_the_cpus(dtype, no_host_ops):
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(50, generator=g).to(dtype), torch.randn(50, generator=g).to(dtype)
    w = torch.linspace(-1, 2, 50).to(dtype)
    for weight in (0.3, 0.7, 1.0):  # either side of 0.5: ATen's two forms (weight 1 gives `end` exactly)
        same(torch.lerp(a.plate(), b.plate(), weight), torch.lerp(a, b, weight))
    same(torch.lerp(a.plate(), b.plate(), w.plate()), torch.lerp(a, b, w))
    assert torch.equal(torch.lerp(a.plate(), b.plate(), 1.0).cpu(), b)
    y = a.plate()
    y.lerp_(b.plate(), 0.25)
    same(y, torch.lerp(a, b, 0.25))
    same(torch.ops.aten.tanh_backward(a.plate(), b.plate()), torch.ops.aten.tanh_backward(a, b))
    x = a.plate().requires_grad_(True)  # tanh's autograd: tanh_backward on the device
    torch.tanh(x).backward(b.plate())
    same(x.grad, torch.ops.aten.tanh_backward(b, torch.tanh(a)))


def test_nonzero_of_a_0d_tensor_masked_select_and_equal_of_two_dtypes(no_host_ops):
    for v in (torch.tensor(5.0), torch.tensor(0.0), torch.tensor(True)):
        same(torch.nonzero(v.plate()), torch.nonzero(v))  # (count, 0)
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(1))
    m = x > 0
    same(x.plate().masked_select(m.plate()), x.masked_select(m))
    same(x.plate().masked_select(m.plate()[0]), x.masked_select(m[0]))  # the mask broadcast
    same(x.plate()[0].masked_select(m.plate()), x[0].masked_select(m))  # self broadcast
    assert torch.equal(torch.tensor(1.0, dtype=torch.float16).plate(), torch.tensor(1.0).plate())  # promoted
    assert not torch.equal(torch.tensor(1.5, dtype=torch.float16).plate(), torch.tensor(1.25).plate())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64])
@pytest.mark.parametrize("name", ["ceil", "floor", "trunc"])
def test_ceil_floor_trunc_as_the_cpus(dtype, name, no_host_ops):
    x = torch.cat(
        [torch.linspace(-5, 5, 41), torch.tensor([-0.5, -0.0, 0.5, float("inf"), float("-inf"), float("nan")])]
    )
    x = torch.arange(-5, 5) if dtype == torch.int64 else x.to(dtype)
    f = getattr(torch, name)
    same(f(x.plate()), f(x))
    y = x.plate()
    getattr(y, f"{name}_")()
    same(y, f(x))


def test_eager_kernels_load_from_tritons_cache_under_always_compile(monkeypatch, tmp_path):
    # TRITON_ALWAYS_COMPILE recompiles the user's and Inductor's kernels; the eager kernels (plate's ATen)
    # still come from Triton's cache (launch.library_compiles): a fresh process compiles none it ran before
    from triton import knobs

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")
    hits = []
    monkeypatch.setattr(knobs.compilation, "listener", lambda **kw: hits.append(kw["cache_hit"]))
    x = torch.arange(8.0)
    for _ in range(2):
        kernels.elementwise.device_caches.clear()  # the binaries of this process forgotten: a new process
        torch.testing.assert_close((x.to("plate") * 3.0).cpu(), x * 3.0)
    assert hits == [False, True]
    assert knobs.compilation.always_compile  # the knob is as it was outside the eager op


def test_eager_kernels_compile_outside_the_callers_async_compile_mode():
    # triton.AsyncCompileMode hands compiles to the caller's executor; Triton's test_async_compile_mock holds
    # them until it runs them, so an eager op inside the block (a[0, 0] == 0.0) waited forever on its kernel's
    import triton
    from triton.runtime import _async_compile

    class Refusing(concurrent.futures.Executor):
        def submit(self, fn, *args, **kwargs):
            raise AssertionError("an eager kernel's compile went to the caller's executor")

    x = torch.arange(8.0)
    p = x.to("plate")
    kernels.elementwise.device_caches.clear()  # the eager kernel not yet compiled in this process
    with triton.AsyncCompileMode(Refusing()) as mode:
        torch.testing.assert_close((p * 3.0).cpu(), x * 3.0)
        assert _async_compile.active_mode.get() is mode  # the caller's own kernels still go to its executor


# ---- maximum / minimum / clamp, sqrt of float64, linalg_vector_norm ---------------------------------------
NAN = float("nan")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.uint8])
def test_maximum_minimum_and_the_clamps_as_the_cpus(dtype, no_host_ops):
    x = (torch.randn(6, 7, generator=torch.Generator().manual_seed(1)) * 5).to(dtype)
    lo = (torch.randn(7, generator=torch.Generator().manual_seed(2)) * 5).to(dtype)
    if dtype.is_floating_point:  # a NaN of any operand is the result, as torch's
        x[1, 2], lo[4] = NAN, NAN
    p, plo = x.plate(), lo.plate()
    same(torch.maximum(p, plo), torch.maximum(x, lo))
    same(torch.minimum(p.T, plo[:6]), torch.minimum(x.T, lo[:6]))  # transposed, broadcast
    same(p.clamp_min(plo), x.clamp_min(lo))
    same(p.clamp_max(plo), x.clamp_max(lo))
    same(p.clamp(plo, plo + 1), x.clamp(lo, lo + 1))
    same(p.clamp(max=plo), x.clamp(max=lo))
    for low, high in ((1, 3), (None, 2), (2, None), (3, 1)):  # numbers; low > high gives high everywhere
        same(p.clamp(low, high), x.clamp(low, high))
    same(p.clamp_min(1), x.clamp_min(1))
    same(p.clamp(0.5, 2.5), x.clamp(0.5, 2.5))  # an integer tensor with float limits: the default float type
    y = p.clone()
    y.clamp_(0, 2)  # in place
    same(y, x.clamp(0, 2))
    out = torch.empty(0, dtype=dtype).plate()
    torch.clamp_min(p, 1, out=out)
    same(out, x.clamp_min(1))


def test_a_nan_clamp_limit_gives_nan_everywhere(no_host_ops):
    x = torch.randn(5)
    same(x.plate().clamp_min(NAN), x.clamp_min(NAN))
    same(x.plate().clamp(0.0, NAN), x.clamp(0.0, NAN))


def test_a_clamp_limit_the_type_cannot_hold_raises_torchs_error():
    x = torch.randn(5)
    with pytest.raises(RuntimeError, match="cannot be converted to type c10::Half without overflow"):
        x.half().plate().clamp(1e5)
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        torch.clamp(x.plate())


@pytest.mark.parametrize("name", ["sqrt", "rsqrt"])
def test_sqrt_and_rsqrt_of_float64_round_correctly(name, no_host_ops):
    # tl.sqrt_rn takes fp32 only: a float64 tensor compiled nothing before; fp64's sqrt is IEEE's, as math.sqrt
    x = torch.rand(257, dtype=torch.float64, generator=torch.Generator().manual_seed(3)) * 100
    got = getattr(x.plate(), name)().cpu()
    roots = torch.tensor([math.sqrt(v) for v in x.tolist()], dtype=torch.float64)
    assert torch.equal(got, roots if name == "sqrt" else 1.0 / roots)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
@pytest.mark.parametrize(
    "kw",
    [{}, {"dim": -1}, {"dim": (0, 2), "keepdim": True}, {"dim": [], "keepdim": True}, {"ord": 1, "dim": 1},
     {"ord": float("inf")}, {"ord": 3, "dim": 0}, {"ord": 0, "dim": 2}, {"dim": 1, "dtype": torch.float64}],
)  # fmt: skip
def test_vector_norm_and_normalize_as_the_cpus(dtype, kw, no_host_ops):
    if "dtype" in kw and dtype != torch.float32:
        return
    x = torch.randn(3, 5, 7, generator=torch.Generator().manual_seed(4)).to(dtype)
    x[0, 1, 2] = 0.0
    got, want = torch.linalg.vector_norm(x.plate(), **kw), torch.linalg.vector_norm(x.double(), **kw)
    assert got.shape == want.shape and got.dtype == torch.linalg.vector_norm(x, **kw).dtype
    tolerance = {} if dtype == torch.float64 else {"rtol": 4e-3, "atol": 1e-3}
    torch.testing.assert_close(got.cpu().double(), want, **tolerance)
    if not kw:  # the 2-norm of one element is its magnitude (ATen's shortcut)
        same(torch.linalg.vector_norm(x[0, 0, :1].plate() - 4, dim=0), torch.linalg.vector_norm(x[0, 0, :1] - 4, dim=0))


def test_normalize_and_its_gradient_run_on_plate(no_host_ops):
    x = torch.randn(4, 9, 16, generator=torch.Generator().manual_seed(5))
    p = x.plate().requires_grad_()
    c = x.clone().requires_grad_()
    y, z = torch.nn.functional.normalize(p, dim=-1), torch.nn.functional.normalize(c, dim=-1)
    (y * torch.arange(16.0).plate()).sum().backward()
    (z * torch.arange(16.0)).sum().backward()
    same(y.detach(), z.detach())
    same(p.grad, c.grad)


ACTIVATIONS = {
    "sigmoid": torch.sigmoid,  # sigmoid_backward
    "logsigmoid": torch.nn.functional.logsigmoid,  # log_sigmoid_forward / log_sigmoid_backward
    "relu": torch.relu,  # threshold_backward
    "squared relu": lambda t: torch.relu(t) * torch.relu(t),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_gradients_run_on_plate_as_close_as_the_cpus(name, dtype, no_host_ops):
    # each result and gradient no farther from the float64 one than the CPU's own (give or take one ulp)
    x = (torch.randn(37, 19, generator=torch.Generator().manual_seed(6)) * 4).to(dtype)
    x[0, :3] = 0.0  # relu's gradient at its threshold: 0
    g = torch.randn(37, 19, generator=torch.Generator().manual_seed(7)).to(dtype)
    results = {}
    for device, dt in (("plate", dtype), ("cpu", dtype), ("cpu", torch.float64)):
        t = x.to(device, dt).detach().requires_grad_()
        y = ACTIVATIONS[name](t)
        y.backward(g.to(device, dt))
        results[device, dt] = (y.detach().cpu().double(), t.grad.cpu().double())
    ulp = torch.finfo(dtype).eps
    for i in range(2):
        exact = results["cpu", torch.float64][i]
        plate_err = (results["plate", dtype][i] - exact).abs()
        cpu_err = (results["cpu", dtype][i] - exact).abs()
        assert bool((plate_err <= cpu_err + 2 * ulp * exact.abs().clamp_min(1)).all()), (name, i)


def test_log_sigmoid_forward_returns_cudas_empty_buffer(no_host_ops):
    out, buffer = torch.ops.aten.log_sigmoid_forward(torch.randn(4, 5).plate())
    assert out.shape == (4, 5) and buffer.numel() == 0 and buffer.device.type == "plate"


TRIANGLES_AND_FLIPS = {
    "tril": lambda t: t.tril(),
    "triu 1": lambda t: t.triu(1),
    "tril -2": lambda t: t.tril(-2),
    "triu of a transposed view": lambda t: t.mT.triu(-1),
    "triu past the corner": lambda t: t.triu(9),
    "tril 2-dim": lambda t: t[0].tril(),
    "flip last": lambda t: t.flip(-1),
    "flip two dims": lambda t: t.flip((0, 2)),
    "flip a transposed view": lambda t: t.mT.flip(1),
    "flip 0-dim": lambda t: t[0, 0, 0].flip(0),
    "flip a strided slice": lambda t: t[:, 1:4, ::2].flip((0, 2)),
    "flip every dim": lambda t: t.flip((0, 1, 2)),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool, torch.complex64])
@pytest.mark.parametrize("name", sorted(TRIANGLES_AND_FLIPS))
def test_tril_triu_and_flip_as_the_cpus(name, dtype, no_host_ops):
    x = (torch.randn(2, 5, 7, generator=torch.Generator().manual_seed(9)) * 3).to(dtype)
    got, want = TRIANGLES_AND_FLIPS[name](x.plate()), TRIANGLES_AND_FLIPS[name](x)
    assert got.stride() == want.stride()
    same(got, want)


def test_tril_and_triu_in_place(no_host_ops):
    x = torch.randn(3, 4, 4)
    p = x.plate()
    p.tril_(1)
    same(p, x.tril(1))
    p.triu_()
    same(p, x.tril(1).triu())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64])
def test_exp2_as_the_cpus(dtype, no_host_ops):
    x = (torch.randn(300, generator=torch.Generator().manual_seed(10)) * 10).to(dtype)
    same(torch.exp2(x.plate()), torch.exp2(x))  # an integer tensor: the default float type, as torch's


@pytest.mark.parametrize("dtype", [None, torch.float16, torch.int64, torch.bool, torch.complex64])
@pytest.mark.parametrize("size", [(4,), (3, 5), (5, 2), (0,)])
def test_eye_on_plate(size, dtype, no_host_ops):
    got = torch.eye(*size, dtype=dtype, device="plate")
    assert got.stride() == torch.eye(*size, dtype=dtype).stride()
    same(got, torch.eye(*size, dtype=dtype))


def test_eye_of_a_negative_size_raises_torchs_error():
    with pytest.raises(RuntimeError, match="n must be greater or equal to 0"):
        torch.eye(-1, device="plate")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.uint8, torch.bool])
@pytest.mark.parametrize("name", ["sign", "sgn"])
def test_sign_and_sgn_of_real_tensors_as_the_cpus(name, dtype, no_host_ops):
    x = torch.tensor([NAN, -0.0, 0.0, 2.0, -3.0, float("inf"), -float("inf")]).to(dtype)  # NaN's sign: 0
    same(getattr(torch, name)(x.plate()), getattr(torch, name)(x))


VARIANCES = {
    "var": lambda t: t.var(),
    "var last dim biased keepdim": lambda t: t.var(-1, unbiased=False, keepdim=True),
    "std two dims": lambda t: t.std((0, 2)),
    "var correction 3": lambda t: torch.var(t, 1, correction=3),
    "var of one element": lambda t: t[:, :1].var(1),  # 0 / 0: NaN, as torch's
    "std every dim keepdim": lambda t: t.std(dim=[], keepdim=True),
    "var of a transposed view": lambda t: t.mT.var(0),
    "var_mean": lambda t: torch.var_mean(t, 1),
    "std_mean two dims keepdim": lambda t: torch.std_mean(t, (0, 2), keepdim=True),
    "var_mean every dim": lambda t: torch.var_mean(t, correction=0),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("name", sorted(VARIANCES))
def test_var_and_std_as_the_cpus(name, dtype, no_host_ops):
    x = (torch.randn(4, 9, 33, generator=torch.Generator().manual_seed(11)) + 3).to(dtype)
    got, want = VARIANCES[name](x.plate()), VARIANCES[name](x)
    for g, w in zip(*((r,) if isinstance(r, torch.Tensor) else r for r in (got, want)), strict=True):
        assert g.stride() == w.stride()
        same(g, w)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8])
def test_bincount_on_plate_as_the_cpus(dtype, no_host_ops):
    x = torch.randint(0, 9, (50,), generator=torch.Generator().manual_seed(3)).to(dtype)
    same(torch.bincount(x.plate()), torch.bincount(x))
    same(torch.bincount(x.plate(), minlength=15), torch.bincount(x, minlength=15))  # minlength beyond the max
    same(torch.bincount(x[:0].plate(), minlength=3), torch.bincount(x[:0], minlength=3))  # empty: minlength zeros
    for weights in (torch.rand(50), torch.rand(50, dtype=torch.float64), torch.randint(0, 5, (50,))):
        got = torch.bincount(x.plate(), weights=weights.plate())
        want = torch.bincount(x, weights=weights)
        assert got.dtype == want.dtype  # float32 weights sum in float32, any other dtype in float64
        torch.testing.assert_close(got.cpu(), want)


def test_bincount_of_a_negative_value_raises_torchs_error():
    with pytest.raises(RuntimeError, match="non-negative"):
        torch.bincount(torch.tensor([1, -1, 2]).plate())


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_index_add_on_plate_as_the_cpus(dtype, no_host_ops):
    g = torch.Generator().manual_seed(4)
    index = torch.randint(0, 5, (20,), generator=g)  # repeated entries accumulate
    source = torch.randint(-9, 9, (20, 3), generator=g).to(dtype)
    same(
        torch.zeros(5, 3, dtype=dtype).plate().index_add(0, index.plate(), source.plate(), alpha=2),
        torch.zeros(5, 3, dtype=dtype).index_add(0, index, source, alpha=2),
    )
    x = torch.ones(3, 5, dtype=dtype)
    y = x.plate()
    y.index_add_(1, index[:4].plate(), source.T[:, :4].plate())  # in place, along dim 1
    same(y, x.index_add_(1, index[:4], source.T[:, :4]))


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32, torch.float16])
def test_floor_divide_on_plate_rounds_toward_minus_infinity(dtype, no_host_ops):
    g = torch.Generator().manual_seed(8)
    a = (torch.randn(40, generator=g) * 30).to(dtype)
    b = (torch.randint(1, 7, (40,), generator=g) * torch.tensor([1, -1]).repeat(20)).to(dtype)  # both signs
    same(a.plate() // b.plate(), a // b)
    same(a.plate() // 3, a // 3)
    same(torch.floor_divide(a.plate(), b.plate(), out=torch.empty_like(a).plate()), torch.floor_divide(a, b))
    y = a.plate()
    y.floor_divide_(b.plate())
    same(y, a.clone().floor_divide_(b))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_histc_on_plate_as_the_cpus(dtype, no_host_ops):
    g = torch.Generator().manual_seed(9)
    x = torch.randn(500, generator=g).to(dtype)
    x[:3] = torch.tensor([2.0, -2.0, float("nan")], dtype=dtype)  # both edges (max in the last bin), NaN nowhere
    same(torch.histc(x.plate(), bins=7, min=-2, max=2), torch.histc(x, bins=7, min=-2, max=2))
    same(torch.histc(x.plate(), bins=5, min=0.5, max=1), torch.histc(x, bins=5, min=0.5, max=1))  # out of range
    y = torch.rand(4, 30, generator=g).to(dtype)
    same(torch.histc(y.plate(), bins=6), torch.histc(y, bins=6))  # min == max: the data's range
    same(torch.histc(torch.full((5,), 3.0, dtype=dtype).plate()), torch.histc(torch.full((5,), 3.0, dtype=dtype)))


def test_histc_of_an_inverted_range_raises_torchs_error():
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        torch.histc(torch.rand(4).plate(), bins=3, min=2, max=1)


@pytest.mark.parametrize(
    ("d", "shape", "padding"),
    [
        (1, (2, 3, 5), (2, 3)),
        (2, (2, 3, 4, 5), (1, 2, 3, 0)),
        (2, (3, 4, 5), (2, -1, 1, 1)),
        (3, (1, 2, 3, 4, 2), (1, 1, 0, 2, 2, 1)),
        (1, (0, 3, 3), (1, 2)),  # an empty batch (nn.functional.pad's samples): an empty gradient, not the host
        (2, (0, 3, 3, 3), (0, 2, 0, 1)),
        (3, (0, 1, 2, 2, 2), (1, 1, 1, 1, 1, 1)),
    ],
)
def test_replication_pad_backward_on_plate_as_the_cpus(d, shape, padding, no_host_ops):
    g = torch.Generator().manual_seed(10)
    x = torch.randn(shape, generator=g)
    padded = torch.nn.functional.pad(x, padding, mode="replicate")
    grad = torch.randn(padded.shape, generator=g)
    backward = getattr(torch.ops.aten, f"replication_pad{d}d_backward")
    same(backward(grad.plate(), x.plate(), padding), backward(grad, x, padding))


def test_replication_pad_backward_of_noncontiguous_float64_is_the_cpus_exactly(no_host_ops):
    g = torch.Generator().manual_seed(12)
    x = torch.randn(3, 5, 4, dtype=torch.float64, generator=g).transpose(1, 2)  # (3, 4, 5), noncontiguous
    grad = torch.randn(3, 7, 8, dtype=torch.float64, generator=g)[:, ::2, :]  # (3, 4, 8): strided rows
    want = torch.ops.aten.replication_pad1d_backward(grad, x, (2, 1))
    got = torch.ops.aten.replication_pad1d_backward(grad.plate(), x.plate(), (2, 1))
    assert torch.equal(got.cpu(), want)


@pytest.mark.parametrize("p", [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, math.inf])
@pytest.mark.parametrize(
    ("shape1", "shape2"),
    [((5, 4), (6, 4)), ((2, 3, 4), (2, 7, 4)), ((30, 3), (8, 3)), ((1, 4, 3), (2, 5, 3))],
    ids=["2d", "batched", "matrix_product_form", "broadcast_batch"],
)
def test_cdist_and_its_gradient_on_plate_against_float64(shape1, shape2, p, no_host_ops):
    g = torch.Generator().manual_seed(11)
    x1 = torch.randn(shape1, generator=g, dtype=torch.float64)
    x2 = torch.randn(shape2, generator=g, dtype=torch.float64)
    # the matrix-product form (more than 25 rows) computes a zero distance as sqrt of a cancellation, in fp32
    if x1.shape[:-2] == x2.shape[:-2] and max(x1.shape[-2], x2.shape[-2]) <= 25:
        x2[..., 0, :] = x1[..., 0, :]  # a zero distance: its gradient is 0
        x2[..., 1, 0] = x1[..., 1, 0]  # a zero difference
    want1, want2 = x1.clone().requires_grad_(True), x2.clone().requires_grad_(True)
    want = torch.cdist(want1, want2, p=p)
    grad = torch.randn(want.shape, generator=g, dtype=torch.float64)
    want.backward(grad)
    got1, got2 = x1.float().plate().requires_grad_(True), x2.float().plate().requires_grad_(True)
    got = torch.cdist(got1, got2, p=p)
    got.backward(grad.float().plate())
    torch.testing.assert_close(got.detach().cpu().double(), want.detach(), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(got1.grad.cpu().double(), want1.grad, rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(got2.grad.cpu().double(), want2.grad, rtol=1e-3, atol=1e-3)


INVERSE_AND_HYPERBOLIC = (
    "log2",
    "log10",
    "erfc",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "asinh",
    "acosh",
    "atanh",
)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64])
@pytest.mark.parametrize("name", INVERSE_AND_HYPERBOLIC)
def test_more_float_functions_on_plate_against_float64(name, dtype, no_host_ops):
    g = torch.Generator().manual_seed(14)
    specials = [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1.0, -1.0, 0.5, 1e-30, 1e30, 2.0, 100.0]
    if dtype == torch.int64:
        x = torch.randint(-5, 10, (50,), generator=g)  # computes (and returns) the default float type
    else:
        x = torch.cat([torch.randn(200, generator=g) * 3, torch.tensor(specials)]).to(dtype)
    fn = getattr(torch, name)
    got, want = fn(x.plate()), fn(x)
    assert got.dtype == want.dtype
    tol = {torch.float32: 3e-6, torch.float64: 1e-12, torch.float16: 1e-3, torch.bfloat16: 8e-3}[want.dtype]
    torch.testing.assert_close(
        got.cpu().double(), fn(x.double()).to(want.dtype).double(), rtol=tol, atol=tol, equal_nan=True
    )
    inplace = x.plate().to(want.dtype)
    getattr(inplace, name + "_")()
    torch.testing.assert_close(inplace.cpu(), got.cpu(), rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64, torch.int64, torch.int8])
def test_remainder_fmod_and_scalar_bitwise_ops_on_plate_as_the_cpus(dtype, no_host_ops):
    g = torch.Generator().manual_seed(15)
    if dtype.is_floating_point:
        special_a = [0.0, -0.0, 5.0, -5.0, float("inf"), float("nan"), 3.0]
        special_b = [2.0, 2.0, -2.0, 2.0, 2.0, 1.0, float("inf")]
        a = torch.cat([torch.randn(100, generator=g) * 10, torch.tensor(special_a)]).to(dtype)
        b = torch.cat([torch.randn(100, generator=g) * 3, torch.tensor(special_b)]).to(dtype)
    else:
        a = torch.randint(-100, 100, (100,), generator=g).to(dtype)
        signs = torch.randint(0, 2, (100,), generator=g) * 2 - 1
        b = (torch.randint(1, 9, (100,), generator=g) * signs).to(dtype)  # divisors of both signs, none zero
    same(torch.remainder(a.plate(), b.plate()), torch.remainder(a, b))  # the divisor's sign (Python's %)
    same(torch.fmod(a.plate(), b.plate()), torch.fmod(a, b))  # the dividend's sign (C's fmod)
    same(a.plate() % 3, a % 3)
    same(torch.fmod(a.plate(), -3), torch.fmod(a, -3))
    y = a.plate()
    y.remainder_(b.plate())
    same(y, a.clone().remainder_(b))
    if not dtype.is_floating_point:
        same(a.plate() & 6, a & 6)
        same(a.plate() | 9, a | 9)
        same(a.plate() ^ -3, a ^ -3)


def test_integer_remainder_by_zero_raises_torchs_error():
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        torch.remainder(torch.tensor([1, 2]).plate(), 0)


def test_unfold_is_a_view_on_plate_and_repeat_tile_run_there(no_host_ops):
    x = torch.randn(4, 7, 5, generator=torch.Generator().manual_seed(16))
    p = x.plate()
    for args in [(1, 3, 2), (0, 2, 1), (-1, 5, 5), (2, 1, 3), (1, 7, 1), (1, 0, 1)]:
        got, want = p.unfold(*args), x.unfold(*args)
        assert got.stride() == want.stride() and got._base is p  # a view of p, ATen's strides
        same(got, want)
    t = x.transpose(0, 2)[1:]  # a strided, offset base
    same(t.plate().unfold(1, 3, 2), t.unfold(1, 3, 2))
    same(torch.tensor(3.0).plate().unfold(0, 1, 1), torch.tensor(3.0).unfold(0, 1, 1))
    same(p.repeat(2, 1, 3), x.repeat(2, 1, 3))
    same(p.tile(2), x.tile(2))
    y = torch.randn(10, generator=torch.Generator().manual_seed(17))
    yp = y.plate().requires_grad_(True)
    (yp.unfold(0, 4, 2) ** 2).sum().backward()  # unfold_backward: overlapping windows sum
    want = y.clone().requires_grad_(True)
    (want.unfold(0, 4, 2) ** 2).sum().backward()
    same(yp.grad, want.grad)
    v = p.clone()
    v.unfold(1, 2, 2).mul_(0)  # writes through the view
    w = x.clone()
    w.unfold(1, 2, 2).mul_(0)
    same(v, w)


def test_unfold_past_the_dim_raises_torchs_error():
    with pytest.raises(RuntimeError, match="maximum size for tensor at dimension 1 is 7"):
        torch.randn(4, 7).plate().unfold(1, 9, 1)
