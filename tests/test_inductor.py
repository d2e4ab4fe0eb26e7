"""inductor_plate, the fast subset: registration, shims, the device interface, op overrides, the
benchmarker, the policy, one small compile against CPU eager, the profile collector and the
fallback of an op plate cannot compile. The model suite is tests/test_models.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch
import triton
from entry_points import declare_entry_point
from torch._dynamo import device_interface as dynamo_devices
from torch._inductor.codegen import common as inductor_common
from torch._inductor.exc import InductorError
from torch._inductor.runtime.hints import DeviceProperties
from torch._inductor.utils import run_and_get_code
from torch._subclasses import FakeTensorMode

import inductor_plate
from inductor_plate import benchmarker, config, fallback, heuristics, policy, templates
from inductor_plate.device_interface import PlateInterface
from inductor_plate.op_overrides import PlateDeviceOpOverrides
from inductor_plate.scheduling import PlateScheduling
from inductor_plate.wrapper import NoCppWrapper, PlateWrapperCodegen
from triton_plate_backend import compiler as plate_compiler
from triton_plate_backend import shims
from triton_plate_backend.driver import PLATE_ARCH, PlateDriver
from triton_plate_backend.errors import CompileError
from triton_plate_backend.torch_device import compiler_hooks

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module", autouse=True)
def mini(plate_mini_module):
    """Every test here runs on the plate-mini machine (4 domains x 2 cores)."""
    return plate_mini_module


pytestmark = pytest.mark.usefixtures("fresh_compile")


# ---- registration -----------------------------------------------------------------------------------
def test_registration_is_complete_and_idempotent():
    inductor_plate.register()
    inductor_plate.register()
    assert inductor_plate.registered()
    assert dynamo_devices.get_interface_for_device("plate") is PlateInterface
    assert dynamo_devices.get_interface_for_device(torch.device("plate", 0)) is PlateInterface
    assert inductor_common.get_scheduling_for_device("plate") is PlateScheduling
    assert inductor_common.get_wrapper_codegen_for_device("plate") is PlateWrapperCodegen
    assert inductor_common.get_wrapper_codegen_for_device("plate", cpp_wrapper=True) is NoCppWrapper
    assert inductor_common.get_custom_backend_config_for_device("plate") is config
    assert isinstance(inductor_common.get_custom_backend_pass_for_device("plate"), fallback.EagerOpsPass)
    assert isinstance(inductor_common.get_device_op_overrides("plate"), PlateDeviceOpOverrides)
    from torch._inductor.runtime.benchmarking import _BENCHMARK_DISPATCH

    assert _BENCHMARK_DISPATCH["plate"] is benchmarker.benchmark_modeled


def test_the_cache_key_follows_what_plate_registers_on_the_device():
    """A kernel registered at PrivateUse1 changes what tracing records (it takes an op off its composite's
    autograd), so a graph cached before a registration changed must not be served after it."""
    before = fallback.EagerOpsPass().uuid()
    library = torch.library.Library("plate_cache_key_probe", "DEF")
    try:
        library.define("twice(Tensor x) -> Tensor")
        library.impl("twice", lambda x: x + x, "PrivateUse1")
        assert fallback.EagerOpsPass().uuid() != before
    finally:
        library._destroy()
    assert fallback.EagerOpsPass().uuid() == before


def test_privateuse1_discovery_names():
    """Inductor's init_backend_registration reads these four names from torch.plate; answering
    CppWrapperCodegen with None stops it from re-registering plate without config and pass."""
    assert inductor_plate.Scheduling is PlateScheduling
    assert inductor_plate.PythonWrapperCodegen is PlateWrapperCodegen
    assert inductor_plate.CppWrapperCodegen is None and inductor_plate.WrapperFxCodegen is None
    inductor_common.init_backend_registration.__wrapped__()  # run the discovery again: nothing changes
    assert inductor_common.get_custom_backend_config_for_device("plate") is config


def test_torch_plate_answers_inductor_discovery():
    assert torch.plate.__dict__.get("__getattr__") is not None
    assert torch.plate.Scheduling is PlateScheduling
    assert torch.plate.CppWrapperCodegen is None


def test_discovery_imports_the_integration_through_its_entry_point(tmp_path):
    """torch.compile on plate tensors needs no `import inductor_plate`: Inductor's discovery asks
    torch.plate, whose hook loads the entry points of its group (the fake dist-info stands for the
    installed package's metadata). With no entry point, the answer is 'none' and nothing is imported."""
    script = textwrap.dedent(
        """
        import sys
        import warnings
        import torch
        import triton_plate_backend.torch_device
        from triton_plate_backend.torch_device import compiler_hooks

        group = compiler_hooks.ENTRY_POINT_GROUP
        compiler_hooks.ENTRY_POINT_GROUP = "no.such.group"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert getattr(torch.plate, "Scheduling", None) is None
            assert getattr(torch.plate, "PythonWrapperCodegen", None) is None
        said = [str(w.message) for w in caught if "no.such.group" in str(w.message)]
        assert len(said) == 1 and "egg-info" in said[0], said
        assert "inductor_plate" not in sys.modules
        compiler_hooks.ENTRY_POINT_GROUP = group

        from torch._inductor.codegen import common
        common.init_backend_registration()
        from inductor_plate.scheduling import PlateScheduling
        from inductor_plate import config
        assert common.get_scheduling_for_device("plate") is PlateScheduling
        assert common.get_custom_backend_config_for_device("plate") is config
        print("ok")
        """
    )
    r = _fresh_python(tmp_path, script)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr


def _fresh_python(tmp_path, script: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run `script` in a fresh interpreter that sees this checkout and a fake dist-info declaring the
    integration's entry point (what the installed package's metadata says)."""
    declare_entry_point(tmp_path, compiler_hooks.ENTRY_POINT_GROUP, "inductor_plate")
    full_env = {**os.environ, **(env or {}), "PYTHONPATH": os.pathsep.join([REPO, str(tmp_path)])}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=REPO,
        timeout=300,
    )


def test_dynamo_device_question_imports_the_integration_in_a_fresh_process(tmp_path):
    """Dynamo's get_interface_for_device("plate") as a process's first question (Inductor's autotuning
    subprocess asks it so) finds plate's interface: torch's autoload loaded only the device, whose hook
    asks the integration's entry point (it raised NotImplementedError before). `import torch` still
    imports neither torch._dynamo nor the integration; other devices still raise."""
    r = _fresh_python(
        tmp_path,
        """
        import sys
        import torch
        assert "torch._dynamo" not in sys.modules and "inductor_plate" not in sys.modules
        from torch._dynamo.device_interface import get_interface_for_device
        assert "inductor_plate" not in sys.modules
        interface = get_interface_for_device("plate")  # the first question, before anything imports the integration
        from inductor_plate.device_interface import PlateInterface
        assert interface is PlateInterface
        assert get_interface_for_device(torch.device("plate", 0)) is PlateInterface
        assert get_interface_for_device("plate:0") is PlateInterface
        try:
            get_interface_for_device("nosuchdevice")
        except NotImplementedError as e:
            assert "nosuchdevice" in str(e)
        else:
            raise AssertionError("an unknown device got an interface")
        import inductor_plate
        assert inductor_plate.registered()
        print("ok")
        """,
    )
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr


def test_max_autotune_in_a_subprocess_tunes_a_plate_mm(tmp_path):
    """max_autotune with autotune_in_subproc: the tuning child benchmarks the plate mm templates (it
    failed before with "No interface for device plate", leaving no valid choice). 32x32 on plate-mini."""
    r = _fresh_python(
        tmp_path,
        """
        import torch
        a, b = torch.randn(32, 32), torch.randn(32, 32)
        patch = {"max_autotune": True, "autotune_in_subproc": True, "force_disable_caches": True}
        with torch._inductor.config.patch(patch):
            out = torch.compile(torch.mm)(a.to("plate"), b.to("plate"))
        torch.testing.assert_close(out.cpu(), a @ b, rtol=1e-4, atol=1e-4)
        print("ok")
        """,
        env={"PLATE_MACHINE": "plate-mini"},
    )
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr
    assert "SubProcess AUTOTUNE" in r.stdout + r.stderr, r.stderr  # the choices were benchmarked in the child


# ---- shims ---------------------------------------------------------------------------------------------
def test_shims_applied_and_named():
    status = shims.apply()
    assert set(status) == {s.name for s in shims.SHIMS}
    assert all(v in ("applied", "not needed") for v in status.values())
    for shim in shims.SHIMS:
        assert re.fullmatch(r"patches/(pytorch|triton)/[a-z0-9-]+\.patch", shim.patch), shim.patch
        assert os.path.exists(os.path.join(REPO, shim.patch)), shim.patch
        assert shim.when in shims.WHEN, shim.when
    assert shims.install("inductor") == {s.name: status[s.name] for s in shims.SHIMS if s.when == "inductor"}
    from torch._inductor import utils

    assert "plate" in utils.GPU_TYPES and utils.is_gpu("plate")
    from torch.utils._triton import has_triton

    assert has_triton()


def test_do_bench_times_a_few_runs_on_plate():
    """triton.testing.do_bench fills `rep` ms of device time; on plate's modeled clock a tiny kernel
    would be simulated thousands of times. @triton.autotune(warmup=, rep=) calls it directly
    (shims._do_bench_on_modeled_clock): it must time a few runs, as the driver's benchmarker does."""
    import triton.language as tl

    from triton_plate_backend import knobs

    @triton.jit
    def add_one(x_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.arange(0, BLOCK)
        tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) + 1, mask=offsets < n)

    shims.apply()
    x = torch.zeros(16, device="plate")
    runs = []

    def fn():
        runs.append(1)
        add_one[(1,)](x, 16, BLOCK=16)

    assert triton.testing.do_bench(fn, warmup=10, rep=20) > 0
    assert 1 <= len(runs) <= 1 + knobs.bench_reps()


