"""Matrix products on plate run on the matrix unit in every mode: the plate side of Inductor's GEMM lowerings.

Inductor lowers mm, bmm, addmm, baddbmm, _int_mm and _scaled_mm to the extern aten kernel unless max-autotune is on
(``use_aten_gemm_kernels``); on plate that kernel runs on the host, outside the modeled clock. ``register``
wraps those lowerings; for a product on plate the wrapper follows ``policy.gemm_mode()``:

- "always" (default): Triton GEMM templates only; a product of a dtype no template takes (float64, integers)
  is a sum over k in Inductor IR (reduction_gemm), a plate kernel too. In the default mode the lowering runs with the
  templates on and the aten kernel off, and the template heuristic offers ONE configuration, chosen
  by the cost model from the shapes (gemm_config.choose): one choice, so nothing is benchmarked. Under
  max-autotune every fitting configuration is ranked by modeled time, the aten kernel left out; the heuristic offers
  them best-estimate first (templates.offered_best_first), so the driver's cost-model pruning skips the rest.
- "max-autotune": the host kernel in the default mode (the user opted in), templates and the aten kernel
  side by side under max-autotune (the benchmarker logs the host choice as not modeled).
- "never": the host kernel always (Inductor's own lowering; is_big_gpu says no templates).

A product with an empty dimension becomes zeros (plus ``beta * input`` for addmm/baddbmm), no kernel needed; an
addmm/baddbmm with beta == 0 is ``alpha *`` its mm/bmm (torch ignores the input, NaN and all); a product of two
dtypes (float and int64) raises torch's dtype error while lowering (CUDA's aten kernel raises it at run time);
an mm or bmm with an out_dtype (decompose-k's bmm over K splits under max-autotune too) runs as the mm or bmm template;
so does a max-autotune mm whose K is too long for the mm template and has no decompose-k split (a prime K).
A matrix that is a dtype view of its buffer (``x.view(torch.float16)`` of int16 storage) goes to a template as a
copy of its own dtype: the templates load an operand at its buffer's dtype (_bitcast_operands).
Products on other devices reach Inductor's lowering unchanged.
"""

from __future__ import annotations

import functools

import torch
from torch._inductor import config as inductor_config
from torch._inductor.virtualized import V

from triton_plate_backend.errors import PlateError

from . import gemm_config, policy, reduction_gemm, templates

aten = torch.ops.aten

FLOATS = frozenset({torch.float16, torch.bfloat16, torch.float32})
FP8 = frozenset({torch.float8_e4m3fn, torch.float8_e5m2})
INT8 = frozenset({torch.int8})

# op -> (index of its first matrix among the lowering's arguments: addmm/baddbmm take the bias first, the operand
# dtypes its Triton template takes: mm/bmm/addmm/baddbmm of others are reductions, the rest stay with the host kernel)
GEMM_OPS: dict = {
    aten.mm: (0, FLOATS),
    aten.bmm: (0, FLOATS),
    aten.addmm: (1, FLOATS),
    aten.baddbmm: (1, FLOATS),
    aten._int_mm: (0, INT8),
    aten._scaled_mm: (0, FP8),
}


def _max_autotune() -> bool:
    return bool(inductor_config.max_autotune or inductor_config.max_autotune_gemm)


def _without_aten(backends: str) -> str:
    """The backends less ATEN; "TRITON" when ATEN was the only one. None asked for stays none (Inductor then
    raises NoValidChoicesError, as on any device)."""
    named = [b.strip() for b in backends.split(",") if b.strip()]
    kept = [b for b in named if b.upper() != "ATEN"]
    return ",".join(kept) or ("TRITON" if named else "")


def _hint(size) -> int:
    return int(V.graph.sizevars.optimization_hint(size, fallback=64))


def problem_of(mat1, mat2) -> gemm_config.GemmProblem:
    """The GEMM of two Inductor IR matrices ([batch,] m x k and k x n), sizes at their hints."""
    a, b = mat1.get_size(), mat2.get_size()
    batch = _hint(a[0]) if len(a) == 3 else 1
    dtype = str(mat1.get_dtype()).removeprefix("torch.")
    return gemm_config.GemmProblem(m=_hint(a[-2]), n=_hint(b[-1]), k=_hint(a[-1]), batch=batch, dtype=dtype)


def default_mode_config(mat1, mat2) -> gemm_config.GemmConfig:
    """The one template configuration of a default-mode product (the cost model's choice)."""
    return gemm_config.choose(policy.machine(), problem_of(mat1, mat2), policy.fusion_sram_bytes())


