"""Advanced indexing on plate (triton_plate_backend/eager_ops/advanced_index.py): nonzero, boolean masks,
several index tensors on any dims (adjacent or apart), CPU index tensors, index_put_ with and without
accumulate, all exactly as the CPU, with the host-op counter at zero; layouts of more dims than a launch takes;
and the decompositions built on them (unfold/fold, bicubic upsampling, channel shuffle) against float64."""

from __future__ import annotations

import math

import pytest
import torch

from triton_plate_backend import eager_ops

eager_ops.register()
aten = torch.ops.aten


def same(got, expected):
    assert got.device.type == "plate" and (got.shape, got.dtype) == (expected.shape, expected.dtype)
    torch.testing.assert_close(got.cpu(), expected, rtol=0, atol=0)


X = torch.randn(5, 7)
Y = torch.randn(3, 4, 5, 6)


def test_nonzero_lists_coordinates_in_row_major_order(no_host_ops):
    same(X.to("plate").nonzero(), X.nonzero())
    ints = torch.tensor([0, 1, 3, 4, 2, 0, 0])
    same(ints.to("plate").nonzero(), ints.nonzero())
    flags = torch.rand(3, 4, 5) > 0.5
    same(flags.to("plate").nonzero(), flags.nonzero())
    long_row = torch.rand(1500) > 0.3  # more than one block of the kernel's walk
    same(long_row.to("plate").nonzero(), long_row.nonzero())
    same(torch.zeros(2, 3, device="plate").nonzero(), torch.zeros(2, 3).nonzero())


def test_nonzero_numbers_blocks_apart_in_order(no_host_ops):
    """Each block of the kernels counts, then places its elements after the blocks before it: a mask of
    several blocks (one of them empty, one full, the last partial) lists its coordinates as the CPU does."""
    from triton_plate_backend.eager_ops.prefix_kernels import NONZERO_BLOCK

    x = torch.randn(3, NONZERO_BLOCK + 5, 2)
    x[1] = 0.0  # a whole block (and more) with nothing to list
    x[2, :, 1] = float("nan")  # NaN is nonzero
    x[0, :7] = 1.0
    assert x.numel() > 3 * NONZERO_BLOCK
    same(x.to("plate").nonzero(), x.nonzero())
    mask = torch.rand(2 * NONZERO_BLOCK + 1) > 0.5
    same(mask.to("plate").nonzero(), mask.nonzero())


def test_masks_and_several_indices(no_host_ops):
    px, py = X.to("plate"), Y.to("plate")
    same(px[X > 0], X[X > 0])
    same(px[:, torch.tensor([1, 2])], X[:, torch.tensor([1, 2])])
    rows, cols = torch.tensor([[0], [3]]), torch.tensor([1, -2, 4])  # broadcast together, a negative index
    same(px[rows, cols], X[rows, cols])
    apart = (slice(None), torch.tensor([0, 2]), slice(None), torch.tensor([1, 5]))  # the index dims go first
    same(py[apart], Y[apart])
    same(py[torch.tensor([0, 2]), :, torch.tensor([[1], [4]])], Y[torch.tensor([0, 2]), :, torch.tensor([[1], [4]])])
    plane = torch.rand(4, 5) > 0.5
    same(py[:, plane.to("plate")], Y[:, plane])


def _launches(monkeypatch) -> list:
    from triton_plate_backend.sim.device import Device

    seen = []
    real = Device.launch
    monkeypatch.setattr(Device, "launch", lambda self, *a, **k: seen.append(1) or real(self, *a, **k))
    return seen


def test_a_masks_coordinates_are_offsets_without_elementwise_launches(monkeypatch, no_host_ops):
    """A mask's coordinates are never negative: no wrap of negative indices (3 elementwise launches), and a
    stride of 1 no multiply; x[mask] of a contiguous 1-dim x of one nonzero block is nonzero's one launch and
    the gather."""
    x = torch.arange(40, dtype=torch.int16) * 3 - 50
    mask = x % 7 < 3
    px, pmask = x.to("plate"), mask.to("plate")
    seen = _launches(monkeypatch)
    got = px[pmask]
    assert len(seen) == 2
    same(got, x[mask])
    wide = torch.randn(6, 5)  # a mask over the last dim of a 2-dim x: its coordinates times no stride
    cols = torch.tensor([True, False, True, True, False])
    same(wide.to("plate")[:, cols.to("plate")], wide[:, cols])
    same(wide.to("plate")[1:, ::2][wide[1:, ::2].to("plate") > 0], wide[1:, ::2][wide[1:, ::2] > 0])
    with_negative = (torch.tensor([[True], [False], [True]]), torch.tensor([-1, 0]))  # a negative index beside
    same(wide.to("plate")[:3][with_negative[0].to("plate")[:, 0], with_negative[1].to("plate")[:, None]],
         wide[:3][with_negative[0][:, 0], with_negative[1][:, None]])  # fmt: skip


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_with_masks_and_several_indices(accumulate, no_host_ops):
    a = torch.randn(3)
    pa = a.to("plate")
    mask, values = torch.tensor([True, True, False]), torch.randn(2)
    aten.index_put_(pa, [mask.to("plate")], values.to("plate"), accumulate)
    aten.index_put_(a, [mask], values, accumulate)
    same(pa, a)
    b = torch.randn(1, 2, 3)
    pb = b.to("plate")
    index, scalar = torch.tensor([0, 1]), torch.randn([])
    aten.index_put_(pb, [None, index.to("plate"), mask.to("plate")], scalar.to("plate"), accumulate)
    aten.index_put_(b, [None, index, mask], scalar, accumulate)
    same(pb, b)
    c = torch.zeros(5, 7)
    pc = c.to("plate")
    rows, cols = torch.tensor([1, 3, 3]), torch.tensor([0, 2, 2])  # a repeated place: accumulate adds twice
    pc.index_put_((rows.to("plate"), cols.to("plate")), torch.ones(3, device="plate"), accumulate=accumulate)
    c.index_put_((rows, cols), torch.ones(3), accumulate=accumulate)
    same(pc, c)