def test_host_tma_is_offered_on_plate():
    """User kernels taking TensorDescriptor arguments inside torch.compile (shims._device_supports_tma)."""
    from torch.utils._triton import has_triton_tensor_descriptor_host_tma

    shims.apply()
    assert has_triton_tensor_descriptor_host_tma()


def test_dynamo_skips_the_plate_backend():
    """A kernel launched from a frame Dynamo resumes must not have the simulator traced as user code."""
    from torch._dynamo import trace_rules

    from triton_plate_backend import launcher
    from triton_plate_backend.sim import executor

    assert trace_rules.check_file(executor.__file__).skipped
    assert trace_rules.check_file(launcher.__file__).skipped


def test_is_big_gpu_follows_the_gemm_policy():
    from torch._inductor import utils

    assert utils.is_big_gpu(torch.device("plate", 0)) is True
    with config.patch(gemm_templates="never"):
        assert utils.is_big_gpu(torch.device("plate", 0)) is False
    with config.patch(gemm_templates="sometimes"), pytest.raises(Exception, match="gemm_templates"):
        policy.use_gemm_templates()


# ---- the device interface --------------------------------------------------------------------------------
def test_device_properties_come_from_the_machine(mini):
    m = mini.machine
    props = PlateInterface.get_device_properties(torch.device("plate", 0))
    assert props.multi_processor_count == m.total_cores == 8
    assert props.warp_size == 32 and props.max_threads_per_block == 1024
    assert props.regs_per_multiprocessor == m.core.scalar_registers * props.max_threads_per_multi_processor
    assert props.shared_memory_per_block_optin == props.sram_bytes == m.core.sram_bytes
    assert (props.major, props.minor) == (PLATE_ARCH, 0) and "plate-mini" in props.name
    assert PlateInterface.Worker.get_device_properties() == props
    assert dynamo_devices.caching_worker_device_properties["plate"][0] == props


