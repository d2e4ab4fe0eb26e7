"""The launcher: argument binding, grids, hooks, host-memory mode, threads, and end-to-end kernels."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections import namedtuple
from types import SimpleNamespace

import pytest
import torch
import triton
import triton.language as tl
from entry_points import declare_entry_point

from triton_plate_backend.driver import PlateDriver
from triton_plate_backend.isa.program import Arg, Program
from triton_plate_backend.launcher import (
    MAX_GRID,
    LaunchError,
    PlateLauncher,
    PointerArgumentError,
    bind_arguments,
    check_grid,
    flatten,
)
from triton_plate_backend.sim import device as sim_device

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VEC_ADD_PASM = os.path.join(REPO, "examples", "asm", "vec_add.pasm")
Meta = namedtuple("Meta", "name machine num_warps num_ctas shared")
VEC_ADD_SIG = SimpleNamespace(signature={"x": "*fp32", "y": "*fp32", "o": "*fp32", "n": "i32"})


@pytest.fixture
def mini(monkeypatch):
    monkeypatch.setenv("PLATE_MACHINE", "plate-mini")
    monkeypatch.delenv("PLATE_HOST_MEMORY", raising=False)
    monkeypatch.delenv("PLATE_TRACE", raising=False)
    sim_device.reset_device(0)
    yield sim_device.get_device(0)
    sim_device.reset_device(0)


class Hooks:
    def __init__(self):
        self.calls = []

    def enter(self, md):
        self.calls.append(("enter", md))

    def exit(self, md):
        self.calls.append(("exit", md))


def _vec_add_handle():
    """The launcher's view of a kernel: only the pbin bytes, decoded by the driver's load_binary."""
    from triton_plate_backend.isa.asm import assemble
    from triton_plate_backend.isa.encoding import encode

    with open(VEC_ADD_PASM) as f:
        pbin = encode(assemble(f.read()))
    _, function, *_ = PlateDriver().utils.load_binary("vec_add", pbin, 0x3000, 0)
    return function


def _program(*types):
    return Program("k", args=[Arg(f"a{i}", t) for i, t in enumerate(types)])


# ---- grids ---------------------------------------------------------------------------------------------
def test_grid_limits_like_cuda():
    assert check_grid("k", 1, 1, 1) == (1, 1, 1)
    assert check_grid("k", MAX_GRID[0], MAX_GRID[1], MAX_GRID[2]) == MAX_GRID
    with pytest.raises(LaunchError, match="y = 65536 outside 0..65535"):
        check_grid("k", 1, 65536, 1)
    with pytest.raises(RuntimeError, match="x = -1"):  # a RuntimeError, as CUDA's launch failure
        check_grid("k", -1, 1, 1)


def test_zero_sized_grid_is_a_no_op_that_still_calls_the_hooks(mini, monkeypatch):
    monkeypatch.setenv("PLATE_HOST_MEMORY", "1")
    hooks = Hooks()
    launcher = PlateLauncher(VEC_ADD_SIG, Meta("vec_add", "plate-mini", 4, 1, 0x3000))
    x = torch.zeros(4)
    launcher(0, 1, 1, 0, _vec_add_handle(), None, {"md": 1}, hooks.enter, hooks.exit, x, x, x, 4)
    assert hooks.calls == [("enter", {"md": 1}), ("exit", {"md": 1})]
    assert mini.launches == 0 and mini.clock_ns == 0


def test_machine_mismatch_is_an_error(mini):
    launcher = PlateLauncher(VEC_ADD_SIG, Meta("vec_add", "plate1", 4, 1, 0x3000))
    with pytest.raises(LaunchError, match="compiled for machine 'plate1' but device 0 runs 'plate-mini'"):
        launcher(1, 1, 1, 0, _vec_add_handle(), None, None, None, None, 0, 0, 0, 0)


# ---- argument binding ------------------------------------------------------------------------------
def test_flatten_drops_constexprs_and_flattens_tuples():
    sig = ["*fp32", "constexpr", ("i32", ("fp32", "constexpr")), "i64"]
    args = ["P", 128, (3, (1.5, 7)), 9]
    assert flatten(sig, args) == [(0, "*fp32", "P"), (2, "i32", 3), (2, "fp32", 1.5), (3, "i64", 9)]
    with pytest.raises(LaunchError, match=r"takes 4 arguments \(3 of them not constexpr\), the launch passed 2"):
        flatten(sig, args[:2])
    with pytest.raises(LaunchError, match="expected a tuple of 2"):
        flatten(["i32", ("i32", "i32")], [1, (1,)])


def test_flatten_takes_the_runtime_arguments_alone():
    """CompiledKernel[grid](...) as before Triton 3.3 (FlagGems' libentry): the constexprs left out."""
    sig = ["*fp32", "constexpr", ("i32", ("fp32", "constexpr")), "i64"]
    assert flatten(sig, ["P", (3, (1.5, 7)), 9]) == [(0, "*fp32", "P"), (2, "i32", 3), (2, "fp32", 1.5), (3, "i64", 9)]
    # an integer argument equal to 1 is specialized: "constexpr" in the signature, yet the launch passes it
    specialized, declared = ["*fp32", "constexpr", "constexpr", "i32"], [False, False, True, False]
    assert flatten(specialized, ["P", 1, 5], declared) == [(0, "*fp32", "P"), (3, "i32", 5)]


def test_flatten_expands_tensor_descriptors_like_tritons_rewrite():
    base = torch.zeros(8, 16)
    desc = SimpleNamespace(base=base, shape=[8, 16], strides=[16, 1], padding="zero", round_f32_to_tf32=False)
    flat = flatten(["tensordesc<fp32[4, 8]>"], [desc])
    assert [t for _, t, _ in flat] == ["*fp32", "i64", "i64", "i64", "i64", "i1", "i1", "i32", "i32", "i64", "i64"]
    assert [v for _, _, v in flat][1:] == [8, 16, 16, 1, False, False, 8, 16, 16, 1]


def test_scalars_are_wrapped_to_the_parameter_type(mini):
    program = _program("i32", "i64", "i1", "f32", "i64")
    values, buffers = bind_arguments(
        "k", program, ["i32", "u64", "i1", "fp32", "i64"], [2**31 + 1, 2**64 - 1, True, 3, -5], mini
    )
    assert values == [-(2**31) + 1, -1, 1, 3.0, -5] and buffers == []
    assert isinstance(values[3], float)
    # each width's edges: the values kept as they are (no call) and the first ones wrapped
    edges = {"i8": [127, 128, -128, -129], "i16": [2**15 - 1, 2**15, -(2**15)], "i1": [0, 1, 2, -1]}
    want = {"i8": [127, -128, -128, 127], "i16": [2**15 - 1, -(2**15), -(2**15)], "i1": [0, 1, 0, 1]}
    for ty, vs in edges.items():
        got, _ = bind_arguments("k", _program(*[ty] * len(vs)), [ty] * len(vs), vs, mini)
        assert got == want[ty], ty


def test_argument_count_must_match_the_binary(mini):
    with pytest.raises(LaunchError, match=r"takes 2 runtime argument\(s\) \(a0: ptr, a1: i32\)"):
        bind_arguments("k", _program("ptr", "i32"), ["*fp32", "i32", "i32"], [torch.zeros(1), 1, 2], mini)


def test_cpu_tensor_without_host_memory_mode_is_refused(mini):
    with pytest.raises(
        PointerArgumentError,
        match=r"Pointer argument \(at 1\) cannot be accessed from Triton "
        r"\(cpu tensor\?\).*PLATE_HOST_MEMORY=1",
    ):
        bind_arguments("k", _program("i32", "ptr"), ["i32", "*fp32"], [3, torch.zeros(4)], mini)
    with pytest.raises(ValueError):  # same exception type as CUDA's launcher
        bind_arguments("k", _program("ptr"), ["*fp32"], [torch.zeros(4)], mini)


def test_host_memory_mode_registers_whole_storages(mini, monkeypatch):
    monkeypatch.setenv("PLATE_HOST_MEMORY", "1")
    t = torch.arange(16, dtype=torch.float32)
    view = t[4:]
    values, buffers = bind_arguments("k", _program("ptr"), ["*fp32"], [view], mini)
    assert values == [view.data_ptr()]
    (buf,) = buffers
    assert (buf.addr, buf.nbytes) == (t.untyped_storage().data_ptr(), 64)


def test_non_cpu_tensors_and_non_pointers_are_refused(mini):
    cuda_like = SimpleNamespace(data_ptr=lambda: 4096, device=SimpleNamespace(type="cuda"))
    with pytest.raises(PointerArgumentError, match="is a cuda tensor"):
        bind_arguments("k", _program("ptr"), ["*fp32"], [cuda_like], mini)
    with pytest.raises(PointerArgumentError, match="must be a tensor"):
        bind_arguments("k", _program("ptr"), ["*fp32"], ["not a tensor"], mini)


def test_device_memory_pointers_pass_through(mini):
    rec = mini.memory.alloc(256)
    buf = SimpleNamespace(data_ptr=lambda: rec.base)  # no .device: an address in device memory
    values, buffers = bind_arguments("k", _program("ptr"), ["*fp32"], [buf], mini)
    assert values == [rec.base] and buffers == []


# ---- launches on the simulator -------------------------------------------------------------------
def _launch_vec_add(launcher, handle, x, y, o, hooks=None, grid=None):
    grid = grid or (triton.cdiv(x.numel(), 1024), 1, 1)
    h = hooks or Hooks()
    launcher(*grid, 0, handle, None, {"name": "vec_add"}, h.enter, h.exit, x, y, o, x.numel())


def test_launch_from_the_binary_alone(mini, monkeypatch):
    monkeypatch.setenv("PLATE_HOST_MEMORY", "1")
    launcher = PlateLauncher(VEC_ADD_SIG, Meta("vec_add", "plate-mini", 4, 1, 0x3000))
    x, y = torch.randn(3000), torch.randn(3000)
    o = torch.zeros(3000)
    hooks = Hooks()
    _launch_vec_add(launcher, _vec_add_handle(), x, y, o, hooks)
    assert torch.equal(o, x + y)
    assert [c[0] for c in hooks.calls] == ["enter", "exit"]
    assert mini.memory.allocations == []  # host buffers are registered for the launch only
    assert mini.launches == 1 and mini.clock_ns > 0
    import triton_plate_backend

    assert triton_plate_backend.last_profile() is mini.last_profile and mini.clock_ns == mini.last_profile.time_ns


def test_out_of_bounds_access_faults_and_frees_the_host_buffers(mini, monkeypatch):
    from triton_plate_backend.errors import MemoryFault

    monkeypatch.setenv("PLATE_HOST_MEMORY", "1")
    launcher = PlateLauncher(VEC_ADD_SIG, Meta("vec_add", "plate-mini", 4, 1, 0x3000))
    x, o = torch.randn(1024), torch.zeros(1024)
    with pytest.raises(MemoryFault):  # n larger than the tensors
        launcher(2, 1, 1, 0, _vec_add_handle(), None, None, None, None, x, x, o, 2048)
    assert mini.memory.allocations == [] and mini.launches == 0


def test_concurrent_launches_from_threads(mini, monkeypatch):
    monkeypatch.setenv("PLATE_HOST_MEMORY", "1")
    launcher = PlateLauncher(VEC_ADD_SIG, Meta("vec_add", "plate-mini", 4, 1, 0x3000))
    handle = _vec_add_handle()
    shared_x = torch.randn(2048)
    jobs = [(shared_x, torch.randn(2048), torch.zeros(2048)) for _ in range(4)]
    errors = []

    def work(x, y, o):
        try:
            for _ in range(3):
                _launch_vec_add(launcher, handle, x, y, o)
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=job) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for x, y, o in jobs:
        assert torch.equal(o, x + y)
    assert mini.launches == 12


