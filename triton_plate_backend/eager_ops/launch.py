"""Launching the eager kernels: a result's dims coalesced to the kernels' RANK strided dims, the grid,
and the Triton kernels themselves, imported on the first launch (so registering the eager ops at
`import torch` imports no Triton)."""

from __future__ import annotations

import contextlib
import importlib
import itertools
import math
import sys

import torch

RANK = 4  # kernels.RANK: the strided dims a kernel takes
SPLIT_LAUNCHES = 64  # fits(split=True): the most launches a layout of more than RANK merged dims is split into
BLOCK = 512  # kernels.BLOCK
# a large elementwise op over one coalesced dim runs in wider programs: the same elements in 8x fewer
# programs, so 8x fewer persistent-loop trips for the simulator to step (each costs a few DMAs' setup on
# the host: 1.2 s of CPU for `x == 0x80` on 2**24 int8 at BLOCK, 0.1 s at WIDE_BLOCK); from WIDE_FROM
# elements a launch still has >= 1024 programs, dozens per core. WIDE: the kernels that take it (their
# programs' tiles fit a core's SRAM at WIDE_BLOCK, tests/test_eager_ops.py)
WIDE_BLOCK = 4096
WIDE_FROM = 1 << 22
WIDE = frozenset({"elementwise", "isclose"})
# the element types plate's kernels load and store (complex tensors run over their real views)
REAL_DTYPES = frozenset(
    {
        torch.bool,
        torch.uint8,
        torch.int8,
        torch.int16,
        torch.int32,
        torch.int64,
        torch.float16,
        torch.bfloat16,
        torch.float32,
        torch.float64,
    }
)
# a real type -> the signed integer type of its width: an op that only moves elements (a fill, a gather) moves
# the same bits through views of that type, so one compiled kernel serves every type of a width (the same
# program: a load and a store of as many bytes)
BIT_TYPES = {
    torch.bool: torch.int8,
    torch.uint8: torch.int8,
    torch.int8: torch.int8,
    torch.int16: torch.int16,
    torch.float16: torch.int16,
    torch.bfloat16: torch.int16,
    torch.int32: torch.int32,
    torch.float32: torch.int32,
    torch.int64: torch.int64,
    torch.float64: torch.int64,
}
# the floating types a plate kernel computes in (its accumulator: float32 for the half types)
FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
COMPLEX_PARTS = {torch.complex32: torch.float16, torch.complex64: torch.float32, torch.complex128: torch.float64}


def next_power_of_2(n: int) -> int:
    """triton.next_power_of_2, without importing Triton (see above): the least power of two >= n >= 1."""
    return 1 << (n - 1).bit_length()


def kernels():
    return _module(_KERNELS)


def _module(name: str):
    # sys.modules first: import_module's own lookup costs a few microseconds, several times per launch
    return sys.modules.get(name) or importlib.import_module(name)


_KERNELS = f"{__package__}.kernels"


@contextlib.contextmanager
def library_compiles():
    """Compiles of the eager kernels in this block go through Triton's cache even under TRITON_ALWAYS_COMPILE.

    The eager kernels are plate's ATen: on CUDA their equivalents come compiled in libtorch. TRITON_ALWAYS_COMPILE
    asks Triton to compile the user's (and Inductor's) kernels again; applied to the eager kernels too, every
    process would compile each one it runs once (bench_models.py sets it: Inductor's constant folding runs eager
    kernels inside a model's compile). A cached binary is the one a compile would make: Triton's cache key holds
    the hash of every source file of this package (compiler.package_source_hash), the options and the machine.
    A cold cache still compiles them (once per machine and source).

    They also compile at once, outside a triton.AsyncCompileMode the caller opened: its executor is the
    caller's (Triton's test_async_compile_mock holds every submitted compile until it says so), and an eager
    op inside the block (``a[0, 0] == 0.0`` on a plate tensor) would otherwise wait on a compile nobody runs."""
    from triton import knobs as triton_knobs
    from triton.runtime import _async_compile

    token = _async_compile.active_mode.set(None)
    try:
        if not triton_knobs.compilation.always_compile:
            yield
            return
        with triton_knobs.compilation.scope():  # restores the knob and its environment variable
            triton_knobs.compilation.always_compile = False
            yield
    finally:
        _async_compile.active_mode.reset(token)


def triton_dtype(dtype: torch.dtype):
    """The triton.language type of a torch dtype (the compute type CT the kernels take)."""
    found = _TRITON_DTYPES.get(dtype)
    if found is None:
        tl = importlib.import_module("triton.language")
        found = tl.int1 if dtype == torch.bool else getattr(tl, str(dtype).removeprefix("torch."))
        _TRITON_DTYPES[dtype] = found
    return found


_TRITON_DTYPES: dict = {}  # torch dtype -> triton.language type, filled on first use


