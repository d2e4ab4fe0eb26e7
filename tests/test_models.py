"""torch.compile on plate runs real models: each compiled model against the same model in CPU eager,
forward and one training step (gradients and SGD-updated weights), on the simulated plate-mini.

The models are inductor_plate.model_suite (tiny sizes: every kernel runs on the simulator)."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import textwrap

import pytest
import torch
import triton
import triton.language as tl
from entry_points import declare_entry_point
from torch._dynamo.utils import counters
from torch._inductor.utils import run_and_get_code

import inductor_plate  # registers plate with Inductor (the discovery hook would too)
from inductor_plate import model_suite
from triton_plate_backend.torch_device import compiler_hooks

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOL = {"rtol": 1e-4, "atol": 1e-4}


@pytest.fixture(scope="module", autouse=True)
def mini(plate_mini_module):
    """Every test here runs on the plate-mini machine (4 domains x 2 cores)."""
    return plate_mini_module


pytestmark = pytest.mark.usefixtures("fresh_compile")


def on_plate(values):
    return [v.to("plate") for v in values]


def loss_of(out):
    return out if out.dim() == 0 else out.float().square().mean()


def check_training_step(name: str, **compile_kwargs):
    """Forward, loss, backward and one SGD step of the compiled plate model match CPU eager, and nothing of
    the compiled forward and backward ran on the host."""
    inductor_plate.reset_host_fallbacks()
    cpu = model_suite.build(name)
    dev = copy.deepcopy(cpu).to("plate")
    compiled = torch.compile(dev, **compile_kwargs)
    inputs = model_suite.example_inputs(name)
    out_cpu, out_plate = cpu(*inputs), compiled(*on_plate(inputs))
    torch.testing.assert_close(out_plate.cpu(), out_cpu, **TOL)
    loss_of(out_cpu).backward()
    loss_of(out_plate).backward()
    for (pname, p_cpu), p_plate in zip(cpu.named_parameters(), dev.parameters()):
        torch.testing.assert_close(p_plate.grad.cpu(), p_cpu.grad, **TOL, msg=lambda m, n=pname: f"grad {n}: {m}")
    for model in (cpu, dev):
        torch.optim.SGD(model.parameters(), lr=0.1).step()
    for p_cpu, p_plate in zip(cpu.parameters(), dev.parameters()):
        torch.testing.assert_close(p_plate.detach().cpu(), p_cpu.detach(), **TOL)
    for b_cpu, b_plate in zip(cpu.buffers(), dev.buffers()):  # batchnorm running statistics
        torch.testing.assert_close(b_plate.cpu(), b_cpu, **TOL)
    assert counters["stats"]["unique_graphs"] >= 1  # Dynamo captured a graph: it really compiled
    assert inductor_plate.host_fallbacks() == {}


def test_mlp_training_step():
    check_training_step("mlp")


def test_cnn_training_step():
    """conv (im2col + GEMM template) + batchnorm in training mode + relu + max pool + mean: Triton kernels."""
    check_training_step("cnn")


def test_transformer_block_training_step():
    """layernorm, causal attention (softmax with a -inf mask), GELU MLP, residuals."""
    check_training_step("block")


def test_embedding_cross_entropy_training_step():
    check_training_step("embedding_ce")


def test_gpt_dynamic_sequence_length():
    """One graph for several sequence lengths (dynamic shapes), forward and backward, nothing on the host."""
    inductor_plate.reset_host_fallbacks()
    cpu = model_suite.build("gpt", config=model_suite.GPTConfig(layers=1))
    dev = copy.deepcopy(cpu).to("plate")
    compiled = torch.compile(dev, dynamic=True)
    for seq in (8, 13):
        idx = model_suite.example_inputs("gpt", seq=seq)[0]
        out = compiled(idx.to("plate"))
        torch.testing.assert_close(out.cpu(), cpu(idx), **TOL)
    loss_of(out).backward()
    loss_of(cpu(idx)).backward()
    for p_cpu, p_plate in zip(cpu.parameters(), dev.parameters()):
        torch.testing.assert_close(p_plate.grad.cpu(), p_cpu.grad, **TOL)
    assert counters["stats"]["unique_graphs"] == 1
    assert inductor_plate.host_fallbacks() == {}


def test_max_autotune_matmul_uses_plate_templates():
    """max-autotune benchmarks Triton GEMM templates on the modeled clock (the extern aten mm, which runs on the
    host, only when config.gemm_templates opts in), so a template kernel wins and runs on the matrix unit."""
    a, b = torch.randn(64, 48), torch.randn(48, 32)

    def fn(a, b):
        return torch.relu(a @ b) * 0.5

    out, codes = run_and_get_code(torch.compile(fn, mode="max-autotune"), *on_plate((a, b)))
    torch.testing.assert_close(out.cpu(), fn(a, b), **TOL)
    assert any("triton_tem_" in code for code in codes), "no Triton template kernel in the generated code"
    assert not any("extern_kernels.mm(" in code for code in codes)


@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * scale, mask=mask)


def test_user_triton_kernel_inside_compiled_function():
    def fn(x):
        y = torch.sin(x) + 1.0
        out = torch.empty_like(y)
        _scale_kernel[(triton.cdiv(y.numel(), 64),)](y, out, y.numel(), 3.0, BLOCK=64)
        return out.cos()

    x = torch.randn(200)
    inductor_plate.reset_host_fallbacks()
    out, codes = run_and_get_code(torch.compile(fn, fullgraph=True), x.to("plate"))
    torch.testing.assert_close(out.cpu(), torch.cos((torch.sin(x) + 1.0) * 3.0), **TOL)
    assert any("_scale_kernel" in code for code in codes)  # captured into the graph, not a graph break
    assert inductor_plate.host_fallbacks() == {}  # a user kernel is device code, not a host op


AUTOREGISTRATION = textwrap.dedent(
    """
    import sys
    import torch
    import triton_plate_backend.torch_device
    assert "inductor_plate" not in sys.modules
    x = torch.randn(64)
    out = torch.compile(lambda x: torch.softmax(x.sin(), 0))(x.to("plate"))
    torch.testing.assert_close(out.cpu(), torch.softmax(x.sin(), 0))
    from torch._inductor.codegen.common import get_custom_backend_config_for_device
    import inductor_plate.config
    assert get_custom_backend_config_for_device("plate") is inductor_plate.config
    print("auto-registered", "inductor_plate" in sys.modules)
    """
)


def test_torch_compile_needs_no_registration_call(tmp_path):
    """A fresh process that never imports inductor_plate: Inductor's PrivateUse1 discovery asks
    torch.plate, whose hook loads the entry point inductor_plate declares (the fake dist-info stands
    for the installed package's metadata), which registers plate with its config."""
    declare_entry_point(tmp_path, compiler_hooks.ENTRY_POINT_GROUP, "inductor_plate")
    env = {
        **os.environ,
        "PLATE_MACHINE": "plate-mini",
        "PYTHONPATH": os.pathsep.join([REPO, str(tmp_path)]),
        "TORCHINDUCTOR_COMPILE_THREADS": "1",
    }
    done = subprocess.run(
        [sys.executable, "-c", AUTOREGISTRATION], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "auto-registered True" in done.stdout
