"""The Triton driver for PLATE: target, device, launcher, and a benchmarker on the modeled clock.

Triton imports this module during ``import triton``: keep the imports at the top light (no torch,
no numpy, no triton.language, no triton.runtime.jit, no other backend's classes). Everything
that runs kernels lives in ``launcher`` and ``sim.device`` and is imported on first use.

Time: the device clock is the simulator's modeled clock (sim.device.Device.clock_ns). The events
of ``get_device_interface()`` read it, so ``triton.testing.do_bench`` measures modeled time; the
benchmarker of ``get_benchmarker()`` (what ``@triton.autotune`` uses) does too, with a few
repetitions instead of a time budget, because modeled time does not jitter and a simulated launch
costs real milliseconds (``do_bench`` would repeat a 2 µs kernel 50000 times to fill 100 ms).
``PlateDriver.modeled_clock`` says so: with patches/triton/do-bench-modeled-clock-driver.patch (or its
runtime shim in shims.py, installed when the driver is built) ``do_bench`` itself hands its loop to that
benchmarker.
"""

from __future__ import annotations

import functools
import os

from .target import BACKEND, PLATE_ARCH, WARP_SIZE, import_triton_first

import_triton_first(__name__)

from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.backends.driver import DriverBase  # noqa: E402

from .errors import BinaryFormatError, PlateError  # noqa: E402

MAX_THREADS = 1024  # device_properties.PROGRAM_LANES: bounds num_warps * warp_size (Triton's launch check)

CPP_TYPES = {
    "i1": "int8_t",
    "i8": "int8_t",
    "i16": "int16_t",
    "i32": "int32_t",
    "i64": "int64_t",
    "u1": "uint8_t",
    "u8": "uint8_t",
    "u16": "uint16_t",
    "u32": "uint32_t",
    "u64": "uint64_t",
    "fp16": "double",
    "bf16": "double",
    "fp32": "double",
    "f32": "double",
    "fp64": "double",
}


def _gpu_usable() -> bool:
    """Is a CUDA or ROCm device usable through torch? (what Triton's own drivers check)."""
    try:
        import torch
    except ImportError:
        return False
    try:
        return bool(torch.cuda.is_available())  # ROCm builds answer through torch.cuda too
    except Exception:  # a broken CUDA install counts as no GPU, never as an import failure
        return False


@functools.cache
def _sim_device():
    """sim/device.py, imported at the first ask (the simulator imports numpy and more); Triton asks the
    current device at every launch, where a relative import inside the function costs a name lookup
    through importlib."""
    from .sim import device

    return device


@functools.cache
def _loading():
    """(isa.encoding.load, launcher.KernelHandle), imported at the first load_binary (each fresh kernel's first
    launch asks it: a relative import inside the function resolves the names through importlib each time)."""
    from .isa.encoding import load
    from .launcher import KernelHandle

    return load, KernelHandle


# ---- utils: load_binary and device properties ----------------------------------------------------
class PlateUtils:
    def load_binary(self, name, kernel, shared, device):
        """Decode pbin bytes into a Program: (module, function, n_regs, n_spills, n_max_threads).
        Bytes that do not decode are looked up in Triton's cache and recompiled (binary_cache)."""
        load, KernelHandle = _loading()
        dev = _sim_device().get_device(device)
        try:
            program = load(bytes(kernel), dev.machine)  # verified against the device's machine
        except BinaryFormatError as e:
            from .binary_cache import recompile

            program = load(recompile(name, bytes(kernel), e), dev.machine)
        if program.name != name:
            raise PlateError(f"load_binary: the binary holds kernel {program.name!r}, Triton asked for {name!r}")
        if shared > dev.machine.core.sram_bytes:
            raise PlateError(
                f"kernel {name} needs {shared} bytes of SRAM; a core of {dev.machine.name} has "
                f"{dev.machine.core.sram_bytes}"
            )
        return program, KernelHandle(name, program, dev.index), _registers_used(program), 0, MAX_THREADS

    def get_device_properties(self, device):
        """What Triton's drivers return (NVIDIA's keys, and AMD's max_threads_per_sm), from the one table
        of device_properties; see there what occupancy means on PLATE."""
        from .device_properties import device_answers
        from .sim.device import get_device

        m = get_device(device).machine
        a = device_answers(m)
        return {
            "max_shared_mem": a.max_shared_mem,
            "max_num_regs": a.regs_per_multiprocessor,
            "multiprocessor_count": a.multiprocessor_count,
            "warpSize": a.warp_size,
            "max_threads_per_sm": a.max_threads_per_multiprocessor,
            "sm_clock_rate": a.clock_khz,
            "mem_clock_rate": a.mem_clock_khz,
            "mem_bus_width": a.mem_bus_width_bits,
            "machine": m.name,
            "domains": m.total_domains,
            "sram_bytes": m.core.sram_bytes,
        }

    def set_printf_fifo_size(self, size):
        """device_print output goes straight to the host: there is no FIFO to size."""
        return None