def test_compute_capability_is_the_triton_target_arch():
    assert PlateInterface.get_compute_capability() == PlateDriver().get_current_target().arch


def test_interface_runtime_methods():
    assert PlateInterface.is_available() and PlateInterface.device_count() >= 1
    assert PlateInterface.is_triton_capable() and PlateInterface.is_bf16_supported()
    PlateInterface.raise_if_triton_unavailable()
    assert PlateInterface.exchange_device(0) == 0 and PlateInterface.maybe_exchange_device(0) == 0
    with PlateInterface.device(0):
        assert PlateInterface.current_device() == 0
    stream = PlateInterface.current_stream()
    assert isinstance(stream, torch.Stream) and stream.device.type == "plate"
    assert PlateInterface.get_raw_stream(0) == stream.stream_id
    x = torch.ones(256, device="plate")
    assert PlateInterface.memory_allocated() >= x.numel() * 4
    PlateInterface.synchronize()
    start, end = PlateInterface.Event(enable_timing=True), PlateInterface.Event(enable_timing=True)
    assert isinstance(start, torch.Event)
    start.record()
    end.record()
    assert start.elapsed_time(end) == 0.0  # nothing launched: the modeled clock stood still


def test_op_overrides_are_runnable_python():
    o = PlateDeviceOpOverrides()
    scope = {"torch": torch}
    line = o.import_get_raw_stream_as("get_raw_stream")
    assert "\n" not in line
    exec(line, scope)
    assert scope["get_raw_stream"](0) == torch.plate.current_stream(0).stream_id
    exec(o.set_device(0), scope)
    exec(o.synchronize(), scope)
    exec(f"with {o.device_guard(0)}: pass", scope)
    assert eval(o.current_stream(), scope).device.type == "plate"


# ---- benchmarker and policy --------------------------------------------------------------------------------
def test_benchmarker_returns_modeled_time_ranks_host_ops_last_and_charges_copies_nothing():
    import triton.language as tl

    @triton.jit
    def double(x_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) * 2, mask=offsets < n)

    x = torch.ones(1024, device="plate")
    ms = benchmarker.benchmark_modeled(None, lambda: double[(4,)](x, 1024, BLOCK=256))
    profile = torch.plate.last_profile()
    assert ms == pytest.approx(profile.time_ns / 1e6)
    values = torch.tensor([0.0, 1.0, 0.0, 2.0], device="plate")
    host = benchmarker.benchmark_modeled(None, lambda: torch.fft.rfft(values))  # a host op (no plate FFT yet)
    assert host == config.extern_choice_ms and f"{host:.4f} ms" == "host, not modeled ms"  # the autotune log's line
    # No launch and no host op (Inductor's clone_args of a kernel's in-place arguments): nothing the model charges.
    # Inductor subtracts it from the kernel's time when it weighs a fusion; the host rank there made that negative.
    copies = benchmarker.benchmark_modeled(None, lambda: (x.clone(), x.cpu()))
    assert copies == 0.0 and not isinstance(copies, benchmarker.HostTime)


def test_policy_budgets_follow_the_sram(mini):
    sram = mini.machine.core.sram_bytes
    assert policy.fusion_sram_bytes() == sram // 2
    assert policy.persistent_reduction_sram_bytes() == sram // 4
    with config.patch(max_fusion_sram_bytes=4096):
        assert policy.fusion_sram_bytes() == 4096
    for c in templates.plate_gemm_configs(policy.fusion_sram_bytes(), mini.machine.core.matrix.dim):
        assert (c.block_m % 32 == 0 or 32 % c.block_m == 0) and c.block_n % 32 == 0
        assert templates.sram_needed(c.block_m, c.block_n, c.block_k, c.num_stages) <= sram // 2
    assert templates.plate_gemm_configs(0, 32) == []


def test_culprits_name_the_op_on_the_failing_line(tmp_path):
    kernel = tmp_path / "kernel.py"
    kernel.write_text("tmp1 = tl_math.sin(tmp0)\ntmp2, tmp3 = triton_helpers.frexp(tmp1)\n")
    error = CompileError(f"[codegen] tt.extern_elementwise at {kernel}:2:38: no PLATE equivalent")
    ops = ("aten.add.Tensor", "aten.frexp.Tensor", "aten.sin.default")
    assert fallback.culprits(ops, error) == ("aten.frexp.Tensor",)
    assert set(fallback.culprits(ops, CompileError("no location"))) <= set(ops)
    assert fallback.is_plate_compile_failure(RuntimeError("x")) is False
    assert fallback.is_plate_compile_failure(error)


