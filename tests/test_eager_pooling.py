"""plate's pool kernels (triton_plate_backend/eager_ops/pooling.py): average, max and adaptive pools, 2-D
and 3-D, forward and backward, against the CPU (indices exactly, the same layouts), with the host-op
counter at zero."""

from __future__ import annotations

import pytest
import torch

from triton_plate_backend import eager_ops

eager_ops.register()
aten = torch.ops.aten


def check(fn, *args, exact=False):
    """fn on plate tensors against fn on the CPU: every result on plate, of the CPU's shape, strides and dtype."""
    expected = fn(*args)
    got = fn(*[a.to("plate") if isinstance(a, torch.Tensor) else a for a in args])
    expected = expected if isinstance(expected, tuple) else (expected,)
    got = got if isinstance(got, tuple) else (got,)
    for g, e in zip(got, expected, strict=True):
        assert g.device.type == "plate" and (g.shape, g.stride(), g.dtype) == (e.shape, e.stride(), e.dtype)
        exactly = {"rtol": 0, "atol": 0} if exact or not e.dtype.is_floating_point else {}
        torch.testing.assert_close(g.cpu(), e, equal_nan=True, **exactly)


X = torch.randn(2, 3, 9, 10)
X3 = torch.randn(2, 3, 5, 7, 8)
AVG = {  # kernel, stride, padding, ceil_mode, count_include_pad, divisor_override
    "plain": ([3, 3], [], [0], False, True, None),
    "padded ceil": ([3, 2], [2, 1], [1, 1], True, False, None),
    "padded counted": ([3, 3], [2, 2], [1, 1], True, True, None),
    "divisor": ([3, 3], [2, 2], [1, 0], False, True, 5),
    "13x13 stride 1": ([13, 13], [1, 1], [0, 0], False, True, None),
}


@pytest.mark.parametrize("case", AVG)
def test_avg_pool2d_forward_and_backward(case, no_host_ops):
    x = X if case != "13x13 stride 1" else -torch.arange(2 * 24 * 24, dtype=torch.float32).view(1, 2, 24, 24)
    check(lambda x: aten.avg_pool2d(x, *AVG[case]), x)
    grad = torch.randn(aten.avg_pool2d(x, *AVG[case]).shape)
    check(lambda g, x: aten.avg_pool2d_backward(g, x, *AVG[case]), grad, x)


def test_avg_pool3d_forward_and_backward(no_host_ops):
    args = ([3, 3, 3], [1, 2, 2], [1, 1, 0], False, True, None)
    check(lambda x: aten.avg_pool3d(x, *args), X3)
    grad = torch.randn(aten.avg_pool3d(X3, *args).shape)
    check(lambda g, x: aten.avg_pool3d_backward(g, x, *args), grad, X3)
    check(lambda x: aten.avg_pool3d(x, [2, 2, 2]), X3[0])  # unbatched


def test_max_pool_indices_are_the_cpus(no_host_ops):
    x = torch.randint(0, 4, (2, 3, 9, 10)).float()  # ties: the first of the window wins
    x[0, 0, 2, 3] = float("nan")
    args = ([3, 3], [2, 1], [1, 1], [1, 2], True)
    check(lambda x: aten.max_pool2d_with_indices(x, *args), x, exact=True)
    out, indices = aten.max_pool2d_with_indices(X, *args)
    check(lambda g, x, i: aten.max_pool2d_with_indices_backward(g, x, *args, i), torch.randn(out.shape), X, indices)
    check(lambda x: aten.max_pool3d_with_indices(x, [2, 3, 3], [2, 2, 2], [1, 1, 1]), X3, exact=True)


def test_adaptive_pools(no_host_ops):
    x = torch.randn(2, 4, 21, 21)
    check(lambda x: aten._adaptive_avg_pool2d(x, (4, 3)), x)
    check(lambda x: aten._adaptive_avg_pool2d(x, (6, 6)), torch.randn(2, 4, 16, 16))
    check(lambda x: aten._adaptive_avg_pool3d(x, (2, 3, 2)), X3)
    check(lambda x: aten.adaptive_max_pool2d(x, (4, 4)), x, exact=True)
    check(lambda g, x: aten._adaptive_avg_pool2d_backward(g, x), torch.randn(2, 4, 4, 3), x)
    out, indices = aten.adaptive_max_pool2d(x, (5, 3))
    check(lambda g, x, i: aten.adaptive_max_pool2d_backward(g, x, i), torch.randn(out.shape), x, indices)


def test_half_types_and_channels_last(no_host_ops):
    check(lambda x: aten.avg_pool2d(x, [2, 2]), X.bfloat16())
    check(lambda x: aten.max_pool2d_with_indices(x, [2, 2]), X.to(memory_format=torch.channels_last))


def test_a_float64_pool(no_host_ops):
    check(lambda x: aten._adaptive_avg_pool2d(x, (3, 3)), X.double())


def test_an_integer_pool_runs_on_the_host_counted():
    torch.plate.reset_host_ops()
    ints = torch.randint(0, 9, (1, 2, 6, 6))
    check(lambda x: aten.max_pool2d_with_indices(x, [2, 2]), ints)
    assert torch.plate.host_ops() == {"aten.max_pool2d_with_indices": 1}


@pytest.mark.parametrize("op", ["_adaptive_avg_pool", "adaptive_max_pool"])
@pytest.mark.parametrize("dims", [2, 3])
def test_an_adaptive_pool_of_integers_raises_torchs_error_on_plate(op, dims, no_host_ops):
    """torch implements the adaptive pools for floats only; plate raises its "not implemented" error itself, as
    CUDA's kernel does, instead of passing the call to the host's kernel to raise it (a host op)."""
    ints = torch.zeros([1] * (dims + 2), dtype=torch.int64, device="plate")
    with pytest.raises(NotImplementedError, match=f"adaptive_.*_pool{dims}d\" not implemented for 'Long'"):
        getattr(aten, f"{op}{dims}d")(ints, [5] * dims)


@pytest.mark.parametrize(
    "window, launches",
    [
        (([1, 1, 1], [2, 2, 2], [0, 0, 0]), 1),  # test_avg_pool3d_backward3's: one candidate window per input
        (([3, 3, 3], [2, 2, 2], [1, 1, 1]), 1),  # 2 per dim: 8
        (([3, 3, 3], [1, 1, 1], [1, 1, 1]), 3),  # 27: one dim at a time
    ],
)
def test_avg_pool3d_backward_with_few_candidate_windows_is_one_pass(window, launches, monkeypatch, no_host_ops):
    """Windows no wider than the stride (or a few candidates per input) take one launch over the input, each share
    one division by the window's count as torch's kernels divide: the CPU's bits; more candidates, three one-dim
    passes (within rounding of it)."""
    from triton_plate_backend.eager_ops import launch

    seen = []
    original = launch.launch_kernel
    monkeypatch.setattr(launch, "launch_kernel", lambda *a, **k: seen.append(1) or original(*a, **k))
    torch.manual_seed(0)
    x = torch.randn(2, 3, 9, 8, 7)
    for count_pad in (True, False):
        args = [*window, False, count_pad, None]
        grad = torch.randn(aten.avg_pool3d(x, *args).shape)
        seen.clear()
        got = aten.avg_pool3d_backward(grad.to("plate"), x.to("plate"), *args).cpu()
        want = aten.avg_pool3d_backward(grad, x, *args)
        assert len(seen) == launches
        if launches == 1:
            assert torch.equal(got, want)
        else:
            torch.testing.assert_close(got, want)
