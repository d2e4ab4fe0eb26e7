"""Autograd through plate's kernels of composite ops (eager_ops/registry.composite_autograd): an op whose autograd is
its CompositeImplicitAutograd kernel keeps the CPU's graph on plate (grad_fn names and gradients equal, no autograd
fallback warning), and no overload plate registers leaves AutogradPrivateUse1 on the fallback where the CPU has one."""

from __future__ import annotations

import re
import warnings

import pytest
import torch
import torch._inductor.utils

from triton_plate_backend import eager_ops
from triton_plate_backend.eager_ops import registry

eager_ops.register()


def graph(t: torch.Tensor) -> list[str]:
    """The grad_fn names from ``t`` back to the leaves, depth first."""
    names, stack = [], [t.grad_fn]
    while stack:
        node = stack.pop()
        if node is not None:
            names.append(type(node).__name__)
            stack.extend(next_node for next_node, _ in node.next_functions)
    return names


def backward_on(device: str, inputs, forward):
    leaves = [t.to(device, copy=True).requires_grad_() for t in inputs]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the autograd fallback's "an autograd kernel was not registered" warning
        out = forward(*leaves)
        out.abs().sum().backward()
    return graph(out), [leaf.grad.cpu() for leaf in leaves]


CASES = {
    "conj_physical": ([torch.complex64], lambda x: torch.conj_physical(x)),
    "conj_physical of a transposed view": ([torch.complex128], lambda x: x.mT.conj_physical() * 2),
    "orgqr": ([torch.float64, torch.float64], lambda a, tau: torch.orgqr(a, tau)),
}


@pytest.mark.parametrize("name", CASES)
def test_a_composites_graph_and_gradients_are_the_cpus(name, no_host_ops):
    dtypes, forward = CASES[name]
    generator = torch.Generator().manual_seed(3)
    shapes = [(4, 3), (3,)]
    inputs = [torch.randn(shape, dtype=dtype, generator=generator) for shape, dtype in zip(shapes, dtypes)]
    expected_graph, expected_grads = backward_on("cpu", inputs, forward)
    got_graph, got_grads = backward_on("plate", inputs, forward)
    assert got_graph == expected_graph
    for got, expected in zip(got_grads, expected_grads):
        torch.testing.assert_close(got, expected)


def test_conj_physical_of_a_real_tensor_is_the_tensor_itself_as_on_the_cpu():
    for device in ("cpu", "plate"):
        x = torch.randn(3, device=device)
        assert torch.conj_physical(x) is x


def _entries(qualified: str) -> dict[str, str]:
    return dict(re.findall(r"^(\w+): (.*)$", torch._C._dispatch_dump_table(qualified), re.M))


def _returns_tensors(qualified: str) -> bool:
    packet, _, overload = qualified.removeprefix("aten::").partition(".")
    schema = getattr(getattr(torch.ops.aten, packet), overload or "default")._schema
    return any(isinstance(r.type, torch.TensorType) for r in schema.returns)


def test_no_plate_kernel_leaves_plates_autograd_on_the_fallback_where_the_cpus_has_a_kernel():
    """Every aten overload with a PrivateUse1 kernel (the table's, its out= / in-place forms, accumulation.py's, the
    extension's) and a tensor result: AutogradPrivateUse1 is the autograd fallback only where AutogradCPU is too."""
    torch.empty(1, device="plate")  # the kernels registered
    fallen = []
    for qualified in torch._C._dispatch_get_all_op_names():
        if qualified.startswith("aten::") and torch._C._dispatch_has_kernel_for_dispatch_key(qualified, "PrivateUse1"):
            entries = _entries(qualified)
            plate, cpu = entries.get("AutogradPrivateUse1", ""), entries.get("AutogradCPU", "")
            if (
                "VariableFallbackKernel" in plate
                and "VariableFallbackKernel" not in cpu
                and _returns_tensors(qualified)
            ):
                fallen.append(qualified)
    assert fallen == []
    assert registry.composite_autograd("conj_physical.default") and not registry.composite_autograd("add.Tensor")


def test_a_compiled_ihfftns_input_gradient_is_the_cpus():
    """AOTAutograd traces the backward through plate's kernels: with conj_physical on the autograd fallback the
    compiled backward graph was ``return (None,)`` (ihfftn is r2c, conj_physical, c2c)."""
    x = torch.randn(4, 6, 5, generator=torch.Generator().manual_seed(5))

    def ihfftn(t):
        y = torch.fft.ihfftn(t, s=(4, 6), norm="ortho")
        return y.real.sum() + y.imag.pow(2).sum()

    expected = x.clone().requires_grad_()
    ihfftn(expected).backward()
    got = x.to("plate").requires_grad_()
    torch._dynamo.reset()
    with torch._inductor.utils.fresh_inductor_cache(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Torchinductor does not support code generation for complex operators")
        torch.compile(ihfftn)(got).backward()
    assert got.grad is not None
    torch.testing.assert_close(got.grad.cpu(), expected.grad)
