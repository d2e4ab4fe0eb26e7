"""libdevice on PLATE: ONE table, ``__nv_*`` symbol -> how ``tt.extern_elementwise`` lowers it.

An entry is either
- a vector mnemonic (``"v.sin"``) applied to the call's operands, or the name of one of
  rules_math's compositions (``"round"``, ``"isfinite"``, ...), or
- a tuple of steps ``(mnemonic, dst, srcs, *suffixes)`` run over tiles of the operands' shape:
  ``x, y, z, w`` are the operands, ``out`` the result; a temporary ``name:dtype`` has that type,
  ``m*`` is i1, any other the first operand's type; a number among srcs is a constant of the
  step's first non-i1 named source's type.

f32 names end in ``f`` and f64 names do not (``__nv_sinf`` / ``__nv_sin``); ``_rn _rz _ru _rd``
are the rounding modes rtne, rtz, rtp, rtn of the ISA. The symbols are those of Triton's
``triton.language.extra.cuda.libdevice`` (the generic ``triton.language.extra.libdevice`` maps to
it on PLATE, with ``fast_tanhf`` added by libdevice_api.py) plus a few other CUDA libdevice names
(fmaxf, max, lrint, ...), and AMD's names for the same functions (``triton.language.extra.hip.libdevice``:
``__ocml_<name>_f32`` / ``_f64`` and ``__triton_hip_*``), each lowered as its CUDA twin.
"""

from __future__ import annotations

from ..isa.table import ISA

MODES = {"rn": "rtne", "rz": "rtz", "ru": "rtp", "rd": "rtn"}
TO_INTEGRAL = {"rn": "v.rint", "rz": "v.ftrunc", "ru": "v.ceil", "rd": "v.floor"}


def _one(mnemonic, *suffixes):
    """One instruction on all the call's operands (as many as the row uses), with suffixes."""
    arity = sum(o.role == "use" for o in ISA[mnemonic].operands)
    return ((mnemonic, "out", ("x", "y", "z", "w")[:arity], *suffixes),)


def _both(name: str, lowering) -> dict:
    """The f32 (``name`` + f) and f64 (``name``) symbols of one function."""
    return {f"__nv_{name}f": lowering, f"__nv_{name}": lowering}


def _libm(name: str, arity: int = 1):
    """A special function of v.libm1 .. v.libm4."""
    return _one(f"v.libm{arity}", name)


