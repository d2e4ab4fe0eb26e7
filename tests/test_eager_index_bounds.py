"""An index outside its dim raises torch's error (the CPU's message; IndexError and RuntimeError both
catch it) and leaves the places of such indices unwritten, also where it would land inside the tensor (the
next row): the simulator's memory check alone would not see that."""

import pytest
import torch
import torch.nn.functional as F

import triton_plate_backend  # noqa: F401

ROWS = torch.tensor([5, 0, 0])  # 5: one past the last column, inside the next row of a 3 x 5 tensor

CASES = {
    "one_hot": lambda d: F.one_hot(ROWS.to(d), 5),
    "gather": lambda d: torch.zeros(3, 5, device=d).gather(1, ROWS.to(d)[:, None]),
    "scatter": lambda d: torch.zeros(3, 5, device=d).scatter(1, ROWS.to(d)[:, None], 1.0),
    "scatter_add": lambda d: torch.zeros(3, 5, device=d).scatter_add(
        1, ROWS.to(d)[:, None], torch.ones(3, 1, device=d)
    ),
    "scatter_reduce_amax": lambda d: torch.zeros(3, 5, device=d).scatter_reduce(
        1, ROWS.to(d)[:, None], torch.ones(3, 1, device=d), "amax"
    ),
    "scatter_reduce_prod": lambda d: torch.ones(3, 5, device=d).scatter_reduce(
        1, ROWS.to(d)[:, None], torch.ones(3, 1, device=d), "prod"
    ),
    "negative_index_select": lambda d: torch.zeros(3, 5, device=d).index_select(1, torch.tensor([-1]).to(d)),
    "negative": lambda d: torch.zeros(3, 5, device=d).gather(1, torch.full((3, 1), -6).to(d)),
    "index_select": lambda d: torch.zeros(3, 5, device=d).index_select(1, torch.tensor([0, 5]).to(d)),
    "index": lambda d: torch.zeros(5, 3, device=d)[torch.tensor([1, 5]).to(d)],
    "index_put": lambda d: torch.zeros(5, 3, device=d).index_put_((torch.tensor([5]).to(d),), torch.ones(3, device=d)),
    "index_two_dims": lambda d: torch.zeros(3, 5, device=d)[torch.tensor([0, 1]).to(d), torch.tensor([1, 5]).to(d)],
    "embedding": lambda d: F.embedding(torch.tensor([0, 9]).to(d), torch.zeros(5, 3, device=d)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_index_out_of_bounds_raises_as_on_the_cpu(name):
    with pytest.raises((IndexError, RuntimeError)) as cpu:
        CASES[name]("cpu")
    torch.plate.reset_host_ops()
    with pytest.raises(type(cpu.value)) as plate:
        CASES[name]("plate")
    assert "out of" in str(plate.value)
    assert torch.plate.host_ops() == {}


def test_the_message_names_the_index_the_dim_and_its_size():
    with pytest.raises(IndexError, match=r"index 5 is out of bounds for dimension 1 with size 5"):
        CASES["gather"]("plate")
    with pytest.raises(RuntimeError, match=r"index -6 is out of bounds for dimension 1 with size 5"):
        CASES["negative"]("plate")


def test_an_in_place_scatter_leaves_the_other_rows_unwritten():
    x = torch.zeros(3, 5, device="plate")
    with pytest.raises(IndexError):
        x.scatter_(1, ROWS.to("plate")[:, None], 1.0)
    assert x[1:].cpu().tolist() == torch.zeros(2, 5).scatter_(1, ROWS[1:, None], 1.0).tolist()
    assert x[0].cpu().tolist() == [0.0] * 5  # the bad index wrote nothing, not row 1's first element


def test_indices_in_bounds_still_run_on_plate():
    """(and a negative index counts from the end for x[idx] and index_put_, as on the CPU)"""
    idx = torch.tensor([[4], [0], [2]])
    torch.plate.reset_host_ops()
    got = torch.arange(15.0).view(3, 5).to("plate").gather(1, idx.to("plate"))
    assert got.cpu().tolist() == torch.arange(15.0).view(3, 5).gather(1, idx).tolist()
    assert torch.plate.host_ops() == {}
    x = torch.arange(15.0).view(5, 3)
    neg = torch.tensor([-1, 0, -5])
    assert x.to("plate")[neg.to("plate")].cpu().tolist() == x[neg].tolist()
    assert torch.plate.host_ops() == {}