def test_a_strided_view_with_a_mask_and_a_cpu_value(no_host_ops):
    x = torch.randn(512, 19).permute(1, 0).view(-1, 128, 4)[:, :, 1:]
    px = x.to("plate")
    mask = torch.ones(128, 3, dtype=torch.int32) == 1
    px[:, mask.to("plate")] = -math.inf
    x[:, mask] = -math.inf
    same(px, x)


def test_cpu_indices_of_a_plate_tensor(no_host_ops):
    latent = torch.randn(24, 16, 4, 4).to(memory_format=torch.channels_last).view(2, 12, 16, 4, 4)
    order = torch.argsort(torch.rand(2, 12), dim=-1)
    index = (torch.arange(2).unsqueeze(-1), order[:, :3])
    got, expected = latent.to("plate")[index], latent[index]
    same(got, expected)
    assert got.stride() == expected.stride()  # TensorIterator's: channels_last along the sliced dims


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.bool, torch.uint8, torch.int16])
def test_accumulate_of_types_atomics_lack(dtype, no_host_ops):
    x = torch.zeros(4, 3, dtype=dtype)
    mask = torch.tensor([True, False, True, False])
    values = torch.full((2, 3), 200 if dtype == torch.uint8 else 1, dtype=dtype)  # uint8: 400 wraps
    rows = torch.tensor([1, 1, 3])  # a repeated row: small sums, exact in every type
    for index, v in (((mask,), values), ((rows,), values[:1].expand(3, 3))):
        got, expected = x.to("plate"), x.clone()
        got.index_put_([i.to("plate") for i in index], v.to("plate"), accumulate=True)
        expected.index_put_(index, v, accumulate=True)
        same(got, expected)


@pytest.mark.parametrize("accumulate", [False, True])
def test_layouts_of_more_dims_than_a_launch_run_one_launch_per_outer_position(accumulate, no_host_ops):
    # a (2, 3, 2, 5, 2, 3) result of a permuted 6-dim view: no two dims coalesce
    base = torch.randn(3, 2, 5, 2, 3, 2).permute(5, 0, 1, 2, 4, 3)
    rows, cols = torch.tensor([[1], [0]]), torch.tensor([2, 0, 4])  # broadcast over dims 2 and 3
    same(base.to("plate")[:, :, rows, cols], base[:, :, rows, cols])
    values = torch.randn(2, 3, 2, 3, 3, 2)
    indices = [None, None, rows, cols]
    for target in (base.clone(), base.contiguous()):
        expected = aten.index_put_(target.clone(), indices, values, accumulate)
        got = aten.index_put_(
            target.to("plate"), [None, None, rows.to("plate"), cols.to("plate")], values.to("plate"), accumulate
        )
        torch.testing.assert_close(got.cpu(), expected)


@pytest.mark.parametrize(
    "shape, kernel, options",
    [
        ((1, 2, 4, 4), 2, {}),
        ((2, 3, 5, 6), (2, 3), {"stride": (1, 2), "padding": 1, "dilation": (2, 1)}),
        ((3, 7, 7), 3, {"stride": 2}),
    ],
)
def test_unfold_and_fold_with_their_gradients_match_float64(shape, kernel, options, no_host_ops):
    # im2col / col2im: torch's decompositions over plate's gather and accumulating index_put (6-dim layouts)
    x = torch.randn(shape, dtype=torch.float64)
    on_plate, exact = x.float().to("plate").requires_grad_(), x.clone().requires_grad_()
    cols = torch.nn.functional.unfold(on_plate, kernel, **options)
    cols_exact = torch.nn.functional.unfold(exact, kernel, **options)
    torch.testing.assert_close(cols.cpu().double(), cols_exact)
    grad = torch.randn(cols_exact.shape, dtype=torch.float64)
    cols.backward(grad.float().to("plate"))
    cols_exact.backward(grad)
    torch.testing.assert_close(on_plate.grad.cpu().double(), exact.grad, atol=1e-5, rtol=1e-5)
    folded = torch.nn.functional.fold(cols.detach(), shape[-2:], kernel, **options)
    torch.testing.assert_close(
        folded.cpu().double(),
        torch.nn.functional.fold(cols_exact.detach(), shape[-2:], kernel, **options),
        atol=1e-5,
        rtol=1e-5,
    )


@pytest.mark.parametrize(
    "options",
    [{"scale_factor": 2}, {"size": (7, 9), "align_corners": True}, {"size": (3, 3)}, {"scale_factor": (1.5, 2.5)}],
)
def test_bicubic_upsampling_matches_float64(options, no_host_ops):
    # torch's decomposition (gathers of the 4 x 4 neighbours) over plate kernels
    x = torch.randn(2, 3, 5, 4, dtype=torch.float64)
    got = torch.nn.functional.interpolate(x.float().to("plate"), mode="bicubic", **options)
    want = torch.nn.functional.interpolate(x, mode="bicubic", **options)
    torch.testing.assert_close(got.cpu().double(), want, atol=1e-5, rtol=1e-5)


def test_channel_shuffle(no_host_ops):
    y = torch.randn(2, 6, 3, 3)
    same(torch.nn.functional.channel_shuffle(y.to("plate"), 3), torch.nn.functional.channel_shuffle(y, 3))
