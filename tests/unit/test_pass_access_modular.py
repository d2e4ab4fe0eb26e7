"""The remainder rule of the access analysis (passes/access_modular.py): `(start + arange(n)) % M` is a
strided access exactly when no tile can wrap, checked against the IR evaluated directly with numpy."""

from __future__ import annotations

import numpy as np
import pytest
from test_pass_access import F32, I32, Builder, Ref, check_against_reference, structured

from triton_plate_backend.ir.core import EnumAttr, PtrType
from triton_plate_backend.passes import affine as A
from triton_plate_backend.passes.access import GatherAccess, StructuredAccess, analyze
from triton_plate_backend.passes.access_modular import POISON


def _template_rows(b: Builder, start, n: int, modulus):
    """`(start + arange(n)) % modulus` as Inductor's mm template writes `rm % M`."""
    rm = b.binary("arith.addi", b.splat(start, [n]), b.arange(n))
    return b.binary("arith.remsi", rm, b.splat(modulus, [n]))


def _pid(b: Builder):
    return b.op("tt.get_program_id", (), I32, axis=EnumAttr("x"))


def _rows_kernel(n: int, M: int, start_of=None, cols: int = 4):
    """A [n, cols] tile of a row-major [M, cols] f32 matrix at rows (start + i) % M; start = pid * n unless
    start_of(builder) gives another scalar. Returns (builder, load op)."""
    b = Builder(PtrType(F32), I32)
    start = start_of(b) if start_of else b.binary("arith.muli", _pid(b), b.const(n))
    rows = _template_rows(b, start, n, b.const(M))
    r2 = b.broadcast(b.expand(b.binary("arith.muli", rows, b.dense(cols, [n])), 1), [n, cols])
    c2 = b.broadcast(b.expand(b.arange(cols), 0), [n, cols])
    p = b.addptr(b.splat(b.args[0], [n, cols]), b.binary("arith.addi", r2, c2))
    return b, b.load(p).owner


@pytest.mark.parametrize("n, M", [(4, 8), (4, 4), (8, 64), (16, 48)])
def test_block_start_that_divides_the_modulus_is_strided_for_every_program(n, M):
    b, load = _rows_kernel(n, M)
    acc = analyze(load)
    assert isinstance(acc, StructuredAccess), acc
    assert acc.strides == (A.Const(4), A.ONE)
    assert not any(isinstance(x, A.Min) for x in A.nodes(acc.offset)), "pid >= 0 is proved: no poison term"
    for pid in range(3 * M // n + 2):  # programs past the grid wrap around M, as the remainder does
        check_against_reference(Ref({b.args[0]: 1 << 20, b.args[1]: 0}, pid=(pid, 0, 0)), load, acc)


@pytest.mark.parametrize(
    "n, M, why",
    [(8, 12, "multiple of 4 only"), (8, 20, "multiple of 4 only"), (8, 5, "multiple of 1 only"), (8, 4, "spans 8")],
)
def test_a_tile_that_may_wrap_stays_a_gather(n, M, why):
    """M not a multiple of the block (the last tile wraps), M smaller than the block (it wraps several times)."""
    acc = analyze(_rows_kernel(n, M)[1])
    assert isinstance(acc, GatherAccess)
    assert "may wrap" in acc.reason and why in acc.reason and "arith.remsi at k.py:" in acc.reason


def test_a_runtime_modulus_stays_a_gather():
    b = Builder(PtrType(F32), I32)
    rows = _template_rows(b, b.binary("arith.muli", _pid(b), b.const(8)), 8, b.args[1])
    acc = analyze(b.load(b.addptr(b.splat(b.args[0], [8]), rows)).owner)
    assert isinstance(acc, GatherAccess) and "non-constant" in acc.reason


def test_a_start_of_unknown_sign_is_poisoned_when_negative():
    """start = arg*8: non-negative in the programs that use it, but not provably: a negative start (where
    the truncated remainder is not the floored one) moves the access past every allocation."""
    b, load = _rows_kernel(8, 16, start_of=lambda b: b.binary("arith.muli", b.args[1], b.const(8)))
    acc = analyze(load)
    assert isinstance(acc, StructuredAccess)
    for k in range(5):
        check_against_reference(Ref({b.args[0]: 1 << 20, b.args[1]: k}), load, acc)
    for k in (-1, -2, -3):
        addr, _ = structured(Ref({b.args[0]: 1 << 20, b.args[1]: k}), acc, (8, 4))
        assert np.all(addr >= (1 << 20) + POISON * 4 * 4)


def test_group_ordered_program_ids_are_proved_non_negative():
    """Inductor's pid_m = group_id * GROUP_M + pid % group_size: no poison term."""

    def pid_m(b):
        pid = _pid(b)
        group_id = b.binary("arith.divsi", pid, b.const(16))
        size = b.binary(
            "arith.minsi", b.binary("arith.subi", b.const(2), b.binary("arith.muli", group_id, b.const(8))), b.const(8)
        )
        pm = b.binary("arith.addi", b.binary("arith.muli", group_id, b.const(8)), b.binary("arith.remsi", pid, size))
        return b.binary("arith.muli", pm, b.const(8))

    b, load = _rows_kernel(8, 64, start_of=pid_m)
    acc = analyze(load)
    assert isinstance(acc, StructuredAccess)
    assert not any(isinstance(x, A.Min) for x in A.nodes(acc.offset))
    for pid in range(4):
        check_against_reference(Ref({b.args[0]: 1 << 20, b.args[1]: 0}, pid=(pid, 0, 0)), load, acc)
