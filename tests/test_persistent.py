"""passes/persistent.py and its launch: streaming kernels run as persistent loops over programs,
their loads pipelined across programs, with the same results as one program per grid element."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl
from codegen_kernels.dma_check import dma_violations

from triton_plate_backend.launcher import _one_each, is_persistent, persistent_grid
from triton_plate_backend.passes.persistent import GRID_ARG, ROWS_ARG


@pytest.fixture(scope="module", autouse=True)
def mini(plate_mini_module):
    return plate_mini_module


@triton.jit
def softmax_kernel(out, inp, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(inp + row * stride + cols, mask=m, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out + row * stride + cols, num / tl.sum(num, axis=0), mask=m)


@triton.jit
def scale_rows_kernel(out, inp, w, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(inp + row * stride + cols, mask=m)
    tl.store(out + row * stride + cols, x * tl.load(w + cols, mask=m), mask=m)


@triton.jit
def store_then_reload_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2, mask=m)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=m) + 1, mask=m)


@triton.jit
def ids_kernel(out, src):
    pid = tl.program_id(0)
    tl.store(out + pid, tl.load(src + pid) + pid * 1000 + tl.num_programs(0))


@triton.jit
def histogram_kernel(x, bins, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.atomic_add(bins + tl.load(x + offs, mask=m, other=0), 1, mask=m)


@pytest.mark.parametrize(
    "grid, cores, launched, rows",
    [
        ((1024, 1, 1), 32, (32, 1, 1), 32),
        ((100, 1, 1), 32, (25, 1, 1), 4),  # one wave of 25 programs of 4 rows, not 34 of 3 (two waves)
        ((5, 1, 1), 32, (5, 1, 1), 1),  # fewer programs than cores: unchanged
        ((64, 8, 1), 32, (4, 8, 1), 16),  # y programs count towards filling the cores
        ((3, 64, 1), 32, (1, 64, 1), 3),  # y alone fills the cores: x becomes one loop
    ],
)
def test_persistent_grid_fills_every_core_once(grid, cores, launched, rows):
    assert persistent_grid(grid, cores) == (launched, rows)


def test_softmax_runs_as_one_persistent_program_per_core(mini):
    rows, cols = 100, 256
    x = torch.randn(rows, cols, device="plate")
    o = torch.empty_like(x)
    k = softmax_kernel[(rows,)](o, x, x.stride(0), cols, BLOCK=cols)
    torch.testing.assert_close(o.cpu(), torch.softmax(x.cpu(), dim=1))
    pir = k.asm["pir"]
    assert f"%{ROWS_ARG}: i32, %{GRID_ARG}: i32" in pir and "plate.programs = 1" in pir
    k._init_handles()
    program = k.function.program
    assert is_persistent(program) and [a.name for a in program.args[-2:]] == [ROWS_ARG, GRID_ARG]
    assert not dma_violations(program), "the asynchronous-DMA contract holds with stores left in flight"
    cores = mini.machine.total_cores
    assert mini.last_profile.num_programs == -(-rows // -(-rows // cores))  # ceil(rows / plate_rows)


def test_loads_the_same_for_every_program_are_hoisted_out_of_the_loop(mini):
    rows, cols = 64, 128
    x, w = torch.randn(rows, cols, device="plate"), torch.randn(cols, device="plate")
    o = torch.empty_like(x)
    k = scale_rows_kernel[(rows,)](o, x, w, x.stride(0), cols, BLOCK=cols)
    torch.testing.assert_close(o.cpu(), x.cpu() * w.cpu())
    pir = k.asm["pir"]
    loop = pir.index('"scf.for"')
    loads = [i for i in range(len(pir)) if pir.startswith('"tt.load"', i)]
    assert len(loads) == 2 and loads[0] < loop < loads[1]  # w before the loop, the row inside it


def test_a_load_after_the_programs_own_store_sees_it(mini):
    x = torch.arange(100, dtype=torch.float32, device="plate")
    store_then_reload_kernel[(4,)](x, 100, BLOCK=32)
    assert x.cpu().tolist() == [2.0 * i + 1 for i in range(100)]


def test_program_id_and_num_programs_are_those_of_the_grid_asked_for(mini):
    n = 37  # more programs than plate-mini's cores, not a multiple of them
    src = torch.arange(n, dtype=torch.int32, device="plate")
    out = torch.zeros(n, dtype=torch.int32, device="plate")
    ids_kernel[(n,)](out, src)
    assert out.cpu().tolist() == [i + i * 1000 + n for i in range(n)]


def test_kernels_with_atomics_stay_one_program_per_element(mini):
    x = torch.randint(0, 8, (512,), dtype=torch.int32, device="plate")
    bins = torch.zeros(8, dtype=torch.int32, device="plate")
    k = histogram_kernel[(4,)](x, bins, 512, BLOCK=128)
    assert bins.cpu().tolist() == torch.bincount(x.cpu(), minlength=8).tolist()
    assert ROWS_ARG not in k.asm["pir"]


def test_the_option_turns_it_off(mini):
    rows, cols = 16, 64
    x = torch.randn(rows, cols, device="plate")
    o = torch.empty_like(x)
    k = softmax_kernel[(rows,)](o, x, x.stride(0), cols, BLOCK=cols, persistent_programs=False)
    torch.testing.assert_close(o.cpu(), torch.softmax(x.cpu(), dim=1))
    assert ROWS_ARG not in k.asm["pir"] and mini.last_profile.num_programs == rows


@triton.jit
def many_loads_kernel(out, inp, stride, BLOCK: tl.constexpr, LOADS: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for k in tl.static_range(LOADS):
        acc += tl.load(inp + row * stride + k * BLOCK + cols) * (k + 1)
    tl.store(out + row * BLOCK + cols, acc)


def test_too_many_loads_to_pipeline_still_compile_and_run(mini):
    """Twenty row loads pipelined ahead need more DMA tokens than a core has (16): the
    persistent loop is lowered again shallower, then unpipelined, never failing to compile."""
    rows, block, loads = 20, 32, 20
    x = torch.randn(rows, block * loads, device="plate")
    o = torch.empty(rows, block, device="plate")
    k = many_loads_kernel[(rows,)](o, x, x.stride(0), BLOCK=block, LOADS=loads)
    want = sum(x.cpu()[:, i * block : (i + 1) * block] * (i + 1) for i in range(loads))
    torch.testing.assert_close(o.cpu(), want)
    assert ROWS_ARG in k.asm["pir"]


@triton.jit
def nested_ids_kernel(out, flag):
    f = tl.load(flag)
    if f > 0:  # program_id and num_programs read only inside the scf.if
        pid = tl.program_id(0)
        tl.store(out + pid, pid * 1000 + tl.num_programs(0))


def test_program_ids_read_inside_nested_regions_are_the_grid_asked_for(mini):
    n = 21
    flag = torch.ones(1, dtype=torch.int32, device="plate")
    out = torch.zeros(n, dtype=torch.int32, device="plate")
    k = nested_ids_kernel[(n,)](out, flag)
    assert ROWS_ARG in k.asm["pir"]
    assert out.cpu().tolist() == [i * 1000 + n for i in range(n)]


@triton.jit
def read_neighbour_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, offs.to(tl.float32))
    v = tl.load(x_ptr + ((pid + 1) % tl.num_programs(0)) * BLOCK + tl.arange(0, BLOCK))
    tl.store(y_ptr + offs, v)


def test_the_sanitizer_still_sees_every_program_of_the_grid(mini, monkeypatch):
    """Under PLATE_SANITIZE a persistent kernel runs one program per grid element, so a race
    between neighbouring programs (which a persistent loop would put in one program) is found."""
    from triton_plate_backend.errors import SanitizerError

    n = 4 * mini.machine.total_cores  # enough programs to be folded four to a program without the sanitizer
    x, y = torch.zeros(n * 16, device="plate"), torch.zeros(n * 16, device="plate")
    monkeypatch.setenv("PLATE_SANITIZE", "race")
    with pytest.raises(SanitizerError) as err:
        k = read_neighbour_kernel[(n,)](x, y, BLOCK=16)
    monkeypatch.delenv("PLATE_SANITIZE")
    assert sum(f.count for f in err.value.findings) == n * 16  # every element of x, across every pair
    k = read_neighbour_kernel[(n,)](x, y, BLOCK=16)
    # folded: as many launched programs as the cores the affinity mapping of the n programs uses (launcher.py)
    assert ROWS_ARG in k.asm["pir"] and mini.last_profile.num_programs < n


def test_one_program_each_over_a_grid_past_i32_products(mini):
    """One program per launched program (one group of grid_x programs: the sanitizer's launch and the
    cost model's plain alternative) over 50,000 programs: the shares' arithmetic forms no product of
    two grid sizes, which would overflow i32 (and send program 46,341 and later elsewhere)."""
    n = 50_000
    src = torch.arange(n, dtype=torch.int32, device="plate")
    k = ids_kernel[(8,)](torch.zeros(8, dtype=torch.int32, device="plate"), src)  # compiled: the same binary
    k._init_handles()
    program = k.function.program
    out = torch.zeros(n, dtype=torch.int32, device="plate")
    args = _one_each(program, (n, 1, 1), [out.data_ptr(), src.data_ptr()])
    mini.launch(program, (n, 1, 1), args, policy="round_robin", defer_timing=True)  # the results, not the time
    assert out.cpu().tolist() == (torch.arange(n, dtype=torch.int32) * 1001 + n).tolist()
