"""Bandwidth sharing for the level-1 timing model: a max-min fair allocator (progressive filling,
vectorised over time buckets) and the calendar of bytes each shared resource carries per bucket.

A resource never carries more than capacity * bucket bytes in a bucket (so no timing built on it
beats PLATE.md's level-0 bound); the flows allocated together share each bucket max-min fairly;
flows allocated later take what earlier ones left (FIFO between allocations, gaps are filled).

Flows name their resources in ``res`` [F, J]: J resources each, padded with the index R (one past
the last resource: an infinite capacity that never binds). Every sum over the flows of a cell adds
them in flow order, so the numbers do not depend on how the flows are laid out."""

from __future__ import annotations

import numpy as np

try:  # Calendar._pass compiled (sim/csrc/walk.cpp, built by setup.py); without it, numpy's
    from . import _walk
except ImportError:
    _walk = None

COMPILED_PASS = True  # the compiled pass when it is built; False: the numpy pass (its reference), for comparison
MAX_WINDOW = 1024  # buckets looked at per allocation pass; longer transfers take more passes


# ---- max-min fair sharing --------------------------------------------------------------------------


class _Cells:
    """The cells (resource, bucket column) one allocation works on, flattened to r * S + s.

    cap [N]: capacity of each cell; cells [F, J, K] (or [F, K] when J == 1): the cell of a flow's
    j-th resource in its k-th bucket; col [F, K]: that bucket's column; tol [N]: below it a cell is
    saturated."""

    __slots__ = ("cap", "capx", "tol", "S", "J", "cells", "flat", "col")

    def __init__(self, cap, S, cells, col, tol):
        self.cap, self.S, self.cells, self.col, self.tol = cap, S, cells, col, tol
        self.J = 1 if cells.ndim == 2 else cells.shape[1]
        self.flat = cells.reshape(-1)
        self.capx = cap * (1 + 1e-12)

    def spread(self, x: np.ndarray) -> np.ndarray:
        """[F, K] per flow -> one value per (flow, resource, bucket), in ``flat`` order."""
        return (x if self.J == 1 else x.repeat(self.J, axis=0)).reshape(-1)

    def per_cell(self, x: np.ndarray) -> np.ndarray:
        return np.bincount(self.flat, weights=self.spread(x), minlength=self.cap.size)

    def per_flow(self, ufunc, x: np.ndarray) -> np.ndarray:
        """[F, J, K] -> [F, K], reduced by ``ufunc`` over each flow's resources."""
        if self.J == 1:
            return x
        out = ufunc(x[:, 0], x[:, 1])
        for j in range(2, self.J):  # (a few resources: cheaper than a reduction over the middle axis)
            ufunc(out, x[:, j], out=out)
        return out


def _waterfill(c: _Cells, demand: np.ndarray, rounds: int = 6) -> np.ndarray:
    """Max-min fair allocation by progressive filling, every time bucket at once -> alloc [F, K]
    (demand [F, K]: each flow's cap in each of its buckets).

    Each round raises every live flow of a bucket by the same amount, the smallest residual share
    of any resource in the bucket (capped by the flow's remaining demand); flows on a saturated
    resource or at their demand freeze. Every round is feasible; a bottleneck saturates each round.
    After ``rounds`` the live flows take their smallest share (feasible, slightly below max-min).
    Callers run it under np.errstate(divide="ignore", invalid="ignore")."""
    if not np.count_nonzero(c.per_cell(demand) > c.capx):  # nothing oversubscribed
        return demand.copy()
    alloc = None
    head = demand.copy()  # what a live flow may still take; 0 once it froze (demand is never negative)
    live = head > 0
    rem = c.cap
    floor = 1e-9 * demand
    for i in range(rounds + 1):
        # a cell without live flows sets no limit: rem / 0 is inf or nan, and fmin skips nan
        share = rem / c.per_cell(live)
        if i < rounds:
            level = np.fmin.reduce(share.reshape(-1, c.S), axis=0)[c.col]
        else:  # out of rounds: everyone takes the smallest share of its own resources
            level = c.per_flow(np.fmin, share[c.cells])
        give = np.fmin(level, head)  # 0 for frozen flows
        if alloc is None:
            alloc = give
        else:
            alloc += give
        head -= give
        rem = np.maximum(rem - c.per_cell(give), 0.0)
        live = head > floor
        live &= c.per_flow(np.logical_and, (rem > c.tol)[c.cells])
        head *= live
        if not np.count_nonzero(live):
            break
    return alloc


