"""grid_sampler_3d and its backward in one launch each (grid_sampler_3d.py), in the steps and order of ATen's CPU
kernels (grid_sampler_3d_cpu_impl, grid_sampler_3d_backward_cpu_impl), so their values bit for bit in float32 and
float64: the source coordinates ((coords + 1) / 2 * (size - 1), or ((coords + 1) * size - 1) / 2), padded (clipped,
reflected), then the 8 (trilinear) or 1 (nearest) gathers of the input, each corner's weight the product of its
three distances in x, y, z order."""

from __future__ import annotations

import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _reflect_bounds(coords, size, ALIGN: tl.constexpr):
    """ATen's reflect_coordinates' bounds (twice_low, twice_high = 0, 2 (size - 1) with align_corners, else -1,
    2 size - 1) as the reflection's low edge and span, in the coordinates' dtype (span 0: one point, no reflection)."""
    if ALIGN:
        twice_low = size * 0
        twice_high = 2 * (size - 1)
    else:
        twice_low = size * 0 - 1
        twice_high = 2 * size - 1
    return twice_low.to(coords.dtype) * 0.5, (twice_high - twice_low).to(coords.dtype) * 0.5


@triton.jit
def _source(coords, size, PADDING: tl.constexpr, ALIGN: tl.constexpr):
    """ATen's grid_sampler_compute_source_index: unnormalized (align_corners), clipped (border) or reflected
    (reflection), then clipped."""
    if ALIGN:
        coords = ((coords + 1.0) * 0.5) * (size - 1).to(coords.dtype)
    else:
        coords = ((coords + 1.0) * size.to(coords.dtype) - 1.0) * 0.5
    hi = (size - 1).to(coords.dtype)
    if PADDING == 1:
        coords = tl.minimum(tl.maximum(coords, 0.0), hi)
    if PADDING == 2:
        low, span = _reflect_bounds(coords, size, ALIGN)
        distance = tl.abs(coords - low)
        extra = libdevice.fmod(distance, span)
        flips = libdevice.floor(distance / span).to(tl.int32)
        reflected = tl.where((flips & 1) == 0, extra + low, (span - extra) + low)
        reflected = tl.where(span == 0.0, 0.0, reflected)
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


@triton.jit
def _clip_gradient(coords, hi):
    """ATen's clip_coordinates_set_grad: into [0, hi], d / d coords 0 at and past the borders."""
    low, high = coords <= 0.0, coords >= hi
    clipped = tl.where(low, 0.0, tl.where(high, hi, coords))
    return clipped, tl.where(low | high, 0.0, 1.0)


@triton.jit
def _source_gradient(coords, size, PADDING: tl.constexpr, ALIGN: tl.constexpr):
    """ATen's grid_sampler_compute_source_index_set_grad: the source coordinate and d source / d coords, in the
    CPU kernel's steps ((coords + 1) / 2 * (size - 1) or ((coords + 1) * size - 1) / 2, then padded)."""
    if ALIGN:
        factor = (size - 1).to(coords.dtype)
        coords = ((coords + 1.0) * 0.5) * factor
    else:
        factor = size.to(coords.dtype)
        coords = ((coords + 1.0) * factor - 1.0) * 0.5
    gradient = tl.zeros_like(coords) + factor * 0.5
    hi = (size - 1).to(coords.dtype)
    if PADDING == 1:
        coords, clip = _clip_gradient(coords, hi)
        gradient = gradient * clip
    if PADDING == 2:
        low, span = _reflect_bounds(coords, size, ALIGN)
        shifted = coords - low
        sign = tl.where(shifted < 0.0, -1.0, 1.0)
        shifted = tl.where(shifted < 0.0, -shifted, shifted)
        extra = libdevice.fmod(shifted, span)
        even = (libdevice.floor(shifted / span).to(tl.int32) % 2) == 0
        reflected = tl.where(even, extra + low, (span - extra) + low)
        reflection = tl.where(even, sign, -sign)
        reflected = tl.where(span == 0.0, 0.0, reflected)
        reflection = tl.where(span == 0.0, 0.0, reflection)
        coords, clip = _clip_gradient(reflected, hi)
        gradient = (gradient * reflection) * clip
    return coords, gradient


@triton.jit
def _inside(x, y, z, width, height, depth):
    return (x >= 0) & (x < width) & (y >= 0) & (y < height) & (z >= 0) & (z < depth)


@triton.jit
def _offset(x, y, z, inside, t2, t3, t4):
    """The element offset of (z, y, x) with strides t, 0 outside."""
    xi = tl.where(inside, x, 0.0).to(tl.int64)
    yi = tl.where(inside, y, 0.0).to(tl.int64)
    zi = tl.where(inside, z, 0.0).to(tl.int64)
    return zi * t2 + yi * t3 + xi * t4


