"""The out= and in-place forms of the table's rows that no family writes in place itself (table.VARIANTS lists
those that do): each runs its functional row's kernel, then writes the result into ``out`` / ``self`` as ATen does.

``derived(rows)`` finds them by schema: in the functional overload's packet (``op.out``, ``op.*_out``,
``op.grad_input``...) an overload whose arguments are the functional's plus one out= tensor per result, and in
``op_``'s packet an overload with the functional's arguments whose ``self`` is written. ``NOT_ADAPTED`` leaves out
those whose functional result is not what the form writes (random draws, data-dependent shapes).

``adapter(op, functional, kernel)``: an out= / self tensor of another type than the functional result's runs on
the host: the CPU applies its own rules (a cast, ``Found dtype Double but expected Float`` of the forms that allow
none, an in-place ``result type Float can't be cast...``, a reduction computing in out's type), which the meta
kernels do not all share (a functional op without a meta kernel: its result's type, after the kernel ran). Otherwise
the form runs on meta tensors (ops.Call.meta): torch's argument checks, and its
warning when it resizes an out= tensor of another shape (what the meta kernel refuses runs on the host, raising the
CPU's error). Then the functional kernel computes into a tensor of its own (so an out= aliasing an input reads the
input unchanged) and its result is copied into ``out`` / ``self``, resized to the result's shape first."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch._prims_common.wrappers import _maybe_resize_out

from .ops import Call, _meta

# forms whose result the functional kernel does not give: a random draw consumed differently, a data-dependent
# shape (their meta kernels refuse the call), or an input the functional form does not write
NOT_ADAPTED = frozenset(
    {
        "multinomial.out",
        "bernoulli.out",
        "native_dropout.out",
        "rrelu_with_noise.out",
        "rrelu_with_noise_backward.out",
        "masked_select.out",
        "unique_consecutive.out",
        "unique_dim.out",
        "_unique.out",
        "_unique2.out",
        "nonzero.out",
        "nonzero_static.out",
        "bincount.out",
        "repeat_interleave.Tensor_out",
        "_native_multi_head_attention.out",
        "_transformer_encoder_layer_fwd.out",
        "_batch_norm_with_update.out",
        "native_batch_norm.out",
        "_native_batch_norm_legit.out",
        "_native_batch_norm_legit.no_stats_out",
    }
)


def _signature(arguments) -> list[tuple[str, str]]:
    return [(a.name, str(a.type)) for a in arguments]


def _written(argument) -> bool:
    return argument.alias_info is not None and argument.alias_info.is_write


def _forms(name: str) -> list[str]:
    """The out= and in-place overloads of the functional overload ``name`` (by schema, see the module)."""
    packet, _, overload = name.partition(".")
    schema = getattr(getattr(torch.ops.aten, packet), overload)._schema
    arguments = _signature(schema.arguments)
    forms = []
    in_place = f"__i{packet[2:]}" if packet.startswith("__") else f"{packet}_"
    for other in (packet, in_place):
        if not hasattr(torch.ops.aten, other):
            continue
        ops = getattr(torch.ops.aten, other)
        for overload_name in ops.overloads():
            form = f"{other}.{overload_name}"
            s = getattr(ops, overload_name)._schema
            outs = [a for a in s.arguments if a.is_out]
            inputs = _signature(a for a in s.arguments if not a.is_out)
            if form == name or inputs != arguments:
                continue
            if outs and len(outs) == len(schema.returns):
                forms.append(form)
            elif not outs and other == in_place and s.arguments and _written(s.arguments[0]):
                forms.append(form)
    return forms


def _composite(form: str) -> bool:
    """ATen's kernel of ``form`` is a composite (its functional op, then a copy; or other ops): it reaches plate's
    kernels already (conj_physical_ of a real tensor is no op at all)."""
    packet, _, overload = form.partition(".")
    name = f"aten::{packet}" if overload == "default" else f"aten::{packet}.{overload}"
    return any(torch._C._dispatch_has_kernel_for_dispatch_key(name, key) for key in COMPOSITES)


COMPOSITES = ("CompositeExplicitAutograd", "CompositeImplicitAutograd")
# composites adapted all the same: ATen's calls a DispatchStub plate has no kernel in (an internal assert on plate)
STUB_COMPOSITES = frozenset({"conj_physical_.default"})


def derived(rows, covered) -> dict[str, str]:
    """form -> its functional overload, for every row of ``rows`` and each of its forms that is not in ``covered``
    (a family's own variant), not a composite and not in NOT_ADAPTED: the forms the CPU fallback would take."""
    return {
        form: name
        for name in rows
        for form in _forms(name)
        if form not in covered and form not in NOT_ADAPTED and (form in STUB_COMPOSITES or not _composite(form))
    }  # fmt: skip


def _dtypes(functional: torch._ops.OpOverload, args, kwargs) -> list[torch.dtype] | None:
    """The types of the functional overload's results (it on meta tensors); None when the meta kernel refuses it."""
    try:
        result = functional(*_meta(list(args)), **{k: _meta(v) for k, v in kwargs.items()})
    except Exception:  # noqa: BLE001 - the host raises torch's error
        return None
    return [r.dtype for r in (result if isinstance(result, (tuple, list)) else [result])]


def adapter(op: torch._ops.OpOverload, functional: torch._ops.OpOverload, kernel: Callable) -> Callable:
    """The kernel of the out= / in-place form ``op`` of ``functional``, whose plate kernel is ``kernel``."""
    schema = op._schema
    outs = [a.name for a in schema.arguments if a.is_out]
    targets = outs or [schema.arguments[0].name]
    positional = [a.name for a in functional._schema.arguments if not a.kwarg_only]
    keywords = [a.name for a in functional._schema.arguments if a.kwarg_only]

    def run(*arguments, **keyword_arguments):
        call = Call(op, arguments, keyword_arguments)
        args = [call[n] for n in positional]
        kwargs = {n: call[n] for n in keywords}
        written = [call[n] for n in targets]
        dtypes = _dtypes(functional, args, kwargs)  # None: no meta kernel (or it refuses: the kernel raises)
        if call.mixed or (dtypes is not None and dtypes != [t.dtype for t in written]):
            return call.on_host()  # a cast into out / self: the CPU's own rules (some forms refuse any cast)
        if dtypes is not None:
            expected = call.meta()  # torch's checks, and its warning when it resizes an out= tensor
            if expected is None:
                return call.host_result
        result = kernel(*args, **kwargs)
        results = list(result) if isinstance(result, (tuple, list)) else [result]
        if dtypes is None and [r.dtype for r in results] != [t.dtype for t in written]:
            return call.on_host()
        for target, value in zip(written, results):
            if dtypes is None:
                _maybe_resize_out(target, value.shape)  # torch's Python warning (no meta kernel gave it)
            elif target.shape != value.shape:
                target.resize_(value.shape)  # the meta kernel warned as torch warns (when out had elements)
            target.copy_(value)
        return tuple(written) if len(schema.returns) > 1 else written[0]

    return run