_REGS = "_plate_registers_used"  # on the program: (its instructions as a tuple, _registers_used of them)


def _registers_used(program) -> int:
    """One past the highest register an instruction names (read or written), at least 1. Kept on the
    program for its instructions (an Inst is frozen: the same instructions in the same order name the
    same registers): Triton loads a cached kernel's binary once per definition of it, and encoding.load
    hands back the program it decoded before (a test suite defines its kernels anew per test)."""
    instrs = tuple(program.instrs)
    kept = getattr(program, _REGS, None)
    if kept is not None and kept[0] == instrs:  # compares element by element, each first by identity
        return kept[1]
    regs = _registers_named(instrs)
    setattr(program, _REGS, (instrs, regs))
    return regs


def _registers_named(instrs) -> int:
    """``_registers_used`` of these instructions, counted."""
    from .sim.data_flow import slots

    highest = -1
    positions: dict[str, tuple] = {}  # mnemonic -> (operand position, is a register list) of its registers
    for ins in instrs:
        pos = positions.get(ins.mnemonic)
        if pos is None:
            s = slots(ins)
            pos = positions[ins.mnemonic] = s.reg_use + s.reg_def
        for i, many in pos:
            value = ins.operands[i]
            if many:
                highest = max(highest, *value) if value else highest
            elif value > highest:
                highest = value
    return max(highest + 1, 1)  # published occupancy formulas divide by it


# ---- events on the modeled clock --------------------------------------------------------------
class ModeledEvent:
    """A CUDA-style event that reads the device's modeled clock instead of a wall clock."""

    def __init__(self, enable_timing: bool = True, blocking: bool = False, interprocess: bool = False):
        self.enable_timing = enable_timing
        self.time_ns = None

    def record(self, stream=None):
        from .sim.device import get_device

        self.time_ns = get_device().now_ns()

    def synchronize(self):
        return None

    def query(self) -> bool:
        return True

    def wait(self, stream=None):
        return None

    def elapsed_time(self, end: ModeledEvent) -> float:
        """Modeled milliseconds from this event to ``end``."""
        if self.time_ns is None or end.time_ns is None:
            raise PlateError("elapsed_time: both events must be recorded first (call record())")
        return (end.time_ns - self.time_ns) / 1e6


class PlateDeviceInterface:
    """What triton.testing asks of get_device_interface(): synchronize, Event, current_device."""

    Event = ModeledEvent

    @staticmethod
    def synchronize(device=None):
        from .sim.device import get_device

        get_device(device).synchronize()

    @staticmethod
    def current_device() -> int:
        from .sim.device import current_device

        return current_device()

    @staticmethod
    def set_device(device: int) -> None:
        from .sim.device import set_current_device

        set_current_device(device)

    @staticmethod
    def device_count() -> int:
        from .sim.device import device_count

        return device_count()

    @staticmethod
    def is_available() -> bool:
        return True


DEVICE_INTERFACE = PlateDeviceInterface()


