"""The plate kernel of each row of the table (table.py), by family: what an aten call becomes.

Every kernel first runs the op on meta tensors: that checks the arguments and gives the result's
shape, strides and dtype exactly as torch's TensorIterator would (and raises torch's own errors).
What a family does not cover (a dtype plate's kernels lack, an output overlapping an input, more than
RANK dims that do not coalesce) runs on the host through the CPU fallback and is counted as a host op,
as every op without a plate kernel is."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import torch
from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND as ELEMENTWISE_PROMOTION
from torch._prims_common import elementwise_dtypes
from torch.utils._python_dispatch import is_in_torch_dispatch_mode

from ..torch_device import _registration
from ..torch_device.accumulation import tensors_in
from ..torch_device.rng import default_generator
from . import launch, meta_memo
from .launch import COMPLEX_PARTS, REAL_DTYPES, broadcast_strides
from .table import PART_COMPARISONS, Row

HALF = (torch.float16, torch.bfloat16)
FLOAT32_64 = (torch.float32, torch.float64)  # the parts of complex64 / complex128
COMPLEX_ABS = (*FLOAT32_64, torch.float16)  # |z| of complex64 / complex128 / complex32 (hypot in float32, rounded)
# a Python number as torch wraps it into a tensor (c10's scalar_to_tensor)
_WRAPPED_DTYPES = {bool: torch.bool, int: torch.int64, float: torch.float64, complex: torch.complex128}


# ---- arguments ----------------------------------------------------------------------------------------
class IndexOutOfBounds(IndexError, RuntimeError):
    """An index outside its dim, with the CPU's message: torch's CPU raises IndexError (index, index_put_,
    index_select) or RuntimeError (gather, scatter) for it; this is both."""


def check_index_bounds(index: torch.Tensor, size: int, dim: int, wraps: bool = True) -> None:
    """Raise IndexOutOfBounds when an element of `index` (on its device) is outside [-size, size) ([0, size)
    when a negative index does not count from the end: gather's and scatter's)."""
    bad = (index < (-size if wraps else 0)) | (index >= size)
    if index.numel() and bool(bad.any()):
        raise IndexOutOfBounds(
            f"index {int(index[bad].reshape(-1)[0])} is out of bounds for dimension {dim} with size {size}"
        )


@dataclasses.dataclass(frozen=True)
class _SchemaShape:
    """What Call reads of an overload's schema, read once per overload."""

    names: tuple[str, ...]  # the arguments' names, in order
    defaults: tuple[tuple[str, object], ...]  # (name, default value) of every argument, in order
    target_name: str | None  # the out= argument, else the first written one (an in-place op's self)


_SCHEMAS: dict[torch._ops.OpOverload, _SchemaShape] = {}


def _schema_shape(op: torch._ops.OpOverload) -> _SchemaShape:
    arguments = op._schema.arguments
    outs = [a.name for a in arguments if a.is_out]
    written = [a.name for a in arguments if a.alias_info is not None and a.alias_info.is_write]
    shape = _SchemaShape(
        tuple(a.name for a in arguments),
        tuple((a.name, a.default_value) for a in arguments),
        outs[0] if outs else (written[0] if written else None),
    )
    _SCHEMAS[op] = shape
    return shape


class Call:
    """One call of an op overload: its arguments by schema name."""

    def __init__(self, op: torch._ops.OpOverload, args, kwargs):
        self.op = op
        self.args, self.kwargs = args, kwargs
        shape = _SCHEMAS.get(op) or _schema_shape(op)
        self.bound = dict(zip(shape.names, args))
        for name, default in shape.defaults[len(args) :]:
            # a list default is the call's own, as the schema gives a new one each time it is read
            self.bound[name] = kwargs[name] if name in kwargs else list(default) if type(default) is list else default
        self.target_name = shape.target_name

    @property
    def mixed(self) -> bool:
        """Tensors of more than one device (a CPU tensor counts only if it is not 0-dim, as in
        TensorIterator): the host refuses them with torch's own error."""
        devices = {v.device for v in tensors_in(self.bound.values()) if not (v.device.type == "cpu" and v.dim() == 0)}
        return len(devices) > 1 or any(d.type != "plate" for d in devices)

    def __getitem__(self, name: str):
        return self.bound[name]

    def meta(self):
        """The op on meta tensors: torch's argument checks and the result's layout and dtype. None when the
        meta kernel refuses the call: then the host ran it (``host_result``), raising the CPU's own error
        text (the meta kernels word some errors differently) or computing what the meta kernel refused."""
        signature = meta_memo.key(self.op, self.bound)
        remembered = None if signature is None else meta_memo.lookup(signature)
        if remembered is not None:
            return remembered
        metas = {k: _meta(v) for k, v in self.bound.items()}
        try:
            result = self.op(**metas)
        except Exception:  # noqa: BLE001 - the host decides, and raises its own error
            self.host_result = self.on_host()
            return None
        # an out= tensor the meta kernel resized: torch warned, as it must again on the next such call
        if signature is not None and all(_unresized(metas[n], self.bound[n]) for n in _out_names(self.op)):
            meta_memo.remember(signature, result)
        return result

    def on_host(self):
        """The op through the CPU fallback, as if plate had no kernel for it (counted as a host op)."""
        schema = self.op._schema
        overload = "" if self.op._overloadname == "default" else self.op._overloadname
        args, kwargs, wrapped = list(self.args), dict(self.kwargs), set()
        for i, a in enumerate(schema.arguments):  # scalar operands came as Python numbers: wrap them again
            value = args[i] if i < len(args) else kwargs.get(a.name)
            if isinstance(a.type, torch.TensorType) and isinstance(value, (bool, int, float, complex)):
                wrapped.add(a.name)
                number = torch.tensor(value, dtype=_WRAPPED_DTYPES[type(value)])
                if i < len(args):
                    args[i] = number
                else:
                    kwargs[a.name] = number
        return _registration.extension()._run_on_host(schema.name, overload, tuple(args), kwargs, frozenset(wrapped))


