"""The shims on Triton's JITFunction: a kernel's source lines read once per code object, a binder's generated
source compiled once, one syntax tree per source for Triton's readers of it (shims.py;
patches/triton/jit-source-lines-per-code.patch, jit-binder-compiled-once.patch, jit-parse-once-per-source.patch)."""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import inspect
import os
import sys
import types

import pytest
import torch
import triton
import triton.language as tl
import triton.runtime.jit as jit

from triton_plate_backend import shims


@pytest.fixture
def active(plate_active_driver):
    """PlateDriver as Triton's active driver (its "driver" shims installed), a fresh Triton cache."""
    return plate_active_driver


def _module_from(tmp_path, monkeypatch, name: str, text: str):
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop(name, None)
    return importlib.import_module(name), path


_KERNEL = """
def outer():
    def kernel(X, Y, N):
        offs = N{pad}
        return X + Y + offs
    return kernel
"""


def test_source_lines_read_once_per_code_until_the_file_changes(active, tmp_path, monkeypatch):
    assert shims.STATUS["JITFunction reads a kernel's source lines once per code object"] == "applied"
    assert isinstance(jit.inspect, shims._SourceLinesPerCode)
    assert shims._jit_source_lines_per_code() is False  # idempotent
    module, path = _module_from(tmp_path, monkeypatch, "plate_jit_source_lines", _KERNEL.format(pad=""))
    reads = []
    real = inspect.getsourcelines
    monkeypatch.setattr(inspect, "getsourcelines", lambda obj: (reads.append(obj), real(obj))[1])
    first, second = module.outer(), module.outer()  # two functions, one code object
    answers = [jit.inspect.getsourcelines(fn) for fn in (first, second, first)]
    assert answers[0] == answers[1] == answers[2] == real(first)
    assert answers[0][0][0].strip() == "def kernel(X, Y, N):" and answers[0][1] == 3
    assert reads == [first]  # inspect asked once
    # the file edited (another size and time): read again, the new lines
    path.write_text(_KERNEL.format(pad=" * 2"))
    stat = os.stat(path)
    os.utime(path, (stat.st_atime, stat.st_mtime + 10))
    edited = jit.inspect.getsourcelines(second)
    assert edited == real(second) and "offs = N * 2" in "".join(edited[0])
    assert len(reads) == 2
    # a JITFunction of each: the same source and line
    a, b = triton.JITFunction(first), triton.JITFunction(second)
    assert a.src == b.src and a.starting_line_number == b.starting_line_number == 3


def test_source_lines_of_a_wrapped_function_are_inspects(active):
    def inner(x):
        return x

    @functools.wraps(inner)
    def wrapper(x):
        return inner(x)

    assert jit.inspect.getsourcelines(wrapper) == inspect.getsourcelines(wrapper)
    assert jit.inspect.getsourcelines(wrapper)[0][0].strip() == "def inner(x):"
    assert jit.inspect.signature is inspect.signature  # every other name is inspect's


