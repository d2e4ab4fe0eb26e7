"""Which host ops count as host fallbacks of a compiled function (inductor_plate.host_fallbacks()): every host op
that runs while a torch.compile'd function runs (its graphs: ``op``; its eager code at graph breaks, the frames
Dynamo resumes and whatever they call, plate's eager kernels' own host cases included: ``eager op``), and the
host ops of its compiled backward; none of eager code before or after it, nor of a compile.

Two host ops serve: ``_unique`` of uint16 (a plate eager kernel sends that dtype to the host from Python,
``Call.on_host``) and ``linalg_ldl_factor_ex`` (no plate kernel: the device's boxed CPU fallback)."""

from __future__ import annotations

import pytest
import torch

import inductor_plate


@pytest.fixture(scope="module", autouse=True)
def mini(plate_mini_module):
    return plate_mini_module


pytestmark = pytest.mark.usefixtures("fresh_compile")


def unique_on_host(y):
    """The first of the distinct values of ``y`` as uint16: the eager kernel sends uint16 to the host."""
    return torch._unique(y.to(torch.uint16))[0]


def counted(fn, *args):
    """(result, host fallbacks, host ops) of one call of ``fn`` after a warm-up call (the compile)."""
    fn(*args)
    inductor_plate.reset_host_fallbacks()
    torch.plate.reset_host_ops()
    out = fn(*args)
    return out, dict(inductor_plate.host_fallbacks()), dict(torch.plate.host_ops())


def plate_randn(*shape):
    torch.manual_seed(0)
    return torch.randn(*shape).to("plate")


def test_an_eager_kernels_host_case_at_a_graph_break_counts_and_eager_code_does_not():
    def fn(x):
        return unique_on_host((x.sin() * 100).abs()).sum() + 1  # a data-dependent shape: a graph break

    x = plate_randn(16)
    out, fallbacks, host_ops = counted(torch.compile(fn), x)
    assert host_ops == {"aten._unique": 1}
    assert fallbacks == {"eager op aten._unique": 1}
    torch.testing.assert_close(out.cpu(), fn(x.cpu()))
    _, fallbacks, host_ops = counted(fn, x)  # the same code, not compiled (its uint16 sum runs on the host too)
    assert host_ops["aten._unique"] == 1 and fallbacks == {}


def test_the_boxed_fallback_at_a_graph_break_counts_once_per_run():
    def fn(x):
        y = x * 2
        torch._dynamo.graph_break()  # what follows runs in a frame Dynamo resumes
        q = torch.linalg.ldl_factor(y)[0] if y.shape[0] > 3 else y
        return unique_on_host(q.abs() * 10).sum()

    x = plate_randn(4, 4)
    _, fallbacks, host_ops = counted(torch.compile(fn), x)
    assert host_ops == {"aten.linalg_ldl_factor_ex": 1, "aten._unique": 1}
    # ldl_factor lands in the resumed frame's graph (op), _unique at that frame's own break (eager op)
    assert fallbacks == {"op aten.linalg_ldl_factor_ex": 1, "eager op aten._unique": 1}


def test_fullgraph_counts_the_ops_of_its_graph():
    def fn(a):
        return torch.linalg.ldl_factor(a * 2)[0] + 1

    _, fallbacks, host_ops = counted(torch.compile(fn, fullgraph=True), plate_randn(4, 4))
    assert host_ops == {"aten.linalg_ldl_factor_ex": 1}
    assert fallbacks == {"op aten.linalg_ldl_factor_ex": 1}


def test_an_uncompiled_helper_and_a_dynamo_disabled_one_count_as_the_compiled_function():
    def helper(y):
        torch._dynamo.graph_break()
        return unique_on_host(y)

    disabled = torch._dynamo.disable(unique_on_host)

    def fn(x):
        y = (x.cos() * 100).abs()
        return helper(y).sum() + disabled(y).sum()

    x = plate_randn(16)
    out, fallbacks, host_ops = counted(torch.compile(fn), x)
    assert host_ops == {"aten._unique": 2}
    assert fallbacks == {"eager op aten._unique": 2}
    torch.testing.assert_close(out.cpu(), fn(x.cpu()))