_OUT_NAMES: dict = {}


def _out_names(op: torch._ops.OpOverload) -> tuple[str, ...]:
    names = _OUT_NAMES.get(op)
    if names is None:
        names = _OUT_NAMES[op] = tuple(a.name for a in op._schema.arguments if a.is_out)
    return names


def _unresized(meta, out) -> bool:
    return isinstance(meta, torch.Tensor) and isinstance(out, torch.Tensor) and meta.shape == out.shape


def checked(op: torch._ops.OpOverload, prepare: Callable | None = None) -> Callable:
    """The start every eager kernel shares, as a decorator of its body ``kernel(call, expected)``: the
    call's arguments (Call, after ``prepare(op, args, kwargs) -> (args, kwargs)`` when given); mixed devices
    to the host (which raises torch's error); the op on meta tensors, whose result ``expected`` the body
    lays its result out by (None: the host ran the call)."""

    def wrap(body: Callable) -> Callable:
        def kernel(*args, **kwargs):
            call = Call(op, *prepare(op, args, kwargs)) if prepare else Call(op, args, kwargs)
            if call.mixed:
                return call.on_host()
            expected = call.meta()
            if expected is None:
                return call.host_result
            return body(call, expected)

        return kernel

    return wrap


def on_one_dim_views(call: Call, expected: torch.Tensor, names: tuple[str, ...]):
    """A call whose 0-dim self indexes along its only "dim" (gather, scatter, index_reduce of a scalar tensor): the
    same op on 1-element views of the 0-dim tensors among ``names`` along dim 0, which ATen computes alike; the
    call's result in the meta kernel's shape (an in-place or out= call writes its target through the view)."""
    bound = dict(call.bound)
    target = call[call.target_name] if call.target_name else None
    if target is not None and target.shape != expected.shape:
        target.resize_(expected.shape)
    for name in (*names, *((call.target_name,) if target is not None else ())):
        value = bound.get(name)
        if isinstance(value, torch.Tensor) and value.dim() == 0:
            bound[name] = value.reshape(1)
    bound["dim"] = 0
    result = call.op(**bound)
    return target if target is not None else result.reshape(expected.shape)


def as_expected(result: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
    """``result`` in the meta kernel's shape, strides and dtype (``expected``; rounded once from float32 for
    fp16/bf16), on result's device."""
    out = torch.empty_strided(expected.shape, expected.stride(), dtype=expected.dtype, device=result.device)
    return out.copy_(result.reshape(expected.shape))


def _meta(value):
    if isinstance(value, torch.Tensor) and value.device.type != "cpu":
        return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device="meta")
    if isinstance(value, (list, tuple)):
        return type(value)(_meta(v) for v in value)
    if isinstance(value, torch.Generator):
        return None
    return value


def _result(call: Call, expected: torch.Tensor, device) -> torch.Tensor:
    """The tensor the op writes: its out=/in-place argument, or a new one laid out as torch lays it out."""
    if call.target_name is None:
        return torch.empty_strided(expected.shape, expected.stride(), dtype=expected.dtype, device=device)
    target = call[call.target_name]
    if target.shape != expected.shape:
        target.resize_(expected.shape)
    return target


def _byte_span(t: torch.Tensor) -> tuple[int, int]:
    """[first, last) bytes a non-empty tensor's elements lie in."""
    last = sum((n - 1) * abs(s) for n, s in zip(t.shape, t.stride())) if t.numel() else -1
    low = t.data_ptr() - sum((n - 1) * -s for n, s in zip(t.shape, t.stride()) if s < 0) * t.element_size()
    return low, low + (last + 1) * t.element_size()


def _overlaps(target: torch.Tensor, operands) -> bool:
    """An operand sharing the output's memory other than element for element: the host decides (torch
    raises for most such calls). An empty storage shares no memory (empty storages all have the null pointer),
    nor does an operand wholly below the output's first byte (``p[2] += p[1]``): the output may grow when it is
    resized, from its first byte to its storage's end, never below."""
    storage = target.untyped_storage()
    if storage.nbytes() == 0:
        return False
    for v in operands:
        if not isinstance(v, torch.Tensor) or v.device.type == "cpu" or v.untyped_storage().nbytes() == 0:
            continue
        if v.untyped_storage().data_ptr() != storage.data_ptr():
            continue
        same = v.data_ptr() == target.data_ptr() and v.shape == target.shape and v.stride() == target.stride()
        if same or v.numel() == 0:
            continue
        if _byte_span(v)[1] <= (_byte_span(target)[0] if target.numel() else target.data_ptr()):
            continue
        return True
    return False


