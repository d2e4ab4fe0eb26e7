"""cat's small inputs several to a launch (eager_ops/cat_kernels.py's cat_parts, launch.copy_parts): for each dtype,
1 to 4 dims, 1 to 9 inputs and inputs that are views (permuted, strided slices), the CPU's bits in ceil(inputs /
PARTS) launches; and one compile of cat_parts per PARTS, whatever the inputs' sizes, strides and addresses (none of
its arguments is specialized on its value), whose signature holds the arguments of PARTS parts only."""

from __future__ import annotations

import math

import pytest
import torch

from triton_plate_backend import eager_ops
from triton_plate_backend.eager_ops import cat_kernels
from triton_plate_backend.sim.device import Device

eager_ops.register()

DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int8, torch.bool)
SHAPE = (2, 3, 2, 3)  # a part's shape over its first dims, but along the cat dim


def bits(t: torch.Tensor) -> torch.Tensor:
    return t.cpu().contiguous().view(torch.uint8)


def source(shape, dtype, g) -> torch.Tensor:
    """A CPU tensor of ``shape``: signed values, and a NaN and a -0.0 where it is floating point."""
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if not dtype.is_floating_point:
        return torch.randint(-100, 100, shape, generator=g).to(dtype)
    t = (torch.randn(shape, generator=g) * 100).to(dtype)
    t.view(-1)[0] = float("nan")
    t.view(-1)[-1] = -0.0
    return t


def part(shape, kind: int, dtype, g) -> tuple[torch.Tensor, torch.Tensor]:
    """(the CPU tensor, the same view of it on plate) of ``shape``: contiguous (kind 0), a permutation of a
    contiguous tensor (kind 1, over 2 dims or more), every other element of a tensor twice as long (kind 2)."""
    if kind == 1 and len(shape) > 1:
        base = source(shape[::-1], dtype, g)
        dims = tuple(range(len(shape)))[::-1]
        return base.permute(dims), base.to("plate").permute(dims)
    if kind:
        base = source((*shape[:-1], 2 * shape[-1]), dtype, g)
        return base[..., ::2], base.to("plate")[..., ::2]
    base = source(shape, dtype, g)
    return base, base.to("plate")


@pytest.fixture
def launches(monkeypatch):
    count = []
    real = Device.launch
    monkeypatch.setattr(Device, "launch", lambda self, *a, **k: count.append(1) or real(self, *a, **k))
    return count


@pytest.mark.parametrize("n", range(1, 10))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_a_cat_of_small_inputs_is_the_cpus_bits_in_one_launch_per_parts(dtype, n, launches, no_host_ops):
    g = torch.Generator().manual_seed(n)
    for dims in range(1, 5):
        for dim in {0, dims - 1}:
            parts = []
            for j in range(n):
                shape = list(SHAPE[:dims])
                shape[dim] = 1 + j % 3
                parts.append(part(tuple(shape), j % 3, dtype, g))
            launches.clear()
            out = torch.cat([p for _, p in parts], dim)
            want = torch.cat([c for c, _ in parts], dim)
            assert len(launches) == math.ceil(n / cat_kernels.PARTS)
            assert out.device.type == "plate" and out.dtype == want.dtype and out.shape == want.shape
            assert torch.equal(bits(out), bits(want)), (dims, dim)


def test_cat_parts_compiles_once_per_parts_whatever_the_sizes_strides_and_addresses(launches, no_host_ops):
    def variants() -> set:
        return {key for caches in cat_kernels.cat_parts.device_caches.values() for key in caches[0]}

    before = variants()
    # rows of 1 and 16 elements, unit strides, rows that start 16-byte aligned and not: a value a specializing
    # kernel would compile again for
    for length in (1, 2, 3, 7, 16, 33):
        rows = [torch.arange(length * j, length * (j + 1), dtype=torch.float32) for j in range(3)]
        launches.clear()
        out = torch.stack([r.to("plate") for r in rows])
        assert len(launches) == 1
        assert torch.equal(out.cpu(), torch.stack(rows))
    assert len(variants() - before) <= 1  # PARTS 4, DIMS 1, float32: one compile, or none where it was there


def test_a_cat_parts_compile_takes_the_arguments_of_its_parts_only(no_host_ops):
    torch.stack([torch.arange(3.0).to("plate") for _ in range(2)])  # PARTS 2
    compiled = [k for caches in cat_kernels.cat_parts.device_caches.values() for k in caches[0].values()]
    arguments = {sum(t != "constexpr" for t in k.src.signature.values()) for k in compiled}
    assert 2 * 14 in arguments  # the parts past PARTS are None: constexprs, out of the launch's arguments
    assert arguments <= {2 * 14, 4 * 14, 8 * 14}
