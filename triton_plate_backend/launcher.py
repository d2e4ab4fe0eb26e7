"""The kernel launcher: what Triton calls to run a compiled kernel on the simulated device.

Triton calls ``PlateLauncher(src, metadata)`` once per compiled kernel, then the instance per
launch as ``(gridX, gridY, gridZ, stream, function, kernel_metadata, launch_metadata,
launch_enter_hook, launch_exit_hook, *args)``, where ``args`` are the kernel's Python arguments in
declaration order, constexprs and nested tuples included. The launcher reads ``src.signature`` to
drop constexprs and flatten tuples, turns tensors into device addresses, and runs the Program that
``driver.PlateUtils.load_binary`` decoded from the pbin bytes (``function``): it needs nothing of
the Python kernel, so it works in a process that only has the binary (Inductor's compile workers).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import knobs
from .errors import PlateError
from .isa.table import INT_BITS, is_float
from .passes.persistent import GRID_ARG, ROWS_ARG, SPLIT_ARG

# Same limits as CUDA: Triton and Inductor size grids (and split them) against these.
MAX_GRID = (2**31 - 1, 65535, 65535)


class LaunchError(PlateError, RuntimeError):
    """A launch that cannot run: bad grid, argument count or kind, machine mismatch."""


class PointerArgumentError(PlateError, ValueError):
    """A pointer argument that is not device memory (a CPU tensor outside host-memory mode, ...)."""


@dataclass
class KernelHandle:
    """The 'function' of a loaded kernel: its decoded Program and the device it was loaded on."""

    name: str
    program: object
    device: int = 0


class PlateLauncher:
    def __init__(self, src, metadata):
        signature = getattr(src, "signature", None)
        self.signature = list(signature.values()) if signature else None
        params = getattr(getattr(src, "fn", None), "params", None)
        # which arguments the kernel declares tl.constexpr (the signature also says "constexpr" of those
        # Triton specialized, an integer 1, say): a launch may leave out the declared ones (see flatten)
        self.declared_constexpr = [p.is_constexpr for p in params] if params else None
        self.name = getattr(metadata, "name", "?")
        self.machine = getattr(metadata, "machine", None)
        self._persistent = PersistentSplit()

    def __call__(
        self,
        gridX,
        gridY,
        gridZ,
        stream,
        function,
        kernel_metadata,
        launch_metadata,
        launch_enter_hook,
        launch_exit_hook,
        *args,
    ):
        if launch_enter_hook is not None:
            launch_enter_hook(launch_metadata)
        get_device, shared_estimates, cycle_collection_paused = _sim()
        grid = check_grid(self.name, gridX, gridY, gridZ)
        device = get_device(function.device)
        if self.machine is not None and self.machine != device.machine.name:
            raise LaunchError(
                f"kernel {self.name} was compiled for machine {self.machine!r} but device {device.index} runs "
                f"{device.machine.name!r}: set PLATE_MACHINE before the first launch; a kernel launched before a "
                f"machine switch (sim.device.reset_device) keeps its binary in Triton's in-memory cache, which does "
                f"not key on the machine: clear it with `{self.name}.device_caches.clear()`"
            )
        values, host_buffers = bind_arguments(
            self.name, function.program, self.signature, args, device, self.declared_constexpr
        )
        sanitize = knobs.sanitize()
        # the persistent gate's estimate of the launch is the operand planner's too
        with cycle_collection_paused(), shared_estimates():
            # the launch as written, one program per grid element (sim/persistent_runs.py): for a persistent
            # kernel the same launch with its appended arguments, else the launch itself
            as_written = (grid, values)
            if all(grid) and is_persistent(function.program):
                one_each = _one_each(function.program, grid, values)
                as_written = (grid, one_each)
                grid, values = self._persistent.launch(function.program, grid, values, device, sanitize, one_each)
            if all(grid):
                device.launch(
                    function.program,
                    grid,
                    values,
                    host_buffers=host_buffers,
                    defer_timing=True,
                    sanitize=sanitize,
                    as_written=as_written,
                )
        if launch_exit_hook is not None:
            launch_exit_hook(launch_metadata)


_SIM: list = []  # what a launch calls of sim/, imported at the first launch (the simulator imports numpy and more)


def _sim() -> tuple:
    """(sim.device.get_device, sim.estimate.shared_estimates, sim.host.cycle_collection_paused)."""
    if not _SIM:
        from .sim.device import get_device
        from .sim.estimate import shared_estimates
        from .sim.host import cycle_collection_paused

        _SIM[:] = [(get_device, shared_estimates, cycle_collection_paused)]
    return _SIM[0]


def is_persistent(program) -> bool:
    """The kernel went through passes/persistent.py: its last two arguments are the launcher's."""
    return [a.name for a in program.args[-2:]] == [ROWS_ARG, GRID_ARG]