def _plate_device(call: Call, names) -> torch.device | None:
    for name in names:
        v = call[name]
        if isinstance(v, torch.Tensor) and v.device.type != "cpu":
            return v.device
    target = call[call.target_name] if call.target_name else None
    return target.device if isinstance(target, torch.Tensor) else None


def _opmath(dtype: torch.dtype) -> torch.dtype:
    """The type a kernel computes in: half types widened as CUDA's opmath, bool as int8."""
    if dtype in HALF:
        return torch.float32
    return torch.int8 if dtype == torch.bool else dtype


def _operand(value, dtype: torch.dtype, device, common: torch.dtype | None = None) -> torch.Tensor:
    """A kernel operand on the plate device: a Python scalar or CPU 0-dim tensor becomes a plate 0-dim
    tensor (a copy, as CUDA copies a CPU scalar tensor). Given the op's ``common`` type, a scalar is
    first rounded to it, as TensorIterator casts a CPU scalar to the common type (``bf16 == 3.14``
    compares with 3.140625)."""
    if isinstance(value, torch.Tensor):
        if value.device.type == "cpu":
            return value.to(common or value.dtype).to(device)
        return value.resolve_neg()
    if common is not None and type(value) is int and not (common.is_floating_point or common.is_complex):
        value = torch.tensor(value, dtype=torch.int64).to(common).item()  # wraps, as TensorIterator's cast does
    elif common is not None:
        value = torch.tensor(value, dtype=common).item()
    return torch.tensor(value, dtype=dtype, device=device)


# ---- elementwise ---------------------------------------------------------------------------------------
# add / sub (and rsub) of real tensors with alpha 1, the default (``x += y``): x + y and x - y, without alpha as a
# third operand. y * 1 is y in every compute type, so the result is the same bits, and the call makes no plate
# tensor of alpha nor loads it (a third of a small add's cost).
UNIT_ALPHA = {"add": "plus", "sub": "minus"}


def _unit_alpha_row(row: Row) -> Row | None:
    if row.fn not in UNIT_ALPHA or row.operands[-1:] != ("alpha",):
        return None
    return dataclasses.replace(row, fn=UNIT_ALPHA[row.fn], operands=row.operands[:-1])


def _is_one(value) -> bool:
    return type(value) in (bool, int, float) and value == 1


def elementwise(op: torch._ops.OpOverload, row: Row) -> Callable:
    unit_alpha = _unit_alpha_row(row)

    @checked(op)
    def kernel(call: Call, expected):
        device = _plate_device(call, row.operands)
        values = [call[name] for name in row.operands]
        if device is None or _overlaps_target(call, values):
            return call.on_host()
        if row.fn == "isnan" and _is_complex(values[0]) and call.target_name is None:
            parts = torch.view_as_real(_operand(values[0], expected.dtype, device).resolve_conj())
            return torch.isnan(parts[..., 0]) + torch.isnan(parts[..., 1])  # either part NaN (bools add as or)
        if row.fn == "abs" and _is_complex(values[0]) and call.target_name is None and expected.dtype in COMPLEX_ABS:
            parts = torch.view_as_real(_operand(values[0], values[0].dtype, device).resolve_conj())
            magnitude = torch.hypot(parts[..., 0], parts[..., 1])  # |z| as std::abs of a complex: hypot(re, im)
            return magnitude if magnitude.stride() == expected.stride() else as_expected(magnitude, expected)
        if row.complex_fn in PART_COMPARISONS.values() and any(_is_complex(v) for v in values):
            return _complex_comparison(call, row, expected, device, values)
        real = not expected.dtype.is_complex and not any(_is_complex(v) for v in values)
        if unit_alpha is not None and real and _is_one(values[-1]):
            return _one_launch(call, unit_alpha, expected, device, values[:-1])
        return _one_launch(call, row, expected, device, values)

    return kernel


def _one_launch(call: Call, row: Row, expected, device, values):
    """The rest of an elementwise call, over ``row``'s operands (their ``values``): one launch of
    kernels.elementwise, or the complex form, or the host (counted)."""
    if row.integral and (expected.dtype.is_floating_point or expected.dtype.is_complex):
        return call.on_host()
    if not takes_dtypes(row, expected):
        return call.on_host()
    if expected.dtype.is_complex or any(_is_complex(v) for v in values):
        return _complex(call, row, expected, device, values)
    typed = real_operands(call, row, expected, values, device)
    if typed is None:
        return call.on_host()
    ct, operands = typed
    laid_out = result_and_strides(call, expected, device, operands)
    if laid_out is None:
        return call.on_host()
    out, strides = laid_out
    launch.launch(
        "elementwise", expected.shape, [out, *operands], strides,
        FN=launch.kernels().FUNCTIONS[row.fn], ARITY=len(operands), CT=launch.triton_dtype(ct),
    )  # fmt: skip
    return out


# ---- div: the rounding mode picks the element function ----------------------------------------------------
DIVISIONS = {None: "div", "trunc": "div_trunc", "floor": "div_floor"}
# trunc and floor of a half type compute on it, each step rounded (ATen's scalar code on Half values), not in fp32
ON_HALF = {
    (mode, dtype): f"div_{mode}_{name}"
    for mode in ("trunc", "floor")
    for dtype, name in ((torch.float16, "fp16"), (torch.bfloat16, "bf16"))
}


