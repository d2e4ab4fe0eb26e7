"""The module Triton's generic ``triton.language.extra.libdevice`` resolves to on PLATE
(``compiler.get_module_map``): CUDA's libdevice wrappers, plus the generic names the CUDA module
lacks (``fast_tanhf``, which only HIP's module defines). Every wrapper emits a ``__nv_*`` symbol
that passes/libdevice.py lowers."""

from triton.language import core
from triton.language.extra.cuda.libdevice import *  # noqa: F403


@core.extern
def fast_tanhf(arg0, _semantic=None):
    return core.extern_elementwise(
        "",
        "",
        [arg0],
        {(core.dtype("fp32"),): ("__nv_fast_tanhf", core.dtype("fp32"))},
        is_pure=True,
        _semantic=_semantic,
    )
