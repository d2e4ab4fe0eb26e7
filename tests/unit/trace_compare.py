"""The one comparison of two traces' entries the simulator speed tests share: same pcs, and every
field (programs, bytes by domain, elements, runs) None in both or equal in dtype, shape and bytes."""

from __future__ import annotations


def assert_same_entries(entries, others) -> None:
    for e, f in zip(entries, others, strict=True):
        assert e.pc == f.pc
        for a, b in zip(
            (e.programs, e.bytes_by_domain, e.elements, e.runs), (f.programs, f.bytes_by_domain, f.elements, f.runs)
        ):
            assert (a is None) == (b is None)
            if a is not None:
                assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
