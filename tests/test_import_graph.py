"""The floors of the house: every import inside `triton_plate_backend` and `inductor_plate` goes
down or stays on its floor, and no group of modules imports itself in a circle.

The graph is read from the source with `ast`, not by importing: module-level and function-level
imports alike (a function-level import that closes a cycle is still a cycle, only a hidden one),
relative imports resolved, and `importlib.import_module("...")` with a literal name.

`FLOORS` below is the architecture's import rule as one table: every module of both packages has
a floor, and a module may import only modules on its own floor or below. A new module fails the
test until it is added to the table. A module that must import upward needs a named entry in
`EXCEPTIONS` saying why (there is none today).

Then each module of the bottom floors, ir/, isa/, sim/, ttir/ and passes/ is imported on its own in
a fresh interpreter, which is what a user does (`import triton_plate_backend.passes.rules_math`)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("triton_plate_backend", "inductor_plate")
TPB = "triton_plate_backend"

# ---- the floors (bottom -> top) ----------------------------------------------------------------
BASE, IR, ISA, TTIR_SIM, PASSES_DEVICE, FRONT, INDUCTOR = range(7)
FLOOR_NAMES = {
    BASE: "base (errors, source locations, knobs)",
    IR: "plate IR",
    ISA: "ISA table/program/encoding, machine description, cost model",
    TTIR_SIM: "TTIR parser, simulator",
    PASSES_DEVICE: "compiler passes, torch device",
    FRONT: "Triton backend and driver, launcher, CLI",
    INDUCTOR: "inductor_plate",
}


def _on(floor: int, *names: str) -> dict[str, int]:
    return {name: floor for name in names}


FLOORS: dict[str, int] = {
    **_on(BASE, f"{TPB}.errors", f"{TPB}.srcloc", f"{TPB}.knobs", f"{TPB}.text_memo", f"{TPB}.plain_text"),
    **_on(IR, f"{TPB}.ir", f"{TPB}.ir.core", f"{TPB}.ir.printer", f"{TPB}.ir.verify", f"{TPB}.ir.vocabulary"),
    **_on(
        ISA,
        f"{TPB}.isa",
        f"{TPB}.isa.table",
        f"{TPB}.isa.program",
        f"{TPB}.isa.verified",
        f"{TPB}.isa.encoding",
        f"{TPB}.isa.asm",
        f"{TPB}.isa.footprint",
        f"{TPB}.dtypes",
        f"{TPB}.machine",
        f"{TPB}.cost",
        f"{TPB}.device_properties",
    ),
    **_on(
        TTIR_SIM,
        f"{TPB}.ttir",
        f"{TPB}.ttir.errors",
        f"{TPB}.ttir.lexer",
        f"{TPB}.ttir.types",
        f"{TPB}.ttir.attrs",
        f"{TPB}.ttir.locs",
        f"{TPB}.ttir.formats",
        f"{TPB}.ttir.tt_formats",
        f"{TPB}.ttir.control",
        f"{TPB}.ttir.ops",
        f"{TPB}.ttir.parser",
        f"{TPB}.sim",
        f"{TPB}.sim.numerics",
        f"{TPB}.sim.rounding",
        f"{TPB}.sim.bessel",
        f"{TPB}.sim.libm",
        f"{TPB}.sim.sem_libm",
        f"{TPB}.sim.memory",
        f"{TPB}.sim.sanitizer",
        f"{TPB}.sim.runaway",
        f"{TPB}.sim.dma",
        f"{TPB}.sim.dma_one",
        f"{TPB}.sim.atomics",
        f"{TPB}.sim.sem_vector",
        f"{TPB}.sim.sem_scalar",
        f"{TPB}.sim.sem_tile",
        f"{TPB}.sim.parallel",
        f"{TPB}.sim.host",
        f"{TPB}.sim.sem_matrix",
        f"{TPB}.sim.sem_memory",
        f"{TPB}.sim.semantics",
        f"{TPB}.sim.executor",
        f"{TPB}.sim.trace",
        f"{TPB}.sim.bandwidth",
        f"{TPB}.sim.replay",
        f"{TPB}.sim.profile",
        f"{TPB}.sim.timing",
        f"{TPB}.sim.estimate",
        f"{TPB}.sim.data_flow",
        f"{TPB}.sim.sram_reach",
        f"{TPB}.sim.persistent_runs",
        f"{TPB}.sim.clock",
        f"{TPB}.sim.device",
        f"{TPB}.sim.footprints",
        f"{TPB}.sim.affinity",
        f"{TPB}.sim.operands",
    ),
    **_on(
        PASSES_DEVICE,
        f"{TPB}.passes",
        f"{TPB}.passes.affine",
        f"{TPB}.passes.records",
        f"{TPB}.passes.program_range",
        f"{TPB}.passes.access_forms",
        f"{TPB}.passes.access_masks",
        f"{TPB}.passes.access_modular",
        f"{TPB}.passes.access",
        f"{TPB}.passes.affinity",
        f"{TPB}.passes.demand",
        f"{TPB}.passes.inline",
        f"{TPB}.passes.emitter",
        f"{TPB}.passes.regalloc",
        f"{TPB}.passes.spill",
        f"{TPB}.passes.scalar_flow",
        f"{TPB}.passes.licm",
        f"{TPB}.passes.scalar_cse",
        f"{TPB}.passes.sram_plan",
        f"{TPB}.passes.finalize",
        f"{TPB}.passes.context",
        f"{TPB}.passes.dma_operands",
        f"{TPB}.passes.reduction",
        f"{TPB}.passes.prefetch",
        f"{TPB}.passes.store_pieces",
        f"{TPB}.passes.row_blocks",
        f"{TPB}.passes.persistent",
        f"{TPB}.passes.rules_access",
        f"{TPB}.passes.rules_arith",
        f"{TPB}.passes.libdevice",
        f"{TPB}.passes.ptx_asm",
        f"{TPB}.passes.rules_math",
        f"{TPB}.passes.rules_tt",
        f"{TPB}.passes.rules_memory",
        f"{TPB}.passes.rules_scf",
        f"{TPB}.passes.rules_map",
        f"{TPB}.passes.rules_reduce",
        f"{TPB}.passes.rules_dot",
        f"{TPB}.passes.lowering",
        f"{TPB}.passes.codegen",
        f"{TPB}.passes.pipeline",
        f"{TPB}.shims",
        f"{TPB}.torch_device",
        f"{TPB}.torch_device._registration",
        f"{TPB}.torch_device.accumulation",
        f"{TPB}.torch_device.autoload",
        f"{TPB}.torch_device.compiler_hooks",
        f"{TPB}.torch_device.devices",
        f"{TPB}.torch_device.host_op_counter",
        f"{TPB}.torch_device.memory",
        f"{TPB}.torch_device.placement",
        f"{TPB}.torch_device.rng",
        f"{TPB}.torch_device.streams",
    ),
    **_on(
        FRONT,
        TPB,  # the package itself: __version__ and last_profile() (reads the simulator's device)
        f"{TPB}.compiler",
        f"{TPB}.target",
        f"{TPB}.binary_cache",
        f"{TPB}.cache_files",
        f"{TPB}.vendor_options",
        f"{TPB}.fp8e4b15",
        f"{TPB}.libdevice_api",
        f"{TPB}.driver",
        f"{TPB}.launcher",
        f"{TPB}.runasm",
        f"{TPB}.run_example",
        f"{TPB}.cli",
        f"{TPB}.estimate",
        f"{TPB}.bench",
        f"{TPB}.bench.kernels",
        f"{TPB}.bench.run",
        f"{TPB}.bench.autotune",
        f"{TPB}.fuzz",
        f"{TPB}.fuzz.values",
        f"{TPB}.fuzz.generator",
        f"{TPB}.fuzz.compare",
        f"{TPB}.fuzz.interpreter_patches",
        f"{TPB}.fuzz.runner",
        f"{TPB}.fuzz.report",
        f"{TPB}.fuzz.reproduce",
        f"{TPB}.fuzz.session",
        f"{TPB}.eager_ops",
        f"{TPB}.eager_ops.advanced_index",
        f"{TPB}.eager_ops.antialias",
        f"{TPB}.eager_ops.autoload",
        f"{TPB}.eager_ops.cat_kernels",
        f"{TPB}.eager_ops.composite",
        f"{TPB}.eager_ops.convolution",
        f"{TPB}.eager_ops.ctc_kernels",
        f"{TPB}.eager_ops.ctc",
        f"{TPB}.eager_ops.complex_ops",
        f"{TPB}.eager_ops.complex_views",
        f"{TPB}.eager_ops.eager_lock",
        f"{TPB}.eager_ops.embedding_bag",
        f"{TPB}.eager_ops.embedding_bag_backward",
        f"{TPB}.eager_ops.embedding_renorm",
        f"{TPB}.eager_ops.float_parts",
        f"{TPB}.eager_ops.fractional_pool",
        f"{TPB}.eager_ops.fused_optimizers",
        f"{TPB}.eager_ops.gradients",
        f"{TPB}.eager_ops.grid_sampler_3d_kernels",
        f"{TPB}.eager_ops.grid_sampler_3d",
        f"{TPB}.eager_ops.index_forms",
        f"{TPB}.eager_ops.indexing",
        f"{TPB}.eager_ops.out_forms",
        f"{TPB}.eager_ops.integer_histc",
        f"{TPB}.eager_ops.kernels",
        f"{TPB}.eager_ops.launch",
        f"{TPB}.eager_ops.layer_norm",
        f"{TPB}.eager_ops.meta_memo",
        f"{TPB}.eager_ops.layer_norm_kernels",
        f"{TPB}.eager_ops.linalg",
        f"{TPB}.eager_ops.linalg_kernels",
        f"{TPB}.eager_ops.linalg_svd",
        f"{TPB}.eager_ops.linalg_svd_kernels",
        f"{TPB}.eager_ops.matmul",
        f"{TPB}.eager_ops.matmul_kernels",
        f"{TPB}.eager_ops.matrix_exp",
        f"{TPB}.eager_ops.multilabel_margin",
        f"{TPB}.eager_ops.narrow_types",
        f"{TPB}.eager_ops.prefix_kernels",
        f"{TPB}.eager_ops.ops",
        f"{TPB}.eager_ops.parametric",
        f"{TPB}.eager_ops.parametric_kernels",
        f"{TPB}.eager_ops.special",
        f"{TPB}.eager_ops.special_family",
        f"{TPB}.eager_ops.pooling",
        f"{TPB}.eager_ops.pooling_kernels",
        f"{TPB}.eager_ops.reduction_kernels",
        f"{TPB}.eager_ops.reductions",
        f"{TPB}.eager_ops.registry",
        f"{TPB}.eager_ops.scatter_reduce",
        f"{TPB}.eager_ops.rewritten",
        f"{TPB}.eager_ops.sampling",
        f"{TPB}.eager_ops.scans",
        f"{TPB}.eager_ops.segment_reduce",
        f"{TPB}.eager_ops.scatter_kernels",
        f"{TPB}.eager_ops.sorting",
        f"{TPB}.eager_ops.sorting_kernels",
        f"{TPB}.eager_ops.spaced_range_kernels",
        f"{TPB}.eager_ops.spaced_ranges",
        f"{TPB}.eager_ops.table",
        f"{TPB}.eager_ops.transformer_fastpath",
        f"{TPB}.eager_ops.weight_norm",
        f"{TPB}.eager_ops.weight_norm_kernels",
    ),
    **_on(
        INDUCTOR,
        "inductor_plate",
        "inductor_plate.benchmarker",
        "inductor_plate.compile_workers",
        "inductor_plate.config",
        "inductor_plate.conv_gemm",
        "inductor_plate.decompositions",
        "inductor_plate.encoder_layer",
        "inductor_plate.device_interface",
        "inductor_plate.extern_decomps",
        "inductor_plate.fallback",
        "inductor_plate.fallback_counter",
        "inductor_plate.gemm_config",
        "inductor_plate.gemm_lowering",
        "inductor_plate.heuristics",
        "inductor_plate.kernel_config",
        "inductor_plate.model_suite",
        "inductor_plate.op_overrides",
        "inductor_plate.placement",
        "inductor_plate.policy",
        "inductor_plate.profiling",
        "inductor_plate.reduction_gemm",
        "inductor_plate.rnn_cells",
        "inductor_plate.scheduling",
        "inductor_plate.templates",
        "inductor_plate.wrapper",
    ),
}

# (importer, imported) -> why the upward import cannot be avoided. Keep it empty if you can.
EXCEPTIONS: dict[tuple[str, str], str] = {}

# floors whose modules never import torch or triton (the simulator and the tables run without them)
NO_TORCH_OR_TRITON = (BASE, IR, ISA, TTIR_SIM)


# ---- reading the graph ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Import:
    importer: str
    target: str
    line: int
    text: str
    in_function: bool

    def where(self) -> str:
        scope = "inside a function" if self.in_function else "at module level"
        return f"{self.importer} -> {self.target}: line {self.line} ({scope}): {self.text}"


def module_files(pattern: str = "*.py") -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob(pattern)):
            parts = list(path.relative_to(REPO).parts)
            parts[-1] = parts[-1].split(".")[0]
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _resolve(package: str, level: int, name: str | None) -> str:
    base = package
    for _ in range(level - 1):
        base = base.rpartition(".")[0]
    return f"{base}.{name}" if name and base else (name or base)


def _literal_module(node: ast.AST, package: str) -> str | None:
    """The module named by import_module's argument: a literal, or an f-string of __package__ + literal."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(v.value)
            elif isinstance(v, ast.FormattedValue) and isinstance(v.value, ast.Name) and v.value.id == "__package__":
                parts.append(package)
            else:
                return None  # a name computed at run time: not a fixed edge
        return "".join(parts)
    return None


