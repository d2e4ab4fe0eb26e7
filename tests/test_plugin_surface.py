"""The Triton plugin surface: discovery, imports, options, stage wiring and the compiled artifacts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
import triton
import triton.language as tl
from entry_points import declare_entry_point
from hypothesis import given, settings
from hypothesis import strategies as st
from triton.backends.compiler import BaseBackend, GPUTarget, Language
from triton.backends.driver import DriverBase
from triton.compiler import ASTSource
from triton.language.extra.cuda import libdevice as cuda_libdevice

from triton_plate_backend import compiler as plate_compiler
from triton_plate_backend import driver as plate_driver
from triton_plate_backend.compiler import (
    DOT_INPUT_PRECISIONS,
    OPTION_FIELDS,
    PlateBackend,
)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = GPUTarget("plate", 1, 32)


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def block_ptr_kernel(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    p = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (0, 0), (BM, BN), (1, 0))
    q = tl.make_block_ptr(out_ptr, (M, N), (N, 1), (0, 0), (BM, BN), (1, 0))
    tl.store(q, tl.load(p, boundary_check=(0, 1)) * 2.0, boundary_check=(0, 1))


ADD_SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}


@pytest.fixture
def plate_env(monkeypatch, tmp_path):
    from triton.backends import Backend, backends

    if "plate" not in backends:  # entry point not installed in this environment: register as discovery would
        monkeypatch.setitem(backends, "plate", Backend(PlateBackend, plate_driver.PlateDriver))
    monkeypatch.setenv("PLATE_MACHINE", "plate-mini")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    return tmp_path


def _subprocess(code: str, **env) -> subprocess.CompletedProcess:
    full_env = {**os.environ, **env}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=REPO,
        timeout=120,
    )


def _fake_entry_point(tmp_path) -> str:
    """A dist-info on sys.path that declares the plate entry point, as the installed package will."""
    return declare_entry_point(tmp_path / "ep", "triton.backends", "triton_plate_backend")


# ---- discovery and imports -------------------------------------------------------------------
def test_one_concrete_backend_and_driver_per_module():
    from triton.backends import _find_concrete_subclasses

    assert _find_concrete_subclasses(plate_compiler, BaseBackend) is PlateBackend
    assert _find_concrete_subclasses(plate_driver, DriverBase) is plate_driver.PlateDriver


def test_plugin_imports_are_light_and_side_effect_free():
    r = _subprocess("""
        import sys, time
        import triton
        t = time.perf_counter()
        import triton_plate_backend.compiler, triton_plate_backend.driver
        dt = time.perf_counter() - t
        heavy = [m for m in ("torch", "numpy", "triton_plate_backend.sim.device", "triton_plate_backend.launcher")
                 if m in sys.modules]
        print(dt, heavy)
        assert not heavy, heavy
    """)
    assert r.returncode == 0, r.stderr


def test_discovery_through_the_entry_point(tmp_path):
    """With the entry point installed, `import triton` finds plate; TRITON_DEFAULT_BACKEND selects it."""
    ep = _fake_entry_point(tmp_path)
    r = _subprocess(
        """
        import triton
        from triton.backends import backends
        import triton_plate_backend.compiler as c, triton_plate_backend.driver as d
        assert backends["plate"].compiler is c.PlateBackend and backends["plate"].driver is d.PlateDriver
        drv = triton.runtime.driver.active
        assert type(drv) is d.PlateDriver, drv
        assert drv.get_current_target() == triton.backends.compiler.GPUTarget("plate", 1, 32)
    """,
        PYTHONPATH=ep,
        TRITON_DEFAULT_BACKEND="plate",
    )
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("first", ["triton_plate_backend.compiler", "triton_plate_backend.driver"])
def test_importing_the_plugin_before_triton(tmp_path, first):
    """Importing our module first must not leave Triton's discovery a half-built module."""
    ep = _fake_entry_point(tmp_path)
    r = _subprocess(
        f"""
        import {first}
        import triton
        from triton.backends import backends
        from triton_plate_backend.compiler import PlateBackend
        from triton_plate_backend.driver import PlateDriver
        assert backends["plate"].compiler is PlateBackend and backends["plate"].driver is PlateDriver
    """,
        PYTHONPATH=ep,
    )
    assert r.returncode == 0, r.stderr


