"""The CUDA-shaped answers a PLATE machine gives to what kernels ask of a device: one table for both
Triton's ``driver.active.utils.get_device_properties`` and ``torch.plate.get_device_properties``.

Published kernels size launches from these numbers (tutorial 02's persistent softmax, persistent
matmuls, Inductor's occupancy heuristics):

    occupancy    = regs_per_multiprocessor // (n_regs * warp_size * num_warps)   # programs per SM
    occupancy    = min(occupancy, max_shared_mem // kernel.metadata.shared)
    num_programs = multiprocessor_count * occupancy

On PLATE the core is the SM and a program instance is the thread block. A core runs one program at
a time; programs beyond the core count wait for a core. ``num_warps`` has no effect, but a program
counts as ``num_warps * warp_size`` lanes (at most ``PROGRAM_LANES``), each of which may use all of
the core's scalar registers, so the register file of a core is ``scalar_registers * PROGRAM_LANES``
(65536 on every preset, as on NVIDIA's SMs) and ``n_regs`` (``load_binary``) is the number of
scalar registers the program uses. The register term of the formula is then at least 1 for every
program that can launch, and the launch it gives is a small multiple of the core count.

Floor 2: imports only the machine description.
"""

from __future__ import annotations

from dataclasses import dataclass

from .machine import Machine

WARP_SIZE = 32  # target.WARP_SIZE: PLATE has no warps, Triton's layouts still need a warp size
PROGRAM_LANES = 1024  # num_warps * warp_size of the largest launchable program: CUDA's threads per block


@dataclass(frozen=True)
class DeviceAnswers:
    multiprocessor_count: int  # cores
    warp_size: int
    max_threads_per_block: int  # lanes of one program
    max_threads_per_multiprocessor: int  # one program at a time per core
    regs_per_multiprocessor: int  # scalar registers x lanes
    max_shared_mem: int  # SRAM bytes of one core
    clock_khz: int
    mem_clock_khz: int
    mem_bus_width_bits: int


def device_answers(m: Machine) -> DeviceAnswers:
    hbm_bytes_per_cycle = m.hbm_bytes_per_cycle_chip() * m.chips
    return DeviceAnswers(
        multiprocessor_count=m.total_cores,
        warp_size=WARP_SIZE,
        max_threads_per_block=PROGRAM_LANES,
        max_threads_per_multiprocessor=PROGRAM_LANES,
        regs_per_multiprocessor=m.core.scalar_registers * PROGRAM_LANES,
        max_shared_mem=m.core.sram_bytes,
        clock_khz=int(m.clock_ghz * 1e6),
        # double data rate at half the core clock over a bus of 8 bits per HBM byte/cycle, so that
        # triton.testing.get_dram_gbps (clock * width * 2 / 8) gives the machine's HBM bandwidth
        mem_clock_khz=int(m.clock_ghz * 1e6 / 2),
        mem_bus_width_bits=int(hbm_bytes_per_cycle * 8),
    )
