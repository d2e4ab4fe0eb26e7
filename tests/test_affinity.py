"""Affinity end to end on plate-mini (4 domains x 2 cores), default settings: Triton kernels on plate
tensors run each program in the domain that homes its bytes. The remote share of the profile is a
functional property of the mapping (which core reads which home domain), not a timing figure."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

import triton_plate_backend.torch_device  # noqa: F401  (registers the plate device)
from triton_plate_backend.isa.footprint import parse_footprints
from triton_plate_backend.sim.memory import BLOCKED_MIN_BYTES


@pytest.fixture(scope="module", autouse=True)
def mini(plate_mini_module):
    return plate_mini_module


@triton.jit
def add_kernel(x, y, o, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)


@triton.jit
def softmax_kernel(out, inp, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(inp + row * in_stride + cols, mask=m, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out + row * out_stride + cols, num / tl.sum(num, axis=0), mask=m)


@triton.jit
def histogram_kernel(x, bins, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.atomic_add(bins + tl.load(x + offs, mask=m, other=0), 1, mask=m)


@triton.jit
def row_block_sum_kernel(x, w, o, n_rows, n_cols, rows_per_program, BLOCK: tl.constexpr):
    """Liger's RMSNorm backward shape: a top-level load (so `persistent` wraps it in its loop over
    programs) and a row loop whose bounds come from program_id."""
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    acc = tl.load(w + cols, mask=m, other=0.0)
    for r in range(pid * rows_per_program, tl.minimum((pid + 1) * rows_per_program, n_rows)):
        acc += tl.load(x + r * n_cols + cols, mask=m, other=0.0)
    tl.store(o + pid * n_cols + cols, acc, mask=m)


@triton.jit
def countdown_kernel(o, n):
    i = n
    while i > 0:
        i -= 1
        tl.store(o + i, i)


def remote_share(profile) -> float:
    return profile.remote_bytes / profile.total_bytes


def vector_add(mini, n=1 << 16, block=1024):
    x, y = torch.rand(n, device="plate"), torch.rand(n, device="plate")
    o = torch.empty(n, device="plate")
    kernel = add_kernel[(triton.cdiv(n, block),)](x, y, o, n, BLOCK=block)
    assert torch.equal(o.cpu(), x.cpu() + y.cpu())
    return kernel, mini.last_profile


def test_vector_add_streams_locally_by_default(mini):
    kernel, profile = vector_add(mini)
    assert profile.policy == "affinity" and remote_share(profile) <= 0.10
    assert profile.cores_used == mini.machine.total_cores
    pir = kernel.asm["pir"]
    # a persistent kernel (passes/persistent.py): program pid_x runs its share of group pid_x // plate_rows
    # (arg7: after x, y, out, n and the three plate_split arguments of plate-mini's four domains), bound
    # once as a shared subterm (isa/footprint.py) and named by the entries
    assert 'plate.affinity = "$0 = pid_x // arg7; $1 = min(1, max(0, $0)); ' in pir
    assert "; arg0[$" in pir and '.affinity "$0 = pid_x // arg7; ' in kernel.asm["pasm"]


def test_softmax_rows_stream_locally_by_default(mini):
    rows, cols = 256, 256
    x = torch.randn(rows, cols, device="plate")
    assert x.numel() * 4 >= BLOCKED_MIN_BYTES  # blocked by default: a quarter of the rows per domain
    o = torch.empty_like(x)
    softmax_kernel[(rows,)](o, x, x.stride(0), o.stride(0), cols, BLOCK=cols)
    torch.testing.assert_close(o.cpu(), torch.softmax(x.cpu(), dim=1))
    profile = mini.last_profile
    assert profile.policy == "affinity" and remote_share(profile) <= 0.10


def test_interleaved_round_robin_baseline_is_mostly_remote(mini, monkeypatch):
    monkeypatch.setenv("PLATE_POLICY", "round_robin")
    with torch.plate.placement("interleaved"):
        _, profile = vector_add(mini, block=4096)
    assert profile.policy == "round_robin" and remote_share(profile) >= 0.5


def test_explicit_placement_is_followed(mini):
    with torch.plate.placement("local", domain=3):
        _, profile = vector_add(mini)
    assert remote_share(profile) == 0.0 and profile.cores_used == mini.machine.domain.cores


def test_atomics_count_as_work_and_the_located_loads_decide(mini):
    x = torch.randint(0, 8, (1 << 16,), device="plate", dtype=torch.int32)
    bins = torch.zeros(8, device="plate", dtype=torch.int32)
    kernel = histogram_kernel[(64,)](x, bins, 1 << 16, BLOCK=1024)
    assert bins.cpu().tolist() == torch.bincount(x.cpu(), minlength=8).int().tolist()
    assert 'plate.affinity = "arg0[pid_x*1024*4:(pid_x*1024 + 1024)*4]*4096; arg1[:]*4096"' in kernel.asm["pir"]
    assert mini.last_profile.policy == "affinity"


def test_kernels_the_analysis_cannot_tell_keep_the_default_mapping(mini):
    o = torch.zeros(64, device="plate", dtype=torch.int32)
    kernel = countdown_kernel[(1,)](o, 64)
    assert o.cpu().tolist() == list(range(64))
    assert 'plate.affinity = "none (' in kernel.asm["pir"] and "scf.while" in kernel.asm["pir"]
    assert mini.last_profile.policy == "round_robin"


def test_a_loop_with_program_id_bounds_inside_the_persistent_loop_is_located(mini):
    """The row loop's bounds come from program_id, which the persistent loop over programs makes from
    its own trip: the footprint holds no loop symbol (it did, and the launch failed parsing it) and
    each program is steered to the domain of its rows."""
    n_rows, n_cols, programs = 512, 100, 64
    per = triton.cdiv(n_rows - 3, programs)  # the last program runs fewer rows
    x = torch.randn(n_rows, n_cols, device="plate")
    assert x.numel() * 4 >= BLOCKED_MIN_BYTES
    w, o = torch.randn(n_cols, device="plate"), torch.empty(programs, n_cols, device="plate")
    kernel = row_block_sum_kernel[(programs,)](x, w, o, n_rows - 3, n_cols, per, BLOCK=128)
    xc = x.cpu()
    want = torch.stack([xc[p * per : min((p + 1) * per, n_rows - 3)].sum(0) for p in range(programs)]) + w.cpu()
    torch.testing.assert_close(o.cpu(), want)
    pir = kernel.asm["pir"]
    assert "plate.programs" in pir  # run as a persistent loop over programs
    text = pir.split('plate.affinity = "', 1)[1].split('"', 1)[0]
    assert parse_footprints(text) is not None and "trip" not in text
    assert mini.last_profile.policy == "affinity" and remote_share(mini.last_profile) <= 0.25


def test_migrate_moves_a_tensor_and_charges_the_clock(mini):
    x = torch.arange(1 << 16, device="plate", dtype=torch.float32)
    before, clock = torch.plate.home_domains(x), mini.clock_ns
    estimate = torch.plate.migration_cost_ns(x, "local", domain=2)
    assert torch.plate.migrate(x, "local", domain=2) is x
    assert torch.plate.home_domains(x) == {2: 4 << 16} and len(before) == mini.machine.domains
    assert mini.clock_ns - clock == pytest.approx(estimate) and estimate > 0
    assert torch.equal(x.cpu(), torch.arange(1 << 16, dtype=torch.float32))
    _, profile = vector_add(mini)  # new tensors: the default placement again
    assert remote_share(profile) <= 0.10


def test_a_repeated_launch_keeps_its_mapping_until_its_memory_layout_changes(mini, monkeypatch):
    """The device keeps the affinity mapping of a launch repeated over the same allocations
    (sim/affinity.KeptMappings): the repeat evaluates no footprint and is timed as the first launch;
    once the operands moved to another domain the mapping is evaluated again."""
    from triton_plate_backend.sim import affinity

    answers = []
    fresh = affinity.resolve_policy

    def counted(policy, program, grid, args, memory):
        answers.append(fresh(policy, program, grid, args, memory))
        return answers[-1]

    monkeypatch.setattr(affinity, "resolve_policy", counted)
    n = 1 << 16
    x, y = torch.rand(n, device="plate"), torch.rand(n, device="plate")
    o = torch.empty(n, device="plate")
    add_kernel[(n // 1024,)](x, y, o, n, BLOCK=1024)
    first = mini.last_profile
    assert answers and first.policy == "affinity"
    answers.clear()
    add_kernel[(n // 1024,)](x, y, o, n, BLOCK=1024)
    assert answers == [] and mini.last_profile.time_ns == first.time_ns
    for t in (x, y, o):
        torch.plate.migrate(t, "local", domain=2)
    add_kernel[(n // 1024,)](x, y, o, n, BLOCK=1024)
    assert answers and remote_share(mini.last_profile) == 0.0
    assert mini.last_profile.cores_used == mini.machine.domain.cores
    assert torch.equal(o.cpu(), x.cpu() + y.cpu())


def test_a_launch_over_fresh_allocations_of_the_same_layout_gets_the_full_computations_answers(mini, monkeypatch):
    """The mapping is kept by layout (sim/affinity.launch_layout: each pointer's offset in its allocation,
    the allocation's size and placement), the operand planner's shared operands by the allocations' sizes
    (sim/operands._sizes_key), not by address: a launch over fresh tensors of the same layout computes
    neither again, and what it gets is what the full computation gives for its own arguments; another
    offset and size computes them again."""
    import numpy as np

    from triton_plate_backend.sim import affinity, operands

    seen = []  # (program, grid, args, memory, the kept answer) of each launch's mapping
    kept = affinity.MAPPINGS.resolve

    def recorded(policy, program, grid, args, memory):
        seen.append((program, grid, list(args), memory, kept(policy, program, grid, args, memory)))
        return seen[-1][-1]

    computed = []
    fresh = affinity.resolve_policy
    monkeypatch.setattr(affinity, "resolve_policy", lambda *a: computed.append(a[1]) or fresh(*a))
    monkeypatch.setattr(affinity.MAPPINGS, "resolve", recorded)
    shared = []
    full_shared = operands.shared_operands
    monkeypatch.setattr(operands, "shared_operands", lambda *a: shared.append(a[0]) or full_shared(*a))
    affinity.MAPPINGS.clear()
    mini._planner()._shared.clear()
    n = BLOCKED_MIN_BYTES // 2  # float32: blocked, every program's bytes in one domain
    keep = []
    # (elements past n in each allocation, the offset used, the mapping computed, the shared operands computed)
    for extra, offset, mapped, planned in (
        (0, 0, 1, 1),
        (0, 0, 0, 0),
        (0, 0, 0, 0),
        (1024, 1024, 1, 1),
    ):
        x, y, o = (torch.rand(n + extra, device="plate")[offset : offset + n] for _ in range(3))
        keep.append((x, y, o))  # alive: the next tensors are fresh allocations at other addresses
        computed.clear(), shared.clear(), seen.clear()
        add_kernel[(n // 1024,)](x, y, o, n, BLOCK=1024)
        assert torch.equal(o.cpu(), x.cpu() + y.cpu())
        program, grid, args, memory, answer = seen[-1]
        full = fresh("affinity", program, grid, args, memory)
        assert isinstance(full, affinity.CoreMapping) and np.unique(full.array() // 2).size == 4
        assert answer == full  # the kept answer is the full computation's for these arguments
        assert sorted(i for i, _ in full_shared(program, grid, args, memory)) == [
            i for i, _ in mini._planner().plan(program, grid, args, memory)[0]
        ]
        assert (bool(computed), bool(shared)) == (bool(mapped), bool(planned))
    assert len({t.data_ptr() for t, _, _ in keep}) == len(keep)


@triton.jit
def row_add_kernel(x, y, o, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(o + offs, tl.load(x + offs) + tl.load(y + tl.arange(0, BLOCK)))  # every program reads all of y


def test_the_planners_shared_operands_at_other_offsets_are_the_full_computations(mini, monkeypatch):
    """The operand planner keeps shared_operands by the allocations' sizes (sim/operands._sizes_key): the
    same launch with its pointers at other offsets of allocations of the same sizes computes it no more,
    and gets what the full computation gives for those arguments."""
    from triton_plate_backend.sim import operands

    launches = []
    plan = operands.OperandPlanner.plan
    monkeypatch.setattr(operands.OperandPlanner, "plan", lambda self, *a: launches.append(a) or plan(self, *a))
    computed = []
    full = operands.shared_operands
    monkeypatch.setattr(operands, "shared_operands", lambda *a: computed.append(a[0]) or full(*a))
    mini._planner()._shared.clear()
    B, rows = 1024, 64
    x, o = torch.rand(rows * B + 64, device="plate"), torch.empty(rows * B + 64, device="plate")
    y = torch.rand(B + 64, device="plate")
    row_add_kernel[(rows,)](x, y, o, BLOCK=B)
    program, grid, args, memory = next(a for a in launches if a[0].name == "row_add_kernel")
    assert program in computed and [i for i, _ in full(program, grid, args, memory)] == [1]  # y is shared
    assert torch.equal(o.cpu()[: rows * B], (x.cpu()[: rows * B].view(rows, B) + y.cpu()[:B]).reshape(-1))
    for shift in (4, 64, 256):  # bytes: every pointer moved inside its allocation
        computed.clear()
        moved = [v + shift if a.type == "ptr" else v for a, v in zip(program.args, args)]
        found = [i for i, _ in mini._planner().plan(program, grid, moved, memory)[0]]
        assert computed == [] and found == [i for i, _ in full(program, grid, moved, memory)] == [1]


def test_a_one_program_launch_homed_in_domain_0_maps_to_core_0_as_the_full_assignment_does():
    import numpy as np

    from triton_plate_backend.machine import PRESETS
    from triton_plate_backend.sim import affinity

    rng = np.random.default_rng(0)
    for machine in PRESETS.values():
        D = machine.total_domains
        for nbytes in (1, 4, 100, 4096, 1 << 20, 1 << 34):
            for spread0 in (0.0, 1.0, float(nbytes), 10.0 * nbytes):
                located, spread = np.zeros((1, D)), np.zeros((1, D))
                located[0, 0], spread[0, 0] = nbytes, spread0
                full = affinity._assign(machine, located, located + spread)
                assert full.tolist() == [0]
                assert affinity.assign(machine, located, spread).tolist() == full.tolist()
        # past the shortcut's bounds (bytes elsewhere, more programs): the full computation, whatever it says
        for _ in range(20):
            located = rng.integers(0, 1 << 16, size=(int(rng.integers(1, 4)), D)).astype(np.float64)
            spread = rng.integers(0, 1 << 12, size=located.shape).astype(np.float64)
            full = affinity._assign(machine, located, located + spread)
            assert affinity.assign(machine, located, spread).tolist() == full.tolist()


def _assign_every_round(machine, by_domain, total):
    """sim/affinity._assign as it was before it skipped repeated rounds: every balancing round run."""
    import numpy as np

    P, D = by_domain.shape
    located = by_domain.sum(axis=1)
    default_dom = np.arange(P, dtype=np.int64) * machine.domains // max(P, 1)
    nudge = np.zeros_like(by_domain)
    nudge[np.arange(P), default_dom] = 1e-9 * located
    dom = np.where(located > 0, (by_domain + nudge).argmax(axis=1), default_dom)
    moved = total.sum(axis=1)
    work = np.where(moved > 0, moved, 1.0)
    best = affinity_module()._launch_bound(machine, total, dom)
    rounds = 0
    for _ in range(affinity_module().MAX_ROUNDS):
        load = np.bincount(dom, weights=work, minlength=D)
        hi, lo = int(load.argmax()), int(load.argmin())
        excess = (load[hi] - load.mean()) / 2
        if hi == lo or excess <= 0:
            break
        cand = np.nonzero(dom == hi)[0]
        order = np.lexsort((-cand, -(by_domain[cand, lo] - by_domain[cand, hi])))
        take = cand[order[: max(1, int(np.searchsorted(np.cumsum(work[cand[order]]), excess)))]]
        trial = dom.copy()
        trial[take] = lo
        bound = affinity_module()._launch_bound(machine, total, trial)
        free = bool(np.all(by_domain[take, lo] >= by_domain[take, hi]))
        if bound > best or (bound == best and not free):
            break
        dom, best = trial, bound
        rounds += 1
    order = np.argsort(dom, kind="stable")
    first = np.searchsorted(dom[order], dom[order])
    rank = np.empty(P, dtype=np.int64)
    rank[order] = np.arange(P) - first
    return dom * machine.domain.cores + rank % machine.domain.cores, rounds


def affinity_module():
    from triton_plate_backend.sim import affinity

    return affinity


def test_the_balancing_gives_what_running_every_round_gives():
    """_assign skips the rounds after a mapping it has seen (they repeat: a program homed evenly across
    domains moves back and forth at an unchanged bound until MAX_ROUNDS); its answer is the one running every
    round gives, on launches that cycle (even homes, one or a few programs) and on others."""
    import numpy as np

    from triton_plate_backend.machine import PRESETS

    affinity = affinity_module()
    rng = np.random.default_rng(1)
    cycled = 0
    for machine in PRESETS.values():
        D = machine.total_domains
        cases = []
        for programs in (1, 2, 3, 5, 8, 33):
            cases.append(np.full((programs, D), 4096.0))  # every program homed evenly: the cycling case
            cases.append(np.tile(np.eye(D)[0] * 4096.0, (programs, 1)))  # all in domain 0
        for _ in range(30):
            shape = (int(rng.integers(1, 40)), D)
            homes = rng.integers(0, 1 << 14, size=shape).astype(np.float64)
            homes[rng.random(shape) < 0.5] = 0.0
            cases.append(homes)
        for located in cases:
            for spread in (np.zeros_like(located), rng.integers(0, 1 << 10, size=located.shape).astype(np.float64)):
                full, rounds = _assign_every_round(machine, located, located + spread)
                assert affinity._assign(machine, located, located + spread).tolist() == full.tolist()
                cycled += rounds == affinity.MAX_ROUNDS
    assert cycled > 0  # some cases ran every round: the skip was exercised