def persistent_grid(grid: tuple[int, int, int], cores: int) -> tuple[tuple[int, int, int], int]:
    """(the grid to launch, programs along x per launched program) for a persistent kernel: as few
    programs per core as fill every core once, so each core pipelines the most trips."""
    gx, gy, gz = grid
    per_x = max(1, -(-cores // (gy * gz)))  # launched programs along x that fill the cores
    rows = max(1, -(-gx // per_x))
    return (-(-gx // rows), gy, gz), rows


def _one_each(program, grid, values) -> list:
    """A persistent kernel's arguments that run one program per launched program (one group of
    grid_x programs): the kernel as written, over its own grid."""
    splits = sum(a.name.startswith(SPLIT_ARG) for a in program.args)
    return [*values, *[grid[0]] * splits, grid[0], grid[0]]


def _split_args(program, grid_x: int, starts: list[int], per_group: int, values) -> list:
    """The appended arguments of launched groups of `per_group` programs each, group g running
    programs starts[g] .. starts[g + 1] - 1 (passes/persistent.py)."""
    splits = sum(a.name.startswith(SPLIT_ARG) for a in program.args)
    later = [*starts[1:], *[grid_x] * splits][:splits]
    return [*values, *later, per_group, grid_x]


class PersistentSplit:
    """How a persistent kernel's launch runs its grid (passes/persistent.py). Under the affinity
    policy each domain's run of programs (the mapping the plain grid would get: sim/affinity.py) is
    one group, split evenly over the domain's cores, so no launched program reads across a domain
    boundary and the domains stay balanced as the mapping balanced them; where the mapping cannot
    tell (or another policy is asked for), one group split evenly over the launched programs
    (`persistent_grid`). Then the cost model (sim/estimate.py) prices that launch against one
    program per launched program (the kernel as written, on the same placement and policy) and the
    cheaper runs: the persistent loop never makes a launch slower by the model. Decisions are kept
    per kernel, grid, integer arguments and operand layout, like sim/operands.py's. Past
    PRICED_PROGRAMS programs per launched program the model is not asked (the address-only run of
    so long a loop costs seconds, more than the launch: 1M-element vector add at BLOCK 16 on
    plate-mini, 11 s): the persistent loop runs, its fill and drain paid once per core instead of
    once per program."""

    MAX_DECISIONS = 1024
    PRICED_PROGRAMS = 64

    def __init__(self):
        self._decided: dict[tuple, tuple] = {}

    def launch(self, program, grid, values, device, sanitize, one_each=None) -> tuple[tuple[int, int, int], list]:
        """(grid, arguments) of this launch (``one_each``: ``_one_each`` of it, when the caller has it)."""
        if one_each is None:
            one_each = _one_each(program, grid, values)
        launched, _ = persistent_grid(grid, device.machine.total_cores)
        if sanitize or launched == grid:  # the sanitizer tells programs apart by their ids: one per grid element
            return grid, one_each
        key = self._key(program, grid, values, device)
        hit = self._decided.get(key)
        if hit is None or hit[0] is not program:  # the key holds id(program): an id is reused once its program is freed
            priced = grid[0] <= self.PRICED_PROGRAMS * launched[0]
            hit = (program, self._decide(program, grid, values, device, launched, one_each, priced))
            if len(self._decided) >= self.MAX_DECISIONS:
                self._decided.clear()
            self._decided[key] = hit
        split, starts, per_group = hit[1]
        if not split:
            return grid, one_each
        return split, _split_args(program, grid[0], starts, per_group, values)

    @staticmethod
    def _key(program, grid, values, device) -> tuple:
        memory = device.memory
        layout = []
        for a, v in zip(program.args, values):
            if a.type == "ptr":
                rec = memory.holding(int(v))
                layout.append(None if rec is None else (rec.nbytes, int(v) - rec.base, str(rec.placement)))
            elif not isinstance(v, float):
                layout.append(int(v))
        return (id(program), program.name, tuple(grid), tuple(layout), knobs.policy())

    @staticmethod
    def _decide(program, grid, values, device, launched, one_each, priced: bool) -> tuple:
        """(launched grid or None for one program each, group starts, launched programs per group)."""
        from .sim.affinity import AFFINITY, core_mapping, domain_runs
        from .sim.estimate import estimate_launch

        machine, memory, policy = device.machine, device.memory, knobs.policy()
        split = (launched, [0], launched[0])
        if grid[1] * grid[2] == 1 and policy == AFFINITY:
            mapping = core_mapping(program, grid, one_each, memory)
            starts = None if mapping is None else domain_runs(mapping.array(), machine)
            if starts is not None:
                split = ((len(starts) * machine.domain.cores, 1, 1), starts, machine.domain.cores)
        if not priced:
            return split
        try:
            args = _split_args(program, grid[0], split[1], split[2], values)
            persistent = estimate_launch(program, split[0], args, memory, machine, policy=policy)
            plain = estimate_launch(program, grid, one_each, memory, machine, policy=policy)
        except PlateError:  # the model cannot price it (control flow on loaded data): the persistent loop
            return split
        return split if persistent.time_ns <= plain.time_ns else (None, [0], grid[0])


def check_grid(name: str, gx, gy, gz) -> tuple[int, int, int]:
    grid = (int(gx), int(gy), int(gz))
    for axis, n, limit in zip("xyz", grid, MAX_GRID):
        if n < 0 or n > limit:
            raise LaunchError(
                f"kernel {name}: grid {grid} is invalid: {axis} = {n} outside 0..{limit} "
                f"(the limits are {MAX_GRID}, as on CUDA); split the launch or fold the axis"
            )
    return grid


def flatten(signature, args, declared_constexpr=None):
    """(declaration position, Triton type, value) of every runtime argument: constexprs dropped,
    tuples flattened, tensor descriptors expanded the way Triton's TTIR rewrite expects. ``args`` holds
    every argument (constexprs included, as Triton 3.3+ passes them) or only those not declared constexpr
    (``declared_constexpr``, one flag per argument; by default the signature's constexprs)."""
    out = []
    if signature is None:  # no source at all: every argument is a runtime argument
        for i, value in enumerate(args):
            _walk(out, i, _type_of(value), value)
        return out
    if len(signature) == len(args) and _plain(signature):  # no tuple, no tensor descriptor: _walk's answer
        return [(i, ty, value) for i, (ty, value) in enumerate(zip(signature, args)) if ty != "constexpr"]
    positions = list(range(len(signature)))
    if len(signature) != len(args):
        # CompiledKernel[grid](...) with the runtime arguments only: the calling convention before Triton 3.3,
        # which libraries written for it keep (FlagGems' libentry on 3.7); unambiguous, the counts differ
        declared = declared_constexpr or [ty == "constexpr" for ty in signature]
        positions = [i for i, constexpr in enumerate(declared) if not constexpr]
        if len(positions) != len(args):
            raise LaunchError(
                f"the kernel takes {len(signature)} arguments ({len(positions)} of them not constexpr), "
                f"the launch passed {len(args)}"
            )
    for i, value in zip(positions, args):
        _walk(out, i, signature[i], value)
    return out


_PLAIN: dict = {}  # id(signature) -> (signature, its length, whether every type is a plain string type)


def _plain(signature) -> bool:
    """Every type of ``signature`` a string but a tensor descriptor's (no tuple): ``_walk`` appends each
    argument but the constexprs as it is. Kept per signature (a launcher's, launch after launch)."""
    hit = _PLAIN.get(id(signature))
    if hit is None or hit[0] is not signature or hit[1] != len(signature):
        if len(_PLAIN) >= 1024:
            _PLAIN.clear()
        plain = all(isinstance(ty, str) and not ty.startswith("tensordesc") for ty in signature)
        hit = _PLAIN[id(signature)] = (signature, len(signature), plain)
    return hit[2]


def _walk(out: list, position: int, ty, value) -> None:
    # A module-level function, not a closure: a closure that calls itself is a reference cycle, which
    # would keep every launch's arguments (and their tensors) alive until the cycle collector runs.
    if isinstance(ty, tuple):
        if not isinstance(value, (tuple, list)) or len(value) != len(ty):
            raise LaunchError(f"argument {position}: expected a tuple of {len(ty)} values, got {value!r}")
        for t, v in zip(ty, value):
            _walk(out, position, t, v)
    elif ty == "constexpr":
        return
    elif isinstance(ty, str) and ty.startswith("tensordesc"):
        out.extend((position, t, v) for t, v in _expand_tensordesc(ty, value))
    else:
        out.append((position, ty, value))


def _type_of(value):
    if isinstance(value, (tuple, list)):
        return tuple(_type_of(v) for v in value)
    if value is None:
        return "constexpr"
    if hasattr(value, "data_ptr"):
        return "*"
    if isinstance(value, float):
        return "fp64"
    return "i64"


def _expand_tensordesc(ty: str, desc):
    # NVIDIA's host-side decomposition without TMA metadata (driver.make_tensordesc_arg):
    # base, shape, strides, padding == "nan", round_f32_to_tf32, shape (i32), strides (i64)
    ndim = len(desc.shape)
    dtype = ty[len("tensordesc<") :].split("[", 1)[0]
    types = [f"*{dtype}", *["i64"] * (2 * ndim), "i1", "i1", *["i32"] * ndim, *["i64"] * ndim]
    values = [
        desc.base,
        *desc.shape,
        *desc.strides,
        desc.padding == "nan",
        bool(desc.round_f32_to_tf32),
        *desc.shape,
        *desc.strides,
    ]
    return list(zip(types, values))


def bind_arguments(name, program, signature, args, device, declared_constexpr=None):
    """Runtime values in Program.args order, and the host buffers to register (host-memory mode)."""
    flat = flatten(signature, args, declared_constexpr)
    params, kinds = _runtime_params(program)
    if len(flat) != len(params):
        wanted = ", ".join(f"{a.name}: {a.type}" for a in params)
        raise LaunchError(
            f"kernel {name} takes {len(params)} runtime argument(s) ({wanted}); the launch gave "
            f"{len(flat)} after dropping constexprs and flattening tuples"
        )
    values, host_buffers = [], []
    for (position, _ty, value), param, bits in zip(flat, params, kinds):
        if bits == _PTR:
            addr, host = _pointer(name, position, value, device)
            values.append(addr)
            if host is not None:
                from .sim.device import HostBuffer

                host_buffers.append(HostBuffer(*host, label=f"{name} arg {position} ({param.name})"))
        elif bits == _FLOAT:
            values.append(float(value))
        else:
            value = int(value)
            values.append(value if value in _UNWRAPPED[bits] else _wrapped(value, bits))
    return values, host_buffers


_PTR, _FLOAT = -1, 0  # _runtime_params' kinds; an integer's is its width in bits
_PARAMS = "_plate_runtime_params"  # on the program: (its args list, their number, (runtime params, kinds))


def _runtime_params(program) -> tuple[list, list[int]]:
    """The Program's arguments a launch passes (a persistent kernel's own appended ones left out) and each
    one's kind: ``_PTR``, ``_FLOAT`` or an integer's width in bits (``INT_BITS``, 64 for any other type),
    kept on the program (a kernel's launches bind the same parameters; kept there, nothing else holds the
    program alive)."""
    args = program.args
    hit = getattr(program, _PARAMS, None)
    if hit is None or hit[0] is not args or hit[1] != len(args):
        params = args
        if is_persistent(program):
            params = [a for a in params[:-2] if not a.name.startswith(SPLIT_ARG)]
        kinds = [_PTR if a.type == "ptr" else _FLOAT if is_float(a.type) else INT_BITS.get(a.type, 64) for a in params]
        hit = (args, len(args), (params, kinds))
        setattr(program, _PARAMS, hit)
    return hit[2]


def _integer(value: int, ty: str) -> int:
    """Wrap to the parameter's width, signed (u64 bit patterns keep their bits)."""
    return _wrapped(value, INT_BITS.get(ty, 64))


def _unwrapped(bits: int) -> range:
    """The values ``_wrapped`` returns as they are (a launch's integers mostly are: one range test, no call)."""
    return range(2) if bits == 1 else range(-(1 << (bits - 1)), 1 << (bits - 1))


_UNWRAPPED = {bits: _unwrapped(bits) for bits in {*INT_BITS.values(), 64}}


def _wrapped(value: int, bits: int) -> int:
    """``_integer`` of a parameter ``bits`` wide."""
    if bits == 1:
        return value & 1
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _pointer(name, position, value, device):
    """(device address, (host addr, nbytes, owner) to register or None). Host-memory mode (the knob) is
    asked only of a CPU tensor: a launch over plate tensors reads no environment variable for it."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value, None  # a raw device address
    data_ptr = getattr(value, "data_ptr", None)
    if data_ptr is None:
        raise PointerArgumentError(
            f"Pointer argument (at {position}) of kernel {name} must be a tensor (an object "
            f"with data_ptr()), got {type(value).__name__}"
        )
    addr = int(data_ptr())
    dev = getattr(value, "device", None)
    dev_type = getattr(dev, "type", dev if isinstance(dev, str) else None)
    if dev_type == "cpu":
        base, nbytes, owner = _host_extent(value, addr)
        if knobs.host_memory() or _pinned(owner):  # lent to the simulator for the launch; pinned: as CUDA maps it
            return addr, (base, nbytes, owner)
        if nbytes and device.covers(base, nbytes):
            return addr, None  # host memory the user made device memory explicitly
        raise PointerArgumentError(
            f"Pointer argument (at {position}) cannot be accessed from Triton (cpu tensor?): kernel {name} runs "
            f"on the plate device; pin it (pin_memory=True) or set PLATE_HOST_MEMORY=1 to let the simulator use "
            f"CPU tensors as device memory"
        )
    if dev_type not in (None, "plate"):
        raise PointerArgumentError(
            f"Pointer argument (at {position}) of kernel {name} is a {dev_type} tensor; "
            f"plate kernels read plate device memory"
        )
    return addr, None


def _pinned(tensor) -> bool:
    """A pinned CPU tensor (pin_memory=True: plate's pinned allocator, torch_device/csrc/pinned.cpp)."""
    is_pinned = getattr(tensor, "is_pinned", None)
    return bool(is_pinned()) if is_pinned is not None else False


def _host_extent(value, addr):
    """The whole host allocation behind a CPU tensor: its storage (views share it)."""
    base = getattr(value, "base", None)  # triton.reinterpret's TensorWrapper keeps the tensor in .base
    tensor = base if hasattr(base, "untyped_storage") else value
    storage = getattr(tensor, "untyped_storage", None)
    if storage is not None:
        st = storage()
        return int(st.data_ptr()), int(st.nbytes()), tensor
    nbytes = int(value.numel()) * int(value.element_size())
    return addr, nbytes, value
