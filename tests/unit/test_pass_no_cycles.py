"""The passes' own functions leave no reference cycle behind: a closure that calls itself or its siblings
(a recursive walk nested in a pass) is a cycle with its cells, which keeps the tables it reads, and the IR
they name, alive until the cycle collector's next walk, and makes that walk longer (it runs right after a
compile stage). What the collector finds after lowering a kernel holds no function of the passes."""

from __future__ import annotations

import gc

import pytest
from ttir_fixtures import LOWERABLE, fixture_text

from triton_plate_backend.machine import get_machine
from triton_plate_backend.passes import affinity, demand, prefetch
from triton_plate_backend.passes.access import AccessAnalysis
from triton_plate_backend.passes.pipeline import generate, run_passes
from triton_plate_backend.ttir.parser import parse


def _garbage_functions(fn) -> list[str]:
    """The functions among what the cycle collector finds after fn() (each `module.qualname`)."""
    gc.collect()
    was_on = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        fn()
        gc.collect()
        found = [f"{o.__module__}.{o.__qualname__}" for o in gc.garbage if type(o).__name__ == "function"]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was_on:
            gc.enable()
    return found


def _compile(text: str, name: str, persistent: bool) -> None:
    """What the compiler's pir and pasm stages run: the passes (with `persistent` when asked) and code generation."""
    machine = get_machine("plate1")
    analysis = AccessAnalysis()
    sram = machine.core.sram_bytes if persistent else None
    module = run_passes(parse(text, name), analysis, persistent_sram=sram, persistent_groups=machine.total_domains)
    generate(module, None, machine, analysis)


@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("kernel", LOWERABLE)
def test_compile_leaves_no_function_in_a_cycle(kernel, persistent):
    affinity._substituted.cache_clear()  # (a first compile: the footprint folds run)
    text = fixture_text(kernel)
    found = _garbage_functions(lambda: _compile(text, kernel, persistent))
    assert [f for f in found if f.startswith("triton_plate_backend.")] == []


def _recursive_closure():
    def visit(n):
        return 0 if n == 0 else visit(n - 1)

    return visit(3)


def test_the_check_sees_a_recursive_closure():
    """The check above can fail: a recursive closure is found in the garbage."""
    assert _garbage_functions(_recursive_closure) == [f"{__name__}._recursive_closure.<locals>.visit"]


def test_demand_and_prefetch_walk_with_functions_of_their_own():
    """(what the fix was: the walks are module functions and methods, not closures of the pass)"""
    assert callable(demand._index) and callable(demand._define) and callable(demand._uses)
    assert callable(prefetch._invariant)
    assert callable(affinity._folded) and callable(affinity._fold_node)