def broadcast_strides(t: torch.Tensor, shape) -> list[int]:
    """t's strides as an operand of a result of `shape`: 0 along the dims it is broadcast over."""
    lead = len(shape) - t.dim()
    return [0 if d < lead or t.shape[d - lead] == 1 else t.stride(d - lead) for d in range(len(shape))]


def merged_dims(shape, strides: list[list[int]]) -> tuple[list[int], list[list[int]]]:
    """(sizes, each operand's strides), outermost first, size-1 dims dropped and adjacent dims merged where
    every operand steps through them as through one: any number of dims."""
    sizes: list[int] = []
    merged: list[list[int]] = [[] for _ in strides]
    for d, size in enumerate(shape):
        if size == 1:
            continue
        if sizes and all(m[-1] == s[d] * size for m, s in zip(merged, strides)):
            sizes[-1] *= size
            for m, s in zip(merged, strides):
                m[-1] = s[d]
            continue
        sizes.append(size)
        for m, s in zip(merged, strides):
            m.append(s[d])
    return sizes, merged


def coalesce(shape, strides: list[list[int]]) -> tuple[list[int], list[list[int]]] | None:
    """(sizes, each operand's strides) over at most RANK dims, outermost first, padded with size-1
    dims (merged_dims). None when more than RANK dims remain (launch_kernel then splits the launch, where
    the caller allows it: fits(split=True))."""
    sizes, merged = merged_dims(shape, strides)
    if len(sizes) > RANK:
        return None
    pad = RANK - len(sizes)
    return [1] * pad + sizes, [[0] * pad + m for m in merged]


def launch(kernel_name: str, shape, tensors: list[torch.Tensor], strides: list[list[int]], *extra, **constexprs):
    """Run kernels.<kernel_name> over a result of `shape`: tensors[0] is the output and up to three
    operands follow (missing ones are the output, never read), `strides` each one's element strides
    over `shape`. `extra` are the kernel's further scalar arguments."""
    wide = kernel_name in WIDE
    if wide:
        shape, strides = pointwise_order(shape, strides)
    launch_kernel(getattr(kernels(), kernel_name), shape, tensors, strides, *extra, wide=wide, **constexprs)


def copy_parts(parts: list) -> None:
    """Copy each (dst, src, strides, CT) part: src's elements, loaded in CT, into dst (both over dst's shape,
    `strides` theirs): cat's inputs into their slices of its result, which overlap neither each other nor the
    inputs, so the copies' order is free. Runs of small parts with one CT go several to a launch of one program
    (cat_kernels.cat_parts: a stack of 8 rows is one launch, not 8); a part alone, large or of more than RANK
    merged dims is the elementwise copy it always was."""
    group: list = []  # (dst, src, sizes, steps, CT) of the next cat_parts launch
    for dst, src, strides, ct in parts:
        shape, order = pointwise_order(dst.shape, strides)
        n = math.prod(shape)
        layout = coalesce(shape, order) if 0 < n <= _cat().BLOCK else None
        if group and (layout is None or group[0][4] != ct or len(group) == _cat().PARTS or
                      sum(math.prod(g[2]) for g in group) + n > _cat().BLOCK):  # fmt: skip
            _launch_parts(group)
            group = []
        if layout is not None:
            group.append((dst, src, *layout, ct))
        else:
            launch("elementwise", dst.shape, [dst, src], strides, FN=kernels().copy, ARITY=1, CT=ct)
    if group:
        _launch_parts(group)


def _launch_parts(group: list) -> None:
    if len(group) == 1:  # the elementwise copy: no compile of cat_parts for a cat of one small input
        dst, src, sizes, steps, ct = group[0]
        launch_kernel(kernels().elementwise, sizes, [dst, src], steps, FN=kernels().copy, ARITY=1, CT=ct)
        return
    arguments = []
    for dst, src, sizes, (out_steps, src_steps), _ in group:
        arguments += [dst, src, math.prod(sizes), sizes[1], sizes[2], sizes[3], *out_steps, *src_steps]
    # PARTS a power of two (3 compiles a type, not 7): the parts past the group copy nothing (n 0); those past
    # PARTS, never read, are None: constexprs, out of the compiled signature (a PARTS 2 compile, 28 arguments
    # not 112)
    parts = next_power_of_2(len(group))
    empty = arguments[:2] + [0] + arguments[3:14]
    arguments += empty * (parts - len(group)) + [None] * (len(empty) * (_cat().PARTS - parts))
    dims = max(_layout(kernels().elementwise, sizes, (1,))["DIMS"] for _, _, sizes, _, _ in group)
    cat = _cat()
    cat.cat_parts[(1,)](
        *arguments, PARTS=parts, CT=group[0][4], BLOCK=cat.BLOCK, DIMS=dims,
        machine=kernels().machine_of(group[0][0]),
    )  # fmt: skip


def _cat():
    return _module(_CAT)


_CAT = f"{__package__}.cat_kernels"