def config_estimate(mat1, mat2):
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps) -> the cost model's cycles for this product (gemm_config)."""
    machine, problem = policy.machine(), problem_of(mat1, mat2)

    def estimate(*blocks: int) -> float:
        return gemm_config.estimate(machine, problem, gemm_config.GemmConfig(*blocks))

    return estimate


def _on_plate(node) -> bool:
    get_device = getattr(node, "get_device", None)
    device = get_device() if callable(get_device) else None
    return device is not None and device.type == "plate"


def _is_empty(mat1, mat2) -> bool:
    """Is a dimension of the product known to be 0 (Dynamo specializes a size of 0, dynamic or not)?"""
    return any(V.graph.sizevars.statically_known_equals(size, 0) for size in (*mat1.get_size(), *mat2.get_size()))


def empty_product(mats, args, kwargs, first_matrix: int, out_dtype):
    """A product with an empty dimension, without a kernel of its own: zeros of the result's shape (K == 0),
    an empty result (M or N == 0), plus ``beta * input`` for addmm/baddbmm. Inductor offers no template for it
    and its aten kernel would run on the host."""
    from torch._inductor.lowering import lowerings

    mat1, mat2 = mats
    size = [*mat1.get_size()[:-1], mat2.get_size()[-1]]
    dtype = out_dtype or mat1.get_dtype()
    zeros = lowerings[aten.full.default](size, 0, dtype=dtype, device=mat1.get_device())
    beta = kwargs.get("beta", 1)
    if first_matrix == 0 or beta == 0:  # beta == 0 ignores the input, NaN and all (torch.addmm)
        return zeros
    return lowerings[aten.add.Tensor](zeros, lowerings[aten.mul.Tensor](args[0], beta))


def template_product(name: str, mat1, mat2, out_dtype=None):
    """mm/bmm(a, b[, out_dtype=...]) as the mm or bmm template alone, its result of ``out_dtype`` when given (it
    accumulates in float32 and stores that dtype). Inductor's bmm lowering asserts that out_dtype is for CUDA or
    XPU, and its mm lowering offers only the aten kernel then; decompose-k's subgraph (a long-K mm as a bmm over K
    splits, then a sum) lowers such a bmm too. Also the mm Inductor would leave without a choice (_long_k_only)."""
    from torch._inductor.kernel.bmm import bmm_template
    from torch._inductor.kernel.mm import mm_template
    from torch._inductor.kernel.mm_common import mm_args
    from torch._inductor.kernel_inputs import MMKernelInputs
    from torch._inductor.select_algorithm import autotune_select_algorithm

    template = {"mm": mm_template, "bmm": bmm_template}[name]
    _, _, _, layout, mat1, mat2 = mm_args(mat1, mat2, layout=None, out_dtype=out_dtype)
    kernel_inputs = MMKernelInputs([mat1, mat2], out_dtype=out_dtype)
    backends = [b.strip().upper() for b in inductor_config.max_autotune_gemm_backends.split(",")]
    choices = V.choices.get_template_configs(kernel_inputs, [template], name) if "TRITON" in backends else []
    node, _ = autotune_select_algorithm(name, choices, kernel_inputs.nodes(), layout)
    return node


# ops plate lowers as their template alone when Inductor's lowering cannot (template_product)
TEMPLATE_PRODUCTS: dict = {
    aten.mm: functools.partial(template_product, "mm"),
    aten.bmm: functools.partial(template_product, "bmm"),
}


def _long_k_only(mat1, mat2) -> bool:
    """Would Inductor's max-autotune mm have no choice: K >= 64 * max(M, N), so only decompose-k is offered (no mm
    template), and no K split divides K (a prime K) or a size is unbacked, so decompose-k offers none either?"""
    from torch._inductor.kernel.mm import decompose_k_subgraph_template
    from torch._inductor.kernel_inputs import MMKernelInputs
    from torch._inductor.template_heuristics.registry import get_template_heuristic
    from torch._inductor.utils import use_decompose_k_choice

    if len(mat1.get_size()) != 2:
        return False
    (m, k), n = mat1.get_size(), mat2.get_size()[-1]
    if not use_decompose_k_choice(m, n, k, threshold_multiple=2):
        return False
    heuristic = get_template_heuristic(decompose_k_subgraph_template.uid, "plate", "mm")
    return next(iter(heuristic.get_template_configs(MMKernelInputs([mat1, mat2]), "mm")), None) is None


