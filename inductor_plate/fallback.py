"""What plate does with an op it cannot compile: run it eagerly, say so in one line, never crash.

Two mechanisms, both Inductor's own:

1. Per-op, before lowering. ``EagerOpsPass`` is the plate device's custom post-grad pass
   (``register_backend_for_device(..., device_custom_pass=...)``): it marks every FX node whose aten op
   is in ``policy.eager_ops()`` with ``meta["should_fallback"]``, which makes Inductor's lowering emit
   an extern call to the aten op (it runs on plate tensors through the device's CPU fallback) instead
   of fusing it into a Triton kernel. Its uuid hashes the op set, so the FX-graph cache key follows it.

2. Per-frame, when a kernel fails to compile. The generated wrapper code defines each plate kernel
   through ``guard_kernel`` and calls ``check_kernels`` after Inductor's ``async_compile.wait``
   (wrapper.py emits both). A Triton/plate compile error is caught; once every kernel of the graph
   has compiled or failed, the failed kernels' culprit ops (``culprits``: the op on the source line
   the error names, else the ops no compiled kernel has shown to work) are learned, so mechanism 1
   runs them eagerly in every later compile; a one-line warning names them; and Dynamo's
   ``SkipFrame`` makes this frame run eagerly now, counted as a host fallback (fallback_counter.py).
   Errors that are not a plate compile failure propagate unchanged.
"""

from __future__ import annotations

import functools
import hashlib
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch
from torch._guards import CompileContext
from torch._inductor.custom_graph_pass import CustomGraphModulePass

from triton_plate_backend import shims

from . import config, fallback_counter, policy

_warned: set[str] = set()


class PlateFallbackWarning(UserWarning):
    """An op or kernel that plate cannot compile runs eagerly instead."""


def forget_learned_ops() -> None:
    """Drop what this process learned (tests; or after upgrading the lowering in a long-lived process)."""
    policy.forget_learned_eager_ops()
    _warned.clear()
    _compiled_ops.clear()


def warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, PlateFallbackWarning, stacklevel=3)


# ---- 1. the custom pass ----------------------------------------------------------------------------
def _on_plate(node) -> bool:
    val = node.meta.get("val")
    vals = val if isinstance(val, (list, tuple)) else (val,)
    return any(getattr(getattr(v, "device", None), "type", None) == "plate" for v in vals)


class EagerOpsPass(CustomGraphModulePass):
    """Marks plate nodes of ``policy.eager_ops()`` for Inductor's per-node fallback."""

    def __call__(self, gm) -> None:
        ops = policy.eager_ops()
        if not ops:
            return
        for node in gm.graph.nodes:
            if node.op == "call_function" and str(node.target) in ops and _on_plate(node):
                node.meta["should_fallback"] = True
                op = str(node.target)
                warn_once(op, f"plate: {op} runs eagerly ({policy.eager_reason(op)})")

    def uuid(self) -> str:
        """Changes with the eager ops, with the machine decisions are made for, with inductor_plate's code
        and plate's shims, and with the kernels plate registers on the device's dispatch keys (FX-graph and
        AOTAutograd cache keys: a cached graph's wrapper code calls inductor_plate, a shim can change what
        tracing records, e.g. a decomposition, and so does which ops plate registers: a PrivateUse1 kernel
        takes an op off its composite's autograd, e.g. conj_physical's backward traced as None before
        2f495c8; Inductor's key covers only torch's own code)."""
        ops = ",".join(sorted(policy.eager_ops()))
        key = (
            f"plate-eager-ops:{ops};machine:{policy.machine().cache_key()};code:{_source_hash()};"
            f"dispatch:{_registrations_hash()}"
        )
        return hashlib.sha256(key.encode()).hexdigest()


@functools.cache
def _source_hash() -> str:
    """sha256 of inductor_plate's .py files, triton_plate_backend's shims.py and its eager ops (the kernels
    registered at AutogradPrivateUse1 are traced: their code is what a graph records)."""
    h = hashlib.sha256()
    paths = [*sorted(Path(__file__).parent.glob("*.py")), Path(shims.__file__)]
    paths += sorted((Path(shims.__file__).parent / "eager_ops").glob("*.py"))
    for path in paths:
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


# the device's dispatch keys whose kernels decide what tracing a plate graph records
DISPATCH_KEYS = ("PrivateUse1", "AutogradPrivateUse1")


def _registrations_hash() -> str:
    """sha256 of the operators with a kernel at DISPATCH_KEYS, now (not cached: registration may come later
    in the process than the first compile; ~1 ms)."""
    h = hashlib.sha256()
    for key in DISPATCH_KEYS:
        h.update(key.encode())
        h.update("\n".join(sorted(torch._C._dispatch_get_registrations_for_dispatch_key(key))).encode())
    return h.hexdigest()


# ---- 2. kernels that fail to compile ---------------------------------------------------------------
_compiled_ops: set[str] = set()  # ops of kernels that compiled: never blamed for another kernel's failure
_LOCATION = re.compile(r"(/[^\s:'\"]+\.py):(\d+)")


