"""The shims on Triton's compile(): one MLIR context per thread for plate's compiles, one KernelMetadata and one
SpecializationProxy class per key set, the frontend's CodeGenerators emptied when ast_to_ttir returns and mapping
their global scope through module_map name by name, the files compile() has just put read from what was written
(shims.py; patches/triton/compile-mlir-context-reuse.patch, kernel-metadata-class-cached.patch,
code-generator-drops-its-state.patch, code-generator-maps-scope-by-name.patch, specialization-proxy-class-cached.patch,
compiled-kernel-from-compile-outputs.patch)."""

from __future__ import annotations

import inspect
import locale
import threading
import types

import pytest
import torch
import triton
import triton.compiler.compiler as compiler
import triton.language as tl
import triton.language.extra.libdevice as libdevice  # a module the backend's module_map maps
from triton.language.extra.libdevice import tanh as libdevice_tanh  # a function of that module

from triton_plate_backend import shims
from triton_plate_backend.compiler import PlateBackend


@pytest.fixture
def active(plate_active_driver):
    """PlateDriver as Triton's active driver (its "driver" shims installed), a fresh Triton cache."""
    return plate_active_driver


@triton.jit
def _add(X, Y, N: tl.constexpr, C: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(Y + offs, tl.load(X + offs) + C)


@triton.jit
def _scale(X, Y, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(Y + offs, tl.load(X + offs) * 2)


def _three_compiles(monkeypatch):
    """Compile and run _add three times (another constexpr each, results checked); the contexts their
    modules were built in, and the kernels."""
    contexts = []  # kept: ids stay unique
    make_ir = compiler.ASTSource.make_ir

    def recording_make_ir(self, target, options, codegen_fns, module_map, context):
        if self.fn is _add:
            contexts.append(context)
        return make_ir(self, target, options, codegen_fns, module_map, context)

    monkeypatch.setattr(compiler.ASTSource, "make_ir", recording_make_ir)
    _add.device_caches.clear()  # compiled again, not found in the function's in-memory cache
    x = torch.arange(16, dtype=torch.float32)
    kernels = []
    for c in range(3):
        y = torch.empty_like(x)
        kernels.append(_add[(1,)](x, y, N=16, C=c))
        torch.testing.assert_close(y, x + c)
    monkeypatch.setattr(compiler.ASTSource, "make_ir", make_ir)
    return contexts, kernels


def test_plate_compiles_in_one_context_per_thread(active, monkeypatch, tmp_path):
    loads = []  # the contexts Triton's dialects were loaded into
    load_dialects = compiler.ir._plate_ir.load_dialects
    monkeypatch.setattr(
        compiler.ir._plate_ir, "load_dialects", lambda context: (loads.append(context), load_dialects(context))[1]
    )
    assert shims.STATUS["compile() keeps one MLIR context per thread for plate"] == "applied"
    assert isinstance(compiler.ir, shims._ContextPerThread)
    assert shims._compile_context_per_thread() is False  # idempotent
    contexts, kept = _three_compiles(monkeypatch)
    assert len(contexts) == 3 and len({id(c) for c in contexts}) == 1
    assert not any(c is contexts[0] for c in loads[1:])  # loaded once (or before these compiles)
    # another thread gets its own context
    other = []
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "thread-cache"))
    thread = threading.Thread(target=lambda: other.extend(_three_compiles(monkeypatch)[0]))
    thread.start()
    thread.join()
    assert len(other) == 3 and len({id(c) for c in other}) == 1 and other[0] is not contexts[0]
    # the same three compiles with a fresh context each (a backend that does not ask): three contexts, and
    # every stage's text and the binary equal to the kept context's
    monkeypatch.setattr(PlateBackend, "reuse_mlir_context", False)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "fresh-cache"))
    fresh_contexts, fresh = _three_compiles(monkeypatch)
    assert len({id(c) for c in fresh_contexts}) == 3
    assert all(any(c is loaded for loaded in loads) for c in fresh_contexts)
    for a, b in zip(kept, fresh):
        assert a.asm["pbin"] == b.asm["pbin"]
        for ext in ("ttir", "pir", "pasm"):
            assert a.asm[ext] == b.asm[ext], ext


def test_context_stand_in_answers_compile_only(active):
    # any caller but compile() (and every other name of the bindings) gets the module's own answer
    assert compiler.ir.context() is not compiler.ir.context()
    assert compiler.ir.parse_mlir_module is compiler.ir._plate_ir.parse_mlir_module