@pytest.mark.parametrize("mode", ["dir", "file"])
def test_trace_per_launch(mini, monkeypatch, tmp_path, mode):
    target = tmp_path / ("traces" if mode == "dir" else "last.json")
    monkeypatch.setenv("PLATE_TRACE", str(target))
    monkeypatch.setenv("PLATE_HOST_MEMORY", "1")
    launcher = PlateLauncher(VEC_ADD_SIG, Meta("vec_add", "plate-mini", 4, 1, 0x3000))
    x = torch.randn(1024)
    for _ in range(2):
        _launch_vec_add(launcher, _vec_add_handle(), x, x, torch.zeros(1024))
    files = sorted(target.iterdir()) if mode == "dir" else [target]
    assert [f.name for f in files] == (
        ["000001-vec_add.json", "000002-vec_add.json"] if mode == "dir" else ["last.json"]
    )
    json.loads(files[-1].read_text())


# ---- end to end: @triton.jit on CPU tensors in host-memory mode ----------------------------------------
@pytest.fixture
def active(monkeypatch, mini, plate_active_driver):
    """conftest's plate_active_driver on the plate-mini machine, plate Triton's default backend too."""
    monkeypatch.setenv("TRITON_DEFAULT_BACKEND", "plate")
    return plate_active_driver


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def test_jit_vector_add(active):
    x, y = torch.randn(3000), torch.randn(3000)
    out = torch.empty_like(x)
    k = add_kernel[(triton.cdiv(3000, 1024),)](x, y, out, 3000, BLOCK=1024)
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)
    assert {"ttir", "pir", "pasm", "pbin"} <= set(k.asm)
    assert "add_kernel" in k.asm["pasm"]


