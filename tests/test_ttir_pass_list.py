"""compiler.ttir_passes: the TTIR passes a module needs, told from its ops, and reorder_broadcast_can_change:
reorder-broadcast decided on the module combine leaves; each kernel's TTIR from make_ttir is the full TTIR_PASSES
list's, text for text."""

from __future__ import annotations

import pytest
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from triton_plate_backend import compiler as plate_compiler
from triton_plate_backend.compiler import CSE, PLATE_ARCH, REORDER_BROADCAST, TTIR_PASSES, WARP_SIZE, PlateBackend

TARGET = GPUTarget("plate", PLATE_ARCH, WARP_SIZE)
ALL = {p[1] for p in TTIR_PASSES}


@triton.jit
def plain(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + o, mask=o < n)
    tl.store(y_ptr + o, x * 2 + 1, mask=o < n)


@triton.jit
def _twice(x):
    return x + x


@triton.jit
def calls(x_ptr, y_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    x = _twice(tl.load(x_ptr + o))
    tl.store(y_ptr + o, x + tl.sum(x, 0))


@triton.jit
def block_ptr(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    p = tl.make_block_ptr(x_ptr, (n,), (1,), (0,), (BLOCK,), (0,))
    x = tl.load(tl.advance(p, (BLOCK,)), boundary_check=(0,))
    tl.store(y_ptr + tl.arange(0, BLOCK), x)


@triton.jit
def block_ptr_calls(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    p = tl.make_block_ptr(x_ptr, (n,), (1,), (0,), (BLOCK,), (0,))
    x = tl.load(p, boundary_check=(0,))
    tl.store(y_ptr + tl.arange(0, BLOCK), _twice(x))


@triton.jit
def descriptor(desc, y_ptr, BLOCK: tl.constexpr):
    tl.store(y_ptr + tl.arange(0, BLOCK), desc.load([0]))


@triton.jit
def unused_descriptor(desc, y_ptr, BLOCK: tl.constexpr):
    tl.store(y_ptr + tl.arange(0, BLOCK), tl.arange(0, BLOCK))


@triton.jit
def unrolled(x_ptr, n, BLOCK: tl.constexpr):
    for i in tl.range(0, n, 1, loop_unroll_factor=2):
        tl.store(x_ptr + i * BLOCK + tl.arange(0, BLOCK), tl.arange(0, BLOCK))


@triton.jit
def broadcast2d(x_ptr, y_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :]
    tl.store(y_ptr + o, tl.load(x_ptr + o) + 1)


@triton.jit
def splat_arith(x_ptr, y_ptr, s, BLOCK: tl.constexpr):
    tl.store(y_ptr + tl.arange(0, BLOCK), tl.full([BLOCK], s, tl.int32) * 3)  # muli(splat, splat constant)


PTRS = {"x_ptr": "*fp32", "y_ptr": "*fp32"}
DESC = {"desc": "tensordesc<fp32[16]>", "y_ptr": "*fp32"}
NO_CALLS = {"add_inliner", "add_symbol_dce", "add_rewrite_tensor_pointer", "add_rewrite_tensor_descriptor_to_pointer"}
CASES = {  # kernel: (signature, the passes it skips besides the loop unroller, unless it says "unrolled")
    "plain": (plain, {**PTRS, "n": "i32"}, NO_CALLS | {"add_reorder_broadcast"}),
    "calls": (
        calls,
        PTRS,
        {"add_rewrite_tensor_pointer", "add_rewrite_tensor_descriptor_to_pointer", "add_canonicalizer"}
        | {"add_reorder_broadcast"},
    ),
    "broadcast2d": (broadcast2d, PTRS, NO_CALLS),  # a tt.broadcast: reorder-broadcast always runs
    "splat_arith": (splat_arith, {**PTRS, "s": "i32"}, NO_CALLS | {"add_reorder_broadcast"}),
    "block_ptr": (
        block_ptr,
        {**PTRS, "n": "i32"},
        set(),  # a rewrite to run: every pass
    ),
    "block_ptr_calls": (block_ptr_calls, {**PTRS, "n": "i32"}, set()),
    "descriptor": (descriptor, DESC, set()),
    "unused_descriptor": (unused_descriptor, DESC, set()),
    "unrolled": (unrolled, {"x_ptr": "*fp32", "n": "i32"}, NO_CALLS | {"add_reorder_broadcast"}),
}
# the kernels make_ttir runs reorder-broadcast for: from the list, or after combine (reorder_broadcast_can_change)
REORDERED = {"block_ptr", "block_ptr_calls", "descriptor", "unused_descriptor", "broadcast2d", "splat_arith"}


def _module(fn, signature, block):
    from triton._C.libtriton import ir

    be = PlateBackend(TARGET)
    options = be.parse_options({})
    ctx = ir.context()
    ir.load_dialects(ctx)
    src = ASTSource(fn, signature={**signature, "BLOCK": "constexpr"}, constexprs={"BLOCK": block})
    return src.make_ir(TARGET, options, be.get_codegen_implementation(options), be.get_module_map(), ctx), ctx


def _run(mod, pass_list):
    from triton._C.libtriton import ir, passes

    pm = ir.pass_manager(mod.context)
    for namespace, add_pass in pass_list:
        getattr(getattr(passes, namespace), add_pass)(pm)
    pm.run(mod, "test")
    return mod.str()


@pytest.mark.filterwarnings("ignore:tl.make_block_ptr is deprecated")
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_kernel_skips_the_passes_its_ops_leave_nothing_to_do_for_and_gets_the_same_ttir(case, monkeypatch):
    fn, signature, skipped = CASES[case]
    mod, _ctx = _module(fn, signature, 16)
    chosen = plate_compiler.ttir_passes(mod)
    assert {p[1] for p in chosen} == ALL - skipped - ({"add_loop_unroll"} if case != "unrolled" else set())
    assert list(chosen) == [p for p in TTIR_PASSES if p in chosen]  # the full list's order
    ran = []
    real_run = plate_compiler._run_ttir_passes
    monkeypatch.setattr(
        plate_compiler, "_run_ttir_passes", lambda m, pass_list: ran.extend(pass_list) or real_run(m, pass_list)
    )
    full, _ctx2 = _module(fn, signature, 16)
    assert plate_compiler.make_ttir(mod, {}, None) == _run(full, TTIR_PASSES)
    assert (REORDER_BROADCAST in ran) == (case in REORDERED)
    assert ran == [p for p in TTIR_PASSES if p in ran]  # one run of each, in the full list's order


@pytest.mark.parametrize(("case", "can_change"), [("plain", False), ("calls", False), ("splat_arith", True)])
def test_reorder_broadcast_is_told_apart_on_the_module_combine_leaves(case, can_change):
    fn, signature, _skipped = CASES[case]
    mod, _ctx = _module(fn, signature, 16)
    chosen = plate_compiler.ttir_passes(mod)
    before_cse = chosen[: chosen.index(CSE)]
    _run(mod, before_cse)
    assert plate_compiler.reorder_broadcast_can_change(mod) is can_change
    without, _ctx2 = _module(fn, signature, 16)
    with_it, _ctx3 = _module(fn, signature, 16)
    # the pass changes exactly the module the check says it can change
    assert (_run(without, before_cse) != _run(with_it, (*before_cse, REORDER_BROADCAST))) is can_change


@pytest.mark.filterwarnings("ignore:tl.make_block_ptr is deprecated")
def test_the_stage_runs_the_chosen_passes():
    mod, _ctx = _module(block_ptr_calls, {**PTRS, "n": "i32"}, 16)
    text = str(plate_compiler.make_ttir(mod, {}, None))
    assert "tt.make_tensor_ptr" not in text and "tt.call" not in text  # rewritten and inlined
    assert text.count("tt.func") == 1  # the inlined function dropped (symbol DCE)
