"""isa.program.Tile.of: the tile `Tile(...)` makes, without the dataclass' checked path where the fields are
already plain (the code generator's views); anything else goes through `Tile(...)`, its conversions and its
errors."""

from __future__ import annotations

import numpy as np
import pytest

from triton_plate_backend.errors import IsaError
from triton_plate_backend.isa.program import Tile


def _same(a: Tile, b: Tile) -> bool:
    return (
        a == b
        and hash(a) == hash(b)
        and list(vars(a).items()) == list(vars(b).items())
        and all(type(x) is int for x in b.shape + b.strides)
        and (a.span(), a.is_contiguous(), a.numel) == (b.span(), b.is_contiguous(), b.numel)
    )


@pytest.mark.parametrize(
    "fields",
    [
        (128, "f32", (64, 32), (32, 1)),
        (0, "bf16", (16,), (1,)),
        (64, "i8", (), ()),
        (256, "f16", (8, 4), (1, 8)),  # transposed
        (192, "f32", (4, 1, 8), (0, 0, 1)),  # broadcast
        (64, "f32", (2, 3), (-3, 1)),  # negative stride
    ],
)
def test_plain_fields_make_the_dataclass_tile(fields):
    assert _same(Tile(*fields), Tile.of(*fields))


@pytest.mark.parametrize(
    "fields",
    [
        (128, "f32", [64, 32], [32, 1]),  # lists: made tuples
        (128, "f32", (np.int64(64), 32), (32, np.int32(1))),  # numpy ints: made ints
        (np.int64(128), "f32", (64, 32), (32, 1)),
        (128, "f32", (True, 32), (32, 1)),  # (a bool is an int subclass: made an int)
    ],
)
def test_other_fields_go_through_the_dataclass(fields):
    assert _same(Tile(*fields), Tile.of(*fields))


@pytest.mark.parametrize(
    "fields, message", [((0, "q7", (4,), (1,)), "dtype"), ((0, "f32", (4, 4), (1,)), "2 dims but 1 strides")]
)
def test_bad_fields_raise_as_the_dataclass_does(fields, message):
    with pytest.raises(IsaError, match=message):
        Tile.of(*fields)
