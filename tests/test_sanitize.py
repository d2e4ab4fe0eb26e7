"""PLATE_SANITIZE: the race detector and the uninitialised-read detector (sim/sanitizer.py)."""

from __future__ import annotations

import importlib.util
import os
import sys

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

import triton_plate_backend.torch_device  # noqa: F401  (registers the plate device)
from triton_plate_backend import knobs
from triton_plate_backend.errors import PlateError, SanitizerError
from triton_plate_backend.knobs import KnobError
from triton_plate_backend.sim import device as sim_device
from triton_plate_backend.sim.memory import POISON, DeviceMemory

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
THIS = os.path.basename(__file__)


@pytest.fixture
def sanitize(monkeypatch):
    """Set PLATE_SANITIZE for the test (on the plate-mini machine, a fresh device)."""
    monkeypatch.setenv("TRITON_DEFAULT_BACKEND", "plate")
    monkeypatch.setenv("PLATE_MACHINE", "plate-mini")
    monkeypatch.delenv("PLATE_HOST_MEMORY", raising=False)
    sim_device.reset_device(0)

    def set_modes(modes: str):
        monkeypatch.setenv("PLATE_SANITIZE", modes)

    yield set_modes
    monkeypatch.delenv("PLATE_SANITIZE", raising=False)
    sim_device.reset_device(0)


def _line_of(fn, text: str) -> str:
    """'test_sanitize.py:N' of the first line of ``fn``'s source containing ``text``."""
    import inspect

    lines, first = inspect.getsourcelines(fn.fn)
    for i, line in enumerate(lines):
        if text in line:
            return f"{THIS}:{first + i}"
    raise AssertionError(f"{text!r} not in {fn}")


@triton.jit
def store_pid_kernel(out_ptr):
    pid = tl.program_id(0)
    tl.store(out_ptr, pid)


@triton.jit
def read_neighbour_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, offs.to(tl.float32))
    nxt = (pid + 1) % tl.num_programs(0)
    v = tl.load(x_ptr + nxt * BLOCK + tl.arange(0, BLOCK))
    tl.store(y_ptr + offs, v)


@triton.jit
def atomic_count_kernel(out_ptr):
    tl.atomic_add(out_ptr, 1)


@triton.jit
def scale_in_place_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(x_ptr + offs, x * 2, mask=m)
    y = tl.load(x_ptr + offs, mask=m)
    tl.store(x_ptr + offs, y + 1, mask=m)


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)


@triton.jit
def locked_sum_kernel(lock_ptr, acc_ptr, peek_ptr, PEEK: tl.constexpr):
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    tl.store(acc_ptr, tl.load(acc_ptr) + 1)
    tl.atomic_xchg(lock_ptr, 0)
    if PEEK:
        tl.store(peek_ptr + tl.program_id(0), tl.load(acc_ptr))  # outside the lock