def divide(op: torch._ops.OpOverload, row: Row) -> Callable:
    """div with each rounding mode (floor_divide: div's floor mode): an elementwise kernel per mode. An integer
    division with a zero divisor runs on the host, which raises torch's ZeroDivisionError (the CPU's semantics
    plate keeps; CUDA returns garbage)."""
    by_fn = {fn: elementwise(op, dataclasses.replace(row, fn=fn)) for fn in (*DIVISIONS.values(), *ON_HALF.values())}

    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        mode = "floor" if op._schema.name.rstrip("_") == "aten::floor_divide" else call.bound.get("rounding_mode")
        if mode not in DIVISIONS:
            return call.on_host()  # torch's error for an unknown mode
        dividend, divisor = call["self"], call["other"]
        if mode is not None and _integer_division_by_zero(dividend, divisor):
            return call.on_host()
        fn = DIVISIONS[mode]
        if mode is not None and not call.mixed:
            fn = ON_HALF.get((mode, torch.result_type(dividend, divisor)), fn)
        return by_fn[fn](*args, **kwargs)

    return kernel


def modulo(op: torch._ops.OpOverload, row: Row) -> Callable:
    """remainder / fmod: the elementwise kernel; an integer one with a zero divisor runs on the host, which raises
    torch's ZeroDivisionError (as divide)."""
    inner = elementwise(op, row)

    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        if _integer_division_by_zero(call["self"], call["other"]):
            return call.on_host()
        return inner(*args, **kwargs)

    return kernel


def gelu(op: torch._ops.OpOverload, row: Row) -> Callable:
    """gelu / gelu_backward: `approximate` picks the element function (row.fn or row.fn's tanh form); an
    unknown one goes to the host, which raises torch's error."""
    tanh_fn = row.fn.replace("gelu", "gelu_tanh")
    by_mode = {"none": elementwise(op, row), "tanh": elementwise(op, dataclasses.replace(row, fn=tanh_fn))}

    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        mode = call.bound.get("approximate", "none")
        if mode not in by_mode:
            return call.on_host()
        return by_mode[mode](*args, **kwargs)

    return kernel


def bitwise_not(op: torch._ops.OpOverload, row: Row) -> Callable:
    """bitwise_not: ~x of an integer tensor; of a bool tensor (its kernel operand is int8 0/1), logical not."""
    integer, boolean = elementwise(op, row), elementwise(op, dataclasses.replace(row, fn="logical_not"))

    def kernel(*args, **kwargs):
        x = Call(op, args, kwargs)["self"]
        return (boolean if isinstance(x, torch.Tensor) and x.dtype == torch.bool else integer)(*args, **kwargs)

    return kernel


def masked_fill(op: torch._ops.OpOverload, row: Row) -> Callable:
    """masked_fill: where(mask, value, self). A 0-dim value tensor on the host fills as its ``.item()``, as CUDA's
    kernel takes it (``x.masked_fill(mask, torch.tensor(float("-inf")))``); a number the tensor's type cannot hold
    goes to the host, which raises torch's own overflow error (c10's checked conversion)."""
    as_tensor = elementwise(op, row)
    scalar_op = getattr(op.overloadpacket, op._overloadname.replace("Tensor", "Scalar"))
    as_scalar = as_tensor if scalar_op is op else elementwise(scalar_op, row)  # a Scalar overload: the same one

    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        value = call["value"]
        if isinstance(value, torch.Tensor):
            if value.device.type != "cpu" or value.dim() != 0:
                return as_tensor(*args, **kwargs)
            value = value.item()
        if _overflows(value, call["self"].dtype):
            return call.on_host()
        return as_scalar(**{**call.bound, "value": value})

    return kernel


def log_sigmoid_forward(op: torch._ops.OpOverload, row: Row) -> Callable:
    """log_sigmoid_forward: (output, buffer) as CUDA's kernel returns them, the buffer empty (the CPU's holds
    exp(-|x|) for its backward; log_sigmoid_backward on plate recomputes it from the input)."""

    @checked(op)
    def kernel(call: Call, expected):
        x = call["self"]
        out_like = expected[0]
        if x.device.type != "plate" or out_like.dtype not in REAL_DTYPES or not out_like.dtype.is_floating_point:
            return call.on_host()
        out = torch.empty_strided(out_like.shape, out_like.stride(), dtype=out_like.dtype, device=x.device)
        strides = [broadcast_strides(t, out.shape) for t in (out, x)]
        if not launch.fits(out.shape, strides, split=True):
            return call.on_host()
        launch.launch(
            "elementwise", out.shape, [out, x], strides,
            FN=launch.kernels().FUNCTIONS[row.fn], ARITY=1, CT=launch.triton_dtype(_opmath(out.dtype)),
        )  # fmt: skip
        return out, torch.empty(0, dtype=out.dtype, device=x.device)

    return kernel


