"""Plate's CTC loss (ctc.py) in one launch each way: one program per sample, the loop over time inside it.

- ``ctc_alpha``: the forward (alpha) recursion, each step a logsumexp of three terms as ATen's CPU kernel takes it
  (the maximum, -inf's shifted to 0, the sum of the exponentials, its log); neg_log_likelihood inf where no
  alignment exists (zero_infinity is the caller's: at::ctc_loss zeroes it, the backward reads it).
- ``ctc_gradient``: ATen's CPU backward: the beta recursion from the last input step down (the same three-term
  logsumexp, s + 1 and s + 2 in place of s - 1 and s - 2), at each step the log of the sum of alpha * beta over
  the states of each class (lcab), then grad = (exp(lp) - exp(lcab + nll - lp)) * grad_out below the input length
  and 0 past it; 0 for the whole sample under zero_infinity when nll is inf. The CPU adds a class's states in
  order, one log-add each; here the sum of their exponentials at once (the values agree to rounding).

A step's alphas (log_alpha[b, t]) or betas (the scratch log_beta[b, t]) are stored as computed and read back,
shifted by one and two states, by the next step (tl.debug_barrier orders the program's store before those
loads). Every program runs the whole time loop (steps past its input length masked): a loop whose length
differed between programs would split the launch in the simulator."""

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


@triton.jit(do_not_specialize=["time", "width", "blank"])
def ctc_alpha(
    lp, padded, inputs, lengths, nll, log_alpha, time, width, blank,
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
    tl.store(nll + b, loss)


@triton.jit(do_not_specialize=["time", "width", "classes", "blank", "zero_infinity"])
def ctc_gradient(
    lp, padded, inputs, lengths, nll, log_alpha, grad_out, log_beta, grad, time, width, classes, blank, zero_infinity,
    l0, l1, l2, p0, p1, a0, a1, a2, n0, o0, W: tl.constexpr, C: tl.constexpr,
):  # fmt: skip
    """lp: (T, batch, classes); nll, grad_out: (batch,) with strides n0, o0; log_alpha: (batch, T, width);
    log_beta: contiguous (batch, T, width) scratch; grad: contiguous (T, batch, classes)."""
    b = tl.program_id(0).to(tl.int64)
    s = tl.arange(0, W)
    valid = s < width
    ext = _extended(padded, b, s, blank, valid, p0, p1)
    length = tl.load(lengths + b)
    steps = tl.load(inputs + b)
    beside = _extended(padded, b, s + 2, blank, s + 2 < width, p0, p1)
    skip = (s < 2 * length - 1) & (beside != ext)
    live = valid & (s <= 2 * length)
    final = (s == 2 * length) | ((s == 2 * length - 1) & (length > 0))
    row = lp + b * l1 + ext * l2
    loss = tl.load(nll + b * n0)
    scale = tl.load(grad_out + b * o0)
    kept = (zero_infinity == 0) | (loss != float("inf"))
    out = log_beta + (b * time) * width + s
    alphas = log_alpha + b * a0 + s * a2
    beta = tl.full([W], NEG_INF, lp.dtype.element_ty)
    for i in range(0, time):
        t = time - 1 - i
        emitted = tl.load(row + t * l0, mask=valid, other=0.0)
        if i > 0:
            tl.debug_barrier()
            after = out + (t + 1) * width
            one = tl.load(after + 1, mask=valid & (s < 2 * length), other=NEG_INF)
            two = tl.load(after + 2, mask=valid & skip, other=NEG_INF)
            stepped = _logsumexp3(beta, one, two) + emitted
        else:
            stepped = beta
        beta = tl.where(live & (t == steps - 1) & final, emitted, tl.where(live & (t < steps - 1), stepped, NEG_INF))
        tl.store(out + t * width, beta, mask=valid)
        both = tl.load(alphas + t * a1, mask=live, other=NEG_INF) + beta
        for c0 in range(0, classes, C):
            c = c0 + tl.arange(0, C)
            terms = tl.where(ext[None, :] == c[:, None], both[None, :], NEG_INF)
            top = tl.max(terms, axis=1)
            shift = tl.where(top == NEG_INF, 0.0, top)
            total = tl.sum(tl.exp(terms - shift[:, None]), axis=1)
            lcab = tl.where(total > 0, shift + tl.log(tl.where(total > 0, total, 1.0)), NEG_INF)
            here = tl.load(lp + t * l0 + b * l1 + c * l2, mask=c < classes, other=0.0)
            value = (tl.exp(here) - tl.exp(lcab + loss - here)) * scale
            value = tl.where((t < steps) & kept, value, 0.0)
            tl.store(grad + (t * tl.num_programs(0) + b) * classes + c, value, mask=c < classes)
