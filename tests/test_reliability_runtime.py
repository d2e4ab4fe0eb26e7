"""A runtime that recovers: runaway kernels stop early and say where they loop (PLATE_MAX_STEPS sets the
budget), Ctrl-C still interrupts a launch, a failed launch leaves nothing behind, and a corrupt binary in
Triton's cache is recompiled with one warning."""

from __future__ import annotations

import _thread
import gc
import inspect
import os
import re
import signal
import threading
import warnings

import pytest
import torch
import triton
import triton.language as tl

import triton_plate_backend.torch_device  # noqa: F401 - registers the plate device
from triton_plate_backend.binary_cache import CorruptCacheError, CorruptCacheWarning
from triton_plate_backend.errors import MemoryFault, SimulatorError
from triton_plate_backend.knobs import KnobError
from triton_plate_backend.sim import estimate, operands, runaway
from triton_plate_backend.sim.device import get_device

FIRST_WINDOW_END = runaway.WATCH_FIRST + runaway.WATCH_STEPS  # a budget only the detector beats


@pytest.fixture(scope="module", autouse=True)
def _mini(plate_mini_module):
    return plate_mini_module


@triton.jit
def take_lock(lock_ptr):
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass


@triton.jit
def wait_for_flag(flag_ptr):
    while tl.load(flag_ptr, volatile=True) == 0:
        pass


@triton.jit
def count_up(out_ptr, step):
    i = 0
    while i >= 0:  # endless for step 1 in practice (2**31 turns), and its state changes every turn
        i += step
    tl.store(out_ptr, i)


@triton.jit
def copy(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)


def loop_line(kernel) -> str:
    """'file:line' of the kernel's while statement, the file by name only: Triton's cache key leaves out the
    source path, so a kernel compiled in another checkout of the same file keeps that checkout's path."""
    lines, first = inspect.getsourcelines(kernel.fn)
    n = next(i for i, text in enumerate(lines) if text.strip().startswith("while"))
    return f"{os.path.basename(inspect.getsourcefile(kernel.fn))}:{first + n}"


# ---- runaway kernels ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("kernel", "value"), [(take_lock, 1), (wait_for_flag, 0)])
def test_an_endless_spin_stops_early_naming_the_kernel_and_the_loop(monkeypatch, kernel, value):
    monkeypatch.setenv("PLATE_MAX_STEPS", str(FIRST_WINDOW_END))
    word = torch.full((1,), value, dtype=torch.int32, device="plate")
    with pytest.raises(SimulatorError, match="is in an endless loop") as err:
        kernel[(64,)](word)
    text = str(err.value)
    assert f"kernel '{kernel.fn.__name__}'" in text
    assert re.search(rf"the loop at \S*/{re.escape(loop_line(kernel))}:", text)
    assert f"PLATE_MAX_STEPS={FIRST_WINDOW_END}" in text
    assert word.item() == value


def test_plate_max_steps_sets_the_budget_and_the_error_says_how_to_raise_it(monkeypatch):
    # 64 words, of which the one program stores one: no operand spans domains, so the launch runs no
    # operand-placement estimate first (that one runs a runaway kernel to the default budget, 10**7 steps)
    out = torch.zeros(64, dtype=torch.int32, device="plate")
    monkeypatch.setenv("PLATE_MAX_STEPS", "3000")
    with pytest.raises(SimulatorError, match="did not finish within 3000 instruction steps") as err:
        count_up[(1,)](out, 1)
    text = str(err.value)
    assert "kernel 'count_up'" in text and re.search(rf"the loop at \S*/{re.escape(loop_line(count_up))}:", text)
    assert "PLATE_MAX_STEPS=30000" in text
    monkeypatch.setenv("PLATE_MAX_STEPS", "a lot")
    with pytest.raises(KnobError, match="PLATE_MAX_STEPS='a lot': expected a positive integer"):
        count_up[(1,)](out, 1)


def test_the_operand_planners_run_keeps_the_launchs_step_budget(monkeypatch):
    # two programs store to one word (a shared operand), so the launch first estimates its operands' placement
    # with an address-only run (one program over small tensors would be decided unpriced: sim/operands.py
    # _one_home), which must stop at PLATE_MAX_STEPS too, not run the runaway to the default 10**7 steps. Priced
    # here: its word sits in domain 0 with both programs, which _replicas_change_nothing would decide unpriced
    monkeypatch.setattr(operands, "_replicas_change_nothing", lambda *a: False)
    budgets = []
    real = estimate.execute

    def spy(*args, **kwargs):
        budgets.append(kwargs.get("max_steps"))
        return real(*args, **kwargs)

    monkeypatch.setattr(estimate, "execute", spy)
    monkeypatch.setenv("PLATE_MAX_STEPS", "3000")
    out = torch.zeros(1, dtype=torch.int32, device="plate")
    with pytest.raises(SimulatorError, match="did not finish within 3000 instruction steps"):
        count_up[(2,)](out, 1)
    assert budgets and set(budgets) == {3000}