# ---- compiling ---------------------------------------------------------------------------------------------
def softmax_residual(x, y):
    return torch.softmax(x * 2.0, dim=-1) + y.sin()


def test_compile_matches_eager_and_profiles_launches():
    x, y = torch.randn(8, 64), torch.randn(8, 64)
    compiled = torch.compile(softmax_residual)
    out, codes = run_and_get_code(compiled, x.to("plate"), y.to("plate"))
    torch.testing.assert_close(out.cpu(), softmax_residual(x, y), rtol=1e-5, atol=1e-5)
    assert any("plate_guard_kernel(" in code and "plate_check_kernels(globals())" in code for code in codes)
    with inductor_plate.collect_profiles() as run:
        compiled(x.to("plate"), y.to("plate"))
    assert run.launches and all(launch.kernel.startswith("triton_") for launch in run.launches)
    assert run.time_ns == pytest.approx(sum(k.time_ns for k in run.by_kernel()))
    assert run.traffic_by_domain().sum() > 0 and "launches" in run.report()


def test_a_cpp_wrapper_is_refused_with_the_reason(tmp_path):
    """cpp_wrapper and AOTInductor ask for a C++ wrapper, which plate has none of: Inductor's error for a C++ wrapper
    it cannot generate says so (not an assertion that the device is unsupported)."""
    x = torch.randn(8, 64).to("plate")
    with torch._inductor.config.patch(cpp_wrapper=True, force_disable_caches=True):
        with pytest.raises(InductorError, match="CppWrapperCodegenError: .*plate has no C\\+\\+ wrapper"):
            torch.compile(torch.sin)(x)
    program = torch.export.export(torch.nn.Linear(64, 4).to("plate"), (x,))
    with pytest.raises(InductorError, match="CppWrapperCodegenError: .*AOTInductor"):
        torch._inductor.aoti_compile_and_package(program, package_path=str(tmp_path / "linear.pt2"))
    torch.testing.assert_close(torch.compile(program.module())(x).cpu(), program.module()(x).cpu())


def test_graph_buffers_are_allocated_with_the_per_device_allocator():
    x, y = torch.randn(8, 64), torch.randn(8, 64)
    with torch._inductor.config.patch(force_disable_caches=True):
        out, codes = run_and_get_code(torch.compile(softmax_residual), x.to("plate"), y.to("plate"))
    torch.testing.assert_close(out.cpu(), softmax_residual(x, y), rtol=1e-5, atol=1e-5)
    assert any("empty_strided_plate((8, 64), (64, 1), torch.float32)" in code for code in codes)
    assert not any(" = empty_strided(" in code for code in codes)
    got = inductor_plate.wrapper.empty_strided_plate((2, 3), (1, 2), torch.float16)
    assert (got.device.type, got.dtype, got.stride()) == ("plate", torch.float16, (1, 2))


@pytest.mark.parametrize(
    ("numel", "cores", "block"), [(16384, 8, 2048), (12800, 8, 2048), (100, 8, 16), (1 << 20, 8, 4096)]
)
def test_wave_block_gives_each_core_one_program_up_to_the_largest_block(numel, cores, block):
    assert heuristics.wave_block(numel, cores) == block


