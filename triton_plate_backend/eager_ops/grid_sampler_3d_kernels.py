"""grid_sampler_3d's forward in one launch (grid_sampler_3d.py): each output element's source coordinates,
padding and the 8 (trilinear) or 1 (nearest) gathers of the input, in the steps and order of grid_sampler_3d.py's
composition of plate ops (so the same values), instead of its ~200 launches a call."""

from __future__ import annotations

import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _source(coords, size, PADDING: tl.constexpr, ALIGN: tl.constexpr):
    """grid_sampler_3d._source: unnormalized (align_corners), clamped (border) or reflected (reflection)."""
    half = size.to(coords.dtype) * 0.5
    if ALIGN:
        mul = half - 0.5
    else:
        mul = half
    coords = coords * mul + (half - 0.5)
    hi = (size - 1).to(coords.dtype)
    if PADDING == 1:
        coords = tl.minimum(tl.maximum(coords, 0.0), hi)
    if PADDING == 2:
        if ALIGN:
            twice_low = size * 0
            twice_high = 2 * (size - 1)
        else:
            twice_low = size * 0 - 1
            twice_high = 2 * size - 1
        low = twice_low.to(coords.dtype) * 0.5
        span = (twice_high - twice_low).to(coords.dtype) * 0.5
        distance = tl.abs(coords - low)
        extra = libdevice.fmod(distance, span)
        flips = libdevice.floor(distance / span).to(tl.int32)
        reflected = tl.where((flips & 1) == 0, extra + low, (span + low) - extra)
        reflected = tl.where(twice_low == twice_high, 0.0, reflected)
        coords = tl.minimum(tl.maximum(reflected, 0.0), hi)
    return coords


@triton.jit
def _tap(a, base, x, y, z, width, height, depth, s2, s3, s4, mask):
    inside = (x >= 0) & (x < width) & (y >= 0) & (y < height) & (z >= 0) & (z < depth)
    xi = tl.where(inside, x, 0.0).to(tl.int64)
    yi = tl.where(inside, y, 0.0).to(tl.int64)
    zi = tl.where(inside, z, 0.0).to(tl.int64)
    value = tl.load(a + base + zi * s2 + yi * s3 + xi * s4, mask=mask & inside, other=0.0).to(x.dtype)
    return inside, value


@triton.jit(do_not_specialize=["total", "c", "od", "oh", "ow", "depth", "height", "width"])
def grid_sample_3d(
    out, a, grid, total, c, od, oh, ow, depth, height, width,
    s0, s1, s2, s3, s4, g0, g1, g2, g3, g4,
    NEAREST: tl.constexpr, PADDING: tl.constexpr, ALIGN: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    """out: contiguous (n, c, od, oh, ow); a: (n, c, depth, height, width) with strides s; grid: (n, od, oh, ow, 3)
    with strides g, in out's type."""
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < total
    w_i = e % ow
    h_i = (e // ow) % oh
    d_i = (e // (ow * oh)) % od
    c_i = (e // (ow * oh * od)) % c
    n_i = e // (ow * oh * od * c)
    at = grid + n_i * g0 + d_i * g1 + h_i * g2 + w_i * g3
    ix = _source(tl.load(at, mask=mask, other=0.0), width, PADDING, ALIGN)
    iy = _source(tl.load(at + g4, mask=mask, other=0.0), height, PADDING, ALIGN)
    iz = _source(tl.load(at + 2 * g4, mask=mask, other=0.0), depth, PADDING, ALIGN)
    base = n_i * s0 + c_i * s1
    if NEAREST:
        inside, value = _tap(
            a, base, libdevice.nearbyint(ix), libdevice.nearbyint(iy), libdevice.nearbyint(iz),
            width, height, depth, s2, s3, s4, mask,
        )  # fmt: skip
        result = tl.where(inside, value, 0.0)
    else:
        x0 = libdevice.floor(ix)
        y0 = libdevice.floor(iy)
        z0 = libdevice.floor(iz)
        result = tl.zeros_like(ix)
        for dz in tl.static_range(2):
            for dy in tl.static_range(2):
                for dx in tl.static_range(2):
                    wx = (ix - x0) if dx else ((x0 + 1.0) - ix)
                    wy = (iy - y0) if dy else ((y0 + 1.0) - iy)
                    wz = (iz - z0) if dz else ((z0 + 1.0) - iz)
                    inside, value = _tap(
                        a, base, x0 + dx, y0 + dy, z0 + dz, width, height, depth, s2, s3, s4, mask
                    )  # fmt: skip
                    term = tl.where(inside, value * (wx * wy * wz), 0.0)
                    if dx + dy + dz == 0:
                        result = term
                    else:
                        result = result + term
    tl.store(out + e, result.to(out.dtype.element_ty), mask=mask)
