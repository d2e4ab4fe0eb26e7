"""Suite-wide checks.

Two tiers: tests/unit/ (ir, isa, machine, cost model, sim, passes on hand-built or parsed IR) runs
with neither torch nor triton importable (test_unit_tier.py checks so); every other test may
compile kernels. For those, every kernel the suite compiles for plate has its TTIR cross-checked
against Triton's own parser (tests/ttir_oracle.py): op names and operand/result types in walk
order must agree with plate's parser before the pir stage runs; and its pir and pasm texts must
read back to what the compile made of them (tests/stage_roundtrip.py)."""

import pathlib
import sys

import pytest

UNIT_TIER = pathlib.Path(__file__).resolve().parent / "unit"

# Files whose tests run first, in this order (the rest keep pytest's order). Counting tests collect
# garbage, and a full collection scans everything the tests before it on the worker keep alive: seconds
# each late in a run. The long ones next, so that no worker is left with one at the end (xdist hands out
# tests in this order).
RUN_FIRST = (
    "test_reliability_memory.py",
    "test_replicated.py",
    "test_torch_device.py",
    "test_codegen_memory.py",
    "test_unit_tier.py",
    "test_models.py",
)


# test_unit_tier.py runs the whole unit tier in a subprocess that refuses torch and triton; where that test is
# in the session, the unit tier's tests are left to it rather than run a second time here (alone, as in
# ``pytest tests/unit/test_cost.py``, they run here).
UNIT_TIER_RUN = "test_unit_tier.py::test_unit_tier_passes_without_torch_and_triton"


def pytest_collection_modifyitems(config, items):
    if any(item.nodeid.endswith(UNIT_TIER_RUN) for item in items):
        run_by_the_tier_test = [item for item in items if UNIT_TIER in item.path.parents]
        if run_by_the_tier_test:
            config.hook.pytest_deselected(items=run_by_the_tier_test)
            items[:] = [item for item in items if UNIT_TIER not in item.path.parents]
    rank = {name: i for i, name in enumerate(RUN_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(RUN_FIRST)))  # stable: files keep their order


def _forget_bench_kernels() -> None:
    """The bench's kernels are module-level JITFunctions that tests launch on both machines; Triton's in-memory
    cache does not key on PLATE_MACHINE, so a binary from before a switch would be launched on the other
    machine (the launcher refuses it). Inductor's loaded modules likewise."""
    from triton.runtime.jit import JITFunction

    from triton_plate_backend.bench import kernels

    for value in vars(kernels).values():
        if isinstance(value, JITFunction):
            value.device_caches.clear()
    # Inductor's compile workers and its caches keyed by kernel source, whatever compile_workers recorded: tests
    # that monkeypatch its record (test_inductor_host_fallbacks.py) can leave it naming the new preset while the
    # pool still runs under the old one, so a switch here restarts them unconditionally
    import sys

    compile_workers = sys.modules.get("inductor_plate.compile_workers")
    if compile_workers is not None:
        with compile_workers._lock:
            compile_workers._machine = "(switching)"  # not a preset: follow_machine stops the pool
        compile_workers.follow_machine()


@pytest.fixture
def plate_active_driver(monkeypatch, tmp_path):
    """PlateDriver as Triton's active driver (the backend registered as discovery would where its entry point is
    not installed), a fresh Triton cache, CPU tensors as device memory; the driver that was active, after."""
    import triton
    from triton.backends import Backend, backends

    from triton_plate_backend.compiler import PlateBackend
    from triton_plate_backend.driver import PlateDriver

    if "plate" not in backends:
        monkeypatch.setitem(backends, "plate", Backend(PlateBackend, PlateDriver))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    monkeypatch.setenv("PLATE_HOST_MEMORY", "1")
    saved = triton.runtime.driver._active
    drv = PlateDriver()
    triton.runtime.driver.set_active(drv)
    yield drv
    triton.runtime.driver._active = saved


@pytest.fixture
def fresh_compile():
    """Each test compiles from scratch: Dynamo's caches and counters and plate's host-fallback counts reset
    before it, Dynamo's caches after it (the compile tests' modules use it: pytestmark)."""
    import torch
    from torch._dynamo.utils import counters

    import inductor_plate

    torch._dynamo.reset()
    counters.clear()
    inductor_plate.reset_host_fallbacks()
    yield
    torch._dynamo.reset()


@pytest.fixture(scope="module")
def plate_mini_module():
    """The plate-mini machine (4 domains x 2 cores) as device 0 for a whole test module."""
    from triton_plate_backend.sim import device as sim_device

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PLATE_MACHINE", "plate-mini")
        sim_device.reset_device(0)
        _forget_bench_kernels()
        yield sim_device.get_device(0)
    sim_device.reset_device(0)
    _forget_bench_kernels()


@pytest.fixture(autouse=True)
def _untimed_launches_dropped_after_each_test():
    """A launch's level-1 timing waits for a reader (sim/clock.py); the next test to read the clock would pay for
    every earlier test's launches (seconds, late in a run). Each test starts a new clock epoch instead."""
    yield
    sim_device = sys.modules.get("triton_plate_backend.sim.device")
    if sim_device is not None:
        sim_device.reset_clocks()


@pytest.fixture(autouse=True)
def _ttir_oracle_outside_the_unit_tier(request):
    """The oracle and the stage round trip for every test that may compile; the unit tier imports no compiler
    (nor triton)."""
    if UNIT_TIER not in request.path.parents:
        request.getfixturevalue("_ttir_oracle_on_every_compile")
        request.getfixturevalue("_stage_texts_round_trip_on_every_compile")


@pytest.fixture(scope="session")
def _ttir_oracle_on_every_compile():
    from ttir_oracle import compare

    from triton_plate_backend import compiler

    original = compiler.STAGES["pir"]

    def checked_pir(src, metadata, options):
        diffs = compare(str(src))
        if diffs:
            raise AssertionError(f"plate's TTIR parser disagrees with Triton's on {metadata.get('name')}: {diffs[:5]}")
        return original(src, metadata, options)

    compiler.STAGES["pir"] = checked_pir
    yield
    compiler.STAGES["pir"] = original


@pytest.fixture(scope="session")
def _stage_texts_round_trip_on_every_compile():
    from stage_roundtrip import checked_stages

    from triton_plate_backend import compiler

    with checked_stages(compiler.STAGES):
        yield


@pytest.fixture
def frozen_heap():
    """The test's cycle collections scan only the objects made after it started: the garbage earlier tests
    left is collected once, then what lives on is frozen (gc.freeze) until the test ends. Late in a
    worker's run a full collection scans everything its earlier tests keep alive: seconds each."""
    import gc

    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()


@pytest.fixture
def no_host_ops():
    """The test body runs on plate only: no eager op ran on the host through the CPU fallback."""
    import torch  # here, not at the top: most of the suite's files never touch the torch device

    torch.plate.reset_host_ops()
    yield
    assert torch.plate.host_ops() == {}