# ---- options ---------------------------------------------------------------------------------
def test_options_defaults_json_and_hash(plate_env):
    be = PlateBackend(TARGET)
    o = be.parse_options({})
    assert o.machine == "plate-mini"  # from PLATE_MACHINE
    assert o.backend_name == "plate" and o.num_ctas == 1 and o.instrumentation_mode == "" and o.debug is False
    assert set(o.allowed_dot_input_precisions) == set(DOT_INPUT_PRECISIONS)
    assert o.supported_fp8_dtypes == ("fp8e4nv", "fp8e5", "fp8e4b15", "fp8e4b8", "fp8e5b16")
    json.dumps(o.__dict__)
    assert o.hash() == be.parse_options({}).hash()
    assert o.hash() != be.parse_options({"num_warps": 8}).hash()
    with pytest.raises(AttributeError):
        o.num_warps = 2  # frozen


def test_parse_options_filters_unknown_keys_and_is_idempotent(plate_env):
    be = PlateBackend(TARGET)
    o = be.parse_options({"num_warps": 2, "BLOCK": 128, "debug": True, "not_an_option": 1, "maxnreg": None})
    assert o.num_warps == 2 and o.debug is True
    assert be.parse_options(o.__dict__) == o
    assert be.parse_options(json.loads(json.dumps(o.__dict__))) == o  # lists come back as tuples


@settings(max_examples=40, deadline=None)
@given(
    num_warps=st.sampled_from([1, 2, 4, 8, 16, 32]),
    num_stages=st.integers(0, 6),
    precisions=st.lists(st.sampled_from(DOT_INPUT_PRECISIONS), min_size=1, unique=True),
    debug=st.booleans(),
    fusion=st.booleans(),
)
def test_parse_options_round_trip_property(num_warps, num_stages, precisions, debug, fusion):
    be = PlateBackend(TARGET)
    o = be.parse_options(
        {
            "num_warps": num_warps,
            "num_stages": num_stages,
            "debug": debug,
            "allowed_dot_input_precisions": precisions,
            "default_dot_input_precision": precisions[0],
            "enable_fp_fusion": fusion,
            "machine": "plate-mini",
        }
    )
    again = be.parse_options(o.__dict__)
    assert again == o and again.hash() == o.hash()
    assert set(o.__dict__) == set(OPTION_FIELDS)


def test_parse_options_shares_one_instance_per_argument_set(plate_env, monkeypatch):
    """parse_options keeps the options it made (compiler._PARSED): equal arguments of equal types give the
    same instance and digest; arguments that differ only in a value's type (1, 1.0, True) give the options
    and digests they gave before, an illegal one raises every time, and unhashable ones are not kept."""
    be = PlateBackend(TARGET)
    o = be.parse_options({"num_warps": 2, "BLOCK": 128})
    assert be.parse_options({"num_warps": 2, "BLOCK": 64}) is o  # non-option keys do not count
    assert be.parse_options(dict(o.__dict__)) is be.parse_options(dict(o.__dict__)) == o
    assert o.hash() == o._digest() == plate_compiler.PlateOptions(**o.__dict__).hash()
    one, true = be.parse_options({"debug": 1}), be.parse_options({"debug": True})
    assert one.debug == 1 and type(one.debug) is int and type(true.debug) is bool
    assert one.hash() == one._digest() != true.hash() == true._digest()  # "debug-1" vs "debug-True"
    for _ in range(2):
        with pytest.raises(AssertionError, match="power of 2"):
            be.parse_options({"num_warps": True})
    libs = be.parse_options({"extern_libs": {"libdevice": "/x.bc"}})
    assert libs.extern_libs == (("libdevice", "/x.bc"),) and libs.hash() == libs._digest()
    monkeypatch.setenv("PLATE_MACHINE", "plate1")  # an argument of its own: not the plate-mini options
    assert be.parse_options({"num_warps": 2}).machine == "plate1"
    assert be.parse_options({"num_warps": 2, "machine": "plate-mini"}) is o