def test_no_shim_where_triton_has_the_patches(monkeypatch):
    patched = types.SimpleNamespace(
        _compile_context=lambda backend: None, _kernel_metadata_type=lambda fields: None, ir=object()
    )
    monkeypatch.setitem(__import__("sys").modules, shims.COMPILER_MODULE, patched)
    ir = patched.ir
    assert shims._compile_context_per_thread() is False and patched.ir is ir
    assert shims._kernel_metadata_class_cached() is False


def test_kernels_share_one_metadata_class(active):
    assert shims.STATUS["CompiledKernel reuses one KernelMetadata class per key set"] == "applied"
    assert shims._kernel_metadata_class_cached() is False  # idempotent: the swapped code imports no namedtuple
    x = torch.arange(16, dtype=torch.float32)
    y = torch.empty_like(x)
    a = _add.warmup(x, y, N=16, C=1, grid=(1,))
    b = _scale.warmup(x, y, N=16, grid=(1,))
    c = _add.warmup(x, y, N=8, C=1, grid=(1,))
    assert type(a.metadata) is type(b.metadata) is type(c.metadata)
    assert type(a.metadata).__name__ == "KernelMetadata"
    assert type(a.metadata).__module__ == shims.COMPILER_MODULE
    assert a.metadata._fields == tuple(sorted(a.metadata._asdict()))
    assert a.metadata.name != b.metadata.name and a.metadata.hash != c.metadata.hash
    _scale[(1,)](x, y, N=16)
    torch.testing.assert_close(y, x * 2)


