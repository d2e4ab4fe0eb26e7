"""The cost model as a query (sim/estimate.py, triton_plate_backend.estimate): a launch estimated
without running it moves the same bytes as the run, leaves memory alone, and lands near level 1."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

import triton_plate_backend.torch_device  # noqa: F401
from triton_plate_backend.bench.kernels import CASES, add_kernel
from triton_plate_backend.estimate import estimate
from triton_plate_backend.sim.device import get_device


def test_estimate_leaves_memory_and_matches_the_bytes_of_the_run():
    n = 1 << 16
    x, y = torch.randn(n).to("plate"), torch.randn(n).to("plate")
    out = torch.zeros(n).to("plate")
    dev = get_device()
    before = dev.launches
    est = estimate(add_kernel, (n // 4096,), x, y, out, n, BLOCK=4096)
    assert dev.launches == before + 1 and dev.last_profile is None  # a launch, estimated: no Profile
    assert out.cpu().abs().sum() == 0, "an estimate must not write device memory"
    add_kernel[(n // 4096,)](x, y, out, n, BLOCK=4096)
    prof = get_device().last_profile
    torch.testing.assert_close(out.cpu(), x.cpu() + y.cpu())
    np.testing.assert_allclose(est.read_bytes, prof.read_bytes)
    np.testing.assert_allclose(est.write_bytes, prof.write_bytes)
    assert est.read_bytes.sum() == 8 * n and est.write_bytes.sum() == 4 * n
    assert est.remote_share == pytest.approx(0.0)  # blocked by default, each program in its block's domain
    assert est.level0_ns == pytest.approx(prof.bound.cycles / prof.clock_ghz)
    assert est.time_ns >= est.level0_ns


def test_estimate_of_a_placement_question():
    """Placement as an input: the same launch asked with every tensor in domain 0 is all local
    under a policy that runs every program in domain 0."""
    n = 1 << 16
    x, y, out = (torch.randn(n).to("plate") for _ in range(3))
    dev = get_device()
    k = add_kernel.warmup(x, y, out, n, BLOCK=4096, grid=(16,))
    k._init_handles()
    from triton_plate_backend.sim.estimate import estimate_launch

    # the kernel is persistent (passes/persistent.py): one group of 16 (the three plate_split of plate-mini's
    # four domains, plate_rows and plate_grid_x all 16) keeps one row per program
    args = [x.data_ptr(), y.data_ptr(), out.data_ptr(), n, 16, 16, 16, 16, 16]
    local = {"x_ptr": "local:0", "y_ptr": "local:0", "out_ptr": "local:0"}
    est = estimate_launch(k.function.program, (16,), args, dev.memory, policy=np.zeros(16, np.int64), placement=local)
    assert est.remote_share == 0.0 and est.bytes[0, 0] == 12 * n


@pytest.mark.parametrize("name", ["vector_add", "softmax", "layer_norm_fwd", "gemm_bf16", "attention_fwd"])
def test_estimate_is_near_level_one(name):
    case = CASES[name]
    launch = case.setup(case.quick[0])
    dev = get_device()
    launch.run()
    level1 = dev.last_profile.time_ns
    with dev.estimating() as ests:
        launch.run()
    (est,) = ests
    assert est.time_ns >= est.level0_ns * 0.999
    assert abs(est.time_ns - level1) / level1 < 0.15, f"{name}: estimate {est.time_ns:.0f} ns vs level 1 {level1:.0f}"


def test_autotune_simulates_only_configs_the_model_ranks_near_the_best(monkeypatch):
    """@triton.autotune through the driver's benchmarker: configs whose estimate is far above the best
    one so far are not simulated, and the choice is exhaustive simulation's."""
    from triton_plate_backend.bench.autotune import regret

    monkeypatch.setenv("PLATE_BENCH_REPS", "1")
    r = regret(256)
    assert r["simulations"] < r["configs"]
    assert r["chosen"] == r["best"] and r["regret_pct"] == 0.0
    assert set(r["estimated_ms"]) == set(r["simulated_ms"])


