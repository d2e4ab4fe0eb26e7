"""torch.compile(mode="max-autotune") on plate: products Inductor's own lowering left without a plate choice.

Each case failed before on plate (NoValidChoicesError, an assertion in Inductor's lowering, a failed
decomposition or a host kernel); here it compiles to plate kernels, matches the CPU, and runs nothing on
the host. Also the benchmarked fusion decisions of max-autotune (benchmark_epilogue_fusion). The compiled cases
run on plate-mini with small shapes."""

from __future__ import annotations

import pytest
import torch
from torch._inductor.utils import run_and_get_code

import inductor_plate

TOL = {"rtol": 1e-4, "atol": 1e-4}


@pytest.fixture(scope="module", autouse=True)
def mini(plate_mini_module):
    return plate_mini_module


pytestmark = pytest.mark.usefixtures("fresh_compile")


def compile_on_plate(fn, *args, max_autotune: bool = True, **inductor_config):
    """(out, codes) of the compiled ``fn`` on plate copies of ``args``, caches off."""
    plate_args = [a.to("plate") for a in args]
    patch = {"max_autotune": max_autotune, "force_disable_caches": True, **inductor_config}
    with torch._inductor.config.patch(patch):
        return run_and_get_code(torch.compile(fn), *plate_args)


def call_of(codes) -> str:
    return "".join(code.partition("def call(")[2] for code in codes)


@pytest.mark.parametrize("max_autotune", [False, True], ids=["default", "max-autotune"])
def test_empty_products_are_plate_kernels(max_autotune):
    """An empty M, N or K: no template takes it and Inductor's aten kernel ran on the host (counted)."""
    bias = torch.randn(8)
    cases = [
        (torch.mm, (torch.randn(8, 0), torch.randn(0, 8))),  # K == 0: zeros
        (lambda x, a, b: torch.addmm(x, a, b), (torch.randn(100), torch.randn(0, 10), torch.randn(10, 100))),
        (lambda x, a, b: torch.addmm(x, a, b, beta=2), (bias, torch.randn(8, 0), torch.randn(0, 8))),
        (lambda x, a, b: torch.addmm(x, a, b, beta=0), (bias * float("nan"), torch.randn(8, 0), torch.randn(0, 8))),
        (torch.bmm, (torch.randn(2, 3, 0), torch.randn(2, 0, 5))),
    ]
    for fn, args in cases:
        torch._dynamo.reset()
        out, codes = compile_on_plate(fn, *args, max_autotune=max_autotune)
        torch.testing.assert_close(out.cpu(), fn(*args))
        assert "extern_kernels." not in call_of(codes)
    assert inductor_plate.host_fallbacks() == {}


def test_convolution_of_an_empty_batch_compiles():
    """The im2col GEMMs of an empty batch: a reshape with -1 could not infer its size and the compile failed."""
    x, weight = torch.randn(0, 4, 5, 5), torch.randn(6, 4, 3, 3)
    out, _ = compile_on_plate(lambda x, w: torch.nn.functional.conv2d(x, w), x, weight)
    assert out.shape == (0, 6, 3, 3)
    assert inductor_plate.host_fallbacks() == {}


@pytest.mark.parametrize("max_autotune", [False, True], ids=["default", "max-autotune"])
@pytest.mark.parametrize("op", ["mm", "bmm"])
def test_products_with_out_dtype_run_as_templates(op, max_autotune):
    """Inductor's bmm lowering asserted that out_dtype is only for CUDA or XPU; its mm lowering offered only the
    aten kernel, which plate leaves out: NoValidChoicesError."""
    torch.manual_seed(0)
    batch = (2,) if op == "bmm" else ()
    a, b = torch.randn(*batch, 24, 40, dtype=torch.float16), torch.randn(*batch, 40, 20, dtype=torch.float16)
    product = getattr(torch, op)
    out, codes = compile_on_plate(lambda a, b: product(a, b, out_dtype=torch.float32), a, b, max_autotune=max_autotune)
    assert out.dtype == torch.float32
    torch.testing.assert_close(out.cpu(), product(a.float(), b.float()), **TOL)
    assert f"triton_tem_fused_{op}" in codes[0] and "extern_kernels." not in call_of(codes)
    assert inductor_plate.host_fallbacks() == {}


def test_long_k_product_decomposes_k_under_max_autotune():
    """K >= 64 * max(M, N): Inductor offers decompose-k only (no mm template), and plate had no decompose-k
    heuristic: no choice at all (NoValidChoicesError). Now the splits are bmm templates and a sum."""
    torch.manual_seed(0)
    a, b = torch.randn(16, 1024), torch.randn(1024, 16)
    out, codes = compile_on_plate(
        lambda a, b: a @ b, a, b, max_autotune_gemm_backends="TRITON", **{"triton.num_decompose_k_splits": 2}
    )
    torch.testing.assert_close(out.cpu(), a @ b, rtol=1e-4, atol=1e-3)
    assert "decompose_k" in codes[0] and "extern_kernels." not in call_of(codes)
    assert inductor_plate.host_fallbacks() == {}


