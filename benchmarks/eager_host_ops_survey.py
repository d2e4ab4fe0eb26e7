"""Which common eager aten ops still run on the host for plate tensors: runs a broad list of torch functions and
Tensor methods (float32/float16/bfloat16/int64/bool inputs, and the backward of the differentiable ones) on plate
tensors and prints, for each case, the host ops it counted (torch.plate.host_ops).

    python benchmarks/eager_host_ops_survey.py [--filter SUBSTRING] [--all]

Prints only the cases that ran something on the host (``--all``: every case), then the host ops by how many cases
hit them. A case whose call raises prints its error (the CPU raises it too for an unsupported dtype)."""

from __future__ import annotations

import argparse
import collections
import math

import torch
import torch.nn.functional as F

import triton_plate_backend  # noqa: F401  (the plate device and its eager kernels)


def _inputs(dtype: torch.dtype, shape=(3, 4)):
    g = torch.Generator().manual_seed(0)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=g) * 2).to(dtype)
    return torch.randint(-5, 6, shape, generator=g).to(dtype)


def _spd(a):
    """A symmetric positive definite matrix from the square ``a``."""
    return a @ a.mT + torch.eye(a.shape[-1], device=a.device)


FLOATS = (torch.float32, torch.float16, torch.bfloat16)
UNARY = (
    "abs neg sign sgn exp exp2 expm1 log log2 log10 log1p sqrt rsqrt sin cos tan asin acos atan sinh cosh tanh "
    "asinh acosh atanh sigmoid erf erfc erfinv ceil floor round trunc frac reciprocal square signbit isfinite "
    "isinf isnan isneginf isposinf nan_to_num positive angle logit i0 lgamma digamma deg2rad rad2deg fix relu "
    "logical_not bitwise_not"
).split()
BINARY = (
    "add sub mul div true_divide floor_divide remainder fmod atan2 arctan2 hypot logaddexp logaddexp2 copysign "
    "maximum minimum fmax fmin pow float_power xlogy nextafter heaviside gcd lcm bitwise_and bitwise_or bitwise_xor "
    "bitwise_left_shift bitwise_right_shift logical_and logical_or logical_xor eq ne lt le gt ge ldexp"
).split()
REDUCTIONS = (
    "sum mean prod amax amin max min argmax argmin std var logsumexp norm all any count_nonzero nansum nanmean "
    "median nanmedian aminmax"
).split()