def is_plate_compile_failure(error: BaseException) -> bool:
    """Did compiling a plate kernel fail in the plate lowering or Triton's frontend (not a bug elsewhere)?
    Compile workers send errors back as text (SubprocException), so the text is read too."""
    from triton_plate_backend.errors import PlateError

    seen = error
    while seen is not None:
        if isinstance(seen, PlateError) or type(seen).__name__ == "CompilationError":
            return True
        seen = seen.__cause__ or seen.__context__
    text = _chain_text(error)
    return "triton_plate_backend" in text or "triton.compiler.errors.CompilationError" in text


@dataclass
class FailedKernel:
    """Stands in the wrapper module for a kernel that did not compile, until ``check_kernels``."""

    name: str
    ops: tuple[str, ...]
    error: BaseException

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise self.error


class _GuardedFuture:
    """A compile-worker future that resolves to the kernel, or to a FailedKernel (async_compile.wait)."""

    def __init__(self, name: str, ops: tuple[str, ...], future):
        self.name, self.ops, self.future = name, ops, future

    def result(self, timeout=None):
        return _resolve(self.name, self.ops, lambda: self.future.result(timeout=timeout))


def _resolve(name: str, ops: tuple[str, ...], compile_kernel):
    try:
        kernel = compile_kernel()
    except Exception as error:
        if not config.fallback_on_compile_error or not is_plate_compile_failure(error):
            raise
        return FailedKernel(name, ops, error)
    _compiled_ops.update(ops)
    return kernel


def guard_kernel(name: str, ops: tuple[str, ...], compile_kernel):
    """Compile kernel ``name`` (``compile_kernel()`` is the async_compile.triton call): the kernel,
    a future of it, or a FailedKernel when plate cannot compile it."""
    from torch._inductor.codecache import CodeCacheFuture

    kernel = _resolve(name, ops, compile_kernel)
    if isinstance(kernel, CodeCacheFuture):
        guarded = type("PlateGuardedFuture", (_GuardedFuture, CodeCacheFuture), {})
        return guarded(name, ops, kernel)
    return kernel


def check_kernels(scope: dict) -> None:
    """After async_compile.wait: if a kernel failed, learn its culprit ops, warn, skip the frame."""
    failed = [value for value in scope.values() if isinstance(value, FailedKernel)]
    if not failed:
        return
    from torch._dynamo.exc import SkipFrame

    messages = []
    for kernel in failed:
        blamed = culprits(kernel.ops, kernel.error)
        policy.learn_eager_ops(blamed)
        named = ", ".join(blamed) or "no aten op"
        message = f"plate: cannot compile kernel {kernel.name} ({named}): {_first_line(kernel.error)}"
        warn_once(f"kernel:{kernel.name}:{named}", f"{message}; this frame runs eagerly, {named} eagerly from now on")
        messages.append(message)
    ops = sorted({op for kernel in failed for op in kernel.ops})
    fallback_counter.count_host_frame(f"{_compile_id()} ({', '.join(ops)})")
    raise SkipFrame("; ".join(messages))


def _compile_id() -> str:
    """Dynamo's id of the frame being compiled ("0/0": frame 0, first compile), or "?" outside one."""
    compile_id = CompileContext.current_compile_id()
    return str(compile_id) if compile_id is not None else "?"


def culprits(ops: tuple[str, ...], error: BaseException) -> tuple[str, ...]:
    """Which of a failed kernel's aten ops to run eagerly from now on: those named on the kernel
    source line the error points at; else those no compiled kernel has shown to work; else all."""
    named = set()
    for path, line in _LOCATION.findall(_chain_text(error)):
        text = _source_line(path, int(line))
        named |= {op for op in ops if re.search(rf"\b{re.escape(_base_name(op))}\b", text)}
    if named:
        return tuple(sorted(named))
    unproven = tuple(op for op in ops if op not in _compiled_ops)
    return unproven or tuple(ops)


def _chain_text(error: BaseException) -> str:
    """The messages of an error and of everything it was raised from (Inductor re-raises)."""
    texts, seen = [], error
    while seen is not None and len(texts) < 16:
        texts.append(str(seen))
        seen = seen.__cause__ or seen.__context__
    return "\n".join(texts)


def _base_name(op: str) -> str:
    """aten.frexp.Tensor -> frexp; prims.convert_element_type.default -> convert_element_type."""
    parts = op.split(".")
    return parts[1] if len(parts) > 1 else op


def _source_line(path: str, line: int) -> str:
    try:
        with open(path) as f:
            return next((text for number, text in enumerate(f, 1) if number == line), "")
    except OSError:
        return ""


def _first_line(error: BaseException) -> str:
    """The line that says what went wrong: a worker's traceback text ends with "...Error: message"."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    said = [line for line in lines if "Error:" in line and not line.startswith("Traceback")]
    line = said[-1] if said else lines[0] if lines else type(error).__name__
    return line.split("; ")[0][:240]  # plate's errors go on with "; what is supported": keep what failed
