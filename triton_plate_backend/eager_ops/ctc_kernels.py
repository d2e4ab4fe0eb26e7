"""The forward recursion of plate's CTC loss (ctc.py) in one launch: one program per sample, the loop over time
inside it, in the steps ctc._logsumexp takes (the maximum, -inf's shifted to 0, the sum of the exponentials, its
log), so each step's alphas are those of ctc._alphas' per-step plate ops.

log_alpha[b, t] is stored as each step computes it and read back, shifted by one and two states, by the next
step (tl.debug_barrier orders the program's store before those loads)."""

from __future__ import annotations

import triton
import triton.language as tl

NEG_INF = tl.constexpr(float("-inf"))


@triton.jit
def _logsumexp3(a, b, c):
    top = tl.maximum(tl.maximum(a, b), c)
    top = tl.where(top == NEG_INF, 0.0, top)
    total = tl.exp(a - top) + tl.exp(b - top) + tl.exp(c - top)
    some = total > 0
    return tl.where(some, top + tl.log(tl.where(some, total, 1.0)), NEG_INF)


@triton.jit
def _extended(padded, b, s, blank, valid, p0, p1):
    """l'(s): blank at even s, the target's (s - 1) / 2-th label at odd s (padded: (batch, S) int64)."""
    label = tl.load(padded + b * p0 + ((s - 1) // 2) * p1, mask=valid & (s % 2 == 1), other=0)
    return tl.where(s % 2 == 1, label, blank)


@triton.jit(do_not_specialize=["time", "width", "blank", "zero_infinity"])
def ctc_alpha(
    lp, padded, inputs, lengths, nll, log_alpha, time, width, blank, zero_infinity,
    l0, l1, l2, p0, p1, a0, a1, a2, W: tl.constexpr,
):  # fmt: skip
    """lp: (T, batch, C) log-probabilities; inputs, lengths: (batch,) int64; log_alpha: (batch, T, width)."""
    b = tl.program_id(0).to(tl.int64)
    s = tl.arange(0, W)
    valid = s < width
    ext = _extended(padded, b, s, blank, valid, p0, p1)
    skip = (s >= 2) & (ext != blank) & (ext != _extended(padded, b, s - 2, blank, valid & (s >= 2), p0, p1))
    length = tl.load(lengths + b)
    steps = tl.load(inputs + b)
    row = lp + b * l1 + ext * l2
    start = (s == 0) | ((s == 1) & (length > 0))
    alpha = tl.where(start, tl.load(row, mask=valid, other=0.0), NEG_INF)
    out = log_alpha + b * a0 + s * a2
    tl.store(out, alpha, mask=valid)
    for t in range(1, time):
        tl.debug_barrier()
        before = out + (t - 1) * a1
        one = tl.load(before - a2, mask=valid & (s >= 1), other=NEG_INF)
        two = tl.load(before - 2 * a2, mask=valid & skip, other=NEG_INF)
        emitted = tl.load(row + t * l0, mask=valid, other=0.0)
        stepped = _logsumexp3(alpha, one, two) + emitted
        alpha = tl.where(t < steps, stepped, alpha)
        tl.store(out + t * a1, alpha, mask=valid)
    last = tl.max(tl.where(s == 2 * length, alpha, NEG_INF), axis=0)
    ahead = tl.max(tl.where((s == 2 * length - 1) & (length > 0), alpha, NEG_INF), axis=0)
    top = tl.maximum(last, ahead)
    top = tl.where(top == NEG_INF, 0.0, top)
    total = tl.exp(last - top) + tl.exp(ahead - top)
    loss = -tl.where(total > 0, top + tl.log(tl.where(total > 0, total, 1.0)), NEG_INF)
    if zero_infinity != 0:
        loss = tl.where(loss == float("inf"), 0.0, loss)
    tl.store(nll + b, loss)