def _out_dtype(args, kwargs, first_matrix: int):
    """The out_dtype of bmm.dtype / mm.dtype (positional after the two matrices, or a keyword), else None."""
    if len(args) > first_matrix + 2:
        return args[first_matrix + 2]
    return kwargs.get("out_dtype")


def _template_takes(mat1, mat2, dtypes) -> bool:
    """Can a GEMM template compute this product: operand dtypes it takes, and no empty dimension (Inductor
    offers a template only then; a float64 or integer product is a reduction instead, _as_reduction)?"""
    if mat1.get_dtype() not in dtypes:
        return False
    return all(_hint(size) > 0 for size in (*mat1.get_size(), *mat2.get_size()))


def _scales_template_takes(args, kwargs) -> bool:
    """_scaled_mm's template (the mm template with a scaling epilogue, templates.py) takes float32 scales per
    tensor (one element each) or per row of A and column of B, no result scale, and K > 16; the rest (block
    scales, MX formats) stays with the host kernel, counted."""
    mat_a, mat_b, scale_a, scale_b = args[:4]
    scale_result = args[5] if len(args) > 5 else kwargs.get("scale_result")
    if scale_result is not None or {scale_a.get_dtype(), scale_b.get_dtype()} != {torch.float32}:
        return False
    m, k = (_hint(s) for s in mat_a.get_size())
    n = _hint(mat_b.get_size()[-1])
    size_a, size_b = [_hint(s) for s in scale_a.get_size()], [_hint(s) for s in scale_b.get_size()]
    per_tensor = len(size_a) <= 1 and len(size_b) <= 1 and size_a in ([], [1]) and size_b in ([], [1])
    per_row = size_a == [m, 1] and size_b == [1, n]
    return k > 16 and (per_tensor or per_row)


def _as_reduction(args, kwargs, first_matrix: int):
    """The product as a plate reduction (reduction_gemm) when no template takes its dtype, else None."""
    mats = args[first_matrix : first_matrix + 2]
    if kwargs.get("out_dtype") is not None or len(args) > first_matrix + 2 or not reduction_gemm.takes(*mats):
        return None
    if not all(_hint(size) > 0 for size in (*mats[0].get_size(), *mats[1].get_size())):
        return None
    if first_matrix == 0:
        return reduction_gemm.product(*mats)
    return reduction_gemm.biased(args[0], *mats, alpha=kwargs.get("alpha", 1), beta=kwargs.get("beta", 1))


def reinterprets_storage(node) -> bool:
    """Is ``node`` its buffer under another dtype (``x.view(torch.float16)`` of int16 storage: Inductor's view of a
    buffer under an equal-width dtype is a ReinterpretView of another dtype)?"""
    from torch._inductor import ir

    if not ir.is_storage_and_layout(node):
        return False
    storage, layout = ir.as_storage_and_layout(node, freeze=False)
    return layout.dtype != storage.get_dtype()


def _bitcast_operands(args, first_matrix: int) -> tuple:
    """``args`` with every matrix that reinterprets its storage copied into a buffer of its own dtype (a plate
    kernel that bitcasts). The GEMM templates load an operand through its buffer's pointer, of the buffer's dtype:
    a dtype view passed as is would give ``tl.dot`` the int16 bits of a float16 view, or, fused into the template as
    a prologue, convert them as integers."""
    from torch._inductor import ir

    args = list(args)
    for i in range(first_matrix, first_matrix + 2):
        if reinterprets_storage(args[i]):
            args[i] = ir.ExternKernel.copy_input(args[i])
    return tuple(args)


def _ignores_input(args, kwargs, first_matrix: int) -> bool:
    """addmm/baddbmm with beta == 0: torch ignores the input, NaN and all. The templates' epilogue would add
    ``0 * input`` (NaN where the input is NaN or infinite)."""
    beta = kwargs.get("beta", 1)
    return first_matrix == 1 and isinstance(beta, (int, float)) and beta == 0


def product_alone(mats, alpha):
    """alpha * (mat1 @ mat2), lowered as mm or bmm (plate's lowerings again)."""
    from torch._inductor.lowering import lowerings

    op = aten.bmm.default if len(mats[0].get_size()) == 3 else aten.mm.default
    result = lowerings[op](*mats)
    return result if alpha == 1 else lowerings[aten.mul.Tensor](result, alpha)


class OperandDtypeMismatch(PlateError, RuntimeError):
    """A product of two matrices of different dtypes: torch's error, raised while lowering."""