def max_min_fair(capacity, flows, demand=None) -> np.ndarray:
    """Max-min fair rates: capacity [R] per resource, flows = list of resource-index lists,
    optional per-flow demand caps. Returns one rate per flow."""
    cap = np.append(np.asarray(capacity, dtype=np.float64), np.inf)
    J = max((len(f) for f in flows), default=1) or 1
    res = np.full((len(flows), J), len(cap) - 1, dtype=np.int64)
    for i, f in enumerate(flows):
        res[i, : len(f)] = f
    dem = np.full(len(flows), np.inf) if demand is None else np.asarray(demand, np.float64).reshape(-1)
    dem = np.minimum(dem, cap[res].min(axis=1))[:, None]  # finite caps
    tol = 1e-9 * np.where(np.isfinite(cap), cap, 0.0)
    cells = _Cells(cap, 1, res if J == 1 else res[:, :, None], np.zeros((len(flows), 1), dtype=np.int64), tol)
    with np.errstate(divide="ignore", invalid="ignore"):
        return _waterfill(cells, dem, rounds=len(cap) + len(flows) + 1)[:, 0]


# ---- the bandwidth calendar ---------------------------------------------------------------------------


def _union_of_windows(kf0: np.ndarray, window: np.ndarray):
    """The buckets of windows kf0[f] + window (window = arange(K)) in increasing order, without
    the gaps between them: (first column of each window, the bucket of every column)."""
    K = len(window)
    order = np.argsort(kf0, kind="stable")
    s = kf0[order]
    first = s - s[0]
    first[1:] -= np.cumsum(np.maximum(s[1:] - s[:-1] - K, 0))  # minus the uncovered buckets before
    c0 = np.empty_like(first)
    c0[order] = first
    buckets = np.empty(int(first[-1]) + K, dtype=np.int64)
    buckets[first[:, None] + window] = s[:, None] + window
    return c0, buckets


DENSE_SPREAD = 4  # start buckets this many windows apart at most: one dense range of columns


