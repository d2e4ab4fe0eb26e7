"""Fingerprints of what the simulator computes, to show that a speed change changes no result.

    python benchmarks/sim_identity.py record before.json [pytest args ...]
    python benchmarks/sim_identity.py check before.json [pytest args ...]

Runs the benchmark kernels (bench_triton.py's three at their sizes, `plate bench`'s cases at the
quick sizes, the bf16 GEMM at 512^3 with 128x128x64 and 512x256x64 tiles) and then pytest on the
given tests (default: the codegen corpus, dot, reduce, memory and semantics tests), in this
process, with sim.executor.execute and sim.timing.simulate_timing wrapped. Each launch records its
program, grid, a digest of its trace (what the timing model reads), a digest of every live device
allocation's bytes after it ran and the digest of its trace's Profile under round_robin; each
Profile a launch made records the same. A Profile's digest: cycles, busy cycles per engine and
core, bytes moved, instruction, DMA and FLOP counts, cores used, bucket and the level-0 bound.
``record`` writes the list; ``check`` runs again and compares record by record: exit status 0
when all are equal (same count, same values); it also writes what it saw to PATH.now.

Run ``record`` on the code before a change and ``check`` after it (same machine, same Triton and
numpy); the default tests run in about a minute on an idle core. Run ``check`` with the kernels in Triton's
cache as they were at ``record`` (run it twice after a change to the package's sources, whose hash is in the
cache key): a GEMM warm-up compiled in the process runs once from the simulator's kept trace where a
cached one runs twice, four records fewer with no value changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

DEFAULT_TESTS = (
    "tests/test_codegen_corpus.py",
    "tests/test_codegen_dot.py",
    "tests/test_codegen_reduce.py",
    "tests/test_codegen_memory.py",
    "tests/test_sim_semantics.py",
)

RECORDS: list[dict] = []
_where = {"case": "setup"}


def _h(*parts) -> str:
    h = hashlib.blake2b(digest_size=12)
    for p in parts:
        h.update(p if isinstance(p, bytes) else repr(p).encode())
    return h.hexdigest()


def _memory_digest(memory) -> str:
    if memory is None:
        return "-"
    h = hashlib.blake2b(digest_size=12)
    for rec in sorted(memory.allocations, key=lambda r: r.id):  # by id: bases are host addresses
        if rec.view is not None:
            h.update(b"%d:%d|" % (rec.id, rec.nbytes))
            h.update(rec.view.tobytes())
    return h.hexdigest()


def _profile_digest(p) -> dict:
    return {
        "cycles": repr(p.cycles),
        "busy": _h(p.busy_by_core.tobytes()),
        "bytes": _h(p.read_bytes.tobytes(), p.write_bytes.tobytes()),
        "counts": [p.dma_count, p.instr_count, repr(p.flops), p.cores_used, repr(p.bucket_cycles)],
        "bound": _h(repr(p.bound)),
    }


def install() -> None:
    """Wrap execute and simulate_timing, in their modules and wherever they were imported by name."""
    from triton_plate_backend.sim import executor, timing

    original_execute, original_timing = executor.execute, timing.simulate_timing

    def execute(program, grid, args, memory, *a, **kw):
        trace = original_execute(program, grid, args, memory, *a, **kw)
        digest = trace.digest() if trace.entries else "-"
        RECORDS.append(
            {
                "where": _where["case"],
                "kind": "launch",
                "program": program.name,
                "grid": repr(grid),
                "trace": digest if isinstance(digest, str) else digest.hex(),
                "memory": _memory_digest(memory),
            }
        )
        if trace.entries:  # the test's launches too: their traces timed as a plain launch would be
            machine = kw.get("machine") or (a[0] if a else None) or getattr(memory, "machine", None)
            RECORDS.append(
                {"where": _where["case"], "kind": "trace timing", **_profile_digest(original_timing(trace, machine))}
            )
        return trace

    def simulate_timing(trace, *a, **kw):
        profile = original_timing(trace, *a, **kw)
        RECORDS.append(
            {"where": _where["case"], "kind": "timing", "program": trace.program.name, **_profile_digest(profile)}
        )
        return profile

    for mod in list(sys.modules.values()):
        if getattr(mod, "__name__", "").startswith(("triton_plate_backend", "codegen_kernels")):
            if getattr(mod, "execute", None) is original_execute:
                mod.execute = execute
            if getattr(mod, "simulate_timing", None) is original_timing:
                mod.simulate_timing = simulate_timing


def run_cases() -> None:
    import bench_triton
    import torch

    import triton_plate_backend
    from triton_plate_backend.bench import kernels as bk

    dev = bench_triton._plate_device()
    for name in bench_triton.KERNELS:
        _where["case"] = f"bench_triton {name}"
        launch, _ = bench_triton.plate_case(name, dev)
        launch()
        triton_plate_backend.last_profile()
    for name, case in bk.CASES.items():
        if name == "inductor_block":
            continue
        _where["case"] = f"plate bench {name}"
        torch.manual_seed(0)
        case.setup(case.quick[0]).run()
        triton_plate_backend.last_profile()
    import bench_sim_speed  # noqa: F401  (the GEMM's launch code)

    for tiles in bench_sim_speed.GEMM_TILES:
        _where["case"] = f"gemm bf16 512^3 {tiles}"
        torch.manual_seed(0)
        bench_sim_speed.gemm_child(512, *tiles)


class _Plugin:
    def pytest_runtest_setup(self, item):
        _where["case"] = item.nodeid


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) < 2 or argv[0] not in ("record", "check"):
        print(__doc__)
        return 2
    mode, path, tests = argv[0], Path(argv[1]), argv[2:] or list(DEFAULT_TESTS)
    os.environ["TRITON_DEFAULT_BACKEND"] = "plate"
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT / "tests"))
    import codegen_kernels.harness  # noqa: F401
    import pytest

    import triton_plate_backend.sim.clock  # noqa: F401
    import triton_plate_backend.sim.device  # noqa: F401  (import what holds the names before wrapping)

    install()
    run_cases()
    rc = pytest.main(["-q", "-x", "-p", "no:cacheprovider", "-n", "0", *tests], plugins=[_Plugin()])
    if rc != 0:
        print(f"pytest failed ({rc}): fingerprints are incomplete")
    if mode == "record":
        path.write_text(json.dumps(RECORDS, indent=0) + "\n")
        print(f"{len(RECORDS)} records written to {path}")
        return int(rc)
    Path(str(path) + ".now").write_text(json.dumps(RECORDS, indent=0) + "\n")
    before = json.loads(path.read_text())
    diffs = [(i, a, b) for i, (a, b) in enumerate(zip(before, RECORDS)) if a != b]
    for i, a, b in diffs[:20]:
        print(f"record {i} differs:\n  before {a}\n  now    {b}")
    same = not diffs and len(before) == len(RECORDS)
    print(
        f"{len(RECORDS)} records now, {len(before)} before: "
        + (
            "all identical"
            if same
            else f"{len(diffs)} differ, count {'same' if len(before) == len(RECORDS) else 'differs'}"
        )
    )
    return 0 if same and rc == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
