"""Matrix products and convolutions on plate in Inductor's DEFAULT mode: Triton kernels on the simulator, the
GEMM template with the one configuration the cost model chose, and nothing on the host.

The compiled cases run on plate-mini with small shapes; the convolution decompositions are also checked
exactly, in float64 on CPU, for every variant (forward and backward)."""

from __future__ import annotations

import copy
import functools

import pytest
import torch
import torch.nn.functional as F
from torch._inductor.utils import run_and_get_code

import inductor_plate
from inductor_plate import config, conv_gemm, gemm_config, policy, templates
from triton_plate_backend.errors import PlateError
from triton_plate_backend.machine import get_machine

TOL = {"rtol": 1e-4, "atol": 1e-4}


@pytest.fixture(scope="module", autouse=True)
def mini(plate_mini_module):
    return plate_mini_module


pytestmark = pytest.mark.usefixtures("fresh_compile")


def compile_on_plate(fn, *args):
    """(out, codes, profile run) of the compiled ``fn`` on plate copies of ``args``, caches off."""
    plate_args = [a.detach().to("plate").requires_grad_(a.requires_grad) for a in args]
    with torch._inductor.config.patch(force_disable_caches=True), inductor_plate.collect_profiles() as run:
        out, codes = run_and_get_code(torch.compile(fn), *plate_args)
    return out, codes, run, plate_args


def wrapper_call(codes) -> str:
    return "".join(code.partition("def call(")[2] for code in codes)