def raise_dtype_mismatch(mat1, mat2) -> None:
    """Raise torch's error for a product of mixed dtypes (CUDA's aten kernel raises it when the graph runs). The
    extern aten kernel would raise it too, but on the host: the device's CPU fallback runs it (a host op)."""
    names = (_ATEN_DTYPE_NAMES.get(m.get_dtype(), str(m.get_dtype())) for m in (mat1, mat2))
    raise OperandDtypeMismatch(
        "expected mat1 and mat2 to have the same dtype, but got: {} != {} (a plate GEMM lowering: cast one "
        "operand to the other's dtype)".format(*names)
    )


# torch's C++ names of the dtypes (c10::toString), as its dtype errors spell them
_ATEN_DTYPE_NAMES = {
    torch.float16: "c10::Half",
    torch.bfloat16: "c10::BFloat16",
    torch.float32: "float",
    torch.float64: "double",
    torch.int8: "signed char",
    torch.uint8: "unsigned char",
    torch.int16: "short int",
    torch.int32: "int",
    torch.int64: "long int",
    torch.bool: "bool",
}


def plate_lowering(original, first_matrix: int, dtypes: frozenset, alone=None):
    """The lowering of one GEMM op: plate's modes for plate products, ``original`` for the rest. ``alone(mat1, mat2,
    out_dtype)``, when given, lowers the op as its template alone: a product with an out_dtype, or one Inductor would
    leave without a choice."""

    @functools.wraps(original)
    def lowering(*args, **kwargs):
        mats = args[first_matrix : first_matrix + 2]
        if len(mats) < 2 or not _on_plate(mats[0]) or policy.gemm_mode() != "always":
            return original(*args, **kwargs)
        if dtypes is not FP8 and _is_empty(*mats):
            out_dtype = torch.int32 if dtypes is INT8 else _out_dtype(args, kwargs, first_matrix)
            return empty_product(mats, args, kwargs, first_matrix, out_dtype)
        if dtypes is FLOATS and mats[0].get_dtype() != mats[1].get_dtype():
            raise_dtype_mismatch(*mats)
        if dtypes is FLOATS and _ignores_input(args, kwargs, first_matrix):
            return product_alone(mats, kwargs.get("alpha", 1))
        if dtypes is FLOATS and (reduced := _as_reduction(args, kwargs, first_matrix)) is not None:
            return reduced
        if not _template_takes(*mats, dtypes) or (dtypes is FP8 and not _scales_template_takes(args, kwargs)):
            return original(*args, **kwargs)
        args = _bitcast_operands(args, first_matrix)
        mats = args[first_matrix : first_matrix + 2]
        out_dtype = _out_dtype(args, kwargs, first_matrix)
        if out_dtype is not None and alone is not None:
            lower = functools.partial(alone, *mats, out_dtype)
        elif alone is not None and _max_autotune() and _long_k_only(*mats):
            lower = functools.partial(alone, *mats, None)
        else:
            lower = functools.partial(original, *args, **kwargs)
        if _max_autotune():
            backends = _without_aten(inductor_config.max_autotune_gemm_backends)
            with (
                inductor_config.patch(max_autotune_gemm_backends=backends),
                templates.offered_best_first(config_estimate(*mats)),
            ):
                return lower()
        chosen = default_mode_config(*mats)
        one_template = {
            "max_autotune_gemm": True,
            "max_autotune_gemm_backends": "TRITON",
            "triton.num_decompose_k_splits": 0,  # decompose-k would add a second choice
        }
        with inductor_config.patch(one_template), templates.offer_only(chosen):
            return lower()

    lowering._plate_gemm = True
    return lowering


@functools.cache
def register() -> None:
    """Wrap Inductor's lowering of every overload of the GEMM ops (once; inductor_plate.register)."""
    import torch._inductor.kernel.bmm  # noqa: F401  (registers the bmm/baddbmm lowerings)
    import torch._inductor.kernel.mm  # noqa: F401  (registers the mm/addmm/_int_mm lowerings)
    from torch._inductor.lowering import lowerings

    for packet, (first_matrix, dtypes) in GEMM_OPS.items():
        for name in packet.overloads():
            overload = getattr(packet, name)
            original = lowerings.get(overload)
            if original is not None and not getattr(original, "_plate_gemm", False):
                alone = TEMPLATE_PRODUCTS.get(packet)
                lowerings[overload] = plate_lowering(original, first_matrix, dtypes, alone)
