"""sim/persistent_runs.py and sim/data_flow.py: a persistent launch whose trace reads no data runs as
written (only the programs that store anything) and is timed from the address-only run's trace, kept
for its repeats over the same layout; that trace equals the one its own persistent run records."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

from triton_plate_backend.sim import executor
from triton_plate_backend.sim.data_flow import trace_reads_no_data
from triton_plate_backend.sim.timing import simulate_timing


@pytest.fixture(scope="module", autouse=True)
def mini(plate_mini_module):
    return plate_mini_module


@triton.jit
def double_kernel(out_ptr, in_ptr):
    pid = tl.program_id(axis=0)
    tl.store(out_ptr + pid, tl.load(in_ptr + pid) * 2)


@triton.jit
def add_2d_kernel(a_ptr, b_ptr, out_ptr, nx, ny, BX: tl.constexpr, BY: tl.constexpr):
    xi = tl.program_id(0) * BX + tl.arange(0, BX)[:, None]
    yi = tl.program_id(1) * BY + tl.arange(0, BY)[None, :]
    m = (xi < nx) & (yi < ny)
    a = tl.load(a_ptr + xi + nx * yi, m)
    b = tl.load(b_ptr + yi + ny * xi, m)
    tl.store(out_ptr + xi + nx * yi, a + b, m)


@triton.jit
def guarded_add_kernel(out_ptr, in_ptr, n, BLOCK: tl.constexpr):
    # the loads sit under an scf.if, not at the top of the body: passes/persistent.py leaves the kernel as it is
    start = tl.program_id(0) * BLOCK
    if start < n:
        offs = start + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(in_ptr + offs, mask=m) + 1, mask=m)


@triton.jit
def masked_add_kernel(out_ptr, in_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(in_ptr + offs, mask=m) + 1, mask=m)


@triton.jit
def masked_by_data_kernel(out_ptr, in_ptr, keep_ptr):
    pid = tl.program_id(axis=0)
    keep = tl.load(keep_ptr + pid) > 0
    tl.store(out_ptr + pid, tl.load(in_ptr + pid) + 1, mask=keep)


@triton.jit
def histogram_kernel(x, bins, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.atomic_add(bins + tl.load(x + offs, mask=m, other=0), 1, mask=m)


class Runs:
    """One kernel's launches (program, grid, args, as written) and executor runs (grid, traced, programs)."""

    def __init__(self, monkeypatch, device, kernel: str):
        self.launches, self.runs = [], []
        launch, execute = type(device).launch, executor.execute

        def recorded_launch(dev, program, grid, args, **kw):
            if program.name == kernel:
                self.launches.append((program, tuple(grid), list(args), kw.get("as_written")))
            return launch(dev, program, grid, args, **kw)

        def recorded_execute(program, grid, args, memory, *a, **kw):
            if kw.get("rules") is None and program.name == kernel:
                programs = kw.get("programs")
                self.runs.append(
                    (tuple(grid), kw.get("record_trace", True), None if programs is None else len(programs))
                )
            return execute(program, grid, args, memory, *a, **kw)

        monkeypatch.setattr(type(device), "launch", recorded_launch)
        monkeypatch.setattr(executor, "execute", recorded_execute)


def _kept_is_fresh(mini, program, grid, args):
    """Check that the trace kept for the launch is the one it records now; return that fresh trace (the
    kernels write out of place: running one again is harmless)."""
    kept = mini._persistent_runs.get(mini._persistent_runs.key(program, grid, args, mini.memory), program)
    fresh = executor.execute(program, grid, args, mini.memory, mini.machine)
    assert kept is not None and kept.digest() == fresh.digest()
    return fresh


def _three_guarded_adds(mini, x, n: int, block: int, grid: int) -> tuple[list[float], torch.Tensor]:
    """guarded_add_kernel over ``x`` three times, each result checked: the modeled ns of each launch, and the
    last launch's output (its recorded arguments point into it: the caller keeps it alive to run it again)."""
    times = []
    for _ in range(3):
        out = torch.zeros(n, device="plate")
        guarded_add_kernel[(grid,)](out, x, n, BLOCK=block)
        assert out.cpu().tolist() == (torch.arange(n, dtype=torch.float32) + 1).tolist()
        times.append(mini.last_profile.time_ns)
    return times, out


