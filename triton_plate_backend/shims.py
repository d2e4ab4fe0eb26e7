"""THE module of runtime patches to PyTorch (every place where PyTorch 2.13 hard-codes cuda/xpu) and to
Triton (where Triton assumes a device clock that runs at device speed). No other module of plate patches
either library.

Each shim names the upstream patch (in patches/pytorch/ or patches/triton/) that makes it unnecessary, and
checks first whether the running library already has that patch's behaviour: then it changes nothing.
This module's source enters Inductor's cache keys (the Inductor integration's pass hashes it), so changing a
shim gives a fresh compile; a decision that varies at run time still reads the Inductor integration's config
(which is in the key).

Shims are installed in three groups, ``Shim.when``, by whoever is there first to need them:

- ``"device"``: when the torch device registers (torch_device, at torch's autoload), since eager code or a
  fresh process (Inductor's autotuning subprocess) can ask before the Inductor integration is imported;
  their modules are patched when they are imported (an import finder), since importing them costs a second;
- ``"driver"``: when plate's Triton driver is built (Triton builds the active driver only);
- ``"inductor"``: when the Inductor integration registers (``apply(Integration(...))``); the shims that need
  its answers (its DeviceInterface, its GEMM-template and layout policies) take them from the
  ``Integration`` it hands over, since this floor never imports it.

``apply()`` installs every group (idempotent); ``STATUS`` says, per shim, "applied" or "not needed".

Not shims: entries the Inductor integration adds to Inductor's own registries (lowerings, decompositions,
``register_backend_for_device``, ``register_benchmarker``: the extension points Inductor offers), a Triton
knob set through ``triton.knobs`` (cache_files.py), and the fuzzer's reference runs of Triton's interpreter
(fuzz/interpreter_patches.py, fuzz/runner.py), which patch the interpreter inside a ``with`` block and undo
it on exit.
"""

from __future__ import annotations

import inspect
import io
import locale
import pathlib
import sys
import threading
import types
from collections.abc import Callable
from dataclasses import dataclass

from .errors import PlateError

BACKEND = "plate"
WHEN = ("device", "driver", "inductor")


@dataclass(frozen=True)
class Shim:
    name: str
    patch: str  # the file under patches/ whose upstream merge removes this shim
    apply: Callable[[], bool]  # True: patched now (or on import); False: the library already behaves so
    when: str  # one of WHEN: who installs it


@dataclass(frozen=True)
class Integration:
    """What the Inductor integration hands the shims that ask it, when it registers."""

    device_interface: type  # its torch._dynamo DeviceInterface
    use_gemm_templates: Callable[[], bool]  # is_big_gpu's answer for plate
    use_layout_optimization: Callable[[], bool]  # channels-last convolutions on plate


_integration: Integration | None = None


def integration() -> Integration:
    if _integration is None:
        raise PlateError(
            "the Inductor shims need the integration's answers: import plate's Inductor integration first "
            "(it calls shims.apply(shims.Integration(...)) when it registers)"
        )
    return _integration


# ---- patching a module now or when it is imported -------------------------------------------------------
def _patch_now_or_on_import(fullname: str, patch) -> bool:
    """Run ``patch(module)`` on the module ``fullname`` now if it is imported, else once its code has run
    (an import finder). True: patched now, or will be on import; False: ``patch`` found nothing to do."""
    module = sys.modules.get(fullname)
    if module is not None:
        return patch(module)
    if not any(isinstance(finder, _PatchOnImport) and finder.fullname == fullname for finder in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport(fullname, patch))
    return True


class _PatchOnImport:
    """Finds nothing itself: for ``fullname`` it takes the spec the other finders give and patches the
    module once its code has run; then it leaves sys.meta_path."""

    def __init__(self, fullname: str, patch) -> None:
        self.fullname = fullname
        self.patch = patch

    def find_spec(self, fullname, path, target=None):
        if fullname != self.fullname:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        for finder in sys.meta_path:
            find_spec = getattr(finder, "find_spec", None)
            spec = find_spec(fullname, path, target) if find_spec is not None else None
            if spec is not None:
                break
        else:
            return None
        exec_module = spec.loader.exec_module
        patch = self.patch

        def exec_then_patch(module):
            exec_module(module)
            patch(module)

        spec.loader.exec_module = exec_then_patch  # this module's own loader object
        return spec


# ---- get_interface_for_device: the PrivateUse1 device answers ("device") --------------------------------
DEVICE_INTERFACE_MODULE = "torch._dynamo.device_interface"


def _device_interface_discovery() -> bool:
    """Dynamo's device registry asks nothing of the PrivateUse1 device: a fresh process whose first question
    is ``get_interface_for_device("plate")`` (Inductor's autotuning subprocess) would raise
    NotImplementedError. Patched, asked about the PrivateUse1 device while it has no interface registered, it
    registers the ``DeviceInterface`` torch.plate answers (torch_device's compiler hook, which imports the
    integration). torch._dynamo is not imported when the device registers: patched on import."""
    return _patch_now_or_on_import(DEVICE_INTERFACE_MODULE, _patch_get_interface_for_device)


def _patch_get_interface_for_device(module) -> bool:
    """get_interface_for_device is imported by name into many modules: no rebinding reaches them all, so
    the shared function object's code is swapped for "the built-in answer, or else the PrivateUse1
    device's" (the same shape as the has_triton shim)."""
    original = module.get_interface_for_device
    namespace = module.__dict__
    if "_plate_builtin_get_interface_for_device" in namespace or _asks_privateuse1(original):
        return False
    namespace["_plate_builtin_get_interface_for_device"] = types.FunctionType(
        original.__code__, namespace, "get_interface_for_device_builtin", original.__defaults__, original.__closure__
    )
    namespace["_plate_register_privateuse1_interface"] = _register_privateuse1_interface
    original.__code__ = _get_interface_for_device_or_privateuse1.__code__
    return True


def _asks_privateuse1(function) -> bool:
    """Whether PyTorch's own function already asks the PrivateUse1 device (a PyTorch with the patch); a
    function whose source is not on disk (a build without .py files) is taken not to."""
    try:
        return "privateuse1" in inspect.getsource(function)
    except (OSError, TypeError):
        return False


def _get_interface_for_device_or_privateuse1(device):  # its code replaces the original's: runs in its module
    try:
        return _plate_builtin_get_interface_for_device(device)  # noqa: F821
    except NotImplementedError:
        if not _plate_register_privateuse1_interface(device):  # noqa: F821
            raise
    return _plate_builtin_get_interface_for_device(device)  # noqa: F821


def _register_privateuse1_interface(device) -> bool:
    """What device-interface-privateuse1.patch adds: an unregistered name of the PrivateUse1 device
    ("plate", "plate:0") gets the interface its device module answers. False: not that device, or no answer."""
    import torch

    key = device.type if isinstance(device, torch.device) else str(device)
    name = torch._C._get_privateuse1_backend_name()
    if key.partition(":")[0] != name:
        return False
    interface = getattr(getattr(torch, name, None), "DeviceInterface", None)  # loads the integration
    if interface is None:
        return False
    module = sys.modules[DEVICE_INTERFACE_MODULE]
    if key not in module.device_interfaces:
        module.register_interface_for_device(key, interface)
    return True


# ---- flex_attention: the device check ("device") --------------------------------------------------------
FLEX_ATTENTION_MODULE = "torch.nn.attention.flex_attention"


def _flex_attention_device_check() -> bool:
    """``torch.nn.attention.flex_attention._validate_device`` refuses every device outside {cuda, cpu, xpu,
    hpu, mps} before anything runs, though flex_attention's eager path (its math reference, traced by Dynamo)
    and Inductor's flex templates (Triton kernels) need nothing of the device but its ops and its Triton. The
    patched check lets the PrivateUse1 device's tensors through and asks the original about every other
    device. Eager code can call flex_attention before the integration is imported, and the user imports it
    later (importing it costs a second): patched on import."""
    return _patch_now_or_on_import(FLEX_ATTENTION_MODULE, _patch_flex_attention_validate_device)


def _patch_flex_attention_validate_device(module) -> bool:
    """flex_attention looks ``_validate_device`` up in its module at each call (Dynamo too, when it traces the
    call): rebinding the module's name reaches every caller."""
    import torch

    original = module._validate_device
    name = torch._C._get_privateuse1_backend_name()  # a constant for Dynamo: fixed once the device registered
    if getattr(original, "_plate_patch", False) or _flex_accepts(original, torch.device(name)):
        return False

    def _validate_device(query, key, value):
        if query.device.type == name:
            return None
        return original(query, key, value)

    _validate_device._plate_patch = True
    _validate_device.__wrapped__ = original
    module._validate_device = _validate_device
    return True


