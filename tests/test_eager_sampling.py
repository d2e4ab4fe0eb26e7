"""multinomial and randperm on plate (eager_ops/sampling.py) with no host op: the draws follow the distribution
(frequencies of a seeded run within a few standard deviations), zero-probability categories never come up,
samples without replacement are distinct, a seed reproduces the draws, and the CPU's errors where it refuses."""

from __future__ import annotations

import pytest
import torch

import triton_plate_backend.torch_device  # noqa: F401 - registers the plate device
from triton_plate_backend.torch_device.host_op_counter import host_op_scope

PROBABILITIES = [0.1, 0.0, 0.6, 0.3]


def seeded(fn, seed=0):
    torch.plate.manual_seed(seed)
    with host_op_scope() as ops:
        result = fn()
    assert not ops, ops
    return result.cpu()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64])
@pytest.mark.parametrize("replacement", [True, False])
def test_one_sample_per_row_follows_the_distribution(replacement, dtype):
    p = torch.tensor(PROBABILITIES, dtype=dtype, device="plate").expand(8000, 4).contiguous()
    drawn = seeded(lambda: torch.multinomial(p, 1, replacement))
    assert drawn.shape == (8000, 1) and drawn.dtype == torch.int64
    frequencies = torch.bincount(drawn.flatten(), minlength=4) / 8000
    torch.testing.assert_close(frequencies, torch.tensor(PROBABILITIES, dtype=frequencies.dtype), rtol=0, atol=0.03)
    assert frequencies[1] == 0


def test_with_replacement_many_samples_and_a_seed_reproduces_them():
    p = torch.tensor([[1.0, 3.0, 0.0, 4.0], [0.0, 0.0, 2.0, 0.0]], device="plate")  # unnormalized weights
    drawn = seeded(lambda: torch.multinomial(p, 8000, True))
    assert drawn.shape == (2, 8000)
    frequencies = torch.bincount(drawn[0], minlength=4) / 8000
    torch.testing.assert_close(frequencies, torch.tensor([0.125, 0.375, 0.0, 0.5]), rtol=0, atol=0.03)
    assert bool((drawn[1] == 2).all())
    assert torch.equal(seeded(lambda: torch.multinomial(p, 8000, True)), drawn)
    assert not torch.equal(seeded(lambda: torch.multinomial(p, 8000, True), seed=1), drawn)


def test_without_replacement_samples_are_distinct():
    p = torch.rand(50, 6, generator=torch.Generator().manual_seed(0)).to("plate")
    drawn = seeded(lambda: torch.multinomial(p, 6))
    assert torch.equal(drawn.sort(1).values, torch.arange(6).expand(50, 6))
    g = torch.Generator("plate").manual_seed(5)
    with host_op_scope() as ops:
        first = torch.multinomial(p[0], 3, generator=g).cpu()
    assert not ops, ops
    assert first.shape == (3,) and len(set(first.tolist())) == 3


@pytest.mark.parametrize(
    "probabilities, count, replacement",
    [([0.0, 0.0], 1, False), ([-1.0, 2.0], 1, False), ([1.0, float("nan")], 2, True), ([1.0, 2.0], 3, False)],
)
def test_the_cpus_errors(probabilities, count, replacement):
    p = torch.tensor(probabilities)
    with pytest.raises(RuntimeError) as on_cpu:
        torch.multinomial(p, count, replacement)
    with pytest.raises(RuntimeError) as on_plate:
        torch.multinomial(p.to("plate"), count, replacement)
    assert str(on_plate.value) == str(on_cpu.value)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_randperm_is_a_permutation_reproduced_by_its_generator(dtype):
    perm = seeded(lambda: torch.randperm(1000, device="plate", dtype=dtype))
    assert perm.dtype == dtype and torch.equal(perm.sort().values, torch.arange(1000, dtype=dtype))
    assert not torch.equal(perm, torch.arange(1000, dtype=dtype))
    g = torch.Generator("plate")
    with host_op_scope() as ops:
        a = torch.randperm(64, device="plate", generator=g.manual_seed(7)).cpu()
        b = torch.randperm(64, device="plate", generator=g.manual_seed(7)).cpu()
        empty = torch.randperm(0, device="plate")
    assert not ops, ops
    assert torch.equal(a, b) and empty.shape == (0,)
