"""THE table of plate's eager kernels: aten op overload -> the plate kernel that runs it.

One row per op; its out= and in-place overloads share the row (``VARIANTS``). A row names its kernel
family (ops.FAMILIES: how the call is taken apart and launched) and, for elementwise ops, the element
function (kernels.FUNCTIONS) and the schema arguments it reads. Adding an elementwise op is adding a
row and, if it has none yet, a one-line element function. Ops absent here run on the host through the
CPU fallback and are counted as host ops.

This module imports neither torch nor Triton: registering the table (eager_ops.register) costs no
Triton import, and the kernels compile on their first call."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Row:
    family: str  # ops.FAMILIES key
    fn: str = ""  # the element function (kernels.FUNCTIONS) or, for random ops, the distribution
    operands: tuple[str, ...] = ("self",)  # the schema arguments the kernel reads, in order
    promote: tuple[str, ...] = ()  # the arguments whose promoted type the op computes in (default: operands)
    complex_fn: str | None = None  # complex tensors: "real" (fn over real views) or a complex element function
    real_operands: tuple[str, ...] = ()  # operands that stay real for complex tensors (a condition, alpha)
    compute: str = "promoted"  # "result": compute in the result's type (an int input of a float function)
    integral: bool = False  # bool and integer tensors only: others go to the host, which raises torch's error
    floating: bool = False  # floating operands only: others go to the host, which raises torch's error
    boolean: bool = True  # False: bool operands go to the host (the CPU kernel refuses them: torch's error)
    params: tuple[str, ...] = ()  # parametric ops: the schema's numbers the kernel reads (parametric.py)


BINARY = ("self", "other")
COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
# complex eq / ne: the comparison over the real views, then both parts' (eq) or either part's (ne), as std::complex
PART_COMPARISONS = {"eq": "both_parts", "ne": "either_part"}
BITWISE = ("bitwise_and", "bitwise_or", "bitwise_xor")  # bool and integer tensors (torch refuses floats)
LOGICAL = ("logical_and", "logical_or", "logical_xor")  # any real operands: nonzero is true
INFINITIES = ("isposinf", "isneginf")  # real tensors (torch refuses complex ones)
ROUNDING = ("ceil", "floor", "trunc")  # exact in the tensor's type (integers: themselves)
# float functions: an integer input computes (and returns) the default float type, as torch does
FLOAT_FUNCTIONS = (
    "exp",
    "exp2",
    "log",
    "log1p",
    "sin",
    "cos",
    "tanh",
    "sigmoid",
    "sqrt",
    "rsqrt",
    "reciprocal",
    "expm1",
    "erf",
    "log2",
    "log10",
    "erfc",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "asinh",
    "acosh",
    "atanh",
)
# special functions of (x, n): n the polynomial's degree
POLYNOMIALS = tuple(
    f"{kind}_polynomial_{letter}" for kind in ("chebyshev", "shifted_chebyshev") for letter in "tuvw"
) + ("hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p")
BESSEL = ("j0", "j1", "y0", "y1")
ISIN = ("Tensor_Tensor", "Tensor_Scalar", "Scalar_Tensor")
LOSSES = ("mse_loss", "smooth_l1_loss", "huber_loss")
# upsampling forwards torch decomposes (their gradients: gradients.py's vjp; 2-d nearest and bilinear have their own)
UPSAMPLE_FORWARDS = (
    "upsample_nearest1d", "upsample_nearest3d", "upsample_linear1d", "upsample_trilinear3d",
    *(f"_upsample_nearest_exact{d}d" for d in (1, 2, 3)),
)  # fmt: skip
SHIFTS = {"bitwise_left_shift": "left_shift", "__lshift__": "left_shift", "bitwise_right_shift": "right_shift"}
SHIFTS["__rshift__"] = "right_shift"
GRAD_SELF = ("grad_output", "self")
AA_KINDS = ("bilinear", "bicubic")  # the antialiased resizes
# parametric.py: name -> (element function, tensor operands, numbers, Row options)
PARAMETRIC = {
    "elu": ("elu", ("self",), ("alpha", "scale", "input_scale"), {"floating": True}),
    "elu_backward": (
        "elu_backward",
        ("grad_output", "self_or_result"),
        ("alpha", "scale", "input_scale", "is_result"),
        {"floating": True},
    ),
    "leaky_relu": ("leaky_relu", ("self",), ("negative_slope",), {"floating": True}),
    "leaky_relu_backward": ("leaky_relu_backward", GRAD_SELF, ("negative_slope",), {"floating": True}),
    "hardtanh": ("hardtanh", ("self",), ("min_val", "max_val"), {"boolean": False}),
    "hardtanh_backward": ("hardtanh_backward", GRAD_SELF, ("min_val", "max_val"), {"floating": True}),
    "softplus": ("softplus", ("self",), ("beta", "threshold"), {"floating": True}),
    "softplus_backward": ("softplus_backward", GRAD_SELF, ("beta", "threshold"), {"floating": True}),
    "hardsigmoid": ("hardsigmoid", ("self",), (), {"floating": True}),
    "hardsigmoid_backward": ("hardsigmoid_backward", GRAD_SELF, (), {"floating": True}),
    "hardswish": ("hardswish", ("self",), (), {"floating": True}),
    "hardswish_backward": ("hardswish_backward", GRAD_SELF, (), {"floating": True}),
    "mish": ("mish", ("self",), (), {"floating": True}),
    "mish_backward": ("mish_backward", GRAD_SELF, (), {"floating": True}),
    "hardshrink": ("hardshrink", ("self",), ("lambd",), {"floating": True}),
    "hardshrink_backward": ("shrink_backward", ("grad_out", "self"), ("lambd",), {"floating": True}),
    "softshrink": ("softshrink", ("self",), ("lambd",), {"floating": True}),
    "softshrink_backward": ("shrink_backward", GRAD_SELF, ("lambd",), {"floating": True}),
    "threshold": ("threshold", ("self",), ("threshold", "value"), {"boolean": False}),
    "nan_to_num": ("nan_to_num", ("self",), ("nan", "posinf", "neginf"), {}),
    "logit": ("logit", ("self",), ("eps",), {"compute": "result"}),
    "logit_backward": ("logit_backward", GRAD_SELF, ("eps",), {"floating": True}),
    "addcmul": ("addcmul", ("self", "tensor1", "tensor2"), ("value",), {"boolean": False}),
    "addcdiv": ("addcdiv", ("self", "tensor1", "tensor2"), ("value",), {"floating": True}),
}
# float functions with a complex kernel (kernels.FUNCTIONS, over (real, imag) pairs)
COMPLEX_FUNCTIONS = {
    "exp": "complex_exp",
    "log": "complex_log",
    "log1p": "complex_log1p",
    "sqrt": "complex_sqrt",
    "reciprocal": "complex_reciprocal",
}
EAGER_OPS: dict[str, Row] = {
    "add.Tensor": Row("elementwise", "add", (*BINARY, "alpha"), BINARY, complex_fn="real", real_operands=("alpha",)),
    "sub.Tensor": Row("elementwise", "sub", (*BINARY, "alpha"), BINARY, complex_fn="real", real_operands=("alpha",)),
    # rsub: other - alpha * self, sub's element function with the operands swapped (CPU: add(other, self, -alpha))
    **{
        f"rsub.{kind}": Row(
            "elementwise", "sub", ("other", "self", "alpha"), BINARY, complex_fn="real", real_operands=("alpha",)
        )
        for kind in ("Tensor", "Scalar")
    },
    "mul.Tensor": Row("elementwise", "mul", BINARY, complex_fn="complex_mul"),
    "neg.default": Row("elementwise", "neg", complex_fn="real"),
    # the rounding mode picks the element function (ops.divide): div, div_trunc or div_floor
    "div.Tensor": Row("divide", "div", BINARY, compute="result", complex_fn="complex_div"),
    "div.Tensor_mode": Row("divide", "div", BINARY, compute="result"),
    "floor_divide.default": Row("divide", "div", BINARY, compute="result"),
    **{f"{op}.{kind}": Row("modulo", op, BINARY) for op in ("remainder", "fmod") for kind in ("Tensor", "Scalar")},
    "remainder.Scalar_Tensor": Row("modulo", "remainder", BINARY),  # a number's remainder by a tensor (__rmod__)
    "where.self": Row(
        "elementwise", "where", ("condition", *BINARY), BINARY, complex_fn="real", real_operands=("condition",)
    ),
    "isnan.default": Row("elementwise", "isnan"),
    **{f"{name}.default": Row("elementwise", name) for name in INFINITIES},
    **{f"{op}.default": Row("elementwise", op, BINARY) for op in LOGICAL},
    "logical_not.default": Row("elementwise", "logical_not"),
    # ops.bitwise_not: a bool tensor takes logical_not (its kernel operand is int8)
    "bitwise_not.default": Row("bitwise_not", "bitwise_not", integral=True),
    # masked_fill: where(mask, value, self), value cast to self's type
    "masked_fill.Scalar": Row("masked_fill", "where", ("mask", "value", "self"), ("self",)),
    "masked_fill.Tensor": Row("masked_fill", "where", ("mask", "value", "self"), ("self",)),
    "abs.default": Row("elementwise", "abs"),
    "sign.default": Row("elementwise", "sign"),
    "sgn.default": Row("elementwise", "sign", complex_fn="complex_sgn"),  # a complex tensor's: z / |z|
    "relu.default": Row("elementwise", "relu"),
    # `approximate` picks the element function (ops.gelu): gelu or gelu_tanh, and their backward
    "gelu.default": Row("gelu", "gelu", compute="result"),
    "gelu_backward.default": Row("gelu", "gelu_backward", ("grad_output", "self"), compute="result"),
    "tanh_backward.default": Row("elementwise", "tanh_backward", ("grad_output", "output")),
    "sigmoid_backward.default": Row("elementwise", "sigmoid_backward", ("grad_output", "output")),
    "threshold_backward.default": Row(
        "elementwise", "threshold_backward", ("grad_output", "self", "threshold"), ("grad_output", "self")
    ),
    # ops.log_sigmoid_forward: CUDA's (output, an empty buffer); the backward reads the input, not the buffer
    "log_sigmoid_forward.default": Row("log_sigmoid_forward", "log_sigmoid"),
    "log_sigmoid_backward.default": Row(
        "elementwise", "log_sigmoid_backward", ("grad_output", "self"), compute="result"
    ),
    **{f"{name}.default": Row("elementwise", name) for name in ROUNDING},
    # lerp: a Scalar weight is not rounded to the tensors' type (ATen takes it in the op math type)
    "lerp.Scalar": Row("elementwise", "lerp", ("self", "end", "weight"), ("self", "end")),
    "lerp.Tensor": Row("elementwise", "lerp", ("self", "end", "weight"), ("self", "end")),
    "silu.default": Row("elementwise", "silu", compute="result", floating=True),
    "silu_backward.default": Row(
        "elementwise", "silu_backward", ("grad_output", "self"), compute="result", floating=True
    ),
    **{
        f"{name}.default": Row("elementwise", name, compute="result", complex_fn=COMPLEX_FUNCTIONS.get(name))
        for name in FLOAT_FUNCTIONS
    },
    **{f"{cmp}.Tensor": Row("elementwise", cmp, BINARY, complex_fn=PART_COMPARISONS.get(cmp)) for cmp in COMPARISONS},
    **{f"{cmp}.Scalar": Row("elementwise", cmp, BINARY, complex_fn=PART_COMPARISONS.get(cmp)) for cmp in COMPARISONS},
    **{
        f"{op}.{kind}": Row("elementwise", op, BINARY, integral=True)
        for op in BITWISE
        for kind in ("Tensor", "Scalar", "Scalar_Tensor")  # Scalar_Tensor: a number's self (3 & t)
    },
    # ops.isclose: one kernel (torch's is a CompositeImplicitAutograd decomposition, on CUDA too)
    "isclose.default": Row("isclose", operands=BINARY),
    # maximum / minimum and the clamps: NaN-propagating element functions (kernels.maximum, minimum, clamp);
    # ops.clamp takes the limits given (None: absent) and sends a number the type cannot hold to the host
    "maximum.default": Row("elementwise", "maximum", BINARY),
    "minimum.default": Row("elementwise", "minimum", BINARY),
    "clamp_min.default": Row("clamp", "maximum", ("self", "min")),
    "clamp_min.Tensor": Row("clamp", "maximum", ("self", "min")),
    "clamp_max.default": Row("clamp", "minimum", ("self", "max")),
    "clamp_max.Tensor": Row("clamp", "minimum", ("self", "max")),
    "clamp.default": Row("clamp", "clamp", ("self", "min", "max")),
    "clamp.Tensor": Row("clamp", "clamp", ("self", "min", "max")),
    "fill_.Scalar": Row("fill"),
    "fill_.Tensor": Row("fill"),
    "zero_.default": Row("fill"),
    "arange.start_out": Row("arange"),
    "random_.default": Row("random", "random"),
    "random_.from": Row("random", "random"),
    "random_.to": Row("random", "random"),
    "uniform_.default": Row("random", "uniform"),
    "normal_.default": Row("random", "normal"),
    "bernoulli_.float": Row("random", "bernoulli"),
    "exponential_.default": Row("random", "exponential"),
    # sampling.py: multinomial (ATen's Gumbel-max / inverse-CDF algorithm) and randperm (a sort of random keys)
    "multinomial.default": Row("multinomial"),
    "randperm.default": Row("randperm"),
    "randperm.generator": Row("randperm"),
    "bernoulli_.Tensor": Row("bernoulli_tensor"),
    "bernoulli.default": Row("bernoulli_tensor"),
    "native_dropout.default": Row("dropout"),
    "cat.default": Row("cat"),
    "gather.default": Row("gather", "gather"),
    "index_select.default": Row("gather", "index_select"),
    "scatter.src": Row("scatter", "scatter"),
    "scatter.value": Row("scatter", "scatter"),
    **{f"scatter.{kind}": Row("scatter_reduce_legacy") for kind in ("reduce", "value_reduce")},  # rewritten.py
    "scatter_add.default": Row("scatter", "scatter_add"),
    "scatter_reduce.two": Row("scatter", "scatter_reduce"),
    "index.Tensor": Row("index", "index"),
    "index_put_.default": Row("index", "index_put"),
    "_index_put_impl_.default": Row("index", "index_put"),
    # ---- special functions (special.py, special_family.py) ----
    **{f"special_{name}.default": Row("special", name, ("x", "n"), compute="result") for name in POLYNOMIALS},
    "digamma.default": Row("special", "digamma", compute="result"),
    "polygamma.default": Row("special", "polygamma", ("self", "n"), ("self",), compute="result"),
    "special_zeta.default": Row("special", "zeta", BINARY, compute="result"),
    "i0.default": Row("special", "i0", compute="result"),
    "special_i0e.default": Row("special", "i0e", compute="result"),
    "special_i1.default": Row("special", "i1", compute="result"),
    "special_i1e.default": Row("special", "i1e", compute="result"),
    "special_modified_bessel_i0.default": Row("special", "i0", compute="result"),
    "special_modified_bessel_i1.default": Row("special", "modified_bessel_i1", compute="result"),
    "special_modified_bessel_k0.default": Row("special", "modified_bessel_k0", compute="result"),
    "special_modified_bessel_k1.default": Row("special", "modified_bessel_k1", compute="result"),
    "special_scaled_modified_bessel_k0.default": Row("special", "scaled_modified_bessel_k0", ("x",), compute="result"),
    "special_scaled_modified_bessel_k1.default": Row("special", "scaled_modified_bessel_k1", ("x",), compute="result"),
    "special_spherical_bessel_j0.default": Row("special", "spherical_bessel_j0", ("x",), compute="result"),
    "special_airy_ai.default": Row("special", "airy_ai", ("x",), compute="result"),
    "special_ndtri.default": Row("special", "ndtri", compute="result"),
    "special_log_ndtr.default": Row("special", "log_ndtr", compute="result"),
    "special_erfcx.default": Row("special", "erfcx", compute="result"),
    "igamma.default": Row("special", "igamma", BINARY, compute="result"),
    "igammac.default": Row("special", "igammac", BINARY, compute="result"),
    **{f"special_bessel_{kind}.default": Row("special", f"bessel_{kind}", compute="result") for kind in BESSEL},
    "lgamma.default": Row("special", "lgamma", compute="result"),
    "erfinv.default": Row("special", "erfinv", compute="result"),
    "special_entr.default": Row("special", "entr", compute="result"),
    "sinc.default": Row("special", "sinc", compute="result"),
    "xlogy.Tensor": Row("special", "xlogy", BINARY, compute="result"),
    "special_xlog1py.default": Row("special", "xlog1py", BINARY, compute="result"),
    # composite.py: a decomposition over plate tensors (a fused kernel on CUDA), a host result in CUDA's layout
    "_fused_rms_norm.default": Row("composite"),
    "_fused_rms_norm_backward.default": Row("composite"),
    "_embedding_bag.default": Row("composite"),
    "embedding_renorm_.default": Row("embedding_renorm"),  # embedding_renorm.py: F.embedding's max_norm
    "_embedding_bag_forward_only.default": Row("composite"),
    "_embedding_bag_backward.default": Row("embedding_bag_backward"),  # embedding_bag_backward.py
    "index_add.default": Row("composite"),  # index_put with accumulate=True
    "im2col.default": Row("composite"),  # F.unfold: a gather by index tensors
    "col2im.default": Row("composite"),  # F.fold: an index_put with accumulate=True
    "channel_shuffle.default": Row("composite"),  # a view and a copy
    "upsample_bicubic2d.default": Row("composite"),  # gathers of the 4x4 neighbours, weighted
    "tril_indices.default": Row("composite"),  # the coordinates from aranges, as a formula
    "triu_indices.default": Row("composite"),
    "multi_margin_loss.default": Row("multi_margin_loss"),  # the forward; its backward: composite.multi_margin_backward
    "multi_margin_loss_backward.default": Row("multi_margin_backward"),
    "index_add_.default": Row("composite"),
    # kernels.py's binary math and bits, ATen's CPU formulas (atan2, copysign: integers give the default float type)
    "atan2.default": Row("elementwise", "atan2", BINARY, compute="result"),
    "hypot.default": Row("elementwise", "hypot", BINARY, floating=True),
    "logaddexp.default": Row("elementwise", "logaddexp", BINARY, floating=True),
    "logaddexp2.default": Row("elementwise", "logaddexp2", BINARY, floating=True),
    "copysign.Tensor": Row("elementwise", "copysign", BINARY, compute="result"),
    "copysign.Scalar": Row("elementwise", "copysign", BINARY, compute="result"),
    "fmax.default": Row("elementwise", "fmax", BINARY),
    "fmin.default": Row("elementwise", "fmin", BINARY),
    "heaviside.default": Row("elementwise", "heaviside", ("self", "values")),
    "frac.default": Row("elementwise", "frac", floating=True),
    "signbit.default": Row("elementwise", "signbit"),
    "angle.default": Row("elementwise", "angle", compute="result"),  # a complex tensor's: complex_views.py
    "gcd.default": Row("elementwise", "gcd", BINARY, integral=True, boolean=False),
    "lcm.default": Row("elementwise", "lcm", BINARY, integral=True, boolean=False),
    "round.default": Row("elementwise", "round_even", boolean=False),
    **{
        f"{name}.{kind}": Row("elementwise", fn, BINARY, integral=True, boolean=False)
        for name, fn in SHIFTS.items()
        for kind in (
            ("Tensor", "Tensor_Scalar", "Scalar_Tensor") if name.startswith("bitwise") else ("Tensor", "Scalar")
        )
    },
    **{
        f"{name}.default": Row("parametric", fn, operands, params=params, **options)
        for name, (fn, operands, params, options) in PARAMETRIC.items()
    },
    # composite.decomposed: torch's decomposition over plate kernels, an operand the CPU kernel refuses on the host
    **{
        name: Row("decomposed", boolean=False)
        for name in (
            "trace.default",
            "linalg_cross.default",
            "reflection_pad1d.default",
            "reflection_pad2d.default",
            "replication_pad1d.default",
            "replication_pad2d.default",
            "reflection_pad1d_backward.default",
            "reflection_pad2d_backward.default",
            "reflection_pad3d.default",
            "replication_pad3d.default",
            "reflection_pad3d_backward.default",
        )
    },  # fmt: skip
    "roll.default": Row("decomposed"),
    "native_dropout_backward.default": Row("decomposed", operands=("grad_output", "mask")),  # grad * (mask * scale)
    "vdot.default": Row("decomposed", operands=BINARY, boolean=False),  # dot, or conj(self) * other summed
    **{f"isin.{kind}": Row("decomposed", operands=("elements", "test_elements"), boolean=False) for kind in ISIN},
    **{
        f"bucketize.{k}": Row("decomposed", operands=("self", "boundaries"), boolean=False)
        for k in ("Tensor", "Scalar")
    },
    **{
        name: Row("decomposed", operands=operands, floating=True)
        for name, operands in (
            ("renorm.default", ("self",)),
            ("glu.default", ("self",)),
            ("glu_backward.default", ("grad_output", "self")),
            ("_prelu_kernel.default", ("self", "weight")),
            ("_prelu_kernel_backward.default", ("grad_output", "self", "weight")),
            ("upsample_nearest2d.default", ("input",)),
            ("upsample_bilinear2d.default", ("input",)),
            *((f"{loss}.default", ("self", "target")) for loss in LOSSES),
            *((f"{loss}_backward.default", ("grad_output", "self", "target")) for loss in LOSSES),
            ("binary_cross_entropy_backward.default", ("grad_output", "self", "target")),
            ("embedding_dense_backward.default", ("grad_output",)),
            ("grid_sampler_2d.default", ("input", "grid")),
            *((f"{name}.default", ("self",)) for name in UPSAMPLE_FORWARDS),
            ("round.decimals", ("self",)),
            *((f"norm.{kind}", ("self",)) for kind in ("Scalar", "ScalarOpt_dtype")),
        )
    },  # fmt: skip
    "binary_cross_entropy.default": Row("decomposed", "probabilities", ("self", "target"), floating=True),
    # an index outside the output: the host raises the CPU's "invalid max index" (composite.decomposed)
    **{f"max_unpool{d}d.default": Row("decomposed", "unpool", ("self",), floating=True) for d in (2, 3)},
    # multilabel_margin.py: the CPU's loss (torch's decomposition counts targets after the first -1), its vjp backward
    "multilabel_margin_loss_forward.default": Row("multilabel_margin"),
    "multilabel_margin_loss_backward.default": Row("vjp", "multilabel_margin_loss_forward.default"),
    # gradients.py: the vjp of the forward's decomposition (grid_sampler_2d's: the decomposed row above)
    "grid_sampler_2d_backward.default": Row("vjp", "grid_sampler_2d.default"),
    # grid_sampler_3d.py: the 2-d decomposition carried to three dims; its backward ATen's CPU kernel, a launch each
    "grid_sampler_3d.default": Row("grid_sampler_3d"),
    "grid_sampler_3d_backward.default": Row("grid_sampler_3d_backward"),
    **{f"{name}_backward.default": Row("vjp", f"{name}.default") for name in UPSAMPLE_FORWARDS},
    # ctc.py: CTC loss's alpha recursion in one launch; its backward ATen's beta recursion and formula in one
    **{f"_ctc_loss.{kind}": Row("ctc_loss") for kind in ("default", "Tensor")},
    **{f"_ctc_loss_backward.{kind}": Row("ctc_loss_backward") for kind in ("default", "Tensor")},
    "upsample_nearest2d_backward.default": Row("upsample_backward", "nearest"),
    "upsample_bilinear2d_backward.default": Row("upsample_backward", "bilinear"),
    "upsample_bicubic2d_backward.default": Row("upsample_backward", "bicubic"),
    "searchsorted.Tensor": Row("searchsorted"),
    "searchsorted.Scalar": Row("searchsorted"),
    "rrelu_with_noise.default": Row("rrelu"),
    "rrelu_with_noise_backward.default": Row("composite"),
    "nextafter.default": Row("nextafter"),
    "index_reduce.default": Row("index_reduce"),
    "upsample_nearest2d.vec": Row("floating_composite", operands=("input",)),
    "upsample_bilinear2d.vec": Row("floating_composite", operands=("input",)),
    "count_nonzero.default": Row("decomposed"),
    "count_nonzero.dim_IntList": Row("decomposed"),
    "aminmax.default": Row("decomposed"),
    **{f"{name}.{kind}": Row("decomposed") for name in ("any", "all") for kind in ("dim", "dims")},
    "linalg_vector_norm.default": Row("vector_norm"),
    "var.correction": Row("variance", "var"),
    "std.correction": Row("variance", "std"),
    "var_mean.correction": Row("variance", "var_mean"),
    "std_mean.correction": Row("variance", "std_mean"),
    "tril.default": Row("triangle", "tril"),
    "triu.default": Row("triangle", "triu"),
    "flip.default": Row("flip"),
    "eye.default": Row("eye"),
    "eye.m": Row("eye"),
    # transformer_fastpath.py: the fused ops of nn.MultiheadAttention's and nn.TransformerEncoderLayer's fast paths
    "_native_multi_head_attention.default": Row("native_mha"),
    "_transformer_encoder_layer_fwd.default": Row("transformer_encoder_layer"),
    # fused_optimizers.py: the optimizers' fused=True steps and torch.amp.GradScaler's ops
    **{
        f"_fused_{name}_.{kind}": Row("fused_adam", name)
        for name in ("adam", "adamw")
        for kind in ("default", "tensor_lr")
    },
    **{f"_fused_sgd_.{kind}": Row("fused_sgd") for kind in ("default", "tensor_lr")},
    **{f"_fused_adagrad_.{kind}": Row("fused_adagrad") for kind in ("default", "tensor_lr")},
    "_amp_foreach_non_finite_check_and_unscale_.default": Row("amp_unscale"),
    "_amp_update_scale_.default": Row("amp_update_scale"),
    # spaced_ranges.py: every linspace / logspace overload reaches its out= form
    "linspace.out": Row("spaced", "linspace"),
    "logspace.out": Row("spaced", "logspace"),
    **{f"nll_loss{d}_{kind}.default": Row("nll_loss") for d in ("", "2d") for kind in ("forward", "backward")},
    "equal.default": Row("equal"),
    "masked_select.default": Row("masked_select"),
    # index_forms.py; index_copy, index_fill and take as torch's decompositions (index_put_, where, index)
    "masked_scatter_.default": Row("masked_scatter"),
    "put_.default": Row("put"),
    "unique_consecutive.default": Row("unique_consecutive"),
    "unique_dim.default": Row("unique_dim"),
    "_pdist_forward.default": Row("pdist"),
    "_pdist_backward.default": Row("pdist_backward"),
    "index_copy.default": Row("decomposed", operands=("self", "index", "source")),
    **{f"index_fill.int_{kind}": Row("decomposed", operands=("self", "index")) for kind in ("Scalar", "Tensor")},
    "take.default": Row("decomposed", operands=("self", "index")),
    "nonzero_static.default": Row("nonzero_static"),
    "segment_reduce.default": Row("segment_reduce"),  # segment_reduce.py: a scatter_reduce into the segments
    "bincount.default": Row("bincount"),
    "histc.default": Row("histc"),
    "unfold.default": Row("unfold"),
    "_cummax_helper.default": Row("cumextreme", "max"),
    "_cummin_helper.default": Row("cumextreme", "min"),
    "unfold_backward.default": Row("composite"),
    # batch norm (nn.BatchNorm*d, F.batch_norm), training and eval, forward (running statistics updated in place) and
    # backward: torch's decompositions, statistics in float32 for fp16/bf16 inputs (var_mean: plate's variance)
    "native_batch_norm.default": Row("composite"),
    "native_batch_norm_backward.default": Row("composite"),
    "_native_batch_norm_legit.default": Row("composite"),
    "_native_batch_norm_legit.no_stats": Row("composite"),
    "_batch_norm_with_update.default": Row("composite"),
    "batch_norm_backward.default": Row("composite"),
    # group norm (nn.GroupNorm), forward and backward: torch's decompositions, in float32 for fp16/bf16 (an integer
    # input goes to the host, the CPU's error)
    "native_group_norm.default": Row("decomposed", operands=("input",), floating=True),
    "native_group_norm_backward.default": Row("decomposed", operands=("grad_out", "input"), floating=True),
    # convolution.py: conv1d/2d/3d (not transposed) as im2col and matmuls, forward and backward
    "convolution_overrideable.default": Row("convolution"),
    "convolution_backward_overrideable.default": Row("convolution", "backward"),
    "_cdist_forward.default": Row("cdist"),
    "_cdist_backward.default": Row("cdist"),
    **{f"replication_pad{d}d_backward.default": Row("replication_pad_backward") for d in (1, 2, 3)},
    # hostops: pooling.py, sorting.py, advanced_index.py, scans.py, complex_ops.py, weight_norm.py, and
    # pow's and complex exp/log/log1p's element functions in kernels.py (scatter's prod/mean:
    # scatter_reduce.py, and index's several indices and masks: advanced_index.py, under the rows above)
    **{f"avg_pool{d}d.default": Row("pool", "avg") for d in (2, 3)},
    **{f"avg_pool{d}d_backward.default": Row("pool_backward", "avg") for d in (2, 3)},
    **{f"max_pool{d}d_with_indices.default": Row("pool", "max") for d in (2, 3)},
    **{f"max_pool{d}d_with_indices_backward.default": Row("pool_backward", "max") for d in (2, 3)},
    **{f"_adaptive_avg_pool{d}d.default": Row("pool", "adaptive_avg") for d in (2, 3)},
    **{f"_adaptive_avg_pool{d}d_backward.default": Row("pool_backward", "adaptive_avg") for d in (2, 3)},
    **{f"adaptive_max_pool{d}d.default": Row("pool", "adaptive_max") for d in (2, 3)},
    **{f"adaptive_max_pool{d}d_backward.default": Row("pool_backward", "adaptive_max") for d in (2, 3)},
    "sort.default": Row("sort", "sort"),
    "sort.stable": Row("sort", "sort"),
    "topk.default": Row("sort", "topk"),
    "kthvalue.default": Row("order_statistic", "kthvalue"),
    "mode.default": Row("order_statistic", "mode"),
    "_unique2.default": Row("unique"),
    "_unique.default": Row("unique"),
    **{
        f"{name}.{overload}": Row("order_statistic", name)
        for name in ("median", "nanmedian")
        for overload in ("dim", "default")
    },
    "nonzero.default": Row("nonzero"),
    "any.default": Row("any_all", "any"),
    "all.default": Row("any_all", "all"),
    "allclose.default": Row("allclose"),  # scans.allclose: the fused isclose, then all
    "repeat_interleave.Tensor": Row("repeat_interleave"),
    "cumsum.default": Row("cumsum", "sum"),
    "cumprod.default": Row("cumsum", "prod"),
    "_logcumsumexp.default": Row("cumsum", "logsumexp"),
    "pow.Tensor_Tensor": Row("elementwise", "power", ("self", "exponent"), complex_fn="complex_pow"),
    "pow.Tensor_Scalar": Row("elementwise", "power", ("self", "exponent"), complex_fn="complex_pow"),
    # a scalar base: RoPE's base ** (2i / d)
    "pow.Scalar": Row("elementwise", "power", ("self", "exponent"), complex_fn="complex_pow"),
    # complex_views.py: the real view times (1, -1). conj_physical is a composite (registry.composite_autograd): its
    # row gives the out= / in-place forms; the composite calls _conj_physical, whose autograd is ConjPhysicalBackward0
    "conj_physical.default": Row("conj_physical"),
    "_conj_physical.default": Row("conj_physical"),
    "complex.default": Row("complex_build", "complex"),
    "polar.default": Row("complex_build", "polar"),
    "_weight_norm_interface.default": Row("weight_norm"),
    "_weight_norm_interface_backward.default": Row("weight_norm_backward"),
    # reductions.py, layer_norm.py: fp16/bf16 accumulate in float32 and round once, as CUDA's kernels
    "sum.default": Row("sum"),
    "sum.dim_IntList": Row("sum"),
    "nansum.default": Row("sum", "nansum"),
    "prod.default": Row("sum", "prod"),
    "prod.dim_int": Row("sum", "prod"),
    "mean.dim": Row("mean"),
    "max.default": Row("extreme", "max"),
    "min.default": Row("extreme", "min"),
    "amax.default": Row("extreme", "max"),
    "amin.default": Row("extreme", "min"),
    "max.dim": Row("arg_extreme", "max"),
    "min.dim": Row("arg_extreme", "min"),
    "argmax.default": Row("arg_extreme", "max"),
    "argmin.default": Row("arg_extreme", "min"),
    "_softmax.default": Row("softmax"),
    "_log_softmax.default": Row("softmax", "log"),
    "_softmax_backward_data.default": Row("softmax_backward"),
    "_log_softmax_backward_data.default": Row("softmax_backward", "log"),
    "native_layer_norm.default": Row("layer_norm"),
    "native_layer_norm_backward.default": Row("layer_norm_backward"),
    # matmul.py: fp16/bf16/fp32 accumulate in float32 (fp64 in fp64, integers wrap), in a fixed order
    **{f"{name}.default": Row("matmul", name) for name in ("mm", "bmm", "addmm", "baddbmm", "addmv", "dot")},
    "_int_mm.default": Row("matmul", "int_mm"),
    # rewritten.py: addbmm as one addmm over the batch and K together; norm over dims as linalg_vector_norm
    "addbmm.default": Row("addbmm"),
    "norm.ScalarOpt_dim": Row("norm"),
    "norm.ScalarOpt_dim_dtype": Row("norm"),
    # linalg.py: LU with partial pivoting, Cholesky, triangular solves (float32/float64; complex to the host)
    "linalg_lu_factor_ex.default": Row("lu_factor"),
    "linalg_lu_solve.default": Row("lu_solve"),
    "_linalg_solve_ex.default": Row("linalg_solve"),
    "linalg_inv_ex.default": Row("linalg_inv"),
    "_linalg_det.default": Row("linalg_det"),
    "_linalg_slogdet.default": Row("linalg_slogdet"),
    "linalg_cholesky_ex.default": Row("cholesky"),
    "linalg_solve_triangular.default": Row("solve_triangular"),
    "lu_unpack.default": Row("lu_unpack"),
    "linalg_lu.default": Row("linalg_lu"),
    "_cholesky_solve_helper.default": Row("cholesky_solve"),
    "cholesky_inverse.default": Row("cholesky_inverse"),
    "triangular_solve.default": Row("triangular_solve"),
    "cholesky.default": Row("cholesky_old"),
    "geqrf.default": Row("geqrf"),
    "linalg_householder_product.default": Row("householder_product"),
    "linalg_qr.default": Row("qr"),
    "_linalg_eigh.default": Row("eigh"),
    # linalg_svd.py: one-sided Jacobi, U from the QR of the orthogonal columns (float32/float64; complex to the host)
    "_linalg_svd.default": Row("svd"),
    "linalg_lstsq.default": Row("lstsq"),
    # antialias.py: Pillow's separable taps as two dense weight matrices, plate matmuls
    **{f"_upsample_{kind}2d_aa.default": Row("upsample_aa", kind) for kind in AA_KINDS},
    **{f"_upsample_{kind}2d_aa_backward.default": Row("upsample_aa_backward", kind) for kind in AA_KINDS},
    # fractional_pool.py: ATen's window starts per plane, gathered windows, its NaN rule; the backward a scatter_add
    "fractional_max_pool2d.default": Row("fractional_max_pool2d"),
    "fractional_max_pool2d_backward.default": Row("fractional_max_pool2d_backward"),
    # matrix_exp.py: ATen's Taylor approximants over plate matmuls
    "linalg_matrix_exp.default": Row("matrix_exp"),
    # float_parts.py
    "frexp.Tensor": Row("frexp"),
}

# overload -> its in-place and out= overloads, which take the same row
VARIANTS: dict[str, tuple[str, ...]] = {
    "add.Tensor": ("add_.Tensor", "add.out"),
    "sub.Tensor": ("sub_.Tensor", "sub.out"),
    "rsub.Tensor": ("rsub.Tensor_out",),
    "rsub.Scalar": ("rsub.Scalar_out",),
    "remainder.Scalar_Tensor": ("remainder.Scalar_Tensor_out",),
    "mul.Tensor": ("mul_.Tensor", "mul.out"),
    "pow.Tensor_Tensor": ("pow_.Tensor", "pow.Tensor_Tensor_out"),
    "pow.Tensor_Scalar": ("pow_.Scalar", "pow.Tensor_Scalar_out"),  # pow_(2): linalg.vector_norm's backward
    "pow.Scalar": ("pow.Scalar_out",),
    "neg.default": ("neg_.default", "neg.out"),
    "div.Tensor": ("div_.Tensor", "div.out"),
    "div.Tensor_mode": ("div_.Tensor_mode", "div.out_mode"),
    "floor_divide.default": ("floor_divide_.Tensor", "floor_divide.out"),
    **{
        f"{op}.{kind}": (f"{op}_.{kind}", f"{op}.{kind}_out")
        for op in ("remainder", "fmod")
        for kind in ("Tensor", "Scalar")
    },
    "where.self": ("where.self_out",),
    "tril.default": ("tril_.default",),
    "rrelu_with_noise.default": ("rrelu_with_noise_.default",),
    "triu.default": ("triu_.default",),
    "cumsum.default": ("cumsum_.default", "cumsum.out"),
    "cumprod.default": ("cumprod_.default", "cumprod.out"),
    "index_copy.default": ("index_copy_.default", "index_copy.out"),
    **{f"index_fill.int_{k}": (f"index_fill_.int_{k}", f"index_fill.int_{k}_out") for k in ("Scalar", "Tensor")},
    "take.default": ("take.out",),
    "index_reduce.default": ("index_reduce_.default", "index_reduce.out"),
    "addbmm.default": ("addbmm_.default", "addbmm.out"),
    "nextafter.default": ("nextafter_.default", "nextafter.out"),
    "_logcumsumexp.default": ("_logcumsumexp.out",),
    "maximum.default": ("maximum.out",),
    "minimum.default": ("minimum.out",),
    "clamp_min.default": ("clamp_min_.default", "clamp_min.out"),
    "clamp_min.Tensor": ("clamp_min_.Tensor", "clamp_min.Tensor_out"),
    "clamp_max.default": ("clamp_max_.default", "clamp_max.out"),
    "clamp_max.Tensor": ("clamp_max_.Tensor", "clamp_max.Tensor_out"),
    "clamp.default": ("clamp_.default", "clamp.out"),
    "clamp.Tensor": ("clamp_.Tensor", "clamp.Tensor_out"),
    "cat.default": ("cat.out",),
    "gather.default": ("gather.out",),
    "index_select.default": ("index_select.out",),
    "scatter.src": ("scatter_.src",),
    "scatter.value": ("scatter_.value",),
    **{f"scatter.{kind}": (f"scatter_.{kind}", f"scatter.{kind}_out") for kind in ("reduce", "value_reduce")},
    "scatter_add.default": ("scatter_add_.default",),
    "scatter_reduce.two": ("scatter_reduce_.two",),
    "isnan.default": ("isnan.out",),
    **{f"{name}.default": (f"{name}.out",) for name in INFINITIES},
    **{f"{op}.default": (f"{op}_.default", f"{op}.out") for op in (*LOGICAL, "logical_not", "bitwise_not")},
    "masked_fill.Scalar": ("masked_fill_.Scalar", "masked_fill.Scalar_out"),
    "masked_fill.Tensor": ("masked_fill_.Tensor", "masked_fill.Tensor_out"),
    "abs.default": ("abs_.default", "abs.out"),
    "sign.default": ("sign_.default", "sign.out"),
    "sgn.default": ("sgn_.default", "sgn.out"),
    "relu.default": ("relu_.default",),
    "gelu.default": ("gelu_.default", "gelu.out"),
    "gelu_backward.default": ("gelu_backward.grad_input",),
    "silu.default": ("silu_.default", "silu.out"),
    "tanh_backward.default": ("tanh_backward.grad_input",),
    "sigmoid_backward.default": ("sigmoid_backward.grad_input",),
    "threshold_backward.default": ("threshold_backward.grad_input",),
    "log_sigmoid_backward.default": ("log_sigmoid_backward.grad_input",),
    **{f"{name}.default": (f"{name}_.default", f"{name}.out") for name in ROUNDING},
    "lerp.Scalar": ("lerp_.Scalar", "lerp.Scalar_out"),
    "lerp.Tensor": ("lerp_.Tensor", "lerp.Tensor_out"),
    "silu_backward.default": ("silu_backward.grad_input",),
    **{f"{name}.default": (f"{name}_.default", f"{name}.out") for name in FLOAT_FUNCTIONS},
    **{f"{cmp}.Tensor": (f"{cmp}_.Tensor", f"{cmp}.Tensor_out") for cmp in COMPARISONS},
    **{f"{cmp}.Scalar": (f"{cmp}_.Scalar", f"{cmp}.Scalar_out") for cmp in COMPARISONS},
    **{f"{op}.Tensor": (f"{op}_.Tensor", f"{op}.Tensor_out") for op in BITWISE},
    **{f"{op}.Scalar": (f"{op}_.Scalar", f"{op}.Scalar_out") for op in BITWISE},
    **{f"{op}.Scalar_Tensor": (f"{op}.Scalar_Tensor_out",) for op in BITWISE},
    # ---- special functions (special.py, special_family.py) ----
    **{f"special_{name}.default": (f"special_{name}.out",) for name in POLYNOMIALS},
    "digamma.default": ("digamma_.default", "digamma.out"),
    "polygamma.default": ("polygamma.out",),
    "special_zeta.default": ("special_zeta.out",),
    "i0.default": ("i0_.default", "i0.out"),
    **{
        f"special_{name}.default": (f"special_{name}.out",)
        for name in (
            "i0e",
            "i1",
            "i1e",
            "modified_bessel_i0",
            "modified_bessel_i1",
            "modified_bessel_k0",
            "modified_bessel_k1",
            "scaled_modified_bessel_k0",
            "scaled_modified_bessel_k1",
            "spherical_bessel_j0",
            "airy_ai",
            "ndtri",
            "log_ndtr",
            "entr",
            "erfcx",
            *(f"bessel_{kind}" for kind in BESSEL),
        )
    },  # fmt: skip
    "lgamma.default": ("lgamma_.default", "lgamma.out"),
    "igamma.default": ("igamma_.default", "igamma.out"),
    "igammac.default": ("igammac_.default", "igammac.out"),
    "erfinv.default": ("erfinv_.default", "erfinv.out"),
    "sinc.default": ("sinc_.default", "sinc.out"),
    "xlogy.Tensor": ("xlogy_.Tensor", "xlogy.OutTensor"),
    "sum.dim_IntList": ("sum.IntList_out",),
    "nansum.default": ("nansum.out",),
    "prod.default": ("prod.out",),
    "prod.dim_int": ("prod.int_out",),
    "mean.dim": ("mean.out",),
    "special_xlog1py.default": ("special_xlog1py.out",),
    "atan2.default": ("atan2_.default", "atan2.out"),
    **{f"{name}.default": (f"{name}_.default", f"{name}.out") for name in ("gcd", "lcm")},
    "angle.default": ("angle.out",),
    "upsample_nearest2d_backward.default": ("upsample_nearest2d_backward.grad_input",),
    "upsample_bilinear2d_backward.default": ("upsample_bilinear2d_backward.grad_input",),
    **{f"{name}.default": (f"{name}_.default", f"{name}.out") for name in ("hypot", "heaviside", "frac", "round")},
    **{f"{name}.default": (f"{name}.out",) for name in ("logaddexp", "logaddexp2", "fmax", "fmin", "signbit")},
    "copysign.Tensor": ("copysign_.Tensor", "copysign.out"),
    "copysign.Scalar": ("copysign_.Scalar", "copysign.Scalar_out"),
    **{
        f"bitwise_{d}_shift.{k}": (f"bitwise_{d}_shift_.{k}", f"bitwise_{d}_shift.{k}_out")
        for d in ("left", "right")
        for k in ("Tensor", "Tensor_Scalar")
    },
    **{f"bitwise_{d}_shift.Scalar_Tensor": (f"bitwise_{d}_shift.Scalar_Tensor_out",) for d in ("left", "right")},
    **{
        f"__{d}shift__.{k}": (f"__i{d}shift__.{k}", f"__{d}shift__.{k}_out") for d in "lr" for k in ("Tensor", "Scalar")
    },
    **{
        f"{name}.default": (f"{name}_.default", f"{name}.out")
        for name in (
            "elu",
            "leaky_relu",
            "hardtanh",
            "hardsigmoid",
            "hardswish",
            "mish",
            "threshold",
            "nan_to_num",
            "logit",
            "addcmul",
            "addcdiv",
        )
    },
    **{f"{name}.default": (f"{name}.out",) for name in ("softplus", "hardshrink", "softshrink", "hardswish_backward")},
    **{
        f"{name}_backward.default": (f"{name}_backward.grad_input",)
        for name in ("elu", "leaky_relu", "hardtanh", "softplus", "hardsigmoid", "hardshrink", "softshrink", "logit")
    },
    **{f"{name}.default": (f"{name}.out",) for name in ("mm", "bmm", "dot", "_int_mm")},
    **{f"{name}.default": (f"{name}_.default", f"{name}.out") for name in ("addmm", "baddbmm", "addmv")},
}


def overloads() -> dict[str, Row]:
    """Every overload the table covers (the rows and their variants), each with its row."""
    every = dict(EAGER_OPS)
    for name, variants in VARIANTS.items():
        every.update({variant: EAGER_OPS[name] for variant in variants})
    return every
