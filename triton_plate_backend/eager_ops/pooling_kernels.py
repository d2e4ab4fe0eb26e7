"""The Triton kernels of the pools (pooling.py): average, max and adaptive pools over (N, C, D, H, W)
(a 2-D pool has D = 1), forward and backward.

One lane per result element. A lane finds its spatial coordinates in `pos`, the element offset of a
position operand whose strides are POS_D, POS_H and 1 along D, H and W (0 along N and C): the launcher
then never merges a spatial dim with another. The backward kernel gathers: one lane per input element
walks the outputs whose windows hold it, in the order the CPU's loop over outputs adds them."""

from __future__ import annotations

import triton
import triton.language as tl

from .kernels import _NO_SPECIALIZE, _at, _indices

AVG, MAX, ADAPTIVE_AVG, ADAPTIVE_MAX = (tl.constexpr(k) for k in range(4))
POS_W = 1 << 20  # the position operand's strides: a spatial size stays below POS_W
POS_D = tl.constexpr(1 << 40)
POS_H = tl.constexpr(1 << 20)

_SCALARS = [f"{name}{d}" for name in ("I", "O", "X", "G", "K", "S", "P", "L", "C") for d in "DHW"]


@triton.jit
def _window(o, In, Out, K, S, P, L, MODE: tl.constexpr):
    """The window of output o along one dim: (first, stop, step, size for the divisor). `first` is the first
    input position the window holds on the input (max pools: possibly outside, masked by the caller)."""
    if MODE == AVG:
        start = o * S - P
        end = tl.minimum(start + K, In + P)
        size = end - start
        first = tl.maximum(start, 0)
        stop = tl.minimum(end, In)
        step = 1
    elif MODE == MAX:
        first = o * S - P
        stop = first + (K - 1) * L + 1
        step = L
        size = stop - first
    else:  # adaptive: [floor(o * In / Out), ceil((o + 1) * In / Out))
        first = (o * In) // Out
        stop = ((o + 1) * In + Out - 1) // Out
        step = 1
        size = stop - first
    return first, stop, step, size


@triton.jit
def _spatial(pos):
    return pos // POS_D, (pos // POS_H) % POS_H, pos % POS_H