def test_no_gemm_backend_leaves_no_choice_as_on_any_device():
    """max_autotune_gemm_backends="" asks for no backend: plate read it as "TRITON" and compiled anyway."""
    a, b = torch.zeros(2, 2), torch.zeros(2, 2)
    with pytest.raises(torch._dynamo.exc.BackendCompilerFailed, match="NoValidChoicesError"):
        compile_on_plate(lambda a, b: a @ b, a, b, max_autotune_gemm_backends="")


def test_long_prime_k_product_falls_back_to_the_mm_template():
    """K >= 64 * max(M, N) and prime: Inductor offers decompose-k only, and no K split divides K, so it had no
    choice at all on plate (NoValidChoicesError; CUDA has the aten kernel). Now the mm template alone."""
    torch.manual_seed(0)
    a, b = torch.randn(16, 1031), torch.randn(1031, 16)
    out, codes = compile_on_plate(lambda a, b: a @ b, a, b, max_autotune_gemm_backends="TRITON")
    torch.testing.assert_close(out.cpu(), a @ b, rtol=1e-4, atol=1e-3)
    assert "triton_tem_fused_mm" in codes[0] and "extern_kernels." not in call_of(codes)
    assert inductor_plate.host_fallbacks() == {}


def test_benchmarked_epilogue_fusion_weighs_an_in_place_epilogue_by_modeled_time():
    """benchmark_epilogue_fusion times the unfused relu, which writes its input in place, as its run minus the
    copies of its arguments (Inductor's clone_args). Those copies launch nothing: ranked as a host op, they made
    the relu's time negative and every such fusion a slowdown. At zero cost the relu fuses into the template."""
    a, b = torch.rand(128, 128), torch.rand(128, 128)
    out, codes = compile_on_plate(
        lambda a, b: (a @ b).relu(),
        a,
        b,
        benchmark_epilogue_fusion=True,
        max_autotune_gemm_backends="TRITON",
        **{"test_configs.max_mm_configs": 4},
    )
    torch.testing.assert_close(out.cpu(), (a @ b).relu(), **TOL)
    assert call_of(codes).count(".run(") == 1


def test_best_first_keeps_the_configurations_and_orders_them_by_estimate():
    from types import SimpleNamespace

    from inductor_plate.templates import best_first

    def conf(m, n, k, stages=2, warps=4):
        return SimpleNamespace(kwargs={"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k}, num_stages=stages, num_warps=warps)

    offered = [conf(16, 32, 32), conf(64, 64, 32), conf(128, 128, 64, warps=8), conf(32, 32, 32)]
    estimate = {(16, 32, 32, 2, 4): 9.0, (64, 64, 32, 2, 4): 3.0, (128, 128, 64, 2, 8): 1.0, (32, 32, 32, 2, 4): 3.0}
    ordered = best_first(offered, lambda *blocks: estimate[blocks])
    assert [c.kwargs["BLOCK_M"] for c in ordered] == [128, 64, 32, 16]  # ties keep the offered order


def test_max_autotune_offers_the_cost_models_best_configuration_first(monkeypatch):
    """Inductor benchmarks the choices in the order offered, and the driver simulates one only while its estimate is
    within PLATE_AUTOTUNE_MARGIN of the selection's best so far: offered small tiles first, each better one was
    simulated. Best first, the same configurations (the same winner) and the others pruned by the model."""
    from inductor_plate import gemm_config, policy, templates
    from triton_plate_backend import driver

    seen = []
    best_first = templates.best_first

    def recording(configs, estimate):
        configs = list(configs)
        ordered = best_first(configs, estimate)
        seen.append(([estimate(*_blocks(c)) for c in configs], [estimate(*_blocks(c)) for c in ordered]))
        return ordered

    monkeypatch.setattr(templates, "best_first", recording)
    pruned = len(driver.PRUNED)
    a, b = torch.rand(8, 64, 64), torch.rand(8, 64, 256)
    out, codes = compile_on_plate(torch.bmm, a, b, max_autotune_gemm_backends="TRITON")
    torch.testing.assert_close(out.cpu(), torch.bmm(a, b), **TOL)
    assert "triton_tem" in call_of(codes)
    (offered, ordered), *_ = seen
    assert len(offered) > 2 and offered != ordered and ordered == sorted(offered)
    problem = gemm_config.GemmProblem(m=64, n=256, k=64, batch=8, dtype="float32")
    assert ordered[0] == min(
        gemm_config.estimate(policy.machine(), problem, c)
        for c in gemm_config.candidates(policy.machine(), policy.fusion_sram_bytes())
    )
    assert len(driver.PRUNED) > pruned  # the model skipped simulating some configuration


def _blocks(conf) -> tuple:
    kw = conf.kwargs
    return kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"], conf.num_stages, conf.num_warps
