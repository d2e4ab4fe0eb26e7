"""aten._embedding_bag on plate against the CPU: sum, mean and max, padding_idx, per_sample_weights,
include_last_offset (its offsets in CSR form, the last one the number of indices), empty bags (CUDA's max
gives index -1 there, the CPU 0), no bag at all; and a bag list too long for a (bags x indices) table."""

from __future__ import annotations

import pytest
import torch

import triton_plate_backend  # noqa: F401  (registers the plate device)

MODES = {"sum": 0, "mean": 1, "max": 2}


def _bag(w, idx, off, mode, ilo, pad, psw):
    return torch.ops.aten._embedding_bag(w, idx, off, False, MODES[mode], False, psw, ilo, -1 if pad is None else pad)


def _on_plate(*ts):
    return [None if t is None else t.to("plate") for t in ts]


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("mode", MODES)
def test_embedding_bag_matches_the_cpu(seed, mode):
    g = torch.Generator().manual_seed(seed)
    V, D, n = 3 + seed, 1 + seed % 4, (0, 1, 7, 19)[seed % 4] + seed
    w = torch.randn(V, D, generator=g)
    if seed % 3 == 0:
        w = w.round()  # ties: the first index of the bag holding the max
    if seed % 5 == 1:
        w[seed % V, 0] = float("nan")
    idx = torch.randint(0, V, (n,), generator=g)
    bags = 1 + seed % 6
    off = torch.sort(torch.randint(0, n + 1, (bags,), generator=g))[0]
    off[0] = 0
    for ilo in (False, True):
        offsets = torch.cat([off, torch.tensor([n])]) if ilo else off
        for pad in (None, int(idx[0]) if n else 0):
            psw = torch.rand(n, generator=g) if mode == "sum" and seed % 2 else None
            cpu = _bag(w, idx, offsets, mode, ilo, pad, psw)
            got = [t.cpu() for t in _bag(*_on_plate(w, idx, offsets), mode, ilo, pad, *_on_plate(psw))]
            torch.testing.assert_close(got[0], cpu[0], equal_nan=True, rtol=1e-5, atol=1e-5)
            if mode == "max":
                ends = [*offsets[1:].tolist(), *([] if ilo else [n])]
                kept = [i for i in range(n) if pad is None or int(idx[i]) != pad]
                empty = torch.tensor([not any(b <= i < e for i in kept) for b, e in zip(offsets.tolist(), ends)])
                expected = torch.where(empty.unsqueeze(-1), -1, cpu[3])  # CUDA's -1 for an empty bag
                assert torch.equal(got[3], expected)


def test_no_bag():
    w, idx = torch.randn(4, 3), torch.tensor([0, 1, 2])
    for mode in MODES:
        got = _bag(*_on_plate(w, idx, torch.tensor([0])), mode, True, None, None)
        assert got[0].shape == (0, 3)


def test_many_bags_use_memory_linear_in_the_indices():
    """200k indices in 50k bags: a (bags x indices) comparison would be 10 GB; the result is the CPU's."""
    g = torch.Generator().manual_seed(0)
    n, bags, V, D = 200_000, 50_000, 1000, 2
    w = torch.randn(V, D, generator=g)
    idx = torch.randint(0, V, (n,), generator=g)
    off = torch.sort(torch.randint(0, n, (bags,), generator=g))[0]
    off[0] = 0
    for mode in ("sum", "max"):
        cpu = _bag(w, idx, off, mode, False, None, None)
        got = _bag(*_on_plate(w, idx, off), mode, False, None, None)
        torch.testing.assert_close(got[0].cpu(), cpu[0], rtol=1e-5, atol=1e-5)


def test_index_into_an_empty_dim_raises_index_error():
    """An index into a dim of size 0 is out of bounds (index_add, x[idx] = v), not a memory fault."""
    x = torch.zeros(0, device="plate")
    with pytest.raises(IndexError, match="out of bounds"):
        x.index_add(0, torch.tensor([0], device="plate"), torch.ones(1, device="plate"))
    with pytest.raises(IndexError, match="out of bounds"):
        x[torch.tensor([0], device="plate")] = 1.0
