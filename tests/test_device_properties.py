"""Device properties answer the questions published kernels ask, the same way through Triton and torch,
and the occupancy / persistent-grid formulas of published kernels give launches that run."""

import os

import pytest

os.environ.setdefault("TRITON_DEFAULT_BACKEND", "plate")
torch = pytest.importorskip("torch")
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.runtime import driver  # noqa: E402

from triton_plate_backend import device_properties, target  # noqa: E402
from triton_plate_backend.machine import PRESETS  # noqa: E402


@triton.jit
def _persistent_softmax(out_ptr, in_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        offs = tl.arange(0, BLOCK)
        x = tl.load(in_ptr + row * n_cols + offs, mask=offs < n_cols, other=-float("inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(out_ptr + row * n_cols + offs, e / tl.sum(e, axis=0), mask=offs < n_cols)


def test_triton_and_torch_give_the_same_answers(plate_mini_module):
    m = plate_mini_module.machine
    p = driver.active.utils.get_device_properties(0)
    t = torch.plate.get_device_properties(0)
    assert p["multiprocessor_count"] == t.multi_processor_count == m.total_cores == 8
    assert p["warpSize"] == t.warp_size == target.WARP_SIZE == device_properties.WARP_SIZE
    assert p["max_num_regs"] == t.regs_per_multiprocessor == m.core.scalar_registers * t.max_threads_per_multi_processor
    assert p["max_threads_per_sm"] == t.max_threads_per_multi_processor == t.max_threads_per_block
    assert p["max_shared_mem"] == t.sram_bytes == m.core.sram_bytes
    # CUDA's shared-memory fields, which libraries size their pipelines by: one core's SRAM
    assert t.shared_memory_per_block == t.shared_memory_per_block_optin == t.shared_memory_per_multiprocessor
    assert t.shared_memory_per_block_optin == p["max_shared_mem"]
    assert p["sm_clock_rate"] == t.clock_rate


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_register_occupancy_is_at_least_one_for_every_launchable_program(preset):
    a = device_properties.device_answers(PRESETS[preset])
    registers = PRESETS[preset].core.scalar_registers
    for num_warps in (1, 2, 4, 8, 16, 32):
        assert num_warps * a.warp_size <= a.max_threads_per_block
        for n_regs in range(1, registers + 1):
            assert a.regs_per_multiprocessor // (n_regs * a.warp_size * num_warps) >= 1
    # the largest program that uses every register fills its core: one at a time
    assert a.regs_per_multiprocessor // (registers * a.max_threads_per_block) == 1


def test_published_occupancy_formula_sizes_a_persistent_softmax(plate_mini_module):
    """Tutorial 02's launch size: cores x min(register occupancy, SRAM occupancy), capped by the rows."""
    props = driver.active.utils.get_device_properties(0)
    n_rows, n_cols, num_warps = 300, 181, 8
    x = torch.randn(n_rows, n_cols, device="plate")
    y = torch.empty_like(x)
    kernel = _persistent_softmax.warmup(
        y, x, n_rows, n_cols, BLOCK=triton.next_power_of_2(n_cols), num_warps=num_warps, grid=(1,)
    )
    kernel._init_handles()
    assert 1 <= kernel.n_regs <= plate_mini_module.machine.core.scalar_registers
    assert kernel.n_max_threads == props["max_threads_per_sm"]
    occupancy = props["max_num_regs"] // (kernel.n_regs * props["warpSize"] * num_warps)
    occupancy = min(occupancy, props["max_shared_mem"] // kernel.metadata.shared)
    assert occupancy >= 1
    num_programs = min(props["multiprocessor_count"] * occupancy, n_rows)
    assert props["multiprocessor_count"] <= num_programs <= n_rows
    kernel[(num_programs, 1, 1)](y, x, n_rows, n_cols, triton.next_power_of_2(n_cols))
    torch.testing.assert_close(y.cpu(), torch.softmax(x.cpu(), dim=1))


def test_more_lanes_than_a_core_has_is_out_of_resources(plate_mini_module):
    from triton.runtime.errors import OutOfResources

    x = torch.randn(4, 8, device="plate")
    with pytest.raises(OutOfResources):
        _persistent_softmax[(1,)](torch.empty_like(x), x, 4, 8, BLOCK=8, num_warps=64)
