"""Fingerprints of what plate's compile stages produce, to show that a compile-speed change changes no output.

    python benchmarks/compile_identity.py record before.json
    python benchmarks/compile_identity.py check before.json

Compiles bench_triton.py's three kernels through Triton (Triton's cache bypassed), and feeds every
TTIR fixture of tests/fixtures/ttir to the same pir, pasm and pbin stage functions (captured from the
first compile, so with its options). Each record holds a digest of the pir and pasm texts, of the
pbin bytes and of the metadata the stages set, or the error a stage raised. ``record`` writes the
list; ``check`` compiles again and compares record by record: exit status 0 when all are equal; it
also writes what it saw to PATH.now.

Run ``record`` before a change and ``check`` after it in the same checkout (the texts carry the
kernels' source paths), with the same Triton.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
FIXTURES = ROOT / "tests" / "fixtures" / "ttir"


def _h(data) -> str:
    return hashlib.blake2b(data if isinstance(data, bytes) else data.encode(), digest_size=12).hexdigest()


def _metadata(md: dict) -> str:
    return _h(repr(sorted((k, repr(v)) for k, v in md.items() if k != "hash")))


def records() -> list[dict]:
    os.environ.setdefault("TRITON_DEFAULT_BACKEND", "plate")
    try:
        import triton_plate_backend  # noqa: F401
    except ModuleNotFoundError:  # a checkout that is not pip-installed: run from the repository
        sys.path.insert(0, str(ROOT))
    import bench_triton
    import triton
    from compile_stages import stage_calls
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from triton_plate_backend.compiler import PLATE_ARCH, WARP_SIZE

    out = []
    with stage_calls("compile-identity") as calls:
        for name, (fn, sig, const) in bench_triton.sources().items():
            k = triton.compile(ASTSource(fn, sig, constexprs=const), target=GPUTarget("plate", PLATE_ARCH, WARP_SIZE))
            md = {f: v for f, v in k.metadata._asdict().items() if f != "hash"}
            out.append({"case": name, **{s: _h(k.asm[s]) for s in ("pir", "pasm", "pbin")}, "metadata": _metadata(md)})
    pir, _, md0 = calls["pir"][0]
    pasm, pbin = calls["pasm"][0][0], calls["pbin"][0][0]
    for path in sorted(FIXTURES.glob("*.mlir")):
        md, rec = copy.deepcopy(md0), {"case": path.name}
        md.pop("hash", None)
        try:
            rec["pir"] = _h(a := pir(path.read_text(), md))
            rec["pasm"] = _h(b := pasm(a, md))
            rec["pbin"] = _h(pbin(b, md))
            rec["metadata"] = _metadata(md)
        except Exception as e:  # the same error before and after is the same output
            rec["error"] = f"{type(e).__name__}: {e}"
        out.append(rec)
    return out


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] not in ("record", "check"):
        print(__doc__)
        return 2
    mode, path = argv[0], Path(argv[1])
    got = records()
    if mode == "record":
        path.write_text(json.dumps(got, indent=1) + "\n")
        print(f"recorded {len(got)} compiles in {path}")
        return 0
    Path(f"{path}.now").write_text(json.dumps(got, indent=1) + "\n")
    want = json.loads(path.read_text())
    diff = [w["case"] for w, g in zip(want, got) if w != g]
    if len(want) != len(got):
        print(f"{len(want)} records then, {len(got)} now")
    for case in diff:
        print(f"differs: {case}")
    same = not diff and len(want) == len(got)
    print(f"{len(got)} compiles, {'all identical' if same else f'{len(diff)} differ'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
