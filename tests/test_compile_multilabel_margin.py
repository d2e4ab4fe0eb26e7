"""Compiled multilabel_margin_loss on plate (shims._multilabel_margin_loss_first_end): torch.compile traces
PyTorch 2.13's decomposition, which also counts the target entries after a sample's first -1; with the shim,
forward and backward match the CPU kernel (labels up to the first -1), with nothing on the host."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

import inductor_plate
from triton_plate_backend import shims

# a sample's -1 in the middle, at the start, none; a repeated label counts twice
TARGETS = {
    "end-in-the-middle": [3, 0, -1, 1, 2],
    "end-at-the-start": [-1, 0, 1, 2, 3],
    "no-end": [1, 2, 3, 4, 0],
    "repeat": [4, 4, -1, 0, 0],
}
REDUCTIONS = ("none", "mean", "sum")


def losses(x, target):
    """The three reductions, and a weighted sum of them to take the gradient of."""
    out = [F.multilabel_margin_loss(x, target, reduction=r) for r in REDUCTIONS]
    total = (out[0] * torch.arange(1.0, out[0].numel() + 1, device=x.device).reshape(out[0].shape)).sum()
    return out, total + 2 * out[1] + 3 * out[2]


def run(fn, x, target, device):
    xs = x.to(device, copy=True).requires_grad_()
    out, total = fn(xs, target.to(device))
    total.backward()
    return [o.detach().cpu() for o in out], xs.grad.cpu()


@pytest.mark.parametrize(
    "target",
    [list(TARGETS.values()), *([t] for t in TARGETS.values())],
    ids=["2-d", *(f"1-d-{name}" for name in TARGETS)],
)
def test_compiled_loss_and_gradient_match_the_cpu_kernel(target, no_host_ops):
    target = torch.tensor(target)
    target = target if len(target) > 1 else target[0]
    x = torch.randn(target.shape, generator=torch.Generator().manual_seed(3))
    torch._dynamo.reset()
    inductor_plate.reset_host_fallbacks()
    got, got_grad = run(torch.compile(losses, fullgraph=True), x, target, "plate")
    assert inductor_plate.host_fallbacks() == {}
    want, want_grad = run(losses, x, target, "cpu")
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        torch.testing.assert_close(g, w)
    torch.testing.assert_close(got_grad, want_grad)


def test_the_decomposition_is_plates_for_plate_only():
    op = torch.ops.aten.multilabel_margin_loss_forward.default
    traced = op.py_kernels[torch._C.DispatchKey.Autograd]
    assert getattr(traced, "_plate_patch", False)
    x, target = torch.randn(2, 5), torch.tensor([[3, 0, -1, 1, 2], [-1, 0, 1, 2, 3]])
    expected = traced.__wrapped__(x, target, 2)  # other devices: PyTorch's own
    torch.testing.assert_close(traced(x, target, 2), expected)
    assert shims._stops_at_first_end(traced.__wrapped__) is False  # PyTorch 2.13: the shim is needed
    loss, is_target = shims._multilabel_margin_loss_forward(x, target, 2)
    torch.testing.assert_close(loss, torch.ops.aten.multilabel_margin_loss_forward(x, target, 2)[0])


@pytest.mark.parametrize("mode", [torch.no_grad, torch.inference_mode])
def test_compiled_inference_matches_the_cpu_kernel(mode, no_host_ops):
    """Without autograd, tracing decomposes the op through Inductor's decomposition table, not its Autograd
    python kernel."""
    target = torch.tensor(list(TARGETS.values()))
    x = torch.randn(target.shape, generator=torch.Generator().manual_seed(4))
    torch._dynamo.reset()
    inductor_plate.reset_host_fallbacks()
    with mode():
        got = torch.compile(losses, fullgraph=True)(x.to("plate"), target.to("plate"))[0]
    assert inductor_plate.host_fallbacks() == {}
    for g, w in zip(got, losses(x, target)[0], strict=True):
        assert g.shape == w.shape
        torch.testing.assert_close(g.cpu(), w)


# ---- the probe's answer, known by the decomposition's code (no sympy import at `import torch`) --------------
def test_the_answer_known_by_the_decompositions_code_is_the_probes():
    original = torch.ops.aten.multilabel_margin_loss_forward.default.py_kernels[torch._C.DispatchKey.Autograd]
    original = original.__wrapped__  # under the shim: PyTorch's own
    known = shims.FIRST_END_BY_CODE.get(shims.code_fingerprint(original))
    if known is None:
        pytest.skip("a PyTorch whose decomposition is not in FIRST_END_BY_CODE: the shim runs the probe")
    assert shims._probe_first_end(original) is known


def _compiled(source: str, name: str = "f"):
    scope: dict = {}
    exec(compile(source, "<test>", "exec"), scope)
    return scope[name]


def test_code_fingerprint_tells_code_constants_and_wrapper_settings_apart():
    def wrap(fn, setting):
        def wrapper(*args):
            return fn(*args) if setting else None

        wrapper.__wrapped__ = fn
        return wrapper

    f = _compiled("def f(x):\n    return [y for y in x if y in {'a', 'b'}]\n")
    same = _compiled("def f(x):\n    return [y for y in x if y in {'a', 'b'}]\n")
    assert shims.code_fingerprint(f) == shims.code_fingerprint(same)
    other_constant = _compiled("def f(x):\n    return [y for y in x if y in {'a', 'c'}]\n")
    other_name = _compiled("def f(x):\n    return [y for y in x if y in {'a', 'b'} and g]\n")
    assert len({shims.code_fingerprint(g) for g in (f, other_constant, other_name)}) == 3
    # a wrapper's setting in its closure, and the function under it, count
    assert shims.code_fingerprint(wrap(f, True)) == shims.code_fingerprint(wrap(same, True))
    assert shims.code_fingerprint(wrap(f, True)) != shims.code_fingerprint(wrap(f, False))
    assert shims.code_fingerprint(wrap(f, True)) != shims.code_fingerprint(wrap(other_constant, True))


def test_code_fingerprint_is_the_same_in_another_process():
    """A frozenset constant's order follows the string hash's seed: the fingerprint does not."""
    code = (
        "from triton_plate_backend import shims\n"
        "def f(x):\n    return x in {'alpha', 'beta', 'gamma', 'delta'}\n"
        "print(shims.code_fingerprint(f))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}
    run = [sys.executable, "-c", code]
    got = {
        subprocess.run(run, env={**env, "PYTHONHASHSEED": seed}, check=True, capture_output=True, text=True).stdout
        for seed in ("1", "2", "3")
    }
    assert len(got) == 1


def test_import_torch_answers_the_shim_without_sympy():
    """The installed PyTorch's decomposition is a known one: `import torch` (the device's autoload installs the
    shim) runs no probe, so it imports neither torch's symbolic shapes nor sympy; the shim is applied."""
    code = (
        "import sys, torch\n"
        "from triton_plate_backend import shims\n"
        "op = torch.ops.aten.multilabel_margin_loss_forward.default\n"
        "traced = op.py_kernels[torch._C.DispatchKey.Autograd]\n"
        "known = shims.FIRST_END_BY_CODE.get(shims.code_fingerprint(traced.__wrapped__))\n"
        "print('known' if known is not None else 'unknown')\n"
        "print('sympy' in sys.modules, getattr(traced, '_plate_patch', False))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split("\n")
    if out[0] == "unknown":
        pytest.skip("a PyTorch whose decomposition is not in FIRST_END_BY_CODE: the shim runs the probe")
    assert out[1] == "False True"