@pytest.mark.parametrize("name", ["softmax", "reduction", "gemm_fp32", "attention_fwd"])
def test_the_address_only_run_records_the_functional_trace(name, monkeypatch):
    """Step 1 of the estimate is exact: the same entries, programs, bytes per home domain, runs and
    elements as the functional executor's trace (loops, masks and tails included)."""
    from triton_plate_backend.sim.estimate import address_trace
    from triton_plate_backend.sim.executor import execute

    dev = get_device()
    launches = []
    real = type(dev).launch
    case = CASES[name]
    launch = case.setup(case.quick[0])  # keeps its tensors alive (memory is freed on del); a GEMM asks the model
    monkeypatch.setattr(type(dev), "launch", lambda self, p, g, a, **kw: launches.append((p, g, list(a))))
    launch.run()
    monkeypatch.setattr(type(dev), "launch", real)
    ((program, grid, args),) = launches
    functional = execute(program, grid, args, dev.memory, dev.machine)
    assert address_trace(program, grid, args, dev.memory).digest() == functional.digest()


@triton.jit
def _loop_on_loaded_kernel(x_ptr, n_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    n = tl.load(n_ptr + pid)  # a scalar from memory: a loop bound and a branch condition
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in range(n):
        acc += tl.load(x_ptr + i * BLOCK + tl.arange(0, BLOCK))
    if n > 2:
        tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), acc)


def test_the_address_only_run_follows_a_loaded_loop_bound_and_branch(monkeypatch):
    """A scalar loaded from memory (a tile read into a register: v.extract) that bounds a loop and
    decides a branch is computed by the address-only run, which records the functional trace."""
    from triton_plate_backend.sim.estimate import address_trace
    from triton_plate_backend.sim.executor import execute

    dev = get_device()
    launches = []
    real = type(dev).launch
    x = torch.randn(8 * 64).to("plate")
    counts = torch.tensor([1, 3, 5, 0], dtype=torch.int32).to("plate")
    out = torch.zeros(4 * 64).to("plate")
    monkeypatch.setattr(type(dev), "launch", lambda self, p, g, a, **kw: launches.append((p, g, list(a))))
    _loop_on_loaded_kernel[(4,)](x, counts, out, BLOCK=64)
    monkeypatch.setattr(type(dev), "launch", real)
    ((program, grid, args),) = launches
    assert any(i.mnemonic == "v.extract" for i in program.instrs)
    functional = execute(program, grid, args, dev.memory, dev.machine)
    assert len({len(e.programs) for e in functional.entries}) > 1  # the programs' trips differ
    assert address_trace(program, grid, args, dev.memory).digest() == functional.digest()


@triton.jit
def _permuted_rows_matmul_kernel(
    a_ptr, b_ptr, c_ptr, perm_ptr, n, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr
):
    pid = tl.program_id(0)
    pid_m, pid_n = pid // tl.cdiv(n, BN), pid % tl.cdiv(n, BN)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, n, BK):
        acc += tl.dot(
            tl.load(a_ptr + rm[:, None] * n + k + rk[None, :]), tl.load(b_ptr + (k + rk[:, None]) * n + rn[None, :])
        )
    out = acc.to(tl.bfloat16)  # the accumulator dies here; the row indices and addresses come after
    rows = tl.load(perm_ptr + rm)
    tl.store(c_ptr + rows[:, None] * n + rn[None, :], out, mask=rn[None, :] < n)


def test_a_gemm_whose_store_addresses_follow_its_accumulator_multiplies_nothing(monkeypatch):
    """The store's gathered addresses are computed after the accumulator dies (the SRAM planner may
    put them in its bytes): the address-only run leaves every m.mma out, computes those addresses
    and records the functional trace."""
    from triton_plate_backend.sim.estimate import address_slice, address_trace
    from triton_plate_backend.sim.executor import execute

    dev = get_device()
    launches = []
    real = type(dev).launch
    n = 256
    a, b = (torch.randn(n, n, dtype=torch.bfloat16).to("plate") for _ in "ab")
    perm = torch.randperm(n).to("plate")
    c = torch.zeros(n, n, dtype=torch.bfloat16, device="plate")
    monkeypatch.setattr(type(dev), "launch", lambda self, p, g, a, **kw: launches.append((p, g, list(a))))
    _permuted_rows_matmul_kernel[(4,)](a, b, c, perm, n, BM=128, BN=128, BK=64)
    monkeypatch.setattr(type(dev), "launch", real)
    ((program, grid, args),) = launches
    run = address_slice(program)
    assert any(program.instrs[pc].mnemonic == "dma.load" for pc in run)  # the row indices, read for real
    assert not any(program.instrs[pc].mnemonic == "m.mma" for pc in run)
    trace = address_trace(program, grid, args, dev.memory)
    assert trace.digest() == execute(program, grid, args, dev.memory, dev.machine).digest()