def test_jit_launch_hooks(active):
    from triton import knobs

    seen = []
    x = torch.randn(256)
    out = torch.empty_like(x)

    def enter(md):
        seen.append(("enter", md.get()["name"]))

    def exit_(md):
        seen.append(("exit", md.get()["name"]))

    knobs.runtime.launch_enter_hook.add(enter)
    knobs.runtime.launch_exit_hook.add(exit_)
    try:
        add_kernel[(1,)](x, x, out, 256, BLOCK=256)
    finally:
        knobs.runtime.launch_enter_hook.remove(enter)
        knobs.runtime.launch_exit_hook.remove(exit_)
    assert seen == [("enter", "add_kernel"), ("exit", "add_kernel")]
    torch.testing.assert_close(out, 2 * x, rtol=0, atol=0)


def test_jit_threads(active):
    xs = [torch.randn(2048) for _ in range(3)]
    outs = [torch.empty(2048) for _ in xs]
    add_kernel[(2,)](xs[0], xs[0], outs[0], 2048, BLOCK=1024)  # compile once, then race launches
    errors = []

    def work(i):
        try:
            for _ in range(3):
                add_kernel[(2,)](xs[i], xs[i], outs[i], 2048, BLOCK=1024)
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for x, o in zip(xs, outs):
        torch.testing.assert_close(o, 2 * x, rtol=0, atol=0)