def clamp(op: torch._ops.OpOverload, row: Row) -> Callable:
    """clamp / clamp_min / clamp_max: an elementwise kernel of the limits given (clamp's min or max may be
    None: then it is clamp_min's maximum or clamp_max's minimum). A limit that is a number the result's type
    cannot hold goes to the host, which raises torch's overflow error; no limit at all, torch's error too."""
    limits = row.operands[1:]
    by_limits = {
        names: elementwise(op, dataclasses.replace(row, fn=CLAMPS[names], operands=("self", *names)))
        for names in CLAMPS
        if set(names) <= set(limits)
    }

    def kernel(*args, **kwargs):
        call = Call(op, args, kwargs)
        given = tuple(name for name in limits if call[name] is not None)
        if given not in by_limits or call.mixed:
            return call.on_host()
        numbers = [call[name] for name in given if not isinstance(call[name], torch.Tensor)]
        if numbers and any(_overflows(v, _promoted([call["self"], *numbers])) for v in numbers):
            return call.on_host()
        return by_limits[given](*args, **kwargs)

    return kernel


CLAMPS = {("min",): "maximum", ("max",): "minimum", ("min", "max"): "clamp"}


def _overflows(value, dtype: torch.dtype) -> bool:
    """Whether c10's checked conversion of the number ``value`` to ``dtype`` fails (a finite value past the range)."""
    if dtype.is_complex or dtype == torch.bool or isinstance(value, complex):
        return False
    if dtype.is_floating_point:
        return math.isfinite(value) and abs(value) > torch.finfo(dtype).max
    info = torch.iinfo(dtype)
    return not (info.min <= value <= info.max)


def _integer_division_by_zero(dividend, divisor) -> bool:
    if any(_is_complex(v) or _dtype(v).is_floating_point for v in (dividend, divisor)):
        return False
    if isinstance(divisor, torch.Tensor):
        return bool((divisor == 0).any())
    return divisor == 0


def takes_dtypes(row: Row, expected) -> bool:
    """Whether a row's kernel takes the call's types: Row.floating (a floating result) and Row.boolean (a bool
    result, the type the CPU kernel computes in); the others run on the host, which raises the CPU kernel's error."""
    if row.floating and not expected.dtype.is_floating_point:
        return False
    return row.boolean or expected.dtype != torch.bool


def real_operands(call: Call, row: Row, expected, values, device) -> tuple[torch.dtype, list[torch.Tensor]] | None:
    """An elementwise call's compute type and its operands on the device in that type (scalars rounded to
    the common type first, as TensorIterator does); None when a type is not a real one the kernels take."""
    common = _promoted([call[name] for name in row.promote] if row.promote else values)
    ct = _opmath(expected.dtype if row.compute == "result" else common)
    if expected.dtype not in REAL_DTYPES or any(_dtype(v) not in REAL_DTYPES for v in values):
        return None
    rounded = row.promote or row.operands  # the operands cast to the common type
    return ct, [_operand(v, ct, device, common if n in rounded else None) for n, v in zip(row.operands, values)]


def result_and_strides(
    call: Call, expected, device, operands, split: bool = True
) -> tuple[torch.Tensor, list[list[int]]] | None:
    """The tensor an elementwise call writes and every tensor's strides over its shape; None when the
    launch cannot address them (launch.fits; split: a layout of more than RANK dims is split into launches,
    as launch.launch_kernel does; a kernel launched another way passes False)."""
    out = _result(call, expected, device)
    strides = [broadcast_strides(t, expected.shape) for t in (out, *operands)]
    return (out, strides) if launch.fits(expected.shape, strides, split=split) else None


def _promoted(values) -> torch.dtype:
    """torch's promoted type of operands (tensors or scalars), TensorIterator's: a dimensioned tensor's category
    ranks above a 0-dim tensor's, which ranks above a number's."""
    if len(values) == 1:
        return _dtype(values[0])
    if len(values) == 2:
        return torch.result_type(*values)
    return elementwise_dtypes(*values, type_promotion_kind=ELEMENTWISE_PROMOTION.NO_OPMATH)[1]


def _overlaps_target(call: Call, values) -> bool:
    if call.target_name is None:
        return False
    return _overlaps(call[call.target_name], values)


def _is_complex(v) -> bool:
    return isinstance(v, (torch.Tensor, complex)) and (v.dtype.is_complex if isinstance(v, torch.Tensor) else True)


def _dtype(v) -> torch.dtype:
    return v.dtype if isinstance(v, torch.Tensor) else torch.tensor(v).dtype


