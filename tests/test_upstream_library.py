"""The upstream runner's libraries (`kind = "library"` in revisions.toml), on a fake library's checkout.

tests/fake_upstream/library/ is a tiny library with its own conftest option, a device setup module that
counts host ops (without torch) and a skip list; the runner runs it end to end (pytest in a subprocess).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # `upstream/` is a repo-root package, not part of the installed wheel
    sys.path.insert(0, str(REPO))

from upstream import UpstreamError, patches, runner  # noqa: E402
from upstream.libraries import flag_gems  # noqa: E402
from upstream.revisions import Tree, get_revision, libraries, load_revisions  # noqa: E402

FAKE = REPO / "tests" / "fake_upstream" / "library"

FAKE_REVISIONS = """
[fakelib]
kind = "library"
repo = "https://example.invalid/fakelib.git"
commit = "0123456789abcdef0123456789abcdef01234567"
describe = "v0.1"
take = ["src", "tests"]
test_root = "."
library = { package = "fakelib", folder = "src" }
pip = { name = "fakelib", version = "0.1" }

[fakelib.suite]
paths = ["tests"]
args = ["--quick"]
jobs = 0
timeout = 3
env = { FAKELIB_VENDOR = "x" }
requires = []
"""


@pytest.fixture(autouse=True)
def _fast_pytest_subprocesses(monkeypatch):
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:hypothesispytest")


@pytest.fixture
def library(tmp_path) -> tuple[Path, Path]:
    """(the fake library's checkout, its revisions.toml)."""
    tree = tmp_path / "fakelib"
    shutil.copytree(FAKE, tree)
    for f in tree.rglob("*.in"):
        f.rename(f.with_suffix(""))
    revisions = tmp_path / "revisions.toml"
    revisions.write_text(FAKE_REVISIONS)
    return tree, revisions


def test_revisions_read_a_library(library):
    _, revisions = library
    rev = get_revision("fakelib", revisions)
    assert rev.is_library and rev.pip.name == "fakelib" and rev.pip.version == "0.1" and rev.plugin is None
    assert rev.suite.args == ("--quick",) and rev.suite.jobs == 0 and rev.suite.timeout == 3
    assert libraries(revisions) == ["fakelib"]
    assert not get_revision("triton").is_library
    bad = revisions.parent / "bad.toml"
    bad.write_text(FAKE_REVISIONS.replace('kind = "library"', 'kind = "plugin"'))
    with pytest.raises(UpstreamError, match="kind = 'plugin'"):
        load_revisions(bad)
    bad.write_text(FAKE_REVISIONS.replace('library = { package = "fakelib", folder = "src" }', ""))
    with pytest.raises(UpstreamError, match="lacks the key 'library'"):
        load_revisions(bad)


def test_the_pinned_libraries_are_runnable_suites():
    for name in libraries():
        rev = get_revision(name)
        assert rev.ref and len(rev.ref) == 40, f"{name}: pin a full commit"
        assert rev.suite.paths and (rev.pip is None or rev.pip.version)
        if rev.plugin:
            __import__(rev.plugin)  # the plugin named exists (importing it imports no library)
    assert "flag_gems" in libraries() and get_revision("attorch").pip is None  # attorch: source only


def test_a_library_command_loads_the_library_plugins(library):
    tree, revisions = library
    args = runner.build_parser().parse_args(["triton"])
    args.library = get_revision("fakelib", revisions)
    args.skiplist, args.jobs, args.timeout = tree / "skiplist.toml", 0, 3.0
    cmd = runner.pytest_command("lib-fakelib", Tree(tree, tree), ["tests"], args, tree / "x.ini", tree / "r.json")
    joined = " ".join(cmd)
    assert "-p upstream.library_plugin --lib-device plate" in joined
    assert "--quick" in cmd and "--device" not in cmd and "-n" not in cmd
    args.library = get_revision("flag_gems")
    cmd = runner.pytest_command("lib-flag_gems", Tree(tree, tree), ["tests"], args, tree / "x.ini", tree / "r.json")
    assert "-p upstream.libraries.flag_gems --quick --ref cpu" in " ".join(cmd)


def test_a_library_runs_end_to_end(library, tmp_path, monkeypatch):
    """Its args reach its conftest, the device module is set up before it, host ops are recorded, the
    suite's timeout (3 s) stops a hang, the skip list applies, and the report is lib-fakelib.*."""
    tree, revisions = library
    monkeypatch.delenv("FAKELIB_VENDOR", raising=False)
    argv = ["fakelib", "--src", str(tree), "--revisions", str(revisions), "--report-dir", str(tmp_path / "out")]
    argv += ["--skiplist", str(tree / "skiplist.toml"), "--", "--lib-setup", "fakelib_device"]
    assert runner.main(argv) == runner.EXIT_FAILURES  # test_hangs ran past the timeout
    report = json.loads((tmp_path / "out" / "lib-fakelib.json").read_text())
    failures = {f["test"].rsplit("::", 1)[1]: f for f in report["failures"]}
    assert set(failures) == {"test_hangs"}
    totals = report["totals"]
    assert totals["passed"] == 2 and totals["passed-with-fallback"] == 1 and totals["xfailed"] == 1
    assert report["library"] == {
        "pip": "fakelib==0.1",
        "from": "fakelib from the checkout's src/ (not installed)",
    }
    assert report["jobs"] == 0 and report["timeout_s"] == 3.0 and report["suite"] == "lib-fakelib"
    assert report["revision"]["ref"] == "0123456789abcdef0123456789abcdef01234567"
    assert report["passed_with_fallback"] == [
        {"test": "tests/test_ops.py::test_double_on_host", "host_fallbacks": {"aten.mul": 1}}
    ]
    assert (tmp_path / "out" / "lib-fakelib.md").is_file() and (tmp_path / "out" / "lib-fakelib-failures.txt").is_file()


def test_a_library_without_its_package_is_a_setup_error(library, tmp_path):
    tree, revisions = library
    shutil.rmtree(tree / "src" / "fakelib")
    argv = ["fakelib", "--src", str(tree), "--revisions", str(revisions), "--report-dir", str(tmp_path)]
    assert runner.main(argv) == runner.EXIT_USAGE


def test_flag_gems_plugin_names_the_device_in_the_vendor_table(tmp_path, monkeypatch):
    """upstream.libraries.flag_gems gives the vendor's vendor_info the device's fields, without importing
    flag_gems (a fake package with FlagGems' layout: runtime/backend/_<vendor>)."""
    backend = tmp_path / "flag_gems" / "runtime" / "backend"
    (backend / "_acme").mkdir(parents=True)
    (tmp_path / "flag_gems" / "__init__.py").write_text("raise ImportError('flag_gems itself must not be imported')\n")
    (backend / "_acme" / "__init__.py").write_text(
        "from dataclasses import dataclass\n"
        "@dataclass\nclass Info:\n    vendor_name: str\n    device_name: str\n"
        "    dispatch_key: str = None\n    triton_extra_name: str = None\n"
        "vendor_info = Info('acme', 'cuda')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "path", list(sys.path))  # the plugin appends the backend folder
    monkeypatch.delitem(sys.modules, "_acme", raising=False)
    info = flag_gems.name_the_device("acme", "plate")
    assert (info.vendor_name, info.device_name, info.dispatch_key) == ("acme", "plate", "PrivateUse1")
    assert sys.modules["_acme"].vendor_info is info
    monkeypatch.delitem(sys.modules, "_acme")


def test_a_library_at_the_top_of_its_checkout_is_named_so(tmp_path):
    """fla keeps its package at the top of the tree (library.folder = ""): the report says so, not "/"."""
    (tmp_path / "toplib_not_installed").mkdir()
    revision = types.SimpleNamespace(library_package="toplib_not_installed", library_folder="", pip=None)
    path, where = runner._library_path(revision, types.SimpleNamespace(root=tmp_path))
    assert path == str(tmp_path)
    assert where == "toplib_not_installed from the checkout's top folder (not installed)"


def test_a_library_published_only_as_source_comes_from_its_checkout(library, tmp_path):
    """attorch has no package on PyPI: without `pip` its package is the checkout's, even if an installed
    package has its name, and the report says no package was used."""
    from upstream import report as report_module

    tree, revisions = library
    bare = revisions.parent / "bare.toml"
    bare.write_text(FAKE_REVISIONS.replace('pip = { name = "fakelib", version = "0.1" }', ""))
    revision = get_revision("fakelib", bare)
    assert revision.is_library and revision.pip is None
    path, where = runner._library_path(revision, Tree(tree, tree))
    assert path == str(tree / "src") and where == "fakelib from the checkout's src/ (not installed)"
    shutil.rmtree(tree / "src" / "fakelib")
    with pytest.raises(UpstreamError, match="not a package"):
        runner._library_path(revision, Tree(tree, tree))
    line = report_module._library_line({"pip": None, "from": where})
    assert line == f"- library: no package (published only as source), {where}"


@pytest.fixture
def cuda_names_the_plate_device(monkeypatch):
    """upstream.libraries.attorch's patches for the plate device, undone after the test."""
    torch = pytest.importorskip("torch")
    from torch.amp import autocast_mode

    import triton_plate_backend.torch_device  # noqa: F401 - registers torch.plate
    from upstream.libraries import attorch

    for owner, name in [
        (torch, "is_autocast_enabled"),
        (torch, "get_autocast_dtype"),
        (torch.cuda, "get_device_capability"),
        (autocast_mode.autocast, "__init__"),
    ]:
        monkeypatch.setattr(owner, name, getattr(owner, name))  # restored after the test
    mode = attorch.cuda_is("plate")
    try:
        yield torch
    finally:
        mode.__exit__(None, None, None)


def test_attorch_plugin_makes_cuda_the_run_device(cuda_names_the_plate_device):
    """attorch names CUDA for its device, autocast and capability: each means the run's device."""
    torch = cuda_names_the_plate_device
    x = torch.randn(4, 4, device="cuda")
    assert x.device.type == "plate"
    assert torch.tensor([1.0], device=torch.device("cuda", 0)).device == torch.device("plate", 0)
    assert torch.nn.LayerNorm(4, device="cuda").weight.device.type == "plate"
    assert torch.zeros(2).to("cuda").device.type == "plate"
    assert torch.zeros(2, device="cpu").device.type == "cpu"  # other devices stay themselves
    assert torch.cuda.get_device_capability() == torch.plate.get_device_capability()
    assert not torch.is_autocast_enabled()
    with torch.autocast("cuda", dtype=torch.float16):  # the plate device's autocast: matmuls run in fp16
        assert torch.is_autocast_enabled() and torch.is_autocast_enabled("cuda")
        assert torch.get_autocast_dtype("cuda") == torch.float16
        assert (x @ x).dtype == torch.float16
    assert (x @ x).dtype == torch.float32


def test_attorch_plugin_custom_fwd_sees_the_device_autocast(cuda_names_the_plate_device):
    """custom_fwd/custom_bwd(device_type='cuda'), as attorch decorates its autograd Functions: the forward
    records the device's autocast state and the backward runs under the device's autocast with it."""
    torch = cuda_names_the_plate_device
    seen = {}

    class Square(torch.autograd.Function):
        @staticmethod
        @torch.amp.custom_fwd(device_type="cuda")
        def forward(ctx, a):
            ctx.save_for_backward(a)
            seen["fwd"] = torch.is_autocast_enabled()
            return a * a

        @staticmethod
        @torch.amp.custom_bwd(device_type="cuda")
        def backward(ctx, grad):
            (a,) = ctx.saved_tensors
            seen["bwd"] = (torch.is_autocast_enabled("plate"), torch.get_autocast_dtype("plate"))
            return 2 * a * grad

    a = torch.randn(8, device="cuda", requires_grad=True)
    with torch.autocast("cuda", dtype=torch.float16):
        out = Square.apply(a)
    out.sum().backward()
    assert seen == {"fwd": True, "bwd": (True, torch.float16)}
    torch.testing.assert_close(a.grad, 2 * a.detach())


def test_triton_kernels_plugin_answers_cuda_questions_for_the_device(monkeypatch):
    """upstream.libraries.triton_kernels: torch.cuda's device properties are the device's, and make_opt_flags,
    which knows only the 'cuda' and 'hip' backends (assert False on any other), takes the NVIDIA heuristics on
    the device's backend with the device's arch, and is itself on any other backend."""
    torch = pytest.importorskip("torch")
    triton = pytest.importorskip("triton")
    import triton_plate_backend.torch_device  # noqa: F401 - registers torch.plate
    from upstream.libraries import triton_kernels as plugin

    monkeypatch.setattr(torch.cuda, "get_device_properties", torch.cuda.get_device_properties)
    plugin.patch_device_properties("plate")
    props = torch.cuda.get_device_properties(0)
    assert props == torch.plate.get_device_properties(0)
    assert props.multi_processor_count > 0 and props.shared_memory_per_block_optin > 0

    seen = []

    def make_opt_flags(*args, **kwargs):  # the library's dispatch: 'hip', 'cuda', else assert False
        target = triton.runtime.driver.active.get_current_target()
        seen.append((target.backend, target.arch))
        assert target.backend in ("cuda", "hip")
        return ("flags", args, kwargs)

    opt_flags, matmul = types.SimpleNamespace(make_opt_flags=make_opt_flags), types.SimpleNamespace()
    active = triton.runtime.driver.active
    here = active.get_current_target()
    plugin.patch_opt_flags(here.backend, opt_flags, matmul)
    assert matmul.make_opt_flags is opt_flags.make_opt_flags
    assert opt_flags.make_opt_flags(1, 2, block_k=None) == ("flags", (1, 2), {"block_k": None})
    assert seen == [("cuda", here.arch)]
    assert active.get_current_target() == here  # the backend's own name again after the call
    plugin.patch_opt_flags(here.backend, opt_flags)  # once only
    assert opt_flags.make_opt_flags.__wrapped__ is make_opt_flags
    other = types.SimpleNamespace(make_opt_flags=make_opt_flags)
    plugin.patch_opt_flags("another-backend", other)  # not the active backend: the library's own dispatch
    with pytest.raises(AssertionError):
        other.make_opt_flags()


def test_liger_plugin_answers_bf16_support_for_the_device(monkeypatch, tmp_path):
    """upstream.libraries.liger_kernel: Liger's test/utils.py supports_bfloat16() (cuda capability, xpu or npu,
    else False) answers torch.<device>.is_bf16_supported(), for the module the conftest imported under the
    run's root only (not the standard library's `test` package)."""
    torch = pytest.importorskip("torch")
    import triton_plate_backend.torch_device  # noqa: F401 - registers torch.plate
    from upstream.libraries import liger_kernel as plugin

    test_utils = types.ModuleType("test.utils")
    test_utils.__file__ = str(tmp_path / "test" / "utils.py")
    test_utils.device = "plate"
    test_utils.supports_bfloat16 = lambda: test_utils.device in ("xpu", "npu")  # Liger's answer for plate
    monkeypatch.setitem(sys.modules, "test.utils", test_utils)
    assert plugin.loaded_test_utils(tmp_path / "elsewhere") is None
    assert plugin.loaded_test_utils(tmp_path) is test_utils
    assert not test_utils.supports_bfloat16()

    plugin.answer_bf16_support(test_utils, "plate")
    assert test_utils.supports_bfloat16() is True
    monkeypatch.setattr(torch.plate, "is_bf16_supported", lambda including_emulation=True: False)
    assert test_utils.supports_bfloat16() is False  # asked at each call, not cached
    with pytest.raises(pytest.UsageError, match="torch.nodevice"):
        plugin.answer_bf16_support(test_utils, "nodevice")


def test_liger_plugin_asks_the_device_for_a_cuda_gate(monkeypatch):
    """A DEVICE_GATES test's skipif(not torch.cuda.is_available(), reason=R) is replaced by one asking
    torch.<device>.is_available(); its other marks, and other skipif marks, stay."""
    torch = pytest.importorskip("torch")
    import triton_plate_backend.torch_device  # noqa: F401 - registers torch.plate
    from upstream.libraries import liger_kernel as plugin

    nodeid, (reason, _) = next(iter(plugin.DEVICE_GATES.items()))

    class Item:
        def __init__(self):
            self.nodeid = nodeid + "[dtype0-1.0-4-11009]"
            self.own_markers = [
                pytest.mark.skipif(True, reason=reason).mark,
                pytest.mark.skipif(True, reason="bfloat16 not supported on this GPU").mark,
                pytest.mark.parametrize("x", [1]).mark,
            ]

        def add_marker(self, marker):
            self.own_markers.append(marker.mark)

    item = Item()
    config = types.SimpleNamespace(getoption=lambda name, default=None: "plate" if name == "lib_device" else default)
    plugin.pytest_collection_modifyitems(None, config, [item])
    skips = [(m.args, m.kwargs["reason"]) for m in item.own_markers if m.name == "skipif"]
    assert skips == [
        ((True,), "bfloat16 not supported on this GPU"),
        ((not torch.plate.is_available(),), f"{reason} (asked of torch.plate: not available)"),
    ]
    assert [m.name for m in item.own_markers].count("parametrize") == 1
    assert not plugin.gate_on_device(item, reason, "plate")  # the CUDA gate is gone: nothing more to replace


def test_gemlite_plugin_answers_cuda_queries_for_the_device(monkeypatch, tmp_path):
    """upstream.libraries.gemlite: torch.cuda.get_device_properties("cuda" or 0) is the device's, and the library
    is imported while torch.cuda.device_count() is the device's (its per-device tables), CUDA's again after."""
    torch = pytest.importorskip("torch")
    import triton_plate_backend.torch_device  # noqa: F401 - registers torch.plate
    from upstream.libraries import gemlite as plugin

    monkeypatch.setattr(torch.cuda, "get_device_properties", torch.cuda.get_device_properties)
    plugin.patch_device_properties("plate")
    for dev in ("cuda", "cuda:0", 0, torch.device("cuda", 0), None):
        assert torch.cuda.get_device_properties(dev) == torch.plate.get_device_properties(0)
    plugin.patch_device_properties("plate")  # once only
    assert torch.cuda.get_device_properties.__wrapped__ is torch.plate.get_device_properties

    pkg = tmp_path / "fakegemlite"
    (pkg / "kernels").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .kernels import config, table\n")
    (pkg / "kernels" / "__init__.py").write_text("")
    (pkg / "kernels" / "table.py").write_text(
        "import torch\nTABLE = [f'cuda:{i}' for i in range(torch.cuda.device_count())]\n"
    )
    (pkg / "kernels" / "config.py").write_text(  # gemlite's set_autotune: reload the kernel modules
        "import importlib\ndef reload_all_modules():\n    from . import table\n    importlib.reload(table)\n"
        "def set_autotune():\n    reload_all_modules()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("fakegemlite", "fakegemlite.kernels", "fakegemlite.kernels.table", "fakegemlite.kernels.config"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    cuda_count = torch.cuda.device_count
    plate_table = [f"cuda:{i}" for i in range(torch.plate.device_count())]
    module = plugin.import_library("plate", "fakegemlite", "fakegemlite.kernels.config")
    assert module.table.TABLE == plate_table and plate_table
    assert torch.cuda.device_count is cuda_count
    module.config.set_autotune()  # a reload rebuilds the table: with the device's count again
    assert sys.modules["fakegemlite.kernels.table"].TABLE == plate_table
    assert torch.cuda.device_count is cuda_count
    with pytest.raises(pytest.UsageError, match="not importable"):
        plugin.import_library("plate", "fakegemlite_absent")
    assert torch.cuda.device_count is cuda_count


def test_gemlite_plugin_takes_gemlites_cuda_branch_for_the_device(monkeypatch):
    """take_cuda_branches: a CUDA_BRANCHES function gemlite calls for a tensor not on CUDA (core.pack's Python
    loop) answers with the one it calls for a CUDA tensor (its Triton kernel) when the tensor is on the device,
    with itself for any other tensor; once only; a module without the pair is a usage error."""
    torch = pytest.importorskip("torch")
    import triton_plate_backend.torch_device  # noqa: F401 - registers torch.plate
    from upstream.libraries import gemlite as plugin

    core = types.ModuleType("fakegemlite_core")
    core.pack_torch = lambda W, nbits, **kw: ("loop", W.device.type, nbits, kw)
    core.pack_triton = lambda W, nbits, **kw: ("kernel", W.device.type, nbits, kw)
    monkeypatch.setitem(sys.modules, "fakegemlite_core", core)
    branches = {"fakegemlite_core": [("pack_torch", "pack_triton")]}
    assert plugin.take_cuda_branches("plate", branches) == ["fakegemlite_core.pack_torch"]
    assert core.pack_torch(torch.zeros(2, device="plate"), 4, transpose=True) == (
        "kernel",
        "plate",
        4,
        {"transpose": True},
    )
    assert core.pack_torch(torch.zeros(2), 4) == ("loop", "cpu", 4, {})
    assert plugin.take_cuda_branches("plate", branches) == []  # once only
    assert core.pack_torch(torch.zeros(2, device="plate"), 2)[0] == "kernel"
    with pytest.raises(pytest.UsageError, match="no pack_absent"):
        plugin.take_cuda_branches("plate", {"fakegemlite_core": [("pack_absent", "pack_triton")]})
    assert plugin.CUDA_BRANCHES["gemlite.core"] == [("pack_weights_over_cols_torch", "pack_weights_over_cols_triton")]


def test_gemlite_plugin_asks_the_device_for_the_fp8_gate(plate_active_driver):
    """ask_fp8_gates: a unittest test skipped with an FP8_GATES reason runs again when the device compiles that
    fp8 type (plate's backend lists fp8e4nv), stays skipped when it does not; other skips are left alone."""
    import unittest

    from upstream.libraries import gemlite as plugin

    reason = next(iter(plugin.FP8_GATES))
    assert plugin.FP8_GATES[reason] in plugin.device_fp8_types()

    def make():
        class Case(unittest.TestCase):
            ran: list = []

            @unittest.skipIf(True, reason)
            def test_fp8(self):
                self.ran.append("fp8")

            @unittest.skipIf(True, "something else")
            def test_other(self):
                self.ran.append("other")

            def test_plain(self):
                self.ran.append("plain")

        return Case

    def run(cls):
        result = unittest.TestResult()
        unittest.defaultTestLoader.loadTestsFromTestCase(cls).run(result)
        return sorted(cls.ran), sorted(why for _, why in result.skipped)

    closed = make()
    assert plugin.ask_fp8_gates(closed, ("fp8e5",)) == []
    assert run(closed) == (["plain"], sorted([reason, "something else"]))
    opened = make()
    assert plugin.ask_fp8_gates(opened, plugin.device_fp8_types()) == ["test_fp8"]
    assert run(opened) == (["fp8", "plain"], ["something else"])
    assert plugin.ask_fp8_gates(opened, plugin.device_fp8_types()) == []  # nothing left to open


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


@pytest.fixture
def renamed_import(library, tmp_path):
    """(tree, revisions, patches dir): the fake library's tests/test_renamed.py imports a name the library
    renamed (gemlite's scale_activations); patches/fakelib/renamed.patch imports it under its new name."""
    tree, revisions = library
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    test = repo / "tests" / "test_renamed.py"
    test.write_text("from fakelib import twice\n\n\ndef test_twice():\n    assert twice(2) == 4\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    test.write_text(test.read_text().replace("import twice", "import double as twice"))
    message = "Import double under its old name\n\nTest: tests/test_renamed.py::test_twice\n"
    message += "Test-Env: PYTEST_ADDOPTS=-p no:hypothesispytest --lib-setup fakelib_device"
    _git(repo, "commit", "-qam", message)
    (tmp_path / "patches" / "fakelib").mkdir(parents=True)
    (tmp_path / "patches" / "fakelib" / "renamed.patch").write_text(_git(repo, "format-patch", "--stdout", "HEAD~1"))
    _git(repo, "checkout", "-q", "HEAD~1", "--", "tests")
    shutil.copy(repo / "tests" / "test_renamed.py", tree / "tests" / "test_renamed.py")
    return tree, revisions, tmp_path / "patches"


def test_patched_library_at_the_top_of_its_checkout_runs_a_patched_copy(renamed_import, tmp_path, monkeypatch):
    """A library whose tests sit at the top of its checkout (test_root "."): --patched copies the checkout,
    applies the patches of its project that touch the selected files, and imports the copy's package."""
    tree, revisions, patches_dir = renamed_import
    monkeypatch.setattr(runner, "PATCHES_DIR", patches_dir)
    argv = ["fakelib", "--src", str(tree), "--revisions", str(revisions), "--report-dir", str(tmp_path / "out")]
    argv += ["--skiplist", str(tree / "skiplist.toml"), "--files", "tests/test_renamed.py"]
    argv += ["--", "--lib-setup", "fakelib_device"]
    assert runner.main(argv) == runner.EXIT_FAILURES  # unpatched: the file does not import
    assert runner.main([*argv[:-3], "--patched", *argv[-3:]]) == 0
    report = json.loads((tmp_path / "out" / "lib-fakelib.json").read_text())
    assert report["patches_applied"] == ["fakelib/renamed.patch"] and report["totals"]["passed"] == 1
    assert "import twice" in (tree / "tests" / "test_renamed.py").read_text()  # the tree is untouched


def test_patches_check_runs_a_library_patch_on_the_device(renamed_import, tmp_path, capsys):
    """`patches check` runs a library's patch tests as its suite runs: library_plugin on the device, the
    library's own options, its package from the tree."""
    tree, revisions, patches_dir = renamed_import
    common = ["--patches-dir", str(patches_dir), "--revisions", str(revisions), "--report-dir", str(tmp_path / "r")]
    assert patches.main(["check", *common, "--src", f"fakelib={tree}", "--before"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("fakelib/renamed.patch"))
    assert "applies" in row and "pass 1/1 (before: error)" in row


def test_mamba_ssm_plugin_makes_cuda_kernels_launch_on_the_device(monkeypatch):
    """mamba_ssm launches each kernel inside `with torch.cuda.device(x.device.index)` and sizes grids from
    torch.cuda.get_device_properties(x.device): both mean the device, tensors made on "cuda" land there."""
    torch = pytest.importorskip("torch")

    import triton_plate_backend.torch_device  # noqa: F401 - registers torch.plate
    from upstream.libraries import mamba_ssm as plugin

    for name in ("device", "get_device_properties", "get_device_capability"):
        monkeypatch.setattr(torch.cuda, name, getattr(torch.cuda, name))  # restored after the test
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="without CUDA"), torch.cuda.device(0):  # CUDA's, in a CPU build
            pass
    mode = plugin.cuda_is("plate")
    try:
        x = torch.ones(4, device="cuda")
        assert x.device.type == "plate"
        with torch.cuda.device(x.device.index):
            assert torch.plate.current_device() == x.device.index
        props = torch.cuda.get_device_properties(x.device)
        assert props.multi_processor_count == torch.plate.get_device_properties(x.device).multi_processor_count
    finally:
        mode.__exit__(None, None, None)
    with pytest.raises(pytest.UsageError, match="torch.nodevice has no device context"):
        plugin.patch_device_context("nodevice")


def test_attorch_capability_maps_a_device_argument_naming_cuda(cuda_names_the_plate_device):
    """flash-attention's tests ask torch.cuda.get_device_capability("cuda") at import: the cuda argument
    means the run's device (torch.plate's own function refuses "cuda")."""
    torch = cuda_names_the_plate_device
    want = torch.plate.get_device_capability()
    assert torch.cuda.get_device_capability("cuda") == want
    assert torch.cuda.get_device_capability(torch.device("cuda", 0)) == want
    assert torch.cuda.get_device_capability(0) == want
    with pytest.raises(Exception, match="expected a plate device"):
        torch.plate.get_device_capability("cuda")


def test_flash_attn_plugin_imports_a_package_without_its_init(tmp_path, monkeypatch):
    """flash_attn/__init__ imports the CUDA extension; its Triton ops' submodules import without running it."""
    from upstream.libraries import flash_attn as plugin

    package = tmp_path / "fakeflash"
    (package / "ops").mkdir(parents=True)
    (package / "__init__.py").write_text("import fakeflash_cuda_extension\n")  # the ImportError it would raise
    (package / "ops" / "__init__.py").write_text("")
    (package / "ops" / "norm.py").write_text("from fakeflash.ops import helper\nTWICE = helper.twice(21)\n")
    (package / "ops" / "helper.py").write_text("def twice(x):\n    return 2 * x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("fakeflash", "fakeflash.ops", "fakeflash.ops.norm", "fakeflash.ops.helper"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.raises(ImportError, match="fakeflash_cuda_extension"):
        __import__("fakeflash")
    monkeypatch.delitem(sys.modules, "fakeflash", raising=False)
    pkg = plugin.package_without_init("fakeflash")
    assert sys.modules["fakeflash"] is pkg and pkg.__path__ == [str(package)]
    assert __import__("fakeflash.ops.norm", fromlist=["TWICE"]).TWICE == 42
    assert plugin.package_without_init("fakeflash") is pkg  # imported once
    with pytest.raises(pytest.UsageError, match="not importable"):
        plugin.package_without_init("fakeflash_absent")


def test_flash_attn_plugin_imports_ops_with_the_device_current():
    """flash-attention's layer norm module asks torch.cuda.current_device() at import (its autotune warp
    counts): while the ops import it is the device's, afterwards CUDA's again."""
    torch = pytest.importorskip("torch")

    import triton_plate_backend.torch_device  # noqa: F401 - registers torch.plate
    from upstream.libraries import flash_attn as plugin

    current = torch.cuda.current_device
    seen = []
    with plugin.cuda_answers("plate", "current_device"):
        seen.append(torch.cuda.current_device())
    assert seen == [torch.plate.current_device()]
    assert torch.cuda.current_device is current


def test_lightllm_plugin_makes_the_cuda_runtime_the_device(monkeypatch):
    """LightLLM's tests time themselves with torch.cuda.Event/synchronize and move tensors with .cuda():
    each means the device."""
    torch = pytest.importorskip("torch")

    import triton_plate_backend.torch_device  # noqa: F401 - registers torch.plate
    from upstream.libraries import lightllm as plugin

    for name in ("synchronize", "Event", "set_device"):
        monkeypatch.setattr(torch.cuda, name, getattr(torch.cuda, name))  # restored after the test
    monkeypatch.setattr(torch.Tensor, "cuda", torch.Tensor.cuda)
    plugin.patch_runtime("plate")
    x = torch.arange(4).cuda()
    assert x.device.type == "plate" and x.cpu().tolist() == [0, 1, 2, 3]
    assert torch.zeros(2).cuda(0).device == torch.device("plate", 0)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    (x + 1).sum()
    end.record()
    torch.cuda.synchronize()
    assert start.elapsed_time(end) >= 0
    with pytest.raises(pytest.UsageError, match="torch.nodevice lacks"):
        plugin.patch_runtime("nodevice")


def test_lightllm_plugin_names_the_device_for_tuned_configs(tmp_path, monkeypatch):
    """LightLLM picks a kernel's tuned config file by get_current_device_name(), None without CUDA: it answers
    the device's name, for the kernel modules that import it by name afterwards."""
    torch = pytest.importorskip("torch")

    import triton_plate_backend.torch_device  # noqa: F401 - registers torch.plate
    from upstream.libraries import lightllm as plugin

    (tmp_path / "fakellm_device_utils.py").write_text(
        "def get_current_device_name():\n    return None  # torch.cuda.is_available() is False\n"
    )
    (tmp_path / "fakellm_kernel_config.py").write_text(
        "from fakellm_device_utils import get_current_device_name\n\n\n"
        "def config_name():\n    return get_current_device_name().replace(' ', '_') + '.json'\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("fakellm_device_utils", "fakellm_kernel_config"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    plugin.patch_device_name("plate", "fakellm_device_utils")
    config = __import__("fakellm_kernel_config")
    assert config.config_name() == torch.plate.get_device_name().replace(" ", "_") + ".json"
    with pytest.raises(pytest.UsageError, match="not importable"):
        plugin.patch_device_name("plate", "fakellm_absent")