@triton.jit(do_not_specialize=_NO_SPECIALIZE + _SCALARS + ["divisor"])
def pool(
    out, a, b, c, n, s1, s2, s3,
    o0, o1, o2, o3, a0, a1, a2, a3, b0, b1, b2, b3, p0, p1, p2, p3,
    ID, IH, IW, OD, OH, OW, XD, XH, XW, GD, GH, GW, KD, KH, KW, SD, SH, SW, PD, PH, PW, LD, LH, LW, CD, CH, CW,
    divisor, MODE: tl.constexpr, COUNT_PAD: tl.constexpr, CT: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    """out = the pool of a (strides XD, XH, XW along its spatial dims) over each output's window; b the
    max pools' indices (flat in a's D, H, W). C* are the loop counts along each dim (a window's largest size)."""
    i, mask, i0, i1, i2, i3 = _indices(n, s1, s2, s3, BLOCK)
    od, oh, ow = _spatial(_at(i0, i1, i2, i3, p0, p1, p2, p3))
    fd, ed, td, zd = _window(od, ID, OD, KD, SD, PD, LD, MODE)
    fh, eh, th, zh = _window(oh, IH, OH, KH, SH, PH, LH, MODE)
    fw, ew, tw, zw = _window(ow, IW, OW, KW, SW, PW, LW, MODE)
    plane = a + _at(i0, i1, i2, i3, a0, a1, a2, a3)
    total = tl.zeros([BLOCK], dtype=CT)
    best = tl.full([BLOCK], float("-inf"), dtype=CT)
    where = tl.full([BLOCK], -1, dtype=tl.int64)
    for kd in range(0, CD):
        d = fd + kd * td
        for kh in range(0, CH):
            h = fh + kh * th
            for kw in range(0, CW):
                w = fw + kw * tw
                inside = mask & (d < ed) & (h < eh) & (w < ew) & (d >= 0) & (h >= 0) & (w >= 0)
                inside = inside & (d < ID) & (h < IH) & (w < IW)
                x = tl.load(plane + d * XD + h * XH + w * XW, mask=inside, other=0).to(CT)
                if MODE == AVG or MODE == ADAPTIVE_AVG:
                    total += x
                else:  # the first element, then any larger one or NaN (the CPU's `val > max || isnan(val)`)
                    take = inside & ((where < 0) | (x > best) | (x != x))
                    best = tl.where(take, x, best)
                    where = tl.where(take, (d * IH + h) * IW + w, where)
    if MODE == AVG:
        if COUNT_PAD:
            count = zd * zh * zw
        else:
            count = (ed - fd) * (eh - fh) * (ew - fw)
        count = tl.where(divisor != 0, divisor, count)  # a negative override divides too, as ATen
        result = total / count.to(CT)
    elif MODE == ADAPTIVE_AVG:
        result = total / zd.to(CT) / zh.to(CT) / zw.to(CT)  # the CPU's sum / kd / kh / kw
    else:
        result = best
        tl.store(b + _at(i0, i1, i2, i3, b0, b1, b2, b3), where, mask=mask)
    tl.store(out + _at(i0, i1, i2, i3, o0, o1, o2, o3), result.to(out.dtype.element_ty), mask=mask)


@triton.jit
def _first_output(i, In, Out, K, S, P, L, MODE: tl.constexpr):
    """The first output whose window may hold input position i."""
    if MODE == AVG:
        num = i + P - K + 1
        lo = tl.where(num > 0, (num + S - 1) // S, 0)
    elif MODE == MAX:
        num = i + P - (K - 1) * L
        lo = tl.where(num > 0, (num + S - 1) // S, 0)
    else:
        lo = (i * Out) // In
    return lo


@triton.jit
def _holds(o, i, In, Out, K, S, P, L, MODE: tl.constexpr):
    first, stop, step, size = _window(o, In, Out, K, S, P, L, MODE)
    return (o < Out) & (i >= first) & (i < stop)


@triton.jit(do_not_specialize=_NO_SPECIALIZE + _SCALARS + ["divisor"])
def pool_backward(
    out, a, b, c, n, s1, s2, s3,
    o0, o1, o2, o3, a0, a1, a2, a3, b0, b1, b2, b3, p0, p1, p2, p3,
    ID, IH, IW, OD, OH, OW, XD, XH, XW, GD, GH, GW, KD, KH, KW, SD, SH, SW, PD, PH, PW, LD, LH, LW, CD, CH, CW,
    divisor, MODE: tl.constexpr, COUNT_PAD: tl.constexpr, CT: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    """out (the input's gradient) at each input element: the sum of a (the output's gradient, strides G*)
    over the outputs whose windows hold it, each divided as the forward divided it; max pools: over the
    outputs whose index b (strides X*) names it. C* are the loop counts over candidate outputs per dim."""
    i, mask, i0, i1, i2, i3 = _indices(n, s1, s2, s3, BLOCK)
    d, h, w = _spatial(_at(i0, i1, i2, i3, p0, p1, p2, p3))
    grads = a + _at(i0, i1, i2, i3, a0, a1, a2, a3)
    chosen = b + _at(i0, i1, i2, i3, b0, b1, b2, b3)
    ld = _first_output(d, ID, OD, KD, SD, PD, LD, MODE)
    lh = _first_output(h, IH, OH, KH, SH, PH, LH, MODE)
    lw = _first_output(w, IW, OW, KW, SW, PW, LW, MODE)
    total = tl.zeros([BLOCK], dtype=CT)
    for td in range(0, CD):
        od = ld + td
        for th in range(0, CH):
            oh = lh + th
            for tw in range(0, CW):
                ow = lw + tw
                valid = mask & (od < OD) & (oh < OH) & (ow < OW)
                g = tl.load(grads + od * GD + oh * GH + ow * GW, mask=valid, other=0).to(CT)
                if MODE == MAX or MODE == ADAPTIVE_MAX:
                    pick = tl.load(chosen + od * XD + oh * XH + ow * XW, mask=valid, other=-1)
                    total += tl.where(valid & (pick == (d * IH + h) * IW + w), g, 0)
                else:
                    held = _holds(od, d, ID, OD, KD, SD, PD, LD, MODE) & _holds(oh, h, IH, OH, KH, SH, PH, LH, MODE)
                    held = valid & held & _holds(ow, w, IW, OW, KW, SW, PW, LW, MODE)
                    fd, ed, xd, zd = _window(od, ID, OD, KD, SD, PD, LD, MODE)
                    fh, eh, xh, zh = _window(oh, IH, OH, KH, SH, PH, LH, MODE)
                    fw, ew, xw, zw = _window(ow, IW, OW, KW, SW, PW, LW, MODE)
                    if MODE == AVG:
                        if COUNT_PAD:
                            count = zd * zh * zw
                        else:
                            count = (ed - fd) * (eh - fh) * (ew - fw)
                        count = tl.where(divisor != 0, divisor, count)  # a negative override divides too, as ATen
                        share = g / tl.where(count == 0, 1, count).to(CT)  # an empty window: 1; a negative count stays
                    else:
                        share = g / tl.maximum(zd, 1).to(CT) / tl.maximum(zh, 1).to(CT) / tl.maximum(zw, 1).to(CT)
                    total += tl.where(held, share, 0)
    tl.store(out + _at(i0, i1, i2, i3, o0, o1, o2, o3), total.to(out.dtype.element_ty), mask=mask)
