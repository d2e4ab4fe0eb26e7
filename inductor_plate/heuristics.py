"""The runtime heuristics plate's Inductor kernels are decorated with: Inductor's ``triton_heuristics``, with
one more block size offered to every 1-D pointwise kernel, and wider row blocks to a looped reduction that
Inductor gives one configuration (``with_row_blocks``).

Inductor sizes a pointwise kernel's block for a GPU: at most 1024 elements, so that a large tensor makes
hundreds of programs for thousands of warps. A plate core runs one program at a time and pays a DMA flight
per tile, so its best block is the one that gives every core one program: ``numel / cores``, rounded up to a
power of two (``wave_block``). Inductor's own configurations stay; the one-wave block joins them.

Which configuration runs: in the default mode, ONE, chosen by the cost model (kernel_config.py) from the
configurations Inductor offers a pointwise, reduction or persistent reduction kernel, so that the first
call compiles one kernel and benchmarks nothing (Inductor would compile and benchmark them all:
``triton.autotune_pointwise`` and its reduction configurations are on in the default mode too). Under
max-autotune (or ``config.cost_model_configs = False``) every one is compiled and ranked by modeled time
(benchmarker.py); max-autotune's coordinate descent starts from the winner.

PlateTritonKernel imports this module as ``triton_heuristics`` in the code of its kernels; every name
other than ``pointwise``, ``reduction`` and ``persistent_reduction`` is Inductor's own.
"""

from __future__ import annotations

import copy
import math

from torch._inductor.runtime import triton_heuristics as _inductor
from torch._inductor.runtime.hints import TRITON_MAX_BLOCK, HeuristicType, ReductionHint

from . import config, kernel_config, policy


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


def tunes(inductor_meta: dict) -> bool:
    """Whether a kernel compiles and benchmarks all its configurations: under max-autotune, or when
    ``config.cost_model_configs`` was off where the kernel was generated (its inductor_meta, scheduling.py)."""
    tuning = inductor_meta.get("max_autotune") or inductor_meta.get("max_autotune_pointwise")
    return bool(tuning or not inductor_meta.get("plate_cost_model_configs", config.cost_model_configs))


def chosen(size_hints, configs: list, triton_meta: dict, inductor_meta: dict) -> list:
    """``configs`` when the kernel tunes (``tunes``), else the cost model's one of them (kernel_config.py)."""
    if len(configs) <= 1 or tunes(inductor_meta):
        return configs
    return [kernel_config.choose(policy.machine(), dict(size_hints), configs, triton_meta, inductor_meta)]


SHRINKABLE = ("XBLOCK", "YBLOCK", "ZBLOCK")  # the tile's program dims; a reduction's R blocks stay as chosen


