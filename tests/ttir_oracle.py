"""Triton's own MLIR parser as the test oracle for plate's TTIR parser.

`oracle_walk(text)` parses TTIR with `triton._C.libtriton.ir.parse_mlir_module` and lists every
op in MLIR's walk order (post-order) as (name, operand types, result types). `plate_walk(module)`
lists a plate `ir.core.Module` the same way. `compare(text)` parses with both and returns the
differences (empty when they agree). Usable on any TTIR text: the plugin tests run it on every
kernel they compile.
"""

from __future__ import annotations

import os
import tempfile

from triton_plate_backend.ir.core import Module, Op
from triton_plate_backend.ttir.parser import parse

OpSig = tuple[str, tuple[str, ...], tuple[str, ...]]


def _norm(type_text: str) -> str:
    return "".join(str(type_text).split())


def oracle_walk(text: str) -> list[OpSig]:
    """(op name, operand types, result types) for every op, as Triton's parser sees them."""
    from triton._C.libtriton import ir

    ctx = ir.context()
    ir.load_dialects(ctx)
    fd, path = tempfile.mkstemp(suffix=".ttir")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        module = ir.parse_mlir_module(path, ctx)
    finally:
        os.unlink(path)
    out: list[OpSig] = []

    def visit(op):
        ins = tuple(_norm(op.get_operand(i).get_type()) for i in range(op.get_num_operands()))
        outs = tuple(_norm(op.get_result(i).get_type()) for i in range(op.get_num_results()))
        out.append((op.get_name(), ins, outs))

    module.walk(visit)
    return out


def _post_order(op: Op, out: list[OpSig]) -> None:
    for region in op.regions:
        for block in region.blocks:
            for inner in block.ops:
                _post_order(inner, out)
    out.append((op.name, tuple(_norm(v.type) for v in op.operands), tuple(_norm(v.type) for v in op.results)))


def plate_walk(module: Module) -> list[OpSig]:
    """The same listing for a plate module (its ops, then the enclosing builtin.module)."""
    out: list[OpSig] = []
    for op in module.ops:
        _post_order(op, out)
    out.append(("builtin.module", (), ()))
    return out


def compare(text: str, module: Module | None = None, limit: int = 5) -> list[str]:
    """Differences between Triton's view of `text` and plate's parse of it (empty if none)."""
    module = parse(text) if module is None else module
    theirs, ours = oracle_walk(text), plate_walk(module)
    diffs = []
    if len(theirs) != len(ours):
        diffs.append(f"op count: triton {len(theirs)}, plate {len(ours)}")
    for k, (t, o) in enumerate(zip(theirs, ours)):
        if t != o:
            diffs.append(f"op #{k}: triton {t} != plate {o}")
            if len(diffs) >= limit:
                break
    return diffs