def test_jit_cpu_tensor_without_host_memory_mode(active, monkeypatch):
    monkeypatch.delenv("PLATE_HOST_MEMORY")
    x = torch.randn(128)
    with pytest.raises(ValueError, match=r"Pointer argument \(at 0\) cannot be accessed from Triton \(cpu tensor\?\)"):
        add_kernel[(1,)](x, x, x, 128, BLOCK=128)


def test_cache_hit_in_a_fresh_process_runs_from_the_cached_binary(active, tmp_path):
    """A second process finds the kernel in Triton's cache: it has only the .pbin bytes and the metadata."""
    import importlib.util
    import subprocess
    import sys
    import textwrap

    script = tmp_path / "cached_add.py"
    script.write_text(
        textwrap.dedent("""
        import torch, triton, triton.language as tl

        @triton.jit
        def double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)

        def main():
            x = torch.arange(512, dtype=torch.float32)
            out = torch.empty_like(x)
            double[(1,)](x, out, 512, BLOCK=512)
            assert torch.equal(out, 2 * x)

        if __name__ == "__main__":
            from triton import knobs
            hits = []
            knobs.compilation.listener = lambda **kw: hits.append(kw["cache_hit"])
            main()
            print("cache hits", hits)
        """)
    )
    spec = importlib.util.spec_from_file_location("cached_add", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main()  # compiles into TRITON_CACHE_DIR
    ep = declare_entry_point(tmp_path / "ep", "triton.backends", "triton_plate_backend")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [ep, os.environ.get("PYTHONPATH")])),
    }
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "cache hits [True]" in r.stdout


# ---- ml_dtypes only for bf16 / fp8 ----------------------------------------------------------------------
def test_an_fp32_launch_does_not_import_ml_dtypes(tmp_path):
    # its C extension takes about a second to load (dtypes.py loads it on the first bf16 / fp8 use); the
    # bf16 launch after the fp32 and int32 ones must load it and still compute
    code = (
        "import sys, torch, triton, triton.language as tl\n"
        "@triton.jit\n"
        "def add(x, y, out, n, BLOCK: tl.constexpr):\n"
        "    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    tl.store(out + o, tl.load(x + o, mask=o < n) + tl.load(y + o, mask=o < n), mask=o < n)\n"
        "def run(dtype):\n"
        "    x = (torch.arange(300) % 7).to(dtype)\n"
        "    out = torch.empty(300, dtype=dtype, device='plate')\n"
        "    add[(3,)](x.to('plate'), x.to('plate'), out, 300, BLOCK=128)\n"
        "    assert torch.equal(out.cpu(), x + x), dtype\n"
        "run(torch.float32)\n"
        "run(torch.int32)\n"
        "assert 'ml_dtypes' not in sys.modules, 'an fp32 / int32 launch imported ml_dtypes'\n"
        "run(torch.bfloat16)\n"
        "assert 'ml_dtypes' in sys.modules\n"
    )
    (tmp_path / "launch.py").write_text(code)  # Triton reads a jit function's source from its file
    env = {**os.environ, "TRITON_ALWAYS_COMPILE": "1"}
    subprocess.run([sys.executable, str(tmp_path / "launch.py")], check=True, env=env)


def test_host_memory_mode_is_read_only_for_a_cpu_tensor(mini, monkeypatch):
    """A launch over device memory does not ask the PLATE_HOST_MEMORY knob (an environment read per launch); a
    CPU tensor does, at its launch."""
    monkeypatch.setenv("PLATE_HOST_MEMORY", "maybe")  # malformed: reading it raises
    rec = mini.memory.alloc(256)
    values, buffers = bind_arguments(
        "k", _program("ptr"), ["*fp32"], [SimpleNamespace(data_ptr=lambda: rec.base)], mini
    )
    assert values == [rec.base] and buffers == []
    with pytest.raises(ValueError, match="PLATE_HOST_MEMORY='maybe'"):
        bind_arguments("k", _program("ptr"), ["*fp32"], [torch.zeros(4)], mini)