def cases():
    """(name, function of nothing) pairs: each builds its plate inputs and calls the op."""
    out = []

    def add(name, fn):
        out.append((name, fn))

    for dtype in (*FLOATS, torch.int64, torch.bool):
        tag = str(dtype).removeprefix("torch.")
        for name in UNARY:
            add(f"{name}[{tag}]", lambda name=name, dtype=dtype: getattr(torch, name)(_inputs(dtype).to("plate")))
        for name in BINARY:
            add(
                f"{name}[{tag}]",
                lambda name=name, dtype=dtype: getattr(torch, name)(
                    _inputs(dtype).to("plate"), _inputs(dtype).flip(0).to("plate")
                ),
            )
        for name in REDUCTIONS:
            add(f"{name}(dim=1)[{tag}]", lambda name=name, dtype=dtype: getattr(torch, name)(
                _inputs(dtype).to("plate"), 1))  # fmt: skip
            add(f"{name}()[{tag}]", lambda name=name, dtype=dtype: getattr(torch, name)(_inputs(dtype).to("plate")))
        for name, fn in {
            "cumsum": lambda x: torch.cumsum(x, 1),
            "cumprod": lambda x: torch.cumprod(x, 1),
            "cummax": lambda x: torch.cummax(x, 1),
            "logcumsumexp": lambda x: torch.logcumsumexp(x, 1),
            "flip": lambda x: torch.flip(x, (0,)),
            "roll": lambda x: torch.roll(x, 1, 1),
            "roll(no dim)": lambda x: torch.roll(x, 2),
            "rot90": lambda x: torch.rot90(x),
            "tril": torch.tril,
            "triu": lambda x: torch.triu(x, 1),
            "diff": lambda x: torch.diff(x, dim=1),
            "diag": lambda x: torch.diag(x),
            "diagonal.sum": lambda x: torch.diagonal(x).sum(),
            "trace": torch.trace,
            "clone": torch.clone,
            "contiguous(t)": lambda x: x.t().contiguous(),
            "where(scalar)": lambda x: torch.where(x > 0, x, 0),
            "clamp(tensor)": lambda x: torch.clamp(x, x.flip(0), x.flip(0) + 1),
            "clamp(scalar)": lambda x: torch.clamp(x, -1, 1),
            "isin": lambda x: torch.isin(x, x[0]),
            "searchsorted": lambda x: torch.searchsorted(x.sort(1).values, x),
            "bucketize": lambda x: torch.bucketize(x, x[0].sort().values),
            "sort": lambda x: torch.sort(x, 1),
            "argsort": lambda x: torch.argsort(x, 1),
            "topk": lambda x: torch.topk(x, 2),
            "unique": lambda x: torch.unique(x),
            "masked_fill": lambda x: x.masked_fill(x > 0, 1),
            "repeat": lambda x: x.repeat(2, 1),
            "expand.contiguous": lambda x: x[:1].expand(3, 4).contiguous(),
            "stack": lambda x: torch.stack([x, x]),
            "cat": lambda x: torch.cat([x, x], 1),
            "index_select": lambda x: x.index_select(0, torch.tensor([2, 0], device="plate")),
            "gather": lambda x: x.gather(1, torch.zeros(3, 2, dtype=torch.long, device="plate")),
            "nonzero": torch.nonzero,
            "outer": lambda x: torch.outer(x[0], x[1]),
            "kron": lambda x: torch.kron(x[:2, :2], x[:2, :2]),
            "cross": lambda x: torch.linalg.cross(x[:, :3], x[:, 1:]),
            "cartesian_prod": lambda x: torch.cartesian_prod(x[0], x[1]),
            "tensordot": lambda x: torch.tensordot(x, x, dims=([1], [1])),
            "lerp": lambda x: torch.lerp(x, x.flip(0), 0.3),
            "addcmul": lambda x: torch.addcmul(x, x, x, value=0.5),
            "addcdiv": lambda x: torch.addcdiv(x, x, x.abs() + 1, value=0.5),
            "to(float64)": lambda x: x.to(torch.float64),
            "to(int32)": lambda x: x.to(torch.int32),
            "histc": lambda x: torch.histc(x.float(), 4),
            "bincount": lambda x: torch.bincount(x.abs().long().flatten()),
            "polar": lambda x: torch.polar(x.abs(), x),
            "nan_to_num": lambda x: torch.nan_to_num(x),
            "renorm": lambda x: torch.renorm(x, 2, 0, 1.0),
            "cosine_similarity": lambda x: F.cosine_similarity(x, x.flip(0)),
            "normalize": lambda x: F.normalize(x, dim=1),
            "softmax": lambda x: torch.softmax(x, 1),
            "log_softmax": lambda x: torch.log_softmax(x, 1),
            "softplus": F.softplus,
            "elu": F.elu,
            "selu": F.selu,
            "celu": F.celu,
            "leaky_relu": F.leaky_relu,
            "hardtanh": F.hardtanh,
            "hardsigmoid": F.hardsigmoid,
            "hardswish": F.hardswish,
            "mish": F.mish,
            "softshrink": F.softshrink,
            "hardshrink": F.hardshrink,
            "tanhshrink": F.tanhshrink,
            "threshold": lambda x: F.threshold(x, 0.1, 2.0),
            "glu": lambda x: F.glu(x, 1),
            "prelu": lambda x: F.prelu(x, torch.tensor([0.25], device="plate", dtype=x.dtype)),
            "rrelu(eval)": lambda x: F.rrelu(x, training=False),
            "logsigmoid": F.logsigmoid,
            "silu": F.silu,
            "gelu": F.gelu,
            "layer_norm": lambda x: F.layer_norm(x, (4,)),
            "rms_norm": lambda x: F.rms_norm(x, (4,)),
            "mse_loss": lambda x: F.mse_loss(x, x.flip(0)),
            "l1_loss": lambda x: F.l1_loss(x, x.flip(0)),
            "smooth_l1_loss": lambda x: F.smooth_l1_loss(x, x.flip(0)),
            "huber_loss": lambda x: F.huber_loss(x, x.flip(0)),
            "bce_with_logits": lambda x: F.binary_cross_entropy_with_logits(x, (x > 0).to(x.dtype)),
            "bce": lambda x: F.binary_cross_entropy(torch.sigmoid(x), (x > 0).to(x.dtype)),
            "kl_div": lambda x: F.kl_div(F.log_softmax(x, 1), F.softmax(x.flip(0), 1), reduction="batchmean"),
            "cross_entropy": lambda x: F.cross_entropy(x, torch.tensor([0, 1, 3], device="plate")),
            "pad(constant)": lambda x: F.pad(x, (1, 2)),
            "pad(reflect)": lambda x: F.pad(x[None], (1, 1), mode="reflect"),
            "pad(replicate)": lambda x: F.pad(x[None], (1, 1), mode="replicate"),
            "pad(circular)": lambda x: F.pad(x[None], (1, 1), mode="circular"),
            "interpolate(nearest)": lambda x: F.interpolate(x[None, None], scale_factor=2),
            "interpolate(bilinear)": lambda x: F.interpolate(x[None, None], scale_factor=2, mode="bilinear"),
            "embedding": lambda x: F.embedding(torch.tensor([0, 2], device="plate"), x),
            "one_hot": lambda x: F.one_hot(x.abs().long() % 4, 4),
            "matmul": lambda x: x @ x.t(),
            "linalg.vector_norm": lambda x: torch.linalg.vector_norm(x, dim=1),
            "linalg.matrix_norm": lambda x: torch.linalg.matrix_norm(x),
            "dist": lambda x: torch.dist(x, x.flip(0)),
            "cdist": lambda x: torch.cdist(x, x),
        }.items():
            add(f"{name}[{tag}]", lambda fn=fn, dtype=dtype: fn(_inputs(dtype).to("plate")))
    # indexing, selection, order statistics and other forms users hit (float32, bfloat16, int64)
    for dtype in (torch.float32, torch.bfloat16, torch.int64):
        tag = str(dtype).removeprefix("torch.")
        for name, fn in {
            "x[bool mask]": lambda x: x[x > 0],
            "x[bool mask] = v": lambda x: x.__setitem__(x > 0, 1),
            "x[rows, cols]": lambda x: x[torch.tensor([0, 2], device="plate"), torch.tensor([1, 3], device="plate")],
            "x[:, idx] = y": lambda x: x.__setitem__(
                (slice(None), torch.tensor([0, 2], device="plate")), x[:, :2].clone()
            ),
            "index_put_(accumulate)": lambda x: x.index_put_(
                (torch.tensor([0, 0, 2], device="plate"),), x[:3], accumulate=True
            ),
            "index_fill": lambda x: x.index_fill(1, torch.tensor([0, 2], device="plate"), 3),
            "index_copy": lambda x: x.index_copy(0, torch.tensor([2, 0], device="plate"), x[:2]),
            "take": lambda x: torch.take(x, torch.tensor([0, 5, 11], device="plate")),
            "put_": lambda x: x.put_(torch.tensor([0, 5], device="plate"), x[0, :2]),
            "put_(accumulate)": lambda x: x.put_(torch.tensor([0, 0], device="plate"), x[0, :2], accumulate=True),
            "masked_select": lambda x: torch.masked_select(x, x > 0),
            "masked_scatter": lambda x: x.masked_scatter(x > 0, x.flip(0)),
            "argwhere": torch.argwhere,
            "unique(counts)": lambda x: torch.unique(x, return_inverse=True, return_counts=True),
            "unique(dim=0)": lambda x: torch.unique(x, dim=0),
            "unique_consecutive": lambda x: torch.unique_consecutive(x, return_counts=True),
            "sort(stable)": lambda x: torch.sort(x, dim=1, stable=True, descending=True),
            "argsort(stable)": lambda x: torch.argsort(x, dim=0, stable=True),
            "msort": torch.msort,
            "topk(smallest)": lambda x: torch.topk(x, 2, largest=False),
            "kthvalue": lambda x: torch.kthvalue(x, 2, 1),
            "median(dim)": lambda x: torch.median(x, 1),
            "nanmedian(dim)": lambda x: torch.nanmedian(x, 0),
            "mode": lambda x: torch.mode(x, 1),
            "cummin": lambda x: torch.cummin(x, 0),
            "diag(vector)": lambda x: torch.diag(x[0]),
            "diag_embed": torch.diag_embed,
            "diagonal_scatter": lambda x: torch.diagonal_scatter(x, x[0, :3]),
            "select_scatter": lambda x: torch.select_scatter(x, x[1], 0, 0),
            "slice_scatter": lambda x: torch.slice_scatter(x, x[:, :2], 1, 0, 2),
            "tensor_split": lambda x: [t.contiguous() for t in torch.tensor_split(x, (1, 3), 1)],
            "block_diag": lambda x: torch.block_diag(x, x[:1]),
            "flip+narrow": lambda x: x.flip(1).narrow(1, 1, 2).contiguous(),
            "std(correction=0)": lambda x: torch.std(x.float(), 1, correction=0),
            "var_mean(correction=2)": lambda x: torch.var_mean(x.float(), 0, correction=2),
            "quantile": lambda x: torch.quantile(x.float(), 0.3, dim=1),
            "nanquantile": lambda x: torch.nanquantile(x.float(), torch.tensor([0.2, 0.9], device="plate"), dim=0),
            "cdist(p=1)": lambda x: torch.cdist(x.float(), x.float(), p=1),
            "pdist": lambda x: F.pdist(x.float()),
            "einsum": lambda x: torch.einsum("ij,kj->ik", x, x),
            "baddbmm": lambda x: torch.baddbmm(x[None], x[None], (x.t() @ x)[None]),
            "addbmm": lambda x: torch.addbmm(x, x[None], (x.t() @ x)[None]),
            "addr": lambda x: torch.addr(x, x[:, 0], x[0]),
            "logsumexp(-inf row)": lambda x: torch.logsumexp(x.float().masked_fill(x[:, :1] >= x.min(), -math.inf), 1),
            "softmax(int)": lambda x: torch.softmax(x, 1),
            "cov": lambda x: torch.cov(x.float()),
            "corrcoef": lambda x: torch.corrcoef(x.float()),
            "trapezoid": lambda x: torch.trapezoid(x.float(), dim=1),
            "cumulative_trapezoid": lambda x: torch.cumulative_trapezoid(x.float(), dim=1),
            "diff(n=2, prepend)": lambda x: torch.diff(x, n=2, dim=1, prepend=x[:, :1]),
            "histogram": lambda x: torch.histogram(x.float(), 4),
            "std_mean(dims)": lambda x: torch.std_mean(x.float(), (0, 1)),
            "count_nonzero(dims)": lambda x: torch.count_nonzero(x, (0, 1)),
            "vander": lambda x: torch.vander(x[0], 3),
            "complex mul": lambda x: (torch.complex(x.float(), x.float().flip(0)) * 2).abs(),
            "to_sparse": lambda x: x.to_sparse(),
        }.items():
            add(f"{name}[{tag}]", lambda fn=fn, dtype=dtype: fn(_inputs(dtype).to("plate")))
    # linear algebra (float32)
    for name, fn in {
        "linalg.inv": torch.linalg.inv,
        "linalg.solve": lambda a: torch.linalg.solve(a, a[:, :1]),
        "linalg.det": torch.linalg.det,
        "linalg.slogdet": torch.linalg.slogdet,
        "linalg.cholesky": lambda a: torch.linalg.cholesky(a @ a.mT + torch.eye(4, device="plate")),
        "linalg.qr": torch.linalg.qr,
        "linalg.svd": torch.linalg.svd,
        "linalg.eigh": lambda a: torch.linalg.eigh(a + a.mT),
        "linalg.lstsq": lambda a: torch.linalg.lstsq(a, a[:, :1]),
        "triangular_solve": lambda a: torch.linalg.solve_triangular(
            a.triu() + 4 * torch.eye(4, device="plate"), a, upper=True
        ),  # fmt: skip
        "linalg.pinv": torch.linalg.pinv,
        "linalg.lu_factor": torch.linalg.lu_factor,
        "linalg.lu_solve": lambda a: torch.linalg.lu_solve(*torch.linalg.lu_factor(a), a[:, :2]),
        "linalg.lu": torch.linalg.lu,
        "linalg.inv(batched)": lambda a: torch.linalg.inv(torch.stack([a, a.mT]) + 4 * torch.eye(4, device="plate")),
        "cholesky_solve": lambda a: torch.cholesky_solve(a, torch.linalg.cholesky(_spd(a))),
        "cholesky_inverse": lambda a: torch.cholesky_inverse(torch.linalg.cholesky(_spd(a))),
        "linalg.householder_product": lambda a: torch.linalg.householder_product(*torch.geqrf(a)),
        "linalg.eigvalsh": lambda a: torch.linalg.eigvalsh(a + a.mT),
        "linalg.matrix_exp": torch.linalg.matrix_exp,
        "linalg.eig": torch.linalg.eig,
        "linalg.ldl_factor": lambda a: torch.linalg.ldl_factor(_spd(a)),
        "backward linalg.solve": lambda a: torch.autograd.grad(
            torch.linalg.solve(a.requires_grad_(), a[:, :1].detach()).sum(), a
        ),  # fmt: skip
        "backward linalg.det": lambda a: torch.autograd.grad(torch.linalg.det(a.requires_grad_()), a),
    }.items():
        add(f"{name}[float32]", lambda fn=fn: fn(_inputs(torch.float32, (4, 4)).to("plate")))
    # float64 and complex linear algebra
    for name, fn in {
        "linalg.solve[float64]": lambda a: torch.linalg.solve(a.double(), a[:, :1].double()),
        "linalg.qr[float64]": lambda a: torch.linalg.qr(a.double()),
        "linalg.inv[complex64]": lambda a: torch.linalg.inv(torch.complex(a, a.mT) + 4 * torch.eye(4, device="plate")),
    }.items():
        add(name, lambda fn=fn: fn(_inputs(torch.float32, (4, 4)).to("plate")))
    # pointwise and sampling ops real code hits outside the lists above
    z = lambda: torch.complex(_inputs(torch.float32), _inputs(torch.float32).flip(0)).to("plate")  # noqa: E731
    volume = lambda: _inputs(torch.float32, (1, 2, 3, 4, 4)).to("plate")  # noqa: E731
    grid = lambda: (_inputs(torch.float32, (1, 2, 3, 2, 3)).tanh()).to("plate")  # noqa: E731
    for name, fn in {
        "frexp[float32]": lambda: torch.frexp(_inputs(torch.float32).to("plate")),
        "sqrt[complex64]": lambda: torch.sqrt(z()),
        "reciprocal[complex64]": lambda: torch.reciprocal(z()),
        "pow(2.5)[complex64]": lambda: torch.pow(z(), 2.5),
        "prod[complex64]": lambda: torch.prod(z()),
        "mv[complex64]": lambda: torch.mv(z(), z()[0]),
        "grid_sample 3d": lambda: F.grid_sample(volume(), grid(), align_corners=False),
        "backward grid_sample 3d": lambda: (
            F.grid_sample(volume().requires_grad_(), grid(), align_corners=False).sum().backward()
        ),
        "interpolate(bilinear, antialias)": lambda: F.interpolate(
            _inputs(torch.float32, (1, 1, 8, 8)).to("plate"), size=(3, 3), mode="bilinear", antialias=True
        ),
        "fractional_max_pool2d": lambda: F.fractional_max_pool2d(
            _inputs(torch.float32, (1, 1, 8, 8)).to("plate"), 2, output_size=(4, 4)
        ),
    }.items():
        add(name, fn)
    # complex and misc
    add("fft.rfft", lambda: torch.fft.rfft(_inputs(torch.float32).to("plate")))
    add("fft.fft", lambda: torch.fft.fft(_inputs(torch.float32).to("plate")))
    add("stft-free: view_as_complex", lambda: torch.view_as_complex(_inputs(torch.float32, (3, 2)).to("plate")))
    add("randperm", lambda: torch.randperm(5, device="plate"))
    add("multinomial", lambda: torch.multinomial(_inputs(torch.float32).abs().to("plate"), 2))
    add("linspace", lambda: torch.linspace(0, 1, 5, device="plate"))
    add("logspace", lambda: torch.logspace(0, 1, 5, device="plate"))
    add("full", lambda: torch.full((2, 3), 1.5, device="plate"))
    add("tril_indices", lambda: torch.tril_indices(3, 3, device="plate"))
    add("triu_indices", lambda: torch.triu_indices(3, 3, device="plate"))
    add(
        "meshgrid",
        lambda: [
            t.contiguous()
            for t in torch.meshgrid(torch.arange(3, device="plate"), torch.arange(2, device="plate"), indexing="ij")
        ],
    )
    # backward of common ops (float32 leaves)
    for name, fn in {
        "sum": lambda x: x.sum(),
        "mean": lambda x: x.mean(),
        "prod": lambda x: x.prod(),
        "prod(dim)": lambda x: x.prod(1).sum(),
        "cumsum": lambda x: x.cumsum(1).sum(),
        "cumprod": lambda x: x.cumprod(1).sum(),
        "pow": lambda x: (x**3).sum(),
        "atan2": lambda x: torch.atan2(x, x.flip(0)).sum(),
        "hypot": lambda x: torch.hypot(x, x.flip(0)).sum(),
        "abs": lambda x: x.abs().sum(),
        "clamp": lambda x: x.clamp(-1, 1).sum(),
        "max(dim)": lambda x: x.max(1).values.sum(),
        "amax": lambda x: x.amax(1).sum(),
        "norm": lambda x: x.norm(),
        "std": lambda x: x.std(),
        "var": lambda x: x.var(1).sum(),
        "logsumexp": lambda x: x.logsumexp(1).sum(),
        "softmax": lambda x: torch.softmax(x, 1).pow(2).sum(),
        "log_softmax": lambda x: torch.log_softmax(x, 1).sum(),
        "layer_norm": lambda x: F.layer_norm(x, (4,)).pow(2).sum(),
        "gelu": lambda x: F.gelu(x).sum(),
        "silu": lambda x: F.silu(x).sum(),
        "elu": lambda x: F.elu(x).sum(),
        "leaky_relu": lambda x: F.leaky_relu(x).sum(),
        "softplus": lambda x: F.softplus(x).sum(),
        "hardtanh": lambda x: F.hardtanh(x).sum(),
        "hardswish": lambda x: F.hardswish(x).sum(),
        "mish": lambda x: F.mish(x).sum(),
        "mse_loss": lambda x: F.mse_loss(x, x.detach().flip(0)),
        "smooth_l1_loss": lambda x: F.smooth_l1_loss(x, x.detach().flip(0)),
        "bce_with_logits": lambda x: F.binary_cross_entropy_with_logits(x, (x.detach() > 0).float()),
        "cross_entropy": lambda x: F.cross_entropy(x, torch.tensor([0, 1, 3], device="plate")),
        "matmul": lambda x: (x @ x.t()).sum(),
        "index_select": lambda x: x.index_select(0, torch.tensor([2, 0], device="plate")).sum(),
        "gather": lambda x: x.gather(1, torch.zeros(3, 2, dtype=torch.long, device="plate")).sum(),
        "roll": lambda x: x.roll(1, 1).pow(2).sum(),
        "flip": lambda x: x.flip(1).pow(2).sum(),
        "lerp": lambda x: torch.lerp(x, x.flip(0), 0.3).sum(),
        "where": lambda x: torch.where(x > 0, x, x * 2).sum(),
        "sort": lambda x: x.sort(1).values.pow(2).sum(),
        "topk": lambda x: x.topk(2).values.sum(),
        "cosine_similarity": lambda x: F.cosine_similarity(x, x.detach().flip(0)).sum(),
        "normalize": lambda x: F.normalize(x, dim=1).pow(2).sum(),
        "pad(reflect)": lambda x: F.pad(x[None], (1, 1), mode="reflect").pow(2).sum(),
        "interpolate(bilinear)": lambda x: F.interpolate(x[None, None], scale_factor=2, mode="bilinear").sum(),
        "interpolate(bicubic)": lambda x: F.interpolate(x[None, None], scale_factor=2, mode="bicubic").pow(2).sum(),
        "multi_margin_loss": lambda x: F.multi_margin_loss(x, torch.tensor([0, 1, 3], device="plate")),
        "logcumsumexp": lambda x: x.logcumsumexp(1).pow(2).sum(),
        "embedding": lambda x: F.embedding(torch.tensor([0, 2, 2], device="plate"), x).sum(),
        "unfold": lambda x: x.unfold(1, 2, 1).pow(2).sum(),
        "xlogy": lambda x: torch.xlogy(x, x.abs() + 1).sum(),
        "logaddexp": lambda x: torch.logaddexp(x, x.flip(0)).sum(),
        "tanh": lambda x: x.tanh().sum(),
        "sigmoid": lambda x: x.sigmoid().sum(),
        "sqrt": lambda x: x.abs().sqrt().sum(),
        "rsqrt": lambda x: (x.abs() + 1).rsqrt().sum(),
        "exp": lambda x: x.exp().sum(),
        "log": lambda x: (x.abs() + 1).log().sum(),
        "sin": lambda x: x.sin().sum(),
        "dropout(eval)": lambda x: F.dropout(x, 0.5, training=False).sum(),
    }.items():

        def run(fn=fn):
            x = _inputs(torch.float32).to("plate").requires_grad_()
            fn(x).backward()
            return x.grad

        add(f"backward {name}[float32]", run)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--filter", default="")
    parser.add_argument("--all", action="store_true")
    args = parser.parse_args()
    hits: collections.Counter[str] = collections.Counter()
    ran = 0
    for name, fn in cases():
        if args.filter not in name:
            continue
        ran += 1
        error = None
        torch.plate.reset_host_ops()  # process-wide: backward runs on autograd's device thread
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - the CPU refuses the dtype too, say
            error = f"{type(e).__name__}: {str(e).splitlines()[0][:80]}"
        ops = torch.plate.host_ops()
        if ops or args.all or error:
            print(f"{name:40s} {dict(ops) if ops else ''} {('! ' + error) if error else ''}", flush=True)
        for op in ops:
            hits[op] += 1
    print(f"\n{ran} cases; host ops by the number of cases that ran them:")
    for op, n in hits.most_common():
        print(f"  {op:40s} {n}")


if __name__ == "__main__":
    main()