def _flex_accepts(validate_device, device) -> bool:
    """Whether PyTorch's own check already lets tensors of ``device`` through (a PyTorch with the patch): asked
    with stand-ins that carry only what the check reads."""
    stand_in = types.SimpleNamespace(device=device, requires_grad=False, is_nested=False)
    try:
        validate_device(stand_in, stand_in, stand_in)
    except (ValueError, NotImplementedError, AttributeError):
        return False
    return True


# ---- triton.testing.do_bench on the modeled clock ("driver") ---------------------------------------------
def _do_bench_on_modeled_clock() -> bool:
    """With a driver whose ``modeled_clock`` is set (plate's) active, ``triton.testing.do_bench`` hands its
    loop to that driver's ``get_benchmarker()``. do_bench repeats a kernel until ``rep`` ms of device time
    are filled; on the modeled clock a 2 us kernel would be simulated ~10000 times for rep=20. Libraries call
    it directly (FlagGems' and Liger-Kernel's tuners, ``@triton.autotune(warmup=, rep=)``): they look it up
    in triton.testing at each call, so rebinding it there reaches them. Any other driver keeps the original
    loop."""
    import triton.testing

    original = triton.testing.do_bench
    if getattr(original, "_plate_shim", False) or "modeled_clock" in inspect.getsource(original):
        return False

    def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean"):
        from triton import runtime

        active = runtime.driver.active
        if getattr(active, "modeled_clock", False):
            bench = active.get_benchmarker()
            return bench(
                fn, warmup=warmup, rep=rep, grad_to_none=grad_to_none, quantiles=quantiles, return_mode=return_mode
            )
        return original(fn, warmup, rep, grad_to_none, quantiles, return_mode)

    do_bench._plate_shim = True
    do_bench.__wrapped__ = original
    triton.testing.do_bench = do_bench
    return True


# ---- compile(): one MLIR context per thread for a backend that asks ("driver") ---------------------------
COMPILER_MODULE = "triton.compiler.compiler"
CODE_GENERATOR_MODULE = "triton.compiler.code_generator"


class _ContextPerThread:
    """Stands for ``triton.compiler.compiler.ir`` (the MLIR bindings module): every name is the module's, but
    ``context()`` asked by ``compile()`` for an AST source whose backend sets ``reuse_mlir_context`` (plate's)
    returns the calling thread's kept context for that backend class, made at its first compile, and
    ``load_dialects`` loads Triton's dialects into a kept context once (compile() asks again at each compile).
    Every other caller, the IR-file path (``ir_source``) and every other backend get a fresh context, as
    before."""

    def __init__(self, ir, compile_code) -> None:
        self._plate_ir = ir
        self._plate_compile_code = compile_code
        self._plate_kept = threading.local()

    def __getattr__(self, name):
        return getattr(self._plate_ir, name)

    def _kept_contexts(self) -> dict:
        """This thread's kept contexts: {backend class: context}."""
        kept = self._plate_kept.__dict__
        if "contexts" not in kept:
            kept["contexts"], kept["loaded"] = {}, []
        return kept["contexts"]

    def context(self):
        caller = sys._getframe(1)
        if caller.f_code is self._plate_compile_code:
            names = caller.f_locals
            backend = names.get("backend")
            if names.get("ir_source") is False and getattr(backend, "reuse_mlir_context", False):
                contexts = self._kept_contexts()
                context = contexts.get(type(backend))
                if context is None:
                    context = contexts[type(backend)] = self._plate_ir.context()
                return context
        return self._plate_ir.context()

    def load_dialects(self, context) -> None:
        """Once per kept context: loading Triton's dialects again into a context that has them costs as much
        as the first time (~1 ms of CPU in Triton 3.7)."""
        contexts = self._kept_contexts()
        loaded = self._plate_kept.loaded
        if any(context is done for done in loaded):
            return
        self._plate_ir.load_dialects(context)
        if any(context is kept for kept in contexts.values()):
            loaded.append(context)


def _compile_context_per_thread() -> bool:
    """What compile-mlir-context-reuse.patch adds: Triton's ``compile()`` makes a fresh MLIR context and loads
    Triton's dialects into it per compile (~1.2 ms of CPU, as much as a small kernel's frontend); for a backend
    that sets ``reuse_mlir_context`` it keeps one per thread. compile() looks ``ir`` up in its module's
    globals at each call: rebinding it there to a stand-in whose ``context()`` answers for compile() reaches
    it, and no other module (the frontend imports its own ``ir``)."""
    module = sys.modules.get(COMPILER_MODULE)
    if module is None:
        import triton.compiler.compiler as module
    if hasattr(module, "_compile_context") or isinstance(module.ir, _ContextPerThread):
        return False  # the patch is in (it reads reuse_mlir_context), or the stand-in is
    compile_code = inspect.unwrap(module.compile).__code__  # Triton's, under any wrapper (a profiler's)
    module.ir = _ContextPerThread(module.ir, compile_code)
    return True


# ---- CompiledKernel / ast_to_ttir: one namedtuple class per set of fields ("driver") ---------------------
_namedtuple_types: dict[tuple[str, str, tuple[str, ...]], type] = {}


def _namedtuple_kept(typename, field_names, module: str) -> type:
    """``collections.namedtuple(typename, field_names)`` as called from ``module``: one class per name and
    tuple of fields, made at the first call (every kernel of a backend has the same ones)."""
    from collections import namedtuple

    key = (module, typename, tuple(field_names))
    cls = _namedtuple_types.get(key)
    if cls is None:
        cls = _namedtuple_types.setdefault(key, namedtuple(typename, key[2], module=module))
    return cls


def _kernel_metadata_type(typename, field_names):
    """``collections.namedtuple`` for ``CompiledKernel.__init__``, in Triton's module as namedtuple would
    name it there."""
    return _namedtuple_kept(typename, field_names, COMPILER_MODULE)


def _specialization_proxy_type(typename, field_names):
    """``collections.namedtuple`` for ``ast_to_ttir`` (its ``SpecializationProxy``), in its module."""
    return _namedtuple_kept(typename, field_names, CODE_GENERATOR_MODULE)


def _import_namedtuple_from_here(function, factory) -> bool:
    """Swap ``function``'s code for the same code whose one ``from collections import namedtuple`` imports
    this module's ``factory`` instead (the two names of that import statement renamed, nothing else), so
    no line of Triton's function is copied here. False where the code imports otherwise (swapped already,
    or another Triton's)."""
    import dis

    code = function.__code__
    renames = {"collections": __name__, "namedtuple": factory.__name__}
    uses = [(i.opname, i.argval) for i in dis.get_instructions(code) if i.opcode in dis.hasname]
    if sorted(u for u in uses if u[1] in renames) != [("IMPORT_FROM", "namedtuple"), ("IMPORT_NAME", "collections")]:
        return False
    function.__code__ = code.replace(co_names=tuple(renames.get(name, name) for name in code.co_names))
    return True


def _kernel_metadata_class_cached() -> bool:
    """What kernel-metadata-class-cached.patch does: ``CompiledKernel.__init__`` builds a ``KernelMetadata``
    namedtuple class per kernel it compiles or loads (~0.17 ms of CPU and ~74 objects in reference cycles
    for the collector: two per test_core test). Its ``from collections import namedtuple`` is the one place
    it names the factory: it imports ``_kernel_metadata_type`` instead. Applies to every backend's kernels,
    as the patch does: a class per key set, each kernel's values its own."""
    module = sys.modules.get(COMPILER_MODULE)
    if module is None:
        import triton.compiler.compiler as module
    if hasattr(module, "_kernel_metadata_type"):
        return False  # the patch is in
    return _import_namedtuple_from_here(module.CompiledKernel.__init__, _kernel_metadata_type)


def _specialization_proxy_class_cached() -> bool:
    """What specialization-proxy-class-cached.patch does: ``ast_to_ttir`` builds a ``SpecializationProxy``
    namedtuple class per compile (~0.04 ms of CPU, and a class with its methods in reference cycles) for
    one instance it hands to the kernel's ``repr``; its ``from collections import namedtuple`` imports
    ``_specialization_proxy_type`` instead: one class, each compile's instance its own. Triton's function
    under plate's wrapper (``__wrapped__``, the shim below) is the one swapped."""
    module = sys.modules.get(CODE_GENERATOR_MODULE)
    if module is None:
        import triton.compiler.code_generator as module
    if hasattr(module, "SpecializationProxy"):
        return False  # the patch is in (one class at module level)
    return _import_namedtuple_from_here(inspect.unwrap(module.ast_to_ttir), _specialization_proxy_type)