def test_a_copy_of_returned_options_parses_to_those_options(plate_env, monkeypatch):
    """compile() parses a copy of the binder's options' __dict__ again: that copy gives the very options; a copy
    with a value of another type, another value, another key order or an extra key is parsed as any dict is."""
    be = PlateBackend(TARGET)
    o = be.parse_options({"num_warps": 2, "debug": False})
    assert be.parse_options(dict(o.__dict__)) is o
    monkeypatch.setenv("PLATE_MACHINE", "plate1")  # the copy names its machine: no knob is read for it
    assert be.parse_options(dict(o.__dict__)) is o and o.machine == "plate-mini"
    as_int = be.parse_options(dict(o.__dict__, debug=0))
    assert as_int == o and type(as_int.debug) is int and as_int.hash() != o.hash()
    other = be.parse_options(dict(o.__dict__, num_warps=4))
    assert other.num_warps == 4 and other.machine == "plate-mini"
    reordered = dict(reversed(list(o.__dict__.items())))
    assert be.parse_options(reordered) == o and be.parse_options(dict(o.__dict__, BLOCK=64)) == o
    assert plate_compiler._options_copied([("num_warps", 2)]) is None


def test_option_memos_are_bounded(plate_env, monkeypatch):
    monkeypatch.setattr(plate_compiler, "_MEMO_LIMIT", 4)
    be = PlateBackend(TARGET)
    for stages in range(10):
        be.parse_options({"num_stages": stages}).hash()
    assert len(plate_compiler._PARSED) <= 4 and len(plate_compiler._OPTION_HASHES) <= 4
    assert be.parse_options({"num_stages": 9}).num_stages == 9


@pytest.mark.parametrize(
    "opts, legal",
    [
        ({"num_warps": 3}, "power of 2"),
        ({"num_ctas": 2}, "1 (PLATE has no CTA clusters)"),
        ({"num_stages": -1}, ">= 0"),
        ({"default_dot_input_precision": "fp64x9"}, "one of"),
        ({"allowed_dot_input_precisions": ("ieee", "magic")}, "subset"),
        ({"supported_fp8_dtypes": ("fp8e8m0",)}, "subset of ('fp8e4nv', 'fp8e5', 'fp8e4b15', 'fp8e4b8', 'fp8e5b16')"),
        ({"instrumentation_mode": "consan"}, "''"),
        ({"machine": "plate99"}, "plate1, plate-mini, plate4"),
    ],
)
def test_bad_options_say_the_legal_form(opts, legal):
    with pytest.raises(ValueError, match="not supported by plate; legal: ") as e:
        PlateBackend(TARGET).parse_options(opts)
    assert legal in str(e.value)


def test_num_warps_not_a_power_of_2_is_an_assertion_error():  # as upstream test_num_warps_pow2 expects
    with pytest.raises(AssertionError, match="must be a power of 2"):
        PlateBackend(TARGET).parse_options({"num_warps": 3})


def test_backend_hash_covers_package_source_and_machine(monkeypatch):
    be = PlateBackend(TARGET)
    monkeypatch.setenv("PLATE_MACHINE", "plate1")
    h1 = be.hash()
    monkeypatch.setenv("PLATE_MACHINE", "plate-mini")
    h2 = be.hash()
    assert h1 != h2
    assert plate_compiler.package_source_hash()[:16] in h1
    assert len(plate_compiler.package_source_hash()) == 64


