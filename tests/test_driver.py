"""The Triton driver: activation, target, device table, binaries, properties, modeled-time benchmarking."""

from __future__ import annotations

import os
import threading

import pytest
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget

from triton_plate_backend import driver as plate_driver
from triton_plate_backend import shims
from triton_plate_backend.driver import PlateDriver, do_bench_modeled
from triton_plate_backend.errors import PlateError
from triton_plate_backend.sim import device as sim_device

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VEC_ADD_PASM = os.path.join(REPO, "examples", "asm", "vec_add.pasm")


@pytest.fixture
def mini(monkeypatch):
    """A fresh plate-mini device 0."""
    monkeypatch.setenv("PLATE_MACHINE", "plate-mini")
    sim_device.reset_device(0)
    yield sim_device.get_device(0)
    sim_device.reset_device(0)


@pytest.fixture
def active(mini, plate_active_driver):
    """PlateDriver as Triton's active driver on the plate-mini machine (conftest's plate_active_driver)."""
    return plate_active_driver


def _advance(dev, ns):
    def fn():
        with dev._lock:
            dev.clock_ns += ns

    return fn


def _vec_add_binary():
    from triton_plate_backend.isa.asm import assemble
    from triton_plate_backend.isa.encoding import encode

    with open(VEC_ADD_PASM) as f:
        return encode(assemble(f.read()))


# ---- activation and target ---------------------------------------------------------------------
def test_is_active(monkeypatch):
    monkeypatch.setenv("TRITON_DEFAULT_BACKEND", "plate")
    assert PlateDriver.is_active()
    monkeypatch.setenv("TRITON_DEFAULT_BACKEND", "nvidia")
    assert not PlateDriver.is_active()
    monkeypatch.delenv("TRITON_DEFAULT_BACKEND")
    monkeypatch.setattr(plate_driver, "_gpu_usable", lambda: True)
    assert not PlateDriver.is_active()  # never a second active driver on a GPU machine
    monkeypatch.setattr(plate_driver, "_gpu_usable", lambda: False)
    assert PlateDriver.is_active()


def test_gpu_check_on_this_machine():
    import torch

    assert plate_driver._gpu_usable() == torch.cuda.is_available()


def test_target_and_basic_queries(mini):
    d = PlateDriver()
    assert d.get_current_target() == GPUTarget("plate", 1, 32)
    assert d.get_current_device() == 0 and d.get_current_stream(0) == 0
    d.set_current_device(0)
    with pytest.raises(PlateError, match="no plate device 1"):
        d.set_current_device(1)
    assert d.map_python_to_cpp_type("*fp32") == "uint64_t"
    assert d.map_python_to_cpp_type("i32") == "int32_t" and d.map_python_to_cpp_type("fp16") == "double"
    with pytest.raises(PlateError, match="no C\\+\\+ type"):
        d.map_python_to_cpp_type("nvTmaDesc")
    import torch

    # the plate torch device once PrivateUse1 is renamed (the torch device registered), else cpu
    renamed = torch._C._get_privateuse1_backend_name() == "plate"
    assert d.get_active_torch_device().type == ("plate" if renamed else "cpu")
    assert d.launcher_cls.__name__ == "PlateLauncher"
    assert d.get_benchmarker() is do_bench_modeled
    d.clear_cache(d.get_empty_cache_for_benchmark())


def test_current_device_is_per_thread(mini):
    seen = []
    t = threading.Thread(target=lambda: seen.append(sim_device.current_device()))
    t.start()
    t.join()
    assert seen == [0]
    assert sim_device.get_device() is sim_device.get_device(0) is mini
    assert sim_device.device_count() == 1


def test_device_properties_follow_the_machine(mini, active):
    m = mini.machine
    props = PlateDriver().utils.get_device_properties(0)
    assert props["max_shared_mem"] == m.core.sram_bytes
    assert props["multiprocessor_count"] == m.total_cores == 8
    assert props["warpSize"] == 32 and props["machine"] == "plate-mini"
    # triton.testing's DRAM bandwidth formula gives the machine's HBM bandwidth
    gbps = triton.testing.get_dram_gbps(0)
    assert gbps == pytest.approx(m.hbm_bytes_per_cycle_chip() * m.clock_ghz)


def test_machine_comes_from_the_knob(monkeypatch):
    monkeypatch.setenv("PLATE_MACHINE", "plate4")
    sim_device.reset_device(0)
    try:
        assert sim_device.get_device(0).machine.name == "plate4"
    finally:
        sim_device.reset_device(0)