# ---- CompiledKernel: the files compile() has just put, read from what was written ("driver") --------------
_written = threading.local()  # .files: {path: (the bytes this thread's last put there wrote, the text or None)}
_WRITTEN_KEPT = 64  # a compile writes seven files; past this many not taken the memo starts again
_reading_written = False  # the stand-in below is installed: what is written is kept for it


def remember_written(path: str, payload: bytes, text: tuple[str, str] | None = None) -> None:
    """Plate's cache manager (cache_files.py) tells what it has just written at ``path``: kept for the read
    that follows (once the stand-in below is installed). ``text``: (the text, the encoding it was written
    in) where the payload is a text's."""
    if not _reading_written:
        return
    files = _written.__dict__.setdefault("files", {})
    if len(files) >= _WRITTEN_KEPT:
        files.clear()
    files[path] = (payload, text)


def _take_written(path: str) -> tuple[bytes, tuple[str, str] | None] | None:
    """(the bytes, the text) this thread's last put at ``path`` wrote, once (None: not kept, or taken already).
    Triton's compile() hands CompiledKernel the paths of the files it has just put, and CompiledKernel reads
    each back: what it would read is what was written, byte for byte (a concurrent writer of the same entry
    writes the same compile's output). Taken once, so any later read goes to the file."""
    files = _written.__dict__.get("files")
    return files.pop(path, None) if files else None


class _WrittenFilePath(pathlib.PosixPath):
    """``pathlib.Path`` for triton.compiler.compiler: the same paths, but ``read_text()`` / ``read_bytes()``
    of a file this thread's plate cache manager has just written, not read since, answer from what it
    wrote (``remember_written``) as the file would; any other read goes to the file. Pickled as a plain
    PosixPath.

    ``read_text()`` of a text with no ``\\r`` in it, in the encoding it was written in, is that text: text
    mode wrote it with ``\\n`` as ``os.linesep`` and reads every line end back as ``\\n``, and the
    encoding's decode undoes its (strict) encode. Otherwise the bytes are decoded as ``read_text`` decodes
    them (``io.TextIOWrapper`` over the bytes: ~6 us a file more, five text files a compile)."""

    __slots__ = ()

    def read_text(self, encoding=None, errors=None):
        kept = _take_written(str(self))
        if kept is None:
            return super().read_text(encoding, errors)
        payload, text = kept
        if text is not None and encoding is None and errors is None:
            written, written_in = text
            if "\r" not in written and written_in == locale.getpreferredencoding(False):
                return written
        return io.TextIOWrapper(io.BytesIO(payload), encoding=io.text_encoding(encoding), errors=errors).read()

    def read_bytes(self):
        kept = _take_written(str(self))
        return kept[0] if kept is not None else super().read_bytes()

    def __reduce__(self):
        return pathlib.PosixPath, (str(self),)


def _compiled_kernel_reads_what_was_written() -> bool:
    """What compiled-kernel-from-compile-outputs.patch does: ``compile()`` puts each stage's output and the
    metadata in the cache, then ``CompiledKernel.__init__`` reads all six files back through ``Path``
    (~0.15 ms of CPU per compile on tmpfs, ~25 us a file). compiler.py looks ``Path`` up in its module's
    globals: a ``Path`` there whose two reads answer for the files plate's cache manager has just written
    reaches it (and the module's other ``Path`` uses, which read no file this thread has just written, or
    read it as it is) and no other module. POSIX only (``Path`` is ``PosixPath`` there). The patch's
    Triton hands CompiledKernel the outputs (``_outputs``): nothing to do."""
    import os

    module = sys.modules.get(COMPILER_MODULE)
    if module is None:
        import triton.compiler.compiler as module
    if "_outputs" in inspect.signature(module.CompiledKernel.__init__).parameters:
        return False  # the patch is in
    if os.name != "posix" or module.__dict__.get("Path") is not pathlib.Path:
        return False  # another platform, or the stand-in is there already
    global _reading_written
    _reading_written = True
    module.Path = _WrittenFilePath
    return True


# ---- the frontend: a CodeGenerator's state dropped when ast_to_ttir returns ("driver") ------------------
_generators = threading.local()  # .made: the CodeGenerators of the ast_to_ttir call running in this thread


def _code_generator_drops_its_state() -> bool:
    """What code-generator-drops-its-state.patch does: once ``ast_to_ttir`` has its module, the
    CodeGenerators it made (the kernel's and one per called function) drop their attributes. Each one is
    held by reference cycles of its own (the name-lookup closures it stores, a recursive
    ``_sanitize_value`` closure per assignment), so everything it references (its scopes' constexprs and
    tensors, lists, dicts, the ir.builder) waited for the cycle collector: ~900 objects per test_core test,
    the young collections' work that the interpreter's runs do not have. Dropped, they go by reference
    counting. Only after a successful return: an error's traceback keeps the generators whole. The patch's
    Triton clears them itself (``clear`` and ``__dict__`` among ``ast_to_ttir``'s names): nothing to do."""
    module = sys.modules.get(CODE_GENERATOR_MODULE)
    if module is None:
        import triton.compiler.code_generator as module
    to_ttir = module.ast_to_ttir
    if getattr(to_ttir, "_plate_drops_generators", False) or {"clear", "__dict__"} <= set(to_ttir.__code__.co_names):
        return False
    init = module.CodeGenerator.__init__

    def __init__(self, *args, **kwargs):  # noqa: N807 - CodeGenerator's own, recording the instance
        made = getattr(_generators, "made", None)
        if made is not None:
            made.append(self)
        init(self, *args, **kwargs)

    def ast_to_ttir(*args, **kwargs):
        outer = getattr(_generators, "made", None)
        _generators.made = made = []
        try:
            ttir = to_ttir(*args, **kwargs)
        finally:
            _generators.made = outer
        for generator in made:
            generator.__dict__.clear()
        return ttir

    ast_to_ttir._plate_drops_generators = True
    ast_to_ttir.__wrapped__ = to_ttir
    module.CodeGenerator.__init__ = __init__
    module.ast_to_ttir = ast_to_ttir
    return True


# ---- the frontend: a CodeGenerator's global scope mapped through module_map name by name ("driver") ------
class _ModuleMappedScope(dict):
    """A CodeGenerator's global scope: the names and values of the scope it was given (copied when it is made,
    as Triton's copy is), each value mapped through the backend's ``module_map`` when its name is first read
    (a module named in the map: the map's module; a value whose ``__module__`` is named in the map: the map's
    module's attribute of its name), as Triton maps every value up front. A generator reads its scope by name
    only (``get``, ``in``, ``[]``: its global lookup, ``_is_constexpr_global``, ``ContainsReturnChecker``), and
    a kernel reads a few of its module's hundreds of globals (test_core's: 303, ~0.1 ms of CPU to map them all,
    once per CodeGenerator: the kernel's and one per called function). Whole-scope reads map every name first."""

    __slots__ = ("_plate_module_map", "_plate_done")

    def __init__(self, scope, module_map) -> None:
        super().__init__(scope)
        self._plate_module_map = module_map
        self._plate_done: set = set()  # the names whose value is mapped

    def _plate_mapped(self, name):
        value = dict.__getitem__(self, name)
        if name not in self._plate_done:
            module_map = self._plate_module_map
            if isinstance(value, types.ModuleType):
                value = module_map.get(value.__name__, value)
            else:
                module = getattr(value, "__module__", "")
                if module in module_map:
                    value = getattr(module_map[module], value.__name__)
            dict.__setitem__(self, name, value)
            self._plate_done.add(name)
        return value

    def __getitem__(self, name):
        return self._plate_mapped(name)

    def get(self, name, default=None):
        return self._plate_mapped(name) if name in self else default

    def _plate_map_all(self) -> None:
        for name in list(self):
            self._plate_mapped(name)

    def values(self):
        self._plate_map_all()
        return super().values()

    def items(self):
        self._plate_map_all()
        return super().items()

    def copy(self):
        self._plate_map_all()
        return dict(super().items())


_NO_GLOBALS: dict = {}  # what Triton's CodeGenerator.__init__ maps now: nothing