def halved(configs: list) -> list:
    """Each configuration with its largest program block (``SHRINKABLE``) halved; [] when none is above 1."""
    smaller = []
    for c in configs:
        blocks = {k: v for k, v in c.kwargs.items() if k in SHRINKABLE and v > 1}
        if not blocks:
            continue
        largest = max(blocks, key=lambda k: (blocks[k], k))
        c = copy.copy(c)
        c.kwargs = {**c.kwargs, largest: blocks[largest] // 2}
        smaller.append(c)
    return smaller


class PlateAutotuner(_inductor.CachingAutotuner):
    """Inductor's CachingAutotuner whose configurations, when none fits a core's SRAM, are retried with smaller
    program blocks (``halved``) until one compiles: the tile Inductor sizes for a GPU holds every live temporary
    of the kernel at once, and with dynamic shapes the index arithmetic adds int64 temporaries the static kernel
    folds into constants (avg_pool3d_backward over symbolic sizes: 1.4 MB live at 16x16x16, the core has 1 MB).
    A GPU would spill to local memory; a plate core fails the compile (SramOutOfResources)."""

    def _precompile_worker(self):
        while True:
            try:
                return super()._precompile_worker()
            except _inductor.NoTritonConfigsError as error:
                smaller = halved(self.configs or [])
                if "SramOutOfResources" not in str(error) or not smaller:
                    raise
                self.configs = smaller


PERSISTENT_XBLOCKS = (8, 32, 128)  # the row blocks Inductor offers a persistent reduction beside 1
PERSISTENT_TILE = 4096  # the largest rows x reduction elements of those blocks (Inductor's bound)


def with_row_blocks(size_hints, configs: list, inductor_meta: dict, reduction_hint=ReductionHint.INNER) -> list:
    """``configs`` plus, for a looped reduction over contiguous rows (INNER hint) given ONE configuration, that
    configuration with each wider row block (``XBLOCK``) a persistent reduction would be offered: at most the
    x size hint and ``PERSISTENT_TILE`` elements. Inductor sends a row of symbolic length to a looped
    reduction, whose INNER hint keeps 1-2 rows a program (a GPU runs hundreds of them at once); a plate core
    runs one program at a time and pays a DMA flight per tile, so a dynamic-shape softmax over 64 rows of 16
    made 32 programs of three loops each (39.7 us modeled against the static persistent kernel's 1.8 us). The
    cost model picks among them (``chosen``); the rows of a block are reduced independently, in the same
    R0_BLOCK chunks, whatever the block. Nothing changes under tuning, for tiled (``y``) kernels, or for the
    OUTER hints' one configuration (not measured)."""
    if reduction_hint != ReductionHint.INNER or len(configs) != 1 or tunes(inductor_meta):
        return configs
    if set(size_hints) != {"x", "r0_"}:
        return configs
    (only,) = configs
    rows, chunk = only.kwargs.get("XBLOCK"), only.kwargs.get("R0_BLOCK")
    if rows is None or chunk is None:
        return configs
    wider = []
    for block in PERSISTENT_XBLOCKS:
        if rows < block <= size_hints["x"] and block * chunk <= PERSISTENT_TILE:
            c = copy.copy(only)
            c.kwargs = {**only.kwargs, "XBLOCK": block}
            wider.append(c)
    return configs + wider


def _autotuned(size_hints, configs, triton_meta, inductor_meta, heuristic_type, filename):
    if not isinstance(configs, list):  # a combo kernel: Inductor's decorator as it is
        return configs
    return _inductor.cached_autotune(
        size_hints,
        chosen(size_hints, configs, triton_meta, inductor_meta),
        triton_meta=triton_meta,
        inductor_meta=inductor_meta,
        heuristic_type=heuristic_type,
        filename=filename,
        caching_autotuner_cls=PlateAutotuner,
    )


def pointwise(size_hints, triton_meta, tile_hint=None, filename=None, min_elem_per_thread=0, inductor_meta=None):
    """Inductor's ``pointwise`` decorator over ``pointwise_configs``, one of them in the default mode."""
    inductor_meta = {} if inductor_meta is None else inductor_meta
    configs = pointwise_configs(size_hints, triton_meta, tile_hint, filename, min_elem_per_thread, inductor_meta)
    return _autotuned(size_hints, configs, triton_meta, inductor_meta, HeuristicType.POINTWISE, filename)


def reduction(size_hints, reduction_hint=False, triton_meta=None, filename=None, inductor_meta=None):
    """Inductor's ``reduction`` decorator, one of its configurations in the default mode."""
    inductor_meta = {} if inductor_meta is None else inductor_meta
    configs = _inductor.reduction(
        size_hints, reduction_hint, triton_meta, filename, inductor_meta=inductor_meta, return_configs=True
    )
    if isinstance(configs, list):
        configs = with_row_blocks(size_hints, configs, inductor_meta, reduction_hint)
    return _autotuned(size_hints, configs, triton_meta, inductor_meta, HeuristicType.REDUCTION, filename)


def persistent_reduction(size_hints, reduction_hint=False, triton_meta=None, filename=None, inductor_meta=None):
    """Inductor's ``persistent_reduction`` decorator, one of its configurations in the default mode."""
    inductor_meta = {} if inductor_meta is None else inductor_meta
    configs = _inductor.persistent_reduction(
        size_hints, reduction_hint, triton_meta, filename, inductor_meta=inductor_meta, return_configs=True
    )
    return _autotuned(size_hints, configs, triton_meta, inductor_meta, HeuristicType.PERSISTENT_REDUCTION, filename)


def __getattr__(name: str):
    return getattr(_inductor, name)