# ---- load_binary ------------------------------------------------------------------------------------
def test_load_binary_decodes_the_pbin(mini):
    utils = PlateDriver().utils
    module, function, n_regs, n_spills, n_max_threads = utils.load_binary("vec_add", _vec_add_binary(), 0x3000, 0)
    assert module.name == function.name == "vec_add" and function.program is module
    assert [a.name for a in module.args] == ["x", "y", "o", "n"]
    assert n_regs == 12 and n_spills == 0 and n_max_threads >= 32 * 32
    with pytest.raises(PlateError, match="holds kernel 'vec_add'"):
        utils.load_binary("other", _vec_add_binary(), 0x3000, 0)
    with pytest.raises(PlateError, match="bytes of SRAM"):
        utils.load_binary("vec_add", _vec_add_binary(), mini.machine.core.sram_bytes + 1, 0)


# ---- modeled time --------------------------------------------------------------------------------
def test_events_read_the_modeled_clock(mini, active):
    di = active.get_device_interface()
    start, end = di.Event(enable_timing=True), di.Event(enable_timing=True)
    start.record()
    _advance(mini, 2500)()
    end.record()
    di.synchronize()
    assert start.elapsed_time(end) == pytest.approx(0.0025)
    assert di.current_device() == 0
    with pytest.raises(PlateError, match="recorded"):
        di.Event().elapsed_time(end)


def test_benchmarker_returns_modeled_ms(mini, monkeypatch):
    calls = []
    fn = _advance(mini, 1500)
    assert do_bench_modeled(lambda: (calls.append(1), fn())) == pytest.approx(0.0015)
    assert len(calls) == 1 + 2  # one untimed run, timed ones until two in a row agree
    monkeypatch.setenv("PLATE_BENCH_REPS", "5")
    med, lo, hi = do_bench_modeled(fn, quantiles=(0.5, 0.2, 0.8))
    assert med == lo == hi == pytest.approx(0.0015)
    assert do_bench_modeled(fn, return_mode="all") == pytest.approx([0.0015] * 5)


def test_benchmarker_runs_on_until_two_runs_in_a_row_agree(mini, monkeypatch):
    """A run whose modeled time differs from the one before (a first launch that moved its operands, a
    data-dependent kernel) keeps the benchmarker going, up to PLATE_BENCH_REPS timed runs."""
    steps = iter([3000, 1000, 2000, 2000, 2000, 2000, 5000, 4000, 6000, 7000])
    calls = []

    def fn():
        calls.append(1)
        _advance(mini, next(steps))()

    monkeypatch.setenv("PLATE_BENCH_REPS", "5")
    # untimed 3000, then timed 1000, 2000, 2000: steady at the third timed run
    assert do_bench_modeled(fn, return_mode="min") == pytest.approx(0.001)
    assert len(calls) == 1 + 3
    # untimed 2000, then timed 2000, 5000, 4000, 6000, 7000: never two equal in a row, all five run
    assert do_bench_modeled(fn, return_mode="max") == pytest.approx(0.007)
    assert len(calls) == 4 + 1 + 5


def test_tritons_do_bench_measures_modeled_time(mini, active):
    # triton.testing.do_bench itself, through get_device_interface(): modeled ms, not wall time
    ms = triton.testing.do_bench(_advance(mini, 40_000), warmup=0.1, rep=0.5)
    assert ms == pytest.approx(0.04)


def test_do_bench_hands_its_loop_to_the_benchmarker(mini, active, monkeypatch):
    """Building plate's driver installs the do_bench patch (shims, its "driver" group): a library's direct
    do_bench(fn, rep=100) times a few runs on the modeled clock instead of filling 100 modeled ms."""
    active.get_benchmarker()  # the driver is built
    assert getattr(triton.testing.do_bench, "_plate_shim", False)
    assert shims._do_bench_on_modeled_clock() is False  # idempotent
    assert shims.STATUS["triton.testing.do_bench asks a modeled-clock driver"] == "applied"
    runs = []
    fn = _advance(mini, 2000)
    ms = triton.testing.do_bench(lambda: (runs.append(1), fn()), warmup=25, rep=100)
    assert ms == pytest.approx(0.002)
    assert len(runs) == 1 + 2  # one untimed run, timed ones until two in a row agree (not 50000)


# ---- with the simulator: real launches ----------------------------------------------------------------
@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def test_do_bench_on_a_kernel(active):
    import torch

    x = torch.randn(4096)
    out = torch.empty_like(x)
    ms = triton.testing.do_bench(lambda: copy_kernel[(4,)](x, out, x.numel(), BLOCK=1024), warmup=0.01, rep=0.05)
    assert torch.equal(out, x)
    assert ms > 0
    profile = triton_plate_backend_last_profile()
    assert ms == pytest.approx(profile.time_ns / 1e6)


