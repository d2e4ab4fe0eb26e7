"""The examples (examples/*.py) as tests: every example and case runs its Triton kernel on plate
(plate-mini) and compares with torch on CPU, with the tolerances of examples/_common.py.

Cases the lowering cannot compile yet are marked xfail(strict=True) with the compile error's text
in XFAIL below: strict, so a case that starts passing fails the run until its mark is removed.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import threading
from pathlib import Path

import pytest
import torch
import triton

from triton_plate_backend.compiler import PlateBackend
from triton_plate_backend.driver import PlateDriver
from triton_plate_backend.sim import device as sim_device

REPO = Path(__file__).resolve().parent.parent
EXAMPLES_DIR = REPO / "examples"
EXAMPLES = (
    "vector_add",
    "fused_softmax",
    "matmul",
    "low_memory_dropout",
    "layer_norm",
    "fused_attention",
    "grouped_gemm",
    "persistent_matmul",
    "block_ptr_matmul",
    "tensor_descriptor",
)

# (example, case) -> summary of the CompileError the lowering raises today. Empty: every case runs.
pytestmark = pytest.mark.filterwarnings("ignore:tl.make_block_ptr is deprecated:UserWarning")

XFAIL: dict[tuple[str, str], str] = {}


def _example(name: str):
    if str(EXAMPLES_DIR) not in sys.path:
        sys.path.insert(0, str(EXAMPLES_DIR))
    return importlib.import_module(name)


def _cases():
    for name in EXAMPLES:
        for case in _example(name).CASES:
            reason = XFAIL.get((name, case))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            yield pytest.param(name, case, id=f"{name}-{case}", marks=marks)


@pytest.fixture(scope="module")
def plate():
    """Triton on plate, the plate-mini machine, a fresh device; the device the examples' tensors go to."""
    from triton.backends import Backend, backends

    common = _example("_common")
    mp = pytest.MonkeyPatch()
    if "plate" not in backends:  # entry point not installed: register as discovery would
        mp.setitem(backends, "plate", Backend(PlateBackend, PlateDriver))
    mp.setenv("TRITON_DEFAULT_BACKEND", "plate")
    mp.setenv("PLATE_MACHINE", "plate-mini")
    mp.setenv("PLATE_TRACE", "")
    on_plate = common.plate_device_available()
    mp.setenv("PLATE_HOST_MEMORY", "0" if on_plate else "1")
    saved_driver = triton.runtime.driver._active
    triton.runtime.driver.set_active(PlateDriver())
    sim_device.reset_device(0)
    yield torch.device("plate" if on_plate else "cpu")
    sim_device.reset_device(0)
    triton.runtime.driver._active = saved_driver
    mp.undo()


@pytest.fixture
def restore_environ():
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


@pytest.mark.parametrize("name, case", list(_cases()))
def test_example(plate, name, case):
    checks = _example(name).run(case, plate)
    assert checks, f"{name} {case}: the example checked nothing"
    for c in checks:
        c.assert_close()


def test_examples_profile_their_last_launch(plate):
    import triton_plate_backend

    _example("vector_add").run("fp32", plate)
    profile = triton_plate_backend.last_profile()
    assert profile is not None and profile.machine == "plate-mini"
    assert profile.cycles > 0 and profile.num_programs == 5  # 5000 elements in blocks of 1024


@pytest.mark.parametrize("name, case", [("vector_add", "fp16"), ("grouped_gemm", "fp32")])
def test_host_memory_mode_on_cpu_tensors(plate, monkeypatch, name, case):
    """The explicit host-memory mode: CPU tensors as kernel arguments (grouped_gemm: pointer arrays
    into an arena that is itself an argument)."""
    monkeypatch.setenv("PLATE_HOST_MEMORY", "1")
    for c in _example(name).run(case, torch.device("cpu")):
        c.assert_close()


