"""plate's ``decomposed`` eager rows (eager_ops/composite.py): torch's decomposition of the op over plate kernels,
against the CPU's result (values, dtype, shape and strides) with no host op; an operand the CPU kernel refuses (a
bool or integer tensor) runs on the host, which raises the CPU's own error, counted."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from eager_cases import case_params, plate_and_cpu

from triton_plate_backend import eager_ops
from triton_plate_backend.eager_ops import table

eager_ops.register()

NAN, INF = float("nan"), float("inf")


def values(dtype: torch.dtype, shape=(3, 4), special: bool = True) -> torch.Tensor:
    g = torch.Generator().manual_seed(1)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        x = torch.randn(shape, generator=g) * 2
        if special:
            x.view(-1)[:3] = torch.tensor([NAN, INF, -0.0])
        return x.to(dtype)
    return torch.randint(-5, 6, shape, generator=g).to(dtype)


def plate(value):
    if isinstance(value, torch.Tensor):
        return value.to("plate")
    return value


def same(plate_result, cpu_result, dtype):
    if isinstance(cpu_result, (tuple, list)):
        assert len(plate_result) == len(cpu_result)
        for p, c in zip(plate_result, cpu_result):
            same(p, c, dtype)
        return
    assert plate_result.device.type == "plate"
    assert (plate_result.dtype, plate_result.shape) == (cpu_result.dtype, cpu_result.shape)
    assert plate_result.stride() == cpu_result.stride()
    tol = {"rtol": 1e-2, "atol": 1e-2} if dtype in (torch.float16, torch.bfloat16) else {}
    torch.testing.assert_close(plate_result.cpu(), cpu_result, equal_nan=True, **tol)


EDGES = (torch.float32, torch.float16, torch.int64, torch.bool)
CASES = {
    "roll": (lambda x: torch.roll(x, (1, -2), (0, 1)), EDGES),
    "roll flat": (lambda x: torch.roll(x, 5), EDGES),
    "roll transposed": (lambda x: x.t().roll(1, 0), EDGES),
    "trace": (torch.trace, EDGES),
    "aminmax": (torch.aminmax, (torch.float32, torch.int64)),
    "aminmax dim": (lambda x: torch.aminmax(x, dim=1, keepdim=True), (torch.float32, torch.int64)),
    "count_nonzero": (torch.count_nonzero, EDGES),
    "count_nonzero dim": (lambda x: torch.count_nonzero(x, 1), EDGES),
    "isin": (lambda x: torch.isin(x, x[0]), EDGES),
    "isin scalar": (lambda x: torch.isin(x, 1), EDGES),
    "isin invert": (lambda x: torch.isin(x, x[1], invert=True), (torch.float32, torch.int64)),
    "bucketize": (lambda x: torch.bucketize(x, torch.tensor([-1, 0, 2]).to(x)), EDGES),
    "bucketize right": (lambda x: torch.bucketize(x, torch.tensor([-1, 0, 2]).to(x), right=True), EDGES),
    "cross": (lambda x: torch.linalg.cross(x[:, :3], x[:, 1:]), EDGES),
    "renorm": (lambda x: torch.renorm(x, 2, 0, 1.0), EDGES),
    "glu": (lambda x: F.glu(x, 1), EDGES),
    "prelu": (lambda x: F.prelu(x, torch.tensor([0.25]).to(x)), EDGES),
    "reflection_pad1d": (lambda x: F.pad(x[None], (2, 1), mode="reflect"), EDGES),
    "reflection_pad2d": (lambda x: F.pad(x[None, None], (2, 1, 1, 2), mode="reflect"), EDGES),
    "replication_pad1d": (lambda x: F.pad(x[None], (2, 1), mode="replicate"), EDGES),
    "replication_pad2d": (lambda x: F.pad(x[None, None], (2, 1, 1, 2), mode="replicate"), EDGES),
    "reflection_pad3d": (lambda x: F.pad(x.reshape(1, 1, 2, 2, 3), (2, 1, 1, 0, 1, 1), mode="reflect"), EDGES),
    "replication_pad3d": (lambda x: F.pad(x.reshape(1, 1, 2, 2, 3), (2, 1, 1, 0, 1, 1), mode="replicate"), EDGES),
    "max_unpool2d": (lambda x: F.max_unpool2d(*F.max_pool2d(x[None, None], 2, return_indices=True), 2), EDGES),
    "max_unpool3d": (
        lambda x: F.max_unpool3d(*F.max_pool3d(x.reshape(1, 1, 2, 2, 3), (1, 2, 1), return_indices=True), (1, 2, 1)),
        EDGES,
    ),
    "nearest": (lambda x: F.interpolate(x[None, None], size=(5, 7)), EDGES),
    "bilinear": (lambda x: F.interpolate(x[None, None], size=(5, 7), mode="bilinear"), (torch.int64, torch.bool)),
    "mse_loss": (lambda x: F.mse_loss(x, x.flip(0)), EDGES),
    "mse_loss none": (lambda x: F.mse_loss(x, x.flip(0), reduction="none"), (torch.float32,)),
    "smooth_l1_loss sum": (lambda x: F.smooth_l1_loss(x, x.flip(0), beta=0.5, reduction="sum"), EDGES),
    "huber_loss": (lambda x: F.huber_loss(x, x.flip(0), delta=0.7), EDGES),
    "searchsorted": (lambda x: torch.searchsorted(torch.tensor([-1, 0, 0, 2]).to(x), x), EDGES),
    "searchsorted right int32": (
        lambda x: torch.searchsorted(torch.tensor([-1, 0, 0, 2]).to(x), x, side="right", out_int32=True),
        EDGES,
    ),
    "searchsorted scalar": (lambda x: torch.searchsorted(x[0].sort().values, 0), (torch.float32, torch.int64)),
    "rrelu eval": (lambda x: F.rrelu(x, 0.1, 0.4, training=False), EDGES),
    "vdot": (lambda x: torch.vdot(x[0], x[1]), EDGES),  # a bool tensor: the CPU's "not implemented" error
    "vdot strided": (lambda x: torch.vdot(x[:, 0], x[:, 2]), (torch.float32, torch.int64)),
    "any dim": (lambda x: x.any(1), EDGES),
    "all dims": (lambda x: x.all((0, 1)), EDGES),
}


@pytest.mark.parametrize("name, dtype", case_params(CASES), ids=str)
def test_decomposed_op_matches_the_cpu(name, dtype):
    fn, _ = CASES[name]
    results = plate_and_cpu(fn, values(dtype))  # None: the CPU refuses the dtype, so does plate (on the host)
    if results is not None:
        result, expected = results
        same(result, expected, dtype)


@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16), ids=str)
@pytest.mark.parametrize("size", [(7, 9), (3, 4)])
@pytest.mark.parametrize("align_corners", [False, True])
def test_bilinear_upsampling_matches_the_cpu_on_finite_values(dtype, size, align_corners, no_host_ops):
    x = torch.randn(2, 3, 5, 6).to(dtype)
    expected = F.interpolate(x, size=size, mode="bilinear", align_corners=align_corners)
    same(F.interpolate(x.to("plate"), size=size, mode="bilinear", align_corners=align_corners), expected, dtype)


@pytest.mark.parametrize(
    "options",
    [
        {"align_corners": False},
        {"mode": "nearest", "align_corners": False},
        {"padding_mode": "border", "align_corners": True},
        {"padding_mode": "reflection", "align_corners": False},
    ],
)
def test_grid_sample_matches_the_cpu(options, no_host_ops):
    x, grid = torch.randn(2, 3, 5, 6), torch.rand(2, 4, 4, 2) * 2.2 - 1.1
    same(F.grid_sample(x.to("plate"), grid.to("plate"), **options), F.grid_sample(x, grid, **options), torch.float32)


@pytest.mark.parametrize(
    "fn",
    [
        lambda t: torch.round(t, decimals=2),
        lambda t: torch.round(t.half(), decimals=-1),
        lambda t: torch.norm(t),
        lambda t: torch.norm(t.half(), 1),
        lambda t: torch.dist(t, t.flip(0)),
    ],
)
def test_round_decimals_and_norm(fn, no_host_ops):
    x = torch.randn(3, 4) * 30
    same(fn(x.to("plate")), fn(x), torch.float32)


def test_pad3d_gradients_match_the_cpu(no_host_ops):
    x = torch.randn(1, 2, 3, 4, 4)
    grads = []
    for device in ("cpu", "plate"):
        xs = x.to(device, copy=True).requires_grad_()
        reflected, replicated = F.pad(xs, (1, 2, 1, 1, 2, 1), "reflect"), F.pad(xs, (1, 0, 2, 1, 0, 1), "replicate")
        (reflected.square().sum() + replicated.square().sum()).backward()
        grads.append(xs.grad.cpu())
    torch.testing.assert_close(*grads)


def test_max_unpool_of_an_index_outside_the_output_raises_the_cpus_error_from_the_host():
    out, indices = F.max_pool2d(torch.randn(1, 2, 4, 4), 2, return_indices=True)
    indices[0, 0, 0, 0] = 99
    torch.plate.reset_host_ops()
    with pytest.raises(RuntimeError, match="Found an invalid max index: 99"):
        F.max_unpool2d(out.to("plate"), indices.to("plate"), 2)
    assert torch.plate.host_ops() == {"aten.max_unpool2d": 1}
    torch.plate.reset_host_ops()


@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16), ids=str)
def test_rrelu_in_place_outside_training_is_leaky_relu(dtype):
    x = (torch.randn(4, 9) * 3).to(dtype)
    expected = F.rrelu_(x.clone(), 0.1, 0.3, training=False)
    torch.plate.reset_host_ops()
    on_plate = x.to("plate")
    assert F.rrelu_(on_plate, 0.1, 0.3, training=False) is on_plate
    assert torch.plate.host_ops() == {}
    same(on_plate, expected, dtype)
    noise = torch.full((4, 9), 7.0, dtype=dtype, device="plate")
    torch.ops.aten.rrelu_with_noise(x.to("plate"), noise, 0.1, 0.3, False)
    assert torch.equal(noise.cpu(), torch.full((4, 9), 7.0, dtype=dtype))  # outside training noise is left alone


@pytest.mark.parametrize("dtype", (torch.float32, torch.float16, torch.bfloat16, torch.float64), ids=str)
def test_rrelu_in_training_draws_slopes_on_plate(dtype, no_host_ops):
    """ATen's training rrelu: x where x > 0, x times a slope uniform in [lower, upper] where x <= 0 (plate's
    Philox draws, so the values are not the CPU's), noise the slopes (1 elsewhere); the gradient grad * noise;
    nn.RReLU and the in-place form too. float16, which the CPU kernel refuses, runs as on CUDA."""
    lower, upper = 0.1, 0.3
    drawn = torch.randn(4000, generator=torch.Generator().manual_seed(3)) * 3
    x = torch.cat([drawn, torch.tensor([0.0, -0.0, NAN, INF, -INF])]).to(dtype)
    px = x.to("plate").requires_grad_()
    torch.plate.manual_seed(0)
    y = F.rrelu(px, lower, upper, training=True)
    y.backward(torch.full_like(y, 2))
    y, grad = y.detach().cpu().double(), px.grad.cpu().double()
    wide, negative = x.double(), x <= 0
    assert torch.equal(y[~negative].nan_to_num(), wide[~negative].nan_to_num())
    assert torch.equal(grad[~negative], torch.full_like(grad[~negative], 2))
    slope = grad[negative] / 2  # the noise
    ulp = torch.finfo(dtype).eps  # noise is stored in x's type: a slope rounds to the nearest of it
    assert slope.min() >= lower * (1 - ulp) and slope.max() <= upper * (1 + ulp)
    assert slope.std() > 0.04 and abs(slope.mean() - (lower + upper) / 2) < 0.01  # uniform: std 0.058, mean 0.2
    finite = negative & x.isfinite()
    tolerance = {torch.float16: 1e-3, torch.bfloat16: 8e-3}.get(dtype, 1e-6)
    torch.testing.assert_close(y[finite], wide[finite] * (grad[finite] / 2), rtol=tolerance, atol=1e-6)
    assert torch.equal(y[x == -INF], torch.full_like(y[x == -INF], -INF))
    torch.plate.manual_seed(0)
    again = F.rrelu(x.to("plate"), lower, upper, training=True).cpu().double()
    assert torch.equal(again.nan_to_num(), y.nan_to_num())  # a seed reproduces the slopes
    module, in_place = torch.nn.RReLU(lower, upper).train(), x.to("plate")
    assert F.rrelu_(in_place, lower, upper, training=True) is in_place
    for result in (module(x.to("plate")).cpu(), in_place.cpu()):
        assert torch.equal(result[~negative].nan_to_num(), x[~negative].nan_to_num())
        assert not torch.equal(result[finite & (x != 0)], x[finite & (x != 0)])


SCALES = [{"scale_factor": 2}, {"size": (7, 5)}, {"scale_factor": (0.6, 2.5)}]
CORNERS = [{"size": (9, 13), "align_corners": True}, {"size": (1, 1), "align_corners": True}]
# mode -> (dtypes, interpolate's options): each gradient against the CPU kernel's
UPSAMPLING_GRADIENTS = {
    "nearest": ((torch.float32, torch.float16), [*SCALES, {"scale_factor": 1.7}]),
    "bilinear": ((torch.float32, torch.bfloat16), [*SCALES, *CORNERS]),
    "bicubic": ((torch.float32, torch.float64, torch.bfloat16), [*SCALES, *CORNERS, {"size": (2, 3)}]),
}


@pytest.mark.parametrize(
    "mode, dtype, options",
    [(mode, d, o) for mode, (dtypes, options) in UPSAMPLING_GRADIENTS.items() for d in dtypes for o in options],
    ids=str,
)
def test_upsampling_gradient_matches_the_cpu(mode, dtype, options, no_host_ops):
    x = torch.randn(2, 3, 5, 6).to(dtype)
    grads = []
    for device in ("cpu", "plate"):
        leaf = x.clone().to(device).requires_grad_()
        y = F.interpolate(leaf, mode=mode, **options)
        (y * torch.arange(y.numel(), device=device).view(y.shape).to(dtype) / 10).sum().backward()
        grads.append(leaf.grad)
    same(grads[1], grads[0], dtype)


@pytest.mark.parametrize("dtype", (torch.float32, torch.float64), ids=str)
@pytest.mark.parametrize("shape", ((4, 5), (5,), ()), ids=str)
@pytest.mark.parametrize("p", (1, 2))
@pytest.mark.parametrize("reduction", ("mean", "sum", "none"))
@pytest.mark.parametrize("weighted", (False, True))
def test_multi_margin_loss_gradient_matches_the_cpu(dtype, shape, p, reduction, weighted, no_host_ops):
    g = torch.Generator().manual_seed(40)
    x = torch.randn(shape, generator=g).to(dtype)
    classes = shape[-1] if shape else 1
    target = torch.randint(0, classes, shape[:1] if len(shape) == 2 else ((1,) if shape else ()), generator=g)
    weight = torch.rand(classes, generator=g).to(dtype) if weighted else None
    grads = []
    for device in ("cpu", "plate"):
        leaf = x.clone().to(device).requires_grad_()
        w = None if weight is None else weight.to(device)
        y = F.multi_margin_loss(leaf, target.to(device), p=p, margin=0.7, weight=w, reduction=reduction)
        (y * (torch.arange(y.numel(), device=device).view(y.shape).to(dtype) + 1)).sum().backward()
        grads.append(leaf.grad)
    same(grads[1], grads[0], dtype)


def test_multi_margin_loss_gradient_of_a_target_out_of_range_raises_the_cpu_error():
    x, target = torch.randn(2, 3), torch.tensor([0, 2])
    grad = torch.tensor(1.0)
    bad = torch.tensor([0, 3])
    with pytest.raises(RuntimeError) as cpu:
        torch.ops.aten.multi_margin_loss_backward(grad, x, bad, 1, 1.0, None, 1)
    with pytest.raises(type(cpu.value)):
        torch.ops.aten.multi_margin_loss_backward(grad.plate(), x.plate(), bad.plate(), 1, 1.0, None, 1)
    torch.plate.reset_host_ops()
    torch.ops.aten.multi_margin_loss_backward(grad.plate(), x.plate(), target.plate(), 1, 1.0, None, 1)
    assert torch.plate.host_ops() == {}


def test_no_composite_implicit_op_has_a_decomposed_row():
    """A PrivateUse1 kernel of a CompositeImplicitAutograd op (upsample_nearest2d.vec) would leave its autograd to
    torch's not-implemented fallback: such ops decompose into the rows' ops instead."""
    for name, row in table.overloads().items():
        if row.family in ("decomposed", "parametric", "upsample_backward") and not name.endswith("_backward.default"):
            packet, _, overload = name.partition(".")
            op = getattr(getattr(torch.ops.aten, packet), overload)
            assert not torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "CompositeImplicitAutograd"), name


SPACED = [(0, 1, 7), (-3, 10, 7), (2.5, -1.25, 10), (0, 1, 1), (0, 1, 0), (1e3, 1e3 + 1, 5)]
ULP = {torch.float32: 2.0**-23, torch.float64: 2.0**-52, torch.float16: 2.0**-10, torch.bfloat16: 2.0**-7}


@pytest.mark.parametrize(
    "dtype", (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.uint8)
)
def test_linspace_and_logspace_match_the_cpu(dtype):
    """linspace of fp32 bit for bit (ATen's loop, its multiply-adds fused; fp64 within an ulp: plate rounds the
    product and the sum each, spaced_ranges.py), fp16/bf16 within one ulp (the CPU
    rounds each step to the half type, plate once), logspace within that ulp times ln(base) |x|; integers within
    float32's rounding of step * i (CUDA computes them in float32) and the truncation; a
    bound the type cannot hold raises the CPU's error from the host."""
    for start, end, steps in SPACED:
        for fn in (torch.linspace, torch.logspace):
            try:
                expected = fn(start, end, steps, dtype=dtype)
            except RuntimeError as e:
                with pytest.raises(RuntimeError, match=str(e)[:20]):
                    fn(start, end, steps, dtype=dtype, device="plate")
                continue
            torch.plate.reset_host_ops()
            result = fn(start, end, steps, dtype=dtype, device="plate")
            info = None if dtype.is_floating_point else torch.iinfo(dtype)
            if info is None or info.min <= min(start, end) <= max(start, end) <= info.max:
                assert torch.plate.host_ops() == {}
            else:  # a bound the type cannot hold: the host converts it (c10's checks), counted
                assert torch.plate.host_ops() == {f"aten.{fn.__name__}": 1}
            assert (result.dtype, result.shape, result.device.type) == (expected.dtype, expected.shape, "plate")
            if fn is torch.linspace and dtype == torch.float32:  # the CPU loop's fused multiply-adds, as plate's
                assert torch.equal(result.cpu(), expected), (start, end, steps)
            # logspace: base ** x magnifies x's last-bit difference by ln(base) |x| (at most 24 here)
            ulp = ULP.get(dtype, 0) * (1 if fn is torch.linspace else 24)
            if not dtype.is_floating_point:  # CUDA's kernel computes integer results in float32, the CPU in float64
                torch.testing.assert_close(result.cpu().double(), expected.double(), rtol=2.0**-20, atol=1)
                continue
            torch.testing.assert_close(result.cpu(), expected, rtol=ulp, atol=ulp, equal_nan=True)


