"""The runtime heuristics plate's Inductor kernels are decorated with: Inductor's ``triton_heuristics``, with
one more block size offered to every 1-D pointwise kernel.

Inductor sizes a pointwise kernel's block for a GPU: at most 1024 elements, so that a large tensor makes
hundreds of programs for thousands of warps. A plate core runs one program at a time and pays a DMA flight
per tile, so its best block is the one that gives every core one program: ``numel / cores``, rounded up to a
power of two (``wave_block``). Inductor's own configurations stay; the one-wave block joins them, and
Inductor's pointwise autotuning (on in the default mode too, ``triton.autotune_pointwise``) ranks them by
modeled time (benchmarker.py). Max-autotune's coordinate descent starts from the winner.

PlateTritonKernel imports this module as ``triton_heuristics`` in the code of its kernels; every name
other than ``pointwise`` is Inductor's own.
"""

from __future__ import annotations

import math

from torch._inductor.runtime import triton_heuristics as _inductor
from torch._inductor.runtime.hints import TRITON_MAX_BLOCK, HeuristicType


def wave_block(numel: int, cores: int) -> int:
    """The power-of-two block that gives each of ``cores`` cores one program of a ``numel`` kernel."""
    per_core = max(1, math.ceil(numel / max(cores, 1)))
    return min(1 << (per_core - 1).bit_length(), TRITON_MAX_BLOCK["X"])


def pointwise_configs(
    size_hints, triton_meta, tile_hint=None, filename=None, min_elem_per_thread=0, inductor_meta=None
):
    """Inductor's pointwise configurations; a 1-D kernel with more than one also gets the one-wave block
    (module docstring). A combo kernel's: Inductor's decorator as it is (not a list)."""
    kwargs = dict(tile_hint=tile_hint, filename=filename, min_elem_per_thread=min_elem_per_thread)
    configs = _inductor.pointwise(size_hints, triton_meta, inductor_meta=inductor_meta, return_configs=True, **kwargs)
    if isinstance(configs, list) and len(size_hints) == 1 and len(configs) > 1:
        block = wave_block(size_hints["x"], triton_meta["device"].multi_processor_count)
        if all(c.kwargs.get("XBLOCK") != block for c in configs):
            warp_size = triton_meta["device"].warp_size_or_default
            configs.append(
                _inductor.triton_config(size_hints, block, min_elem_per_thread=min_elem_per_thread, warp_size=warp_size)
            )
    return configs


def pointwise(size_hints, triton_meta, tile_hint=None, filename=None, min_elem_per_thread=0, inductor_meta=None):
    """Inductor's ``pointwise`` decorator over ``pointwise_configs``."""
    inductor_meta = {} if inductor_meta is None else inductor_meta
    configs = pointwise_configs(size_hints, triton_meta, tile_hint, filename, min_elem_per_thread, inductor_meta)
    if not isinstance(configs, list):
        return configs
    return _inductor.cached_autotune(
        size_hints,
        configs,
        triton_meta=triton_meta,
        inductor_meta=inductor_meta,
        heuristic_type=HeuristicType.POINTWISE,
        filename=filename,
    )


def __getattr__(name: str):
    return getattr(_inductor, name)