def _table() -> dict:
    t: dict = {}
    # ---- functions with an instruction of the same name, f32 and f64
    for name in (
        "sqrt rsqrt exp exp2 expm1 log log2 log10 log1p sin cos tan asin acos atan sinh cosh tanh asinh acosh "
        "atanh erf erfc lgamma cbrt floor ceil rint pow atan2 hypot copysign nextafter fma"
    ).split():
        t.update(_both(name, f"v.{name}"))
    aliases = {"fabs": "v.abs", "trunc": "v.ftrunc", "nearbyint": "v.rint", "fmod": "v.remf"}
    aliases.update({"fmax": "v.maxnum", "fmin": "v.minnum", "round": "round", "llround": "llround", "llrint": "llrint"})
    aliases.update({"lround": "llround", "lrint": "llrint"})
    for name, m in aliases.items():
        t.update(_both(name, m))
    for name in "erfinv erfcinv erfcx normcdf normcdfinv tgamma j0 j1 y0 y1 sinpi cospi rcbrt exp10 logb".split():
        t.update(_both(name, _libm(name)))
    t.update(_both("cyl_bessel_i0", _libm("i0")))
    t.update(_both("cyl_bessel_i1", _libm("i1")))
    t.update(_both("ilogb", _libm("ilogb")))
    t.update(_both("rhypot", _libm("rhypot", 2)))
    t.update(_both("remainder", _libm("remainder", 2)))
    t.update(_both("ldexp", _libm("ldexp", 2)))
    t.update(_both("scalbn", _libm("ldexp", 2)))
    t.update(_both("jn", _libm("jn", 2)))
    t.update(_both("yn", _libm("yn", 2)))
    for n in ("norm3d", "rnorm3d"):
        t.update(_both(n, _libm(n, 3)))
    for n in ("norm4d", "rnorm4d"):
        t.update(_both(n, _libm(n, 4)))
    # fdim: x - y where x > y, +0 where x <= y, NaN when unordered
    t.update(
        _both(
            "fdim",
            (("v.sub", "d", ("x", "y")), ("v.cmpf", "m", ("x", "y"), "ole"), ("v.select", "out", ("m", 0.0, "d"))),
        )
    )
    # x ** n for an i32 n: n is exact in f64, so pow runs there
    t["__nv_powif"] = (
        ("v.fcvt", "a:f64", ("x",), "rtne"),
        ("v.sitofp", "n:f64", ("y",)),
        ("v.pow", "p:f64", ("a", "n")),
        ("v.fcvt", "out", ("p",), "rtne"),
    )
    t["__nv_powi"] = (("v.sitofp", "n", ("y",)), ("v.pow", "out", ("x", "n")))
    t["__nv_rcp64h"] = _libm("rcp64h")

    # ---- f32-only names and fast variants (PLATE computes them like the accurate ones)
    t.update({f"__nv_fast_{n}f": f"v.{n}" for n in ("exp", "log", "log2", "log10", "sin", "cos", "tan", "pow")})
    t["__nv_fast_exp10f"] = _libm("exp10")
    t["__nv_fast_tanhf"] = "v.tanh"  # the generic fast_tanhf (libdevice_api.py)
    t["__nv_fast_fdividef"] = t["__nv_fdividef"] = "v.div"
    t["__nv_saturatef"] = "saturate"
    t["__nv_frsqrt_rn"] = "v.rsqrt"
    t.update({"__nv_finitef": "isfinite", "__nv_isfinited": "isfinite"})
    t.update({"__nv_isinff": "v.isinf", "__nv_isinfd": "v.isinf", "__nv_isnanf": "v.isnan", "__nv_isnand": "v.isnan"})
    t.update({"__nv_signbitf": "v.signbit", "__nv_signbitd": "v.signbit"})

    # ---- IEEE ops in each rounding mode
    for sfx, mode in MODES.items():
        for op, f32, f64 in (("add", "fadd", "dadd"), ("sub", "fsub", "dsub"), ("mul", "fmul", "dmul")):
            low = f"v.{op}" if sfx == "rn" else _one(f"v.{op}r", mode)
            t[f"__nv_{f32}_{sfx}"] = t[f"__nv_{f64}_{sfx}"] = low
        t[f"__nv_fdiv_{sfx}"] = t[f"__nv_ddiv_{sfx}"] = "v.div" if sfx == "rn" else _one("v.divr", mode)
        t[f"__nv_frcp_{sfx}"] = t[f"__nv_drcp_{sfx}"] = "v.recip" if sfx == "rn" else _one("v.recipr", mode)
        t[f"__nv_fsqrt_{sfx}"] = t[f"__nv_dsqrt_{sfx}"] = "v.sqrt" if sfx == "rn" else _one("v.sqrtr", mode)
        t[f"__nv_fmaf_{sfx}"] = t[f"__nv_fma_{sfx}"] = "v.fma" if sfx == "rn" else _one("v.fmar", mode)
        # conversions: float -> int rounds to an integral value first (then exact, saturating, NaN -> 0)
        for src in ("float", "double"):
            for dst, conv in (("int", "v.fptosi"), ("uint", "v.fptoui"), ("ll", "v.fptosi"), ("ull", "v.fptoui")):
                t[f"__nv_{src}2{dst}_{sfx}"] = ((TO_INTEGRAL[sfx], "t", ("x",)), (conv, "out", ("t",)))
        t[f"__nv_double2float_{sfx}"] = _one("v.fcvt", mode)
        for src, conv in (("int", "v.sitofpr"), ("uint", "v.uitofpr"), ("ll", "v.sitofpr"), ("ull", "v.uitofpr")):
            t[f"__nv_{src}2float_{sfx}"] = _one(conv, mode)
            if src in ("ll", "ull") or sfx == "rn":  # int/uint -> double is exact: only _rn exists
                t[f"__nv_{src}2double_{sfx}"] = _one(conv, mode)

    # ---- bits
    t.update({"__nv_float_as_int": _one("v.bitcast"), "__nv_float_as_uint": _one("v.bitcast")})
    t.update({"__nv_int_as_float": _one("v.bitcast"), "__nv_uint_as_float": _one("v.bitcast")})
    t.update({"__nv_double_as_longlong": _one("v.bitcast"), "__nv_longlong_as_double": _one("v.bitcast")})
    t["__nv_hiloint2double"] = (
        ("v.sext", "h:i64", ("x",)),
        ("v.shl", "h:i64", ("h", 32)),
        ("v.zext", "l:i64", ("y",)),
        ("v.or", "h:i64", ("h", "l")),
        ("v.bitcast", "out", ("h",)),
    )
    t["__nv_double2loint"] = (("v.bitcast", "b:i64", ("x",)), ("v.trunc", "out", ("b",)))
    t["__nv_double2hiint"] = (
        ("v.bitcast", "b:i64", ("x",)),
        ("v.shrs", "b:i64", ("b", 32)),
        ("v.trunc", "out", ("b",)),
    )

    # ---- integers
    t.update({"__nv_popc": "v.popc", "__nv_clz": "v.clz", "__nv_brev": "v.brev", "__nv_brevll": "v.brev"})
    t["__nv_popcll"] = (("v.popc", "c", ("x",)), ("v.trunc", "out", ("c",)))
    t["__nv_clzll"] = (("v.clz", "c", ("x",)), ("v.trunc", "out", ("c",)))
    # ffs: 1 + index of the lowest set bit, 0 for 0: width - clz(x & -x)
    t["__nv_ffs"] = (
        ("v.sub", "n", (0, "x")),
        ("v.and", "n", ("x", "n")),
        ("v.clz", "n", ("n",)),
        ("v.sub", "out", (32, "n")),
    )
    t["__nv_ffsll"] = (
        ("v.sub", "n", (0, "x")),
        ("v.and", "n", ("x", "n")),
        ("v.clz", "n", ("n",)),
        ("v.sub", "n", (64, "n")),
        ("v.trunc", "out", ("n",)),
    )
    t.update({"__nv_abs": "v.abs", "__nv_llabs": "v.abs", "__nv_byte_perm": "v.prmt"})
    t.update({"__nv_max": "v.maxs", "__nv_min": "v.mins", "__nv_llmax": "v.maxs", "__nv_llmin": "v.mins"})
    t.update({"__nv_umax": "v.maxu", "__nv_umin": "v.minu", "__nv_ullmax": "v.maxu", "__nv_ullmin": "v.minu"})
    t.update(
        {"__nv_mulhi": "v.mulhis", "__nv_umulhi": "v.mulhiu", "__nv_mul64hi": "v.mulhis", "__nv_umul64hi": "v.mulhiu"}
    )
    # mul24: the low 32 bits of the product of the low 24 bits (sign-extended for the signed one)
    t["__nv_mul24"] = (
        ("v.shl", "a", ("x", 8)),
        ("v.shrs", "a", ("a", 8)),
        ("v.shl", "b", ("y", 8)),
        ("v.shrs", "b", ("b", 8)),
        ("v.mul", "out", ("a", "b")),
    )
    t["__nv_umul24"] = (("v.and", "a", ("x", 0xFFFFFF)), ("v.and", "b", ("y", 0xFFFFFF)), ("v.mul", "out", ("a", "b")))
    # halving adds in 64 bits: (x + y) >> 1, rounded: (x + y + 1) >> 1
    for name, ext, shift, extra in (
        ("hadd", "v.sext", "v.shrs", 0),
        ("rhadd", "v.sext", "v.shrs", 1),
        ("uhadd", "v.zext", "v.shru", 0),
        ("urhadd", "v.zext", "v.shru", 1),
    ):
        t[f"__nv_{name}"] = (
            (ext, "a:i64", ("x",)),
            (ext, "b:i64", ("y",)),
            ("v.add", "a:i64", ("a", "b")),
            *((("v.add", "a:i64", ("a", 1)),) if extra else ()),
            (shift, "a:i64", ("a", 1)),
            ("v.trunc", "out", ("a",)),
        )
    # sum of absolute difference: |x - y| + z (z unsigned)
    for name, ext in (("sad", "v.sext"), ("usad", "v.zext")):
        t[f"__nv_{name}"] = (
            (ext, "a:i64", ("x",)),
            (ext, "b:i64", ("y",)),
            ("v.sub", "a:i64", ("a", "b")),
            ("v.abs", "a:i64", ("a",)),
            ("v.zext", "c:i64", ("z",)),
            ("v.add", "a:i64", ("a", "c")),
            ("v.trunc", "out", ("a",)),
        )
    t.update(_hip_names(t))
    return t