@pytest.mark.parametrize("fn", (torch.tril_indices, torch.triu_indices))
def test_triangle_indices_match_the_cpu(fn, no_host_ops):
    for args in ((3, 3), (4, 3, 1), (3, 5, -1), (0, 3), (3, 4, 10), (3, 4, -10)):
        same(fn(*args, device="plate"), fn(*args), torch.int64)
    same(fn(3, 4, dtype=torch.int32, device="plate"), fn(3, 4, dtype=torch.int32), torch.int32)


GRADIENTS = {
    "glu": lambda x: F.glu(x, 1).pow(2).sum(),
    "prelu": lambda x: F.prelu(x, torch.tensor([0.25, 0.5, -1.0, 2.0], device=x.device)).pow(2).sum(),
    "reflection_pad1d": lambda x: F.pad(x[None], (2, 1), mode="reflect").pow(2).sum(),
    "reflection_pad2d": lambda x: F.pad(x[None, None], (2, 1, 1, 2), mode="reflect").pow(2).sum(),
    "mse_loss": lambda x: F.mse_loss(x, x.detach().flip(0)),
    "smooth_l1_loss": lambda x: F.smooth_l1_loss(x, x.detach().flip(0), beta=0.5),
    "huber_loss": lambda x: F.huber_loss(x, x.detach().flip(0), delta=0.7, reduction="sum"),
    "binary_cross_entropy": lambda x: F.binary_cross_entropy(torch.sigmoid(x), (x.detach() > 0).float()),
    "embedding": lambda x: F.embedding(torch.tensor([0, 2, 2, 1], device=x.device), x).pow(2).sum(),
}


@pytest.mark.parametrize("name", GRADIENTS)
def test_decomposed_gradients_match_the_cpu(name, no_host_ops):
    x = values(torch.float32, (3, 4), special=False)
    x.view(-1)[:3] = torch.tensor([0.25, 0.1, -0.2])  # inside smooth_l1's beta and huber's delta
    grads = []
    for device in ("cpu", "plate"):
        leaf = x.clone().to(device).requires_grad_()
        loss = GRADIENTS[name](leaf)
        loss.backward()
        grads.append((loss.detach(), leaf.grad))
    (cpu_loss, cpu_grad), (plate_loss, plate_grad) = grads
    same(plate_loss, cpu_loss, torch.float32)
    same(plate_grad, cpu_grad, torch.float32)


def test_binary_cross_entropy_outside_0_1_raises_the_cpu_error_on_the_host():
    x = torch.tensor([0.5, 1.5])
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(x, torch.ones(2))
    torch.plate.reset_host_ops()
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(x.to("plate"), torch.ones(2, device="plate"))
    assert torch.plate.host_ops()["aten.binary_cross_entropy"] == 1