def _code_generator_maps_scope_by_name() -> bool:
    """What code-generator-maps-scope-by-name.patch does: ``CodeGenerator.__init__`` maps every value of its
    global scope through ``module_map`` (an ``isinstance`` and a ``getattr`` of ``__module__`` per name: ~0.1 ms
    for test_core's 303 globals, twice a compile on average); it now gets an empty scope to map and its scope is
    a ``_ModuleMappedScope`` of the one it was given. The one difference: a value whose mapping fails (a name
    ``module_map``'s module lacks) fails the compile only where the kernel reads that global, not in every
    kernel of its module. A ``module_map`` of None (which Triton's loop cannot map a module through) goes to
    Triton's ``__init__`` as it is. The patch's Triton has ``_ModuleMappedScope``: nothing to do."""
    module = sys.modules.get(CODE_GENERATOR_MODULE)
    if module is None:
        import triton.compiler.code_generator as module
    init = module.CodeGenerator.__init__
    if hasattr(module, "_ModuleMappedScope") or getattr(init, "_plate_maps_by_name", False):
        return False

    def __init__(self, context, prototype, gscope, *args, **kwargs):  # noqa: N807 - CodeGenerator's own
        module_map = kwargs.get("module_map")
        if module_map is None:
            return init(self, context, prototype, gscope, *args, **kwargs)
        init(self, context, prototype, _NO_GLOBALS, *args, **kwargs)
        self.gscope = _ModuleMappedScope(gscope, module_map)

    __init__._plate_maps_by_name = True
    __init__.__wrapped__ = init
    module.CodeGenerator.__init__ = __init__
    return True


# ---- JITFunction: a kernel's source lines and its binder's code, once per kernel ("driver") -------------
JIT_MODULE = "triton.runtime.jit"
_KEPT_MAX = 4096  # kept source lines / binder codes: past this the memo starts again (a test suite's kernels)


class _SourceLinesPerCode:
    """Stands for ``inspect`` in triton.runtime.jit: every name is inspect's, but ``getsourcelines`` of a plain
    function (no ``__wrapped__``) answers from what it found for the same code object before, while linecache
    holds the same lines of its file (the list inspect read them from, after ``linecache.checkcache`` as
    inspect does: an edited file is read again). ``JITCallable.__init__`` asks it for every JITFunction made:
    test_core makes eight per test of test_binary (four ``@triton.jit`` in the test's body, four
    ``patch_kernel`` copies of them), all of a few code objects, and each answer tokenizes the function's
    lines (~0.15 ms of CPU). The answer is a function of the code object and the file's lines only, so it is
    the one inspect gives."""

    def __init__(self, inspect_module) -> None:
        self._plate_inspect = inspect_module
        self._plate_kept: dict[int, tuple] = {}  # id(code): (code, the file's lines, source lines, first line)

    def __getattr__(self, name):
        return getattr(self._plate_inspect, name)

    def getsourcelines(self, obj):
        found = self._plate_inspect
        if type(obj) is not types.FunctionType or hasattr(obj, "__wrapped__"):
            return found.getsourcelines(obj)
        import linecache

        code = obj.__code__
        filename = code.co_filename
        linecache.checkcache(filename)
        kept = self._plate_kept.get(id(code))
        if kept is not None and kept[0] is code and kept[1] is _cached_lines(linecache, filename):
            return list(kept[2]), kept[3]
        lines, first = found.getsourcelines(obj)
        read = _cached_lines(linecache, filename)
        if read is not None and found.getsourcefile(obj) == filename:  # the lines inspect read
            if len(self._plate_kept) >= _KEPT_MAX:
                self._plate_kept.clear()
            self._plate_kept[id(code)] = (code, read, tuple(lines), first)
        return lines, first


def _cached_lines(linecache, filename: str) -> list | None:
    """The list of lines linecache holds for ``filename`` (None: none, or a lazy entry not read yet)."""
    entry = linecache.cache.get(filename)
    return entry[2] if entry is not None and len(entry) == 4 else None


def _jit_source_lines_per_code() -> bool:
    """What jit-source-lines-per-code.patch does: ``JITCallable.__init__`` reads a kernel's source lines
    (``inspect.getsourcelines``) once per code object while its file is unchanged. triton.runtime.jit looks
    ``inspect`` up in its module's globals: rebinding it there to ``_SourceLinesPerCode`` reaches it and no
    other module. The patch's Triton has ``_source_lines``: nothing to do."""
    module = sys.modules.get(JIT_MODULE)
    if module is None:
        import triton.runtime.jit as module
    if hasattr(module, "_source_lines") or isinstance(module.inspect, _SourceLinesPerCode):
        return False
    module.inspect = _SourceLinesPerCode(module.inspect)
    return True


def _exec_compiling_once(flags: int):
    """An ``exec`` for triton.runtime.jit: a source string is compiled once (with ``flags``: the future
    features a string exec'd from that module compiles with) and its code run in the namespace given, so
    every binder made from the same generated source runs the same code, as a fresh compile would."""
    import builtins

    codes: dict[str, types.CodeType] = {}

    def exec_(source, globals=None, locals=None, /):  # noqa: A002 - exec's own parameter names
        if type(source) is not str:
            return builtins.exec(source, globals, locals)
        code = codes.get(source)
        if code is None:
            code = compile(source, "<string>", "exec", flags, dont_inherit=True)
            if len(codes) >= _KEPT_MAX:
                codes.clear()
            codes[source] = code
        return builtins.exec(code, globals, locals)

    exec_._plate_compiles_once = True
    return exec_


def _jit_binder_compiled_once() -> bool:
    """What jit-binder-compiled-once.patch does: ``create_function_from_signature`` (a JITFunction's binder,
    made at its first launch on a device) generates a function's source from the kernel's signature and
    ``exec``s it: compiling that string is ~0.1 ms of CPU per new JITFunction (four per test_binary test),
    while the source is the same for every kernel with the same parameters. ``exec`` is the one name
    create_function_from_signature calls it by, looked up in its module's globals first: an ``exec`` there
    that compiles each source once reaches it (jit.py's only exec) and no other module. The patch's Triton
    has ``_compile_binder``: nothing to do."""
    import __future__

    module = sys.modules.get(JIT_MODULE)
    if module is None:
        import triton.runtime.jit as module
    if hasattr(module, "_compile_binder") or getattr(module.__dict__.get("exec"), "_plate_compiles_once", False):
        return False
    features = 0
    for name in __future__.all_feature_names:
        features |= getattr(__future__, name).compiler_flag
    flags = module.create_function_from_signature.__code__.co_flags & features
    module.exec = _exec_compiling_once(flags)
    return True


_TREES_KEPT = 256  # kept syntax trees, the least recently asked dropped first (a test's kernels and helpers)


class _TreePerSource:
    """Stands for ``ast`` in triton.runtime.jit: every name is ast's, but ``parse(source)`` asked through
    ``JITFunction.parse`` by Triton's own readers of the tree (``ast_to_ttir`` for the kernel,
    ``CodeGenerator.call_JitFunction`` at every call site of a ``@jit`` helper, ``JITFunction.cache_key``'s
    dependency walk) answers the tree it parsed for the same source string before. Each compile parsed the
    kernel's and every called helper's source again (~0.1 ms of CPU each, 2.5 parses per test_core compile),
    and the trees are the same: ``ast.parse`` of one string gives equal trees. The three readers only read
    the tree (``ast.NodeVisitor``s; the code generator builds new nodes for defaults and ``+=``, and
    deep-copies the one node it changes), so sharing one is what a fresh one would be. Every other caller
    (a user's ``kernel.parse()``, which may edit what it gets) gets a fresh tree, as before."""

    def __init__(self, ast_module, jit_parse_code) -> None:
        self._plate_ast = ast_module
        self._plate_jit_parse = jit_parse_code  # JITFunction.parse's code: the one caller answered
        self._plate_readers: frozenset | None = None  # the codes of the readers, found at the first parse
        self._plate_kept: dict[str, object] = {}  # source: tree, in the order last asked

    def __getattr__(self, name):
        return getattr(self._plate_ast, name)

    def _readers(self) -> frozenset:
        import triton.compiler.code_generator as code_generator
        import triton.runtime.jit as jit

        readers = (
            code_generator.ast_to_ttir,
            code_generator.CodeGenerator.call_JitFunction,
            jit.JITFunction.cache_key.fget,
        )
        return frozenset(inspect.unwrap(reader).__code__ for reader in readers)  # Triton's, under any wrapper

    def parse(self, source, *args, **kwargs):
        parse = self._plate_ast.parse
        caller = sys._getframe(1)
        if args or kwargs or type(source) is not str or caller.f_code is not self._plate_jit_parse:
            return parse(source, *args, **kwargs)
        if self._plate_readers is None:
            self._plate_readers = self._readers()
        if caller.f_back is None or caller.f_back.f_code not in self._plate_readers:
            return parse(source)
        kept = self._plate_kept
        tree = kept.pop(source, None)
        if tree is None:
            tree = parse(source)  # a source that does not parse raises every time, as before
            if len(kept) >= _TREES_KEPT:
                kept.pop(next(iter(kept), None), None)  # the oldest (another thread may have taken it)
        kept[source] = tree
        return tree