class Calendar:
    """Bytes committed per shared resource per time bucket; allocates a step's flows into it."""

    def __init__(self, capacity: np.ndarray, bucket: float):
        self.cap = np.asarray(capacity, dtype=np.float64)  # bytes per cycle
        self.R = len(self.cap)
        self.bucket = float(bucket)
        self.capcol = self.cap[:, None]
        self.capdl = self.capcol * self.bucket  # bytes per full bucket
        self.base = 0  # bucket index of column 0 of ``used``
        # bytes per resource per bucket; row R collects the padding resource's (never read: it is
        # divided by an infinite capacity)
        self.used = np.zeros((self.R + 1, 1024))
        self.cap_padded = np.append(self.cap, np.inf)
        self._ar = np.arange(MAX_WINDOW + 2)

    def _grow(self, k_end: int) -> None:
        need = k_end - self.base
        if need > self.used.shape[1]:
            n = max(need, 2 * self.used.shape[1])
            self.used = np.concatenate([self.used, np.zeros((self.R + 1, n - self.used.shape[1]))], axis=1)

    def forget_before(self, time: float) -> None:
        """No flow will start before ``time`` again: drop the buckets before it (bounds memory)."""
        k = int(time // self.bucket) - self.base
        if k > self.used.shape[1] // 2:
            self.used = np.concatenate([self.used[:, k:], np.zeros((self.R + 1, k))], axis=1)
            self.base += k

    def window(self, est: np.ndarray, grow: int = 2) -> int:
        """Buckets one pass looks at: ``grow`` times the typical flow (``est``: fair-share durations)."""
        return int(min(grow * (np.ceil(_median(est) / self.bucket) + 2), MAX_WINDOW))

    def transfer(self, start, nbytes, rate, res) -> np.ndarray:
        """End times of flows starting at ``start`` moving ``nbytes`` at most at ``rate`` (their
        engine's share, no faster than their slowest resource) over the resources ``res`` [F, J]
        (padded with R)."""
        dl = self.bucket
        # each flow's duration if the flows split every resource evenly sizes the windows
        n = np.maximum(np.bincount(res.reshape(-1), minlength=self.R + 1), 1)
        est = nbytes / np.minimum(rate, (self.cap_padded / n)[res].min(axis=1))
        K = self.window(est)
        with np.errstate(divide="ignore", invalid="ignore"):
            done, cum, t, kf0 = self._pass(start, nbytes, res, rate, K)
            if done is None:  # every flow finished
                return t
            a, b = np.array(start, dtype=np.float64), np.array(nbytes, dtype=np.float64)
            ends = np.zeros(len(a))
            todo = np.arange(len(a))
            fb, grow = b, 2
            while True:  # the longer flows continue in later passes, with larger windows
                if t is not None:
                    ends[todo[done]] = t[done]
                nd = np.flatnonzero(~done)
                b[todo[nd]] = fb[nd] - cum[nd, K - 1]
                a[todo[nd]] = (kf0[nd] + K) * dl
                todo = todo[nd]
                fb = b[todo]
                grow *= 4
                K = self.window(est[todo], grow)
                done, cum, t, kf0 = self._pass(a[todo], fb, res[todo], rate[todo], K)
                if done is None:
                    ends[todo] = t
                    return ends

    def _pass(self, fa, fb, fr, frate, K):
        """One pass over a window of K buckets from each flow's start: commits the bytes each flow
        moves in it -> (done [F] or None if all are, cumulative bytes [F, K], end time [F] (where
        done), first bucket)."""
        R, dl = self.R, self.bucket
        F, J = fr.shape
        if len(self._ar) <= max(F, K + 1, R + 1):
            self._ar = np.arange(2 * max(F, K + 1, R + 1))
        ar = self._ar
        kf0 = (fa // dl).astype(np.int64)
        kl = kf0.tolist()
        kmin, kmax = min(kl), max(kl)
        self._grow(kmax + K)
        dense = kmax - kmin <= DENSE_SPREAD * K
        columns = None if dense or not COMPILED_PASS or _walk is None else getattr(_walk, "calendar_pass_columns", None)
        if (dense and COMPILED_PASS and _walk is not None) or columns is not None:  # the same, in C
            cum, t, fin = np.empty((F, K)), np.empty(F), np.empty(F, np.int64)
            f64 = [np.ascontiguousarray(x, np.float64) for x in (fa, fb, frate)]
            fr = np.ascontiguousarray(fr, np.int64)
            cap, cap_padded = self.cap, self.cap_padded
            if dense:
                all_done, any_done = _walk.calendar_pass(
                    self.used, self.base, kmin, kmax - kmin + K, K, dl, cap, cap_padded, f64[0], f64[1], fr, f64[2],
                    cum, t, fin, kf0,
                )  # fmt: skip
            else:  # the union of the flows' windows, as below (a build without it: the numpy pass)
                c0, buckets = _union_of_windows(kf0, ar[:K])
                all_done, any_done = columns(
                    self.used, self.base, len(buckets), K, dl, cap, cap_padded, f64[0], f64[1], fr, f64[2], cum, t,
                    fin, kf0, np.ascontiguousarray(c0, np.int64), buckets - self.base,
                )  # fmt: skip
            return None if all_done else fin < K, cum, t if any_done else None, kf0
        rows = R if J == 1 else R + 1  # row R: the padding resource
        width = self.used.shape[1]
        flat_used = self.used.reshape(-1)
        if kmax - kmin <= DENSE_SPREAD * K:  # one range of buckets (those no flow looks at stay unused)
            S = kmax - kmin + K
            c0 = kf0 - kmin
            where = (slice(None, rows), slice(kmin - self.base, kmin - self.base + S))
        else:  # cores far apart in time: only the buckets some flow looks at
            c0, buckets = _union_of_windows(kf0, ar[:K])
            S = len(buckets)
            where = ar[:rows, None] * width + (buckets - self.base)
        used = self.used[where] if isinstance(where, tuple) else flat_used[where]
        col = c0[:, None] + ar[:K]
        edges = (kf0[:, None] + ar[: K + 1]) * dl  # bucket boundaries of each flow's window
        lo = np.maximum(fa[:, None], edges[:, :-1])
        ell = edges[:, 1:] - lo  # active cycles in each bucket
        if J == 1:
            cells = fr * S + col
            first, ell0 = cells[:, 0], ell[:, 0]
        else:
            cells = (fr * S)[:, :, None] + col[:, None, :]
            first, ell0 = cells[:, :, 0].reshape(-1), ell[:, 0].repeat(J)
        # a cell's capacity: what the calendar has left, and no more than its capacity over the
        # part of the bucket some flow of this step is active in (first buckets are partial)
        active = np.zeros(rows * S)
        active[cells[..., 1:]] = dl
        np.maximum.at(active, first, ell0)
        cap = np.empty((rows, S))
        np.minimum(self.capdl - used[:R], self.capcol * active.reshape(rows, S)[:R], out=cap[:R])
        np.maximum(cap[:R], 0.0, out=cap[:R])
        tol = 1e-9 * cap
        if J > 1:
            cap[R], tol[R] = np.inf, 0.0
        c = _Cells(cap.reshape(-1), S, cells, col, tol.reshape(-1))
        demand = frate[:, None] * ell
        alloc = _waterfill(c, demand)
        cum, fin = _reach(alloc, fb)
        fl = fin.tolist()
        if min(fl) < max(fl):  # peers that finish early free their share: once more
            alloc = _waterfill(c, demand * (ar[:K] <= fin[:, None]))
            cum, fin = _reach(alloc, fb)
            fl = fin.tolist()
        done = fin < K
        row_k = ar[:F] * K
        fc = np.minimum(fin, K - 1)
        at = row_k + fc  # each flow's last bucket (flat [F, K] index)
        at_fc = alloc.ravel()[at]
        cum_before = cum.ravel()[at] - at_fc
        kept = alloc * (ar[:K] < fin[:, None])
        if max(fl) < K:  # all done
            kept.ravel()[at] = fb - cum_before
        else:
            kept.ravel()[at[done]] = fb[done] - cum_before[done]
        if isinstance(where, tuple):
            self.used[where] += c.per_cell(kept).reshape(rows, S)
        else:
            flat_used[where] += c.per_cell(kept).reshape(rows, S)
        t = None
        if min(fl) < K:
            t = lo.ravel()[at] + ell.ravel()[at] * (fb - cum_before) / at_fc
            # a flow cannot finish before its last bucket's committed bytes could drain
            kb = kf0 + fc - self.base
            if J == 1:
                drain = flat_used[fr[:, 0] * width + kb] / self.cap[fr[:, 0]]
            else:
                drain = (flat_used[fr * width + kb[:, None]] / self.cap_padded[fr]).max(axis=1)
            t = np.maximum(t, edges.ravel()[at + ar[:F]] + drain)
        return None if max(fl) < K else done, cum, t, kf0


def _median(x: np.ndarray) -> float:
    """np.median's value (the middle one, or the mean of the middle two), without its overhead."""
    s = np.sort(x)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def _reach(alloc: np.ndarray, need: np.ndarray):
    """(cumulative allocation, first bucket where it reaches the need or K if it never does)."""
    cum = alloc.cumsum(axis=1)
    hit = cum >= need[:, None] * (1 - 1e-12)
    return cum, np.where(hit[:, -1], hit.argmax(axis=1), alloc.shape[1])
