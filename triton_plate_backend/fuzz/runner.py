"""Run one generated case on plate and under Triton's interpreter, in one process.

The kernel source is written to a module file (Triton's JIT reads source); its plain function is
wrapped twice: `triton.jit` (Triton's driver is plate) and the interpreter's `InterpretedFunction`,
which is what `@triton.jit` returns under TRITON_INTERPRET=1. Inputs are the same bytes on both."""

from __future__ import annotations

import contextlib
import importlib.util
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import compare
from .generator import Case
from .interpreter_patches import PATCHES, REFERENCE
from .values import DTYPES


@dataclass
class Result:
    index: int
    status: str  # "exact", "bounded", "explained", "mismatch", "invalid" (the interpreter cannot run it)
    category: str = ""
    rule: str = ""
    detail: str = ""
    features: list[str] = field(default_factory=list)
    seconds: float = 0.0


def load_kernel(case: Case, folder: Path):
    """The case's plain `kernel` function, from a module file under `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{case.name}.py"
    path.write_text(case.source)
    spec = importlib.util.spec_from_file_location(case.name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.kernel


def _to_torch(values: np.ndarray, dtype: str, device: str):
    import torch

    t = getattr(torch, DTYPES[dtype].torch)
    if dtype == "bf16":
        return torch.from_numpy(values.view(np.int16).copy()).view(t).to(device)
    return torch.from_numpy(values.copy()).to(device)


def _to_numpy(tensor, dtype: str) -> np.ndarray:
    import torch

    t = tensor.cpu()
    if dtype == "bf16":
        return t.view(torch.int16).numpy().view(DTYPES[dtype].np).copy()
    return t.numpy().copy()


def launch(kernel, case: Case, device: str) -> dict[str, np.ndarray]:
    """Launch `kernel` (a JITFunction or an InterpretedFunction) on the case's inputs; its outputs as numpy."""
    import torch

    args = []
    for b in case.buffers:
        if b.values is not None:
            args.append(_to_torch(b.values, b.dtype, device))
        else:
            args.append(torch.zeros(b.count, dtype=getattr(torch, DTYPES[b.dtype].torch), device=device))
    kernel[(case.grid,)](*args, **case.scalars, **case.constexprs)
    return {b.name: _to_numpy(a, b.dtype) for b, a in zip(case.buffers, args) if b.values is None}


def run_plate(fn, case: Case, device: str) -> dict[str, np.ndarray]:
    import triton

    return launch(triton.jit(fn), case, device)


@contextlib.contextmanager
def _library_interpreted():
    """Triton's library functions (tl.cumsum, tl.sum, ...) were made JITFunctions when triton was imported;
    under TRITON_INTERPRET=1 they would be InterpretedFunctions: call them as such while the interpreter runs.
    Unlike InterpretedFunction.__call__, undo the language patches after each call: they would stay on
    `triton.language.core` and break every later compile for plate."""
    from triton.runtime import interpreter
    from triton.runtime.jit import JITFunction

    def call(self, *args, **kwargs):
        rewritten = interpreter.InterpretedFunction(self.fn).rewrite()
        scope = interpreter._patch_lang(self.fn)
        try:
            return rewritten(*args, **kwargs)
        finally:
            scope.restore()

    saved = JITFunction.__call__
    JITFunction.__call__ = call
    try:
        yield
    finally:
        JITFunction.__call__ = saved


def run_interpreter(fn, case: Case, patches: tuple[str, ...] = ()) -> dict[str, np.ndarray]:
    from triton.runtime.interpreter import InterpretedFunction

    with contextlib.ExitStack() as stack:
        for name in (*REFERENCE, *patches):
            stack.enter_context(PATCHES[name]())
        stack.enter_context(_library_interpreted())
        stack.enter_context(np.errstate(all="ignore"))
        return launch(InterpretedFunction(fn), case, "cpu")


def _error(e: BaseException) -> str:
    last = traceback.extract_tb(e.__traceback__)[-1] if e.__traceback__ else None
    where = f" ({Path(last.filename).name}:{last.lineno})" if last else ""
    return f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}{where}"


def run_case(case: Case, folder: Path, device: str) -> tuple[Result, dict, dict]:
    """Run both sides and judge every output: (result, plate outputs, interpreter outputs)."""
    start = time.perf_counter()
    res = Result(case.index, "exact", features=case.features)
    fn = load_kernel(case, folder)
    try:
        want = run_interpreter(fn, case)
    except Exception as e:  # the generator made something the interpreter cannot run
        res.status, res.category, res.detail = "invalid", "interpreter-error", _error(e)
        res.seconds = time.perf_counter() - start
        return res, {}, {}
    try:
        got = run_plate(fn, case, device)
    except Exception as e:
        res.status, res.category, res.detail = "mismatch", f"plate-error:{type(e).__name__}", _error(e)
        res.seconds = time.perf_counter() - start
        return res, {}, want
    checks = compare.judge(case, got, want)
    failed = [n for n, (ok, _) in checks.items() if not ok]
    kinds = {b.name: b.check["kind"] for b in case.outputs()}
    if not failed:
        bounded = any(
            kinds[n] != "exact" and compare.differing(b.dtype, got[n], want[n]).any()
            for b in case.outputs()
            for n in [b.name]
        )
        res.status = "bounded" if bounded else "exact"
    else:
        res.detail = "; ".join(f"{n}: {checks[n][1]}" for n in failed)
        res.category = "+".join(sorted({kinds[n] for n in failed})) + ":" + _main_feature(case)
        res.rule = compare.explained_by_lanes(case, got, want, failed) or _explained_by_patch(fn, case, got)
        res.status = "explained" if res.rule else "mismatch"
    res.seconds = time.perf_counter() - start
    return res, got, want


def _explained_by_patch(fn, case: Case, got) -> str:
    """The patch rule (or, failing each alone, all applicable patch rules together) under which the
    interpreter agrees with plate, maybe with a lane rule for what is left, as "name+name"; '' if none."""
    rules = [r for r in compare.RULES if r.patch and r.applies(case.features)]
    tries = [[r] for r in rules] + ([rules] if len(rules) > 1 else [])
    for group in tries:
        want = run_interpreter(fn, case, tuple(r.patch for r in group))
        left = [n for n, (ok, _) in compare.judge(case, got, want).items() if not ok]
        lane_rule = compare.explained_by_lanes(case, got, want, left) if left else ""
        if not left or lane_rule:
            return "+".join([r.name for r in group] + ([lane_rule] if lane_rule else []))
    return ""


def _main_feature(case: Case) -> str:
    for prefix in ("dot:", "atomic:", "reduce:", "scan:", "math:", "fp8:"):
        for f in case.features:
            if f.startswith(prefix):
                return f.rsplit(":", 1)[0] if prefix in ("reduce:", "scan:") else f
    return "elementwise"