def pointwise_order(shape, strides: list[list[int]]) -> tuple[list[int], list[list[int]]]:
    """A pointwise launch's dims reordered outermost first by the output's strides, as TensorIterator orders
    them, where that coalesces into no more dims: each element is computed alone, so the order changes no
    value, and a dense output in a permuted layout (the result of an op on a transposed view, which torch
    lays out as its input) becomes one dim of WIDE_BLOCK programs instead of a strided 4-dim walk."""
    order = sorted(range(len(shape)), key=lambda d: -strides[0][d])  # stable: ties keep their order
    if order == sorted(order):
        return list(shape), strides
    permuted = [shape[d] for d in order], [[s[d] for d in order] for s in strides]
    before, after = coalesce(shape, strides), coalesce(*permuted)
    if after is None or (before is not None and _dims_of(after[0]) > _dims_of(before[0])):
        return list(shape), strides
    return permuted


def _dims_of(sizes) -> int:
    return sum(1 for size in sizes if size != 1)


def launch_kernel(
    kernel, shape, tensors: list[torch.Tensor], strides: list[list[int]], *extra, wide: bool = False, **constexprs
):
    """`launch` of a Triton kernel of any module that takes kernels.elementwise's leading arguments (four
    pointers, n, the sizes, four operands' strides). wide: WIDE_BLOCK programs for a large one-dim launch."""
    n = math.prod(shape)
    if n == 0:
        return
    layout = coalesce(shape, strides)
    if layout is None:  # more than RANK dims: one launch per index of the outer ones (fits(split=True))
        for part_tensors, part_sizes, part_strides in split_launches(shape, tensors, strides):
            launch_kernel(kernel, part_sizes, part_tensors, part_strides, *extra, wide=wide, **constexprs)
        return
    sizes, steps = layout
    block = WIDE_BLOCK if wide and n >= WIDE_FROM and sizes[:-1] == [1] * (RANK - 1) else BLOCK
    out = tensors[0]
    pointers = list(tensors) + [out] * (4 - len(tensors))
    steps = steps + [[0] * RANK] * (4 - len(steps))
    flat = [s for step in steps for s in step]
    grid = (triton_cdiv(n, block),)
    constexprs.update(_layout(kernel, sizes, grid))
    kernel[grid](
        *pointers, n, sizes[1], sizes[2], sizes[3], *flat, *extra,
        BLOCK=block, machine=kernels().machine_of(out), **constexprs,
    )  # fmt: skip


def launch_fill(shape, out: torch.Tensor, *extra, **constexprs):
    """random_fill's launch: the output is its only tensor."""
    n = math.prod(shape)
    if n == 0:
        return
    sizes, (steps,) = coalesce(shape, [broadcast_strides(out, shape)])
    k = kernels()
    grid = (triton_cdiv(n, BLOCK),)
    k.random_fill[grid](
        out, n, sizes[1], sizes[2], sizes[3], *steps, *extra,
        BLOCK=BLOCK, machine=k.machine_of(out), **constexprs, **_layout(k.random_fill, sizes, grid),
    )  # fmt: skip


def _layout(kernel, sizes: list[int], grid: tuple[int]) -> dict:
    """The DIMS and ONE_PROGRAM constexprs of a kernel that takes them (kernels._indices): DIMS, how many of
    the coalesced sizes are not the leading 1s of padding (the index arithmetic of the others is skipped);
    ONE_PROGRAM, a grid of one program (its kernel reads no program_id: no persistent loop around one trip,
    half a small launch's simulated instructions)."""
    if "DIMS" not in kernel.arg_names:
        return {}
    dims = max(1, RANK - next((d for d, size in enumerate(sizes) if size != 1), RANK))
    return {"DIMS": dims, "ONE_PROGRAM": grid == (1,)}


def fits(shape, strides: list[list[int]], split: bool = False) -> bool:
    """Whether a launch can address the layout: at most RANK merged dims, or, with split (a kernel whose
    every element is computed alone from its operands' elements at the same index: no element position, no
    random stream), at most SPLIT_LAUNCHES launches of the inner RANK dims."""
    sizes, _ = merged_dims(shape, strides)
    return len(sizes) <= RANK or (split and math.prod(sizes[: len(sizes) - RANK]) <= SPLIT_LAUNCHES)


def split_launches(shape, tensors: list[torch.Tensor], strides: list[list[int]]):
    """(tensors, sizes, strides) of each launch over the inner RANK merged dims, one per index of the outer
    ones: each tensor an element view at that index's offset (the launch reads and writes through its own
    strides from there)."""
    sizes, merged = merged_dims(shape, strides)
    outer = len(sizes) - RANK
    for index in itertools.product(*(range(size) for size in sizes[:outer])):
        views = [
            t.as_strided((1,), (1,), t.storage_offset() + sum(i * s for i, s in zip(index, m[:outer])))
            for t, m in zip(tensors, merged)
        ]
        yield views, sizes[outer:], [m[outer:] for m in merged]


def triton_cdiv(n: int, block: int) -> int:
    return -(-n // block)