def _gemm_with_wide_b(m: int, k: int, n: int, b_placement: str | None):
    """A bf16 GEMM whose B rows are two interleaving stripes long (n = 4096: 8 KiB): each column block
    of B lives in two domains, and the programs of one wave read the same column blocks (GROUP_M 8 over
    128 x 128 tiles), so waves alternate between domains {0, 2} and {1, 3}, as at 4096^3."""
    import triton

    from triton_plate_backend.bench.kernels import matmul_kernel

    a = torch.randn(m, k, dtype=torch.bfloat16).to("plate")
    if b_placement is None:
        b = torch.randn(k, n, dtype=torch.bfloat16).to("plate")
    else:
        with torch.plate.placement(b_placement):
            b = torch.randn(k, n, dtype=torch.bfloat16).to("plate")
    c = torch.empty(m, n, dtype=torch.bfloat16, device="plate")
    grid = (triton.cdiv(m, 128) * triton.cdiv(n, 128),)
    args = (a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    meta = dict(BM=128, BN=128, BK=64, GROUP_M=8)
    return (lambda: matmul_kernel[grid](*args, **meta)), (lambda: estimate(matmul_kernel, grid, *args, **meta)), b


def test_estimate_keeps_the_waves_of_a_contended_launch_apart():
    """Each wave's DMAs contend for the domains THAT wave reads: averaged over the waves, B's bytes
    would look spread over every domain and the estimate came out 24% below level 1."""
    run, est, _ = _gemm_with_wide_b(512, 256, 4096, "interleaved")
    e = est()
    run()
    level1 = get_device().last_profile
    assert level1.time_ns > 1.4 * e.level0_ns  # contended: far above the level-0 bound
    assert abs(e.time_ns - level1.time_ns) / level1.time_ns < 0.05, f"estimate {e.time_ns:.0f} vs {level1.time_ns:.0f}"


def test_the_planner_buys_the_replica_of_b_when_waves_contend():
    """The 4096^3 case's shape, small: with the waves priced apart, a replica of B pays within the first
    launch (interleaved, every wave reads half the domains), so the launch makes it: B is read locally."""
    dev = get_device()
    run, _, b = _gemm_with_wide_b(1024, 256, 4096, None)
    before = len(dev.operand_moves)
    run()
    moves = list(dev.operand_moves)[before:]
    assert [(m.arg, m.before, m.after) for m in moves] == [("b_ptr", "blocked", "replicated")]
    assert moves[0].saved_ns > moves[0].migration_ns
    assert dev.last_profile.remote_bytes == 0


def test_inside_a_launch_an_equal_question_is_answered_once(monkeypatch):
    """``shared_estimates``: the same launch asked twice (the persistent gate, then the operand planner) is
    estimated once and answered with the same Estimate; another placement, another policy or memory
    whose allocations changed is asked afresh, and so is everything outside the block."""
    from triton_plate_backend.sim import estimate as est_mod

    n = 1 << 16
    x, y, out = (torch.randn(n).to("plate") for _ in range(3))
    dev = get_device()
    k = add_kernel.warmup(x, y, out, n, BLOCK=4096, grid=(16,))
    k._init_handles()
    program = k.function.program
    args = [x.data_ptr(), y.data_ptr(), out.data_ptr(), n, 16, 16, 16, 16, 16]
    asked = []
    real = est_mod._estimate_launch
    monkeypatch.setattr(est_mod, "_estimate_launch", lambda *a, **kw: asked.append(kw) or real(*a, **kw))

    def ask(**kw):
        return est_mod.estimate_launch(program, (16, 1, 1), list(args), dev.memory, **kw)

    alone = ask()
    with est_mod.shared_estimates():
        first = ask()
        assert ask() is first and ask(machine=dev.machine) is first and len(asked) == 2
        local = ask(placement={"x_ptr": "local:0"})
        assert ask(placement={"x_ptr": "local:0"}) is local and local.time_ns != first.time_ns
        assert ask(policy="round_robin") is not first and len(asked) == 4
        extra = torch.randn(64).to("plate")  # another allocation: memory is not what it was
        assert ask() is not first and len(asked) == 5
        del extra
    assert ask() is not first and len(asked) == 6
    assert (first.time_ns, first.read_bytes.tobytes()) == (alone.time_ns, alone.read_bytes.tobytes())


@triton.jit
def _scatter_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + (offs * 7) % n, tl.load(x_ptr + offs))  # a scatter: counted element by element