def test_four_threads_launch_different_kernels_at_once(plate):
    """4 Python threads, each launching its own kernel repeatedly: every result stays correct."""
    vector_add, softmax, layer_norm, dropout = (
        _example(n) for n in ("vector_add", "fused_softmax", "layer_norm", "low_memory_dropout")
    )
    g = torch.Generator().manual_seed(11)
    x, y = torch.randn(3000, generator=g), torch.randn(3000, generator=g)
    rows = torch.randn(24, 100, generator=g)
    w, b = torch.rand(100, generator=g) + 0.5, torch.randn(100, generator=g)

    def on(*ts):
        return [t.to(plate) for t in ts]

    work = {
        "add": (lambda: vector_add.add(*on(x, y)), x + y),
        "softmax": (lambda: softmax.softmax(*on(rows)), torch.softmax(rows, dim=-1)),
        "layer_norm": (
            lambda: layer_norm.layer_norm_forward(*on(rows, w, b))[0],
            torch.nn.functional.layer_norm(rows, (100,), w, b, layer_norm.EPS),
        ),
        "dropout": (lambda: dropout.dropout(*on(x), 0.25, 77), dropout.reference_dropout(x, 0.25, 77)),
    }
    for launch, _ in work.values():  # compile in this thread: the threads race launches, not compiles
        launch()
    barrier = threading.Barrier(len(work))
    results: dict[str, list] = {k: [] for k in work}
    errors = []

    def worker(key):
        launch = work[key][0]
        try:
            barrier.wait()
            for _ in range(3):
                results[key].append(launch().cpu())
        except Exception as e:  # reported below, with the kernel's name
            errors.append((key, e))

    threads = [threading.Thread(target=worker, args=(k,)) for k in work]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a launching thread hung"
    assert not errors, errors
    for key, (_, want) in work.items():
        assert len(results[key]) == 3
        for got in results[key]:
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5, msg=lambda m, key=key: f"{key}: {m}")


def test_plate_run_prints_the_profile_and_writes_the_trace(plate, restore_environ, capsys, tmp_path):
    from triton_plate_backend.run_example import run_example

    trace = tmp_path / "add.json"
    status = run_example(EXAMPLES_DIR / "vector_add.py", ["--case", "int32", "--trace", str(trace)])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "[int32] x + y" in out and " ok" in out
    assert "last launch:" in out and "level-0 bound" in out
    assert os.environ["TRITON_DEFAULT_BACKEND"] == "plate"
    events = json.loads(trace.read_text())["traceEvents"]
    assert any(e.get("ph") == "X" for e in events), "the trace has no instruction events"


def test_plate_run_reports_a_failing_script(plate, restore_environ, capsys, tmp_path):
    from triton_plate_backend.run_example import ScriptError, run_example

    script = tmp_path / "fails.py"
    script.write_text("def main(argv):\n    print('args', argv)\n    return 3\n")
    assert run_example(script, ["a", "--trace", str(tmp_path / "t.json"), "b"]) == 3
    assert "args ['a', 'b']" in capsys.readouterr().out
    (tmp_path / "nomain.py").write_text("x = 1\n")
    with pytest.raises(ScriptError, match="defines no main"):
        run_example(tmp_path / "nomain.py")
    with pytest.raises(ScriptError, match="no such script"):
        run_example(tmp_path / "missing.py")


def test_plate_run_command_line_keeps_plate_options_apart_from_the_scripts():
    """The `plate run` parser (run_example.add_arguments): --trace anywhere, the rest to the script."""
    import argparse

    from triton_plate_backend.run_example import add_arguments, split_trace

    parser = argparse.ArgumentParser()
    parser.add_argument("--machine")
    add_arguments(parser)
    args = parser.parse_args(["--machine", "plate-mini", "examples/matmul.py", "--case", "int8", "--trace", "t.json"])
    assert (args.machine, args.script, args.trace) == ("plate-mini", "examples/matmul.py", None)
    assert split_trace(args.script_args) == ("t.json", ["--case", "int8"])
    args = parser.parse_args(["--trace", "traces", "examples/matmul.py"])
    assert (args.trace, args.script_args) == ("traces", [])
    assert split_trace(["--trace=x.json", "-v"]) == ("x.json", ["-v"])
