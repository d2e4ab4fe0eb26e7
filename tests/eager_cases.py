"""One check for tables of eager cases: a function of a CPU tensor run on its plate copy."""

from __future__ import annotations

import pytest
import torch


def plate_and_cpu(fn, x: torch.Tensor):
    """(plate's result, the CPU's) of ``fn`` with no host op on plate; None where the CPU refuses the input (then
    plate raises the same error type, from the host, counted)."""
    try:
        expected = fn(x)
    except (RuntimeError, NotImplementedError) as e:
        torch.plate.reset_host_ops()
        with pytest.raises(type(e)):
            fn(x.to("plate"))
        assert torch.plate.host_ops() != {}
        return None
    torch.plate.reset_host_ops()
    result = fn(x.to("plate"))
    assert torch.plate.host_ops() == {}
    return result, expected


def case_params(cases: dict) -> list:
    """(name, dtype) of a table {name: (fn, dtypes)}: each case over the dtypes it lists."""
    return [(name, dtype) for name, (_, dtypes) in cases.items() for dtype in dtypes]