def triton_plate_backend_last_profile():
    import triton_plate_backend

    return triton_plate_backend.last_profile()


def test_autotune_picks_by_modeled_time(active):
    import torch

    configs = [triton.Config({"BLOCK": b}) for b in (32, 256, 1024)]
    timings = {}

    @triton.autotune(configs=configs, key=["n"])
    @triton.jit
    def tuned_copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)

    x = torch.randn(8192)
    out = torch.empty_like(x)
    tuned_copy[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, out, x.numel())
    assert torch.equal(out, x)
    timings = {cfg.kwargs["BLOCK"]: t[0] for cfg, t in tuned_copy.configs_timings.items()}
    assert all(t > 0 for t in timings.values()) and len(timings) == 3
    assert tuned_copy.best_config.kwargs["BLOCK"] == min(timings, key=timings.get)


# ---- knobs ---------------------------------------------------------------------------------------
def test_knobs_are_typed_and_documented(monkeypatch):
    from triton_plate_backend import knobs

    assert set(knobs.KNOBS) >= {"PLATE_MACHINE", "PLATE_TRACE", "PLATE_HOST_MEMORY", "PLATE_POLICY", "PLATE_DUMP_DIR"}
    for name in knobs.KNOBS:
        monkeypatch.delenv(name, raising=False)
    assert (knobs.machine(), knobs.trace(), knobs.host_memory(), knobs.policy(), knobs.dump_dir()) == (
        "plate1",
        None,
        False,
        "affinity",
        None,
    )
    monkeypatch.setenv("PLATE_HOST_MEMORY", "yes")
    assert knobs.host_memory() is True
    monkeypatch.setenv("PLATE_HOST_MEMORY", "maybe")
    with pytest.raises(ValueError, match="PLATE_HOST_MEMORY='maybe': expected 1 or 0"):
        knobs.host_memory()
    monkeypatch.setenv("PLATE_BENCH_REPS", "0")
    with pytest.raises(PlateError, match="positive integer"):
        knobs.bench_reps()
    assert all(name in knobs.describe() for name in knobs.KNOBS)


def test_registers_used_is_one_past_the_highest_register_any_instruction_names():
    """driver._registers_used over an instruction of every ISA row (its own test file is the unit tier's,
    which runs without Triton: tests/unit/test_sim_data_flow.py builds the same instructions)."""
    from triton_plate_backend.driver import _registers_used
    from triton_plate_backend.isa.program import Inst, Program
    from triton_plate_backend.isa.table import ISA
    from triton_plate_backend.sim.data_flow import _regs

    def _inst(row) -> Inst:  # every operand a distinct value (a register list: two registers)
        ops = [(2 * k + 1, 2 * k + 2) if od.kind == "rlist" else k + 1 for k, od in enumerate(row.operands)]
        return Inst(row.mnemonic, operands=tuple(ops))

    instrs = [_inst(row) for row in ISA.values()]
    named = [r for inst in instrs for r in _regs(inst, ("use", "def", "inout"))]
    assert _registers_used(Program("k", instrs=instrs)) == max(named) + 1
    for inst in instrs:
        regs = _regs(inst, ("use", "def", "inout"))
        assert _registers_used(Program("k", instrs=[inst])) == (max(regs) + 1 if regs else 1)
    assert _registers_used(Program("k")) == 1


def test_registers_used_is_kept_per_program_until_its_instructions_change(monkeypatch):
    """load_binary counts a program's registers once (encoding.load hands back the program it decoded before,
    for each new definition of a kernel); a program whose instructions change is counted again."""
    from triton_plate_backend import driver
    from triton_plate_backend.isa.program import Inst, Program

    counted = []
    named = driver._registers_named
    monkeypatch.setattr(driver, "_registers_named", lambda instrs: counted.append(len(instrs)) or named(instrs))
    program = Program("k", instrs=[Inst("s.li", (), (3, 0))])
    assert driver._registers_used(program) == driver._registers_used(program) == 4
    assert counted == [1]
    program.instrs.append(Inst("s.li", (), (9, 0)))  # in place: the same list, one more instruction
    assert driver._registers_used(program) == 10
    program.instrs[1] = Inst("s.li", (), (5, 0))  # replaced: the same length
    assert driver._registers_used(program) == 6
    assert counted == [1, 2, 2]
