"""The registration of plate's eager kernels: the table's overloads on the PrivateUse1 dispatch key (the families
of ops.AUTOGRAD_FAMILIES on AutogradPrivateUse1).

Its own module so that torch's autoload hook (autoload.py) can import it while the package's
``__init__`` is still waiting on ``import torch``: importing ``triton_plate_backend.eager_ops`` before
torch starts torch's autoload, which needs ``register`` before the package has finished."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch._C._dynamo import eval_frame

from . import (
    advanced_index,
    antialias,
    complex_ops,
    complex_views,
    composite,
    convolution,
    ctc,
    eager_lock,
    embedding_bag_backward,
    embedding_renorm,
    float_parts,
    fractional_pool,
    fused_optimizers,
    gradients,
    grid_sampler_3d,
    index_forms,
    indexing,
    layer_norm,
    linalg,
    linalg_svd,
    matmul,
    matrix_exp,
    multilabel_margin,
    narrow_types,
    ops,
    out_forms,
    parametric,
    pooling,
    reductions,
    rewritten,
    sampling,
    scans,
    segment_reduce,
    sorting,
    spaced_ranges,
    special_family,
    transformer_fastpath,
    weight_norm,
)
from .launch import library_compiles
from .table import EAGER_OPS, overloads

# Row.family -> the builder of that family's kernels
FAMILIES = {
    **ops.FAMILIES,
    **parametric.FAMILIES,
    **indexing.FAMILIES,
    **index_forms.FAMILIES,
    **pooling.FAMILIES,
    **sorting.FAMILIES,
    **advanced_index.FAMILIES,
    **scans.FAMILIES,
    **complex_ops.FAMILIES,
    **weight_norm.FAMILIES,
    **special_family.FAMILIES,
    **composite.FAMILIES,
    **convolution.FAMILIES,
    **reductions.FAMILIES,
    **rewritten.FAMILIES,
    **sampling.FAMILIES,
    **layer_norm.FAMILIES,
    **matmul.FAMILIES,
    **linalg.FAMILIES,
    **linalg_svd.FAMILIES,
    **float_parts.FAMILIES,
    **antialias.FAMILIES,
    **fractional_pool.FAMILIES,
    **matrix_exp.FAMILIES,
    **grid_sampler_3d.FAMILIES,
    **transformer_fastpath.FAMILIES,
    **fused_optimizers.FAMILIES,
    **spaced_ranges.FAMILIES,
    **embedding_bag_backward.FAMILIES,
    **embedding_renorm.FAMILIES,
    **complex_views.FAMILIES,
    **multilabel_margin.FAMILIES,
    **gradients.FAMILIES,
    **ctc.FAMILIES,
    **segment_reduce.FAMILIES,
}

_library = None


def _untraced(kernel: Callable) -> Callable:
    """`kernel`, run with Dynamo's frame hook off: a compiled function's eager code (a graph break) may
    call it, and Dynamo must not trace the kernel, its launch or the simulator (as the allocator, whose C++
    side swaps the hook out)."""

    def run(*args, **kwargs):
        # the eager kernels load from Triton's cache (launch.library_compiles)
        with eager_lock.LOCK, library_compiles():
            return kernel(*args, **kwargs)

    return run


# `run`'s frames and every frame under them skip Dynamo's hook (one code object serves every kernel)
eval_frame.set_code_exec_strategy(
    _untraced(None).__code__, eval_frame._FrameExecStrategy(eval_frame._FrameAction.SKIP, eval_frame._FrameAction.SKIP)
)


def register() -> None:
    """Register every overload of the table as plate's kernel for it (idempotent)."""
    global _library
    if _library is not None:
        return
    library = torch.library.Library("aten", "IMPL")
    covered = overloads()
    for name, row in covered.items():
        op = _overload(name)
        key = "AutogradPrivateUse1" if row.family in ops.AUTOGRAD_FAMILIES else "PrivateUse1"
        if key == "PrivateUse1" and composite_autograd(name):
            continue  # the composite reaches plate's kernels (the row stays for its out= / in-place forms)
        library.impl(op, _untraced(_kernel(name, op, row)), key)
    # the other out= / in-place forms: the functional row's kernel, its result written as ATen writes it
    for form, name in out_forms.derived(EAGER_OPS, covered).items():
        functional = _overload(name)
        kernel = out_forms.adapter(_overload(form), functional, _kernel(name, functional, EAGER_OPS[name]))
        library.impl(_overload(form), _untraced(kernel), "PrivateUse1")
    _library = library


def composite_autograd(name: str) -> bool:
    """The overload ``name`` gets its autograd from its CompositeImplicitAutograd kernel (it has no Autograd kernel of
    its own): a PrivateUse1 kernel would take AutogradPrivateUse1 off the composite too (the dispatcher gives a
    backend's autograd key the composite only while the backend has no kernel), leaving the autograd fallback, which
    warns and records the kernel's inner ops (conj_physical's grad_fn was CopySlices, the CPU's
    ConjPhysicalBackward0)."""
    packet, _, overload = name.partition(".")
    qualified = f"aten::{packet}" if overload == "default" else f"aten::{packet}.{overload}"
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    return has(qualified, "CompositeImplicitAutograd") and not has(qualified, "Autograd")


def _overload(name: str) -> torch._ops.OpOverload:
    packet, _, overload = name.partition(".")
    return getattr(getattr(torch.ops.aten, packet), overload)


def _kernel(name: str, op: torch._ops.OpOverload, row) -> Callable:
    """The plate kernel of the table's overload ``name`` (its family's, with the stand-ins that wrap it)."""
    return complex_views.stand_in(name, op, narrow_types.stand_in(name, op, FAMILIES[row.family](op, row)))


def registered() -> bool:
    return _library is not None
