"""Run a hand-written .pasm program on the simulator: host buffers in, results and profile out.

Used by `plate run-asm` and by the tests of the hand-written programs. Argument specs:
  NAME=INT | NAME=FLOAT                      scalar argument
  NAME=KIND:DTYPE:COUNT                      device buffer; KIND in zeros, ones, arange, rand (U[0,1)),
                                             randn (N(0,1)); DTYPE an ISA dtype (f32, f16, bf16, i32, ...)
"""

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass

import numpy as np

from .dtypes import NUMPY
from .errors import PlateError
from .isa.program import Program
from .isa.table import is_float
from .machine import Machine

_BUFFER = re.compile(r"^(zeros|ones|arange|rand|randn):([a-z0-9]+):(\d+)$")


class ArgSpecError(PlateError):
    """A --arg value that is neither a number nor KIND:DTYPE:COUNT."""


@dataclass
class AsmRun:
    inputs: dict[str, np.ndarray]  # host copies of every buffer before the launch
    outputs: dict[str, np.ndarray]  # host copies after the launch
    scalars: dict[str, int | float]
    profile: object


def make_buffer(spec: str, rng: np.random.Generator) -> np.ndarray:
    m = _BUFFER.match(spec)
    if not m:
        raise ArgSpecError(f"buffer spec {spec!r}: expected KIND:DTYPE:COUNT, e.g. rand:f32:1024")
    kind, dtype, count = m.group(1), m.group(2), int(m.group(3))
    if dtype not in NUMPY:
        raise ArgSpecError(f"buffer spec {spec!r}: unknown dtype {dtype!r}; known: {', '.join(NUMPY)}")
    make = {
        "zeros": lambda: np.zeros(count),
        "ones": lambda: np.ones(count),
        "arange": lambda: np.arange(count),
        "rand": lambda: rng.random(count),
        "randn": lambda: rng.standard_normal(count),
    }[kind]
    return make().astype(NUMPY[dtype])


def parse_args(program: Program, specs: dict[str, str], rng: np.random.Generator):
    """Map program arguments to host buffers (pointers) and Python numbers (scalars)."""
    missing = [a.name for a in program.args if a.name not in specs]
    extra = sorted(set(specs) - {a.name for a in program.args})
    if missing or extra:
        raise ArgSpecError(
            f"kernel {program.name} takes {[a.name for a in program.args]}; missing {missing}, unknown {extra}"
        )
    buffers, scalars = {}, {}
    for a in program.args:
        spec = specs[a.name]
        if a.type == "ptr":
            buffers[a.name] = make_buffer(spec, rng)
        else:
            try:
                scalars[a.name] = float(spec) if is_float(a.type) else int(spec, 0)
            except ValueError:
                raise ArgSpecError(f"argument {a.name} ({a.type}): {spec!r} is not a number") from None
    return buffers, scalars


def _host_view(address: int, nbytes: int) -> np.ndarray:
    return np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(address))


def run_asm(
    program: Program,
    grid,
    specs: dict[str, str],
    machine: Machine,
    *,
    seed: int = 0,
    policy: str | None = None,
    trace_path: str | None = None,
) -> AsmRun:
    from .sim.device import Device

    device = Device(machine=machine)
    rng = np.random.default_rng(seed)
    buffers, scalars = parse_args(program, specs, rng)
    allocs, launch_args = {}, []
    for name, host in buffers.items():
        allocs[name] = device.memory.alloc(max(host.nbytes, 1), label=name)
        _host_view(allocs[name].base, host.nbytes)[:] = host.view(np.uint8)
    for a in program.args:
        launch_args.append(allocs[a.name].base if a.type == "ptr" else scalars[a.name])
    profile = device.launch(program, grid, launch_args, policy=policy, trace_path=trace_path)
    outputs = {}
    for name, host in buffers.items():
        outputs[name] = _host_view(allocs[name].base, host.nbytes).copy().view(host.dtype)
        device.memory.free(allocs[name].base)
    return AsmRun(buffers, outputs, scalars, profile)


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def check_expect(run: AsmRun, expect: str, *, rtol: float = 1e-4, atol: float = 1e-5) -> tuple[bool, str]:
    """Evaluate 'OUT = numpy expression over the inputs' and compare with the output buffer."""
    if "=" not in expect:
        raise ArgSpecError(f"--expect {expect!r}: expected 'OUT = EXPRESSION'")
    lhs, rhs = (s.strip() for s in expect.split("=", 1))
    if lhs not in run.outputs:
        raise ArgSpecError(f"--expect: {lhs!r} is not a buffer argument ({', '.join(run.outputs)})")
    env = {"np": np, "softmax": softmax, **run.inputs, **run.scalars}
    want = np.asarray(eval(rhs, {"__builtins__": {}}, env)).ravel().astype(np.float64)  # the user's own command
    got = run.outputs[lhs].astype(np.float64)
    if got.shape != want.shape:
        return False, f"{lhs}: {got.size} elements, the reference has {want.size}"
    # tolerance relative to the reference's scale: accumulation order differs from numpy's
    scale = float(np.max(np.abs(want[np.isfinite(want)]), initial=0.0))
    ok = bool(np.allclose(got, want, rtol=rtol, atol=atol + rtol * scale, equal_nan=True))
    err = float(np.max(np.abs(got - want), initial=0.0))
    return ok, f"{lhs}: {'matches' if ok else 'DIFFERS from'} the reference (max abs error {err})"