def test_ctrl_c_interrupts_a_launch_and_the_device_stays_usable():
    device = get_device()
    out = torch.zeros(1, dtype=torch.int32, device="plate")
    gc.collect()  # what earlier tests' tracebacks held
    launches, allocated = device.launches, torch.plate.memory_allocated()
    # SIGINT's effect, KeyboardInterrupt in the main thread, every 0.5 s until the launch gives up: one that lands
    # in a __del__ or a gc callback (hypothesis installs one) is swallowed as "unraisable", so the next must land.
    # The kernel's step budget (a minute of simulation) is what ends it if none ever does.
    stop = threading.Event()

    def interrupt_until_stopped():
        while not stop.wait(0.5):
            _thread.interrupt_main()

    interrupter = threading.Thread(target=interrupt_until_stopped)
    # Python's own Ctrl-C handler: a process started as a script's background job inherits SIGINT ignored, and
    # interrupt_main() then does nothing (the launch ran into its step budget under a nohup'd .ci/run).
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    callbacks, gc.callbacks[:] = gc.callbacks[:], []
    gc.disable()
    interrupter.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            count_up[(1,)](out, 1)
    finally:
        while True:  # an interrupt already sent when the launch ended lands here, not in the asserts below
            try:
                stop.set()
                interrupter.join()
                gc.enable()
                gc.callbacks[:] = callbacks
                signal.signal(signal.SIGINT, handler)
                break
            except KeyboardInterrupt:
                continue
    assert device.launches == launches and torch.plate.memory_allocated() == allocated
    src, dst = torch.arange(100.0, device="plate"), torch.zeros(100, device="plate")
    copy[(1,)](src, dst, 100, BLOCK=128)
    assert torch.equal(dst.cpu(), torch.arange(100.0))


def test_a_failed_launch_leaves_no_allocation_or_queued_work():
    device = get_device()
    src, dst = torch.arange(100.0, device="plate"), torch.zeros(100, device="plate")
    copy[(1,)](src, dst, 100, BLOCK=128)
    profile, clock, launches = torch.plate.last_profile(), device.clock_ns, device.launches
    allocations = len(device.memory.allocations)
    with pytest.raises(MemoryFault):
        copy[(4,)](src, dst, 500, BLOCK=128)  # past the end of both tensors
    assert len(device.memory.allocations) == allocations
    assert device.launches == launches and device.clock_ns == clock and torch.plate.last_profile() is profile


# ---- corrupt cache entries ----------------------------------------------------------------------------
def make_double():
    """A new JITFunction each call: it has no compiled kernel in memory, so it reads Triton's cache."""

    @triton.jit
    def double_it(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

    return double_it


def run_double():
    x = torch.arange(64.0, device="plate")
    make_double()[(1,)](x, 64, BLOCK=64)
    assert torch.equal(x.cpu(), torch.arange(64.0) * 2)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    run_double()  # compiles into the empty cache
    (binary,) = tmp_path.glob("*/double_it.pbin")
    return binary


CORRUPTIONS = {
    "truncated": lambda data: data[: len(data) // 2],
    "garbled": lambda data: data[:40] + bytes(b ^ 0x5A for b in data[40:80]) + data[80:],
    "empty": lambda data: b"",
}


@pytest.mark.parametrize("corrupt", list(CORRUPTIONS))
def test_a_corrupt_cached_binary_is_recompiled_with_one_warning(cache, corrupt):
    good = cache.read_bytes()
    cache.write_bytes(CORRUPTIONS[corrupt](good))
    with pytest.warns(CorruptCacheWarning) as caught:
        run_double()
    assert len(caught) == 1
    text = str(caught[0].message)
    assert "kernel double_it" in text and str(cache) in text and "corrupt" in text
    assert cache.read_bytes() == good  # rewritten in place: later processes load a good binary
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run_double()


def test_a_corrupt_binary_that_cannot_be_rebuilt_names_the_file_and_leaves_the_cache_clean(cache):
    cache.write_bytes(b"PLATEBIN garbage")
    (cache.parent / "double_it.ttir").unlink()
    with pytest.warns(CorruptCacheWarning), pytest.raises(CorruptCacheError) as err:
        run_double()
    assert "kernel double_it" in str(err.value) and str(cache) in str(err.value)
    assert not cache.parent.exists()
    run_double()  # compiles again from the source
