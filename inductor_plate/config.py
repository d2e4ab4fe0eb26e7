"""Inductor knobs of the plate backend: the `device_custom_config` of the "plate" device.

Inductor hashes this module (``save_config_portable``) into every FX-graph cache key, so a change
to any value here gives a fresh compile instead of a stale cached graph. Runtime monkeypatches
(triton_plate_backend/shims.py) enter the key by their source only (fallback.py's pass uuid): every
decision that varies at run time and changes generated code reads a value from here.

Change a value for a block of code with ``inductor_plate.config.patch(...)``, like Inductor's own
config. Values of ``None`` are derived from the machine description by policy.py.
"""

import sys  # no `from __future__ import annotations`: install_config_module would read it as a knob

from torch.utils._config_module import install_config_module

# The machine preset the decisions below are made for. None: the machine of the current plate device
# (PLATE_MACHINE when the device was created); the fallback pass's uuid puts it in the cache key.
machine: str | None = None

# Fusion: the scheduler refuses a fusion whose kernel would stage more bytes of distinct buffers per
# program than this. None: half the core's SRAM (the other half double-buffers the DMA).
max_fusion_sram_bytes: int | None = None

# Fusion: most scheduler nodes in one fused kernel (Inductor's global max_fusion_size still applies).
max_fusion_nodes: int = 32

# Reductions: a persistent reduction keeps the whole reduced row in SRAM; allow it only when the row
# of every reduced input fits this many bytes. None: a quarter of the core's SRAM.
persistent_reduction_sram_bytes: int | None = None

# mm/bmm/addmm/baddbmm/_int_mm (and convolutions, which become them): "always" (Triton GEMM templates on
# the matrix unit in every mode: the cost model's one configuration in the default mode, modeled-time
# autotuning under max-autotune; float64 and integer products, which no template takes, a sum over k as
# a plate reduction kernel; never a host kernel), or, opting in to extern aten kernels that run on
# the host outside the modeled clock: "max-autotune" (templates only under Inductor's max-autotune, which
# also tries the host kernel) or "never" (the host kernel always).
gemm_templates: str = "always"

# Pointwise and reduction kernels in the default mode: True runs ONE of the configurations Inductor offers,
# chosen by the cost model (kernel_config.py) without compiling or benchmarking the others; False compiles
# them all at the first call and ranks them by modeled time, as max-autotune always does (heuristics.py).
cost_model_configs: bool = True

# Convolutions on plate: True lowers them to im2col gathers and GEMMs on the matrix unit (conv_gemm.py),
# forward and backward; False leaves them to Inductor (extern kernels on the host).
conv_as_gemm: bool = True

# Benchmarks (autotuning) rank a choice that launches no plate kernel (an extern aten kernel running
# on the host through the CPU fallback) at this many modeled milliseconds: after every plate kernel.
# The autotune log reports it as "host, not modeled" (benchmarker.py).
extern_choice_ms: float = 1.0e3

# Convolutions Inductor sees on plate (conv_as_gemm False): let Inductor make their layouts channels-last
# (its layout optimization for GPUs). False: they run as extern kernels on the host, where it buys nothing.
conv_layout_optimization: bool = False

# aten ops that always run eagerly on plate (extern calls through the CPU fallback), besides the
# policy's built-in table (policy.EAGER_OPS) and the ops learned from kernels that failed to compile.
eager_ops: list[str] = []

# A kernel plate cannot compile: True runs its frame eagerly with a one-line warning and runs the
# kernel's aten ops eagerly in later compiles; False raises the compile error.
fallback_on_compile_error: bool = True

install_config_module(sys.modules[__name__])