def _jit_parse_once_per_source() -> bool:
    """What jit-parse-once-per-source.patch does: Triton's readers of a ``@jit`` function's syntax tree share one
    tree per source string. ``JITFunction.parse`` looks ``ast`` up in triton.runtime.jit's globals: rebinding it
    there to ``_TreePerSource`` reaches it (jit.py's only ``ast.parse``) and no other module. The patch's Triton
    has ``_parsed_tree``: nothing to do."""
    module = sys.modules.get(JIT_MODULE)
    if module is None:
        import triton.runtime.jit as module
    if hasattr(module, "_parsed_tree") or isinstance(module.ast, _TreePerSource):
        return False
    module.ast = _TreePerSource(module.ast, inspect.unwrap(module.JITFunction.parse).__code__)
    return True


# ---- GPU_TYPES: Inductor's list of GPU-like devices ("inductor") ---------------------------------------
def _register_gpu_type() -> bool:
    """Device guards, divisibility hints, GEMM templates: Inductor gives GPU treatment only to
    torch._inductor.utils.GPU_TYPES. Every user imports the same list object: append to it."""
    from torch._inductor import utils

    register = getattr(utils, "register_gpu_type", None)
    if register is not None:  # the patch is in: use its API
        register(BACKEND)
        return False
    if BACKEND not in utils.GPU_TYPES:
        utils.GPU_TYPES.append(BACKEND)
        utils.get_gpu_type.cache_clear()
    return True


# ---- has_triton: whether any device can run Triton ("inductor") -----------------------------------------
def _privateuse1_has_triton() -> bool:
    """What has-triton-privateuse1.patch adds: the PrivateUse1 device's interface answers."""
    import torch
    from torch._dynamo.device_interface import get_registered_device_interfaces
    from torch.utils._triton import has_triton_package

    name = torch._C._get_privateuse1_backend_name()
    interface = dict(get_registered_device_interfaces()).get(name)
    return has_triton_package() and interface is not None and interface.is_available() and interface.is_triton_capable()


def _has_triton_with_privateuse1() -> bool:  # its code replaces has_triton's: runs with that module's globals
    return _plate_builtin_has_triton() or _plate_privateuse1_has_triton()  # noqa: F821


def _has_triton() -> bool:
    """has_triton() is cached and imported by name into a dozen modules (the scheduler refuses to
    create a Triton backend without it, Dynamo treats @triton.jit kernels as opaque): no rebinding
    reaches them all, so the shared function object's code is swapped for "builtin answer, or the
    PrivateUse1 device's interface says it is Triton-capable", and its cache cleared."""
    from torch.utils import _triton as triton_utils

    cached = triton_utils.has_triton
    cached.cache_clear()
    if cached():  # a GPU, or the patch is in (it asks the PrivateUse1 interface, registered by now)
        cached.cache_clear()
        return False
    original = cached.__wrapped__
    namespace = original.__globals__
    namespace["_plate_builtin_has_triton"] = types.FunctionType(
        original.__code__, namespace, "has_triton_builtin", original.__defaults__, original.__closure__
    )
    namespace["_plate_privateuse1_has_triton"] = _privateuse1_has_triton
    original.__code__ = _has_triton_with_privateuse1.__code__
    cached.cache_clear()
    return True


# ---- is_big_gpu: "enough SMs" for the GEMM templates ("inductor") ----------------------------------------
def _plate_is_big_gpu(device=None) -> bool:
    """The integration's DeviceInterface.is_big_gpu, the question is-big-gpu-device-interface.patch asks the
    device: the integration's GEMM-template policy."""
    return integration().use_gemm_templates()


def _is_big_gpu() -> bool:
    """Inductor offers its Triton GEMM templates only on devices with >= 68 SMs (16 on xpu).
    PLATE has 32 cores on plate1 (8 on plate-mini), each with a matrix unit: templates are the way
    to run a GEMM on it. Rather than inflate multi_processor_count (Inductor sizes grids with it),
    plate answers by the integration's GEMM-template policy."""
    import torch
    from torch._dynamo.device_interface import DeviceInterface
    from torch._inductor import utils

    interface = integration().device_interface
    if hasattr(DeviceInterface, "is_big_gpu"):  # the patch is in: is_big_gpu() asks the device's interface
        if "is_big_gpu" not in vars(interface):
            interface.is_big_gpu = staticmethod(_plate_is_big_gpu)
        return False
    original = utils.is_big_gpu
    if getattr(original, "_plate_shim", False):
        return False

    def is_big_gpu(index_or_device: int | torch.device = 0) -> bool:
        device = index_or_device
        if not isinstance(device, torch.device):
            device = torch.device(utils.get_gpu_type(), index_or_device)
        if device.type == BACKEND:
            return _plate_is_big_gpu(device)
        return original(index_or_device)

    is_big_gpu._plate_shim = True
    is_big_gpu.__wrapped__ = original
    utils.is_big_gpu = is_big_gpu
    return True


# ---- SkipFrame through the FX-graph-cache bypass path ("inductor") --------------------------------------
def _skip_frame_on_cache_bypass() -> bool:
    """A backend asks Dynamo to run a frame eagerly by raising SkipFrame (plate does when a kernel
    cannot compile: the integration's fallback pass). compile_fx re-raises SkipFrame on the cache-hit/miss paths but
    wraps it in InductorError on the cache-bypass path (caches off, or an uncacheable graph), which
    turns the fallback into a crash: unwrap it there. _compile_fx_inner is looked up by name at each
    call (compile_fx_inner -> wrap_compiler_debug(_compile_fx_inner)), so rebinding it reaches it."""
    from torch._dynamo.exc import SkipFrame
    from torch._inductor import compile_fx
    from torch._inductor.exc import InductorError

    original = compile_fx._compile_fx_inner
    if getattr(original, "_plate_shim", False) or _bypass_reraises_skip_frame(original):
        return False

    def _compile_fx_inner(*args, **kwargs):
        try:
            return original(*args, **kwargs)
        except InductorError as error:
            if isinstance(error.inner_exception, SkipFrame):
                raise error.inner_exception from None
            raise

    _compile_fx_inner._plate_shim = True
    _compile_fx_inner.__wrapped__ = original
    compile_fx._compile_fx_inner = _compile_fx_inner
    return True


def _bypass_reraises_skip_frame(compile_fx_inner) -> bool:
    """Whether inductor-cache-bypass-reraises-skipframe.patch is in: the cache-bypass branch of
    _compile_fx_inner (between its "bypass" and "miss" cache states) re-raises SkipFrame. Read from
    the source: running the function to find out would compile a graph. Unreadable: apply the shim
    (it only unwraps InductorError(SkipFrame), harmless if the patch is in)."""
    try:
        source = inspect.getsource(inspect.unwrap(compile_fx_inner))
    except (OSError, TypeError):
        return False
    _, found, rest = source.partition('== "bypass"')
    bypass_branch = rest.partition('== "miss"')[0]
    return bool(found) and "SkipFrame" in bypass_branch


# ---- layout optimization: channels-last convolutions ("inductor") ---------------------------------------
def _conv_layout_per_device() -> bool:
    """Inductor turns convolutions channels-last on every GPU-like device (layout optimization).
    Convolutions that reach Inductor on plate (the integration's conv_as_gemm off: it rewrites them
    otherwise) are extern kernels on the host, so the layout buys nothing, and the host kernel's output
    strides can differ from what the fake kernel predicted for the plate device. A graph with a convolution
    on plate keeps Inductor's decision only when the integration says so (its config's
    conv_layout_optimization, which is in the FX-graph cache key)."""
    from torch._dynamo.device_interface import DeviceInterface
    from torch._inductor.graph import GraphLowering

    interface = integration().device_interface
    if hasattr(DeviceInterface, "use_layout_optimization"):  # the patch is in: it asks the device's interface
        if "use_layout_optimization" not in vars(interface):
            interface.use_layout_optimization = staticmethod(_plate_use_layout_optimization)
        return False
    original = GraphLowering.decide_layout_opt
    if getattr(original, "_plate_shim", False):
        return False

    def decide_layout_opt(gm, *, is_inference: bool) -> bool:
        if not _plate_use_layout_optimization() and _has_plate_convolution(gm):
            return False
        return original(gm, is_inference=is_inference)

    decide_layout_opt._plate_shim = True
    decide_layout_opt.__wrapped__ = original
    GraphLowering.decide_layout_opt = staticmethod(decide_layout_opt)
    return True