@triton.jit
def _where(X, Y, N: tl.constexpr, C: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(X + offs)
    y = x * C
    tl.store(Y + offs, tl.where(x < C, y, _twice(x)))


@triton.jit
def _twice(x):
    z = x + x
    return z


def test_a_compile_leaves_the_frontends_values_to_reference_counting(active):
    # Triton's CodeGenerators sit in reference cycles of their own; with the shim they are emptied when
    # ast_to_ttir returns, so what they held (the scopes' values, the builder) is not left for the collector
    import gc

    assert shims._code_generator_drops_its_state() is False  # installed with the driver: idempotent
    x = torch.arange(16, dtype=torch.float32)
    y = torch.empty_like(x)
    _where[(1,)](x, y, N=16, C=3.0)  # the lazy imports and first-compile caches, outside the count
    gc.collect()
    was = gc.get_debug()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        _where[(1,)](x, y, N=16, C=5.0)  # a new constexpr: the kernel and _twice compiled again
        gc.collect()
        found = list(gc.garbage)
    finally:
        gc.garbage.clear()
        gc.set_debug(was)
    torch.testing.assert_close(y, torch.where(x < 5, x * 5, x + x))
    names = {f"{type(o).__module__}.{type(o).__name__}" for o in found}
    generators = [o for o in found if type(o).__name__ == "CodeGenerator"]
    assert generators and all(not vars(g) for g in generators)  # found in cycles, but emptied
    assert "triton._C.libtriton.ir.builder" not in names
    # the scopes' values: gone with the generators (the types of the kernel's arguments stay, in the
    # prototype that ASTFunction.deserialize's recursive closure holds)
    assert "triton.language.core.tensor" not in names and "triton.language.core.constexpr" not in names


def test_no_frontend_shim_where_triton_empties_its_generators(monkeypatch):
    def ast_to_ttir(generator):  # what the patch's ast_to_ttir does, in the names the shim looks for
        generator.__dict__.clear()

    patched = types.SimpleNamespace(ast_to_ttir=ast_to_ttir, CodeGenerator=object)
    monkeypatch.setitem(__import__("sys").modules, shims.CODE_GENERATOR_MODULE, patched)
    assert shims._code_generator_drops_its_state() is False
    assert patched.ast_to_ttir is ast_to_ttir and patched.CodeGenerator is object


@triton.jit
def _tanh_twice(X, Y, N: tl.constexpr, C: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(X + offs)
    tl.store(Y + offs, libdevice.tanh(x) + libdevice_tanh(x) * C)


def _tanh_twice_scopes(init) -> tuple[list[dict], str]:
    """_tanh_twice compiled (fresh) with ``init`` as CodeGenerator.__init__: each generator's global scope as a
    plain dict (read whole after the compile), and the TTIR."""
    import triton.compiler.code_generator as code_generator

    scopes = []

    def recording_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        scopes.append(self.gscope)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(code_generator.CodeGenerator, "__init__", recording_init)
        patch.setenv("TRITON_ALWAYS_COMPILE", "1")  # a knob set by setattr stays set after the undo
        _tanh_twice.device_caches.clear()
        x = torch.linspace(-2, 2, 16)
        y = torch.empty_like(x)
        ttir = _tanh_twice[(1,)](x, y, N=16, C=3.0).asm["ttir"]
        torch.testing.assert_close(y, torch.tanh(x) * 4)
    return [dict(scope.items()) for scope in scopes], ttir


def test_generators_map_their_scope_name_by_name(active):
    import triton.compiler.code_generator as code_generator

    from triton_plate_backend import libdevice_api

    assert shims.STATUS["a CodeGenerator maps its global scope through module_map name by name"] == "applied"
    assert shims._code_generator_maps_scope_by_name() is False  # idempotent
    shimmed = code_generator.CodeGenerator.__init__
    scopes, ttir = _tanh_twice_scopes(shimmed)
    assert scopes and all(type(s) is dict for s in scopes)
    # Triton's own __init__ (every value mapped up front): the same scopes, value for value, and the same TTIR
    triton_scopes, triton_ttir = _tanh_twice_scopes(inspect.unwrap(shimmed))
    assert ttir == triton_ttir
    assert [list(s) for s in scopes] == [list(s) for s in triton_scopes]
    assert all(a[k] is b[k] for a, b in zip(scopes, triton_scopes) for k in a)
    assert scopes[0]["libdevice"] is libdevice_api and scopes[0]["libdevice_tanh"] is libdevice_api.tanh
    # read by name: mapped on the first read, once
    scope = shims._ModuleMappedScope(globals(), {"triton.language.extra.libdevice": libdevice_api})
    assert dict.__getitem__(scope, "libdevice") is libdevice  # not read yet: as given
    assert scope.get("libdevice") is libdevice_api and scope["libdevice_tanh"] is libdevice_api.tanh
    assert "libdevice" in scope and scope.get("no such global", 7) == 7 and scope["torch"] is torch
    with pytest.raises(KeyError):
        scope["no such global"]
    assert scope.copy() == dict(scope.items()) and list(scope.values()) == list(scope.copy().values())


def test_no_scope_shim_where_triton_maps_by_name(monkeypatch):
    patched = types.SimpleNamespace(_ModuleMappedScope=dict, CodeGenerator=type("CodeGenerator", (), {}))
    init = patched.CodeGenerator.__init__
    monkeypatch.setitem(__import__("sys").modules, shims.CODE_GENERATOR_MODULE, patched)
    assert shims._code_generator_maps_scope_by_name() is False and patched.CodeGenerator.__init__ is init


_proxies = []  # what the kernel's repr was handed, one per compile


@triton.jit(repr=lambda proxy: (_proxies.append(proxy), "_fill")[1])
def _fill(Y, N: tl.constexpr, C: tl.constexpr):
    tl.store(Y + tl.arange(0, N), tl.full((N,), C, tl.float32))


def test_compiles_share_one_specialization_proxy_class(active):
    import triton.compiler.code_generator as code_generator

    assert shims.STATUS["ast_to_ttir reuses one SpecializationProxy class"] == "applied"
    assert shims._specialization_proxy_class_cached() is False  # idempotent: the swapped code imports none
    assert "namedtuple" not in inspect.unwrap(code_generator.ast_to_ttir).__code__.co_names
    _proxies.clear()
    y = torch.empty(8)
    for c in (1.0, 2.0):
        _fill[(1,)](y, N=8, C=c)
        torch.testing.assert_close(y, torch.full((8,), c))
    first, second = _proxies[-2:]
    assert type(first) is type(second) and type(first).__name__ == "SpecializationProxy"
    assert type(first).__module__ == shims.CODE_GENERATOR_MODULE and first._fields == ("constants", "signature")
    assert first.constants["C"] == 1.0 and second.constants["C"] == 2.0  # each compile's values its own


def test_no_proxy_shim_where_triton_has_the_patch(monkeypatch):
    patched = types.SimpleNamespace(SpecializationProxy=object, ast_to_ttir=lambda: None)
    monkeypatch.setitem(__import__("sys").modules, shims.CODE_GENERATOR_MODULE, patched)
    assert shims._specialization_proxy_class_cached() is False


def test_what_a_put_wrote_is_taken_once(tmp_path, monkeypatch):
    from triton_plate_backend.cache_files import PlateFileCacheManager

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(shims, "_reading_written", True)
    manager = PlateFileCacheManager("key")
    text_path = manager.put("a\r\nb\rc \u00e9\n", "k.ttir", binary=False)
    data_path = manager.put(b"\x00\x01", "k.pbin")
    assert manager.put(b"\x02", "k.pbin") == data_path  # replaced by a rename: the last bytes kept
    with open(text_path, "rb") as f:
        assert shims._take_written(text_path) == (f.read(), ("a\r\nb\rc \u00e9\n", locale.getpreferredencoding(False)))
    assert shims._take_written(data_path) == (b"\x02", None)
    assert shims._take_written(text_path) is None and shims._take_written(data_path) is None
    monkeypatch.setattr(shims, "_reading_written", False)  # without the stand-in nothing is kept
    manager.put(b"\x03", "k.pbin")
    assert shims._take_written(data_path) is None


def test_a_just_written_file_reads_as_the_file(tmp_path, monkeypatch):
    import pathlib
    import pickle

    from triton_plate_backend.cache_files import PlateFileCacheManager

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(shims, "_reading_written", True)
    manager = PlateFileCacheManager("key")
    text = "line\r\nnext\rlast \u00e9\n"  # text mode's newline translation and the locale's encoding
    text_path = shims._WrittenFilePath(manager.put(text, "k.ttir", binary=False))
    data_path = shims._WrittenFilePath(manager.put(b"\x00\r\n\xff", "k.pbin"))
    on_disk = pathlib.Path(text_path).read_text()  # a plain Path reads the file and takes nothing
    assert on_disk == "line\nnext\nlast \u00e9\n"
    pathlib.Path(text_path).write_text("changed on disk")  # the written bytes answer once, then the file
    assert text_path.read_text() == on_disk and text_path.read_text() == "changed on disk"
    assert data_path.read_bytes() == b"\x00\r\n\xff"
    pathlib.Path(data_path).write_bytes(b"new")
    assert data_path.read_bytes() == b"new"
    assert type(pickle.loads(pickle.dumps(data_path))) is pathlib.PosixPath


def test_a_just_written_text_without_cr_reads_as_the_file(tmp_path, monkeypatch):
    """A text with no \\r is handed back as it was put (the very string), equal to what the file reads; one
    with \\r, or read in another encoding, is decoded from the bytes as the file is."""
    import pathlib

    from triton_plate_backend.cache_files import PlateFileCacheManager

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(shims, "_reading_written", True)
    manager = PlateFileCacheManager("key")
    text = "module {\n  tt.func @k() \u00e9\n}\n" * 3
    path = shims._WrittenFilePath(manager.put(text, "k.ttir", binary=False))
    read = path.read_text()
    assert read is text and read == pathlib.Path(path).read_text()
    manager.put(text, "k.ttir", binary=False)
    assert path.read_text(encoding="latin-1") == pathlib.Path(path).read_text(encoding="latin-1") != text
    manager.put("a\rb\n", "k.ttir", binary=False)
    assert path.read_text() == "a\nb\n" == pathlib.Path(path).read_text()


def test_a_compiled_kernel_holds_what_its_files_hold(active):
    import json
    import pathlib

    assert shims.STATUS["CompiledKernel reads the files compile() has just put from what was written"] == "applied"
    assert compiler.Path is shims._WrittenFilePath
    assert shims._compiled_kernel_reads_what_was_written() is False  # idempotent
    x = torch.arange(16, dtype=torch.float32)
    y = torch.empty_like(x)
    kernel = _add.warmup(x, y, N=16, C=7, grid=(1,))
    files = {pathlib.Path(p).suffix[1:]: p for p in kernel.metadata_group.values()}
    assert set(kernel.asm) == set(files) - {"json"} == {"source", "ttir", "pir", "pasm", "pbin"}
    for ext, asm in kernel.asm.items():
        assert asm == (pathlib.Path(files[ext]).read_bytes() if ext == "pbin" else pathlib.Path(files[ext]).read_text())
    assert kernel.metadata.hash == json.loads(pathlib.Path(files["json"]).read_text())["hash"]
    _add[(1,)](x, y, N=16, C=7)
    torch.testing.assert_close(y, x + 7)