def _complex(call: Call, row: Row, expected: torch.Tensor, device, values):
    """A complex op over real views: the same element function on (..., 2) views where the op is the
    same on both parts (add, sub, neg, where, copy), else a complex kernel on (real, imag) pairs."""
    cdtype = expected.dtype
    if row.complex_fn is None or cdtype not in COMPLEX_PARTS or isinstance(call.bound.get("alpha", 1), complex):
        return call.on_host()
    part = COMPLEX_PARTS[cdtype]
    out = _result(call, expected, device)
    shape = list(expected.shape)
    operands = []
    for name, value in zip(row.operands, values):
        if name in row.real_operands:  # where's condition, alpha: the same for both parts
            operands.append(_operand(value, part, device))
        else:
            operands.append(torch.view_as_real(_operand(value, cdtype, device).to(cdtype).resolve_conj()))
    if row.complex_fn == "real":
        real_shape = [*shape, 2]
        views = [t.unsqueeze(-1) if name in row.real_operands else t for name, t in zip(row.operands, operands)]
        strides = [broadcast_strides(t, real_shape) for t in (torch.view_as_real(out), *views)]
        if not launch.fits(real_shape, strides):
            return call.on_host()
        launch.launch(
            "elementwise", real_shape, [torch.view_as_real(out), *views], strides,
            FN=launch.kernels().FUNCTIONS[row.fn], ARITY=len(views), CT=launch.triton_dtype(_opmath(part)),
        )  # fmt: skip
        return out
    # pairs: strides over the complex shape, in real elements (the real view's, less its last dim)
    pairs = [torch.view_as_real(out), *operands]
    strides = [
        broadcast_strides(t, shape) if name in row.real_operands else _pair_strides(t, shape)
        for name, t in zip(("out", *row.operands), pairs)
    ]
    if not launch.fits(shape, strides):
        return call.on_host()
    launch.launch(
        "complex_binary", shape, pairs, strides, FN=launch.kernels().FUNCTIONS[row.complex_fn],
        CT=launch.triton_dtype(_opmath(part)),
    )  # fmt: skip
    return out


def _complex_comparison(call: Call, row: Row, expected: torch.Tensor, device, values):
    """eq / ne with a complex operand: the real comparison over the (..., 2) real views of both operands in
    their common complex type, then both parts equal (eq) or either part unequal (ne): std::complex's ==, so a
    NaN part compares unequal. out= and in-place forms, and complex32, go to the host."""
    common = torch.result_type(*values)
    if call.target_name is not None or common not in COMPLEX_PARTS:
        return call.on_host()
    a, b = (torch.view_as_real(_operand(v, common, device, common).to(common).resolve_conj()) for v in values)
    parts = getattr(torch, row.fn)(a, b)
    combine = torch.logical_and if row.complex_fn == PART_COMPARISONS["eq"] else torch.logical_or
    result = combine(parts[..., 0], parts[..., 1])
    return result if result.stride() == expected.stride() else as_expected(result, expected)


def _pair_strides(real_view: torch.Tensor, shape) -> list[int]:
    lead = len(shape) - (real_view.dim() - 1)
    return [0 if d < lead or real_view.shape[d - lead] == 1 else real_view.stride(d - lead) for d in range(len(shape))]


# ---- fill_ / zero_ -------------------------------------------------------------------------------------
def fill(op: torch._ops.OpOverload, row: Row) -> Callable:
    @checked(op)
    def kernel(call: Call, expected):
        self = call["self"]
        value = call.bound.get("value", 0)
        if isinstance(value, torch.Tensor):
            value = value.item()  # a 0-dim tensor (fill_.Tensor): its value, as the CPU kernel reads it
        elif _overflows(value, self.dtype):  # a number (fill_.Scalar): c10's checked conversion, torch's error
            return call.on_host()
        dtype = self.dtype
        if dtype in COMPLEX_PARTS:
            target = torch.view_as_real(self)
            parts = torch.tensor([complex(value).real, complex(value).imag], dtype=COMPLEX_PARTS[dtype])
            source = parts.to(self.device)
        elif dtype in REAL_DTYPES and not isinstance(value, complex):  # the value's bits into integer views
            target = self.view(launch.BIT_TYPES[dtype])
            source = torch.tensor(value, dtype=dtype).view(target.dtype).to(self.device)
        else:
            return call.on_host()
        shape = target.shape
        strides = [broadcast_strides(t, shape) for t in (target, source)]
        if self.numel() and not launch.fits(shape, strides):
            return call.on_host()
        launch.launch(
            "elementwise", shape, [target, source], strides,
            FN=launch.kernels().copy, ARITY=1, CT=launch.triton_dtype(target.dtype),
        )  # fmt: skip
        return self

    return kernel


# ---- arange --------------------------------------------------------------------------------------------
def arange(op: torch._ops.OpOverload, row: Row) -> Callable:
    """arange.start_out, which every arange overload reaches (their composites call it): out[i] = start + i * step
    in the CPU kernel's accumulator type (acc_type: double for float and double, float for the half types,
    int64 for the integers), rounded once to out's type."""

    @checked(op)
    def kernel(call: Call, expected):
        out = call["out"]
        start, step = call["start"], call["step"]
        values = [v.item() if isinstance(v, torch.Tensor) else v for v in (start, step)]
        dtype = expected.dtype
        if dtype in (torch.float32, torch.float64):
            compute = torch.float64
        elif dtype in HALF:
            compute = torch.float32
        elif dtype in REAL_DTYPES and dtype != torch.bool and all(isinstance(v, int) for v in values):
            compute = torch.int64
        else:  # bool, complex, an integer result of fractional bounds: the host's kernel (and its errors)
            return call.on_host()
        target = _result(call, expected, out.device)
        shape = list(target.shape)
        params = torch.tensor(values, dtype=compute).to(out.device)
        strides = [broadcast_strides(target, shape), [0] * len(shape)]
        if target.numel() and not launch.fits(shape, strides):
            return call.on_host()
        launch.launch("arange_fill", shape, [target, params], strides, CT=launch.triton_dtype(compute))
        return target

    return kernel