def test_a_launch_runs_as_written_and_is_timed_from_the_kept_trace(mini, monkeypatch):
    """Every store of the persistent run's trace moved something: every program as written runs, with no
    address-only run of the launch as written to find those that store (persistent_runs._every_store_moved)."""
    n = 4096  # past the launcher's priced size on plate-mini: the persistent loop runs
    seen = _address_runs(monkeypatch, mini)
    runs = Runs(monkeypatch, mini, "double_kernel")
    times = []
    for i in range(3):
        x = torch.arange(n, dtype=torch.float32, device="plate") + i
        keep = [torch.empty(777 * (i + 1), device="plate")]  # other allocations between launches: another layout
        out = torch.empty(n, device="plate")
        double_kernel[(n,)](out, x)
        assert out.cpu().tolist() == (2 * (torch.arange(n, dtype=torch.float32) + i)).tolist()
        times.append(mini.last_profile.time_ns)
        del keep
    program, grid, args, as_written = runs.launches[-1]
    assert grid != (n, 1, 1) and as_written[0] == (n, 1, 1)
    # every launch ran the grid as written, untraced, all its programs (the trace: the first's address-only run,
    # kept; the only address-only runs: that one and each layout's first, of the persistent launch)
    assert runs.runs == [((n, 1, 1), False, None)] * 3
    assert {g for p, g, _ in seen if p is program} == {grid}
    assert times[0] == times[1] == times[2]
    # the kept trace is the one this launch's own persistent run records, and times the same
    fresh = _kept_is_fresh(mini, program, grid, args)
    assert simulate_timing(fresh, mini.machine).time_ns == times[-1]


def _address_runs(monkeypatch, mini) -> list[tuple]:
    """Record every address-only run (sim/estimate.py ``_address_run``) from now on: (program, grid,
    whether a launch's own run was under way), so a test tells the launcher's estimates from the launch's."""
    from triton_plate_backend.sim import estimate as est_mod

    seen, inside = [], []
    real_run, real_launch_run = est_mod._address_run, type(mini)._run

    def counted(program, grid, *a, **kw):
        seen.append((program, tuple(grid), bool(inside)))
        return real_run(program, grid, *a, **kw)

    def launch_run(dev, *a, **kw):
        inside.append(1)
        try:
            return real_launch_run(dev, *a, **kw)
        finally:
            inside.pop()

    monkeypatch.setattr(est_mod, "_address_run", counted)
    monkeypatch.setattr(type(mini), "_run", launch_run)
    return seen


def test_a_priced_launch_runs_no_address_only_run_of_its_own(mini, monkeypatch):
    """The launcher prices the persistent split against the grid as written (sim/estimate.py: an
    address-only run of each); the launch's kept trace and its live programs come from those runs,
    and the kept trace is the one the launch's own persistent run records."""
    n = 512  # within the launcher's priced size on plate-mini
    seen = _address_runs(monkeypatch, mini)
    runs = Runs(monkeypatch, mini, "double_kernel")
    x = torch.arange(n, dtype=torch.float32, device="plate")
    out = torch.empty(n, device="plate")
    double_kernel[(n,)](out, x)
    assert out.cpu().tolist() == (2 * torch.arange(n, dtype=torch.float32)).tolist()
    program, grid, args, as_written = runs.launches[-1]
    assert grid != (n, 1, 1) and runs.runs == [((n, 1, 1), False, n)]
    grids = [(g, launching) for _, g, launching in seen]
    assert ((n, 1, 1), False) in grids and (grid, False) in grids  # the launcher's estimates
    assert [g for g, launching in grids if launching] == []  # none by the launch itself
    fresh = _kept_is_fresh(mini, program, grid, args)
    assert simulate_timing(fresh, mini.machine).time_ns == mini.last_profile.time_ns


