"""Per-operand placement at launch (sim/operands.py) on plate-mini (4 domains x 2 cores), default settings:
an operand every program reads through (a GEMM's B) leaves the blocked default for the layout the cost
model prices cheapest, migration included; operands the programs partition stay blocked; a replica is
bought once the launches reading the operand have lost its price; a written replica returns to its
placement before; operands the user placed are never moved."""

from __future__ import annotations

import gc
import weakref
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

import triton_plate_backend.torch_device  # noqa: F401  (registers the plate device)
from triton_plate_backend.bench.kernels import matmul_kernel
from triton_plate_backend.sim import operands as ops
from triton_plate_backend.sim.memory import DeviceMemory
from triton_plate_backend.sim.operands import shared_operands

N = 256


@pytest.fixture(scope="module", autouse=True)
def mini(plate_mini_module):
    return plate_mini_module


@triton.jit
def bump_kernel(x, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(x + offs, tl.load(x + offs, mask=m) + 1.0, mask=m)


@triton.jit
def sum_all_kernel(w, o, BLOCK: tl.constexpr):
    """One program reads the whole of ``w``."""
    tl.store(o + tl.program_id(0), tl.sum(tl.load(w + tl.arange(0, BLOCK)), axis=0))


def gemm(a, b, c):
    matmul_kernel[(triton.cdiv(N, 64) ** 2,)](
        a, b, c, N, N, N, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BM=64, BN=64, BK=32, GROUP_M=4,
    )  # fmt: skip


def operands():
    a, b = torch.randn(N, N), torch.randn(N, N)
    return a, b, a.to("plate"), b.to("plate"), torch.empty(N, N, device="plate")


def reference(a_cpu, b_cpu):
    """The same kernel on operands the user placed (interleaved, never moved): placement changes no value."""
    with torch.plate.placement("interleaved"):
        a, b, c = a_cpu.to("plate"), b_cpu.to("plate"), torch.empty(N, N, device="plate")
    gemm(a, b, c)
    torch.testing.assert_close(c.cpu(), a_cpu @ b_cpu, rtol=1e-2, atol=0.1)  # tf32 products
    return c.cpu()


def moves_since(mini, before):
    return list(mini.operand_moves)[before:]


def test_only_the_operand_every_program_reads_through_is_shared():
    mem = DeviceMemory("plate-mini")
    a, b, c = (mem.alloc(N * N * 4) for _ in range(3))  # blocked by default
    ptr = SimpleNamespace(type="ptr")
    program = SimpleNamespace(
        args=[ptr, ptr, ptr],
        # 4 x 4 tiles of 64: program p reads rows of A and all of K of B's column block, writes its tile of C
        affinity=f"arg0[(pid_x // 4)*64*{N * 4}:(pid_x // 4 + 1)*64*{N * 4}]*{64 * N * 4}; "
        f"arg1[(pid_x % 4)*64*4:{(N - 1) * N * 4} + (pid_x % 4 + 1)*64*4]*{64 * N * 4}; "
        f"arg2[(pid_x // 4)*64*{N * 4}:(pid_x // 4 + 1)*64*{N * 4}]*{64 * 64 * 4}",
    )
    shared = shared_operands(program, (16, 1, 1), [a.base, b.base, c.base], mem)
    assert [(i, rec.base) for i, rec in shared] == [(1, b.base)]  # A and C: a quarter each, B: all of it


def test_a_shared_blocked_operand_moves_when_the_cost_model_says_it_pays(mini):
    a_cpu, b_cpu, a, b, c = operands()
    assert torch.plate.home_domains(b) == {d: N * N for d in range(4)}  # blocked by default: N*N*4 / 4 each
    before = len(mini.operand_moves)
    gemm(a, b, c)
    moves = moves_since(mini, before)
    assert [(m.arg, m.before, m.after) for m in moves] == [("b_ptr", "blocked", "interleaved")]
    assert moves[0].saved_ns > moves[0].migration_ns > 0
    assert torch.equal(c.cpu(), reference(a_cpu, b_cpu))
    assert torch.plate.home_domains(a) == {d: N * N for d in range(4)}  # A stays blocked


def test_an_estimate_prices_the_launch_with_the_operand_moves_it_would_make_and_moves_nothing(mini):
    from triton_plate_backend.estimate import estimate

    _, _, a, b, c = operands()
    args = (a, b, c, N, N, N, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    meta = dict(BM=64, BN=64, BK=32, GROUP_M=4)
    grid = (triton.cdiv(N, 64) ** 2,)
    before = len(mini.operand_moves)
    planned = estimate(matmul_kernel, grid, *args, **meta)
    assert torch.plate.placement_of(b) == "blocked" and not moves_since(mini, before)  # nothing moved
    gemm(a, b, c)  # the launch moves B (blocked -> interleaved); estimated now, nothing is left to move
    assert [m.after for m in moves_since(mini, before)] == ["interleaved"]
    ran = mini.last_profile.time_ns
    moved = estimate(matmul_kernel, grid, *args, **meta)
    assert planned.time_ns == pytest.approx(moved.time_ns, rel=1e-6)
    assert planned.time_ns == pytest.approx(ran, rel=0.15)


def test_a_replica_is_bought_once_its_rent_is_paid_and_dropped_when_written(mini):
    a_cpu, b_cpu, a, b, c = operands()
    before = len(mini.operand_moves)
    for _ in range(12):
        gemm(a, b, c)
    moves = moves_since(mini, before)
    assert [m.after for m in moves] == ["interleaved", "replicated"]
    replica = moves[1]
    assert replica.saved_ns > 0 and replica.migration_ns > replica.saved_ns  # it pays over several launches
    assert ops._replicas_made()  # drop_written_replicas now looks the launches' arguments up
    assert mini.last_profile.remote_bytes < mini.last_profile.total_bytes  # B now read locally
    assert torch.plate.memory_allocated() >= 3 * 4 * N * N  # its copies count
    assert torch.equal(c.cpu(), reference(a_cpu, b_cpu))
    bump_kernel[(N * N // 1024,)](b, N * N, BLOCK=1024)  # a kernel writes the replica: every copy, then it is dropped
    assert mini.last_profile.write_bytes.sum() == 4 * 4 * N * N
    rec = mini.memory.live(int(mini.memory.span_positions(np.array([b.data_ptr()]), np.array([b.data_ptr() + 1]))[0]))
    assert rec.placement.mode == "interleaved" and rec.replica_of is None
    torch.testing.assert_close(b.cpu(), b_cpu + 1)


def test_no_argument_is_looked_up_after_a_launch_while_no_launch_made_replica_is_left(monkeypatch):
    """drop_written_replicas asks nothing of memory until the planner made a replica, and again once every
    replica it made lost ``replica_of`` (migrated back) or was freed."""

    class Rec:
        replica_of = "blocked"

    monkeypatch.setattr(ops, "_MADE", [])
    memory = SimpleNamespace(holding=lambda addr: pytest.fail(f"looked up {addr}"))
    program = SimpleNamespace(args=[SimpleNamespace(type="ptr")])
    assert ops.drop_written_replicas(None, program, [4096], memory) == []
    kept, gone = Rec(), Rec()
    ops._MADE.extend([weakref.ref(kept), weakref.ref(gone)])
    assert ops._replicas_made()
    with pytest.raises(pytest.fail.Exception):
        ops.drop_written_replicas(None, program, [4096], memory)
    del gone
    gc.collect()
    assert ops._replicas_made() and len(ops._MADE) == 1
    kept.replica_of = None
    assert not ops._replicas_made() and ops._MADE == []
    assert ops.drop_written_replicas(None, program, [4096], memory) == []


def test_operands_the_user_placed_stay(mini):
    a_cpu, b_cpu = torch.randn(N, N), torch.randn(N, N)
    a = a_cpu.to("plate")
    with torch.plate.placement("blocked"):
        b = b_cpu.to("plate")
    c = torch.empty(N, N, device="plate")
    before = len(mini.operand_moves)
    gemm(a, b, c)
    gemm(a, b, c)
    assert moves_since(mini, before) == []
    assert torch.equal(c.cpu(), reference(a_cpu, b_cpu))


def test_no_move_where_it_does_not_pay(mini):
    """One program reads all of a blocked operand once: interleaving it gains nothing, and a replica
    copies it three times to save three quarters of one read: the first launch moves nothing."""
    w = torch.randn(1 << 14, device="plate")  # 64 KiB: blocked
    o = torch.empty(1, device="plate")
    before = len(mini.operand_moves)
    sum_all_kernel[(1,)](w, o, BLOCK=1 << 14)
    assert moves_since(mini, before) == []
    assert torch.plate.placement_of(w) == "blocked"
    torch.testing.assert_close(o.cpu(), w.cpu().sum().reshape(1), rtol=1e-4, atol=1e-3)


def test_a_decision_is_never_another_programs(mini, monkeypatch):
    """Decisions are keyed by id(program), which Python reuses once a program is freed: with every key made
    equal, the GEMM after sum_all_kernel still gets its own decision (B moves), not sum_all's (nothing moves)."""
    from triton_plate_backend.sim.operands import OperandPlanner

    monkeypatch.setattr(OperandPlanner, "_key", lambda self, program, grid, args, shared: ("one key",))
    w, o = torch.randn(1 << 14, device="plate"), torch.empty(1, device="plate")
    sum_all_kernel[(1,)](w, o, BLOCK=1 << 14)
    a_cpu, b_cpu, a, b, c = operands()
    before = len(mini.operand_moves)
    gemm(a, b, c)
    assert [(m.arg, m.after) for m in moves_since(mini, before)] == [("b_ptr", "interleaved")]
    assert torch.equal(c.cpu(), reference(a_cpu, b_cpu))


@triton.jit
def sum_two_kernel(w, x, o, BLOCK: tl.constexpr):
    """Each program reads the whole of ``w`` and ``x``."""
    offs = tl.arange(0, BLOCK)
    tl.store(o + tl.program_id(0), tl.sum(tl.load(w + offs) + tl.load(x + offs), axis=0))


@pytest.mark.parametrize(
    "elements, programs, short",
    [
        (16, 1, True),
        (1024, 1, True),  # at the bound: 4 KiB fp32, the first stripe
        (1025, 1, False),  # one element past: its allocation reaches domain 1
        (2048, 1, False),
        (1024, 2, False),  # two programs: the affinity mapping may balance them over domains
    ],
)
def test_a_one_program_launch_homed_in_domain_0_is_decided_unpriced(mini, monkeypatch, elements, programs, short):
    """The planner's shortcuts (sim/operands.py ``_one_home_every_pointer`` before the footprint's ranges
    are evaluated, ``_one_home`` after) against the full pricing of the same launch, each on a fresh
    planner: where they apply the pricing moves nothing (every choice None, no replica gain) and the
    planner returns no choice; past their bounds they do not apply, and at two stripes (8 KiB) the pricing
    finds a replica worth something."""
    from triton_plate_backend.sim import operands as ops

    seen = []
    plan = ops.OperandPlanner.plan
    one_home, every_pointer = ops._one_home, ops._one_home_every_pointer

    def both(self, program, grid, args, memory):
        quick = plan(ops.OperandPlanner(), program, grid, args, memory)
        recs = [memory.holding(int(v)) if a.type == "ptr" else None for a, v in zip(program.args, args)]
        taken = every_pointer(program, grid, args, recs)
        monkeypatch.setattr(ops, "_one_home_every_pointer", lambda *a: False)
        late = plan(ops.OperandPlanner(), program, grid, args, memory)  # _one_home alone
        late_taken = bool(late[0]) and one_home(program, grid, args, memory, late[0])
        monkeypatch.setattr(ops, "_one_home", lambda *a: False)
        full = plan(ops.OperandPlanner(), program, grid, args, memory)
        monkeypatch.setattr(ops, "_one_home", one_home)
        monkeypatch.setattr(ops, "_one_home_every_pointer", every_pointer)
        seen.append((program.name, taken, late_taken, quick, late, full))
        return plan(self, program, grid, args, memory)

    monkeypatch.setattr(ops.OperandPlanner, "plan", both)
    monkeypatch.setattr(ops, "_replicas_change_nothing", lambda *a: False)  # priced: what is asked here
    w, x = torch.randn(elements, device="plate"), torch.randn(elements, device="plate")
    o = torch.empty(programs, device="plate")
    before = len(mini.operand_moves)
    block = min(elements, 1 << (elements.bit_length() - 1))  # 1025: the first 1024 elements, all in domain 0
    sum_two_kernel[(programs,)](w, x, o, BLOCK=block)
    (name, taken, late_taken, quick, late, full) = seen[-1]
    assert name == "sum_two_kernel" and [i for i, _ in full[0]] == [0, 1, 2]  # w, x and o are shared
    assert taken == late_taken == short
    assert late == full
    if short:
        assert full[1] == tuple(ops._Choice(i, None, 0.0, 0.0, 0.0) for i in (0, 1, 2))
        assert quick == ([], ())
    else:
        assert quick == full
    if elements == 2048:
        assert any(c.replica_gain_ns > 0 for c in full[1])  # what the shortcuts' bound keeps out
    assert moves_since(mini, before) == []
    ref = (w.cpu()[:block] + x.cpu()[:block]).sum()
    torch.testing.assert_close(o.cpu(), ref.expand(programs), rtol=1e-4, atol=1e-3)


def test_the_planner_prices_every_placement_from_one_run_each_as_its_own_run_would(mini, monkeypatch):
    """A fresh planner pricing a GEMM (its shared B: interleaved and replicated) makes one address-only run
    of the launch, even outside a launch's ``shared_estimates``, and each Estimate it priced is the one a
    fresh estimate of that placement (its own run) returns."""
    from triton_plate_backend.launcher import _one_each, bind_arguments, is_persistent
    from triton_plate_backend.sim import estimate as est_mod
    from triton_plate_backend.sim import operands as ops
    from triton_plate_backend.sim.device import get_device

    _, _, a, b, c = operands()
    dev = get_device()
    call = (a, b, c, N, N, N, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    meta = dict(BM=64, BN=64, BK=32, GROUP_M=4)
    k = matmul_kernel.warmup(*call, grid=(16,), **meta)
    k._init_handles()
    program = k.function.program
    args, _ = bind_arguments(program.name, program, list(k.src.signature.values()), [*call, *meta.values()], dev)
    if is_persistent(program):  # the launch as written: one program per tile (launcher.py)
        args = _one_each(program, (16, 1, 1), args)
    runs, priced = [], []
    real_run, real_estimate = est_mod._address_run, ops.estimate_launch
    monkeypatch.setattr(est_mod, "_address_run", lambda *a, **kw: runs.append(1) or real_run(*a, **kw))

    def estimate_launch(*a, **kw):
        est = real_estimate(*a, **kw)
        priced.append((kw.get("placement"), est))
        return est

    monkeypatch.setattr(ops, "estimate_launch", estimate_launch)
    shared, choices = ops.OperandPlanner().plan(program, (16, 1, 1), args, dev.memory)
    assert [i for i, _ in shared] == [1] and [c.spec for c in choices] == ["interleaved"]
    assert len(runs) == 1 and [p for p, _ in priced] == [None, {1: "interleaved"}, {1: "replicated"}]
    for placement, est in priced:
        own = est_mod._estimate_launch(program, (16, 1, 1), list(args), dev.memory, placement=placement)
        assert (own.time_ns, own.bound, own.read_bytes.tobytes(), own.write_bytes.tobytes()) == (
            est.time_ns, est.bound, est.read_bytes.tobytes(), est.write_bytes.tobytes()
        )  # fmt: skip
    assert len(runs) == 4  # the three own runs


@pytest.mark.parametrize("elements, programs", [(2048, 1), (1024, 2), (4096, 1)])
def test_a_written_operands_replica_is_dismissed_before_its_estimate_as_after_it(mini, monkeypatch, elements, programs):
    """sim/operands.py ``_writes_replica``: the replica of the operand the launch writes (``o``) is dismissed
    from the launch's traces before the cost model prices it; those it only reads (``w``, ``x``) are priced.
    A fresh planner's choices equal the full pricing's (every replica estimated, a written one dismissed after
    the model), with exactly the written operand's replica estimate fewer."""
    from triton_plate_backend.sim import operands as ops

    seen = []
    plan = ops.OperandPlanner.plan
    real_estimate, real_writes = ops.estimate_launch, ops._writes_replica

    def both(self, program, grid, args, memory):
        asked, priced = [], []

        def estimate_launch(*a, **kw):
            priced.append(kw.get("placement"))
            return real_estimate(*a, **kw)

        def writes_replica(*a):
            answer = real_writes(*a)
            asked.append((a[5], answer))
            return answer

        monkeypatch.setattr(ops, "estimate_launch", estimate_launch)
        monkeypatch.setattr(ops, "_writes_replica", writes_replica)
        quick = plan(ops.OperandPlanner(), program, grid, args, memory)
        quick_priced = list(priced)
        priced.clear()
        monkeypatch.setattr(ops, "_writes_replica", lambda *a: False)
        full = plan(ops.OperandPlanner(), program, grid, args, memory)
        monkeypatch.setattr(ops, "_writes_replica", real_writes)
        monkeypatch.setattr(ops, "estimate_launch", real_estimate)
        seen.append((program.name, asked, quick, full, quick_priced, list(priced)))
        return plan(self, program, grid, args, memory)

    monkeypatch.setattr(ops.OperandPlanner, "plan", both)
    monkeypatch.setattr(ops, "_replicas_change_nothing", lambda *a: False)  # priced: what is asked here
    w, x = torch.randn(elements, device="plate"), torch.randn(elements, device="plate")
    o = torch.empty(programs, device="plate")
    sum_two_kernel[(programs,)](w, x, o, BLOCK=elements)
    name, asked, quick, full, quick_priced, full_priced = seen[-1]
    assert name == "sum_two_kernel" and [i for i, _ in full[0]] == [0, 1, 2]  # w, x and o are shared
    assert asked == [(0, False), (1, False), (2, True)]
    assert quick == full
    extra = [p for p in full_priced if p not in quick_priced]
    assert len(full_priced) == len(quick_priced) + 1 and len(extra) == 1 and extra[0][2] == "replicated"
    torch.testing.assert_close(o.cpu(), (w.cpu() + x.cpu()).sum().expand(programs), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("elements, programs", [(2048, 1), (1024, 2)])
def test_a_written_operand_is_found_from_the_logged_run_without_its_replicas_trace(
    mini, monkeypatch, elements, programs
):
    """sim/estimate.py ``writes_within``: the operand the launch stores into (``o``) is found written from the
    spans of the accesses the pricing's run logged, without the trace of its replica (``replica_writes`` under
    ``{o: replicated}``, which the base asked); every answer equals the two traces' comparison."""
    from triton_plate_backend.sim import operands as ops

    real_counts, real_writes = ops.replica_writes, ops._writes_replica
    counted, compared = [], []

    def replica_writes(*a, placement=None):
        counted.append(placement)
        return real_counts(*a, placement=placement)

    def writes_replica(program, grid, args, memory, chosen, i, before):
        answer = real_writes(program, grid, args, memory, chosen, i, before)
        placed = real_counts(program, grid, list(args), memory, placement={**chosen, i: "replicated"})
        compared.append((i, answer, placed > real_counts(program, grid, list(args), memory, placement=chosen or None)))
        return answer

    monkeypatch.setattr(ops, "replica_writes", replica_writes)
    monkeypatch.setattr(ops, "_writes_replica", writes_replica)
    monkeypatch.setattr(ops, "_replicas_change_nothing", lambda *a: False)  # priced: what is asked here
    monkeypatch.setattr(mini, "_operands", ops.OperandPlanner())
    w, x = torch.randn(elements, device="plate"), torch.randn(elements, device="plate")
    o = torch.empty(programs, device="plate")
    del compared[:], counted[:]  # the fills' launches
    sum_two_kernel[(programs,)](w, x, o, BLOCK=elements)
    assert compared == [(0, False, False), (1, False, False), (2, True, True)]
    assert not any(p is not None and p.get(2) == "replicated" for p in counted)
    torch.testing.assert_close(o.cpu(), (w.cpu() + x.cpu()).sum().expand(programs), rtol=1e-4, atol=1e-3)


@triton.jit
def scale_kernel(x, o, n, s, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o + offs, tl.exp(tl.load(x + offs, mask=m)) * s, mask=m)


@pytest.mark.parametrize("elements, programs", [(1000, 4), (250, 2), (1 << 14, 1)])
def test_a_placement_whose_model_input_is_another_ones_gets_its_estimate_unmodeled(
    mini, monkeypatch, elements, programs
):
    """sim/estimate.py ``_modeled_alike``: inside one launch's pricing, a placement whose model input (the
    core of each program, the trace with replica reads folded to them) is one already modeled gets that
    estimate without the model: the replica of a small read operand homed in the domain the launch runs
    in. A fresh planner's choices and every estimate it priced equal those with each placement modeled
    (the alike lookup off), with the alike ones' models fewer."""
    from triton_plate_backend.sim import estimate as est_mod
    from triton_plate_backend.sim import operands as ops

    seen = []
    plan = ops.OperandPlanner.plan
    real_model, real_estimate, limit_kept = est_mod.model, ops.estimate_launch, est_mod.MODEL_INPUT_ENTRIES

    def both(self, program, grid, args, memory):
        out = []
        for limit in (limit_kept, -1):
            models, priced = [], []
            monkeypatch.setattr(est_mod, "MODEL_INPUT_ENTRIES", limit)
            monkeypatch.setattr(est_mod, "model", lambda *a, m=models, **kw: m.append(1) or real_model(*a, **kw))
            monkeypatch.setattr(
                ops, "estimate_launch", lambda *a, p=priced, **kw: p.append(real_estimate(*a, **kw)) or p[-1]
            )
            # its own block, not the launch's
            outer, est_mod._shared.memo = getattr(est_mod._shared, "memo", None), None
            try:
                choices = plan(ops.OperandPlanner(), program, grid, args, memory)
            finally:
                est_mod._shared.memo = outer
            facts = [(e.time_ns, e.bound, e.read_bytes.tobytes(), e.write_bytes.tobytes()) for e in priced]
            out.append((choices, facts, len(models)))
        monkeypatch.setattr(est_mod, "MODEL_INPUT_ENTRIES", limit_kept)
        monkeypatch.setattr(est_mod, "model", real_model)
        monkeypatch.setattr(ops, "estimate_launch", real_estimate)
        seen.append(out)
        return plan(self, program, grid, args, memory)

    monkeypatch.setattr(ops.OperandPlanner, "plan", both)
    monkeypatch.setattr(ops, "_replicas_change_nothing", lambda *a: False)  # priced: what is asked here
    x, o = torch.randn(elements, device="plate"), torch.empty(elements, device="plate")
    block = triton.next_power_of_2(triton.cdiv(elements, programs))
    scale_kernel[(programs,)](x, o, elements, 0.5, BLOCK=block)
    torch.testing.assert_close(o.cpu(), torch.exp(x.cpu()) * 0.5)
    (quick, quick_facts, quick_models), (full, full_facts, full_models) = seen[-1]
    assert [i for i, _ in full[0]][:1] == [0] and quick == full and quick_facts == full_facts
    assert full_models == len(full_facts) >= 2
    if elements <= 1000:
        assert quick_models == full_models - 1  # x's replica: x homed in domain 0, where every program runs
    else:  # one program over 64 KiB: placements priced alike by the model too (the facts above are equal)
        assert quick_models < full_models


@triton.jit
def sum_rows_kernel(w, o, n, BLOCK: tl.constexpr):
    """Every program reads the whole of ``w`` and writes its own element of ``o``, and of ``w`` (odd ones)."""
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    total = tl.sum(tl.load(w + offs, mask=offs < n, other=0.0), axis=0)
    tl.store(o + pid, total)
    tl.store(w + pid, total, mask=pid % 2 == 1)


@triton.jit
def add_row_kernel(x, b, o, BLOCK: tl.constexpr):
    """Each program adds all of ``b`` to its own block of ``x``."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(o + offs, tl.load(x + offs) + tl.load(b + tl.arange(0, BLOCK)))


@pytest.mark.parametrize(
    "kernel, elements, programs, unpriced",
    [
        ("add_row", 256, 4, True),
        ("add_row", 256, 64, False),  # x and o over every domain: the programs too, b's replica pays
        ("scale", 250, 2, True),
        ("scale", 1000, 4, True),
        ("scale", 64, 16, True),
        ("sum_rows", 250, 2, True),
        ("sum_rows", 1000, 4, True),
        ("sum_rows", 64, 16, True),
        ("sum_rows", 1024, 4, True),
        ("sum_rows", 4096, 4, False),  # w past domain 0's stripe
        ("sum_rows", 1 << 14, 2, False),
    ],
)
def test_a_launch_whose_replicas_change_nothing_is_decided_unpriced(
    mini, monkeypatch, kernel, elements, programs, unpriced
):
    """sim/operands.py ``_replicas_change_nothing``: a launch of several programs whose shared operands are
    interleaved, each homed whole in one domain, every program mapped there with or without its replica,
    is decided without pricing, and the choices are the full pricing's (``_price`` in its own block): no
    move, nothing gained. Launches past a domain's stripe or spread over domains are priced, and
    decided alike: a small operand read by programs spread over the domains (its replica gains) is priced."""
    from triton_plate_backend.sim import estimate as est_mod
    from triton_plate_backend.sim import operands as ops

    seen = []
    plan, real_skip = ops.OperandPlanner.plan, ops._replicas_change_nothing

    def both(self, program, grid, args, memory):
        skipped = []
        monkeypatch.setattr(ops, "_replicas_change_nothing", lambda *a: skipped.append(real_skip(*a)) or skipped[-1])
        outer, est_mod._shared.memo = getattr(est_mod._shared, "memo", None), None  # blocks of their own
        try:
            shared, quick = plan(ops.OperandPlanner(), program, grid, args, memory)
            with est_mod.shared_estimates():
                full = tuple(ops.OperandPlanner._price(program, grid, args, memory, shared))
        finally:
            est_mod._shared.memo = outer
            monkeypatch.setattr(ops, "_replicas_change_nothing", real_skip)
        seen.append((program.name, [i for i, _ in shared], quick, full, skipped))
        return plan(self, program, grid, args, memory)

    monkeypatch.setattr(ops.OperandPlanner, "plan", both)
    w = torch.randn(elements, device="plate")
    if kernel == "add_row":
        x, o = torch.randn(elements * programs, device="plate"), torch.empty(elements * programs, device="plate")
        add_row_kernel[(programs,)](x, w, o, BLOCK=elements)
    elif kernel == "scale":
        o = torch.empty(elements, device="plate")
        block = triton.next_power_of_2(triton.cdiv(elements, programs))
        scale_kernel[(programs,)](w, o, elements, 0.5, BLOCK=block)
    else:
        o = torch.empty(programs, device="plate")
        sum_rows_kernel[(programs,)](w, o, elements, BLOCK=triton.next_power_of_2(elements))
    name, shared, quick, full, skipped = seen[-1]
    assert shared and quick == full and len(full) == len(shared) and skipped == [unpriced]