# ---- random numbers ------------------------------------------------------------------------------------
def _generator(call: Call, device) -> torch.Generator:
    gen = call.bound.get("generator")
    return gen if gen is not None else default_generator(device)


def _draw(gen: torch.Generator, n: int) -> tuple[int, int]:
    """(seed, offset) for n Philox counters, the generator's offset moved past them (in steps of 4, as
    CUDA's kernels move it)."""
    offset = gen.get_offset()
    gen.set_offset(offset + -(-n // 4) * 4)
    return gen.initial_seed(), offset


def _integer_range(call: Call, dtype: torch.dtype) -> tuple[int, int] | None:
    """random_'s (low, count): the values low + [0, count), as torch's CPU and CUDA kernels take them."""
    low, high = call.bound.get("from", 0), call.bound.get("to")
    if dtype.is_floating_point:
        top = round(2 / torch.finfo(dtype).eps)  # random_() covers [0, 2**digits]
    elif dtype == torch.bool:
        top = 1
    else:
        top = torch.iinfo(dtype).max
    if high is None:  # up to the type's top, inclusive
        return low, top - low + 1
    return low, high - low


def random(op: torch._ops.OpOverload, row: Row) -> Callable:
    kinds = launch.kernels  # the KIND constants live with the kernel

    @checked(op)
    def kernel(call: Call, expected):
        returned = call["self"]
        # a complex tensor draws over its real view (ATen's normal_impl_/uniform_impl_): both parts from
        # the distribution, normal's std divided by sqrt(2) so that the complex variance is std**2
        parts = returned.dtype in COMPLEX_PARTS and row.fn in ("normal", "uniform") and not returned.is_conj()
        self = torch.view_as_real(returned) if parts else returned
        if self.dtype not in REAL_DTYPES or (row.fn != "random" and not self.dtype.is_floating_point):
            return call.on_host()
        shape = self.shape
        if self.numel() and not launch.fits(shape, [broadcast_strides(self, shape)]):
            return call.on_host()
        k = kinds()
        width = k.NARROW
        if row.fn == "random":
            low, count = _integer_range(call, self.dtype)
            full = count >= 2**64 - 1 and self.dtype == torch.int64  # randint(-2**63, 2**63 - 1): AOT's seeds
            if count <= 0 or (count > 2**63 and not full) or (count == 2**63 and low != 0):
                return call.on_host()
            width = k.NARROW if count < 2**32 else k.WIDE if count < 2**63 else k.FULL63 if count == 2**63 else k.FULL64
            params = (low, count if count < 2**63 else 0)
        elif row.fn == "uniform":
            params = (float(call["from"]), float(call["to"]))
        elif row.fn == "normal":
            params = (float(call["mean"]), float(call["std"]) / (math.sqrt(2) if parts else 1.0))
        elif row.fn == "bernoulli":
            params = (float(call["p"]), 0.0)
        else:  # exponential
            params = (float(call["lambd"]), 0.0)
        seed, offset = _draw(_generator(call, self.device), self.numel())
        kind = {"uniform": k.UNIFORM, "normal": k.NORMAL, "bernoulli": k.BERNOULLI, "random": k.INTEGERS}
        kind = kind.get(row.fn, k.EXPONENTIAL)
        launch.launch_fill(shape, self, seed, offset, *params, KIND=kind.value, WIDTH=getattr(width, "value", width))
        return returned

    return kernel


def bernoulli_tensor(op: torch._ops.OpOverload, row: Row) -> Callable:
    """bernoulli_(self, p: Tensor) and bernoulli(self): each element 1 with its own probability."""

    @checked(op)
    def kernel(call: Call, expected):
        self = call["self"]
        probabilities = call.bound.get("p", self)
        if not isinstance(probabilities, torch.Tensor) or probabilities.device != self.device:
            return call.on_host()
        out = (
            self
            if call.target_name
            else torch.empty_strided(expected.shape, expected.stride(), dtype=expected.dtype, device=self.device)
        )
        dtypes = (out.dtype, probabilities.dtype)
        shape = out.shape
        strides = [broadcast_strides(t, shape) for t in (out, probabilities)]
        if any(d not in REAL_DTYPES for d in dtypes) or not probabilities.dtype.is_floating_point:
            return call.on_host()
        if _overlaps(out, [probabilities]) or not launch.fits(shape, strides):
            return call.on_host()
        seed, offset = _draw(_generator(call, self.device), out.numel())
        launch.launch("bernoulli_tensor", shape, [out, probabilities], strides, seed, offset)
        return out

    return kernel


def dropout(op: torch._ops.OpOverload, row: Row) -> Callable:
    """native_dropout(input, p, train): (input * keep / (1 - p), keep), keep with probability 1 - p."""

    @checked(op)
    def kernel(call: Call, expected):
        x, p, train = call["input"], float(call["p"]), call["train"]
        if x.dtype not in REAL_DTYPES or not x.dtype.is_floating_point:
            return call.on_host()
        if train is False:
            return x.clone(), torch.ones_like(x, dtype=torch.bool)
        out = torch.empty_like(x)
        mask = torch.empty_like(x, dtype=torch.bool)
        shape = x.shape
        strides = [broadcast_strides(t, shape) for t in (out, x, mask)]
        if not launch.fits(shape, strides):
            return call.on_host()
        scale = 0.0 if p >= 1 else 1.0 / (1.0 - p)
        seed, offset = _draw(default_generator(x.device), x.numel())
        launch.launch(
            "dropout", shape, [out, x, mask], strides, seed, offset, p, scale, CT=launch.triton_dtype(_opmath(x.dtype))
        )
        return out, mask

    return kernel


# ---- cat -----------------------------------------------------------------------------------------------
def cat(op: torch._ops.OpOverload, row: Row) -> Callable:
    """cat(tensors, dim): each input copied (and converted to the promoted type) into its slice of the
    result (launch.copy_parts: small inputs several to a launch)."""

    @checked(op)
    def kernel(call: Call, expected):
        tensors = list(call["tensors"])
        if expected.dtype not in REAL_DTYPES or any(t.dtype not in REAL_DTYPES for t in tensors):
            return call.on_host()
        device = tensors[0].device
        out = _result(call, expected, device)
        if _overlaps(out, tensors) or out.dim() == 0:
            return call.on_host()
        dim = call["dim"] % out.dim()
        offset = 0
        launches = []
        for t in tensors:
            if t.dim() == 1 and t.shape[0] == 0 and out.dim() > 1:
                continue  # a legacy empty input: skipped, as torch skips it
            part = out.narrow(dim, offset, t.shape[dim])
            offset += t.shape[dim]
            strides = [broadcast_strides(x, part.shape) for x in (part, t)]
            if not launch.fits(part.shape, strides, split=True):
                return call.on_host()
            launches.append((part, t, strides))
        launch.copy_parts([(part, t, strides, launch.triton_dtype(_opmath(t.dtype))) for part, t, strides in launches])
        return out

    return kernel


# ---- isclose: one kernel instead of its decomposition's eight ----------------------------------------
# families registered at plate's Autograd key (registry.py), not at PrivateUse1: their ops are
# CompositeImplicitAutograd, which torch decomposes at the Autograd key, above functionalization. A PrivateUse1
# kernel would keep the op whole down to where a tracer decomposes it below functionalization (its in-place
# steps then reach the traced graph); at the Autograd key a traced call decomposes where it always did.
AUTOGRAD_FAMILIES = frozenset({"isclose", "floating_composite"})


def _traced(values) -> bool:
    """A call made while tracing (fake, functional or proxy tensors, or a dispatch mode on)."""
    if is_in_torch_dispatch_mode():
        return True
    return any(type(t) is not torch.Tensor or torch._is_functional_tensor(t) for t in tensors_in(values))


def isclose(op: torch._ops.OpOverload, row: Row) -> Callable:
    """torch.isclose of real tensors as one plate kernel (kernels.isclose). On CUDA, as on CPU, the op is its
    CompositeImplicitAutograd decomposition (eq, isnan, mul, abs, add, sub, isfinite, le, and/or: eight or
    more kernels over the whole tensor); the result is the same, elementwise (the result is a bool tensor:
    nothing to differentiate). Traced calls, complex tensors, and a default float type other than
    float32/float64 keep the decomposition."""
    fused = _isclose(op)

    def kernel(*args, **kwargs):
        if _traced(args) or _traced(kwargs.values()):
            return op.decompose(*args, **kwargs)
        return fused(*args, **kwargs)

    return kernel


def _isclose(op: torch._ops.OpOverload) -> Callable:
    @checked(op)
    def kernel(call: Call, expected):
        a, b = call["self"], call["other"]
        device = _plate_device(call, ("self", "other"))
        dtype = a.dtype
        default = torch.get_default_dtype()
        if device is None or dtype not in REAL_DTYPES or default not in (torch.float32, torch.float64):
            return op.decompose(*call.args, **call.kwargs)
        floating = dtype.is_floating_point
        st = dtype if floating else default  # the type of torch's error terms (integers are cast to it first)
        ct = _opmath(st)
        rtol, atol = float(call["rtol"]), float(call["atol"])
        operands = [_operand(a, dtype, device), _operand(b, dtype, device)]
        laid_out = result_and_strides(call, expected, device, operands)
        if laid_out is None:
            return op.decompose(*call.args, **call.kwargs)
        out, strides = laid_out
        operands.append(torch.tensor([rtol, atol], dtype=ct).to(device))  # read at c and c + 1
        strides.append([0] * len(expected.shape))
        launch.launch(
            "isclose", expected.shape, [out, *operands], strides,
            TOL=rtol != 0 or atol != 0, EQUAL_NAN=bool(call["equal_nan"]) and floating,
            CT=launch.triton_dtype(ct), ST=launch.triton_dtype(st),
        )  # fmt: skip
        return out

    return kernel


FAMILIES: dict[str, Callable[[torch._ops.OpOverload, Row], Callable]] = {
    "cat": cat,
    "elementwise": elementwise,
    "isclose": isclose,
    "divide": divide,
    "modulo": modulo,
    "gelu": gelu,
    "bitwise_not": bitwise_not,
    "masked_fill": masked_fill,
    "clamp": clamp,
    "log_sigmoid_forward": log_sigmoid_forward,
    "fill": fill,
    "arange": arange,
    "random": random,
    "bernoulli_tensor": bernoulli_tensor,
    "dropout": dropout,
}