def test_pointwise_kernels_offer_the_one_wave_block():
    x = torch.randn(16384)
    with torch._inductor.config.patch(force_disable_caches=True):
        out, (code,) = run_and_get_code(torch.compile(lambda t: torch.relu(t) * 2.0), x.to("plate"))
    torch.testing.assert_close(out.cpu(), torch.relu(x) * 2.0)
    assert "from inductor_plate import heuristics as triton_heuristics" in code
    assert "'plate_cost_model_configs': True" in code  # the knob travels with the kernel, to compile workers too
    size_hints = {"x": 16384}
    props = PlateInterface.get_device_properties()
    meta = {"signature": {"in_ptr0": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32", "XBLOCK": "constexpr"}}
    meta["device"] = DeviceProperties.create(torch.device("plate"))
    blocks = [c.kwargs["XBLOCK"] for c in heuristics.pointwise_configs(size_hints, meta, inductor_meta={})]
    assert heuristics.wave_block(16384, props.multi_processor_count) in blocks and len(blocks) == 3


def test_halved_shrinks_the_largest_program_block_only():
    c = triton.Config({"XBLOCK": 16, "YBLOCK": 32, "R0_BLOCK": 64}, num_warps=4)
    (smaller,) = heuristics.halved([c])
    assert smaller.kwargs == {"XBLOCK": 16, "YBLOCK": 16, "R0_BLOCK": 64} and smaller.num_warps == 4
    assert c.kwargs["YBLOCK"] == 32  # the original is not modified
    assert heuristics.halved([triton.Config({"XBLOCK": 1, "R0_BLOCK": 64})]) == []


def test_a_looped_reduction_given_one_config_is_offered_wider_row_blocks():
    one = [triton.Config({"XBLOCK": 2, "R0_BLOCK": 16}, num_warps=4)]
    offered = heuristics.with_row_blocks({"x": 64, "r0_": 16}, one, {})
    assert [c.kwargs["XBLOCK"] for c in offered] == [2, 8, 32]  # 128 is over the x hint
    assert all(c.kwargs["R0_BLOCK"] == 16 and c.num_warps == 4 for c in offered) and one[0].kwargs["XBLOCK"] == 2
    assert heuristics.with_row_blocks({"x": 64, "r0_": 16}, one, {"max_autotune": True}) == one
    long_rows = [triton.Config({"XBLOCK": 2, "R0_BLOCK": 2048})]  # 8 rows of 2048 are over the 4096 tile
    assert heuristics.with_row_blocks({"x": 4096, "r0_": 2048}, long_rows, {}) == long_rows
    two = one + [triton.Config({"XBLOCK": 64, "R0_BLOCK": 8})]  # Inductor's own choice among several: kept
    assert heuristics.with_row_blocks({"x": 64, "r0_": 16}, two, {}) == two
    outer = heuristics.ReductionHint.OUTER  # a column reduction's one configuration: not widened
    assert heuristics.with_row_blocks({"x": 64, "r0_": 16}, one, {}, outer) == one


def _causal_softmax(q, k):
    t = q.shape[-2]
    scores = (q @ k.transpose(-2, -1)) / 4.0
    causal = torch.ones(t, t, dtype=torch.bool, device=q.device).tril()
    return torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)


def test_a_dynamic_length_softmax_runs_more_than_two_rows_a_program(monkeypatch):
    """Under dynamic=True the attention softmax's row length is symbolic, so Inductor makes a looped reduction
    and its INNER hint gives it one configuration of 2 rows a program: 32 programs of three loops for 64 rows
    of 16 (39.7 us modeled; the static persistent kernel 1.8 us; Llama/BERT/T5 under dynamic=True ran at
    about twice their static modeled time). The cost model now also weighs 8 and 32 rows a program."""
    from inductor_plate import kernel_config

    chosen, real = [], kernel_config.choose

    def choose(machine, size_hints, configs, triton_meta, inductor_meta):
        config = real(machine, size_hints, configs, triton_meta, inductor_meta)
        chosen.append((inductor_meta.get("kernel_name", ""), config.kwargs))
        return config

    monkeypatch.setattr(kernel_config, "choose", choose)
    compiled = torch.compile(_causal_softmax, dynamic=True)
    with torch._inductor.config.patch(force_disable_caches=True, compile_threads=1):
        for t in (16, 11):
            q, k = torch.randn(2, 2, t, 16), torch.randn(2, 2, t, 16)
            torch.testing.assert_close(compiled(q.to("plate"), k.to("plate")).cpu(), _causal_softmax(q, k))
    looped = [kwargs for name, kwargs in chosen if name.startswith("triton_red_")]
    assert looped and all(kwargs["XBLOCK"] > 2 for kwargs in looped), chosen
    assert inductor_plate.host_fallbacks() == {}


_halved = heuristics.halved


def _avg_pool3d_backward(a, b):
    return torch.ops.aten.avg_pool3d_backward(a, b, [3, 3, 3], [1, 1, 1], [1, 1, 1], True, False, None)


def test_a_kernel_whose_tile_overflows_sram_is_retried_with_smaller_blocks(monkeypatch):
    """With dynamic shapes, avg_pool3d_backward's pointwise kernel keeps dozens of int64 index temporaries live
    per element: at Inductor's 16x16x16 tile they need 1.4 MB, over a core's SRAM (SramOutOfResources, and
    'No valid triton configs' with the one configuration the cost model chose). PlateAutotuner halves the
    program blocks until the kernel compiles. (The suite's slowest compile, about 30 CPU-s: Triton's frontend
    walks the kernel's huge index expressions twice. A 2x2x2 or strided window compiles in a third of that but
    fits the SRAM: no retry.)"""
    retried = []
    monkeypatch.setattr(heuristics, "halved", lambda configs: retried.append(configs) or _halved(configs))
    a, b = torch.randn(1, 1, 20, 20, 15), torch.randn(1, 1, 20, 20, 15)
    # compiled in this process (a compile worker's autotuner comes back pickled, its retries not seen here)
    with torch._inductor.config.patch(force_disable_caches=True, compile_threads=1):
        out = torch.compile(_avg_pool3d_backward, dynamic=True)(a.to("plate"), b.to("plate"))
    torch.testing.assert_close(out.cpu(), _avg_pool3d_backward(a, b))
    assert inductor_plate.host_fallbacks() == {}
    assert retried, "the kernel compiled at its first tile: nothing here overflows the SRAM any more"


def _configs_and_benchmarks(monkeypatch, fn, *args):
    """(the number of configurations of each kernel the compiled ``fn`` ran, benchmark_all_configs calls)."""
    from torch._inductor.runtime import triton_heuristics

    tuners, benchmarks = [], []
    tuner = triton_heuristics.CachingAutotuner
    real_init, real_bench = tuner.__init__, tuner.benchmark_all_configs

    def init(self, *a, **k):
        real_init(self, *a, **k)
        tuners.append(len(self.configs))  # precompile drops the list

    def bench(self, *a, **k):
        benchmarks.append(self.fn.__name__)
        return real_bench(self, *a, **k)

    monkeypatch.setattr(tuner, "__init__", init)
    monkeypatch.setattr(tuner, "benchmark_all_configs", bench)
    torch._dynamo.reset()  # an earlier test's compile of ``fn`` would be reused: no kernel made, nothing counted
    # kernels compiled in this process: a compile worker's autotuner comes back pickled (no __init__ here)
    with torch._inductor.config.patch(force_disable_caches=True, compile_threads=1):
        out = torch.compile(fn)(*args)
    return out, sorted(tuners), benchmarks


def _pointwise_and_reduction(x):
    return torch.softmax(x, -1) + 1.0, torch.relu(x) * 2.0


def test_default_mode_runs_one_config_per_kernel_without_benchmarking(monkeypatch):
    # softmax over 128 rows of 16 (a persistent reduction: Inductor offers 4 XBLOCKs) and a 1-D pointwise
    # kernel (Inductor's 2 blocks + the one-wave block): the default mode compiles one each, runs no benchmark
    x = torch.randn(128, 16)
    (soft, relu), counts, benchmarks = _configs_and_benchmarks(monkeypatch, _pointwise_and_reduction, x.to("plate"))
    torch.testing.assert_close(soft.cpu(), torch.softmax(x, -1) + 1.0)
    torch.testing.assert_close(relu.cpu(), torch.relu(x) * 2.0)
    assert counts and set(counts) == {1} and benchmarks == []


@pytest.mark.parametrize("knobs", [{"max_autotune_pointwise": True}, {}])
def test_max_autotune_or_the_knob_off_still_benchmarks_every_config(monkeypatch, knobs):
    x = torch.randn(128, 16)
    with torch._inductor.config.patch(**knobs), config.patch(cost_model_configs=bool(knobs)):
        (soft, _), counts, benchmarks = _configs_and_benchmarks(monkeypatch, _pointwise_and_reduction, x.to("plate"))
    torch.testing.assert_close(soft.cpu(), torch.softmax(x, -1) + 1.0)
    assert max(counts) > 1 and benchmarks


def test_the_cost_model_picks_one_wave_on_the_domains_of_the_data():
    from types import SimpleNamespace

    from inductor_plate import kernel_config

    machine = policy.machine()  # plate-mini: 4 domains of 2 cores
    configs = [SimpleNamespace(kwargs={"XBLOCK": b}) for b in (1, 8, 32, 128)]
    meta = {"signature": {"in_out_ptr0": "*fp32", "xnumel": "i32", "r0_numel": "i32", "XBLOCK": "constexpr"}}
    # 128 rows of 16 fp32 (8 KiB): interleaved over 2 domains (4 cores); XBLOCK 32 is 4 programs, one wave,
    # each program's rows inside one 4 KiB stripe (XBLOCK 128 crosses a die, 8 waits two waves, 1 eight)
    got = kernel_config.choose(machine, {"x": 128, "r0_": 16}, configs, meta, {"num_load": 1, "num_reduction": 3})
    assert got.kwargs == {"XBLOCK": 32}
    assert kernel_config.pointer_itemsizes({"a": "*bf16", "b": "*i64", "c": "*i1", "n": "i32"}) == [2, 8, 1]
    # ties go to Inductor's order
    same = [SimpleNamespace(kwargs={"XBLOCK": 64}), SimpleNamespace(kwargs={"XBLOCK": 64})]
    assert kernel_config.choose(machine, {"x": 64}, same, meta, {}) is same[0]


def test_kernels_autotuned_at_compile_time_are_guarded_too():
    # triton.autotune_at_compile_time copies each guarded kernel definition into its own autotuning code
    x, y = torch.randn(8, 64), torch.randn(8, 64)
    with torch._inductor.config.patch({"triton.autotune_at_compile_time": True, "force_disable_caches": True}):
        out, codes = run_and_get_code(torch.compile(softmax_residual), x.to("plate"), y.to("plate"))
    torch.testing.assert_close(out.cpu(), softmax_residual(x, y), rtol=1e-5, atol=1e-5)
    assert any("plate_guard_kernel(" in code for code in codes)


def test_config_eager_ops_run_as_extern_calls():
    x = torch.randn(4, 32)
    fn = lambda x: torch.tanh(x) * 3.0  # noqa: E731
    fallback.forget_learned_ops()  # the warning comes once per op per process
    with (
        config.patch(eager_ops=["aten.tanh.default"]),
        torch._inductor.config.patch(force_disable_caches=True),  # a cache hit would skip the pass
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always")
        out, codes = run_and_get_code(torch.compile(fn), x.to("plate"))
    torch.testing.assert_close(out.cpu(), fn(x))
    assert any("torch.ops.aten.tanh.default(" in code for code in codes)
    said = "plate: aten.tanh.default runs eagerly (listed in inductor_plate.config.eager_ops)"
    assert any(str(w.message) == said for w in caught)


def _fail_on_atan2(real_make_pir, name: str = "atan2"):
    """A pir stage that rejects kernels calling `name` (atan2), with the kernel source line in the error, as
    the real lowering does for an op it has no rule for."""

    def make_pir(src, metadata, options):
        text = str(src)
        if name in text:
            path = re.search(r'#loc\d* = loc\("([^"]+\.py)":', text).group(1)
            with open(path) as f:
                line = next(i for i, s in enumerate(f, 1) if re.search(rf"\b{name}\(", s))
            raise CompileError(f"[codegen] tt.extern_elementwise at {path}:{line}:1: injected: no rule for {name}")
        return real_make_pir(src, metadata, options)

    return make_pir


def test_kernel_that_fails_to_compile_falls_back_to_eager(monkeypatch):
    # frexp: the learned op runs eagerly, as plate's eager kernel (eager_ops/float_parts.py), not on the host
    monkeypatch.setitem(plate_compiler.STAGES, "pir", _fail_on_atan2(plate_compiler.STAGES["pir"], "frexp"))
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")
    fallback.forget_learned_ops()
    inductor_plate.reset_host_fallbacks()
    x, y = torch.randn(4, 32), torch.randn(4, 32) + 2

    def first(x, y):
        return torch.frexp(x.cos()).mantissa * y * 1.625 + 0.5

    def second(x, y):
        return (torch.frexp(x).mantissa + y).exp() - 0.25

    try:
        with (
            torch._inductor.config.patch(force_disable_caches=True, compile_threads=1),
            warnings.catch_warnings(record=True) as caught,
        ):
            warnings.simplefilter("always")
            out = torch.compile(first)(x.to("plate"), y.to("plate"))  # the frame runs eagerly
            torch.testing.assert_close(out.cpu(), first(x, y))
            assert policy.learned_eager_ops() == {"aten.frexp.Tensor"}
            frames = [name for name in inductor_plate.host_fallbacks() if name.startswith("frame ")]
            assert len(frames) == 1 and "aten.frexp.Tensor" in frames[0]  # the frame that ran eagerly, counted
            out, codes = run_and_get_code(torch.compile(second), x.to("plate"), y.to("plate"))
            torch.testing.assert_close(out.cpu(), second(x, y))
            assert "op aten.frexp" not in inductor_plate.host_fallbacks()  # the learned op, run eagerly on plate
        messages = [str(w.message) for w in caught if issubclass(w.category, fallback.PlateFallbackWarning)]
        assert any(m.startswith("plate: cannot compile kernel") and "aten.frexp.Tensor" in m for m in messages)
        assert all("\n" not in m for m in messages)
        assert any("torch.ops.aten.frexp.Tensor(" in code and "plate_guard_kernel(" in code for code in codes)
    finally:
        fallback.forget_learned_ops()


# ---- convolutions through Triton templates ----------------------------------------------------------------
# One transposed conv2d with groups, stride, dilation and output padding: its forward equals the input
# gradient of the plain conv2d with the same weight, stride, padding, dilation and groups.
CONV_X, CONV_W = (2, 4, 5, 5), (4, 3, 3, 3)  # weight (C_in, C_out / groups, kH, kW) of the transposed conv
CONV_ARGS = {"stride": [2, 2], "padding": [1, 1], "dilation": [2, 2], "output_padding": [1, 1], "groups": 2}


def transposed_conv2d(x, w):
    a = CONV_ARGS
    return torch.ops.aten.convolution(
        x, w, None, a["stride"], a["padding"], a["dilation"], True, a["output_padding"], a["groups"]
    )


def conv2d_input_grad(grad_out, w):
    a, x_shape = CONV_ARGS, transposed_conv2d(torch.empty(CONV_X), torch.empty(CONV_W)).shape
    x = torch.empty(x_shape, device=grad_out.device)
    args = (a["stride"], a["padding"], a["dilation"], False, [0, 0], a["groups"], [True, False, False])
    return torch.ops.aten.convolution_backward(grad_out, x, w, None, *args)[0]


def compile_with_conv_templates(fn, *args):
    """Compile ``fn`` on plate with only Inductor's Triton conv templates allowed for convolutions (plate's
    own lowering of convolutions to GEMMs, conv_gemm.py, off); (out, codes)."""
    conv_backends = {
        "max_autotune": True,
        "max_autotune_conv_backends": "TRITON",
        "max_autotune_conv_bwd_input_backends": "TRITON",
        "force_disable_caches": True,
    }
    # fp32 products, as on CPU: the templates take ALLOW_TF32 from cudnn.allow_tf32 (True by default)
    no_tf32 = torch.backends.cudnn.flags(enabled=torch.backends.cudnn.enabled, allow_tf32=False)
    plate = config.patch(fallback_on_compile_error=False, conv_as_gemm=False)
    with torch._inductor.config.patch(conv_backends), plate, no_tf32:
        return run_and_get_code(torch.compile(fn), *(a.to("plate") for a in args))


def runs_only_triton_templates(codes) -> bool:
    """The compiled call launches a Triton template kernel and calls no extern or aten kernel."""
    call = "".join(code.partition("def call(")[2] for code in codes)
    return "triton_tem_" in call and "extern_kernels." not in call and "torch.ops.aten." not in call


def test_conv2d_input_grad_uses_the_triton_template():
    """The conv2d_bwd_input template, which newer Inductors also pick for a transposed conv2d (below),
    compiles on plate, is chosen and matches CPU."""
    grad_out, w = torch.randn(CONV_X), torch.randn(CONV_W)
    out, codes = compile_with_conv_templates(conv2d_input_grad, grad_out, w)
    torch.testing.assert_close(out.cpu(), conv2d_input_grad(grad_out, w), rtol=1e-4, atol=1e-4)
    assert runs_only_triton_templates(codes)


def as_tuple(out) -> tuple:
    return out if isinstance(out, tuple) else (out,)


def fake_strides(op, *args):
    """The strides of each tensor ``op`` returns under the fake kernel Inductor compiles against."""
    with FakeTensorMode() as mode:
        out = op(*(mode.from_tensor(a) for a in args))
    return [t.stride() for t in as_tuple(out)]


def eager_strides(op, *args):
    return [t.stride() for t in as_tuple(op(*args))]


def conv1d_of_permuted(x, w, b):
    """A channel dim of size 1 after a permute: the CPU kernel answers channels-last, the fake contiguous."""
    return torch.ops.aten.convolution(x.permute(0, 2, 1), w, b, [1], [1], [1], False, [0], 1)


def conv1x1_backward(grad_out, x, w):
    args = ([w.shape[0]], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, True, True])
    return torch.ops.aten.convolution_backward(grad_out, x, w, *args)


CONV_STRIDE_CASES = {
    "conv1d of a permuted input": (
        conv1d_of_permuted,
        lambda: (torch.randn(4, 20, 1), torch.randn(8, 1, 3), torch.randn(8)),
    ),
    "conv backward, channels-last weight": (
        conv1x1_backward,
        lambda: (
            torch.randn(2, 6, 4, 4),
            torch.randn(2, 16, 4, 4),
            torch.randn(6, 16, 1, 1).to(memory_format=torch.channels_last),
        ),
    ),
}


@pytest.mark.parametrize("case", sorted(CONV_STRIDE_CASES))
def test_conv_results_have_the_strides_the_fake_kernel_predicts(case):
    """plate runs convolutions with the host's kernel, which may pick channels-last; compiled code
    checks the strides the fake kernel predicted for plate, so the device restrides to those."""
    op, make_args = CONV_STRIDE_CASES[case]
    args = tuple(a.to("plate") for a in make_args())
    assert eager_strides(op, *args) == fake_strides(op, *args)


@pytest.mark.parametrize("case", sorted(CONV_STRIDE_CASES))
def test_compiled_conv_matches_cpu(case):
    op, make_args = CONV_STRIDE_CASES[case]
    args = make_args()
    with torch._inductor.config.patch(force_disable_caches=True):
        out = torch.compile(op)(*(a.to("plate") for a in args))
    for got, want in zip(as_tuple(out), as_tuple(op(*args)), strict=True):
        torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=1e-4)


