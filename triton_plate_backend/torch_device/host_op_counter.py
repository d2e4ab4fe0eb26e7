"""Host ops: the aten ops that ran on the host for plate tensors through the device's CPU fallback
(csrc/fallback.cpp) or a host kernel registered from Python (accumulation.py), counted and named by the
extension (csrc/host_ops.cpp).

Every op without a plate kernel computes its CPU kernel on the host, outside the modeled clock. The counts
cover the whole process (eager code and compiled graphs alike); ``host_op_scope()`` gives those of one
thread between two points (the host ops of one run of a compiled graph, say). Once
``watch_compiled_frames(True)``, the ops that run outside any scope while a torch.compile'd function runs
(its eager code at graph breaks, the frames Dynamo resumes, whatever they call, plate's eager kernels
included) are also kept apart, ``compiled_frame_host_ops()``; watching takes the GIL once per host op, so
it is off until asked for.

"While a compiled function runs" is read off the thread's Python stack at the host op (the extension walks
it, csrc/runtime.cpp): the innermost frame of a marked code object answers, ``COMPILED_FRAME_MARKS``: the
wrapper torch.compile returns (``compile_wrapper``, for functions and modules alike) says yes, unless
Dynamo's stance runs it eagerly (``torch.compiler.set_stance("force_eager")``: eager code, as before or
after it); Dynamo's frame callback and AOTAutograd's lazy backward compile say no (what a compile runs is
no op of the function). Dynamo's own frame hook cannot answer: it is unset in the frames Dynamo skips
(triton_plate_backend's, where the eager kernels send their uncovered cases to the host).
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterator
from types import CodeType

from . import _registration


def op_name(operator: str) -> str:
    """``aten::mm.out`` -> ``aten.mm``: the op without its overload, spelled as torch.ops spells it."""
    return operator.split(".", 1)[0].replace("::", ".")


def _named(counts: dict[str, int]) -> Counter[str]:
    named: Counter[str] = Counter()
    for operator, n in counts.items():
        named[op_name(operator)] += n
    return named


def host_ops() -> Counter[str]:
    """``{"aten.mm": 3, ...}``: the ops the host ran for plate tensors since the last reset."""
    return _named(_registration.extension()._host_ops())


def count_host_op(operator: str) -> None:
    """Count ``operator`` (``aten::mm.default``) as run on the host: for plate kernels registered from
    Python (accumulation.py) that compute on the host without passing through the CPU fallback."""
    _registration.extension()._count_host_op(operator)


def reset_host_ops() -> None:
    _registration.extension()._reset_host_ops()


def enter_scope() -> int:
    """Open a host-op scope on this thread; returns the token ``exit_scope`` takes."""
    return _registration.extension()._enter_host_op_scope()


def exit_scope(token: int) -> Counter[str]:
    """Close the scope ``token`` opened (and any left open inside it): the host ops this thread ran in it."""
    return _named(_registration.extension()._exit_host_op_scope(token))


@contextlib.contextmanager
def host_op_scope() -> Iterator[Counter[str]]:
    """``with host_op_scope() as ops:``; after the block, ``ops`` holds the host ops this thread ran in it."""
    ops: Counter[str] = Counter()
    token = enter_scope()
    try:
        yield ops
    finally:
        ops.update(exit_scope(token))


def _runs_compiled() -> bool:
    """Does a torch.compile'd function run compiled now? Not under the stance ``force_eager`` (Dynamo sets no
    frame hook then: the function runs as plain eager code)."""
    import torch._dynamo.eval_frame as eval_frame

    return getattr(getattr(eval_frame, "_stance", None), "stance", "default") != "force_eager"


# (module, attribute path, nested function or "", answer: a bool or a callable asked then): the frames that
# say whether a host op runs inside a compiled function. Names of torch 2.13's Dynamo and AOTAutograd; one no
# longer found is left out.
COMPILED_FRAME_MARKS: tuple[tuple[str, str, str, bool | Callable[[], bool]], ...] = (
    ("torch._dynamo.eval_frame", "_TorchDynamoContext.__call__", "compile_wrapper", _runs_compiled),
    ("torch._dynamo.convert_frame", "CatchErrorsWrapper.__call__", "", False),
    ("torch._functorch._aot_autograd.runtime_wrappers", "_AutogradBackwardCompiler.get_or_compile", "", False),
)


def _code_of(module: str, path: str, nested: str) -> CodeType | None:
    import importlib

    obj = importlib.import_module(module)
    for name in path.split("."):
        obj = getattr(obj, name, None)
    code = getattr(obj, "__code__", None)
    if not nested:
        return code
    found = [c for c in (code.co_consts if code else ()) if isinstance(c, CodeType) and c.co_name == nested]
    return found[0] if len(found) == 1 else None


def compiled_frame_marks() -> dict[CodeType, bool | Callable[[], bool]]:
    """``{code object: answer}`` of ``COMPILED_FRAME_MARKS`` (imports Dynamo)."""
    marks = {}
    for module, path, nested, answer in COMPILED_FRAME_MARKS:
        code = _code_of(module, path, nested)
        if code is not None:
            marks[code] = answer
    return marks


def watch_compiled_frames(on: bool = True) -> None:
    _registration.extension()._watch_compiled_frames(compiled_frame_marks() if on else None)


def compiled_frame_host_ops() -> Counter[str]:
    """The host ops a compiled function's eager code ran (outside its graphs) since the last reset."""
    return _named(_registration.extension()._compiled_frame_host_ops())


def reset_compiled_frame_host_ops() -> None:
    _registration.extension()._reset_compiled_frame_host_ops()