def test_nested_compiled_functions_count_each_host_op_once():
    def inner(x):
        return unique_on_host((x.sin() * 100).abs()).sum()

    compiled_inner = torch.compile(inner)

    def outer(x):
        return compiled_inner(x * 2) + unique_on_host(x.abs() * 10).sum()

    _, fallbacks, host_ops = counted(torch.compile(outer), plate_randn(16))
    assert host_ops == {"aten._unique": 2}
    assert fallbacks == {"eager op aten._unique": 2}


def test_a_host_op_before_an_exception_counts_and_the_eager_code_after_does_not():
    def fn(x):
        unique_on_host(x.abs() * 10)
        raise ValueError("inside the compiled function")

    compiled = torch.compile(fn)
    x = plate_randn(16)
    for _ in range(2):
        inductor_plate.reset_host_fallbacks()
        with pytest.raises(ValueError, match="inside the compiled function"):
            compiled(x)
        assert inductor_plate.host_fallbacks() == {"eager op aten._unique": 1}
    unique_on_host(x)  # eager, after the exception
    assert inductor_plate.host_fallbacks() == {"eager op aten._unique": 1}


def test_the_compiled_backward_counts_its_host_ops():
    def fn(a):
        return torch.fft.irfft(torch.fft.rfft(a) * 2, n=a.shape[-1]).pow(2).sum()

    a = plate_randn(4096).requires_grad_()  # FFTs longer than 1024: the host's, in a compiled graph too
    compiled = torch.compile(fn)
    compiled(a).backward()  # compiles forward and backward
    loss = compiled(a)
    inductor_plate.reset_host_fallbacks()
    torch.plate.reset_host_ops()
    loss.backward()  # outside the compiled function: AOTAutograd's compiled backward
    host_ops = dict(torch.plate.host_ops())
    assert host_ops, "the backward of long FFTs runs FFTs on the host"
    assert dict(inductor_plate.host_fallbacks()) == {"op " + op: n for op, n in host_ops.items()}


def test_host_ops_a_compile_runs_do_not_count():
    """A backend that runs a host op while it compiles (the second graph compiles while the compiled function
    runs, in the frame Dynamo resumes): only the host ops of the function's own runs count."""

    def backend(gm, example_inputs):
        torch.linalg.ldl_factor(torch.eye(2, device="plate"))  # at compile time
        return gm.forward

    def fn(x):
        y = x * 2
        torch._dynamo.graph_break()
        return unique_on_host(y.abs() * 10).sum() + 1

    compiled = torch.compile(fn, backend=backend)
    torch.plate.reset_host_ops()
    compiled(plate_randn(16))
    host_ops = dict(torch.plate.host_ops())
    assert host_ops.pop("aten.linalg_ldl_factor_ex") >= 2  # the two graphs' compiles ran it
    assert host_ops["aten._unique"] == 1  # and the run its own (the backend runs the graphs' ops eagerly)
    assert inductor_plate.host_fallbacks() == {"eager op " + op: n for op, n in host_ops.items()}


class UniqueAtABreak(torch.nn.Module):
    def forward(self, x):
        return unique_on_host((x.sin() * 100).abs()).float().sum() + 1


@pytest.mark.parametrize("how", ["torch.compile(module)", "module.compile()"])
def test_a_compiled_module_counts_as_a_compiled_function(how):
    module = UniqueAtABreak()
    if how == "module.compile()":
        module.compile()
    else:
        module = torch.compile(module)
    _, fallbacks, host_ops = counted(module, plate_randn(16))
    assert host_ops == {"aten._unique": 1}
    assert fallbacks == {"eager op aten._unique": 1}


def test_a_compiled_function_run_under_the_force_eager_stance_is_eager_code():
    """torch.compiler.set_stance("force_eager") runs a compiled function as plain eager code (the way tests
    compute an eager reference): its host ops are no host fallbacks; back at the default stance they are."""

    def fn(x):
        return unique_on_host((x.sin() * 100).abs()).sum() + 1

    compiled = torch.compile(fn)
    x = plate_randn(16)
    compiled(x)
    inductor_plate.reset_host_fallbacks()
    torch.plate.reset_host_ops()
    with torch.compiler.set_stance("force_eager"):
        compiled(x)
    assert torch.plate.host_ops()["aten._unique"] == 1
    assert inductor_plate.host_fallbacks() == {}
    compiled(x)
    assert inductor_plate.host_fallbacks() == {"eager op aten._unique": 1}