# ---- the cost model's choice ------------------------------------------------------------------------------
def test_choice_ranks_the_tiles_inductor_really_runs():
    """Inductor shrinks every block to the problem (power of two, at least 16): a 64-row tile of a 32-row
    product runs as a 32-row tile, so it costs what that tile costs, and its fewer programs can win."""
    machine = get_machine("plate-mini")
    narrow = gemm_config.GemmProblem(32, 512, 144)
    wide = gemm_config.GemmConfig(64, 64, 32, 2, 4)
    assert gemm_config.effective_blocks(narrow, wide) == (32, 64, 32)
    assert gemm_config.effective_blocks(gemm_config.GemmProblem(8, 20, 5), wide) == (16, 32, 16)
    assert gemm_config.effective_blocks(gemm_config.GemmProblem(8, 20, 5, dtype="int8"), wide) == (16, 32, 32)
    same_tile = gemm_config.GemmConfig(32, 64, 32, 2, 4)
    assert gemm_config.estimate(machine, narrow, wide) == gemm_config.estimate(machine, narrow, same_tile)
    chosen = gemm_config.choose(machine, narrow, policy.fusion_sram_bytes())
    m, n, _ = gemm_config.effective_blocks(narrow, chosen)
    assert (32 // m) * (512 // n) <= machine.total_cores  # one wave, not two of 32x32 tiles


def test_choice_fits_the_sram_and_follows_the_shapes():
    machine = get_machine("plate1")
    budget = machine.core.sram_bytes // 2
    small = gemm_config.choose(machine, gemm_config.GemmProblem(32, 32, 32), budget)
    large = gemm_config.choose(machine, gemm_config.GemmProblem(4096, 4096, 4096), budget)
    # bigger tiles only pad a 32x32 product; 16-row tiles keep each program's rows in one domain
    assert (small.block_m, small.block_n) == (16, 32)
    assert large.block_m * large.block_n > small.block_m * small.block_n  # fewer, fuller programs
    for chosen in (small, large):
        assert templates.sram_needed(chosen.block_m, chosen.block_n, chosen.block_k, chosen.num_stages) <= budget
        assert templates.suits_matrix_unit(chosen.block_m, chosen.block_n, machine.core.matrix.dim)
    problem = gemm_config.GemmProblem(4096, 4096, 4096)
    fitting = gemm_config.candidates(machine, budget)
    assert gemm_config.estimate(machine, problem, large) == min(
        gemm_config.estimate(machine, problem, c) for c in fitting
    )
    with pytest.raises(PlateError, match="max_fusion_sram_bytes"):
        gemm_config.choose(machine, problem, 0)


def test_tiles_whose_rows_span_domains_pay_the_die_crossing():
    """64 tokens over plate1's 4 domains: 16 rows each. A 32-row tile fills and stores across a die, so a
    transformer's projections take 16-row tiles (each program's rows of A and C in one domain)."""
    machine = get_machine("plate1")
    problem = gemm_config.GemmProblem(64, 256, 64)
    tall, short = gemm_config.GemmConfig(32, 32, 32, 2, 4), gemm_config.GemmConfig(16, 32, 32, 2, 4)
    assert gemm_config.spans_domains(machine, problem, 32) and not gemm_config.spans_domains(machine, problem, 16)
    # 128 rows: 32 per domain, the same programs in one wave, none crossing: the fill and the store differ
    local, problem64 = gemm_config.GemmProblem(128, 64, 64), gemm_config.GemmProblem(64, 64, 64)
    crossing = 2 * machine.domain.die_crossing_cycles
    assert gemm_config.estimate(machine, problem64, tall) - gemm_config.estimate(machine, local, tall) == crossing
    assert gemm_config.choose(machine, problem, machine.core.sram_bytes // 2) == short
    assert not gemm_config.spans_domains(machine, gemm_config.GemmProblem(4096, 4096, 4096), 256)


def test_gemm_mode_is_checked():
    assert policy.gemm_mode() == "always" and policy.use_gemm_templates()
    with config.patch(gemm_templates="never"):
        assert not policy.use_gemm_templates()
    with config.patch(gemm_templates="sometimes"), pytest.raises(PlateError, match="always"):
        policy.gemm_mode()


# ---- matrix products ------------------------------------------------------------------------------------------
def products(a, b, bias, batch_a, batch_b):
    return (
        a @ b,
        torch.addmm(bias, a, b, beta=0.5),
        torch.bmm(batch_a, batch_b),
        torch.baddbmm(batch_a[:, :, :1], batch_a, batch_b, alpha=2.0),
    )


def gemm_args():
    torch.manual_seed(0)
    return torch.randn(40, 24), torch.randn(24, 72), torch.randn(72), torch.randn(3, 20, 16), torch.randn(3, 16, 36)


def test_products_run_as_templates_on_the_simulator_in_the_default_mode():
    args = gemm_args()
    out, codes, run, _ = compile_on_plate(products, *args)
    for got, want in zip(out, products(*args), strict=True):
        torch.testing.assert_close(got.cpu(), want, **TOL)
    call = wrapper_call(codes)
    assert call.count("triton_tem_") >= 4 and "extern_kernels." not in call and "torch.ops.aten." not in call
    assert "call = plate_counted_graph(call)" in codes[0]  # a host-op scope; it saw none (below)
    templates_run = [launch for launch in run.launches if launch.kernel.startswith("triton_tem_")]
    assert len({launch.kernel for launch in templates_run}) >= 4 and all(t.time_ns > 0 for t in templates_run)
    assert inductor_plate.host_fallbacks() == {}


def test_mm_plus_mm_under_max_autotune_runs_as_a_template():
    # max-autotune rewrites a @ b + c @ d into one mm_plus_mm; its choices were the aten kernel alone on plate
    torch.manual_seed(0)
    args = [torch.randn(32, 32) for _ in range(4)]
    with torch._inductor.config.patch(max_autotune=True):
        out, codes, run, _ = compile_on_plate(lambda a, b, c, d: a @ b + c @ d, *args)
    torch.testing.assert_close(out.cpu(), args[0] @ args[1] + args[2] @ args[3], **TOL)
    call = wrapper_call(codes)
    assert "extern_kernels." not in call and "torch.ops.aten." not in call
    assert [launch.kernel for launch in run.launches if launch.kernel.startswith("triton_tem_")], run.report()
    assert inductor_plate.host_fallbacks() == {}


def test_a_product_of_two_dtypes_raises_torchs_error():
    """torch.mm of float and int64 raises torch's dtype error when compiled too, as on CUDA; the lowering raises it,
    so nothing runs on the host (the extern aten kernel raised it on the host, a host op)."""
    a, i = torch.arange(6.0).view(2, 3), torch.arange(9).view(3, 3)
    with config.patch(fallback_on_compile_error=False):
        with pytest.raises(RuntimeError, match="expected mat1 and mat2 to have the same dtype, but got: float != long"):
            torch.compile(torch.mm)(a.to("plate"), i.to("plate"))
        with pytest.raises(RuntimeError, match="same dtype, but got: c10::Half != double"):
            torch.compile(torch.addmm)(
                *(torch.ones(2, 2, dtype=d, device="plate") for d in (torch.half,) * 2 + (torch.double,))
            )
    assert inductor_plate.host_fallbacks() == {}


def test_beta_zero_ignores_a_nan_input():
    """addmm/baddbmm with beta == 0 ignore the input, NaN and all (torch.addmm); the template's epilogue added
    0 * NaN."""

    def fn(bias, a, b, batch_bias, batch_a, batch_b):
        return torch.addmm(bias, a, b, beta=0.0, alpha=2.0), torch.baddbmm(batch_bias, batch_a, batch_b, beta=0.0)

    torch.manual_seed(0)
    args = (torch.full((40, 72), torch.nan), *gemm_args()[:2], torch.full((3, 1, 36), torch.nan), *gemm_args()[3:])
    out, codes, _, _ = compile_on_plate(fn, *args)
    for got, want in zip(out, fn(*args), strict=True):
        assert not want.isnan().any()
        torch.testing.assert_close(got.cpu(), want, **TOL)
    assert wrapper_call(codes).count("triton_tem_") >= 2 and "extern_kernels." not in wrapper_call(codes)
    assert inductor_plate.host_fallbacks() == {}


@pytest.mark.parametrize("storage, view", [(torch.int16, torch.float16), (torch.int32, torch.float32)])
def test_products_of_dtype_views_bitcast_their_operands(storage, view):
    """A float product of a dtype view of integer storage: the template loads the view's bits as floats. The view
    passed as is gave tl.dot the integer tensor (a compile error)."""

    def fn(x, y, x2):
        x = x.view(view)
        return x @ (y.view(view) + 1), (x2.view(view) + 1) @ x

    torch.manual_seed(0)
    x, y = (torch.randn(24, 24).to(view).view(storage) for _ in range(2))
    with config.patch(fallback_on_compile_error=False):
        out, codes, run, _ = compile_on_plate(fn, x, y, x.clone())
    for got, want in zip(out, fn(x, y, x.clone()), strict=True):
        assert got.dtype == view
        torch.testing.assert_close(got.cpu(), want, rtol=1e-2, atol=1e-2)
    assert wrapper_call(codes).count("triton_tem_") >= 2 and "extern_kernels." not in wrapper_call(codes)
    assert inductor_plate.host_fallbacks() == {}


def test_int_mm_runs_as_a_template():
    torch.manual_seed(0)
    a, b = torch.randint(-8, 8, (32, 64), dtype=torch.int8), torch.randint(-8, 8, (64, 32), dtype=torch.int8)
    out, codes, run, _ = compile_on_plate(torch._int_mm, a, b)
    torch.testing.assert_close(out.cpu(), torch._int_mm(a, b))
    assert "triton_tem_" in wrapper_call(codes) and "extern_kernels." not in wrapper_call(codes)
    assert inductor_plate.host_fallbacks() == {}


def scaled_mm_args(m, k, n, per_row: bool, bias: bool):
    torch.manual_seed(0)
    a = (torch.randn(m, k) * 4).to(torch.float8_e4m3fn)
    b = (torch.randn(n, k) * 4).to(torch.float8_e4m3fn).t()  # _scaled_mm takes B column-major
    if per_row:
        scales = (torch.rand(m, 1) + 0.5, torch.rand(1, n) + 0.5)
    else:
        scales = (torch.tensor(0.25), torch.tensor(1.5))
    return (a, b, *scales, torch.randn(n).to(torch.bfloat16)) if bias else (a, b, *scales)


def scaled_mm(a, b, scale_a, scale_b, bias=None):
    return torch._scaled_mm(a, b, scale_a, scale_b, bias=bias, out_dtype=torch.bfloat16)


@pytest.mark.parametrize("per_row, bias", [(False, False), (True, True)], ids=["per-tensor", "per-row-bias"])
def test_scaled_mm_runs_as_a_template_against_the_cpu(per_row, bias):
    args = scaled_mm_args(48, 64, 40, per_row, bias)
    out, codes, run, _ = compile_on_plate(scaled_mm, *args)
    want = scaled_mm(*args)  # the CPU's own _scaled_mm
    torch.testing.assert_close(out.cpu().float(), want.float(), rtol=1e-2, atol=1e-1)
    call = wrapper_call(codes)
    assert "triton_tem_" in call and "extern_kernels." not in call
    assert any(launch.kernel.startswith("triton_tem_") and launch.time_ns > 0 for launch in run.launches)
    assert inductor_plate.host_fallbacks() == {}


def test_scaled_mm_scales_the_template_takes():
    """A result scale (or block scales) has no template: Inductor's host kernel, counted."""
    a, b, scale_a, scale_b = scaled_mm_args(32, 32, 32, per_row=False, bias=False)

    def with_result_scale(a, b, scale_a, scale_b, scale_result):
        return torch._scaled_mm(a, b, scale_a, scale_b, scale_result=scale_result, out_dtype=torch.float32)

    out, codes, _, _ = compile_on_plate(with_result_scale, a, b, scale_a, scale_b, torch.tensor(1.0))
    torch.testing.assert_close(out.cpu(), with_result_scale(a, b, scale_a, scale_b, torch.tensor(1.0)))
    assert "extern_kernels." in wrapper_call(codes)
    assert inductor_plate.host_fallbacks() == {"op aten._scaled_mm": 1}
    assert "1 host fallbacks" in inductor_plate.fallback_counter.summary()


def test_extern_kernels_only_when_opted_in_and_then_plate_kernels():
    """The extern aten.mm (opted into) runs eager_ops/matmul.py's plate kernel: no host fallback."""
    a, b = torch.randn(8, 16), torch.randn(16, 8)
    with config.patch(gemm_templates="max-autotune"):
        out, codes, run, _ = compile_on_plate(torch.mm, a, b)
        torch.testing.assert_close(out.cpu(), a @ b, **TOL)
    assert "extern_kernels.mm(" in wrapper_call(codes)
    assert inductor_plate.host_fallbacks() == {}


def test_host_ops_are_the_aten_ops_without_a_plate_kernel():
    from inductor_plate.fallback_counter import is_host_op

    assert all(map(is_host_op, ("aten.linalg_ldl_factor_ex", "aten._linalg_eigvals", "aten.linalg_eig")))
    # the linear algebra of eager_ops/linalg.py and linalg_svd.py, and frexp (float_parts.py) are plate kernels
    assert not any(map(is_host_op, ("aten.linalg_qr", "aten.linalg_qr.out", "aten._linalg_det", "aten.frexp.Tensor")))
    assert not any(map(is_host_op, ("aten._linalg_svd", "aten.linalg_lstsq.out")))
    assert not any(map(is_host_op, ("torch.ops.aten.copy_.default", "aten.as_strided", "aten.set_.source_Tensor")))
    # the eager table's ops are plate kernels (eager_ops/matmul.py: the extern matmuls; rewritten.py: addbmm)
    assert not any(map(is_host_op, ("aten.mm", "aten.mm.out", "extern_kernels.bmm", "aten.sum.dim_IntList")))
    assert not any(map(is_host_op, ("aten.addbmm", "aten.addbmm.out", "extern_kernels.addbmm")))


def reduction_args(dtype):
    """Operands of the products below; integers span the dtype so the products and sums overflow."""
    torch.manual_seed(0)
    shapes = ((6, 12), (12, 10), (10,), (3, 5, 12), (3, 12, 7), (3, 5, 1))
    if dtype.is_floating_point:
        return [torch.randn(shape, dtype=dtype) for shape in shapes]
    info = torch.iinfo(dtype)
    return [torch.randint(info.min, info.max, shape, dtype=dtype) for shape in shapes]


def reduction_products(a, b, bias, batch_a, batch_b, batch_bias):
    return (
        a @ b,
        torch.addmm(bias, a, b, beta=3, alpha=2),
        torch.addmm(bias, a, b, beta=0),
        torch.bmm(batch_a, batch_b),
        torch.baddbmm(batch_bias, batch_a, batch_b, alpha=5),
    )


@pytest.mark.parametrize("dtype", [torch.float64, torch.int32, torch.int64, torch.int8, torch.int16, torch.uint8])
def test_products_no_template_takes_are_plate_reductions(dtype):
    """float64 and integer products (no GEMM template takes them) run as a sum over k on plate, not on the
    host: integers wrap around exactly as on CPU, float64 accumulates in float64."""
    args = reduction_args(dtype)
    out, codes, run, _ = compile_on_plate(reduction_products, *args)
    for got, want in zip(out, reduction_products(*args), strict=True):
        assert got.dtype == want.dtype
        if dtype.is_floating_point:
            torch.testing.assert_close(got.cpu(), want, rtol=1e-12, atol=1e-12)
        else:
            assert torch.equal(got.cpu(), want)
    call = wrapper_call(codes)
    assert "extern_kernels." not in call and "torch.ops.aten." not in call
    assert run.launches and all(launch.time_ns > 0 for launch in run.launches)
    assert inductor_plate.host_fallbacks() == {}


def test_products_opted_into_extern_kernels_run_the_eager_plate_kernel():
    """A float64 product the user opted into extern kernels for runs aten.mm's eager plate kernel
    (eager_ops/matmul.py), not the host's. (An empty product is zeros on plate: tests/test_inductor_max_autotune.py.)"""
    a, b = torch.randn(8, 16, dtype=torch.float64), torch.randn(16, 8, dtype=torch.float64)
    torch._dynamo.reset()
    inductor_plate.reset_host_fallbacks()
    with config.patch(gemm_templates="max-autotune"):
        out, codes, run, _ = compile_on_plate(torch.mm, a, b)
    torch.testing.assert_close(out.cpu(), a @ b)
    assert "extern_kernels.mm(" in wrapper_call(codes)
    assert inductor_plate.host_fallbacks() == {}


# ---- convolutions ---------------------------------------------------------------------------------------------
# (name, input shape, weight shape, convolution arguments after the bias)
CONV_CASES = [
    ("conv1d strided", (2, 4, 9), (6, 4, 3), ([2], [1], [1], False, [0], 1)),
    ("conv2d grouped dilated", (2, 4, 7, 6), (6, 2, 3, 2), ([1, 2], [2, 1], [2, 1], False, [0, 0], 2)),
    ("conv2d depthwise", (1, 4, 5, 5), (4, 1, 3, 3), ([1, 1], [1, 1], [1, 1], False, [0, 0], 4)),
    ("conv3d", (1, 2, 4, 5, 4), (3, 2, 2, 3, 2), ([1, 2, 1], [0, 1, 1], [1, 1, 2], False, [0, 0, 0], 1)),
    ("conv_transpose2d grouped", (2, 4, 5, 5), (4, 3, 3, 3), ([2, 2], [1, 1], [2, 2], True, [1, 1], 2)),
    ("conv_transpose1d", (2, 3, 6), (3, 2, 4), ([3], [2], [1], True, [2], 1)),
    # OpInfo's sample: output_padding past the stride (below the dilation) in two dims
    (
        "conv_transpose3d output_padding",
        (2, 2, 4, 4, 4),
        (2, 2, 4, 5, 6),
        ([3, 2, 1], [1, 2, 3], [4, 4, 4], True, [2, 3, 1], 2),
    ),
]


def _out_channels(weight_shape, conv_args) -> int:
    transposed, groups = conv_args[3], conv_args[5]
    return weight_shape[1] * groups if transposed else weight_shape[0]


@pytest.mark.parametrize("case", CONV_CASES, ids=[c[0] for c in CONV_CASES])
def test_conv_decomposition_is_exact(case, monkeypatch):
    """Forward and backward of the im2col + GEMM rewrite equal aten's in float64 (on CPU: the device test off)."""
    monkeypatch.setattr(conv_gemm, "_on_plate", lambda *tensors: True)
    _, x_shape, w_shape, args = case
    torch.manual_seed(0)
    x, w = torch.randn(x_shape, dtype=torch.float64), torch.randn(w_shape, dtype=torch.float64)
    bias = torch.randn(_out_channels(w_shape, args), dtype=torch.float64)
    want = torch.ops.aten.convolution(x, w, bias, *args)
    torch.testing.assert_close(conv_gemm.convolution(x, w, bias, *args), want)
    grad = torch.randn_like(want)
    backward_args = (grad, x, w, [bias.numel()], *args, [True, True, True])
    for got, expected in zip(
        conv_gemm.convolution_backward(*backward_args), torch.ops.aten.convolution_backward(*backward_args), strict=True
    ):
        torch.testing.assert_close(got, expected)


def conv_variants(x1, w1, x2, w2, x3, w3, xt, wt):
    return (
        F.conv1d(x1, w1, stride=2, padding=1, dilation=2),
        F.conv2d(x2, w2, stride=1, padding=1, groups=4),  # depthwise
        F.conv3d(x3, w3, padding=1),
        F.conv_transpose2d(xt, wt, stride=2, padding=1, output_padding=1, groups=2),
    )


def test_conv_variants_run_on_the_simulator_in_the_default_mode():
    torch.manual_seed(0)
    args = (
        torch.randn(2, 3, 11),
        torch.randn(4, 3, 3),
        torch.randn(1, 4, 6, 6),
        torch.randn(4, 1, 3, 3),
        torch.randn(1, 2, 3, 4, 3),
        torch.randn(2, 2, 3, 3, 3),
        torch.randn(1, 4, 4, 4),
        torch.randn(4, 3, 3, 3),
    )
    out, codes, run, _ = compile_on_plate(conv_variants, *args)
    for got, want in zip(out, conv_variants(*args), strict=True):
        torch.testing.assert_close(got.cpu(), want, **TOL)
        assert got.stride() == want.stride()  # one image's batch stride too (test_torchinductor_opinfo compares it)
    call = wrapper_call(codes)
    assert "triton_tem_" in call and "extern_kernels." not in call and "torch.ops.aten." not in call
    assert any(launch.kernel.startswith("triton_tem_") and launch.time_ns > 0 for launch in run.launches)
    assert inductor_plate.host_fallbacks() == {}


def test_only_a_group_of_one_input_channel_goes_to_the_vector_unit():
    depthwise, multiplier = torch.empty(2, 16, 8, 8), torch.empty(16, 1, 5, 5)
    assert conv_gemm.on_vector_unit(depthwise, multiplier, 16, [4, 4])
    assert conv_gemm.on_vector_unit(depthwise, torch.empty(32, 1, 3, 3), 16, [8, 8])  # two outputs per channel
    assert not conv_gemm.on_vector_unit(depthwise, torch.empty(16, 4, 3, 3), 4, [8, 8])  # 4 channels per group
    assert not conv_gemm.on_vector_unit(depthwise, torch.empty(16, 16, 1, 1), 1, [8, 8])  # a plain convolution
    assert not conv_gemm.on_vector_unit(depthwise, torch.empty(16, 1, 9, 9), 16, [1, 1])  # 81 terms: too many


def test_a_depthwise_convolution_is_multiply_adds_on_the_vector_unit(monkeypatch):
    """Depthwise: each group's GEMM would be 1 x 9 on a 32x32 matrix unit, a program per channel. As multiply-adds
    of shifted windows it is one pointwise kernel, no template, faster on the modeled clock, and equal to the CPU."""
    torch.manual_seed(0)
    args = (torch.randn(2, 16, 8, 8), torch.randn(16, 1, 3, 3), torch.randn(16))

    def depthwise(x, w, b):
        return F.relu(F.conv2d(x, w, b, padding=1, groups=16))

    out, codes, run, _ = compile_on_plate(depthwise, *args)
    torch.testing.assert_close(out.cpu(), depthwise(*args), **TOL)
    call = wrapper_call(codes)
    assert "triton_tem_" not in call and "extern_kernels." not in call and inductor_plate.host_fallbacks() == {}
    torch._dynamo.reset()
    monkeypatch.setattr(conv_gemm, "on_vector_unit", lambda *a: False)
    gemm_out, gemm_codes, gemm_run, _ = compile_on_plate(depthwise, *args)
    assert "triton_tem_" in wrapper_call(gemm_codes)
    torch.testing.assert_close(gemm_out.cpu(), depthwise(*args), **TOL)
    assert run.time_ns < gemm_run.time_ns


def test_a_template_fuses_only_its_prologues_and_epilogues():
    """A complex convolution is GEMMs of the real and imaginary parts: Inductor fused the first GEMM's template
    horizontally with an independent node of the other part, then generated that node in the template's ranges as
    an epilogue (CantSplit: 1 not divisible by 2)."""
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(1, 1, 2, dtype=torch.complex64)
    x = torch.randn(2, 4, dtype=torch.complex64)

    def model(conv, x):
        return conv(x.conj().view(2, 1, 2, 2))

    with config.patch(fallback_on_compile_error=False):
        out, codes, _, _ = compile_on_plate(functools.partial(model, copy.deepcopy(conv).to("plate")), x)
    torch.testing.assert_close(out.cpu(), model(conv, x), **TOL)
    assert "triton_tem_" in wrapper_call(codes)


def strided_grouped_conv(x, w, b):
    return F.conv2d(x, w, b, stride=2, padding=1, groups=2).relu().square().sum()


def test_conv_backward_runs_on_the_simulator_in_the_default_mode():
    torch.manual_seed(0)
    x, w, b = (torch.randn(2, 4, 6, 6), torch.randn(6, 2, 3, 3), torch.randn(6))
    cpu = [t.clone().requires_grad_() for t in (x, w, b)]
    strided_grouped_conv(*cpu).backward()
    plate = [t.to("plate").requires_grad_() for t in (x, w, b)]
    with torch._inductor.config.patch(force_disable_caches=True), inductor_plate.collect_profiles() as run:
        loss = torch.compile(strided_grouped_conv)(*plate)
        loss.backward()
    torch.testing.assert_close(loss.cpu(), strided_grouped_conv(x, w, b), **TOL)
    for got, want in zip(plate, cpu, strict=True):
        torch.testing.assert_close(got.grad.cpu(), want.grad, **TOL)
    assert sum(launch.kernel.startswith("triton_tem_") for launch in run.launches) >= 3  # forward, dx, dw
    assert inductor_plate.host_fallbacks() == {}


def test_host_ops_at_a_graph_break_count_as_eager_ops_of_the_compiled_function():
    """A case an op of plate's eager table sends to the host from Python (Call.on_host: here an unsigned dtype)
    at a graph break is a host fallback of the compiled function, as the boxed fallback of an op without a plate
    kernel is (tests/test_inductor_host_op_attribution.py has the other cases)."""

    def fn(x):
        y = (x.sin() * 100).abs().to(torch.uint16)  # compiled: plate kernels
        # a data-dependent shape: Dynamo breaks the graph; the eager kernel sends uint16 to the host
        idx = torch._unique(y)[0]
        return idx.sum() + 1  # compiled again

    x = torch.randn(16)
    inductor_plate.reset_host_fallbacks()
    out, _, _, (plate_x,) = compile_on_plate(fn, x)
    torch.testing.assert_close(out.cpu(), fn(x))
    assert torch.plate.host_ops()["aten._unique"] >= 1  # the device counts it
    assert inductor_plate.host_fallbacks() == {"eager op aten._unique": 1}


def conv_and_grads(x, w, b):
    return F.conv2d(x, w, b, padding=1).square().sum()


def test_conv_with_symbolic_kernel_sizes_is_guarded_and_runs_as_gemms():
    """dynamic=True with the weight a graph input (not a parameter): its kernel sizes are symbols. The
    decompositions guard them to their values (as Inductor's conv lowering does) instead of leaving forward and
    backward to the extern aten kernels, which run on the host; another kernel size recompiles."""
    torch.manual_seed(0)
    compiled = torch.compile(conv_and_grads, dynamic=True)
    for kernel in (3, 5):
        x, w, b = torch.randn(2, 4, 7, 7), torch.randn(6, 4, kernel, kernel), torch.randn(6)
        cpu = [t.clone().requires_grad_() for t in (x, w, b)]
        conv_and_grads(*cpu).backward()
        plate = [t.to("plate").requires_grad_() for t in (x, w, b)]
        with torch._inductor.config.patch(force_disable_caches=True):
            loss = compiled(*plate)
            loss.backward()
        torch.testing.assert_close(loss.cpu(), conv_and_grads(x, w, b), **TOL)
        for got, want in zip(plate, cpu, strict=True):
            torch.testing.assert_close(got.grad.cpu(), want.grad, **TOL)
    assert inductor_plate.host_fallbacks() == {}


class ResidualDown(torch.nn.Module):
    """conv, batchnorm, relu; a strided conv and batchnorm with a 1x1 strided shortcut; global average pool; linear."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(16)
        self.shortcut = torch.nn.Conv2d(8, 16, 1, stride=2, bias=False)
        self.head = torch.nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(self.bn(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(x)) + self.shortcut(x))
        return self.head(F.adaptive_avg_pool2d(y, 1).flatten(1))


def test_square_images_under_dynamic_shapes_run_as_gemms():
    """dynamic=True with square images: height and width are one symbol s, so a convolution's output columns
    number s*s. Splitting them back into images by a reshape left ``s**2 // s`` as the width (unsimplified), on
    which the next convolution's lowering failed (ValueRangeError); the product is viewed back instead. Batch
    sizes 2 and 3 share one graph, forward and backward match the CPU."""
    torch.manual_seed(0)
    net = ResidualDown().eval()
    plate_net = copy.deepcopy(net).to("plate")
    compiled = torch.compile(plate_net, dynamic=True)
    for batch in (2, 3):
        x = torch.randn(batch, 3, 8, 8)
        with torch._inductor.config.patch(force_disable_caches=True):
            out = compiled(x.to("plate"))
        torch.testing.assert_close(out.cpu(), net(x), **TOL)
    out.square().sum().backward()
    net(x).square().sum().backward()
    for (name, want), got in zip(net.named_parameters(), plate_net.parameters(), strict=True):
        torch.testing.assert_close(got.grad.cpu(), want.grad, **TOL, msg=lambda m, n=name: f"grad {n}: {m}")
    assert inductor_plate.host_fallbacks() == {}


def test_a_convolution_after_a_strided_one_gathers_once_under_dynamic_shapes():
    """Under dynamic=True a strided convolution's output size is a floor division, ``(s - 1) // 2 + 1``. The GEMM
    operand made from the gather by reshape and permute then took two pointwise kernels per convolution (the gather,
    then a full copy of it as the matrix: Inductor's view of it is an index computation under such sizes) and no
    prologue fused into the template: 9 launches. Gathered once in the permuted order and viewed (as_strided): 7
    (pad, gather, template twice; batchnorm-relu; the last convolution's output laid out), the CPU's values at
    batches 2 and 3 from one graph."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False),
        torch.nn.BatchNorm2d(16),
        torch.nn.ReLU(),
        torch.nn.Conv2d(16, 16, 3, padding=1, bias=False),
    ).eval()
    compiled = torch.compile(copy.deepcopy(net).to("plate"), dynamic=True)
    with torch._inductor.config.patch(force_disable_caches=True), torch.no_grad():
        for batch in (2, 3):
            x = torch.randn(batch, 8, 16, 16)
            torch.testing.assert_close(compiled(x.to("plate")).cpu(), net(x), **TOL)
        with inductor_plate.collect_profiles() as profile:
            compiled(x.to("plate"))
    assert len(profile.launches) == 7
    assert inductor_plate.host_fallbacks() == {}


def _linear_of_zeros(x, w, b):
    return F.linear(torch.zeros_like(x), w, b) + x


def test_a_constant_operand_of_a_gemm_is_not_fused_as_a_prologue():
    """A GEMM operand that reads no buffer (zeros_like: DETR's first decoder queries) was fused into the template as a
    prologue, generated as a rank-1 constant broadcast to the 2-dim tile, which Triton refuses to compile: the
    frame ran on the host. It stays its own kernel: the CPU's values, no host fallback."""
    x, w, b = torch.randn(16, 32), torch.randn(32, 32), torch.randn(32)
    inductor_plate.reset_host_fallbacks()
    with torch._inductor.config.patch(force_disable_caches=True):
        out = torch.compile(_linear_of_zeros)(x.to("plate"), w.to("plate"), b.to("plate"))
    torch.testing.assert_close(out.cpu(), _linear_of_zeros(x, w, b), **TOL)
    assert inductor_plate.host_fallbacks() == {}
