"""randperm and multinomial on plate (eager_ops/random_sampling.py): plate's own draws, no host op; permutations
are permutations, the samples follow the probabilities (frequencies within a few standard errors, seeded) and never
draw a zero-probability category before the others; what torch rejects raises torch's error from the host."""

from __future__ import annotations

import pytest
import torch

from triton_plate_backend import eager_ops

eager_ops.register()


@pytest.fixture
def seeded(no_host_ops):
    torch.plate.manual_seed(1234)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.uint8])
def test_randperm_is_a_permutation_of_its_dtype(dtype, seeded):
    for n in (0, 1, 7, 200):
        n = min(n, 256)
        p = torch.randperm(n, dtype=dtype, device="plate")
        assert p.device.type == "plate" and p.dtype == dtype and p.shape == (n,)
        assert torch.equal(p.cpu().sort().values, torch.arange(n, dtype=dtype))
    shuffled = torch.randperm(200, device="plate").cpu()
    assert not torch.equal(shuffled, torch.arange(200))


def test_randperm_follows_its_generator(seeded):
    g = torch.Generator(device="plate")
    first = torch.randperm(50, device="plate", generator=g.manual_seed(7)).cpu()
    again = torch.randperm(50, device="plate", generator=g.manual_seed(7)).cpu()
    other = torch.randperm(50, device="plate", generator=g.manual_seed(8)).cpu()
    assert torch.equal(first, again) and not torch.equal(first, other)


def test_randperm_is_uniform_over_positions(seeded):
    counts = torch.zeros(5, 5)
    for _ in range(400):
        counts[torch.arange(5), torch.randperm(5, device="plate").cpu()] += 1
    assert ((counts - 80).abs() < 5 * 80**0.5).all()  # each value at each place 1/5 of the time


def test_multinomial_with_replacement_follows_the_probabilities(seeded):
    p = torch.tensor([[0.1, 0.0, 0.4, 0.5, 0.0], [0.0, 0.0, 0.0, 0.0, 2.0]], device="plate")  # unnormalized is fine
    samples = torch.multinomial(p, 4000, replacement=True)
    assert samples.shape == (2, 4000) and samples.dtype == torch.int64
    counts = torch.stack([torch.bincount(row, minlength=5) for row in samples.cpu()]).double()
    expected = torch.tensor([[400.0, 0, 1600, 2000, 0], [0, 0, 0, 0, 4000]])
    assert ((counts - expected).abs() <= 5 * expected.sqrt()).all()  # zero categories never drawn
    one = torch.multinomial(p[0], 3, True)
    assert one.shape == (3,)


def test_multinomial_without_replacement_draws_distinct_categories(seeded):
    p = torch.tensor([0.1, 0.0, 0.4, 0.5, 0.0], device="plate")
    firsts = torch.zeros(5)
    for _ in range(300):
        s = torch.multinomial(p, 4).cpu()
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