# ---- the rest of the backend surface -----------------------------------------------------------
def test_backend_surface():
    be = PlateBackend(TARGET)
    assert be.binary_ext == "pbin"
    assert PlateBackend.supports_target(TARGET) and not PlateBackend.supports_target(GPUTarget("cuda", 90, 32))
    assert be.get_codegen_implementation(be.parse_options({}))["min_dot_size"](None, None) == (1, 1, 1)
    libdevice = be.get_module_map()["triton.language.extra.libdevice"]
    assert libdevice.__name__ == "triton_plate_backend.libdevice_api"  # CUDA's wrappers and the names they lack
    assert libdevice.sin is cuda_libdevice.sin and libdevice.fast_tanhf is not None
    md = type("M", (), {"num_warps": 4, "num_ctas": 1, "shared": 4096, "machine": "plate-mini"})()
    assert be.pack_metadata(md) == (4, 1, 4096, "plate-mini")
    stages = {}
    be.add_stages(stages, be.parse_options({}), Language.TRITON)
    assert list(stages) == ["ttir", "pir", "pasm", "pbin"]
    with pytest.raises(plate_compiler.CompileError, match="Triton kernels only"):
        be.add_stages({}, be.parse_options({}), Language.GLUON)


def test_each_stage_runs_with_the_cycle_collector_paused_and_restores_it():
    """add_stages wires every stage through compiler._run_stage: the collector is off inside a stage
    and back as it was after, also when the stage raises."""
    import functools
    import gc

    seen = []

    def stage(src, metadata, options):
        seen.append(gc.isenabled())
        if src == "raise":
            raise ValueError(src)
        return src

    run = functools.partial(plate_compiler._run_stage, stage, options=None)
    was = gc.isenabled()
    try:
        gc.enable()
        assert run("text", {}) == "text"
        with pytest.raises(ValueError):
            run("raise", {})
        assert seen == [False, False] and gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()
    stages = {}
    be = PlateBackend(TARGET)
    be.add_stages(stages, be.parse_options({}), Language.TRITON)
    assert all(s.func is plate_compiler._run_stage for s in stages.values())


def _make_ttir(fn, signature, constexprs, opts=None):
    from triton._C.libtriton import ir

    be = PlateBackend(TARGET)
    options = be.parse_options(opts or {})
    ctx = ir.context()
    ir.load_dialects(ctx)
    be.load_dialects(ctx)
    src = ASTSource(fn, signature=signature, constexprs=constexprs)
    mod = src.make_ir(TARGET, options, be.get_codegen_implementation(options), be.get_module_map(), ctx)
    stages = {}
    be.add_stages(stages, options, src.language)
    return stages, stages["ttir"](mod, {}), options


@pytest.mark.filterwarnings("ignore:tl.make_block_ptr is deprecated")
def test_ttir_stage_runs_tritons_passes():
    _, mod, _ = _make_ttir(
        block_ptr_kernel,
        {"x_ptr": "*fp32", "out_ptr": "*fp32", "M": "i32", "N": "i32", "BM": "constexpr", "BN": "constexpr"},
        {"BM": 16, "BN": 16},
    )
    text = str(mod)
    assert "tt.func public @block_ptr_kernel" in text
    assert "tt.make_tensor_ptr" not in text  # rewrite_tensor_pointer ran
    assert "loc(" in text  # locations kept for the lowering's error messages


def test_ttir_stage_output_reads_with_our_parser():
    from triton_plate_backend.ttir.parser import parse

    _, mod, _ = _make_ttir(add_kernel, ADD_SIG, {"BLOCK": 128})
    module = parse(str(mod), "add_kernel.ttir")
    assert module is not None