def test_programs_that_store_nothing_are_left_out_of_the_run_as_written(mini, monkeypatch):
    nx, ny, block = 32, 16, 8
    a, b = torch.rand(nx, ny), torch.rand(nx, ny)
    xs, ys = torch.meshgrid(torch.arange(nx), torch.arange(ny), indexing="ij")
    ref = torch.zeros(nx * ny)
    ref[xs + nx * ys] = a.reshape(-1)[xs + nx * ys] + b.reshape(-1)[ys + ny * xs]
    ad, bd = a.to("plate"), b.to("plate")
    runs = Runs(monkeypatch, mini, "add_2d_kernel")
    times = []
    for _ in range(3):
        out = torch.zeros(nx, ny, device="plate")
        add_2d_kernel[(nx, ny)](ad, bd, out, nx, ny, BX=block, BY=block)  # one program per element, as grid_type_1
        assert out.cpu().reshape(-1).tolist() == ref.tolist()
        times.append(mini.last_profile.time_ns)
    assert times[0] == times[1] == times[2]
    live = (nx // block) * (ny // block)  # 8 of the 512 programs touch the tensors
    assert runs.runs == [((nx, ny, 1), False, live)] * 3


def test_an_unpriced_persistent_launch_whose_stores_moved_nothing_runs_only_its_live_programs(mini, monkeypatch):
    """Past the launcher's priced size no address-only run of the launch as written is at hand; where the
    persistent run's trace has stores that moved nothing (trips past the tensor's end), that run is made
    and the launch runs as written only the programs that store."""
    n, block, grid = 200, 64, 4096  # 4 of the 4096 programs store
    seen = _address_runs(monkeypatch, mini)
    runs = Runs(monkeypatch, mini, "masked_add_kernel")
    x = torch.arange(n, dtype=torch.float32, device="plate")
    out = torch.zeros(n, device="plate")
    masked_add_kernel[(grid,)](out, x, n, BLOCK=block)
    assert out.cpu().tolist() == (torch.arange(n, dtype=torch.float32) + 1).tolist()
    program, launched, args, as_written = runs.launches[-1]
    assert launched != (grid, 1, 1) and as_written[0] == (grid, 1, 1)
    assert runs.runs == [((grid, 1, 1), False, -(-n // block))]
    assert [g for p, g, _ in seen if p is program] == [launched, (grid, 1, 1)]  # the persistent run, then as written


def test_a_launch_that_is_not_persistent_runs_only_its_live_programs_from_a_kept_trace(mini, monkeypatch):
    """The launcher hands every launch its launch as written: a kernel that is not persistent and reads no
    data runs, untraced, only the programs that store anything (one per grid element, as upstream's
    grid_type_1 launches), and is timed from the kept address-only trace, the one its traced run records."""
    from triton_plate_backend import knobs
    from triton_plate_backend.launcher import is_persistent
    from triton_plate_backend.sim.affinity import resolve_policy

    n, block, grid = 200, 64, 256  # 4 of the 256 programs store
    x = torch.arange(n, dtype=torch.float32, device="plate")
    runs = Runs(monkeypatch, mini, "guarded_add_kernel")
    times, out = _three_guarded_adds(mini, x, n, block, grid)
    program, launched, args, as_written = runs.launches[-1]
    assert not is_persistent(program) and launched == (grid, 1, 1) and as_written[0] == launched
    assert runs.runs == [((grid, 1, 1), False, -(-n // block))] * 3
    assert times[0] == times[1] == times[2]
    fresh = _kept_is_fresh(mini, program, launched, args)
    policy = resolve_policy(knobs.policy(), program, launched, args, mini.memory)  # the launch's core mapping
    assert simulate_timing(fresh, mini.machine, policy=policy).time_ns == times[-1]


def test_a_trace_that_reads_data_is_never_reused(mini, monkeypatch):
    n = 4096
    runs = Runs(monkeypatch, mini, "masked_by_data_kernel")
    for i in range(2):
        x = torch.arange(n, dtype=torch.float32, device="plate")
        keep = (torch.arange(n, device="plate") % (2 + i) == 0).to(torch.int32)
        out = torch.zeros(n, device="plate")
        masked_by_data_kernel[(n,)](out, x, keep)
        want = torch.where(keep.cpu() > 0, torch.arange(n, dtype=torch.float32) + 1, 0.0)
        assert out.cpu().tolist() == want.tolist()
    program = runs.launches[-1][0]
    assert not trace_reads_no_data(program)
    assert all(traced for _, traced, _ in runs.runs)  # each launch ran its persistent loop, traced


def test_atomics_and_data_dependent_masks_read_data(mini):
    x = torch.randint(0, 8, (512,), dtype=torch.int32, device="plate")
    bins = torch.zeros(8, dtype=torch.int32, device="plate")
    k = histogram_kernel[(4,)](x, bins, 512, BLOCK=128)
    k._init_handles()
    assert not trace_reads_no_data(k.function.program)
    out = torch.empty(64, device="plate")
    k = double_kernel[(64,)](out, torch.ones(64, device="plate"))
    k._init_handles()
    assert trace_reads_no_data(k.function.program)  # the loaded value only feeds the stored one


def test_a_launch_of_at_most_one_program_per_core_runs_traced_once_then_untraced(mini, monkeypatch):
    """A launch of at most one program per core (a test suite's usual launch) runs traced the first
    time, with no address-only run of its own (sim/device.py ``_run``): its trace is kept for its
    repeats, which run every program untraced and are timed the same."""
    n, block = 200, 64
    grid = -(-n // block)
    assert grid <= mini.machine.total_cores
    seen = _address_runs(monkeypatch, mini)
    x = torch.arange(n, dtype=torch.float32, device="plate")
    runs = Runs(monkeypatch, mini, "guarded_add_kernel")
    times, out = _three_guarded_adds(mini, x, n, block, grid)
    assert runs.runs == [((grid, 1, 1), True, None), ((grid, 1, 1), False, None), ((grid, 1, 1), False, None)]
    assert [program for program, _, launching in seen if launching] == []  # none by the launch itself
    assert times[0] == times[1] == times[2]
    program, launched, args, _ = runs.launches[-1]
    _kept_is_fresh(mini, program, launched, args)


@triton.jit
def once_or_more_kernel(out_ptr, in_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(in_ptr + offs, mask=m) * 3, mask=m)


@triton.jit
def small_masked_by_data_kernel(out_ptr, in_ptr, keep_ptr):
    pid = tl.program_id(axis=0)
    keep = tl.load(keep_ptr + pid) > 0
    tl.store(out_ptr + pid, tl.load(in_ptr + pid) + 1, mask=keep)


def test_a_small_launch_asks_whether_its_trace_reads_data_at_its_first_repeat(mini, monkeypatch):
    """A launch of at most one program per core keeps its first run's trace without asking whether the trace
    reads data (persistent_runs.py ``key`` with checked False): a kernel launched once is never asked; its
    first repeat asks, then runs untraced from the kept trace, timed the same."""
    from triton_plate_backend.sim import persistent_runs

    asked = []
    monkeypatch.setattr(
        persistent_runs, "trace_reads_no_data", lambda p: asked.append(p.name) or trace_reads_no_data(p)
    )
    n, block = 100, 32
    grid = -(-n // block)
    assert grid <= mini.machine.total_cores
    runs = Runs(monkeypatch, mini, "once_or_more_kernel")
    x = torch.arange(n, dtype=torch.float32, device="plate")
    times = []
    for i in range(3):
        out = torch.zeros(n, device="plate")
        once_or_more_kernel[(grid,)](out, x, n, BLOCK=block)
        assert out.cpu().tolist() == (3 * torch.arange(n, dtype=torch.float32)).tolist()
        times.append(mini.last_profile.time_ns)
        program = runs.launches[-1][0]
        if i == 0:
            assert asked == [] and persistent_runs.known_reads_no_data(program) is None
    assert asked == ["once_or_more_kernel"]  # at the first repeat, once
    assert persistent_runs.known_reads_no_data(program) is True
    assert runs.runs == [((grid, 1, 1), True, None), ((grid, 1, 1), False, None), ((grid, 1, 1), False, None)]
    assert times[0] == times[1] == times[2]
    _kept_is_fresh(mini, program, *runs.launches[-1][1:3])


def test_a_small_launch_whose_trace_reads_data_drops_its_kept_trace_at_its_first_repeat(mini, monkeypatch):
    """The first repeat of a small launch whose trace reads data finds the unasked trace, asks, drops it and
    runs traced, as every later launch does (nothing is kept for it again)."""
    from triton_plate_backend.sim import persistent_runs

    n = 4
    assert n <= mini.machine.total_cores
    runs = Runs(monkeypatch, mini, "small_masked_by_data_kernel")
    x = torch.arange(n, dtype=torch.float32, device="plate")
    for i in range(3):
        keep = torch.tensor([(j + i) % 2 for j in range(n)], dtype=torch.int32, device="plate")
        out = torch.zeros(n, device="plate")
        small_masked_by_data_kernel[(n,)](out, x, keep)
        want = torch.where(keep.cpu() > 0, torch.arange(n, dtype=torch.float32) + 1, 0.0)
        assert out.cpu().tolist() == want.tolist()
    program, grid, args, _ = runs.launches[-1]
    assert persistent_runs.known_reads_no_data(program) is False
    assert runs.runs == [((n, 1, 1), True, None)] * 3  # every launch ran traced
    key = mini._persistent_runs.key(program, grid, args, mini.memory, checked=False)
    assert key is None  # known to read data: nothing is kept for it
    unasked = mini._persistent_runs.key(program, grid, args, mini.memory, checked=True)
    assert unasked is None