class InductorTransposedConvGap(Exception):
    """Inductor offered no Triton choice for a transposed convolution (and not another failure)."""


@pytest.mark.xfail(
    strict=True,
    raises=InductorTransposedConvGap,
    reason="torch 2.13.0 (git cf30153c) lowers transposed convs only to aten.convolution: its "
    "torch/_inductor/kernel/conv.py convolution() gates the Triton templates on `not transposed` and has no "
    "ATEN fallback, so a TRITON-only backend list leaves no choice on every device. PyTorch main fixed it "
    "after 2.13 (issue 186066, PR 186067: the conv2d_bwd_input template); passes with a torch that has it",
)
def test_transposed_conv2d_with_triton_conv_backends_matches_cpu():
    x, w = torch.randn(CONV_X), torch.randn(CONV_W)
    try:
        out, codes = compile_with_conv_templates(transposed_conv2d, x, w)
    except Exception as error:
        if "NoValidChoicesError" in str(error) and "max_autotune_conv_backends" in str(error):
            raise InductorTransposedConvGap(str(error)[:300]) from error
        raise
    torch.testing.assert_close(out.cpu(), transposed_conv2d(x, w), rtol=1e-4, atol=1e-4)
    assert runs_only_triton_templates(codes)


# Cases for the rows of policy.EAGER_OPS (ops the lowering cannot compile yet; none today), and for the
# ops that had a row until the lowering learned them (frexp needed libdevice's __nv_ilogbf, erfinv
# __nv_erfinvf): these compile into plate kernels, and still run eagerly when config.eager_ops lists them.
EAGER_OP_CASES = {
    "aten.frexp.Tensor": lambda x: torch.frexp(x * 1.5)[0] + 0.25,
    "aten.erfinv.default": lambda x: torch.erfinv(torch.tanh(x) * 0.875) - 0.125,
}