# ---- full compiles -------------------------------------------------------------------------------------
def test_compile_produces_every_stage(plate_env, monkeypatch):
    from triton_plate_backend.isa.asm import assemble
    from triton_plate_backend.isa.encoding import decode

    dump = plate_env / "dump"
    monkeypatch.setenv("PLATE_DUMP_DIR", str(dump))
    k = triton.compile(ASTSource(add_kernel, signature=ADD_SIG, constexprs={"BLOCK": 128}), target=TARGET)
    assert {"ttir", "pir", "pasm", "pbin"} <= set(k.asm)
    assert isinstance(k.asm["pbin"], bytes) and isinstance(k.asm["pasm"], str)
    program = decode(k.asm["pbin"])
    assert k.metadata.name == program.name == "add_kernel"
    assert k.metadata.shared == program.sram_bytes > 0
    assert k.metadata.global_scratch_size == 0 and k.metadata.profile_scratch_size == 0
    assert k.metadata.machine == "plate-mini"
    assert assemble(k.asm["pasm"]) == program  # the pasm text is the binary (names of tiles aside)
    dumped = sorted(p.suffix for p in dump.iterdir())
    assert {".ttir", ".pir", ".pasm"} <= set(dumped)
    report = next(dump.glob("*.report.txt")).read_text()  # the access lines, computed for the dump only
    assert "\naccess:\n" in report and "tt.load" in report.split("\naccess:\n")[1]


def test_compile_cache_key_follows_the_machine(plate_env, monkeypatch):
    src = ASTSource(add_kernel, signature=ADD_SIG, constexprs={"BLOCK": 64})
    a = triton.compile(src, target=TARGET)
    monkeypatch.setenv("PLATE_MACHINE", "plate1")
    b = triton.compile(src, target=TARGET)
    assert a.hash != b.hash and b.metadata.machine == "plate1"


def test_compile_from_a_ttir_file(plate_env):
    """triton.compile(path.ttir) skips our ttir stage and starts at pir (IR-level tests use this)."""
    k = triton.compile(ASTSource(add_kernel, signature=ADD_SIG, constexprs={"BLOCK": 64}), target=TARGET)
    path = plate_env / "add_kernel.ttir"
    path.write_text(k.asm["ttir"])
    again = triton.compile(str(path), target=TARGET)
    assert again.metadata.name == "add_kernel" and again.asm["pasm"] == k.asm["pasm"]


def test_each_stage_reads_the_text_of_the_stage_before(plate_env):
    from triton_plate_backend.isa.encoding import decode
    from triton_plate_backend.text_memo import bypassed

    stages, mod, _ = _make_ttir(add_kernel, ADD_SIG, {"BLOCK": 128}, {"machine": "plate-mini"})
    md = {"hash": "0123456789abcdef"}
    pir = stages["pir"](mod, md)
    pasm = stages["pasm"](pir, md)
    assert type(pir) is str and type(pasm) is str  # plain text: nothing rides along
    assert md["name"] == "add_kernel" and md["shared"] > 0
    pbin = stages["pbin"](pasm, md)
    with bypassed():  # the pir text parsed, the pasm text assembled, for real
        assert stages["pasm"](pir, dict(md)) == pasm
        assert stages["pbin"](pasm, dict(md)) == pbin
    assert decode(pbin).name == "add_kernel"
    assert "; SRAM of the plate IR ops' results" in pasm and "tt.load" in pasm.split(".kernel")[0]


def test_a_failing_lowering_points_to_a_reproducer(plate_env, monkeypatch):
    from triton_plate_backend.errors import CompileError
    from triton_plate_backend.passes import pipeline

    def fail(module, analysis=None, persistent_sram=None, persistent_groups=1):
        raise CompileError("tt.frobnicate is not supported")

    monkeypatch.setattr(pipeline, "run_passes", fail)
    monkeypatch.setenv("PLATE_DUMP_DIR", str(plate_env / "repro"))
    stages, mod, _ = _make_ttir(add_kernel, ADD_SIG, {"BLOCK": 128})
    with pytest.raises(CompileError, match="frobnicate") as e:
        stages["pir"](mod, {"hash": "feedface00000000"})
    (note,) = e.value.__notes__
    path = plate_env / "repro" / "add_kernel-feedface0000.ttir"
    assert str(path) in note and "tt.func public @add_kernel" in path.read_text()