def _plate_use_layout_optimization(device=None) -> bool:
    """DeviceInterface.use_layout_optimization, the question layout-opt-per-device.patch asks the device."""
    return integration().use_layout_optimization()


def _has_plate_convolution(gm) -> bool:
    import torch

    for node in gm.graph.nodes:
        if node.target is torch.ops.aten.convolution.default:
            val = node.meta.get("val")
            if getattr(getattr(val, "device", None), "type", None) == BACKEND:
                return True
    return False


# ---- host-side TMA: tensor descriptors built by the host ("inductor") -----------------------------------
def _plate_supports_tma(device=None) -> bool:
    """DeviceInterface.supports_tma, the question device-supports-tma-interface.patch asks the device:
    plate's launcher takes triton.tools.tensor_descriptor.TensorDescriptor arguments (the kernel
    reads the descriptor's base, shape and strides), so user kernels with host TMA run on it."""
    return integration().device_interface.is_available()


def _device_supports_tma() -> bool:
    """torch.utils._triton._device_supports_tma() accepts only CUDA sm90+: host-side TMA (user
    Triton kernels taking TensorDescriptor arguments inside torch.compile, and the tests of it)
    is refused on every other device. has_triton_tensor_descriptor_host_tma() and friends look the
    function up by name in their module at each (cached) call, so rebinding it there and clearing
    their caches reaches them all."""
    from torch._dynamo.device_interface import DeviceInterface
    from torch.utils import _triton as triton_utils

    interface = integration().device_interface
    if hasattr(DeviceInterface, "supports_tma"):  # the patch is in: it asks the PrivateUse1 device's interface
        if "supports_tma" not in vars(interface):
            interface.supports_tma = staticmethod(_plate_supports_tma)
        return False
    original = triton_utils._device_supports_tma
    if getattr(original, "_plate_shim", False):
        return False

    def device_supports_tma() -> bool:
        return original() or _plate_supports_tma()

    device_supports_tma._plate_shim = True
    device_supports_tma.__wrapped__ = original
    triton_utils._device_supports_tma = device_supports_tma
    for name in ("has_triton_tensor_descriptor_host_tma", "has_triton_experimental_host_tma", "has_triton_tma"):
        getattr(triton_utils, name).cache_clear()
    return True