def test_every_eager_op_has_a_case():
    assert set(policy.EAGER_OPS) <= set(EAGER_OP_CASES)


@pytest.mark.parametrize("op", sorted(set(EAGER_OP_CASES) - policy.EAGER_OPS))
def test_formerly_eager_op_compiles_into_a_plate_kernel(op):
    fn, x = EAGER_OP_CASES[op], torch.randn(4, 32)
    with torch._inductor.config.patch(force_disable_caches=True), config.patch(fallback_on_compile_error=False):
        out, codes = run_and_get_code(torch.compile(fn), x.to("plate"))
    torch.testing.assert_close(out.cpu(), fn(x), rtol=1e-4, atol=1e-5)
    assert not any(f"torch.ops.{op}(" in code for code in codes)


@pytest.mark.parametrize("op", sorted(EAGER_OP_CASES))
def test_eager_ops_run_eagerly(op):
    fn, x = EAGER_OP_CASES[op], torch.randn(4, 32)
    with torch._inductor.config.patch(force_disable_caches=True), config.patch(eager_ops=[op]):
        out, codes = run_and_get_code(torch.compile(fn), x.to("plate"))
    torch.testing.assert_close(out.cpu(), fn(x), rtol=1e-4, atol=1e-5)
    assert any(f"torch.ops.{op}(" in code for code in codes)


def test_fallback_off_raises_the_compile_error(monkeypatch):
    monkeypatch.setitem(plate_compiler.STAGES, "pir", _fail_on_atan2(plate_compiler.STAGES["pir"]))
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")
    x = torch.randn(4, 32)
    with (
        torch._inductor.config.patch(force_disable_caches=True, compile_threads=1),
        config.patch(fallback_on_compile_error=False),
        pytest.raises(Exception, match="injected: no rule for atan2"),
    ):
        torch.compile(lambda x: torch.atan2(x, x + 3.5) * 0.75)(x.to("plate"))