@triton.jit
def _indexed_gather_kernel(x_ptr, idx_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + tl.load(idx_ptr + offs)))  # addresses loaded: run for real


@triton.jit
def _add_along_y_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)  # along y: straight-line code, not persistent
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs))


def _program_and_args(kernel, grid, *args, **meta):
    from triton_plate_backend.launcher import _one_each, bind_arguments, is_persistent

    k = kernel.warmup(*args, grid=grid, **meta)
    k._init_handles()
    program, dev = k.function.program, get_device()
    values, _ = bind_arguments(program.name, program, list(k.src.signature.values()), [*args, *meta.values()], dev)
    return program, (_one_each(program, grid, values) if is_persistent(program) else values)


def _matmul_512():
    """bench's matmul_kernel over 512^3 bf16 plate tensors in 128x128x64 tiles: (program, args, grid, a, b, c)."""
    from triton_plate_backend.bench.kernels import matmul_kernel

    m = k = n = 512
    a, b = (torch.randn(m, k, dtype=torch.bfloat16).to("plate") for _ in range(2))
    c = torch.empty(m, n, dtype=torch.bfloat16, device="plate")
    grid = ((m // 128) * (n // 128), 1, 1)
    strides = (a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    program, args = _program_and_args(matmul_kernel, grid, a, b, c, m, n, k, *strides, BM=128, BN=128, BK=64, GROUP_M=8)
    return program, args, grid, a, b, c


def test_a_placement_is_priced_from_the_launch_s_one_run(monkeypatch):
    """Inside ``shared_estimates`` the address-only run of the launch as placed is kept, and another
    placement's trace is that run with the accesses to the moved allocations counted again: the same
    trace (digest) and Estimate as that placement's own run, for strided tiles (a GEMM's A, B and C),
    a scatter, several operands moved at once, a launch whose address slice loads for real (a gather:
    its addresses, or tiles sharing their SRAM, are data; the loads are kept before they run) and a
    launch run in cache-sized sub-batches (one trace entry per batch, one access per sub-batch)."""
    from triton_plate_backend.sim import estimate as est_mod

    runs, model = [], est_mod.model
    real_run = est_mod._address_run
    monkeypatch.setattr(est_mod, "_address_run", lambda *a, **kw: runs.append(1) or real_run(*a, **kw))
    dev = get_device()

    def check(program, grid, args, placements, runs_inside):
        traces = {}
        monkeypatch.setattr(
            est_mod, "model", lambda t, *a, **kw: traces.setdefault(len(traces), t) and model(t, *a, **kw)
        )
        alone = [est_mod.estimate_launch(program, grid, list(args), dev.memory, placement=p) for p in placements]
        own = [traces[i].digest() for i in range(len(placements))]
        traces.clear()
        del runs[:]
        with est_mod.shared_estimates():
            shared = [est_mod.estimate_launch(program, grid, list(args), dev.memory, placement=p) for p in placements]
        assert len(runs) == runs_inside
        assert [traces[i].digest() for i in range(len(placements))] == own
        for a, b in zip(alone, shared):
            assert (a.time_ns, a.bound, a.read_bytes.tobytes(), a.write_bytes.tobytes()) == (
                b.time_ns, b.bound, b.read_bytes.tobytes(), b.write_bytes.tobytes()
            )  # fmt: skip
        return alone

    program, args, grid, a, b, c = _matmul_512()
    placements = [None, {"b_ptr": "interleaved"}, {"b_ptr": "replicated"}, {"a_ptr": "local:1", "b_ptr": "replicated"},
                  {"c_ptr": "replicated"}, {"c_ptr": "interleaved", "a_ptr": "interleaved"}]  # fmt: skip
    times = check(program, grid, args, placements, runs_inside=1)
    assert len({e.time_ns for e in times}) > 2  # the placements do price differently

    x = torch.randn(1 << 14).to("plate")
    out = torch.empty(1 << 14, device="plate")
    program, args = _program_and_args(_scatter_kernel, (16, 1, 1), x, out, 1 << 14, BLOCK=1024)
    check(program, (16, 1, 1), args, [None, {"out_ptr": "interleaved"}, {"out_ptr": "local:2"}], runs_inside=1)

    idx = torch.randint(0, 1 << 14, (1 << 14,), dtype=torch.int32).to("plate")
    program, args = _program_and_args(_indexed_gather_kernel, (16, 1, 1), x, idx, out, BLOCK=1024)
    placements = [None, {"x_ptr": "interleaved"}, {"x_ptr": "local:2"}, {"idx_ptr": "interleaved"}]
    check(program, (16, 1, 1), args, placements, runs_inside=1)

    from triton_plate_backend.sim import executor

    for name, value in (("CACHE_CUT_BYTES", 0), ("CACHE_BATCH_BYTES", 1), ("CACHE_TILE_BYTES", 1)):
        monkeypatch.setattr(executor, name, value)
    monkeypatch.setattr(executor, "CACHE_MIN_PROGRAMS", 5)  # 16 programs: sub-batches of 5, 5, 5 and 1
    cut = []
    real_cut = executor._run_cut
    monkeypatch.setattr(executor, "_run_cut", lambda *a: cut.append(1) or real_cut(*a))
    n = 1 << 14
    y, z = torch.randn(n).to("plate"), torch.empty(n, device="plate")
    program, args = _program_and_args(_add_along_y_kernel, (1, 16, 1), x, y, z, BLOCK=1024)
    placements = [None, {"x_ptr": "interleaved"}, {"y_ptr": "replicated", "out_ptr": "local:3"}]
    check(program, (1, 16, 1), args, placements, runs_inside=1)
    assert cut  # the launch did run in sub-batches


def test_an_access_is_counted_again_once_per_placement_of_what_it_touches(monkeypatch):
    """Re-pricing counts an access again only over a placement of the moved allocations its span overlaps
    that it was not counted over yet (``estimate._Log``): the operand planner's candidates each add one
    operand's placement to the choices before it, so B's accesses counted over ``replicated`` once serve
    every later placement that replicates B, and A's over ``local:1`` the placement that moves A so with
    B. Every Estimate is still that placement's own run's."""
    from triton_plate_backend.sim import dma
    from triton_plate_backend.sim import estimate as est_mod

    dev = get_device()
    program, args, grid, a, b, c = _matmul_512()
    placements = [None, {"a_ptr": "local:1"}, {"b_ptr": "replicated"}, {"a_ptr": "local:1", "b_ptr": "replicated"},
                  {"a_ptr": "replicated", "b_ptr": "replicated"}]  # fmt: skip
    alone = [est_mod.estimate_launch(program, grid, list(args), dev.memory, placement=p) for p in placements]
    counted, traffic = [], dma.Access.traffic
    tensor_of = {dev.memory.holding(t.data_ptr()).base: name for name, t in (("a", a), ("b", b), ("c", c))}

    def counting(access, mem):
        moved = {tensor_of.get(r.base) for r in mem.allocations if r.base < access.hi and access.lo < r.end}
        counted[-1].update(moved - {None})
        return traffic(access, mem)

    monkeypatch.setattr(dma.Access, "traffic", counting)
    shared = []
    with est_mod.shared_estimates():
        for p in placements:
            counted.append(set())
            shared.append(est_mod.estimate_launch(program, grid, list(args), dev.memory, placement=p))
    assert counted == [set(), {"a"}, {"b"}, set(), {"a"}]  # A on domain 1 and B replicated: counted before
    for x, y in zip(alone, shared):
        assert (x.time_ns, x.bound, x.read_bytes.tobytes(), x.write_bytes.tobytes()) == (
            y.time_ns, y.bound, y.read_bytes.tobytes(), y.write_bytes.tobytes()
        )  # fmt: skip
    assert len({e.read_bytes.tobytes() for e in alone}) > 2  # the placements do read other homes


def test_an_access_too_large_to_keep_keeps_its_span(monkeypatch):
    """An element access whose addresses are past what a logged run keeps (``dma.ACCESS_BYTES``) keeps
    its span alone: a placement that moves none of it is still re-priced from the one run, one that
    moves it runs its own; both the Estimate of that placement's own run."""
    from triton_plate_backend.sim import dma
    from triton_plate_backend.sim import estimate as est_mod

    monkeypatch.setattr(dma, "ACCESS_BYTES", 1024)  # the scatter's 16 x 1024 addresses: 8 KiB per program
    runs, real_run = [], est_mod._address_run
    monkeypatch.setattr(est_mod, "_address_run", lambda *a, **kw: runs.append(1) or real_run(*a, **kw))
    dev = get_device()
    x = torch.randn(1 << 14).to("plate")
    out = torch.empty(1 << 14, device="plate")
    program, args = _program_and_args(_scatter_kernel, (16, 1, 1), x, out, 1 << 14, BLOCK=1024)
    placements = [None, {"x_ptr": "interleaved"}, {"out_ptr": "interleaved"}]
    alone = [est_mod.estimate_launch(program, (16, 1, 1), list(args), dev.memory, placement=p) for p in placements]
    del runs[:]
    shared = []
    with est_mod.shared_estimates():
        for p in placements:
            shared.append(est_mod.estimate_launch(program, (16, 1, 1), list(args), dev.memory, placement=p))
            runs.append(p)
    assert runs == [1, None, {"x_ptr": "interleaved"}, 1, {"out_ptr": "interleaved"}]
    for a, b in zip(alone, shared):
        assert (a.time_ns, a.read_bytes.tobytes(), a.write_bytes.tobytes()) == (
            b.time_ns, b.read_bytes.tobytes(), b.write_bytes.tobytes()
        )  # fmt: skip


def test_a_kept_launch_run_is_not_used_once_memory_or_the_launch_changed(monkeypatch):
    """The run kept inside ``shared_estimates`` answers only the same launch (program, grid, arguments)
    over the same allocations and placements: another grid or another argument runs again, and so does
    an operand migrated to a layout no estimate priced; one migrated to a layout a placement priced
    (what the operand planner's launch does) takes that placement's trace, the trace of its own run."""
    from triton_plate_backend.sim import estimate as est_mod

    runs = []
    real_run = est_mod._address_run
    monkeypatch.setattr(est_mod, "_address_run", lambda *a, **kw: runs.append(1) or real_run(*a, **kw))
    n = 1 << 16
    x, y, out = (torch.randn(n).to("plate") for _ in range(3))
    dev = get_device()
    program, args = _program_and_args(add_kernel, (16, 1, 1), x, y, out, n, BLOCK=4096)

    def ask(grid=(16, 1, 1), args=args, placement=None):
        return est_mod.estimate_launch(program, grid, list(args), dev.memory, placement=placement)

    def own_run():
        return est_mod.address_trace(program, (16, 1, 1), list(args), dev.memory)

    with est_mod.shared_estimates():
        ask()
        ask(placement={"x_ptr": "interleaved"})
        assert len(runs) == 1
        ask(grid=(8, 1, 1))
        assert len(runs) == 2
        ask(args=[*args[:3], n // 2, *args[4:]])
        assert len(runs) == 3
        dev.memory.migrate(x.data_ptr(), "interleaved")
        moved = ask()
        kept = est_mod.kept_address_trace(program, (16, 1, 1), list(args), dev.memory, dev.machine)
        assert len(runs) == 3  # the placement priced above
        assert kept.digest() == own_run().digest()
        dev.memory.migrate(x.data_ptr(), "local:1")
        assert ask() is not moved and len(runs) == 5  # (own_run ran once)
        assert ask(placement={"x_ptr": "interleaved"}) is not moved and len(runs) == 5  # re-priced from the new run
    fresh = est_mod._estimate_launch(program, (16, 1, 1), list(args), dev.memory)
    dev.memory.migrate(x.data_ptr(), "interleaved")
    fresh_moved = est_mod._estimate_launch(program, (16, 1, 1), list(args), dev.memory)
    assert moved.time_ns == fresh_moved.time_ns and moved.read_bytes.tobytes() == fresh_moved.read_bytes.tobytes()
    assert fresh.read_bytes.tobytes() != fresh_moved.read_bytes.tobytes()  # the layouts do price differently