# ---- flex decoding: the SM count of the query's device ("inductor") ------------------------------------
def _plate_split_kv(batch: int, kv_heads: int, device) -> int:
    """flex_decoding's SPLIT_KV rule (two splits per SM over the batch-heads) with the SM count of the
    device the query lives on, which flex-decoding-split-k-device.patch passes to get_split_k."""
    from torch._dynamo.device_interface import get_interface_for_device

    cores = get_interface_for_device(device).Worker.get_device_properties(device).multi_processor_count
    return max(cores // max(batch * kv_heads, 1) * 2, 1)


def _flex_decoding_split_k_per_device() -> bool:
    """Inductor's flex decoding (flex_attention with a short query) sizes its KV split with
    get_split_k, which reads torch.cuda's SM count unless XPU is there: on plate without CUDA the
    lowering raises "Torch not compiled with CUDA enabled". get_split_k is given no device, so its
    caller (create_flex_decoding_kernel, looked up by name in its module and in flex_attention's at
    each call) is wrapped to note the query's device for the duration of the lowering; get_split_k
    answers for a plate query with plate's core count and asks the original otherwise."""
    from torch._inductor.kernel.flex import flex_attention as flex_lowering
    from torch._inductor.kernel.flex import flex_decoding

    original_split_k = flex_decoding.get_split_k
    if getattr(original_split_k, "_plate_shim", False):
        return False
    if "device" in inspect.signature(original_split_k).parameters:  # the patch is in: it asks the device
        return False
    original_create = flex_decoding.create_flex_decoding_kernel
    lowering = threading.local()

    def create_flex_decoding_kernel(*args, **kwargs):
        previous = getattr(lowering, "device", None)
        lowering.device = args[0].get_device()  # the query
        try:
            return original_create(*args, **kwargs)
        finally:
            lowering.device = previous

    def get_split_k(B, H, Mk):  # noqa: N803 (flex_decoding's names)
        device = getattr(lowering, "device", None)
        if device is not None and device.type == BACKEND:
            return _plate_split_kv(B, H, device)
        return original_split_k(B, H, Mk)

    for function, original in ((create_flex_decoding_kernel, original_create), (get_split_k, original_split_k)):
        function._plate_shim = True
        function.__wrapped__ = original
    flex_decoding.get_split_k = get_split_k
    flex_decoding.create_flex_decoding_kernel = create_flex_decoding_kernel
    if flex_lowering.create_flex_decoding_kernel is original_create:
        flex_lowering.create_flex_decoding_kernel = create_flex_decoding_kernel
    return True


# ---- _disable_dynamo: no import of Dynamo while it is not imported ("device") ----------------------------
DYNAMO_MODULE = "torch._dynamo"
# the modules whose functions hold torch's _disable_dynamo wrappers that meta kernels run (the elementwise refs)
REF_MODULES = ("torch._refs", "torch._decomp", "torch._prims")
_undisabled: list = []  # the wrapped functions whose Dynamo disable this shim seeded (unseeded when Dynamo imports)


def _disable_dynamo_without_dynamo() -> bool:
    """``torch._disable_dynamo`` wraps every elementwise ``torch._refs`` function (_prims_common's type promotion),
    and the wrapper imports Dynamo on its first call to wrap the function in ``torch._dynamo.disable``: a plate
    eager op's meta run (eager_ops.ops.Call.meta: ``x == 0`` on meta tensors runs torch._refs.eq) imports Dynamo,
    0.5 s of CPU once per process that never compiles. Without Dynamo imported no frame hook can be set, so there
    is nothing to disable: until Dynamo is imported, each wrapped function's cached disable (the attribute the
    wrapper reads first) is the function itself; when Dynamo is imported they are removed, and the wrappers
    import-and-disable as before."""
    import torch

    inner = torch._compile._disable_dynamo(_disable_dynamo_without_dynamo).__code__
    if "modules" in inner.co_names or DYNAMO_MODULE in sys.modules:
        return False  # a torch with the patch (it asks sys.modules), or Dynamo already imported: nothing to do
    fn = inner.co_freevars.index("fn")
    seen: set[int] = set()
    stack = [
        f for name, module in list(sys.modules.items()) if name.startswith(REF_MODULES) for f in vars(module).values()
    ]
    stack += [f for table in torch._decomp.global_decomposition_table.values() for f in table.values()]
    while stack:
        f = stack.pop()
        if not isinstance(f, types.FunctionType) or id(f) in seen:
            continue
        seen.add(id(f))
        if f.__code__ is inner:
            wrapped = f.__closure__[fn].cell_contents
            if "__dynamo_disable" not in wrapped.__dict__:
                wrapped.__dynamo_disable = wrapped
                _undisabled.append(wrapped)
        stack.append(getattr(f, "__wrapped__", None))
        stack += [_cell(c) for c in f.__closure__ or ()]
    return _patch_now_or_on_import(DYNAMO_MODULE, _restore_disable_dynamo)


def _cell(cell):
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return None


def _restore_disable_dynamo(module) -> bool:
    while _undisabled:
        wrapped = _undisabled.pop()
        if wrapped.__dict__.get("__dynamo_disable") is wrapped:
            del wrapped.__dynamo_disable
    return True


# ---- autograd's device threads go idle before the interpreter finalizes ("device") --------------------------
AUTOGRAD_THREAD = "pt_autograd_"  # the engine names its device worker threads pt_autograd_<device index>


def _drain_autograd_at_exit() -> bool:
    """A device worker of the autograd engine (pt_autograd_<i>) can drop the last reference to a finished
    GraphTask after it has woken the thread that called backward(). The GraphTask's thread-local state holds
    the contextvars copy that torch.autograd.graph._engine_run_backward stashes (a SafePyObject), so that drop
    takes the GIL; once Py_FinalizeEx has begun, taking the GIL ends the thread with pthread_exit, whose forced
    unwind through a noexcept destructor calls std::terminate: "terminate called without an active exception",
    exit code 134, after a script's output was right. So at exit (atexit handlers run before finalization; this
    one, registered after plate's runtime, before the runtime stops: last in, first out) each live plate device
    thread runs one more backward, which completes only after the thread has finished every earlier iteration,
    the last drop included, while this thread waits without the GIL."""
    import atexit

    atexit.register(_drain_autograd_device_threads)
    return True  # the fix is in the engine's C++ (the patch): nothing in Python says whether it is in


def _autograd_device_threads() -> set[int] | None:
    """The device indices of the engine's worker threads alive now, or None where threads cannot be listed."""
    import os

    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return None
    found = set()
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/comm") as comm:
                name = comm.read().strip()
        except OSError:
            continue  # the thread ended meanwhile
        index = name.removeprefix(AUTOGRAD_THREAD)
        if index != name and index.isdigit():
            found.add(int(index))
    return found


def _drain_autograd_device_threads() -> None:
    """One backward per live plate device thread, through the engine itself: _engine_run_backward would stash
    a Python object in this backward's GraphTask too. Its only node, a 0-element leaf's AccumulateGrad, runs on
    the device's thread (the gradient's device); no memory is allocated."""
    import torch

    device_module = getattr(torch, BACKEND, None)
    if device_module is None:
        return
    count = device_module.device_count()
    threads = _autograd_device_threads()
    indices = range(count) if threads is None else sorted(i for i in threads if i < count)
    engine = torch.autograd.Variable._execution_engine
    with torch.enable_grad():
        for index in indices:
            leaf = torch.empty(0, device=torch.device(BACKEND, index), requires_grad=True)
            engine.run_backward((leaf,), (torch.empty_like(leaf),), False, False, (), True, True)


# ---- multilabel_margin_loss: a sample's labels end at its first -1 ("device") ------------------------------
DECOMPOSITIONS_MODULE = "torch._decomp.decompositions"


def _multilabel_margin_loss_first_end() -> bool:
    """PyTorch 2.13's decomposition of ``multilabel_margin_loss_forward`` adds the hinge terms of the target
    entries after a sample's first -1 (each as class 0), where ATen's kernels stop at the first -1: target
    [3, 0, -1, 1, 2] gives 3.18 for eager's 1.02. torch.compile traces that decomposition (the op's Autograd
    python kernel, and the decomposition tables when tracing below autograd), forward and backward. For plate
    tensors the op's Autograd kernel and its table entries run ``_multilabel_margin_loss_forward``; every
    other device gets the original. Dynamo, export and Inductor all trace: patched on import."""
    return _patch_now_or_on_import(DECOMPOSITIONS_MODULE, _patch_multilabel_margin_loss)


def _patch_multilabel_margin_loss(module) -> bool:
    import torch
    from torch._C import DispatchKey
    from torch._decomp import global_decomposition_table
    from torch._prims_common.wrappers import out_wrapper

    name = torch._C._get_privateuse1_backend_name()
    packet = torch.ops.aten.multilabel_margin_loss_forward
    traced = packet.default.py_kernels.get(DispatchKey.Autograd)
    if traced is None or getattr(traced, "_plate_patch", False) or _stops_at_first_end(traced):
        return False
    correct = out_wrapper("output", "is_target")(_multilabel_margin_loss_forward)

    def on_plate_or(original):
        def multilabel_margin_loss_forward(input, target, reduction, **out):
            return (correct if input.device.type == name else original)(input, target, reduction, **out)

        multilabel_margin_loss_forward._plate_patch = True
        multilabel_margin_loss_forward.__wrapped__ = original
        return multilabel_margin_loss_forward

    packet.default.py_kernels[DispatchKey.Autograd] = on_plate_or(traced)
    packet.default._dispatch_cache.clear()
    tables = [global_decomposition_table["post_autograd"]]
    if "torch._inductor.decomposition" in sys.modules:  # a copy of the entries, made when it was imported
        tables.append(sys.modules["torch._inductor.decomposition"].decompositions)
    for table in tables:
        for overload in (packet.default, packet.output):
            if overload in table and not getattr(table[overload], "_plate_patch", False):
                table[overload] = on_plate_or(table[overload])
    return True


def _stops_at_first_end(decomposition) -> bool:
    """Whether ``decomposition`` reads a sample's labels up to its first -1 only (a PyTorch with the patch).

    Told by its code where that is a decomposition already probed (``FIRST_END_BY_CODE``); else by the probe,
    which runs it once at ``import torch``: its ``torch._check`` imports torch's symbolic shapes and sympy
    (~0.2 s of CPU, in every process that imports torch with plate installed)."""
    known = FIRST_END_BY_CODE.get(code_fingerprint(decomposition))
    return _probe_first_end(decomposition) if known is None else known


def _probe_first_end(decomposition) -> bool:
    """With no label before the -1, ATen's loss is 0."""
    import torch

    loss, _ = decomposition(torch.zeros(1, 2), torch.tensor([[-1, 0]]), 1)
    return loss.item() == 0


# code_fingerprint of a decomposition -> _probe_first_end's answer for it (test_compile_multilabel_margin.py
# runs the probe on the installed PyTorch's and checks the answer kept here)
FIRST_END_BY_CODE = {
    # PyTorch 2.13 on CPython 3.11: counts the labels after the first -1
    "18658207e7392599e8c0c34090d7a0873c81326b49eb043b12f0cd16ca5b669d": False,
}


def code_fingerprint(function) -> str:
    """sha256 of the code a call of ``function`` runs as its own: each function along its ``__wrapped__`` chain,
    its name, bytecode, the names it reads, its constants (nested code objects, lambdas and comprehensions,
    included), and the plain values of its defaults and closure (a wrapper's settings). Equal fingerprints: the
    same Python source compiled by the same CPython, closed over the same settings."""
    import hashlib

    digest = hashlib.sha256(sys.version.encode())

    def value(v) -> str:  # the same text in every process (a frozenset's order follows the string hash's seed)
        if isinstance(v, types.CodeType):
            add(v)
            return "<code>"
        if isinstance(v, (tuple, list)):
            return f"{type(v).__name__}({', '.join(value(x) for x in v)})"
        if isinstance(v, (frozenset, set)):
            return f"{type(v).__name__}({', '.join(sorted(value(x) for x in v))})"
        if v is None or isinstance(v, (str, bytes, int, float, complex, bool, type(Ellipsis))):
            return repr(v)
        return f"<{type(v).__module__}.{type(v).__qualname__}>"  # a function (followed by __wrapped__), a module

    def add(code: types.CodeType) -> None:
        digest.update(f"{code.co_qualname}|{code.co_names}|{code.co_varnames}|{code.co_freevars}".encode())
        digest.update(code.co_code)
        digest.update(value(code.co_consts).encode())

    seen = set()
    while function is not None and id(function) not in seen:
        seen.add(id(function))
        digest.update(f"{getattr(function, '__module__', None)}.{getattr(function, '__qualname__', None)}".encode())
        code = getattr(function, "__code__", None)
        if code is not None:
            add(code)
            cells = [_cell_value(c) for c in function.__closure__ or ()]
            extra = (function.__defaults__, sorted((function.__kwdefaults__ or {}).items()), cells)
            digest.update(value(extra).encode())
        function = getattr(function, "__wrapped__", None)
    return digest.hexdigest()


def _cell_value(cell):
    try:
        return cell.cell_contents
    except ValueError:  # a cell not filled yet
        return None


def _multilabel_margin_loss_forward(input, target, reduction: int):
    """ATen's multilabel_margin_loss_forward: a sample's labels are its target entries before its first -1;
    its loss sums max(0, 1 - x[label] + x[i]) / C over its labels and the classes i that are none of them;
    is_target marks its labels' classes. Reduction 0 none, 1 mean, 2 sum."""
    import torch

    x = torch.atleast_2d(input)
    labels = torch.atleast_2d(target)
    classes = x.shape[-1]
    position = torch.arange(classes, device=labels.device)
    first_end = torch.where(labels == -1, position, classes).amin(-1, keepdim=True)
    is_label = position < first_end  # [N, C]: the entries ATen reads
    label = torch.where(is_label, labels, 0)  # gather takes no -1
    is_target = ((label.unsqueeze(-1) == position) & is_label.unsqueeze(-1)).any(1)  # [N, class]
    label_score = torch.gather(x, -1, label).unsqueeze(-1)  # [N, label, 1]
    hinge = (1 - label_score + x.unsqueeze(1)).clamp_min(0) / classes  # [N, label, class]
    counted = is_label.unsqueeze(-1) & ~is_target.unsqueeze(1)
    loss = torch.where(counted, hinge, 0).sum((1, 2))
    if reduction == 1:
        loss = loss.mean()
    elif reduction == 2:
        loss = loss.sum()
    else:
        loss = loss.reshape(input.shape[:-1])
    return loss, is_target.to(input.dtype).reshape(target.shape)


# ---- the GRU cell's Meta kernel: FakeTensor at symbolic sizes ("device") -----------------------------------
GRU_CELL_OP = "aten::_thnn_fused_gru_cell"
_gru_cell_meta_library = None  # kept alive: the Meta kernel lives as long as its Library


def _gru_cell_meta_kernel() -> bool:
    """``nn.GRUCell`` on a device with a fused cell (CUDA, XPU, PrivateUse1) calls ``_thnn_fused_gru_cell``, for
    which PyTorch 2.13 has no meta function (it has the LSTM cell's): FakeTensor then runs the real kernel on
    zeros, which it cannot at symbolic sizes, so ``torch.compile(dynamic=True)`` skipped the frame with a GRU
    cell and ran it eagerly ("Operator does not support running with fake tensors"). Every tracer that runs
    fake tensors (Dynamo with any backend, export) needs it, eager code included: installed with the device.
    A Meta kernel in the dispatcher (a PyTorch with the patch registers one at import): nothing to do."""
    global _gru_cell_meta_library
    import torch

    if torch._C._dispatch_has_kernel_for_dispatch_key(GRU_CELL_OP, "Meta"):
        return False
    _gru_cell_meta_library = torch.library.Library("aten", "IMPL")
    _gru_cell_meta_library.impl("_thnn_fused_gru_cell", _thnn_fused_gru_cell_meta, "Meta")
    return True


def _thnn_fused_gru_cell_meta(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None):
    """The patch's meta function: CUDA's size checks (checkSizes in native/cuda/RNN.cu, whose device check
    skips absent biases) and outputs: hy like hx, the workspace [r, i, n, hn + b_hn, hx] of (batch, 5 * hidden)
    in hx's dtype."""
    import torch

    torch._check(input_gates.ndim == 2, lambda: f"{input_gates.ndim} != 2")
    torch._check(input_gates.shape == hidden_gates.shape, lambda: f"{input_gates.shape} != {hidden_gates.shape}")
    gates_size = input_gates.size(1)
    if input_bias is not None:
        torch._check(input_bias.ndim == 1, lambda: f"{input_bias.ndim} != 1")
        torch._check(input_bias.numel() == gates_size, lambda: f"{input_bias.numel()} != {gates_size}")
        torch._check(input_bias.shape == hidden_bias.shape, lambda: f"{input_bias.shape} != {hidden_bias.shape}")
    torch._check(hx.ndim == 2, lambda: f"{hx.ndim} != 2")
    torch._check(
        hx.numel() == input_gates.size(0) * gates_size // 3, lambda: f"{hx.numel()} != batch * {gates_size} // 3"
    )
    others = (hidden_gates, input_bias, hidden_bias, hx)
    torch._check(
        all(x.device == input_gates.device for x in others if x is not None),
        lambda: "expected all inputs to be same device",
    )
    hy = torch.empty_like(hx, memory_format=torch.contiguous_format)
    workspace = hx.new_empty(hx.size(0), 5 * hx.size(1))
    return hy, workspace


SHIMS: tuple[Shim, ...] = (
    Shim(
        "get_interface_for_device asks the PrivateUse1 device",
        "patches/pytorch/device-interface-privateuse1.patch",
        _device_interface_discovery,
        "device",
    ),
    Shim(
        "flex_attention accepts the PrivateUse1 device",
        "patches/pytorch/flex-attention-privateuse1.patch",
        _flex_attention_device_check,
        "device",
    ),
    Shim(
        "multilabel_margin_loss's decomposition stops at the first -1 on plate",
        "patches/pytorch/multilabel-margin-loss-decomp-first-end.patch",
        _multilabel_margin_loss_first_end,
        "device",
    ),
    Shim(
        "_thnn_fused_gru_cell has a Meta kernel",
        "patches/pytorch/gru-cell-meta.patch",
        _gru_cell_meta_kernel,
        "device",
    ),
    Shim(
        "_disable_dynamo imports Dynamo only once Dynamo is imported",
        "patches/pytorch/disable-dynamo-without-dynamo.patch",
        _disable_dynamo_without_dynamo,
        "device",
    ),
    Shim(
        "autograd's device threads go idle before the interpreter finalizes",
        "patches/pytorch/autograd-worker-releases-graph-task-python-state.patch",
        _drain_autograd_at_exit,
        "device",
    ),
    Shim(
        "triton.testing.do_bench asks a modeled-clock driver",
        "patches/triton/do-bench-modeled-clock-driver.patch",
        _do_bench_on_modeled_clock,
        "driver",
    ),
    Shim(
        "compile() keeps one MLIR context per thread for plate",
        "patches/triton/compile-mlir-context-reuse.patch",
        _compile_context_per_thread,
        "driver",
    ),
    Shim(
        "CompiledKernel reuses one KernelMetadata class per key set",
        "patches/triton/kernel-metadata-class-cached.patch",
        _kernel_metadata_class_cached,
        "driver",
    ),
    Shim(
        "CompiledKernel reads the files compile() has just put from what was written",
        "patches/triton/compiled-kernel-from-compile-outputs.patch",
        _compiled_kernel_reads_what_was_written,
        "driver",
    ),
    Shim(
        "ast_to_ttir reuses one SpecializationProxy class",
        "patches/triton/specialization-proxy-class-cached.patch",
        _specialization_proxy_class_cached,
        "driver",
    ),
    Shim(
        "ast_to_ttir's CodeGenerators drop their state when it returns",
        "patches/triton/code-generator-drops-its-state.patch",
        _code_generator_drops_its_state,
        "driver",
    ),
    Shim(
        "JITFunction reads a kernel's source lines once per code object",
        "patches/triton/jit-source-lines-per-code.patch",
        _jit_source_lines_per_code,
        "driver",
    ),
    Shim(
        "a JITFunction's binder source is compiled once",
        "patches/triton/jit-binder-compiled-once.patch",
        _jit_binder_compiled_once,
        "driver",
    ),
    Shim(
        "Triton's readers of a @jit function's syntax tree share one per source",
        "patches/triton/jit-parse-once-per-source.patch",
        _jit_parse_once_per_source,
        "driver",
    ),
    Shim(
        "a CodeGenerator maps its global scope through module_map name by name",
        "patches/triton/code-generator-maps-scope-by-name.patch",
        _code_generator_maps_scope_by_name,
        "driver",
    ),
    Shim("GPU_TYPES includes plate", "patches/pytorch/register-gpu-type.patch", _register_gpu_type, "inductor"),
    Shim(
        "has_triton() asks the PrivateUse1 device",
        "patches/pytorch/has-triton-privateuse1.patch",
        _has_triton,
        "inductor",
    ),
    Shim(
        "is_big_gpu() asks the device's policy",
        "patches/pytorch/is-big-gpu-device-interface.patch",
        _is_big_gpu,
        "inductor",
    ),
    Shim(
        "layout optimization asks the device",
        "patches/pytorch/layout-opt-per-device.patch",
        _conv_layout_per_device,
        "inductor",
    ),
    Shim(
        "SkipFrame passes the FX-cache bypass path",
        "patches/pytorch/inductor-cache-bypass-reraises-skipframe.patch",
        _skip_frame_on_cache_bypass,
        "inductor",
    ),
    Shim(
        "host-side TMA asks the device",
        "patches/pytorch/device-supports-tma-interface.patch",
        _device_supports_tma,
        "inductor",
    ),
    Shim(
        "flex decoding's KV split asks the query's device",
        "patches/pytorch/flex-decoding-split-k-device.patch",
        _flex_decoding_split_k_per_device,
        "inductor",
    ),
)

STATUS: dict[str, str] = {}
_lock = threading.RLock()


def install(when: str) -> dict[str, str]:
    """Apply every shim of the group ``when`` (one of WHEN) not applied yet; returns STATUS of the group.
    The "inductor" group needs the integration registered first (``apply``)."""
    if when not in WHEN:
        raise PlateError(f"shims.install({when!r}): the groups are {', '.join(WHEN)}")
    with _lock:
        for shim in SHIMS:
            if shim.when == when and shim.name not in STATUS:
                STATUS[shim.name] = "applied" if shim.apply() else "not needed"
        return {shim.name: STATUS[shim.name] for shim in SHIMS if shim.when == when}


def apply(answers: Integration | None = None) -> dict[str, str]:
    """Register the Inductor integration's ``answers`` (once given, kept) and apply every shim not applied
    yet; returns {shim name: "applied" | "not needed"}."""
    global _integration
    with _lock:
        if answers is not None:
            _integration = answers
        for when in WHEN:
            install(when)
        return dict(STATUS)


def describe() -> str:
    return "\n".join(f"{s.name}: {STATUS.get(s.name, 'pending')} (removed by {s.patch})" for s in SHIMS)