@triton.jit
def _offset(X, Y, N: tl.constexpr, C: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(Y + offs, tl.load(X + offs) + C)


def test_binder_source_compiled_once(active, monkeypatch):
    assert shims.STATUS["a JITFunction's binder source is compiled once"] == "applied"
    assert shims._jit_binder_compiled_once() is False  # idempotent
    compiles = []
    real = builtins.compile
    monkeypatch.setattr(builtins, "compile", lambda *a, **k: (compiles.append(a[0]), real(*a, **k))[1])
    first, second = triton.JITFunction(_offset.fn), triton.JITFunction(_offset.fn)
    x = torch.arange(16, dtype=torch.float32)
    for kernel, c in ((first, 1), (second, 2)):
        y = torch.empty_like(x)
        kernel[(1,)](x, y, N=16, C=c)
        torch.testing.assert_close(y, x + c)
    binders = [kernel.device_caches[0][4] for kernel in (first, second)]
    assert binders[0] is not binders[1] and binders[0].__code__ is binders[1].__code__
    assert len([s for s in compiles if isinstance(s, str) and "def dynamic_func" in s]) <= 1  # at most once (or before)
    # the code a plain exec in jit.py compiles, flags (jit.py's future imports) included
    backend = first.device_caches[0][3]
    monkeypatch.delattr(jit, "exec")
    plain = jit.create_function_from_signature(first.signature, first.params, backend)
    assert plain.__code__ == binders[0].__code__ and plain.__code__ is not binders[0].__code__
    assert plain.__code__.co_flags == binders[0].__code__.co_flags


def test_exec_stand_in_runs_code_objects_as_given():
    exec_ = shims._exec_compiling_once(0)
    space: dict = {}
    exec_(compile("a = 1", "<t>", "exec"), space)
    exec_("b = a + 1", space)
    exec_("b = a + 1", space, (other := {}))
    assert space["b"] == 2 and other == {"b": 2}


def test_no_jit_shim_where_triton_has_the_patches(monkeypatch):
    patched = types.SimpleNamespace(_source_lines=None, _compile_binder=None, inspect=inspect)
    monkeypatch.setitem(sys.modules, shims.JIT_MODULE, patched)
    assert shims._jit_source_lines_per_code() is False and patched.inspect is inspect
    assert shims._jit_binder_compiled_once() is False and not hasattr(patched, "exec")
    patched._parsed_tree = None
    patched.ast = ast
    assert shims._jit_parse_once_per_source() is False and patched.ast is ast


@triton.jit
def _plus(x, C: tl.constexpr = 1):
    y = x
    y += C  # the one node the code generator changes: a deep copy of it
    return y


@triton.jit
def _twice_plus(X, Y, N: tl.constexpr, C: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(X + offs)
    tl.store(Y + offs, _plus(x, C) + _plus(x))


def _compile_three(kernel) -> list[str]:
    """``kernel`` (_twice_plus) compiled and run for C = 0, 1, 2, results checked; the TTIR of each."""
    kernel.device_caches.clear()
    x = torch.arange(16, dtype=torch.float32)
    ttirs = []
    for c in range(3):
        y = torch.empty_like(x)
        ttirs.append(kernel[(1,)](x, y, N=16, C=c).asm["ttir"])
        torch.testing.assert_close(y, 2 * x + c + 1)
    return ttirs


def test_readers_share_one_tree_per_source(active, monkeypatch):
    assert shims.STATUS["Triton's readers of a @jit function's syntax tree share one per source"] == "applied"
    assert isinstance(jit.ast, shims._TreePerSource)
    assert shims._jit_parse_once_per_source() is False  # idempotent
    jit.ast._plate_kept.clear()
    sources = (_twice_plus.src, _plus.src)
    parsed = []
    real_parse = ast.parse
    monkeypatch.setattr(ast, "parse", lambda src, *a, **k: (parsed.append(src), real_parse(src, *a, **k))[1])
    ttirs = _compile_three(_twice_plus)  # three compiles, two call sites of _plus in each
    assert sorted(src for src in parsed if src in sources) == sorted(sources)  # each parsed once
    # the kept trees are what ast.parse makes: the compiles changed nothing in them
    for fn in (_twice_plus, _plus):
        kept = jit.ast._plate_kept[fn.src]
        assert ast.dump(kept, include_attributes=True) == ast.dump(real_parse(fn.src), include_attributes=True)
    # any other caller gets a tree of its own: a user's kernel.parse(), a direct ast.parse
    trees = [_twice_plus.parse(), _twice_plus.parse(), jit.ast.parse(_twice_plus.src)]
    assert len({id(tree) for tree in [*trees, jit.ast._plate_kept[_twice_plus.src]]}) == 4
    # the same TTIR from fresh trees (jit.py's own ast), compiled again
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")  # setattr would leave the knob set to its old value
    monkeypatch.setattr(jit, "ast", ast)
    parsed.clear()
    assert _compile_three(_twice_plus) == ttirs
    # what the tree per source saves: a parse per function generated (C = 1: both call sites are one function)
    assert len([src for src in parsed if src == _plus.src]) == 5


def test_kept_trees_are_bounded(active, monkeypatch):
    monkeypatch.setattr(shims, "_TREES_KEPT", 1)
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")  # setattr would leave the knob set to its old value
    jit.ast._plate_kept.clear()
    _compile_three(_twice_plus)
    assert len(jit.ast._plate_kept) == 1