@triton.jit(do_not_specialize=["blocks", "c", "od", "oh", "ow", "depth", "height", "width"])
def grid_sample_3d_backward(
    grad_input, grad_grid, grad_out, a, grid, blocks, c, od, oh, ow, depth, height, width,
    s0, s1, s2, s3, s4, g0, g1, g2, g3, g4, o0, o1, o2, o3, o4, i0, i1, i2, i3, i4,
    NEAREST: tl.constexpr, PADDING: tl.constexpr, ALIGN: tl.constexpr, INPUT: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    """ATen's grid_sampler_3d_backward_cpu_impl: program (n, block) takes BLOCK of sample n's grid points and
    loops over the channels, as the CPU's loop per point. grad_input (strides i; zeros, INPUT: the input's
    gradient is asked for) gets each point's 8 corner weights (or its nearest voxel) times grad_out by atomic adds
    in (program, point, corner) order, which is the CPU loop's order per element; grad_grid: contiguous
    (n, od, oh, ow, 3), the CPU's sums over the channels and corners in its order, times d source / d grid.
    a (strides s), grid (g), grad_out (o) and the gradients in one floating type."""
    pid = tl.program_id(0)
    n = (pid // blocks).to(tl.int64)
    p = (pid % blocks).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    points = od * oh * ow
    mask = p < points
    w_i = p % ow
    h_i = (p // ow) % oh
    d_i = p // (ow * oh)
    at = grid + n * g0 + d_i * g1 + h_i * g2 + w_i * g3
    ix, gx = _source_gradient(tl.load(at, mask=mask, other=0.0), width, PADDING, ALIGN)
    iy, gy = _source_gradient(tl.load(at + g4, mask=mask, other=0.0), height, PADDING, ALIGN)
    iz, gz = _source_gradient(tl.load(at + 2 * g4, mask=mask, other=0.0), depth, PADDING, ALIGN)
    gout = grad_out + n * o0 + d_i * o2 + h_i * o3 + w_i * o4
    gin = grad_input + n * i0
    gix = tl.zeros_like(ix)
    giy = tl.zeros_like(ix)
    giz = tl.zeros_like(ix)
    if NEAREST:
        x = libdevice.nearbyint(ix)
        y = libdevice.nearbyint(iy)
        z = libdevice.nearbyint(iz)
        inside = _inside(x, y, z, width, height, depth) & mask
        offset = _offset(x, y, z, inside, i2, i3, i4)
        if INPUT:
            for ch in range(0, c):
                g = tl.load(gout + ch * o1, mask=mask, other=0.0)
                tl.atomic_add(gin + ch * i1 + offset, g, mask=inside)
    else:
        x0 = libdevice.floor(ix)
        y0 = libdevice.floor(iy)
        z0 = libdevice.floor(iz)
        x1 = x0 + 1.0
        y1 = y0 + 1.0
        z1 = z0 + 1.0
        # the 8 corners as columns, in the CPU's order (tnw, tne, tsw, tse, bnw, bne, bsw, bse): x fastest
        k = tl.arange(0, 8)[None, :]
        dx = (k & 1) == 1
        dy = ((k >> 1) & 1) == 1
        dz = (k >> 2) == 1
        xs = tl.where(dx, x1[:, None], x0[:, None])
        ys = tl.where(dy, y1[:, None], y0[:, None])
        zs = tl.where(dz, z1[:, None], z0[:, None])
        wx = tl.where(dx, (ix - x0)[:, None], (x1 - ix)[:, None])
        wy = tl.where(dy, (iy - y0)[:, None], (y1 - iy)[:, None])
        wz = tl.where(dz, (iz - z0)[:, None], (z1 - iz)[:, None])
        weights = (wx * wy) * wz
        corners = _inside(xs, ys, zs, width, height, depth) & mask[:, None]
        offsets = _offset(xs, ys, zs, corners, i2, i3, i4)
        for ch in range(0, c):
            g = tl.load(gout + ch * o1, mask=mask, other=0.0)
            if INPUT:
                tl.atomic_add(gin + ch * i1 + offsets, weights * g[:, None], mask=corners)
            values = a + n * s0 + ch * s1
            for corner in tl.static_range(8):
                cx = x1 if corner & 1 else x0
                cy = y1 if (corner >> 1) & 1 else y0
                cz = z1 if corner >> 2 else z0
                tx = (ix - x0) if corner & 1 else (x1 - ix)
                ty = (iy - y0) if (corner >> 1) & 1 else (y1 - iy)
                tz = (iz - z0) if corner >> 2 else (z1 - iz)
                inside = _inside(cx, cy, cz, width, height, depth) & mask
                value = tl.load(values + _offset(cx, cy, cz, inside, s2, s3, s4), mask=inside, other=0.0)
                if corner & 1:
                    gix = tl.where(inside, gix + ((value * ty) * tz) * g, gix)
                else:
                    gix = tl.where(inside, gix - ((value * ty) * tz) * g, gix)
                if (corner >> 1) & 1:
                    giy = tl.where(inside, giy + ((value * tx) * tz) * g, giy)
                else:
                    giy = tl.where(inside, giy - ((value * tx) * tz) * g, giy)
                if corner >> 2:
                    giz = tl.where(inside, giz + ((value * tx) * ty) * g, giz)
                else:
                    giz = tl.where(inside, giz - ((value * tx) * ty) * g, giz)
        gix = gx * gix
        giy = gy * giy
        giz = gz * giz
    out = grad_grid + (n * points + p) * 3
    tl.store(out, gix, mask=mask)
    tl.store(out + 1, giy, mask=mask)
    tl.store(out + 2, giz, mask=mask)
