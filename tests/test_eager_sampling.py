"""multinomial and randperm on plate (eager_ops/sampling.py) with no host op: the draws follow the distribution
(frequencies of a seeded run within a few standard deviations), zero-probability categories never come up,
samples without replacement are distinct, a seed reproduces the draws, and the CPU's errors where it refuses."""

from __future__ import annotations

import pytest
import torch

import triton_plate_backend.torch_device  # noqa: F401 - registers the plate device
from triton_plate_backend import eager_ops
from triton_plate_backend.torch_device.host_op_counter import host_op_scope

eager_ops.register()

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
    [
        ([0.0, 0.0], 1, False),
        ([[1.0, 1.0], [0.0, 0.0]], 1, True),
        ([-1.0, 2.0], 1, False),
        ([1.0, float("nan")], 2, True),
        ([1.0, float("inf")], 2, False),
        ([1.0, 2.0], 3, False),
    ],
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


# Permutations of every integer result type, uniform over positions; multinomial per generator (s22-lib).
@pytest.fixture
def seeded_plate(no_host_ops):
    torch.plate.manual_seed(1234)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.uint8])
def test_randperm_is_a_permutation_of_its_dtype(dtype, seeded_plate):
    for n in (0, 1, 7, 200):
        n = min(n, 256)
        p = torch.randperm(n, dtype=dtype, device="plate")
        assert p.device.type == "plate" and p.dtype == dtype and p.shape == (n,)
        assert torch.equal(p.cpu().sort().values, torch.arange(n, dtype=dtype))
    shuffled = torch.randperm(200, device="plate").cpu()
    assert not torch.equal(shuffled, torch.arange(200))


def test_randperm_follows_its_generator(seeded_plate):
    g = torch.Generator(device="plate")
    first = torch.randperm(50, device="plate", generator=g.manual_seed(7)).cpu()
    again = torch.randperm(50, device="plate", generator=g.manual_seed(7)).cpu()
    other = torch.randperm(50, device="plate", generator=g.manual_seed(8)).cpu()
    assert torch.equal(first, again) and not torch.equal(first, other)


def test_randperm_is_uniform_over_positions(seeded_plate):
    counts = torch.zeros(5, 5)
    for _ in range(400):
        counts[torch.arange(5), torch.randperm(5, device="plate").cpu()] += 1
    assert ((counts - 80).abs() < 5 * 80**0.5).all()  # each value at each place 1/5 of the time


def test_multinomial_with_replacement_follows_the_probabilities(seeded_plate):
    p = torch.tensor([[0.1, 0.0, 0.4, 0.5, 0.0], [0.0, 0.0, 0.0, 0.0, 2.0]], device="plate")  # unnormalized is fine
    samples = torch.multinomial(p, 4000, replacement=True)
    assert samples.shape == (2, 4000) and samples.dtype == torch.int64
    counts = torch.stack([torch.bincount(row, minlength=5) for row in samples.cpu()]).double()
    expected = torch.tensor([[400.0, 0, 1600, 2000, 0], [0, 0, 0, 0, 4000]])
    assert ((counts - expected).abs() <= 5 * expected.sqrt()).all()  # zero categories never drawn
    one = torch.multinomial(p[0], 3, True)
    assert one.shape == (3,)


def test_multinomial_without_replacement_draws_distinct_categories(seeded_plate):
    p = torch.tensor([0.1, 0.0, 0.4, 0.5, 0.0])
    for _ in range(3):  # the 1-D form
        s = torch.multinomial(p.to("plate"), 4).cpu()
        assert s.shape == (4,) and len(set(s.tolist())) == 4 and set(s[:3].tolist()) == {0, 2, 3}
    # the 300 draws as the rows of one call (each row its own exponential draws: the same kernels as 300 1-D
    # calls, which took 12 s of the suite for their launches)
    firsts = torch.zeros(5)
    for s in torch.multinomial(p.expand(300, 5).contiguous().to("plate"), 4).cpu():
        assert len(set(s.tolist())) == 4
        assert set(s[:3].tolist()) == {0, 2, 3}  # the nonzero categories before any zero one
        firsts[s[0]] += 1
    expected = torch.tensor([30.0, 0, 120, 150, 0])
    assert ((firsts - expected).abs() <= 5 * expected.sqrt()).all()


def test_what_torch_rejects_raises_from_the_host():
    p = torch.tensor([0.5, 0.5], device="plate")
    torch.plate.reset_host_ops()
    with pytest.raises(RuntimeError, match="without replacement"):
        torch.multinomial(p, 3)
    with pytest.raises(RuntimeError):
        torch.multinomial(-p, 1)
    assert torch.plate.host_ops() == {"aten.multinomial": 2}


def test_without_replacement_more_samples_than_nonzero_categories():
    """The CPU (torch's device-generic algorithm, as CUDA) raises no error when fewer categories than samples
    have a nonzero probability: after the nonzero ones (in some order) come zero-probability ones."""
    p = torch.tensor([[0.5, 0.0, 0.5, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0, 0.0]])
    expected = torch.multinomial(p, 3, False)
    drawn = seeded(lambda: torch.multinomial(p.to("plate"), 3, False))
    assert drawn.shape == expected.shape == (2, 3)
    for row in drawn.tolist():
        assert len(set(row)) == 3
    assert set(drawn[0, :2].tolist()) == set(expected[0, :2].tolist()) == {0, 2}
    assert drawn[1, 0] == expected[1, 0] == 3
