"""The operand planner's decisions kept across offsets (sim/operands.py ``_Shifted``) on plate-mini (4 domains
x 2 cores): a loop over slices of a large tensor launches one kernel at many offsets of the same shared
operand; a launch gets a decision priced at another offset only where a fresh pricing of its own gives the
same, and it does for most of a column loop's launches."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

import triton_plate_backend.torch_device  # noqa: F401  (registers the plate device)

ROWS, COLS = 256, 1024  # 1 MiB of fp32: blocked over the 4 domains, 256 KiB each


@pytest.fixture(scope="module", autouse=True)
def mini(plate_mini_module):
    return plate_mini_module


@triton.jit
def strided_sum_kernel(w, o, stride, n, BLOCK: tl.constexpr):
    """Program p sums elements p * BLOCK ... of the strided slice at ``w`` (``n`` of them in all)."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(o + tl.program_id(0), tl.sum(tl.load(w + i * stride, mask=m, other=0.0), axis=0))


def _launches(mini, monkeypatch, ops, answers=None):
    """Launch the kernel over slices at random offsets and shapes; per launch (kernel, shared arguments, the
    planner's choices, a fresh planner's choices for the same launch, whether a kept decision answered it).
    ``answers``: in place of ``_Shifted.answers``."""
    seen, answered = [], []
    plan, answers = ops.OperandPlanner.plan, answers or ops._Shifted.answers

    def kept_answers(self, *a):
        found = answers(self, *a)
        answered.append(found)
        return found

    def both(self, program, grid, args, memory):
        del answered[:]
        shared, choices = plan(self, program, grid, args, memory)
        fresh = plan(ops.OperandPlanner(), program, grid, args, memory)
        seen.append((program.name, [i for i, _ in shared], choices, fresh[1], any(answered)))
        return shared, choices

    monkeypatch.setattr(ops._Shifted, "answers", kept_answers)
    monkeypatch.setattr(ops.OperandPlanner, "plan", both)
    monkeypatch.setattr(mini, "_operands", ops.OperandPlanner())  # none of another test's decisions
    rng = np.random.default_rng(7)
    for stride, n, programs in [(COLS, ROWS, 1), (COLS, ROWS, 2), (COLS + 3, 200, 1), (2 * COLS - 5, 128, 2)]:
        w = torch.ones(ROWS * COLS, device="plate")  # fresh per shape: no replica bought by the shape before
        o = torch.empty(programs, device="plate")
        reach = (n - 1) * stride + 1
        for off in [0, 1, 2, *rng.integers(0, ROWS * COLS - reach, 9).tolist()]:
            strided_sum_kernel[(programs,)](w[off:], o, stride, n, BLOCK=triton.next_power_of_2(-(-n // programs)))
            assert torch.equal(o.cpu().sum(), torch.tensor(float(n)))
    monkeypatch.undo()
    return [s for s in seen if s[0] == "strided_sum_kernel"]


def test_a_decision_kept_at_another_offset_is_what_a_fresh_pricing_gives(mini, monkeypatch):
    from triton_plate_backend.sim import operands as ops

    seen = _launches(mini, monkeypatch, ops)
    assert len(seen) == 48 and all(s[1][0] == 0 for s in seen)  # w is shared at every launch
    assert [s[2] for s in seen] == [s[3] for s in seen]  # the planner's choices, a fresh planner's
    assert sum(s[4] for s in seen) >= 12  # a column loop's launches mostly reuse a decision
    assert len({c for s in seen for c in s[3]}) > 4  # the launches differ in what the pricing says


def test_a_key_without_the_offsets_gives_other_decisions(mini, monkeypatch):
    """The same launches with a kept decision answering every launch of its layout: some get a decision a
    fresh pricing does not give (the test above fails with such a key)."""
    from triton_plate_backend.sim import operands as ops

    seen = _launches(mini, monkeypatch, ops, answers=lambda self, program, *a: program is self.program)
    assert any(choices != fresh for _, _, choices, fresh, _ in seen)


def test_a_layout_priced_once_keeps_no_decision_for_other_offsets(mini, monkeypatch):
    """A kept decision (``_Shifted``) is made at the second pricing of a launch layout, not the first (a launch
    priced once, most of a test suite's fresh kernels, never uses one). (Whether the third launch is answered by
    it depends on where w's blocks start, the allocator's choice: the loops above count those answered.)"""
    from triton_plate_backend.sim import operands as ops

    made, priced = [], []
    of, price = ops._Shifted.of, ops.OperandPlanner._price

    def counted(into, real):  # the loop's kernel only (filling w with ones is priced too)
        def call(program, *a):
            if program.name == "strided_sum_kernel":
                into.append(1)
            return real(program, *a)

        return staticmethod(call)

    monkeypatch.setattr(ops._Shifted, "of", counted(made, of))
    monkeypatch.setattr(ops.OperandPlanner, "_price", counted(priced, price))
    monkeypatch.setattr(mini, "_operands", ops.OperandPlanner())
    w, o = torch.ones(ROWS * COLS, device="plate"), torch.empty(1, device="plate")
    counts = []
    for off in (0, 4):  # both 16-byte aligned: one specialization, one program
        strided_sum_kernel[(1,)](w[off:], o, COLS, ROWS, BLOCK=ROWS)
        counts.append((len(priced), len(made)))
    assert counts == [(1, 0), (2, 1)]


@pytest.mark.parametrize("striped", [True, False])
def test_bytes_keep_their_homes_where_the_phases_say(striped):
    """``_Phases.keeps_homes`` against each byte's home (``Allocation.owner_index``) before and after the
    shift, over random elements, granules and shifts: never True where a byte changes its home, and True
    for some shifts that are not a whole period."""
    from types import SimpleNamespace

    from triton_plate_backend.sim.memory import Allocation
    from triton_plate_backend.sim.operands import _Phases

    rng = np.random.default_rng(3)
    kept = 0
    for _ in range(400):
        g, k, w = int(rng.choice([64, 256, 4096])), int(rng.choice([2, 4, 8])), int(rng.choice([1, 2, 4, 8]))
        home = SimpleNamespace(owners=tuple(range(k)), granule=g, striped=striped)
        stride = int(rng.choice([w, g, g * k, g * k + w, 3 * w]))
        start = int(rng.integers(0, 2 * g * k))
        first = start + stride * np.arange(int(rng.integers(1, 40)), dtype=np.int64)
        size = np.full(first.size, w, np.int64)
        phases = _Phases.of((g, k, striped), first, size)
        every_byte = (first[:, None] + np.arange(w)).ravel()
        for delta in [int(rng.integers(-g, g)), int(rng.integers(0, 4 * g * k)), g * k, w]:
            if first.min() + delta < 0:
                continue
            same = np.array_equal(
                Allocation.owner_index(home, every_byte), Allocation.owner_index(home, every_byte + delta)
            )
            if phases.keeps_homes(delta):
                assert same, (g, k, w, stride, start, delta)
                kept += delta % (g * k) != 0
    assert kept > 20
    none = np.zeros(0, np.int64)
    assert _Phases.of((64, 4, striped), none, none).keeps_homes(5)  # no byte moved: none changes its home


def test_the_mapping_over_the_launchs_allocations_is_the_mapping_over_the_placed_memory(mini, monkeypatch):
    """``estimate.launch_mapping`` (the allocations the pointers point into, those named placed otherwise)
    against the affinity mapping resolved afresh over ``_shadow``'s whole memory, at each launch of the loop
    and each placement the planner asks about."""
    from triton_plate_backend.sim import affinity
    from triton_plate_backend.sim import estimate as est
    from triton_plate_backend.sim import operands as ops

    compared = []
    plan = ops.OperandPlanner.plan

    def checked(self, program, grid, args, memory):
        if program.name == "strided_sum_kernel":
            for placement in [None, {0: "interleaved"}, {0: "replicated"}, {0: "interleaved", 1: "replicated"}]:
                whole = est._shadow(memory, program, list(args), placement)
                fresh = affinity.resolve_policy("affinity", program, grid, args, whole)
                compared.append(est.launch_mapping(program, grid, args, memory, placement) == fresh)
        return plan(self, program, grid, args, memory)

    monkeypatch.setenv("PLATE_POLICY", "affinity")
    monkeypatch.setattr(ops.OperandPlanner, "plan", checked)
    w, o = torch.ones(ROWS * COLS, device="plate"), torch.empty(2, device="plate")
    for off in np.random.default_rng(5).integers(0, COLS * (ROWS // 2), 10).tolist():
        strided_sum_kernel[(2,)](w[off:], o, COLS, ROWS // 2, BLOCK=ROWS // 4)
    assert len(compared) == 40 and all(compared)


def test_a_move_whose_migration_alone_takes_the_launchs_time_is_not_estimated(mini, monkeypatch):
    """sim/operands.py ``_never_cheaper``: over the loop's launches a fresh planner's choices equal those of
    a pricing that estimates every candidate, with fewer estimates (the interleaved move of a 1 MiB operand
    for a launch of a few hundred elements)."""
    from triton_plate_backend.sim import operands as ops

    seen = []
    plan, real_estimate, never_cheaper = ops.OperandPlanner.plan, ops.estimate_launch, ops._never_cheaper
    asked = [0]

    def counted(*a, **kw):
        asked[0] += 1
        return real_estimate(*a, **kw)

    def both(self, program, grid, args, memory):
        if program.name == "strided_sum_kernel":
            asked[0] = 0
            bounded = plan(ops.OperandPlanner(), program, grid, args, memory)[1]
            n_bounded = asked[0]
            monkeypatch.setattr(ops, "_never_cheaper", lambda *a: False)
            asked[0] = 0
            every = plan(ops.OperandPlanner(), program, grid, args, memory)[1]
            monkeypatch.setattr(ops, "_never_cheaper", never_cheaper)
            seen.append((bounded, every, n_bounded, asked[0]))
        return plan(self, program, grid, args, memory)

    monkeypatch.setattr(ops, "estimate_launch", counted)
    monkeypatch.setattr(ops.OperandPlanner, "plan", both)
    w, o = torch.ones(ROWS * COLS, device="plate"), torch.empty(2, device="plate")
    for off in np.random.default_rng(11).integers(0, COLS, 6).tolist():
        strided_sum_kernel[(1,)](w[off:], o, COLS, ROWS, BLOCK=ROWS)  # a column: w is shared
    assert len(seen) == 6
    assert [s[0] for s in seen] == [s[1] for s in seen]
    assert all(s[2] < s[3] for s in seen)
