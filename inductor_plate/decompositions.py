"""plate's entries in Inductor's decomposition table (conv_gemm, extern_decomps).

Each of plate's decompositions returns NotImplemented for inputs it does not take (not on plate, shapes it
does not handle); the entry then hands the call to what the table held before, so other devices compile as
without plate. Installing twice keeps one layer: an entry knows it is plate's by its marker."""

from __future__ import annotations

import functools


def _falling_back_to(mine, previous, marker: str):
    """``mine`` for plate tensors; what the table held before (or no decomposition) for the rest."""

    @functools.wraps(mine)
    def decomposition(*args, **kwargs):
        result = mine(*args, **kwargs)
        if result is NotImplemented and previous is not None:
            return previous(*args, **kwargs)
        return result

    setattr(decomposition, marker, True)
    return decomposition


def install(table: dict, marker: str) -> None:
    """Put each op's decomposition of ``table`` in front of Inductor's, once per marker."""
    from torch._inductor import decomposition

    for op, mine in table.items():
        previous = decomposition.decompositions.get(op)
        if not getattr(previous, marker, False):
            decomposition.decompositions[op] = _falling_back_to(mine, previous, marker)
    decomposition.fast_random_decomps.cache_clear()