# AMD's libdevice (triton.language.extra.hip.libdevice) names OCML's functions __ocml_<name>_f32 / _f64 and a
# few of Triton's own __triton_hip_*: each computes what the CUDA function of the same meaning does
OCML = (
    "floor rsqrt ceil trunc exp2 exp sqrt nearbyint copysign nextafter sin cos tan log2 cosh sinh tanh atan2 atan "
    "asin acos log log10 log1p acosh asinh atanh expm1 hypot j0 j1 y0 y1 erf erfinv erfc erfcx lgamma ldexp fmod "
    "fma pow round ilogb"
).split()
OCML_RENAMED = {  # OCML name -> the CUDA (f32, f64) symbols
    "isnan": ("__nv_isnanf", "__nv_isnand"),
    "isinf": ("__nv_isinff", "__nv_isinfd"),
    "signbit": ("__nv_signbitf", "__nv_signbitd"),
    "isfinite": ("__nv_finitef", "__nv_isfinited"),
    "pown": ("__nv_powif", "__nv_powi"),
    "i0": ("__nv_cyl_bessel_i0f", "__nv_cyl_bessel_i0"),
    "i1": ("__nv_cyl_bessel_i1f", "__nv_cyl_bessel_i1"),
}
TRITON_HIP = {  # the same symbol for every type it takes, as the CUDA row's lowering is
    "__triton_hip_iabs": "__nv_abs",
    "__triton_hip_fabs": "__nv_fabsf",
    "__triton_hip_rint": "__nv_rintf",
    "__triton_hip_llrint": "__nv_llrintf",
    "__triton_hip_fast_expf": "__nv_fast_expf",
    "__triton_hip_fast_tanhf": "__nv_fast_tanhf",
    "__triton_hip_fast_fdividef": "__nv_fast_fdividef",
}


def _hip_names(t: dict) -> dict:
    names = {name: (f"__nv_{name}f", f"__nv_{name}") for name in OCML} | OCML_RENAMED
    hip = {f"__ocml_{name}_{w}": t[nv] for name, pair in names.items() for w, nv in zip(("f32", "f64"), pair)}
    return hip | {sym: t[nv] for sym, nv in TRITON_HIP.items()}


LIBDEVICE: dict = _table()