@triton.jit
def masked_whole_row_kernel(x_ptr, N: tl.constexpr, BLOCK: tl.constexpr):
    ar = tl.arange(0, N)
    mine = (ar // BLOCK) == tl.program_id(0)  # every lane points into x; only this program's block is on
    x = tl.load(x_ptr + ar, mask=mine)
    tl.store(x_ptr + ar, x + 1, mask=mine)


@triton.jit
def count_then_read_kernel(count_ptr, out_ptr, ATOMIC_READ: tl.constexpr):
    tl.atomic_add(count_ptr, 1)
    if ATOMIC_READ:
        seen = tl.atomic_add(count_ptr, 0)
    else:
        seen = tl.load(count_ptr)
    tl.store(out_ptr + tl.program_id(0), seen)


@triton.jit
def write_word_read_byte_kernel(words_ptr, bytes_ptr, out_ptr):
    if tl.program_id(0) == 0:
        tl.store(words_ptr, 0x01020304)
    else:
        tl.store(out_ptr, tl.load(bytes_ptr + 2))


# ---- the knob ------------------------------------------------------------------------------------------
def test_knob_parses_modes(monkeypatch):
    monkeypatch.delenv("PLATE_SANITIZE", raising=False)
    assert knobs.sanitize() == frozenset()
    monkeypatch.setenv("PLATE_SANITIZE", " init , race")
    assert knobs.sanitize() == {"race", "init"}
    monkeypatch.setenv("PLATE_SANITIZE", "race,memcheck")
    with pytest.raises(KnobError, match="unknown mode.*memcheck.*race, init"):
        knobs.sanitize()


# ---- race -----------------------------------------------------------------------------------------------
def test_every_program_storing_to_out0_is_a_race(sanitize):
    sanitize("race")
    out = torch.zeros(4, dtype=torch.int32, device="plate")
    with pytest.raises(SanitizerError) as err:
        store_pid_kernel[(4,)](out)
    text = str(err.value)
    assert isinstance(err.value, PlateError)
    line = _line_of(store_pid_kernel, "tl.store(out_ptr, pid)")
    assert "race: write/write conflict on 4 byte(s)" in text
    assert f"at {out.data_ptr():#x}" in text and "argument 'out_ptr' + 0 bytes" in text
    assert text.count(line) == 2  # both accesses' source line
    assert "program (0, 0, 0) (id 0)" in text and "program (3, 0, 0) (id 3)" in text  # lowest, highest
    (f,) = err.value.findings
    assert f.kind == "race" and f.addr == out.data_ptr() and {p for _, p, _ in f.accesses} == {0, 3}
    # the launch ran: the memory holds what the simulator's order left
    assert out.cpu().tolist()[0] == 3


def test_read_after_write_between_programs(sanitize):
    sanitize("race")
    x = torch.zeros(64, device="plate")
    y = torch.zeros(64, device="plate")
    with pytest.raises(SanitizerError) as err:
        read_neighbour_kernel[(4,)](x, y, BLOCK=16)
    text = str(err.value)
    assert "race: write/read conflict" in text
    assert _line_of(read_neighbour_kernel, "tl.store(x_ptr + offs") in text
    assert _line_of(read_neighbour_kernel, "v = tl.load(") in text
    assert "argument 'x_ptr'" in text
    kinds = {tuple(k for _, _, k in f.accesses) for f in err.value.findings}
    assert kinds == {("write", "read")}
    assert sum(f.count for f in err.value.findings) == 64  # every element of x


def test_no_race_for_atomics_disjoint_writes_and_own_data(sanitize):
    sanitize("race")
    count = torch.zeros(1, dtype=torch.int32, device="plate")
    atomic_count_kernel[(8,)](count)
    assert count.item() == 8
    x = torch.arange(100, dtype=torch.float32, device="plate")
    scale_in_place_kernel[(4,)](x, 100, BLOCK=32)  # each program re-reads and re-writes its own block
    torch.testing.assert_close(x.cpu(), torch.arange(100, dtype=torch.float32) * 2 + 1)
    y = torch.empty(100, device="plate")
    copy_kernel[(4,)](x, y, 100, BLOCK=32)  # disjoint writes, masked-off lanes out of range


def test_plain_read_of_an_atomic_counter_races(sanitize):
    sanitize("race")
    count = torch.zeros(1, dtype=torch.int32, device="plate")
    out = torch.zeros(4, dtype=torch.int32, device="plate")
    count_then_read_kernel[(4,)](count, out, ATOMIC_READ=True)  # atomics against atomics
    with pytest.raises(SanitizerError) as err:
        count_then_read_kernel[(4,)](count, out, ATOMIC_READ=False)
    (f,) = err.value.findings
    assert [k for _, _, k in f.accesses] == ["atomic", "read"] and "race: atomic/read conflict" in f.text
    assert _line_of(count_then_read_kernel, "seen = tl.load(count_ptr)") in f.text


def test_critical_sections_of_one_lock_do_not_race(sanitize):
    sanitize("race")
    lock = torch.zeros(1, dtype=torch.int32, device="plate")
    acc = torch.zeros(1, dtype=torch.int32, device="plate")
    peek = torch.zeros(4, dtype=torch.int32, device="plate")
    locked_sum_kernel[(4,)](lock, acc, peek, PEEK=False)
    assert acc.item() == 4
    with pytest.raises(SanitizerError) as err:  # a read outside the lock races with the writes inside it
        locked_sum_kernel[(4,)](lock, acc, peek, PEEK=True)
    (f,) = err.value.findings
    assert [k for _, _, k in f.accesses] == ["write", "read"] and "argument 'acc_ptr'" in f.text
    assert _line_of(locked_sum_kernel, "tl.store(peek_ptr") in f.text


def test_accesses_of_different_sizes_overlap(sanitize):
    sanitize("race")
    words = torch.zeros(4, dtype=torch.int32, device="plate")
    out = torch.zeros(1, dtype=torch.uint8, device="plate")
    with pytest.raises(SanitizerError) as err:
        write_word_read_byte_kernel[(2,)](words, words.view(torch.uint8), out)
    (f,) = err.value.findings
    assert f.addr == words.data_ptr() + 2 and f.size == 1 and "argument 'words_ptr' + 2 bytes" in f.text


def test_compaction_keeps_the_findings(sanitize, monkeypatch):
    from triton_plate_backend.sim import sanitizer

    sanitize("race")
    x = torch.zeros(64, device="plate")
    y = torch.zeros(64, device="plate")
    monkeypatch.setattr(sanitizer, "COMPACT_AT", 8)
    with pytest.raises(SanitizerError) as err:
        read_neighbour_kernel[(4,)](x, y, BLOCK=16)
    assert sum(f.count for f in err.value.findings) == 64


def test_masked_off_lanes_are_not_accesses(sanitize):
    sanitize("race,init")
    x = torch.zeros(64, device="plate")
    masked_whole_row_kernel[(4,)](x, N=64, BLOCK=16)
    assert (x.cpu() == 1).all()


def test_no_race_across_launches(sanitize):
    sanitize("race")
    out = torch.zeros(1, dtype=torch.int32, device="plate")
    for _ in range(2):
        store_pid_kernel[(1,)](out)  # two launches, one program each: the kernel boundary orders them


def test_off_by_default(sanitize, monkeypatch):
    monkeypatch.delenv("PLATE_SANITIZE", raising=False)
    out = torch.zeros(4, dtype=torch.int32, device="plate")
    store_pid_kernel[(4,)](out)
    assert out.cpu().tolist()[0] == 3


def _example(name):
    path = os.path.join(REPO, "examples", f"{name}.py")
    sys.path.insert(0, os.path.dirname(path))
    try:
        spec = importlib.util.spec_from_file_location(f"sanitize_example_{name}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(os.path.dirname(path))
    return module


@pytest.mark.parametrize("modes", ["race", "init", "race,init"])
def test_examples_have_no_findings(sanitize, modes):
    sanitize(modes)
    plate = torch.device("plate")
    for name, case in (("vector_add", "fp32"), ("fused_softmax", "fp32"), ("matmul", "fp16")):
        for c in _example(name).run(case, plate):
            c.assert_close()


# ---- init -----------------------------------------------------------------------------------------------
def test_load_of_torch_empty_is_reported(sanitize):
    sanitize("init")
    x = torch.empty(100, device="plate")
    y = torch.zeros(100, device="plate")
    assert np.isnan(x.cpu().numpy()).all()  # the poison: 0xFF bytes, NaN as floats
    with pytest.raises(SanitizerError) as err:
        copy_kernel[(4,)](x, y, 100, BLOCK=32)
    text = str(err.value)
    assert "init: read of 4 never-written byte(s)" in text
    assert "argument 'x_ptr' + 0 bytes" in text and "(100 elements from this instruction)" in text
    assert _line_of(copy_kernel, "tl.store(y_ptr + offs, tl.load(") in text
    (f,) = err.value.findings
    assert f.kind == "init" and f.addr == x.data_ptr() and f.count == 100


def test_int_poison_and_partial_write(sanitize):
    sanitize("init")
    x = torch.empty(64, dtype=torch.int32, device="plate")
    assert (x.cpu() == -1).all()  # 0xFF bytes
    x[:32] = 7  # a torch write through the CPU fallback
    y = torch.zeros(64, dtype=torch.int32, device="plate")
    with pytest.raises(SanitizerError) as err:
        copy_kernel[(2,)](x, y, 64, BLOCK=32)
    (f,) = err.value.findings
    assert f.count == 32 and f.addr == x.data_ptr() + 32 * 4
    assert "program (1, 0, 0)" in str(err.value)


@pytest.mark.parametrize("write", ["copy_", "fill_", "zero_", "index", "zeros", "randn", "full", "to", "clone"])
def test_torch_writes_initialise(sanitize, write):
    sanitize("init")
    make = {
        "zeros": lambda: torch.zeros(100, device="plate"),
        "randn": lambda: torch.randn(100, device="plate"),
        "full": lambda: torch.full((100,), -1.0, device="plate"),
        "to": lambda: torch.arange(100, dtype=torch.float32).to("plate"),
        "clone": lambda: torch.arange(100, dtype=torch.float32).to("plate").clone(),
    }
    x = make[write]() if write in make else torch.empty(100, device="plate")
    if write == "copy_":
        x.copy_(torch.arange(100, dtype=torch.float32))
    elif write == "fill_":
        x.fill_(-1.0)
    elif write == "zero_":
        x.zero_()
    elif write == "index":
        x[:] = torch.full((100,), float("nan"))  # a NaN write still counts as a write
    y = torch.empty(100, device="plate")
    copy_kernel[(4,)](x, y, 100, BLOCK=32)
    torch.testing.assert_close(y.cpu(), x.cpu(), equal_nan=True)


def test_host_writes_that_store_the_poison_bytes_count(sanitize):
    sanitize("init")
    x = torch.empty(100, dtype=torch.int32, device="plate")
    x.fill_(-1)  # exactly the poison bytes: only the torch device's report tells it from no write
    y = torch.empty(100, dtype=torch.int32, device="plate")
    copy_kernel[(4,)](x, y, 100, BLOCK=32)
    storage = torch.empty(0, dtype=torch.int32, device="plate")
    storage.set_(x.untyped_storage().clone())  # Storage copies go through the allocator's copy_data
    copy_kernel[(4,)](storage, y, 100, BLOCK=32)


def test_kernel_store_initialises_for_the_next_launch(sanitize):
    sanitize("init")
    x = torch.empty(100, dtype=torch.int32, device="plate")
    y = torch.empty(100, dtype=torch.int32, device="plate")
    src = torch.full((100,), -1, dtype=torch.int32, device="plate")  # holds the poison bytes, written by torch
    copy_kernel[(4,)](src, x, 100, BLOCK=32)
    copy_kernel[(4,)](x, y, 100, BLOCK=32)
    assert (y.cpu() == -1).all()


def test_atomic_on_uninitialised_memory_is_reported(sanitize):
    sanitize("init")
    count = torch.empty(1, dtype=torch.int32, device="plate")
    with pytest.raises(SanitizerError, match="init: atomic of 4 never-written byte"):
        atomic_count_kernel[(2,)](count)


def test_allocations_made_before_init_mode_count_as_written(sanitize):
    x = torch.empty(100, device="plate")  # sanitizer off: zero-filled, untracked
    sanitize("init")
    y = torch.empty(100, device="plate")
    copy_kernel[(4,)](x, y, 100, BLOCK=32)
    assert (y.cpu() == 0).all()


def test_plate_run_sanitize_option(monkeypatch, capsys):
    from triton_plate_backend.run_example import main

    monkeypatch.delenv("PLATE_SANITIZE", raising=False)
    assert main(["--sanitize", "race,bogus", os.path.join(REPO, "examples", "vector_add.py")]) == 2
    assert "unknown mode(s) bogus" in capsys.readouterr().err
    assert "PLATE_SANITIZE" not in os.environ  # rejected before anything ran


# ---- the memory layer -----------------------------------------------------------------------------------
def test_poisoned_alloc_and_mark_written():
    mem = DeviceMemory("plate-mini")
    a = mem.alloc(64, poison=True)
    b = mem.alloc(64)
    assert (a.view == POISON).all() and (b.view == 0).all() and b.written is None
    mem.write_bytes(a.base + 8, b"\x01\x02")
    mem.mark_written(a.base + 60, 100)  # clipped to the allocation
    assert a.written.nonzero()[0].tolist() == [8, 9, 60, 61, 62, 63]
    mem.free(a.base)
    assert a.written is None