def do_bench_modeled(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean"):
    """``triton.testing.do_bench`` on the modeled clock, with up to ``PLATE_BENCH_REPS`` timed runs
    after one untimed run (compile and first launch). ``warmup`` and ``rep`` are accepted for
    compatibility; modeled time needs no warm-up and does not jitter: the timed runs stop once two in a
    row took the same modeled time (steady; every run is a whole simulated launch, an autotuner's
    config costs one fewer), except for ``return_mode="all"``, which gets every run.

    The cost model answers first (``PLATE_AUTOTUNE_MARGIN``): a call whose estimate is more than
    the margin above the best estimate of the same launch so far (an autotuner's earlier config)
    is not simulated; its time is its estimate, scaled like the best simulated config's."""
    from triton.testing import _summarize_statistics

    from . import knobs

    if return_mode not in ("min", "max", "mean", "median", "all"):
        raise ValueError(f"return_mode {return_mode!r}: expected min, max, mean, median or all")
    margin = knobs.autotune_margin()
    est = _estimate_call(fn) if margin is not None else None  # the untimed run, launches estimated
    best = _BEST_ESTIMATE.get(est[0]) if est else None
    if best is not None and est[1] > best[0] * (1 + margin / 100):
        PRUNED.append(est[0][0])
        return _summarize_statistics([est[1] * best[1] / 1e6], quantiles, return_mode)
    if margin is None or est is None:
        fn()
    DEVICE_INTERFACE.synchronize()
    times = []
    for _ in range(knobs.bench_reps()):
        for x in grad_to_none or ():
            x.grad = None
        start, end = ModeledEvent(), ModeledEvent()
        start.record()
        fn()
        end.record()
        times.append(start.elapsed_time(end))
        if return_mode != "all" and len(times) >= 2 and times[-1] == times[-2]:
            break  # steady: the simulator is deterministic, a third equal run changes no statistic
    if est and (best is None or est[1] < best[0]) and est[1] > 0:
        if len(_BEST_ESTIMATE) > 256:
            _BEST_ESTIMATE.clear()
        _BEST_ESTIMATE[est[0]] = (est[1], min(times) * 1e6 / est[1])
    return _summarize_statistics(times, quantiles, return_mode)


# launch key (kernel, pointer arguments) -> (best estimate in ns, its simulated / estimated time)
_BEST_ESTIMATE: dict = {}
PRUNED: list = []  # kernels of the calls the cost model pruned (what tests and `plate bench` count)


def _estimate_call(fn):
    """(launch key, estimated ns) of ``fn()``'s launches without running them; () when it launched
    none (everything else it does ran), None when the cost model cannot tell or ``fn`` failed (then
    it runs again for real: the same error, or a simulated run)."""
    from .sim.device import get_device

    try:
        with get_device().estimating() as estimates:
            fn()
    except Exception:  # noqa: BLE001  (whatever it was, the real run that follows raises it again or runs)
        return None
    if not estimates:
        return ()
    return estimates[0].launch_key, sum(e.time_ns for e in estimates)


# ---- the driver ---------------------------------------------------------------------------------
class PlateDriver(DriverBase):
    # the device clock is the simulator's: triton.testing.do_bench times a few runs with
    # get_benchmarker() instead of filling a time budget (patches/triton/do-bench-modeled-clock-driver.patch)
    modeled_clock = True

    def __init__(self):
        """Triton builds the active driver only: what it installs reaches plate's processes alone."""
        super().__init__()
        self.utils = PlateUtils()
        from .cache_files import install  # imports triton.runtime: only once `import triton` is done

        install()
        from . import shims

        shims.install("driver")  # triton.testing.do_bench hands its loop to get_benchmarker()

    @staticmethod
    def is_active():
        """Selected by TRITON_DEFAULT_BACKEND=plate; otherwise only when no CUDA/ROCm device is usable
        (so a GPU machine never has two active drivers)."""
        selected = os.environ.get("TRITON_DEFAULT_BACKEND")
        if selected:
            return selected == BACKEND
        return not _gpu_usable()

    @property
    def launcher_cls(self):
        from .launcher import PlateLauncher

        return PlateLauncher

    def get_current_target(self):
        return GPUTarget(BACKEND, PLATE_ARCH, WARP_SIZE)

    def get_current_device(self):
        return _sim_device().current_device()

    def set_current_device(self, device):
        from .sim.device import set_current_device

        set_current_device(device)

    def get_current_stream(self, device=None):
        return 0  # one in-order queue per device: launches are synchronous

    def get_active_torch_device(self):
        """torch.device("plate", i) once the plate torch device is registered (PrivateUse1 renamed
        "plate"); until then torch.device("cpu"), where host-memory mode keeps kernel arguments."""
        import torch

        if torch._C._get_privateuse1_backend_name() == BACKEND:
            return torch.device(BACKEND, self.get_current_device())
        return torch.device("cpu")

    def get_device_interface(self):
        return DEVICE_INTERFACE

    def map_python_to_cpp_type(self, ty: str) -> str:
        if ty.startswith("*"):
            return "uint64_t"  # a device address
        try:
            return CPP_TYPES[ty]
        except KeyError:
            raise PlateError(
                f"no C++ type for Triton type {ty!r}; known: pointers (*T), {', '.join(CPP_TYPES)}"
            ) from None

    def get_benchmarker(self):
        return do_bench_modeled

    def get_empty_cache_for_benchmark(self):
        """PLATE has no hardware cache between HBM and SRAM: nothing to flush, so an empty buffer."""
        return bytearray(0)

    def clear_cache(self, cache):
        return None