class _Visitor(ast.NodeVisitor):
    def __init__(self, module: str, path: Path, known: set[str], extensions: set[str], lines: list[str]):
        self.module, self.package, self.known, self.lines = module, _package_of(module, path), known, lines
        self.extensions, self.depth, self.imports = extensions, 0, []

    def _add(self, target: str, node: ast.AST) -> None:
        if target in self.known and target != self.module:
            text = self.lines[node.lineno - 1].strip()
            imp = Import(self.module, target, node.lineno, text, self.depth > 0)
            if imp not in self.imports:  # `from .m import a, b`: one edge
                self.imports.append(imp)

    def _scope(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _scope

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = _resolve(self.package, node.level, node.module) if node.level else node.module
        for alias in node.names:
            sub = f"{base}.{alias.name}"  # a submodule, else a name defined in the module `base`
            self._add(sub if sub in self.known or sub in self.extensions else base, node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name == "import_module" and node.args:
            target = _literal_module(node.args[0], self.package)
            if target is not None:
                self._add(target, node)
        self.generic_visit(node)


def import_graph() -> tuple[dict[str, list[Import]], dict[str, list[str]]]:
    """(module -> its imports of modules of both packages, module -> every module name it imports)."""
    files = module_files()
    known, extensions = set(files), set(module_files("*.so"))  # compiled extensions: leaves, no edges
    graph, third_party = {}, {}
    for module, path in files.items():
        source = path.read_text()
        tree = ast.parse(source, str(path))
        v = _Visitor(module, path, known, extensions, source.splitlines())
        v.visit(tree)
        graph[module] = v.imports
        names = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names.append(node.module)
        third_party[module] = names
    return graph, third_party


def strongly_connected(graph: dict[str, list[Import]]) -> list[list[str]]:
    """Tarjan's algorithm: the components of more than one module."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for imp in graph[v]:
            w = imp.target
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph)))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


GRAPH, THIRD_PARTY = import_graph()


# ---- the rules -----------------------------------------------------------------------------------
def test_the_reader_on_a_sample():
    """Every form of import the rules depend on becomes the right edge (a blind reader passes every test)."""
    source = textwrap.dedent(
        """
        import importlib
        import numpy
        import triton_plate_backend.sim.device
        from ..isa.table import ITEMSIZE
        from . import context, not_a_module
        from .. import cost

        def f():
            from .lowering import LOWERING
            importlib.import_module("triton_plate_backend.ttir.parser")
            return importlib.import_module(f"{__package__}.codegen")
        """
    )
    v = _Visitor(f"{TPB}.passes.sample", REPO / TPB / "passes" / "sample.py", set(GRAPH), set(), source.splitlines())
    v.visit(ast.parse(source))
    assert {(i.target.removeprefix(f"{TPB}."), i.in_function) for i in v.imports} == {
        ("sim.device", False),
        ("isa.table", False),
        ("passes.context", False),
        ("passes", False),  # `not_a_module`: a name of the package's __init__
        ("cost", False),
        ("passes.lowering", True),
        ("ttir.parser", True),
        ("passes.codegen", True),
    }


def test_the_graph_is_read():
    targets = {(i.importer, i.target, i.in_function) for imps in GRAPH.values() for i in imps}
    assert (f"{TPB}.passes.codegen", f"{TPB}.passes.lowering", False) in targets
    assert (f"{TPB}.torch_device", f"{TPB}.torch_device.compiler_hooks", False) in targets
    assert (TPB, f"{TPB}.sim.device", True) in targets  # function-level
    assert (f"{TPB}.sim.timing", f"{TPB}.cost", False) in targets  # `from .. import cost`
    assert ("inductor_plate", f"{TPB}.torch_device", False) in targets  # absolute
    assert len(GRAPH) == len(module_files()) > 100


def test_every_module_has_a_floor():
    modules = set(GRAPH)
    missing = sorted(modules - set(FLOORS))
    assert not missing, (
        f"modules without a floor: {missing}. Add each to FLOORS in {Path(__file__).name} with the floor it "
        f"belongs on ({', '.join(f'{n}: {d}' for n, d in FLOOR_NAMES.items())}); it may import only its own "
        "floor and below"
    )
    stale = sorted(set(FLOORS) - modules)
    assert not stale, f"FLOORS names modules that do not exist: {stale}; remove them"


def shortest_cycle(graph: dict[str, list[Import]], members: set[str]) -> list[Import]:
    """A shortest circle of imports inside one strongly connected component, preferring one that
    runs through a function-level import (the likely way the cycle was hidden)."""
    best = None
    for start in sorted(members):
        parent, queue, closing = {start: None}, deque([start]), None
        while queue and closing is None:
            for i in graph[queue.popleft()]:
                if i.target == start:
                    closing = i
                    break
                if i.target in members and i.target not in parent:
                    parent[i.target] = i
                    queue.append(i.target)
        if closing is None:
            continue
        path = [closing]
        while parent[path[0].importer] is not None:
            path.insert(0, parent[path[0].importer])
        key = (not any(p.in_function for p in path), len(path))
        if best is None or key < best[0]:
            best = (key, path)
    return best[1]


def test_no_import_cycles():
    cycles = strongly_connected(GRAPH)
    report = []
    for comp in cycles:
        path = shortest_cycle(GRAPH, set(comp))
        report.append(f"cycle among {comp}, e.g.:\n    " + "\n    ".join(i.where() for i in path))
    assert not cycles, (
        "import cycles (split what both sides need into a module that imports neither; a function-level "
        "import does not break a cycle, it hides it):\n" + "\n".join(report)
    )


def test_no_upward_imports():
    upward = []
    for module, imports in GRAPH.items():
        for i in imports:
            if module not in FLOORS or i.target not in FLOORS:
                continue  # reported by test_every_module_has_a_floor
            if FLOORS[i.target] > FLOORS[module] and (module, i.target) not in EXCEPTIONS:
                upward.append(
                    f"{i.where()}\n      floor {FLOORS[module]} ({FLOOR_NAMES[FLOORS[module]]}) imports "
                    f"floor {FLOORS[i.target]} ({FLOOR_NAMES[FLOORS[i.target]]})"
                )
    assert not upward, "upward imports (move the shared code down, or invert the dependency):\n" + "\n".join(upward)


def test_exceptions_are_still_needed():
    for (importer, target), why in EXCEPTIONS.items():
        assert any(i.target == target for i in GRAPH.get(importer, ())), f"stale exception {importer} -> {target}"
        assert len(why) > 20, f"say why {importer} must import {target}"


def test_bottom_floors_import_neither_torch_nor_triton():
    bad = [
        f"{m} imports {name}"
        for m, names in THIRD_PARTY.items()
        if FLOORS.get(m) in NO_TORCH_OR_TRITON
        for name in names
        if name.split(".")[0] in ("torch", "triton")
    ]
    assert not bad, bad


def test_triton_plate_backend_never_names_inductor_plate():
    """Not even as a string: the torch device learns about inductor_plate through a registration hook."""
    bad = [
        path.relative_to(REPO).as_posix()
        for module, path in module_files().items()
        if module.split(".")[0] == TPB and "inductor_plate" in path.read_text()
    ]
    assert not bad, bad


# ---- each module imports on its own ---------------------------------------------------------------
SUBPACKAGES = ("ir", "isa", "sim", "ttir", "passes")
ALONE = {sub: sorted(m for m in FLOORS if m.split(".")[:2] == [TPB, sub]) for sub in SUBPACKAGES}
ALONE["bottom"] = sorted(m for m, f in FLOORS.items() if f <= ISA and not any(m in ALONE[sub] for sub in SUBPACKAGES))

NO_TORCH_OR_TRITON_GROUPS = ("bottom", "ir", "isa", "sim", "ttir")

_ALONE_SCRIPT = textwrap.dedent(
    """
    import importlib, json, sys, traceback
    failures, fresh = {}, sys.argv[1]
    for name in sys.argv[2:]:
        for loaded in [m for m in sys.modules if m == fresh or m.startswith(fresh + ".")]:
            del sys.modules[loaded]  # none of `fresh` loaded before each module
        try:
            importlib.import_module(name)
        except BaseException:
            failures[name] = traceback.format_exc(limit=-3)
    heavy = sorted(m for m in ("torch", "triton") if m in sys.modules)
    print(json.dumps({"failures": failures, "heavy": heavy}))
    """
)


def _fresh(group: str) -> str:
    """What is unloaded before each module of a group: its own subpackage (the modules below it may
    stay loaded, which keeps the test fast: a cycle through them is test_no_import_cycles' to find),
    or, for the small bottom groups, the whole package."""
    return f"{TPB}.{group}" if group in ("sim", "ttir", "passes") else TPB


@pytest.fixture(scope="module")
def imported_alone():
    """One interpreter per group (in parallel); inside it, each module imported with none of its
    subpackage loaded before it."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    procs = {
        group: subprocess.Popen(
            [sys.executable, "-c", _ALONE_SCRIPT, _fresh(group), *names],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=REPO,
        )
        for group, names in ALONE.items()
    }
    out = {}
    for group, p in procs.items():
        stdout, stderr = p.communicate(timeout=120)
        assert p.returncode == 0, f"{group}: {stderr}"
        out[group] = json.loads(stdout.strip().splitlines()[-1])
    return out


@pytest.mark.parametrize("group", sorted(ALONE))
def test_each_module_imports_on_its_own(imported_alone, group):
    assert len(ALONE[group]) >= 3, ALONE[group]
    failures = imported_alone[group]["failures"]
    assert not failures, "\n".join(f"import {m} alone:\n{tb}" for m, tb in failures.items())
    if group in NO_TORCH_OR_TRITON_GROUPS:
        assert not imported_alone[group]["heavy"], f"{group} modules pulled in {imported_alone[group]['heavy']}"
